/* The device bitonic sort of (ulong key, uint value) pairs against qsort
 * on the host: sizes around every boundary, key distributions that stress
 * ties and the sentinel, tiny forced tiles for the global passes, events,
 * bad arguments and injected failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort/sort.h"
#include "tt.h"

typedef struct pair {
  uint64_t key;
  uint32_t value;
} pair;

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->value < y->value ? -1 : x->value > y->value;
}

enum dist {
  D_RANDOM,      /* full 64-bit keys, random values */
  D_FEW_KEYS,    /* keys from 5 values: values break the ties */
  D_ALL_EQUAL,   /* one key */
  D_SORTED,      /* already ascending */
  D_REVERSE,     /* strictly descending */
  D_TOP_BIT,     /* keys with and without the top bit: unsigned compare */
  D_MAX_KEY,     /* many pairs with key 2^64-1, some with value 2^32-1 too */
  D_COUNT
};
static const char *dist_name[D_COUNT] = {"random", "few-keys", "all-equal", "sorted",
                                         "reverse", "top-bit", "max-key"};

static void fill(tt_rng *r, enum dist d, uint64_t *k, uint32_t *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t x = tt_next(r);
    v[i] = (uint32_t)tt_next(r);
    switch (d) {
    case D_RANDOM: k[i] = x; break;
    case D_FEW_KEYS: k[i] = x % 5 * 0x1000000000ULL; break;
    case D_ALL_EQUAL: k[i] = 42; break;
    case D_SORTED: k[i] = (uint64_t)i * 3; v[i] = (uint32_t)i; break;
    case D_REVERSE: k[i] = (uint64_t)(n - i) * 7; break;
    case D_TOP_BIT: k[i] = (x & 1 ? 0x8000000000000000ULL : 0) | (x >> 40); break;
    case D_MAX_KEY:
      k[i] = x % 3 == 0 ? x : UINT64_MAX;
      if (x % 5 == 0) v[i] = UINT32_MAX;
      break;
    default: break;
    }
  }
}

/* Sorts (k, v) on the device and checks every pair against qsort. */
/* Forces the local tile to `tile` pairs (0: the planner's) and caps the
   work-items of one launch (0: the default), so tiny inputs take every
   kernel path. */
static void sort_limits(tabcl_context *ctx, unsigned tile, size_t max_items) {
  char t[24] = "auto", m[24] = "auto";
  if (tile) snprintf(t, sizeof t, "%u", tile);
  if (max_items) snprintf(m, sizeof m, "%zu", max_items);
  tt_tune(ctx, "sort.tile=%s;sort.max_items=%s", t, m);
}

/* The CPU plan (sort.serial: runs of pairs a work-item, their merge sort
   and linear finish) or the local-memory tiles, whatever the device: each
   test below that takes both runs on every device. */
static const char *const serial_modes[2] = {"0", "2"};
static void sort_serial_mode(tabcl_context *ctx, const char *mode) {
  tt_tune(ctx, "sort.serial=%s", mode);
}

static void check_sort(tabcl_context *ctx, const uint64_t *k, const uint32_t *v, size_t n,
                       const char *what) {
  pair *ref = malloc((n ? n : 1) * sizeof *ref);
  uint64_t *gk = malloc((n ? n : 1) * sizeof *gk);
  uint32_t *gv = malloc((n ? n : 1) * sizeof *gv);
  cr_assert(ref && gk && gv);
  for (size_t i = 0; i < n; i++) ref[i] = (pair){k[i], v[i]};
  qsort(ref, n, sizeof *ref, pair_cmp);
  cl_mem dk = NULL, dv = NULL;
  /* one spare element after n in each buffer: the sort must never touch it */
  const uint64_t guard_k = 0x0123456789ABCDEFULL;
  const uint32_t guard_v = 0xA5A5A5A5u;
  uint64_t *hk = malloc((n + 1) * 8);
  uint32_t *hv = malloc((n + 1) * 4);
  cr_assert(hk && hv);
  memcpy(hk, k, n * 8);
  memcpy(hv, v, n * 4);
  hk[n] = guard_k;
  hv[n] = guard_v;
  /* (copied at creation: oclgrind 21.10 does not always see a later write
     as initialising the buffer) */
  const cl_mem_flags f = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
  tt_assert_ok(tabcl__buffer_create(ctx, f, (n + 1) * 8, hk, &dk, "keys"));
  tt_assert_ok(tabcl__buffer_create(ctx, f, (n + 1) * 4, hv, &dv, "values"));
  free(hk);
  free(hv);
  tt_assert_ok(tabcl__sort_pairs(ctx, dk, dv, n, 0, NULL, NULL));
  tt_assert_ok(tabcl__read(ctx, dk, 0, n * 8, gk));
  tt_assert_ok(tabcl__read(ctx, dv, 0, n * 4, gv));
  uint64_t after_k = 0;
  uint32_t after_v = 0;
  tt_assert_ok(tabcl__read(ctx, dk, n * 8, 8, &after_k));
  tt_assert_ok(tabcl__read(ctx, dv, n * 4, 4, &after_v));
  cr_expect(after_k == guard_k && after_v == guard_v, "%s n=%zu: wrote past n", what, n);
  for (size_t i = 0; i < n; i++) {
    if (gk[i] != ref[i].key || gv[i] != ref[i].value) {
      cr_expect_fail("%s n=%zu: pair %zu is (%llx, %x), expected (%llx, %x)", what, n, i,
                     (unsigned long long)gk[i], gv[i], (unsigned long long)ref[i].key,
                     ref[i].value);
      break;
    }
  }
  tabcl__buffer_release(dk);
  tabcl__buffer_release(dv);
  free(ref);
  free(gk);
  free(gv);
}

