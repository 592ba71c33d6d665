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
/* How a fused call walks the keys: each query tile's keys in `parts`
   parts, each part a work-group of its own that leaves its rows' partial
   maxima, sums and outputs in a scratch buffer, which a merge launch
   combines into the output (cl/sdpa.cl, sdpa_merge); with one part the
   group writes the output itself. The split is a kernel argument: one
   program serves every number of parts. Parts fill the compute units
   where the call's own groups would leave them idle, and keep each
   work-item's loops within a driver's loop limit (runtime/loop_limit.c). */
typedef struct tabcl__sdpa_keysplit {
  uint64_t loop_bound;   /* loop iterations, at most, of one work-item over all the keys */
  int64_t parts;         /* key parts a query tile; 1: unsplit */
  int64_t part_keys;     /* keys a part (a multiple of the key tile when split) */
  int64_t qtile_step;    /* query tiles a launch when split (the scratch is sized for it) */
  uint64_t part_bytes;   /* the scratch buffer of one launch when split, else 0 */
  const char *reason;    /* why split: "fill", "loop limit" or "tuning"; NULL */
  int merge_rows, merge_cols4; /* rows a group and float4 columns a row of the partials */
} tabcl__sdpa_keysplit;
/* Pure: at most how many loop iterations one work-item of shape t runs in
   a launch over `keys` keys (every loop of cl/sdpa.cl's kernel counted, the
   unrolled ones too, each one more than its trip count). */
uint64_t tabcl__sdpa_fused_loops(const tabcl__sdpa_tiles *t, int64_t keys);
/* Pure: the rule for the key parts of a call of `groups` work-groups over
   `keys` keys on `units` compute units: none while the groups are at least
   two a unit; else enough parts to make them two a unit, but no part under
   min_keys keys (the sdpa.split.keys tuning). */
int64_t tabcl__sdpa_split_rule(uint64_t units, int64_t groups, int64_t keys, int64_t min_keys);
/* Pure: the parts the sdpa.split tuning or else the rule above asks for a
   call of `groups` work-groups (at most sdpa.groups_yz), and *reason
   ("fill", "tuning"; NULL for one part). */
int64_t tabcl__sdpa_split_wanted(const tabcl__target *tg, const tabcl_sdpa_desc *d,
                                 int64_t groups, const char **reason);
/* Pure: the split of d into `parts` parts (none empty unless the tuning
   forced the count) for a kernel of nqt query tiles of `rows` rows, key
   blocks of bk and partial rows of `cols` columns: fills ks (one part
   where parts <= 1, or where a split only for speed does not fit its
   scratch) and lowers *launch_step so the scratch fits. 0; -1 when there
   are more parts than sdpa.groups_yz; -2 when a split for the loop limit
   does not fit one query tile of every head. */
int tabcl__sdpa_split_fit(const tabcl__target *tg, const tabcl_sdpa_desc *d, int64_t nqt,
                          int rows, int bk, int cols, int64_t parts, const char *reason,
                          int64_t *launch_step, tabcl__sdpa_keysplit *ks);
/* Pure: the key walk of d with shape t on target tg under loop_limit (0:
   none): the rule above or the sdpa.split tuning, raised so that each
   part's loops fit the limit; and the batch entries a launch may take
   (*launch_step, lowered so that the scratch fits). 0; -1 when even one
   key tile a part (or the merge) passes the limit; -2 when the scratch of
   one query tile of every head does not fit. */
int tabcl__sdpa_fused_keysplit(const tabcl__target *tg, uint64_t loop_limit,
                               const tabcl_sdpa_desc *d, const tabcl__sdpa_tiles *t,
                               int64_t *launch_step, tabcl__sdpa_keysplit *ks);
/* The build options of a shape: dtype and tiles, never sizes (nor the
   key split, which is an argument). */
void tabcl__sdpa_fused_options(tabcl_dtype dt, const tabcl__sdpa_tiles *t, char *buf, size_t cap);
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
/* Pure: the tensor-core kernel's key split for d (as the fused kernel's,
   tabcl__sdpa_split_wanted and _fit); 0, or -1 where a forced split has
   more parts than sdpa.groups_yz. */
