/* cl-probe's attention check: a small f32 call with grouped heads and a
 * boolean mask (one row fully masked), through the public call, against
 * the host loop of sdpa_reference.c. */
#include <math.h>
#include <stdio.h>

#include "attention/sdpa.h"

enum { B = 2, LQ = 5, LK = 7, HQ = 2, HKV = 1, D = 16 };

static float next_value(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
}

tabcl_status tabcl__selfcheck_sdpa(tabcl_context *ctx) {
  /* On the stack (a few KB): self-checks may run on several threads at once. */
  float q[B * LQ * HQ * D], k[B * LK * HKV * D], v[B * LK * HKV * D], out[B * LQ * HQ * D];
  uint8_t mask[HQ * LQ * LK];
  uint32_t seed = 12345;
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = next_value(&seed);
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) k[i] = next_value(&seed);
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) v[i] = next_value(&seed);
  for (size_t i = 0; i < sizeof mask; i++) mask[i] = (i % 3) != 1;
  for (int j = 0; j < LK; j++) mask[(1 * LQ + 2) * LK + j] = 0;   /* head 1, row 2: nothing */
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) out[i] = NAN;
  tabcl_sdpa_desc d = {B, LQ, LK, HQ, HKV, D, TABCL_F32, 0, 0, TABCL_MASK_BOOL, 1, 0, 0};
  tabcl_status s = tabcl_sdpa_host(ctx, &d, q, k, v, mask, out);
  if (s) return s;
  double qd[B * LQ * HQ * D], kd[B * LK * HKV * D], vd[B * LK * HKV * D], w[LK], o[D];
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) qd[i] = q[i];
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) kd[i] = k[i], vd[i] = v[i];
  for (int b = 0; b < B; b++)
    for (int h = 0; h < HQ; h++)
      for (int i = 0; i < LQ; i++) {
        tabcl__sdpa_expect_row(&d, qd, kd, vd, mask, b, h, i, w, o);
        for (int c = 0; c < D; c++) {
          float got = out[((b * LQ + i) * HQ + h) * D + c];
          if (!(fabs(got - o[c]) <= 1e-5 + 1e-4 * fabs(o[c])))
            return tabcl__fail(TABCL_OPENCL_ERROR, "sdpa self-check: batch %d head %d query %d "
                               "column %d is %.9g, expected %.9g", b, h, i, c, got, o[c]);
        }
      }
  return TABCL_OK;
}
