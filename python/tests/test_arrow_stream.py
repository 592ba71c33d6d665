"""Columns with __arrow_c_stream__ (pyarrow ChunkedArray and Table, polars
Series and DataFrame, DuckDB relations) read chunk by chunk: codes equal a
plain dict's, each chunk is read as the producer made it (counted, and read
in place where its layout is tabcl's), and no chunks are joined. Each part
is skipped where its producer is not installed (the Debian run)."""
import numpy as np
import pytest

import tabcl
from tabcl import _columns, _tabcl


def ref_codes(vocab, labels):
    """The contract's codes by position (a label's last position) from a dict."""
    pos = {}
    for i, s in enumerate(vocab):
        pos[s] = i
    return [-1 if s is None else pos.get(s, -1) for s in labels]


@pytest.fixture
def rng(request):
    seed = int(np.random.SeedSequence().entropy % (2 ** 32))
    print("[seed] %s: %d" % (request.node.name, seed))
    return np.random.default_rng(seed)


def random_labels(rng, n, vocab):
    """Labels from vocab, unknown ones (short and over 12 bytes, the view
    layout's inline limit) and nulls."""
    pool = vocab + ["unknown", "not-in-the-vocabulary-%d" % rng.integers(1000), None, ""]
    return [pool[i] for i in rng.integers(0, len(pool), n)]


VOCAB = ["red", "green", "blau", "grün", "x" * 40, "a label past twelve bytes", "", "red"]


@pytest.fixture
def chunk_counts(monkeypatch):
    """The number of chunks of every stream the package reads."""
    seen = []
    real = _tabcl.read_stream

    def spy(capsule):
        got = real(capsule)
        seen.append(len(got[2]))
        return got

    monkeypatch.setattr(_tabcl, "read_stream", spy)
    return seen


@pytest.fixture(scope="module")
def idx(ctx):
    return tabcl.CategoryIndex.fit(ctx, [VOCAB, ["s", "m", "l"]])


# ---- pyarrow -----------------------------------------------------------

def test_pyarrow_chunked_read_in_place(idx, rng, chunk_counts):
    pa = pytest.importorskip("pyarrow")
    parts = [random_labels(rng, n, VOCAB) for n in (5, 0, 1, 300, 17)]
    arr = pa.chunked_array([pa.array(p, type=pa.large_string()) for p in parts])
    arr = arr.slice(2)   # the first chunk read from an offset
    labels = sum(parts, [])[2:]
    sizes = pa.chunked_array([["m", None]] * 3)
    got = idx.lookup([arr, sizes])
    assert got[0].tolist() == ref_codes(VOCAB, labels)
    assert got[1].tolist() == [1, -1] * 3
    assert chunk_counts == [arr.num_chunks, 3]
    # large_string chunks are read where pyarrow keeps them.
    chunks = _columns.to_strings_chunks(arr, 0)
    assert len(chunks) == arr.num_chunks
    for ours, theirs in zip(chunks, arr.chunks):
        if len(theirs):
            offsets, data = ours.addresses()
            assert offsets == theirs.buffers()[1].address + 8 * theirs.offset
            assert data == theirs.buffers()[2].address


def test_pyarrow_table_and_dictionary_chunks(idx, rng):
    pa = pytest.importorskip("pyarrow")
    a = [random_labels(rng, n, VOCAB) for n in (40, 3)]
    b = [["l", "s", None, "xl"][:n] for n in (4, 2)]
    table = pa.Table.from_batches([
        pa.record_batch([pa.array(a[0]), pa.array(b[0] * 10)], names=["a", "b"]),
        pa.record_batch([pa.array(a[1]), pa.array(b[1] + [None])], names=["a", "b"])])
    got = idx.lookup(table)
    assert got[0].tolist() == ref_codes(VOCAB, a[0] + a[1])
    assert got[1].tolist() == ref_codes(["s", "m", "l"], b[0] * 10 + b[1] + [None])
    # Dictionary-encoded chunks, each with a dictionary of its own.
    d = pa.chunked_array([pa.array(a[0]).dictionary_encode(), pa.array(a[1]).dictionary_encode()])
    sizes = pa.chunked_array([pa.array(["s", "l"]).dictionary_encode()])
    got = idx.align([d, sizes])
    assert got[0].tolist() == ref_codes(VOCAB, a[0] + a[1])
    assert got[1].tolist() == [0, 2]
    assert idx.lookup([d, sizes])[0].tolist() == got[0].tolist()


