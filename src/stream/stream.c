/* The stream: device buffer sets refilled on the context's transfer queue,
 * each refill ordered after the event its last user gave back (stream.h
 * has the slot states). Also pinned host memory for the items. */
#include <stdio.h>
#include <string.h>

#include "stream/stream.h"

#define MAX_DEPTH 64

/* ---- filling a slot ----------------------------------------------------- */

/* Enqueues the upload of the slot's item, every write waiting for the
   slot's `after` event, and sets `ready` to one event for all of them. On
   failure the writes already enqueued are waited for (they read the
   caller's host memory and must not outlive this call unseen) and
   released, `ready` stays NULL, and the slot is left as it was. */
static tabcl_status slot_fill(const char *fn, tabcl_stream *st, tabcl__slot *sl) {
  const int64_t i = sl->item;
  const cl_uint nw = sl->after ? 1 : 0;
  const cl_event *w = sl->after ? &sl->after : NULL;
  cl_event ev[TABCL_STREAM_MAX_PARTS];
  cl_uint n = 0;
  cl_int err = CL_SUCCESS;
  const char *call = "clEnqueueWriteBuffer";
  for (int p = 0; p < st->parts && err == CL_SUCCESS; p++) {
    const size_t b = st->bytes[i * st->parts + p];
    if (!b) continue;
    /* offset 0, whole item: a partial write at an offset is what oclgrind
       loses track of (DEVELOPERS.md) */
    err = TABCL_CL(clEnqueueWriteBuffer(st->tq, sl->mem[p], CL_FALSE, 0, b,
                                        st->host[i * st->parts + p], nw, w, &ev[n]));
    if (err == CL_SUCCESS) n++;
  }
  cl_event ready = NULL;
  if (err == CL_SUCCESS) {
    if (n == 1) {
      ready = ev[0];
      n = 0;
    } else {
      /* several parts (or none): one event after all of them, named
         explicitly rather than trusting the queue's order */
      call = "clEnqueueMarkerWithWaitList";
      err = TABCL_CL(clEnqueueMarkerWithWaitList(st->tq, n ? n : nw, n ? ev : w, &ready));
      if (err != CL_SUCCESS) ready = NULL;
    }
  }
  /* submitted now, so the upload runs while the caller computes */
  if (err == CL_SUCCESS) {
    call = "clFlush";
    err = TABCL_CL(clFlush(st->tq));
  }
  if (err == CL_SUCCESS) {
    for (cl_uint e = 0; e < n; e++) clReleaseEvent(ev[e]);
    sl->ready = ready;
    return TABCL_OK;
  }
  if (ready) ev[n++] = ready;
  if (n) clWaitForEvents(n, ev);
  for (cl_uint e = 0; e < n; e++) clReleaseEvent(ev[e]);
  char what[160];
  snprintf(what, sizeof what, "uploading item %lld in %s", (long long)i, fn);
  return tabcl__cl_fail(err, call, what);
}

/* ---- create and destroy ------------------------------------------------- */

void tabcl__stream_free(tabcl_stream *st, int wait) {
  if (!st) return;
  /* The buffers go back to the context's pool (a later stream of the same
     sizes skips their allocation and first touch), to be handed out again
     only after a marker that waits for everything that may still use them:
     the stream's uploads and the slot's give-back event, or nothing once
     both were waited for here. Without wait, one marker on the transfer
     queue stands for all the uploads; where it cannot be enqueued the
     buffers are released instead. A slot still out may be in use by
     commands nobody named: its buffers are released. */
  cl_event uploaded = NULL;
  if (!wait && st->tq && st->depth &&
      (clEnqueueMarkerWithWaitList(st->tq, 0, NULL, &uploaded) != CL_SUCCESS ||
       clFlush(st->tq) != CL_SUCCESS)) {
    if (uploaded) clReleaseEvent(uploaded);
    uploaded = NULL;
  }
  for (int s = 0; st->slots && s < st->depth; s++) {
    tabcl__slot *sl = &st->slots[s];
    /* Our uploads, then the caller's last uses: after both, nothing the
       stream knows of touches its buffers or the caller's host memory. */
    if (wait && sl->ready) clWaitForEvents(1, &sl->ready);
    if (wait && sl->after) clWaitForEvents(1, &sl->after);
    cl_event w[2];
    cl_uint nw = 0;
    if (!wait && uploaded) w[nw++] = uploaded;
    if (!wait && sl->after) w[nw++] = sl->after;
    const int pooled = sl->state != TABCL__SLOT_OUT && (wait || uploaded);
    for (int p = 0; p < st->parts; p++) {
      if (pooled) tabcl__pool_put_after(st->ctx, sl->mem[p], nw, nw ? w : NULL);
      else tabcl__buffer_release(sl->mem[p]);
    }
    if (sl->ready) clReleaseEvent(sl->ready);
    if (sl->after) clReleaseEvent(sl->after);
  }
  if (uploaded) clReleaseEvent(uploaded);
  pthread_mutex_destroy(&st->lock);
  tabcl__free(st->slots);
  tabcl__free(st->host);
  tabcl__free(st->bytes);
  tabcl__free(st);
}

