/* The staging area below string uploads, forced on the CPU device: reads
 * through it (tabcl__download) and buffers made from host memory
 * (tabcl__buffer_create_from) equal plain transfers for every area size,
 * offset and length, and fail cleanly under injected failures. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "columns/strings.h"
#include "tabcl/tabcl_cl.h"
#include "tt.h"

static tabcl_context *context_staged(int on, size_t cap) {
  tabcl_context *ctx = tt_context();
  tt_staging(ctx, on, cap);
  if (on) cr_assert_eq(tabcl__upload_staged(ctx), on > 0);
  return ctx;
}

static const struct { int on; size_t cap; } configs[] = {
    {-1, 0}, {1, 0}, {1, 16}, {1, 40}, {1, 1000}, {1, 1 << 16}};
enum { NCONFIG = sizeof configs / sizeof configs[0] };

Test(upload, download_equals_read) {
  tt_rng r = {tt_seed("upload/download")};
  enum { N = 20000 };
  uint8_t *src = malloc(N), *got = malloc(N + 16);
  for (int i = 0; i < N; i++) src[i] = (uint8_t)tt_next(&r);
  static const size_t offsets[] = {0, 5, 13, 4096};
  static const size_t lengths[] = {0, 1, 7, 8, 100, 3001, 15000};
  for (int c = 0; c < NCONFIG; c++) {
    tabcl_context *ctx = context_staged(configs[c].on, configs[c].cap);
    tt_live base = tt_live_now();
    cl_mem m = NULL;
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, N, NULL, &m, "test"));
    tt_assert_ok(tabcl__write(ctx, m, 0, N, src));
    for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++)
      for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
        memset(got, 0xA5, N + 16);
        tt_assert_ok(tabcl__download(ctx, m, offsets[o], lengths[l], got));
        cr_assert(memcmp(got, src + offsets[o], lengths[l]) == 0, "config %d, offset %zu, %zu bytes",
                  c, offsets[o], lengths[l]);
        cr_assert_eq(got[lengths[l]], 0xA5, "nothing written past the end (config %d)", c);
      }
    tabcl__buffer_release(m);
    tt_expect_no_leak(base);
    tabcl_context_destroy(ctx);
  }
  free(src);
  free(got);
}

Test(upload, buffer_create_from_equals_copy_host_ptr) {
  tt_rng r = {tt_seed("upload/create_from")};
  enum { N = 5003 };
  uint8_t src[N], got[N];
  for (int i = 0; i < N; i++) src[i] = (uint8_t)tt_next(&r);
  for (int c = 0; c < NCONFIG; c++) {
    tabcl_context *ctx = context_staged(configs[c].on, configs[c].cap);
    tt_live base = tt_live_now();
    cl_mem m = NULL, empty = NULL;
    tt_assert_ok(tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, N, src, &m, "test"));
    tt_assert_ok(tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, 0, NULL, &empty, "empty"));
    cr_expect_not_null(empty);
    tt_assert_ok(tabcl__read(ctx, m, 0, N, got));
    cr_expect(memcmp(got, src, N) == 0, "config %d", c);
    tabcl__buffer_release(m);
    tabcl__buffer_release(empty);
    tt_expect_no_leak(base);
    tabcl_context_destroy(ctx);
  }
}

/* The rule: every online core up to 8, up to 16 for uploads of
   TABCL__WORKERS_LARGE bytes and more, where upload.threads is auto (GPUs);
   a device row that sets it (CPUs: 1) holds for every size. */
