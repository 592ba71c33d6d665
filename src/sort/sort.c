/* The device bitonic sort of (ulong key, uint value) pairs: enqueueing the
 * plan of sort_plan.c, and the self-check. The kernels are in cl/sort.cl. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort/sort.h"

/* Launch state: the caller's wait list goes to the first launch only (the
   queue is in order); each launch's event replaces the previous one when
   the caller wants an event. */
typedef struct sort_run {
  tabcl_context *ctx;
  cl_uint nwait;
  const cl_event *wait;
  int want_event;
  cl_event last;
  cl_ulong at;              /* the pairs' first element in keys and values */
} sort_run;

static tabcl_status enqueue(sort_run *r, cl_kernel k, const size_t *global, const size_t *local,
                            const char *what) {
  cl_event e = NULL;
  tabcl_status s = tabcl__launch(r->ctx, k, 1, global, local, r->nwait, r->wait,
                                 r->want_event ? &e : NULL, what);
  if (s) return s;
  r->nwait = 0;
  r->wait = NULL;
  if (r->last) clReleaseEvent(r->last);
  r->last = e;
  return TABCL_OK;
}

/* sort_local over tiles [0, tiles), split so no launch exceeds max_items. */
static tabcl_status run_local(sort_run *r, const tabcl__sort_plan *p, cl_kernel k, cl_mem keys,
                              cl_mem vals, uint64_t n, uint64_t tiles, int full) {
  uint64_t per = p->max_items / p->wg;
  if (per == 0) per = 1;
  cl_int f = full;
  for (uint64_t first = 0; first < tiles; first += per) {
    uint64_t count = tiles - first < per ? tiles - first : per;
    cl_ulong nn = n, ff = first;
    tabcl_status s = TABCL_SET_ARGS(k, "sort_local", TABCL_ARG(keys), TABCL_ARG(vals),
                                    TABCL_ARG(nn), TABCL_ARG(ff), TABCL_ARG(f),
                                    TABCL_ARG(r->at));
    if (s) return s;
    size_t global = (size_t)count * p->wg, local = p->wg;
    if ((s = enqueue(r, k, &global, &local, "sort_local"))) return s;
  }
  return TABCL_OK;
}

/* sort_serial over runs [0, runs): one work-item a run, in launches of at
   most max_items. */
static tabcl_status run_serial(sort_run *r, const tabcl__sort_plan *p, cl_kernel k, cl_mem keys,
                               cl_mem vals, cl_mem scratch, int full) {
  const uint64_t per = p->max_items ? p->max_items : 1;
  cl_int f = full;
  cl_ulong nn = p->n, run = p->tile;
  for (uint64_t first = 0; first < p->tiles; first += per) {
    uint64_t count = p->tiles - first < per ? p->tiles - first : per;
    cl_ulong ff = first;
    tabcl_status s = TABCL_SET_ARGS(k, "sort_serial", TABCL_ARG(keys), TABCL_ARG(vals),
                                    TABCL_ARG(scratch), TABCL_ARG(nn), TABCL_ARG(run),
                                    TABCL_ARG(ff), TABCL_ARG(f), TABCL_ARG(r->at));
    if (s) return s;
    size_t global = (size_t)count, local = 1;
    if ((s = enqueue(r, k, &global, &local, "sort_serial"))) return s;
  }
  return TABCL_OK;
}

/* One register pass of 2^logr stages from stride 2^logj down; only the
   work-items whose lowest position is below n are launched. */
static tabcl_status run_global(sort_run *r, const tabcl__sort_plan *p, cl_kernel k, const char *name,
                               cl_mem keys, cl_mem vals, uint64_t n, unsigned logj,
                               unsigned logr, int flip) {
  uint64_t block = (uint64_t)2 << logj, step = block >> logr;
  uint64_t rem = n % block;
  uint64_t items = n / block * step + (rem < step ? rem : step);
  /* The plan's group size, lowered only where this kernel allows fewer. */
  size_t wg = tabcl__wg_size(r->ctx, k, p->gwg);
  uint64_t per = p->max_items / wg * wg;
  if (per == 0) per = wg;
  cl_uint lj = logj;
  cl_int f = flip;
  for (uint64_t first = 0; first < items; first += per) {
    uint64_t count = items - first < per ? items - first : per;
    cl_ulong nn = n, ff = first;
    tabcl_status s = TABCL_SET_ARGS(k, name, TABCL_ARG(keys), TABCL_ARG(vals), TABCL_ARG(nn),
                                    TABCL_ARG(lj), TABCL_ARG(f), TABCL_ARG(ff),
                                    TABCL_ARG(r->at));
    if (s) return s;
    size_t global = tabcl__round_up((size_t)count, wg);
    if ((s = enqueue(r, k, &global, &wg, name))) return s;
  }
  return TABCL_OK;
}

