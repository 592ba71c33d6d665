/* String columns: validation messages for every bad view, upload of
 * sliced, empty and Arrow 32-bit columns (read back and compared with the
 * host view), and failure injection over the upload; the same through the
 * GPU path's staging area forced on the CPU device (whole and in chunks of
 * a tiny area), with lookups and threads sharing it. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "columns/strings.h"
#include "tt.h"

static void expect_invalid(const tabcl_strings_view *v, int col, const char *part1, const char *part2) {
  tabcl_status s = tabcl__strings_validate(v, "tabcl_test_call", col, NULL);
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
  tt_assert_ok(tabcl__strings_validate(&v, "f", 0, NULL));
  tabcl_strings_view empty = {0, NULL, NULL, NULL};
  tt_assert_ok(tabcl__strings_validate(&empty, "f", 0, NULL));
  int64_t zero[] = {0, 0, 0};
  tabcl_strings_view no_bytes = {2, zero, NULL, NULL};
  tt_assert_ok(tabcl__strings_validate(&no_bytes, "f", 0, NULL));

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
  /* offsets at both ends of int64: their differences do not fit one (the
     fuzzer's find; UBSan flags any signed overflow in the check) */
  int64_t wide[] = {0, INT64_MAX, INT64_MIN, 4};
  tabcl_strings_view widev = {3, wide, data, NULL};
  expect_invalid(&widev, 5, "offset 2 is negative", NULL);
  int64_t wide_up[] = {0, 1, INT64_MAX};
  tabcl_strings_view wideu = {2, wide_up, data, NULL};
  int64_t longest = -1;
  tt_assert_ok(tabcl__strings_validate(&wideu, "f", 0, &longest));
  cr_expect_eq(longest, INT64_MAX - 1);
  int64_t negfirst[] = {-2, 2};
  tabcl_strings_view negf = {1, negfirst, data, NULL};
  expect_invalid(&negf, 0, "offset 0 is negative", NULL);
  int64_t some[] = {3, 3, 3, 5};
  tabcl_strings_view nodata = {3, some, NULL, NULL};
  expect_invalid(&nodata, 7, "data is NULL", "label 2 has 2 bytes");
  cr_expect_eq(tabcl__strings_validate(NULL, "f", 1, NULL), TABCL_INVALID_ARGUMENT);
}

/* The check's pass on the worker pool (long columns, upload.threads 4):
   the same verdicts, messages and longest label as on one thread, for a
   fault or the longest label in each of the threads' parts. */
