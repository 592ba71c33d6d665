/* The label hash: tabcl's host XXH3 and the device kernels against
 * libxxhash's XXH3_64bits_withSeed, every length class, unaligned starts,
 * any byte values, nulls, empty columns, one huge label among many short
 * ones, column seeds, masks, slicing, and failure injection. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "hash/hash.h"
#include "tt.h"

static uint8_t *random_bytes(tt_rng *r, size_t n) {
  uint8_t *b = malloc(n ? n : 1);
  cr_assert(b);
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)tt_next(r);
  return b;
}

/* Lengths around each of XXH3's class and block boundaries. */
static const size_t boundaries[] = {
    0,    1,    2,    3,    4,    5,    7,    8,    9,    15,   16,   17,   31,   32,   33,
    63,   64,   65,   95,   96,   97,   127,  128,  129,  130,  143,  144,  239,  240,  241,
    242,  255,  256,  257,  319,  320,  321,  1023, 1024, 1025, 1087, 1088, 1089, 2047, 2048,
    2049, 3071, 3072, 3073, 16383, 16384, 16385, 65535, 65536, 65537, 69999, 70000};
#define NBOUND (sizeof boundaries / sizeof boundaries[0])

static const uint64_t seeds[] = {0, 1, 0x9E3779B97F4A7C15ULL, ~0ULL, 0x00000000FFFFFFFFULL};

/* Kernel choices on ctx's tuning (0 = the table's): mid 3
   hash_team_all_flat, 5 hash_pair_all; big_wg hash_big's lanes a group;
   mid_wg the team kernels' group. */
static void hash_variants(tabcl_context *ctx, int mid, size_t big_wg, size_t mid_wg) {
  char m[16] = "auto", bw[24] = "auto", mw[24] = "auto";
  if (mid) snprintf(m, sizeof m, "%d", mid);
  if (big_wg) snprintf(bw, sizeof bw, "%zu", big_wg);
  if (mid_wg) snprintf(mw, sizeof mw, "%zu", mid_wg);
  tt_tune(ctx, "hash.mid=%s;hash.big_wg=%s;hash.mid_wg=%s", m, bw, mw);
}

/* Labels of at least group_min bytes (0 = the table's) take hash_big. */
static void hash_tune(tabcl_context *ctx, int64_t group_min) {
  char g[24] = "auto";
  if (group_min) snprintf(g, sizeof g, "%lld", (long long)group_min);
  tt_tune(ctx, "hash.group_min=%s", g);
}

Test(hash_host, every_length_to_300_and_boundaries) {
  tt_rng r = {tt_seed("hash_host/every_length")};
  uint8_t *buf = random_bytes(&r, 70000 + 16);
  for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
    /* the keyed form too: the long path's secret words worked out once */
    tabcl__xxh3_state keys;
    tabcl__xxh3_keys(&keys, seeds[s]);
    for (size_t len = 0; len <= 300; len++)
      for (size_t start = 0; start < 8; start += 3) {
        uint64_t want = XXH3_64bits_withSeed(buf + start, len, seeds[s]);
        uint64_t got = tabcl__xxh3_64(buf + start, len, seeds[s]);
        cr_assert_eq(got, want, "len %zu start %zu seed %llx: %016llx, libxxhash %016llx", len,
                     start, (unsigned long long)seeds[s], (unsigned long long)got,
                     (unsigned long long)want);
        cr_assert_eq(tabcl__xxh3_64_keyed(&keys, buf + start, len), want,
                     "keyed: len %zu start %zu seed %llx", len, start,
                     (unsigned long long)seeds[s]);
      }
    for (size_t b = 0; b < NBOUND; b++) {
      size_t len = boundaries[b];
      uint64_t want = XXH3_64bits_withSeed(buf + 5, len, seeds[s]);
      cr_assert_eq(tabcl__xxh3_64(buf + 5, len, seeds[s]), want, "len %zu seed %llx", len,
                   (unsigned long long)seeds[s]);
      cr_assert_eq(tabcl__xxh3_64_keyed(&keys, buf + 5, len), want, "keyed: len %zu seed %llx",
                   len, (unsigned long long)seeds[s]);
    }
  }
  free(buf);
}

Test(hash_host, random_lengths_and_seeds) {
  tt_rng r = {tt_seed("hash_host/random")};
  uint8_t *buf = random_bytes(&r, 70000 + 64);
  for (int i = 0; i < 400; i++) {
    size_t len = (size_t)tt_below(&r, i % 4 == 0 ? 70001 : 2500);
    size_t start = (size_t)tt_below(&r, 64);
    uint64_t seed = tt_next(&r);
    cr_assert_eq(tabcl__xxh3_64(buf + start, len, seed), XXH3_64bits_withSeed(buf + start, len, seed),
                 "len %zu start %zu seed %llx", len, start, (unsigned long long)seed);
  }
  free(buf);
}

/* Labels over 240 bytes take an AVX2 loop where the host has it; the plain
   loop is what every other host runs, so both are checked here. */
Test(hash_host, long_labels_on_both_loops) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  cr_expect_eq(tabcl__xxh3_simd(), __builtin_cpu_supports("avx2") ? 1 : 0,
               "the AVX2 loop is taken exactly where the host has AVX2");
#else
  cr_expect_eq(tabcl__xxh3_simd(), 0, "no SIMD loop on this host");
#endif
  tt_rng r = {tt_seed("hash_host/both_loops")};
  uint8_t *buf = random_bytes(&r, 70000 + 64);
  for (int plain = 0; plain < 2; plain++) {
    atomic_store(&tabcl__xxh3_plain_only, plain);
    if (plain) cr_expect_eq(tabcl__xxh3_simd(), 0, "the plain loop forced");
    for (int i = 0; i < 300; i++) {
      size_t len = 241 + (size_t)tt_below(&r, i % 3 == 0 ? 69760 : 4200);
      size_t start = (size_t)tt_below(&r, 64);
      uint64_t seed = tt_next(&r);
      tabcl__xxh3_state keys;
      tabcl__xxh3_keys(&keys, seed);
      uint64_t want = XXH3_64bits_withSeed(buf + start, len, seed);
      cr_assert_eq(tabcl__xxh3_64(buf + start, len, seed), want, "%s loop: len %zu start %zu",
                   plain ? "plain" : "default", len, start);
      cr_assert_eq(tabcl__xxh3_64_keyed(&keys, buf + start, len), want,
                   "%s loop, keyed: len %zu start %zu", plain ? "plain" : "default", len, start);
    }
  }
  atomic_store(&tabcl__xxh3_plain_only, 0);
  free(buf);
}

