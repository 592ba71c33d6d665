/* Saving and loading a categorical index: round trips, every kind of
 * damaged or foreign file (TABCL_CORRUPT_DATA), paths that cannot be read
 * or written (TABCL_IO_ERROR), atomic saves, and injected failures. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catindex_checks.h"

typedef struct io_data {
  tt_strings v[3], q[3];
  tabcl_strings_view vv[3], qv[3];
} io_data;

static void io_data_init(io_data *d, uint64_t seed) {
  tt_rng r = {seed};
  uint8_t buf[2100];
  for (int c = 0; c < 3; c++) {
    tt_strings_init(&d->v[c], c);
    tt_strings_init(&d->q[c], 0);
    int n = c == 2 ? 0 : 30 + c * 11;   /* column 2 is empty */
    for (int i = 0; i < n; i++) {
      size_t len = i == 5 ? 2000 : (size_t)tt_below(&r, 9);
      for (size_t k = 0; k < len; k++) buf[k] = (uint8_t)tt_below(&r, c ? 256 : 3);
      if (i % 9 == 4) tt_strings_push_null(&d->v[c]);
      else tt_strings_push(&d->v[c], buf, len);
      tt_strings_push(&d->q[c], buf, len);
      if (i % 4 == 0) {
        buf[0] ^= 1;
        tt_strings_push(&d->q[c], buf, len);
      }
    }
    tt_strings_push_null(&d->q[c]);
    d->vv[c] = tt_view(&d->v[c]);
    d->qv[c] = tt_view(&d->q[c]);
  }
}

static void io_data_free(io_data *d) {
  for (int c = 0; c < 3; c++) {
    tt_strings_free(&d->v[c]);
    tt_strings_free(&d->q[c]);
  }
}

static void spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f, "cannot write %s", path);
  cr_assert(n == 0 || fwrite(p, 1, n, f) == n);
  fclose(f);
}

static int entries_in(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

Test(catindex_io, round_trip_both_orders) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  char *dir = tt_temp_dir("catio");
  io_data d;
  io_data_init(&d, tt_seed("catindex_io/round_trip_both_orders"));
  char path[4096], again[4096];
  snprintf(path, sizeof path, "%s/index.tabcl", dir);
  snprintf(again, sizeof again, "%s/again.tabcl", dir);
  for (int o = 0; o < 2; o++) {
    tabcl_category_index *idx = NULL, *back = NULL;
    tt_assert_ok(tabcl_category_index_fit(ctx, 3, d.vv, (tabcl_code_order)o, &idx));
    tt_live base = tt_live_now();
    tt_assert_ok(tabcl_category_index_save(idx, path));
    tt_expect_no_leak(base);
    tt_assert_ok(tabcl_category_index_load(ctx, path, &back));
    cr_expect_eq(tabcl_category_index_columns(back), 3);
    for (int c = 0; c < 3; c++)
      cr_expect_eq(tabcl_category_index_codes(back, c), tabcl_category_index_codes(idx, c));
    cr_expect_eq(back->seed, idx->seed, "the seed is derived again, the same way");
    cr_expect_eq(back->order, (tabcl_code_order)o);
    cat_expect_lookup(back, 3, d.vv, (tabcl_code_order)o, d.qv, "loaded");
    /* saving the loaded index gives the same bytes: nothing was lost */
    tt_assert_ok(tabcl_category_index_save(back, again));
    size_t n1, n2;
    uint8_t *f1 = tt_slurp(path, &n1), *f2 = tt_slurp(again, &n2);
    cr_expect(n1 == n2 && !memcmp(f1, f2, n1), "a reloaded index saves differently");
    free(f1);
    free(f2);
    /* saving over an existing file replaces it, and leaves no temporary */
    tt_assert_ok(tabcl_category_index_save(back, path));
    cr_expect_eq(entries_in(dir), 2);
    tabcl_category_index_destroy(back);
    tabcl_category_index_destroy(idx);
  }
  io_data_free(&d);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}

/* A fit reads the caller's offsets in place where they start at 0 and
   copies them where they do not; after it the index keeps them on the
   device only. So a fit from a view that starts past its buffer's first
   byte, and one whose memory is scribbled over and freed right after the
   fit, save the same file as a fit from the plain view. */
