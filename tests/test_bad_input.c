/* Every bad input of the public contract (include/tabcl/tabcl.h, and
 * tabcl_context_create_cl of include/tabcl/tabcl_cl.h): each must
 * give its status and a message that names the call and the problem, leave
 * every output exactly as it was and leak nothing. The cases are one table,
 * and the bad-input catalogue in tests/README.md is generated from it
 * (with the messages the library actually gave); catalogue/in_sync fails
 * when the two differ. Regenerate with
 *   TABCL_UPDATE_CATALOGUE=1 ./tests/test_bad_input --filter 'catalogue/in_sync'
 * (run from the build folder; it rewrites the table in the source tree). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tabcl/tabcl_cl.h"
#include "tt.h"

#define POISON32 0x7A7A7A7A
#define POISON8 0xA5

/* ---- the fixture: one context, one fitted index, good arguments ------- */

typedef struct fx {
  tabcl_context *ctx;
  tabcl_category_index *idx;        /* 2 columns, BY_POSITION */
  tt_strings vocab[2], query[2];
  char good_file[512];              /* a valid saved copy of idx */
  char home[4096], dir[64];         /* the folder the test started in; its own */
} fx;

static void push(tt_strings *s, const char *label) { tt_strings_push(s, label, strlen(label)); }

static void fx_init(fx *f) {
  memset(f, 0, sizeof *f);
  /* Each test (a process of its own under Criterion) works in a folder of
     its own: the files' names are fixed, since the messages in the
     catalogue name them, and tests running side by side (--jobs) unlinked
     each other's. */
  cr_assert(getcwd(f->home, sizeof f->home));
  snprintf(f->dir, sizeof f->dir, "/tmp/tabcl-bad-input-XXXXXX");
  cr_assert(mkdtemp(f->dir));
  cr_assert_eq(chdir(f->dir), 0);
  f->ctx = tt_context();
  const char *v0[] = {"a", "b", "c"}, *v1[] = {"x", "yy"};
  tt_strings_init(&f->vocab[0], 0);
  tt_strings_init(&f->vocab[1], 0);
  for (int i = 0; i < 3; i++) push(&f->vocab[0], v0[i]);
  for (int i = 0; i < 2; i++) push(&f->vocab[1], v1[i]);
  tabcl_strings_view v[2] = {tt_view(&f->vocab[0]), tt_view(&f->vocab[1])};
  tt_assert_ok(tabcl_category_index_fit(f->ctx, 2, v, TABCL_CODES_BY_POSITION, &f->idx));
  tt_strings_init(&f->query[0], 0);
  tt_strings_init(&f->query[1], 0);
  push(&f->query[0], "a");
  push(&f->query[0], "zz");
  push(&f->query[0], "c");
  push(&f->query[1], "yy");
  push(&f->query[1], "x");
  /* Relative paths keep the messages in the catalogue free of temp names. */
  snprintf(f->good_file, sizeof f->good_file, "bad-input-good.idx");
  tt_assert_ok(tabcl_category_index_save(f->idx, f->good_file));
}

static void fx_fini(fx *f) {
  tabcl_category_index_destroy(f->idx);
  for (int i = 0; i < 2; i++) {
    tt_strings_free(&f->vocab[i]);
    tt_strings_free(&f->query[i]);
  }
  unlink(f->good_file);
  unlink("bad-input-damaged.idx");
  unlink("bad-input-never-written.idx");
  tabcl_context_destroy(f->ctx);
  cr_assert_eq(chdir(f->home), 0);
  rmdir(f->dir);
}

/* Writes a damaged copy of the good file: mode 0 empty, 1 truncated,
   2 extended, 3 a byte flipped in the middle, 4 bad magic. */
static void damaged_copy(const fx *f, const char *path, int mode) {
  FILE *in = fopen(f->good_file, "rb");
  cr_assert(in);
  unsigned char buf[65536];
  size_t n = fread(buf, 1, sizeof buf, in);
  fclose(in);
  cr_assert_gt(n, 16);
  if (mode == 0) n = 0;
  else if (mode == 1) n -= 5;
  else if (mode == 2) memcpy(buf + n, "MORE", 4), n += 4;
  else if (mode == 3) buf[n / 2] ^= 0x10;
  else buf[0] ^= 0xFF;
  FILE *out = fopen(path, "wb");
  cr_assert(out);
  cr_assert_eq(fwrite(buf, 1, n, out), n);
  fclose(out);
}

/* ---- the cases -------------------------------------------------------- */

typedef enum call_id {
  C_CREATE, C_FIT, C_LOOKUP, C_ALIGN, C_SAVE, C_LOAD, C_SDPA, C_CREATE_CL
} call_id;
static const char *call_names[] = {
  "tabcl_context_create", "tabcl_category_index_fit", "tabcl_category_index_lookup",
  "tabcl_category_index_align", "tabcl_category_index_save", "tabcl_category_index_load",
  "tabcl_sdpa_host", "tabcl_context_create_cl"};

