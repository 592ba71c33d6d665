/* The fit on the device: its scratch, and each seed try (hash, pair, sort,
 * check for collisions, write the entries) column by column. */
#include <stdlib.h>
#include <string.h>

#include "catindex/catindex_fit_parts.h"
#include "hash/hash.h"
#include "sort/sort.h"

void tabcl__fit_scratch_free(tabcl_context *ctx, fit_scratch *s, int ncols) {
  if (s->dev)
    for (int c = 0; c < ncols; c++) tabcl__buffer_release(s->dev[c].offsets);
  tabcl__free(s->dev);
  /* the temporaries go back to the context's pool (their last commands
     are enqueued: the pool hands them out again once those are done) */
  const cl_mem pooled[] = {s->hash, s->counts, s->totals};
  tabcl__pool_put_n(ctx, (int)(sizeof pooled / sizeof pooled[0]), pooled, 0, NULL);
  const cl_mem m[] = {s->slots, s->ekeys, s->espans, s->ecodes};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) tabcl__buffer_release(m[i]);
  const cl_kernel k[] = {s->kpairs, s->kcollide, s->kcount, s->kscan, s->kentries, s->kspans};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) tabcl__kernel_release(k[i]);
  tabcl__free(s->hslots);
  tabcl__free(s->htotals);
  tabcl__free(s->seg);
  tabcl__free(s->sfirst);
  tabcl__free((void *)s->hb);
  tabcl__free(s->hdata);
  tabcl__free(s->pk);
  tabcl__free(s->pv);
}

/* Column c's offsets on the device, shifted by its data_base so they index
   the whole of vdata; `tmp` holds the longest column's offsets. Created
   from the host in one piece (oclgrind 21.10 loses track of bytes written
   at an offset). */
static tabcl_status column_offsets(tabcl_category_index *idx, const fit_source *fs, int c,
                                   int64_t *tmp, cl_mem *out) {
  const tabcl__catcol *col = &idx->cols[c];
  const size_t bytes = ((size_t)col->length + 1) * sizeof *col->offsets;
  if (fs->dev && !col->data_base) {
    /* fit_cl: the caller's offsets (checked to start at 0) are these
       already; a copy on the device, not an upload of the read-back ones */
    tabcl_status st = tabcl__buffer_create(idx->ctx, CL_MEM_READ_ONLY, bytes, NULL, out,
                                           "label offsets");
    if (st) return st;
    cl_int err = TABCL_CL(clEnqueueCopyBuffer(idx->ctx->queue, fs->dev[c].offsets, *out, 0, 0,
                                              bytes, 0, NULL, NULL));
    return err == CL_SUCCESS ? TABCL_OK
                             : tabcl__cl_fail(err, "clEnqueueCopyBuffer", "label offsets");
  }
  const int64_t *src = col->offsets;
  if (col->data_base) {
    for (int64_t i = 0; i <= col->length; i++) tmp[i] = col->offsets[i] + col->data_base;
    src = tmp;
  }
  return tabcl__buffer_create_from(idx->ctx, CL_MEM_READ_ONLY, bytes, src, out,
                                   "label offsets");
}

