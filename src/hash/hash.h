/* The label hash (hash.c, cl/hash.cl): XXH3-64 of the label's bytes under
 * a seed derived from (seed, column). The length is part of XXH3 itself. */
#ifndef TABCL_HASH_H
#define TABCL_HASH_H
#include "columns/strings.h"

/* The XXH3 seed used for column col under index seed `seed`. */
uint64_t tabcl__column_seed(uint64_t seed, int col);

/* tabcl's own host implementation of XXH3-64 (checked against libxxhash). */
uint64_t tabcl__xxh3_64(const void *data, size_t len, uint64_t xxh3_seed);

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
tabcl_status tabcl__hash_column(tabcl_context *ctx, const tabcl_dev_strings *s, int col,
                                uint64_t seed, uint64_t mask, cl_mem out, size_t out_offset,
                                cl_uint nwait, const cl_event *wait, cl_event *ev);

/* The mask a context's test-only hash width asks for (all ones for 64). */
uint64_t tabcl__hash_mask(const tabcl_context *ctx);

tabcl_status tabcl__selfcheck_hash(tabcl_context *ctx);

/* Test-only, process-wide: labels of at least group_min_bytes (> 240; 0 =
   the default, 8192) are cut into 1 KiB blocks hashed in parallel, with
   group_wg / 4 teams of four lanes a label (rounded down to a power of
   two; 0 = sized from max_label, up to 64), so small tests reach that
   path and teams that take several blocks. */
void tabcl__hash_tune(int64_t group_min_bytes, size_t group_wg);

/* Process-wide kernel choices (tests and tabcl-bench's sweeps; 0 = the
   default for each): mid 1 = hash_team_all (four lanes a label), 3 =
   hash_team_all_flat (four, with branch-free tail loads), 5 =
   hash_pair_all (two lanes a label, four accumulators each: halves of a
   stripe); big 1 = hash_units + hash_chain, 2 = hash_big (one work-group
   a label, no scratch buffer), whose work-group size is big_wg (a power
   of two >= 8; 0 = sized from max_label, up to 128). mid_wg is the
   work-group size of the mid kernel when it takes every label (0 = 64).
   Any other mid or big number (mid 2, 4, 6 and 7 named kernels since
   removed) means the default. */
void tabcl__hash_variants(int mid, int big, size_t big_wg, size_t mid_wg);
#endif
