/* The context, what a planner reads of it, and its loop limit (context.c, loop_limit.c). */
#ifndef TABCL_RUNTIME_CONTEXT_H
#define TABCL_RUNTIME_CONTEXT_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "tabcl/tabcl.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/slice.h"
#include "runtime/tune.h"
#include "runtime/workers.h"

/* ---- context (context.c) ---------------------------------------------- */

typedef struct tabcl__program_entry tabcl__program_entry;


struct tabcl_context {
  cl_platform_id platform;
  cl_device_id device;
  cl_context cl;
  cl_command_queue queue;     /* in order; profiling on where tabcl made it */
  cl_command_queue transfer;  /* a second in-order queue for streamed uploads (stream/),
                                 made on first use (tabcl__transfer_queue; guarded by lock) */
  tabcl__device_desc info;
  tabcl__tuning tune;         /* the table for this device, then TABCL_TUNE */
  char *kernel_dir;           /* NULL: embedded sources */
  char *cache_dir;            /* NULL: no disk cache */
  char cache_refusal[768];    /* the disk cache's last refusal, "" if none (guarded by lock) */
  int64_t max_batch_per_launch; /* 0 = device limits only */
  tabcl__target target;       /* what a planner reads of the context: info, tune,
                                 max_batch_per_launch and the host's online cores
                                 (counted at creation) */
  int app_objects;            /* cl, device and queue are the caller's, retained
                                 (tabcl_context_create_cl): its queue is never drained */
  unsigned hash_bits;         /* test-only: 64 normally; fewer forces collisions */
  size_t sdpa_fused_cap[32]; /* the fused kernel's own work-group limit where a build
                                 showed it below the device's, by f64 or not and padded
                                 head dim (attention/sdpa_exec.c; guarded by lock) */
  uint64_t loop_limit;        /* loop iterations a work-item may run (runtime/loop_limit.c),
                                 0 for no limit up to TABCL__LOOP_PROBE_N */
  int loop_limit_known;       /* loop_limit was measured (both guarded by lock) */
  int sdpa_mma_state[3];      /* tensor-core attention check, f32, f16 and bf16: 0 not
                                 run yet, 1 passed, -1 failed (guarded by lock) */
  pthread_mutex_t lock;       /* guards programs and stats */
  pthread_cond_t built;       /* signalled (under lock) when a program build ends */
  tabcl__program_entry *programs;
  tabcl_stats stats;          /* but kernel_launches, which is counted in launches */
  _Atomic uint64_t launches;  /* every launch adds one: no lock on that path */
  tabcl__staging staging;      /* uploads on GPUs (buffer.c) */
  tabcl__pool pool;            /* host calls' temporaries (buffer.c) */
  tabcl__workers workers;      /* the worker pool (workers.c) */
  /* Set (under lock) by an upper layer that keeps process-wide state per
     context (attention's CLBlast users); called first by the destroy. */
  void (*destroy_hook)(tabcl_context *ctx);
};

/* The context's transfer queue (in order, profiling on), created the first
   time it is asked for. Work on it is ordered against the main queue only
   by events. */
tabcl_status tabcl__transfer_queue(tabcl_context *ctx, cl_command_queue *out);

/* Test-only: applies TABCL_TUNE-style entries to this context's tuning
   (checked as TABCL_TUNE is). Not for use while other threads use ctx. */
tabcl_status tabcl__context_tune(tabcl_context *ctx, const char *entries);
/* Test-only: shrink hashes to the low `bits` bits (1..64) so tests can force collisions. */
void tabcl__context_set_hash_bits(tabcl_context *ctx, unsigned bits);

/* ---- the loop limit (loop_limit.c) ----------------------------------- */

/* Iterations the loop probe runs in one work-item. */
#define TABCL__LOOP_PROBE_N (1u << 22)
/* How many loop iterations in all one work-item of this device runs before
   the driver silently ends its loops (Mesa 22.3's llvmpipe: 65,535); 0 when
   the probe's TABCL__LOOP_PROBE_N ran whole. Measured by a kernel the first
   time it is asked for, then kept in the context. */
tabcl_status tabcl__loop_limit(tabcl_context *ctx, uint64_t *out);
/* 1 and *out when the limit was measured (or set) already; else 0, *out 0. */
int tabcl__loop_limit_known(tabcl_context *ctx, uint64_t *out);
/* Test-only: the context behaves as if the probe had found `limit`. */
void tabcl__context_set_loop_limit(tabcl_context *ctx, uint64_t limit);
/* Loops a work-item may run before the device's loop limit is asked for:
   no driver known to end loops early does so below 2^15 iterations
   (llvmpipe's limit is 65,535), so short calls never run the probe. */
#define TABCL__LOOPS_UNCHECKED ((uint64_t)1 << 15)
/* The work-item loops a plan may run under dev's limit: half of it (a
   planner's count is a bound by reading the kernel, and a driver may count
   its loops a little differently); UINT64_MAX where there is none. */
static inline uint64_t tabcl__loop_budget(const struct tabcl__device_desc *dev) {
  return dev->loop_limit ? dev->loop_limit / 2 : UINT64_MAX;
}

/* tabcl__slice_items for a context's own target. */
static inline int64_t tabcl__slice_items_ctx(const tabcl_context *ctx, uint64_t bytes_per_item,
                                             uint64_t work_items_per_item) {
  return tabcl__slice_items(&ctx->target, bytes_per_item, work_items_per_item);
}

/* ctx's target with the loop limit the context has measured, if it has:
   *dev becomes a copy of ctx's device description carrying it, *out points
   at it. Returns whether the limit is known (else dev->loop_limit is 0 and
   a plan that could run past TABCL__LOOPS_UNCHECKED asks tabcl__loop_limit
   and plans again). */
int tabcl__context_target_limited(tabcl_context *ctx, tabcl__device_desc *dev, tabcl__target *out);
/* After a plan made with such a target: where the limit is not known and
   the plan's work-items could loop past TABCL__LOOPS_UNCHECKED (`loops`),
   measures it into dev->loop_limit and sets *known and *again (plan
   again); else sets *again to 0. */
tabcl_status tabcl__loop_limit_learn(tabcl_context *ctx, int *known, tabcl__device_desc *dev,
                                     uint64_t loops, int *again);

#endif
