/* Kernel programs: sources (embedded or overridden), build options, the
 * in-memory cache per context and the disk cache of binaries. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

struct tabcl__program_entry {
  char *name;
  char *extra;
  cl_program program;   /* NULL while a thread builds it (ctx->built says when it is done) */
  char *store_key;      /* build.store=2: the disk-cache key its binary goes under at destroy
                           (plain malloc, as the disk cache's own allocations) */
  tabcl__program_entry *next;
};

static void store_binary(tabcl_context *ctx, cl_program p, const char *key, char *why,
                         size_t cap);

void tabcl__count_launch(tabcl_context *ctx) { atomic_fetch_add(&ctx->launches, 1); }

void tabcl__program_cache_clear(tabcl_context *ctx) {
  tabcl__program_entry *e = ctx->programs;
  while (e) {
    tabcl__program_entry *next = e->next;
    if (e->program && e->store_key) {
      /* best effort, as after a build; nobody is left to read a refusal */
      char why[sizeof ctx->cache_refusal];
      store_binary(ctx, e->program, e->store_key, why, sizeof why);
    }
    free(e->store_key);
    if (e->program) tabcl__kernel_cache_drop(e->program);
    if (e->program) clReleaseProgram(e->program);
    tabcl__free(e->name);
    tabcl__free(e->extra);
    tabcl__free(e);
    e = next;
  }
  ctx->programs = NULL;
}

static const tabcl__embedded_source *embedded(const char *name) {
  for (size_t i = 0; i < tabcl__embedded_source_count; i++)
    if (strcmp(tabcl__embedded_sources[i].name, name) == 0) return &tabcl__embedded_sources[i];
  return NULL;
}

/* Reads dir/name.cl into a fresh buffer; *text stays NULL if there is no such file. */
static tabcl_status read_override(const char *dir, const char *name, char **text, size_t *len) {
  *text = NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.cl", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) return TABCL_OK;
    return tabcl__fail(TABCL_IO_ERROR, "cannot read kernel source %s: %s", path, strerror(errno));
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = tabcl__malloc(cap);
  if (!buf) {
    fclose(f);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "out of host memory for the text of %s", path);
  }
  for (;;) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char *bigger = tabcl__realloc(buf, cap * 2);
    if (!bigger) {
      tabcl__free(buf);
      fclose(f);
      return tabcl__fail(TABCL_OUT_OF_MEMORY, "out of host memory for the text of %s", path);
    }
    buf = bigger;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    tabcl__free(buf);
    return tabcl__fail(TABCL_IO_ERROR, "cannot read kernel source %s", path);
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return TABCL_OK;
}

tabcl_status tabcl__program_source(const tabcl_context *ctx, const char *name, char **out) {
  const char *parts[2] = {"common", name};
  char *texts[2] = {NULL, NULL};
  size_t lens[2] = {0, 0};
  const char *use[2];
  tabcl_status s = TABCL_OK;
  *out = NULL;
  for (int i = 0; i < 2; i++) {
    if (ctx->kernel_dir && (s = read_override(ctx->kernel_dir, parts[i], &texts[i], &lens[i])))
      goto done;
    if (texts[i]) {
      use[i] = texts[i];
      continue;
    }
    const tabcl__embedded_source *e = embedded(parts[i]);
    if (!e) {
      s = tabcl__fail(TABCL_INVALID_ARGUMENT, "no kernel program named \"%s\"", parts[i]);
      goto done;
    }
    use[i] = e->text;
    lens[i] = e->length;
  }
  char *all = tabcl__malloc(lens[0] + lens[1] + 64);
  if (!all) {
    s = tabcl__fail(TABCL_OUT_OF_MEMORY,
                    "out of host memory for the %zu-byte source text of kernel program %s",
                    lens[0] + lens[1] + 64, name);
    goto done;
  }
  size_t n = 0;
  memcpy(all + n, use[0], lens[0]);
  n += lens[0];
  n += (size_t)sprintf(all + n, "\n#line 1 \"%s.cl\"\n", name);
  memcpy(all + n, use[1], lens[1]);
  n += lens[1];
  all[n] = '\0';
  *out = all;
done:
  tabcl__free(texts[0]);
  tabcl__free(texts[1]);
  return s;
}

