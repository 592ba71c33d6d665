"""Columns as the C extension takes them: a column (list of str/bytes/None,
numpy array, pandas Series or Index, Categorical, Arrow array through
``__arrow_c_array__``) becomes a ``_tabcl.Strings`` (labels) or a
``_tabcl.Dictionary`` (categories and codes).

Labels are bytes: str is encoded as UTF-8, bytes are taken as they are.
None, float NaN, pandas.NA and pandas.NaT are null. numpy 'U' and 'S' arrays
give their elements as numpy does (without trailing NUL characters).
"""
import sys

import numpy as np

from . import _tabcl
from ._errors import InvalidArgument, TypeMismatch


def _null_singletons():
    pd = sys.modules.get("pandas")
    if pd is None:
        return ()
    return (pd.NA, pd.NaT)


def _pandas():
    return sys.modules.get("pandas")


def _is_categorical(col):
    pd = _pandas()
    if pd is None:
        return False
    if isinstance(col, pd.Categorical):
        return True
    if isinstance(col, (pd.Series, pd.Index)):
        return isinstance(col.dtype, pd.CategoricalDtype)
    return False


class ArrowChunks:
    """A column read through the Arrow C stream interface: its schema
    capsule and one array capsule a chunk, in order. Each chunk becomes a
    Strings or Dictionary of its own; the chunks are never joined."""

    __slots__ = ("schema", "format", "arrays", "name")

    def __init__(self, schema, fmt, arrays, name=""):
        self.schema, self.format, self.arrays, self.name = schema, fmt, arrays, name

    @property
    def is_table(self):
        return self.format == "+s"

    def fields(self):
        """The columns of a table stream (record batches), each an ArrowChunks."""
        return [ArrowChunks(sc, fmt, arrays, name)
                for name, fmt, sc, arrays in _tabcl.struct_fields(self.schema, self.arrays)]


def _excluded(col):
    # numpy and pandas objects take the paths below even if some version
    # grows the protocols, so the null rules stay the same everywhere.
    return isinstance(col, np.ndarray) or _pandas_object(col)


def arrow_stream(col):
    """col's chunks as an ArrowChunks when it has __arrow_c_stream__ (pyarrow
    ChunkedArray, Table and RecordBatchReader, polars Series and DataFrame,
    DuckDB relations), else None."""
    if isinstance(col, ArrowChunks):
        return col
    if _excluded(col) or not hasattr(col, "__arrow_c_stream__"):
        return None
    return ArrowChunks(*_tabcl.read_stream(col.__arrow_c_stream__()))


def _stream_column(col, c):
    chunks = arrow_stream(col)
    if chunks is not None and chunks.is_table:
        raise TypeMismatch("column %d: a table of %d columns, not a column; pass it as the "
                           "columns themselves" % (c, len(chunks.fields())))
    return chunks


def _chunk_is_dictionary(chunks):
    return _tabcl.arrow_is_dictionary(chunks.schema)


def _arrow_capsules(col):
    if _excluded(col) or not hasattr(col, "__arrow_c_array__"):
        return None
    pair = col.__arrow_c_array__()
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise TypeMismatch("__arrow_c_array__() must return (schema capsule, array capsule)")
    return pair


def _pandas_object(col):
    pd = _pandas()
    return pd is not None and isinstance(col, (pd.Series, pd.Index, pd.Categorical))


def _arrow_backed_array(col):
    """The pyarrow array under a pandas Series or Index whose dtype keeps its
    labels in Arrow (pd.ArrowDtype of a string or binary type, "string[pyarrow]",
    pandas 3's "str"), an Array or a ChunkedArray; else None. Its nulls are
    the labels to_numpy(dtype=object) would give as None or NaN, so lookup
    reads the same labels and nulls without a Python object a row."""
    pa = sys.modules.get("pyarrow")
    pd = _pandas()
    if pa is None or pd is None or not isinstance(col, (pd.Series, pd.Index)):
        return None
    dtype = col.dtype
    arrow_dtype = getattr(pd, "ArrowDtype", None)
    if not ((arrow_dtype is not None and isinstance(dtype, arrow_dtype)) or
            (isinstance(dtype, pd.StringDtype) and str(dtype.storage).startswith("pyarrow"))):
        return None
    arr = getattr(col.array, "__arrow_array__", None)
    if arr is None:
        return None
    arr = arr()
    t = arr.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or
            pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        return None
    # A ChunkedArray is read chunk by chunk (__arrow_c_stream__), never joined.
    if hasattr(arr, "__arrow_c_stream__") and isinstance(arr, pa.ChunkedArray):
        return arr
    return arr if hasattr(arr, "__arrow_c_array__") else None


def _labels_sequence(col, c):
    """A Python sequence of labels for the C conversion."""
    if isinstance(col, (list, tuple)):
        return col
    if _pandas_object(col):
        return col.to_numpy(dtype=object).tolist()
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            raise InvalidArgument("column %d: a %d-D array; a column is 1-D" % (c, col.ndim))
        if col.dtype.kind in "OUS":
            return col.tolist()
        raise TypeMismatch("column %d: a numpy array of dtype %s is not a string column "
                           "(object, 'U' or 'S' arrays are)" % (c, col.dtype))
    if isinstance(col, (str, bytes)):
        raise TypeMismatch("column %d: a single %s, not a column of labels" % (c, type(col).__name__))
    try:
        return list(col)
    except TypeError:
        raise TypeMismatch("column %d: %s is not a column" % (c, type(col).__name__)) from None


def _with_backing(col):
    """A pandas Series kept in Arrow stands for its pyarrow array."""
    arr = _arrow_backed_array(col)
    return col if arr is None else arr


