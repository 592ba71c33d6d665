/* The device bitonic sort of (ulong key, uint value) pairs: the plan of
 * launches (one local-memory sort per tile, then for each longer merge a few
 * register passes over global memory and one local-memory finish) and its
 * self-check. The kernels are in cl/sort.cl. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort/sort.h"

/* Test-only limits (process-wide, 0 = the device's own): a tiny tile makes
   small inputs take the global passes, a tiny launch cap makes them split. */
static unsigned test_tile;
static size_t test_max_items;

void tabcl__sort_set_test_limits(unsigned tile, size_t max_items_per_launch) {
  test_tile = tile;
  test_max_items = max_items_per_launch;
}

/* The largest register pass: 2^SORT_MAX_LOGR pairs per work-item, i.e. 5
   stages per trip through memory, with 96 32-bit registers of pairs (GPUs
   have 128 to 255 per work-item); a 2^24-pair sort then takes 24 passes of
   this kind instead of 28 with 16 pairs. */
#define SORT_MAX_LOGR 5

typedef struct sort_plan {
  unsigned tile, wg;     /* pairs per local tile; its work-group size */
  size_t max_items;      /* work-items one launch may take */
  size_t gwg;            /* work-group size of the register passes */
  unsigned max_logr;     /* stages a register pass takes at most */
  char extra[64];        /* the build options naming tile and wg */
} sort_plan;

/* Tuning knob for benchmark sweeps: a power of two from the environment
   within [lo, hi], else dflt. */
static unsigned env_pow2(const char *name, unsigned lo, unsigned hi, unsigned dflt) {
  const char *e = getenv(name);
  unsigned v = e ? (unsigned)strtoul(e, NULL, 10) : 0;
  return v >= lo && v <= hi && (v & (v - 1)) == 0 ? v : dflt;
}

static unsigned log2_exact(uint64_t x) {
  unsigned l = 0;
  while (((uint64_t)1 << l) < x) l++;
  return l;
}

/* Tile and work-group size come from the device alone, never from n: the
   tile is the largest power of two whose keys and values fit in local
   memory with room to spare, capped at 4096 pairs (a full tile sort already
   takes 30 rounds through local memory); each work-item handles at least
   two pairs, and eight (one register group) on a 2048-pair tile. */
static void plan_for(const tabcl_context *ctx, sort_plan *p) {
  cl_ulong local = ctx->info.local_mem_size;
  cl_ulong room = local > 2048 ? local - 1024 : local / 2;
  unsigned tile = 4096;
  /* (cl/sort.cl adds one padding slot per 16) */
  while (tile > 2 && (cl_ulong)(tile + tile / 16) * (sizeof(cl_ulong) + sizeof(cl_uint)) > room)
    tile /= 2;
  if (test_tile >= 2) tile = test_tile;
  size_t cap = ctx->info.max_work_group_size;
  if (ctx->info.max_work_item_sizes[0] < cap) cap = ctx->info.max_work_item_sizes[0];
  /* TABCL_SORT_TILE, TABCL_SORT_LWG, TABCL_SORT_GWG and TABCL_SORT_LOGR
     (stages a register pass takes: 1, 2, 4 or 8 ... as 2^LOGR pairs a
     work-item, so 2, 4, 8, 16, 32) override the choices for sweeps. */
  unsigned t_env = env_pow2("TABCL_SORT_TILE", 2, 4096, 0);
  if (t_env && t_env < tile) tile = t_env;
  /* Local passes in groups of at most 128: on the H200 a 2^24-pair sort
     took 5.96 ms so against 6.41 with 256 and 9.1 with 512 (tabcl-bench
     sort, TABCL_SORT_LWG sweep). */
  unsigned wgmax = env_pow2("TABCL_SORT_LWG", 2, 1024, 128);
  unsigned wg = 1;
  while (wg * 2 <= wgmax && wg * 2 <= cap && wg * 2 <= tile / 2) wg *= 2;
  p->tile = tile;
  p->wg = wg;
  p->gwg = env_pow2("TABCL_SORT_GWG", 32, 1024, 256);
  unsigned pairs = env_pow2("TABCL_SORT_LOGR", 2, 1u << SORT_MAX_LOGR, 1u << SORT_MAX_LOGR);
  p->max_logr = log2_exact(pairs);
  /* Global ids stay well inside 31 bits, as tabcl__slice_items does. */
  size_t limit = ((size_t)1 << 30);
  if (test_max_items) limit = test_max_items;
  p->max_items = limit;
  snprintf(p->extra, sizeof p->extra, "-DSORT_TILE=%u -DSORT_WG=%u", tile, wg);
}

/* Launch state: the caller's wait list goes to the first launch only (the
   queue is in order); each launch's event replaces the previous one when
   the caller wants an event. */