void tabcl__device_build_options(const tabcl__device_desc *info, char *buf, size_t cap) {
  snprintf(buf, cap,
           "-cl-std=CL1.2 -DTABCL_HAS_FP64=%d -DTABCL_VENDOR_NVIDIA=%d -DTABCL_VENDOR_AMD=%d "
           "-DTABCL_VENDOR_INTEL=%d -DTABCL_IS_CPU=%d -DTABCL_MAX_WG=%zu -DTABCL_LOCAL_MEM=%llu "
           "-DTABCL_HAS_FMA=%d",
           info->has_fp64, info->is_nvidia, info->is_amd, info->is_intel, info->is_cpu,
           info->max_work_group_size, (unsigned long long)info->local_mem_size, info->has_fma);
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static char *cache_key(const tabcl_context *ctx, const char *source, const char *options) {
  uint64_t h = fnv1a(0xcbf29ce484222325ULL, source, strlen(source));
  const tabcl__device_desc *i = &ctx->info;
  size_t cap = strlen(options) + 2048;
  char *key = tabcl__malloc(cap);
  if (!key) return NULL;
  snprintf(key, cap,
           "tabcl program binary 1\ndevice=%s\nvendor=%s\ndriver=%s\nopencl_c=%s\n"
           "source_fnv1a=%016llx\nsource_bytes=%zu\noptions=%s\n",
           i->name, i->vendor, i->driver_version, i->opencl_c_version, (unsigned long long)h,
           strlen(source), options);
  return key;
}

static tabcl_status build_log(tabcl_context *ctx, cl_program prog, const char *name) {
  tabcl__fail(TABCL_BUILD_FAILED, "building kernel program \"%s\" for %s failed; build log:\n",
              name, ctx->info.name);
  size_t n = 0;
  if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
      n > 0) {
    char *log = tabcl__malloc(n + 1);
    if (log) {
      if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, n, log, NULL) ==
          CL_SUCCESS) {
        log[n] = '\0';
        tabcl__append_error(log);
      }
      tabcl__free(log);
    }
  }
  return TABCL_BUILD_FAILED;
}

static cl_program try_binary(tabcl_context *ctx, const unsigned char *bin, size_t size,
                             const char *options) {
  cl_int err = CL_SUCCESS, bin_status = CL_SUCCESS;
  /* No failure injection here: a binary that fails to load is rebuilt. */
  cl_program p = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &size, &bin, &bin_status, &err);
  if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
    if (p) clReleaseProgram(p);
    return NULL;
  }
  if (clBuildProgram(p, 1, &ctx->device, options, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram(p);
    return NULL;
  }
  return p;
}

static void store_binary(tabcl_context *ctx, cl_program p, const char *key, char *why,
                         size_t cap) {
  size_t size = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
      size == 0)
    return;
  /* Plain malloc: storing is best effort, so its failure is not a path to test. */
  unsigned char *bin = malloc(size);
  if (!bin) return;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
    tabcl__disk_cache_store(ctx->cache_dir, key, bin, size, why, cap);
  free(bin);
}

/* Builds without touching the context: the caller does not hold ctx->lock
   (other programs build meanwhile), and the disk cache's refusal, if any,
   goes to why. A program built from source goes into the disk cache now
   (build.store=1), or its key comes back in *store_key for the context's
   destroy to store it (build.store=2): asked for its binary, a CPU driver
   compiles every kernel of the program, which on PoCL cost more than the
   build itself (bench/history/2026-11-to-12.md, Tuning: build.store). */
