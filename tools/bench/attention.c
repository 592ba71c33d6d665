/* tabcl-bench attention: the fused kernel and the CLBlast path on the
 * tabular shape (tens of thousands of 54-token batch entries), on long
 * sequences, and on the context shape of a tabular model's prediction (512
 * queries over 10,000 to 40,000 cached context rows, issue 51) with a
 * boolean key-padding mask. Inputs are already on the device; the time is
 * device time from the first launch's start to the last launch's end.
 * FLOPs count 4 * B * H * Lq * Lk * D (halved for causal; masked keys
 * counted, as for the peers). Every path's output is checked on a few rows
 * against a float64 evaluation of the inputs read back from the device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct att_case {
  char name[96];
  tabcl_sdpa_desc d;   /* d.mask TABCL_MASK_BOOL: the key-padding mask of ctx_kept */
} att_case;

static const char *dtype_name(tabcl_dtype dt) {
  return dt == TABCL_F32 ? "f32" : dt == TABCL_F16 ? "f16" : dt == TABCL_BF16 ? "bf16" : "f64";
}

/* Keys batch entry b of B may attend in a context case of lk keys: the last
   7.5% (entry 0) to 12.5% (entry B-1) are padding, so every entry differs.
   bench/peers/attention_torch.py's ctx_kept computes the same numbers. */
static int64_t ctx_kept(int64_t b, int64_t B, int64_t lk) {
  return lk - (int64_t)floor((double)lk * (0.075 + 0.05 * ((double)b + 0.5) / (double)B) + 0.5);
}

/* Fills a buffer with random values of the dtype in [-0.5, 0.5), a block of
   an odd number of elements repeated: no key or value row repeats within a
   head (row strides are powers of two), and filling stays quick. */
