/* Device ceilings (measure.c), used by cl-probe and tabcl-bench. */
#ifndef TABCL_MEASURE_H
#define TABCL_MEASURE_H
#include "runtime/internal.h"

/* Device time between the start of `start` and the end of `end`; -1 if the
   profiling information is missing. */
double tabcl__event_seconds(cl_event start, cl_event end);
/* Sorts v and returns its median. */
double tabcl__median(double *v, int n);
/* A kernel copying `bytes` from one buffer to another; bytes read plus
   written per second, median of reps. */
tabcl_status tabcl__measure_copy(tabcl_context *ctx, size_t bytes, int reps, double *bytes_per_s);
/* Independent FMA chains; fp32 FLOP/s (an FMA counts 2), median of reps. */
tabcl_status tabcl__measure_fma(tabcl_context *ctx, int iters, int reps, double *flops);
#endif
