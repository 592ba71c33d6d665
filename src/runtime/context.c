/* Context creation: device, OpenCL context and queue, options, stats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

/* The disk cache folder the options ask for; *dir stays NULL when the cache
   is off. Returns 0 only when out of memory. */
static int resolve_cache_dir(const char *opt, char **dir) {
  char buf[4096];
  const char *path = opt;
  *dir = NULL;
  if (!path) {
    const char *env = getenv("TABCL_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (env) path = env;
    else if (xdg && *xdg) snprintf(buf, sizeof buf, "%s/tabcl", xdg), path = buf;
    else if (home && *home) snprintf(buf, sizeof buf, "%s/.cache/tabcl", home), path = buf;
  }
  if (!path || !*path) return 1;
  *dir = tabcl__strdup(path);
  return *dir != NULL;
}

static void destroy(tabcl_context *ctx) {
  if (ctx->destroy_hook) ctx->destroy_hook(ctx);
  tabcl__workers_destroy(&ctx->workers);
  tabcl__staging_destroy(ctx);   /* unmaps through the queue: before it goes */
  tabcl__pool_destroy(ctx);      /* releases events of the queue: before it goes */
  tabcl__program_cache_clear(ctx);
  if (ctx->transfer) clReleaseCommandQueue(ctx->transfer);
  if (ctx->queue) clReleaseCommandQueue(ctx->queue);
  if (ctx->cl) clReleaseContext(ctx->cl);
  tabcl__free(ctx->kernel_dir);
  tabcl__free(ctx->cache_dir);
  pthread_cond_destroy(&ctx->built);
  pthread_mutex_destroy(&ctx->lock);
  tabcl__free(ctx);
}

tabcl_status tabcl_context_create(const tabcl_options *opts, tabcl_context **out) {
  if (!out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_context_create: out is NULL");
  *out = NULL;
  tabcl_options o = {0};
  if (opts) o = *opts;
  if (o.max_batch_per_launch < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "tabcl_context_create: max_batch_per_launch is negative (%lld)",
                       (long long)o.max_batch_per_launch);
  tabcl_context *ctx = tabcl__calloc(1, sizeof *ctx);
  if (!ctx)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "tabcl_context_create: out of host memory for the context (%zu bytes)",
                       sizeof *ctx);
  if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
    tabcl__free(ctx);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl_context_create: cannot create a mutex");
  }
  if (pthread_cond_init(&ctx->built, NULL) != 0) {
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl_context_create: cannot create a condition variable");
  }
  if (tabcl__staging_init(ctx) != TABCL_OK) {
    pthread_cond_destroy(&ctx->built);
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    return TABCL_OUT_OF_MEMORY;
  }
  if (tabcl__pool_init(ctx) != TABCL_OK) {
    tabcl__staging_destroy(ctx);
    pthread_cond_destroy(&ctx->built);
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    return TABCL_OUT_OF_MEMORY;
  }
  if (tabcl__workers_init(&ctx->workers) != 0) {
    tabcl__pool_destroy(ctx);
    tabcl__staging_destroy(ctx);
    pthread_cond_destroy(&ctx->built);
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl_context_create: cannot create a mutex");
  }
  atomic_init(&ctx->launches, 0);
  ctx->hash_bits = 64;
  ctx->max_batch_per_launch = o.max_batch_per_launch;
  tabcl_status s = tabcl__device_select(o.device, &ctx->platform, &ctx->device);
  if (s != TABCL_OK) goto fail;
  s = tabcl__device_query(ctx->platform, ctx->device, &ctx->info);
  if (s != TABCL_OK) goto fail;
  /* Before the tuning table is resolved: every key and every planner sees
     the profile's limits. */
  s = tabcl__device_profile_apply(o.device_profile ? o.device_profile
                                                   : getenv("TABCL_DEVICE_PROFILE"), &ctx->info);
  if (s != TABCL_OK) goto fail;
  s = tabcl__tune_resolve(&ctx->info, o.tune ? o.tune : getenv("TABCL_TUNE"), &ctx->tune);
  if (s != TABCL_OK) goto fail;
  tabcl__staging_configure(ctx);
  tabcl__pool_configure(ctx);

  const char *kdir = o.kernel_dir ? o.kernel_dir : getenv("TABCL_KERNEL_DIR");
  if (kdir && *kdir && !(ctx->kernel_dir = tabcl__strdup(kdir))) goto oom;
  if (!resolve_cache_dir(o.cache_dir, &ctx->cache_dir)) goto oom;

  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->platform, 0};
  if (tabcl__fault_cl()) err = CL_OUT_OF_HOST_MEMORY;
  else ctx->cl = clCreateContext(props, 1, &ctx->device, NULL, NULL, &err);
  if (err != CL_SUCCESS) {
    ctx->cl = NULL;
    s = tabcl__cl_fail(err, "clCreateContext", ctx->info.name);
    goto fail;
  }
  if (tabcl__fault_cl()) err = CL_OUT_OF_HOST_MEMORY;
  else
    ctx->queue = clCreateCommandQueue(ctx->cl, ctx->device, CL_QUEUE_PROFILING_ENABLE, &err);
  if (err != CL_SUCCESS) {
    ctx->queue = NULL;
    s = tabcl__cl_fail(err, "clCreateCommandQueue", ctx->info.name);
    goto fail;
  }
  *out = ctx;
  return TABCL_OK;
