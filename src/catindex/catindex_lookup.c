/* Looking query labels up in a fitted index: hash them under the index's
 * seed, then one kernel per (up to) four columns binary-searches each
 * column's sorted hashes and confirms every candidate by its bytes. */
#include <string.h>

#include "catindex/catindex.h"
#include "hash/hash.h"
#include "tabcl/tabcl_cl.h"

tabcl_status tabcl__catindex_check(const tabcl_category_index *idx, int ncols, const char *fn) {
  if (!idx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: idx is NULL", fn);
  if (ncols != idx->ncols)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ncols is %d; the index has %d columns", fn,
                       ncols, idx->ncols);
  return TABCL_OK;
}

tabcl_status tabcl__lookup_plan_for(tabcl_context *ctx, int64_t rows, int64_t bytes,
                                    int64_t longest, int64_t candidates, tabcl__lookup_plan *p) {
  tabcl__device_desc dev;
  tabcl__target tg;
  int limit_known = tabcl__context_target_limited(ctx, &dev, &tg), again = 0;
  tabcl__lookup_plan_make(&tg, rows, bytes, longest, candidates, p);
  /* The CPU plan loops over many rows in a work-item: where that could run
     long, the device's loop limit decides the runs (plan again). */
  tabcl_status s = tabcl__loop_limit_learn(ctx, &limit_known, &dev, p->serial ? p->serial_loops : 0,
                                           &again);
  if (!s && again) tabcl__lookup_plan_make(&tg, rows, bytes, longest, candidates, p);
  return s;
}

