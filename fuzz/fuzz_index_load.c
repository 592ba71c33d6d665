/* Fuzzes tabcl_category_index_load on arbitrary file contents. Any file
 * must give TABCL_OK, TABCL_CORRUPT_DATA, TABCL_IO_ERROR or
 * TABCL_OUT_OF_MEMORY, never a crash, and leak nothing. A file that loads
 * must give a working index: saved again and reloaded it has the same
 * columns and code counts, and it answers a lookup of empty columns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "runtime/internal.h"

static char in_path[512], out_path[600];

/* On the first input, not in LLVMFuzzerInitialize: PoCL's LLVM installs
   signal handlers, and libFuzzer only installs its own (which save the
   crashing input) where none is installed yet. */
static void setup(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(in_path, sizeof in_path, "%s/tabcl-fuzz-load-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(in_path);
  if (fd < 0) {
    perror("mkstemp");
    abort();
  }
  close(fd);
  snprintf(out_path, sizeof out_path, "%s.saved", in_path);
  /* Fit, save, load and look up once, so every kernel program is in the
     context's cache before the leak baselines are taken. */
  static const int64_t off[3] = {0, 1, 3};
  tabcl_strings_view v = {2, off, (const uint8_t *)"abc", NULL};
  tabcl_category_index *a = NULL, *b = NULL;
  int32_t codes[2], *cp = codes;
  if (tabcl_category_index_fit(fz_context(), 1, &v, TABCL_CODES_BY_POSITION, &a) ||
      tabcl_category_index_save(a, out_path) ||
      tabcl_category_index_load(fz_context(), out_path, &b) ||
      tabcl_category_index_lookup(b, 1, &v, &cp) || codes[0] != 0 || codes[1] != 1) {
    fprintf(stderr, "fuzz: warm-up failed: %s\n", tabcl_last_error());
    abort();
  }
  tabcl_category_index_destroy(a);
  tabcl_category_index_destroy(b);
  unlink(out_path);
}

static void cleanup(void) {
  unlink(in_path);
  unlink(out_path);
}

static void write_file(const char *path, const uint8_t *d, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
  static int ready;
  if (!ready++) {
    setup();
    atexit(cleanup);
  }
  tabcl_context *ctx = fz_context();
  write_file(in_path, in, size);
  long allocs = tabcl__alloc_live(), mems = tabcl__mem_live();
  tabcl_category_index *idx = (tabcl_category_index *)&allocs; /* must be overwritten */
  tabcl_status s = tabcl_category_index_load(ctx, in_path, &idx);
  fz_restore_signals();
  FZ_CHECK(s == TABCL_OK || s == TABCL_CORRUPT_DATA || s == TABCL_IO_ERROR ||
               s == TABCL_OUT_OF_MEMORY,
           "load returned %s", tabcl_status_name(s));
  if (s != TABCL_OK) {
    FZ_CHECK(idx == NULL || idx == (tabcl_category_index *)&allocs,
             "a failed load handed out an index");
    FZ_CHECK(tabcl_last_error()[0] != '\0', "a failed load gave no message");
  } else {
    int ncols = tabcl_category_index_columns(idx);
    FZ_CHECK(ncols >= 1, "a loaded index has %d columns", ncols);
    FZ_CHECK(tabcl_category_index_save(idx, out_path) == TABCL_OK, "re-save failed");
    tabcl_category_index *again = NULL;
    FZ_CHECK(tabcl_category_index_load(ctx, out_path, &again) == TABCL_OK, "reload failed");
    FZ_CHECK(tabcl_category_index_columns(again) == ncols, "reload changed the column count");
    tabcl_strings_view *q = calloc((size_t)ncols, sizeof *q);
    int32_t **codes = calloc((size_t)ncols, sizeof *codes);
    int32_t dummy = 0;
    static const int64_t zero = 0;
    for (int c = 0; c < ncols; c++) {
      FZ_CHECK(tabcl_category_index_codes(idx, c) == tabcl_category_index_codes(again, c),
               "column %d: %lld codes, %lld after a save and load", c,
               (long long)tabcl_category_index_codes(idx, c),
               (long long)tabcl_category_index_codes(again, c));
      FZ_CHECK(tabcl_category_index_codes(idx, c) >= 0, "column %d has negative codes", c);
      codes[c] = &dummy;
      q[c].offsets = &zero;
    }
    tabcl_status ls = tabcl_category_index_lookup(idx, ncols, q, codes);
    FZ_CHECK(ls == TABCL_OK, "lookup of empty columns in a loaded index: %s",
             tabcl_status_name(ls));
    free(q);
    free(codes);
    tabcl_category_index_destroy(again);
    tabcl_category_index_destroy(idx);
  }
  FZ_CHECK(tabcl__alloc_live() == allocs, "host allocations leaked: %ld -> %ld", allocs,
           tabcl__alloc_live());
  FZ_CHECK(tabcl__mem_live() == mems, "device buffers leaked: %ld -> %ld", mems,
           tabcl__mem_live());
  return 0;
}
