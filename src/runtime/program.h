/* Programs, kernels, launches and the disk cache (program.c, disk_cache.c, selfcheck.c). */
#ifndef TABCL_RUNTIME_PROGRAM_H
#define TABCL_RUNTIME_PROGRAM_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

#include "tabcl/tabcl.h"

/* ---- programs and kernels (program.c, disk_cache.c) ------------------- */

/* The built-in kernel sources (generated at build time from cl/). */
typedef struct tabcl__embedded_source {
  const char *name;       /* "hash" for cl/hash.cl */
  const char *text;
  size_t length;
} tabcl__embedded_source;
extern const tabcl__embedded_source tabcl__embedded_sources[];
extern const size_t tabcl__embedded_source_count;

/* The build options that come from the device (fp64, vendor, limits). */
void tabcl__device_build_options(const tabcl__device_desc *info, char *buf, size_t cap);
/* The full text handed to the compiler for program `name`: common.cl, then
   name.cl, each from the context's kernel_dir when it holds that file, else
   the copy built into the library. *out is freed with tabcl__free. */
tabcl_status tabcl__program_source(const tabcl_context *ctx, const char *name, char **out);

/* Returns the context's program `name` (cl/<name>.cl, with cl/common.cl in
   front), built with the device options plus `extra` (NULL = none). The
   program stays owned by the context. from_cache (may be NULL) tells
   whether it came from the disk cache; on a memory-cache hit it is -1. */
tabcl_status tabcl__program_get(tabcl_context *ctx, const char *name, const char *extra,
                                cl_program *out, int *from_cache);
/* A kernel object of that program for the caller alone until it gives it
   back with tabcl__kernel_release, so that threads never share argument
   state: an idle one given back earlier where there is one (creating one
   costs microseconds on some drivers, and a call makes several), else a
   fresh one. Every argument must be set before a launch, as on a fresh
   object. */
tabcl_status tabcl__kernel_create(tabcl_context *ctx, const char *program, const char *extra,
                                  const char *kernel, cl_kernel *out);
/* Gives k back (NULL is fine): kept idle for the next create of its
   program and name, its buffer arguments set to NULL first (a driver may
   hold a buffer set as an argument alive), or released. */
void tabcl__kernel_release(cl_kernel k);
/* Releases the idle kernels of program p (before p is released). */
void tabcl__kernel_cache_drop(cl_program p);

typedef struct tabcl__arg {
  size_t size;
  const void *ptr;        /* NULL with a size: local memory of that many bytes */
  int mem;                /* 1: a buffer (cl_mem), set to NULL when the kernel is given back */
} tabcl__arg;
#define TABCL_ARG(v) ((tabcl__arg){sizeof(v), &(v), _Generic((v), cl_mem: 1, default: 0)})
#define TABCL_LOCAL(bytes) ((tabcl__arg){(bytes), NULL, 0})
/* Sets arguments first, first + 1, ... of k from args. */
tabcl_status tabcl__set_args(cl_kernel k, const char *kname, int first, int n,
                             const tabcl__arg *args);
#define TABCL_SET_ARGS_AT(k, kname, first, ...)                                        \
  tabcl__set_args((k), (kname), (first),                                               \
                  (int)(sizeof((tabcl__arg[]){__VA_ARGS__}) / sizeof(tabcl__arg)),     \
                  (tabcl__arg[]){__VA_ARGS__})
#define TABCL_SET_ARGS(k, kname, ...) TABCL_SET_ARGS_AT(k, kname, 0, __VA_ARGS__)

/* Counts one launch made outside tabcl__launch (CLBlast's). */
void tabcl__count_launch(tabcl_context *ctx);
/* Releases every program of the context (context destruction). */
void tabcl__program_cache_clear(tabcl_context *ctx);
/* Programs a call is about to need, built (or loaded from the disk cache)
   side by side before it asks for them one by one: on a cold start the
   builds, not the work, are the call's time. Those already in ctx are
   skipped; with fewer than two to build nothing happens. Best effort: it
   returns when every build has ended, and a build that failed is left for
   the caller's own tabcl__program_get to meet and report. build.threads
   (1, the online cores on NVIDIA GPUs) bounds the threads; 1 turns this off, as
   does an armed failure injection. The builds run with failure injection
   suspended (tabcl__fault_suspend), so that a count of a call's
   allocations and OpenCL calls does not depend on thread timing. */
typedef struct tabcl__program_want {
  const char *name, *extra;   /* as tabcl__program_get's */
} tabcl__program_want;
void tabcl__programs_prefetch(tabcl_context *ctx, int n, const tabcl__program_want *w);
/* The threads tabcl__programs_prefetch would use (below 2: it does
   nothing), so that a caller can skip planning what it would name. */
int tabcl__build_threads(const tabcl_context *ctx);

/* Enqueues k; counts a launch. global sizes must be multiples of local when
   local is given. wait/ev as clEnqueueNDRangeKernel. */
tabcl_status tabcl__launch(tabcl_context *ctx, cl_kernel k, cl_uint dims, const size_t *global,
                           const size_t *local, cl_uint nwait, const cl_event *wait,
                           cl_event *ev, const char *what);

/* Benchmarks: while a trace is open on the calling thread, every launch
   keeps its event, and tabcl__trace_end returns the device time from the
   first kernel's start to the last kernel's end (host work before and
   between launches of one call is then not counted). At most 4096 launches
   are traced. */
void tabcl__trace_begin(void);
tabcl_status tabcl__trace_end(tabcl_context *ctx, double *seconds, int *launches);

/* Disk cache of program binaries (disk_cache.c). key describes everything
   the binary depends on. A missing, corrupt or stale entry gives NULL. A
   folder or entry that is not this user's own, or that others may write,
   is refused: nothing is read from or written into it, and why (cap bytes,
   may be NULL) receives a sentence naming it and the reason. */
unsigned char *tabcl__disk_cache_load(const char *dir, const char *key, size_t *size, char *why,
                                      size_t cap);
/* Atomic (a fresh 0600 temp file written whole and synced, then renamed);
   failure to write is not an error for the caller. */
void tabcl__disk_cache_store(const char *dir, const char *key, const unsigned char *bin,
                             size_t size, char *why, size_t cap);
/* The path of key's entry (for tests that corrupt it); caller frees. */
char *tabcl__disk_cache_path(const char *dir, const char *key);
/* Test-only: the temporary name this process's store will try `ahead`
   attempts from now for the entry file name `entry` ("<hex>.clbin"), so a
   test can plant something there. */
void tabcl__disk_cache_temp_name(const char *entry, unsigned ahead, char *buf, size_t cap);
/* The last refusal of ctx's disk cache (a folder or an entry it would not
   trust, and why) copied into buf; returns 0 and gives "" when there was none. */
int tabcl__disk_cache_refusal(tabcl_context *ctx, char *buf, size_t cap);


/* ---- self-checks (selfcheck.c) ---------------------------------------- */

typedef tabcl_status (*tabcl__selfcheck_fn)(tabcl_context *ctx);
tabcl_status tabcl__selfcheck_probe(tabcl_context *ctx);

#endif