typedef struct bad_case {
  call_id call;
  int mut;                  /* which damage, per call (see the runners) */
  const char *input;        /* the catalogue's description */
  tabcl_status want;
  const char *needles[3];   /* the message must contain each */
} bad_case;

static const bad_case cases[] = {
  {C_CREATE, 1, "`out` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_context_create", "out is NULL"}},
  {C_CREATE, 2, "`max_batch_per_launch` = -1", TABCL_INVALID_ARGUMENT,
   {"tabcl_context_create", "max_batch_per_launch", "-1"}},
  {C_CREATE, 3, "`device` = \"no-such-device-xyz\"", TABCL_NO_DEVICE, {"no-such-device-xyz"}},
  {C_CREATE, 4, "`device` = \"99:0\" (no such platform)", TABCL_NO_DEVICE, {"99:0"}},
  {C_CREATE, 5, "`device` = \"0:99\" (no such device)", TABCL_NO_DEVICE, {"0:99"}},
  {C_CREATE, 6, "`device_profile` = \"no-such-gpu\"", TABCL_INVALID_ARGUMENT,
   {"tabcl_context_create", "no-such-gpu", "apple-m"}},

  {C_FIT, 1, "`ctx` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "ctx"}},
  {C_FIT, 2, "`out` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "out"}},
  {C_FIT, 3, "`ncols` = 0", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "ncols", "0"}},
  {C_FIT, 4, "`ncols` = -1", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "ncols", "-1"}},
  {C_FIT, 5, "`vocabularies` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "vocabularies"}},
  {C_FIT, 6, "`order` = 7 (not a tabcl_code_order)", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "order", "7"}},
  {C_FIT, 7, "column 1: `length` = -2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "column 1", "-2"}},
  {C_FIT, 8, "column 1: `offsets` NULL, `length` 2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "column 1", "offsets"}},
  {C_FIT, 9, "column 0: offsets decrease at label 1", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "column 0", "label 1"}},
  {C_FIT, 10, "column 0: `offsets[0]` = -1", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "column 0", "negative"}},
  {C_FIT, 11, "column 1: `offsets[2]` = -4 (last offset negative)", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "column 1", "negative"}},
  {C_FIT, 12, "column 0: `data` NULL but labels have bytes", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_fit", "column 0", "data"}},

  {C_LOOKUP, 1, "`idx` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "idx"}},
  {C_LOOKUP, 2, "`ncols` = 1, index has 2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "ncols", "2"}},
  {C_LOOKUP, 3, "`ncols` = 3, index has 2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "ncols", "3"}},
  {C_LOOKUP, 4, "`queries` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "queries"}},
  {C_LOOKUP, 5, "`codes` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "codes"}},
  {C_LOOKUP, 6, "`codes[1]` NULL for a column with rows", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "column 1", "codes"}},
  {C_LOOKUP, 7, "column 1: `length` = -1", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "column 1", "-1"}},
  {C_LOOKUP, 8, "column 1: `offsets` NULL, `length` 2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "column 1", "offsets"}},
  {C_LOOKUP, 9, "column 0: offsets decrease at label 2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "column 0", "label 2"}},
  {C_LOOKUP, 10, "column 1: `offsets[1]` = -3", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "column 1", "negative"}},
  {C_LOOKUP, 11, "column 0: `data` NULL but labels have bytes", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_lookup", "column 0", "data"}},

  {C_ALIGN, 1, "`idx` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "idx"}},
  {C_ALIGN, 2, "`ncols` = 3, index has 2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "ncols", "3"}},
  {C_ALIGN, 3, "`inputs` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "inputs"}},
  {C_ALIGN, 4, "`codes` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "codes"}},
  {C_ALIGN, 5, "`codes[0]` NULL for a column with rows", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "column 0", "codes"}},
  {C_ALIGN, 6, "column 1: `length` = -1", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "column 1", "-1"}},
  {C_ALIGN, 7, "column 1: input `codes` NULL, `length` 3", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "column 1", "codes"}},
  {C_ALIGN, 8, "column 0: input code 3 at row 1, 3 categories", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "column 0", "row 1"}},
  {C_ALIGN, 9, "column 1: input code -2 at row 2", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "column 1", "row 2"}},
  {C_ALIGN, 10, "column 1: categories' offsets decrease at label 0", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "column 1", "label 0"}},
  {C_ALIGN, 11, "column 0: categories' `data` NULL with bytes", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_align", "column 0", "data"}},

  {C_SAVE, 1, "`idx` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_save", "idx"}},
  {C_SAVE, 2, "`path` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_save", "path"}},
  {C_SAVE, 3, "`path` is \"\"", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_save", "path"}},
  {C_SAVE, 4, "`path` in a folder that does not exist", TABCL_IO_ERROR, {"tabcl_category_index_save", "/no-such-folder-tabcl/x.idx"}},
  {C_SAVE, 5, "`path` is a folder (\".\")", TABCL_IO_ERROR, {"tabcl_category_index_save", "."}},

  {C_LOAD, 1, "`ctx` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_load", "ctx"}},
  {C_LOAD, 2, "`path` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_load", "path"}},
  {C_LOAD, 3, "`out` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_category_index_load", "out"}},
  {C_LOAD, 4, "no file at `path`", TABCL_IO_ERROR, {"tabcl_category_index_load", "bad-input-missing.idx"}},
  {C_LOAD, 5, "`path` is a folder (\".\")", TABCL_IO_ERROR, {"tabcl_category_index_load", "."}},
  {C_LOAD, 6, "empty file", TABCL_CORRUPT_DATA, {"tabcl_category_index_load", "bad-input-damaged.idx"}},
  {C_LOAD, 7, "file truncated by 5 bytes", TABCL_CORRUPT_DATA, {"tabcl_category_index_load", "bad-input-damaged.idx"}},
  {C_LOAD, 8, "file extended by 4 bytes", TABCL_CORRUPT_DATA, {"tabcl_category_index_load", "bad-input-damaged.idx"}},
  {C_LOAD, 9, "one byte flipped in the middle", TABCL_CORRUPT_DATA, {"tabcl_category_index_load", "bad-input-damaged.idx"}},
  {C_LOAD, 10, "first byte (magic) changed", TABCL_CORRUPT_DATA, {"tabcl_category_index_load", "bad-input-damaged.idx"}},

  {C_SDPA, 1, "`ctx` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "ctx"}},
  {C_SDPA, 2, "`desc` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "desc"}},
  {C_SDPA, 3, "`batch` = -1", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "batch", "-1"}},
  {C_SDPA, 4, "`q_len` = -1", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "q_len", "-1"}},
  {C_SDPA, 5, "`kv_len` = -1", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "kv_len", "-1"}},
  {C_SDPA, 6, "`q_heads` = 0", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "q_heads"}},
  {C_SDPA, 7, "`kv_heads` = 0", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "kv_heads"}},
  {C_SDPA, 8, "`head_dim` = 0", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "head_dim"}},
  {C_SDPA, 9, "`q_heads` = -2", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "q_heads", "-2"}},
  {C_SDPA, 10, "`q_heads` 4 not a multiple of `kv_heads` 3", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "q_heads", "kv_heads"}},
  {C_SDPA, 11, "`dtype` = 9", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "dtype", "9"}},
  {C_SDPA, 12, "`mask` kind = 5", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "mask", "5"}},
  {C_SDPA, 13, "`scale` = NaN", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "scale"}},
  {C_SDPA, 14, "`scale` = +inf", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "scale"}},
  {C_SDPA, 15, "`q` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "q is NULL"}},
  {C_SDPA, 16, "`k` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "k is NULL"}},
  {C_SDPA, 17, "`v` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "v is NULL"}},
  {C_SDPA, 18, "`out` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "out is NULL"}},
  {C_SDPA, 19, "`mask` NULL with TABCL_MASK_BOOL", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "mask", "TABCL_MASK_BOOL"}},
  {C_SDPA, 20, "`mask` NULL with TABCL_MASK_ADD", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "mask", "TABCL_MASK_ADD"}},
  {C_SDPA, 21, "`q_len` = 2^31", TABCL_INVALID_ARGUMENT, {"tabcl_sdpa_host", "q_len"}},

  {C_CREATE_CL, 1, "`out` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_context_create_cl", "out is NULL"}},
  {C_CREATE_CL, 2, "`context` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_context_create_cl", "context is NULL"}},
  {C_CREATE_CL, 3, "`device` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_context_create_cl", "device is NULL"}},
  {C_CREATE_CL, 4, "`queue` is NULL", TABCL_INVALID_ARGUMENT, {"tabcl_context_create_cl", "queue is NULL"}},
  {C_CREATE_CL, 5, "`opts->device` = \"0:0\" (must be NULL)", TABCL_INVALID_ARGUMENT,
   {"tabcl_context_create_cl", "opts->device", "must be NULL"}},
  {C_CREATE_CL, 6, "`max_batch_per_launch` = -1", TABCL_INVALID_ARGUMENT,
   {"tabcl_context_create_cl", "max_batch_per_launch", "-1"}},
  {C_CREATE_CL, 7, "`queue` of another OpenCL context", TABCL_INVALID_ARGUMENT,
   {"tabcl_context_create_cl", "queue", "CL_QUEUE_CONTEXT"}},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* ---- runners: build good arguments, damage one, call, check outputs ---- */