static void check_random(tabcl_context *ctx, tt_rng *r, enum dist d, size_t n) {
  uint64_t *k = malloc((n ? n : 1) * 8);
  uint32_t *v = malloc((n ? n : 1) * 4);
  cr_assert(k && v);
  fill(r, d, k, v, n);
  check_sort(ctx, k, v, n, dist_name[d]);
  free(k);
  free(v);
}

/* Sizes at every boundary the plan has: tiny, powers of two and their
   neighbours, work-group multiples, the tiles of common devices (256 ..
   4096 pairs) and sizes that need several global passes. */
static const size_t boundary_sizes[] = {
    0,    1,    2,    3,    4,    5,    7,    8,    9,     15,    16,    17,    31,    32,
    33,   63,   64,   65,   127,  128,  129,  255,  256,   257,   511,   512,   513,   1000,
    1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097,  8191,  8192,  8193,  12289, 16383,
    16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537, 131071, 131073, 300000};

Test(sort, random_sizes_against_qsort) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("sort/random_sizes_against_qsort")};
  /* build both programs (past one tile, within one): the cache holds them */
  check_random(ctx, &r, D_RANDOM, 5000);
  check_random(ctx, &r, D_RANDOM, 3);
  for (int m = 0; m < 2; m++) {
    sort_serial_mode(ctx, serial_modes[m]);
    /* build both programs of the mode (past one tile, within one) */
    check_random(ctx, &r, D_RANDOM, 70000);
    check_random(ctx, &r, D_RANDOM, 3);
    tt_live base = tt_live_now();
    for (size_t i = 0; i < sizeof boundary_sizes / sizeof boundary_sizes[0]; i++)
      check_random(ctx, &r, D_RANDOM, boundary_sizes[i]);
    tt_expect_no_leak(base);
  }
  sort_serial_mode(ctx, "auto");
  tabcl_context_destroy(ctx);
}

Test(sort, distributions) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("sort/distributions")};
  static const size_t sizes[] = {2, 3, 100, 257, 4097, 20000};
  for (int d = 0; d < D_COUNT; d++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_random(ctx, &r, d, sizes[i]);
  tabcl_context_destroy(ctx);
}

/* The padding must not be confused with real largest pairs: every key is
   2^64-1 and the values (including 2^32-1) alone decide the order. */
Test(sort, max_key_and_value_everywhere) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("sort/max_key_and_value_everywhere")};
  static const size_t sizes[] = {3, 5, 1000, 4097, 9000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    uint64_t *k = malloc(n * 8);
    uint32_t *v = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
      k[i] = UINT64_MAX;
      v[i] = tt_below(&r, 4) == 0 ? UINT32_MAX : (uint32_t)tt_next(&r);
    }
    check_sort(ctx, k, v, n, "all max keys");
    free(k);
    free(v);
  }
  tabcl_context_destroy(ctx);
}

/* A forced tiny tile sends small inputs through every register pass
   (2 to 32 pairs per work-item, mirror and plain) and the local
   finish; a tiny launch cap splits every launch. */
