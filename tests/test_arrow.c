/* Arrow C Data Interface import (include/tabcl/tabcl_arrow.h) on arrays
 * built here by hand: every string format, slices with and without a
 * byte-aligned bitmap, every dictionary index width, each checked against
 * the labels the array was built from; every malformed array refused with
 * its message, the output zeroed and nothing leaked; allocation failures;
 * random arrays against their own labels (seeded); and the imports used by
 * lookup and align on the device against a host scan of the vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "tabcl/tabcl_arrow.h"
#include "tt.h"

static void release_schema(struct ArrowSchema *s) { s->release = NULL; }
static void release_array(struct ArrowArray *a) { a->release = NULL; }

/* A string array and (for dictionaries) its values, all pointing at
   caller-owned buffers. */
typedef struct built {
  struct ArrowSchema schema, vschema;
  struct ArrowArray array, varray;
  const void *buffers[3], *vbuffers[3];
} built;

static void set_schema(struct ArrowSchema *s, const char *format) {
  memset(s, 0, sizeof *s);
  s->format = format;
  s->flags = ARROW_FLAG_NULLABLE;
  s->release = release_schema;
}

static void set_array(struct ArrowArray *a, const void **buffers, int64_t nbuf, int64_t length,
                      int64_t offset, int64_t null_count) {
  memset(a, 0, sizeof *a);
  a->length = length;
  a->offset = offset;
  a->null_count = null_count;
  a->n_buffers = nbuf;
  a->buffers = buffers;
  a->release = release_array;
}

static void make_strings(built *b, const char *format, int64_t length, int64_t offset,
                         int64_t null_count, const void *validity, const void *offsets,
                         const void *data) {
  memset(b, 0, sizeof *b);
  set_schema(&b->schema, format);
  b->buffers[0] = validity;
  b->buffers[1] = offsets;
  b->buffers[2] = data;
  set_array(&b->array, b->buffers, 3, length, offset, null_count);
}

/* Labels i of a view, compared with want[i] (NULL = null). */
static void expect_labels(const tabcl_strings_view *v, const char *const *want, int64_t n) {
  cr_assert_eq(v->length, n, "length %lld, want %lld", (long long)v->length, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    int present = !v->validity || ((v->validity[i / 8] >> (i % 8)) & 1);
    if (!want[i]) {
      cr_expect(!present, "label %lld should be null", (long long)i);
      continue;
    }
    cr_expect(present, "label %lld should be present", (long long)i);
    int64_t len = v->offsets[i + 1] - v->offsets[i];
    cr_expect_eq(len, (int64_t)strlen(want[i]), "label %lld length", (long long)i);
    if (len == (int64_t)strlen(want[i]) && len)
      cr_expect(memcmp(v->data + v->offsets[i], want[i], (size_t)len) == 0, "label %lld bytes",
                (long long)i);
  }
}

/* The baseline string array: "J" then, as a slice from 1, "ab", null, "",
   "xyz" (bitmap bits 0..4 = 1 1 0 1 1). */
static const char base_data[] = "Jabxyz";
static const int32_t base_off32[] = {0, 1, 3, 3, 3, 6};
static const int64_t base_off64[] = {0, 1, 3, 3, 3, 6};
static const uint8_t base_bits[] = {0x1B};
static const char *const base_want[] = {"ab", NULL, "", "xyz"};

Test(arrow, utf8_slice_widened_and_repacked) {
  built b;
  make_strings(&b, "u", 4, 1, 1, base_bits, base_off32, base_data);
  tabcl_arrow_strings s;
  tt_live base = tt_live_now();
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  expect_labels(&s.view, base_want, 4);
  cr_expect_neq((const void *)s.view.offsets, (const void *)base_off32, "32-bit offsets widened");
  cr_expect_neq((const void *)s.view.validity, (const void *)base_bits,
                "an offset of 1 re-packs the bitmap");
  cr_expect_eq(s.view.validity[0] & 0x0F, 0x0D, "re-packed bits 1 0 1 1");
  cr_expect_eq(s.view.offsets[0], 1, "offsets keep their values (a slice)");
  cr_expect(b.array.release && b.schema.release, "the import releases nothing");
  tabcl_arrow_strings_free(&s);
  cr_expect_null(s.view.offsets);
  tt_expect_no_leak(base);
  tabcl_arrow_strings_free(NULL);
}

