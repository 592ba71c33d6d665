/* tabcl._tabcl.Strings and .Dictionary: string columns and dictionary-
 * encoded columns as tabcl views, built from a Python sequence of str /
 * bytes / None, from Arrow C Data Interface capsules, or (dictionaries)
 * from categories and an int32 codes buffer. */
#include <math.h>
#include <string.h>

#include "tpy.h"

/* Whether item is a null label: None, a float NaN, or one of extra (the
   Python layer passes pandas.NA and pandas.NaT when pandas is loaded). */
static int is_null(PyObject *item, PyObject *extra) {
  if (item == Py_None) return 1;
  if (PyFloat_Check(item) && isnan(PyFloat_AS_DOUBLE(item))) return 1;
  if (extra)
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(extra); i++)
      if (item == PyTuple_GET_ITEM(extra, i)) return 1;
  return 0;
}

/* The bytes of a present label, or -1 with TypeError / UnicodeEncodeError. */
static Py_ssize_t label_bytes(PyObject *item, Py_ssize_t i, const char **p) {
  Py_ssize_t n;
  if (PyUnicode_Check(item)) {
    *p = PyUnicode_AsUTF8AndSize(item, &n);
    return *p ? n : -1;
  }
  if (PyBytes_Check(item)) {
    *p = PyBytes_AS_STRING(item);
    return PyBytes_GET_SIZE(item);
  }
  PyErr_Format(PyExc_TypeError, "label %zd is %.100s, not str, bytes or None", i,
               Py_TYPE(item)->tp_name);
  return -1;
}

static tpy_strings *strings_alloc(void) {
  return (tpy_strings *)tpy_strings_type.tp_alloc(&tpy_strings_type, 0);
}

/* One pass over the items: with s NULL it counts the label bytes and the
   nulls; with s it copies them into s's buffers, sized by the counting
   pass (a sequence that changed in between is an error, not an overrun).
   Returns -1 with a Python error set. */
static int walk_labels(PyObject **items, Py_ssize_t n, PyObject *extra, tpy_strings *s,
                       int64_t *total, int64_t *nulls) {
  int64_t at = 0, null_count = 0;
  if (s) s->offsets[0] = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    if (is_null(items[i], extra)) {
      null_count++;
      if (s) s->offsets[i + 1] = at;
      continue;
    }
    const char *p;
    Py_ssize_t len = label_bytes(items[i], i, &p);
    if (len < 0) return -1;
    if (s) {
      if (at + len > *total) {
        PyErr_SetString(PyExc_RuntimeError, "the column changed while being read");
        return -1;
      }
      if (s->validity) s->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
      if (len) memcpy(s->data + at, p, (size_t)len);
      s->offsets[i + 1] = at + len;
    }
    at += len;
  }
  if (!s) {
    *total = at;
    *nulls = null_count;
  }
  return 0;
}

/* Strings.from_sequence(seq, nulls=()): two passes, sizes then copies, so
   the buffers are allocated once. */
