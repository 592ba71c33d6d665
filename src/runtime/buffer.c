/* Device buffers, blocking transfers and the context's pool of buffers. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

static atomic_long live_mems;

long tabcl__mem_live(void) { return atomic_load(&live_mems); }

void tabcl__mem_count(long n) { atomic_fetch_add(&live_mems, n); }

/* Bytes of the buffers made by tabcl__buffer_create that are alive in the
   process, pooled ones included, staging areas not (host memory on a GPU),
   and the most there were since the last tabcl__mem_bytes_peak_reset: how
   the bench measures a call's peak device memory. Sub-buffers add nothing;
   they alias their parent. */
static atomic_llong live_bytes, peak_bytes;

static void bytes_add(long long n) {
  const long long now = atomic_fetch_add(&live_bytes, n) + n;
  long long seen = atomic_load(&peak_bytes);
  while (now > seen && !atomic_compare_exchange_weak(&peak_bytes, &seen, now)) {
  }
}

void tabcl__mem_bytes_gone(cl_mem m) {
  size_t bytes = 0;
  cl_mem parent = NULL;
  /* no injected failures: a release cannot fail, and a size that cannot be
     read leaves only the bench's figure off */
  if (clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) ==
          CL_SUCCESS &&
      !parent && clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS)
    bytes_add(-(long long)bytes);
}

long long tabcl__mem_bytes_live(void) { return atomic_load(&live_bytes); }

long long tabcl__mem_bytes_peak_reset(void) {
  return atomic_exchange(&peak_bytes, atomic_load(&live_bytes));
}

tabcl_status tabcl__buffer_create(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                  void *host, cl_mem *out, const char *what) {
  *out = NULL;
  /* OpenCL forbids zero-size buffers (PoCL answers CL_INVALID_BUFFER_SIZE);
     empty inputs are valid here, so they get a small placeholder. */
  size_t n = bytes ? bytes : 16;
  if ((cl_ulong)n > ctx->info.max_mem_alloc_size)
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s needs %zu bytes in one buffer; %s allows at most %llu", what, bytes,
                       ctx->info.name, (unsigned long long)ctx->info.max_mem_alloc_size);
  if (!bytes) {
    flags &= ~(cl_mem_flags)(CL_MEM_COPY_HOST_PTR | CL_MEM_USE_HOST_PTR);
    host = NULL;
  }
  cl_int err = CL_SUCCESS;
  cl_mem m = NULL;
  if (tabcl__fault_cl()) err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  else m = clCreateBuffer(ctx->cl, flags, n, host, &err);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clCreateBuffer", what);
  atomic_fetch_add(&live_mems, 1);
  bytes_add((long long)n);
  *out = m;
  return TABCL_OK;
}

tabcl_status tabcl__buffer_window(tabcl_context *ctx, cl_mem parent, size_t offset, size_t bytes,
                                  size_t unit, cl_mem *out, size_t *skip, const char *what) {
  *out = NULL;
  *skip = 0;
  /* A sub-buffer must start on the device's base address alignment (given
     in bits); a multiple of unit as well, so that skip counts whole elements. */
  size_t align = ctx->info.mem_base_addr_align_bits / 8;
  if (align < unit) align = unit;
  const size_t origin = offset / align * align;
  cl_buffer_region r = {origin, offset + (bytes ? bytes : unit) - origin};
  cl_int err = CL_SUCCESS;
  cl_mem m = NULL;
  if (tabcl__fault_cl()) err = CL_OUT_OF_RESOURCES;
  else m = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clCreateSubBuffer", what);
  atomic_fetch_add(&live_mems, 1);
  *out = m;
  *skip = offset - origin;
  return TABCL_OK;
}

void tabcl__buffer_release(cl_mem m) {
  if (!m) return;
  atomic_fetch_sub(&live_mems, 1);
  tabcl__mem_bytes_gone(m);
  clReleaseMemObject(m);
}

/* ---- waiting for our own commands ---------------------------------------
 *
 * Every wait here is on the event of the command waited for, never a
 * blocking enqueue (CL_TRUE) or clFinish. Both are meant to return once the
 * calling thread's commands have run, but with several threads on one queue
 * Mesa's rusticl 22.3 returns from them as soon as the queue's pending list
 * is empty, and another thread's flush may have taken our command off that
 * list before it ran: a blocking read from four threads on one context then
 * returned while the driver was still writing the destination, and the
 * caller freed it under the write (AddressSanitizer: heap-use-after-free in
 * the rusticl queue thread; test_threads' blocking_calls_wait_for_their_own
 * command). An event is the command's own, so its completion is what the
 * specification promises on any driver.
 */