tabcl_status tabcl__fit_scratch_init(tabcl_category_index *idx, const fit_source *src,
                                 fit_scratch *s, const char *fn) {
  tabcl_context *ctx = idx->ctx;
  int64_t np = 0, longest_col = 0, longest_pairs = 0, longest_label = 0, sparse = 0;
  int64_t longest_sparse = 0;
  s->seg = tabcl__calloc((size_t)idx->ncols + 1, sizeof *s->seg);
  s->sfirst = tabcl__malloc((size_t)idx->ncols * sizeof *s->sfirst);
  s->dev = tabcl__calloc((size_t)idx->ncols, sizeof *s->dev);
  if (!s->seg || !s->sfirst || !s->dev)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       idx->ncols);
  for (int c = 0; c < idx->ncols; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    int64_t here = 0;
    if (col->length > longest_col) longest_col = col->length;
    if (!col->validity) here = col->length;
    else
      for (int64_t i = 0; i < col->length; i++) here += present(col, i);
    if (col->longest > longest_label) longest_label = col->longest;
    s->seg[c] = np;
    s->sfirst[c] = here == col->length ? -1 : sparse;
    if (here != col->length) sparse += here;
    if (here != col->length && col->length > longest_sparse) longest_sparse = col->length;
    np += here;
    if (here > longest_pairs) longest_pairs = here;
  }
  s->seg[idx->ncols] = np;
  s->npairs = np;
  const tabcl__target tg = ctx->target;
  tabcl__fit_plan_make(&tg, idx->labels, np, idx->data_bytes, longest_col, longest_pairs,
                       longest_sparse, longest_label, src->dev != NULL, &s->plan);
  const tabcl__fit_plan *p = &s->plan;
  size_t n1 = np ? (size_t)np : 1;
  /* A small fit from host memory on a CPU device: on the calling thread,
     its tables made with their contents (tabcl__fit_host_fit), so that the fit
     enqueues no command at all and waits for none. */
  s->on_host = p->route == TABCL__ROUTE_CALLER;
  /* only the columns with nulls list their slots */
  s->hslots = tabcl__malloc((sparse ? (size_t)sparse : 1) * sizeof *s->hslots);
  if (!s->hslots)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the slot list of %lld labels", fn,
                       (long long)sparse);
  int64_t j = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    if (s->sfirst[c] < 0) continue;
    uint32_t base = (uint32_t)col->label_base;
    for (int64_t i = 0; i < col->length; i++)
      if (present(col, i)) s->hslots[j++] = base + (uint32_t)i;
  }
  tabcl_status st;
  if ((st = tabcl__fit_upload_labels(idx, src, p->vdata_bytes, s->on_host))) return st;
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
    d->max_label = col->longest;
    d->data = idx->vdata;
    st = column_offsets(idx, src, c, tmp, &d->offsets);
  }
  tabcl__free(tmp);
  if (st || s->on_host) return st;
  /* Temporaries from the context's pool: a fresh buffer costs its first
     use and its release on drivers that allocate late (bench/history/code-notes.md, "Pooled buffers"). */
  const cl_mem_flags rw = CL_MEM_READ_WRITE;
  if ((sparse && (st = tabcl__pool_get(ctx, rw, (size_t)p->hash_bytes, &s->hash,
                                       "fit hashes"))) ||
      (sparse && (st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY,
                                                 (size_t)sparse * sizeof *s->hslots, s->hslots,
                                                 &s->slots, "fit slots"))) ||
      (st = tabcl__pool_get(ctx, rw, (size_t)p->run_bytes, &s->counts, "fit run counts")) ||
      (st = tabcl__buffer_create(ctx, rw, n1 * 8, NULL, &s->ekeys, "index keys")) ||
      (st = tabcl__buffer_create(ctx, rw, n1 * 16, NULL, &s->espans, "index spans")) ||
      (st = tabcl__buffer_create(ctx, rw, n1 * 4, NULL, &s->ecodes, "index codes")) ||
      (st = tabcl__pool_get(ctx, rw, ((size_t)idx->ncols + 1) * 8, &s->totals,
                            "fit column totals and collision flag")))
    return st;
  s->htotals = tabcl__calloc((size_t)idx->ncols + 1, sizeof *s->htotals);
  if (!s->htotals)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column totals", fn,
                       idx->ncols);
  const struct {
    const char *name;
    cl_kernel *k;
  } ks[] = {{"catindex_fit_pairs", &s->kpairs},     {"catindex_fit_collide", &s->kcollide},
            {"catindex_fit_count", &s->kcount},     {"catindex_fit_scan", &s->kscan},
            {"catindex_fit_entries", &s->kentries}, {"catindex_fit_spans", &s->kspans}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0] && !st && np; i++)
    st = tabcl__kernel_create(ctx, "catindex", tabcl__catindex_options(&ctx->tune), ks[i].name,
                              ks[i].k);
  return st;
}

