"""tabcl from PyTorch: custom operators that torch.compile traces as one node.

    import tabcl.torch
    out = tabcl.torch.scaled_dot_product_attention(q, k, v)      # [B, H, L, D]

Importing this module registers, with torch.library:

    torch.ops.tabcl.sdpa(q, k, v, attn_mask, is_causal, scale, enable_gqa)
        PyTorch's [B, H, L, D] layout (tabcl's is [B, L, H, D]: the operator
        permutes views, so a q made as x.view(B, L, H, D).transpose(1, 2)
        is read in place); CPU tensors of float32, float16, bfloat16 or
        float64; the output is contiguous, of q's dtype and device.
    torch.ops.tabcl.category_lookup(index, column, offsets, data, validity)
        codes (int32) of one string column in Arrow layout (int64 offsets,
        uint8 bytes, an optional uint8 validity bitmap) in a fitted index.
    torch.ops.tabcl.category_align(index, column, offsets, data, validity, codes)
        a dictionary-encoded column (its categories in Arrow layout and
        integer codes into them) as codes of the fitted index.

index is the number tabcl.torch.index_id(idx) gives a CategoryIndex. Each
operator has a fake implementation, so shapes stay symbolic: one compiled
graph serves any batch size. Under torch.autocast("cpu") the attention's
float inputs take the autocast dtype and float64 stays float64, as autocast
does for PyTorch's own attention. The context is a module-level default
Context() made at first use, unless set_context(ctx) named one.
"""
import math
import threading
from typing import Optional

import torch

from . import _tabcl
from ._attention import _MASK_ADD, _MASK_BOOL, _MASK_NONE
from ._errors import InvalidArgument
from ._index import CategoryIndex

__all__ = ["scaled_dot_product_attention", "set_context", "get_context", "index_id",
           "category_lookup", "category_align"]

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.float64: 3}

_lock = threading.Lock()
_context = None
_indexes = {}


def set_context(ctx):
    """The Context the operators run on from now on (None: a default one)."""
    global _context
    if ctx is not None and not isinstance(ctx, _tabcl.Context):
        raise InvalidArgument("set_context takes a tabcl.Context or None, not %s" %
                              type(ctx).__name__)
    with _lock:
        _context = ctx


def get_context():
    """The Context the operators use: set_context's, else one made now."""
    global _context
    with _lock:
        if _context is None:
            _context = _tabcl.Context()
        return _context


def index_id(idx):
    """The number that names idx in the category operators. The index stays
    referenced here (operators in a compiled graph may run it later)."""
    if not isinstance(idx, CategoryIndex):
        raise InvalidArgument("index_id takes a tabcl.CategoryIndex, not %s" % type(idx).__name__)
    key = id(idx._h)
    with _lock:
        _indexes[key] = idx
    return key


def _index(key):
    with _lock:
        idx = _indexes.get(key)
    if idx is None:
        raise InvalidArgument("index %d: not a number tabcl.torch.index_id gave" % key)
    return idx


# ---- checks shared by the real and the fake implementations -------------

def _check_tensor(name, t, ndim=None, dtypes=None):
    if not isinstance(t, torch.Tensor):
        raise InvalidArgument("%s is %s, not a torch.Tensor" % (name, type(t).__name__))
    if t.device.type != "cpu":
        raise InvalidArgument("%s is on %s; tabcl.torch reads CPU tensors (move it with "
                              ".cpu(), or use tabcl's OpenCL entry points for device "
                              "memory)" % (name, t.device))
    if ndim is not None and t.dim() != ndim:
        raise InvalidArgument("%s has %d dimensions; it must have %d" % (name, t.dim(), ndim))
    if dtypes is not None and t.dtype not in dtypes:
        raise InvalidArgument("%s has dtype %s; it must be one of %s" %
                              (name, t.dtype, ", ".join(str(d) for d in dtypes)))


