/* cl-probe's device-profile and program-variant reports: the description
 * the planners see under --device-profile (each clamped value beside the
 * device's own), and --all-variants, every program variant the planners
 * can choose built through the library's program cache. */
#include <stdio.h>

#include "cl-probe.h"

void probe_profile(tabcl_context *ctx) {
  const char *profile = tabcl__tools_device_profile(ctx);
  tabcl__tools_row rows[32];
  if (json_mode) json_open("description", '{');
  else heading("  Device description the planners see (profile %s)",
               profile[0] ? profile : "none");
  const int n = tabcl__tools_description(ctx, rows, 32);
  for (int i = 0; i < n && i < 32; i++)
    if (rows[i].error) row(rows[i].name, rows[i].text, NULL);
    else row(rows[i].name, NULL, "%s", rows[i].text);
  if (json_mode) json_close('}');
}

typedef struct variant_state {
  int count;
} variant_state;

static void report_variant(const char *program, const char *options, const char *what,
                           tabcl_status s, double ms, int from_cache, void *arg) {
  variant_state *st = arg;
  st->count++;
  const char *src = from_cache == 1 ? "disk cache" : from_cache == 0 ? "built" : "in memory";
  fprintf(stderr, "cl-probe: variant %d: %s \"%s\": %s\n", st->count, program, options,
          s ? tabcl_status_name(s) : src);
  if (json_mode) {
    json_open(NULL, '{');
    json_key("program");
    json_string(program);
    json_key("options");
    json_string(options);
    json_key("for");
    json_string(what);
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
    printf("  %-10s %-60s FAILED: %s (%.1f ms), for %s\n    %s\n", program, options,
           tabcl_status_name(s), ms, what, tabcl_last_error());
  } else {
    printf("  %-10s %-60s ok %8.1f ms  %s\n", program, options[0] ? options : "(none)",
           ms, src);
  }
}

int probe_variants(tabcl_context *ctx, int shard, int shards) {
  variant_state st = {0};
  double cold = 0;
  if (json_mode) json_open("variants", '[');
  else heading("  Every program variant the planners can choose (build options, time, source)");
  const int failures = tabcl__tools_variants_build(ctx, shard, shards, report_variant, &st, &cold);
  if (json_mode) json_close(']');
  char text[96];
  if (shards > 1)
    snprintf(text, sizeof text, "%d variants (share %d of %d), %d failed; %.1f s compiling from "
             "source", st.count, shard, shards, failures, cold * 1e-3);
  else
    snprintf(text, sizeof text, "%d variants, %d failed; %.1f s compiling from source", st.count,
             failures, cold * 1e-3);
  row("variants built", NULL, "%s", text);
  return failures;
}
