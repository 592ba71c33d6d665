/* cl-probe's parts: the report writer (cl-probe-report.c), the tuning and
 * plan reports (cl-probe-plan.c), the device-profile and variant reports
 * (cl-probe-variants.c) and the device walk (cl-probe.c). */
#ifndef TABCL_CL_PROBE_H
#define TABCL_CL_PROBE_H
#include "tabcl/tabcl_tools.h"

/* One writer for the text table and JSON (--json). */
extern int json_mode;
void json_string(const char *s);
void json_key(const char *key);
void json_open(const char *key, char bracket);
void json_close(char bracket);
void heading(const char *fmt, ...) TABCL__TOOLS_PRINTF(1, 2);
/* One named value of the report, or its error (error non-NULL). */
void row(const char *name, const char *error, const char *fmt, ...) TABCL__TOOLS_PRINTF(3, 4);

/* The tuning in force on ctx's device, key by key, with where each value
   came from. */
void probe_tuning(tabcl_context *ctx);
/* The plans of representative calls of every family on ctx's device. */
void probe_plans(tabcl_context *ctx);
/* The description the planners see (clamped by a device profile), beside
   the device's own values (cl-probe-variants.c). */
void probe_profile(tabcl_context *ctx);
/* The seconds from a fresh process's start to its first lookup, with empty
   caches and with the cache that run filled, then the same with the
   device's plans for the category index (cl-probe-start.c); the
   failures. first_lookup_main is the helper process it starts. */
int probe_cold_start(const char *sel, const char *profile);
int first_lookup_main(const char *device, const char *profile, int device_plans);
/* Builds every program variant the planners can choose; the failures. */
int probe_variants(tabcl_context *ctx, int shard, int shards);
#endif
