/* tabcl._tabcl.Index and the categorical calls: fit, lookup, align, save,
 * load. Column lists are copied into tuples first, so the objects (and the
 * memory their views point into) stay alive while the GIL is released. */
#include "tpy.h"

static void index_dealloc(tpy_index *self) {
  tabcl_category_index_destroy(self->idx);
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *index_num_columns(tpy_index *self, void *unused) {
  (void)unused;
  return PyLong_FromLong(tabcl_category_index_columns(self->idx));
}

static PyObject *index_num_codes(tpy_index *self, PyObject *arg) {
  long c = PyLong_AsLong(arg);
  if (c == -1 && PyErr_Occurred()) return NULL;
  int n = tabcl_category_index_columns(self->idx);
  if (c < 0 || c >= n)
    return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "num_codes: column %ld is outside [0, %d)", c, n);
  return PyLong_FromLongLong((long long)tabcl_category_index_codes(self->idx, (int)c));
}

static PyObject *index_context(tpy_index *self, void *unused) {
  (void)unused;
  Py_INCREF(self->context);
  return self->context;
}

static PyObject *index_reduce(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  PyErr_SetString(PyExc_TypeError,
                  "a tabcl index handle cannot be pickled: send idx.to_bytes() and rebuild it "
                  "with tabcl.CategoryIndex.from_bytes(ctx, data)");
  return NULL;
}

