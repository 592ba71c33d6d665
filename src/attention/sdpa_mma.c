/* The optional NVIDIA tensor-core path for attention in f32 (three-term
 * TF32 split), f16 and bf16 (cl/sdpa_mma.cl): where it may run, its launch,
 * and the check a device must pass before the automatic choice uses it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"

/* Keys per tile: 64 keeps short sequences (the tabular case) to one tile
   where registers allow; the S accumulators of 64 keys next to O at head
   dim 128 (or the split Q of f32 at 64) would need too many, so those take
   32. f32 at head dim 128 on the H200 (4 x 32 heads x 4,096 tokens): 32
   keys and 4 warps 26.4 ms, 16 keys 27.5, 8 warps 26.9, 2 warps 42.0.
   TABCL_SDPA_MMA_BK overrides it for benchmarks (16, 32 or 64),
   TABCL_SDPA_MMA_NW the warps a group (2, 4 or 8), TABCL_SDPA_MMA_QMODE=0|1|2
   where f32's Q lives (its TF32 parts in registers, a local tile, or its
   words in registers: MMA_QMODE in cl/sdpa_mma.cl), TABCL_SDPA_MMA_BATCH=0|1
   how tiles move (a word or a tile at a time). */
static int keys_per_tile(tabcl_dtype dt, int dp) {
  const char *env = getenv("TABCL_SDPA_MMA_BK");
  int bk = env ? atoi(env) : 0;
  if (bk == 16 || bk == 32 || bk == 64) return bk;
  return dp <= (dt == TABCL_F32 ? 32 : 64) ? 64 : 32;
}

static int warps_per_group(void) {
  const char *env = getenv("TABCL_SDPA_MMA_NW");
  int nw = env ? atoi(env) : 0;
  return nw == 2 || nw == 8 ? nw : 4;
}

/* f32's Q: on the H200 (tabcl-bench attention, 60,000 x 54 tokens x 8
   heads) a local tile took 16.4 ms at head dim 64 against 17.8 ms with
   the TF32 parts in registers. Past head dim 64 neither fits (registers;
   48 KB of local memory beside K and V), so Q's words stay in registers. */
static int q_mode(tabcl_dtype dt, int dp) {
  if (dt != TABCL_F32) return 0;
  const char *env = getenv("TABCL_SDPA_MMA_QMODE");
  const int m = env ? atoi(env) : -1;
  if (m >= 0 && m <= 2) return m;
  return dp <= 64 ? 1 : 2;
}

int tabcl__sdpa_mma_tiles(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                          tabcl__sdpa_mma_shape *m) {
  const char *env = getenv("TABCL_SDPA_MMA");
  if (env && strcmp(env, "0") == 0) return 0;
  if (!ctx->info.is_nvidia || d->dtype == TABCL_F64 || d->head_dim > 128) return 0;
  const size_t es = d->dtype == TABCL_F32 ? 4 : 2;
  m->dp = (int)(d->head_dim + 15) / 16 * 16;
  m->bk = keys_per_tile(d->dtype, m->dp);
  m->nw = warps_per_group();
  m->qmode = q_mode(d->dtype, m->dp);
  /* Both TF32 parts of Q in registers take 2 x dp / 4 a lane beside O's
     dp / 2: past head dim 64 that is more than a work-item may hold. */
  if (m->qmode == 0 && d->dtype == TABCL_F32 && m->dp > 64) return 0;
  /* On the same shape, loads issued a tile at a time helped f32 (16.4
     against 16.7 ms) and cost f16 (8.5 against 8.1 ms). */
  const char *batch = getenv("TABCL_SDPA_MMA_BATCH");
  m->batch = batch ? strcmp(batch, "0") != 0 : d->dtype == TABCL_F32;
  /* Q passes through the V tile unless it has its own or stays out of
     local memory. */
  const int vrows = m->qmode || m->bk > 16 * m->nw ? m->bk : 16 * m->nw;
  const size_t local = es * (size_t)(m->dp + 16 / es) *
                       (size_t)(m->bk + vrows + (m->qmode == 1 ? 16 * m->nw : 0));
  return local <= ctx->info.local_mem_size && (size_t)(32 * m->nw) <= ctx->info.max_work_group_size;
}