Test(hash_host, all_byte_values_and_zero_bytes) {
  uint8_t all[256 * 3];
  for (int i = 0; i < 256 * 3; i++) all[i] = (uint8_t)(i * 7 + 3);
  for (size_t len = 0; len <= sizeof all; len += 1 + len / 7)
    cr_assert_eq(tabcl__xxh3_64(all, len, 42), XXH3_64bits_withSeed(all, len, 42), "len %zu", len);
  uint8_t zeros[300] = {0};
  for (size_t len = 0; len <= 300; len++) {
    cr_assert_eq(tabcl__xxh3_64(zeros, len, 7), XXH3_64bits_withSeed(zeros, len, 7), "len %zu", len);
    if (len) cr_expect_neq(tabcl__xxh3_64(zeros, len, 7), tabcl__xxh3_64(zeros, len - 1, 7),
                           "zero bytes count: len %zu", len);
  }
  cr_expect_eq(tabcl__xxh3_64(NULL, 0, 9), XXH3_64bits_withSeed("", 0, 9), "NULL with no bytes");
}

Test(hash_host, column_seed_and_mask) {
  cr_expect_neq(tabcl__column_seed(1, 0), tabcl__column_seed(1, 1));
  cr_expect_neq(tabcl__column_seed(1, 0), tabcl__column_seed(2, 0));
  cr_expect_neq(tabcl__label_hash("cat", 3, 1, 0, ~0ULL), tabcl__label_hash("cat", 3, 1, 1, ~0ULL));
  cr_expect_neq(tabcl__label_hash("cat", 3, 1, 0, ~0ULL), tabcl__label_hash("cat", 3, 2, 0, ~0ULL));
  cr_expect_eq(tabcl__label_hash("cat", 3, 5, 2, ~0ULL),
               XXH3_64bits_withSeed("cat", 3, tabcl__column_seed(5, 2)));
  cr_expect_eq(tabcl__label_hash("cat", 3, 5, 2, 0xFF),
               XXH3_64bits_withSeed("cat", 3, tabcl__column_seed(5, 2)) & 0xFF);
  tabcl_context *ctx = tt_context();
  cr_expect_eq(tabcl__hash_mask(ctx), ~0ULL);
  tabcl__context_set_hash_bits(ctx, 3);
  cr_expect_eq(tabcl__hash_mask(ctx), 7ULL);
  tabcl__context_set_hash_bits(ctx, 63);
  cr_expect_eq(tabcl__hash_mask(ctx), ~0ULL >> 1);
  tabcl__context_set_hash_bits(ctx, 64);
  cr_expect_eq(tabcl__hash_mask(ctx), ~0ULL);
  tabcl_context_destroy(ctx);
}

/* ---- device ------------------------------------------------------------ */

/* Hashes column v on the device and checks every present label against
   libxxhash (and null slots only for being written without a fault). */
static void check_device_once(tabcl_context *ctx, const tabcl_strings_view *v, int col,
                              uint64_t seed, uint64_t mask, size_t out_offset) {
  tabcl__dev_strings d;
  memset(&d, 0, sizeof d);
  tt_assert_ok(tabcl__strings_upload(ctx, v, &d));
  size_t n = (size_t)v->length + out_offset;
  uint64_t *got = malloc((n ? n : 1) * sizeof *got);
  cr_assert(got);
  cl_mem out = NULL;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, n * sizeof *got, NULL, &out, "out"));
  for (size_t i = 0; i < n; i++) got[i] = 0xABCDEF0123456789ULL;
  tt_assert_ok(tabcl__write(ctx, out, 0, n * sizeof *got, got));
  cl_event ev = NULL;
  tt_assert_ok(tabcl__hash_column(ctx, &d, col, seed, mask, out, out_offset, 0, NULL, &ev));
  cr_assert_not_null(ev);
  cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
  clReleaseEvent(ev);
  tt_assert_ok(tabcl__read(ctx, out, 0, n * sizeof *got, got));
  for (size_t i = 0; i < out_offset; i++)
    cr_assert_eq(got[i], 0xABCDEF0123456789ULL, "slot %zu before out_offset was written", i);
  uint64_t xseed = tabcl__column_seed(seed, col);
  for (int64_t i = 0; i < v->length; i++) {
    size_t len;
    const uint8_t *p = tt_label(v, i, &len);
    if (!p) continue;
    uint64_t want = XXH3_64bits_withSeed(p, len, xseed) & mask;
    cr_assert_eq(got[out_offset + i], want, "label %lld (%zu bytes, at %lld): device %016llx, libxxhash %016llx",
                 (long long)i, len, (long long)v->offsets[i], (unsigned long long)got[out_offset + i],
                 (unsigned long long)want);
  }
  tabcl__buffer_release(out);
  tabcl__strings_release(&d);
  free(got);
}

/* check_device_once under both plans: the one the table gives ctx's
   device, and the other (the GPU kernels, as tuned, on a CPU; hash_serial
   on a GPU), so each runs on every device the suite runs on. */
static void check_device(tabcl_context *ctx, const tabcl_strings_view *v, int col, uint64_t seed,
                         uint64_t mask, size_t out_offset) {
  const int64_t serial = ctx->tune.value[TABCL__TUNE_HASH_SERIAL];
  cr_assert_neq(serial, TABCL__TUNE_AUTO, "the table gives hash.serial a value everywhere");
  check_device_once(ctx, v, col, seed, mask, out_offset);
  tt_tune(ctx, "hash.serial=%d", serial > 0 ? 0 : 3);
  check_device_once(ctx, v, col, seed, mask, out_offset);
  tt_tune(ctx, "hash.serial=%lld", (long long)serial);
}

/* The hash self-check under both plans (as check_device runs them), so
   both builds of the hash program are in ctx before a baseline is taken. */
static void selfcheck_both(tabcl_context *ctx) {
  const int64_t serial = ctx->tune.value[TABCL__TUNE_HASH_SERIAL];
  tt_assert_ok(tabcl__selfcheck_hash(ctx));
  tt_tune(ctx, "hash.serial=%d", serial > 0 ? 0 : 3);
  tt_assert_ok(tabcl__selfcheck_hash(ctx));
  tt_tune(ctx, "hash.serial=%lld", (long long)serial);
}

