/* tabcl-bench sort: the device bitonic sort of (ulong key, uint value)
 * pairs, 2^20 and 2^24 pairs (2^16 with --quick), with the bytes its passes
 * move set against the device's copy bandwidth. With --dump DIR the exact
 * inputs go to DIR/sort_<case>.keys.u64 and .vals.u32 (little-endian raw
 * arrays) for the torch.sort peer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Random 64-bit keys like the index's hashes, values = slot numbers. */
static void make_input(uint64_t *k, uint32_t *v, size_t n, uint64_t seed) {
  uint64_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x += 0x9E3779B97F4A7C15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    k[i] = z ^ (z >> 31);
    v[i] = (uint32_t)i;
  }
}

/* Raw little-endian arrays whatever the host's byte order. */
static int dump_le(const char *dir, const char *cs, const char *ext, const void *data, size_t n,
                   size_t width) {
  char path[4096];
  snprintf(path, sizeof path, "%s/sort_%s.%s", dir, cs, ext);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "sort: cannot write %s\n", path);
    return 1;
  }
  unsigned char buf[8 * 4096];
  const unsigned char *p = data;
  size_t done = 0;
  int bad = 0;
  while (done < n && !bad) {
    size_t m = n - done < 4096 ? n - done : 4096;
    for (size_t i = 0; i < m; i++) {
      uint64_t x;
      if (width == 8) {
        memcpy(&x, p + (done + i) * 8, 8);
      } else {
        uint32_t y;
        memcpy(&y, p + (done + i) * 4, 4);
        x = y;
      }
      for (size_t b = 0; b < width; b++) buf[i * width + b] = (unsigned char)(x >> (8 * b));
    }
    bad = fwrite(buf, width, m, f) != m;
    done += m;
  }
  if (fclose(f) != 0) bad = 1;
  if (bad) fprintf(stderr, "sort: short write to %s\n", path);
  return bad;
}

static cl_ulong event_end(cl_event e) {
  cl_ulong t = 0;
  clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL);
  return t;
}

/* Sorted ascending by (key, value), and the same multiset of pairs as the
   input as far as sums and xors of keys and values can tell. */
static int check_sorted(const uint64_t *ik, const uint32_t *iv, const uint64_t *k,
                        const uint32_t *v, size_t n) {
  uint64_t ks = 0, kx = 0, vs = 0, ks2 = 0, kx2 = 0, vs2 = 0;
  for (size_t i = 0; i < n; i++) {
    ks += ik[i], kx ^= ik[i] * 0x9E3779B97F4A7C15ULL, vs += iv[i];
    ks2 += k[i], kx2 ^= k[i] * 0x9E3779B97F4A7C15ULL, vs2 += v[i];
    if (i && (k[i - 1] > k[i] || (k[i - 1] == k[i] && v[i - 1] > v[i]))) return 0;
  }
  return ks == ks2 && kx == kx2 && vs == vs2;
}

