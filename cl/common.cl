// Shared by every tabcl program; prepended by the host before the program's
// own source. The host also defines, from the device's capabilities:
//   TABCL_HAS_FP64, TABCL_VENDOR_NVIDIA/AMD/INTEL, TABCL_IS_CPU,
//   TABCL_MAX_WG (max work-group size), TABCL_LOCAL_MEM (bytes),
//   TABCL_HAS_FMA (CL_FP_FMA in the device's single FP config).
#ifndef TABCL_HAS_FP64
#define TABCL_HAS_FP64 0
#endif

// Clang on x86 (PoCL) warns at each call passing a 512-bit vector (float16,
// ulong8) without AVX-512 that this "changes the ABI", a hazard only when
// linking code built for other CPU features; a kernel and the driver's
// builtins are one module compiled for one CPU, so this one warning is off.
#if defined(__clang__) && defined(__x86_64__)
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#ifndef TABCL_HAS_FMA
#define TABCL_HAS_FMA 1
#endif

// a * b + c for the kernels' sums of products. fma() must round once, so
// a device without the instruction (CL_FP_FMA unset: Mesa 22.3's llvmpipe)
// runs a software routine for it, 200-350x slower than mad() there
// (cl-probe's FMA figure, bench/history/2026-11-to-12.md); mad() lets the device use its
// multiply and add. Where the instruction is, fma() as before.
#if TABCL_HAS_FMA
#define MULADD(a, b, c) fma(a, b, c)
#else
#define MULADD(a, b, c) mad(a, b, c)
#endif
#if TABCL_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

typedef ulong u64;
typedef uint u32;
typedef uchar u8;