Test(hash_device, every_length_to_300_unaligned) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("hash_device/every_length")};
  for (int64_t first = 0; first < 3; first++) {
    tt_strings s;
    tt_strings_init(&s, first * 5);
    for (size_t len = 0; len <= 300; len++) {
      uint8_t *b = random_bytes(&r, len);
      tt_strings_push(&s, b, len);
      free(b);
    }
    tabcl_strings_view v = tt_view(&s);
    cr_assert_gt(v.offsets[v.length] - v.offsets[0], 48 * v.length);
    check_device(ctx, &v, (int)first, tt_next(&r), ~0ULL, 0); /* on a GPU teams take every label */
    for (int i = 0; i < 4000; i++) tt_strings_push(&s, "z", 1);
    v = tt_view(&s);
    cr_assert_lt(v.offsets[v.length] - v.offsets[0], 48 * v.length);
    check_device(ctx, &v, (int)first, tt_next(&r), ~0ULL, 0); /* long labels listed for teams */
    tt_strings_free(&s);
  }
  tabcl_context_destroy(ctx);
}

Test(hash_device, boundaries_every_start) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("hash_device/boundaries")};
  tt_strings s;
  tt_strings_init(&s, 3);
  for (size_t b = 0; b < NBOUND; b++)
    for (int start = 0; start < 8; start++) {
      /* a 1..7 byte filler shifts the next label's start through every residue */
      uint8_t *fill = random_bytes(&r, (size_t)start + 1);
      tt_strings_push(&s, fill, (size_t)start + 1);
      free(fill);
      uint8_t *lab = random_bytes(&r, boundaries[b]);
      tt_strings_push(&s, lab, boundaries[b]);
      free(lab);
    }
  tabcl_strings_view v = tt_view(&s);
  check_device(ctx, &v, 1, 12345, ~0ULL, 0);
  check_device(ctx, &v, 2, 0, ~0ULL, 3);
  /* the same labels among many short ones: the listing path */
  for (int i = 0; i < 100000; i++) tt_strings_push(&s, "short", (size_t)(i % 6));
  v = tt_view(&s);
  cr_assert_lt(v.offsets[v.length] - v.offsets[0], 48 * v.length);
  check_device(ctx, &v, 3, 777, ~0ULL, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

Test(hash_device, random_lengths_to_70000) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("hash_device/random")};
  tt_strings s;
  tt_strings_init(&s, (int64_t)tt_below(&r, 13));
  for (int i = 0; i < 600; i++) {
    size_t len = (size_t)(i % 40 == 0 ? tt_below(&r, 70001) : i % 3 ? tt_below(&r, 300) : tt_below(&r, 5000));
    uint8_t *b = random_bytes(&r, len);
    if (i % 11 == 0) tt_strings_push_null(&s);
    tt_strings_push(&s, b, len);
    free(b);
  }
  tabcl_strings_view v = tt_view(&s);
  check_device(ctx, &v, 4, tt_next(&r), ~0ULL, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

Test(hash_device, byte_values_zero_bytes_nulls) {
  tabcl_context *ctx = tt_context();
  tt_strings s;
  tt_strings_init(&s, 1);
  uint8_t all[256];
  for (int i = 0; i < 256; i++) all[i] = (uint8_t)(255 - i);
  for (size_t len = 1; len <= 256; len++) tt_strings_push(&s, all + 256 - len, len);
  uint8_t zeros[2000] = {0};
  for (size_t len = 0; len < 2000; len += 1 + len / 3) {
    tt_strings_push(&s, zeros, len);
    tt_strings_push_null(&s);
  }
  const char invalid[] = "\xff\xfe\xc3\x28 \xe2\x82 \x00 caf\xc3\xa9";
  tt_strings_push(&s, invalid, sizeof invalid);
  tabcl_strings_view v = tt_view(&s);
  check_device(ctx, &v, 0, 99, ~0ULL, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

Test(hash_device, empty_and_only_empty_labels) {
  tabcl_context *ctx = tt_context();
  selfcheck_both(ctx); /* the compiled programs stay in the context */
  tt_live base = tt_live_now();
  tabcl_strings_view none = {0, NULL, NULL, NULL};
  check_device(ctx, &none, 0, 1, ~0ULL, 0);
  check_device(ctx, &none, 0, 1, ~0ULL, 2);
  tt_strings s;
  tt_strings_init(&s, 0);
  for (int i = 0; i < 1000; i++) {
    if (i % 9 == 0) tt_strings_push_null(&s);
    else tt_strings_push(&s, "", 0);
  }
  tabcl_strings_view v = tt_view(&s);
  v.data = NULL;
  check_device(ctx, &v, 5, 77, ~0ULL, 0);
  tt_strings_free(&s);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

/* One 70,000-byte label among many short ones, and several huge ones
   with a small work-group so the block rounds of the cooperative kernel
   run more than once. */
Test(hash_device, huge_among_short) {
  tabcl_context *ctx = tt_context();
  uint64_t limit;
  /* the loop probe (the CPU plan's long runs ask for it once) is no launch of the hash */
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  tt_rng r = {tt_seed("hash_device/huge_among_short")};
  tt_strings s;
  tt_strings_init(&s, 7);
  uint8_t *big = random_bytes(&r, 70000 + 16);
  for (int i = 0; i < 20000; i++) {
    if (i == 12345) tt_strings_push(&s, big + 1, 70000);
    char lab[24];
    int n = snprintf(lab, sizeof lab, "label-%d", i);
    tt_strings_push(&s, lab, (size_t)n);
  }
  tabcl_strings_view v = tt_view(&s);
  tabcl_stats before, after;
  const int64_t serial = ctx->tune.value[TABCL__TUNE_HASH_SERIAL];
  /* the CPU plan: one launch of hash_serial takes every label */
  tt_tune(ctx, "hash.serial=4");
  tabcl_context_stats(ctx, &before);
  check_device_once(ctx, &v, 0, 5, ~0ULL, 0);
  tabcl_context_stats(ctx, &after);
  cr_expect_eq(after.kernel_launches - before.kernel_launches, 1);
  tt_tune(ctx, "hash.serial=0");
  /* one work-item a label, the (empty) team pass, and hash_big taking the
     huge label in one pass */
  hash_variants(ctx, 0, 0, 0);
  tabcl_context_stats(ctx, &before);
  check_device_once(ctx, &v, 0, 5, ~0ULL, 0);
  tabcl_context_stats(ctx, &after);
  cr_expect_eq(after.kernel_launches - before.kernel_launches, 3);
  hash_variants(ctx, 0, 0, 0);
  tt_tune(ctx, "hash.serial=%lld", (long long)serial);
  tt_strings_free(&s);

  hash_tune(ctx, 1500);
  tt_strings_init(&s, 1);
  size_t lens[] = {1499, 1500, 1501, 2048, 2049, 3073, 5000, 9000, 70000, 241, 300};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    tt_strings_push(&s, "x", 1);
    tt_strings_push(&s, big + i, lens[i]);
  }
  v = tt_view(&s);
  check_device(ctx, &v, 2, 6, ~0ULL, 1);
  hash_tune(ctx, 0);
  tt_strings_free(&s);
  free(big);
  tabcl_context_destroy(ctx);
}

/* The mid kernels that take every label (hash_team_all_flat,
   hash_pair_all, then the default) with hash_big (one
   work-group a huge label) on columns that reach them: every length
   0..300 and the block boundaries at every start among longer labels (so
   the mid kernel takes every label), huge labels listed among short ones
   and taken directly, with small work-groups so passes repeat. */
Test(hash_device, mid_and_big_kernels) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("hash_device/mid_and_big")};
  uint8_t *big = random_bytes(&r, 70000 + 128);
  static const int mids[3] = {3, 5, 0};
  for (int64_t first = 0; first < 3; first++) {
    hash_variants(ctx, mids[first], 0, 0);
    tt_strings s;
    tt_strings_init(&s, first * 5);
    for (size_t len = 0; len <= 300; len++) tt_strings_push(&s, big + len, len);
    for (size_t b = 0; b < NBOUND; b++)
      for (int start = 0; start < 8; start++) {
        tt_strings_push(&s, big, (size_t)start + 1);
        if (b % 5 == 0) tt_strings_push_null(&s);
        tt_strings_push(&s, big + b + start, boundaries[b]);
      }
    for (int i = 0; i < 40; i++) tt_strings_push(&s, big + i, 241 + tt_below(&r, 8000));
    tabcl_strings_view v = tt_view(&s);
    cr_assert_gt(v.offsets[v.length] - v.offsets[0], 240 * v.length);
    check_device(ctx, &v, (int)first, tt_next(&r), ~0ULL, (size_t)first);
    tt_strings_free(&s);
  }
  /* Huge labels with a low threshold and small groups: listed among
     short ones, then taken directly (a column of mostly huge labels). */
  size_t wgs[] = {8, 16, 0};
  for (size_t k = 0; k < 3; k++) {
    hash_variants(ctx, mids[k], wgs[k], k == 0 ? 16 : 0);
    hash_tune(ctx, 1500);
    tt_strings s;
    tt_strings_init(&s, 1);
    size_t lens[] = {1499, 1500, 1501, 2048, 2049, 3073, 5000, 9000, 70000, 241, 300, 16385};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
      tt_strings_push(&s, "x", 1);
      tt_strings_push(&s, big + i, lens[i]);
    }
    for (int i = 0; i < 2000; i++) tt_strings_push(&s, "y", (size_t)(i % 3));
    tabcl_strings_view v = tt_view(&s);
    check_device(ctx, &v, 2, 6, ~0ULL, 1);
    tt_strings_free(&s);
    tt_strings_init(&s, 3);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) tt_strings_push(&s, big + i, lens[i]);
    tt_strings_push(&s, big, 7);
    v = tt_view(&s);
    cr_assert_geq(v.offsets[v.length] - v.offsets[0], 1500 * v.length);
    check_device(ctx, &v, 3, 7, ~0ULL, 0);
    tt_strings_free(&s);
  }
  hash_tune(ctx, 0);
  hash_variants(ctx, 0, 0, 0);
  free(big);
  tabcl_context_destroy(ctx);
}

