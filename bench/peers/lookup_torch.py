#!/usr/bin/env python3
"""The PyTorch-native GPU lookup peer: the published approach written with
tensor operations only, on the lookup inputs tabcl-bench dumped.

Fit (per column): hash every vocabulary label (a polynomial hash over the
bytes, summed per label with a cumulative sum and the offsets, then mixed),
sort the hashes stably, drop a label when the next one in sorted order has
the same hash and the same bytes (so a repeated label keeps its last
position), and remember the longest run of equal hashes.
Lookup: hash the queries, torch.searchsorted among the sorted hashes, and
confirm every candidate by gathering and comparing its bytes; a run of equal
hashes (a collision) is walked candidate by candidate, so a collision can
never give a wrong code. The codes are checked against tabcl's.

  lookup_torch.py --dump DIR [--jsonl PATH] [--quick] [--reps N] [--hash-bits B]
"""
import sys

import numpy as np

from common import Budget, Recorder, Timer, dump_peer_args, pick_device, table
from dumpfmt import compare_codes, lookup_cases

M64 = (1 << 64) - 1


def s64(x):
    """A 64-bit constant as the signed value torch's int64 holds."""
    x &= M64
    return x - (1 << 64) if x >> 63 else x


BASE = 0x100000001B3            # FNV's 64-bit prime: odd, so every power is a unit
LEN_MUL = s64(0x9E3779B97F4A7C15)
MIX1 = s64(0xBF58476D1CE4E5B9)
MIX2 = s64(0x94D049BB133111EB)


def srl(t, s):
    """Logical right shift of int64 (torch's >> is arithmetic)."""
    return (t >> s) & ((1 << (64 - s)) - 1)


def mix(h):
    """splitmix64's finaliser, so every input bit reaches every output bit."""
    h = h ^ srl(h, 30)
    h = h * MIX1
    h = h ^ srl(h, 27)
    h = h * MIX2
    return h ^ srl(h, 31)


def power_table(maxlen, seed, torch, device):
    """base^(p+1) mod 2^64 for p < maxlen, base depending on the seed."""
    b = np.uint64((BASE + 2 * seed) & M64)
    p = np.empty(max(maxlen, 1), dtype=np.uint64)
    acc = np.uint64(1)
    with np.errstate(over="ignore"):
        for i in range(p.size):
            acc = acc * b
            p[i] = acc
    return torch.from_numpy(p.view(np.int64)).to(device)


class DevStrings:
    """A string array on the device, with what every per-byte operation
    needs: each byte's label (seg) and its position inside the label (pos)."""

    def __init__(self, s, torch, device):
        self.n = len(s)
        self.nbytes = int(s.data.size)
        self.maxlen = int(np.diff(s.offsets).max()) if self.n else 0
        self.offsets = torch.from_numpy(s.offsets).to(device)
        self.data = torch.from_numpy(s.data).to(device)
        self.torch = torch

    def prepare(self):
        """Timed with the hash: derived from the offsets on the device."""
        torch = self.torch
        self.lens = self.offsets[1:] - self.offsets[:-1]
        self.seg = torch.repeat_interleave(torch.arange(self.n, device=self.offsets.device),
                                           self.lens, output_size=self.nbytes)
        self.pos = torch.arange(self.nbytes, device=self.offsets.device) - self.offsets[self.seg]


def segment_sum(values, offsets, torch):
    """Per-label sums of per-byte int64 values (wrapping, i.e. mod 2^64)."""
    cs = torch.zeros(values.numel() + 1, dtype=torch.int64, device=values.device)
    torch.cumsum(values, 0, out=cs[1:])
    return cs[offsets[1:]] - cs[offsets[:-1]]


def hash_strings(s, powers, seed, mask, torch):
    contrib = (s.data.to(torch.int64) + 1) * powers[s.pos]
    h = segment_sum(contrib, s.offsets, torch) + s.lens * LEN_MUL + seed
    h = mix(h)
    return h & mask if mask != -1 else h


def labels_equal(a, b, partner, torch):
    """eq[j]: label j of a has the same bytes as label partner[j] of b."""
    lb = b.lens[partner]
    same_len = a.lens == lb
    if a.nbytes == 0:
        return same_len
    pj = partner[a.seg]
    inside = a.pos < b.lens[pj]
    at = torch.clamp(b.offsets[pj] + a.pos, max=max(b.nbytes - 1, 0))
    if b.nbytes:
        differ = (~inside) | (b.data[at] != a.data)
    else:
        differ = torch.ones_like(inside)
    bad = segment_sum(differ.to(torch.int64), a.offsets, torch)
    return same_len & (bad == 0)


def pairs_equal(s, ia, ib, torch):
    """eq[j]: labels ia[j] and ib[j] of s have the same bytes. Only the
    bytes of those labels are touched (one sync, for their total)."""
    la, lb = s.lens[ia], s.lens[ib]
    total = int(la.sum())
    if total == 0:
        return la == lb
    starts = torch.cumsum(la, 0) - la
    seg = torch.repeat_interleave(torch.arange(ia.numel(), device=ia.device), la, output_size=total)
    pos = torch.arange(total, device=ia.device) - starts[seg]
    inside = pos < lb[seg]
    at_b = torch.clamp(s.offsets[ib][seg] + pos, max=s.nbytes - 1)
    differ = (~inside) | (s.data[s.offsets[ia][seg] + pos] != s.data[at_b])
    bad = torch.zeros(ia.numel(), dtype=torch.int64, device=ia.device)
    bad.index_add_(0, seg, differ.to(torch.int64))
    return (la == lb) & (bad == 0)