Test(catindex_io, index_keeps_no_caller_memory) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  char *dir = tt_temp_dir("catmem");
  io_data d;
  io_data_init(&d, tt_seed("catindex_io/index_keeps_no_caller_memory"));
  enum { SHIFT = 13 };
  char want[4096], got[4096];
  snprintf(want, sizeof want, "%s/want.tabcl", dir);
  snprintf(got, sizeof got, "%s/got.tabcl", dir);
  for (int o = 0; o < 2; o++) {
    tabcl_category_index *idx = NULL;
    tt_assert_ok(tabcl_category_index_fit(ctx, 3, d.vv, (tabcl_code_order)o, &idx));
    tt_assert_ok(tabcl_category_index_save(idx, want));
    tabcl_category_index_destroy(idx);
    for (int shifted = 0; shifted < 2; shifted++) {
      tabcl_strings_view v[3];
      int64_t *offs[3];
      uint8_t *data[3];
      for (int c = 0; c < 3; c++) {
        const tabcl_strings_view *src = &d.vv[c];
        const int64_t n = src->length, bytes = n ? src->offsets[n] : 0;
        const int64_t k = shifted ? SHIFT : 0;
        offs[c] = malloc(((size_t)n + 1) * sizeof *offs[c]);
        data[c] = malloc((size_t)(bytes + k) + 1);
        cr_assert(offs[c] && data[c]);
        memset(data[c], 0xA5, (size_t)k);
        if (bytes) memcpy(data[c] + k, src->data, (size_t)bytes);
        for (int64_t i = 0; i <= n; i++) offs[c][i] = (n ? src->offsets[i] : 0) + k;
        v[c] = (tabcl_strings_view){n, n ? offs[c] : NULL, data[c], src->validity};
      }
      tt_assert_ok(tabcl_category_index_fit(ctx, 3, v, (tabcl_code_order)o, &idx));
      for (int c = 0; c < 3; c++) {
        const int64_t n = v[c].length;
        for (int64_t i = 0; i <= n; i++) offs[c][i] = -1 - i;   /* any use shows */
        free(offs[c]);
        free(data[c]);
      }
      tt_assert_ok(tabcl_category_index_save(idx, got));
      size_t n1, n2;
      uint8_t *f1 = tt_slurp(want, &n1), *f2 = tt_slurp(got, &n2);
      cr_expect(n1 == n2 && !memcmp(f1, f2, n1),
                "order %d, offsets from %d: the saved index differs", o, shifted ? SHIFT : 0);
      free(f1);
      free(f2);
      cat_expect_lookup(idx, 3, d.vv, (tabcl_code_order)o, d.qv, "after the caller's memory went");
      tabcl_category_index_destroy(idx);
    }
  }
  io_data_free(&d);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}

/* An index fitted with a 4-bit hash (colliding groups kept) loads into a
   normal context, and the other way round: the file holds no hash. */
Test(catindex_io, hash_width_is_not_saved) {
  tabcl_context *narrow = tt_context(), *wide = tt_context();
  tabcl__context_set_hash_bits(narrow, 4);
  char *dir = tt_temp_dir("catio");
  char path[4096];
  snprintf(path, sizeof path, "%s/i", dir);
  io_data d;
  io_data_init(&d, tt_seed("catindex_io/hash_width_is_not_saved"));
  tabcl_category_index *idx = NULL, *back = NULL, *back2 = NULL;
  tt_assert_ok(tabcl_category_index_fit(narrow, 3, d.vv, TABCL_CODES_BY_POSITION, &idx));
  cr_expect_eq(idx->collisions, 1);
  tt_assert_ok(tabcl_category_index_save(idx, path));
  tt_assert_ok(tabcl_category_index_load(wide, path, &back));
  cr_expect_eq(back->collisions, 0);
  cat_expect_lookup(back, 3, d.vv, TABCL_CODES_BY_POSITION, d.qv, "wide");
  tt_assert_ok(tabcl_category_index_save(back, path));
  tt_assert_ok(tabcl_category_index_load(narrow, path, &back2));
  cr_expect_eq(back2->collisions, 1);
  cat_expect_lookup(back2, 3, d.vv, TABCL_CODES_BY_POSITION, d.qv, "narrow again");
  tabcl_category_index_destroy(idx);
  tabcl_category_index_destroy(back);
  tabcl_category_index_destroy(back2);
  io_data_free(&d);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(narrow);
  tabcl_context_destroy(wide);
}

