/* One program per device and build options, never per shape (DESIGN.md,
 * "Principles"): fits, lookups, aligns and attention of sizes 1 to 10^6,
 * in an order that goes up and down, with the device plans forced on CPU
 * devices through the tuning. After the first call of a family, no call
 * of that family builds or loads a program (tabcl_context_stats).
 *
 * The device's loop limit is measured before counting: its probe program
 * is a one-time measurement of the device that a plan asks for the first
 * time its work-items could loop long, not a program of any family. */
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "tt.h"

/* Up and down: a large call before small ones (the issue-46 case: a fit
   of 3,000 labels, one of 1, then fits of 2 to 2,999) and small before
   large. */
static const int64_t sizes[] = {3000, 1, 2, 1000000, 17, 100, 2999, 100000, 10, 4096, 10000, 3};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static uint64_t programs_of(tabcl_context *ctx) {
  tabcl_stats st;
  tabcl_context_stats(ctx, &st);
  return st.programs_built + st.programs_from_cache;
}

/* Counts the programs one call of a family made: the first call may make
   any, every later one none. */
typedef struct family {
  const char *name;
  int calls;
  uint64_t before;
} family;

static void family_start(family *f, tabcl_context *ctx) { f->before = programs_of(ctx); }

static void family_end(family *f, tabcl_context *ctx, int64_t n) {
  const uint64_t made = programs_of(ctx) - f->before;
  if (f->calls++ > 0)
    cr_expect_eq(made, 0, "%s of size %lld (call %d of the family) built or loaded %llu "
                 "program(s)", f->name, (long long)n, f->calls, (unsigned long long)made);
}

/* n distinct labels of 1 to 3 bytes: label i is i's little-endian bytes
   (the shortest that hold it), so labels of every length and byte value. */
static void distinct_labels(int64_t n, int64_t **offs, uint8_t **data) {
  *offs = malloc(((size_t)n + 1) * sizeof **offs);
  *data = malloc((size_t)n * 3 + 1);
  int64_t at = 0;
  (*offs)[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    /* 256 labels of one byte, 65,536 of two, then three */
    const int len = i < 256 ? 1 : i < 256 + 65536 ? 2 : 3;
    const int64_t base = len == 1 ? 0 : len == 2 ? 256 : 256 + 65536;
    const uint32_t v = (uint32_t)(i - base);
    for (int b = 0; b < len; b++) (*data)[at++] = (uint8_t)(v >> (8 * b));
    (*offs)[i + 1] = at;
  }
}

Test(programs, one_build_per_family_whatever_the_size) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("programs.one_build_per_family_whatever_the_size")};
  /* every call on the device, also on CPU devices */
  tt_tune(ctx, "fit.host_labels=0;lookup.host_rows=0;lookup.host_threads=0");
  uint64_t limit = 0;
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  family fit = {"a fit", 0, 0}, lookup = {"a lookup", 0, 0}, align = {"an align", 0, 0},
         sdpa = {"attention", 0, 0};
  for (size_t si = 0; si < NSIZES; si++) {
    const int64_t n = sizes[si];
    int64_t *offs;
    uint8_t *data;
    distinct_labels(n, &offs, &data);
    const tabcl_strings_view v = {n, offs, data, NULL};
    tabcl_category_index *idx = NULL;
    const tabcl_code_order order = si % 3 == 2 ? TABCL_CODES_BY_VALUE : TABCL_CODES_BY_POSITION;
    family_start(&fit, ctx);
    tt_assert_ok(tabcl_category_index_fit(ctx, 1, &v, order, &idx));
    family_end(&fit, ctx, n);
    cr_assert_eq(tabcl_category_index_codes(idx, 0), n);

    /* the vocabulary looked up: every label found */
    int32_t *codes = malloc((size_t)n * sizeof *codes);
    int32_t *const cp[1] = {codes};
    family_start(&lookup, ctx);
    tt_assert_ok(tabcl_category_index_lookup(idx, 1, &v, cp));
    family_end(&lookup, ctx, n);
    const int64_t i = (int64_t)tt_below(&r, (uint64_t)n);
    cr_expect(codes[i] >= 0 && codes[i] < n, "size %lld: label %lld got code %d", (long long)n,
              (long long)i, codes[i]);
    if (order == TABCL_CODES_BY_POSITION)
      cr_expect_eq(codes[i], (int32_t)i, "size %lld: label %lld", (long long)n, (long long)i);

    /* n rows of a dictionary whose categories are the vocabulary's first
       (at most 1,000) labels, one code in seven missing */
    const int64_t m = n < 1000 ? n : 1000;
    int32_t *dcodes = malloc((size_t)n * sizeof *dcodes);
    for (int64_t k = 0; k < n; k++) dcodes[k] = k % 7 == 6 ? -1 : (int32_t)tt_below(&r, (uint64_t)m);
    const tabcl_dictionary_view dv = {{m, offs, data, NULL}, n, dcodes};
    family_start(&align, ctx);
    tt_assert_ok(tabcl_category_index_align(idx, 1, &dv, cp));
    family_end(&align, ctx, n);
    if (order == TABCL_CODES_BY_POSITION)
      cr_expect_eq(codes[i], dcodes[i], "size %lld: aligned row %lld", (long long)n, (long long)i);
    tabcl_category_index_destroy(idx);
    free(dcodes);
    free(codes);
    free(offs);
    free(data);

    /* attention of n query rows in all, tiny heads: one batch entry or
       ten, and key rows that vary too (a batch of n single rows would take
       minutes on llvmpipe) */
    tabcl_sdpa_desc d = {0};
    d.batch = si % 2 && n % 10 == 0 ? 10 : 1;
    d.q_len = n / d.batch;
    d.kv_len = 1 + (int64_t)(si % 5);
    d.q_heads = 1 + (si % 4 == 1), d.kv_heads = 1, d.head_dim = 4;
    d.dtype = TABCL_F32;
    d.causal = si % 4 == 1;
    const size_t qn = (size_t)(d.batch * d.q_len * d.q_heads * d.head_dim);
    const size_t kn = (size_t)(d.batch * d.kv_len * d.kv_heads * d.head_dim);
    float *q = malloc(qn * sizeof *q), *k = malloc(kn * sizeof *k), *vv = malloc(kn * sizeof *vv);
    float *out = malloc(qn * sizeof *out);
    for (size_t j = 0; j < qn; j++) q[j] = (float)tt_uniform(&r) - 0.5f;
    for (size_t j = 0; j < kn; j++) k[j] = (float)tt_uniform(&r) - 0.5f;
    for (size_t j = 0; j < kn; j++) vv[j] = (float)tt_uniform(&r);
    family_start(&sdpa, ctx);
    tt_assert_ok(tabcl_sdpa_host(ctx, &d, q, k, vv, NULL, out));
    family_end(&sdpa, ctx, n);
    /* softmax weights of values in [0, 1): every output in [0, 1] */
    const size_t j = (size_t)tt_below(&r, qn);
    cr_expect(out[j] >= 0 && out[j] <= 1, "attention of size %lld: output %zu is %g", (long long)n,
              j, (double)out[j]);
    free(q), free(k), free(vv), free(out);
  }
  tabcl_context_destroy(ctx);
}

