/* Attention: the fused kernel and the CLBlast path against a float64 host
 * loop, every dtype, masks and their broadcasts, causality, grouped heads,
 * slicing, program reuse, invalid descriptors and injected failures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"
#include "runtime/half.h"
#include "sdpa_ref.h"
#include "tabcl/tabcl_cl.h"
#include "tt.h"

/* Elements of 16-bit dtypes go through the host's converters
   (runtime/half.h, checked by test_half), not the kernels' code. */
static size_t esize(tabcl_dtype dt) { return tabcl__sdpa_elem_size(dt); }

/* ---- one call's inputs and its float64 reference (support/sdpa_ref.h) ---- */

typedef struct sdpa_case {
  tabcl_sdpa_desc d;
  void *q, *k, *v, *mask, *out;
  double *ref;
  unsigned char *dead;   /* per output row: 1 when the row may attend nothing */
  size_t nq, nk, nm;
} sdpa_case;

static size_t mask_elems(const tabcl_sdpa_desc *d) {
  if (d->mask == TABCL_MASK_NONE) return 0;
  return (size_t)(d->mask_batch_broadcast ? 1 : d->batch) *
         (size_t)(d->mask_head_broadcast ? 1 : d->q_heads) *
         (size_t)(d->mask_query_broadcast ? 1 : d->q_len) * (size_t)d->kv_len;
}

static void *xalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  cr_assert_not_null(p);
  return p;
}

/* c for the call d, with random inputs (never all zero); masks with some
   rows fully masked. */
static void case_fill(sdpa_case *c, const tabcl_sdpa_desc *desc, tt_rng *r) {
  memset(c, 0, sizeof *c);
  c->d = *desc;
  const tabcl_sdpa_desc *d = &c->d;
  size_t es = esize(d->dtype);
  c->nq = (size_t)d->batch * d->q_len * d->q_heads * d->head_dim;
  c->nk = (size_t)d->batch * d->kv_len * d->kv_heads * d->head_dim;
  c->nm = mask_elems(d);
  c->q = xalloc(c->nq * es), c->out = xalloc(c->nq * es);
  c->k = xalloc(c->nk * es), c->v = xalloc(c->nk * es);
  c->ref = xalloc(c->nq * 8);
  c->dead = xalloc((size_t)d->batch * d->q_len * d->q_heads);
  for (size_t i = 0; i < c->nq; i++) tabcl__store_elem(c->q, i, d->dtype, tt_normal(r));
  for (size_t i = 0; i < c->nk; i++) tabcl__store_elem(c->k, i, d->dtype, tt_normal(r));
  for (size_t i = 0; i < c->nk; i++) tabcl__store_elem(c->v, i, d->dtype, tt_normal(r));
  c->mask = NULL;
  if (d->mask != TABCL_MASK_NONE) {
    size_t mes = d->mask == TABCL_MASK_BOOL ? 1 : es;
    c->mask = xalloc(c->nm * mes);
    size_t lk = (size_t)d->kv_len;
    for (size_t i = 0; i < c->nm; i++) {
      int off = tt_below(r, 5) == 0;
      if (lk && tt_below(r, 11) == 0 && i % lk == 0) {
        /* a whole row masked out */
        for (size_t j = 0; j < lk; j++) {
          if (d->mask == TABCL_MASK_BOOL) ((uint8_t *)c->mask)[i + j] = 0;
          else tabcl__store_elem(c->mask, i + j, d->dtype, -INFINITY);
        }
        i += lk - 1;
        continue;
      }
      if (d->mask == TABCL_MASK_BOOL)
        ((uint8_t *)c->mask)[i] = off ? 0 : (uint8_t)(1 + tt_below(r, 255));
      else
        tabcl__store_elem(c->mask, i, d->dtype, off ? -INFINITY : tt_normal(r));
    }
  }
}

static void case_reference(sdpa_case *c) {
  tt_sdpa_reference(&c->d, c->q, c->k, c->v, c->mask, c->ref, c->dead);
}

static void case_free(sdpa_case *c) {
  free(c->q), free(c->k), free(c->v), free(c->mask), free(c->out);
  free(c->ref), free(c->dead);
}

static double tolerance(tabcl_dtype dt) {
  return dt == TABCL_F32 ? 1e-5 : dt == TABCL_F64 ? 1e-12 : 1e-2;
}

/* Relative norm error of out against the reference; dead rows must be exact zeros. */
static void case_check(const sdpa_case *c, const char *what) {
  const tabcl_sdpa_desc *d = &c->d;
  double num = 0, den = 0;
  const size_t D = (size_t)d->head_dim;
  for (size_t i = 0; i < c->nq; i++) {
    double g = tabcl__load_elem(c->out, i, d->dtype), e = c->ref[i];
    if (c->dead[i / D] && g != 0) {
      cr_expect_fail("%s: element %zu of a row that attends nothing is %g, not 0", what, i, g);
      return;
    }
    num += (g - e) * (g - e);
    den += e * e;
  }
  double err = den > 0 ? sqrt(num / den) : sqrt(num);
  cr_expect(err <= tolerance(d->dtype),
            "%s: relative error %.3g over %g (B=%lld Lq=%lld Lk=%lld Hq=%d Hkv=%d D=%d dtype=%d "
            "causal=%d mask=%d bb=%d hb=%d qb=%d)", what, err, tolerance(d->dtype),
            (long long)d->batch, (long long)d->q_len, (long long)d->kv_len, d->q_heads,
            d->kv_heads, d->head_dim, (int)d->dtype, d->causal, (int)d->mask,
            d->mask_batch_broadcast, d->mask_head_broadcast, d->mask_query_broadcast);
}

static tabcl_sdpa_desc desc_of(int64_t b, int64_t lq, int64_t lk, int hq, int hkv, int dim,
                               tabcl_dtype dt) {
  tabcl_sdpa_desc d;
  memset(&d, 0, sizeof d);
  d.batch = b, d.q_len = lq, d.kv_len = lk, d.q_heads = hq, d.kv_heads = hkv, d.head_dim = dim;
  d.dtype = dt;
  return d;
}

/* Fills inputs, poisons out, runs the path and checks. Returns the status. */
static tabcl_status run_case(tabcl_context *ctx, tt_rng *r, const tabcl_sdpa_desc *d, int path,
                             const char *what) {
  sdpa_case c;
  case_fill(&c, d, r);
  memset(c.out, 0x7F, c.nq * esize(d->dtype));
  tabcl_status s = tabcl__sdpa_host_path(ctx, d, c.q, c.k, c.v, c.mask, c.out, path);
  if (s == TABCL_OK) {
    case_reference(&c);
    case_check(&c, what);
  }
  case_free(&c);
  return s;
}

static int has_fp64(tabcl_context *ctx) { return ctx->info.has_fp64; }

/* A case under a forced tile tuning, on the fused kernel. Where the shape
   cannot run on this device (its local memory, or the compiled kernel's
   own work-group limit: 32 on Mesa's llvmpipe) the call must be refused
   with TABCL_INVALID_ARGUMENT naming the tuning entry, and the automatic
   choice of an untuned context must then give the right answer for the
   same case. Returns 1
   when the forced shape ran. */
static int run_tuned(tabcl_context *ctx, tt_rng *r, const tabcl_sdpa_desc *d, const char *what) {
  tabcl_status s = run_case(ctx, r, d, TABCL__SDPA_FUSED, what);
  if (s == TABCL_OK) return 1;
  cr_expect_eq(s, TABCL_INVALID_ARGUMENT, "%s: %s: %s", what, tabcl_status_name(s),
               tabcl_last_error());
  cr_expect(strstr(tabcl_last_error(), "sdpa.fused.d") != NULL,
            "%s: the refusal names no tuning entry: %s", what, tabcl_last_error());
  tabcl__sdpa_tiles t;
  cr_expect(tabcl__sdpa_fused_cap(ctx, d) > 0 ||
                !tabcl__sdpa_choose_tiles(ctx, d->dtype, d->head_dim, &t),
            "%s: refused although the shape fits %s", what, ctx->info.name);
  cr_log_info("%s: head dim %d: the forced shape does not fit %s; the automatic choice ran", what,
              d->head_dim, ctx->info.name);
  /* a context without the tuning entry, which the automatic choice would
     be refused under as well */
  tabcl_context *plain = tt_context();
  tt_assert_ok(run_case(plain, r, d, TABCL__SDPA_AUTO, what));
  tabcl_context_destroy(plain);
  return 0;
}

/* ---- shapes and dtypes ---- */

Test(sdpa, lengths_and_head_dims_f32) {
  tt_rng r = {tt_seed("sdpa.lengths_and_head_dims_f32")};
  tabcl_context *ctx = tt_context();
  static const int lens[] = {1, 2, 17, 54, 65, 129};
  static const int dims[] = {16, 64, 80, 128, 256, 20, 33};
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
    for (int n = 0; n < 3; n++) {
      int lq = lens[tt_below(&r, 6)], lk = lens[tt_below(&r, 6)];
      tabcl_sdpa_desc d = desc_of(1 + (int64_t)tt_below(&r, 2), lq, lk, 2, 1, dims[di], TABCL_F32);
      tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "f32 shape"));
    }
  tabcl_sdpa_desc d = desc_of(2, 129, 129, 1, 1, 64, TABCL_F32);
  d.scale = 0.37;
  tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "custom scale"));
  tabcl_context_destroy(ctx);
}

/* The tile shapes other devices get (PoCL's large local memory picks the
   largest everywhere): shrink the context's local memory to force them. */
Test(sdpa, tile_shapes_of_smaller_devices) {
  tt_rng r = {tt_seed("sdpa.tile_shapes_of_smaller_devices")};
  tabcl_context *ctx = tt_context();
  /* local memory, dtype, head dim: one of each kind of tile shape (48 KiB
     is NVIDIA's: 64x56 (seven keys per work-item in S), 64x16 (two),
     16x16 with four work-items per query row; then 32x16 with 64
     work-items, 16x8, 32x24, 16x24 on a 16 KiB device, 32x32 in f64). */
  static const struct { cl_ulong local; int dtype, dim; } cfg[] = {
      {49152, TABCL_F32, 64},  {49152, TABCL_F32, 128}, {49152, TABCL_F32, 256},
      {32768, TABCL_F32, 128}, {32768, TABCL_F32, 256}, {65536, TABCL_F32, 256},
      {16384, TABCL_F32, 80},  {49152, TABCL_F64, 64}};
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
    ctx->info.local_mem_size = cfg[i].local;
    tabcl__sdpa_tiles t;
    if (cfg[i].dtype == TABCL_F64 && !has_fp64(ctx)) continue;
    cr_assert(tabcl__sdpa_choose_tiles(ctx, (tabcl_dtype)cfg[i].dtype, cfg[i].dim, &t));
    tabcl_sdpa_desc d = desc_of(1, 40 + (int)tt_below(&r, 40), 40 + (int)tt_below(&r, 60), 2, 1,
                                cfg[i].dim, (tabcl_dtype)cfg[i].dtype);
    d.causal = (int)tt_below(&r, 2);
    d.mask = (tabcl_mask_kind)tt_below(&r, 3);
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_FUSED, "tile shape"));
  }
  tabcl_context_destroy(ctx);
}

/* One test a dtype: five cold builds each, which the suite's two workers
   then build side by side. */
static void sixteen_bit(const char *seed, tabcl_dtype dt) {
  tt_rng r = {tt_seed(seed)};
  tabcl_context *ctx = tt_context();
  static const int dims[] = {16, 64, 80, 128, 256};
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    tabcl_sdpa_desc d = desc_of(2, 17 + (int)tt_below(&r, 50), 1 + (int)tt_below(&r, 70), 2, 2,
                                dims[di], dt);
    d.mask = TABCL_MASK_ADD;
    d.mask_head_broadcast = 1;
    d.causal = di == 2;
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, dt == TABCL_F16 ? "f16" : "bf16"));
  }
  tabcl_context_destroy(ctx);
}

