// Fused scaled dot-product attention (flash-attention style).
//
// A work-group of SDPA_NT work-items owns SDPA_BQ queries of one (batch,
// head). Key and value tiles of SDPA_BK rows pass through one local buffer
// (K first, then V into the same space) so that the query tile can stay in
// local memory for the whole pass over the keys. Per key tile:
//   1. S = Q K^T: each work-item computes an RQS x RKS register block of S
//      from local memory, four head-dim elements per step (vector loads),
//      and keeps it in registers.
//   2. The softmax runs on S in registers, by every work-item: row maxima
//      are combined through local memory (TKS partial maxima per row), each
//      work-item exponentiates its own block and writes the probabilities
//      transposed ([key][query]) to local memory, while V moves into local
//      memory. Running maxima are kept redundantly (identically) by the TKS
//      work-items of a row; running sums are kept as per-work-item partial
//      sums (all scaled by the same factors) and added up at the end. The
//      earlier serial pass (one work-item per row over the key tile, half
//      the group idle) made short key tiles slow: on the H200 this version
//      runs 64 x 16 tiles at head dim 128 13% faster than that one did.
//   3. O += P V: each work-item owns a block of RQO consecutive queries x
//      (4*CG) columns of the output, rescaled by the row's correction
//      factor first; its P values for one key are one or two vector loads.
// The output is written once at the end. Sizes (batch, lengths, heads, the
// exact head dim) are arguments; only the dtype and the tile shape (which
// includes the head dim rounded up to a multiple of 16) are build options.
//
// Chunks: the K tile may pass through local memory SDPA_KC head-dim columns
// at a time (S accumulates over the chunks) and the V tile SDPA_VK keys at
// a time, so that a long key tile fits beside the Q tile at wide heads: a
// longer key tile gives each work-item a larger register block of S, which
// is more FMAs per local-memory read. By default each is one whole tile:
// on the H200 no chunked shape beat whole tiles (bench/history/2026-11-to-12.md), so
// chunks are reached only through the sdpa.fused.dNN tuning, for other devices.
//
// Build options: SDPA_DTYPE (0 f32, 1 f16, 2 bf16, 3 f64), SDPA_DP, SDPA_BQ,
// SDPA_BK, SDPA_NT, SDPA_TC (work-items across the output's float4 columns),
// SDPA_TKS (work-items across the keys of S), SDPA_KC, SDPA_VK, SDPA_NOPRE.

// Defaults (f32, head dims up to 64) so the program also builds without
// options, as tabcl_program_prepare does.
#ifndef SDPA_DTYPE
#define SDPA_DTYPE 0
#endif
#ifndef SDPA_DP
#define SDPA_DP 64
#define SDPA_BQ 64
#define SDPA_BK 32
#define SDPA_NT 128
#define SDPA_TC 16
#endif
#ifndef SDPA_TKS
#define SDPA_TKS 8
#endif
#ifndef SDPA_KC
#define SDPA_KC SDPA_DP
#endif
#ifndef SDPA_VK
#define SDPA_VK SDPA_BK
#endif
#ifndef SDPA_NOPRE
#define SDPA_NOPRE 0
#endif

#if SDPA_DTYPE == 3
typedef double real;
typedef double4 real4;
typedef double store_t;
#else
typedef float real;
typedef float4 real4;
#if SDPA_DTYPE == 0
typedef float store_t;
#elif SDPA_DTYPE == 1
typedef half store_t;
#else
typedef ushort store_t;
#endif
#endif

