#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

double bench_event_seconds(cl_event start, cl_event end) { return tabcl__event_seconds(start, end); }

static int wall_clock; /* the profiling timer failed its check: time by the host's clock */
static tabcl__timer_check check; /* its FMA launch of the minimum wall time sizes the peak's */

int bench_timer_setup(tabcl_context *ctx, const bench_args *a) {
  tabcl__timer_check tc;
  tabcl_status s = tabcl__check_timer(ctx, &tc);
  wall_clock = s || !tc.trusted;
  check = tc;   /* a failed check found no count (fma_iters 0) */
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
  bench_record_fields(a, bench, case_name, metric, value, unit, NULL);
}

void bench_record_fields(const bench_args *a, const char *bench, const char *case_name,
                         const char *metric, double value, const char *unit, const char *extra) {
  if (!a->jsonl) return;
  FILE *f = fopen(a->jsonl, "a");
  if (!f) {
    fprintf(stderr, "tabcl-bench: cannot append to %s\n", a->jsonl);
    return;
  }
  fprintf(f, "{\"bench\":\"%s\",\"case\":\"%s\",\"metric\":\"%s\",\"value\":%.9g,\"unit\":\"%s\"%s%s}\n",
          bench, case_name, metric, value, unit, extra && *extra ? "," : "", extra ? extra : "");
  fclose(f);
}

double bench_median(double *v, int n) { return tabcl__median(v, n); }

int bench_case_taken(const bench_args *a, const char *name) {
  const char *only = a->cases ? a->cases : getenv("TABCL_BENCH_CASES");
  if (!only || !*only) return 1;
  for (const char *p = only; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char part[96];
    if (len > 0 && len < sizeof part) {
      memcpy(part, p, len);
      part[len] = 0;
      if (strstr(name, part)) return 1;
    }
    p = e ? e + 1 : NULL;
  }
  return 0;
}

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

int bench_round_trip(tabcl_context *ctx, int quick, double *median_s, double *min_s) {
  static double cached = -1, cached_min = -1;
  if (cached < 0 &&
      tabcl__measure_round_trip(ctx, quick ? 51 : 501, &cached, &cached_min) != TABCL_OK) {
    fprintf(stderr, "round trip: %s\n", tabcl_last_error());
    cached = -1;
    return 1;
  }
  *median_s = cached;
  *min_s = cached_min;
  return 0;
}

