/* The categorical index on bad input and under injected failures: every
 * rejected call leaves its outputs as they were, names the column (and row),
 * leaks nothing, and the index keeps working. */
#include <stdlib.h>
#include <string.h>

#include "catindex_checks.h"
#include "tabcl/tabcl_cl.h"

#define POISON 0x5A5A5A5A

static tabcl_strings_view words(tt_strings *s, int first, int n, int with_null) {
  tt_strings_init(s, 2);
  for (int i = 0; i < n; i++) {
    char w[32];
    int k = snprintf(w, sizeof w, "w%d", first + i * 3);
    if (with_null && i == 2) tt_strings_push_null(s);
    else tt_strings_push(s, w, (size_t)k);
  }
  return tt_view(s);
}

static void poison(int32_t *p, int n) {
  for (int i = 0; i < n; i++) p[i] = POISON;
}
static int poisoned(const int32_t *p, int n) {
  for (int i = 0; i < n; i++)
    if (p[i] != POISON) return 0;
  return 1;
}

#define EXPECT_FAIL(call, status, needle)                                                   \
  do {                                                                                      \
    tabcl_status st_ = (call);                                                              \
    cr_expect_eq(st_, status, "%s gave %s: %s", #call, tabcl_status_name(st_),              \
                 tabcl_last_error());                                                       \
    if (needle) cr_expect(strstr(tabcl_last_error(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", \
                          #call, tabcl_last_error(), (const char *)(needle));               \
  } while (0)

Test(catindex_errors, fit_rejects_bad_arguments) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  tt_live base = tt_live_now();
  tt_strings a, b;
  tabcl_strings_view v[2] = {words(&a, 0, 5, 0), words(&b, 1, 5, 1)};
  tabcl_category_index *sentinel = (tabcl_category_index *)&base, *out = sentinel;
  EXPECT_FAIL(tabcl_category_index_fit(NULL, 2, v, TABCL_CODES_BY_POSITION, &out), TABCL_INVALID_ARGUMENT, "ctx");
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, v, TABCL_CODES_BY_POSITION, NULL), TABCL_INVALID_ARGUMENT, "out");
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 0, v, TABCL_CODES_BY_POSITION, &out), TABCL_INVALID_ARGUMENT, "ncols");
  EXPECT_FAIL(tabcl_category_index_fit(ctx, -3, v, TABCL_CODES_BY_POSITION, &out), TABCL_INVALID_ARGUMENT, "ncols");
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, NULL, TABCL_CODES_BY_POSITION, &out), TABCL_INVALID_ARGUMENT, "vocabularies");
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, v, (tabcl_code_order)2, &out), TABCL_INVALID_ARGUMENT, "order");
  /* a bad view in column 1: decreasing offsets, negative length, NULL offsets, NULL data */
  int64_t saved = b.offsets[3];
  b.offsets[3] = b.offsets[2] - 1;
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, v, TABCL_CODES_BY_POSITION, &out), TABCL_INVALID_ARGUMENT, "column 1");
  b.offsets[3] = saved;
  tabcl_strings_view bad = v[1];
  bad.length = -1;
  tabcl_strings_view w2[2] = {v[0], bad};
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, w2, TABCL_CODES_BY_VALUE, &out), TABCL_INVALID_ARGUMENT, "column 1");
  w2[1] = v[1];
  w2[1].offsets = NULL;
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, w2, TABCL_CODES_BY_VALUE, &out), TABCL_INVALID_ARGUMENT, "column 1");
  w2[1] = v[1];
  w2[1].data = NULL;
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, w2, TABCL_CODES_BY_VALUE, &out), TABCL_INVALID_ARGUMENT, "column 1");
  w2[0] = v[0];
  w2[0].offsets = v[0].offsets + 1;   /* offsets[0] > 0 is a slice, fine; a negative one is not */
  int64_t neg[6] = {-1, 0, 1, 2, 3, 4};
  w2[0].offsets = neg;
  w2[1] = v[1];
  EXPECT_FAIL(tabcl_category_index_fit(ctx, 2, w2, TABCL_CODES_BY_VALUE, &out), TABCL_INVALID_ARGUMENT, "column 0");
  cr_expect_eq(out, sentinel, "a failed fit changed *out");
  /* the accessors on NULL and out of range */
  cr_expect_eq(tabcl_category_index_columns(NULL), 0);
  cr_expect_eq(tabcl_category_index_codes(NULL, 0), -1);
  tabcl_category_index_destroy(NULL);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 2, v, TABCL_CODES_BY_POSITION, &idx));
  cr_expect_eq(tabcl_category_index_codes(idx, 2), -1);
  cr_expect_eq(tabcl_category_index_codes(idx, -1), -1);
  cr_expect_eq(tabcl_category_index_codes(idx, 1), 5);
  tabcl_category_index_destroy(idx);
  tt_strings_free(&a);
  tt_strings_free(&b);
  tt_expect_no_leak(base);
  tabcl_context_destroy(ctx);
}

