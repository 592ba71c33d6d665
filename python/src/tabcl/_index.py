"""tabcl.CategoryIndex: tabcl_category_index_fit / lookup / align / save /
load, and its saved bytes (to_bytes / from_bytes) for sending it elsewhere."""
import os
import sys
import tempfile

import numpy as np

from . import _tabcl
from ._columns import identity, to_dictionary, to_lookup_column, to_strings
from ._errors import InvalidArgument, TypeMismatch

_ORDERS = {"position": 0, "value": 1}


def _column_list(columns):
    """The columns of a sequence of columns (or of a pandas DataFrame)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(columns, pd.DataFrame):
        return [columns.iloc[:, i] for i in range(columns.shape[1])]
    if isinstance(columns, (str, bytes)) or not hasattr(columns, "__len__"):
        raise TypeMismatch("columns must be a sequence of columns, not %s" % type(columns).__name__)
    return list(columns)


def _outputs(cols):
    return [np.empty(len(c), dtype=np.int32) for c in cols]


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
        cols = [to_lookup_column(c, i) for i, c in enumerate(_column_list(columns))]
        out = _outputs(cols)
        if any(isinstance(c, _tabcl.Dictionary) for c in cols):
            dicts = [c if isinstance(c, _tabcl.Dictionary) else identity(c) for c in cols]
            _tabcl.align(self._h, dicts, out)
        else:
            _tabcl.lookup(self._h, cols, out)
        return out

    def align(self, columns):
        """Codes of dictionary-encoded columns (pandas Categorical or category
        Series, Arrow dictionary arrays, (categories, codes) pairs) in this
        index's vocabularies: one numpy int32 array per column."""
        cols = [to_dictionary(c, i) for i, c in enumerate(_column_list(columns))]
        out = _outputs(cols)
        _tabcl.align(self._h, cols, out)
        return out

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
