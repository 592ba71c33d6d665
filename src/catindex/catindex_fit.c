/* Fitting a categorical index, on the device end to end: the labels go to
 * the device once (the index's own copy, vdata), and each seed try hashes,
 * pairs, sorts, checks for collisions and writes the lookup's entries there,
 * column by column, reading back one flag. Only what has no device kernel
 * runs on the host: the BY_VALUE ranking of the distinct labels, and the
 * rare fallback where no seed within the bound separates every label (the
 * colliding groups are then kept, built on the host as before). */
#include <stdlib.h>
#include <string.h>

#include "catindex/catindex_fit_parts.h"
#include "hash/hash.h"
#include "sort/sort.h"

/* ---- the index's tables --------------------------------------------------- */

/* The index's tables from the entries the device wrote: the scratch
   tables themselves where every column's entries fill its pairs (nothing
   to move), else packed by catindex_fit_pack into tables of their size. */
static tabcl_status take_tables(tabcl_category_index *idx, fit_scratch *s, const int64_t *range,
                                int whole) {
  tabcl_context *ctx = idx->ctx;
  const size_t nc = (size_t)idx->ncols, ne = (size_t)range[nc];
  tabcl_status st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, (nc + 1) * 8, range,
                                              &idx->ranges, "index ranges");
  if (st) return st;
  if (whole) {
    idx->keys = s->ekeys;
    idx->spans = s->espans;
    idx->ecodes = s->ecodes;
    s->ekeys = s->espans = s->ecodes = NULL;
    return TABCL_OK;
  }
  /* written by the pack kernel, read-only to lookups after */
  const cl_mem_flags rw = CL_MEM_READ_WRITE, ro = CL_MEM_READ_ONLY;
  cl_mem seg = NULL;
  cl_kernel k = NULL;
  if ((st = tabcl__buffer_create(ctx, rw, ne * 8, NULL, &idx->keys, "index keys")) ||
      (st = tabcl__buffer_create(ctx, rw, ne * 16, NULL, &idx->spans, "index spans")) ||
      (st = tabcl__buffer_create(ctx, rw, ne * 4, NULL, &idx->ecodes, "index codes")) || !ne)
    return st;
  const cl_int ncols = idx->ncols;
  const cl_long n = (cl_long)ne;
  if (!(st = tabcl__buffer_create_from(ctx, ro, (nc + 1) * 8, s->seg, &seg, "fit column starts")) &&
      !(st = tabcl__kernel_create(ctx, "catindex", tabcl__catindex_options(&ctx->tune),
                                      "catindex_fit_pack", &k)) &&
      !(st = TABCL_SET_ARGS(k, "catindex_fit_pack", TABCL_ARG(s->ekeys), TABCL_ARG(s->espans),
                            TABCL_ARG(s->ecodes), TABCL_ARG(seg), TABCL_ARG(idx->ranges),
                            TABCL_ARG(ncols), TABCL_ARG(n), TABCL_ARG(n), TABCL_ARG(idx->keys),
                            TABCL_ARG(idx->spans), TABCL_ARG(idx->ecodes))))
    st = tabcl__fit_launch_sliced(ctx, k, "catindex_fit_pack", s->plan.pairs_wg, n, s->plan.pairs_step, 1,
                       6);
  tabcl__kernel_release(k);
  tabcl__buffer_release(seg);
  return st;
}

/* After a try without collision: the entries the device wrote (column c's
   from its first pair) become the index's tables, packed where duplicates
   left gaps; BY_VALUE codes are ranked then. */
static tabcl_status device_tables(tabcl_category_index *idx, const fit_source *src,
                                  fit_scratch *s) {
  const size_t nc = (size_t)idx->ncols;
  int64_t *range = tabcl__malloc((nc + 1) * sizeof *range);
  if (!range)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %d column ranges",
                       idx->ncols + 1);
  /* the last try's, read back with its flag (zeros where no try ran) */
  const int64_t *total = s->htotals;
  tabcl_status st = TABCL_OK;
  int whole = 1;
  range[0] = 0;
  for (size_t c = 0; c < nc; c++) {
    range[c + 1] = range[c] + total[c];
    whole &= total[c] == s->seg[c + 1] - s->seg[c];
  }
  tabcl__fit_set_code_counts(idx, range);
  whole &= s->npairs > 0;
  st = take_tables(idx, s, range, whole);
  if (!st) st = tabcl__fit_make_directory(idx, s, range, NULL);
  if (!st && idx->order == TABCL_CODES_BY_VALUE) st = tabcl__fit_rank_device_codes(idx, src, s, range);
  if (!st) idx->entries = range[nc];
  tabcl__free(range);
  return st;
}