static void mma_options(tabcl_dtype dt, const tabcl__sdpa_mma_shape *m, char *buf, size_t cap) {
  snprintf(buf, cap, "-DMMA_DTYPE=%d -DMMA_DP=%d -DMMA_BK=%d -DMMA_NW=%d -DMMA_BATCH=%d "
           "-DMMA_QMODE=%d", (int)dt, m->dp, m->bk, m->nw, m->batch, m->qmode);
}

static int64_t query_tiles(const tabcl_sdpa_desc *d, const tabcl__sdpa_mma_shape *m) {
  return (d->q_len + 16 * m->nw - 1) / (16 * m->nw);
}

static int64_t mma_slice(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                         const tabcl__sdpa_mma_shape *m) {
  return tabcl__slice_items(ctx, 0, (uint64_t)(32 * m->nw) * (uint64_t)query_tiles(d, m) *
                                        (uint64_t)d->q_heads);
}

static tabcl_status mma_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                               const tabcl__sdpa_mma_shape *m, const tabcl__sdpa_bufs *b,
                               int64_t b0, int64_t nb, cl_uint nwait, const cl_event *wait,
                               tabcl__sdpa_events *ev) {
  char opts[160];
  mma_options(d->dtype, m, opts, sizeof opts);
  return tabcl__sdpa_tile_launch(ctx, d, b, "sdpa_mma", opts, "sdpa_mma", "tensor-core kernel",
                                 (size_t)(32 * m->nw), (int)query_tiles(d, m), b0, nb, nwait,
                                 wait, ev);
}

/* ---- the device check ---------------------------------------------------- */

enum { CB = 2, CLQ = 37, CLK = 70, CHQ = 4, CHKV = 2, CD = 40, CD_WIDE = 104 };

/* Values k / 128 with -128 <= k < 128 for the 16-bit dtypes (exact in f16 and
   bf16 alike, so the host loop sees exactly what the device does); for
   f32, 16 significant bits, so that the TF32 split has a small part. */
static float next_value(uint32_t *s, tabcl_dtype dt) {
  *s = *s * 1664525u + 1013904223u;
  if (dt == TABCL_F32) return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
  return (float)((int)((*s >> 16) & 0xFF) - 128) / 128.0f;
}

static void put(tabcl_dtype dt, void *p, size_t i, float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if (dt == TABCL_F32) {
    memcpy((unsigned char *)p + 4 * i, &u, 4);
    return;
  }
  uint16_t h;
  if (dt == TABCL_BF16) h = (uint16_t)(u >> 16);
  else if (x == 0) h = (uint16_t)((u >> 16) & 0x8000u);
  else /* a normal f16 (|x| >= 2^-7 here): rebias the exponent, keep 10 fraction bits */
    h = (uint16_t)(((u >> 16) & 0x8000u) | ((((u >> 23) & 0xFFu) - 112u) << 10) |
                   ((u >> 13) & 0x3FFu));
  memcpy((unsigned char *)p + 2 * i, &h, 2);
}

