/* The device bitonic sort of (64-bit key, 32-bit value) pairs (sort.c,
 * cl/sort.cl), a primitive the categorical index builds on. */
#ifndef TABCL_SORT_H
#define TABCL_SORT_H
#include "runtime/internal.h"

/* Sorts n pairs in place, ascending by key and, among equal keys, by value,
   so the order is fully determined. Any n >= 0 (not only powers of two):
   missing elements up to the next power of two act as +infinity. Short
   strides run in local memory, long ones as global passes. Enqueued after
   `wait`; `ev` (may be NULL) completes when the pairs are sorted. */
tabcl_status tabcl__sort_pairs(tabcl_context *ctx, cl_mem keys /* ulong[n] */,
                               cl_mem values /* uint[n] */, size_t n, cl_uint nwait,
                               const cl_event *wait, cl_event *ev);
/* The same for the n pairs from element `at` of keys and values (one
   region of larger tables; the rest is neither read nor written). */
tabcl_status tabcl__sort_pairs_at(tabcl_context *ctx, cl_mem keys /* ulong[at + n] */,
                                  cl_mem values /* uint[at + n] */, size_t at, size_t n,
                                  cl_uint nwait, const cl_event *wait, cl_event *ev);

/* The same order on the host for n pairs (sort_host.c): a stable radix sort
   by key, so pairs that come in ascending value order leave ascending by
   (key, value), as the device sort leaves them. tkeys and tvalues are
   scratch of n each. */
void tabcl__sort_pairs_host(uint64_t *keys, uint32_t *values, size_t n, uint64_t *tkeys,
                            uint32_t *tvalues);

tabcl_status tabcl__selfcheck_sort(tabcl_context *ctx);

/* ---- the plan (sort_plan.c): pure, no OpenCL call ---- */

/* The largest register pass: 2^5 pairs a work-item, i.e. 5 stages per trip
   through memory, with 96 32-bit registers of pairs (GPUs have 128 to 255
   per work-item); a 2^24-pair sort then takes 24 passes of this kind
   instead of 28 with 16 pairs. */
#define TABCL__SORT_MAX_LOGR 5
/* Passes of a sort of up to 2^40 pairs: one local, then per merge level at
   most 40 register passes and a local finish. */
#define TABCL__SORT_MAX_STEPS 1024

/* One pass: logr 0 is the local-memory kernel over every tile (flip 1: the
   full tile sort, 0: the finish of a merge); else a register pass of logr
   stages from stride 2^logj down (flip 1 on the first of a merge). */
typedef struct tabcl__sort_step {
  unsigned logj, logr;
  int flip;
} tabcl__sort_step;

typedef struct tabcl__sort_plan {
  unsigned tile, wg;     /* pairs per local tile; its work-group size. The CPU plan
                            (serial): pairs a work-item's run, groups of 1 */
  int serial;            /* 1: sort_serial sorts and finishes runs (sort.serial), with a
                            scratch buffer of n keys and n values */
  uint64_t serial_loops; /* loop iterations a work-item of sort_serial runs, at most */
  size_t max_items;      /* work-items one launch may take */
  size_t gwg;            /* work-group size of the register passes (a kernel's own
                            limit may lower it when it is enqueued) */
  unsigned max_logr;     /* stages a register pass takes at most */
  char extra[64];        /* the build options: the local tile and wg, from the device alone */
  uint64_t n, tiles;
  int nsteps;
  tabcl__sort_step steps[TABCL__SORT_MAX_STEPS];
} tabcl__sort_plan;

void tabcl__sort_plan_make(const tabcl__target *t, uint64_t n, tabcl__sort_plan *p);
/* The smallest run of the CPU plan: shorter runs would add merge levels,
   two launches each, for work a work-item does in microseconds. */
#define TABCL__SORT_SERIAL_MIN_RUN 4096
uint64_t tabcl__sort_serial_loops(uint64_t run);
/* The plan a sort on ctx makes (sort.c): under the device's loop limit,
   measured first where the CPU plan's work-items could loop past
   TABCL__LOOPS_UNCHECKED; the probe's failure is the only error. */
tabcl_status tabcl__sort_plan_for(tabcl_context *ctx, uint64_t n, tabcl__sort_plan *p);
/* Work-items step st launches in all (split into launches of at most
   max_items, rounded to whole groups). */
uint64_t tabcl__sort_step_items(const tabcl__sort_plan *p, const tabcl__sort_step *st);
void tabcl__sort_plan_print(const tabcl__sort_plan *p, char *buf, size_t cap);
#endif