Test(catindex_errors, lookup_rejects_bad_arguments_and_writes_nothing) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  tt_strings a, b, qa, qb;
  tabcl_strings_view v[2] = {words(&a, 0, 6, 0), words(&b, 1, 6, 1)};
  tabcl_strings_view q[2] = {words(&qa, 0, 8, 1), words(&qb, 0, 8, 0)};
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 2, v, TABCL_CODES_BY_POSITION, &idx));
  tt_live base = tt_live_now();
  int32_t c0[8], c1[8];
  int32_t *codes[2] = {c0, c1};
  poison(c0, 8);
  poison(c1, 8);
  EXPECT_FAIL(tabcl_category_index_lookup(NULL, 2, q, codes), TABCL_INVALID_ARGUMENT, "idx");
  EXPECT_FAIL(tabcl_category_index_lookup(idx, 1, q, codes), TABCL_INVALID_ARGUMENT, "2 columns");
  EXPECT_FAIL(tabcl_category_index_lookup(idx, 3, q, codes), TABCL_INVALID_ARGUMENT, "ncols");
  EXPECT_FAIL(tabcl_category_index_lookup(idx, 2, NULL, codes), TABCL_INVALID_ARGUMENT, "queries");
  EXPECT_FAIL(tabcl_category_index_lookup(idx, 2, q, NULL), TABCL_INVALID_ARGUMENT, "codes");
  int32_t *half[2] = {c0, NULL};
  EXPECT_FAIL(tabcl_category_index_lookup(idx, 2, q, half), TABCL_INVALID_ARGUMENT, "column 1");
  int64_t saved = qb.offsets[5];
  qb.offsets[5] = qb.offsets[4] - 1;
  EXPECT_FAIL(tabcl_category_index_lookup(idx, 2, q, codes), TABCL_INVALID_ARGUMENT, "column 1");
  qb.offsets[5] = saved;
  tabcl_strings_view nodata[2] = {q[0], q[1]};
  nodata[1].data = NULL;
  EXPECT_FAIL(tabcl_category_index_lookup(idx, 2, nodata, codes), TABCL_INVALID_ARGUMENT, "column 1");
  cr_expect(poisoned(c0, 8) && poisoned(c1, 8), "a rejected lookup wrote codes");
  tt_expect_no_leak(base);
  /* and the index still answers */
  cat_expect_lookup(idx, 2, v, TABCL_CODES_BY_POSITION, q, "after rejects");
  tabcl_category_index_destroy(idx);
  tt_strings_free(&a);
  tt_strings_free(&b);
  tt_strings_free(&qa);
  tt_strings_free(&qb);
  tabcl_context_destroy(ctx);
}

/* A long column's codes are checked, and on the host mapped, on the
   context's threads (tabcl__align_row_threads): a code out of range in the
   first, a middle or the last part is refused naming its row, with
   nothing written; the good call maps every row as the index looks its
   categories up. On the host path and on the device's. */