Test(upload, thread_rule_by_size) {
  tabcl_context *ctx = tt_context();
  const int cores = tabcl__online_cores();
  const int small = tabcl__workers_threads(ctx, TABCL__WORKERS_LARGE - 1);
  const int large = tabcl__workers_threads(ctx, TABCL__WORKERS_LARGE);
  const int64_t set = tabcl__tuned_rule(&ctx->tune, TABCL__TUNE_UPLOAD_THREADS, 0);
  if (set > 0) {
    cr_expect_eq(small, set);
    cr_expect_eq(large, set);
  } else {
    cr_expect_eq(small, cores < 8 ? cores : 8, "%d cores: %d threads", cores, small);
    cr_expect_eq(large, cores < 16 ? cores : 16, "%d cores: %d threads", cores, large);
  }
  cr_expect_eq(tabcl__workers_threads(ctx, 0), small);
  tabcl_context_destroy(ctx);
}

/* An upload filled by several host threads (upload.threads) has the bytes
   of one filled by one, mapped or staged, whole or in chunks, for sizes
   around the parts (TABCL__WORKERS_PART) and thread counts that do not
   divide them. */
Test(upload, filled_by_several_threads) {
  tt_rng r = {tt_seed("upload/filled_by_several_threads")};
  static const size_t sizes[] = {(256u << 10) + 8, (768u << 10) - 8, (1u << 20) + 8,
                                 (9u << 20) + 5};
  static const int threads[] = {1, 2, 3, 7};
  static const struct { int on; size_t cap; } ways[] = {{-1, 0}, {1, 0}, {1, 2u << 20}};
  const size_t most = sizes[3];
  uint8_t *src = malloc(most), *got = malloc(most);
  cr_assert(src && got);
  for (size_t i = 0; i < most; i++) src[i] = (uint8_t)tt_next(&r);
  for (size_t w = 0; w < sizeof ways / sizeof *ways; w++)
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
      tabcl_context *ctx = context_staged(ways[w].on, ways[w].cap);
      tt_tune(ctx, "upload.threads=%d", threads[t]);
      cr_assert_eq(tabcl__workers_threads(ctx, 0), threads[t]);
      cr_assert_eq(tabcl__workers_threads(ctx, TABCL__WORKERS_LARGE), threads[t],
                   "a set upload.threads holds for large uploads too");
      for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        cl_mem m = NULL;
        tt_assert_ok(tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, sizes[k], src, &m, "test"));
        memset(got, 0x5A, sizes[k]);
        tt_assert_ok(tabcl__read(ctx, m, 0, sizes[k], got));
        cr_assert(memcmp(got, src, sizes[k]) == 0, "way %zu, %d threads, %zu bytes", w,
                  threads[t], sizes[k]);
        tabcl__buffer_release(m);
      }
      tabcl_context_destroy(ctx);
    }
  free(src);
  free(got);
}

/* Several callers filling uploads on one context at once: one job has the
   worker pool, the others run on their callers alone; every buffer holds
   its own caller's bytes. */
typedef struct caller_job {
  tabcl_context *ctx;
  const uint8_t *src;
  size_t bytes;
  int bad;
} caller_job;

static void *caller_uploads(void *arg) {
  caller_job *j = arg;
  uint8_t *got = malloc(j->bytes);
  for (int round = 0; got && round < 6; round++) {
    cl_mem m = NULL;
    if (tabcl__buffer_create_from(j->ctx, CL_MEM_READ_ONLY, j->bytes, j->src, &m, "test") ||
        tabcl__read(j->ctx, m, 0, j->bytes, got) || memcmp(got, j->src, j->bytes))
      j->bad++;
    tabcl__buffer_release(m);
  }
  if (!got) j->bad++;
  free(got);
  return NULL;
}

