/* Helpers shared by the Criterion tests: contexts, seeds, random data,
 * owned string columns and leak baselines. */
#ifndef TABCL_TT_H
#define TABCL_TT_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/internal.h"
#include "tabcl/tabcl.h"

/* A context on the default device (or $TABCL_DEVICE), with the suite's
   disk cache; fails the test if none can be made. */
tabcl_context *tt_context(void);
tabcl_context *tt_context_with(const tabcl_options *o);
/* Applies tuning entries ("key=value;...", printf-style) to ctx, as
   TABCL_TUNE would; the test fails if they are refused. */
void tt_tune(tabcl_context *ctx, const char *fmt, ...) TABCL_PRINTF(2, 3);
/* Puts an upload.staging tuning in force on ctx through tt_tune: on = 1
   stages every upload through an area of at most cap bytes (0: the default
   size), -1 maps every buffer, 0 leaves the device's own way. Any staging
   area goes, so the next upload makes one afresh. */
void tt_staging(tabcl_context *ctx, int on, size_t cap);
/* Whether self-check i passed with status s on ctx's device: TABCL_OK, or
   TABCL_UNSUPPORTED from a vendor path's check on another vendor's device. */
int tt_selfcheck_passed(tabcl_context *ctx, int i, tabcl_status s);

/* A seed for a randomized test: $TABCL_TEST_SEED if set, else from the
   clock. Printed to stderr with the test's name so a failure can be replayed. */
uint64_t tt_seed(const char *test_name);

typedef struct tt_rng { uint64_t s; } tt_rng;
uint64_t tt_next(tt_rng *r);
uint64_t tt_below(tt_rng *r, uint64_t n);     /* uniform in [0, n), n > 0 */
double tt_uniform(tt_rng *r);                 /* [0, 1) */
double tt_normal(tt_rng *r);

/* A string column that owns its memory; grows as labels are appended. */
typedef struct tt_strings {
  int64_t length;
  int64_t *offsets;
  uint8_t *data;
  uint8_t *validity;     /* NULL until the first null is appended */
  size_t data_cap, len_cap;
} tt_strings;
void tt_strings_init(tt_strings *s, int64_t first_offset);
void tt_strings_push(tt_strings *s, const void *bytes, size_t n);
void tt_strings_push_null(tt_strings *s);
void tt_strings_free(tt_strings *s);
tabcl_strings_view tt_view(const tt_strings *s);
/* Label i of a view (NULL if null); *n receives its length. */
const uint8_t *tt_label(const tabcl_strings_view *v, int64_t i, size_t *n);

/* Leak checks: the number of live host allocations and device buffers the
   library holds now; tt_expect_no_leak compares with a baseline. */
typedef struct tt_live { long allocs, mems; } tt_live;
tt_live tt_live_now(void);
#define tt_expect_no_leak(base)                                                             \
  do {                                                                                      \
    tt_live now_ = tt_live_now();                                                           \
    cr_expect_eq(now_.allocs, (base).allocs, "host allocations leaked: %ld live, %ld before", \
                 now_.allocs, (base).allocs);                                               \
    cr_expect_eq(now_.mems, (base).mems, "device buffers leaked: %ld live, %ld before",     \
                 now_.mems, (base).mems);                                                   \
  } while (0)

#define tt_assert_ok(expr)                                                               \
  do {                                                                                   \
    tabcl_status st_ = (expr);                                                           \
    cr_assert_eq(st_, TABCL_OK, "%s returned %s: %s", #expr, tabcl_status_name(st_),     \
                 tabcl_last_error());                                                    \
  } while (0)

/* A fresh empty folder under the build tree; caller frees the path. */
char *tt_temp_dir(const char *tag);
void tt_remove_tree(const char *path);
/* A whole file, with a NUL after its *n bytes; asserts it can be read.
   Caller frees. */
uint8_t *tt_slurp(const char *path, size_t *n);

#endif