/* The four- and two-lane mid kernels (hash_team_all_flat, hash_pair_all): every length 0..2100 in one column (so starts take
   every residue mod 16 and the column's average keeps the mid kernel in
   charge on a CPU too), from three start offsets, in groups of 8 (many
   rounds a group) and the default size; then huge labels listed among
   them for hash_big. */
Test(hash_device, mid_kernels_every_length) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("hash_device/mid_kernels")};
  uint8_t *big = random_bytes(&r, 20000 + 64);
  for (int mid = 3; mid <= 5; mid += 2)
    for (int64_t first = 0; first < 3; first++) {
      hash_variants(ctx, mid, 0, first == 1 ? 8 : 0);
      tt_strings s;
      tt_strings_init(&s, first * 5 + 1);
      for (size_t len = 0; len <= 2100; len++) {
        tt_strings_push(&s, big + (len * 7) % 64, len);
        if (len % 97 == 3) tt_strings_push_null(&s);
      }
      tabcl_strings_view v = tt_view(&s);
      cr_assert_gt(v.offsets[v.length] - v.offsets[0], 240 * v.length);
      check_device(ctx, &v, (int)first, tt_next(&r), ~0ULL, (size_t)first);
      /* huge labels listed (a low threshold) for hash_big */
      hash_tune(ctx, 1500);
      hash_variants(ctx, mid, 0, first == 1 ? 8 : 0);
      size_t lens[] = {1499, 1500, 1501, 2048, 2049, 9000, 20000};
      for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) tt_strings_push(&s, big + i, lens[i]);
      v = tt_view(&s);
      check_device(ctx, &v, 2, tt_next(&r), ~0ULL, 0);
      hash_tune(ctx, 0);
      tt_strings_free(&s);
    }
  hash_variants(ctx, 0, 0, 0);
  free(big);
  tabcl_context_destroy(ctx);
}

/* Numbers of removed kernels (mid 2, 4, 6, 7) and unknown ones mean the
   default: the column still hashes, with as many launches as the default. */