static tabcl_status fill_random(tabcl_context *ctx, cl_mem m, size_t bytes, tabcl_dtype dt,
                                uint64_t seed) {
  size_t es = bench_elem_size(dt);
  const size_t block = (((size_t)4 << 20) / es - 1) * es;
  unsigned char *h = malloc(block);
  if (!h) return tabcl__fail(TABCL_OUT_OF_MEMORY, "bench: host block");
  uint64_t s = 0x9E3779B97F4A7C15ULL ^ (seed * 0xD1B54A32D192ED03ULL);
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

/* The [B, 1, 1, Lk] boolean mask of a context case (heads and queries
   broadcast): batch entry b's row keeps its first ctx_kept keys. */
static tabcl_status fill_mask(tabcl_context *ctx, cl_mem m, const tabcl_sdpa_desc *d) {
  size_t lk = (size_t)d->kv_len, rows = (size_t)d->batch;
  unsigned char *h = malloc(rows * lk);
  if (!h) return tabcl__fail(TABCL_OUT_OF_MEMORY, "bench: host mask");
  for (int64_t b = 0; b < d->batch; b++) {
    size_t kept = (size_t)ctx_kept(b, d->batch, d->kv_len);
    memset(h + (size_t)b * lk, 1, kept);
    memset(h + (size_t)b * lk + kept, 0, lk - kept);
  }
  tabcl_status st = tabcl__write(ctx, m, 0, rows * lk, h);
  free(h);
  return st;
}

/* Element i of p, an array of dtype dt, exactly. */
static double load_elem(const unsigned char *p, size_t i, tabcl_dtype dt) {
  if (dt == TABCL_F64) {
    double x;
    memcpy(&x, p + 8 * i, 8);
    return x;
  }
  if (dt == TABCL_F32) {
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, p + 2 * i, 2);
  if (dt == TABCL_BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  /* f16 through a table: the check decodes tens of millions of them */
  static float f16[65536];
  static int have;
  if (!have) {
    for (uint32_t x = 0; x < 65536; x++) {
      int e = (x >> 10) & 31, mant = x & 1023;
      double v = e == 0 ? ldexp(mant, -24) : e == 31 ? (mant ? NAN : INFINITY) : ldexp(mant + 1024, e - 25);
      f16[x] = (float)((x & 0x8000) ? -v : v);
    }
    have = 1;
  }
  return f16[h];
}

/* The rows a case checks (up to 3 in each of two batch entries) and their
   float64 outputs, computed once from the inputs read back. */
#define ATT_CHECK_ROWS 6
typedef struct att_check {
  int n;
  int64_t b[ATT_CHECK_ROWS], qi[ATT_CHECK_ROWS];
  int h[ATT_CHECK_ROWS];
  double *want;   /* n rows of head_dim */
} att_check;

/* The device buffers of one case. */
typedef struct att_bufs {
  cl_mem q, k, v, mask, out;
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
      s = tabcl__tools_sdpa_run(ctx, d, path, b->q, b->k, b->v, b->mask, b->out, &first, &last);
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

/* Row (b, h, qi) of the output of d's call in float64 into want, from q's
   row and batch entry b's k and v ([Lk, Hkv, D], as read back). */
static void reference_row(const tabcl_sdpa_desc *d, const unsigned char *qrow,
                          const unsigned char *kb, const unsigned char *vb, int64_t b, int h,
                          int64_t qi, double *want) {
  const size_t D = (size_t)d->head_dim, hkv = (size_t)d->kv_heads;
  const size_t kh = (size_t)(h / (d->q_heads / d->kv_heads));
  double scale = d->scale > 0 ? d->scale : 1.0 / sqrt((double)D);
  int64_t end = d->kv_len;
  if (d->mask == TABCL_MASK_BOOL) end = ctx_kept(b, d->batch, d->kv_len);
  if (d->causal && qi + 1 < end) end = qi + 1;
  memset(want, 0, D * sizeof *want);
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < end; j++) {   /* the largest score first, for exp's range */
    double sc = 0;
    for (size_t e = 0; e < D; e++)
      sc += load_elem(qrow, e, d->dtype) * load_elem(kb, ((size_t)j * hkv + kh) * D + e, d->dtype);
    if (sc * scale > mx) mx = sc * scale;
  }
  for (int64_t j = 0; j < end; j++) {
    double sc = 0;
    for (size_t e = 0; e < D; e++)
      sc += load_elem(qrow, e, d->dtype) * load_elem(kb, ((size_t)j * hkv + kh) * D + e, d->dtype);
    double w = exp(sc * scale - mx);
    sum += w;
    for (size_t e = 0; e < D; e++)
      want[e] += w * load_elem(vb, ((size_t)j * hkv + kh) * D + e, d->dtype);
  }
  for (size_t e = 0; e < D && sum > 0; e++) want[e] /= sum;
}

/* Picks the rows to check and computes their float64 outputs. */
static tabcl_status check_prepare(tabcl_context *ctx, const tabcl_sdpa_desc *d, const att_bufs *bf,
                                  att_check *c) {
  memset(c, 0, sizeof *c);
  const size_t es = bench_elem_size(d->dtype), D = (size_t)d->head_dim;
  const size_t slice = (size_t)d->kv_len * (size_t)d->kv_heads * D * es;
  const int64_t entries[2] = {0, d->batch - 1};
  c->want = malloc(ATT_CHECK_ROWS * D * sizeof *c->want);
  unsigned char *kb = malloc(slice ? slice : 1), *vb = malloc(slice ? slice : 1);
  unsigned char *qrow = malloc(D * es);
  tabcl_status s = c->want && kb && vb && qrow ? TABCL_OK
                                                 : tabcl__fail(TABCL_OUT_OF_MEMORY, "bench: check");
  for (int ei = 0; ei < (d->batch > 1 ? 2 : 1) && !s; ei++) {
    const int64_t b = entries[ei];
    if (slice) s = tabcl__read(ctx, bf->k, (size_t)b * slice, slice, kb);
    if (slice && !s) s = tabcl__read(ctx, bf->v, (size_t)b * slice, slice, vb);
    /* the first and last head's first and last query, and one between */
    const int hs[3] = {0, d->q_heads / 2, d->q_heads - 1};
    const int64_t qs[3] = {0, d->q_len / 2, d->q_len - 1};
    for (int r = 0; r < 3 && !s; r++) {
      const size_t row = ((size_t)(b * d->q_len + qs[r]) * (size_t)d->q_heads + (size_t)hs[r]) * D;
      s = tabcl__read(ctx, bf->q, row * es, D * es, qrow);
      if (s) break;
      c->b[c->n] = b, c->h[c->n] = hs[r], c->qi[c->n] = qs[r];
      reference_row(d, qrow, kb, vb, b, hs[r], qs[r], c->want + (size_t)c->n * D);
      c->n++;
    }
  }
  free(kb), free(vb), free(qrow);
  return s;
}

/* The relative error (norm over the checked rows) of the output in bf->out,
   or -1 when it cannot be read. */
static double check_error(tabcl_context *ctx, const tabcl_sdpa_desc *d, const att_bufs *bf,
                          const att_check *c) {
  const size_t es = bench_elem_size(d->dtype), D = (size_t)d->head_dim;
  unsigned char *row = malloc(D * es);
  if (!row) return -1;
  double num = 0, den = 0;
  for (int r = 0; r < c->n; r++) {
    const size_t at = ((size_t)(c->b[r] * d->q_len + c->qi[r]) * (size_t)d->q_heads +
                       (size_t)c->h[r]) * D;
    if (tabcl__read(ctx, bf->out, at * es, D * es, row)) {
      free(row);
      return -1;
    }
    for (size_t e = 0; e < D; e++) {
      double g = load_elem(row, e, d->dtype), w = c->want[(size_t)r * D + e];
      num += (g - w) * (g - w), den += w * w;
    }
  }
  free(row);
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* What each jsonl row of a case carries besides its figure: the shape, the
   dtype, the mask, the FLOPs counted and the keys each entry attends. */
static void case_fields(const att_case *c, double flops, char *out, size_t cap) {
  const tabcl_sdpa_desc *d = &c->d;
  int n = snprintf(out, cap,
                   "\"shape\":{\"b\":%lld,\"lq\":%lld,\"lk\":%lld,\"hq\":%d,\"hkv\":%d,"
                   "\"d\":%d,\"causal\":%d},\"dtype\":\"%s\",\"mask\":\"%s\",\"flops\":%.9g",
                   (long long)d->batch, (long long)d->q_len, (long long)d->kv_len, d->q_heads,
                   d->kv_heads, d->head_dim, d->causal, dtype_name(d->dtype),
                   d->mask == TABCL_MASK_BOOL ? "key_padding" : "none", flops);
  if (d->mask != TABCL_MASK_BOOL || d->batch > 64 || n < 0 || (size_t)n >= cap) return;
  n += snprintf(out + n, cap - (size_t)n, ",\"kv_kept\":[");
  for (int64_t b = 0; b < d->batch && (size_t)n < cap; b++)
    n += snprintf(out + n, cap - (size_t)n, "%s%lld", b ? "," : "",
                  (long long)ctx_kept(b, d->batch, d->kv_len));
  if ((size_t)n < cap) snprintf(out + n, cap - (size_t)n, "]");
}

/* The largest relative error a path's checked rows may have: f16 and bf16
   outputs are rounded to 16 bits, and the sums run over up to 40,000 keys. */
static double check_tolerance(tabcl_dtype dt) {
  return dt == TABCL_F64 ? 1e-10 : dt == TABCL_F32 ? 1e-4 : 1e-2;
}

static int run_case(tabcl_context *ctx, const bench_args *a, const att_case *c, double peak) {
  const tabcl_sdpa_desc *d = &c->d;
  size_t es = bench_elem_size(d->dtype);
  size_t qb = (size_t)d->batch * d->q_len * d->q_heads * d->head_dim * es;
  size_t kb = (size_t)d->batch * d->kv_len * d->kv_heads * d->head_dim * es;
  size_t mb = (size_t)d->batch * d->kv_len;   /* [B, 1, 1, Lk] */
  att_bufs b = {0};
  att_check chk = {0};
  tabcl_status s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, qb, NULL, &b.q, "bench q");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, kb, NULL, &b.k, "bench k");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, kb, NULL, &b.v, "bench v");
  if (!s && d->mask == TABCL_MASK_BOOL)
    s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, mb, NULL, &b.mask, "bench mask");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, qb, NULL, &b.out, "bench out");
  if (!s) s = fill_random(ctx, b.q, qb, d->dtype, 1);
  if (!s) s = fill_random(ctx, b.k, kb, d->dtype, 2);
  if (!s) s = fill_random(ctx, b.v, kb, d->dtype, 3);
  if (!s && b.mask) s = fill_mask(ctx, b.mask, d);
  int failed = 0;
  if (s) {
    printf("| %s | - | skipped: %s | | | | |\n", c->name, tabcl_last_error());
  } else {
    double flops = 4.0 * (double)d->batch * d->q_heads * (double)d->q_len * (double)d->kv_len *
                   d->head_dim * (d->causal ? 0.5 : 1.0);
    char fields[1024];
    case_fields(c, flops, fields, sizeof fields);
    bench_record_fields(a, "attention", c->name, "flops", flops, "FLOP", fields);
    int checked = check_prepare(ctx, d, &b, &chk) == TABCL_OK;
    if (!checked) printf("(%s: no check: %s)\n", c->name, tabcl_last_error());
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
        printf("| %s | %s | failed: %s | | | | |\n", c->name, pn, tabcl_last_error());
        if (path != TABCL__TOOLS_SDPA_CLBLAST) failed = 1;
        continue;
      }
      double err = checked ? check_error(ctx, d, &b, &chk) : -1;
      const int wrong = checked && !(err >= 0 && err <= check_tolerance(d->dtype));
      char verdict[64] = "not checked";
      if (checked)
        snprintf(verdict, sizeof verdict, "%s%.2g%s", wrong ? "**WRONG** " : "", err,
                 wrong ? "" : " (ok)");
      failed |= wrong;
      double tf = flops / sec * 1e-12;
      printf("| %s | %s | %.3f | %.2f | %.1f%% | %s |\n", c->name, pn, sec * 1e3, tf,
             peak > 0 ? 100.0 * flops / sec / peak : 0.0, verdict);
      fflush(stdout);
      char key[64];
      snprintf(key, sizeof key, "%sms", prefix[pi]);
      bench_record_fields(a, "attention", c->name, key, sec * 1e3, "ms", fields);
      snprintf(key, sizeof key, "%stflops", prefix[pi]);
      bench_record_fields(a, "attention", c->name, key, tf, "TFLOP/s", fields);
      snprintf(key, sizeof key, "%speak_fraction", prefix[pi]);
      if (peak > 0)
        bench_record_fields(a, "attention", c->name, key, flops / sec / peak, "ratio", fields);
      snprintf(key, sizeof key, "%scheck_error", prefix[pi]);
      if (checked) bench_record_fields(a, "attention", c->name, key, err, "rel", fields);
    }
  }
  free(chk.want);
  tabcl__buffer_release(b.q);
  tabcl__buffer_release(b.k);
  tabcl__buffer_release(b.v);
  tabcl__buffer_release(b.mask);
  tabcl__buffer_release(b.out);
  return failed;
}

