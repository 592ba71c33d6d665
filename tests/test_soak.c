/* Soak: many mixed calls with random sizes on two contexts (one with the
 * device's limits, one forced to slice every launch), every result checked
 * against a host reference, and, at every checkpoint, no growth in live
 * host allocations, live device buffers or compiled programs (one compile
 * per configuration, never per size). TABCL_SOAK_ITERATIONS sets the number
 * of calls after the warm-up (default 300, a few seconds with warm kernel
 * caches; 3000 takes about 40 s on PoCL with 2 cores). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rel_common.h"
#include "runtime/internal.h"

#define MAXCOLS 3

typedef struct soak {
  tabcl_context *ctx[2];
  tt_rng r;
  /* the current index and what it was fitted on */
  tabcl_category_index *idx;
  int ctx_of_idx, ncols;
  tabcl_code_order order;
  tt_strings vocab[MAXCOLS];
  catref ref[MAXCOLS];
  char path[512];
  long calls[6];
  double seconds[6];
} soak;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* During warm-up no input is empty, so every program gets built. */
static int warming;

static int64_t random_count(tt_rng *r, int64_t max) {
  if (warming) return 1 + (int64_t)tt_below(r, (uint64_t)max);
  switch (tt_below(r, 6)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 255 + (int64_t)tt_below(r, 3);   /* around a power of two */
    default: return (int64_t)tt_below(r, (uint64_t)max + 1);
  }
}

/* A column of n labels; some come from `from` so lookups hit. Rarely one
   label is 70,000 bytes long. */
static void random_column(soak *s, tt_strings *out, int64_t n, const tt_strings *from) {
  uint8_t buf[640];
  tt_strings_init(out, (int64_t)tt_below(&s->r, 5));
  tabcl_strings_view v = from ? tt_view(from) : (tabcl_strings_view){0, NULL, NULL, NULL};
  for (int64_t i = 0; i < n; i++) {
    uint64_t k = tt_below(&s->r, 1000);
    if (k < 80) {
      tt_strings_push_null(out);
    } else if (k == 999) {
      uint8_t *big = malloc(70000);
      for (int j = 0; j < 70000; j++) big[j] = (uint8_t)('a' + j % 3);
      tt_strings_push(out, big, 70000);
      free(big);
    } else if (k < 550 && v.length) {
      size_t len;
      const uint8_t *p = tt_label(&v, (int64_t)tt_below(&s->r, (uint64_t)v.length), &len);
      tt_strings_push(out, p ? p : (const uint8_t *)"", p ? len : 0);
    } else {
      size_t len = rel_label(&s->r, buf);
      tt_strings_push(out, buf, len);
    }
  }
}

static void drop_index(soak *s) {
  tabcl_category_index_destroy(s->idx);
  s->idx = NULL;
  for (int c = 0; c < s->ncols; c++) {
    tt_strings_free(&s->vocab[c]);
    catref_free(&s->ref[c]);
  }
  s->ncols = 0;
}

/* Looks q up in idx and compares with the reference of the current vocabulary. */
static void check_lookup(soak *s, tabcl_category_index *idx, tt_strings *q) {
  tabcl_strings_view v[MAXCOLS];
  int32_t *codes[MAXCOLS], *want;
  for (int c = 0; c < s->ncols; c++) {
    v[c] = tt_view(&q[c]);
    codes[c] = malloc(((size_t)v[c].length + 1) * sizeof(int32_t));
  }
  tt_assert_ok(tabcl_category_index_lookup(idx, s->ncols, v, codes));
  for (int c = 0; c < s->ncols; c++) {
    want = malloc(((size_t)v[c].length + 1) * sizeof *want);
    catref_lookup(&s->ref[c], &v[c], want);
    for (int64_t i = 0; i < v[c].length; i++)
      cr_assert_eq(codes[c][i], want[i], "lookup column %d label %lld: %d, reference %d", c,
                   (long long)i, codes[c][i], want[i]);
    free(want);
    free(codes[c]);
  }
  s->calls[1]++;
}