/* The host bytes of each column's label 0 (host work only: BY_VALUE ranks,
   kept collisions): the caller's own, or vdata read back once. */
tabcl_status tabcl__fit_host_bytes(tabcl_category_index *idx, const fit_source *src, fit_scratch *s) {
  if (s->hb) return TABCL_OK;
  const uint8_t **hb = tabcl__calloc((size_t)idx->ncols, sizeof *hb);
  if (!hb)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %d column records",
                       idx->ncols);
  if (src->dev) {
    s->hdata = tabcl__malloc(idx->data_bytes ? (size_t)idx->data_bytes : 1);
    tabcl_status st =
        s->hdata ? tabcl__download(idx->ctx, idx->vdata, 0, (size_t)idx->data_bytes, s->hdata)
                 : tabcl__fail(TABCL_OUT_OF_MEMORY,
                               "fit: out of host memory for a host copy of %lld label bytes",
                               (long long)idx->data_bytes);
    if (st) {
      tabcl__free((void *)hb);
      return st;
    }
    for (int c = 0; c < idx->ncols; c++) hb[c] = s->hdata + idx->cols[c].data_base;
  } else {
    /* a column without bytes points at a byte nothing reads */
    static const uint8_t none = 0;
    for (int c = 0; c < idx->ncols; c++)
      hb[c] = src->v[c].length && src->v[c].data ? src->v[c].data + src->v[c].offsets[0] : &none;
  }
  s->hb = hb;
  return TABCL_OK;
}

/* The programs the seed tries below ask for (the hash program as the plan
   builds it, the sort for the longest column, the category kernels), built
   side by side first: on a cold start the builds are the fit's time
   (bench/history/2026-11-to-12.md, "Cold start"). Best effort and free of failure
   injection (tabcl__programs_prefetch); a failed build is met and reported
   by the call that needs it. */
void tabcl__fit_prefetch_programs(tabcl_context *ctx, const fit_scratch *s) {
  /* planned only where the programs would build side by side: a device
     that builds one at a time (every one but NVIDIA's) skips it */
  if (!s->npairs || tabcl__build_threads(ctx) < 2) return;
  const int was = tabcl__fault_suspend(1);
  const tabcl__target tg = ctx->target;
  /* the hash program's options never depend on the column's sizes */
  tabcl__hash_plan hp;
  tabcl__hash_plan_make(&tg, 1, 1, 1, &hp);
  tabcl__sort_plan *sp = tabcl__malloc(sizeof *sp);
  if (sp) {
    tabcl__sort_plan_make(&tg, (uint64_t)s->plan.longest_pairs, sp);
    const tabcl__program_want w[] = {
        {"hash", hp.options}, {"sort", sp->extra}, {"catindex", tabcl__catindex_options(&ctx->tune)}};
    tabcl__programs_prefetch(ctx, (int)(sizeof w / sizeof w[0]), w);
    tabcl__free(sp);
  }
  (void)tabcl__fault_suspend(was);
}

/* Enqueues kernel k over `items` work-items (dimension 0, from 0) in
   launches of at most step, each given its first item as argument `from_arg`;
   dimension 1 has `dim1` items in groups of 1. */
tabcl_status tabcl__fit_launch_sliced(tabcl_context *ctx, cl_kernel k, const char *name, size_t want,
                                  int64_t items, int64_t step, size_t dim1, cl_uint from_arg) {
  size_t wg = tabcl__wg_size(ctx, k, want);
  tabcl_status st = TABCL_OK;
  for (int64_t from = 0; from < items && !st; from += step) {
    int64_t count = items - from < step ? items - from : step;
    st = TABCL_SET_ARGS_AT(k, name, from_arg, TABCL_ARG(from));
    const size_t global[2] = {tabcl__round_up((size_t)count, wg), dim1};
    const size_t local[2] = {wg, 1};
    if (!st) st = tabcl__launch(ctx, k, dim1 > 1 ? 2 : 1, global, local, 0, NULL, NULL, name);
  }
  return st;
}

