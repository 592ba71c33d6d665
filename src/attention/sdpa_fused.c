/* Launching the fused attention kernel (cl/sdpa.cl). */
#include <stdio.h>

#include "attention/sdpa.h"

static void fused_options(tabcl_dtype dt, const tabcl__sdpa_tiles *t, char *buf, size_t cap) {
  snprintf(buf, cap, "-DSDPA_DTYPE=%d -DSDPA_DP=%d -DSDPA_BQ=%d -DSDPA_BK=%d -DSDPA_NT=%d "
                   "-DSDPA_TC=%d -DSDPA_TKS=%d -DSDPA_KC=%d -DSDPA_VK=%d -DSDPA_NOPRE=%d", (int)dt,
                   t->dp, t->bq, t->bk, t->nt, t->tc, t->tks, t->kc, t->vk, !t->prefetch);
}

static int64_t query_tiles(const tabcl_sdpa_desc *d, const tabcl__sdpa_tiles *t) {
  return (d->q_len + t->bq - 1) / t->bq;
}

int64_t tabcl__sdpa_fused_slice(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                const tabcl__sdpa_tiles *t) {
  return tabcl__slice_items_ctx(ctx, 0, (uint64_t)t->nt * (uint64_t)query_tiles(d, t) *
                                        (uint64_t)d->q_heads);
}

tabcl_status tabcl__sdpa_fused_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                      const tabcl__sdpa_tiles *t, const tabcl__sdpa_bufs *b,
                                      int64_t b0, int64_t nb, cl_uint nwait,
                                      const cl_event *wait, tabcl__sdpa_events *ev) {
  char opts[256];
  fused_options(d->dtype, t, opts, sizeof opts);
  return tabcl__sdpa_tile_launch(ctx, d, b, "sdpa", opts, "sdpa_fused", "fused kernel",
                                 (size_t)t->nt, (int)query_tiles(d, t), b0, nb, nwait, wait, ev);
}