/* order and on (the context) are forced when >= 0. */
static void op_fit(soak *s, int order, int on) {
  drop_index(s);
  s->ncols = 1 + (int)tt_below(&s->r, MAXCOLS);
  s->order = (tabcl_code_order)(order >= 0 ? order : (int)tt_below(&s->r, 2));
  s->ctx_of_idx = on >= 0 ? on : (int)tt_below(&s->r, 2);
  tabcl_strings_view v[MAXCOLS];
  for (int c = 0; c < s->ncols; c++) {
    random_column(s, &s->vocab[c], random_count(&s->r, 800), NULL);
    v[c] = tt_view(&s->vocab[c]);
    catref_build(&s->ref[c], &v[c], s->order);
  }
  tt_assert_ok(tabcl_category_index_fit(s->ctx[s->ctx_of_idx], s->ncols, v, s->order, &s->idx));
  s->calls[0]++;
  for (int c = 0; c < s->ncols; c++) {
    const int64_t want = s->ref[c].ncodes;   /* the length, or the distinct labels */
    cr_assert_eq(tabcl_category_index_codes(s->idx, c), want, "column %d: %lld codes, want %lld",
                 c, (long long)tabcl_category_index_codes(s->idx, c), (long long)want);
  }
}

static void op_lookup(soak *s) {
  tt_strings q[MAXCOLS];
  for (int c = 0; c < s->ncols; c++)
    random_column(s, &q[c], random_count(&s->r, 2000), &s->vocab[c]);
  check_lookup(s, s->idx, q);
  for (int c = 0; c < s->ncols; c++) tt_strings_free(&q[c]);
}

static void op_align(soak *s) {
  tt_strings cats[MAXCOLS];
  tabcl_dictionary_view d[MAXCOLS];
  int32_t *in[MAXCOLS], *codes[MAXCOLS];
  for (int c = 0; c < s->ncols; c++) {
    random_column(s, &cats[c], random_count(&s->r, 300), &s->vocab[c]);
    d[c].categories = tt_view(&cats[c]);
    d[c].length = random_count(&s->r, 3000);
    in[c] = malloc(((size_t)d[c].length + 1) * sizeof(int32_t));
    for (int64_t i = 0; i < d[c].length; i++)
      in[c][i] = (int32_t)tt_below(&s->r, (uint64_t)d[c].categories.length + 1) - 1;
    d[c].codes = in[c];
    codes[c] = malloc(((size_t)d[c].length + 1) * sizeof(int32_t));
  }
  tt_assert_ok(tabcl_category_index_align(s->idx, s->ncols, d, codes));
  for (int c = 0; c < s->ncols; c++) {
    int32_t *want = malloc(((size_t)d[c].length + 1) * sizeof *want);
    catref_align(&s->ref[c], &d[c], want);
    for (int64_t i = 0; i < d[c].length; i++)
      cr_assert_eq(codes[c][i], want[i], "align column %d row %lld: %d, reference %d", c,
                   (long long)i, codes[c][i], want[i]);
    free(want);
    free(codes[c]);
    free(in[c]);
    tt_strings_free(&cats[c]);
  }
  s->calls[2]++;
}

static void op_save_load(soak *s) {
  tt_assert_ok(tabcl_category_index_save(s->idx, s->path));
  tabcl_category_index *back = NULL;
  tt_assert_ok(tabcl_category_index_load(s->ctx[1 - s->ctx_of_idx], s->path, &back));
  cr_assert_eq(tabcl_category_index_columns(back), s->ncols);
  tt_strings q[MAXCOLS];
  for (int c = 0; c < s->ncols; c++) random_column(s, &q[c], random_count(&s->r, 500), &s->vocab[c]);
  check_lookup(s, back, q);
  for (int c = 0; c < s->ncols; c++) tt_strings_free(&q[c]);
  tabcl_category_index_destroy(back);
  s->calls[3]++;
}

/* Two kernel configurations (head dims up to 16, 17..32): each more is a
   compile per dtype, which on a cold cache costs more than the soak. */
static const int soak_dims[] = {5, 16, 24, 32};
#define NDIMS 4
static const tabcl_dtype soak_dtypes[] = {TABCL_F32, TABCL_F16, TABCL_BF16, TABCL_F64};

/* The warm-up's key rows (-1: random): the path can depend on the length
   (on Mesa's llvmpipe, whose loop limit sends long rows from the CPU kernel
   to the fused one), so the warm-up takes the shortest and longest. */
static int64_t warm_kv = -1;

