/* The foundation: status names, versions, device selection, the program
 * caches, build failures and failure injection during context creation. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "tt.h"
#include "tabcl/tabcl_tools.h"

Test(runtime, status_names_and_version) {
  cr_expect_str_eq(tabcl_status_name(TABCL_OK), "TABCL_OK");
  cr_expect_str_eq(tabcl_status_name(TABCL_CORRUPT_DATA), "TABCL_CORRUPT_DATA");
  cr_expect_str_eq(tabcl_status_name(TABCL_OPENCL_ERROR), "TABCL_OPENCL_ERROR");
  cr_expect_str_eq(tabcl_status_name((tabcl_status)99), "TABCL_UNKNOWN_STATUS");
  cr_expect_eq(tabcl_version_number(), TABCL_VERSION_NUMBER);
  cr_expect_str_eq(tabcl_version_string(), TABCL_VERSION_STRING);
}

Test(runtime, null_arguments) {
  cr_expect_eq(tabcl_context_create(NULL, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect_neq(strlen(tabcl_last_error()), 0);
  tabcl_context_destroy(NULL);
  tabcl_stats st = {1, 2, 3};
  tabcl_context_stats(NULL, &st);
  cr_expect_eq(st.programs_built + st.programs_from_cache + st.kernel_launches, 0);
  tabcl_options o = {0};
  o.max_batch_per_launch = -1;
  tabcl_context *ctx = (tabcl_context *)&o;
  cr_expect_eq(tabcl_context_create(&o, &ctx), TABCL_INVALID_ARGUMENT);
  cr_expect_null(ctx, "out is cleared on failure");
}

Test(runtime, default_device_runs_probe) {
  tabcl_context *ctx = tt_context();
  cr_expect_neq(strlen(tabcl_context_device_name(ctx)), 0);
  for (int i = 0; i < tabcl_selfcheck_count(); i++) {
    tabcl_status s = tabcl_selfcheck_run(ctx, i);
    cr_expect(tt_selfcheck_passed(ctx, i, s), "self-check %s: %s", tabcl_selfcheck_name(i),
              tabcl_last_error());
  }
  tabcl_stats st;
  tabcl_context_stats(ctx, &st);
  cr_expect_gt(st.kernel_launches, 0);
  tabcl_context_destroy(ctx);
}

Test(runtime, selector_forms) {
  tabcl_context *first = tt_context();
  char name[256], platform[256];
  snprintf(name, sizeof name, "%s", tabcl_context_device_name(first));
  snprintf(platform, sizeof platform, "%s", tabcl_context_platform_name(first));
  tabcl_context_destroy(first);

  tabcl_options o = {0};
  o.device = "0:0";
  tabcl_context *c = tt_context_with(&o);
  tabcl_context_destroy(c);

  /* a case-changed substring of the device name */
  char sub[64];
  size_t n = strlen(name) < 6 ? strlen(name) : 6;
  for (size_t i = 0; i < n; i++) sub[i] = (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 32 :
                                                 (name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
  sub[n] = '\0';
  o.device = sub;
  c = tt_context_with(&o);
  cr_expect_str_eq(tabcl_context_device_name(c), name);
  tabcl_context_destroy(c);

  o.device = platform;
  c = tt_context_with(&o);
  tabcl_context_destroy(c);

  /* the environment variable, when the option is NULL */
  setenv("TABCL_DEVICE", "0:0", 1);
  c = tt_context();
  tabcl_context_destroy(c);
  setenv("TABCL_DEVICE", "no-such-device-anywhere", 1);
  tabcl_context *bad = NULL;
  cr_expect_eq(tabcl_context_create(NULL, &bad), TABCL_NO_DEVICE);
  unsetenv("TABCL_DEVICE");
}

/* tabcl_devices lists every device in "P:D" order, and each selector it
   gives picks that very device. */
Test(runtime, device_list_selectors_pick_their_device) {
  int n = -1;
  cr_assert_eq(tabcl_devices(NULL, 0, &n), TABCL_OK, "%s", tabcl_last_error());
  cr_assert_gt(n, 0);
  tabcl_device_entry *e = calloc((size_t)n + 1, sizeof *e);
  cr_assert_not_null(e);
  e[n].type = -7; /* a sentinel past cap that must stay */
  int m = 0;
  cr_assert_eq(tabcl_devices(e, n, &m), TABCL_OK);
  cr_expect_eq(m, n);
  cr_expect_eq(e[n].type, -7, "nothing is written past cap");
  for (int i = 0; i < n; i++) {
    cr_expect(e[i].type >= TABCL_DEVICE_TYPE_OTHER && e[i].type <= TABCL_DEVICE_TYPE_ACCELERATOR);
    cr_expect_neq(strlen(e[i].name), 0);
    tabcl_options o = {0};
    o.device = e[i].selector;
    o.cache_dir = "";
    tabcl_context *ctx = NULL;
    cr_assert_eq(tabcl_context_create(&o, &ctx), TABCL_OK, "%s: %s", e[i].selector,
                 tabcl_last_error());
    cr_expect_str_eq(tabcl_context_device_name(ctx), e[i].name);
    cr_expect_str_eq(tabcl_context_platform_name(ctx), e[i].platform);
    tabcl_context_destroy(ctx);
  }
  cr_expect_eq(tabcl_devices(NULL, 0, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_devices(NULL, 1, &m), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_devices(e, -1, &m), TABCL_INVALID_ARGUMENT);
  free(e);
}

/* The README's example "pocl" picks PoCL's device: PoCL 3.1's platform is
   "Portable Computing Language" and its device "pthread-<cpu>", so the
   selector is found in the platform's vendor, "The pocl project". */
Test(runtime, selector_pocl_picks_pocl) {
  int n = 0;
  tabcl_device_entry e[16];
  cr_assert_eq(tabcl_devices(e, 16, &n), TABCL_OK, "%s", tabcl_last_error());
  int want = -1;
  for (int i = 0; i < n && i < 16 && want < 0; i++)
    if (!strcmp(e[i].platform, "Portable Computing Language")) want = i;
  if (want < 0) cr_skip_test("no PoCL platform here");
  static const char *const sels[] = {"pocl", "PoCL", "pocl project"};
  for (int k = 0; k < 3; k++) {
    tabcl_options o = {0};
    o.device = sels[k];
    o.cache_dir = "";
    tabcl_context *ctx = NULL;
    cr_assert_eq(tabcl_context_create(&o, &ctx), TABCL_OK, "%s: %s", sels[k], tabcl_last_error());
    cr_expect_str_eq(tabcl_context_device_name(ctx), e[want].name, "%s", sels[k]);
    cr_expect_str_eq(tabcl_context_platform_name(ctx), e[want].platform, "%s", sels[k]);
    tabcl_context_destroy(ctx);
  }
}

/* With no selector the first GPU is picked, else the first device, in the
   loader's order; platforms without devices (Mesa's Clover, rusticl without
   RUSTICL_ENABLE) are not in the list and change nothing. */
Test(runtime, default_is_first_gpu_else_first_device) {
  unsetenv("TABCL_DEVICE");
  int n = 0;
  tabcl_device_entry e[16];
  cr_assert_eq(tabcl_devices(e, 16, &n), TABCL_OK, "%s", tabcl_last_error());
  cr_assert_gt(n, 0);
  int want = 0;
  for (int i = n < 16 ? n - 1 : 15; i >= 0; i--)
    if (e[i].type == TABCL_DEVICE_TYPE_GPU) want = i;
  tabcl_options o = {0};
  o.cache_dir = "";
  tabcl_context *ctx = NULL;
  cr_assert_eq(tabcl_context_create(&o, &ctx), TABCL_OK, "%s", tabcl_last_error());
  cr_expect_str_eq(tabcl_context_device_name(ctx), e[want].name);
  cr_expect_str_eq(tabcl_context_platform_name(ctx), e[want].platform);
  tabcl_context_destroy(ctx);
}

Test(runtime, no_match_lists_devices) {
  tabcl_context *ctx = tt_context();
  char name[256];
  snprintf(name, sizeof name, "%s", tabcl_context_device_name(ctx));
  tabcl_context_destroy(ctx);
  tabcl_options o = {0};
  const char *bad[] = {"zz-no-such-device-zz", "99:0", "0:99"};
  for (int i = 0; i < 3; i++) {
    o.device = bad[i];
    tabcl_context *c = NULL;
    cr_expect_eq(tabcl_context_create(&o, &c), TABCL_NO_DEVICE, "selector %s", bad[i]);
    cr_expect_null(c);
    const char *msg = tabcl_last_error();
    cr_expect(strstr(msg, bad[i]) != NULL, "message names the selector: %s", msg);
    cr_expect(strstr(msg, name) != NULL, "message lists the devices: %s", msg);
    cr_expect(strstr(msg, "0:0") != NULL, "message gives indices: %s", msg);
  }
}

static void prepare_all(tabcl_context *ctx, int *built, int *cached) {
  *built = *cached = 0;
  for (int i = 0; i < tabcl_program_count(); i++) {
    int from_cache = -1;
    tt_assert_ok(tabcl_program_prepare(ctx, i, &from_cache));
    if (from_cache == 1) (*cached)++;
    else if (from_cache == 0) (*built)++;
  }
}

Test(runtime, disk_cache_second_context_builds_nothing) {
  char *dir = tt_temp_dir("cache");
  tabcl_options o = {0};
  o.cache_dir = dir;
  tabcl_context *a = tt_context_with(&o);
  int built, cached;
  prepare_all(a, &built, &cached);
  cr_expect_eq(built, tabcl_program_count());
  cr_expect_eq(cached, 0);
  /* a second request in the same context hits the memory cache */
  int again = 7;
  tt_assert_ok(tabcl_program_prepare(a, 0, &again));
  cr_expect_eq(again, -1);
  tabcl_stats sa;
  tabcl_context_stats(a, &sa);
  cr_expect_eq(sa.programs_built, (uint64_t)tabcl_program_count());
  tabcl_context_destroy(a);

  tabcl_context *b = tt_context_with(&o);
  prepare_all(b, &built, &cached);
  tabcl_stats sb;
  tabcl_context_stats(b, &sb);
  cr_expect_gt(sb.programs_from_cache, 0);
  cr_expect_eq(sb.programs_built, 0);
  cr_expect_eq(cached, tabcl_program_count());
  cr_expect_eq(tabcl_selfcheck_run(b, 0), TABCL_OK, "%s", tabcl_last_error());
  tabcl_context_destroy(b);
  tt_remove_tree(dir);
  free(dir);
}

static int cache_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".clbin") != NULL;
  closedir(d);
  return n;
}