tabcl_status tabcl__catindex_lookup_dev(tabcl_category_index *idx, const tabcl__dev_strings *q,
                                        cl_mem const *out, const int64_t *out_off,
                                        cl_uint nwait, const cl_event *wait, cl_event *last) {
  tabcl_context *ctx = idx->ctx;
  int ncols = idx->ncols;
  int64_t rows = 0;
  for (int c = 0; c < ncols; c++) rows += q[c].length;
  if (rows == 0) {
    /* nothing to compute, but a caller waiting on *last must still see the wait list */
    if (!last) return TABCL_OK;
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, last));
    return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "lookup");
  }
  cl_mem qhash = NULL, cand = NULL;
  cl_kernel kitem = NULL, kgroup = NULL, kprobe = NULL;
  cl_event ev = NULL;
  /* temporaries from the context's pool: a fresh buffer costs its first
     use and its release (tens of microseconds each on the H200) */
  tabcl_status st = tabcl__pool_get(ctx, CL_MEM_READ_WRITE, (size_t)rows * 8, &qhash,
                                    "query hashes");
  int64_t hoff = 0;
  for (int c = 0; c < ncols && !st; c++) {
    if (!q[c].length) continue;
    st = tabcl__hash_column(ctx, &q[c], c, idx->seed, idx->mask, qhash, (size_t)hoff, nwait, wait,
                            NULL);
    hoff += q[c].length;
  }
  hoff = 0;
  for (int g0 = 0; g0 < ncols && !st; g0 += TABCL__CATINDEX_COLS_PER_LAUNCH) {
    cl_long4 nrows = {{0}}, qh = {{0}}, qbytes = {{0}}, ooff = {{0}};
    cl_int4 col = {{0}}, hasv = {{0}};
    cl_mem bufs[TABCL__CATINDEX_COLS_PER_LAUNCH][4];
    int64_t grows = 0, gbytes = 0, glongest = 0;
    for (int k = 0; k < TABCL__CATINDEX_COLS_PER_LAUNCH; k++) {
      int c = g0 + k;
      /* unused slots get zero rows and any valid buffer, which is never read */
      bufs[k][0] = bufs[k][1] = bufs[k][2] = bufs[k][3] = idx->ranges;
      if (c >= ncols) continue;
      nrows.s[k] = q[c].length;
      qh.s[k] = hoff;
      qbytes.s[k] = q[c].bytes;
      ooff.s[k] = out_off[c];
      col.s[k] = c;
      hasv.s[k] = q[c].validity != NULL;
      if (q[c].length) {
        bufs[k][0] = q[c].data;
        bufs[k][1] = q[c].offsets;
        if (q[c].validity) bufs[k][2] = q[c].validity;
        bufs[k][3] = out[c];
      }
      hoff += q[c].length;
      grows += q[c].length;
      gbytes += q[c].bytes;
      if (q[c].max_label > glongest) glongest = q[c].max_label;
    }
    if (!grows) continue;
    /* One candidate a hash where the fit kept no collision. */
    const int64_t candidates = idx->collisions ? 0 : 1;
    tabcl__lookup_plan lp;
    st = tabcl__lookup_plan_for(ctx, grows, gbytes, glongest, candidates, &lp);
    if (st) break;
    const int use_group = lp.grouped, serial = lp.serial;
    /* the GPU kernels read whole words past a label: only padded copies */
    for (int k = 0; k < TABCL__CATINDEX_COLS_PER_LAUNCH && !serial && !st; k++)
      if (g0 + k < ncols && q[g0 + k].in_place)
        st = tabcl__fail(TABCL_INVALID_ARGUMENT,
                         "lookup: column %d is the caller's memory in place, which only the CPU "
                         "kernel reads (lookup.serial)", g0 + k);
    if (st) break;
    if (use_group && !cand) {
      /* big enough for any launch group: at most all rows */
      st = tabcl__pool_get(ctx, CL_MEM_READ_WRITE, (size_t)rows * 8, &cand, "candidates");
      if (st) break;
    }
    /* the group path: a probe (one work-item per row), then the comparison */
    for (int pass = use_group ? 0 : 1; pass < 2 && !st; pass++) {
      int grouped = use_group && pass == 1;
      cl_kernel *kp = grouped ? &kgroup : use_group ? &kprobe : &kitem;
      const char *kname = grouped     ? "catindex_lookup_group"
                          : use_group ? "catindex_probe"
                          : serial    ? "catindex_lookup_serial"
                                      : "catindex_lookup_item";
      if (!*kp && (st = tabcl__kernel_create(ctx, "catindex",
                                             tabcl__catindex_options(&ctx->tune), kname,
                                             kp)))
        break;
      cl_kernel k = *kp;
      /* The plan's group size, lowered where the kernel allows fewer; the
         plan's slices hold for a smaller group too (fewer work-items). */
      size_t wg = serial ? 1 : tabcl__wg_size(ctx, k, grouped ? lp.lanes : lp.item_wg);
      int64_t step = grouped ? lp.group_step : lp.item_step;
      cl_mem cbuf = cand ? cand : idx->ranges;
      for (int64_t first = 0; first < grows && !st; first += step) {
        int64_t count = grows - first < step ? grows - first : step;
        st = TABCL_SET_ARGS(k, kname, TABCL_ARG(idx->keys), TABCL_ARG(idx->spans),
                            TABCL_ARG(idx->ecodes), TABCL_ARG(idx->ranges), TABCL_ARG(idx->dir),
                            TABCL_ARG(idx->dinfo), TABCL_ARG(idx->vdata),
                            TABCL_ARG(qhash), TABCL_ARG(nrows), TABCL_ARG(qh), TABCL_ARG(qbytes),
                            TABCL_ARG(ooff), TABCL_ARG(col), TABCL_ARG(hasv), TABCL_ARG(cbuf),
                            TABCL_ARG(first), TABCL_ARG(count), TABCL_ARG(bufs[0][0]),
                            TABCL_ARG(bufs[0][1]), TABCL_ARG(bufs[0][2]), TABCL_ARG(bufs[0][3]),
                            TABCL_ARG(bufs[1][0]), TABCL_ARG(bufs[1][1]), TABCL_ARG(bufs[1][2]),
                            TABCL_ARG(bufs[1][3]), TABCL_ARG(bufs[2][0]), TABCL_ARG(bufs[2][1]),
                            TABCL_ARG(bufs[2][2]), TABCL_ARG(bufs[2][3]), TABCL_ARG(bufs[3][0]),
                            TABCL_ARG(bufs[3][1]), TABCL_ARG(bufs[3][2]), TABCL_ARG(bufs[3][3]),
                            TABCL_ARG(lp.serial_run));
        if (st) break;
        size_t global = grouped  ? (size_t)count * wg
                        : serial ? (size_t)((count + lp.serial_run - 1) / lp.serial_run)
                                 : tabcl__round_up((size_t)count, wg);
        if (ev) clReleaseEvent(ev);
        ev = NULL;
        st = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, last ? &ev : NULL, kname);
      }
    }
  }
  tabcl__kernel_release(kprobe);
  tabcl__kernel_release(kitem);
  tabcl__kernel_release(kgroup);
  /* Given back right after enqueueing: the pool hands them out again once
     the kernels using them are done. */
  const cl_mem temps[] = {qhash, cand};
  tabcl__pool_put_n(ctx, 2, temps, 0, NULL);
  if (!st && last) {
    if (ev) {
      *last = ev;
      ev = NULL;
    } else {
      /* every column was empty of rows after all: nothing launched */
      cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, last));
      if (err != CL_SUCCESS) st = tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "lookup");
    }
  }
  if (ev) clReleaseEvent(ev);
  return st;
}

