"""tabcl.CategoryIndex: tabcl_category_index_fit / lookup / align / save /
load, and its saved bytes (to_bytes / from_bytes) for sending it elsewhere."""
import os
import sys
import tempfile

import numpy as np

from . import _tabcl
from ._columns import (arrow_stream, identity, to_dictionary_chunks, to_lookup_chunks,
                       to_strings)
from ._errors import InvalidArgument, TypeMismatch

_ORDERS = {"position": 0, "value": 1}


def _column_list(columns):
    """The columns of a sequence of columns, of a pandas DataFrame, or of a
    table with __arrow_c_stream__ (pyarrow Table, polars DataFrame, DuckDB
    relation), whose columns are read chunk by chunk."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(columns, pd.DataFrame):
        return [columns.iloc[:, i] for i in range(columns.shape[1])]
    if not isinstance(columns, (list, tuple)) and hasattr(columns, "__arrow_c_stream__"):
        chunks = arrow_stream(columns)
        if not chunks.is_table:
            raise TypeMismatch("columns is one column (an Arrow stream of format '%s'); pass a "
                               "list of columns" % chunks.format)
        return chunks.fields()
    if isinstance(columns, (str, bytes)) or not hasattr(columns, "__len__"):
        raise TypeMismatch("columns must be a sequence of columns, not %s" % type(columns).__name__)
    return list(columns)


_EMPTY = None


def _empty_strings():
    global _EMPTY
    if _EMPTY is None:
        _EMPTY = _tabcl.Strings.from_sequence([])
    return _EMPTY


def _encode_chunks(h, cols, call):
    """Codes of columns given as lists of chunks: one int32 array a column,
    filled in rounds, round r encoding every column's chunk r (an empty
    column where it has fewer) into its slice of the output. call(h, chunks,
    outputs) is _tabcl.lookup or _tabcl.align; a round that holds a
    Dictionary goes through align."""
    out = [np.empty(sum(len(x) for x in chunks), dtype=np.int32) for chunks in cols]
    starts = [np.cumsum([0] + [len(x) for x in chunks]) for chunks in cols]
    for r in range(max([len(chunks) for chunks in cols] + [1])):
        parts, outs = [], []
        for c, chunks in enumerate(cols):
            if r < len(chunks):
                parts.append(chunks[r])
                outs.append(out[c][starts[c][r]:starts[c][r + 1]])
            else:
                parts.append(_empty_strings())
                outs.append(out[c][:0])
        if call is _tabcl.align or any(isinstance(x, _tabcl.Dictionary) for x in parts):
            parts = [x if isinstance(x, _tabcl.Dictionary) else identity(x) for x in parts]
            _tabcl.align(h, parts, outs)
        else:
            _tabcl.lookup(h, parts, outs)
    return out


class CategoryIndex:
    """A fitted categorical index: per column, a vocabulary of labels whose
    codes lookup and align give (-1 for null or unknown labels)."""

    __slots__ = ("_h",)

    def __init__(self, handle):
        if not isinstance(handle, _tabcl.Index):
            raise TypeError("make a CategoryIndex with CategoryIndex.fit, load or from_bytes")
        self._h = handle

    @classmethod
    def fit(cls, ctx, columns, order="position"):
        """Fits one vocabulary per column. order="position": a label's code is
        its (last) position in the vocabulary; order="value": its rank among
        the column's distinct labels, bytewise."""
        if order not in _ORDERS:
            raise InvalidArgument("order must be 'position' or 'value', not %r" % (order,))
        cols = [to_strings(c, i) for i, c in enumerate(_column_list(columns))]
        return cls(_tabcl.fit(ctx, cols, _ORDERS[order]))

    @property
    def num_columns(self):
        return self._h.num_columns

    @property
    def context(self):
        return self._h.context

    def num_codes(self, c):
        """The vocabulary's length (order="position") or its number of
        distinct labels (order="value")."""
        return self._h.num_codes(c)

    def lookup(self, columns):
        """One numpy int32 array of codes per column, -1 for null or unknown."""
        cols = [to_lookup_chunks(c, i) for i, c in enumerate(_column_list(columns))]
        return _encode_chunks(self._h, cols, _tabcl.lookup)

    def align(self, columns):
        """Codes of dictionary-encoded columns (pandas Categorical or category
        Series, Arrow dictionary arrays, (categories, codes) pairs) in this
        index's vocabularies: one numpy int32 array per column."""
        cols = [to_dictionary_chunks(c, i) for i, c in enumerate(_column_list(columns))]
        return _encode_chunks(self._h, cols, _tabcl.align)

    @classmethod
    def fit_cl(cls, ctx, columns, order="position", wait_for=None):
        """fit from string columns in device buffers (a list of
        tabcl.DeviceStrings, see tabcl_category_index_fit_cl), after the
        events in wait_for. Returns (index, event); the event has completed."""
        if order not in _ORDERS:
            raise InvalidArgument("order must be 'position' or 'value', not %r" % (order,))
        from ._device import fit_cl
        h, ev = fit_cl(ctx, columns, _ORDERS[order], wait_for)
        return cls(h), ev

    def lookup_cl(self, columns, out=None, wait_for=None):
        """Codes of string columns in device buffers (a list of
        tabcl.DeviceStrings), enqueued after the events in wait_for and the
        input Arrays' own, with no host copy. out: None (new int32 pyopencl
        Arrays) or one int32 Array or Buffer per column. Returns (codes,
        event): the outputs and the pyopencl Event of the work, which each
        output Array also waits for (Array.events)."""
        from ._device import lookup_cl
        return lookup_cl(self._h, columns, out, wait_for)

    def save(self, path):
        _tabcl.save(self._h, os.fsencode(path))

    @classmethod
    def load(cls, ctx, path):
        return cls(_tabcl.load(ctx, os.fsencode(path)))

    def to_bytes(self):
        """The saved file's bytes."""
        with tempfile.TemporaryDirectory(prefix="tabcl-") as d:
            path = os.path.join(d, "index.tabcl")
            self.save(path)
            with open(path, "rb") as f:
                return f.read()

    @classmethod
    def from_bytes(cls, ctx, data):
        """The index whose saved file holds data (as to_bytes gives)."""
        data = memoryview(data).cast("B")
        with tempfile.TemporaryDirectory(prefix="tabcl-") as d:
            path = os.path.join(d, "index.tabcl")
            with open(path, "wb") as f:
                f.write(data)
            return cls.load(ctx, path)

    def __reduce__(self):
        raise TypeError("a CategoryIndex cannot be pickled: send idx.to_bytes() and rebuild it "
                        "with tabcl.CategoryIndex.from_bytes(ctx, data) where it is used")

    def __repr__(self):
        return "<tabcl.CategoryIndex: %d columns>" % self.num_columns
