/* tabcl inside an application's own OpenCL (tabcl_context_create_cl): the
 * test plays the application. It makes its own context and queue (no
 * profiling) on the device the suite uses, fills its own buffers with its
 * own kernels, hands them to fit_cl, lookup_cl, sdpa_cl and a stream with
 * its kernels' events, and reads tabcl's outputs with its own kernels
 * ordered by tabcl's events. Results must equal those of a context tabcl
 * made and the host references; destroying the tabcl context must leave
 * the application's objects as they were (reference counts) and wait for
 * none of the application's work; two tabcl contexts on one application
 * queue serve several threads; every bad argument is refused cleanly. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catindex_ref.h"
#include "sdpa_ref.h"
#include "tabcl/tabcl_cl.h"
#include "tt.h"

/* ---- the application's kernels ------------------------------------------
 * Label j of a generated column: v = (j * 37 + salt) % mod, v % 5 bytes
 * (empty labels included, high bytes too), null where v % 13 == 5. The host
 * makes the same columns (gen_host) for the references. */
static const char app_source[] =
    "uint lab_v(uint j, uint s, uint m) { return (j * 37u + s) % m; }\n"
    "uint lab_len(uint v) { return v % 5u; }\n"
    "uchar lab_byte(uint v, uint t) {\n"
    "  return (uchar)((v * 7u + t * 13u + ((t & 1u) ? 0x80u : 0u)) & 0xffu);\n"
    "}\n"
    "kernel void make_offsets(global long *off, uint n, uint s, uint m) {\n"
    "  long o = 0;\n"
    "  off[0] = 0;\n"
    "  for (uint j = 0; j < n; j++) { o += lab_len(lab_v(j, s, m)); off[j + 1] = o; }\n"
    "}\n"
    "kernel void make_bytes(global const long *off, global uchar *data, uint s, uint m) {\n"
    "  uint j = get_global_id(0), v = lab_v(j, s, m);\n"
    "  long o = off[j];\n"
    "  for (uint t = 0; t < lab_len(v); t++) data[o + t] = lab_byte(v, t);\n"
    "}\n"
    "kernel void make_validity(global uchar *bits, uint n, uint s, uint m) {\n"
    "  uint b = get_global_id(0);\n"
    "  uint x = 0;\n"
    "  for (uint k = 0; k < 8u; k++) {\n"
    "    uint j = b * 8u + k;\n"
    "    if (j < n && lab_v(j, s, m) % 13u != 5u) x |= 1u << k;\n"
    "  }\n"
    "  bits[b] = (uchar)x;\n"
    "}\n"
    "kernel void make_floats(global float *x, uint seed) {\n"
    "  uint i = get_global_id(0), h = i * 0x9E3779B9u + seed;\n"
    "  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;\n"
    "  x[i] = (float)(h & 0xffffu) / 32768.0f - 1.0f;\n"
    "}\n"
    "kernel void codes_out(global const int *codes, global int *out) {\n"
    "  uint i = get_global_id(0);\n"
    "  out[i] = codes[i] * 3 + 1;\n"
    "}\n"
    "kernel void floats_out(global const float *in, global float *out) {\n"
    "  uint i = get_global_id(0);\n"
    "  out[i] = in[i] * 2.0f;\n"
    "}\n";

static uint32_t lab_v(uint32_t j, uint32_t s, uint32_t m) { return (j * 37u + s) % m; }
static uint8_t lab_byte(uint32_t v, uint32_t t) {
  return (uint8_t)((v * 7u + t * 13u + ((t & 1u) ? 0x80u : 0u)) & 0xffu);
}
static float gen_float(uint32_t i, uint32_t seed) {
  uint32_t h = i * 0x9E3779B9u + seed;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return (float)(h & 0xffffu) / 32768.0f - 1.0f;
}

static void gen_host(tt_strings *h, uint32_t n, uint32_t s, uint32_t m, int nulls) {
  tt_strings_init(h, 0);
  for (uint32_t j = 0; j < n; j++) {
    uint32_t v = lab_v(j, s, m);
    uint8_t b[4];
    for (uint32_t t = 0; t < v % 5; t++) b[t] = lab_byte(v, t);
    tt_strings_push(h, b, v % 5);
    if (nulls && v % 13 == 5) {
      /* a null that keeps its bytes, as the device column does (as tt.c
         makes its bitmap) */
      if (!h->validity) {
        h->validity = malloc(h->len_cap / 8 + 1);
        cr_assert(h->validity);
        memset(h->validity, 0xFF, h->len_cap / 8 + 1);
      }
      h->validity[j / 8] &= (uint8_t)~(1u << (j % 8));
    }
  }
}

/* ---- the application ------------------------------------------------------ */

typedef struct app {
  cl_device_id device;
  cl_platform_id platform;
  cl_context cl;
  cl_command_queue q;
  cl_program prog;
} app;

