"""Device-resident calls on pyopencl objects (tabcl_cl.h): the data stays in
the application's buffers, the work is enqueued on the tabcl context's queue
after the given events, and each call returns the event of its work.

Inputs and outputs are pyopencl.array.Array (C-contiguous, at offset 0 of
their buffer) or pyopencl.Buffer, of the tabcl context's OpenCL context: use
a Context made with tabcl.Context.from_pyopencl(cl_context, cl_queue). An
Array's own events (Array.events) are waited for, besides wait_for; the
returned event is also added to every output Array (Array.add_event), so
pyopencl's own operations on them wait for it. Every argument is checked
before anything is enqueued: a bad one raises tabcl.InvalidArgument naming
it, and changes nothing."""
import numpy as np

from . import _tabcl
from ._attention import _DTYPES, _MASK_NONE, _mask_form
from ._errors import InvalidArgument


def _cl():
    try:
        import pyopencl
        import pyopencl.array  # noqa: F401
    except ImportError as e:  # pragma: no cover - the calls need pyopencl objects anyway
        raise InvalidArgument("the device calls take pyopencl objects, and pyopencl is not "
                              "importable (%s)" % e)
    return pyopencl


class DeviceStrings:
    """A string column in device buffers, Arrow layout (tabcl_strings_cl):
    offsets holds length + 1 int64 (offsets[0] == 0, non-decreasing,
    offsets[length] == nbytes), data the label bytes, validity None (every
    label present) or (length + 7) // 8 bytes, bit i (LSB first) set when
    label i is present. Each is a pyopencl Array (offsets int64, data and
    validity uint8 or int8) or Buffer. length defaults to an offsets Array's
    size - 1 and nbytes to data's size in bytes; give them for Buffers, or
    when data is padded past the last label. The contents are not read on
    the host (they are trusted, as tabcl_cl.h says). max_label: the longest
    label in bytes, 0 when unknown."""

    __slots__ = ("offsets", "data", "validity", "length", "nbytes", "max_label")

    def __init__(self, offsets, data, validity=None, length=None, nbytes=None, max_label=0):
        self.offsets, self.data, self.validity = offsets, data, validity
        self.length, self.nbytes, self.max_label = length, nbytes, max_label

    @classmethod
    def from_labels(cls, queue, labels):
        """Uploads a list of str / bytes / None to new device buffers (a
        helper for tests and examples: the upload is the one host copy)."""
        cl = _cl()
        enc = [None if x is None else (x.encode("utf-8") if isinstance(x, str) else bytes(x))
               for x in labels]
        lens = np.array([0 if x is None else len(x) for x in enc], dtype=np.int64)
        offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        data = np.frombuffer(b"".join(x for x in enc if x), dtype=np.uint8)
        validity = None
        if any(x is None for x in enc):
            validity = np.packbits(np.array([x is not None for x in enc]), bitorder="little")
            validity = cl.array.to_device(queue, validity)
        # a zero-size buffer cannot be made: one spare byte, counted out by nbytes
        d = cl.array.to_device(queue, data if data.size else np.zeros(1, np.uint8))
        return cls(cl.array.to_device(queue, offsets), d, validity, length=len(enc),
                   nbytes=int(data.size), max_label=int(lens.max()) if lens.size else 0)


