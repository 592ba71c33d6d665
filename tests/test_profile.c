/* Device profiles (src/runtime/device_profile.c): the description of the
 * real device clamped to a GPU family's limits. Checks that values only
 * go down (against the device's own query and against hand-written
 * descriptions far above and below every family), that the limits the
 * issue names for each family hold, that an unknown name is refused with
 * the names listed and nothing changed, that tabcl_options.device_profile
 * beats TABCL_DEVICE_PROFILE, that the kernels' build options carry the
 * clamped values, and that every family's plans stay within its limits;
 * under a no-fp64 profile f64 attention is TABCL_UNSUPPORTED while f32
 * attention still matches a double host loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"
#include "probe/variants.h"
#include "catindex/catindex.h"
#include "hash/hash.h"
#include "sort/sort.h"
#include "tt.h"

#define KiB ((cl_ulong)1 << 10)
#define MiB ((cl_ulong)1 << 20)
#define GiB ((cl_ulong)1 << 30)

/* A context on the suite's device under profile name ("" none). */
static tabcl_context *profile_context(const char *name) {
  tabcl_options o = {0};
  o.device_profile = name;
  return tt_context_with(&o);
}

/* The device's own description, as the context queried it before any profile. */
static tabcl__device_desc raw_desc(tabcl_context *ctx) {
  tabcl__device_desc d;
  tt_assert_ok(tabcl__device_query(ctx->platform, ctx->device, &d));
  return d;
}

static size_t wg_cap(const tabcl__device_desc *d) {
  return d->max_work_group_size < d->max_work_item_sizes[0] ? d->max_work_group_size
                                                            : d->max_work_item_sizes[0];
}

/* Every limit of b at most a's, and no capability that a lacks. */
static void expect_not_above(const tabcl__device_desc *b, const tabcl__device_desc *a,
                             const char *what) {
  cr_expect_leq(b->max_work_group_size, a->max_work_group_size, "%s: max work-group", what);
  for (int i = 0; i < 3; i++)
    cr_expect_leq(b->max_work_item_sizes[i], a->max_work_item_sizes[i], "%s: work-items[%d]",
                  what, i);
  cr_expect_leq(b->local_mem_size, a->local_mem_size, "%s: local memory", what);
  cr_expect_leq(b->max_mem_alloc_size, a->max_mem_alloc_size, "%s: max allocation", what);
  cr_expect_leq(b->global_mem_size, a->global_mem_size, "%s: global memory", what);
  cr_expect_leq(b->compute_units, a->compute_units, "%s: compute units", what);
  cr_expect_leq(b->has_fp64, a->has_fp64, "%s: fp64", what);
  cr_expect_leq(b->has_fp16, a->has_fp16, "%s: fp16", what);
  cr_expect_leq(b->cl_major * 10 + b->cl_minor, a->cl_major * 10 + a->cl_minor,
                "%s: OpenCL version", what);
  /* what the device is stays: vendor kernels follow the real vendor */
  cr_expect_eq(b->type, a->type, "%s", what);
  cr_expect_eq(b->is_nvidia, a->is_nvidia, "%s", what);
  cr_expect_eq(b->is_amd, a->is_amd, "%s", what);
  cr_expect_eq(b->is_intel, a->is_intel, "%s", what);
  cr_expect_str_eq(b->name, a->name, "%s", what);
}

static tabcl__device_desc hand_desc(size_t wg, cl_ulong local, cl_ulong alloc, int fp64) {
  tabcl__device_desc d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "hand-written");
  snprintf(d.opencl_c_version, sizeof d.opencl_c_version, "OpenCL C 3.0");
  d.type = CL_DEVICE_TYPE_GPU;
  d.is_gpu = 1;
  d.compute_units = 100000;
  d.max_work_item_dims = 3;
  d.max_work_item_sizes[0] = d.max_work_item_sizes[1] = d.max_work_item_sizes[2] = wg;
  d.max_work_group_size = wg;
  d.local_mem_size = local;
  d.max_mem_alloc_size = alloc;
  d.global_mem_size = alloc * 2;
  d.has_fp64 = d.has_fp16 = fp64;
  d.preferred_wg_multiple = 8;
  d.cl_major = 3, d.cl_minor = 0;
  return d;
}