Test(upload, fills_from_several_callers_at_once) {
  tt_rng r = {tt_seed("upload/fills_from_several_callers_at_once")};
  enum { CALLERS = 4 };
  tabcl_context *ctx = context_staged(1, 0);
  tt_tune(ctx, "upload.threads=3");
  caller_job job[CALLERS];
  pthread_t tid[CALLERS];
  for (int i = 0; i < CALLERS; i++) {
    const size_t bytes = ((size_t)(i + 1) << 20) + 8 * (size_t)i;
    uint8_t *src = malloc(bytes);
    cr_assert(src);
    for (size_t k = 0; k < bytes; k++) src[k] = (uint8_t)tt_next(&r);
    job[i] = (caller_job){ctx, src, bytes, 0};
  }
  for (int i = 0; i < CALLERS; i++)
    cr_assert_eq(pthread_create(&tid[i], NULL, caller_uploads, &job[i]), 0);
  for (int i = 0; i < CALLERS; i++) pthread_join(tid[i], NULL);
  for (int i = 0; i < CALLERS; i++) {
    cr_expect_eq(job[i].bad, 0, "caller %d: %d uploads wrong", i, job[i].bad);
    free((void *)job[i].src);
  }
  tabcl_context_destroy(ctx);
}

/* A job on the worker pool is cut into more parts than threads, each
   taken by whichever thread is free: while one thread is held in the first
   part, the other takes every other part (a thread slowed by its core does
   not hold back a whole half of the work). Every byte is filled once, parts
   on whole 64-byte lines. */
enum { PARTS_SEEN_MAX = 256 };
typedef struct parts_seen {
  pthread_mutex_t lock;
  pthread_cond_t done;
  size_t at[PARTS_SEEN_MAX], n[PARTS_SEEN_MAX];
  pthread_t by[PARTS_SEEN_MAX];
  size_t total, others_done;   /* the fill's bytes; those of finished parts but the first */
  int count, first_waited;
} parts_seen;

static void fill_seen(void *dst, size_t at, size_t n, const void *arg) {
  parts_seen *ps = (parts_seen *)(uintptr_t)arg;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)(d[i] + 1 + ((at + i) & 0x3f));
  pthread_mutex_lock(&ps->lock);
  int k = ps->count++;
  if (k < PARTS_SEEN_MAX) {
    ps->at[k] = at;
    ps->n[k] = n;
    ps->by[k] = pthread_self();
  }
  if (at == 0) {
    /* held until every other part is done, 10 s at most */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    int rc = 0;
    while (rc == 0 && ps->others_done < ps->total - n)
      rc = pthread_cond_timedwait(&ps->done, &ps->lock, &until);
    ps->first_waited = rc == 0;
  } else {
    ps->others_done += n;
    pthread_cond_broadcast(&ps->done);
  }
  pthread_mutex_unlock(&ps->lock);
}

Test(upload, parts_go_to_whoever_is_free) {
  tabcl_context *ctx = tt_context();
  const size_t least = 4096, n = 64 * least + 192;
  uint8_t *dst = calloc(n, 1);
  cr_assert(dst);
  parts_seen ps = {.total = n};
  pthread_mutex_init(&ps.lock, NULL);
  pthread_cond_init(&ps.done, NULL);
  memset(dst, 0, n);
  tabcl__workers_run(ctx, 2, least, fill_seen, dst, 0, n, &ps);
  cr_assert(ps.count > 2 && ps.count <= PARTS_SEEN_MAX, "%d parts for 2 threads", ps.count);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(dst[i], (uint8_t)(1 + (i & 0x3f)), "byte %zu filled %s", i,
                 dst[i] ? "wrongly or twice" : "never");
  int first = -1;
  for (int k = 0; k < ps.count; k++) {
    cr_expect_eq(ps.at[k] % 64, 0, "a part at %zu", ps.at[k]);
    cr_expect(ps.n[k] >= least || ps.at[k] + ps.n[k] == n, "a part of %zu bytes", ps.n[k]);
    if (ps.at[k] == 0) first = k;
  }
  cr_assert_geq(first, 0);
  cr_expect(ps.first_waited, "the other parts waited for the first one's thread");
  for (int k = 0; k < ps.count; k++)
    if (k != first)
      cr_expect(!pthread_equal(ps.by[k], ps.by[first]),
                "the part at %zu waited for the thread held in the first", ps.at[k]);
  pthread_cond_destroy(&ps.done);
  pthread_mutex_destroy(&ps.lock);
  free(dst);
  tabcl_context_destroy(ctx);
}

