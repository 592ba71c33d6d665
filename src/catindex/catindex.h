/* The categorical index (catindex_*.c, cl/catindex.cl): internal layout
 * shared by fit, lookup, align and save/load. */
#ifndef TABCL_CATINDEX_H
#define TABCL_CATINDEX_H
#include "columns/strings.h"
#include "catindex/catindex_plan.h"

/* How many seeds a fit tries before it keeps the colliding groups. */
#define TABCL__CATINDEX_SEED_TRIES 8
/* Query columns handled by one lookup launch (kernel arguments are fixed). */
#define TABCL__CATINDEX_COLS_PER_LAUNCH 4

/* One fitted column, host side. Offsets are rebased to 0 and index into the
   index's concatenated data at data_base. */
typedef struct tabcl__catcol {
  int64_t length;       /* labels in the fitted vocabulary, nulls included */
  int64_t *offsets;     /* length + 1, offsets[0] == 0, during the fit only: the caller's
                           own where they start at 0 (offsets_owned 0), else a rebased
                           copy. NULL after it: the index keeps them in doffs */
  int offsets_owned;
  cl_mem doffs;         /* long[length + 1]: offsets + data_base on the device, as the
                           fit's kernels read them; save reads them back. NULL: length 0 */
  uint8_t *validity;    /* (length + 7) / 8 bytes; NULL = all present */
  int64_t data_base;    /* first byte of this column in the index's data */
  int64_t codes;        /* BY_POSITION: length; BY_VALUE: distinct labels */
  int64_t label_base;   /* global slot of label 0 */
  int64_t longest;      /* the longest label's bytes (set by the fit's copy) */
} tabcl__catcol;

struct tabcl_category_index {
  tabcl_context *ctx;
  int ncols;
  tabcl_code_order order;
  uint64_t seed;        /* derived at fit (and at load by fitting again) */
  uint64_t mask;        /* the hash mask in force at fit; lookups use the same */
  int collisions;       /* 1: some column kept equal-hash groups of distinct labels */
  tabcl__catcol *cols;
  int64_t data_bytes;   /* every column's bytes, concatenated, are in vdata only */
  int64_t labels;       /* total labels (slots) over all columns */
  int64_t entries;      /* distinct present labels over all columns */
  /* Device tables. Entries are grouped by column (ranges[c] .. ranges[c+1])
     and sorted by hash within a column; one entry per distinct label. */
  cl_mem keys;          /* ulong[entries] */
  cl_mem spans;         /* long2[entries]: (first byte in vdata, length) */
  cl_mem ecodes;        /* int[entries] */
  cl_mem ranges;        /* long[ncols + 1] */
  /* The directory: a column's sorted keys cut into 2^bits buckets by
     their top bits (tabcl__catindex_dir_bits), so that a lookup reads its
     bucket's bounds and searches one or two keys instead of log2(entries).
     Column c's 2^bits + 1 slots start at dinfo[c].x; slot t holds the first
     entry of bucket t or later; dinfo[c].y is the shift that leaves a
     hash's bucket. Derived from the keys at every fit, never saved. */
  cl_mem dir;           /* uint[sum of 2^bits + 1] */
  cl_mem dinfo;         /* long2[ncols] */
  int64_t dir_bytes;    /* of both */
  cl_mem vdata;         /* uchar[data_bytes] */
  void *vhost;          /* vdata's own memory where the fit made it (CPU devices,
                           large fits: catindex_fit.c), unmapped after vdata; or NULL */
  size_t vhost_bytes;
  int64_t device_bytes; /* sum of the sizes above */
  /* The tables as the calling thread reads them (catindex_host.c): the
     first host call small enough to run there (lookup.host_rows) maps them
     for reading, once, and they stay mapped until destroy. Kernels may
     still read a buffer mapped for reading (OpenCL 1.2, section 5.4.3);
     nothing writes these tables after the fit. */
  pthread_mutex_t host_lock;
  int host_lock_made;
  _Atomic(struct tabcl__catindex_host *) host; /* NULL until mapped */
};