#define CL_OK(call)                                                             \
  do {                                                                          \
    cl_int e_ = (call);                                                         \
    cr_assert_eq(e_, CL_SUCCESS, "%s failed: %d", #call, (int)e_);              \
  } while (0)

/* The device the rest of the suite uses ($TABCL_DEVICE or the default):
   create_cl takes no selector, so the application asks a tabcl context
   which device it would choose. */
static cl_device_id suite_device(cl_platform_id *platform) {
  tabcl_context *t = tt_context();
  cl_device_id d = tabcl_context_cl_device(t);
  tabcl_context_destroy(t);
  CL_OK(clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof *platform, platform, NULL));
  return d;
}

static void app_open(app *a, cl_command_queue_properties props) {
  memset(a, 0, sizeof *a);
  a->device = suite_device(&a->platform);
  cl_context_properties cp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)a->platform, 0};
  cl_int err = CL_SUCCESS;
  a->cl = clCreateContext(cp, 1, &a->device, NULL, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS, "clCreateContext: %d", (int)err);
  a->q = clCreateCommandQueue(a->cl, a->device, props, &err);
  cr_assert_eq(err, CL_SUCCESS, "clCreateCommandQueue: %d", (int)err);
  const char *src = app_source;
  a->prog = clCreateProgramWithSource(a->cl, 1, &src, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  err = clBuildProgram(a->prog, 1, &a->device, "", NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[8192] = "";
    clGetProgramBuildInfo(a->prog, a->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    cr_assert_fail("the application's program did not build: %s", log);
  }
}

static void app_close(app *a) {
  clReleaseProgram(a->prog);
  clReleaseCommandQueue(a->q);
  clReleaseContext(a->cl);
}

static cl_uint ctx_refs(cl_context c) {
  cl_uint n = 0;
  CL_OK(clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}
static cl_uint queue_refs(cl_command_queue q) {
  cl_uint n = 0;
  CL_OK(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}

/* The application's counts are back where they were (crefs, qrefs). It
   waits for its queue first; PoCL 3.1 drops the reference a finished
   command holds on the queue a little after clFinish returns (seen in the
   failure sweep: one more, now and then), so a count is given up to 30
   seconds to come back: a reference tabcl kept never does. */
static void expect_refs(app *a, cl_uint crefs, cl_uint qrefs, const char *what) {
  CL_OK(clFinish(a->q));
  for (int i = 0; i < 30000 && (ctx_refs(a->cl) != crefs || queue_refs(a->q) != qrefs); i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  cr_expect_eq(ctx_refs(a->cl), crefs, "%s: context references %u, %u before", what,
               ctx_refs(a->cl), crefs);
  cr_expect_eq(queue_refs(a->q), qrefs, "%s: queue references %u, %u before", what,
               queue_refs(a->q), qrefs);
}

static cl_mem app_buffer(app *a, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(a->cl, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS, "clCreateBuffer(%zu): %d", bytes, (int)err);
  return m;
}

/* Runs one of the application's kernels on n work-items after wait; the
   arguments are (size, pointer) pairs. Returns its event. */
static cl_event app_run(app *a, const char *name, size_t n, cl_uint nwait, const cl_event *wait,
                        int nargs, ...) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(a->prog, name, &err);
  cr_assert_eq(err, CL_SUCCESS, "clCreateKernel(%s): %d", name, (int)err);
  va_list ap;
  va_start(ap, nargs);
  for (int i = 0; i < nargs; i++) {
    size_t size = va_arg(ap, size_t);
    const void *p = va_arg(ap, const void *);
    CL_OK(clSetKernelArg(k, (cl_uint)i, size, p));
  }
  va_end(ap);
  cl_event ev = NULL;
  CL_OK(clEnqueueNDRangeKernel(a->q, k, 1, NULL, &n, NULL, nwait, wait, &ev));
  clReleaseKernel(k);
  return ev;
}
#define ARG(x) sizeof(x), (const void *)&(x)

/* A column made on the device by the application's kernels; *ev completes
   when every buffer of it is written. host gets the same column. */
static void app_column(app *a, uint32_t n, uint32_t s, uint32_t m, int nulls, tabcl_strings_cl *c,
                       tt_strings *host, cl_event *ev) {
  gen_host(host, n, s, m, nulls);
  memset(c, 0, sizeof *c);
  c->length = n;
  c->bytes = host->offsets[n];
  c->offsets = app_buffer(a, (n + 1) * sizeof(int64_t));
  /* padded as the header asks, so the labels are read in place */
  size_t dbytes = tabcl__round_up((size_t)c->bytes, 8) + 8;
  c->data = app_buffer(a, dbytes);
  static const cl_uchar zero = 0;
  cl_event filled = NULL, offs = NULL, bytes = NULL;
  CL_OK(clEnqueueFillBuffer(a->q, c->data, &zero, 1, 0, dbytes, 0, NULL, &filled));
  offs = app_run(a, "make_offsets", 1, 0, NULL, 4, ARG(c->offsets), ARG(n), ARG(s), ARG(m));
  cl_event both[2] = {filled, offs};
  if (n) bytes = app_run(a, "make_bytes", n, 2, both, 4, ARG(c->offsets), ARG(c->data), ARG(s), ARG(m));
  cl_event last[2] = {bytes ? bytes : offs, NULL};
  cl_uint nlast = 1;
  if (nulls) {
    c->validity = app_buffer(a, (n + 7) / 8);
    last[nlast++] = app_run(a, "make_validity", (n + 7) / 8 ? (n + 7) / 8 : 1, 0, NULL, 4,
                            ARG(c->validity), ARG(n), ARG(s), ARG(m));
  }
  CL_OK(clEnqueueMarkerWithWaitList(a->q, nlast, last, ev));
  for (cl_uint i = 0; i < nlast; i++) clReleaseEvent(last[i]);
  if (bytes) clReleaseEvent(offs);
  clReleaseEvent(filled);
}

static void column_free(tabcl_strings_cl *c) {
  if (c->data) clReleaseMemObject(c->data);
  if (c->offsets) clReleaseMemObject(c->offsets);
  if (c->validity) clReleaseMemObject(c->validity);
}

/* Reads n ints of codes through the application's kernel after ev. */
static void app_read_codes(app *a, cl_mem codes, size_t n, cl_event ev, int32_t *out) {
  cl_mem tmp = app_buffer(a, n * 4);
  cl_event k = app_run(a, "codes_out", n, 1, &ev, 2, ARG(codes), ARG(tmp));
  CL_OK(clEnqueueReadBuffer(a->q, tmp, CL_TRUE, 0, n * 4, out, 1, &k, NULL));
  clReleaseEvent(k);
  clReleaseMemObject(tmp);
  for (size_t i = 0; i < n; i++) out[i] = (out[i] - 1) / 3;
}

static void app_read_floats(app *a, cl_mem x, size_t n, cl_event ev, float *out) {
  cl_mem tmp = app_buffer(a, n * 4);
  cl_event k = app_run(a, "floats_out", n, 1, &ev, 2, ARG(x), ARG(tmp));
  CL_OK(clEnqueueReadBuffer(a->q, tmp, CL_TRUE, 0, n * 4, out, 1, &k, NULL));
  clReleaseEvent(k);
  clReleaseMemObject(tmp);
  for (size_t i = 0; i < n; i++) out[i] *= 0.5f;
}

static cl_mem app_floats(app *a, size_t n, uint32_t seed, cl_event *ev, float *host) {
  cl_mem m = app_buffer(a, n * 4);
  *ev = app_run(a, "make_floats", n, 0, NULL, 2, ARG(m), ARG(seed));
  for (size_t i = 0; i < n; i++) host[i] = gen_float((uint32_t)i, seed);
  return m;
}

static tabcl_context *create_cl(app *a, const tabcl_options *o) {
  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create_cl(a->cl, a->device, a->q, o, &ctx);
  cr_assert_eq(s, TABCL_OK, "tabcl_context_create_cl: %s: %s", tabcl_status_name(s),
               tabcl_last_error());
  return ctx;
}

/* ---- the whole application ----------------------------------------------- */

static tabcl_sdpa_desc small_desc(void) {
  tabcl_sdpa_desc d = {0};
  d.batch = 2;
  d.q_len = 9;
  d.kv_len = 13;
  d.q_heads = 4;
  d.kv_heads = 2;
  d.head_dim = 16;
  d.dtype = TABCL_F32;
  d.causal = 1;
  return d;
}

static void expect_close(const float *got, const double *want, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    cr_assert(fabs(got[i] - want[i]) <= 1e-4 + 1e-4 * fabs(want[i]),
              "%s: element %zu is %.8g, the float64 reference %.8g", what, i, got[i], want[i]);
}

Test(app_context, plays_the_application) {
  app a;
  app_open(&a, 0);   /* profiling off: no call needs it */
  const cl_uint crefs = ctx_refs(a.cl), qrefs = queue_refs(a.q);
  tt_live base = tt_live_now();
  tabcl_context *ctx = create_cl(&a, NULL);
  cr_expect_eq(tabcl_context_cl_context(ctx), a.cl);
  cr_expect_eq(tabcl_context_cl_queue(ctx), a.q);
  cr_expect_eq(tabcl_context_cl_device(ctx), a.device);
  cr_expect_geq(ctx_refs(a.cl), crefs + 1, "the context is retained");
  cr_expect_geq(queue_refs(a.q), qrefs + 1, "the queue is retained");
  tabcl_context *own = tt_context();   /* the same device, a context tabcl made */

  /* vocabularies and queries made on the device by the application */
  enum { NV0 = 140, NV1 = 61, NQ0 = 300, NQ1 = 77 };
  tabcl_strings_cl vocab[2], query[2];
  tt_strings hv[2], hq[2];
  cl_event vev[2], qev[2];
  app_column(&a, NV0, 3, 97, 1, &vocab[0], &hv[0], &vev[0]);
  app_column(&a, NV1, 11, 40, 0, &vocab[1], &hv[1], &vev[1]);
  app_column(&a, NQ0, 5, 131, 1, &query[0], &hq[0], &qev[0]);
  app_column(&a, NQ1, 2, 45, 0, &query[1], &hq[1], &qev[1]);
  tabcl_category_index *idx = NULL;
  cl_event fev = NULL;
  tt_assert_ok(tabcl_category_index_fit_cl(ctx, 2, vocab, TABCL_CODES_BY_VALUE, 2, vev, &fev, &idx));
  cr_assert(fev);
  clReleaseEvent(fev);
  cl_mem codes[2] = {app_buffer(&a, NQ0 * 4), app_buffer(&a, NQ1 * 4)};
  cl_event lev = NULL;
  tt_assert_ok(tabcl_category_index_lookup_cl(idx, 2, query, codes, 2, qev, &lev));
  int32_t got0[NQ0], got1[NQ1], *got[2] = {got0, got1};
  app_read_codes(&a, codes[0], NQ0, lev, got0);
  app_read_codes(&a, codes[1], NQ1, lev, got1);
  clReleaseEvent(lev);

  /* the same on tabcl's own context from the host columns, and the reference */
  tabcl_strings_view vv[2] = {tt_view(&hv[0]), tt_view(&hv[1])};
  tabcl_strings_view qv[2] = {tt_view(&hq[0]), tt_view(&hq[1])};
  tabcl_category_index *oidx = NULL;
  tt_assert_ok(tabcl_category_index_fit(own, 2, vv, TABCL_CODES_BY_VALUE, &oidx));
  int32_t w0[NQ0], w1[NQ1], *want[2] = {w0, w1};
  tt_assert_ok(tabcl_category_index_lookup(oidx, 2, qv, want));
  const int64_t nq[2] = {NQ0, NQ1};
  for (int c = 0; c < 2; c++) {
    catref ref;
    catref_build(&ref, &vv[c], TABCL_CODES_BY_VALUE);
    cr_expect_eq(tabcl_category_index_codes(idx, c), ref.ncodes);
    for (int64_t i = 0; i < nq[c]; i++) {
      cr_assert_eq(got[c][i], want[c][i], "column %d row %lld: %d on the application's context, "
                   "%d on tabcl's", c, (long long)i, got[c][i], want[c][i]);
      cr_assert_eq(got[c][i], catref_code(&ref, &qv[c], i), "column %d row %lld", c, (long long)i);
    }
    /* align from the host on the index fitted on the device */
    int32_t in[50], acodes[50], aown[50];
    for (int i = 0; i < 50; i++) in[i] = (int32_t)((i * 7) % (int)(hq[c].length + 1)) - 1;
    tabcl_dictionary_view dv = {qv[c], 50, in};
    int32_t *ac = acodes, *ao = aown;
    tabcl_dictionary_view d2[2] = {dv, dv};
    int32_t aother[50], *acs[2] = {aother, aother}, *aos[2] = {aother, aother};
    acs[c] = ac;
    aos[c] = ao;
    d2[1 - c].length = 0;
    tt_assert_ok(tabcl_category_index_align(idx, 2, d2, acs));
    tt_assert_ok(tabcl_category_index_align(oidx, 2, d2, aos));
    for (int i = 0; i < 50; i++) {
      cr_assert_eq(acodes[i], aown[i], "align column %d row %d", c, i);
      cr_assert_eq(acodes[i], catref_align_code(&ref, &dv, i), "align column %d row %d", c, i);
    }
    catref_free(&ref);
  }
  tabcl_category_index_destroy(oidx);
  tabcl_category_index_destroy(idx);

  /* attention on the application's buffers */
  tabcl_sdpa_desc d = small_desc();
  const size_t nqe = (size_t)(d.batch * d.q_len * d.q_heads * d.head_dim);
  const size_t nke = (size_t)(d.batch * d.kv_len * d.kv_heads * d.head_dim);
  float *hq_ = malloc(nqe * 4), *hk = malloc(nke * 4), *hv_ = malloc(nke * 4);
  float *out = malloc(nqe * 4), *oref = malloc(nqe * 4);
  double *ref = malloc(nqe * sizeof *ref);
  cl_event in_ev[3];
  cl_mem q = app_floats(&a, nqe, 1, &in_ev[0], hq_);
  cl_mem k = app_floats(&a, nke, 2, &in_ev[1], hk);
  cl_mem v = app_floats(&a, nke, 3, &in_ev[2], hv_);
  cl_mem o = app_buffer(&a, nqe * 4);
  cl_event sev = NULL;
  tt_assert_ok(tabcl_sdpa_cl(ctx, &d, q, k, v, NULL, o, 3, in_ev, &sev));
  app_read_floats(&a, o, nqe, sev, out);
  clReleaseEvent(sev);
  tt_assert_ok(tabcl_sdpa_host(own, &d, hq_, hk, hv_, NULL, oref));
  tt_sdpa_reference(&d, hq_, hk, hv_, NULL, ref, NULL);
  cr_expect(!memcmp(out, oref, nqe * 4), "sdpa_cl on the application's context differs from "
            "tabcl_sdpa_host on tabcl's");
  expect_close(out, ref, nqe, "sdpa_cl");
  tt_assert_ok(tabcl_sdpa_host(ctx, &d, hq_, hk, hv_, NULL, out));
  cr_expect(!memcmp(out, oref, nqe * 4), "tabcl_sdpa_host differs between the contexts");

  /* a stream: three estimators' K and V from the host, q and the outputs
     the application's */
  enum { NE = 3 };
  const int64_t kv_len[NE] = {13, 5, 20};
  float *ks[NE], *vs[NE], *sout[NE];
  cl_mem souts[NE];
  for (int e = 0; e < NE; e++) {
    size_t n = (size_t)(d.batch * kv_len[e] * d.kv_heads * d.head_dim);
    ks[e] = malloc(n * 4);
    vs[e] = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
      ks[e][i] = gen_float((uint32_t)i, 10u + (uint32_t)e);
      vs[e][i] = gen_float((uint32_t)i, 20u + (uint32_t)e);
    }
    sout[e] = malloc(nqe * 4);
    souts[e] = app_buffer(&a, nqe * 4);
  }
  cl_event stev = NULL;
  tt_assert_ok(tabcl_stream_sdpa_cl(ctx, &d, NE, kv_len, q, (const void *const *)ks,
                                    (const void *const *)vs, 2, souts, 0, NULL, &stev));
  cr_assert(stev);
  tt_assert_ok(tabcl_stream_sdpa_host(own, &d, NE, kv_len, hq_, (const void *const *)ks,
                                      (const void *const *)vs, 2, (void *const *)sout));
  for (int e = 0; e < NE; e++) {
    app_read_floats(&a, souts[e], nqe, stev, out);
    cr_expect(!memcmp(out, sout[e], nqe * 4), "estimator %d: the stream on the application's "
              "context differs from tabcl's", e);
    tabcl_sdpa_desc de = d;
    de.kv_len = kv_len[e];
    tt_sdpa_reference(&de, hq_, ks[e], vs[e], NULL, ref, NULL);
    expect_close(out, ref, nqe, "stream_sdpa_cl");
    clReleaseMemObject(souts[e]);
    free(ks[e]);
    free(vs[e]);
    free(sout[e]);
  }
  clReleaseEvent(stev);
  for (int i = 0; i < 3; i++) clReleaseEvent(in_ev[i]);
  clReleaseMemObject(q);
  clReleaseMemObject(k);
  clReleaseMemObject(v);
  clReleaseMemObject(o);
  free(hq_), free(hk), free(hv_), free(out), free(oref), free(ref);
  for (int c = 0; c < 2; c++) {
    column_free(&vocab[c]);
    column_free(&query[c]);
    clReleaseMemObject(codes[c]);
    clReleaseEvent(vev[c]);
    clReleaseEvent(qev[c]);
    tt_strings_free(&hv[c]);
    tt_strings_free(&hq[c]);
  }
  tabcl_context_destroy(own);
  tabcl_context_destroy(ctx);
  /* the application's objects are alive and as they were */
  expect_refs(&a, crefs, qrefs, "after tabcl_context_destroy");
  tt_expect_no_leak(base);
  cl_event e = NULL;
  float x[4];
  cl_mem m = app_floats(&a, 4, 9, &e, x);
  CL_OK(clWaitForEvents(1, &e));
  clReleaseEvent(e);
  clReleaseMemObject(m);
  app_close(&a);
}

/* A stream by hand: each item's buffers, which tabcl's transfer queue
   (made in the application's context) fills, are read by the
   application's own kernel after the item's ready event, and given back
   with that kernel's event; every item must arrive whole. (That a refill
   waits for the given-back event is test_stream's race tests' to show,
   with a slow kernel.) */
Test(app_context, stream_items_read_by_the_applications_kernel) {
  app a;
  app_open(&a, 0);
  tabcl_context *ctx = create_cl(&a, NULL);
  enum { NI = 7, DEPTH = 2 };
  float *items[NI];
  size_t bytes[NI];
  const void *host[NI];
  cl_mem outs[NI];
  for (int i = 0; i < NI; i++) {
    size_t n = 1000 + 333 * (size_t)i;
    items[i] = malloc(n * 4);
    cr_assert(items[i]);
    for (size_t j = 0; j < n; j++) items[i][j] = gen_float((uint32_t)j, 50u + (uint32_t)i);
    bytes[i] = n * 4;
    host[i] = items[i];
    outs[i] = app_buffer(&a, n * 4);
  }
  tabcl_stream_desc sd = {NI, 1, DEPTH, host, bytes};
  tabcl_stream *st = NULL;
  tt_assert_ok(tabcl_stream_create(ctx, &sd, &st));
  for (int i = 0; i < NI; i++) {
    int64_t item = -1;
    cl_mem mem[TABCL_STREAM_MAX_PARTS];
    cl_event ready = NULL;
    tt_assert_ok(tabcl_stream_next(st, &item, mem, &ready));
    cr_assert_eq(item, i);
    cl_event read = app_run(&a, "floats_out", bytes[i] / 4, 1, &ready, 2, ARG(mem[0]),
                            ARG(outs[i]));
    tt_assert_ok(tabcl_stream_done(st, item, read));
    clReleaseEvent(read);
    clReleaseEvent(ready);
  }
  tabcl_stream_destroy(st);
  for (int i = 0; i < NI; i++) {
    const size_t n = bytes[i] / 4;
    float *got = malloc(bytes[i]);
    cr_assert(got);
    CL_OK(clEnqueueReadBuffer(a.q, outs[i], CL_TRUE, 0, bytes[i], got, 0, NULL, NULL));
    for (size_t j = 0; j < n; j++)
      cr_assert_eq(got[j], 2.0f * items[i][j], "item %d element %zu: %g, expected %g", i, j,
                   got[j], 2.0f * items[i][j]);
    free(got);
    free(items[i]);
    clReleaseMemObject(outs[i]);
  }
  tabcl_context_destroy(ctx);
  app_close(&a);
}

/* Destroy waits for none of the application's work: with the queue held
   up by a command behind a user event that only the application completes
   later, tabcl_context_destroy must still return. */
Test(app_context, destroy_waits_for_nothing_of_the_applications, .timeout = 60) {
  app a;
  app_open(&a, CL_QUEUE_PROFILING_ENABLE);
  const cl_uint crefs = ctx_refs(a.cl), qrefs = queue_refs(a.q);
  tabcl_context *ctx = create_cl(&a, NULL);
  /* some work first, so the context has a pool, staging and programs */
  tabcl_sdpa_desc d = small_desc();
  const size_t nqe = (size_t)(d.batch * d.q_len * d.q_heads * d.head_dim);
  const size_t nke = (size_t)(d.batch * d.kv_len * d.kv_heads * d.head_dim);
  float *hq = malloc(nqe * 4), *hk = malloc(nke * 4), *hv = malloc(nke * 4), *out = malloc(nqe * 4);
  for (size_t i = 0; i < nqe; i++) hq[i] = gen_float((uint32_t)i, 1);
  for (size_t i = 0; i < nke; i++) hk[i] = gen_float((uint32_t)i, 2), hv[i] = gen_float((uint32_t)i, 3);
  tt_assert_ok(tabcl_sdpa_host(ctx, &d, hq, hk, hv, NULL, out));
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(a.cl, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_event held = NULL;
  CL_OK(clEnqueueMarkerWithWaitList(a.q, 1, &gate, &held));
  CL_OK(clFlush(a.q));
  tabcl_context_destroy(ctx);   /* hangs here if it waits for the queue */
  CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  CL_OK(clWaitForEvents(1, &held));
  clReleaseEvent(held);
  clReleaseEvent(gate);
  expect_refs(&a, crefs, qrefs, "after a destroy behind the application's work");
  free(hq), free(hk), free(hv), free(out);
  app_close(&a);
}

/* The same for a category index whose labels are 40 MB: on a CPU device a
   context tabcl made keeps such labels in memory of its own, which the
   index's destroy frees only once the queue is drained; on the
   application's queue it must not wait. */
Test(app_context, index_destroy_waits_for_nothing_of_the_applications, .timeout = 300) {
  app a;
  app_open(&a, 0);
  tabcl_context *ctx = create_cl(&a, NULL);
  enum { N = 40000, LEN = 1000 };
  tt_strings v;
  tt_strings_init(&v, 0);
  uint8_t label[LEN];
  for (int i = 0; i < N; i++) {
    memset(label, 'a' + i % 26, sizeof label);
    memcpy(label, &i, sizeof i);
    tt_strings_push(&v, label, sizeof label);
  }
  tabcl_strings_view vv = tt_view(&v);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));
  int32_t codes[3], *cp[1] = {codes};
  tabcl_strings_view q = vv;
  q.length = 3;
  tt_assert_ok(tabcl_category_index_lookup(idx, 1, &q, cp));
  cr_expect(codes[0] == 0 && codes[1] == 1 && codes[2] == 2, "%d %d %d", codes[0], codes[1],
            codes[2]);
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(a.cl, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_event held = NULL;
  CL_OK(clEnqueueMarkerWithWaitList(a.q, 1, &gate, &held));
  CL_OK(clFlush(a.q));
  tabcl_category_index_destroy(idx);   /* hangs here if it waits for the queue */
  tabcl_context_destroy(ctx);
  CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  CL_OK(clWaitForEvents(1, &held));
  clReleaseEvent(held);
  clReleaseEvent(gate);
  tt_strings_free(&v);
  app_close(&a);
}

/* ---- two tabcl contexts on one application context and queue ------------ */

typedef struct worker {
  tabcl_context *ctx;
  app *a;
  int id;
  int bad;
} worker;

static void *work(void *p) {
  worker *w = p;
  /* No Criterion assertions off the main thread: count what differs. */
  for (int round = 0; round < 3; round++) {
    tt_strings v, q;
    gen_host(&v, 50 + 10u * (uint32_t)w->id, (uint32_t)(w->id + round), 41, 1);
    gen_host(&q, 90, (uint32_t)(7 * w->id + round), 53, round & 1);
    tabcl_strings_view vv = tt_view(&v), qv = tt_view(&q);
    tabcl_category_index *idx = NULL;
    int32_t codes[90];
    int32_t *cp[1] = {codes};
    if (tabcl_category_index_fit(w->ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx) != TABCL_OK ||
        tabcl_category_index_lookup(idx, 1, &qv, cp) != TABCL_OK) {
      w->bad++;
    } else {
      catref ref;
      catref_build(&ref, &vv, TABCL_CODES_BY_POSITION);
      for (int64_t i = 0; i < qv.length; i++) w->bad += codes[i] != catref_code(&ref, &qv, i);
      catref_free(&ref);
    }
    tabcl_category_index_destroy(idx);
    tt_strings_free(&v);
    tt_strings_free(&q);
    tabcl_sdpa_desc d = small_desc();
    d.causal = round & 1;
    const size_t nqe = (size_t)(d.batch * d.q_len * d.q_heads * d.head_dim);
    const size_t nke = (size_t)(d.batch * d.kv_len * d.kv_heads * d.head_dim);
    float *hq = malloc(nqe * 4), *hk = malloc(nke * 4), *hv = malloc(nke * 4);
    float *out = malloc(nqe * 4);
    double *ref = malloc(nqe * sizeof *ref);
    for (size_t i = 0; i < nqe; i++) hq[i] = gen_float((uint32_t)i, (uint32_t)(w->id * 5 + round));
    for (size_t i = 0; i < nke; i++) {
      hk[i] = gen_float((uint32_t)i, 100u + (uint32_t)w->id);
      hv[i] = gen_float((uint32_t)i, 200u + (uint32_t)round);
    }
    if (tabcl_sdpa_host(w->ctx, &d, hq, hk, hv, NULL, out) != TABCL_OK) {
      w->bad++;
    } else {
      tt_sdpa_reference(&d, hq, hk, hv, NULL, ref, NULL);
      for (size_t i = 0; i < nqe; i++) w->bad += fabs(out[i] - ref[i]) > 1e-4 + 1e-4 * fabs(ref[i]);
    }
    free(hq), free(hk), free(hv), free(out), free(ref);
  }
  return NULL;
}

Test(app_context, two_contexts_on_one_queue_from_several_threads) {
  app a;
  app_open(&a, 0);
  const cl_uint crefs = ctx_refs(a.cl), qrefs = queue_refs(a.q);
  tabcl_context *ctx[2] = {create_cl(&a, NULL), create_cl(&a, NULL)};
  enum { NT = 4 };
  worker w[NT];
  pthread_t t[NT];
  for (int i = 0; i < NT; i++) {
    w[i] = (worker){ctx[i % 2], &a, i, 0};
    cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < NT; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < NT; i++) cr_expect_eq(w[i].bad, 0, "thread %d: %d wrong results", i, w[i].bad);
  tabcl_context_destroy(ctx[0]);
  tabcl_context_destroy(ctx[1]);
  expect_refs(&a, crefs, qrefs, "after two contexts on several threads");
  app_close(&a);
}

/* ---- the library's self-checks and the disk cache on such a context ------ */

Test(app_context, selfchecks_and_disk_cache) {
  app a;
  app_open(&a, 0);
  tabcl_context *ctx = create_cl(&a, NULL);
  for (int i = 0; i < tabcl_selfcheck_count(); i++) {
    tabcl_status s = tabcl_selfcheck_run(ctx, i);
    cr_expect(tt_selfcheck_passed(ctx, i, s), "self-check %s: %s: %s", tabcl_selfcheck_name(i),
              tabcl_status_name(s), tabcl_last_error());
  }
  tabcl_context_destroy(ctx);
  /* a fresh cache folder: the first context builds and stores, the second loads */
  char *dir = tt_temp_dir("app-cache");
  tabcl_options o = {0};
  o.cache_dir = dir;
  tabcl_stats st[2];
  for (int round = 0; round < 2; round++) {
    ctx = create_cl(&a, &o);
    /* attention always runs on the device (a small fit may not) */
    tabcl_sdpa_desc d = small_desc();
    static float q[2 * 9 * 4 * 16], kv[2 * 13 * 2 * 16], out[2 * 9 * 4 * 16];
    tt_assert_ok(tabcl_sdpa_host(ctx, &d, q, kv, kv, NULL, out));
    tabcl_context_stats(ctx, &st[round]);
    tabcl_context_destroy(ctx);
  }
  cr_expect_gt(st[0].programs_built, 0);
  cr_expect_eq(st[1].programs_built, 0, "the second context built %llu programs",
               (unsigned long long)st[1].programs_built);
  cr_expect_eq(st[1].programs_from_cache, st[0].programs_built);
  tt_remove_tree(dir);
  free(dir);
  app_close(&a);
}

/* ---- refusals ------------------------------------------------------------- */

/* One bad call: its status, a message holding `needle`, *out untouched,
   nothing leaked, the objects' reference counts unchanged. */
static void expect_refused(app *a, cl_context c, cl_device_id d, cl_command_queue q,
                           const tabcl_options *o, int null_out, const char *needle) {
  const cl_uint crefs = ctx_refs(a->cl), qrefs = queue_refs(a->q);
  tt_live base = tt_live_now();
  tabcl_context *poison = (tabcl_context *)a, *out = poison;
  tabcl__clear_error();
  tabcl_status s = tabcl_context_create_cl(c, d, q, o, null_out ? NULL : &out);
  cr_expect_eq(s, TABCL_INVALID_ARGUMENT, "%s: %s (%s)", needle, tabcl_status_name(s),
               tabcl_last_error());
  cr_expect(strstr(tabcl_last_error(), "tabcl_context_create_cl") != NULL, "%s: %s", needle,
            tabcl_last_error());
  cr_expect(strstr(tabcl_last_error(), needle) != NULL, "the message \"%s\" lacks \"%s\"",
            tabcl_last_error(), needle);
  cr_expect_eq(out, poison, "%s: *out changed", needle);
  if (s == TABCL_OK && out != poison) tabcl_context_destroy(out);
  tt_expect_no_leak(base);
  expect_refs(a, crefs, qrefs, needle);
}

Test(app_context, bad_arguments_are_refused) {
  app a;
  app_open(&a, 0);
  expect_refused(&a, a.cl, a.device, a.q, NULL, 1, "out is NULL");
  expect_refused(&a, NULL, a.device, a.q, NULL, 0, "context is NULL");
  expect_refused(&a, a.cl, NULL, a.q, NULL, 0, "device is NULL");
  expect_refused(&a, a.cl, a.device, NULL, NULL, 0, "queue is NULL");
  tabcl_options o = {0};
  o.device = "0:0";
  expect_refused(&a, a.cl, a.device, a.q, &o, 0, "opts->device");
  o.device = NULL;
  o.max_batch_per_launch = -1;
  expect_refused(&a, a.cl, a.device, a.q, &o, 0, "max_batch_per_launch");
  o.max_batch_per_launch = 0;
  o.tune = "no.such.key=1";
  {
    /* a bad tuning entry fails after the objects were retained: they must
       be released again */
    const cl_uint crefs = ctx_refs(a.cl), qrefs = queue_refs(a.q);
    tabcl_context *out = (tabcl_context *)&a;
    cr_expect_eq(tabcl_context_create_cl(a.cl, a.device, a.q, &o, &out), TABCL_INVALID_ARGUMENT);
    cr_expect_eq(out, (tabcl_context *)&a);
    expect_refs(&a, crefs, qrefs, "a bad tuning entry");
  }

  /* a queue of another context on the same device */
  cl_context_properties cp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)a.platform, 0};
  cl_int err = CL_SUCCESS;
  cl_context other = clCreateContext(cp, 1, &a.device, NULL, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_command_queue oq = clCreateCommandQueue(other, a.device, 0, &err);
  cr_assert_eq(err, CL_SUCCESS);
  expect_refused(&a, a.cl, a.device, oq, NULL, 0, "CL_QUEUE_CONTEXT");
  clReleaseCommandQueue(oq);
  clReleaseContext(other);

  /* an out-of-order queue, where the device can make one */
  cl_command_queue ooo =
      clCreateCommandQueue(a.cl, a.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  if (err == CL_SUCCESS) {
    expect_refused(&a, a.cl, a.device, ooo, NULL, 0, "in-order queue");
    clReleaseCommandQueue(ooo);
  } else {
    cr_log_info("the device makes no out-of-order queue (%d): that refusal is not tried",
                (int)err);
  }

  /* a device that is not the context's, and a queue of another device,
     where the machine has a second device */
  cl_platform_id plats[8];
  cl_uint np = 0;
  CL_OK(clGetPlatformIDs(8, plats, &np));
  cl_device_id second = NULL;
  cl_platform_id second_p = NULL;
  for (cl_uint p = 0; p < np && !second; p++) {
    cl_device_id devs[8];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 8, devs, &nd) != CL_SUCCESS) continue;
    for (cl_uint i = 0; i < nd && i < 8 && !second; i++)
      if (devs[i] != a.device) second = devs[i], second_p = plats[p];
  }
  if (second) {
    expect_refused(&a, a.cl, second, a.q, NULL, 0, "not one of context's devices");
    cl_context_properties sp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)second_p, 0};
    cl_context sc = clCreateContext(sp, 1, &second, NULL, NULL, &err);
    if (err == CL_SUCCESS) {
      cl_command_queue sq = clCreateCommandQueue(sc, second, 0, &err);
      if (err == CL_SUCCESS) {
        expect_refused(&a, a.cl, a.device, sq, NULL, 0, "another OpenCL context");
        clReleaseCommandQueue(sq);
      }
      clReleaseContext(sc);
    }
  } else {
    cr_log_info("one OpenCL device only: the foreign-device refusals are not tried");
  }

  /* the objects still serve */
  tabcl_context *ctx = create_cl(&a, NULL);
  tabcl_context_destroy(ctx);
  app_close(&a);
}
