/* A plain program, not a Criterion test, so that it runs under
 * ThreadSanitizer: Criterion's forking arena does not start there
 * ("Could not initialize inheritable arena"). tools/ci/run-tests.sh builds
 * it with -fsanitize=thread and fails on any report; ctest runs it in the
 * other builds as one more concurrency check.
 *
 * What it shares between threads, through the public API only (the one
 * internal call, tabcl__f32_to_f16, makes the f16 data before any thread):
 *  - one context and one index, used by 8 threads at once for lookups,
 *    aligns, attention (f32 and f16), fits, saves and loads, self-checks
 *    and a failing call each (tabcl_last_error is per thread);
 *  - then host lookups and aligns of 200,000 rows, and loads of a file of
 *    200,000 labels (read by the worker pool), from 8 threads on a context whose
 *    uploads are staged and filled by 3 threads (its worker pool);
 *  - then 8 fresh contexts on one fresh disk-cache folder, first used all
 *    at once;
 *  - then two contexts on one application's own OpenCL context and queue
 *    (tabcl_context_create_cl), 4 threads on each: lookups, aligns and
 *    attention.
 * Every result must equal the same call's result from one thread. The
 * data are fixed, not random: the point is the interleaving. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/half.h"
#include "tabcl/tabcl_cl.h"

#define NT 8
#define ROUNDS 4
#define NVOCAB 300
#define NQUERY 600
#define NALIGN 200

static char folder[256];
static tabcl_context *shared_ctx;
static tabcl_category_index *shared_idx;
static atomic_int problems;

static int64_t voff[NVOCAB + 1], qoff[NQUERY + 1];
static uint8_t vdata[NVOCAB * 16], qdata[NQUERY * 16];
static int32_t align_in[NALIGN];
static int32_t want_lookup[NQUERY], want_align[NALIGN];

/* Attention: [B=2, L, H=2, D=32], f32 and f16 (the f32 values rounded by
   the library's host converter), no mask, causal. */
