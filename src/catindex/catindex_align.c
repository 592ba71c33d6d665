/* Aligning dictionary-encoded columns with a fitted index: look up each
 * column's own categories, then map its codes through one gather over a
 * concatenated table whose per-column blocks end in a -1 slot. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "catindex/catindex.h"

/* Parts of a threaded pass over a column's codes: at least this many bytes
   of them (4,096 rows). */
#define ALIGN_PART_BYTES ((size_t)16 << 10)

typedef struct codes_check {
  const int32_t *codes;
  int64_t categories;
  atomic_int bad;   /* some code in a part is outside [-1, categories) */
} codes_check;

/* One part of the threaded range check: the codes of bytes [at, at + n). */
static void check_part(void *dst, size_t at, size_t n, const void *arg) {
  (void)dst;
  /* the check itself is not const (the caller's own object): only its
     flag is written */
  codes_check *cc = (codes_check *)(uintptr_t)arg;
  const int32_t *k = cc->codes + at / sizeof *k;
  int bad = 0;
  for (size_t i = 0; i < n / sizeof *k; i++) bad |= k[i] < -1 || (int64_t)k[i] >= cc->categories;
  if (bad) atomic_store_explicit(&cc->bad, 1, memory_order_relaxed);
}

typedef struct codes_gather {
  const int32_t *in, *table;
} codes_gather;

/* Rows [at / 4, (at + n) / 4) of a column's codes mapped through its
   category table into dst (-1 stays -1). */
static void gather_part(void *dst, size_t at, size_t n, const void *arg) {
  const codes_gather *g = arg;
  int32_t *out = dst;
  const int32_t *in = g->in + at / sizeof *in;
  for (size_t i = 0; i < n / sizeof *out; i++) {
    const int32_t k = in[i];
    out[i] = k < 0 ? -1 : g->table[k];
  }
}

/* Every input column: its categories (validated once; longest[c] gets the
   longest label), its codes within [-1, categories) (on the context's
   threads for long columns: tabcl__align_row_threads), the output
   arrays. */
static tabcl_status check_inputs(tabcl_category_index *idx, const tabcl_dictionary_view *inputs,
                                 int ncols, int32_t *const *codes, const char *fn,
                                 int64_t *longest) {
  const tabcl__target tg = idx->ctx->target;
  tabcl_status st;
  for (int c = 0; c < ncols; c++) {
    const tabcl_dictionary_view *in = &inputs[c];
    if ((st = tabcl__strings_validate(&in->categories, fn, c, &longest[c]))) return st;
    if (in->length < 0)
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: length is %lld", fn, c,
                         (long long)in->length);
    if (in->length && !in->codes)
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: input codes are NULL for %lld rows",
                         fn, c, (long long)in->length);
    if (in->length && !codes[c])
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: codes is NULL for %lld rows", fn,
                         c, (long long)in->length);
    const int threads = tabcl__align_row_threads(&tg, in->length);
    if (threads > 1) {
      codes_check cc = {.codes = in->codes, .categories = in->categories.length};
      atomic_init(&cc.bad, 0);
      tabcl__workers_run(idx->ctx, threads, ALIGN_PART_BYTES, check_part,
                                 (void *)(uintptr_t)in->codes, 0,
                                 (size_t)in->length * sizeof *in->codes, &cc);
      if (!atomic_load(&cc.bad)) continue;
    }
    /* one thread, or a fault found: the first one, for the message */
    for (int64_t i = 0; i < in->length; i++) {
      int32_t k = in->codes[i];
      if (k < -1 || (int64_t)k >= in->categories.length)
        return tabcl__fail(TABCL_INVALID_ARGUMENT,
                           "%s: column %d: code %d at row %lld is outside [-1, %lld)", fn, c, k,
                           (long long)i, (long long)in->categories.length);
    }
  }
  return TABCL_OK;
}