/* Where the try's collision flag sits in the totals buffer, in ints: after
   the ncols column totals (longs). */
static cl_long collision_flag_at(const tabcl_category_index *idx) {
  return 2 * (cl_long)idx->ncols;
}

/* Column c under seed: its pairs, sorted, in ekeys/ecodes from its first
   pair seg[c] (n of them). */
tabcl_status tabcl__fit_column_pairs(tabcl_category_index *idx, fit_scratch *s, int c, uint64_t seed,
                                 int64_t *n_out) {
  tabcl_context *ctx = idx->ctx;
  const tabcl__fit_plan *p = &s->plan;
  int64_t first = s->seg[c], n = s->seg[c + 1] - first;
  *n_out = n;
  if (!n) return TABCL_OK;
  const cl_int dense = s->sfirst[c] < 0;
  /* a dense column's hashes are its keys, in place; one with nulls is
     hashed from its label 0 and its present ones paired below */
  tabcl_status st = tabcl__hash_column(ctx, &s->dev[c], c, seed, idx->mask,
                                       dense ? s->ekeys : s->hash, dense ? (size_t)first : 0, 0,
                                       NULL, NULL);
  const cl_long sfirst = dense ? 0 : s->sfirst[c];
  const cl_uint base = (cl_uint)idx->cols[c].label_base;
  /* a dense column reads neither hashes nor slots (where no column has
     nulls neither buffer is made): any buffer stands in */
  const cl_mem hash = s->hash ? s->hash : s->ekeys;
  const cl_mem slots = s->slots ? s->slots : s->ekeys;
  const cl_long flag_at = collision_flag_at(idx), at = first;
  const cl_int reset = first == 0;                    /* the try's first column with pairs */
  if (!st)
    st = TABCL_SET_ARGS(s->kpairs, "catindex_fit_pairs", TABCL_ARG(hash), TABCL_ARG(slots),
                        TABCL_ARG(s->ekeys), TABCL_ARG(s->ecodes), TABCL_ARG(sfirst),
                        TABCL_ARG(first), TABCL_ARG(n), TABCL_ARG(base), TABCL_ARG(dense),
                        TABCL_ARG(s->totals), TABCL_ARG(flag_at), TABCL_ARG(reset), TABCL_ARG(at));
  if (!st)
    st = tabcl__fit_launch_sliced(ctx, s->kpairs, "catindex_fit_pairs", p->pairs_wg, n, p->pairs_step, 1, 5);
  if (!st)
    st = tabcl__sort_pairs_at(ctx, s->ekeys, s->ecodes, (size_t)first, (size_t)n, 0, NULL, NULL);
  return st;
}

/* One column of a seed try, all enqueued: its sorted pairs, the collision
   flag, and its entries written from entry seg[c] (where its pairs start;
   totals[c] set). */
