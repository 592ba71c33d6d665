/* The tuning table and the TABCL_TUNE override (tune.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/internal.h"

enum { KIND_POW2, KIND_INT, KIND_TILES };

typedef struct key_info {
  const char *name;
  int kind;
  long long lo, hi;
  const char *meaning;
} key_info;

static const key_info keys[TABCL__TUNE_COUNT] = {
#define TABCL__TUNE_INFO(id, name, kind, lo, hi, what) {name, KIND_##kind, lo, hi, what},
    TABCL__TUNE_KEYS(TABCL__TUNE_INFO)
#undef TABCL__TUNE_INFO
};

/* One default. A row matches a device when each of its non-NULL fields
   does: `type` "gpu" or "cpu" against the device type, `vendor` "nvidia",
   "amd" or "intel" against the GPU's vendor, or for a CPU device against
   the implementation running it ("intel": Intel's CPU runtime; "pocl";
   "rusticl"; tabcl__device_impl), `arch` and `device` as
   case-insensitive substrings of the device's architecture and name. The
   closest match wins: device over architecture over vendor over type over
   the generic row (all NULL). value "auto" leaves the key to the
   planner's rule, whose measurement `source` then names. */
typedef struct tune_row {
  const char *type, *vendor, *arch, *device;
  tabcl__tune_key key;
  const char *value;
  const char *source;
} tune_row;

#define R(section) "bench/history/2026-11-to-12.md, Tuning: " section
static const tune_row table[] = {
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SORT_TILE, "4096", R("sort.tile")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SORT_LOCAL, "128", R("sort.local")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SORT_GLOBAL, "256", R("sort.global")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SORT_PAIRS, "32", R("sort.pairs")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SORT_SERIAL, "0", R("sort.serial")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_SORT_SERIAL, "4", R("sort.serial")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SORT_MAX_ITEMS, "1073741824", R("limits")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_HASH_SERIAL, "0", R("hash on a CPU")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_HASH_SERIAL, "8", R("hash on a CPU")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_HASH_TEAM_AVG, "48", R("hash.team_avg")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_HASH_TEAM_AVG, "240", R("hash.team_avg")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_HASH_GROUP_MIN, "8192", R("hash.group_min")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_HASH_MID, "auto", R("hash kernels")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_HASH_MID_SPLIT, "512", R("hash kernels")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_HASH_BIG_WG, "auto", R("hash kernels")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_HASH_MID_WG, "64", R("hash kernels")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_LOOKUP_SERIAL, "0", R("lookup on a CPU")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_LOOKUP_SERIAL, "8", R("lookup on a CPU")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_FIT_HOST_LABELS, "0", R("fit.host_labels")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_FIT_HOST_LABELS, "1048576", R("fit.host_labels")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_LOOKUP_HOST_ROWS, "0", R("lookup.host_rows")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_LOOKUP_HOST_ROWS, "512", R("lookup.host_rows")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_LOOKUP_HOST_THREADS, "0", R("lookup.host_threads")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_LOOKUP_HOST_THREADS, "auto", R("lookup.host_threads")},
    /* beside an NVIDIA GPU, host calls on the host's cores and the index's
       tables mapped once (a host copy of the index), up to 256 MiB */
    {"gpu", "nvidia", NULL, NULL, TABCL__TUNE_LOOKUP_HOST_ROWS, "512", R("lookup.host_threads")},
    {"gpu", "nvidia", NULL, NULL, TABCL__TUNE_LOOKUP_HOST_THREADS, "auto", R("lookup.host_threads")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_LOOKUP_HOST_INDEX, "1099511627776", R("lookup.host_threads")},
    {"gpu", NULL, NULL, NULL, TABCL__TUNE_LOOKUP_HOST_INDEX, "268435456", R("lookup.host_threads")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_LOOKUP_GROUP_BYTES, "256", R("lookup kernels")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_LOOKUP_GROUP_LANES, "auto", R("lookup kernels")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_UPLOAD_STAGING, "1", R("upload.staging")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_UPLOAD_STAGING, "0", R("upload.staging")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_UPLOAD_POOL, "1073741824", R("upload.pool")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_UPLOAD_THREADS, "auto", R("upload.threads")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_UPLOAD_THREADS, "1", R("upload.threads")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_BUILD_THREADS, "1", R("build.threads")},
    {"gpu", "nvidia", NULL, NULL, TABCL__TUNE_BUILD_THREADS, "auto", R("build.threads")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_BUILD_STORE, "1", R("build.store")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_BUILD_STORE, "2", R("build.store")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_MMA_KEYS, "auto", R("sdpa.mma")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_MMA_WARPS, "4", R("sdpa.mma")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_MMA_QMODE, "auto", R("sdpa.mma")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_MMA_BATCH, "auto", R("sdpa.mma")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_MMA_PIPE, "1", R("sdpa.mma")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_MMA_PSPLIT, "auto", R("sdpa.mma")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_MMA_MTILES, "1", R("sdpa.mma")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_GROUPS_YZ, "65535", R("limits")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_GEMM_INDEX, "2147483647", R("limits")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_CPU, "0", R("sdpa.cpu")},
    {"cpu", NULL, NULL, NULL, TABCL__TUNE_SDPA_CPU, "1", R("sdpa.cpu")},
    /* Mesa's llvmpipe compiles the CPU kernel's private float16 arrays
       poorly: the fused kernel is several times faster there
       (bench/history/code-notes.md, "sdpa.cpu on llvmpipe") */
    {"cpu", NULL, NULL, "llvmpipe", TABCL__TUNE_SDPA_CPU, "0", R("sdpa.cpu")},
    /* each tile more reads a chunk of K and V once less from memory: 16
       against 4, 512 queries over 40,000 keys 20% faster on PoCL */
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_CPU_TILES, "16", "bench/RESULTS.md, The CPU kernel's register blocks and key chunks"},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_SPLIT, "auto", "docs/attention.md, The key split"},
    /* a part walks at least this many keys, so the merge launch and the
       parts' partial rows stay small beside the keys' work */
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_SPLIT_KEYS, "1024", "docs/attention.md, The key split"},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D16, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D32, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D48, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D64, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D80, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D96, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D112, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D128, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D144, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D160, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D176, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D192, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D208, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D224, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D240, "auto", R("sdpa.fused")},
    {NULL, NULL, NULL, NULL, TABCL__TUNE_SDPA_FUSED_D256, "auto", R("sdpa.fused")},
};
#undef R

