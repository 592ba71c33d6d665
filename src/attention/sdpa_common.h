/* Attention's shared vocabulary: the backends' names, descriptor helpers
 * and validation, buffers and events (sdpa_common.c). */
#ifndef TABCL_SDPA_COMMON_H
#define TABCL_SDPA_COMMON_H

#include "runtime/internal.h"

enum {
  TABCL__SDPA_AUTO = 0,
  TABCL__SDPA_FUSED = 1,
  TABCL__SDPA_CLBLAST = 2,
  TABCL__SDPA_MMA = 3,
  TABCL__SDPA_CPU = 4
};

/* ---- descriptor helpers and validation (sdpa_common.c) ---- */

size_t tabcl__sdpa_elem_size(tabcl_dtype dt);
int tabcl__sdpa_has_work(const tabcl_sdpa_desc *d);
double tabcl__sdpa_scale(const tabcl_sdpa_desc *d);
/* The kernels' mask_hb argument (cl/common.cl): bit 0 the mask's head
   extent is 1, bit 1 its query extent is 1. */
int tabcl__sdpa_mask_hb(const tabcl_sdpa_desc *d);
/* Checks every field; has_* say whether the caller passed that tensor. */
tabcl_status tabcl__sdpa_validate(const char *fn, const tabcl_context *ctx,
                                  const tabcl_sdpa_desc *d, int has_q, int has_k, int has_v,
                                  int has_mask, int has_out);

/* The device buffers of one call: whole tensors, batch entry 0 first. */
typedef struct tabcl__sdpa_bufs {
  cl_mem q, k, v, mask, out;
} tabcl__sdpa_bufs;

/* First and last command of a run, for callers that want to wait on or time it. */
typedef struct tabcl__sdpa_events {
  cl_event first, last;
  int want_first, want_last;
} tabcl__sdpa_events;
void tabcl__sdpa_track(tabcl__sdpa_events *e, cl_event ev);
void tabcl__sdpa_events_release(tabcl__sdpa_events *e);

#endif
