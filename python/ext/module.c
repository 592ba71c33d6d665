/* tabcl._tabcl: the module, its error classes, the library version and the
 * device list. */
#include <stdarg.h>

#include "tpy.h"

/* tabcl.Error and its subclasses, by status (set by tabcl/_errors.py through
   _register_errors at import). */
static PyObject *error_classes[TABCL_CORRUPT_DATA + 1];

PyObject *tpy_raise_msg(tabcl_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  if (!msg) return NULL;
  PyObject *cls = (int)st > 0 && (int)st <= TABCL_CORRUPT_DATA && error_classes[st]
                      ? error_classes[st]
                      : PyExc_RuntimeError;
  PyErr_SetObject(cls, msg);
  Py_DECREF(msg);
  return NULL;
}

PyObject *tpy_raise(tabcl_status st) {
  const char *detail = tabcl_last_error();
  return tpy_raise_msg(st, "%s", detail && *detail ? detail : tabcl_status_name(st));
}

static PyObject *register_errors(PyObject *self, PyObject *seq) {
  (void)self;
  if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != TABCL_CORRUPT_DATA + 1) {
    PyErr_SetString(PyExc_TypeError, "_register_errors takes a tuple of one class per status");
    return NULL;
  }
  for (int i = 1; i <= TABCL_CORRUPT_DATA; i++) {
    PyObject *c = PyTuple_GET_ITEM(seq, i);
    Py_INCREF(c);
    Py_XSETREF(error_classes[i], c);
  }
  Py_RETURN_NONE;
}

static PyObject *status_name(PyObject *self, PyObject *arg) {
  (void)self;
  long s = PyLong_AsLong(arg);
  if (s == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(tabcl_status_name((tabcl_status)s));
}

static PyObject *version(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(tabcl_version_string());
}

static const char *type_name(int t) {
  switch (t) {
    case TABCL_DEVICE_TYPE_GPU: return "gpu";
    case TABCL_DEVICE_TYPE_CPU: return "cpu";
    case TABCL_DEVICE_TYPE_ACCELERATOR: return "accelerator";
    default: return "other";
  }
}

/* [(selector, name, platform, type)], [] when there is no OpenCL device. */
static PyObject *devices(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  int count = 0;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_devices(NULL, 0, &count);
  TPY_END_NOGIL
  if (st == TABCL_NO_DEVICE) return PyList_New(0);
  if (st) return tpy_raise(st);
  tabcl_device_entry *e = PyMem_Calloc((size_t)(count ? count : 1), sizeof *e);
  if (!e) return PyErr_NoMemory();
  int got = 0;
  TPY_BEGIN_NOGIL
  st = tabcl_devices(e, count, &got);
  TPY_END_NOGIL
  if (st == TABCL_NO_DEVICE) got = 0;
  else if (st) {
    PyMem_Free(e);
    return tpy_raise(st);
  }
  if (got > count) got = count;   /* a device appeared between the calls */
  PyObject *list = PyList_New(got);
  for (int i = 0; list && i < got; i++) {
    PyObject *t = Py_BuildValue("(ssss)", e[i].selector, e[i].name, e[i].platform,
                                type_name(e[i].type));
    if (!t) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, t);
  }
  PyMem_Free(e);
  return list;
}

/* Whether an "arrow_schema" capsule describes a dictionary-encoded array. */
static PyObject *arrow_is_dictionary(PyObject *self, PyObject *cap) {
  (void)self;
  struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
  if (!s) return NULL;
  if (!s->release) return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "the Arrow schema is released");
  return PyBool_FromLong(tabcl_arrow_is_dictionary(s));
}

unsigned long tpy_nogil_calls;

static PyObject *nogil_calls(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyLong_FromUnsignedLong(__atomic_load_n(&tpy_nogil_calls, __ATOMIC_RELAXED));
}

static PyMethodDef module_functions[] = {
    {"_nogil_calls", nogil_calls, METH_NOARGS,
     "tabcl calls made so far with the GIL released (for the tests)"},
    {"arrow_is_dictionary", arrow_is_dictionary, METH_O,
     "arrow_is_dictionary(schema_capsule): tabcl_arrow_is_dictionary"},
    {"_register_errors", register_errors, METH_O, "Sets the exception class of each status."},
    {"status_name", status_name, METH_O, "tabcl_status_name"},
    {"version", version, METH_NOARGS, "tabcl_version_string()"},
    {"devices", devices, METH_NOARGS, "[(selector, name, platform, type)] of tabcl_devices"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "tabcl._tabcl",
                                        "The C extension under the tabcl package.", -1,
                                        module_functions, NULL, NULL, NULL, NULL};

static int add_functions(PyObject *m, PyMethodDef *defs) {
  PyObject *name = PyModule_GetNameObject(m);
  if (!name) return -1;
  for (PyMethodDef *d = defs; d->ml_name; d++) {
    PyObject *f = PyCFunction_NewEx(d, NULL, name);
    if (!f || PyModule_AddObject(m, d->ml_name, f) < 0) {
      Py_XDECREF(f);
      Py_DECREF(name);
      return -1;
    }
  }
  Py_DECREF(name);
  return 0;
}

PyMODINIT_FUNC PyInit__tabcl(void) {
  PyTypeObject *types[] = {&tpy_context_type, &tpy_strings_type, &tpy_dictionary_type,
                           &tpy_index_type};
  const char *names[] = {"Context", "Strings", "Dictionary", "Index"};
  for (int i = 0; i < 4; i++)
    if (PyType_Ready(types[i]) < 0) return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  for (int i = 0; i < 4; i++) {
    Py_INCREF(types[i]);
    if (PyModule_AddObject(m, names[i], (PyObject *)types[i]) < 0) {
      Py_DECREF(types[i]);
      Py_DECREF(m);
      return NULL;
    }
  }
  if (add_functions(m, tpy_index_functions) < 0 || add_functions(m, tpy_attention_functions) < 0 ||
      add_functions(m, tpy_stream_functions) < 0 || add_functions(m, tpy_device_functions) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
