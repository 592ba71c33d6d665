/* The GEMM attention path: S = Q K^T and O = P V as CLBlast strided-batched
 * GEMMs (one call per query head, batched over the batch entries), with
 * cl/sdpa_gemm.cl between them applying scale, masks and causality. f32 and
 * f64 run in their own precision on the caller's buffers; f16 and bf16 are
 * widened to f32 temporaries first (CLBlast's half GEMM would compute in
 * half, and it has no bf16) and the f32 result is narrowed into out. Used
 * where the fused kernel does not fit the device, and by tests as a
 * cross-check. */
#include <stdint.h>
#include <stdio.h>

#include "attention/sdpa.h"

#ifdef TABCL_WITH_CLBLAST
#include <clblast_c.h>

#define SM_WG 64

int tabcl__sdpa_clblast_available(void) { return 1; }

/* CLBlast keeps the programs it compiles in a process-wide cache, which
   holds a reference to each OpenCL context it has seen until the process
   exits and releases them from a static destructor then, when another
   runtime may already be torn down: under oclgrind, valgrind showed that
   release writing into oclgrind's freed thread-local state (CI's oclgrind
   step crashed at the exit of oclgrind_sdpa/softmax_and_conversions). The
   cache is emptied when the last live context that called CLBlast is
   destroyed, which also lets go of those contexts' OpenCL objects. */
static pthread_mutex_t blast_users_lock = PTHREAD_MUTEX_INITIALIZER;
static long blast_users;   /* live contexts that have called CLBlast */

static void blast_user_gone(tabcl_context *ctx) {
  (void)ctx;
  pthread_mutex_lock(&blast_users_lock);
  if (--blast_users == 0) CLBlastClearCache();
  pthread_mutex_unlock(&blast_users_lock);
}

/* Counts ctx among CLBlast's users, once. */
static void blast_user(tabcl_context *ctx) {
  pthread_mutex_lock(&ctx->lock);
  if (ctx->destroy_hook != blast_user_gone) {
    ctx->destroy_hook = blast_user_gone;
    pthread_mutex_lock(&blast_users_lock);
    blast_users++;
    pthread_mutex_unlock(&blast_users_lock);
  }
  pthread_mutex_unlock(&ctx->lock);
}

static size_t score_size(tabcl_dtype dt) { return dt == TABCL_F64 ? 8 : 4; }
static int widened(tabcl_dtype dt) { return dt == TABCL_F16 || dt == TABCL_BF16; }

/* The most elements CLBlast may address in one buffer: 2^31 - 1, its
   offsets being 32-bit (sdpa.gemm.index_limit; tests set it low). */
static size_t index_limit(const tabcl__tuning *t) {
  return (size_t)tabcl__tuned(t, TABCL__TUNE_SDPA_GEMM_INDEX);
}

static int64_t groups_yz(const tabcl__tuning *t) {
  return tabcl__tuned(t, TABCL__TUNE_SDPA_GROUPS_YZ);
}

int64_t tabcl__sdpa_clblast_slice(const tabcl__target *tg, const tabcl_sdpa_desc *d) {
  uint64_t scores = (uint64_t)d->q_heads * (uint64_t)d->q_len * (uint64_t)d->kv_len *
                    score_size(d->dtype);
  uint64_t qe = (uint64_t)d->q_len * d->q_heads * d->head_dim;
  uint64_t ke = (uint64_t)d->kv_len * d->kv_heads * d->head_dim;
  uint64_t bytes = scores;
  if (widened(d->dtype)) {
    if (qe * 4 > bytes) bytes = qe * 4;
    if (ke * 4 > bytes) bytes = ke * 4;
  }
  uint64_t items = (uint64_t)d->q_heads * d->q_len * SM_WG;
  if (qe > items) items = qe;
  if (ke > items) items = ke;
  int64_t n = tabcl__slice_items(tg, bytes, items);
  /* CLBlast addresses elements with 32-bit ints: one step's tensors (each
     seen through a window that may start up to one alignment unit early)
     and its scores must stay below the limit. */
  uint64_t per = qe > ke ? qe : ke;
  if (scores / score_size(d->dtype) > per) per = scores / score_size(d->dtype);
  const uint64_t early = tg->dev->mem_base_addr_align_bits / 8 + 1;
  const uint64_t limit = index_limit(tg->tune);
  const int64_t by_index = per && limit > early ? (int64_t)((limit - early) / per) : 1;
  if (by_index >= 1 && by_index < n) n = by_index;
  /* CLBlast's batched GEMM may put the batch in a grid dimension that some
     devices limit to 65535 groups. */
  return n < groups_yz(tg->tune) ? n : groups_yz(tg->tune);
}

