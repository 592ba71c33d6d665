/* include/tabcl/tabcl_tools.h, the tools' interface: the platform walk, the
 * device description, tuning, programs and plans (the benchmarks' runners
 * are in tools_bench.c, the measurements in measure.c). The header repeats
 * some runtime prototypes; this file includes it beside the src/ headers
 * that declare them, so the compiler checks that both agree. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tabcl/tabcl_tools.h"
#include "runtime/internal.h"
#include "runtime/half.h"
#include "attention/sdpa.h"
#include "catindex/catindex.h"
#include "hash/hash.h"
#include "sort/sort.h"
#include "probe/measure.h"
#include "probe/variants.h"

/* ---- devices ---- */

typedef struct platform_list {
  tabcl__tools_platform *out;
  int cap, count;
} platform_list;

static tabcl_status keep_platform(void *arg, int index, cl_platform_id p, cl_int err,
                                  const cl_device_id *devs, int n) {
  platform_list *l = arg;
  l->count = index + 1;
  if (index >= l->cap) return TABCL_OK;
  tabcl__tools_platform *e = &l->out[index];
  memset(e, 0, sizeof *e);
  e->name_error = clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof e->name - 1, e->name, NULL);
  if (e->name_error != CL_SUCCESS) e->name[0] = '\0';
  e->devices_error = err;
  for (int i = 0; i < n && i < TABCL__TOOLS_MAX_DEVICES; i++) e->devices[e->ndevices++] = devs[i];
  return TABCL_OK;
}

cl_int tabcl__tools_platforms(tabcl__tools_platform *out, int cap, int *count) {
  platform_list l = {out, out ? cap : 0, 0};
  cl_int err = CL_SUCCESS;
  if (tabcl__platform_walk(keep_platform, &l, &err) != TABCL_OK) l.count = 0;
  *count = l.count;
  return err;
}

tabcl_status tabcl__tools_device_select(const char *selector, cl_device_id *out) {
  cl_platform_id p;
  return tabcl__device_select(selector, &p, out);
}

void tabcl__tools_build_options(const tabcl_context *ctx, char *buf, size_t cap) {
  tabcl__device_build_options(&ctx->info, buf, cap);
}

int tabcl__tools_is_nvidia(const tabcl_context *ctx) { return ctx->info.is_nvidia; }

const char *tabcl__tools_device_profile(const tabcl_context *ctx) { return ctx->info.profile; }

/* ---- the description a device profile makes ---- */

typedef struct rows {
  tabcl__tools_row *out;
  int cap, n;
} rows;

static void add_row(rows *r, const char *name, int error, const char *fmt, ...)
    TABCL_PRINTF(4, 5);