/* build.store says when a built program's binary reaches the disk: 1 right
   after the build, 2 at the context's destroy (a CPU driver compiles every
   kernel of a program to give its binary, which a cold start should not
   wait for), 0 never. Whenever it is stored, the next context loads it. */
Test(runtime, disk_cache_store_follows_build_store) {
  for (int when = 0; when <= 2; when++) {
    char *dir = tt_temp_dir("store");
    char tune[32];
    snprintf(tune, sizeof tune, "build.store=%d", when);
    tabcl_options o = {0};
    o.cache_dir = dir;
    o.tune = tune;
    tabcl_context *a = tt_context_with(&o);
    int built, cached;
    prepare_all(a, &built, &cached);
    cr_expect_eq(built, tabcl_program_count(), "%s", tune);
    const int during = cache_entries(dir);
    cr_expect_eq(during, when == 1 ? tabcl_program_count() : 0, "%s: %d entries before destroy",
                 tune, during);
    tabcl_context_destroy(a);
    const int after = cache_entries(dir);
    cr_expect_eq(after, when ? tabcl_program_count() : 0, "%s: %d entries after destroy", tune,
                 after);
    tabcl_context *b = tt_context_with(&o);
    prepare_all(b, &built, &cached);
    cr_expect_eq(cached, when ? tabcl_program_count() : 0, "%s: loaded %d", tune, cached);
    tabcl_context_destroy(b);
    tt_remove_tree(dir);
    free(dir);
  }
}