static PyObject *strings_from_sequence(PyObject *cls, PyObject *args) {
  (void)cls;
  PyObject *seq, *extra = NULL;
  if (!PyArg_ParseTuple(args, "O|O!:from_sequence", &seq, &PyTuple_Type, &extra)) return NULL;
  PyObject *fast = PySequence_Fast(seq, "a string column must be a sequence");
  if (!fast) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject **items = PySequence_Fast_ITEMS(fast);
  int64_t total = 0, nulls = 0;
  if (walk_labels(items, n, extra, NULL, &total, &nulls) < 0) {
    Py_DECREF(fast);
    return NULL;
  }
  tpy_strings *self = strings_alloc();
  if (!self) {
    Py_DECREF(fast);
    return NULL;
  }
  self->offsets = PyMem_Malloc(((size_t)n + 1) * sizeof *self->offsets);
  self->data = total ? PyMem_Malloc((size_t)total) : NULL;
  self->validity = nulls ? PyMem_Calloc(((size_t)n + 7) / 8, 1) : NULL;
  if (!self->offsets || (total && !self->data) || (nulls && !self->validity)) {
    Py_DECREF(fast);
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  int rc = walk_labels(items, n, extra, self, &total, &nulls);
  Py_DECREF(fast);
  if (rc < 0) {
    Py_DECREF(self);
    return NULL;
  }
  self->view = (tabcl_strings_view){n, self->offsets, self->data, self->validity};
  return (PyObject *)self;
}

/* The two structs inside an (ArrowSchema, ArrowArray) capsule pair. */
static int arrow_pointers(PyObject *schema_cap, PyObject *array_cap, struct ArrowSchema **s,
                          struct ArrowArray **a) {
  *s = PyCapsule_GetPointer(schema_cap, "arrow_schema");
  if (!*s) return -1;
  *a = PyCapsule_GetPointer(array_cap, "arrow_array");
  return *a ? 0 : -1;
}

/* Keeps both capsules referenced from the new object (so the array, which
   its capsule's destructor releases, outlives the view) and returns it, or
   drops it on failure. */
static PyObject *keep_capsules(PyObject *self, PyObject **keep, PyObject *sc, PyObject *ac) {
  *keep = PyTuple_Pack(2, sc, ac);
  if (!*keep) {
    Py_DECREF(self);
    return NULL;
  }
  return self;
}

/* Allocates self's own offsets (n + 1), data (total bytes) and, when
   nulls, a zeroed bitmap. Returns -1 with MemoryError. */
static int strings_own(tpy_strings *self, int64_t n, int64_t total, int nulls) {
  self->offsets = PyMem_Malloc(((size_t)n + 1) * sizeof *self->offsets);
  self->data = total ? PyMem_Malloc((size_t)total) : NULL;
  self->validity = nulls ? PyMem_Calloc(((size_t)n + 7) / 8, 1) : NULL;
  if (!self->offsets || (total && !self->data) || (nulls && !self->validity)) {
    PyErr_NoMemory();
    return -1;
  }
  self->offsets[0] = 0;
  return 0;
}

/* An Arrow string or binary view array ("vu", "vz": polars' strings) in
   tabcl's layout, in memory self owns: 16-byte views of a length and either
   the label's bytes (12 or fewer) or a buffer index and offset into the
   variadic buffers, whose sizes the last buffer holds. Returns -1 with an
   exception set. */
static int strings_from_view(tpy_strings *self, const struct ArrowArray *a) {
  int64_t n = a->length, base = a->offset, nbuf = a->n_buffers - 3;
  if (n < 0 || base < 0 || nbuf < 0 || !a->buffers || (n && !a->buffers[1]) ||
      (nbuf && !a->buffers[a->n_buffers - 1])) {
    tpy_raise_msg(TABCL_INVALID_ARGUMENT, "Arrow view array: length %lld, offset %lld, %lld "
                  "buffers", (long long)n, (long long)base, (long long)a->n_buffers);
    return -1;
  }
  const uint8_t *valid = a->null_count != 0 ? a->buffers[0] : NULL;
  const uint8_t *views = a->buffers[1];
  const int64_t *sizes = nbuf ? a->buffers[a->n_buffers - 1] : NULL;
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t j = base + i;
    if (valid && !((valid[j >> 3] >> (j & 7)) & 1)) continue;
    int32_t len, bi, off;
    memcpy(&len, views + 16 * j, 4);
    if (len > 12) {
      memcpy(&bi, views + 16 * j + 8, 4);
      memcpy(&off, views + 16 * j + 12, 4);
      if (bi < 0 || bi >= nbuf || off < 0 || (int64_t)off + len > sizes[bi]) {
        tpy_raise_msg(TABCL_INVALID_ARGUMENT, "Arrow view array: label %lld points at buffer "
                      "%d, bytes %d..%lld, outside the %lld buffers' sizes", (long long)i, bi,
                      off, (long long)off + len, (long long)nbuf);
        return -1;
      }
    } else if (len < 0) {
      tpy_raise_msg(TABCL_INVALID_ARGUMENT, "Arrow view array: label %lld has length %d",
                    (long long)i, len);
      return -1;
    }
    total += len;
  }
  if (strings_own(self, n, total, valid != NULL) < 0) return -1;
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t j = base + i;
    if (!valid || ((valid[j >> 3] >> (j & 7)) & 1)) {
      int32_t len, bi, off;
      memcpy(&len, views + 16 * j, 4);
      const uint8_t *p = views + 16 * j + 4;
      if (len > 12) {
        memcpy(&bi, views + 16 * j + 8, 4);
        memcpy(&off, views + 16 * j + 12, 4);
        p = (const uint8_t *)a->buffers[2 + bi] + off;
      }
      if (len) memcpy(self->data + at, p, (size_t)len);
      at += len;
      if (valid) self->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
    self->offsets[i + 1] = at;
  }
  self->view = (tabcl_strings_view){n, self->offsets, self->data, self->validity};
  return 0;
}