#if SDPA_DTYPE == 0 || SDPA_DTYPE == 3
#define LD1(p, i) ((real)(p)[i])
#define LD4(p, i) vload4((i) >> 2, (p))
#define ST1(p, i, x) ((p)[i] = (x))
#define ST4(p, i, x) vstore4((x), (i) >> 2, (p))
#elif SDPA_DTYPE == 1
// 16-bit storage without cl_khr_fp16: only vload_half/vstore_half touch it.
#define LD1(p, i) vload_half((i), (p))
#if TABCL_VENDOR_NVIDIA
// NVIDIA's compiler splits vload_half4 into four 2-byte loads; one 8-byte
// load (LD4's callers pass 4-element-aligned offsets of rows whose length
// is a multiple of 4) and PTX conversions in registers do the same work.
inline float2 half2_bits_to_float2(uint w) {
  float lo, hi;
  __asm__("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
          : "=f"(lo), "=f"(hi) : "r"(w));
  return (float2)(lo, hi);
}
inline float4 ld_half4(__global const half *p, int i) {
  const uint2 w = *(__global const uint2 *)(p + i);
  return (float4)(half2_bits_to_float2(w.x), half2_bits_to_float2(w.y));
}
#define LD4(p, i) ld_half4((p), (i))
#else
#define LD4(p, i) vload_half4((i) >> 2, (p))
#endif
#define ST1(p, i, x) vstore_half_rte((x), (i), (p))
#define ST4(p, i, x) vstore_half4_rte((x), (i) >> 2, (p))
#else
// bf16 through common.cl's bf16_to_f32 and f32_to_bf16.
#define LD1(p, i) bf16_to_f32((p)[i])
#define LD4(p, i) as_float4(convert_uint4(vload4((i) >> 2, (p))) << 16)
#define ST1(p, i, x) ((p)[i] = f32_to_bf16(x))
#define ST4(p, i, x)                              \
  do {                                            \
    real4 x_ = (x);                               \
    vstore4((ushort4)(f32_to_bf16(x_.x), f32_to_bf16(x_.y), f32_to_bf16(x_.z), \
                      f32_to_bf16(x_.w)),         \
            (i) >> 2, (p));                       \
  } while (0)
#endif

#define NT SDPA_NT
#define BQ SDPA_BQ
#define BK SDPA_BK
#define DP SDPA_DP
#define DP4 (DP / 4)
#define TKS SDPA_TKS      /* work-items across the keys of S */
#define RKS (BK / TKS)
#define TQS (NT / TKS)
#define RQS (BQ / TQS)
#define TC SDPA_TC
#define CG (DP4 / TC)     /* float4 output columns per work-item */
#define TQO (NT / TC)
#define KC4 (SDPA_KC / 4) /* float4 columns of a K chunk (a power of two) */
#define NKC (DP / SDPA_KC)
#define VK SDPA_VK        /* keys of a V chunk */
// The Q and K/V tiles have no row padding (which would cost the local memory
// of a 64 x 56 tile at head dim 64 on 48 KiB); instead the float4 column c
// of row r sits at c ^ (r & mask), so the 4 to 8 consecutive rows one warp
// reads in step 1 fall in different banks. Each mask + 1 divides the
// work-items' row stride (TQS for Q, TKS for K), so a work-item's rows all
// share one XOR key; it divides the K chunk's width, so Q's column
// cc * KC4 + c sits at cc * KC4 + (c ^ key); and V's divides TC, so P V's V
// reads only XOR the column within a block of TC.
#define SWM0 ((DP4 % 8) == 0 ? 7 : 3)
#define MIN_(a, b) ((a) < (b) ? (a) : (b))
#define SWQ MIN_(MIN_(SWM0, TQS - 1), KC4 - 1)
#define SWK MIN_(MIN_(SWM0, TKS - 1), KC4 - 1)
#define SWV MIN_(SWM0, TC - 1)
#define RQO (BQ / TQO)
// The key split (a runtime argument, src/attention/sdpa_split.c): group
// (b, h, g) of a launch of nsplit parts takes query tile g / nsplit and key
// part g % nsplit, and leaves its rows' partial results in `part`, a block
// of BQ maxima, BQ sums and BQ x DP unnormalised outputs (in real) for each
// group, in the order of the groups' linear ids; sdpa_merge combines them.
#define PART_BLOCK (BQ * (2 + DP))
#define PART_OF(part, g) ((part) + (long)(g) * PART_BLOCK)
#define PT (BQ + 4)       /* column stride of P, stored transposed [key][query]: float4
                             aligned, and consecutive queries fall in consecutive banks */
#define LOG2E 1.4426950408889634

// Four elements c0..c0+3 of a row of length d, zero past its end. vec: d is
// a multiple of 4, so whole groups are in or out.
inline real4 load4(__global const store_t *row, int c0, int d, int vec) {
  if (vec) return c0 < d ? LD4(row, c0) : (real4)(0);
  real4 x = (real4)(0);
  if (c0 + 0 < d) x.x = LD1(row, c0 + 0);
  if (c0 + 1 < d) x.y = LD1(row, c0 + 1);
  if (c0 + 2 < d) x.z = LD1(row, c0 + 2);
  if (c0 + 3 < d) x.w = LD1(row, c0 + 3);
  return x;
}