/* Each returns the call's status; *untouched says whether every output
   kept its poison. */

static tabcl_status run_create(fx *f, int mut, int *untouched) {
  (void)f;
  tabcl_options o = {0};
  o.cache_dir = "";
  tabcl_context *c = (tabcl_context *)&o;   /* poison: must become NULL */
  tabcl_status s;
  switch (mut) {
    case 1: s = tabcl_context_create(&o, NULL); *untouched = 1; return s;
    case 2: o.max_batch_per_launch = -1; break;
    case 3: o.device = "no-such-device-xyz"; break;
    case 4: o.device = "99:0"; break;
    case 5: o.device = "0:99"; break;
    default: o.device_profile = "no-such-gpu"; break;
  }
  s = tabcl_context_create(&o, &c);
  /* The contract: on failure *out is set to NULL. */
  *untouched = c == NULL;
  if (s == TABCL_OK) tabcl_context_destroy(c);
  return s;
}

static tabcl_status run_fit(fx *f, int mut, int *untouched) {
  tabcl_strings_view v[2] = {tt_view(&f->vocab[0]), tt_view(&f->vocab[1])};
  int64_t off[4] = {0, 2, 1, 3};
  tabcl_context *ctx = f->ctx;
  int ncols = 2;
  const tabcl_strings_view *vp = v;
  tabcl_code_order order = TABCL_CODES_BY_VALUE;
  tabcl_category_index *poison = (tabcl_category_index *)&off, *out = poison;
  tabcl_category_index **outp = &out;
  switch (mut) {
    case 1: ctx = NULL; break;
    case 2: outp = NULL; break;
    case 3: ncols = 0; break;
    case 4: ncols = -1; break;
    case 5: vp = NULL; break;
    case 6: order = (tabcl_code_order)7; break;
    case 7: v[1].length = -2; break;
    case 8: v[1].offsets = NULL; break;
    case 9: v[0].offsets = off; break;       /* 0, 2, 1, 3 */
    case 10: off[0] = -1; off[1] = 1; off[2] = 2; off[3] = 3; v[0].offsets = off; break;
    case 11: off[0] = 0; off[1] = 1; off[2] = -4; v[1].offsets = off; break;
    default: v[0].data = NULL; break;
  }
  tabcl_status s = tabcl_category_index_fit(ctx, ncols, vp, order, outp);
  /* Untouched, or cleared to NULL: either leaves the caller nothing to free. */
  *untouched = out == poison || out == NULL;
  if (s == TABCL_OK && out != poison) tabcl_category_index_destroy(out);
  return s;
}

