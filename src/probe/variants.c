/* Every program variant the planners can choose (variants.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "catindex/catindex_plan.h"
#include "hash/hash.h"
#include "probe/variants.h"
#include "sort/sort.h"

/* Appends (program, options) to out unless it is there; returns the new count. */
static int add(tabcl__variant *out, int n, int cap, const tabcl__variant *v) {
  for (int i = 0; i < n && i < cap; i++)
    if (strcmp(out[i].program, v->program) == 0 && strcmp(out[i].options, v->options) == 0)
      return n;
  if (n < cap) out[n] = *v;
  return n + 1;
}

static const char *const dtype_names[] = {"f32", "f16", "bf16", "f64"};

/* The variant the attention planner picks for dtype dt, head_dim and a
   backend; 0 when that backend does not take it. */
static int attention_variant(const tabcl__target *t, const tabcl__sdpa_facts *f, int dt,
                             int head_dim, int path, tabcl__variant *v) {
  /* Sizes never change the options: a small call stands for every call. */
  tabcl_sdpa_desc d = {1, 64, 64, 1, 1, head_dim, (tabcl_dtype)dt, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  tabcl__sdpa_plan p;
  if (tabcl__sdpa_plan_make(t, f, &d, path, &p) != TABCL_OK) {
    tabcl__clear_error();   /* a backend that does not take it is no failure here */
    return 0;
  }
  memset(v, 0, sizeof *v);
  v->program = p.program;
  snprintf(v->options, sizeof v->options, "%s", p.options);
  snprintf(v->what, sizeof v->what, "attention %s d%d, %s", dtype_names[dt], head_dim, p.backend);
  v->path = p.path;
  v->dtype = dt;
  v->head_dim = head_dim;
  v->group = p.group;
  return 1;
}

int tabcl__variants_collect(const tabcl__target *t, const tabcl__sdpa_facts *f,
                            tabcl__variant *out, int cap) {
  int n = 0;
  tabcl__variant v;
  for (int i = 0; i < tabcl_program_count(); i++) {
    memset(&v, 0, sizeof v);
    v.program = tabcl_program_name(i);
    snprintf(v.what, sizeof v.what, "%s, no options", v.program);
    n = add(out, n, cap, &v);
  }
  /* the CPU kernel where the tuning gives it to the automatic choice */
  const int cpu = tabcl__tuned(t->tune, TABCL__TUNE_SDPA_CPU) > 0;
  static const int paths[] = {TABCL__SDPA_MMA, TABCL__SDPA_CPU, TABCL__SDPA_FUSED,
                              TABCL__SDPA_CLBLAST};
  for (int dt = TABCL_F32; dt <= TABCL_F64; dt++) {
    for (int dp = 16; dp <= 256; dp += 16)
      for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++)
        if ((paths[pi] != TABCL__SDPA_CPU || cpu) && attention_variant(t, f, dt, dp, paths[pi], &v))
          n = add(out, n, cap, &v);
    /* past the fused kernel's head dims: what the automatic choice takes */
    if (attention_variant(t, f, dt, 320, TABCL__SDPA_AUTO, &v)) n = add(out, n, cap, &v);
  }
  static const uint64_t pairs[] = {2, 4097, (uint64_t)1 << 20, (uint64_t)1 << 30};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    static tabcl__sort_plan sp;   /* large: kept off the stack */
    tabcl__sort_plan_make(t, pairs[i], &sp);
    memset(&v, 0, sizeof v);
    v.program = "sort";
    snprintf(v.options, sizeof v.options, "%s", sp.extra);
    snprintf(v.what, sizeof v.what, "sort of %llu pairs", (unsigned long long)pairs[i]);
    n = add(out, n, cap, &v);
  }
  /* The hash program as this device's plan builds it: on a CPU (hash.serial)
     the serial kernels alone; sizes never change the options. */
  tabcl__hash_plan hp;
  tabcl__hash_plan_make(t, 1000, 64000, 64, &hp);
  if (hp.options) {
    memset(&v, 0, sizeof v);
    v.program = "hash";
    snprintf(v.options, sizeof v.options, "%s", hp.options);
    snprintf(v.what, sizeof v.what, "hash, the serial kernels");
    n = add(out, n, cap, &v);
  }
  /* The category program's build where lookups take the CPU kernel. */
  const char *cat = tabcl__catindex_options(t->tune);
  if (cat) {
    memset(&v, 0, sizeof v);
    v.program = "catindex";
    snprintf(v.options, sizeof v.options, "%s", cat);
    snprintf(v.what, sizeof v.what, "catindex, queries read as bytes");
    n = add(out, n, cap, &v);
  }
  return n;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The work-group limit of kernel `name` in program p, 0 if unknown. */
