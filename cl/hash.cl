// XXH3-64 of every label of a string column (the published algorithm,
// checked bit for bit against libxxhash by the tests).
//
// On a CPU (the hash.serial tuning) one kernel does it all: hash_serial,
// one work-item a run of labels, built with -DHASH_SERIAL_ONLY=1 so that
// the GPU kernels below are not compiled at all; hash_serial_part takes a
// label too long for one work-item under a device's loop limit over
// several launches, so that build serves every column.
//
// On a GPU three stages share the work so that no label keeps the device
// waiting:
//   hash_short  one work-item per label of <= 240 bytes (XXH3's short
//               paths); hash_short_list, its twin for columns with longer
//               labels, lists those for the other two.
//   hash_team   four lanes per label of 241 .. group_min - 1 bytes; lane p
//               owns accumulators 2p and 2p+1 and reads 16 bytes of each
//               64-byte stripe, so a team reads whole stripes.
//   hash_big    one work-group a label of group_min bytes or more, its
//               blocks side by side and the scrambles in local memory.
// A column of longer labels skips the listing pass: a team takes every
// label (the hash.mid tuning picks the kernel; its rule and measurements
// are in src/runtime/tune.c and bench/history/2026-11-to-12.md, "Tuning:
// hash kernels"):
//   hash_team_all_flat  four lanes a label (17..240-byte labels split over
//                       them too), tails loaded without branches;
//   hash_pair_all       two lanes a label, four accumulators each, every
//                       load of a run of stripes issued before any
//                       arithmetic.
// Kernels that lost every measurement (a four-lane team_all with branchy
// tails, and a two-launch block-and-chain split of huge labels) are gone.
//
// Labels start at any byte: the data buffer is padded by the upload so two
// aligned words can always be read and joined (no per-byte loads).

#define XXH_P32_1 0x9E3779B1UL
#define XXH_P32_2 0x85EBCA77UL
#define XXH_P32_3 0xC2B2AE3DUL
#define XXH_P64_1 0x9E3779B185EBCA87UL
#define XXH_P64_2 0xC2B2AE3D27D4EB4FUL
#define XXH_P64_3 0x165667B19E3779F9UL
#define XXH_P64_4 0x85EBCA77C2B2AE63UL
#define XXH_P64_5 0x27D4EB2F165667C5UL
#define XXH_MX1 0x165667919E3779F9UL
#define XXH_MX2 0x9FB21C651E98DF25UL
#define XXH_SHORT_MAX 240
#define XXH_BLOCK 1024

// The default 192-byte secret as little-endian words.
__constant ulong xxh_secret[24] = {
    0xbe4ba423396cfeb8UL, 0x1cad21f72c81017cUL, 0xdb979083e96dd4deUL,
    0x1f67b3b7a4a44072UL, 0x78e5c0cc4ee679cbUL, 0x2172ffcc7dd05a82UL,
    0x8e2443f7744608b8UL, 0x4c263a81e69035e0UL, 0xcb00c391bb52283cUL,
    0xa32e531b8b65d088UL, 0x4ef90da297486471UL, 0xd8acdea946ef1938UL,
    0x3f349ce33f76faa8UL, 0x1d4f0bc7c7bbdcf9UL, 0x3159b4cd4be0518aUL,
    0x647378d9c97e9fc8UL, 0xc3ebd33483acc5eaUL, 0xeb6313faffa081c5UL,
    0x49daf0b751dd0d17UL, 0x9e68d429265516d3UL, 0xfca1477d58be162bUL,
    0xce31d07ad1b8f88fUL, 0x280416958f3acb45UL, 0x7e404bbbcafbd7afUL,
};

// The accumulators' starting values. (A table rather than a chain of
// conditionals: oclgrind 21.10 evaluated that chain wrongly in some lanes.)
__constant ulong xxh_init[8] = {XXH_P32_3, XXH_P64_1, XXH_P64_2, XXH_P64_3,
                                XXH_P64_4, XXH_P32_2, XXH_P64_5, XXH_P32_1};

// Bytes [8q + r, 8q + r + 8) from the aligned words a = w[q], b = w[q + 1],
// r in 0..7 given as bits (0..56). The double shift keeps r == 0 exact.
inline ulong xxh_join(ulong a, ulong b, uint rbits) {
  return (a >> rbits) | ((b << 1) << (63 - rbits));
}

#ifdef HASH_SERIAL_ONLY
// The CPU build reads its labels as bytes (xxh_data), from any address: a
// device lookup on a CPU reads the caller's query buffers in place, which
// start anywhere and end at the last label's last byte, so this build
// reads no byte outside a label. It reads 8 bytes
// at any byte through a pointer whose type says alignment 1: a CPU does
// that in one instruction (a compiler for a target that cannot emits byte
// loads, still correct), where the join below costs two loads and three
// shifts a word (a 64-byte label took three times libxxhash's time on one
// core of PoCL with the join).
typedef uchar xxh_data;
inline ulong xxh_ld64(__global const xxh_data *w, ulong pos) {
  typedef ulong __attribute__((aligned(1))) xxh_ulong_u;
  return *(__global const xxh_ulong_u *)(w + pos);
}
inline uint xxh_ld32(__global const xxh_data *w, ulong pos) {
  typedef uint __attribute__((aligned(1))) xxh_uint_u;
  return *(__global const xxh_uint_u *)(w + pos);
}
#else
// The GPU kernels read whole aligned words of a copy padded past its end.
typedef ulong xxh_data;
inline ulong xxh_ld64(__global const ulong *w, ulong pos) {
  ulong q = pos >> 3;
  return xxh_join(w[q], w[q + 1], (uint)(pos & 7) * 8);
}
#endif

// The default secret read at any byte offset (the short paths use it so).
inline ulong xxh_ksec(uint off) {
  return xxh_join(xxh_secret[off >> 3], xxh_secret[(off >> 3) + 1], (off & 7) * 8);
}

// The 128-bit product of a and b, its halves folded. In the CPU build,
// where the compiler's target has a 128-bit integer type (clang defines
// __SIZEOF_INT128__ for x86-64, PoCL's CPU target, and not for spir), the
// product is one multiply instruction; PoCL's mul_hi of 64-bit operands is
// four 32-bit products, and the 17..128-byte path does two folds in every
// 16 bytes. (Not in the GPU kernels: PoCL's work-group vectorizer took
// minutes over them with 128-bit products.)
#if defined(HASH_SERIAL_ONLY) && defined(__SIZEOF_INT128__)
inline ulong xxh_fold(ulong a, ulong b) {
  const unsigned __int128 p = (unsigned __int128)a * b;
  return (ulong)p ^ (ulong)(p >> 64);
}
#else
inline ulong xxh_fold(ulong a, ulong b) { return (a * b) ^ mul_hi(a, b); }
#endif

