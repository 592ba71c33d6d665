/* Scaled dot-product attention, from host memory and on device buffers.
 *
 * 1. tabcl_sdpa_host on host arrays, with grouped-query heads and a
 *    causal mask;
 * 2. the same inputs in device buffers of an application's own OpenCL
 *    context and queue, through tabcl_context_create_cl and tabcl_sdpa_cl,
 *    ordered by events;
 * both checked against a plain float64 loop on the host.
 *
 *   example_attention
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <tabcl/tabcl_cl.h>

enum { B = 2, LQ = 7, LK = 33, HQ = 8, HKV = 2, D = 32 };

/* The reference: out[b][i][h] = softmax_j(q.k_j / sqrt(D), j <= i) . v_j,
   query head h reading key/value head h / (HQ / HKV). */
static void reference(const float *q, const float *k, const float *v, double *out) {
  const double scale = 1.0 / sqrt((double)D);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < LQ; i++)
      for (int h = 0; h < HQ; h++) {
        const int g = h / (HQ / HKV);
        const float *qi = q + ((size_t)(b * LQ + i) * HQ + h) * D;
        double s[LK], m = -INFINITY, sum = 0.0;
        for (int j = 0; j <= i && j < LK; j++) {
          const float *kj = k + ((size_t)(b * LK + j) * HKV + g) * D;
          s[j] = 0.0;
          for (int d = 0; d < D; d++) s[j] += (double)qi[d] * kj[d];
          s[j] *= scale;
          if (s[j] > m) m = s[j];
        }
        double *o = out + ((size_t)(b * LQ + i) * HQ + h) * D;
        for (int d = 0; d < D; d++) o[d] = 0.0;
        for (int j = 0; j <= i && j < LK; j++) {
          const double p = exp(s[j] - m);
          sum += p;
          const float *vj = v + ((size_t)(b * LK + j) * HKV + g) * D;
          for (int d = 0; d < D; d++) o[d] += p * vj[d];
        }
        for (int d = 0; d < D; d++) o[d] /= sum;
      }
}

static double worst_error(const float *got, const double *want, size_t n) {
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs(got[i] - want[i]);
    if (!(e <= worst)) worst = e;   /* NaN counts as worst */
  }
  return worst;
}

/* As in csv_encode_app_context.c: $TABCL_DEVICE's device, else a GPU, else the first. */
static cl_device_id pick_device(void) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return NULL;
  const char *want = getenv("TABCL_DEVICE");
  cl_device_id first = NULL, gpu = NULL;
  for (cl_uint p = 0; p < np && p < 16; p++) {
    cl_device_id devs[16];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
    char pname[256] = "";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
    for (cl_uint i = 0; i < nd && i < 16; i++) {
      char dname[256] = "";
      cl_device_type type = 0;
      clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
      clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      if (want && *want && (strstr(dname, want) || strstr(pname, want))) return devs[i];
      if (!first) first = devs[i];
      if (!gpu && (type & CL_DEVICE_TYPE_GPU)) gpu = devs[i];
    }
  }
  return gpu ? gpu : first;
}

#define CHECK(err, what)                                         \
  do {                                                           \
    if ((err) != CL_SUCCESS) {                                   \
      fprintf(stderr, "%s failed: %d\n", (what), (int)(err));    \
      return 1;                                                  \
    }                                                            \
  } while (0)