static tabcl_status run_lookup(fx *f, int mut, int *untouched) {
  tabcl_strings_view q[3] = {tt_view(&f->query[0]), tt_view(&f->query[1]), tt_view(&f->query[1])};
  int32_t c0[3], c1[2], c2[2];
  for (int i = 0; i < 3; i++) c0[i] = POISON32;
  for (int i = 0; i < 2; i++) c1[i] = c2[i] = POISON32;
  int32_t *codes[3] = {c0, c1, c2};
  int64_t off[4] = {0, 1, 3, 2};
  tabcl_category_index *idx = f->idx;
  int ncols = 2;
  const tabcl_strings_view *qp = q;
  int32_t *const *cp = codes;
  switch (mut) {
    case 1: idx = NULL; break;
    case 2: ncols = 1; break;
    case 3: ncols = 3; break;
    case 4: qp = NULL; break;
    case 5: cp = NULL; break;
    case 6: codes[1] = NULL; break;
    case 7: q[1].length = -1; break;
    case 8: q[1].offsets = NULL; break;
    case 9: q[0].offsets = off; break;        /* 0, 1, 3, 2 */
    case 10: off[0] = 0; off[1] = -3; off[2] = 1; q[1].offsets = off; break;
    default: q[0].data = NULL; break;
  }
  tabcl_status s = tabcl_category_index_lookup(idx, ncols, qp, cp);
  *untouched = 1;
  for (int i = 0; i < 3; i++) *untouched &= c0[i] == POISON32;
  for (int i = 0; i < 2; i++) *untouched &= c1[i] == POISON32 && c2[i] == POISON32;
  return s;
}