static tabcl_status validate_desc(const char *fn, const tabcl_context *ctx,
                                  const tabcl_stream_desc *d) {
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!d) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: desc is NULL", fn);
  if (d->count < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: count is %lld; it must be >= 0", fn,
                       (long long)d->count);
  if (d->parts < 1 || d->parts > TABCL_STREAM_MAX_PARTS)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: parts is %d; it must be in [1, %d]", fn,
                       d->parts, TABCL_STREAM_MAX_PARTS);
  if (d->depth < 1 || d->depth > MAX_DEPTH)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: depth is %d; it must be in [1, %d]", fn,
                       d->depth, MAX_DEPTH);
  if (d->count > (int64_t)(SIZE_MAX / sizeof(void *) / (size_t)d->parts))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: count %lld x parts %d is too many", fn,
                       (long long)d->count, d->parts);
  if (d->count && !d->host) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: host is NULL", fn);
  if (d->count && !d->bytes) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: bytes is NULL", fn);
  for (int64_t i = 0; i < d->count; i++)
    for (int p = 0; p < d->parts; p++)
      if (d->bytes[i * d->parts + p] && !d->host[i * d->parts + p])
        return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: item %lld, part %d: host is NULL for %zu bytes",
                           fn, (long long)i, p, d->bytes[i * d->parts + p]);
  return TABCL_OK;
}

tabcl_status tabcl__stream_create(const char *fn, tabcl_context *ctx, const tabcl_stream_desc *d,
                                  tabcl_stream **out) {
  if (!out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  tabcl_status s = validate_desc(fn, ctx, d);
  if (s) return s;
  const size_t n = (size_t)d->count * (size_t)d->parts;
  tabcl_stream *st = tabcl__calloc(1, sizeof *st);
  if (!st) return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory", fn);
  if (pthread_mutex_init(&st->lock, NULL) != 0) {
    tabcl__free(st);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: cannot create a mutex", fn);
  }
  st->ctx = ctx;
  st->count = d->count;
  st->parts = d->parts;
  /* more slots than items would never be used */
  st->depth = d->count < d->depth ? (int)d->count : d->depth;
  st->host = tabcl__malloc((n ? n : 1) * sizeof *st->host);
  st->bytes = tabcl__malloc((n ? n : 1) * sizeof *st->bytes);
  st->slots = tabcl__calloc(st->depth ? (size_t)st->depth : 1, sizeof *st->slots);
  if (!st->host || !st->bytes || !st->slots) {
    tabcl__stream_free(st, 1);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory", fn);
  }
  if (n) {
    memcpy(st->host, d->host, n * sizeof *st->host);
    memcpy(st->bytes, d->bytes, n * sizeof *st->bytes);
  }
  if (st->depth && (s = tabcl__transfer_queue(ctx, &st->tq))) {
    tabcl__stream_free(st, 1);
    return s;
  }
  size_t cap[TABCL_STREAM_MAX_PARTS] = {0};
  for (size_t k = 0; k < n; k++)
    if (st->bytes[k] > cap[k % (size_t)st->parts]) cap[k % (size_t)st->parts] = st->bytes[k];
  for (int sl = 0; sl < st->depth; sl++) {
    st->slots[sl].item = sl;
    st->slots[sl].state = TABCL__SLOT_PENDING;
    for (int p = 0; p < st->parts && !s; p++)
      s = tabcl__pool_get(ctx, CL_MEM_READ_WRITE, cap[p], &st->slots[sl].mem[p], "a stream buffer");
  }
  for (int sl = 0; sl < st->depth && !s; sl++)
    if (!(s = slot_fill(fn, st, &st->slots[sl]))) st->slots[sl].state = TABCL__SLOT_FILLING;
  if (s) {
    tabcl__stream_free(st, 1);
    return s;
  }
  *out = st;
  return TABCL_OK;
}

tabcl_status tabcl_stream_create(tabcl_context *ctx, const tabcl_stream_desc *desc,
                                 tabcl_stream **out) {
  return tabcl__stream_create("tabcl_stream_create", ctx, desc, out);
}

void tabcl_stream_destroy(tabcl_stream *st) { tabcl__stream_free(st, 1); }

int64_t tabcl_stream_position(const tabcl_stream *st) {
  if (!st) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&st->lock);
  int64_t p = st->next;
  pthread_mutex_unlock((pthread_mutex_t *)&st->lock);
  return p;
}

