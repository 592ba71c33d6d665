/* Arrow string and binary arrays (utf8, large_utf8, binary, large_binary)
 * as tabcl_strings_view: 64-bit offsets used in place, 32-bit ones widened,
 * the slice's validity bitmap re-packed when it does not start on a byte. */
#include <string.h>

#include "arrow/arrow.h"

/* The offsets of labels [offset, offset + length] of either width, checked
   (non-negative, non-decreasing) and, for 32 bits, widened into *owned. */
#define TAKE_OFFSETS(T, a, fn, what, out_offsets, owned)                                      \
  do {                                                                                        \
    const T *o_ = (const T *)(a)->buffers[1] + (a)->offset;                                   \
    int64_t *wide_ = NULL;                                                                    \
    if (sizeof(T) != sizeof(int64_t)) {                                                       \
      wide_ = tabcl__malloc(((size_t)(a)->length + 1) * sizeof *wide_);                       \
      if (!wide_)                                                                             \
        return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: %sout of host memory for %lld offsets", \
                           fn, what, (long long)(a)->length + 1);                             \
      wide_[0] = (int64_t)o_[0];                                                              \
    }                                                                                         \
    if (o_[0] < 0) {                                                                          \
      tabcl__free(wide_);                                                                     \
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %soffset 0 is negative (%lld)", fn,     \
                         what, (long long)o_[0]);                                             \
    }                                                                                         \
    for (int64_t i_ = 0; i_ < (a)->length; i_++) {                                            \
      if (o_[i_ + 1] < o_[i_]) {                                                              \
        tabcl__free(wide_);                                                                   \
        return tabcl__fail(TABCL_INVALID_ARGUMENT,                                            \
                           "%s: %soffsets decrease at label %lld (%lld < %lld)", fn, what,    \
                           (long long)i_, (long long)o_[i_ + 1], (long long)o_[i_]);          \
      }                                                                                       \
      if (wide_) wide_[i_ + 1] = (int64_t)o_[i_ + 1];                                         \
    }                                                                                         \
    *(out_offsets) = wide_ ? wide_ : (const int64_t *)o_;                                     \
    *(owned) = wide_;                                                                         \
  } while (0)

static tabcl_status take_offsets32(const struct ArrowArray *a, const char *fn, const char *what,
                                   const int64_t **offsets, void **owned) {
  TAKE_OFFSETS(int32_t, a, fn, what, offsets, owned);
  return TABCL_OK;
}

static tabcl_status take_offsets64(const struct ArrowArray *a, const char *fn, const char *what,
                                   const int64_t **offsets, void **owned) {
  TAKE_OFFSETS(int64_t, a, fn, what, offsets, owned);
  return TABCL_OK;
}

/* 32 for "u" and "z", 64 for "U" and "Z", 0 for anything else. */
static int offset_bits(const char *format) {
  if (!format[0] || format[1]) return 0;
  switch (format[0]) {
    case 'u': case 'z': return 32;
    case 'U': case 'Z': return 64;
    default: return 0;
  }
}

tabcl_status tabcl__arrow_strings(const struct ArrowSchema *schema, const struct ArrowArray *array,
                                  const char *fn, const char *what, tabcl_arrow_strings *out) {
  if (!schema) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %sschema is NULL", fn, what);
  if (!schema->release)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %sschema is released (release is NULL)", fn,
                       what);
  if (!schema->format)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %sschema format is NULL", fn, what);
  if (schema->dictionary)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: %sthe array is dictionary-encoded (index format \"%.32s\"); "
                       "use tabcl_arrow_dictionary_import", fn, what, schema->format);
  int bits = offset_bits(schema->format);
  if (!bits)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: %sunsupported format \"%.32s\" (tabcl takes string, large_string, "
                       "binary and large_binary: \"u\", \"U\", \"z\", \"Z\")", fn, what,
                       schema->format);
  tabcl_status st = tabcl__arrow_check_array(array, 3, fn, what);
  if (st) return st;
  if (array->dictionary)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: %sthe array has a dictionary but its schema has none", fn, what);
  tabcl_arrow_strings r;
  memset(&r, 0, sizeof r);
  r.view.length = array->length;
  if (!array->buffers[1]) {
    if (array->length > 0)
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %soffsets buffer is NULL for %lld labels",
                         fn, what, (long long)array->length);
  } else {
    st = bits == 32 ? take_offsets32(array, fn, what, &r.view.offsets, &r.owned[0])
                    : take_offsets64(array, fn, what, &r.view.offsets, &r.owned[0]);
    if (st) return st;
  }
  r.view.data = array->buffers[2];
  int64_t bytes = r.view.offsets ? r.view.offsets[array->length] - r.view.offsets[0] : 0;
  if (!r.view.data && bytes > 0) {
    tabcl__free(r.owned[0]);
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: %sdata buffer is NULL but the labels hold %lld bytes", fn, what,
                       (long long)bytes);
  }
  if ((st = tabcl__arrow_validity(array, fn, what, &r.view.validity, &r.owned[1]))) {
    tabcl__free(r.owned[0]);
    return st;
  }
  *out = r;
  return TABCL_OK;
}

tabcl_status tabcl_arrow_strings_import(const struct ArrowSchema *schema,
                                        const struct ArrowArray *array,
                                        tabcl_arrow_strings *out) {
  static const char fn[] = "tabcl_arrow_strings_import";
  if (!out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  memset(out, 0, sizeof *out);
  tabcl_status st = tabcl__arrow_strings(schema, array, fn, "", out);
  if (!st) tabcl__clear_error();
  return st;
}

void tabcl_arrow_strings_free(tabcl_arrow_strings *s) {
  if (!s) return;
  tabcl__free(s->owned[0]);
  tabcl__free(s->owned[1]);
  memset(s, 0, sizeof *s);
}