static tabcl_status run_align(fx *f, int mut, int *untouched) {
  int32_t in0[2] = {2, 0}, in1[3] = {1, -1, 0};
  tabcl_dictionary_view d[3];
  d[0].categories = tt_view(&f->vocab[0]);
  d[0].length = 2;
  d[0].codes = in0;
  d[1].categories = tt_view(&f->query[1]);
  d[1].length = 3;
  d[1].codes = in1;
  d[2] = d[1];
  int32_t c0[2] = {POISON32, POISON32}, c1[3] = {POISON32, POISON32, POISON32}, c2[3];
  for (int i = 0; i < 3; i++) c2[i] = POISON32;
  int32_t *codes[3] = {c0, c1, c2};
  int64_t off[3] = {3, 1, 2};
  tabcl_category_index *idx = f->idx;
  int ncols = 2;
  const tabcl_dictionary_view *dp = d;
  int32_t *const *cp = codes;
  switch (mut) {
    case 1: idx = NULL; break;
    case 2: ncols = 3; break;
    case 3: dp = NULL; break;
    case 4: cp = NULL; break;
    case 5: codes[0] = NULL; break;
    case 6: d[1].length = -1; break;
    case 7: d[1].codes = NULL; break;
    case 8: in0[1] = 3; break;
    case 9: in1[2] = -2; break;
    case 10: d[1].categories.offsets = off; break;
    default: d[0].categories.data = NULL; break;
  }
  tabcl_status s = tabcl_category_index_align(idx, ncols, dp, cp);
  *untouched = 1;
  for (int i = 0; i < 2; i++) *untouched &= c0[i] == POISON32;
  for (int i = 0; i < 3; i++) *untouched &= c1[i] == POISON32 && c2[i] == POISON32;
  return s;
}

static tabcl_status run_save(fx *f, int mut, int *untouched) {
  const char *path = "bad-input-never-written.idx";
  const tabcl_category_index *idx = f->idx;
  switch (mut) {
    case 1: idx = NULL; break;
    case 2: path = NULL; break;
    case 3: path = ""; break;
    case 4: path = "/no-such-folder-tabcl/x.idx"; break;
    default: path = "."; break;
  }
  tabcl_status s = tabcl_category_index_save(idx, path);
  struct stat st;
  /* Nothing may be left behind: not the file, not a temporary beside it. */
  *untouched = stat("bad-input-never-written.idx", &st) != 0;
  return s;
}

static tabcl_status run_load(fx *f, int mut, int *untouched) {
  const char *path = "bad-input-damaged.idx";
  tabcl_context *ctx = f->ctx;
  tabcl_category_index *poison = (tabcl_category_index *)&path, *out = poison;
  tabcl_category_index **outp = &out;
  switch (mut) {
    case 1: ctx = NULL; break;
    case 2: path = NULL; break;
    case 3: outp = NULL; break;
    case 4: path = "bad-input-missing.idx"; unlink(path); break;
    case 5: path = "."; break;
    default: damaged_copy(f, path, mut - 6); break;
  }
  tabcl_status s = tabcl_category_index_load(ctx, path, outp);
  *untouched = out == poison || out == NULL;
  if (s == TABCL_OK && out != poison) tabcl_category_index_destroy(out);
  if (mut >= 6) unlink("bad-input-damaged.idx");
  return s;
}

/* A small valid attention call: B 2, Lq 3, Lk 4, Hq 4, Hkv 2, D 8, f32. */
static tabcl_status run_sdpa(fx *f, int mut, int *untouched) {
  tabcl_sdpa_desc d = {0};
  d.batch = 2;
  d.q_len = 3;
  d.kv_len = 4;
  d.q_heads = 4;
  d.kv_heads = 2;
  d.head_dim = 8;
  d.dtype = TABCL_F32;
  float q[2 * 3 * 4 * 8], k[2 * 4 * 2 * 8], v[2 * 4 * 2 * 8], m[2 * 4 * 3 * 4];
  unsigned char out[sizeof q];
  for (size_t i = 0; i < sizeof q / 4; i++) q[i] = (float)((i % 7) - 3) / 4;
  for (size_t i = 0; i < sizeof k / 4; i++) k[i] = v[i] = (float)((i % 5) - 2) / 4;
  memset(m, 0, sizeof m);
  memset(out, POISON8, sizeof out);
  tabcl_context *ctx = f->ctx;
  const tabcl_sdpa_desc *dp = &d;
  const void *qp = q, *kp = k, *vp = v, *mp = NULL;
  void *op = out;
  switch (mut) {
    case 1: ctx = NULL; break;
    case 2: dp = NULL; break;
    case 3: d.batch = -1; break;
    case 4: d.q_len = -1; break;
    case 5: d.kv_len = -1; break;
    case 6: d.q_heads = 0; break;
    case 7: d.kv_heads = 0; break;
    case 8: d.head_dim = 0; break;
    case 9: d.q_heads = -2; break;
    case 10: d.kv_heads = 3; break;
    case 11: d.dtype = (tabcl_dtype)9; break;
    case 12: d.mask = (tabcl_mask_kind)5; mp = m; break;
    case 13: d.scale = NAN; break;
    case 14: d.scale = INFINITY; break;
    case 15: qp = NULL; break;
    case 16: kp = NULL; break;
    case 17: vp = NULL; break;
    case 18: op = NULL; break;
    case 19: d.mask = TABCL_MASK_BOOL; break;
    case 20: d.mask = TABCL_MASK_ADD; break;
    default: d.q_len = (int64_t)1 << 31; break;
  }
  tabcl_status s = tabcl_sdpa_host(ctx, dp, qp, kp, vp, mp, op);
  *untouched = 1;
  for (size_t i = 0; i < sizeof out; i++) *untouched &= out[i] == POISON8;
  return s;
}

