/* Scaled dot-product attention: the public calls. Each validates the
 * descriptor once, gathers what only the device can tell (the tensor-core
 * check's verdict, a kernel's own limits) as facts for the planner, and
 * hands the call to the executor. */
#include <stdio.h>
#include <string.h>

#include "attention/sdpa.h"
#include "tabcl/tabcl_cl.h"


tabcl_status tabcl__sdpa_facts_get(tabcl_context *ctx, const tabcl_sdpa_desc *d, int forced,
                                   tabcl__sdpa_facts *f) {
  memset(f, 0, sizeof *f);
  f->clblast = tabcl__sdpa_clblast_available();
  f->mma_enabled = tabcl__sdpa_mma_enabled();
  f->fused_cap = tabcl__sdpa_fused_cap(ctx, d);
  /* The automatic choice takes the tensor-core kernel only after its
     device check; a failed check leaves the portable kernel in charge.
     The check runs once, the first time that kernel could take a call. */
  if (forced == TABCL__SDPA_AUTO && f->mma_enabled) {
    const tabcl__target tg = ctx->target;
    tabcl__sdpa_mma_shape m;
    if (tabcl__sdpa_mma_shape_for(&tg, d, &m)) {
      f->mma_passed = tabcl__sdpa_mma_verdict(ctx, d->dtype) == TABCL_OK;
      if (!f->mma_passed) tabcl__clear_error();
    }
  }
  /* The fused and CPU kernels loop over every key in each work-item:
     where the plan could run long, the device's loop limit decides whether
     the fused kernel splits the keys into parts within it, or takes the
     call from the CPU kernel. */
  const tabcl__target tg = ctx->target;
  tabcl__sdpa_plan p;
  if (tabcl__sdpa_plan_make(&tg, f, d, forced, &p) != TABCL_OK) {
    tabcl__clear_error();   /* the executor plans again and reports it */
    return TABCL_OK;
  }
  if (p.path != TABCL__SDPA_FUSED && p.path != TABCL__SDPA_CPU) return TABCL_OK;
  if (!tabcl__loop_limit_known(ctx, &f->loop_limit) && p.keys.loop_bound > TABCL__LOOPS_UNCHECKED)
    return tabcl__loop_limit(ctx, &f->loop_limit);
  return TABCL_OK;
}

tabcl_status tabcl__sdpa_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                             const tabcl__sdpa_bufs *b, cl_uint nwait, const cl_event *wait,
                             tabcl__sdpa_events *ev) {
  tabcl__sdpa_facts f;
  tabcl_status s = tabcl__sdpa_facts_get(ctx, d, path, &f);
  return s ? s : tabcl__sdpa_exec(ctx, &f, d, path, b, nwait, wait, ev);
}

tabcl_status tabcl__sdpa_host_path(tabcl_context *ctx, const tabcl_sdpa_desc *d, const void *q,
                                   const void *k, const void *v, const void *mask, void *out,
                                   int path) {
  tabcl_status s = tabcl__sdpa_validate("tabcl_sdpa_host", ctx, d, q != NULL, k != NULL,
                                        v != NULL, mask != NULL, out != NULL);
  if (s || !tabcl__sdpa_has_work(d)) return s;
  tabcl__sdpa_facts f;
  s = tabcl__sdpa_facts_get(ctx, d, path, &f);
  return s ? s : tabcl__sdpa_exec_host(ctx, &f, d, path, q, k, v, mask, out);
}

tabcl_status tabcl_sdpa_host(tabcl_context *ctx, const tabcl_sdpa_desc *desc, const void *q,
                             const void *k, const void *v, const void *mask, void *out) {
  return tabcl__sdpa_host_path(ctx, desc, q, k, v, mask, out, TABCL__SDPA_AUTO);
}

/* Whether buffer m (named `name`) holds at least need bytes: a smaller one
   would be read or written past its end. */
static tabcl_status check_size(cl_mem m, uint64_t need, const char *name) {
  size_t have = 0;
  cl_int err = TABCL_CL(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof have, &have, NULL));
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetMemObjectInfo", "tabcl_sdpa_cl");
  if ((uint64_t)have < need)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_sdpa_cl: %s holds %zu bytes; the "
                       "descriptor needs %llu", name, have, (unsigned long long)need);
  return TABCL_OK;
}

/* The buffers' sizes against d (validated: the products fit). */
static tabcl_status check_sizes(const tabcl_sdpa_desc *d, cl_mem q, cl_mem k, cl_mem v,
                                cl_mem mask, cl_mem out) {
  const uint64_t es = tabcl__sdpa_elem_size(d->dtype), dh = (uint64_t)d->head_dim;
  const uint64_t qb = (uint64_t)d->batch * (uint64_t)d->q_len * (uint64_t)d->q_heads * dh * es;
  const uint64_t kb = (uint64_t)d->batch * (uint64_t)d->kv_len * (uint64_t)d->kv_heads * dh * es;
  const uint64_t mb = (uint64_t)(d->mask_batch_broadcast ? 1 : d->batch) *
                      (uint64_t)(d->mask_head_broadcast ? 1 : d->q_heads) *
                      (uint64_t)(d->mask_query_broadcast ? 1 : d->q_len) * (uint64_t)d->kv_len *
                      (d->mask == TABCL_MASK_BOOL ? 1 : es);
  tabcl_status s = check_size(q, qb, "q");
  if (!s) s = check_size(out, qb, "out");
  if (!s && d->kv_len > 0) s = check_size(k, kb, "k");
  if (!s && d->kv_len > 0) s = check_size(v, kb, "v");
  if (!s && d->kv_len > 0 && d->mask != TABCL_MASK_NONE) s = check_size(mask, mb, "mask");
  return s;
}

tabcl_status tabcl_sdpa_cl(tabcl_context *ctx, const tabcl_sdpa_desc *desc, cl_mem q, cl_mem k,
                           cl_mem v, cl_mem mask, cl_mem out, cl_uint nwait, const cl_event *wait,
                           cl_event *ev) {
  tabcl_status s = tabcl__sdpa_validate("tabcl_sdpa_cl", ctx, desc, q != NULL, k != NULL,
                                        v != NULL, mask != NULL, out != NULL);
  if (s) return s;
  if ((nwait == 0) != (wait == NULL))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_sdpa_cl: nwait is %u but wait is %s",
                       nwait, wait ? "not NULL" : "NULL");
  if (ev) *ev = NULL;
  if (!tabcl__sdpa_has_work(desc)) {
    if (!ev) return TABCL_OK;
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, ev));
    return err == CL_SUCCESS ? TABCL_OK
                             : tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "tabcl_sdpa_cl");
  }
  s = check_sizes(desc, q, k, v, mask, out);
  if (s) return s;
  tabcl_sdpa_desc sd = *desc;
  if (sd.kv_len == 0) sd.mask = TABCL_MASK_NONE;
  tabcl__sdpa_bufs b = {q, k ? k : q, v ? v : q, mask, out};
  tabcl__sdpa_events e = {NULL, NULL, 0, ev != NULL};
  s = tabcl__sdpa_run(ctx, &sd, TABCL__SDPA_AUTO, &b, nwait, wait, &e);
  if (s) {
    tabcl__sdpa_events_release(&e);
    return s;
  }
  if (ev) *ev = e.last;
  return TABCL_OK;
}
