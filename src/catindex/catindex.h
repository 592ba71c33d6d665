/* The categorical index (catindex_*.c, cl/catindex.cl): internal layout
 * shared by fit, lookup, align and save/load. */
#ifndef TABCL_CATINDEX_H
#define TABCL_CATINDEX_H
#include "columns/strings.h"

/* How many seeds a fit tries before it keeps the colliding groups. */
#define TABCL__CATINDEX_SEED_TRIES 8
/* Query columns handled by one lookup launch (kernel arguments are fixed). */
#define TABCL__CATINDEX_COLS_PER_LAUNCH 4

/* One fitted column, host side. Offsets are rebased to 0 and index into the
   index's concatenated data at data_base. */
typedef struct tabcl__catcol {
  int64_t length;       /* labels in the fitted vocabulary, nulls included */
  int64_t *offsets;     /* length + 1, offsets[0] == 0 */
  uint8_t *validity;    /* (length + 7) / 8 bytes; NULL = all present */
  int64_t data_base;    /* first byte of this column in the index's data */
  int64_t codes;        /* BY_POSITION: length; BY_VALUE: distinct labels */
  int64_t label_base;   /* global slot of label 0 */
} tabcl__catcol;

struct tabcl_category_index {
  tabcl_context *ctx;
  int ncols;
  tabcl_code_order order;
  uint64_t seed;        /* derived at fit (and at load by fitting again) */
  uint64_t mask;        /* the hash mask in force at fit; lookups use the same */
  int collisions;       /* 1: some column kept equal-hash groups of distinct labels */
  tabcl__catcol *cols;
  uint8_t *data;        /* every column's bytes, concatenated */
  int64_t data_bytes;
  int64_t labels;       /* total labels (slots) over all columns */
  int64_t entries;      /* distinct present labels over all columns */
  /* Device tables. Entries are grouped by column (ranges[c] .. ranges[c+1])
     and sorted by hash within a column; one entry per distinct label. */
  cl_mem keys;          /* ulong[entries] */
  cl_mem spans;         /* long2[entries]: (first byte in vdata, length) */
  cl_mem ecodes;        /* int[entries] */
  cl_mem ranges;        /* long[ncols + 1] */
  cl_mem vdata;         /* uchar[data_bytes] */
  int64_t device_bytes; /* sum of the sizes above */
};

/* A query column on the device, owned by the caller or by the call. */
typedef struct tabcl__catquery {
  int64_t length, bytes;
  int64_t max_label;                /* longest label, or bytes when unknown */
  cl_mem data, offsets, validity;   /* validity NULL = all present */
} tabcl__catquery;

/* Fits from validated views (load uses it with the file's vocabularies). */
tabcl_status tabcl__catindex_build(tabcl_context *ctx, int ncols, const tabcl_strings_view *v,
                                   tabcl_code_order order, const char *fn,
                                   tabcl_category_index **out);

/* Enqueues the lookup of queries (ncols == idx->ncols) into out[c] starting
   at element out_off[c]. Every query must already be on the device; nothing
   is validated here. *last (may be NULL) is the event of the last command;
   the queue is in order, so it completes after everything before it. */
tabcl_status tabcl__catindex_lookup_dev(tabcl_category_index *idx, const tabcl__catquery *q,
                                        cl_mem const *out, const int64_t *out_off,
                                        cl_uint nwait, const cl_event *wait, cl_event *last);

/* Checks lookup's arguments (shared by the host and device variants). */
tabcl_status tabcl__catindex_check(const tabcl_category_index *idx, int ncols, const char *fn);

/* Test-only: queries whose average label is at least this many bytes are
   confirmed by a work-group each, shorter ones by one work-item each.
   Negative restores the default. Process-wide. */
void tabcl__catindex_set_group_threshold(int64_t bytes);
int64_t tabcl__catindex_group_threshold(void);
/* Test- and bench-only: lanes per query row in the work-group kernel (a
   power of two; 0 restores the choice by label length). Process-wide. */
void tabcl__catindex_set_group_lanes(size_t lanes);

/* The checksum a saved index ends with, over the n bytes before it (tests
   use it to build files whose checksum holds but whose contents do not). */
uint64_t tabcl__catindex_file_checksum(const uint8_t *p, size_t n);

/* Device memory a host lookup of these queries allocates itself (its
   uploads, hashes and codes; the hash kernels' small work lists aside). */
int64_t tabcl__catindex_lookup_peak_bytes(int ncols, const tabcl_strings_view *queries);

tabcl_status tabcl__selfcheck_catindex(tabcl_context *ctx);
#endif