static tabcl_status check_size(cl_mem m, size_t at, size_t n, size_t elem, const char *what) {
  size_t have = 0;
  cl_int err = TABCL_CL(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof have, &have, NULL));
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetMemObjectInfo", what);
  if (have / elem < n || have / elem - n < at)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "tabcl__sort_pairs: the %s buffer holds %zu bytes; %zu pairs from "
                       "element %zu need %zu",
                       what, have, n, at, (at + n) * elem);
  return TABCL_OK;
}

static tabcl_status sort_steps(sort_run *r, const tabcl__sort_plan *p, cl_kernel *kernels,
                               cl_mem keys, cl_mem vals, cl_mem scratch) {
  static const char *names[TABCL__SORT_MAX_LOGR + 1] = {NULL,           "sort_global_2",
                                                        "sort_global_4", "sort_global_8",
                                                        "sort_global_16", "sort_global_32"};
  tabcl_context *ctx = r->ctx;
  tabcl_status s = TABCL_OK;
  for (int i = 0; !s && i < p->nsteps; i++) {
    const tabcl__sort_step *st = &p->steps[i];
    const unsigned kid = st->logr; /* 0: the local-memory kernel */
    if (!kernels[kid])
      s = tabcl__kernel_create(ctx, "sort", p->extra,
                               kid ? names[kid] : p->serial ? "sort_serial" : "sort_local",
                               &kernels[kid]);
    if (s) break;
    if (!kid && p->serial) s = run_serial(r, p, kernels[0], keys, vals, scratch, st->flip);
    else if (!kid) s = run_local(r, p, kernels[0], keys, vals, p->n, p->tiles, st->flip);
    else s = run_global(r, p, kernels[kid], names[kid], keys, vals, p->n, st->logj, st->logr,
                        st->flip);
  }
  return s;
}

tabcl_status tabcl__sort_plan_for(tabcl_context *ctx, uint64_t n, tabcl__sort_plan *p) {
  tabcl__device_desc dev;
  tabcl__target tg;
  int limit_known = tabcl__context_target_limited(ctx, &dev, &tg), again = 0;
  tabcl__sort_plan_make(&tg, n, p);
  /* The CPU plan loops over a whole run in a work-item: where that could
     run long, the device's loop limit decides the runs (plan again). */
  tabcl_status s = tabcl__loop_limit_learn(ctx, &limit_known, &dev, p->serial ? p->serial_loops : 0,
                                           &again);
  if (!s && again) tabcl__sort_plan_make(&tg, n, p);
  return s;
}

tabcl_status tabcl__sort_pairs(tabcl_context *ctx, cl_mem keys, cl_mem values, size_t n,
                               cl_uint nwait, const cl_event *wait, cl_event *ev) {
  return tabcl__sort_pairs_at(ctx, keys, values, 0, n, nwait, wait, ev);
}

