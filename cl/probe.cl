// Kernels cl-probe uses to measure the device: copy bandwidth and fp32 FMA
// throughput, and one that checks the device adds correctly.

__kernel void probe_copy(__global const float4 *src, __global float4 *dst, ulong n) {
  size_t i = get_global_id(0);
  if (i < n) dst[i] = src[i];
}

// Each work-item runs independent multiply-add chains so the pipeline stays
// full; the result depends on every step so no compiler can drop them.
// MULADD (common.cl) is fma where the device has the instruction, else mad:
// the figure is the rate the kernels' own sums of products can reach.
__kernel void probe_fma(__global float *out, float a, float b, int iters) {
  float x0 = (float)get_global_id(0) * 1e-7f, x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
  float x4 = x0 + 4.0f, x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f;
  for (int i = 0; i < iters; i++) {
    x0 = MULADD(x0, a, b); x1 = MULADD(x1, a, b); x2 = MULADD(x2, a, b); x3 = MULADD(x3, a, b);
    x4 = MULADD(x4, a, b); x5 = MULADD(x5, a, b); x6 = MULADD(x6, a, b); x7 = MULADD(x7, a, b);
    x0 = MULADD(x0, a, b); x1 = MULADD(x1, a, b); x2 = MULADD(x2, a, b); x3 = MULADD(x3, a, b);
    x4 = MULADD(x4, a, b); x5 = MULADD(x5, a, b); x6 = MULADD(x6, a, b); x7 = MULADD(x7, a, b);
  }
  out[get_global_id(0)] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

// The same for a CPU, where work-items run one after another in a thread
// and a compiler vectorizes the innermost loop (here the dependent chain,
// which it cannot): eight independent float16 chains, one vector register
// each with AVX-512, so the FMA units see vector work. 16 FMAs an
// iteration per work-item on each of 16 lanes.
__kernel void probe_fma16(__global float *out, float a, float b, int iters) {
  float16 x0 = (float16)((float)get_global_id(0) * 1e-7f) +
               (float16)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f,
                         11.0f, 12.0f, 13.0f, 14.0f, 15.0f) * 1e-3f;
  float16 x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f, x4 = x0 + 4.0f, x5 = x0 + 5.0f;
  float16 x6 = x0 + 6.0f, x7 = x0 + 7.0f;
  const float16 va = (float16)(a), vb = (float16)(b);
  for (int i = 0; i < iters; i++) {
    x0 = MULADD(x0, va, vb); x1 = MULADD(x1, va, vb);
    x2 = MULADD(x2, va, vb); x3 = MULADD(x3, va, vb);
    x4 = MULADD(x4, va, vb); x5 = MULADD(x5, va, vb);
    x6 = MULADD(x6, va, vb); x7 = MULADD(x7, va, vb);
    x0 = MULADD(x0, va, vb); x1 = MULADD(x1, va, vb);
    x2 = MULADD(x2, va, vb); x3 = MULADD(x3, va, vb);
    x4 = MULADD(x4, va, vb); x5 = MULADD(x5, va, vb);
    x6 = MULADD(x6, va, vb); x7 = MULADD(x7, va, vb);
  }
  const float16 s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
  out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7 + s.s8 + s.s9 +
                          s.sa + s.sb + s.sc + s.sd + s.se + s.sf;
}

__kernel void probe_iota(__global ulong *out, ulong base, ulong n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = base + (ulong)i * (ulong)i;
}

// Steps an LCG n times in one work-item. The host steps the same LCG to
// find how many iterations ran: a driver may end a work-item's loops early
// and silently (Mesa 22.3's llvmpipe after 65,535 iterations in all). The
// chain keeps a compiler from replacing the loop by its count.
__kernel void probe_loops(__global uint *out, uint n) {
  uint x = 12345u;
  for (uint i = 0; i < n; i++) x = x * 1664525u + 1013904223u;
  out[0] = x;
}
