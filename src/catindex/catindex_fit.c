/* Fitting a categorical index: copy the vocabularies, hash and sort them on
 * the device, pick a seed under which distinct labels have distinct hashes
 * (or keep the colliding groups when no seed within the bound does), and
 * build the tables a lookup searches. */
#include <stdlib.h>
#include <string.h>

#include "catindex/catindex.h"
#include "hash/hash.h"
#include "sort/sort.h"

/* qsort has no context argument; the comparators read this thread's. */
static _Thread_local const tabcl_category_index *sort_idx;

static const uint8_t *label_at(const tabcl_category_index *idx, uint32_t slot, int64_t *n) {
  /* slot -> column: columns are laid out in order of label_base */
  int lo = 0, hi = idx->ncols;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (idx->cols[mid].label_base <= (int64_t)slot) lo = mid;
    else hi = mid;
  }
  const tabcl__catcol *c = &idx->cols[lo];
  int64_t i = (int64_t)slot - c->label_base;
  *n = c->offsets[i + 1] - c->offsets[i];
  return idx->data + c->data_base + c->offsets[i];
}

static int bytes_cmp(const uint8_t *a, int64_t na, const uint8_t *b, int64_t nb) {
  int64_t n = na < nb ? na : nb;
  int r = n ? memcmp(a, b, (size_t)n) : 0;
  if (r) return r;
  return na < nb ? -1 : na > nb;
}

static int slot_bytes_cmp(uint32_t x, uint32_t y) {
  int64_t nx, ny;
  const uint8_t *a = label_at(sort_idx, x, &nx), *b = label_at(sort_idx, y, &ny);
  return bytes_cmp(a, nx, b, ny);
}

/* By bytes, then by slot, so equal labels end with their last position. */
static int cmp_label_then_slot(const void *pa, const void *pb) {
  uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
  int r = slot_bytes_cmp(x, y);
  return r ? r : (x > y) - (x < y);
}

static int same_label(const tabcl_category_index *idx, uint32_t x, uint32_t y) {
  int64_t nx, ny;
  const uint8_t *a = label_at(idx, x, &nx), *b = label_at(idx, y, &ny);
  return nx == ny && (nx == 0 || memcmp(a, b, (size_t)nx) == 0);
}

static int column_of(const tabcl_category_index *idx, uint32_t slot) {
  int lo = 0, hi = idx->ncols;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (idx->cols[mid].label_base <= (int64_t)slot) lo = mid;
    else hi = mid;
  }
  return lo;
}

void tabcl_category_index_destroy(tabcl_category_index *idx) {
  if (!idx) return;
  if (idx->cols) {
    for (int c = 0; c < idx->ncols; c++) {
      tabcl__free(idx->cols[c].offsets);
      tabcl__free(idx->cols[c].validity);
    }
  }
  tabcl__free(idx->cols);
  tabcl__free(idx->data);
  tabcl__buffer_release(idx->keys);
  tabcl__buffer_release(idx->spans);
  tabcl__buffer_release(idx->ecodes);
  tabcl__buffer_release(idx->ranges);
  tabcl__buffer_release(idx->vdata);
  tabcl__free(idx);
}

int tabcl_category_index_columns(const tabcl_category_index *idx) { return idx ? idx->ncols : 0; }

int64_t tabcl_category_index_codes(const tabcl_category_index *idx, int col) {
  if (!idx || col < 0 || col >= idx->ncols) return -1;
  return idx->cols[col].codes;
}