static int run_case(tabcl_context *ctx, const bench_args *a, unsigned log2n, double copy_bw) {
  size_t n = (size_t)1 << log2n;
  char cs[16];
  snprintf(cs, sizeof cs, "2^%u", log2n);
  uint64_t *k = malloc(n * 8), *gk = malloc(n * 8);
  uint32_t *v = malloc(n * 4), *gv = malloc(n * 4);
  cl_mem ik = NULL, iv = NULL, wk = NULL, wv = NULL;
  int failed = 1;
  double *times = NULL;
  int reps = a->reps > 0 ? a->reps : 1;
  if (!k || !gk || !v || !gv || !(times = malloc(sizeof *times * (size_t)reps))) {
    fprintf(stderr, "sort %s: out of host memory\n", cs);
    goto done;
  }
  make_input(k, v, n, 0x5EED0000ULL + log2n);
  if (a->dump_dir && (dump_le(a->dump_dir, cs, "keys.u64", k, n, 8) ||
                      dump_le(a->dump_dir, cs, "vals.u32", v, n, 4)))
    goto done;
  tabcl_status s;
  if ((s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 8, k, &ik, "keys")) ||
      (s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, v, &iv, "values")) ||
      (s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 8, NULL, &wk, "keys")) ||
      (s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &wv, "values"))) {
    fprintf(stderr, "sort %s: %s: %s\n", cs, tabcl_status_name(s), tabcl_last_error());
    goto done;
  }
  uint64_t launches = 0;
  for (int r = -1; r < reps; r++) { /* r = -1: the warm-up (builds the program) */
    cl_event copied = NULL, sorted = NULL;
    cl_command_queue queue = tabcl_context_cl_queue(ctx);
    cl_int err = clEnqueueCopyBuffer(queue, ik, wk, 0, 0, n * 8, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      err = clEnqueueCopyBuffer(queue, iv, wv, 0, 0, n * 4, 0, NULL, &copied);
    if (err != CL_SUCCESS) {
      fprintf(stderr, "sort %s: clEnqueueCopyBuffer: %s\n", cs, tabcl__cl_error_name(err));
      goto done;
    }
    clFinish(queue);
    tabcl_stats before, after;
    tabcl_context_stats(ctx, &before);
    double t0 = bench_now();
    s = tabcl__tools_sort_pairs(ctx, wk, wv, n, 1, &copied, &sorted);
    if (!s) s = tabcl__finish(ctx);
    double wall = bench_now() - t0;
    tabcl_context_stats(ctx, &after);
    launches = after.kernel_launches - before.kernel_launches;
    if (s) {
      fprintf(stderr, "sort %s: %s: %s\n", cs, tabcl_status_name(s), tabcl_last_error());
      clReleaseEvent(copied);
      goto done;
    }
    /* from the end of the input copy to the end of the last pass: every
       launch and the gaps between them */
    if (r >= 0)
      times[r] = bench_pick((double)(event_end(sorted) - event_end(copied)) * 1e-9, wall);
    clReleaseEvent(copied);
    clReleaseEvent(sorted);
  }
  if ((s = tabcl__read(ctx, wk, 0, n * 8, gk)) || (s = tabcl__read(ctx, wv, 0, n * 4, gv))) {
    fprintf(stderr, "sort %s: %s: %s\n", cs, tabcl_status_name(s), tabcl_last_error());
    goto done;
  }
  int ok = check_sorted(k, v, gk, gv, n);
  double sec = bench_median(times, reps);
  double ms = sec * 1e3, mpairs = sec > 0 ? (double)n / sec * 1e-6 : 0;
  /* every launch reads and writes each pair once (12 bytes each way) */
  double moved = (double)launches * (double)n * 12.0 * 2.0;
  double gbs = sec > 0 ? moved / sec * 1e-9 : 0;
  printf("| %s | %zu | %.3f | %.1f | %llu | %.2f | %.1f | %.2f | %s |\n", cs, n, ms, mpairs,
         (unsigned long long)launches, moved * 1e-9, gbs,
         copy_bw > 0 ? gbs / (copy_bw * 1e-9) : 0.0, ok ? "ok" : "WRONG");
  bench_record(a, "sort", cs, "sort_ms", ms, "ms");
  bench_record(a, "sort", cs, "mpairs_per_s", mpairs, "Mpairs/s");
  bench_record(a, "sort", cs, "gpairs_per_s", mpairs * 1e-3, "Gpairs/s");
  bench_record(a, "sort", cs, "passes", (double)launches, "count");
  bench_record(a, "sort", cs, "bytes_moved_gb", moved * 1e-9, "GB");
  bench_record(a, "sort", cs, "effective_gb_per_s", gbs, "GB/s");
  if (copy_bw > 0) bench_record(a, "sort", cs, "fraction_of_copy_bw", gbs / (copy_bw * 1e-9), "ratio");
  bench_record(a, "sort", cs, "sorted_ok", ok, "bool");
  failed = !ok;
done:
  tabcl__buffer_release(ik);
  tabcl__buffer_release(iv);
  tabcl__buffer_release(wk);
  tabcl__buffer_release(wv);
  free(k);
  free(gk);
  free(v);
  free(gv);
  free(times);
  return failed;
}

int bench_sort(tabcl_context *ctx, const bench_args *a) {
  double bw = bench_copy_bandwidth(ctx, a->quick);
  printf("copy bandwidth %.1f GB/s (read+write)\n\n", bw * 1e-9);
  printf("| case | pairs | sort ms | Mpairs/s | passes | GB moved | GB/s | of copy bw | check |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  static const unsigned full[] = {20, 24}, quick[] = {16};
  const unsigned *sizes = a->quick ? quick : full;
  int count = a->quick ? 1 : 2, failed = 0;
  for (int i = 0; i < count; i++) failed |= run_case(ctx, a, sizes[i], bw);
  return failed;
}