typedef struct sort_run {
  tabcl_context *ctx;
  cl_uint nwait;
  const cl_event *wait;
  int want_event;
  cl_event last;
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
static tabcl_status run_local(sort_run *r, const sort_plan *p, cl_kernel k, cl_mem keys,
                              cl_mem vals, uint64_t n, uint64_t tiles, int full) {
  uint64_t per = p->max_items / p->wg;
  if (per == 0) per = 1;
  cl_int f = full;
  for (uint64_t first = 0; first < tiles; first += per) {
    uint64_t count = tiles - first < per ? tiles - first : per;
    cl_ulong nn = n, ff = first;
    tabcl_status s = TABCL_SET_ARGS(k, "sort_local", TABCL_ARG(keys), TABCL_ARG(vals),
                                    TABCL_ARG(nn), TABCL_ARG(ff), TABCL_ARG(f));
    if (s) return s;
    size_t global = (size_t)count * p->wg, local = p->wg;
    if ((s = enqueue(r, k, &global, &local, "sort_local"))) return s;
  }
  return TABCL_OK;
}

/* One register pass of 2^logr stages from stride 2^logj down; only the
   work-items whose lowest position is below n are launched. */
static tabcl_status run_global(sort_run *r, const sort_plan *p, cl_kernel k, const char *name,
                               cl_mem keys, cl_mem vals, uint64_t n, unsigned logj,
                               unsigned logr, int flip) {
  uint64_t block = (uint64_t)2 << logj, step = block >> logr;
  uint64_t rem = n % block;
  uint64_t items = n / block * step + (rem < step ? rem : step);
  size_t wg = tabcl__wg_size(r->ctx, k, p->gwg);
  uint64_t per = p->max_items / wg * wg;
  if (per == 0) per = wg;
  cl_uint lj = logj;
  cl_int f = flip;
  for (uint64_t first = 0; first < items; first += per) {
    uint64_t count = items - first < per ? items - first : per;
    cl_ulong nn = n, ff = first;
    tabcl_status s = TABCL_SET_ARGS(k, name, TABCL_ARG(keys), TABCL_ARG(vals), TABCL_ARG(nn),
                                    TABCL_ARG(lj), TABCL_ARG(f), TABCL_ARG(ff));
    if (s) return s;
    size_t global = tabcl__round_up((size_t)count, wg);
    if ((s = enqueue(r, k, &global, &wg, name))) return s;
  }
  return TABCL_OK;
}

static tabcl_status check_size(cl_mem m, size_t n, size_t elem, const char *what) {
  size_t have = 0;
  cl_int err = TABCL_CL(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof have, &have, NULL));
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetMemObjectInfo", what);
  if (have / elem < n)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "tabcl__sort_pairs: the %s buffer holds %zu bytes; %zu pairs need %zu", what,
                       have, n, n * elem);
  return TABCL_OK;
}

static tabcl_status sort_steps(sort_run *r, const sort_plan *p, cl_kernel *kernels, cl_mem keys,
                               cl_mem vals, uint64_t n) {
  static const char *names[SORT_MAX_LOGR + 1] = {NULL,           "sort_global_2",
                                                 "sort_global_4", "sort_global_8",
                                                 "sort_global_16", "sort_global_32"};
  tabcl_context *ctx = r->ctx;
  tabcl_status s = tabcl__kernel_create(ctx, "sort", p->extra, "sort_local", &kernels[0]);
  uint64_t tiles = (n + p->tile - 1) / p->tile;
  if (!s) s = run_local(r, p, kernels[0], keys, vals, n, tiles, 1);
  unsigned logt = log2_exact(p->tile), logn = log2_exact(n);
  for (unsigned logk = logt + 1; !s && logk <= logn; logk++) {
    /* strides 2^(logk-1) .. tile through memory, grouped LOGR at a time */
    unsigned logj = logk - 1;
    int flip = 1;
    while (!s && logj >= logt) {
      unsigned logr = logj - logt + 1;
      if (logr > p->max_logr) logr = p->max_logr;
      if (!kernels[logr]) s = tabcl__kernel_create(ctx, "sort", p->extra, names[logr], &kernels[logr]);
      if (!s) s = run_global(r, p, kernels[logr], names[logr], keys, vals, n, logj, logr, flip);
      logj -= logr;
      flip = 0;
    }
    if (!s) s = run_local(r, p, kernels[0], keys, vals, n, tiles, 0);
  }
  return s;
}

tabcl_status tabcl__sort_pairs(tabcl_context *ctx, cl_mem keys, cl_mem values, size_t n,
                               cl_uint nwait, const cl_event *wait, cl_event *ev) {
  if (ev) *ev = NULL;
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: no context");
  if (nwait > 0 && !wait)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: %u events to wait for but no list",
                       nwait);
  if (n > 0 && (!keys || !values))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: %zu pairs but no %s buffer", n,
                       keys ? "values" : "keys");
  if ((uint64_t)n > ((uint64_t)1 << 40))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__sort_pairs: %zu pairs is too many", n);
  tabcl_status s;
  if (n > 0 && ((s = check_size(keys, n, sizeof(cl_ulong), "keys")) ||
                (s = check_size(values, n, sizeof(cl_uint), "values"))))
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
  sort_plan p;
  plan_for(ctx, &p);
  sort_run r = {ctx, nwait, wait, ev != NULL, NULL};
  cl_kernel kernels[SORT_MAX_LOGR + 1] = {NULL};
  s = sort_steps(&r, &p, kernels, keys, values, (uint64_t)n);
  for (int i = 0; i <= SORT_MAX_LOGR; i++) tabcl__kernel_release(kernels[i]);
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
