/* Streams (tabcl_stream_*): host buffers uploaded on the transfer queue
 * while the compute queue works, each device buffer refilled only after
 * the event its last use gave back.
 *
 * The race tests make the compute deliberately slow: between the hand-out
 * and the take-back of every item a kernel spins (built here from source
 * with OpenCL itself, not part of the library) before attention or a copy
 * reads the buffers, while the uploads of later items are enqueued. A
 * refill that did not wait for the given-back event would land during the
 * spin and the reads would see the next item's data, so every output is
 * compared bit for bit with a serial run (upload, then compute, per item),
 * and the serial run with a float64 host loop. Depths 1, 2 and 3; items are
 * given back in random order, several out at once. The oclgrind_stream
 * suite repeats that at tiny shapes under oclgrind. The failure sweep fails
 * each host allocation and each OpenCL call of a whole stream's life in
 * turn: every failing call reports it, nothing leaks, and every item handed
 * out holds exactly its data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "tabcl/tabcl_cl.h"
#include "tt.h"

#define MAXN 24

/* ---- elements and the float64 reference ---------------------------------
 * Local on purpose: f32 and f16 only, and this file does not depend on
 * where the shared test helpers live. f16 data are drawn as bit patterns
 * of normal numbers, so no conversion is needed to make them. */

static size_t dsize(tabcl_dtype dt) { return dt == TABCL_F32 ? 4 : 2; }

static void store_random(void *p, size_t i, tabcl_dtype dt, tt_rng *r, double scale) {
  if (dt == TABCL_F32) {
    ((float *)p)[i] = (float)(tt_normal(r) * scale);
  } else {
    /* sign, exponent 12..15 (|x| in [2^-3, 2)), any mantissa */
    uint16_t h = (uint16_t)((tt_below(r, 2) << 15) | ((12 + tt_below(r, 4)) << 10) |
                            tt_below(r, 1024));
    ((uint16_t *)p)[i] = h;
  }
}

static double load(const void *p, size_t i, tabcl_dtype dt) {
  if (dt == TABCL_F32) return ((const float *)p)[i];
  const uint16_t h = ((const uint16_t *)p)[i];
  const int e = (h >> 10) & 31, m = h & 1023;
  const double sign = h & 0x8000 ? -1.0 : 1.0;
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * (e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp((double)m, -24));
}

/* Attention without a mask in float64 on the stored inputs. */
static void ref_sdpa(const tabcl_sdpa_desc *d, const void *q, const void *k, const void *v,
                     double *out) {
  const int64_t Lq = d->q_len, Lk = d->kv_len;
  const int Hq = d->q_heads, Hk = d->kv_heads, D = d->head_dim, G = Hq / Hk;
  const double scale = 1.0 / sqrt((double)D);
  double *sc = malloc(((size_t)Lk + 1) * sizeof *sc);
  cr_assert(sc);
  for (int64_t b = 0; b < d->batch; b++)
    for (int64_t i = 0; i < Lq; i++)
      for (int h = 0; h < Hq; h++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < Lk; j++) {
          double dot = 0;
          for (int c = 0; c < D; c++)
            dot += load(q, (size_t)(((b * Lq + i) * Hq + h) * D + c), d->dtype) *
                   load(k, (size_t)(((b * Lk + j) * Hk + h / G) * D + c), d->dtype);
          sc[j] = d->causal && j > i ? -INFINITY : dot * scale;
          if (sc[j] > mx) mx = sc[j];
        }
        for (int64_t j = 0; j < Lk; j++) sum += sc[j] = mx == -INFINITY ? 0 : exp(sc[j] - mx);
        for (int c = 0; c < D; c++) {
          double acc = 0;
          for (int64_t j = 0; j < Lk; j++)
            acc += sc[j] * load(v, (size_t)(((b * Lk + j) * Hk + h / G) * D + c), d->dtype);
          out[((b * Lq + i) * Hq + h) * D + c] = sum > 0 ? acc / sum : 0;
        }
      }
  free(sc);
}

/* ---- the slow compute ---------------------------------------------------- */

static const char *spin_src =
    "__kernel void spin(__global uint *sink, uint iters) {\n"
    "  uint x = get_global_id(0) + 1u;\n"
    "  for (uint i = 0; i < iters; i++) x = x * 1664525u + 1013904223u;\n"
    "  sink[get_global_id(0)] = x;\n"
    "}\n"
    /* spins, then copies: the reads come long after the kernel started */
    "__kernel void spin_copy(__global const uchar *src, __global uchar *dst, uint n,\n"
    "                        uint iters, __global uint *sink) {\n"
    "  uint x = get_global_id(0) + 1u;\n"
    "  for (uint i = 0; i < iters; i++) x = x * 1664525u + 1013904223u;\n"
    "  sink[get_global_id(0)] = x;\n"
    "  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) dst[i] = src[i];\n"
    "}\n";

#define SPIN_ITEMS 16

typedef struct slow {
  tabcl_context *ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel spin, spin_copy;
  cl_mem sink;
  cl_uint iters;
} slow;