cl_int tabcl__wait_own(cl_int enqueued, cl_event ev) {
  cl_int err = enqueued == CL_SUCCESS ? clWaitForEvents(1, &ev) : enqueued;
  if (ev) clReleaseEvent(ev);
  return err;
}

tabcl_status tabcl__write(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          const void *src) {
  if (!bytes) return TABCL_OK;
  cl_event ev = NULL;
  cl_int err = TABCL_CL(clEnqueueWriteBuffer(ctx->queue, m, CL_FALSE, offset, bytes, src, 0, NULL, &ev));
  err = tabcl__wait_own(err, ev);
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueWriteBuffer", NULL);
}

tabcl_status tabcl__read(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes, void *dst) {
  if (!bytes) return TABCL_OK;
  cl_event ev = NULL;
  cl_int err = TABCL_CL(clEnqueueReadBuffer(ctx->queue, m, CL_FALSE, offset, bytes, dst, 0, NULL, &ev));
  err = tabcl__wait_own(err, ev);
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueReadBuffer", NULL);
}

tabcl_status tabcl__fill_zero(tabcl_context *ctx, cl_mem m, size_t bytes) {
  if (!bytes) return TABCL_OK;
  static const cl_uchar zero = 0;
  cl_int err = TABCL_CL(clEnqueueFillBuffer(ctx->queue, m, &zero, 1, 0, bytes, 0, NULL, NULL));
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueFillBuffer", NULL);
}

/* A whole-buffer map waited for on its own event; a failed wait undoes the
   map, so a failure leaves nothing mapped. */
void *tabcl__map_waited(cl_command_queue q, cl_mem m, cl_map_flags flags, size_t bytes,
                        cl_int *err) {
  cl_event ev = NULL;
  void *p = clEnqueueMapBuffer(q, m, CL_FALSE, flags, 0, bytes, 0, NULL, &ev, err);
  *err = tabcl__wait_own(*err, ev);
  if (*err != CL_SUCCESS && p) {
    clEnqueueUnmapMemObject(q, m, p, 0, NULL, NULL);
    p = NULL;
  }
  return p;
}

/* The queue is in order, so a marker ends after every command before it. */
cl_int tabcl__queue_drain(cl_command_queue q) {
  cl_event ev = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
  return tabcl__wait_own(err, ev);
}

tabcl_status tabcl__finish(tabcl_context *ctx) {
  cl_int err = tabcl__fault_cl() ? CL_OUT_OF_RESOURCES : tabcl__queue_drain(ctx->queue);
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", NULL);
}

/* ---- uploads -------------------------------------------------------------
 *
 * On a CPU device an upload maps the whole destination buffer and fills it
 * in place: no staging copy, and oclgrind (21.10) loses track of which bytes
 * are initialised after a write at a non-zero offset, which a chunked upload
 * would need.
 *
 * On a GPU that map is slow: each map of a fresh buffer gets a fresh host
 * shadow, so every call pays first-touch page faults and pinning for all of
 * its bytes, far below the link's rate (bench/history/code-notes.md, "Staging"). Instead
 * each context keeps one pinned buffer (CL_MEM_ALLOC_HOST_PTR) mapped for
 * its whole life, and an upload copies its content into that mapping and
 * enqueues non-blocking writes from the mapped pointer (NVIDIA's fast path
 * for pinned transfers). The area is used as two halves, so filling chunk
 * i + 1 overlaps the transfer of chunk i. Chunks (and small uploads, such
 * as one column's bytes, bitmap and offsets) fill a half one after another;
 * one that does not fit in what is left goes to the other half, which is
 * reused only after the last transfer using it has finished (the queue is
 * in order, so that one finishing means every earlier one has). The device
 * never sees the staging buffer itself: commands on a mapped buffer would
 * be undefined behaviour. The area grows on demand (both halves able to hold
 * one upload, at least 64 KiB) up to a cap of 64 MiB, larger uploads going
 * in chunks, and stays pinned until the context is destroyed.
 */

static atomic_long live_staging;

long tabcl__staging_live(void) { return atomic_load(&live_staging); }

