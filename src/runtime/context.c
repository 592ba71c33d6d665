/* Context creation: device, OpenCL context and queue (tabcl's own or the
 * caller's, tabcl_context_create_cl), options, stats. */
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
  if (ctx->app_objects && ctx->device) clReleaseDevice(ctx->device);
  tabcl__free(ctx->kernel_dir);
  tabcl__free(ctx->cache_dir);
  pthread_cond_destroy(&ctx->built);
  pthread_mutex_destroy(&ctx->lock);
  tabcl__free(ctx);
}

/* A context with its locks, staging area, pool and fill threads, on which
   destroy() may be called; NULL (the failure recorded) when out of memory. */
static tabcl_context *context_alloc(const char *fn) {
  tabcl_context *ctx = tabcl__calloc(1, sizeof *ctx);
  if (!ctx) {
    tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for the context (%zu bytes)", fn,
                sizeof *ctx);
    return NULL;
  }
  if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
    tabcl__free(ctx);
    tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: cannot create a mutex", fn);
    return NULL;
  }
  if (pthread_cond_init(&ctx->built, NULL) != 0) {
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: cannot create a condition variable", fn);
    return NULL;
  }
  if (tabcl__staging_init(ctx) != TABCL_OK) {
    pthread_cond_destroy(&ctx->built);
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    return NULL;
  }
  if (tabcl__pool_init(ctx) != TABCL_OK) {
    tabcl__staging_destroy(ctx);
    pthread_cond_destroy(&ctx->built);
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    return NULL;
  }
  if (tabcl__workers_init(&ctx->workers) != 0) {
    tabcl__pool_destroy(ctx);
    tabcl__staging_destroy(ctx);
    pthread_cond_destroy(&ctx->built);
    pthread_mutex_destroy(&ctx->lock);
    tabcl__free(ctx);
    tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: cannot create a mutex", fn);
    return NULL;
  }
  atomic_init(&ctx->launches, 0);
  ctx->hash_bits = 64;
  return ctx;
}

/* What both creates share once ctx->platform and ctx->device are set: the
   device description, its profile, the tuning, the staging area and pool
   settings and the kernel and cache folders. */
static tabcl_status context_configure(tabcl_context *ctx, const tabcl_options *o, const char *fn) {
  ctx->max_batch_per_launch = o->max_batch_per_launch;
  ctx->target = (tabcl__target){&ctx->info, &ctx->tune, o->max_batch_per_launch,
                                tabcl__online_cores()};
  tabcl_status s = tabcl__device_query(ctx->platform, ctx->device, &ctx->info);
  if (s != TABCL_OK) return s;
  /* Before the tuning table is resolved: every key and every planner sees
     the profile's limits. */
  s = tabcl__device_profile_apply(o->device_profile ? o->device_profile
                                                    : getenv("TABCL_DEVICE_PROFILE"), &ctx->info);
  if (s != TABCL_OK) return s;
  s = tabcl__tune_resolve(&ctx->info, o->tune ? o->tune : getenv("TABCL_TUNE"), &ctx->tune);
  if (s != TABCL_OK) return s;
  tabcl__staging_configure(ctx);
  tabcl__pool_configure(ctx);
  const char *kdir = o->kernel_dir ? o->kernel_dir : getenv("TABCL_KERNEL_DIR");
  if ((kdir && *kdir && !(ctx->kernel_dir = tabcl__strdup(kdir))) ||
      !resolve_cache_dir(o->cache_dir, &ctx->cache_dir))
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the kernel and cache folder names", fn);
  return TABCL_OK;
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
  tabcl_context *ctx = context_alloc("tabcl_context_create");
  if (!ctx) return TABCL_OUT_OF_MEMORY;
  tabcl_status s = tabcl__device_select(o.device, &ctx->platform, &ctx->device);
  if (s != TABCL_OK) goto fail;
  s = context_configure(ctx, &o, "tabcl_context_create");
  if (s != TABCL_OK) goto fail;

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
fail:
  destroy(ctx);
  return s;
}

/* A query of a caller's object for create_cl's checks: an object OpenCL
   calls invalid is the caller's bad argument, anything else a failure. */
static tabcl_status app_query(cl_int err, const char *call, const char *arg) {
  if (err == CL_SUCCESS) return TABCL_OK;
  if (err == CL_INVALID_CONTEXT || err == CL_INVALID_DEVICE || err == CL_INVALID_COMMAND_QUEUE)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "tabcl_context_create_cl: %s is not a valid OpenCL object (%s: %s)", arg,
                       call, tabcl__cl_error_name(err));
  return tabcl__cl_fail(err, call, arg);
}