Test(sdpa, sixteen_bit_f16) { sixteen_bit("sdpa.sixteen_bit_f16", TABCL_F16); }
Test(sdpa, sixteen_bit_bf16) { sixteen_bit("sdpa.sixteen_bit_bf16", TABCL_BF16); }

Test(sdpa, f64_or_unsupported) {
  tt_rng r = {tt_seed("sdpa.f64_or_unsupported")};
  tabcl_context *ctx = tt_context();
  static const int dims[] = {16, 80, 128, 256};
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    tabcl_sdpa_desc d = desc_of(2, 54, 65, 4, 2, dims[di], TABCL_F64);
    d.mask = TABCL_MASK_ADD;
    d.causal = di & 1;
    if (!has_fp64(ctx)) {
      double out = 42;
      cr_expect_eq(tabcl__sdpa_host_path(ctx, &d, &out, &out, &out, &out, &out, 0),
                   TABCL_UNSUPPORTED);
      cr_expect_eq(out, 42);
      continue;
    }
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "f64"));
  }
  /* a device without fp64 (pretended): unsupported on every path, out untouched */
  ctx->info.has_fp64 = 0;
  tabcl_sdpa_desc d = desc_of(1, 2, 2, 1, 1, 16, TABCL_F64);
  double buf[32], out[32];
  for (int i = 0; i < 32; i++) buf[i] = 1 + i, out[i] = 42;
  for (int path = 0; path < 3; path++)
    cr_expect_eq(tabcl__sdpa_host_path(ctx, &d, buf, buf, buf, NULL, out, path), TABCL_UNSUPPORTED);
  cr_expect(strstr(tabcl_last_error(), "fp64") != NULL, "%s", tabcl_last_error());
  for (int i = 0; i < 32; i++) cr_expect_eq(out[i], 42);
  tabcl_context_destroy(ctx);
}

/* ---- features ---- */

Test(sdpa, causal_with_different_lengths) {
  tt_rng r = {tt_seed("sdpa.causal_with_different_lengths")};
  tabcl_context *ctx = tt_context();
  static const int pairs[][2] = {{17, 65}, {65, 17}, {1, 129}, {129, 2}, {54, 54}, {70, 140}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    for (int dt = 0; dt < 2; dt++) {
      tabcl_sdpa_desc d = desc_of(2, pairs[i][0], pairs[i][1], 2, 1, 32, (tabcl_dtype)dt);
      d.causal = 1;
      tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "causal"));
    }
  tabcl_context_destroy(ctx);
}

Test(sdpa, masks_and_broadcasts) {
  tt_rng r = {tt_seed("sdpa.masks_and_broadcasts")};
  tabcl_context *ctx = tt_context();
  for (int kind = TABCL_MASK_BOOL; kind <= TABCL_MASK_ADD; kind++)
    for (int bb = 0; bb < 2; bb++)
      for (int hb = 0; hb < 2; hb++)
        for (int causal = 0; causal < 2; causal++) {
          tabcl_sdpa_desc d = desc_of(3, 33, 47, 4, 2, 64, TABCL_F32);
          d.mask = (tabcl_mask_kind)kind;
          d.mask_batch_broadcast = bb, d.mask_head_broadcast = hb, d.causal = causal;
          tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "mask"));
        }
  tabcl_context_destroy(ctx);
}

Test(sdpa, rows_with_nothing_to_attend_are_zero) {
  tt_rng r = {tt_seed("sdpa.rows_with_nothing_to_attend_are_zero")};
  tabcl_context *ctx = tt_context();
  for (int kind = TABCL_MASK_BOOL; kind <= TABCL_MASK_ADD; kind++) {
    tabcl_sdpa_desc d = desc_of(2, 9, 40, 2, 2, 16, TABCL_F32);
    d.mask = (tabcl_mask_kind)kind;
    sdpa_case c;
    case_fill(&c, &d, &r);
    /* every row of batch entry 1, head 0 masked out */
    for (int i = 0; i < 9 * 40; i++) {
      size_t at = ((size_t)(1 * 2 + 0) * 9 * 40) + (size_t)i;
      if (kind == TABCL_MASK_BOOL) ((uint8_t *)c.mask)[at] = 0;
      else tabcl__store_elem(c.mask, at, d.dtype, -INFINITY);
    }
    memset(c.out, 0x7F, c.nq * 4);
    tt_assert_ok(tabcl_sdpa_host(ctx, &d, c.q, c.k, c.v, c.mask, c.out));
    case_reference(&c);
    case_check(&c, "masked rows");
    for (int i = 0; i < 9; i++)
      for (int e = 0; e < 16; e++)
        cr_expect_eq(((float *)c.out)[(((size_t)1 * 9 + i) * 2 + 0) * 16 + e], 0.0f);
    case_free(&c);
  }
  /* kv_len = 0: every row is zeros; k, v and mask may be NULL */
  tabcl_sdpa_desc d = desc_of(3, 5, 0, 2, 1, 16, TABCL_F32);
  d.mask = TABCL_MASK_BOOL;
  float q[3 * 5 * 2 * 16], out[3 * 5 * 2 * 16];
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = (float)tt_normal(&r), out[i] = NAN;
  tt_assert_ok(tabcl_sdpa_host(ctx, &d, q, NULL, NULL, NULL, out));
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) cr_expect_eq(out[i], 0.0f);
  tabcl_context_destroy(ctx);
}

Test(sdpa, grouped_query_heads) {
  tt_rng r = {tt_seed("sdpa.grouped_query_heads")};
  tabcl_context *ctx = tt_context();
  static const int ratios[] = {1, 2, 8};
  for (int i = 0; i < 3; i++) {
    tabcl_sdpa_desc d = desc_of(2, 20, 31, 8, 8 / ratios[i], 16, TABCL_F32);
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "gqa"));
    d.dtype = TABCL_BF16;
    d.causal = 1;
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "gqa bf16"));
  }
  tabcl_context_destroy(ctx);
}

Test(sdpa, empty_calls_write_nothing) {
  tabcl_context *ctx = tt_context();
  float out = 7;
  tabcl_sdpa_desc d = desc_of(0, 5, 5, 2, 1, 16, TABCL_F32);
  tt_assert_ok(tabcl_sdpa_host(ctx, &d, NULL, NULL, NULL, NULL, &out));
  d = desc_of(4, 0, 5, 2, 1, 16, TABCL_F32);
  tt_assert_ok(tabcl_sdpa_host(ctx, &d, NULL, NULL, NULL, NULL, NULL));
  d = desc_of(0, 0, 0, 0, 0, 0, TABCL_F64);
  tt_assert_ok(tabcl_sdpa_host(ctx, &d, NULL, NULL, NULL, NULL, NULL));
  cr_expect_eq(out, 7);
  cl_event ev = NULL;
  tt_assert_ok(tabcl_sdpa_cl(ctx, &d, NULL, NULL, NULL, NULL, NULL, 0, NULL, &ev));
  cr_assert_not_null(ev);
  cr_expect_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
  clReleaseEvent(ev);
  tabcl_context_destroy(ctx);
}

/* ---- slicing and program reuse ---- */

/* The host call's transfers: through the staging area in chunks far
   smaller than a tensor (each upload and the download in many pieces), by
   a whole-buffer map, and as the device's default; the same bits every
   way, and right against the reference. */
Test(sdpa, host_transfers_staged_or_mapped_bit_for_bit) {
  tt_rng r = {tt_seed("sdpa.host_transfers")};
  tabcl_context *ctx = tt_context();
  for (int dt = TABCL_F32; dt <= TABCL_BF16; dt++) {
    tabcl_sdpa_desc d = desc_of(5, 37, 70, 4, 2, 24, (tabcl_dtype)dt);
    d.mask = dt == TABCL_F32 ? TABCL_MASK_ADD : TABCL_MASK_BOOL;
    d.causal = dt == TABCL_F16;
    sdpa_case c;
    case_fill(&c, &d, &r);
    const size_t bytes = c.nq * esize(d.dtype);
    unsigned char *got[3];
    for (int way = 0; way < 3; way++) {
      got[way] = xalloc(bytes);
      memset(got[way], 0x7F, bytes);
      if (way == 0) tt_staging(ctx, 1, 1000);   /* halves of 500 bytes */
      if (way == 1) tt_staging(ctx, -1, 0);
      if (way == 2) tt_tune(ctx, "upload.staging=auto");
      tt_assert_ok(tabcl_sdpa_host(ctx, &d, c.q, c.k, c.v, c.mask, got[way]));
    }
    cr_expect_eq(memcmp(got[0], got[1], bytes), 0, "dtype %d: staged and mapped differ", dt);
    cr_expect_eq(memcmp(got[0], got[2], bytes), 0, "dtype %d: staged and default differ", dt);
    memcpy(c.out, got[0], bytes);
    case_reference(&c);
    case_check(&c, "staged transfers");
    for (int way = 0; way < 3; way++) free(got[way]);
    case_free(&c);
  }
  tabcl_context_destroy(ctx);
}

Test(sdpa, sliced_equals_unsliced_bit_for_bit) {
  tt_rng r = {tt_seed("sdpa.sliced_equals_unsliced_bit_for_bit")};
  tabcl_context *whole = tt_context();
  tabcl_options o = {0};
  o.max_batch_per_launch = 7;
  tabcl_context *sliced = tt_context_with(&o);
  /* a device whose allocations hold 3 batch entries: the uploads are split too */
  tabcl_context *small = tt_context();
  for (int dt = 0; dt < 3; dt++) {
    tabcl_sdpa_desc d = desc_of(23, 54, 54, 4, 2, 64, (tabcl_dtype)dt);
    d.mask = TABCL_MASK_ADD;
    d.causal = dt == 1;
    sdpa_case c;
    case_fill(&c, &d, &r);
    size_t bytes = c.nq * esize(d.dtype);
    unsigned char *a = xalloc(bytes), *b = xalloc(bytes);
    memset(a, 0x7F, bytes);
    memset(b, 0x7F, bytes);
    tt_assert_ok(tabcl_sdpa_host(whole, &d, c.q, c.k, c.v, c.mask, a));
    tabcl_stats before, after;
    tt_assert_ok(tabcl_sdpa_host(sliced, &d, c.q, c.k, c.v, c.mask, b));
    tabcl_context_stats(sliced, &before);
    tt_assert_ok(tabcl_sdpa_host(sliced, &d, c.q, c.k, c.v, c.mask, b));
    tabcl_context_stats(sliced, &after);
    cr_expect_eq(memcmp(a, b, bytes), 0, "dtype %d: sliced result differs", dt);
    small->info.max_mem_alloc_size = 3 * (bytes / 23) + 100;
    memset(b, 0x7F, bytes);
    tt_assert_ok(tabcl_sdpa_host(small, &d, c.q, c.k, c.v, c.mask, b));
    cr_expect_eq(memcmp(a, b, bytes), 0, "dtype %d: split uploads differ", dt);
    cr_expect_eq(after.programs_built + after.programs_from_cache,
                 before.programs_built + before.programs_from_cache);
    cr_expect_geq(after.kernel_launches - before.kernel_launches, 4, "23 entries in slices of 7");
    memcpy(c.out, b, bytes);
    case_reference(&c);
    case_check(&c, "sliced");
    free(a), free(b);
    case_free(&c);
  }
  tabcl_context_destroy(small);
  tabcl_context_destroy(sliced);
  tabcl_context_destroy(whole);
}

/* Devices that allow few work-groups in NDRange dims 1 and 2 (heads and
   query tiles / queries): the launches split, the results do not change. */