static PyGetSetDef index_getset[] = {
    {"num_columns", (getter)index_num_columns, NULL, "tabcl_category_index_columns", NULL},
    {"context", (getter)index_context, NULL, "the Context it lives on", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef index_methods[] = {
    {"num_codes", (PyCFunction)index_num_codes, METH_O, "tabcl_category_index_codes"},
    {"__reduce__", index_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

PyTypeObject tpy_index_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tabcl._tabcl.Index",
    .tp_basicsize = sizeof(tpy_index),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A fitted tabcl_category_index.",
    .tp_dealloc = (destructor)index_dealloc,
    .tp_getset = index_getset,
    .tp_methods = index_methods,
};

PyObject *tpy_wrap_index(PyObject *context, tabcl_category_index *idx) {
  tpy_index *self = (tpy_index *)tpy_index_type.tp_alloc(&tpy_index_type, 0);
  if (!self) {
    tabcl_category_index_destroy(idx);
    return NULL;
  }
  self->idx = idx;
  Py_INCREF(context);
  self->context = context;
  return (PyObject *)self;
}

/* A tuple of the list's items, each of type t, with their count checked. */
static PyObject *column_tuple(PyObject *list, PyTypeObject *t, const char *what) {
  PyObject *tup = PySequence_Tuple(list);
  if (!tup) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(tup);
  if (n > INT32_MAX) {
    Py_DECREF(tup);
    return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "%zd columns is too many", n);
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (!PyObject_TypeCheck(PyTuple_GET_ITEM(tup, i), t)) {
      PyErr_Format(PyExc_TypeError, "column %zd is not a %s", i, what);
      Py_DECREF(tup);
      return NULL;
    }
  return tup;
}

/* fit(context, [Strings], order) -> Index */
static PyObject *fit(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *ctx, *list;
  int order;
  if (!PyArg_ParseTuple(args, "O!Oi:fit", &tpy_context_type, &ctx, &list, &order)) return NULL;
  PyObject *cols = column_tuple(list, &tpy_strings_type, "Strings");
  if (!cols) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(cols);
  tabcl_strings_view *views = PyMem_Calloc((size_t)(n ? n : 1), sizeof *views);
  if (!views) {
    Py_DECREF(cols);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; i++) views[i] = ((tpy_strings *)PyTuple_GET_ITEM(cols, i))->view;
  tabcl_category_index *idx = NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_category_index_fit(((tpy_context *)ctx)->ctx, (int)n, views,
                                (tabcl_code_order)order, &idx);
  TPY_END_NOGIL
  PyMem_Free(views);
  Py_DECREF(cols);
  if (st) return tpy_raise(st);
  return tpy_wrap_index(ctx, idx);
}

/* Writable C-contiguous int32 buffers, one per column, each of len rows. */
typedef struct outs {
  Py_ssize_t n;
  Py_buffer *b;
  int32_t **p;
} outs;

static void outs_release(outs *o) {
  for (Py_ssize_t i = 0; i < o->n; i++)
    if (o->b[i].obj) PyBuffer_Release(&o->b[i]);
  PyMem_Free(o->b);
  PyMem_Free(o->p);
}

static int outs_get(PyObject *list, Py_ssize_t n, const int64_t *rows, outs *o) {
  o->n = 0;
  o->b = PyMem_Calloc((size_t)(n ? n : 1), sizeof *o->b);
  o->p = PyMem_Calloc((size_t)(n ? n : 1), sizeof *o->p);
  PyObject *tup = PySequence_Tuple(list);
  if (!o->b || !o->p || !tup) {
    Py_XDECREF(tup);
    if (!PyErr_Occurred()) PyErr_NoMemory();
    return -1;
  }
  if (PyTuple_GET_SIZE(tup) != n) {
    PyErr_Format(PyExc_ValueError, "%zd output arrays for %zd columns", PyTuple_GET_SIZE(tup), n);
    Py_DECREF(tup);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++, o->n++) {
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(tup, i), &o->b[i],
                           PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
      Py_DECREF(tup);
      return -1;
    }
    if (o->b[i].len != (Py_ssize_t)(rows[i] * 4)) {
      PyErr_Format(PyExc_ValueError, "output %zd holds %zd bytes; column has %lld rows", i,
                   o->b[i].len, (long long)rows[i]);
      o->n++;
      Py_DECREF(tup);
      return -1;
    }
    o->p[i] = o->b[i].buf;
  }
  Py_DECREF(tup);
  return 0;
}

/* lookup and align differ only in the column type and the call: one
   encoder takes both, from a table row each. */
typedef struct encode_kind {
  const char *format; /* PyArg_ParseTuple's, with the call's name */
  PyTypeObject *type;
  const char *what;
  size_t view_size;
  /* copies the column object's view to dst; returns its row count */
  int64_t (*view_of)(PyObject *column, void *dst);
  tabcl_status (*call)(tabcl_category_index *idx, int ncols, const void *views, int32_t *const *out);
} encode_kind;

static int64_t strings_view_of(PyObject *column, void *dst) {
  tabcl_strings_view *v = dst;
  *v = ((tpy_strings *)column)->view;
  return v->length;
}

static int64_t dictionary_view_of(PyObject *column, void *dst) {
  tabcl_dictionary_view *v = dst;
  *v = ((tpy_dictionary *)column)->view;
  return v->length;
}

static tabcl_status call_lookup(tabcl_category_index *idx, int ncols, const void *views,
                                int32_t *const *out) {
  return tabcl_category_index_lookup(idx, ncols, views, out);
}

static tabcl_status call_align(tabcl_category_index *idx, int ncols, const void *views,
                               int32_t *const *out) {
  return tabcl_category_index_align(idx, ncols, views, out);
}

static PyObject *encode(PyObject *args, const encode_kind *k) {
  PyObject *index, *list, *outlist;
  if (!PyArg_ParseTuple(args, k->format, &tpy_index_type, &index, &list, &outlist)) return NULL;
  PyObject *cols = column_tuple(list, k->type, k->what);
  if (!cols) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(cols);
  unsigned char *views = PyMem_Calloc((size_t)(n ? n : 1), k->view_size);
  int64_t *rows = PyMem_Calloc((size_t)(n ? n : 1), sizeof *rows);
  outs o = {0, NULL, NULL};
  PyObject *ret = NULL;
  if (!views || !rows) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    rows[i] = k->view_of(PyTuple_GET_ITEM(cols, i), views + (size_t)i * k->view_size);
  if (outs_get(outlist, n, rows, &o) < 0) goto done;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = k->call(((tpy_index *)index)->idx, (int)n, views, o.p);
  TPY_END_NOGIL
  if (st) tpy_raise(st);
  else ret = Py_NewRef(Py_None);
done:
  outs_release(&o);
  PyMem_Free(views);
  PyMem_Free(rows);
  Py_DECREF(cols);
  return ret;
}

/* lookup(index, [Strings], [int32 outputs]) */
static PyObject *lookup(PyObject *self, PyObject *args) {
  (void)self;
  static const encode_kind k = {"O!OO:lookup", &tpy_strings_type, "Strings",
                                sizeof(tabcl_strings_view), strings_view_of, call_lookup};
  return encode(args, &k);
}

/* align(index, [Dictionary], [int32 outputs]) */
static PyObject *align(PyObject *self, PyObject *args) {
  (void)self;
  static const encode_kind k = {"O!OO:align", &tpy_dictionary_type, "Dictionary",
                                sizeof(tabcl_dictionary_view), dictionary_view_of, call_align};
  return encode(args, &k);
}

/* save(index, path: bytes) */
static PyObject *save(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *index;
  const char *path;
  if (!PyArg_ParseTuple(args, "O!y:save", &tpy_index_type, &index, &path)) return NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_category_index_save(((tpy_index *)index)->idx, path);
  TPY_END_NOGIL
  if (st) return tpy_raise(st);
  Py_RETURN_NONE;
}

/* load(context, path: bytes) -> Index */
static PyObject *load(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *ctx;
  const char *path;
  if (!PyArg_ParseTuple(args, "O!y:load", &tpy_context_type, &ctx, &path)) return NULL;
  tabcl_category_index *idx = NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_category_index_load(((tpy_context *)ctx)->ctx, path, &idx);
  TPY_END_NOGIL
  if (st) return tpy_raise(st);
  return tpy_wrap_index(ctx, idx);
}

PyMethodDef tpy_index_functions[] = {
    {"fit", fit, METH_VARARGS, "fit(context, [Strings], order) -> Index"},
    {"lookup", lookup, METH_VARARGS, "lookup(index, [Strings], [int32 outputs])"},
    {"align", align, METH_VARARGS, "align(index, [Dictionary], [int32 outputs])"},
    {"save", save, METH_VARARGS, "save(index, path)"},
    {"load", load, METH_VARARGS, "load(context, path) -> Index"},
    {NULL, NULL, 0, NULL}};
