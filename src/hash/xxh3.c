/* tabcl's own XXH3-64 on the host, written from the published algorithm
 * (xxHash 0.8, 64-bit variant with a seed). It is the reference the device
 * kernels are checked against and what the library uses on the host; the
 * tests check it bit for bit against libxxhash, which the library itself
 * never links. */

#include <stdatomic.h>
#include <string.h>

#include "hash/hash.h"

#define TABCL_XXH_PRIME32_1 0x9E3779B1u
#define TABCL_XXH_PRIME32_2 0x85EBCA77u
#define TABCL_XXH_PRIME32_3 0xC2B2AE3Du
#define TABCL_XXH_PRIME64_1 0x9E3779B185EBCA87ULL
#define TABCL_XXH_PRIME64_2 0xC2B2AE3D27D4EB4FULL
#define TABCL_XXH_PRIME64_3 0x165667B19E3779F9ULL
#define TABCL_XXH_PRIME64_4 0x85EBCA77C2B2AE63ULL
#define TABCL_XXH_PRIME64_5 0x27D4EB2F165667C5ULL
#define TABCL_XXH_PRIME_MX1 0x165667919E3779F9ULL
#define TABCL_XXH_PRIME_MX2 0x9FB21C651E98DF25ULL
#define TABCL_XXH_STRIPES 16u                    /* (192 - 64) / 8 stripes a block */
#define TABCL_XXH_BLOCK (64u * TABCL_XXH_STRIPES) /* bytes between scrambles */

/* XXH3's default 192-byte secret as little-endian words. */
static const uint64_t tabcl__xxh3_secret[24] = {
    0xbe4ba423396cfeb8ULL, 0x1cad21f72c81017cULL, 0xdb979083e96dd4deULL,
    0x1f67b3b7a4a44072ULL, 0x78e5c0cc4ee679cbULL, 0x2172ffcc7dd05a82ULL,
    0x8e2443f7744608b8ULL, 0x4c263a81e69035e0ULL, 0xcb00c391bb52283cULL,
    0xa32e531b8b65d088ULL, 0x4ef90da297486471ULL, 0xd8acdea946ef1938ULL,
    0x3f349ce33f76faa8ULL, 0x1d4f0bc7c7bbdcf9ULL, 0x3159b4cd4be0518aULL,
    0x647378d9c97e9fc8ULL, 0xc3ebd33483acc5eaULL, 0xeb6313faffa081c5ULL,
    0x49daf0b751dd0d17ULL, 0x9e68d429265516d3ULL, 0xfca1477d58be162bULL,
    0xce31d07ad1b8f88fULL, 0x280416958f3acb45ULL, 0x7e404bbbcafbd7afULL,
};

/* XXH3 reads little-endian words at any byte offset. On a little-endian
   host that is one unaligned load (memcpy); elsewhere the bytes are joined
   one by one. The host lookup (catindex_host.c) hashes every query with
   this, so the loads matter (bench/RESULTS.md, "The host hash's AVX2
   loop"). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TABCL_XXH_LE 1
#else
#define TABCL_XXH_LE 0
#endif

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  if (TABCL_XXH_LE) {
    memcpy(&v, p, 8);
    return v;
  }
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  if (TABCL_XXH_LE) {
    memcpy(&v, p, 4);
    return v;
  }
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The secret is kept as 24 little-endian words; XXH3 also reads it at
   unaligned byte offsets, so a read joins two neighbouring words (on a
   little-endian host the words' bytes are the secret's, read directly). */
static uint64_t sec64(const uint64_t *w, unsigned off) {
  if (TABCL_XXH_LE) return rd64((const uint8_t *)w + off);
  unsigned q = off >> 3, r = (off & 7) * 8;
  return r ? (w[q] >> r) | (w[q + 1] << (64 - r)) : w[q];
}

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t swap64(uint64_t x) {
  x = ((x & 0x00FF00FF00FF00FFULL) << 8) | ((x >> 8) & 0x00FF00FF00FF00FFULL);
  x = ((x & 0x0000FFFF0000FFFFULL) << 16) | ((x >> 16) & 0x0000FFFF0000FFFFULL);
  return (x << 32) | (x >> 32);
}

static uint32_t swap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24);
}

/* Low and high halves of the 128-bit product, xor-folded. */
static uint64_t mul128_fold64(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
  unsigned __int128 p = (unsigned __int128)a * b;
  return (uint64_t)p ^ (uint64_t)(p >> 64);
#else
  uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
  uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
  uint64_t cross = (ll >> 32) + (hl & 0xFFFFFFFFu) + lh;
  uint64_t hi = (hl >> 32) + (cross >> 32) + hh;
  uint64_t lo = (cross << 32) | (ll & 0xFFFFFFFFu);
  return lo ^ hi;
#endif
}

