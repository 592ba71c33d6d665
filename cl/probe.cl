// Kernels cl-probe uses to measure the device: copy bandwidth and fp32 FMA
// throughput, and one that checks the device adds correctly.

__kernel void probe_copy(__global const float4 *src, __global float4 *dst, ulong n) {
  size_t i = get_global_id(0);
  if (i < n) dst[i] = src[i];
}

// Each work-item runs independent FMA chains so the pipeline stays full;
// the result depends on every step so no compiler can drop them.
__kernel void probe_fma(__global float *out, float a, float b, int iters) {
  float x0 = (float)get_global_id(0) * 1e-7f, x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
  float x4 = x0 + 4.0f, x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f;
  for (int i = 0; i < iters; i++) {
    x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); x3 = fma(x3, a, b);
    x4 = fma(x4, a, b); x5 = fma(x5, a, b); x6 = fma(x6, a, b); x7 = fma(x7, a, b);
    x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); x3 = fma(x3, a, b);
    x4 = fma(x4, a, b); x5 = fma(x5, a, b); x6 = fma(x6, a, b); x7 = fma(x7, a, b);
  }
  out[get_global_id(0)] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
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
