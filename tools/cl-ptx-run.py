"""cl-ptx-run: an attention kernel's PTX, as NVIDIA's OpenCL compiler wrote it
(cl-regs with CL_REGS_SAVE), launched through the CUDA driver (CuPy), so
that Nsight Compute (ncu), which does not see OpenCL launches, can profile
it. Data of shape [B, L, H, D] in f32, f16 or bf16 (the kernel's dtype),
no mask, launched as the library does (dims: batch, heads, query tiles);
prints the median launch time and the relative error of one (batch, head)
against float64 on the same (rounded) inputs.

usage: cl-ptx-run.py PTX KERNEL NT BQ B H L D [causal] [reps] [f32|f16|bf16]
  NT: work-items a group; BQ: queries a group (the kernel's build options)
  e.g. ncu --clock-control none -k sdpa_fused -s 1 -c 1 --set full -o prof \
         python3 tools/cl-ptx-run.py k1.bin sdpa_fused 128 64 4 32 4096 64
"""
import math
import re
import sys
import tempfile

import cupy as cp
import numpy as np

ptx, kname = sys.argv[1], sys.argv[2]
nt, bq, B, H, L, D = (int(x) for x in sys.argv[3:9])
causal = int(sys.argv[9]) if len(sys.argv) > 9 else 0
reps = int(sys.argv[10]) if len(sys.argv) > 10 else 3
dtype = sys.argv[11] if len(sys.argv) > 11 else "f32"
if dtype not in ("f32", "f16", "bf16"):
    sys.exit(f"unknown dtype {dtype}")


def to_device(x):
    """x (float32) in the kernel's element type: f16, bf16 as its top 16
    bits rounded to nearest even (numpy has no bf16), or f32."""
    if dtype == "f16":
        return cp.asarray(x.astype(np.float16))
    if dtype == "bf16":
        u = x.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return cp.asarray(u.astype(np.uint16))
    return cp.asarray(x)


def to_f64(x):
    """A device array of the kernel's element type as float64."""
    h = cp.asnumpy(x)
    if dtype == "bf16":
        return (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return h.astype(np.float64)


# OpenCL's group-id offsets (%envreg0-2) are not set under the CUDA driver: zero.
src = re.sub(r"%envreg[0-9]+", "0", open(ptx).read().replace("\0", ""))
tmp = tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False)
tmp.write(src)
tmp.close()
mod = cp.RawModule(path=tmp.name)
f = mod.get_function(kname)
rng = np.random.default_rng(1)
q, k, v = (to_device(rng.standard_normal((B, L, H, D), dtype=np.float32)) for _ in range(3))
out = to_device(np.full((B, L, H, D), np.nan, dtype=np.float32))   # unwritten stays NaN
mask = cp.zeros(16, dtype=cp.uint8)
scale2 = np.float32(math.log2(math.e) / math.sqrt(D))
grid = (B, H, (L + bq - 1) // bq)
# ..., h0, qt0, then the key split's nsplit, kpart and scratch: one part of
# every key, which writes out itself and never touches the scratch
args = (q, k, v, mask, out, np.int64(0), np.int32(L), np.int32(L), np.int32(H), np.int32(H),
        np.int32(D), scale2, np.int32(causal), np.int32(0), np.int32(0), np.int32(0),
        np.int32(0), np.int32(0), np.int32(1), np.int32(L), out)
s, e = cp.cuda.Event(), cp.cuda.Event()
times = []
for _ in range(reps):
    s.record()
    f(grid, (nt, 1, 1), args)
    e.record()
    e.synchronize()
    times.append(cp.cuda.get_elapsed_time(s, e))
flops = 4.0 * B * H * L * L * D / (2 if causal else 1)
ms = sorted(times)[len(times) // 2]
qh, kh, vh = (to_f64(x[0, :, 0, :]) for x in (q, k, v))
sc = qh @ kh.T / math.sqrt(D)
if causal:
    sc[np.triu_indices(L, 1)] = -np.inf
p = np.exp(sc - sc.max(axis=1, keepdims=True))
ref = (p / p.sum(axis=1, keepdims=True)) @ vh
got = to_f64(out[0, :, 0, :])
err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
print(f"{kname} {ptx} ({dtype}): {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s, rel err {err:.2e}")
