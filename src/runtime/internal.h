/* Internal interfaces shared by tabcl's host code. Nothing here is public:
 * tests may use it because they link the static library; tools use
 * include/tabcl/tabcl_tools.h instead. */
#ifndef TABCL_INTERNAL_H
#define TABCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#include "tabcl/tabcl.h"
#include "runtime/tune.h"

#if defined(__GNUC__)
#define TABCL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TABCL_PRINTF(a, b)
#endif

/* ---- errors (error.c) ------------------------------------------------- */

/* Records the calling thread's detail and returns s, so a failure path can
   be one line: return tabcl__fail(TABCL_INVALID_ARGUMENT, "...", ...); */
tabcl_status tabcl__fail(tabcl_status s, const char *fmt, ...) TABCL_PRINTF(2, 3);
/* Maps an OpenCL error to a status (allocation failures become
   TABCL_OUT_OF_MEMORY, the rest TABCL_OPENCL_ERROR) and records
   "<call>: CL_NAME (code)" plus an optional context. */
tabcl_status tabcl__cl_fail(cl_int err, const char *call, const char *what);
const char *tabcl__cl_error_name(cl_int err);
void tabcl__clear_error(void);
/* Appends text to the calling thread's detail (the build log, say). */
void tabcl__append_error(const char *text);

/* ---- host allocation with failure injection (alloc.c) ---------------- */

void *tabcl__malloc(size_t n);
void *tabcl__calloc(size_t count, size_t size);
void *tabcl__realloc(void *p, size_t n);
void tabcl__free(void *p);
char *tabcl__strdup(const char *s);
/* A buffer of n bytes that may be large (a loaded file): from
   TABCL__LARGE_ALLOC bytes, anonymous memory of its own in transparent huge
   pages where the system has them; freed by tabcl__free_large with the same
   n. Counted and failed like tabcl__malloc. */
#define TABCL__LARGE_ALLOC ((size_t)32 << 20)
void *tabcl__malloc_large(size_t n);
void tabcl__free_large(void *p, size_t n);

/* Failure injection. When built with TABCL_FAULT_INJECTION, a test can make
   the Nth host allocation or the Nth OpenCL call from now fail (1-based;
   0 = never). Counting is process-wide. */
void tabcl__fault_set(long fail_alloc_at, long fail_cl_at);
void tabcl__fault_reset(void);
int tabcl__fault_fired(void);     /* whether an injected failure happened since set */
long tabcl__fault_allocs_seen(void);
long tabcl__fault_cl_seen(void);
int tabcl__fault_cl(void);        /* 1: the OpenCL call about to be made must fail */
/* 1: this thread's allocations and OpenCL calls neither count nor fail
   until it is called again with 0 (work whose path depends on timing or
   that is best effort); returns the setting it replaced, for nesting. */
int tabcl__fault_suspend(int on);
/* Whether a failure is set to be injected (an allocation, OpenCL call or
   file operation counted to). */
int tabcl__fault_armed(void);
int tabcl__fault_enabled(void);   /* 1 when the build has injection compiled in */
/* File I/O: the Nth write, fsync or rename (of an index save or a cache
   store) from now fails with errno err (ENOSPC, EDQUOT: a full disk).
   tabcl__fault_set and tabcl__fault_reset turn it off again. */
void tabcl__fault_set_io(long fail_io_at, int err);
long tabcl__fault_io_seen(void);
int tabcl__fault_io(void);        /* the errno the I/O about to be made must fail with, or 0 */
/* Wraps an OpenCL call returning cl_int: fails it on demand before it runs. */
#define TABCL_CL(call) (tabcl__fault_cl() ? CL_OUT_OF_RESOURCES : (call))

/* Live host allocations and live device buffers made through this file's
   helpers, for leak checks in tests. */
long tabcl__alloc_live(void);
long tabcl__mem_live(void);
/* Bytes of the device buffers alive in the process (pooled ones included,
   staging areas and sub-buffers not), and the most since the last reset,
   which starts the next peak at the bytes alive then (buffer.c). */
