/* The hash's plan for one column: which kernels, their work-group sizes,
 * the long-label lists and block sums, and the slices, from the device,
 * the tuning table and the column's length, bytes and longest label.
 * No OpenCL call: planner tests run it for hand-written devices. */
#include <stdio.h>
#include <string.h>

#include "hash/hash.h"

/* At most this many teams of four lanes a label in hash_units (a label of
   more blocks gives each team several). */
#define SPAN_MAX_LOG2 6
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
    /* Under a device's loop limit, runs short enough for it; a label too
       long for even a run of one goes to the GPU kernels (below), whose
       block kernels split it. */
    const uint64_t per_label = serial_label_loops(max_label), budget = tabcl__loop_budget(dev);
    const uint64_t most = budget > SERIAL_ITEM_LOOPS ? (budget - SERIAL_ITEM_LOOPS) / per_label : 0;
    if (most >= 1) {
      if (run > most) run = most;
      p->serial_kernel = "hash_serial";
      p->options = "-DHASH_SERIAL_ONLY=1";
      p->serial_run = (uint32_t)run;
      p->serial_loops = SERIAL_ITEM_LOOPS + run * per_label;
      p->wg_serial = 1;
      return;
    }
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
  int mid = (int)tabcl__tuned_rule(tune, TABCL__TUNE_HASH_MID, 0);
  if (mid != 1 && mid != 3 && mid != 5)
    mid = avg <= tabcl__tuned(tune, TABCL__TUNE_HASH_MID_SPLIT) ? 5 : 3;
  const int big_v = (int)tabcl__tuned(tune, TABCL__TUNE_HASH_BIG);
  p->big = p->any_huge && big_v == 2;
  p->pair = p->team_all && mid == 5;
  p->lanes = p->pair ? 2 : 4;
  p->teams_used = any_long || p->team_all;
  p->team_kernel = !p->teams_used ? NULL
                   : !p->team_all ? "hash_team"
                   : p->pair      ? "hash_pair_all"
                   : mid == 3     ? "hash_team_all_flat"
                                  : "hash_team_all";
  /* Words of local memory a work-item of the team kernel needs (the
     24-word secret comes on top): hash_pair_all's two rounds' buffers. */
  p->team_words = p->pair ? 4 : 2;
  p->units_kernel = !p->any_huge ? NULL : p->big ? "hash_big" : "hash_units";
  p->chain_kernel = p->any_huge && !p->big ? "hash_chain" : NULL;
  p->wg_short = p->short_kernel ? tabcl__plan_wg(dev, 256) : 8;
  if (p->teams_used)
    p->wg_team = tabcl__plan_wg(dev, p->team_all ? (size_t)tabcl__tuned(tune, TABCL__TUNE_HASH_MID_WG)
                                            : 256);
  if (p->big) {
    size_t want = (size_t)tabcl__tuned_rule(tune, TABCL__TUNE_HASH_BIG_WG, 0);
    if (!want) {
      const int64_t units = (max_label - 1) / 1024 + 1;
      want = 8;
      while (want < BIG_WG_MAX && (int64_t)(want / 8) < units) want *= 2;
    }
    p->wg_units = tabcl__plan_wg(dev, want);
    p->wg_chain = 8;
  } else if (p->any_huge) {
    p->wg_units = tabcl__plan_wg(dev, 256);
    p->wg_chain = tabcl__plan_wg(dev, 256);
    /* Teams of four lanes a label in hash_units: enough for the longest
       label's units (a launch choice from max_label, not a build option),
       at most 64, or hash.group_wg / 4. */
    const int64_t units = (max_label - 1) / 1024 + 1;
    const size_t want = (size_t)tabcl__tuned_rule(tune, TABCL__TUNE_HASH_GROUP_WG, 0);
    unsigned span = 0;
    if (want) {
      while (((size_t)1 << (span + 1)) <= want / 4 && span < SPAN_MAX_LOG2) span++;
    } else {
      while (span < SPAN_MAX_LOG2 && ((int64_t)1 << span) < units) span++;
    }
    p->span_log2 = span;
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
  if (p->any_huge && !p->big) {
    /* One slot of eight sums per 1 KiB of data (see hash_units), and one
       per possible huge label for the tails. */
    p->block_sum_bytes = ((uint64_t)bytes / 1024 + 2) * 64;
    p->tail_sum_bytes = (p->direct ? (uint64_t)slice_max : (uint64_t)p->huge_cap) * 64;
  }
}

size_t tabcl__hash_groups(const tabcl__device_desc *dev, uint64_t items, size_t per_cu) {
  uint64_t cap = (uint64_t)(dev->compute_units ? dev->compute_units : 1) * per_cu;
  if (cap < 1) cap = 1;
  if (items < 1) items = 1;
  return (size_t)(items < cap ? items : cap);
}

void tabcl__hash_plan_print(const tabcl__hash_plan *p, char *buf, size_t cap) {
  if (p->length <= 0) {
    snprintf(buf, cap, "empty column: a marker only");
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
  const char *names[4] = {p->short_kernel, p->team_kernel, p->units_kernel, p->chain_kernel};
  const size_t wgs[4] = {p->wg_short, p->wg_team, p->wg_units, p->wg_chain};
  const char *sep = " ";
  for (int i = 0; i < 4; i++) {
    if (!names[i] || n < 0 || (size_t)n >= cap) continue;
    n += snprintf(buf + n, cap - (size_t)n, "%s%s (groups of %zu)", sep, names[i], wgs[i]);
    sep = ", ";
  }
  if (n >= 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n,
             "; %lld labels a launch; lists of %u long and %u huge labels; %llu B of block sums",
             (long long)p->slice, p->mid_cap, p->huge_cap,
             (unsigned long long)(p->block_sum_bytes + p->tail_sum_bytes));
}