/* Strings.from_arrow(schema_capsule, array_capsule): the capsules stay
   referenced, so the array (released by its capsule's destructor) outlives
   the view. */
static PyObject *strings_from_arrow(PyObject *cls, PyObject *args) {
  (void)cls;
  PyObject *sc, *ac;
  if (!PyArg_ParseTuple(args, "OO:from_arrow", &sc, &ac)) return NULL;
  struct ArrowSchema *s;
  struct ArrowArray *a;
  if (arrow_pointers(sc, ac, &s, &a) < 0) return NULL;
  tpy_strings *self = strings_alloc();
  if (!self) return NULL;
  if (s->format && (!strcmp(s->format, "vu") || !strcmp(s->format, "vz")) && !s->dictionary) {
    if (strings_from_view(self, a) < 0) {
      Py_DECREF(self);
      return NULL;
    }
    return (PyObject *)self;
  }
  tabcl_status st = tabcl_arrow_strings_import(s, a, &self->arrow);
  if (st) {
    Py_DECREF(self);
    return tpy_raise(st);
  }
  self->view = self->arrow.view;
  return keep_capsules((PyObject *)self, &self->keep, sc, ac);
}

/* The last character of a buffer's struct format ('q' of "<q"), or 'B'. */
static char format_code(const Py_buffer *b) {
  const char *f = b->format && *b->format ? b->format : "B";
  return f[strlen(f) - 1];
}

/* Strings.from_buffers(offsets, data, validity_or_None): a column in Arrow
   layout from three C-contiguous buffers (int64 offsets of length + 1, the
   label bytes, a bitmap), read in place; tabcl checks the offsets' order,
   this their bounds against the data's size. */
static PyObject *strings_from_buffers(PyObject *cls, PyObject *args) {
  (void)cls;
  PyObject *objs[3];
  if (!PyArg_ParseTuple(args, "OOO:from_buffers", &objs[0], &objs[1], &objs[2])) return NULL;
  tpy_strings *self = strings_alloc();
  if (!self) return NULL;
  static const char *names[3] = {"offsets", "data", "validity"};
  for (int i = 0; i < 3; i++) {
    if (objs[i] == Py_None && i == 2) break;
    if (PyObject_GetBuffer(objs[i], &self->bufs[i], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
      Py_DECREF(self);
      return NULL;
    }
    Py_buffer *b = &self->bufs[i];
    int ok = i == 0 ? b->itemsize == 8 && strchr("qlL", format_code(b)) != NULL
                    : b->itemsize == 1 && strchr("Bbc?", format_code(b)) != NULL;
    if (!ok) {
      Py_DECREF(self);
      return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "from_buffers: %s must be %s, not format "
                           "'%s' of %zd-byte items", names[i], i ? "bytes" : "int64",
                           b->format ? b->format : "B", b->itemsize);
    }
  }
  Py_ssize_t n = self->bufs[0].len / 8 - 1;
  const int64_t *off = self->bufs[0].buf;
  if (n < 0 || off[n] > (int64_t)self->bufs[1].len || off[0] < 0 ||
      (self->bufs[2].obj && self->bufs[2].len < (n + 7) / 8)) {
    Py_DECREF(self);
    return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "from_buffers: %zd offsets, last %lld, for %zd "
                         "data bytes and %zd validity bytes", self->bufs[0].len / 8,
                         n >= 0 ? (long long)off[n] : -1LL, self->bufs[1].len, self->bufs[2].len);
  }
  self->view = (tabcl_strings_view){n, off, self->bufs[1].len ? self->bufs[1].buf : NULL,
                                    self->bufs[2].obj ? self->bufs[2].buf : NULL};
  return (PyObject *)self;
}