/* Every way a cache file can be damaged: each must be rebuilt, not trusted. */
Test(runtime, corrupt_cache_file_is_rebuilt) {
  char *dir = tt_temp_dir("corrupt");
  tabcl_options o = {0};
  o.cache_dir = dir;
  tabcl_context *a = tt_context_with(&o);
  int built, cached;
  prepare_all(a, &built, &cached);
  tabcl_context_destroy(a);

  for (int mode = 0; mode < 4; mode++) {
    DIR *d = opendir(dir);
    cr_assert(d);
    struct dirent *e;
    int touched = 0;
    while ((e = readdir(d))) {
      if (!strstr(e->d_name, ".clbin")) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      struct stat st;
      cr_assert(stat(path, &st) == 0);
      FILE *f = fopen(path, "r+b");
      cr_assert(f);
      if (mode == 0) { /* flip a byte in the middle of the binary */
        fseek(f, st.st_size / 2 + 40, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, -1, SEEK_CUR);
        fputc(ch ^ 0x5A, f);
      } else if (mode == 1) { /* truncate */
        cr_assert(ftruncate(fileno(f), st.st_size / 3) == 0);
      } else if (mode == 2) { /* extend */
        fseek(f, 0, SEEK_END);
        fputs("trailing garbage", f);
      } else { /* empty file */
        cr_assert(ftruncate(fileno(f), 0) == 0);
      }
      fclose(f);
      touched++;
    }
    closedir(d);
    cr_assert_gt(touched, 0, "the cache holds entries");
    tabcl_context *b = tt_context_with(&o);
    prepare_all(b, &built, &cached);
    cr_expect_eq(cached, 0, "mode %d: a damaged entry is never loaded", mode);
    cr_expect_eq(built, tabcl_program_count(), "mode %d: every damaged entry is rebuilt", mode);
    cr_expect_eq(tabcl_selfcheck_run(b, 0), TABCL_OK, "%s", tabcl_last_error());
    tabcl_context_destroy(b);
    /* the rebuilt entries are whole again */
    tabcl_context *c = tt_context_with(&o);
    prepare_all(c, &built, &cached);
    cr_expect_eq(cached, tabcl_program_count(), "mode %d: rebuilt entries reload", mode);
    tabcl_context_destroy(c);
  }
  tt_remove_tree(dir);
  free(dir);
}