long long tabcl__mem_bytes_live(void);
long long tabcl__mem_bytes_peak_reset(void);
/* A buffer about to be released leaves the count of bytes. */
void tabcl__mem_bytes_gone(cl_mem m);

/* ---- devices (device.c) ----------------------------------------------- */

/* The device description: everything a planner may read about a device.
   Filled from the OpenCL device (tabcl__device_query); planner tests fill
   it by hand. */
typedef struct tabcl__device_desc {
  char name[256];
  char vendor[256];
  char platform_name[256];
  char driver_version[128];
  char device_version[128];
  char opencl_c_version[128];
  char arch[64];                /* "sm_90" on NVIDIA (cl_nv_device_attribute_query),
                                   the device name on AMD, else "" */
  cl_device_type type;
  cl_uint compute_units;
  cl_uint max_work_item_dims;
  size_t max_work_item_sizes[3];
  size_t max_work_group_size;
  size_t preferred_wg_multiple; /* from a probe kernel; 1 if unknown */
  cl_ulong local_mem_size;
  cl_ulong max_mem_alloc_size;
  cl_ulong global_mem_size;
  cl_uint address_bits;
  cl_uint mem_base_addr_align_bits;
  int has_fp64, has_fp16, has_subgroups;
  int has_fma;                  /* CL_FP_FMA in CL_DEVICE_SINGLE_FP_CONFIG: fma() is an
                                   instruction, not a software routine (Mesa's llvmpipe
                                   says no: its fma() ran 200-350x slower than mad()) */
  int is_gpu, is_cpu, is_nvidia, is_amd, is_intel;
  int cl_major, cl_minor;       /* device OpenCL version */
  char profile[32];             /* the device profile clamping these values, "" for none */
  uint64_t loop_limit;          /* loop iterations a work-item may run where measured
                                   (runtime/loop_limit.c); 0: none, or not measured yet.
                                   Never set in a context's own info: an executor plans
                                   with a copy (tabcl__target_with_limit) */
} tabcl__device_desc;

/* Fills info for one device; every query is checked. */
tabcl_status tabcl__device_query(cl_platform_id p, cl_device_id d, tabcl__device_desc *info);

/* Resolves a selector (NULL = defaults) to one device. */
tabcl_status tabcl__device_select(const char *selector, cl_platform_id *p, cl_device_id *d);

/* The one walk of the OpenCL platforms and their devices, which device
   listing and selection share (and cl-probe, through tabcl_tools.h):
   clGetPlatformIDs (at most 32 platforms), then for each platform in that
   order clGetDeviceIDs over every device type (at most 64), handed to visit
   with the platform's index and clGetDeviceIDs's result (n is 0 unless it
   is CL_SUCCESS). A visit that returns a failure ends the walk with it. No
   platform at all is TABCL_NO_DEVICE; *platforms_err (may be NULL) gets
   clGetPlatformIDs's result. */
typedef tabcl_status (*tabcl__platform_visit)(void *arg, int index, cl_platform_id p, cl_int err,
                                              const cl_device_id *devs, int n);
tabcl_status tabcl__platform_walk(tabcl__platform_visit visit, void *arg, cl_int *platforms_err);

/* ---- device profiles (device_profile.c) ------------------------------- */

/* Clamps info down to the limits of the GPU family `name` (a row of the
   table in device_profile.c): limits only go down, fp64/fp16 only off, and
   info->profile names the profile. NULL or "" changes nothing. An unknown
   name is TABCL_INVALID_ARGUMENT listing the names; info is then untouched. */
tabcl_status tabcl__device_profile_apply(const char *name, tabcl__device_desc *info);
int tabcl__device_profile_count(void);
const char *tabcl__device_profile_name(int i);    /* NULL outside [0, count) */
const char *tabcl__device_profile_family(int i);  /* what it models */
const char *tabcl__device_profile_source(int i);  /* the dumps its values come from */

/* ---- context (context.c) ---------------------------------------------- */