const char *tabcl__tune_key_name(tabcl__tune_key k) {
  return (unsigned)k < TABCL__TUNE_COUNT ? keys[k].name : "?";
}
const char *tabcl__tune_key_meaning(tabcl__tune_key k) {
  return (unsigned)k < TABCL__TUNE_COUNT ? keys[k].meaning : "";
}

int tabcl__tune_tiles_key(int dp) {
  if (dp < 16 || dp > 256 || dp % 16) return -1;
  return TABCL__TUNE_SDPA_FUSED_D16 + dp / 16 - 1;
}

static int has_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0) return 1;
  return n == 0;
}

int tabcl__tune_row_rank(const char *type, const char *vendor, const char *arch,
                         const char *device, const tabcl__device_desc *dev) {
  int rank = 0;
  if (type) {
    if (strcmp(type, "gpu") == 0 ? !dev->is_gpu : !dev->is_cpu) return -1;
    rank |= 1;
  }
  if (vendor) {
    const int impl = dev->is_cpu ? dev->impl : TABCL__IMPL_OTHER;
    int ok = strcmp(vendor, "nvidia") == 0 ? dev->is_nvidia
             : strcmp(vendor, "amd") == 0  ? dev->is_amd
             : strcmp(vendor, "pocl") == 0 ? impl == TABCL__IMPL_POCL
             : strcmp(vendor, "rusticl") == 0
                 ? impl == TABCL__IMPL_RUSTICL
                 : dev->is_intel || impl == TABCL__IMPL_INTEL_CPU;
    if (!ok) return -1;
    rank |= 2;
  }
  if (arch) {
    if (!has_nocase(dev->arch, arch)) return -1;
    rank |= 4;
  }
  if (device) {
    if (!has_nocase(dev->name, device)) return -1;
    rank |= 8;
  }
  return rank;
}

static int match_rank(const tune_row *r, const tabcl__device_desc *dev) {
  return tabcl__tune_row_rank(r->type, r->vendor, r->arch, r->device, dev);
}

/* A number in [lo, hi] (and a power of two for POW2) from text, else 0. */
static int parse_number(const key_info *ki, const char *text, size_t len, int64_t *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, text, len);
  buf[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (!isdigit((unsigned char)buf[i])) return 0;
  errno = 0;
  char *end;
  long long v = strtoll(buf, &end, 10);
  if (errno || *end || v < ki->lo || v > ki->hi) return 0;
  if (ki->kind == KIND_POW2 && (v & (v - 1))) return 0;
  *out = v;
  return 1;
}