/* Whether lookup_cl may read the caller's query buffers as they are: only
   where the hash and the lookup both take their CPU kernels, which read no
   byte outside a label (the GPU kernels read whole words of a padded copy).
   The plans for the longest label of all decide for every column and launch
   group: a longer label can only move a plan off the CPU kernels (its
   loops), never onto them. */
static tabcl_status queries_in_place(tabcl_category_index *idx, int64_t rows, int64_t bytes,
                                     int64_t longest, int *yes) {
  tabcl_context *ctx = idx->ctx;
  *yes = 0;
  tabcl__hash_plan hp;
  tabcl__lookup_plan lp;
  tabcl_status st = tabcl__hash_plan_for(ctx, rows, bytes, longest, &hp);
  if (!st)
    st = tabcl__lookup_plan_for(ctx, rows, bytes, longest, idx->collisions ? 0 : 1, &lp);
  if (!st) *yes = hp.serial_kernel != NULL && lp.serial;
  return st;
}

tabcl_status tabcl__catindex_lookup_views(tabcl_category_index *idx,
                                          const tabcl_strings_view *const *views,
                                          const int64_t *longest, cl_mem const *out,
                                          const int64_t *out_off, const char *fn) {
  const int ncols = idx->ncols;
  tabcl__dev_strings *dev = tabcl__calloc((size_t)ncols, sizeof *dev);
  if (!dev)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       ncols);
  tabcl_status st = TABCL_OK;
  for (int c = 0; c < ncols && !st; c++)
    st = tabcl__strings_upload_checked(idx->ctx, views[c], longest[c], &dev[c]);
  if (!st) st = tabcl__catindex_lookup_dev(idx, dev, out, out_off, 0, NULL, NULL);
  for (int c = 0; c < ncols; c++) tabcl__strings_release(&dev[c]);
  tabcl__free(dev);
  return st;
}

/* The codes of every column, laid end to end (column c's from off[c]),
   copied into the caller's arrays. */
typedef struct code_scatter {
  int ncols;
  const tabcl_strings_view *queries;
  int32_t *const *codes;
  const int64_t *off;
} code_scatter;

/* drain of all the codes at once (at 0, every byte). */
static void scatter_codes(const void *src, size_t at, size_t n, void *arg) {
  const code_scatter *sc = arg;
  const int32_t *all = src;
  (void)at, (void)n;
  for (int c = 0; c < sc->ncols; c++)
    if (sc->queries[c].length)
      memcpy(sc->codes[c], all + sc->off[c], (size_t)sc->queries[c].length * sizeof *all);
}

