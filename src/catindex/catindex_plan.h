/* The category index's plans (catindex_plan.c): the route of a host call,
 * and the lookup's, fit's and align's kernels, groups and slices, from the
 * device description, the tuning and the sizes alone. No OpenCL call. */
#ifndef TABCL_CATINDEX_PLAN_H
#define TABCL_CATINDEX_PLAN_H
#include "runtime/internal.h"

/* Where a host call runs: the one choice of route a call makes, in its plan. */
typedef enum tabcl__route {
  TABCL__ROUTE_DEVICE = 0,    /* the device's kernels */
  TABCL__ROUTE_CALLER = 1,    /* the calling thread */
  TABCL__ROUTE_WORKERS = 2,   /* the context's worker pool, the calling thread among them */
} tabcl__route;
typedef struct tabcl__route_plan {
  tabcl__route route;
  int threads;                /* 0 on the device, 1 on the caller, N > 1 on the workers */
} tabcl__route_plan;
const char *tabcl__route_name(tabcl__route r);

/* ---- the lookup's plan (catindex_plan.c): pure, no OpenCL call ---- */

/* One launch group of up to TABCL__CATINDEX_COLS_PER_LAUNCH columns with
   `rows` query labels of `bytes` bytes in all: long labels are compared by
   a work-group each (its lanes read neighbouring bytes, after a probe
   kernel of one work-item a row), short ones by one work-item each. */
typedef struct tabcl__lookup_plan {
  int64_t rows, bytes;
  int grouped;            /* 1: catindex_probe, then catindex_lookup_group */
  size_t lanes;           /* the group kernel's work-group: lanes a query row */
  size_t item_wg;         /* work-group of the one-row-a-work-item kernels */
  int64_t item_step;      /* rows a launch of those may take */
  int64_t group_step;     /* rows a launch of the group kernel may take */
  uint64_t candidate_bytes; /* the candidates buffer (grouped only) */
  /* lookup.serial (CPUs): catindex_lookup_serial alone, one work-item a
     run of serial_run rows, groups of one; grouped is then 0 */
  int serial;
  int64_t serial_run;
  uint64_t serial_loops;  /* loop iterations a work-item runs, at most (a bound) */
} tabcl__lookup_plan;
/* longest: the longest query label's bytes; candidates: entries of one
   hash a row may meet (1 where the index kept no collision, 0: unknown). */
void tabcl__lookup_plan_make(const tabcl__target *t, int64_t rows, int64_t bytes, int64_t longest,
                             int64_t candidates, tabcl__lookup_plan *p);
void tabcl__lookup_plan_print(const tabcl__lookup_plan *p, char *buf, size_t cap);

/* Build options of the category program: from the tuning alone (where
   lookup.serial is on, queries read as bytes). */
const char *tabcl__catindex_options(const tabcl__tuning *tune);
/* The plan a lookup on ctx makes (catindex_lookup.c): under the device's
   loop limit, which is measured first where the CPU plan's work-items could
   loop past TABCL__LOOPS_UNCHECKED; the probe's failure is the only error. */
tabcl_status tabcl__lookup_plan_for(tabcl_context *ctx, int64_t rows, int64_t bytes,
                                    int64_t longest, int64_t candidates, tabcl__lookup_plan *p);

/* ---- the fit's plan (catindex_plan.c): pure, no OpenCL call ---- */

/* A fit of `labels` labels (`pairs` of them present, `data_bytes` label
   bytes; the longest column has `longest_col` labels, `longest_pairs` of
   them present; the longest column with nulls has `longest_sparse` labels,
   0 where none has; the longest label has `longest_label` bytes): the
   device scratch it makes once, the launches of its kernels, and how many
   seeds it may try. The fit runs on the device column by column, in the
   index's own entry tables from the column's first pair: each seed try
   hashes the column, pairs its present labels with their hashes
   (catindex_fit_pairs), sorts the pairs (the sort's own plan), flags
   neighbours of one hash that are different labels (catindex_fit_collide),
   and writes one entry per run of one hash, the last position's
   (catindex_fit_count, catindex_fit_scan, catindex_fit_entries staging
   them in the span table, catindex_fit_spans). A try reads back one flag;
   the index's tables stay on the device, and the scratch beside them is a
   count per run (and the hashes of a column with nulls). */
typedef struct tabcl__fit_plan {
  int64_t labels, pairs, data_bytes;
  uint64_t vdata_bytes;    /* the labels on the device, zero-padded for word reads */
  uint64_t offsets_bytes;  /* one column's offsets, at most */
  int64_t longest_pairs;   /* the most present labels of one column */
  uint64_t hash_bytes;     /* a hash per label of the longest column with nulls (0: none);
                              a dense column is hashed into the entry keys in place */
  uint64_t slot_bytes;     /* the present slots of every column, ascending */
  uint64_t entry_bytes;    /* entry tables for every pair: key, span, code (28 B); each
                              column's pairs are made and sorted there, so the fit's scratch
                              is the run counts (and hashes of columns with nulls) */
  size_t pairs_wg;         /* catindex_fit_pairs, _collide: one work-item a pair */
  int64_t pairs_step;      /* pairs a launch */
  int64_t chunks;          /* catindex_fit_collide's second dimension: label chunks */
  int64_t run;             /* pairs a work-item of catindex_fit_count and _entries */
  int64_t runs;            /* runs of the longest column */
  uint64_t run_bytes;      /* a count per run */
  size_t run_wg;           /* their groups */
  int64_t run_step;        /* runs a launch */
  size_t scan_lanes;       /* catindex_fit_scan: one work-group of this many lanes */
  int seed_tries;          /* seeds 0 .. seed_tries - 1, then collisions are kept */
  uint64_t largest;        /* the largest of the buffers above */
  tabcl__route route;      /* TABCL__ROUTE_CALLER: small enough for the calling thread
                              (fit.host_labels, at most TABCL__FIT_HOST_BYTES of labels),
                              the labels in host memory and uploads not staged; else
                              TABCL__ROUTE_DEVICE */
} tabcl__fit_plan;
/* The labels (padded) a fit on the calling thread copies into the index's
   buffer at its creation, at most: it then enqueues nothing. Past about 8
   MB of labels the device's fit is faster, even on a CPU device
   (bench/history/code-notes.md, "fit.host_labels bytes"). */
