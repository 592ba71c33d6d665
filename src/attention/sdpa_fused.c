/* The portable fused attention kernel (cl/sdpa.cl): its tile shapes, a
 * pure choice from the device, the tuning table and the kernel's own
 * work-group limit, and its launch. */
#include <stdio.h>
#include <string.h>

#include "attention/sdpa.h"

/* Local memory of a tile shape: the Q tile, the larger of a K chunk and a V
   chunk (unpadded, swizzled), P transposed with four padding columns, a
   rescale factor and tks partial maxima/sums per query. */
static size_t tile_bytes(size_t es, const tabcl__sdpa_tiles *t) {
  const size_t kch = (size_t)t->bk * (size_t)t->kc, vch = (size_t)t->vk * (size_t)t->dp;
  return es * ((size_t)t->bq * (size_t)t->dp + (kch > vch ? kch : vch) +
               (size_t)t->bk * (size_t)(t->bq + 4) + (size_t)(1 + t->tks) * (size_t)t->bq);
}

static int pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* Float4 vectors of the larger chunk (K or V) per work-item. */
static int share_of_chunk(const tabcl__sdpa_tiles *t) {
  const int kg = t->bk * t->kc / 4, vg = t->vk * t->dp / 4, g = kg > vg ? kg : vg;
  return (g + t->nt - 1) / t->nt;
}

/* Reading the next chunk into registers while the current one is used
   hides the reads' latency but holds 4 registers a vector for the whole
   pass: it pays up to 4 vectors a work-item (bench/history/2026-11-to-12.md, Tuning:
   sdpa.fused). */
static int default_prefetch(const tabcl__sdpa_tiles *t) { return share_of_chunk(t) <= 4; }

/* Whether the kernel's index arithmetic holds for t (see cl/sdpa.cl): every
   work-item has whole register blocks, the swizzles stay inside a row, and
   a work-item's share of a K or V chunk is at most 16 vectors. */
static int shape_ok(const tabcl__device_desc *dev, size_t es, size_t maxwg,
                    const tabcl__sdpa_tiles *t) {
  if (t->nt <= 0 || (size_t)t->nt > maxwg || !pow2(t->nt) || !pow2(t->tks) || t->tks > 32)
    return 0;
  if (t->bk < 8 || t->bk > 64 || t->bk % t->tks || t->nt % t->tks || t->bq % (t->nt / t->tks))
    return 0;
  if (t->nt % t->tc || t->bq % (t->nt / t->tc)) return 0;
  /* A chunk narrower than the row has a power of two of float4 columns, so
     the XOR masks (powers of two less one) fit in it. */
  if (t->kc < 4 || t->kc % 4 || t->dp % t->kc || (t->kc < t->dp && !pow2(t->kc / 4))) return 0;
  if (t->vk < 4 || t->vk % 4 || t->bk % t->vk) return 0;
  if (share_of_chunk(t) > 16) return 0;
  return tile_bytes(es, t) <= dev->local_mem_size;
}

/* The shape an sdpa.fused.dNN request asks for, from the automatic shape
   a; 1 and *out when it is well formed and fits, else 0. */
static int requested(const tabcl__device_desc *dev, size_t es, size_t maxwg,
                     const tabcl__tile_request *r, const tabcl__sdpa_tiles *a,
                     tabcl__sdpa_tiles *out) {
  tabcl__sdpa_tiles c = *a;
  const int f = r->per_row ? r->per_row : a->nt / a->bq;
  c.bq = r->bq, c.bk = r->bk;
  c.tks = r->tks ? r->tks : 8;
  c.kc = r->kc ? r->kc : a->dp;
  c.vk = r->vk ? r->vk : r->bk;
  if (f > c.tc || r->bq * f < 32) return 0;
  c.nt = r->bq * f;
  if (!shape_ok(dev, es, maxwg, &c)) return 0;
  /* The default prefetch divides by the work-items and multiplies the
     chunk sizes: it is judged only on a shape that shape_ok has taken. */
  c.prefetch = r->prefetch >= 0 ? r->prefetch : default_prefetch(&c);
  *out = c;
  return 1;
}