/* What the issue (and each family's published reports) fix for a profile:
   an independent statement of the limits, not a copy of the table. */
static const struct family {
  const char *name;
  size_t wg_lo, wg_hi;          /* the max work-group size lies in [lo, hi] */
  cl_ulong local_hi;            /* local memory at most */
  cl_ulong alloc_lo, alloc_hi;  /* max allocation in [lo, hi] */
  int fp64;                     /* -1: the family has it, 0: it lacks it */
  int cl12;                     /* OpenCL 1.2 at most */
  size_t wave;                  /* its wave width, 0 if not fixed here */
} families[] = {
    {"amd-rdna3", 256, 256, 64 * KiB, 1, ~(cl_ulong)0, -1, 0, 32},
    {"amd-cdna", 256, 256, 64 * KiB, 1, ~(cl_ulong)0, -1, 0, 64},
    {"intel-arc", 256, 1024, 64 * KiB, 1, ~(cl_ulong)0, 0, 0, 0},
    {"intel-gen12", 256, 1024, 64 * KiB, 1, ~(cl_ulong)0, 0, 0, 0},
    {"arm-mali", 256, 1024, 32 * KiB, 256 * MiB, 1 * GiB, 0, 0, 0},
    {"qualcomm-adreno", 256, 1024, 32 * KiB, 256 * MiB, 1 * GiB, 0, 0, 0},
    {"apple-m", 256, 256, 32 * KiB, 1, ~(cl_ulong)0, 0, 1, 32},
};
enum { NFAM = (int)(sizeof families / sizeof families[0]) };

/* The table names every family the issue asks for, and nothing else. */
Test(profile, table_names_the_families) {
  cr_expect_eq(tabcl__device_profile_count(), NFAM);
  for (int i = 0; i < NFAM; i++) {
    int found = 0;
    for (int j = 0; j < tabcl__device_profile_count(); j++)
      if (strcmp(tabcl__device_profile_name(j), families[i].name) == 0) found = 1;
    cr_expect(found, "no profile %s", families[i].name);
  }
  for (int j = 0; j < tabcl__device_profile_count(); j++) {
    cr_expect(tabcl__device_profile_source(j) && *tabcl__device_profile_source(j),
              "%s names no source", tabcl__device_profile_name(j));
    cr_expect(tabcl__device_profile_family(j) && *tabcl__device_profile_family(j));
  }
  cr_expect_null(tabcl__device_profile_name(-1));
  cr_expect_null(tabcl__device_profile_name(tabcl__device_profile_count()));
}

/* Without a device: a description above every family takes the family's
   values, which meet the limits; one below every family stays as
   it was (a profile never raises a value). */
