/* The relative norm error of f32 attention (8 queries, 2 query heads over
 * one K/V head, random inputs in [-1, 1], seed 7) against a double loop, as
 * the automatic choice runs it; TABCL_SDPA_MMA=0 keeps the tensor-core
 * kernel out. The measurement behind TABCL__SDPA_MMA_F32_KEYS
 * (bench/history/2026-11-to-12.md, "Tensor-core f32 and long key rows").
 *
 *   cc -O2 bench/checks/long_rows_error.c -Iinclude -Lbuild -ltabcl \
 *      -Wl,-rpath,build -lm -o long_rows_error && ./long_rows_error KEYS HEAD_DIM
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tabcl/tabcl.h"
int main(int argc, char **argv) {
  int64_t Lk = atoll(argv[1]), Lq = 8; int D = atoi(argv[2]), H = 2;
  tabcl_context *ctx = NULL;
  if (tabcl_context_create(NULL, &ctx)) { puts(tabcl_last_error()); return 1; }
  float *q = malloc(Lq * H * D * 4), *k = malloc(Lk * D * 4), *v = malloc(Lk * D * 4), *o = malloc(Lq * H * D * 4);
  srand(7);
  for (int64_t i = 0; i < Lq * H * D; i++) q[i] = 2.0f * rand() / (float)RAND_MAX - 1.0f;
  for (int64_t i = 0; i < Lk * D; i++) { k[i] = 2.0f * rand() / (float)RAND_MAX - 1.0f; v[i] = 2.0f * rand() / (float)RAND_MAX - 1.0f; }
  tabcl_sdpa_desc d = {1, Lq, Lk, H, 1, D, TABCL_F32, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  if (tabcl_sdpa_host(ctx, &d, q, k, v, NULL, o)) { puts(tabcl_last_error()); return 1; }
  double num = 0, den = 0, *s = malloc(Lk * 8), sc = 1.0 / sqrt((double)D);
  for (int64_t i = 0; i < Lq * H; i++) {
    double mx = -1e300, sum = 0;
    for (int64_t j = 0; j < Lk; j++) { double t = 0; for (int c = 0; c < D; c++) t += (double)q[i*D+c] * k[j*D+c]; s[j] = t * sc; if (s[j] > mx) mx = s[j]; }
    for (int64_t j = 0; j < Lk; j++) sum += s[j] = exp(s[j] - mx);
    for (int c = 0; c < D; c++) { double a = 0; for (int64_t j = 0; j < Lk; j++) a += s[j] * v[j*D+c]; a /= sum; double e = a - o[i*D+c]; num += e * e; den += a * a; }
  }
  printf("Lk %lld D %d: relative error %.3g\n", (long long)Lk, D, sqrt(num / den));
  tabcl_context_destroy(ctx);
  return 0;
}