static void slow_init(slow *s, tabcl_context *ctx, cl_uint iters) {
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  s->q = tabcl_context_cl_queue(ctx);
  s->iters = iters;
  cl_context cl = tabcl_context_cl_context(ctx);
  cl_device_id dev = tabcl_context_cl_device(ctx);
  cl_int err;
  s->prog = clCreateProgramWithSource(cl, 1, &spin_src, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  err = clBuildProgram(s->prog, 1, &dev, "", NULL, NULL);
  cr_assert_eq(err, CL_SUCCESS, "building the spin kernels: %d", err);
  s->spin = clCreateKernel(s->prog, "spin", &err);
  cr_assert_eq(err, CL_SUCCESS);
  s->spin_copy = clCreateKernel(s->prog, "spin_copy", &err);
  cr_assert_eq(err, CL_SUCCESS);
  s->sink = clCreateBuffer(cl, CL_MEM_READ_WRITE, SPIN_ITEMS * sizeof(cl_uint), NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
}

static void slow_fini(slow *s) {
  clReleaseMemObject(s->sink);
  clReleaseKernel(s->spin);
  clReleaseKernel(s->spin_copy);
  clReleaseProgram(s->prog);
}

/* Mesa's llvmpipe ends every loop of a kernel after 65,535 iterations in
   all (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, shared by every loop of a
   shader): a longer spin silently cut the copy loop after it short, which
   read as a stream handing out wrong data. So a spin is a chain of launches
   of at most SPIN_CHUNK iterations each, leaving room for the copy loop. */
#define SPIN_CHUNK 32768u

static cl_event spin_launch(slow *s, cl_uint iters, cl_event after) {
  size_t g = SPIN_ITEMS;
  cl_event ev = NULL;
  cr_assert_eq(clSetKernelArg(s->spin, 0, sizeof s->sink, &s->sink), CL_SUCCESS);
  cr_assert_eq(clSetKernelArg(s->spin, 1, sizeof iters, &iters), CL_SUCCESS);
  cr_assert_eq(clEnqueueNDRangeKernel(s->q, s->spin, 1, NULL, &g, NULL, 1, &after, &ev),
               CL_SUCCESS);
  return ev;
}

/* Spins of `iters` in all on the compute queue after `after`; returns the
   last one's event (a new reference to `after` when there is nothing to
   spin). */
static cl_event spin_chain(slow *s, cl_uint iters, cl_event after) {
  cl_event last = after;
  clRetainEvent(after);
  while (iters) {
    const cl_uint n = iters < SPIN_CHUNK ? iters : SPIN_CHUNK;
    cl_event ev = spin_launch(s, n, last);
    clReleaseEvent(last);
    last = ev;
    iters -= n;
  }
  return last;
}

/* A spin on the compute queue after `after`; returns its event. */
static cl_event slow_spin(slow *s, cl_event after) {
  cl_event ev = spin_chain(s, s->iters, after);
  clFlush(s->q);
  return ev;
}

/* ---- estimators: a query batch, K and V per estimator, serial outputs ---- */

typedef struct kvset {
  tabcl_context *ctx;
  int n, pinned;
  tabcl_sdpa_desc d;             /* kv_len per estimator below */
  int64_t kv_len[MAXN];
  void *q, *k[MAXN], *v[MAXN];
  size_t qb, kvb[MAXN];
  void *serial[MAXN];            /* tabcl_sdpa_host per estimator */
} kvset;

static void *alloc_host(kvset *s, size_t bytes) {
  void *p = NULL;
  if (s->pinned) tt_assert_ok(tabcl_stream_host_alloc(s->ctx, bytes, &p));
  else p = malloc(bytes ? bytes : 1);
  cr_assert(p);
  return p;
}

static void kvset_fill(kvset *s, tt_rng *r, int check_f64);

static void kvset_make(kvset *s, tabcl_context *ctx, tt_rng *r, int n, tabcl_dtype dt,
                       int64_t max_len, int pinned, int check_f64) {
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  s->n = n;
  s->pinned = pinned;
  tabcl_sdpa_desc d = {0};
  d.batch = 1 + (int64_t)tt_below(r, 2);
  d.q_len = 3 + (int64_t)tt_below(r, 9);
  d.q_heads = 4;
  d.kv_heads = 2;
  d.head_dim = 16;
  d.dtype = dt;
  d.causal = tt_below(r, 4) == 0;
  s->d = d;
  /* one empty estimator now and then: a zero-byte item */
  for (int e = 0; e < n; e++)
    s->kv_len[e] = tt_below(r, 10) == 0 ? 0 : 1 + (int64_t)tt_below(r, (uint64_t)max_len);
  kvset_fill(s, r, check_f64);
}

/* Values for s's shape (s->d, s->n, s->kv_len), and the serial outputs. */
static void kvset_fill(kvset *s, tt_rng *r, int check_f64) {
  const tabcl_sdpa_desc d = s->d;
  const tabcl_dtype dt = d.dtype;
  const size_t es = dsize(dt);
  s->qb = (size_t)(d.batch * d.q_len * d.q_heads * d.head_dim) * es;
  s->q = malloc(s->qb);
  for (size_t i = 0; i < s->qb / es; i++) store_random(s->q, i, dt, r, 0.7);
  for (int e = 0; e < s->n; e++) {
    s->kvb[e] = (size_t)(d.batch * s->kv_len[e] * d.kv_heads * d.head_dim) * es;
    s->k[e] = alloc_host(s, s->kvb[e]);
    s->v[e] = alloc_host(s, s->kvb[e]);
    for (size_t i = 0; i < s->kvb[e] / es; i++) {
      store_random(s->k[e], i, dt, r, 0.7);
      store_random(s->v[e], i, dt, r, 1.0);
    }
    tabcl_sdpa_desc de = d;
    de.kv_len = s->kv_len[e];
    s->serial[e] = malloc(s->qb);
    tt_assert_ok(tabcl_sdpa_host(s->ctx, &de, s->q, s->k[e], s->v[e], NULL, s->serial[e]));
    if (check_f64) {
      /* the serial run itself against float64: relative to max(1, |ref|),
         f32 within 2e-4, f16 within 4e-3 (as test_sdpa holds them) */
      const size_t nq = s->qb / es;
      double *ref = malloc(nq * sizeof *ref + 1), worst = 0;
      ref_sdpa(&de, s->q, s->k[e], s->v[e], ref);
      for (size_t i = 0; i < nq; i++) {
        double x = load(s->serial[e], i, dt), err = fabs(x - ref[i]) / fmax(1.0, fabs(ref[i]));
        if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
      }
      cr_assert(worst <= (dt == TABCL_F32 ? 2e-4 : 4e-3), "serial estimator %d: error %g", e,
                worst);
      free(ref);
    }
  }
}

static void kvset_free(kvset *s) {
  for (int e = 0; e < s->n; e++) {
    if (s->pinned) {
      tt_assert_ok(tabcl_stream_host_free(s->ctx, s->k[e]));
      tt_assert_ok(tabcl_stream_host_free(s->ctx, s->v[e]));
    } else {
      free(s->k[e]);
      free(s->v[e]);
    }
    free(s->serial[e]);
  }
  free(s->q);
}

/* A leak baseline for attention tests. The programs a context builds stay
   in it, which is no leak, and which ones a call needs depends on its sizes
   (on Mesa's llvmpipe long key rows leave the CPU kernel for the fused one,
   under its loop limit): so the baseline counts the context's programs too,
   and each program built after it may hold its list entry's three
   allocations (entry, name, options; runtime/program.c). Warming up builds
   the common ones and the loop probe first. */
typedef struct stream_base {
  tt_live live;
  uint64_t programs;
} stream_base;

static uint64_t programs_of(tabcl_context *ctx) {
  tabcl_stats st;
  tabcl_context_stats(ctx, &st);
  return st.programs_built + st.programs_from_cache;
}

static stream_base warm_baseline(tabcl_context *ctx, tt_rng *r) {
  uint64_t limit;
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  for (int dt = 0; dt < 2; dt++) {
    kvset s;
    kvset_make(&s, ctx, r, 1, dt ? TABCL_F16 : TABCL_F32, 4, 0, 0);
    kvset_free(&s);
  }
  const stream_base b = {tt_live_now(), programs_of(ctx)};
  return b;
}

static void expect_no_leak_but_programs(tabcl_context *ctx, stream_base b) {
  const tt_live now = tt_live_now();
  const long built = (long)(programs_of(ctx) - b.programs);
  cr_expect_eq(now.allocs - b.live.allocs, 3 * built,
               "host allocations leaked: %ld live, %ld before, %ld programs built since (3 "
               "allocations each)", now.allocs, b.live.allocs, built);
  cr_expect_eq(now.mems, b.live.mems, "device buffers leaked: %ld live, %ld before", now.mems,
               b.live.mems);
}

static tabcl_sdpa_desc kvset_desc(const kvset *s, int e) {
  tabcl_sdpa_desc d = s->d;
  d.kv_len = s->kv_len[e];
  return d;
}

static void stream_desc_of(const kvset *s, int depth, const void **host, size_t *bytes,
                           tabcl_stream_desc *sd) {
  for (int e = 0; e < s->n; e++) {
    host[2 * e] = s->k[e];
    host[2 * e + 1] = s->v[e];
    bytes[2 * e] = bytes[2 * e + 1] = s->kvb[e];
  }
  tabcl_stream_desc x = {s->n, 2, depth, host, bytes};
  *sd = x;
}

static cl_mem dev_buffer(tabcl_context *ctx, size_t bytes) {
  cl_int err;
  cl_mem m = clCreateBuffer(tabcl_context_cl_context(ctx), CL_MEM_READ_WRITE, bytes ? bytes : 16,
                            NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  return m;
}

static void dev_read(tabcl_context *ctx, cl_mem m, size_t bytes, void *dst) {
  if (!bytes) return;
  cr_assert_eq(clEnqueueReadBuffer(tabcl_context_cl_queue(ctx), m, CL_TRUE, 0, bytes, dst, 0,
                                   NULL, NULL), CL_SUCCESS);
}

/* ---- the streamed run by hand: next, spin, attention (or a copy), done ---- */

/* Hands out items while their slots are free and gives back a random one
   of those out otherwise, so up to `depth` are out at once and they come
   back out of order. copy = 0: attention of q against the item's K and V
   into out[e]; copy = 1: the caller's own kernel copies K into kout[e]. */
static void stream_by_hand(kvset *s, slow *sl, tt_rng *r, int depth, int copy) {
  tabcl_context *ctx = s->ctx;
  const void *host[2 * MAXN];
  size_t bytes[2 * MAXN];
  tabcl_stream_desc sd;
  stream_desc_of(s, depth, host, bytes, &sd);
  tabcl_stream *st = NULL;
  tt_assert_ok(tabcl_stream_create(ctx, &sd, &st));
  cl_mem qb = dev_buffer(ctx, s->qb), out[MAXN];
  cr_assert_eq(clEnqueueWriteBuffer(tabcl_context_cl_queue(ctx), qb, CL_TRUE, 0, s->qb, s->q, 0,
                                    NULL, NULL), CL_SUCCESS);
  cl_event done[MAXN] = {0};
  int out_now[MAXN], nout = 0, back[MAXN] = {0};
  int64_t next = 0;
  for (int e = 0; e < s->n; e++) out[e] = dev_buffer(ctx, copy ? s->kvb[e] : s->qb);
  while (next < s->n || nout) {
    int can = next < s->n && (next < depth || back[next - depth]);
    if (can && (nout == 0 || tt_below(r, 3) != 0)) {
      int64_t item = -1;
      cl_mem mem[2];
      cl_event ready = NULL;
      tt_assert_ok(tabcl_stream_next(st, &item, mem, &ready));
      cr_assert_eq(item, next);
      cr_assert_eq(tabcl_stream_position(st), next + 1);
      const int e = (int)item;
      if (copy) {
        cl_uint nb = (cl_uint)s->kvb[e];
        size_t g = SPIN_ITEMS;
        /* the spin before the copy, but for one chunk done by spin_copy */
        const cl_uint last = sl->iters < SPIN_CHUNK ? sl->iters : SPIN_CHUNK;
        cl_event spun = spin_chain(sl, sl->iters - last, ready);
        cr_assert_eq(clSetKernelArg(sl->spin_copy, 0, sizeof(cl_mem), &mem[0]), CL_SUCCESS);
        cr_assert_eq(clSetKernelArg(sl->spin_copy, 1, sizeof(cl_mem), &out[e]), CL_SUCCESS);
        cr_assert_eq(clSetKernelArg(sl->spin_copy, 2, sizeof nb, &nb), CL_SUCCESS);
        cr_assert_eq(clSetKernelArg(sl->spin_copy, 3, sizeof last, &last), CL_SUCCESS);
        cr_assert_eq(clSetKernelArg(sl->spin_copy, 4, sizeof(cl_mem), &sl->sink), CL_SUCCESS);
        cr_assert_eq(clEnqueueNDRangeKernel(sl->q, sl->spin_copy, 1, NULL, &g, NULL, 1, &spun,
                                            &done[e]), CL_SUCCESS);
        clReleaseEvent(spun);
        clFlush(sl->q);
      } else {
        cl_event spun = slow_spin(sl, ready);
        tabcl_sdpa_desc d = kvset_desc(s, e);
        tt_assert_ok(tabcl_sdpa_cl(ctx, &d, qb, mem[0], mem[1], NULL, out[e], 1, &spun, &done[e]));
        clReleaseEvent(spun);
      }
      clReleaseEvent(ready);
      out_now[nout++] = e;
      next++;
    } else {
      int pick = (int)tt_below(r, (uint64_t)nout);
      const int e = out_now[pick];
      out_now[pick] = out_now[--nout];
      tt_assert_ok(tabcl_stream_done(st, e, done[e]));
      back[e] = 1;
    }
  }
  tabcl_stream_destroy(st);
  for (int e = 0; e < s->n; e++) {
    /* destroy waited for every event given back */
    cl_int est = -1;
    cr_assert_eq(clGetEventInfo(done[e], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof est, &est,
                                NULL), CL_SUCCESS);
    cr_expect_eq(est, CL_COMPLETE, "item %d: its event had not ended when destroy returned", e);
    clReleaseEvent(done[e]);
    const size_t nb = copy ? s->kvb[e] : s->qb;
    uint8_t *got = malloc(nb + 1);
    dev_read(ctx, out[e], nb, got);
    if (copy)
      cr_assert(!memcmp(got, s->k[e], nb), "depth %d: item %d's copy differs from its K", depth, e);
    else
      cr_assert(!memcmp(got, s->serial[e], nb),
                "depth %d: estimator %d's streamed attention differs from the serial run",
                depth, e);
    free(got);
    clReleaseMemObject(out[e]);
  }
  clReleaseMemObject(qb);
}

Test(stream, attention_against_serial_with_slow_compute) {
  tt_rng r = {tt_seed("stream.attention_against_serial_with_slow_compute")};
  tabcl_context *ctx = tt_context();
  slow sl;
  slow_init(&sl, ctx, 400000);
  stream_base base = warm_baseline(ctx, &r);
  for (int round = 0; round < 4; round++) {
    kvset s;
    kvset_make(&s, ctx, &r, 10, round & 1 ? TABCL_F16 : TABCL_F32, 300, round >= 2, round < 2);
    for (int depth = 1; depth <= 3; depth++) stream_by_hand(&s, &sl, &r, depth, 0);
    kvset_free(&s);
  }
  expect_no_leak_but_programs(ctx, base);
  slow_fini(&sl);
  tabcl_context_destroy(ctx);
}

Test(stream, own_kernel_copies_exactly) {
  tt_rng r = {tt_seed("stream.own_kernel_copies_exactly")};
  tabcl_context *ctx = tt_context();
  slow sl;
  slow_init(&sl, ctx, 400000);
  stream_base base = warm_baseline(ctx, &r);
  for (int round = 0; round < 2; round++) {
    kvset s;
    kvset_make(&s, ctx, &r, MAXN, TABCL_F32, 400, round, 0);
    for (int depth = 1; depth <= 3; depth++) stream_by_hand(&s, &sl, &r, depth, 1);
    kvset_free(&s);
  }
  expect_no_leak_but_programs(ctx, base);
  slow_fini(&sl);
  tabcl_context_destroy(ctx);
}

/* ---- the convenience calls ---------------------------------------------- */

static void convenience(kvset *s, int depth, int device_out) {
  tabcl_context *ctx = s->ctx;
  void *out[MAXN];
  for (int e = 0; e < s->n; e++) {
    out[e] = malloc(s->qb + 1);
    memset(out[e], 0xCD, s->qb + 1);
  }
  if (!device_out) {
    tt_assert_ok(tabcl_stream_sdpa_host(ctx, &s->d, s->n, s->kv_len, s->q,
                                        (const void *const *)s->k, (const void *const *)s->v,
                                        depth, out));
  } else {
    cl_mem qb = dev_buffer(ctx, s->qb), ob[MAXN];
    cr_assert_eq(clEnqueueWriteBuffer(tabcl_context_cl_queue(ctx), qb, CL_TRUE, 0, s->qb, s->q, 0,
                                      NULL, NULL), CL_SUCCESS);
    for (int e = 0; e < s->n; e++) ob[e] = dev_buffer(ctx, s->qb);
    cl_event ev = NULL;
    tt_assert_ok(tabcl_stream_sdpa_cl(ctx, &s->d, s->n, s->kv_len, qb, (const void *const *)s->k,
                                      (const void *const *)s->v, depth, ob, 0, NULL, &ev));
    cr_assert(ev);
    cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
    for (int e = 0; e < s->n; e++) {
      dev_read(ctx, ob[e], s->qb, out[e]);
      clReleaseMemObject(ob[e]);
    }
    clReleaseMemObject(qb);
  }
  for (int e = 0; e < s->n; e++) {
    cr_assert(!memcmp(out[e], s->serial[e], s->qb),
              "%s, depth %d: estimator %d differs from the serial run",
              device_out ? "tabcl_stream_sdpa_cl" : "tabcl_stream_sdpa_host", depth, e);
    cr_assert_eq(((uint8_t *)out[e])[s->qb], 0xCD, "estimator %d: written past its end", e);
    free(out[e]);
  }
}

Test(stream, convenience_calls_equal_serial) {
  tt_rng r = {tt_seed("stream.convenience_calls_equal_serial")};
  tabcl_context *ctx = tt_context();
  stream_base base = warm_baseline(ctx, &r);
  for (int round = 0; round < 4; round++) {
    kvset s;
    kvset_make(&s, ctx, &r, 8, round & 1 ? TABCL_F16 : TABCL_F32, 500, round >= 2, 0);
    for (int depth = 1; depth <= 3; depth++) {
      convenience(&s, depth, 0);
      convenience(&s, depth, 1);
    }
    /* depth beyond the count, and one estimator */
    convenience(&s, 64, 0);
    s.n = 1;
    convenience(&s, 2, 1);
    s.n = 8;
    kvset_free(&s);
  }
  expect_no_leak_but_programs(ctx, base);
  tabcl_context_destroy(ctx);
}

/* A stream's buffers go back to the context's pool behind a marker that
   waits for their last use; a later call must not be handed them before
   that. The first call's attention is held back by a user event while the
   second call (other K and V) uploads: were the first call's buffers
   handed to it, its uploads would overwrite K and V the first attention
   has not read yet. Once both are done, a third call reuses them. */

static void gated_call(kvset *s, cl_mem qb, cl_mem *ob, cl_uint nw, const cl_event *w,
                       cl_event *ev) {
  tabcl_context *ctx = s->ctx;
  for (int e = 0; e < s->n; e++) ob[e] = dev_buffer(ctx, s->qb);
  tt_assert_ok(tabcl_stream_sdpa_cl(ctx, &s->d, s->n, s->kv_len, qb, (const void *const *)s->k,
                                    (const void *const *)s->v, 2, ob, nw, w, ev));
}

static void expect_serial(kvset *s, cl_mem *ob, const char *which) {
  uint8_t *got = malloc(s->qb + 1);
  for (int e = 0; e < s->n; e++) {
    dev_read(s->ctx, ob[e], s->qb, got);
    cr_expect(!memcmp(got, s->serial[e], s->qb), "%s call: estimator %d differs from the serial "
              "run", which, e);
    clReleaseMemObject(ob[e]);
  }
  free(got);
}

Test(stream, pooled_buffers_wait_for_their_last_use) {
  tt_rng r = {tt_seed("stream.pooled_buffers_wait_for_their_last_use")};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "upload.pool=%d", 256 << 20);
  stream_base base = warm_baseline(ctx, &r);
  for (int round = 0; round < 3; round++) {
    kvset a, b;
    /* the same shape and lengths, other values: the pool would match */
    kvset_make(&a, ctx, &r, 4, round & 1 ? TABCL_F16 : TABCL_F32, 300, 0, 0);
    memset(&b, 0, sizeof b);
    b.ctx = ctx, b.n = a.n, b.d = a.d;
    memcpy(b.kv_len, a.kv_len, sizeof b.kv_len);
    kvset_fill(&b, &r, 0);
    cl_int err = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(tabcl_context_cl_context(ctx), &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_mem qa = dev_buffer(ctx, a.qb), qb = dev_buffer(ctx, b.qb), oa[MAXN], ob[MAXN];
    /* before the gate: a blocking write would wait behind it on the queue */
    cr_assert_eq(clEnqueueWriteBuffer(tabcl_context_cl_queue(ctx), qa, CL_TRUE, 0, a.qb, a.q, 0,
                                      NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clEnqueueWriteBuffer(tabcl_context_cl_queue(ctx), qb, CL_TRUE, 0, b.qb, b.q, 0,
                                      NULL, NULL), CL_SUCCESS);
    cl_event ea = NULL, eb = NULL;
    gated_call(&a, qa, oa, 1, &gate, &ea);
    const long pooled = tabcl__pool_live();
    gated_call(&b, qb, ob, 0, NULL, &eb);
    cr_assert_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    cr_assert_eq(clWaitForEvents(1, &ea), CL_SUCCESS);
    cr_assert_eq(clWaitForEvents(1, &eb), CL_SUCCESS);
    expect_serial(&a, oa, "the held-back");
    expect_serial(&b, ob, "the second");
    /* everything has run: the third call is handed pooled buffers */
    cr_expect_gt(pooled, 0, "round %d: the held-back call's buffers were not pooled", round);
    cl_event ec = NULL;
    const long before = tabcl__pool_live();
    gated_call(&a, qa, oa, 0, NULL, &ec);
    cr_expect_eq(tabcl__pool_live(), before, "round %d: the third call made new buffers (%ld "
                 "pooled before it, %ld after)", round, before, tabcl__pool_live());
    cr_assert_eq(clWaitForEvents(1, &ec), CL_SUCCESS);
    expect_serial(&a, oa, "the third");
    clReleaseEvent(ea), clReleaseEvent(eb), clReleaseEvent(ec), clReleaseEvent(gate);
    clReleaseMemObject(qa), clReleaseMemObject(qb);
    kvset_free(&a);
    kvset_free(&b);
  }
  expect_no_leak_but_programs(ctx, base);
  tabcl_context_destroy(ctx);
}

/* README's promise: a stream's buffers go back to the context's pool when
   it ends, so a model streaming the same estimators every prediction
   allocates them once. Items given back after completed events, the
   stream destroyed and the queue finished: the next stream of the same
   sizes is handed the same buffers, and tabcl_stream_sdpa_host (whose
   streams end with no event left to wait for) gives them back too. The old
   buffers are retained here, so a fresh buffer can never take the address
   of a released one and pass for it. */

static int pool_holds(tabcl_context *ctx, cl_mem m) {
  int found = 0;
  pthread_mutex_lock(&ctx->pool.lock);
  for (int i = 0; i < TABCL__POOL_SLOTS; i++) found |= ctx->pool.slot[i].mem == m;
  pthread_mutex_unlock(&ctx->pool.lock);
  return found;
}

/* Creates the stream, takes each item and gives it back after a marker
   that has completed, destroys the stream and finishes the queue; got[i]:
   item i's buffer, retained where keep is set. Returns how many buffers the
   create took from the pool. */
static long stream_round_trip(tabcl_context *ctx, const tabcl_stream_desc *sd, cl_mem *got,
                              int keep) {
  cl_command_queue q = tabcl_context_cl_queue(ctx);
  tabcl_stream *st = NULL;
  const long pooled = tabcl__pool_live();
  tt_assert_ok(tabcl_stream_create(ctx, sd, &st));
  const long taken = pooled - tabcl__pool_live();
  for (int64_t i = 0; i < sd->count; i++) {
    int64_t item = -1;
    cl_event ready = NULL, done = NULL;
    tt_assert_ok(tabcl_stream_next(st, &item, &got[i], &ready));
    cr_assert_eq(item, i);
    if (keep) cr_assert_eq(clRetainMemObject(got[i]), CL_SUCCESS);
    cr_assert_eq(clEnqueueMarkerWithWaitList(q, 1, &ready, &done), CL_SUCCESS);
    cr_assert_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    tt_assert_ok(tabcl_stream_done(st, item, done));
    clReleaseEvent(ready);
    clReleaseEvent(done);
  }
  tabcl_stream_destroy(st);
  /* finished by a marker's own event: Mesa's rusticl 22.3 may return from
     clFinish before the commands ran (runtime/buffer.c) */
  tt_assert_ok(tabcl__finish(ctx));
  return taken;
}

Test(stream, destroyed_stream_buffers_are_handed_out_again) {
  tt_rng r = {tt_seed("stream.destroyed_stream_buffers_are_handed_out_again")};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "upload.pool=%d", 16 << 20);
  stream_base base = warm_baseline(ctx, &r);
  /* the warm-up's temporaries out of the pool: its slots are this test's */
  tabcl__pool_trim(ctx);
  enum { ITEM = 64 << 10, ROWS = ITEM / (16 * 4) };
  float *data = malloc(2 * ITEM);
  for (size_t i = 0; i < 2 * (size_t)ITEM / 4; i++) data[i] = (float)(i % 13) / 13.0f;
  const void *host[2] = {data, (uint8_t *)data + ITEM};
  size_t bytes[2] = {ITEM, ITEM};
  const tabcl_stream_desc sd = {2, 1, 2, host, bytes};
  cl_mem first[2], again[2];
  stream_round_trip(ctx, &sd, first, 1);
  for (int i = 0; i < 2; i++)
    cr_expect(pool_holds(ctx, first[i]), "item %d's buffer is not back in the pool after destroy",
              i);
  const long second = stream_round_trip(ctx, &sd, again, 0);
  cr_expect_eq(second, 2, "the second stream took %ld buffers from the pool, not 2", second);
  for (int i = 0; i < 2; i++)
    cr_expect(again[i] == first[0] || again[i] == first[1],
              "the second stream's item %d got a new buffer, not one of the first stream's", i);
  cr_expect(again[0] != again[1], "both items got the same buffer");
  /* Attention streams two parts (K, V) of the same 64 KiB per estimator:
     two of its four buffers come from the pool, and all go back. */
  tabcl_sdpa_desc d = {0};
  d.batch = 1, d.q_len = 1, d.kv_len = ROWS, d.q_heads = d.kv_heads = 1, d.head_dim = 16;
  d.dtype = TABCL_F32;
  float qv[16] = {0}, out0[16], out1[16];
  void *outs[2] = {out0, out1};
  tt_assert_ok(tabcl_stream_sdpa_host(ctx, &d, 2, NULL, qv, host, host, 2, outs));
  tt_assert_ok(tabcl__finish(ctx));
  for (int i = 0; i < 2; i++)
    cr_expect(pool_holds(ctx, first[i]), "buffer %d is not back in the pool after "
              "tabcl_stream_sdpa_host", i);
  const long taken = stream_round_trip(ctx, &sd, again, 0);
  cr_expect_eq(taken, 2, "the stream after tabcl_stream_sdpa_host took %ld buffers from the "
               "pool, not 2", taken);
  for (int i = 0; i < 2; i++) clReleaseMemObject(first[i]);
  free(data);
  expect_no_leak_but_programs(ctx, base);
  tabcl_context_destroy(ctx);
}

Test(stream, destroy_waits_for_work_in_flight) {
  tt_rng r = {tt_seed("stream.destroy_waits_for_work_in_flight")};
  tabcl_context *ctx = tt_context();
  slow sl;
  slow_init(&sl, ctx, 2000000);
  stream_base base = warm_baseline(ctx, &r);
  for (int depth = 1; depth <= 3; depth++) {
    kvset s;
    kvset_make(&s, ctx, &r, 6, TABCL_F32, 300, depth == 2, 0);
    const void *host[2 * MAXN];
    size_t bytes[2 * MAXN];
    tabcl_stream_desc sd;
    stream_desc_of(&s, depth, host, bytes, &sd);
    /* right after create: uploads in flight */
    tabcl_stream *st = NULL;
    tt_assert_ok(tabcl_stream_create(ctx, &sd, &st));
    tabcl_stream_destroy(st);
    /* items given back with a slow kernel still running, refills waiting on
       it, and one item still out */
    tt_assert_ok(tabcl_stream_create(ctx, &sd, &st));
    cl_event spun[3] = {0};
    for (int e = 0; e < depth; e++) {
      int64_t item;
      cl_mem mem[2];
      cl_event ready;
      tt_assert_ok(tabcl_stream_next(st, &item, mem, &ready));
      spun[e] = slow_spin(&sl, ready);
      clReleaseEvent(ready);
      if (e + 1 < depth || depth == 1) tt_assert_ok(tabcl_stream_done(st, item, spun[e]));
    }
    tabcl_stream_destroy(st);
    for (int e = 0; e < depth; e++) {
      cl_int est = -1;
      clGetEventInfo(spun[e], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof est, &est, NULL);
      if (e + 1 < depth || depth == 1)
        cr_expect_eq(est, CL_COMPLETE, "depth %d: destroy returned before the event given back "
                     "with item %d", depth, e);
    }
    /* the caller's host memory may go now: ASan would see a late upload */
    kvset_free(&s);
    clFinish(sl.q);
    for (int e = 0; e < depth; e++) clReleaseEvent(spun[e]);
  }
  tabcl_stream_destroy(NULL);
  expect_no_leak_but_programs(ctx, base);
  slow_fini(&sl);
  tabcl_context_destroy(ctx);
}

/* ---- bad input ------------------------------------------------------------ */

static void expect_invalid(tabcl_status s, const char *what, const char *needle) {
  cr_expect_eq(s, TABCL_INVALID_ARGUMENT, "%s: %s (%s)", what, tabcl_status_name(s),
               tabcl_last_error());
  cr_expect(strstr(tabcl_last_error(), needle), "%s: message \"%s\" lacks \"%s\"", what,
            tabcl_last_error(), needle);
}

Test(stream, bad_input) {
  tabcl_context *ctx = tt_context();
  tt_live base = tt_live_now();
  uint8_t a[64] = {1}, b[64] = {2};
  const void *host[4] = {a, b, a, NULL};
  size_t bytes[4] = {64, 64, 32, 0};
  tabcl_stream_desc d = {2, 2, 1, host, bytes};
  tabcl_stream *st = (tabcl_stream *)&d, *keep = st;
  expect_invalid(tabcl_stream_create(NULL, &d, &st), "ctx NULL", "tabcl_stream_create: ctx is NULL");
  expect_invalid(tabcl_stream_create(ctx, NULL, &st), "desc NULL", "desc is NULL");
  expect_invalid(tabcl_stream_create(ctx, &d, NULL), "out NULL", "out is NULL");
  tabcl_stream_desc x = d;
  x.count = -1;
  expect_invalid(tabcl_stream_create(ctx, &x, &st), "count -1", "count is -1");
  x = d, x.parts = 0;
  expect_invalid(tabcl_stream_create(ctx, &x, &st), "parts 0", "parts is 0");
  x = d, x.parts = TABCL_STREAM_MAX_PARTS + 1;
  expect_invalid(tabcl_stream_create(ctx, &x, &st), "parts 9", "parts is 9");
  x = d, x.depth = 0;
  expect_invalid(tabcl_stream_create(ctx, &x, &st), "depth 0", "depth is 0");
  x = d, x.depth = 65;
  expect_invalid(tabcl_stream_create(ctx, &x, &st), "depth 65", "depth is 65");
  x = d, x.host = NULL;
  expect_invalid(tabcl_stream_create(ctx, &x, &st), "host NULL", "host is NULL");
  x = d, x.bytes = NULL;
  expect_invalid(tabcl_stream_create(ctx, &x, &st), "bytes NULL", "bytes is NULL");
  bytes[3] = 5;
  expect_invalid(tabcl_stream_create(ctx, &d, &st), "part NULL", "item 1, part 1: host is NULL for 5 bytes");
  bytes[3] = 0;
  cr_expect_eq(st, keep, "a failed create changed *out");
  tt_expect_no_leak(base);

  /* the calls of a live stream */
  tt_assert_ok(tabcl_stream_create(ctx, &d, &st));
  int64_t item = 77;
  cl_mem mem[2] = {NULL, NULL};
  cl_event ready = NULL, ready2 = NULL;
  expect_invalid(tabcl_stream_next(NULL, &item, mem, &ready), "next st NULL", "st is NULL");
  expect_invalid(tabcl_stream_next(st, NULL, mem, &ready), "next item NULL", "item is NULL");
  expect_invalid(tabcl_stream_next(st, &item, NULL, &ready), "next mem NULL", "mem is NULL");
  expect_invalid(tabcl_stream_next(st, &item, mem, NULL), "next ready NULL", "ready is NULL");
  tt_assert_ok(tabcl_stream_next(st, &item, mem, &ready));
  cr_expect_eq(item, 0);
  int64_t item2 = 77;
  cl_mem mem2[2] = {NULL, NULL};
  expect_invalid(tabcl_stream_next(st, &item2, mem2, &ready2), "next with depth 1 and item 0 out",
                 "item 0 is not given back yet");
  cr_expect(item2 == 77 && !mem2[0] && !ready2, "a refused next changed its outputs");
  expect_invalid(tabcl_stream_done(st, 0, NULL), "done NULL", "done is NULL");
  expect_invalid(tabcl_stream_done(NULL, 0, ready), "done st NULL", "st is NULL");
  expect_invalid(tabcl_stream_done(st, 1, ready), "done of an item not out", "item 1 is not handed out");
  expect_invalid(tabcl_stream_done(st, -1, ready), "done of item -1", "item -1 is not handed out");
  tt_assert_ok(tabcl_stream_done(st, 0, ready));
  expect_invalid(tabcl_stream_done(st, 0, ready), "done twice", "given back already");
  tt_assert_ok(tabcl_stream_next(st, &item2, mem2, &ready2));
  cr_expect_eq(item2, 1);
  expect_invalid(tabcl_stream_next(st, &item, mem, &ready), "next past the end",
                 "all 2 items have been handed out");
  tt_assert_ok(tabcl_stream_done(st, 1, ready2));
  clReleaseEvent(ready);
  clReleaseEvent(ready2);
  tabcl_stream_destroy(st);
  cr_expect_eq(tabcl_stream_position(NULL), 0);

  /* an empty stream is valid and hands out nothing */
  x = d, x.count = 0, x.host = NULL, x.bytes = NULL;
  tt_assert_ok(tabcl_stream_create(ctx, &x, &st));
  expect_invalid(tabcl_stream_next(st, &item, mem, &ready), "next of an empty stream",
                 "all 0 items have been handed out");
  tabcl_stream_destroy(st);

  /* pinned memory */
  void *p = (void *)a;
  expect_invalid(tabcl_stream_host_alloc(NULL, 8, &p), "alloc ctx NULL", "ctx is NULL");
  expect_invalid(tabcl_stream_host_alloc(ctx, 8, NULL), "alloc out NULL", "out is NULL");
  cr_expect_eq(p, (void *)a);
  expect_invalid(tabcl_stream_host_free(ctx, a), "free of a foreign pointer",
                 "is not memory tabcl_stream_host_alloc gave");
  tt_assert_ok(tabcl_stream_host_free(ctx, NULL));
  tt_assert_ok(tabcl_stream_host_alloc(ctx, 0, &p));
  tt_assert_ok(tabcl_stream_host_free(ctx, p));

  /* the convenience calls */
  float q[2 * 4 * 8] = {0}, k[2 * 3 * 8] = {0}, o[2 * 4 * 8];
  const void *ks[2] = {k, k}, *vs[2] = {k, k};
  void *outs[2] = {o, o};
  int64_t lens[2] = {3, 3};
  tabcl_sdpa_desc sd = {1, 4, 3, 2, 1, 8, TABCL_F32, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  expect_invalid(tabcl_stream_sdpa_host(NULL, &sd, 2, lens, q, ks, vs, 2, outs), "sdpa ctx NULL",
                 "tabcl_stream_sdpa_host: ctx is NULL");
  expect_invalid(tabcl_stream_sdpa_host(ctx, NULL, 2, lens, q, ks, vs, 2, outs), "sdpa desc NULL",
                 "desc is NULL");
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, -1, lens, q, ks, vs, 2, outs), "sdpa count -1",
                 "count is -1");
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, 2, lens, q, ks, vs, 0, outs), "sdpa depth 0",
                 "depth is 0");
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, 2, lens, NULL, ks, vs, 2, outs), "sdpa q NULL",
                 "estimator 0: q is NULL");
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, 2, lens, q, NULL, vs, 2, outs), "sdpa k NULL",
                 "k is NULL");
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, 2, lens, q, ks, vs, 2, NULL), "sdpa out NULL",
                 "out is NULL");
  ks[1] = NULL;
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, 2, lens, q, ks, vs, 2, outs), "sdpa k[1] NULL",
                 "estimator 1: k is NULL");
  ks[1] = k;
  lens[1] = -4;
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, 2, lens, q, ks, vs, 2, outs), "sdpa kv_len -4",
                 "estimator 1: kv_len is -4");
  lens[1] = 3;
  sd.mask = TABCL_MASK_BOOL;
  expect_invalid(tabcl_stream_sdpa_host(ctx, &sd, 2, lens, q, ks, vs, 2, outs), "sdpa mask",
                 "desc->mask must be TABCL_MASK_NONE");
  sd.mask = TABCL_MASK_NONE;
  cl_mem ob[2] = {NULL, NULL};
  cl_event ev = (cl_event)q;
  expect_invalid(tabcl_stream_sdpa_cl(ctx, &sd, 2, lens, NULL, ks, vs, 2, ob, 0, NULL, &ev),
                 "sdpa_cl q NULL", "tabcl_stream_sdpa_cl: estimator 0: q is NULL");
  cr_expect_eq(ev, (cl_event)q, "a refused call changed *ev");
  /* no estimator: a valid call, and the event still comes */
  tt_assert_ok(tabcl_stream_sdpa_host(ctx, &sd, 0, NULL, q, NULL, NULL, 1, NULL));
  tt_assert_ok(tabcl_stream_sdpa_cl(ctx, &sd, 0, NULL, (cl_mem)q, NULL, NULL, 1, NULL, 0, NULL, &ev));
  cr_assert(ev);
  cr_expect_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
  clReleaseEvent(ev);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