typedef struct tabcl__program_entry tabcl__program_entry;

/* Produces bytes [at, at + n) of an upload's content into dst. */
typedef void (*tabcl__fill_fn)(void *dst, size_t at, size_t n, const void *arg);

/* A context's fill threads (fill.c): started on the first fill that wants
   them, parked between fills, joined when the context is destroyed. One
   fill uses them at a time (job); a fill that finds them busy starts
   threads of its own. */
#define TABCL__FILL_WORKERS_MAX 63
/* Fill functions whose last rate the threads keep: a call may run several
   fills in turn (a host lookup checks its offsets, then looks up). */
#define TABCL__FILL_RATES 4
struct tabcl__fill_part;
typedef struct tabcl__fill_workers {
  pthread_mutex_t job;        /* held by the fill that uses the threads */
  pthread_mutex_t lock;       /* guards the rest */
  pthread_cond_t work, done;
  pthread_t tid[TABCL__FILL_WORKERS_MAX];
  int threads, stop;
  int parked;                 /* threads waiting on `work` (under lock) */
  double ended_us;            /* when the last fill on them ended (fill.c's clock) */
  int helped;                 /* whether threads took some of that fill's parts */
  struct {
    tabcl__fill_fn fill;      /* a fill function seen on them (NULL: the slot is free) */
    double us_per_byte;       /* its caller's first part's rate, in its last fill */
  } rate[TABCL__FILL_RATES];
  unsigned rate_next;         /* the slot a function not seen yet takes */
  double woken_us;            /* when parked threads were last woken, until one runs (else 0) */
  double wake_us;             /* how long a woken thread took to run, averaged over wakes */
  struct tabcl__fill_part *part;
  size_t parts, next;         /* parts [next, parts) not taken yet */
  atomic_size_t left;         /* parts not finished (written under lock; read without it
                                 by the fill's caller while it waits) */
  atomic_uint posted;         /* fills posted so far (written under lock; read by threads
                                 that wait for the next one before they park) */
} tabcl__fill_workers;

/* A context's pool of device buffers for host calls' temporaries (pool.c). */
#define TABCL__POOL_SLOTS 16
typedef struct tabcl__pool_slot {
  cl_mem mem;                 /* NULL: a free slot */
  size_t bytes;
  cl_mem_flags flags;
  cl_event done;              /* the marker after which mem may be handed out */
} tabcl__pool_slot;
typedef struct tabcl__pool {
  pthread_mutex_t lock;       /* guards everything below */
  tabcl__pool_slot slot[TABCL__POOL_SLOTS];
  size_t held, cap;           /* bytes in the slots; the upload.pool tuning (0: no pool) */
} tabcl__pool;

/* A context's host staging area for uploads (buffer.c): one pinned buffer,
   mapped for the context's life, used as two halves. */
typedef struct tabcl__staging {
  pthread_mutex_t lock;       /* guards everything below */
  cl_mem mem;                 /* CL_MEM_ALLOC_HOST_PTR; NULL until first needed */
  uint8_t *host;              /* its mapping */
  size_t size;                /* bytes of mem; two halves of size / 2 */
  cl_event busy[2];           /* the last transfer still using each half, or NULL */
  size_t used[2];             /* bytes of each half taken since it was last free */
  int next;                   /* the half the next chunk goes into if it fits */
  int force;                  /* test-only: 1 staged on any device, -1 never,
                                 0 GPUs only (not oclgrind) */
  size_t cap;                 /* most bytes the area may grow to */
} tabcl__staging;

