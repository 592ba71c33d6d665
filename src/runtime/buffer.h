/* Buffers, transfers, the staging area and the pool of device buffers (buffer.c). */
#ifndef TABCL_RUNTIME_BUFFER_H
#define TABCL_RUNTIME_BUFFER_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <stddef.h>

#include "tabcl/tabcl.h"
#include "runtime/workers.h"

/* A context's pool of device buffers for host calls' temporaries (buffer.c). */
#define TABCL__POOL_SLOTS 16
typedef struct tabcl__pool_slot {
  cl_mem mem;                 /* NULL: a free slot */
  size_t bytes;
  cl_mem_flags flags;
  cl_event done;              /* the marker after which mem may be handed out */
} tabcl__pool_slot;
typedef struct tabcl__pool {
  pthread_mutex_t lock;       /* guards everything below */
  tabcl__pool_slot slot[TABCL__POOL_SLOTS];
  size_t held, cap;           /* bytes in the slots; the upload.pool tuning (0: no pool) */
} tabcl__pool;

/* A context's host staging area for uploads (buffer.c): one pinned buffer,
   mapped for the context's life, used as two halves. */
typedef struct tabcl__staging {
  pthread_mutex_t lock;       /* guards everything below */
  cl_mem mem;                 /* CL_MEM_ALLOC_HOST_PTR; NULL until first needed */
  uint8_t *host;              /* its mapping */
  size_t size;                /* bytes of mem; two halves of size / 2 */
  cl_event busy[2];           /* the last transfer still using each half, or NULL */
  size_t used[2];             /* bytes of each half taken since it was last free */
  int next;                   /* the half the next chunk goes into if it fits */
  size_t cap;                 /* most bytes the area may grow to */
} tabcl__staging;

/* ---- buffers and transfers (buffer.c) --------------------------------- */

/* Never asks OpenCL for zero bytes (a 0-byte request makes a small buffer);
   a request above the device's allocation limit is TABCL_OUT_OF_MEMORY. */
tabcl_status tabcl__buffer_create(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                  void *host, cl_mem *out, const char *what);
void tabcl__buffer_release(cl_mem m);      /* NULL is fine */
/* A sub-buffer of parent that covers bytes [offset, offset + bytes) and
   starts at the aligned byte at or before offset: *skip bytes of it come
   first (a multiple of unit, which must be a power of two). Released with
   tabcl__buffer_release. For callees that take only small offsets. */
tabcl_status tabcl__buffer_window(tabcl_context *ctx, cl_mem parent, size_t offset, size_t bytes,
                                  size_t unit, cl_mem *out, size_t *skip, const char *what);
/* Blocking transfers; zero bytes is a no-op. */
tabcl_status tabcl__write(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          const void *src);
tabcl_status tabcl__read(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes, void *dst);
tabcl_status tabcl__fill_zero(tabcl_context *ctx, cl_mem m, size_t bytes);

/* Fills all `bytes` of m (from offset 0) with fill's content. On GPUs (or
   when forced) through the context's staging area in chunks that may still
   be in flight on return (later commands on the queue see the data); else
   through one whole-buffer map. On failure m's content is undefined. */
tabcl_status tabcl__upload(tabcl_context *ctx, cl_mem m, size_t bytes, tabcl__range_fn fill,
                           const void *arg, const char *what);
/* tabcl__upload of bytes [0, bytes) of src. */
tabcl_status tabcl__upload_copy(tabcl_context *ctx, cl_mem m, size_t bytes, const void *src,
                                const char *what);
/* Whether tabcl__upload goes through the staging area on this context. */
int tabcl__upload_staged(tabcl_context *ctx);
/* tabcl__read through the staging area where uploads go through it (in
   chunks, the copy out of one overlapping the transfer of the next); a
   plain tabcl__read elsewhere. On failure dst's content is undefined. */
tabcl_status tabcl__download(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                             void *dst);
/* A download the caller copies out of the staging area itself: where the
   context stages transfers and bytes fit one staging chunk, reads them
   there and, only once the whole read succeeded, calls drain(src, bytes,
   arg); returns 1 with the status in *st. Else returns 0 and does nothing
   (download into memory of the caller's then). It spares a copy into fresh
   memory: the host lookup's codes went device -> staging -> a temporary ->
   the caller's arrays. drain gets bytes [at, at + n) of the download (at
   is 0 and n is bytes here). */
