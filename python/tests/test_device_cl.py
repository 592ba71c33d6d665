"""The device-resident calls on pyopencl objects (tabcl_cl.h):
CategoryIndex.lookup_cl / fit_cl and tabcl.sdpa_cl take pyopencl Arrays and
Buffers of an application's context (tabcl.Context.from_pyopencl), order
their work by events (wait_for, the Arrays' own) and return the event of
their work; the caller's buffers reach the C entry point as they are (no
host copy); bad arguments are tabcl.InvalidArgument naming the argument and
change nothing. Skipped where pyopencl is not installed (the Debian run)."""
import numpy as np
import pytest

import tabcl
from tabcl import _tabcl

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed (the Debian run has none)")
cl_array = pytest.importorskip("pyopencl.array")

VOCAB = ["red", "green", "blue", "", "a much longer label than the others, past a word"]
QUERY = ["blue", None, "pink", "red", "", "a much longer label than the others, past a word",
         "gree"]
WANT = [2, -1, -1, 0, 3, 4, -1]


@pytest.fixture(scope="module")
def app(ctx):
    """(pyopencl context, queue, tabcl context on them) on tabcl's device."""
    for p in cl.get_platforms():
        for d in p.get_devices():
            if d.name == ctx.device_name and p.name == ctx.platform_name:
                c = cl.Context([d])
                q = cl.CommandQueue(c, d)
                return c, q, tabcl.Context.from_pyopencl(c, q)
    pytest.skip("pyopencl does not list tabcl's device %r" % ctx.device_name)


@pytest.fixture
def gates(app):
    """UserEvents of the app's context, all set complete at the end of the
    test whatever happens, so a failed test cannot leave the queue blocked."""
    made = []

    def make():
        made.append(cl.UserEvent(app[0]))
        return made[-1]
    yield make
    for e in made:
        if e.command_execution_status != cl.command_execution_status.COMPLETE:
            e.set_status(cl.command_execution_status.COMPLETE)


class NoHostCopies:
    """Makes every pyopencl host transfer (Array.get, enqueue_copy) fail
    while active, so a call that copied data through the host would raise."""

    def __init__(self, monkeypatch):
        self.mp = monkeypatch

    def __enter__(self):
        def refuse(*a, **k):
            raise AssertionError("a host copy during a device call")
        self.mp.setattr(cl_array.Array, "get", refuse)
        self.mp.setattr(cl, "enqueue_copy", refuse)
        return self

    def __exit__(self, *exc):
        self.mp.undo()


def test_lookup_on_device_arrays(app, gates, monkeypatch):
    c, q, t = app
    idx = tabcl.CategoryIndex.fit(t, [VOCAB])
    col = tabcl.DeviceStrings.from_labels(q, QUERY)
    q.finish()
    user_ev = gates()   # the call's work must wait for it
    pending = gates()   # and for the events of its input Arrays
    col.data.add_event(pending)
    with NoHostCopies(monkeypatch):
        (codes,), ev = idx.lookup_cl([col], wait_for=[user_ev])
    assert isinstance(ev, cl.Event) and isinstance(codes, cl_array.Array)
    assert codes.dtype == np.int32 and codes.shape == (len(QUERY),)
    assert ev in codes.events
    # the buffers handed to tabcl_category_index_lookup_cl are the caller's
    mems, waits = _tabcl._last_cl_call()
    assert mems == (col.data.base_data.int_ptr, col.offsets.base_data.int_ptr,
                    col.validity.base_data.int_ptr, codes.base_data.int_ptr)
    assert {user_ev.int_ptr, pending.int_ptr} <= set(waits)
    assert ev.command_execution_status != cl.command_execution_status.COMPLETE
    user_ev.set_status(cl.command_execution_status.COMPLETE)
    pending.set_status(cl.command_execution_status.COMPLETE)
    ev.wait()
    assert codes.get().tolist() == WANT
    assert idx.lookup([QUERY])[0].tolist() == WANT


