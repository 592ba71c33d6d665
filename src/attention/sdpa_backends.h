/* Attention's backends: the portable fused kernel, the NVIDIA tensor-core
 * kernel, the CPU kernel, the GEMM path and the tile kernels' launch grid
 * (sdpa_fused.c, sdpa_mma.c, sdpa_cpu.c, sdpa_clblast.c, sdpa_grid.c). */
#ifndef TABCL_SDPA_BACKENDS_H
#define TABCL_SDPA_BACKENDS_H

#include "attention/sdpa_common.h"

/* ---- the portable fused kernel (sdpa_fused.c) ---- */

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

/* Pure: the tile shape for dtype dt and head_dim on target t, with at most
   kernel_cap work-items a group (the compiled kernel's own limit where it
   is known; 0: the device's). 1 and fills *out when a shape fits; 0 when
   none does (the GEMM path takes the call); -1 when the sdpa.fused.dNN
   tuning entry for this head dim does not fit, and *why says how. */
int tabcl__sdpa_fused_tiles(const tabcl__target *t, size_t kernel_cap, tabcl_dtype dt,
                            int head_dim, tabcl__sdpa_tiles *out, const char **why);
/* The same for ctx's own target (tests, the benchmark). */
int tabcl__sdpa_choose_tiles(const tabcl_context *ctx, tabcl_dtype dt, int head_dim,
                             tabcl__sdpa_tiles *t);
/* How a fused call walks the keys. Where a work-item's loops over all of
   them would pass the device's loop limit (a driver that silently ends a
   work-item's loops after so many iterations: runtime/loop_limit.c), each
   launch takes key_step keys and the running maxima, sums and outputs wait
   in a state buffer between launches (cl/sdpa.cl, SDPA_SPLIT). */
typedef struct tabcl__sdpa_keysplit {
  uint64_t loop_bound;   /* loop iterations, at most, of one work-item over all the keys */
  int64_t key_step;      /* keys a launch; 0: all of them in one launch */
  int64_t qtile_step;    /* query tiles a launch when split (the state is sized for it) */
  uint64_t state_bytes;  /* the state buffer of one launch when split, else 0 */
} tabcl__sdpa_keysplit;
/* Pure: at most how many loop iterations one work-item of shape t runs in
   a launch over `keys` keys (every loop of cl/sdpa.cl's kernel counted, the
   unrolled ones too, each one more than its trip count). */
uint64_t tabcl__sdpa_fused_loops(const tabcl__sdpa_tiles *t, int64_t keys);
/* Pure: the key walk of d with shape t under loop_limit (0: none), and the
   batch entries a launch may take then (*launch_step, lowered so that the
   state fits). 0; -1 when even one key tile a launch passes the limit; -2
   when the state of one query tile of every head does not fit. */
int tabcl__sdpa_fused_keysplit(const tabcl__target *t, uint64_t loop_limit,
                               const tabcl_sdpa_desc *d, const tabcl__sdpa_tiles *tiles,
                               int64_t *launch_step, tabcl__sdpa_keysplit *ks);
/* The build options of a shape: dtype and tiles (and whether the key walk
   is split), never sizes. */
void tabcl__sdpa_fused_options(tabcl_dtype dt, const tabcl__sdpa_tiles *t, int split, char *buf,
                               size_t cap);
/* Batch entries a fused launch may take (NDRange and max_batch_per_launch). */
int64_t tabcl__sdpa_fused_slice(const tabcl__target *t, const tabcl_sdpa_desc *d,
                                const tabcl__sdpa_tiles *tiles);
/* One fused launch over batch entries [b0, b0 + nb) of the buffers. A
   kernel whose own work-group limit is below the shape's is refused before
   anything is enqueued: TABCL_UNSUPPORTED with *kernel_cap set to it. */
tabcl_status tabcl__sdpa_fused_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                      const tabcl__sdpa_tiles *t,
                                      const tabcl__sdpa_keysplit *ks, const tabcl__sdpa_bufs *b,
                                      int64_t b0, int64_t nb, cl_uint nwait,
                                      const cl_event *wait, tabcl__sdpa_events *ev,
                                      size_t *kernel_cap);

/* ---- the NVIDIA tensor-core kernel (sdpa_mma.c) ---- */

typedef struct tabcl__sdpa_mma_shape {
  int dp;   /* head dim rounded up to a multiple of 16 (at most 128) */
  int bk;   /* keys per tile */
  int nw;   /* warps per work-group, 16 queries each */
  int qmode;   /* f32: where Q lives for the pass (MMA_QMODE) */
  int batch;   /* a tile's global loads issued together (MMA_BATCH) */
  int pipe;    /* 16-bit: cp.async stages and ldmatrix fragments (MMA_PIPE) */
  int psplit;  /* 16-bit: parts of P in the second product (MMA_PSPLIT) */
  int mt;      /* 16-query tiles a warp (MMA_MT; 1 but with pipe) */
} tabcl__sdpa_mma_shape;
/* Query tiles of a call on the tensor-core kernel with shape m (16 rows a
   warp's tile, mt tiles a warp, nw warps a group). */