/* ---- failure injection over a whole stream's life ------------------------ */

#ifdef TABCL_FAULT_INJECTION

/* One stream's life (create; next, check, done for every item; destroy)
   with the n-th host allocation (which = 0) or OpenCL call (which = 1)
   failing. A failed call is made again until it succeeds (an injected
   failure fires once). Returns whether anything fired. Every item handed
   out is read back after its ready event and must be exactly its data. */
static int stream_life(kvset *s, int depth, int which, long n) {
  tabcl_context *ctx = s->ctx;
  const void *host[2 * MAXN];
  size_t bytes[2 * MAXN];
  tabcl_stream_desc sd;
  stream_desc_of(s, depth, host, bytes, &sd);
  cl_command_queue q = tabcl_context_cl_queue(ctx);
  tt_live base = tt_live_now();
  tabcl__clear_error();
  tabcl__fault_set(which ? 0 : n, which ? n : 0);
  tabcl_stream *st = NULL;
  tabcl_status c;
  int failures = 0;
  while ((c = tabcl_stream_create(ctx, &sd, &st)) != TABCL_OK) {
    cr_assert(tabcl__fault_fired(), "create failed with nothing injected: %s", tabcl_last_error());
    cr_assert_neq(tabcl_last_error()[0], '\0');
    cr_assert_null(st, "a failed create set *out");
    tt_live now = tt_live_now();
    cr_assert(now.allocs == base.allocs && now.mems == base.mems,
              "failing create at %ld leaked (%ld allocations, %ld buffers)", n,
              now.allocs - base.allocs, now.mems - base.mems);
    cr_assert(++failures < 4);
  }
  for (int e = 0; e < s->n; e++) {
    int64_t item = -5;
    cl_mem mem[2] = {NULL, NULL};
    cl_event ready = NULL;
    while ((c = tabcl_stream_next(st, &item, mem, &ready)) != TABCL_OK) {
      cr_assert(tabcl__fault_fired(), "next failed with nothing injected: %s", tabcl_last_error());
      cr_assert_neq(tabcl_last_error()[0], '\0');
      cr_assert(item == -5 && !mem[0] && !ready, "a failed next handed something out");
      cr_assert(++failures < 8);
    }
    cr_assert_eq(item, e);
    /* what was handed out is exactly item e, never stale or partial */
    cr_assert_eq(clWaitForEvents(1, &ready), CL_SUCCESS, "item %d: its upload failed", e);
    for (int p = 0; p < 2; p++) {
      uint8_t *got = malloc(s->kvb[e] + 1);
      if (s->kvb[e])
        cr_assert_eq(clEnqueueReadBuffer(q, mem[p], CL_TRUE, 0, s->kvb[e], got, 0, NULL, NULL),
                     CL_SUCCESS);
      cr_assert(!memcmp(got, p ? s->v[e] : s->k[e], s->kvb[e]),
                "failing %s %ld: item %d part %d was handed out with wrong data",
                which ? "OpenCL call" : "allocation", n, e, p);
      free(got);
    }
    /* the caller's last use: a marker after the read */
    cl_event done = NULL;
    cr_assert_eq(clEnqueueMarkerWithWaitList(q, 1, &ready, &done), CL_SUCCESS);
    clReleaseEvent(ready);
    while ((c = tabcl_stream_done(st, e, done)) != TABCL_OK) {
      cr_assert(tabcl__fault_fired(), "done failed with nothing injected: %s", tabcl_last_error());
      const char *msg = tabcl_last_error();
      cr_assert_neq(msg[0], '\0');
      /* a failed refill takes the item back all the same (next retries it) */
      if (strstr(msg, "uploading item")) break;
      cr_assert(++failures < 8);
    }
    clReleaseEvent(done);
  }
  int fired = tabcl__fault_fired();
  tabcl__fault_reset();
  tabcl_stream_destroy(st);
  tt_live now = tt_live_now();
  cr_assert(now.allocs == base.allocs && now.mems == base.mems,
            "failing %s %ld: the stream's life leaked %ld allocations and %ld buffers",
            which ? "OpenCL call" : "allocation", n, now.allocs - base.allocs,
            now.mems - base.mems);
  return fired;
}