#define STAGING_DEFAULT_CAP ((size_t)64 << 20)
#define STAGING_MIN ((size_t)64 << 10)

tabcl_status tabcl__staging_init(tabcl_context *ctx) {
  tabcl__staging *sg = &ctx->staging;
  memset(sg, 0, sizeof *sg);
  sg->cap = STAGING_DEFAULT_CAP;
  if (pthread_mutex_init(&sg->lock, NULL) != 0)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl_context_create: cannot create a mutex");
  return TABCL_OK;
}

/* Waits for both halves and gives the area back; no failure can be
   reported from here (destroy paths), so nothing is injected. On a
   caller's queue nothing is waited for, since a wait there would also wait
   for the caller's later work: the unmap runs after the transfers from the
   area (the queue is in order) and OpenCL frees the buffer once it ran. */
static void staging_drop(tabcl_context *ctx) {
  tabcl__staging *sg = &ctx->staging;
  const int wait = !ctx->app_objects;
  for (int h = 0; h < 2; h++) {
    if (!sg->busy[h]) continue;
    if (wait) clWaitForEvents(1, &sg->busy[h]);
    clReleaseEvent(sg->busy[h]);
    sg->busy[h] = NULL;
  }
  if (sg->mem) {
    if (sg->host) {
      cl_event ev = NULL;
      cl_int err = clEnqueueUnmapMemObject(ctx->queue, sg->mem, sg->host, 0, NULL, &ev);
      if (wait) tabcl__wait_own(err, ev);
      else if (ev) clReleaseEvent(ev);
    }
    clReleaseMemObject(sg->mem);
    atomic_fetch_sub(&live_staging, 1);
  }
  sg->mem = NULL;
  sg->host = NULL;
  sg->size = 0;
  sg->used[0] = sg->used[1] = 0;
  sg->next = 0;
}

void tabcl__staging_destroy(tabcl_context *ctx) {
  staging_drop(ctx);
  pthread_mutex_destroy(&ctx->staging.lock);
}

int tabcl__upload_staged(tabcl_context *ctx) { return tabcl__tune_staged(&ctx->tune); }

void tabcl__staging_configure(tabcl_context *ctx) {
  /* upload.staging: 0 maps each buffer (CPUs, and oclgrind, which tracks
     the map), 1 stages through an area of the default size, a larger
     number through at most that many bytes. A changed cap takes effect at
     the next upload: the current area goes. */
  tabcl__staging *sg = &ctx->staging;
  const int64_t v = tabcl__tuned(&ctx->tune, TABCL__TUNE_UPLOAD_STAGING);
  pthread_mutex_lock(&sg->lock);
  staging_drop(ctx);
  sg->cap = v > 1 ? (v < 16 ? 16 : (size_t)v) : STAGING_DEFAULT_CAP;
  pthread_mutex_unlock(&sg->lock);
}

/* An area of at least `want` bytes (already capped). A failure leaves no
   area, so the next upload tries afresh. */
static tabcl_status staging_grow(tabcl_context *ctx, size_t want) {
  tabcl__staging *sg = &ctx->staging;
  if (sg->mem && sg->size >= want) return TABCL_OK;
  staging_drop(ctx);
  cl_mem m = NULL;
  tabcl_status s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, want,
                                        NULL, &m, "upload staging area");
  if (s) return s;
  /* owned by the context, not by a call: counted apart from call buffers,
     and not in the device bytes (host memory where it matters, on a GPU) */
  atomic_fetch_sub(&live_mems, 1);
  tabcl__mem_bytes_gone(m);
  atomic_fetch_add(&live_staging, 1);
  cl_int err = CL_SUCCESS;
  void *p = NULL;
  if (tabcl__fault_cl()) err = CL_MAP_FAILURE;
  else p = tabcl__map_waited(ctx->queue, m, CL_MAP_READ | CL_MAP_WRITE, want, &err);
  if (err != CL_SUCCESS) {
    clReleaseMemObject(m);
    atomic_fetch_sub(&live_staging, 1);
    return tabcl__cl_fail(err, "clEnqueueMapBuffer", "upload staging area");
  }
  sg->mem = m;
  sg->host = p;
  sg->size = want;
  return TABCL_OK;
}

/* Half h free for the next chunk. An injected failure keeps the event (the
   transfer may still be running); a real one means it ended. */