static double get(tabcl_dtype dt, const void *p, size_t i) {
  if (dt == TABCL_F32) {
    float f;
    memcpy(&f, (const unsigned char *)p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, (const unsigned char *)p + 2 * i, 2);
  if (dt == TABCL_BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  int e = (h >> 10) & 31;
  double m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

static const char *dtype_name(tabcl_dtype dt) {
  return dt == TABCL_F32 ? "f32" : dt == TABCL_F16 ? "f16" : "bf16";
}

/* One call of the given dtype with grouped heads, a key tile and a half,
   head dim hd (40 and 104 leave a padded last chunk), a boolean mask that
   leaves one row nothing, through the given path, against a double host
   loop. */
static tabcl_status check_shape(tabcl_context *ctx, tabcl_dtype dt, int hd, int path) {
  const int NQ = CB * CLQ * CHQ * hd, NKV = CB * CLK * CHKV * hd, NM = CHQ * CLQ * CLK;
  const size_t es = tabcl__sdpa_elem_size(dt);
  unsigned char *q = tabcl__malloc(es * (2 * (size_t)NQ + 2 * (size_t)NKV));
  double *ref = tabcl__malloc(sizeof(double) * ((size_t)NQ + 2 * (size_t)NKV + CLK + (size_t)hd));
  uint8_t *mask = tabcl__malloc(NM);
  tabcl_status s = TABCL_OK;
  if (!q || !ref || !mask) {
    s = tabcl__fail(TABCL_OUT_OF_MEMORY,
                    "tensor-core attention check: out of host memory for its test tensors");
    goto done;
  }
  unsigned char *k = q + es * NQ, *v = k + es * NKV, *out = v + es * NKV;
  double *rq = ref, *rk = rq + NQ, *rv = rk + NKV, *w = rv + NKV, *o = w + CLK;
  uint32_t seed = 777u + (uint32_t)dt;
  for (int i = 0; i < NQ; i++) put(dt, q, (size_t)i, (float)(rq[i] = next_value(&seed, dt)));
  for (int i = 0; i < NKV; i++) put(dt, k, (size_t)i, (float)(rk[i] = next_value(&seed, dt)));
  for (int i = 0; i < NKV; i++) put(dt, v, (size_t)i, (float)(rv[i] = next_value(&seed, dt)));
  for (int i = 0; i < NM; i++) mask[i] = (uint8_t)((i * 7) % 5 != 0);
  for (int j = 0; j < CLK; j++) mask[(2 * CLQ + 30) * CLK + j] = 0; /* head 2, row 30: nothing */
  memset(out, 0xFF, es * NQ); /* NaN: an unwritten element fails */
  tabcl_sdpa_desc d = {CB, CLQ, CLK, CHQ, CHKV, hd, dt, 0, 0, TABCL_MASK_BOOL, 1, 0};
  s = tabcl__sdpa_host_path(ctx, &d, q, k, v, mask, out, path);
  /* f32: f32 sums and the TF32 split's ~2^-21; 16-bit: one rounding of the output too. */
  const double rel = dt == TABCL_F32 ? 2e-5 : dt == TABCL_BF16 ? 8e-3 : 1e-3;
  const double abs_tol = dt == TABCL_F32 ? 2e-6 : 1e-4;
  for (int b = 0; b < CB && !s; b++)
    for (int h = 0; h < CHQ && !s; h++)
      for (int i = 0; i < CLQ && !s; i++) {
        tabcl__sdpa_expect_row(&d, rq, rk, rv, mask, b, h, i, w, o);
        for (int c = 0; c < hd && !s; c++) {
          const double got = get(dt, out, (size_t)(((b * CLQ + i) * CHQ + h) * hd + c));
          if (!(fabs(got - o[c]) <= rel * fabs(o[c]) + abs_tol))
            s = tabcl__fail(TABCL_OPENCL_ERROR, "tensor-core attention check (%s): batch %d "
                            "head dim %d head %d query %d column %d is %.9g, expected %.9g",
                            dtype_name(dt), b, hd, h, i, c, got, o[c]);
        }
      }
done:
  tabcl__free(q);
  tabcl__free(ref);
  tabcl__free(mask);
  return s;
}

/* The check of a dtype covers each way its kernel is built: f32 keeps Q
   in a local tile up to head dim 64 and in registers past it (q_mode). */
static tabcl_status check_dtype(tabcl_context *ctx, tabcl_dtype dt, int path) {
  tabcl_status s = check_shape(ctx, dt, CD, path);
  if (!s && dt == TABCL_F32) s = check_shape(ctx, dt, CD_WIDE, path);
  return s;
}

tabcl_status tabcl__sdpa_mma_verdict(tabcl_context *ctx, tabcl_dtype dt) {
  const int slot = dt == TABCL_F32 ? 0 : dt == TABCL_F16 ? 1 : 2;
  pthread_mutex_lock(&ctx->lock);
  int state = ctx->sdpa_mma_state[slot];
  pthread_mutex_unlock(&ctx->lock);
  if (state > 0) return TABCL_OK;
  if (state < 0)
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: the tensor-core kernel failed its check "
                       "on %s earlier in this context", ctx->info.name);
  /* Outside the lock: the check runs kernels, which take it. Two threads
     may both run it; they reach the same verdict. */
  tabcl_status s = check_dtype(ctx, dt, TABCL__SDPA_MMA);
  /* Only a verdict about the device is kept: running out of memory, or a
     failure that a test injected, says nothing about the kernel. */
  if (!tabcl__fault_fired() && (s == TABCL_OK || s == TABCL_OPENCL_ERROR ||
                                s == TABCL_BUILD_FAILED || s == TABCL_UNSUPPORTED)) {
    pthread_mutex_lock(&ctx->lock);
    ctx->sdpa_mma_state[slot] = s == TABCL_OK ? 1 : -1;
    pthread_mutex_unlock(&ctx->lock);
  }
  return s;
}

/* cl-probe: the tensor-core kernel's device check in f32, f16 and bf16,
   where the kernel is offered; elsewhere it does not apply. */
tabcl_status tabcl__selfcheck_sdpa_mma(tabcl_context *ctx) {
  static const tabcl_dtype dts[] = {TABCL_F32, TABCL_F16, TABCL_BF16};
  for (int i = 0; i < 3; i++) {
    tabcl_sdpa_desc d = {CB, CLQ, CLK, CHQ, CHKV, CD, dts[i], 0, 0, TABCL_MASK_BOOL, 1, 0};
    tabcl__sdpa_mma_shape m;
    if (!tabcl__sdpa_mma_tiles(ctx, &d, &m))
      return tabcl__fail(TABCL_UNSUPPORTED, "the tensor-core attention kernel runs on NVIDIA "
                         "GPUs only (and not with TABCL_SDPA_MMA=0); attention uses the "
                         "portable kernel on %s", ctx->info.name);
    tabcl_status s = tabcl__sdpa_mma_verdict(ctx, dts[i]);
    if (s) return s;
  }
  return TABCL_OK;
}

tabcl_status tabcl__sdpa_mma_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                                 const tabcl__sdpa_bufs *b, cl_uint nwait, const cl_event *wait,
                                 tabcl__sdpa_events *ev, int *taken) {
  *taken = 0;
  if (path != TABCL__SDPA_AUTO && path != TABCL__SDPA_MMA) return TABCL_OK;
  tabcl__sdpa_mma_shape m;
  /* Not offered: the caller's tabcl__sdpa_pick_path refuses a forced path. */
  if (!tabcl__sdpa_mma_tiles(ctx, d, &m)) return TABCL_OK;
  /* The automatic choice takes the kernel only after the device check;
     a failed check leaves the portable kernel in charge. */
  if (path == TABCL__SDPA_AUTO && tabcl__sdpa_mma_verdict(ctx, d->dtype) != TABCL_OK) {
    tabcl__clear_error();
    return TABCL_OK;
  }
  *taken = 1;
  const int64_t step = mma_slice(ctx, d, &m);
  tabcl_status s = TABCL_OK;
  for (int64_t b0 = 0; b0 < d->batch && !s; b0 += step) {
    const int64_t nb = d->batch - b0 < step ? d->batch - b0 : step;
    s = mma_launch(ctx, d, &m, b, b0, nb, b0 == 0 ? nwait : 0, b0 == 0 ? wait : NULL, ev);
    /* The device check built one head dim; another that does not build or
       cannot run its work-group (refused before anything is enqueued)
       leaves the automatic choice to the portable kernel. */
    if (b0 == 0 && path == TABCL__SDPA_AUTO &&
        (s == TABCL_BUILD_FAILED || s == TABCL_UNSUPPORTED)) {
      tabcl__clear_error();
      *taken = 0;
      return TABCL_OK;
    }
  }
  return s;
}
