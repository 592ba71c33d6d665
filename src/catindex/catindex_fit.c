/* Fitting a categorical index, on the device end to end: the labels go to
 * the device once (the index's own copy, vdata), and each seed try hashes,
 * pairs, sorts, checks for collisions and writes the lookup's entries there,
 * column by column, reading back one flag. Only what has no device kernel
 * runs on the host: the BY_VALUE ranking of the distinct labels, and the
 * rare fallback where no seed within the bound separates every label (the
 * colliding groups are then kept, built on the host as before). */
/* madvise (labels_in_own_memory) is outside POSIX 2008 */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "catindex/catindex.h"
#include "tabcl/tabcl_cl.h"
#include "hash/hash.h"
#include "sort/sort.h"

/* Where a fit's label bytes are: the caller's host views (fit, load), or
   device columns (fit_cl). Offsets and validity are always on the host
   (fit_cl reads them back), in v. */
typedef struct fit_source {
  const tabcl_strings_view *v;   /* ncols; data is not read when dev is set */
  const tabcl_strings_cl *dev;   /* ncols, or NULL */
  const int64_t *longest;        /* ncols: each column's longest label, from its check */
} fit_source;

static int bytes_cmp(const uint8_t *a, int64_t na, const uint8_t *b, int64_t nb) {
  int64_t n = na < nb ? na : nb;
  int r = n ? memcmp(a, b, (size_t)n) : 0;
  if (r) return r;
  return na < nb ? -1 : na > nb;
}

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
   the bytes themselves go to the device only (upload_labels). Offsets that
   start at 0 are the caller's own, read in place: a copy into fresh memory
   was most of a small fit's host time (its page faults), and after the fit
   the index keeps its offsets on the device only. */
static tabcl_status copy_columns(tabcl_category_index *idx, const fit_source *src,
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

static int present(const tabcl__catcol *c, int64_t i) {
  return !c->validity || (c->validity[i >> 3] >> (i & 7) & 1);
}

/* ---- the labels on the device ----------------------------------------- */

/* Bytes [at, at + n) of vdata: every column's bytes end to end, then zeros. */
typedef struct label_fill {
  const tabcl_category_index *idx;
  const tabcl_strings_view *v;
} label_fill;

static void fill_labels(void *dst, size_t at, size_t n, const void *arg) {
  const label_fill *f = arg;
  const tabcl_category_index *idx = f->idx;
  uint8_t *out = dst;
  int c = 0;
  while (n) {
    if ((int64_t)at >= idx->data_bytes) {
      memset(out, 0, n);
      return;
    }
    /* the last column starting at or before `at` holds it: columns lie end
       to end, and an empty one starts where the next does */
    while (c + 1 < idx->ncols && idx->cols[c + 1].data_base <= (int64_t)at) c++;
    const tabcl__catcol *col = &idx->cols[c];
    int64_t in_col = (int64_t)at - col->data_base, left = col->offsets[col->length] - in_col;
    size_t take = (size_t)left < n ? (size_t)left : n;
    memcpy(out, f->v[c].data + f->v[c].offsets[0] + in_col, take);
    out += take;
    at += take;
    n -= take;
  }
}

#ifdef MADV_POPULATE_WRITE
/* fill_labels into memory of the fit's own, each run of FAULT_RUN bytes
   faulted in (MADV_POPULATE_WRITE, which fails where the memory cannot be
   had, where a first write would kill the process) just before it is
   filled, and the threads fault side by side (the kernel zeroes every
   page it gives, on the thread that faults it). On the 2-core VM, fits of
   200,000 x 4 KiB took 153-170 ms this way against 169-187 with all 819 MB
   faulted first on one thread (68 ms of it) and then filled on two; in a
   loop outside the tree the same 800 MiB took 59-138 ms against 118-137
   (huge pages; the spread is the VM's). */
#define FAULT_RUN ((size_t)4 << 20)
typedef struct faulted_fill {
  label_fill labels;
  atomic_int *refused; /* set by a run whose memory could not be faulted in */
} faulted_fill;

static void fill_faulted(void *dst, size_t at, size_t n, const void *arg) {
  const faulted_fill *f = arg;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  for (size_t done = 0; done < n && !atomic_load_explicit(f->refused, memory_order_relaxed);) {
    const size_t take = n - done < FAULT_RUN ? n - done : FAULT_RUN;
    /* from the page the run starts in: a page two runs share is faulted
       twice, which costs nothing the second time */
    const uintptr_t run = (uintptr_t)dst + done, from = run / page * page;
    if (madvise((void *)from, run + take - from, MADV_POPULATE_WRITE) != 0) {
      atomic_store_explicit(f->refused, 1, memory_order_relaxed);
      return;
    }
    fill_labels((uint8_t *)dst + done, at + done, take, &f->labels);
    done += take;
  }
}
#endif

/* Up to this many label bytes (padded), where uploads map, the fit's
   labels are copied into their buffer when it is made (upload_labels). */
#define FIT_COPIED_AT_CREATE_MAX ((uint64_t)256 << 10)
/* The same bound for fits on the calling thread, which have no command
   to wait for anyway. Past it the two copies (here, then the driver's into
   a buffer of fresh pages) cost more than a map and one copy, done by the
   fill threads: on PoCL, the 2-core VM, 10,000 x 512 B (5 MB) fitted in
   0.55-0.59 ms against 0.63-0.74, 8,000 x 512 B 0.41-0.46 against 0.50-
   0.57, 1,000 x 4 KiB 0.29-0.31 against 0.33-0.36; level at 2 MB (4,000 x
   512 B); 1 MB and less lost (2,000 x 512 B 0.15 against 0.12, 100 x 4
   KiB 0.09-0.11 against 0.04). */
#define FIT_HOST_COPIED_AT_CREATE_MAX ((uint64_t)2 << 20)

/* On a CPU device vdata's bytes are host memory either way, and a large
   fit's time was the first touch of its pages: 819 MB of labels took 1.6 s
   to fill into a mapped buffer on the 2-core development VM, where one call
   that faults every page in first (MAP_POPULATE) and a copy took 0.5 s
   (bench/RESULTS.md). So from TABCL__LARGE_ALLOC bytes, where glibc's
   malloc, which PoCL's buffers come from, maps fresh pages for every
   allocation (below, it reuses its heap: a fit of 200,000 x 128 B, 26 MB,
   took 12.6-12.9 ms with the driver's buffer and 14.6-15.8 ms in memory of
   its own; 10,000 x 4 KiB, 41 MB, 19-21 ms against 5.3-5.4), the index
   takes memory of its own in transparent huge pages (tabcl__malloc_large),
   faults it in, fills it and hands it to the device (CL_MEM_USE_HOST_PTR):
   819 MB mapped and filled in 66-71 ms there, against 259-273 ms with 4 KiB
   pages faulted in by MAP_POPULATE (where huge pages are off, the same
   calls fault 4 KiB pages). Where that is not possible it returns 0 and
   the plain path runs. */
static int labels_in_own_memory(tabcl_category_index *idx, const fit_source *src,
                                uint64_t padded, tabcl_status *st) {
#ifdef MADV_POPULATE_WRITE
  tabcl_context *ctx = idx->ctx;
  /* Not on an application's queue: the index's destroy would have to wait
     for that queue before freeing the memory (the driver's own buffer needs
     no wait). */
  if (src->dev || padded < TABCL__LARGE_ALLOC || tabcl__upload_staged(ctx) || ctx->app_objects)
    return 0;
  void *h = tabcl__malloc_large((size_t)padded);
  if (!h) return 0;
  atomic_int refused;
  atomic_init(&refused, 0);
  const faulted_fill f = {{idx, src->v}, &refused};
  tabcl__fill_parallel_n(ctx, tabcl__fill_threads_for(ctx, (size_t)padded), fill_faulted, h, 0,
                         (size_t)padded, &f);
  /* a kernel without MADV_POPULATE_WRITE (before Linux 5.14), or memory it
     could not give: the plain path, whose buffer the driver allocates */
  if (atomic_load(&refused)) {
    tabcl__free_large(h, (size_t)padded);
    return 0;
  }
  *st = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, (size_t)padded, h,
                             &idx->vdata, "index bytes");
  if (*st) {
    tabcl__free_large(h, (size_t)padded);
    return 1;
  }
  idx->vhost = h;
  idx->vhost_bytes = (size_t)padded;
  return 1;
#else
  (void)idx, (void)src, (void)padded, (void)st;
  return 0;
#endif
}

