/* What the catindex tests check after a fit: lookups against the host
 * reference (support/catindex_ref.h) through both lookup kernels, and the
 * warm-up that builds the programs before a leak baseline. Header-only, for
 * the catindex tests. */
#ifndef TABCL_CATINDEX_CHECKS_H
#define TABCL_CATINDEX_CHECKS_H

#include <stdlib.h>
#include <string.h>

#include "catindex/catindex.h"
#include "sort/sort.h"
#include "catindex_ref.h"
#include "tt.h"

/* The plans a pass takes: the lookup kernels with one work-item a row, a
   work-group a row, or the CPU plan's runs of rows a work-item
   (lookup.serial); the calling thread (lookup.host_rows, whatever the
   device); or three host threads (lookup.host_threads; calls of a few
   thousand rows and more are split among them). */
#define CAT_PASSES 5
static const char *const cat_passes[CAT_PASSES] = {"item", "group", "serial", "host", "threads"};
static inline void cat_pass_tune(tabcl_context *ctx, int pass) {
  if (pass < 0)
    tt_tune(ctx, "lookup.serial=auto;lookup.group_bytes=auto;lookup.host_rows=auto;"
                 "lookup.host_threads=auto");
  else if (pass == 4)
    tt_tune(ctx, "lookup.serial=auto;lookup.group_bytes=auto;lookup.host_rows=0;"
                 "lookup.host_threads=3");
  else if (pass == 3)
    tt_tune(ctx, "lookup.serial=auto;lookup.group_bytes=auto;lookup.host_rows=1099511627776;"
                 "lookup.host_threads=auto");
  else if (pass == 2)
    tt_tune(ctx, "lookup.serial=3;lookup.group_bytes=auto;lookup.host_rows=0;"
                 "lookup.host_threads=0");
  else
    tt_tune(ctx, "lookup.serial=0;lookup.group_bytes=%s;lookup.host_rows=0;lookup.host_threads=0",
            pass == 0 ? "1099511627776" : "0");
}

/* An align's plan: -1 as tuned, 0 the device's, 1 the calling thread's. */
static inline void cat_align_tune(tabcl_context *ctx, int host) {
  tt_tune(ctx, "lookup.host_rows=%s;lookup.host_threads=%s",
          host < 0 ? "auto" : host ? "1099511627776" : "0", host < 0 ? "auto" : host ? "1" : "0");
}

/* Looks queries up in idx once a plan (cat_passes, whatever the device:
   the table picks one of them), and compares every code with the reference
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
  for (int pass = 0; pass < CAT_PASSES; pass++) {
    cat_pass_tune(idx->ctx, pass);
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
        cr_expect_fail("%s (%s plan): column %d: %lld of %lld codes wrong; row %lld (%s, %zu "
                       "bytes, first byte %d) got %d, expected %d",
                       what, cat_passes[pass], c, (long long)bad, (long long)q[c].length,
                       (long long)first, p ? "present" : "null", n, p && n ? p[0] : -1,
                       codes[c][first], catref_code(&refs[c], &q[c], first));
      }
    }
  }
  cat_pass_tune(idx->ctx, -1);
  for (int c = 0; c < ncols; c++) {
    catref_free(&refs[c]);
    free(codes[c]);
  }
  free(refs);
  free(codes);
}

/* Builds the programs a fit, lookup and align use (the context keeps them),
   and the loop probe's (built the first time a CPU plan could loop long),
   so a leak baseline taken afterwards counts only what the calls leave. */
static inline void cat_warm(tabcl_context *ctx) {
  uint64_t limit;
  cr_assert_eq(tabcl__loop_limit(ctx, &limit), TABCL_OK, "loop probe: %s", tabcl_last_error());
  static const int64_t off[4] = {0, 1, 3, 300};
  static uint8_t data[300];
  memset(data, 'w', sizeof data);
  tabcl_strings_view v = {3, off, data, NULL};
  tabcl_category_index *idx = NULL;
  /* the device's fit plan: a fit on the calling thread builds nothing */
  tt_tune(ctx, "fit.host_labels=0");
  tabcl_status s = tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_POSITION, &idx);
  tt_tune(ctx, "fit.host_labels=auto");
  cr_assert_eq(s, TABCL_OK, "warm-up fit: %s", tabcl_last_error());
  int32_t got[3], in[3] = {0, 1, -1};
  int32_t *codes = got;
  for (int pass = 0; pass < CAT_PASSES; pass++) {
    cat_pass_tune(idx->ctx, pass);
    cr_assert_eq(tabcl_category_index_lookup(idx, 1, &v, &codes), TABCL_OK);
  }
  cat_pass_tune(idx->ctx, -1);
  tabcl_dictionary_view d = {v, 3, in};
  cr_assert_eq(tabcl_category_index_align(idx, 1, &d, &codes), TABCL_OK);
  tabcl_category_index_destroy(idx);
  /* the sort program past one tile too (a fit of more pairs than a tile
     builds it; within one tile, as above, the program without the
     register passes): the tests' fits take both */
  static tabcl__sort_plan sp;
  const tabcl__target tg = ctx->target;
  tabcl__sort_plan_make(&tg, (uint64_t)1 << 20, &sp);
  cl_program prog;
  cr_assert_eq(tabcl__program_get(ctx, "sort", sp.extra, &prog, NULL), TABCL_OK,
               "warm-up sort program: %s", tabcl_last_error());
}

/* Fits vocab in both orders, each on the device's plan and on the calling
   thread's where the fit is small enough for it (fit.host_labels), and
   checks lookups of q in each. */
static inline void cat_fit_and_expect(tabcl_context *ctx, int ncols, const tabcl_strings_view *vocab,
                                      const tabcl_strings_view *q, const char *what) {
  for (int run = 0; run < 4; run++) {
    const int o = run & 1;
    tt_tune(ctx, "fit.host_labels=%s", run >> 1 ? "4294967296" : "0");
    tabcl_category_index *idx = NULL;
    tabcl_status s = tabcl_category_index_fit(ctx, ncols, vocab, (tabcl_code_order)o, &idx);
    tt_tune(ctx, "fit.host_labels=auto");
    cr_assert_eq(s, TABCL_OK, "%s: fit: %s: %s", what, tabcl_status_name(s), tabcl_last_error());
    cr_expect_eq(tabcl_category_index_columns(idx), ncols);
    cat_expect_lookup(idx, ncols, vocab, (tabcl_code_order)o, q, what);
    tabcl_category_index_destroy(idx);
  }
}

#endif