static void expect_corrupt(tabcl_context *ctx, const char *path, const char *what) {
  tt_live base = tt_live_now();
  tabcl_category_index *out = (tabcl_category_index *)&base;
  tabcl_status s = tabcl_category_index_load(ctx, path, &out);
  cr_expect_eq(s, TABCL_CORRUPT_DATA, "%s: %s (%s)", what, tabcl_status_name(s), tabcl_last_error());
  cr_expect_eq(out, (tabcl_category_index *)&base, "%s: *out changed", what);
  if (s == TABCL_OK && out != (tabcl_category_index *)&base) tabcl_category_index_destroy(out);
  tt_expect_no_leak(base);
}

Test(catindex_io, every_damaged_file_is_corrupt_data) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  char *dir = tt_temp_dir("catio");
  char good[4096], bad[4096];
  snprintf(good, sizeof good, "%s/good", dir);
  snprintf(bad, sizeof bad, "%s/bad", dir);
  /* a small index, so every byte can be flipped and every length tried */
  tt_strings v[2];
  static const char *const w0[] = {"alpha", "beta", "alpha", "", "gamma"};
  tt_strings_init(&v[0], 0);
  tt_strings_init(&v[1], 0);
  for (int i = 0; i < 5; i++) tt_strings_push(&v[0], w0[i], strlen(w0[i]));
  tt_strings_push(&v[1], "x", 1);
  tt_strings_push_null(&v[1]);
  tabcl_strings_view vv[2] = {tt_view(&v[0]), tt_view(&v[1])};
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 2, vv, TABCL_CODES_BY_VALUE, &idx));
  tt_assert_ok(tabcl_category_index_save(idx, good));
  size_t n;
  uint8_t *file = tt_slurp(good, &n);
  cr_assert_gt(n, 100);
  char what[96];
  for (size_t cut = 0; cut < n; cut++) {   /* truncated anywhere, the empty file included */
    spit(bad, file, cut);
    snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cut, n);
    expect_corrupt(ctx, bad, what);
  }
  for (size_t at = 0; at < n; at++) {       /* one byte altered, anywhere */
    for (int k = 0; k < 2; k++) {
      file[at] ^= k ? 0xFF : 0x01;
      spit(bad, file, n);
      file[at] ^= k ? 0xFF : 0x01;
      snprintf(what, sizeof what, "byte %zu of %zu xor %d", at, n, k ? 0xFF : 1);
      expect_corrupt(ctx, bad, what);
    }
  }
  uint8_t *longer = malloc(n + 4096);
  memcpy(longer, file, n);
  memset(longer + n, 0, 4096);
  static const size_t extra[] = {1, 8, 4096};
  for (int k = 0; k < 3; k++) {
    spit(bad, longer, n + extra[k]);
    snprintf(what, sizeof what, "extended by %zu bytes", extra[k]);
    expect_corrupt(ctx, bad, what);
  }
  /* two saved files back to back */
  memcpy(longer, file, n);
  FILE *f = fopen(bad, "wb");
  fwrite(file, 1, n, f);
  fwrite(file, 1, n, f);
  fclose(f);
  expect_corrupt(ctx, bad, "two files concatenated");
  /* foreign files */
  const char *text = "name,value\nalpha,1\nbeta,2\n";
  spit(bad, text, strlen(text));
  expect_corrupt(ctx, bad, "a CSV file");
  static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H',
                                'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15,
                                0xc4, 0x89, 0, 0, 0, 0};
  spit(bad, png, sizeof png);
  expect_corrupt(ctx, bad, "a PNG header");
  uint8_t zeros[512] = {0};
  spit(bad, zeros, sizeof zeros);
  expect_corrupt(ctx, bad, "zeros");
  memcpy(zeros, "TABCLIDX", 8);
  spit(bad, zeros, sizeof zeros);
  expect_corrupt(ctx, bad, "the magic and then zeros");
  /* the good file still loads after all that */
  tabcl_category_index *back = NULL;
  tt_assert_ok(tabcl_category_index_load(ctx, good, &back));
  tabcl_category_index_destroy(back);
  free(longer);
  free(file);
  tabcl_category_index_destroy(idx);
  tt_strings_free(&v[0]);
  tt_strings_free(&v[1]);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}

