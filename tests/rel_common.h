/* Host references shared by the reliability tests (test_threads.c,
 * test_soak.c, test_failure_sweep.c): random vocabularies, the codes a
 * lookup or an align must give, and attention in float64. Header-only so
 * that it stays out of the shared test-support library. */
#ifndef TABCL_REL_COMMON_H
#define TABCL_REL_COMMON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static inline int rel_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  size_t m = an < bn ? an : bn;
  int c = m ? memcmp(a, b, m) : 0;
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

/* ---- the fitted codes of one column, by sorting ------------------------ */

typedef struct rel_entry {
  const uint8_t *p;
  size_t n;
  int64_t pos;      /* position in the vocabulary */
} rel_entry;

typedef struct rel_vocab {
  rel_entry *e;     /* present labels, sorted by bytes then position */
  int64_t n;
  int32_t *code;    /* code of e[i] (equal labels share it) */
} rel_vocab;

static int rel_entry_cmp(const void *a, const void *b) {
  const rel_entry *x = a, *y = b;
  int c = rel_cmp(x->p, x->n, y->p, y->n);
  if (c) return c;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static inline void rel_vocab_build(rel_vocab *rv, const tabcl_strings_view *v,
                                   tabcl_code_order order) {
  rv->e = malloc(((size_t)v->length + 1) * sizeof *rv->e);
  rv->code = malloc(((size_t)v->length + 1) * sizeof *rv->code);
  cr_assert(rv->e && rv->code);
  rv->n = 0;
  for (int64_t i = 0; i < v->length; i++) {
    size_t n;
    const uint8_t *p = tt_label(v, i, &n);
    if (!p) continue;
    rv->e[rv->n++] = (rel_entry){p, n, i};
  }
  qsort(rv->e, (size_t)rv->n, sizeof *rv->e, rel_entry_cmp);
  int32_t rank = -1;
  for (int64_t i = 0; i < rv->n; i++) {
    int first = i == 0 || rel_cmp(rv->e[i - 1].p, rv->e[i - 1].n, rv->e[i].p, rv->e[i].n) != 0;
    if (first) rank++;
    rv->code[i] = rank;
  }
  if (order == TABCL_CODES_BY_POSITION) {
    /* a repeated label gets its last position: the last of its run */
    for (int64_t i = rv->n - 1; i >= 0; i--) {
      int last = i == rv->n - 1 ||
                 rel_cmp(rv->e[i + 1].p, rv->e[i + 1].n, rv->e[i].p, rv->e[i].n) != 0;
      rv->code[i] = last ? (int32_t)rv->e[i].pos : rv->code[i + 1];
    }
  }
}

static inline void rel_vocab_free(rel_vocab *rv) {
  free(rv->e);
  free(rv->code);
  memset(rv, 0, sizeof *rv);
}

/* The code of one label (NULL = null label), or -1. */
static inline int32_t rel_vocab_code(const rel_vocab *rv, const uint8_t *p, size_t n) {
  if (!p) return -1;
  int64_t lo = 0, hi = rv->n;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (rel_cmp(rv->e[mid].p, rv->e[mid].n, p, n) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < rv->n && rel_cmp(rv->e[lo].p, rv->e[lo].n, p, n) == 0) return rv->code[lo];
  return -1;
}

/* Codes a lookup of q in this column must give. */
static inline void rel_lookup(const rel_vocab *rv, const tabcl_strings_view *q, int32_t *out) {
  for (int64_t i = 0; i < q->length; i++) {
    size_t n;
    const uint8_t *p = tt_label(q, i, &n);
    out[i] = rel_vocab_code(rv, p, n);
  }
}

/* Codes an align of d in this column must give. */
static inline void rel_align(const rel_vocab *rv, const tabcl_dictionary_view *d, int32_t *out) {
  for (int64_t i = 0; i < d->length; i++) {
    int32_t k = d->codes[i];
    if (k < 0) {
      out[i] = -1;
      continue;
    }
    size_t n;
    const uint8_t *p = tt_label(&d->categories, k, &n);
    out[i] = rel_vocab_code(rv, p, n);
  }
}

/* ---- attention ---------------------------------------------------------- */

static inline uint16_t rel_f32_to_f16(float f) {
  /* round to nearest even, with subnormals; inputs here are small and finite */
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t e = (int32_t)((x >> 23) & 0xFF) - 127 + 15;
  uint32_t m = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0xFF) return (uint16_t)(sign | 0x7C00 | (m ? 0x200 : 0));
  if (e >= 31) return (uint16_t)(sign | 0x7C00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    m |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}
static inline float rel_f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? ldexpf((float)m, -24)
          : e == 31 ? (m ? NAN : INFINITY)
          : ldexpf((float)(m | 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}
static inline uint16_t rel_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7FFF + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}
static inline float rel_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}
static inline size_t rel_dsize(tabcl_dtype dt) {
  return dt == TABCL_F64 ? 8 : dt == TABCL_F32 ? 4 : 2;
}
static inline void rel_store(void *p, size_t i, tabcl_dtype dt, double v) {
  switch (dt) {
    case TABCL_F32: ((float *)p)[i] = (float)v; break;
    case TABCL_F64: ((double *)p)[i] = v; break;
    case TABCL_F16: ((uint16_t *)p)[i] = rel_f32_to_f16((float)v); break;
    default: ((uint16_t *)p)[i] = rel_f32_to_bf16((float)v); break;
  }
}
static inline double rel_load(const void *p, size_t i, tabcl_dtype dt) {
  switch (dt) {
    case TABCL_F32: return ((const float *)p)[i];
    case TABCL_F64: return ((const double *)p)[i];
    case TABCL_F16: return rel_f16_to_f32(((const uint16_t *)p)[i]);
    default: return rel_bf16_to_f32(((const uint16_t *)p)[i]);
  }
}

