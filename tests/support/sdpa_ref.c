/* The float64 attention reference (sdpa_ref.h), written from the contract in
 * include/tabcl/tabcl.h alone: one score row at a time, softmax with the
 * row's maximum subtracted, no tiling and nothing shared with the kernels
 * or with the library's own device checks. */
#include "sdpa_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "runtime/half.h"

void tt_sdpa_reference(const tabcl_sdpa_desc *d, const void *q, const void *k, const void *v,
                       const void *mask, double *out, unsigned char *dead) {
  const int64_t B = d->batch, LQ = d->q_len, LK = d->kv_len;
  const int HQ = d->q_heads, HKV = d->kv_heads, D = d->head_dim, G = HQ / HKV;
  const double scale = d->scale != 0 ? d->scale : 1.0 / sqrt((double)D);
  const tabcl_dtype dt = d->dtype;
  double *w = malloc((size_t)(LK ? LK : 1) * sizeof *w);
  cr_assert_not_null(w);
  for (int64_t b = 0; b < B; b++)
    for (int h = 0; h < HQ; h++)
      for (int64_t i = 0; i < LQ; i++) {
        const size_t row = (size_t)((b * LQ + i) * HQ + h);
        const size_t qrow = row * (size_t)D;
        size_t mrow = 0;
        if (d->mask != TABCL_MASK_NONE)
          mrow = (((size_t)(d->mask_batch_broadcast ? 0 : b) * (d->mask_head_broadcast ? 1 : HQ) +
                   (d->mask_head_broadcast ? 0 : h)) * (d->mask_query_broadcast ? 1 : LQ) +
                  (d->mask_query_broadcast ? 0 : i)) * LK;
        double mx = -INFINITY;
        for (int64_t j = 0; j < LK; j++) {
          const size_t krow = (size_t)((b * LK + j) * HKV + h / G) * (size_t)D;
          int ok = !d->causal || j <= i;
          if (ok && d->mask == TABCL_MASK_BOOL) ok = ((const uint8_t *)mask)[mrow + j] != 0;
          double x = -INFINITY;
          if (ok) {
            double dot = 0;
            for (int e = 0; e < D; e++)
              dot += tabcl__load_elem(q, qrow + e, dt) * tabcl__load_elem(k, krow + e, dt);
            x = dot * scale;
            if (d->mask == TABCL_MASK_ADD) x += tabcl__load_elem(mask, mrow + j, dt);
          }
          w[j] = x;
          if (x > mx) mx = x;
        }
        /* a row with nothing attendable has mx = -inf: all weights 0 */
        double sum = 0;
        for (int64_t j = 0; j < LK; j++) sum += w[j] = mx == -INFINITY ? 0 : exp(w[j] - mx);
        if (dead) dead[row] = !(sum > 0);
        for (int e = 0; e < D; e++) {
          double o = 0;
          for (int64_t j = 0; j < LK; j++)
            if (w[j] != 0)
              o += w[j] * tabcl__load_elem(v, (size_t)((b * LK + j) * HKV + h / G) * D + e, dt);
          out[qrow + e] = sum > 0 ? o / sum : 0;
        }
      }
  free(w);
}
