/* Streams of host data to the device (src/README.md: may use attention/
 * and runtime/). The files, from the top down:
 *   stream_sdpa.c  attention of one query batch against each item in turn
 *   stream.c       the stream itself (create, next, done, destroy) and
 *                  pinned host memory
 *
 * A stream owns `depth` slots, each a set of device buffers (one per part).
 * Item i lives in slot i % depth. A slot goes
 *   FILLING (its upload enqueued, `ready` its event) -> OUT (handed out)
 *   -> PENDING (given back with `after`; its refill not enqueued yet)
 *   -> FILLING (the refill enqueued with `after` in its wait list) ...
 * and IDLE once no item is left for it. PENDING is also where a refill
 * whose enqueue failed waits to be tried again; a slot is handed out only
 * from FILLING, so never with a failed or partial upload. */
#ifndef TABCL_STREAM_H
#define TABCL_STREAM_H

#include "runtime/internal.h"
#include "tabcl/tabcl_cl.h"

enum { TABCL__SLOT_IDLE = 0, TABCL__SLOT_PENDING, TABCL__SLOT_FILLING, TABCL__SLOT_OUT };

typedef struct tabcl__slot {
  cl_mem mem[TABCL_STREAM_MAX_PARTS];
  int64_t item;          /* the item it holds, is filling or waits to fill */
  int state;
  cl_event after;        /* the give-back event its (re)fill waits for; retained, or NULL */
  cl_event ready;        /* the event of its fill, or NULL */
} tabcl__slot;

struct tabcl_stream {
  tabcl_context *ctx;
  cl_command_queue tq;   /* the context's transfer queue */
  pthread_mutex_t lock;  /* calls on one stream may come from several threads */
  int64_t count;
  int parts, depth;      /* depth: slots, at most count */
  const void **host;     /* copies of the caller's arrays */
  size_t *bytes;
  int64_t next;          /* the next item to hand out */
  tabcl__slot *slots;
};

/* The public calls' bodies, with the caller's name for messages. */
tabcl_status tabcl__stream_create(const char *fn, tabcl_context *ctx, const tabcl_stream_desc *d,
                                  tabcl_stream **out);
tabcl_status tabcl__stream_next(const char *fn, tabcl_stream *st, int64_t *item, cl_mem *mem,
                                cl_event *ready);
tabcl_status tabcl__stream_done(const char *fn, tabcl_stream *st, int64_t item, cl_event done);
/* wait = 1: as tabcl_stream_destroy. wait = 0: releases everything at once,
   leaving OpenCL to keep buffers and events alive for the commands already
   enqueued (the caller has an event that covers them). */
void tabcl__stream_free(tabcl_stream *st, int wait);

#endif
