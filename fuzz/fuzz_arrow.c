/* Fuzzes the Arrow C Data Interface import (tabcl_arrow.h). The input is
 * decoded into a string array, or a dictionary array and its values, whose
 * header fields, offsets, bitmaps, indices and null counts may be anything
 * (negative lengths and offsets, decreasing or negative offsets, null
 * counts that disagree with the bitmap, indices out of range, missing
 * buffers, released structs). Every buffer is exactly as long as the header
 * says it must be, so an out-of-bounds read can only come from the import
 * trusting something it should have checked. This harness decides on its
 * own whether the array is valid: the import must accept exactly the valid
 * ones, give labels and codes equal to a decode of the buffers done here,
 * refuse the rest with TABCL_INVALID_ARGUMENT and a zeroed output, and
 * hold no memory after the free.
 *
 * Input layout:
 *   byte 0   bit0: dictionary array; bits 1-4: damage (0 none, see damage())
 *   dictionary only: an integer array header (below, format byte % 8 picks
 *            c C s S i I l L), then one byte per index (signed formats read
 *            it as int8, unsigned as uint8; 0xFF on an unsigned 64-bit
 *            index stands for UINT64_MAX) and its bitmap; then the values
 *   a string array header: format byte % 4 picks u U z Z
 *   header   format, length (0xFF: -1, else % 48), offset (0xFF: -2, else
 *            % 12), flags: bit0 validity bitmap, bits 1-2 null_count (0
 *            exact, 1 unknown -1, 2 exact + 1, 3 the next byte as int8)
 *   strings: offset + length + 1 offset records: c < 0xE0: the first is
 *            c % 16, the others add c % 24; 0xE0..0xEF: minus 1..16;
 *            0xF0..0xFF: a 16-bit value minus 0x100 follows
 *   bitmap   (offset + length + 7) / 8 bytes when bit0
 *   the rest the label bytes (zeros once the input ends) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "runtime/internal.h"
#include "tabcl/tabcl_arrow.h"

#define MAX_LEN 48
#define MAX_OFF 12

static void release_schema(struct ArrowSchema *s) { s->release = NULL; }
static void release_array(struct ArrowArray *a) { a->release = NULL; }

/* One array as decoded: its header, its buffers (malloc'd to their exact
   sizes) and what this harness knows about it. */
typedef struct arr {
  struct ArrowSchema schema;
  struct ArrowArray array;
  const void *buffers[3];
  void *own[3];
  int width, is_signed, wide;   /* index width, or strings' 64-bit offsets */
  int64_t entries;              /* offsets or indices held */
  int64_t *o;                   /* the offsets as int64 (strings) */
  int64_t *idx;                 /* the indices as read (dictionary; -1 for UINT64_MAX) */
  int valid;                    /* this harness's verdict on the header and buffers */
} arr;

static const char *const string_formats[] = {"u", "U", "z", "Z"};
static const char *const index_formats[] = {"c", "C", "s", "S", "i", "I", "l", "L"};

static int bit(const uint8_t *b, int64_t i) { return (b[i >> 3] >> (i & 7)) & 1; }

/* The header shared by both kinds; entries and the bitmap follow. */
static void read_header(fz_reader *r, arr *a, int64_t *null_mode, int64_t *raw_nulls) {
  uint8_t lb = fz_u8(r), ob = fz_u8(r), flags = fz_u8(r);
  a->array.length = lb == 0xFF ? -1 : lb % MAX_LEN;
  a->array.offset = ob == 0xFF ? -2 : ob % MAX_OFF;
  a->valid = a->array.length >= 0 && a->array.offset >= 0;
  a->entries = a->valid ? a->array.offset + a->array.length : 0;
  *null_mode = (flags >> 1) & 3;
  *raw_nulls = *null_mode == 3 ? (int8_t)fz_u8(r) : 0;
  a->own[0] = (flags & 1) ? calloc((size_t)(a->entries + 7) / 8 + 1, 1) : NULL;
}

/* After the bitmap is read: null_count by its mode, and its validity. */
static void finish_nulls(fz_reader *r, arr *a, int64_t mode, int64_t raw) {
  uint8_t *bits = a->own[0];
  int64_t nulls = 0;
  if (bits) {
    for (int64_t i = 0; i < (a->entries + 7) / 8; i++) bits[i] = fz_u8(r);
    for (int64_t i = 0; a->valid && i < a->array.length; i++)
      nulls += !bit(bits, a->array.offset + i);
  }
  a->array.null_count = mode == 0 ? nulls : mode == 1 ? -1 : mode == 2 ? nulls + 1 : raw;
  int64_t nc = a->array.null_count;
  if (nc < -1 || nc > a->array.length || (!bits && nc > 0) || (bits && nc >= 0 && nc != nulls))
    a->valid = 0;
  a->buffers[0] = bits;
}