static tabcl_status build(tabcl_context *ctx, const char *name, const char *extra,
                          cl_program *out, int *from_cache, char **store_key, char *why,
                          size_t cap) {
  char *source = NULL, *key = NULL, *options = NULL;
  cl_program p = NULL;
  tabcl_status s = tabcl__program_source(ctx, name, &source);
  if (s) return s;
  char devopts[512];
  tabcl__device_build_options(&ctx->info, devopts, sizeof devopts);
  size_t olen = strlen(devopts) + (extra ? strlen(extra) : 0) + 2;
  options = tabcl__malloc(olen);
  if (!options) {
    s = tabcl__fail(TABCL_OUT_OF_MEMORY,
                    "out of host memory for the build options of kernel program %s", name);
    goto done;
  }
  snprintf(options, olen, "%s%s%s", devopts, extra && *extra ? " " : "", extra ? extra : "");
  *from_cache = 0;
  if (ctx->cache_dir) {
    key = cache_key(ctx, source, options);
    if (!key) {
      s = tabcl__fail(TABCL_OUT_OF_MEMORY,
                      "out of host memory for the disk-cache key of kernel program %s", name);
      goto done;
    }
    size_t size = 0;
    unsigned char *bin = tabcl__disk_cache_load(ctx->cache_dir, key, &size, why, cap);
    if (bin) {
      p = try_binary(ctx, bin, size, options);
      free(bin);
      if (p) *from_cache = 1;
    }
  }
  if (!p) {
    cl_int err = CL_SUCCESS;
    const char *src = source;
    if (tabcl__fault_cl()) err = CL_OUT_OF_HOST_MEMORY;
    else p = clCreateProgramWithSource(ctx->cl, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) {
      p = NULL;
      s = tabcl__cl_fail(err, "clCreateProgramWithSource", name);
      goto done;
    }
    err = TABCL_CL(clBuildProgram(p, 1, &ctx->device, options, NULL, NULL));
    if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS) {
      s = build_log(ctx, p, name);
      goto done;
    }
    if (err != CL_SUCCESS) {
      s = tabcl__cl_fail(err, "clBuildProgram", name);
      goto done;
    }
    const int64_t when = tabcl__tuned(&ctx->tune, TABCL__TUNE_BUILD_STORE);
    if (key && when == 1) store_binary(ctx, p, key, why, cap);
    /* plain malloc, as the disk cache allocates: a store is best effort,
       so its memory is no failure path to test (none: nothing is stored) */
    const size_t klen = key ? strlen(key) + 1 : 0;
    if (key && when == 2 && (*store_key = malloc(klen))) memcpy(*store_key, key, klen);
  }
  *out = p;
  p = NULL;
done:
  if (p) clReleaseProgram(p);
  tabcl__free(source);
  tabcl__free(key);
  tabcl__free(options);
  return s;
}

int tabcl__disk_cache_refusal(tabcl_context *ctx, char *buf, size_t cap) {
  if (!cap) return 0;
  buf[0] = '\0';
  if (!ctx) return 0;
  /* build() writes it under the lock */
  pthread_mutex_lock(&ctx->lock);
  snprintf(buf, cap, "%s", ctx->cache_refusal);
  pthread_mutex_unlock(&ctx->lock);
  return buf[0] != '\0';
}