double bench_fma_peak(tabcl_context *ctx, int quick) {
  static double cached = 0;
  if (cached > 0) return cached;
  /* launches as long as the timer check's, as cl-probe's */
  if (tabcl__measure_fma(ctx, quick ? 256 : 4096, &check, quick ? 3 : 10, wall_clock, &cached) !=
      TABCL_OK) {
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
  printf("| fp32 FMA peak | %.2f TFLOP/s (%.1f GFLOP/s) |\n", fl * 1e-12, fl * 1e-9);
  bench_record(a, "copy", "device", "copy_bandwidth", bw * 1e-9, "GB/s");
  bench_record(a, "copy", "device", "fp32_fma_peak", fl * 1e-12, "TFLOP/s");
  double rt = 0, rt_min = 0;
  const int rbad = bench_round_trip(ctx, a->quick, &rt, &rt_min);
  if (!rbad) {
    printf("| round trip: one launch + a blocking read of 128 B (median, least) | %.1f us, %.1f us |\n",
           rt * 1e6, rt_min * 1e6);
    bench_record(a, "copy", "device", "round_trip_us", rt * 1e6, "us");
    bench_record(a, "copy", "device", "round_trip_min_us", rt_min * 1e6, "us");
  }
  bench_link l;
  const int lbad = bench_link_bandwidth(ctx, a->quick, &l);
  if (!lbad) {
    static const char *const names[4] = {"host to device, pinned", "host to device, malloc'd",
                                         "device to host, pinned", "device to host, malloc'd"};
    static const char *const keys[4] = {"h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"};
    const double v[4] = {l.h2d_pinned, l.h2d_pageable, l.d2h_pinned, l.d2h_pageable};
    for (int i = 0; i < 4; i++) {
      printf("| %s (%zu MiB, blocking) | %.1f GB/s |\n", names[i], l.bytes >> 20, v[i] * 1e-9);
      bench_record(a, "copy", "device", keys[i], v[i] * 1e-9, "GB/s");
    }
  }
  return bw > 0 && fl > 0 && !lbad && !rbad ? 0 : 1;
}

/* Median seconds of reps blocking transfers of bytes between host memory h
   and device buffer d (write: host to device), wall clock: what a host call
   waits for. -1 on failure. */
static double time_transfer(cl_command_queue q, cl_mem d, void *h, size_t bytes, int write,
                            int reps) {
  double t[16];
  if (reps > 16) reps = 16;
  for (int r = -1; r < reps; r++) {
    double t0 = bench_now();
    cl_int err = write ? clEnqueueWriteBuffer(q, d, CL_TRUE, 0, bytes, h, 0, NULL, NULL)
                       : clEnqueueReadBuffer(q, d, CL_TRUE, 0, bytes, h, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
      fprintf(stderr, "link bandwidth: %s: %s\n", write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer",
              tabcl__cl_error_name(err));
      return -1;
    }
    if (r >= 0) t[r] = bench_now() - t0;
  }
  return bench_median(t, reps);
}

int bench_link_bandwidth(tabcl_context *ctx, int quick, bench_link *out) {
  static bench_link cached;
  static int have;
  if (have) {
    *out = cached;
    return 0;
  }
  memset(out, 0, sizeof *out);
  const size_t bytes = quick ? ((size_t)16 << 20) : ((size_t)256 << 20);
  const int reps = quick ? 3 : 5;
  cl_command_queue q = tabcl_context_cl_queue(ctx);
  cl_mem dev = NULL, pinned = NULL;
  void *page = malloc(bytes), *mapped = NULL;
  tabcl_status s = page ? TABCL_OK : tabcl__fail(TABCL_OUT_OF_MEMORY, "link bench: host memory");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, bytes, NULL, &dev, "link bench device");
  /* pinned: a mapped CL_MEM_ALLOC_HOST_PTR buffer, as the staging area is */
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL,
                                   &pinned, "link bench pinned");
  cl_int err = CL_SUCCESS;
  if (!s) {
    mapped = clEnqueueMapBuffer(q, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                NULL, &err);
    if (err != CL_SUCCESS) s = tabcl__cl_fail(err, "clEnqueueMapBuffer", "link bench pinned");
  }
  if (!s) {
    memset(page, 1, bytes);   /* touched, so no first-use page faults are timed */
    memset(mapped, 1, bytes);
    double hp = time_transfer(q, dev, mapped, bytes, 1, reps);
    double hm = time_transfer(q, dev, page, bytes, 1, reps);
    double dp = time_transfer(q, dev, mapped, bytes, 0, reps);
    double dm = time_transfer(q, dev, page, bytes, 0, reps);
    if (hp > 0 && hm > 0 && dp > 0 && dm > 0) {
      out->h2d_pinned = (double)bytes / hp, out->h2d_pageable = (double)bytes / hm;
      out->d2h_pinned = (double)bytes / dp, out->d2h_pageable = (double)bytes / dm;
      out->bytes = bytes;
    } else {
      s = TABCL_OPENCL_ERROR;
    }
  }
  if (mapped) clEnqueueUnmapMemObject(q, pinned, mapped, 0, NULL, NULL);
  if (mapped) clFinish(q);
  tabcl__buffer_release(pinned);
  tabcl__buffer_release(dev);
  free(page);
  if (s) {
    fprintf(stderr, "link bandwidth: %s\n", tabcl_last_error());
    return 1;
  }
  cached = *out;
  have = 1;
  return 0;
}
