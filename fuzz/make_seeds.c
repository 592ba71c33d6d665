/* Writes the seed corpus of fuzz_index_load: valid saved indexes of a few
 * shapes (one and several columns, both code orders, nulls, empty labels,
 * an empty vocabulary, a long label) and damaged copies of two of them
 * (truncated, extended, one byte flipped). Usage: fuzz_make_seeds <folder> */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

typedef struct col {
  int n;
  const char *labels[8];   /* NULL entry = a null label */
} col;

static void build_view(const col *c, tabcl_strings_view *v, int64_t *off, uint8_t *data,
                       uint8_t *valid) {
  off[0] = 0;
  memset(valid, 0, 2);
  for (int i = 0; i < c->n; i++) {
    size_t n = c->labels[i] ? strlen(c->labels[i]) : 0;
    if (n) memcpy(data + off[i], c->labels[i], n);
    off[i + 1] = off[i] + (int64_t)n;
    if (c->labels[i]) valid[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  v->length = c->n;
  v->offsets = off;
  v->data = data;
  v->validity = valid;
}

static void save(const char *dir, const char *name, int ncols, const col *cols,
                 tabcl_code_order order) {
  static int64_t off[4][9];
  static uint8_t data[4][4096], valid[4][2];
  tabcl_strings_view v[4];
  for (int c = 0; c < ncols; c++) build_view(&cols[c], &v[c], off[c], data[c], valid[c]);
  tabcl_category_index *idx = NULL;
  FZ_CHECK(tabcl_category_index_fit(fz_context(), ncols, v, order, &idx) == TABCL_OK, "fit %s", name);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FZ_CHECK(tabcl_category_index_save(idx, path) == TABCL_OK, "save %s", path);
  tabcl_category_index_destroy(idx);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  FZ_CHECK(f != NULL, "open %s", path);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n + 1);
  FZ_CHECK(fread(b, 1, *n, f) == *n, "read %s", path);
  fclose(f);
  return b;
}

static void spit(const char *dir, const char *name, const unsigned char *b, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  FZ_CHECK(f && fwrite(b, 1, n, f) == n && fclose(f) == 0, "write %s", path);
}

static void damage(const char *dir, const char *name) {
  char path[4096], out[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t n;
  unsigned char *b = slurp(path, &n);
  size_t cuts[] = {0, 4, 8, n / 2, n > 1 ? n - 1 : 0};
  for (int i = 0; i < 5; i++) {
    snprintf(out, sizeof out, "%s.cut%zu", name, cuts[i]);
    spit(dir, out, b, cuts[i]);
  }
  unsigned char *e = malloc(n + 7);
  memcpy(e, b, n);
  memcpy(e + n, "EXTRA!!", 7);
  snprintf(out, sizeof out, "%s.extended", name);
  spit(dir, out, e, n + 7);
  if (n) {
    e[n / 2] ^= 0x40;
    snprintf(out, sizeof out, "%s.flipped", name);
    spit(dir, out, e, n);
  }
  free(e);
  free(b);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <folder>\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  static char longlabel[301];
  memset(longlabel, 'L', 300);
  col abc = {3, {"a", "b", "c"}};
  col mixed[2] = {{6, {"red", NULL, "", "green", "red", "\xff\xfe"}},
                  {4, {"x", "yy", "zzz", longlabel}}};
  col empty = {0, {NULL}};
  col blanks = {3, {"", "", ""}};
  col nulls = {2, {NULL, NULL}};
  save(dir, "one_column_by_position.idx", 1, &abc, TABCL_CODES_BY_POSITION);
  save(dir, "two_columns_by_value.idx", 2, mixed, TABCL_CODES_BY_VALUE);
  save(dir, "empty_vocabulary.idx", 1, &empty, TABCL_CODES_BY_POSITION);
  col three[3] = {blanks, nulls, abc};
  save(dir, "blank_null_abc.idx", 3, three, TABCL_CODES_BY_VALUE);
  damage(dir, "one_column_by_position.idx");
  damage(dir, "two_columns_by_value.idx");
  tabcl_context_destroy(fz_context());
  return 0;
}
