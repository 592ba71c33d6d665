// Attention on NVIDIA tensor cores (PTX mma.sync) for f32, f16 and bf16.
//
// An optional vendor layer beside the portable kernel in sdpa.cl: the host
// picks it only on an NVIDIA device, and only after this program has built
// and its self-check has passed there (src/sdpa_mma.c). Other devices build
// this file to an empty program (it is listed like every program).
//
// A work-group of MMA_NW warps owns 16 * MMA_NW queries of one (batch, head);
// each warp owns 16 of them. K and V tiles of MMA_BK keys go through local
// memory as raw words, rows padded by 16 bytes so that the eight rows one
// fragment load touches fall in different banks. Per key tile, each warp:
//   1. S = Q K^T with MMAs into f32 accumulators, Q kept for the whole pass
//      (in registers, or for f32 in a local tile: MMA_QMODE);
//   2. the online softmax on S in registers: a row's values sit in the four
//      lanes of a quad, so row maxima and sums need two butterfly shuffles;
//   3. O += P V, with P taken straight from S's accumulator layout.
// Precision is that of f32 arithmetic throughout, as the portable kernel's:
//   - f16/bf16 (m16n8k16): Q, K and V are exact in the MMA's inputs and every
//     sum is f32; only P must enter in 16 bits, so it goes in as a sum of two
//     (f16) or three (bf16) 16-bit parts, each the remainder of the last,
//     which keeps about 22 (f16) or 24 (bf16) of its bits.
//   - f32 (m16n8k8 TF32, 10-bit fractions): every operand x is split into
//     big = x rounded to TF32 and small = x - big truncated to TF32 (SPLIT),
//     and a b is computed as big*big + big*small + small*big; what is
//     dropped (small*small and the truncation of small) is about 2^-21 of
//     |a b|, next to f32's 2^-24, and the sums are f32; tests on the H200
//     hold it to the f32 tolerance.
//
// Build options: MMA_DTYPE (0 f32, 1 f16, 2 bf16), MMA_DP (head dim rounded
// up to 16; at most 128), MMA_BK (keys per tile, a multiple of 16), MMA_NW
// (warps), MMA_BATCH (1: a tile's global loads all issued before its local
// stores; 0: one word at a time), MMA_QMODE (f32 only: where Q lives for the
// pass. 0: both TF32 parts in registers, 2 x head dim / 4 a lane, which
// fits up to head dim 64; 1: in a local tile of its own, split as it is
// used; 2: its f32 words in registers, head dim / 4 a lane, read straight
// from global memory and split as they are used, which leaves local memory
// to K and V at head dim 128).

#ifndef MMA_DTYPE
#define MMA_DTYPE 1
#endif
#ifndef MMA_DP
#define MMA_DP 64
#endif
#ifndef MMA_BK
#define MMA_BK 64
#endif
#ifndef MMA_NW
#define MMA_NW 4
#endif
#ifndef MMA_BATCH
#define MMA_BATCH 0
#endif
#ifndef MMA_QMODE
#define MMA_QMODE 0
#endif
#ifndef MMA_PIPE
#define MMA_PIPE 0
#endif
#ifndef MMA_MT
#define MMA_MT 1
#endif
#ifndef MMA_PSPLIT
#define MMA_PSPLIT (MMA_DTYPE == 2 ? 3 : 2)
#endif
#define QLOCAL (MMA_DTYPE == 0 && MMA_QMODE == 1)
#define QRAW (MMA_DTYPE == 0 && MMA_QMODE == 2)

#if TABCL_VENDOR_NVIDIA

#define NW MMA_NW
#define NT (NW * 32)
#define MT MMA_MT            /* 16-query tiles a warp (MMA_PIPE; else 1) */
#define BQ (NW * 16 * MT)
#define BK MMA_BK
#define DP MMA_DP
#define RS (DP + VECN)       /* local row stride in elements: rows 16 bytes apart more */
#if MMA_DTYPE == 0
#define NKC (DP / 8)         /* 8-wide chunks of the head dim (Q K^T, TF32) */
#else
#define NKC (DP / 16)        /* 16-wide chunks of the head dim (Q K^T) */
#endif
#define NSN (BK / 8)         /* 8-key tiles of S */
#define NPC (BK / 16)        /* 16-key chunks of P (P V) */
#define NON (DP / 8)         /* 8-column tiles of O */
#define NG (NON % 4 == 0 ? 4 : 2)   /* of which f32's P V takes NG at a time */
#define VROWS (QLOCAL || QRAW ? BK : BK > BQ ? BK : BQ)   /* Q may pass through V's tile */
#define LOG2E 1.4426950408889634f

#if MMA_DTYPE == 0
typedef uint elem_t;         /* f32 bits */
#elif MMA_DTYPE == 1
typedef ushort elem_t;
#define MMA_T "f16"
#define NSPLIT MMA_PSPLIT
#else
typedef ushort elem_t;
#define MMA_T "bf16"
#define NSPLIT MMA_PSPLIT
#endif
#define VECN (16 / (int)sizeof(elem_t))   /* elements in 16 bytes */