Test(profile, clamps_down_never_up) {
  for (int i = 0; i < NFAM; i++) {
    const struct family *f = &families[i];
    tabcl__device_desc big = hand_desc(1 << 16, 1 * GiB, 1024 * GiB, 1), d = big;
    tt_assert_ok(tabcl__device_profile_apply(f->name, &d));
    expect_not_above(&d, &big, f->name);
    cr_expect_str_eq(d.profile, f->name);
    cr_expect_geq(d.max_work_group_size, f->wg_lo, "%s", f->name);
    cr_expect_leq(d.max_work_group_size, f->wg_hi, "%s", f->name);
    cr_expect_leq(d.max_work_item_sizes[0], d.max_work_group_size, "%s", f->name);
    cr_expect_leq(d.local_mem_size, f->local_hi, "%s", f->name);
    cr_expect_geq(d.local_mem_size, 16 * KiB, "%s: less local memory than any family", f->name);
    cr_expect_geq(d.max_mem_alloc_size, f->alloc_lo, "%s", f->name);
    cr_expect_leq(d.max_mem_alloc_size, f->alloc_hi, "%s", f->name);
    cr_expect_leq(d.max_mem_alloc_size, d.global_mem_size, "%s", f->name);
    cr_expect_eq(d.has_fp64, f->fp64 ? 1 : 0, "%s: fp64", f->name);
    if (f->cl12) {
      cr_expect(d.cl_major == 1 && d.cl_minor <= 2, "%s: OpenCL %d.%d", f->name, d.cl_major,
                d.cl_minor);
      cr_expect_str_eq(d.opencl_c_version, "OpenCL C 1.2", "%s", f->name);
    }
    if (f->wave) cr_expect_eq(d.preferred_wg_multiple, f->wave, "%s: wave", f->name);
    cr_expect_lt(d.compute_units, big.compute_units, "%s: compute units", f->name);

    tabcl__device_desc small = hand_desc(64, 4 * KiB, 64 * MiB, 0), s = small;
    small.cl_major = 1, small.cl_minor = 1, s = small;
    tt_assert_ok(tabcl__device_profile_apply(f->name, &s));
    cr_expect_eq(s.max_work_group_size, 64, "%s raised the work-group limit", f->name);
    cr_expect_eq(s.local_mem_size, 4 * KiB, "%s raised local memory", f->name);
    cr_expect_eq(s.max_mem_alloc_size, 64 * MiB, "%s raised the max allocation", f->name);
    cr_expect_eq(s.has_fp64, 0, "%s turned fp64 on", f->name);
    cr_expect_eq(s.cl_major * 10 + s.cl_minor, 11, "%s raised the OpenCL version", f->name);
    cr_expect_leq(s.preferred_wg_multiple, s.max_work_group_size);
  }
  /* NULL and "" are no profile: nothing changes */
  tabcl__device_desc a = hand_desc(1024, 64 * KiB, GiB, 1), b = a;
  tt_assert_ok(tabcl__device_profile_apply(NULL, &b));
  cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
  tt_assert_ok(tabcl__device_profile_apply("", &b));
  cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
}

/* On the suite's device, for every family: the context's description is
   the device's own clamped down, and names the profile. */
Test(profile, context_description_clamped) {
  for (int i = 0; i < NFAM; i++) {
    tabcl_context *ctx = profile_context(families[i].name);
    const tabcl__device_desc raw = raw_desc(ctx);
    expect_not_above(&ctx->info, &raw, families[i].name);
    cr_expect_str_eq(ctx->info.profile, families[i].name);
    cr_expect_leq(ctx->info.max_work_group_size, families[i].wg_hi);
    cr_expect_leq(ctx->info.local_mem_size, families[i].local_hi);
    cr_expect_leq(ctx->info.max_mem_alloc_size, families[i].alloc_hi);
    if (!families[i].fp64) cr_expect_eq(ctx->info.has_fp64, 0, "%s", families[i].name);
    tabcl_context_destroy(ctx);
  }
}

/* An unknown name: TABCL_INVALID_ARGUMENT from tabcl_context_create with
   every name listed, *out NULL, and a description left untouched. */
