/* The plans of lookup and align: kernels, work-group sizes and slices
 * from the device, the tuning table and the sizes alone. No OpenCL call:
 * planner tests run them for hand-written devices. */
#include <stdio.h>
#include <string.h>

#include "catindex/catindex.h"

void tabcl__lookup_plan_make(const tabcl__target *t, int64_t rows, int64_t bytes,
                             tabcl__lookup_plan *p) {
  memset(p, 0, sizeof *p);
  p->rows = rows;
  p->bytes = bytes;
  const int64_t avg = rows > 0 ? bytes / rows : 0;
  p->grouped = rows > 0 && avg >= tabcl__tuned(t->tune, TABCL__TUNE_LOOKUP_GROUP_BYTES, 256);
  /* Lanes a query for the group kernel: enough that each reads ~16 bytes,
     but no more than 64 (lookup.group_lanes's measurement). */
  size_t lanes = (size_t)tabcl__tuned(t->tune, TABCL__TUNE_LOOKUP_GROUP_LANES, 0);
  if (!lanes) {
    lanes = 32;
    while (lanes < 64 && (int64_t)lanes * 16 < avg) lanes *= 2;
  }
  p->lanes = tabcl__plan_wg(t->dev, lanes);
  p->item_wg = tabcl__plan_wg(t->dev, 128);
  p->item_step = tabcl__slice_items(t, 0, 1);
  p->group_step = tabcl__slice_items(t, 0, p->lanes);
  p->candidate_bytes = p->grouped ? (uint64_t)rows * 8 : 0;
}

void tabcl__lookup_plan_print(const tabcl__lookup_plan *p, char *buf, size_t cap) {
  if (p->grouped)
    snprintf(buf, cap,
             "%lld rows, %lld bytes: catindex_probe (groups of %zu, %lld rows a launch), then "
             "catindex_lookup_group (%zu lanes a row, %lld rows a launch); candidates %llu B",
             (long long)p->rows, (long long)p->bytes, p->item_wg, (long long)p->item_step,
             p->lanes, (long long)p->group_step, (unsigned long long)p->candidate_bytes);
  else
    snprintf(buf, cap, "%lld rows, %lld bytes: catindex_lookup_item (groups of %zu, %lld rows a "
             "launch)", (long long)p->rows, (long long)p->bytes, p->item_wg,
             (long long)p->item_step);
}
