/* The workload of the disk-cache trust tests, shared by test_cache_trust.c
 * and the helper process cache_trust_worker.c: a fresh context on a given
 * cache folder fits an index, looks labels up and runs one attention call,
 * each answer checked against the tests' host references (tests/support). It
 * reports instead of asserting, so the helper (not a Criterion test) can
 * use it too. */
#ifndef TABCL_CACHE_TRUST_WORK_H
#define TABCL_CACHE_TRUST_WORK_H

#include <stdio.h>

#include "rel_common.h"

typedef struct ctw_result {
  tabcl_stats stats;      /* of the context, after the calls */
  char refusal[768];      /* what its disk cache refused, "" if nothing */
  char error[1024];       /* "" when every call succeeded and every answer was right */
} ctw_result;

static inline void ctw_lookup(tabcl_context *ctx, tt_rng *r, ctw_result *out) {
  tt_strings vocab, query;
  rel_column(r, &vocab, 40, 7);
  rel_column(r, &query, 90, 9);
  tabcl_strings_view v = tt_view(&vocab), q = tt_view(&query);
  catref ref;
  catref_build(&ref, &v, TABCL_CODES_BY_VALUE);
  int32_t got[90], want[90];
  tabcl_category_index *idx = NULL;
  int32_t *codes[1] = {got};
  tabcl_status s = tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_VALUE, &idx);
  if (!s) s = tabcl_category_index_lookup(idx, 1, &q, codes);
  if (s) {
    snprintf(out->error, sizeof out->error, "fit/lookup: %s: %s", tabcl_status_name(s),
             tabcl_last_error());
  } else {
    catref_lookup(&ref, &q, want);
    for (int64_t i = 0; i < q.length; i++)
      if (got[i] != want[i]) {
        snprintf(out->error, sizeof out->error, "lookup: label %lld got code %d, want %d",
                 (long long)i, got[i], want[i]);
        break;
      }
  }
  tabcl_category_index_destroy(idx);
  catref_free(&ref);
  tt_strings_free(&vocab);
  tt_strings_free(&query);
}

static inline void ctw_attention(tabcl_context *ctx, tt_rng *r, ctw_result *out) {
  tabcl_sdpa_desc d = {0};
  d.batch = 2;
  d.q_len = 9;
  d.kv_len = 11;
  d.q_heads = 2;
  d.kv_heads = 1;
  d.head_dim = 16;
  d.dtype = TABCL_F32;
  d.causal = 1;
  rel_sdpa_case c;
  rel_sdpa_case_make(r, &c, d);
  double *ref = malloc(c.nq * sizeof *ref);
  if (!ref) {
    snprintf(out->error, sizeof out->error, "attention: no memory for the reference");
  } else {
    tt_sdpa_reference(&c.d, c.q, c.k, c.v, NULL, ref, NULL);
    tabcl_status s = tabcl_sdpa_host(ctx, &c.d, c.q, c.k, c.v, NULL, c.out);
    double err = s ? 0 : rel_sdpa_error(&c, ref);
    if (s)
      snprintf(out->error, sizeof out->error, "attention: %s: %s", tabcl_status_name(s),
               tabcl_last_error());
    else if (!(err <= rel_sdpa_tol(d.dtype)))
      snprintf(out->error, sizeof out->error, "attention: error %g against float64", err);
  }
  free(ref);
  rel_sdpa_case_free(&c);
}

/* Runs the workload on a fresh context whose cache folder is cache_dir. */
static inline void ctw_run(const char *cache_dir, uint64_t seed, ctw_result *out) {
  memset(out, 0, sizeof *out);
  tabcl_options o = {0};
  o.cache_dir = cache_dir;
  /* Stores right after each build, so that a refusal is still there to
     read below: at the context's destroy (build.store=2, CPUs' default)
     nobody is left to hear it. The store is the same function either way. */
  o.tune = "build.store=1";
  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create(&o, &ctx);
  if (s) {
    snprintf(out->error, sizeof out->error, "tabcl_context_create: %s: %s", tabcl_status_name(s),
             tabcl_last_error());
    return;
  }
  tt_rng r = {seed};
  ctw_lookup(ctx, &r, out);
  if (!out->error[0]) ctw_attention(ctx, &r, out);
  tabcl_context_stats(ctx, &out->stats);
  tabcl__disk_cache_refusal(ctx, out->refusal, sizeof out->refusal);
  tabcl_context_destroy(ctx);
}

#endif