/* Files whose checksum holds but whose contents break the format: the
   parser must catch each without trusting a size. */
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Format 2's checksum against one computed here with libxxhash, block by
   block in order, on sizes around whole blocks and large enough that the
   library spreads the blocks over threads (8 blocks and more on two cores). */
Test(catindex_io, block_checksum_matches_libxxhash) {
  const size_t mib = (size_t)1 << 20, sizes[] = {0, 1, mib - 1, mib, mib + 1, 33 * mib + 77,
                                                 64 * mib};
  uint8_t *p = malloc(64 * mib);
  cr_assert(p);
  tt_rng r = {tt_seed("catindex_io/block_checksum_matches_libxxhash")};
  for (size_t i = 0; i < 64 * mib; i += 8) {
    uint64_t x = tt_next(&r);
    memcpy(p + i, &x, 8);
  }
  const uint64_t seed = 0x7461626c63696478ULL;   /* "tablcidx" */
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    uint64_t h = seed, b = 0;
    for (size_t at = 0; at < n; at += mib, b++) {
      uint64_t d = XXH3_64bits_withSeed(p + at, n - at < mib ? n - at : mib, seed + b);
      uint8_t le[8];
      for (int i = 0; i < 8; i++) le[i] = (uint8_t)(d >> (8 * i));
      h = XXH3_64bits_withSeed(le, 8, h);
    }
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)((uint64_t)n >> (8 * i));
    h = XXH3_64bits_withSeed(le, 8, h);
    cr_expect_eq(tabcl__catindex_file_checksum(2, p, n), h, "%zu bytes", n);
  }
  free(p);
}

typedef struct crafted {
  uint8_t b[512];
  size_t n;
} crafted;

/* header + one column of labels "ab", "c" with the given fields */
static crafted craft(uint32_t version, uint32_t order, uint32_t ncols, uint32_t zero, uint64_t len,
                     uint64_t bytes, uint64_t hasv, const uint64_t *off, int noff, size_t data,
                     size_t trailing) {
  crafted c;
  memset(&c, 0, sizeof c);
  memcpy(c.b, "TABCLIDX", 8);
  put32(c.b + 8, version);
  put32(c.b + 12, order);
  put32(c.b + 16, ncols);
  put32(c.b + 20, zero);
  size_t at = 24;
  put64(c.b + at, len);
  put64(c.b + at + 8, bytes);
  put64(c.b + at + 16, hasv);
  at += 24;
  for (int i = 0; i < noff; i++, at += 8) put64(c.b + at, off[i]);
  for (size_t i = 0; i < data; i++) c.b[at++] = (uint8_t)('a' + i);
  if (hasv) c.b[at++] = 0x03;
  at += trailing;
  put64(c.b + at, tabcl__catindex_file_checksum(version, c.b, at));
  c.n = at + 8;
  return c;
}

