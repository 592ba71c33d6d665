/* Eight estimators' cached keys and values streamed to the device under
 * attention.
 *
 * An ensemble keeps each estimator's K and V in host memory; one query
 * batch attends to each estimator in turn. A tabcl stream uploads
 * estimator e + 1 (and e + 2 with depth 2) on its transfer queue while
 * attention runs on estimator e: tabcl_stream_next hands out an item's
 * device buffers with an event to wait on, tabcl_sdpa_cl waits on it, and
 * tabcl_stream_done gives the item back with the attention's event, after
 * which (and never before) the stream refills those buffers. Each output is
 * checked against a float64 loop on the host.
 *
 *   example_stream_estimators
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <tabcl/tabcl_cl.h>

enum { E = 8, B = 1, LQ = 4, HQ = 4, HKV = 2, D = 32, DEPTH = 2 };

static float rnd(unsigned *x) {
  *x = *x * 1103515245u + 12345u;
  return (float)(*x >> 16) / 32768.0f - 1.0f;
}

/* Attention without a mask in float64: q [B, LQ, HQ, D], k and v [B, lk, HKV, D]. */
static void reference(const float *q, const float *k, const float *v, int lk, double *out) {
  const double scale = 1.0 / sqrt((double)D);
  double *s = malloc((size_t)lk * sizeof *s);
  if (!s) exit(1);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < LQ; i++)
      for (int h = 0; h < HQ; h++) {
        const int g = h / (HQ / HKV);
        const float *qi = q + ((size_t)(b * LQ + i) * HQ + h) * D;
        double m = -INFINITY, sum = 0.0;
        for (int j = 0; j < lk; j++) {
          const float *kj = k + ((size_t)(b * lk + j) * HKV + g) * D;
          s[j] = 0.0;
          for (int d = 0; d < D; d++) s[j] += (double)qi[d] * kj[d];
          s[j] *= scale;
          if (s[j] > m) m = s[j];
        }
        double *o = out + ((size_t)(b * LQ + i) * HQ + h) * D;
        for (int d = 0; d < D; d++) o[d] = 0.0;
        for (int j = 0; j < lk; j++) {
          const double p = exp(s[j] - m);
          sum += p;
          const float *vj = v + ((size_t)(b * lk + j) * HKV + g) * D;
          for (int d = 0; d < D; d++) o[d] += p * vj[d];
        }
        for (int d = 0; d < D; d++) o[d] /= sum;
      }
  free(s);
}

static int fail(tabcl_status s) {
  fprintf(stderr, "tabcl: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
  return 1;
}

int main(void) {
  const size_t nq = (size_t)B * LQ * HQ * D;
  int kv_len[E];
  float *q = malloc(nq * 4), *k[E], *v[E], *out = malloc(nq * 4);
  double *want = malloc(nq * sizeof *want);
  if (!q || !out || !want) return 1;
  unsigned x = 7;
  for (size_t i = 0; i < nq; i++) q[i] = rnd(&x);
  const void *host[2 * E];
  size_t bytes[2 * E];
  for (int e = 0; e < E; e++) {
    kv_len[e] = 48 + 16 * e;   /* estimators may differ in length */
    const size_t nk = (size_t)B * kv_len[e] * HKV * D;
    k[e] = malloc(nk * 4);
    v[e] = malloc(nk * 4);
    if (!k[e] || !v[e]) return 1;
    for (size_t i = 0; i < nk; i++) k[e][i] = rnd(&x), v[e][i] = rnd(&x);
    host[2 * e] = k[e];
    host[2 * e + 1] = v[e];
    bytes[2 * e] = bytes[2 * e + 1] = nk * 4;
  }

  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create(NULL, &ctx);
  if (s) return fail(s);
  printf("device: %s\n", tabcl_context_device_name(ctx));
  /* q and the outputs in buffers of the context's OpenCL context */
  cl_context cl = tabcl_context_cl_context(ctx);
  cl_command_queue queue = tabcl_context_cl_queue(ctx);
  cl_int err = CL_SUCCESS;
  cl_mem bq = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nq * 4, q, &err);
  cl_mem bo[E];
  for (int e = 0; e < E && err == CL_SUCCESS; e++)
    bo[e] = clCreateBuffer(cl, CL_MEM_WRITE_ONLY, nq * 4, NULL, &err);
  if (err != CL_SUCCESS) {
    fprintf(stderr, "clCreateBuffer failed: %d\n", (int)err);
    return 1;
  }

  tabcl_stream_desc sd = {E, 2, DEPTH, host, bytes};
  tabcl_stream *st = NULL;
  s = tabcl_stream_create(ctx, &sd, &st);
  if (s) return fail(s);
  tabcl_sdpa_desc desc = {0};
  desc.batch = B;
  desc.q_len = LQ;
  desc.q_heads = HQ;
  desc.kv_heads = HKV;
  desc.head_dim = D;
  desc.dtype = TABCL_F32;
  for (int e = 0; e < E; e++) {
    int64_t item = -1;
    cl_mem kv[TABCL_STREAM_MAX_PARTS];
    cl_event ready = NULL, used = NULL;
    s = tabcl_stream_next(st, &item, kv, &ready);
    if (s) return fail(s);
    desc.kv_len = kv_len[item];
    s = tabcl_sdpa_cl(ctx, &desc, bq, kv[0], kv[1], NULL, bo[item], 1, &ready, &used);
    if (s) return fail(s);
    /* the buffers may be refilled with item + DEPTH once `used` completes */
    s = tabcl_stream_done(st, item, used);
    if (s) return fail(s);
    clReleaseEvent(ready);
    clReleaseEvent(used);
  }

  int ok = 1;
  for (int e = 0; e < E; e++) {
    /* the queue is in order: the read follows estimator e's attention */
    err = clEnqueueReadBuffer(queue, bo[e], CL_TRUE, 0, nq * 4, out, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
      fprintf(stderr, "clEnqueueReadBuffer failed: %d\n", (int)err);
      return 1;
    }
    reference(q, k[e], v[e], kv_len[e], want);
    double worst = 0.0;
    for (size_t i = 0; i < nq; i++) {
      double d = fabs(out[i] - want[i]);
      if (!(d <= worst)) worst = d;
    }
    printf("estimator %d (%3d keys): out[0..2] = %8.5f %8.5f %8.5f, worst error %.2e\n", e,
           kv_len[e], out[0], out[1], out[2], worst);
    ok &= worst < 1e-4;
  }

  tabcl_stream_destroy(st);
  for (int e = 0; e < E; e++) {
    clReleaseMemObject(bo[e]);
    free(k[e]);
    free(v[e]);
  }
  clReleaseMemObject(bq);
  tabcl_context_destroy(ctx);
  free(q), free(out), free(want);
  printf("%s\n", ok ? "every estimator matches the float64 loop" : "WRONG attention output");
  return ok ? 0 : 1;
}
