#!/usr/bin/env python3
"""The host lookup peers, pandas Index.get_indexer and
pyarrow.compute.index_in, on the lookup inputs tabcl-bench dumped; their
codes are checked against tabcl's. Wall-clock medians (host work).

What is timed (building Python objects or Arrow arrays from the dumped
buffers is not):
  pandas_fit_ms    pd.Index(vocabulary), dropping repeated labels but their
                   last (codes are positions, pandas refuses a non-unique
                   index), and building its hash table
  pandas_ms        get_indexer(queries) on that fitted index, mapped to positions
  pandas_cold_ms   both at once from nothing, the way a one-off script does it
  pandas_fresh_fit_ms, pandas_fresh_ms
                   the fit and get_indexer again, each repetition on Python
                   objects made anew (untimed) from the dumped bytes. CPython
                   keeps a str's (or bytes') hash in the object once computed,
                   so from the second call on, the figures above hash nothing:
                   a fit of long labels then reads no label byte. Labels read
                   from a file or a network arrive as new objects, as here.
                   Reported beside the targets, which stay against the above
  pandas_align_ms  where the case has an align dump: a pandas Categorical of
                   the dumped categories and codes re-coded to the fitted
                   labels, Categorical.set_categories(fitted index), as a
                   pandas user re-codes a column to a model's categories
                   (the Categorical and the fitted Index are built untimed)
  pyarrow_ms       pyarrow.compute.index_in(queries, value_set=the unique
                   labels), mapped to positions; Arrow rebuilds the set's hash
                   table on every call (it has no reusable one), so this
                   figure includes a fit. Queries are zero-copy Arrow arrays
                   over the dumped offsets and bytes. Skipped with a note when
                   pyarrow is not importable.

  lookup_host.py --dump DIR [--jsonl PATH] [--quick] [--reps N]
"""
import sys

import numpy as np

from common import Budget, Recorder, dump_peer_args, host_median_ms, table
from dumpfmt import compare_codes, lookup_cases


def as_python(labels):
    """str when every label is UTF-8 (what a pandas user holds), else bytes."""
    try:
        return [x.decode("utf-8") for x in labels], "str"
    except UnicodeDecodeError:
        return labels, "bytes"


def pandas_fit(pd, vocab):
    idx = pd.Index(vocab)
    keep = ~idx.duplicated(keep="last")
    uniq = idx[keep]
    positions = np.flatnonzero(keep).astype(np.int32)
    uniq.get_indexer(uniq[:1])  # builds the hash table now, not in the first lookup
    return uniq, positions


def fresh_copies(labels, kind):
    """New objects equal to labels, with no hash computed yet."""
    if kind == "str":
        return [x.encode("utf-8").decode("utf-8") for x in labels]
    return [bytes(bytearray(x)) for x in labels]


def fresh_median_ms(make, fn, reps):
    """Median of fn(make()) over reps calls, make() untimed."""
    import time
    import statistics
    times = []
    for _ in range(max(reps, 1)):
        arg = make()
        t0 = time.perf_counter()
        fn(arg)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def pandas_lookup(uniq, positions, queries):
    i = uniq.get_indexer(queries)
    return to_positions(i, positions)


def to_positions(i, positions):
    """Indices into the unique labels (-1: absent) to vocabulary positions."""
    if positions.size == 0:
        return np.full(len(i), -1, dtype=np.int32)
    return np.where(i >= 0, positions[np.maximum(i, 0)], -1).astype(np.int32)


def arrow_array(pa, s, utf8):
    n = len(s)
    typ = pa.large_string() if utf8 else pa.large_binary()
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(s.offsets), pa.py_buffer(s.data)])