def _sdpa_check(q, k, v, attn_mask, is_causal, scale, enable_gqa):
    """Validates the arguments; returns the mask as [B or 1, Hq or 1, Lq or 1, Lk]
    (a view) and its kind."""
    for name, t in (("query", q), ("key", k), ("value", v)):
        _check_tensor(name, t, 4, _DTYPES)
    if not (q.dtype == k.dtype == v.dtype):
        raise InvalidArgument("query, key and value have dtypes %s, %s, %s; they must be one" %
                              (q.dtype, k.dtype, v.dtype))
    B, Hq, Lq, D = q.shape
    if k.shape[0] != B or k.shape[3] != D:
        raise InvalidArgument("key has shape %s for query %s: batch and head_dim must agree" %
                              (tuple(k.shape), tuple(q.shape)))
    if v.shape != k.shape:
        raise InvalidArgument("value has shape %s but key %s; tabcl needs them equal" %
                              (tuple(v.shape), tuple(k.shape)))
    Hkv = k.shape[1]
    if Hq != Hkv and (not enable_gqa or Hq % Hkv != 0):
        raise InvalidArgument("key has %d heads for query's %d: %s" % (
            Hkv, Hq, "query's heads must be a multiple" if enable_gqa
            else "pass enable_gqa=True for grouped-query attention"))
    if scale is not None and not (scale > 0 and math.isfinite(scale)):
        raise InvalidArgument("scale is %r; it must be a positive finite number or None" %
                              (scale,))
    if attn_mask is None:
        return None, _MASK_NONE
    _check_tensor("attn_mask", attn_mask)
    if is_causal:
        raise InvalidArgument("attn_mask and is_causal=True together: pass one of them")
    if attn_mask.dtype == torch.bool:
        kind = _MASK_BOOL
    elif attn_mask.dtype == q.dtype:
        kind = _MASK_ADD
    else:
        raise InvalidArgument("attn_mask has dtype %s; it must be bool or query's %s" %
                              (attn_mask.dtype, q.dtype))
    if attn_mask.dim() > 4:
        raise InvalidArgument("attn_mask has %d dimensions; at most 4" % attn_mask.dim())
    m = attn_mask
    while m.dim() < 4:
        m = m.unsqueeze(0)
    want = (B, Hq, Lq, k.shape[2])
    for i in range(4):
        if m.shape[i] != want[i] and m.shape[i] != 1:
            raise InvalidArgument("attn_mask of shape %s does not broadcast to %s" %
                                  (tuple(attn_mask.shape), want))
    return m, kind


def _sdpa_fake(q, k, v, attn_mask, is_causal, scale, enable_gqa):
    _sdpa_check(q, k, v, attn_mask, is_causal, scale, enable_gqa)
    return torch.empty(q.shape, dtype=q.dtype, device=q.device)


def _blhd(t):
    """t [B, H, L, D] as tabcl's [B, L, H, D]: the transposed view where it
    is contiguous (no copy), else a contiguous copy by torch."""
    t = t.transpose(1, 2)
    return t if t.is_contiguous() else t.contiguous()


@torch.library.custom_op("tabcl::sdpa", mutates_args=())
def _sdpa_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             attn_mask: Optional[torch.Tensor], is_causal: bool, scale: Optional[float],
             enable_gqa: bool) -> torch.Tensor:
    m, kind = _sdpa_check(q, k, v, attn_mask, is_causal, scale, enable_gqa)
    B, Hq, Lq, D = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    out = torch.empty((B, Lq, Hq, D), dtype=q.dtype)
    if out.numel() == 0:
        return out.transpose(1, 2).contiguous()
    qt, kt, vt = _blhd(q), _blhd(k), _blhd(v)
    mb = mh = mq = 0
    maddr = 0
    if m is not None:
        mb = int(m.shape[0] == 1 and B != 1)
        mh = int(m.shape[1] == 1 and Hq != 1)
        mq = int(m.shape[2] == 1 and Lq != 1)
        # tabcl reads [B or 1, Hq or 1, Lq or 1, Lk] dense: broadcast keys
        # are written out, a mask already of that form is read in place (a
        # (B, 1, 1, Lk) key-padding mask stays B x Lk).
        m = m.expand(1 if mb else B, 1 if mh else Hq, 1 if mq else Lq, Lk).contiguous()
        maddr = m.data_ptr()
    _tabcl.sdpa_at(get_context(), qt.data_ptr(), kt.data_ptr(), vt.data_ptr(), maddr,
                   out.data_ptr(), (B, Lq, Lk, Hq, Hkv, D), _DTYPES[q.dtype],
                   0.0 if scale is None else float(scale), int(bool(is_causal)), kind, mb, mh, mq)
    # The [B, H, L, D] result, contiguous as PyTorch's is (a copy unless H or
    # L is 1, where the transposed view already is).
    out = out.transpose(1, 2)
    return out if out.is_contiguous() else out.contiguous()


torch.library.register_fake("tabcl::sdpa")(_sdpa_fake)

_autocast_keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)


def _autocast_cast(t, dtype):
    # As autocast treats its own lower-precision ops: floating tensors other
    # than float64 take the autocast dtype; bool masks and float64 stay.
    if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64:
        return t.to(dtype)
    return t


def _sdpa_autocast(keyset, q, k, v, attn_mask, is_causal, scale, enable_gqa):
    dtype = torch.get_autocast_dtype("cpu")
    q, k, v, attn_mask = (_autocast_cast(t, dtype) for t in (q, k, v, attn_mask))
    with torch._C._ExcludeDispatchKeyGuard(_autocast_keys):
        return torch.ops.tabcl.sdpa.default(q, k, v, attn_mask, is_causal, scale, enable_gqa)