/* Whether vdata is made with the host bytes copied in at creation: no
   command, no wait (upload_labels); `most`: the bytes up to which. */
static int copied_at_create(tabcl_context *ctx, const fit_source *src, uint64_t padded,
                            uint64_t most) {
  return !src->dev && !tabcl__upload_staged(ctx) && padded <= most;
}

/* vdata from the source: one upload of the host bytes (staged and threaded
   where the context stages uploads), or a device copy per column. */
static tabcl_status upload_labels(tabcl_category_index *idx, const fit_source *src,
                                  uint64_t padded, int on_host) {
  tabcl_context *ctx = idx->ctx;
  tabcl_status st = TABCL_OK;
  if (labels_in_own_memory(idx, src, padded, &st)) return st;
  if (copied_at_create(ctx, src, padded,
                       on_host ? FIT_HOST_COPIED_AT_CREATE_MAX : FIT_COPIED_AT_CREATE_MAX)) {
    /* A small fit where uploads map: the bytes laid out here and copied
       when the buffer is made (CL_MEM_COPY_HOST_PTR), no command and no
       wait; the map, its wait and the unmap took about 48 us of a fit of
       100 labels (0.23 ms) on PoCL. */
    uint8_t *tmp = tabcl__malloc((size_t)padded);
    if (!tmp)
      return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %llu label bytes",
                         (unsigned long long)padded);
    const label_fill f = {idx, src->v};
    fill_labels(tmp, 0, (size_t)padded, &f);
    st = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)padded, tmp,
                              &idx->vdata, "index bytes");
    tabcl__free(tmp);
    return st;
  }
  st = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, (size_t)padded, NULL, &idx->vdata,
                            "index bytes");
  if (st) return st;
  if (!src->dev) {
    const label_fill f = {idx, src->v};
    return tabcl__upload(ctx, idx->vdata, (size_t)padded, fill_labels, &f, "index bytes");
  }
  /* static: the non-blocking write may read it after this call returns */
  static const cl_uchar zeros[16] = {0};
  size_t used = (size_t)idx->data_bytes;
  cl_int err = TABCL_CL(clEnqueueWriteBuffer(ctx->queue, idx->vdata, CL_FALSE, used,
                                             (size_t)padded - used, zeros, 0, NULL, NULL));
  for (int c = 0; c < idx->ncols && err == CL_SUCCESS; c++) {
    size_t n = (size_t)idx->cols[c].offsets[idx->cols[c].length];
    if (n)
      err = TABCL_CL(clEnqueueCopyBuffer(ctx->queue, src->dev[c].data, idx->vdata, 0,
                                         (size_t)idx->cols[c].data_base, n, 0, NULL, NULL));
  }
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueCopyBuffer", "index bytes");
}

/* ---- the fit's scratch -------------------------------------------------- */

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

static void scratch_free(tabcl_context *ctx, fit_scratch *s, int ncols) {
  if (s->dev)
    for (int c = 0; c < ncols; c++) tabcl__buffer_release(s->dev[c].offsets);
  tabcl__free(s->dev);
  /* the temporaries go back to the context's pool (their last commands
     are enqueued: the pool hands them out again once those are done) */
  const cl_mem pooled[] = {s->hash, s->counts, s->totals};
  tabcl__pool_put_n(ctx, (int)(sizeof pooled / sizeof pooled[0]), pooled, 0, NULL);
  const cl_mem m[] = {s->slots, s->ekeys, s->espans, s->ecodes};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) tabcl__buffer_release(m[i]);
  const cl_kernel k[] = {s->kpairs, s->kcollide, s->kcount, s->kscan, s->kentries, s->kspans};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) tabcl__kernel_release(k[i]);
  tabcl__free(s->hslots);
  tabcl__free(s->htotals);
  tabcl__free(s->seg);
  tabcl__free(s->sfirst);
  tabcl__free((void *)s->hb);
  tabcl__free(s->hdata);
  tabcl__free(s->pk);
  tabcl__free(s->pv);
}

/* Column c's offsets on the device, shifted by its data_base so they index
   the whole of vdata; `tmp` holds the longest column's offsets. Created
   from the host in one piece (oclgrind 21.10 loses track of bytes written
   at an offset). */
static tabcl_status column_offsets(tabcl_category_index *idx, const fit_source *fs, int c,
                                   int64_t *tmp, cl_mem *out) {
  const tabcl__catcol *col = &idx->cols[c];
  const size_t bytes = ((size_t)col->length + 1) * sizeof *col->offsets;
  if (fs->dev && !col->data_base) {
    /* fit_cl: the caller's offsets (checked to start at 0) are these
       already; a copy on the device, not an upload of the read-back ones */
    tabcl_status st = tabcl__buffer_create(idx->ctx, CL_MEM_READ_ONLY, bytes, NULL, out,
                                           "label offsets");
    if (st) return st;
    cl_int err = TABCL_CL(clEnqueueCopyBuffer(idx->ctx->queue, fs->dev[c].offsets, *out, 0, 0,
                                              bytes, 0, NULL, NULL));
    return err == CL_SUCCESS ? TABCL_OK
                             : tabcl__cl_fail(err, "clEnqueueCopyBuffer", "label offsets");
  }
  const int64_t *src = col->offsets;
  if (col->data_base) {
    for (int64_t i = 0; i <= col->length; i++) tmp[i] = col->offsets[i] + col->data_base;
    src = tmp;
  }
  return tabcl__buffer_create_from(idx->ctx, CL_MEM_READ_ONLY, bytes, src, out,
                                   "label offsets");
}

