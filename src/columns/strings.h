/* String columns: validation and upload to the device (strings.c). */
#ifndef TABCL_STRINGS_H
#define TABCL_STRINGS_H
#include "runtime/internal.h"

/* A column on the device, in buffers of its own. offsets are rebased so
   offsets[0] == 0 and data starts at the column's first byte; or, in place
   (tabcl_category_index_lookup_cl on the CPU kernels), the caller's own
   buffers. */
typedef struct tabcl__dev_strings {
  int64_t length;        /* labels */
  int64_t bytes;         /* offsets[length] (after rebasing where copied) */
  int64_t max_label;     /* longest label in bytes */
  cl_mem data;           /* uchar[bytes], then zeros up to a multiple of 8 plus 8 more,
                            so kernels may read whole aligned words; in place, exactly
                            uchar[bytes] from any address */
  int in_place;          /* 1: the caller's buffers, unpadded; only the CPU kernels
                            (hash_serial, catindex_lookup_serial) may read them */
  cl_mem offsets;        /* long[length + 1] */
  cl_mem validity;       /* uchar[(length + 7) / 8], LSB first; NULL = all present */
  tabcl_context *pool;   /* the context whose pool the buffers go back to on release
                            (tabcl__strings_upload's); NULL: released */
} tabcl__dev_strings;

/* Checks a view: length >= 0, offsets non-NULL (a view of length 0 may have
   NULL offsets), every offset >= 0 and non-decreasing, data non-NULL when any
   byte is present. fn and col name the call and column in the message:
   "tabcl_category_index_lookup: column 2: offsets decrease at label 17 (40 < 41)".
   *longest (may be NULL) receives the longest label's bytes, which an
   upload of the checked view needs. */
tabcl_status tabcl__strings_validate(const tabcl_strings_view *v, const char *fn, int col,
                                     int64_t *longest);
/* tabcl__strings_validate whose pass over a long column (64Ki labels and
   more) runs on ctx's worker pool where the tuning gives it several
   (upload.threads); the same checks, message and longest label. */
tabcl_status tabcl__strings_validate_on(tabcl_context *ctx, const tabcl_strings_view *v,
                                        const char *fn, int col, int64_t *longest);
/* Whether label i of a (validated) view is present. */
int tabcl__strings_valid(const tabcl_strings_view *v, int64_t i);

/* Uploads a view that tabcl__strings_validate passed, with the longest
   label it reported: the view is read once, not checked again. On failure
   nothing is left allocated. */
tabcl_status tabcl__strings_upload_checked(tabcl_context *ctx, const tabcl_strings_view *v,
                                           int64_t longest, tabcl__dev_strings *out);
/* Validates, then uploads (tests, self-checks, the benchmark). */
tabcl_status tabcl__strings_upload(tabcl_context *ctx, const tabcl_strings_view *v,
                                   tabcl__dev_strings *out);
/* Arrow utf8 (32-bit offsets) converted on the way in. */
tabcl_status tabcl__strings_upload32(tabcl_context *ctx, int64_t length, const int32_t *offsets,
                                     const uint8_t *data, const uint8_t *validity,
                                     tabcl__dev_strings *out);
void tabcl__strings_release(tabcl__dev_strings *s);   /* NULL or zeroed is fine */
#endif