static int same(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static tabcl__program_entry *find(tabcl_context *ctx, const char *name, const char *extra) {
  for (tabcl__program_entry *e = ctx->programs; e; e = e->next)
    if (same(e->name, name) && same(e->extra, extra)) return e;
  return NULL;
}

tabcl_status tabcl__program_get(tabcl_context *ctx, const char *name, const char *extra,
                                cl_program *out, int *from_cache) {
  pthread_mutex_lock(&ctx->lock);
  tabcl__program_entry *e;
  /* A program another thread is building is waited for, not built twice;
     if that build fails its entry goes, and this thread tries itself. */
  while ((e = find(ctx, name, extra)) && !e->program) pthread_cond_wait(&ctx->built, &ctx->lock);
  if (e) {
    *out = e->program;
    pthread_mutex_unlock(&ctx->lock);
    if (from_cache) *from_cache = -1;
    return TABCL_OK;
  }
  e = tabcl__calloc(1, sizeof *e);
  if (!e || !(e->name = tabcl__strdup(name)) || !(e->extra = tabcl__strdup(extra ? extra : ""))) {
    if (e) tabcl__free(e->name);
    tabcl__free(e);
    pthread_mutex_unlock(&ctx->lock);
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "out of host memory for the program list entry of kernel program %s", name);
  }
  /* the entry says "being built"; the build itself runs unlocked, so that
     programs build side by side (tabcl__programs_prefetch) */
  e->next = ctx->programs;
  ctx->programs = e;
  pthread_mutex_unlock(&ctx->lock);
  char why[sizeof ctx->cache_refusal] = "";
  cl_program p = NULL;
  char *store_key = NULL;
  int cached = 0;
  tabcl_status s = build(ctx, name, extra, &p, &cached, &store_key, why, sizeof why);
  pthread_mutex_lock(&ctx->lock);
  if (why[0]) memcpy(ctx->cache_refusal, why, sizeof why);
  if (s == TABCL_OK) {
    e->program = p;
    e->store_key = store_key;
    if (cached) ctx->stats.programs_from_cache++;
    else ctx->stats.programs_built++;
    *out = p;
  } else {
    tabcl__program_entry **at = &ctx->programs;
    while (*at != e) at = &(*at)->next;
    *at = e->next;
    tabcl__free(e->name);
    tabcl__free(e->extra);
    tabcl__free(e);
  }
  pthread_cond_broadcast(&ctx->built);
  pthread_mutex_unlock(&ctx->lock);
  if (from_cache && s == TABCL_OK) *from_cache = cached;   /* a failure changes no output */
  return s;
}

/* ---- building side by side ------------------------------------------- */

typedef struct prefetch_job {
  tabcl_context *ctx;
  const tabcl__program_want *w;
  int n;
  atomic_int next;
} prefetch_job;

static void *prefetch_worker(void *arg) {
  prefetch_job *j = arg;
  (void)tabcl__fault_suspend(1);
  for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
    cl_program p;
    (void)tabcl__program_get(j->ctx, j->w[i].name, j->w[i].extra, &p, NULL);
  }
  return NULL;
}

#define PREFETCH_THREADS 8

int tabcl__build_threads(const tabcl_context *ctx) {
  int threads = (int)tabcl__tuned_rule(&ctx->tune, TABCL__TUNE_BUILD_THREADS, 0);
  if (threads <= 0) threads = tabcl__online_cores();
  return threads > PREFETCH_THREADS ? PREFETCH_THREADS : threads;
}

void tabcl__programs_prefetch(tabcl_context *ctx, int n, const tabcl__program_want *w) {
  int missing = 0;
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < n; i++) missing += !find(ctx, w[i].name, w[i].extra);
  pthread_mutex_unlock(&ctx->lock);
  /* An armed failure injection wants one thread's deterministic order of
     allocations, OpenCL calls and file operations: the calls build on
     demand then, as with build.threads=1. */
  if (missing < 2 || tabcl__fault_armed()) return;
  int threads = tabcl__build_threads(ctx);
  if (threads < 2) return;
  if (threads > missing) threads = missing;
  prefetch_job j = {ctx, w, n, 0};
  pthread_t t[PREFETCH_THREADS];
  int started = 0;
  /* a thread that cannot start costs nothing but its share: the caller
     builds what is left when it asks */
  while (started < threads && pthread_create(&t[started], NULL, prefetch_worker, &j) == 0)
    started++;
  for (int k = 0; k < started; k++) pthread_join(t[k], NULL);
}

/* ---- kernel objects, kept for reuse ---------------------------------------
 *
 * Every kernel object made here has a slot while it lives: its program and
 * name, whether a caller holds it, and which of its arguments are buffers.
 * A kernel given back stays in its slot, idle, for the next create of the
 * same program and name; one without a slot (the table full) is released.
 * The table is process-wide (programs are unique handles); a context drops
 * its programs' kernels before it releases the programs.
 */
enum { KERNEL_SLOTS = 128, KERNEL_NAME = 64 };
typedef struct kernel_slot {
  cl_program program;
  cl_kernel kernel;     /* NULL: a free slot */
  char name[KERNEL_NAME];
  int held;             /* a caller has it */
  uint64_t mem_args;    /* bit i: argument i was last set to a buffer */
} kernel_slot;
static kernel_slot kernel_slots[KERNEL_SLOTS];
static pthread_mutex_t kernel_lock = PTHREAD_MUTEX_INITIALIZER;

