"""tabcl: string hashing, a categorical hash index and attention on any
OpenCL device, from Python. The names follow the C contract
(include/tabcl/tabcl.h); see "The Python contract" in the design notes.

    import tabcl
    ctx = tabcl.Context()                      # $TABCL_DEVICE, else a GPU, else any device
    idx = tabcl.CategoryIndex.fit(ctx, [["red", "green"], ["s", "m", "l"]])
    codes = idx.lookup([["green", None], ["xl", "m"]])   # [array([1, -1]), array([-1, 1])]
"""
from collections import namedtuple

from . import _tabcl
from ._errors import (BuildFailed, CorruptData, Error, InvalidArgument, IoError, NoDevice,
                      OpenclError, OutOfMemory, TypeMismatch, Unsupported, BY_STATUS)

_tabcl._register_errors(BY_STATUS)

from ._attention import sdpa  # noqa: E402
from ._device import DeviceStrings, sdpa_cl  # noqa: E402
from ._index import CategoryIndex  # noqa: E402

Context = _tabcl.Context
__version__ = _tabcl.version()

Device = namedtuple("Device", "selector name platform type")
Device.__doc__ = """An OpenCL device tabcl can use: selector ("P:D") picks it in
Context(device=...); type is "gpu", "cpu", "accelerator" or "other"."""


def devices():
    """The OpenCL devices, in the order their "P:D" selectors count them."""
    return [Device(*d) for d in _tabcl.devices()]


def __getattr__(name):
    # tabcl.dask needs dask; import it only when asked for.
    if name == "dask":
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError("module 'tabcl' has no attribute %r" % name)


__all__ = ["BuildFailed", "CategoryIndex", "Context", "CorruptData", "Device", "Error",
           "InvalidArgument", "IoError", "NoDevice", "OpenclError", "OutOfMemory",
           "TypeMismatch", "Unsupported", "devices", "sdpa", "__version__", "DeviceStrings", "sdpa_cl"]