Test(strings, long_columns_checked_on_threads) {
  tabcl_context *ctx = tt_context();
  enum { N = 300000 };
  int64_t *o = malloc((N + 1) * sizeof *o);
  uint8_t *data = calloc(N + 64, 1);
  cr_assert(o && data);
  for (int threads = 1; threads <= 4; threads += 3) {
    tt_tune(ctx, "upload.threads=%d", threads);
    static const int64_t at[] = {0, 1, 77777, 150001, N - 1};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
      for (int64_t i = 0; i <= N; i++) o[i] = i;
      o[at[k] + 1] += 40;   /* label at[k] is the longest: 41 bytes (the rest shift) */
      for (int64_t i = at[k] + 2; i <= N; i++) o[i] += 40;
      tabcl_strings_view v = {N, o, data, NULL};
      int64_t longest = -1;
      tt_assert_ok(tabcl__strings_validate_on(ctx, &v, "f", 0, &longest));
      cr_expect_eq(longest, 41, "%d threads, longest at %lld: %lld", threads, (long long)at[k],
                   (long long)longest);
      /* a decrease at label at[k] + 1 (or a negative offset after it) */
      for (int64_t i = 0; i <= N; i++) o[i] = i;
      if (at[k] + 2 <= N) {
        o[at[k] + 2] = at[k];
        tabcl_status st = tabcl__strings_validate_on(ctx, &v, "f", 3, NULL);
        cr_expect_eq(st, TABCL_INVALID_ARGUMENT);
        char want[96];
        snprintf(want, sizeof want, "column 3: offsets decrease at label %lld", (long long)at[k] + 1);
        cr_expect(strstr(tabcl_last_error(), want) != NULL, "%d threads: %s", threads,
                  tabcl_last_error());
        o[at[k] + 2] = -5;
        st = tabcl__strings_validate_on(ctx, &v, "f", 3, NULL);
        snprintf(want, sizeof want, "offset %lld is negative (-5)", (long long)at[k] + 2);
        cr_expect(st == TABCL_INVALID_ARGUMENT && strstr(tabcl_last_error(), want) != NULL,
                  "%d threads: %s", threads, tabcl_last_error());
      }
      /* bytes without data */
      for (int64_t i = 0; i <= N; i++) o[i] = i > at[k];
      tabcl_strings_view nodata = {N, o, NULL, NULL};
      tabcl_status st = tabcl__strings_validate_on(ctx, &nodata, "f", 1, NULL);
      char want[64];
      snprintf(want, sizeof want, "label %lld has 1 bytes", (long long)at[k]);
      cr_expect(st == TABCL_INVALID_ARGUMENT && strstr(tabcl_last_error(), want) != NULL,
                "%d threads: %s", threads, tabcl_last_error());
    }
  }
  tt_tune(ctx, "upload.threads=auto");
  free(o);
  free(data);
  tabcl_context_destroy(ctx);
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
static void expect_uploaded(tabcl_context *ctx, const tabcl__dev_strings *d, int64_t length,
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

/* on, cap: as tt_staging. */
static tabcl_context *context_staged(int on, size_t cap) {
  tabcl_context *ctx = tt_context();
  tt_staging(ctx, on, cap);
  cr_assert_eq(tabcl__upload_staged(ctx), on > 0 || (on == 0 && tabcl__upload_staged(ctx)));
  return ctx;
}

static void upload_slices_nulls_and_empties(int on, size_t cap) {
  tabcl_context *ctx = context_staged(on, cap);
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
    tabcl__dev_strings d;
    memset(&d, 0, sizeof d);
    tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));
    expect_uploaded(ctx, &d, v.length, v.offsets, v.data, v.validity);
    tabcl__strings_release(&d);
    tabcl__strings_release(&d); /* released twice is fine: it was zeroed */
    tt_strings_free(&s);
  }
  /* empty column, NULL offsets */
  tabcl_strings_view none = {0, NULL, NULL, NULL};
  tabcl__dev_strings d;
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

Test(strings, upload_slices_nulls_and_empties) { upload_slices_nulls_and_empties(0, 0); }
Test(strings_staged, upload_slices_nulls_and_empties) {
  upload_slices_nulls_and_empties(1, 0);
  upload_slices_nulls_and_empties(1, 40);   /* halves of 16 bytes: chunks everywhere */
  upload_slices_nulls_and_empties(1, 1000);
}