Test(hash_device, removed_variants_are_refused) {
  tabcl_context *ctx = tt_context();
  uint64_t limit;
  /* the loop probe (the CPU plan's long runs ask for it once) is no launch of the hash */
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  tt_rng r = {tt_seed("hash_device/removed_variants")};
  tt_strings s;
  tt_strings_init(&s, 1);
  for (int i = 0; i < 300; i++) {
    size_t len = (size_t)(i == 100 ? 9000 : tt_below(&r, 1200));
    uint8_t *b = random_bytes(&r, len);
    tt_strings_push(&s, b, len);
    free(b);
  }
  tabcl_strings_view v = tt_view(&s);
  tabcl_stats before, after;
  tabcl_context_stats(ctx, &before);
  check_device(ctx, &v, 1, 9, ~0ULL, 0);
  tabcl_context_stats(ctx, &after);
  uint64_t want = after.kernel_launches - before.kernel_launches;
  /* Kernel numbers that name no kernel (1, 2, 4, 6 and 7 named kernels
     since removed) are refused with a message naming the entry, and leave the
     tuning as it was: the same launches, the same hashes. */
  static const char *const bad[] = {"hash.mid=1", "hash.mid=2", "hash.mid=4", "hash.mid=6",
                                    "hash.mid=7", "hash.mid=8", "hash.mid=-1", "hash.mid=5x",
                                    "hash.mid="};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    cr_expect_eq(tabcl__context_tune(ctx, bad[k]), TABCL_INVALID_ARGUMENT, "%s", bad[k]);
    cr_expect(strstr(tabcl_last_error(), bad[k]) != NULL, "%s: the message names it: %s", bad[k],
              tabcl_last_error());
    tabcl_context_stats(ctx, &before);
    check_device(ctx, &v, 1, 9, ~0ULL, 0);
    tabcl_context_stats(ctx, &after);
    cr_expect_eq(after.kernel_launches - before.kernel_launches, want, "after %s", bad[k]);
  }
  hash_variants(ctx, 0, 0, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

Test(hash_device, columns_differ_and_masks) {
  tabcl_context *ctx = tt_context();
  tt_strings s;
  tt_strings_init(&s, 0);
  const char *labels[] = {"", "a", "same label", "a label longer than sixteen bytes"};
  for (int i = 0; i < 4; i++) tt_strings_push(&s, labels[i], strlen(labels[i]));
  tabcl_strings_view v = tt_view(&s);
  tabcl__dev_strings d;
  memset(&d, 0, sizeof d);
  tt_assert_ok(tabcl__strings_upload(ctx, &v, &d));
  cl_mem out = NULL;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, 8 * sizeof(uint64_t), NULL, &out, "out"));
  tt_assert_ok(tabcl__hash_column(ctx, &d, 0, 11, ~0ULL, out, 0, 0, NULL, NULL));
  tt_assert_ok(tabcl__hash_column(ctx, &d, 1, 11, ~0ULL, out, 4, 0, NULL, NULL));
  uint64_t h[8];
  tt_assert_ok(tabcl__read(ctx, out, 0, sizeof h, h));
  for (int i = 0; i < 4; i++) {
    cr_expect_neq(h[i], h[4 + i], "label %d: columns 0 and 1 give different hashes", i);
    cr_expect_eq(h[i], tabcl__label_hash(labels[i], strlen(labels[i]), 11, 0, ~0ULL));
  }
  tabcl__buffer_release(out);
  tabcl__strings_release(&d);
  tt_strings_free(&s);
  /* masked: the low bits only */
  tt_rng r = {tt_seed("hash_device/masks")};
  tt_strings_init(&s, 2);
  for (int i = 0; i < 500; i++) {
    size_t len = (size_t)tt_below(&r, 700);
    uint8_t *b = random_bytes(&r, len);
    tt_strings_push(&s, b, len);
    free(b);
  }
  v = tt_view(&s);
  check_device(ctx, &v, 3, 8, 0x7, 0);
  check_device(ctx, &v, 3, 8, 0xFFFF, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

Test(hash_device, sliced_equals_unsliced) {
  tabcl_options o = {0};
  o.max_batch_per_launch = 37;
  tabcl_context *ctx = tt_context_with(&o);
  tt_rng r = {tt_seed("hash_device/sliced")};
  tt_strings s;
  tt_strings_init(&s, 3);
  for (int i = 0; i < 400; i++) {
    size_t len = (size_t)(i % 50 == 7 ? 17000 + tt_below(&r, 3000) : tt_below(&r, 600));
    uint8_t *b = random_bytes(&r, len);
    tt_strings_push(&s, b, len);
    free(b);
  }
  tabcl_strings_view v = tt_view(&s);
  /* the default kernels, then every mid kernel with each big one, all sliced */
  static const int mids[3] = {0, 3, 5};
  for (int k = 0; k < 3; k++) {
    hash_variants(ctx, mids[k], 0, 0);
    check_device(ctx, &v, 1, 3, ~0ULL, 5);
  }
  tabcl_stats st;
  tabcl_context_stats(ctx, &st);
  cr_expect_gt(st.kernel_launches, 400 / 37, "the column was sliced");
  tt_strings_free(&s);
  /* Mostly huge labels: the block kernels take them slice by slice, unlisted. */
  tt_strings_init(&s, 5);
  for (int i = 0; i < 100; i++) {
    size_t len = (size_t)(i % 9 == 4 ? tt_below(&r, 300) : 8192 + tt_below(&r, 9000));
    uint8_t *b = random_bytes(&r, len);
    tt_strings_push(&s, b, len);
    free(b);
  }
  v = tt_view(&s);
  cr_assert_geq(s.offsets[s.length] - s.offsets[0], 8192 * s.length);
  for (int k = 0; k < 3; k++) {
    hash_variants(ctx, mids[k], 0, 0);
    check_device(ctx, &v, 2, 4, ~0ULL, 3);
  }
  hash_variants(ctx, 0, 0, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

Test(hash_device, selfcheck_and_one_compile) {
  tabcl_context *ctx = tt_context();
  selfcheck_both(ctx);
  tabcl_stats a, b;
  tabcl_context_stats(ctx, &a);
  /* other counts, lengths, offsets, seeds and masks */
  tt_strings s;
  tt_strings_init(&s, 1);
  uint8_t big[20000];
  memset(big, 'q', sizeof big);
  size_t lens[] = {5, 300, 20000, 17, 0, 3000};
  for (int i = 0; i < 6; i++) tt_strings_push(&s, big, lens[i]);
  tabcl_strings_view v = tt_view(&s);
  check_device(ctx, &v, 9, 123, 0xFFF, 2);
  tt_strings_free(&s);
  tabcl_context_stats(ctx, &b);
  cr_expect_eq(a.programs_built + a.programs_from_cache, b.programs_built + b.programs_from_cache,
               "other sizes compile nothing");
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
/* Fail the 1st, 2nd, ... allocation or OpenCL call of upload + hash until
   a run succeeds; each failed run leaks nothing and the context still works. */
/* mid and big pick the kernels (tabcl__hash_variants; 0, 0: the defaults,
   hash_team_all_flat for this column and hash_big). */
static void sweep_hash(int which, int mid) {
  tabcl_context *ctx = tt_context();
  tt_strings s, many;
  tt_strings_init(&s, 5);
  tt_rng r = {99};
  size_t lens[] = {3, 0, 300, 17000, 12, 2000};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    uint8_t *b = random_bytes(&r, lens[i]);
    tt_strings_push(&s, b, lens[i]);
    free(b);
  }
  /* the same labels among many short ones: the listing path, not team-per-label */
  tt_strings_init(&many, 0);
  for (int64_t i = 0; i < s.length; i++)
    tt_strings_push(&many, s.data + s.offsets[i], (size_t)(s.offsets[i + 1] - s.offsets[i]));
  for (int i = 0; i < 400; i++) tt_strings_push(&many, "q", 1);
  tabcl_strings_view views[2] = {tt_view(&s), tt_view(&many)};
  /* compile first, so the sweep covers the calls themselves */
  tt_assert_ok(tabcl__selfcheck_hash(ctx));
  hash_variants(ctx, mid, 0, 0);
  for (long n = 1; n < 10000; n++) {
    tt_live base = tt_live_now();
    tabcl__dev_strings d[2];
    memset(d, 0, sizeof d);
    cl_mem out = NULL;
    cl_event ev[2] = {NULL, NULL};
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_status st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, 8 * 406, NULL, &out, "out");
    for (int k = 0; k < 2 && !st; k++) {
      st = tabcl__strings_upload(ctx, &views[k], &d[k]);
      if (!st) st = tabcl__hash_column(ctx, &d[k], 0, 1, ~0ULL, out, 0, 0, NULL, &ev[k]);
    }
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (fired) {
      cr_expect_neq(st, TABCL_OK, "%s failure %ld was swallowed", which ? "OpenCL" : "alloc", n);
      cr_expect_neq(strlen(tabcl_last_error()), 0);
    }
    for (int k = 0; k < 2; k++) {
      if (ev[k]) clReleaseEvent(ev[k]);
      tabcl__strings_release(&d[k]);
    }
    tabcl__finish(ctx);
    tabcl__buffer_release(out);
    tt_expect_no_leak(base);
    if (!fired) {
      cr_expect_eq(st, TABCL_OK, "%s", tabcl_last_error());
      tt_assert_ok(tabcl__selfcheck_hash(ctx));
      cr_log_info("%s sweep: %ld points", which ? "OpenCL" : "alloc", n - 1);
      break;
    }
    /* a failed call hands back no event: only the calls before it made one */
    int made = (ev[0] != NULL) + (ev[1] != NULL);
    cr_expect_leq(made, 1, "failure %ld: the failing call returned an event", n);
  }
  hash_variants(ctx, 0, 0, 0);
  tt_strings_free(&s);
  tt_strings_free(&many);
  tabcl_context_destroy(ctx);
}
Test(hash_faults, injected_alloc_failures) { sweep_hash(0, 0); }
Test(hash_faults, injected_cl_failures) { sweep_hash(1, 0); }
Test(hash_faults, injected_alloc_failures_team_flat) { sweep_hash(0, 3); }
Test(hash_faults, injected_cl_failures_team_flat) { sweep_hash(1, 3); }
Test(hash_faults, injected_alloc_failures_pair) { sweep_hash(0, 5); }
Test(hash_faults, injected_cl_failures_pair) { sweep_hash(1, 5); }
#endif

/* Tiny shapes for oclgrind: every kernel, the team kernel across a block
   boundary, the block kernels just over their threshold and with more
   units than teams. */
Test(oclgrind_hash, tiny) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("oclgrind_hash/tiny")};
  tt_strings s;
  tt_strings_init(&s, 3);
  size_t lens[] = {0, 1, 3, 4, 8, 9, 16, 17, 100, 129, 240, 241, 1025, 2100, 2101, 3200, 5};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    uint8_t *b = random_bytes(&r, lens[i]);
    tt_strings_push(&s, b, lens[i]);
    if (i == 4) tt_strings_push_null(&s);
    free(b);
  }
  tabcl_strings_view v = tt_view(&s);
  hash_tune(ctx, 2101);   /* 2101 just over, 3200: four units for two teams */
  hash_variants(ctx, 3, 0, 0);
  /* mostly long labels: hash_team_all_flat, then hash_big */
  cr_assert_gt(s.offsets[s.length] - s.offsets[0], 240 * s.length);
  check_device(ctx, &v, 1, 2, ~0ULL, 1);
  /* mostly short labels: hash_short_list, hash_team, hash_big */
  for (int i = 0; i < 60; i++) tt_strings_push(&s, "ab", 2);
  v = tt_view(&s);
  cr_assert_lt(s.offsets[s.length] - s.offsets[0], 240 * s.length);
  check_device(ctx, &v, 1, 2, ~0ULL, 0);
  /* mostly huge labels: hash_team_all_flat for the short one, hash_big
     over the whole column (no list) for the others */
  tt_strings_free(&s);
  tt_strings_init(&s, 5);
  size_t hlens[] = {4500, 2200, 7};
  for (size_t i = 0; i < sizeof hlens / sizeof hlens[0]; i++) {
    uint8_t *b = random_bytes(&r, hlens[i]);
    tt_strings_push(&s, b, hlens[i]);
    free(b);
  }
  v = tt_view(&s);
  cr_assert_geq(s.offsets[s.length] - s.offsets[0], 2101 * s.length);
  check_device(ctx, &v, 1, 2, ~0ULL, 0);
  hash_tune(ctx, 0);
  hash_variants(ctx, 0, 0, 0);
  tabcl_strings_view none = {0, NULL, NULL, NULL};
  check_device(ctx, &none, 0, 1, ~0ULL, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

/* The CPU plan (hash_serial) at tiny shapes: every length class, each
   label at every byte alignment in turn, so that its unaligned loads (one
   ulong or a whole 64-byte stripe at any byte) and the 1 KiB blocks of a
   long label run where oclgrind sees every byte they touch. */
Test(oclgrind_hash, serial_every_alignment) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("oclgrind_hash/serial_every_alignment")};
  tt_strings s;
  tt_strings_init(&s, 9);
  size_t lens[] = {0, 3, 8, 9, 16, 17, 33, 64, 65, 128, 129, 240, 241, 255, 256, 1024, 1025, 2300};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    uint8_t *b = random_bytes(&r, lens[i]);
    tt_strings_push(&s, b, lens[i]);
    /* i % 8 bytes after it: the next label starts at another alignment */
    tt_strings_push(&s, b, i % 8);
    free(b);
  }
  tabcl_strings_view v = tt_view(&s);
  const int64_t serial = ctx->tune.value[TABCL__TUNE_HASH_SERIAL];
  tt_tune(ctx, "hash.serial=2");
  check_device_once(ctx, &v, 1, 2, ~0ULL, 0);
  tt_tune(ctx, "hash.serial=%lld", (long long)serial);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