int64_t tabcl__sdpa_mma_query_tiles(const tabcl_sdpa_desc *d, const tabcl__sdpa_mma_shape *m);
/* Key rows the tensor-core kernel takes in f32 (sdpa_mma.c says why). */
#define TABCL__SDPA_MMA_F32_KEYS 1024
/* Pure: 1 and fills m when the kernel may run this call on target t
   (NVIDIA, f32 with at most TABCL__SDPA_MMA_F32_KEYS keys a row, f16 or
   bf16, head dim <= 128, fits local memory);
   says nothing about the device check or TABCL_SDPA_MMA. */
int tabcl__sdpa_mma_shape_for(const tabcl__target *t, const tabcl_sdpa_desc *d,
                              tabcl__sdpa_mma_shape *m);
/* tabcl__sdpa_mma_shape_for on ctx's target, and 0 when TABCL_SDPA_MMA is "0". */
int tabcl__sdpa_mma_tiles(const tabcl_context *ctx, const tabcl_sdpa_desc *d,
                          tabcl__sdpa_mma_shape *m);
/* Whether TABCL_SDPA_MMA leaves the tensor-core kernel on (a user switch). */
int tabcl__sdpa_mma_enabled(void);
void tabcl__sdpa_mma_options(tabcl_dtype dt, const tabcl__sdpa_mma_shape *m, char *buf,
                             size_t cap);
int64_t tabcl__sdpa_mma_slice(const tabcl__target *t, const tabcl_sdpa_desc *d,
                              const tabcl__sdpa_mma_shape *m);
tabcl_status tabcl__sdpa_mma_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                    const tabcl__sdpa_mma_shape *m, const tabcl__sdpa_bufs *b,
                                    int64_t b0, int64_t nb, cl_uint nwait, const cl_event *wait,
                                    tabcl__sdpa_events *ev);

/* ---- the CPU kernel (sdpa_cpu.c) ---- */

/* Pure: 1 when the CPU kernel can run d (f32, f16 or bf16, head dim up to
   TABCL__SDPA_CPU_MAX_DIM), and its build options into buf. */
#define TABCL__SDPA_CPU_MAX_DIM 128
/* Keys a row up to which f32 key blocks are read in place (sdpa_cpu.c). */
#define TABCL__SDPA_CPU_DIRECT_KEYS 256
int tabcl__sdpa_cpu_options(const tabcl_sdpa_desc *d, char *buf, size_t cap);
/* Pure: a bound on the loop iterations one work-item runs (read off
   cl/sdpa_cpu.cl), for drivers that end long loops. */
uint64_t tabcl__sdpa_cpu_loops(const tabcl_sdpa_desc *d);
/* Query rows a tile (W in cl/sdpa_cpu.cl), and the tiles a work-item takes
   in turn, so that the head's K and V stay in its core's caches between
   them (bench/history/2026-11-to-12.md, "Tuning: sdpa.cpu"). */
#define TABCL__SDPA_CPU_ROWS 16
#define TABCL__SDPA_CPU_TILES 4
/* Work-groups along the queries: tiles of ROWS x TILES. */
int64_t tabcl__sdpa_cpu_groups(const tabcl_sdpa_desc *d);
int64_t tabcl__sdpa_cpu_slice(const tabcl__target *t, const tabcl_sdpa_desc *d);
tabcl_status tabcl__sdpa_cpu_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                    const tabcl__sdpa_bufs *b, int64_t b0, int64_t nb,
                                    cl_uint nwait, const cl_event *wait, tabcl__sdpa_events *ev);

/* ---- the GEMM path (sdpa_clblast.c) ---- */

int tabcl__sdpa_clblast_available(void);
/* Pure: batch entries one CLBlast step may take (its temporaries must fit,
   its 32-bit element offsets must hold). */
int64_t tabcl__sdpa_clblast_slice(const tabcl__target *t, const tabcl_sdpa_desc *d);
/* The CLBlast path over batch entries [b0, b0 + nb): Q K^T, softmax, P V. */
tabcl_status tabcl__sdpa_clblast_run(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, int64_t b0, int64_t nb,
                                     cl_uint nwait, const cl_event *wait,
                                     tabcl__sdpa_events *ev);

/* ---- the launch grid of the tile kernels (sdpa_grid.c) ---- */

/* Runs kernel kname of program (built with opts) over batch entries
   [b0, b0 + nb) x all heads x nqt query tiles, in groups of nt, with the
   arguments the fused and tensor-core kernels share; dims 1 and 2 are split
   where they exceed the sdpa.groups_yz tuning. TABCL_UNSUPPORTED, before
   anything is enqueued, when the compiled kernel cannot run nt work-items
   a group (what names it in the message; *kernel_cap, if given, gets the
   kernel's limit). ks (NULL: one launch over all keys) splits the keys
   over launches that share the state buffer `state`. */
tabcl_status tabcl__sdpa_tile_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, const char *program,
                                     const char *opts, const char *kname, const char *what,
                                     size_t nt, int nqt, const tabcl__sdpa_keysplit *ks,
                                     cl_mem state, int64_t b0, int64_t nb, cl_uint nwait,
                                     const cl_event *wait, tabcl__sdpa_events *ev,
                                     size_t *kernel_cap);

#endif
