/* The tabcl Python extension (tabcl._tabcl): what its files share. The
 * Python layer (python/src/tabcl) turns columns and arrays into the objects
 * defined here; these files only hold tabcl handles and buffers and make
 * the calls, the device work with the GIL released. */
#ifndef TABCL_TPY_H
#define TABCL_TPY_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tabcl/tabcl.h"
#include "tabcl/tabcl_arrow.h"

/* Sets the Python exception for a failed tabcl call: the class registered
   for st (tabcl.InvalidArgument, ...) with tabcl_last_error() as its
   message. Returns NULL. Call right after the failed call, on its thread. */
PyObject *tpy_raise(tabcl_status st);
/* Raises the class registered for st with a message of the extension's own. */
PyObject *tpy_raise_msg(tabcl_status st, const char *fmt, ...);

typedef struct tpy_context {
  PyObject_HEAD
  tabcl_context *ctx;
} tpy_context;

/* A string column: either buffers this object owns (built from a Python
   sequence) or an Arrow import that points into an array kept alive here. */
typedef struct tpy_strings {
  PyObject_HEAD
  tabcl_strings_view view;
  int64_t *offsets;          /* owned (from a sequence) */
  uint8_t *data, *validity;  /* owned (from a sequence) */
  tabcl_arrow_strings arrow; /* from Arrow */
  PyObject *keep;            /* what the view's memory belongs to (capsules), or NULL */
  Py_buffer bufs[3];         /* from_buffers: offsets, data, validity (obj NULL if unused) */
} tpy_strings;

typedef struct tpy_dictionary {
  PyObject_HEAD
  tabcl_dictionary_view view;
  tabcl_arrow_dictionary arrow;  /* from Arrow */
  PyObject *keep;                /* capsules, or the categories' tpy_strings */
  Py_buffer codes;               /* from (categories, codes) */
  int has_codes;
} tpy_dictionary;

typedef struct tpy_index {
  PyObject_HEAD
  tabcl_category_index *idx;
  PyObject *context;             /* the tpy_context it was fitted or loaded on */
} tpy_index;

/* Every tabcl call runs without the GIL, between TPY_BEGIN_NOGIL and
   TPY_END_NOGIL: Python's own pair, plus a count of the calls that found
   the GIL really released inside (PyGILState_Check), which the tests read
   (_tabcl._nogil_calls) to check the release without timing a thread. */
extern unsigned long tpy_nogil_calls;
#define TPY_BEGIN_NOGIL                                                        \
  Py_BEGIN_ALLOW_THREADS                                                       \
  if (!PyGILState_Check()) __atomic_fetch_add(&tpy_nogil_calls, 1, __ATOMIC_RELAXED);
#define TPY_END_NOGIL Py_END_ALLOW_THREADS

extern PyTypeObject tpy_context_type, tpy_strings_type, tpy_dictionary_type, tpy_index_type;
extern PyMethodDef tpy_index_functions[], tpy_attention_functions[], tpy_stream_functions[],
    tpy_device_functions[];
/* A new tabcl._tabcl.Index owning idx (destroyed on failure), on context. */
PyObject *tpy_wrap_index(PyObject *context, tabcl_category_index *idx);
#endif