def run_pandas(case, rec, reps, rows):
    import pandas as pd
    codes, kinds = [], set()
    fit_t = look_t = cold_t = ffit_t = flook_t = 0.0
    for c in range(case.ncols):
        vocab, kind = as_python(case.vocab[c].labels())
        queries, qkind = as_python(case.query[c].labels())
        if kind != qkind:  # one side is not UTF-8: compare bytes on both
            vocab, queries, kind = case.vocab[c].labels(), case.query[c].labels(), "bytes"
        kinds.add(kind)
        qidx = pd.Index(queries)
        fitted = {}

        def fit():
            fitted["u"], fitted["p"] = pandas_fit(pd, vocab)

        def cold():
            u, p = pandas_fit(pd, vocab)
            return pandas_lookup(u, p, qidx)

        fit_t += host_median_ms(fit, reps=reps)
        look_t += host_median_ms(lambda: pandas_lookup(fitted["u"], fitted["p"], qidx), reps=reps)
        cold_t += host_median_ms(cold, reps=reps)
        ffit_t += fresh_median_ms(lambda: fresh_copies(vocab, kind), lambda v: pandas_fit(pd, v), reps)
        flook_t += fresh_median_ms(lambda: pd.Index(fresh_copies(queries, kind)),
                                   lambda q: pandas_lookup(fitted["u"], fitted["p"], q), reps)
        codes.append(pandas_lookup(fitted["u"], fitted["p"], qidx))
        dtype = str(qidx.dtype)
    ok, msg = check(case, codes)
    note = "pandas %s, labels as %s, index dtype %s" % (pd.__version__, "/".join(sorted(kinds)), dtype)
    rec("lookup", case.case, "queries", case.max_queries(), "rows")
    rec("lookup", case.case, "pandas_fit_ms", fit_t, "ms", vs="fit_ms", note=note)
    rec("lookup", case.case, "pandas_ms", look_t, "ms", vs="host_lookup_ms", note=note)
    rec("lookup", case.case, "pandas_cold_ms", cold_t, "ms", note=note)
    rec("lookup", case.case, "pandas_fresh_fit_ms", ffit_t, "ms", note=note + ", new objects")
    rec("lookup", case.case, "pandas_fresh_ms", flook_t, "ms", note=note + ", new query objects")
    rec("lookup", case.case, "pandas_codes_match", 1 if ok else 0, "bool")
    rows.append((case.case, "pandas", "%.3f" % fit_t, "%.3f" % look_t, "%.3f" % cold_t, msg, note))
    rows.append((case.case, "pandas, new objects", "%.3f" % ffit_t, "%.3f" % flook_t, "", msg,
                 "each call on labels made anew, their hashes not yet computed"))
    return ok


def run_pandas_align(case, rec, reps, rows):
    """The align dump of a one-column case, if any: (ran, ok)."""
    import os
    import pandas as pd
    from dumpfmt import Strings
    d = case.dir
    if case.ncols != 1 or not os.path.exists(os.path.join(d, "align_codes.i32")):
        return False, True
    cats = Strings.read(os.path.join(d, "align_categories"))
    codes = np.fromfile(os.path.join(d, "align_codes.i32"), dtype="<i4")
    want = np.fromfile(os.path.join(d, "align_want.i32"), dtype="<i4")
    vocab, kind = as_python(case.vocab[0].labels())
    clabels, ckind = as_python(cats.labels())
    if kind != ckind:
        vocab, clabels, kind = case.vocab[0].labels(), cats.labels(), "bytes"
    uniq, positions = pandas_fit(pd, vocab)
    cat = pd.Categorical.from_codes(codes, categories=pd.Index(clabels))

    def recode():
        return to_positions(cat.set_categories(uniq).codes, positions)

    t = host_median_ms(recode, reps=reps)
    got = recode()
    ok, msg = compare_codes(got, want)
    note = "pandas %s, labels as %s, %d categories" % (pd.__version__, kind, len(clabels))
    rec("align", case.case, "pandas_align_ms", t, "ms", vs="host_align_ms", note=note)
    rec("align", case.case, "pandas_align_codes_match", 1 if ok else 0, "bool")
    rows.append((case.case, "pandas align", "", "%.3f" % t, "", "yes" if ok else "NO: " + msg, note))
    return True, ok