Test(runtime, cache_off_with_empty_string) {
  char *dir = tt_temp_dir("off");
  setenv("TABCL_CACHE_DIR", dir, 1);
  tabcl_options o = {0};
  o.cache_dir = "";
  tabcl_context *a = tt_context_with(&o);
  int built, cached;
  prepare_all(a, &built, &cached);
  tabcl_context_destroy(a);
  DIR *d = opendir(dir);
  int entries = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') entries++;
  closedir(d);
  cr_expect_eq(entries, 0, "\"\" turns the disk cache off");
  tt_remove_tree(dir);
  free(dir);
}

Test(runtime, broken_kernel_gives_build_failed_with_log) {
  char *dir = tt_temp_dir("kernels");
  char path[4096];
  snprintf(path, sizeof path, "%s/probe.cl", dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("__kernel void probe_iota(__global ulong *out) { out[0] = this_is_not_declared; }\n", f);
  fclose(f);
  tabcl_options o = {0};
  o.kernel_dir = dir;
  o.cache_dir = "";
  tabcl_context *ctx = tt_context_with(&o);
  tt_live base = tt_live_now();
  int probe = -1;
  for (int i = 0; i < tabcl_program_count(); i++)
    if (!strcmp(tabcl_program_name(i), "probe")) probe = i;
  cr_assert_geq(probe, 0);
  cr_expect_eq(tabcl_program_prepare(ctx, probe, NULL), TABCL_BUILD_FAILED);
  const char *log = tabcl_last_error();
  cr_expect(strstr(log, "this_is_not_declared") != NULL, "the log names the error: %s", log);
  cr_expect_eq(tabcl_selfcheck_run(ctx, 0), TABCL_BUILD_FAILED);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
  tt_remove_tree(dir);
  free(dir);
}

Test(runtime, kernel_dir_from_environment) {
  char *dir = tt_temp_dir("envkernels");
  char path[4096];
  snprintf(path, sizeof path, "%s/probe.cl", dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("#error broken on purpose\n", f);
  fclose(f);
  setenv("TABCL_KERNEL_DIR", dir, 1);
  tabcl_options o = {0};
  o.cache_dir = "";
  tabcl_context *ctx = tt_context_with(&o);
  cr_expect_eq(tabcl_selfcheck_run(ctx, 0), TABCL_BUILD_FAILED);
  cr_expect(strstr(tabcl_last_error(), "broken on purpose") != NULL, "%s", tabcl_last_error());
  tabcl_context_destroy(ctx);
  unsetenv("TABCL_KERNEL_DIR");
  tt_remove_tree(dir);
  free(dir);
}

Test(runtime, zero_size_buffer_is_allowed) {
  tabcl_context *ctx = tt_context();
  tt_live base = tt_live_now();
  cl_mem m = NULL;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, 0, NULL, &m, "empty"));
  cr_expect_not_null(m);
  tt_assert_ok(tabcl__write(ctx, m, 0, 0, NULL));
  tabcl__buffer_release(m);
  cl_mem huge = NULL;
  cr_expect_eq(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE,
                                    (size_t)ctx->info.max_mem_alloc_size + 1, NULL, &huge, "huge"),
               TABCL_OUT_OF_MEMORY);
  cr_expect_null(huge);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

