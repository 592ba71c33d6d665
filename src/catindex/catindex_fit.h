/* What the files of a fit share (catindex_index.c, catindex_labels.c,
 * catindex_fit_dev.c, catindex_fit_host.c, catindex_fit.c); nothing outside
 * catindex/ includes it. */
#ifndef TABCL_CATINDEX_FIT_H
#define TABCL_CATINDEX_FIT_H

#include <string.h>

#include "catindex/catindex.h"
#include "tabcl/tabcl_cl.h"

/* Where a fit's label bytes are: the caller's host views (fit, load), or
   device columns (fit_cl). Offsets and validity are always on the host
   (fit_cl reads them back), in v. */
typedef struct fit_source {
  const tabcl_strings_view *v;   /* ncols; data is not read when dev is set */
  const tabcl_strings_cl *dev;   /* ncols, or NULL */
  const int64_t *longest;        /* ncols: each column's longest label, from its check */
} fit_source;

typedef struct fit_scratch {
  tabcl__dev_strings *dev;   /* ncols views of vdata; only their offsets are owned */
  cl_mem hash;               /* the hashes of a column with nulls (none where no column has
                                them); a dense column is hashed into ekeys, in place */
  cl_mem slots, counts;
  cl_mem ekeys, espans, ecodes; /* the entry tables, every pair's place: each column's pairs
                                   are made and sorted in ekeys/ecodes from its first pair,
                                   staged through espans into entries (cl/catindex.cl) */
  cl_mem totals;             /* long[ncols]: each column's entries, written by its scan; then
                                the try's collision flag (an int at long ncols), so that a
                                try reads both back at once */
  int64_t *htotals;          /* ncols + 1: the last try's totals and flag, read back */
  cl_kernel kpairs, kcollide, kcount, kscan, kentries, kspans;
  uint32_t *hslots;          /* the present slots of the columns with nulls, ascending */
  int64_t *seg;              /* ncols + 1: each column's first pair, counted over all columns */
  int64_t *sfirst;           /* ncols: a column's first slot in hslots; -1: dense (no
                                nulls), its pairs are its slots in order */
  int64_t npairs;
  const uint8_t **hb;        /* the host bytes of each column's label 0, once asked for */
  uint8_t *hdata;            /* vdata read back for that (device sources only) */
  uint64_t *pk;              /* the fallback's pairs, by column (host) */
  uint32_t *pv;
  int on_host;               /* 1: the fit runs on the calling thread (fit.host_labels) */
  tabcl__fit_plan plan;
} fit_scratch;

static inline int bytes_cmp(const uint8_t *a, int64_t na, const uint8_t *b, int64_t nb) {
  int64_t n = na < nb ? na : nb;
  int r = n ? memcmp(a, b, (size_t)n) : 0;
  if (r) return r;
  return na < nb ? -1 : na > nb;
}

static inline int present(const tabcl__catcol *c, int64_t i) {
  return !c->validity || (c->validity[i >> 3] >> (i & 7) & 1);
}

tabcl_status tabcl__fit_upload_labels(tabcl_category_index *idx, const fit_source *src,
                                  uint64_t padded, int on_host);
tabcl_status tabcl__fit_host_fit(tabcl_category_index *idx, const fit_source *src, fit_scratch *s);
int tabcl__fit_copied_at_create(tabcl_context *ctx, const fit_source *src, uint64_t padded,
                            uint64_t most);
tabcl_status tabcl__fit_host_bytes(tabcl_category_index *idx, const fit_source *src, fit_scratch *s);
tabcl_status tabcl__fit_launch_sliced(tabcl_context *ctx, cl_kernel k, const char *name, size_t want,
                                  int64_t items, int64_t step, size_t dim1, cl_uint from_arg);
tabcl_status tabcl__fit_column_pairs(tabcl_category_index *idx, fit_scratch *s, int c, uint64_t seed,
                                 int64_t *n_out);
void tabcl__fit_set_code_counts(tabcl_category_index *idx, const int64_t *range);
tabcl_status tabcl__fit_make_directory(tabcl_category_index *idx, const fit_scratch *s,
                                   const int64_t *range, const uint64_t *hkeys);
tabcl_status tabcl__fit_rank_device_codes(tabcl_category_index *idx, const fit_source *src,
                                      fit_scratch *s, const int64_t *range);
tabcl_status tabcl__fit_copy_columns(tabcl_category_index *idx, const fit_source *src,
                                 const char *fn);
tabcl_status tabcl__fit_scratch_init(tabcl_category_index *idx, const fit_source *src,
                                 fit_scratch *s, const char *fn);
void tabcl__fit_prefetch_programs(tabcl_context *ctx, const fit_scratch *s);
tabcl_status tabcl__fit_seed_try(tabcl_category_index *idx, fit_scratch *s, uint64_t seed,
                             int *collided);
tabcl_status tabcl__fit_fallback_entries(tabcl_category_index *idx, const fit_source *src,
                                     fit_scratch *s);
void tabcl__fit_scratch_free(tabcl_context *ctx, fit_scratch *s, int ncols);

#endif