Test(strings, upload_more_offsets_than_one_staging_chunk) {
  tabcl_context *ctx = tt_context();
  tt_strings s;
  tt_strings_init(&s, 3);
  for (int i = 0; i < 150000; i++) tt_strings_push(&s, "abcdefg", (size_t)(i % 8));
  tabcl_strings_view v = tt_view(&s);
  tabcl__dev_strings d;
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
  tabcl__dev_strings d;
  memset(&d, 0x5A, sizeof d);
  tabcl__dev_strings before = d;
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

static void upload32_converts_arrow_offsets(int on, size_t cap) {
  tabcl_context *ctx = context_staged(on, cap);
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
  tabcl__dev_strings d;
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
Test(strings, upload32_converts_arrow_offsets) { upload32_converts_arrow_offsets(0, 0); }
Test(strings_staged, upload32_converts_arrow_offsets) {
  upload32_converts_arrow_offsets(1, 0);
  upload32_converts_arrow_offsets(1, 4096);
}

/* Several columns uploaded back to back before any is read: later chunks
   reuse halves whose earlier transfers may still be in flight. The first
   column is all 0xFF so that stale staging bytes would show in the later
   columns' zero padding. */
static void staged_back_to_back(size_t cap) {
  tabcl_context *ctx = context_staged(1, cap);
  long areas = tabcl__staging_live();
  tt_live base = tt_live_now();
  tt_rng r = {tt_seed("strings_staged/back_to_back")};
  enum { NCOL = 5 };
  tt_strings s[NCOL];
  tabcl__dev_strings d[NCOL];
  memset(d, 0, sizeof d);
  for (int c = 0; c < NCOL; c++) {
    tt_strings_init(&s[c], (int64_t)tt_below(&r, 9));
    int n = c == 0 ? 300 : (int)tt_below(&r, 2000);
    for (int i = 0; i < n; i++) {
      uint8_t b[33];
      size_t len = (size_t)tt_below(&r, sizeof b);
      for (size_t k = 0; k < len; k++) b[k] = c == 0 ? 0xFF : (uint8_t)tt_next(&r);
      if (c && i % 11 == 5) tt_strings_push_null(&s[c]);
      else tt_strings_push(&s[c], b, c == 0 ? 32 : len);
    }
    tabcl_strings_view v = tt_view(&s[c]);
    if (c % 2) {
      int32_t *o32 = malloc(((size_t)v.length + 1) * sizeof *o32);
      for (int64_t i = 0; i <= v.length; i++) o32[i] = (int32_t)v.offsets[i];
      tt_assert_ok(tabcl__strings_upload32(ctx, v.length, o32, v.data, v.validity, &d[c]));
      free(o32);   /* the upload owns nothing of the caller's once it returns */
    } else {
      tt_assert_ok(tabcl__strings_upload(ctx, &v, &d[c]));
    }
  }
  cr_expect_eq(tabcl__staging_live(), areas + 1, "one staging area for the context");
  cr_expect_leq(ctx->staging.size, cap ? cap : (size_t)64 << 20);
  for (int c = 0; c < NCOL; c++) {
    tabcl_strings_view v = tt_view(&s[c]);
    expect_uploaded(ctx, &d[c], v.length, v.offsets, v.data, v.validity);
    tabcl__strings_release(&d[c]);
    tt_strings_free(&s[c]);
  }
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
  cr_expect_eq(tabcl__staging_live(), areas, "the area goes with the context");
}
Test(strings_staged, back_to_back_columns) {
  staged_back_to_back(0);
  staged_back_to_back(16);    /* the smallest area: 8-byte halves */
  staged_back_to_back(104);
}

Test(strings_staged, area_grows_up_to_the_cap) {
  tabcl_context *ctx = context_staged(1, 1 << 20);
  tt_strings s;
  tt_strings_init(&s, 0);
  for (int i = 0; i < 20000; i++) tt_strings_push(&s, "0123456789abcdefghijklmnopqrstuvwxyz", 36);
  tabcl_strings_view v = tt_view(&s);
  tabcl_strings_view small = v;
  small.length = 10;
  tabcl__dev_strings d;
  tt_assert_ok(tabcl__strings_upload(ctx, &small, &d));
  size_t first = ctx->staging.size;
  cr_expect_leq(first, (size_t)64 << 10, "a small upload makes a small area");
  expect_uploaded(ctx, &d, small.length, small.offsets, small.data, NULL);
  tabcl__strings_release(&d);
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));   /* 720,000 bytes: past the cap's halves */
  cr_expect_eq(ctx->staging.size, (size_t)1 << 20, "grown to the cap, no further");
  expect_uploaded(ctx, &d, v.length, v.offsets, v.data, NULL);
  tabcl__strings_release(&d);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

/* Threads sharing one context take turns on its staging area. */
typedef struct upload_job {
  tabcl_context *ctx;
  int id, ok;
} upload_job;

static void *upload_thread(void *arg) {
  upload_job *j = arg;
  tt_rng r = {0x9E3779B97F4A7C15ull * (uint64_t)(j->id + 1)};
  j->ok = 1;
  for (int round = 0; round < 20 && j->ok; round++) {
    int64_t n = (int64_t)tt_below(&r, 300);
    int64_t *off = malloc(((size_t)n + 1) * sizeof *off);
    uint8_t *data = malloc((size_t)n * 24 + 1);
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) off[i + 1] = off[i] + (int64_t)tt_below(&r, 24);
    for (int64_t i = 0; i < off[n]; i++) data[i] = (uint8_t)(j->id * 31 + i);
    tabcl_strings_view v = {n, off, data, NULL};
    tabcl__dev_strings d;
    size_t padded = ((size_t)off[n] + 7) / 8 * 8 + 8;
    uint8_t *back = malloc(padded);
    int64_t *oback = malloc(((size_t)n + 1) * sizeof *oback);
    if (tabcl__strings_upload(j->ctx, &v, &d) != TABCL_OK) j->ok = 0;
    else {
      if (tabcl__read(j->ctx, d.data, 0, padded, back) != TABCL_OK ||
          tabcl__read(j->ctx, d.offsets, 0, ((size_t)n + 1) * 8, oback) != TABCL_OK ||
          (off[n] && memcmp(back, data, (size_t)off[n]) != 0) ||
          memcmp(oback, off, ((size_t)n + 1) * 8) != 0)
        j->ok = 0;
      for (size_t i = (size_t)off[n]; i < padded; i++)
        if (back[i]) j->ok = 0;
      tabcl__strings_release(&d);
    }
    free(off);
    free(data);
    free(back);
    free(oback);
  }
  return NULL;
}

