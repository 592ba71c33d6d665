"""CategoryIndex on every kind of column, its errors, and its saved forms.
Expected codes come from a plain Python scan of the vocabulary."""
import numpy as np
import pandas as pd
import pytest

import tabcl

VOCAB = ["red", "green", "", "blau", "red", "grün", None]


def by_position(vocab, labels):
    """The contract's BY_POSITION code: a label's last position, -1 if absent or null."""
    last = {}
    for i, v in enumerate(vocab):
        if v is not None:
            last[v.encode() if isinstance(v, str) else v] = i
    return [-1 if x is None else last.get(x.encode() if isinstance(x, str) else x, -1)
            for x in labels]


def by_value(vocab, labels):
    keys = sorted({v.encode() if isinstance(v, str) else v for v in vocab if v is not None})
    rank = {k: i for i, k in enumerate(keys)}
    return [-1 if x is None else rank.get(x.encode() if isinstance(x, str) else x, -1)
            for x in labels]


QUERY = ["green", None, "grün", "", "GREEN", "red", "blau", "x"]


@pytest.fixture(scope="module")
def idx(ctx):
    return tabcl.CategoryIndex.fit(ctx, [VOCAB, [b"\xff\x00", b"a"]])


def expect(codes, want):
    assert codes.dtype == np.int32
    assert codes.tolist() == want


def test_fit_counts(ctx, idx):
    assert idx.num_columns == 2
    assert idx.num_codes(0) == len(VOCAB) and idx.num_codes(1) == 2
    by_val = tabcl.CategoryIndex.fit(ctx, [VOCAB], order="value")
    assert by_val.num_codes(0) == 5        # distinct present labels
    expect(by_val.lookup([QUERY])[0], by_value(VOCAB, QUERY))
    with pytest.raises(tabcl.InvalidArgument):
        idx.num_codes(2)


@pytest.mark.parametrize("kind", ["list", "tuple", "object", "U", "series", "string", "bytes",
                                  "S", "categorical", "category_series", "index", "nan"])
def test_column_kinds(idx, kind):
    q = list(QUERY)
    present = [x for x in q if x is not None]
    col = {
        "list": q,
        "tuple": tuple(q),
        "object": np.array(q, dtype=object),
        "U": np.array(present),
        "series": pd.Series(q, dtype=object),
        "string": pd.Series(q, dtype="string"),
        "bytes": [None if x is None else x.encode() for x in q],
        "S": np.array([x.encode() for x in present]),
        "categorical": pd.Categorical(q),
        "category_series": pd.Series(q, dtype="category"),
        "index": pd.Index(q, dtype=object),
        "nan": [np.nan if x is None else x for x in q],
    }[kind]
    labels = present if kind in ("U", "S") else q
    out = idx.lookup([col, [b"a", b"\xff\x00", None]])
    expect(out[0], by_position(VOCAB, labels))
    expect(out[1], [1, 0, -1])


def test_pandas_na_and_nat_are_null(idx):
    out = idx.lookup([["red", pd.NA, pd.NaT], []])
    expect(out[0], [4, -1, -1])
    expect(out[1], [])


def test_align(idx):
    cats = ["grün", "x", "red"]
    codes = np.array([2, -1, 0, 1, 2], dtype=np.int8)
    want = [4, -1, 5, -1, 4]
    out = idx.align([(cats, codes), pd.Categorical([b"a", None, b"\xff\x00"])])
    expect(out[0], want)
    expect(out[1], [1, -1, 0])
    out = idx.align([pd.Series(pd.Categorical.from_codes(codes, cats)), ["a", None]])
    expect(out[0], want)
    expect(out[1], [1, -1])   # a str label is its UTF-8 bytes: "a" is b"a"


def test_bad_columns(idx):
    with pytest.raises(tabcl.TypeMismatch, match="label 1 is int"):
        idx.lookup([["a", 3], []])
    with pytest.raises(tabcl.TypeMismatch, match="dtype int64"):
        idx.lookup([np.arange(3), []])
    with pytest.raises(tabcl.TypeMismatch, match="single str"):
        idx.lookup(["abc", []])
    with pytest.raises(tabcl.InvalidArgument, match="2-D"):
        idx.lookup([np.array([["a"]], dtype=object), []])
    with pytest.raises(tabcl.InvalidArgument, match="ncols is 1; the index has 2 columns"):
        idx.lookup([["a"]])
    with pytest.raises(tabcl.InvalidArgument, match="ncols is 0"):
        tabcl.CategoryIndex.fit(idx.context, [])
    with pytest.raises(tabcl.InvalidArgument, match="order"):
        tabcl.CategoryIndex.fit(idx.context, [["a"]], order="rank")
    with pytest.raises(tabcl.InvalidArgument, match="code 3 at row 1 is outside"):
        idx.align([(["a", "b", "c"], [0, 3]), []])
    with pytest.raises(tabcl.TypeMismatch, match="integer"):
        idx.align([(["a"], [0.5]), []])
    with pytest.raises(UnicodeEncodeError):
        idx.lookup([["\udc80"], []])
    with pytest.raises(TypeError):
        tabcl.CategoryIndex.fit(None, [["a"]])


def test_save_load_and_bytes(ctx, idx, tmp_path):
    path = tmp_path / "i.tabcl"
    idx.save(path)
    again = tabcl.CategoryIndex.load(ctx, str(path))
    data = idx.to_bytes()
    assert data == path.read_bytes()
    copy = tabcl.CategoryIndex.from_bytes(ctx, bytearray(data))
    for other in (again, copy):
        assert other.num_columns == 2
        out = other.lookup([QUERY, [b"a"]])
        expect(out[0], by_position(VOCAB, QUERY))
        expect(out[1], [1])
    with pytest.raises(tabcl.IoError) as e:
        tabcl.CategoryIndex.load(ctx, tmp_path / "missing.tabcl")
    assert isinstance(e.value, OSError) and e.value.status == "TABCL_IO_ERROR"
    with pytest.raises(tabcl.IoError):
        idx.save(tmp_path / "no-such-folder" / "x")
    with pytest.raises(tabcl.CorruptData):
        tabcl.CategoryIndex.from_bytes(ctx, data[:-3])
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 1
    with pytest.raises(tabcl.CorruptData, match="checksum"):
        tabcl.CategoryIndex.from_bytes(ctx, bytes(damaged))


def test_empty_columns_and_labels(ctx):
    idx = tabcl.CategoryIndex.fit(ctx, [[], ["", ""]])
    out = idx.lookup([["a"], ["", None, "b"]])
    expect(out[0], [-1])
    expect(out[1], [1, -1, -1])
