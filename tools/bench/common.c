#include <stdio.h>
#include <time.h>

#include "bench.h"
#include "probe/measure.h"

double bench_event_seconds(cl_event start, cl_event end) { return tabcl__event_seconds(start, end); }

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

double bench_copy_bandwidth(tabcl_context *ctx, int quick) {
  static double cached = 0;
  if (cached > 0) return cached;
  size_t bytes = quick ? ((size_t)16 << 20) : ((size_t)1 << 30);
  if (tabcl__measure_copy(ctx, bytes, quick ? 3 : 10, &cached) != TABCL_OK) {
    fprintf(stderr, "copy bandwidth: %s\n", tabcl_last_error());
    cached = 0;
  }
  return cached;
}

double bench_fma_peak(tabcl_context *ctx, int quick) {
  static double cached = 0;
  if (cached > 0) return cached;
  if (tabcl__measure_fma(ctx, quick ? 256 : 4096, quick ? 3 : 10, &cached) != TABCL_OK) {
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