Test(sdpa, split_heads_and_query_tiles_bit_for_bit) {
  tt_rng r = {tt_seed("sdpa.split_heads_and_query_tiles_bit_for_bit")};
  tabcl_context *ctx = tt_context();
  for (int path = TABCL__SDPA_FUSED; path <= TABCL__SDPA_CLBLAST; path++) {
    if (path == TABCL__SDPA_CLBLAST && !tabcl__sdpa_clblast_available()) continue;
    tabcl_sdpa_desc d = desc_of(2, 150, 70, 5, 5, 16, TABCL_F32);
    d.mask = TABCL_MASK_BOOL;
    d.causal = 1;
    sdpa_case c;
    case_fill(&c, &d, &r);
    size_t bytes = c.nq * 4;
    unsigned char *a = xalloc(bytes);
    memset(a, 0x7F, bytes);
    tt_assert_ok(tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, a, path));
    tabcl_stats before, after;
    tabcl_context_stats(ctx, &before);
    tt_tune(ctx, "sdpa.groups_yz=2");
    memset(c.out, 0x7F, bytes);
    tabcl_status s = tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, c.out, path);
    tt_tune(ctx, "sdpa.groups_yz=auto");
    tt_assert_ok(s);
    tabcl_context_stats(ctx, &after);
    cr_expect_eq(memcmp(a, c.out, bytes), 0, "path %d: split launches differ", path);
    cr_expect_gt(after.kernel_launches - before.kernel_launches, 4);
    case_reference(&c);
    case_check(&c, "split launches");
    free(a);
    case_free(&c);
  }
  tabcl_context_destroy(ctx);
}

/* Long key rows: the fused kernel's work-items loop over every key. Mesa
   22.3's llvmpipe ends a work-item's loops after 65,535 iterations, which
   gave a worst error of 0.012 at 4,096 keys (f32, head dim 64) before the
   keys were split there. On a device of few compute units these calls
   (2 heads of 8 queries) also split to fill them. */
Test(sdpa, long_key_rows) {
  tt_rng r = {tt_seed("sdpa.long_key_rows")};
  tabcl_context *ctx = tt_context();
  static const int64_t lens[] = {4096, 20011};
  static const int dims[] = {16, 64};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
      for (int dt = TABCL_F32; dt <= TABCL_BF16; dt++) {
        tabcl_sdpa_desc d = desc_of(1, 8, lens[li], 2, 1, dims[di], (tabcl_dtype)dt);
        if (dt == TABCL_F16) d.mask = TABCL_MASK_ADD;
        tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "long key rows"));
      }
  /* causal, queries as long as the keys: each tile stops at its diagonal */
  tabcl_sdpa_desc d = desc_of(1, 3000, 3000, 1, 1, 16, TABCL_F32);
  d.causal = 1;
  tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "long causal rows"));
  tabcl_context_destroy(ctx);
}

/* The fused tiles ctx runs d with: a short call first, since a compiled
   kernel's own work-group limit (32 on llvmpipe) is learned by running it. */
static tabcl__sdpa_tiles tiles_in_use(tabcl_context *ctx, const tabcl_sdpa_desc *d) {
  tabcl_sdpa_desc s = *d;
  s.batch = 1, s.q_len = 1, s.kv_len = 1, s.mask = TABCL_MASK_NONE, s.causal = 0;
  const size_t bytes = 8 * (size_t)d->q_heads * (size_t)d->head_dim;
  unsigned char *buf = calloc(4, bytes);
  cr_assert(buf);
  tt_assert_ok(tabcl__sdpa_host_path(ctx, &s, buf, buf + bytes, buf + 2 * bytes, NULL,
                                     buf + 3 * bytes, TABCL__SDPA_FUSED));
  free(buf);
  tabcl__sdpa_facts f;
  tt_assert_ok(tabcl__sdpa_facts_get(ctx, d, TABCL__SDPA_FUSED, &f));
  f.loop_limit = 0;
  const tabcl__target tg = ctx->target;
  tabcl__sdpa_plan p;
  tt_assert_ok(tabcl__sdpa_plan_make(&tg, &f, d, TABCL__SDPA_FUSED, &p));
  return p.tiles;
}

/* Relative norm distance of c's output from the output a of the same
   inputs (the unsplit kernel's), within the dtype's tolerance. */
static void expect_near(const sdpa_case *c, const void *a, const char *what) {
  double num = 0, den = 0;
  for (size_t i = 0; i < c->nq; i++) {
    const double g = tabcl__load_elem(c->out, i, c->d.dtype), e = tabcl__load_elem(a, i, c->d.dtype);
    num += (g - e) * (g - e), den += e * e;
  }
  const double err = den > 0 ? sqrt(num / den) : sqrt(num);
  cr_expect(err <= tolerance(c->d.dtype), "%s: %.3g from the unsplit kernel (dtype %d)", what,
            err, (int)c->d.dtype);
}

/* Runs d on `split` and on `whole` (one part), checks both against the
   reference and each other, and that `split` made at least `launches`
   launches. */
static void split_against_whole(tabcl_context *whole, tabcl_context *split, tt_rng *r,
                                sdpa_case *c, int64_t launches, int path, const char *what) {
  const size_t bytes = c->nq * esize(c->d.dtype);
  unsigned char *a = xalloc(bytes);
  memset(a, 0x7F, bytes);
  memset(c->out, 0x7F, bytes);
  (void)r;
  tt_assert_ok(tabcl__sdpa_host_path(whole, &c->d, c->q, c->k, c->v, c->mask, a, path));
  tabcl_stats before, after;
  tabcl_context_stats(split, &before);
  tt_assert_ok(tabcl__sdpa_host_path(split, &c->d, c->q, c->k, c->v, c->mask, c->out, path));
  tabcl_context_stats(split, &after);
  cr_expect_geq((int64_t)(after.kernel_launches - before.kernel_launches), launches,
                "%s: launches", what);
  expect_near(c, a, what);
  case_reference(c);
  case_check(c, what);
  free(a);
}

/* A context told its device ends loops early (a limit that holds two key
   tiles a part) splits the fused kernel's keys into parts within it, in
   every dtype, with masks, causal rows and grouped heads, and with a
   scratch small enough that each launch takes one batch entry and a few
   query tiles: equal to the one-part result within the tolerance (the
   merge adds the parts' sums in another order), and with one part forced
   on the same context, bit for bit. */
static void split_equals_whole(tabcl_context *whole, tabcl_context *split, tt_rng *r,
                               tabcl_sdpa_desc d, const char *what) {
  const tabcl__sdpa_tiles t = tiles_in_use(split, &d);
  /* usable = limit / 2 holds the fixed part and two tiles */
  tabcl__context_set_loop_limit(split, 2 * tabcl__sdpa_fused_loops(&t, 2 * t.bk) + 2);
  sdpa_case c;
  case_fill(&c, &d, r);
  /* a part and its merge a launch */
  const int64_t parts = (d.kv_len + 2 * t.bk - 1) / (2 * t.bk);
  split_against_whole(whole, split, r, &c, parts > 1 ? 2 : 1, TABCL__SDPA_FUSED, what);
  const size_t bytes = c.nq * esize(d.dtype);
  unsigned char *a = xalloc(bytes);
  memcpy(a, c.out, bytes);
  tabcl__context_set_loop_limit(split, 0);
  tt_tune(split, "sdpa.split=1");
  tt_assert_ok(tabcl__sdpa_host_path(whole, &d, c.q, c.k, c.v, c.mask, a, TABCL__SDPA_FUSED));
  tt_assert_ok(tabcl__sdpa_host_path(split, &d, c.q, c.k, c.v, c.mask, c.out, TABCL__SDPA_FUSED));
  cr_expect_eq(memcmp(a, c.out, bytes), 0, "%s: one part differs from the unsplit kernel", what);
  tt_tune(split, "sdpa.split=auto");
  free(a);
  case_free(&c);
}

Test(sdpa, split_keys_bit_for_bit) {
  tt_rng r = {tt_seed("sdpa.split_keys_bit_for_bit")};
  tabcl_context *whole = tt_context(), *split = tt_context();
  tt_tune(whole, "sdpa.split=1");
  for (int dt = TABCL_F32; dt <= TABCL_F64; dt++) {
    if (dt == TABCL_F64 && !has_fp64(whole)) continue;
    tabcl_sdpa_desc d = desc_of(3, 70, 301, 4, 2, 64, (tabcl_dtype)dt);
    d.mask = dt == TABCL_F16 ? TABCL_MASK_BOOL : dt == TABCL_BF16 ? TABCL_MASK_ADD
                                                                   : TABCL_MASK_NONE;
    d.causal = dt == TABCL_F32;
    split_equals_whole(whole, split, &r, d, "split keys");
  }
  /* a scratch buffer that holds a few work-groups' parts: one batch entry
     and a few query tiles a launch */
  tabcl_sdpa_desc d = desc_of(2, 200, 150, 3, 3, 16, TABCL_F32);
  d.causal = 1;   /* no mask: its buffer would not fit the small allocations */
  const tabcl__sdpa_tiles t = tiles_in_use(split, &d);
  const cl_ulong real_alloc = split->info.max_mem_alloc_size;
  int found = 0;
  for (cl_ulong cap = 4096; cap < real_alloc && !found; cap *= 2) {
    split->info.max_mem_alloc_size = cap;
    const tabcl__target tg = split->target;
    tabcl__sdpa_facts f = {0, 0, 0, 0, 2 * tabcl__sdpa_fused_loops(&t, 2 * t.bk) + 2};
    tabcl__sdpa_plan p;
    if (tabcl__sdpa_plan_make(&tg, &f, &d, TABCL__SDPA_FUSED, &p) == TABCL_OK)
      found = p.keys.parts > 1 && p.keys.qtile_step < p.query_tiles && p.launch_step == 1;
    else tabcl__clear_error();
  }
  cr_assert(found, "no allocation size gives a scratch of a few work-groups");
  cr_log_info("a scratch of %llu bytes", (unsigned long long)split->info.max_mem_alloc_size / 4);
  split_equals_whole(whole, split, &r, d, "split keys, small scratch");
  tabcl_context_destroy(split);
  tabcl_context_destroy(whole);
}

/* Key parts forced through the sdpa.split tuning (2, 3, 7, and more parts
   than key tiles, which leaves parts empty) against one part, in every
   dtype the kernel runs: boolean and additive masks with a row of every
   batch entry's first head wholly masked, causal rows, grouped heads, key
   counts that are multiples of neither the key tile nor the parts. */
static void forced_parts(const char *seed, int path) {
  tt_rng r = {tt_seed(seed)};
  tabcl_context *whole = tt_context(), *split = tt_context();
  uint64_t limit = 0;
  tt_assert_ok(tabcl__loop_limit(whole, &limit));
  if (path == TABCL__SDPA_CPU && limit) {
    /* the CPU kernel's loops pass a driver's loop limit at these key
       counts (llvmpipe): the fused kernel takes such calls there */
    cr_log_info("%s ends loops after %llu iterations: no CPU kernel", whole->info.name,
                (unsigned long long)limit);
    tabcl_context_destroy(split);
    tabcl_context_destroy(whole);
    return;
  }
  tt_tune(whole, "sdpa.split=1");
  static const int parts[] = {2, 3, 7, 64};
  for (int dt = TABCL_F32; dt <= TABCL_F64; dt++) {
    if (dt == TABCL_F64 &&
        (!has_fp64(whole) || path == TABCL__SDPA_CPU || path == TABCL__SDPA_MMA))
      continue;
    for (size_t pi = 0; pi < sizeof parts / sizeof parts[0]; pi++) {
      tt_tune(split, "sdpa.split=%d", parts[pi]);
      const int mk = (int)(pi % 3);
      tabcl_sdpa_desc d = desc_of(2, 37 + (int)tt_below(&r, 40), 90 + (int)tt_below(&r, 300),
                                  4, pi % 2 ? 2 : 4, pi == 3 ? 40 : 64, (tabcl_dtype)dt);
      d.mask = mk == 0 ? TABCL_MASK_NONE : mk == 1 ? TABCL_MASK_BOOL : TABCL_MASK_ADD;
      d.causal = pi == 0 || pi == 3;
      sdpa_case c;
      case_fill(&c, &d, &r);
      if (d.mask != TABCL_MASK_NONE)
        for (int64_t b = 0; b < d.batch; b++)
          for (int64_t j = 0; j < d.kv_len; j++) {
            const size_t at = (size_t)((b * d.q_heads * d.q_len + 3) * d.kv_len + j);
            if (d.mask == TABCL_MASK_BOOL) ((uint8_t *)c.mask)[at] = 0;
            else tabcl__store_elem(c.mask, at, d.dtype, -INFINITY);
          }
      char what[96];
      snprintf(what, sizeof what, "%d parts, dtype %d, %lld x %lld keys, mask %d, causal %d",
               parts[pi], dt, (long long)d.q_len, (long long)d.kv_len, mk, d.causal);
      split_against_whole(whole, split, &r, &c, 2, path, what);
      case_free(&c);
    }
  }
  tabcl_context_destroy(split);
  tabcl_context_destroy(whole);
}

