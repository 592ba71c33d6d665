/* Splitting work so each launch stays inside the device's limits. */
#include "runtime/internal.h"

size_t tabcl__round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

int64_t tabcl__slice_items(const tabcl__target *t, uint64_t bytes_per_item,
                           uint64_t work_items_per_item) {
  uint64_t limit = (uint64_t)INT64_MAX;
  if (bytes_per_item) {
    uint64_t by_alloc = t->dev->max_mem_alloc_size / bytes_per_item;
    if (by_alloc < limit) limit = by_alloc;
  }
  /* NDRange sizes are size_t on the device; stay well inside 32 bits so
     kernels may index with int and global ids never wrap on 32-bit devices. */
  uint64_t ndrange = ((uint64_t)1 << 31) - t->dev->max_work_group_size;
  if (work_items_per_item) {
    uint64_t by_range = ndrange / work_items_per_item;
    if (by_range < limit) limit = by_range;
  }
  if (t->max_batch_per_launch > 0 && (uint64_t)t->max_batch_per_launch < limit)
    limit = (uint64_t)t->max_batch_per_launch;
  return limit ? (int64_t)limit : 1;
}

size_t tabcl__plan_wg(const tabcl__device_desc *dev, size_t want) {
  size_t cap = dev->max_work_group_size;
  if (dev->max_work_item_sizes[0] < cap) cap = dev->max_work_item_sizes[0];
  size_t wg = 1;
  while (wg * 2 <= want && wg * 2 <= cap) wg *= 2;
  return wg;
}
