/* Host calls on the host's own threads (CPU devices, and beside NVIDIA
 * GPUs): small ones on the calling thread (lookup.host_rows), larger ones
 * split over the context's threads (lookup.host_threads).
 *
 * Beside a GPU the mapped tables are a copy of the index in host memory,
 * made by the first such call (so only for indexes up to lookup.host_index
 * bytes): the queries then cross no link at all, and the host's cores look
 * 100,000 rows up in less time than their bytes take to reach the device
 * (bench/history/2026-11-to-12.md, "Tuning: lookup.host_threads").
 *
 * A host lookup on a CPU device through OpenCL costs a few launches and one
 * wait for the driver's threads, tens of microseconds (cl-probe's "round
 * trip"), before any row is looked up; pandas looks 1,000 labels up in about
 * as long. Where the device is the host's own cores, a call of a few
 * thousand rows costs less done on the calling thread: its queries hashed
 * with the host XXH3 (the one the kernels are checked against) and searched
 * in the index's own tables, mapped for reading once and kept mapped. The
 * steps are the CPU kernel's (catindex_lookup_serial): the row's directory
 * bucket, a lower bound among its keys, every candidate confirmed by its
 * bytes; so the codes are the same, which the tests check on both paths. */
#include <string.h>

#include "catindex/catindex.h"
#include "hash/hash.h"

/* Unmaps what map_tables mapped (enqueued; the queue is in order). */
static void unmap_tables(tabcl_category_index *idx, tabcl__catindex_host *h) {
  for (int i = 0; i < 6; i++)
    if (h->mem[i]) clEnqueueUnmapMemObject(idx->ctx->queue, h->mem[i], h->ptr[i], 0, NULL, NULL);
}

/* Maps the six tables for reading; all or nothing. */
static tabcl_status map_tables(tabcl_category_index *idx, tabcl__catindex_host *h) {
  cl_command_queue q = idx->ctx->queue;
  const cl_mem mem[6] = {idx->keys, idx->spans, idx->ecodes, idx->dir, idx->dinfo, idx->vdata};
  cl_event ev = NULL;
  cl_int err = CL_SUCCESS;
  int n = 0;
  for (; n < 6 && err == CL_SUCCESS; n++) {
    size_t bytes = 0;
    err = TABCL_CL(clGetMemObjectInfo(mem[n], CL_MEM_SIZE, sizeof bytes, &bytes, NULL));
    if (err != CL_SUCCESS) break;
    /* non-blocking, the last with an event: the queue is in order, so its
       completion is every map's */
    if (ev) clReleaseEvent(ev);
    ev = NULL;
    h->ptr[n] = tabcl__fault_cl()
                    ? (err = CL_OUT_OF_RESOURCES, NULL)
                    : clEnqueueMapBuffer(q, mem[n], CL_FALSE, CL_MAP_READ, 0, bytes, 0, NULL,
                                         &ev, &err);
    if (err != CL_SUCCESS) break;
    h->mem[n] = mem[n];
  }
  if (err == CL_SUCCESS) err = tabcl__wait_own(CL_SUCCESS, ev);
  else if (ev) clReleaseEvent(ev);
  if (err != CL_SUCCESS) {
    unmap_tables(idx, h);
    return tabcl__cl_fail(err, "clEnqueueMapBuffer", "the index's tables for the host");
  }
  h->keys = h->ptr[0];
  h->spans = h->ptr[1];
  h->ecodes = h->ptr[2];
  h->dir = h->ptr[3];
  h->dinfo = h->ptr[4];
  h->vdata = h->ptr[5];
  return TABCL_OK;
}

/* Extra directory bits of the host's own directory, at most, and the most
   slots it may take in all (1 MiB). The index's directory has a bucket for
   every one to two entries (tabcl__catindex_dir_bits), so a search ran a
   lower bound over a varying number of keys, a branch the core
   mispredicted about once a row. With 32 times the buckets nearly all hold
   no entry or one. Past the cap fewer extra bits are taken: a directory
   that leaves the core's caches costs as much as it saves
   (bench/history/code-notes.md, "Host directory bits"). */
#define HOST_FINE_BITS 5
#define HOST_FINE_SLOTS_MAX ((int64_t)1 << 18)

/* The slots a directory with `extra` more bits than the index's takes over
   every column, or -1 where some column's shift leaves no room for them. */