/* hash_serial_part at tiny shapes: under a loop limit of 4,000 a label of
   more than about 1.5 KiB is too long for one work-item, so labels of a
   few KiB take several launches, their accumulators kept between them. */
Test(oclgrind_hash, serial_parts) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("oclgrind_hash/serial_parts")};
  tabcl__context_set_loop_limit(ctx, 4000);
  tt_strings s;
  tt_strings_init(&s, 6);
  size_t lens[] = {5, 241, 2049, 1025, 9000, 0, 5121, 64};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    uint8_t *b = random_bytes(&r, lens[i]);
    tt_strings_push(&s, b, lens[i]);
    /* a few bytes of it after it (no more than it has) */
    tt_strings_push(&s, b, i % 8 < lens[i] ? i % 8 : lens[i]);
    free(b);
  }
  tabcl_strings_view v = tt_view(&s);
  tt_tune(ctx, "hash.serial=2");
  tabcl__hash_plan p;
  tt_assert_ok(tabcl__hash_plan_for(ctx, v.length, v.offsets[v.length], 9000, &p));
  cr_assert_str_eq(p.serial_kernel, "hash_serial_part");
  cr_assert_gt(p.parts, 1);
  check_device_once(ctx, &v, 1, 2, ~0ULL, 0);
  tt_strings_free(&s);
  tabcl_context_destroy(ctx);
}

