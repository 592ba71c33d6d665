/* String columns: validation messages for every bad view, upload of
 * sliced, empty and Arrow 32-bit columns (read back and compared with the
 * host view), and failure injection over the upload. */
#include <stdlib.h>
#include <string.h>

#include "strings.h"
#include "tt.h"

static void expect_invalid(const tabcl_strings_view *v, int col, const char *part1, const char *part2) {
  tabcl_status s = tabcl__strings_validate(v, "tabcl_test_call", col);
  cr_expect_eq(s, TABCL_INVALID_ARGUMENT, "%s", tabcl_status_name(s));
  const char *msg = tabcl_last_error();
  char colname[32];
  snprintf(colname, sizeof colname, "column %d", col);
  cr_expect(strstr(msg, "tabcl_test_call") != NULL, "names the call: %s", msg);
  cr_expect(strstr(msg, colname) != NULL, "names the column: %s", msg);
  cr_expect(strstr(msg, part1) != NULL, "says '%s': %s", part1, msg);
  if (part2) cr_expect(strstr(msg, part2) != NULL, "says '%s': %s", part2, msg);
}

Test(strings, validation_messages) {
  const uint8_t data[16] = "abcdefghijklmno";
  int64_t good[] = {2, 4, 4, 9};
  tabcl_strings_view v = {3, good, data, NULL};
  tt_assert_ok(tabcl__strings_validate(&v, "f", 0));
  tabcl_strings_view empty = {0, NULL, NULL, NULL};
  tt_assert_ok(tabcl__strings_validate(&empty, "f", 0));
  int64_t zero[] = {0, 0, 0};
  tabcl_strings_view no_bytes = {2, zero, NULL, NULL};
  tt_assert_ok(tabcl__strings_validate(&no_bytes, "f", 0));

  tabcl_strings_view neg = {-1, good, data, NULL};
  expect_invalid(&neg, 2, "negative length -1", NULL);
  tabcl_strings_view nooff = {3, NULL, data, NULL};
  expect_invalid(&nooff, 4, "offsets is NULL", NULL);
  int64_t dec[] = {0, 3, 5, 4, 6};
  tabcl_strings_view decv = {4, dec, data, NULL};
  expect_invalid(&decv, 1, "offsets decrease at label 2", "(4 < 5)");
  int64_t negoff[] = {0, 2, -1, 3};
  tabcl_strings_view negv = {3, negoff, data, NULL};
  expect_invalid(&negv, 3, "offset 2 is negative", "(-1)");
  int64_t negfirst[] = {-2, 2};
  tabcl_strings_view negf = {1, negfirst, data, NULL};
  expect_invalid(&negf, 0, "offset 0 is negative", NULL);
  int64_t some[] = {3, 3, 3, 5};
  tabcl_strings_view nodata = {3, some, NULL, NULL};
  expect_invalid(&nodata, 7, "data is NULL", "label 2 has 2 bytes");
  cr_expect_eq(tabcl__strings_validate(NULL, "f", 1), TABCL_INVALID_ARGUMENT);
}

Test(strings, valid_bits) {
  int64_t off[11] = {0};
  uint8_t bits[2] = {0x05, 0x02};
  tabcl_strings_view v = {10, off, NULL, bits};
  int want[10] = {1, 0, 1, 0, 0, 0, 0, 0, 0, 1};
  for (int i = 0; i < 10; i++) cr_expect_eq(tabcl__strings_valid(&v, i), want[i], "label %d", i);
  v.validity = NULL;
  for (int i = 0; i < 10; i++) cr_expect(tabcl__strings_valid(&v, i));
}

/* Reads d back and compares with the view: rebased offsets, the column's
   bytes from offset 0, zero padding to whole words, validity. */