struct tabcl_context {
  cl_platform_id platform;
  cl_device_id device;
  cl_context cl;
  cl_command_queue queue;     /* in order; profiling on where tabcl made it */
  cl_command_queue transfer;  /* a second in-order queue for streamed uploads (stream/),
                                 made on first use (tabcl__transfer_queue; guarded by lock) */
  tabcl__device_desc info;
  tabcl__tuning tune;         /* the table for this device, then TABCL_TUNE */
  char *kernel_dir;           /* NULL: embedded sources */
  char *cache_dir;            /* NULL: no disk cache */
  char cache_refusal[768];    /* the disk cache's last refusal, "" if none (guarded by lock) */
  int64_t max_batch_per_launch; /* 0 = device limits only */
  int app_objects;            /* cl, device and queue are the caller's, retained
                                 (tabcl_context_create_cl): its queue is never drained */
  unsigned hash_bits;         /* test-only: 64 normally; fewer forces collisions */
  size_t sdpa_fused_cap[32]; /* the fused kernel's own work-group limit where a build
                                 showed it below the device's, by f64 or not and padded
                                 head dim (attention/sdpa_exec.c; guarded by lock) */
  uint64_t loop_limit;        /* loop iterations a work-item may run (runtime/loop_limit.c),
                                 0 for no limit up to TABCL__LOOP_PROBE_N */
  int loop_limit_known;       /* loop_limit was measured (both guarded by lock) */
  int sdpa_mma_state[3];      /* tensor-core attention check, f32, f16 and bf16: 0 not
                                 run yet, 1 passed, -1 failed (guarded by lock) */
  pthread_mutex_t lock;       /* guards programs and stats */
  pthread_cond_t built;       /* signalled (under lock) when a program build ends */
  tabcl__program_entry *programs;
  tabcl_stats stats;          /* but kernel_launches, which is counted in launches */
  _Atomic uint64_t launches;  /* every launch adds one: no lock on that path */
  tabcl__staging staging;      /* uploads on GPUs (buffer.c) */
  tabcl__pool pool;            /* host calls' temporaries (pool.c) */
  tabcl__fill_workers workers; /* uploads' fill threads (fill.c) */
  /* Set (under lock) by an upper layer that keeps process-wide state per
     context (attention's CLBlast users); called first by the destroy. */
  void (*destroy_hook)(tabcl_context *ctx);
};

/* The context's transfer queue (in order, profiling on), created the first
   time it is asked for. Work on it is ordered against the main queue only
   by events. */
tabcl_status tabcl__transfer_queue(tabcl_context *ctx, cl_command_queue *out);

/* What a planner reads: the device description, the tuning in force and
   the caller's launch cap. Plain data: tests build one by hand. */
typedef struct tabcl__target {
  const tabcl__device_desc *dev;
  const tabcl__tuning *tune;
  int64_t max_batch_per_launch;   /* 0 = device limits only */
  int host_cores;                 /* the host's online cores, for work a plan gives to host
                                     threads beside a GPU (0: unknown, taken as 1) */
} tabcl__target;
/* Test-only: applies TABCL_TUNE-style entries to this context's tuning
   (checked as TABCL_TUNE is). Not for use while other threads use ctx. */
tabcl_status tabcl__context_tune(tabcl_context *ctx, const char *entries);
/* Test-only: shrink hashes to the low `bits` bits (1..64) so tests can force collisions. */
void tabcl__context_set_hash_bits(tabcl_context *ctx, unsigned bits);

/* ---- the loop limit (loop_limit.c) ----------------------------------- */

/* Iterations the loop probe runs in one work-item. */
#define TABCL__LOOP_PROBE_N (1u << 22)
/* How many loop iterations in all one work-item of this device runs before
   the driver silently ends its loops (Mesa 22.3's llvmpipe: 65,535); 0 when
   the probe's TABCL__LOOP_PROBE_N ran whole. Measured by a kernel the first
   time it is asked for, then kept in the context. */
tabcl_status tabcl__loop_limit(tabcl_context *ctx, uint64_t *out);
/* 1 and *out when the limit was measured (or set) already; else 0, *out 0. */
int tabcl__loop_limit_known(tabcl_context *ctx, uint64_t *out);
/* Test-only: the context behaves as if the probe had found `limit`. */
void tabcl__context_set_loop_limit(tabcl_context *ctx, uint64_t limit);
/* Loops a work-item may run before the device's loop limit is asked for:
   no driver known to end loops early does so below 2^15 iterations
   (llvmpipe's limit is 65,535), so short calls never run the probe. */
