/* tabcl._tabcl's device-resident calls (tabcl_cl.h): lookup_cl, fit_cl and
 * sdpa_cl on cl_mem handles and cl_event wait lists given as integers (the
 * int_ptr of pyopencl objects). The Python layer (tabcl/_device.py) checks
 * dtypes, sizes and contexts and wraps the returned event; here the handles
 * are only passed on, so that no byte of the data crosses to the host. */
#include "tpy.h"

#include "tabcl/tabcl_cl.h"

/* The cl_mem handles of the last device call, in argument order, so the
   tests can see that the caller's own buffers reached the C entry point
   (no staging copy). Written with the GIL held. */
#define MAX_RECORDED 64
static unsigned long long recorded[MAX_RECORDED];
static int nrecorded;

static unsigned long long recorded_waits[MAX_RECORDED];
static int nrecorded_waits;

static void record_reset(void) { nrecorded = nrecorded_waits = 0; }
static void record(const void *h) {
  if (nrecorded < MAX_RECORDED) recorded[nrecorded++] = (unsigned long long)(uintptr_t)h;
}
static void record_waits(void *const *w, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n && nrecorded_waits < MAX_RECORDED; i++)
    recorded_waits[nrecorded_waits++] = (unsigned long long)(uintptr_t)w[i];
}

static PyObject *tuple_of(const unsigned long long *h, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *v = PyLong_FromUnsignedLongLong(h[i]);
    if (!v) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

/* ((cl_mem handles), (wait list handles)) of the last device call */
static PyObject *last_cl_call(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return Py_BuildValue("(NN)", tuple_of(recorded, nrecorded),
                       tuple_of(recorded_waits, nrecorded_waits));
}

/* (cl_context, cl_queue, cl_device) of a tabcl context, as integers. */
static PyObject *cl_handles(PyObject *self, PyObject *arg) {
  (void)self;
  if (!PyObject_TypeCheck(arg, &tpy_context_type))
    return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "cl_handles: not a tabcl.Context");
  tabcl_context *c = ((tpy_context *)arg)->ctx;
  return Py_BuildValue("(KKK)", (unsigned long long)(uintptr_t)tabcl_context_cl_context(c),
                       (unsigned long long)(uintptr_t)tabcl_context_cl_queue(c),
                       (unsigned long long)(uintptr_t)tabcl_context_cl_device(c));
}

/* A sequence of integers as handles (PyMem_Malloc'd, at least one slot). */
static void **handles_of(PyObject *seq, Py_ssize_t *n, const char *what) {
  PyObject *t = PySequence_Tuple(seq);
  if (!t) return NULL;
  *n = PyTuple_GET_SIZE(t);
  void **h = PyMem_Calloc((size_t)(*n ? *n : 1), sizeof *h);
  if (!h) {
    Py_DECREF(t);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < *n; i++) {
    unsigned long long v = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t, i));
    if (PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError, "%s %zd is not a handle (an int)", what, i);
      PyMem_Free(h);
      Py_DECREF(t);
      return NULL;
    }
    h[i] = (void *)(uintptr_t)v;
  }
  Py_DECREF(t);
  return h;
}

/* Columns given as (length, bytes, data, offsets, validity, max_label) tuples. */
static tabcl_strings_cl *columns_of(PyObject *seq, Py_ssize_t *n) {
  PyObject *t = PySequence_Tuple(seq);
  if (!t) return NULL;
  *n = PyTuple_GET_SIZE(t);
  if (*n > INT32_MAX) {
    Py_DECREF(t);
    tpy_raise_msg(TABCL_INVALID_ARGUMENT, "%zd columns is too many", *n);
    return NULL;
  }
  tabcl_strings_cl *c = PyMem_Calloc((size_t)(*n ? *n : 1), sizeof *c);
  if (!c) {
    Py_DECREF(t);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < *n; i++) {
    long long len, bytes, maxl;
    unsigned long long d, o, v;
    if (!PyArg_ParseTuple(PyTuple_GET_ITEM(t, i), "LLKKKL:column", &len, &bytes, &d, &o, &v,
                          &maxl)) {
      PyMem_Free(c);
      Py_DECREF(t);
      return NULL;
    }
    c[i] = (tabcl_strings_cl){len, bytes, (cl_mem)(uintptr_t)d, (cl_mem)(uintptr_t)o,
                              (cl_mem)(uintptr_t)v, maxl};
  }
  Py_DECREF(t);
  return c;
}

static void record_columns(const tabcl_strings_cl *c, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++) {
    record(c[i].data);
    record(c[i].offsets);
    record(c[i].validity);
  }
}

/* lookup_cl(index, columns, codes, wait) -> the event's handle */
static PyObject *lookup_cl(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *index, *colseq, *codeseq, *waitseq;
  if (!PyArg_ParseTuple(args, "O!OOO:lookup_cl", &tpy_index_type, &index, &colseq, &codeseq,
                        &waitseq))
    return NULL;
  Py_ssize_t n = 0, ncodes = 0, nwait = 0;
  tabcl_strings_cl *cols = columns_of(colseq, &n);
  void **codes = cols ? handles_of(codeseq, &ncodes, "codes") : NULL;
  void **wait = codes ? handles_of(waitseq, &nwait, "wait_for") : NULL;
  PyObject *ret = NULL;
  if (!wait) goto done;
  if (ncodes != n || nwait > UINT32_MAX) {
    tpy_raise_msg(TABCL_INVALID_ARGUMENT, "lookup_cl: %zd code buffers for %zd columns", ncodes, n);
    goto done;
  }
  record_reset();
  record_columns(cols, n);
  for (Py_ssize_t i = 0; i < n; i++) record(codes[i]);
  record_waits(wait, nwait);
  cl_event ev = NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_category_index_lookup_cl(((tpy_index *)index)->idx, (int)n, cols,
                                      (cl_mem const *)codes, (cl_uint)nwait,
                                      nwait ? (const cl_event *)wait : NULL, &ev);
  TPY_END_NOGIL
  if (st) tpy_raise(st);
  else ret = PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)ev);