static uint64_t xxh64_avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= TABCL_XXH_PRIME64_2;
  h ^= h >> 29;
  h *= TABCL_XXH_PRIME64_3;
  return h ^ (h >> 32);
}

static uint64_t xxh3_avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= TABCL_XXH_PRIME_MX1;
  return h ^ (h >> 32);
}

static uint64_t rrmxmx(uint64_t h, uint64_t len) {
  h ^= rotl64(h, 49) ^ rotl64(h, 24);
  h *= TABCL_XXH_PRIME_MX2;
  h ^= (h >> 35) + len;
  h *= TABCL_XXH_PRIME_MX2;
  return h ^ (h >> 28);
}

static uint64_t mix16(const uint8_t *p, const uint64_t *sec, unsigned off, uint64_t seed) {
  return mul128_fold64(rd64(p) ^ (sec64(sec, off) + seed), rd64(p + 8) ^ (sec64(sec, off + 8) - seed));
}

static uint64_t len_0to16(const uint8_t *p, size_t len, uint64_t seed) {
  const uint64_t *k = tabcl__xxh3_secret;
  if (len > 8) {
    uint64_t lo = rd64(p) ^ ((sec64(k, 24) ^ sec64(k, 32)) + seed);
    uint64_t hi = rd64(p + len - 8) ^ ((sec64(k, 40) ^ sec64(k, 48)) - seed);
    uint64_t acc = (uint64_t)len + swap64(lo) + hi + mul128_fold64(lo, hi);
    return xxh3_avalanche(acc);
  }
  if (len >= 4) {
    uint64_t s = seed ^ ((uint64_t)swap32((uint32_t)seed) << 32);
    uint64_t in = rd32(p + len - 4) + ((uint64_t)rd32(p) << 32);
    uint64_t bitflip = (sec64(k, 8) ^ sec64(k, 16)) - s;
    return rrmxmx(in ^ bitflip, len);
  }
  if (len > 0) {
    uint32_t combined = (uint32_t)p[0] << 16 | (uint32_t)p[len >> 1] << 24 | (uint32_t)p[len - 1] |
                        (uint32_t)len << 8;
    uint64_t bitflip = ((uint64_t)(uint32_t)k[0] ^ (k[0] >> 32)) + seed;
    return xxh64_avalanche((uint64_t)combined ^ bitflip);
  }
  return xxh64_avalanche(seed ^ (sec64(k, 56) ^ sec64(k, 64)));
}

static uint64_t len_17to128(const uint8_t *p, size_t len, uint64_t seed) {
  const uint64_t *k = tabcl__xxh3_secret;
  uint64_t acc = (uint64_t)len * TABCL_XXH_PRIME64_1;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        acc += mix16(p + 48, k, 96, seed);
        acc += mix16(p + len - 64, k, 112, seed);
      }
      acc += mix16(p + 32, k, 64, seed);
      acc += mix16(p + len - 48, k, 80, seed);
    }
    acc += mix16(p + 16, k, 32, seed);
    acc += mix16(p + len - 32, k, 48, seed);
  }
  acc += mix16(p, k, 0, seed);
  acc += mix16(p + len - 16, k, 16, seed);
  return xxh3_avalanche(acc);
}

static uint64_t len_129to240(const uint8_t *p, size_t len, uint64_t seed) {
  const uint64_t *k = tabcl__xxh3_secret;
  uint64_t acc = (uint64_t)len * TABCL_XXH_PRIME64_1;
  unsigned rounds = (unsigned)(len / 16);
  for (unsigned i = 0; i < 8; i++) acc += mix16(p + 16 * i, k, 16 * i, seed);
  acc = xxh3_avalanche(acc);
  for (unsigned i = 8; i < rounds; i++) acc += mix16(p + 16 * i, k, 16 * (i - 8) + 3, seed);
  acc += mix16(p + len - 16, k, 119, seed);
  return xxh3_avalanche(acc);
}

/* The 64 bytes at p as eight little-endian words. */
static void rd64x8(uint64_t v[8], const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(v, p, 64);
#else
  for (int i = 0; i < 8; i++) v[i] = rd64(p + 8 * i);
#endif
}

/* One stripe against its eight secret words k. Written as two plain loops
   over the lanes so the compiler can keep them in vector registers: the
   long path is the file checksum's (catindex_io.c), which a lane-by-lane
   loop joining the secret at each use held back (bench/RESULTS.md, "Fit on
   the device, fit_cl and load"). */