static tabcl_status build(tabcl_context *ctx, int ncols, const fit_source *src,
                          tabcl_code_order order, const char *fn, tabcl_category_index **out) {
  tabcl_category_index *idx = tabcl__calloc(1, sizeof *idx);
  if (!idx) return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for the index", fn);
  idx->ctx = ctx;
  idx->ncols = ncols;
  idx->order = order;
  idx->mask = tabcl__hash_mask(ctx);
  /* without its lock an index only takes the device path (catindex_host.c) */
  idx->host_lock_made = pthread_mutex_init(&idx->host_lock, NULL) == 0;
  fit_scratch s = {0};
  tabcl_status st = TABCL_OK;
  idx->cols = tabcl__calloc((size_t)ncols, sizeof *idx->cols);
  if (!idx->cols) {
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                     ncols);
    goto done;
  }
  if ((st = tabcl__fit_copy_columns(idx, src, fn)) || (st = tabcl__fit_scratch_init(idx, src, &s, fn))) goto done;
  if (s.on_host) {
    if ((st = tabcl__fit_host_fit(idx, src, &s))) goto done;
    goto tables_made;
  }
  tabcl__fit_prefetch_programs(ctx, &s);
  /* Seed 0, 1, 2, ... until no column has two distinct labels of equal hash;
     past the bound the last seed stays and lookups confirm every candidate. */
  for (uint64_t seed = 0; s.npairs && seed < (uint64_t)s.plan.seed_tries; seed++) {
    idx->seed = seed;
    if ((st = tabcl__fit_seed_try(idx, &s, seed, &idx->collisions))) goto done;
    if (!idx->collisions) break;
  }
  st = idx->collisions ? tabcl__fit_fallback_entries(idx, src, &s) : device_tables(idx, src, &s);
  if (st) goto done;
tables_made:
  idx->device_bytes = (int64_t)((size_t)idx->entries * 28 + ((size_t)idx->ncols + 1) * 8 +
                                (size_t)s.plan.vdata_bytes) + idx->dir_bytes;
  for (int c = 0; c < ncols; c++)   /* the offsets it keeps (doffs, below) */
    if (idx->cols[c].length) idx->device_bytes += (idx->cols[c].length + 1) * 8;
  /* the tables are written by commands still queued; the index is ready
     for lookups (same queue) but a failure must show here, not later. A
     host fit enqueued none. */
  if (!s.on_host) st = tabcl__finish(ctx);
  /* the index keeps its offsets on the device only (save reads them back);
     the host ones may be the caller's, which the index must not hold */
  for (int c = 0; !st && c < ncols; c++) {
    tabcl__catcol *col = &idx->cols[c];
    if (col->offsets_owned) tabcl__free(col->offsets);
    col->offsets = NULL;
    col->offsets_owned = 0;
    if (s.dev) col->doffs = s.dev[c].offsets, s.dev[c].offsets = NULL;
  }
done:
  tabcl__fit_scratch_free(ctx, &s, ncols);
  if (st) {
    tabcl_category_index_destroy(idx);
    return st;
  }
  *out = idx;
  return TABCL_OK;
}

tabcl_status tabcl__catindex_build(tabcl_context *ctx, int ncols, const tabcl_strings_view *v,
                                   const int64_t *longest, tabcl_code_order order,
                                   const char *fn, tabcl_category_index **out) {
  const fit_source src = {v, NULL, longest};
  return build(ctx, ncols, &src, order, fn, out);
}

/* The arguments fit and fit_cl share. */
static tabcl_status check_fit_call(const tabcl_context *ctx, int ncols, const void *vocabularies,
                                   tabcl_code_order order, tabcl_category_index **out,
                                   const char *fn) {
  if (!ctx || !out)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : "out");
  if (ncols < 1) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ncols is %d; at least 1", fn, ncols);
  if (!vocabularies) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: vocabularies is NULL", fn);
  if (order != TABCL_CODES_BY_POSITION && order != TABCL_CODES_BY_VALUE)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: unknown code order %d", fn, (int)order);
  return TABCL_OK;
}

tabcl_status tabcl_category_index_fit(tabcl_context *ctx, int ncols,
                                      const tabcl_strings_view *vocabularies,
                                      tabcl_code_order order, tabcl_category_index **out) {
  static const char fn[] = "tabcl_category_index_fit";
  tabcl_status st = check_fit_call(ctx, ncols, vocabularies, order, out, fn);
  if (st) return st;
  /* the check finds each column's longest label on its way */
  int64_t *longest = tabcl__malloc((size_t)ncols * sizeof *longest);
  if (!longest)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       ncols);
  for (int c = 0; c < ncols && !st; c++)
    st = tabcl__strings_validate_on(ctx, &vocabularies[c], fn, c, &longest[c]);
  if (!st) {
    tabcl__clear_error();
    const fit_source src = {vocabularies, NULL, longest};
    st = build(ctx, ncols, &src, order, fn, out);
  }
  tabcl__free(longest);
  return st;
}

/* ---- fit from device columns ---------------------------------------------- */