Test(profile, unknown_name_refused) {
  static const char *const bad[] = {"no-such-gpu", "AMD-RDNA3", "apple", "apple-m ", "x"};
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    tabcl_options o = {0};
    o.device_profile = bad[b];
    tabcl_context *ctx = (tabcl_context *)&o;   /* must be cleared */
    const tt_live base = tt_live_now();
    cr_expect_eq(tabcl_context_create(&o, &ctx), TABCL_INVALID_ARGUMENT, "%s", bad[b]);
    cr_expect_null(ctx);
    const char *msg = tabcl_last_error();
    cr_expect(strstr(msg, "device profile") != NULL, "%s", msg);
    cr_expect(strstr(msg, bad[b]) != NULL, "%s", msg);
    for (int i = 0; i < tabcl__device_profile_count(); i++)
      cr_expect(strstr(msg, tabcl__device_profile_name(i)) != NULL, "%s: %s missing", msg,
                tabcl__device_profile_name(i));
    tt_expect_no_leak(base);
    tabcl__device_desc a = hand_desc(1024, 64 * KiB, GiB, 1), d = a;
    cr_expect_eq(tabcl__device_profile_apply(bad[b], &d), TABCL_INVALID_ARGUMENT);
    cr_expect_eq(memcmp(&a, &d, sizeof a), 0, "%s changed the description", bad[b]);
  }
  /* the environment variable is checked the same way */
  setenv("TABCL_DEVICE_PROFILE", "no-such-gpu", 1);
  tabcl_context *ctx = NULL;
  cr_expect_eq(tabcl_context_create(NULL, &ctx), TABCL_INVALID_ARGUMENT);
  cr_expect_null(ctx);
}

/* tabcl_options.device_profile beats TABCL_DEVICE_PROFILE; "" is none;
   NULL takes the variable. */
Test(profile, option_beats_environment) {
  setenv("TABCL_DEVICE_PROFILE", "apple-m", 1);
  tabcl_context *env = profile_context(NULL);
  cr_expect_str_eq(env->info.profile, "apple-m");
  tabcl_context *opt = profile_context("amd-cdna");
  cr_expect_str_eq(opt->info.profile, "amd-cdna");
  tabcl_context *none = profile_context("");
  cr_expect_str_eq(none->info.profile, "");
  const tabcl__device_desc raw = raw_desc(none);
  cr_expect_eq(none->info.max_work_group_size, raw.max_work_group_size);
  cr_expect_eq(none->info.local_mem_size, raw.local_mem_size);
  cr_expect_eq(none->info.has_fp64, raw.has_fp64);
  tabcl_context_destroy(env);
  tabcl_context_destroy(opt);
  tabcl_context_destroy(none);
}

/* The kernels are built with the clamped limits: the device options name
   them, and a program the library builds was given them. */
Test(profile, build_options_follow) {
  for (int i = 0; i < NFAM; i++) {
    tabcl_context *ctx = profile_context(families[i].name);
    char opts[512], want[96];
    tabcl__device_build_options(&ctx->info, opts, sizeof opts);
    snprintf(want, sizeof want, "-DTABCL_MAX_WG=%zu ", ctx->info.max_work_group_size);
    cr_expect(strstr(opts, want) != NULL, "%s: %s", families[i].name, opts);
    snprintf(want, sizeof want, "-DTABCL_LOCAL_MEM=%llu",
             (unsigned long long)ctx->info.local_mem_size);
    cr_expect(strstr(opts, want) != NULL, "%s: %s", families[i].name, opts);
    if (!families[i].fp64)
      cr_expect(strstr(opts, "-DTABCL_HAS_FP64=0") != NULL, "%s: %s", families[i].name, opts);
    cl_program p = NULL;
    tt_assert_ok(tabcl__program_get(ctx, "probe", NULL, &p, NULL));
    char built[1024] = "";
    cr_assert_eq(clGetProgramBuildInfo(p, ctx->device, CL_PROGRAM_BUILD_OPTIONS,
                                       sizeof built - 1, built, NULL), CL_SUCCESS);
    /* Mesa's rusticl 22.3 reports no build options for a program at all
       (an empty string, built from source or not); where the driver
       reports them they must carry the clamped limits. */
    if (built[0]) cr_expect(strstr(built, want) != NULL, "%s: built with %s", families[i].name, built);
    else cr_log_info("%s: %s reports no build options; checked the options tabcl gives only",
                     families[i].name, ctx->info.name);
    tabcl_context_destroy(ctx);
  }
}