#define TABCL__LOOPS_UNCHECKED ((uint64_t)1 << 15)
/* The work-item loops a plan may run under dev's limit: half of it (a
   planner's count is a bound by reading the kernel, and a driver may count
   its loops a little differently); UINT64_MAX where there is none. */
static inline uint64_t tabcl__loop_budget(const struct tabcl__device_desc *dev) {
  return dev->loop_limit ? dev->loop_limit / 2 : UINT64_MAX;
}

/* What a planner reads of ctx. */
int tabcl__online_cores(void);   /* fill.c */
static inline tabcl__target tabcl__context_target(const tabcl_context *ctx) {
  tabcl__target t = {&ctx->info, &ctx->tune, ctx->max_batch_per_launch, tabcl__online_cores()};
  return t;
}

/* ctx's target with the loop limit the context has measured, if it has:
   *dev becomes a copy of ctx's device description carrying it, *out points
   at it. Returns whether the limit is known (else dev->loop_limit is 0 and
   a plan that could run past TABCL__LOOPS_UNCHECKED asks tabcl__loop_limit
   and plans again). */
int tabcl__context_target_limited(tabcl_context *ctx, tabcl__device_desc *dev, tabcl__target *out);
/* After a plan made with such a target: where the limit is not known and
   the plan's work-items could loop past TABCL__LOOPS_UNCHECKED (`loops`),
   measures it into dev->loop_limit and sets *known and *again (plan
   again); else sets *again to 0. */
