/* What the reliability tests (test_threads.c, test_soak.c,
 * test_failure_sweep.c) share: random label columns, random attention
 * problems with the tolerance and error measure they are judged by. The
 * references themselves are the suite's own: support/catindex_ref.h for
 * codes, support/sdpa_ref.h for attention. Header-only, for these three. */
#ifndef TABCL_REL_COMMON_H
#define TABCL_REL_COMMON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"
#include "catindex_ref.h"
#include "runtime/half.h"
#include "sdpa_ref.h"
#include "tt.h"

/* ---- labels ----------------------------------------------------------- */

/* A random label from a small alphabet (so queries hit), sometimes long,
   empty or with high bytes; written to buf (cap >= 600), length returned. */
static inline size_t rel_label(tt_rng *r, uint8_t *buf) {
  uint64_t kind = tt_below(r, 20);
  size_t n = kind == 0 ? 0 : kind == 1 ? 100 + (size_t)tt_below(r, 500) : 1 + (size_t)tt_below(r, 6);
  for (size_t i = 0; i < n; i++)
    buf[i] = (uint8_t)(kind == 2 ? 0x80 + tt_below(r, 128) : 'a' + tt_below(r, 3));
  return n;
}

/* A column of n random labels, about one in `null_every` null (0: none). */
static inline void rel_column(tt_rng *r, tt_strings *s, int64_t n, int null_every) {
  uint8_t buf[640];
  tt_strings_init(s, (int64_t)tt_below(r, 4));
  for (int64_t i = 0; i < n; i++) {
    if (null_every && tt_below(r, (uint64_t)null_every) == 0) {
      tt_strings_push_null(s);
    } else {
      size_t len = rel_label(r, buf);
      tt_strings_push(s, buf, len);
    }
  }
}

/* ---- attention ---------------------------------------------------------- */

/* Tolerance for comparing a device result of dtype dt with tt_sdpa_reference. */
static inline double rel_sdpa_tol(tabcl_dtype dt) {
  return dt == TABCL_F64 ? 1e-9 : dt == TABCL_F32 ? 2e-4 : dt == TABCL_F16 ? 4e-3 : 2e-2;
}

/* A random attention problem; buffers owned by the struct. */
typedef struct rel_sdpa_case {
  tabcl_sdpa_desc d;
  void *q, *k, *v, *mask, *out;
  size_t nq, nk, nm;
} rel_sdpa_case;

static inline void rel_sdpa_case_make(tt_rng *r, rel_sdpa_case *c, tabcl_sdpa_desc d) {
  memset(c, 0, sizeof *c);
  c->d = d;
  size_t es = tabcl__sdpa_elem_size(d.dtype);
  c->nq = (size_t)(d.batch * d.q_len * d.q_heads * d.head_dim);
  c->nk = (size_t)(d.batch * d.kv_len * d.kv_heads * d.head_dim);
  c->nm = d.mask ? (size_t)((d.mask_batch_broadcast ? 1 : d.batch) *
                            (d.mask_head_broadcast ? 1 : d.q_heads) * d.q_len * d.kv_len) : 0;
  c->q = malloc(c->nq * es + 1);
  c->k = malloc(c->nk * es + 1);
  c->v = malloc(c->nk * es + 1);
  c->out = malloc(c->nq * es + 1);
  c->mask = malloc(c->nm * (d.mask == TABCL_MASK_BOOL ? 1 : es) + 1);
  cr_assert(c->q && c->k && c->v && c->out && c->mask);
  for (size_t i = 0; i < c->nq; i++) tabcl__store_elem(c->q, i, d.dtype, tt_normal(r) * 0.7);
  for (size_t i = 0; i < c->nk; i++) tabcl__store_elem(c->k, i, d.dtype, tt_normal(r) * 0.7);
  for (size_t i = 0; i < c->nk; i++) tabcl__store_elem(c->v, i, d.dtype, tt_normal(r));
  for (size_t i = 0; i < c->nm; i++) {
    if (d.mask == TABCL_MASK_BOOL) ((uint8_t *)c->mask)[i] = tt_below(r, 4) != 0;
    else tabcl__store_elem(c->mask, i, d.dtype, tt_below(r, 5) == 0 ? -INFINITY : tt_normal(r));
  }
  memset(c->out, 0xCD, c->nq * es + 1);
}

static inline void rel_sdpa_case_free(rel_sdpa_case *c) {
  free(c->q);
  free(c->k);
  free(c->v);
  free(c->out);
  free(c->mask);
  memset(c, 0, sizeof *c);
}

/* Largest |device - reference| over out, relative to max(1, |reference|). */
static inline double rel_sdpa_error(const rel_sdpa_case *c, const double *ref) {
  double worst = 0;
  for (size_t i = 0; i < c->nq; i++) {
    double x = tabcl__load_elem(c->out, i, c->d.dtype);
    double e = fabs(x - ref[i]) / fmax(1.0, fabs(ref[i]));
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
  return worst;
}
#endif
