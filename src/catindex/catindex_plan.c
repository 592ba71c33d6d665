/* The plans of fit, lookup and align: kernels, work-group sizes and slices
 * from the device, the tuning table and the sizes alone. No OpenCL call:
 * planner tests run them for hand-written devices. */
#include <stdio.h>
#include <string.h>

#include "catindex/catindex.h"

/* Loop iterations of one row in catindex_lookup_serial, as cl/catindex.cl
   writes its loops: the search (doubling steps out and back, then a binary
   search: at most 3 x 64 and their trips; or, rows side by side, a share
   of at most 64 levels of 33 trips for 32 rows and of the groups' own
   loops) and, for each candidate, the comparison (four words a step, then
   word by word: at most len / 32 + len / 8 + 6). None where the candidates
   are not known. */
static uint64_t serial_row_loops(int64_t longest, int64_t candidates) {
  if (candidates <= 0) return UINT64_MAX;
  const uint64_t len = longest > 0 ? (uint64_t)longest : 0;
  return 1 + 200 + (uint64_t)candidates * (1 + len / 32 + len / 8 + 6);
}

void tabcl__lookup_plan_make(const tabcl__target *t, int64_t rows, int64_t bytes, int64_t longest,
                             int64_t candidates, tabcl__lookup_plan *p) {
  memset(p, 0, sizeof *p);
  p->rows = rows;
  p->bytes = bytes;
  const int64_t avg = rows > 0 ? bytes / rows : 0;
  p->grouped = rows > 0 && avg >= tabcl__tuned(t->tune, TABCL__TUNE_LOOKUP_GROUP_BYTES);
  /* Lanes a query for the group kernel: enough that each reads ~16 bytes,
     but no more than 64 (lookup.group_lanes's measurement). */
  size_t lanes = (size_t)tabcl__tuned_rule(t->tune, TABCL__TUNE_LOOKUP_GROUP_LANES, 0);
  if (!lanes) {
    lanes = 32;
    while (lanes < 64 && (int64_t)lanes * 16 < avg) lanes *= 2;
  }
  p->lanes = tabcl__plan_wg(t->dev, lanes);
  p->item_wg = tabcl__plan_wg(t->dev, 128);
  p->item_step = tabcl__slice_items(t, 0, 1);
  p->group_step = tabcl__slice_items(t, 0, p->lanes);
  /* A CPU (lookup.serial): runs of rows a work-item, enough runs for
     lookup.serial work-items a compute unit in a launch. */
  const int64_t serial = tabcl__tuned(t->tune, TABCL__TUNE_LOOKUP_SERIAL);
  if (serial > 0) {
    const int64_t n = rows < p->item_step ? rows : p->item_step;
    const int64_t items = (int64_t)(t->dev->compute_units ? t->dev->compute_units : 1) * serial;
    int64_t run = n > 0 ? (n + items - 1) / items : 1;
    /* Under a device's loop limit, runs short enough for it; rows that
       need more than it allows one work-item take the kernels above. */
    const uint64_t per_row = serial_row_loops(longest, candidates);
    const uint64_t budget = tabcl__loop_budget(t->dev);
    const uint64_t most = per_row == UINT64_MAX ? (budget == UINT64_MAX ? (uint64_t)run : 0)
                                                : budget / per_row;
    if (most >= 1) {
      if ((uint64_t)run > most) run = (int64_t)most;
      p->serial = 1;
      p->serial_run = run;
      p->serial_loops = per_row == UINT64_MAX ? UINT64_MAX : (uint64_t)run * per_row;
      p->grouped = 0;
    }
  }
  p->candidate_bytes = p->grouped ? (uint64_t)rows * 8 : 0;
}

/* Where lookups take the CPU kernel (lookup.serial > 0), its build reads
   queries as bytes (in place); it holds the GPU kernels too, for rows past
   a loop limit, so that one build serves every lookup. */
const char *tabcl__catindex_options(const tabcl__tuning *tune) {
  return tabcl__tuned(tune, TABCL__TUNE_LOOKUP_SERIAL) > 0 ? "-DCAT_QUERY_BYTES=1" : NULL;
}

