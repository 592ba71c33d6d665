#include <stdio.h>
#include <time.h>

#include "bench.h"

double bench_event_seconds(cl_event start, cl_event end) { return tabcl__event_seconds(start, end); }

static int wall_clock; /* the profiling timer failed its check: time by the host's clock */
static int check_iters; /* FMA iterations of a launch of the check's minimum wall time */

int bench_timer_setup(tabcl_context *ctx, const bench_args *a) {
  tabcl__timer_check tc;
  tabcl_status s = tabcl__check_timer(ctx, &tc);
  wall_clock = s || !tc.trusted;
  check_iters = s ? 0 : tc.fma_iters;
  if (s)
    printf("# timer: wall clock (the profiling timer could not be checked: %s)\n",
           tabcl_last_error());
  else
    printf("# timer: %s (profiling %.3f ms, wall clock %.3f ms over the same work; %s %.0f%%)\n",
           wall_clock ? "wall clock, launch to finish: the profiling timer disagrees"
                      : "OpenCL profiling events",
           tc.profiled_s * 1e3, tc.wall_s * 1e3, wall_clock ? "more than" : "within",
           TABCL__TIMER_TOLERANCE * 100);
  bench_record(a, "timer", "device", "profiling_trusted", wall_clock ? 0 : 1, "bool");
  if (!s) {
    bench_record(a, "timer", "device", "check_profiled_ms", tc.profiled_s * 1e3, "ms");
    bench_record(a, "timer", "device", "check_wall_ms", tc.wall_s * 1e3, "ms");
  }
  return wall_clock;
}

double bench_pick(double device_s, double wall_s) { return wall_clock ? wall_s : device_s; }

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_record(const bench_args *a, const char *bench, const char *case_name,
                  const char *metric, double value, const char *unit) {
  if (!a->jsonl) return;
  FILE *f = fopen(a->jsonl, "a");
  if (!f) {
    fprintf(stderr, "tabcl-bench: cannot append to %s\n", a->jsonl);
    return;
  }
  fprintf(f, "{\"bench\":\"%s\",\"case\":\"%s\",\"metric\":\"%s\",\"value\":%.9g,\"unit\":\"%s\"}\n",
          bench, case_name, metric, value, unit);
  fclose(f);
}

double bench_median(double *v, int n) { return tabcl__median(v, n); }

size_t bench_elem_size(tabcl_dtype dt) {
  return dt == TABCL_F64 ? 8 : dt == TABCL_F32 ? 4 : 2;
}

double bench_copy_bandwidth(tabcl_context *ctx, int quick) {
  static double cached = 0;
  if (cached > 0) return cached;
  size_t bytes = quick ? ((size_t)16 << 20) : ((size_t)1 << 30);
  if (tabcl__measure_copy(ctx, bytes, quick ? 3 : 10, wall_clock, &cached) != TABCL_OK) {
    fprintf(stderr, "copy bandwidth: %s\n", tabcl_last_error());
    cached = 0;
  }
  return cached;
}

double bench_fma_peak(tabcl_context *ctx, int quick) {
  static double cached = 0;
  if (cached > 0) return cached;
  int iters = quick ? 256 : 4096;
  if (wall_clock && check_iters > iters) iters = check_iters;
  if (tabcl__measure_fma(ctx, iters, quick ? 3 : 10, wall_clock, &cached) != TABCL_OK) {
    fprintf(stderr, "fma peak: %s\n", tabcl_last_error());
    cached = 0;
  }
  return cached;
}

int bench_copy(tabcl_context *ctx, const bench_args *a) {
  double bw = bench_copy_bandwidth(ctx, a->quick);
  double fl = bench_fma_peak(ctx, a->quick);
  printf("| figure | value |\n|---|---|\n");
  printf("| copy bandwidth (read+write) | %.1f GB/s |\n", bw * 1e-9);
  printf("| fp32 FMA peak | %.2f TFLOP/s |\n", fl * 1e-12);
  bench_record(a, "copy", "device", "copy_bandwidth", bw * 1e-9, "GB/s");
  bench_record(a, "copy", "device", "fp32_fma_peak", fl * 1e-12, "TFLOP/s");
  return bw > 0 && fl > 0 ? 0 : 1;
}
