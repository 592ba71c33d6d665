/* The tuning table: every choice a planner makes that is a matter of
 * measurement rather than of correctness, with the default for each kind of
 * device and one override, TABCL_TUNE (or tabcl_options.tune).
 *
 * A key's value comes from, in order: the override; the table row that
 * matches the device most closely (a device-name row over an architecture
 * row over a vendor row over the generic row); else the planner's own rule
 * ("auto"). Each row names the measurement that chose it (a section of
 * bench/history/2026-11-to-12.md). Resolution is a pure function of the device
 * description and the override text, so tests can resolve a table for a
 * hand-written device. */
#ifndef TABCL_TUNE_H
#define TABCL_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "tabcl/tabcl.h"

struct tabcl__device_desc;

/* id, name, kind, lo, hi, meaning. Kinds: POW2 and INT take a decimal
   number in [lo, hi] (POW2 a power of two); TILES the fused attention
   kernel's tile syntax (tune.c, parse_tiles). */
#define TABCL__TUNE_KEYS(X)                                                                      \
  X(SORT_TILE, "sort.tile", POW2, 2, 4096,                                                      \
    "pairs one local-memory sort tile holds (also capped by local memory)")                      \
  X(SORT_LOCAL, "sort.local", POW2, 2, 1024, "work-items a group of the local-memory passes")    \
  X(SORT_GLOBAL, "sort.global", POW2, 32, 1024, "work-items a group of the register passes")     \
  X(SORT_PAIRS, "sort.pairs", POW2, 2, 32, "pairs a work-item of a register pass holds")         \
  X(SORT_SERIAL, "sort.serial", INT, 0, 1024,                                                   \
    "0: the local-memory tile sort; N: one work-item sorts a run of pairs, N a compute unit")    \
  X(SORT_MAX_ITEMS, "sort.max_items", INT, 1, 1073741824,                                       \
    "work-items one sort launch may take (tests set it low to force splits)")                    \
  X(HASH_SERIAL, "hash.serial", INT, 0, 1024,                                                   \
    "0: the GPU hash kernels; N: one work-item a run of labels, N work-items a compute unit")    \
  X(HASH_TEAM_AVG, "hash.team_avg", INT, 0, 1048576,                                            \
    "average label bytes above which teams of lanes hash every label")                           \
  X(HASH_GROUP_MIN, "hash.group_min", INT, 241, 1099511627776LL,                                \
    "label bytes from which a label is hashed by a work-group of its own")                       \
  X(HASH_MID, "hash.mid", INT, 3, 5,                                                            \
    "kernel for labels of 241 bytes up: 3 team_all_flat, 5 pair_all")                             \
  X(HASH_MID_SPLIT, "hash.mid_split", INT, 0, 1048576,                                          \
    "average label bytes up to which hash.mid defaults to pair_all")                             \
  X(HASH_BIG_WG, "hash.big_wg", POW2, 8, 1024, "work-items a group of hash_big")                 \
  X(HASH_MID_WG, "hash.mid_wg", POW2, 8, 1024, "work-items a group of the team kernels")         \
  X(LOOKUP_SERIAL, "lookup.serial", INT, 0, 1024,                                               \
    "0: the GPU lookup kernels; N: one work-item a run of rows, N work-items a compute unit")    \
  X(FIT_HOST_LABELS, "fit.host_labels", INT, 0, 4294967296LL,                                 \
    "fits from host memory of at most N labels (6 MiB of bytes) on the calling thread")       \
  X(LOOKUP_HOST_ROWS, "lookup.host_rows", INT, 0, 1099511627776LL,                            \
    "host lookups and aligns of at most N query rows (128 B a row) on the calling thread")       \
  X(LOOKUP_HOST_THREADS, "lookup.host_threads", INT, 0, 64,                                    \
    "host lookups past lookup.host_rows: N host threads on the index's tables, 0 the kernels")   \
  X(LOOKUP_HOST_INDEX, "lookup.host_index", INT, 0, 1099511627776LL,                          \
    "host lookups and aligns on host threads only for indexes of at most N device bytes")        \
  X(LOOKUP_GROUP_BYTES, "lookup.group_bytes", INT, 0, 1099511627776LL,                          \
    "average query bytes from which a work-group compares each label")                           \
  X(LOOKUP_GROUP_LANES, "lookup.group_lanes", POW2, 1, 1024,                                    \
    "work-items comparing one long query label")                                                 \
  X(UPLOAD_STAGING, "upload.staging", INT, 0, 1099511627776LL,                                  \
    "host uploads: 0 map each buffer, 1 pinned staging of 64 MiB, N staging of N bytes")         \
  X(UPLOAD_POOL, "upload.pool", INT, 0, 1099511627776LL,                                        \
    "bytes of idle device buffers a context keeps for host calls' uploads (0: none)")            \
  X(UPLOAD_THREADS, "upload.threads", INT, 1, 64,                                               \
    "host threads filling an upload's staging chunk or mapped buffer (parts of 256 KiB up)")  \
  X(BUILD_THREADS, "build.threads", INT, 1, 64,                                                \
    "host threads building the programs a call needs side by side on a cold start (1: none)")  \
  X(BUILD_STORE, "build.store", INT, 0, 2,                                                      \
    "a built program's binary into the disk cache: 1 after the build, 2 at context destroy, 0 never") \
  X(SDPA_MMA_KEYS, "sdpa.mma.keys", POW2, 16, 64, "keys a tile of the tensor-core kernel")       \
  X(SDPA_MMA_WARPS, "sdpa.mma.warps", POW2, 2, 8, "warps a group of the tensor-core kernel")     \
  X(SDPA_MMA_QMODE, "sdpa.mma.qmode", INT, 0, 2,                                                \
    "f32 Q in the tensor-core kernel: 0 TF32 parts in registers, 1 local tile, 2 words")         \
  X(SDPA_MMA_BATCH, "sdpa.mma.batch", INT, 0, 1,                                                \
    "tensor-core kernel: 1 issues a tile's global loads together")                               \
  X(SDPA_MMA_PIPE, "sdpa.mma.pipe", INT, 0, 1,                                                  \
    "16-bit tensor-core kernel: 1 cp.async stages and ldmatrix fragments, 0 the plain loads")    \
  X(SDPA_MMA_PSPLIT, "sdpa.mma.psplit", INT, 1, 3,                                              \
    "16-bit tensor-core kernel: the 16-bit parts P enters the second product in")               \
  X(SDPA_MMA_MTILES, "sdpa.mma.mtiles", INT, 1, 2,                                              \
    "16-bit tensor-core kernel with pipe: 16-query tiles a warp")                                \
  X(SDPA_GROUPS_YZ, "sdpa.groups_yz", INT, 1, 65535,                                            \
    "work-groups an attention launch puts in NDRange dims 1 and 2")                              \
  X(SDPA_GEMM_INDEX, "sdpa.gemm.index_limit", INT, 64, 2147483647,                              \
    "elements CLBlast may address in one buffer (tests set it low to force windows)")            \
  X(SDPA_CPU, "sdpa.cpu", INT, 0, 1,                                                            \
    "1: attention takes the CPU kernel (rows in vector lanes) where it can; 0: the fused kernel") \
  X(SDPA_CPU_TILES, "sdpa.cpu.tiles", INT, 1, 16,                                             \
    "CPU attention kernel: tiles of 16 query rows a work-item takes over each chunk of keys")  \
  X(SDPA_SPLIT, "sdpa.split", INT, 1, 65535,                                                    \
    "key parts of each query tile of fused and CPU attention (auto: fill the compute units)")   \
  X(SDPA_SPLIT_KEYS, "sdpa.split.keys", INT, 1, 1073741824,                                     \
    "fewest keys a part when attention splits its keys to fill the compute units")             \
  X(SDPA_FUSED_D16, "sdpa.fused.d16", TILES, 16, 16, "fused attention tiles, head dims 1-16")    \
  X(SDPA_FUSED_D32, "sdpa.fused.d32", TILES, 32, 32, "fused attention tiles, head dims 17-32")   \
  X(SDPA_FUSED_D48, "sdpa.fused.d48", TILES, 48, 48, "fused attention tiles, head dims 33-48")   \
  X(SDPA_FUSED_D64, "sdpa.fused.d64", TILES, 64, 64, "fused attention tiles, head dims 49-64")   \
  X(SDPA_FUSED_D80, "sdpa.fused.d80", TILES, 80, 80, "fused attention tiles, head dims 65-80")   \
  X(SDPA_FUSED_D96, "sdpa.fused.d96", TILES, 96, 96, "fused attention tiles, head dims 81-96")   \
  X(SDPA_FUSED_D112, "sdpa.fused.d112", TILES, 112, 112, "fused attention tiles, 97-112")        \
  X(SDPA_FUSED_D128, "sdpa.fused.d128", TILES, 128, 128, "fused attention tiles, 113-128")       \
  X(SDPA_FUSED_D144, "sdpa.fused.d144", TILES, 144, 144, "fused attention tiles, 129-144")       \
  X(SDPA_FUSED_D160, "sdpa.fused.d160", TILES, 160, 160, "fused attention tiles, 145-160")       \
  X(SDPA_FUSED_D176, "sdpa.fused.d176", TILES, 176, 176, "fused attention tiles, 161-176")       \
  X(SDPA_FUSED_D192, "sdpa.fused.d192", TILES, 192, 192, "fused attention tiles, 177-192")       \
  X(SDPA_FUSED_D208, "sdpa.fused.d208", TILES, 208, 208, "fused attention tiles, 193-208")       \
  X(SDPA_FUSED_D224, "sdpa.fused.d224", TILES, 224, 224, "fused attention tiles, 209-224")       \
  X(SDPA_FUSED_D240, "sdpa.fused.d240", TILES, 240, 240, "fused attention tiles, 225-240")       \
  X(SDPA_FUSED_D256, "sdpa.fused.d256", TILES, 256, 256, "fused attention tiles, 241-256")

