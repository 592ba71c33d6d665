/* Slicing work to a device's limits (slice.c). */
#ifndef TABCL_RUNTIME_SLICE_H
#define TABCL_RUNTIME_SLICE_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdint.h>

#include "runtime/context.h"

/* ---- slicing (slice.c) ------------------------------------------------ */

/* The most items one launch may take so that items * bytes_per_item fits
   in one allocation, items * work_items_per_item fits the NDRange, and
   items <= max_batch_per_launch when that is set. Always >= 1. */
int64_t tabcl__slice_items(const tabcl__target *t, uint64_t bytes_per_item,
                           uint64_t work_items_per_item);
/* The same for a context's own target. */
int64_t tabcl__slice_items_ctx(const tabcl_context *ctx, uint64_t bytes_per_item,
                               uint64_t work_items_per_item);
/* Rounds n up to a multiple of m (m > 0). */
size_t tabcl__round_up(size_t n, size_t m);
/* Planners: the largest power of two <= want that the device allows a
   1-D work-group. */
size_t tabcl__plan_wg(const tabcl__device_desc *dev, size_t want);
/* Executors: the same, also capped by kernel k's own limit. */
size_t tabcl__wg_size(const tabcl_context *ctx, cl_kernel k, size_t want);

#endif
