/* The optional NVIDIA tensor-core path for attention in f32 (three-term
 * TF32 split), f16 and bf16 (cl/sdpa_mma.cl): its shape, a pure choice
 * from the device and the tuning table, and its launch. The device check
 * that must pass before the automatic choice uses it is sdpa_mma_check.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"

/* Keys per tile: 64 keeps short sequences (the tabular case) to one tile
   where registers allow; the S accumulators of 64 keys next to O at head
   dim 128 (or the split Q of f32 at 64) would need too many, so those take
   32 (bench/history/2026-11-to-12.md, Tuning: sdpa.mma). */
static int keys_per_tile(const tabcl__tuning *t, tabcl_dtype dt, int dp, int pipe) {
  /* The pipelined 16-bit kernel: 32 up to head dim 64, 16 above, the
     fastest of 16, 32 and 64 on the H200 at 4,096 tokens and the tabular
     shape (bench/history/2026-11-to-12.md, "Tensor-core attention in f16 and bf16: the
     pipelined kernel"). */
  if (pipe) return (int)tabcl__tuned_rule(t, TABCL__TUNE_SDPA_MMA_KEYS, dp <= 64 ? 32 : 16);
  return (int)tabcl__tuned_rule(t, TABCL__TUNE_SDPA_MMA_KEYS, dp <= (dt == TABCL_F32 ? 32 : 64) ? 64 : 32);
}

/* f16: P in one 16-bit part, rounded to f16 as cuDNN and FlashAttention
   do; the outputs stay inside the tolerances the tests and the device
   check hold f16 outputs to. bf16: two parts (about 16 bits of P): one
   bf16 part (8 bits) failed the device check's element tolerance on the
   H200 (0.00507 for 0.00487), though not the tests' norm tolerance. */
static int p_parts(const tabcl__tuning *t, tabcl_dtype dt) {
  return (int)tabcl__tuned_rule(t, TABCL__TUNE_SDPA_MMA_PSPLIT, dt == TABCL_BF16 ? 2 : 1);
}

/* One 16-query tile a warp. Two (each K and V fragment then feeds two
   MMAs) ran slower on the H200 at head dim 64, most of all at 54 tokens,
   whose queries fill half a group's rows; at 128 the second tile's Q and O
   do not fit beside S (bench/RESULTS.md, "Tensor-core attention in f16
   and bf16: the pipelined kernel"). */
static int m_tiles(const tabcl__tuning *t) {
  return (int)tabcl__tuned(t, TABCL__TUNE_SDPA_MMA_MTILES);
}

/* Local bytes of the kernel as built with shape m for element size es. */
static size_t local_bytes(const tabcl__sdpa_mma_shape *m, size_t es) {
  if (m->pipe) /* two stages of a K and a V tile, rows 16 bytes longer */
    return es * 2 * 2 * (size_t)m->bk * (size_t)(m->dp + 8);
  /* Q passes through the V tile unless it has its own or stays out of
     local memory. */
  const int vrows = m->qmode || m->bk > 16 * m->nw ? m->bk : 16 * m->nw;
  return es * (size_t)(m->dp + 16 / es) *
         (size_t)(m->bk + vrows + (m->qmode == 1 ? 16 * m->nw : 0));
}

/* f32's Q: a local tile up to head dim 64 (sdpa.mma.qmode's measurement);
   past it neither that nor its TF32 parts fit beside K and V (registers,
   48 KB of local memory), so Q's words stay in registers. */
static int q_mode(const tabcl__tuning *t, tabcl_dtype dt, int dp) {
  if (dt != TABCL_F32) return 0;
  return (int)tabcl__tuned_rule(t, TABCL__TUNE_SDPA_MMA_QMODE, dp <= 64 ? 1 : 2);
}

int tabcl__sdpa_mma_enabled(void) {
  const char *env = getenv("TABCL_SDPA_MMA");
  return !(env && strcmp(env, "0") == 0);
}