inline ulong xxh64_avalanche(ulong h) {
  h ^= h >> 33;
  h *= XXH_P64_2;
  h ^= h >> 29;
  h *= XXH_P64_3;
  return h ^ (h >> 32);
}

inline ulong xxh3_avalanche(ulong h) {
  h ^= h >> 37;
  h *= XXH_MX1;
  return h ^ (h >> 32);
}

inline ulong xxh_rrmxmx(ulong h, ulong len) {
  h ^= rotate(h, (ulong)49) ^ rotate(h, (ulong)24);
  h *= XXH_MX2;
  h ^= (h >> 35) + len;
  h *= XXH_MX2;
  return h ^ (h >> 28);
}

inline ulong xxh_mix16(__global const xxh_data *w, ulong pos, uint soff, ulong seed) {
  ulong lo = xxh_ld64(w, pos), hi = xxh_ld64(w, pos + 8);
  return xxh_fold(lo ^ (xxh_ksec(soff) + seed), hi ^ (xxh_ksec(soff + 8) - seed));
}

inline uint xxh_swap32(uint x) {
  return (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24);
}

inline ulong xxh_swap64(ulong x) {
  return ((ulong)xxh_swap32((uint)x) << 32) | (ulong)xxh_swap32((uint)(x >> 32));
}

// The CPU build inlines the short paths into hash_serial's label loop: as
// a call a label they cost PoCL a third of the time of 8-byte labels.
#ifdef HASH_SERIAL_ONLY
#define XXH_SHORT_FN __attribute__((always_inline)) inline ulong
#else
#define XXH_SHORT_FN ulong
#endif

// XXH3-64 of a label of at most 240 bytes starting at byte `pos`.
XXH_SHORT_FN xxh_short(__global const xxh_data *w, ulong pos, uint len, ulong seed) {
  if (len <= 16) {
    if (len > 8) {
      ulong lo = xxh_ld64(w, pos) ^ ((xxh_secret[3] ^ xxh_secret[4]) + seed);
      ulong hi = xxh_ld64(w, pos + len - 8) ^ ((xxh_secret[5] ^ xxh_secret[6]) - seed);
      return xxh3_avalanche((ulong)len + xxh_swap64(lo) + hi + xxh_fold(lo, hi));
    }
    if (len == 0) return xxh64_avalanche(seed ^ xxh_secret[7] ^ xxh_secret[8]);
#ifdef HASH_SERIAL_ONLY
    // The first and last 4 bytes (they overlap below 8), or single bytes:
    // nothing past the label's end.
    if (len >= 4) {
      ulong s = seed ^ ((ulong)xxh_swap32((uint)seed) << 32);
      ulong in = (ulong)xxh_ld32(w, pos + len - 4) + ((ulong)xxh_ld32(w, pos) << 32);
      return xxh_rrmxmx(in ^ ((xxh_secret[1] ^ xxh_secret[2]) - s), len);
    }
    uint c1 = w[pos], c2 = w[pos + (len >> 1)], c3 = w[pos + len - 1];
#else
    // A label of 1..8 bytes lies inside the 8 bytes from its start (the
    // padded copy has them).
    ulong v = xxh_ld64(w, pos);
    if (len >= 4) {
      ulong s = seed ^ ((ulong)xxh_swap32((uint)seed) << 32);
      ulong in = (ulong)(uint)(v >> ((len - 4) * 8)) + ((ulong)(uint)v << 32);
      return xxh_rrmxmx(in ^ ((xxh_secret[1] ^ xxh_secret[2]) - s), len);
    }
    uint c1 = (uint)v & 0xFFu, c2 = (uint)(v >> ((len >> 1) * 8)) & 0xFFu;
    uint c3 = (uint)(v >> ((len - 1) * 8)) & 0xFFu;
#endif
    uint combined = (c1 << 16) | (c2 << 24) | c3 | (len << 8);
    ulong bitflip = ((xxh_secret[0] & 0xFFFFFFFFUL) ^ (xxh_secret[0] >> 32)) + seed;
    return xxh64_avalanche((ulong)combined ^ bitflip);
  }
  ulong acc = (ulong)len * XXH_P64_1;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          acc += xxh_mix16(w, pos + 48, 96, seed);
          acc += xxh_mix16(w, pos + len - 64, 112, seed);
        }
        acc += xxh_mix16(w, pos + 32, 64, seed);
        acc += xxh_mix16(w, pos + len - 48, 80, seed);
      }
      acc += xxh_mix16(w, pos + 16, 32, seed);
      acc += xxh_mix16(w, pos + len - 32, 48, seed);
    }
    acc += xxh_mix16(w, pos, 0, seed);
    acc += xxh_mix16(w, pos + len - 16, 16, seed);
    return xxh3_avalanche(acc);
  }
  for (uint i = 0; i < 8; i++) acc += xxh_mix16(w, pos + 16 * i, 16 * i, seed);
  acc = xxh3_avalanche(acc);
  uint rounds = len / 16;
  for (uint i = 8; i < rounds; i++) acc += xxh_mix16(w, pos + 16 * i, 16 * (i - 8) + 3, seed);
  acc += xxh_mix16(w, pos + len - 16, 119, seed);
  return xxh3_avalanche(acc);
}

// Label i's place in the data. Offsets from a device-resident caller are
// unchecked: a label outside the data (or ending before it starts) is
// hashed as empty rather than read out of bounds, and never reaches the
// long-label kernels.
inline ulong xxh_span(__global const long *offsets, ulong i, ulong nbytes, ulong *len) {
  ulong pos = (ulong)offsets[i], end = (ulong)offsets[i + 1];
  if (end < pos || end > nbytes) pos = end = 0;
  *len = end - pos;
  return pos;
}

// Shared by the CPU plan and the GPU kernels: the scramble between blocks.
inline ulong xxh_scramble(ulong a, ulong key) {
  a ^= a >> 47;
  a ^= key;
  return a * XXH_P32_1;
}

// ---- The CPU plan: one work-item, many labels -------------------------
//
// On a CPU a work-item is a loop iteration of one thread: teams of lanes,
// local memory and barriers cost there and buy nothing. hash_serial gives
// each work-item `run` consecutive labels and hashes each whole, the short
// paths as above and the long one with all eight accumulators in the
// work-item, the derived secret in private memory.

