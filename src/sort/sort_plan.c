/* The sort's plan: tile, work-group sizes and build options from the
 * device and the tuning table alone, then the passes for n pairs (one
 * local-memory sort per tile, then for each longer merge a few register
 * passes over global memory and one local-memory finish). No OpenCL call:
 * planner tests run it for hand-written devices. */
#include <stdio.h>
#include <string.h>

#include "sort/sort.h"

static unsigned log2_ceil(uint64_t x) {
  unsigned l = 0;
  while (((uint64_t)1 << l) < x) l++;
  return l;
}

/* Loop iterations of one sort_serial work-item on a run, at most: the
   insertion sort's groups, then a pass of the run a doubling width
   (cl/sort.cl; the finish is three passes). */
uint64_t tabcl__sort_serial_loops(uint64_t run) {
  return run * (log2_ceil(run) + 16);
}

void tabcl__sort_plan_make(const tabcl__target *tg, uint64_t n, tabcl__sort_plan *p) {
  const tabcl__device_desc *dev = tg->dev;
  const tabcl__tuning *tune = tg->tune;
  memset(p, 0, sizeof *p);
  /* Tile and work-group size come from the device alone, never from n:
     the tile is the largest power of two whose keys and values fit in
     local memory with room to spare (cl/sort.cl adds one padding slot per
     16), capped at 4096 pairs (a full tile sort already takes 30 rounds
     through local memory) or at sort.tile. */
  cl_ulong local = dev->local_mem_size;
  cl_ulong room = local > 2048 ? local - 1024 : local / 2;
  unsigned tile = 4096;
  while (tile > 2 && (cl_ulong)(tile + tile / 16) * (sizeof(cl_ulong) + sizeof(cl_uint)) > room)
    tile /= 2;
  const unsigned tile_cap = (unsigned)tabcl__tuned(tune, TABCL__TUNE_SORT_TILE);
  if (tile_cap < tile) tile = tile_cap;
  size_t cap = dev->max_work_group_size;
  if (dev->max_work_item_sizes[0] < cap) cap = dev->max_work_item_sizes[0];
  /* Each work-item of a local pass handles at least two pairs. */
  const unsigned wgmax = (unsigned)tabcl__tuned(tune, TABCL__TUNE_SORT_LOCAL);
  unsigned wg = 1;
  while (wg * 2 <= wgmax && wg * 2 <= cap && wg * 2 <= tile / 2) wg *= 2;
  p->tile = tile;
  p->wg = wg;
  size_t gwg = 1;
  const unsigned gwant = (unsigned)tabcl__tuned(tune, TABCL__TUNE_SORT_GLOBAL);
  while (gwg * 2 <= gwant && gwg * 2 <= cap) gwg *= 2;
  p->gwg = gwg;
  p->max_logr = log2_ceil((unsigned)tabcl__tuned(tune, TABCL__TUNE_SORT_PAIRS));
  if (p->max_logr < 1) p->max_logr = 1;
  if (p->max_logr > TABCL__SORT_MAX_LOGR) p->max_logr = TABCL__SORT_MAX_LOGR;
  /* Global ids stay well inside 31 bits, as tabcl__slice_items does. */
  p->max_items = (unsigned)tabcl__tuned(tune, TABCL__TUNE_SORT_MAX_ITEMS);
  /* The device's tile and group alone: one program holds every kernel
     either plan launches, so no sort size builds another (DESIGN.md). */
  snprintf(p->extra, sizeof p->extra, "-DSORT_TILE=%u -DSORT_WG=%u", tile, wg);

  /* A CPU (sort.serial): runs of consecutive pairs a work-item instead of
     local tiles, enough runs for sort.serial work-items a compute unit,
     at least TABCL__SORT_SERIAL_MIN_RUN, each short enough for the
     device's loop limit; the run is a kernel argument. */
  const int64_t serial = tabcl__tuned(tune, TABCL__TUNE_SORT_SERIAL);
  /* (its scratch, n keys and n values, must fit one allocation) */
  if (serial > 0 && n * (sizeof(cl_ulong) + sizeof(cl_uint)) <= dev->max_mem_alloc_size) {
    const uint64_t items = (uint64_t)(dev->compute_units ? dev->compute_units : 1) * (uint64_t)serial;
    uint64_t run = (uint64_t)1 << log2_ceil((n + items - 1) / items);
    /* (sort.tile, where it is set lower, lowers that least run too: tests
       send tiny inputs through many merges so) */
    const uint64_t least = tile_cap < TABCL__SORT_SERIAL_MIN_RUN ? tile_cap : TABCL__SORT_SERIAL_MIN_RUN;
    if (run < least) run = least;
    if (run > ((uint64_t)1 << 30)) run = (uint64_t)1 << 30;
    const uint64_t budget = tabcl__loop_budget(dev);
    while (run > 2 && tabcl__sort_serial_loops(run) > budget) run /= 2;
    if (tabcl__sort_serial_loops(run) <= budget) {
      tile = (unsigned)run;
      wg = 1;
      p->serial = 1;
      p->serial_loops = tabcl__sort_serial_loops(run);
      p->tile = tile;
      p->wg = wg;
    }
  }
  p->n = n;
  p->tiles = (n + tile - 1) / tile;
  p->nsteps = 0;
  if (n < 2) return;
  p->steps[p->nsteps++] = (tabcl__sort_step){0, 0, 1};
  const unsigned logt = log2_ceil(tile), logn = log2_ceil(n);
  for (unsigned logk = logt + 1; logk <= logn; logk++) {
    /* strides 2^(logk-1) .. tile through memory, max_logr at a time */
    unsigned logj = logk - 1;
    int flip = 1;
    while (logj >= logt) {
      unsigned logr = logj - logt + 1;
      if (logr > p->max_logr) logr = p->max_logr;
      p->steps[p->nsteps++] = (tabcl__sort_step){logj, logr, flip};
      logj -= logr;
      flip = 0;
    }
    p->steps[p->nsteps++] = (tabcl__sort_step){0, 0, 0};
  }
}

uint64_t tabcl__sort_step_items(const tabcl__sort_plan *p, const tabcl__sort_step *st) {
  if (st->logr == 0) return p->tiles * p->wg;
  const uint64_t block = (uint64_t)2 << st->logj, step = block >> st->logr;
  const uint64_t rem = p->n % block;
  return p->n / block * step + (rem < step ? rem : step);
}

void tabcl__sort_plan_print(const tabcl__sort_plan *p, char *buf, size_t cap) {
  int globals = 0;
  for (int i = 0; i < p->nsteps; i++) globals += p->steps[i].logr != 0;
  if (p->serial) {
    snprintf(buf, cap,
             "%llu pairs: sort_serial, runs of %u pairs a work-item (%llu runs), register passes "
             "of up to %u stages in groups of %zu; %d run and %d register passes; build \"%s\"",
             (unsigned long long)p->n, p->tile, (unsigned long long)p->tiles, p->max_logr, p->gwg,
             p->nsteps - globals, globals, p->extra);
    return;
  }
  snprintf(buf, cap,
           "%llu pairs: tile %u (local groups of %u), register passes of up to %u stages in "
           "groups of %zu, at most %zu work-items a launch; %d local and %d register passes; "
           "build \"%s\"",
           (unsigned long long)p->n, p->tile, p->wg, p->max_logr, p->gwg, p->max_items,
           p->nsteps - globals, globals, p->extra);
}