Test(arrow, large_formats_are_zero_copy) {
  const char *formats[] = {"U", "Z"};
  for (int f = 0; f < 2; f++) {
    built b;
    /* a slice starting at bit 8: both offsets and bitmap used in place */
    int64_t off[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 3, 6};
    uint8_t bits[] = {0xFF, 0x0B};
    make_strings(&b, formats[f], 4, 8, 1, bits, off, "Jabxyz");
    tabcl_arrow_strings s;
    tt_live base = tt_live_now();
    tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
    const char *want[] = {"J", "ab", NULL, "xyz"};
    expect_labels(&s.view, want, 4);
    cr_expect_eq(s.view.offsets, off + 8, "%s: offsets in place", formats[f]);
    cr_expect_eq(s.view.validity, bits + 1, "%s: bitmap in place", formats[f]);
    cr_expect_eq((const void *)s.view.data, (const void *)b.buffers[2]);
    cr_expect(!s.owned[0] && !s.owned[1], "nothing allocated");
    cr_expect_eq(tt_live_now().allocs, base.allocs);
    tabcl_arrow_strings_free(&s);
  }
}

Test(arrow, large_utf8_unaligned_slice) {
  built b;
  make_strings(&b, "U", 4, 1, 1, base_bits, base_off64, base_data);
  tabcl_arrow_strings s;
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  expect_labels(&s.view, base_want, 4);
  cr_expect_eq(s.view.offsets, base_off64 + 1, "offsets in place");
  cr_expect_neq((const void *)s.view.validity, (const void *)base_bits, "bitmap re-packed");
  cr_expect_null(s.owned[0]);
  tabcl_arrow_strings_free(&s);
}

Test(arrow, binary_32_bit) {
  built b;
  const char data[] = "a\0\xff" "bc";
  int32_t off[] = {0, 3, 3, 5};
  make_strings(&b, "z", 3, 0, 0, NULL, off, data);
  tabcl_arrow_strings s;
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  cr_assert_eq(s.view.length, 3);
  cr_expect_eq(s.view.offsets[1], 3);
  cr_expect(memcmp(s.view.data, "a\0\xff", 3) == 0, "bytes kept, NUL included");
  cr_expect_null(s.view.validity);
  tabcl_arrow_strings_free(&s);
}

Test(arrow, validity_edges) {
  built b;
  tabcl_arrow_strings s;
  /* null_count unknown (-1): the bitmap decides */
  make_strings(&b, "u", 4, 1, -1, base_bits, base_off32, base_data);
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  expect_labels(&s.view, base_want, 4);
  tabcl_arrow_strings_free(&s);
  /* a bitmap with no zero bit in the slice is dropped */
  uint8_t all[] = {0xFF};
  make_strings(&b, "u", 4, 1, 0, all, base_off32, base_data);
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  cr_expect_null(s.view.validity);
  tabcl_arrow_strings_free(&s);
  /* no bitmap and null_count -1: all present */
  make_strings(&b, "u", 4, 1, -1, NULL, base_off32, base_data);
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  cr_expect_null(s.view.validity);
  tabcl_arrow_strings_free(&s);
}

Test(arrow, empty_arrays) {
  built b;
  tabcl_arrow_strings s;
  make_strings(&b, "u", 0, 0, 0, NULL, NULL, NULL);
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  cr_expect_eq(s.view.length, 0);
  tabcl_arrow_strings_free(&s);
  int32_t one[] = {0};
  make_strings(&b, "u", 0, 0, 0, NULL, one, NULL);
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  cr_expect_eq(s.view.length, 0);
  tabcl_arrow_strings_free(&s);
  /* labels all empty, no data buffer */
  int64_t zeros[] = {0, 0, 0};
  make_strings(&b, "U", 2, 0, 0, NULL, zeros, NULL);
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  const char *want[] = {"", ""};
  expect_labels(&s.view, want, 2);
  tabcl_arrow_strings_free(&s);
}

/* ---- dictionaries --------------------------------------------------- */

/* Values: "v0" then, sliced from 1, "red", null, "green" (3 values). */
static const char vdata[] = "v0redgreen";
static const int32_t voff[] = {0, 2, 5, 5, 10};
static const uint8_t vbits[] = {0x0B};