static void op_sdpa(soak *s, int dim_i, int dt_i, int on) {
  tabcl_sdpa_desc d = {0};
  d.batch = tt_below(&s->r, 8) || warming ? 1 + (int64_t)tt_below(&s->r, 3) : 0;
  d.q_len = (int64_t)tt_below(&s->r, 70) + warming;
  d.kv_len = tt_below(&s->r, 10) || warming ? (int64_t)tt_below(&s->r, 90) + warming : 0;
  if (warming && warm_kv >= 0) d.kv_len = warm_kv;
  d.kv_heads = 1 + (int)tt_below(&s->r, 2);
  d.q_heads = d.kv_heads * (1 + (int)tt_below(&s->r, 3));
  d.head_dim = soak_dims[dim_i >= 0 ? dim_i : (int)tt_below(&s->r, NDIMS)];
  d.dtype = soak_dtypes[dt_i >= 0 ? dt_i : (int)tt_below(&s->r, 4)];
  d.scale = tt_below(&s->r, 2) ? 0 : 0.05 + tt_uniform(&s->r);
  d.causal = (int)tt_below(&s->r, 2);
  d.mask = (tabcl_mask_kind)tt_below(&s->r, 3);
  d.mask_batch_broadcast = (int)tt_below(&s->r, 2);
  d.mask_head_broadcast = (int)tt_below(&s->r, 2);
  rel_sdpa_case c;
  rel_sdpa_case_make(&s->r, &c, d);
  int which = on >= 0 ? on : (int)tt_below(&s->r, 2);
  tabcl_status st = tabcl_sdpa_host(s->ctx[which], &c.d, c.q, c.k, c.v, c.mask, c.out);
  if (d.dtype == TABCL_F64 && !s->ctx[which]->info.has_fp64 && d.batch && d.q_len) {
    /* the contract on a device without fp64 (llvmpipe, most mobile GPUs);
       a call with no batch or no queries has nothing to compute and is OK
       (it goes on below and is checked like any other) */
    cr_assert_eq(st, TABCL_UNSUPPORTED, "attention in f64 without fp64: %s (%s)",
                 tabcl_status_name(st), tabcl_last_error());
    cr_assert(strstr(tabcl_last_error(), "fp64") != NULL, "%s", tabcl_last_error());
    rel_sdpa_case_free(&c);
    s->calls[4]++;
    return;
  }
  cr_assert_eq(st, TABCL_OK, "attention B%lld Lq%lld Lk%lld H%d/%d D%d dtype %d: %s",
               (long long)d.batch, (long long)d.q_len, (long long)d.kv_len, d.q_heads,
               d.kv_heads, d.head_dim, (int)d.dtype, tabcl_last_error());
  double *ref = malloc((c.nq + 1) * sizeof *ref);
  tt_sdpa_reference(&c.d, c.q, c.k, c.v, c.mask, ref, NULL);
  double err = rel_sdpa_error(&c, ref);
  cr_assert_leq(err, rel_sdpa_tol(d.dtype),
                "attention B%lld Lq%lld Lk%lld H%d/%d D%d dtype %d mask %d causal %d: error %g",
                (long long)d.batch, (long long)d.q_len, (long long)d.kv_len, d.q_heads,
                d.kv_heads, d.head_dim, (int)d.dtype, (int)d.mask, d.causal, err);
  free(ref);
  rel_sdpa_case_free(&c);
  s->calls[4]++;
}

/* A bad call of a random kind: refused, outputs untouched. */
static void op_bad(soak *s) {
  int32_t out[4] = {7, 7, 7, 7}, *codes[MAXCOLS] = {out, out, out};
  int64_t off[3] = {0, 2, 1};
  tabcl_strings_view q[MAXCOLS];
  for (int c = 0; c < MAXCOLS; c++) q[c] = (tabcl_strings_view){2, off, (const uint8_t *)"ab", NULL};
  tabcl_status st;
  if (tt_below(&s->r, 2)) {
    st = tabcl_category_index_lookup(s->idx, s->ncols, q, codes);
  } else {
    tabcl_sdpa_desc d = {0};
    d.batch = d.q_len = d.kv_len = 1;
    d.q_heads = 3;
    d.kv_heads = 2;
    d.head_dim = 8;
    st = tabcl_sdpa_host(s->ctx[0], &d, out, out, out, NULL, out);
  }
  cr_assert_eq(st, TABCL_INVALID_ARGUMENT, "bad call: %s", tabcl_status_name(st));
  for (int i = 0; i < 4; i++) cr_assert_eq(out[i], 7, "a refused call wrote its output");
  s->calls[5]++;
}