Test(sort, tiny_tiles_take_global_passes) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("sort/tiny_tiles_take_global_passes")};
  static const unsigned tiles[] = {2, 4, 8, 64};
  static const size_t sizes[] = {2, 3, 5, 9, 17, 33, 100, 257, 1000, 2049};
  for (int m = 0; m < 2; m++) {
    /* the CPU plan's runs are at most the forced tile: as many merges */
    sort_serial_mode(ctx, serial_modes[m]);
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
      sort_limits(ctx, tiles[t], 0);
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_random(ctx, &r, (enum dist)(i % D_COUNT), sizes[i]);
    }
    sort_limits(ctx, 4, 3);
    for (size_t i = 0; i < 7; i++) check_random(ctx, &r, (enum dist)(i % D_COUNT), sizes[i]);
  }
  sort_limits(ctx, 0, 0);
  sort_serial_mode(ctx, "auto");
  tabcl_context_destroy(ctx);
}

Test(sort, events_wait_and_signal) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("sort/events_wait_and_signal")};
  for (size_t n = 0; n < 3000; n = n * 3 + 1) {
    uint64_t *k = malloc((n + 1) * 8), *gk = malloc((n + 1) * 8);
    uint32_t *v = malloc((n + 1) * 4);
    fill(&r, D_RANDOM, k, v, n);
    cl_mem dk, dv;
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 8, NULL, &dk, "keys"));
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &dv, "values"));
    cl_int err;
    cl_event user = clCreateUserEvent(ctx->cl, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event w = NULL, done = NULL;
    /* (the blocking write first: the queue is in order) */
    if (n) {
      tt_assert_ok(tabcl__write(ctx, dv, 0, n * 4, v));
      cr_assert_eq(clEnqueueWriteBuffer(ctx->queue, dk, CL_FALSE, 0, n * 8, k, 1, &user, &w),
                   CL_SUCCESS);
    }
    cl_event waits[2] = {user, w};
    tt_assert_ok(tabcl__sort_pairs(ctx, dk, dv, n, w ? 2 : 1, waits, &done));
    cr_assert_not_null(done, "n=%zu: an event is returned", n);
    cl_int st = 0;
    clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    cr_expect_neq(st, CL_COMPLETE, "n=%zu: the sort waits for the user event", n);
    clSetUserEventStatus(user, CL_COMPLETE);
    cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    tt_assert_ok(tabcl__read(ctx, dk, 0, n * 8, gk));
    for (size_t i = 1; i < n; i++) cr_assert_leq(gk[i - 1], gk[i], "n=%zu at %zu", n, i);
    clReleaseEvent(done);
    if (w) clReleaseEvent(w);
    clReleaseEvent(user);
    tabcl__buffer_release(dk);
    tabcl__buffer_release(dv);
    free(k);
    free(gk);
    free(v);
  }
  tabcl_context_destroy(ctx);
}

/* A count of 0 with a list that is not NULL waits for nothing: OpenCL
   itself refuses that pair (CL_INVALID_EVENT_WAIT_LIST), so the sort must
   not pass it on, neither to its launches nor to the marker of a sort with
   nothing to move. */
Test(sort, empty_wait_list_given_as_a_pointer) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("sort/empty_wait_list_given_as_a_pointer")};
  for (size_t n = 1; n <= 3000; n *= 3000) {
    uint64_t *k = malloc(n * 8), *gk = malloc(n * 8);
    uint32_t *v = malloc(n * 4);
    fill(&r, D_RANDOM, k, v, n);
    cl_mem dk, dv;
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 8, k,
                                      &dk, "keys"));
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, v,
                                      &dv, "values"));
    cl_event none[1] = {NULL}, done = NULL;
    tt_assert_ok(tabcl__sort_pairs(ctx, dk, dv, n, 0, none, &done));
    cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    tt_assert_ok(tabcl__read(ctx, dk, 0, n * 8, gk));
    for (size_t i = 1; i < n; i++) cr_assert_leq(gk[i - 1], gk[i], "n=%zu at %zu", n, i);
    clReleaseEvent(done);
    tabcl__buffer_release(dk);
    tabcl__buffer_release(dv);
    free(k);
    free(gk);
    free(v);
  }
  tabcl_context_destroy(ctx);
}