tabcl_status tabcl__sort_pairs_at(tabcl_context *ctx, cl_mem keys, cl_mem values, size_t at,
                                  size_t n, cl_uint nwait, const cl_event *wait, cl_event *ev) {
  if (ev) *ev = NULL;
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: no context");
  if (nwait > 0 && !wait)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: %u events to wait for but no list",
                       nwait);
  if (!nwait) wait = NULL;   /* OpenCL refuses a non-NULL list with no events */
  if (n > 0 && (!keys || !values))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: %zu pairs but no %s buffer", n,
                       keys ? "values" : "keys");
  if ((uint64_t)n > ((uint64_t)1 << 40))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: %zu pairs is too many", n);
  tabcl_status s;
  if (n > 0 && ((s = check_size(keys, at, n, sizeof(cl_ulong), "keys")) ||
                (s = check_size(values, at, n, sizeof(cl_uint), "values"))))
    return s;
  if (n < 2) {
    /* Nothing to move; a marker still gives the caller an event that
       completes after its wait list. */
    if (!ev) return TABCL_OK;
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, ev));
    if (err != CL_SUCCESS) {
      *ev = NULL;
      return tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "tabcl__sort_pairs");
    }
    return TABCL_OK;
  }
  tabcl__sort_plan p;
  if ((s = tabcl__sort_plan_for(ctx, (uint64_t)n, &p))) return s;
  sort_run r = {ctx, nwait, wait, ev != NULL, NULL, (cl_ulong)at};
  cl_kernel kernels[TABCL__SORT_MAX_LOGR + 1] = {NULL};
  /* the CPU plan's scratch: n keys, then n values (from the context's
     pool, handed out again only after the launches using it are done) */
  cl_mem scratch = NULL;
  if (p.serial)
    s = tabcl__pool_get(ctx, CL_MEM_READ_WRITE, n * (sizeof(cl_ulong) + sizeof(cl_uint)), &scratch,
                        "sort scratch");
  if (!s) s = sort_steps(&r, &p, kernels, keys, values, scratch);
  for (int i = 0; i <= TABCL__SORT_MAX_LOGR; i++) tabcl__kernel_release(kernels[i]);
  tabcl__pool_put(ctx, scratch);
  if (s) {
    /* Launches already enqueued still run; the pairs are then left in an
       unspecified order (still a permutation of the input). */
    if (r.last) clReleaseEvent(r.last);
    return s;
  }
  if (ev) *ev = r.last;
  return TABCL_OK;
}

/* ---- self-check ------------------------------------------------------- */

typedef struct sc_pair {
  uint64_t key;
  uint32_t value;
} sc_pair;

static int sc_cmp(const void *a, const void *b) {
  const sc_pair *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->value < y->value ? -1 : x->value > y->value;
}

/* ~10,000 random pairs, many with equal keys (values break the ties) and
   some with the largest key, sorted on the device and on the host. */
tabcl_status tabcl__selfcheck_sort(tabcl_context *ctx) {
  const size_t n = 10007;
  uint64_t *keys = tabcl__malloc(n * sizeof *keys);
  uint32_t *vals = tabcl__malloc(n * sizeof *vals);
  sc_pair *ref = tabcl__malloc(n * sizeof *ref);
  cl_mem dk = NULL, dv = NULL;
  tabcl_status s = TABCL_OK;
  if (!keys || !vals || !ref) {
    s = tabcl__fail(TABCL_OUT_OF_MEMORY,
                    "sort self-check: out of host memory for %zu test keys and values", n);
    goto done;
  }
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    uint64_t k = x;
    if (i % 3 == 0) k &= 0xFF;                      /* frequent ties */
    if (i % 97 == 0) k = UINT64_MAX;                /* the largest key is real data */
    keys[i] = k;
    vals[i] = (uint32_t)(x >> 40) ^ (uint32_t)i;
    ref[i].key = keys[i];
    ref[i].value = vals[i];
  }
  qsort(ref, n, sizeof *ref, sc_cmp);
  if ((s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * sizeof *keys, NULL, &dk, "sort keys")) ||
      (s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * sizeof *vals, NULL, &dv, "sort values")) ||
      (s = tabcl__write(ctx, dk, 0, n * sizeof *keys, keys)) ||
      (s = tabcl__write(ctx, dv, 0, n * sizeof *vals, vals)) ||
      (s = tabcl__sort_pairs(ctx, dk, dv, n, 0, NULL, NULL)) ||
      (s = tabcl__read(ctx, dk, 0, n * sizeof *keys, keys)) ||
      (s = tabcl__read(ctx, dv, 0, n * sizeof *vals, vals)))
    goto done;
  for (size_t i = 0; i < n; i++) {
    if (keys[i] != ref[i].key || vals[i] != ref[i].value) {
      s = tabcl__fail(TABCL_OPENCL_ERROR,
                      "sort self-check: pair %zu is (%llu, %u), expected (%llu, %u)", i,
                      (unsigned long long)keys[i], vals[i], (unsigned long long)ref[i].key,
                      ref[i].value);
      break;
    }
  }
done:
  tabcl__buffer_release(dk);
  tabcl__buffer_release(dv);
  tabcl__free(keys);
  tabcl__free(vals);
  tabcl__free(ref);
  return s;
}