typedef enum tabcl__tune_key {
#define TABCL__TUNE_ENUM(id, name, kind, lo, hi, what) TABCL__TUNE_##id,
  TABCL__TUNE_KEYS(TABCL__TUNE_ENUM)
#undef TABCL__TUNE_ENUM
  TABCL__TUNE_COUNT
} tabcl__tune_key;

/* A key whose value is left to the planner's own rule. */
#define TABCL__TUNE_AUTO INT64_MIN

/* The fused attention kernel's tile shape as an override gives it; the
   planner derives the rest (cl/sdpa.cl) and checks it fits the device. */
typedef struct tabcl__tile_request {
  int bq, bk;      /* queries a group, keys a tile (0: automatic) */
  int per_row;     /* work-items a query row: 1, 2 or 4 (0: as the automatic shape) */
  int tks, kc, vk; /* work-items across S's keys, K chunk columns, V chunk keys (0: default) */
  int prefetch;    /* -1 default, 0 off, 1 on */
} tabcl__tile_request;

typedef enum tabcl__tune_origin {
  TABCL__TUNE_FROM_RULE = 0,     /* no row: the planner's own rule */
  TABCL__TUNE_FROM_TABLE = 1,
  TABCL__TUNE_FROM_OVERRIDE = 2,
} tabcl__tune_origin;

