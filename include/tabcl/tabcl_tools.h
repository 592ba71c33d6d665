/* tabcl_tools.h: the interface the project's own tools (cl-probe,
 * tabcl-bench, cl-regs) use beside the public headers.
 *
 * This is NOT a public API. It is not installed, it may change with any
 * release, and nothing outside this repository should include it. Tools
 * include the public headers and this one, never a file under src/
 * (tools/ci/check-layout.sh fails on anything else); src/probe/tools_*.c
 * implement it.
 *
 * What a tool can do through the public API (tabcl.h, tabcl_cl.h: contexts,
 * their device, platform and OpenCL objects, device listing, self-checks,
 * programs, tuning through tabcl_options.tune or TABCL_TUNE) it does there.
 * This header adds only what the library's internals know or run: the
 * OpenCL platform walk with its errors, the device description a profile
 * makes, the tuning in force, plans as printable text, the program variants
 * the planners can choose, the measurement kernels and the benchmarks'
 * runners. It is plain C over public and OpenCL types; the library's own
 * structs stay in src/.
 *
 * A few declarations are the library's runtime helpers, given here with
 * the same prototypes as in src/ (src/probe/tools_api.c includes both, so
 * the compiler checks that they agree). */
#ifndef TABCL_TABCL_TOOLS_H
#define TABCL_TABCL_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "tabcl/tabcl.h"
#include "tabcl/tabcl_cl.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TABCL__TOOLS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TABCL__TOOLS_PRINTF(a, b)
#endif

/* ---- errors, host memory, buffers (the runtime's helpers) ------------- */

/* Records the calling thread's detail (tabcl_last_error) and returns s. */
tabcl_status tabcl__fail(tabcl_status s, const char *fmt, ...) TABCL__TOOLS_PRINTF(2, 3);
/* Maps an OpenCL error to a status and records "<call>: CL_NAME (code)". */
tabcl_status tabcl__cl_fail(cl_int err, const char *call, const char *what);
/* "CL_OUT_OF_RESOURCES", ... for an OpenCL error code. */
const char *tabcl__cl_error_name(cl_int err);
/* Frees what the library allocated for the caller (tabcl__program_source). */
void tabcl__free(void *p);

/* A buffer of ctx's OpenCL context (never of zero bytes; above the device's
   allocation limit is TABCL_OUT_OF_MEMORY); what names it in errors. */
tabcl_status tabcl__buffer_create(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                  void *host, cl_mem *out, const char *what);
/* The same, filled with bytes of src as the library uploads (staged on GPUs). */
tabcl_status tabcl__buffer_create_from(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                       const void *src, cl_mem *out, const char *what);
void tabcl__buffer_release(cl_mem m);      /* NULL is fine */
/* Blocking transfers on ctx's queue; zero bytes is a no-op. */
tabcl_status tabcl__write(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          const void *src);
tabcl_status tabcl__read(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes, void *dst);
tabcl_status tabcl__fill_zero(tabcl_context *ctx, cl_mem m, size_t bytes);
/* Every command enqueued on ctx's queue so far has ended. */
tabcl_status tabcl__finish(tabcl_context *ctx);

/* Element i of p, an array of dtype dt, set to x: f16 and bf16 rounded to
   nearest even through f32, as the kernels round. */
void tabcl__store_elem(void *p, size_t i, tabcl_dtype dt, double x);

/* ---- devices ---------------------------------------------------------- */

#define TABCL__TOOLS_MAX_PLATFORMS 32
#define TABCL__TOOLS_MAX_DEVICES 64

/* One OpenCL platform as the library's walk found it. */
typedef struct tabcl__tools_platform {
  char name[256];             /* CL_PLATFORM_NAME; "" when that query failed */
  cl_int name_error;          /* the name query's result */
  cl_int devices_error;       /* clGetDeviceIDs's: CL_SUCCESS, CL_DEVICE_NOT_FOUND (a
                                 platform without devices) or a failure */
  int ndevices;
  cl_device_id devices[TABCL__TOOLS_MAX_DEVICES];  /* device d is "P:D" with P its index */
} tabcl__tools_platform;