class Index:
    def __init__(self, vocab, powers, seed, mask, torch):
        self.vocab, self.powers, self.seed, self.mask, self.torch = vocab, powers, seed, mask, torch

    def fit(self):
        torch, v = self.torch, self.vocab
        v.prepare()
        h = hash_strings(v, self.powers, self.seed, self.mask, torch)
        sh, order = torch.sort(h, stable=True)
        self.sh, self.pos = sh, order
        if v.n > 1:
            # A label equal to the next one in sorted order is dominated by it
            # (stable sort: the next one has the later position). Only pairs
            # with equal hashes have their bytes compared.
            same = torch.nonzero(sh[1:] == sh[:-1]).squeeze(1)
            if same.numel():
                dup = pairs_equal(v, order[same], order[same + 1], torch)
                keep = torch.ones(v.n, dtype=torch.bool, device=h.device)
                keep[same[dup]] = False
                self.sh, self.pos = sh[keep], order[keep]
        # the longest run of equal hashes left (1 unless distinct labels collide)
        if self.sh.numel():
            _, counts = torch.unique_consecutive(self.sh, return_counts=True)
            self.run = int(counts.max())
        else:
            self.run = 0

    def lookup(self, q):
        torch = self.torch
        q.prepare()
        hq = hash_strings(q, self.powers, self.seed, self.mask, torch)
        code = torch.full((q.n,), -1, dtype=torch.int64, device=hq.device)
        m = self.sh.numel()
        if m == 0 or q.n == 0:
            return code
        left = torch.searchsorted(self.sh, hq)
        for k in range(self.run):
            c = torch.clamp(left + k, max=m - 1)
            hit = (left + k < m) & (self.sh[c] == hq)
            cand = self.pos[c]
            eq = hit & labels_equal(q, self.vocab, cand, torch)
            code = torch.where(eq, torch.maximum(code, cand), code)
        return code


def main():
    ap = dump_peer_args(__doc__)
    ap.add_argument("--hash-bits", type=int, default=64,
                    help="keep only this many hash bits (tests: forces collisions)")
    a = ap.parse_args()
    import torch
    dev, devname = pick_device(torch, a.quick)
    reps = a.reps or (3 if a.quick else 10)
    timer = Timer(torch, dev, warmup=1 if a.quick else 2, reps=reps)
    rec = Recorder(a.jsonl, "torch", devname)
    mask = -1 if a.hash_bits >= 64 else (1 << a.hash_bits) - 1
    seed = 0
    cases = lookup_cases(a.dump)
    if not cases:
        print("lookup_torch: no lookup dumps under %s" % a.dump, file=sys.stderr)
        return 1
    print("# PyTorch-native lookup on %s, torch %s" % (devname, torch.__version__))
    rows, failed = [], 0
    budget = Budget(a.budget_s)
    for case in cases:
        if not budget.allows(case.case):
            continue
        case.load()
        vocab = [DevStrings(s, torch, dev) for s in case.vocab]
        query = [DevStrings(s, torch, dev) for s in case.query]
        maxlen = max([s.maxlen for s in vocab + query] + [1])
        powers = power_table(maxlen, seed, torch, dev)
        idx = [Index(v, powers, seed, mask, torch) for v in vocab]

        def fit_all():
            for ix in idx:
                ix.fit()

        def lookup_all():
            return [ix.lookup(q) for ix, q in zip(idx, query)]

        fit_ms = timer.median_ms(fit_all)
        lookup_ms = timer.median_ms(lookup_all)
        codes = [c.to(torch.int32).cpu().numpy() for c in lookup_all()]
        ok, msgs = True, []
        for c, (got, want) in enumerate(zip(codes, case.codes)):
            if want is None:
                ok, msgs = False, msgs + ["column %d: no tabcl codes in the dump" % c]
                continue
            m, msg = compare_codes(got, want)
            ok = ok and m
            if not m:
                msgs.append("column %d: %s" % (c, msg))
        runs = max(ix.run for ix in idx)
        rec("lookup", case.case, "queries", case.max_queries(), "rows")
        rec("lookup", case.case, "torch_gpu_fit_ms", fit_ms, "ms", vs="fit_ms")
        rec("lookup", case.case, "torch_gpu_ms", lookup_ms, "ms", vs="lookup_ms")
        rec("lookup", case.case, "torch_codes_match", 1 if ok else 0, "bool")
        rows.append((case.case, case.nvocab(), case.nqueries(), "%.3f" % fit_ms, "%.3f" % lookup_ms,
                     runs, "yes" if ok else "NO: " + "; ".join(msgs)))
        failed += 0 if ok else 1
        case.unload()
        vocab = query = idx = None
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    table(rows, ["case", "vocab", "queries", "fit ms", "lookup ms", "longest hash run", "codes = tabcl's"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
