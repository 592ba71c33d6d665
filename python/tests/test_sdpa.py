"""tabcl.sdpa against a float64 numpy loop: dtypes kept, masks, causality,
grouped heads, broadcasts, and the errors of bad arguments."""
import numpy as np
import pytest

import tabcl

TOL = {np.float32: 1e-5, np.float16: 2e-3, np.float64: 1e-12}


def reference(q, k, v, mask=None, causal=False, scale=None):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    B, Lq, Hq, D = q.shape
    Lk, Hkv = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(D) if scale is None else scale
    out = np.zeros_like(q)
    for b in range(B):
        for h in range(Hq):
            g = h // (Hq // Hkv)
            s = q[b, :, h] @ k[b, :, g].T * scale
            allowed = np.ones((Lq, Lk), bool)
            if mask is not None:
                m = mask[0 if mask.shape[0] == 1 else b, 0 if mask.shape[1] == 1 else h]
                if m.dtype == np.bool_:
                    allowed &= m
                else:
                    s = s + m.astype(np.float64)
            if causal:
                allowed &= np.tril(np.ones((Lq, Lk), bool))
            s = np.where(allowed & np.isfinite(s), s, -np.inf)
            for i in range(Lq):
                if np.isneginf(s[i]).all():
                    continue
                p = np.exp(s[i] - s[i].max())
                out[b, i, h] = p @ v[b, :, g] / p.sum()
    return out


def data(rng, dtype, B=2, Lq=5, Lk=7, Hq=4, Hkv=2, D=16):
    q = rng.standard_normal((B, Lq, Hq, D)).astype(dtype)
    k = rng.standard_normal((B, Lk, Hkv, D)).astype(dtype)
    v = rng.standard_normal((B, Lk, Hkv, D)).astype(dtype)
    return q, k, v


def seeded(request):
    seed = np.random.SeedSequence().entropy % (2 ** 32)
    print("[seed] %s: %d" % (request.node.name, seed))
    return np.random.default_rng(seed)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "add_mask", "scale"])
def test_against_float64(ctx, request, dtype, case):
    rng = seeded(request)
    q, k, v = data(rng, dtype)
    kw = {}
    if case == "causal":
        kw["causal"] = True
    elif case == "bool_mask":
        m = rng.random((2, 1, 5, 7)) < 0.7
        m[0, 0, 1] = False          # a row that may attend nothing gives zeros
        kw["mask"] = m
    elif case == "add_mask":
        m = rng.standard_normal((1, 4, 5, 7)).astype(dtype)
        m[0, 1, 2, :3] = -np.inf
        kw["mask"] = m
    elif case == "scale":
        kw["scale"] = 0.3
    out = tabcl.sdpa(ctx, q, k, v, **kw)
    assert out.dtype == dtype and out.shape == q.shape
    want = reference(q, k, v, **kw)
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=TOL[dtype] * 10,
                               atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_key_padding_masks_are_not_expanded(ctx, request, dtype):
    # [B, 1, 1, Lk] and [1, Hq, 1, Lk] masks (query extent 1) equal the same
    # masks written out for every query, causal or not.
    rng = seeded(request)
    q, k, v = data(rng, dtype, B=3, Lq=6, Lk=9)
    pad = rng.random((3, 1, 1, 9)) < 0.7
    pad[1] = False              # batch entry 1 attends nothing: zeros
    add = rng.standard_normal((1, 4, 1, 9)).astype(dtype)
    add[0, 2, 0, :4] = -np.inf
    for m in (pad, add):
        for causal in (False, True):
            out = tabcl.sdpa(ctx, q, k, v, mask=m, causal=causal)
            full = np.broadcast_to(m, (m.shape[0], m.shape[1], 6, 9))
            want = reference(q, k, v, mask=full, causal=causal)
            np.testing.assert_allclose(out.astype(np.float64), want, rtol=TOL[dtype] * 10,
                                       atol=TOL[dtype] * 10)
            np.testing.assert_array_equal(out, tabcl.sdpa(ctx, q, k, v, mask=full,
                                                          causal=causal))
    assert not tabcl.sdpa(ctx, q, k, v, mask=pad)[1].any()


