#!/usr/bin/env python3
"""The CPU attention peer from PyTorch: torch.nn.functional.
scaled_dot_product_attention on the CPU, with torch's own thread count (the
machine's cores), on the shapes tabcl-bench ran on a CPU device.

Inputs are made in tabcl's [B, L, H, D] layout and handed to SDPA as
(B, H, L, D) views (a transpose, no copy), as a caller holding tabcl's
layout would. Each case's output is checked against a float64 evaluation
of a few rows (attention_numpy.check) before it is timed; a mismatch fails
the run. FLOPs are counted as tabcl counts them: 4*B*H*Lq*Lk*D, halved when
causal. Wall-clock median of --reps runs after one warm-up. Recorded as
peer "torch_cpu" (torch_cpu_ms, torch_cpu_tflops), so that report.py keeps
the CPU run's targets (a "torch" peer is the GPU run's).

  attention_torch_cpu.py [--jsonl PATH] [--reps N] [--cases-from JSONL] [--cases A,B]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

from attention_numpy import CPU_CASES, check
from attention_torch import cases_from_jsonl, ctx_kept, key_padding_mask, parse_case
from common import Budget, Recorder, table

TOL = {"f32": 1e-4, "bf16": 2e-2, "f16": 4e-3}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", help="append figures here")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cases-from", help="the attention cases named in this JSONL (tabcl-bench's)")
    ap.add_argument("--cases", help="comma-separated case names")
    ap.add_argument("--budget-s", type=float, default=0, help="start no case after this many seconds")
    a = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("note: torch not importable (%s): no PyTorch CPU attention figures" % e)
        return 0
    F = torch.nn.functional
    if a.cases:
        names = [n for n in a.cases.split(",") if n]
    elif a.cases_from:
        names = cases_from_jsonl(a.cases_from)
    else:
        names = CPU_CASES
    dev = "cpu: torch %s, %d threads, %d cores" % (torch.__version__, torch.get_num_threads(),
                                                   os.cpu_count() or 0)
    print("# PyTorch CPU scaled_dot_product_attention on %s" % dev)
    rec = Recorder(a.jsonl, "torch_cpu", dev)
    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    rows, failed = [], 0
    budget = Budget(a.budget_s)
    for name in names:
        if not budget.allows(name):
            continue
        shp = parse_case(name)
        if shp is None or shp["dtype"] not in dtypes:
            print("note: case %s not understood, skipped" % name)
            continue
        b, lq, lk, h, d, causal = shp["b"], shp["lq"], shp["lk"], shp["h"], shp["d"], shp["causal"]
        flops = 4.0 * b * h * lq * lk * d * (0.5 if causal else 1.0)
        gen = torch.Generator().manual_seed(1)
        dt = dtypes[shp["dtype"]]
        q, k, v = (torch.randn(b, n, h, d, generator=gen).to(dt).transpose(1, 2)
                   for n in (lq, lk, lk))

        # a context case's key-padding mask, as tabcl-bench and the GPU peer build it
        mask = key_padding_mask(torch, b, lk, "cpu") if shp.get("padded") else None
        kept = ctx_kept(b, lk) if mask is not None else None

        def run(q=q, k=k, v=v, mask=mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

        try:
            out = run()   # the warm-up, also checked
        except RuntimeError as e:   # a dtype this CPU build lacks must not stop the rest
            rows.append((name, "skipped", "", str(e).splitlines()[0][:100]))
            continue
        # f32 read in place; 16-bit types widened (check reads a few rows in float64)
        arrs = [(x if x.dtype == torch.float32 else x.float()).numpy() for x in (q, k, v, out)]
        ok, msg = check(*arrs[:3], causal, arrs[3], kept=kept, tol=TOL[shp["dtype"]])
        arrs = None
        if not ok:
            rows.append((name, "failed", "", msg))
            rec("attention", name, "torch_cpu_output_ok", 0, "bool")
            failed += 1
            continue
        times = []
        for _ in range(max(a.reps, 1)):
            t0 = time.perf_counter()
            run()
            times.append((time.perf_counter() - t0) * 1e3)
        ms = statistics.median(times)
        tflops = flops / (ms * 1e-3) * 1e-12
        rec("attention", name, "torch_cpu_ms", ms, "ms", vs="ms")
        rec("attention", name, "torch_cpu_tflops", tflops, "TFLOP/s", vs="tflops")
        rec("attention", name, "torch_cpu_output_ok", 1, "bool")
        rows.append((name, "%.3f" % ms, "%.4f" % tflops, msg))
        q = k = v = out = run = mask = None
    table(rows, ["case", "ms", "TFLOP/s", "check"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
