/* cl-probe: tells whether a machine runs tabcl correctly and how fast.
 *
 * For every OpenCL device (or the one --device names): a table of what
 * tabcl relies on, every kernel program compiled (time, and whether the disk
 * cache supplied it), every registered self-check run, and the copy
 * bandwidth and fp32 FMA throughput measured. Every query is checked; a
 * failure is shown inline and the report carries on. The exit status is
 * non-zero if anything failed. Progress goes to stderr, the report to stdout
 * (a table, or JSON with --json). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl-probe.h"

typedef struct probe_opts {
  int json, quick, plan, all_variants;
  int shard, shards;     /* --all-variants=I/N: the I-th of N shares (0 and 1: all) */
  const char *device;
  const char *profile;   /* --device-profile: NULL takes $TABCL_DEVICE_PROFILE */
} probe_opts;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the device table ---- */

typedef enum kind { K_STR, K_UINT, K_ULONG, K_SIZE, K_SIZES, K_TYPE, K_EXT, K_FP, K_FMA } kind;
typedef struct query {
  const char *name;
  cl_device_info param;
  kind kind;
  const char *ext; /* K_EXT: the extension whose presence is reported */
} query;

static const query queries[] = {
    {"name", CL_DEVICE_NAME, K_STR, NULL},
    {"vendor", CL_DEVICE_VENDOR, K_STR, NULL},
    {"driver version", CL_DRIVER_VERSION, K_STR, NULL},
    {"device version", CL_DEVICE_VERSION, K_STR, NULL},
    {"OpenCL C version", CL_DEVICE_OPENCL_C_VERSION, K_STR, NULL},
    {"type", CL_DEVICE_TYPE, K_TYPE, NULL},
    {"compute units", CL_DEVICE_MAX_COMPUTE_UNITS, K_UINT, NULL},
    {"max clock (MHz)", CL_DEVICE_MAX_CLOCK_FREQUENCY, K_UINT, NULL},
    {"max work-group size", CL_DEVICE_MAX_WORK_GROUP_SIZE, K_SIZE, NULL},
    {"max work-item sizes", CL_DEVICE_MAX_WORK_ITEM_SIZES, K_SIZES, NULL},
    {"local memory (bytes)", CL_DEVICE_LOCAL_MEM_SIZE, K_ULONG, NULL},
    {"max allocation (bytes)", CL_DEVICE_MAX_MEM_ALLOC_SIZE, K_ULONG, NULL},
    {"global memory (bytes)", CL_DEVICE_GLOBAL_MEM_SIZE, K_ULONG, NULL},
    {"address bits", CL_DEVICE_ADDRESS_BITS, K_UINT, NULL},
    {"base address align (bits)", CL_DEVICE_MEM_BASE_ADDR_ALIGN, K_UINT, NULL},
    {"fp32 fused multiply-add", CL_DEVICE_SINGLE_FP_CONFIG, K_FMA, NULL},
    {"fp64", CL_DEVICE_DOUBLE_FP_CONFIG, K_FP, NULL},
    {"fp16 (cl_khr_fp16)", CL_DEVICE_EXTENSIONS, K_EXT, "cl_khr_fp16"},
    {"subgroups (cl_khr_subgroups)", CL_DEVICE_EXTENSIONS, K_EXT, "cl_khr_subgroups"},
    {"subgroups (cl_intel_subgroups)", CL_DEVICE_EXTENSIONS, K_EXT, "cl_intel_subgroups"},
};

