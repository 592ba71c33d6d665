"""The same parity through pyarrow's own arrays, where pyarrow is importable
(it is not on Debian 12's CI machine; the GPU machine has it)."""
import numpy as np
import pandas as pd
import pytest

import tabcl

pa = pytest.importorskip("pyarrow")

VOCAB = ["red", "green", "blau", "", "grün"]
LABELS = ["green", None, "grün", "", "nope", "red", None, "blau"]


@pytest.fixture(scope="module")
def idx(ctx):
    return tabcl.CategoryIndex.fit(ctx, [VOCAB])


def want(labels):
    return pd.Index(VOCAB).get_indexer(labels).tolist()


@pytest.mark.parametrize("type_", ["string", "large_string", "binary", "large_binary"])
def test_string_arrays(idx, type_):
    t = getattr(pa, type_)()
    labels = LABELS if "string" in type_ else [None if x is None else x.encode() for x in LABELS]
    arr = pa.array(labels, type=t)
    assert idx.lookup([arr])[0].tolist() == want(LABELS)
    assert idx.lookup([arr.slice(3)])[0].tolist() == want(LABELS[3:])


@pytest.mark.parametrize("index_type", ["int8", "int16", "int32", "int64", "uint8", "uint32"])
def test_dictionary_arrays(idx, index_type):
    arr = pa.array(LABELS).dictionary_encode()
    arr = pa.DictionaryArray.from_arrays(arr.indices.cast(getattr(pa, index_type)()),
                                         arr.dictionary)
    assert idx.align([arr])[0].tolist() == want(LABELS)
    assert idx.lookup([arr.slice(2)])[0].tolist() == want(LABELS[2:])


def test_real_data_through_arrow(ctx, data_dir):
    df = pd.read_csv(data_dir / "airports.csv", dtype=str, keep_default_na=False, na_values=[""])
    cats = [v for v in pd.unique(df["state"].iloc[::2]) if isinstance(v, str)]
    idx = tabcl.CategoryIndex.fit(ctx, [cats])
    got = idx.lookup([pa.array(df["state"].tolist(), type=pa.large_string())])[0]
    np.testing.assert_array_equal(got, pd.Index(cats).get_indexer(df["state"]))
