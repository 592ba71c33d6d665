/* Arrow arrays: the checks every import makes of an array's header, and its
 * validity bitmap brought to tabcl's layout (bit 0 = the first label). */
#include <string.h>

#include "arrow/arrow.h"

tabcl_status tabcl__arrow_check_array(const struct ArrowArray *a, int64_t n_buffers,
                                      const char *fn, const char *what) {
  if (!a) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %sarray is NULL", fn, what);
  if (!a->release)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %sarray is released (release is NULL)", fn,
                       what);
  if (a->length < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %snegative length %lld", fn, what,
                       (long long)a->length);
  if (a->offset < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %snegative offset %lld", fn, what,
                       (long long)a->offset);
  /* Every byte count derived from offset + length (8-byte offsets, the
     widened copy) must fit; no real buffer comes near this bound. */
  if (a->length > INT64_MAX / 16 - a->offset)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: %soffset %lld + length %lld overflows any buffer size", fn, what,
                       (long long)a->offset, (long long)a->length);
  if (a->n_buffers != n_buffers)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %shas %lld buffers; this format has %lld", fn,
                       what, (long long)a->n_buffers, (long long)n_buffers);
  if (!a->buffers)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %sbuffers is NULL", fn, what);
  if (a->n_children != 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %shas %lld children; this format has none",
                       fn, what, (long long)a->n_children);
  if (a->null_count < -1 || a->null_count > a->length)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %snull_count %lld is outside [-1, length %lld]",
                       fn, what, (long long)a->null_count, (long long)a->length);
  if (!a->buffers[0] && a->null_count > 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: %snull_count is %lld but there is no validity bitmap", fn, what,
                       (long long)a->null_count);
  return TABCL_OK;
}

tabcl_status tabcl__arrow_validity(const struct ArrowArray *a, const char *fn, const char *what,
                                   const uint8_t **validity, void **owned) {
  const uint8_t *bits = a->buffers[0];
  *validity = NULL;
  *owned = NULL;
  if (!bits || a->length == 0) return TABCL_OK;
  int64_t nulls = 0;
  for (int64_t i = 0; i < a->length; i++) nulls += !tabcl__arrow_bit(bits, a->offset + i);
  if (a->null_count >= 0 && nulls != a->null_count)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: %snull_count is %lld but the validity bitmap has %lld nulls", fn, what,
                       (long long)a->null_count, (long long)nulls);
  if (nulls == 0) return TABCL_OK;
  if (a->offset % 8 == 0) {
    *validity = bits + a->offset / 8;
    return TABCL_OK;
  }
  /* tabcl_strings_view's bitmap starts at bit 0: shift this slice down */
  size_t bytes = (size_t)((a->length + 7) / 8);
  uint8_t *packed = tabcl__calloc(bytes, 1);
  if (!packed)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: %sout of host memory for a %zu-byte bitmap", fn,
                       what, bytes);
  for (int64_t i = 0; i < a->length; i++)
    packed[i >> 3] |= (uint8_t)(tabcl__arrow_bit(bits, a->offset + i) << (i & 7));
  *validity = packed;
  *owned = packed;
  return TABCL_OK;
}

int tabcl_arrow_is_dictionary(const struct ArrowSchema *schema) {
  return schema && schema->dictionary ? 1 : 0;
}