def run_arrow(case, rec, reps, rows):
    import pyarrow as pa
    import pyarrow.compute as pc
    codes = []
    t = 0.0
    kinds = set()
    for c in range(case.ncols):
        v, q = case.vocab[c], case.query[c]
        utf8 = True
        try:
            v.data.tobytes().decode("utf-8")
            q.data.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            utf8 = False
        kinds.add("large_string" if utf8 else "large_binary")
        # Setup: the unique labels, each with its last position.
        last = {lab: i for i, lab in enumerate(v.labels())}
        uniq = list(last.keys())
        positions = np.fromiter(last.values(), dtype=np.int32, count=len(last))
        typ = pa.large_string() if utf8 else pa.large_binary()
        vset = pa.array([x.decode("utf-8") for x in uniq] if utf8 else uniq, type=typ)
        qarr = arrow_array(pa, q, utf8)

        def look():
            i = pc.index_in(qarr, value_set=vset)
            i = i.fill_null(-1).to_numpy(zero_copy_only=False)
            return to_positions(i, positions)

        t += host_median_ms(look, reps=reps)
        codes.append(look())
    ok, msg = check(case, codes)
    note = "pyarrow %s, %s; includes building the value set's hash table" % (
        pa.__version__, "/".join(sorted(kinds)))
    rec("lookup", case.case, "pyarrow_ms", t, "ms", vs="host_lookup_ms", note=note)
    rec("lookup", case.case, "pyarrow_codes_match", 1 if ok else 0, "bool")
    rows.append((case.case, "pyarrow", "", "%.3f" % t, "", msg, note))
    return ok


def check(case, codes):
    msgs, ok = [], True
    for c, got in enumerate(codes):
        if case.codes[c] is None:
            ok = False
            msgs.append("column %d: no tabcl codes in the dump" % c)
            continue
        m, msg = compare_codes(got, case.codes[c])
        if not m:
            ok = False
            msgs.append("column %d: %s" % (c, msg))
    return ok, "yes" if ok else "NO: " + "; ".join(msgs)


def main():
    ap = dump_peer_args(__doc__)
    a = ap.parse_args()
    reps = a.reps or (3 if a.quick else 5)
    budget = Budget(a.budget_s)
    rec = Recorder(a.jsonl, "host", "host CPU")
    cases = lookup_cases(a.dump)
    if not cases:
        print("lookup_host: no lookup dumps under %s" % a.dump, file=sys.stderr)
        return 1
    try:
        import pyarrow  # noqa: F401
        have_arrow = True
    except ImportError as e:
        have_arrow = False
        print("note: pyarrow not importable (%s): skipping pyarrow.compute.index_in" % e)
    print("# host lookup peers (pandas%s)" % (", pyarrow" if have_arrow else ""))
    rows, failed = [], 0
    peers = [("pandas", run_pandas)] + ([("pyarrow", run_arrow)] if have_arrow else [])
    for case in cases:
        if not budget.allows(case.case):
            continue
        case.load()
        for name, run in peers:
            try:
                ok = run(case, rec, reps, rows)
            except Exception as e:  # one peer failing must not hide the other's figures
                ok = False
                print("%s on %s failed: %r" % (name, case.case, e), file=sys.stderr)
                rec("lookup", case.case, name + "_codes_match", 0, "bool", note="failed: %r" % e)
            failed += 0 if ok else 1
        try:
            _, ok = run_pandas_align(case, rec, reps, rows)
        except Exception as e:
            ok = False
            print("pandas align on %s failed: %r" % (case.case, e), file=sys.stderr)
            rec("align", case.case, "pandas_align_codes_match", 0, "bool", note="failed: %r" % e)
        failed += 0 if ok else 1
        case.unload()
    table(rows, ["case", "peer", "fit ms", "lookup ms", "cold ms", "codes = tabcl's", "note"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
