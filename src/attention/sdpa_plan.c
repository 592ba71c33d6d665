/* The attention planner: a backend from a table, its shape, build
 * options, launch slices and the buffers a host call makes, from the
 * device description, the tuning table, the facts and the descriptor.
 * No OpenCL call: planner tests run it for hand-written devices. */
#include <stdio.h>
#include <string.h>

#include "attention/sdpa.h"

/* A backend's planning step: 1 and fills p's backend part when it takes
   the call; 0 when it does not (the next one is asked); -1 when it must
   refuse it outright (a tuning entry that does not fit: the status is set). */
typedef int (*plan_fn)(const tabcl__target *t, const tabcl__sdpa_facts *f,
                       const tabcl_sdpa_desc *d, int forced, tabcl__sdpa_plan *p,
                       tabcl_status *st);

static int plan_mma(const tabcl__target *t, const tabcl__sdpa_facts *f, const tabcl_sdpa_desc *d,
                    int forced, tabcl__sdpa_plan *p, tabcl_status *st) {
  (void)st;
  if (!f->mma_enabled || (forced == TABCL__SDPA_AUTO && !f->mma_passed)) return 0;
  if (!tabcl__sdpa_mma_shape_for(t, d, &p->mma)) return 0;
  p->program = "sdpa_mma";
  tabcl__sdpa_mma_options(d->dtype, &p->mma, p->options, sizeof p->options);
  p->group = (size_t)(32 * p->mma.nw);
  p->query_tiles = tabcl__sdpa_mma_query_tiles(d, &p->mma);
  p->launch_step = tabcl__sdpa_mma_slice(t, d, &p->mma);
  /* a split of more parts than sdpa.groups_yz leaves the call to the fused kernel */
  if (tabcl__sdpa_mma_keysplit(t, d, &p->mma, &p->launch_step, &p->keys) < 0) return 0;
  return 1;
}

/* CPUs (sdpa.cpu): rows in vector lanes, no local memory. Where the
   device ends long loops and this call's work-items could reach that, the
   fused kernel (which splits its keys into parts within the limit) takes it. */
static int plan_cpu(const tabcl__target *t, const tabcl__sdpa_facts *f, const tabcl_sdpa_desc *d,
                    int forced, tabcl__sdpa_plan *p, tabcl_status *st) {
  (void)st;
  if (forced == TABCL__SDPA_AUTO && tabcl__tuned(t->tune, TABCL__TUNE_SDPA_CPU) <= 0) return 0;
  p->cpu_tiles = tabcl__sdpa_cpu_tiles(t);
  if (!tabcl__sdpa_cpu_options(d, p->cpu_tiles, p->options, sizeof p->options)) return 0;
  const uint64_t loops = tabcl__sdpa_cpu_loops(d, p->cpu_tiles);
  if (f->loop_limit && loops > f->loop_limit / 2) return 0;
  p->program = "sdpa_cpu";
  p->group = 1;
  p->query_tiles = tabcl__sdpa_cpu_groups(d, p->cpu_tiles);
  p->launch_step = tabcl__sdpa_cpu_slice(t, d, p->cpu_tiles);
  /* a split of more parts than sdpa.groups_yz leaves the call to the fused kernel */
  if (tabcl__sdpa_cpu_keysplit(t, d, p->cpu_tiles, &p->launch_step, &p->keys) < 0) return 0;
  return 1;
}

