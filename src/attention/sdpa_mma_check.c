/* The tensor-core kernel's device check: a few calls in each dtype, forced
 * onto the kernel, against a double host loop; its verdict is kept per
 * context, and the automatic choice takes the kernel only after a pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"
#include "runtime/half.h"

enum { CB = 2, CLQ = 37, CLK = 70, CHQ = 4, CHKV = 2, CD = 40, CD_WIDE = 104 };

/* Values k / 128 with -128 <= k < 128 for the 16-bit dtypes (exact in f16 and
   bf16 alike, so the host loop sees exactly what the device does); for
   f32, 16 significant bits, so that the TF32 split has a small part. */
static float next_value(uint32_t *s, tabcl_dtype dt) {
  *s = *s * 1664525u + 1013904223u;
  if (dt == TABCL_F32) return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
  return (float)((int)((*s >> 16) & 0xFF) - 128) / 128.0f;
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
    s = tabcl__fail(TABCL_OUT_OF_MEMORY, "tensor-core attention check: out of host memory for its test tensors");
    goto done;
  }
  unsigned char *k = q + es * NQ, *v = k + es * NKV, *out = v + es * NKV;
  double *rq = ref, *rk = rq + NQ, *rv = rk + NKV, *w = rv + NKV, *o = w + CLK;
  uint32_t seed = 777u + (uint32_t)dt;
  for (int i = 0; i < NQ; i++) tabcl__store_elem(q, (size_t)i, dt, rq[i] = next_value(&seed, dt));
  for (int i = 0; i < NKV; i++) tabcl__store_elem(k, (size_t)i, dt, rk[i] = next_value(&seed, dt));
  for (int i = 0; i < NKV; i++) tabcl__store_elem(v, (size_t)i, dt, rv[i] = next_value(&seed, dt));
  for (int i = 0; i < NM; i++) mask[i] = (uint8_t)((i * 7) % 5 != 0);
  for (int j = 0; j < CLK; j++) mask[(2 * CLQ + 30) * CLK + j] = 0; /* head 2, row 30: nothing */
  memset(out, 0xFF, es * NQ); /* NaN: an unwritten element fails */
  tabcl_sdpa_desc d = {CB, CLQ, CLK, CHQ, CHKV, hd, dt, 0, 0, TABCL_MASK_BOOL, 1, 0, 0};
  /* Straight to the executor with the kernel forced: the check must not
     go through the entry points, which ask for its verdict. */
  const tabcl__sdpa_facts facts = {tabcl__sdpa_clblast_available(), 1, 0, 0, 0};
  s = tabcl__sdpa_exec_host(ctx, &facts, &d, path, q, k, v, mask, out);
  /* f32: f32 sums and the TF32 split's ~2^-21; 16-bit: one rounding of the output too. */
  const double rel = dt == TABCL_F32 ? 2e-5 : dt == TABCL_BF16 ? 8e-3 : 1e-3;
  const double abs_tol = dt == TABCL_F32 ? 2e-6 : 1e-4;
  for (int b = 0; b < CB && !s; b++)
    for (int h = 0; h < CHQ && !s; h++)
      for (int i = 0; i < CLQ && !s; i++) {
        tabcl__sdpa_expect_row(&d, rq, rk, rv, mask, b, h, i, w, o);
        for (int c = 0; c < hd && !s; c++) {
          const double got = tabcl__load_elem(out, (size_t)(((b * CLQ + i) * CHQ + h) * hd + c), dt);
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
    tabcl_sdpa_desc d = {CB, CLQ, CLK, CHQ, CHKV, CD, dts[i], 0, 0, TABCL_MASK_BOOL, 1, 0, 0};
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