def test_lookup_into_buffers_and_device_fit(app, monkeypatch):
    c, q, t = app
    vocab = tabcl.DeviceStrings.from_labels(q, VOCAB)
    col = tabcl.DeviceStrings.from_labels(q, QUERY)
    # Buffers, not Arrays: the lengths come from the caller
    raw = tabcl.DeviceStrings(col.offsets.base_data, col.data.base_data, col.validity.base_data,
                              length=len(QUERY), nbytes=col.nbytes, max_label=col.max_label)
    out = cl.Buffer(c, cl.mem_flags.READ_WRITE, 4 * len(QUERY))
    with NoHostCopies(monkeypatch):
        idx, fit_ev = tabcl.CategoryIndex.fit_cl(t, [vocab], order="value")
        (got,), ev = idx.lookup_cl([raw], out=[out], wait_for=[fit_ev])
    assert got is out
    mems, waits = _tabcl._last_cl_call()
    assert mems[-1] == out.int_ptr and waits == (fit_ev.int_ptr,)
    host = np.empty(len(QUERY), np.int32)
    cl.enqueue_copy(q, host, out, wait_for=[ev])
    # order="value": ranks of the distinct labels, bytewise
    ranks = {lab: i for i, lab in enumerate(sorted(set(VOCAB), key=lambda s: s.encode()))}
    assert host.tolist() == [ranks.get(x, -1) if x is not None else -1 for x in QUERY]


def test_empty_column(app):
    c, q, t = app
    idx = tabcl.CategoryIndex.fit(t, [VOCAB])
    col = tabcl.DeviceStrings.from_labels(q, [])
    (codes,), ev = idx.lookup_cl([col])
    ev.wait()
    assert codes.shape == (0,)


def sdpa_inputs(q, rng, B=3, L=5, H=2, D=8, dtype=np.float32):
    host = [rng.standard_normal((B, L, H, D)).astype(dtype) for _ in range(3)]
    return host, [cl_array.to_device(q, x) for x in host]


