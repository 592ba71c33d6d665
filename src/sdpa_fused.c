/* Launching the fused attention kernel (cl/sdpa.cl). */
#include <math.h>
#include <stdio.h>

#include "sdpa.h"

static void fused_options(tabcl_dtype dt, const tabcl__sdpa_tiles *t, char *buf, size_t cap) {
  snprintf(buf, cap, "-DSDPA_DTYPE=%d -DSDPA_DP=%d -DSDPA_BQ=%d -DSDPA_BK=%d -DSDPA_NT=%d "
           "-DSDPA_TC=%d", (int)dt, t->dp, t->bq, t->bk, t->nt, t->tc);
}

static int64_t query_tiles(const tabcl_sdpa_desc *d, const tabcl__sdpa_tiles *t) {
  return (d->q_len + t->bq - 1) / t->bq;
}

int64_t tabcl__sdpa_fused_slice(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                const tabcl__sdpa_tiles *t) {
  return tabcl__slice_items(ctx, 0, (uint64_t)t->nt * (uint64_t)query_tiles(d, t) *
                                        (uint64_t)d->q_heads);
}

tabcl_status tabcl__sdpa_fused_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                      const tabcl__sdpa_tiles *t, const tabcl__sdpa_bufs *b,
                                      int64_t b0, int64_t nb, cl_uint nwait,
                                      const cl_event *wait, tabcl__sdpa_events *ev) {
  char opts[256];
  fused_options(d->dtype, t, opts, sizeof opts);
  cl_kernel k = NULL;
  tabcl_status s = tabcl__kernel_create(ctx, "sdpa", opts, "sdpa_fused", &k);
  if (s) return s;
  size_t kmax = 0;
  if (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                               NULL) == CL_SUCCESS && kmax > 0 && kmax < (size_t)t->nt) {
    tabcl__kernel_release(k);
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: %s runs the fused kernel with at most "
                       "%zu work-items per group; it needs %d", ctx->info.name, kmax, t->nt);
  }
  const double scale2 = tabcl__sdpa_scale(d) * 1.4426950408889634;
  const float scale2f = (float)scale2;
  const cl_long first = b0;
  const cl_int lq = (cl_int)d->q_len, lk = (cl_int)d->kv_len, hq = d->q_heads,
               hkv = d->kv_heads, hd = d->head_dim, causal = d->causal != 0,
               mk = (cl_int)d->mask, mbb = d->mask_batch_broadcast != 0,
               mhb = d->mask_head_broadcast != 0, nqt = (cl_int)query_tiles(d, t);
  cl_mem mask = d->mask != TABCL_MASK_NONE ? b->mask : b->q;
  tabcl_arg sarg = d->dtype == TABCL_F64 ? TABCL_ARG(scale2) : TABCL_ARG(scale2f);
  s = TABCL_SET_ARGS(k, "sdpa_fused", TABCL_ARG(b->q), TABCL_ARG(b->k), TABCL_ARG(b->v),
                     TABCL_ARG(mask), TABCL_ARG(b->out), TABCL_ARG(first), TABCL_ARG(lq),
                     TABCL_ARG(lk), TABCL_ARG(hq), TABCL_ARG(hkv), TABCL_ARG(hd), sarg,
                     TABCL_ARG(causal), TABCL_ARG(mk), TABCL_ARG(mbb), TABCL_ARG(mhb));
  /* Heads and query tiles go in dims 1 and 2, which may be limited to
     65535 groups: larger extents take several launches. */
  const cl_int most = tabcl__sdpa_max_groups_yz;
  for (cl_int qt0 = 0; qt0 < nqt && !s; qt0 += most)
    for (cl_int h0 = 0; h0 < hq && !s; h0 += most) {
      s = TABCL_SET_ARGS_AT(k, "sdpa_fused", 16, TABCL_ARG(h0), TABCL_ARG(qt0));
      if (s) break;
      size_t local[3] = {(size_t)t->nt, 1, 1};
      size_t global[3] = {local[0] * (size_t)nb, (size_t)(hq - h0 < most ? hq - h0 : most),
                          (size_t)(nqt - qt0 < most ? nqt - qt0 : most)};
      cl_event e = NULL;
      int first_launch = qt0 == 0 && h0 == 0;
      s = tabcl__launch(ctx, k, 3, global, local, first_launch ? nwait : 0,
                        first_launch ? wait : NULL, ev ? &e : NULL, "sdpa_fused");
      if (!s) tabcl__sdpa_track(ev, e);
    }
  tabcl__kernel_release(k);
  return s;
}
