/* Device-resident variants of tabcl's calls: inputs and outputs stay in
 * cl_mem buffers of the context's OpenCL context and are enqueued on its
 * queue, so a pipeline never leaves the device. Include after an OpenCL
 * header or let this one include <CL/cl.h>. */
#ifndef TABCL_TABCL_CL_H
#define TABCL_TABCL_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "tabcl/tabcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tabcl context on the application's own OpenCL objects: every call
   enqueues on `queue`, and the _cl calls take buffers of `context` and
   events of the application's. tabcl retains the three objects (clRetain*)
   and releases them at tabcl_context_destroy, so the caller may release
   its own references at any time after this returns. opts (NULL =
   defaults) works as for tabcl_context_create (kernel and cache folders,
   tuning, device profile, max_batch_per_launch), except that opts->device
   must be NULL: the device is `device` ($TABCL_DEVICE is not read).

   What may be passed: device must be one of the context's devices
   (CL_CONTEXT_DEVICES) and queue a queue of that context and device.
   The queue must execute in order: an out-of-order queue
   (CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) is refused, since tabcl relies
   on the queue's order between its own commands of one call; pass an
   in-order queue (a second queue of the same context is fine). Profiling
   need not be on: no public call reads profiling times (only tools'
   timings do). Anything else (a NULL handle, a device not in the context,
   a queue of another context or device, opts->device set) is
   TABCL_INVALID_ARGUMENT with a message naming the argument; a failure of
   any kind leaves *out unset and the objects' reference counts as they
   were.

   What tabcl does with them: the transfer queue that streams use is made
   in `context` for `device`. Host calls (tabcl_category_index_lookup,
   tabcl_sdpa_host, ...) wait for their own commands' events as on any
   context; nothing tabcl does calls clFinish on `queue`.
   tabcl_context_destroy does not wait for `queue` either (it flushes it):
   commands of _cl calls still running go on to completion, OpenCL keeping
   what they use alive, and the caller waits for them on the events it got.
   Destroying a category index does not wait for the queue either. A fit
   (host or _cl), and a host call that fails after enqueuing work, end
   with a marker on the queue and wait for it: where other threads of the
   application enqueue on the same queue, that wait also covers what they
   enqueued before the marker. The thread rules are those of any tabcl
   context, and several tabcl contexts may share one application context
   and queue. */
TABCL_API tabcl_status tabcl_context_create_cl(cl_context context, cl_device_id device,
                                               cl_command_queue queue,
                                               const tabcl_options *opts,
                                               tabcl_context **out);

/* The OpenCL objects a context uses, so callers can allocate buffers in the
   same context and order work on the same queue. Owned by the context (or,
   for tabcl_context_create_cl, the caller's objects it was given). */
TABCL_API cl_context tabcl_context_cl_context(const tabcl_context *ctx);
TABCL_API cl_command_queue tabcl_context_cl_queue(const tabcl_context *ctx);
TABCL_API cl_device_id tabcl_context_cl_device(const tabcl_context *ctx);
/* (Each of the three returns NULL for a NULL context; none can fail.) */

/* ---- categorical index (see tabcl_category_index_lookup) ---- */

/* A string column already on the device, Arrow layout. offsets holds
   length + 1 longs (offsets[0] == 0, non-decreasing, offsets[length] ==
   bytes); data holds the label bytes; validity is (length + 7) / 8 bytes,
   bit i (LSB first) set = label i present, or NULL when every label is
   present. The buffers' contents are not read on the host, so they are
   trusted: offsets that break these rules give unspecified codes. Kernels
   read labels as whole aligned words: a data buffer of at least
   round_up(bytes, 8) + 8 bytes is read in place (the bytes past `bytes`
   never change a result); a shorter one is first copied into a padded
   buffer of the call's own. data may be NULL when bytes is 0, and every
   buffer may be NULL in a column of length 0. */
typedef struct tabcl_strings_cl {
  int64_t length;
  int64_t bytes;
  cl_mem data;
  cl_mem offsets;
  cl_mem validity;
  int64_t max_label;   /* the longest label in bytes, or 0 when unknown (bytes is assumed);
                          never less than the longest label: it picks the hash kernels */
} tabcl_strings_cl;

/* tabcl_category_index_fit from vocabularies already on the device, with
   the same codes and the same index (lookups, align and save treat it as
   any other). After the nwait events in wait it reads back each column's
   offsets and validity (the index keeps them on the host, so they are
   checked as a host view's are: offsets[0] == 0, non-decreasing,
   offsets[length] == bytes) and copies the label bytes on the device; it
   returns when the index is ready, and *ev (ev may be NULL) is a completed
   marker for callers that order work by events. Buffers are checked first
   (NULL, size, owning context); a failed check or fit enqueues nothing
   that changes a caller's buffer and leaves *out unset. max_label is not
   needed (it may be 0). Returns TABCL_OK, TABCL_INVALID_ARGUMENT (NULL
   arguments, a buffer too small or of another context, offsets that break
   the rules above; the message names the column), TABCL_OUT_OF_MEMORY,
   TABCL_BUILD_FAILED or TABCL_OPENCL_ERROR. */
TABCL_API tabcl_status tabcl_category_index_fit_cl(tabcl_context *ctx, int ncols,
                                                   const tabcl_strings_cl *vocabularies,
                                                   tabcl_code_order order, cl_uint nwait,
                                                   const cl_event *wait, cl_event *ev,
                                                   tabcl_category_index **out);