static void accumulate_stripe(uint64_t acc[8], const uint8_t *p, const uint64_t k[8]) {
  uint64_t v[8];
  rd64x8(v, p);
  for (int i = 0; i < 8; i++) {
    uint64_t key = v[i] ^ k[i];
    acc[i] += (key & 0xFFFFFFFFu) * (key >> 32);
  }
  for (int i = 0; i < 8; i++) acc[i] += v[i ^ 1];
}

_Static_assert(sizeof ((tabcl__xxh3_state *)0)->key == (TABCL_XXH_STRIPES + 1) * 64,
               "a key row per stripe of a block and one for the last stripe");

void tabcl__xxh3_keys(tabcl__xxh3_state *st, uint64_t seed) {
  st->seed = seed;
  /* The seed enters the long path only through a derived secret: each
     16-byte pair of the default secret gets +seed on its first word and
     -seed on its second. */
  for (int i = 0; i < 24; i++)
    st->sec[i] = tabcl__xxh3_secret[i] + ((i & 1) ? (uint64_t)0 - seed : seed);
  /* each stripe's secret words (stripe s reads from byte 8 s), and the
     last stripe's (from byte 121), joined once */
  for (unsigned s = 0; s < TABCL_XXH_STRIPES; s++)
    for (unsigned i = 0; i < 8; i++) st->key[s][i] = sec64(st->sec, 8 * s + 8 * i);
  for (unsigned i = 0; i < 8; i++) st->key[TABCL_XXH_STRIPES][i] = sec64(st->sec, 121 + 8 * i);
}

/* The long path's eight lanes over every stripe of the label, scrambled
   after each full block; lane by lane (the compiler may vectorize it). */
static void long_lanes_plain(uint64_t acc[8], const uint8_t *p, size_t len,
                             const tabcl__xxh3_state *st) {
  const uint64_t(*key)[8] = st->key;
  size_t blocks = (len - 1) / TABCL_XXH_BLOCK;
  for (size_t b = 0; b < blocks; b++) {
    for (unsigned s = 0; s < TABCL_XXH_STRIPES; s++)
      accumulate_stripe(acc, p + b * TABCL_XXH_BLOCK + 64 * s, key[s]);
    for (int i = 0; i < 8; i++) {
      uint64_t a = acc[i];
      a ^= a >> 47;
      a ^= st->sec[16 + i];
      acc[i] = a * TABCL_XXH_PRIME32_1;
    }
  }
  unsigned tail = (unsigned)(((len - 1) - blocks * TABCL_XXH_BLOCK) / 64);
  for (unsigned s = 0; s < tail; s++)
    accumulate_stripe(acc, p + blocks * TABCL_XXH_BLOCK + 64 * s, key[s]);
  accumulate_stripe(acc, p + len - 64, key[TABCL_XXH_STRIPES]);
}

/* The same with AVX2 where the host has it, chosen at run time (the
   library is built for the baseline x86-64). Labels over 240 bytes are
   where the host hash spends its time: the host lookup and fit of long
   labels on a CPU device, the file checksum. The plain loop ran below
   libxxhash (which the library never links), the AVX2 one above it
   (bench/RESULTS.md, "The host hash's AVX2 loop"). */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TABCL_XXH_HAVE_AVX2 1

