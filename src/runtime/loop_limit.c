/* How many loop iterations one work-item may run before the driver cuts
 * its loops short, measured once per context by cl/probe.cl's probe_loops
 * (a device fact for planners: attention splits its key loop below it). */
#include "runtime/internal.h"

static uint32_t lcg(uint32_t x) { return x * 1664525u + 1013904223u; }

/* The probe runs on a queue of its own, made for it and released after:
   it is asked for in the middle of calls that take a wait list (a `_cl`
   call's commands may wait on an event the caller completes only after
   the call returns), and waiting on the context's queue there would wait
   on the caller. */
static tabcl_status measure(tabcl_context *ctx, uint64_t *out) {
  cl_kernel k = NULL;
  cl_mem m = NULL;
  cl_command_queue q = NULL;
  cl_int err = CL_SUCCESS;
  tabcl_status s = tabcl__kernel_create(ctx, "probe", NULL, "probe_loops", &k);
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, sizeof(cl_uint), NULL, &m, "loop probe");
  if (!s) {
    if (tabcl__fault_cl()) err = CL_OUT_OF_HOST_MEMORY;
    else q = clCreateCommandQueue(ctx->cl, ctx->device, 0, &err);
    if (err != CL_SUCCESS) s = tabcl__cl_fail(err, "clCreateCommandQueue", "loop probe");
  }
  const cl_uint n = TABCL__LOOP_PROBE_N;
  if (!s) s = TABCL_SET_ARGS(k, "probe_loops", TABCL_ARG(m), TABCL_ARG(n));
  const size_t one = 1;
  if (!s) {
    err = TABCL_CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL));
    if (err != CL_SUCCESS) s = tabcl__cl_fail(err, "clEnqueueNDRangeKernel", "probe_loops");
  }
  cl_uint got = 0;
  if (!s) {
    cl_event ev = NULL;
    err = TABCL_CL(clEnqueueReadBuffer(q, m, CL_FALSE, 0, sizeof got, &got, 0, NULL, &ev));
    err = tabcl__wait_own(err, ev);
    if (err != CL_SUCCESS) s = tabcl__cl_fail(err, "clEnqueueReadBuffer", "loop probe");
  }
  if (q) {
    /* nothing may still run on it once it goes (a failure above may leave the kernel queued) */
    clFinish(q);
    clReleaseCommandQueue(q);
  }
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
  *out = ctx->target;
  out->dev = dev;
  return tabcl__loop_limit_known(ctx, &dev->loop_limit);
}

tabcl_status tabcl__loop_limit_learn(tabcl_context *ctx, int *known, tabcl__device_desc *dev,
                                     uint64_t loops, int *again) {
  *again = 0;
  if (*known || loops <= TABCL__LOOPS_UNCHECKED) return TABCL_OK;
  tabcl_status s = tabcl__loop_limit(ctx, &dev->loop_limit);
  if (!s) *known = *again = 1;
  return s;
}
