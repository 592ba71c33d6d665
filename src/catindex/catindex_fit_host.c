/* The fit's host work: BY_VALUE ranks, the fallback with kept collisions,
 * and the whole fit on the calling thread for small vocabularies. */
#include <stdlib.h>
#include <string.h>

#include "catindex/catindex_fit_parts.h"
#include "hash/hash.h"
#include "sort/sort.h"

/* ---- host work: BY_VALUE ranks, and the fallback with kept collisions ---- */

/* Each column's code count from the entry ranges: its length (BY_POSITION)
   or its distinct labels (BY_VALUE). */
void tabcl__fit_set_code_counts(tabcl_category_index *idx, const int64_t *range) {
  for (int c = 0; c < idx->ncols; c++)
    idx->cols[c].codes = idx->order == TABCL_CODES_BY_POSITION ? idx->cols[c].length
                                                                : range[c + 1] - range[c];
}

/* The column a ranking sorts, and its host bytes (qsort has no context). */
static _Thread_local const tabcl__catcol *sort_col;
static _Thread_local const uint8_t *sort_bytes;

static int cmp_position_label(const void *pa, const void *pb) {
  int32_t x = *(const int32_t *)pa, y = *(const int32_t *)pb;
  const int64_t *o = sort_col->offsets;
  return bytes_cmp(sort_bytes + o[x], o[x + 1] - o[x], sort_bytes + o[y], o[y + 1] - o[y]);
}

/* code[0 .. count): positions of distinct labels of col, replaced by their
   bytewise ranks (0 .. count - 1). */
static tabcl_status rank_by_value(const tabcl__catcol *col, const uint8_t *bytes, int32_t *code,
                                  int64_t count) {
  size_t n1 = count ? (size_t)count : 1;
  int32_t *order = tabcl__malloc(n1 * sizeof *order);
  int32_t *rank = tabcl__malloc(col->length ? (size_t)col->length * sizeof *rank : 1);
  if (!order || !rank) {
    tabcl__free(order);
    tabcl__free(rank);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for the ranks of %lld labels",
                       (long long)count);
  }
  memcpy(order, code, (size_t)count * sizeof *order);
  sort_col = col;
  sort_bytes = bytes;
  qsort(order, (size_t)count, sizeof *order, cmp_position_label);
  for (int64_t j = 0; j < count; j++) rank[order[j]] = (int32_t)j;
  for (int64_t j = 0; j < count; j++) code[j] = rank[code[j]];
  tabcl__free(order);
  tabcl__free(rank);
  return TABCL_OK;
}

/* BY_VALUE after the device built the entries: their codes (positions)
   read back, ranked per column, written again. */
tabcl_status tabcl__fit_rank_device_codes(tabcl_category_index *idx, const fit_source *src,
                                      fit_scratch *s, const int64_t *range) {
  int64_t ne = range[idx->ncols];
  if (!ne) return TABCL_OK;
  tabcl_status st = tabcl__fit_host_bytes(idx, src, s);
  if (st) return st;
  int32_t *code = tabcl__malloc((size_t)ne * sizeof *code);
  if (!code)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %lld codes",
                       (long long)ne);
  st = tabcl__read(idx->ctx, idx->ecodes, 0, (size_t)ne * 4, code);
  for (int c = 0; c < idx->ncols && !st; c++)
    st = rank_by_value(&idx->cols[c], s->hb[c], code + range[c], range[c + 1] - range[c]);
  if (!st) st = tabcl__write(idx->ctx, idx->ecodes, 0, (size_t)ne * 4, code);
  tabcl__free(code);
  return st;
}

/* The slot's label in the host bytes. */
static const uint8_t *slot_label(const tabcl_category_index *idx, const fit_scratch *s, int c,
                                 uint32_t slot, int64_t *n) {
  const tabcl__catcol *col = &idx->cols[c];
  int64_t i = (int64_t)slot - col->label_base;
  *n = col->offsets[i + 1] - col->offsets[i];
  return s->hb[c] + col->offsets[i];
}

