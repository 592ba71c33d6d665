/* Fuzzes string-view validation and lookup. The input is decoded into a
 * tabcl_strings_view whose values may be anything (negative length,
 * decreasing, negative or huge offsets, NULL data, any validity bits and
 * bytes) and looked up in a small fitted index. Every array handed over is
 * exactly as long as the contract says it must be (offsets has length + 1
 * entries; data covers offsets[length] whenever the offsets are valid), so
 * an out-of-bounds read can only come from the library trusting a value it
 * should have checked. A valid view's codes are compared with a host
 * reference; a rejected one must leave the output untouched.
 *
 * Input layout:
 *   byte 0   length: 0..39, or 0xFF for length -1
 *   byte 1   flags: bit0 validity bitmap follows, bit1 data = NULL,
 *            bit2 look up in the two-column BY_VALUE index (view in column 1)
 *   byte 2   argument damage: 1 offsets NULL, 2 codes[c] NULL, 3 codes NULL,
 *            4 ncols 0, 5 ncols too large, 6 index NULL, 7 queries NULL
 *   length+1 offset records: one byte c; c < 0xE0: the first is a slice
 *            start c % 16, the others add c % 24 to the previous offset;
 *            0xE0..0xEF: previous minus 1..16; 0xF0..0xFF: 8 raw bytes follow
 *   bitmap   (length + 7) / 8 bytes when bit0
 *   the rest the label bytes */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

#define MAX_LEN 40
#define MAX_DATA (1 << 20)
#define POISON 0x5EADBEEF

typedef struct label { const char *s; size_t n; int null; } label;
static const label vocab[] = {
  {"", 0, 0},       {"a", 1, 0},           {"b", 1, 0},  {"ab", 2, 0},
  {"abc", 3, 0},    {"\0", 1, 0},          {"\xff\xfe", 2, 0}, {"zz", 2, 0},
  {"a", 1, 0},      {"never", 5, 1},       {"hello world", 11, 0},
  {"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80", 17, 0},
};
#define NV (int)(sizeof vocab / sizeof vocab[0])

static tabcl_category_index *by_pos, *by_val;
static int64_t *voffsets;
static uint8_t *vdata, vvalid[(NV + 7) / 8];

static tabcl_strings_view vocab_view(void) {
  tabcl_strings_view v = {NV, voffsets, vdata, vvalid};
  return v;
}

static int label_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  size_t m = an < bn ? an : bn;
  int c = m ? memcmp(a, b, m) : 0;
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

/* The host reference: a linear scan of the vocabulary. */
static int32_t reference(int by_value, const uint8_t *q, size_t n) {
  if (!by_value) {
    int32_t code = -1;
    for (int i = 0; i < NV; i++)
      if (!vocab[i].null && label_cmp(q, n, (const uint8_t *)vocab[i].s, vocab[i].n) == 0)
        code = i;
    return code;
  }
  int found = 0;
  for (int i = 0; i < NV; i++)
    if (!vocab[i].null && label_cmp(q, n, (const uint8_t *)vocab[i].s, vocab[i].n) == 0)
      found = 1;
  if (!found) return -1;
  /* rank = distinct present labels below q */
  int32_t rank = 0;
  for (int i = 0; i < NV; i++) {
    if (vocab[i].null) continue;
    if (label_cmp((const uint8_t *)vocab[i].s, vocab[i].n, q, n) >= 0) continue;
    int dup = 0;
    for (int j = 0; j < i; j++)
      if (!vocab[j].null &&
          label_cmp((const uint8_t *)vocab[j].s, vocab[j].n, (const uint8_t *)vocab[i].s, vocab[i].n) == 0)
        dup = 1;
    if (!dup) rank++;
  }
  return rank;
}

/* Done on the first input rather than in LLVMFuzzerInitialize: PoCL's LLVM
   installs signal handlers, and libFuzzer only installs its own (which save
   the crashing input) where none is installed yet. */