static tabcl_status staging_settle(tabcl__staging *sg, int h) {
  if (!sg->busy[h]) {
    sg->used[h] = 0;
    return TABCL_OK;
  }
  if (tabcl__fault_cl())
    return tabcl__cl_fail(CL_OUT_OF_RESOURCES, "clWaitForEvents", "upload staging area");
  cl_int err = clWaitForEvents(1, &sg->busy[h]);
  clReleaseEvent(sg->busy[h]);
  sg->busy[h] = NULL;
  sg->used[h] = 0;
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clWaitForEvents", "upload staging area");
}

static size_t staging_want(const tabcl_context *ctx, size_t bytes) {
  size_t cap = ctx->staging.cap;
  if ((cl_ulong)cap > ctx->info.max_mem_alloc_size) cap = (size_t)ctx->info.max_mem_alloc_size;
  size_t want = cap < STAGING_MIN ? cap : STAGING_MIN;
  /* both halves able to hold the whole upload, up to the cap */
  while (want < cap && want / 2 < bytes) want = want > cap / 2 ? cap : want * 2;
  return want;
}

static tabcl_status upload_staged(tabcl_context *ctx, cl_mem m, size_t bytes, tabcl__range_fn fill,
                                  const void *arg, const char *what) {
  tabcl__staging *sg = &ctx->staging;
  pthread_mutex_lock(&sg->lock);
  tabcl_status s = staging_grow(ctx, staging_want(ctx, bytes));
  /* whole 8-byte words a half, so chunks of 8-byte elements never split one */
  size_t half = (sg->size / 2) & ~(size_t)7;
  const int threads = tabcl__workers_threads(ctx, bytes);
  for (size_t at = 0, n; !s && at < bytes; at += n) {
    n = bytes - at < half ? bytes - at : half;
    int h = sg->next;
    if (n > half - sg->used[h]) {
      h ^= 1;
      if ((s = staging_settle(sg, h))) break;
      sg->next = h;
    }
    uint8_t *p = sg->host + (size_t)h * half + sg->used[h];
    tabcl__workers_run(ctx, threads, TABCL__WORKERS_PART, fill, p, at, n, arg);
    cl_event ev = NULL;
    cl_int err = TABCL_CL(clEnqueueWriteBuffer(ctx->queue, m, CL_FALSE, at, n, p, 0, NULL, &ev));
    if (err != CL_SUCCESS) {
      s = tabcl__cl_fail(err, "clEnqueueWriteBuffer", what);
      break;
    }
    /* in order: this transfer ending means the half's earlier ones have */
    if (sg->busy[h]) clReleaseEvent(sg->busy[h]);
    sg->busy[h] = ev;
    /* the next piece starts on a 64-byte line */
    size_t end = sg->used[h] + tabcl__round_up(n, 64);
    sg->used[h] = end < half ? end : half;
    /* submitted now, so it runs while the next chunk is filled */
    if (at + n < bytes && (err = TABCL_CL(clFlush(ctx->queue))) != CL_SUCCESS)
      s = tabcl__cl_fail(err, "clFlush", what);
  }
  pthread_mutex_unlock(&sg->lock);
  return s;
}

static tabcl_status upload_mapped(tabcl_context *ctx, cl_mem m, size_t bytes, tabcl__range_fn fill,
                                  const void *arg, const char *what) {
  cl_int err = CL_SUCCESS;
  void *p = NULL;
  if (tabcl__fault_cl()) err = CL_MAP_FAILURE;
  else p = tabcl__map_waited(ctx->queue, m, CL_MAP_WRITE_INVALIDATE_REGION, bytes, &err);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clEnqueueMapBuffer", what);
  tabcl__workers_run(ctx, tabcl__workers_threads(ctx, bytes), TABCL__WORKERS_PART, fill, p, 0,
                     bytes, arg);
  int injected = tabcl__fault_cl();
  /* An injected failure still unmaps, so the buffer is never released mapped. */
  err = clEnqueueUnmapMemObject(ctx->queue, m, p, 0, NULL, NULL);
  if (injected && err == CL_SUCCESS) err = CL_OUT_OF_RESOURCES;
  return err == CL_SUCCESS ? TABCL_OK : tabcl__cl_fail(err, "clEnqueueUnmapMemObject", what);
}