// bf16, the high half of an f32 (sdpa.cl and sdpa_gemm.cl store tensors in
// it): widening is a shift; narrowing rounds to nearest even and keeps NaNs
// quiet, as the host's tabcl__f32_to_bf16 (src/runtime/half.c).
inline float bf16_to_f32(ushort u) { return as_float((uint)u << 16); }
inline ushort f32_to_bf16(float f) {
  uint u = as_uint(f);
  if (isnan(f)) return (ushort)((u >> 16) | 0x40u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}

// ---- attention: the grid and the masking rules ----
// The portable kernel (sdpa.cl) and the tensor-core one (sdpa_mma.cl) run
// on the same grid (src/attention/sdpa_grid.c) and must agree on what a
// query may attend; sdpa_gemm.cl's softmax applies the same mask. These
// macros are that one definition. They expand inside the kernels and use
// the kernels' own names: the arguments b0, h0, qt0, q, k, v, lq, lk, hq,
// hkv, d, causal, mask_kind (0 none, 1 bool, 2 additive), mask_bb (the
// mask's batch extent is 1), mask_hb (bit 0: its head extent is 1; bit 1:
// its query extent is 1, a runtime flag folded here so that the kernels'
// arguments stay as they are) and the tile sizes BQ (queries) and BK (keys).

// Elements between the query rows of a mask: 0 when one row serves all.
#define SDPA_MASK_QSTRIDE ((mask_hb & 2) ? 0L : (long)lk)
// Where (batch entry b, query head h) starts in a mask [B or 1, Hq or 1, Lq or 1, Lk].
#define SDPA_MASK_BASE(b, h)                                                      \
  (((mask_bb ? 0 : (b)) * ((mask_hb & 1) ? 1 : hq) + ((mask_hb & 1) ? 0 : (h))) * \
   ((mask_hb & 2) ? 1L : (long)lq) * lk)

// Declares the work-group's place in the grid. Dims 0, 1 and 2 are batch
// entries, heads and query tiles, from b0, h0 and qt0 (the batch, the only
// large extent, is in dim 0: some devices allow only 65535 groups in dims 1
// and 2, so the host splits those). Group ids need no division (oclgrind
// cannot follow the `freeze` LLVM adds to a division paired with a
// remainder). Declared: b, h, qt; kh, the key/value head; q0 and qn, the
// tile's first query and its number of queries; qstride and kstride, the
// elements between rows of Q and of K/V; vec, whether d is a multiple of VW
// (rows can move VW elements at a time); qb, kb and vb, the tile's rows of
// Q and the head's of K and V (elements of type T); mbase, SDPA_MASK_BASE
// of (b, h) when there is a mask, and mqs, SDPA_MASK_QSTRIDE.
#define SDPA_GROUP_SETUP(T, VW)                                        \
  const long b = b0 + (long)SDPA_GID(0);                               \
  const int h = h0 + (int)SDPA_GID(1);                                 \
  const int qt = qt0 + SDPA_QT_ORDER((int)SDPA_GID(2));                \
  const int kh = h / (hq / hkv);                                       \
  const int q0 = qt * BQ;                                              \
  const int qn = min(BQ, lq - q0);                                     \
  const long qstride = (long)hq * d, kstride = (long)hkv * d;          \
  const int vec = (d & ((VW) - 1)) == 0;                               \
  __global const T *qb = q + ((b * lq + q0) * hq + h) * (long)d;       \
  __global const T *kb = k + (b * lk * hkv + kh) * (long)d;            \
  __global const T *vb = v + (b * lk * hkv + kh) * (long)d;            \
  const long mqs = SDPA_MASK_QSTRIDE;                                  \
  long mbase = 0;                                                      \
  if (mask_kind) mbase = SDPA_MASK_BASE(b, h)

// The launch's query tile of group id g in dim 2: in order here; a kernel
// may redefine it to another order of the same tiles (sdpa_mma.cl).
#define SDPA_QT_ORDER(g) (g)
// The group's id in dim i: its own here; a kernel may redefine it to
// another one-to-one map of the launch's groups (sdpa_mma.cl).
#define SDPA_GID(i) get_group_id(i)
// A key split's groups (sdpa.cl, sdpa_cpu.cl; the kernel has an argument
// nsplit): dim 2 holds query tiles x nsplit parts, part g % nsplit of
// query tile g / nsplit. Such a kernel defines SDPA_GID as SDPA_SPLIT_GID.
#define SDPA_SPLIT_GID(i) ((i) == 2 ? get_group_id(2) / (uint)nsplit : get_group_id(i))
// The group's key part: dim 2's id less its query tile's first; written
// so, not as a remainder beside the division above (oclgrind cannot follow
// the `freeze` LLVM adds to such a pair).
#define SDPA_PART ((int)(get_group_id(2) - get_group_id(2) / (uint)nsplit * (uint)nsplit))

// Top-left aligned causality: no row of the query tile sees keys past its
// last query, so the pass over the keys ends here.
#define SDPA_KV_END (causal ? min(lk, q0 + qn) : lk)
// Whether the key tile from k0 needs no per-entry test: no mask, wholly
// inside both lengths and, if causal, wholly at or below the diagonal.
#define SDPA_TILE_PLAIN(k0) \
  (mask_kind == 0 && (k0) + BK <= lk && q0 + BQ <= lq && (!causal || (k0) + BK <= q0 + 1))
// Whether query qi may see key kj before the mask: inside both lengths and
// not past the causal diagonal. Then a boolean mask's entry decides, and an
// additive one's is added; SDPA_MASK_AT is that entry's index (mbase and
// mqs as SDPA_GROUP_SETUP declares them).
#define SDPA_IN_RANGE(qi, kj) ((qi) < lq && (kj) < lk && (!causal || (kj) <= (qi)))
#define SDPA_MASK_AT(qi, kj) (mbase + (long)(qi) * mqs + (kj))

// The merge of a split's key parts (sdpa.cl, sdpa_cpu.cl; the key split in
// src/attention/sdpa_split.c): each group of the split launch left ROWS
// maxima, ROWS sums and ROWS x COLS unnormalised outputs (type R) in
// `part`, one block a group in the order of the groups' linear ids, the
// parts of a query tile side by side. One work-item per output row and
// four columns rescales the parts to the largest of their maxima and
// divides by their rescaled sums, as the unsplit kernels divide by their
// sum (a row that attends nothing has sum 0 and gets zeros). The split
// launch's groups were nb x nh x (query tiles x nsplit parts); the merge's
// grid is (nb x ROWS x COLS / 4, nh, query tiles), exactly, so that no
// index needs a division by a size. The including file defines store_t,
// MULADD and store4(row, c0, d, vec, x).
#define SDPA_MERGE_KERNEL(R, R4, ROWS, COLS)                                          \
  __kernel void sdpa_merge(__global const R *part, __global store_t *out, long b0, int lq, \
                           int hq, int d, int h0, int qt0, int nsplit) {                 \
    const int per = (ROWS) * ((COLS) / 4);                                                \
    const int x = (int)get_global_id(0), bl = x / per, rc = x - bl * per;                \
    const int r = rc / ((COLS) / 4), c4 = rc - r * ((COLS) / 4);                         \
    const int hl = (int)get_global_id(1), qtl = (int)get_global_id(2);                   \
    const int qi = (qt0 + qtl) * (ROWS) + r;                                              \
    if (qi >= lq || c4 * 4 >= d) return;                                                  \
    const long b = b0 + bl;                                                               \
    const int h = h0 + hl;                                                                \
    const long blk = (long)(ROWS) * (2 + (COLS));                                         \
    const long gq = ((long)bl * get_global_size(1) + hl) * get_global_size(2) + qtl;      \
    __global const R *p0 = part + gq * nsplit * blk;                                      \
    R mx = -INFINITY;                                                                     \
    for (int s = 0; s < nsplit; s++) mx = fmax(mx, p0[s * blk + r]);                      \
    const R mu = mx == -INFINITY ? (R)0 : mx;                                             \
    R l = 0;                                                                              \
    R4 o = (R4)(0);                                                                       \
    for (int s = 0; s < nsplit; s++) {                                                    \
      __global const R *ps = p0 + s * blk;                                                \
      const R a = exp2(ps[r] - mu);                                                       \
      l = MULADD(ps[(ROWS) + r], a, l);                                                   \
      o = MULADD((R4)(a), vload4(0, ps + 2 * (ROWS) + r * (COLS) + c4 * 4), o);           \
    }                                                                                     \
    const R li = l > 0 ? (R)1 / l : (R)0;                                                 \
    store4(out + ((b * lq + qi) * hq + h) * (long)d, c4 * 4, d, (d & 3) == 0, o * li);     \
  }