static int64_t fine_slots(const tabcl_category_index *idx, const tabcl__catindex_host *h,
                          int kept, int extra) {
  int64_t slots = 0;
  for (int c = 0; c < idx->ncols; c++) {
    const int64_t shift = h->dinfo[2 * c + 1];
    if (shift < extra) return -1;
    slots += ((int64_t)1 << (kept - shift + extra)) + 1;
  }
  return slots;
}

/* The finer directory of h's mapped tables, or none where it would be too
   large (the index's own directory then serves, with the same codes). */
static tabcl_status make_fine(const tabcl_category_index *idx, tabcl__catindex_host *h) {
  const int nc = idx->ncols, kept = tabcl__catindex_mask_bits(idx->mask);
  int extra = HOST_FINE_BITS;
  int64_t slots = fine_slots(idx, h, kept, extra);
  for (; extra > 0 && (slots < 0 || slots > HOST_FINE_SLOTS_MAX); extra--)
    slots = fine_slots(idx, h, kept, extra - 1);
  if (extra <= 0) return TABCL_OK;
  uint32_t *fine = tabcl__malloc((size_t)slots * sizeof *fine);
  int64_t *info = tabcl__malloc((size_t)nc * 2 * sizeof *info);
  if (!fine || !info) {
    tabcl__free(fine);
    tabcl__free(info);
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "lookup: out of host memory for the host's directory of %lld slots",
                       (long long)slots);
  }
  int64_t at = 0;
  for (int c = 0; c < nc; c++) {
    const int64_t first = h->dinfo[2 * c], shift = h->dinfo[2 * c + 1];
    const int bits = kept - (int)shift;
    const int64_t lo = h->dir[first], hi = h->dir[first + ((int64_t)1 << bits)];
    const int64_t n = ((int64_t)1 << (bits + extra)) + 1;
    info[2 * c] = at;
    info[2 * c + 1] = shift - extra;
    tabcl__catindex_fill_directory(h->keys, lo, hi - lo, shift - extra, n, fine + at);
    at += n;
  }
  h->fine = fine;
  h->fine_info = info;
  return TABCL_OK;
}

tabcl__route_plan tabcl__catindex_route(const tabcl_category_index *idx, int64_t rows,
                                        int64_t bytes) {
  /* an index without host tables (one loaded or fitted on the device that
     could not map them) runs on the device */
  if (!idx->host_lock_made || !idx->keys || !idx->spans || !idx->ecodes || !idx->dir ||
      !idx->dinfo || !idx->vdata)
    return (tabcl__route_plan){TABCL__ROUTE_DEVICE, 0};
  const tabcl__target tg = idx->ctx->target;
  return tabcl__lookup_route(&tg, rows, bytes, idx->device_bytes);
}

tabcl_status tabcl__catindex_host_tables(tabcl_category_index *idx,
                                         const tabcl__catindex_host **out) {
  tabcl__catindex_host *h = atomic_load_explicit(&idx->host, memory_order_acquire);
  *out = h;
  if (h) return TABCL_OK;
  tabcl_status st = TABCL_OK;
  pthread_mutex_lock(&idx->host_lock);
  h = atomic_load_explicit(&idx->host, memory_order_relaxed);
  if (!h) {
    tabcl__catindex_host *made = tabcl__calloc(1, sizeof *made);
    if (!made)
      st = tabcl__fail(TABCL_OUT_OF_MEMORY, "lookup: out of host memory for a table record");
    else if ((st = map_tables(idx, made)))
      tabcl__free(made);
    else if ((st = make_fine(idx, made))) {
      unmap_tables(idx, made);
      tabcl__free(made);
    } else
      atomic_store_explicit(&idx->host, h = made, memory_order_release);
  }
  pthread_mutex_unlock(&idx->host_lock);
  *out = h;
  return st;
}

#if defined(__GNUC__) || defined(__clang__)
#define HOST_PREFETCH(p) __builtin_prefetch(p)
#else
#define HOST_PREFETCH(p) ((void)(p))
#endif

/* Rows taken a stage at a time. A row's search is a chain of dependent
   loads (directory slot, keys, span, bytes, code), each a likely cache miss
   in a large index; done one row after another they wait in turn. Staged
   over a batch, each stage first asks for what the next one reads
   (prefetch), so a batch's misses overlap. */
