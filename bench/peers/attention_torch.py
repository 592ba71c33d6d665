#!/usr/bin/env python3
"""The attention peer: torch.nn.functional.scaled_dot_product_attention on
the shapes tabcl-bench ran, in f32, f16 and bf16.

Inputs are made in tabcl's [B, L, H, D] layout and handed to SDPA as
(B, H, L, D) views (a transpose, no copy), as a caller holding tabcl's
layout would. FLOPs are counted as tabcl counts them: 4*B*H*Lq*Lk*D, halved
when causal. Where SDPA rejects a batch that large (CUDA grid limits in some
versions), the batch is run in chunks and the note says so. On a torch
without SDPA (the CPU smoke run) the attention is written out with matmul
and softmax and recorded under torch_math_* instead.

Cases come, in this order, from --cases, from the attention lines of
--cases-from (tabcl-bench's JSONL; every f16 case also gets a bf16 twin), or
from the built-in list. Names: tab_b60000_l54_h8_d64_f32,
long_b4_h32_l1024_d64_causal_f16, ... (tokens b, l (or lq and lk), h, d,
"causal", and the dtype, in any order after the first).

  attention_torch.py [--jsonl PATH] [--quick] [--reps N] [--cases-from JSONL] [--cases A,B]
"""
import argparse
import json
import re
import sys

from common import Budget, Recorder, Timer, pick_device, table

FULL = ["tab_b60000_l54_h8_d64_%s", "tab_b140000_l54_h8_d64_%s",
        "tab_b60000_l54_h8_d32_%s", "tab_b140000_l54_h8_d32_%s",
        "long_b4_h32_l1024_d64_causal_%s", "long_b4_h32_l1024_d64_%s",
        "long_b4_h32_l4096_d128_causal_%s", "long_b4_h32_l4096_d128_%s"]
QUICK = ["tab_b64_l54_h8_d64_%s", "tab_b100_l54_h8_d32_%s",
         "long_b1_h2_l128_d64_causal_%s", "long_b1_h2_l256_d128_%s"]
DTYPES = ["f32", "f16", "bf16"]


def parse_case(name):
    """{'b','lq','lk','h','d','causal','dtype'} or None if not understood."""
    toks = name.split("_")
    shape = {"causal": False}
    for t in toks[1:]:
        m = re.fullmatch(r"(b|l|lq|lk|h|d)(\d+)", t)
        if m:
            shape[m.group(1)] = int(m.group(2))
        elif t == "causal":
            shape["causal"] = True
        elif t in DTYPES:
            shape["dtype"] = t
        else:
            return None
    if "l" in shape:
        shape.setdefault("lq", shape["l"])
        shape.setdefault("lk", shape["l"])
    if not all(k in shape for k in ("b", "lq", "lk", "h", "d", "dtype")):
        return None
    return shape


def cases_from_jsonl(path):
    names = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("bench") == "attention" and r.get("case") not in names:
                    names.append(r["case"])
    except OSError as e:
        print("note: cannot read %s (%s)" % (path, e), file=sys.stderr)
    for n in list(names):
        if n.endswith("_f16") and n[:-4] + "_bf16" not in names:
            names.append(n[:-4] + "_bf16")
    return names


def math_attention(torch, q, k, v, causal):
    scale = q.shape[-1] ** -0.5
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if causal:
        lq, lk = s.shape[-2], s.shape[-1]
        mask = torch.ones(lq, lk, dtype=torch.bool, device=s.device).tril()  # top-left aligned, as SDPA
        s = s.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


