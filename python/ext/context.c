/* tabcl._tabcl.Context: one tabcl_context. */
#include "tpy.h"

#include "tabcl/tabcl_cl.h"

/* None, or a str / bytes / os.PathLike path as bytes (PyUnicode_FSConverter). */
static int optional_path(PyObject *obj, void *out) {
  if (obj == Py_None) {
    *(PyObject **)out = NULL;
    return 1;
  }
  return PyUnicode_FSConverter(obj, out);
}

static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *names[] = {"device", "cache_dir", NULL};
  const char *device = NULL;
  PyObject *cache_dir = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zO&:Context", names, &device, optional_path,
                                   &cache_dir))
    return NULL;
  tabcl_options o = {0};
  o.device = device;
  o.cache_dir = cache_dir ? PyBytes_AS_STRING(cache_dir) : NULL;
  tabcl_context *ctx = NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_context_create(&o, &ctx);
  TPY_END_NOGIL
  Py_XDECREF(cache_dir);
  if (st) return tpy_raise(st);
  tpy_context *self = (tpy_context *)type->tp_alloc(type, 0);
  if (!self) {
    tabcl_context_destroy(ctx);
    return NULL;
  }
  self->ctx = ctx;
  return (PyObject *)self;
}

static void context_dealloc(tpy_context *self) {
  tabcl_context_destroy(self->ctx);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *context_device_name(tpy_context *self, void *unused) {
  (void)unused;
  return PyUnicode_DecodeUTF8(tabcl_context_device_name(self->ctx),
                              (Py_ssize_t)strlen(tabcl_context_device_name(self->ctx)), "replace");
}

static PyObject *context_platform_name(tpy_context *self, void *unused) {
  (void)unused;
  const char *p = tabcl_context_platform_name(self->ctx);
  return PyUnicode_DecodeUTF8(p, (Py_ssize_t)strlen(p), "replace");
}

/* programs_built, programs_from_cache, kernel_launches */
static PyObject *context_stats(tpy_context *self, PyObject *unused) {
  (void)unused;
  tabcl_stats s;
  tabcl_context_stats(self->ctx, &s);
  return Py_BuildValue("(KKK)", (unsigned long long)s.programs_built,
                       (unsigned long long)s.programs_from_cache,
                       (unsigned long long)s.kernel_launches);
}

/* The int_ptr of a pyopencl object (its raw OpenCL handle), or 0 with
   tabcl.InvalidArgument naming the argument. */
static unsigned long long cl_handle(PyObject *obj, const char *name) {
  PyObject *p = PyObject_GetAttrString(obj, "int_ptr");
  if (!p) {
    PyErr_Clear();
    tpy_raise_msg(TABCL_INVALID_ARGUMENT, "%s is %.100s, not a pyopencl object (no int_ptr)",
                  name, Py_TYPE(obj)->tp_name);
    return 0;
  }
  unsigned long long h = PyLong_AsUnsignedLongLong(p);
  Py_DECREF(p);
  if (PyErr_Occurred()) return 0;
  if (!h) tpy_raise_msg(TABCL_INVALID_ARGUMENT, "%s: its int_ptr is 0 (released?)", name);
  return h;
}

/* Context.from_pyopencl(cl_context, cl_queue, cache_dir=None):
   tabcl_context_create_cl on the application's context, its queue's device
   and the queue, each retained by tabcl. */
static PyObject *context_from_pyopencl(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *names[] = {"cl_context", "cl_queue", "cache_dir", NULL};
  PyObject *co, *qo, *cache_dir = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O&:from_pyopencl", names, &co, &qo,
                                   optional_path, &cache_dir))
    return NULL;
  unsigned long long c = 0, q = 0, d = 0;
  PyObject *dev = NULL;
  if ((c = cl_handle(co, "cl_context")) && (q = cl_handle(qo, "cl_queue"))) {
    dev = PyObject_GetAttrString(qo, "device");
    if (!dev) PyErr_Clear();
    d = dev ? cl_handle(dev, "cl_queue.device") : 0;
    if (!dev) tpy_raise_msg(TABCL_INVALID_ARGUMENT, "cl_queue has no device attribute");
  }
  Py_XDECREF(dev);
  if (!d) {
    Py_XDECREF(cache_dir);
    return NULL;
  }
  tabcl_options o = {0};
  o.cache_dir = cache_dir ? PyBytes_AS_STRING(cache_dir) : NULL;
  tabcl_context *ctx = NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_context_create_cl((cl_context)(uintptr_t)c, (cl_device_id)(uintptr_t)d,
                               (cl_command_queue)(uintptr_t)q, &o, &ctx);
  TPY_END_NOGIL
  Py_XDECREF(cache_dir);
  if (st) return tpy_raise(st);
  tpy_context *self = (tpy_context *)((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
  if (!self) {
    tabcl_context_destroy(ctx);
    return NULL;
  }
  self->ctx = ctx;
  return (PyObject *)self;
}

/* A context is a device handle of this process: it cannot travel. */
static PyObject *context_reduce(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  PyErr_SetString(PyExc_TypeError,
                  "a tabcl.Context cannot be pickled: make one in each process (tabcl.dask does)");
  return NULL;
}

static PyGetSetDef context_getset[] = {
    {"device_name", (getter)context_device_name, NULL, "the device's name", NULL},
    {"platform_name", (getter)context_platform_name, NULL, "its platform's name", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef context_methods[] = {
    {"from_pyopencl", (PyCFunction)(void (*)(void))context_from_pyopencl,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_pyopencl(cl_context, cl_queue, cache_dir=None): a context on an application's\n"
     "pyopencl Context and CommandQueue (tabcl_context_create_cl; the queue's device)"},
    {"stats", (PyCFunction)context_stats, METH_NOARGS,
     "(programs_built, programs_from_cache, kernel_launches)"},
    {"__reduce__", context_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

PyTypeObject tpy_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tabcl.Context",
    .tp_basicsize = sizeof(tpy_context),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Context(device=None, cache_dir=None): a tabcl context on one OpenCL device.\n"
              "device: a selector (\"P:D\" or part of a device or platform name); None means\n"
              "$TABCL_DEVICE, else the first GPU, else the first device. cache_dir: the\n"
              "kernel cache folder; None means $TABCL_CACHE_DIR or the default, \"\" none.",
    .tp_new = context_new,
    .tp_dealloc = (destructor)context_dealloc,
    .tp_getset = context_getset,
    .tp_methods = context_methods,
};