/* On the fixture context's OpenCL objects, as an application would pass
   its own; the case of another context's queue makes that context here. */
static tabcl_status run_create_cl(fx *f, int mut, int *untouched) {
  cl_context c = tabcl_context_cl_context(f->ctx);
  cl_device_id d = tabcl_context_cl_device(f->ctx);
  cl_command_queue q = tabcl_context_cl_queue(f->ctx), other_q = NULL;
  cl_context other = NULL;
  tabcl_options o = {0};
  o.cache_dir = "";
  tabcl_context *poison = (tabcl_context *)&o, *out = poison, **outp = &out;
  switch (mut) {
    case 1: outp = NULL; break;
    case 2: c = NULL; break;
    case 3: d = NULL; break;
    case 4: q = NULL; break;
    case 5: o.device = "0:0"; break;
    case 6: o.max_batch_per_launch = -1; break;
    default: {
      cl_platform_id p = NULL;
      cr_assert_eq(clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof p, &p, NULL), CL_SUCCESS);
      cl_context_properties cp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)p, 0};
      cl_int err = CL_SUCCESS;
      other = clCreateContext(cp, 1, &d, NULL, NULL, &err);
      cr_assert_eq(err, CL_SUCCESS);
      q = other_q = clCreateCommandQueue(other, d, 0, &err);
      cr_assert_eq(err, CL_SUCCESS);
      break;
    }
  }
  tabcl_status s = tabcl_context_create_cl(c, d, q, &o, outp);
  /* The header: a failure leaves *out unset. */
  *untouched = out == poison;
  if (s == TABCL_OK && out != poison) tabcl_context_destroy(out);
  if (other_q) clReleaseCommandQueue(other_q);
  if (other) clReleaseContext(other);
  return s;
}

typedef tabcl_status (*runner)(fx *, int, int *);
static const runner runners[] = {run_create, run_fit, run_lookup, run_align,
                                 run_save, run_load, run_sdpa, run_create_cl};

/* The message as the catalogue shows it: the first line, without the
   machine's device and platform names. The list of devices a NO_DEVICE
   message ends with depends on the machine (how many platforms and devices,
   in the loader's order), so it is shown by its form alone. */
static void tidy_message(const fx *f, const char *msg, char *out, size_t cap) {
  const char *dev = tabcl_context_device_name(f->ctx), *plat = tabcl_context_platform_name(f->ctx);
  static const char list[] = "; devices: ";
  size_t n = 0;
  for (const char *p = msg; *p && *p != '\n' && n + 12 < cap;) {
    if (!strncmp(p, list, sizeof list - 1)) {
      n += (size_t)snprintf(out + n, cap - n, "%s<P:D> <device> (<platform>); ...", list);
      if (n >= cap) n = cap - 1;   /* truncated */
      break;
    } else if (*dev && !strncmp(p, dev, strlen(dev))) {
      n += (size_t)snprintf(out + n, cap - n, "<device>");
      p += strlen(dev);
    } else if (*plat && !strncmp(p, plat, strlen(plat))) {
      n += (size_t)snprintf(out + n, cap - n, "<platform>");
      p += strlen(plat);
    } else if (*p == '|') {
      n += (size_t)snprintf(out + n, cap - n, "\\|");
      p++;
    } else {
      out[n++] = *p++;
    }
  }
  out[n] = '\0';
}

