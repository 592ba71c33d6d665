/* Device ceilings measured with the probe kernels: copy bandwidth and fp32
 * FMA throughput. cl-probe reports them, tabcl-bench divides by them. */
#include <math.h>
#include <time.h>

#include "runtime/internal.h"
#include "probe/measure.h"

double tabcl__event_seconds(cl_event start, cl_event end) {
  cl_ulong t0 = 0, t1 = 0;
  if (clGetEventProfilingInfo(start, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
      clGetEventProfilingInfo(end, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
    return -1.0;
  return (double)(t1 - t0) * 1e-9;
}

double tabcl__wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sort_doubles(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
}

double tabcl__median(double *v, int n) {
  if (n <= 0) return 0.0;
  sort_doubles(v, n);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

tabcl_status tabcl__measure_copy(tabcl_context *ctx, size_t bytes, int reps, int wall_clock,
                                 double *bytes_per_s) {
  cl_mem a = NULL, b = NULL;
  cl_kernel k = NULL;
  double times[64];
  if (reps > 64) reps = 64;
  if (reps < 1) reps = 1;
  bytes = bytes / 16 * 16;
  if (bytes > ctx->info.max_mem_alloc_size) bytes = (size_t)ctx->info.max_mem_alloc_size / 16 * 16;
  cl_ulong n = bytes / 16;
  tabcl_status s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, bytes, NULL, &a, "copy source");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, bytes, NULL, &b, "copy target");
  if (!s) s = tabcl__fill_zero(ctx, a, bytes);
  if (!s) s = tabcl__kernel_create(ctx, "probe", NULL, "probe_copy", &k);
  if (!s) s = TABCL_SET_ARGS(k, "probe_copy", TABCL_ARG(a), TABCL_ARG(b), TABCL_ARG(n));
  size_t wg = k ? tabcl__wg_size(ctx, k, 256) : 1;
  size_t global = tabcl__round_up((size_t)n, wg);
  for (int r = -1; !s && r < reps; r++) {
    cl_event ev = NULL;
    if (!s) s = tabcl__finish(ctx);   /* the fill, and the last rep, out of the wall time */
    double t0 = tabcl__wall_seconds();
    if (!s) s = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, &ev, "probe_copy");
    if (!s) s = tabcl__finish(ctx);
    double wall = tabcl__wall_seconds() - t0;
    if (!s && r >= 0) times[r] = wall_clock ? wall : tabcl__event_seconds(ev, ev);
    if (ev) clReleaseEvent(ev);
  }
  if (!s) *bytes_per_s = 2.0 * (double)bytes / tabcl__median(times, reps);
  tabcl__kernel_release(k);
  tabcl__buffer_release(a);
  tabcl__buffer_release(b);
  return s;
}

tabcl_status tabcl__measure_round_trip(tabcl_context *ctx, int reps, double *median_s,
                                       double *min_s) {
  enum { ITEMS = 16, MAX_REPS = 1024 };
  if (reps > MAX_REPS) reps = MAX_REPS;
  if (reps < 1) reps = 1;
  double *times = tabcl__malloc((size_t)reps * sizeof *times);
  if (!times)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "round trip: out of host memory for %d times", reps);
  cl_mem out = NULL;
  cl_kernel k = NULL;
  cl_ulong host[ITEMS], base = 0;
  const cl_ulong n = ITEMS;
  size_t global = ITEMS;
  tabcl_status s = tabcl__kernel_create(ctx, "probe", NULL, "probe_iota", &k);
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, sizeof host, NULL, &out, "round trip");
  size_t wg = k ? tabcl__wg_size(ctx, k, ITEMS) : 1;
  for (int r = -1; !s && r < reps; r++) {
    base = (cl_ulong)(r + 2);
    s = TABCL_SET_ARGS(k, "probe_iota", TABCL_ARG(out), TABCL_ARG(base), TABCL_ARG(n));
    if (!s) s = tabcl__finish(ctx);
    const double t0 = tabcl__wall_seconds();
    if (!s) s = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, NULL, "probe_iota");
    if (!s) s = tabcl__read(ctx, out, 0, sizeof host, host);
    const double t = tabcl__wall_seconds() - t0;
    /* the read must see this round's values, or nothing was waited for */
    if (!s && host[ITEMS - 1] != base + (cl_ulong)(ITEMS - 1) * (ITEMS - 1))
      s = tabcl__fail(TABCL_OPENCL_ERROR, "round trip: read %llu, expected %llu",
                      (unsigned long long)host[ITEMS - 1],
                      (unsigned long long)(base + (cl_ulong)(ITEMS - 1) * (ITEMS - 1)));
    if (!s && r >= 0) times[r] = t;
  }
  if (!s) {
    *median_s = tabcl__median(times, reps);   /* sorts: times[0] is the least */
    *min_s = times[0];
  }
  tabcl__free(times);
  tabcl__kernel_release(k);
  tabcl__buffer_release(out);
  return s;
}

