#!/usr/bin/env python3
"""Writes sort and lookup inputs in tabcl-bench's --dump format, with codes
from a Python reference instead of tabcl's, to test the peers without
tabcl-bench. Not used by bench/run-gpu.sh.

  make_dump.py DIR [--quick] [--seed S] [--binary]
"""
import argparse
import json
import os

import numpy as np

from dumpfmt import Strings, reference_codes


def random_labels(rng, n, lo, hi, binary, prefix_share=0.0):
    """n labels of lo..hi bytes; printable ASCII unless binary. A share of
    them start with a common prefix, so byte comparison has work to do."""
    lens = rng.integers(lo, hi + 1, size=n)
    total = int(lens.sum())
    if binary:
        pool = rng.integers(0, 256, size=total, dtype=np.uint8)
    else:
        pool = rng.integers(33, 127, size=total, dtype=np.uint8)
    raw = pool.tobytes()
    out, at = [], 0
    common = b"category/" * 4
    for i, l in enumerate(lens.tolist()):
        lab = raw[at:at + l]
        at += l
        if prefix_share and rng.random() < prefix_share:
            lab = (common + lab)[:max(l, 1)] if l else lab
        out.append(lab)
    return out


def lookup_case(rng, dir_, case, ncols, nvocab, nquery, lo, hi, binary):
    cdir = os.path.join(dir_, case)
    os.makedirs(cdir, exist_ok=True)
    for c in range(ncols):
        vocab = random_labels(rng, nvocab, lo, hi, binary, prefix_share=0.3)
        # repeated labels (their code is the last position) and the empty label
        for _ in range(max(1, nvocab // 50)):
            i, j = rng.integers(0, nvocab, size=2)
            vocab[j] = vocab[i]
        if lo == 0 or nvocab > 2:
            vocab[int(rng.integers(0, nvocab))] = b""
        present = rng.integers(0, nvocab, size=nquery)
        absent = random_labels(rng, nquery, lo, hi, binary, prefix_share=0.3)
        pick = rng.random(nquery) < 0.8
        query = [vocab[p] if k else a for p, a, k in zip(present.tolist(), absent, pick.tolist())]
        if nquery:
            query[0] = b""
        # near misses: one byte changed, or one byte longer or shorter
        for q in range(1, min(nquery, 64)):
            lab = vocab[int(present[q])]
            if lab and q % 3 == 0:
                lab = lab[:-1] + bytes([(lab[-1] + 1) % 256])
            elif q % 3 == 1:
                lab = lab + b"x"
            else:
                lab = lab[:-1]
            query[q] = lab
        Strings.from_labels(vocab).write(os.path.join(cdir, "vocab_%d" % c))
        Strings.from_labels(query).write(os.path.join(cdir, "query_%d" % c))
        reference_codes(vocab, query).astype("<i4").tofile(os.path.join(cdir, "codes_%d.i32" % c))
    with open(os.path.join(cdir, "meta.json"), "w") as f:
        json.dump({"case": case, "ncols": ncols, "order": "position", "source": "make_dump.py"}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--binary", action="store_true", help="arbitrary bytes, not only printable ASCII")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    sort_sizes = [1 << 12, 1000] if a.quick else [1 << 20, 1 << 24]
    for n in sort_sizes:
        name = "2^%d" % (n.bit_length() - 1) if n & (n - 1) == 0 else str(n)
        keys = rng.integers(0, 1 << 64, size=n, dtype=np.uint64, endpoint=False)
        keys[: n // 100] = keys[n // 100: 2 * (n // 100)]  # some equal keys
        keys.astype("<u8").tofile(os.path.join(a.dir, "sort_%s.keys.u64" % name))
        np.arange(n, dtype="<u4").tofile(os.path.join(a.dir, "sort_%s.vals.u32" % name))
    if a.quick:
        lookup_case(rng, a.dir, "v2000_q1000_len8-64", 2, 2000, 1000, 8, 64, a.binary)
        lookup_case(rng, a.dir, "v300_q500_len0-4", 1, 300, 500, 0, 4, a.binary)
    else:
        for nq in (10000, 100000):
            lookup_case(rng, a.dir, "v200000_q%d_len8-64" % nq, 1, 200000, nq, 8, 64, a.binary)
    print("wrote dumps under %s" % a.dir)


if __name__ == "__main__":
    main()