static tabcl_status blast_fail(CLBlastStatusCode st, const char *call) {
  if (st > -100) return tabcl__cl_fail((cl_int)st, call, "attention (CLBlast path)");
  return tabcl__fail(TABCL_OPENCL_ERROR, "%s: CLBlast status %d (attention, CLBlast path)", call,
                     (int)st);
}

/* C[i] = A[i] op(B[i]) for nb batch entries, row-major. */
static tabcl_status gemm(tabcl_context *ctx, tabcl_dtype dt, int transb, size_t m, size_t n,
                         size_t k, cl_mem a, size_t aoff, size_t lda, size_t astr, cl_mem b,
                         size_t boff, size_t ldb, size_t bstr, cl_mem c, size_t coff, size_t ldc,
                         size_t cstr, size_t nb, tabcl__sdpa_events *ev) {
  if (tabcl__fault_cl()) return blast_fail(CLBlastOpenCLOutOfResources, "CLBlastXgemmStridedBatched");
  /* CLBlast's kernels take offsets as 32-bit ints: an element past 2^31 in
     one of these buffers would be addressed wrongly (on the H200 a batch of
     140,000 x 54 x 8 x 64 broke the command queue). Slices and windows
     (tabcl__sdpa_clblast_run) keep every call below that; a single batch
     entry beyond it is refused rather than corrupt the context. */
  const size_t rows_b = transb ? n : k, cols_b = transb ? k : n;
  const size_t end_a = aoff + (nb - 1) * astr + (m - 1) * lda + k;
  const size_t end_b = boff + (nb - 1) * bstr + (rows_b - 1) * ldb + cols_b;
  const size_t end_c = coff + (nb - 1) * cstr + (m - 1) * ldc + n;
  const size_t lim = index_limit(&ctx->tune);
  if (end_a > lim || end_b > lim || end_c > lim)
    return tabcl__fail(TABCL_UNSUPPORTED,
                       "attention (CLBlast path): one batch entry reaches element %zu; CLBlast "
                       "addresses at most 2^31 elements of one buffer (use the fused path)",
                       end_a > end_b ? (end_a > end_c ? end_a : end_c) : (end_b > end_c ? end_b : end_c));
  cl_command_queue q = ctx->queue;
  cl_event e = NULL;
  CLBlastTranspose tb = transb ? CLBlastTransposeYes : CLBlastTransposeNo;
  CLBlastStatusCode st;
  if (dt == TABCL_F64)
    st = CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, m, n, k, 1.0,
                                    a, aoff, lda, astr, b, boff, ldb, bstr, 0.0, c, coff, ldc,
                                    cstr, nb, &q, ev ? &e : NULL);
  else
    st = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo, tb, m, n, k, 1.0f,
                                    a, aoff, lda, astr, b, boff, ldb, bstr, 0.0f, c, coff, ldc,
                                    cstr, nb, &q, ev ? &e : NULL);
  if (st != CLBlastSuccess) return blast_fail(st, dt == TABCL_F64 ? "CLBlastDgemmStridedBatched"
                                                                  : "CLBlastSgemmStridedBatched");
  tabcl__count_launch(ctx);
  tabcl__sdpa_track(ev, e);
  return TABCL_OK;
}

/* dst[0, n) = src[off, off + n) widened to f32 (narrow: the other way). */
static tabcl_status convert(tabcl_context *ctx, const char *opts, const char *kname, cl_mem src,
                            cl_mem dst, cl_long off, cl_long n, tabcl__sdpa_events *ev) {
  cl_kernel k = NULL;
  tabcl_status s = tabcl__kernel_create(ctx, "sdpa_gemm", opts, kname, &k);
  if (!s) s = TABCL_SET_ARGS(k, kname, TABCL_ARG(src), TABCL_ARG(off), TABCL_ARG(dst), TABCL_ARG(n));
  if (!s) {
    size_t local = tabcl__wg_size(ctx, k, 256);
    size_t global = tabcl__round_up((size_t)n, local);
    cl_event e = NULL;
    s = tabcl__launch(ctx, k, 1, &global, &local, 0, NULL, ev ? &e : NULL, kname);
    if (!s) tabcl__sdpa_track(ev, e);
  }
  tabcl__kernel_release(k);
  return s;
}