tabcl_status tabcl__loop_limit_learn(tabcl_context *ctx, int *known, tabcl__device_desc *dev,
                                     uint64_t loops, int *again);

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
   state: an idle one given back earlier where there is one (creating a
   kernel object took 6 to 29 us on the H200's driver, a few a call), else
   a fresh one. Every argument must be set before a launch, as on a fresh
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

/* ---- buffers and transfers (buffer.c) --------------------------------- */

/* Never asks OpenCL for zero bytes (a 0-byte request makes a small buffer);
   a request above the device's allocation limit is TABCL_OUT_OF_MEMORY. */
tabcl_status tabcl__buffer_create(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                  void *host, cl_mem *out, const char *what);
void tabcl__buffer_release(cl_mem m);      /* NULL is fine */
/* A sub-buffer of parent that covers bytes [offset, offset + bytes) and
   starts at the aligned byte at or before offset: *skip bytes of it come
   first (a multiple of unit, which must be a power of two). Released with
   tabcl__buffer_release. For callees that take only small offsets. */
tabcl_status tabcl__buffer_window(tabcl_context *ctx, cl_mem parent, size_t offset, size_t bytes,
                                  size_t unit, cl_mem *out, size_t *skip, const char *what);
/* Blocking transfers; zero bytes is a no-op. */
tabcl_status tabcl__write(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          const void *src);
tabcl_status tabcl__read(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes, void *dst);
tabcl_status tabcl__fill_zero(tabcl_context *ctx, cl_mem m, size_t bytes);

/* Fills all `bytes` of m (from offset 0) with fill's content. On GPUs (or
   when forced) through the context's staging area in chunks that may still
   be in flight on return (later commands on the queue see the data); else
   through one whole-buffer map. On failure m's content is undefined. */
tabcl_status tabcl__upload(tabcl_context *ctx, cl_mem m, size_t bytes, tabcl__fill_fn fill,
                           const void *arg, const char *what);
/* tabcl__upload of bytes [0, bytes) of src. */
tabcl_status tabcl__upload_copy(tabcl_context *ctx, cl_mem m, size_t bytes, const void *src,
                                const char *what);
/* Fills bytes [at, at + n) of an upload into dst with up to
   tabcl__fill_threads(ctx) host threads (runtime/fill.c): the context's
   parked ones, parts of 256 KiB or more, or where another fill has them,
   threads of its own, parts of 1 MiB or more. Every part is done when it
   returns. */
void tabcl__fill_parallel(tabcl_context *ctx, tabcl__fill_fn fill, void *dst, size_t at,
                          size_t n, const void *arg);
/* tabcl__fill_parallel with up to `threads` threads (an upload's count,
   tabcl__fill_threads_for). */
void tabcl__fill_parallel_n(tabcl_context *ctx, int threads, tabcl__fill_fn fill, void *dst,
                            size_t at, size_t n, const void *arg);
/* The same with the parked threads' parts at least `least` bytes (at least
   64): for work whose bytes stand for more than a copy's (a host lookup's
   codes: 4 bytes a row hashed, searched and compared). Parts are whole
   64-byte lines, so a part of 4-byte elements starts on a multiple of 16.
   On the parked threads a fill is cut into up to four parts a thread,
   each taken by whichever thread is free (a late thread takes fewer). */
void tabcl__fill_parallel_parts(tabcl_context *ctx, int threads, size_t least,
                                tabcl__fill_fn fill, void *dst, size_t at, size_t n,
                                const void *arg);
/* The context's fill threads (fill.c): init at create (0 or an error),
   destroy joins them. */
int tabcl__fill_workers_init(tabcl_context *ctx);
void tabcl__fill_workers_destroy(tabcl_context *ctx);
/* The upload.threads tuning, or its rule (the online cores, at most 8). */
int tabcl__fill_threads(const tabcl_context *ctx);
/* The threads that fill an upload of `bytes` in all: the tuning where it
   is set; else the rule, whose cap is 16 instead of 8 from
   TABCL__FILL_LARGE bytes (bench/RESULTS.md, "Tuning: upload.threads"). */
#define TABCL__FILL_LARGE ((size_t)256 << 20)
int tabcl__fill_threads_for(const tabcl_context *ctx, size_t bytes);
/* The host's online cores, asked of the system once a process. */
int tabcl__online_cores(void);
/* Whether tabcl__upload goes through the staging area on this context. */
int tabcl__upload_staged(tabcl_context *ctx);
/* tabcl__read through the staging area where uploads go through it (in
   chunks, the copy out of one overlapping the transfer of the next); a
   plain tabcl__read elsewhere. On failure dst's content is undefined. */
tabcl_status tabcl__download(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                             void *dst);
/* A download the caller copies out of the staging area itself: where the
   context stages transfers and bytes fit one staging chunk, reads them
   there and, only once the whole read succeeded, calls drain(src, bytes,
   arg); returns 1 with the status in *st. Else returns 0 and does nothing
   (download into memory of the caller's then). It spares a copy into fresh
   memory: the host lookup's codes went device -> staging -> a temporary ->
   the caller's arrays. drain gets bytes [at, at + n) of the download (at
   is 0 and n is bytes here). */
typedef void (*tabcl__drain_fn)(const void *src, size_t at, size_t n, void *arg);
int tabcl__download_drain(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          tabcl__drain_fn drain, void *arg, tabcl_status *st);
/* tabcl__buffer_create with CL_MEM_COPY_HOST_PTR where uploads map, and a
   plain buffer filled by tabcl__upload where they are staged (a copy from
   pageable memory is as slow as the map on NVIDIA). Nothing is left on failure. */
tabcl_status tabcl__buffer_create_from(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                       const void *src, cl_mem *out, const char *what);
/* Context creation and destruction (context.c). */
tabcl_status tabcl__staging_init(tabcl_context *ctx);
/* Takes the upload.staging tuning of the context (after tabcl__tune_resolve
   or tabcl__context_tune), dropping the current staging area. */
void tabcl__staging_configure(tabcl_context *ctx);
void tabcl__staging_destroy(tabcl_context *ctx);
/* The pool (pool.c). tabcl__pool_get hands out a buffer of at least bytes
   with flags (no host pointer), pooled where one is ready, else a new one
   (tabcl__buffer_create, whose failures it returns). tabcl__pool_put takes
   a buffer from tabcl__pool_get back after its last command was enqueued
   on ctx's queue, instead of tabcl__buffer_release; it is handed out again
   only after a marker behind that command has completed. It cannot fail:
   where the buffer cannot be kept it is released. tabcl__pool_put_after
   adds events to that marker's wait list, for buffers also used by
   commands of other queues (a stream's transfer queue, a caller's queue):
   each event's queue must have been flushed. */
tabcl_status tabcl__pool_init(tabcl_context *ctx);
/* Takes the upload.pool tuning (after tabcl__tune_resolve or
   tabcl__context_tune), giving back every pooled buffer. */
void tabcl__pool_configure(tabcl_context *ctx);
void tabcl__pool_destroy(tabcl_context *ctx);
/* Releases every idle buffer of the pool (the bench, before it measures a
   call's peak device memory). */
void tabcl__pool_trim(tabcl_context *ctx);
tabcl_status tabcl__pool_get(tabcl_context *ctx, cl_mem_flags flags, size_t bytes, cl_mem *out,
                             const char *what);
void tabcl__pool_put(tabcl_context *ctx, cl_mem m);
void tabcl__pool_put_after(tabcl_context *ctx, cl_mem m, cl_uint nwait, const cl_event *wait);
/* tabcl__pool_put_after for n buffers (NULLs skipped) behind one marker. */
void tabcl__pool_put_n(tabcl_context *ctx, int n, const cl_mem *mems, cl_uint nwait,
                       const cl_event *wait);
/* Idle pooled buffers alive in the process (not in tabcl__mem_live). */
long tabcl__pool_live(void);
/* Moves n buffers into (n > 0) or out of tabcl__mem_live's count. */
void tabcl__mem_count(long n);
/* Staging buffers alive in the process; they are not in tabcl__mem_live,
   since an area outlives the call that grew it. */
long tabcl__staging_live(void);
tabcl_status tabcl__finish(tabcl_context *ctx);
/* Waits for the command behind ev when enqueued is CL_SUCCESS and releases
   ev either way; returns the first failure. Call it in a statement after
   the enqueue's, never around it: arguments are evaluated in no set order,
   so ev could be read before the enqueue sets it. Used instead of blocking
   calls and clFinish, which some drivers end early when threads share a
   queue (see buffer.c). */
cl_int tabcl__wait_own(cl_int enqueued, cl_event ev);
/* Maps bytes of m from offset 0 and waits for the map on its own event;
   on failure (*err) returns NULL with nothing left mapped. */
void *tabcl__map_waited(cl_command_queue q, cl_mem m, cl_map_flags flags, size_t bytes,
                        cl_int *err);
/* Every command enqueued on q so far has ended (a marker waited for). */
cl_int tabcl__queue_drain(cl_command_queue q);

/* ---- slicing (slice.c) ------------------------------------------------ */

/* The most items one launch may take so that items * bytes_per_item fits
   in one allocation, items * work_items_per_item fits the NDRange, and
   items <= max_batch_per_launch when that is set. Always >= 1. */
int64_t tabcl__slice_items(const tabcl__target *t, uint64_t bytes_per_item,
                           uint64_t work_items_per_item);
/* The same for a context's own target. */
int64_t tabcl__slice_items_ctx(const tabcl_context *ctx, uint64_t bytes_per_item,
                               uint64_t work_items_per_item);
/* Rounds n up to a multiple of m (m > 0). */
size_t tabcl__round_up(size_t n, size_t m);
/* Planners: the largest power of two <= want that the device allows a
   1-D work-group. */
size_t tabcl__plan_wg(const tabcl__device_desc *dev, size_t want);
/* Executors: the same, also capped by kernel k's own limit. */
size_t tabcl__wg_size(const tabcl_context *ctx, cl_kernel k, size_t want);

/* ---- self-checks (selfcheck.c) ---------------------------------------- */

typedef tabcl_status (*tabcl__selfcheck_fn)(tabcl_context *ctx);
tabcl_status tabcl__selfcheck_probe(tabcl_context *ctx);

#endif
