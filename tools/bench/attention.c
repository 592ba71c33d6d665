/* tabcl-bench attention: the fused kernel and the CLBlast path on the
 * tabular shape (tens of thousands of 54-token batch entries) and on long
 * sequences. Inputs are already on the device; the time is device time from
 * the first launch's start to the last launch's end. FLOPs count
 * 4 * B * H * Lq * Lk * D (halved for causal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct att_case {
  char name[96];
  tabcl_sdpa_desc d;
} att_case;

static const char *dtype_name(tabcl_dtype dt) {
  return dt == TABCL_F32 ? "f32" : dt == TABCL_F16 ? "f16" : dt == TABCL_BF16 ? "bf16" : "f64";
}

/* Fills a buffer with a repeated block of random values of the dtype. */
static tabcl_status fill_random(tabcl_context *ctx, cl_mem m, size_t bytes, tabcl_dtype dt) {
  const size_t block = (size_t)4 << 20;
  unsigned char *h = malloc(block);
  if (!h) return tabcl__fail(TABCL_OUT_OF_MEMORY, "bench: host block");
  uint64_t s = 0x9E3779B97F4A7C15ULL;
  size_t es = bench_elem_size(dt);
  for (size_t i = 0; i + es <= block; i += es) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    tabcl__store_elem(h, i / es, dt, (float)((double)(s >> 11) / 9007199254740992.0 - 0.5));
  }
  tabcl_status st = TABCL_OK;
  for (size_t off = 0; off < bytes && !st; off += block)
    st = tabcl__write(ctx, m, off, bytes - off < block ? bytes - off : block, h);
  free(h);
  return st;
}

/* The device buffers of one case. */
typedef struct att_bufs {
  cl_mem q, k, v, out;
} att_bufs;

/* Median device seconds of a->reps runs after one warm-up, or -1 on failure. */
static double time_path(tabcl_context *ctx, const bench_args *a, const tabcl_sdpa_desc *d,
                        const att_bufs *b, int path) {
  int reps = a->reps > 0 ? a->reps : 1;
  double *t = calloc((size_t)reps, sizeof *t);
  if (!t) return -1;
  double result = -1;
  for (int r = -1; r < reps; r++) {
    cl_event first = NULL, last = NULL;
    tabcl_status s = tabcl__finish(ctx);
    double t0 = bench_now();
    if (!s)
      s = tabcl__tools_sdpa_run(ctx, d, path, b->q, b->k, b->v, NULL, b->out, &first, &last);
    if (!s) s = tabcl__finish(ctx);
    double wall = bench_now() - t0;
    if (!s && r >= 0) t[r] = bench_pick(bench_event_seconds(first, last), wall);
    if (first) clReleaseEvent(first);
    if (last) clReleaseEvent(last);
    if (s) {
      fprintf(stderr, "attention: %s\n", tabcl_last_error());
      goto done;
    }
  }
  result = bench_median(t, reps);
done:
  free(t);
  return result;
}

