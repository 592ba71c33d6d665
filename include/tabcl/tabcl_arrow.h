/* tabcl_arrow: string and dictionary columns from the Arrow C Data Interface.
 *
 * No Arrow library is needed: ArrowSchema and ArrowArray are the stable ABI
 * of https://arrow.apache.org/docs/format/CDataInterface.html, declared
 * below under the guard every producer and consumer shares.
 *
 * An import only reads the schema and the array. It never calls their
 * release callbacks, never moves them and keeps no pointer to the structs
 * themselves after it returns; but the view it fills points into the
 * array's buffers wherever their layout already is tabcl's (64-bit offsets,
 * a bitmap that starts on a byte), so the array must stay alive, unreleased
 * and unchanged for as long as the view is used. What the import had to
 * convert (32-bit offsets widened to 64 bits, a bitmap re-packed to start
 * at bit 0, dictionary indices as int32 codes) lives in memory the result
 * owns, freed by tabcl_arrow_strings_free / tabcl_arrow_dictionary_free.
 *
 * The C Data Interface carries no buffer sizes, so buffers are trusted to be
 * as long as the format, offset and length require; everything else is
 * checked, and a malformed or unsupported array is TABCL_INVALID_ARGUMENT
 * with a message that names the problem.
 */
#ifndef TABCL_TABCL_ARROW_H
#define TABCL_TABCL_ARROW_H

#include <stdint.h>

#include "tabcl/tabcl.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release)(struct ArrowSchema *);
  void *private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release)(struct ArrowArray *);
  void *private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

/* A string column imported from Arrow. view is what the tabcl calls take;
   owned is the import's own memory (do not touch; NULL entries when nothing
   had to be converted). */
typedef struct tabcl_arrow_strings {
  tabcl_strings_view view;
  void *owned[2];
} tabcl_arrow_strings;

/* A dictionary-encoded column imported from Arrow: categories are the
   dictionary's values, codes its indices as int32 (-1 where the index is
   null), ready for tabcl_category_index_align. */
typedef struct tabcl_arrow_dictionary {
  tabcl_dictionary_view view;
  void *owned[3];
} tabcl_arrow_dictionary;

/* Formats "u" (utf8), "U" (large_utf8), "z" (binary), "Z" (large_binary),
   with the array's offset and validity bitmap honoured. Zero-copy for "U"
   and "Z" (and for the bitmap when offset % 8 == 0). Returns TABCL_OK,
   TABCL_INVALID_ARGUMENT (NULL arguments, a malformed or unsupported array;
   the message names the problem) or TABCL_OUT_OF_MEMORY. The schema and
   array are never changed. On failure *out is zeroed, so
   tabcl_arrow_strings_free(out) is always safe. */
TABCL_API tabcl_status tabcl_arrow_strings_import(const struct ArrowSchema *schema,
                                                  const struct ArrowArray *array,
                                                  tabcl_arrow_strings *out);
/* Frees what the import converted (not the array); NULL is fine; zeroes *s. */
TABCL_API void tabcl_arrow_strings_free(tabcl_arrow_strings *s);

/* A dictionary array: index format "c", "C", "s", "S", "i", "I", "l" or "L"
   (int8 .. uint64), values (schema->dictionary, array->dictionary) in one of
   the string formats above with their own offset and validity. A non-null
   index outside [0, number of values) is TABCL_INVALID_ARGUMENT; a null
   index becomes code -1; an index naming a null value stays that index
   (align gives it -1, as null categories are never matched). Returns as
   tabcl_arrow_strings_import does; the schema and array are never changed.
   On failure *out is zeroed. */
TABCL_API tabcl_status tabcl_arrow_dictionary_import(const struct ArrowSchema *schema,
                                                     const struct ArrowArray *array,
                                                     tabcl_arrow_dictionary *out);
/* Frees what the import converted (not the array); NULL is fine. */
TABCL_API void tabcl_arrow_dictionary_free(tabcl_arrow_dictionary *d);

/* 1 when the schema describes a dictionary-encoded array (its dictionary
   member is set), 0 otherwise or for NULL: which of the two imports fits. */
TABCL_API int tabcl_arrow_is_dictionary(const struct ArrowSchema *schema);

#ifdef __cplusplus
}
#endif
#endif