static uint64_t programs(const soak *s) {
  uint64_t n = 0;
  for (int i = 0; i < 2; i++) {
    tabcl_stats st;
    tabcl_context_stats(s->ctx[i], &st);
    n += st.programs_built + st.programs_from_cache;
  }
  return n;
}

Test(soak, mixed_calls) {
  const char *env = getenv("TABCL_SOAK_ITERATIONS");
  long iterations = env && *env ? strtol(env, NULL, 10) : 300;
  soak s;
  memset(&s, 0, sizeof s);
  s.r.s = tt_seed("soak/mixed_calls");
  s.ctx[0] = tt_context();
  tabcl_options o = {0};
  o.max_batch_per_launch = 3;      /* every launch sliced */
  s.ctx[1] = tt_context_with(&o);
  snprintf(s.path, sizeof s.path, "soak-%d.idx", (int)getpid());

  /* Warm-up: every program configuration the run can use, so that the
     baselines below include the contexts' program caches. */
  warming = 1;
  double warm_start = now_s();
  /* the device's plans while warming: small fits and lookups on the
     calling thread (a CPU's default) build no program, so that warming
     with them would leave programs for the run to build */
  for (int c = 0; c < 2; c++) tt_tune(s.ctx[c], "fit.host_labels=0;lookup.host_rows=0;lookup.host_threads=0");
  for (int ord = 0; ord < 2; ord++)
    for (int on = 0; on < 2; on++) {
      op_fit(&s, ord, on);
      op_lookup(&s);
      op_align(&s);
      op_save_load(&s);
    }
  static const int64_t warm_kvs[] = {1, 45, 90};
  for (int wk = 0; wk < 3; wk++)
    for (int dim = 0; dim < NDIMS; dim++)
      for (int dt = 0; dt < 4; dt++)
        for (int on = 0; on < 2; on++) {
          warm_kv = warm_kvs[wk];
          op_sdpa(&s, dim, dt, on);
        }
  warm_kv = -1;
  warming = 0;
  for (int c = 0; c < 2; c++) tt_tune(s.ctx[c], "fit.host_labels=auto;lookup.host_rows=auto;lookup.host_threads=auto");
  cr_log_info("soak: warm-up took %.1f s", now_s() - warm_start);
  drop_index(&s);
  tt_live base = tt_live_now();
  uint64_t base_programs = programs(&s);
  cr_log_info("soak: baseline %ld host allocations, %ld device buffers, %llu programs",
              base.allocs, base.mems, (unsigned long long)base_programs);

  op_fit(&s, -1, -1);
  for (long it = 0; it < iterations; it++) {
    uint64_t k = tt_below(&s.r, 100);
    double t0 = now_s();
    int kind = k < 10 ? 0 : k < 35 ? 1 : k < 50 ? 2 : k < 57 ? 3 : k < 62 ? 5 : 4;
    if (kind == 0) op_fit(&s, -1, -1);
    else if (kind == 1) op_lookup(&s);
    else if (kind == 2) op_align(&s);
    else if (kind == 3) op_save_load(&s);
    else if (kind == 5) op_bad(&s);
    else op_sdpa(&s, -1, -1, -1);
    s.seconds[kind] += now_s() - t0;
    if ((it + 1) % 50 == 0 || it + 1 == iterations) {
      /* Checkpoint: with only the two contexts alive, nothing may have grown. */
      drop_index(&s);
      tt_live now = tt_live_now();
      cr_assert(now.allocs == base.allocs && now.mems == base.mems,
                "after %ld calls: %ld host allocations and %ld device buffers live, "
                "%ld and %ld at the start (programs: %llu, %llu at the start)", it + 1,
                now.allocs, now.mems, base.allocs, base.mems, (unsigned long long)programs(&s),
                (unsigned long long)base_programs);
      cr_assert_eq(programs(&s), base_programs,
                   "after %ld calls the contexts hold %llu programs, %llu after warm-up: "
                   "some size changed the build options", it + 1,
                   (unsigned long long)programs(&s), (unsigned long long)base_programs);
      op_fit(&s, -1, -1);
    }
  }
  drop_index(&s);
  cr_log_info("soak: seconds: fit %.1f, lookup %.1f, align %.1f, save/load %.1f, attention "
              "%.1f, bad %.1f", s.seconds[0], s.seconds[1], s.seconds[2], s.seconds[3],
              s.seconds[4], s.seconds[5]);
  cr_log_info("soak: %ld iterations: %ld fits, %ld lookups, %ld aligns, %ld save/loads, "
              "%ld attention calls, %ld bad calls", iterations, s.calls[0], s.calls[1],
              s.calls[2], s.calls[3], s.calls[4], s.calls[5]);
  unlink(s.path);
  tabcl_context_destroy(s.ctx[1]);
  tabcl_context_destroy(s.ctx[0]);
}