static void strings_dealloc(tpy_strings *self) {
  for (int i = 0; i < 3; i++)
    if (self->bufs[i].obj) PyBuffer_Release(&self->bufs[i]);
  tabcl_arrow_strings_free(&self->arrow);
  PyMem_Free(self->offsets);
  PyMem_Free(self->data);
  PyMem_Free(self->validity);
  Py_XDECREF(self->keep);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t strings_len(tpy_strings *self) { return (Py_ssize_t)self->view.length; }

/* Label i as bytes, or None: for tests and error messages. */
static PyObject *strings_label(tpy_strings *self, PyObject *arg) {
  Py_ssize_t i = PyLong_AsSsize_t(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (i < 0 || i >= (Py_ssize_t)self->view.length) {
    PyErr_SetString(PyExc_IndexError, "label index out of range");
    return NULL;
  }
  const tabcl_strings_view *v = &self->view;
  if (v->validity && !((v->validity[i >> 3] >> (i & 7)) & 1)) Py_RETURN_NONE;
  int64_t a = v->offsets[i], b = v->offsets[i + 1];
  return PyBytes_FromStringAndSize(b > a ? (const char *)v->data + a : "", (Py_ssize_t)(b - a));
}

/* Strings.concat([Strings]): one column of the labels of several (the
   chunks of a vocabulary, which a fit takes whole), in memory it owns. */
static PyObject *strings_concat(PyObject *cls, PyObject *arg) {
  (void)cls;
  PyObject *fast = PySequence_Fast(arg, "concat takes a sequence of Strings");
  if (!fast) return NULL;
  Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
  PyObject **items = PySequence_Fast_ITEMS(fast);
  int64_t n = 0, total = 0;
  int nulls = 0;
  for (Py_ssize_t c = 0; c < k; c++) {
    if (!PyObject_TypeCheck(items[c], &tpy_strings_type)) {
      Py_DECREF(fast);
      PyErr_Format(PyExc_TypeError, "concat: item %zd is not a Strings", c);
      return NULL;
    }
    const tabcl_strings_view *v = &((tpy_strings *)items[c])->view;
    n += v->length;
    total += v->length ? v->offsets[v->length] - v->offsets[0] : 0;
    nulls |= v->validity != NULL;
  }
  tpy_strings *self = strings_alloc();
  if (!self || strings_own(self, n, total, nulls) < 0) {
    Py_XDECREF(self);
    Py_DECREF(fast);
    return NULL;
  }
  int64_t row = 0, at = 0;
  for (Py_ssize_t c = 0; c < k; c++) {
    const tabcl_strings_view *v = &((tpy_strings *)items[c])->view;
    int64_t first = v->length ? v->offsets[0] : 0;
    int64_t bytes = v->length ? v->offsets[v->length] - first : 0;
    if (bytes) memcpy(self->data + at, v->data + first, (size_t)bytes);
    for (int64_t i = 0; i < v->length; i++, row++) {
      self->offsets[row + 1] = at + v->offsets[i + 1] - first;
      if (nulls && (!v->validity || ((v->validity[i >> 3] >> (i & 7)) & 1)))
        self->validity[row >> 3] |= (uint8_t)(1u << (row & 7));
    }
    at += bytes;
  }
  Py_DECREF(fast);
  self->view = (tabcl_strings_view){n, self->offsets, self->data, self->validity};
  return (PyObject *)self;
}

/* (address of the first offset, of the data or 0): tests check by these
   that a column is read in place. */
static PyObject *strings_addresses(tpy_strings *self, PyObject *unused) {
  (void)unused;
  return Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)self->view.offsets,
                       (unsigned long long)(uintptr_t)self->view.data);
}

