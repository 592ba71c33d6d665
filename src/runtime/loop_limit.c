/* How many loop iterations one work-item may run before the driver cuts
 * its loops short, measured once per context by cl/probe.cl's probe_loops
 * (a device fact for planners: attention splits its key loop below it). */
#include "runtime/internal.h"

static uint32_t lcg(uint32_t x) { return x * 1664525u + 1013904223u; }

static tabcl_status measure(tabcl_context *ctx, uint64_t *out) {
  cl_kernel k = NULL;
  cl_mem m = NULL;
  tabcl_status s = tabcl__kernel_create(ctx, "probe", NULL, "probe_loops", &k);
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, sizeof(cl_uint), NULL, &m, "loop probe");
  const cl_uint n = TABCL__LOOP_PROBE_N;
  if (!s) s = TABCL_SET_ARGS(k, "probe_loops", TABCL_ARG(m), TABCL_ARG(n));
  const size_t one = 1;
  if (!s) s = tabcl__launch(ctx, k, 1, &one, &one, 0, NULL, NULL, "probe_loops");
  cl_uint got = 0;
  if (!s) s = tabcl__read(ctx, m, 0, sizeof got, &got);
  tabcl__buffer_release(m);
  tabcl__kernel_release(k);
  if (s) return s;
  /* The LCG (modulus 2^32, full period) repeats no value within n steps:
     the step count that gives `got` is how many iterations ran. */
  uint32_t x = 12345u;
  for (uint64_t i = 0; i < n; i++) {
    if (x == got) {
      *out = i;
      return TABCL_OK;
    }
    x = lcg(x);
  }
  if (x == got) {
    *out = 0;
    return TABCL_OK;
  }
  return tabcl__fail(TABCL_OPENCL_ERROR, "the loop probe on %s returned %08x, which no count "
                     "of iterations up to %u gives", ctx->info.name, (unsigned)got, (unsigned)n);
}

int tabcl__loop_limit_known(tabcl_context *ctx, uint64_t *out) {
  pthread_mutex_lock(&ctx->lock);
  const int known = ctx->loop_limit_known;
  *out = ctx->loop_limit;
  pthread_mutex_unlock(&ctx->lock);
  return known;
}

tabcl_status tabcl__loop_limit(tabcl_context *ctx, uint64_t *out) {
  if (tabcl__loop_limit_known(ctx, out)) return TABCL_OK;
  /* Outside the lock: the probe builds and runs a kernel, which takes it.
     Two threads may both measure; they find the same count. */
  uint64_t got = 0;
  tabcl_status s = measure(ctx, &got);
  if (s) return s;
  pthread_mutex_lock(&ctx->lock);
  ctx->loop_limit = got;
  ctx->loop_limit_known = 1;
  pthread_mutex_unlock(&ctx->lock);
  *out = got;
  return TABCL_OK;
}

void tabcl__context_set_loop_limit(tabcl_context *ctx, uint64_t limit) {
  pthread_mutex_lock(&ctx->lock);
  ctx->loop_limit = limit;
  ctx->loop_limit_known = 1;
  pthread_mutex_unlock(&ctx->lock);
}

int tabcl__context_target_limited(tabcl_context *ctx, tabcl__device_desc *dev, tabcl__target *out) {
  *dev = ctx->info;
  *out = tabcl__context_target(ctx);
  out->dev = dev;
  return tabcl__loop_limit_known(ctx, &dev->loop_limit);
}
