"""tabcl.torch: the custom operators against a float64 reference and
PyTorch's own attention; one compiled graph across batch sizes; autocast;
in-place reads of CPU tensors; the errors of bad tensors."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the Debian run has none)")
F = torch.nn.functional

import tabcl  # noqa: E402
import tabcl.torch as tt  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def context(ctx):
    tt.set_context(ctx)
    yield ctx
    tt.set_context(None)


@pytest.fixture
def gen(request):
    seed = int(np.random.SeedSequence().entropy % (2 ** 32))
    print("[seed] %s: %d" % (request.node.name, seed))
    return torch.Generator().manual_seed(seed)


def bhld(gen, B, H, L, D, dtype=torch.float32):
    return torch.randn((B, H, L, D), generator=gen, dtype=torch.float64).to(dtype)


def reference(q, k, v, mask=None, causal=False, scale=None):
    """Float64 attention in [B, H, L, D], with grouped heads."""
    q, k, v = (x.double() for x in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    s = q @ k.transpose(-1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    if causal:
        Lq, Lk = s.shape[-2:]
        s = s.masked_fill(~torch.ones(Lq, Lk, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


TOL = {torch.float32: 1e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2, torch.float64: 1e-12}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_matches_reference_and_torch(gen, dtype):
    q = bhld(gen, 2, 4, 5, 16, dtype)
    k, v = bhld(gen, 2, 4, 7, 16, dtype), bhld(gen, 2, 4, 7, 16, dtype)
    out = tt.scaled_dot_product_attention(q, k, v)
    assert out.dtype == dtype and out.device == q.device and out.shape == q.shape
    assert out.is_contiguous()
    want = reference(q, k, v)
    tol = TOL[dtype]
    torch.testing.assert_close(out.double(), want, atol=tol * 4, rtol=tol * 4)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v),
                               atol=tol * 8, rtol=tol * 8)


def test_masks_causal_gqa_scale(gen):
    q = bhld(gen, 3, 4, 6, 8)
    k, v = bhld(gen, 3, 2, 9, 8), bhld(gen, 3, 2, 9, 8)
    boolmask = torch.rand((3, 1, 6, 9), generator=gen) > 0.3
    boolmask[..., 0] = True   # no row without a key: PyTorch's value for those differs
    addmask = torch.randn((1, 4, 6, 9), generator=gen)
    for kw, ref in [
        (dict(attn_mask=boolmask), dict(mask=boolmask)),
        (dict(attn_mask=addmask), dict(mask=addmask)),
        (dict(attn_mask=boolmask[0, 0]), dict(mask=boolmask[0, 0].expand(3, 4, 6, 9))),
        (dict(is_causal=True), dict(causal=True)),
        (dict(scale=0.3), dict(scale=0.3)),
    ]:
        out = tt.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
        torch.testing.assert_close(out.double(), reference(q, k, v, **ref), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, enable_gqa=True,
                                                                       **kw),
                                   atol=1e-5, rtol=1e-5)


def test_key_padding_mask_is_read_in_place(gen, monkeypatch):
    # A (B, 1, 1, Lk) bool mask, as PyTorch takes it, reaches the C call as
    # it is (query extent 1), not written out over the queries.
    q = bhld(gen, 3, 4, 6, 8)
    k, v = bhld(gen, 3, 2, 9, 8), bhld(gen, 3, 2, 9, 8)
    pad = torch.rand((3, 1, 1, 9), generator=gen) > 0.4
    pad[..., 0] = True   # no row without a key: PyTorch's value for those differs
    add = torch.randn((1, 4, 1, 9), generator=gen)
    seen = []
    real = tabcl._tabcl.sdpa_at

    def spy(ctx, qa, ka, va, ma, oa, *rest):
        seen.append((ma, rest[-4:]))
        return real(ctx, qa, ka, va, ma, oa, *rest)

    monkeypatch.setattr(tabcl._tabcl, "sdpa_at", spy)
    for m, flags in ((pad, (0, 1, 1)), (add, (1, 0, 1)), (pad[1, :, 0], (1, 1, 1))):
        out = tt.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
        assert seen[-1][0] == m.data_ptr() and seen[-1][1][1:] == flags
        torch.testing.assert_close(out.double(), reference(q, k, v, mask=m.expand(3, 4, 6, 9)),
                                   atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(
            q, k, v, attn_mask=m, enable_gqa=True), atol=1e-5, rtol=1e-5)


def test_transposed_views_are_read_in_place(gen, monkeypatch):
    # A model's usual q: x.view(B, L, H, D).transpose(1, 2) is tabcl's layout
    # already, so the operator hands its own memory to the C call.
    x = torch.randn((2, 5, 4, 8), generator=gen)
    q = x.transpose(1, 2)
    seen = []
    real = tabcl._tabcl.sdpa_at

    def spy(ctx, qa, ka, va, ma, oa, *rest):
        seen.append((qa, ka, va))
        return real(ctx, qa, ka, va, ma, oa, *rest)

    monkeypatch.setattr(tabcl._tabcl, "sdpa_at", spy)
    out = tt.scaled_dot_product_attention(q, q, q)
    assert seen == [(x.data_ptr(),) * 3]
    torch.testing.assert_close(out.double(), reference(q, q, q), atol=1e-5, rtol=1e-5)
    # A contiguous [B, H, L, D] tensor is copied by torch (never through
    # numpy) and gives the same result.
    qc = q.contiguous()
    torch.testing.assert_close(tt.scaled_dot_product_attention(qc, qc, qc), out)
    assert seen[-1][0] != qc.data_ptr()


class CountingBackend:
    """A torch.compile backend that counts the graphs it is given and the
    tabcl nodes in them, and runs each graph as traced."""

    def __init__(self):
        self.graphs = 0
        self.tabcl_nodes = []
        self.nodes = []

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        calls = [n for n in gm.graph.nodes if n.op == "call_function"]
        self.nodes.append(calls)
        self.tabcl_nodes.append([n for n in calls if "tabcl" in str(n.target)])
        return gm.forward


def test_one_graph_for_any_batch(gen):
    torch._dynamo.reset()
    backend = CountingBackend()

    def attend(q, k, v):
        return tt.scaled_dot_product_attention(q, k, v)

    compiled = torch.compile(attend, backend=backend, fullgraph=True, dynamic=True)
    for B in (3, 65535, 65536, 140000):
        q, k, v = (bhld(gen, B, 1, 2, 4) for _ in range(3))
        got = compiled(q, k, v)
        want = attend(q, k, v)
        assert got.shape == (B, 1, 2, 4)
        torch.testing.assert_close(got, want, atol=0, rtol=0)
        if B == 3:
            torch.testing.assert_close(got.double(), reference(q, k, v), atol=1e-5, rtol=1e-5)
    assert backend.graphs == 1
    assert len(backend.tabcl_nodes[0]) == 1
    assert str(backend.tabcl_nodes[0][0].target).startswith("tabcl.sdpa")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast(gen, dtype):
    q, k, v = (bhld(gen, 2, 2, 4, 8) for _ in range(3))
    with torch.autocast("cpu", dtype=dtype):
        out = tt.scaled_dot_product_attention(q, k, v)
        peer = F.scaled_dot_product_attention(q, k, v)
        q64 = q.double()
        out64 = tt.scaled_dot_product_attention(q64, k.double(), v.double())
    assert out.dtype == dtype == peer.dtype
    # The inputs were rounded to dtype first, as autocast does.
    want = reference(q.to(dtype), k.to(dtype), v.to(dtype))
    torch.testing.assert_close(out.double(), want, atol=TOL[dtype] * 4, rtol=TOL[dtype] * 4)
    assert out64.dtype == torch.float64
    torch.testing.assert_close(out64, reference(q64, k.double(), v.double()),
                               atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_compiled_matches_eager(gen, dtype):
    torch._dynamo.reset()
    backend = CountingBackend()

    def attend(q, k, v):
        with torch.autocast("cpu", dtype=dtype):
            return tt.scaled_dot_product_attention(q, k, v)

    compiled = torch.compile(attend, backend=backend, fullgraph=True, dynamic=True)
    for B in (3, 70000):
        q, k, v = (bhld(gen, B, 1, 2, 4) for _ in range(3))
        got, want = compiled(q, k, v), attend(q, k, v)
        assert got.dtype == dtype
        torch.testing.assert_close(got, want, atol=0, rtol=0)
    assert backend.graphs == 1


def test_category_ops(ctx):
    vocab = [["red", "green", "blue"], ["s", "m", "l", "xl"]]
    idx = tabcl.CategoryIndex.fit(ctx, vocab)
    labels = ["green", None, "purple", "red", "", "blue"]
    off, data, valid = tt.strings_tensors(labels)
    got = tt.category_lookup(idx, 0, off, data, valid)
    ref = {s: i for i, s in enumerate(vocab[0])}
    assert got.dtype == torch.int32
    assert got.tolist() == [ref.get(s, -1) if s is not None else -1 for s in labels]
    cats = ["xl", "m", "q"]
    c_off, c_data, _ = tt.strings_tensors(cats)
    codes = torch.tensor([0, 2, -1, 1, 1], dtype=torch.int64)
    got = tt.category_align(idx, 1, c_off, c_data, None, codes)
    ref = {s: i for i, s in enumerate(vocab[1])}
    assert got.tolist() == [ref.get(cats[c], -1) if c >= 0 else -1 for c in codes.tolist()]


def test_category_ops_compile_to_one_node_each(ctx):
    torch._dynamo.reset()
    idx = tabcl.CategoryIndex.fit(ctx, [["a", "b", "c"]])
    key = tt.index_id(idx)
    backend = CountingBackend()

    def encode(off, data, codes):
        return (torch.ops.tabcl.category_lookup(key, 0, off, data, None),
                torch.ops.tabcl.category_align(key, 0, off, data, None, codes))

    compiled = torch.compile(encode, backend=backend, fullgraph=True, dynamic=True)
    # Sizes that differ between the tensors of a call (labels, their bytes
    # and offsets): dynamic shapes give equal sizes one symbol.
    for labels in (["c", "xyz", "a"], ["b"] * 5 + ["zzz", "a"]):
        off, data, _ = tt.strings_tensors(labels)
        codes = torch.arange(len(labels), dtype=torch.int32).flip(0)
        got = compiled(off, data, codes)
        want = encode(off, data, codes)
        assert [g.tolist() for g in got] == [w.tolist() for w in want]
        ref = {"a": 0, "b": 1, "c": 2}
        assert got[0].tolist() == [ref.get(s, -1) for s in labels]
    assert backend.graphs == 1
    assert sorted(str(n.target).split(".")[1] for n in backend.tabcl_nodes[0]) == [
        "category_align", "category_lookup"]


def test_bad_tensors_are_invalid_argument(gen, ctx):
    q = bhld(gen, 2, 2, 3, 4)
    cases = [
        ((q.int(), q, q), {}, "query"),
        ((q, q.double(), q), {}, "dtypes"),
        ((q[0], q, q), {}, "query has 3 dimensions"),
        ((q, q[:1], q[:1]), {}, "key"),
        ((q, q, q[..., :2]), {}, "value"),
        ((q.to("meta"), q, q), {}, "query is on meta"),
        ((q, q, q), dict(attn_mask=torch.zeros(2, 2, 3, 5, dtype=torch.bool)), "attn_mask"),
        ((q, q, q), dict(attn_mask=torch.zeros(2, 2, 3, 3, dtype=torch.int32)), "attn_mask"),
        ((q, q, q), dict(dropout_p=0.1), "dropout_p"),
        ((q, q[:, :1], q[:, :1]), {}, "enable_gqa"),
    ]
    for args, kw, words in cases:
        with pytest.raises(tabcl.InvalidArgument, match=words):
            tt.scaled_dot_product_attention(*args, **kw)
    idx = tabcl.CategoryIndex.fit(ctx, [["a"]])
    off, data, _ = tt.strings_tensors(["a"])
    with pytest.raises(tabcl.InvalidArgument, match="offsets"):
        tt.category_lookup(idx, 0, off.int(), data)
    with pytest.raises(tabcl.InvalidArgument, match="data"):
        tt.category_lookup(idx, 0, off, data.to(torch.int8))
    with pytest.raises(tabcl.InvalidArgument, match="column 3"):
        tt.category_lookup(idx, 3, off, data)
    with pytest.raises(tabcl.InvalidArgument, match="codes"):
        tt.category_align(idx, 0, off, data, None, torch.tensor([5]))


def test_dropout_p_zero_only(gen):
    """dropout_p in PyTorch's position: 0.0 (or 0) runs as without it, since
    inference has no dropout; any other value is refused, naming it."""
    q = bhld(gen, 2, 2, 3, 4)
    want = tt.scaled_dot_product_attention(q, q, q)
    torch.testing.assert_close(tt.scaled_dot_product_attention(q, q, q, None, 0.0), want)
    torch.testing.assert_close(tt.scaled_dot_product_attention(q, q, q, dropout_p=0), want)
    for p in (0.5, 1.0, -0.1):
        with pytest.raises(tabcl.InvalidArgument, match="dropout_p"):
            tt.scaled_dot_product_attention(q, q, q, None, p)