static void make_dict(built *b, const char *index_format, int64_t length, int64_t offset,
                      int64_t null_count, const void *validity, const void *indices) {
  memset(b, 0, sizeof *b);
  set_schema(&b->schema, index_format);
  set_schema(&b->vschema, "u");
  b->schema.dictionary = &b->vschema;
  b->buffers[0] = validity;
  b->buffers[1] = indices;
  set_array(&b->array, b->buffers, 2, length, offset, null_count);
  b->vbuffers[0] = vbits;
  b->vbuffers[1] = voff;
  b->vbuffers[2] = vdata;
  set_array(&b->varray, b->vbuffers, 3, 3, 1, 1);
  b->array.dictionary = &b->varray;
}

/* Rows (from offset 1): 2, null, 0, 1, 2 for every index width; the null
   row holds an index out of range, which must not matter. */
#define DICT_INDICES(T) {(T)9, (T)2, (T)99, (T)0, (T)1, (T)2}
static const uint8_t ibits[] = {0x3B}; /* 1 1 0 1 1 1: row 1 of the slice null */

static void expect_dict(const tabcl_arrow_dictionary *d) {
  const char *cats[] = {"red", NULL, "green"};
  expect_labels(&d->view.categories, cats, 3);
  int32_t want[] = {2, -1, 0, 1, 2};
  cr_assert_eq(d->view.length, 5);
  for (int i = 0; i < 5; i++) cr_expect_eq(d->view.codes[i], want[i], "code %d", i);
}

Test(arrow, dictionary_every_index_width) {
  int8_t i8[] = DICT_INDICES(int8_t);
  uint8_t u8[] = DICT_INDICES(uint8_t);
  int16_t i16[] = DICT_INDICES(int16_t);
  uint16_t u16[] = DICT_INDICES(uint16_t);
  int32_t i32[] = DICT_INDICES(int32_t);
  uint32_t u32[] = DICT_INDICES(uint32_t);
  int64_t i64[] = DICT_INDICES(int64_t);
  uint64_t u64[] = DICT_INDICES(uint64_t);
  struct { const char *f; const void *p; } w[] = {{"c", i8},  {"C", u8},  {"s", i16}, {"S", u16},
                                                  {"i", i32}, {"I", u32}, {"l", i64}, {"L", u64}};
  for (int k = 0; k < 8; k++) {
    built b;
    make_dict(&b, w[k].f, 5, 1, 1, ibits, w[k].p);
    tabcl_arrow_dictionary d;
    tt_live base = tt_live_now();
    tabcl_status st = tabcl_arrow_dictionary_import(&b.schema, &b.array, &d);
    cr_assert_eq(st, TABCL_OK, "index format %s: %s", w[k].f, tabcl_last_error());
    cr_log_info("index format %s", w[k].f);
    expect_dict(&d);
    tabcl_arrow_dictionary_free(&d);
    tt_expect_no_leak(base);
  }
}

Test(arrow, dictionary_int32_without_nulls_in_place) {
  int32_t idx[] = {7, 2, 0, 1};
  built b;
  make_dict(&b, "i", 3, 1, 0, NULL, idx);
  tabcl_arrow_dictionary d;
  tt_assert_ok(tabcl_arrow_dictionary_import(&b.schema, &b.array, &d));
  cr_expect_eq(d.view.codes, idx + 1, "codes used in place");
  cr_expect_null(d.owned[2]);
  tabcl_arrow_dictionary_free(&d);
  cr_expect(!tabcl_arrow_is_dictionary(NULL) && tabcl_arrow_is_dictionary(&b.schema) &&
            !tabcl_arrow_is_dictionary(&b.vschema));
}

Test(arrow, dictionary_empty) {
  built b;
  make_dict(&b, "c", 0, 0, 0, NULL, NULL);
  b.varray.length = 0;
  b.varray.null_count = 0;
  tabcl_arrow_dictionary d;
  tt_assert_ok(tabcl_arrow_dictionary_import(&b.schema, &b.array, &d));
  cr_expect_eq(d.view.length, 0);
  cr_expect_eq(d.view.categories.length, 0);
  tabcl_arrow_dictionary_free(&d);
}

/* ---- malformed arrays ------------------------------------------------ */