inline void store4(__global store_t *row, int c0, int d, int vec, real4 x) {
  if (vec) {
    if (c0 < d) ST4(row, c0, x);
    return;
  }
  if (c0 + 0 < d) ST1(row, c0 + 0, x.x);
  if (c0 + 1 < d) ST1(row, c0 + 1, x.y);
  if (c0 + 2 < d) ST1(row, c0 + 2, x.z);
  if (c0 + 3 < d) ST1(row, c0 + 3, x.w);
}

inline real dot4(real4 a, real4 b, real acc) {
  return MULADD(a.w, b.w, MULADD(a.z, b.z, MULADD(a.y, b.y, MULADD(a.x, b.x, acc))));
}

// Loads rows r0.. of a [rows, d] tile whose rows are `stride` elements apart
// into a local tile of n rows; rows at or past `avail` become zeros.
inline void load_tile(__local real4 *dst, __global const store_t *src, long stride, int n,
                      int avail, int d, int vec, real mul, int t) {
  for (int idx = t; idx < n * DP4; idx += NT) {
    int r = idx / DP4, c = idx - r * DP4;
    real4 x = (real4)(0);
    if (r < avail) x = load4(src + r * stride, c * 4, d, vec) * mul;
    dst[r * DP4 + (c ^ (r & SWQ))] = x;
  }
}

#define KV_K (BK * KC4)   /* float4 groups of a K chunk */
#define KV_V (VK * DP4)   /* and of a V chunk */
#define MAX_(a, b) ((a) > (b) ? (a) : (b))
#define LPT ((MAX_(KV_K, KV_V) + NT - 1) / NT)   /* float4 groups per work-item */

// This work-item's share of a K chunk (float4 columns col0.., W4 of them)
// or a V chunk (all columns) of rows past which `avail` are zero, from
// global memory into registers, and from there into the local tile.
#define FETCH_(src, avail, W4, NG, col0)                                          \
  do {                                                                             \
    _Pragma("unroll") for (int u = 0; u < LPT; u++) {                             \
      const int idx = t + u * NT, r = idx / (W4), c = idx - r * (W4);              \
      pre[u] = (real4)(0);                                                         \
      if (idx < (NG) && r < (avail))                                               \
        pre[u] = load4((src) + r * kstride, ((col0) + c) * 4, d, vec);             \
    }                                                                              \
  } while (0)
#define STORE_(W4, NG, SW)                                                         \
  do {                                                                             \
    _Pragma("unroll") for (int u = 0; u < LPT; u++) {                             \
      const int idx = t + u * NT, r = idx / (W4), c = idx - r * (W4);              \
      if (idx < (NG)) kvs[r * (W4) + (c ^ (r & (SW)))] = pre[u];                    \
    }                                                                              \
  } while (0)
#define FETCH_K(src, avail, cc) FETCH_(src, avail, KC4, KV_K, (cc) * KC4)
#define STORE_K() STORE_(KC4, KV_K, SWK)
#define FETCH_V(src, avail) FETCH_(src, avail, DP4, KV_V, 0)
#define STORE_V() STORE_(DP4, KV_V, SWV)
// SDPA_NOPRE=1: chunks go from global to local memory where they are
// stored, without the registers that hold them in flight (the host sets it
// when a work-item's share is large; see src/sdpa.c).
#define DIRECT_(src, avail, W4, NG, col0, SW)                                      \
  do {                                                                             \
    _Pragma("unroll") for (int u = 0; u < LPT; u++) {                             \
      const int idx = t + u * NT, r = idx / (W4), c = idx - r * (W4);              \
      if (idx < (NG))                                                              \
        kvs[r * (W4) + (c ^ (r & (SW)))] =                                         \
            r < (avail) ? load4((src) + r * kstride, ((col0) + c) * 4, d, vec) : (real4)(0); \
    }                                                                              \
  } while (0)