static tabcl_status scratch_init(tabcl_category_index *idx, const fit_source *src,
                                 fit_scratch *s, const char *fn) {
  tabcl_context *ctx = idx->ctx;
  int64_t np = 0, longest_col = 0, longest_pairs = 0, longest_label = 0, sparse = 0;
  int64_t longest_sparse = 0;
  s->seg = tabcl__calloc((size_t)idx->ncols + 1, sizeof *s->seg);
  s->sfirst = tabcl__malloc((size_t)idx->ncols * sizeof *s->sfirst);
  s->dev = tabcl__calloc((size_t)idx->ncols, sizeof *s->dev);
  if (!s->seg || !s->sfirst || !s->dev)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       idx->ncols);
  for (int c = 0; c < idx->ncols; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    int64_t here = 0;
    if (col->length > longest_col) longest_col = col->length;
    if (!col->validity) here = col->length;
    else
      for (int64_t i = 0; i < col->length; i++) here += present(col, i);
    if (col->longest > longest_label) longest_label = col->longest;
    s->seg[c] = np;
    s->sfirst[c] = here == col->length ? -1 : sparse;
    if (here != col->length) sparse += here;
    if (here != col->length && col->length > longest_sparse) longest_sparse = col->length;
    np += here;
    if (here > longest_pairs) longest_pairs = here;
  }
  s->seg[idx->ncols] = np;
  s->npairs = np;
  const tabcl__target tg = tabcl__context_target(ctx);
  tabcl__fit_plan_make(&tg, idx->labels, np, idx->data_bytes, longest_col, longest_pairs,
                       longest_sparse, longest_label, &s->plan);
  const tabcl__fit_plan *p = &s->plan;
  size_t n1 = np ? (size_t)np : 1;
  /* A small fit from host memory on a CPU device: on the calling thread,
     its tables made with their contents (host_fit), so that the fit
     enqueues no command at all and waits for none. */
  s->on_host = p->host && copied_at_create(ctx, src, p->vdata_bytes, TABCL__FIT_HOST_BYTES);
  /* only the columns with nulls list their slots */
  s->hslots = tabcl__malloc((sparse ? (size_t)sparse : 1) * sizeof *s->hslots);
  if (!s->hslots)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the slot list of %lld labels", fn,
                       (long long)sparse);
  int64_t j = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    if (s->sfirst[c] < 0) continue;
    uint32_t base = (uint32_t)col->label_base;
    for (int64_t i = 0; i < col->length; i++)
      if (present(col, i)) s->hslots[j++] = base + (uint32_t)i;
  }
  tabcl_status st;
  if ((st = upload_labels(idx, src, p->vdata_bytes, s->on_host))) return st;
  int64_t *tmp = NULL;
  if (idx->ncols > 1) {
    tmp = tabcl__malloc(((size_t)longest_col + 1) * sizeof *tmp);
    if (!tmp)
      return tabcl__fail(TABCL_OUT_OF_MEMORY,
                         "%s: out of host memory for %lld offsets of the longest column", fn,
                         (long long)longest_col + 1);
  }
  for (int c = 0; c < idx->ncols && !st; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    if (!col->length) continue;
    tabcl__dev_strings *d = &s->dev[c];
    d->length = col->length;
    /* offsets reach to this column's end in vdata; the hash reads nothing past it */
    d->bytes = col->data_base + col->offsets[col->length];
    d->max_label = col->longest;
    d->data = idx->vdata;
    st = column_offsets(idx, src, c, tmp, &d->offsets);
  }
  tabcl__free(tmp);
  if (st || s->on_host) return st;
  /* Temporaries from the context's pool: a fresh buffer cost its first
     use (about 60 us a kernel on the H200, whose driver allocates then)
     and its release (30-50 us). */
  const cl_mem_flags rw = CL_MEM_READ_WRITE;
  if ((sparse && (st = tabcl__pool_get(ctx, rw, (size_t)p->hash_bytes, &s->hash,
                                       "fit hashes"))) ||
      (sparse && (st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY,
                                                 (size_t)sparse * sizeof *s->hslots, s->hslots,
                                                 &s->slots, "fit slots"))) ||
      (st = tabcl__pool_get(ctx, rw, (size_t)p->run_bytes, &s->counts, "fit run counts")) ||
      (st = tabcl__buffer_create(ctx, rw, n1 * 8, NULL, &s->ekeys, "index keys")) ||
      (st = tabcl__buffer_create(ctx, rw, n1 * 16, NULL, &s->espans, "index spans")) ||
      (st = tabcl__buffer_create(ctx, rw, n1 * 4, NULL, &s->ecodes, "index codes")) ||
      (st = tabcl__pool_get(ctx, rw, ((size_t)idx->ncols + 1) * 8, &s->totals,
                            "fit column totals and collision flag")))
    return st;
  s->htotals = tabcl__calloc((size_t)idx->ncols + 1, sizeof *s->htotals);
  if (!s->htotals)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column totals", fn,
                       idx->ncols);
  const struct {
    const char *name;
    cl_kernel *k;
  } ks[] = {{"catindex_fit_pairs", &s->kpairs},     {"catindex_fit_collide", &s->kcollide},
            {"catindex_fit_count", &s->kcount},     {"catindex_fit_scan", &s->kscan},
            {"catindex_fit_entries", &s->kentries}, {"catindex_fit_spans", &s->kspans}};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0] && !st && np; i++)
    st = tabcl__kernel_create(ctx, "catindex", tabcl__catindex_options(&ctx->tune, 0), ks[i].name,
                              ks[i].k);
  return st;
}

/* The host bytes of each column's label 0 (host work only: BY_VALUE ranks,
   kept collisions): the caller's own, or vdata read back once. */
static tabcl_status host_bytes(tabcl_category_index *idx, const fit_source *src, fit_scratch *s) {
  if (s->hb) return TABCL_OK;
  const uint8_t **hb = tabcl__calloc((size_t)idx->ncols, sizeof *hb);
  if (!hb)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %d column records",
                       idx->ncols);
  if (src->dev) {
    s->hdata = tabcl__malloc(idx->data_bytes ? (size_t)idx->data_bytes : 1);
    tabcl_status st =
        s->hdata ? tabcl__download(idx->ctx, idx->vdata, 0, (size_t)idx->data_bytes, s->hdata)
                 : tabcl__fail(TABCL_OUT_OF_MEMORY,
                               "fit: out of host memory for a host copy of %lld label bytes",
                               (long long)idx->data_bytes);
    if (st) {
      tabcl__free((void *)hb);
      return st;
    }
    for (int c = 0; c < idx->ncols; c++) hb[c] = s->hdata + idx->cols[c].data_base;
  } else {
    /* a column without bytes points at a byte nothing reads */
    static const uint8_t none = 0;
    for (int c = 0; c < idx->ncols; c++)
      hb[c] = src->v[c].length && src->v[c].data ? src->v[c].data + src->v[c].offsets[0] : &none;
  }
  s->hb = hb;
  return TABCL_OK;
}

/* The programs the seed tries below ask for (the hash program as the plan
   builds it, the sort for the longest column, the category kernels), built
   side by side first: on a cold start the builds are the fit's time
   (bench/RESULTS.md, "Cold start"). Best effort and free of failure
   injection (tabcl__programs_prefetch); a failed build is met and reported
   by the call that needs it. */
static void prefetch_programs(tabcl_context *ctx, const fit_scratch *s) {
  /* planned only where the programs would build side by side: a device
     that builds one at a time (every one but NVIDIA's) skips it */
  if (!s->npairs || tabcl__build_threads(ctx) < 2) return;
  const int was = tabcl__fault_suspend(1);
  const tabcl__target tg = tabcl__context_target(ctx);
  /* the hash program's options never depend on the column's sizes */
  tabcl__hash_plan hp;
  tabcl__hash_plan_make(&tg, 1, 1, 1, &hp);
  tabcl__sort_plan *sp = tabcl__malloc(sizeof *sp);
  if (sp) {
    tabcl__sort_plan_make(&tg, (uint64_t)s->plan.longest_pairs, sp);
    const tabcl__program_want w[] = {
        {"hash", hp.options}, {"sort", sp->extra}, {"catindex", tabcl__catindex_options(&ctx->tune, 0)}};
    tabcl__programs_prefetch(ctx, (int)(sizeof w / sizeof w[0]), w);
    tabcl__free(sp);
  }
  (void)tabcl__fault_suspend(was);
}