Test(catindex_errors, align_long_column_on_threads) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  enum { ROWS = 70000, NCAT = 40 };
  tt_strings a, ca;
  tabcl_strings_view v = words(&a, 0, 60, 0);
  tabcl_strings_view cv = words(&ca, 30, NCAT, 0);   /* half known, half not */
  int32_t *in = malloc(ROWS * sizeof *in), *out = malloc(ROWS * sizeof *out);
  int32_t catcode[NCAT];
  cr_assert(in && out);
  for (int i = 0; i < ROWS; i++) in[i] = i % 17 == 0 ? -1 : (int32_t)((i * 7) % NCAT);
  tabcl_dictionary_view d = {cv, ROWS, in};
  int32_t *outs[1] = {out}, *cats[1] = {catcode};
  for (int host = 1; host >= 0; host--) {
    tt_tune(ctx, host ? "lookup.host_threads=3" : "lookup.host_threads=3;lookup.host_rows=0;lookup.host_index=0");
    tabcl_category_index *idx = NULL;
    tt_assert_ok(tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_POSITION, &idx));
    tt_assert_ok(tabcl_category_index_lookup(idx, 1, &cv, cats));
    tt_live base = tt_live_now();
    static const int at[] = {0, ROWS / 2, ROWS - 1};
    for (int k = 0; k < 3; k++) {
      const int32_t keep = in[at[k]];
      in[at[k]] = NCAT;
      poison(out, ROWS);
      char row[32];
      snprintf(row, sizeof row, "row %d ", at[k]);
      const char *needle = row;
      EXPECT_FAIL(tabcl_category_index_align(idx, 1, &d, outs), TABCL_INVALID_ARGUMENT, needle);
      cr_expect(poisoned(out, ROWS), "host %d, a bad code at row %d: outputs written", host, at[k]);
      in[at[k]] = keep;
    }
    tt_expect_no_leak(base);
    poison(out, ROWS);
    tt_assert_ok(tabcl_category_index_align(idx, 1, &d, outs));
    int wrong = 0;
    for (int i = 0; i < ROWS && wrong < 3; i++) {
      const int32_t want = in[i] < 0 ? -1 : catcode[in[i]];
      if (out[i] != want) {
        wrong++;
        cr_expect_fail("host %d row %d: %d, expected %d", host, i, out[i], want);
      }
    }
    tabcl_category_index_destroy(idx);
  }
  free(in);
  free(out);
  tt_strings_free(&a);
  tt_strings_free(&ca);
  tabcl_context_destroy(ctx);
}

Test(catindex_errors, align_rejects_codes_out_of_range_naming_column_and_row) {
  tabcl_context *ctx = tt_context();
  cat_warm(ctx);
  tt_strings a, b, ca, cb;
  tabcl_strings_view v[2] = {words(&a, 0, 6, 0), words(&b, 1, 6, 1)};
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 2, v, TABCL_CODES_BY_VALUE, &idx));
  tt_live base = tt_live_now();
  int32_t in0[5] = {0, 1, -1, 2, 3}, in1[5] = {4, 0, -1, 1, 2};
  int32_t o0[5], o1[5];
  int32_t *outs[2] = {o0, o1};
  tabcl_dictionary_view d[2] = {{words(&ca, 0, 4, 0), 5, in0}, {words(&cb, 1, 5, 0), 5, in1}};
  static const int32_t bad_codes[] = {5, 99, -2, INT32_MIN, INT32_MAX};
  for (int k = 0; k < 5; k++) {
    poison(o0, 5);
    poison(o1, 5);
    in1[3] = bad_codes[k];
    tabcl_status s = tabcl_category_index_align(idx, 2, d, outs);
    cr_expect_eq(s, TABCL_INVALID_ARGUMENT, "code %d: %s", bad_codes[k], tabcl_status_name(s));
    const char *msg = tabcl_last_error();
    cr_expect(strstr(msg, "column 1") && strstr(msg, "row 3"), "code %d: %s", bad_codes[k], msg);
    cr_expect(poisoned(o0, 5) && poisoned(o1, 5), "code %d: outputs written", bad_codes[k]);
  }
  in1[3] = 1;
  poison(o0, 5);
  poison(o1, 5);
  EXPECT_FAIL(tabcl_category_index_align(idx, 1, d, outs), TABCL_INVALID_ARGUMENT, "ncols");
  EXPECT_FAIL(tabcl_category_index_align(idx, 2, NULL, outs), TABCL_INVALID_ARGUMENT, "inputs");
  EXPECT_FAIL(tabcl_category_index_align(idx, 2, d, NULL), TABCL_INVALID_ARGUMENT, "codes");
  tabcl_dictionary_view e[2] = {d[0], d[1]};
  e[0].codes = NULL;
  EXPECT_FAIL(tabcl_category_index_align(idx, 2, e, outs), TABCL_INVALID_ARGUMENT, "column 0");
  e[0] = d[0];
  e[1].length = -1;
  EXPECT_FAIL(tabcl_category_index_align(idx, 2, e, outs), TABCL_INVALID_ARGUMENT, "column 1");
  e[1] = d[1];
  e[1].categories.offsets = NULL;
  EXPECT_FAIL(tabcl_category_index_align(idx, 2, e, outs), TABCL_INVALID_ARGUMENT, "column 1");
  int32_t *half[2] = {o0, NULL};
  EXPECT_FAIL(tabcl_category_index_align(idx, 2, d, half), TABCL_INVALID_ARGUMENT, "column 1");
  cr_expect(poisoned(o0, 5) && poisoned(o1, 5));
  tt_expect_no_leak(base);
  /* the good call: -1 stays -1, the rest map through the index */
  tt_assert_ok(tabcl_category_index_align(idx, 2, d, outs));
  for (int c = 0; c < 2; c++) {
    catref ref;
    catref_build(&ref, &v[c], TABCL_CODES_BY_VALUE);
    for (int i = 0; i < 5; i++) {
      int32_t want = catref_align_code(&ref, &d[c], i);
      cr_expect_eq(outs[c][i], want, "column %d row %d: %d, expected %d", c, i, outs[c][i], want);
    }
    catref_free(&ref);
  }
  tabcl_category_index_destroy(idx);
  tt_strings_free(&a);
  tt_strings_free(&b);
  tt_strings_free(&ca);
  tt_strings_free(&cb);
  tabcl_context_destroy(ctx);
}

