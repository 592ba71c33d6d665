/* Categorical encoding of one CSV column from host memory.
 *
 * Fits a category index on the column's first half (the "training" rows),
 * then encodes every row: code = rank of the label among the training
 * half's distinct labels (TABCL_CODES_BY_VALUE), -1 for a label the
 * training half never had. Checks every code against a sort on the host.
 *
 *   example_csv_encode [file.csv [column]]   (default: airports.csv, "state")
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tabcl/tabcl.h>

#ifndef EXAMPLE_CSV
#define EXAMPLE_CSV "airports.csv"
#endif

/* A string column in Arrow layout: label i is data[offsets[i] .. offsets[i + 1]). */
typedef struct column {
  int64_t length, cap;
  int64_t *offsets;
  uint8_t *data;
  size_t data_cap;
} column;

static int push(column *c, const char *s, size_t n) {
  if (c->length + 2 > c->cap) {
    c->cap = c->cap ? 2 * c->cap : 1024;
    int64_t *o = realloc(c->offsets, (size_t)c->cap * sizeof *o);
    if (!o) return 0;
    c->offsets = o;
    if (c->length == 0) c->offsets[0] = 0;
  }
  size_t at = (size_t)c->offsets[c->length];
  if (at + n > c->data_cap) {
    size_t cap = c->data_cap ? c->data_cap : 4096;
    while (cap < at + n) cap *= 2;
    uint8_t *d = realloc(c->data, cap);
    if (!d) return 0;
    c->data = d;
    c->data_cap = cap;
  }
  if (n) memcpy(c->data + at, s, n);
  c->offsets[++c->length] = (int64_t)(at + n);
  return 1;
}

/* Field `want` of one CSV line (quotes, "" inside quotes, commas inside
   quotes) into buf; returns its length, or -1 when the line is shorter. */
static long csv_field(const char *line, int want, char *buf, size_t cap) {
  int field = 0, quoted = 0;
  size_t n = 0;
  for (const char *p = line; *p && *p != '\n' && *p != '\r'; p++) {
    if (quoted && *p == '"' && p[1] == '"') {
      if (field == want && n < cap) buf[n++] = '"';
      p++;
    } else if (*p == '"') {
      quoted = !quoted;
    } else if (*p == ',' && !quoted) {
      if (field == want) return (long)n;
      field++;
    } else if (field == want && n < cap) {
      buf[n++] = *p;
    }
  }
  return field == want ? (long)n : -1;
}

static int read_column(const char *path, const char *name, column *col) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 0;
  }
  char line[4096], field[1024];
  int which = -1;
  if (fgets(line, sizeof line, f))
    for (int i = 0; which < 0; i++) {
      long n = csv_field(line, i, field, sizeof field);
      if (n < 0) break;
      if ((size_t)n == strlen(name) && !memcmp(field, name, (size_t)n)) which = i;
    }
  if (which < 0) {
    fprintf(stderr, "%s: no column named %s\n", path, name);
    fclose(f);
    return 0;
  }
  int ok = 1;
  while (ok && fgets(line, sizeof line, f)) {
    long n = csv_field(line, which, field, sizeof field);
    ok = push(col, field, n < 0 ? 0 : (size_t)n);
  }
  fclose(f);
  return ok;
}

/* The host's answer: the training labels' distinct values sorted by bytes
   (a prefix first), and a binary search among them. */
typedef struct label { const uint8_t *p; size_t n; } label;
static int label_cmp(const void *a, const void *b) {
  const label *x = a, *y = b;
  int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}
static label label_at(const column *c, int64_t i) {
  label l = {c->data + c->offsets[i], (size_t)(c->offsets[i + 1] - c->offsets[i])};
  return l;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : EXAMPLE_CSV;
  const char *name = argc > 2 ? argv[2] : "state";
  column col = {0};
  if (!read_column(path, name, &col) || col.length < 2) {
    fprintf(stderr, "could not read column %s of %s\n", name, path);
    return 1;
  }
  const int64_t train = col.length / 2;
  tabcl_strings_view vocab = {train, col.offsets, col.data, NULL};
  tabcl_strings_view all = {col.length, col.offsets, col.data, NULL};

  tabcl_context *ctx = NULL;
  tabcl_category_index *idx = NULL;
  int32_t *codes = malloc((size_t)col.length * sizeof *codes);
  tabcl_status s = codes ? tabcl_context_create(NULL, &ctx) : TABCL_OUT_OF_MEMORY;
  if (!s) s = tabcl_category_index_fit(ctx, 1, &vocab, TABCL_CODES_BY_VALUE, &idx);
  if (!s) s = tabcl_category_index_lookup(idx, 1, &all, &codes);
  if (s) {
    fprintf(stderr, "tabcl: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
    return 1;
  }
  printf("device: %s\n", tabcl_context_device_name(ctx));
  printf("column %s of %s: %lld rows, %lld categories in the first %lld\n", name, path,
         (long long)col.length, (long long)tabcl_category_index_codes(idx, 0), (long long)train);

  /* the check */
  label *sorted = malloc((size_t)train * sizeof *sorted);
  int64_t distinct = 0, unknown = 0, wrong = 0;
  if (!sorted) return 1;
  for (int64_t i = 0; i < train; i++) sorted[i] = label_at(&col, i);
  qsort(sorted, (size_t)train, sizeof *sorted, label_cmp);
  for (int64_t i = 0; i < train; i++)
    if (distinct == 0 || label_cmp(&sorted[distinct - 1], &sorted[i]) != 0)
      sorted[distinct++] = sorted[i];
  for (int64_t i = 0; i < col.length; i++) {
    label l = label_at(&col, i);
    label *hit = bsearch(&l, sorted, (size_t)distinct, sizeof *sorted, label_cmp);
    int32_t want = hit ? (int32_t)(hit - sorted) : -1;
    unknown += want < 0;
    if (codes[i] != want && wrong++ < 5)
      fprintf(stderr, "row %lld (%.*s): code %d, expected %d\n", (long long)i, (int)l.n,
              (const char *)l.p, codes[i], want);
    if (i < 5) printf("  row %lld: %-6.*s -> %d\n", (long long)i, (int)l.n, (const char *)l.p, codes[i]);
  }
  printf("%lld rows had a label the first half lacks (code -1)\n", (long long)unknown);
  int ok = wrong == 0 && distinct == tabcl_category_index_codes(idx, 0);
  printf("%s\n", ok ? "codes match the host's sort" : "WRONG codes");

  free(sorted);
  free(codes);
  tabcl_category_index_destroy(idx);
  tabcl_context_destroy(ctx);
  free(col.offsets);
  free(col.data);
  return ok ? 0 : 1;
}