/* The host route's executor: the index's mapped tables, then each
   column on the calling thread or `threads` threads (catindex_host.c). */
static tabcl_status lookup_on_host(tabcl_category_index *idx, int threads, int ncols,
                                   const tabcl_strings_view *queries, int32_t *const *codes) {
  const tabcl__catindex_host *tables = NULL;
  tabcl_status st = tabcl__catindex_host_tables(idx, &tables);
  for (int c = 0; !st && c < ncols; c++)
    tabcl__catindex_host_lookup_n(idx, tables, threads, c, &queries[c], codes[c]);
  return st;
}

/* The device route's executor: the queries uploaded, hashed and looked up,
   the codes read back into the caller's arrays once every step succeeded. */
static tabcl_status lookup_on_device(tabcl_category_index *idx, int ncols,
                                     const tabcl_strings_view *queries, const int64_t *longest,
                                     int64_t rows, int32_t *const *codes, const char *fn) {
  tabcl_status st = TABCL_OK;
  tabcl_context *ctx = idx->ctx;
  const tabcl_strings_view **views = tabcl__calloc((size_t)ncols, sizeof *views);
  cl_mem *outs = tabcl__calloc((size_t)ncols, sizeof *outs);
  int64_t *off = tabcl__calloc((size_t)ncols, sizeof *off);
  int32_t *host = tabcl__malloc((size_t)rows * sizeof *host);
  cl_mem out = NULL;
  if (!views || !outs || !off || !host) {
    st = tabcl__fail(TABCL_OUT_OF_MEMORY,
                     "%s: out of host memory for the codes of %lld rows and %d column records",
                     fn, (long long)rows, ncols);
    goto done;
  }
  if ((st = tabcl__pool_get(ctx, CL_MEM_WRITE_ONLY, (size_t)rows * 4, &out, "codes")))
    goto done;
  int64_t at = 0;
  for (int c = 0; c < ncols; c++) {
    views[c] = &queries[c];
    outs[c] = out;
    off[c] = at;
    at += queries[c].length;
  }
  if ((st = tabcl__catindex_lookup_views(idx, views, longest, outs, off, fn))) goto done;
  /* every step succeeded: only now do the caller's arrays change, straight
     from the staging area where the codes fit one chunk */
  const code_scatter sc = {ncols, queries, codes, off};
  if (tabcl__download_drain(ctx, out, 0, (size_t)rows * 4, scatter_codes, (void *)&sc, &st))
    goto done;
  if ((st = tabcl__download(ctx, out, 0, (size_t)rows * 4, host))) goto done;
  scatter_codes(host, 0, (size_t)rows * 4, (void *)&sc);
done:
  tabcl__pool_put(ctx, out);
  tabcl__free(views);
  tabcl__free(outs);
  tabcl__free(off);
  tabcl__free(host);
  return st;
}

tabcl_status tabcl_category_index_lookup(tabcl_category_index *idx, int ncols,
                                         const tabcl_strings_view *queries,
                                         int32_t *const *codes) {
  static const char fn[] = "tabcl_category_index_lookup";
  tabcl_status st = tabcl__catindex_check(idx, ncols, fn);
  if (st) return st;
  if (!queries || !codes)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s is NULL", fn, !queries ? "queries" : "codes");
  int64_t *longest = tabcl__calloc((size_t)ncols + 1, sizeof *longest);
  if (!longest)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       ncols);
  int64_t rows = 0, bytes = 0;
  for (int c = 0; c < ncols && !st; c++) {
    const tabcl_strings_view *v = &queries[c];
    if ((st = tabcl__strings_validate_on(idx->ctx, v, fn, c, &longest[c]))) break;
    if (v->length && !codes[c])
      st = tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: codes is NULL for %lld rows", fn,
                       c, (long long)v->length);
    rows += v->length;
    if (v->length) bytes += v->offsets[v->length] - v->offsets[0];
  }
  /* the plan's route (the calling thread, the worker pool or the device),
     then its executor; a rejected call writes no code */
  if (!st && rows) {
    const tabcl__route_plan route = tabcl__catindex_route(idx, rows, bytes);
    if (route.route == TABCL__ROUTE_DEVICE)
      st = lookup_on_device(idx, ncols, queries, longest, rows, codes, fn);
    else
      st = lookup_on_host(idx, route.threads, ncols, queries, codes);
  }
  tabcl__free(longest);
  if (!st) tabcl__clear_error();
  return st;
}