Test(sort, bad_arguments) {
  tabcl_context *ctx = tt_context();
  tt_live base = tt_live_now();
  cl_mem dk, dv;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, 100 * 8, NULL, &dk, "keys"));
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, 100 * 4, NULL, &dv, "values"));
  cl_event ev = (cl_event)&ev;
  cr_expect_eq(tabcl__sort_pairs(NULL, dk, dv, 10, 0, NULL, &ev), TABCL_INVALID_ARGUMENT);
  cr_expect_null(ev, "the event is cleared on failure");
  cr_expect_eq(tabcl__sort_pairs(ctx, NULL, dv, 10, 0, NULL, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl__sort_pairs(ctx, dk, NULL, 10, 0, NULL, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl__sort_pairs(ctx, dk, dv, 10, 2, NULL, NULL), TABCL_INVALID_ARGUMENT);
  /* buffers shorter than n pairs are refused before anything runs */
  cr_expect_eq(tabcl__sort_pairs(ctx, dk, dv, 101, 0, NULL, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect(strstr(tabcl_last_error(), "keys") != NULL, "%s", tabcl_last_error());
  cr_expect_eq(tabcl__sort_pairs(ctx, dk, dk, 201, 0, NULL, NULL), TABCL_INVALID_ARGUMENT);
  /* n = 0 needs no buffers at all */
  tt_assert_ok(tabcl__sort_pairs(ctx, NULL, NULL, 0, 0, NULL, NULL));
  tt_assert_ok(tabcl__sort_pairs(ctx, NULL, NULL, 0, 0, NULL, &ev));
  cr_assert_not_null(ev);
  cr_expect_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
  clReleaseEvent(ev);
  tabcl__buffer_release(dk);
  tabcl__buffer_release(dv);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

/* Sizes never reach the build options: after the first sort, sorts of
   other sizes (within one tile or past it) build nothing. */
Test(sort, compiles_once) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("sort/compiles_once")};
  /* a CPU plan's long runs first measure the device's loop limit with a
     probe program of their own: that one is built here, outside the count */
  tabcl__sort_plan lp;
  tt_assert_ok(tabcl__sort_plan_for(ctx, 70000, &lp));
  tabcl_stats z, y;
  tabcl_context_stats(ctx, &z);
  check_random(ctx, &r, D_RANDOM, 2);
  check_random(ctx, &r, D_RANDOM, 70000);
  tabcl_context_stats(ctx, &y);
  cr_expect_eq(y.programs_built + y.programs_from_cache, z.programs_built + z.programs_from_cache + 1,
               "a sort within one tile, then one past it: one program");
  tabcl_stats a, b;
  tabcl_context_stats(ctx, &a);
  static const size_t sizes[] = {2, 3, 1000, 5000, 100000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    check_random(ctx, &r, D_RANDOM, sizes[i]);
  tabcl_context_stats(ctx, &b);
  cr_expect_eq(b.programs_built + b.programs_from_cache, a.programs_built + a.programs_from_cache,
               "programs were built for new sizes");
  cr_expect_gt(b.kernel_launches, a.kernel_launches);
  tabcl_context_destroy(ctx);
}

Test(sort, selfcheck) {
  tabcl_context *ctx = tt_context();
  tt_assert_ok(tabcl__selfcheck_sort(ctx));
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
/* Fail the 1st, 2nd, ... host allocation or OpenCL call of a sort (with a
   tiny tile, so every kernel and split launch is reached) until one run
   sees no failure: each fired run returns an error, leaks nothing, and the
   context still sorts correctly afterwards. */
static void sweep_sort(int which) { /* which: 1 = OpenCL calls */
  tabcl_options o = {0};
  o.cache_dir = "";
  tabcl_context *ctx = tt_context_with(&o);
  tt_rng r = {tt_seed(which ? "sort/injected_cl_failures" : "sort/injected_alloc_failures")};
  const size_t n = 300;
  uint64_t k[300];
  uint32_t v[300];
  fill(&r, D_RANDOM, k, v, n);
  cl_mem dk, dv;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 8, NULL, &dk, "keys"));
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &dv, "values"));
  sort_limits(ctx, 8, 16);
  /* built once first: the context's program cache is not a leak */
  tt_assert_ok(tabcl__sort_pairs(ctx, dk, dv, n, 0, NULL, NULL));
  for (long at = 1; at < 100000; at++) {
    tt_assert_ok(tabcl__write(ctx, dk, 0, n * 8, k));
    tt_assert_ok(tabcl__write(ctx, dv, 0, n * 4, v));
    tt_live base = tt_live_now();
    tabcl__fault_set(which == 0 ? at : 0, which == 1 ? at : 0);
    cl_event ev = NULL;
    tabcl_status s = tabcl__sort_pairs(ctx, dk, dv, n, 0, NULL, &ev);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    tt_assert_ok(tabcl__finish(ctx));
    if (ev) clReleaseEvent(ev);
    tt_expect_no_leak(base);
    if (fired) {
      cr_assert_neq(s, TABCL_OK, "%s failure %ld was swallowed", which ? "OpenCL" : "alloc", at);
      cr_expect_null(ev, "no event after a failure");
      cr_expect_neq(strlen(tabcl_last_error()), 0);
      continue;
    }
    tt_assert_ok(s);
    cr_log_info("%s sweep: %ld points", which ? "OpenCL" : "alloc", at - 1);
    break;
  }
  /* still usable: a clean sort after the sweep is right */
  check_sort(ctx, k, v, n, "after sweep");
  sort_limits(ctx, 0, 0);
  tabcl__buffer_release(dk);
  tabcl__buffer_release(dv);
  tabcl_context_destroy(ctx);
}
/* The sort itself allocates only while building its program, so this
   sweep takes a fresh context (programs from the disk cache) each time and
   checks for leaks after destroying it. */