static void expect_refused(tabcl_status st, const void *out, size_t n, const char *fn,
                           const char *part, const char *label) {
  cr_expect_eq(st, TABCL_INVALID_ARGUMENT, "%s: %s", label, tabcl_status_name(st));
  const char *msg = tabcl_last_error();
  cr_expect(strstr(msg, fn) != NULL, "%s: names the call: %s", label, msg);
  cr_expect(strstr(msg, part) != NULL, "%s: says '%s': %s", label, part, msg);
  if (out) {
    const uint8_t *p = out;
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += p[i] != 0;
    cr_expect_eq(nonzero, 0, "%s: out is zeroed on failure", label);
  }
}

Test(arrow, malformed_strings) {
  static const int32_t dec32[] = {0, 1, 3, 2, 3, 6};
  static const int64_t dec64[] = {0, 1, 3, 2, 3, 6};
  static const int32_t neg32[] = {0, -1, 3, 3, 3, 6};
  static const int64_t neg64[] = {0, -5, 3, 3, 3, 6};
  struct ArrowSchema inner;
  set_schema(&inner, "u");
  struct ArrowArray dict;
  memset(&dict, 0, sizeof dict);
  struct {
    const char *name, *msg;
    int which;
  } cases[] = {
      {"schema NULL", "schema is NULL", 1},
      {"array NULL", "array is NULL", 2},
      {"schema released", "schema is released", 3},
      {"array released", "array is released", 4},
      {"format NULL", "schema format is NULL", 5},
      {"format int32", "unsupported format \"i\"", 6},
      {"format too long", "unsupported format \"uu\"", 7},
      {"schema has a dictionary", "dictionary-encoded", 8},
      {"negative length", "negative length -1", 9},
      {"negative offset", "negative offset -2", 10},
      {"offset + length overflows", "overflows any buffer size", 11},
      {"length beyond any buffer", "length 1152921504606846975 overflows", 27},
      {"two buffers", "has 2 buffers; this format has 3", 12},
      {"buffers NULL", "buffers is NULL", 13},
      {"a child", "has 1 children", 14},
      {"null_count -2", "null_count -2 is outside [-1, length 4]", 15},
      {"null_count above length", "null_count 5 is outside", 16},
      {"nulls without a bitmap", "null_count is 1 but there is no validity bitmap", 17},
      {"null_count disagrees", "null_count is 2 but the validity bitmap has 1 nulls", 18},
      {"offsets NULL", "offsets buffer is NULL for 4 labels", 19},
      {"32-bit offsets decrease", "offsets decrease at label 1 (2 < 3)", 20},
      {"64-bit offsets decrease", "offsets decrease at label 1 (2 < 3)", 21},
      {"32-bit offset negative", "offset 0 is negative (-1)", 22},
      {"64-bit offset negative", "offset 0 is negative (-5)", 23},
      {"data NULL", "data buffer is NULL but the labels hold 5 bytes", 24},
      {"array has a dictionary", "has a dictionary but its schema has none", 25},
      {"null_count 0 but nulls", "null_count is 0 but the validity bitmap has 1 nulls", 26},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    built b;
    make_strings(&b, "u", 4, 1, 1, base_bits, base_off32, base_data);
    const struct ArrowSchema *sp = &b.schema;
    const struct ArrowArray *ap = &b.array;
    switch (cases[k].which) {
      case 1: sp = NULL; break;
      case 2: ap = NULL; break;
      case 3: b.schema.release = NULL; break;
      case 4: b.array.release = NULL; break;
      case 5: b.schema.format = NULL; break;
      case 6: b.schema.format = "i"; break;
      case 7: b.schema.format = "uu"; break;
      case 8: b.schema.dictionary = &inner; break;
      case 9: b.array.length = -1; break;
      case 10: b.array.offset = -2; break;
      case 11: b.array.offset = INT64_MAX - 2; break;
      case 12: b.array.n_buffers = 2; break;
      case 13: b.array.buffers = NULL; break;
      case 14: b.array.n_children = 1; break;
      case 15: b.array.null_count = -2; break;
      case 16: b.array.null_count = 5; break;
      case 17: b.buffers[0] = NULL; break;
      case 18: b.array.null_count = 2; break;
      case 19: b.buffers[1] = NULL; break;
      case 20: b.buffers[1] = dec32; break;
      case 21: b.schema.format = "U"; b.buffers[1] = dec64; break;
      case 22: b.buffers[1] = neg32; break;
      case 23: b.schema.format = "U"; b.buffers[1] = neg64; break;
      case 24: b.buffers[2] = NULL; break;
      case 25: b.array.dictionary = &dict; break;
      case 26: b.array.null_count = 0; break;
      case 27: b.array.length = INT64_MAX / 8; b.array.offset = 0; b.array.null_count = 0; break;
    }
    tabcl_arrow_strings s;
    memset(&s, 0xAB, sizeof s);
    tt_live base = tt_live_now();
    tabcl_status st = tabcl_arrow_strings_import(sp, ap, &s);
    expect_refused(st, &s, sizeof s, "tabcl_arrow_strings_import", cases[k].msg, cases[k].name);
    tt_expect_no_leak(base);
  }
  built b;
  make_strings(&b, "u", 4, 1, 1, base_bits, base_off32, base_data);
  expect_refused(tabcl_arrow_strings_import(&b.schema, &b.array, NULL), NULL, 0,
                 "tabcl_arrow_strings_import", "out is NULL", "out NULL");
}