_lib = torch.library.Library("tabcl", "IMPL")
_lib.impl("sdpa", _sdpa_autocast, "AutocastCPU", with_keyset=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention on tabcl: query
    [B, Hq, Lq, D], key and value [B, Hkv, Lk, D]; the result is [B, Hq, Lq, D],
    contiguous, of query's dtype. dropout_p must be 0 (inference)."""
    if dropout_p != 0.0:
        raise InvalidArgument("dropout_p is %r; tabcl's attention has no dropout" % (dropout_p,))
    return torch.ops.tabcl.sdpa(query, key, value, attn_mask, bool(is_causal),
                                None if scale is None else float(scale), bool(enable_gqa))


# ---- category lookup and align -----------------------------------------

def _strings_check(offsets, data, validity):
    _check_tensor("offsets", offsets, 1, (torch.int64,))
    _check_tensor("data", data, 1, (torch.uint8,))
    if validity is not None:
        _check_tensor("validity", validity, 1, (torch.uint8,))
    if offsets.shape[0] < 1:
        raise InvalidArgument("offsets is empty; a column of n labels has n + 1 offsets")


def _strings(offsets, data, validity):
    # numpy views of the tensors' memory (no copy) for the buffer protocol.
    def np_view(t):
        return t.contiguous().numpy()
    return _tabcl.Strings.from_buffers(np_view(offsets), np_view(data),
                                       None if validity is None else np_view(validity))


def _column_check(idx, column):
    if not 0 <= column < idx.num_columns:
        raise InvalidArgument("column %d is outside the index's [0, %d)" %
                              (column, idx.num_columns))


def _empty_strings():
    return _tabcl.Strings.from_sequence([])


@torch.library.custom_op("tabcl::category_lookup", mutates_args=())
def _lookup_op(index: int, column: int, offsets: torch.Tensor, data: torch.Tensor,
               validity: Optional[torch.Tensor]) -> torch.Tensor:
    _strings_check(offsets, data, validity)
    idx = _index(index)
    _column_check(idx, column)
    col = _strings(offsets, data, validity)
    out = torch.empty(len(col), dtype=torch.int32)
    cols = [col if c == column else _empty_strings() for c in range(idx.num_columns)]
    outs = [out.numpy() if c == column else out.numpy()[:0] for c in range(idx.num_columns)]
    _tabcl.lookup(idx._h, cols, outs)
    return out


@torch.library.register_fake("tabcl::category_lookup")
def _lookup_fake(index, column, offsets, data, validity):
    _strings_check(offsets, data, validity)
    return offsets.new_empty((offsets.shape[0] - 1,), dtype=torch.int32)


def _codes_check(codes):
    _check_tensor("codes", codes, 1, (torch.int32, torch.int64))


@torch.library.custom_op("tabcl::category_align", mutates_args=())
def _align_op(index: int, column: int, offsets: torch.Tensor, data: torch.Tensor,
              validity: Optional[torch.Tensor], codes: torch.Tensor) -> torch.Tensor:
    _strings_check(offsets, data, validity)
    _codes_check(codes)
    idx = _index(index)
    _column_check(idx, column)
    cats = _strings(offsets, data, validity)
    if codes.numel() and (int(codes.min()) < -1 or int(codes.max()) >= len(cats)):
        bad = int(torch.nonzero((codes < -1) | (codes >= len(cats)))[0, 0])
        raise InvalidArgument("codes[%d] is %d, outside [-1, %d)" %
                              (bad, int(codes[bad]), len(cats)))
    c32 = codes.to(torch.int32).contiguous().numpy()
    out = torch.empty(codes.shape[0], dtype=torch.int32)
    empty = _tabcl.Dictionary.from_parts(_empty_strings(), out.numpy()[:0])
    dicts = [_tabcl.Dictionary.from_parts(cats, c32) if c == column else empty
             for c in range(idx.num_columns)]
    outs = [out.numpy() if c == column else out.numpy()[:0] for c in range(idx.num_columns)]
    _tabcl.align(idx._h, dicts, outs)
    return out


@torch.library.register_fake("tabcl::category_align")
def _align_fake(index, column, offsets, data, validity, codes):
    _strings_check(offsets, data, validity)
    _codes_check(codes)
    return codes.new_empty((codes.shape[0],), dtype=torch.int32)


def strings_tensors(labels):
    """(offsets, data, validity) tensors of a list of str / bytes / None, in
    the Arrow layout the category operators take."""
    chunks, offsets, valid = [], [0], []
    for x in labels:
        valid.append(x is not None)
        b = b"" if x is None else (x.encode() if isinstance(x, str) else bytes(x))
        chunks.append(b)
        offsets.append(offsets[-1] + len(b))
    data = torch.frombuffer(bytearray(b"".join(chunks)) or bytearray(1), dtype=torch.uint8)
    data = data[:offsets[-1]]
    validity = None
    if not all(valid):
        bits = bytearray((len(valid) + 7) // 8)
        for i, ok in enumerate(valid):
            if ok:
                bits[i >> 3] |= 1 << (i & 7)
        validity = torch.frombuffer(bits, dtype=torch.uint8)
    return torch.tensor(offsets, dtype=torch.int64), data, validity


def category_lookup(idx, column, offsets, data, validity=None):
    """Codes (int32 tensor) of a string column in idx's column `column`."""
    return torch.ops.tabcl.category_lookup(index_id(idx), column, offsets, data, validity)


def category_align(idx, column, offsets, data, validity, codes):
    """Codes (int32 tensor) in idx's column `column` of a dictionary-encoded
    column: its categories (offsets, data, validity) and codes into them."""
    return torch.ops.tabcl.category_align(index_id(idx), column, offsets, data, validity, codes)
