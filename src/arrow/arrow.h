/* Arrow C Data Interface import (arrow_strings.c, arrow_dictionary.c,
 * arrow_bitmap.c): the checks and conversions the two public imports share. */
#ifndef TABCL_ARROW_H
#define TABCL_ARROW_H
#include "runtime/internal.h"
#include "tabcl/tabcl_arrow.h"

/* Checks what every imported array must satisfy: not released, length and
   offset >= 0 with offset + length representable, exactly n_buffers buffers
   (the buffers array present), no children, null_count -1 or in
   [0, length] and 0 when there is no validity bitmap (buffers[0]).
   fn names the call, what the array ("" for the array itself,
   "dictionary values: " for a dictionary's values). */
tabcl_status tabcl__arrow_check_array(const struct ArrowArray *a, int64_t n_buffers,
                                      const char *fn, const char *what);

/* Bit i of an Arrow bitmap (LSB first). */
static inline int tabcl__arrow_bit(const uint8_t *bits, int64_t i) {
  return (bits[i >> 3] >> (i & 7)) & 1;
}

/* The validity of labels [offset, offset + length) of a checked array, as
   tabcl wants it: NULL when every label is present, a pointer into the
   array's bitmap when offset % 8 == 0, else a bitmap starting at bit 0 in
   memory *owned receives (the caller frees it with tabcl__free). Fails when
   the bitmap's zero bits disagree with a known null_count. */
tabcl_status tabcl__arrow_validity(const struct ArrowArray *a, const char *fn, const char *what,
                                   const uint8_t **validity, void **owned);

/* The string import with fn and what in its messages; the dictionary import
   uses it for the values. */
tabcl_status tabcl__arrow_strings(const struct ArrowSchema *schema, const struct ArrowArray *array,
                                  const char *fn, const char *what, tabcl_arrow_strings *out);
#endif
