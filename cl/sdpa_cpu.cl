// Scaled dot-product attention for CPU devices: one work-item a group, no
// local memory, no barriers.
//
// A CPU driver runs a work-group's work-items as a loop on one core and
// vectorizes across them only where it can prove the lanes independent;
// the fused kernel (sdpa.cl), shaped for GPUs, reached 5% of the FMA peak
// on PoCL 3.1. Here a work-item owns W = 16 query rows of one (batch entry,
// head), and the rows are the lanes of float16 vectors, so every step is a
// 16-wide FMA whose other operand is one scalar broadcast:
//   Q^T   the tile's queries transposed once into a private [d][W] array,
//         pre-scaled to the log2 domain;
//   S     for a block of W keys: s[j] (one vector: key j against the W rows)
//         = sum over c of Q^T[c] * K[j][c], four keys a pass (S_KEYS);
//   P     online softmax per lane: the block's maxima, the rescale factor,
//         exp2 of each s[j];
//   O^T   for each column c: O^T[c] = O^T[c] * alpha + sum over j of
//         p[j] * V[j][c], kept in a private [d][W] array, four columns a
//         pass (PV_COLS).
// Four at a time keeps eight vector accumulators in registers: sixteen keys
// at once spilled them (PoCL 3.1, AVX2), and the four-key passes took
// 12-19% less time (bench/RESULTS.md, "The CPU kernel's register blocks
// and key chunks").
// K and V blocks are first converted into a private f32 block (rows past
// the keys zeroed), so 16-bit inputs are converted once per element. Masks,
// causality and partial tiles follow common.cl's rules, as the fused kernel
// does; a row that can see no key gets zeros.
//
// Build options: SDPA_DTYPE (0 f32, 1 f16, 2 bf16), CPU_DP (the head dim
// rounded up to a multiple of 16, at most 128: the sizes of the private
// arrays), CPU_TILES (tiles of W queries a work-item takes in turn) and CPU_DIRECT_KEYS (f32 key rows up to this long have their
// whole blocks read where they lie, not copied; src/attention/sdpa_cpu.c
// says why) and CPU_KEY_CHUNK (keys every tile takes before the next
// chunk, a multiple of W). Sizes are arguments.

#ifndef SDPA_DTYPE
#define SDPA_DTYPE 0
#endif
#ifndef CPU_DP
#define CPU_DP 64
#endif
#ifndef CPU_DIRECT_KEYS
#define CPU_DIRECT_KEYS 256
#endif

#ifndef CPU_TILES
#define CPU_TILES 16
#endif
#define W 16
#define BQ (W * CPU_TILES)   /* the tile sizes common.cl's macros name; BQ is W */
#define BK W                 /* again past the group's setup */
#define LOG2E 1.4426950408889634f

#if SDPA_DTYPE == 0
typedef float store_t;
#define LD1(p, i) ((p)[i])
#define LD4(p, i) vload4((i) >> 2, (p))
#define LD16(p, i) vload16((i) >> 4, (p))
#define ST1(p, i, x) ((p)[i] = (x))
#define ST16(p, i, x) vstore16((x), (i) >> 4, (p))
#elif SDPA_DTYPE == 1
typedef half store_t;
#define LD1(p, i) vload_half((i), (p))
#define LD4(p, i) vload_half4((i) >> 2, (p))
#define LD16(p, i) vload_half16((i) >> 4, (p))
#define ST1(p, i, x) vstore_half_rte((x), (i), (p))
#define ST16(p, i, x) vstore_half16_rte((x), (i) >> 4, (p))
#else
typedef ushort store_t;
#define LD1(p, i) bf16_to_f32((p)[i])
#define LD4(p, i) as_float4(convert_uint4(vload4((i) >> 2, (p))) << 16)
#define LD16(p, i) as_float16(convert_uint16(vload16((i) >> 4, (p))) << 16)
#define ST1(p, i, x) ((p)[i] = f32_to_bf16(x))
#define ST16(p, i, x)                                   \
  do {                                                  \
    float xs_[16];                                      \
    vstore16((x), 0, xs_);                              \
    for (int u_ = 0; u_ < 16; u_++) (p)[(i) + u_] = f32_to_bf16(xs_[u_]); \
  } while (0)