static void sweep_life(int which) {
  tt_rng r = {tt_seed(which ? "stream_sweep.life_cl" : "stream_sweep.life_alloc")};
  tabcl_context *ctx = tt_context();
  for (int pinned = 0; pinned < 2; pinned++) {
    kvset s;
    kvset_make(&s, ctx, &r, 5, TABCL_F32, 40, pinned, 0);
    for (int depth = 1; depth <= 3; depth++) {
      long n = 1;
      while (stream_life(&s, depth, which, n)) n++;
      cr_log_info("depth %d: %ld failure points", depth, n - 1);
      cr_assert_gt(n, 1, "no failure point found");
    }
    kvset_free(&s);
  }
  tabcl_context_destroy(ctx);
}

Test(stream_sweep, life_alloc) { sweep_life(0); }
Test(stream_sweep, life_cl) { sweep_life(1); }

/* The convenience calls and pinned memory, swept as test_failure_sweep.c
   sweeps the others: each failure reported, nothing leaked, the next call
   right. */
static void sweep_call(const char *name, int which, tabcl_status (*call)(kvset *, void **),
                       int (*check)(kvset *, void **), kvset *s, void **outs) {
  tt_assert_ok(call(s, outs));   /* programs built outside the window */
  cr_assert(check(s, outs), "%s: the clean call is wrong", name);
  for (long n = 1;; n++) {
    tt_live base = tt_live_now();
    tabcl__clear_error();
    tabcl__fault_set(which ? 0 : n, which ? n : 0);
    tabcl_status st = call(s, outs);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (!fired) {
      tt_assert_ok(st);
      cr_assert(check(s, outs), "%s: wrong after the sweep", name);
      cr_log_info("%s: %ld failure points", name, n - 1);
      return;
    }
    if (st == TABCL_OK) cr_assert(check(s, outs), "%s: failure %ld swallowed, answer wrong", name, n);
    else cr_assert_neq(tabcl_last_error()[0], '\0', "%s: failure %ld without a message", name, n);
    tt_live now = tt_live_now();
    cr_assert(now.allocs == base.allocs && now.mems == base.mems,
              "%s: failing %s %ld leaked %ld allocations and %ld buffers (%s)", name,
              which ? "OpenCL call" : "allocation", n, now.allocs - base.allocs,
              now.mems - base.mems, tabcl_status_name(st));
    tt_assert_ok(call(s, outs));
    cr_assert(check(s, outs), "%s: after failure %ld the next call is wrong", name, n);
    cr_assert_lt(n, 5000);
  }
}