/* The walk of the OpenCL platforms and their devices that device listing
   and selection make (tabcl_devices), with every platform kept, those
   without a device too, and each query's error: out[i] is platform i, for
   i < min(cap, *count). Returns clGetPlatformIDs's result; *count is 0
   when it failed or found no platform. */
cl_int tabcl__tools_platforms(tabcl__tools_platform *out, int cap, int *count);
/* The device a selector names, resolved as tabcl_options.device is. */
tabcl_status tabcl__tools_device_select(const char *selector, cl_device_id *out);

/* The build options the library passes for ctx's device (fp64, vendor,
   limits), before any program's own. */
void tabcl__tools_build_options(const tabcl_context *ctx, char *buf, size_t cap);
/* 1 when the library takes ctx's device for an NVIDIA GPU (its vendor paths). */
int tabcl__tools_is_nvidia(const tabcl_context *ctx);

/* Device profiles (tabcl_options.device_profile): their names, in order. */
int tabcl__device_profile_count(void);
const char *tabcl__device_profile_name(int i);    /* NULL outside [0, count) */
/* The profile ctx plans under, "" for none. */
const char *tabcl__tools_device_profile(const tabcl_context *ctx);

/* One named line of a report. */
typedef struct tabcl__tools_row {
  char name[64];
  char text[512];
  int error;                  /* 1: text is the failure of a query, not a value */
} tabcl__tools_row;
/* The device description the planners see on ctx (its device profile
   applied) beside the device's own: the profile, what it models and the
   sources of its values, then each limit as "V", or "V (device: W)" where
   the profile changed the device's W. When the device's own description
   cannot be queried, a row with error set says so and the limits that
   follow are the planned ones alone. Fills rows[0, min(cap, n)); returns n. */
int tabcl__tools_description(const tabcl_context *ctx, tabcl__tools_row *rows, int cap);

/* ---- tuning ------------------------------------------------------------ */

/* The tuning keys (docs/tuning.md), in the table's order. */
int tabcl__tools_tune_count(void);
const char *tabcl__tools_tune_name(int k);      /* "?" outside [0, count) */
/* Key k's value in force on ctx and where it came from: "128 (table; ...)". */
void tabcl__tools_tune_describe(const tabcl_context *ctx, int k, char *buf, size_t cap);
/* Applies TABCL_TUNE-style entries to ctx's tuning (checked as TABCL_TUNE
   is), so that a benchmark times several kernel choices on data already on
   one context. Not while other threads use ctx. */
tabcl_status tabcl__context_tune(tabcl_context *ctx, const char *entries);

/* ---- programs and the disk cache --------------------------------------- */

/* The text the library hands the compiler for program `name`: common.cl,
   then name.cl, each from the context's kernel_dir when it holds that file,
   else the copy built into the library. Free *out with tabcl__free. */
tabcl_status tabcl__program_source(const tabcl_context *ctx, const char *name, char **out);
/* ctx's disk cache folder; NULL when the cache is off. */
const char *tabcl__tools_cache_dir(const tabcl_context *ctx);
/* The last refusal of ctx's disk cache (a folder or entry it would not
   trust, and why) in buf; 0 and "" when there was none. */
int tabcl__disk_cache_refusal(tabcl_context *ctx, char *buf, size_t cap);

/* Called for each program variant built: cl/<program>.cl with the
   planner's build options ("" for none), the planner choice that asked for
   it first (what), s its status, ms the time it took, from_cache 1 from the
   disk cache, 0 compiled, -1 already in memory. */
typedef void (*tabcl__tools_variant_fn)(const char *program, const char *options,
                                        const char *what, tabcl_status s, double ms,
                                        int from_cache, void *arg);
/* Builds every program variant the planners can choose on ctx's device
   (the planners are asked, so nothing is listed by hand), reporting each;
   returns the number that failed. *cold_ms (may be NULL): the time of the
   builds from source. shard/shards: one share of the list (every variant
   whose position modulo shards is shard; 0 and 1 for all), so that several
   processes can build it between them. */
int tabcl__tools_variants_build(tabcl_context *ctx, int shard, int shards,
                                tabcl__tools_variant_fn report, void *arg, double *cold_ms);

/* ---- plans, as text (the planners are pure: nothing runs) -------------- */

/* Each writes the plan the library makes on ctx's device for one call into
   text, as cl-probe --plan prints it. The hash and lookup plans may first
   measure the device's loop limit, as their calls do (hence a mutable
   context): a CPU plan's runs depend on it. */