Test(strings_staged, threads_share_the_area) {
  tabcl_context *ctx = context_staged(1, 64);
  enum { NT = 4 };
  pthread_t t[NT];
  upload_job j[NT];
  for (int i = 0; i < NT; i++) {
    j[i] = (upload_job){ctx, i, 0};
    cr_assert_eq(pthread_create(&t[i], NULL, upload_thread, &j[i]), 0);
  }
  for (int i = 0; i < NT; i++) {
    pthread_join(t[i], NULL);
    cr_expect(j[i].ok, "thread %d read back what it uploaded", i);
  }
  tabcl_context_destroy(ctx);
}

/* A lookup (upload, kernels, read back) through a tiny staging area gives
   the codes the device's own path gives. */
Test(strings_staged, lookup_matches_the_mapped_path) {
  tt_rng r = {tt_seed("strings_staged/lookup")};
  tt_strings vocab, query;
  tt_strings_init(&vocab, 0);
  tt_strings_init(&query, 5);
  char b[80];
  for (int i = 0; i < 500; i++) {
    int len = snprintf(b, sizeof b, "label-%d-%0*d", i, (int)(i % 60), 7);
    tt_strings_push(&vocab, b, (size_t)len);
  }
  for (int i = 0; i < 3000; i++) {
    if (i % 13 == 4) {
      tt_strings_push_null(&query);
      continue;
    }
    int k = (int)tt_below(&r, 600);   /* past 500: not in the vocabulary */
    int len = snprintf(b, sizeof b, "label-%d-%0*d", k, (int)(k % 60), 7);
    tt_strings_push(&query, b, (size_t)len);
  }
  tabcl_strings_view vv = tt_view(&vocab), qv = tt_view(&query);
  int32_t *want = malloc((size_t)qv.length * sizeof *want);
  int32_t *got = malloc((size_t)qv.length * sizeof *got);
  for (int pass = 0; pass < 3; pass++) {
    tabcl_context *ctx = pass == 0 ? context_staged(-1, 0) : context_staged(1, pass == 1 ? 0 : 200);
    tabcl_category_index *idx = NULL;
    tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));
    int32_t *out = pass == 0 ? want : got;
    tt_assert_ok(tabcl_category_index_lookup(idx, 1, &qv, &out));
    if (pass) cr_expect(memcmp(want, got, (size_t)qv.length * sizeof *got) == 0, "pass %d", pass);
    tabcl_category_index_destroy(idx);
    tabcl_context_destroy(ctx);
  }
  /* and the codes are right, not merely equal */
  for (int64_t i = 0; i < qv.length; i++) {
    size_t n;
    const uint8_t *l = tt_label(&qv, i, &n);
    int expect = -1;
    if (l) {
      int k = -1;
      if (sscanf((const char *)l, "label-%d-", &k) == 1 && k < 500) expect = k;
    }
    cr_expect_eq(want[i], expect, "query %lld", (long long)i);
    if (want[i] != expect) break;
  }
  free(want);
  free(got);
  tt_strings_free(&vocab);
  tt_strings_free(&query);
}

