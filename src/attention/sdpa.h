/* Attention internals shared by sdpa.c (validation, slicing, entry points),
 * sdpa_fused.c (the fused kernel), sdpa_clblast.c (the GEMM path) and the
 * tests and benchmark. */
#ifndef TABCL_SDPA_H
#define TABCL_SDPA_H

#include "runtime/internal.h"

enum { TABCL__SDPA_AUTO = 0, TABCL__SDPA_FUSED = 1, TABCL__SDPA_CLBLAST = 2, TABCL__SDPA_MMA = 3 };

/* Work-groups a launch puts in NDRange dims 1 and 2 (NVIDIA allows 65535
   there); the batch goes in dim 0. A variable so tests can force the split. */
extern int tabcl__sdpa_max_groups_yz;

/* Sets kernel arguments first, first + 1, ... (TABCL_SET_ARGS starts at 0). */
tabcl_status tabcl__sdpa_set_args_at(cl_kernel k, const char *kname, int first, int n,
                                     const tabcl__arg *args);
#define TABCL_SET_ARGS_AT(k, kname, first, ...)                                          \
  tabcl__sdpa_set_args_at((k), (kname), (first),                                         \
                          (int)(sizeof((tabcl__arg[]){__VA_ARGS__}) / sizeof(tabcl__arg)), \
                          (tabcl__arg[]){__VA_ARGS__})

/* The fused kernel's tile shape for one device, dtype and head dim. */
typedef struct tabcl__sdpa_tiles {
  int dp;      /* head dim rounded up to a multiple of 16 */
  int bq, bk;  /* queries per work-group, keys per tile */
  int nt;      /* work-group size */
  int tc;      /* work-items across the output's float4 columns */
  int tks;     /* work-items across the keys of S */
  int kc, vk;  /* head-dim columns of a K chunk, keys of a V chunk (see cl/sdpa.cl) */
  int prefetch; /* 1: K/V chunks are read into registers one phase ahead of their use */
  size_t local_bytes;
} tabcl__sdpa_tiles;

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

size_t tabcl__sdpa_elem_size(tabcl_dtype dt);
int tabcl__sdpa_has_work(const tabcl_sdpa_desc *d);
double tabcl__sdpa_scale(const tabcl_sdpa_desc *d);
/* Checks every field; has_* say whether the caller passed that tensor. */
tabcl_status tabcl__sdpa_validate(const char *fn, const tabcl_context *ctx,
                                  const tabcl_sdpa_desc *d, int has_q, int has_k, int has_v,
                                  int has_mask, int has_out);
/* 1 and fills t when the fused kernel fits the device for this dtype and head dim. */
int tabcl__sdpa_choose_tiles(const tabcl_context *ctx, tabcl_dtype dt, int head_dim,
                             tabcl__sdpa_tiles *t);
/* Resolves TABCL__SDPA_AUTO and checks that the path can run here. */
tabcl_status tabcl__sdpa_pick_path(const tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                                   int *picked, tabcl__sdpa_tiles *t);

/* Runs the whole call on device buffers, slicing the batch into launches.
   wait applies to the first command; ev receives the first/last commands. */
tabcl_status tabcl__sdpa_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                             const tabcl__sdpa_bufs *b, cl_uint nwait, const cl_event *wait,
                             tabcl__sdpa_events *ev);

/* One fused launch over batch entries [b0, b0 + nb) of the buffers. */
tabcl_status tabcl__sdpa_fused_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                      const tabcl__sdpa_tiles *t, const tabcl__sdpa_bufs *b,
                                      int64_t b0, int64_t nb, cl_uint nwait,
                                      const cl_event *wait, tabcl__sdpa_events *ev);
/* Batch entries a fused launch may take (NDRange and max_batch_per_launch). */
int64_t tabcl__sdpa_fused_slice(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                const tabcl__sdpa_tiles *t);

