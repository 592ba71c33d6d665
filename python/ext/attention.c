/* tabcl._tabcl.sdpa: tabcl_sdpa_host on buffers the Python layer has checked
 * for dtype and shape; their byte sizes are checked again here, against the
 * descriptor, before anything is read. */
#include "tpy.h"

static const int elem_size[] = {4, 2, 2, 8};   /* by tabcl_dtype */

/* count * size in bytes, or -1 on overflow. */
static Py_ssize_t bytes_of(long long count, int size) {
  if (count < 0 || count > PY_SSIZE_T_MAX / size) return -1;
  return (Py_ssize_t)(count * size);
}

static long long product(long long a, long long b) {
  if (a < 0 || b < 0) return -1;
  if (a && b > LLONG_MAX / a) return -1;
  return a * b;
}

/* sdpa(context, q, k, v, mask_or_None, out, (B, Lq, Lk, Hq, Hkv, D), dtype,
        scale, causal, mask_kind, mask_batch_broadcast, mask_head_broadcast
        [, mask_query_broadcast]) */
static PyObject *sdpa(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *ctx, *qo, *ko, *vo, *mo, *oo;
  long long B, Lq, Lk;
  int Hq, Hkv, D, dtype, causal, mask_kind, mb, mh, mq = 0;
  double scale;
  if (!PyArg_ParseTuple(args, "O!OOOOO(LLLiii)idiiii|i:sdpa", &tpy_context_type, &ctx, &qo, &ko,
                        &vo, &mo, &oo, &B, &Lq, &Lk, &Hq, &Hkv, &D, &dtype, &scale, &causal,
                        &mask_kind, &mb, &mh, &mq))
    return NULL;
  if (dtype < 0 || dtype > 3) return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "dtype %d", dtype);
  tabcl_sdpa_desc d = {B, Lq, Lk, Hq, Hkv, D, (tabcl_dtype)dtype, scale, causal,
                       (tabcl_mask_kind)mask_kind, mb, mh, mq};
  int es = elem_size[dtype];
  long long qn = product(product(product(B, Lq), Hq), D);
  long long kn = product(product(product(B, Lk), Hkv), D);
  long long mn = product(product(product(mb ? 1 : B, mh ? 1 : Hq), mq ? 1 : Lq), Lk);
  Py_buffer q = {0}, k = {0}, v = {0}, m = {0}, out = {0};
  PyObject *ret = NULL;
  int have_mask = mo != Py_None;
  if (PyObject_GetBuffer(qo, &q, PyBUF_C_CONTIGUOUS) < 0 ||
      PyObject_GetBuffer(ko, &k, PyBUF_C_CONTIGUOUS) < 0 ||
      PyObject_GetBuffer(vo, &v, PyBUF_C_CONTIGUOUS) < 0 ||
      (have_mask && PyObject_GetBuffer(mo, &m, PyBUF_C_CONTIGUOUS) < 0) ||
      PyObject_GetBuffer(oo, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
    goto done;
  Py_ssize_t qb = bytes_of(qn, es), kb = bytes_of(kn, es);
  Py_ssize_t mbytes = bytes_of(mn, mask_kind == TABCL_MASK_BOOL ? 1 : es);
  if (qb < 0 || kb < 0 || q.len != qb || out.len != qb || k.len != kb || v.len != kb ||
      (have_mask && (mbytes < 0 || m.len != mbytes))) {
    tpy_raise_msg(TABCL_INVALID_ARGUMENT,
                  "sdpa: buffer sizes (q %zd, k %zd, v %zd, mask %zd, out %zd bytes) do not "
                  "match the shapes", q.len, k.len, v.len, have_mask ? m.len : 0, out.len);
    goto done;
  }
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_sdpa_host(((tpy_context *)ctx)->ctx, &d, q.buf, k.buf, v.buf,
                       have_mask ? m.buf : NULL, out.buf);
  TPY_END_NOGIL
  if (st) tpy_raise(st);
  else ret = Py_NewRef(Py_None);
done:
  if (q.obj) PyBuffer_Release(&q);
  if (k.obj) PyBuffer_Release(&k);
  if (v.obj) PyBuffer_Release(&v);
  if (m.obj) PyBuffer_Release(&m);
  if (out.obj) PyBuffer_Release(&out);
  return ret;
}

/* sdpa_at(context, q, k, v, mask, out, (B, Lq, Lk, Hq, Hkv, D), dtype, scale, causal,
           mask_kind, mask_batch_broadcast, mask_head_broadcast
           [, mask_query_broadcast]), q .. out as
   addresses (mask 0 when mask_kind is none): for tensors of a framework
   without the buffer protocol (tabcl.torch), read and written in place.
   The caller has checked that each is contiguous and as large as the shapes
   say; nothing here can, so the name stays private to the package. */
static PyObject *sdpa_at(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *ctx;
  unsigned long long qa, ka, va, ma, oa;
  long long B, Lq, Lk;
  int Hq, Hkv, D, dtype, causal, mask_kind, mb, mh, mq = 0;
  double scale;
  if (!PyArg_ParseTuple(args, "O!KKKKK(LLLiii)idiiii|i:sdpa_at", &tpy_context_type, &ctx, &qa,
                        &ka, &va, &ma, &oa, &B, &Lq, &Lk, &Hq, &Hkv, &D, &dtype, &scale, &causal,
                        &mask_kind, &mb, &mh, &mq))
    return NULL;
  if (dtype < 0 || dtype > 3) return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "dtype %d", dtype);
  if ((mask_kind != TABCL_MASK_NONE) != (ma != 0))
    return tpy_raise_msg(TABCL_INVALID_ARGUMENT, "sdpa_at: mask kind %d with mask address %llu",
                         mask_kind, ma);
  tabcl_sdpa_desc d = {B, Lq, Lk, Hq, Hkv, D, (tabcl_dtype)dtype, scale, causal,
                       (tabcl_mask_kind)mask_kind, mb, mh, mq};
  tabcl_status st;
  TPY_BEGIN_NOGIL
  st = tabcl_sdpa_host(((tpy_context *)ctx)->ctx, &d, (const void *)(uintptr_t)qa,
                       (const void *)(uintptr_t)ka, (const void *)(uintptr_t)va,
                       (const void *)(uintptr_t)ma, (void *)(uintptr_t)oa);
  TPY_END_NOGIL
  if (st) return tpy_raise(st);
  Py_RETURN_NONE;
}

PyMethodDef tpy_attention_functions[] = {
    {"sdpa_at", sdpa_at, METH_VARARGS, "sdpa_at(context, q, k, v, mask, out addresses, shape, "
                                       "dtype, scale, causal, mask_kind, mask_b, mask_h"
                                       "[, mask_q])"},
    {"sdpa", sdpa, METH_VARARGS, "sdpa(context, q, k, v, mask, out, shape, dtype, scale, causal, "
                                 "mask_kind, mask_batch_broadcast, mask_head_broadcast"
                                 "[, mask_query_broadcast])"},
    {NULL, NULL, 0, NULL}};