/* Under oclgrind (a device that says it is a GPU and a CPU) uploads keep
   the whole-buffer map that its uninitialised-value tracking follows. */
Test(oclgrind_strings, tiny_upload_keeps_the_map) {
  tabcl_options o = {0};
  o.cache_dir = "";
  tabcl_context *ctx = tt_context_with(&o);
  /* unless TABCL_TUNE sets upload.staging */
  if (ctx->info.is_cpu && ctx->tune.origin[TABCL__TUNE_UPLOAD_STAGING] != TABCL__TUNE_FROM_OVERRIDE)
    cr_expect(!tabcl__upload_staged(ctx), "a CPU device maps");
  int64_t off[] = {2, 3, 3, 7};
  const uint8_t data[] = "..abcdef";
  uint8_t bits[1] = {0x05};
  tabcl_strings_view v = {3, off, data, bits};
  tabcl__dev_strings d;
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));
  expect_uploaded(ctx, &d, 3, off, data, bits);
  tabcl__strings_release(&d);
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
/* on, cap: as tt_set_staging; fresh: every run starts without a
   staging area (so its creation is swept too), else with the last run's. */
static void sweep_upload(int which, int arrow, int on, size_t cap, int fresh) {
  tabcl_context *ctx = context_staged(on, cap);
  int64_t off64[] = {4, 5, 5, 9, 12};
  int32_t off32[] = {4, 5, 5, 9, 12};
  const uint8_t data[] = "....abcdefghijk";
  uint8_t bits[1] = {0x0D};
  long areas = tabcl__staging_live();
  if (!fresh) {
    /* the area made, and transfers from it maybe still pending */
    tabcl_strings_view v = {4, off64, data, bits};
    tabcl__dev_strings d;
    tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));
    tabcl__strings_release(&d);
  }
  for (long n = 1; n < 1000; n++) {
    if (fresh) tt_staging(ctx, on, cap);
    tt_live base = tt_live_now();
    tabcl__dev_strings d;
    memset(&d, 0x33, sizeof d);
    tabcl__dev_strings before = d;
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_strings_view v = {4, off64, data, bits};
    tabcl_status s = arrow ? tabcl__strings_upload32(ctx, 4, off32, data, bits, &d)
                           : tabcl__strings_upload(ctx, &v, &d);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    cr_expect_leq(tabcl__staging_live(), areas + 1, "one area at most, run %ld", n);
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
  /* still usable after every failure: upload and check once more */
  tabcl__dev_strings d;
  tabcl_strings_view v = {4, off64, data, bits};
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));
  expect_uploaded(ctx, &d, 4, off64, data, bits);
  tabcl__strings_release(&d);
  tabcl_context_destroy(ctx);
}
Test(strings_faults, injected_alloc_failures) { sweep_upload(0, 0, 0, 0, 0); sweep_upload(0, 1, 0, 0, 0); }
Test(strings_faults, injected_cl_failures) { sweep_upload(1, 0, 0, 0, 0); sweep_upload(1, 1, 0, 0, 0); }
Test(strings_faults, staged_alloc_failures) {
  for (int fresh = 0; fresh < 2; fresh++) {
    sweep_upload(0, 0, 1, 0, fresh);
    sweep_upload(0, 1, 1, 24, fresh);
  }
}
Test(strings_faults, staged_cl_failures) {
  for (int fresh = 0; fresh < 2; fresh++)
    for (int arrow = 0; arrow < 2; arrow++) {
      sweep_upload(1, arrow, 1, 0, fresh);
      sweep_upload(1, arrow, 1, 16, fresh);   /* 8-byte halves: every chunk's wait and flush */
    }
}