Test(catindex_io, consistent_checksum_bad_contents) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  char *dir = tt_temp_dir("catio");
  char path[4096];
  snprintf(path, sizeof path, "%s/crafted", dir);
  static const uint64_t ok_off[3] = {0, 2, 3};
  /* first make sure the crafting is right: the plain case loads */
  crafted c = craft(1, 0, 1, 0, 2, 3, 0, ok_off, 3, 3, 0);
  spit(path, c.b, c.n);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_load(ctx, path, &idx));
  cr_expect_eq(tabcl_category_index_codes(idx, 0), 2);
  tabcl_category_index_destroy(idx);
  /* the written format, 2, too; and neither checksum passes for the other */
  c = craft(2, 0, 1, 0, 2, 3, 0, ok_off, 3, 3, 0);
  spit(path, c.b, c.n);
  tt_assert_ok(tabcl_category_index_load(ctx, path, &idx));
  cr_expect_eq(tabcl_category_index_codes(idx, 0), 2);
  tabcl_category_index_destroy(idx);
  cr_expect_neq(tabcl__catindex_file_checksum(1, c.b, c.n - 8),
                tabcl__catindex_file_checksum(2, c.b, c.n - 8), "the two formats' checksums agree");
  c = craft(1, 1, 1, 0, 2, 3, 1, ok_off, 3, 3, 0);
  spit(path, c.b, c.n);
  tt_assert_ok(tabcl_category_index_load(ctx, path, &idx));
  tabcl_category_index_destroy(idx);

  static const uint64_t dec[3] = {0, 3, 2}, nonzero[3] = {1, 2, 3}, past[3] = {0, 2, 4};
  struct { crafted c; const char *what; } cases[] = {
      {craft(3, 0, 1, 0, 2, 3, 0, ok_off, 3, 3, 0), "version 3"},
      {craft(2, 2, 1, 0, 2, 3, 0, ok_off, 3, 3, 0), "order 2 (format 2)"},
      {craft(1, 2, 1, 0, 2, 3, 0, ok_off, 3, 3, 0), "order 2"},
      {craft(1, 0, 0, 0, 2, 3, 0, ok_off, 3, 3, 0), "zero columns"},
      {craft(1, 0, 2, 0, 2, 3, 0, ok_off, 3, 3, 0), "two columns announced, one present"},
      {craft(1, 0, 0xFFFFFFFFu, 0, 2, 3, 0, ok_off, 3, 3, 0), "four billion columns"},
      {craft(1, 0, 1, 7, 2, 3, 0, ok_off, 3, 3, 0), "reserved field set"},
      {craft(1, 0, 1, 0, (uint64_t)1 << 60, 3, 0, ok_off, 3, 3, 0), "huge length"},
      {craft(1, 0, 1, 0, 3, 3, 0, ok_off, 3, 3, 0), "length one too many"},
      {craft(1, 0, 1, 0, 2, (uint64_t)1 << 62, 0, ok_off, 3, 3, 0), "huge byte count"},
      {craft(1, 0, 1, 0, 2, 3, 2, ok_off, 3, 3, 0), "validity flag 2"},
      {craft(1, 0, 1, 0, 2, 3, 0, dec, 3, 3, 0), "decreasing offsets"},
      {craft(1, 0, 1, 0, 2, 3, 0, nonzero, 3, 3, 0), "first offset not 0"},
      {craft(1, 0, 1, 0, 2, 3, 0, past, 3, 3, 0), "offset past the data"},
      {craft(1, 0, 1, 0, 2, 4, 0, ok_off, 3, 4, 0), "bytes disagree with the last offset"},
      {craft(1, 0, 1, 0, 2, 3, 0, ok_off, 3, 3, 5), "bytes after the last column"},
      {craft(1, 0, 1, 0, 2, 3, 1, ok_off, 3, 3, 0), "validity missing"},
  };
  /* "validity missing": has_validity 1 but the byte is cut: rebuild it so */
  {
    crafted *m = &cases[16].c;
    m->n -= 9;   /* drop the validity byte and the checksum */
    put64(m->b + m->n, tabcl__catindex_file_checksum(1, m->b, m->n));
    m->n += 8;
  }
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    spit(path, cases[k].c.b, cases[k].c.n);
    expect_corrupt(ctx, path, cases[k].what);
  }
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}

/* An index of one column of n labels "L0", "L1", ... (into *v, which the
   caller frees), fitted on ctx and saved to path. */
static void save_long_index(tabcl_context *ctx, int n, tt_strings *v, const char *path) {
  tt_strings_init(v, 0);
  char label[16];
  for (int i = 0; i < n; i++) {
    const int k = snprintf(label, sizeof label, "L%d", i);
    tt_strings_push(v, label, (size_t)k);
  }
  tabcl_strings_view vv = tt_view(v);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));
  tt_assert_ok(tabcl_category_index_save(idx, path));
  tabcl_category_index_destroy(idx);
}

/* A long column's offsets are checked on the context's threads, as a
   fit's are: offsets that decrease in the first, a middle or the last of
   the parts of a 70,000-label column, in a file whose checksum agrees,
   are still refused, with nothing returned and nothing leaked. */