#if SDPA_NOPRE
#define FILL_K(src, avail, cc) DIRECT_(src, avail, KC4, KV_K, (cc) * KC4, SWK)
#define FILL_V(src, avail) DIRECT_(src, avail, DP4, KV_V, 0, SWV)
#define PREFETCH_K(src, avail, cc) ((void)0)
#define PREFETCH_V(src, avail) ((void)0)
#else
#define FILL_K(src, avail, cc) STORE_K()
#define FILL_V(src, avail) STORE_V()
#define PREFETCH_K(src, avail, cc) FETCH_K(src, avail, cc)
#define PREFETCH_V(src, avail) FETCH_V(src, avail)
#endif

// The end of [lo, hi) once the keys a boolean mask row m hides at its end
// are taken off: lo when it hides them all. 16 entries at a time, then one.
inline int shown_end(__global const uchar *m, int lo, int hi) {
  int e = hi;
  while (e - 16 >= lo && !any(vload16(0, m + e - 16) != (uchar16)(0))) e -= 16;
  while (e > lo && !m[e - 1]) e--;
  return e;
}

// One work-group per (batch entry, head, query tile, key part):
// SDPA_GROUP_SETUP in common.cl, with the query tile from dim 2 divided by
// the parts. The launch covers batch entries b0.., heads h0.. and query
// tiles qt0.. of the buffers; part p takes keys [p * kpart, (p + 1) * kpart).
// With nsplit 1 the group writes its rows to out, else to part.
#undef SDPA_GID
#define SDPA_GID(i) SDPA_SPLIT_GID(i)
// mask: uchar for boolean masks, store_t for additive ones (kind 1 / 2).
__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void sdpa_fused(__global const store_t *q, __global const store_t *k,
                __global const store_t *v, __global const uchar *mask,
                __global store_t *out, long b0, int lq, int lk, int hq, int hkv, int d,
                real scale2, int causal, int mask_kind, int mask_bb, int mask_hb, int h0,
                int qt0, int nsplit, int kpart, __global real *part) {
  __local real4 qs[BQ * DP4];
  __local real4 kvs[MAX_(KV_K, KV_V)];
  __local real4 pst4[BK * PT / 4];
  __local real alpha_s[BQ];
  // Per-row partial maxima, at the end partial sums. Read as scalars: vector
  // reads of values stored as scalars crash oclgrind's --uninitialized.
  __local real red[BQ * TKS];
  __local real *pst = (__local real *)pst4;

  const int t = (int)get_local_id(0);
  SDPA_GROUP_SETUP(store_t, 4);

  load_tile(qs, qb, qstride, BQ, qn, d, vec, scale2, t);

  // Running max and partial sum of this work-item's S rows tq + i * TQS.
  real m_run[RQS], l_run[RQS];
  #pragma unroll
  for (int i = 0; i < RQS; i++) m_run[i] = -INFINITY, l_run[i] = 0;
  real4 acc[RQO][CG];
  #pragma unroll
  for (int i = 0; i < RQO; i++) {
    #pragma unroll
    for (int c = 0; c < CG; c++) acc[i][c] = (real4)(0);
  }

  const int tk = t & (TKS - 1), tq = t / TKS;
  const int kq = tq & SWQ, kk = tk & SWK;  /* XOR keys of this work-item's Q and K rows */
  const int tc = t & (TC - 1), to = t / TC;
  const int k_first = SDPA_PART * kpart;
  int kv_end = min(SDPA_KV_END, k_first + min(kpart, lk - k_first));
  // Keys a key-padding mask hides from every row at the end of the range
  // (a short context's padding) are never read: they would leave m_run,
  // l_run and acc as they are, bit for bit (finite values). Only the
  // range's end moves, not the loop's body: a test in every tile cost the
  // H100 up to 10% (bench/RESULTS.md, "The CPU kernel's register blocks
  // and key chunks").
  if (mask_kind == 1 && mqs == 0 && k_first < kv_end)
    kv_end = shown_end(mask + mbase, k_first, kv_end);

  // Unless SDPA_NOPRE, K and V chunks are read from global memory into
  // registers one phase ahead of their use (V during S = Q K^T, the next K
  // during softmax and P V), so the reads' latency hides behind compute.
#if !SDPA_NOPRE
  real4 pre[LPT];
#endif
  if (k_first < kv_end) PREFETCH_K(kb + k_first * kstride, min(BK, lk - k_first), 0);
  for (int k0 = k_first; k0 < kv_end; k0 += BK) {
    const int kn = min(BK, lk - k0);
    real s[RQS][RKS];
    #pragma unroll
    for (int i = 0; i < RQS; i++) {
      #pragma unroll
      for (int j = 0; j < RKS; j++) s[i][j] = 0;
    }
    // Blocks of TKS keys past the last key are skipped (short sequences
    // leave much of their last tile empty); the test is uniform per block.
    const int nkb = (kn + TKS - 1) / TKS;
    for (int cc = 0; cc < NKC; cc++) {
      barrier(CLK_LOCAL_MEM_FENCE);
      FILL_K(kb + k0 * kstride, kn, cc);
      barrier(CLK_LOCAL_MEM_FENCE);
      if (cc + 1 < NKC) PREFETCH_K(kb + k0 * kstride, kn, cc + 1);
      else PREFETCH_V(vb + k0 * kstride, kn);
      __local const real4 *qc = qs + cc * KC4;
      if (nkb == RKS) {
        for (int c = 0; c < KC4; c++) {
          real4 qv[RQS], kv[RKS];
          #pragma unroll
          for (int i = 0; i < RQS; i++) qv[i] = qc[(tq + i * TQS) * DP4 + (c ^ kq)];
          #pragma unroll
          for (int j = 0; j < RKS; j++) kv[j] = kvs[(tk + j * TKS) * KC4 + (c ^ kk)];
          #pragma unroll
          for (int i = 0; i < RQS; i++) {
            #pragma unroll
            for (int j = 0; j < RKS; j++) s[i][j] = dot4(qv[i], kv[j], s[i][j]);
          }
        }
      } else {
        for (int c = 0; c < KC4; c++) {
          real4 qv[RQS];
          #pragma unroll
          for (int i = 0; i < RQS; i++) qv[i] = qc[(tq + i * TQS) * DP4 + (c ^ kq)];
          #pragma unroll
          for (int j = 0; j < RKS; j++)
            if (j < nkb) {
              const real4 kv = kvs[(tk + j * TKS) * KC4 + (c ^ kk)];
              #pragma unroll
              for (int i = 0; i < RQS; i++) s[i][j] = dot4(qv[i], kv, s[i][j]);
            }
        }
      }
    }
    // Masked entries become -inf; each row's partial maximum goes to red.
    // A plain tile takes every entry as it is: the per-entry tests cost
    // about a tenth of the kernel's instructions on the H200.
    const int plain = SDPA_TILE_PLAIN(k0);
    #pragma unroll
    for (int i = 0; i < RQS; i++) {
      const int r = tq + i * TQS, qi = q0 + r;
      real pm = -INFINITY;
      if (plain) {
        #pragma unroll
        for (int j = 0; j < RKS; j++) pm = fmax(pm, s[i][j]);
      } else {
        #pragma unroll
        for (int j = 0; j < RKS; j++) {
          const int kj = k0 + tk + j * TKS;
          int ok = SDPA_IN_RANGE(qi, kj);
          real x = s[i][j];
          if (ok && mask_kind == 1) ok = mask[SDPA_MASK_AT(qi, kj)] != 0;
          else if (ok && mask_kind == 2)
            x += LD1((__global const store_t *)mask, SDPA_MASK_AT(qi, kj)) * (real)LOG2E;
          s[i][j] = ok ? x : (real)(-INFINITY);
          pm = fmax(pm, s[i][j]);
        }
      }
      red[r * TKS + tk] = pm;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    #pragma unroll
    for (int i = 0; i < RQS; i++) {
      const int r = tq + i * TQS;
      real mx = m_run[i];
      #pragma unroll
      for (int u = 0; u < TKS; u++) mx = fmax(mx, red[r * TKS + u]);
      // A row with nothing attendable yet keeps m = -inf; exponents then use 0
      // so that masked entries give exp2(-inf) = 0 instead of NaN.
      const real mu = mx == -INFINITY ? (real)0 : mx;
      const real a = exp2(m_run[i] - mu);
      real sum = 0;
      #pragma unroll
      for (int j = 0; j < RKS; j++) {
        const real p = exp2(s[i][j] - mu);
        pst[(tk + j * TKS) * PT + r] = p;
        sum += p;
      }
      l_run[i] = l_run[i] * a + sum;
      m_run[i] = mx;
      if (tk == 0) alpha_s[r] = a;
    }
    // The V tile, VK keys at a time; those past the last key are skipped.
    // The first chunk's store needs no barrier before it: the last reads
    // of the K chunk came before the barrier above.
#if VK == BK
    const int nvc = 1;    /* the loop below then compiles to straight code */
#else
    const int nvc = (kn + VK - 1) / VK;
#endif
    for (int vc = 0; vc < nvc; vc++) {
      if (vc > 0) barrier(CLK_LOCAL_MEM_FENCE);
      FILL_V(vb + (k0 + vc * VK) * kstride, kn - vc * VK);
      barrier(CLK_LOCAL_MEM_FENCE);
      if (vc + 1 < nvc) PREFETCH_V(vb + (k0 + (vc + 1) * VK) * kstride, kn - (vc + 1) * VK);
      else if (k0 + BK < kv_end) PREFETCH_K(kb + (k0 + BK) * kstride, min(BK, lk - k0 - BK), 0);
      if (vc == 0) {
        #pragma unroll
        for (int i = 0; i < RQO; i++) {
          const real a = alpha_s[to * RQO + i];
          #pragma unroll
          for (int c = 0; c < CG; c++) acc[i][c] *= a;
        }
      }
      // Keys are used in groups of four; those past the last key have p = 0
      // and V rows of zeros.
      const int nj4 = (min(VK, kn - vc * VK) + 3) / 4;
#if RQO % 4 == 0
      __local const real4 *pc = pst4 + vc * VK * (PT / 4);
#else
      __local const real *pc1 = pst + vc * VK * PT;
#endif
      for (int j4 = 0; j4 < nj4; j4++) {
        #pragma unroll
        for (int jj = 0; jj < 4; jj++) {
          const int j = j4 * 4 + jj;
          real pv[RQO];
#if RQO % 4 == 0
          #pragma unroll
          for (int i4 = 0; i4 < RQO / 4; i4++) {
            const real4 x = pc[j * (PT / 4) + to * (RQO / 4) + i4];
            pv[4 * i4] = x.x, pv[4 * i4 + 1] = x.y, pv[4 * i4 + 2] = x.z, pv[4 * i4 + 3] = x.w;
          }
#else
          #pragma unroll
          for (int i = 0; i < RQO; i++) pv[i] = pc1[j * PT + to * RQO + i];
#endif
          #pragma unroll
          for (int c = 0; c < CG; c++) {
            const real4 vv = kvs[j * DP4 + (tc ^ (j & SWV)) + c * TC];
            #pragma unroll
            for (int i = 0; i < RQO; i++) acc[i][c] = MULADD((real4)(pv[i]), vv, acc[i][c]);
          }
        }
      }
    }
  }

  // No barrier needed before red: it was last read before the last P V.
  // alpha_s, read in P V, takes the rows' maxima for a split after one.
  #pragma unroll
  for (int i = 0; i < RQS; i++) red[(tq + i * TQS) * TKS + tk] = l_run[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (nsplit > 1) {
    #pragma unroll
    for (int i = 0; i < RQS; i++)
      if (tk == 0) alpha_s[tq + i * TQS] = m_run[i];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  __global real *pb = PART_OF(part, ((long)get_group_id(0) * get_num_groups(1) + get_group_id(1)) *
                                        get_num_groups(2) + get_group_id(2));
  __global store_t *ob = out + ((b * lq + q0) * hq + h) * (long)d;
  #pragma unroll
  for (int i = 0; i < RQO; i++) {
    const int r = to * RQO + i;
    if (r >= qn) continue;
    real l = 0;
    #pragma unroll
    for (int u = 0; u < TKS; u++) l += red[r * TKS + u];
    if (nsplit > 1) {
      if (tc == 0) pb[r] = alpha_s[r], pb[BQ + r] = l;
      #pragma unroll
      for (int c = 0; c < CG; c++) vstore4(acc[i][c], 0, pb + 2 * BQ + r * DP + (tc + c * TC) * 4);
      continue;
    }
    const real li = l > 0 ? (real)1 / l : (real)0;
    #pragma unroll
    for (int c = 0; c < CG; c++) store4(ob + r * qstride, (tc + c * TC) * 4, d, vec, acc[i][c] * li);
  }
}

SDPA_MERGE_KERNEL(real, real4, BQ, DP)