Test(sdpa, forced_key_parts_equal_one_part) {
  forced_parts("sdpa.forced_key_parts_equal_one_part", TABCL__SDPA_FUSED);
}
/* The CPU kernel (forced, as everywhere in these tests) splits the same way. */
Test(sdpa, forced_key_parts_cpu_kernel) {
  forced_parts("sdpa.forced_key_parts_cpu_kernel", TABCL__SDPA_CPU);
}
/* Whether the default device offers the tensor-core kernel for f16 at
   head dim `dim`. */
static int mma_offered(int dim) {
  tabcl_context *ctx = tt_context();
  tabcl_sdpa_desc probe = desc_of(1, 2, 2, 1, 1, dim, TABCL_F16);
  tabcl__sdpa_mma_shape m;
  const int offered = tabcl__sdpa_mma_tiles(ctx, &probe, &m);
  tabcl_context_destroy(ctx);
  return offered;
}

/* So does the tensor-core kernel, where the device offers it (NVIDIA; on
   others tensor_core_path checks that forcing it is refused). */
Test(sdpa, forced_key_parts_tensor_cores) {
  if (!mma_offered(64)) cr_skip_test("no tensor-core kernel on this device");
  forced_parts("sdpa.forced_key_parts_tensor_cores", TABCL__SDPA_MMA);
}

Test(sdpa, two_hundred_shapes_build_nothing_new) {
  tt_rng r = {tt_seed("sdpa.two_hundred_shapes_build_nothing_new")};
  tabcl_context *ctx = tt_context();
  static const int dims[] = {16, 24};
  for (int dt = 0; dt < 2; dt++)
    for (int di = 0; di < 2; di++) {
      tabcl_sdpa_desc d = desc_of(1, 3, 3, 1, 1, dims[di], (tabcl_dtype)dt);
      tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "warm-up"));
    }
  tabcl_stats before, after;
  tabcl_context_stats(ctx, &before);
  for (int n = 0; n < 200; n++) {
    int hkv = 1 + (int)tt_below(&r, 2);
    tabcl_sdpa_desc d = desc_of(1 + (int)tt_below(&r, 3), 1 + (int)tt_below(&r, 20),
                                (int)tt_below(&r, 20), hkv * (1 + (int)tt_below(&r, 2)), hkv,
                                dims[tt_below(&r, 2)], (tabcl_dtype)tt_below(&r, 2));
    d.causal = (int)tt_below(&r, 2);
    d.mask = (tabcl_mask_kind)tt_below(&r, 3);
    d.mask_batch_broadcast = (int)tt_below(&r, 2);
    d.mask_head_broadcast = (int)tt_below(&r, 2);
    if (tt_below(&r, 4) == 0) d.scale = tt_uniform(&r);
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_AUTO, "200 shapes"));
  }
  tabcl_context_stats(ctx, &after);
  cr_expect_eq(after.programs_built, before.programs_built, "programs were built per shape");
  cr_expect_eq(after.programs_from_cache, before.programs_from_cache);
  tabcl_context_destroy(ctx);
}

/* Malformed sdpa.fused tuning entries are refused with a message naming
   them, without arithmetic on their numbers (no query tile, no work-items,
   an absurd chunk or prefetch value; the sanitizer build fails on a
   division by zero or an overflow), and leave the tiles as they were; an
   entry that parses but cannot fit is refused by the call that would use
   it, which then changes nothing; a sound one is taken. */
Test(sdpa, malformed_tile_overrides_refused) {
  tabcl_context *ctx = tt_context();
  tabcl__sdpa_tiles before, t;
  cr_assert(tabcl__sdpa_choose_tiles(ctx, TABCL_F32, 16, &before));
  static const char *const bad[] = {
      "sdpa.fused.d16=0x16",         "sdpa.fused.d16=64x16/0",  "sdpa.fused.d16=64x16p7",
      "sdpa.fused.d16=64x16k2000000000", "sdpa.fused.d16=64x16t0", "sdpa.fused.d16=2000000000x16/4",
      "sdpa.fused.d16=64x64/8",      "sdpa.fused.d16=16x24/1",  "sdpa.fused.d17=32x16",
      "sdpa.fused.d16=32x16/2q1",    "sdpa.fused.d16="};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_expect_eq(tabcl__context_tune(ctx, bad[i]), TABCL_INVALID_ARGUMENT, "%s", bad[i]);
    cr_expect(strstr(tabcl_last_error(), bad[i]) != NULL, "%s: message %s", bad[i],
              tabcl_last_error());
    cr_assert(tabcl__sdpa_choose_tiles(ctx, TABCL_F32, 16, &t));
    cr_expect(t.bq == before.bq && t.bk == before.bk && t.nt == before.nt, "%s changed tiles",
              bad[i]);
  }
  /* K chunks of 12 columns do not divide a row of 16 */
  tt_tune(ctx, "sdpa.fused.d16=64x16k12");
  cr_expect(!tabcl__sdpa_choose_tiles(ctx, TABCL_F32, 16, &t));
  float q[2 * 16], out[2 * 16];
  for (int i = 0; i < 32; i++) q[i] = 0.25f * (float)(i % 5), out[i] = -7.0f;
  tabcl_sdpa_desc d = desc_of(1, 2, 2, 1, 1, 16, TABCL_F32);
  /* forced onto the fused kernel: on NVIDIA the automatic choice takes the
     tensor-core kernel, which this tuning does not concern */
  cr_expect_eq(tabcl__sdpa_host_path(ctx, &d, q, q, q, NULL, out, TABCL__SDPA_FUSED),
               TABCL_INVALID_ARGUMENT);
  cr_expect(strstr(tabcl_last_error(), "sdpa.fused.d16") != NULL, "message: %s",
            tabcl_last_error());
  for (int i = 0; i < 32; i++) cr_expect_eq(out[i], -7.0f, "out changed at %d", i);
  tt_tune(ctx, "sdpa.fused.d16=32x16/2p0");
  cr_assert(tabcl__sdpa_choose_tiles(ctx, TABCL_F32, 16, &t));
  cr_expect(t.bq == 32 && t.bk == 16 && t.nt == 64 && t.prefetch == 0,
            "head dim 16: %dx%d, %d work-items, p%d; 32x16, 64, p0 expected", t.bq, t.bk, t.nt,
            t.prefetch);
  tabcl_context_destroy(ctx);
}

/* The tile tuning may also set the work-items per query row ("/f"): four
   (small register blocks) and one (large ones) compute the same attention. */
Test(sdpa, work_items_per_row_override) {
  tt_rng r = {tt_seed("sdpa.work_items_per_row_override")};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "sdpa.fused.d16=64x64/4;sdpa.fused.d32=32x24/1");
  tabcl__sdpa_tiles t;
  cr_assert(tabcl__sdpa_choose_tiles(ctx, TABCL_F32, 16, &t));
  cr_expect(t.bq == 64 && t.bk == 64 && t.nt == 256, "head dim 16: %dx%d, %d work-items", t.bq,
            t.bk, t.nt);
  cr_assert(tabcl__sdpa_choose_tiles(ctx, TABCL_F32, 32, &t));
  cr_expect(t.bq == 32 && t.bk == 24 && t.nt == 32, "head dim 32: %dx%d, %d work-items", t.bq,
            t.bk, t.nt);
  static const int dims[] = {16, 30};
  for (int i = 0; i < 2; i++) {
    /* one key tile, then several */
    tabcl_sdpa_desc d = desc_of(3, 70, i ? 50 : 20, 2, 1, dims[i], TABCL_F32);
    d.causal = i;
    d.mask = i ? TABCL_MASK_BOOL : TABCL_MASK_ADD;
    run_tuned(ctx, &r, &d, "work-items per row");
  }
  tabcl_context_destroy(ctx);
}

/* K and V passing through local memory in chunks (K by head-dim columns,
   V by keys), with other splits of S over the work-items: key counts below,
   at and past one V chunk and one key tile, so partial and skipped chunks
   run, each with a mask kind and causality. */
/* One chunked shape per test: each build is minutes cold on PoCL (the
   prefetched head dim 128 the longest), and separate tests let the suite's
   two Criterion workers build them side by side. */
typedef struct chunk_case {
  int dim, bq, bk, nt, tks, kc, vk, prefetch;
  const char *tune;
} chunk_case;

static void chunked_case(const char *seed, const chunk_case *w, int both_dtypes) {
  tt_rng r = {tt_seed(seed)};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "%s", w->tune);
  static const int lks[] = {5, 16, 23, 64, 97};
  tabcl__sdpa_tiles t;
  /* a device too small for the shape (llvmpipe's 32 KiB) refuses it below */
  if (tabcl__sdpa_choose_tiles(ctx, TABCL_F32, w->dim, &t))
    cr_expect(t.bq == w->bq && t.bk == w->bk && t.nt == w->nt && t.tks == w->tks &&
                  t.kc == w->kc && t.vk == w->vk && t.prefetch == w->prefetch,
              "head dim %d: %dx%d, %d work-items, t%d k%d v%d p%d", w->dim, t.bq, t.bk, t.nt,
              t.tks, t.kc, t.vk, t.prefetch);
  for (size_t j = 0; j < sizeof lks / sizeof lks[0]; j++) {
    const int dt = both_dtypes ? (int)(j % 2) : TABCL_F32;
    tabcl_sdpa_desc d = desc_of(2, 1 + (int)tt_below(&r, 70), lks[j], 2, 1,
                                w->dim - (int)(j % 2) * 3, (tabcl_dtype)dt);
    d.causal = (int)(j % 2);
    d.mask = (tabcl_mask_kind)(j % 3);
    run_tuned(ctx, &r, &d, "chunked tiles");
  }
  tabcl_context_destroy(ctx);
}

/* Head dim 128 forces the register prefetch of its 8-vector shares (the
   default reads shares past 4 vectors straight into local memory, as head
   dim 256 does below), in f32 and f16. */
Test(sdpa, chunked_tiles_d128_prefetched) {
  static const chunk_case w = {128, 32, 64, 64, 16, 32, 16, 1, "sdpa.fused.d128=32x64/2t16k32v16p1"};
  chunked_case("sdpa.chunked_tiles_d128", &w, 1);
}

/* Head dim 80: 3-vector shares, prefetched. */
Test(sdpa, chunked_tiles_d80) {
  static const chunk_case w = {80, 32, 32, 64, 4, 4, 8, 1, "sdpa.fused.d80=32x32/2t4k4v8"};
  chunked_case("sdpa.chunked_tiles_d80", &w, 0);
}

Test(sdpa, chunked_tiles_d256_unprefetched) {
  static const chunk_case w = {256, 16, 32, 64, 32, 64, 8, 0, "sdpa.fused.d256=16x32/4t32k64v8"};
  chunked_case("sdpa.chunked_tiles_d256", &w, 0);
}

/* ---- the CLBlast path ---- */