def test_sdpa_on_device_arrays(app, ctx, gates, monkeypatch):
    c, q, t = app
    rng = np.random.default_rng(5)
    host, (dq, dk, dv) = sdpa_inputs(q, rng)
    mask = rng.random((1, 2, 5, 5)) < 0.7
    mask[..., 0] = True
    dmask = cl_array.to_device(q, mask)
    gate = gates()
    with NoHostCopies(monkeypatch):
        out, ev = tabcl.sdpa_cl(t, dq, dk, dv, mask=dmask, causal=False, scale=0.3, wait_for=[gate])
    mems, waits = _tabcl._last_cl_call()
    assert mems == (dq.base_data.int_ptr, dk.base_data.int_ptr, dv.base_data.int_ptr,
                    dmask.base_data.int_ptr, out.base_data.int_ptr)
    assert gate.int_ptr in waits
    assert ev in out.events and out.shape == dq.shape and out.dtype == np.float32
    assert ev.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    want = tabcl.sdpa(ctx, *host, mask=mask, scale=0.3)
    np.testing.assert_allclose(out.get(), want, rtol=1e-5, atol=1e-6)
    # into a caller's Buffer, causal, f16, ordered after another call's event
    h16, (q16, k16, v16) = sdpa_inputs(q, rng, dtype=np.float16)
    buf = cl.Buffer(c, cl.mem_flags.READ_WRITE, q16.nbytes)
    got, ev2 = tabcl.sdpa_cl(t, q16, k16, v16, causal=True, out=buf, wait_for=[ev])
    assert got is buf and ev.int_ptr in _tabcl._last_cl_call()[1]
    res = np.empty(q16.shape, np.float16)
    cl.enqueue_copy(q, res, buf, wait_for=[ev2])
    np.testing.assert_allclose(res.astype(np.float32),
                               tabcl.sdpa(ctx, *h16, causal=True).astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def check_refused(fn, name, before, after):
    """fn raises InvalidArgument naming name, and after() still equals before."""
    with pytest.raises(tabcl.InvalidArgument, match=name):
        fn()
    assert after() == before


def test_bad_lookup_arguments(app):
    c, q, t = app
    idx = tabcl.CategoryIndex.fit(t, [VOCAB])
    col = tabcl.DeviceStrings.from_labels(q, QUERY)
    out = cl_array.to_device(q, np.full(len(QUERY), 77, np.int32))
    q.finish()
    seen = lambda: out.get().tolist()  # noqa: E731
    before = seen()
    # wrong dtype of the offsets and of the output
    bad = tabcl.DeviceStrings(col.offsets.astype(np.int32), col.data, col.validity)
    check_refused(lambda: idx.lookup_cl([bad], out=[out]), r"columns\[0\]\.offsets has dtype int32",
                  before, seen)
    check_refused(lambda: idx.lookup_cl([col], out=[out.astype(np.int64)]), r"out\[0\] has dtype int64",
                  before, seen)
    # wrong length: an output too short, a Buffer too small, offsets too short
    short = cl_array.empty(q, len(QUERY) - 1, np.int32)
    check_refused(lambda: idx.lookup_cl([col], out=[short]), r"out\[0\] holds 24 bytes; it needs 28",
                  before, seen)
    small = cl.Buffer(c, cl.mem_flags.READ_WRITE, 8)
    check_refused(lambda: idx.lookup_cl([col], out=[small]), r"out\[0\] holds 8 bytes", before, seen)
    cut = tabcl.DeviceStrings(col.offsets.base_data, col.data, col.validity, length=100)
    check_refused(lambda: idx.lookup_cl([cut], out=[out]), r"columns\[0\]\.offsets holds 64 bytes",
                  before, seen)
    check_refused(lambda: idx.lookup_cl([col, col], out=[out, out]), "index has 1", before, seen)
    check_refused(lambda: idx.lookup_cl(col, out=[out]), "columns must be a list", before, seen)
    check_refused(lambda: idx.lookup_cl([np.zeros(3)], out=[out]), r"columns\[0\] is ndarray",
                  before, seen)
    # a buffer and an event of another OpenCL context
    other = cl.Context(c.devices)
    foreign = cl_array.empty(cl.CommandQueue(other), len(QUERY), np.int32)
    check_refused(lambda: idx.lookup_cl([col], out=[foreign]), r"out\[0\] belongs to another",
                  before, seen)
    check_refused(lambda: idx.lookup_cl([col], out=[out], wait_for=[cl.UserEvent(other)]),
                  r"wait_for\[0\] belongs to another", before, seen)
    check_refused(lambda: idx.lookup_cl([col], out=[out], wait_for=["now"]), r"wait_for\[0\] is str",
                  before, seen)
    # a context tabcl made itself has no pyopencl objects; its handles still check
    plain = tabcl.CategoryIndex.fit(tabcl.Context(), [VOCAB])
    check_refused(lambda: plain.lookup_cl([col], out=[out]), "belongs to another", before, seen)


def test_bad_sdpa_arguments(app):
    c, q, t = app
    rng = np.random.default_rng(9)
    _, (dq, dk, dv) = sdpa_inputs(q, rng)
    out = cl_array.to_device(q, np.full(dq.shape, 5, np.float32))
    q.finish()
    seen = lambda: out.get().tolist()  # noqa: E731
    before = seen()
    run = lambda **kw: lambda: tabcl.sdpa_cl(t, **{**dict(q=dq, k=dk, v=dv, out=out), **kw})  # noqa: E731
    check_refused(run(k=dk.astype(np.float64)), "k has dtype float64", before, seen)
    check_refused(run(q=dq.astype(np.int32)), "q has dtype int32", before, seen)
    check_refused(run(v=dv[:, :4]), "v has shape", before, seen)
    check_refused(run(q=dq.reshape(3, 5, 16)), "q has 3 dimensions", before, seen)
    check_refused(run(k=dk.get()), "k is ndarray, not a pyopencl Array", before, seen)
    check_refused(run(out=cl.Buffer(c, cl.mem_flags.READ_WRITE, 64)), "out holds 64 bytes",
                  before, seen)
    check_refused(run(out=cl_array.empty(q, (3, 5, 2, 4), np.float32)), "out is", before, seen)
    check_refused(run(mask=cl_array.empty(q, (1, 1, 5, 4), np.bool_)), "mask has shape", before, seen)
    check_refused(run(mask=cl_array.empty(q, (1, 1, 5, 5), np.int8)), "mask has dtype int8",
                  before, seen)
    check_refused(run(scale=0), "scale is 0", before, seen)
    check_refused(run(q=dq[1:], k=dk[1:], v=dv[1:]), "q starts at offset", before, seen)
    foreign = cl_array.to_device(cl.CommandQueue(cl.Context(c.devices)), dv.get())
    check_refused(run(v=foreign), "v belongs to another OpenCL context", before, seen)
    check_refused(lambda: tabcl.sdpa_cl("ctx", dq, dk, dv), "ctx is str", before, seen)
