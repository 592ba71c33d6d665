/* tabcl-bench hash: label hashing throughput for fixed label lengths,
 * against the device's copy bandwidth measured in the same run, against the
 * rate the bytes moved allow (label bytes + 8-byte offsets + 8-byte hashes),
 * and, when built with libxxhash, against XXH3 on one host core and on
 * every host core (one thread a core, each a contiguous share). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#ifdef TABCL_BENCH_WITH_XXHASH
#include <pthread.h>
#include <unistd.h>
#include <xxhash.h>

/* One host thread's share of the labels (equal lengths). */
typedef struct xx_share {
  const uint8_t *data;
  size_t len, first, count;
  uint64_t sink;
} xx_share;

static void *xx_run(void *arg) {
  xx_share *s = arg;
  uint64_t sink = 0;
  for (size_t i = s->first; i < s->first + s->count; i++)
    sink ^= XXH3_64bits_withSeed(s->data + i * s->len, s->len, 1);
  s->sink = sink;
  return NULL;
}

/* Label bytes per second of XXH3 over n labels of len bytes on `threads`
   host threads (1: this one), the best of three passes (a noisy host slows
   one pass, never speeds one up); 0 if threads cannot start. */
static double xx_rate(const uint8_t *data, size_t len, size_t n, int threads) {
  enum { MAX_THREADS = 256 };
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  xx_share share[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  double best = 0;
  for (int pass = 0; pass < 3; pass++) {
    for (int t = 0; t < threads; t++) {
      share[t].data = data, share[t].len = len;
      share[t].first = n * (size_t)t / (size_t)threads;
      share[t].count = n * (size_t)(t + 1) / (size_t)threads - share[t].first;
    }
    double t0 = bench_now();
    for (int t = 1; t < threads; t++)
      if (pthread_create(&tid[t], NULL, xx_run, &share[t]) != 0) {
        for (int u = 1; u < t; u++) pthread_join(tid[u], NULL);
        return 0;
      }
    xx_run(&share[0]);
    for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
    double rate = (double)n * (double)len / (bench_now() - t0);
    uint64_t sink = 0;
    for (int t = 0; t < threads; t++) sink ^= share[t].sink;
    if (rate > best && sink != 42) best = rate;   /* (the sink keeps the hashing) */
  }
  return best;
}
#endif

static void fill_random(uint8_t *p, size_t n, uint64_t x) {
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (uint8_t)(x >> 24);
  }
}

/* Device time of one hash_column call: from its first kernel's start to its
   last kernel's end, taken from the launches' own profiling events (a user
   event gate in front of the call inflated NVIDIA's times by 0.1-0.3 ms). */
static tabcl_status time_once(tabcl_context *ctx, const tabcl__tools_column *d, cl_mem out,
                              double *seconds) {
  tabcl_status s = tabcl__finish(ctx);
  if (s) return s;
  double t0 = bench_now();
  s = tabcl__tools_hash_column(ctx, d, 1, out, seconds);   /* it waits for the launches */
  if (!s) *seconds = bench_pick(*seconds, bench_now() - t0);
  return s;
}

/* Kernel choices for GPU sweeps, from the environment (read here only, and
   applied as tuning entries on the benchmark's context, so one run can time
   several). TABCL_BENCH_HASH_VARIANTS is a
   comma-separated list of choices, each MID:MID_WG:BIG_WG:GROUP_MIN
   (missing fields 0 = the library's default): MID 3 hash_team_all_flat
   (four lanes a label), 5 hash_pair_all (two); MID_WG their work-group
   size; BIG_WG hash_big's work-group size (any other MID runs the
   default, though the row keeps its tag); GROUP_MIN the bytes from which
   labels take hash_big. Every length is uploaded once
   and timed under each choice in turn; a row's case name carries its
   choice. TABCL_BENCH_HASH_LENS (comma-separated) picks the lengths. */
typedef struct variant {
  long f[4];
  char tag[64];
} variant;