int tabcl__sdpa_fused_tiles(const tabcl__target *tg, size_t kernel_cap, tabcl_dtype dt,
                            int head_dim, tabcl__sdpa_tiles *t, const char **why) {
  const tabcl__device_desc *dev = tg->dev;
  if (why) *why = NULL;
  /* The fused kernel's register blocks are sized for head dims up to 256;
     wider heads take the CLBlast path. */
  if (head_dim > 256 || head_dim < 1) return 0;
  const size_t es = dt == TABCL_F64 ? 8 : 4;
  const int dp = (head_dim + 15) / 16 * 16;
  /* More work-items per query row for the widest heads keeps the output
     block (and so the register count) per work-item at most 64 values. */
  const int ntf = dp > 128 ? 4 : 2;
  /* The output's float4 columns split evenly over a power of two of work-items. */
  const int tc = (dp / 4) % 16 == 0 ? 16 : (dp / 4) % 8 == 0 ? 8 : 4;
  size_t maxwg = dev->max_work_group_size;
  if (dev->max_work_item_sizes[0] < maxwg) maxwg = dev->max_work_item_sizes[0];
  if (kernel_cap && kernel_cap < maxwg) maxwg = kernel_cap;
  static const int bqs[] = {64, 32, 16};
  tabcl__sdpa_tiles best = {0};
  /* First choice: the largest query tile that takes a key tile of 16 or
     more (fewer barriers and softmax passes per FLOP; each K/V tile reused
     by more queries), with the largest such key tile; else the shape with
     the most query x key pairs per tile, ties to the longer key tile
     (bench/history/2026-11-to-12.md, Tuning: sdpa.fused). Key tiles are multiples of 8 up
     to 64 that shape_ok takes. With 48 KiB in f32 this gives 64 x 64 for
     head dims up to 32, 64 x 56 for 64, 64 x 16 for 128 and 16 x 16 for
     256. Whole tiles go through local memory (one K chunk, one V chunk).
     Where the group must be smaller than ntf work-items a row allow (a
     kernel limit of 32, say), rows take fewer work-items. */
  for (int f = ntf; f >= 1 && !best.bq; f /= 2)
    for (int pass = 0; pass < 2 && !best.bq; pass++)
      for (size_t i = 0; i < sizeof bqs / sizeof bqs[0]; i++) {
        const int bq = bqs[i], nt = bq * f;
        if ((size_t)nt > maxwg || nt < 32) continue;
        for (int bk = 64; bk >= (pass == 0 ? 16 : 8); bk -= 8) {
          tabcl__sdpa_tiles c = {dp, bq, bk, nt, tc, 8, dp, bk, 0, 0};
          if (!shape_ok(dev, es, maxwg, &c)) continue;
          c.prefetch = default_prefetch(&c);
          if (pass == 0 || bq * bk > best.bq * best.bk ||
              (bq * bk == best.bq * best.bk && bk > best.bk))
            best = c;
          break;
        }
        if (pass == 0 && best.bq) break;
      }
  if (!best.bq) return 0;
  const int key = tabcl__tune_tiles_key(dp);
  if (key >= 0 && tg->tune->value[key] != TABCL__TUNE_AUTO) {
    tabcl__sdpa_tiles c;
    if (!requested(dev, es, maxwg, &tg->tune->tiles[key], &best, &c)) {
      if (why)
        *why = kernel_cap ? "the shape does not fit the device or the kernel's work-group limit"
                          : "the shape does not fit the device";
      return -1;
    }
    best = c;
  }
  best.local_bytes = tile_bytes(es, &best);
  *t = best;
  return 1;
}

int tabcl__sdpa_choose_tiles(const tabcl_context *ctx, tabcl_dtype dt, int head_dim,
                             tabcl__sdpa_tiles *t) {
  const tabcl__target tg = ctx->target;
  return tabcl__sdpa_fused_tiles(&tg, 0, dt, head_dim, t, NULL) == 1;
}

