"""Version, devices, contexts, exception classes."""
import gc
import pickle

import pytest

import tabcl
from tabcl import _tabcl


def test_version_is_the_library_version():
    assert tabcl.__version__ == _tabcl.version()
    parts = tabcl.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts)


def test_devices_and_their_selectors(ctx):
    devs = tabcl.devices()
    assert devs, "no device listed, yet a context exists"
    for d in devs:
        assert d.type in ("gpu", "cpu", "accelerator", "other")
        p, _, i = d.selector.partition(":")
        assert p.isdigit() and i.isdigit()
    # each selector picks the device listed under it
    for d in devs:
        assert tabcl.Context(device=d.selector, cache_dir="").device_name == d.name
    assert ctx.device_name in [d.name for d in devs]


def test_context_cache_dir_takes_paths(tmp_path, monkeypatch):
    # the index's device plans: on a CPU device a fit and lookup this small
    # run on the calling thread and build no program
    monkeypatch.setenv("TABCL_TUNE", "fit.host_labels=0;lookup.host_rows=0;lookup.host_threads=0")
    c = tabcl.Context(cache_dir=tmp_path / "cache")
    tabcl.CategoryIndex.fit(c, [["a", "b"]]).lookup([["b"]])
    built, from_cache, launches = c.stats()
    assert built + from_cache > 0 and launches > 0
    del c  # a CPU device stores its programs when the context goes (build.store)
    gc.collect()
    assert any((tmp_path / "cache").iterdir()), "the programs were cached in cache_dir"
    with pytest.raises(TypeError):
        tabcl.Context(cache_dir=3)


def test_context_device_errors():
    with pytest.raises(tabcl.NoDevice) as e:
        tabcl.Context(device="no-such-device-xyz")
    assert e.value.status == "TABCL_NO_DEVICE"
    assert "no-such-device-xyz" in str(e.value)
    with pytest.raises(TypeError):
        tabcl.Context(device=3)


def test_error_classes():
    names = {"InvalidArgument": (1, ValueError), "OutOfMemory": (2, MemoryError),
             "NoDevice": (3, None), "BuildFailed": (4, None), "Unsupported": (5, None),
             "TypeMismatch": (6, None), "OpenclError": (7, None), "IoError": (8, OSError),
             "CorruptData": (9, None)}
    for name, (code, extra) in names.items():
        cls = getattr(tabcl, name)
        assert issubclass(cls, tabcl.Error)
        assert cls.status == _tabcl.status_name(code)
        if extra is not None:
            assert issubclass(cls, extra)
        e = cls("detail")
        assert str(e) == "detail" and e.status == cls.status
    assert not issubclass(tabcl.NoDevice, (ValueError, OSError, MemoryError))


def test_handles_do_not_pickle(ctx):
    idx = tabcl.CategoryIndex.fit(ctx, [["a"]])
    with pytest.raises(TypeError, match="to_bytes"):
        pickle.dumps(idx)
    with pytest.raises(TypeError, match="to_bytes"):
        pickle.dumps(idx._h)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(ctx)