static PyMethodDef strings_methods[] = {
    {"concat", strings_concat, METH_O | METH_CLASS,
     "concat([Strings]): the labels of several columns as one, copied"},
    {"addresses", (PyCFunction)strings_addresses, METH_NOARGS,
     "(offsets address, data address or 0)"},
    {"from_sequence", strings_from_sequence, METH_VARARGS | METH_CLASS,
     "from_sequence(seq, nulls=()): labels from str (UTF-8), bytes; None, NaN and the\n"
     "objects in nulls are null"},
    {"from_arrow", strings_from_arrow, METH_VARARGS | METH_CLASS,
     "from_arrow(schema_capsule, array_capsule): an Arrow string or binary array"},
    {"from_buffers", strings_from_buffers, METH_VARARGS | METH_CLASS,
     "from_buffers(offsets, data, validity): int64 offsets, bytes and a bitmap or None,\n"
     "read in place"},
    {"label", (PyCFunction)strings_label, METH_O, "label(i): bytes or None"},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods strings_as_sequence = {.sq_length = (lenfunc)strings_len};

PyTypeObject tpy_strings_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tabcl._tabcl.Strings",
    .tp_basicsize = sizeof(tpy_strings),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A string column as tabcl sees it (Arrow layout).",
    .tp_dealloc = (destructor)strings_dealloc,
    .tp_methods = strings_methods,
    .tp_as_sequence = &strings_as_sequence,
};

/* ---- dictionaries ---------------------------------------------------- */

static tpy_dictionary *dictionary_alloc(void) {
  return (tpy_dictionary *)tpy_dictionary_type.tp_alloc(&tpy_dictionary_type, 0);
}

/* Dictionary.from_arrow(schema_capsule, array_capsule) */
static PyObject *dictionary_from_arrow(PyObject *cls, PyObject *args) {
  (void)cls;
  PyObject *sc, *ac;
  if (!PyArg_ParseTuple(args, "OO:from_arrow", &sc, &ac)) return NULL;
  struct ArrowSchema *s;
  struct ArrowArray *a;
  if (arrow_pointers(sc, ac, &s, &a) < 0) return NULL;
  tpy_dictionary *self = dictionary_alloc();
  if (!self) return NULL;
  const struct ArrowSchema *ds = s->dictionary;
  if (ds && a->dictionary && ds->format &&
      (!strcmp(ds->format, "vu") || !strcmp(ds->format, "vz"))) {
    /* View values (polars' categories): converted to large strings, which
       the import then reads through a copy of the two structs that points
       at them; the converted values stay with this object. */
    tpy_strings *vals = strings_alloc();
    if (!vals || strings_from_view(vals, a->dictionary) < 0) {
      Py_XDECREF(vals);
      Py_DECREF(self);
      return NULL;
    }
    static const uint8_t no_bytes[1];
    const void *bufs[3] = {vals->view.validity, vals->view.offsets,
                           vals->view.data ? (const void *)vals->view.data : no_bytes};
    struct ArrowSchema vs = *ds, s2 = *s;
    struct ArrowArray va = {vals->view.length, vals->view.validity ? -1 : 0, 0, 3, 0, bufs,
                            NULL, NULL, a->dictionary->release, NULL};
    struct ArrowArray a2 = *a;
    vs.format = ds->format[1] == 'u' ? "U" : "Z";
    s2.dictionary = &vs;
    a2.dictionary = &va;
    tabcl_status st = tabcl_arrow_dictionary_import(&s2, &a2, &self->arrow);
    if (st) {
      Py_DECREF(vals);
      Py_DECREF(self);
      return tpy_raise(st);
    }
    self->view = self->arrow.view;
    self->keep = Py_BuildValue("(OON)", sc, ac, (PyObject *)vals);
    if (!self->keep) Py_CLEAR(self);
    return (PyObject *)self;
  }
  tabcl_status st = tabcl_arrow_dictionary_import(s, a, &self->arrow);
  if (st) {
    Py_DECREF(self);
    return tpy_raise(st);
  }
  self->view = self->arrow.view;
  return keep_capsules((PyObject *)self, &self->keep, sc, ac);
}