Test(sdpa, fused_and_clblast_agree) {
  if (!tabcl__sdpa_clblast_available()) cr_skip_test("built without CLBlast");
  tt_rng r = {tt_seed("sdpa.fused_and_clblast_agree")};
  tabcl_context *ctx = tt_context();
  tabcl_sdpa_desc ds[4];
  ds[0] = desc_of(2, 17, 29, 4, 2, 64, TABCL_F32);
  ds[0].mask = TABCL_MASK_BOOL, ds[0].causal = 1, ds[0].mask_head_broadcast = 1;
  ds[1] = desc_of(3, 9, 12, 2, 1, 16, TABCL_F16);
  ds[1].mask = TABCL_MASK_ADD;
  ds[2] = desc_of(2, 5, 0, 2, 1, 16, TABCL_F32);
  ds[3] = desc_of(2, 7, 11, 2, 2, 16, TABCL_F64);
  ds[3].causal = 1;
  for (int i = 0; i < 4; i++) {
    if (ds[i].dtype == TABCL_F64 && !has_fp64(ctx)) continue;
    sdpa_case c;
    case_fill(&c, &ds[i], &r);
    case_reference(&c);
    size_t bytes = c.nq * esize(ds[i].dtype);
    unsigned char *fused = xalloc(bytes);
    memset(fused, 0x7F, bytes);
    memset(c.out, 0x7F, bytes);
    tt_assert_ok(tabcl__sdpa_host_path(ctx, &ds[i], c.q, c.k, c.v, c.mask, fused,
                                       TABCL__SDPA_FUSED));
    tt_assert_ok(tabcl__sdpa_host_path(ctx, &ds[i], c.q, c.k, c.v, c.mask, c.out,
                                       TABCL__SDPA_CLBLAST));
    case_check(&c, "clblast");
    memcpy(c.out, fused, bytes);
    case_check(&c, "fused");
    free(fused);
    case_free(&c);
  }
  tabcl_context_destroy(ctx);
}

/* ---- the device-buffer variant ---- */

Test(sdpa, cl_variant_matches_host) {
  tt_rng r = {tt_seed("sdpa.cl_variant_matches_host")};
  tabcl_options o = {0};
  o.max_batch_per_launch = 3;
  tabcl_context *ctx = tt_context_with(&o);
  tabcl_sdpa_desc d = desc_of(8, 19, 23, 4, 1, 32, TABCL_F32);
  d.mask = TABCL_MASK_BOOL;
  d.causal = 1;
  sdpa_case c;
  case_fill(&c, &d, &r);
  cl_context cl = tabcl_context_cl_context(ctx);
  cl_int err;
  cl_mem q = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nq * 4, c.q, &err);
  cl_mem k = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nk * 4, c.k, &err);
  cl_mem v = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nk * 4, c.v, &err);
  cl_mem m = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nm, c.mask, &err);
  cl_mem out = clCreateBuffer(cl, CL_MEM_READ_WRITE, c.nq * 4, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  cl_event ev = NULL;
  tt_assert_ok(tabcl_sdpa_cl(ctx, &d, q, k, v, m, out, 0, NULL, &ev));
  cr_assert_not_null(ev);
  memset(c.out, 0x7F, c.nq * 4);
  cr_assert_eq(clEnqueueReadBuffer(tabcl_context_cl_queue(ctx), out, CL_TRUE, 0, c.nq * 4, c.out,
                                   1, &ev, NULL), CL_SUCCESS);
  clReleaseEvent(ev);
  case_reference(&c);
  case_check(&c, "cl variant");
  cr_expect_eq(tabcl_sdpa_cl(ctx, &d, q, k, v, NULL, out, 0, NULL, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_sdpa_cl(ctx, &d, q, k, v, m, out, 1, NULL, NULL), TABCL_INVALID_ARGUMENT);
  clReleaseMemObject(q), clReleaseMemObject(k), clReleaseMemObject(v), clReleaseMemObject(m);
  clReleaseMemObject(out);
  case_free(&c);
  tabcl_context_destroy(ctx);
}

/* ---- invalid descriptors ---- */

Test(sdpa, invalid_descriptors) {
  tabcl_context *ctx = tt_context();
  float buf[64];
  for (int i = 0; i < 64; i++) buf[i] = 1.0f + (float)i;
  float out[64];
  for (int i = 0; i < 64; i++) out[i] = -3.0f;
  const tabcl_sdpa_desc good = desc_of(1, 2, 2, 2, 1, 16, TABCL_F32);
  struct {
    const char *field;
    tabcl_sdpa_desc d;
    int null_which;   /* 1 q, 2 k, 3 v, 4 out, 5 mask */
  } cases[20];
  int n = 0;
#define BAD(f, expr, nw)          \
  do {                            \
    cases[n].field = f;           \
    cases[n].d = good;            \
    { tabcl_sdpa_desc *d = &cases[n].d; (void)d; expr; } \
    cases[n].null_which = nw;     \
    n++;                          \
  } while (0)
  BAD("q_heads", (d->q_heads = 3, d->kv_heads = 2), 0);
  BAD("batch", d->batch = -1, 0);
  BAD("q_len", d->q_len = -2, 0);
  BAD("kv_len", d->kv_len = -1, 0);
  BAD("q_heads", d->q_heads = 0, 0);
  BAD("kv_heads", d->kv_heads = 0, 0);
  BAD("head_dim", d->head_dim = 0, 0);
  BAD("negative", d->kv_heads = -1, 0);
  BAD("dtype", d->dtype = (tabcl_dtype)9, 0);
  BAD("mask kind", d->mask = (tabcl_mask_kind)7, 0);
  BAD("scale", d->scale = NAN, 0);
  BAD("mask_query_broadcast", (d->mask = TABCL_MASK_BOOL, d->mask_query_broadcast = 2), 0);
  BAD("mask_query_broadcast", d->mask_query_broadcast = -1, 0);
  BAD("q is NULL", (void)0, 1);
  BAD("k is NULL", (void)0, 2);
  BAD("v is NULL", (void)0, 3);
  BAD("out is NULL", d->mask = TABCL_MASK_NONE, 4);
  BAD("mask is NULL", d->mask = TABCL_MASK_BOOL, 5);
#undef BAD
  for (int i = 0; i < n; i++) {
    const void *q = buf, *k = buf, *v = buf, *m = cases[i].null_which == 5 ? NULL : buf;
    void *o = out;
    if (cases[i].null_which == 1) q = NULL;
    if (cases[i].null_which == 2) k = NULL;
    if (cases[i].null_which == 3) v = NULL;
    if (cases[i].null_which == 4) o = NULL;
    tabcl_status s = tabcl_sdpa_host(ctx, &cases[i].d, q, k, v, m, o);
    cr_expect_eq(s, TABCL_INVALID_ARGUMENT, "case %d (%s): %s", i, cases[i].field,
                 tabcl_status_name(s));
    cr_expect(strstr(tabcl_last_error(), cases[i].field) != NULL, "case %d: message \"%s\" names %s",
              i, tabcl_last_error(), cases[i].field);
  }
  for (int i = 0; i < 64; i++) cr_expect_eq(out[i], -3.0f);
  cr_expect_eq(tabcl_sdpa_host(NULL, &good, buf, buf, buf, NULL, out), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_sdpa_host(ctx, NULL, buf, buf, buf, NULL, out), TABCL_INVALID_ARGUMENT);
  tabcl_context_destroy(ctx);
}

/* ---- injected failures ---- */

#ifdef TABCL_FAULT_INJECTION
/* split: allocations hold two batch entries, so uploads come in slices;
   2: and the keys take parts of one key tile (a forced loop limit). */
static void sweep_sdpa(int which, int path, int split) {
  tt_rng r = {tt_seed("sdpa.sweep")};
  tabcl_options o = {0};
  o.max_batch_per_launch = 2;
  tabcl_context *ctx = tt_context_with(&o);
  tabcl_sdpa_desc d = desc_of(3, 5, split == 2 ? 150 : 6, 2, 1, 16, TABCL_F16);
  d.mask = TABCL_MASK_ADD;
  sdpa_case c;
  case_fill(&c, &d, &r);
  size_t bytes = c.nq * 2;
  if (split == 1) ctx->info.max_mem_alloc_size = 2 * (bytes / 3);
  if (split == 2) {
    const tabcl__sdpa_tiles t = tiles_in_use(ctx, &d);
    tabcl__context_set_loop_limit(ctx, 2 * tabcl__sdpa_fused_loops(&t, t.bk) + 2);
  }
  /* builds the programs, so the sweep also covers running from the cache */
  tt_assert_ok(tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, c.out, path));
  for (long n = 1; n < 10000; n++) {
    memset(c.out, 0x5A, bytes);
    tt_live base = tt_live_now();
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_status s = tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, c.out, path);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    tt_expect_no_leak(base);
    if (fired) {
      cr_expect_eq(s, TABCL_OUT_OF_MEMORY, "failure %ld gave %s: %s", n, tabcl_status_name(s),
                   tabcl_last_error());
      int untouched = 1;
      for (size_t i = 0; i < bytes; i++) untouched &= ((unsigned char *)c.out)[i] == 0x5A;
      cr_expect(untouched, "failure %ld changed out", n);
      continue;
    }
    tt_assert_ok(s);
    case_reference(&c);
    case_check(&c, "after the sweep");
    cr_log_info("sdpa %s sweep: %ld points", which ? "OpenCL" : "alloc", n - 1);
    break;
  }
  case_free(&c);
  tabcl_context_destroy(ctx);
}
Test(sdpa, injected_alloc_failures) {
  sweep_sdpa(0, TABCL__SDPA_FUSED, 0);
  sweep_sdpa(0, TABCL__SDPA_FUSED, 1);
  sweep_sdpa(0, TABCL__SDPA_FUSED, 2);
}
Test(sdpa, injected_cl_failures) {
  sweep_sdpa(1, TABCL__SDPA_FUSED, 0);
  sweep_sdpa(1, TABCL__SDPA_FUSED, 1);
  sweep_sdpa(1, TABCL__SDPA_FUSED, 2);
}
Test(sdpa, injected_cl_failures_clblast) {
  if (!tabcl__sdpa_clblast_available()) cr_skip_test("built without CLBlast");
  sweep_sdpa(1, TABCL__SDPA_CLBLAST, 0);
}
#endif

Test(sdpa, selfcheck) {
  tabcl_context *ctx = tt_context();
  tt_assert_ok(tabcl__selfcheck_sdpa(ctx));
  tabcl_context_destroy(ctx);
}

/* ---- tiny shapes for oclgrind: every kernel and variant once ---- */

Test(oclgrind_sdpa, fused_variants) {
  tt_rng r = {tt_seed("oclgrind_sdpa.fused_variants")};
  tabcl_context *ctx = tt_context();
  for (int dt = 0; dt < 4; dt++) {
    if (dt == TABCL_F64 && !has_fp64(ctx)) continue;
    tabcl_sdpa_desc d = desc_of(1, 3, dt == 0 ? 40 : 5, 2, 1, dt == 1 ? 20 : 16, (tabcl_dtype)dt);
    d.mask = dt == 0 ? TABCL_MASK_BOOL : TABCL_MASK_ADD;
    d.causal = dt & 1;
    d.mask_head_broadcast = dt == 2;
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_FUSED, "oclgrind fused"));
  }
  tabcl_context_destroy(ctx);
}

/* Key parts and their merge (sdpa.split=3), on both kernels that split:
   masks of both kinds, a causal call and grouped heads. */
Test(oclgrind_sdpa, key_split) {
  tt_rng r = {tt_seed("oclgrind_sdpa.key_split")};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "sdpa.split=3");
  for (int dt = 0; dt < 4; dt++) {
    if (dt == TABCL_F64 && !has_fp64(ctx)) continue;
    tabcl_sdpa_desc d = desc_of(1, 3, 150, 2, 1, dt == 1 ? 20 : 16, (tabcl_dtype)dt);
    d.mask = dt == 0 ? TABCL_MASK_BOOL : TABCL_MASK_ADD;
    d.causal = dt == 3;
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_FUSED, "oclgrind fused, key parts"));
    if (dt == TABCL_F64) continue;
    d.q_len = 5, d.kv_len = 70;
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_CPU, "oclgrind CPU kernel, key parts"));
  }
  tabcl_context_destroy(ctx);
}