static void add_row(rows *r, const char *name, int error, const char *fmt, ...) {
  if (r->n < r->cap) {
    tabcl__tools_row *e = &r->out[r->n];
    snprintf(e->name, sizeof e->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    e->error = error;
  }
  r->n++;
}

static void limit_row(rows *r, const char *name, unsigned long long got,
                      unsigned long long own) {
  if (got == own) add_row(r, name, 0, "%llu", got);
  else add_row(r, name, 0, "%llu (device: %llu)", got, own);
}

int tabcl__tools_description(const tabcl_context *ctx, tabcl__tools_row *out, int cap) {
  rows r = {out, out ? cap : 0, 0};
  const tabcl__device_desc *d = &ctx->info;
  tabcl__device_desc own;
  add_row(&r, "device profile", 0, "%s", d->profile[0] ? d->profile : "none");
  if (tabcl__device_query(ctx->platform, ctx->device, &own) != TABCL_OK) {
    add_row(&r, "device's own description", 1, "%s", tabcl_last_error());
    own = *d;
  }
  for (int i = 0; i < tabcl__device_profile_count(); i++)
    if (strcmp(tabcl__device_profile_name(i), d->profile) == 0) {
      add_row(&r, "profile models", 0, "%s", tabcl__device_profile_family(i));
      add_row(&r, "profile sources", 0, "%s", tabcl__device_profile_source(i));
    }
  limit_row(&r, "max work-group size", d->max_work_group_size, own.max_work_group_size);
  for (int i = 0; i < 3; i++) {
    char name[40];
    snprintf(name, sizeof name, "max work-item size [%d]", i);
    limit_row(&r, name, d->max_work_item_sizes[i], own.max_work_item_sizes[i]);
  }
  limit_row(&r, "local memory (bytes)", d->local_mem_size, own.local_mem_size);
  limit_row(&r, "max allocation (bytes)", d->max_mem_alloc_size, own.max_mem_alloc_size);
  limit_row(&r, "global memory (bytes)", d->global_mem_size, own.global_mem_size);
  limit_row(&r, "compute units", d->compute_units, own.compute_units);
  limit_row(&r, "fp64", (unsigned long long)d->has_fp64, (unsigned long long)own.has_fp64);
  limit_row(&r, "fp16", (unsigned long long)d->has_fp16, (unsigned long long)own.has_fp16);
  limit_row(&r, "preferred work-group multiple", d->preferred_wg_multiple,
            own.preferred_wg_multiple);
  if (d->cl_major == own.cl_major && d->cl_minor == own.cl_minor)
    add_row(&r, "OpenCL version", 0, "%d.%d", d->cl_major, d->cl_minor);
  else
    add_row(&r, "OpenCL version", 0, "%d.%d (device: %d.%d)", d->cl_major, d->cl_minor,
            own.cl_major, own.cl_minor);
  add_row(&r, "OpenCL C version", 0, "%s", d->opencl_c_version);
  return r.n;
}

/* ---- tuning ---- */

int tabcl__tools_tune_count(void) { return TABCL__TUNE_COUNT; }

const char *tabcl__tools_tune_name(int k) { return tabcl__tune_key_name((tabcl__tune_key)k); }

void tabcl__tools_tune_describe(const tabcl_context *ctx, int k, char *buf, size_t cap) {
  if (k < 0 || k >= TABCL__TUNE_COUNT) {
    snprintf(buf, cap, "?");
    return;
  }
  tabcl__tune_describe(&ctx->tune, (tabcl__tune_key)k, buf, cap);
}

/* ---- programs ---- */

const char *tabcl__tools_cache_dir(const tabcl_context *ctx) { return ctx->cache_dir; }

typedef struct variant_report {
  tabcl__tools_variant_fn fn;
  void *arg;
} variant_report;

static void report_variant(const tabcl__variant *v, tabcl_status s, double ms, int from_cache,
                           void *arg) {
  const variant_report *r = arg;
  r->fn(v->program, v->options, v->what, s, ms, from_cache, r->arg);
}

int tabcl__tools_variants_build(tabcl_context *ctx, int shard, int shards,
                                tabcl__tools_variant_fn report, void *arg, double *cold_ms) {
  variant_report r = {report, arg};
  return tabcl__variants_build(ctx, shard, shards, report_variant, &r, cold_ms);
}

/* ---- plans ---- */

/* The hash and lookup plans as their calls make them (tabcl__hash_plan_for,
   tabcl__lookup_plan_for). */
tabcl_status tabcl__tools_hash_plan(tabcl_context *ctx, int64_t labels, int64_t bytes,
                                    int64_t max_label, char *text, size_t cap) {
  tabcl__hash_plan p;
  tabcl_status s = tabcl__hash_plan_for(ctx, labels, bytes, max_label, &p);
  if (s) return s;
  tabcl__hash_plan_print(&p, text, cap);
  return TABCL_OK;
}

tabcl_status tabcl__tools_sort_plan(const tabcl_context *ctx, uint64_t pairs, char *text,
                                    size_t cap) {
  const tabcl__target tg = ctx->target;
  tabcl__sort_plan *p = tabcl__malloc(sizeof *p);   /* its pass list is large for a stack */
  if (!p) return tabcl__fail(TABCL_OUT_OF_MEMORY, "sort plan: %zu bytes", sizeof *p);
  tabcl__sort_plan_make(&tg, pairs, p);
  tabcl__sort_plan_print(p, text, cap);
  tabcl__free(p);
  return TABCL_OK;
}

/* "route: calling thread (1 thread); " and its like, for a host route:
   the length written (text stays terminated). */
static int route_text(const tabcl__route_plan *r, char *text, size_t cap) {
  const int n = snprintf(text, cap, "route: %s (%d thread%s); ", tabcl__route_name(r->route),
                         r->threads, r->threads == 1 ? "" : "s");
  return n < 0 ? 0 : (size_t)n >= cap ? (int)cap - 1 : n;
}

tabcl_status tabcl__tools_lookup_plan(tabcl_context *ctx, int64_t rows, int64_t bytes,
                                      char *text, size_t cap) {
  const tabcl__target tg = ctx->target;
  /* against an index within lookup.host_index (a larger one takes the kernels) */
  const tabcl__route_plan r = tabcl__lookup_route(&tg, rows, bytes, 0);
  if (r.route != TABCL__ROUTE_DEVICE) {
    const int at = route_text(&r, text, cap);
    snprintf(text + at, cap - (size_t)at, "%lld rows, %lld bytes: the host XXH3, a search of "
             "the index's tables, mapped for reading once", (long long)rows, (long long)bytes);
    return TABCL_OK;
  }
  tabcl__lookup_plan p;
  /* every label of the average length, an index without kept collisions */
  tabcl_status s = tabcl__lookup_plan_for(ctx, rows, bytes, rows > 0 ? bytes / rows : 0, 1, &p);
  if (s) return s;
  const int at = snprintf(text, cap, "route: device; ");
  tabcl__lookup_plan_print(&p, text + at, cap - (size_t)at);
  return TABCL_OK;
}

tabcl_status tabcl__tools_fit_plan(const tabcl_context *ctx, int64_t labels, int64_t pairs,
                                   int64_t bytes, int64_t longest_col, char *text, size_t cap) {
  const tabcl__target tg = ctx->target;
  tabcl__fit_plan p;
  /* one column of labels of one length: its pairs are all the pairs, and
     it has nulls where fewer are present than there are labels */
  tabcl__fit_plan_make(&tg, labels, pairs, bytes, longest_col, pairs,
                       pairs < labels ? longest_col : 0, labels ? bytes / labels : 0, 0, &p);
  tabcl__fit_plan_print(&p, text, cap);
  return TABCL_OK;
}

tabcl_status tabcl__tools_align_plan(const tabcl_context *ctx, int ncols, int64_t rows,
                                     int64_t categories, char *text, size_t cap) {
  const tabcl__target tg = ctx->target;
  /* an align's route is its categories' lookup route (labels of 8 B here,
     an index within lookup.host_index) */
  const tabcl__route_plan r = tabcl__lookup_route(&tg, categories, categories * 8, 0);
  if (r.route != TABCL__ROUTE_DEVICE) {
    const int at = route_text(&r, text, cap);
    snprintf(text + at, cap - (size_t)at, "%lld rows over %lld categories: the host lookup of "
             "the categories, then each row's code through their table", (long long)rows,
             (long long)categories);
    return TABCL_OK;
  }
  tabcl__align_plan p;
  tabcl__align_plan_make(&tg, ncols, rows, categories, &p);
  const int at = snprintf(text, cap, "route: device; ");
  tabcl__align_plan_print(&p, text + at, cap - (size_t)at);
  return TABCL_OK;
}

tabcl_status tabcl__tools_sdpa_plan(tabcl_context *ctx, const tabcl_sdpa_desc *d, char *text,
                                    size_t cap) {
  const tabcl__target tg = ctx->target;
  tabcl__sdpa_facts f;
  tabcl__sdpa_plan p;
  tabcl_status s = tabcl__sdpa_facts_get(ctx, d, TABCL__SDPA_AUTO, &f);
  if (!s) s = tabcl__sdpa_plan_make(&tg, &f, d, TABCL__SDPA_AUTO, &p);
  /* attention has one route: its kernels on the device (the host call
     uploads, computes and downloads) */
  const int at = snprintf(text, cap, "route: device; ");
  if (!s) tabcl__sdpa_plan_print(&p, text + at, cap - (size_t)at);
  return s;
}