static int run_case(tabcl_context *ctx, const bench_args *a, const att_case *c, double peak) {
  const tabcl_sdpa_desc *d = &c->d;
  size_t es = bench_elem_size(d->dtype);
  size_t qb = (size_t)d->batch * d->q_len * d->q_heads * d->head_dim * es;
  size_t kb = (size_t)d->batch * d->kv_len * d->kv_heads * d->head_dim * es;
  att_bufs b = {0};
  tabcl_status s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, qb, NULL, &b.q, "bench q");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, kb, NULL, &b.k, "bench k");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, kb, NULL, &b.v, "bench v");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, qb, NULL, &b.out, "bench out");
  if (!s) s = fill_random(ctx, b.q, qb, d->dtype);
  if (!s) s = fill_random(ctx, b.k, kb, d->dtype);
  if (!s) s = fill_random(ctx, b.v, kb, d->dtype);
  int failed = 0;
  if (s) {
    printf("| %s | - | skipped: %s | | | |\n", c->name, tabcl_last_error());
  } else {
    double flops = 4.0 * (double)d->batch * d->q_heads * (double)d->q_len * (double)d->kv_len *
                   d->head_dim * (d->causal ? 0.5 : 1.0);
    const char *fused_only = getenv("TABCL_BENCH_FUSED_ONLY");
    /* The portable kernel, the CPU kernel and the NVIDIA tensor-core
       kernel where they are offered (what the automatic choice runs there),
       CLBlast. */
    static const int paths[] = {TABCL__TOOLS_SDPA_FUSED, TABCL__TOOLS_SDPA_CPU,
                                TABCL__TOOLS_SDPA_MMA, TABCL__TOOLS_SDPA_CLBLAST};
    static const char *const names[] = {"fused", "cpu", "tensor cores", "clblast"};
    static const char *const prefix[] = {"", "cpu_", "mma_", "clblast_"};
    for (int pi = 0; pi < 4; pi++) {
      const int path = paths[pi];
      if (!tabcl__tools_sdpa_offered(ctx, d, path)) continue;
      if (path == TABCL__TOOLS_SDPA_CLBLAST && fused_only && *fused_only == '1') continue;
      double sec = time_path(ctx, a, d, &b, path);
      const char *pn = names[pi];
      if (sec <= 0) {
        printf("| %s | %s | failed: %s | | | |\n", c->name, pn, tabcl_last_error());
        if (path != TABCL__TOOLS_SDPA_CLBLAST) failed = 1;
        continue;
      }
      double tf = flops / sec * 1e-12;
      printf("| %s | %s | %.3f | %.2f | %.1f%% |\n", c->name, pn, sec * 1e3, tf,
             peak > 0 ? 100.0 * flops / sec / peak : 0.0);
      fflush(stdout);
      char key[64];
      snprintf(key, sizeof key, "%sms", prefix[pi]);
      bench_record(a, "attention", c->name, key, sec * 1e3, "ms");
      snprintf(key, sizeof key, "%stflops", prefix[pi]);
      bench_record(a, "attention", c->name, key, tf, "TFLOP/s");
      snprintf(key, sizeof key, "%speak_fraction", prefix[pi]);
      if (peak > 0) bench_record(a, "attention", c->name, key, flops / sec / peak, "ratio");
    }
  }
  tabcl__buffer_release(b.q);
  tabcl__buffer_release(b.k);
  tabcl__buffer_release(b.v);
  tabcl__buffer_release(b.out);
  return failed;
}

/* The CPU list: names as on the GPU, so the same peers parse them. */
static int cpu_cases(att_case *cases) {
  static const struct { int64_t b; int l, h, d, causal; } shapes[] = {
      {2000, 54, 8, 64, 0}, {2000, 54, 8, 32, 0}, {1, 1024, 16, 64, 0}, {1, 1024, 16, 64, 1}};
  int n = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    att_case *c = &cases[n++];
    memset(c, 0, sizeof *c);
    c->d.batch = shapes[i].b, c->d.q_len = c->d.kv_len = shapes[i].l;
    c->d.q_heads = c->d.kv_heads = shapes[i].h;
    c->d.head_dim = shapes[i].d;
    c->d.causal = shapes[i].causal;
    c->d.dtype = TABCL_F32;
    if (shapes[i].l == 54)
      snprintf(c->name, sizeof c->name, "tab_b%lld_l54_h%d_d%d_f32", (long long)shapes[i].b,
               shapes[i].h, shapes[i].d);
    else
      snprintf(c->name, sizeof c->name, "long_b%lld_h%d_l%d_d%d%s_f32", (long long)shapes[i].b,
               shapes[i].h, shapes[i].l, shapes[i].d, shapes[i].causal ? "_causal" : "");
  }
  return n;
}