/* Whether `path` may refuse d here: the CPU kernel where the driver ends
   loops early (llvmpipe): then the fused kernel takes such calls. */
static int refused_by_loop_limit(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                                 tabcl_status s) {
  if (s != TABCL_UNSUPPORTED || path != TABCL__SDPA_CPU) return 0;
  uint64_t limit = 0;
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  return limit > 0 && tabcl__sdpa_cpu_loops(d, tabcl__sdpa_cpu_tiles(&ctx->target)) > limit / 2;
}

/* The CPU kernel (cl/sdpa_cpu.cl), forced, on every device (it is plain
   OpenCL C; the automatic choice takes it on CPUs only): every dtype it
   runs, head dims on and off its 16- and 4-element fast paths, masks of
   both kinds with broadcasts, causality, grouped heads, lengths around its
   16-row and 16-key blocks, f32 key rows on both sides of the in-place
   limit; and what it does not run is refused. */
static void cpu_kernel_cases(tabcl_context *ctx, tt_rng *r, int rounds, int max_len) {
  /* a multiple of 16, one of neither 16 nor 4, the tabular width (20,
     80 and 128 come through the automatic choice in the tests above) */
  static const int dims[] = {16, 33, 64};
  int ran = 0;
  for (int i = 0; i < rounds; i++) {
    const tabcl_dtype dt = (tabcl_dtype)(i % 3);
    const int lq = 1 + (int)tt_below(r, (uint64_t)max_len);
    const int lk = i % 5 == 4 ? TABCL__SDPA_CPU_DIRECT_KEYS + 1 + (int)tt_below(r, 40)
                              : 1 + (int)tt_below(r, (uint64_t)max_len);
    const int hkv = 1 + (int)tt_below(r, 2);
    tabcl_sdpa_desc d = desc_of(1 + (int64_t)tt_below(r, 2), lq, lk, hkv * (1 + (int)tt_below(r, 2)),
                                hkv, dims[tt_below(r, 3)], dt);
    d.causal = tt_below(r, 3) == 0;
    const int mk = (int)tt_below(r, 3);
    d.mask = mk == 0 ? TABCL_MASK_NONE : mk == 1 ? TABCL_MASK_BOOL : TABCL_MASK_ADD;
    d.mask_head_broadcast = mk && tt_below(r, 2);
    d.mask_batch_broadcast = mk && tt_below(r, 2);
    char what[96];
    snprintf(what, sizeof what, "CPU kernel, case %d (dtype %d, %d x %d, d %d, mask %d, causal %d)",
             i, (int)dt, lq, lk, (int)d.head_dim, mk, d.causal);
    const tabcl_status st = run_case(ctx, r, &d, TABCL__SDPA_CPU, what);
    if (st == TABCL_UNSUPPORTED) {
      /* only where the driver ends loops before this case's work-items would */
      cr_expect(refused_by_loop_limit(ctx, &d, TABCL__SDPA_CPU, st), "%s: refused: %s", what,
                tabcl_last_error());
      continue;
    }
    tt_assert_ok(st);
    ran++;
  }
  cr_expect_gt(ran, 0, "no case ran on the CPU kernel");
}

Test(sdpa, cpu_kernel_forced) {
  tt_rng r = {tt_seed("sdpa.cpu_kernel_forced")};
  tabcl_context *ctx = tt_context();
  cpu_kernel_cases(ctx, &r, 12, 50);
  tabcl_sdpa_desc wide = desc_of(1, 4, 4, 1, 1, 160, TABCL_F32);
  cr_expect_eq(run_case(ctx, &r, &wide, TABCL__SDPA_CPU, "head dim 160"), TABCL_UNSUPPORTED);
  if (has_fp64(ctx)) {
    tabcl_sdpa_desc f64 = desc_of(1, 4, 4, 1, 1, 16, TABCL_F64);
    cr_expect_eq(run_case(ctx, &r, &f64, TABCL__SDPA_CPU, "f64"), TABCL_UNSUPPORTED);
  }
  tabcl_context_destroy(ctx);
}

Test(oclgrind_sdpa, cpu_kernel) {
  tt_rng r = {tt_seed("oclgrind_sdpa.cpu_kernel")};
  tabcl_context *ctx = tt_context();
  cpu_kernel_cases(ctx, &r, 6, 20);
  tabcl_context_destroy(ctx);
}

Test(oclgrind_sdpa, small_tiles) {
  tt_rng r = {tt_seed("oclgrind_sdpa.small_tiles")};
  tabcl_context *ctx = tt_context();
  /* 16 KiB: 64 x 24 for head dim 16, 16 x 8 with 32 work-items for 128 */
  ctx->info.local_mem_size = 16384;
  static const int dims[] = {16, 128};
  for (int i = 0; i < 2; i++) {
    tabcl_sdpa_desc d = desc_of(1, 3, 19, 1, 1, dims[i], TABCL_F32);
    d.causal = i;
    d.mask = TABCL_MASK_ADD;
    tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_FUSED, "oclgrind small tiles"));
  }
  tabcl_context_destroy(ctx);
}

/* Four work-items per query row (the tile tuning's "/4"): f32 with a
   boolean mask. */
Test(oclgrind_sdpa, four_work_items_per_row) {
  tt_rng r = {tt_seed("oclgrind_sdpa.four_work_items_per_row")};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "sdpa.fused.d16=16x8/4");
  tabcl_sdpa_desc d = desc_of(1, 3, 5, 2, 1, 16, TABCL_F32);
  d.mask = TABCL_MASK_BOOL;
  run_tuned(ctx, &r, &d, "oclgrind four per row");
  tabcl_context_destroy(ctx);
}

/* Key tiles that skip the per-entry tests (no mask, inside both lengths,
   at or below the causal diagonal) beside ones that need them: 16 x 16
   tiles over 40 queries and keys, causal, so each query tile has a plain
   key tile, a diagonal one and, for the last, a partial one. */
Test(oclgrind_sdpa, unmasked_full_tiles) {
  tt_rng r = {tt_seed("oclgrind_sdpa.unmasked_full_tiles")};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "sdpa.fused.d16=16x16/2");
  tabcl__sdpa_tiles t;
  cr_assert(tabcl__sdpa_choose_tiles(ctx, TABCL_F32, 16, &t));
  cr_assert(t.bq == 16 && t.bk == 16, "tiles %d x %d, not the override's", t.bq, t.bk);
  tabcl_sdpa_desc d = desc_of(1, 40, 40, 2, 1, 16, TABCL_F32);
  d.causal = 1;
  tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_FUSED, "oclgrind plain tiles"));
  d.causal = 0;
  tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_FUSED, "oclgrind plain tiles"));
  tabcl_context_destroy(ctx);
}

/* K and V in chunks (tile tuning suffixes): K by 4 head-dim columns,
   V by 8 keys, 4 work-items across the keys of S; a key count that leaves
   the last V chunk partial and the second skipped. */
Test(oclgrind_sdpa, chunked_tiles) {
  tt_rng r = {tt_seed("oclgrind_sdpa.chunked_tiles")};
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "sdpa.fused.d16=16x16/2t4k4v8");
  tabcl_sdpa_desc d = desc_of(1, 3, 21, 2, 1, 16, TABCL_F32);
  d.mask = TABCL_MASK_ADD;
  d.causal = 1;
  tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_FUSED, "oclgrind chunks"));
  tabcl_context_destroy(ctx);
}

/* The key split for a loop limit on a tiny shape: the parts and their merge. */
Test(oclgrind_sdpa, split_keys) {
  tt_rng r = {tt_seed("oclgrind_sdpa.split_keys")};
  tabcl_context *whole = tt_context(), *split = tt_context();
  tabcl_sdpa_desc d = desc_of(1, 9, 37, 1, 1, 16, TABCL_F32);
  d.mask = TABCL_MASK_BOOL;
  split_equals_whole(whole, split, &r, d, "split keys under oclgrind");
  tabcl_context_destroy(split);
  tabcl_context_destroy(whole);
}

Test(oclgrind_sdpa, softmax_and_conversions) {
  if (!tabcl__sdpa_clblast_available()) cr_skip_test("built without CLBlast");
  tt_rng r = {tt_seed("oclgrind_sdpa.softmax_and_conversions")};
  tabcl_context *ctx = tt_context();
  tabcl_sdpa_desc d = desc_of(1, 2, 3, 2, 1, 16, TABCL_BF16);
  d.mask = TABCL_MASK_ADD;
  d.causal = 1;
  tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_CLBLAST, "oclgrind clblast"));
  tabcl_context_destroy(ctx);
}

/* ---- the NVIDIA tensor-core path (f32, f16, bf16; sdpa_mma.c) ---- */

/* Where the tensor-core kernel may run (an NVIDIA device) it must pass its
   device check in f32, f16 and bf16, match the host loop on every shape
   (within each dtype's tolerance: 1e-5 for f32 computed with TF32 splits), give the same bits
   sliced or not, build nothing new per shape, and be what the automatic
   choice runs. Elsewhere forcing it must be refused. */
Test(sdpa, tensor_core_path) {
  tt_rng r = {tt_seed("sdpa.tensor_core_path")};
  tabcl_context *ctx = tt_context();
  tabcl_sdpa_desc probe = desc_of(1, 2, 2, 1, 1, 64, TABCL_F16);
  tabcl__sdpa_mma_shape m;
  if (!tabcl__sdpa_mma_tiles(ctx, &probe, &m)) {
    cr_expect(!ctx->info.is_nvidia || getenv("TABCL_SDPA_MMA"),
              "an NVIDIA device must offer the tensor-core kernel");
    cr_expect_eq(run_case(ctx, &r, &probe, TABCL__SDPA_MMA, "forced"), TABCL_UNSUPPORTED);
    cr_log_info("tensor-core attention: not offered on %s; forcing it is refused",
                ctx->info.name);
    tabcl_context_destroy(ctx);
    return;
  }
  for (int dt = TABCL_F32; dt <= TABCL_BF16; dt++) {
    tabcl_status s = tabcl__sdpa_mma_verdict(ctx, (tabcl_dtype)dt);
    cr_assert_eq(s, TABCL_OK, "device check (dtype %d): %s", dt, tabcl_last_error());
  }
  static const int lens[] = {1, 2, 17, 54, 65, 129};
  static const int dims[] = {16, 33, 40, 64, 80, 128};
  static const int groups[] = {1, 2, 8};
  int n = 0;
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
      for (int dt = TABCL_F32; dt <= TABCL_BF16; dt++, n++) {
        const int g = groups[n % 3], lk = n % 4 == 3 ? lens[(li + 2) % 6] : lens[li];
        tabcl_sdpa_desc d = desc_of(1 + n % 3, lens[li], lk, 2 * g, 2, dims[di], (tabcl_dtype)dt);
        d.causal = n % 5 == 1;
        d.mask = (tabcl_mask_kind)(n % 3);
        d.mask_batch_broadcast = n % 2, d.mask_head_broadcast = n % 7 < 3;
        if (n % 11 == 4) d.scale = 0.3;
        tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_MMA, "tensor cores"));
      }
  /* The 16-bit kernel's other builds (sdpa.mma.*: the kernel without the
     cp.async pipeline, two 16-query tiles a warp, P in one, two and three
     parts, eight warps, other key tiles) on shapes that cross key tiles,
     with and without a head dim that is a multiple of 8. */
  static const char *const variants[] = {"sdpa.mma.pipe=0",   "sdpa.mma.mtiles=2",
                                         "sdpa.mma.psplit=1", "sdpa.mma.psplit=2",
                                         "sdpa.mma.psplit=3", "sdpa.mma.warps=8",
                                         "sdpa.mma.keys=16",  "sdpa.mma.keys=32"};
  for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; vi++) {
    tt_tune(ctx, "%s", variants[vi]);
    for (int dt = TABCL_F16; dt <= TABCL_BF16; dt++)
      for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        tabcl_sdpa_desc d = desc_of(2, 129, 200, 4, 2, dims[di], (tabcl_dtype)dt);
        d.causal = di % 2;
        d.mask = (tabcl_mask_kind)(di % 3);
        tt_assert_ok(run_case(ctx, &r, &d, TABCL__SDPA_MMA, variants[vi]));
      }
    tt_tune(ctx, "sdpa.mma.pipe=auto;sdpa.mma.mtiles=auto;sdpa.mma.psplit=auto;"
                 "sdpa.mma.warps=4;sdpa.mma.keys=auto");
  }

  /* The automatic choice is this kernel: same bits as forcing it; and
     slices of 7 batch entries give the same bits as one launch. */
  tabcl_options o = {0};
  o.max_batch_per_launch = 7;
  tabcl_context *sliced = tt_context_with(&o);
  tabcl_sdpa_desc d = desc_of(23, 54, 54, 8, 8, 64, TABCL_F16);
  d.mask = TABCL_MASK_ADD;
  sdpa_case c;
  case_fill(&c, &d, &r);
  const size_t bytes = c.nq * 2;
  unsigned char *a = xalloc(bytes), *b = xalloc(bytes);
  memset(a, 0x7F, bytes);
  memset(b, 0x7F, bytes);
  tt_assert_ok(tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, a, TABCL__SDPA_MMA));
  tt_assert_ok(tabcl_sdpa_host(sliced, &d, c.q, c.k, c.v, c.mask, b));
  cr_expect_eq(memcmp(a, b, bytes), 0, "automatic and sliced differ from forced, one launch");
  free(a), free(b);
  case_free(&c);

  /* 200 calls of other lengths and batches build nothing new. */
  tabcl_stats before, after;
  tabcl_context_stats(sliced, &before);
  for (int i = 0; i < 200; i++) {
    tabcl_sdpa_desc e = desc_of(1 + i % 5, 1 + (i * 7) % 90, 1 + (i * 13) % 100, 8, 8, 64,
                                TABCL_F16);
    tt_assert_ok(run_case(sliced, &r, &e, TABCL__SDPA_AUTO, "200 shapes"));
  }
  tabcl_context_stats(sliced, &after);
  cr_expect_eq(after.programs_built + after.programs_from_cache,
               before.programs_built + before.programs_from_cache, "a shape built a program");
  tabcl_context_destroy(sliced);
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
Test(sdpa, injected_cl_failures_tensor_cores) {
  if (!mma_offered(16)) cr_skip_test("no tensor-core kernel on this device");
  sweep_sdpa(1, TABCL__SDPA_MMA, 0);
}
#endif