tabcl_status tabcl__catindex_check_mem(const tabcl_context *ctx, cl_mem m, size_t need, const char *fn,
                                       int col, const char *what) {
  if (!m)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: %s is NULL", fn, col, what);
  size_t size = 0;
  cl_context owner = NULL;
  cl_int err = TABCL_CL(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL));
  if (err == CL_SUCCESS)
    err = TABCL_CL(clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL));
  if (err == CL_INVALID_MEM_OBJECT)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: %s is not a buffer", fn, col, what);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetMemObjectInfo", what);
  if (owner != ctx->cl)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: column %d: %s belongs to another OpenCL context", fn, col, what);
  if (size < need)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: %s holds %zu bytes; %zu needed",
                       fn, col, what, size, need);
  return TABCL_OK;
}

tabcl_status tabcl__catindex_check_cl_column(const tabcl_context *ctx, const tabcl_strings_cl *v,
                                            const char *fn, int c) {
  if (v->length < 0 || v->bytes < 0 || v->max_label < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: column %d: length %lld, bytes %lld, max_label %lld", fn, c,
                       (long long)v->length, (long long)v->bytes, (long long)v->max_label);
  if (!v->length) return TABCL_OK;
  tabcl_status st;
  if (((v->bytes || v->data) &&
       (st = tabcl__catindex_check_mem(ctx, v->data, (size_t)v->bytes, fn, c, "data"))) ||
      (st = tabcl__catindex_check_mem(ctx, v->offsets, (size_t)(v->length + 1) * 8, fn, c,
                                      "offsets")) ||
      (v->validity && (st = tabcl__catindex_check_mem(ctx, v->validity,
                                                      (size_t)(v->length + 7) / 8, fn, c,
                                                      "validity"))))
    return st;
  return TABCL_OK;
}

