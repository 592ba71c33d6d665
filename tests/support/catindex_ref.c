/* The host hash table behind catindex_ref.h. Read-only once built, so
   threads may look codes up in one table at once (test_threads does). */
#include "catindex_ref.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"

static uint64_t fnv(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/* The entry holding label p, or the free one where it would go. */
static catref_entry *slot(const catref *t, const uint8_t *p, size_t n) {
  size_t i = (size_t)fnv(p, n) & (t->cap - 1);
  for (;;) {
    catref_entry *e = &t->e[i];
    if (!e->used || (e->n == n && (n == 0 || memcmp(e->p, p, n) == 0))) return e;
    i = (i + 1) & (t->cap - 1);
  }
}

/* Bytewise, a prefix first. */
static int by_bytes(const void *a, const void *b) {
  const catref_entry *x = *(catref_entry *const *)a, *y = *(catref_entry *const *)b;
  size_t m = x->n < y->n ? x->n : y->n;
  int r = m ? memcmp(x->p, y->p, m) : 0;
  if (r) return r;
  return x->n < y->n ? -1 : x->n > y->n;
}

void catref_build(catref *t, const tabcl_strings_view *v, tabcl_code_order order) {
  t->cap = 16;
  while (t->cap < (size_t)v->length * 2 + 2) t->cap *= 2;
  t->e = calloc(t->cap, sizeof *t->e);
  cr_assert(t->e);
  int64_t distinct = 0;
  for (int64_t i = 0; i < v->length; i++) {
    size_t n;
    const uint8_t *p = tt_label(v, i, &n);
    if (!p) continue;
    catref_entry *e = slot(t, p, n);
    if (!e->used) distinct++;
    *e = (catref_entry){p, n, (int32_t)i, 1};   /* the last position wins */
  }
  t->ncodes = v->length;
  if (order == TABCL_CODES_BY_VALUE) {
    catref_entry **all = malloc((size_t)(distinct ? distinct : 1) * sizeof *all);
    cr_assert(all);
    int64_t k = 0;
    for (size_t i = 0; i < t->cap; i++)
      if (t->e[i].used) all[k++] = &t->e[i];
    qsort(all, (size_t)k, sizeof *all, by_bytes);
    for (int64_t r = 0; r < k; r++) all[r]->code = (int32_t)r;
    free(all);
    t->ncodes = distinct;
  }
}

void catref_free(catref *t) {
  free(t->e);
  memset(t, 0, sizeof *t);
}

int32_t catref_code(const catref *t, const tabcl_strings_view *q, int64_t i) {
  size_t n;
  const uint8_t *p = tt_label(q, i, &n);
  if (!p) return -1;
  catref_entry *e = slot(t, p, n);
  return e->used ? e->code : -1;
}

int32_t catref_align_code(const catref *t, const tabcl_dictionary_view *d, int64_t i) {
  return d->codes[i] < 0 ? -1 : catref_code(t, &d->categories, d->codes[i]);
}

void catref_lookup(const catref *t, const tabcl_strings_view *q, int32_t *out) {
  for (int64_t i = 0; i < q->length; i++) out[i] = catref_code(t, q, i);
}

void catref_align(const catref *t, const tabcl_dictionary_view *d, int32_t *out) {
  for (int64_t i = 0; i < d->length; i++) out[i] = catref_align_code(t, d, i);
}