/* ---- the CLBlast path past CLBlast's 32-bit element offsets ---- */

/* With the index limit lowered to a few thousand elements, f32 (and f64)
   calls take many slices, each seen by CLBlast through sub-buffer windows;
   the result must equal the unwindowed one bit for bit, and injected
   failures while opening windows must leak nothing and change nothing. */
Test(sdpa, clblast_windows_past_the_index_limit) {
  if (!tabcl__sdpa_clblast_available()) cr_skip_test("built without CLBlast");
  tt_rng r = {tt_seed("sdpa.clblast_windows_past_the_index_limit")};
  tabcl_context *ctx = tt_context();
  for (int dt = TABCL_F32; dt <= TABCL_F64; dt += TABCL_F64 - TABCL_F32) {
    if (dt == TABCL_F64 && !has_fp64(ctx)) continue;
    tabcl_sdpa_desc d = desc_of(9, 13, 21, 4, 2, 24, (tabcl_dtype)dt);
    d.mask = TABCL_MASK_BOOL;
    d.causal = 1;
    sdpa_case c;
    case_fill(&c, &d, &r);
    const size_t bytes = c.nq * esize(d.dtype);
    unsigned char *a = xalloc(bytes), *b = xalloc(bytes);
    memset(a, 0x7F, bytes);
    tt_assert_ok(tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, a, TABCL__SDPA_CLBLAST));
    /* one batch entry of q is 13 x 4 x 24 = 1248 elements: windows from entry 3 on */
    tt_tune(ctx, "sdpa.gemm.index_limit=4000");
    tabcl_stats before, after;
    tabcl_context_stats(ctx, &before);
    memset(b, 0x7F, bytes);
    tt_assert_ok(tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, b, TABCL__SDPA_CLBLAST));
    tabcl_context_stats(ctx, &after);
    cr_expect_eq(memcmp(a, b, bytes), 0, "dtype %d: windowed result differs", dt);
    cr_expect_gt(after.kernel_launches - before.kernel_launches, 9, "expected several slices");
    memcpy(c.out, b, bytes);
    case_reference(&c);
    case_check(&c, "windowed CLBlast");
#ifdef TABCL_FAULT_INJECTION
    for (long n = 1; n < 10000; n++) {
      memset(b, 0x5A, bytes);
      tt_live base = tt_live_now();
      tabcl__fault_set(0, n);
      tabcl_status s = tabcl__sdpa_host_path(ctx, &d, c.q, c.k, c.v, c.mask, b,
                                             TABCL__SDPA_CLBLAST);
      int fired = tabcl__fault_fired();
      tabcl__fault_reset();
      tt_expect_no_leak(base);
      if (!fired) {
        tt_assert_ok(s);
        cr_expect_eq(memcmp(a, b, bytes), 0, "after the sweep");
        break;
      }
      cr_expect_eq(s, TABCL_OUT_OF_MEMORY, "failure %ld gave %s: %s", n, tabcl_status_name(s),
                   tabcl_last_error());
      int untouched = 1;
      for (size_t i = 0; i < bytes; i++) untouched &= b[i] == 0x5A;
      cr_expect(untouched, "failure %ld changed out", n);
    }
#endif
    tt_tune(ctx, "sdpa.gemm.index_limit=auto");
    free(a), free(b);
    case_free(&c);
  }
  tabcl_context_destroy(ctx);
}

/* ---- masks whose query extent is 1 (mask_query_broadcast) ---- */

/* c's mask [Bm, Hm, 1, Lk] repeated for every query, and c's descriptor
   without the flag: the call a query-broadcast one must equal. */
static void expand_query_mask(sdpa_case *c) {
  tabcl_sdpa_desc *d = &c->d;
  const size_t row = (size_t)d->kv_len * (d->mask == TABCL_MASK_BOOL ? 1 : esize(d->dtype));
  const size_t rows = c->nm / (size_t)d->kv_len, lq = (size_t)d->q_len;
  unsigned char *full = xalloc(rows * lq * row);
  for (size_t m = 0; m < rows; m++)
    for (size_t i = 0; i < lq; i++)
      memcpy(full + (m * lq + i) * row, (const unsigned char *)c->mask + m * row, row);
  free(c->mask);
  c->mask = full, c->nm = rows * lq * (size_t)d->kv_len;
  d->mask_query_broadcast = 0;
}

/* Hides, in every row of c's mask, the keys of a padded context: the last
   eighth, keys 16-47 and 128-255 (whole blocks of 16, whole tiles of 64),
   and keys 70-99 (a run that covers the block from 80 but not its
   neighbours); the two keys before the last eighth are shown. */
static void pad_rows(sdpa_case *c) {
  const tabcl_sdpa_desc *d = &c->d;
  const size_t lk = (size_t)d->kv_len;
  for (size_t row = 0; row < c->nm / lk; row++)
    for (size_t j = 0; j < lk; j++) {
      const int hide = j >= lk - lk / 8 || (j >= 16 && j < 48) || (j >= 70 && j < 100) ||
                       (j >= 128 && j < 256);
      /* the two keys before the padding are shown: a range that ends a
         tile short of them is wrong */
      const int show = j + 2 >= lk - lk / 8 && j < lk - lk / 8;
      if (!hide && !show) continue;
      if (d->mask == TABCL_MASK_BOOL) ((uint8_t *)c->mask)[row * lk + j] = show;
      else tabcl__store_elem(c->mask, row * lk + j, d->dtype, show ? 0.0 : -INFINITY);
    }
}

/* d (with mask_query_broadcast set) on `path` against the reference of the
   same call with the mask expanded over the queries; dead_bh >= 0 masks out
   every key of batch entry 1's mask row for head dead_bh (its rows must be
   zeros); padded: every mask row also hides runs of keys as a padded
   context does (pad_rows). Returns the path's status. */
static tabcl_status run_query_broadcast(tabcl_context *ctx, tt_rng *r, const tabcl_sdpa_desc *d,
                                        int path, int dead_bh, const char *what, int padded) {
  sdpa_case c;
  case_fill(&c, d, r);
  if (padded) pad_rows(&c);
  const size_t lk = (size_t)d->kv_len, hm = d->mask_head_broadcast ? 1 : (size_t)d->q_heads;
  if (dead_bh >= 0)
    for (size_t j = 0; j < lk; j++) {
      const size_t at = ((d->mask_batch_broadcast ? 0 : hm) +
                         (d->mask_head_broadcast ? 0 : (size_t)dead_bh)) * lk + j;
      if (d->mask == TABCL_MASK_BOOL) ((uint8_t *)c.mask)[at] = 0;
      else tabcl__store_elem(c.mask, at, d->dtype, -INFINITY);
    }
  memset(c.out, 0x7F, c.nq * esize(d->dtype));
  const tabcl_status s = tabcl__sdpa_host_path(ctx, d, c.q, c.k, c.v, c.mask, c.out, path);
  if (s == TABCL_OK) {
    /* the reference reads the flag too: equal to its expanded call */
    double *own = xalloc(c.nq * 8);
    tt_sdpa_reference(d, c.q, c.k, c.v, c.mask, own, c.dead);
    expand_query_mask(&c);
    case_reference(&c);
    case_check(&c, what);
    cr_expect_eq(memcmp(own, c.ref, c.nq * 8), 0, "%s: the reference differs with the flag",
                 what);
    free(own);
    /* and bit for bit the path's own call with the mask written out for
       every query (tabcl's Python tests compare so) */
    void *full = xalloc(c.nq * esize(d->dtype));
    memset(full, 0x7F, c.nq * esize(d->dtype));
    tt_assert_ok(tabcl__sdpa_host_path(ctx, &c.d, c.q, c.k, c.v, c.mask, full, path));
    cr_expect_eq(memcmp(full, c.out, c.nq * esize(d->dtype)), 0,
                 "%s: not bit for bit the call with the mask written out", what);
    free(full);
    if (dead_bh >= 0 && d->batch > 1) {
      const size_t hq = (size_t)d->q_heads, D = (size_t)d->head_dim;
      for (size_t i = 0; i < (size_t)d->q_len; i++)
        for (size_t h = 0; h < hq; h++) {
          if (!d->mask_head_broadcast && h != (size_t)dead_bh) continue;
          const size_t o = ((1 * (size_t)d->q_len + i) * hq + h) * D;
          for (size_t e = 0; e < D; e++)
            if (tabcl__load_elem(c.out, o + e, d->dtype) != 0) {
              cr_expect_fail("%s: row %zu of head %zu attends nothing but is not 0", what, i, h);
              i = (size_t)d->q_len, h = hq;
              break;
            }
        }
    }
  }
  case_free(&c);
  return s;
}

/* The paths the CPU device runs: the automatic choice, the fused kernel,
   the CPU kernel, the CLBlast pair. */
static const int qb_paths[] = {TABCL__SDPA_AUTO, TABCL__SDPA_FUSED, TABCL__SDPA_CPU,
                               TABCL__SDPA_CLBLAST};
static const char *const qb_path_names[] = {"auto", "fused", "CPU kernel", "CLBlast"};