Test(arrow, malformed_dictionaries) {
  static const int8_t big[] = {0, 3, 0, 0, 0, 0};
  static const int8_t negative[] = {0, 0, -1, 0, 0, 0};
  static const uint64_t huge[] = {0, 0, 0, UINT64_MAX, 0, 0};
  static const int32_t vdec[] = {0, 2, 5, 4, 10};
  int8_t ok[] = DICT_INDICES(int8_t);
  struct ArrowSchema nested;
  set_schema(&nested, "i");
  struct {
    const char *name, *msg;
    int which;
  } cases[] = {
      {"schema NULL", "schema is NULL", 1},
      {"array NULL", "array is NULL", 2},
      {"schema released", "schema is released", 3},
      {"array released", "array is released", 4},
      {"format NULL", "schema format is NULL", 5},
      {"no dictionary in the schema", "has no dictionary: not a dictionary-encoded array", 6},
      {"no dictionary in the array", "the array has no dictionary but its schema has one", 7},
      {"string index", "unsupported index format \"u\"", 8},
      {"float index", "unsupported index format \"f\"", 9},
      {"three buffers", "has 3 buffers; this format has 2", 10},
      {"indices NULL", "indices buffer is NULL for 5 rows", 11},
      {"index = number of values", "index 3 at row 0 is outside [0, 3)", 12},
      {"negative index", "index -1 at row 1 is outside [0, 3)", 13},
      {"uint64 index past INT64_MAX", "index 18446744073709551615 at row 2 is outside [0, 3)", 14},
      {"index null_count disagrees", "null_count is 0 but the validity bitmap has 1 nulls", 15},
      {"values format", "dictionary values: unsupported format \"l\"", 16},
      {"values released", "dictionary values: array is released", 17},
      {"values schema released", "dictionary values: schema is released", 18},
      {"values offsets decrease", "dictionary values: offsets decrease at label 1 (4 < 5)", 19},
      {"values negative length", "dictionary values: negative length -3", 20},
      {"values nested dictionary", "dictionary values: the array is dictionary-encoded", 21},
      {"negative length", "negative length -4", 23},
      {"a child", "has 2 children", 24},
      {"values nulls without a bitmap", "dictionary values: null_count is 1 but there is no", 25},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    built b;
    make_dict(&b, "c", 5, 1, 1, ibits, ok);
    const struct ArrowSchema *sp = &b.schema;
    const struct ArrowArray *ap = &b.array;
    switch (cases[k].which) {
      case 1: sp = NULL; break;
      case 2: ap = NULL; break;
      case 3: b.schema.release = NULL; break;
      case 4: b.array.release = NULL; break;
      case 5: b.schema.format = NULL; break;
      case 6: b.schema.dictionary = NULL; break;
      case 7: b.array.dictionary = NULL; break;
      case 8: b.schema.format = "u"; break;
      case 9: b.schema.format = "f"; break;
      case 10: b.array.n_buffers = 3; break;
      case 11: b.buffers[1] = NULL; break;
      case 12: b.buffers[0] = NULL; b.array.null_count = 0; b.buffers[1] = big; break;
      case 13: b.buffers[0] = NULL; b.array.null_count = 0; b.buffers[1] = negative; break;
      case 14: b.schema.format = "L"; b.buffers[0] = NULL; b.array.null_count = 0;
               b.buffers[1] = huge; break;
      case 15: b.array.null_count = 0; break;
      case 16: b.vschema.format = "l"; break;
      case 17: b.varray.release = NULL; break;
      case 18: b.vschema.release = NULL; break;
      case 19: b.vbuffers[1] = vdec; break;
      case 20: b.varray.length = -3; break;
      case 21: b.vschema.dictionary = &nested; break;
      case 23: b.array.length = -4; break;
      case 24: b.array.n_children = 2; break;
      case 25: b.vbuffers[0] = NULL; break;
    }
    tabcl_arrow_dictionary d;
    memset(&d, 0xAB, sizeof d);
    tt_live base = tt_live_now();
    tabcl_status st = tabcl_arrow_dictionary_import(sp, ap, &d);
    expect_refused(st, &d, sizeof d, "tabcl_arrow_dictionary_import", cases[k].msg,
                   cases[k].name);
    tt_expect_no_leak(base);
  }
  built b;
  make_dict(&b, "c", 5, 1, 1, ibits, ok);
  expect_refused(tabcl_arrow_dictionary_import(&b.schema, &b.array, NULL), NULL, 0,
                 "tabcl_arrow_dictionary_import", "out is NULL", "out NULL");
}

