/* The host's f16 and bf16 conversions (src/runtime/half.c), which every
 * 16-bit attention test, the fuzz targets and the tensor-core device check
 * rely on: all 65,536 patterns of each format decoded against ldexp and
 * round-tripped, and f32 values encoded against rounding done in double
 * arithmetic (frexp, nearbyint): every tie between neighbouring 16-bit
 * values and the f32 values beside it, subnormals, overflow, infinities,
 * NaNs and a million random f32 bit patterns. No device needed. */
#include <fenv.h>
#include <float.h>
#include <math.h>

#include "runtime/half.h"
#include "tt.h"

/* A 16-bit float format with `frac` fraction bits and exponent bias `bias`
   (f16: 10 and 15; bf16: 7 and 127), described for the reference. */
typedef struct fmt {
  const char *name;
  int frac, bias;
  uint16_t (*encode)(float);
  float (*decode)(uint16_t);
} fmt;

/* A failed check, reported for the first few only: the loops below check
   millions of values, and Criterion records every assertion it is given. */
static int failures;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond) && failures++ < 20) cr_expect_fail(__VA_ARGS__); \
  } while (0)

/* nearbyint rounds ties to even only in the default rounding mode. */
static void default_rounding(void) { cr_assert_eq(fegetround(), FE_TONEAREST); }
TestSuite(half, .init = default_rounding);

static const fmt f16 = {"f16", 10, 15, tabcl__f32_to_f16, tabcl__f16_to_f32};
static const fmt bf16 = {"bf16", 7, 127, tabcl__f32_to_bf16, tabcl__bf16_to_f32};

/* An f32's bits and back (a union: C11 reads the other member's bytes). */
typedef union pun { float f; uint32_t u; } pun;
static uint32_t bits_of(float f) { return ((pun){.f = f}).u; }
static float float_of(uint32_t u) { return ((pun){.u = u}).f; }

static int exp_bits(const fmt *F) { return 15 - F->frac; }
static uint16_t exp_mask(const fmt *F) { return (uint16_t)(((1u << exp_bits(F)) - 1) << F->frac); }
static int is_nan16(const fmt *F, uint16_t h) {
  return (h & exp_mask(F)) == exp_mask(F) && (h & ((1u << F->frac) - 1)) != 0;
}

/* The value of pattern h from its fields, by ldexp (NaN for NaNs). */
static double value_of(const fmt *F, uint16_t h) {
  const int e = (h & 0x7FFF) >> F->frac, m = h & ((1 << F->frac) - 1);
  const int emax = (1 << exp_bits(F)) - 1;
  double v;
  if (e == emax) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp(m, 1 - F->bias - F->frac);
  else v = ldexp(m + (1 << F->frac), e - F->bias - F->frac);
  return h & 0x8000 ? -v : v;
}

/* x rounded to the format, to nearest with ties to even, by arithmetic in
   double (exact here: x has 24 significant bits): the unit of the last
   place comes from frexp, the rounding from nearbyint. Overflow is judged
   on the rounded value, as IEEE 754 does, so 65520 (a tie) becomes inf. */
static double rounded(const fmt *F, float xf) {
  const double x = xf;
  if (isnan(x) || isinf(x) || x == 0) return x;
  int e;
  frexp(fabs(x), &e);                       /* |x| in [2^(e-1), 2^e) */
  const int emin = 1 - F->bias;             /* smallest normal: 2^emin */
  const int lsb = (e - 1 < emin ? emin : e - 1) - F->frac;
  const double r = ldexp(nearbyint(ldexp(fabs(x), -lsb)), lsb);
  const double max = ldexp((1 << (F->frac + 1)) - 1, (1 << exp_bits(F)) - 2 - F->bias - F->frac);
  const double mag = r > max ? INFINITY : r;
  return signbit(x) ? -mag : mag;
}

static void expect_encodes(const fmt *F, float x) {
  const uint16_t h = F->encode(x);
  if (isnan(x)) {
    CHECK(is_nan16(F, h) && (h >> 15) == (bits_of(x) >> 31),
              "%s(NaN 0x%08x) = 0x%04x, not a NaN of the same sign", F->name, bits_of(x), h);
    return;
  }
  const double want = rounded(F, x), got = value_of(F, h);
  CHECK(got == want && !!signbit(got) == !!signbit(want),
            "%s(%a = 0x%08x) = 0x%04x = %a, expected %a", F->name, (double)x, bits_of(x), h, got,
            want);
}

static void every_pattern_decodes_and_round_trips(const fmt *F) {
  for (uint32_t p = 0; p <= 0xFFFF; p++) {
    const uint16_t h = (uint16_t)p;
    const float f = F->decode(h);
    const double want = value_of(F, h);
    if (is_nan16(F, h)) {
      CHECK(isnan(f), "%s 0x%04x decodes to %a, not NaN", F->name, h, (double)f);
      CHECK(bits_of(f) >> 31 == (uint32_t)h >> 15, "%s 0x%04x: NaN lost its sign", F->name, h);
      CHECK(is_nan16(F, F->encode(f)), "%s 0x%04x: NaN came back as 0x%04x", F->name, h,
                F->encode(f));
      continue;
    }
    CHECK((double)f == want && !!signbit(f) == !!signbit(want),
              "%s 0x%04x decodes to %a, expected %a", F->name, h, (double)f, want);
    CHECK(F->encode(f) == h, "%s 0x%04x: round trip gave 0x%04x", F->name, h, F->encode(f));
  }
}