tabcl_status tabcl__kernel_create(tabcl_context *ctx, const char *program, const char *extra,
                                  const char *kernel, cl_kernel *out) {
  cl_program p;
  *out = NULL;
  tabcl_status s = tabcl__program_get(ctx, program, extra, &p, NULL);
  if (s) return s;
  const int named = strlen(kernel) < KERNEL_NAME;
  pthread_mutex_lock(&kernel_lock);
  for (int i = 0; named && i < KERNEL_SLOTS; i++) {
    kernel_slot *e = &kernel_slots[i];
    if (e->kernel && !e->held && e->program == p && !strcmp(e->name, kernel)) {
      e->held = 1;
      *out = e->kernel;
      break;
    }
  }
  pthread_mutex_unlock(&kernel_lock);
  if (*out) return TABCL_OK;
  cl_int err = CL_SUCCESS;
  cl_kernel k = NULL;
  if (tabcl__fault_cl()) err = CL_OUT_OF_HOST_MEMORY;
  else k = clCreateKernel(p, kernel, &err);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clCreateKernel", kernel);
  pthread_mutex_lock(&kernel_lock);
  for (int i = 0; named && i < KERNEL_SLOTS; i++)
    if (!kernel_slots[i].kernel) {
      kernel_slots[i] = (kernel_slot){p, k, "", 1, 0};
      memcpy(kernel_slots[i].name, kernel, strlen(kernel) + 1);
      break;
    }
  pthread_mutex_unlock(&kernel_lock);
  *out = k;
  return TABCL_OK;
}

void tabcl__kernel_release(cl_kernel k) {
  if (!k) return;
  pthread_mutex_lock(&kernel_lock);
  kernel_slot *e = NULL;
  for (int i = 0; i < KERNEL_SLOTS && !e; i++)
    if (kernel_slots[i].kernel == k) e = &kernel_slots[i];
  int keep = e != NULL;
  /* no buffer stays referenced by an idle kernel: a driver that holds the
     buffers set as arguments would keep them alive past their release */
  static const cl_mem none = NULL;
  for (unsigned a = 0; keep && a < 64; a++)
    if (e->mem_args >> a & 1)
      keep = clSetKernelArg(k, a, sizeof none, &none) == CL_SUCCESS;
  if (e && keep) {
    e->held = 0;
    e->mem_args = 0;
  } else if (e) {
    *e = (kernel_slot){0};
  }
  pthread_mutex_unlock(&kernel_lock);
  if (!keep) clReleaseKernel(k);
}

void tabcl__kernel_cache_drop(cl_program p) {
  pthread_mutex_lock(&kernel_lock);
  for (int i = 0; i < KERNEL_SLOTS; i++) {
    kernel_slot *e = &kernel_slots[i];
    if (e->kernel && e->program == p) {
      clReleaseKernel(e->kernel);
      *e = (kernel_slot){0};
    }
  }
  pthread_mutex_unlock(&kernel_lock);
}

tabcl_status tabcl__set_args(cl_kernel k, const char *kname, int first, int n,
                             const tabcl__arg *args) {
  uint64_t mem = 0, set = 0;
  for (int i = 0; i < n; i++) {
    cl_int err = TABCL_CL(clSetKernelArg(k, (cl_uint)(first + i), args[i].size, args[i].ptr));
    if (err != CL_SUCCESS) {
      char what[160];
      snprintf(what, sizeof what, "setting argument %d of %s", first + i, kname);
      return tabcl__cl_fail(err, "clSetKernelArg", what);
    }
    if (first + i < 64) {
      set |= (uint64_t)1 << (first + i);
      if (args[i].mem) mem |= (uint64_t)1 << (first + i);
    }
  }
  /* which arguments now hold buffers, for the kernel's return */
  pthread_mutex_lock(&kernel_lock);
  for (int i = 0; i < KERNEL_SLOTS; i++)
    if (kernel_slots[i].kernel == k) {
      kernel_slots[i].mem_args = (kernel_slots[i].mem_args & ~set) | mem;
      break;
    }
  pthread_mutex_unlock(&kernel_lock);
  return TABCL_OK;
}

