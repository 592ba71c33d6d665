/* The index object: its destroy, its accessors, and the host records a fit
 * keeps of its columns. */
#include <stdlib.h>
#include <string.h>

#include "catindex/catindex_fit.h"
#include "hash/hash.h"
#include "sort/sort.h"

void tabcl_category_index_destroy(tabcl_category_index *idx) {
  if (!idx) return;
  tabcl__catindex_host_release(idx);
  if (idx->cols) {
    for (int c = 0; c < idx->ncols; c++) {
      if (idx->cols[c].offsets_owned) tabcl__free(idx->cols[c].offsets);
      tabcl__buffer_release(idx->cols[c].doffs);
      tabcl__free(idx->cols[c].validity);
    }
  }
  tabcl__free(idx->cols);
  tabcl__buffer_release(idx->keys);
  tabcl__buffer_release(idx->spans);
  tabcl__buffer_release(idx->ecodes);
  tabcl__buffer_release(idx->ranges);
  tabcl__buffer_release(idx->dir);
  tabcl__buffer_release(idx->dinfo);
  if (idx->vhost) {
    /* the device may read vdata's memory until its last command is done */
    (void)tabcl__finish(idx->ctx);
    tabcl__buffer_release(idx->vdata);
    tabcl__free_large(idx->vhost, idx->vhost_bytes);
  } else {
    tabcl__buffer_release(idx->vdata);
  }
  tabcl__free(idx);
}

int tabcl_category_index_columns(const tabcl_category_index *idx) { return idx ? idx->ncols : 0; }

int64_t tabcl_category_index_codes(const tabcl_category_index *idx, int col) {
  if (!idx || col < 0 || col >= idx->ncols) return -1;
  return idx->cols[col].codes;
}

/* The index's host records: offsets rebased to 0 for the fit, validity;
   the bytes themselves go to the device only (tabcl__fit_upload_labels). Offsets that
   start at 0 are the caller's own, read in place: a copy into fresh memory
   was most of a small fit's host time (its page faults), and after the fit
   the index keeps its offsets on the device only. */
tabcl_status tabcl__fit_copy_columns(tabcl_category_index *idx, const fit_source *src,
                                 const char *fn) {
  const tabcl_strings_view *v = src->v;
  int64_t bytes = 0, labels = 0;
  for (int c = 0; c < idx->ncols; c++) {
    if (v[c].length > INT32_MAX - 1)
      return tabcl__fail(TABCL_INVALID_ARGUMENT,
                         "%s: column %d: %lld labels; codes are int32, so at most %d", fn, c,
                         (long long)v[c].length, INT32_MAX - 1);
    idx->cols[c].label_base = labels;
    idx->cols[c].data_base = bytes;
    labels += v[c].length;
    if (v[c].length) bytes += v[c].offsets[v[c].length] - v[c].offsets[0];
  }
  if (labels > (int64_t)UINT32_MAX - 1)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %lld labels in all; at most %lld", fn,
                       (long long)labels, (long long)UINT32_MAX - 1);
  idx->labels = labels;
  idx->data_bytes = bytes;
  for (int c = 0; c < idx->ncols; c++) {
    tabcl__catcol *col = &idx->cols[c];
    int64_t n = v[c].length;
    col->length = n;
    const int64_t first = n ? v[c].offsets[0] : 0;
    if (!n || first == 0) {
      static const int64_t zero = 0;
      col->offsets = n ? (int64_t *)v[c].offsets : (int64_t *)&zero;   /* read only */
    } else {
      col->offsets = tabcl__malloc((size_t)(n + 1) * sizeof *col->offsets);
      if (!col->offsets)
        return tabcl__fail(TABCL_OUT_OF_MEMORY,
                           "%s: column %d: out of host memory for %lld offsets", fn, c,
                           (long long)n + 1);
      col->offsets_owned = 1;
      for (int64_t i = 0; i <= n; i++) col->offsets[i] = v[c].offsets[i] - first;
    }
    col->longest = src->longest[c];
    if (v[c].validity && n) {
      size_t vb = (size_t)(n + 7) / 8;
      col->validity = tabcl__malloc(vb);
      if (!col->validity)
        return tabcl__fail(TABCL_OUT_OF_MEMORY,
                           "%s: column %d: out of host memory for the validity bitmap (%zu bytes)",
                           fn, c, vb);
      memcpy(col->validity, v[c].validity, vb);
      /* bits past the end mean nothing; clear them so saved files are canonical */
      if (n % 8) col->validity[vb - 1] &= (uint8_t)((1u << (n % 8)) - 1);
    }
  }
  return TABCL_OK;
}