static tabcl_sdpa_desc d32 = {2, 20, 30, 2, 2, 32, TABCL_F32, 0, 1, TABCL_MASK_NONE, 0, 0, 0};
static tabcl_sdpa_desc d16 = {2, 20, 30, 2, 2, 32, TABCL_F16, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
#define QN (2 * 20 * 2 * 32)
#define KN (2 * 30 * 2 * 32)
static float q32[QN], k32[KN], v32[KN], want32[QN];
static uint16_t q16[QN], k16[KN], v16[KN], want16[QN];

static void problem(const char *what, long thread) {
  if (atomic_fetch_add(&problems, 1) < 20)
    fprintf(stderr, "race_check: thread %ld: %s: %s\n", thread, what, tabcl_last_error());
}

static void make_data(void) {
  int64_t o = 0;
  for (int i = 0; i < NVOCAB; i++) {
    voff[i] = o;
    o += sprintf((char *)vdata + o, "v%d", i * 7);
  }
  voff[NVOCAB] = o;
  o = 0;
  for (int i = 0; i < NQUERY; i++) {   /* about a third of them in the vocabulary */
    qoff[i] = o;
    o += sprintf((char *)qdata + o, "v%d", i * 3);
  }
  qoff[NQUERY] = o;
  for (int i = 0; i < NALIGN; i++) align_in[i] = (i * 37) % (NQUERY + 1) - 1;
  for (int i = 0; i < QN; i++) q32[i] = sinf((float)i), q16[i] = tabcl__f32_to_f16(q32[i]);
  for (int i = 0; i < KN; i++) {
    k32[i] = cosf((float)i), k16[i] = tabcl__f32_to_f16(k32[i]);
    v32[i] = sinf(0.3f * (float)i), v16[i] = tabcl__f32_to_f16(v32[i]);
  }
}

static tabcl_strings_view vocab(void) { return (tabcl_strings_view){NVOCAB, voff, vdata, NULL}; }
static tabcl_strings_view queries(void) { return (tabcl_strings_view){NQUERY, qoff, qdata, NULL}; }

static tabcl_status lookup(tabcl_category_index *idx, int32_t *codes) {
  tabcl_strings_view q = queries();
  int32_t *out[1] = {codes};
  return tabcl_category_index_lookup(idx, 1, &q, out);
}

static tabcl_status align(tabcl_category_index *idx, int32_t *codes) {
  tabcl_dictionary_view dv = {queries(), NALIGN, align_in};
  int32_t *out[1] = {codes};
  return tabcl_category_index_align(idx, 1, &dv, out);
}

static void *shared_work(void *arg) {
  long id = (long)arg;
  int32_t codes[NQUERY];
  float out32[QN];
  uint16_t out16[QN];
  for (int r = 0; r < ROUNDS; r++) {
    /* neighbours start on different calls */
    for (int j = 0; j < 4; j++) {
      switch ((j + id + r) % 4) {
        case 0:
          if (lookup(shared_idx, codes) || memcmp(codes, want_lookup, sizeof want_lookup))
            problem("lookup", id);
          break;
        case 1:
          if (align(shared_idx, codes) || memcmp(codes, want_align, sizeof want_align))
            problem("align", id);
          break;
        case 2:
          if (tabcl_sdpa_host(shared_ctx, &d32, q32, k32, v32, NULL, out32) ||
              memcmp(out32, want32, sizeof want32))
            problem("attention f32", id);
          break;
        default:
          if (tabcl_sdpa_host(shared_ctx, &d16, q16, k16, v16, NULL, out16) ||
              memcmp(out16, want16, sizeof want16))
            problem("attention f16", id);
      }
    }
  }
  /* a failing call: its message is this thread's own */
  tabcl_strings_view q = queries();
  int32_t *out[1] = {codes};
  char expect[64];
  snprintf(expect, sizeof expect, "ncols is %ld;", 10 + id);
  if (tabcl_category_index_lookup(shared_idx, (int)(10 + id), &q, out) != TABCL_INVALID_ARGUMENT ||
      !strstr(tabcl_last_error(), expect))
    problem("the thread's last error", id);

  tabcl_strings_view v = vocab();
  tabcl_category_index *mine = NULL, *back = NULL;
  char path[300];
  snprintf(path, sizeof path, "%s/t%ld.idx", folder, id);
  if (tabcl_category_index_fit(shared_ctx, 1, &v, TABCL_CODES_BY_VALUE, &mine) ||
      tabcl_category_index_save(id % 2 ? shared_idx : mine, path) ||
      tabcl_category_index_load(shared_ctx, path, &back) || lookup(back, codes) ||
      memcmp(codes, want_lookup, sizeof want_lookup))
    problem("fit, save, load", id);
  tabcl_category_index_destroy(mine);
  tabcl_category_index_destroy(back);
  remove(path);
  for (int i = 0; i < tabcl_selfcheck_count(); i++) {
    tabcl_status s = tabcl_selfcheck_run(shared_ctx, i);
    if (s != TABCL_OK && s != TABCL_UNSUPPORTED) problem(tabcl_selfcheck_name(i), id);
  }
  return NULL;
}

static void *first_use(void *arg) {
  tabcl_context *ctx = arg;
  tabcl_strings_view v = vocab();
  tabcl_category_index *idx = NULL;
  int32_t codes[NQUERY];
  if (tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_VALUE, &idx) || lookup(idx, codes) ||
      memcmp(codes, want_lookup, sizeof want_lookup))
    problem("first use of a fresh context", -1);
  tabcl_category_index_destroy(idx);
  return NULL;
}

/* A fresh index's first host lookups, from every thread at once: on a CPU
   device they run on the calling threads (lookup.host_rows), and the first
   of them maps the index's tables (catindex_host.c, under the index's lock). */
static tabcl_category_index *unmapped_idx;
static void *first_host_lookup(void *arg) {
  long id = (long)arg;
  int32_t codes[NQUERY];
  if (lookup(unmapped_idx, codes) || memcmp(codes, want_lookup, sizeof want_lookup))
    problem("a fresh index's first lookups", id);
  return NULL;
}

/* The folders made here hold only files. */
/* Host lookups of many rows on one context whose uploads are staged and
   filled by 3 threads: the fills of several callers meet on the context's
   worker pool (one job at a time; the others run on their callers). */