/* Column c's offsets and validity read back (after the caller's events)
   into a host view whose data is not read, then checked as a host view's
   are: the index keeps them on the host, and they must hold. */
static tabcl_status read_back_column(tabcl_context *ctx, const tabcl_strings_cl *d, int c,
                                     cl_uint nwait, const cl_event *wait, int64_t **offs,
                                     uint8_t **valid, tabcl_strings_view *v, int64_t *longest,
                                     const char *fn) {
  int64_t n = d->length;
  *offs = tabcl__malloc(((size_t)n + 1) * sizeof **offs);
  *valid = d->validity ? tabcl__malloc((size_t)(n + 7) / 8) : NULL;
  if (!*offs || (d->validity && !*valid))
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: column %d: out of host memory for %lld offsets and their validity",
                       fn, c, (long long)n + 1);
  /* the caller's events first, then the offsets and validity through the
     staging area where there is one: reads into pinned memory are the
     fast ones (bench/history/code-notes.md, "Staging") */
  if (nwait) {
    cl_int err = TABCL_CL(clWaitForEvents(nwait, wait));
    if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clWaitForEvents", "the wait list");
  }
  tabcl_status st = tabcl__download(ctx, d->offsets, 0, ((size_t)n + 1) * 8, *offs);
  if (!st && d->validity) st = tabcl__download(ctx, d->validity, 0, (size_t)(n + 7) / 8, *valid);
  if (st) return st;
  if ((*offs)[0] != 0 || (*offs)[n] != d->bytes)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: column %d: offsets run from %lld to %lld; 0 to bytes (%lld) expected",
                       fn, c, (long long)(*offs)[0], (long long)(*offs)[n], (long long)d->bytes);
  /* data is checked as present (non-NULL) whenever any byte is; a stand-in
     pointer passes that, and nothing reads it */
  static const uint8_t none = 0;
  *v = (tabcl_strings_view){n, *offs, &none, *valid};
  return tabcl__strings_validate_on(ctx, v, fn, c, longest);
}

tabcl_status tabcl_category_index_fit_cl(tabcl_context *ctx, int ncols,
                                         const tabcl_strings_cl *vocabularies,
                                         tabcl_code_order order, cl_uint nwait,
                                         const cl_event *wait, cl_event *ev,
                                         tabcl_category_index **out) {
  static const char fn[] = "tabcl_category_index_fit_cl";
  tabcl_status st = check_fit_call(ctx, ncols, vocabularies, order, out, fn);
  if (st) return st;
  if ((nwait == 0) != (wait == NULL))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: nwait is %u but wait is %s", fn, nwait,
                       wait ? "not NULL" : "NULL");
  for (int c = 0; c < ncols; c++) {
    const tabcl_strings_cl *d = &vocabularies[c];
    if ((st = tabcl__catindex_check_cl_column(ctx, d, fn, c))) return st;
    if (!d->length && d->bytes)
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: no labels but %lld bytes", fn,
                         c, (long long)d->bytes);
  }
  tabcl__clear_error();
  tabcl_strings_view *v = tabcl__calloc((size_t)ncols, sizeof *v);
  int64_t **offs = tabcl__calloc((size_t)ncols, sizeof *offs);
  uint8_t **valid = tabcl__calloc((size_t)ncols, sizeof *valid);
  int64_t *longest = tabcl__calloc((size_t)ncols, sizeof *longest);   /* 0: empty column */
  if (!v || !offs || !valid || !longest)
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                     ncols);
  /* the first read waits for the caller's events; the queue is in order */
  int waited = 0;
  for (int c = 0; c < ncols && !st; c++) {
    if (!vocabularies[c].length) continue;
    st = read_back_column(ctx, &vocabularies[c], c, waited ? 0 : nwait, waited ? NULL : wait,
                          &offs[c], &valid[c], &v[c], &longest[c], fn);
    waited = 1;
  }
  /* a fit of empty columns only reads nothing: the caller's events are
     still waited for, so that the event given back comes after them */
  if (!st && !waited && nwait) {
    cl_int err = TABCL_CL(clWaitForEvents(nwait, wait));
    if (err != CL_SUCCESS) st = tabcl__cl_fail(err, "clWaitForEvents", "the wait list");
  }
  tabcl_category_index *idx = NULL;
  if (!st) {
    const fit_source src = {v, vocabularies, longest};
    st = build(ctx, ncols, &src, order, fn, &idx);
  }
  if (!st && ev) {
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, ev));
    if (err != CL_SUCCESS) {
      st = tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "the fit's event");
      tabcl_category_index_destroy(idx);
      idx = NULL;
    }
  }
  for (int c = 0; offs && c < ncols; c++) tabcl__free(offs[c]);
  for (int c = 0; valid && c < ncols; c++) tabcl__free(valid[c]);
  tabcl__free(offs);
  tabcl__free(valid);
  tabcl__free(longest);
  tabcl__free(v);
  if (!st) *out = idx;
  return st;
}