tabcl_status tabcl__tools_hash_plan(tabcl_context *ctx, int64_t labels, int64_t bytes,
                                    int64_t max_label, char *text, size_t cap);
tabcl_status tabcl__tools_sort_plan(const tabcl_context *ctx, uint64_t pairs, char *text,
                                    size_t cap);
/* A lookup or align of rows query labels of bytes bytes in all. */
tabcl_status tabcl__tools_lookup_plan(tabcl_context *ctx, int64_t rows, int64_t bytes,
                                      char *text, size_t cap);
/* A fit of labels labels (pairs of them present) of bytes bytes in all,
   the longest column longest_col labels. */
tabcl_status tabcl__tools_fit_plan(const tabcl_context *ctx, int64_t labels, int64_t pairs,
                                   int64_t bytes, int64_t longest_col, char *text, size_t cap);
/* An align of rows input codes over ncols columns of categories
   categories in all (the lookup of the categories comes first). */
tabcl_status tabcl__tools_align_plan(const tabcl_context *ctx, int ncols, int64_t rows,
                                     int64_t categories, char *text, size_t cap);
/* Attention as the automatic choice plans it with the facts ctx has (the
   tensor-core check and the loop probe run the first time they matter).
   Fails where no backend takes d. */
tabcl_status tabcl__tools_sdpa_plan(tabcl_context *ctx, const tabcl_sdpa_desc *d, char *text,
                                    size_t cap);

/* ---- measurements (src/probe/measure.c) -------------------------------- */

/* Whether the device's profiling timer can be believed, found by timing the
   same work with both clocks: FMA launches of n and 3n iterations, n grown
   until a launch takes TABCL__TIMER_MIN_WALL_S of wall time. The extra work
   (3n less n) takes profiled_s by the profiling events and wall_s by the
   host's clock around launch and finish, differences in which the launch
   and wait overheads cancel. Trusted when profiled_s is within
   TABCL__TIMER_TOLERANCE of wall_s and no launch's profiled time exceeds
   its wall time by more than that. Some drivers return placeholder
   timestamps (Mesa 22.3's rusticl: 0, 1, 2, 3 ns for any kernel). */
#define TABCL__TIMER_TOLERANCE 0.25
#define TABCL__TIMER_MIN_WALL_S 0.05
typedef struct tabcl__timer_check {
  int trusted;
  double profiled_s, wall_s;
  int fma_iters; /* n: FMA iterations of a launch that took the minimum wall time */
  int fma_scale; /* its work-items, a multiple of the probe's shape (more than 1 where
                    the device's loop limit capped the iterations) */
} tabcl__timer_check;
tabcl_status tabcl__check_timer(tabcl_context *ctx, tabcl__timer_check *out);

/* A kernel copying `bytes` from one buffer to another; bytes read plus
   written per second, median of reps. wall_clock: time each launch by the
   host's clock (launch to finish) instead of the profiling events, for a
   device whose timer failed tabcl__check_timer. */
tabcl_status tabcl__measure_copy(tabcl_context *ctx, size_t bytes, int reps, int wall_clock,
                                 double *bytes_per_s);
/* Independent multiply-add chains (MULADD: fma where the device has the
   instruction); fp32 FLOP/s (one counts 2), median of reps. Launches of
   iters iterations, or as much work as the timer check's (check, which may
   be NULL: its fma_iters times fma_scale) where that is more, so that
   launch overheads do not count for much; the work kept under the
   device's loop limit by moving iterations into work-items. */
tabcl_status tabcl__measure_fma(tabcl_context *ctx, int iters, const tabcl__timer_check *check,
                                int reps, int wall_clock, double *flops);
/* The least a host call that runs anything on the device waits: one launch
   of a kernel over 16 work-items, then a blocking read of its 128 bytes,
   by the host's clock; median and minimum seconds of reps (after one
   untimed round). On a CPU device through PoCL this is tens of
   microseconds (its worker threads wake for each command), about what
   pandas takes to look up 1,000 labels, so it bounds every small host
   call (bench/history/2026-11-to-12.md). */
tabcl_status tabcl__measure_round_trip(tabcl_context *ctx, int reps, double *median_s,
                                       double *min_s);