int bench_attention(tabcl_context *ctx, const bench_args *a) {
  double peak = bench_fma_peak(ctx, a->quick);
  printf("fp32 FMA peak measured: %.2f TFLOP/s\n\n", peak * 1e-12);
  printf("| case | path | ms | TFLOP/s | of fp32 peak |\n|---|---|---|---|---|\n");
  att_case cases[64];
  int n = 0;
  cl_device_type type = 0;
  if (clGetDeviceInfo(tabcl_context_cl_device(ctx), CL_DEVICE_TYPE, sizeof type, &type, NULL) !=
      CL_SUCCESS)
    type = 0;
  if ((type & CL_DEVICE_TYPE_CPU) && !a->quick) {
    /* On a CPU, the shapes a host peer (numpy with a BLAS) can be timed on
       in the same run (bench/peers/attention_numpy.py): the tabular shape
       at 2,000 batch entries, and 16 heads of 1,024 tokens, f32. */
    n = cpu_cases(cases);
    goto run;
  }
  static const int64_t tab_batches[] = {60000, 140000};
  static const int tab_dims[] = {32, 64};
  for (int bi = 0; bi < 2; bi++)
    for (int di = 0; di < 2; di++)
      for (int dt = 0; dt < 3; dt++) {
        att_case *c = &cases[n++];
        memset(c, 0, sizeof *c);
        int64_t batch = a->quick ? tab_batches[bi] / 2000 : tab_batches[bi];
        c->d.batch = batch, c->d.q_len = c->d.kv_len = 54;
        c->d.q_heads = c->d.kv_heads = 8;
        c->d.head_dim = tab_dims[di];
        c->d.dtype = dt == 2 ? TABCL_BF16 : dt ? TABCL_F16 : TABCL_F32;
        snprintf(c->name, sizeof c->name, "tab_b%lld_l54_h8_d%d_%s", (long long)batch,
                 tab_dims[di], dtype_name(c->d.dtype));
      }
  static const int lens[] = {1024, 4096};
  static const int long_dims[] = {64, 128};
  for (int li = 0; li < 2; li++)
    for (int di = 0; di < 2; di++)
      for (int causal = 0; causal < 2; causal++)
        for (int dt = 0; dt < 3; dt++) {
          att_case *c = &cases[n++];
          memset(c, 0, sizeof *c);
          int64_t b = a->quick ? 1 : 4;
          int h = a->quick ? 2 : 32, l = a->quick ? lens[li] / 16 : lens[li];
          c->d.batch = b, c->d.q_len = c->d.kv_len = l;
          c->d.q_heads = c->d.kv_heads = h;
          c->d.head_dim = long_dims[di];
          c->d.causal = causal;
          c->d.dtype = dt == 2 ? TABCL_BF16 : dt ? TABCL_F16 : TABCL_F32;
          snprintf(c->name, sizeof c->name, "long_b%lld_h%d_l%d_d%d%s_%s", (long long)b, h, l,
                   long_dims[di], causal ? "_causal" : "", dtype_name(c->d.dtype));
        }
run:;
  /* Tile sweeps: TABCL_BENCH_CASES="tab_,l4096" runs only the cases whose
     name contains one of the comma-separated parts; TABCL_BENCH_FUSED_ONLY=1
     skips the CLBlast path. */
  const char *only = getenv("TABCL_BENCH_CASES");
  int failed = 0;
  for (int i = 0; i < n; i++) {
    int take = !only || !*only;
    for (const char *p = only; p && *p && !take;) {
      const char *e = strchr(p, ',');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      char part[96];
      if (len > 0 && len < sizeof part) {
        memcpy(part, p, len);
        part[len] = 0;
        take = strstr(cases[i].name, part) != NULL;
      }
      p = e ? e + 1 : NULL;
    }
    if (take) failed |= run_case(ctx, a, &cases[i], peak);
  }
  static const int dims[] = {32, 64, 128};
  printf("\n");
  for (int di = 0; di < 3; di++) {
    char tiles[256];
    if (tabcl__tools_sdpa_fused_tiles(ctx, TABCL_F32, dims[di], tiles, sizeof tiles))
      printf("fused tiles for head dim %d (f32/f16/bf16): %s\n", dims[di], tiles);
  }
  printf("(TABCL_TUNE=\"sdpa.fused.d64=64x32;sdpa.fused.d128=64x16\" overrides the tiles per "
         "padded head dim; see docs/tuning.md)\n");
  return failed;
}