/* The index's own host copy: offsets rebased to 0, bytes concatenated. */
static tabcl_status copy_vocabularies(tabcl_category_index *idx, const tabcl_strings_view *v,
                                      const char *fn) {
  int64_t bytes = 0, labels = 0;
  for (int c = 0; c < idx->ncols; c++) {
    if (v[c].length > INT32_MAX - 1)
      return tabcl__fail(TABCL_INVALID_ARGUMENT,
                         "%s: column %d: %lld labels; codes are int32, so at most %d", fn, c,
                         (long long)v[c].length, INT32_MAX - 1);
    idx->cols[c].label_base = labels;
    idx->cols[c].data_base = bytes;
    labels += v[c].length;
    if (v[c].length) bytes += v[c].offsets[v[c].length] - v[c].offsets[0];
  }
  if (labels > (int64_t)UINT32_MAX - 1)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %lld labels in all; at most %lld", fn,
                       (long long)labels, (long long)UINT32_MAX - 1);
  idx->labels = labels;
  idx->data_bytes = bytes;
  /* zeros after the last byte, a whole word and one more: kernels read labels as words */
  size_t padded = tabcl__round_up((size_t)bytes, 8) + 8;
  idx->data = tabcl__malloc(padded);
  if (!idx->data)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the index's copy of the labels (%zu bytes)",
                       fn, padded);
  memset(idx->data + bytes, 0, padded - (size_t)bytes);
  for (int c = 0; c < idx->ncols; c++) {
    tabcl__catcol *col = &idx->cols[c];
    int64_t n = v[c].length;
    col->length = n;
    col->offsets = tabcl__malloc((size_t)(n + 1) * sizeof *col->offsets);
    if (!col->offsets)
      return tabcl__fail(TABCL_OUT_OF_MEMORY,
                         "%s: column %d: out of host memory for %lld offsets", fn, c,
                         (long long)n + 1);
    int64_t first = n ? v[c].offsets[0] : 0;
    col->offsets[0] = 0;
    for (int64_t i = 1; i <= n; i++) col->offsets[i] = v[c].offsets[i] - first;
    if (col->offsets[n]) memcpy(idx->data + col->data_base, v[c].data + first, (size_t)col->offsets[n]);
    if (v[c].validity && n) {
      size_t vb = (size_t)(n + 7) / 8;
      col->validity = tabcl__malloc(vb);
      if (!col->validity)
        return tabcl__fail(TABCL_OUT_OF_MEMORY,
                           "%s: column %d: out of host memory for the validity bitmap (%zu bytes)",
                           fn, c, vb);
      memcpy(col->validity, v[c].validity, vb);
      /* bits past the end mean nothing; clear them so saved files are canonical */
      if (n % 8) col->validity[vb - 1] &= (uint8_t)((1u << (n % 8)) - 1);
    }
  }
  return TABCL_OK;
}

static int present(const tabcl__catcol *c, int64_t i) {
  return !c->validity || (c->validity[i >> 3] >> (i & 7) & 1);
}

/* Device-side scratch for the seed search. The labels go to the device
   once, as the index's own vdata; each column is hashed from there through
   offsets into the whole buffer, so no column needs an upload of its own. */
typedef struct fit_scratch {
  tabcl__dev_strings *dev;   /* ncols views of vdata; only their offsets are owned */
  cl_mem hash, slots, keys, vals;
  uint32_t *hslots;         /* present slots, ascending */
  uint64_t *hk;             /* sorted keys read back (several columns only), */
  uint32_t *hv;             /* then split per column into pk, pv */
  uint64_t *pk;
  uint32_t *pv;
  int64_t *seg;             /* ncols + 1: each column's first pair */
  int64_t npairs;
  tabcl__fit_plan plan;     /* its sizes and the pair kernel's launches */
} fit_scratch;

static void scratch_free(fit_scratch *s, int ncols) {
  if (s->dev)
    for (int c = 0; c < ncols; c++) tabcl__buffer_release(s->dev[c].offsets);
  tabcl__free(s->dev);
  tabcl__buffer_release(s->hash);
  tabcl__buffer_release(s->slots);
  tabcl__buffer_release(s->keys);
  tabcl__buffer_release(s->vals);
  tabcl__free(s->hslots);
  tabcl__free(s->hk);
  tabcl__free(s->hv);
  tabcl__free(s->pk);
  tabcl__free(s->pv);
  tabcl__free(s->seg);
}

/* Column c's offsets on the device, shifted by its data_base so they index
   the whole of vdata; `tmp` holds the longest column's offsets. Created
   from the host in one piece (oclgrind 21.10 loses track of bytes written
   at an offset). */
static tabcl_status column_offsets(tabcl_category_index *idx, int c, int64_t *tmp, cl_mem *out) {
  const tabcl__catcol *col = &idx->cols[c];
  const int64_t *src = col->offsets;
  if (col->data_base) {
    for (int64_t i = 0; i <= col->length; i++) tmp[i] = col->offsets[i] + col->data_base;
    src = tmp;
  }
  return tabcl__buffer_create_from(idx->ctx, CL_MEM_READ_ONLY,
                                   ((size_t)col->length + 1) * sizeof *src, src, out,
                                   "label offsets");
}

