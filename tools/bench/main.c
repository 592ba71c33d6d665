/* tabcl-bench: speed and memory figures for each kernel family.
 * Usage: tabcl-bench [--device SEL] [--quick] [--reps N] [--jsonl PATH] [--dump DIR]
 *                    [--cases A,B] <what>...
 * where <what> is one of the table below, or "all". --cases (attention and
 * lookup; else $TABCL_BENCH_CASES) keeps the cases whose name contains one of
 * the parts: "--cases ctx" runs the context cases alone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

static const bench_entry benches[] = {
    {"copy", "device copy bandwidth and fp32 FMA peak", bench_copy},
    {"sort", "bitonic sort of (u64 key, u32 value) pairs, 2^20 and 2^24", bench_sort},
    {"hash", "label hash (XXH3-64) throughput by label length", bench_hash},
    {"attention", "scaled dot-product attention, fused and CLBlast", bench_attention},
    {"lookup", "categorical index: fit, lookup (device and host), peak memory", bench_lookup},
    {"stream", "8 estimators' K and V streamed under attention vs upload-then-compute", bench_stream},
};

static void usage(FILE *f) {
  fprintf(f, "usage: tabcl-bench [--device SEL] [--quick] [--reps N] [--jsonl PATH] [--dump DIR]\n"
             "                   [--cases A,B] <what>... | all\n");
  for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
    fprintf(f, "  %-10s %s\n", benches[i].name, benches[i].help);
}

int main(int argc, char **argv) {
  bench_args a = {0};
  a.reps = 10;
  const char *what[32];
  int nwhat = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) a.device = argv[++i];
    else if (!strcmp(argv[i], "--quick")) a.quick = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) a.reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--jsonl") && i + 1 < argc) a.jsonl = argv[++i];
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) a.dump_dir = argv[++i];
    else if (!strcmp(argv[i], "--cases") && i + 1 < argc) a.cases = argv[++i];
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
    else if (argv[i][0] == '-') { usage(stderr); return 2; }
    else if (nwhat < 32) what[nwhat++] = argv[i];
  }
  if (nwhat == 0) { usage(stderr); return 2; }
  /* The dump folder is made here, once, for every benchmark that writes in it. */
  if (a.dump_dir && mkdir(a.dump_dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "tabcl-bench: cannot create the dump folder %s: %s\n", a.dump_dir,
            strerror(errno));
    return 2;
  }
  tabcl_options o = {0};
  o.device = a.device;
  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create(&o, &ctx);
  if (s) {
    fprintf(stderr, "tabcl-bench: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
    return 1;
  }
  char driver[128] = "";
  if (clGetDeviceInfo(tabcl_context_cl_device(ctx), CL_DRIVER_VERSION, sizeof driver - 1, driver,
                      NULL) != CL_SUCCESS)
    driver[0] = '\0';
  printf("# tabcl-bench %s on %s (%s), driver %s\n", tabcl_version_string(),
         tabcl_context_device_name(ctx), tabcl_context_platform_name(ctx), driver);
  bench_timer_setup(ctx, &a);
  int failed = 0;
  for (int w = 0; w < nwhat; w++) {
    int found = 0;
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) {
      if (strcmp(what[w], "all") && strcmp(what[w], benches[i].name)) continue;
      found = 1;
      printf("\n## %s\n", benches[i].name);
      fflush(stdout);
      if (benches[i].run(ctx, &a) != 0) failed = 1;
    }
    if (!found) { fprintf(stderr, "tabcl-bench: unknown benchmark %s\n", what[w]); failed = 1; }
  }
  tabcl_context_destroy(ctx);
  return failed;
}