#define HOST_BATCH 16

/* While a row is hashed, the first HOST_PREFETCH_BYTES of the row
   HOST_PREFETCH_AHEAD rows on are asked for: long labels are read from
   memory, not the cache, and the hash of one label after another left the
   core waiting (bench/history/code-notes.md, "Host prefetch"). */
#define HOST_PREFETCH_BYTES 1024
#define HOST_PREFETCH_AHEAD 8

static uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint32_t ld32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Whether a and b agree in their first n bytes (n > 0: an empty column's
   data may be NULL, and NULL + 0 is undefined), reading no byte past n.
   Labels up to 16 bytes are compared inline, in two loads a side (words
   from both ends): the libc call (its dispatch, and an order the lookup
   does not need) took 12% of a host lookup of 8-byte labels. Longer ones
   take memcmp, whose vector loop an inline one did not match (a 16-byte
   loop made 100,000 labels of 512 B 60% slower). */
static int same_bytes(const uint8_t *a, const uint8_t *b, int64_t n) {
  if (n > 16) return !memcmp(a, b, (size_t)n);
  if (n >= 8) return !((ld64(a) ^ ld64(b)) | (ld64(a + n - 8) ^ ld64(b + n - 8)));
  if (n >= 4) return !((ld32(a) ^ ld32(b)) | (ld32(a + n - 4) ^ ld32(b + n - 4)));
  for (int64_t i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* The lower bound of h among keys [lo, lo + n), without branches. */
static int64_t lower_bound(const uint64_t *keys, int64_t lo, int64_t n, uint64_t h) {
  while (n > 1) {
    const int64_t half = n >> 1;
    lo = keys[lo + half - 1] < h ? lo + half : lo;
    n -= half;
  }
  return lo + (n > 0 && keys[lo] < h);
}

void tabcl__catindex_host_lookup(const tabcl_category_index *idx, const tabcl__catindex_host *t,
                                 int c, const tabcl_strings_view *q, int32_t *codes) {
  const uint64_t mask = idx->mask;
  tabcl__xxh3_state keys;
  tabcl__xxh3_keys(&keys, tabcl__column_seed(idx->seed, c));
  const uint8_t *data = q->data, *valid = q->validity;
  const uint32_t *dir = t->fine ? t->fine : t->dir;
  const int64_t *info = t->fine ? t->fine_info : t->dinfo;
  const int64_t first = info[2 * c], shift = info[2 * c + 1];
  for (int64_t i0 = 0; i0 < q->length; i0 += HOST_BATCH) {
    const int m = q->length - i0 < HOST_BATCH ? (int)(q->length - i0) : HOST_BATCH;
    uint64_t h[HOST_BATCH];
    int64_t at[HOST_BATCH], end[HOST_BATCH];
    /* hash; the row's directory slot asked for. A null row gets an empty
       bucket, so it finds no candidate and its code is -1. */
    for (int k = 0; k < m; k++) {
      const int64_t i = i0 + k;
      at[k] = -1;
      h[k] = 0;
      if (valid && !(valid[i >> 3] >> (i & 7) & 1)) continue;
      const int64_t s = q->offsets[i], len = q->offsets[i + 1] - s;
      if (i + HOST_PREFETCH_AHEAD < q->length) {
        const int64_t ns = q->offsets[i + HOST_PREFETCH_AHEAD],
                      nl = q->offsets[i + HOST_PREFETCH_AHEAD + 1] - ns;
        for (int64_t b = 0; b < nl && b < HOST_PREFETCH_BYTES; b += 64) HOST_PREFETCH(data + ns + b);
      }
      h[k] = tabcl__xxh3_64_keyed(&keys, len ? data + s : (const uint8_t *)"", (size_t)len) & mask;
      at[k] = first + (shift < 64 ? (int64_t)(h[k] >> shift) : 0);
      HOST_PREFETCH(&dir[at[k]]);
    }
    /* the bucket's bounds; its first key and span asked for */
    for (int k = 0; k < m; k++) {
      if (at[k] < 0) {
        at[k] = end[k] = 0;
        continue;
      }
      const int64_t slot = at[k];
      at[k] = dir[slot];
      end[k] = dir[slot + 1];
      HOST_PREFETCH(&t->keys[at[k]]);
      HOST_PREFETCH(&t->spans[2 * at[k]]);
    }
    /* the first candidate; its bytes and code asked for */
    for (int k = 0; k < m; k++) {
      if (at[k] == end[k]) continue;
      at[k] = lower_bound(t->keys, at[k], end[k] - at[k], h[k]);
      if (at[k] < end[k]) {
        HOST_PREFETCH(t->vdata + t->spans[2 * at[k]]);
        HOST_PREFETCH(&t->ecodes[at[k]]);
      }
    }
    /* every candidate of the row's hash confirmed by its bytes */
    for (int k = 0; k < m; k++) {
      const int64_t i = i0 + k, s = q->offsets[i], len = q->offsets[i + 1] - s;
      int32_t code = -1;
      for (int64_t j = at[k]; j < end[k] && t->keys[j] == h[k]; j++)
        if (t->spans[2 * j + 1] == len &&
            (!len || same_bytes(t->vdata + t->spans[2 * j], data + s, len))) {
          code = t->ecodes[j];
          break;
        }
      codes[i] = code;
    }
  }
}

/* Rows a part of a threaded host lookup takes at least (labels up to
   HOST_PART_ROWS_BYTES on average; part_rows): 20 to 40 us of work on one
   core (10 to 20 ns a row), which repays waking a sleeping thread, as the
   workers are between an application's calls; smaller parts made lookups
   of 1,000 rows 1.4-2.8x slower beside an H200 (bench/RESULTS.md, "The
   worker pool"). */
#define HOST_PART_ROWS 2048
#define HOST_PART_ROWS_BYTES 64

typedef struct host_part {
  const tabcl_category_index *idx;
  const tabcl__catindex_host *t;
  int c;
  const tabcl_strings_view *q;
} host_part;

/* Rows [at / 4, (at + n) / 4) of a threaded lookup into dst, their codes:
   the fill's bytes are the codes' bytes. Parts start on whole 64-byte
   lines of codes (tabcl__workers_run), so on a multiple of 16 rows,
   where the validity bitmap's bytes start too. */
static void lookup_part(void *dst, size_t at, size_t n, const void *arg) {
  const host_part *p = arg;
  const int64_t r0 = (int64_t)(at / sizeof(int32_t));
  const tabcl_strings_view sub = {(int64_t)(n / sizeof(int32_t)), p->q->offsets + r0, p->q->data,
                                  p->q->validity ? p->q->validity + r0 / 8 : NULL};
  tabcl__catindex_host_lookup(p->idx, p->t, p->c, &sub, dst);
}

/* Rows a part takes at least for q: HOST_PART_ROWS for labels up to 64 B
   on average, fewer for longer ones, whose rows cost more each: about the
   same work a part, on a multiple of 16 rows. */
static int64_t part_rows(const tabcl_strings_view *q) {
  const int64_t mean = q->length ? (q->offsets[q->length] - q->offsets[0]) / q->length : 0;
  if (mean <= HOST_PART_ROWS_BYTES) return HOST_PART_ROWS;
  const int64_t rows = HOST_PART_ROWS * HOST_PART_ROWS_BYTES / mean;
  return rows < 16 ? 16 : rows & ~(int64_t)15;
}

void tabcl__catindex_host_lookup_n(const tabcl_category_index *idx,
                                   const tabcl__catindex_host *t, int threads, int c,
                                   const tabcl_strings_view *q, int32_t *codes) {
  const int64_t rows = part_rows(q);
  if (threads < 2 || q->length < 2 * rows) {
    tabcl__catindex_host_lookup(idx, t, c, q, codes);
    return;
  }
  const host_part p = {idx, t, c, q};
  tabcl__workers_run(idx->ctx, threads, (size_t)rows * sizeof *codes, lookup_part,
                             codes, 0, (size_t)q->length * sizeof *codes, &p);
}

void tabcl__catindex_host_release(tabcl_category_index *idx) {
  tabcl__catindex_host *h = atomic_load_explicit(&idx->host, memory_order_acquire);
  if (h) {
    unmap_tables(idx, h);
    tabcl__free(h->fine);
    tabcl__free(h->fine_info);
    tabcl__free(h);
    atomic_store_explicit(&idx->host, NULL, memory_order_relaxed);
  }
  if (idx->host_lock_made) pthread_mutex_destroy(&idx->host_lock);
  idx->host_lock_made = 0;
}