typedef void (*tabcl__drain_fn)(const void *src, size_t at, size_t n, void *arg);
int tabcl__download_drain(tabcl_context *ctx, cl_mem m, size_t offset, size_t bytes,
                          tabcl__drain_fn drain, void *arg, tabcl_status *st);
/* tabcl__buffer_create with CL_MEM_COPY_HOST_PTR where uploads map, and a
   plain buffer filled by tabcl__upload where they are staged (a copy from
   pageable memory is as slow as the map on NVIDIA). Nothing is left on failure. */
tabcl_status tabcl__buffer_create_from(tabcl_context *ctx, cl_mem_flags flags, size_t bytes,
                                       const void *src, cl_mem *out, const char *what);
/* Context creation and destruction (context.c). */
tabcl_status tabcl__staging_init(tabcl_context *ctx);
/* Takes the upload.staging tuning of the context (after tabcl__tune_resolve
   or tabcl__context_tune), dropping the current staging area. */
void tabcl__staging_configure(tabcl_context *ctx);
void tabcl__staging_destroy(tabcl_context *ctx);
/* The pool (buffer.c). tabcl__pool_get hands out a buffer of at least bytes
   with flags (no host pointer), pooled where one is ready, else a new one
   (tabcl__buffer_create, whose failures it returns). tabcl__pool_put takes
   a buffer from tabcl__pool_get back after its last command was enqueued
   on ctx's queue, instead of tabcl__buffer_release; it is handed out again
   only after a marker behind that command has completed. It cannot fail:
   where the buffer cannot be kept it is released. tabcl__pool_put_after
   adds events to that marker's wait list, for buffers also used by
   commands of other queues (a stream's transfer queue, a caller's queue):
   each event's queue must have been flushed. */
tabcl_status tabcl__pool_init(tabcl_context *ctx);
/* Takes the upload.pool tuning (after tabcl__tune_resolve or
   tabcl__context_tune), giving back every pooled buffer. */
void tabcl__pool_configure(tabcl_context *ctx);
void tabcl__pool_destroy(tabcl_context *ctx);
/* Releases every idle buffer of the pool (the bench, before it measures a
   call's peak device memory). */
void tabcl__pool_trim(tabcl_context *ctx);
tabcl_status tabcl__pool_get(tabcl_context *ctx, cl_mem_flags flags, size_t bytes, cl_mem *out,
                             const char *what);
void tabcl__pool_put(tabcl_context *ctx, cl_mem m);
void tabcl__pool_put_after(tabcl_context *ctx, cl_mem m, cl_uint nwait, const cl_event *wait);
/* tabcl__pool_put_after for n buffers (NULLs skipped) behind one marker. */
void tabcl__pool_put_n(tabcl_context *ctx, int n, const cl_mem *mems, cl_uint nwait,
                       const cl_event *wait);
/* Idle pooled buffers alive in the process (not in tabcl__mem_live). */
long tabcl__pool_live(void);
/* Moves n buffers into (n > 0) or out of tabcl__mem_live's count. */
void tabcl__mem_count(long n);
/* Staging buffers alive in the process; they are not in tabcl__mem_live,
   since an area outlives the call that grew it. */
long tabcl__staging_live(void);
tabcl_status tabcl__finish(tabcl_context *ctx);
/* Waits for the command behind ev when enqueued is CL_SUCCESS and releases
   ev either way; returns the first failure. Call it in a statement after
   the enqueue's, never around it: arguments are evaluated in no set order,
   so ev could be read before the enqueue sets it. Used instead of blocking
   calls and clFinish, which some drivers end early when threads share a
   queue (see buffer.c). */
cl_int tabcl__wait_own(cl_int enqueued, cl_event ev);
/* Maps bytes of m from offset 0 and waits for the map on its own event;
   on failure (*err) returns NULL with nothing left mapped. */
void *tabcl__map_waited(cl_command_queue q, cl_mem m, cl_map_flags flags, size_t bytes,
                        cl_int *err);
/* Every command enqueued on q so far has ended (a marker waited for). */
cl_int tabcl__queue_drain(cl_command_queue q);

#endif