Test(catindex_io, long_column_bad_offsets_with_a_good_checksum) {
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "upload.threads=3");   /* CPU devices' default is 1: the check on one core */
  cat_warm(ctx);
  char *dir = tt_temp_dir("catio");
  char good[4096], bad[4096];
  snprintf(good, sizeof good, "%s/good", dir);
  snprintf(bad, sizeof bad, "%s/bad", dir);
  enum { N = 70000 };
  tt_strings v;
  save_long_index(ctx, N, &v, good);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_load(ctx, good, &idx));
  cr_expect_eq(tabcl_category_index_codes(idx, 0), N);
  tabcl_category_index_destroy(idx);
  size_t n;
  uint8_t *file = tt_slurp(good, &n);
  cr_assert_gt(n, 48 + (size_t)(N + 1) * 8);
  const uint32_t version = (uint32_t)file[8] | (uint32_t)file[9] << 8;
  uint8_t *b = malloc(n);
  cr_assert(b);
  const int rows[] = {1, N / 2, N - 1};
  for (int k = 0; k < 3; k++) {
    memcpy(b, file, n);
    /* offsets follow the file's header and the column's, 24 bytes each:
       the label before row r made to end one byte past where r's ends */
    put64(b + 48 + (size_t)rows[k] * 8, (uint64_t)v.offsets[rows[k] + 1] + 1);
    put64(b + n - 8, tabcl__catindex_file_checksum(version, b, n - 8));
    spit(bad, b, n);
    char what[64];
    snprintf(what, sizeof what, "offset %d decreasing", rows[k] + 1);
    expect_corrupt(ctx, bad, what);
    cr_expect(strstr(tabcl_last_error(), "bad offsets") != NULL, "%s: %s", what,
              tabcl_last_error());
  }
  free(b);
  free(file);
  tt_strings_free(&v);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}

Test(catindex_io, unreadable_and_unwritable_paths_are_io_errors) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  char *dir = tt_temp_dir("catio");
  char path[4096], missing[4096], sub[4096];
  snprintf(path, sizeof path, "%s/nothing-here", dir);
  snprintf(missing, sizeof missing, "%s/no/such/folder/index", dir);
  snprintf(sub, sizeof sub, "%s/a-folder", dir);
  cr_assert_eq(mkdir(sub, 0755), 0);
  tt_strings v;
  static const char *const w[] = {"one", "two"};
  tt_strings_init(&v, 0);
  for (int i = 0; i < 2; i++) tt_strings_push(&v, w[i], 3);
  tabcl_strings_view vv = tt_view(&v);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 1, &vv, TABCL_CODES_BY_POSITION, &idx));
  tt_live base = tt_live_now();
  tabcl_category_index *out = (tabcl_category_index *)&base;
  const char *loads[3] = {path, missing, sub};
  for (int k = 0; k < 3; k++) {
    tabcl_status s = tabcl_category_index_load(ctx, loads[k], &out);
    cr_expect_eq(s, TABCL_IO_ERROR, "load %s: %s", loads[k], tabcl_status_name(s));
    cr_expect(strstr(tabcl_last_error(), loads[k]) != NULL, "the message names the path: %s",
              tabcl_last_error());
  }
  cr_expect_eq(out, (tabcl_category_index *)&base);
  /* saving into a missing folder or over a folder fails and leaves nothing */
  cr_expect_eq(tabcl_category_index_save(idx, missing), TABCL_IO_ERROR, "%s", tabcl_last_error());
  cr_expect_eq(tabcl_category_index_save(idx, sub), TABCL_IO_ERROR, "%s", tabcl_last_error());
  struct stat st;
  cr_expect(stat(sub, &st) == 0 && S_ISDIR(st.st_mode), "the folder is still a folder");
  cr_expect_eq(entries_in(dir), 1, "no temporary file is left next to the target");
  cr_expect_eq(entries_in(sub), 0);
  tt_expect_no_leak(base);
  /* NULL arguments */
  cr_expect_eq(tabcl_category_index_save(NULL, path), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_category_index_save(idx, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_category_index_save(idx, ""), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_category_index_load(NULL, path, &out), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_category_index_load(ctx, NULL, &out), TABCL_INVALID_ARGUMENT);
  cr_expect_eq(tabcl_category_index_load(ctx, path, NULL), TABCL_INVALID_ARGUMENT);
  tabcl_category_index_destroy(idx);
  tt_strings_free(&v);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
/* which: 0 host allocations, 1 OpenCL calls; op 0 save, 1 load. */
static void sweep_io(int which, int op) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  char *dir = tt_temp_dir("catio");
  char path[4096], target[4096];
  snprintf(path, sizeof path, "%s/src", dir);
  snprintf(target, sizeof target, "%s/dst", dir);
  io_data d;
  io_data_init(&d, 99);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 3, d.vv, TABCL_CODES_BY_POSITION, &idx));
  tt_assert_ok(tabcl_category_index_save(idx, path));
  for (long n = 1; n < 100000; n++) {
    tt_live base = tt_live_now();
    tabcl_category_index *out = (tabcl_category_index *)&base;
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_status s = op == 0 ? tabcl_category_index_save(idx, target)
                             : tabcl_category_index_load(ctx, path, &out);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (!fired) {
      cr_expect_eq(s, TABCL_OK, "%s", tabcl_last_error());
      if (op == 1 && s == TABCL_OK) {
        cat_expect_lookup(out, 3, d.vv, TABCL_CODES_BY_POSITION, d.qv, "loaded");
        tabcl_category_index_destroy(out);
      }
      cr_log_info("%s sweep of %s: %ld points", which ? "OpenCL" : "alloc", op ? "load" : "save", n - 1);
      break;
    }
    cr_expect_neq(s, TABCL_OK, "failure %ld was swallowed", n);
    if (s == TABCL_OK) {
      if (op == 1) tabcl_category_index_destroy(out);
      break;
    }
    if (op == 0) cr_expect_eq(access(target, F_OK), -1, "failure %ld left a file", n);
    else cr_expect_eq(out, (tabcl_category_index *)&base, "failure %ld changed *out", n);
    cr_expect_eq(entries_in(dir), 1, "failure %ld left a temporary file", n);
    tt_expect_no_leak(base);
  }
  tabcl_category_index_destroy(idx);
  io_data_free(&d);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}