/* Enqueues kernel k over `items` work-items (dimension 0, from 0) in
   launches of at most step, each given its first item as argument `from_arg`;
   dimension 1 has `dim1` items in groups of 1. */
static tabcl_status launch_sliced(tabcl_context *ctx, cl_kernel k, const char *name, size_t want,
                                  int64_t items, int64_t step, size_t dim1, cl_uint from_arg) {
  size_t wg = tabcl__wg_size(ctx, k, want);
  tabcl_status st = TABCL_OK;
  for (int64_t from = 0; from < items && !st; from += step) {
    int64_t count = items - from < step ? items - from : step;
    st = TABCL_SET_ARGS_AT(k, name, from_arg, TABCL_ARG(from));
    const size_t global[2] = {tabcl__round_up((size_t)count, wg), dim1};
    const size_t local[2] = {wg, 1};
    if (!st) st = tabcl__launch(ctx, k, dim1 > 1 ? 2 : 1, global, local, 0, NULL, NULL, name);
  }
  return st;
}

/* Where the try's collision flag sits in the totals buffer, in ints: after
   the ncols column totals (longs). */
static cl_long collision_flag_at(const tabcl_category_index *idx) {
  return 2 * (cl_long)idx->ncols;
}

/* Column c under seed: its pairs, sorted, in ekeys/ecodes from its first
   pair seg[c] (n of them). */
static tabcl_status column_pairs(tabcl_category_index *idx, fit_scratch *s, int c, uint64_t seed,
                                 int64_t *n_out) {
  tabcl_context *ctx = idx->ctx;
  const tabcl__fit_plan *p = &s->plan;
  int64_t first = s->seg[c], n = s->seg[c + 1] - first;
  *n_out = n;
  if (!n) return TABCL_OK;
  const cl_int dense = s->sfirst[c] < 0;
  /* a dense column's hashes are its keys, in place; one with nulls is
     hashed from its label 0 and its present ones paired below */
  tabcl_status st = tabcl__hash_column(ctx, &s->dev[c], c, seed, idx->mask,
                                       dense ? s->ekeys : s->hash, dense ? (size_t)first : 0, 0,
                                       NULL, NULL);
  const cl_long sfirst = dense ? 0 : s->sfirst[c];
  const cl_uint base = (cl_uint)idx->cols[c].label_base;
  /* a dense column reads neither hashes nor slots (where no column has
     nulls neither buffer is made): any buffer stands in */
  const cl_mem hash = s->hash ? s->hash : s->ekeys;
  const cl_mem slots = s->slots ? s->slots : s->ekeys;
  const cl_long flag_at = collision_flag_at(idx), at = first;
  const cl_int reset = first == 0;                    /* the try's first column with pairs */
  if (!st)
    st = TABCL_SET_ARGS(s->kpairs, "catindex_fit_pairs", TABCL_ARG(hash), TABCL_ARG(slots),
                        TABCL_ARG(s->ekeys), TABCL_ARG(s->ecodes), TABCL_ARG(sfirst),
                        TABCL_ARG(first), TABCL_ARG(n), TABCL_ARG(base), TABCL_ARG(dense),
                        TABCL_ARG(s->totals), TABCL_ARG(flag_at), TABCL_ARG(reset), TABCL_ARG(at));
  if (!st)
    st = launch_sliced(ctx, s->kpairs, "catindex_fit_pairs", p->pairs_wg, n, p->pairs_step, 1, 5);
  if (!st)
    st = tabcl__sort_pairs_at(ctx, s->ekeys, s->ecodes, (size_t)first, (size_t)n, 0, NULL, NULL);
  return st;
}

/* One column of a seed try, all enqueued: its sorted pairs, the collision
   flag, and its entries written from entry seg[c] (where its pairs start;
   totals[c] set). */
static tabcl_status column_try(tabcl_category_index *idx, fit_scratch *s, int c, uint64_t seed) {
  tabcl_context *ctx = idx->ctx;
  const tabcl__fit_plan *p = &s->plan;
  int64_t n;
  tabcl_status st = column_pairs(idx, s, c, seed, &n);
  if (st) return st;
  const cl_uint base = (cl_uint)idx->cols[c].label_base;
  const cl_mem offs = s->dev[c].offsets;
  const cl_int col = c;
  const cl_long flag_at = collision_flag_at(idx), at = s->seg[c];
  if (n > 1) {
    st = TABCL_SET_ARGS(s->kcollide, "catindex_fit_collide", TABCL_ARG(s->ekeys),
                        TABCL_ARG(s->ecodes), TABCL_ARG(idx->vdata), TABCL_ARG(offs),
                        TABCL_ARG(base), TABCL_ARG(n), TABCL_ARG(n), TABCL_ARG(s->totals),
                        TABCL_ARG(flag_at), TABCL_ARG(at));
    if (!st)
      st = launch_sliced(ctx, s->kcollide, "catindex_fit_collide", p->pairs_wg, n - 1,
                         p->pairs_step, (size_t)p->chunks, 5);
  }
  const int64_t run = p->run, runs = (n + run - 1) / run;
  if (!st && runs) {
    st = TABCL_SET_ARGS(s->kcount, "catindex_fit_count", TABCL_ARG(s->ekeys), TABCL_ARG(n),
                        TABCL_ARG(run), TABCL_ARG(run), TABCL_ARG(s->counts), TABCL_ARG(at));
    if (!st)
      st = launch_sliced(ctx, s->kcount, "catindex_fit_count", p->run_wg, runs, p->run_step, 1, 3);
  }
  /* the scan runs for an empty column too: it sets totals[c] to 0 */
  size_t lanes = tabcl__wg_size(ctx, s->kscan, p->scan_lanes);
  if (!st)
    st = TABCL_SET_ARGS(s->kscan, "catindex_fit_scan", TABCL_ARG(s->counts), TABCL_ARG(runs),
                        TABCL_ARG(at), TABCL_ARG(s->totals), TABCL_ARG(col),
                        TABCL_LOCAL(lanes * 8));
  if (!st) st = tabcl__launch(ctx, s->kscan, 1, &lanes, &lanes, 0, NULL, NULL, "catindex_fit_scan");
  /* the entries, staged through the span table (the pairs sit where they go) */
  if (!st && runs) {
    st = TABCL_SET_ARGS(s->kentries, "catindex_fit_entries", TABCL_ARG(s->ekeys),
                        TABCL_ARG(s->ecodes), TABCL_ARG(n), TABCL_ARG(run), TABCL_ARG(run),
                        TABCL_ARG(s->counts), TABCL_ARG(s->espans), TABCL_ARG(at));
    if (!st)
      st = launch_sliced(ctx, s->kentries, "catindex_fit_entries", p->run_wg, runs, p->run_step,
                         1, 4);
  }
  if (!st && runs) {
    const cl_long step = p->pairs_step;
    st = TABCL_SET_ARGS(s->kspans, "catindex_fit_spans", TABCL_ARG(s->espans), TABCL_ARG(offs),
                        TABCL_ARG(base), TABCL_ARG(n), TABCL_ARG(n), TABCL_ARG(s->totals),
                        TABCL_ARG(col), TABCL_ARG(s->ekeys), TABCL_ARG(s->ecodes), TABCL_ARG(at),
                        TABCL_ARG(step));
    if (!st)
      st = launch_sliced(ctx, s->kspans, "catindex_fit_spans", p->pairs_wg, n, p->pairs_step, 1,
                         3);
  }
  return st;
}