typedef struct tabcl__tuning {
  int64_t value[TABCL__TUNE_COUNT];      /* TABCL__TUNE_AUTO where the rule decides */
  tabcl__tile_request tiles[TABCL__TUNE_COUNT]; /* for TILES keys */
  unsigned char origin[TABCL__TUNE_COUNT];     /* tabcl__tune_origin */
  const char *source[TABCL__TUNE_COUNT]; /* the row's measurement, or NULL */
} tabcl__tuning;

/* Resolves the table for dev, then applies override ("key=value;..." or
   NULL/""). An unknown key, a malformed value or one outside the key's
   range, or a value that cannot fit dev (a work-group larger than it
   allows, a tile larger than its local memory) is TABCL_INVALID_ARGUMENT
   naming the entry; *out is then untouched. */
tabcl_status tabcl__tune_resolve(const struct tabcl__device_desc *dev, const char *override,
                        tabcl__tuning *out);

/* Applies override entries on top of *out (the same checks; *out is
   untouched on failure). Tests use it through tabcl__context_tune. */
tabcl_status tabcl__tune_apply(const struct tabcl__device_desc *dev, const char *override,
                               tabcl__tuning *out);

/* How closely a table row with these fields (NULL: any) matches dev: -1
   not at all, else a rank, higher the closer (device over architecture
   over vendor over type). The table's own matching; tests try rows on
   device descriptions with it. */
