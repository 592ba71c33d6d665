/* Attention internals. The files, from the top down (none calls a file
 * above it):
 *   sdpa.c          the public calls: validate, gather the facts, execute
 *   sdpa_selfcheck.c cl-probe's portable check (through the public call)
 *   sdpa_mma_check.c the tensor-core kernel's device check and its verdict
 *   sdpa_exec.c     executes a plan: buffers, uploads, slices, launches
 *   sdpa_plan.c     the planner: picks a backend from a table, slices
 *   sdpa_fused.c    the portable fused kernel: tiles (pure) and launch
 *   sdpa_mma.c      the NVIDIA tensor-core kernel: shape (pure) and launch
 *   sdpa_cpu.c      the CPU kernel: options, loop bound, key split (pure) and launch
 *   sdpa_split.c    the key split's rule and scratch, shared by both (pure)
 *   sdpa_clblast.c  the GEMM path: slice (pure) and run
 *   sdpa_grid.c     the launch grid the fused and tensor-core kernels share
 *   sdpa_reference.c the double host loop the checks compare with
 *   sdpa_common.c   descriptor helpers, validation, event tracking */
#ifndef TABCL_SDPA_H
#define TABCL_SDPA_H

#include "runtime/internal.h"

#include "attention/sdpa_backends.h"

/* ---- the planner (sdpa_plan.c): pure, no OpenCL call ---- */

/* What only running something on the device can tell, handed to the
   planner as data. */
typedef struct tabcl__sdpa_facts {
  int clblast;            /* the GEMM path is built in */
  int mma_enabled;        /* TABCL_SDPA_MMA leaves the tensor-core kernel on */
  int mma_passed;         /* it passed its device check for this dtype, so the
                             automatic choice may take it */
  size_t fused_cap;       /* the fused kernel's own work-group limit for this call's
                             shape class, once a build showed it below the device's; 0 */
  uint64_t loop_limit;    /* loop iterations a work-item may run (tabcl__loop_limit),
                             measured where a plan's loops could reach it; 0: none */
} tabcl__sdpa_facts;

typedef struct tabcl__sdpa_plan {
  int path;                     /* TABCL__SDPA_FUSED, _MMA, _CPU or _CLBLAST */
  const char *backend;          /* its name in reports */
  tabcl__sdpa_tiles tiles;      /* FUSED */
  tabcl__sdpa_keysplit keys;    /* FUSED: the walk over the keys; CPU: loop_bound only */
  tabcl__sdpa_mma_shape mma;    /* MMA */
  int cpu_tiles;                /* CPU: tiles of 16 query rows a work-item */
  const char *program;          /* "sdpa", "sdpa_mma", "sdpa_cpu" or "sdpa_gemm" */
  char options[256];            /* its build options (dtype and shape, never sizes) */
  size_t group;                 /* work-items a group of the main kernel */
  int64_t query_tiles;          /* work-groups along the queries (tile kernels) */
  int64_t launch_step;          /* batch entries a launch (or CLBlast step) takes */
  /* host calls: */
  int64_t host_step;            /* batch entries an upload takes */
  uint64_t q_bytes, kv_bytes, mask_bytes, out_bytes; /* the device buffers it makes */
  int mask_whole;               /* a batch-broadcast mask is uploaded once */
} tabcl__sdpa_plan;

/* Plans attention d on t. forced is TABCL__SDPA_AUTO (the first backend of
   the table that takes the call) or one backend. A call no backend can run
   is TABCL_UNSUPPORTED; a tuning entry that does not fit is
   TABCL_INVALID_ARGUMENT naming it. */
tabcl_status tabcl__sdpa_plan_make(const tabcl__target *t, const tabcl__sdpa_facts *f,
                                   const tabcl_sdpa_desc *d, int forced, tabcl__sdpa_plan *p);
void tabcl__sdpa_plan_print(const tabcl__sdpa_plan *p, char *buf, size_t cap);

/* ---- execution (sdpa_exec.c) ---- */

/* Runs d on device buffers, sliced into launches: plans with f, and plans
   again where a kernel shows a lower work-group limit (remembered in the
   context) or, for the automatic choice, where the tensor-core kernel
   cannot build or run this shape. wait applies to the first command; ev
   receives the first/last commands. */
tabcl_status tabcl__sdpa_exec(tabcl_context *ctx, const tabcl__sdpa_facts *f,
                              const tabcl_sdpa_desc *d, int forced, const tabcl__sdpa_bufs *b,
                              cl_uint nwait, const cl_event *wait, tabcl__sdpa_events *ev);
/* A host call: device buffers, uploads and read-back as the plan slices
   them, around tabcl__sdpa_exec. d is validated. */
tabcl_status tabcl__sdpa_exec_host(tabcl_context *ctx, const tabcl__sdpa_facts *f,
                                   const tabcl_sdpa_desc *d, int forced, const void *q,
                                   const void *k, const void *v, const void *mask, void *out);
/* The fused kernel's remembered work-group limit for d's shape class (0: none). */
size_t tabcl__sdpa_fused_cap(tabcl_context *ctx, const tabcl_sdpa_desc *d);

/* ---- the tensor-core check (sdpa_mma_check.c) ---- */

/* TABCL_OK once the kernel has built and passed its check on this device
   for dtype; the first call runs the check, later ones reuse the verdict. */
tabcl_status tabcl__sdpa_mma_verdict(tabcl_context *ctx, tabcl_dtype dt);
tabcl_status tabcl__selfcheck_sdpa_mma(tabcl_context *ctx);

/* ---- the entry points (sdpa.c) ---- */

/* The facts for d on ctx (runs the tensor-core check the first time the
   automatic choice could take that kernel, and the loop probe the first
   time a fused plan's loops could run long). Fails only where the probe
   does. */
tabcl_status tabcl__sdpa_facts_get(tabcl_context *ctx, const tabcl_sdpa_desc *d, int forced,
                                   tabcl__sdpa_facts *f);
/* tabcl__sdpa_exec with the facts gathered (the benchmark times it). */
tabcl_status tabcl__sdpa_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                             const tabcl__sdpa_bufs *b, cl_uint nwait, const cl_event *wait,
                             tabcl__sdpa_events *ev);
/* tabcl_sdpa_host with a forced path (tests use it to cross-check). */
tabcl_status tabcl__sdpa_host_path(tabcl_context *ctx, const tabcl_sdpa_desc *desc,
                                   const void *q, const void *k, const void *v,
                                   const void *mask, void *out, int path);

tabcl_status tabcl__selfcheck_sdpa(tabcl_context *ctx);

/* ---- the checks' reference (sdpa_reference.c) ---- */

/* out[0, head_dim) = the attention output of batch entry b, head h, query
   i by a double host loop over d's tensors (no causality), with mask NULL
   or a boolean [q_heads, q_len, kv_len] mask shared by the batch; w holds
   kv_len values of scratch. */
void tabcl__sdpa_expect_row(const tabcl_sdpa_desc *d, const double *q, const double *k,
                            const double *v, const uint8_t *mask, int b, int h, int i,
                            double *w, double *out);

#endif
