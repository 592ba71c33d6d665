"""Columns through __arrow_c_array__ (the Arrow PyCapsule protocol), from
the ctypes producer in arrow_producer.py: pyarrow is not needed. Checked
against the labels the arrays were made from, and the producer's count of
unreleased arrays shows the import keeps nothing."""
import gc
import ctypes

import numpy as np
import pytest

import tabcl
from tabcl import _tabcl

from arrow_producer import ArrowColumn, live

VOCAB = ["red", "green", "blau", "", "grün"]
LABELS = ["green", None, "grün", "", "nope", "red", None]


def codes_of(labels):
    pos = {v: i for i, v in enumerate(VOCAB)}
    return [-1 if x is None else pos.get(x.decode() if isinstance(x, bytes) else x, -1)
            for x in labels]


@pytest.fixture(scope="module")
def idx(ctx):
    return tabcl.CategoryIndex.fit(ctx, [VOCAB])


def released():
    gc.collect()
    return live["schemas"] == 0 and live["arrays"] == 0


@pytest.mark.parametrize("fmt", ["u", "U", "z", "Z"])
@pytest.mark.parametrize("offset", [0, 3, 8, 13])
def test_string_formats_and_slices(idx, fmt, offset):
    col = ArrowColumn(LABELS, format=fmt, offset=offset)
    s = _tabcl.Strings.from_arrow(*col.__arrow_c_array__())
    assert [s.label(i) for i in range(len(s))] == \
        [None if x is None else x.encode() for x in LABELS]
    del s
    assert released(), "the import's capsules released the array when it was freed"
    out = idx.lookup([col])[0]
    assert out.dtype == np.int32 and out.tolist() == codes_of(LABELS)
    assert released()


@pytest.mark.parametrize("index_format", list("cCsSiIlL"))
def test_dictionary_arrays(idx, index_format):
    values = ["x", "grün", None, "red", "green"]   # sliced from 1 below
    indices = [3, None, 0, 1, 2, 0]
    col = ArrowColumn(values, offset=1, indices=indices, index_format=index_format,
                      index_offset=2)
    cats = values
    want = codes_of([None if k is None else cats[k] for k in indices])
    assert idx.align([col])[0].tolist() == want
    assert idx.lookup([col])[0].tolist() == want      # lookup of a dictionary goes through align
    d = _tabcl.Dictionary.from_arrow(*col.__arrow_c_array__())
    assert d.codes() == [-1 if k is None else k for k in indices]
    del d
    assert released()


def test_string_array_in_align_is_its_own_dictionary(idx):
    col = ArrowColumn(LABELS, format="U")
    assert idx.align([col])[0].tolist() == codes_of(LABELS)


def _decreasing(schema, array):
    offsets = ctypes.cast(array.buffers[1], ctypes.POINTER(ctypes.c_int32))
    offsets[2] = offsets[1] - 1


def _released(schema, array):
    array.release = None


def _unknown_format(schema, array):
    schema.format = b"w:4"


@pytest.mark.parametrize("damage,message", [
    (_decreasing, "offsets decrease at label 1"),
    (_released, "array is released"),
    (_unknown_format, 'unsupported format "w:4"'),
])
def test_malformed_arrays(idx, damage, message):
    col = ArrowColumn(["ab", "cd", "ef"], damage=damage)
    with pytest.raises(tabcl.InvalidArgument, match=message) as e:
        idx.lookup([col])
    assert "tabcl_arrow_strings_import" in str(e.value)
    del e   # its traceback holds the frames that held the capsules
    assert released()


def test_null_count_checked(idx):
    col = ArrowColumn(["a", None, "b"], null_count=2)
    with pytest.raises(tabcl.InvalidArgument, match="null_count is 2 but the validity bitmap "
                                                    "has 1 nulls"):
        idx.lookup([col])


def test_dictionary_index_out_of_range(idx):
    col = ArrowColumn(["a", "b"], indices=[0, 2], index_format="s")
    with pytest.raises(tabcl.InvalidArgument, match=r"index 2 at row 1 is outside \[0, 2\)") as e:
        idx.align([col])
    del e
    assert released()


def test_wrong_capsules(idx):
    class Bad:
        def __arrow_c_array__(self, requested_schema=None):
            return (1, 2)
    with pytest.raises((TypeError, ValueError)):
        idx.lookup([Bad()])