/* The selectable kernels at tiny shapes: hash_team_all_flat and
   hash_pair_all over every length class (several rounds a group),
   hash_big listed and direct with more units than a pass holds. */
Test(oclgrind_hash, team_and_big) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("oclgrind_hash/team_and_big")};
  uint8_t *b = random_bytes(&r, 6000);
  tt_strings s;
  tt_strings_init(&s, 3);
  size_t lens[] = {0, 3, 8, 9, 16, 17, 100, 129, 240, 241, 1025, 2100, 2101, 3200, 5, 300};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) tt_strings_push(&s, b + i, lens[i]);
  tabcl_strings_view v = tt_view(&s);
  hash_variants(ctx, 5, 16, 16);
  hash_tune(ctx, 2101);
  cr_assert_gt(s.offsets[s.length] - s.offsets[0], 240 * s.length);
  check_device(ctx, &v, 1, 2, ~0ULL, 1);
  hash_variants(ctx, 3, 0, 8);
  check_device(ctx, &v, 1, 2, ~0ULL, 0);
  hash_variants(ctx, 3, 16, 16);
  tt_strings_free(&s);
  tt_strings_init(&s, 5);
  size_t hlens[] = {4500, 2200, 7};
  for (size_t i = 0; i < sizeof hlens / sizeof hlens[0]; i++) tt_strings_push(&s, b + 2 * i, hlens[i]);
  v = tt_view(&s);
  cr_assert_geq(s.offsets[s.length] - s.offsets[0], 2101 * s.length);
  check_device(ctx, &v, 1, 2, ~0ULL, 0);
  hash_tune(ctx, 0);
  hash_variants(ctx, 0, 0, 0);
  tt_strings_free(&s);
  free(b);
  tabcl_context_destroy(ctx);
}

/* hash_team_all_flat and hash_pair_all at tiny shapes:
   every length class at odd starts, groups of 8 so groups take several
   rounds, a huge label listed for hash_big. */
Test(oclgrind_hash, mid_kernels) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("oclgrind_hash/mid_kernels")};
  uint8_t *b = random_bytes(&r, 4000);
  tt_strings s;
  tt_strings_init(&s, 3);
  size_t lens[] = {0, 3, 8, 9, 16, 17, 100, 129, 240, 241, 256, 300, 1025, 1100, 2200, 5, 257, 1024, 600};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    tt_strings_push(&s, b + i, lens[i]);
    if (i == 4) tt_strings_push_null(&s);
  }
  tabcl_strings_view v = tt_view(&s);
  cr_assert_gt(s.offsets[s.length] - s.offsets[0], 240 * s.length);
  hash_tune(ctx, 2101);
  for (int mid = 3; mid <= 5; mid += 2) {
    hash_variants(ctx, mid, 16, 8);
    check_device(ctx, &v, 1, 2, ~0ULL, (size_t)mid / 2);
  }
  hash_tune(ctx, 0);
  hash_variants(ctx, 0, 0, 0);
  tt_strings_free(&s);
  free(b);
  tabcl_context_destroy(ctx);
}

/* Offsets a device-resident caller passes are not checked on the host: a
   label that ends before it starts or past the data is hashed as empty,
   and nothing outside the buffers is read (oclgrind checks that here). */
