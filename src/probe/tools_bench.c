/* include/tabcl/tabcl_tools.h, the benchmarks' runners: hashing a column,
 * the pair sort, the index's memory figures and attention on a chosen
 * backend, each over the family's own entry points. */
#include <stdio.h>
#include <string.h>

#include "tabcl/tabcl_tools.h"
#include "runtime/internal.h"
#include "attention/sdpa.h"
#include "catindex/catindex.h"
#include "hash/hash.h"
#include "sort/sort.h"

/* ---- hashing ---- */

struct tabcl__tools_column {
  tabcl__dev_strings s;
};

tabcl_status tabcl__tools_column_upload(tabcl_context *ctx, const tabcl_strings_view *v,
                                        tabcl__tools_column **out) {
  *out = NULL;
  tabcl__tools_column *c = tabcl__calloc(1, sizeof *c);
  if (!c) return tabcl__fail(TABCL_OUT_OF_MEMORY, "column upload: %zu bytes", sizeof *c);
  tabcl_status s = tabcl__strings_upload(ctx, v, &c->s);
  if (s) {
    tabcl__free(c);
    return s;
  }
  *out = c;
  return TABCL_OK;
}

void tabcl__tools_column_release(tabcl__tools_column *c) {
  if (!c) return;
  tabcl__strings_release(&c->s);
  tabcl__free(c);
}

tabcl_status tabcl__tools_hash_column(tabcl_context *ctx, const tabcl__tools_column *c,
                                      uint64_t seed, cl_mem out, double *device_s) {
  tabcl__trace_begin();
  tabcl_status s = tabcl__hash_column(ctx, &c->s, 0, seed, ~0ULL, out, 0, 0, NULL, NULL);
  tabcl_status t = tabcl__trace_end(ctx, device_s, NULL);   /* it waits for the launches */
  return s ? s : t;
}

uint64_t tabcl__tools_label_hash(const void *bytes, size_t n, uint64_t seed) {
  return tabcl__label_hash(bytes, n, seed, 0, ~0ULL);
}

/* ---- the sort and the index ---- */

tabcl_status tabcl__tools_sort_pairs(tabcl_context *ctx, cl_mem keys, cl_mem values, size_t n,
                                     cl_uint nwait, const cl_event *wait, cl_event *ev) {
  return tabcl__sort_pairs(ctx, keys, values, n, nwait, wait, ev);
}

int64_t tabcl__tools_lookup_peak_bytes(int ncols, const tabcl_strings_view *queries) {
  return tabcl__catindex_lookup_peak_bytes(ncols, queries);
}

int64_t tabcl__tools_index_device_bytes(const tabcl_category_index *idx) {
  return idx ? idx->device_bytes : 0;
}

int64_t tabcl__tools_device_bytes_live(void) { return tabcl__mem_bytes_live(); }

int64_t tabcl__tools_device_bytes_peak_reset(void) { return tabcl__mem_bytes_peak_reset(); }

void tabcl__tools_pool_trim(tabcl_context *ctx) {
  if (ctx) tabcl__pool_trim(ctx);
}

/* ---- attention ---- */

static int backend(int path) {
  switch (path) {
    case TABCL__TOOLS_SDPA_FUSED: return TABCL__SDPA_FUSED;
    case TABCL__TOOLS_SDPA_MMA: return TABCL__SDPA_MMA;
    case TABCL__TOOLS_SDPA_CLBLAST: return TABCL__SDPA_CLBLAST;
    case TABCL__TOOLS_SDPA_CPU: return TABCL__SDPA_CPU;
    case TABCL__TOOLS_SDPA_AUTO: return TABCL__SDPA_AUTO;
    default: return -1;
  }
}

int tabcl__tools_sdpa_offered(const tabcl_context *ctx, const tabcl_sdpa_desc *d, int path) {
  tabcl__sdpa_mma_shape m;
  switch (path) {
    case TABCL__TOOLS_SDPA_AUTO:
    case TABCL__TOOLS_SDPA_FUSED: return 1;
    case TABCL__TOOLS_SDPA_MMA: return tabcl__sdpa_mma_tiles(ctx, d, &m);
    case TABCL__TOOLS_SDPA_CLBLAST: return tabcl__sdpa_clblast_available();
    case TABCL__TOOLS_SDPA_CPU: {
      /* where the tuning gives CPU plans (any device could run it) */
      char opts[128];
      return tabcl__tuned(&ctx->tune, TABCL__TUNE_SDPA_CPU) > 0 &&
             tabcl__sdpa_cpu_options(d, tabcl__sdpa_cpu_tiles(&ctx->target), opts, sizeof opts);
    }
    default: return 0;
  }
}

tabcl_status tabcl__tools_sdpa_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                                   cl_mem q, cl_mem k, cl_mem v, cl_mem mask, cl_mem out,
                                   cl_event *first, cl_event *last) {
  if (first) *first = NULL;
  if (last) *last = NULL;
  const int b = backend(path);
  if (b < 0) return tabcl__fail(TABCL_INVALID_ARGUMENT, "attention run: no backend %d", path);
  tabcl__sdpa_bufs bufs = {q, k, v, mask, out};
  tabcl__sdpa_events ev = {NULL, NULL, first != NULL, last != NULL};
  tabcl_status s = tabcl__sdpa_run(ctx, d, b, &bufs, 0, NULL, &ev);
  if (first) *first = ev.first;
  if (last) *last = ev.last;
  return s;
}

int tabcl__tools_sdpa_fused_tiles(const tabcl_context *ctx, tabcl_dtype dt, int head_dim,
                                  char *text, size_t cap) {
  tabcl__sdpa_tiles t;
  if (tabcl__sdpa_choose_tiles(ctx, dt, head_dim, &t) != 1) return 0;
  snprintf(text, cap,
           "%d queries x %d keys, %d work-items (%d across keys), K chunks of %d columns, V "
           "chunks of %d keys, %s, %zu bytes local",
           t.bq, t.bk, t.nt, t.tks, t.kc, t.vk, t.prefetch ? "prefetched" : "not prefetched",
           t.local_bytes);
  return 1;
}