#endif

// In-register transpose of 16 vectors of 16: at each step the off-diagonal
// blocks of size b of each pair (i, i + b) trade places; after b = 8, 4,
// 2, 1 element k of vector i is the former element i of vector k.
#define TR_LO(b) (uint16)(TR_M(b, 0), TR_M(b, 1), TR_M(b, 2), TR_M(b, 3), TR_M(b, 4), \
  TR_M(b, 5), TR_M(b, 6), TR_M(b, 7), TR_M(b, 8), TR_M(b, 9), TR_M(b, 10), TR_M(b, 11), \
  TR_M(b, 12), TR_M(b, 13), TR_M(b, 14), TR_M(b, 15))
#define TR_HI(b) (uint16)(TR_N(b, 0), TR_N(b, 1), TR_N(b, 2), TR_N(b, 3), TR_N(b, 4), \
  TR_N(b, 5), TR_N(b, 6), TR_N(b, 7), TR_N(b, 8), TR_N(b, 9), TR_N(b, 10), TR_N(b, 11), \
  TR_N(b, 12), TR_N(b, 13), TR_N(b, 14), TR_N(b, 15))
#define TR_M(b, k) (((k) & (b)) ? 16 + (k) - (b) : (k))
#define TR_N(b, k) (((k) & (b)) ? 16 + (k) : (k) + (b))
#define TR_STEP(x, b)                                                     \
  do {                                                                    \
    _Pragma("unroll") for (int i_ = 0; i_ < 16; i_++) {                  \
      if (i_ & (b)) continue;                                             \
      const float16 a_ = (x)[i_], c_ = (x)[i_ + (b)];                     \
      (x)[i_] = shuffle2(a_, c_, TR_LO(b));                               \
      (x)[i_ + (b)] = shuffle2(a_, c_, TR_HI(b));                         \
    }                                                                     \
  } while (0)
inline void transpose16(float16 *x) {
  TR_STEP(x, 8);
  TR_STEP(x, 4);
  TR_STEP(x, 2);
  TR_STEP(x, 1);
}

// Rows r0 .. r0 + n - 1 of a [rows, d] tensor whose rows are `stride`
// elements apart, as f32 into blk[W][CPU_DP]; rows n .. W - 1 become zeros.
inline void load_block(float *blk, __global const store_t *src, long stride, int n, int d,
                       int vec) {
  for (int r = 0; r < W; r++) {
    float *row = blk + r * CPU_DP;
    if (r >= n) {
      for (int c = 0; c < d; c++) row[c] = 0;
      continue;
    }
    __global const store_t *s = src + r * stride;
    if ((d & 15) == 0) {
      for (int c = 0; c < d; c += 16) vstore16(LD16(s, c), 0, row + c);
    } else if (vec) {
      for (int c = 0; c < d; c += 4) vstore4(LD4(s, c), 0, row + c);
    } else {
      for (int c = 0; c < d; c++) row[c] = LD1(s, c);
    }
  }
}

// Four elements c0.. of an output row of length d (the merge's store).
inline void store4(__global store_t *row, int c0, int d, int vec, float4 x) {
  (void)vec;
  if (c0 + 0 < d) ST1(row, c0 + 0, x.x);
  if (c0 + 1 < d) ST1(row, c0 + 1, x.y);
  if (c0 + 2 < d) ST1(row, c0 + 2, x.z);
  if (c0 + 3 < d) ST1(row, c0 + 3, x.w);
}

// S = Q^T K^T for keys 0 .. JN - 1 of a block whose rows are `stride`
// apart: four keys a pass over the columns, so that eight vector
// accumulators and a column of Q^T stay in registers (sixteen keys at once
// would need twice the sixteen vector registers of an AVX2 core).
#define S_KEYS(src, stride, JN)                                              \
  _Pragma("unroll") for (int j4_ = 0; j4_ < (JN); j4_ += 4) {                \
    float16 a0_ = (float16)(0.0f), a1_ = a0_, a2_ = a0_, a3_ = a0_;          \
    for (int c = 0; c < d; c++) {                                            \
      const float16 qc = vload16(c, qtr);                                    \
      a0_ = MULADD(qc, (float16)((src)[(j4_ + 0) * (stride) + c]), a0_);     \
      a1_ = MULADD(qc, (float16)((src)[(j4_ + 1) * (stride) + c]), a1_);     \
      a2_ = MULADD(qc, (float16)((src)[(j4_ + 2) * (stride) + c]), a2_);     \
      a3_ = MULADD(qc, (float16)((src)[(j4_ + 3) * (stride) + c]), a3_);     \
    }                                                                        \
    s[j4_] = a0_, s[j4_ + 1] = a1_, s[j4_ + 2] = a2_, s[j4_ + 3] = a3_;      \
  }

