/* Device ceilings (measure.c), used by cl-probe and tabcl-bench. */
#ifndef TABCL_MEASURE_H
#define TABCL_MEASURE_H
#include "runtime/internal.h"

/* Device time between the start of `start` and the end of `end`; -1 if the
   profiling information is missing. */
double tabcl__event_seconds(cl_event start, cl_event end);
/* Sorts v and returns its median. */
double tabcl__median(double *v, int n);
/* Wall-clock seconds, monotonic. */
double tabcl__wall_seconds(void);

/* Whether the device's profiling timer can be believed, found by timing the
   same work with both clocks: FMA launches of n and 3n iterations, n grown
   until a launch takes TABCL__TIMER_MIN_WALL_S of wall time. The extra work
   (3n less n) takes profiled_s by the profiling events and wall_s by the
   host's clock around launch and finish, differences in which the launch
   and wait overheads cancel. Trusted when profiled_s is within
   TABCL__TIMER_TOLERANCE of wall_s and no launch's profiled time exceeds
   its wall time by more than that. Some drivers return placeholder
   timestamps (Mesa 22.3's rusticl: 0, 1, 2, 3 ns for any kernel). */
#define TABCL__TIMER_TOLERANCE 0.25
#define TABCL__TIMER_MIN_WALL_S 0.05
typedef struct tabcl__timer_check {
  int trusted;
  double profiled_s, wall_s;
  int fma_iters; /* n: FMA iterations of a launch that took the minimum wall time */
} tabcl__timer_check;
tabcl_status tabcl__check_timer(tabcl_context *ctx, tabcl__timer_check *out);

/* A kernel copying `bytes` from one buffer to another; bytes read plus
   written per second, median of reps. wall_clock: time each launch by the
   host's clock (launch to finish) instead of the profiling events, for a
   device whose timer failed tabcl__check_timer. */
tabcl_status tabcl__measure_copy(tabcl_context *ctx, size_t bytes, int reps, int wall_clock,
                                 double *bytes_per_s);
/* Independent FMA chains; fp32 FLOP/s (an FMA counts 2), median of reps.
   Timed by wall clock, pass the check's fma_iters as iters if larger, so
   that launch overheads do not count for much. */
tabcl_status tabcl__measure_fma(tabcl_context *ctx, int iters, int reps, int wall_clock,
                                double *flops);
#endif