static int same_label(const tabcl_category_index *idx, const fit_scratch *s, int c, uint32_t x,
                      uint32_t y) {
  int64_t nx, ny;
  const uint8_t *a = slot_label(idx, s, c, x, &nx), *b = slot_label(idx, s, c, y, &ny);
  return nx == ny && (nx == 0 || memcmp(a, b, (size_t)nx) == 0);
}

/* By bytes, then by slot, so equal labels end with their last position
   (slots of sort_col, whose bytes are sort_bytes). */
static int cmp_label_then_slot(const void *pa, const void *pb) {
  uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
  int32_t i = (int32_t)(x - (uint32_t)sort_col->label_base);
  int32_t j = (int32_t)(y - (uint32_t)sort_col->label_base);
  int r = cmp_position_label(&i, &j);
  return r ? r : (x > y) - (x < y);
}

/* The index's directory (catindex.h) from its sorted keys, column c's
   entries range[c] .. range[c + 1]: catindex_fit_directory over each, or
   on the host where the keys are there (hkeys: a host fit's). */
tabcl_status tabcl__fit_make_directory(tabcl_category_index *idx, const fit_scratch *s,
                                   const int64_t *range, const uint64_t *hkeys) {
  tabcl_context *ctx = idx->ctx;
  const size_t nc = (size_t)idx->ncols;
  cl_long2 *info = tabcl__malloc(nc * sizeof *info);
  if (!info)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %d directory records",
                       idx->ncols);
  const int kept = tabcl__catindex_mask_bits(idx->mask);
  int64_t slots = 0;
  for (size_t c = 0; c < nc; c++) {
    const int bits = tabcl__catindex_dir_bits(range[c + 1] - range[c], idx->mask);
    info[c].s[0] = slots;
    info[c].s[1] = kept - bits;
    slots += ((int64_t)1 << bits) + 1;
  }
  cl_kernel k = NULL;
  tabcl_status st = TABCL_OK;
  if (hkeys) {
    uint32_t *dir = tabcl__malloc((size_t)slots * sizeof *dir);
    if (!dir) {
      tabcl__free(info);
      return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %lld directory slots",
                         (long long)slots);
    }
    for (size_t c = 0; c < nc; c++) {
      const int64_t count = (c + 1 < nc ? info[c + 1].s[0] : slots) - info[c].s[0];
      tabcl__catindex_fill_directory(hkeys, range[c], range[c + 1] - range[c], info[c].s[1],
                                     count, dir + info[c].s[0]);
    }
    st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, (size_t)slots * 4, dir, &idx->dir,
                                   "index directory");
    tabcl__free(dir);
  } else {
    st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)slots * 4, NULL, &idx->dir,
                              "index directory");
  }
  if (!st)
    st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, nc * sizeof *info, info, &idx->dinfo,
                                   "index directory records");
  if (!st && !hkeys)
    st = tabcl__kernel_create(ctx, "catindex", tabcl__catindex_options(&ctx->tune),
                              "catindex_fit_directory", &k);
  for (size_t c = 0; c < nc && !st && !hkeys; c++) {
    const cl_long lo = range[c], n = range[c + 1] - range[c], shift = info[c].s[1];
    const cl_long base = info[c].s[0];
    const cl_long count = (c + 1 < nc ? info[c + 1].s[0] : slots) - base;
    st = TABCL_SET_ARGS(k, "catindex_fit_directory", TABCL_ARG(idx->keys), TABCL_ARG(lo),
                        TABCL_ARG(n), TABCL_ARG(shift), TABCL_ARG(count), TABCL_ARG(idx->dir),
                        TABCL_ARG(base));
    if (!st)
      st = tabcl__fit_launch_sliced(ctx, k, "catindex_fit_directory", s->plan.pairs_wg, n + 1,
                         s->plan.pairs_step, 1, 7);
  }
  if (!st) idx->dir_bytes = slots * 4 + (int64_t)(nc * sizeof *info);
  tabcl__kernel_release(k);
  tabcl__free(info);
  return st;
}