Test(sort, injected_alloc_failures_with_cold_context) {
  tt_rng r = {tt_seed("sort/injected_alloc_failures_with_cold_context")};
  const size_t n = 1000;
  uint64_t k[1000], gk[1000];
  uint32_t v[1000];
  fill(&r, D_RANDOM, k, v, n);
  long at = 1;
  for (; at < 10000; at++) {
    tt_live base = tt_live_now();
    tabcl_context *ctx = tt_context();
    cl_mem dk, dv;
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 8, NULL, &dk, "keys"));
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &dv, "values"));
    tt_assert_ok(tabcl__write(ctx, dk, 0, n * 8, k));
    tt_assert_ok(tabcl__write(ctx, dv, 0, n * 4, v));
    tabcl__fault_set(at, 0);
    tabcl_status s = tabcl__sort_pairs(ctx, dk, dv, n, 0, NULL, NULL);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (!fired) {
      tt_assert_ok(s);
      tt_assert_ok(tabcl__read(ctx, dk, 0, n * 8, gk));
      for (size_t i = 1; i < n; i++) cr_assert_leq(gk[i - 1], gk[i]);
    } else {
      cr_expect_neq(s, TABCL_OK, "alloc failure %ld was swallowed", at);
    }
    tabcl__buffer_release(dk);
    tabcl__buffer_release(dv);
    tabcl_context_destroy(ctx);
    tt_expect_no_leak(base);
    if (!fired) break;
  }
  cr_expect_gt(at, 1, "the sort's program build allocates");
  cr_log_info("alloc sweep: %ld points", at - 1);
}
Test(sort, injected_cl_failures) { sweep_sort(1); }
#endif

/* Tiny shapes for oclgrind: the full local sort, the local finish and every
   register pass (mirror and plain), with partial tiles and split launches. */

/* Oclgrind 21.10 reuses the ids of released buffers but keeps the shadow
   memory of an id's first buffer, so bytes past that first size read as
   uninitialised forever (context creation releases small buffers). Taking
   many ids with large buffers up front keeps every reused id's shadow large
   enough for the shapes below. */
static void oclgrind_reserve_buffer_ids(tabcl_context *ctx) {
  enum { IDS = 256 };
  static cl_mem m[IDS];
  for (int i = 0; i < IDS; i++) {
    cl_int err;
    m[i] = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, 1 << 14, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
  }
  for (int i = 0; i < IDS; i++) clReleaseMemObject(m[i]);
}

Test(oclgrind_sort, tiny) {
  tabcl_context *ctx = tt_context();
  oclgrind_reserve_buffer_ids(ctx);
  tt_rng r = {tt_seed("oclgrind_sort/tiny")};
  static const size_t sizes[] = {3, 7, 37, 130};
  for (int m = 0; m < 2; m++) {
    /* the local tiles, then the CPU plan's runs (its merge sort and finish) */
    sort_serial_mode(ctx, serial_modes[m]);
    sort_limits(ctx, 4, 0);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      check_random(ctx, &r, (enum dist)(i * 2 % D_COUNT), sizes[i]);
    sort_limits(ctx, 2, 4);
    check_random(ctx, &r, D_FEW_KEYS, 21);
    /* tile 16: local rounds of 8 pairs in both the tile sort and the finish */
    sort_limits(ctx, 16, 0);
    check_random(ctx, &r, D_TOP_BIT, 70);
    /* tile 2 up to 512: plain passes of 4 to 32 pairs too */
    sort_limits(ctx, 2, 0);
    check_random(ctx, &r, D_RANDOM, 300);
    sort_limits(ctx, 0, 0);
    check_random(ctx, &r, D_MAX_KEY, 300);
  }
  sort_serial_mode(ctx, "auto");
  tabcl_context_destroy(ctx);
}
