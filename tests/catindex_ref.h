/* A plain host hash table of labels, the reference the categorical index
 * tests compare with (FNV-1a and linear probing: nothing shared with the
 * library's XXH3 or its sorted tables). Header-only, for the catindex tests. */
#ifndef TABCL_CATINDEX_REF_H
#define TABCL_CATINDEX_REF_H

#include <stdlib.h>
#include <string.h>

#include "catindex/catindex.h"
#include "tt.h"

typedef struct catref_entry {
  const uint8_t *p;
  size_t n;
  int32_t code;
  int used;
} catref_entry;

typedef struct catref {
  catref_entry *e;
  size_t cap;
  int64_t ncodes;   /* BY_POSITION: vocabulary length; BY_VALUE: distinct labels */
} catref;

static inline uint64_t catref_fnv(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

static inline catref_entry *catref_slot(const catref *t, const uint8_t *p, size_t n) {
  size_t i = (size_t)catref_fnv(p, n) & (t->cap - 1);
  for (;;) {
    catref_entry *e = &t->e[i];
    if (!e->used || (e->n == n && (n == 0 || memcmp(e->p, p, n) == 0))) return e;
    i = (i + 1) & (t->cap - 1);
  }
}

static inline int catref_cmp(const void *a, const void *b) {
  const catref_entry *x = *(catref_entry *const *)a, *y = *(catref_entry *const *)b;
  size_t m = x->n < y->n ? x->n : y->n;
  int r = m ? memcmp(x->p, y->p, m) : 0;
  if (r) return r;
  return x->n < y->n ? -1 : x->n > y->n;
}

static inline void catref_build(catref *t, const tabcl_strings_view *v, tabcl_code_order order) {
  t->cap = 16;
  while (t->cap < (size_t)v->length * 2 + 2) t->cap *= 2;
  t->e = calloc(t->cap, sizeof *t->e);
  cr_assert(t->e);
  int64_t distinct = 0;
  for (int64_t i = 0; i < v->length; i++) {
    size_t n;
    const uint8_t *p = tt_label(v, i, &n);
    if (!p) continue;
    catref_entry *e = catref_slot(t, p, n);
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
    qsort(all, (size_t)k, sizeof *all, catref_cmp);
    for (int64_t r = 0; r < k; r++) all[r]->code = (int32_t)r;
    free(all);
    t->ncodes = distinct;
  }
}

static inline int32_t catref_code(const catref *t, const tabcl_strings_view *q, int64_t i) {
  size_t n;
  const uint8_t *p = tt_label(q, i, &n);
  if (!p) return -1;
  catref_entry *e = catref_slot(t, p, n);
  return e->used ? e->code : -1;
}

static inline void catref_free(catref *t) {
  free(t->e);
  memset(t, 0, sizeof *t);
}

/* Looks queries up in idx twice, once with one work-item per row and once
   with a work-group per row, and compares every code with the reference
   built from vocab (each column's code count too). Outputs are poisoned
   first so an unwritten code shows. */
static inline void cat_expect_lookup(tabcl_category_index *idx, int ncols,
                                     const tabcl_strings_view *vocab, tabcl_code_order order,
                                     const tabcl_strings_view *q, const char *what) {
  catref *refs = calloc((size_t)ncols, sizeof *refs);
  int32_t **codes = calloc((size_t)ncols, sizeof *codes);
  cr_assert(refs && codes);
  for (int c = 0; c < ncols; c++) {
    catref_build(&refs[c], &vocab[c], order);
    cr_expect_eq(tabcl_category_index_codes(idx, c), refs[c].ncodes,
                 "%s: column %d has %lld codes, expected %lld", what, c,
                 (long long)tabcl_category_index_codes(idx, c), (long long)refs[c].ncodes);
    codes[c] = malloc((size_t)(q[c].length + 1) * sizeof **codes);
    cr_assert(codes[c]);
  }
  for (int pass = 0; pass < 2; pass++) {
    tt_tune(idx->ctx, "lookup.group_bytes=%s", pass == 0 ? "1099511627776" : "0");
    for (int c = 0; c < ncols; c++)
      for (int64_t i = 0; i < q[c].length; i++) codes[c][i] = 0x7A7A7A7A;
    tabcl_status s = tabcl_category_index_lookup(idx, ncols, q, codes);
    cr_expect_eq(s, TABCL_OK, "%s: lookup: %s: %s", what, tabcl_status_name(s), tabcl_last_error());
    if (s != TABCL_OK) break;
    for (int c = 0; c < ncols; c++) {
      int64_t bad = 0, first = -1;
      for (int64_t i = 0; i < q[c].length; i++)
        if (codes[c][i] != catref_code(&refs[c], &q[c], i) && bad++ == 0) first = i;
      if (bad) {
        size_t n = 0;
        const uint8_t *p = tt_label(&q[c], first, &n);
        cr_expect_fail("%s (%s kernel): column %d: %lld of %lld codes wrong; row %lld (%s, %zu "
                       "bytes, first byte %d) got %d, expected %d",
                       what, pass ? "group" : "item", c, (long long)bad, (long long)q[c].length,
                       (long long)first, p ? "present" : "null", n, p && n ? p[0] : -1,
                       codes[c][first], catref_code(&refs[c], &q[c], first));
      }
    }
  }
  tt_tune(idx->ctx, "lookup.group_bytes=auto");
  for (int c = 0; c < ncols; c++) {
    catref_free(&refs[c]);
    free(codes[c]);
  }
  free(refs);
  free(codes);
}

/* Builds the programs a fit, lookup and align use (the context keeps them),
   so a leak baseline taken afterwards counts only what the calls leave. */
static inline void cat_warm(tabcl_context *ctx) {
  static const int64_t off[4] = {0, 1, 3, 300};
  static uint8_t data[300];
  memset(data, 'w', sizeof data);
  tabcl_strings_view v = {3, off, data, NULL};
  tabcl_category_index *idx = NULL;
  tabcl_status s = tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_POSITION, &idx);
  cr_assert_eq(s, TABCL_OK, "warm-up fit: %s", tabcl_last_error());
  int32_t got[3], in[3] = {0, 1, -1};
  int32_t *codes = got;
  for (int pass = 0; pass < 2; pass++) {
    tt_tune(idx->ctx, "lookup.group_bytes=%s", pass ? "0" : "1099511627776");
    cr_assert_eq(tabcl_category_index_lookup(idx, 1, &v, &codes), TABCL_OK);
  }
  tt_tune(idx->ctx, "lookup.group_bytes=auto");
  tabcl_dictionary_view d = {v, 3, in};
  cr_assert_eq(tabcl_category_index_align(idx, 1, &d, &codes), TABCL_OK);
  tabcl_category_index_destroy(idx);
}

/* Fits vocab in both orders and checks lookups of q in each. */
static inline void cat_fit_and_expect(tabcl_context *ctx, int ncols, const tabcl_strings_view *vocab,
                                      const tabcl_strings_view *q, const char *what) {
  for (int o = 0; o < 2; o++) {
    tabcl_category_index *idx = NULL;
    tabcl_status s = tabcl_category_index_fit(ctx, ncols, vocab, (tabcl_code_order)o, &idx);
    cr_assert_eq(s, TABCL_OK, "%s: fit: %s: %s", what, tabcl_status_name(s), tabcl_last_error());
    cr_expect_eq(tabcl_category_index_columns(idx), ncols);
    cat_expect_lookup(idx, ncols, vocab, (tabcl_code_order)o, q, what);
    tabcl_category_index_destroy(idx);
  }
}

#endif