#define TABCL__FIT_HOST_BYTES ((uint64_t)6 << 20)
/* One thread hashes and compares every query byte, so long labels go to
   the worker pool past lookup.host_rows x this many bytes
   (bench/history/code-notes.md, "lookup.host_rows bytes"). */
#define TABCL__LOOKUP_HOST_ROW_BYTES 128
/* Whether a host lookup or align of `rows` query rows (an align: its
   categories) of `bytes` bytes runs on the calling thread: at most
   lookup.host_rows rows (512 on CPUs and beside NVIDIA GPUs, else 0) and TABCL__LOOKUP_HOST_ROW_BYTES bytes
   a row on average. Pure. */
int tabcl__lookup_on_host(const tabcl__target *t, int64_t rows, int64_t bytes);
/* The most threads a host lookup takes (the context's worker pool and the
   calling thread). */
#define TABCL__LOOKUP_HOST_THREADS_MAX 64
/* The route of a host lookup or align of `rows` query rows of `bytes` bytes
   against an index of `index_bytes` device bytes: the caller where
   tabcl__lookup_on_host says so; the workers (lookup.host_threads: on CPU
   devices, whose cores the threads share with the kernels, one a compute
   unit; beside a GPU, one a core of the host); the device where
   lookup.host_threads is 0 or the index is past lookup.host_index (the host
   maps the index's tables, on a GPU a copy). Pure. */
tabcl__route_plan tabcl__lookup_route(const tabcl__target *t, int64_t rows, int64_t bytes,
                                      int64_t index_bytes);
/* The threads an align's passes over a column's rows of codes take on the
   host (the check of their range; on the host path the gather through the
   category table): one below TABCL__ALIGN_ROWS_THREADED rows, else the
   host lookup's (lookup.host_threads or its rule; 0 there gives 1). Pure. */
#define TABCL__ALIGN_ROWS_THREADED 16384
int tabcl__align_row_threads(const tabcl__target *t, int64_t rows);
void tabcl__fit_plan_make(const tabcl__target *t, int64_t labels, int64_t pairs,
                          int64_t data_bytes, int64_t longest_col, int64_t longest_pairs,
                          int64_t longest_sparse, int64_t longest_label, int from_device,
                          tabcl__fit_plan *p);
/* The directory's bits for a column of `entries` keys hashed under mask
   (catindex_plan.c, pure): 2^bits below entries, at least half of it, so
   a bucket holds one or two keys on average and the directory at most 4
   bytes a key; never more bits than the mask keeps. */
int tabcl__catindex_dir_bits(int64_t entries, uint64_t mask);
/* Fills a directory's slots [0, slots) for one column's sorted keys
   [lo, lo + n) as catindex_fit_directory does on the device: slot t holds
   the first entry whose bucket (key >> shift; 0 for a shift of 64) is t or
   more, lo + n past the last (catindex_plan.c, pure). A host fit's
   directory and the host lookup's finer one (catindex_host.c). */
void tabcl__catindex_fill_directory(const uint64_t *keys, int64_t lo, int64_t n, int64_t shift,
                                    int64_t slots, uint32_t *dir);
/* The bits a hash may have under mask: its top set bit's position plus one
   (64 for the full hash); a column's directory shift is this less its bits. */
int tabcl__catindex_mask_bits(uint64_t mask);
/* Bytes catindex_fit_collide compares in one work-item (CAT_FIT_CHUNK). */
#define TABCL__FIT_CHUNK 65536
/* Runs catindex_fit_scan's lanes take each, at most (a loop bound). */
#define TABCL__FIT_SCAN_PER_LANE 4096
void tabcl__fit_plan_print(const tabcl__fit_plan *p, char *buf, size_t cap);

/* An align of `rows` input codes over `ncols` columns with `categories`
   categories in all: the category table (a block per column, each ending
   in a -1 slot) is filled by the lookup's own plans, then one gather maps
   every row's code through it. */
typedef struct tabcl__align_plan {
  int64_t rows, table_entries;
  uint64_t table_bytes, codes_bytes; /* the table; the input and output codes each */
  size_t gather_wg;                  /* catindex_align_gather: one work-item a row */
  int64_t gather_step;               /* rows a launch */
} tabcl__align_plan;
void tabcl__align_plan_make(const tabcl__target *t, int ncols, int64_t rows, int64_t categories,
                            tabcl__align_plan *p);
void tabcl__align_plan_print(const tabcl__align_plan *p, char *buf, size_t cap);

/* The checksum a saved index of format `version` (1 or 2) ends with, over
   the n bytes before it (tests use it to build files whose checksum holds
   but whose contents do not). */
uint64_t tabcl__catindex_file_checksum(uint32_t version, const uint8_t *p, size_t n);

#endif