def to_strings_chunks(col, c):
    """col as a list of _tabcl.Strings: one a chunk of an Arrow stream, else
    one for the whole column."""
    if isinstance(col, _tabcl.Strings):
        return [col]
    col = _with_backing(col)
    chunks = _stream_column(col, c)
    if chunks is not None:
        return [_tabcl.Strings.from_arrow(chunks.schema, a) for a in chunks.arrays]
    return [to_strings(col, c)]


def to_strings(col, c):
    """col as one _tabcl.Strings (column index c names it in messages); a
    stream's chunks are copied into one (a fit takes its vocabulary whole)."""
    if isinstance(col, _tabcl.Strings):
        return col
    col = _with_backing(col)
    if _stream_column(col, c) is not None:
        parts = to_strings_chunks(col, c)
        return parts[0] if len(parts) == 1 else _tabcl.Strings.concat(parts)
    caps = _arrow_capsules(col)
    if caps is not None:
        return _tabcl.Strings.from_arrow(*caps)
    seq = _labels_sequence(col, c)
    try:
        return _tabcl.Strings.from_sequence(seq, _null_singletons())
    except TypeError as e:
        raise TypeMismatch("column %d: %s" % (c, e)) from None


def _codes_int32(codes, ncats, c):
    codes = np.asarray(codes)
    if codes.ndim != 1 or codes.dtype.kind not in "iu":
        raise TypeMismatch("column %d: codes must be a 1-D integer array, not %s of %d-D"
                           % (c, codes.dtype, codes.ndim))
    if codes.size and (codes.min() < -1 or codes.max() >= max(ncats, 0)):
        bad = int(np.flatnonzero((codes < -1) | (codes >= ncats))[0])
        raise InvalidArgument("column %d: code %d at row %d is outside [-1, %d)"
                              % (c, int(codes[bad]), bad, ncats))
    return np.ascontiguousarray(codes, dtype=np.int32)


def to_dictionary(col, c):
    """col as a _tabcl.Dictionary: a pandas Categorical (or category Series
    or Index), an Arrow dictionary array, a (categories, codes) pair, or any
    string column (each row its own category: align then equals lookup)."""
    if isinstance(col, _tabcl.Dictionary):
        return col
    if _is_categorical(col):
        pd = _pandas()
        cat = col if isinstance(col, pd.Categorical) else col.array
        if not isinstance(cat, pd.Categorical):
            cat = pd.Categorical(col)
        cats = to_strings(cat.categories.to_numpy(dtype=object).tolist(), c)
        return _tabcl.Dictionary.from_parts(cats, _codes_int32(cat.codes, len(cats), c))
    if _is_pair(col):
        cats = to_strings(col[0], c)
        return _tabcl.Dictionary.from_parts(cats, _codes_int32(col[1], len(cats), c))
    caps = _arrow_capsules(col)
    if caps is not None:
        if _is_arrow_dictionary(caps[0]):
            return _tabcl.Dictionary.from_arrow(*caps)
        return identity(_tabcl.Strings.from_arrow(*caps))
    return identity(to_strings(col, c))


def _is_pair(col):
    """A (categories, codes) pair, told apart from a 2-label tuple column by
    its second item being an array of codes rather than a label."""
    return (isinstance(col, tuple) and len(col) == 2 and col[1] is not None
            and not isinstance(col[1], (str, bytes, float)))


def _is_arrow_dictionary(schema_capsule):
    return _tabcl.arrow_is_dictionary(schema_capsule)


def identity(strings):
    """A dictionary whose categories are the column's labels, row i code i."""
    if len(strings) > np.iinfo(np.int32).max:
        raise InvalidArgument("a column of %d rows is too long for int32 codes" % len(strings))
    return _tabcl.Dictionary.from_parts(strings, np.arange(len(strings), dtype=np.int32))


def _stream_chunks(chunks):
    if _chunk_is_dictionary(chunks):
        return [_tabcl.Dictionary.from_arrow(chunks.schema, a) for a in chunks.arrays]
    return [_tabcl.Strings.from_arrow(chunks.schema, a) for a in chunks.arrays]


def to_lookup_chunks(col, c):
    """col as lookup takes it, a list of chunks (one unless col is an Arrow
    stream): Strings, or Dictionary for a Categorical or an Arrow dictionary
    array (lookup then goes through align)."""
    if not isinstance(col, (_tabcl.Strings, _tabcl.Dictionary)):
        chunks = _stream_column(_with_backing(col), c)
        if chunks is not None:
            return _stream_chunks(chunks)
    return [to_lookup_column(col, c)]


def to_dictionary_chunks(col, c):
    """col as align takes it, a list of Dictionary chunks (one unless col is
    an Arrow stream)."""
    if not isinstance(col, _tabcl.Dictionary) and not _is_categorical(col):
        chunks = _stream_column(_with_backing(col), c)
        if chunks is not None:
            return [x if isinstance(x, _tabcl.Dictionary) else identity(x)
                    for x in _stream_chunks(chunks)]
    return [to_dictionary(col, c)]


def to_lookup_column(col, c):
    """col as lookup takes it: a Strings, or a Dictionary for a Categorical
    or an Arrow dictionary array (lookup then goes through align)."""
    if isinstance(col, (_tabcl.Strings, _tabcl.Dictionary)):
        return col
    if _is_categorical(col):
        return to_dictionary(col, c)
    caps = _arrow_capsules(col)
    if caps is not None:
        if _is_arrow_dictionary(caps[0]):
            return _tabcl.Dictionary.from_arrow(*caps)
        return _tabcl.Strings.from_arrow(*caps)
    return to_strings(col, c)
