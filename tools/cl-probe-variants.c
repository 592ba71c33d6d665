/* cl-probe's device-profile and program-variant reports: the description
 * the planners see under --device-profile (each clamped value beside the
 * device's own), and --all-variants, every program variant the planners
 * can choose built through the library's program cache. */
#include <stdio.h>
#include <string.h>

#include "cl-probe.h"
#include "probe/variants.h"

static void limit_row(const char *name, unsigned long long got, unsigned long long own) {
  if (got == own) row(name, NULL, "%llu", got);
  else row(name, NULL, "%llu (device: %llu)", got, own);
}

void probe_profile(tabcl_context *ctx) {
  const tabcl__device_desc *d = &ctx->info;
  tabcl__device_desc own;
  if (json_mode) json_open("description", '{');
  else heading("  Device description the planners see (profile %s)",
               d->profile[0] ? d->profile : "none");
  row("device profile", NULL, "%s", d->profile[0] ? d->profile : "none");
  if (tabcl__device_query(ctx->platform, ctx->device, &own) != TABCL_OK) {
    row("device's own description", tabcl_last_error(), NULL);
    own = *d;
  }
  for (int i = 0; i < tabcl__device_profile_count(); i++)
    if (strcmp(tabcl__device_profile_name(i), d->profile) == 0) {
      row("profile models", NULL, "%s", tabcl__device_profile_family(i));
      row("profile sources", NULL, "%s", tabcl__device_profile_source(i));
    }
  limit_row("max work-group size", d->max_work_group_size, own.max_work_group_size);
  for (int i = 0; i < 3; i++) {
    char name[40];
    snprintf(name, sizeof name, "max work-item size [%d]", i);
    limit_row(name, d->max_work_item_sizes[i], own.max_work_item_sizes[i]);
  }
  limit_row("local memory (bytes)", d->local_mem_size, own.local_mem_size);
  limit_row("max allocation (bytes)", d->max_mem_alloc_size, own.max_mem_alloc_size);
  limit_row("global memory (bytes)", d->global_mem_size, own.global_mem_size);
  limit_row("compute units", d->compute_units, own.compute_units);
  limit_row("fp64", (unsigned long long)d->has_fp64, (unsigned long long)own.has_fp64);
  limit_row("fp16", (unsigned long long)d->has_fp16, (unsigned long long)own.has_fp16);
  limit_row("preferred work-group multiple", d->preferred_wg_multiple, own.preferred_wg_multiple);
  if (d->cl_major == own.cl_major && d->cl_minor == own.cl_minor)
    row("OpenCL version", NULL, "%d.%d", d->cl_major, d->cl_minor);
  else
    row("OpenCL version", NULL, "%d.%d (device: %d.%d)", d->cl_major, d->cl_minor, own.cl_major,
        own.cl_minor);
  row("OpenCL C version", NULL, "%s", d->opencl_c_version);
  if (json_mode) json_close('}');
}

typedef struct variant_state {
  int count;
} variant_state;

static void report_variant(const tabcl__variant *v, tabcl_status s, double ms, int from_cache,
                           void *arg) {
  variant_state *st = arg;
  st->count++;
  const char *src = from_cache == 1 ? "disk cache" : from_cache == 0 ? "built" : "in memory";
  fprintf(stderr, "cl-probe: variant %d: %s \"%s\": %s\n", st->count, v->program, v->options,
          s ? tabcl_status_name(s) : src);
  if (json_mode) {
    json_open(NULL, '{');
    json_key("program");
    json_string(v->program);
    json_key("options");
    json_string(v->options);
    json_key("for");
    json_string(v->what);
    json_key("ok");
    printf("%s", s ? "false" : "true");
    json_key("ms");
    printf("%.1f", ms);
    if (!s) {
      json_key("source");
      json_string(src);
    } else {
      json_key("error");
      json_string(tabcl_last_error());
    }
    json_close('}');
  } else if (s) {
    printf("  %-10s %-60s FAILED: %s (%.1f ms), for %s\n    %s\n", v->program, v->options,
           tabcl_status_name(s), ms, v->what, tabcl_last_error());
  } else {
    printf("  %-10s %-60s ok %8.1f ms  %s\n", v->program, v->options[0] ? v->options : "(none)",
           ms, src);
  }
}

int probe_variants(tabcl_context *ctx) {
  variant_state st = {0};
  double cold = 0;
  if (json_mode) json_open("variants", '[');
  else heading("  Every program variant the planners can choose (build options, time, source)");
  const int failures = tabcl__variants_build(ctx, report_variant, &st, &cold);
  if (json_mode) json_close(']');
  char text[96];
  snprintf(text, sizeof text, "%d variants, %d failed; %.1f s compiling from source", st.count,
           failures, cold * 1e-3);
  row("variants built", NULL, "%s", text);
  return failures;
}