static int parse_variants(variant *v, int cap) {
  const char *spec = getenv("TABCL_BENCH_HASH_VARIANTS");
  int n = 0;
  for (const char *c = spec; c && *c && n < cap;) {
    variant x;
    memset(&x, 0, sizeof x);
    for (int k = 0; k < 4; k++) {
      char *end;
      x.f[k] = strtol(c, &end, 10);
      c = end;
      if (*c != ':') break;
      c++;
    }
    snprintf(x.tag, sizeof x.tag, " v%ld:%ld:%ld:%ld", x.f[0], x.f[1], x.f[2], x.f[3]);
    v[n++] = x;
    while (*c && *c != ',') c++;
    if (*c == ',') c++;
  }
  if (n == 0) memset(&v[n++], 0, sizeof *v); /* the defaults, untagged */
  return n;
}

/* A variant as tuning entries on the context: 0 (or a number the key does
   not take) leaves that key to the table. */
static void apply_variant(tabcl_context *ctx, const variant *v) {
  static const char *const keys[4] = {"hash.mid", "hash.mid_wg", "hash.big_wg", "hash.group_min"};
  for (int k = 0; k < 4; k++) {
    char entry[64];
    if (v->f[k] > 0) snprintf(entry, sizeof entry, "%s=%ld", keys[k], v->f[k]);
    else snprintf(entry, sizeof entry, "%s=auto", keys[k]);
    if (tabcl__context_tune(ctx, entry) != TABCL_OK)
      fprintf(stderr, "hash bench: %s\n", tabcl_last_error());
  }
}

static int one_case(tabcl_context *ctx, const bench_args *a, size_t len, double copy_bw,
                    const variant *vars, int nvars) {
  size_t total = a->quick ? ((size_t)4 << 20) : ((size_t)256 << 20);
  size_t n = total / len;
  if (n < 1) n = 1;
  int64_t *offsets = malloc((n + 1) * sizeof *offsets);
  uint8_t *data = malloc(n * len);
  uint64_t *got = malloc(n * sizeof *got);
  if (!offsets || !data || !got) {
    fprintf(stderr, "hash bench: out of host memory for %zu-byte labels\n", len);
    free(offsets);
    free(data);
    free(got);
    return 1;
  }
  for (size_t i = 0; i <= n; i++) offsets[i] = (int64_t)(i * len);
  fill_random(data, n * len, 0x9E3779B97F4A7C15ULL ^ len);
  tabcl_strings_view v = {(int64_t)n, offsets, data, NULL};
  tabcl__tools_column *d = NULL;
  cl_mem out = NULL;
  int reps = a->reps < 1 ? 1 : a->reps > 64 ? 64 : a->reps;
  tabcl_status s = tabcl__tools_column_upload(ctx, &v, &d);
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * sizeof(uint64_t), NULL, &out, "hashes");
  double host_gbps = 0, all_gbps = 0;
  int cores = 1;
#ifdef TABCL_BENCH_WITH_XXHASH
  if (!s) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cores = online > 0 ? (int)online : 1;
    host_gbps = xx_rate(data, len, n, 1) * 1e-9;
    all_gbps = xx_rate(data, len, n, cores) * 1e-9;
  }