/* A job posted from inside a job, and a job on a pool another caller holds,
   run on their caller alone: every byte of both is done once, nothing
   waits for a pool that is busy. */
typedef struct nested_job {
  tabcl_context *ctx;
  uint8_t *inner;
  size_t inner_n;
  int runs;
} nested_job;

static void fill_inner(void *dst, size_t at, size_t n, const void *arg) {
  (void)arg;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)(d[i] + 1 + ((at + i) % 251));
}

static void fill_outer(void *dst, size_t at, size_t n, const void *arg) {
  nested_job *j = (nested_job *)(uintptr_t)arg;
  fill_inner(dst, at, n, NULL);
  if (at == 0) {
    tabcl__workers_run(j->ctx, 4, 4096, fill_inner, j->inner, 0, j->inner_n, NULL);
    j->runs++;
  }
}

Test(upload, job_inside_a_job_runs_on_its_caller) {
  tabcl_context *ctx = tt_context();
  const size_t n = 64 * 4096 + 100, inner_n = 16 * 4096 + 7;
  uint8_t *dst = calloc(n, 1), *inner = calloc(inner_n, 1);
  cr_assert(dst && inner);
  nested_job j = {ctx, inner, inner_n, 0};
  tabcl__workers_run(ctx, 4, 4096, fill_outer, dst, 0, n, &j);
  cr_assert_eq(j.runs, 1);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(dst[i], (uint8_t)(1 + i % 251), "outer byte %zu", i);
  for (size_t i = 0; i < inner_n; i++)
    cr_assert_eq(inner[i], (uint8_t)(1 + i % 251), "inner byte %zu", i);
  free(dst);
  free(inner);
  tabcl_context_destroy(ctx);
}

/* Uploads and downloads taking turns on one small area: each must wait
   for the other's transfers before it reuses a half. */
Test(upload, uploads_and_downloads_interleaved) {
  tabcl_context *ctx = context_staged(1, 48);
  tt_rng r = {tt_seed("upload/interleaved")};
  enum { N = 777, ROUNDS = 30 };
  uint8_t src[ROUNDS][N], got[N];
  cl_mem m[ROUNDS];
  for (int i = 0; i < ROUNDS; i++) {
    for (int k = 0; k < N; k++) src[i][k] = (uint8_t)tt_next(&r);
    tt_assert_ok(tabcl__buffer_create_from(ctx, CL_MEM_READ_WRITE, N, src[i], &m[i], "test"));
    if (i % 3 == 2) {
      int j = (int)tt_below(&r, (uint64_t)i + 1);
      tt_assert_ok(tabcl__download(ctx, m[j], 0, N, got));
      cr_expect(memcmp(got, src[j], N) == 0, "buffer %d read back in round %d", j, i);
    }
  }
  for (int i = 0; i < ROUNDS; i++) {
    tt_assert_ok(tabcl__download(ctx, m[i], 0, N, got));
    cr_expect(memcmp(got, src[i], N) == 0, "buffer %d", i);
    tabcl__buffer_release(m[i]);
  }
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
/* which: 0 host allocations, 1 OpenCL calls. fresh: every run starts
   without an area. Each fired failure: non-OK, nothing leaked, the output
   untouched (create_from) and the context still working. */
static void sweep(int which, int download, size_t cap, int fresh) {
  tabcl_context *ctx = context_staged(1, cap);
  enum { N = 300 };
  uint8_t src[N], got[N];
  for (int i = 0; i < N; i++) src[i] = (uint8_t)(i * 7 + 1);
  cl_mem m = NULL;
  tt_assert_ok(tabcl__buffer_create_from(ctx, CL_MEM_READ_WRITE, N, src, &m, "test"));
  long n = 1;
  for (; n < 1000; n++) {
    if (fresh) tt_staging(ctx, 1, cap);
    tt_live base = tt_live_now();
    cl_mem made = (cl_mem)&n;
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_status s = download ? tabcl__download(ctx, m, 3, N - 3, got)
                              : tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, N, src, &made, "t");
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (fired) {
      cr_expect_neq(s, TABCL_OK, "failure %ld was swallowed", n);
      if (!download) cr_expect_null(made, "no buffer after failure %ld", n);
      tt_expect_no_leak(base);
      continue;
    }
    tt_assert_ok(s);
    if (!download) {
      tt_assert_ok(tabcl__read(ctx, made, 0, N, got));
      tabcl__buffer_release(made);
      cr_expect(memcmp(got, src, N) == 0);
    } else {
      cr_expect(memcmp(got, src + 3, N - 3) == 0);
    }
    tt_expect_no_leak(base);
    break;
  }
  cr_log_info("staging sweep (%s, cap %zu): %ld points", download ? "download" : "create_from",
              cap, n - 1);
  if (which == 1) cr_expect_gt(n, 1, "something was swept");
  memset(got, 0, N);
  tt_assert_ok(tabcl__download(ctx, m, 0, N, got));
  cr_expect(memcmp(got, src, N) == 0, "usable after the sweep");
  tabcl__buffer_release(m);
  tabcl_context_destroy(ctx);
}
Test(upload_faults, injected_cl_failures) {
  for (int fresh = 0; fresh < 2; fresh++)
    for (int download = 0; download < 2; download++) {
      sweep(1, download, 0, fresh);
      sweep(1, download, 64, fresh);
    }
}
Test(upload_faults, injected_alloc_failures) {
  for (int download = 0; download < 2; download++) sweep(0, download, 64, 1);
}
#endif