int main(void) {
  const size_t nq = (size_t)B * LQ * HQ * D, nk = (size_t)B * LK * HKV * D;
  float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *out = malloc(nq * 4);
  double *want = malloc(nq * sizeof *want);
  if (!q || !k || !v || !out || !want) return 1;
  unsigned x = 12345;
  for (size_t i = 0; i < nq; i++) q[i] = (float)((x = x * 1103515245u + 12345u) >> 16) / 32768.0f - 1.0f;
  for (size_t i = 0; i < nk; i++) k[i] = (float)((x = x * 1103515245u + 12345u) >> 16) / 32768.0f - 1.0f;
  for (size_t i = 0; i < nk; i++) v[i] = (float)((x = x * 1103515245u + 12345u) >> 16) / 32768.0f - 1.0f;
  reference(q, k, v, want);

  tabcl_sdpa_desc desc = {0};
  desc.batch = B;
  desc.q_len = LQ;
  desc.kv_len = LK;
  desc.q_heads = HQ;
  desc.kv_heads = HKV;
  desc.head_dim = D;
  desc.dtype = TABCL_F32;
  desc.causal = 1;   /* scale 0: 1 / sqrt(head_dim) */

  /* 1. from the host, on a context tabcl makes */
  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create(NULL, &ctx);
  if (!s) s = tabcl_sdpa_host(ctx, &desc, q, k, v, NULL, out);
  if (s) {
    fprintf(stderr, "tabcl: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
    return 1;
  }
  const double host_err = worst_error(out, want, nq);
  printf("device: %s\n", tabcl_context_device_name(ctx));
  printf("tabcl_sdpa_host: out[0][0][0][0..3] = %.5f %.5f %.5f %.5f, worst error %.2e\n",
         out[0], out[1], out[2], out[3], host_err);
  tabcl_context_destroy(ctx);

  /* 2. on device buffers of the application's own context and queue */
  cl_int err = CL_SUCCESS;
  cl_device_id device = pick_device();
  if (!device) return 1;
  cl_platform_id platform = NULL;
  CHECK(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL),
        "clGetDeviceInfo");
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_context cl = clCreateContext(props, 1, &device, NULL, NULL, &err);
  CHECK(err, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueue(cl, device, 0, &err);
  CHECK(err, "clCreateCommandQueue");
  cl_mem bq = clCreateBuffer(cl, CL_MEM_READ_ONLY, nq * 4, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_mem bk = clCreateBuffer(cl, CL_MEM_READ_ONLY, nk * 4, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_mem bv = clCreateBuffer(cl, CL_MEM_READ_ONLY, nk * 4, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_mem bo = clCreateBuffer(cl, CL_MEM_WRITE_ONLY, nq * 4, NULL, &err);
  CHECK(err, "clCreateBuffer");
  cl_event in[3], done = NULL;
  CHECK(clEnqueueWriteBuffer(queue, bq, CL_FALSE, 0, nq * 4, q, 0, NULL, &in[0]), "write q");
  CHECK(clEnqueueWriteBuffer(queue, bk, CL_FALSE, 0, nk * 4, k, 0, NULL, &in[1]), "write k");
  CHECK(clEnqueueWriteBuffer(queue, bv, CL_FALSE, 0, nk * 4, v, 0, NULL, &in[2]), "write v");
  s = tabcl_context_create_cl(cl, device, queue, NULL, &ctx);
  if (!s) s = tabcl_sdpa_cl(ctx, &desc, bq, bk, bv, NULL, bo, 3, in, &done);
  if (s) {
    fprintf(stderr, "tabcl: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
    return 1;
  }
  memset(out, 0, nq * 4);
  CHECK(clEnqueueReadBuffer(queue, bo, CL_TRUE, 0, nq * 4, out, 1, &done, NULL), "read out");
  const double dev_err = worst_error(out, want, nq);
  printf("tabcl_sdpa_cl:   out[0][0][0][0..3] = %.5f %.5f %.5f %.5f, worst error %.2e\n",
         out[0], out[1], out[2], out[3], dev_err);

  clReleaseEvent(done);
  for (int i = 0; i < 3; i++) clReleaseEvent(in[i]);
  tabcl_context_destroy(ctx);
  clReleaseMemObject(bq);
  clReleaseMemObject(bk);
  clReleaseMemObject(bv);
  clReleaseMemObject(bo);
  clReleaseCommandQueue(queue);
  clReleaseContext(cl);
  free(q), free(k), free(v), free(out), free(want);
  const int ok = host_err < 1e-4 && dev_err < 1e-4;
  printf("%s\n", ok ? "both match the float64 loop" : "WRONG attention output");
  return ok ? 0 : 1;
}