#define NBIG 200000
static tabcl_context *staged_ctx;
static tabcl_category_index *staged_idx;
static int64_t boff[NBIG + 1];
static uint8_t bdata[NBIG * 16];
static char big_path[300];
static int64_t want_big_codes;
static int32_t big_align_in[NBIG];   /* the rows' query numbers: codes of the queries' dictionary */

static void *staged_work(void *arg) {
  long id = (long)arg;
  int32_t *codes = malloc(NBIG * sizeof *codes);
  const tabcl_strings_view q = {NBIG, boff, bdata, NULL};
  for (int r = 0; codes && r < ROUNDS; r++) {
    int32_t *out = codes;
    if (tabcl_category_index_lookup(staged_idx, 1, &q, &out)) {
      problem("staged lookup", id);
      continue;
    }
    for (int i = 0; i < NBIG; i++)
      if (codes[i] != want_lookup[i % NQUERY]) {
        problem("staged lookup codes", id);
        break;
      }
    /* an align of as many rows: its range check and gather on the threads */
    const tabcl_dictionary_view dv = {queries(), NBIG, big_align_in};
    if (tabcl_category_index_align(staged_idx, 1, &dv, &out)) {
      problem("staged align", id);
    } else {
      for (int i = 0; i < NBIG; i++)
        if (codes[i] != want_lookup[i % NQUERY]) {
          problem("staged align codes", id);
          break;
        }
    }
    tabcl_category_index *loaded = NULL;
    if (tabcl_category_index_load(staged_ctx, big_path, &loaded)) problem("staged load", id);
    else if (tabcl_category_index_codes(loaded, 0) != want_big_codes)
      problem("staged load's codes", id);
    tabcl_category_index_destroy(loaded);
  }
  if (!codes) problem("out of memory", id);
  free(codes);
  return NULL;
}

static void remove_flat(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[600];
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    remove(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

static tabcl_context *app_ctx[2];
static tabcl_category_index *app_idx[2];
static void *app_work(void *arg) {
  long id = (long)arg;
  int32_t codes[NQUERY];
  float out32[QN];
  for (int r = 0; r < ROUNDS; r++) {
    if (lookup(app_idx[id % 2], codes) || memcmp(codes, want_lookup, sizeof want_lookup))
      problem("lookup on an application's queue", id);
    if (align(app_idx[id % 2], codes) || memcmp(codes, want_align, sizeof want_align))
      problem("align on an application's queue", id);
    if (tabcl_sdpa_host(app_ctx[id % 2], &d32, q32, k32, v32, NULL, out32) ||
        memcmp(out32, want32, sizeof want32))
      problem("attention on an application's queue", id);
  }
  return NULL;
}

/* The application's context and queue on the device a default context
   takes; both tabcl contexts on them, an index each. */
static int app_open(cl_context *cl, cl_command_queue *q) {
  tabcl_context *t = NULL;
  if (tabcl_context_create(NULL, &t)) return 0;
  cl_device_id dev = tabcl_context_cl_device(t);
  tabcl_context_destroy(t);
  cl_platform_id p = NULL;
  if (clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof p, &p, NULL) != CL_SUCCESS) return 0;
  cl_context_properties cp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)p, 0};
  cl_int err = CL_SUCCESS;
  *cl = clCreateContext(cp, 1, &dev, NULL, NULL, &err);
  if (err != CL_SUCCESS) return 0;
  *q = clCreateCommandQueue(*cl, dev, 0, &err);
  if (err != CL_SUCCESS) return 0;
  tabcl_strings_view v = vocab();
  for (int i = 0; i < 2; i++)
    if (tabcl_context_create_cl(*cl, dev, *q, NULL, &app_ctx[i]) ||
        tabcl_category_index_fit(app_ctx[i], 1, &v, TABCL_CODES_BY_VALUE, &app_idx[i]))
      return 0;
  return 1;
}