/* Runs every case; appends its catalogue row to table (may be NULL). */
static void run_all(char *table, size_t cap) {
  fx f;
  fx_init(&f);
  size_t used = 0;
  if (table) {
    used += (size_t)snprintf(table + used, cap - used,
                             "| Call | Bad input | Status | Message |\n|---|---|---|---|\n");
  }
  for (int i = 0; i < NCASES; i++) {
    const bad_case *c = &cases[i];
    tt_live base = tt_live_now();
    int untouched = 0;
    tabcl__clear_error();
    tabcl_status s = runners[c->call](&f, c->mut, &untouched);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tabcl_last_error());
    cr_expect_eq(s, c->want, "%s, %s: %s, expected %s (%s)", call_names[c->call], c->input,
                 tabcl_status_name(s), tabcl_status_name(c->want), msg);
    cr_expect(untouched, "%s, %s: the outputs changed", call_names[c->call], c->input);
    for (int k = 0; k < 3 && c->needles[k]; k++)
      cr_expect(strstr(msg, c->needles[k]) != NULL, "%s, %s: the message \"%s\" lacks \"%s\"",
                call_names[c->call], c->input, msg, c->needles[k]);
    tt_expect_no_leak(base);
    if (table) {
      char tidy[600];
      tidy_message(&f, msg, tidy, sizeof tidy);
      used += (size_t)snprintf(table + used, cap - used, "| `%s` | %s | %s | %s |\n",
                               call_names[c->call], c->input, tabcl_status_name(s), tidy);
    }
  }
  /* The objects the cases were given still work. */
  int32_t c0[3], c1[2], *codes[2] = {c0, c1};
  tabcl_strings_view q[2] = {tt_view(&f.query[0]), tt_view(&f.query[1])};
  tt_assert_ok(tabcl_category_index_lookup(f.idx, 2, q, codes));
  cr_expect(c0[0] == 0 && c0[1] == -1 && c0[2] == 2 && c1[0] == 1 && c1[1] == 0,
            "lookup after the bad calls: %d %d %d | %d %d", c0[0], c0[1], c0[2], c1[0], c1[1]);
  fx_fini(&f);
}

Test(bad_input, every_case) { run_all(NULL, 0); }

#define BEGIN_MARK "<!-- bad-input-catalogue: begin (generated by tests/test_bad_input.c) -->\n"
#define END_MARK "<!-- bad-input-catalogue: end -->\n"

/* tests/README.md's table must be what the cases give now. */
Test(catalogue, in_sync) {
  static char table[1 << 17];
  run_all(table, sizeof table);
  const char *src = getenv("TABCL_TEST_SOURCE_DIR");
  char path[4096];
  if (src && *src) {
    snprintf(path, sizeof path, "%s/tests/README.md", src);
  } else { /* run by hand: README.md sits beside this file */
    snprintf(path, sizeof path, "%s", __FILE__);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
             "README.md");
  }
  FILE *fp = fopen(path, "rb");
  cr_assert(fp, "cannot open %s", path);
  static char readme[1 << 18];
  size_t n = fread(readme, 1, sizeof readme - 1, fp);
  fclose(fp);
  readme[n] = '\0';
  char *b = strstr(readme, BEGIN_MARK), *e = strstr(readme, END_MARK);
  cr_assert(b && e && e > b, "%s lacks the catalogue markers", path);
  b += strlen(BEGIN_MARK);
  const char *update = getenv("TABCL_UPDATE_CATALOGUE");
  if (update && *update == '1') {
    fp = fopen(path, "wb");
    cr_assert(fp);
    fwrite(readme, 1, (size_t)(b - readme), fp);
    fputs(table, fp);
    fputs(e, fp);
    fclose(fp);
    cr_log_info("rewrote the catalogue in %s", path);
    return;
  }
  size_t len = (size_t)(e - b);
  int same = len == strlen(table) && memcmp(b, table, len) == 0;
  if (!same) {
    /* Point at the first line that differs. */
    const char *x = b, *y = table;
    while (*x == *y && x < e) x++, y++;
    while (x > b && x[-1] != '\n') x--, y--;
    cr_expect_fail("tests/README.md's catalogue is out of date; regenerate it with "
                   "TABCL_UPDATE_CATALOGUE=1 ./tests/test_bad_input --filter 'catalogue/in_sync'.\n"
                   "first difference:\n  README: %.200s\n  now:    %.200s", x, y);
  }
}

/* ---- regressions the fuzzers found or the contract implies ------------- */

/* Sizes whose product overflows cannot describe real buffers: the call must
   refuse them before it reads anything (found by fuzz_sdpa_desc: the input
   fuzz/corpus/fuzz_sdpa_desc/extreme_batch5). Tiny buffers are passed, so a
   library that reads them crashes this test. */