static int plan_fused(const tabcl__target *t, const tabcl__sdpa_facts *f,
                      const tabcl_sdpa_desc *d, int forced, tabcl__sdpa_plan *p,
                      tabcl_status *st) {
  (void)forced;
  const char *why = NULL;
  const int r = tabcl__sdpa_fused_tiles(t, f->fused_cap, d->dtype, d->head_dim, &p->tiles, &why);
  if (r < 0) {
    const int dp = (d->head_dim + 15) / 16 * 16;
    *st = tabcl__fail(TABCL_INVALID_ARGUMENT, "attention: the tuning entry %s does not fit %s: %s%s",
                      tabcl__tune_key_name((tabcl__tune_key)tabcl__tune_tiles_key(dp)),
                      t->dev->name, why ? why : "",
                      f->fused_cap ? " (the fused kernel runs at most this many work-items a "
                                     "group there: see cl-probe --plan)" : "");
    return -1;
  }
  if (r == 0) return 0;
  p->program = "sdpa";
  p->group = (size_t)p->tiles.nt;
  p->query_tiles = (d->q_len + p->tiles.bq - 1) / p->tiles.bq;
  p->launch_step = tabcl__sdpa_fused_slice(t, d, &p->tiles);
  const int split = tabcl__sdpa_fused_keysplit(t, f->loop_limit, d, &p->tiles, &p->launch_step,
                                              &p->keys);
  if (split == -1) {
    *st = tabcl__fail(TABCL_UNSUPPORTED, "attention: %s ends a work-item's loops after %llu "
                      "iterations, too few for one key tile of the fused kernel (%d x %d) or for "
                      "merging its key parts",
                      t->dev->name, (unsigned long long)f->loop_limit, p->tiles.bq, p->tiles.bk);
    return -1;
  }
  if (split == -2) {
    *st = tabcl__fail(TABCL_UNSUPPORTED, "attention: %s ends a work-item's loops after %llu "
                      "iterations, so the keys take several parts, and their partial rows "
                      "for %d heads do not fit a quarter of its %llu-byte allocations",
                      t->dev->name, (unsigned long long)f->loop_limit, d->q_heads, (unsigned long long)t->dev->max_mem_alloc_size);
    return -1;
  }
  tabcl__sdpa_fused_options(d->dtype, &p->tiles, p->options, sizeof p->options);
  return 1;
}

static int plan_gemm(const tabcl__target *t, const tabcl__sdpa_facts *f, const tabcl_sdpa_desc *d,
                     int forced, tabcl__sdpa_plan *p, tabcl_status *st) {
  (void)forced, (void)st;
  if (!f->clblast) return 0;
  p->program = "sdpa_gemm";
  snprintf(p->options, sizeof p->options, "-DSM_DTYPE=%d -DSM_WG=64", (int)d->dtype);
  p->group = 64;
  p->query_tiles = d->q_len;
  p->launch_step = tabcl__sdpa_clblast_slice(t, d);
  return 1;
}

/* The automatic choice asks them in this order: the vendor layer where it
   passed its check, the CPU kernel on CPUs, the portable kernel where its
   tiles fit, the GEMM path for the rest. */
static const struct backend {
  int path;
  const char *name;
  plan_fn plan;
} backends[] = {
    {TABCL__SDPA_MMA, "tensor-core kernel", plan_mma},
    {TABCL__SDPA_CPU, "CPU kernel", plan_cpu},
    {TABCL__SDPA_FUSED, "fused kernel", plan_fused},
    {TABCL__SDPA_CLBLAST, "CLBlast GEMMs", plan_gemm},
};

/* Sizes in bytes of one batch entry of each tensor, and the host slices. */
static void plan_host(const tabcl__target *t, const tabcl_sdpa_desc *d, tabcl__sdpa_plan *p) {
  const size_t es = tabcl__sdpa_elem_size(d->dtype);
  const uint64_t q = (uint64_t)d->q_len * (uint64_t)d->q_heads * (uint64_t)d->head_dim * es;
  const uint64_t kv = (uint64_t)d->kv_len * (uint64_t)d->kv_heads * (uint64_t)d->head_dim * es;
  const int has_mask = d->mask != TABCL_MASK_NONE && d->kv_len > 0;
  const uint64_t mes = d->mask == TABCL_MASK_BOOL ? 1 : es;
  const uint64_t one = has_mask ? (uint64_t)(d->mask_head_broadcast ? 1 : d->q_heads) *
                                      (uint64_t)(d->mask_query_broadcast ? 1 : d->q_len) *
                                      (uint64_t)d->kv_len * mes
                                : 0;
  const uint64_t mask = d->mask_batch_broadcast ? 0 : one;
  /* Uploads are split only where a tensor exceeds one allocation; the
     launches are sliced again to the NDRange and max_batch_per_launch. */
  uint64_t per_item = q > kv ? q : kv;
  if (mask > per_item) per_item = mask;
  int64_t step = per_item ? (int64_t)(t->dev->max_mem_alloc_size / per_item) : d->batch;
  if (step < 1) step = 1;
  if (step > d->batch) step = d->batch;
  p->host_step = step;
  p->q_bytes = (uint64_t)step * q;
  p->kv_bytes = (uint64_t)step * kv;
  p->out_bytes = (uint64_t)step * q;
  p->mask_whole = has_mask && d->mask_batch_broadcast;
  p->mask_bytes = !has_mask ? 0 : p->mask_whole ? one : (uint64_t)step * mask;
}

