/* String columns: validation of host views and upload into device buffers
 * of their own (offsets rebased to 0, data padded for whole-word reads). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "columns/strings.h"

/* "fn: column c: " (or "fn: " when the caller has no column). */
static void where(char *buf, size_t cap, const char *fn, int col) {
  if (col >= 0) snprintf(buf, cap, "%s: column %d: ", fn ? fn : "tabcl", col);
  else snprintf(buf, cap, "%s: ", fn ? fn : "tabcl");
}

/* The common case's pass over offsets o[0 .. n] of type T, without
   branches: the longest label into most (unsigned: the difference of bad
   offsets may not fit), and whether any offset decreases into bad (with
   o[0] >= 0 a first negative offset is a decrease). Used whole by
   CHECK_OFFSETS and in parts by the worker pool (scan_part). */
#define OFFSETS_PASS(T, o, n, most, bad)                                                     \
  for (int64_t i_ = 0; i_ < (int64_t)(n); i_++) {                                              \
    const int64_t a_ = (int64_t)(o)[i_], b_ = (int64_t)(o)[i_ + 1];                          \
    const uint64_t d_ = (uint64_t)b_ - (uint64_t)a_;                                          \
    (bad) |= b_ < a_;                                                                         \
    (most) = d_ > (most) ? d_ : (most);                                                       \
  }

/* One pass over any offset width: the checks of tabcl__strings_validate,
   and the longest label on the way (callers that only validate ignore it). */