class _Call:
    """The checks of one call: the context's OpenCL handles, and the events
    every Array argument brings."""

    def __init__(self, ctx):
        if not isinstance(ctx, _tabcl.Context):
            raise InvalidArgument("ctx is %s, not a tabcl.Context" % type(ctx).__name__)
        self.cl = _cl()
        self.ctx = ctx
        self.cl_context, self.cl_queue, _ = _tabcl.cl_handles(ctx)
        self.events = []

    def buffer(self, obj, name, dtypes, need_bytes=None, optional=False):
        """(the cl_mem handle, its size in bytes, the element count or None)
        of an Array or Buffer argument, checked."""
        cl = self.cl
        if obj is None:
            if optional:
                return 0, 0, None
            raise InvalidArgument("%s is None" % name)
        if isinstance(obj, cl.array.Array):
            if dtypes is not None and obj.dtype not in dtypes:
                raise InvalidArgument("%s has dtype %s; it must be %s" %
                                      (name, obj.dtype, " or ".join(str(np.dtype(d)) for d in dtypes)))
            if not obj.flags.c_contiguous:
                raise InvalidArgument("%s is not C-contiguous" % name)
            if obj.offset:
                raise InvalidArgument("%s starts at offset %d of its buffer; tabcl reads from "
                                      "offset 0 (pass a copy or the whole buffer)" % (name, obj.offset))
            buf, nbytes, count = obj.base_data, obj.nbytes, obj.size
            self.events.extend(obj.events)
        elif isinstance(obj, cl.Buffer):
            buf, nbytes, count = obj, obj.size, None
        else:
            raise InvalidArgument("%s is %s, not a pyopencl Array or Buffer" % (name, type(obj).__name__))
        if buf is None:   # an Array of no elements holds no buffer
            if need_bytes:
                raise InvalidArgument("%s holds 0 bytes; it needs %d" % (name, need_bytes))
            return 0, 0, count
        if buf.context.int_ptr != self.cl_context:
            raise InvalidArgument("%s belongs to another OpenCL context than ctx's" % name)
        if need_bytes is not None and buf.size < need_bytes:
            raise InvalidArgument("%s holds %d bytes; it needs %d" % (name, buf.size, need_bytes))
        return buf.int_ptr, nbytes, count

    def wait_list(self, wait_for):
        """The handles of wait_for's events and the Arrays' own."""
        evs = list(wait_for or [])
        for i, e in enumerate(evs):
            if not isinstance(e, self.cl.Event):
                raise InvalidArgument("wait_for[%d] is %s, not a pyopencl Event" % (i, type(e).__name__))
            if e.context.int_ptr != self.cl_context:
                raise InvalidArgument("wait_for[%d] belongs to another OpenCL context" % i)
        return [e.int_ptr for e in evs + self.events]

    def event(self, handle):
        """The returned event, owned from now on by pyopencl."""
        return self.cl.Event.from_int_ptr(handle, retain=False)


_BYTES = (np.dtype(np.uint8), np.dtype(np.int8))