/* The CLBlast path over batch entries [b0, b0 + nb): Q K^T, softmax, P V. */
int tabcl__sdpa_clblast_available(void);
tabcl_status tabcl__sdpa_clblast_run(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, int64_t b0, int64_t nb,
                                     cl_uint nwait, const cl_event *wait,
                                     tabcl__sdpa_events *ev);
/* The most elements CLBlast may address in one buffer (2^31 - 1: its
   offsets are 32-bit); a variable so tests can make windows necessary. */
extern size_t tabcl__sdpa_clblast_index_limit;
/* Batch entries one CLBlast step may take (its temporaries must fit). */
int64_t tabcl__sdpa_clblast_slice(const tabcl_context *ctx, const tabcl_sdpa_desc *d);

/* tabcl_sdpa_host with a forced path (tests use it to cross-check). */
tabcl_status tabcl__sdpa_host_path(tabcl_context *ctx, const tabcl_sdpa_desc *desc,
                                   const void *q, const void *k, const void *v,
                                   const void *mask, void *out, int path);

tabcl_status tabcl__selfcheck_sdpa(tabcl_context *ctx);
/* The self-checks' reference: out[0, head_dim) = the attention output of
   batch entry b, head h, query i by a double host loop over d's tensors
   (no causality), with mask NULL or a boolean [q_heads, q_len, kv_len]
   mask shared by the batch; w holds kv_len values of scratch. */
void tabcl__sdpa_expect_row(const tabcl_sdpa_desc *d, const double *q, const double *k,
                            const double *v, const uint8_t *mask, int b, int h, int i,
                            double *w, double *out);

/* ---- the NVIDIA tensor-core path for f32/f16/bf16 (sdpa_mma.c) ---- */
typedef struct tabcl__sdpa_mma_shape {
  int dp;   /* head dim rounded up to a multiple of 16 (at most 128) */
  int bk;   /* keys per tile */
  int nw;   /* warps per work-group, 16 queries each */
  int qmode;   /* f32: where Q lives for the pass (MMA_QMODE) */
  int batch;   /* a tile's global loads issued together (MMA_BATCH) */
} tabcl__sdpa_mma_shape;
/* 1 and fills m when the kernel may run this call on this device (NVIDIA,
   f32, f16 or bf16 with head dim <= 128, and
   TABCL_SDPA_MMA is not "0"); says nothing about the device check. */
int tabcl__sdpa_mma_tiles(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                          tabcl__sdpa_mma_shape *m);
/* TABCL_OK once the kernel has built and passed its check on this device
   for dtype; the first call runs the check, later ones reuse the verdict. */
tabcl_status tabcl__sdpa_mma_verdict(tabcl_context *ctx, tabcl_dtype dt);
/* Runs the call on the tensor-core kernel and sets *taken when the kernel
   may run it and path is TABCL__SDPA_MMA, or AUTO and the kernel passed
   its check; else clears *taken and does nothing. */
tabcl_status tabcl__sdpa_mma_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                                 const tabcl__sdpa_bufs *b, cl_uint nwait, const cl_event *wait,
                                 tabcl__sdpa_events *ev, int *taken);
tabcl_status tabcl__selfcheck_sdpa_mma(tabcl_context *ctx);

/* Runs kernel kname of program (built with opts) over batch entries
   [b0, b0 + nb) x all heads x nqt query tiles, in groups of nt, with the
   arguments the fused and tensor-core kernels share; dims 1 and 2 are split
   where they exceed tabcl__sdpa_max_groups_yz. TABCL_UNSUPPORTED, before
   anything is enqueued, when the compiled kernel cannot run nt work-items
   a group (what names it in the message). */
tabcl_status tabcl__sdpa_tile_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, const char *program,
                                     const char *opts, const char *kname, const char *what,
                                     size_t nt, int nqt, int64_t b0, int64_t nb, cl_uint nwait,
                                     const cl_event *wait, tabcl__sdpa_events *ev);

#endif