/* fma() is a software routine where the device's single FP config lacks
   CL_FP_FMA (Mesa 22.3's llvmpipe: its fused attention kernel took 16.0 s
   for 16 heads x 1,024 tokens, 2.4 s with mad; bench/history/2026-11-to-12.md): the
   kernels' MULADD follows -DTABCL_HAS_FMA, which must say what the device
   says, on the device and under every profile (a profile clamps limits,
   not instructions), and a program the library builds must be given it. */
Test(profile, build_options_say_whether_fma_is_an_instruction) {
  tabcl_context *plain = tt_context();
  cl_device_fp_config fp32 = 0;
  cr_assert_eq(clGetDeviceInfo(plain->device, CL_DEVICE_SINGLE_FP_CONFIG,
                               sizeof fp32, &fp32, NULL), CL_SUCCESS);
  const int fma = (fp32 & CL_FP_FMA) != 0;
  char want[32];
  snprintf(want, sizeof want, "-DTABCL_HAS_FMA=%d", fma);
  cr_log_info("%s: CL_FP_FMA %s", plain->info.name, fma ? "set" : "not set");
  for (int i = -1; i < NFAM; i++) {
    tabcl_context *ctx = i < 0 ? plain : profile_context(families[i].name);
    const char *who = i < 0 ? "the device" : families[i].name;
    cr_expect_eq(ctx->info.has_fma, fma, "%s", who);
    char opts[512];
    tabcl__device_build_options(&ctx->info, opts, sizeof opts);
    cr_expect(strstr(opts, want) != NULL, "%s: %s", who, opts);
    cl_program p = NULL;
    tt_assert_ok(tabcl__program_get(ctx, "probe", NULL, &p, NULL));
    char built[1024] = "";
    cr_assert_eq(clGetProgramBuildInfo(p, ctx->device, CL_PROGRAM_BUILD_OPTIONS,
                                       sizeof built - 1, built, NULL), CL_SUCCESS);
    if (built[0]) cr_expect(strstr(built, want) != NULL, "%s: built with %s", who, built);
    if (i >= 0) tabcl_context_destroy(ctx);
  }
  tabcl_context_destroy(plain);
}

/* Every family's plans, for the suite's device clamped to it, stay within
   its limits: groups, local memory, buffers within one allocation; f64
   attention refused without fp64. */