tabcl_status tabcl__upload(tabcl_context *ctx, cl_mem m, size_t bytes, tabcl__range_fn fill,
                           const void *arg, const char *what) {
  if (!bytes) return TABCL_OK;
  return tabcl__upload_staged(ctx) ? upload_staged(ctx, m, bytes, fill, arg, what)
                                   : upload_mapped(ctx, m, bytes, fill, arg, what);
}

/* ---- downloads and filled buffers through the same area ----------------- */

/* Bytes [offset, offset + bytes) of m through the staging area, whose
   halves are `half` bytes: chunk i is read into half i % 2 while chunk
   i - 1 is handed to drain(src, at, n, arg). sg->lock is held. */
static tabcl_status staged_read(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                                size_t half, tabcl__drain_fn drain, void *arg) {
  tabcl__staging *sg = &ctx->staging;
  const size_t chunks = (bytes + half - 1) / half;
  tabcl_status s = TABCL_OK;
  for (size_t i = 0; !s && i <= chunks; i++) {
    if (i < chunks) {
      int h = (int)(i & 1);
      size_t at = i * half, n = bytes - at < half ? bytes - at : half;
      if ((s = staging_settle(sg, h))) break;
      sg->used[h] = half;   /* uploads go elsewhere until it is settled */
      cl_int err = TABCL_CL(clEnqueueReadBuffer(ctx->queue, m, CL_FALSE, offset + at, n,
                                                sg->host + (size_t)h * half, 0, NULL,
                                                &sg->busy[h]));
      const char *call = "clEnqueueReadBuffer";
      if (err == CL_SUCCESS && i + 1 < chunks) {
        call = "clFlush";
        err = TABCL_CL(clFlush(ctx->queue));
      }
      if (err != CL_SUCCESS) {
        s = tabcl__cl_fail(err, call, "download through the staging area");
        break;
      }
    }
    if (i >= 1) {
      int h = (int)((i - 1) & 1);
      size_t at = (i - 1) * half, n = bytes - at < half ? bytes - at : half;
      if ((s = staging_settle(sg, h))) break;
      drain(sg->host + (size_t)h * half, at, n, arg);
    }
  }
  return s;
}

static void copy_out(const void *src, size_t at, size_t n, void *dst) {
  memcpy((uint8_t *)dst + at, src, n);
}

tabcl_status tabcl__download(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                             void *dst) {
  if (!bytes) return TABCL_OK;
  if (!tabcl__upload_staged(ctx)) return tabcl__read(ctx, m, offset, bytes, dst);
  tabcl__staging *sg = &ctx->staging;
  pthread_mutex_lock(&sg->lock);
  tabcl_status s = staging_grow(ctx, staging_want(ctx, bytes));
  if (!s) s = staged_read(ctx, m, offset, bytes, (sg->size / 2) & ~(size_t)7, copy_out, dst);
  pthread_mutex_unlock(&sg->lock);
  return s;
}

int tabcl__download_drain(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          tabcl__drain_fn drain, void *arg, tabcl_status *st) {
  *st = TABCL_OK;
  if (!bytes || !tabcl__upload_staged(ctx)) return 0;
  tabcl__staging *sg = &ctx->staging;
  pthread_mutex_lock(&sg->lock);
  tabcl_status s = staging_grow(ctx, staging_want(ctx, bytes));
  const size_t half = (sg->size / 2) & ~(size_t)7;
  if (!s && bytes > half) {   /* more than one chunk: the caller's own way */
    pthread_mutex_unlock(&sg->lock);
    return 0;
  }
  /* one chunk: drain runs once, after the whole read succeeded */
  if (!s) s = staged_read(ctx, m, offset, bytes, half, drain, arg);
  pthread_mutex_unlock(&sg->lock);
  *st = s;
  return 1;
}

static void fill_copy(void *dst, size_t at, size_t n, const void *arg) {
  memcpy(dst, (const uint8_t *)arg + at, n);
}

tabcl_status tabcl__upload_copy(tabcl_context *ctx, cl_mem m, size_t bytes, const void *src,
                                const char *what) {
  return tabcl__upload(ctx, m, bytes, fill_copy, src, what);
}

tabcl_status tabcl__buffer_create_from(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                       const void *src, cl_mem *out, const char *what) {
  if (!tabcl__upload_staged(ctx) || !bytes)
    return tabcl__buffer_create(ctx, flags | CL_MEM_COPY_HOST_PTR, bytes, (void *)src, out, what);
  tabcl_status s = tabcl__buffer_create(ctx, flags, bytes, NULL, out, what);
  if (!s && (s = tabcl__upload(ctx, *out, bytes, fill_copy, src, what))) {
    tabcl__buffer_release(*out);
    *out = NULL;
  }
  return s;
}