/* The FMA probe's launch shape. A GPU: 2,048 work-items a compute unit in
   groups of up to 256. A CPU runs a work-group on one thread, its
   work-items as the lanes of vector instructions: groups of the kernel's
   preferred multiple (the vector width PoCL compiles for), eight a compute
   unit, so every core gets groups. (One group of 128 kept one of two cores
   busy: 12 GFLOP/s where numpy's sgemm reached 70 on the same two cores.) */
static void fma_shape(const tabcl_context *ctx, cl_kernel k, size_t *global, size_t *wg) {
  const size_t units = ctx->info.compute_units ? ctx->info.compute_units : 1;
  if (!ctx->info.is_cpu) {
    *wg = k ? tabcl__wg_size(ctx, k, 256) : 1;
    *global = tabcl__round_up(units * 2048, *wg);
    return;
  }
  size_t multiple = 0;
  if (!k || clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                     sizeof multiple, &multiple, NULL) != CL_SUCCESS)
    multiple = 0;
  if (multiple < 1 || multiple > 64) multiple = 16;
  *wg = k ? tabcl__wg_size(ctx, k, multiple) : 1;
  *global = units * 8 * *wg;
}

/* `work` FMA-loop iterations of the probe's work-items as (iterations a
   work-item, a multiple of the probe's work-items): the iterations stay
   under the device's loop limit, `share` times over (the timer check also
   runs launches of three times as many). A driver that ends loops early
   does so silently (Mesa 22.3's llvmpipe after 65,535 iterations in all),
   and the figures would count work never done: once llvmpipe's kernels
   used mad (common.cl, MULADD), its timer check grew launches to a million
   iterations and cl-probe reported 9,067 GFLOP/s for two cores. The limit
   is asked for only where the loops could reach it. The multiple stays at
   most `most_scale` (launches then do less than `work`, never more). */
static tabcl_status fit_loops(tabcl_context *ctx, double work, int share, size_t most_scale,
                              int *iters, size_t *scale) {
  if (work < 1) work = 1;
  if (work > (double)(1 << 30)) work = (double)(1 << 30);
  *iters = (int)work;
  *scale = 1;
  if (work * share <= (double)TABCL__LOOPS_UNCHECKED) return TABCL_OK;
  uint64_t limit = 0;
  tabcl_status s = tabcl__loop_limit(ctx, &limit);
  if (s || !limit) return s;
  /* half the limit, as planners keep (tabcl__loop_budget) */
  const double most = (double)(limit / 2 / (uint64_t)share > 0 ? limit / 2 / (uint64_t)share : 1);
  if (work > most) {
    const double want = ceil(work / most);
    *scale = want < (double)most_scale ? (size_t)want : (most_scale ? most_scale : 1);
    *iters = (int)most;
  }
  return TABCL_OK;
}

/* The most work-items an FMA launch of `shape` work-items grows to: 2^24,
   a 64 MiB output buffer. */
static size_t most_scale(size_t shape) {
  const size_t most = ((size_t)1 << 24) / (shape ? shape : 1);
  return most ? most : 1;
}

tabcl_status tabcl__measure_fma(tabcl_context *ctx, int iters, const tabcl__timer_check *check,
                                int reps, int wall_clock, double *flops) {
  /* Launches at least as long as the timer check's (TABCL__TIMER_MIN_WALL_S
     of wall time): short launches let their wake-up and wait move the
     figure by half from one run to the next (bench/history/code-notes.md, "FMA measurement"). */
  int scale = 1;
  if (check && (double)check->fma_iters * check->fma_scale > iters)
    iters = check->fma_iters, scale = check->fma_scale;
  cl_mem out = NULL;
  cl_kernel k = NULL;
  double times[64];
  if (reps > 64) reps = 64;
  if (reps < 1) reps = 1;
  float a = 0.999f, b = 0.001f;
  /* A CPU runs the float16 twin (probe.cl): 16 lanes a work-item, so a
     sixteenth of the iterations for the same work. */
  const int lanes = ctx->info.is_cpu ? 16 : 1;
  const char *name = lanes > 1 ? "probe_fma16" : "probe_fma";
  if (lanes > 1) iters = iters / lanes > 0 ? iters / lanes : 1;
  tabcl_status s = tabcl__kernel_create(ctx, "probe", NULL, name, &k);
  size_t global = 1, wg = 1, more = 1;
  fma_shape(ctx, k, &global, &wg);
  if (!s)
    s = fit_loops(ctx, (double)iters * (scale > 1 ? scale : 1), 1, most_scale(global), &iters,
                  &more);
  global *= more;
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, global * sizeof(float), NULL, &out, "fma output");
  if (!s) s = TABCL_SET_ARGS(k, name, TABCL_ARG(out), TABCL_ARG(a), TABCL_ARG(b), TABCL_ARG(iters));
  for (int r = -1; !s && r < reps; r++) {
    cl_event ev = NULL;
    double t0 = tabcl__wall_seconds();
    s = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, &ev, name);
    if (!s) s = tabcl__finish(ctx);
    double wall = tabcl__wall_seconds() - t0;
    if (!s && r >= 0) times[r] = wall_clock ? wall : tabcl__event_seconds(ev, ev);
    if (ev) clReleaseEvent(ev);
  }
  /* 16 FMAs per iteration per work-item and lane, 2 FLOPs each */
  if (!s) *flops = (double)global * iters * 16.0 * 2.0 * lanes / tabcl__median(times, reps);
  tabcl__kernel_release(k);
  tabcl__buffer_release(out);
  return s;
}

