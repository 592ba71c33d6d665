/* Executing attention plans: the launches of one plan over device
 * buffers, planning again where a built kernel tells what the device
 * description could not, and the host calls' buffers and transfers. */
#include <stdio.h>
#include <string.h>

#include "attention/sdpa.h"

/* The remembered limits: by f64 or not (the local-memory element) and
   padded head dim, the classes that share tile choices. */
static int cap_slot(const tabcl_sdpa_desc *d) {
  const int dp = (d->head_dim + 15) / 16 * 16;
  if (dp < 16 || dp > 256) return -1;
  return (d->dtype == TABCL_F64 ? 16 : 0) + dp / 16 - 1;
}

size_t tabcl__sdpa_fused_cap(tabcl_context *ctx, const tabcl_sdpa_desc *d) {
  const int slot = cap_slot(d);
  if (slot < 0) return 0;
  pthread_mutex_lock(&ctx->lock);
  const size_t cap = ctx->sdpa_fused_cap[slot];
  pthread_mutex_unlock(&ctx->lock);
  return cap;
}

static void remember_cap(tabcl_context *ctx, const tabcl_sdpa_desc *d, size_t cap) {
  const int slot = cap_slot(d);
  if (slot < 0) return;
  pthread_mutex_lock(&ctx->lock);
  if (!ctx->sdpa_fused_cap[slot] || cap < ctx->sdpa_fused_cap[slot])
    ctx->sdpa_fused_cap[slot] = cap;
  pthread_mutex_unlock(&ctx->lock);
}

/* Plans are made again at most this many times a call: each time a limit
   only falls, or the tensor-core kernel drops out. */
#define REPLANS 4

tabcl_status tabcl__sdpa_exec(tabcl_context *ctx, const tabcl__sdpa_facts *f,
                              const tabcl_sdpa_desc *d, int forced, const tabcl__sdpa_bufs *b,
                              cl_uint nwait, const cl_event *wait, tabcl__sdpa_events *ev) {
  const tabcl__target tg = ctx->target;
  tabcl__sdpa_facts facts = *f;
  for (int attempt = 0;; attempt++) {
    tabcl__sdpa_plan p;
    tabcl_status s = tabcl__sdpa_plan_make(&tg, &facts, d, forced, &p);
    if (s) return s;
    int again = 0;
    for (int64_t b0 = 0; b0 < d->batch && !s; b0 += p.launch_step) {
      const int64_t nb = d->batch - b0 < p.launch_step ? d->batch - b0 : p.launch_step;
      const cl_uint nw = b0 == 0 ? nwait : 0;
      const cl_event *w = b0 == 0 ? wait : NULL;
      size_t cap = 0;
      if (p.path == TABCL__SDPA_MMA)
        s = tabcl__sdpa_mma_launch(ctx, d, &p.mma, &p.keys, b, b0, nb, nw, w, ev);
      else if (p.path == TABCL__SDPA_CPU)
        s = tabcl__sdpa_cpu_launch(ctx, d, p.options, p.query_tiles, &p.keys, b, b0, nb, nw, w,
                                   ev);
      else if (p.path == TABCL__SDPA_FUSED)
        s = tabcl__sdpa_fused_launch(ctx, d, &p.tiles, &p.keys, b, b0, nb, nw, w, ev, &cap);
      else
        s = tabcl__sdpa_clblast_run(ctx, d, b, b0, nb, nw, w, ev);
      if (!s || b0 != 0 || attempt >= REPLANS) continue;
      /* Refused before anything was enqueued: the compiled fused kernel
         runs fewer work-items a group than the device (registers, or a
         driver's cap for large kernels): plan within its limit. */
      if (p.path == TABCL__SDPA_FUSED && cap && cap < p.group) {
        remember_cap(ctx, d, cap);
        facts.fused_cap = cap;
        again = 1;
      }
      /* The device check built one head dim; another that does not build
         or cannot run its group leaves the automatic choice to the rest. */
      if (p.path == TABCL__SDPA_MMA && forced == TABCL__SDPA_AUTO &&
          (s == TABCL_BUILD_FAILED || s == TABCL_UNSUPPORTED)) {
        facts.mma_passed = 0;
        again = 1;
      }
    }
    if (!again) return s;
    tabcl__clear_error();
  }
}

/* p + off, where p may be NULL (k and v are when kv_len is 0): pointer
   arithmetic on NULL is undefined even with a zero offset. */
static const void *at(const void *p, size_t off) {
  return p ? (const unsigned char *)p + off : NULL;
}