// One 64-byte stripe as a vector of eight words, from any byte: straight
// (unaligned) loads in the CPU build, else each word joined from two.
inline ulong8 xxh_ld512(__global const xxh_data *w, ulong pos) {
#ifdef HASH_SERIAL_ONLY
  typedef ulong8 __attribute__((aligned(1))) xxh_ulong8_u;
  return *(__global const xxh_ulong8_u *)(w + pos);
#else
  return (ulong8)(xxh_ld64(w, pos), xxh_ld64(w, pos + 8), xxh_ld64(w, pos + 16),
                  xxh_ld64(w, pos + 24), xxh_ld64(w, pos + 32), xxh_ld64(w, pos + 40),
                  xxh_ld64(w, pos + 48), xxh_ld64(w, pos + 56));
#endif
}

// The accumulators through one stripe v keyed by key: a stripe is one
// ulong8 load and its key one more, the accumulators one ulong8, so a CPU
// compiler keeps each in a vector register (one 512-bit register with
// AVX-512) rather than leaving the lane swap and the 32-bit products of a
// scalar loop to its auto-vectorizer.
inline ulong8 xxh_accumulate(ulong8 acc, ulong8 v, ulong8 key) {
  const ulong8 d = v ^ key;
  return acc + v.s10325476 + (d & (ulong8)(0xFFFFFFFFUL)) * (d >> 32);
}

// What hash_serial derives from the seed once for all its labels: the
// secret words, the last stripe's key and the eight keys of the final merge
// (both at byte offsets that are not whole words, so each is joined once
// here rather than once a label).
typedef struct xxh_keys {
  ulong sec[24];
  ulong8 last, merge;
} xxh_keys;

// The derived secret (see xxh_derive) read at any byte offset.
inline ulong xxh_psec(const ulong *sec, uint off) {
  return xxh_join(sec[off >> 3], sec[(off >> 3) + 1], (off & 7) * 8);
}

inline void xxh_keys_init(xxh_keys *k, ulong seed) {
  for (uint i = 0; i < 24; i++) k->sec[i] = xxh_secret[i] + ((i & 1) ? (ulong)0 - seed : seed);
  ulong l[8], m[8];
  for (uint i = 0; i < 8; i++) {
    l[i] = xxh_psec(k->sec, 121 + 8 * i);
    m[i] = xxh_psec(k->sec, (i & 1 ? 19 : 11) + 16 * (i >> 1));
  }
  k->last = vload8(0, l);
  k->merge = vload8(0, m);
}

// Blocks [from, to) of a label of more than 240 bytes into acc.
inline ulong8 xxh_serial_blocks(__global const xxh_data *w, const xxh_keys *k, ulong pos,
                                ulong8 acc, ulong from, ulong to) {
  const ulong8 scr = vload8(0, k->sec + 16);
  for (ulong b = from; b < to; b++) {
    const ulong at = pos + b * XXH_BLOCK;
    for (uint s = 0; s < 16; s++) acc = xxh_accumulate(acc, xxh_ld512(w, at + 64 * s), vload8(0, k->sec + s));
    acc = (acc ^ (acc >> 47) ^ scr) * (ulong8)(XXH_P32_1);
  }
  return acc;
}

// The hash of such a label from acc after its whole blocks: the stripes
// after them, the last stripe and the merge.
inline ulong xxh_serial_finish(__global const xxh_data *w, const xxh_keys *k, ulong pos, ulong len,
                               ulong8 acc) {
  const ulong blocks = (len - 1) / XXH_BLOCK;
  const ulong at = pos + blocks * XXH_BLOCK;
  const uint tail = (uint)(((len - 1) - blocks * XXH_BLOCK) / 64);
  for (uint s = 0; s < tail; s++) acc = xxh_accumulate(acc, xxh_ld512(w, at + 64 * s), vload8(0, k->sec + s));
  acc = xxh_accumulate(acc, xxh_ld512(w, pos + len - 64), k->last);
  const ulong8 x = acc ^ k->merge;
  return xxh3_avalanche(len * XXH_P64_1 + xxh_fold(x.s0, x.s1) + xxh_fold(x.s2, x.s3) +
                        xxh_fold(x.s4, x.s5) + xxh_fold(x.s6, x.s7));
}

__kernel void hash_serial(__global const xxh_data *w, __global const long *offsets, ulong base,
                          uint count, ulong seed, ulong mask, __global ulong *out, ulong out_off,
                          ulong nbytes, uint run) {
  uint first = (uint)get_global_id(0) * run;
  if (first >= count) return;
  uint end = count - first < run ? count : first + run;
  xxh_keys keys;
  xxh_keys_init(&keys, seed);
  for (uint i = first; i < end; i++) {
    ulong len;
    ulong pos = xxh_span(offsets, base + i, nbytes, &len);
    ulong h = len <= XXH_SHORT_MAX
                  ? xxh_short(w, pos, (uint)len, seed)
                  : xxh_serial_finish(w, &keys, pos, len,
                                      xxh_serial_blocks(w, &keys, pos, vload8(0, xxh_init), 0,
                                                        (len - 1) / XXH_BLOCK));
    out[out_off + base + i] = h & mask;
  }
}

// hash_serial for labels too long for one work-item under a device's loop
// limit: a work-item a label, its blocks [b0, b0 + nb) a launch, the
// accumulators kept in acc (eight words a label of the launch) between
// launches; the launch that reaches a label's last block writes its hash.
__kernel void hash_serial_part(__global const xxh_data *w, __global const long *offsets,
                               ulong base, uint count, ulong seed, ulong mask,
                               __global ulong *out, ulong out_off, ulong nbytes,
                               __global ulong *acc, ulong b0, ulong nb) {
  const uint i = (uint)get_global_id(0);
  if (i >= count) return;
  ulong len;
  const ulong pos = xxh_span(offsets, base + i, nbytes, &len);
  if (len <= XXH_SHORT_MAX) {
    if (b0 == 0) out[out_off + base + i] = xxh_short(w, pos, (uint)len, seed) & mask;
    return;
  }
  const ulong blocks = (len - 1) / XXH_BLOCK;
  if (b0 > 0 && blocks <= b0) return;   // an earlier launch finished it
  xxh_keys keys;
  xxh_keys_init(&keys, seed);
  const ulong to = min(blocks, b0 + nb);
  const ulong8 a = xxh_serial_blocks(w, &keys, pos, b0 == 0 ? vload8(0, xxh_init) : vload8(i, acc),
                                     b0, to);
  if (to < blocks) vstore8(a, i, acc);
  else out[out_off + base + i] = xxh_serial_finish(w, &keys, pos, len, a) & mask;
}


// ---- The GPU kernels (every build but the CPU plan's) ------------------
#ifndef HASH_SERIAL_ONLY

// A column whose labels are all <= 240 bytes: no lists, no barriers.
__kernel void hash_short(__global const ulong *w, __global const long *offsets, ulong base,
                         uint count, ulong seed, ulong mask, __global ulong *out, ulong out_off,
                         ulong nbytes) {
  uint i = (uint)get_global_id(0);
  if (i >= count) return;
  ulong len;
  ulong pos = xxh_span(offsets, base + i, nbytes, &len);
  // A caller that understated max_label still gets no read outside the label.
  out[out_off + base + i] = xxh_short(w, pos, (uint)min(len, (ulong)XXH_SHORT_MAX), seed) & mask;
}