/* The whole align on the host (catindex_host.c): each column's
   categories looked up into its block of one table, then every row's code
   mapped through it (on the context's threads for long columns). Nothing
   is written to codes before the one allocation has succeeded. */
static tabcl_status align_on_host(tabcl_category_index *idx, const tabcl__catindex_host *h,
                                  int threads, int ncols, const tabcl_dictionary_view *inputs,
                                  int32_t *const *codes, int64_t categories, const char *fn) {
  const tabcl__target tg = idx->ctx->target;
  int32_t *table = tabcl__malloc(((size_t)categories + 1) * sizeof *table);
  if (!table)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the category table of %lld entries", fn,
                       (long long)categories + 1);
  for (int c = 0; c < ncols; c++) {
    const tabcl_dictionary_view *in = &inputs[c];
    tabcl__catindex_host_lookup_n(idx, h, threads, c, &in->categories, table);
    const codes_gather g = {in->codes, table};
    const int row_threads = tabcl__align_row_threads(&tg, in->length);
    if (row_threads > 1)
      tabcl__workers_run(idx->ctx, row_threads, ALIGN_PART_BYTES, gather_part, codes[c], 0,
                                 (size_t)in->length * sizeof *codes[c], &g);
    else
      gather_part(codes[c], 0, (size_t)in->length * sizeof *codes[c], &g);
  }
  tabcl__free(table);
  return TABCL_OK;
}