/* Buffers given back together, each larger than half the pool's cap:
   making room for the second drops the first, which this same return had
   filled. Before the fix that drop released the return's only reference
   to its marker event, and the next slot retained an event the runtime
   could already have freed: tabcl.sdpa of 2,000 x 48, 54 then 64 queries
   (8 heads of 64, f32) on PoCL crashed in clRetainEvent 3 times of 3, and
   not after. Here the marker is usually still pending at the drop, so
   this test did not crash before the fix; it holds what the return must
   leave: one buffer kept with a live marker, handed out again once the
   queue has run. */
Test(upload, pool_return_of_buffers_over_half_the_cap) {
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "upload.pool=%d", 1 << 20);
  const long pooled = tabcl__pool_live();
  cl_mem m[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++)
    tt_assert_ok(tabcl__pool_get(ctx, CL_MEM_READ_ONLY, 600 << 10, &m[i], "test"));
  tabcl__pool_put_n(ctx, 3, m, 0, NULL);
  cr_expect_eq(tabcl__pool_live(), pooled + 1, "one buffer of 600 KiB fits a cap of 1 MiB");
  int kept = 0;
  for (int i = 0; i < TABCL__POOL_SLOTS; i++) {
    const tabcl__pool_slot *sl = &ctx->pool.slot[i];
    if (!sl->mem) continue;
    kept++;
    cr_expect_eq(sl->mem, m[2], "the last buffer given back is the one kept");
    cl_uint refs = 0;
    cr_assert_eq(clGetEventInfo(sl->done, CL_EVENT_REFERENCE_COUNT, sizeof refs, &refs, NULL),
                 CL_SUCCESS);
    cr_expect_geq(refs, 1);
  }
  cr_expect_eq(kept, 1);
  tt_assert_ok(tabcl__finish(ctx));
  cl_mem again = NULL;
  tt_assert_ok(tabcl__pool_get(ctx, CL_MEM_READ_ONLY, 600 << 10, &again, "test"));
  cr_expect_eq(again, m[2], "handed out again once its marker is done");
  tabcl__buffer_release(again);
  tabcl_context_destroy(ctx);
  cr_expect_eq(tabcl__pool_live(), pooled);
}