/* A long file is read by the context's threads, a part each: a read that
   fails in any part (EIO at each read in turn) fails the load with the
   error named, nothing returned and nothing leaked, and the next load of
   the same file works. */
Test(catindex_io_faults, threaded_read_errors) {
  tabcl_context *ctx = tt_context();
  tt_tune(ctx, "upload.threads=3");   /* CPU devices' default is 1: one thread reads */
  cat_warm(ctx);
  char *dir = tt_temp_dir("catio");
  char path[4096];
  snprintf(path, sizeof path, "%s/long", dir);
  enum { N = 100000 };   /* 800 KB of offsets and about 600 KB of labels: past 1 MiB */
  tt_strings v;
  save_long_index(ctx, N, &v, path);
  long points = 0;
  for (long n = 1; n < 1000; n++) {
    tt_live base = tt_live_now();
    tabcl_category_index *out = (tabcl_category_index *)&base;
    tabcl__fault_set_io(n, EIO);
    tabcl_status s = tabcl_category_index_load(ctx, path, &out);
    const int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (!fired) {
      tt_assert_ok(s);
      cr_expect_eq(tabcl_category_index_codes(out, 0), N);
      tabcl_category_index_destroy(out);
      break;
    }
    points++;
    cr_expect_eq(s, TABCL_IO_ERROR, "read %ld: %s (%s)", n, tabcl_status_name(s),
                 tabcl_last_error());
    cr_expect(strstr(tabcl_last_error(), strerror(EIO)) != NULL, "read %ld: %s", n,
              tabcl_last_error());
    cr_expect_eq(out, (tabcl_category_index *)&base, "read %ld: *out changed", n);
    if (s == TABCL_OK && out != (tabcl_category_index *)&base) tabcl_category_index_destroy(out);
    tt_expect_no_leak(base);
  }
  /* a part a thread at least: more than one read was tried */
  cr_expect_gt(points, 1, "%ld read failure points", points);
  tt_strings_free(&v);
  tt_remove_tree(dir);
  free(dir);
  tabcl_context_destroy(ctx);
}
Test(catindex_io_faults, save_host_allocations) { sweep_io(0, 0); }
Test(catindex_io_faults, load_host_allocations) { sweep_io(0, 1); }
Test(catindex_io_faults, load_opencl_calls) { sweep_io(1, 1); }
#endif