tabcl_status tabcl_category_index_align(tabcl_category_index *idx, int ncols,
                                        const tabcl_dictionary_view *inputs,
                                        int32_t *const *codes) {
  static const char fn[] = "tabcl_category_index_align";
  tabcl_status st = tabcl__catindex_check(idx, ncols, fn);
  if (st) return st;
  if (!inputs || !codes)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s is NULL", fn, !inputs ? "inputs" : "codes");
  int64_t *longest = tabcl__calloc((size_t)ncols + 1, sizeof *longest);
  if (!longest)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       ncols);
  st = check_inputs(idx, inputs, ncols, codes, fn, longest);
  if (st) {
    tabcl__free(longest);
    return st;
  }
  int64_t rows = 0, categories = 0;
  for (int c = 0; c < ncols; c++) {
    rows += inputs[c].length;
    categories += inputs[c].categories.length;
  }
  tabcl__clear_error();
  if (!rows) {
    tabcl__free(longest);
    return TABCL_OK;
  }
  /* categories few enough for the calling thread (a CPU device): the
     gather too, since its rows cost less there than their copies */
  int64_t category_bytes = 0;
  for (int c = 0; c < ncols; c++) {
    const tabcl_strings_view *v = &inputs[c].categories;
    if (v->length) category_bytes += v->offsets[v->length] - v->offsets[0];
  }
  const tabcl__route_plan route = tabcl__catindex_route(idx, categories, category_bytes);
  const int on_host = route.route != TABCL__ROUTE_DEVICE;
  const tabcl__catindex_host *tables = NULL;
  if (on_host) st = tabcl__catindex_host_tables(idx, &tables);
  if (!st && on_host)
    st = align_on_host(idx, tables, route.threads, ncols, inputs, codes, categories, fn);
  if (st || on_host) {
    tabcl__free(longest);
    return st;
  }
  tabcl_context *ctx = idx->ctx;
  const tabcl__target tg = ctx->target;
  tabcl__align_plan plan;
  tabcl__align_plan_make(&tg, ncols, rows, categories, &plan);
  const int64_t tsize = plan.table_entries;
  const tabcl_strings_view **views = tabcl__calloc((size_t)ncols, sizeof *views);
  cl_mem *outs = tabcl__calloc((size_t)ncols, sizeof *outs);
  int64_t *tbase = tabcl__calloc((size_t)ncols + 1, sizeof *tbase);
  int64_t *rowstart = tabcl__calloc((size_t)ncols + 1, sizeof *rowstart);
  int32_t *in_codes = tabcl__malloc((size_t)rows * sizeof *in_codes);
  int32_t *host = tabcl__malloc((size_t)rows * sizeof *host);
  cl_mem table = NULL, din = NULL, dout = NULL, drow = NULL, dtb = NULL;
  cl_kernel k = NULL;
  if (!views || !outs || !tbase || !rowstart || !in_codes || !host) {
    st = tabcl__fail(TABCL_OUT_OF_MEMORY,
                     "%s: out of host memory for the codes of %lld rows and %d column records",
                     fn, (long long)rows, ncols);
    goto done;
  }
  for (int c = 0; c < ncols; c++) {
    tbase[c + 1] = tbase[c] + inputs[c].categories.length + 1;
    rowstart[c + 1] = rowstart[c] + inputs[c].length;
    if (inputs[c].length)
      memcpy(in_codes + rowstart[c], inputs[c].codes, (size_t)inputs[c].length * sizeof *in_codes);
  }
  /* -1 everywhere first, from the host: the lookup overwrites every slot
     but each block's last */
  {
    int32_t *minus = tabcl__malloc((size_t)tsize * sizeof *minus);
    if (!minus) {
      st = tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the category table of %lld entries", fn,
                       (long long)tsize);
      goto done;
    }
    for (int64_t i = 0; i < tsize; i++) minus[i] = -1;
    st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              (size_t)plan.table_bytes, minus, &table, "align table");
    tabcl__free(minus);
    if (st) goto done;
  }
  for (int c = 0; c < ncols; c++) {
    views[c] = &inputs[c].categories;
    outs[c] = table;
  }
  if ((st = tabcl__catindex_lookup_views(idx, views, longest, outs, tbase, fn))) goto done;
  const cl_mem_flags ro = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  if ((st = tabcl__buffer_create(ctx, ro, (size_t)plan.codes_bytes, in_codes, &din,
                                 "align input codes")) ||
      (st = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, (size_t)plan.codes_bytes, NULL, &dout,
                                 "align codes")) ||
      (st = tabcl__buffer_create(ctx, ro, ((size_t)ncols + 1) * 8, rowstart, &drow,
                                 "align row starts")) ||
      (st = tabcl__buffer_create(ctx, ro, ((size_t)ncols + 1) * 8, tbase, &dtb, "align blocks")) ||
      (st = tabcl__kernel_create(ctx, "catindex", tabcl__catindex_options(&ctx->tune), "catindex_align_gather", &k)))
    goto done;
  /* The plan's group size, lowered where the kernel allows fewer. */
  size_t wg = tabcl__wg_size(ctx, k, plan.gather_wg);
  int64_t step = plan.gather_step;
  cl_int nc = ncols;
  for (int64_t first = 0; first < rows && !st; first += step) {
    int64_t count = rows - first < step ? rows - first : step;
    st = TABCL_SET_ARGS(k, "catindex_align_gather", TABCL_ARG(din), TABCL_ARG(drow),
                        TABCL_ARG(dtb), TABCL_ARG(nc), TABCL_ARG(table), TABCL_ARG(dout),
                        TABCL_ARG(first), TABCL_ARG(rows));
    size_t global = tabcl__round_up((size_t)count, wg);
    if (!st) st = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, NULL, "catindex_align_gather");
  }
  if (st || (st = tabcl__download(ctx, dout, 0, (size_t)rows * 4, host))) goto done;
  for (int c = 0; c < ncols; c++)
    if (inputs[c].length)
      memcpy(codes[c], host + rowstart[c], (size_t)inputs[c].length * sizeof *host);
done:
  tabcl__kernel_release(k);
  tabcl__buffer_release(table);
  tabcl__buffer_release(din);
  tabcl__buffer_release(dout);
  tabcl__buffer_release(drow);
  tabcl__buffer_release(dtb);
  tabcl__free(longest);
  tabcl__free(views);
  tabcl__free(outs);
  tabcl__free(tbase);
  tabcl__free(rowstart);
  tabcl__free(in_codes);
  tabcl__free(host);
  return st;
}