static tabcl_status call_host(kvset *s, void **outs) {
  for (int e = 0; e < s->n; e++) memset(outs[e], 0xCD, s->qb);
  return tabcl_stream_sdpa_host(s->ctx, &s->d, s->n, s->kv_len, s->q, (const void *const *)s->k,
                                (const void *const *)s->v, 2, outs);
}
static int check_outs(kvset *s, void **outs) {
  for (int e = 0; e < s->n; e++)
    if (memcmp(outs[e], s->serial[e], s->qb)) return 0;
  return 1;
}
static tabcl_status call_cl(kvset *s, void **outs) {
  cl_mem qb = dev_buffer(s->ctx, s->qb), ob[MAXN];
  cr_assert_eq(clEnqueueWriteBuffer(tabcl_context_cl_queue(s->ctx), qb, CL_TRUE, 0, s->qb, s->q,
                                    0, NULL, NULL), CL_SUCCESS);
  for (int e = 0; e < s->n; e++) ob[e] = dev_buffer(s->ctx, s->qb);
  cl_event ev = NULL;
  tabcl_status st = tabcl_stream_sdpa_cl(s->ctx, &s->d, s->n, s->kv_len, qb,
                                         (const void *const *)s->k, (const void *const *)s->v, 2,
                                         ob, 0, NULL, &ev);
  if (st == TABCL_OK) {
    cr_assert(ev);
    cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
  } else {
    cr_assert_null(ev, "a failed call set *ev");
  }
  for (int e = 0; e < s->n; e++) {
    memset(outs[e], 0xCD, s->qb);
    if (st == TABCL_OK) dev_read(s->ctx, ob[e], s->qb, outs[e]);
    clReleaseMemObject(ob[e]);
  }
  clReleaseMemObject(qb);
  return st;
}
static tabcl_status call_pinned(kvset *s, void **outs) {
  void *p = NULL;
  tabcl_status st = tabcl_stream_host_alloc(s->ctx, 4096, &p);
  if (st) return st;
  memset(p, 0x5A, 4096);
  ((uint8_t *)outs[0])[0] = ((uint8_t *)p)[4095];
  while ((st = tabcl_stream_host_free(s->ctx, p)) != TABCL_OK)
    cr_assert(tabcl__fault_fired(), "host_free failed with nothing injected");
  return TABCL_OK;
}
static int check_pinned(kvset *s, void **outs) { return (void)s, ((uint8_t *)outs[0])[0] == 0x5A; }