/* One FMA launch of iters iterations on out: its profiled and wall seconds
   (a profiled time of -1: the driver gave none). */
static tabcl_status fma_once(tabcl_context *ctx, cl_kernel k, cl_mem out, size_t global,
                             size_t wg, int iters, double *prof, double *wall) {
  const float a = 0.999f, b = 0.001f;
  tabcl_status s = TABCL_SET_ARGS(k, "probe_fma", TABCL_ARG(out), TABCL_ARG(a), TABCL_ARG(b),
                                  TABCL_ARG(iters));
  if (!s) s = tabcl__finish(ctx);
  cl_event ev = NULL;
  double t0 = tabcl__wall_seconds();
  if (!s) s = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, &ev, "probe_fma");
  if (!s) s = tabcl__finish(ctx);
  *wall = tabcl__wall_seconds() - t0;
  *prof = s ? -1.0 : tabcl__event_seconds(ev, ev);
  if (ev) clReleaseEvent(ev);
  return s;
}

tabcl_status tabcl__check_timer(tabcl_context *ctx, tabcl__timer_check *out) {
  enum { REPS = 3 };
  out->trusted = 0;
  out->fma_iters = 0;   /* none found: the callers keep their own counts */
  out->fma_scale = 1;
  out->profiled_s = out->wall_s = 0;
  cl_mem buf = NULL;
  cl_kernel k = NULL;
  tabcl_status s = tabcl__kernel_create(ctx, "probe", NULL, "probe_fma", &k);
  size_t global = 1, wg = 1;
  fma_shape(ctx, k, &global, &wg);
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, global * sizeof(float), NULL, &buf,
                                   "timer check output");
  /* Grow the work until a launch is long enough that launch and wait
     overheads are small beside it (the first launch also warms up); the
     lower of two runs, since a busy host can delay one. Past the device's
     loop limit the work grows in work-items (fit_loops). */
  int iters = 16;
  size_t scale = 1;
  double work = 16, prof = 0, wall = 0, again = 0;
  const size_t shape = global;
  while (!s) {
    s = fma_once(ctx, k, buf, global, wg, iters, &prof, &wall);
    if (!s && wall >= TABCL__TIMER_MIN_WALL_S) {
      s = fma_once(ctx, k, buf, global, wg, iters, &prof, &again);
      if (again < wall) wall = again;
    }
    if (s || wall >= TABCL__TIMER_MIN_WALL_S || work >= (double)(1 << 26)) break;
    double grow = wall > 0 ? 1.5 * TABCL__TIMER_MIN_WALL_S / wall : 16;
    work *= grow >= 16 ? 16 : grow <= 2 ? 2 : grow;
    if (work > (double)(1 << 26)) work = (double)(1 << 26);
    if ((s = fit_loops(ctx, work, 3, most_scale(shape), &iters, &scale))) break;
    if (global != shape * scale) {
      /* more work-items: a bigger output buffer */
      tabcl__buffer_release(buf);
      buf = NULL;
      global = shape * scale;
      s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, global * sizeof(float), NULL, &buf,
                               "timer check output");
    }
  }
  /* n and 3n iterations, alternated, REPS of each; the medians compared. */
  double p1[REPS], w1[REPS], p3[REPS], w3[REPS];
  int over = 0, missing = 0;
  for (int r = 0; r < REPS && !s; r++) {
    s = fma_once(ctx, k, buf, global, wg, iters, &p1[r], &w1[r]);
    if (!s) s = fma_once(ctx, k, buf, global, wg, 3 * iters, &p3[r], &w3[r]);
    if (s) break;
    missing |= p1[r] < 0 || p3[r] < 0;
    over |= p1[r] > w1[r] * (1 + TABCL__TIMER_TOLERANCE) + 1e-4 ||
            p3[r] > w3[r] * (1 + TABCL__TIMER_TOLERANCE) + 1e-4;
  }
  if (!s) {
    out->fma_iters = iters;
    out->fma_scale = (int)scale;
    out->profiled_s = tabcl__median(p3, REPS) - tabcl__median(p1, REPS);
    out->wall_s = tabcl__median(w3, REPS) - tabcl__median(w1, REPS);
    out->trusted = !missing && !over && out->wall_s > 0 &&
                   fabs(out->profiled_s - out->wall_s) <= TABCL__TIMER_TOLERANCE * out->wall_s;
  }
  tabcl__kernel_release(k);
  tabcl__buffer_release(buf);
  return s;
}