void tabcl__sdpa_fused_options(tabcl_dtype dt, const tabcl__sdpa_tiles *t, char *buf, size_t cap) {
  snprintf(buf, cap, "-DSDPA_DTYPE=%d -DSDPA_DP=%d -DSDPA_BQ=%d -DSDPA_BK=%d -DSDPA_NT=%d "
                   "-DSDPA_TC=%d -DSDPA_TKS=%d -DSDPA_KC=%d -DSDPA_VK=%d -DSDPA_NOPRE=%d", (int)dt,
                   t->dp, t->bq, t->bk, t->nt, t->tc, t->tks, t->kc, t->vk, !t->prefetch);
}

/* A loop of n trips whose body runs `body` iterations of inner loops:
   n trips, their bodies, and one more for entering it. */
static uint64_t loop(uint64_t n, uint64_t body) { return n * (body + 1) + 1; }

/* The sizes cl/sdpa.cl derives from the tiles (its macros of the same
   names): query rows and key columns a work-item holds of a score tile,
   output rows and float4 columns it holds of the output block, and the
   other loop trip counts of sdpa_fused. */
typedef struct derived {
  uint64_t tqs, rqs, rks, dp4, cg, tqo, rqo, kc4, nkc, nvc, nj4, lpt, tks;
} derived;

static derived derive(const tabcl__sdpa_tiles *t) {
  derived z;
  z.tks = (uint64_t)t->tks;
  z.tqs = (uint64_t)(t->nt / t->tks);
  z.rqs = (uint64_t)t->bq / z.tqs;
  z.rks = (uint64_t)(t->bk / t->tks);
  z.dp4 = (uint64_t)t->dp / 4;
  z.cg = z.dp4 / (uint64_t)t->tc;
  z.tqo = (uint64_t)(t->nt / t->tc);
  z.rqo = (uint64_t)t->bq / z.tqo;
  z.kc4 = (uint64_t)t->kc / 4;
  z.nkc = (uint64_t)(t->dp / t->kc);
  z.nvc = (uint64_t)(t->bk / t->vk);
  z.nj4 = (uint64_t)(t->vk + 3) / 4;
  z.lpt = (uint64_t)share_of_chunk(t);
  return z;
}

/* Mirrors the loops of sdpa_fused in cl/sdpa.cl, with the names used there;
   a loop the compiler unrolls counts as if it did not. */
static void loop_counts(const tabcl__sdpa_tiles *t, uint64_t *fixed, uint64_t *per_tile) {
  const derived z = derive(t);
  const uint64_t rqs = z.rqs, rks = z.rks, rqo = z.rqo, cg = z.cg, tks = z.tks;
  const uint64_t chunk = loop(z.lpt, 0);   /* a fill or a prefetch of a K or V chunk */
  const uint64_t qk_full = loop(z.kc4, loop(rqs, 0) + loop(rks, 0) + loop(rqs, loop(rks, 0)));
  const uint64_t qk_part = loop(z.kc4, loop(rqs, 0) + loop(rks, loop(rqs, 0)));
  const uint64_t qk = qk_full > qk_part ? qk_full : qk_part;
  const uint64_t state = loop(rqs, 0) + loop(rqo, loop(cg, 0));  /* init, load or save */
  *per_tile = 1 + ((uint64_t)t->bk + 15) / 16                /* the padding's scan */
              + loop(rqs, loop(rks, 0))                        /* s = 0 */
              + loop(z.nkc, 2 * chunk + qk)                    /* S = Q K^T */
              + loop(rqs, loop(rks, 0))                        /* masks and maxima */
              + loop(rqs, loop(tks, 0) + loop(rks, 0))         /* softmax */
              + loop(z.nvc, 2 * chunk + loop(rqo, loop(cg, 0)) + /* P V */
                                loop(z.nj4, loop(4, loop(rqo, 0) + loop(cg, loop(rqo, 0)))));
  *fixed = 2 + loop(16, 0)                                         /* the scan's loops */
           + loop(((uint64_t)t->bq * z.dp4 + (uint64_t)t->nt - 1) / (uint64_t)t->nt, 0) /* Q */
           + 3 * state + chunk + 1                                  /* init, load, save */
           + loop(rqs, 0) + loop(rqo, loop(tks, 0) + loop(cg, 0));  /* sums and outputs */
}

