/* A context's pool of device buffers for the temporaries of host calls
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
#include <stdatomic.h>
#include <string.h>

#include "runtime/internal.h"

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