def sdpa_backend(torch, q, k, v, causal):
    """The backend SDPA's dispatcher picks for these inputs (private API,
    so best effort: None when this torch does not have it)."""
    try:
        choice = torch._fused_sdp_choice(q, k, v, is_causal=causal)
        from torch.nn.attention import SDPBackend
        for b in SDPBackend.__members__.values():
            if int(b.value) == int(choice):
                return b.name
        return str(choice)
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", help="append figures here")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--cases-from", help="run the attention cases named in this JSONL (tabcl-bench's)")
    ap.add_argument("--cases", help="comma-separated case names")
    ap.add_argument("--budget-s", type=float, default=0, help="start no case after this many seconds")
    a = ap.parse_args()
    import torch
    F = torch.nn.functional
    dev, devname = pick_device(torch, a.quick)
    timer = Timer(torch, dev, warmup=1 if a.quick else 2, reps=a.reps or (3 if a.quick else 10))
    rec = Recorder(a.jsonl, "torch", devname)
    have_sdpa = hasattr(F, "scaled_dot_product_attention")
    impl = "sdpa" if have_sdpa else "math"
    if not have_sdpa:
        print("note: torch %s has no scaled_dot_product_attention: timing matmul+softmax+matmul "
              "as torch_math_* instead" % torch.__version__)
    if a.cases:
        names = [n for n in a.cases.split(",") if n]
    else:
        names = cases_from_jsonl(a.cases_from) if a.cases_from else []
        if not names:
            names = [c % t for c in (QUICK if a.quick else FULL) for t in DTYPES]
    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    print("# %s attention on %s, torch %s" % ("SDPA" if have_sdpa else "math", devname, torch.__version__))
    if dev.type == "cuda":
        print("TF32 for f32 matmul allowed: %s"
              % torch.backends.cuda.matmul.allow_tf32)
    rows, failed = [], 0
    budget = Budget(a.budget_s)
    for name in names:
        if not budget.allows(name):
            continue
        shp = parse_case(name)
        if shp is None:
            print("note: case %s not understood, skipped" % name)
            continue
        b, lq, lk, h, d = shp["b"], shp["lq"], shp["lk"], shp["h"], shp["d"]
        causal = shp["causal"]
        flops = 4.0 * b * h * lq * lk * d * (0.5 if causal else 1.0)
        note = ""
        try:
            dt = dtypes[shp["dtype"]]
            gen = torch.Generator(device=dev).manual_seed(1)
            # tabcl's layout [B, L, H, D]; SDPA sees (B, H, L, D) views of it
            q = torch.randn(b, lq, h, d, device=dev, dtype=dt, generator=gen).transpose(1, 2)
            k = torch.randn(b, lk, h, d, device=dev, dtype=dt, generator=gen).transpose(1, 2)
            v = torch.randn(b, lk, h, d, device=dev, dtype=dt, generator=gen).transpose(1, 2)

            def whole(q=q, k=k, v=v):
                if have_sdpa:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                return math_attention(torch, q, k, v, causal)

            run = whole
            if have_sdpa and dev.type == "cuda":
                backend = sdpa_backend(torch, q, k, v, causal)
                if backend:
                    note = "backend %s" % backend
            try:
                whole()
                if dev.type == "cuda":
                    torch.cuda.synchronize()
            except RuntimeError as e:
                if dev.type != "cuda" or "configuration" not in str(e):
                    raise
                # grid limit on the batch (or batch*heads): chunk it
                chunk = max(1, 65535 // h)
                note = (note + "; " if note else "") + "batch chunked by %d (%s)" % (
                    chunk, str(e).splitlines()[0][:60])

                def run(q=q, k=k, v=v, chunk=chunk):
                    for i in range(0, b, chunk):
                        F.scaled_dot_product_attention(q[i:i + chunk], k[i:i + chunk],
                                                       v[i:i + chunk], is_causal=causal)
            ms = timer.median_ms(run)
            tflops = flops / (ms * 1e-3) * 1e-12
            pre = "torch" if have_sdpa else "torch_math"
            rec("attention", name, pre + "_ms", ms, "ms", vs="ms", note=note or None)
            rec("attention", name, pre + "_tflops", tflops, "TFLOP/s", vs="tflops", note=note or None)
            rows.append((name, impl, "%.3f" % ms, "%.2f" % tflops, note))
        except Exception as e:  # one shape failing (memory, dtype on CPU) must not stop the rest
            msg = str(e).splitlines()[0][:120] if str(e) else repr(e)
            if dev.type == "cpu" and "Half" in msg:
                rows.append((name, impl, "skipped", "", "no f16 matmul on this CPU torch"))
            else:
                rows.append((name, impl, "failed", "", msg))
                failed += 1
        finally:
            q = k = v = whole = run = None  # the closures hold the tensors too
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    table(rows, ["case", "impl", "ms", "TFLOP/s", "note"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