static tabcl_status scratch_init(tabcl_category_index *idx, fit_scratch *s, const char *fn) {
  tabcl_context *ctx = idx->ctx;
  int64_t np = 0, longest_col = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    if (col->length > longest_col) longest_col = col->length;
    if (!col->validity) {
      np += col->length;
      continue;
    }
    for (int64_t i = 0; i < col->length; i++) np += present(col, i);
  }
  s->npairs = np;
  const tabcl__target tg = tabcl__context_target(ctx);
  tabcl__fit_plan_make(&tg, idx->labels, np, idx->data_bytes, longest_col, &s->plan);
  const tabcl__fit_plan *p = &s->plan;
  size_t n1 = np ? (size_t)np : 1;
  int split = idx->ncols > 1;
  s->dev = tabcl__calloc((size_t)idx->ncols, sizeof *s->dev);
  s->hslots = tabcl__malloc(n1 * sizeof *s->hslots);
  if (split) {
    s->hk = tabcl__malloc(n1 * sizeof *s->hk);
    s->hv = tabcl__malloc(n1 * sizeof *s->hv);
  }
  s->pk = tabcl__malloc(n1 * sizeof *s->pk);
  s->pv = tabcl__malloc(n1 * sizeof *s->pv);
  s->seg = tabcl__calloc((size_t)idx->ncols + 1, sizeof *s->seg);
  if (!s->dev || !s->hslots || (split && (!s->hk || !s->hv)) || !s->pk || !s->pv || !s->seg)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the hash/slot scratch of %zu labels", fn, n1);
  int64_t j = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    s->seg[c] = j;
    uint32_t base = (uint32_t)col->label_base;
    if (!col->validity)
      for (int64_t i = 0; i < col->length; i++) s->hslots[j++] = base + (uint32_t)i;
    else
      for (int64_t i = 0; i < col->length; i++)
        if (present(col, i)) s->hslots[j++] = base + (uint32_t)i;
  }
  s->seg[idx->ncols] = j;
  tabcl_status st;
  /* The index's device copy of the labels, zero-padded as idx->data is. */
  if ((st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, (size_t)p->vdata_bytes, idx->data,
                                      &idx->vdata, "index bytes")))
    return st;
  int64_t *tmp = NULL;
  if (idx->ncols > 1) {
    tmp = tabcl__malloc(((size_t)longest_col + 1) * sizeof *tmp);
    if (!tmp)
      return tabcl__fail(TABCL_OUT_OF_MEMORY,
                         "%s: out of host memory for %lld offsets of the longest column", fn,
                         (long long)longest_col + 1);
  }
  for (int c = 0; c < idx->ncols && !st; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    if (!col->length) continue;
    tabcl__dev_strings *d = &s->dev[c];
    d->length = col->length;
    /* offsets reach to this column's end in vdata; the hash reads nothing past it */
    d->bytes = col->data_base + col->offsets[col->length];
    for (int64_t i = 0; i < col->length; i++) {
      int64_t n = col->offsets[i + 1] - col->offsets[i];
      if (n > d->max_label) d->max_label = n;
    }
    d->data = idx->vdata;
    st = column_offsets(idx, c, tmp, &d->offsets);
  }
  tabcl__free(tmp);
  if (st) return st;
  if ((st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)p->hash_bytes, NULL, &s->hash,
                                  "fit hashes")) ||
      (st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, (size_t)p->slot_bytes, s->hslots,
                                      &s->slots, "fit slots")) ||
      (st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)p->key_bytes, NULL, &s->keys,
                                  "fit keys")) ||
      (st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)p->slot_bytes, NULL, &s->vals,
                                  "fit values")))
    return st;
  return TABCL_OK;
}

/* The programs the seed tries below ask for (the hash program as the plan
   builds it, the sort for npairs, the pair kernel's), built side by side
   first: on a cold start the builds are the fit's time (bench/RESULTS.md,
   "Cold start"). Best effort and free of failure injection
   (tabcl__programs_prefetch); a failed build is met and reported by the
   call that needs it. */