Test(sdpa, query_broadcast_masks_every_path) {
  tt_rng r = {tt_seed("sdpa.query_broadcast_masks_every_path")};
  tabcl_context *ctx = tt_context();
  for (size_t p = 0; p < sizeof qb_paths / sizeof qb_paths[0]; p++) {
    if (qb_paths[p] == TABCL__SDPA_CLBLAST && !tabcl__sdpa_clblast_available()) continue;
    for (int kind = TABCL_MASK_BOOL; kind <= TABCL_MASK_ADD; kind++)
      for (int bits = 0; bits < 8; bits++) {
        /* grouped heads (4 over 2); batch and head broadcast, causality */
        tabcl_sdpa_desc d = desc_of(3, 33, 47, 4, 2, 64, TABCL_F32);
        d.mask = (tabcl_mask_kind)kind, d.mask_query_broadcast = 1;
        d.mask_batch_broadcast = bits & 1, d.mask_head_broadcast = (bits >> 1) & 1;
        d.causal = bits >> 2;
        char what[96];
        snprintf(what, sizeof what, "query broadcast, %s, mask %d, bb %d hb %d causal %d",
                 qb_path_names[p], kind, bits & 1, (bits >> 1) & 1, bits >> 2);
        const tabcl_status s = run_query_broadcast(ctx, &r, &d, qb_paths[p], bits == 6 ? 1 : -1,
                                                   what, 0);
        if (!refused_by_loop_limit(ctx, &d, qb_paths[p], s)) tt_assert_ok(s);
      }
  }
  tabcl_context_destroy(ctx);
}

/* 16-bit types and another head dim, a single query, keys past a tile. */
Test(sdpa, query_broadcast_masks_sixteen_bit) {
  tt_rng r = {tt_seed("sdpa.query_broadcast_masks_sixteen_bit")};
  tabcl_context *ctx = tt_context();
  for (size_t p = 0; p < sizeof qb_paths / sizeof qb_paths[0]; p++) {
    if (qb_paths[p] == TABCL__SDPA_CLBLAST && !tabcl__sdpa_clblast_available()) continue;
    for (int dt = TABCL_F16; dt <= TABCL_BF16; dt++) {
      const int lq = dt == TABCL_F16 ? 1 : 20 + (int)tt_below(&r, 30);
      tabcl_sdpa_desc d = desc_of(2, lq, 70 + (int)tt_below(&r, 200), 2, 1, 32, (tabcl_dtype)dt);
      d.mask = dt == TABCL_F16 ? TABCL_MASK_BOOL : TABCL_MASK_ADD;
      d.mask_query_broadcast = 1, d.causal = p == 1;
      char what[96];
      snprintf(what, sizeof what, "query broadcast, %s, dtype %d, %d x %lld", qb_path_names[p],
               dt, lq, (long long)d.kv_len);
      const tabcl_status s = run_query_broadcast(ctx, &r, &d, qb_paths[p], 0, what, 0);
      if (!refused_by_loop_limit(ctx, &d, qb_paths[p], s)) tt_assert_ok(s);
    }
  }
  tabcl_context_destroy(ctx);
}

/* The CPU kernel takes keys in chunks of TABCL__SDPA_CPU_KEY_CHUNK, every
   tile of a work-item before the next chunk: keys over three chunks and a
   part, with each kind of query-broadcast mask, causal or not. */
Test(sdpa, query_broadcast_masks_cpu_key_chunks) {
  tt_rng r = {tt_seed("sdpa.query_broadcast_masks_cpu_key_chunks")};
  tabcl_context *ctx = tt_context();
  for (int kind = TABCL_MASK_BOOL; kind <= TABCL_MASK_ADD; kind++)
    for (int causal = 0; causal < 2; causal++) {
      const int lk = 3 * TABCL__SDPA_CPU_KEY_CHUNK + 1 + (int)tt_below(&r, 40);
      tabcl_sdpa_desc d = desc_of(2, 40 + (int)tt_below(&r, 60), lk, 2, 1, 64, TABCL_F32);
      d.mask = (tabcl_mask_kind)kind, d.mask_query_broadcast = 1, d.causal = causal;
      char what[96];
      snprintf(what, sizeof what, "query broadcast, CPU kernel, mask %d, causal %d, %lld x %d",
               kind, causal, (long long)d.q_len, lk);
      const tabcl_status s = run_query_broadcast(ctx, &r, &d, TABCL__SDPA_CPU, -1, what, 0);
      if (!refused_by_loop_limit(ctx, &d, TABCL__SDPA_CPU, s)) tt_assert_ok(s);
    }
  tabcl_context_destroy(ctx);
}

/* The CPU kernel skips a block of 16 keys that a key-padding mask hides
   from every row, the fused kernel the keys it hides at the end of a key
   range: padded contexts over several key chunks and tiles (of 64 keys and
   of 8), causal or not, in one key part or three (each part's range ends
   on its own, one wholly hidden at times); equal to the reference and,
   bit for bit, to the call with the mask written out for every query
   (which skips nothing). */
Test(sdpa, padded_context_skips_hidden_keys) {
  tt_rng r = {tt_seed("sdpa.padded_context_skips_hidden_keys")};
  tabcl_context *ctx = tt_context();
  static const struct { int path; const char *tiles; } ways[] = {
      {TABCL__SDPA_CPU, ""}, {TABCL__SDPA_FUSED, ""}, {TABCL__SDPA_FUSED, ";sdpa.fused.d64=16x8"}};
  for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++)
    for (int kind = TABCL_MASK_BOOL; kind <= TABCL_MASK_ADD; kind++)
      for (int causal = 0; causal < 2; causal++) {
        const int parts = causal == kind - TABCL_MASK_BOOL ? 1 : 3;
        tt_tune(ctx, "sdpa.split=%d%s", parts, ways[w].tiles);
        const int lk = 2 * TABCL__SDPA_CPU_KEY_CHUNK + 100 + (int)tt_below(&r, 60);
        tabcl_sdpa_desc d = desc_of(2, 30 + (int)tt_below(&r, 40), lk, 2, 1, 64, TABCL_F32);
        d.mask = (tabcl_mask_kind)kind, d.mask_query_broadcast = 1, d.causal = causal;
        d.mask_head_broadcast = 1;
        char what[128];
        snprintf(what, sizeof what, "padded context, %s%s, mask %d, causal %d, %d parts, %lld x %d",
                 ways[w].path == TABCL__SDPA_CPU ? "CPU kernel" : "fused kernel", ways[w].tiles,
                 kind, causal, parts, (long long)d.q_len, lk);
        const tabcl_status s = run_query_broadcast(ctx, &r, &d, ways[w].path, 1, what, 1);
        if (!refused_by_loop_limit(ctx, &d, ways[w].path, s)) tt_assert_ok(s);
      }
  tabcl_context_destroy(ctx);
}

/* The same under oclgrind: the mask reads that decide the skips in
   bounds. */
Test(oclgrind_sdpa, padded_context_skips_hidden_keys) {
  tt_rng r = {tt_seed("oclgrind_sdpa.padded_context_skips_hidden_keys")};
  tabcl_context *ctx = tt_context();
  static const int paths[] = {TABCL__SDPA_CPU, TABCL__SDPA_FUSED};
  for (int p = 0; p < 2; p++) {
    tabcl_sdpa_desc d = desc_of(2, 20, 300, 2, 1, 16, TABCL_F32);
    d.mask = TABCL_MASK_BOOL, d.mask_query_broadcast = 1, d.mask_head_broadcast = 1;
    const tabcl_status s =
        run_query_broadcast(ctx, &r, &d, paths[p], 1, "padded context under oclgrind", 1);
    if (!refused_by_loop_limit(ctx, &d, paths[p], s)) tt_assert_ok(s);
  }
  tabcl_context_destroy(ctx);
}

/* The key split and its merge read the same mask rows. */
Test(sdpa, query_broadcast_masks_split_keys) {
  tt_rng r = {tt_seed("sdpa.query_broadcast_masks_split_keys")};
  tabcl_context *ctx = tt_context();
  static const int paths[] = {TABCL__SDPA_FUSED, TABCL__SDPA_CPU};
  for (int p = 0; p < 2; p++)
    for (int parts = 2; parts <= 3; parts++) {
      tt_tune(ctx, "sdpa.split=%d", parts);
      tabcl_sdpa_desc d = desc_of(2, 37, 150 + (int)tt_below(&r, 200), 4, 2, 64, TABCL_F32);
      d.mask = parts == 2 ? TABCL_MASK_BOOL : TABCL_MASK_ADD;
      d.mask_query_broadcast = 1, d.causal = p;
      char what[96];
      snprintf(what, sizeof what, "query broadcast, %d key parts, path %d", parts, paths[p]);
      const tabcl_status s = run_query_broadcast(ctx, &r, &d, paths[p], 2, what, 0);
      if (!refused_by_loop_limit(ctx, &d, paths[p], s)) tt_assert_ok(s);
    }
  tabcl_context_destroy(ctx);
}

/* tabcl_sdpa_cl takes a query-broadcast mask of B x Hq x Lk bytes exactly,
   and refuses one byte fewer, or those bytes without the flag, before
   anything is enqueued: out keeps what it held. */
Test(sdpa, query_broadcast_mask_buffer_sizes) {
  tt_rng r = {tt_seed("sdpa.query_broadcast_mask_buffer_sizes")};
  tabcl_context *ctx = tt_context();
  tabcl_sdpa_desc d = desc_of(3, 19, 23, 4, 2, 32, TABCL_F32);
  d.mask = TABCL_MASK_BOOL, d.mask_query_broadcast = 1;
  sdpa_case c;
  case_fill(&c, &d, &r);
  cr_assert_eq(c.nm, (size_t)3 * 4 * 23);
  cl_context cl = tabcl_context_cl_context(ctx);
  cl_command_queue queue = tabcl_context_cl_queue(ctx);
  cl_int err[6];
  cl_mem q = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nq * 4, c.q, &err[0]);
  cl_mem k = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nk * 4, c.k, &err[1]);
  cl_mem v = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nk * 4, c.v, &err[2]);
  cl_mem m = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nm, c.mask, &err[3]);
  cl_mem small = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nm - 1, c.mask, &err[4]);
  memset(c.out, 0x5A, c.nq * 4);
  cl_mem out = clCreateBuffer(cl, CL_MEM_COPY_HOST_PTR, c.nq * 4, c.out, &err[5]);
  for (int i = 0; i < 6; i++) cr_assert_eq(err[i], CL_SUCCESS);
  unsigned char *got = xalloc(c.nq * 4);
  tabcl_sdpa_desc plain = d;
  plain.mask_query_broadcast = 0;
  const struct { const tabcl_sdpa_desc *d; cl_mem m; } bad[] = {{&d, small}, {&plain, m}};
  for (int i = 0; i < 2; i++) {
    tabcl_stats before, after;
    tabcl_context_stats(ctx, &before);
    cl_event ev = (cl_event)&got;   /* must come back NULL */
    cr_expect_eq(tabcl_sdpa_cl(ctx, bad[i].d, q, k, v, bad[i].m, out, 0, NULL, &ev),
                 TABCL_INVALID_ARGUMENT, "case %d", i);
    cr_expect(strstr(tabcl_last_error(), "mask holds") != NULL, "case %d: %s", i,
              tabcl_last_error());
    cr_expect(ev == NULL, "case %d: an event for a refused call", i);
    tabcl_context_stats(ctx, &after);
    cr_expect_eq(after.kernel_launches, before.kernel_launches, "case %d launched", i);
    cr_assert_eq(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, c.nq * 4, got, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_expect_eq(memcmp(got, c.out, c.nq * 4), 0, "case %d changed out", i);
  }
  cl_event ev = NULL;
  tt_assert_ok(tabcl_sdpa_cl(ctx, &d, q, k, v, m, out, 0, NULL, &ev));
  cr_assert_eq(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, c.nq * 4, c.out, 1, &ev, NULL),
               CL_SUCCESS);
  clReleaseEvent(ev);
  expand_query_mask(&c);
  case_reference(&c);
  case_check(&c, "cl variant, query-broadcast mask");
  clReleaseMemObject(q), clReleaseMemObject(k), clReleaseMemObject(v), clReleaseMemObject(m);
  clReleaseMemObject(small), clReleaseMemObject(out);
  free(got);
  case_free(&c);
  tabcl_context_destroy(ctx);
}