#endif
  int failed = 0;
  for (int vi = 0; !s && vi < nvars; vi++) {
    double times[64], t = 0;
    apply_variant(ctx, &vars[vi]);
    for (int w = 0; !s && w < 2; w++) s = time_once(ctx, d, out, &t); /* warm-up, and the compile */
    for (int r = 0; !s && r < reps; r++) s = time_once(ctx, d, out, &times[r]);
    if (!s) s = tabcl__read(ctx, out, 0, n * sizeof(uint64_t), got);
    /* Spot-check the figures are of a correct hash. */
    for (size_t i = 0; !s && i < n; i += 1 + n / 97)
      if (got[i] != tabcl__tools_label_hash(data + i * len, len, 1))
        s = tabcl__fail(TABCL_OPENCL_ERROR, "label %zu hashed wrongly", i);
    if (s) break;
    t = bench_median(times, reps);
    double bytes = (double)n * (double)len;
    double gbps = bytes / t * 1e-9, lps = (double)n / t;
    double moved_rate = copy_bw > 0 ? copy_bw / (double)(len + 16) : 0; /* labels/s the traffic allows */
    double of_copy = copy_bw > 0 ? 100.0 * bytes / t / copy_bw : 0;
    double of_moved = moved_rate > 0 ? 100.0 * lps / moved_rate : 0;
    char name[96];
    snprintf(name, sizeof name, "%zuB%s", len, vars[vi].tag);
    printf("| %s | %zu | %.3f | %.2f | %.3g | %.1f%% | %.1f%% |", name, n, t * 1e3, gbps, lps,
           of_copy, of_moved);
    bench_record(a, "hash", name, "pct_of_copy_bandwidth", of_copy, "%");
    bench_record(a, "hash", name, "hash_GBps", gbps, "GB/s");
    bench_record(a, "hash", name, "labels_per_s", lps, "labels/s");
    bench_record(a, "hash", name, "pct_of_moved_bytes_rate", of_moved, "%");
    bench_record(a, "hash", name, "device_ms", t * 1e3, "ms");
    if (host_gbps > 0) {
      printf(" %.2f | %.2fx |", host_gbps, gbps / host_gbps);
      bench_record(a, "hash", name, "xxhash_host_GBps", host_gbps, "GB/s");
      bench_record(a, "hash", name, "vs_xxhash_host", gbps / host_gbps, "x");
    } else {
      printf(" - | - |");
    }
    if (all_gbps > 0) {
      printf(" %.2f (%d) | %.2fx |\n", all_gbps, cores, gbps / all_gbps);
      bench_record(a, "hash", name, "xxhash_all_cores_GBps", all_gbps, "GB/s");
      bench_record(a, "hash", name, "vs_xxhash_all_cores", gbps / all_gbps, "x");
    } else {
      printf(" - | - |\n");
    }
    fflush(stdout);
  }
  {
    variant none;
    memset(&none, 0, sizeof none);
    apply_variant(ctx, &none);
  }
  tabcl__buffer_release(out);
  tabcl__tools_column_release(d);
  if (s) {
    fprintf(stderr, "hash bench, %zu-byte labels: %s: %s\n", len, tabcl_status_name(s), tabcl_last_error());
    failed = 1;
  }
  free(offsets);
  free(data);
  free(got);
  return failed;
}

int bench_hash(tabcl_context *ctx, const bench_args *a) {
  static const size_t all_lens[] = {8, 16, 64, 256, 4096, 65536};
  size_t lens[16], nlens = 0;
  const char *pick = getenv("TABCL_BENCH_HASH_LENS");
  if (pick && *pick) {
    for (const char *c = pick; *c && nlens < 16;) {
      char *end;
      unsigned long v = strtoul(c, &end, 10);
      if (end == c) break;
      if (v > 0) lens[nlens++] = (size_t)v;
      c = *end == ',' ? end + 1 : end;
    }
  } else {
    for (size_t i = 0; i < sizeof all_lens / sizeof all_lens[0]; i++) lens[nlens++] = all_lens[i];
  }
  variant vars[32];
  int nvars = parse_variants(vars, 32);
  double copy_bw = bench_copy_bandwidth(ctx, a->quick);
  printf("copy bandwidth (read+write): %.1f GB/s\n\n", copy_bw * 1e-9);
  printf("| labels | count | device ms | GB/s | labels/s | of copy bw | of moved-bytes rate |"
         " xxhash host GB/s | vs xxhash host | xxhash all cores GB/s (threads) | vs all cores |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|\n");
  int failed = 0;
  for (size_t i = 0; i < nlens; i++) {
    failed |= one_case(ctx, a, lens[i], copy_bw, vars, nvars);
    fflush(stdout);
  }
  printf("\nmoved bytes per label = label bytes + 8 (offset read) + 8 (hash written); "
         "xxhash host: XXH3_64bits_withSeed on one core, and on one thread a core, wall clock, "
         "the best of three passes.\n");
  return failed;
}
