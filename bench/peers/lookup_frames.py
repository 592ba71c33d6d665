#!/usr/bin/env python3
"""The data-frame lookup peers, pyarrow and polars, on the lookup inputs
tabcl-bench dumped (--dump); their codes are checked against tabcl's.
Wall-clock medians of host work on the machine's cores, as tabcl's host
lookup (host_lookup_ms) is, which each figure is compared with.

What is timed (the Arrow arrays and polars Series over the dumped offsets and
bytes, and the vocabulary's unique labels with their last positions, are
made untimed; every figure ends with numpy int32 codes, -1 for absent):
  arrow_index_in_ms      pyarrow.compute.index_in(queries, value_set=unique
                         labels), mapped to positions. Arrow builds the set's
                         hash table in every call (it has no reusable one).
  arrow_dict_encode_ms   pyarrow.compute.dictionary_encode(queries), then
                         index_in of its (small) dictionary and a take: how an
                         Arrow user codes a column against a vocabulary
                         through its dictionary.
  polars_replace_ms      Series.replace_strict(unique labels, positions,
                         default=-1, return_dtype=Int32).
  polars_enum_ms         Series.cast(pl.Enum(unique labels), strict=False)
                         and its physical codes mapped to positions. Enum
                         takes UTF-8 strings only: a case with other bytes is
                         skipped with a note.
Each peer is skipped with a note when its package is not importable.

  lookup_frames.py --dump DIR [--jsonl PATH] [--quick] [--reps N]
"""
import sys

import numpy as np

from common import Budget, Recorder, dump_peer_args, host_median_ms, table
from dumpfmt import compare_codes, lookup_cases


def to_positions(i, positions):
    """Indices into the unique labels (-1 or negative: absent) to positions."""
    if positions.size == 0:
        return np.full(len(i), -1, dtype=np.int32)
    return np.where(i >= 0, positions[np.maximum(i, 0)], -1).astype(np.int32)


def unique_last(labels):
    """The distinct labels in first-seen order, each with its last position."""
    last = {lab: i for i, lab in enumerate(labels)}
    return list(last.keys()), np.fromiter(last.values(), dtype=np.int32, count=len(last))


def is_utf8(s):
    try:
        s.data.tobytes().decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def arrow_of(pa, s, utf8):
    """A zero-copy Arrow array over a dumped column's offsets and bytes."""
    typ = pa.large_string() if utf8 else pa.large_binary()
    return pa.Array.from_buffers(typ, len(s), [None, pa.py_buffer(s.offsets), pa.py_buffer(s.data)])


class Column:
    """One column of a case, in the shapes every peer takes."""

    def __init__(self, pa, v, q):
        self.utf8 = is_utf8(v) and is_utf8(q)
        uniq, self.positions = unique_last(v.labels())
        self.uniq = [x.decode("utf-8") for x in uniq] if self.utf8 else uniq
        self.query = arrow_of(pa, q, self.utf8)
        typ = pa.large_string() if self.utf8 else pa.large_binary()
        self.vset = pa.array(self.uniq, type=typ)


def arrow_index_in(pc, col):
    i = pc.index_in(col.query, value_set=col.vset)
    return to_positions(i.fill_null(-1).to_numpy(zero_copy_only=False), col.positions)


def arrow_dict_encode(pc, col):
    d = pc.dictionary_encode(col.query)
    dcodes = pc.index_in(d.dictionary, value_set=col.vset).fill_null(-1)
    per_entry = to_positions(dcodes.to_numpy(zero_copy_only=False), col.positions)
    return per_entry[d.indices.to_numpy(zero_copy_only=False)]


def polars_replace(pl, col, series):
    out = series.replace_strict(col.uniq, col.positions, default=-1, return_dtype=pl.Int32)
    return out.to_numpy()


def polars_enum(pl, col, series):
    e = series.cast(pl.Enum(col.uniq), strict=False).to_physical()
    return to_positions(e.fill_null(-1).cast(pl.Int64).to_numpy(), col.positions)


def check(case, codes):
    msgs = []
    for c, got in enumerate(codes):
        if case.codes[c] is None:
            msgs.append("column %d: no tabcl codes in the dump" % c)
            continue
        ok, msg = compare_codes(got, case.codes[c])
        if not ok:
            msgs.append("column %d: %s" % (c, msg))
    return not msgs, "yes" if not msgs else "NO: " + "; ".join(msgs)


def peers():
    """(name, metric, version note, fn(col) -> codes or None to skip), for
    the packages that import."""
    out = []
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError as e:
        print("note: pyarrow not importable (%s): skipping the Arrow peers" % e)
        return None, out
    note = "pyarrow %s" % pa.__version__
    out.append(("pyarrow index_in", "arrow_index_in_ms", note, lambda col: arrow_index_in(pc, col)))
    out.append(("pyarrow dictionary_encode", "arrow_dict_encode_ms", note,
                lambda col: arrow_dict_encode(pc, col)))
    try:
        import polars as pl
    except ImportError as e:
        print("note: polars not importable (%s): skipping the polars peers" % e)
        return pa, out
    note = "polars %s" % pl.__version__

    def series(col):
        s = getattr(col, "_pl", None)
        if s is None:
            s = col._pl = pl.Series("q", col.query)
        return s

    out.append(("polars replace_strict", "polars_replace_ms", note,
                lambda col: polars_replace(pl, col, series(col))))
    out.append(("polars Enum", "polars_enum_ms", note,
                lambda col: polars_enum(pl, col, series(col)) if col.utf8 else None))
    return pa, out


def run_case(case, pa, plist, rec, reps, rows):
    """Every peer on one case; returns the number of failed checks."""
    cols = [Column(pa, case.vocab[c], case.query[c]) for c in range(case.ncols)]
    failed = 0
    for name, metric, note, fn in plist:
        base = metric[:-3]
        try:
            codes = [fn(col) for col in cols]
            if any(c is None for c in codes):
                rows.append((case.case, name, "skipped", "", "labels are not all UTF-8"))
                continue
            ok, msg = check(case, codes)
            t = sum(host_median_ms(lambda col=col: fn(col), reps=reps) for col in cols)
        except Exception as e:  # one peer failing must not hide the others' figures
            ok, msg, t = False, "failed: %r" % (e,), None
        if t is not None:
            rec("lookup", case.case, metric, t, "ms", vs="host_lookup_ms", note=note)
        rec("lookup", case.case, base + "_codes_match", 1 if ok else 0, "bool", note=note)
        rows.append((case.case, name, "%.3f" % t if t is not None else "", msg, note))
        failed += 0 if ok else 1
    return failed


def main():
    ap = dump_peer_args(__doc__)
    a = ap.parse_args()
    reps = a.reps or (3 if a.quick else 5)
    budget = Budget(a.budget_s)
    rec = Recorder(a.jsonl, "frames", "host CPU")
    cases = lookup_cases(a.dump)
    if not cases:
        print("lookup_frames: no lookup dumps under %s" % a.dump, file=sys.stderr)
        return 1
    pa, plist = peers()
    if not plist:
        return 0
    print("# data-frame lookup peers (%s)" % ", ".join(p[0] for p in plist))
    rows, failed = [], 0
    for case in cases:
        if not budget.allows(case.case):
            continue
        case.load()
        failed += run_case(case, pa, plist, rec, reps, rows)
        case.unload()
    table(rows, ["case", "peer", "lookup ms", "codes = tabcl's", "note"])
    budget.report()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
