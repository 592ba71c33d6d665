"""tabcl.dask: categorical columns of a Dask DataFrame encoded on a cluster.

Each worker process owns one tabcl context, made on first use from the
worker's environment (TABCL_DEVICE picks its device; start one worker per
device with that variable set). The index travels as its saved bytes
(CategoryIndex.to_bytes), one copy per worker, and is loaded there once;
the handle itself is never pickled.
"""
import hashlib
import threading

import numpy as np

from ._errors import InvalidArgument
from ._index import CategoryIndex

_lock = threading.Lock()
_context = None
_indexes = {}   # sha256 of the saved bytes -> CategoryIndex on this process's context


def _worker_context():
    global _context
    with _lock:
        if _context is None:
            from . import Context
            _context = Context()   # TABCL_DEVICE and TABCL_CACHE_DIR of this worker
        return _context


def _worker_index(data):
    key = hashlib.sha256(data).hexdigest()
    ctx = _worker_context()
    with _lock:
        idx = _indexes.get(key)
    if idx is None:
        idx = CategoryIndex.from_bytes(ctx, data)
        with _lock:
            idx = _indexes.setdefault(key, idx)
    return idx


def encode_partition(df, data, columns):
    """One pandas partition with columns replaced by their int32 codes."""
    idx = _worker_index(data)
    codes = idx.lookup([df[c] for c in columns])
    out = df.copy()
    for c, k in zip(columns, codes):
        out[c] = k
    return out


def encode(ddf, idx, columns):
    """A Dask DataFrame like ddf with each of columns (as many as idx has,
    in its order) replaced by its int32 codes in idx, -1 for null or unknown
    labels. Lazy, as Dask is: compute() runs it on the workers."""
    import dask
    if isinstance(columns, (str, bytes)):
        raise InvalidArgument("columns is one name (%r); give a list of column names" % (columns,))
    columns = list(columns)
    if len(columns) != idx.num_columns:
        raise InvalidArgument("%d columns given; the index has %d" %
                              (len(columns), idx.num_columns))
    missing = [c for c in columns if c not in ddf.columns]
    if missing:
        raise InvalidArgument("columns not in the DataFrame: %s" % ", ".join(map(str, missing)))
    meta = ddf._meta.copy()
    for c in columns:
        meta[c] = np.empty(0, dtype=np.int32)
    # one graph key for the bytes: each worker fetches them once
    data = dask.delayed(idx.to_bytes(), pure=True)
    return ddf.map_partitions(encode_partition, data, columns, meta=meta)
