/* f16 and bf16 on the host (half.h). Bit manipulation only, so the results
   do not depend on the compiler's or the CPU's floating-point modes;
   tests/test_half.c checks every 16-bit pattern and the rounding of f32
   values, ties included, against arithmetic done another way. */
#include "runtime/half.h"

#include <string.h>

static uint32_t bits_of(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static float float_of(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t tabcl__f32_to_f16(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u, biased = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (biased == 0xFFu) return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
  const int e = (int)biased - 127 + 15;   /* f16's biased exponent */
  if (e >= 31) return (uint16_t)(sign | 0x7C00u);
  uint32_t h, rest, half_unit;
  if (e <= 0) {
    /* Subnormal (or zero): the significand, its implicit bit made explicit,
       shifted to units of 2^-24. Below half the smallest subnormal is 0
       (f32 subnormals included: they come here with e = -112). */
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    const int shift = 14 - e;
    h = mant >> shift;
    rest = mant & ((1u << shift) - 1);
    half_unit = 1u << (shift - 1);
  } else {
    h = ((uint32_t)e << 10) | (mant >> 13);
    rest = mant & 0x1FFFu;
    half_unit = 0x1000u;
  }
  /* A carry out of the fraction moves into the exponent, which is right:
     the largest subnormal rounds up to the smallest normal, 65520 to inf. */
  if (rest > half_unit || (rest == half_unit && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

float tabcl__f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (e == 0x1Fu) return float_of(sign | 0x7F800000u | (mant << 13));
  if (e != 0) return float_of(sign | ((e - 15 + 127) << 23) | (mant << 13));
  if (mant == 0) return float_of(sign);
  /* Subnormal, mant * 2^-24: normalise so the leading bit is implicit. */
  uint32_t exp32 = 127 - 14;
  while (!(mant & 0x400u)) {
    mant <<= 1;
    exp32--;
  }
  return float_of(sign | (exp32 << 23) | ((mant & 0x3FFu) << 13));
}

uint16_t tabcl__f32_to_bf16(float f) {
  uint32_t x = bits_of(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);
  /* Adding just under half a unit, plus one when the kept part is odd,
     carries into the kept part exactly when rounding to nearest even must. */
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float tabcl__bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

void tabcl__store_elem(void *p, size_t i, tabcl_dtype dt, double x) {
  switch (dt) {
    case TABCL_F32: ((float *)p)[i] = (float)x; break;
    case TABCL_F64: ((double *)p)[i] = x; break;
    case TABCL_F16: ((uint16_t *)p)[i] = tabcl__f32_to_f16((float)x); break;
    default: ((uint16_t *)p)[i] = tabcl__f32_to_bf16((float)x); break;
  }
}

double tabcl__load_elem(const void *p, size_t i, tabcl_dtype dt) {
  switch (dt) {
    case TABCL_F32: return ((const float *)p)[i];
    case TABCL_F64: return ((const double *)p)[i];
    case TABCL_F16: return tabcl__f16_to_f32(((const uint16_t *)p)[i]);
    default: return tabcl__bf16_to_f32(((const uint16_t *)p)[i]);
  }
}