/* ---- hand out and take back --------------------------------------------- */

tabcl_status tabcl__stream_next(const char *fn, tabcl_stream *st, int64_t *item, cl_mem *mem,
                                cl_event *ready) {
  if (!st) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: st is NULL", fn);
  if (!item) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: item is NULL", fn);
  if (!mem) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: mem is NULL", fn);
  if (!ready) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ready is NULL", fn);
  tabcl_status s = TABCL_OK;
  pthread_mutex_lock(&st->lock);
  const int64_t i = st->next;
  tabcl__slot *sl = i < st->count ? &st->slots[i % st->depth] : NULL;
  if (!sl) {
    s = tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: all %lld items have been handed out", fn,
                    (long long)st->count);
  } else if (sl->item != i || sl->state == TABCL__SLOT_OUT) {
    s = tabcl__fail(TABCL_INVALID_ARGUMENT,
                    "%s: item %lld is not given back yet; with depth %d it must be before "
                    "item %lld is handed out", fn, (long long)sl->item, st->depth, (long long)i);
  } else if (sl->state == TABCL__SLOT_PENDING && !(s = slot_fill(fn, st, sl))) {
    sl->state = TABCL__SLOT_FILLING;
  }
  if (!s) {
    /* An upload that already failed on the device is not handed out; it
       is enqueued again by the next try. One still running is handed out:
       its event carries any later failure to the work that waits on it. */
    cl_int est = CL_COMPLETE;
    cl_int err = TABCL_CL(clGetEventInfo(sl->ready, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                         sizeof est, &est, NULL));
    if (err != CL_SUCCESS) {
      s = tabcl__cl_fail(err, "clGetEventInfo", fn);
    } else if (est < 0) {
      clReleaseEvent(sl->ready);
      sl->ready = NULL;
      sl->state = TABCL__SLOT_PENDING;
      s = tabcl__fail(TABCL_OPENCL_ERROR, "%s: the upload of item %lld failed on the device: %s",
                      fn, (long long)i, tabcl__cl_error_name(est));
    } else if ((err = TABCL_CL(clRetainEvent(sl->ready))) != CL_SUCCESS) {
      s = tabcl__cl_fail(err, "clRetainEvent", fn);
    }
  }
  if (!s) {
    sl->state = TABCL__SLOT_OUT;
    st->next = i + 1;
    *item = i;
    memcpy(mem, sl->mem, (size_t)st->parts * sizeof *mem);
    *ready = sl->ready;
  }
  pthread_mutex_unlock(&st->lock);
  return s;
}

tabcl_status tabcl__stream_done(const char *fn, tabcl_stream *st, int64_t item, cl_event done) {
  if (!st) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: st is NULL", fn);
  if (!done)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: done is NULL; give the event after which item %lld is no longer used",
                       fn, (long long)item);
  /* an event of another OpenCL context could not be waited for by the refill */
  cl_context ec = NULL;
  cl_int err = TABCL_CL(clGetEventInfo(done, CL_EVENT_CONTEXT, sizeof ec, &ec, NULL));
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clGetEventInfo", "done");
  if (ec != st->ctx->cl)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: done belongs to another OpenCL context", fn);
  /* A command may wait on another queue's event only once that queue has
     been flushed (OpenCL 1.2, 5.13): the refill waits on `done` from the
     transfer queue, so the queue behind `done` is flushed here, whoever
     enqueued it. Drivers that submit eagerly (PoCL, NVIDIA) never showed
     the difference; Mesa's rusticl deadlocked without it (its transfer
     queue waiting forever on a kernel never submitted). A user event has no
     queue. */
  cl_command_queue dq = NULL;
  err = TABCL_CL(clGetEventInfo(done, CL_EVENT_COMMAND_QUEUE, sizeof dq, &dq, NULL));
  if (err == CL_SUCCESS && dq) err = TABCL_CL(clFlush(dq));
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clFlush", "the queue of done");
  tabcl_status s = TABCL_OK;
  pthread_mutex_lock(&st->lock);
  tabcl__slot *sl = item >= 0 && item < st->next ? &st->slots[item % st->depth] : NULL;
  if (!sl || sl->item != item || sl->state != TABCL__SLOT_OUT) {
    s = tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: item %lld is not handed out%s", fn,
                    (long long)item, sl ? " (given back already)" : "");
  } else if ((err = TABCL_CL(clRetainEvent(done))) != CL_SUCCESS) {
    s = tabcl__cl_fail(err, "clRetainEvent", fn);   /* still out: nothing changed */
  } else {
    if (sl->after) clReleaseEvent(sl->after);
    sl->after = done;
    clReleaseEvent(sl->ready);
    sl->ready = NULL;
    const int64_t j = item + st->depth;
    if (j >= st->count) {
      sl->state = TABCL__SLOT_IDLE;   /* `after` kept: destroy waits for it */
    } else {
      sl->item = j;
      sl->state = TABCL__SLOT_PENDING;
      if (!(s = slot_fill(fn, st, sl))) sl->state = TABCL__SLOT_FILLING;
    }
  }
  pthread_mutex_unlock(&st->lock);
  return s;
}

