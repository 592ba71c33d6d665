"""tabcl.sdpa: scaled dot-product attention (tabcl_sdpa_host) on numpy arrays."""
import numpy as np

from . import _tabcl
from ._errors import InvalidArgument, TypeMismatch

# tabcl_dtype by numpy dtype name; bfloat16 is ml_dtypes' (or any dtype of
# that name with 2-byte items), when the caller has one.
_DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2, "float64": 3}
_MASK_NONE, _MASK_BOOL, _MASK_ADD = 0, 1, 2


def _code(dtype):
    code = _DTYPES.get(dtype.name)
    if code is None or (code == 2 and dtype.itemsize != 2):
        raise TypeMismatch("dtype %s: tabcl attention takes float32, float16, bfloat16 or "
                           "float64" % dtype)
    return code


def _raw(a):
    """The array's bytes, C-contiguous; 16-bit floats as uint16 so that a dtype
    the buffer protocol cannot describe (bfloat16) still passes."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint16) if a.dtype.itemsize == 2 and a.dtype.kind != "b" else a


def _mask_form(mask, q_dtype, B, Hq, Lq, Lk, dtype_error):
    """(kind, mb, mh, mq) of a mask [B or 1, Hq or 1, Lq or 1, Lk] of bool or
    q's dtype: its kind and which extents broadcast. A wrong dtype raises
    dtype_error, a wrong shape InvalidArgument; nothing is read but the
    mask's dtype and shape."""
    if mask.dtype == np.bool_:
        kind = _MASK_BOOL
    elif mask.dtype == q_dtype:
        kind = _MASK_ADD
    else:
        raise dtype_error("mask has dtype %s; it must be bool or q's dtype %s" %
                          (mask.dtype, q_dtype))
    if mask.ndim != 4 or mask.shape[0] not in (1, B) or mask.shape[1] not in (1, Hq) or \
            mask.shape[2] not in (1, Lq) or mask.shape[3] != Lk:
        raise InvalidArgument("mask has shape %s; it must be [%d or 1, %d or 1, %d or 1, %d]" %
                              (mask.shape, B, Hq, Lq, Lk))
    return (kind, int(mask.shape[0] == 1 and B != 1), int(mask.shape[1] == 1 and Hq != 1),
            int(mask.shape[2] == 1 and Lq != 1))


def sdpa(ctx, q, k, v, mask=None, causal=False, scale=None):
    """Attention of q [B, Lq, Hq, D] over k and v [B, Lk, Hkv, D], one dtype
    (float32, float16, bfloat16, float64); the result has q's shape and dtype.
    mask: None, bool (True = may attend) or q's dtype (added to the scaled
    scores), of shape [B or 1, Hq or 1, Lq or 1, Lk] (a key-padding mask is
    [B, 1, 1, Lk], read as it is). scale None: 1/sqrt(D)."""
    q, k, v = (np.asarray(x) for x in (q, k, v))
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeMismatch("q, k and v have dtypes %s, %s, %s; they must be one" %
                           (q.dtype, k.dtype, v.dtype))
    code = _code(q.dtype)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim != 4:
            raise InvalidArgument("%s has %d dimensions; it must be [batch, length, heads, "
                                  "head_dim]" % (name, a.ndim))
    B, Lq, Hq, D = q.shape
    Bk, Lk, Hkv, Dk = k.shape
    if v.shape != k.shape:
        raise InvalidArgument("k has shape %s but v has %s" % (k.shape, v.shape))
    if Bk != B or Dk != D:
        raise InvalidArgument("q has shape %s and k %s: batch and head_dim must agree" %
                              (q.shape, k.shape))
    kind, mb, mh, mq, m = _MASK_NONE, 0, 0, 0, None
    if mask is not None:
        m = np.asarray(mask)
        kind, mb, mh, mq = _mask_form(m, q.dtype, B, Hq, Lq, Lk, TypeMismatch)
        m = np.ascontiguousarray(m).view(np.uint8) if kind == _MASK_BOOL else _raw(m)
    if scale is None:
        scale = 0.0
    else:
        scale = float(scale)
        if scale == 0.0:
            raise InvalidArgument("scale is 0; pass None for 1/sqrt(head_dim)")
    out = np.empty(q.shape, dtype=q.dtype)
    _tabcl.sdpa(ctx, _raw(q), _raw(k), _raw(v), m, _raw(out) if out.dtype.itemsize == 2 else out,
                (B, Lq, Lk, Hq, Hkv, D), code, scale, int(bool(causal)), kind, mb, mh, mq)
    return out