int tabcl__tune_row_rank(const char *type, const char *vendor, const char *arch,
                         const char *device, const struct tabcl__device_desc *dev);

/* The key's name, kind ("pow2", "int", "tiles") and meaning, for reports. */
const char *tabcl__tune_key_name(tabcl__tune_key k);
const char *tabcl__tune_key_meaning(tabcl__tune_key k);
/* Writes "value (origin)" for key k into buf:
   "128 (table; bench/history/2026-11-to-12.md, Tuning: sort.local)". */
void tabcl__tune_describe(const tabcl__tuning *t, tabcl__tune_key k, char *buf, size_t cap);
/* Key k's value, from the table (the only place a default lives) or the
   override: TABCL__TUNE_AUTO only where the table leaves the key to the
   planner's rule ("auto"), which the caller then applies. */
static inline int64_t tabcl__tuned(const tabcl__tuning *t, tabcl__tune_key k) {
  return t->value[k];
}
/* Whether uploads go through a staging area (upload.staging, which the
   table sets on every device): the fit's plan and the transfers read it
   here alike. */
static inline int tabcl__tune_staged(const tabcl__tuning *t) {
  return tabcl__tuned(t, TABCL__TUNE_UPLOAD_STAGING) != 0;
}
/* For the keys the table leaves to a rule (TABCL__TUNE_RULE_KEYS): the
   value set, else the rule's answer, which the planner computes. */
static inline int64_t tabcl__tuned_rule(const tabcl__tuning *t, tabcl__tune_key k, int64_t rule) {
  return t->value[k] == TABCL__TUNE_AUTO ? rule : t->value[k];
}
/* The keys whose generic row says "auto": each is read through
   tabcl__tuned_rule, every other key through tabcl__tuned, whose value the
   table always sets (plan/numeric_keys_never_auto). */
#define TABCL__TUNE_RULE_KEYS(X)                                                                 \
  X(BUILD_THREADS) X(HASH_MID) X(HASH_BIG_WG) X(SDPA_MMA_KEYS)                 \
  X(SDPA_MMA_PSPLIT) X(SDPA_MMA_QMODE) X(SDPA_MMA_BATCH) X(LOOKUP_GROUP_LANES)                  \
  X(LOOKUP_HOST_THREADS) X(UPLOAD_THREADS) X(SDPA_SPLIT) X(SDPA_FUSED_D16) X(SDPA_FUSED_D32)                  \
  X(SDPA_FUSED_D48) X(SDPA_FUSED_D64) X(SDPA_FUSED_D80) X(SDPA_FUSED_D96) X(SDPA_FUSED_D112)     \
  X(SDPA_FUSED_D128) X(SDPA_FUSED_D144) X(SDPA_FUSED_D160) X(SDPA_FUSED_D176)                   \
  X(SDPA_FUSED_D192) X(SDPA_FUSED_D208) X(SDPA_FUSED_D224) X(SDPA_FUSED_D240) X(SDPA_FUSED_D256)

/* The TILES key for padded head dim dp (16..256), or -1. */
int tabcl__tune_tiles_key(int dp);

#endif
