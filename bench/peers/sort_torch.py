#!/usr/bin/env python3
"""The sort peer: torch.sort of the same 64-bit keys, carrying the same
32-bit values (sort the keys, then gather the values by the permutation),
on the sort inputs tabcl-bench dumped.

torch has no unsigned 64-bit sort on every version, so the keys are sorted
as int64 with the top bit flipped, which orders them exactly as unsigned;
the flip happens once, outside the timing (a caller can store hashes that
way). The result is checked: keys ascending, and the (key, value) pairs a
permutation of the input.

  sort_torch.py --dump DIR [--jsonl PATH] [--quick] [--reps N]
"""
import sys

import numpy as np

from common import Budget, Recorder, Timer, dump_peer_args, pick_device, table
from dumpfmt import sort_cases

TOP = np.uint64(1 << 63)


def check(keys, vals, sk, sv):
    """(ok, message): sk ascending and {(sk, sv)} == {(keys, vals)}."""
    if sk.size and np.any(sk[1:] < sk[:-1]):
        return False, "keys not ascending"
    o1 = np.lexsort((vals, keys))
    o2 = np.lexsort((sv, sk))
    if not (np.array_equal(keys[o1], sk[o2]) and np.array_equal(vals[o1], sv[o2])):
        return False, "pairs are not a permutation of the input"
    return True, "ok"


def main():
    ap = dump_peer_args(__doc__)
    a = ap.parse_args()
    import torch
    dev, devname = pick_device(torch, a.quick)
    timer = Timer(torch, dev, warmup=1 if a.quick else 2, reps=a.reps or (3 if a.quick else 10))
    rec = Recorder(a.jsonl, "torch", devname)
    cases = sort_cases(a.dump)
    if not cases:
        print("sort_torch: no sort dumps under %s" % a.dump, file=sys.stderr)
        return 1
    print("# torch.sort of (u64 key, u32 value) pairs on %s, torch %s" % (devname, torch.__version__))
    rows, failed = [], 0
    budget = Budget(a.budget_s)
    for case, _, load in cases:
        if not budget.allows(case):
            continue
        keys, vals = load()
        k = torch.from_numpy((keys ^ TOP).view(np.int64)).to(dev)
        v = torch.from_numpy(vals.view(np.int32)).to(dev)
        out = {}
        n = keys.size

        def sort_pairs():
            sk, perm = torch.sort(k)
            out["k"], out["v"] = sk, v[perm]

        def sort_keys():
            torch.sort(k)

        pairs_ms = timer.median_ms(sort_pairs)
        keys_ms = timer.median_ms(sort_keys)
        sort_pairs()
        sk = out["k"].cpu().numpy().view(np.uint64) ^ TOP
        sv = out["v"].cpu().numpy().view(np.uint32)
        ok, msg = check(keys, vals, sk, sv)
        if n > 1 and np.all(keys[1:] >= keys[:-1]):
            msg += "; NOTE: the dumped keys were already ascending"
        rate = n / (pairs_ms * 1e-3) * 1e-9 if pairs_ms > 0 else 0.0
        rec("sort", case, "torch_ms", pairs_ms, "ms", vs="sort_ms")
        rec("sort", case, "torch_keys_only_ms", keys_ms, "ms")
        rec("sort", case, "torch_gpairs_per_s", rate, "Gpairs/s", vs="gpairs_per_s")
        rec("sort", case, "torch_sorted_ok", 1 if ok else 0, "bool")
        rows.append((case, n, "%.3f" % pairs_ms, "%.3f" % keys_ms, "%.3f" % rate, msg))
        failed += 0 if ok else 1
    table(rows, ["case", "pairs", "sort+gather ms", "keys only ms", "Gpairs/s", "check"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