/* Attention in float64 on the (already rounded) inputs; out is double. */
static inline void rel_sdpa(const tabcl_sdpa_desc *d, const void *q, const void *k,
                            const void *v, const void *mask, double *out) {
  const int64_t B = d->batch, Lq = d->q_len, Lk = d->kv_len;
  const int Hq = d->q_heads, Hk = d->kv_heads, D = d->head_dim, G = Hq / Hk;
  const double scale = d->scale != 0 ? d->scale : 1.0 / sqrt((double)D);
  double *s = malloc(((size_t)Lk + 1) * sizeof *s);
  cr_assert(s);
  for (int64_t b = 0; b < B; b++)
    for (int64_t i = 0; i < Lq; i++)
      for (int h = 0; h < Hq; h++) {
        const int hk = h / G;
        double mx = -INFINITY;
        for (int64_t j = 0; j < Lk; j++) {
          double x = -INFINITY;
          int allowed = !(d->causal && j > i);
          size_t mi = (size_t)((((d->mask_batch_broadcast ? 0 : b) * (d->mask_head_broadcast ? 1 : Hq) +
                                 (d->mask_head_broadcast ? 0 : h)) * Lq + i) * Lk + j);
          if (allowed && d->mask == TABCL_MASK_BOOL && !((const uint8_t *)mask)[mi]) allowed = 0;
          if (allowed) {
            double dot = 0;
            for (int c = 0; c < D; c++)
              dot += rel_load(q, (size_t)(((b * Lq + i) * Hq + h) * D + c), d->dtype) *
                     rel_load(k, (size_t)(((b * Lk + j) * Hk + hk) * D + c), d->dtype);
            x = dot * scale;
            if (d->mask == TABCL_MASK_ADD) x += rel_load(mask, mi, d->dtype);
          }
          s[j] = x;
          if (x > mx) mx = x;
        }
        double sum = 0;
        for (int64_t j = 0; j < Lk; j++) {
          s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx);
          sum += s[j];
        }
        for (int c = 0; c < D; c++) {
          double acc = 0;
          for (int64_t j = 0; j < Lk; j++)
            if (s[j] != 0) acc += s[j] * rel_load(v, (size_t)(((b * Lk + j) * Hk + hk) * D + c), d->dtype);
          out[((b * Lq + i) * Hq + h) * D + c] = sum > 0 ? acc / sum : 0;
        }
      }
  free(s);
}

/* Tolerance for comparing a device result of dtype dt with rel_sdpa. */
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
  size_t es = rel_dsize(d.dtype);
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
  for (size_t i = 0; i < c->nq; i++) rel_store(c->q, i, d.dtype, tt_normal(r) * 0.7);
  for (size_t i = 0; i < c->nk; i++) rel_store(c->k, i, d.dtype, tt_normal(r) * 0.7);
  for (size_t i = 0; i < c->nk; i++) rel_store(c->v, i, d.dtype, tt_normal(r));
  for (size_t i = 0; i < c->nm; i++) {
    if (d.mask == TABCL_MASK_BOOL) ((uint8_t *)c->mask)[i] = tt_below(r, 4) != 0;
    else rel_store(c->mask, i, d.dtype, tt_below(r, 5) == 0 ? -INFINITY : tt_normal(r));
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
    double x = rel_load(c->out, i, c->d.dtype), e = fabs(x - ref[i]) / fmax(1.0, fabs(ref[i]));
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
  return worst;
}
#endif
