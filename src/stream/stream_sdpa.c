/* Attention of one query batch against each estimator's K and V in turn,
 * the estimators streamed `depth` ahead: the common case of a stream. Each
 * estimator's attention waits for its upload's event and gives its own
 * event back to the stream, which refills those buffers only after it. */
#include <stdio.h>
#include <string.h>

#include "attention/sdpa.h"
#include "stream/stream.h"

#define MAX_DEPTH 64

typedef struct run_args {
  const char *fn;
  const tabcl_sdpa_desc *desc;
  int count;
  const int64_t *kv_len;
  const void *const *k, *const *v;
  int depth;
} run_args;

static tabcl_sdpa_desc desc_of(const run_args *a, int i) {
  tabcl_sdpa_desc d = *a->desc;
  if (a->kv_len) d.kv_len = a->kv_len[i];
  return d;
}

static size_t kv_bytes(const tabcl_sdpa_desc *d) {
  return (size_t)d->batch * (size_t)d->kv_len * (size_t)d->kv_heads * (size_t)d->head_dim *
         tabcl__sdpa_elem_size(d->dtype);
}

static size_t q_bytes(const tabcl_sdpa_desc *d) {
  return (size_t)d->batch * (size_t)d->q_len * (size_t)d->q_heads * (size_t)d->head_dim *
         tabcl__sdpa_elem_size(d->dtype);
}

/* Everything, before anything is enqueued. has_out[i]: out[i] given. */
static tabcl_status validate(const run_args *a, tabcl_context *ctx, int has_q, const void *out,
                             int (*has_out)(const void *out, int i)) {
  const char *fn = a->fn;
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!a->desc) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: desc is NULL", fn);
  if (a->count < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: count is %d; it must be >= 0", fn, a->count);
  if (a->depth < 1 || a->depth > MAX_DEPTH)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: depth is %d; it must be in [1, %d]", fn,
                       a->depth, MAX_DEPTH);
  if (a->desc->mask != TABCL_MASK_NONE)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: desc->mask must be TABCL_MASK_NONE", fn);
  if (a->count && !a->k) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: k is NULL", fn);
  if (a->count && !a->v) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: v is NULL", fn);
  if (a->count && !out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  /* no estimator: the descriptor alone */
  if (!a->count) return tabcl__sdpa_validate(fn, ctx, a->desc, has_q, 1, 1, 0, 1);
  for (int i = 0; i < a->count; i++) {
    char name[96];
    snprintf(name, sizeof name, "%s: estimator %d", fn, i);
    tabcl_sdpa_desc d = desc_of(a, i);
    tabcl_status s = tabcl__sdpa_validate(name, ctx, &d, has_q, a->k[i] != NULL,
                                          a->v[i] != NULL, 0, has_out(out, i));
    if (s) return s;
  }
  return TABCL_OK;
}

static int has_host_out(const void *out, int i) { return ((void *const *)out)[i] != NULL; }
static int has_cl_out(const void *out, int i) { return ((const cl_mem *)out)[i] != NULL; }

static void release_events(cl_event *e, int n) {
  for (int i = 0; i < n; i++)
    if (e[i]) clReleaseEvent(e[i]), e[i] = NULL;
}

/* The pipeline. Host outputs (out_host) go through a ring of `depth`
   device buffers read back on the transfer queue; estimator i's attention
   waits for the read of the buffer's previous estimator, named in its wait
   list; the call returns when they are read. Device outputs (out_cl) are
   written in place, and *ev (ev may be NULL) receives an event after all of
   them; the call returns without waiting. */
