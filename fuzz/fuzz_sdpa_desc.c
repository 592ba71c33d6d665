/* Fuzzes attention descriptors: every field of tabcl_sdpa_desc comes from
 * the input, mostly small and valid, sometimes an extreme (negative, zero,
 * huge, overflowing, out of the enum, NaN scale) or a NULL argument. A
 * clearly invalid call must give TABCL_INVALID_ARGUMENT and leave out
 * untouched; a valid one TABCL_OK or TABCL_UNSUPPORTED. Buffers are sized
 * exactly from the descriptor, so a read past them is the library's. An OK
 * result must be finite and within the range of v (each output is a convex
 * combination of value rows, or zero).
 *
 * Input layout: batch, q_len, kv_len, q_heads, kv_heads, head_dim, dtype,
 * scale, causal, mask, broadcast flags, NULL selector (one byte each, a
 * byte >= 0xF0 picks an extreme), then value bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "runtime/half.h"

#define CAP_BYTES (1u << 22)

static const int64_t big64[] = {-1, INT64_MIN, INT64_MAX, (int64_t)1 << 31, (int64_t)1 << 40,
                                (int64_t)3 << 61, 1000, 65537, -(1 << 20), 0, 1, 33, 129,
                                (int64_t)1 << 20, 4097, 2};
/* head_dim stays within two kernel configurations (1..16, 17..32) except
   for values the call refuses before it builds anything: each further
   configuration is another kernel compile, which would take the time. */
static const int32_t big32[] = {0, -1, INT32_MIN, INT32_MAX, 1 << 20, 3, 7, 8,
                                257, 512, 1000, 4096, 300, 1 << 16, 0x7FFF, 16};

static int64_t pick64(fz_reader *r) {
  uint8_t b = fz_u8(r);
  return b >= 0xF0 ? big64[b & 15] : b % 5;
}

/* A multiple of 1/8 in [-2, 2] from the input: exact in every dtype. */
static double eighths(fz_reader *r) { return (fz_u8(r) % 33 - 16) / 8.0; }

static size_t dsize(int dt) { return dt == TABCL_F32 ? 4 : dt == TABCL_F64 ? 8 : 2; }