/* tabcl_category_index_lookup with queries and codes on the device: codes[c]
   (int32 per row, at least queries[c].length of them) receives the fitted
   code of queries[c] label i, or -1. The work is enqueued on the context's
   queue after the nwait events in wait; *ev (ev may be NULL) completes when
   every code is written; the caller releases it. Arguments are checked
   first (ncols, NULL buffers, buffer sizes and owning context): a failed
   check enqueues nothing and changes no buffer. The work is several
   launches (hashing, then one search per four columns, sliced to the
   device's limits): an OpenCL failure after the first may leave codes partly
   written. Safe to call from several threads on one index, which it does
   not change. Returns TABCL_OK, TABCL_INVALID_ARGUMENT (the checks above;
   the message names the column), TABCL_OUT_OF_MEMORY, TABCL_BUILD_FAILED or
   TABCL_OPENCL_ERROR. */
TABCL_API tabcl_status tabcl_category_index_lookup_cl(tabcl_category_index *idx, int ncols,
                                                      const tabcl_strings_cl *queries,
                                                      cl_mem const *codes, cl_uint nwait,
                                                      const cl_event *wait, cl_event *ev);

/* ---- attention (see tabcl_sdpa_host) ---- */

/* tabcl_sdpa_host with q, k, v, mask and out in device buffers of the
   context, laid out exactly as there (q at offset 0, and so on). The work is
   enqueued on the context's queue after the nwait events in wait (nwait == 0
   with wait == NULL for none); *ev (ev may be NULL) completes when out is
   fully written, and the caller releases it. A call with no work enqueues a
   marker for ev. k, v and mask may be NULL when kv_len is 0; mask is ignored
   when desc->mask is TABCL_MASK_NONE. The descriptor and the buffers'
   sizes (each at least what the descriptor says; a mask with
   mask_query_broadcast holds [B or 1, Hq or 1, 1, Lk]) are checked first,
   and a failed check enqueues nothing. Large batches run as several
   launches; an OpenCL failure after the first may leave out partly
   written. Returns TABCL_OK, or the statuses of tabcl_sdpa_host
   (TABCL_INVALID_ARGUMENT also for NULL buffers q, out, or k and v with
   kv_len > 0, and for a buffer smaller than the descriptor says). */
TABCL_API tabcl_status tabcl_sdpa_cl(tabcl_context *ctx, const tabcl_sdpa_desc *desc, cl_mem q,
                                     cl_mem k, cl_mem v, cl_mem mask, cl_mem out, cl_uint nwait,
                                     const cl_event *wait, cl_event *ev);

/* ---- streams (see tabcl_stream_create) ---- */

/* Hands out the next item in order: *item receives its index, mem[0 ..
   parts) its device buffers (owned by the stream; item i's part p holds
   bytes[i * parts + p] bytes from offset 0) and *ready an event that
   completes when they hold exactly that item's data (the caller releases
   it). Wait on it before any use: tabcl_sdpa_cl's wait list, or your own
   kernels'. Up to depth items may be out at once: asking for item i while
   item i - depth is not given back is TABCL_INVALID_ARGUMENT, and so is
   asking past the last item. An upload that failed to enqueue (reported by
   the tabcl_stream_done that enqueued it) is tried again here; an upload
   that failed on the device is reported here when it has already ended.
   On failure (TABCL_INVALID_ARGUMENT for NULL arguments and the cases
   above, else the upload's status) nothing is handed out and the call may
   be repeated. */
TABCL_API tabcl_status tabcl_stream_next(tabcl_stream *st, int64_t *item, cl_mem *mem,
                                         cl_event *ready);
/* Gives item back: done (not NULL; the stream retains it) completes after
   the caller's last use of its buffers, e.g. the event of tabcl_sdpa_cl or
   of the caller's last kernel. The buffers are refilled with item + depth
   by a write on the transfer queue that has done in its wait list, so
   never before it, whatever the queues' order or timing. A failed retain of
   done changes nothing (the item is still out); a failure to enqueue the
   refill is reported, the item counts as given back, and the refill is
   tried again by the tabcl_stream_next that wants it. Returns TABCL_OK,
   TABCL_INVALID_ARGUMENT (NULL st or done, done of another OpenCL context,
   an item not out; nothing changes), TABCL_OUT_OF_MEMORY or
   TABCL_OPENCL_ERROR. */
TABCL_API tabcl_status tabcl_stream_done(tabcl_stream *st, int64_t item, cl_event done);

/* tabcl_stream_sdpa_host with q and the outputs in device buffers of the
   context (out[i] for estimator i) and K and V still in host memory. The
   work is enqueued after the nwait events in wait, and the call returns
   without waiting: *ev (ev may be NULL) completes when every output is
   written; the caller releases it. k and v must stay valid and unchanged
   until then. Returns TABCL_OK or a status of tabcl_stream_sdpa_host,
   whose checks come before anything is enqueued. On failure everything
   enqueued so far has finished and some outputs may be written. */
TABCL_API tabcl_status tabcl_stream_sdpa_cl(tabcl_context *ctx, const tabcl_sdpa_desc *desc,
                                            int count, const int64_t *kv_len, cl_mem q,
                                            const void *const *k, const void *const *v,
                                            int depth, cl_mem const *out, cl_uint nwait,
                                            const cl_event *wait, cl_event *ev);

#ifdef __cplusplus
}
#endif
#endif