static tabcl_status narrow(tabcl_context *ctx, const char *opts, cl_mem src, cl_mem dst,
                           cl_long off, cl_long n, tabcl__sdpa_events *ev) {
  cl_kernel k = NULL;
  tabcl_status s = tabcl__kernel_create(ctx, "sdpa_gemm", opts, "sdpa_narrow", &k);
  if (!s) s = TABCL_SET_ARGS(k, "sdpa_narrow", TABCL_ARG(src), TABCL_ARG(dst), TABCL_ARG(off),
                             TABCL_ARG(n));
  if (!s) {
    size_t local = tabcl__wg_size(ctx, k, 256);
    size_t global = tabcl__round_up((size_t)n, local);
    cl_event e = NULL;
    s = tabcl__launch(ctx, k, 1, &global, &local, 0, NULL, ev ? &e : NULL, "sdpa_narrow");
    if (!s) tabcl__sdpa_track(ev, e);
  }
  tabcl__kernel_release(k);
  return s;
}

static tabcl_status softmax(tabcl_context *ctx, const char *opts, const tabcl_sdpa_desc *d,
                            cl_mem scores, cl_mem mask, int64_t b0, int64_t nb,
                            tabcl__sdpa_events *ev) {
  cl_kernel k = NULL;
  tabcl_status s = tabcl__kernel_create(ctx, "sdpa_gemm", opts, "sdpa_softmax", &k);
  if (s) return s;
  const double scale = tabcl__sdpa_scale(d);
  const float scalef = (float)scale;
  const cl_long first = b0;
  const cl_int lq = (cl_int)d->q_len, lk = (cl_int)d->kv_len, hq = d->q_heads,
               causal = d->causal != 0, mk = (cl_int)d->mask, mbb = d->mask_batch_broadcast != 0,
               mhb = tabcl__sdpa_mask_hb(d);
  tabcl__arg sarg = d->dtype == TABCL_F64 ? TABCL_ARG(scale) : TABCL_ARG(scalef);
  cl_mem m = d->mask != TABCL_MASK_NONE ? mask : scores;
  s = TABCL_SET_ARGS(k, "sdpa_softmax", TABCL_ARG(scores), TABCL_ARG(m), TABCL_ARG(first),
                     TABCL_ARG(lq), TABCL_ARG(lk), TABCL_ARG(hq), sarg, TABCL_ARG(causal),
                     TABCL_ARG(mk), TABCL_ARG(mbb), TABCL_ARG(mhb));
  if (!s) {
    /* Heads and queries go in dims 1 and 2, which may be limited to 65535
       groups: larger extents take several launches. */
    const cl_int most = (cl_int)groups_yz(&ctx->tune);
    for (cl_int i0 = 0; i0 < lq && !s; i0 += most)
      for (cl_int h0 = 0; h0 < hq && !s; h0 += most) {
        s = TABCL_SET_ARGS_AT(k, "sdpa_softmax", 11, TABCL_ARG(h0), TABCL_ARG(i0));
        if (s) break;
        size_t local[3] = {SM_WG, 1, 1};
        size_t global[3] = {SM_WG * (size_t)nb, (size_t)(hq - h0 < most ? hq - h0 : most),
                            (size_t)(lq - i0 < most ? lq - i0 : most)};
        cl_event e = NULL;
        s = tabcl__launch(ctx, k, 3, global, local, 0, NULL, ev ? &e : NULL, "sdpa_softmax");
        if (!s) tabcl__sdpa_track(ev, e);
      }
  }
  tabcl__kernel_release(k);
  return s;
}

