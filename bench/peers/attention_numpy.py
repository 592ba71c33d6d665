#!/usr/bin/env python3
"""The CPU attention peer: numpy with its BLAS (Debian's OpenBLAS) as a
batched matmul, a softmax and a second batched matmul, in f32, on the
shapes tabcl-bench ran on a CPU device. The context cases (ctx_...) get
tabcl-bench's key-padding mask (attention_torch.ctx_kept): the padded keys'
scores are set to -inf, as a boolean mask does.

Inputs are made in the (B, H, L, D) layout numpy's matmul wants (tabcl
reads [B, L, H, D]; a copy into numpy's layout would only slow the peer,
so it is not timed). The softmax subtracts each row's maximum, as every
exact implementation does. Causal masks are top-left aligned, as tabcl's.
The result of each case is checked against a float64 evaluation of a few
rows; a mismatch fails the run. FLOPs are counted as tabcl counts them:
4*B*H*Lq*Lk*D, halved when causal (numpy computes the masked half anyway).
Large batches run in chunks of at most --chunk-mib MiB of scores, since a
whole [B, H, Lq, Lk] score tensor of the tabular shape would not fit a
small machine's cache, and chunking is what a careful numpy user does.

The time is wall-clock, the median of --reps runs after one warm-up.

--sgemm N (2,048 by default, 0: none) also times one N x N f32 matmul, the
figure issue 15 holds cl-probe's fp32 FMA figure against (within 25%): the
rate the same cores reach in the best-tuned dense kernel at hand, recorded
as bench "probe", case "fp32_fma", numpy_sgemm_gflops (2 N^3 FLOPs, the
best of --reps runs, as a peak is; the product checked against float64).
OpenBLAS reads OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE: a machine that sets
them for old OpenBLAS builds should unset them for this command (the
figures then come from the kernels OpenBLAS picks for this CPU); the run
prints what they were.

  attention_numpy.py [--jsonl PATH] [--reps N] [--cases-from JSONL] [--cases A,B]
"""
import argparse
import os
import sys
import time

import numpy as np

from attention_torch import cases_from_jsonl, ctx_kept, jsonl_kept, parse_case
from common import Budget, Recorder, table

CPU_CASES = ["tab_b2000_l54_h8_d64_f32", "tab_b2000_l54_h8_d32_f32",
             "long_b1_h16_l1024_d64_f32", "long_b1_h16_l1024_d64_causal_f32"]


def attention(q, k, v, causal, chunk, kept=None):
    """softmax(q k^T / sqrt(d)) v over (B, H, L, D) f32 arrays, batch in chunks;
    kept: the keys each batch entry attends (the rest are padding), or None."""
    b, h, lq, d = q.shape
    lk = k.shape[2]
    scale = np.float32(d ** -0.5)
    out = np.empty_like(q)
    mask = None
    if causal:
        mask = np.triu(np.ones((lq, lk), dtype=bool), k=1)   # True: not attended
    for i in range(0, b, chunk):
        s = np.matmul(q[i:i + chunk], k[i:i + chunk].transpose(0, 1, 3, 2))
        s *= scale
        if mask is not None:
            s[..., mask] = -np.inf
        for j in range(s.shape[0]) if kept is not None else ():
            s[j, ..., kept[i + j]:] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        np.matmul(s, v[i:i + chunk], out=out[i:i + chunk])
    return out