__attribute__((target("avx2"))) static void long_lanes_avx2(uint64_t acc[8], const uint8_t *p,
                                                              size_t len,
                                                              const tabcl__xxh3_state *st) {
  __m256i a0 = _mm256_loadu_si256((const __m256i *)acc);
  __m256i a1 = _mm256_loadu_si256((const __m256i *)(acc + 4));
  const __m256i prime = _mm256_set1_epi64x(TABCL_XXH_PRIME32_1);
  const __m256i s0 = _mm256_loadu_si256((const __m256i *)(st->sec + 16));
  const __m256i s1 = _mm256_loadu_si256((const __m256i *)(st->sec + 20));
/* one stripe: lane i gains lo32(key) * hi32(key) and the data of lane i ^ 1 */
#define TABCL_XXH_STRIPE_AVX2(q, k)                                                        \
  do {                                                                                     \
    const __m256i d0 = _mm256_loadu_si256((const __m256i *)(q));                           \
    const __m256i d1 = _mm256_loadu_si256((const __m256i *)((q) + 32));                    \
    const __m256i k0 = _mm256_xor_si256(d0, _mm256_loadu_si256((const __m256i *)(k)));     \
    const __m256i k1 = _mm256_xor_si256(d1, _mm256_loadu_si256((const __m256i *)((k) + 4))); \
    a0 = _mm256_add_epi64(a0, _mm256_mul_epu32(k0, _mm256_srli_epi64(k0, 32)));            \
    a1 = _mm256_add_epi64(a1, _mm256_mul_epu32(k1, _mm256_srli_epi64(k1, 32)));            \
    a0 = _mm256_add_epi64(a0, _mm256_shuffle_epi32(d0, _MM_SHUFFLE(1, 0, 3, 2)));          \
    a1 = _mm256_add_epi64(a1, _mm256_shuffle_epi32(d1, _MM_SHUFFLE(1, 0, 3, 2)));          \
  } while (0)
/* a ^= a >> 47; a ^= secret; a *= PRIME32_1 (64 x 32 bits from two 32 x 32) */
#define TABCL_XXH_SCRAMBLE_AVX2(a, s)                                                     \
  do {                                                                                    \
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, _mm256_srli_epi64(a, 47)), s); \
    const __m256i lo = _mm256_mul_epu32(x, prime);                                        \
    const __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), prime);                 \
    a = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));                                  \
  } while (0)
  size_t blocks = (len - 1) / TABCL_XXH_BLOCK;
  for (size_t b = 0; b < blocks; b++) {
    const uint8_t *q = p + b * TABCL_XXH_BLOCK;
    for (unsigned s = 0; s < TABCL_XXH_STRIPES; s++) TABCL_XXH_STRIPE_AVX2(q + 64 * s, st->key[s]);
    TABCL_XXH_SCRAMBLE_AVX2(a0, s0);
    TABCL_XXH_SCRAMBLE_AVX2(a1, s1);
  }
  unsigned tail = (unsigned)(((len - 1) - blocks * TABCL_XXH_BLOCK) / 64);
  for (unsigned s = 0; s < tail; s++)
    TABCL_XXH_STRIPE_AVX2(p + blocks * TABCL_XXH_BLOCK + 64 * s, st->key[s]);
  TABCL_XXH_STRIPE_AVX2(p + len - 64, st->key[TABCL_XXH_STRIPES]);
#undef TABCL_XXH_STRIPE_AVX2
#undef TABCL_XXH_SCRAMBLE_AVX2
  _mm256_storeu_si256((__m256i *)acc, a0);
  _mm256_storeu_si256((__m256i *)(acc + 4), a1);
}
#endif

_Atomic int tabcl__xxh3_plain_only;

int tabcl__xxh3_simd(void) {
#ifdef TABCL_XXH_HAVE_AVX2
  return !atomic_load_explicit(&tabcl__xxh3_plain_only, memory_order_relaxed) &&
         __builtin_cpu_supports("avx2");
#else
  return 0;
#endif
}

static uint64_t hash_long(const uint8_t *p, size_t len, const tabcl__xxh3_state *st) {
  const uint64_t *sec = st->sec;
  uint64_t acc[8] = {TABCL_XXH_PRIME32_3, TABCL_XXH_PRIME64_1, TABCL_XXH_PRIME64_2,
                     TABCL_XXH_PRIME64_3, TABCL_XXH_PRIME64_4, TABCL_XXH_PRIME32_2,
                     TABCL_XXH_PRIME64_5, TABCL_XXH_PRIME32_1};
#ifdef TABCL_XXH_HAVE_AVX2
  if (tabcl__xxh3_simd())
    long_lanes_avx2(acc, p, len, st);
  else
#endif
    long_lanes_plain(acc, p, len, st);
  uint64_t h = (uint64_t)len * TABCL_XXH_PRIME64_1;
  for (unsigned i = 0; i < 4; i++)
    h += mul128_fold64(acc[2 * i] ^ sec64(sec, 11 + 16 * i), acc[2 * i + 1] ^ sec64(sec, 19 + 16 * i));
  return xxh3_avalanche(h);
}

uint64_t tabcl__xxh3_64_keyed(const tabcl__xxh3_state *st, const void *data, size_t len) {
  static const uint8_t none[1] = {0};
  const uint8_t *p = data ? (const uint8_t *)data : none;
  if (len <= 16) return len_0to16(p, len, st->seed);
  if (len <= 128) return len_17to128(p, len, st->seed);
  if (len <= 240) return len_129to240(p, len, st->seed);
  return hash_long(p, len, st);
}

uint64_t tabcl__xxh3_64(const void *data, size_t len, uint64_t xxh3_seed) {
  static const uint8_t none[1] = {0};
  const uint8_t *p = data ? (const uint8_t *)data : none;
  if (len <= 16) return len_0to16(p, len, xxh3_seed);
  if (len <= 128) return len_17to128(p, len, xxh3_seed);
  if (len <= 240) return len_129to240(p, len, xxh3_seed);
  tabcl__xxh3_state st;
  tabcl__xxh3_keys(&st, xxh3_seed);
  return hash_long(p, len, &st);
}