Test(profile, plans_within_limits) {
  static const uint64_t sizes[] = {0, 1, 3, 257, 65537, 1000003, ((uint64_t)1 << 31) + 11};
  static const int dims[] = {1, 16, 40, 64, 100, 128, 200, 256, 300};
  for (int i = 0; i < NFAM; i++) {
    tabcl_context *ctx = profile_context(families[i].name);
    const tabcl__device_desc *dev = &ctx->info;
    const tabcl__target tg = ctx->target;
    const size_t cap = wg_cap(dev);
    const char *fam = families[i].name;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      static tabcl__sort_plan sp;
      tabcl__sort_plan_make(&tg, sizes[si], &sp);
      cr_expect_leq(sp.wg, cap, "%s: sort group", fam);
      cr_expect_leq(sp.gwg, cap, "%s: sort register-pass group", fam);
      /* local tiles within local memory; the CPU plan's runs (a CPU
         clamped to a GPU family keeps its own type) need none, only a
         scratch within one allocation */
      if (sp.serial)
        cr_expect_leq(sizes[si] * 12, dev->max_mem_alloc_size, "%s: sort scratch", fam);
      else
        cr_expect_leq((cl_ulong)(sp.tile + sp.tile / 16) * 12, dev->local_mem_size, "%s", fam);
      for (int64_t max = 8; max <= 70000; max *= 9) {
        const int64_t n = (int64_t)sizes[si];
        tabcl__hash_plan hp;
        tabcl__hash_plan_make(&tg, n, n * (max / 2), max, &hp);
        if (!n) continue;
        cr_expect_leq(hp.wg_short, cap, "%s", fam);
        cr_expect_leq(hp.wg_team, cap, "%s", fam);
        cr_expect_leq(hp.wg_units, cap, "%s", fam);
        cr_expect_leq((uint64_t)hp.slice * 8, dev->max_mem_alloc_size, "%s", fam);
        if (hp.team_kernel)
          cr_expect_leq((hp.team_words * hp.wg_team + 24) * 8, dev->local_mem_size, "%s", fam);
        tabcl__lookup_plan lp;
        tabcl__lookup_plan_make(&tg, n, n * max, max, 1, &lp);
        cr_expect_leq(lp.lanes, cap, "%s", fam);
        cr_expect_leq(lp.item_wg, cap, "%s", fam);
      }
    }
    for (int dt = TABCL_F32; dt <= TABCL_F64; dt++)
      for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        tabcl_sdpa_desc d = {70000, 54, 54, 8, 2, dims[di], (tabcl_dtype)dt, 0, 1,
                             TABCL_MASK_BOOL, 0, 0, 0};
        tabcl__sdpa_facts f = {tabcl__sdpa_clblast_available(), 1, 1, 0, 0};
        tabcl__sdpa_plan p;
        tabcl_status s = tabcl__sdpa_plan_make(&tg, &f, &d, TABCL__SDPA_AUTO, &p);
        if (dt == TABCL_F64 && !dev->has_fp64) {
          cr_expect_eq(s, TABCL_UNSUPPORTED, "%s: f64", fam);
          continue;
        }
        if (s) {
          cr_expect_eq(s, TABCL_UNSUPPORTED, "%s: %s", fam, tabcl_last_error());
          cr_expect(!f.clblast, "%s: head dim %d: %s", fam, dims[di], tabcl_last_error());
          continue;
        }
        cr_expect_leq(p.group, cap, "%s: attention group %zu", fam, p.group);
        if (p.path == TABCL__SDPA_FUSED)
          cr_expect_leq(p.tiles.local_bytes, dev->local_mem_size, "%s: d %d", fam, dims[di]);
        if (p.host_step > 1) {
          cr_expect_leq(p.q_bytes, dev->max_mem_alloc_size, "%s", fam);
          cr_expect_leq(p.kv_bytes, dev->max_mem_alloc_size, "%s", fam);
          cr_expect_leq(p.mask_bytes, dev->max_mem_alloc_size, "%s", fam);
        }
      }
    tabcl_context_destroy(ctx);
  }
}

/* q, k, v of one small call with values from rng, as floats. */
static void fill(float *x, size_t n, tt_rng *r) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(tt_uniform(r) * 2 - 1);
}

/* Under a no-fp64 profile: f64 attention is TABCL_UNSUPPORTED with a
   message and the output untouched; f32 attention on the same context
   still matches a double host loop. */
