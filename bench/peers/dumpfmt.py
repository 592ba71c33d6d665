"""Reading (and, for tests, writing) the inputs tabcl-bench leaves with
--dump DIR, so the peers work on exactly the same data:

  sort:   DIR/sort_<case>.keys.u64, DIR/sort_<case>.vals.u32   (little-endian)
  lookup: DIR/<case>/meta.json {"case":..., "ncols":N, "order":"position"}
          DIR/<case>/vocab_<c>.offsets, query_<c>.offsets   int64, n+1 entries from 0
          DIR/<case>/vocab_<c>.data,    query_<c>.data      bytes
          DIR/<case>/codes_<c>.i32   tabcl's codes, -1 = not found
"""
import glob
import json
import os

import numpy as np


def sort_cases(dump_dir):
    """[(case, number of pairs, load)], smallest first; load() reads
    (keys uint64[n], vals uint32[n])."""
    out = []
    for kpath in glob.glob(os.path.join(dump_dir, "sort_*.keys.u64")):
        case = os.path.basename(kpath)[len("sort_"):-len(".keys.u64")]
        vpath = kpath[:-len(".keys.u64")] + ".vals.u32"

        def load(case=case, kpath=kpath, vpath=vpath):
            keys = np.fromfile(kpath, dtype="<u8")
            vals = np.fromfile(vpath, dtype="<u4")
            if keys.shape != vals.shape:
                raise ValueError("%s: %d keys but %d values" % (case, keys.size, vals.size))
            return keys, vals
        out.append((case, os.path.getsize(kpath) // 8, load))
    out.sort(key=lambda t: (t[1], t[0]))
    return out


class Strings:
    """One Arrow-layout string array: offsets int64[n+1] and the bytes."""

    def __init__(self, offsets, data):
        offsets = np.asarray(offsets, dtype=np.int64)
        data = np.asarray(data, dtype=np.uint8)
        if offsets.size < 1 or offsets[0] != 0 or np.any(np.diff(offsets) < 0) \
                or offsets[-1] != data.size:
            raise ValueError("bad offsets (%d entries for %d bytes)" % (offsets.size, data.size))
        self.offsets, self.data = offsets, data

    def __len__(self):
        return self.offsets.size - 1

    def labels(self):
        """The labels as Python bytes objects."""
        raw = self.data.tobytes()
        o = self.offsets.tolist()
        return [raw[o[i]:o[i + 1]] for i in range(len(o) - 1)]

    @staticmethod
    def read(prefix):
        return Strings(np.fromfile(prefix + ".offsets", dtype="<i8"),
                       np.fromfile(prefix + ".data", dtype=np.uint8))

    def write(self, prefix):
        self.offsets.astype("<i8").tofile(prefix + ".offsets")
        self.data.tofile(prefix + ".data")

    @staticmethod
    def from_labels(labels):
        lens = np.array([len(x) for x in labels], dtype=np.int64)
        offsets = np.zeros(len(labels) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        data = np.frombuffer(b"".join(labels), dtype=np.uint8).copy()
        return Strings(offsets, data)


class LookupCase:
    """One lookup case of a dump. Sizes come from the file sizes; the arrays
    are read by load() and dropped by unload(), so a sweep of large cases
    holds one at a time."""

    def __init__(self, case_dir):
        self.dir = case_dir
        with open(os.path.join(case_dir, "meta.json")) as f:
            self.meta = json.load(f)
        self.case = self.meta.get("case", os.path.basename(case_dir.rstrip("/")))
        order = self.meta.get("order", "position")
        if order != "position":
            raise ValueError("%s: codes in order %r; only 'position' is understood" % (self.case, order))
        self.ncols = int(self.meta["ncols"])
        self.vocab = self.query = self.codes = None

    def _labels(self, kind):
        return [os.path.getsize(os.path.join(self.dir, "%s_%d.offsets" % (kind, c))) // 8 - 1
                for c in range(self.ncols)]

    def _bytes(self):
        return sum(os.path.getsize(os.path.join(self.dir, "%s_%d.data" % (k, c)))
                   for k in ("vocab", "query") for c in range(self.ncols))

    def nqueries(self):
        return sum(self._labels("query"))

    def max_queries(self):
        return max(self._labels("query"))

    def nvocab(self):
        return sum(self._labels("vocab"))

    def load(self):
        self.vocab, self.query, self.codes = [], [], []
        for c in range(self.ncols):
            self.vocab.append(Strings.read(os.path.join(self.dir, "vocab_%d" % c)))
            self.query.append(Strings.read(os.path.join(self.dir, "query_%d" % c)))
            cpath = os.path.join(self.dir, "codes_%d.i32" % c)
            self.codes.append(np.fromfile(cpath, dtype="<i4") if os.path.exists(cpath) else None)
            if self.codes[-1] is not None and self.codes[-1].size != len(self.query[-1]):
                raise ValueError("%s column %d: %d codes for %d queries"
                                 % (self.case, c, self.codes[-1].size, len(self.query[-1])))
        return self

    def unload(self):
        self.vocab = self.query = self.codes = None


def lookup_cases(dump_dir):
    """The lookup cases under dump_dir, smallest first (not yet loaded)."""
    out = []
    for meta in glob.glob(os.path.join(dump_dir, "*", "meta.json")):
        out.append(LookupCase(os.path.dirname(meta)))
    out.sort(key=lambda c: (c._bytes() + 8 * (c.nvocab() + c.nqueries()), c.case))
    return out


def reference_codes(vocab_labels, query_labels):
    """Code = the position of the label in the vocabulary, its last one when it
    occurs several times; -1 when absent."""
    last = {lab: i for i, lab in enumerate(vocab_labels)}
    return np.array([last.get(q, -1) for q in query_labels], dtype=np.int32)


def compare_codes(got, want):
    """(match, message) for two int32 code arrays."""
    got = np.asarray(got, dtype=np.int64)
    want = np.asarray(want, dtype=np.int64)
    if got.shape != want.shape:
        return False, "shape %s vs %s" % (got.shape, want.shape)
    bad = np.nonzero(got != want)[0]
    if bad.size == 0:
        return True, "all %d equal" % got.size
    i = int(bad[0])
    return False, "%d of %d differ, first at %d: %d vs %d" % (bad.size, got.size, i, got[i], want[i])