/* Dictionary.from_parts(categories: Strings, codes: a C-contiguous int32
   buffer); the codes are checked against the categories by align. */
static PyObject *dictionary_from_parts(PyObject *cls, PyObject *args) {
  (void)cls;
  PyObject *cats, *codes;
  if (!PyArg_ParseTuple(args, "O!O:from_parts", &tpy_strings_type, &cats, &codes)) return NULL;
  tpy_dictionary *self = dictionary_alloc();
  if (!self) return NULL;
  if (PyObject_GetBuffer(codes, &self->codes, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
    Py_DECREF(self);
    return NULL;
  }
  self->has_codes = 1;
  const char *f = self->codes.format ? self->codes.format : "B";
  size_t fl = strlen(f);
  if (self->codes.itemsize != 4 || !fl || (f[fl - 1] != 'i' && f[fl - 1] != 'l')) {
    PyErr_Format(PyExc_TypeError, "codes must be an int32 buffer, not format '%s' of %zd bytes",
                 f, self->codes.itemsize);
    Py_DECREF(self);
    return NULL;
  }
  Py_INCREF(cats);
  self->keep = cats;
  self->view.categories = ((tpy_strings *)cats)->view;
  self->view.length = (int64_t)(self->codes.len / 4);
  self->view.codes = self->codes.buf;
  return (PyObject *)self;
}

static void dictionary_dealloc(tpy_dictionary *self) {
  tabcl_arrow_dictionary_free(&self->arrow);
  if (self->has_codes) PyBuffer_Release(&self->codes);
  Py_XDECREF(self->keep);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t dictionary_len(tpy_dictionary *self) { return (Py_ssize_t)self->view.length; }

/* (number of categories, [codes]) for tests. */
static PyObject *dictionary_codes(tpy_dictionary *self, PyObject *unused) {
  (void)unused;
  PyObject *list = PyList_New((Py_ssize_t)self->view.length);
  for (int64_t i = 0; list && i < self->view.length; i++) {
    PyObject *v = PyLong_FromLong(self->view.codes[i]);
    if (!v) Py_CLEAR(list);
    else PyList_SET_ITEM(list, (Py_ssize_t)i, v);
  }
  return list;
}

static PyMethodDef dictionary_methods[] = {
    {"from_arrow", dictionary_from_arrow, METH_VARARGS | METH_CLASS,
     "from_arrow(schema_capsule, array_capsule): an Arrow dictionary array"},
    {"from_parts", dictionary_from_parts, METH_VARARGS | METH_CLASS,
     "from_parts(categories, codes): a Strings and an int32 buffer, -1 = missing"},
    {"codes", (PyCFunction)dictionary_codes, METH_NOARGS, "the codes as a list"},
    {NULL, NULL, 0, NULL}};

static PySequenceMethods dictionary_as_sequence = {.sq_length = (lenfunc)dictionary_len};

PyTypeObject tpy_dictionary_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tabcl._tabcl.Dictionary",
    .tp_basicsize = sizeof(tpy_dictionary),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A dictionary-encoded column: categories and int32 codes into them.",
    .tp_dealloc = (destructor)dictionary_dealloc,
    .tp_methods = dictionary_methods,
    .tp_as_sequence = &dictionary_as_sequence,
};