static size_t kernel_limit(tabcl_context *ctx, cl_program p, const char *name) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(p, name, &err);
  if (err != CL_SUCCESS || !k) return 0;
  size_t kmax = 0;
  if (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                               NULL) != CL_SUCCESS)
    kmax = 0;
  clReleaseKernel(k);
  return kmax;
}

enum { MAX_VARIANTS = 512 };

int tabcl__variants_build(tabcl_context *ctx, int shard, int shards,
                          tabcl__variant_report report, void *arg, double *cold_ms) {
  if (shards < 1 || shard < 0 || shard >= shards) shard = 0, shards = 1;
  tabcl__variant *list = tabcl__calloc(MAX_VARIANTS, sizeof *list);
  if (!list) {
    tabcl__fail(TABCL_OUT_OF_MEMORY, "out of host memory listing program variants");
    if (report) {
      tabcl__variant none = {"(all variants)", "", "the variant list", 0, 0, 0, 0};
      report(&none, TABCL_OUT_OF_MEMORY, 0, 0, arg);
    }
    return 1;
  }
  const tabcl__target t = ctx->target;
  int failures = 0;
  /* Every backend this build has, the tensor-core kernel as if its check
     had passed: the probe builds what any later call could ask for. */
  tabcl__sdpa_facts f = {tabcl__sdpa_clblast_available(), 1, 1, 0, 0};
  /* Where the device ends a work-item's loops early, long key rows run the
     fused kernel's split build: that is built too. */
  uint64_t loop_limit = 0;
  if (tabcl__loop_limit(ctx, &loop_limit)) {
    if (report) {
      tabcl__variant probe = {"probe", "", "the loop-limit probe", 0, 0, 0, 0};
      report(&probe, TABCL_OPENCL_ERROR, 0, 0, arg);
    }
    tabcl__clear_error();
    loop_limit = 0;
    failures = 1;
  }
  int n = tabcl__variants_collect(&t, &f, list, MAX_VARIANTS);
  if (n > MAX_VARIANTS) n = MAX_VARIANTS;
  /* Variants past the listed ones were added by this shard's own builds. */
  const int listed = n;
  double cold = 0;
  for (int i = 0; i < n; i++) {
    if (i < listed && i % shards != shard) continue;
    const tabcl__variant *v = &list[i];
    cl_program p = NULL;
    int from_cache = 0;
    const double t0 = now_ms();
    tabcl_status s = tabcl__program_get(ctx, v->program, v->options[0] ? v->options : NULL, &p,
                                        &from_cache);
    const double ms = now_ms() - t0;
    if (!s && from_cache == 0) cold += ms;
    if (s) failures++;
    if (report) report(v, s, ms, from_cache, arg);
    /* A kernel that cannot run its shape's group is planned again within
       its own limit at run time (attention/sdpa_exec.c): build that too. */
    if (!s && v->path == TABCL__SDPA_FUSED && n < MAX_VARIANTS) {
      const size_t kmax = kernel_limit(ctx, p, "sdpa_fused");
      if (kmax && kmax < v->group) {
        tabcl__sdpa_facts capped = f;
        capped.fused_cap = kmax;
        tabcl__variant w;
        if (attention_variant(&t, &capped, v->dtype, v->head_dim, TABCL__SDPA_FUSED, &w)) {
          snprintf(w.what, sizeof w.what, "attention %s d%d, fused kernel within %zu work-items",
                   dtype_names[v->dtype], v->head_dim, kmax);
          n = add(list, n, MAX_VARIANTS, &w);
          if (n > MAX_VARIANTS) n = MAX_VARIANTS;
        }
      }
    }
  }
  tabcl__free(list);
  if (cold_ms) *cold_ms = cold;
  return failures;
}
