"""Every tabcl call runs without the GIL. The extension counts the calls
that found the GIL released inside their C section (PyGILState_Check, no
thread timing involved); each call below must add one to the count, and
another thread must be able to run Python while it does so."""
import threading

import numpy as np

import tabcl
from tabcl import _tabcl


def released_during(call):
    """How many tabcl calls ran without the GIL while call() ran."""
    before = _tabcl._nogil_calls()
    call()
    return _tabcl._nogil_calls() - before


def test_sdpa_releases_the_gil(ctx):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((4, 256, 4, 64)).astype(np.float32)
    assert released_during(lambda: tabcl.sdpa(ctx, q, q, q)) >= 1


def test_lookup_releases_the_gil(ctx):
    vocab = ["label-%d" % i for i in range(20000)]
    idx = tabcl.CategoryIndex.fit(ctx, [vocab])
    from tabcl import _columns
    col = _columns.to_strings(vocab * 10, 0)
    out = [np.empty(len(col), np.int32)]
    assert released_during(lambda: _tabcl.lookup(idx._h, [col], out)) >= 1
    assert out[0][:3].tolist() == [0, 1, 2]


def test_fit_save_load_release_the_gil(ctx, tmp_path):
    assert released_during(lambda: tabcl.CategoryIndex.fit(ctx, [["a", "b"]])) >= 1
    idx = tabcl.CategoryIndex.fit(ctx, [["a", "b"]])
    path = str(tmp_path / "i.tabcl")
    assert released_during(lambda: idx.save(path)) >= 1
    assert released_during(lambda: tabcl.CategoryIndex.load(ctx, path)) >= 1


def test_calls_from_threads_run_side_by_side(ctx):
    """Threads calling tabcl at once all finish with the right codes (a call
    that kept the GIL would still finish: this checks the calls are safe to
    interleave, the count above checks the release)."""
    idx = tabcl.CategoryIndex.fit(ctx, [["x", "y", "z"]])
    results, errors = [], []

    def worker():
        try:
            results.append(idx.lookup([["z", "x", "q"]])[0].tolist())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == [[2, 0, -1]] * 4