static tabcl_status column_try(tabcl_category_index *idx, fit_scratch *s, int c, uint64_t seed) {
  tabcl_context *ctx = idx->ctx;
  const tabcl__fit_plan *p = &s->plan;
  int64_t n;
  tabcl_status st = tabcl__fit_column_pairs(idx, s, c, seed, &n);
  if (st) return st;
  const cl_uint base = (cl_uint)idx->cols[c].label_base;
  const cl_mem offs = s->dev[c].offsets;
  const cl_int col = c;
  const cl_long flag_at = collision_flag_at(idx), at = s->seg[c];
  if (n > 1) {
    st = TABCL_SET_ARGS(s->kcollide, "catindex_fit_collide", TABCL_ARG(s->ekeys),
                        TABCL_ARG(s->ecodes), TABCL_ARG(idx->vdata), TABCL_ARG(offs),
                        TABCL_ARG(base), TABCL_ARG(n), TABCL_ARG(n), TABCL_ARG(s->totals),
                        TABCL_ARG(flag_at), TABCL_ARG(at));
    if (!st)
      st = tabcl__fit_launch_sliced(ctx, s->kcollide, "catindex_fit_collide", p->pairs_wg, n - 1,
                         p->pairs_step, (size_t)p->chunks, 5);
  }
  const int64_t run = p->run, runs = (n + run - 1) / run;
  if (!st && runs) {
    st = TABCL_SET_ARGS(s->kcount, "catindex_fit_count", TABCL_ARG(s->ekeys), TABCL_ARG(n),
                        TABCL_ARG(run), TABCL_ARG(run), TABCL_ARG(s->counts), TABCL_ARG(at));
    if (!st)
      st = tabcl__fit_launch_sliced(ctx, s->kcount, "catindex_fit_count", p->run_wg, runs, p->run_step, 1, 3);
  }
  /* the scan runs for an empty column too: it sets totals[c] to 0 */
  size_t lanes = tabcl__wg_size(ctx, s->kscan, p->scan_lanes);
  if (!st)
    st = TABCL_SET_ARGS(s->kscan, "catindex_fit_scan", TABCL_ARG(s->counts), TABCL_ARG(runs),
                        TABCL_ARG(at), TABCL_ARG(s->totals), TABCL_ARG(col),
                        TABCL_LOCAL(lanes * 8));
  if (!st) st = tabcl__launch(ctx, s->kscan, 1, &lanes, &lanes, 0, NULL, NULL, "catindex_fit_scan");
  /* the entries, staged through the span table (the pairs sit where they go) */
  if (!st && runs) {
    st = TABCL_SET_ARGS(s->kentries, "catindex_fit_entries", TABCL_ARG(s->ekeys),
                        TABCL_ARG(s->ecodes), TABCL_ARG(n), TABCL_ARG(run), TABCL_ARG(run),
                        TABCL_ARG(s->counts), TABCL_ARG(s->espans), TABCL_ARG(at));
    if (!st)
      st = tabcl__fit_launch_sliced(ctx, s->kentries, "catindex_fit_entries", p->run_wg, runs, p->run_step,
                         1, 4);
  }
  if (!st && runs) {
    const cl_long step = p->pairs_step;
    st = TABCL_SET_ARGS(s->kspans, "catindex_fit_spans", TABCL_ARG(s->espans), TABCL_ARG(offs),
                        TABCL_ARG(base), TABCL_ARG(n), TABCL_ARG(n), TABCL_ARG(s->totals),
                        TABCL_ARG(col), TABCL_ARG(s->ekeys), TABCL_ARG(s->ecodes), TABCL_ARG(at),
                        TABCL_ARG(step));
    if (!st)
      st = tabcl__fit_launch_sliced(ctx, s->kspans, "catindex_fit_spans", p->pairs_wg, n, p->pairs_step, 1,
                         3);
  }
  return st;
}

/* A seed try over every column; *collided: some column has two distinct
   labels of one hash. Reads back that flag, nothing else. */
tabcl_status tabcl__fit_seed_try(tabcl_category_index *idx, fit_scratch *s, uint64_t seed,
                             int *collided) {
  tabcl_context *ctx = idx->ctx;
  tabcl_status st;
  /* the flag is cleared by the first column's pairs kernel (the loop runs
     only where some column has pairs) */
  for (int c = 0; c < idx->ncols; c++)
    if ((st = column_try(idx, s, c, seed))) return st;
  const size_t nc = (size_t)idx->ncols;
  if ((st = tabcl__read(ctx, s->totals, 0, nc * 8 + sizeof(cl_int), s->htotals))) return st;
  cl_int flag;
  memcpy(&flag, (const cl_int *)(const void *)s->htotals + collision_flag_at(idx), sizeof flag);
  *collided = flag != 0;
  return TABCL_OK;
}