#ifdef TABCL_FAULT_INJECTION
/* Vocabulary and queries for the sweeps: short and long labels (both hash
   paths and both lookup kernels), duplicates and nulls. */
typedef struct sweep_data {
  tt_strings v[2], q[2];
  tabcl_strings_view vv[2], qv[2];
} sweep_data;

static void sweep_data_init(sweep_data *d) {
  tt_rng r = {12345};
  uint8_t buf[700];
  for (int c = 0; c < 2; c++) {
    tt_strings_init(&d->v[c], 1);
    tt_strings_init(&d->q[c], 0);
    for (int i = 0; i < 40; i++) {
      size_t n = c == 1 && i % 3 == 0 ? 300 + (size_t)tt_below(&r, 300) : (size_t)tt_below(&r, 12);
      for (size_t k = 0; k < n; k++) buf[k] = (uint8_t)('a' + tt_below(&r, 3));
      if (i == 7) tt_strings_push_null(&d->v[c]);
      else tt_strings_push(&d->v[c], buf, n);
      tt_strings_push(&d->q[c], buf, n);
      if (i % 5 == 0) tt_strings_push_null(&d->q[c]);
    }
    d->vv[c] = tt_view(&d->v[c]);
    d->qv[c] = tt_view(&d->q[c]);
  }
}

static void sweep_data_free(sweep_data *d) {
  for (int c = 0; c < 2; c++) {
    tt_strings_free(&d->v[c]);
    tt_strings_free(&d->q[c]);
  }
}

/* OP_LOOKUP_STAGED: the host lookup with every transfer staged (as on
   GPUs), its codes drained from the staging area into the caller's arrays. */
enum { OP_FIT, OP_LOOKUP, OP_ALIGN, OP_LOOKUP_CL, OP_FIT_CL, OP_LOOKUP_STAGED };