/* The host lookup call through a tiny staging area: every injected
   failure returns non-OK, leaks nothing and leaves the codes untouched,
   and the index and context go on working. host 1: the call on the
   calling thread instead (lookup.host_rows), each try with a fresh index,
   whose first such call maps its tables. */
static void sweep_lookup(int which, int fresh, int host) {
  tabcl_context *ctx = context_staged(1, 32);
  tt_tune(ctx, "lookup.host_rows=%s;lookup.host_threads=%s", host ? "1099511627776" : "0",
          host ? "auto" : "0");
  static const char *const vocab[] = {"red", "green", "blue", "a much longer label than the rest"};
  static const char *const query[] = {"blue", "nope", "red", "a much longer label than the rest",
                                      "green"};
  const int32_t want[5] = {2, -1, 0, 3, 1};
  tt_strings v, q;
  tt_strings_init(&v, 0);
  tt_strings_init(&q, 3);
  for (int i = 0; i < 4; i++) tt_strings_push(&v, vocab[i], strlen(vocab[i]));
  for (int i = 0; i < 5; i++) tt_strings_push(&q, query[i], strlen(query[i]));
  tabcl_strings_view vv = tt_view(&v), qv = tt_view(&q);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));
  int32_t got[5];
  int32_t *out = got;
  tt_assert_ok(tabcl_category_index_lookup(idx, 1, &qv, &out));   /* programs built */
  long n = 1;
  for (; n < 2000; n++) {
    if (fresh) tt_staging(ctx, 1, 32);
    tabcl_category_index_destroy(idx);
    idx = NULL;
    tt_live before_fit = tt_live_now();
    tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));
    tt_live base = tt_live_now();
    for (int i = 0; i < 5; i++) got[i] = 77;
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_status s = tabcl_category_index_lookup(idx, 1, &qv, &out);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    /* a host call that succeeded left its index the mapped tables' record,
       which the index's destroy gives back */
    if (fired || !host) {
      tt_expect_no_leak(base);
    } else {
      tabcl_category_index_destroy(idx);
      idx = NULL;
      tt_expect_no_leak(before_fit);
      tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));
      tt_assert_ok(tabcl_category_index_lookup(idx, 1, &qv, &out));
    }
    if (fired) {
      cr_expect_neq(s, TABCL_OK, "failure %ld was swallowed", n);
      for (int i = 0; i < 5; i++) cr_expect_eq(got[i], 77, "code %d touched by failure %ld", i, n);
      continue;
    }
    tt_assert_ok(s);
    for (int i = 0; i < 5; i++) cr_expect_eq(got[i], want[i], "query %d", i);
    break;
  }
  /* the host plan: its record (one allocation), or each table's size
     query and map (twelve OpenCL calls) */
  cr_expect_gt(n, host ? (which == 0 ? 1 : 12) : 3, "the sweep reached the %s",
               host ? "tables' maps" : "uploads");
  cr_log_info("staged lookup sweep: %ld points", n - 1);
  tabcl_category_index_destroy(idx);
  tt_strings_free(&v);
  tt_strings_free(&q);
  tabcl_context_destroy(ctx);
}
Test(strings_faults, staged_lookup_alloc_failures) { sweep_lookup(0, 0, 0); sweep_lookup(0, 1, 0); }
Test(strings_faults, staged_lookup_cl_failures) { sweep_lookup(1, 0, 0); sweep_lookup(1, 1, 0); }
Test(strings_faults, host_lookup_failures) { sweep_lookup(0, 0, 1); sweep_lookup(1, 0, 1); }
#endif
