/* tabcl-bench stream: one query batch against 8 estimators' cached K and V
 * (10,000 to 40,000 rows each, 512 query rows, 8 heads, head dim 64, f16
 * and f32), K and V in pinned host memory (tabcl_stream_host_alloc).
 *
 *   serial:   per estimator, upload K and V, then attention, all on the
 *             context's queue, so nothing overlaps;
 *   streamed: tabcl_stream_sdpa_cl, uploads on the transfer queue `depth`
 *             estimators ahead of the attention that reads them.
 *
 * Total upload and total compute are the sums of the serial run's upload
 * and attention device times (profiling events); serial and streamed are
 * wall-clock times of the whole sequence, median of the repetitions. The
 * issue's targets: streamed within 1.15x of max(upload, compute), and
 * serial / streamed >= 1.4 where upload and compute are close. The two
 * forms' outputs must be equal bit for bit, else the case fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define NEST 8

typedef struct stream_case {
  tabcl_sdpa_desc d;
  int64_t kv_len[NEST];
  void *k[NEST], *v[NEST];
  size_t kvb[NEST], ob;
  cl_mem q, kd, vd, out_serial[NEST], out_stream[NEST];
} stream_case;

static void fill(void *p, size_t bytes, tabcl_dtype dt, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  const size_t es = bench_elem_size(dt);
  for (size_t i = 0; i + es <= bytes; i += es) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    float f = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
    uint32_t u;
    memcpy(&u, &f, 4);
    if (dt == TABCL_F32) {
      memcpy((uint8_t *)p + i, &f, 4);
    } else {
      /* an f16 in [0.25, 0.5) with f's sign and mantissa bits */
      uint16_t h = (uint16_t)(((u >> 16) & 0x8000u) | 0x3400u | ((u >> 13) & 0x3FFu));
      memcpy((uint8_t *)p + i, &h, 2);
    }
  }
}

/* The serial form once: returns wall seconds, adds device seconds of the
   uploads and the attentions to *up and *comp. */
static tabcl_status run_serial(tabcl_context *ctx, stream_case *c, double *wall, double *up,
                               double *comp) {
  cl_command_queue q = tabcl_context_cl_queue(ctx);
  cl_event wk[NEST] = {0}, wv[NEST] = {0};
  cl_event first[NEST] = {0}, last[NEST] = {0};
  tabcl_status s = TABCL_OK;
  const double t0 = bench_now();
  for (int e = 0; e < NEST && !s; e++) {
    cl_int err = clEnqueueWriteBuffer(q, c->kd, CL_FALSE, 0, c->kvb[e], c->k[e], 0, NULL, &wk[e]);
    if (err == CL_SUCCESS)
      err = clEnqueueWriteBuffer(q, c->vd, CL_FALSE, 0, c->kvb[e], c->v[e], 0, NULL, &wv[e]);
    if (err != CL_SUCCESS) {
      s = tabcl__cl_fail(err, "clEnqueueWriteBuffer", "bench stream serial");
      break;
    }
    tabcl_sdpa_desc d = c->d;
    d.kv_len = c->kv_len[e];
    s = tabcl__tools_sdpa_run(ctx, &d, TABCL__TOOLS_SDPA_AUTO, c->q, c->kd, c->vd, NULL,
                              c->out_serial[e], &first[e], &last[e]);
  }
  if (!s) s = tabcl__finish(ctx);
  *wall = bench_now() - t0;
  for (int e = 0; e < NEST; e++) {
    if (!s) {
      *up += bench_event_seconds(wk[e], wk[e]) + bench_event_seconds(wv[e], wv[e]);
      *comp += bench_event_seconds(first[e], last[e]);
    }
    if (wk[e]) clReleaseEvent(wk[e]);
    if (wv[e]) clReleaseEvent(wv[e]);
    if (first[e]) clReleaseEvent(first[e]);
    if (last[e]) clReleaseEvent(last[e]);
  }
  return s;
}

static tabcl_status run_streamed(tabcl_context *ctx, stream_case *c, int depth,
                                 const void *const *k, const void *const *v, double *wall) {
  cl_event ev = NULL;
  const double t0 = bench_now();
  tabcl_status s = tabcl_stream_sdpa_cl(ctx, &c->d, NEST, c->kv_len, c->q, k, v, depth,
                                        c->out_stream, 0, NULL, &ev);
  if (!s) {
    cl_int err = clWaitForEvents(1, &ev);
    if (err != CL_SUCCESS) s = tabcl__cl_fail(err, "clWaitForEvents", "bench stream");
  }
  *wall = bench_now() - t0;
  if (ev) clReleaseEvent(ev);
  return s;
}