int tabcl__sdpa_mma_shape_for(const tabcl__target *tg, const tabcl_sdpa_desc *d,
                              tabcl__sdpa_mma_shape *m) {
  const tabcl__device_desc *dev = tg->dev;
  if (!dev->is_nvidia || d->dtype == TABCL_F64 || d->head_dim > 128 || d->head_dim < 1) return 0;
  /* In f32 the error of the TF32 split grows with the key row (relative
     3.6e-6 at 512 keys, 2.9e-5 at 4,096, 1.4e-4 at 20,011, 7.5e-4 at
     100,000 on the H200, against 4e-7 to 7e-6 for the fused kernel:
     bench/history/2026-11-to-12.md, "Tensor-core f32 and long key rows"): past
     TABCL__SDPA_MMA_F32_KEYS keys it would leave the f32 tolerance. */
  if (d->dtype == TABCL_F32 && d->kv_len > TABCL__SDPA_MMA_F32_KEYS) return 0;
  const size_t es = d->dtype == TABCL_F32 ? 4 : 2;
  m->dp = (int)(d->head_dim + 15) / 16 * 16;
  m->pipe = d->dtype != TABCL_F32 && tabcl__tuned(tg->tune, TABCL__TUNE_SDPA_MMA_PIPE);
  m->bk = keys_per_tile(tg->tune, d->dtype, m->dp, m->pipe);
  m->nw = (int)tabcl__tuned(tg->tune, TABCL__TUNE_SDPA_MMA_WARPS);
  m->qmode = q_mode(tg->tune, d->dtype, m->dp);
  /* Both TF32 parts of Q in registers take 2 x dp / 4 a lane beside O's
     dp / 2: past head dim 64 that is more than a work-item may hold. */
  if (m->qmode == 0 && d->dtype == TABCL_F32 && m->dp > 64) return 0;
  /* Loads issued a tile at a time help f32 and cost f16 (sdpa.mma.batch). */
  m->batch = (int)tabcl__tuned_rule(tg->tune, TABCL__TUNE_SDPA_MMA_BATCH, d->dtype == TABCL_F32);
  /* 16-bit types: the pipelined kernel (cp.async, ldmatrix), unless the
     table says otherwise; its Q passes through all of its local memory,
     so a group's queries must fit four key tiles' rows. */
  m->mt = m->pipe ? m_tiles(tg->tune) : 1;
  if (m->pipe && 16 * m->nw * m->mt > 4 * m->bk) m->mt = 1;
  if (m->pipe && 16 * m->nw > 4 * m->bk) m->pipe = 0;
  m->psplit = d->dtype == TABCL_F32 ? 0 : m->pipe ? p_parts(tg->tune, d->dtype)
                                                  : (d->dtype == TABCL_BF16 ? 3 : 2);
  return local_bytes(m, es) <= dev->local_mem_size &&
         (size_t)(32 * m->nw) <= dev->max_work_group_size;
}

int tabcl__sdpa_mma_tiles(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                          tabcl__sdpa_mma_shape *m) {
  if (!tabcl__sdpa_mma_enabled()) return 0;
  const tabcl__target tg = ctx->target;
  return tabcl__sdpa_mma_shape_for(&tg, d, m);
}

void tabcl__sdpa_mma_options(tabcl_dtype dt, const tabcl__sdpa_mma_shape *m, char *buf,
                             size_t cap) {
  if (dt == TABCL_F32)
    snprintf(buf, cap, "-DMMA_DTYPE=%d -DMMA_DP=%d -DMMA_BK=%d -DMMA_NW=%d -DMMA_BATCH=%d "
             "-DMMA_QMODE=%d", (int)dt, m->dp, m->bk, m->nw, m->batch, m->qmode);
  else
    snprintf(buf, cap, "-DMMA_DTYPE=%d -DMMA_DP=%d -DMMA_BK=%d -DMMA_NW=%d -DMMA_BATCH=%d "
             "-DMMA_QMODE=%d -DMMA_PIPE=%d -DMMA_PSPLIT=%d -DMMA_MT=%d", (int)dt, m->dp, m->bk,
             m->nw, m->batch, m->qmode, m->pipe, m->psplit, m->mt);
}

int64_t tabcl__sdpa_mma_query_tiles(const tabcl_sdpa_desc *d, const tabcl__sdpa_mma_shape *m) {
  const int64_t rows = 16 * (int64_t)m->nw * m->mt;
  return (d->q_len + rows - 1) / rows;
}

int64_t tabcl__sdpa_mma_slice(const tabcl__target *tg, const tabcl_sdpa_desc *d,
                              const tabcl__sdpa_mma_shape *m) {
  return tabcl__slice_items(tg, 0, (uint64_t)(32 * m->nw) *
                                       (uint64_t)tabcl__sdpa_mma_query_tiles(d, m) *
                                       (uint64_t)d->q_heads);
}

int tabcl__sdpa_mma_keysplit(const tabcl__target *t, const tabcl_sdpa_desc *d,
                             const tabcl__sdpa_mma_shape *m, int64_t *launch_step,
                             tabcl__sdpa_keysplit *ks) {
  memset(ks, 0, sizeof *ks);
  ks->parts = 1, ks->part_keys = d->kv_len;
  if (d->kv_len <= 0) return 0;
  const int64_t nqt = tabcl__sdpa_mma_query_tiles(d, m);
  const char *reason;
  const int64_t parts = tabcl__sdpa_split_wanted(t, d, d->batch * d->q_heads * nqt, &reason);
  return tabcl__sdpa_split_fit(t, d, nqt, 16 * m->nw * m->mt, m->bk, m->dp, parts, reason,
                               launch_step, ks);
}

tabcl_status tabcl__sdpa_mma_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                    const tabcl__sdpa_mma_shape *m,
                                    const tabcl__sdpa_keysplit *ks, const tabcl__sdpa_bufs *b,
                                    int64_t b0, int64_t nb, cl_uint nwait, const cl_event *wait,
                                    tabcl__sdpa_events *ev) {
  char opts[160];
  tabcl__sdpa_mma_options(d->dtype, m, opts, sizeof opts);
  return tabcl__sdpa_tile_launch(ctx, d, b, "sdpa_mma", opts, "sdpa_mma", "tensor-core kernel",
                                 (size_t)(32 * m->nw), (int)tabcl__sdpa_mma_query_tiles(d, m), ks,
                                 b0, nb, nwait, wait, ev, NULL);
}