def sgemm_gflops(n, reps):
    """(GFLOP/s, ok, message): the best of reps n x n f32 products after a
    warm-up, a few entries of the product checked against float64."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = a @ b   # the warm-up, also checked
    worst = 0.0
    for _ in range(16):
        i, j = rng.integers(n), rng.integers(n)
        want = float(a[i].astype(np.float64) @ b[:, j].astype(np.float64))
        scale = float(np.abs(a[i]).astype(np.float64) @ np.abs(b[:, j]).astype(np.float64))
        worst = max(worst, abs(float(c[i, j]) - want) / max(scale, 1e-30))
    best = None
    for _ in range(max(reps, 1)):
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        t = time.perf_counter() - t0
        best = t if best is None or t < best else best
    return 2.0 * n ** 3 / best * 1e-9, worst < 1e-5, "worst error %.2g of |a||b|" % worst


def check(q, k, v, causal, out, rows=8, kept=None):
    """(ok, message): a few (batch, head, query) rows against float64, the
    error relative to the row's largest output (an output near zero has no
    meaningful relative error of its own in f32)."""
    b, h, lq, d = q.shape
    lk = k.shape[2]
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(rows):
        bi, hi, qi = rng.integers(b), rng.integers(h), rng.integers(lq)
        s = k[bi, hi].astype(np.float64) @ q[bi, hi, qi].astype(np.float64) / np.sqrt(d)
        if causal:
            s[qi + 1:] = -np.inf
        if kept is not None:
            s[kept[bi]:] = -np.inf
        w = np.exp(s - s.max())
        w /= w.sum()
        want = w @ v[bi, hi].astype(np.float64)
        err = np.max(np.abs(out[bi, hi, qi] - want)) / (1e-6 + np.max(np.abs(want)))
        worst = max(worst, float(err))
    return worst < 1e-4, "worst error %.2g of the row's largest output" % worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", help="append figures here")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cases-from", help="the f32 attention cases named in this JSONL (tabcl-bench's)")
    ap.add_argument("--cases", help="comma-separated case names")
    ap.add_argument("--chunk-mib", type=float, default=32, help="scores computed at once, MiB")
    ap.add_argument("--budget-s", type=float, default=0, help="start no case after this many seconds")
    ap.add_argument("--sgemm", type=int, default=2048, help="also time an N x N f32 matmul (0: not)")
    a = ap.parse_args()
    if a.cases:
        names = [n for n in a.cases.split(",") if n]
    elif a.cases_from:
        names = [n for n in cases_from_jsonl(a.cases_from) if n.endswith("_f32")]
    else:
        names = CPU_CASES
    blas = "unknown BLAS"
    np.ones((2, 2), dtype=np.float32) @ np.ones((2, 2), dtype=np.float32)   # loads the BLAS
    try:   # the BLAS library numpy loaded (Debian picks it through its alternatives)
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f if "blas" in line.lower() and "/" in line})
        if libs:
            blas = ", ".join(os.path.realpath(x) for x in libs)
    except OSError:
        pass
    env = ", ".join("%s=%s" % (k, os.environ.get(k, "(unset)"))
                    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS"))
    dev = "cpu: numpy %s, %s, %d cores" % (np.__version__, blas, os.cpu_count() or 0)
    print("# numpy attention (matmul, softmax, matmul) on %s; %s" % (dev, env))
    rec = Recorder(a.jsonl, "numpy", dev)
    rows, failed = [], 0
    kept_in_jsonl = jsonl_kept(a.cases_from) if a.cases_from else {}
    budget = Budget(a.budget_s)
    for name in names:
        if not budget.allows(name):
            continue
        shp = parse_case(name)
        if shp is None or shp["dtype"] != "f32":
            print("note: case %s not understood or not f32, skipped" % name)
            continue
        b, lq, lk, h, d, causal = shp["b"], shp["lq"], shp["lk"], shp["h"], shp["d"], shp["causal"]
        flops = 4.0 * b * h * lq * lk * d * (0.5 if causal else 1.0)
        kept = ctx_kept(b, lk) if shp.get("padded") else None
        if kept is not None and kept_in_jsonl.get(name, kept) != kept:
            rows.append((name, "failed", "", "tabcl-bench's kv_kept differ from ctx_kept's"))
            failed += 1
            continue
        rng = np.random.default_rng(1)
        q = rng.standard_normal((b, h, lq, d), dtype=np.float32)
        k = rng.standard_normal((b, h, lk, d), dtype=np.float32)
        v = rng.standard_normal((b, h, lk, d), dtype=np.float32)
        chunk = max(1, int(a.chunk_mib * 2 ** 20 // (h * lq * lk * 4)))
        out = attention(q, k, v, causal, chunk, kept)   # the warm-up, also checked
        ok, msg = check(q, k, v, causal, out, kept=kept)
        if not ok:
            rows.append((name, "failed", "", msg))
            failed += 1
            continue
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            attention(q, k, v, causal, chunk, kept)
            times.append((time.perf_counter() - t0) * 1e3)
        ms = float(np.median(times))
        tflops = flops / (ms * 1e-3) * 1e-12
        note = "; ".join(x for x in ("batch chunks of %d" % chunk if chunk < b else "",
                                     "key-padding mask" if kept is not None else "") if x) or None
        rec("attention", name, "numpy_ms", ms, "ms", vs="ms", note=note)
        rec("attention", name, "numpy_tflops", tflops, "TFLOP/s", vs="tflops", note=note)
        rows.append((name, "%.3f" % ms, "%.4f" % tflops, msg + ("; " + note if note else "")))
    table(rows, ["case", "ms", "TFLOP/s", "check"])
    if a.sgemm > 0:
        gflops, ok, msg = sgemm_gflops(a.sgemm, a.reps)
        if ok:
            rec("probe", "fp32_fma", "numpy_sgemm_gflops", gflops, "GFLOP/s",
                note="%d x %d f32 matmul, the best of %d" % (a.sgemm, a.sgemm, max(a.reps, 1)))
        else:
            failed += 1
        print("\nnumpy sgemm %d x %d: %.1f GFLOP/s (%s)" % (a.sgemm, a.sgemm, gflops, msg))
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