/* 1 when every streamed output equals the serial one byte for byte. */
static int outputs_equal(tabcl_context *ctx, stream_case *c) {
  uint8_t *a = malloc(c->ob + 1), *b = malloc(c->ob + 1);
  int same = a && b;
  for (int e = 0; e < NEST && same; e++) {
    same = tabcl__read(ctx, c->out_serial[e], 0, c->ob, a) == TABCL_OK &&
           tabcl__read(ctx, c->out_stream[e], 0, c->ob, b) == TABCL_OK &&
           !memcmp(a, b, c->ob);
    if (!same) fprintf(stderr, "stream: estimator %d differs between serial and streamed\n", e);
  }
  free(a);
  free(b);
  return same;
}

static int run_case(tabcl_context *ctx, const bench_args *a, tabcl_dtype dt) {
  const int quick = a->quick;
  stream_case c;
  memset(&c, 0, sizeof c);
  c.d.batch = 1;
  c.d.q_len = quick ? 32 : 512;
  c.d.q_heads = c.d.kv_heads = 8;
  c.d.head_dim = 64;
  c.d.dtype = dt;
  const int64_t lo = quick ? 500 : 10000, hi = quick ? 2000 : 40000;
  const size_t es = bench_elem_size(dt);
  const size_t row = (size_t)c.d.kv_heads * (size_t)c.d.head_dim * es;
  c.ob = (size_t)c.d.q_len * (size_t)c.d.q_heads * (size_t)c.d.head_dim * es;
  size_t maxb = 0;
  int64_t rows = 0;
  tabcl_status s = TABCL_OK;
  for (int e = 0; e < NEST && !s; e++) {
    /* lengths spread evenly over [lo, hi], in an order that is not sorted */
    c.kv_len[e] = lo + (hi - lo) * ((e * 3) % NEST) / (NEST - 1);
    rows += c.kv_len[e];
    c.kvb[e] = (size_t)c.kv_len[e] * row;
    if (c.kvb[e] > maxb) maxb = c.kvb[e];
    s = tabcl_stream_host_alloc(ctx, c.kvb[e], &c.k[e]);
    if (!s) s = tabcl_stream_host_alloc(ctx, c.kvb[e], &c.v[e]);
    if (!s) fill(c.k[e], c.kvb[e], dt, 2 * (uint64_t)e + 1), fill(c.v[e], c.kvb[e], dt, 2 * (uint64_t)e + 2);
  }
  void *qh = malloc(c.ob);
  if (!s && !qh) s = tabcl__fail(TABCL_OUT_OF_MEMORY, "bench stream: q");
  if (!s) fill(qh, c.ob, dt, 99);
  if (!s) s = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, c.ob, qh, &c.q, "bench q");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, maxb, NULL, &c.kd, "bench k");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, maxb, NULL, &c.vd, "bench v");
  for (int e = 0; e < NEST && !s; e++) {
    s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, c.ob, NULL, &c.out_serial[e], "bench out");
    if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, c.ob, NULL, &c.out_stream[e], "bench out");
  }
  /* the same K and V in ordinary (pageable) memory, for the row that shows
     what pinning buys */
  void *pk[NEST] = {0}, *pv[NEST] = {0};
  for (int e = 0; e < NEST && !s; e++) {
    pk[e] = malloc(c.kvb[e]);
    pv[e] = malloc(c.kvb[e]);
    if (!pk[e] || !pv[e]) s = tabcl__fail(TABCL_OUT_OF_MEMORY, "bench stream: pageable copy");
    else memcpy(pk[e], c.k[e], c.kvb[e]), memcpy(pv[e], c.v[e], c.kvb[e]);
  }
  const int reps = quick ? (a->reps < 3 ? (a->reps > 0 ? a->reps : 1) : 3) : (a->reps > 0 ? a->reps : 1);
  double *ts = calloc((size_t)reps, sizeof *ts), *tq[3], *tp = calloc((size_t)reps, sizeof *tp);
  for (int d = 0; d < 3; d++) tq[d] = calloc((size_t)reps, sizeof *tq[d]);
  double up = 0, comp = 0;
  int equal = 1;
  for (int r = -1; r < reps && !s; r++) {
    double w, u = 0, cp = 0;
    /* serial and streamed alternate, so drift in clocks or load hits both */
    if ((s = run_serial(ctx, &c, &w, &u, &cp))) break;
    if (r >= 0) ts[r] = w, up += u / reps, comp += cp / reps;
    for (int depth = 1; depth <= 3 && !s; depth++) {
      s = run_streamed(ctx, &c, depth, (const void *const *)c.k, (const void *const *)c.v, &w);
      if (!s && r >= 0) tq[depth - 1][r] = w;
      if (!s && r < 0) equal = equal && outputs_equal(ctx, &c);
    }
    if (!s) s = run_streamed(ctx, &c, 2, (const void *const *)pk, (const void *const *)pv, &w);
    if (!s && r >= 0) tp[r] = w;
  }
  const char *dn = dt == TABCL_F32 ? "f32" : "f16";
  char name[96];
  snprintf(name, sizeof name, "%s 8 est x %lld-%lld rows, Lq %lld, 8x64", dn, (long long)lo,
           (long long)hi, (long long)c.d.q_len);
  int failed = 0;
  if (s) {
    printf("| %s | failed: %s: %s |\n", name, tabcl_status_name(s), tabcl_last_error());
    failed = 1;
  } else {
    const double serial = bench_median(ts, reps), pageable = bench_median(tp, reps);
    const double bound = up > comp ? up : comp;
    const double mb = (double)rows * (double)row * 2 / 1048576.0;
    for (int d = 0; d < 3; d++) {
      const double st = bench_median(tq[d], reps);
      printf("| %s | %.0f MiB | %.2f | %.2f | %.2f | %d | %.2f | %.2f | %.2f | %s |\n", name, mb,
             up * 1e3, comp * 1e3, serial * 1e3, d + 1, st * 1e3, st / bound, serial / st,
             equal ? "yes" : "NO");
      char cn[128];
      snprintf(cn, sizeof cn, "%s depth %d", name, d + 1);
      bench_record(a, "stream", cn, "streamed_ms", st * 1e3, "ms");
      bench_record(a, "stream", cn, "streamed_over_bound", st / bound, "x");
      bench_record(a, "stream", cn, "serial_over_streamed", serial / st, "x");
    }
    printf("| %s, pageable K/V | %.0f MiB | | | | 2 | %.2f | %.2f | %.2f | |\n", name, mb,
           pageable * 1e3, pageable / bound, serial / pageable);
    bench_record(a, "stream", name, "upload_ms", up * 1e3, "ms");
    bench_record(a, "stream", name, "compute_ms", comp * 1e3, "ms");
    bench_record(a, "stream", name, "serial_ms", serial * 1e3, "ms");
    bench_record(a, "stream", name, "pageable_depth2_ms", pageable * 1e3, "ms");
    if (!equal) failed = 1;
  }
  fflush(stdout);
  free(ts);
  free(tp);
  for (int d = 0; d < 3; d++) free(tq[d]);
  free(qh);
  for (int e = 0; e < NEST; e++) {
    free(pk[e]);
    free(pv[e]);
    tabcl_stream_host_free(ctx, c.k[e]);
    tabcl_stream_host_free(ctx, c.v[e]);
    tabcl__buffer_release(c.out_serial[e]);
    tabcl__buffer_release(c.out_stream[e]);
  }
  tabcl__buffer_release(c.q);
  tabcl__buffer_release(c.kd);
  tabcl__buffer_release(c.vd);
  return failed;
}

int bench_stream(tabcl_context *ctx, const bench_args *a) {
  printf("Serial: upload K and V, then attention, per estimator on one queue. Streamed: "
         "tabcl_stream_sdpa_cl, K and V from pinned memory (last row: pageable). Upload and "
         "compute: sums of the serial run's device times; serial and streamed: wall-clock, "
         "median of the repetitions.\n\n");
  printf("| case | K+V | upload ms | compute ms | serial ms | depth | streamed ms | "
         "streamed / max(upload, compute) | serial / streamed | outputs equal |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  int failed = run_case(ctx, a, TABCL_F16);
  failed |= run_case(ctx, a, TABCL_F32);
  return failed;
}