static void prefetch_programs(tabcl_context *ctx, const fit_scratch *s) {
  /* planned only where the programs would build side by side: a device
     that builds one at a time (every one but NVIDIA's) skips it */
  if (!s->npairs || tabcl__build_threads(ctx) < 2) return;
  const int was = tabcl__fault_suspend(1);
  const tabcl__target tg = tabcl__context_target(ctx);
  /* the hash program's options never depend on the column's sizes */
  tabcl__hash_plan hp;
  tabcl__hash_plan_make(&tg, 1, 1, 1, &hp);
  tabcl__sort_plan *sp = tabcl__malloc(sizeof *sp);
  if (sp) {
    tabcl__sort_plan_make(&tg, (uint64_t)s->npairs, sp);
    const tabcl__program_want w[] = {
        {"hash", hp.options}, {"sort", sp->extra}, {"catindex", NULL}};
    tabcl__programs_prefetch(ctx, (int)(sizeof w / sizeof w[0]), w);
    tabcl__free(sp);
  }
  (void)tabcl__fault_suspend(was);
}

/* Hashes every column under seed, sorts the pairs on the device, reads them
   back and splits them by column (stable, so each column stays sorted). */
static tabcl_status hash_and_sort(tabcl_category_index *idx, fit_scratch *s, uint64_t seed) {
  tabcl_context *ctx = idx->ctx;
  tabcl_status st;
  if (!s->npairs) return TABCL_OK;
  for (int c = 0; c < idx->ncols; c++) {
    if (!idx->cols[c].length) continue;
    st = tabcl__hash_column(ctx, &s->dev[c], c, seed, idx->mask, s->hash,
                            (size_t)idx->cols[c].label_base, 0, NULL, NULL);
    if (st) return st;
  }
  cl_kernel k = NULL;
  if ((st = tabcl__kernel_create(ctx, "catindex", NULL, "catindex_pairs", &k))) return st;
  /* The plan's group size, lowered where the kernel allows fewer. */
  size_t wg = tabcl__wg_size(ctx, k, s->plan.pairs_wg);
  int64_t step = s->plan.pairs_step;
  int64_t n = s->npairs;
  for (int64_t first = 0; first < n && !st; first += step) {
    int64_t count = n - first < step ? n - first : step;
    st = TABCL_SET_ARGS(k, "catindex_pairs", TABCL_ARG(s->hash), TABCL_ARG(s->slots),
                        TABCL_ARG(s->keys), TABCL_ARG(s->vals), TABCL_ARG(first), TABCL_ARG(n));
    size_t global = tabcl__round_up((size_t)count, wg);
    if (!st) st = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, NULL, "catindex_pairs");
  }
  tabcl__kernel_release(k);
  if (st) return st;
  if ((st = tabcl__sort_pairs(ctx, s->keys, s->vals, (size_t)n, 0, NULL, NULL))) return st;
  if (idx->ncols == 1) {
    /* one column: the sorted pairs are already its pairs */
    if ((st = tabcl__download(ctx, s->keys, 0, (size_t)n * 8, s->pk))) return st;
    return tabcl__download(ctx, s->vals, 0, (size_t)n * 4, s->pv);
  }
  if ((st = tabcl__download(ctx, s->keys, 0, (size_t)n * 8, s->hk))) return st;
  if ((st = tabcl__download(ctx, s->vals, 0, (size_t)n * 4, s->hv))) return st;
  /* The sort ran over all columns at once; a counting pass by column keeps
     each column's pairs in sorted order. */
  int64_t *cursor = tabcl__malloc(((size_t)idx->ncols + 1) * sizeof *cursor);
  if (!cursor)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %d column cursors",
                       idx->ncols + 1);
  memcpy(cursor, s->seg, ((size_t)idx->ncols + 1) * sizeof *cursor);
  for (int64_t j = 0; j < n; j++) {
    int64_t at = cursor[column_of(idx, s->hv[j])]++;
    s->pk[at] = s->hk[j];
    s->pv[at] = s->hv[j];
  }
  tabcl__free(cursor);
  return TABCL_OK;
}

/* Whether some column has two distinct labels of equal hash. */
static int has_collision(const tabcl_category_index *idx, const fit_scratch *s) {
  for (int c = 0; c < idx->ncols; c++)
    for (int64_t r = s->seg[c], j = r + 1; j < s->seg[c + 1]; j++) {
      if (s->pk[j] != s->pk[r]) {
        r = j;
        continue;
      }
      /* compare with the run's first label: equal labels are transitive */
      if (!same_label(idx, s->pv[r], s->pv[j])) return 1;
    }
  return 0;
}

/* The entries a lookup searches: one per distinct present label, in hash
   order within each column, with its code. */
