/* tabcl._tabcl.read_stream and .struct_fields: the Arrow C stream
 * interface (__arrow_c_stream__), read chunk by chunk into capsules of the
 * C data interface, so each chunk becomes a Strings or Dictionary of its
 * own and no chunks are ever joined. */
#include <stdlib.h>
#include <string.h>

#include "tpy.h"

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
/* https://arrow.apache.org/docs/format/CStreamInterface.html */
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
  int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
  const char *(*get_last_error)(struct ArrowArrayStream *);
  void (*release)(struct ArrowArrayStream *);
  void *private_data;
};
#endif

/* Capsules that own a schema or an array moved out of a stream: released
   and freed with the capsule. */
static void schema_capsule_free(PyObject *cap) {
  struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
  if (!s) {
    PyErr_Clear();
    return;
  }
  if (s->release) s->release(s);
  free(s);
}

static void array_capsule_free(PyObject *cap) {
  struct ArrowArray *a = PyCapsule_GetPointer(cap, "arrow_array");
  if (!a) {
    PyErr_Clear();
    return;
  }
  if (a->release) a->release(a);
  free(a);
}

/* A capsule on a child of a struct owned by another capsule: it keeps that
   one alive (its context) and releases nothing itself, as the parent's
   release frees its children. */
static void child_capsule_free(PyObject *cap) {
  Py_XDECREF((PyObject *)PyCapsule_GetContext(cap));
  PyErr_Clear();
}

static PyObject *child_capsule(void *child, const char *name, PyObject *parent) {
  PyObject *cap = PyCapsule_New(child, name, child_capsule_free);
  if (!cap) return NULL;
  Py_INCREF(parent);
  if (PyCapsule_SetContext(cap, parent) < 0) {
    Py_DECREF(parent);
    Py_DECREF(cap);
    return NULL;
  }
  return cap;
}

static PyObject *stream_error(struct ArrowArrayStream *st, const char *what, int rc) {
  const char *msg = st->get_last_error ? st->get_last_error(st) : NULL;
  return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "Arrow stream: %s failed (error %d)%s%s", what, rc,
                       msg ? ": " : "", msg ? msg : "");
}

/* read_stream(stream_capsule) -> (schema capsule, format, [array capsule a
   chunk]). The stream is moved out of its capsule (the consumer owns it, as
   the PyCapsule protocol says) and released once read to its end. */
static PyObject *read_stream(PyObject *self, PyObject *cap) {
  (void)self;
  struct ArrowArrayStream *src = PyCapsule_GetPointer(cap, "arrow_array_stream");
  if (!src) return NULL;
  if (!src->release) return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "the Arrow stream is released");
  struct ArrowArrayStream st = *src;
  src->release = NULL;
  PyObject *schema_cap = NULL, *list = NULL, *ret = NULL;
  struct ArrowSchema *schema = calloc(1, sizeof *schema);
  if (!schema) {
    PyErr_NoMemory();
    goto done;
  }
  int rc;
  TPY_BEGIN_NOGIL
  rc = st.get_schema(&st, schema);
  TPY_END_NOGIL
  if (rc) {
    free(schema);
    stream_error(&st, "get_schema", rc);
    goto done;
  }
  schema_cap = PyCapsule_New(schema, "arrow_schema", schema_capsule_free);
  if (!schema_cap) {
    if (schema->release) schema->release(schema);
    free(schema);
    goto done;
  }
  list = PyList_New(0);
  while (list) {
    struct ArrowArray *a = calloc(1, sizeof *a);
    if (!a) {
      PyErr_NoMemory();
      goto done;
    }
    TPY_BEGIN_NOGIL
    rc = st.get_next(&st, a);
    TPY_END_NOGIL
    if (rc || !a->release) {
      free(a);
      if (rc) {
        stream_error(&st, "get_next", rc);
        goto done;
      }
      break;   /* the end of the stream */
    }
    PyObject *ac = PyCapsule_New(a, "arrow_array", array_capsule_free);
    if (!ac) {
      a->release(a);
      free(a);
      goto done;
    }
    int bad = PyList_Append(list, ac);
    Py_DECREF(ac);
    if (bad) goto done;
  }
  if (list) ret = Py_BuildValue("(OsO)", schema_cap, schema->format ? schema->format : "", list);
done:
  if (st.release) st.release(&st);
  Py_XDECREF(schema_cap);
  Py_XDECREF(list);
  return ret;
}

/* struct_fields(schema capsule, [array capsules]) of a struct ("+s": a
   table's record batches) -> [(name, format, child schema capsule,
   [child array capsules])], one per field, the chunks in order. */
static PyObject *struct_fields(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *sc, *arrays;
  if (!PyArg_ParseTuple(args, "OO!:struct_fields", &sc, &PyList_Type, &arrays)) return NULL;
  struct ArrowSchema *s = PyCapsule_GetPointer(sc, "arrow_schema");
  if (!s) return NULL;
  if (!s->format || strcmp(s->format, "+s") != 0)
    return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "struct_fields: format '%s' is not a struct",
                         s->format ? s->format : "");
  Py_ssize_t nchunks = PyList_GET_SIZE(arrays);
  for (Py_ssize_t j = 0; j < nchunks; j++) {
    struct ArrowArray *a = PyCapsule_GetPointer(PyList_GET_ITEM(arrays, j), "arrow_array");
    if (!a) return NULL;
    /* A struct's offset would shift every child: producers export record
       batches without one, and reading it is not worth its code. */
    if (a->n_children != s->n_children || a->offset != 0)
      return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "Arrow stream: chunk %zd has %lld children "
                           "and offset %lld for a schema of %lld fields (offset 0 is read)", j,
                           (long long)a->n_children, (long long)a->offset,
                           (long long)s->n_children);
  }
  PyObject *fields = PyList_New(s->n_children);
  for (int64_t i = 0; fields && i < s->n_children; i++) {
    struct ArrowSchema *cs = s->children[i];
    PyObject *csc = child_capsule(cs, "arrow_schema", sc);
    PyObject *chunks = PyList_New(nchunks);
    for (Py_ssize_t j = 0; csc && chunks && j < nchunks; j++) {
      PyObject *pc = PyList_GET_ITEM(arrays, j);
      struct ArrowArray *a = PyCapsule_GetPointer(pc, "arrow_array");
      PyObject *cc = a ? child_capsule(a->children[i], "arrow_array", pc) : NULL;
      if (!cc) Py_CLEAR(chunks);
      else PyList_SET_ITEM(chunks, j, cc);
    }
    PyObject *t = csc && chunks ? Py_BuildValue("(ssOO)", cs->name ? cs->name : "",
                                                cs->format ? cs->format : "", csc, chunks)
                                : NULL;
    Py_XDECREF(csc);
    Py_XDECREF(chunks);
    if (!t) Py_CLEAR(fields);
    else PyList_SET_ITEM(fields, (Py_ssize_t)i, t);
  }
  return fields;
}

PyMethodDef tpy_stream_functions[] = {
    {"read_stream", read_stream, METH_O,
     "read_stream(stream_capsule) -> (schema capsule, format, [array capsule a chunk])"},
    {"struct_fields", struct_fields, METH_VARARGS,
     "struct_fields(schema capsule, [array capsules]) -> [(name, format, schema, [arrays])]"},
    {NULL, NULL, 0, NULL}};