static void expect_uploaded(tabcl_context *ctx, const tabcl_dev_strings *d, int64_t length,
                            const int64_t *offsets, const uint8_t *data, const uint8_t *validity) {
  int64_t first = length ? offsets[0] : 0, bytes = length ? offsets[length] - first : 0;
  cr_assert_eq(d->length, length);
  cr_assert_eq(d->bytes, bytes);
  int64_t longest = 0;
  for (int64_t i = 0; i < length; i++)
    if (offsets[i + 1] - offsets[i] > longest) longest = offsets[i + 1] - offsets[i];
  cr_expect_eq(d->max_label, longest);
  cr_assert_not_null(d->data);
  cr_assert_not_null(d->offsets);
  int64_t *off = malloc(((size_t)length + 1) * sizeof *off);
  size_t padded = ((size_t)bytes + 7) / 8 * 8 + 8;
  uint8_t *bytes_back = malloc(padded);
  tt_assert_ok(tabcl__read(ctx, d->offsets, 0, ((size_t)length + 1) * sizeof *off, off));
  tt_assert_ok(tabcl__read(ctx, d->data, 0, padded, bytes_back));
  for (int64_t i = 0; i <= length; i++)
    cr_assert_eq(off[i], (length ? offsets[i] : 0) - first, "offset %lld", (long long)i);
  if (bytes) cr_assert(memcmp(bytes_back, data + first, (size_t)bytes) == 0, "label bytes");
  for (size_t i = (size_t)bytes; i < padded; i++) cr_assert_eq(bytes_back[i], 0, "padding byte %zu", i);
  if (validity) {
    size_t vb = ((size_t)length + 7) / 8;
    uint8_t *vback = malloc(vb ? vb : 1);
    cr_assert_not_null(d->validity);
    tt_assert_ok(tabcl__read(ctx, d->validity, 0, vb, vback));
    cr_expect(memcmp(vback, validity, vb) == 0, "validity bitmap");
    free(vback);
  } else {
    cr_expect_null(d->validity);
  }
  free(off);
  free(bytes_back);
}

Test(strings, upload_slices_nulls_and_empties) {
  tabcl_context *ctx = tt_context();
  tt_live base = tt_live_now();
  tt_rng r = {tt_seed("strings/upload")};
  for (int64_t first = 0; first < 12; first += 5) {
    tt_strings s;
    tt_strings_init(&s, first);
    for (int i = 0; i < 1000; i++) {
      if (i % 7 == 3) {
        tt_strings_push_null(&s);
        continue;
      }
      uint8_t b[40];
      size_t n = (size_t)tt_below(&r, sizeof b);
      for (size_t k = 0; k < n; k++) b[k] = (uint8_t)tt_next(&r);
      tt_strings_push(&s, b, n);
    }
    tabcl_strings_view v = tt_view(&s);
    tabcl_dev_strings d;
    memset(&d, 0, sizeof d);
    tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));
    expect_uploaded(ctx, &d, v.length, v.offsets, v.data, v.validity);
    tabcl__strings_release(&d);
    tabcl__strings_release(&d); /* released twice is fine: it was zeroed */
    tt_strings_free(&s);
  }
  /* empty column, NULL offsets */
  tabcl_strings_view none = {0, NULL, NULL, NULL};
  tabcl_dev_strings d;
  memset(&d, 0, sizeof d);
  tt_assert_ok(tabcl__strings_upload(ctx, &none, &d));
  int64_t zero = 0;
  expect_uploaded(ctx, &d, 0, &zero, NULL, NULL);
  tabcl__strings_release(&d);
  /* only empty labels, no data, offsets starting past 0 */
  int64_t flat[6] = {9, 9, 9, 9, 9, 9};
  uint8_t vbits[1] = {0x1B};
  tabcl_strings_view empties = {5, flat, NULL, vbits};
  tt_assert_ok(tabcl__strings_upload(ctx, &empties, &d));
  expect_uploaded(ctx, &d, 5, flat, NULL, vbits);
  tabcl__strings_release(&d);
  tabcl__strings_release(NULL);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

Test(strings, upload_more_offsets_than_one_staging_chunk) {
  tabcl_context *ctx = tt_context();
  tt_strings s;
  tt_strings_init(&s, 3);
  for (int i = 0; i < 150000; i++) tt_strings_push(&s, "abcdefg", (size_t)(i % 8));
  tabcl_strings_view v = tt_view(&s);
  tabcl_dev_strings d;
  memset(&d, 0, sizeof d);
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));
  expect_uploaded(ctx, &d, v.length, v.offsets, v.data, NULL);
  tabcl__strings_release(&d);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