/* A seed try over every column; *collided: some column has two distinct
   labels of one hash. Reads back that flag, nothing else. */
static tabcl_status seed_try(tabcl_category_index *idx, fit_scratch *s, uint64_t seed,
                             int *collided) {
  tabcl_context *ctx = idx->ctx;
  tabcl_status st;
  /* the flag is cleared by the first column's pairs kernel (the loop runs
     only where some column has pairs) */
  for (int c = 0; c < idx->ncols; c++)
    if ((st = column_try(idx, s, c, seed))) return st;
  const size_t nc = (size_t)idx->ncols;
  if ((st = tabcl__read(ctx, s->totals, 0, nc * 8 + sizeof(cl_int), s->htotals))) return st;
  cl_int flag;
  memcpy(&flag, (const cl_int *)(const void *)s->htotals + collision_flag_at(idx), sizeof flag);
  *collided = flag != 0;
  return TABCL_OK;
}

/* ---- host work: BY_VALUE ranks, and the fallback with kept collisions ---- */

/* Each column's code count from the entry ranges: its length (BY_POSITION)
   or its distinct labels (BY_VALUE). */
static void set_code_counts(tabcl_category_index *idx, const int64_t *range) {
  for (int c = 0; c < idx->ncols; c++)
    idx->cols[c].codes = idx->order == TABCL_CODES_BY_POSITION ? idx->cols[c].length
                                                                : range[c + 1] - range[c];
}

/* The column a ranking sorts, and its host bytes (qsort has no context). */
static _Thread_local const tabcl__catcol *sort_col;
static _Thread_local const uint8_t *sort_bytes;

static int cmp_position_label(const void *pa, const void *pb) {
  int32_t x = *(const int32_t *)pa, y = *(const int32_t *)pb;
  const int64_t *o = sort_col->offsets;
  return bytes_cmp(sort_bytes + o[x], o[x + 1] - o[x], sort_bytes + o[y], o[y + 1] - o[y]);
}

/* code[0 .. count): positions of distinct labels of col, replaced by their
   bytewise ranks (0 .. count - 1). */
static tabcl_status rank_by_value(const tabcl__catcol *col, const uint8_t *bytes, int32_t *code,
                                  int64_t count) {
  size_t n1 = count ? (size_t)count : 1;
  int32_t *order = tabcl__malloc(n1 * sizeof *order);
  int32_t *rank = tabcl__malloc(col->length ? (size_t)col->length * sizeof *rank : 1);
  if (!order || !rank) {
    tabcl__free(order);
    tabcl__free(rank);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for the ranks of %lld labels",
                       (long long)count);
  }
  memcpy(order, code, (size_t)count * sizeof *order);
  sort_col = col;
  sort_bytes = bytes;
  qsort(order, (size_t)count, sizeof *order, cmp_position_label);
  for (int64_t j = 0; j < count; j++) rank[order[j]] = (int32_t)j;
  for (int64_t j = 0; j < count; j++) code[j] = rank[code[j]];
  tabcl__free(order);
  tabcl__free(rank);
  return TABCL_OK;
}

/* BY_VALUE after the device built the entries: their codes (positions)
   read back, ranked per column, written again. */
static tabcl_status rank_device_codes(tabcl_category_index *idx, const fit_source *src,
                                      fit_scratch *s, const int64_t *range) {
  int64_t ne = range[idx->ncols];
  if (!ne) return TABCL_OK;
  tabcl_status st = host_bytes(idx, src, s);
  if (st) return st;
  int32_t *code = tabcl__malloc((size_t)ne * sizeof *code);
  if (!code)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %lld codes",
                       (long long)ne);
  st = tabcl__read(idx->ctx, idx->ecodes, 0, (size_t)ne * 4, code);
  for (int c = 0; c < idx->ncols && !st; c++)
    st = rank_by_value(&idx->cols[c], s->hb[c], code + range[c], range[c + 1] - range[c]);
  if (!st) st = tabcl__write(idx->ctx, idx->ecodes, 0, (size_t)ne * 4, code);
  tabcl__free(code);
  return st;
}

/* The slot's label in the host bytes. */
static const uint8_t *slot_label(const tabcl_category_index *idx, const fit_scratch *s, int c,
                                 uint32_t slot, int64_t *n) {
  const tabcl__catcol *col = &idx->cols[c];
  int64_t i = (int64_t)slot - col->label_base;
  *n = col->offsets[i + 1] - col->offsets[i];
  return s->hb[c] + col->offsets[i];
}

static int same_label(const tabcl_category_index *idx, const fit_scratch *s, int c, uint32_t x,
                      uint32_t y) {
  int64_t nx, ny;
  const uint8_t *a = slot_label(idx, s, c, x, &nx), *b = slot_label(idx, s, c, y, &ny);
  return nx == ny && (nx == 0 || memcmp(a, b, (size_t)nx) == 0);
}

/* By bytes, then by slot, so equal labels end with their last position
   (slots of sort_col, whose bytes are sort_bytes). */
static int cmp_label_then_slot(const void *pa, const void *pb) {
  uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
  int32_t i = (int32_t)(x - (uint32_t)sort_col->label_base);
  int32_t j = (int32_t)(y - (uint32_t)sort_col->label_base);
  int r = cmp_position_label(&i, &j);
  return r ? r : (x > y) - (x < y);
}

/* The index's directory (catindex.h) from its sorted keys, column c's
   entries range[c] .. range[c + 1]: catindex_fit_directory over each, or
   on the host where the keys are there (hkeys: a host fit's). */
static tabcl_status make_directory(tabcl_category_index *idx, const fit_scratch *s,
                                   const int64_t *range, const uint64_t *hkeys) {
  tabcl_context *ctx = idx->ctx;
  const size_t nc = (size_t)idx->ncols;
  cl_long2 *info = tabcl__malloc(nc * sizeof *info);
  if (!info)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %d directory records",
                       idx->ncols);
  const int kept = tabcl__catindex_mask_bits(idx->mask);
  int64_t slots = 0;
  for (size_t c = 0; c < nc; c++) {
    const int bits = tabcl__catindex_dir_bits(range[c + 1] - range[c], idx->mask);
    info[c].s[0] = slots;
    info[c].s[1] = kept - bits;
    slots += ((int64_t)1 << bits) + 1;
  }
  cl_kernel k = NULL;
  tabcl_status st = TABCL_OK;
  if (hkeys) {
    uint32_t *dir = tabcl__malloc((size_t)slots * sizeof *dir);
    if (!dir) {
      tabcl__free(info);
      return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %lld directory slots",
                         (long long)slots);
    }
    for (size_t c = 0; c < nc; c++) {
      const int64_t count = (c + 1 < nc ? info[c + 1].s[0] : slots) - info[c].s[0];
      tabcl__catindex_fill_directory(hkeys, range[c], range[c + 1] - range[c], info[c].s[1],
                                     count, dir + info[c].s[0]);
    }
    st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, (size_t)slots * 4, dir, &idx->dir,
                                   "index directory");
    tabcl__free(dir);
  } else {
    st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)slots * 4, NULL, &idx->dir,
                              "index directory");
  }
  if (!st)
    st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, nc * sizeof *info, info, &idx->dinfo,
                                   "index directory records");
  if (!st && !hkeys)
    st = tabcl__kernel_create(ctx, "catindex", tabcl__catindex_options(&ctx->tune, 0),
                              "catindex_fit_directory", &k);
  for (size_t c = 0; c < nc && !st && !hkeys; c++) {
    const cl_long lo = range[c], n = range[c + 1] - range[c], shift = info[c].s[1];
    const cl_long base = info[c].s[0];
    const cl_long count = (c + 1 < nc ? info[c + 1].s[0] : slots) - base;
    st = TABCL_SET_ARGS(k, "catindex_fit_directory", TABCL_ARG(idx->keys), TABCL_ARG(lo),
                        TABCL_ARG(n), TABCL_ARG(shift), TABCL_ARG(count), TABCL_ARG(idx->dir),
                        TABCL_ARG(base));
    if (!st)
      st = launch_sliced(ctx, k, "catindex_fit_directory", s->plan.pairs_wg, n + 1,
                         s->plan.pairs_step, 1, 7);
  }
  if (!st) idx->dir_bytes = slots * 4 + (int64_t)(nc * sizeof *info);
  tabcl__kernel_release(k);
  tabcl__free(info);
  return st;
}

