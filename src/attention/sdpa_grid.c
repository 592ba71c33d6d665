/* Launching the attention kernels that own one query tile of one (batch
 * entry, head) per work-group: the fused (cl/sdpa.cl), tensor-core
 * (cl/sdpa_mma.cl) and CPU (cl/sdpa_cpu.cl) kernels take the same
 * arguments and grid, and a key split's scratch and merge. */
#include "attention/sdpa.h"

tabcl_status tabcl__sdpa_tile_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, const char *program,
                                     const char *opts, const char *kname, const char *what,
                                     size_t nt, int nqt, const tabcl__sdpa_keysplit *ks,
                                     int64_t b0, int64_t nb, cl_uint nwait,
                                     const cl_event *wait, tabcl__sdpa_events *ev,
                                     size_t *kernel_cap) {
  cl_kernel k = NULL;
  tabcl_status s = tabcl__kernel_create(ctx, program, opts, kname, &k);
  if (s) return s;
  size_t kmax = 0;
  if (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                               NULL) == CL_SUCCESS && kmax > 0 && kmax < nt) {
    tabcl__kernel_release(k);
    if (kernel_cap) *kernel_cap = kmax;
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: %s runs the %s with at most %zu "
                       "work-items per group; it needs %zu", ctx->info.name, what, kmax, nt);
  }
  /* Scores are kept in the log2 domain: exp2 of scale * log2(e) * q.k. */
  const double scale2 = tabcl__sdpa_scale(d) * 1.4426950408889634;
  const float scale2f = (float)scale2;
  const cl_long first = b0;
  const cl_int lq = (cl_int)d->q_len, lk = (cl_int)d->kv_len, hq = d->q_heads,
               hkv = d->kv_heads, hd = d->head_dim, causal = d->causal != 0,
               mk = (cl_int)d->mask, mbb = d->mask_batch_broadcast != 0,
               mhb = tabcl__sdpa_mask_hb(d);
  cl_mem mask = d->mask != TABCL_MASK_NONE ? b->mask : b->q;
  tabcl__arg sarg = d->dtype == TABCL_F64 ? TABCL_ARG(scale2) : TABCL_ARG(scale2f);
  s = TABCL_SET_ARGS(k, kname, TABCL_ARG(b->q), TABCL_ARG(b->k), TABCL_ARG(b->v),
                     TABCL_ARG(mask), TABCL_ARG(b->out), TABCL_ARG(first), TABCL_ARG(lq),
                     TABCL_ARG(lk), TABCL_ARG(hq), TABCL_ARG(hkv), TABCL_ARG(hd), sarg,
                     TABCL_ARG(causal), TABCL_ARG(mk), TABCL_ARG(mbb), TABCL_ARG(mhb));
  /* Heads and query tiles go in dims 1 and 2, which may be limited to
     65535 groups: larger extents take several launches. A split puts its
     parts beside the query tiles in dim 2 and merges each launch's rows
     into the output before the next launch, which reuses the scratch (the
     queue is in order). */
  const cl_int most = (cl_int)tabcl__tuned(&ctx->tune, TABCL__TUNE_SDPA_GROUPS_YZ);
  const cl_int parts = (cl_int)ks->parts;
  const cl_int qstep = parts > 1 ? (cl_int)ks->qtile_step : most;
  /* The split's scratch, released once enqueued: the launches that use it
     keep it. Unsplit, the argument is any buffer, never written. */
  cl_mem part = NULL;
  if (!s && parts > 1)
    s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)ks->part_bytes, NULL, &part,
                             "attention key parts");
  if (!s) {
    const cl_int kpart = parts > 1 ? (cl_int)ks->part_keys : lk;
    const cl_mem pbuf = parts > 1 ? part : b->out;
    s = TABCL_SET_ARGS_AT(k, kname, 18, TABCL_ARG(parts), TABCL_ARG(kpart), TABCL_ARG(pbuf));
  }
  cl_kernel m = NULL;
  if (parts > 1 && !s) s = tabcl__kernel_create(ctx, program, opts, "sdpa_merge", &m);
  if (m && !s)
    s = TABCL_SET_ARGS(m, "sdpa_merge", TABCL_ARG(part), TABCL_ARG(b->out), TABCL_ARG(first),
                       TABCL_ARG(lq), TABCL_ARG(hq), TABCL_ARG(hd));
  int first_launch = 1;
  for (cl_int qt0 = 0; qt0 < nqt && !s; qt0 += qstep)
    for (cl_int h0 = 0; h0 < hq && !s; h0 += most) {
      s = TABCL_SET_ARGS_AT(k, kname, 16, TABCL_ARG(h0), TABCL_ARG(qt0));
      if (s) break;
      const cl_int nh = hq - h0 < most ? hq - h0 : most, nq = nqt - qt0 < qstep ? nqt - qt0 : qstep;
      size_t local[3] = {nt, 1, 1};
      size_t global[3] = {nt * (size_t)nb, (size_t)nh, (size_t)nq * (size_t)parts};
      cl_event e = NULL;
      s = tabcl__launch(ctx, k, 3, global, local, first_launch ? nwait : 0,
                        first_launch ? wait : NULL, ev ? &e : NULL, kname);
      first_launch = 0;
      if (!s) tabcl__sdpa_track(ev, e);
      if (s || !m) continue;
      /* the merge: one work-item per row of the launch's query tiles and
         float4 column of the padded head dim, in groups the driver picks
         (the grid is exact: cl/common.cl, SDPA_MERGE_KERNEL) */
      s = TABCL_SET_ARGS_AT(m, "sdpa_merge", 6, TABCL_ARG(h0), TABCL_ARG(qt0), TABCL_ARG(parts));
      if (s) break;
      size_t mg[3] = {(size_t)nb * (size_t)ks->merge_rows * (size_t)ks->merge_cols4, (size_t)nh,
                      (size_t)nq};
      e = NULL;
      s = tabcl__launch(ctx, m, 3, mg, NULL, 0, NULL, ev ? &e : NULL, "sdpa_merge");
      if (!s) tabcl__sdpa_track(ev, e);
    }
  if (m) tabcl__kernel_release(m);
  tabcl__kernel_release(k);
  tabcl__buffer_release(part);
  return s;
}
