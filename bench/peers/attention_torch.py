#!/usr/bin/env python3
"""The attention peer: torch.nn.functional.scaled_dot_product_attention on
the shapes tabcl-bench ran, in f32, f16 and bf16.

The context cases (ctx_b32_q512_kv40000_h8_d64_f16: 512 queries over
40,000 cached keys, issue 51) take a boolean key-padding mask, built as
tabcl-bench builds its own (ctx_kept: entry b of B attends all but its last
7.5% to 12.5% of keys) and handed to SDPA as a (B, 1, 1, Lk) broadcast, as
a PyTorch caller would (tabcl-bench hands tabcl the same [B, 1, 1, Lk],
heads and queries broadcast). Where the --cases-from rows list the keys each entry keeps
(kv_kept), they must equal ctx_kept's, else the case fails. A few rows of
every case's output are checked against float64 (torch_matches_f64).

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
long_b4_h32_l1024_d64_causal_f16, ctx_b1_q512_kv10000_h8_d64_bf16, ...
(tokens b, l (or lq and lk, or q and kv), h, d, "causal", and the dtype, in
any order after the first; a first token "ctx" adds the key-padding mask).

--only A,B keeps the cases whose name contains one of the parts (run-gpu.sh:
--only ctx_ after tabcl-bench's context cases, --only tab_,long_ before).

  attention_torch.py [--jsonl PATH] [--quick] [--reps N] [--cases-from JSONL] [--cases A,B]
                     [--only A,B]
"""
import argparse
import json
import math
import re
import sys

from common import Budget, Recorder, Timer, pick_device, table

FULL = ["tab_b60000_l54_h8_d64_%s", "tab_b140000_l54_h8_d64_%s",
        "tab_b60000_l54_h8_d32_%s", "tab_b140000_l54_h8_d32_%s",
        "long_b4_h32_l1024_d64_causal_%s", "long_b4_h32_l1024_d64_%s",
        "long_b4_h32_l4096_d128_causal_%s", "long_b4_h32_l4096_d128_%s"] + [
            "ctx_b%d_q512_kv%d_h8_d%d_%%s" % (b, kv, d)
            for b in (1, 32) for d in (64, 128) for kv in (10000, 40000)]
QUICK = ["tab_b64_l54_h8_d64_%s", "tab_b100_l54_h8_d32_%s",
         "long_b1_h2_l128_d64_causal_%s", "long_b1_h2_l256_d128_%s",
         "ctx_b1_q64_kv1000_h2_d64_%s", "ctx_b4_q64_kv4000_h2_d128_%s"]
DTYPES = ["f32", "f16", "bf16"]


def parse_case(name):
    """{'b','lq','lk','h','d','causal','dtype'} (and 'padded': True for a
    ctx_ case) or None if not understood."""
    toks = name.split("_")
    shape = {"causal": False}
    if toks[0] == "ctx":
        shape["padded"] = True
    for t in toks[1:]:
        m = re.fullmatch(r"(b|l|lq|lk|q|kv|h|d)(\d+)", t)
        if m:
            key = {"q": "lq", "kv": "lk"}.get(m.group(1), m.group(1))
            shape[key] = int(m.group(2))
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


def ctx_kept(batch, lk):
    """The keys each batch entry of a context case attends, as tabcl-bench's
    ctx_kept (tools/bench/attention.c) computes them, operation for
    operation in doubles: the last 7.5% (entry 0) to 12.5% (entry B-1) are
    padding."""
    return [lk - int(math.floor(lk * (0.075 + 0.05 * (b + 0.5) / batch) + 0.5)) for b in range(batch)]


def key_padding_mask(torch, batch, lk, device):
    """(B, 1, 1, Lk) bool, True where a key may be attended."""
    kept = torch.tensor(ctx_kept(batch, lk), device=device)
    return (torch.arange(lk, device=device)[None, :] < kept[:, None]).view(batch, 1, 1, lk)