/* create_cl's checks of the caller's objects; *platform gets the device's. */
static tabcl_status app_check(cl_context context, cl_device_id device, cl_command_queue queue,
                              cl_platform_id *platform) {
  const char *fn = "tabcl_context_create_cl";
  size_t bytes = 0;
  tabcl_status s = app_query(TABCL_CL(clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, NULL,
                                                       &bytes)),
                             "clGetContextInfo", "context");
  if (s) return s;
  size_t n = bytes / sizeof(cl_device_id);
  cl_device_id *devs = n ? tabcl__malloc(n * sizeof *devs) : NULL;
  if (n && !devs)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the context's device list (%zu bytes)", fn,
                       n * sizeof *devs);
  s = app_query(TABCL_CL(clGetContextInfo(context, CL_CONTEXT_DEVICES, n * sizeof *devs, devs,
                                          NULL)),
                "clGetContextInfo", "context");
  int found = 0;
  for (size_t i = 0; !s && i < n; i++) found |= devs[i] == device;
  tabcl__free(devs);
  if (s) return s;
  if (!found)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: device is not one of context's devices (CL_CONTEXT_DEVICES lists %zu)",
                       fn, n);
  cl_context qctx = NULL;
  cl_device_id qdev = NULL;
  cl_command_queue_properties props = 0;
  s = app_query(TABCL_CL(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL)),
                "clGetCommandQueueInfo", "queue");
  if (!s)
    s = app_query(TABCL_CL(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev,
                                                 NULL)),
                  "clGetCommandQueueInfo", "queue");
  if (!s)
    s = app_query(TABCL_CL(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props,
                                                 NULL)),
                  "clGetCommandQueueInfo", "queue");
  if (s) return s;
  if (qctx != context)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: queue belongs to another OpenCL context (CL_QUEUE_CONTEXT)", fn);
  if (qdev != device)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: queue belongs to another device (CL_QUEUE_DEVICE)", fn);
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: queue executes out of order; pass an in-order queue (created "
                       "without CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)", fn);
  return app_query(TABCL_CL(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof *platform,
                                            platform, NULL)),
                   "clGetDeviceInfo", "device");
}

tabcl_status tabcl_context_create_cl(cl_context context, cl_device_id device,
                                     cl_command_queue queue, const tabcl_options *opts,
                                     tabcl_context **out) {
  const char *fn = "tabcl_context_create_cl";
  if (!out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (!context) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: context is NULL", fn);
  if (!device) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: device is NULL", fn);
  if (!queue) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: queue is NULL", fn);
  tabcl_options o = {0};
  if (opts) o = *opts;
  if (o.device)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: opts->device is \"%s\"; it must be NULL (the device is the "
                       "device argument)", fn, o.device);
  if (o.max_batch_per_launch < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: max_batch_per_launch is negative (%lld)", fn,
                       (long long)o.max_batch_per_launch);
  cl_platform_id platform = NULL;
  tabcl_status s = app_check(context, device, queue, &platform);
  if (s) return s;
  tabcl_context *ctx = context_alloc(fn);
  if (!ctx) return TABCL_OUT_OF_MEMORY;
  /* Retained before anything can fail: destroy() releases them either way,
     so a failure leaves the caller's reference counts as they were. */
  clRetainContext(context);
  clRetainCommandQueue(queue);
  clRetainDevice(device);
  ctx->cl = context;
  ctx->queue = queue;
  ctx->device = device;
  ctx->platform = platform;
  ctx->app_objects = 1;
  s = context_configure(ctx, &o, fn);
  if (s) {
    destroy(ctx);
    return s;
  }
  *out = ctx;
  return TABCL_OK;
}

void tabcl_context_destroy(tabcl_context *ctx) {
  if (!ctx) return;
  /* The transfer queue is tabcl's own, whoever made the context. */
  if (ctx->transfer) tabcl__queue_drain(ctx->transfer);
  /* A caller's queue is not drained: a marker would wait for the caller's
     work too, which may wait on events set only after this returns. What
     tabcl enqueued there and still runs keeps what it uses alive (OpenCL
     frees a released object once its commands are done). */
  if (ctx->queue && !ctx->app_objects) tabcl__queue_drain(ctx->queue);
  else if (ctx->queue) clFlush(ctx->queue);
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