/* Reads a positive decimal number of at most 4 digits at *p. */
static int small_number(const char **p, int *out) {
  int v = 0, n = 0;
  while (isdigit((unsigned char)**p) && n < 4) v = v * 10 + (*(*p)++ - '0'), n++;
  if (n == 0 || isdigit((unsigned char)**p)) return 0;
  *out = v;
  return 1;
}

/* Tile syntax: QxK[/F][tN][kN][vN][pN]: Q queries a group (16, 32 or 64),
   K keys a tile (a multiple of 8 from 8 to 64), F work-items a query row
   (1, 2 or 4), t work-items across the keys of S, k head-dim columns of a
   K chunk, v keys of a V chunk, p0/p1 the register prefetch of chunks off
   or on. The planner checks the whole shape against the device. */
static int parse_tiles(const char *text, size_t len, tabcl__tile_request *t) {
  char buf[64];
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, text, len);
  buf[len] = '\0';
  const char *p = buf;
  tabcl__tile_request r = {0, 0, 0, 0, 0, 0, -1};
  if (!small_number(&p, &r.bq) || *p++ != 'x' || !small_number(&p, &r.bk)) return 0;
  if (*p == '/') {
    p++;
    if (!small_number(&p, &r.per_row) || r.per_row == 0) return 0;
  }
  while (*p) {
    char c = *p++;
    int v;
    if (!small_number(&p, &v) || (c != 'p' && v == 0)) return 0;
    if (c == 't') r.tks = v;
    else if (c == 'k') r.kc = v;
    else if (c == 'v') r.vk = v;
    else if (c == 'p' && (v == 0 || v == 1)) r.prefetch = v;
    else return 0;
  }
  if (r.bq != 16 && r.bq != 32 && r.bq != 64) return 0;
  if (r.bk < 8 || r.bk > 64 || r.bk % 8) return 0;
  if (r.per_row && r.per_row != 1 && r.per_row != 2 && r.per_row != 4) return 0;
  /* a group has at least 32 work-items (cl/sdpa.cl) */
  if (r.per_row && r.bq * r.per_row < 32) return 0;
  *t = r;
  return 1;
}

/* The device-independent part of a value: parses text for key k into t. */
static int parse_value(tabcl__tune_key k, const char *text, size_t len, tabcl__tuning *t) {
  if (len == 4 && strncmp(text, "auto", 4) == 0) {
    t->value[k] = TABCL__TUNE_AUTO;
    memset(&t->tiles[k], 0, sizeof t->tiles[k]);
    return 1;
  }
  if (keys[k].kind == KIND_TILES) {
    if (!parse_tiles(text, len, &t->tiles[k])) return 0;
    t->value[k] = 1;
    return 1;
  }
  int64_t v;
  if (!parse_number(&keys[k], text, len, &v)) return 0;
  /* hash.mid names kernels: 3 and 5 (the others were removed) */
  if (k == TABCL__TUNE_HASH_MID && v != 3 && v != 5) return 0;
  t->value[k] = v;
  return 1;
}

/* What a value cannot be on dev (NULL: it fits). Only what the device
   description alone decides; a tile shape is checked by the attention
   planner, which knows the kernel's layout. */
static const char *misfit(const tabcl__device_desc *dev, tabcl__tune_key k, int64_t v) {
  if (v == TABCL__TUNE_AUTO) return NULL;
  size_t maxwg = dev->max_work_group_size;
  if (dev->max_work_item_sizes[0] < maxwg) maxwg = dev->max_work_item_sizes[0];
  switch (k) {
  case TABCL__TUNE_SORT_LOCAL:
  case TABCL__TUNE_SORT_GLOBAL:
  case TABCL__TUNE_HASH_BIG_WG:
  case TABCL__TUNE_HASH_MID_WG:
  case TABCL__TUNE_LOOKUP_GROUP_LANES:
    return (uint64_t)v > maxwg ? "more work-items a group than the device allows" : NULL;
  case TABCL__TUNE_SORT_TILE:
    /* keys and values, one padding slot per 16 (cl/sort.cl) */
    return (uint64_t)(v + v / 16) * 12 > dev->local_mem_size ? "more than its local memory"
                                                              : NULL;
  default:
    return NULL;
  }
}

/* Sets key k of t from the row of the table closest to dev (the rule's
   "auto" where no row matches). */
