/* cl-probe's tuning and plan reports: the tuning in force for a device,
 * and (--plan) the plans of a few representative calls of each family, as
 * the planners make them for that device. Planning runs nothing on the
 * device. */
#include <stdio.h>
#include <string.h>

#include "cl-probe.h"

void probe_tuning(tabcl_context *ctx) {
  char line[512];
  if (json_mode) json_open("tuning", '{');
  else heading("  Tuning in force (key: value (origin))");
  for (int k = 0; k < tabcl__tools_tune_count(); k++) {
    tabcl__tools_tune_describe(ctx, k, line, sizeof line);
    if (json_mode) {
      json_key(tabcl__tools_tune_name(k));
      json_string(line);
    } else {
      printf("  %-32s %s\n", tabcl__tools_tune_name(k), line);
    }
  }
  if (json_mode) json_close('}');
}

static void plan_row(const char *name, tabcl_status s, const char *text) {
  if (json_mode) {
    json_key(name);
    json_string(s ? tabcl_last_error() : text);
  } else if (s) {
    printf("  %-32s %s: %s\n", name, tabcl_status_name(s), tabcl_last_error());
  } else {
    printf("  %-32s %s\n", name, text);
  }
}

void probe_plans(tabcl_context *ctx) {
  static char text[2048];
  if (json_mode) json_open("plans", '{');
  else heading("  Plans (planned for this device; nothing runs)");

  static const struct { const char *name; int64_t n, bytes, max; } columns[] = {
      {"hash 1e5 x 8 B", 100000, 800000, 8},
      {"hash 1e5 x 512 B", 100000, 51200000, 512},
      {"hash 2e4 x 4 KiB", 20000, 81920000, 4096},
      {"hash 4e3 x 64 KiB", 4000, 262144000, 65536},
  };
  for (size_t i = 0; i < sizeof columns / sizeof columns[0]; i++) {
    tabcl_status s = tabcl__tools_hash_plan(ctx, columns[i].n, columns[i].bytes, columns[i].max,
                                            text, sizeof text);
    plan_row(columns[i].name, s, text);
  }

  static const uint64_t pairs[] = {10007, (uint64_t)1 << 20, (uint64_t)1 << 24};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    char name[48];
    snprintf(name, sizeof name, "sort %llu pairs", (unsigned long long)pairs[i]);
    tabcl_status s = tabcl__tools_sort_plan(ctx, pairs[i], text, sizeof text);
    plan_row(name, s, text);
  }

  static const struct { const char *name; int64_t rows, bytes; } lookups[] = {
      {"lookup 1e3 x 8 B", 1000, 8000},
      {"lookup 1e5 x 8 B", 100000, 800000},
      {"lookup 1e5 x 4 KiB", 100000, 409600000},
  };
  for (size_t i = 0; i < sizeof lookups / sizeof lookups[0]; i++) {
    tabcl_status s = tabcl__tools_lookup_plan(ctx, lookups[i].rows, lookups[i].bytes, text,
                                              sizeof text);
    plan_row(lookups[i].name, s, text);
  }

  static const struct { const char *name; int64_t labels, bytes; } fits[] = {
      {"fit 1e3 x 8 B", 1000, 8000},
      {"fit 2e5 x 8 B", 200000, 1600000},
      {"fit 2e5 x 4 KiB", 200000, 819200000},
  };
  for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++) {
    tabcl_status s = tabcl__tools_fit_plan(ctx, fits[i].labels, fits[i].labels, fits[i].bytes,
                                           fits[i].labels, text, sizeof text);
    plan_row(fits[i].name, s, text);
  }
  {
    tabcl_status s = tabcl__tools_align_plan(ctx, 2, 1000000, 20000, text, sizeof text);
    plan_row("align 2 x 5e5 rows, 2e4 categories", s, text);
  }

  /* Attention: the tabular shape, a long sequence and a context call (its
     key split shows as "keys: S parts of N"), in each dtype, as
     the automatic choice plans them with the facts this context has
     (cl-probe's self-checks ran the tensor-core check before this). */
  static const char *const dtn[] = {"f32", "f16", "bf16", "f64"};
  static const struct { const char *name; int64_t b, lq, lk; int hq, hkv, d; } shapes[] = {
      {"tabular 2000x54x8 d64", 2000, 54, 54, 8, 8, 64},
      {"long 4x1024x16 d128", 4, 1024, 1024, 16, 16, 128},
      {"wide 2x300x4 d320", 2, 300, 300, 4, 4, 320},
      {"long keys 1x8x200000x1 d64", 1, 8, 200000, 1, 1, 64},
      /* a prediction's context call: few query tiles over many keys */
      {"context 1x512x40000x8 d64", 1, 512, 40000, 8, 8, 64},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int dt = TABCL_F32; dt <= TABCL_F64; dt++) {
      tabcl_sdpa_desc d = {shapes[i].b, shapes[i].lq, shapes[i].lk, shapes[i].hq, shapes[i].hkv,
                           shapes[i].d, (tabcl_dtype)dt, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
      tabcl_status s = tabcl__tools_sdpa_plan(ctx, &d, text, sizeof text);
      char name[64];
      snprintf(name, sizeof name, "attention %s %s", shapes[i].name, dtn[dt]);
      plan_row(name, s, text);
    }
  if (json_mode) json_close('}');
}
