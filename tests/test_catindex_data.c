/* The categorical index on real data: string columns of public data sets
 * from the npm package vega-datasets (see tests/data/README.md). Fit on two
 * rows in three, look up every row (the held-out third included) and compare
 * with the host reference; save, load and look up again. */
#include <stdlib.h>
#include <string.h>

#include "catindex_checks.h"

/* tests/data, next to this file (or under $TABCL_TEST_SOURCE_DIR). */
static void data_path(const char *name, char *out, size_t cap) {
  const char *src = getenv("TABCL_TEST_SOURCE_DIR");
  if (src && *src) {
    snprintf(out, cap, "%s/tests/data/%s", src, name);
    return;
  }
  const char *here = __FILE__;
  const char *slash = strrchr(here, '/');
  int dir = slash ? (int)(slash - here) : 1;
  snprintf(out, cap, "%.*s/data/%s", dir, slash ? here : ".", name);
}

#define MAX_FIELDS 16

/* A CSV file read into one string column per field (RFC 4180 quoting; an
   empty unquoted field is a null). */
typedef struct csv {
  int nfields;
  char names[MAX_FIELDS][64];
  tt_strings col[MAX_FIELDS];
} csv;

static void read_csv(const char *name, csv *t) {
  char path[4096];
  data_path(name, path, sizeof path);
  size_t size;
  char *s = (char *)tt_slurp(path, &size);
  long n = (long)size;
  memset(t, 0, sizeof *t);
  char *field = malloc((size_t)n + 1);
  long i = 0;
  int row = 0;
  while (i < n) {
    int fno = 0;
    for (;;) {
      size_t len = 0;
      int quoted = 0;
      if (s[i] == '"') {
        quoted = 1;
        i++;
        while (i < n) {
          if (s[i] == '"' && s[i + 1] == '"') {
            field[len++] = '"';
            i += 2;
          } else if (s[i] == '"') {
            i++;
            break;
          } else {
            field[len++] = s[i++];
          }
        }
      }
      while (i < n && s[i] != ',' && s[i] != '\n' && s[i] != '\r') field[len++] = s[i++];
      cr_assert_lt(fno, MAX_FIELDS);
      if (row == 0) {
        snprintf(t->names[fno], sizeof t->names[fno], "%.*s", (int)len, field);
        tt_strings_init(&t->col[fno], 0);
      } else if (len == 0 && !quoted) {
        tt_strings_push_null(&t->col[fno]);
      } else {
        tt_strings_push(&t->col[fno], field, len);
      }
      fno++;
      if (i < n && s[i] == ',') {
        i++;
        continue;
      }
      while (i < n && (s[i] == '\r' || s[i] == '\n')) i++;
      break;
    }
    if (row == 0) t->nfields = fno;
    else cr_assert_eq(fno, t->nfields, "%s: row %d has %d fields", name, row, fno);
    row++;
  }
  free(field);
  free(s);
}

static void free_csv(csv *t) {
  for (int c = 0; c < t->nfields; c++) tt_strings_free(&t->col[c]);
}

static int field(const csv *t, const char *name) {
  for (int c = 0; c < t->nfields; c++)
    if (!strcmp(t->names[c], name)) return c;
  cr_assert_fail("no field %s", name);
  return -1;
}

/* Column c's rows with i % 3 != 0: the vocabulary; every row: the queries. */
static void fit_rows(const tt_strings *all, tt_strings *fit) {
  tabcl_strings_view v = tt_view(all);
  tt_strings_init(fit, 0);
  for (int64_t i = 0; i < v.length; i++) {
    if (i % 3 == 0) continue;
    size_t n;
    const uint8_t *p = tt_label(&v, i, &n);
    if (p) tt_strings_push(fit, p, n);
    else tt_strings_push_null(fit);
  }
}

static void check_file(tabcl_context *ctx, const char *name, const char *const *fields, int nf,
                       int64_t min_rows) {
  csv t;
  read_csv(name, &t);
  tt_strings fit[MAX_FIELDS];
  tabcl_strings_view vv[MAX_FIELDS], qv[MAX_FIELDS];
  for (int k = 0; k < nf; k++) {
    int c = field(&t, fields[k]);
    cr_assert_geq(t.col[c].length, min_rows, "%s: %lld rows", name, (long long)t.col[c].length);
    fit_rows(&t.col[c], &fit[k]);
    vv[k] = tt_view(&fit[k]);
    qv[k] = tt_view(&t.col[c]);
  }
  /* the held-out rows must include labels the fit never saw, or the test
     proves less than it claims */
  catref ref;
  catref_build(&ref, &vv[0], TABCL_CODES_BY_POSITION);
  int64_t unseen = 0;
  for (int64_t i = 0; i < qv[0].length; i++) unseen += catref_code(&ref, &qv[0], i) < 0;
  catref_free(&ref);
  cr_expect_gt(unseen, 0, "%s: every held-out %s was fitted", name, fields[0]);
  cat_fit_and_expect(ctx, nf, vv, qv, name);

  char *dir = tt_temp_dir("catdata");
  char path[4096];
  snprintf(path, sizeof path, "%s/index", dir);
  tabcl_category_index *idx = NULL, *back = NULL;
  tt_assert_ok(tabcl_category_index_fit(ctx, nf, vv, TABCL_CODES_BY_VALUE, &idx));
  tt_assert_ok(tabcl_category_index_save(idx, path));
  tt_assert_ok(tabcl_category_index_load(ctx, path, &back));
  cat_expect_lookup(back, nf, vv, TABCL_CODES_BY_VALUE, qv, "reloaded");
  tabcl_category_index_destroy(idx);
  tabcl_category_index_destroy(back);
  tt_remove_tree(dir);
  free(dir);
  for (int k = 0; k < nf; k++) tt_strings_free(&fit[k]);
  free_csv(&t);
}

Test(catindex_data, vega_airports) {
  tabcl_context *ctx = tt_context();
  static const char *const fields[] = {"city", "name", "state", "iata", "country"};
  check_file(ctx, "airports.csv", fields, 5, 3000);
  tabcl_context_destroy(ctx);
}

Test(catindex_data, vega_la_riots_with_missing_fields) {
  tabcl_context *ctx = tt_context();
  static const char *const fields[] = {"last_name", "neighborhood", "race", "gender", "type"};
  check_file(ctx, "la-riots.csv", fields, 5, 60);
  tabcl_context_destroy(ctx);
}
