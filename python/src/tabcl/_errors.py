"""tabcl's exceptions: tabcl.Error and one subclass per tabcl_status.

``status`` is the C status name ("TABCL_INVALID_ARGUMENT", ...); the message
is the library's detail (tabcl_last_error()) or the Python layer's own.
"""


class Error(Exception):
    """A tabcl call failed; ``.status`` names the C status."""

    status = None


class InvalidArgument(Error, ValueError):
    status = "TABCL_INVALID_ARGUMENT"


class OutOfMemory(Error, MemoryError):
    status = "TABCL_OUT_OF_MEMORY"


class NoDevice(Error):
    status = "TABCL_NO_DEVICE"


class BuildFailed(Error):
    status = "TABCL_BUILD_FAILED"


class Unsupported(Error):
    status = "TABCL_UNSUPPORTED"


class TypeMismatch(Error):
    status = "TABCL_TYPE_MISMATCH"


class OpenclError(Error):
    status = "TABCL_OPENCL_ERROR"


class IoError(Error, OSError):
    status = "TABCL_IO_ERROR"


class CorruptData(Error):
    status = "TABCL_CORRUPT_DATA"


# Indexed by the numeric tabcl_status (0, TABCL_OK, has no class).
BY_STATUS = (None, InvalidArgument, OutOfMemory, NoDevice, BuildFailed, Unsupported,
             TypeMismatch, OpenclError, IoError, CorruptData)