/* ---- the pool ----------------------------------------------------------
 *
 * A context's pool of device buffers for the temporaries of host calls
 * (the label bytes, offsets and bitmaps a lookup uploads) and the slots and
 * output ring of streams.
 *
 * Why: a fresh buffer costs its first touch. On a CPU device, where an
 * upload maps the buffer and copies into it, a lookup of 100,000 labels of
 * 4 KiB spent about a third of its time in page faults and page clearing
 * for its fresh 400 MB (perf, PoCL 3.1; bench/history/2026-11-to-12.md, "Tuning:
 * upload.pool"). A pooled buffer was touched by the call before it. On the
 * H200 a stream's fresh buffers cost more than its first upload: with the
 * pool, eight estimators streamed 6-8% faster (the same section).
 *
 * When a buffer may be handed out again: tabcl__pool_put enqueues a marker
 * on the context's queue after every command enqueued so far (the queue is
 * in order, and every user of a pooled buffer enqueues there), and the
 * buffer is handed out again only once that marker's event is complete.
 * Never by timing, never by queue order alone: a later call's upload could
 * otherwise overwrite bytes a kernel still reads.
 *
 * Idle pooled buffers are not counted in tabcl__mem_live (they outlive the
 * call that made them) but in tabcl__pool_live; the pool holds at most
 * upload.pool bytes (0: no pool, buffers are made and released per call)
 * in at most TABCL__POOL_SLOTS buffers, and gives everything back when the
 * context is destroyed or the tuning changes. */

static atomic_long live_pooled;

long tabcl__pool_live(void) { return atomic_load(&live_pooled); }

tabcl_status tabcl__pool_init(tabcl_context *ctx) {
  tabcl__pool *p = &ctx->pool;
  memset(p, 0, sizeof *p);
  if (pthread_mutex_init(&p->lock, NULL) != 0)
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl_context_create: cannot create a mutex");
  return TABCL_OK;
}

/* Gives slot i's buffer back to OpenCL. No wait for its marker: OpenCL
   frees a released buffer only once the commands using it are done, and a
   wait here (under the lock, inside a call) could wait on a queue held up
   by the caller. */
static void slot_drop(tabcl__pool *p, int i) {
  tabcl__pool_slot *s = &p->slot[i];
  if (s->done) clReleaseEvent(s->done);
  if (s->mem) {
    tabcl__mem_bytes_gone(s->mem);
    clReleaseMemObject(s->mem);
    atomic_fetch_sub(&live_pooled, 1);
    p->held -= s->bytes;
  }
  memset(s, 0, sizeof *s);
}

static void pool_drop_all(tabcl__pool *p) {
  for (int i = 0; i < TABCL__POOL_SLOTS; i++) slot_drop(p, i);
}

void tabcl__pool_configure(tabcl_context *ctx) {
  tabcl__pool *p = &ctx->pool;
  const int64_t v = tabcl__tuned(&ctx->tune, TABCL__TUNE_UPLOAD_POOL);
  pthread_mutex_lock(&p->lock);
  pool_drop_all(p);
  /* at most a quarter of the device's memory, whatever the tuning */
  const uint64_t most = ctx->info.global_mem_size / 4;
  p->cap = v > 0 ? (size_t)((uint64_t)v < most ? (uint64_t)v : most) : 0;
  pthread_mutex_unlock(&p->lock);
}

void tabcl__pool_destroy(tabcl_context *ctx) {
  pool_drop_all(&ctx->pool);
  pthread_mutex_destroy(&ctx->pool.lock);
}

/* Whether the slot's marker has run (no marker: never used by a command). */
static int slot_ready(const tabcl__pool_slot *s) {
  if (!s->done) return 1;
  cl_int st = CL_QUEUED;
  return clGetEventInfo(s->done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) ==
             CL_SUCCESS &&
         st == CL_COMPLETE;
}

