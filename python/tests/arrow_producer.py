"""A small Arrow C Data Interface producer in ctypes, for testing the
__arrow_c_array__ path where pyarrow is not installed.

ArrowColumn(labels, ...) lays labels out as an Arrow string/binary array (or
a dictionary array) in numpy buffers and exports it as the PyCapsule
protocol asks: ("arrow_schema", "arrow_array") capsules whose destructors
call the structs' release callbacks when the consumer has not. `live` counts
exported arrays not yet released, so a test can see that a consumer keeps
nothing.
"""
import ctypes

import numpy as np


class ArrowSchema(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p), ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


class ArrowArray(ctypes.Structure):
    pass


ArrowArray._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)), ("children", ctypes.c_void_p),
    ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]

_SCHEMA_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowSchema))
_ARRAY_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArray))
# The destructor gets the dying capsule as a raw pointer: wrapping it in a
# py_object would take a new reference to an object being freed.
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# Capsule names must outlive the capsules: module constants.
_SCHEMA_NAME = b"arrow_schema"
_ARRAY_NAME = b"arrow_array"

# What keeps each exported struct's memory alive, by struct address, until
# its release callback runs.
_owners = {}
live = {"schemas": 0, "arrays": 0}


@_SCHEMA_RELEASE
def _release_schema(p):
    s = p.contents
    if s.dictionary:
        d = s.dictionary.contents
        if d.release:
            _SCHEMA_RELEASE(d.release)(s.dictionary)
    s.release = None
    if _owners.pop(ctypes.addressof(s), None) is not None:
        live["schemas"] -= 1


@_SCHEMA_RELEASE
def _release_child_schema(p):
    p.contents.release = None


@_ARRAY_RELEASE
def _release_array(p):
    a = p.contents
    if a.dictionary:
        d = a.dictionary.contents
        if d.release:
            _ARRAY_RELEASE(d.release)(a.dictionary)
    a.release = None
    if _owners.pop(ctypes.addressof(a), None) is not None:
        live["arrays"] -= 1


@_ARRAY_RELEASE
def _release_child_array(p):
    p.contents.release = None


@_CAPSULE_DESTRUCTOR
def _destroy_schema_capsule(cap):
    addr = _capsule_pointer(cap, _SCHEMA_NAME)
    s = ArrowSchema.from_address(addr)
    if s.release:
        _SCHEMA_RELEASE(s.release)(ctypes.pointer(s))


@_CAPSULE_DESTRUCTOR
def _destroy_array_capsule(cap):
    addr = _capsule_pointer(cap, _ARRAY_NAME)
    a = ArrowArray.from_address(addr)
    if a.release:
        _ARRAY_RELEASE(a.release)(ctypes.pointer(a))


def _bitmap(valid):
    bits = np.zeros((len(valid) + 7) // 8 + 1, dtype=np.uint8)
    for i, v in enumerate(valid):
        if v:
            bits[i // 8] |= 1 << (i % 8)
    return bits


def _layout(labels, wide):
    """(validity, offsets, data, null_count) numpy buffers for labels."""
    enc = [None if x is None else (x.encode() if isinstance(x, str) else bytes(x)) for x in labels]
    offsets = np.zeros(len(enc) + 1, dtype=np.int64 if wide else np.int32)
    for i, b in enumerate(enc):
        offsets[i + 1] = offsets[i] + (len(b) if b is not None else 0)
    data = np.frombuffer(b"".join(b for b in enc if b) + b"\0", dtype=np.uint8).copy()
    nulls = sum(b is None for b in enc)
    validity = _bitmap([b is not None for b in enc]) if nulls else None
    return validity, offsets, data, nulls


def _ptr(a):
    return None if a is None else a.ctypes.data


class _Exported:
    """One schema and one array struct (plus a dictionary's pair) and the
    buffers they point at."""

    def __init__(self):
        self.keep = []


class ArrowColumn:
    """labels as an Arrow array. format: "u", "U", "z" or "Z". offset: that
    many leading labels ("x") are laid out and skipped through the array's
    offset field. indices (with index_format): a dictionary array whose
    values are labels; None in indices is a null index. damage(schema, array)
    may alter the exported structs."""

    def __init__(self, labels, format="u", offset=0, indices=None, index_format="c",
                 index_offset=0, damage=None, null_count="exact"):
        self.labels, self.format, self.offset = list(labels), format, offset
        self.indices, self.index_format, self.index_offset = indices, index_format, index_offset
        self.damage, self.null_count = damage, null_count

    def _strings(self, ex, labels, offset, child):
        validity, offsets, data, nulls = _layout(["x"] * offset + labels,
                                                 self.format in ("U", "Z"))
        schema = ArrowSchema()
        schema.format = self.format.encode()
        schema.flags = 2
        array = ArrowArray()
        array.length = len(labels)
        array.offset = offset
        array.null_count = nulls if self.null_count == "exact" else self.null_count
        array.n_buffers = 3
        bufs = (ctypes.c_void_p * 3)(_ptr(validity), _ptr(offsets), _ptr(data))
        array.buffers = ctypes.cast(bufs, ctypes.POINTER(ctypes.c_void_p))
        schema.release = ctypes.cast(_release_child_schema if child else _release_schema,
                                     ctypes.c_void_p)
        array.release = ctypes.cast(_release_child_array if child else _release_array,
                                    ctypes.c_void_p)
        ex.keep += [validity, offsets, data, bufs, schema, array]
        return schema, array

    def _export(self):
        ex = _Exported()
        if self.indices is None:
            schema, array = self._strings(ex, self.labels, self.offset, child=False)
        else:
            vschema, varray = self._strings(ex, self.labels, self.offset, child=True)
            dtype = {"c": np.int8, "C": np.uint8, "s": np.int16, "S": np.uint16, "i": np.int32,
                     "I": np.uint32, "l": np.int64, "L": np.uint64}[self.index_format]
            idx = [0] * self.index_offset + list(self.indices)
            values = np.array([0 if k is None else k for k in idx], dtype=dtype)
            nulls = sum(k is None for k in self.indices)
            validity = _bitmap([k is not None for k in idx]) if nulls else None
            schema = ArrowSchema()
            schema.format = self.index_format.encode()
            schema.flags = 2
            schema.dictionary = ctypes.pointer(vschema)
            array = ArrowArray()
            array.length = len(self.indices)
            array.offset = self.index_offset
            array.null_count = nulls
            array.n_buffers = 2
            bufs = (ctypes.c_void_p * 2)(_ptr(validity), _ptr(values))
            array.buffers = ctypes.cast(bufs, ctypes.POINTER(ctypes.c_void_p))
            array.dictionary = ctypes.pointer(varray)
            schema.release = ctypes.cast(_release_schema, ctypes.c_void_p)
            array.release = ctypes.cast(_release_array, ctypes.c_void_p)
            ex.keep += [validity, values, bufs, schema, array]
        if self.damage:
            self.damage(schema, array)
        return ex, schema, array

    def _capsule(self, ex, struct, name, destructor, kind):
        if struct.release:
            _owners[ctypes.addressof(struct)] = ex
            live[kind] += 1
        return _capsule_new(ctypes.addressof(struct), name,
                            ctypes.cast(destructor, ctypes.c_void_p))

    def __arrow_c_array__(self, requested_schema=None):
        ex, schema, array = self._export()
        return (self._capsule(ex, schema, _SCHEMA_NAME, _destroy_schema_capsule, "schemas"),
                self._capsule(ex, array, _ARRAY_NAME, _destroy_array_capsule, "arrays"))