Test(profile, no_fp64_family) {
  tabcl_context *ctx = profile_context("apple-m");
  cr_assert_eq(ctx->info.has_fp64, 0);
  enum { B = 2, L = 37, H = 2, D = 24 };
  tabcl_sdpa_desc d = {B, L, L, H, H, D, TABCL_F64, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  static double q64[B * L * H * D], out64[B * L * H * D];
  for (size_t i = 0; i < sizeof out64 / sizeof out64[0]; i++) q64[i] = 0.5, out64[i] = 7.0;
  cr_expect_eq(tabcl_sdpa_host(ctx, &d, q64, q64, q64, NULL, out64), TABCL_UNSUPPORTED);
  cr_expect(strstr(tabcl_last_error(), "fp64") != NULL, "%s", tabcl_last_error());
  for (size_t i = 0; i < sizeof out64 / sizeof out64[0]; i++)
    cr_assert_eq(out64[i], 7.0, "the output changed at %zu", i);

  tt_rng r = {tt_seed("profile/no_fp64_family")};
  static float q[B * L * H * D], k[B * L * H * D], v[B * L * H * D], out[B * L * H * D];
  fill(q, sizeof q / sizeof q[0], &r);
  fill(k, sizeof k / sizeof k[0], &r);
  fill(v, sizeof v / sizeof v[0], &r);
  d.dtype = TABCL_F32;
  tt_assert_ok(tabcl_sdpa_host(ctx, &d, q, k, v, NULL, out));
  const double scale = 1.0 / sqrt((double)D);
  double worst = 0;
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++)
      for (int i = 0; i < L; i++) {
        double s[L], mx = -INFINITY, sum = 0, o[D] = {0};
        const float *qi = &q[((size_t)(b * L + i) * H + h) * D];
        for (int j = 0; j < L; j++) {
          const float *kj = &k[((size_t)(b * L + j) * H + h) * D];
          double dot = 0;
          for (int c = 0; c < D; c++) dot += (double)qi[c] * kj[c];
          s[j] = dot * scale;
          if (s[j] > mx) mx = s[j];
        }
        for (int j = 0; j < L; j++) sum += (s[j] = exp(s[j] - mx));
        for (int j = 0; j < L; j++)
          for (int c = 0; c < D; c++) o[c] += s[j] / sum * v[((size_t)(b * L + j) * H + h) * D + c];
        for (int c = 0; c < D; c++) {
          const double e = fabs(out[((size_t)(b * L + i) * H + h) * D + c] - o[c]);
          if (e > worst) worst = e;
        }
      }
  cr_expect_lt(worst, 1e-5, "f32 attention under apple-m: max error %g", worst);
  tabcl_context_destroy(ctx);
}

/* cl-probe --all-variants builds what tabcl__variants_collect lists: every
   (program, options) pair the planners choose for random calls is there,
   on the device itself and under every profile, each pair once. */
static int listed(const tabcl__variant *v, int n, const char *program, const char *options) {
  for (int i = 0; i < n; i++)
    if (strcmp(v[i].program, program) == 0 && strcmp(v[i].options, options) == 0) return 1;
  return 0;
}

Test(profile, variants_cover_plans) {
  tt_rng r = {tt_seed("profile/variants_cover_plans")};
  static tabcl__variant v[512];
  for (int i = -1; i < NFAM; i++) {
    tabcl_context *ctx = profile_context(i < 0 ? "" : families[i].name);
    const tabcl__target tg = ctx->target;
    const tabcl__sdpa_facts f = {tabcl__sdpa_clblast_available(), 1, 1, 0, 0};
    const int n = tabcl__variants_collect(&tg, &f, v, 512);
    cr_assert_leq(n, 512);
    fprintf(stderr, "profile/variants_cover_plans: %s: %d variants\n",
            i < 0 ? "no profile" : families[i].name, n);
    for (int a = 0; a < n; a++)
      for (int b = a + 1; b < n; b++)
        cr_expect(strcmp(v[a].program, v[b].program) || strcmp(v[a].options, v[b].options),
                  "listed twice: %s %s", v[a].program, v[a].options);
    for (int k = 0; k < tabcl_program_count(); k++)
      cr_expect(listed(v, n, tabcl_program_name(k), ""), "%s with no options", tabcl_program_name(k));
    for (int k = 0; k < 300; k++) {
      tabcl_sdpa_desc d = {1 + (int64_t)tt_below(&r, 5000), 1 + (int64_t)tt_below(&r, 3000),
                           (int64_t)tt_below(&r, 3000), 4, 2, 1 + (int)tt_below(&r, 400),
                           (tabcl_dtype)tt_below(&r, 4), 0, (int)tt_below(&r, 2),
                           (tabcl_mask_kind)tt_below(&r, 3), (int)tt_below(&r, 2), 0, 0};
      static const int paths[] = {TABCL__SDPA_AUTO, TABCL__SDPA_FUSED, TABCL__SDPA_CLBLAST};
      tabcl__sdpa_plan p;
      const int path = paths[tt_below(&r, 3)];
      if (tabcl__sdpa_plan_make(&tg, &f, &d, path, &p) != TABCL_OK) continue;
      cr_expect(listed(v, n, p.program, p.options), "%s: d%d dtype %d: %s \"%s\" not listed",
                i < 0 ? "no profile" : families[i].name, d.head_dim, (int)d.dtype, p.program,
                p.options);
    }
    for (int k = 0; k < 20; k++) {
      static tabcl__sort_plan sp;
      tabcl__sort_plan_make(&tg, tt_below(&r, (uint64_t)1 << 32), &sp);
      cr_expect(listed(v, n, "sort", sp.extra), "sort \"%s\" not listed", sp.extra);
    }
    tabcl_context_destroy(ctx);
  }
}