/* The index's tables from every column's sorted pairs on the host (s->pk,
   s->pv from s->seg[c]): one entry per run of one hash, the last
   position's; where distinct labels share a hash (kept collisions), one
   entry per distinct label. Uploaded, with the directory worked out here. */
static tabcl_status host_entries(tabcl_category_index *idx, fit_scratch *s) {
  tabcl_context *ctx = idx->ctx;
  size_t n1 = s->npairs ? (size_t)s->npairs : 1;
  tabcl_status st = TABCL_OK;
  uint64_t *key = tabcl__malloc(n1 * sizeof *key);
  cl_long *span = tabcl__malloc(n1 * 2 * sizeof *span);
  int32_t *code = tabcl__malloc(n1 * sizeof *code);
  int64_t *range = tabcl__malloc(((size_t)idx->ncols + 1) * sizeof *range);
  if (!key || !span || !code || !range) {
    st = tabcl__fail(TABCL_OUT_OF_MEMORY,
                     "fit: out of host memory for the vocabulary entries of %zu labels", n1);
    goto done;
  }
  int64_t ne = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const int64_t at = s->seg[c], n = s->seg[c + 1] - at;
    const tabcl__catcol *col = &idx->cols[c];
    range[c] = ne;
    for (int64_t r = at; r < at + n;) {
      int64_t q = r + 1;
      while (q < at + n && s->pk[q] == s->pk[r]) q++;
      int all_same = 1;
      for (int64_t j = r + 1; j < q && all_same; j++) all_same = same_label(idx, s, c, s->pv[r], s->pv[j]);
      if (!all_same) {
        /* group the run's labels, one entry per distinct label, the last position's */
        sort_col = col;
        sort_bytes = s->hb[c];
        qsort(s->pv + r, (size_t)(q - r), sizeof *s->pv, cmp_label_then_slot);
      }
      for (int64_t j = r; j < q; j++) {
        /* pairs of one label are sorted by slot: the last is the last position */
        if (j + 1 < q && (all_same || same_label(idx, s, c, s->pv[j], s->pv[j + 1]))) continue;
        int64_t i = (int64_t)s->pv[j] - col->label_base;
        key[ne] = s->pk[r];
        span[2 * ne] = col->data_base + col->offsets[i];
        span[2 * ne + 1] = col->offsets[i + 1] - col->offsets[i];
        code[ne++] = (int32_t)i;
      }
      r = q;
    }
  }
  range[idx->ncols] = ne;
  set_code_counts(idx, range);
  for (int c = 0; c < idx->ncols && !st && idx->order == TABCL_CODES_BY_VALUE; c++)
    st = rank_by_value(&idx->cols[c], s->hb[c], code + range[c], range[c + 1] - range[c]);
  const cl_mem_flags ro = CL_MEM_READ_ONLY;
  size_t n = (size_t)ne;
  if (!st && !(st = tabcl__buffer_create_from(ctx, ro, n * 8, key, &idx->keys, "index keys")) &&
      !(st = tabcl__buffer_create_from(ctx, ro, n * 16, span, &idx->spans, "index spans")) &&
      !(st = tabcl__buffer_create_from(ctx, ro, n * 4, code, &idx->ecodes, "index codes")))
    st = tabcl__buffer_create_from(ctx, ro, ((size_t)idx->ncols + 1) * 8, range, &idx->ranges,
                                   "index ranges");
  if (!st) st = make_directory(idx, s, range, key);
  if (!st) idx->entries = ne;
done:
  tabcl__free(key);
  tabcl__free(span);
  tabcl__free(code);
  tabcl__free(range);
  return st;
}

/* The host's pair arrays, n1 each. */
static tabcl_status host_pairs_alloc(fit_scratch *s) {
  size_t n1 = s->npairs ? (size_t)s->npairs : 1;
  s->pk = tabcl__malloc(n1 * sizeof *s->pk);
  s->pv = tabcl__malloc(n1 * sizeof *s->pv);
  if (!s->pk || !s->pv)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "fit: out of host memory for the hash pairs of %zu labels", n1);
  return TABCL_OK;
}

/* The fallback: no seed within the bound separated every label, so the
   last seed stays and each colliding run keeps one entry per distinct
   label (lookups confirm every candidate). Built on the host from every
   column's sorted pairs, read back from the device, then uploaded. */
static tabcl_status fallback_entries(tabcl_category_index *idx, const fit_source *src,
                                     fit_scratch *s) {
  tabcl_context *ctx = idx->ctx;
  tabcl_status st = host_bytes(idx, src, s);
  if (!st) st = host_pairs_alloc(s);
  for (int c = 0; c < idx->ncols && !st; c++) {
    int64_t n, at = s->seg[c];
    if ((st = column_pairs(idx, s, c, idx->seed, &n))) break;
    if (n && ((st = tabcl__download(ctx, s->ekeys, (size_t)at * 8, (size_t)n * 8, s->pk + at)) ||
              (st = tabcl__download(ctx, s->ecodes, (size_t)at * 4, (size_t)n * 4, s->pv + at))))
      break;
  }
  return st ? st : host_entries(idx, s);
}

/* ---- the fit on the calling thread (fit.host_labels) -------------------- */

/* Every seed try on the host: each column's present labels hashed in slot
   order (the host XXH3, the one the kernels are checked against), sorted
   by (hash, slot) and checked for distinct labels of one hash; then the
   tables (host_entries). The same seeds, pairs and entries as the device
   fit, so the same index. */
