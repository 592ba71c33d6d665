// The kernels of the CLBlast attention path (src/attention/sdpa_clblast.c)
// beside its two GEMMs: the softmax between them, and the conversions of
// 16-bit tensors to and from the f32 the GEMMs run in.
//
// Build options: SM_DTYPE (0 f32, 1 f16, 2 bf16, 3 f64: the tensors' dtype;
// scores are f64 for f64 and f32 otherwise), SM_WG (work-group size, a
// power of two).

// Defaults so the program also builds without options (tabcl_program_prepare).
#ifndef SM_DTYPE
#define SM_DTYPE 0
#endif
#ifndef SM_WG
#define SM_WG 64
#endif

#if SM_DTYPE == 3
typedef double real;
typedef double store_t;
#else
typedef float real;
#if SM_DTYPE == 0
typedef float store_t;
#elif SM_DTYPE == 1
typedef half store_t;
#else
typedef ushort store_t;
#endif
#endif

#if SM_DTYPE == 0 || SM_DTYPE == 3
#define LD1(p, i) ((real)(p)[i])
#define ST1(p, i, x) ((p)[i] = (x))
#elif SM_DTYPE == 1
#define LD1(p, i) vload_half((i), (p))
#define ST1(p, i, x) vstore_half_rte((x), (i), (p))
#else
// bf16 through common.cl's bf16_to_f32 and f32_to_bf16.
#define LD1(p, i) bf16_to_f32((p)[i])
#define ST1(p, i, x) ((p)[i] = f32_to_bf16(x))
#endif

inline real wg_reduce(__local real *red, real x, int is_max) {
  const int t = (int)get_local_id(0);
  red[t] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = SM_WG / 2; w > 0; w >>= 1) {
    if (t < w) red[t] = is_max ? fmax(red[t], red[t + w]) : red[t] + red[t + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const real r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // red is reused by the next reduction
  return r;
}

// One work-group per score row of the scores [nb, hq, lq, lk]: dims 0, 1, 2
// are (batch entry, head, query), so the batch is in dim 0 (some devices
// allow only 65535 groups in dims 1 and 2; the host splits those at h0, i0).
// Batch entry i of the launch is b0 + i of the mask.
// Each row becomes softmax(scale * s + mask), with masked keys (false, -inf,
// causality) at 0 and a row with no attendable key all 0.
__kernel __attribute__((reqd_work_group_size(SM_WG, 1, 1)))
void sdpa_softmax(__global real *s, __global const uchar *mask, long b0, int lq, int lk,
                  int hq, real scale, int causal, int mask_kind, int mask_bb, int mask_hb,
                  int h0, int i0) {
  __local real red[SM_WG];
  const int t = (int)get_local_id(0);
  // Group ids need no division (oclgrind cannot follow the `freeze` LLVM
  // adds to a division paired with a remainder).
  const int bi = (int)get_group_id(0);
  const int h = h0 + (int)get_group_id(1);
  const int i = i0 + (int)get_group_id(2);
  const long b = b0 + bi;
  const long row = ((long)bi * hq + h) * lq + i;
  __global real *sr = s + row * lk;
  long mrow = 0;
  if (mask_kind) mrow = SDPA_MASK_BASE(b, h) + (long)i * SDPA_MASK_QSTRIDE;
  const int lim = causal ? min(lk, i + 1) : lk;
  real mx = -INFINITY;
  for (int j = t; j < lk; j += SM_WG) {
    real x = sr[j] * scale;
    int ok = j < lim;
    if (ok && mask_kind == 1) ok = mask[mrow + j] != 0;
    else if (ok && mask_kind == 2) x += LD1((__global const store_t *)mask, mrow + j);
    x = ok ? x : (real)(-INFINITY);
    sr[j] = x;
    mx = fmax(mx, x);
  }
  mx = wg_reduce(red, mx, 1);
  const real mu = mx == -INFINITY ? (real)0 : mx;
  real sum = 0;
  for (int j = t; j < lk; j += SM_WG) {
    const real p = exp(sr[j] - mu);
    sr[j] = p;
    sum += p;
  }
  sum = wg_reduce(red, sum, 0);
  const real inv = sum > 0 ? (real)1 / sum : (real)0;
  for (int j = t; j < lk; j += SM_WG) sr[j] *= inv;
}

__kernel void sdpa_widen(__global const store_t *src, long off, __global float *dst, long n) {
  const long i = (long)get_global_id(0);
  if (i < n) dst[i] = LD1(src, off + i);
}

__kernel void sdpa_narrow(__global const float *src, __global store_t *dst, long off, long n) {
  const long i = (long)get_global_id(0);
  if (i < n) ST1(dst, off + i, src[i]);
}