static void read_strings(fz_reader *r, arr *a) {
  const char *format = string_formats[fz_u8(r) % 4];
  a->wide = format[0] == 'U' || format[0] == 'Z';
  a->schema = (struct ArrowSchema){.format = format, .release = release_schema};
  int64_t mode, raw;
  read_header(r, a, &mode, &raw);
  int64_t n = a->entries + 1;
  a->o = malloc((size_t)n * sizeof *a->o);
  int64_t maxo = 0;
  for (int64_t i = 0; i < n; i++) {
    uint8_t c = fz_u8(r);
    int64_t prev = i ? a->o[i - 1] : 0;
    if (c >= 0xF0) a->o[i] = (int64_t)fz_u16(r) - 0x100;
    else if (c >= 0xE0) a->o[i] = prev - 1 - (c & 0x0F);
    else a->o[i] = i ? prev + c % 24 : c % 16;
    if (a->o[i] > maxo) maxo = a->o[i];
  }
  /* the slice's offsets must be non-negative and non-decreasing */
  for (int64_t i = a->array.offset; a->valid && i <= a->entries; i++)
    if (a->o[i] < 0 || (i > a->array.offset && a->o[i] < a->o[i - 1])) a->valid = 0;
  finish_nulls(r, a, mode, raw);
  if (a->wide) {
    a->own[1] = malloc((size_t)n * 8);
    memcpy(a->own[1], a->o, (size_t)n * 8);
  } else {
    int32_t *o32 = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) o32[i] = (int32_t)a->o[i];
    a->own[1] = o32;
  }
  a->own[2] = malloc((size_t)maxo + 1);
  for (int64_t i = 0; i <= maxo; i++) ((uint8_t *)a->own[2])[i] = fz_u8(r);
  a->buffers[1] = a->own[1];
  a->buffers[2] = a->own[2];
  a->array = (struct ArrowArray){.length = a->array.length, .null_count = a->array.null_count,
                                 .offset = a->array.offset, .n_buffers = 3,
                                 .buffers = a->buffers, .release = release_array};
}

static void read_indices(fz_reader *r, arr *a) {
  int f = fz_u8(r) % 8;
  const char *format = index_formats[f];
  a->width = 1 << (f / 2);
  a->is_signed = f % 2 == 0;
  a->schema = (struct ArrowSchema){.format = format, .release = release_schema};
  int64_t mode, raw;
  read_header(r, a, &mode, &raw);
  int64_t n = a->entries ? a->entries : 1;
  a->idx = malloc((size_t)n * sizeof *a->idx);
  uint8_t *buf = calloc((size_t)n, (size_t)a->width);
  for (int64_t i = 0; i < a->entries; i++) {
    uint8_t b = fz_u8(r);
    int64_t v = a->is_signed ? (int8_t)b : b;
    uint64_t u = (uint64_t)v;
    if (!a->is_signed && a->width == 8 && b == 0xFF) u = UINT64_MAX, v = -1;
    memcpy(buf + i * a->width, &u, (size_t)a->width); /* little-endian: the low bytes */
    a->idx[i] = v;
  }
  finish_nulls(r, a, mode, raw);
  a->own[1] = buf;
  a->buffers[1] = buf;
  a->array = (struct ArrowArray){.length = a->array.length, .null_count = a->array.null_count,
                                 .offset = a->array.offset, .n_buffers = 2,
                                 .buffers = a->buffers, .release = release_array};
}

static void free_arr(arr *a) {
  for (int i = 0; i < 3; i++) free(a->own[i]);
  free(a->o);
  free(a->idx);
}

/* Damage the harness makes on purpose (each makes the array invalid). */
static int damage(int which, arr *top, arr *values) {
  struct ArrowArray *a = &top->array;
  switch (which) {
    case 1: top->schema.release = NULL; return 1;
    case 2: a->release = NULL; return 1;
    case 3: top->schema.format = NULL; return 1;
    case 4: a->n_buffers++; return 1;
    case 5: a->buffers = NULL; return 1;
    case 6: a->n_children = 1; return 1;
    case 7: top->schema.format = "f"; return 1;
    case 8:
      if (!values) return 0;
      values->array.release = NULL;
      return 1;
    case 9:
      if (!values) return 0;
      top->schema.dictionary = NULL;
      return 1;
    case 10:
      if (!values) return 0;
      a->dictionary = NULL;
      return 1;
    case 11:
      if (!values) return 0;
      values->schema.format = "c";
      return 1;
    default: return 0;
  }
}