// O^T[c] = O^T[c] * a + sum over j < JN of P[j] V[j][c]: four columns a
// pass over the keys (eight accumulators again), the rest one at a time.
#define PV_COLS(src, stride, JN)                                             \
  do {                                                                       \
    int c = 0;                                                               \
    for (; c + 4 <= d; c += 4) {                                             \
      float16 o0_ = vload16(c, otr) * a, o1_ = vload16(c + 1, otr) * a;      \
      float16 o2_ = vload16(c + 2, otr) * a, o3_ = vload16(c + 3, otr) * a;  \
      _Pragma("unroll") for (int j = 0; j < (JN); j++) {                     \
        const float16 p_ = s[j];                                             \
        o0_ = MULADD(p_, (float16)((src)[j * (stride) + c + 0]), o0_);       \
        o1_ = MULADD(p_, (float16)((src)[j * (stride) + c + 1]), o1_);       \
        o2_ = MULADD(p_, (float16)((src)[j * (stride) + c + 2]), o2_);       \
        o3_ = MULADD(p_, (float16)((src)[j * (stride) + c + 3]), o3_);       \
      }                                                                      \
      vstore16(o0_, c, otr), vstore16(o1_, c + 1, otr);                      \
      vstore16(o2_, c + 2, otr), vstore16(o3_, c + 3, otr);                  \
    }                                                                        \
    for (; c < d; c++) {                                                     \
      float16 o_ = vload16(c, otr) * a;                                      \
      _Pragma("unroll") for (int j = 0; j < (JN); j++)                       \
        o_ = MULADD(s[j], (float16)((src)[j * (stride) + c]), o_);           \
      vstore16(o_, c, otr);                                                  \
    }                                                                        \
  } while (0)

#define GROUP_ROWS (W * CPU_TILES)
#ifndef CPU_KEY_CHUNK
#define CPU_KEY_CHUNK 256
#endif
// A key split (sdpa.cl says how): part g % nsplit of query tile g / nsplit.
#undef SDPA_GID
#define SDPA_GID(i) SDPA_SPLIT_GID(i)

