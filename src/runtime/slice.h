/* What a planner reads (tabcl__target), and slicing work to a device's
 * limits (slice.c). */
#ifndef TABCL_RUNTIME_SLICE_H
#define TABCL_RUNTIME_SLICE_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdint.h>

#include "runtime/device.h"
#include "runtime/tune.h"

/* What a planner reads: the device description, the tuning in force and
   the caller's launch cap. Plain data: tests build one by hand. */
typedef struct tabcl__target {
  const tabcl__device_desc *dev;
  const tabcl__tuning *tune;
  int64_t max_batch_per_launch;   /* 0 = device limits only */
  int host_cores;                 /* the host's online cores, for work a plan gives to host
                                     threads beside a GPU (0: unknown, taken as 1) */
} tabcl__target;

/* The most items one launch may take so that items * bytes_per_item fits
   in one allocation, items * work_items_per_item fits the NDRange, and
   items <= max_batch_per_launch when that is set. Always >= 1. */
int64_t tabcl__slice_items(const tabcl__target *t, uint64_t bytes_per_item,
                           uint64_t work_items_per_item);
/* Rounds n up to a multiple of m (m > 0). */
size_t tabcl__round_up(size_t n, size_t m);
/* Planners: the largest power of two <= want that the device allows a
   1-D work-group. */
size_t tabcl__plan_wg(const tabcl__device_desc *dev, size_t want);

#endif