static void sweep_convenience(int which) {
  tt_rng r = {tt_seed(which ? "stream_sweep.calls_cl" : "stream_sweep.calls_alloc")};
  tabcl_context *ctx = tt_context();
  kvset s;
  kvset_make(&s, ctx, &r, 4, TABCL_F32, 40, 1, 0);
  void *outs[MAXN];
  for (int e = 0; e < s.n; e++) outs[e] = malloc(s.qb);
  sweep_call("tabcl_stream_sdpa_host", which, call_host, check_outs, &s, outs);
  sweep_call("tabcl_stream_sdpa_cl", which, call_cl, check_outs, &s, outs);
  sweep_call("tabcl_stream_host_alloc/free", which, call_pinned, check_pinned, &s, outs);
  for (int e = 0; e < s.n; e++) free(outs[e]);
  kvset_free(&s);
  tabcl_context_destroy(ctx);
}

Test(stream_sweep, calls_alloc) { sweep_convenience(0); }
Test(stream_sweep, calls_cl) { sweep_convenience(1); }

#endif

/* ---- under oclgrind: tiny shapes, the same checks ------------------------- */

Test(oclgrind_stream, slow_compute_tiny) {
  tt_rng r = {tt_seed("oclgrind_stream.slow_compute_tiny")};
  tabcl_context *ctx = tt_context();
  slow sl;
  slow_init(&sl, ctx, 64);
  kvset s;
  kvset_make(&s, ctx, &r, 4, TABCL_F32, 9, 0, 1);
  for (int depth = 1; depth <= 3; depth++) {
    stream_by_hand(&s, &sl, &r, depth, 0);
    stream_by_hand(&s, &sl, &r, depth, 1);
  }
  convenience(&s, 2, 0);
  convenience(&s, 1, 1);
  kvset_free(&s);
  slow_fini(&sl);
  tabcl_context_destroy(ctx);
}