static tabcl_status run(const run_args *a, tabcl_context *ctx, cl_mem q, cl_mem const *out_cl,
                        void *const *out_host, cl_uint nwait, const cl_event *wait,
                        cl_event *ev) {
  const char *fn = a->fn;
  const int n = a->count;
  tabcl_status s = TABCL_OK;
  const void **host = tabcl__malloc(2 * (size_t)n * sizeof *host + 1);
  size_t *bytes = tabcl__malloc(2 * (size_t)n * sizeof *bytes + 1);
  cl_event *wl = tabcl__malloc(((size_t)nwait + 2) * sizeof *wl);
  if (ev) *ev = NULL;
  cl_mem ring[MAX_DEPTH] = {0};
  cl_event read_ev[MAX_DEPTH] = {0};
  cl_event prev = NULL;
  tabcl_stream *st = NULL;
  int nring = 0;
  if (!host || !bytes || !wl) {
    s = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory", fn);
    goto out;
  }
  for (int i = 0; i < n; i++) {
    tabcl_sdpa_desc d = desc_of(a, i);
    host[2 * i] = a->k[i];
    host[2 * i + 1] = a->v[i];
    bytes[2 * i] = bytes[2 * i + 1] = kv_bytes(&d);
  }
  const tabcl_stream_desc sd = {n, 2, a->depth, host, bytes};
  if ((s = tabcl__stream_create(fn, ctx, &sd, &st))) goto out;
  const size_t ob = q_bytes(a->desc);
  nring = out_host ? st->depth : 0;
  for (int r = 0; r < nring && !s; r++)
    s = tabcl__pool_get(ctx, CL_MEM_READ_WRITE, ob, &ring[r], "a streamed output");
  for (int i = 0; i < n && !s; i++) {
    int64_t item;
    cl_mem kv[2];
    cl_event ready = NULL, done = NULL;
    if ((s = tabcl__stream_next(fn, st, &item, kv, &ready))) break;
    const int r = i % (st->depth ? st->depth : 1);
    cl_uint nw = 0;
    wl[nw++] = ready;
    if (nring && read_ev[r]) wl[nw++] = read_ev[r];
    for (cl_uint w = 0; w < nwait; w++) wl[nw++] = wait[w];
    tabcl_sdpa_desc d = desc_of(a, i);
    s = tabcl_sdpa_cl(ctx, &d, q, kv[0], kv[1], NULL, nring ? ring[r] : out_cl[i], nw, wl, &done);
    clReleaseEvent(ready);
    if (s) break;
    /* the read below waits on `done` from the transfer queue: the compute
       queue must be flushed first (see tabcl__stream_done) */
    cl_int ferr = TABCL_CL(clFlush(ctx->queue));
    if (ferr != CL_SUCCESS) {
      clReleaseEvent(done);
      s = tabcl__cl_fail(ferr, "clFlush", fn);
      break;
    }
    if (nring) {
      /* the read goes first on the transfer queue: the refill below then
         does not hold it up */
      if (read_ev[r]) clReleaseEvent(read_ev[r]), read_ev[r] = NULL;
      cl_int err = ob ? TABCL_CL(clEnqueueReadBuffer(st->tq, ring[r], CL_FALSE, 0, ob,
                                                     out_host[i], 1, &done, &read_ev[r]))
                      : TABCL_CL(clEnqueueMarkerWithWaitList(st->tq, 1, &done, &read_ev[r]));
      if (err != CL_SUCCESS) {
        read_ev[r] = NULL;
        clReleaseEvent(done);
        s = tabcl__cl_fail(err, ob ? "clEnqueueReadBuffer" : "clEnqueueMarkerWithWaitList", fn);
        break;
      }
    }
    s = tabcl__stream_done(fn, st, item, done);
    if (prev) clReleaseEvent(prev);
    prev = done;
    if (s) break;
  }
  if (!s && nring) {
    /* every output read back: the reads are the last work of the call */
    cl_event rd[MAX_DEPTH];
    cl_uint nr = 0;
    for (int r = 0; r < nring; r++)
      if (read_ev[r]) rd[nr++] = read_ev[r];
    cl_int err = nr ? TABCL_CL(clWaitForEvents(nr, rd)) : CL_SUCCESS;
    if (err != CL_SUCCESS) s = tabcl__cl_fail(err, "clWaitForEvents", fn);
  }
  if (!s && !nring && ev) {
    /* one event after every output: the last attention's, the context's
       queue being in order */
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, 1, &prev, ev));
    if (err != CL_SUCCESS) {
      *ev = NULL;
      s = tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", fn);
    }
  }
out:
  if (s && st) {
    /* nothing of this call may run on after it failed: the caller may free
       its host memory now */
    tabcl__queue_drain(ctx->queue);
    tabcl__queue_drain(st->tq);
  }
  if (prev) clReleaseEvent(prev);
  release_events(read_ev, MAX_DEPTH);
  /* back to the pool: the reads were waited for, or both queues drained */
  for (int r = 0; r < MAX_DEPTH; r++) tabcl__pool_put(ctx, ring[r]);
  /* Device outputs: the attention events cover the stream's buffers, which
     OpenCL keeps alive for the commands already enqueued on them. */
  tabcl__stream_free(st, s || nring);
  tabcl__free(host);
  tabcl__free(bytes);
  tabcl__free(wl);
  return s;
}

tabcl_status tabcl_stream_sdpa_host(tabcl_context *ctx, const tabcl_sdpa_desc *desc, int count,
                                    const int64_t *kv_len, const void *q, const void *const *k,
                                    const void *const *v, int depth, void *const *out) {
  const run_args a = {"tabcl_stream_sdpa_host", desc, count, kv_len, k, v, depth};
  tabcl_status s = validate(&a, ctx, q != NULL, out, has_host_out);
  if (s || !count) return s;
  cl_mem qb = NULL;
  s = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, q_bytes(desc), q, &qb, "q");
  if (!s) s = run(&a, ctx, qb, NULL, out, 0, NULL, NULL);
  tabcl__buffer_release(qb);
  return s;
}

tabcl_status tabcl_stream_sdpa_cl(tabcl_context *ctx, const tabcl_sdpa_desc *desc, int count,
                                  const int64_t *kv_len, cl_mem q, const void *const *k,
                                  const void *const *v, int depth, cl_mem const *out,
                                  cl_uint nwait, const cl_event *wait, cl_event *ev) {
  const run_args a = {"tabcl_stream_sdpa_cl", desc, count, kv_len, k, v, depth};
  tabcl_status s = validate(&a, ctx, q != NULL, out, has_cl_out);
  if (s) return s;
  if ((nwait == 0) != (wait == NULL))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: nwait is %u but wait is %s", a.fn, nwait,
                       wait ? "not NULL" : "NULL");
  if (ev) *ev = NULL;
  if (count) return run(&a, ctx, q, out, NULL, nwait, wait, ev);
  if (!ev) return TABCL_OK;
  /* no estimator: the event follows the caller's wait list */
  cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, ev));
  if (err == CL_SUCCESS) return TABCL_OK;
  *ev = NULL;
  return tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", a.fn);
}