tabcl_status tabcl__sdpa_clblast_run(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, int64_t b0, int64_t nb,
                                     cl_uint nwait, const cl_event *wait,
                                     tabcl__sdpa_events *ev) {
  const size_t es = tabcl__sdpa_elem_size(d->dtype), D = (size_t)d->head_dim;
  const size_t lq = (size_t)d->q_len, lk = (size_t)d->kv_len, hq = (size_t)d->q_heads,
               hkv = (size_t)d->kv_heads, n = (size_t)nb, group = hq / hkv;
  const size_t qe = lq * hq * D, ke = lk * hkv * D;   /* elements per batch entry */
  tabcl_status s = TABCL_OK;
  blast_user(ctx);
  /* CLBlast takes no wait list: a marker holds back the in-order queue instead. */
  if (nwait) {
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, NULL));
    if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "attention");
  }
  if (lk == 0) {
    /* No key at all: every row is zeros. */
    static const cl_uchar zero = 0;
    cl_event e = NULL;
    cl_int err = TABCL_CL(clEnqueueFillBuffer(ctx->queue, b->out, &zero, 1, (size_t)b0 * qe * es,
                                              n * qe * es, 0, NULL, ev ? &e : NULL));
    if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clEnqueueFillBuffer", "attention");
    tabcl__sdpa_track(ev, e);
    return TABCL_OK;
  }
  char opts[64];
  snprintf(opts, sizeof opts, "-DSM_DTYPE=%d -DSM_WG=%d", (int)d->dtype, SM_WG);
  const int wide = widened(d->dtype);
  const size_t ces = score_size(d->dtype);
  cl_mem q32 = NULL, k32 = NULL, v32 = NULL, o32 = NULL, sc = NULL;
  cl_mem qw = NULL, kw = NULL, vw = NULL, ow = NULL;
  cl_mem qm = b->q, km = b->k, vm = b->v, om = b->out;
  size_t qoff = (size_t)b0 * qe, koff = (size_t)b0 * ke;
  if (!wide && (qoff + n * qe > index_limit(&ctx->tune) ||
                koff + n * ke > index_limit(&ctx->tune))) {
    /* A slice far into the caller's tensors: CLBlast sees it through
       sub-buffers that start just before it, so its offsets stay small. */
    size_t qskip = 0, kskip = 0, vskip = 0, oskip = 0;
    s = tabcl__buffer_window(ctx, b->q, qoff * es, n * qe * es, es, &qw, &qskip, "attention q");
    if (!s) s = tabcl__buffer_window(ctx, b->k, koff * es, n * ke * es, es, &kw, &kskip,
                                     "attention k");
    if (!s) s = tabcl__buffer_window(ctx, b->v, koff * es, n * ke * es, es, &vw, &vskip,
                                     "attention v");
    if (!s) s = tabcl__buffer_window(ctx, b->out, qoff * es, n * qe * es, es, &ow, &oskip,
                                     "attention out");
    /* q and out (k and v) have the same offsets and the same alignment rule. */
    qm = qw, km = kw, vm = vw, om = ow;
    qoff = qskip / es, koff = kskip / es;
    (void)vskip, (void)oskip;
  }
  if (!s && wide) {
    s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * qe * 4, NULL, &q32, "attention q (f32)");
    if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * ke * 4, NULL, &k32, "attention k (f32)");
    if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * ke * 4, NULL, &v32, "attention v (f32)");
    if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * qe * 4, NULL, &o32, "attention out (f32)");
    if (!s) s = convert(ctx, opts, "sdpa_widen", b->q, q32, (cl_long)qoff, (cl_long)(n * qe), ev);
    if (!s) s = convert(ctx, opts, "sdpa_widen", b->k, k32, (cl_long)koff, (cl_long)(n * ke), ev);
    if (!s) s = convert(ctx, opts, "sdpa_widen", b->v, v32, (cl_long)koff, (cl_long)(n * ke), ev);
    qm = q32, km = k32, vm = v32, om = o32;
    qoff = koff = 0;
  }
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * hq * lq * lk * ces, NULL, &sc,
                                   "attention scores");
  const size_t sstr = hq * lq * lk;
  for (size_t h = 0; h < hq && !s; h++)
    s = gemm(ctx, d->dtype, 1, lq, lk, D, qm, qoff + h * D, hq * D, qe, km,
             koff + (h / group) * D, hkv * D, ke, sc, h * lq * lk, lk, sstr, n, ev);
  if (!s) s = softmax(ctx, opts, d, sc, b->mask, b0, nb, ev);
  for (size_t h = 0; h < hq && !s; h++)
    s = gemm(ctx, d->dtype, 0, lq, D, lk, sc, h * lq * lk, lk, sstr, vm,
             koff + (h / group) * D, hkv * D, ke, om, qoff + h * D, hq * D, qe, n, ev);
  if (!s && wide) s = narrow(ctx, opts, o32, b->out, (cl_long)((size_t)b0 * qe), (cl_long)(n * qe), ev);
  /* Enqueued commands keep their buffers alive; releasing here is safe. */
  tabcl__buffer_release(q32);
  tabcl__buffer_release(k32);
  tabcl__buffer_release(v32);
  tabcl__buffer_release(o32);
  tabcl__buffer_release(sc);
  tabcl__buffer_release(qw);
  tabcl__buffer_release(kw);
  tabcl__buffer_release(vw);
  tabcl__buffer_release(ow);
  return s;
}

#else

int tabcl__sdpa_clblast_available(void) { return 0; }
int64_t tabcl__sdpa_clblast_slice(const tabcl__target *tg, const tabcl_sdpa_desc *d) {
  (void)tg, (void)d;
  return 1;
}
tabcl_status tabcl__sdpa_clblast_run(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, int64_t b0, int64_t nb,
                                     cl_uint nwait, const cl_event *wait,
                                     tabcl__sdpa_events *ev) {
  (void)ctx, (void)d, (void)b, (void)b0, (void)nb, (void)nwait, (void)wait, (void)ev;
  return tabcl__fail(TABCL_UNSUPPORTED, "attention: this build has no CLBlast");
}

#endif
