/* The double host loop the attention checks compare with (cl-probe's
 * portable and tensor-core checks). */
#include <math.h>

#include "attention/sdpa.h"

void tabcl__sdpa_expect_row(const tabcl_sdpa_desc *d, const double *q, const double *k,
                            const double *v, const uint8_t *mask, int b, int h, int i,
                            double *w, double *out) {
  const int lq = (int)d->q_len, lk = (int)d->kv_len, hq = d->q_heads, hkv = d->kv_heads;
  const int dim = d->head_dim, kh = h / (hq / hkv);
  const double scale = tabcl__sdpa_scale(d);
  double mx = -INFINITY, sum = 0;
  for (int j = 0; j < lk; j++) {
    double x = 0;
    const double *qr = q + (((size_t)b * lq + i) * hq + h) * dim;
    const double *kr = k + (((size_t)b * lk + j) * hkv + kh) * dim;
    for (int c = 0; c < dim; c++) x += qr[c] * kr[c];
    w[j] = !mask || mask[((size_t)h * lq + i) * lk + j] ? x * scale : -INFINITY;
    if (w[j] > mx) mx = w[j];
  }
  for (int j = 0; j < lk; j++) sum += w[j] = mx == -INFINITY ? 0 : exp(w[j] - mx);
  for (int c = 0; c < dim; c++) {
    double o = 0;
    for (int j = 0; j < lk; j++) o += w[j] * v[(((size_t)b * lk + j) * hkv + kh) * dim + c];
    out[c] = sum > 0 ? o / sum : 0;
  }
}