// The same, for a column with longer labels: those are listed for
// hash_team (mid_list) and hash_units/hash_chain (huge_list) instead.
__kernel void hash_short_list(__global const ulong *w, __global const long *offsets, ulong base,
                              uint count, ulong seed, ulong mask, __global ulong *out,
                              ulong out_off, ulong nbytes, __global uint *mid_list,
                              __global uint *huge_list, __global uint *counts, ulong group_min) {
  __local uint local_n[2], local_base[2];
  uint lid = (uint)get_local_id(0);
  uint i = (uint)get_global_id(0);
  if (lid == 0) local_n[0] = local_n[1] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  int which = -1;
  uint slot = 0;
  if (i < count) {
    ulong len;
    ulong pos = xxh_span(offsets, base + i, nbytes, &len);
    if (len <= XXH_SHORT_MAX) {
      out[out_off + base + i] = xxh_short(w, pos, (uint)len, seed) & mask;
    } else {
      which = len >= group_min ? 1 : 0;
      slot = atomic_inc(&local_n[which]);
    }
  }
  // One global atomic per work-group and list keeps long labels cheap to
  // gather even when every label is long.
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < 2 && local_n[lid] > 0) local_base[lid] = atomic_add(&counts[lid], local_n[lid]);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (which >= 0) (which ? huge_list : mid_list)[local_base[which] + slot] = i;
}

// The secret the long path uses: each 16-byte pair of the default one
// gets +seed on its first word and -seed on its second.
inline void xxh_derive(__local ulong *sec, ulong seed) {
  for (uint i = (uint)get_local_id(0); i < 24; i += (uint)get_local_size(0))
    sec[i] = xxh_secret[i] + ((i & 1) ? (ulong)0 - seed : seed);
}

inline ulong xxh_lsec(__local const ulong *sec, uint off) {
  return xxh_join(sec[off >> 3], sec[(off >> 3) + 1], (off & 7) * 8);
}

// Lane p's share of one stripe: data words v0, v1 (words 2p and 2p+1),
// keyed by k0, k1. Each lane adds its own pair's data words into the other
// accumulator of the pair, so no lane needs another's word. The products
// are written 32x32 -> 64 so NVIDIA emits one wide multiply each.
inline void xxh_acc2(ulong v0, ulong v1, ulong k0, ulong k1, ulong *a0, ulong *a1) {
  ulong d0 = v0 ^ k0, d1 = v1 ^ k1;
  *a0 += v1 + (ulong)(uint)d0 * (ulong)(uint)(d0 >> 32);
  *a1 += v0 + (ulong)(uint)d1 * (ulong)(uint)(d1 >> 32);
}

// Lane p's share of the stripe at byte `pos` (any alignment).
inline void xxh_stripe(__global const ulong *w, ulong pos, uint p, ulong k0, ulong k1,
                       ulong *a0, ulong *a1) {
  ulong q = (pos >> 3) + 2 * p;
  uint r = (uint)(pos & 7) * 8;
  ulong x = w[q], y = w[q + 1], z = w[q + 2];
  xxh_acc2(xxh_join(x, y, r), xxh_join(y, z, r), k0, k1, a0, a1);
}

// Lane p's sums over `stripes` (<= 16) stripes from byte `pos`, keyed from
// the start of the secret (a block, or the partial last one). Aligned
// stripes (every label of a column of whole-word lengths) need two loads
// each and no joins; the loop is unrolled so many loads are in flight.
void xxh_stripes(__global const ulong *w, __local const ulong *sec, ulong pos, uint stripes,
                 uint p, ulong *a0, ulong *a1) {
  if ((pos & 7) == 0) {
    __global const ulong *b = w + (pos >> 3) + 2 * p;
#pragma unroll 8
    for (uint s = 0; s < stripes; s++)
      xxh_acc2(b[8 * s], b[8 * s + 1], sec[s + 2 * p], sec[s + 2 * p + 1], a0, a1);
    return;
  }
#pragma unroll 8
  for (uint s = 0; s < stripes; s++)
    xxh_stripe(w, pos + 64 * s, p, sec[s + 2 * p], sec[s + 2 * p + 1], a0, a1);
}

void xxh_block(__global const ulong *w, __local const ulong *sec, ulong pos, uint p, ulong *a0,
               ulong *a1) {
  xxh_stripes(w, sec, pos, 16, p, a0, a1);
}

// Lane p's part of the final merge of accumulators 2p and 2p+1.
inline ulong xxh_merge_part(__local const ulong *sec, uint p, ulong a0, ulong a1) {
  return xxh_fold(a0 ^ xxh_lsec(sec, 11 + 16 * p), a1 ^ xxh_lsec(sec, 19 + 16 * p));
}

// Lane p's share of a label of more than 240 bytes: its two accumulators
// through every block, the tail and the last stripe, then its part of the
// merge (the four lanes' parts are summed by the caller).
ulong xxh_team_part(__global const ulong *w, __local const ulong *sec, ulong pos, ulong len,
                    uint p) {
  ulong a0 = xxh_init[2 * p], a1 = xxh_init[2 * p + 1];
  ulong blocks = (len - 1) / XXH_BLOCK;
  for (ulong b = 0; b < blocks; b++) {
    xxh_block(w, sec, pos + b * XXH_BLOCK, p, &a0, &a1);
    a0 = xxh_scramble(a0, sec[16 + 2 * p]);
    a1 = xxh_scramble(a1, sec[17 + 2 * p]);
  }
  uint tail = (uint)(((len - 1) - blocks * XXH_BLOCK) / 64);
  xxh_stripes(w, sec, pos + blocks * XXH_BLOCK, tail, p, &a0, &a1);
  xxh_stripe(w, pos + len - 64, p, xxh_lsec(sec, 121 + 16 * p), xxh_lsec(sec, 129 + 16 * p),
             &a0, &a1);
  return xxh_merge_part(sec, p, a0, a1);
}

