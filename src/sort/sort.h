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

tabcl_status tabcl__selfcheck_sort(tabcl_context *ctx);

/* Test-only, process-wide: force the local tile to `tile` pairs (a power of
   two >= 2; 0 = from the device) and cap the work-items of one launch
   (0 = the NDRange limit), so tiny inputs take every kernel path. */
void tabcl__sort_set_test_limits(unsigned tile, size_t max_items_per_launch);
#endif
