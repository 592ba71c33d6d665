/* Attention's shared helpers: descriptor sizes and scale, validation of
 * a descriptor, and the first/last event tracking of a run. */
#include <math.h>
#include <stdio.h>

#include "attention/sdpa.h"

size_t tabcl__sdpa_elem_size(tabcl_dtype dt) {
  return dt == TABCL_F64 ? 8 : dt == TABCL_F32 ? 4 : 2;
}

int tabcl__sdpa_has_work(const tabcl_sdpa_desc *d) { return d->batch > 0 && d->q_len > 0; }

double tabcl__sdpa_scale(const tabcl_sdpa_desc *d) {
  return d->scale != 0 ? d->scale : 1.0 / sqrt((double)d->head_dim);
}

int tabcl__sdpa_mask_hb(const tabcl_sdpa_desc *d) {
  return (d->mask_head_broadcast != 0) | (d->mask_query_broadcast != 0) << 1;
}

void tabcl__sdpa_track(tabcl__sdpa_events *e, cl_event ev) {
  if (!ev) return;
  if (!e) {
    clReleaseEvent(ev);
    return;
  }
  if (e->want_first && !e->first) {
    clRetainEvent(ev);
    e->first = ev;
  }
  if (e->want_last) {
    if (e->last) clReleaseEvent(e->last);
    e->last = ev;
  } else {
    clReleaseEvent(ev);
  }
}

void tabcl__sdpa_events_release(tabcl__sdpa_events *e) {
  if (e->first) clReleaseEvent(e->first);
  if (e->last) clReleaseEvent(e->last);
  e->first = e->last = NULL;
}

tabcl_status tabcl__sdpa_validate(const char *fn, const tabcl_context *ctx,
                                  const tabcl_sdpa_desc *d, int has_q, int has_k, int has_v,
                                  int has_mask, int has_out) {
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!d) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: desc is NULL", fn);
  if (d->batch < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: batch is %lld; it must be >= 0", fn,
                       (long long)d->batch);
  if (d->q_len < 0 || d->q_len > INT32_MAX)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q_len is %lld; it must be in [0, 2^31)", fn,
                       (long long)d->q_len);
  if (d->kv_len < 0 || d->kv_len > INT32_MAX)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: kv_len is %lld; it must be in [0, 2^31)",
                       fn, (long long)d->kv_len);
  if ((unsigned)d->dtype > (unsigned)TABCL_F64)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: dtype %d is not a tabcl_dtype", fn,
                       (int)d->dtype);
  if ((unsigned)d->mask > (unsigned)TABCL_MASK_ADD)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: mask kind %d is not a tabcl_mask_kind", fn,
                       (int)d->mask);
  if (d->mask_query_broadcast != 0 && d->mask_query_broadcast != 1)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: mask_query_broadcast is %d; it must be 0 or 1",
                       fn, d->mask_query_broadcast);
  if (!isfinite(d->scale))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: scale is not finite", fn);
  if (d->q_heads > 0 && d->kv_heads > 0 && d->q_heads % d->kv_heads != 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: q_heads (%d) is not a multiple of kv_heads (%d)", fn,
                       (int)d->q_heads, (int)d->kv_heads);
  if (d->q_heads < 0 || d->kv_heads < 0 || d->head_dim < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q_heads %d, kv_heads %d, head_dim %d: "
                       "none may be negative", fn, (int)d->q_heads, (int)d->kv_heads,
                       (int)d->head_dim);
  if (!tabcl__sdpa_has_work(d)) return TABCL_OK;
  if (d->q_heads <= 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q_heads is %d; it must be > 0", fn,
                       (int)d->q_heads);
  if (d->kv_heads <= 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: kv_heads is %d; it must be > 0", fn,
                       (int)d->kv_heads);
  if (d->head_dim <= 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: head_dim is %d; it must be > 0", fn,
                       (int)d->head_dim);
  /* Extents whose byte sizes overflow cannot describe real buffers: refuse
     them before anything is read (found by fuzz_sdpa_desc). */
  {
    const uint64_t es = d->dtype == TABCL_F64 ? 8 : d->dtype == TABCL_F32 ? 4 : 2;
    uint64_t qb, kb, mb = 1, t;
    int bad = __builtin_mul_overflow((uint64_t)d->batch, (uint64_t)d->q_len, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->q_heads, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->head_dim, &t) ||
              __builtin_mul_overflow(t, es, &qb) ||
              __builtin_mul_overflow((uint64_t)d->batch, (uint64_t)d->kv_len, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->kv_heads, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->head_dim, &t) ||
              __builtin_mul_overflow(t, es, &kb);
    if (!bad && d->mask != TABCL_MASK_NONE)
      bad = __builtin_mul_overflow(d->mask_batch_broadcast ? 1u : (uint64_t)d->batch,
                                   d->mask_head_broadcast ? 1u : (uint64_t)d->q_heads, &t) ||
            __builtin_mul_overflow(t, d->mask_query_broadcast ? 1u : (uint64_t)d->q_len, &t) ||
            __builtin_mul_overflow(t, (uint64_t)d->kv_len, &t) ||
            __builtin_mul_overflow(t, d->mask == TABCL_MASK_ADD ? es : 1u, &mb);
    if (bad || qb > (uint64_t)PTRDIFF_MAX || kb > (uint64_t)PTRDIFF_MAX ||
        mb > (uint64_t)PTRDIFF_MAX)
      return tabcl__fail(TABCL_INVALID_ARGUMENT,
                         "%s: batch %lld x q_len %lld x kv_len %lld x heads %d/%d x head_dim %d "
                         "describes tensors larger than any address space", fn,
                         (long long)d->batch, (long long)d->q_len, (long long)d->kv_len,
                         (int)d->q_heads, (int)d->kv_heads, (int)d->head_dim);
  }
  if (!has_q) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q is NULL", fn);
  if (!has_out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (d->kv_len > 0 && !has_k) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: k is NULL", fn);
  if (d->kv_len > 0 && !has_v) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: v is NULL", fn);
  if (d->kv_len > 0 && d->mask != TABCL_MASK_NONE && !has_mask)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: mask is NULL but the mask kind is %s", fn,
                       d->mask == TABCL_MASK_BOOL ? "TABCL_MASK_BOOL" : "TABCL_MASK_ADD");
  return TABCL_OK;
}