def _columns(call, columns, name):
    if isinstance(columns, DeviceStrings) or not isinstance(columns, (list, tuple)):
        raise InvalidArgument("%s must be a list of tabcl.DeviceStrings" % name)
    out = []
    for i, c in enumerate(columns):
        n = "%s[%d]" % (name, i)
        if not isinstance(c, DeviceStrings):
            raise InvalidArgument("%s is %s, not a tabcl.DeviceStrings" % (n, type(c).__name__))
        oh, obytes, ocount = call.buffer(c.offsets, n + ".offsets", (np.dtype(np.int64),))
        length = c.length if c.length is not None else (ocount - 1 if ocount else None)
        if length is None or length < 0:
            raise InvalidArgument("%s.length is not given (offsets is a Buffer)" % n)
        if obytes < 8 * (length + 1):
            raise InvalidArgument("%s.offsets holds %d bytes; %d labels need %d" %
                                  (n, obytes, length, 8 * (length + 1)))
        dh, dbytes, _ = call.buffer(c.data, n + ".data", _BYTES, optional=length == 0)
        nbytes = dbytes if c.nbytes is None else int(c.nbytes)
        if nbytes < 0 or nbytes > dbytes:
            raise InvalidArgument("%s.nbytes is %d; data holds %d bytes" % (n, nbytes, dbytes))
        vh, _, _ = call.buffer(c.validity, n + ".validity", _BYTES,
                               need_bytes=(length + 7) // 8 or None, optional=True)
        if int(c.max_label) < 0:
            raise InvalidArgument("%s.max_label is %d" % (n, c.max_label))
        out.append((int(length), int(nbytes), dh, oh, vh, int(c.max_label)))
    return out


def lookup_cl(index, columns, out=None, wait_for=None):
    """Codes of device string columns (tabcl_category_index_lookup_cl).
    columns: a list of DeviceStrings, one per fitted column. out: None (new
    int32 Arrays on the context's queue) or one int32 Array or Buffer per
    column with room for its rows. Returns (codes, event): the output Arrays
    or Buffers and the pyopencl Event that completes when every code is
    written."""
    call = _Call(index.context)
    cols = _columns(call, columns, "columns")
    if len(cols) != index.num_columns:
        raise InvalidArgument("columns has %d columns; the index has %d" %
                              (len(cols), index.num_columns))
    cl = call.cl
    if out is None:
        queue = cl.CommandQueue.from_int_ptr(call.cl_queue, retain=True)
        out = [cl.array.empty(queue, c[0], np.int32) for c in cols]
    elif not isinstance(out, (list, tuple)) or len(out) != len(cols):
        raise InvalidArgument("out must be a list of %d int32 Arrays or Buffers" % len(cols))
    codes = [call.buffer(o, "out[%d]" % i, (np.dtype(np.int32),), need_bytes=4 * c[0] or None,
                         optional=c[0] == 0)[0] for i, (o, c) in enumerate(zip(out, cols))]
    wait = call.wait_list(wait_for)
    ev = call.event(_tabcl.lookup_cl(index, cols, codes, wait))
    for o in out:
        if isinstance(o, cl.array.Array):
            o.add_event(ev)
    return list(out), ev


def fit_cl(ctx, columns, order, wait_for=None):
    """(Index handle, event) of tabcl_category_index_fit_cl on device
    columns (a list of DeviceStrings)."""
    call = _Call(ctx)
    cols = _columns(call, columns, "columns")
    wait = call.wait_list(wait_for)
    h, ev = _tabcl.fit_cl(ctx, cols, order, wait)
    return h, call.event(ev)


def sdpa_cl(ctx, q, k, v, mask=None, causal=False, scale=None, out=None, wait_for=None):
    """tabcl.sdpa on pyopencl Arrays (tabcl_sdpa_cl): q [B, Lq, Hq, D], k and
    v [B, Lk, Hkv, D] of one dtype (float32, float16, float64, or a 2-byte
    bfloat16), mask None, bool or q's dtype of shape [B or 1, Hq or 1, Lq,
    Lk]. out: None (a new Array like q) or an Array of q's shape and dtype,
    or a Buffer of at least q's bytes. Returns (out, event)."""
    call = _Call(ctx)
    cl = call.cl
    for name, a in (("q", q), ("k", k), ("v", v)):
        if not isinstance(a, cl.array.Array):
            raise InvalidArgument("%s is %s, not a pyopencl Array" % (name, type(a).__name__))
        if a.ndim != 4:
            raise InvalidArgument("%s has %d dimensions; it must be [batch, length, heads, "
                                  "head_dim]" % (name, a.ndim))
    code = _DTYPES.get(q.dtype.name)
    if code is None or q.dtype.itemsize != (2 if code in (1, 2) else 4 if code == 0 else 8):
        raise InvalidArgument("q has dtype %s; tabcl attention takes float32, float16, bfloat16 "
                              "or float64" % q.dtype)
    for name, a in (("k", k), ("v", v)):
        if a.dtype != q.dtype:
            raise InvalidArgument("%s has dtype %s; it must be q's, %s" % (name, a.dtype, q.dtype))
    B, Lq, Hq, D = q.shape
    Bk, Lk, Hkv, Dk = k.shape
    if v.shape != k.shape:
        raise InvalidArgument("v has shape %s; it must be k's, %s" % (v.shape, k.shape))
    if Bk != B or Dk != D:
        raise InvalidArgument("k has shape %s and q %s: batch and head_dim must agree" %
                              (k.shape, q.shape))
    qh = call.buffer(q, "q", None)[0]
    kh = call.buffer(k, "k", None, optional=Lk == 0)[0]
    vh = call.buffer(v, "v", None, optional=Lk == 0)[0]
    kind, mb, mh, mq, m = _MASK_NONE, 0, 0, 0, 0
    if mask is not None:
        if not isinstance(mask, cl.array.Array):
            raise InvalidArgument("mask is %s, not a pyopencl Array" % type(mask).__name__)
        kind, mb, mh, mq = _mask_form(mask, q.dtype, B, Hq, Lq, Lk, InvalidArgument)
        m = call.buffer(mask, "mask", None, optional=mask.size == 0)[0]
    if scale is None:
        scale = 0.0
    else:
        scale = float(scale)
        if scale == 0.0:
            raise InvalidArgument("scale is 0; pass None for 1/sqrt(head_dim)")
    if out is None:
        out = cl.array.empty(cl.CommandQueue.from_int_ptr(call.cl_queue, retain=True), q.shape,
                             q.dtype)
    elif isinstance(out, cl.array.Array) and (out.shape != q.shape or out.dtype != q.dtype):
        raise InvalidArgument("out is %s %s; it must be q's shape and dtype, %s %s" %
                              (out.shape, out.dtype, q.shape, q.dtype))
    oh = call.buffer(out, "out", None, need_bytes=q.nbytes or None, optional=q.size == 0)[0]
    wait = call.wait_list(wait_for)
    ev = call.event(_tabcl.sdpa_cl(ctx, (qh, kh, vh, m, oh), (B, Lq, Lk, Hq, Hkv, D), code, scale,
                                   int(bool(causal)), kind, mb, mh, wait, mq))
    if isinstance(out, cl.array.Array):
        out.add_event(ev)
    return out, ev