// One work-item per (batch entry, head, CPU_TILES tiles of W queries, key
// part): SDPA_GROUP_SETUP with groups of one. The arguments are the fused
// kernel's; with nsplit > 1 the rows' partial maxima, sums and outputs go
// to part for sdpa_merge (common.cl).
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void sdpa_cpu(__global const store_t *q, __global const store_t *k, __global const store_t *v,
              __global const uchar *mask, __global store_t *out, long b0, int lq, int lk,
              int hq, int hkv, int d, float scale2, int causal, int mask_kind, int mask_bb,
              int mask_hb, int h0, int qt0, int nsplit, int kpart, __global float *part) {
  float qtr[CPU_DP * W];   /* Q^T, then at the end O^T scaled for the store */
  float oall[CPU_TILES * CPU_DP * W];   /* each tile's O^T */
  float16 mall[CPU_TILES], lall[CPU_TILES];   /* each tile's row maxima and sums */
  float blk[W * CPU_DP];  /* the K block, then the V block */
  float lane[W];
  SDPA_GROUP_SETUP(store_t, 4);
#undef BQ
#define BQ W
  // The group's CPU_TILES tiles of W queries take each chunk of
  // CPU_KEY_CHUNK keys in turn, so that the chunk's K and V, read by each
  // tile, stay in this core's caches however long the keys are
  // (consecutive groups are other batch entries); a tile's O^T, maxima and
  // sums wait in oall, mall and lall for the next chunk.
  const int g_q0 = q0, g_qn = qn;
  __global const store_t *g_qb = qb;
  const int ntiles = min(CPU_TILES, (g_qn + W - 1) / W);
  for (int tile = 0; tile < ntiles; tile++) {
    for (int c = 0; c < d; c++) vstore16((float16)(0.0f), tile * CPU_DP + c, oall);
    mall[tile] = (float16)(-INFINITY);
    lall[tile] = (float16)(0.0f);
  }
  const int k_first = SDPA_PART * kpart;
  const int k_last = k_first + min(kpart, lk - k_first);
  for (int kc = k_first; kc < k_last; kc += CPU_KEY_CHUNK) {
  for (int tile = 0; tile < ntiles; tile++) {
  const int q0 = g_q0 + tile * W, qn = min(W, g_qn - tile * W);
  __global const store_t *qb = g_qb + (long)tile * W * qstride;
  const int kv_end = min(min(SDPA_KV_END, k_last), kc + CPU_KEY_CHUNK);
  if (kc >= kv_end) continue;   /* causal: no key of the chunk for this tile */

  if ((d & 15) == 0) {
    // 16 columns of the 16 rows at a time, transposed in registers
    for (int c0 = 0; c0 < d; c0 += 16) {
      float16 x[16];
      #pragma unroll
      for (int r = 0; r < W; r++) x[r] = r < qn ? LD16(qb + r * qstride, c0) : (float16)(0.0f);
      transpose16(x);
      #pragma unroll
      for (int c = 0; c < 16; c++) vstore16(x[c] * scale2, c0 + c, qtr);
    }
  } else {
    for (int r = 0; r < W; r++) {
      __global const store_t *row = qb + r * qstride;
      for (int c = 0; c < d; c++) qtr[c * W + r] = r < qn ? LD1(row, c) * scale2 : 0.0f;
    }
  }
  float *otr = oall + tile * CPU_DP * W;
  float16 m = mall[tile], l = lall[tile];
  const int16 qi = (int16)(q0) + (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);

  for (int j0 = kc; j0 < kv_end; j0 += W) {
    const int jn = min(W, kv_end - j0);
    // A whole block of keys that a key-padding mask hides from every row
    // (the padding of a short context) is skipped: its exponents would all
    // be 0, leaving m, l and O^T as they are, bit for bit (finite values).
    if (mask_kind == 1 && mqs == 0 && jn == W &&
        !any(vload16(0, mask + mbase + j0) != (uchar16)(0)))
      continue;
    float16 s[W];
#if SDPA_DTYPE == 0
    // f32 needs no conversion: a whole block of a short key row is read
    // where it lies
    if (jn == W && lk <= CPU_DIRECT_KEYS) {
      __global const float *kr = kb + j0 * kstride;
      S_KEYS(kr, kstride, W);
    } else
#endif
    {
      load_block(blk, kb + j0 * kstride, kstride, jn, d, vec);
      // the end of a key row, half a block or less: half the work
      if (jn <= W / 2) {
        S_KEYS(blk, CPU_DP, W / 2);
        #pragma unroll
        for (int j = W / 2; j < W; j++) s[j] = (float16)(0.0f);
      } else {
        S_KEYS(blk, CPU_DP, W);
      }
    }
    // Entries no row may see become -inf: past either length, past the
    // causal diagonal, or masked; an additive mask is added.
    if (!SDPA_TILE_PLAIN(j0)) {
      for (int j = 0; j < W; j++) {
        const int kj = j0 + j;
        const int16 seen = (qi < (int16)(lq)) & (int16)(kj < lk ? -1 : 0) &
                           (causal ? ((int16)(kj) <= qi) : (int16)(-1));
        float16 x = select((float16)(-INFINITY), s[j], seen);
        if (mask_kind && mqs == 0 && kj < lk) {
          // one mask row for every query (a key-padding mask): one entry
          // for all the lanes, not one a lane
          if (mask_kind == 1) {
            if (!mask[mbase + kj]) x = (float16)(-INFINITY);
          } else {
            // fma as the lanes' path below, so that both round alike: the
            // call equals, bit for bit, the one with the mask written out
            const float16 add = (float16)(LD1((__global const store_t *)mask, mbase + kj));
            x = select((float16)(-INFINITY), fma(add, (float16)(LOG2E), x), seen);
          }
        } else if (mask_kind && mqs != 0) {
          vstore16(x, 0, lane);
          for (int r = 0; r < W; r++) {
            const int qr = q0 + r;
            if (!SDPA_IN_RANGE(qr, kj)) continue;
            if (mask_kind == 1) {
              if (!mask[SDPA_MASK_AT(qr, kj)]) lane[r] = -INFINITY;
            } else {
              lane[r] = fma(LD1((__global const store_t *)mask, SDPA_MASK_AT(qr, kj)), LOG2E,
                            lane[r]);
            }
          }
          x = vload16(0, lane);
        }
        s[j] = x;
      }
    }
    float16 mb = m;
    #pragma unroll
    for (int j = 0; j < W; j++) mb = fmax(mb, s[j]);
    // A row with nothing to see yet keeps -inf; its exponents then use 0,
    // so that exp2(-inf) = 0 instead of NaN.
    const float16 mu = select(mb, (float16)(0.0f), isequal(mb, (float16)(-INFINITY)));
    const float16 a = exp2(m - mu);
    float16 psum = (float16)(0.0f);
    #pragma unroll
    for (int j = 0; j < W; j++) {
      // keys past the block's end are -inf: their exponent is 0, uncomputed
      if (j < jn) {
        s[j] = exp2(s[j] - mu);
        psum += s[j];
      } else {
        s[j] = (float16)(0.0f);
      }
    }
    l = MULADD(l, a, psum);
    m = mb;
#if SDPA_DTYPE == 0
    if (jn == W && lk <= CPU_DIRECT_KEYS) {
      __global const float *vr = vb + j0 * kstride;
      PV_COLS(vr, kstride, W);
    } else
#endif
    {
      load_block(blk, vb + j0 * kstride, kstride, jn, d, vec);
      if (jn <= W / 2) {
        PV_COLS(blk, CPU_DP, W / 2);
      } else {
        PV_COLS(blk, CPU_DP, W);
      }
    }
  }
  mall[tile] = m;
  lall[tile] = l;
  }
  }

  for (int tile = 0; tile < ntiles; tile++) {
  const int q0 = g_q0 + tile * W, qn = min(W, g_qn - tile * W);
  const float *otr = oall + tile * CPU_DP * W;
  const float16 m = mall[tile], l = lall[tile];
  if (nsplit > 1) {
    __global float *pb = part + (((long)get_group_id(0) * get_num_groups(1) + get_group_id(1)) *
                                     get_num_groups(2) + get_group_id(2)) *
                                    (GROUP_ROWS * (2 + CPU_DP));
    const int r0 = tile * W;
    vstore16(m, 0, lane);
    for (int r = 0; r < qn; r++) pb[r0 + r] = lane[r];
    vstore16(l, 0, lane);
    for (int r = 0; r < qn; r++) pb[GROUP_ROWS + r0 + r] = lane[r];
    for (int r = 0; r < qn; r++) {
      __global float *o = pb + 2 * GROUP_ROWS + (r0 + r) * CPU_DP;
      for (int c = 0; c < d; c++) o[c] = otr[c * W + r];
      for (int c = d; c < CPU_DP; c++) o[c] = 0;
    }
    continue;
  }
  const float16 li = select((float16)(1.0f) / l, (float16)(0.0f), isequal(l, (float16)(0.0f)));
  __global store_t *ob = out + ((b * lq + q0) * hq + h) * (long)d;
  if ((d & 15) == 0) {
    for (int c0 = 0; c0 < d; c0 += 16) {
      float16 x[16];
      #pragma unroll
      for (int c = 0; c < 16; c++) x[c] = vload16(c0 + c, otr) * li;
      transpose16(x);
      for (int r = 0; r < qn; r++) ST16(ob + r * qstride, c0, x[r]);
    }
  } else {
    for (int c = 0; c < d; c++) vstore16(vload16(c, otr) * li, c, qtr);
    for (int r = 0; r < qn; r++)
      for (int c = 0; c < d; c++) ST1(ob + r * qstride, c, qtr[c * W + r]);
  }
  }
}

SDPA_MERGE_KERNEL(float, float4, GROUP_ROWS, CPU_DP)