def test_query_broadcast_mask_buffer_sizes(ctx):
    # The extension checks the mask's bytes against the flag: B x Lk bytes
    # pass with it, fewer are refused before anything is written.
    from tabcl import _tabcl
    q, k, v = data(np.random.default_rng(2), np.float32, B=2, Lq=5, Lk=7, Hq=4, Hkv=2)
    shape = (2, 5, 7, 4, 2, 16)
    out = np.full(q.shape, 3.0, np.float32)
    mask = np.ones(2 * 7, np.uint8)
    _tabcl.sdpa(ctx, q, k, v, mask, out, shape, 0, 0.0, 0, 1, 0, 1, 1)
    np.testing.assert_allclose(out, reference(q, k, v), rtol=1e-4, atol=1e-5)
    out[...] = 3.0
    for small, flag in ((mask[:-1], 1), (mask, 0)):
        with pytest.raises(tabcl.InvalidArgument, match="buffer sizes"):
            _tabcl.sdpa(ctx, q, k, v, small, out, shape, 0, 0.0, 0, 1, 0, 1, flag)
        assert (out == 3.0).all()


def test_bf16_when_available(ctx, request):
    ml = pytest.importorskip("ml_dtypes")
    rng = seeded(request)
    q, k, v = (x.astype(ml.bfloat16) for x in data(rng, np.float32))
    out = tabcl.sdpa(ctx, q, k, v)
    assert out.dtype == q.dtype
    np.testing.assert_allclose(out.astype(np.float64), reference(q, k, v), atol=2e-2)


def test_non_contiguous_inputs_are_copied_not_converted(ctx, request):
    rng = seeded(request)
    q, k, v = data(rng, np.float32)
    qt = np.asfortranarray(q)
    out = tabcl.sdpa(ctx, qt, k, v)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, reference(q, k, v), rtol=1e-4, atol=1e-5)


def test_empty_batch(ctx):
    q = np.zeros((0, 3, 2, 8), np.float32)
    k = np.zeros((0, 4, 2, 8), np.float32)
    assert tabcl.sdpa(ctx, q, k, k).shape == (0, 3, 2, 8)


def test_errors(ctx):
    q, k, v = data(np.random.default_rng(1), np.float32)
    with pytest.raises(tabcl.TypeMismatch, match="float64"):
        tabcl.sdpa(ctx, q, k.astype(np.float64), v)
    with pytest.raises(tabcl.TypeMismatch, match="int32"):
        tabcl.sdpa(ctx, *(x.astype(np.int32) for x in (q, k, v)))
    with pytest.raises(tabcl.InvalidArgument, match="dimensions"):
        tabcl.sdpa(ctx, q[0], k, v)
    with pytest.raises(tabcl.InvalidArgument, match="v has"):
        tabcl.sdpa(ctx, q, k, v[:, :3])
    with pytest.raises(tabcl.InvalidArgument, match="mask has shape"):
        tabcl.sdpa(ctx, q, k, v, mask=np.ones((2, 4, 5, 6), bool))
    with pytest.raises(tabcl.InvalidArgument, match="mask has shape"):
        tabcl.sdpa(ctx, q, k, v, mask=np.ones((2, 4, 2, 7), bool))
    with pytest.raises(tabcl.TypeMismatch, match="mask has dtype"):
        tabcl.sdpa(ctx, q, k, v, mask=np.ones((2, 4, 5, 7), np.float64))
    with pytest.raises(tabcl.InvalidArgument, match="not a multiple"):
        tabcl.sdpa(ctx, q[:, :, :3], k, v)
    with pytest.raises(tabcl.InvalidArgument, match="scale"):
        tabcl.sdpa(ctx, q, k, v, scale=0)
