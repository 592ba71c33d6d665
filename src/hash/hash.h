/* The label hash (hash.c, cl/hash.cl): XXH3-64 of the label's bytes under
 * a seed derived from (seed, column). The length is part of XXH3 itself. */
#ifndef TABCL_HASH_H
#define TABCL_HASH_H
#include "columns/strings.h"

/* The XXH3 seed used for column col under index seed `seed`. */
uint64_t tabcl__column_seed(uint64_t seed, int col);

/* tabcl's own host implementation of XXH3-64 (checked against libxxhash). */
uint64_t tabcl__xxh3_64(const void *data, size_t len, uint64_t xxh3_seed);

/* The same with the secret words a seed derives for labels over 240 bytes
   worked out once (tabcl__xxh3_keys), for many labels under one seed: the
   derivation costs about as much as hashing 240 bytes. */
typedef struct tabcl__xxh3_state {
  uint64_t seed;
  uint64_t sec[24];
  uint64_t key[17][8];   /* each stripe's eight secret words, the last stripe's */
} tabcl__xxh3_state;
void tabcl__xxh3_keys(tabcl__xxh3_state *st, uint64_t xxh3_seed);
uint64_t tabcl__xxh3_64_keyed(const tabcl__xxh3_state *st, const void *data, size_t len);

/* Whether labels over 240 bytes take the AVX2 loop (x86 hosts that have
   it); 0 everywhere while tabcl__xxh3_plain_only is set (tests, to check
   both loops against libxxhash on one machine). */
int tabcl__xxh3_simd(void);
extern _Atomic int tabcl__xxh3_plain_only;

/* Host hash of one label: tabcl__xxh3_64(bytes, n, tabcl__column_seed(seed, col)) & mask. */
uint64_t tabcl__label_hash(const void *bytes, size_t n, uint64_t seed, int col, uint64_t mask);

/* Hashes every label of s on the device into out[out_offset + i] (ulong),
   masked with `mask` (all ones normally; tests shrink it to force
   collisions). A null label's slot gets an unspecified value and must not
   be used. Short labels take one work-item each, longer ones four lanes,
   and labels of 8 KiB or more are cut into 1 KiB blocks hashed in
   parallel. Enqueued after `wait`; `ev` (may be NULL)
   completes when every hash is written. s must be laid out as
   tabcl__strings_upload makes it (data padded to whole words) and
   s->max_label must be at least its longest label: it picks the kernels.
   A label whose offsets fall outside [0, s->bytes] or decrease is hashed
   as empty (never read out of bounds). */
tabcl_status tabcl__hash_column(tabcl_context *ctx, const tabcl__dev_strings *s, int col,
                                uint64_t seed, uint64_t mask, cl_mem out, size_t out_offset,
                                cl_uint nwait, const cl_event *wait, cl_event *ev);

/* The mask a context's test-only hash width asks for (all ones for 64). */
uint64_t tabcl__hash_mask(const tabcl_context *ctx);

tabcl_status tabcl__selfcheck_hash(tabcl_context *ctx);

/* ---- the plan (hash_plan.c): pure, no OpenCL call ---- */

/* Labels up to this many bytes take one work-item each. */
#define TABCL__HASH_SHORT_MAX 240

typedef struct tabcl__hash_plan {
  int64_t length, bytes;
  int64_t group_min;          /* labels of this many bytes or more: hash_big */
  int64_t slice;              /* labels a launch may take */
  int any_long, any_huge, direct, team_all, list_huge, lists, pair, teams_used;
  size_t lanes;               /* lanes a label in the team kernel */
  size_t team_words;          /* local words a work-item of the team kernel needs */
  const char *short_kernel, *team_kernel, *units_kernel; /* NULL: not used */
  size_t wg_short, wg_team, wg_units; /* by the device's limits; a kernel's own limit may
                                         lower them */
  uint32_t mid_cap, huge_cap; /* entries of the long- and huge-label lists */
  /* hash.serial (CPUs): hash_serial alone, one work-item a run of
     serial_run labels, groups of wg_serial; every kernel name above NULL. */
  const char *serial_kernel;
  const char *options;        /* the hash program's build options (NULL: none) */
  uint32_t serial_run;
  uint64_t serial_loops;      /* loop iterations a work-item runs, at most (a bound) */
  /* hash_serial_part (labels too long for one work-item under the loop
     limit): blocks a launch, launches a slice, bytes of accumulators. */
  uint64_t part_blocks, parts, part_bytes;
  size_t wg_serial;
} tabcl__hash_plan;

/* The plan for a column of length labels, bytes bytes and a longest label
   of max_label bytes. Build options never depend on these: every GPU
   kernel comes from the one "hash" program, and the CPU plan's (every
   column where hash.serial is on) from its build of the serial kernels
   (options). */
void tabcl__hash_plan_make(const tabcl__target *t, int64_t length, int64_t bytes,
                           int64_t max_label, tabcl__hash_plan *p);
/* The plan a call on ctx makes (hash.c): under the device's loop limit,
   which is measured first where the CPU plan's work-items could loop past
   TABCL__LOOPS_UNCHECKED; the probe's failure is the only error. */
tabcl_status tabcl__hash_plan_for(tabcl_context *ctx, int64_t length, int64_t bytes,
                                  int64_t max_label, tabcl__hash_plan *p);
void tabcl__hash_plan_print(const tabcl__hash_plan *p, char *buf, size_t cap);
#endif