/* ---- allocation failures --------------------------------------------- */

Test(arrow, allocation_failures) {
  cr_assert(tabcl__fault_enabled(), "needs a build with TABCL_FAULT_INJECTION");
  int8_t idx[] = DICT_INDICES(int8_t);
  for (int which = 0; which < 2; which++) {
    for (long n = 1; n < 20; n++) {
      built b;
      tabcl_arrow_strings s;
      tabcl_arrow_dictionary d;
      if (which == 0) make_strings(&b, "u", 4, 1, 1, base_bits, base_off32, base_data);
      else make_dict(&b, "c", 5, 1, 1, ibits, idx);
      tt_live base = tt_live_now();
      tabcl__fault_set(n, 0);
      tabcl_status st = which == 0 ? tabcl_arrow_strings_import(&b.schema, &b.array, &s)
                                   : tabcl_arrow_dictionary_import(&b.schema, &b.array, &d);
      int fired = tabcl__fault_fired();
      tabcl__fault_reset();
      if (!fired) {
        tt_assert_ok(st);
        if (which == 0) {
          expect_labels(&s.view, base_want, 4);
          tabcl_arrow_strings_free(&s);
        } else {
          expect_dict(&d);
          tabcl_arrow_dictionary_free(&d);
        }
        cr_expect_gt(n, 1, "the import allocates (widened offsets, re-packed bitmap)");
        break;
      }
      cr_expect_eq(st, TABCL_OUT_OF_MEMORY, "%s, allocation %ld: %s", which ? "dictionary" : "strings",
                   n, tabcl_status_name(st));
      tt_expect_no_leak(base);
    }
  }
}

/* ---- random arrays against their own labels -------------------------- */

