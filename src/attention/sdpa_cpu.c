/* The CPU attention kernel (cl/sdpa_cpu.cl): one work-item a group owning
 * TABCL__SDPA_CPU_ROWS query rows of one (batch entry, head) as the lanes
 * of its vectors. Its options and loop bound are pure; the launch uses the
 * tile kernels' grid (sdpa_grid.c) with groups of one. */
#include <stdio.h>
#include <string.h>

#include "attention/sdpa.h"

int tabcl__sdpa_cpu_tiles(const tabcl__target *t) {
  return (int)tabcl__tuned(t->tune, TABCL__TUNE_SDPA_CPU_TILES);
}

int tabcl__sdpa_cpu_options(const tabcl_sdpa_desc *d, int tiles, char *buf, size_t cap) {
  if (d->dtype == TABCL_F64 || d->head_dim < 1 || d->head_dim > TABCL__SDPA_CPU_MAX_DIM) return 0;
  const int dp = (d->head_dim + 15) / 16 * 16;
  /* f32 blocks of keys are read where they lie for key rows up to
     TABCL__SDPA_CPU_DIRECT_KEYS (a test in the kernel on lk, so that sizes
     never change the options), and copied into a private block first for
     longer ones, where the copy is faster (bench/history/2026-11-to-12.md, "Tuning:
     sdpa.cpu"). */
  snprintf(buf, cap,
           "-DSDPA_DTYPE=%d -DCPU_DP=%d -DCPU_TILES=%d -DCPU_DIRECT_KEYS=%d -DCPU_KEY_CHUNK=%d",
           (int)d->dtype, dp, tiles, TABCL__SDPA_CPU_DIRECT_KEYS,
           TABCL__SDPA_CPU_KEY_CHUNK);
  return 1;
}

uint64_t tabcl__sdpa_cpu_loops(const tabcl_sdpa_desc *d, int tiles) {
  const uint64_t w = TABCL__SDPA_CPU_ROWS, hd = (uint64_t)d->head_dim;
  const uint64_t blocks = ((uint64_t)d->kv_len + w - 1) / w;
  /* the kernel's loops, each counted at its scalar (longest) form: Q^T
     (once a chunk of keys) and the zeroed O^T; per block two block loads,
     S (a pass over the columns for every four keys), the mask's rows and
     lanes, P V; the scaling and the store, or a split's partial rows */
  const uint64_t dp = (hd + 15) / 16 * 16;
  const uint64_t chunks = ((uint64_t)d->kv_len + TABCL__SDPA_CPU_KEY_CHUNK - 1) /
                          TABCL__SDPA_CPU_KEY_CHUNK;
  /* a work-item takes at most the tiles that hold the call's queries */
  const uint64_t of_q = ((uint64_t)(d->q_len > 0 ? d->q_len : 1) + w - 1) / w;
  return (of_q < (uint64_t)tiles ? of_q : (uint64_t)tiles) *
         ((chunks ? chunks : 1) * w * hd + hd + blocks * (2 * w * hd + w / 4 * hd + w * w + w + hd) +
          hd + w * hd + 3 * w + w * dp);
}

int64_t tabcl__sdpa_cpu_groups(const tabcl_sdpa_desc *d, int tiles) {
  const int64_t rows = (int64_t)TABCL__SDPA_CPU_ROWS * tiles;
  return (d->q_len + rows - 1) / rows;
}

int64_t tabcl__sdpa_cpu_slice(const tabcl__target *t, const tabcl_sdpa_desc *d, int tiles) {
  return tabcl__slice_items(t, 0, (uint64_t)tabcl__sdpa_cpu_groups(d, tiles) * (uint64_t)d->q_heads);
}

int tabcl__sdpa_cpu_keysplit(const tabcl__target *t, const tabcl_sdpa_desc *d, int tiles,
                             int64_t *launch_step, tabcl__sdpa_keysplit *ks) {
  memset(ks, 0, sizeof *ks);
  ks->loop_bound = tabcl__sdpa_cpu_loops(d, tiles);
  ks->parts = 1, ks->part_keys = d->kv_len;
  if (d->kv_len <= 0) return 0;
  const int64_t nqt = tabcl__sdpa_cpu_groups(d, tiles);
  const char *reason;
  const int64_t parts = tabcl__sdpa_split_wanted(t, d, d->batch * d->q_heads * nqt, &reason);
  const int dp = (d->head_dim + 15) / 16 * 16;
  return tabcl__sdpa_split_fit(t, d, nqt, TABCL__SDPA_CPU_ROWS * tiles, TABCL__SDPA_CPU_ROWS, dp,
                               parts, reason, launch_step, ks);
}

tabcl_status tabcl__sdpa_cpu_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                    const char *options, int64_t query_tiles,
                                    const tabcl__sdpa_keysplit *ks, const tabcl__sdpa_bufs *b,
                                    int64_t b0, int64_t nb, cl_uint nwait, const cl_event *wait,
                                    tabcl__sdpa_events *ev) {
  return tabcl__sdpa_tile_launch(ctx, d, b, "sdpa_cpu", options, "sdpa_cpu", "CPU kernel", 1,
                                 (int)query_tiles, ks, b0, nb, nwait, wait, ev, NULL);
}