static int report_query(cl_device_id d, const query *q) {
  char buf[8192], err[256];
  cl_int e = CL_SUCCESS;
  size_t got = 0;
  switch (q->kind) {
    case K_STR:
    case K_EXT:
      e = clGetDeviceInfo(d, q->param, sizeof buf - 1, buf, &got);
      if (e != CL_SUCCESS) break;
      buf[got < sizeof buf ? got : sizeof buf - 1] = '\0';
      if (q->kind == K_STR) row(q->name, NULL, "%s", buf);
      else row(q->name, NULL, "%s", strstr(buf, q->ext) ? "yes" : "no");
      return 0;
    case K_UINT: {
      cl_uint v = 0;
      if ((e = clGetDeviceInfo(d, q->param, sizeof v, &v, NULL)) != CL_SUCCESS) break;
      row(q->name, NULL, "%u", v);
      return 0;
    }
    case K_ULONG: {
      cl_ulong v = 0;
      if ((e = clGetDeviceInfo(d, q->param, sizeof v, &v, NULL)) != CL_SUCCESS) break;
      row(q->name, NULL, "%llu", (unsigned long long)v);
      return 0;
    }
    case K_SIZE: {
      size_t v = 0;
      if ((e = clGetDeviceInfo(d, q->param, sizeof v, &v, NULL)) != CL_SUCCESS) break;
      row(q->name, NULL, "%zu", v);
      return 0;
    }
    case K_SIZES: {
      size_t v[3] = {0, 0, 0};
      cl_uint dims = 0;
      if ((e = clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof dims, &dims, NULL)) !=
          CL_SUCCESS)
        break;
      size_t all[16] = {0};
      if (dims > 16) dims = 16;
      if ((e = clGetDeviceInfo(d, q->param, dims * sizeof(size_t), all, NULL)) != CL_SUCCESS) break;
      for (cl_uint i = 0; i < 3 && i < dims; i++) v[i] = all[i];
      row(q->name, NULL, "%zu x %zu x %zu", v[0], v[1], v[2]);
      return 0;
    }
    case K_TYPE: {
      cl_device_type t = 0;
      if ((e = clGetDeviceInfo(d, q->param, sizeof t, &t, NULL)) != CL_SUCCESS) break;
      row(q->name, NULL, "%s%s%s%s", t & CL_DEVICE_TYPE_GPU ? "GPU " : "",
          t & CL_DEVICE_TYPE_CPU ? "CPU " : "", t & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator " : "",
          t & CL_DEVICE_TYPE_DEFAULT ? "(default)" : "");
      return 0;
    }
    case K_FP: {
      cl_device_fp_config fp = 0;
      e = clGetDeviceInfo(d, q->param, sizeof fp, &fp, NULL);
      /* Devices without fp64 may reject the query: that means "no". */
      row(q->name, NULL, "%s", e == CL_SUCCESS && fp ? "yes" : "no");
      return 0;
    }
    case K_FMA: {
      /* without CL_FP_FMA, fma() is a software routine: the kernels use mad() */
      cl_device_fp_config fp = 0;
      if ((e = clGetDeviceInfo(d, q->param, sizeof fp, &fp, NULL)) != CL_SUCCESS) break;
      row(q->name, NULL, "%s", fp & CL_FP_FMA ? "yes (kernels use fma)"
                                               : "no: fma() is emulated (kernels use mad)");
      return 0;
    }
  }
  snprintf(err, sizeof err, "clGetDeviceInfo: %s (%d)", tabcl__cl_error_name(e), (int)e);
  row(q->name, err, NULL);
  return 1;
}

/* One program build or self-check: a JSON object or a table line; returns
   1 when it counts as a failure. source ("built" / "disk cache") is given
   for successful program builds only. A self-check (check set) that returns
   TABCL_UNSUPPORTED does not apply to the device (a vendor path elsewhere):
   shown as n/a, not counted. */
static int step_result(const char *name, tabcl_status s, double ms, const char *source,
                       int check) {
  const int na = check && s == TABCL_UNSUPPORTED;
  if (json_mode) {
    json_open(NULL, '{');
    json_key("name");
    json_string(name);
    json_key("ok");
    printf("%s", s == TABCL_OK || na ? "true" : "false");
    if (na) {
      json_key("applies");
      printf("false");
      json_key("note");
      json_string(tabcl_last_error());
    } else {
      json_key("ms");
      printf("%.1f", ms);
      if (source) {
        json_key("from_cache");
        printf("%s", strcmp(source, "disk cache") == 0 ? "true" : "false");
      }
      if (s) {
        json_key("error");
        json_string(tabcl_last_error());
      }
    }
    json_close('}');
  } else if (na) {
    printf("  %-32s n/a: %s\n", name, tabcl_last_error());
  } else if (s) {
    printf("  %-32s FAILED: %s (%.1f ms)\n    %s\n", name, tabcl_status_name(s), ms,
           tabcl_last_error());
  } else {
    printf("  %-32s ok %8.1f ms%s%s\n", name, ms, source ? "  " : "", source ? source : "");
  }
  return s != TABCL_OK && !na;
}

/* A measurement's row when it failed (the status and its message, inline
   like any other error); returns 1 then, 0 when s is TABCL_OK. */
static int failed_row(const char *name, tabcl_status s) {
  if (!s) return 0;
  char err[2048];
  snprintf(err, sizeof err, "%s: %s", tabcl_status_name(s), tabcl_last_error());
  row(name, err, NULL);
  return 1;
}

/* ---- one device: table, kernels, self-checks, ceilings ---- */