typedef struct entries {
  uint64_t *key;
  uint32_t *slot;
  cl_long *span;    /* 2 per entry: first byte in vdata, length */
  int32_t *code;
  int64_t *range;   /* ncols + 1 */
  int64_t n;
} entries;

static void entries_free(entries *e) {
  tabcl__free(e->key);
  tabcl__free(e->slot);
  tabcl__free(e->span);
  tabcl__free(e->code);
  tabcl__free(e->range);
}

/* The column a BY_VALUE ranking sorts, and its first byte: its labels are
   compared without finding their column again each time. */
static _Thread_local const tabcl__catcol *sort_col;
static _Thread_local const uint8_t *sort_bytes;

static int cmp_entry_label(const void *pa, const void *pb) {
  int64_t x = (int64_t)*(const uint32_t *)pa - sort_col->label_base;
  int64_t y = (int64_t)*(const uint32_t *)pb - sort_col->label_base;
  const int64_t *o = sort_col->offsets;
  return bytes_cmp(sort_bytes + o[x], o[x + 1] - o[x], sort_bytes + o[y], o[y + 1] - o[y]);
}

/* Appends entry ne: label `slot` of column col under key. */
static void put_entry(entries *e, int64_t ne, const tabcl__catcol *col, uint64_t key, uint32_t slot) {
  int64_t i = (int64_t)slot - col->label_base;
  e->key[ne] = key;
  e->slot[ne] = slot;
  e->span[2 * ne] = col->data_base + col->offsets[i];
  e->span[2 * ne + 1] = col->offsets[i + 1] - col->offsets[i];
}

static tabcl_status build_entries(tabcl_category_index *idx, fit_scratch *s, entries *e) {
  size_t n1 = s->npairs ? (size_t)s->npairs : 1;
  e->key = tabcl__malloc(n1 * sizeof *e->key);
  e->slot = tabcl__malloc(n1 * sizeof *e->slot);
  e->span = tabcl__malloc(n1 * 2 * sizeof *e->span);
  e->code = tabcl__malloc(n1 * sizeof *e->code);
  e->range = tabcl__malloc(((size_t)idx->ncols + 1) * sizeof *e->range);
  uint32_t *tmp = tabcl__malloc(n1 * sizeof *tmp);
  if (!e->key || !e->slot || !e->span || !e->code || !e->range || !tmp) {
    tabcl__free(tmp);
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "fit: out of host memory for the vocabulary entries of %zu labels", n1);
  }
  sort_idx = idx;
  int64_t ne = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const tabcl__catcol *cc = &idx->cols[c];
    e->range[c] = ne;
    int64_t end = s->seg[c + 1];
    for (int64_t r = s->seg[c]; r < end;) {
      int64_t q = r + 1;
      while (q < end && s->pk[q] == s->pk[r]) q++;
      int all_same = 1;
      for (int64_t j = r + 1; j < q && all_same; j++) all_same = same_label(idx, s->pv[r], s->pv[j]);
      if (all_same) {
        /* pairs are sorted by slot among equal keys: the last is the last position */
        put_entry(e, ne++, cc, s->pk[r], s->pv[q - 1]);
      } else {
        /* a kept collision: group the run's labels, one entry per distinct label */
        qsort(s->pv + r, (size_t)(q - r), sizeof *s->pv, cmp_label_then_slot);
        for (int64_t j = r; j < q; j++)
          if (j + 1 == q || !same_label(idx, s->pv[j], s->pv[j + 1]))
            put_entry(e, ne++, cc, s->pk[r], s->pv[j]);
      }
      r = q;
    }
    tabcl__catcol *col = &idx->cols[c];
    int64_t first = e->range[c], count = ne - first;
    if (idx->order == TABCL_CODES_BY_POSITION) {
      col->codes = col->length;
      for (int64_t j = first; j < ne; j++) e->code[j] = (int32_t)(e->slot[j] - col->label_base);
    } else {
      /* rank the distinct labels bytewise: sort their entry numbers by label */
      col->codes = count;
      for (int64_t j = 0; j < count; j++) tmp[j] = e->slot[first + j];
      sort_col = col;
      sort_bytes = idx->data + col->data_base;
      qsort(tmp, (size_t)count, sizeof *tmp, cmp_entry_label);
      /* slot -> rank through a scratch map over this column's slots */
      int32_t *rank = tabcl__malloc(col->length ? (size_t)col->length * sizeof *rank : 1);
      if (!rank) {
        tabcl__free(tmp);
        return tabcl__fail(TABCL_OUT_OF_MEMORY,
                           "fit: out of host memory for the ranks of %lld labels",
                           (long long)col->length);
      }
      for (int64_t j = 0; j < count; j++) rank[tmp[j] - col->label_base] = (int32_t)j;
      for (int64_t j = first; j < ne; j++) e->code[j] = rank[e->slot[j] - col->label_base];
      tabcl__free(rank);
    }
  }
  e->range[idx->ncols] = ne;
  e->n = ne;
  tabcl__free(tmp);
  return TABCL_OK;
}

