"""pandas Series and Index whose labels live in Arrow (pd.ArrowDtype string or
binary, "string[pyarrow]", pandas 3's "str") reach lookup as their Arrow
array, not as a Python object a row, with the same codes and nulls as the
object path. Skipped where pyarrow is not importable (Debian 12's CI)."""
import numpy as np
import pandas as pd
import pytest

import tabcl
from tabcl import _columns

pa = pytest.importorskip("pyarrow")

VOCAB = ["red", "green", "blau", "", "grün", "x" * 300]
LABELS = ["green", None, "grün", "", "nope", "red", None, "blau", "x" * 300, "x" * 299]


def dtypes():
    out = [("arrow-string", pd.ArrowDtype(pa.string())),
           ("arrow-large_string", pd.ArrowDtype(pa.large_string())),
           ("string[pyarrow]", pd.StringDtype("pyarrow"))]
    try:
        s = pd.Series(["a", None], dtype="str")   # pandas 3: Arrow-backed when pyarrow is there
        if isinstance(s.dtype, pd.StringDtype) and str(s.dtype.storage).startswith("pyarrow"):
            out.append(("str", "str"))
    except TypeError:
        pass
    return out


DTYPES = dtypes()
fast_path = pytest.mark.skipif(not hasattr(pa.Array, "__arrow_c_array__"),
                               reason="this pyarrow's arrays lack __arrow_c_array__")


@pytest.fixture(scope="module")
def idx(ctx):
    return tabcl.CategoryIndex.fit(ctx, [VOCAB])


def want(labels):
    return pd.Index(VOCAB, dtype=object).get_indexer(list(labels)).tolist()


@pytest.fixture
def no_sequence(monkeypatch):
    """Fails a test whose column went through the Python-sequence path."""
    def refuse(col, c):
        raise AssertionError("column %d went through a Python sequence" % c)
    monkeypatch.setattr(_columns, "_labels_sequence", refuse)


@fast_path
@pytest.mark.parametrize("name,dtype", DTYPES, ids=[n for n, _ in DTYPES])
def test_series_as_arrow(idx, no_sequence, name, dtype):
    s = pd.Series(LABELS, dtype=dtype)
    assert _columns._arrow_backed_array(s) is not None
    assert idx.lookup([s])[0].tolist() == want(LABELS)
    assert idx.lookup([pd.Index(s)])[0].tolist() == want(LABELS)
    # a slice (an Arrow offset), two chunks joined, nothing at all
    assert idx.lookup([s.iloc[3:]])[0].tolist() == want(LABELS[3:])
    two = pd.concat([s.iloc[:4], s.iloc[4:]], ignore_index=True)
    assert idx.lookup([two])[0].tolist() == want(LABELS)
    assert idx.lookup([s.iloc[:0]])[0].tolist() == []
    # align takes it as its own dictionary (row i category i)
    assert idx.align([s])[0].tolist() == want(LABELS)


@pytest.mark.parametrize("name,dtype", DTYPES, ids=[n for n, _ in DTYPES])
def test_same_codes_as_object_path(idx, name, dtype):
    s = pd.Series(LABELS, dtype=dtype)
    assert idx.lookup([s])[0].tolist() == idx.lookup([s.to_numpy(dtype=object)])[0].tolist()


@pytest.fixture(scope="module")
def binary_idx(ctx):
    return tabcl.CategoryIndex.fit(ctx, [[b"\x00a", b"b", b"\xff\xfe"]])


@fast_path
def test_binary_series(binary_idx, no_sequence):
    idx = binary_idx
    s = pd.Series([b"b", None, b"\xff\xfe", b"zz", b"\x00a"], dtype=pd.ArrowDtype(pa.binary()))
    assert idx.lookup([s])[0].tolist() == [1, -1, 2, -1, 0]
    s = s.astype(pd.ArrowDtype(pa.large_binary()))
    assert idx.lookup([s])[0].tolist() == [1, -1, 2, -1, 0]


def test_other_arrow_types_take_the_old_path(idx):
    assert _columns._arrow_backed_array(pd.Series([1, 2], dtype=pd.ArrowDtype(pa.int64()))) is None
    with pytest.raises(tabcl.TypeMismatch):
        idx.lookup([pd.Series([1, 2], dtype=pd.ArrowDtype(pa.int64()))])
    # object and categorical Series are untouched
    assert _columns._arrow_backed_array(pd.Series(LABELS, dtype=object)) is None
    known = [x for x in LABELS if x is None or x in VOCAB]
    cat = pd.Series(pd.Categorical(known, categories=VOCAB))
    assert _columns._arrow_backed_array(cat) is None
    assert idx.lookup([cat])[0].tolist() == want(known)


def test_many_rows(idx):
    rng = np.random.default_rng(7)
    pool = np.array(VOCAB + ["nope", None], dtype=object)
    labels = pool[rng.integers(0, len(pool), 100_000)]
    s = pd.Series(pa.array(labels, type=pa.large_string()), dtype=pd.ArrowDtype(pa.large_string()))
    np.testing.assert_array_equal(idx.lookup([s])[0], want(labels))