void tabcl__lookup_plan_print(const tabcl__lookup_plan *p, char *buf, size_t cap) {
  if (p->serial)
    snprintf(buf, cap, "%lld rows, %lld bytes: catindex_lookup_serial (groups of 1, %lld rows a "
             "work-item, %lld rows a launch)", (long long)p->rows, (long long)p->bytes,
             (long long)p->serial_run, (long long)p->item_step);
  else if (p->grouped)
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

void tabcl__fit_plan_make(const tabcl__target *t, int64_t labels, int64_t pairs,
                          int64_t data_bytes, int64_t longest_col, int64_t longest_pairs,
                          int64_t longest_sparse, int64_t longest_label, int from_device,
                          tabcl__fit_plan *p) {
  memset(p, 0, sizeof *p);
  p->labels = labels;
  p->pairs = pairs;
  p->data_bytes = data_bytes;
  p->vdata_bytes = tabcl__round_up((size_t)data_bytes, 8) + 8;
  p->offsets_bytes = ((uint64_t)longest_col + 1) * 8;
  p->longest_pairs = longest_pairs;
  p->hash_bytes = (uint64_t)longest_sparse * 8;
  p->slot_bytes = (uint64_t)pairs * 4;
  p->entry_bytes = (uint64_t)pairs * 28;
  p->pairs_wg = tabcl__plan_wg(t->dev, 256);
  p->pairs_step = tabcl__slice_items(t, 0, 1);
  p->chunks = longest_label > TABCL__FIT_CHUNK
                  ? (longest_label + TABCL__FIT_CHUNK - 1) / TABCL__FIT_CHUNK
                  : 1;
  /* A CPU's work-items walk long runs (few of them, each in cache); a GPU's
     short ones, so a column of thousands still spreads over its cores. Runs
     grow where the scan's lanes would otherwise loop past their bound. */
  p->scan_lanes = tabcl__plan_wg(t->dev, 256);
  int64_t run = t->dev->is_cpu ? 1024 : 64;
  const int64_t most = (int64_t)p->scan_lanes * TABCL__FIT_SCAN_PER_LANE;
  if (longest_pairs > run * most) run = (longest_pairs + most - 1) / most;
  p->run = run;
  p->runs = (longest_pairs + run - 1) / run;
  p->run_bytes = (uint64_t)(p->runs ? p->runs : 1) * 8;
  p->run_wg = tabcl__plan_wg(t->dev, t->dev->is_cpu ? 1 : 64);
  p->run_step = tabcl__slice_items(t, 0, 1);
  p->seed_tries = TABCL__CATINDEX_SEED_TRIES;
  /* the calling thread's fit makes its tables with their contents, so it
     needs the labels in host memory and buffers that copy at creation (no
     staging area) */
  const int staged = tabcl__tune_staged(t->tune);
  p->route = !from_device && !staged &&
                     labels <= tabcl__tuned(t->tune, TABCL__TUNE_FIT_HOST_LABELS) &&
                     p->vdata_bytes <= TABCL__FIT_HOST_BYTES
                 ? TABCL__ROUTE_CALLER
                 : TABCL__ROUTE_DEVICE;
  const uint64_t sizes[] = {p->vdata_bytes, p->offsets_bytes, p->hash_bytes,
                            p->slot_bytes,  p->entry_bytes,   p->run_bytes};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i] > p->largest) p->largest = sizes[i];
}

int tabcl__lookup_on_host(const tabcl__target *t, int64_t rows, int64_t bytes) {
  const int64_t most = tabcl__tuned(t->tune, TABCL__TUNE_LOOKUP_HOST_ROWS);
  return rows <= most && bytes <= most * TABCL__LOOKUP_HOST_ROW_BYTES;
}

const char *tabcl__route_name(tabcl__route r) {
  return r == TABCL__ROUTE_CALLER ? "calling thread" : r == TABCL__ROUTE_WORKERS ? "worker pool" : "device";
}

/* lookup.host_threads, or its rule: a thread a compute unit on a CPU
   device (a core each); beside a GPU, a thread a core of the host. At most
   TABCL__LOOKUP_HOST_THREADS_MAX; 0 (the device's kernels) where set so. */
static int host_threads(const tabcl__target *t) {
  const int64_t units = t->dev->is_cpu ? (int64_t)t->dev->compute_units : t->host_cores;
  const int64_t n = tabcl__tuned_rule(t->tune, TABCL__TUNE_LOOKUP_HOST_THREADS, units > 0 ? units : 1);
  return n > TABCL__LOOKUP_HOST_THREADS_MAX ? TABCL__LOOKUP_HOST_THREADS_MAX : (int)n;
}