Test(half, f16_every_pattern) { every_pattern_decodes_and_round_trips(&f16); }
Test(half, bf16_every_pattern) { every_pattern_decodes_and_round_trips(&bf16); }

/* A bf16 NaN keeps its sign, quiet bit and the top of its payload, as the
   kernels' f32_to_bf16 does (bit-for-bit agreement between the paths). */
Test(half, bf16_nan_payload) {
  cr_expect_eq(tabcl__f32_to_bf16(float_of(0x7F800001u)), 0x7FC0);
  cr_expect_eq(tabcl__f32_to_bf16(float_of(0xFFA5FFFFu)), 0xFFE5);
  cr_expect_eq(tabcl__f32_to_bf16(float_of(0x7FFFFFFFu)), 0x7FFF);
  cr_expect_eq(tabcl__f32_to_f16(float_of(0xFF800001u)), 0xFE00);
}

/* Between each pair of neighbouring non-negative finite 16-bit values lo
   and hi (and past the largest, towards the value where infinity starts):
   lo, the tie (lo + hi) / 2 (exact in f32), the f32 values on either side
   of the tie and of lo and hi; each with both signs. */
static void ties_and_neighbours(const fmt *F) {
  const uint16_t inf = exp_mask(F);
  for (uint16_t h = 0; h < inf; h++) {
    const double lo = value_of(F, h);
    /* past the largest: where the next value would be with no exponent limit */
    const double hi = h + 1 < inf ? value_of(F, (uint16_t)(h + 1))
                                  : 2 * lo - value_of(F, (uint16_t)(h - 1));
    const float mid = (float)((lo + hi) / 2);
    cr_assert_eq((double)mid, (lo + hi) / 2, "%s: the tie after 0x%04x is not an f32", F->name, h);
    const float xs[] = {(float)lo, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY),
                        nextafterf((float)lo, INFINITY), nextafterf((float)hi, 0)};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
      expect_encodes(F, xs[i]);
      expect_encodes(F, -xs[i]);
    }
  }
}

Test(half, f16_ties_and_neighbours) { ties_and_neighbours(&f16); }
Test(half, bf16_ties_and_neighbours) { ties_and_neighbours(&bf16); }

Test(half, edges) {
  const fmt *fs[] = {&f16, &bf16};
  const float xs[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, FLT_MIN,
                      float_of(1), float_of(0x007FFFFFu), float_of(0x7FC00000u),
                      float_of(0x7F800001u), 65504.0f, 65519.0f, 65520.0f, 65536.0f, 0x1p-24f,
                      0x1p-25f, 0x1.000002p-25f, 0x1p-26f, 0x1.ff8p-15f, 0x1.ffcp-15f, 0x1p-14f,
                      0x1p-133f, 0x1p-134f, 0x1.fep127f, 0x1.ffp127f};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) expect_encodes(fs[k], xs[i]);
  /* values checked by hand, not only against the reference */
  cr_expect_eq(tabcl__f32_to_f16(65520.0f), 0x7C00);
  cr_expect_eq(tabcl__f32_to_f16(65519.0f), 0x7BFF);
  cr_expect_eq(tabcl__f32_to_f16(0x1p-25f), 0x0000);
  cr_expect_eq(tabcl__f32_to_f16(0x1.000002p-25f), 0x0001);
  cr_expect_eq(tabcl__f32_to_f16(0x1.8p-24f), 0x0002);
  cr_expect_eq(tabcl__f32_to_f16(-0x1.ffcp-15f), 0x8400);
  cr_expect_eq(tabcl__f32_to_bf16(0x1.fep127f), 0x7F7F);
  cr_expect_eq(tabcl__f32_to_bf16(0x1.ffp127f), 0x7F80);
  cr_expect_eq(tabcl__f32_to_bf16(1.00390625f), 0x3F80);
  cr_expect_eq(tabcl__f32_to_bf16(1.01171875f), 0x3F82);
  cr_expect_eq(tabcl__f32_to_bf16(float_of(1)), 0x0000);
}

Test(half, random_f32_patterns) {
  tt_rng r = {tt_seed("half.random_f32_patterns")};
  for (int i = 0; i < (1 << 20); i++) {
    const float x = float_of((uint32_t)tt_next(&r));
    expect_encodes(&f16, x);
    expect_encodes(&bf16, x);
  }
}

/* The element accessors: f32 and f64 untouched, 16-bit dtypes through the
   conversions above. */
Test(half, elements) {
  float f[2];
  double d[2];
  uint16_t h[2];
  tabcl__store_elem(f, 1, TABCL_F32, 0.1);
  cr_expect_eq(f[1], 0.1f);
  cr_expect_eq(tabcl__load_elem(f, 1, TABCL_F32), (double)0.1f);
  tabcl__store_elem(d, 1, TABCL_F64, 0.1);
  cr_expect_eq(d[1], 0.1);
  cr_expect_eq(tabcl__load_elem(d, 1, TABCL_F64), 0.1);
  tabcl__store_elem(h, 1, TABCL_F16, 0.1);
  cr_expect_eq(h[1], tabcl__f32_to_f16(0.1f));
  cr_expect_eq(tabcl__load_elem(h, 1, TABCL_F16), (double)tabcl__f16_to_f32(h[1]));
  tabcl__store_elem(h, 0, TABCL_BF16, -3.3);
  cr_expect_eq(h[0], tabcl__f32_to_bf16(-3.3f));
  cr_expect_eq(tabcl__load_elem(h, 0, TABCL_BF16), (double)tabcl__bf16_to_f32(h[0]));
}