static void from_table(const tabcl__device_desc *dev, tabcl__tune_key k, tabcl__tuning *t) {
  int best = -1;
  t->value[k] = TABCL__TUNE_AUTO;
  memset(&t->tiles[k], 0, sizeof t->tiles[k]);
  t->origin[k] = TABCL__TUNE_FROM_RULE;
  t->source[k] = NULL;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const tune_row *r = &table[i];
    if (r->key != k) continue;
    int rank = match_rank(r, dev);
    if (rank <= best) continue;
    /* The table is ours: a row that does not parse is a bug the planner
       tests catch (plan/table_rows_parse). */
    if (!parse_value(k, r->value, strlen(r->value), t)) continue;
    best = rank;
    t->origin[k] = strcmp(r->value, "auto") == 0 ? TABCL__TUNE_FROM_RULE : TABCL__TUNE_FROM_TABLE;
    t->source[k] = r->source;
  }
}

tabcl_status tabcl__tune_resolve(const tabcl__device_desc *dev, const char *override,
                                 tabcl__tuning *out) {
  tabcl__tuning t;
  memset(&t, 0, sizeof t);
  for (int k = 0; k < TABCL__TUNE_COUNT; k++) from_table(dev, (tabcl__tune_key)k, &t);
  tabcl_status st = tabcl__tune_apply(dev, override, &t);
  if (st) return st;
  *out = t;
  return TABCL_OK;
}

tabcl_status tabcl__tune_apply(const tabcl__device_desc *dev, const char *override,
                               tabcl__tuning *out) {
  tabcl__tuning t = *out;
  const char *p = override ? override : "";
  while (*p) {
    while (*p == ';' || *p == ' ') p++;
    if (!*p) break;
    const char *end = strchr(p, ';');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    int k = -1;
    if (eq)
      for (int i = 0; i < TABCL__TUNE_COUNT && k < 0; i++)
        if (strlen(keys[i].name) == (size_t)(eq - p) && strncmp(keys[i].name, p, eq - p) == 0)
          k = i;
    if (!eq || k < 0)
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "TABCL_TUNE: \"%.*s\" names no tuning key (the "
                         "keys are listed in docs/tuning.md)", (int)len, p);
    const size_t vlen = len - (size_t)(eq + 1 - p);
    if (vlen == 4 && strncmp(eq + 1, "auto", 4) == 0) {
      /* back to what the table says for this device */
      from_table(dev, (tabcl__tune_key)k, &t);
      p += len;
      continue;
    }
    if (!parse_value((tabcl__tune_key)k, eq + 1, vlen, &t))
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "TABCL_TUNE: \"%.*s\": the value is not %s", (int)len,
                         p, keys[k].kind == KIND_TILES ? "a tile shape QxK[/F][tN][kN][vN][pN]"
                            : keys[k].kind == KIND_POW2 ? "a power of two in the key's range"
                                                        : "a number in the key's range");
    const char *why = misfit(dev, (tabcl__tune_key)k, t.value[k]);
    if (why)
      return tabcl__fail(TABCL_INVALID_ARGUMENT, "TABCL_TUNE: \"%.*s\" does not fit %s: %s",
                         (int)len, p, dev->name, why);
    t.origin[k] = TABCL__TUNE_FROM_OVERRIDE;
    t.source[k] = NULL;
    p += len;
  }
  *out = t;
  return TABCL_OK;
}

void tabcl__tune_describe(const tabcl__tuning *t, tabcl__tune_key k, char *buf, size_t cap) {
  char val[64];
  const tabcl__tile_request *r = &t->tiles[k];
  if (t->value[k] == TABCL__TUNE_AUTO) snprintf(val, sizeof val, "auto");
  else if (keys[k].kind == KIND_TILES)
    snprintf(val, sizeof val, "%dx%d/%d t%d k%d v%d p%d", r->bq, r->bk, r->per_row, r->tks, r->kc,
             r->vk, r->prefetch);
  else snprintf(val, sizeof val, "%lld", (long long)t->value[k]);
  const char *from = t->origin[k] == TABCL__TUNE_FROM_OVERRIDE ? "TABCL_TUNE"
                     : t->origin[k] == TABCL__TUNE_FROM_TABLE  ? "table"
                                                               : "planner's rule";
  if (t->source[k]) snprintf(buf, cap, "%s (%s; %s)", val, from, t->source[k]);
  else snprintf(buf, cap, "%s (%s)", val, from);
}