/* Device time between the start of `start` and the end of `end`; -1 if the
   profiling information is missing. */
double tabcl__event_seconds(cl_event start, cl_event end);
/* Sorts v and returns its median. */
double tabcl__median(double *v, int n);

/* ---- the benchmarks' runners ------------------------------------------- */

/* A string column on ctx's device, laid out as the hash kernels read it. */
typedef struct tabcl__tools_column tabcl__tools_column;
/* Validates v and uploads it; on failure *out is NULL and nothing is left. */
tabcl_status tabcl__tools_column_upload(tabcl_context *ctx, const tabcl_strings_view *v,
                                        tabcl__tools_column **out);
void tabcl__tools_column_release(tabcl__tools_column *c);   /* NULL is fine */
/* Hashes every label of c into out (a ulong a label) as the index does
   for column 0 under seed, all 64 bits, on ctx's queue, and waits for it;
   *device_s: from the first kernel's start to the last kernel's end. */
tabcl_status tabcl__tools_hash_column(tabcl_context *ctx, const tabcl__tools_column *c,
                                      uint64_t seed, cl_mem out, double *device_s);
/* The same hash of one label on the host. */
uint64_t tabcl__tools_label_hash(const void *bytes, size_t n, uint64_t seed);

/* Sorts n (ulong key, uint value) pairs in place on the device, ascending
   by key, then value; enqueued after wait, *ev (may be NULL) completes when
   they are sorted. */
tabcl_status tabcl__tools_sort_pairs(tabcl_context *ctx, cl_mem keys, cl_mem values, size_t n,
                                     cl_uint nwait, const cl_event *wait, cl_event *ev);

/* Device memory a host lookup of these queries allocates itself. */
int64_t tabcl__tools_lookup_peak_bytes(int ncols, const tabcl_strings_view *queries);
/* Device memory the fitted index holds. */
int64_t tabcl__tools_index_device_bytes(const tabcl_category_index *idx);
/* Bytes of the library's device buffers alive in the process (idle pooled
   ones included; staging areas and sub-buffers not), and the most alive
   since the last reset, which starts the next peak at the bytes alive then.
   With tabcl__tools_pool_trim (which releases ctx's idle pooled buffers)
   first, peak minus live before a call is the device memory it used. */
int64_t tabcl__tools_device_bytes_live(void);
int64_t tabcl__tools_device_bytes_peak_reset(void);
void tabcl__tools_pool_trim(tabcl_context *ctx);

/* Attention backends (docs/attention.md). */
enum {
  TABCL__TOOLS_SDPA_AUTO = 0,      /* the automatic choice, as tabcl_sdpa_cl */
  TABCL__TOOLS_SDPA_FUSED = 1,     /* the portable fused kernel */
  TABCL__TOOLS_SDPA_MMA = 2,       /* the NVIDIA tensor-core kernel */
  TABCL__TOOLS_SDPA_CLBLAST = 3,   /* CLBlast's GEMMs */
  TABCL__TOOLS_SDPA_CPU = 4,       /* the CPU kernel (rows in vector lanes) */
};
/* 1 when path may take d on ctx: always for AUTO and FUSED; for MMA where
   its shape rules take d on this device and TABCL_SDPA_MMA is not 0 (its
   device check aside); for CLBLAST in a build with CLBlast. */
int tabcl__tools_sdpa_offered(const tabcl_context *ctx, const tabcl_sdpa_desc *d, int path);
/* tabcl_sdpa_cl on path, with no wait list: *first and *last (either may
   be NULL) receive the run's first and last command, for timing. Whatever
   they hold afterwards, on failure too, is the caller's to release. */
tabcl_status tabcl__tools_sdpa_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                                   cl_mem q, cl_mem k, cl_mem v, cl_mem mask, cl_mem out,
                                   cl_event *first, cl_event *last);
/* The fused kernel's tile shape on ctx for dtype dt and head_dim as text
   ("64 queries x 64 keys, 128 work-items (8 across keys), ..."); 1 when a
   shape fits, else 0 (the GEMM path takes such calls). */
int tabcl__tools_sdpa_fused_tiles(const tabcl_context *ctx, tabcl_dtype dt, int head_dim,
                                  char *text, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