/* The index's tables from every column's sorted pairs on the host (s->pk,
   s->pv from s->seg[c]): one entry per run of one hash, the last
   position's; where distinct labels share a hash (kept collisions), one
   entry per distinct label. Uploaded, with the directory worked out here. */
static tabcl_status host_entries(tabcl_category_index *idx, fit_scratch *s) {
  tabcl_context *ctx = idx->ctx;
  size_t n1 = s->npairs ? (size_t)s->npairs : 1;
  tabcl_status st = TABCL_OK;
  uint64_t *key = tabcl__malloc(n1 * sizeof *key);
  cl_long *span = tabcl__malloc(n1 * 2 * sizeof *span);
  int32_t *code = tabcl__malloc(n1 * sizeof *code);
  int64_t *range = tabcl__malloc(((size_t)idx->ncols + 1) * sizeof *range);
  if (!key || !span || !code || !range) {
    st = tabcl__fail(TABCL_OUT_OF_MEMORY,
                     "fit: out of host memory for the vocabulary entries of %zu labels", n1);
    goto done;
  }
  int64_t ne = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const int64_t at = s->seg[c], n = s->seg[c + 1] - at;
    const tabcl__catcol *col = &idx->cols[c];
    range[c] = ne;
    for (int64_t r = at; r < at + n;) {
      int64_t q = r + 1;
      while (q < at + n && s->pk[q] == s->pk[r]) q++;
      int all_same = 1;
      for (int64_t j = r + 1; j < q && all_same; j++) all_same = same_label(idx, s, c, s->pv[r], s->pv[j]);
      if (!all_same) {
        /* group the run's labels, one entry per distinct label, the last position's */
        sort_col = col;
        sort_bytes = s->hb[c];
        qsort(s->pv + r, (size_t)(q - r), sizeof *s->pv, cmp_label_then_slot);
      }
      for (int64_t j = r; j < q; j++) {
        /* pairs of one label are sorted by slot: the last is the last position */
        if (j + 1 < q && (all_same || same_label(idx, s, c, s->pv[j], s->pv[j + 1]))) continue;
        int64_t i = (int64_t)s->pv[j] - col->label_base;
        key[ne] = s->pk[r];
        span[2 * ne] = col->data_base + col->offsets[i];
        span[2 * ne + 1] = col->offsets[i + 1] - col->offsets[i];
        code[ne++] = (int32_t)i;
      }
      r = q;
    }
  }
  range[idx->ncols] = ne;
  tabcl__fit_set_code_counts(idx, range);
  for (int c = 0; c < idx->ncols && !st && idx->order == TABCL_CODES_BY_VALUE; c++)
    st = rank_by_value(&idx->cols[c], s->hb[c], code + range[c], range[c + 1] - range[c]);
  const cl_mem_flags ro = CL_MEM_READ_ONLY;
  size_t n = (size_t)ne;
  if (!st && !(st = tabcl__buffer_create_from(ctx, ro, n * 8, key, &idx->keys, "index keys")) &&
      !(st = tabcl__buffer_create_from(ctx, ro, n * 16, span, &idx->spans, "index spans")) &&
      !(st = tabcl__buffer_create_from(ctx, ro, n * 4, code, &idx->ecodes, "index codes")))
    st = tabcl__buffer_create_from(ctx, ro, ((size_t)idx->ncols + 1) * 8, range, &idx->ranges,
                                   "index ranges");
  if (!st) st = tabcl__fit_make_directory(idx, s, range, key);
  if (!st) idx->entries = ne;
done:
  tabcl__free(key);
  tabcl__free(span);
  tabcl__free(code);
  tabcl__free(range);
  return st;
}