static tabcl_status host_fit(tabcl_category_index *idx, const fit_source *src, fit_scratch *s) {
  tabcl_status st = host_bytes(idx, src, s);
  if (!st) st = host_pairs_alloc(s);
  size_t n1 = s->npairs ? (size_t)s->npairs : 1;
  uint64_t *tk = st ? NULL : tabcl__malloc(n1 * sizeof *tk);
  uint32_t *tv = st ? NULL : tabcl__malloc(n1 * sizeof *tv);
  if (!st && (!tk || !tv))
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for the sort of %zu pairs",
                     n1);
  idx->seed = 0;
  idx->collisions = 0;
  for (uint64_t seed = 0; !st && s->npairs && seed < (uint64_t)s->plan.seed_tries; seed++) {
    idx->seed = seed;
    int collided = 0;
    for (int c = 0; c < idx->ncols; c++) {
      const tabcl__catcol *col = &idx->cols[c];
      const int64_t at = s->seg[c];
      tabcl__xxh3_state keys;
      tabcl__xxh3_keys(&keys, tabcl__column_seed(seed, c));
      int64_t j = at;
      for (int64_t i = 0; i < col->length; i++) {
        if (!present(col, i)) continue;
        const int64_t o = col->offsets[i], len = col->offsets[i + 1] - o;
        s->pk[j] = tabcl__xxh3_64_keyed(&keys, s->hb[c] + o, (size_t)len) & idx->mask;
        s->pv[j++] = (uint32_t)(col->label_base + i);
      }
      tabcl__sort_pairs_host(s->pk + at, s->pv + at, (size_t)(j - at), tk, tv);
      for (int64_t r = at; r + 1 < j && !collided; r++)
        collided = s->pk[r] == s->pk[r + 1] && !same_label(idx, s, c, s->pv[r], s->pv[r + 1]);
    }
    idx->collisions = collided;
    if (!collided) break;
  }
  tabcl__free(tk);
  tabcl__free(tv);
  return st ? st : host_entries(idx, s);
}

/* ---- the index's tables --------------------------------------------------- */

/* The index's tables from the entries the device wrote: the scratch
   tables themselves where every column's entries fill its pairs (nothing
   to move), else packed by catindex_fit_pack into tables of their size. */
static tabcl_status take_tables(tabcl_category_index *idx, fit_scratch *s, const int64_t *range,
                                int whole) {
  tabcl_context *ctx = idx->ctx;
  const size_t nc = (size_t)idx->ncols, ne = (size_t)range[nc];
  tabcl_status st = tabcl__buffer_create_from(ctx, CL_MEM_READ_ONLY, (nc + 1) * 8, range,
                                              &idx->ranges, "index ranges");
  if (st) return st;
  if (whole) {
    idx->keys = s->ekeys;
    idx->spans = s->espans;
    idx->ecodes = s->ecodes;
    s->ekeys = s->espans = s->ecodes = NULL;
    return TABCL_OK;
  }
  /* written by the pack kernel, read-only to lookups after */
  const cl_mem_flags rw = CL_MEM_READ_WRITE, ro = CL_MEM_READ_ONLY;
  cl_mem seg = NULL;
  cl_kernel k = NULL;
  if ((st = tabcl__buffer_create(ctx, rw, ne * 8, NULL, &idx->keys, "index keys")) ||
      (st = tabcl__buffer_create(ctx, rw, ne * 16, NULL, &idx->spans, "index spans")) ||
      (st = tabcl__buffer_create(ctx, rw, ne * 4, NULL, &idx->ecodes, "index codes")) || !ne)
    return st;
  const cl_int ncols = idx->ncols;
  const cl_long n = (cl_long)ne;
  if (!(st = tabcl__buffer_create_from(ctx, ro, (nc + 1) * 8, s->seg, &seg, "fit column starts")) &&
      !(st = tabcl__kernel_create(ctx, "catindex", tabcl__catindex_options(&ctx->tune, 0),
                                      "catindex_fit_pack", &k)) &&
      !(st = TABCL_SET_ARGS(k, "catindex_fit_pack", TABCL_ARG(s->ekeys), TABCL_ARG(s->espans),
                            TABCL_ARG(s->ecodes), TABCL_ARG(seg), TABCL_ARG(idx->ranges),
                            TABCL_ARG(ncols), TABCL_ARG(n), TABCL_ARG(n), TABCL_ARG(idx->keys),
                            TABCL_ARG(idx->spans), TABCL_ARG(idx->ecodes))))
    st = launch_sliced(ctx, k, "catindex_fit_pack", s->plan.pairs_wg, n, s->plan.pairs_step, 1,
                       6);
  tabcl__kernel_release(k);
  tabcl__buffer_release(seg);
  return st;
}

/* After a try without collision: the entries the device wrote (column c's
   from its first pair) become the index's tables, packed where duplicates
   left gaps; BY_VALUE codes are ranked then. */
static tabcl_status device_tables(tabcl_category_index *idx, const fit_source *src,
                                  fit_scratch *s) {
  const size_t nc = (size_t)idx->ncols;
  int64_t *range = tabcl__malloc((nc + 1) * sizeof *range);
  if (!range)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "fit: out of host memory for %d column ranges",
                       idx->ncols + 1);
  /* the last try's, read back with its flag (zeros where no try ran) */
  const int64_t *total = s->htotals;
  tabcl_status st = TABCL_OK;
  int whole = 1;
  range[0] = 0;
  for (size_t c = 0; c < nc; c++) {
    range[c + 1] = range[c] + total[c];
    whole &= total[c] == s->seg[c + 1] - s->seg[c];
  }
  set_code_counts(idx, range);
  whole &= s->npairs > 0;
  st = take_tables(idx, s, range, whole);
  if (!st) st = make_directory(idx, s, range, NULL);
  if (!st && idx->order == TABCL_CODES_BY_VALUE) st = rank_device_codes(idx, src, s, range);
  if (!st) idx->entries = range[nc];
  tabcl__free(range);
  return st;
}

static tabcl_status build(tabcl_context *ctx, int ncols, const fit_source *src,
                          tabcl_code_order order, const char *fn, tabcl_category_index **out) {
  tabcl_category_index *idx = tabcl__calloc(1, sizeof *idx);
  if (!idx) return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for the index", fn);
  idx->ctx = ctx;
  idx->ncols = ncols;
  idx->order = order;
  idx->mask = tabcl__hash_mask(ctx);
  /* without its lock an index only takes the device path (catindex_host.c) */
  idx->host_lock_made = pthread_mutex_init(&idx->host_lock, NULL) == 0;
  fit_scratch s = {0};
  tabcl_status st = TABCL_OK;
  idx->cols = tabcl__calloc((size_t)ncols, sizeof *idx->cols);
  if (!idx->cols) {
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                     ncols);
    goto done;
  }
  if ((st = copy_columns(idx, src, fn)) || (st = scratch_init(idx, src, &s, fn))) goto done;
  if (s.on_host) {
    if ((st = host_fit(idx, src, &s))) goto done;
    goto tables_made;
  }
  prefetch_programs(ctx, &s);
  /* Seed 0, 1, 2, ... until no column has two distinct labels of equal hash;
     past the bound the last seed stays and lookups confirm every candidate. */
  for (uint64_t seed = 0; s.npairs && seed < (uint64_t)s.plan.seed_tries; seed++) {
    idx->seed = seed;
    if ((st = seed_try(idx, &s, seed, &idx->collisions))) goto done;
    if (!idx->collisions) break;
  }
  st = idx->collisions ? fallback_entries(idx, src, &s) : device_tables(idx, src, &s);
  if (st) goto done;
tables_made:
  idx->device_bytes = (int64_t)((size_t)idx->entries * 28 + ((size_t)idx->ncols + 1) * 8 +
                                (size_t)s.plan.vdata_bytes) + idx->dir_bytes;
  for (int c = 0; c < ncols; c++)   /* the offsets it keeps (doffs, below) */
    if (idx->cols[c].length) idx->device_bytes += (idx->cols[c].length + 1) * 8;
  /* the tables are written by commands still queued; the index is ready
     for lookups (same queue) but a failure must show here, not later. A
     host fit enqueued none. */
  if (!s.on_host) st = tabcl__finish(ctx);
  /* the index keeps its offsets on the device only (save reads them back);
     the host ones may be the caller's, which the index must not hold */
  for (int c = 0; !st && c < ncols; c++) {
    tabcl__catcol *col = &idx->cols[c];
    if (col->offsets_owned) tabcl__free(col->offsets);
    col->offsets = NULL;
    col->offsets_owned = 0;
    if (s.dev) col->doffs = s.dev[c].offsets, s.dev[c].offsets = NULL;
  }