def test_pandas_arrow_backed_chunks_are_not_joined(idx, rng, chunk_counts):
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    parts = [random_labels(rng, n, VOCAB) for n in (7, 9, 2)]
    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(parts, type=pa.large_string())))
    got = idx.lookup([s, ["m"]])
    assert got[0].tolist() == ref_codes(VOCAB, sum(parts, []))
    assert chunk_counts == [3]


def test_a_table_is_not_a_column(idx):
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"a": ["red"], "b": ["s"]})
    with pytest.raises(tabcl.TypeMismatch, match="column 0: a table of 2 columns"):
        idx.lookup([table, ["s"]])
    with pytest.raises(tabcl.TypeMismatch, match="one column"):
        idx.lookup(pa.chunked_array([["red"]]))


# ---- polars ------------------------------------------------------------

def test_polars_series_of_several_chunks(ctx, idx, rng, chunk_counts):
    pl = pytest.importorskip("polars")
    parts = [random_labels(rng, n, VOCAB) for n in (50, 1, 13, 0, 8)]
    s = pl.Series("a", parts[0], dtype=pl.String)
    for p in parts[1:]:
        s = s.append(pl.Series("a", p, dtype=pl.String))
    assert s.n_chunks() > 1
    got = idx.lookup([s, pl.Series(["l", None, "m"])])
    assert got[0].tolist() == ref_codes(VOCAB, sum(parts, []))
    assert got[1].tolist() == [2, -1, 1]
    assert chunk_counts == [s.n_chunks(), 1]
    # The same chunks as a vocabulary (a fit takes it whole).
    fitted = tabcl.CategoryIndex.fit(ctx, [s])
    labels = sum(parts, [])
    present = [x for x in labels if x is not None]
    assert fitted.lookup([present])[0].tolist() == ref_codes(labels, present)


def test_polars_dataframe_and_categoricals(idx, rng):
    pl = pytest.importorskip("polars")
    a = [random_labels(rng, n, VOCAB) for n in (30, 6)]
    frames = [pl.DataFrame({"a": a[i], "b": [["s", "l", None, "xl"][j % 4]
                                             for j in range(len(a[i]))]},
                           schema={"a": pl.String, "b": pl.String})
              for i in range(2)]
    df = pl.concat(frames, rechunk=False)
    assert df.n_chunks() == 2
    got = idx.lookup(df)
    assert got[0].tolist() == ref_codes(VOCAB, a[0] + a[1])
    assert got[1].tolist() == ref_codes(["s", "m", "l"], df["b"].to_list())
    # Categorical and Enum columns arrive dictionary-encoded: align reads them.
    cat = pl.Series(a[0], dtype=pl.Categorical)
    enum = pl.Series(["l", "s", "l", None], dtype=pl.Enum(["s", "l", "xxl"]))
    got = idx.align([cat, enum])
    assert got[0].tolist() == ref_codes(VOCAB, a[0])
    assert got[1].tolist() == [2, 0, 2, -1]


# ---- DuckDB ------------------------------------------------------------

def test_duckdb_relation(idx, rng, chunk_counts):
    duckdb = pytest.importorskip("duckdb")
    labels = random_labels(rng, 5000, VOCAB)
    sizes = [["s", "m", "l", None][i % 4] for i in range(5000)]
    pa = pytest.importorskip("pyarrow")
    con = duckdb.connect()
    # A DuckDB table of its own (filled from Arrow, then queried: the stream
    # read below is DuckDB's).
    con.register("src", pa.table({"i": range(5000), "a": labels, "b": sizes}))
    con.execute("create table t as select i, a, b from src")
    con.unregister("src")
    rel = con.sql("select a, b from t order by i")
    got = idx.lookup(rel)
    assert got[0].tolist() == ref_codes(VOCAB, labels)
    assert got[1].tolist() == ref_codes(["s", "m", "l"], sizes)
    assert len(chunk_counts) == 1 and chunk_counts[0] >= 1
    # Record batches of 1,000 rows: five chunks, each read on its own.
    chunk_counts.clear()
    rel = con.sql("select a, b from t order by i")
    reader = (rel.to_arrow_reader(1000) if hasattr(rel, "to_arrow_reader")
              else rel.fetch_record_batch(1000))
    got = idx.lookup(reader)
    assert got[0].tolist() == ref_codes(VOCAB, labels)
    assert chunk_counts == [5]