tabcl_status tabcl__sdpa_exec_host(tabcl_context *ctx, const tabcl__sdpa_facts *f,
                                   const tabcl_sdpa_desc *d, int forced, const void *q,
                                   const void *k, const void *v, const void *mask, void *out) {
  if (!tabcl__sdpa_has_work(d)) return TABCL_OK;
  /* The whole call's plan sizes the device buffers and the uploads (batch
     entries a slice); each slice is then a call of its own to
     tabcl__sdpa_exec, which plans that slice's launches (and plans again
     where a built kernel tells more). The two answer different questions
     about different calls: neither plan can stand for the other. */
  const tabcl__target tg = ctx->target;
  tabcl__sdpa_plan p;
  tabcl_status s = tabcl__sdpa_plan_make(&tg, f, d, forced, &p);
  if (s) return s;
  const int64_t step = p.host_step;
  const size_t es = tabcl__sdpa_elem_size(d->dtype);
  const size_t q_item = (size_t)d->q_len * (size_t)d->q_heads * (size_t)d->head_dim * es;
  const size_t kv_item = (size_t)d->kv_len * (size_t)d->kv_heads * (size_t)d->head_dim * es;
  const size_t mask_item = p.mask_whole || step == 0 ? 0 : (size_t)(p.mask_bytes / (uint64_t)step);
  /* With one upload the output is read straight into out as the last
     step; with several, into a host temporary first, so a failure in a
     later slice leaves out untouched. */
  const size_t out_bytes = (size_t)d->batch * q_item;
  tabcl__sdpa_bufs b = {0};
  unsigned char *tmp = out;
  if (step < d->batch && !(tmp = tabcl__malloc(out_bytes)))
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl_sdpa_host: out of host memory for %zu bytes "
                       "of output", out_bytes);
  const int has_mask = p.mask_bytes > 0;
  /* Device buffers from the context's pool: a fresh one costs its
     allocation and, on a CPU device, the first touch of every page, more
     than the kernel on PoCL (bench/RESULTS.md, "The host attention call's
     transfers and buffers"). */
  s = tabcl__pool_get(ctx, CL_MEM_READ_ONLY, (size_t)p.q_bytes, &b.q, "attention q");
  if (!s) s = tabcl__pool_get(ctx, CL_MEM_READ_ONLY, (size_t)p.kv_bytes, &b.k, "attention k");
  if (!s) s = tabcl__pool_get(ctx, CL_MEM_READ_ONLY, (size_t)p.kv_bytes, &b.v, "attention v");
  if (!s && has_mask)
    s = tabcl__pool_get(ctx, CL_MEM_READ_ONLY, (size_t)p.mask_bytes, &b.mask, "attention mask");
  if (!s) s = tabcl__pool_get(ctx, CL_MEM_WRITE_ONLY, (size_t)p.out_bytes, &b.out, "attention out");
  /* Transfers as the other host calls make them: through the context's
     pinned staging area and its worker pool on GPUs, where pageable
     memory is several times slower to copy from (bench/history/2026-11-to-12.md,
     "upload.staging"), through a mapped buffer on CPUs. */
  if (!s && has_mask && p.mask_whole)
    s = tabcl__upload_copy(ctx, b.mask, (size_t)p.mask_bytes, mask, "attention mask");
  tabcl_sdpa_desc sd = *d;
  if (!has_mask) sd.mask = TABCL_MASK_NONE;
  for (int64_t b0 = 0; b0 < d->batch && !s; b0 += step) {
    const int64_t nb = d->batch - b0 < step ? d->batch - b0 : step;
    sd.batch = nb;
    s = tabcl__upload_copy(ctx, b.q, (size_t)nb * q_item, at(q, (size_t)b0 * q_item), "attention q");
    if (!s)
      s = tabcl__upload_copy(ctx, b.k, (size_t)nb * kv_item, at(k, (size_t)b0 * kv_item),
                             "attention k");
    if (!s)
      s = tabcl__upload_copy(ctx, b.v, (size_t)nb * kv_item, at(v, (size_t)b0 * kv_item),
                             "attention v");
    if (!s && has_mask && !p.mask_whole)
      s = tabcl__upload_copy(ctx, b.mask, (size_t)nb * mask_item,
                             at(mask, (size_t)b0 * mask_item), "attention mask");
    if (!s) s = tabcl__sdpa_exec(ctx, f, &sd, forced, &b, 0, NULL, NULL);
    if (!s) s = tabcl__download(ctx, b.out, 0, (size_t)nb * q_item, tmp + (size_t)b0 * q_item);
  }
  /* Commands may still run after a failure; they must not outlive the buffers' users. */
  if (s) tabcl__queue_drain(ctx->queue);
  if (!s && tmp != out) memcpy(out, tmp, out_bytes);
  const cl_mem used[] = {b.q, b.k, b.v, b.mask, b.out};
  tabcl__pool_put_n(ctx, 5, used, 0, NULL);
  if (tmp != out) tabcl__free(tmp);
  return s;
}