tabcl_status tabcl_stream_next(tabcl_stream *st, int64_t *item, cl_mem *mem, cl_event *ready) {
  return tabcl__stream_next("tabcl_stream_next", st, item, mem, ready);
}

tabcl_status tabcl_stream_done(tabcl_stream *st, int64_t item, cl_event done) {
  return tabcl__stream_done("tabcl_stream_done", st, item, done);
}

/* ---- pinned host memory ------------------------------------------------- */

/* Blocks tabcl_stream_host_alloc gave out, so that free can find the buffer
   behind a pointer and refuse one it did not give. */
typedef struct pinned {
  struct pinned *next;
  tabcl_context *ctx;
  cl_mem mem;
  void *host;
} pinned;
static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static pinned *pinned_list;

tabcl_status tabcl_stream_host_alloc(tabcl_context *ctx, size_t bytes, void **out) {
  const char *fn = "tabcl_stream_host_alloc";
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  pinned *r = tabcl__malloc(sizeof *r);
  if (!r) return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory", fn);
  /* 0 bytes is valid: the buffer is the placeholder tabcl__buffer_create makes */
  const size_t n = bytes ? bytes : 16;
  tabcl_status s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n, NULL,
                                        &r->mem, "pinned host memory");
  if (s) {
    tabcl__free(r);
    return s;
  }
  cl_int err = CL_SUCCESS;
  void *p = NULL;
  if (tabcl__fault_cl()) err = CL_MAP_FAILURE;
  else p = tabcl__map_waited(ctx->queue, r->mem, CL_MAP_READ | CL_MAP_WRITE, n, &err);
  if (err != CL_SUCCESS) {
    tabcl__buffer_release(r->mem);
    tabcl__free(r);
    return tabcl__cl_fail(err, "clEnqueueMapBuffer", "pinned host memory");
  }
  r->ctx = ctx;
  r->host = p;
  pthread_mutex_lock(&pinned_lock);
  r->next = pinned_list;
  pinned_list = r;
  pthread_mutex_unlock(&pinned_lock);
  *out = p;
  return TABCL_OK;
}

tabcl_status tabcl_stream_host_free(tabcl_context *ctx, void *p) {
  const char *fn = "tabcl_stream_host_free";
  if (!p) return TABCL_OK;
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  pthread_mutex_lock(&pinned_lock);
  pinned **at = &pinned_list;
  while (*at && ((*at)->host != p || (*at)->ctx != ctx)) at = &(*at)->next;
  pinned *r = *at;
  tabcl_status s = TABCL_OK;
  if (!r) {
    s = tabcl__fail(TABCL_INVALID_ARGUMENT,
                    "%s: %p is not memory tabcl_stream_host_alloc gave for this context", fn, p);
  } else {
    cl_int err = TABCL_CL(clEnqueueUnmapMemObject(ctx->queue, r->mem, p, 0, NULL, NULL));
    if (err != CL_SUCCESS) {
      s = tabcl__cl_fail(err, "clEnqueueUnmapMemObject", "pinned host memory");   /* kept */
    } else {
      *at = r->next;
      /* the buffer goes once the unmap has run */
      tabcl__buffer_release(r->mem);
      tabcl__free(r);
    }
  }
  pthread_mutex_unlock(&pinned_lock);
  return s;
}