static void setup(void) {
  tabcl_context *ctx = fz_context();
  voffsets = malloc((NV + 1) * sizeof *voffsets);
  size_t total = 0;
  for (int i = 0; i < NV; i++) total += vocab[i].n;
  vdata = malloc(total);
  voffsets[0] = 0;
  for (int i = 0; i < NV; i++) {
    memcpy(vdata + voffsets[i], vocab[i].s, vocab[i].n);
    voffsets[i + 1] = voffsets[i] + (int64_t)vocab[i].n;
    if (!vocab[i].null) vvalid[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  tabcl_strings_view v[2] = {vocab_view(), vocab_view()};
  tabcl_status s1 = tabcl_category_index_fit(ctx, 1, v, TABCL_CODES_BY_POSITION, &by_pos);
  tabcl_status s2 = tabcl_category_index_fit(ctx, 2, v, TABCL_CODES_BY_VALUE, &by_val);
  if (s1 != TABCL_OK || s2 != TABCL_OK) {
    fprintf(stderr, "fuzz: fit failed: %s\n", tabcl_last_error());
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
  if (!by_pos) setup();
  fz_reader r = {in, size, 0};
  uint8_t b0 = fz_u8(&r), flags = fz_u8(&r), damage = fz_u8(&r);
  int64_t n = b0 == 0xFF ? -1 : b0 % MAX_LEN;
  size_t slots = n < 0 ? 1 : (size_t)n + 1;
  int64_t *offsets = malloc(slots * sizeof *offsets);
  int ok_offsets = 1;
  for (size_t i = 0; i < slots; i++) {
    uint8_t c = fz_u8(&r);
    int64_t prev = i ? offsets[i - 1] : 0;
    if (c >= 0xF0) offsets[i] = (int64_t)fz_u64(&r);
    /* unsigned arithmetic: wrapping past INT64_MAX is just another bad value */
    else if (c >= 0xE0) offsets[i] = (int64_t)((uint64_t)prev - 1 - (c & 0x0F));
    else offsets[i] = i ? (int64_t)((uint64_t)prev + c % 24) : c % 16;
    if (offsets[i] < 0 || (i && offsets[i] < prev)) ok_offsets = 0;
  }
  size_t vbytes = n > 0 ? ((size_t)n + 7) / 8 : 0;
  uint8_t *validity = NULL;
  if (flags & 1) {
    validity = malloc(vbytes ? vbytes : 1);
    for (size_t i = 0; i < vbytes; i++) validity[i] = fz_u8(&r);
  }
  int valid = n >= 0 && ok_offsets;
  int64_t first = offsets[0], last = n >= 0 ? offsets[n] : 0;
  /* Valid offsets promise data up to offsets[length]: the buffer must hold
     that much, or the call cannot be made honestly. */
  size_t have = fz_left(&r);
  size_t data_len = have;
  if (valid && last > (int64_t)have) {
    if (last > MAX_DATA) {
      free(offsets);
      free(validity);
      return 0;
    }
    data_len = (size_t)last;
  }
  uint8_t *data = malloc(data_len);
  for (size_t i = 0; i < data_len; i++) data[i] = have ? r.p[r.at + i % have] : (uint8_t)i;
  int data_null = (flags & 2) != 0;
  if (data_null && valid && last > first) valid = -1; /* bytes but no data: must be rejected */

  int two = (flags & 4) != 0;
  tabcl_category_index *idx = two ? by_val : by_pos;
  int ncols = two ? 2 : 1, col = two ? 1 : 0;
  tabcl_strings_view q[2];
  q[0] = vocab_view();
  q[col].length = n;
  q[col].offsets = offsets;
  q[col].data = data_null ? NULL : data;
  q[col].validity = validity;
  int32_t fixed[NV], *out = malloc((n > 0 ? (size_t)n : 1) * sizeof *out);
  size_t nout = n > 0 ? (size_t)n : 0;
  for (int i = 0; i < NV; i++) fixed[i] = POISON;
  for (size_t i = 0; i < nout; i++) out[i] = POISON;
  int32_t *codes[2] = {fixed, out};
  if (!two) codes[0] = out;

  int32_t *const *codes_arg = codes;
  const tabcl_strings_view *q_arg = q;
  int ncols_arg = ncols;
  switch (damage) {
    case 1: q[col].offsets = NULL; break;
    case 2: codes[col] = NULL; break;
    case 3: codes_arg = NULL; break;
    case 4: ncols_arg = 0; break;
    case 5: ncols_arg = ncols + 1; break;
    case 6: idx = NULL; break;
    case 7: q_arg = NULL; break;
    default: damage = 0;
  }
  /* What the call must answer: 0 TABCL_INVALID_ARGUMENT, 1 TABCL_OK,
     2 either. An empty column may come without offsets or codes; a view
     with NULL data whose bytes all belong to null labels may be taken. */
  int expect;
  if (damage >= 3) expect = 0;
  else if (damage == 1) expect = n == 0 ? 2 : 0;
  else if (damage == 2) expect = valid == 0 ? 0 : n == 0 ? 2 : 0;
  else expect = valid == 1 ? 1 : valid == -1 ? 2 : 0;

  tabcl_status s = tabcl_category_index_lookup(idx, ncols_arg, q_arg, codes_arg);
  fz_restore_signals();
  const char *msg = tabcl_last_error();
  if (expect == 0)
    FZ_CHECK(s == TABCL_INVALID_ARGUMENT, "damage %d, length %lld, view %s: got %s", damage,
             (long long)n, valid ? "valid" : "invalid", tabcl_status_name(s));
  else if (expect == 1)
    FZ_CHECK(s == TABCL_OK, "valid view (length %lld) refused: %s", (long long)n,
             tabcl_status_name(s));
  else
    FZ_CHECK(s == TABCL_OK || s == TABCL_INVALID_ARGUMENT, "damage %d: got %s", damage,
             tabcl_status_name(s));
  if (s == TABCL_INVALID_ARGUMENT) {
    FZ_CHECK(strstr(msg, "tabcl_category_index_lookup") != NULL, "message names no call: %s", msg);
    if (!damage && two)
      FZ_CHECK(strstr(msg, "column 1") != NULL, "message names no column: %s", msg);
  }
  if (s != TABCL_OK) {
    for (size_t i = 0; i < nout; i++)
      FZ_CHECK(out[i] == POISON, "failed call wrote codes[%zu] = %d", i, out[i]);
    if (two)
      for (int i = 0; i < NV; i++) FZ_CHECK(fixed[i] == POISON, "failed call wrote column 0");
  } else {
    for (int64_t i = 0; i < n; i++) {
      int present = !validity || (validity[i / 8] >> (i % 8) & 1);
      int32_t want = -1;
      if (present) {
        size_t len = (size_t)(offsets[i + 1] - offsets[i]);
        want = reference(two, len ? data + offsets[i] : (const uint8_t *)"", len);
      }
      FZ_CHECK(out[i] == want, "label %lld: code %d, reference %d", (long long)i, out[i], want);
    }
    if (two)
      for (int i = 0; i < NV; i++)
        FZ_CHECK(fixed[i] == (vocab[i].null ? -1 : reference(1, (const uint8_t *)vocab[i].s, vocab[i].n)),
                 "column 0 label %d: %d", i, fixed[i]);
  }
  free(out);
  free(data);
  free(validity);
  free(offsets);
  return 0;
}