/* a * b * c * d elements, 0 on overflow (with *ovf set). */
static uint64_t product(int *ovf, int64_t a, int64_t b, int64_t c, int64_t d) {
  uint64_t r;
  if (a < 0 || b < 0 || c < 0 || d < 0) return 0;
  if (__builtin_mul_overflow((uint64_t)a, (uint64_t)b, &r) ||
      __builtin_mul_overflow(r, (uint64_t)c, &r) || __builtin_mul_overflow(r, (uint64_t)d, &r) ||
      r > ((uint64_t)1 << 60))
    *ovf = 1;
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
  fz_reader r = {in, size, 0};
  tabcl_sdpa_desc d;
  memset(&d, 0, sizeof d);
  d.batch = pick64(&r);
  d.q_len = pick64(&r);
  d.kv_len = pick64(&r);
  uint8_t b = fz_u8(&r);
  d.q_heads = b >= 0xF0 ? big32[b & 15] : 1 + b % 4;
  b = fz_u8(&r);
  if (b >= 0xF0) d.kv_heads = big32[b & 15];
  else if (b % 4 == 0) d.kv_heads = d.q_heads;
  else if (b % 4 == 1) d.kv_heads = 1;
  else if (b % 4 == 2) d.kv_heads = d.q_heads % 2 == 0 ? d.q_heads / 2 : d.q_heads;
  else d.kv_heads = 1 + b % 3;
  b = fz_u8(&r);
  d.head_dim = b >= 0xF0 ? big32[b & 15] : (b & 0x80) ? 17 + b % 16 : 1 + b % 16;
  b = fz_u8(&r);
  static const int bad_dtype[] = {-1, 4, 99, INT32_MIN};
  d.dtype = (tabcl_dtype)(b >= 0xF0 ? bad_dtype[b & 3] : b % 4);
  b = fz_u8(&r);
  int odd_scale = 0;
  if (b < 0xE0) {
    static const double s[] = {0, 0.125, 1.0, 0.5};
    d.scale = s[b % 4];
  } else {
    static const double s[] = {NAN, INFINITY, -INFINITY, 1e300, -0.0, 1e-300, -0.5, 0};
    d.scale = s[b & 7];
    if ((b & 7) == 7) {
      uint64_t raw = fz_u64(&r);
      memcpy(&d.scale, &raw, sizeof raw);
    }
    odd_scale = !(isfinite(d.scale) && d.scale > 0 && d.scale < 1e6);
  }
  b = fz_u8(&r);
  d.causal = b % 3 == 2 ? (int)(int8_t)b : b % 3;
  b = fz_u8(&r);
  static const int bad_mask[] = {-1, 3, 100, INT32_MAX};
  d.mask = (tabcl_mask_kind)(b >= 0xF0 ? bad_mask[b & 3] : b % 3);
  b = fz_u8(&r);
  d.mask_batch_broadcast = b & 1;
  d.mask_head_broadcast = (b >> 1) & 1;
  d.mask_query_broadcast = (b >> 3) & 1;
  if ((b & 0x30) == 0x30) d.mask_query_broadcast = (b & 0x40) ? -1 : 2;   /* refused */
  int odd_flags = 0;
  if (b & 4) d.mask_batch_broadcast = (int)(int8_t)b, odd_flags = 1;
  if (d.causal != 0 && d.causal != 1) odd_flags = 1;
  uint8_t nul = fz_u8(&r);
  if (nul > 8) nul = 0;

  /* Is the call clearly invalid? Zero heads or head_dim are refused only
     when there is work (a zero batch or q_len writes nothing). */
  int work = d.batch > 0 && d.q_len > 0;
  int zero_dims = d.q_heads == 0 || d.kv_heads == 0 || d.head_dim == 0;
  int bad = d.batch < 0 || d.q_len < 0 || d.kv_len < 0 || d.q_heads < 0 || d.kv_heads < 0 ||
            d.head_dim < 0 || (unsigned)d.dtype > 3u || (unsigned)d.mask > 2u ||
            (d.kv_heads > 0 && d.q_heads % d.kv_heads != 0) || (work && zero_dims) ||
            (d.mask_query_broadcast != 0 && d.mask_query_broadcast != 1);
  /* The contract sets no limit on head_dim or the lengths; beyond what the
     kernels take (head_dim 256, lengths 2^31) the answer should be
     TABCL_UNSUPPORTED (see test_bad_input's
     sdpa/head_dim_too_large_is_unsupported); either is tolerated here. */
  int odd_dims = (!work && zero_dims) || d.head_dim > 256 || d.q_len > INT32_MAX ||
                 d.kv_len > INT32_MAX;
  int ovf = 0;
  size_t es = dsize(d.dtype);
  uint64_t nq = product(&ovf, d.batch, d.q_len, d.q_heads, d.head_dim);
  uint64_t nk = product(&ovf, d.batch, d.kv_len, d.kv_heads, d.head_dim);
  uint64_t nm = 0;
  if (d.mask == TABCL_MASK_BOOL || d.mask == TABCL_MASK_ADD)
    nm = product(&ovf, d.mask_batch_broadcast ? 1 : d.batch,
                 d.mask_head_broadcast ? 1 : d.q_heads, d.mask_query_broadcast ? 1 : d.q_len,
                 d.kv_len);
  size_t ms = d.mask == TABCL_MASK_BOOL ? 1 : es;
  /* the byte count checked for overflow too: element counts that fit 64
     bits can still wrap once multiplied by the element size (2^60
     elements of 8 bytes made a "small" call that malloc could not serve) */
  uint64_t total = 0, part = 0;
  if (!ovf && !bad)
    ovf = __builtin_add_overflow(nq, nk, &part) || __builtin_mul_overflow(part, 2 * es, &part) ||
          __builtin_mul_overflow(nm, (uint64_t)ms, &total) ||
          __builtin_add_overflow(total, part, &total);
  if (ovf || bad) total = 0;
  int empty = !bad && !ovf && nq == 0;   /* writes nothing */

  /* Buffers exactly as large as the descriptor says. */
  void *bq = NULL, *bk = NULL, *bv = NULL, *bmask = NULL, *bout = NULL;
  /* and little enough arithmetic that one input runs in milliseconds */
  uint64_t flops = 0;
  int heavy = __builtin_mul_overflow(nq, (uint64_t)(d.kv_len > 0 ? d.kv_len : 0), &flops) ||
              flops > ((uint64_t)1 << 22);
  int small = !bad && !ovf && total <= CAP_BYTES && !heavy;
  static uint64_t dummy[4];
  if (small) {
    bq = malloc(nq * es);
    bk = malloc(nk * es);
    bv = malloc(nk * es);
    bout = malloc(nq * es);
    bmask = malloc(nm * ms);
    for (uint64_t i = 0; i < nq; i++) tabcl__store_elem(bq, i, d.dtype, eighths(&r));
    for (uint64_t i = 0; i < nk; i++) tabcl__store_elem(bk, i, d.dtype, eighths(&r));
    for (uint64_t i = 0; i < nk; i++) tabcl__store_elem(bv, i, d.dtype, eighths(&r));
    static const double addv[] = {0, -1, 2, -INFINITY};
    for (uint64_t i = 0; i < nm; i++) {
      uint8_t m = fz_u8(&r);
      if (d.mask == TABCL_MASK_BOOL) ((uint8_t *)bmask)[i] = m & 1 ? m : 0;
      else tabcl__store_elem(bmask, i, d.dtype, addv[m & 3]);
    }
    memset(bout, 0xA5, nq * es);
  } else if (!bad && !ovf && (nul == 0 || nul == 8)) {
    /* Valid but too large to back honestly: not a call that can be made. */
    return 0;
  }
  /* Too large or invalid: only calls the library must refuse before it
     reads anything are made, with tiny placeholders. */
  const void *q = small ? bq : dummy, *k = small ? bk : dummy, *v = small ? bv : dummy;
  const void *mask = d.mask == TABCL_MASK_BOOL || d.mask == TABCL_MASK_ADD ? (small ? bmask : dummy) : NULL;
  void *out = small ? bout : dummy;
  tabcl_context *ctx = fz_context();
  const tabcl_sdpa_desc *dp = &d;
  /* needed: the pointer set to NULL is one the call must have */
  int needed = 0, ambiguous = odd_scale || odd_flags || odd_dims;
  int keys = work && d.kv_len > 0;
  switch (nul) {
    case 1: dp = NULL; needed = 1; break;
    case 2: q = NULL; needed = work; break;
    case 3: k = NULL; needed = keys; break;
    case 4: v = NULL; needed = keys; break;
    case 5: out = NULL; needed = work; break;
    case 6: needed = keys && mask != NULL; mask = NULL; break;
    case 7: ctx = NULL; needed = 1; break;
    case 8: if (!mask) mask = dummy; break;
  }
  if (nul >= 2 && nul <= 8 && !needed) {
    ambiguous = 1;
    /* a NULL the call may accept, on a call too large to back: skip it */
    if (!small && !bad && !ovf) {
      free(bq), free(bk), free(bv), free(bout), free(bmask);
      return 0;
    }
  }
  tabcl_status s = tabcl_sdpa_host(ctx, dp, q, k, v, mask, out);
  fz_restore_signals();
  const char *msg = tabcl_last_error();
  if (bad || needed) {
    FZ_CHECK(s == TABCL_INVALID_ARGUMENT || (!small && !bad && s == TABCL_OUT_OF_MEMORY) ||
                 (odd_dims && !bad && s == TABCL_UNSUPPORTED),
             "invalid call (null selector %d) gave %s", nul, tabcl_status_name(s));
  } else if (ovf && work) {
    FZ_CHECK(s == TABCL_INVALID_ARGUMENT || s == TABCL_OUT_OF_MEMORY,
             "overflowing sizes gave %s", tabcl_status_name(s));
  } else if (ovf) {
    /* a zero q_len writes nothing, however large the other extents */
    FZ_CHECK(s == TABCL_OK || s == TABCL_INVALID_ARGUMENT || s == TABCL_OUT_OF_MEMORY,
             "overflowing sizes without work gave %s", tabcl_status_name(s));
  } else if (ambiguous) {
    FZ_CHECK(s == TABCL_OK || s == TABCL_INVALID_ARGUMENT || s == TABCL_UNSUPPORTED,
             "odd scale, flags or pointers gave %s", tabcl_status_name(s));
  } else {
    FZ_CHECK(s == TABCL_OK || s == TABCL_UNSUPPORTED, "valid call gave %s: %s",
             tabcl_status_name(s), msg);
  }
  if (s == TABCL_INVALID_ARGUMENT)
    FZ_CHECK(strstr(msg, "tabcl_sdpa_host") != NULL, "message names no call: %s", msg);
  if (small) {
    const uint8_t *o = bout;
    if (s != TABCL_OK) {
      for (uint64_t i = 0; i < nq * es; i++)
        FZ_CHECK(o[i] == 0xA5, "a failed call wrote out byte %llu", (unsigned long long)i);
    } else if (!empty && out && !odd_scale) {
      double tol = d.dtype == TABCL_F32 || d.dtype == TABCL_F64 ? 1e-3 : 3e-2;
      for (uint64_t i = 0; i < nq; i++) {
        double x = tabcl__load_elem(bout, i, d.dtype);
        FZ_CHECK(isfinite(x) && fabs(x) <= 2.0 + tol,
                 "out[%llu] = %g is outside the range of v", (unsigned long long)i, x);
      }
    }
  }
  free(bq);
  free(bk);
  free(bv);
  free(bout);
  free(bmask);
  return 0;
}