done:
  scratch_free(ctx, &s, ncols);
  if (st) {
    tabcl_category_index_destroy(idx);
    return st;
  }
  *out = idx;
  return TABCL_OK;
}

tabcl_status tabcl__catindex_build(tabcl_context *ctx, int ncols, const tabcl_strings_view *v,
                                   const int64_t *longest, tabcl_code_order order,
                                   const char *fn, tabcl_category_index **out) {
  const fit_source src = {v, NULL, longest};
  return build(ctx, ncols, &src, order, fn, out);
}

/* The arguments fit and fit_cl share. */
static tabcl_status check_fit_call(const tabcl_context *ctx, int ncols, const void *vocabularies,
                                   tabcl_code_order order, tabcl_category_index **out,
                                   const char *fn) {
  if (!ctx || !out)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : "out");
  if (ncols < 1) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ncols is %d; at least 1", fn, ncols);
  if (!vocabularies) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: vocabularies is NULL", fn);
  if (order != TABCL_CODES_BY_POSITION && order != TABCL_CODES_BY_VALUE)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: unknown code order %d", fn, (int)order);
  return TABCL_OK;
}

tabcl_status tabcl_category_index_fit(tabcl_context *ctx, int ncols,
                                      const tabcl_strings_view *vocabularies,
                                      tabcl_code_order order, tabcl_category_index **out) {
  static const char fn[] = "tabcl_category_index_fit";
  tabcl_status st = check_fit_call(ctx, ncols, vocabularies, order, out, fn);
  if (st) return st;
  /* the check finds each column's longest label on its way */
  int64_t *longest = tabcl__malloc((size_t)ncols * sizeof *longest);
  if (!longest)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                       ncols);
  for (int c = 0; c < ncols && !st; c++)
    st = tabcl__strings_validate_on(ctx, &vocabularies[c], fn, c, &longest[c]);
  if (!st) {
    tabcl__clear_error();
    const fit_source src = {vocabularies, NULL, longest};
    st = build(ctx, ncols, &src, order, fn, out);
  }
  tabcl__free(longest);
  return st;
}

/* ---- fit from device columns ---------------------------------------------- */

/* Column c's offsets and validity read back (after the caller's events)
   into a host view whose data is not read, then checked as a host view's
   are: the index keeps them on the host, and they must hold. */
static tabcl_status read_back_column(tabcl_context *ctx, const tabcl_strings_cl *d, int c,
                                     cl_uint nwait, const cl_event *wait, int64_t **offs,
                                     uint8_t **valid, tabcl_strings_view *v, int64_t *longest,
                                     const char *fn) {
  int64_t n = d->length;
  *offs = tabcl__malloc(((size_t)n + 1) * sizeof **offs);
  *valid = d->validity ? tabcl__malloc((size_t)(n + 7) / 8) : NULL;
  if (!*offs || (d->validity && !*valid))
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: column %d: out of host memory for %lld offsets and their validity",
                       fn, c, (long long)n + 1);
  /* the caller's events first, then the offsets and validity through the
     staging area where there is one (pinned memory: 1.6 MB of offsets read
     into ordinary memory took about 0.2 ms on the H200, 7.6-8.6 GB/s) */
  if (nwait) {
    cl_int err = TABCL_CL(clWaitForEvents(nwait, wait));
    if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clWaitForEvents", "the wait list");
  }
  tabcl_status st = tabcl__download(ctx, d->offsets, 0, ((size_t)n + 1) * 8, *offs);
  if (!st && d->validity) st = tabcl__download(ctx, d->validity, 0, (size_t)(n + 7) / 8, *valid);
  if (st) return st;
  if ((*offs)[0] != 0 || (*offs)[n] != d->bytes)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: column %d: offsets run from %lld to %lld; 0 to bytes (%lld) expected",
                       fn, c, (long long)(*offs)[0], (long long)(*offs)[n], (long long)d->bytes);
  /* data is checked as present (non-NULL) whenever any byte is; a stand-in
     pointer passes that, and nothing reads it */
  static const uint8_t none = 0;
  *v = (tabcl_strings_view){n, *offs, &none, *valid};
  return tabcl__strings_validate_on(ctx, v, fn, c, longest);
}

tabcl_status tabcl_category_index_fit_cl(tabcl_context *ctx, int ncols,
                                         const tabcl_strings_cl *vocabularies,
                                         tabcl_code_order order, cl_uint nwait,
                                         const cl_event *wait, cl_event *ev,
                                         tabcl_category_index **out) {
  static const char fn[] = "tabcl_category_index_fit_cl";
  tabcl_status st = check_fit_call(ctx, ncols, vocabularies, order, out, fn);
  if (st) return st;
  if (nwait && !wait)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %u events to wait for but wait is NULL", fn,
                       nwait);
  for (int c = 0; c < ncols; c++) {
    const tabcl_strings_cl *d = &vocabularies[c];
    if ((st = tabcl__catindex_check_cl_column(ctx, d, fn, c))) return st;
    if (!d->length && d->bytes)
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: column %d: no labels but %lld bytes", fn,
                         c, (long long)d->bytes);
  }
  tabcl__clear_error();
  tabcl_strings_view *v = tabcl__calloc((size_t)ncols, sizeof *v);
  int64_t **offs = tabcl__calloc((size_t)ncols, sizeof *offs);
  uint8_t **valid = tabcl__calloc((size_t)ncols, sizeof *valid);
  int64_t *longest = tabcl__calloc((size_t)ncols, sizeof *longest);   /* 0: empty column */
  if (!v || !offs || !valid || !longest)
    st = tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for %d column records", fn,
                     ncols);
  /* the first read waits for the caller's events; the queue is in order */
  int waited = 0;
  for (int c = 0; c < ncols && !st; c++) {
    if (!vocabularies[c].length) continue;
    st = read_back_column(ctx, &vocabularies[c], c, waited ? 0 : nwait, waited ? NULL : wait,
                          &offs[c], &valid[c], &v[c], &longest[c], fn);
    waited = 1;
  }
  /* a fit of empty columns only reads nothing: the caller's events are
     still waited for, so that the event given back comes after them */
  if (!st && !waited && nwait) {
    cl_int err = TABCL_CL(clWaitForEvents(nwait, wait));
    if (err != CL_SUCCESS) st = tabcl__cl_fail(err, "clWaitForEvents", "the wait list");
  }
  tabcl_category_index *idx = NULL;
  if (!st) {
    const fit_source src = {v, vocabularies, longest};
    st = build(ctx, ncols, &src, order, fn, &idx);
  }
  if (!st && ev) {
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, ev));
    if (err != CL_SUCCESS) {
      st = tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "the fit's event");
      tabcl_category_index_destroy(idx);
      idx = NULL;
    }
  }
  for (int c = 0; offs && c < ncols; c++) tabcl__free(offs[c]);
  for (int c = 0; valid && c < ncols; c++) tabcl__free(valid[c]);
  tabcl__free(offs);
  tabcl__free(valid);
  tabcl__free(longest);
  tabcl__free(v);
  if (!st) *out = idx;
  return st;
}
