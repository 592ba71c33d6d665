/* A fit's label bytes on the device (vdata): how they are placed there. */
/* madvise (labels_in_own_memory) is outside POSIX 2008 */
#define _DEFAULT_SOURCE
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "catindex/catindex_fit_parts.h"
#include "hash/hash.h"
#include "sort/sort.h"

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
   page it gives, on the thread that faults it) (bench/history/code-notes.md, "Faulted fills"). */
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
   labels are copied into their buffer when it is made (tabcl__fit_upload_labels). */
#define FIT_COPIED_AT_CREATE_MAX ((uint64_t)256 << 10)
/* The same bound for fits on the calling thread, which have no command
   to wait for anyway. Past it the two copies (here, then the driver's into
   a buffer of fresh pages) cost more than a map and one copy by the worker
   pool (bench/history/code-notes.md, "Copied at create"). */
#define FIT_HOST_COPIED_AT_CREATE_MAX ((uint64_t)2 << 20)

/* On a CPU device vdata's bytes are host memory either way, and a large
   fit's time was the first touch of its pages. So from TABCL__LARGE_ALLOC
   bytes (below it glibc's malloc reuses its heap) the index takes memory of
   its own in transparent huge pages (tabcl__malloc_large), faults it in,
   fills it and hands it to the device (CL_MEM_USE_HOST_PTR), several times
   faster (bench/history/code-notes.md, "Labels in own memory"). Where that is not possible it returns 0
   and the plain path runs. */
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
  tabcl__workers_run(ctx, tabcl__workers_threads(ctx, (size_t)padded), TABCL__WORKERS_PART,
                     fill_faulted, h, 0, (size_t)padded, &f);
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
   command, no wait (tabcl__fit_upload_labels); `most`: the bytes up to which. */
static int copied_at_create(tabcl_context *ctx, const fit_source *src, uint64_t padded,
                            uint64_t most) {
  return !src->dev && !tabcl__upload_staged(ctx) && padded <= most;
}

/* vdata from the source: one upload of the host bytes (staged and threaded
   where the context stages uploads), or a device copy per column. */
tabcl_status tabcl__fit_upload_labels(tabcl_category_index *idx, const fit_source *src,
                                  uint64_t padded, int on_host) {
  tabcl_context *ctx = idx->ctx;
  tabcl_status st = TABCL_OK;
  if (labels_in_own_memory(idx, src, padded, &st)) return st;
  if (copied_at_create(ctx, src, padded,
                       on_host ? FIT_HOST_COPIED_AT_CREATE_MAX : FIT_COPIED_AT_CREATE_MAX)) {
    /* A small fit where uploads map: the bytes laid out here and copied
       when the buffer is made (CL_MEM_COPY_HOST_PTR), no command and no
       wait, where a map, its wait and the unmap were a fifth of a small
       fit's time (bench/history/code-notes.md, "Copied at create"). */
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