static cl_mem device_copy(tabcl_context *ctx, const void *p, size_t n) {
  cl_int err;
  cl_mem m = clCreateBuffer(tabcl_context_cl_context(ctx), CL_MEM_READ_WRITE, n ? n : 1, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  if (p && n)
    cr_assert_eq(clEnqueueWriteBuffer(tabcl_context_cl_queue(ctx), m, CL_TRUE, 0, n, p, 0, NULL,
                                      NULL), CL_SUCCESS);
  return m;
}

/* which: 0 host allocations, 1 OpenCL calls. */
static void sweep(int which, int op) {
  tabcl_context *ctx = tt_context();
  if (op == OP_LOOKUP_STAGED) tt_staging(ctx, 1, 0);
  cat_warm(ctx);
  sweep_data d;
  sweep_data_init(&d);
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 2, d.vv, TABCL_CODES_BY_POSITION, &idx));
  int n0 = (int)d.qv[0].length, n1 = (int)d.qv[1].length;
  int32_t *c0 = malloc((size_t)n0 * 4), *c1 = malloc((size_t)n1 * 4);
  int32_t *codes[2] = {c0, c1};
  int32_t *in0 = malloc((size_t)n0 * 4);
  for (int i = 0; i < n0; i++) in0[i] = i % 7 - 1;
  tabcl_dictionary_view dict[2] = {{d.qv[0], n0, in0}, {d.qv[1], 0, NULL}};
  /* the device-resident lookup's inputs: column 0 exactly sized (copied
     into a padded buffer by the call), column 1 padded */
  tabcl_strings_cl dq[2], dv[2];
  cl_mem dcodes[2];
  for (int c = 0; c < 4; c++) {
    const tabcl_strings_view *v = c < 2 ? &d.qv[c] : &d.vv[c - 2];
    int64_t bytes = v->offsets[v->length] - v->offsets[0];
    int64_t *off = malloc((size_t)(v->length + 1) * 8);
    for (int64_t i = 0; i <= v->length; i++) off[i] = v->offsets[i] - v->offsets[0];
    size_t cap = c % 2 ? (size_t)(bytes + 7) / 8 * 8 + 8 : (size_t)bytes;
    uint8_t *data = calloc(cap + 1, 1);
    memcpy(data, v->data + v->offsets[0], (size_t)bytes);
    /* c 2 and 3: the vocabularies, for the fit from the device */
    (c < 2 ? dq : dv)[c % 2] = (tabcl_strings_cl){v->length, bytes, device_copy(ctx, data, cap),
                               device_copy(ctx, off, (size_t)(v->length + 1) * 8),
                               v->validity ? device_copy(ctx, v->validity, (size_t)(v->length + 7) / 8)
                                           : NULL,
                               0};
    if (c < 2) dcodes[c] = device_copy(ctx, NULL, (size_t)v->length * 4);
    free(off);
    free(data);
  }
  for (long n = 1; n < 100000; n++) {
    poison(c0, n0);
    poison(c1, n1);
    tt_live base = tt_live_now();
    tabcl_category_index *fitted = (tabcl_category_index *)&base;
    tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
    tabcl_status s;
    if (op == OP_FIT) s = tabcl_category_index_fit(ctx, 2, d.vv, TABCL_CODES_BY_VALUE, &fitted);
    else if (op == OP_LOOKUP || op == OP_LOOKUP_STAGED)
      s = tabcl_category_index_lookup(idx, 2, d.qv, codes);
    else if (op == OP_ALIGN) s = tabcl_category_index_align(idx, 2, dict, codes);
    else if (op == OP_FIT_CL) {
      cl_event ev = NULL;
      s = tabcl_category_index_fit_cl(ctx, 2, dv, TABCL_CODES_BY_VALUE, 0, NULL, &ev, &fitted);
      if (s == TABCL_OK) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
      } else {
        cr_expect_null(ev, "failure %ld handed out an event", n);
      }
    } else {
      cl_event ev = NULL;
      s = tabcl_category_index_lookup_cl(idx, 2, dq, dcodes, 0, NULL, &ev);
      if (s == TABCL_OK) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
      } else {
        cr_expect_null(ev, "failure %ld handed out an event", n);
      }
      clFinish(tabcl_context_cl_queue(ctx));
    }
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (!fired) {
      cr_expect_eq(s, TABCL_OK, "no fault, yet %s: %s", tabcl_status_name(s), tabcl_last_error());
      if ((op == OP_FIT || op == OP_FIT_CL) && s == TABCL_OK) {
        /* the fault-free fit is right */
        cat_expect_lookup(fitted, 2, d.vv, TABCL_CODES_BY_VALUE, d.qv, "the last fit");
        tabcl_category_index_destroy(fitted);
      }
      cr_log_info("%s sweep of op %d: %ld points", which ? "OpenCL" : "alloc", op, n - 1);
      break;
    }
    cr_expect_neq(s, TABCL_OK, "%s failure %ld in op %d was swallowed", which ? "OpenCL" : "alloc", n, op);
    if (s == TABCL_OK) {
      if (op == OP_FIT || op == OP_FIT_CL) tabcl_category_index_destroy(fitted);
      break;
    }
    cr_expect_neq(strlen(tabcl_last_error()), 0, "failure %ld gave no message", n);
    if (op == OP_FIT || op == OP_FIT_CL)
      cr_expect_eq(fitted, (tabcl_category_index *)&base, "failure %ld changed *out", n);
    else if (op != OP_LOOKUP_CL)
      cr_expect(poisoned(c0, n0) && poisoned(c1, n1), "failure %ld wrote codes", n);
    tt_expect_no_leak(base);
    if (n % 7 == 1) /* the index (and context) still work; not every time, to stay fast */
      cat_expect_lookup(idx, 2, d.vv, TABCL_CODES_BY_POSITION, d.qv, "after a failure");
  }
  cat_expect_lookup(idx, 2, d.vv, TABCL_CODES_BY_POSITION, d.qv, "after the sweep");
  if (op == OP_LOOKUP_CL) {
    /* the last, fault-free run wrote every code */
    catref ref;
    for (int c = 0; c < 2; c++) {
      int32_t *got = malloc((size_t)d.qv[c].length * 4);
      cr_assert_eq(clEnqueueReadBuffer(tabcl_context_cl_queue(ctx), dcodes[c], CL_TRUE, 0,
                                       (size_t)d.qv[c].length * 4, got, 0, NULL, NULL), CL_SUCCESS);
      catref_build(&ref, &d.vv[c], TABCL_CODES_BY_POSITION);
      int bad = 0;
      for (int64_t i = 0; i < d.qv[c].length; i++) bad += got[i] != catref_code(&ref, &d.qv[c], i);
      cr_expect_eq(bad, 0, "column %d: %d device codes wrong", c, bad);
      catref_free(&ref);
      free(got);
    }
  }
  for (int c = 0; c < 2; c++) {
    clReleaseMemObject(dq[c].data);
    clReleaseMemObject(dq[c].offsets);
    if (dq[c].validity) clReleaseMemObject(dq[c].validity);
    clReleaseMemObject(dv[c].data);
    clReleaseMemObject(dv[c].offsets);
    if (dv[c].validity) clReleaseMemObject(dv[c].validity);
    clReleaseMemObject(dcodes[c]);
  }
  tabcl_category_index_destroy(idx);
  free(c0);
  free(c1);
  free(in0);
  sweep_data_free(&d);
  tabcl_context_destroy(ctx);
}