def jsonl_kept(path):
    """{case: kv_kept} from the rows of tabcl-bench's JSONL that list them."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("bench") == "attention" and isinstance(r.get("kv_kept"), list):
                    out[r["case"]] = r["kv_kept"]
    except OSError:
        pass
    return out


def check_rows(torch, q, k, v, mask, causal, out_row):
    """The relative error (norm over a few (b, h, query) rows) of SDPA's
    output against float64: out_row(b, h, i) gives one output row."""
    b, h, lq, d = q.shape
    num = den = 0.0
    for bi, hi, qi in {(0, 0, 0), (b // 2, h // 2, lq // 2), (b - 1, h - 1, lq - 1)}:
        s = (k[bi, hi].double() @ q[bi, hi, qi].double()) * d ** -0.5
        if mask is not None:
            s = s.masked_fill(~mask[bi, 0, 0], float("-inf"))
        if causal:
            s[qi + 1:] = float("-inf")
        want = torch.softmax(s, dim=0) @ v[bi, hi].double()
        got = out_row(bi, hi, qi).double()
        num += float(((got - want) ** 2).sum())
        den += float((want ** 2).sum())
    return (num / den) ** 0.5 if den > 0 else num ** 0.5


CHECK_TOLERANCE = {"f32": 1e-3, "f16": 1e-2, "bf16": 2e-2}


def math_attention(torch, q, k, v, causal, mask=None):
    scale = q.shape[-1] ** -0.5
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    if causal:
        lq, lk = s.shape[-2], s.shape[-1]
        mask = torch.ones(lq, lk, dtype=torch.bool, device=s.device).tril()  # top-left aligned, as SDPA
        s = s.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


def sdpa_backend(torch, q, k, v, causal, mask=None):
    """The backend SDPA's dispatcher picks for these inputs (private API,
    so best effort: None when this torch does not have it)."""
    try:
        choice = torch._fused_sdp_choice(q, k, v, attn_mask=mask, is_causal=causal)
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
    ap.add_argument("--only", help="keep the cases whose name contains one of these comma-separated parts")
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
    if a.only:
        parts = [x for x in a.only.split(",") if x]
        names = [n for n in names if any(x in n for x in parts)]
    kept_in_jsonl = jsonl_kept(a.cases_from) if a.cases_from else {}
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
        q = k = v = mask = whole = run = out = None
        try:
            if shp.get("padded") and name in kept_in_jsonl and kept_in_jsonl[name] != ctx_kept(b, lk):
                raise ValueError("tabcl-bench's kv_kept differ from ctx_kept's: not the same mask")
            dt = dtypes[shp["dtype"]]
            gen = torch.Generator(device=dev).manual_seed(1)
            # tabcl's layout [B, L, H, D]; SDPA sees (B, H, L, D) views of it
            q = torch.randn(b, lq, h, d, device=dev, dtype=dt, generator=gen).transpose(1, 2)
            k = torch.randn(b, lk, h, d, device=dev, dtype=dt, generator=gen).transpose(1, 2)
            v = torch.randn(b, lk, h, d, device=dev, dtype=dt, generator=gen).transpose(1, 2)
            mask = key_padding_mask(torch, b, lk, dev) if shp.get("padded") else None
            if mask is not None:
                note = "key-padding mask"

            def whole(q=q, k=k, v=v, mask=mask):
                if have_sdpa:
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
                return math_attention(torch, q, k, v, causal, mask)

            run = whole
            if have_sdpa and dev.type == "cuda":
                backend = sdpa_backend(torch, q, k, v, causal, mask)
                if backend:
                    note = (note + "; " if note else "") + "backend %s" % backend
            try:
                out = whole()
                if dev.type == "cuda":
                    torch.cuda.synchronize()
            except RuntimeError as e:
                if dev.type != "cuda" or "configuration" not in str(e):
                    raise
                # grid limit on the batch (or batch*heads): chunk it
                chunk = max(1, 65535 // h)
                note = (note + "; " if note else "") + "batch chunked by %d (%s)" % (
                    chunk, str(e).splitlines()[0][:60])

                def run(q=q, k=k, v=v, mask=mask, chunk=chunk):
                    for i in range(0, b, chunk):
                        F.scaled_dot_product_attention(
                            q[i:i + chunk], k[i:i + chunk], v[i:i + chunk], is_causal=causal,
                            attn_mask=None if mask is None else mask[i:i + chunk])
            if out is not None:
                def out_row(bi, hi, qi, out=out):
                    return out[bi, hi, qi]
            else:   # chunked: the checked rows' batch entries alone
                def out_row(bi, hi, qi):
                    sl = slice(bi, bi + 1)
                    o = F.scaled_dot_product_attention(q[sl], k[sl], v[sl], is_causal=causal,
                                                       attn_mask=None if mask is None else mask[sl])
                    return o[0, hi, qi]
            err = check_rows(torch, q, k, v, mask, causal, out_row)
            out = None
            good = err <= CHECK_TOLERANCE[shp["dtype"]]
            rec("attention", name, "torch_matches_f64", 1 if good else 0, "bool",
                note="relative error %.2g against float64 on a few rows" % err)
            if not good:
                raise ValueError("output differs from float64: relative error %.2g" % err)
            ms = timer.median_ms(run)
            tflops = flops / (ms * 1e-3) * 1e-12
            pre = "torch" if have_sdpa else "torch_math"
            rec("attention", name, pre + "_ms", ms, "ms", vs="ms", note=note or None)
            rec("attention", name, pre + "_tflops", tflops, "TFLOP/s", vs="tflops", note=note or None)
            rows.append((name, impl, "%.3f" % ms, "%.2f" % tflops,
                         "; ".join(x for x in (note, "error %.2g vs float64" % err) if x)))
        except Exception as e:  # one shape failing (memory, dtype on CPU) must not stop the rest
            msg = str(e).splitlines()[0][:120] if str(e) else repr(e)
            if dev.type == "cpu" and "Half" in msg:
                rows.append((name, impl, "skipped", "", "no f16 matmul on this CPU torch"))
            else:
                rows.append((name, impl, "failed", "", msg))
                failed += 1
        finally:
            q = k = v = mask = out = whole = run = out_row = None  # the closures hold the tensors too
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    table(rows, ["case", "impl", "ms", "TFLOP/s", "note"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
