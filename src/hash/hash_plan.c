/* The hash's plan for one column: which kernels, their work-group sizes,
 * the long-label lists and block sums, and the slices, from the device,
 * the tuning table and the column's length, bytes and longest label.
 * No OpenCL call: planner tests run it for hand-written devices. */
#include <stdio.h>
#include <string.h>

#include "hash/hash.h"

/* hash_big's group: eight lanes a 1 KiB unit, as many units as the
   longest label has, up to this many lanes. */
#define BIG_WG_MAX 128

/* Loop iterations of one label in hash_serial, at most (a loop the
   compiler unrolls counts as if it did not): the short paths at most 24;
   the long path 9 to start, each 64-byte stripe 19, each 1 KiB block 12
   more, the last stripe and the merge 48; one for the label's own trip.
   These counted the scalar stripe loops of an earlier long path; the
   vector one (a trip a stripe, a trip a block) stays well inside them.
   A work-item adds SERIAL_ITEM_LOOPS (the keys derived from the seed). */
#define SERIAL_ITEM_LOOPS 32
/* The same count for each whole 1 KiB block of a long label (16 stripes). */
#define SERIAL_BLOCK_LOOPS (19 * 16 + 12)
/* Labels a launch of hash_serial_part at most: its accumulators, 64 bytes
   a label, stay within 4 MiB. */
#define SERIAL_PART_SLICE ((int64_t)1 << 16)
static uint64_t serial_label_loops(int64_t len) {
  if (len <= 240) return 1 + 24;
  return 1 + 9 + 19 * ((uint64_t)len / 64 + 1) + 12 * ((uint64_t)len / 1024 + 1) + 48;
}

void tabcl__hash_plan_make(const tabcl__target *tg, int64_t length, int64_t bytes,
                           int64_t max_label, tabcl__hash_plan *p) {
  const tabcl__device_desc *dev = tg->dev;
  const tabcl__tuning *tune = tg->tune;
  memset(p, 0, sizeof *p);
  p->length = length;
  p->bytes = bytes;
  if (length <= 0) return;
  p->slice = tabcl__slice_items(tg, sizeof(uint64_t), 1);
  /* A CPU (hash.serial): a work-item hashes a run of labels whole, one
     after another; runs enough for hash.serial work-items a compute unit
     in a launch, so the threads share the work whatever the lengths. */
  const int64_t serial = tabcl__tuned(tune, TABCL__TUNE_HASH_SERIAL);
  if (serial > 0) {
    const int64_t n = length < p->slice ? length : p->slice;
    const int64_t items = (int64_t)(dev->compute_units ? dev->compute_units : 1) * serial;
    uint64_t run = (uint64_t)((n + items - 1) / items);
    /* Under a device's loop limit, runs short enough for it. */
    const uint64_t per_label = serial_label_loops(max_label), budget = tabcl__loop_budget(dev);
    const uint64_t most = budget > SERIAL_ITEM_LOOPS ? (budget - SERIAL_ITEM_LOOPS) / per_label : 0;
    p->options = "-DHASH_SERIAL_ONLY=1";
    p->wg_serial = 1;
    if (most >= 1) {
      if (run > most) run = most;
      p->serial_kernel = "hash_serial";
      p->serial_run = (uint32_t)run;
      p->serial_loops = SERIAL_ITEM_LOOPS + run * per_label;
      return;
    }
    /* A label too long for even a run of one: hash_serial_part, a label a
       work-item, as many 1 KiB blocks a launch as the limit allows, the
       accumulators (64 bytes a label) kept between launches. The same
       program, whatever the lengths. */
    const uint64_t fixed = SERIAL_ITEM_LOOPS + serial_label_loops(1024);
    const uint64_t blocks = (uint64_t)(max_label - 1) / 1024;
    uint64_t nb = budget > fixed + SERIAL_BLOCK_LOOPS ? (budget - fixed) / SERIAL_BLOCK_LOOPS : 1;
    if (nb > blocks) nb = blocks ? blocks : 1;
    p->serial_kernel = "hash_serial_part";
    p->serial_run = 1;
    p->part_blocks = nb;
    p->parts = blocks ? (blocks + nb - 1) / nb : 1;
    if (p->slice > SERIAL_PART_SLICE) p->slice = SERIAL_PART_SLICE;
    p->part_bytes = (uint64_t)(length < p->slice ? length : p->slice) * 64;
    p->serial_loops = fixed + nb * SERIAL_BLOCK_LOOPS;
    return;
  }
  p->group_min = tabcl__tuned(tune, TABCL__TUNE_HASH_GROUP_MIN);
  const int any_long = max_label > TABCL__HASH_SHORT_MAX;
  p->any_long = any_long;
  p->any_huge = max_label >= p->group_min;
  /* A column of mostly huge labels (an average of group_min bytes or
     more) goes straight to the block kernels, which take every label of
     group_min bytes or more themselves (direct), and the team kernel
     takes the others: no list, no counters. A column of longer labels (an
     average over hash.team_avg bytes) goes to teams of lanes label by
     label: they read a label's chunks side by side, and no listing pass
     reads the offsets first; it lists the huge ones. A column of labels
     of at most 240 bytes takes one work-item a label (hash_short). Else
     one work-item a label hashes what it can and lists the long ones for
     the teams (hash_short_list, hash_team). */
  const int64_t avg = bytes / length;
  p->direct = p->any_huge && avg >= p->group_min;
  p->team_all = p->direct || (any_long && avg > tabcl__tuned(tune, TABCL__TUNE_HASH_TEAM_AVG));
  p->list_huge = p->any_huge && !p->direct;
  p->lists = p->team_all ? p->list_huge : any_long;
  p->short_kernel = p->team_all ? NULL : any_long ? "hash_short_list" : "hash_short";
  /* hash.mid: 3 hash_team_all_flat, 5 hash_pair_all; the rule takes the
     two-lane kernel for the shorter averages (bench/history/2026-11-to-12.md,
     "Tuning: hash kernels") */
  const int mid = (int)tabcl__tuned_rule(
      tune, TABCL__TUNE_HASH_MID, avg <= tabcl__tuned(tune, TABCL__TUNE_HASH_MID_SPLIT) ? 5 : 3);
  p->pair = p->team_all && mid == 5;
  p->lanes = p->pair ? 2 : 4;
  p->teams_used = any_long || p->team_all;
  p->team_kernel = !p->teams_used ? NULL
                   : !p->team_all ? "hash_team"
                   : p->pair      ? "hash_pair_all"
                                  : "hash_team_all_flat";
  /* Words of local memory a work-item of the team kernel needs (the
     24-word secret comes on top): hash_pair_all's two rounds' buffers. */
  p->team_words = p->pair ? 4 : 2;
  /* labels of hash.group_min bytes or more: hash_big, one work-group a label */
  p->units_kernel = p->any_huge ? "hash_big" : NULL;
  p->wg_short = p->short_kernel ? tabcl__plan_wg(dev, 256) : 8;
  if (p->teams_used)
    p->wg_team = tabcl__plan_wg(dev, p->team_all ? (size_t)tabcl__tuned(tune, TABCL__TUNE_HASH_MID_WG)
                                            : 256);
  if (p->any_huge) {
    size_t want = (size_t)tabcl__tuned_rule(tune, TABCL__TUNE_HASH_BIG_WG, 0);
    if (!want) {
      const int64_t units = (max_label - 1) / 1024 + 1;
      want = 8;
      while (want < BIG_WG_MAX && (int64_t)(want / 8) < units) want *= 2;
    }
    p->wg_units = tabcl__plan_wg(dev, want);
  }
  const int64_t slice_max = length < p->slice ? length : p->slice;
  if (p->lists) {
    /* Each list holds at most one entry per label, and no more labels than
       the bytes allow; the team kernel needs only the list of huge labels. */
    uint64_t mid_cap = p->team_all ? 1 : (uint64_t)(bytes / (TABCL__HASH_SHORT_MAX + 1)) + 1;
    uint64_t huge_cap = (uint64_t)(bytes / p->group_min) + 1;
    if (mid_cap > (uint64_t)slice_max) mid_cap = (uint64_t)slice_max;
    if (huge_cap > (uint64_t)slice_max) huge_cap = (uint64_t)slice_max;
    p->mid_cap = (uint32_t)mid_cap;
    p->huge_cap = (uint32_t)huge_cap;
  }
}