/* A host lookup of long columns on a staged context with several workers
   (as on GPUs): codes against the reference; a decrease in the second column
   (at its last label, then in its middle) is TABCL_INVALID_ARGUMENT with
   validation's message, no code written and nothing leaked, on the
   device's plan and both host plans; then every host allocation and
   OpenCL call of the call fails in turn. */
Test(catindex_faults, long_lookup_bad_offsets_on_every_route) {
  tabcl_context *ctx = tt_context();
  tt_staging(ctx, 1, 0);
  tt_tune(ctx, "upload.threads=3;lookup.host_rows=0;lookup.host_threads=0;fit.host_labels=0");
  cat_warm(ctx);
  sweep_data d;
  sweep_data_init(&d);
  enum { N = 70000 };
  tt_strings q[2];
  for (int c = 0; c < 2; c++) {
    tt_strings_init(&q[c], 5);
    for (int64_t i = 0; i < N; i++) {
      const tabcl_strings_view *src = &d.qv[c];
      const int64_t k = (i * 7919) % src->length;
      if (!tabcl__strings_valid(src, k)) tt_strings_push_null(&q[c]);
      else tt_strings_push(&q[c], src->data + src->offsets[k],
                           (size_t)(src->offsets[k + 1] - src->offsets[k]));
    }
  }
  tabcl_strings_view qv[2] = {tt_view(&q[0]), tt_view(&q[1])};
  tabcl_category_index *idx = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, 2, d.vv, TABCL_CODES_BY_POSITION, &idx));
  cat_expect_lookup(idx, 2, d.vv, TABCL_CODES_BY_POSITION, qv, "long columns");
  int32_t *c0 = malloc(N * 4), *c1 = malloc(N * 4);
  int32_t *codes[2] = {c0, c1};
  int64_t *o = (int64_t *)(uintptr_t)qv[1].offsets;
  static const int64_t at[] = {N - 1, N / 2};
  /* on the device's plan, the calling thread and three host threads (the
     host plans check the offsets before they run, and must not run after
     a failed check) */
  static const char *const plans[] = {"lookup.host_rows=0;lookup.host_threads=0",
                                      "lookup.host_rows=1099511627776",
                                      "lookup.host_rows=0;lookup.host_threads=3"};
  for (size_t pk = 0; pk < 3 * 2; pk++) {
    const size_t k = pk % 2;
    tt_tune(ctx, "%s", plans[pk / 2]);
    /* label at[k] ends before it starts (its end moved back past its start) */
    const int64_t keep = o[at[k] + 1];
    o[at[k] + 1] = at[k] + 1 == N ? o[at[k]] : o[at[k]] - 1;
    if (at[k] + 1 == N) o[at[k]] += 1;   /* the last offsets: one decrease, sound ends */
    tabcl_strings_view bad = qv[1];
    cr_assert_eq(tabcl__strings_validate(&bad, "tabcl_category_index_lookup", 1, NULL),
                 TABCL_INVALID_ARGUMENT);
    char want[256];
    snprintf(want, sizeof want, "%s", tabcl_last_error());
    poison(c0, N);
    poison(c1, N);
    tt_live base = tt_live_now();
    tabcl_strings_view both[2] = {qv[0], bad};
    cr_expect_eq(tabcl_category_index_lookup(idx, 2, both, codes), TABCL_INVALID_ARGUMENT, "%s",
                 plans[pk / 2]);
    cr_expect_str_eq(tabcl_last_error(), want, "%s", plans[pk / 2]);
    cr_expect(poisoned(c0, N) && poisoned(c1, N), "%s: a rejected lookup wrote codes",
              plans[pk / 2]);
    tt_expect_no_leak(base);
    if (at[k] + 1 == N) o[at[k]] -= 1;
    o[at[k] + 1] = keep;
  }
  tt_tune(ctx, "lookup.host_rows=auto;lookup.host_threads=auto");
  for (int which = 0; which < 2; which++)
    for (long n = 1; n < 100000; n++) {
      poison(c0, N);
      poison(c1, N);
      tt_live base = tt_live_now();
      tabcl__fault_set(which == 0 ? n : 0, which == 1 ? n : 0);
      tabcl_status s = tabcl_category_index_lookup(idx, 2, qv, codes);
      int fired = tabcl__fault_fired();
      tabcl__fault_reset();
      if (!fired) {
        cr_expect_eq(s, TABCL_OK, "no fault, yet %s: %s", tabcl_status_name(s), tabcl_last_error());
        cr_log_info("long lookup, %s sweep: %ld points", which ? "OpenCL" : "alloc", n - 1);
        break;
      }
      cr_expect_neq(s, TABCL_OK, "%s failure %ld was swallowed", which ? "OpenCL" : "alloc", n);
      if (s == TABCL_OK) break;
      cr_expect(poisoned(c0, N) && poisoned(c1, N), "failure %ld wrote codes", n);
      tt_expect_no_leak(base);
    }
  cat_expect_lookup(idx, 2, d.vv, TABCL_CODES_BY_POSITION, qv, "after the sweeps");
  tabcl_category_index_destroy(idx);
  free(c0);
  free(c1);
  for (int c = 0; c < 2; c++) tt_strings_free(&q[c]);
  sweep_data_free(&d);
  tabcl_context_destroy(ctx);
}

Test(catindex_faults, fit_host_allocations) { sweep(0, OP_FIT); }
Test(catindex_faults, fit_opencl_calls) { sweep(1, OP_FIT); }
Test(catindex_faults, lookup_host_allocations) { sweep(0, OP_LOOKUP); }
Test(catindex_faults, lookup_opencl_calls) { sweep(1, OP_LOOKUP); }
Test(catindex_faults, staged_lookup_host_allocations) { sweep(0, OP_LOOKUP_STAGED); }
Test(catindex_faults, staged_lookup_opencl_calls) { sweep(1, OP_LOOKUP_STAGED); }
Test(catindex_faults, align_host_allocations) { sweep(0, OP_ALIGN); }
Test(catindex_faults, align_opencl_calls) { sweep(1, OP_ALIGN); }
Test(catindex_faults, device_lookup_host_allocations) { sweep(0, OP_LOOKUP_CL); }
Test(catindex_faults, device_lookup_opencl_calls) { sweep(1, OP_LOOKUP_CL); }
Test(catindex_faults, device_fit_host_allocations) { sweep(0, OP_FIT_CL); }
Test(catindex_faults, device_fit_opencl_calls) { sweep(1, OP_FIT_CL); }
#endif