#define CHECK_OFFSETS(T, length, offsets, data, fn, col, max_out)                              \
  do {                                                                                        \
    char at_[160];                                                                            \
    if ((length) < 0) {                                                                       \
      where(at_, sizeof at_, fn, col);                                                        \
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%snegative length %lld", at_,               \
                         (long long)(length));                                                \
    }                                                                                         \
    if (!(offsets)) {                                                                         \
      if ((length) == 0) {                                                                    \
        if (max_out) *(int64_t *)(max_out) = 0;                                               \
        return TABCL_OK;                                                                      \
      }                                                                                       \
      where(at_, sizeof at_, fn, col);                                                        \
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%soffsets is NULL for %lld labels", at_,    \
                         (long long)(length));                                                \
    }                                                                                         \
    const T *o_ = (offsets);                                                                  \
    if (o_[0] < 0) {                                                                          \
      where(at_, sizeof at_, fn, col);                                                        \
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%soffset 0 is negative (%lld)", at_,  \
                         (long long)o_[0]);                                                   \
    }                                                                                         \
    /* the common case first, without branches: the longest label, and     \
       whether any offset is negative or any label shorter than nothing;    \
       only then the loop below, which finds the first fault for the      \
       message (it was most of a host call's time: 2 ns an offset), and   \
       so always fails */                                                 \
    uint64_t most_ = 0;                                                                       \
    int bad_ = 0;                                                                             \
    OFFSETS_PASS(T, o_, length, most_, bad_)                                                  \
    if (!bad_ && ((data) || most_ == 0)) {                                                    \
      if (max_out) *(int64_t *)(max_out) = (int64_t)most_;                                    \
      return TABCL_OK;                                                                        \
    }                                                                                         \
    int64_t first_bytes_ = -1;                                                                \
    for (int64_t i_ = 0; i_ < (length); i_++) {                                               \
      int64_t a_ = (int64_t)o_[i_], b_ = (int64_t)o_[i_ + 1];                                 \
      if (b_ < 0) {                                                                           \
        where(at_, sizeof at_, fn, col);                                                      \
        return tabcl__fail(TABCL_INVALID_ARGUMENT, "%soffset %lld is negative (%lld)",  \
                           at_, (long long)(i_ + 1), (long long)b_);                          \
      }                                                                                       \
      if (b_ < a_) {                                                                          \
        where(at_, sizeof at_, fn, col);                                                      \
        return tabcl__fail(TABCL_INVALID_ARGUMENT,                                            \
                           "%soffsets decrease at label %lld (%lld < %lld)", at_,             \
                           (long long)i_, (long long)b_, (long long)a_);                      \
      }                                                                                       \
      if (b_ > a_ && first_bytes_ < 0) first_bytes_ = i_;                                     \
    }                                                                                         \
    if (!(data) && first_bytes_ >= 0) {                                                       \
      where(at_, sizeof at_, fn, col);                                                        \
      return tabcl__fail(TABCL_INVALID_ARGUMENT,                                              \
                         "%sdata is NULL but label %lld has %lld bytes", at_,                 \
                         (long long)first_bytes_,                                             \
                         (long long)((int64_t)o_[first_bytes_ + 1] - (int64_t)o_[first_bytes_])); \
    }                                                                                         \
    if (max_out) *(int64_t *)(max_out) = (int64_t)most_;                                      \
    return TABCL_OK;                                                                          \
  } while (0)

static tabcl_status check64(int64_t length, const int64_t *offsets, const uint8_t *data,
                            const char *fn, int col, int64_t *longest) {
  CHECK_OFFSETS(int64_t, length, offsets, data, fn, col, longest);
}

static tabcl_status check32(int64_t length, const int32_t *offsets, const uint8_t *data,
                            const char *fn, int col, int64_t *longest) {
  CHECK_OFFSETS(int32_t, length, offsets, data, fn, col, longest);
}

tabcl_status tabcl__strings_validate(const tabcl_strings_view *v, const char *fn, int col,
                                     int64_t *longest) {
  if (!v) {
    char at[160];
    where(at, sizeof at, fn, col);
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%sthe column view is NULL", at);
  }
  return check64(v->length, v->offsets, v->data, fn, col, longest);
}

/* The common case's pass over a long column on the context's fill
   threads: each part [at, at + n) of the offsets' bytes checks the labels
   from at / 8 to (at + n) / 8 (reading one offset past its part; the view
   has length + 1), then folds its longest label and fault flag in. */
typedef struct offsets_scan {
  const int64_t *o;
  _Atomic uint64_t most;
  atomic_int bad;
} offsets_scan;

/* Labels [0, n) of o checked, their longest and any decrease folded into sc. */
static void scan_fold(offsets_scan *sc, const int64_t *o, int64_t n) {
  uint64_t most = 0;
  int bad = 0;
  OFFSETS_PASS(int64_t, o, n, most, bad)
  if (bad) atomic_store(&sc->bad, 1);
  uint64_t seen = atomic_load(&sc->most);
  while (most > seen && !atomic_compare_exchange_weak(&sc->most, &seen, most)) {
  }
}

static void scan_part(void *dst, size_t at, size_t n, const void *arg) {
  (void)dst;
  /* the scan itself is not const (the caller's own object): only its
     atomics are written */
  offsets_scan *sc = (offsets_scan *)(uintptr_t)arg;
  scan_fold(sc, sc->o + at / 8, (int64_t)(n / 8));
}

/* From this many labels the check's first pass runs on the worker pool,
   where it is long enough to repay a hand-over
   (bench/history/code-notes.md, "Offsets check"). */
#define VALIDATE_PARALLEL_MIN 65536

tabcl_status tabcl__strings_validate_on(tabcl_context *ctx, const tabcl_strings_view *v,
                                        const char *fn, int col, int64_t *longest) {
  const int threads = ctx ? tabcl__workers_threads(ctx, 0) : 1;
  if (!v || threads < 2 || v->length < VALIDATE_PARALLEL_MIN || !v->offsets || v->offsets[0] < 0)
    return tabcl__strings_validate(v, fn, col, longest);
  offsets_scan sc = {.o = v->offsets};
  atomic_init(&sc.most, 0);
  atomic_init(&sc.bad, 0);
  /* a check writes no output: no destination */
  tabcl__workers_run(ctx, threads, TABCL__WORKERS_PART, scan_part, NULL, 0,
                     (size_t)v->length * 8, &sc);
  const uint64_t most = atomic_load(&sc.most);
  if (atomic_load(&sc.bad) || (!v->data && most != 0))
    return tabcl__strings_validate(v, fn, col, longest);   /* finds the fault and says it */
  if (longest) *longest = (int64_t)most;
  return TABCL_OK;
}

int tabcl__strings_valid(const tabcl_strings_view *v, int64_t i) {
  return !v->validity || ((v->validity[i >> 3] >> (i & 7)) & 1);
}

void tabcl__strings_release(tabcl__dev_strings *s) {
  if (!s) return;
  cl_mem m[3] = {s->data, s->offsets, s->validity};
  /* into the pool behind one marker for the three: each marker and its
     flush costs microseconds */
  if (s->pool) tabcl__pool_put_n(s->pool, 3, m, 0, NULL);
  else
    for (int i = 0; i < 3; i++) tabcl__buffer_release(m[i]);
  memset(s, 0, sizeof *s);
}

/* The data buffer is padded with zeros to a whole number of 8-byte words
   plus one more word, so kernels may read any label as aligned words
   without a bounds check and without touching uninitialised memory. */
static size_t padded_bytes(int64_t bytes) { return tabcl__round_up((size_t)bytes, 8) + 8; }

/* Where a column's three buffers get their content from: the label bytes
   from the first label's first byte (then zeros), the offsets of either
   width minus the first, the validity bitmap as it is. */
typedef struct column_src {
  const uint8_t *first_byte;
  size_t bytes;
  const int64_t *o64;     /* one of o64, o32 */
  const int32_t *o32;
  int64_t first;
  const uint8_t *validity;
} column_src;

static void fill_data(void *dst, size_t at, size_t n, const void *arg) {
  const column_src *c = arg;
  size_t k = at < c->bytes ? (c->bytes - at < n ? c->bytes - at : n) : 0;
  if (k) memcpy(dst, c->first_byte + at, k);
  memset((uint8_t *)dst + k, 0, n - k);
}

/* at and n are whole 8-byte offsets (tabcl__upload's chunks are). */
static void fill_offsets(void *dst, size_t at, size_t n, const void *arg) {
  const column_src *c = arg;
  int64_t *d = dst;
  size_t i0 = at / 8, count = n / 8;
  if (c->o64)
    for (size_t k = 0; k < count; k++) d[k] = c->o64[i0 + k] - c->first;
  else
    for (size_t k = 0; k < count; k++) d[k] = (int64_t)c->o32[i0 + k] - c->first;
}

static void fill_validity(void *dst, size_t at, size_t n, const void *arg) {
  memcpy(dst, ((const column_src *)arg)->validity + at, n);
}

/* Creates and fills the column's buffers (tabcl__upload picks the way: a
   map on CPU devices, the context's staging area on GPUs), from the
   context's pool where it keeps one (upload.pool). */
static tabcl_status upload_column(tabcl_context *ctx, int64_t length, const column_src *src,
                                  tabcl__dev_strings *t) {
  size_t padded = padded_bytes((int64_t)src->bytes);
  size_t obytes = ((size_t)length + 1) * sizeof(int64_t);
  const size_t vbytes = ((size_t)length + 7) / 8;
  t->pool = ctx;
  /* the buffers first, then their contents */
  tabcl_status s = tabcl__pool_get(ctx, CL_MEM_READ_ONLY, padded, &t->data, "label bytes");
  if (!s) s = tabcl__pool_get(ctx, CL_MEM_READ_ONLY, obytes, &t->offsets, "label offsets");
  if (!s && src->validity)
    s = tabcl__pool_get(ctx, CL_MEM_READ_ONLY, vbytes, &t->validity, "validity bitmap");
  if (!s) s = tabcl__upload(ctx, t->data, padded, fill_data, src, "label bytes");
  if (!s && src->validity)
    s = tabcl__upload_staged(ctx)
            ? tabcl__upload(ctx, t->validity, vbytes, fill_validity, src, "validity bitmap")
            : tabcl__write(ctx, t->validity, 0, vbytes, src->validity);
  if (!s) s = tabcl__upload(ctx, t->offsets, obytes, fill_offsets, src, "label offsets");
  return s;
}

tabcl_status tabcl__strings_upload(tabcl_context *ctx, const tabcl_strings_view *v,
                                   tabcl__dev_strings *out) {
  int64_t longest = 0;
  tabcl_status s = tabcl__strings_validate(v, "tabcl__strings_upload", -1, &longest);
  return s ? s : tabcl__strings_upload_checked(ctx, v, longest, out);
}

/* A host view's three buffers into *t; on failure nothing is left allocated. */
static tabcl_status upload_view(tabcl_context *ctx, const tabcl_strings_view *v,
                                tabcl__dev_strings *t) {
  static const int64_t zero_offset[1] = {0};
  const int64_t *offsets = v->offsets ? v->offsets : zero_offset;
  memset(t, 0, sizeof *t);
  t->length = v->length;
  t->bytes = offsets[v->length] - offsets[0];
  column_src src = {v->data ? v->data + offsets[0] : NULL, (size_t)t->bytes, offsets, NULL,
                    offsets[0], v->validity};
  tabcl_status s = upload_column(ctx, t->length, &src, t);
  if (s) tabcl__strings_release(t);
  return s;
}

tabcl_status tabcl__strings_upload_checked(tabcl_context *ctx, const tabcl_strings_view *v,
                                           int64_t longest, tabcl__dev_strings *out) {
  tabcl__dev_strings t;
  tabcl_status s = upload_view(ctx, v, &t);
  if (s) return s;
  t.max_label = longest;
  *out = t;
  return TABCL_OK;
}

tabcl_status tabcl__strings_upload32(tabcl_context *ctx, int64_t length, const int32_t *offsets,
                                     const uint8_t *data, const uint8_t *validity,
                                     tabcl__dev_strings *out) {
  tabcl__dev_strings t = {0};
  tabcl_status s = check32(length, offsets, data, "tabcl__strings_upload32", -1, &t.max_label);
  if (s) return s;
  static const int32_t zero_offset[1] = {0};
  if (!offsets) offsets = zero_offset;
  t.length = length;
  t.bytes = (int64_t)offsets[length] - offsets[0];
  column_src src = {data ? data + offsets[0] : NULL, (size_t)t.bytes, NULL, offsets, offsets[0],
                    validity};
  s = upload_column(ctx, length, &src, &t);
  if (s) {
    tabcl__strings_release(&t);
    return s;
  }
  *out = t;
  return TABCL_OK;
}