Test(oclgrind_hash, bad_device_offsets) {
  tabcl_context *ctx = tt_context();
  uint8_t data[40 + 8] = {0};
  for (int i = 0; i < 40; i++) data[i] = (uint8_t)(i * 5 + 1);
  int64_t off[7] = {0, 10, 4, 30, 1000000, 35, -5};
  tabcl__dev_strings d;
  memset(&d, 0, sizeof d);
  d.length = 6;
  d.bytes = 40;
  d.max_label = 40;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof data, data,
                                    &d.data, "data"));
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof off, off,
                                    &d.offsets, "offsets"));
  cl_mem out = NULL;
  uint64_t got[6];
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, sizeof got, NULL, &out, "out"));
  tt_assert_ok(tabcl__hash_column(ctx, &d, 0, 4, ~0ULL, out, 0, 0, NULL, NULL));
  tt_assert_ok(tabcl__read(ctx, out, 0, sizeof got, got));
  uint64_t empty = tabcl__label_hash(NULL, 0, 4, 0, ~0ULL);
  cr_expect_eq(got[0], tabcl__label_hash(data, 10, 4, 0, ~0ULL));
  cr_expect_eq(got[1], empty, "decreasing");
  cr_expect_eq(got[2], tabcl__label_hash(data + 4, 26, 4, 0, ~0ULL));
  cr_expect_eq(got[3], empty, "past the data");
  cr_expect_eq(got[4], empty, "starting past the data");
  cr_expect_eq(got[5], empty, "negative end");
  tabcl__buffer_release(out);
  tabcl__strings_release(&d);

  /* The same through each mid kernel that takes every label and hash_big
     (listed): long labels among the bad ones. */
  enum { NB = 2000 };
  uint8_t *big = calloc(NB + 8, 1);
  cr_assert(big);
  for (int i = 0; i < NB; i++) big[i] = (uint8_t)(i * 7 + 3);
  int64_t boff[7] = {0, 700, 300, 1900, 5000000, 1950, -5};
  memset(&d, 0, sizeof d);
  d.length = 6;
  d.bytes = NB;
  d.max_label = 1600;
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, NB + 8, big,
                                    &d.data, "data"));
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof boff,
                                    boff, &d.offsets, "offsets"));
  tt_assert_ok(tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, sizeof got, NULL, &out, "out"));
  hash_tune(ctx, 500);
  for (int mid = 3; mid <= 5; mid += 2) {
    hash_variants(ctx, mid, 16, 16);
    memset(got, 0, sizeof got);
    tt_assert_ok(tabcl__hash_column(ctx, &d, 0, 4, ~0ULL, out, 0, 0, NULL, NULL));
    tt_assert_ok(tabcl__read(ctx, out, 0, sizeof got, got));
    cr_expect_eq(got[0], tabcl__label_hash(big, 700, 4, 0, ~0ULL), "mid %d", mid);
    cr_expect_eq(got[1], empty, "mid %d: decreasing", mid);
    cr_expect_eq(got[2], tabcl__label_hash(big + 300, 1600, 4, 0, ~0ULL), "mid %d", mid);
    cr_expect_eq(got[3], empty, "mid %d: past the data", mid);
    cr_expect_eq(got[4], empty, "mid %d: starting past the data", mid);
    cr_expect_eq(got[5], empty, "mid %d: negative end", mid);
  }
  hash_tune(ctx, 0);
  hash_variants(ctx, 0, 0, 0);
  tabcl__buffer_release(out);
  tabcl__strings_release(&d);
  free(big);
  tabcl_context_destroy(ctx);
}


/* The CPU plan under a device's loop limit (llvmpipe's 65,535; set so on
   devices without one): labels too long for one work-item take
   hash_serial_part, their blocks over launches, and match libxxhash, as do
   the short and long labels around them, at any start. */
Test(hash_device, serial_parts_under_a_loop_limit) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("hash_device/serial_parts_under_a_loop_limit")};
  uint64_t limit = 0;
  tt_assert_ok(tabcl__loop_limit(ctx, &limit));
  if (!limit) tabcl__context_set_loop_limit(ctx, 65535);
  tt_tune(ctx, "hash.serial=8");
  static const size_t lens[] = {0, 5, 240, 241, 1024, 1025, 2048, 150000, 300001,
                                (1 << 20) + 7, 64, 17};
  const size_t n = sizeof lens / sizeof lens[0];
  uint8_t *bytes = random_bytes(&r, ((size_t)2 << 20) + 64);
  tt_strings s;
  tt_strings_init(&s, (int)n);
  for (size_t i = 0; i < n; i++) tt_strings_push(&s, bytes + tt_below(&r, 8), lens[i]);
  tabcl_strings_view v = tt_view(&s);
  tabcl__hash_plan p;
  tt_assert_ok(tabcl__hash_plan_for(ctx, v.length, v.offsets[v.length], (1 << 20) + 7, &p));
  cr_assert_str_eq(p.serial_kernel, "hash_serial_part");
  cr_assert_gt(p.parts, 1, "the longest label over several launches");
  for (int col = 0; col < 2; col++) check_device_once(ctx, &v, col, 7, ~0ULL, (size_t)col * 3);
  tt_strings_free(&s);
  free(bytes);
  tabcl_context_destroy(ctx);
}

/* Labels of 4 and 24 MiB under the default plan (on a GPU plan: hash_big
   with groups sized to the longest label): long loops in every kernel
   that takes them (Mesa 22.3's llvmpipe
   ends a work-item's loops after 65,535 iterations in all). */
Test(hash_device, labels_of_many_mib) {
  tabcl_context *ctx = tt_context();
  tt_rng r = {tt_seed("hash_device/labels_of_many_mib")};
  const size_t big = (size_t)24 << 20;
  uint8_t *bytes = random_bytes(&r, big + 8);
  tt_strings s;
  tt_strings_init(&s, 3);
  tt_strings_push(&s, "short", 5);
  tt_strings_push(&s, bytes + 1, (size_t)4 << 20);
  tt_strings_push(&s, bytes + 3, big);
  tt_strings_push(&s, "", 0);
  tabcl_strings_view v = tt_view(&s);
  /* the CPU plan where the device has one, then the GPU kernels (hash_big
     with its automatic group: smaller groups loop longer than llvmpipe's
     65,535 iterations for a 24 MiB label) */
  const int64_t serial = ctx->tune.value[TABCL__TUNE_HASH_SERIAL];
  for (int gpu = 0; gpu <= 1; gpu++) {
    if (gpu) tt_tune(ctx, "hash.serial=0");
    check_device(ctx, &v, 1, 99, ~0ULL, 0);
  }
  tt_tune(ctx, "hash.serial=%lld", (long long)serial);
  tt_strings_free(&s);
  free(bytes);
  tabcl_context_destroy(ctx);
}