Test(sdpa, overflowing_sizes_are_refused) {
  tabcl_context *ctx = tt_context();
  tt_live base = tt_live_now();
  static const int64_t batches[] = {(int64_t)3 << 61, INT64_MAX, (int64_t)1 << 62};
  float tiny[16] = {0};
  unsigned char out[64];
  for (int i = 0; i < 3; i++) {
    tabcl_sdpa_desc d = {0};
    d.batch = batches[i];
    d.q_len = 1;
    d.kv_len = 1;
    d.q_heads = d.kv_heads = 1;
    d.head_dim = 4;
    memset(out, POISON8, sizeof out);
    tabcl_status s = tabcl_sdpa_host(ctx, &d, tiny, tiny, tiny, NULL, out);
    cr_expect(s == TABCL_INVALID_ARGUMENT || s == TABCL_OUT_OF_MEMORY,
              "batch %lld: %s (%s)", (long long)d.batch, tabcl_status_name(s), tabcl_last_error());
    for (size_t j = 0; j < sizeof out; j++) cr_expect_eq(out[j], POISON8);
  }
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

/* The contract sets no limit on head_dim: one the kernels cannot take is an
   unsupported shape (TABCL_UNSUPPORTED, like f64 without fp64), not an
   invalid argument. */
Test(sdpa, head_dim_too_large_is_unsupported) {
  tabcl_context *ctx = tt_context();
  tabcl_sdpa_desc d = {0};
  d.batch = d.q_len = d.kv_len = 1;
  d.q_heads = d.kv_heads = 1;
  d.head_dim = 4096;
  float *q = calloc(4096 * 4, sizeof *q);
  cr_assert(q);
  tabcl_status s = tabcl_sdpa_host(ctx, &d, q, q + 4096, q + 8192, NULL, q + 12288);
  cr_expect(s == TABCL_OK || s == TABCL_UNSUPPORTED, "head_dim 4096: %s (%s)",
            tabcl_status_name(s), tabcl_last_error());
  free(q);
  tabcl_context_destroy(ctx);
}

/* The calls that return no status: out-of-range and NULL arguments give the
   documented answers, and the valid edges next to the bad inputs above
   (empty columns, no validity bitmap) are accepted. */
Test(bad_input, accessors_and_valid_edges) {
  fx f;
  fx_init(&f);
  tt_live base = tt_live_now();
  cr_expect_eq(tabcl_category_index_codes(NULL, 0), -1);
  cr_expect_eq(tabcl_category_index_codes(f.idx, -1), -1);
  cr_expect_eq(tabcl_category_index_codes(f.idx, 2), -1);
  cr_expect_eq(tabcl_category_index_codes(f.idx, 0), 3);
  cr_expect_eq(tabcl_category_index_columns(f.idx), 2);
  cr_expect_leq(tabcl_category_index_columns(NULL), 0);
  tabcl_category_index_destroy(NULL);
  tabcl_context_destroy(NULL);
  tabcl_stats st = {1, 2, 3};
  tabcl_context_stats(NULL, &st);
  cr_expect(st.programs_built == 0 && st.programs_from_cache == 0 && st.kernel_launches == 0,
            "stats of a NULL context are zeroed");
  tabcl_context_stats(f.ctx, NULL);
  cr_expect_str_eq(tabcl_status_name((tabcl_status)-3), "TABCL_UNKNOWN_STATUS");
  cr_expect_eq(tabcl_program_name(-1), NULL);
  cr_expect_eq(tabcl_selfcheck_name(tabcl_selfcheck_count()), NULL);
  cr_expect_eq(tabcl_selfcheck_run(f.ctx, -1), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_selfcheck_run(NULL, 0), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_program_prepare(NULL, 0, NULL), TABCL_INVALID_ARGUMENT);

  /* empty query columns: one offset, no codes array needed */
  static const int64_t zero = 0;
  tabcl_strings_view empty[2] = {{0, &zero, NULL, NULL}, {0, &zero, NULL, NULL}};
  int32_t *none[2] = {NULL, NULL};
  tt_assert_ok(tabcl_category_index_lookup(f.idx, 2, empty, none));
  tabcl_dictionary_view d[2] = {{empty[0], 0, NULL}, {empty[1], 0, NULL}};
  tt_assert_ok(tabcl_category_index_align(f.idx, 2, d, none));
  /* an empty vocabulary and one of empty labels fit; nothing matches the first */
  static const int64_t blanks[3] = {5, 5, 5};
  tabcl_strings_view v[2] = {{0, &zero, NULL, NULL}, {2, blanks, NULL, NULL}};
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(f.ctx, 2, v, TABCL_CODES_BY_POSITION, &idx));
  cr_expect_eq(tabcl_category_index_codes(idx, 0), 0);
  cr_expect_eq(tabcl_category_index_codes(idx, 1), 2);
  static const int64_t qoff[3] = {0, 0, 1};
  tabcl_strings_view q[2] = {{2, qoff, (const uint8_t *)"x", NULL}, {2, qoff, (const uint8_t *)"x", NULL}};
  int32_t c0[2], c1[2], *codes[2] = {c0, c1};
  tt_assert_ok(tabcl_category_index_lookup(idx, 2, q, codes));
  cr_expect(c0[0] == -1 && c0[1] == -1, "an empty vocabulary matches nothing: %d %d", c0[0], c0[1]);
  cr_expect(c1[0] == 1 && c1[1] == -1, "\"\" has the last position 1: %d %d", c1[0], c1[1]);
  tabcl_category_index_destroy(idx);
  tt_expect_no_leak(base);
  fx_fini(&f);
}