tabcl_status tabcl__sdpa_plan_make(const tabcl__target *t, const tabcl__sdpa_facts *f,
                                   const tabcl_sdpa_desc *d, int forced, tabcl__sdpa_plan *out) {
  if (d->dtype == TABCL_F64 && !t->dev->has_fp64)
    return tabcl__fail(TABCL_UNSUPPORTED, "attention in f64: %s has no fp64%s%s%s", t->dev->name,
                       t->dev->profile[0] ? " (under device profile " : "", t->dev->profile,
                       t->dev->profile[0] ? ")" : "");
  tabcl__sdpa_plan p;
  memset(&p, 0, sizeof p);
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    const struct backend *b = &backends[i];
    if (forced != TABCL__SDPA_AUTO && forced != b->path) continue;
    tabcl_status st = TABCL_OK;
    const int r = b->plan(t, f, d, forced, &p, &st);
    if (r < 0) return st;
    if (r == 0) continue;
    p.path = b->path;
    p.backend = b->name;
    plan_host(t, d, &p);
    *out = p;
    return TABCL_OK;
  }
  switch (forced) {
  case TABCL__SDPA_MMA:
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: the tensor-core kernel does not run "
                       "this dtype and head_dim %d on %s", (int)d->head_dim, t->dev->name);
  case TABCL__SDPA_CPU:
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: the CPU kernel does not run this dtype and "
                       "head_dim %d (f32, f16 and bf16 up to %d), or not within %s's loop limit",
                       (int)d->head_dim, TABCL__SDPA_CPU_MAX_DIM, t->dev->name);
  case TABCL__SDPA_FUSED:
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: the fused kernel for head_dim %d does not "
                       "fit %s's %llu bytes of local memory", (int)d->head_dim, t->dev->name,
                       (unsigned long long)t->dev->local_mem_size);
  case TABCL__SDPA_AUTO: /* only the GEMM path was left, and it is not built in */
  case TABCL__SDPA_CLBLAST:
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: head_dim %d needs the CLBlast path, and "
                       "this build has no CLBlast", (int)d->head_dim);
  default:
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "attention: no path %d", forced);
  }
}

void tabcl__sdpa_plan_print(const tabcl__sdpa_plan *p, char *buf, size_t cap) {
  char shape[400] = "", keys[160] = "";
  if (p->keys.parts > 1)
    snprintf(keys, sizeof keys, "; keys: %lld parts of %lld (%s), merge launch, %lld query "
             "tiles a launch, %llu B of partials", (long long)p->keys.parts,
             (long long)p->keys.part_keys, p->keys.reason ? p->keys.reason : "",
             (long long)p->keys.qtile_step, (unsigned long long)p->keys.part_bytes);
  else
    snprintf(keys, sizeof keys, "; keys: 1 part of %lld, no merge", (long long)p->keys.part_keys);
  if (p->path == TABCL__SDPA_FUSED)
    snprintf(shape, sizeof shape, "%d x %d tiles, %d work-items (%d across S), chunks %d/%d%s%s",
             p->tiles.bq, p->tiles.bk, p->tiles.nt, p->tiles.tks, p->tiles.kc, p->tiles.vk,
             p->tiles.prefetch ? ", prefetch" : "", keys);
  else if (p->path == TABCL__SDPA_CPU)
    snprintf(shape, sizeof shape, "%d tiles of %d query rows a work-item, loops %llu%s",
             p->cpu_tiles, TABCL__SDPA_CPU_ROWS, (unsigned long long)p->keys.loop_bound,
             keys);
  else if (p->path == TABCL__SDPA_MMA)
    snprintf(shape, sizeof shape, "%d keys a tile, %d warps of %d query rows, qmode %d, batch %d, "
             "pipe %d, P in %d parts%s",
             p->mma.bk, p->mma.nw, 16 * p->mma.mt, p->mma.qmode, p->mma.batch, p->mma.pipe,
             p->mma.psplit, keys);
  else snprintf(shape, sizeof shape, "softmax groups of %zu", p->group);
  snprintf(buf, cap,
           "%s (%s): %lld query tiles, %lld batch entries a launch, %lld an upload "
           "(q %llu B, k/v %llu B, mask %llu B); program %s \"%s\"",
           p->backend, shape, (long long)p->query_tiles, (long long)p->launch_step,
           (long long)p->host_step, (unsigned long long)p->q_bytes,
           (unsigned long long)p->kv_bytes, (unsigned long long)p->mask_bytes, p->program,
           p->options);
}