#if MMA_DTYPE == 0
// c (four f32) += A (16 x 8 TF32, four registers) * B (8 x 8, two).
#define MMA(c, a0, a1, a2, a3, b0, b1)                                                   \
  __asm__("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "                         \
          "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                         \
          : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                        \
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

// x split into TF32 parts, as f32 bits with the low 13 zero: big is x
// rounded to nearest (ties away from zero: half a TF32 unit added to the
// bits, which carries into the exponent where it must), small the exact
// remainder x - big truncated. NVIDIA's compiler has no instruction for
// cvt.rna.tf32.f32 on this chip and spent about 8 on each; this takes 4.
#define SPLIT(x, big, small)                                              \
  do {                                                                    \
    const float x_ = (x);                                                 \
    (big) = (as_uint(x_) + 0x1000u) & 0xFFFFE000u;                        \
    (small) = as_uint(x_ - as_float(big)) & 0xFFFFE000u;                  \
  } while (0)
#else
// c (four f32) += A (16 x 16, four registers of two 16-bit values) * B (16 x 8, two).
#define MMA(c, a0, a1, a2, a3, b0, b1)                                                   \
  __asm__("mma.sync.aligned.m16n8k16.row.col.f32." MMA_T "." MMA_T ".f32 "              \
          "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                         \
          : "+f"((c)[0]), "+f"((c)[1]), "+f"((c)[2]), "+f"((c)[3])                        \
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
#endif
// c += a b, with A's four registers and B's two in arrays.
#define MMA_B(c, a, b) MMA(c, (a)[0], (a)[1], (a)[2], (a)[3], (b)[0], (b)[1])

// x from the lane whose id differs from this one's in the bits of m.
inline float shfl_xor(float x, int m) {
  float r;
  __asm__ volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(x), "r"(m));
  return r;
}

// The inverse of each of a thread's two rows' softmax sums: the sums are
// spread over the quad of threads that share the rows (tq 0..3); 0 for a
// row no key reached.
inline float2 row_sums(float l0, float l1) {
  l0 += shfl_xor(l0, 1);
  l0 += shfl_xor(l0, 2);
  l1 += shfl_xor(l1, 1);
  l1 += shfl_xor(l1, 2);
  return (float2)(l0, l1);
}
inline float2 row_scales(float l0, float l1) {
  const float2 l = row_sums(l0, l1);
  return (float2)(l.x > 0 ? 1.f / l.x : 0.f, l.y > 0 ? 1.f / l.y : 0.f);
}

#if MMA_DTYPE == 0
inline float scalar_of(uint u) { return as_float(u); }
#else
// Two f32 rounded to nearest even into one register: lo in bits 0..15.
inline uint pack2(float lo, float hi) {
  uint r;
  __asm__("cvt.rn." MMA_T "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

inline float2 unpack2(uint u) {
#if MMA_DTYPE == 1
  float lo, hi;
  __asm__("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
          : "=f"(lo), "=f"(hi)
          : "r"(u));
  return (float2)(lo, hi);
#else
  return (float2)(as_float(u << 16), as_float(u & 0xFFFF0000u));
#endif
}

inline float scalar_of(ushort u) {
#if MMA_DTYPE == 1
  return unpack2((uint)u).x;
#else
  return as_float((uint)u << 16);
#endif
}
#endif

// Rows [0, n) of a [rows, d] tile whose rows are `stride` elements apart,
// into a local tile of RS-element rows; rows at or past `avail` and columns
// at or past d become zeros. vec: d is a multiple of VECN, so every row
// starts on 16 bytes (buffers are aligned far beyond that) and moves in
// 16-byte words.
inline void load_tile(__local elem_t *dst, __global const elem_t *src, long stride, int n,
                      int avail, int d, int vec, int t) {
  if (vec) {
    for (int idx = t; idx < n * (DP / VECN); idx += NT) {
      const int r = idx / (DP / VECN), c = (idx - r * (DP / VECN)) * VECN;
      uint4 x = (uint4)(0);
      if (r < avail && c < d) x = *(__global const uint4 *)(src + r * stride + c);
      *(__local uint4 *)(dst + r * RS + c) = x;
    }
  } else {
    for (int idx = t; idx < n * DP; idx += NT) {
      const int r = idx / DP, c = idx - r * DP;
      dst[r * RS + c] = r < avail && c < d ? src[r * stride + c] : (elem_t)0;
    }
  }
}

// The same for the 16-byte case with every load issued before any store,
// so that a work-item waits for global memory once a tile, not once a word:
// LOAD_U4 into registers, STORE_U4 into the local tile.
#define TILE_U4 (DP / VECN)                     /* 16-byte words in a tile row */
#define LPT(n) (((n) * TILE_U4 + NT - 1) / NT)  /* words a work-item moves */
#define LOAD_U4(buf, n, src, stride, avail)                                              \
  _Pragma("unroll") for (int u = 0; u < LPT(n); u++) {                                   \
    const int idx = t + u * NT, r = idx / TILE_U4, c = (idx - r * TILE_U4) * VECN;       \
    (buf)[u] = (uint4)(0);                                                                \
    if (idx < (n) * TILE_U4 && r < (avail) && c < d)                                     \
      (buf)[u] = *(__global const uint4 *)((src) + r * (stride) + c);                    \
  }
#define STORE_U4(buf, n, dst)                                                            \
  _Pragma("unroll") for (int u = 0; u < LPT(n); u++) {                                   \
    const int idx = t + u * NT, r = idx / TILE_U4, c = (idx - r * TILE_U4) * VECN;       \
    if (idx < (n) * TILE_U4) *(__local uint4 *)((dst) + r * RS + c) = (buf)[u];          \
  }

// The 32-bit word at element c of local row r (for 16-bit elements, c even:
// elements c and c + 1).
#define W32(tile, r, c) (*(__local const uint *)((tile) + (r) * RS + (c)))

// The exponential of the softmax. The pipelined 16-bit kernel takes the
// hardware's approximation with subnormal results flushed to zero
// (ex2.approx.ftz.f32, a relative error near 2^-22, far below the 2^-11 or
// 2^-8 to which P is then rounded). native_exp2 is the same approximation
// without the flush, and NVIDIA's compiler makes it four instructions (a
// range test, a multiply on each side of the approximation): in a profile
// of the H200 those were 54 of the 490 instructions a warp issued per key
// tile (head dim 64, 32 keys), for 32 MMAs. What the flush loses is below
// 2^-126 of a row's largest term, which is 1. The other builds keep exp2
// (f32 is held to 1e-5).
inline float ex2_ftz(float x) {
  float r;
  __asm__("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
#ifndef SM_EXP2
#if MMA_PIPE && MMA_DTYPE != 0
#define SM_EXP2 ex2_ftz
#else
#define SM_EXP2 exp2
#endif
#endif

// A key tile's S scaled into the log2 domain, with entries outside the
// lengths, past the causal diagonal or masked out set to -inf, for a mask
// of the given kind (a constant at each call, so that each kind is its own
// straight code: with the kind tested per entry, NVIDIA's compiler turned
// the mask's loads and conversions into predicated instructions that every
// tile issued, mask or not).
__attribute__((always_inline)) inline void scale_mask(float s[NSN][4], int k0, int qi0, int qi1,
                                                      int tq, int lq, int lk, int causal,
                                                      int kind, __global const uchar *mask,
                                                      long mbase, long mqs, float scale2) {
  #pragma unroll
  for (int j = 0; j < NSN; j++) {
    #pragma unroll
    for (int e = 0; e < 4; e++) {
      const int qi = e < 2 ? qi0 : qi1, kj = k0 + j * 8 + 2 * tq + (e & 1);
      int ok = SDPA_IN_RANGE(qi, kj);
      float x = s[j][e] * scale2;
      if (kind == 1 && ok) ok = mask[SDPA_MASK_AT(qi, kj)] != 0;
      if (kind == 2 && ok)
        x += scalar_of(((__global const elem_t *)mask)[SDPA_MASK_AT(qi, kj)]) * LOG2E;
      s[j][e] = ok ? x : -INFINITY;
    }
  }
}

// Whether the key tile from k0 needs no per-entry test in this kernel: no
// mask, every key real and, if causal, every key at or below the diagonal
// of the group's first query. Unlike SDPA_TILE_PLAIN (common.cl) it does
// not ask that every query row be real: rows past the last query hold zeros
// of Q here, their scores stay finite, and they are never written, so a
// group of 64 rows over the tabular shape's 54 queries takes this path too.
#define MMA_TILE_PLAIN(k0) (mask_kind == 0 && (k0) + BK <= lk && (!causal || (k0) + BK <= q0 + 1))

// Whether p holds in any lane of the warp (every lane must call it).
inline int warp_any(int p) {
  int r;
  __asm__ volatile("{ .reg .pred a, b; setp.ne.s32 a, %1, 0; vote.sync.any.pred b, a, 0xffffffff; "
                   "selp.s32 %0, 1, 0, b; }"
                   : "=r"(r)
                   : "r"(p));
  return r;
}

// How the pipelined 16-bit kernel rescales O (LAZY_RESCALE; the other
// builds always rescale): only where some row's maximum has grown past
// the one its exponents use by more than MMA_TAU (log2 units), a
// warp-uniform branch. Otherwise the row keeps the older maximum, its
// terms are then up to 2^MMA_TAU instead of 1, and O and the sums stay as
// they are (O / l is the same quotient; f16 and bf16 hold such terms with
// the same relative precision). At 4,096 tokens most key tiles change no
// row's maximum, and O's rescale is NON x 4 multiplies a tile. (Rescaling
// wherever any maximum changed, exact, was 0.8% slower on the tabular
// shape: bench/history/2026-11-to-12.md.)
#ifndef MMA_TAU
#define MMA_TAU 8.f
#endif
#if MMA_PIPE && MMA_DTYPE != 0
#define LAZY_RESCALE 1
#else
#define LAZY_RESCALE 0
#endif

// Scale into the log2 domain, mask, and the online softmax of one key tile's
// S (rows r and r + 8 of the warp: qi0, qi1): S becomes P, and the running
// maxima and partial sums move on; returns the factors (alpha) that rescale
// what O holds so far. plain: the tile needs no per-entry tests
// (MMA_TILE_PLAIN). A plain tile with a positive scale is not scaled entry
// by entry: its row maxima are taken on the raw scores and scaled (a
// positive factor keeps their order, and rounding keeps it too), and each
// exponent is one fused multiply-add, s * scale - max; otherwise the scores
// are scaled and masked first and the factor is 1. *resc: whether O must
// be rescaled by the factors this tile (LAZY_RESCALE above; warp-uniform).
__attribute__((always_inline)) inline float2 softmax_tile(float s[NSN][4], float m_run[2], float l_run[2], int k0, int qi0,
                           int qi1, int tq, int lq, int lk, int causal, int mask_kind,
                           __global const uchar *mask, long mbase, long mqs, float scale2, int plain,
                           int *resc) {
  const int fold = plain && scale2 > 0.f;
  const float f = fold ? scale2 : 1.f;
  if (plain && !fold) {
    #pragma unroll
    for (int j = 0; j < NSN; j++) {
      #pragma unroll
      for (int e = 0; e < 4; e++) s[j][e] *= scale2;
    }
  } else if (!plain) {
    if (mask_kind == 0)
      scale_mask(s, k0, qi0, qi1, tq, lq, lk, causal, 0, mask, mbase, mqs, scale2);
    else if (mask_kind == 1)
      scale_mask(s, k0, qi0, qi1, tq, lq, lk, causal, 1, mask, mbase, mqs, scale2);
    else
      scale_mask(s, k0, qi0, qi1, tq, lq, lk, causal, 2, mask, mbase, mqs, scale2);
  }
  float mx0 = -INFINITY, mx1 = -INFINITY;
  #pragma unroll
  for (int j = 0; j < NSN; j++) {
    mx0 = fmax(mx0, fmax(s[j][0], s[j][1]));
    mx1 = fmax(mx1, fmax(s[j][2], s[j][3]));
  }
  mx0 = fmax(mx0, shfl_xor(mx0, 1));
  mx0 = fmax(mx0, shfl_xor(mx0, 2));
  mx1 = fmax(mx1, shfl_xor(mx1, 1));
  mx1 = fmax(mx1, shfl_xor(mx1, 2));
#if LAZY_RESCALE
  const float c0 = mx0 * f, c1 = mx1 * f;
  const int grow = warp_any(c0 > m_run[0] + MMA_TAU || c1 > m_run[1] + MMA_TAU);
  const float mn0 = grow ? fmax(m_run[0], c0) : m_run[0];
  const float mn1 = grow ? fmax(m_run[1], c1) : m_run[1];
#else
  const float mn0 = fmax(m_run[0], mx0 * f), mn1 = fmax(m_run[1], mx1 * f);
#endif
  // A row with nothing attendable yet keeps m = -inf; exponents then use 0
  // so that masked entries give exp2(-inf) = 0 instead of NaN.
  const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
#if LAZY_RESCALE
  const float a0 = grow ? SM_EXP2(m_run[0] - mu0) : 1.f, a1 = grow ? SM_EXP2(m_run[1] - mu1) : 1.f;
  *resc = grow;
#else
  const float a0 = SM_EXP2(m_run[0] - mu0), a1 = SM_EXP2(m_run[1] - mu1);
  *resc = 1;
#endif
  m_run[0] = mn0, m_run[1] = mn1;
  float sum0 = 0, sum1 = 0;
  #pragma unroll
  for (int j = 0; j < NSN; j++) {
    s[j][0] = SM_EXP2(fma(s[j][0], f, -mu0)), s[j][1] = SM_EXP2(fma(s[j][1], f, -mu0));
    s[j][2] = SM_EXP2(fma(s[j][2], f, -mu1)), s[j][3] = SM_EXP2(fma(s[j][3], f, -mu1));
    sum0 += s[j][0] + s[j][1];
    sum1 += s[j][2] + s[j][3];
  }
  l_run[0] = l_run[0] * a0 + sum0;
  l_run[1] = l_run[1] * a1 + sum1;
  return (float2)(a0, a1);
}

// The key split (a runtime argument, src/attention/sdpa_split.c), as in
// sdpa.cl: dim 2 of the grid holds query tiles x nsplit parts, part p of a
// query tile takes keys [p kpart, (p + 1) kpart) (kpart a multiple of BK)
// and, where nsplit > 1, leaves its rows' maxima, sums and unnormalised
// outputs (f32) in its block of `part` for sdpa_merge below. gid0_.. are
// the group's ids, renumbered where MMA_GRID says.
#define PART_BLOCK (BQ * (2 + DP))
#undef SDPA_GID
#define SDPA_GID(i) ((i) == 0 ? gid0_ : (i) == 1 ? gid1_ : gid2_ / nsplit)
#define MMA_PART (gid2_ - gid2_ / nsplit * nsplit)
// The group's block: in the order of (batch entry, head, query tile of the
// launch, part), the order sdpa_merge reads them in.
#define MMA_PART_BLOCK(part)                                                               \
  ((part) + ((((long)gid0_ * get_num_groups(1) + gid1_) * (get_num_groups(2) / nsplit) +    \
              (qt - qt0)) * nsplit + MMA_PART) * PART_BLOCK)

// A lane's rows r and r + 8 of the warp's 16 (m, l and o as the kernels
// keep them; l summed over the quad) into a part's block.
inline void store_part(__global float *pb, int r, int qn, int tq, const float m[2], float2 l,
                       float o[NON][4]) {
  #pragma unroll
  for (int half_row = 0; half_row < 2; half_row++, r += 8) {
    if (r >= qn) continue;
    if (tq == 0) pb[r] = m[half_row], pb[BQ + r] = half_row ? l.y : l.x;
    __global float *prow = pb + 2 * BQ + r * DP + 2 * tq;
    #pragma unroll
    for (int n = 0; n < NON; n++)
      prow[n * 8] = o[n][2 * half_row], prow[n * 8 + 1] = o[n][2 * half_row + 1];
  }
}

#if MMA_PIPE && MMA_DTYPE != 0
// ---- The pipelined 16-bit kernel (MMA_PIPE) ----------------------------
//
// The same work split as the kernel below (a warp owns 16 queries, the
// online softmax in registers), with the operand traffic of
// FlashAttention-2 (Dao, arXiv 2307.08691):
//   - K and V tiles move from global to local memory with cp.async, two
//     stages: tile j + 1 is on its way while tile j is used, one barrier a
//     tile;
//   - fragments come out of local memory with ldmatrix: one x4 load gives
//     the B operands of two MMAs (K as it is, V with .trans), where the
//     kernel below reads 16-bit words one or two at a time;
//   - Q's A fragments are loaded once (ldmatrix) and stay in registers, and
//     P goes from S's accumulators into the second product's A operand in
//     registers, in MMA_PSPLIT 16-bit parts (1: P rounded to the dtype, as
//     cuDNN and FlashAttention do).
// Local rows are RS = DP + 8 elements (16 bytes more than a row), as in
// the kernel below: the eight 16-byte rows that one 8 x 8 matrix of
// ldmatrix reads then fall in eight different bank groups. The local array
// is aligned to 16 bytes, which ldmatrix and cp.async need (NVIDIA's
// compiler otherwise aligns it to 4). A head dim that is not a multiple of
// 8 leaves rows off 16 bytes: those calls load tiles with load_tile's plain
// loads, one stage, as the kernel below does.
#define STAGE (2 * BK * RS)                /* one stage: K then V */
#define Q_BESIDE (BQ <= 2 * BK)            /* Q fits one stage */

inline uint lds_addr(__local const elem_t *p) { return (uint)(size_t)p; }

// Causal calls take their query tiles last first: the GPU starts groups
// in order of their ids, and the last tiles have the most keys, so the
// longest groups start first rather than end the launch alone.
#undef SDPA_QT_ORDER
#define SDPA_QT_ORDER(g) (causal ? (int)(get_num_groups(2) / (uint)nsplit) - 1 - (g) : (g))

// Groups start in the order of their linear ids, dim 0 fastest, and the
// grid's dims are batch entries, heads and query tiles: the groups that run
// at once would take a few query tiles of every (batch entry, head), each
// reading its own K and V (2 MB each at 4,096 tokens, head dim 128, far
// more together than L2 holds), and the next query tiles of a head would
// read them again from DRAM. Where a launch without causality has more
// than one query tile, its groups are renumbered with the query tile
// fastest: the tiles of one head run together and share its K and V in L2
// (H100, 4 x 32 heads: 4,096 tokens f16 3.01 -> 2.79 ms at head dim 64,
// 4.41 -> 4.36 at 128; 1,024 tokens at 128 0.349 -> 0.331). A causal
// launch keeps the plain order, where its longest tiles, every head's,
// start first (SDPA_QT_ORDER): renumbered, it was 3-18% slower. (MMA_GRID
// 0: the plain order always.)
#ifndef MMA_GRID
#define MMA_GRID 1
#endif

// 16 bytes from src into local dst, or zeros where bytes is 0.
inline void cp_async16(__local elem_t *dst, __global const elem_t *src, int bytes) {
  __asm__ volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                   :
                   : "r"(lds_addr(dst)), "l"(src), "r"(bytes)
                   : "memory");
}
inline void cp_async_commit(void) { __asm__ volatile("cp.async.commit_group;" ::: "memory"); }
inline void cp_async_wait_all(void) { __asm__ volatile("cp.async.wait_group 0;" ::: "memory"); }
inline void cp_async_wait_one(void) { __asm__ volatile("cp.async.wait_group 1;" ::: "memory"); }

#define LDSM_X4(r, addr)                                                              \
  __asm__ volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"      \
                   : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])             \
                   : "r"(addr)                                                          \
                   : "memory")
#define LDSM_X4_T(r, addr)                                                            \
  __asm__ volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" \
                   : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])             \
                   : "r"(addr)                                                          \
                   : "memory")

// Rows [0, n) of a tile (rows `stride` elements apart, `avail` of them
// real) into local rows of RS elements with cp.async, whole rows of DP:
// rows past avail and columns past d are zero-filled by the copy itself.
inline void issue_tile(__local elem_t *dst, __global const elem_t *src, long stride, int n,
                       int avail, int d, int t) {
  for (int idx = t; idx < n * TILE_U4; idx += NT) {
    const int r = idx / TILE_U4, c = (idx - r * TILE_U4) * VECN;
    const int ok = r < avail && c < d;
    cp_async16(dst + r * RS + c, ok ? src + r * stride + c : src, ok ? 16 : 0);
  }
}

// The same for a tile whose BK rows are all real, with the work-item's own
// place in it worked out once a pass (issue_tile spent about 24
// instructions on each 16-byte copy, a quarter of all the kernel issued):
// NT is a multiple of a row's TILE_U4 words, so a work-item copies the same
// 16-byte column of rows rt, rt + RPP, ... of every tile. dst and src point
// at its first copy; bytes is 16, or 0 where its column is past d (then
// src is the tile's first row, and nothing is read).
#define RPP (NT / TILE_U4)                 /* rows one pass of the group copies */
inline void issue_rows(__local elem_t *dst, __global const elem_t *src, long stride, int rt,
                       int bytes) {
  #pragma unroll
  for (int u = 0; u < (BK + RPP - 1) / RPP; u++)
    if (BK % RPP == 0 || rt + u * RPP < BK)
      cp_async16(dst + u * RPP * RS, src + (bytes ? u * RPP * stride : 0), bytes);
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void sdpa_mma(__global const elem_t *q, __global const elem_t *k, __global const elem_t *v,
              __global const uchar *mask, __global elem_t *out, long b0, int lq, int lk, int hq,
              int hkv, int d, float scale2, int causal, int mask_kind, int mask_bb, int mask_hb,
              int h0, int qt0, int nsplit, int kpart, __global float *part) {
  __local uint4 smem4[2 * STAGE / 8] __attribute__((aligned(16)));
  __local elem_t *smem = (__local elem_t *)smem4;

  const int t = (int)get_local_id(0);
  const int w = t >> 5, lane = t & 31, g = lane >> 2, tq = lane & 3;
  int gid0_ = (int)get_group_id(0), gid1_ = (int)get_group_id(1), gid2_ = (int)get_group_id(2);
#if MMA_GRID
  {
    const int n0 = (int)get_num_groups(0), n1 = (int)get_num_groups(1),
              n2 = (int)get_num_groups(2);
    if (n2 > 1 && !causal) {
      const int lin = gid0_ + n0 * (gid1_ + n1 * gid2_), rest = lin / n2;
      gid2_ = lin - rest * n2, gid1_ = rest % n1, gid0_ = rest / n1;
    }
  }
#endif
  SDPA_GROUP_SETUP(elem_t, 8);

  const int k_first = MMA_PART * kpart;
  const int kv_end = min(SDPA_KV_END, k_first + kpart);
  const int ntiles = kv_end > k_first ? (kv_end - k_first + BK - 1) / BK : 0;
  __global const elem_t *kb1 = kb + k_first * kstride, *vb1 = vb + k_first * kstride;
  // Q through local memory into registers, once. Where it fits one stage
  // (BQ <= 2 BK rows) it goes through the second while the first key tile
  // lands in the first, so that the waits for the two overlap: a group of
  // the tabular shape has two key tiles, and waited for Q, then for them.
  // Otherwise Q takes the whole area (BQ <= 4 BK rows, sdpa_mma.c) first.
  __local elem_t *qs = Q_BESIDE ? smem + STAGE : smem;
  if (vec) {
    issue_tile(qs, qb, qstride, BQ, qn, d, t);
    cp_async_commit();
    if (Q_BESIDE && ntiles > 0) {
      issue_tile(smem, kb1, kstride, BK, lk - k_first, d, t);
      issue_tile(smem + BK * RS, vb1, kstride, BK, lk - k_first, d, t);
      cp_async_commit();
      cp_async_wait_one();   /* Q's copies have landed; the tile's may not */
    } else {
      cp_async_wait_all();
    }
  } else {
    load_tile(qs, qb, qstride, BQ, qn, d, 0, t);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  // Warp w owns query rows [16 MT w, 16 MT (w + 1)), MT tiles of 16: each
  // K and V fragment then feeds MT MMAs of each product.
  uint qa[MT][NKC][4];
  #pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    // ldmatrix x4: lanes 0-7 name rows 0-7 of matrix 0 (rows 0-7, columns
    // 0-7 of the chunk), 8-15 matrix 1 (rows 8-15), 16-23 matrix 2
    // (columns 8-15), 24-31 matrix 3: registers a0..a3 of the A fragment.
    const int r = (w * MT + mt) * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
    const int c = (lane >> 4) << 3;
    #pragma unroll
    for (int kc = 0; kc < NKC; kc++) LDSM_X4(qa[mt][kc], lds_addr(qs + r * RS + kc * 16 + c));
  }
  // Beside the first tile, Q's stage is next written after the loop's
  // first barrier, which every warp reaches after these loads.
  if (!Q_BESIDE) barrier(CLK_LOCAL_MEM_FENCE);

  float o[MT][NON][4], m_run[MT][2], l_run[MT][2];
  #pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    #pragma unroll
    for (int n = 0; n < NON; n++) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0;
    m_run[mt][0] = m_run[mt][1] = -INFINITY;
    l_run[mt][0] = l_run[mt][1] = 0;
  }
  const int r0 = w * MT * 16 + g;   /* row of this lane in the warp's first tile */

#if !Q_BESIDE
  if (vec && ntiles > 0) {
    issue_tile(smem, kb1, kstride, BK, lk - k_first, d, t);
    issue_tile(smem + BK * RS, vb1, kstride, BK, lk - k_first, d, t);
    cp_async_commit();
  }
#endif
  // This lane's ldmatrix rows: for K (x4: keys 0-7 and 8-15 of a 16-key
  // pair of tiles, head-dim columns 0-7 and 8-15 of a chunk) and for V
  // (.trans: keys 0-7 and 8-15 of a chunk, columns 0-7 and 8-15 of a pair
  // of O's tiles).
  const int kr = (lane & 7) + ((lane >> 4) << 3), kc8 = ((lane >> 3) & 1) << 3;
  const int vr = (lane & 7) + (((lane >> 3) & 1) << 3), vc8 = (lane >> 4) << 3;
  // This work-item's copies in a whole tile (issue_rows).
  const int crt = t / TILE_U4, cct = (t % TILE_U4) * VECN, cbytes = cct < d ? 16 : 0;
  const int cdst = crt * RS + cct;
  const long csrc = cbytes ? crt * kstride + cct : 0;

  for (int j = 0; j < ntiles; j++) {
    const int k0 = k_first + j * BK, kn = min(BK, lk - k0);
    __local elem_t *ks = smem + (j & 1) * STAGE, *vs = ks + BK * RS;
    if (vec) {
      // Tile j has landed (this work-item's copies, then everyone's), and
      // everyone is done with the other stage (tile j - 1): tile j + 1 may
      // go there while this one is used.
      cp_async_wait_all();
      barrier(CLK_LOCAL_MEM_FENCE);
      if (j + 1 < ntiles) {
        __local elem_t *nk = smem + ((j + 1) & 1) * STAGE;
        const long at = (long)(k0 + BK) * kstride;
        if (k0 + 2 * BK <= lk) {
          issue_rows(nk + cdst, kb + at + csrc, kstride, crt, cbytes);
          issue_rows(nk + BK * RS + cdst, vb + at + csrc, kstride, crt, cbytes);
        } else {
          issue_tile(nk, kb + at, kstride, BK, lk - k0 - BK, d, t);
          issue_tile(nk + BK * RS, vb + at, kstride, BK, lk - k0 - BK, d, t);
        }
        cp_async_commit();
      }
    } else {
      barrier(CLK_LOCAL_MEM_FENCE);
      load_tile(ks, kb + k0 * kstride, kstride, BK, kn, d, 0, t);
      load_tile(vs, vb + k0 * kstride, kstride, BK, kn, d, 0, t);
      barrier(CLK_LOCAL_MEM_FENCE);
    }

    // S = Q K^T: head-dim chunks outside, pairs of 8-key tiles inside
    // (consecutive MMAs add into different accumulators).
    float s[MT][NSN][4];
    #pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      #pragma unroll
      for (int jj = 0; jj < NSN; jj++) s[mt][jj][0] = s[mt][jj][1] = s[mt][jj][2] = s[mt][jj][3] = 0;
    }
    #pragma unroll
    for (int kc = 0; kc < NKC; kc++) {
      #pragma unroll
      for (int jp = 0; jp < NSN / 2; jp++) {
        if (jp * 16 >= kn) continue;   /* uniform: keys past the last stay zero */
        uint kf[4];
        LDSM_X4(kf, lds_addr(ks + (jp * 16 + kr) * RS + kc * 16 + kc8));
        #pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          MMA(s[mt][2 * jp], qa[mt][kc][0], qa[mt][kc][1], qa[mt][kc][2], qa[mt][kc][3], kf[0], kf[1]);
          MMA(s[mt][2 * jp + 1], qa[mt][kc][0], qa[mt][kc][1], qa[mt][kc][2], qa[mt][kc][3], kf[2], kf[3]);
        }
      }
    }

    const int plain = MMA_TILE_PLAIN(k0);
    #pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      const int qi0 = q0 + r0 + 16 * mt, qi1 = qi0 + 8;
      int resc;
      const float2 alpha = softmax_tile(s[mt], m_run[mt], l_run[mt], k0, qi0, qi1, tq, lq, lk,
                                        causal, mask_kind, mask, mbase, mqs, scale2, plain, &resc);
      if (resc) {   /* uniform in the warp */
        #pragma unroll
        for (int n = 0; n < NON; n++)
          o[mt][n][0] *= alpha.x, o[mt][n][1] *= alpha.x, o[mt][n][2] *= alpha.y, o[mt][n][3] *= alpha.y;
      }
    }

    // O += P V over 16-key chunks: S's tiles 2pc and 2pc + 1 are the A
    // fragment of chunk pc, in NSPLIT 16-bit parts (each the remainder of
    // the last); one ldmatrix.trans gives V's B operands for two of O's
    // column tiles.
    #pragma unroll
    for (int pc = 0; pc < NPC; pc++) {
      if (pc * 16 >= kn) continue;   /* uniform; those p are all zero */
      uint pa[MT][NSPLIT][4];
      #pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        float pr[8] = {s[mt][2 * pc][0],     s[mt][2 * pc][1],     s[mt][2 * pc][2],
                       s[mt][2 * pc][3],     s[mt][2 * pc + 1][0], s[mt][2 * pc + 1][1],
                       s[mt][2 * pc + 1][2], s[mt][2 * pc + 1][3]};
        #pragma unroll
        for (int sp = 0; sp < NSPLIT; sp++) {
          #pragma unroll
          for (int u = 0; u < 4; u++) {
            pa[mt][sp][u] = pack2(pr[2 * u], pr[2 * u + 1]);
            if (sp + 1 < NSPLIT) {
              const float2 back = unpack2(pa[mt][sp][u]);
              pr[2 * u] -= back.x, pr[2 * u + 1] -= back.y;
            }
          }
        }
      }
      #pragma unroll
      for (int np = 0; np < NON / 2; np++) {
        uint vf[4];
        LDSM_X4_T(vf, lds_addr(vs + (pc * 16 + vr) * RS + np * 16 + vc8));
        #pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          #pragma unroll
          for (int sp = 0; sp < NSPLIT; sp++) {
            const uint *a = pa[mt][sp];
            MMA(o[mt][2 * np], a[0], a[1], a[2], a[3], vf[0], vf[1]);
            MMA(o[mt][2 * np + 1], a[0], a[1], a[2], a[3], vf[2], vf[3]);
          }
        }
      }
    }
  }

  if (nsplit > 1) {
    __global float *pb = MMA_PART_BLOCK(part);
    #pragma unroll
    for (int mt = 0; mt < MT; mt++)
      store_part(pb, r0 + 16 * mt, qn, tq, m_run[mt], row_sums(l_run[mt][0], l_run[mt][1]), o[mt]);
    return;
  }
  __global elem_t *ob = out + ((b * lq + q0) * hq + h) * (long)d;
  const int vec2 = (d & 1) == 0;
  #pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    const float2 li2 = row_scales(l_run[mt][0], l_run[mt][1]);
    const float li0 = li2.x, li1 = li2.y;
    #pragma unroll
    for (int half_row = 0; half_row < 2; half_row++) {
      const int r = r0 + 16 * mt + 8 * half_row;
      if (r >= qn) continue;
      const float li = half_row ? li1 : li0;
      __global elem_t *orow = ob + r * qstride;
      #pragma unroll
      for (int n = 0; n < NON; n++) {
        const int c = n * 8 + 2 * tq;
        if (c >= d) continue;
        const uint x = pack2(o[mt][n][2 * half_row] * li, o[mt][n][2 * half_row + 1] * li);
        if (vec2) {
          *(__global uint *)(orow + c) = x;
        } else {
          orow[c] = (ushort)x;
          if (c + 1 < d) orow[c + 1] = (ushort)(x >> 16);
        }
      }
    }
  }
}