Test(strings, upload_bad_view_is_rejected) {
  tabcl_context *ctx = tt_context();
  tt_live base = tt_live_now();
  int64_t dec[] = {0, 3, 2};
  tabcl_strings_view v = {2, dec, (const uint8_t *)"abc", NULL};
  tabcl_dev_strings d;
  memset(&d, 0x5A, sizeof d);
  tabcl_dev_strings before = d;
  cr_expect_eq(tabcl__strings_upload(ctx, &v, &d), TABCL_INVALID_ARGUMENT);
  cr_expect(strstr(tabcl_last_error(), "decrease at label 1") != NULL, "%s", tabcl_last_error());
  cr_expect(memcmp(&d, &before, sizeof d) == 0, "out untouched on failure");
  int32_t dec32[] = {0, 3, 2};
  cr_expect_eq(tabcl__strings_upload32(ctx, 2, dec32, (const uint8_t *)"abc", NULL, &d),
               TABCL_INVALID_ARGUMENT);
  cr_expect(strstr(tabcl_last_error(), "tabcl__strings_upload32") != NULL, "%s", tabcl_last_error());
  cr_expect(strstr(tabcl_last_error(), "decrease at label 1") != NULL, "%s", tabcl_last_error());
  int32_t neg32[] = {0, -3};
  cr_expect_eq(tabcl__strings_upload32(ctx, 1, neg32, (const uint8_t *)"abc", NULL, &d),
               TABCL_INVALID_ARGUMENT);
  cr_expect(strstr(tabcl_last_error(), "offset 1 is negative") != NULL, "%s", tabcl_last_error());
  cr_expect_eq(tabcl__strings_upload32(ctx, -2, neg32, NULL, NULL, &d), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl__strings_upload32(ctx, 2, NULL, NULL, NULL, &d), TABCL_INVALID_ARGUMENT);
  int32_t some32[] = {1, 1, 4};
  cr_expect_eq(tabcl__strings_upload32(ctx, 2, some32, NULL, NULL, &d), TABCL_INVALID_ARGUMENT);
  cr_expect(strstr(tabcl_last_error(), "data is NULL but label 1 has 3 bytes") != NULL, "%s",
            tabcl_last_error());
  cr_expect(memcmp(&d, &before, sizeof d) == 0, "out untouched on failure");
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

Test(strings, upload32_converts_arrow_offsets) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("strings/upload32")};
  int n = 70000;
  int32_t *o32 = malloc(((size_t)n + 1) * sizeof *o32);
  int64_t *o64 = malloc(((size_t)n + 1) * sizeof *o64);
  o32[0] = 6;
  for (int i = 0; i < n; i++) o32[i + 1] = o32[i] + (int32_t)tt_below(&r, 20);
  for (int i = 0; i <= n; i++) o64[i] = o32[i];
  uint8_t *data = malloc((size_t)o32[n]);
  for (int32_t i = 0; i < o32[n]; i++) data[i] = (uint8_t)tt_next(&r);
  uint8_t *bits = malloc((size_t)n / 8 + 1);
  for (int i = 0; i < n / 8 + 1; i++) bits[i] = (uint8_t)tt_next(&r);
  tabcl_dev_strings d;
  memset(&d, 0, sizeof d);
  tt_assert_ok(tabcl__strings_upload32(ctx, n, o32, data, bits, &d));
  expect_uploaded(ctx, &d, n, o64, data, bits);
  tabcl__strings_release(&d);
  tt_assert_ok(tabcl__strings_upload32(ctx, 0, NULL, NULL, NULL, &d));
  int64_t zero = 0;
  expect_uploaded(ctx, &d, 0, &zero, NULL, NULL);
  tabcl__strings_release(&d);
  free(o32);
  free(o64);
  free(data);
  free(bits);
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
static void sweep_upload(int which, int arrow) {
  tabcl_context *ctx = tt_context();
  int64_t off64[] = {4, 5, 5, 9, 12};
  int32_t off32[] = {4, 5, 5, 9, 12};
  const uint8_t data[] = "....abcdefghijk";
  uint8_t bits[1] = {0x0D};
  for (long n = 1; n < 1000; n++) {
    tt_live base = tt_live_now();
    tabcl_dev_strings d;
    memset(&d, 0x33, sizeof d);
    tabcl_dev_strings before = d;
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_strings_view v = {4, off64, data, bits};
    tabcl_status s = arrow ? tabcl__strings_upload32(ctx, 4, off32, data, bits, &d)
                           : tabcl__strings_upload(ctx, &v, &d);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (fired) {
      cr_expect_neq(s, TABCL_OK, "failure %ld was swallowed", n);
      cr_expect(memcmp(&d, &before, sizeof d) == 0, "out untouched after failure %ld", n);
      tt_expect_no_leak(base);
      continue;
    }
    cr_expect_eq(s, TABCL_OK, "%s", tabcl_last_error());
    expect_uploaded(ctx, &d, 4, off64, data, bits);
    tabcl__strings_release(&d);
    tt_expect_no_leak(base);
    cr_log_info("upload sweep: %ld points", n - 1);
    break;
  }
  tabcl_context_destroy(ctx);
}
Test(strings_faults, injected_alloc_failures) { sweep_upload(0, 0); sweep_upload(0, 1); }
Test(strings_faults, injected_cl_failures) { sweep_upload(1, 0); sweep_upload(1, 1); }
#endif