Test(arrow, random_arrays) {
  tt_rng r = {tt_seed("arrow/random_arrays")};
  for (int round = 0; round < 300; round++) {
    int64_t skip = (int64_t)tt_below(&r, 20), n = (int64_t)tt_below(&r, 70);
    int64_t total = skip + n;
    int wide = (int)tt_below(&r, 2), binary = (int)tt_below(&r, 2);
    int with_bits = (int)tt_below(&r, 3) != 0;
    char **labels = calloc((size_t)total + 1, sizeof *labels);
    int64_t *o64 = malloc(((size_t)total + 1) * 8);
    int32_t *o32 = malloc(((size_t)total + 1) * 4);
    uint8_t *bits = calloc((size_t)(total + 8) / 8 + 1, 1);
    char *data = malloc((size_t)total * 8 + 8);
    int64_t at = (int64_t)tt_below(&r, 5), nulls = 0;
    o64[0] = at;
    for (int64_t i = 0; i < total; i++) {
      int null = with_bits && tt_below(&r, 4) == 0;
      size_t len = (size_t)tt_below(&r, 9);
      char *lab = malloc(len + 1);
      for (size_t j = 0; j < len; j++) lab[j] = (char)('a' + tt_below(&r, 3));
      lab[len] = '\0';
      memcpy(data + at, lab, len);
      at += (int64_t)len;
      o64[i + 1] = at;
      if (null) {
        free(lab);
        lab = NULL;
        if (i >= skip) nulls++;
      } else {
        bits[i / 8] |= (uint8_t)(1u << (i % 8));
      }
      labels[i] = lab;
    }
    for (int64_t i = 0; i <= total; i++) o32[i] = (int32_t)o64[i];
    const char *format = wide ? (binary ? "Z" : "U") : (binary ? "z" : "u");
    built b;
    make_strings(&b, format, n, skip, tt_below(&r, 2) ? nulls : -1, with_bits ? bits : NULL,
                 wide ? (const void *)o64 : (const void *)o32, data);
    tabcl_arrow_strings s;
    tabcl_status st = tabcl_arrow_strings_import(&b.schema, &b.array, &s);
    cr_assert_eq(st, TABCL_OK, "round %d (%s, skip %lld, n %lld): %s", round, format,
                 (long long)skip, (long long)n, tabcl_last_error());
    expect_labels(&s.view, (const char *const *)labels + skip, n);
    tabcl_arrow_strings_free(&s);
    for (int64_t i = 0; i < total; i++) free(labels[i]);
    free(labels);
    free(o64);
    free(o32);
    free(bits);
    free(data);
  }
}

/* ---- on the device: lookup and align of imported arrays -------------- */

/* Last position of label (n bytes) in the vocabulary, or -1: the contract's
   BY_POSITION code, by a plain scan. */
static int32_t scan(const char *const *vocab, int nv, const uint8_t *label, int64_t n) {
  int32_t code = -1;
  for (int i = 0; i < nv; i++)
    if ((int64_t)strlen(vocab[i]) == n && (n == 0 || memcmp(vocab[i], label, (size_t)n) == 0))
      code = i;
  return code;
}

Test(arrow, lookup_and_align_on_the_device) {
  tabcl_context *ctx = tt_context();
  const char *vocab[] = {"green", "ab", "", "xyz", "red"};
  int64_t voffs[6] = {0};
  char vbytes[32];
  for (int i = 0; i < 5; i++) {
    size_t l = strlen(vocab[i]);
    memcpy(vbytes + voffs[i], vocab[i], l);
    voffs[i + 1] = voffs[i] + (int64_t)l;
  }
  tabcl_strings_view vv = {5, voffs, (const uint8_t *)vbytes, NULL};
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));

  built b;
  make_strings(&b, "u", 4, 1, 1, base_bits, base_off32, base_data);
  tabcl_arrow_strings s;
  tt_assert_ok(tabcl_arrow_strings_import(&b.schema, &b.array, &s));
  int32_t codes[4];
  int32_t *cp = codes;
  tt_assert_ok(tabcl_category_index_lookup(idx, 1, &s.view, &cp));
  for (int i = 0; i < 4; i++) {
    int32_t want = base_want[i] ? scan(vocab, 5, (const uint8_t *)base_want[i],
                                       (int64_t)strlen(base_want[i]))
                                : -1;
    cr_expect_eq(codes[i], want, "lookup row %d: %d, want %d", i, codes[i], want);
  }
  tabcl_arrow_strings_free(&s);

  int16_t ind[] = DICT_INDICES(int16_t);
  make_dict(&b, "s", 5, 1, 1, ibits, ind);
  tabcl_arrow_dictionary d;
  tt_assert_ok(tabcl_arrow_dictionary_import(&b.schema, &b.array, &d));
  int32_t aligned[5];
  int32_t *ap = aligned;
  tt_assert_ok(tabcl_category_index_align(idx, 1, &d.view, &ap));
  const char *rows[] = {"green", NULL, "red", NULL /* the null value */, "green"};
  for (int i = 0; i < 5; i++) {
    int32_t want = rows[i] ? scan(vocab, 5, (const uint8_t *)rows[i], (int64_t)strlen(rows[i])) : -1;
    cr_expect_eq(aligned[i], want, "align row %d: %d, want %d", i, aligned[i], want);
  }
  tabcl_arrow_dictionary_free(&d);
  tabcl_category_index_destroy(idx);
  tabcl_context_destroy(ctx);
}