/* Calls past a device's loop limit (llvmpipe's 65,535 iterations a
   work-item; set so on devices without one): a label too long for one
   work-item of the CPU hash, a lookup row whose comparison could loop past
   it, and rows of an index that kept collisions (candidates unknown) take
   kernels of the programs the first calls built. */
Test(programs, calls_past_a_loop_limit_build_nothing_more) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("programs.calls_past_a_loop_limit_build_nothing_more")};
  tt_tune(ctx, "fit.host_labels=0;lookup.host_rows=0;lookup.host_threads=0");
  uint64_t limit = 0;
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  if (!limit) tabcl__context_set_loop_limit(ctx, 65535);
  /* 512 KiB: past the CPU hash's run of one label and the lookup's
     comparison of one row under that limit */
  enum { LONG = 512 << 10 };
  uint8_t *data = malloc(LONG + 16);
  for (size_t i = 0; i < LONG + 16; i++) data[i] = (uint8_t)tt_below(&r, 256);
  /* distinct short labels whatever the seed */
  for (int i = 0; i < 16; i++) data[i] = (uint8_t)(i % 2 ? 'a' : i);
  memcpy(data + 3 + LONG, "\xff\xfe\xfd", 3);
  family fit = {"a fit", 0, 0}, lookup = {"a lookup", 0, 0};
  /* three short labels, then the long one between two short ones, then
     eight short ones with hashes of one bit (kept collisions) */
  const int64_t offs[3][9] = {{0, 1, 3, 6}, {0, 3, 3 + LONG, 6 + LONG},
                              {0, 2, 4, 6, 8, 10, 12, 14, 16}};
  const int64_t lens[3] = {3, 3, 8};
  for (int t = 0; t < 3; t++) {
    if (t == 2) tabcl__context_set_hash_bits(ctx, 1);
    const int64_t n = lens[t];
    const tabcl_strings_view v = {n, offs[t], data, NULL};
    tabcl_category_index *idx = NULL;
    family_start(&fit, ctx);
    tt_assert_ok(tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_POSITION, &idx));
    family_end(&fit, ctx, n);
    int32_t codes[8];
    int32_t *const cp[1] = {codes};
    family_start(&lookup, ctx);
    tt_assert_ok(tabcl_category_index_lookup(idx, 1, &v, cp));
    family_end(&lookup, ctx, n);
    for (int64_t i = 0; i < n; i++)
      cr_expect_eq(codes[i], (int32_t)i, "call %d: label %lld of %lld bytes got code %d", t,
                   (long long)i, (long long)(offs[t][i + 1] - offs[t][i]), codes[i]);
    tabcl_category_index_destroy(idx);
  }
  free(data);
  tabcl_context_destroy(ctx);
}