tabcl__route_plan tabcl__lookup_route(const tabcl__target *t, int64_t rows, int64_t bytes,
                                      int64_t index_bytes) {
  tabcl__route_plan p = {TABCL__ROUTE_DEVICE, 0};
  /* the host keeps the index's tables mapped: a copy of the index where
     the device's memory is not the host's */
  if (index_bytes > tabcl__tuned(t->tune, TABCL__TUNE_LOOKUP_HOST_INDEX)) return p;
  if (tabcl__lookup_on_host(t, rows, bytes)) return (tabcl__route_plan){TABCL__ROUTE_CALLER, 1};
  const int n = host_threads(t);
  if (n == 1) return (tabcl__route_plan){TABCL__ROUTE_CALLER, 1};
  if (n > 1) return (tabcl__route_plan){TABCL__ROUTE_WORKERS, n};
  return p;
}

int tabcl__align_row_threads(const tabcl__target *t, int64_t rows) {
  /* a pass costs well under a nanosecond a row: below this a part's
     hand-over would cost as much as it saves (bench/history/code-notes.md,
     "Align passes") */
  if (rows < TABCL__ALIGN_ROWS_THREADED) return 1;
  const int n = host_threads(t);
  return n < 1 ? 1 : n;
}

void tabcl__fit_plan_print(const tabcl__fit_plan *p, char *buf, size_t cap) {
  if (p->route == TABCL__ROUTE_CALLER) {
    snprintf(buf, cap,
             "route: calling thread; %lld labels (%lld present), %lld bytes: labels %llu B "
             "copied into the index's buffer; up to %d seeds, each hashing with the host XXH3 "
             "and a radix sort of the pairs; tables made with their contents",
             (long long)p->labels, (long long)p->pairs, (long long)p->data_bytes,
             (unsigned long long)p->vdata_bytes, p->seed_tries);
    return;
  }
  snprintf(buf, cap,
           "route: device; %lld labels (%lld present), %lld bytes: labels %llu B, entries %llu B on the "
           "device, each column's pairs made, sorted and turned into entries in its place in "
           "them (hashes of a column with nulls %llu B, run counts %llu B beside); up to %d "
           "seeds, each per column: hash, catindex_fit_pairs and _collide (groups of %zu, %lld "
           "pairs a launch, %lld label chunks), the sort, catindex_fit_count and _entries (%lld "
           "pairs a work-item, groups of %zu), catindex_fit_scan (%zu lanes), catindex_fit_spans; "
           "one flag read back a try",
           (long long)p->labels, (long long)p->pairs, (long long)p->data_bytes,
           (unsigned long long)p->vdata_bytes, (unsigned long long)p->entry_bytes,
           (unsigned long long)p->hash_bytes, (unsigned long long)p->run_bytes, p->seed_tries,
           p->pairs_wg, (long long)p->pairs_step, (long long)p->chunks, (long long)p->run,
           p->run_wg, p->scan_lanes);
}

void tabcl__align_plan_make(const tabcl__target *t, int ncols, int64_t rows, int64_t categories,
                            tabcl__align_plan *p) {
  memset(p, 0, sizeof *p);
  p->rows = rows;
  p->table_entries = categories + ncols;
  p->table_bytes = (uint64_t)p->table_entries * 4;
  p->codes_bytes = (uint64_t)rows * 4;
  p->gather_wg = tabcl__plan_wg(t->dev, 256);
  p->gather_step = tabcl__slice_items(t, 0, 1);
}

void tabcl__align_plan_print(const tabcl__align_plan *p, char *buf, size_t cap) {
  snprintf(buf, cap,
           "%lld rows: the lookup of the categories into a table of %lld entries (%llu B), then "
           "catindex_align_gather (groups of %zu, %lld rows a launch)",
           (long long)p->rows, (long long)p->table_entries, (unsigned long long)p->table_bytes,
           p->gather_wg, (long long)p->gather_step);
}

int tabcl__catindex_mask_bits(uint64_t mask) {
  int kept = 0;
  while (kept < 64 && (mask >> kept)) kept++;
  return kept;
}

void tabcl__catindex_fill_directory(const uint64_t *keys, int64_t lo, int64_t n, int64_t shift,
                                    int64_t slots, uint32_t *dir) {
  int64_t t = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t b = shift < 64 ? (int64_t)(keys[lo + i] >> shift) : 0;
    for (; t <= b; t++) dir[t] = (uint32_t)(lo + i);
  }
  for (; t < slots; t++) dir[t] = (uint32_t)(lo + n);
}

int tabcl__catindex_dir_bits(int64_t entries, uint64_t mask) {
  const int kept = tabcl__catindex_mask_bits(mask);
  int bits = 0;   /* the most with 2^bits < entries, for 2 entries and more */
  while (bits < 30 && ((int64_t)1 << (bits + 1)) < entries) bits++;
  return bits < kept ? bits : kept;
}