/* The two kernels only cl-probe and tabcl-bench run (device ceilings), on
   tiny shapes and checked, so CI's oclgrind pass covers every kernel in cl/.
   Launched directly: tabcl__measure_copy zero-fills with
   clEnqueueFillBuffer, which oclgrind does not count as initialising. */
Test(oclgrind_probe, copy_and_fma_kernels) {
  tabcl_context *ctx = tt_context();
  for (int i = 0; i < tabcl_program_count(); i++)   /* build the probe program first */
    if (!strcmp(tabcl_program_name(i), "probe")) tt_assert_ok(tabcl_program_prepare(ctx, i, NULL));
  tt_live base = tt_live_now();
  enum { N = 37 };                 /* float4s; not a work-group multiple */
  float src[N * 4], dst[N * 4], fout[64];
  for (int i = 0; i < N * 4; i++) src[i] = (float)i * 0.5f - 3.0f;
  cl_mem a = NULL, b = NULL, o = NULL;
  cl_kernel kc = NULL, kf = NULL;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof src, src, &a, "src"));
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, sizeof dst, NULL, &b, "dst"));
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, sizeof fout, NULL, &o, "fma out"));
  tt_assert_ok(tabcl__kernel_create(ctx, "probe", NULL, "probe_copy", &kc));
  tt_assert_ok(tabcl__kernel_create(ctx, "probe", NULL, "probe_fma", &kf));
  cl_ulong n = N;
  tt_assert_ok(TABCL_SET_ARGS(kc, "probe_copy", TABCL_ARG(a), TABCL_ARG(b), TABCL_ARG(n)));
  size_t wg = 8, global = tabcl__round_up(N, wg);
  tt_assert_ok(tabcl__launch(ctx, kc, 1, &global, &wg, 0, NULL, NULL, "probe_copy"));
  float fa = 0.999f, fb = 0.001f;
  int iters = 3;
  tt_assert_ok(TABCL_SET_ARGS(kf, "probe_fma", TABCL_ARG(o), TABCL_ARG(fa), TABCL_ARG(fb), TABCL_ARG(iters)));
  size_t fglobal = 64;
  tt_assert_ok(tabcl__launch(ctx, kf, 1, &fglobal, &wg, 0, NULL, NULL, "probe_fma"));
  tt_assert_ok(tabcl__read(ctx, b, 0, sizeof dst, dst));
  tt_assert_ok(tabcl__read(ctx, o, 0, sizeof fout, fout));
  cr_expect_eq(memcmp(src, dst, sizeof src), 0, "probe_copy copied wrongly");
  for (int g = 0; g < 64; g++) {
    float x[8], sum = 0;
    for (int j = 0; j < 8; j++) x[j] = (float)g * 1e-7f + (float)j;
    for (int it = 0; it < 2 * iters; it++)
      for (int j = 0; j < 8; j++) x[j] = fmaf(x[j], fa, fb);
    for (int j = 0; j < 8; j++) sum += x[j];
    cr_expect(fabsf(fout[g] - sum) <= 1e-5f * fabsf(sum), "probe_fma item %d: %g, host %g", g,
              fout[g], sum);
  }
  tabcl__kernel_release(kc);
  tabcl__kernel_release(kf);
  tabcl__buffer_release(a);
  tabcl__buffer_release(b);
  tabcl__buffer_release(o);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}