/* Device memory pressure through a profile (issue 19): under arm-mali, whose
   largest buffer is 256 MiB, a lookup whose query column needs more in one
   buffer, and a fit whose vocabulary does, are TABCL_OUT_OF_MEMORY with a
   message naming the buffer and the limit; the outputs stay as they were,
   nothing leaks, and the context and the index answer the next call right. */
Test(profile, small_allocation_is_out_of_memory) {
  tabcl_context *ctx = profile_context("arm-mali");
  const cl_ulong limit = ctx->info.max_mem_alloc_size;
  cr_assert_leq(limit, 256 * MiB, "arm-mali's max allocation is %llu",
                (unsigned long long)limit);
  /* one label just past the limit */
  const size_t big = (size_t)limit + 4096;
  uint8_t *bytes = malloc(big);
  cr_assert_not_null(bytes);
  memset(bytes, 'q', big);
  const int64_t off_big[2] = {0, (int64_t)big};
  const int64_t off_small[4] = {0, 3, 6, 9};
  const uint8_t small_data[9] = {'r', 'e', 'd', 'b', 'l', 'u', 'y', 'e', 'l'};
  tabcl_strings_view vocab = {3, off_small, small_data, NULL};
  tabcl_category_index *idx = NULL;
  /* the device's plans, which build the programs the calls below use
     before the leak baseline (a small fit on the calling thread builds none) */
  tt_tune(ctx, "fit.host_labels=0;lookup.host_rows=0;lookup.host_threads=0");
  tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vocab, TABCL_CODES_BY_POSITION, &idx));
  tt_live base = tt_live_now();
  tabcl_strings_view huge = {1, off_big, bytes, NULL};
  int32_t code = 12345, *codes = &code;
  cr_expect_eq(tabcl_category_index_lookup(idx, 1, &huge, &codes), TABCL_OUT_OF_MEMORY);
  cr_expect(strstr(tabcl_last_error(), "label bytes") != NULL && strstr(tabcl_last_error(),
            "allows at most") != NULL, "the message names the buffer and the limit: %s",
            tabcl_last_error());
  cr_expect_eq(code, 12345, "the output changed");
  tabcl_category_index *bad = (tabcl_category_index *)&code;
  cr_expect_eq(tabcl_category_index_fit(ctx, 1, &huge, TABCL_CODES_BY_POSITION, &bad),
               TABCL_OUT_OF_MEMORY, "%s", tabcl_last_error());
  cr_expect_eq(bad, (tabcl_category_index *)&code, "a failed fit changed *out");
  tt_expect_no_leak(base);
  /* still usable */
  int32_t got[3] = {-7, -7, -7}, *gp = got;
  const int64_t qoff[4] = {0, 3, 6, 9};
  const uint8_t qdata[9] = {'y', 'e', 'l', 'r', 'e', 'd', 'x', 'x', 'x'};
  tabcl_strings_view q = {3, qoff, qdata, NULL};
  tt_assert_ok(tabcl_category_index_lookup(idx, 1, &q, &gp));
  cr_expect(got[0] == 2 && got[1] == 0 && got[2] == -1, "codes %d %d %d", got[0], got[1], got[2]);
  tabcl_category_index_destroy(idx);
  free(bytes);
  tabcl_context_destroy(ctx);
}