/* Labels of the view against the decoded buffers. */
static void check_strings(const tabcl_strings_view *v, const arr *a) {
  FZ_CHECK(v->length == a->array.length, "length %lld, want %lld", (long long)v->length,
           (long long)a->array.length);
  const uint8_t *bits = a->buffers[0];
  for (int64_t i = 0; i < v->length; i++) {
    int64_t at = a->array.offset + i;
    int want = !bits || bit(bits, at);
    int got = !v->validity || bit(v->validity, i);
    FZ_CHECK(want == got, "label %lld: present %d, want %d", (long long)i, got, want);
    int64_t s = a->o[at], e = a->o[at + 1];
    FZ_CHECK(v->offsets[i + 1] - v->offsets[i] == e - s, "label %lld length", (long long)i);
    if (e > s)
      FZ_CHECK(memcmp(v->data + v->offsets[i], (const uint8_t *)a->buffers[2] + s,
                      (size_t)(e - s)) == 0, "label %lld bytes", (long long)i);
  }
}

static int all_zero(const void *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const uint8_t *)p)[i]) return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
  fz_reader r = {in, size, 0};
  uint8_t b0 = fz_u8(&r);
  int dict = b0 & 1;
  arr top, values;
  memset(&top, 0, sizeof top);
  memset(&values, 0, sizeof values);
  long live = tabcl__alloc_live();
  if (dict) {
    read_indices(&r, &top);
    read_strings(&r, &values);
    top.schema.dictionary = &values.schema;
    top.array.dictionary = &values.array;
  } else {
    read_strings(&r, &top);
  }
  int valid = top.valid && (!dict || values.valid);
  if (dict && valid) {
    const uint8_t *bits = top.buffers[0];
    for (int64_t i = 0; i < top.array.length; i++) {
      int64_t at = top.array.offset + i;
      if (bits && !bit(bits, at)) continue;
      if (top.idx[at] < 0 || top.idx[at] >= values.array.length) valid = 0;
    }
  }
  if (damage((b0 >> 1) & 15, &top, dict ? &values : NULL)) valid = 0;

  tabcl_status st;
  if (dict) {
    tabcl_arrow_dictionary d;
    memset(&d, 0xAB, sizeof d);
    st = tabcl_arrow_dictionary_import(&top.schema, &top.array, &d);
    if (st == TABCL_OK) {
      FZ_CHECK(valid, "an invalid dictionary array was accepted");
      check_strings(&d.view.categories, &values);
      const uint8_t *bits = top.buffers[0];
      for (int64_t i = 0; i < d.view.length; i++) {
        int64_t at = top.array.offset + i;
        int32_t want = bits && !bit(bits, at) ? -1 : (int32_t)top.idx[at];
        FZ_CHECK(d.view.codes[i] == want, "code %lld: %d, want %d", (long long)i,
                 d.view.codes[i], want);
      }
    } else {
      FZ_CHECK(all_zero(&d, sizeof d), "a refused import left its output set");
    }
    tabcl_arrow_dictionary_free(&d);
  } else {
    tabcl_arrow_strings s;
    memset(&s, 0xAB, sizeof s);
    st = tabcl_arrow_strings_import(&top.schema, &top.array, &s);
    if (st == TABCL_OK) {
      FZ_CHECK(valid, "an invalid string array was accepted");
      check_strings(&s.view, &top);
    } else {
      FZ_CHECK(all_zero(&s, sizeof s), "a refused import left its output set");
    }
    tabcl_arrow_strings_free(&s);
  }
  if (st != TABCL_OK) {
    FZ_CHECK(!valid, "a valid array was refused: %s", tabcl_last_error());
    FZ_CHECK(st == TABCL_INVALID_ARGUMENT, "refused with %s", tabcl_status_name(st));
    const char *msg = tabcl_last_error();
    FZ_CHECK(strncmp(msg, "tabcl_arrow_", 12) == 0, "message does not name the call: %s", msg);
  }
  FZ_CHECK(tabcl__alloc_live() == live, "the import holds %ld allocations after its free",
           tabcl__alloc_live() - live);
  free_arr(&top);
  free_arr(&values);
  return 0;
}