int tabcl__sdpa_mma_keysplit(const tabcl__target *t, const tabcl_sdpa_desc *d,
                             const tabcl__sdpa_mma_shape *m, int64_t *launch_step,
                             tabcl__sdpa_keysplit *ks);
tabcl_status tabcl__sdpa_mma_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                    const tabcl__sdpa_mma_shape *m,
                                    const tabcl__sdpa_keysplit *ks, const tabcl__sdpa_bufs *b,
                                    int64_t b0, int64_t nb, cl_uint nwait, const cl_event *wait,
                                    tabcl__sdpa_events *ev);

/* ---- the CPU kernel (sdpa_cpu.c) ---- */

/* Pure: 1 when the CPU kernel can run d (f32, f16 or bf16, head dim up to
   TABCL__SDPA_CPU_MAX_DIM), and its build options into buf. */
#define TABCL__SDPA_CPU_MAX_DIM 128
/* Keys a row up to which f32 key blocks are read in place (sdpa_cpu.c). */
#define TABCL__SDPA_CPU_DIRECT_KEYS 256
int tabcl__sdpa_cpu_options(const tabcl_sdpa_desc *d, int tiles, char *buf, size_t cap);
/* Pure: a bound on the loop iterations one work-item of `tiles` tiles runs
   (read off cl/sdpa_cpu.cl), for drivers that end long loops. */
uint64_t tabcl__sdpa_cpu_loops(const tabcl_sdpa_desc *d, int tiles);
/* Query rows a tile (W in cl/sdpa_cpu.cl). */
#define TABCL__SDPA_CPU_ROWS 16
/* The tiles a work-item takes in turn over each chunk of keys: the tuning's
   sdpa.cpu.tiles for t's device. */
int tabcl__sdpa_cpu_tiles(const tabcl__target *t);
/* Keys a chunk that every tile of a work-item takes before the next chunk,
   so that the chunk's K and V stay in the core's L2 cache (256 keys of
   head dim 128 in f32: 256 KiB) however long the keys; bench/RESULTS.md,
   "The CPU kernel's register blocks and key chunks". */
#define TABCL__SDPA_CPU_KEY_CHUNK 256
/* Work-groups along the queries: groups of ROWS x tiles queries. */
int64_t tabcl__sdpa_cpu_groups(const tabcl_sdpa_desc *d, int tiles);
int64_t tabcl__sdpa_cpu_slice(const tabcl__target *t, const tabcl_sdpa_desc *d, int tiles);
/* Pure: the CPU kernel's key split of d (loop_bound set; the rule of
   tabcl__sdpa_split_wanted on its groups of ROWS x tiles queries, key
   blocks of ROWS), lowering *launch_step so its scratch fits; 0. */
int tabcl__sdpa_cpu_keysplit(const tabcl__target *t, const tabcl_sdpa_desc *d, int tiles,
                             int64_t *launch_step, tabcl__sdpa_keysplit *ks);
/* Launches the plan's program (its options and query_tiles groups). */
tabcl_status tabcl__sdpa_cpu_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                    const char *options, int64_t query_tiles,
                                    const tabcl__sdpa_keysplit *ks, const tabcl__sdpa_bufs *b,
                                    int64_t b0, int64_t nb, cl_uint nwait, const cl_event *wait,
                                    tabcl__sdpa_events *ev);

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
   kernel's limit). ks: the call's key split; with more than one part the
   kernel writes partial rows to a scratch buffer of ks->part_bytes made
   here, and they are merged launch by launch. */
tabcl_status tabcl__sdpa_tile_launch(tabcl_context *ctx, const tabcl_sdpa_desc *d,
                                     const tabcl__sdpa_bufs *b, const char *program,
                                     const char *opts, const char *kname, const char *what,
                                     size_t nt, int nqt, const tabcl__sdpa_keysplit *ks,
                                     int64_t b0, int64_t nb, cl_uint nwait,
                                     const cl_event *wait, tabcl__sdpa_events *ev,
                                     size_t *kernel_cap);

#endif