tabcl_status tabcl_category_index_lookup_cl(tabcl_category_index *idx, int ncols,
                                            const tabcl_strings_cl *queries, cl_mem const *codes,
                                            cl_uint nwait, const cl_event *wait, cl_event *ev) {
  static const char fn[] = "tabcl_category_index_lookup_cl";
  tabcl_status st = tabcl__catindex_check(idx, ncols, fn);
  if (st) return st;
  if (!queries || !codes)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s is NULL", fn, !queries ? "queries" : "codes");
  /* OpenCL refuses a count of 0 with a list (CL_INVALID_EVENT_WAIT_LIST)
     deep inside the call; refused here instead, as tabcl_sdpa_cl does */
  if ((nwait == 0) != (wait == NULL))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: nwait is %u but wait is %s", fn, nwait,
                       wait ? "not NULL" : "NULL");
  for (int c = 0; c < ncols; c++) {
    const tabcl_strings_cl *v = &queries[c];
    if ((st = tabcl__catindex_check_cl_column(idx->ctx, v, fn, c))) return st;
    if (v->length &&
        (st = tabcl__catindex_check_mem(idx->ctx, codes[c], (size_t)v->length * 4, fn, c, "codes")))
      return st;
  }
  tabcl__clear_error();
  tabcl__dev_strings *q = tabcl__calloc((size_t)ncols, sizeof *q);
  int64_t *off = tabcl__calloc((size_t)ncols, sizeof *off);
  if (!q || !off) {
    tabcl__free(q);
    tabcl__free(off);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       ncols);
  }
  cl_mem *copies = tabcl__calloc((size_t)ncols, sizeof *copies);
  if (!copies)
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                     ncols);
  /* Where the CPU kernels take every column, they read the caller's
     buffers as they are, short or not (upload.in_place): no padded copy. */
  int64_t rows = 0, bytes = 0, most = 0;
  for (int c = 0; c < ncols; c++) {
    /* the public struct, as the internal one, once; the longest label is
       the caller's max_label where it is given and possible, else bytes */
    const tabcl_strings_cl *v = &queries[c];
    q[c] = (tabcl__dev_strings){
        .length = v->length,
        .bytes = v->bytes,
        .max_label = v->max_label > 0 && v->max_label < v->bytes ? v->max_label : v->bytes,
        .data = v->data,
        .offsets = v->offsets,
        .validity = v->validity};
    rows += v->length;
    bytes += v->bytes;
    if (q[c].max_label > most) most = q[c].max_label;
  }
  int in_place = 0;
  if (!st) st = queries_in_place(idx, rows, bytes, most, &in_place);
  for (int c = 0; c < ncols && !st; c++) {
    if (!q[c].length) continue;
    /* (a column without a data buffer, every label empty, gets its small copy) */
    q[c].in_place = in_place && q[c].data;
    if (q[c].in_place) continue;
    /* The GPU hash reads whole aligned words past the last label; a buffer
       too short for that is copied into a padded one of the call's own. */
    size_t padded = tabcl__round_up((size_t)q[c].bytes, 8) + 8, size = 0;
    /* no data buffer (every label empty) counts as one too short */
    cl_int err = q[c].data ? TABCL_CL(clGetMemObjectInfo(q[c].data, CL_MEM_SIZE, sizeof size,
                                                         &size, NULL))
                           : CL_SUCCESS;
    if (err != CL_SUCCESS) {
      st = tabcl__cl_fail(err, "clGetMemObjectInfo", "query data");
      break;
    }
    if (size >= padded) continue;
    if ((st = tabcl__buffer_create(idx->ctx, CL_MEM_READ_WRITE, padded, NULL, &copies[c],
                                   "padded query data")))
      break;
    /* static: the non-blocking write may read it after this call returns */
    static const cl_uchar zeros[16] = {0};
    size_t used = (size_t)q[c].bytes;
    err = TABCL_CL(clEnqueueWriteBuffer(idx->ctx->queue, copies[c], CL_FALSE, used, padded - used,
                                        zeros, nwait, wait, NULL));
    if (err == CL_SUCCESS && used)
      err = TABCL_CL(clEnqueueCopyBuffer(idx->ctx->queue, q[c].data, copies[c], 0, 0, used, 0,
                                         NULL, NULL));
    if (err != CL_SUCCESS) {
      st = tabcl__cl_fail(err, "clEnqueueCopyBuffer", "padded query data");
      break;
    }
    q[c].data = copies[c];
  }
  if (!st) st = tabcl__catindex_lookup_dev(idx, q, codes, off, nwait, wait, ev);
  if (copies)
    for (int c = 0; c < ncols; c++) tabcl__buffer_release(copies[c]);
  tabcl__free(copies);
  tabcl__free(q);
  tabcl__free(off);
  return st;
}

int64_t tabcl__catindex_lookup_peak_bytes(int ncols, const tabcl_strings_view *queries) {
  int64_t total = 0;
  for (int c = 0; c < ncols; c++) {
    const tabcl_strings_view *v = &queries[c];
    int64_t n = v->length, bytes = n ? v->offsets[n] - v->offsets[0] : 0;
    total += (int64_t)tabcl__round_up((size_t)bytes, 8) + 8;   /* label bytes, padded */
    total += (n + 1) * 8;                                         /* offsets */
    if (v->validity) total += (n + 7) / 8;
    total += n * 8 + n * 4 + n * 8;                 /* hashes, codes, candidates (long labels) */
  }
  return total;
}