static tabcl_status upload_tables(tabcl_category_index *idx, const entries *e) {
  tabcl_context *ctx = idx->ctx;
  size_t n = (size_t)e->n;
  const cl_mem_flags ro = CL_MEM_READ_ONLY;
  tabcl_status st;
  if ((st = tabcl__buffer_create_from(ctx, ro, n * 8, e->key, &idx->keys, "index keys")) ||
      (st = tabcl__buffer_create_from(ctx, ro, n * 16, e->span, &idx->spans, "index spans")) ||
      (st = tabcl__buffer_create_from(ctx, ro, n * 4, e->code, &idx->ecodes, "index codes")) ||
      (st = tabcl__buffer_create_from(ctx, ro, ((size_t)idx->ncols + 1) * 8, e->range,
                                      &idx->ranges, "index ranges")))
    return st;
  idx->entries = e->n;
  idx->device_bytes = (int64_t)(n * 28 + ((size_t)idx->ncols + 1) * 8 +
                                tabcl__round_up((size_t)idx->data_bytes, 8) + 8);
  return TABCL_OK;
}

tabcl_status tabcl__catindex_build(tabcl_context *ctx, int ncols, const tabcl_strings_view *v,
                                   tabcl_code_order order, const char *fn,
                                   tabcl_category_index **out) {
  tabcl_category_index *idx = tabcl__calloc(1, sizeof *idx);
  if (!idx) return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for the index", fn);
  idx->ctx = ctx;
  idx->ncols = ncols;
  idx->order = order;
  idx->mask = tabcl__hash_mask(ctx);
  fit_scratch s = {0};
  entries e = {0};
  tabcl_status st = TABCL_OK;
  idx->cols = tabcl__calloc((size_t)ncols, sizeof *idx->cols);
  if (!idx->cols) {
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                     ncols);
    goto done;
  }
  if ((st = copy_vocabularies(idx, v, fn)) || (st = scratch_init(idx, &s, fn))) goto done;
  prefetch_programs(ctx, &s);
  /* Seed 0, 1, 2, ... until no column has two distinct labels of equal hash;
     past the bound the last seed stays and lookups confirm every candidate. */
  for (uint64_t seed = 0; seed < (uint64_t)s.plan.seed_tries; seed++) {
    idx->seed = seed;
    if ((st = hash_and_sort(idx, &s, seed))) goto done;
    idx->collisions = has_collision(idx, &s);
    if (!idx->collisions) break;
  }
  if ((st = build_entries(idx, &s, &e)) || (st = upload_tables(idx, &e))) goto done;
done:
  scratch_free(&s, ncols);
  entries_free(&e);
  if (st) {
    tabcl_category_index_destroy(idx);
    return st;
  }
  *out = idx;
  return TABCL_OK;
}

tabcl_status tabcl_category_index_fit(tabcl_context *ctx, int ncols,
                                      const tabcl_strings_view *vocabularies,
                                      tabcl_code_order order, tabcl_category_index **out) {
  static const char fn[] = "tabcl_category_index_fit";
  if (!ctx || !out)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : "out");
  if (ncols < 1) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ncols is %d; at least 1", fn, ncols);
  if (!vocabularies) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: vocabularies is NULL", fn);
  if (order != TABCL_CODES_BY_POSITION && order != TABCL_CODES_BY_VALUE)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: unknown code order %d", fn, (int)order);
  for (int c = 0; c < ncols; c++) {
    tabcl_status st = tabcl__strings_validate(&vocabularies[c], fn, c, NULL);
    if (st) return st;
  }
  tabcl__clear_error();
  return tabcl__catindex_build(ctx, ncols, vocabularies, order, fn, out);
}
