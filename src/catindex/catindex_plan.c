/* The plans of lookup and align: kernels, work-group sizes and slices
 * from the device, the tuning table and the sizes alone. No OpenCL call:
 * planner tests run them for hand-written devices. */
#include <stdio.h>
#include <string.h>

#include "catindex/catindex.h"

static int64_t tuned(const tabcl__tuning *t, tabcl__tune_key k, int64_t dflt) {
  return t->value[k] == TABCL__TUNE_AUTO ? dflt : t->value[k];
}

static size_t device_wg(const tabcl__device_desc *dev, size_t want) {
  size_t cap = dev->max_work_group_size;
  if (dev->max_work_item_sizes[0] < cap) cap = dev->max_work_item_sizes[0];
  size_t wg = 1;
  while (wg * 2 <= want && wg * 2 <= cap) wg *= 2;
  return wg;
}

void tabcl__lookup_plan_make(const tabcl__target *t, int64_t rows, int64_t bytes,
                             tabcl__lookup_plan *p) {
  memset(p, 0, sizeof *p);
  p->rows = rows;
  p->bytes = bytes;
  const int64_t avg = rows > 0 ? bytes / rows : 0;
  p->grouped = rows > 0 && avg >= tuned(t->tune, TABCL__TUNE_LOOKUP_GROUP_BYTES, 256);
  /* Lanes a query for the group kernel: enough that each reads ~16 bytes,
     but no more than 64 (lookup.group_lanes's measurement). */
  size_t lanes = (size_t)tuned(t->tune, TABCL__TUNE_LOOKUP_GROUP_LANES, 0);
  if (!lanes) {
    lanes = 32;
    while (lanes < 64 && (int64_t)lanes * 16 < avg) lanes *= 2;
  }
  p->lanes = device_wg(t->dev, lanes);
  p->item_wg = device_wg(t->dev, 128);
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