#else  // the kernel for f32, and for 16-bit types without MMA_PIPE

// Same grid as sdpa_fused (SDPA_GROUP_SETUP in common.cl): dim 0 batch
// entries, dim 1 heads, dim 2 query tiles.
// mask: uchar for boolean masks, elements of the dtype for additive ones (kind 1 / 2).
__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void sdpa_mma(__global const elem_t *q, __global const elem_t *k, __global const elem_t *v,
              __global const uchar *mask, __global elem_t *out, long b0, int lq, int lk, int hq,
              int hkv, int d, float scale2, int causal, int mask_kind, int mask_bb, int mask_hb,
              int h0, int qt0, int nsplit, int kpart, __global float *part) {
  __local uint4 ks4[BK * RS / VECN];
  __local uint4 vs4[VROWS * RS / VECN];
  __local elem_t *ks = (__local elem_t *)ks4;
  __local elem_t *vs = (__local elem_t *)vs4;
#if QLOCAL
  __local uint4 qs4[BQ * RS / VECN];
  __local elem_t *qt_ = (__local elem_t *)qs4;   /* Q for the whole pass */
#elif !QRAW
  __local elem_t *qt_ = vs;                      /* Q on its way into registers */
#endif

  const int t = (int)get_local_id(0);
  const int w = t >> 5, lane = t & 31, g = lane >> 2, tq = lane & 3;
  const int gid0_ = (int)get_group_id(0), gid1_ = (int)get_group_id(1),
            gid2_ = (int)get_group_id(2);
  SDPA_GROUP_SETUP(elem_t, VECN);

  const int r0 = w * 16 + g;   /* this lane's rows: r0 and r0 + 8 of the tile */
#if QRAW
  // The lane's own words of Q's A fragments, once a pass: scattered 4-byte
  // reads, but no local memory (zeros past the last query or column).
  uint qw[NKC][4];
  #pragma unroll
  for (int kc = 0; kc < NKC; kc++) {
    #pragma unroll
    for (int u = 0; u < 4; u++) {
      const int r = r0 + 8 * (u & 1), c = kc * 8 + tq + 4 * (u >> 1);
      qw[kc][u] = r < qn && c < d ? qb[r * qstride + c] : 0u;
    }
  }
#else
  // Q passes through the V tile's space into registers, once (or stays in
  // a tile of its own: QLOCAL).
  if (MMA_BATCH && vec) {
    uint4 qbuf[LPT(BQ)];
    LOAD_U4(qbuf, BQ, qb, qstride, qn);
    STORE_U4(qbuf, BQ, qt_);
  } else {
    load_tile(qt_, qb, qstride, BQ, qn, d, vec, t);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
#if QLOCAL || QRAW
#elif MMA_DTYPE == 0
  uint qa[NKC][4], qs[NKC][4];   /* TF32 big and small parts */
  #pragma unroll
  for (int kc = 0; kc < NKC; kc++) {
    const int c = kc * 8 + tq;
    SPLIT(as_float(W32(vs, r0, c)), qa[kc][0], qs[kc][0]);
    SPLIT(as_float(W32(vs, r0 + 8, c)), qa[kc][1], qs[kc][1]);
    SPLIT(as_float(W32(vs, r0, c + 4)), qa[kc][2], qs[kc][2]);
    SPLIT(as_float(W32(vs, r0 + 8, c + 4)), qa[kc][3], qs[kc][3]);
  }
#else
  uint qa[NKC][4];
  #pragma unroll
  for (int kc = 0; kc < NKC; kc++) {
    const int c = kc * 16 + 2 * tq;
    qa[kc][0] = W32(vs, r0, c);
    qa[kc][1] = W32(vs, r0 + 8, c);
    qa[kc][2] = W32(vs, r0, c + 8);
    qa[kc][3] = W32(vs, r0 + 8, c + 8);
  }
#endif

  float o[NON][4];
  #pragma unroll
  for (int n = 0; n < NON; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0, 0};
  const int qi0 = q0 + r0, qi1 = qi0 + 8;
  const int k_first = MMA_PART * kpart;
  const int kv_end = min(SDPA_KV_END, k_first + kpart);

  for (int k0 = k_first; k0 < kv_end; k0 += BK) {
    const int kn = min(BK, lk - k0);
    if (MMA_BATCH && vec) {
      uint4 kbuf[LPT(BK)], vbuf[LPT(BK)];
      LOAD_U4(kbuf, BK, kb + k0 * kstride, kstride, kn);
      LOAD_U4(vbuf, BK, vb + k0 * kstride, kstride, kn);
      barrier(CLK_LOCAL_MEM_FENCE);   /* the last tile's (or Q's) readers are done */
      STORE_U4(kbuf, BK, ks);
      STORE_U4(vbuf, BK, vs);
    } else {
      barrier(CLK_LOCAL_MEM_FENCE);
      load_tile(ks, kb + k0 * kstride, kstride, BK, kn, d, vec, t);
      load_tile(vs, vb + k0 * kstride, kstride, BK, kn, d, vec, t);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    // S = Q K^T, head-dim chunks outside and 8-key tiles inside: the MMAs
    // that follow one another add into different accumulators, so none
    // waits for the last one's result (with the key tiles inside, the
    // tensor-core f32 kernel spent half its time in such waits on the H200).
    // Tiles wholly past the last key are skipped (uniform) and stay zero.
    float s[NSN][4];
    #pragma unroll
    for (int j = 0; j < NSN; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0;
    #pragma unroll
    for (int kc = 0; kc < NKC; kc++) {
#if MMA_DTYPE == 0
      const int c = kc * 8 + tq;
#if QRAW || QLOCAL
      uint qa_[4], qs_[4];
#if QRAW
      #pragma unroll
      for (int u = 0; u < 4; u++) SPLIT(as_float(qw[kc][u]), qa_[u], qs_[u]);
#else
      SPLIT(as_float(W32(qt_, r0, c)), qa_[0], qs_[0]);
      SPLIT(as_float(W32(qt_, r0 + 8, c)), qa_[1], qs_[1]);
      SPLIT(as_float(W32(qt_, r0, c + 4)), qa_[2], qs_[2]);
      SPLIT(as_float(W32(qt_, r0 + 8, c + 4)), qa_[3], qs_[3]);
#endif
#else
      const uint *qa_ = qa[kc], *qs_ = qs[kc];
#endif
      uint kbig[NSN][2], ksmall[NSN][2];
      #pragma unroll
      for (int j = 0; j < NSN; j++) {
        SPLIT(as_float(W32(ks, j * 8 + g, c)), kbig[j][0], ksmall[j][0]);
        SPLIT(as_float(W32(ks, j * 8 + g, c + 4)), kbig[j][1], ksmall[j][1]);
      }
      // The three products of the split, the small terms first.
      #pragma unroll
      for (int j = 0; j < NSN; j++)
        if (j * 8 < kn) MMA_B(s[j], qs_, kbig[j]);
      #pragma unroll
      for (int j = 0; j < NSN; j++)
        if (j * 8 < kn) MMA_B(s[j], qa_, ksmall[j]);
      #pragma unroll
      for (int j = 0; j < NSN; j++)
        if (j * 8 < kn) MMA_B(s[j], qa_, kbig[j]);
#else
      const int c = kc * 16 + 2 * tq;
      #pragma unroll
      for (int j = 0; j < NSN; j++) {
        if (j * 8 >= kn) continue;
        const uint kb0 = W32(ks, j * 8 + g, c), kb1 = W32(ks, j * 8 + g, c + 8);
        MMA(s[j], qa[kc][0], qa[kc][1], qa[kc][2], qa[kc][3], kb0, kb1);
      }
#endif
    }

    const int plain = MMA_TILE_PLAIN(k0);
    int resc;   /* always 1 in this kernel */
    const float2 alpha = softmax_tile(s, m_run, l_run, k0, qi0, qi1, tq, lq, lk, causal,
                                      mask_kind, mask, mbase, mqs, scale2, plain, &resc);
    #pragma unroll
    for (int n = 0; n < NON; n++)
      o[n][0] *= alpha.x, o[n][1] *= alpha.x, o[n][2] *= alpha.y, o[n][3] *= alpha.y;

#if MMA_DTYPE == 0
    // P V over 8-key chunks. The lane's S values are keys 2tq and 2tq + 1 of
    // a chunk; as TF32 A columns tq and tq + 4 they stand for those keys, so
    // B's rows tq and tq + 4 are V's rows 2tq and 2tq + 1. O's column tiles
    // go NG at a time, for the same reason as S's key tiles above.
    #pragma unroll
    for (int j = 0; j < NSN; j++) {
      if (j * 8 >= kn) continue;   /* uniform; those p are all zero */
      uint pb[4], ps[4];
      SPLIT(s[j][0], pb[0], ps[0]);
      SPLIT(s[j][2], pb[1], ps[1]);
      SPLIT(s[j][1], pb[2], ps[2]);
      SPLIT(s[j][3], pb[3], ps[3]);
      const int kr = j * 8 + 2 * tq;
      #pragma unroll
      for (int n0 = 0; n0 < NON; n0 += NG) {
        uint vbig[NG][2], vsmall[NG][2];
        #pragma unroll
        for (int u = 0; u < NG; u++) {
          const int c = (n0 + u) * 8 + g;
          SPLIT(as_float(vs[kr * RS + c]), vbig[u][0], vsmall[u][0]);
          SPLIT(as_float(vs[(kr + 1) * RS + c]), vbig[u][1], vsmall[u][1]);
        }
        #pragma unroll
        for (int u = 0; u < NG; u++) MMA_B(o[n0 + u], ps, vbig[u]);
        #pragma unroll
        for (int u = 0; u < NG; u++) MMA_B(o[n0 + u], pb, vsmall[u]);
        #pragma unroll
        for (int u = 0; u < NG; u++) MMA_B(o[n0 + u], pb, vbig[u]);
      }
    }
#else
    // P V over 16-key chunks: the C fragments of S's 8-key tiles 2pc and
    // 2pc + 1 are the A fragment of chunk pc. One column tile of O at a
    // time here: NG at a time, as in f32, ran 6-15% slower on the H200 at
    // head dim 64 (more registers), and NVIDIA's compiler interleaves the
    // NSPLIT MMAs of neighbouring tiles by itself.
    #pragma unroll
    for (int pc = 0; pc < NPC; pc++) {
      if (pc * 16 >= kn) continue;   /* uniform; those p are all zero */
      // P's A fragment in NSPLIT 16-bit parts, each the remainder of the last.
      float pr[8] = {s[2 * pc][0], s[2 * pc][1], s[2 * pc][2], s[2 * pc][3],
                     s[2 * pc + 1][0], s[2 * pc + 1][1], s[2 * pc + 1][2], s[2 * pc + 1][3]};
      uint pa[NSPLIT][4];
      #pragma unroll
      for (int sp = 0; sp < NSPLIT; sp++) {
        #pragma unroll
        for (int u = 0; u < 4; u++) {
          pa[sp][u] = pack2(pr[2 * u], pr[2 * u + 1]);
          const float2 back = unpack2(pa[sp][u]);
          pr[2 * u] -= back.x, pr[2 * u + 1] -= back.y;
        }
      }
      const int kr = pc * 16 + 2 * tq;
      #pragma unroll
      for (int n = 0; n < NON; n++) {
        const int c = n * 8 + g;
        uint vb[2];
        vb[0] = (uint)vs[kr * RS + c] | ((uint)vs[(kr + 1) * RS + c] << 16);
        vb[1] = (uint)vs[(kr + 8) * RS + c] | ((uint)vs[(kr + 9) * RS + c] << 16);
        #pragma unroll
        for (int sp = 0; sp < NSPLIT; sp++) MMA_B(o[n], pa[sp], vb);
      }
    }
#endif
  }

  if (nsplit > 1) {
    store_part(MMA_PART_BLOCK(part), r0, qn, tq, m_run, row_sums(l_run[0], l_run[1]), o);
    return;
  }
  const float2 li2 = row_scales(l_run[0], l_run[1]);
  const float li0 = li2.x, li1 = li2.y;
  __global elem_t *ob = out + ((b * lq + q0) * hq + h) * (long)d;
  const int vec2 = (d & 1) == 0;   /* pairs of columns start on their own size */
  #pragma unroll
  for (int half_row = 0; half_row < 2; half_row++) {
    const int r = r0 + 8 * half_row;
    if (r >= qn) continue;
    const float li = half_row ? li1 : li0;
    __global elem_t *orow = ob + r * qstride;
    #pragma unroll
    for (int n = 0; n < NON; n++) {
      const int c = n * 8 + 2 * tq;
      if (c >= d) continue;
      const float x0 = o[n][2 * half_row] * li, x1 = o[n][2 * half_row + 1] * li;
#if MMA_DTYPE == 0
      if (vec2) {
        *(__global uint2 *)(orow + c) = (uint2)(as_uint(x0), as_uint(x1));
      } else {
        orow[c] = as_uint(x0);
        if (c + 1 < d) orow[c + 1] = as_uint(x1);
      }
#else
      const uint x = pack2(x0, x1);
      if (vec2) {
        *(__global uint *)(orow + c) = x;
      } else {
        orow[c] = (ushort)x;
        if (c + 1 < d) orow[c + 1] = (ushort)(x >> 16);
      }
#endif
    }
  }
}

#endif  // MMA_PIPE

// sdpa_merge (common.cl) over the parts' f32 blocks, stored as the kernels
// store their rows.
#define store_t elem_t
#define MULADD(a, b, c) fma(a, b, c)
inline void store4(__global elem_t *row, int c0, int d, int vec, float4 x) {
  const float e[4] = {x.s0, x.s1, x.s2, x.s3};
  #pragma unroll
  for (int i = 0; i < 4; i += 2) {
    if (c0 + i >= d) break;
#if MMA_DTYPE == 0
    row[c0 + i] = as_uint(e[i]);
    if (c0 + i + 1 < d) row[c0 + i + 1] = as_uint(e[i + 1]);
#else
    const uint p = pack2(e[i], e[i + 1]);
    row[c0 + i] = (ushort)p;
    if (c0 + i + 1 < d) row[c0 + i + 1] = (ushort)(p >> 16);
#endif
  }
}
SDPA_MERGE_KERNEL(float, float4, BQ, DP)

#endif