// Labels of 241 bytes up to group_min: four lanes a label. scratch holds
// one word per work-item and then the 24-word secret; the work-group size
// is a multiple of 4.
__kernel void hash_team(__global const ulong *w, __global const long *offsets, ulong base,
                        ulong seed, ulong mask, __global ulong *out, ulong out_off,
                        __global const uint *list, __global const uint *counts,
                        __local ulong *scratch) {
  // The derived secret follows the scratch words in the one local argument.
  __local ulong *sec = scratch + get_local_size(0);
  xxh_derive(sec, seed);
  barrier(CLK_LOCAL_MEM_FENCE);
  uint lid = (uint)get_local_id(0), p = lid & 3;
  uint teams = (uint)get_local_size(0) / 4;
  uint n = counts[0];
  // The trip count depends only on the group, so every work-item reaches
  // the barriers below.
  for (uint t0 = (uint)get_group_id(0) * teams; t0 < n; t0 += (uint)get_num_groups(0) * teams) {
    uint t = t0 + lid / 4;
    uint idx = 0;
    ulong len = 0;
    ulong part = 0;
    if (t < n) {
      idx = list[t];
      ulong pos = (ulong)offsets[base + idx];
      len = (ulong)offsets[base + idx + 1] - pos;
      part = xxh_team_part(w, sec, pos, len, p);
    }
    scratch[lid] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < n && p == 0) {
      ulong h = len * XXH_P64_1 + scratch[lid] + scratch[lid + 1] + scratch[lid + 2] + scratch[lid + 3];
      out[out_off + base + idx] = xxh3_avalanche(h) & mask;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// Lane p's share of a label of 17..240 bytes (XXH3's mid paths), so a
// team reads each 16-byte chunk once, side by side. Up to 128 bytes lane
// p takes chunk pair p (from the front and from the back); above, chunks
// 2p and 2p+1 of the first eight go to *a and every fourth later chunk
// (and, for lane 0, the last 16 bytes) to *b, which is added after the
// first eight's avalanche.
void xxh_mid_parts(__global const ulong *w, ulong pos, uint len, uint p, ulong seed, ulong *a,
                   ulong *b) {
  if (len <= 128) {
    *a = len > 32 * p ? xxh_mix16(w, pos + 16 * p, 32 * p, seed) +
                            xxh_mix16(w, pos + len - 16 * (p + 1), 32 * p + 16, seed)
                      : 0;
    *b = 0;
    return;
  }
  *a = xxh_mix16(w, pos + 32 * p, 32 * p, seed) + xxh_mix16(w, pos + 32 * p + 16, 32 * p + 16, seed);
  ulong x = 0;
  uint rounds = len / 16;
  for (uint i = 8 + p; i < rounds; i += 4) x += xxh_mix16(w, pos + 16 * i, 16 * (i - 8) + 3, seed);
  if (p == 0) x += xxh_mix16(w, pos + len - 16, 119, seed);
  *b = x;
}

// A column of mostly longer labels (an average over 48 bytes): a team
// takes every label in turn, with no listing pass over the offsets first.
// Labels of up to 16 bytes are hashed by the team's first lane, 17 and up
// by the four lanes together; a label of group_min bytes or more is
// listed for hash_units/hash_chain (huge_list) when list_huge is set, and
// left to them otherwise. scratch holds two words per
// work-item and then the 24-word secret.
ulong xxh_team_part_flat(__global const ulong *w, __local const ulong *sec, ulong pos, ulong len,
                        uint p);

inline void team_all(__global const ulong *w, __global const long *offsets, ulong base,
                     uint count, ulong seed, ulong mask, __global ulong *out, ulong out_off,
                     ulong nbytes, __global uint *huge_list, __global uint *counts,
                     ulong group_min, uint list_huge, __local ulong *scratch) {
  __local ulong *sec = scratch + 2 * get_local_size(0);
  xxh_derive(sec, seed);
  barrier(CLK_LOCAL_MEM_FENCE);
  uint lid = (uint)get_local_id(0), p = lid & 3;
  uint teams = (uint)get_local_size(0) / 4;
  for (uint t0 = (uint)get_group_id(0) * teams; t0 < count;
       t0 += (uint)get_num_groups(0) * teams) {
    uint t = t0 + lid / 4;
    ulong len = 0, a = 0, b = 0;
    int shared = 0;   // the four lanes' parts make the hash
    if (t < count) {
      ulong pos = xxh_span(offsets, base + t, nbytes, &len);
      if (len <= 16) {
        if (p == 0) out[out_off + base + t] = xxh_short(w, pos, (uint)len, seed) & mask;
      } else if (len <= XXH_SHORT_MAX) {
        shared = 1;
        xxh_mid_parts(w, pos, (uint)len, p, seed, &a, &b);
      } else if (len >= group_min) {
        // At most one label in group_min bytes: a plain atomic is cheap.
        // (Unless the block kernels take every label themselves.)
        if (p == 0 && list_huge) huge_list[atomic_add(&counts[1], 1u)] = t;
      } else {
        shared = 1;
        a = xxh_team_part_flat(w, sec, pos, len, p);
      }
    }
    scratch[2 * lid] = a;
    scratch[2 * lid + 1] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (shared && p == 0) {
      ulong sa = len * XXH_P64_1 + scratch[2 * lid] + scratch[2 * lid + 2] + scratch[2 * lid + 4] +
                 scratch[2 * lid + 6];
      ulong sb = scratch[2 * lid + 1] + scratch[2 * lid + 3] + scratch[2 * lid + 5] + scratch[2 * lid + 7];
      // 129..240 bytes: the first eight chunks are avalanched on their own.
      ulong h = len > 128 && len <= XXH_SHORT_MAX ? xxh3_avalanche(sa) + sb : sa;
      out[out_off + base + t] = xxh3_avalanche(h) & mask;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// hash_team_all whose long labels' tails load without branches
// (xxh_team_part_flat, below with hash_big's helpers).
__kernel void hash_team_all_flat(__global const ulong *w, __global const long *offsets,
                                 ulong base, uint count, ulong seed, ulong mask,
                                 __global ulong *out, ulong out_off, ulong nbytes,
                                 __global uint *huge_list, __global uint *counts,
                                 ulong group_min, uint list_huge, __local ulong *scratch) {
  team_all(w, offsets, base, count, seed, mask, out, out_off, nbytes, huge_list, counts,
           group_min, list_huge, scratch);
}

// ---- Branch-free loads (hash_big, hash_team_all_flat) ------------------
//
// Lane j of an octet owns accumulator j alone: for every stripe it reads
// the 16-byte pair of words j & ~1 and j | 1 (it needs its partner's word
// too, XXH3 adds it into accumulator j), so the octet reads a stripe's 64
// bytes as four 16-byte pieces, each fetched by two adjacent lanes, and a
// warp reads four stripes side by side (hash_big). hash_team_all_flat's
// four lanes each keep both accumulators of one pair. Aligned pieces
// (labels starting on a 16-byte boundary) take one 16-byte load.

#define XXH_CHUNK 8

// Words e and e + 1 (e even) of the stripe at byte `at` (any alignment).
// No branch on the alignment: the data's padding word makes the third
// load safe, and the join is exact for r == 0; a 16-byte aligned pair is
// one load.
inline ulong2 xxh8_pair(__global const ulong *w, ulong at, uint e) {
  ulong q = (at >> 3) + e;
  if ((at & 15) == 0) return *(__global const ulong2 *)(w + q);
  uint r = (uint)(at & 7) * 8;
  ulong x = w[q], y = w[q + 1], z = w[q + 2];
  return (ulong2)(xxh_join(x, y, r), xxh_join(y, z, r));
}

// Accumulator j's share of a stripe whose pair of words is v, keyed by k.
inline ulong xxh8_acc(ulong2 v, uint j, ulong k, ulong a) {
  ulong own = (j & 1) ? v.y : v.x, other = (j & 1) ? v.x : v.y;
  ulong d = own ^ k;
  return a + other + (ulong)(uint)d * (ulong)(uint)(d >> 32);
}

// Words e and e + 1 of stripes s0 .. s0 + XXH_CHUNK - 1 from byte `pos`
// into v, loaded unconditionally (a stripe past the count reloads the
// last one; the caller does not add it): a guarded load is a branch on
// NVIDIA, and in the PTX of the four-lane kernels each tail stripe sat
// behind its own branch, so a tail waited on one load at a time.
inline void xxh8_chunk(__global const ulong *w, ulong pos, uint s0, uint stripes, uint e,
                       uint n, ulong2 *v) {
  if ((pos & 15) == 0) {
    __global const ulong2 *b = (__global const ulong2 *)(w + (pos >> 3) + e);
#pragma unroll
    for (uint k = 0; k < XXH_CHUNK; k++)
      if (k < n) v[k] = b[4 * min(s0 + k, stripes - 1)];
    return;
  }
  uint r = (uint)(pos & 7) * 8;
  __global const ulong *b = w + (pos >> 3) + e;
  ulong x[XXH_CHUNK], y[XXH_CHUNK], z[XXH_CHUNK];
#pragma unroll
  for (uint k = 0; k < XXH_CHUNK; k++) {
    if (k < n) {
      uint at = 8 * min(s0 + k, stripes - 1);
      x[k] = b[at];
      y[k] = b[at + 1];
      z[k] = b[at + 2];
    }
  }
#pragma unroll
  for (uint k = 0; k < XXH_CHUNK; k++)
    if (k < n) v[k] = (ulong2)(xxh_join(x[k], y[k], r), xxh_join(y[k], z[k], r));
}

// n (4 or 8, a literal) stripes from s0 into lane j's accumulator *a0,
// or, with both set, into accumulators e and e + 1 (*a0, *a1). The loops
// here run XXH_CHUNK trips with a test of n, so a copy not inlined (PoCL
// compiles one) still unrolls without a warning.
inline void xxh8_run(__global const ulong *w, __local const ulong *sec, ulong pos, uint s0,
                     uint stripes, uint j, uint n, int both, ulong *a0, ulong *a1) {
  uint e = j & ~1u;
  ulong2 v[XXH_CHUNK];
  xxh8_chunk(w, pos, s0, stripes, e, n, v);
#pragma unroll
  for (uint k = 0; k < XXH_CHUNK; k++) {
    if (k >= n) continue;
    uint sk = min(s0 + k, stripes - 1);
    int in = s0 + k < stripes;
    if (both) {
      ulong n0 = xxh8_acc(v[k], e, sec[sk + e], *a0), n1 = xxh8_acc(v[k], e + 1, sec[sk + e + 1], *a1);
      *a0 = in ? n0 : *a0;
      *a1 = in ? n1 : *a1;
    } else {
      ulong n0 = xxh8_acc(v[k], j, sec[sk + j], *a0);
      *a0 = in ? n0 : *a0;
    }
  }
}

// Lane j's accumulator(s) over `stripes` (<= 16) stripes from byte
// `pos`, keyed from the start of the secret: eight stripes a round trip,
// or four when no more are left (a 256-byte label's three tail stripes
// do not pay for eight).
inline void xxh8_span_stripes(__global const ulong *w, __local const ulong *sec, ulong pos,
                              uint stripes, uint j, int both, ulong *a0, ulong *a1) {
  for (uint s0 = 0; s0 < stripes;) {
    if (stripes - s0 > 4) {
      xxh8_run(w, sec, pos, s0, stripes, j, XXH_CHUNK, both, a0, a1);
      s0 += XXH_CHUNK;
    } else {
      xxh8_run(w, sec, pos, s0, stripes, j, 4, both, a0, a1);
      s0 += 4;
    }
  }
}

inline ulong xxh8_stripes(__global const ulong *w, __local const ulong *sec, ulong pos,
                          uint stripes, uint j, ulong a) {
  ulong unused = 0;
  xxh8_span_stripes(w, sec, pos, stripes, j, 0, &a, &unused);
  return a;
}

// Lane j's sums over one whole 1 KiB block.
inline ulong xxh8_block(__global const ulong *w, __local const ulong *sec, ulong pos, uint j,
                        ulong a) {
  return xxh8_stripes(w, sec, pos, 16, j, a);
}

// Lane j's sums over the partial last block from byte `at` and the final
// stripe of a label [pos, pos + len) (its load issued first).
inline ulong xxh8_tail(__global const ulong *w, __local const ulong *sec, ulong pos, ulong len,
                       ulong at, uint j, ulong a) {
  ulong2 last = xxh8_pair(w, pos + len - 64, j & ~1u);
  uint tail = (uint)((pos + len - 1 - at) >> 6);
  a = xxh8_stripes(w, sec, at, tail, j, a);
  return xxh8_acc(last, j, xxh_lsec(sec, 121 + 8 * j), a);
}

// xxh_team_part with the octets' loads: lane p keeps accumulators 2p and
// 2p + 1 of the same 16-byte pairs (stripes loaded XXH_CHUNK at a time,
// unconditionally; the last stripe's load issued first).
inline void xxh4_stripes(__global const ulong *w, __local const ulong *sec, ulong pos,
                         uint stripes, uint p, ulong *a0, ulong *a1) {
  xxh8_span_stripes(w, sec, pos, stripes, 2 * p, 1, a0, a1);
}

ulong xxh_team_part_flat(__global const ulong *w, __local const ulong *sec, ulong pos, ulong len,
                         uint p) {
  ulong a0 = xxh_init[2 * p], a1 = xxh_init[2 * p + 1];
  ulong blocks = (len - 1) / XXH_BLOCK;
  ulong k0 = sec[16 + 2 * p], k1 = sec[17 + 2 * p];
  for (ulong b = 0; b < blocks; b++) {
    xxh4_stripes(w, sec, pos + b * XXH_BLOCK, 16, p, &a0, &a1);
    a0 = xxh_scramble(a0, k0);
    a1 = xxh_scramble(a1, k1);
  }
  ulong2 last = xxh8_pair(w, pos + len - 64, 2 * p);
  uint tail = (uint)(((len - 1) - blocks * XXH_BLOCK) / 64);
  xxh4_stripes(w, sec, pos + blocks * XXH_BLOCK, tail, p, &a0, &a1);
  a0 = xxh8_acc(last, 2 * p, xxh_lsec(sec, 121 + 16 * p), a0);
  a1 = xxh8_acc(last, 2 * p + 1, xxh_lsec(sec, 129 + 16 * p), a1);
  return xxh_merge_part(sec, p, a0, a1);
}

// Accumulator j keyed for the merge (each lane keys its own, so the
// merging lane only folds).
inline ulong xxh8_keyed(__local const ulong *sec, uint j, ulong a) {
  return a ^ xxh_lsec(sec, 11 + 8 * j);
}

// The hash from an octet's eight keyed accumulators x[0..7].
inline ulong xxh8_merge(__local const ulong *x, ulong len) {
  ulong h = len * XXH_P64_1;
  for (uint q = 0; q < 4; q++) h += xxh_fold(x[2 * q], x[2 * q + 1]);
  return xxh3_avalanche(h);
}

// Labels of group_min bytes or more, one work-group a label (groups loop
// over them), in one pass over the data and no scratch buffer: each octet
// takes one unit (a 1 KiB block, or the label's partial last block with
// its final stripe) side by side, leaves its eight sums in local memory,
// and the first octet carries the accumulators through the scrambles of
// those units in order; passes of get_local_size(0) / 8 units repeat
// until the label is done. With direct set every label of the slice is
// visited and shorter ones are skipped (another kernel takes them);
// otherwise the huge list (counts[1] entries) names them. scratch holds
// two buffers of one word per work-item (steps alternate, one barrier a
// step) and then the 24-word secret; the work-group size is a multiple
// of 8.
__kernel void hash_big(__global const ulong *w, __global const long *offsets, ulong base,
                       uint count, ulong nbytes, ulong seed, ulong mask, __global ulong *out,
                       ulong out_off, __global const uint *huge_list, __global const uint *counts,
                       uint direct, ulong group_min, __local ulong *scratch) {
  uint g = (uint)get_local_size(0);
  __local ulong *sec = scratch + 2 * g;
  xxh_derive(sec, seed);
  barrier(CLK_LOCAL_MEM_FENCE);
  uint lid = (uint)get_local_id(0), j = lid & 7, o = lid / 8;
  uint per = g / 8;
  uint n = direct ? count : counts[1];
  ulong key = sec[16 + j];
  uint flip = 0;
  // The label, and so every trip count below, is the same for the whole
  // group: every work-item reaches every barrier.
  for (uint h = (uint)get_group_id(0); h < n; h += (uint)get_num_groups(0)) {
    uint idx = direct ? h : huge_list[h];
    ulong len;
    ulong pos = xxh_span(offsets, base + idx, nbytes, &len);
    if (len < group_min) continue;
    ulong nb = (len - 1) >> 10;
    ulong acc = xxh_init[j];
    for (ulong u0 = 0; u0 <= nb; u0 += per, flip ^= 1) {
      __local ulong *buf = scratch + flip * g;
      ulong u = u0 + o, s = 0;
      if (u < nb) s = xxh8_block(w, sec, pos + (u << 10), j, 0);
      else if (u == nb) s = xxh8_tail(w, sec, pos, len, pos + (nb << 10), j, 0);
      buf[lid] = s;
      barrier(CLK_LOCAL_MEM_FENCE);
      if (o == 0) {
        ulong k_end = nb + 1 - u0 < per ? nb + 1 - u0 : per;
        for (ulong k = 0; k < k_end; k++) {
          acc += buf[8 * k + j];
          if (u0 + k < nb) acc = xxh_scramble(acc, key);
        }
      }
    }
    __local ulong *buf = scratch + flip * g;
    if (o == 0) buf[j] = xxh8_keyed(sec, j, acc);
    barrier(CLK_LOCAL_MEM_FENCE);
    flip ^= 1;
    if (lid == 0) out[out_off + base + idx] = xxh8_merge(buf, len) & mask;
  }
}

// ---- Two lanes a label (hash_pair_all) -----------------------------------
//
// Lane h owns pieces 2h and 2h + 1 of every stripe (piece q is words 2q
// and 2q + 1, whose accumulators make one term of the merge): words and
// accumulators 4h .. 4h + 3. Labels of 256 bytes are only four stripes:
// with four lanes a label each lane had one 16-byte load per stripe in
// flight and a barrier a label; here a lane issues every load of a run of
// stripes (and of the final stripe) before any arithmetic, so more bytes
// are in flight per lane. (On the H200 this beat one lane a label, two
// with their pieces interleaved and four with these loads.)

#define XXH_PAIR_CHUNK 4

// Lane h's four words of the stripe at byte `at` (any alignment) into v.
inline void xxh2_load(__global const ulong *w, ulong at, uint h, ulong *v) {
  if ((at & 15) == 0) {
    __global const ulong2 *b = (__global const ulong2 *)(w + (at >> 3)) + 2 * h;
    ulong2 x = b[0], y = b[1];
    v[0] = x.x;
    v[1] = x.y;
    v[2] = y.x;
    v[3] = y.y;
    return;
  }
  // The two pieces lie side by side and share their joining word.
  uint r = (uint)(at & 7) * 8;
  __global const ulong *b = w + (at >> 3) + 4 * h;
  ulong t[5];
#pragma unroll
  for (uint m = 0; m < 5; m++) t[m] = b[m];
#pragma unroll
  for (uint m = 0; m < 4; m++) v[m] = xxh_join(t[m], t[m + 1], r);
}

// Lane h's accumulators over one stripe's words v, keyed by the derived
// secret's word ks + j for accumulator j, or (koff set: the final stripe)
// from byte koff + 8 j.
inline void xxh2_acc(const ulong *v, __local const ulong *sec, uint ks, uint koff, uint h,
                     ulong *acc) {
#pragma unroll
  for (uint m = 0; m < 4; m++) {
    uint j = 4 * h + m;
    ulong k = koff ? xxh_lsec(sec, koff + 8 * j) : sec[ks + j];
    ulong d = v[m] ^ k;
    acc[m] += v[m ^ 1] + (ulong)(uint)d * (ulong)(uint)(d >> 32);
  }
}

// Stripes s0 .. s0 + XXH_PAIR_CHUNK - 1 (those below `stripes`) from byte
// `pos`: all loads first (a stripe past the count reloads the last one
// and is not added; no branch between the loads).
inline void xxh2_run(__global const ulong *w, __local const ulong *sec, ulong pos, uint s0,
                     uint stripes, uint h, ulong *acc) {
  ulong v[XXH_PAIR_CHUNK][4];
#pragma unroll
  for (uint k = 0; k < XXH_PAIR_CHUNK; k++)
    xxh2_load(w, pos + 64 * (ulong)min(s0 + k, stripes - 1), h, v[k]);
#pragma unroll
  for (uint k = 0; k < XXH_PAIR_CHUNK; k++) {
    ulong nacc[4];
#pragma unroll
    for (uint m = 0; m < 4; m++) nacc[m] = acc[m];
    xxh2_acc(v[k], sec, min(s0 + k, stripes - 1), 0, h, nacc);
    int in = s0 + k < stripes;
#pragma unroll
    for (uint m = 0; m < 4; m++) acc[m] = in ? nacc[m] : acc[m];
  }
}

inline void xxh2_stripes(__global const ulong *w, __local const ulong *sec, ulong pos,
                         uint stripes, uint h, ulong *acc) {
  for (uint s0 = 0; s0 < stripes; s0 += XXH_PAIR_CHUNK) xxh2_run(w, sec, pos, s0, stripes, h, acc);
}

// Lane h's part of the merge of a label of more than 240 bytes: its
// accumulators through every block, the tail and the final stripe (whose
// load is issued first), folded piece by piece.
inline ulong xxh2_long(__global const ulong *w, __local const ulong *sec, ulong pos, ulong len,
                       uint h) {
  ulong acc[4];
#pragma unroll
  for (uint m = 0; m < 4; m++) acc[m] = xxh_init[4 * h + m];
  ulong blocks = (len - 1) / XXH_BLOCK;
  for (ulong b = 0; b < blocks; b++) {
    xxh2_stripes(w, sec, pos + b * XXH_BLOCK, 16, h, acc);
#pragma unroll
    for (uint m = 0; m < 4; m++) acc[m] = xxh_scramble(acc[m], sec[16 + 4 * h + m]);
  }
  ulong last[4];
  xxh2_load(w, pos + len - 64, h, last);
  uint tail = (uint)(((len - 1) - blocks * XXH_BLOCK) / 64);
  xxh2_stripes(w, sec, pos + blocks * XXH_BLOCK, tail, h, acc);
  xxh2_acc(last, sec, 0, 121, h, acc);
  return xxh_merge_part(sec, 2 * h, acc[0], acc[1]) + xxh_merge_part(sec, 2 * h + 1, acc[2], acc[3]);
}

// Lane h's share of a label of 17..240 bytes: xxh_mid_parts with two
// lanes (chunk pairs h and h + 2 up to 128 bytes; above, chunks h, h + 2,
// .. of the first eight into *a, every other later one into *b, and for
// lane 0 the last 16 bytes).
void xxh2_mid_parts(__global const ulong *w, ulong pos, uint len, uint h, ulong seed, ulong *a,
                    ulong *b) {
  ulong x = 0;
  if (len <= 128) {
    for (uint q = h; q < 4; q += 2)
      if (len > 32 * q)
        x += xxh_mix16(w, pos + 16 * q, 32 * q, seed) +
             xxh_mix16(w, pos + len - 16 * (q + 1), 32 * q + 16, seed);
    *a = x;
    *b = 0;
    return;
  }
  for (uint i = h; i < 8; i += 2) x += xxh_mix16(w, pos + 16 * i, 16 * i, seed);
  *a = x;
  x = 0;
  uint rounds = len / 16;
  for (uint i = 8 + h; i < rounds; i += 2) x += xxh_mix16(w, pos + 16 * i, 16 * (i - 8) + 3, seed);
  if (h == 0) x += xxh_mix16(w, pos + len - 16, 119, seed);
  *b = x;
}

// hash_team_all with two lanes a label (same arguments and lists) and one
// barrier a round: scratch holds two buffers of two words per work-item
// (rounds alternate between them, so one barrier keeps a round's writes
// off the last one's reads) and then the 24-word secret; the work-group
// size is even. The next round's offsets are loaded a round ahead and
// checked only when used, so their latency hides behind this round's data.
__kernel void hash_pair_all(__global const ulong *w, __global const long *offsets, ulong base,
                            uint count, ulong seed, ulong mask, __global ulong *out,
                            ulong out_off, ulong nbytes, __global uint *huge_list,
                            __global uint *counts, ulong group_min, uint list_huge,
                            __local ulong *scratch) {
  uint g = (uint)get_local_size(0);
  __local ulong *sec = scratch + 4 * g;
  xxh_derive(sec, seed);
  barrier(CLK_LOCAL_MEM_FENCE);
  uint lid = (uint)get_local_id(0), h = lid & 1;
  uint per = g >> 1, stride = (uint)get_num_groups(0) * per;
  uint flip = 0;
  uint t = (uint)get_group_id(0) * per + (lid >> 1);
  long o0 = 0, o1 = 0;
  if (t < count) {
    o0 = offsets[base + t];
    o1 = offsets[base + t + 1];
  }
  // The trip count depends only on the group: every work-item reaches
  // the barrier.
  for (uint t0 = (uint)get_group_id(0) * per; t0 < count; t0 += stride, flip ^= 1) {
    __local ulong *sa = scratch + flip * 2 * g, *sb = sa + g;
    t = t0 + (lid >> 1);
    ulong pos = (ulong)o0, end = (ulong)o1;
    if (t + stride < count) {
      o0 = offsets[base + t + stride];
      o1 = offsets[base + t + stride + 1];
    }
    if (end < pos || end > nbytes) pos = end = 0;   // as xxh_span
    ulong len = end - pos, a = 0, b = 0;
    int mode = 0;   // 1: 17..240 bytes, 2: longer, both from the lanes' parts
    if (t < count) {
      if (len <= 16) {
        if (h == 0) out[out_off + base + t] = xxh_short(w, pos, (uint)len, seed) & mask;
      } else if (len <= XXH_SHORT_MAX) {
        mode = 1;
        xxh2_mid_parts(w, pos, (uint)len, h, seed, &a, &b);
      } else if (len >= group_min) {
        if (h == 0 && list_huge) huge_list[atomic_add(&counts[1], 1u)] = t;
      } else {
        mode = 2;
        a = xxh2_long(w, sec, pos, len, h);
      }
    }
    sa[lid] = a;
    sb[lid] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (mode && h == 0) {
      ulong s = len * XXH_P64_1 + sa[lid] + sa[lid + 1], r = sb[lid] + sb[lid + 1];
      // 129..240 bytes: the first eight chunks are avalanched on their own.
      ulong x = mode == 1 && len > 128 ? xxh3_avalanche(s) + r : s;
      out[out_off + base + t] = xxh3_avalanche(x) & mask;
    }
  }
}
#endif  // HASH_SERIAL_ONLY