void tabcl__hash_plan_print(const tabcl__hash_plan *p, char *buf, size_t cap) {
  if (p->length <= 0) {
    snprintf(buf, cap, "empty column: a marker only");
    return;
  }
  if (p->parts) {
    snprintf(buf, cap, "%lld labels, %lld bytes: %s (a label a work-item, %llu blocks of 1 KiB "
             "a launch, %llu launches a slice); %lld labels a slice; build \"%s\"",
             (long long)p->length, (long long)p->bytes, p->serial_kernel,
             (unsigned long long)p->part_blocks, (unsigned long long)p->parts,
             (long long)p->slice, p->options);
    return;
  }
  if (p->serial_kernel) {
    snprintf(buf, cap, "%lld labels, %lld bytes: %s (groups of %zu, %u labels a work-item); "
             "%lld labels a launch; build \"%s\"", (long long)p->length, (long long)p->bytes,
             p->serial_kernel, p->wg_serial, p->serial_run, (long long)p->slice, p->options);
    return;
  }
  int n = snprintf(buf, cap, "%lld labels, %lld bytes:", (long long)p->length,
                   (long long)p->bytes);
  const char *names[3] = {p->short_kernel, p->team_kernel, p->units_kernel};
  const size_t wgs[3] = {p->wg_short, p->wg_team, p->wg_units};
  const char *sep = " ";
  for (int i = 0; i < 3; i++) {
    if (!names[i] || n < 0 || (size_t)n >= cap) continue;
    n += snprintf(buf + n, cap - (size_t)n, "%s%s (groups of %zu)", sep, names[i], wgs[i]);
    sep = ", ";
  }
  if (n >= 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n,
             "; %lld labels a launch; lists of %u long and %u huge labels", (long long)p->slice,
             p->mid_cap, p->huge_cap);
}