static int probe_device(const probe_opts *o, int pi, int di, cl_device_id d) {
  int failures = 0;
  char sel[32];
  snprintf(sel, sizeof sel, "%d:%d", pi, di);
  fprintf(stderr, "cl-probe: device %s: querying\n", sel);
  if (json_mode) {
    json_open(NULL, '{');
    json_key("selector");
    json_string(sel);
    json_open("info", '{');
  } else {
    heading("Device %s", sel);
  }
  for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++)
    failures += report_query(d, &queries[i]);
  if (json_mode) json_close('}');

  tabcl_options opts = {0};
  opts.device = sel;
  opts.device_profile = o->profile;
  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create(&opts, &ctx);
  if (s != TABCL_OK) {
    char err[2048];
    snprintf(err, sizeof err, "%s: %s", tabcl_status_name(s), tabcl_last_error());
    row("context", err, NULL);
    if (json_mode) json_close('}');
    return failures + 1;
  }
  char devopts[512];
  tabcl__tools_build_options(ctx, devopts, sizeof devopts);
  row("build options", NULL, "%s", devopts);
  if (tabcl__tools_device_profile(ctx)[0]) probe_profile(ctx);
  probe_tuning(ctx);

  /* Kernel programs */
  if (json_mode) json_open("programs", '[');
  else heading("  Kernel programs (compile time, source)");
  double cold_ms = 0;   /* compiling from source, the disk cache aside */
  for (int i = 0; i < tabcl_program_count(); i++) {
    const char *name = tabcl_program_name(i);
    fprintf(stderr, "cl-probe: device %s: building %s\n", sel, name);
    int from_cache = 0;
    double t0 = now();
    s = tabcl_program_prepare(ctx, i, &from_cache);
    const double ms = (now() - t0) * 1e3;
    if (!s && from_cache == 0) cold_ms += ms;
    failures += step_result(name, s, ms, s ? NULL : from_cache == 1 ? "disk cache" : "built", 0);
  }
  if (json_mode) json_close(']');
  /* A cache folder or entry it would not trust is no failure (the programs
     were built from source), but the user should hear which and why. */
  char refusal[1024];
  const char *cache_dir = tabcl__tools_cache_dir(ctx);
  if (tabcl__disk_cache_refusal(ctx, refusal, sizeof refusal))
    row("disk cache", NULL, "refused: %s; programs were built from source", refusal);
  else
    row("disk cache", NULL, "%s", cache_dir ? cache_dir : "off");
  row("cold builds (s)", NULL, "%.1f", cold_ms * 1e-3);
  if (o->all_variants) failures += probe_variants(ctx, o->shard, o->shards);

  /* Self-checks */
  if (json_mode) json_open("selfchecks", '[');
  else heading("  Self-checks");
  for (int i = 0; i < tabcl_selfcheck_count(); i++) {
    const char *name = tabcl_selfcheck_name(i);
    fprintf(stderr, "cl-probe: device %s: self-check %s\n", sel, name);
    double t0 = now();
    s = tabcl_selfcheck_run(ctx, i);
    failures += step_result(name, s, (now() - t0) * 1e3, NULL, 1);
  }
  if (json_mode) json_close(']');

  if (o->plan) probe_plans(ctx);

  /* Ceilings */
  if (json_mode) json_open("measured", '{');
  else heading("  Measured");
  fprintf(stderr, "cl-probe: device %s: measuring\n", sel);
  /* The profiling timer is checked against the wall clock before the
     figures below rest on it; a timer that fails the check is not used. */
  tabcl__timer_check tc;
  s = tabcl__check_timer(ctx, &tc);
  const int wall_clock = s || !tc.trusted;
  if (s) {
    char err[2048];
    snprintf(err, sizeof err, "%s: %s (timing by wall clock)", tabcl_status_name(s),
             tabcl_last_error());
    row("timer", err, NULL);
    failures++;
  } else if (json_mode) {
    json_open("timer", '{');
    json_key("source");
    json_string(wall_clock ? "wall clock" : "profiling");
    json_key("profiled_ms");
    printf("%.6f", tc.profiled_s * 1e3);
    json_key("wall_ms");
    printf("%.6f", tc.wall_s * 1e3);
    json_key("tolerance");
    printf("%.2f", TABCL__TIMER_TOLERANCE);
    json_close('}');
  } else {
    row("timer", NULL, "%s (profiling %.3f ms, wall clock %.3f ms over the same work; %s %.0f%%)",
        wall_clock ? "wall clock: the profiling timer disagrees" : "OpenCL profiling",
        tc.profiled_s * 1e3, tc.wall_s * 1e3, wall_clock ? "more than" : "within",
        TABCL__TIMER_TOLERANCE * 100);
  }
  double bw = 0, flops = 0;
  size_t bytes = o->quick ? ((size_t)8 << 20) : ((size_t)512 << 20);
  s = tabcl__measure_copy(ctx, bytes, o->quick ? 3 : 10, wall_clock, &bw);
  failures += failed_row("copy bandwidth (GB/s)", s);
  if (!s) row("copy bandwidth (GB/s)", NULL, "%.1f", bw * 1e-9);
  /* launches at least as long as the timer check's, on every device */
  s = tabcl__measure_fma(ctx, o->quick ? 128 : 4096, &tc, o->quick ? 3 : 10, wall_clock, &flops);
  failures += failed_row("fp32 FMA (GFLOP/s)", s);
  if (!s) row("fp32 FMA (GFLOP/s)", NULL, "%.1f", flops * 1e-9);
  double rt = 0, rt_min = 0;
  s = tabcl__measure_round_trip(ctx, o->quick ? 51 : 501, &rt, &rt_min);
  failures += failed_row("round trip (us)", s);
  if (!s)
    row("round trip (us)", NULL, "%.1f median, %.1f least (one launch, a blocking read of 128 B)",
        rt * 1e6, rt_min * 1e6);
  tabcl_stats st;
  tabcl_context_stats(ctx, &st);
  row("programs built / from cache", NULL, "%llu / %llu", (unsigned long long)st.programs_built,
      (unsigned long long)st.programs_from_cache);
  /* A fresh process to its first lookup, cold and warm: seconds of cold
     builds, so --quick leaves it out. */
  if (!o->quick) {
    fprintf(stderr, "cl-probe: device %s: cold start\n", sel);
    failures += probe_cold_start(sel, o->profile);
  }
  if (json_mode) json_close('}');
  tabcl_context_destroy(ctx);

  if (json_mode) {
    json_key("failures");
    printf("%d", failures);
    json_close('}');
  } else {
    printf("  %-32s %s\n", "result", failures ? "FAILED" : "ok");
  }
  return failures;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: cl-probe [--json] [--quick] [--plan] [--all-variants[=I/N]] [--device SEL]\n"
          "                [--device-profile NAME]\n"
          "  --device SEL  only the device SEL names (\"P:D\" or a name substring)\n"
          "  --device-profile NAME  plan as if the device had the limits of a GPU family\n"
          "                (TABCL_DEVICE_PROFILE; docs/profiles.md)\n"
          "  --all-variants  build every program variant the planners can choose, not only\n"
          "                each program's default (minutes on a CPU device)\n"
          "  --all-variants=I/N  only the I-th of N shares of them (0 <= I < N), so that\n"
          "                N processes build them all between them\n"
          "  --list-profiles  the device profiles' names, one a line\n"
          "  --plan        also the plans of representative calls of every family\n"
          "  --quick       small measurements, for a fast check (no cold-start figures)\n"
          "  --json        a machine-readable report on stdout\n");
}

