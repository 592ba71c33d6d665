/* No kernel build prints a warning: whatever a driver's compiler says
 * reaches a user's terminal on some drivers (PoCL prints "43 warnings
 * generated." on stderr), so every program the library builds is compiled
 * from source here, the disk cache off, and its build log must hold no
 * "warning". The programs: each plain, each with each dtype option its
 * planners pass, and every (program, options) pair the planners can choose
 * on this device (the list cl-probe --all-variants builds). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "probe/variants.h"
#include "tt.h"

/* NVIDIA's driver (seen on 580.159.04, H100 and H200; reported since 550)
   writes "Function K is a kernel, so overriding noinline attribute" into
   the log of every kernel it compiles, a one-line kernel of no calls
   included (bench/RESULTS.md, "NVIDIA's note on every kernel"): it is about
   the driver's own attributes, not the source, so that one line is not a
   warning here. Any other line naming a warning is. */
static const char nvidia_kernel_note[] = "is a kernel, so overriding noinline attribute";

static int line_has_warning(const char *p, const char *end) {
  static const char w[] = "warning";
  for (; p < end; p++) {
    size_t i = 0;
    while (w[i] && p + i < end && tolower((unsigned char)p[i]) == w[i]) i++;
    if (!w[i]) return 1;
  }
  return 0;
}

static int has_warning(const char *log) {
  for (const char *p = log; *p;) {
    const char *end = strchr(p, '\n');
    if (!end) end = p + strlen(p);
    char line[512];
    const size_t n = (size_t)(end - p) < sizeof line - 1 ? (size_t)(end - p) : sizeof line - 1;
    memcpy(line, p, n);
    line[n] = '\0';
    if (line_has_warning(p, end) && !strstr(line, nvidia_kernel_note)) return 1;
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* The rule above, on logs as the drivers write them. */
Test(kernel_warnings, what_counts_as_a_warning) {
  cr_expect(!has_warning(""));
  cr_expect(!has_warning("(): Warning: Function k is a kernel, so overriding noinline attribute. "
                         "The function may be inlined when called.\n\n"));
  cr_expect(has_warning("<source>:3:5: warning: unused variable 'x'\n1 warning generated.\n"));
  cr_expect(has_warning("(): Warning: Function k is a kernel, so overriding noinline attribute.\n"
                        "<source>:9:1: WARNING: something else\n"));
  cr_expect(has_warning("43 warnings generated."));
}

/* Builds (program, options) and checks its log; returns 1 when it built. */
static int check_build(tabcl_context *ctx, const char *program, const char *options) {
  cl_program p = NULL;
  int from_cache = 0;
  tabcl_status s = tabcl__program_get(ctx, program, options && *options ? options : NULL, &p,
                                      &from_cache);
  cr_expect_eq(s, TABCL_OK, "%s with \"%s\": %s", program, options ? options : "",
               tabcl_last_error());
  if (s) return 0;
  cr_expect_neq(from_cache, 1, "%s: loaded from a disk cache that is off", program);
  size_t n = 0;
  cr_assert_eq(clGetProgramBuildInfo(p, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n),
               CL_SUCCESS);
  char *log = malloc(n + 1);
  cr_assert_eq(clGetProgramBuildInfo(p, ctx->device, CL_PROGRAM_BUILD_LOG, n, log, NULL),
               CL_SUCCESS);
  log[n] = '\0';
  cr_expect(!has_warning(log), "building %s with \"%s\" on %s warned:\n%.4000s", program,
            options ? options : "", ctx->info.name, log);
  free(log);
  return 1;
}

static tabcl_context *uncached_context(void) {
  tabcl_options o = {0};
  o.cache_dir = "";
  return tt_context_with(&o);
}

Test(kernel_warnings, each_program_plain_and_with_each_dtype) {
  tabcl_context *ctx = uncached_context();
  int built = 0;
  for (int i = 0; i < tabcl_program_count(); i++) {
    const char *name = tabcl_program_name(i);
    built += check_build(ctx, name, NULL);
    const char *macro = strcmp(name, "sdpa") == 0 || strcmp(name, "sdpa_cpu") == 0 ? "SDPA_DTYPE"
                        : strcmp(name, "sdpa_gemm") == 0                          ? "SM_DTYPE"
                        : strcmp(name, "sdpa_mma") == 0                           ? "MMA_DTYPE"
                                                                                  : NULL;
    for (int dt = TABCL_F32; macro && dt <= TABCL_F64; dt++) {
      /* f64 only where the device has it; the tensor-core kernel has none */
      if (dt == TABCL_F64 && (!ctx->info.has_fp64 || strcmp(name, "sdpa_mma") == 0)) continue;
      char opts[64];
      snprintf(opts, sizeof opts, "-D%s=%d", macro, dt);
      built += check_build(ctx, name, opts);
    }
  }
  cr_expect_gt(built, tabcl_program_count(), "too few programs built");
  tabcl_context_destroy(ctx);
}

Test(kernel_warnings, every_planner_variant) {
  tabcl_context *ctx = uncached_context();
  const tabcl__target t = ctx->target;
  /* every backend, the tensor-core kernel as if its check had passed (it
     builds to an empty program off NVIDIA) */
  const tabcl__sdpa_facts f = {tabcl__sdpa_clblast_available(), 1, 1, 0, 0};
  enum { CAP = 512 };
  tabcl__variant *list = calloc(CAP, sizeof *list);
  int n = tabcl__variants_collect(&t, &f, list, CAP);
  cr_assert_leq(n, CAP);
  cr_assert_gt(n, 0);
  /* where the device ends long loops, the fused kernel's split build too */
  uint64_t limit = 0;
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  for (int i = 0; i < n; i++) {
    check_build(ctx, list[i].program, list[i].options);
    if (limit && list[i].path == TABCL__SDPA_FUSED) {
      char opts[300];
      snprintf(opts, sizeof opts, "%s -DSDPA_SPLIT=1", list[i].options);
      check_build(ctx, list[i].program, opts);
    }
  }
  free(list);
  tabcl_context_destroy(ctx);
}