Test(runtime, slicing_planner_respects_limits) {
  tabcl_options o = {0};
  o.max_batch_per_launch = 7;
  tabcl_context *ctx = tt_context_with(&o);
  cr_expect_eq(tabcl__slice_items_ctx(ctx, 16, 64), 7);
  cr_expect_eq(tabcl__slice_items_ctx(ctx, ctx->info.max_mem_alloc_size, 1), 1);
  tabcl_context_destroy(ctx);
  ctx = tt_context();
  int64_t per = tabcl__slice_items_ctx(ctx, 1024, 1);
  cr_expect_leq((uint64_t)per * 1024, ctx->info.max_mem_alloc_size);
  cr_expect_gt((uint64_t)(per + 1) * 1024, ctx->info.max_mem_alloc_size);
  int64_t by_range = tabcl__slice_items_ctx(ctx, 0, 1u << 20);
  cr_expect_leq((uint64_t)by_range << 20, (uint64_t)1 << 31);
  cr_expect_geq(by_range, 1);
  tabcl_context_destroy(ctx);
}

/* The round trip cl-probe and tabcl-bench report: a median no less than
   the least, both above zero; with failures injected at each of its
   allocations and OpenCL calls in turn, an error and no leak. */
Test(runtime, round_trip_measure) {
  tabcl_context *ctx = tt_context();
  double med = -1, least = -1;
  tt_assert_ok(tabcl__measure_round_trip(ctx, 1, &med, &least));   /* builds the probe program */
  tt_live base = tt_live_now();
  tt_assert_ok(tabcl__measure_round_trip(ctx, 7, &med, &least));
  cr_expect_gt(least, 0.0);
  cr_expect_geq(med, least);
  tt_expect_no_leak(base);
#ifdef TABCL_FAULT_INJECTION
  for (int which = 0; which < 2; which++)
    for (long n = 1; n < 1000; n++) {
      tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
      double m2 = -1, l2 = -1;
      tabcl_status s = tabcl__measure_round_trip(ctx, 3, &m2, &l2);
      int fired = tabcl__fault_fired();
      tabcl__fault_reset();
      tt_expect_no_leak(base);
      if (!fired) {
        cr_expect_eq(s, TABCL_OK, "%s", tabcl_last_error());
        break;
      }
      cr_expect_neq(s, TABCL_OK, "%s failure %ld was swallowed", which ? "OpenCL" : "alloc", n);
      cr_expect(m2 == -1 && l2 == -1, "a failed measurement wrote its outputs");
    }
#endif
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
/* Fail the 1st, 2nd, ... host allocation, then OpenCL call, of context
   creation (with a program build and a kernel run) until it succeeds;
   each failure must return an error and leak nothing. */
static void sweep_context(int which) {
  tabcl_options o = {0};
  o.cache_dir = "";
  for (long n = 1; n < 10000; n++) {
    tt_live base = tt_live_now();
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_context *ctx = NULL;
    tabcl_status s = tabcl_context_create(&o, &ctx);
    if (s == TABCL_OK) s = tabcl_selfcheck_run(ctx, 0);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (fired) {
      cr_expect_neq(s, TABCL_OK, "%s failure %ld was swallowed", which ? "OpenCL" : "alloc", n);
      if (s == TABCL_OK) {
        tabcl_context_destroy(ctx);
        return;
      }
      cr_expect_neq(strlen(tabcl_last_error()), 0);
    }
    tabcl_context_destroy(ctx);
    tt_expect_no_leak(base);
    if (!fired) {
      cr_expect_eq(s, TABCL_OK, "%s", tabcl_last_error());
      cr_log_info("%s sweep: %ld points", which ? "OpenCL" : "alloc", n - 1);
      return;
    }
  }
  cr_assert_fail("the sweep did not end");
}
Test(runtime, injected_alloc_failures_in_context_create) { sweep_context(0); }
Test(runtime, injected_cl_failures_in_context_create) { sweep_context(1); }
#endif

/* Run under oclgrind in CI: the probe kernels on a small shape. */
Test(oclgrind_runtime, probe_kernels) {
  tabcl_context *ctx = tt_context();
  cr_expect_eq(tabcl_selfcheck_run(ctx, 0), TABCL_OK, "%s", tabcl_last_error());
  tabcl_context_destroy(ctx);
}

/* The loop probe against a kernel of its own shape: two nested loops whose
   chain of values the host repeats. Where the probe found a limit, a run of
   1,000 iterations past it must come back short; where it found none, a
   run of 2^20 must come back whole. */
Test(runtime, loop_probe_agrees_with_nested_loops) {
  tabcl_context *ctx = tt_context();
  uint64_t limit = 0, again = 1;
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  tt_assert_ok(tabcl__loop_limit(ctx, &again));
  cr_expect_eq(limit, again, "the limit is kept");
  cr_log_info("%s: loop limit %llu", ctx->info.name, (unsigned long long)limit);
  static const char *src =
      "__kernel void nested(__global uint *out, uint n1, uint n2) {\n"
      "  uint x = 7u;\n"
      "  for (uint i = 0; i < n1; i++)\n"
      "    for (uint j = 0; j < n2; j++) x = x * 22695477u + 1u;\n"
      "  out[0] = x;\n"
      "}\n";
  cl_int err;
  cl_program p = clCreateProgramWithSource(ctx->cl, 1, &src, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cr_assert_eq(clBuildProgram(p, 1, &ctx->device, "", NULL, NULL), CL_SUCCESS);
  cl_kernel k = clCreateKernel(p, "nested", &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_mem m = clCreateBuffer(ctx->cl, CL_MEM_WRITE_ONLY, 4, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  const uint64_t total = limit ? limit + 1000 : (uint64_t)1 << 20;
  const cl_uint n2 = 1000, n1 = (cl_uint)((total + n2 - 1) / n2);
  clSetKernelArg(k, 0, sizeof m, &m);
  clSetKernelArg(k, 1, sizeof n1, &n1);
  clSetKernelArg(k, 2, sizeof n2, &n2);
  const size_t one = 1;
  cl_event ev = NULL;
  cr_assert_eq(clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &one, &one, 0, NULL, NULL),
               CL_SUCCESS);
  cl_uint got = 0;
  cr_assert_eq(clEnqueueReadBuffer(ctx->queue, m, CL_FALSE, 0, 4, &got, 0, NULL, &ev),
               CL_SUCCESS);
  cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
  clReleaseEvent(ev);
  uint32_t x = 7u;
  for (uint64_t i = 0; i < (uint64_t)n1 * n2; i++) x = x * 22695477u + 1u;
  if (limit) cr_expect_neq(got, x, "%llu iterations ran whole past a limit of %llu",
                           (unsigned long long)n1 * n2, (unsigned long long)limit);
  else cr_expect_eq(got, x, "%llu iterations came back short, but the probe found no limit",
                    (unsigned long long)n1 * n2);
  clReleaseMemObject(m);
  clReleaseKernel(k);
  clReleaseProgram(p);
  tabcl_context_destroy(ctx);
}

/* Kernel objects given back are handed out again (runtime/program.c), one
   holder at a time: a second create while the first is held gets another
   object, a create after the give-back gets the first again, set up anew
   by its holder (a launch with its buffer arguments set afresh computes
   right after the buffer it held before was released). */
Test(runtime, kernels_given_back_are_reused_one_holder_at_a_time) {
  tabcl_context *ctx = tt_context();
  cl_kernel a = NULL, b = NULL, c = NULL;
  tt_assert_ok(tabcl__kernel_create(ctx, "probe", NULL, "probe_loops", &a));
  tt_assert_ok(tabcl__kernel_create(ctx, "probe", NULL, "probe_loops", &b));
  cr_expect_neq(a, b, "two holders share one kernel object");
  tabcl__kernel_release(a);
  tt_assert_ok(tabcl__kernel_create(ctx, "probe", NULL, "probe_loops", &c));
  cr_expect_eq(c, a, "the kernel given back was not handed out again");
  tabcl__kernel_release(b);
  tabcl__kernel_release(c);
  /* a buffer argument across a give-back */
  for (int round = 0; round < 2; round++) {
    cl_kernel k = NULL;
    tt_assert_ok(tabcl__kernel_create(ctx, "probe", NULL, "probe_iota", &k));
    cl_mem m = NULL;
    tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, 64 * sizeof(cl_ulong), NULL, &m,
                                      "iota"));
    const cl_ulong base = 1000 * (cl_ulong)(round + 1), n = 64;
    tt_assert_ok(TABCL_SET_ARGS(k, "probe_iota", TABCL_ARG(m), TABCL_ARG(base), TABCL_ARG(n)));
    size_t global = 64;
    tt_assert_ok(tabcl__launch(ctx, k, 1, &global, NULL, 0, NULL, NULL, "probe_iota"));
    cl_ulong got[64];
    tt_assert_ok(tabcl__read(ctx, m, 0, sizeof got, got));
    for (int i = 0; i < 64; i++)
      cr_expect_eq(got[i], base + (cl_ulong)i * (cl_ulong)i, "round %d item %d: %llu", round, i,
                   (unsigned long long)got[i]);
    tabcl__kernel_release(k);
    tabcl__buffer_release(m);
  }
  tabcl_context_destroy(ctx);
}

/* Every public call's plan, as cl-probe --plan prints it, opens with its
   route; a tuning that moves a lookup, a fit or an align to another route
   changes that word. */
Test(runtime, printed_plans_name_their_route) {
  tabcl_context *ctx = tt_context();
  char text[4096];
  tt_assert_ok(tabcl__tools_lookup_plan(ctx, 100000, 800000, text, sizeof text));
  cr_expect(strncmp(text, "route: ", 7) == 0, "%s", text);
  tt_assert_ok(tabcl__tools_fit_plan(ctx, 1000, 1000, 8000, 1000, text, sizeof text));
  cr_expect(strncmp(text, "route: ", 7) == 0, "%s", text);
  tt_assert_ok(tabcl__tools_align_plan(ctx, 2, 1000000, 20000, text, sizeof text));
  cr_expect(strncmp(text, "route: ", 7) == 0, "%s", text);
  const tabcl_sdpa_desc d = {.batch = 2, .q_len = 54, .kv_len = 54, .q_heads = 8, .kv_heads = 8,
                             .head_dim = 64, .dtype = TABCL_F32};
  tt_assert_ok(tabcl__tools_sdpa_plan(ctx, &d, text, sizeof text));
  cr_expect(strncmp(text, "route: device; ", 15) == 0, "%s", text);
  /* forced: the calling thread, the worker pool, the device */
  static const struct { const char *tune, *route; } ways[] = {
      {"lookup.host_rows=1099511627776;lookup.host_index=1099511627776", "route: calling thread"},
      {"lookup.host_rows=0;lookup.host_threads=3;lookup.host_index=1099511627776",
       "route: worker pool (3 threads)"},
      {"lookup.host_rows=0;lookup.host_threads=0", "route: device; "},
  };
  for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
    tt_tune(ctx, "%s", ways[i].tune);
    tt_assert_ok(tabcl__tools_lookup_plan(ctx, 100000, 800000, text, sizeof text));
    cr_expect(strncmp(text, ways[i].route, strlen(ways[i].route)) == 0, "%s: %s", ways[i].tune,
              text);
  }
  tt_tune(ctx, "fit.host_labels=0");
  tt_assert_ok(tabcl__tools_fit_plan(ctx, 1000, 1000, 8000, 1000, text, sizeof text));
  cr_expect(strncmp(text, "route: device; ", 15) == 0, "%s", text);
  tabcl_context_destroy(ctx);
}