static int run_threads(void *(*fn)(void *), void **args) {
  pthread_t th[NT];
  int started = 0;
  for (; started < NT; started++)
    if (pthread_create(&th[started], NULL, fn, args[started]) != 0) break;
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  return started == NT;
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(folder, sizeof folder, "%s/tabcl-race-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(folder)) {
    perror("race_check: mkdtemp");
    return 1;
  }
  make_data();
  tabcl_strings_view v = vocab();
  if (tabcl_context_create(NULL, &shared_ctx) ||
      tabcl_category_index_fit(shared_ctx, 1, &v, TABCL_CODES_BY_VALUE, &shared_idx) ||
      lookup(shared_idx, want_lookup) || align(shared_idx, want_align) ||
      tabcl_sdpa_host(shared_ctx, &d32, q32, k32, v32, NULL, want32) ||
      tabcl_sdpa_host(shared_ctx, &d16, q16, k16, v16, NULL, want16)) {
    fprintf(stderr, "race_check: one thread: %s\n", tabcl_last_error());
    return 1;
  }
  void *ids[NT];
  for (long i = 0; i < NT; i++) ids[i] = (void *)i;
  int ok = run_threads(shared_work, ids);
  if (tabcl_category_index_fit(shared_ctx, 1, &v, TABCL_CODES_BY_VALUE, &unmapped_idx))
    problem("the fresh index", -1);
  else
    ok = run_threads(first_host_lookup, ids) && ok;
  tabcl_category_index_destroy(unmapped_idx);
  tabcl_category_index_destroy(shared_idx);
  tabcl_context_destroy(shared_ctx);

  /* the queries of the first part, over and over */
  for (int i = 0; i < NBIG; i++) big_align_in[i] = i % NQUERY;
  for (int i = 0; i < NBIG; i++) {
    const int k = i % NQUERY;
    const int64_t len = qoff[k + 1] - qoff[k];
    memcpy(bdata + boff[i], qdata + qoff[k], (size_t)len);
    boff[i + 1] = boff[i] + len;
  }
  tabcl_options so = {0};
  so.tune = "upload.staging=1;upload.threads=3";
  const tabcl_strings_view big = {NBIG, boff, bdata, NULL};
  tabcl_category_index *big_idx = NULL;
  snprintf(big_path, sizeof big_path, "%s/big.idx", folder);
  if (tabcl_context_create(&so, &staged_ctx) ||
      tabcl_category_index_fit(staged_ctx, 1, &v, TABCL_CODES_BY_VALUE, &staged_idx) ||
      tabcl_category_index_fit(staged_ctx, 1, &big, TABCL_CODES_BY_POSITION, &big_idx) ||
      tabcl_category_index_save(big_idx, big_path)) {
    problem("the staged context", -1);
  } else {
    want_big_codes = tabcl_category_index_codes(big_idx, 0);
    ok = run_threads(staged_work, ids) && ok;
  }
  tabcl_category_index_destroy(big_idx);
  tabcl_category_index_destroy(staged_idx);
  tabcl_context_destroy(staged_ctx);

  char cache[300];
  snprintf(cache, sizeof cache, "%s/cache", folder);
  tabcl_options o = {0};
  o.cache_dir = cache;
  tabcl_context *fresh[NT] = {0};
  for (int i = 0; i < NT; i++)
    if (tabcl_context_create(&o, &fresh[i])) problem("creating a context", -1);
  for (int i = 0; i < NT; i++) ids[i] = fresh[i];
  if (!atomic_load(&problems)) ok = run_threads(first_use, ids) && ok;
  for (int i = 0; i < NT; i++) tabcl_context_destroy(fresh[i]);

  cl_context acl = NULL;
  cl_command_queue aq = NULL;
  for (long i = 0; i < NT; i++) ids[i] = (void *)i;
  if (!app_open(&acl, &aq)) problem("the application's context", -1);
  else ok = run_threads(app_work, ids) && ok;
  for (int i = 0; i < 2; i++) {
    tabcl_category_index_destroy(app_idx[i]);
    tabcl_context_destroy(app_ctx[i]);
  }
  if (aq) clReleaseCommandQueue(aq);
  if (acl) clReleaseContext(acl);

  remove_flat(cache);
  remove_flat(folder);
  if (!ok) fprintf(stderr, "race_check: could not start %d threads\n", NT);
  int n = atomic_load(&problems);
  printf("race_check: %d threads, %d problems\n", NT, n);
  return ok && n == 0 ? 0 : 1;
}