oom:
  s = tabcl__fail(TABCL_OUT_OF_MEMORY,
                  "tabcl_context_create: out of host memory for the kernel and cache folder names");
fail:
  destroy(ctx);
  return s;
}

void tabcl_context_destroy(tabcl_context *ctx) {
  if (!ctx) return;
  if (ctx->transfer) tabcl__queue_drain(ctx->transfer);
  if (ctx->queue) tabcl__queue_drain(ctx->queue);
  destroy(ctx);
}

tabcl_status tabcl__transfer_queue(tabcl_context *ctx, cl_command_queue *out) {
  /* Lazily: most contexts never stream, and a queue costs a driver thread
     on some platforms. */
  pthread_mutex_lock(&ctx->lock);
  cl_int err = CL_SUCCESS;
  if (!ctx->transfer) {
    cl_command_queue q = NULL;
    if (tabcl__fault_cl()) err = CL_OUT_OF_HOST_MEMORY;
    else q = clCreateCommandQueue(ctx->cl, ctx->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err == CL_SUCCESS) ctx->transfer = q;
  }
  *out = ctx->transfer;
  pthread_mutex_unlock(&ctx->lock);
  return err == CL_SUCCESS ? TABCL_OK
                           : tabcl__cl_fail(err, "clCreateCommandQueue", "the transfer queue");
}

void tabcl_context_stats(const tabcl_context *ctx, tabcl_stats *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!ctx) return;
  pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
  *out = ctx->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
  out->kernel_launches = atomic_load(&((tabcl_context *)ctx)->launches);
}

tabcl_status tabcl__context_tune(tabcl_context *ctx, const char *entries) {
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__context_tune: ctx is NULL");
  tabcl_status s = tabcl__tune_apply(&ctx->info, entries, &ctx->tune);
  if (!s) tabcl__staging_configure(ctx);
  if (!s) tabcl__pool_configure(ctx);
  return s;
}

void tabcl__context_set_hash_bits(tabcl_context *ctx, unsigned bits) {
  if (ctx) ctx->hash_bits = bits < 1 ? 1 : bits > 64 ? 64 : bits;
}

const char *tabcl_context_device_name(const tabcl_context *ctx) {
  return ctx ? ctx->info.name : "";
}
const char *tabcl_context_platform_name(const tabcl_context *ctx) {
  return ctx ? ctx->info.platform_name : "";
}

#include "tabcl/tabcl_cl.h"
cl_context tabcl_context_cl_context(const tabcl_context *ctx) { return ctx ? ctx->cl : NULL; }
cl_command_queue tabcl_context_cl_queue(const tabcl_context *ctx) { return ctx ? ctx->queue : NULL; }
cl_device_id tabcl_context_cl_device(const tabcl_context *ctx) { return ctx ? ctx->device : NULL; }