done:
  PyMem_Free(cols);
  PyMem_Free(codes);
  PyMem_Free(wait);
  return ret;
}

/* fit_cl(context, columns, order, wait) -> (Index, the event's handle) */
static PyObject *fit_cl(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *ctx, *colseq, *waitseq;
  int order;
  if (!PyArg_ParseTuple(args, "O!OiO:fit_cl", &tpy_context_type, &ctx, &colseq, &order, &waitseq))
    return NULL;
  Py_ssize_t n = 0, nwait = 0;
  tabcl_strings_cl *cols = columns_of(colseq, &n);
  void **wait = cols ? handles_of(waitseq, &nwait, "wait_for") : NULL;
  PyObject *ret = NULL;
  if (!wait) goto done;
  record_reset();
  record_columns(cols, n);
  record_waits(wait, nwait);
  cl_event ev = NULL;
  tabcl_category_index *idx = NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_category_index_fit_cl(((tpy_context *)ctx)->ctx, (int)n, cols,
                                   (tabcl_code_order)order, (cl_uint)nwait,
                                   nwait ? (const cl_event *)wait : NULL, &ev, &idx);
  TPY_END_NOGIL
  if (st) {
    tpy_raise(st);
    goto done;
  }
  PyObject *h = tpy_wrap_index(ctx, idx);
  if (!h) {
    if (ev) clReleaseEvent(ev);
    goto done;
  }
  ret = Py_BuildValue("(NK)", h, (unsigned long long)(uintptr_t)ev);
done:
  PyMem_Free(cols);
  PyMem_Free(wait);
  return ret;
}

/* sdpa_cl(context, (q, k, v, mask, out), (B, Lq, Lk, Hq, Hkv, D), dtype, scale,
           causal, mask_kind, mask_b, mask_h, wait[, mask_q]) -> the event's handle */
static PyObject *sdpa_cl(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *ctx, *waitseq;
  unsigned long long q, k, v, m, o;
  long long B, Lq, Lk;
  int Hq, Hkv, D, dtype, causal, mask_kind, mb, mh, mq = 0;
  double scale;
  if (!PyArg_ParseTuple(args, "O!(KKKKK)(LLLiii)idiiiiO|i:sdpa_cl", &tpy_context_type, &ctx, &q,
                        &k, &v, &m, &o, &B, &Lq, &Lk, &Hq, &Hkv, &D, &dtype, &scale, &causal,
                        &mask_kind, &mb, &mh, &waitseq, &mq))
    return NULL;
  if (dtype < 0 || dtype > 3) return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "dtype %d", dtype);
  Py_ssize_t nwait = 0;
  void **wait = handles_of(waitseq, &nwait, "wait_for");
  if (!wait) return NULL;
  tabcl_sdpa_desc d = {B, Lq, Lk, Hq, Hkv, D, (tabcl_dtype)dtype, scale, causal,
                       (tabcl_mask_kind)mask_kind, mb, mh, mq};
  record_reset();
  record((void *)(uintptr_t)q);
  record((void *)(uintptr_t)k);
  record((void *)(uintptr_t)v);
  record((void *)(uintptr_t)m);
  record((void *)(uintptr_t)o);
  record_waits(wait, nwait);
  cl_event ev = NULL;
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_sdpa_cl(((tpy_context *)ctx)->ctx, &d, (cl_mem)(uintptr_t)q, (cl_mem)(uintptr_t)k,
                     (cl_mem)(uintptr_t)v, (cl_mem)(uintptr_t)m, (cl_mem)(uintptr_t)o,
                     (cl_uint)nwait, nwait ? (const cl_event *)wait : NULL, &ev);
  TPY_END_NOGIL
  PyMem_Free(wait);
  if (st) return tpy_raise(st);
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)ev);
}

PyMethodDef tpy_device_functions[] = {
    {"cl_handles", cl_handles, METH_O, "cl_handles(context) -> (cl_context, cl_queue, cl_device)"},
    {"lookup_cl", lookup_cl, METH_VARARGS, "lookup_cl(index, columns, codes, wait) -> event"},
    {"fit_cl", fit_cl, METH_VARARGS, "fit_cl(context, columns, order, wait) -> (Index, event)"},
    {"sdpa_cl", sdpa_cl, METH_VARARGS,
     "sdpa_cl(context, (q, k, v, mask, out), shape, dtype, scale, causal, mask_kind, mask_b, "
     "mask_h, wait) -> event"},
    {"_last_cl_call", last_cl_call, METH_NOARGS,
     "((cl_mem handles), (wait list)) the last device call passed to the library, in order"},
    {NULL, NULL, 0, NULL}};