int main(int argc, char **argv) {
  /* cl-probe-start.c's helper process: nothing else runs */
  const int plans = argc >= 3 && !strcmp(argv[1], "--first-lookup-device-plans");
  if (argc >= 3 && (plans || !strcmp(argv[1], "--first-lookup")))
    return first_lookup_main(argv[2],
                             argc >= 5 && !strcmp(argv[3], "--device-profile") ? argv[4] : NULL,
                             plans);
  probe_opts o = {0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) o.json = 1;
    else if (!strcmp(argv[i], "--quick")) o.quick = 1;
    else if (!strcmp(argv[i], "--plan")) o.plan = 1;
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) o.device = argv[++i];
    else if (!strcmp(argv[i], "--device-profile") && i + 1 < argc) o.profile = argv[++i];
    else if (!strcmp(argv[i], "--all-variants")) o.all_variants = 1;
    else if (!strncmp(argv[i], "--all-variants=", 15)) {
      /* I/N with 0 <= I < N <= 64, nothing after it */
      int a = -1, b = 0, used = 0;
      if (sscanf(argv[i] + 15, "%d/%d%n", &a, &b, &used) != 2 || argv[i][15 + used] ||
          b < 1 || b > 64 || a < 0 || a >= b) {
        fprintf(stderr, "cl-probe: --all-variants=I/N wants 0 <= I < N <= 64, not \"%s\"\n",
                argv[i] + 15);
        return 2;
      }
      o.all_variants = 1, o.shard = a, o.shards = b;
    }
    else if (!strcmp(argv[i], "--list-profiles")) {
      for (int k = 0; k < tabcl__device_profile_count(); k++) puts(tabcl__device_profile_name(k));
      return 0;
    }
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
    else { usage(stderr); return 2; }
  }
  json_mode = o.json;
  int failures = 0;
  if (json_mode) {
    json_open(NULL, '{');
    json_key("tabcl");
    json_string(tabcl_version_string());
    json_open("devices", '[');
  } else {
    printf("cl-probe for tabcl %s\n", tabcl_version_string());
  }

  /* With --device, resolve it the way the library does, then probe only it. */
  cl_device_id only_d = NULL;
  if (o.device) {
    tabcl_status s = tabcl__tools_device_select(o.device, &only_d);
    if (s) {
      fprintf(stderr, "cl-probe: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
      if (json_mode) {
        json_close(']');
        json_key("error");
        json_string(tabcl_last_error());
        json_close('}');
        printf("\n");
      }
      return 1;
    }
  }

  /* The library's walk of the platforms, each query's error with it. */
  static tabcl__tools_platform plats[TABCL__TOOLS_MAX_PLATFORMS];
  int np = 0;
  cl_int e = tabcl__tools_platforms(plats, TABCL__TOOLS_MAX_PLATFORMS, &np);
  if (e != CL_SUCCESS || np == 0) {
    fprintf(stderr, "cl-probe: no OpenCL platform (clGetPlatformIDs: %s)\n", tabcl__cl_error_name(e));
    failures++;
    np = 0;
  }
  int devices = 0, nempty = 0;
  struct {
    int index;
    cl_int err;
    char name[256];
  } empty[TABCL__TOOLS_MAX_PLATFORMS];
  for (int p = 0; p < np && p < TABCL__TOOLS_MAX_PLATFORMS; p++) {
    const tabcl__tools_platform *pl = &plats[p];
    char pname[256];
    if (pl->name_error != CL_SUCCESS)
      snprintf(pname, sizeof pname, "(name unavailable: %s)", tabcl__cl_error_name(pl->name_error));
    else
      snprintf(pname, sizeof pname, "%.255s", pl->name);
    e = pl->devices_error;
    if (e != CL_SUCCESS || pl->ndevices == 0) {
      /* A platform with no device (Mesa's Clover, or rusticl without
         RUSTICL_ENABLE) is listed, since it still takes a platform number
         of the "P:D" selectors; it is not a failure. */
      if (e != CL_SUCCESS && e != CL_DEVICE_NOT_FOUND) {
        fprintf(stderr, "cl-probe: platform %d (%s): clGetDeviceIDs: %s\n", p, pname,
                tabcl__cl_error_name(e));
        failures++;
      }
      if (o.device) continue;
      if (json_mode) {   /* after the devices array, which holds devices only */
        empty[nempty].index = p;
        empty[nempty].err = e;
        snprintf(empty[nempty++].name, sizeof empty[0].name, "%.255s", pname);
      } else {
        heading("Platform %d: %s", p, pname);
        if (e == CL_SUCCESS || e == CL_DEVICE_NOT_FOUND) printf("  no devices\n");
        else printf("  no devices (clGetDeviceIDs: %s)\n", tabcl__cl_error_name(e));
      }
      continue;
    }
    if (!json_mode && !o.device) heading("Platform %d: %s", p, pname);
    for (int d = 0; d < pl->ndevices; d++) {
      if (o.device && pl->devices[d] != only_d) continue;
      devices++;
      failures += probe_device(&o, p, d, pl->devices[d]);
    }
  }
  if (devices == 0) failures++;
  if (json_mode) {
    json_close(']');
    json_open("platforms_without_devices", '[');
    for (int i = 0; i < nempty; i++) {
      json_open(NULL, '{');
      json_key("platform");
      printf("%d", empty[i].index);
      json_key("name");
      json_string(empty[i].name);
      if (empty[i].err != CL_SUCCESS && empty[i].err != CL_DEVICE_NOT_FOUND) {
        json_key("error");
        json_string(tabcl__cl_error_name(empty[i].err));
      }
      json_close('}');
    }
    json_close(']');
    json_key("failures");
    printf("%d", failures);
    json_close('}');
    printf("\n");
  } else {
    printf("\n%s: %d device(s), %d failure(s)\n", failures ? "FAILED" : "PASSED", devices, failures);
  }
  fprintf(stderr, "cl-probe: done, %d failure(s)\n", failures);
  return failures ? 1 : 0;
}