/* The mapped tables (catindex_host.c). */
typedef struct tabcl__catindex_host {
  const uint64_t *keys;
  const int64_t *spans;   /* (first byte in vdata, length) pairs */
  const int32_t *ecodes;
  const uint32_t *dir;
  const int64_t *dinfo;   /* (first slot, shift) pairs */
  const uint8_t *vdata;
  /* The host's own finer directory (buckets of about 0.2 entries, made
     when the tables are mapped), searched instead of dir and dinfo; NULL
     where it would not stay small. Owned. */
  uint32_t *fine;
  int64_t *fine_info;     /* its (first slot, shift) pairs */
  cl_mem mem[6];          /* what was mapped, for the unmaps at destroy */
  void *ptr[6];
} tabcl__catindex_host;

/* The route of a host call with `rows` query rows of `bytes` bytes in all:
   tabcl__lookup_route's, or the device for an index without host tables.
   The planning step of lookup and align; no OpenCL call. */
tabcl__route_plan tabcl__catindex_route(const tabcl_category_index *idx, int64_t rows,
                                        int64_t bytes);
/* The tables a host route reads, mapped on first use and kept. A failure
   to map is the call's failure; the index stays as it was. */
tabcl_status tabcl__catindex_host_tables(tabcl_category_index *idx,
                                         const tabcl__catindex_host **out);
/* Looks column c's queries up on the calling thread into codes[0 .. length). */
void tabcl__catindex_host_lookup(const tabcl_category_index *idx, const tabcl__catindex_host *h,
                                 int c, const tabcl_strings_view *q, int32_t *codes);
/* The same over up to `threads` threads (the context's worker pool and
   the calling thread), each a run of rows; the codes are the same. Calls
   of fewer than a few thousand rows stay on the calling thread. */
void tabcl__catindex_host_lookup_n(const tabcl_category_index *idx,
                                   const tabcl__catindex_host *h, int threads, int c,
                                   const tabcl_strings_view *q, int32_t *codes);
/* Unmaps the tables (destroy). */
void tabcl__catindex_host_release(tabcl_category_index *idx);

/* Fits from validated views (load uses it with the file's vocabularies);
   longest (ncols, or NULL) gives each column's longest label. */
tabcl_status tabcl__catindex_build(tabcl_context *ctx, int ncols, const tabcl_strings_view *v,
                                   const int64_t *longest, tabcl_code_order order,
                                   const char *fn, tabcl_category_index **out);

/* Enqueues the lookup of queries (ncols == idx->ncols) into out[c] starting
   at element out_off[c]. Every query must already be on the device; nothing
   is validated here. *last (may be NULL) is the event of the last command;
   the queue is in order, so it completes after everything before it. */
tabcl_status tabcl__catindex_lookup_dev(tabcl_category_index *idx, const tabcl__dev_strings *q,
                                        cl_mem const *out, const int64_t *out_off,
                                        cl_uint nwait, const cl_event *wait, cl_event *last);

/* The host calls' shared part (lookup, and align for its categories):
   uploads views[c] (each validated once by the caller, which reported
   longest[c]) and looks them up into out[c] from element out_off[c];
   every temporary is released before it returns. */
tabcl_status tabcl__catindex_lookup_views(tabcl_category_index *idx,
                                          const tabcl_strings_view *const *views,
                                          const int64_t *longest, cl_mem const *out,
                                          const int64_t *out_off, const char *fn);

/* A caller's buffer must belong to ctx's OpenCL context and hold at least
   `need` bytes (the _cl calls' checks; catindex_lookup.c). */
tabcl_status tabcl__catindex_check_mem(const tabcl_context *ctx, cl_mem m, size_t need,
                                       const char *fn, int col, const char *what);

/* Checks one device column of a _cl call (tabcl_strings_cl): no negative
   length, bytes or max_label, and its buffers (data where it has bytes or
   is given, offsets, validity where given) as tabcl__catindex_check_mem. */
struct tabcl_strings_cl;
tabcl_status tabcl__catindex_check_cl_column(const tabcl_context *ctx,
                                            const struct tabcl_strings_cl *v, const char *fn,
                                            int c);

/* Checks lookup's arguments (shared by the host and device variants). */
tabcl_status tabcl__catindex_check(const tabcl_category_index *idx, int ncols, const char *fn);

/* Device memory a host lookup of these queries allocates itself (its
   uploads, hashes and codes; the hash kernels' small work lists aside). */
int64_t tabcl__catindex_lookup_peak_bytes(int ncols, const tabcl_strings_view *queries);

tabcl_status tabcl__selfcheck_catindex(tabcl_context *ctx);
#endif