/* The pool of upload buffers (runtime/buffer.c): a buffer given back is
   handed out again only after the commands before its return are done,
   however the queue stands; pooled buffers are not leaks, the cap holds,
   and the context's end gives them all back. The queue is held behind a
   user event to stand for a kernel still reading the buffer. */
Test(upload, pool_reuses_only_completed_buffers) {
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "upload.pool=%d", 64 << 20);
  const long pooled = tabcl__pool_live();
  tt_live base = tt_live_now();
  int64_t off[] = {0, 5, 5, 20};
  const uint8_t data[] = "abcdefghijklmnopqrst";
  tabcl_strings_view v = {3, off, data, NULL};
  tabcl__dev_strings a, b;
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &a));
  const cl_mem first = a.data;
  tabcl__strings_release(&a);
  cr_expect_eq(tabcl__pool_live(), pooled + 2, "the bytes and the offsets are kept");
  tt_expect_no_leak(base);
  /* once the queue has run, the same buffer comes back, refilled */
  tt_assert_ok(tabcl__finish(ctx));
  const uint8_t other[] = "ABCDEFGHIJKLMNOPQRST";
  tabcl_strings_view w = {3, off, other, NULL};
  tt_assert_ok(tabcl__strings_upload(ctx, &w, &b));
  cr_expect_eq(b.data, first, "a completed buffer is reused");
  uint8_t got[20];
  tt_assert_ok(tabcl__read(ctx, b.data, 0, sizeof got, got));
  cr_expect(memcmp(got, other, sizeof got) == 0, "the reused buffer holds the new labels");
  /* the queue held up: the buffer returned behind it is not handed out */
  cl_int err;
  cl_event hold = clCreateUserEvent(tabcl_context_cl_context(ctx), &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_event held = NULL;
  cr_assert_eq(clEnqueueMarkerWithWaitList(tabcl_context_cl_queue(ctx), 1, &hold, &held),
               CL_SUCCESS);
  const cl_mem second = b.data;
  tabcl__strings_release(&b);
  cl_mem m = NULL;
  tt_assert_ok(tabcl__pool_get(ctx, CL_MEM_READ_ONLY, 32, &m, "test"));
  cr_expect_neq(m, second, "a buffer whose commands may still run is not handed out");
  tabcl__buffer_release(m);
  cr_assert_eq(clSetUserEventStatus(hold, CL_COMPLETE), CL_SUCCESS);
  tt_assert_ok(tabcl__finish(ctx));
  tt_assert_ok(tabcl__pool_get(ctx, CL_MEM_READ_ONLY, 32, &m, "test"));
  cr_expect_eq(m, second, "handed out once the commands before its return are done");
  /* other flags, or a size more than twice smaller, never take it */
  cl_mem n = NULL;
  tt_assert_ok(tabcl__pool_get(ctx, CL_MEM_READ_WRITE, 32, &n, "test"));
  tabcl__pool_put(ctx, m);
  tt_assert_ok(tabcl__finish(ctx));
  cl_mem tiny = NULL;
  tt_assert_ok(tabcl__pool_get(ctx, CL_MEM_READ_ONLY, 8, &tiny, "test"));
  cr_expect_neq(tiny, second, "a small call does not pin a larger buffer");
  tabcl__buffer_release(tiny);
  tabcl__buffer_release(n);
  clReleaseEvent(held);
  clReleaseEvent(hold);
  tt_expect_no_leak(base);
  /* a cap of 0: nothing is kept */
  tt_tune(ctx, "upload.pool=0");
  cr_expect_eq(tabcl__pool_live(), pooled, "a new tuning gives the pool back");
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &a));
  tabcl__strings_release(&a);
  cr_expect_eq(tabcl__pool_live(), pooled);
  tt_tune(ctx, "upload.pool=%d", 64 << 20);
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &a));
  tabcl__strings_release(&a);
  cr_expect_gt(tabcl__pool_live(), pooled);
  tabcl_context_destroy(ctx);
  cr_expect_eq(tabcl__pool_live(), pooled, "the context's end gives every pooled buffer back");
}