enum { TRACE_CAP = 4096 };
static _Thread_local int trace_on, trace_count;
static _Thread_local cl_event trace_events[TRACE_CAP];

void tabcl__trace_begin(void) {
  for (int i = 0; i < trace_count; i++) clReleaseEvent(trace_events[i]);
  trace_count = 0;
  trace_on = 1;
}

tabcl_status tabcl__trace_end(tabcl_context *ctx, double *seconds, int *launches) {
  trace_on = 0;
  tabcl_status s = tabcl__finish(ctx);
  cl_ulong first = ~(cl_ulong)0, last = 0;
  for (int i = 0; i < trace_count; i++) {
    cl_ulong a = 0, b = 0;
    if (!s && (clGetEventProfilingInfo(trace_events[i], CL_PROFILING_COMMAND_START, sizeof a, &a,
                                       NULL) != CL_SUCCESS ||
               clGetEventProfilingInfo(trace_events[i], CL_PROFILING_COMMAND_END, sizeof b, &b,
                                       NULL) != CL_SUCCESS))
      s = tabcl__fail(TABCL_OPENCL_ERROR, "trace: a launch has no profiling times");
    if (a < first) first = a;
    if (b > last) last = b;
    clReleaseEvent(trace_events[i]);
  }
  if (launches) *launches = trace_count;
  if (!s && trace_count == 0) s = tabcl__fail(TABCL_INVALID_ARGUMENT, "trace: no launches");
  trace_count = 0;
  if (!s) *seconds = (double)(last - first) * 1e-9;
  return s;
}

tabcl_status tabcl__launch(tabcl_context *ctx, cl_kernel k, cl_uint dims, const size_t *global,
                           const size_t *local, cl_uint nwait, const cl_event *wait,
                           cl_event *ev, const char *what) {
  cl_event mine = NULL;
  int tracing = trace_on && trace_count < TRACE_CAP;
  /* an empty list goes as NULL: OpenCL refuses a non-NULL one with no events */
  cl_int err = TABCL_CL(clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, global, local, nwait,
                                               nwait ? wait : NULL,
                                               ev ? ev : tracing ? &mine : NULL));
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clEnqueueNDRangeKernel", what);
  if (tracing) {
    if (ev) clRetainEvent(*ev);
    trace_events[trace_count++] = ev ? *ev : mine;
  }
  tabcl__count_launch(ctx);
  return TABCL_OK;
}

int tabcl_program_count(void) {
  int n = 0;
  for (size_t i = 0; i < tabcl__embedded_source_count; i++)
    if (strcmp(tabcl__embedded_sources[i].name, "common") != 0) n++;
  return n;
}

const char *tabcl_program_name(int idx) {
  int n = 0;
  for (size_t i = 0; i < tabcl__embedded_source_count; i++) {
    if (strcmp(tabcl__embedded_sources[i].name, "common") == 0) continue;
    if (n++ == idx) return tabcl__embedded_sources[i].name;
  }
  return NULL;
}

tabcl_status tabcl_program_prepare(tabcl_context *ctx, int i, int *from_cache) {
  const char *name = tabcl_program_name(i);
  if (!ctx || !name)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_program_prepare: no context or no program %d", i);
  cl_program p;
  return tabcl__program_get(ctx, name, NULL, &p, from_cache);
}

size_t tabcl__wg_size(const tabcl_context *ctx, cl_kernel k, size_t want) {
  size_t cap = ctx->info.max_work_group_size;
  if (ctx->info.max_work_item_sizes[0] < cap) cap = ctx->info.max_work_item_sizes[0];
  size_t kmax = 0;
  if (k && clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                      NULL) == CL_SUCCESS &&
      kmax > 0 && kmax < cap)
    cap = kmax;
  size_t wg = 1;
  while (wg * 2 <= want && wg * 2 <= cap) wg *= 2;
  return wg;
}
