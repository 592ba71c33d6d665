/* Arrow dictionary arrays as tabcl_dictionary_view: the values through the
 * string import, the indices (any integer width) checked against the
 * number of values and turned into int32 codes, -1 where an index is null. */
#include <string.h>

#include "arrow/arrow.h"

/* The index width in bytes and signedness for a format, 0 if not an integer. */
static int index_width(const char *format, int *is_signed) {
  if (!format[0] || format[1]) return 0;
  *is_signed = format[0] >= 'a';
  switch (format[0]) {
    case 'c': case 'C': return 1;
    case 's': case 'S': return 2;
    case 'i': case 'I': return 4;
    case 'l': case 'L': return 8;
    default: return 0;
  }
}

/* Index i of the array's indices buffer (i counts from the buffer's start),
   as a signed value; an unsigned 64-bit index beyond INT64_MAX reads as -1,
   which is out of range either way. */
static int64_t read_index(const void *buf, int width, int is_signed, int64_t i) {
  switch (width) {
    case 1: return is_signed ? (int64_t)((const int8_t *)buf)[i] : (int64_t)((const uint8_t *)buf)[i];
    case 2: return is_signed ? (int64_t)((const int16_t *)buf)[i]
                             : (int64_t)((const uint16_t *)buf)[i];
    case 4: return is_signed ? (int64_t)((const int32_t *)buf)[i]
                             : (int64_t)((const uint32_t *)buf)[i];
    default: {
      if (is_signed) return ((const int64_t *)buf)[i];
      uint64_t u = ((const uint64_t *)buf)[i];
      return u > (uint64_t)INT64_MAX ? -1 : (int64_t)u;
    }
  }
}

/* Checks every present index and writes the codes into codes (NULL: check
   only, for the zero-copy int32 case). */
static tabcl_status convert_indices(const struct ArrowArray *a, int width, int is_signed,
                                    int64_t nvalues, const char *fn, int32_t *codes) {
  const uint8_t *bits = a->buffers[0];
  const void *buf = a->buffers[1];
  int64_t nulls = 0;
  for (int64_t i = 0; i < a->length; i++) {
    int64_t at = a->offset + i;
    if (bits && !tabcl__arrow_bit(bits, at)) {
      nulls++;
      if (codes) codes[i] = -1;
      continue;
    }
    int64_t k = read_index(buf, width, is_signed, at);
    if (k < 0 || k >= nvalues) {
      if (!is_signed && width == 8 && k < 0)
        return tabcl__fail(TABCL_INVALID_ARGUMENT,
                           "%s: index %llu at row %lld is outside [0, %lld)", fn,
                           (unsigned long long)((const uint64_t *)buf)[at], (long long)i,
                           (long long)nvalues);
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: index %lld at row %lld is outside [0, %lld)",
                         fn, (long long)k, (long long)i, (long long)nvalues);
    }
    if (codes) codes[i] = (int32_t)k;
  }
  if (bits && a->null_count >= 0 && nulls != a->null_count)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: null_count is %lld but the validity bitmap has %lld nulls", fn,
                       (long long)a->null_count, (long long)nulls);
  return TABCL_OK;
}

tabcl_status tabcl_arrow_dictionary_import(const struct ArrowSchema *schema,
                                           const struct ArrowArray *array,
                                           tabcl_arrow_dictionary *out) {
  static const char fn[] = "tabcl_arrow_dictionary_import";
  if (!out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  memset(out, 0, sizeof *out);
  if (!schema) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: schema is NULL", fn);
  if (!schema->release)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: schema is released (release is NULL)", fn);
  if (!schema->format) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: schema format is NULL", fn);
  if (!schema->dictionary)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: the schema (format \"%.32s\") has no dictionary: not a "
                       "dictionary-encoded array", fn, schema->format);
  int is_signed = 0;
  int width = index_width(schema->format, &is_signed);
  if (!width)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: unsupported index format \"%.32s\" (int8 .. int64 or uint8 .. uint64: "
                       "\"c\", \"C\", \"s\", \"S\", \"i\", \"I\", \"l\", \"L\")", fn,
                       schema->format);
  tabcl_status st = tabcl__arrow_check_array(array, 2, fn, "");
  if (st) return st;
  if (!array->dictionary)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: the array has no dictionary but its schema has one", fn);
  if (!array->buffers[1] && array->length > 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: indices buffer is NULL for %lld rows", fn,
                       (long long)array->length);
  tabcl_arrow_dictionary r;
  memset(&r, 0, sizeof r);
  tabcl_arrow_strings values;
  if ((st = tabcl__arrow_strings(schema->dictionary, array->dictionary, fn, "dictionary values: ",
                                 &values)))
    return st;
  r.owned[0] = values.owned[0];
  r.owned[1] = values.owned[1];
  r.view.categories = values.view;
  r.view.length = array->length;
  if (values.view.length > INT32_MAX) {
    st = tabcl__fail(TABCL_INVALID_ARGUMENT,
                     "%s: the dictionary has %lld values; tabcl codes are int32", fn,
                     (long long)values.view.length);
    goto fail;
  }
  if (array->length > 0) {
    /* int32 indices without nulls are already the codes */
    int in_place = width == 4 && is_signed && !array->buffers[0];
    int32_t *codes = NULL;
    if (!in_place) {
      codes = tabcl__malloc((size_t)array->length * sizeof *codes);
      if (!codes) {
        st = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %lld codes", fn,
                         (long long)array->length);
        goto fail;
      }
      r.owned[2] = codes;
    }
    if ((st = convert_indices(array, width, is_signed, values.view.length, fn, codes))) goto fail;
    r.view.codes = in_place ? (const int32_t *)array->buffers[1] + array->offset : codes;
  }
  *out = r;
  tabcl__clear_error();
  return TABCL_OK;
fail:
  tabcl_arrow_dictionary_free(&r);
  return st;
}

void tabcl_arrow_dictionary_free(tabcl_arrow_dictionary *d) {
  if (!d) return;
  for (int i = 0; i < 3; i++) tabcl__free(d->owned[i]);
  memset(d, 0, sizeof *d);
}