static uint64_t loops_over(const tabcl__sdpa_tiles *t, uint64_t fixed, uint64_t per_tile,
                           int64_t keys) {
  const uint64_t tiles = keys > 0 ? ((uint64_t)keys + (uint64_t)t->bk - 1) / (uint64_t)t->bk : 0;
  return fixed + tiles * per_tile;
}

uint64_t tabcl__sdpa_fused_loops(const tabcl__sdpa_tiles *t, int64_t keys) {
  uint64_t fixed, per_tile;
  loop_counts(t, &fixed, &per_tile);
  return loops_over(t, fixed, per_tile, keys);
}

static int64_t query_tiles(const tabcl_sdpa_desc *d, const tabcl__sdpa_tiles *t) {
  return (d->q_len + t->bq - 1) / t->bq;
}

int tabcl__sdpa_fused_keysplit(const tabcl__target *tg, uint64_t loop_limit,
                               const tabcl_sdpa_desc *d, const tabcl__sdpa_tiles *t,
                               int64_t *launch_step, tabcl__sdpa_keysplit *ks) {
  memset(ks, 0, sizeof *ks);
  uint64_t fixed, per_tile;
  loop_counts(t, &fixed, &per_tile);
  ks->loop_bound = loops_over(t, fixed, per_tile, d->kv_len);
  ks->parts = 1;
  ks->part_keys = d->kv_len;
  if (d->kv_len <= 0) return 0;
  const int64_t nqt = query_tiles(d, t), tiles = (d->kv_len + t->bk - 1) / t->bk;
  const char *reason;
  int64_t parts = tabcl__sdpa_split_wanted(tg, d, d->batch * d->q_heads * nqt, &reason);
  /* Half the limit: the count above is a bound by reading the kernel, and
     a driver may count its loops a little differently. */
  const uint64_t usable = loop_limit / 2;
  if (loop_limit && loops_over(t, fixed, per_tile, ((tiles + parts - 1) / parts) * t->bk) > usable) {
    if (usable <= fixed + per_tile) return -1;
    const int64_t step = (int64_t)((usable - fixed) / per_tile);
    parts = (tiles + step - 1) / step;
    reason = "loop limit";
  }
  /* The merge's work-items loop twice over the parts. */
  if (loop_limit && parts > 1 && 2 * loop((uint64_t)parts, 0) + 8 > usable) return -1;
  return tabcl__sdpa_split_fit(tg, d, nqt, t->bq, t->bk, t->dp, parts, reason, launch_step, ks);
}

int64_t tabcl__sdpa_fused_slice(const tabcl__target *tg, const tabcl_sdpa_desc *d,
                                const tabcl__sdpa_tiles *t) {
  return tabcl__slice_items(tg, 0, (uint64_t)t->nt * (uint64_t)query_tiles(d, t) *
                                       (uint64_t)d->q_heads);
}

tabcl_status tabcl__sdpa_fused_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                      const tabcl__sdpa_tiles *t,
                                      const tabcl__sdpa_keysplit *ks, const tabcl__sdpa_bufs *b,
                                      int64_t b0, int64_t nb, cl_uint nwait,
                                      const cl_event *wait, tabcl__sdpa_events *ev,
                                      size_t *kernel_cap) {
  char opts[288];
  tabcl__sdpa_fused_options(d->dtype, t, opts, sizeof opts);
  return tabcl__sdpa_tile_launch(ctx, d, b, "sdpa", opts, "sdpa_fused", "fused kernel",
                                 (size_t)t->nt, (int)query_tiles(d, t), ks, b0, nb, nwait, wait,
                                 ev, kernel_cap);
}
