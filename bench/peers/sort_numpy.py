#!/usr/bin/env python3
"""The CPU sort peer: numpy's stable argsort of the same 64-bit keys, then
a gather of the keys and of the 32-bit values by the permutation, on the
sort inputs tabcl-bench dumped (--dump). numpy sorts uint64 keys as
unsigned, so no key is changed. The result is checked as sort_torch.py
checks it (keys ascending, the pairs a permutation of the input), and
equal keys keep their input order, since the sort is stable.

The time is wall-clock, the median of --reps runs after one warm-up, on
the cores numpy uses (its sort is one thread).

  sort_numpy.py --dump DIR [--jsonl PATH] [--reps N]
"""
import os
import sys
import time

import numpy as np

from common import Budget, Recorder, dump_peer_args, table
from dumpfmt import sort_cases
from sort_torch import check


def sort_pairs(keys, vals):
    """(sorted keys, their values, the permutation)."""
    order = np.argsort(keys, kind="stable")
    return keys[order], vals[order], order


def main():
    ap = dump_peer_args(__doc__)
    a = ap.parse_args()
    reps = a.reps or (3 if a.quick else 5)
    cases = sort_cases(a.dump)
    if not cases:
        print("sort_numpy: no sort dumps under %s" % a.dump, file=sys.stderr)
        return 1
    dev = "cpu: numpy %s, %d cores" % (np.__version__, os.cpu_count() or 0)
    rec = Recorder(a.jsonl, "numpy", dev)
    print("# numpy stable argsort + gather of (u64 key, u32 value) pairs on %s" % dev)
    rows, failed = [], 0
    budget = Budget(a.budget_s)
    for case, n, load in cases:
        if not budget.allows(case):
            continue
        keys, vals = load()
        sk, sv, order = sort_pairs(keys, vals)   # the warm-up, also checked
        ok, msg = check(keys, vals, sk, sv)
        if ok:
            # stable: within a run of equal keys the input order is kept
            eq = sk[1:] == sk[:-1]
            ok = bool(np.all(order[1:][eq] > order[:-1][eq]))
            msg = "ok" if ok else "equal keys out of input order"
        if not ok:
            rows.append((case, n, "failed", "", msg))
            failed += 1
            continue
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            sort_pairs(keys, vals)
            times.append((time.perf_counter() - t0) * 1e3)
        ms = float(np.median(times))
        rec("sort", case, "numpy_sort_ms", ms, "ms", vs="sort_ms")
        rec("sort", case, "numpy_mpairs_per_s", n / (ms * 1e-3) * 1e-6, "Mpairs/s", vs="mpairs_per_s")
        rec("sort", case, "numpy_sorted_ok", 1, "bool")
        rows.append((case, n, "%.2f" % ms, "%.1f" % (n / (ms * 1e-3) * 1e-6), msg))
    table(rows, ["case", "pairs", "ms", "Mpairs/s", "check"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
