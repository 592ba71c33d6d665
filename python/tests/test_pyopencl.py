"""tabcl.Context.from_pyopencl: a context on an application's own pyopencl
Context and CommandQueue (tabcl_context_create_cl), which tabcl retains, and
the errors of objects that are not pyopencl's or do not belong together.
Skipped where pyopencl is not installed (the Debian run)."""
import gc

import numpy as np
import pytest

import tabcl

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed (the Debian run has none)")


def same_device(ctx):
    """The pyopencl device the session's tabcl context runs on."""
    for p in cl.get_platforms():
        for d in p.get_devices():
            if d.name == ctx.device_name and p.name == ctx.platform_name:
                return d
    pytest.skip("pyopencl does not list tabcl's device %r" % ctx.device_name)


def test_context_on_the_applications_objects(ctx):
    dev = same_device(ctx)
    app_ctx = cl.Context([dev])
    app_queue = cl.CommandQueue(app_ctx, dev)
    t = tabcl.Context.from_pyopencl(app_ctx, app_queue, cache_dir=None)
    assert t.device_name == dev.name
    # tabcl holds its own references: the application may drop its objects.
    del app_ctx, app_queue
    gc.collect()
    idx = tabcl.CategoryIndex.fit(t, [["red", "green", "blue"]])
    assert idx.lookup([["blue", None, "pink", "red"]])[0].tolist() == [2, -1, -1, 0]
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 3, 2, 8)).astype(np.float32)
    want = tabcl.sdpa(ctx, q, q, q)
    np.testing.assert_allclose(tabcl.sdpa(t, q, q, q), want, rtol=1e-6, atol=1e-6)


def test_bad_objects_are_invalid_argument(ctx):
    dev = same_device(ctx)
    app_ctx = cl.Context([dev])
    app_queue = cl.CommandQueue(app_ctx, dev)
    with pytest.raises(tabcl.InvalidArgument, match="cl_context"):
        tabcl.Context.from_pyopencl("not a context", app_queue)
    with pytest.raises(tabcl.InvalidArgument, match="cl_queue"):
        tabcl.Context.from_pyopencl(app_ctx, object())
    other_queue = cl.CommandQueue(cl.Context([dev]), dev)
    with pytest.raises(tabcl.InvalidArgument, match="queue belongs to another"):
        tabcl.Context.from_pyopencl(app_ctx, other_queue)
