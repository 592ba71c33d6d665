/* Shared by the tabcl-bench families: arguments, timing and the device's
 * own ceilings, measured in the same run so every figure has its ratio. */
#ifndef TABCL_BENCH_H
#define TABCL_BENCH_H

#include "tabcl/tabcl_tools.h"

typedef struct bench_args {
  const char *device;
  int quick;     /* small sizes, for a smoke run on a CPU */
  int reps;      /* timed repetitions after one warm-up; the median is reported */
  const char *jsonl;    /* --jsonl PATH: every figure also appended there as one JSON line */
  const char *dump_dir; /* --dump DIR: benchmarks write their inputs there for the peers */
  const char *cases;    /* --cases A,B: only the cases whose name contains one of the parts */
} bench_args;

typedef int (*bench_fn)(tabcl_context *ctx, const bench_args *a);
typedef struct bench_entry {
  const char *name, *help;
  bench_fn run;
} bench_entry;

/* Seconds between two profiled events' start and end (device time). */
double bench_event_seconds(cl_event start, cl_event end);
/* Checks the device's profiling timer against the wall clock once
   (tabcl__check_timer), prints the verdict and records it in a->jsonl;
   1 when the timer failed the check (figures are then wall-clock times). */
int bench_timer_setup(tabcl_context *ctx, const bench_args *a);
/* The time to report for one run: device_s (from profiling events) when
   the timer passed its check, else wall_s, the host's clock around the
   same work (launch to finish). */
double bench_pick(double device_s, double wall_s);
/* Wall-clock seconds, monotonic. */
double bench_now(void);
double bench_median(double *v, int n);
/* Whether --cases (else $TABCL_BENCH_CASES) takes the case `name`: no filter,
   or a name containing one of its comma-separated parts. */
int bench_case_taken(const bench_args *a, const char *name);
/* Bytes of one element of dtype dt. */
size_t bench_elem_size(tabcl_dtype dt);

/* The device's copy bandwidth in bytes/s (read + write) and fp32 FMA peak
   in FLOP/s, measured once per process and remembered. */
double bench_copy_bandwidth(tabcl_context *ctx, int quick);
double bench_fma_peak(tabcl_context *ctx, int quick);
/* The device's round trip (tabcl__measure_round_trip), measured once a
   process; 0 on success. */
int bench_round_trip(tabcl_context *ctx, int quick, double *median_s, double *min_s);

/* Records one figure: printed nowhere (callers print their own tables),
   appended to a->jsonl as
   {"bench":"lookup","case":"...","metric":"lookup_ms","value":1.25,"unit":"ms"}
   so bench/report.py can join it with the peers' figures. */
void bench_record(const bench_args *a, const char *bench, const char *case_name,
                  const char *metric, double value, const char *unit);
/* The same with more fields: extra is JSON members without braces
   ("\"dtype\":\"f16\",\"shape\":{...}"), written after "unit"; NULL: none. */
void bench_record_fields(const bench_args *a, const char *bench, const char *case_name,
                         const char *metric, double value, const char *unit, const char *extra);

/* Host-device transfer rates in bytes/s, blocking calls timed by the wall
   clock: from and to pinned memory (a mapped CL_MEM_ALLOC_HOST_PTR buffer)
   and ordinary malloc'd memory; measured once per process. 0 on success. */
typedef struct bench_link {
  double h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable;
  size_t bytes;   /* of each transfer timed */
} bench_link;
int bench_link_bandwidth(tabcl_context *ctx, int quick, bench_link *out);

int bench_copy(tabcl_context *ctx, const bench_args *a);
int bench_sort(tabcl_context *ctx, const bench_args *a);
int bench_hash(tabcl_context *ctx, const bench_args *a);
int bench_attention(tabcl_context *ctx, const bench_args *a);
int bench_lookup(tabcl_context *ctx, const bench_args *a);
int bench_stream(tabcl_context *ctx, const bench_args *a);

#endif