tabcl_status tabcl__pool_get(tabcl_context *ctx, cl_mem_flags flags, size_t bytes, cl_mem *out,
                             const char *what) {
  tabcl__pool *p = &ctx->pool;
  *out = NULL;
  pthread_mutex_lock(&p->lock);
  int best = -1;
  /* The smallest ready buffer of the same flags that holds bytes, and at
     most twice as many: a small call never pins a large buffer. */
  for (int i = 0; p->cap && i < TABCL__POOL_SLOTS; i++) {
    const tabcl__pool_slot *s = &p->slot[i];
    if (!s->mem || s->flags != flags || s->bytes < bytes || s->bytes / 2 > bytes) continue;
    if (best >= 0 && p->slot[best].bytes <= s->bytes) continue;
    if (slot_ready(s)) best = i;
  }
  if (best >= 0) {
    tabcl__pool_slot *s = &p->slot[best];
    if (s->done) clReleaseEvent(s->done);
    *out = s->mem;
    p->held -= s->bytes;
    memset(s, 0, sizeof *s);
    atomic_fetch_sub(&live_pooled, 1);
    tabcl__mem_count(1);
  }
  pthread_mutex_unlock(&p->lock);
  if (*out) return TABCL_OK;
  return tabcl__buffer_create(ctx, flags, bytes, NULL, out, what);
}

void tabcl__pool_put(tabcl_context *ctx, cl_mem m) { tabcl__pool_put_n(ctx, 1, &m, 0, NULL); }

void tabcl__pool_put_after(tabcl_context *ctx, cl_mem m, cl_uint nwait, const cl_event *wait) {
  tabcl__pool_put_n(ctx, 1, &m, nwait, wait);
}

void tabcl__pool_put_n(tabcl_context *ctx, int n, const cl_mem *mems, cl_uint nwait,
                       const cl_event *wait) {
  tabcl__pool *p = &ctx->pool;
  /* The marker's event: this call keeps its own reference to the end, and
     each slot given it takes one more, since making room may drop a slot
     this same call filled (buffers larger than half the cap). */
  cl_event done = NULL;
  int marked = 0;
  pthread_mutex_lock(&p->lock);
  for (int k = 0; k < n; k++) {
    cl_mem m = mems[k];
    if (!m) continue;
    size_t bytes = 0;
    cl_mem_flags flags = 0;
    int slot = -1;
    for (int i = 0; p->cap && i < TABCL__POOL_SLOTS && slot < 0; i++)
      if (!p->slot[i].mem) slot = i;
    /* Only what is known for sure goes in: its size and flags, and a marker
       behind every command that may use it. Anything else is released now
       (OpenCL keeps it alive for commands still using it): put cannot fail,
       so it has no injected failures either (a call that succeeded must not
       see one). */
    if (slot >= 0 &&
        (clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS ||
         clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL) != CL_SUCCESS ||
         bytes > p->cap))
      slot = -1;
    /* Room for it: idle buffers go, in slot order, until it fits. */
    for (int i = 0; slot >= 0 && i < TABCL__POOL_SLOTS && p->held + bytes > p->cap; i++)
      if (i != slot) slot_drop(p, i);
    /* One marker for every buffer of the call, flushed, or a lazily
       submitting driver (Mesa's rusticl) might never run it, and the
       buffers would never be handed out again. */
    if (slot >= 0 && !marked) {
      marked = 1;
      /* OpenCL refuses a list with no events (CL_INVALID_EVENT_WAIT_LIST),
         which would drop every buffer: an empty list goes as NULL. */
      if (clEnqueueMarkerWithWaitList(ctx->queue, nwait, nwait ? wait : NULL, &done) !=
              CL_SUCCESS ||
          clFlush(ctx->queue) != CL_SUCCESS) {
        if (done) clReleaseEvent(done);
        done = NULL;
      }
    }
    if (slot >= 0 && done && clRetainEvent(done) != CL_SUCCESS) slot = -1;
    if (slot < 0 || !done) {
      tabcl__buffer_release(m);
      continue;
    }
    p->slot[slot] = (tabcl__pool_slot){m, bytes, flags, done};
    p->held += bytes;
    atomic_fetch_add(&live_pooled, 1);
    tabcl__mem_count(-1);
  }
  if (done) clReleaseEvent(done);
  pthread_mutex_unlock(&p->lock);
}

void tabcl__pool_trim(tabcl_context *ctx) {
  tabcl__pool *p = &ctx->pool;
  pthread_mutex_lock(&p->lock);
  pool_drop_all(p);
  pthread_mutex_unlock(&p->lock);
}