/* The host's pair arrays, n1 each. */
static tabcl_status host_pairs_alloc(fit_scratch *s) {
  size_t n1 = s->npairs ? (size_t)s->npairs : 1;
  s->pk = tabcl__malloc(n1 * sizeof *s->pk);
  s->pv = tabcl__malloc(n1 * sizeof *s->pv);
  if (!s->pk || !s->pv)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "fit: out of host memory for the hash pairs of %zu labels", n1);
  return TABCL_OK;
}

/* The fallback: no seed within the bound separated every label, so the
   last seed stays and each colliding run keeps one entry per distinct
   label (lookups confirm every candidate). Built on the host from every
   column's sorted pairs, read back from the device, then uploaded. */
tabcl_status tabcl__fit_fallback_entries(tabcl_category_index *idx, const fit_source *src,
                                     fit_scratch *s) {
  tabcl_context *ctx = idx->ctx;
  tabcl_status st = tabcl__fit_host_bytes(idx, src, s);
  if (!st) st = host_pairs_alloc(s);
  for (int c = 0; c < idx->ncols && !st; c++) {
    int64_t n, at = s->seg[c];
    if ((st = tabcl__fit_column_pairs(idx, s, c, idx->seed, &n))) break;
    if (n && ((st = tabcl__download(ctx, s->ekeys, (size_t)at * 8, (size_t)n * 8, s->pk + at)) ||
              (st = tabcl__download(ctx, s->ecodes, (size_t)at * 4, (size_t)n * 4, s->pv + at))))
      break;
  }
  return st ? st : host_entries(idx, s);
}

/* ---- the fit on the calling thread (fit.host_labels) -------------------- */

/* Every seed try on the host: each column's present labels hashed in slot
   order (the host XXH3, the one the kernels are checked against), sorted
   by (hash, slot) and checked for distinct labels of one hash; then the
   tables (host_entries). The same seeds, pairs and entries as the device
   fit, so the same index. */
tabcl_status tabcl__fit_host_fit(tabcl_category_index *idx, const fit_source *src, fit_scratch *s) {
  tabcl_status st = tabcl__fit_host_bytes(idx, src, s);
  if (!st) st = host_pairs_alloc(s);
  size_t n1 = s->npairs ? (size_t)s->npairs : 1;
  uint64_t *tk = st ? NULL : tabcl__malloc(n1 * sizeof *tk);
  uint32_t *tv = st ? NULL : tabcl__malloc(n1 * sizeof *tv);
  if (!st && (!tk || !tv))
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for the sort of %zu pairs",
                     n1);
  idx->seed = 0;
  idx->collisions = 0;
  for (uint64_t seed = 0; !st && s->npairs && seed < (uint64_t)s->plan.seed_tries; seed++) {
    idx->seed = seed;
    int collided = 0;
    for (int c = 0; c < idx->ncols; c++) {
      const tabcl__catcol *col = &idx->cols[c];
      const int64_t at = s->seg[c];
      tabcl__xxh3_state keys;
      tabcl__xxh3_keys(&keys, tabcl__column_seed(seed, c));
      int64_t j = at;
      for (int64_t i = 0; i < col->length; i++) {
        if (!present(col, i)) continue;
        const int64_t o = col->offsets[i], len = col->offsets[i + 1] - o;
        s->pk[j] = tabcl__xxh3_64_keyed(&keys, s->hb[c] + o, (size_t)len) & idx->mask;
        s->pv[j++] = (uint32_t)(col->label_base + i);
      }
      tabcl__sort_pairs_host(s->pk + at, s->pv + at, (size_t)(j - at), tk, tv);
      for (int64_t r = at; r + 1 < j && !collided; r++)
        collided = s->pk[r] == s->pk[r + 1] && !same_label(idx, s, c, s->pv[r], s->pv[r + 1]);
    }
    idx->collisions = collided;
    if (!collided) break;
  }
  tabcl__free(tk);
  tabcl__free(tv);
  return st ? st : host_entries(idx, s);
}