/* A context case (issue 51): Lq queries of each batch entry over its Lk
   cached context rows, H heads, with the key-padding mask of ctx_kept. */
static void ctx_case(att_case *c, int64_t b, int lq, int lk, int h, int dim, tabcl_dtype dt) {
  memset(c, 0, sizeof *c);
  c->d.batch = b, c->d.q_len = lq, c->d.kv_len = lk;
  c->d.q_heads = c->d.kv_heads = h;
  c->d.head_dim = dim;
  c->d.dtype = dt;
  c->d.mask = TABCL_MASK_BOOL;
  c->d.mask_head_broadcast = 1, c->d.mask_query_broadcast = 1;
  snprintf(c->name, sizeof c->name, "ctx_b%lld_q%d_kv%d_h%d_d%d_%s", (long long)b, lq, lk, h, dim,
           dtype_name(dt));
}

/* The CPU list: names as on the GPU, so the same peers parse them. Of the
   context cases only batch 1, head dim 64, f32: the others take minutes
   each on a few cores. */
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
  ctx_case(&cases[n++], 1, 512, 10000, 8, 64, TABCL_F32);
  ctx_case(&cases[n++], 1, 512, 40000, 8, 64, TABCL_F32);
  return n;
}

int bench_attention(tabcl_context *ctx, const bench_args *a) {
  double peak = bench_fma_peak(ctx, a->quick);
  printf("fp32 FMA peak measured: %.2f TFLOP/s\n\n", peak * 1e-12);
  printf("| case | path | ms | TFLOP/s | of fp32 peak | check: error vs float64 |\n"
         "|---|---|---|---|---|---|\n");
  att_case cases[96];
  int n = 0;
  cl_device_type type = 0;
  if (clGetDeviceInfo(tabcl_context_cl_device(ctx), CL_DEVICE_TYPE, sizeof type, &type, NULL) !=
      CL_SUCCESS)
    type = 0;
  if ((type & CL_DEVICE_TYPE_CPU) && !a->quick) {
    /* On a CPU, the shapes a host peer (numpy with a BLAS) can be timed on
       in the same run (bench/peers/attention_numpy.py): the tabular shape
       at 2,000 batch entries, 16 heads of 1,024 tokens, and two context
       cases, f32. */
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
  /* The context cases; --quick shrinks them as the others (ctx_b1_q64_kv1000_h2_...). */
  static const int64_t ctx_batches[] = {1, 32};
  static const int ctx_dims[] = {64, 128}, ctx_keys[] = {10000, 40000};
  for (int bi = 0; bi < 2; bi++)
    for (int di = 0; di < 2; di++)
      for (int ki = 0; ki < 2; ki++)
        for (int dt = 0; dt < 3; dt++)
          ctx_case(&cases[n++], a->quick ? (bi ? 4 : 1) : ctx_batches[bi], a->quick ? 64 : 512,
                   a->quick ? ctx_keys[ki] / 10 : ctx_keys[ki], a->quick ? 2 : 8, ctx_dims[di],
                   dt == 2 ? TABCL_BF16 : dt ? TABCL_F16 : TABCL_F32);
run:;
  /* Tile sweeps: --cases "tab_,l4096" (or TABCL_BENCH_CASES) runs only the
     cases whose name contains one of the comma-separated parts ("ctx": the
     context cases); TABCL_BENCH_FUSED_ONLY=1 skips the CLBlast path. */
  int failed = 0, taken = 0;
  for (int i = 0; i < n; i++) {
    const int take = bench_case_taken(a, cases[i].name);
    if (take) failed |= run_case(ctx, a, &cases[i], peak), taken++;
  }
  if (!taken) {
    fprintf(stderr, "attention: no case of this device's list matches --cases\n");
    failed = 1;
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
