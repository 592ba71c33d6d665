"""Device work runs without the GIL. With a switch interval far longer than
the test, a thread gives the GIL up only by blocking or by a C call that
releases it: the main thread, woken by the worker just before its tabcl
call, can run only if that call let the GIL go, and then finds the call
still running."""
import sys
import threading

import numpy as np

import tabcl


def run_while_watching(call):
    started, done = threading.Event(), threading.Event()
    seen = {}

    def worker():
        started.set()
        call()
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        seen["call_still_running"] = not done.is_set()
        t.join()
    finally:
        sys.setswitchinterval(old)
    return seen["call_still_running"]


def test_sdpa_releases_the_gil(ctx):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((4, 256, 4, 64)).astype(np.float32)
    tabcl.sdpa(ctx, q[:1, :8], q[:1, :8], q[:1, :8])   # kernels built outside the watch
    assert run_while_watching(lambda: tabcl.sdpa(ctx, q, q, q))


def test_lookup_releases_the_gil(ctx):
    vocab = ["label-%d" % i for i in range(20000)]
    idx = tabcl.CategoryIndex.fit(ctx, [vocab])
    from tabcl import _columns
    col = _columns.to_strings(vocab * 10, 0)
    out = [np.empty(len(col), np.int32)]
    from tabcl import _tabcl
    assert run_while_watching(lambda: _tabcl.lookup(idx._h, [col], out))
    assert out[0][:3].tolist() == [0, 1, 2]
