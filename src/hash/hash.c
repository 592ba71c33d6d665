/* The label hash: seeds, masks, the device launches (cl/hash.cl) and the
 * cl-probe self-check. The host XXH3 itself is in xxh3.c. */
#include <stdatomic.h>
#include <string.h>

#include "hash/hash.h"

/* Labels of at least this many bytes are cut into 1 KiB blocks hashed in
   parallel (hash_units, then hash_chain); shorter long ones (241 bytes and
   up) get four lanes that walk their blocks one after another. On the
   H200 (256 MiB columns) four lanes a label hashed 4 KiB labels in 0.105
   ms against 0.249 ms for the block kernels, and 64 KiB labels in 0.292
   ms against 0.167 ms. */
#define GROUP_MIN_DEFAULT 8192
/* At most this many teams of four lanes a label in hash_units (a label of
   more blocks gives each team several). */
#define SPAN_MAX_LOG2 6
/* Block-sum buffers up to this size are made from host zeros (see below). */
#define SUMS_ZEROED_MAX ((size_t)64 << 10)
#define SHORT_MAX 240
/* Below this average one work-item a label reads well enough on a GPU:
   neighbours' labels lie within a few cache lines of each other. A CPU
   gains nothing from lanes reading side by side, only barriers, so there
   teams take every label only when most are long. */
#define MID_AVG_GPU 48

static _Atomic int64_t group_min_override;
static _Atomic size_t group_wg_override;
/* The kernel choices when no variant is set (see tabcl__hash_variants):
   mid 1 = hash_team_all, 3 = hash_team_all_flat, 5 = hash_pair_all
   (MID_DEFAULT for columns of an average label up to MID_SPLIT bytes,
   MID_DEFAULT_LONG above); big 1 = hash_units + hash_chain, 2 = hash_big.
   From the H200 sweeps (tabcl-bench hash with TABCL_BENCH_HASH_VARIANTS,
   256 MiB columns, share of copy bandwidth): 256 B labels: pair_all 75%
   in groups of 64, team_all_flat 60%, team_all 47%; 1024 B: team_all_flat
   87%, pair_all 79%; 4096 B: team_all_flat 89%, pair_all 78%; 64 KiB:
   hash_big 66% in groups of up to 128 against 56% with 256 and 31% for
   blocks + chain. Mid 2 (eight lanes a label), 4 (one), 6 (two, pieces
   interleaved) and 7 (four, with 5's loads) lost on every length there
   and are gone; their numbers, like any other unknown one, mean the
   default. */
#define MID_DEFAULT 5
#define MID_DEFAULT_LONG 3
#define MID_SPLIT 512
#define BIG_DEFAULT 2
#define MID_WG_DEFAULT 64
#define BIG_WG_MAX 128
static _Atomic int mid_variant, big_variant;
static _Atomic size_t big_wg_override, mid_wg_override;

void tabcl__hash_variants(int mid, int big, size_t big_wg, size_t mid_wg) {
  atomic_store(&mid_variant, mid == 1 || mid == 3 || mid == 5 ? mid : 0);
  atomic_store(&big_variant, big == 1 || big == 2 ? big : 0);
  atomic_store(&big_wg_override, big_wg);
  atomic_store(&mid_wg_override, mid_wg);
}

void tabcl__hash_tune(int64_t group_min_bytes, size_t group_wg) {
  atomic_store(&group_min_override, group_min_bytes);
  atomic_store(&group_wg_override, group_wg);
}

static int64_t group_min(void) {
  int64_t g = atomic_load(&group_min_override);
  return g > SHORT_MAX ? g : GROUP_MIN_DEFAULT;
}

uint64_t tabcl__column_seed(uint64_t seed, int col) {
  /* splitmix64's finaliser over seed and column, so nearby seeds and
     columns give unrelated XXH3 seeds. */
  uint64_t z = seed ^ ((uint64_t)(uint32_t)col + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t tabcl__label_hash(const void *bytes, size_t n, uint64_t seed, int col, uint64_t mask) {
  return tabcl__xxh3_64(bytes, n, tabcl__column_seed(seed, col)) & mask;
}

uint64_t tabcl__hash_mask(const tabcl_context *ctx) {
  unsigned bits = ctx ? ctx->hash_bits : 64;
  return bits >= 64 ? ~0ULL : ((1ULL << bits) - 1);
}

typedef struct hash_run {
  cl_kernel shortk, team, units, chain;
  size_t wg_short, wg_team, wg_units, wg_chain;
  cl_mem mid, huge, counts;       /* lists of long labels' indices, their counts */
  cl_mem block_sums, tail_sums;   /* hash_units' sums for hash_chain */
  cl_uint mid_cap, huge_cap;
} hash_run;

static void run_release(hash_run *r) {
  tabcl__kernel_release(r->shortk);
  tabcl__kernel_release(r->team);
  tabcl__kernel_release(r->units);
  tabcl__kernel_release(r->chain);
  tabcl__buffer_release(r->block_sums);
  tabcl__buffer_release(r->tail_sums);
  tabcl__buffer_release(r->mid);
  tabcl__buffer_release(r->huge);
  tabcl__buffer_release(r->counts);
}

/* How many work-groups a looping kernel gets: enough for every item, at
   most per_cu a compute unit (about 4096 work-items each, two waves on a
   large GPU); the groups loop over what is left. */
static size_t groups_for(const tabcl_context *ctx, uint64_t items, size_t per_cu) {
  uint64_t cap = (uint64_t)(ctx->info.compute_units ? ctx->info.compute_units : 1) * per_cu;
  if (cap < 1) cap = 1;
  if (items < 1) items = 1;
  return (size_t)(items < cap ? items : cap);
}

/* A buffer the kernels fill for each other (lists, sums). A small one
   (columns up to about 1 MiB) is still made from host zeros, which costs
   little: oclgrind 21.10 took what a later call's kernels wrote into such
   buffers as uninitialised (an enqueued fill made it worse). A large one
   is left as it is: a host copy of its size would cost more than the
   hashing. */
static tabcl_status scratch_create(tabcl_context *ctx, int col, size_t bytes, cl_mem *m,
                                const char *what) {
  void *zeros = NULL;
  if (bytes <= SUMS_ZEROED_MAX && !(zeros = tabcl__calloc(bytes, 1)))
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "tabcl__hash_column: column %d: out of host memory for %zu zero bytes of %s",
                       col, bytes, what);
  tabcl_status st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | (zeros ? CL_MEM_COPY_HOST_PTR : 0),
                                         bytes, zeros, m, what);
  tabcl__free(zeros);
  return st;
}

tabcl_status tabcl__hash_column(tabcl_context *ctx, const tabcl_dev_strings *s, int col,
                                uint64_t seed, uint64_t mask, cl_mem out, size_t out_offset,
                                cl_uint nwait, const cl_event *wait, cl_event *ev) {
  if (!ctx || !s || !out || s->length < 0 || s->bytes < 0 || (nwait && !wait))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__hash_column: column %d: bad arguments", col);
  if (ev) *ev = NULL;
  if (s->length == 0) {
    /* Nothing to hash, but the caller may still wait on ev. */
    cl_event e = NULL;
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, ev ? &e : NULL));
    if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "empty column");
    if (ev) *ev = e;
    return TABCL_OK;
  }
  uint64_t xseed = tabcl__column_seed(seed, col);
  int64_t gmin = group_min();
  int any_long = s->max_label > SHORT_MAX, any_huge = s->max_label >= gmin;
  int64_t per = tabcl__slice_items(ctx, sizeof(uint64_t), 1);
  hash_run r;
  memset(&r, 0, sizeof r);
  /* A column of mostly huge labels (an average of group_min bytes or
     more) goes straight to the block kernels, which take every label of
     group_min bytes or more themselves (direct), and hash_team_all takes
     the others: no list, no counters. A column of longer labels (an
     average over mid_avg bytes) goes to teams of four lanes label by label
     (hash_team_all): they read a label's chunks side by side, and no
     listing pass reads the offsets first; it lists the huge ones. A column
     of labels of at most 240 bytes takes one work-item a label
     (hash_short: on the H200 that read 64-byte labels over twice as fast
     as teams). Otherwise one work-item a label hashes what it can and
     lists the long ones for the teams (hash_short_list, hash_team). */
  int64_t avg = s->bytes / s->length;
  int64_t mid_avg = ctx->info.is_cpu ? SHORT_MAX : MID_AVG_GPU;
  int direct = any_huge && avg >= gmin;
  int team_all = direct || (any_long && avg > mid_avg);
  int list_huge = any_huge && !direct;
  /* The huge-label list and its counters: filled by hash_short_list, or
     by hash_team_all when it lists huge labels. */
  int lists = team_all ? list_huge : any_long;
  const char *short_name = any_long ? "hash_short_list" : "hash_short";
  /* Four lanes a label (hash_team_all, hash_team_all_flat) or two
     (hash_pair_all); one work-group a huge label (hash_big) or blocks and
     chain (hash_units, hash_chain). */
  int mid_v = atomic_load(&mid_variant), big_v = atomic_load(&big_variant);
  if (!mid_v) mid_v = avg <= MID_SPLIT ? MID_DEFAULT : MID_DEFAULT_LONG;
  if (!big_v) big_v = BIG_DEFAULT;
  int big = any_huge && big_v == 2;
  int pair = team_all && mid_v == 5;
  size_t lanes = pair ? 2 : 4;
  const char *team_name = !team_all     ? "hash_team"
                          : pair         ? "hash_pair_all"
                          : mid_v == 3   ? "hash_team_all_flat"
                                         : "hash_team_all";
  /* Words of local memory a work-item of the team kernel needs (the
     24-word secret comes on top): hash_pair_all's two rounds' buffers. */
  size_t team_words = pair ? 4 : 2;
  tabcl_status st = TABCL_OK;
  if (!team_all) st = tabcl__kernel_create(ctx, "hash", NULL, short_name, &r.shortk);
  r.wg_short = r.shortk ? tabcl__wg_size(ctx, r.shortk, 256) : 8;
  int teams_used = any_long || team_all;
  if (!st && teams_used) st = tabcl__kernel_create(ctx, "hash", NULL, team_name, &r.team);
  size_t mid_wg = team_all ? atomic_load(&mid_wg_override) : 0;
  if (!st && teams_used)
    r.wg_team = tabcl__wg_size(ctx, r.team, mid_wg ? mid_wg : team_all ? MID_WG_DEFAULT : 256);
  if (!st && any_huge)
    st = tabcl__kernel_create(ctx, "hash", NULL, big ? "hash_big" : "hash_units", &r.units);
  if (!st && any_huge && !big) st = tabcl__kernel_create(ctx, "hash", NULL, "hash_chain", &r.chain);
  cl_uint span_log2 = 0;
  if (!st && big) {
    /* Eight lanes a unit, as many units a pass as the longest label has
       (up to BIG_WG_MAX / 8), or the test/bench override. */
    size_t want = atomic_load(&big_wg_override);
    if (!want) {
      int64_t units = (s->max_label - 1) / 1024 + 1;
      want = 8;
      while (want < BIG_WG_MAX && (int64_t)(want / 8) < units) want *= 2;
    }
    r.wg_units = tabcl__wg_size(ctx, r.units, want);
    r.wg_chain = 8;
  }
  if (!st && any_huge && !big) {
    r.wg_units = tabcl__wg_size(ctx, r.units, 256);
    r.wg_chain = tabcl__wg_size(ctx, r.chain, 256);
    /* Teams of four lanes a label in hash_units: enough for the longest
       label's units (a launch choice from max_label, not a build option),
       at most 64, or the test override. */
    size_t want = atomic_load(&group_wg_override);
    int64_t units = (s->max_label - 1) / 1024 + 1;
    while (span_log2 < SPAN_MAX_LOG2 && ((int64_t)1 << span_log2) < units) span_log2++;
    if (want) {
      span_log2 = 0;
      while (((size_t)1 << (span_log2 + 1)) <= want / 4 && span_log2 < SPAN_MAX_LOG2) span_log2++;
    }
  }
  if (!st && (r.wg_short < 8 || (teams_used && r.wg_team < 8) ||
              (any_huge && (r.wg_units < 8 || r.wg_chain < 8))))
    st = tabcl__fail(TABCL_UNSUPPORTED, "tabcl__hash_column: %s allows work-groups of fewer than 8",
                     ctx->info.name);
  int64_t slice_max = s->length < per ? s->length : per;
  if (!st && lists) {
    /* Each list holds at most one entry per label, and no more labels than
       the bytes allow; hash_team_all needs only the list of huge labels.
       A short one of those is zeroed at creation from the host (see
       scratch_create). */
    uint64_t mid_cap = team_all ? 1 : (uint64_t)(s->bytes / (SHORT_MAX + 1)) + 1;
    uint64_t huge_cap = (uint64_t)(s->bytes / gmin) + 1;
    if (mid_cap > (uint64_t)slice_max) mid_cap = (uint64_t)slice_max;
    if (huge_cap > (uint64_t)slice_max) huge_cap = (uint64_t)slice_max;
    r.mid_cap = (cl_uint)mid_cap;
    r.huge_cap = (cl_uint)huge_cap;
    if (!team_all)
      st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)mid_cap * sizeof(cl_uint), NULL,
                                &r.mid, "long-label list");
    if (!st)
      st = scratch_create(ctx, col, (size_t)huge_cap * sizeof(cl_uint), &r.huge, "huge-label list");
  }
  if (!st && any_huge && !big) {
    /* One slot of eight sums per 1 KiB of data (see hash_units), and one
       per possible huge label for the tails. Every slot hash_chain reads
       is written by hash_units first. */
    uint64_t slots = (uint64_t)s->bytes / 1024 + 2;
    uint64_t tails = direct ? (uint64_t)slice_max : (uint64_t)r.huge_cap;
    st = scratch_create(ctx, col, (size_t)slots * 64, &r.block_sums, "block sums");
    if (!st) st = scratch_create(ctx, col, (size_t)tails * 64, &r.tail_sums, "tail sums");
  }
  uint64_t gmin_arg = (uint64_t)gmin, nbytes = (uint64_t)s->bytes;
  cl_uint list_arg = (cl_uint)list_huge, direct_arg = (cl_uint)direct;
  uint64_t out_off = out_offset;
  int first = 1;
  for (int64_t base = 0; !st && base < s->length; base += per) {
    int64_t n = s->length - base < per ? s->length - base : per;
    uint64_t ubase = (uint64_t)base;
    cl_uint count = (cl_uint)n;
    cl_uint nw = first ? nwait : 0;
    const cl_event *wl = first ? wait : NULL;
    first = 0;
    int last = base + n >= s->length;
    if (lists) {
      /* Fresh zeroed counters for each slice, made zero at creation: no
         enqueued fill (oclgrind 21.10 marks filled bytes uninitialised),
         and the buffer still in use by the previous slice is released
         only when its kernels are done. */
      static cl_uint zero2[2] = {0, 0};
      tabcl__buffer_release(r.counts);
      r.counts = NULL;
      st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero2, zero2,
                                &r.counts, "long-label counts");
      if (st) break;
    }
    /* Kernels given no list never touch their list arguments; any buffer
       fills the slot. */
    cl_mem huge = r.huge ? r.huge : s->offsets, counts = r.counts ? r.counts : s->offsets;
    if (team_all)
      st = TABCL_OK;
    else if (any_long)
      st = TABCL_SET_ARGS(r.shortk, short_name, TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(xseed), TABCL_ARG(mask),
                          TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(nbytes), TABCL_ARG(r.mid),
                          TABCL_ARG(r.huge), TABCL_ARG(r.counts), TABCL_ARG(gmin_arg));
    else
      st = TABCL_SET_ARGS(r.shortk, short_name, TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(xseed), TABCL_ARG(mask),
                          TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(nbytes));
    size_t global = tabcl__round_up((size_t)n, r.wg_short);
    if (!st && !team_all)
      st = tabcl__launch(ctx, r.shortk, 1, &global, &r.wg_short, nw, wl,
                         last && !any_long ? ev : NULL, short_name);
    if (!st && team_all) {
      size_t teams = r.wg_team / lanes;
      size_t groups = groups_for(ctx, ((uint64_t)n + teams - 1) / teams, 4096 / r.wg_team);
      size_t g = groups * r.wg_team;
      st = TABCL_SET_ARGS(r.team, team_name, TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(xseed), TABCL_ARG(mask),
                          TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(nbytes), TABCL_ARG(huge),
                          TABCL_ARG(counts), TABCL_ARG(gmin_arg), TABCL_ARG(list_arg),
                          TABCL_LOCAL((team_words * r.wg_team + 24) * sizeof(cl_ulong)));
      if (!st) st = tabcl__launch(ctx, r.team, 1, &g, &r.wg_team, nw, wl,
                                  last && !any_huge ? ev : NULL, team_name);
    } else if (!st && any_long) {
      uint64_t items = (uint64_t)r.mid_cap;
      size_t teams = r.wg_team / 4;
      size_t groups = groups_for(ctx, (items + teams - 1) / teams, 4096 / r.wg_team);
      size_t g = groups * r.wg_team;
      st = TABCL_SET_ARGS(r.team, "hash_team", TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(xseed), TABCL_ARG(mask), TABCL_ARG(out),
                          TABCL_ARG(out_off), TABCL_ARG(r.mid), TABCL_ARG(r.counts),
                          TABCL_LOCAL((r.wg_team + 24) * sizeof(cl_ulong)));
      if (!st) st = tabcl__launch(ctx, r.team, 1, &g, &r.wg_team, 0, NULL,
                                  last && !any_huge ? ev : NULL, "hash_team");
    }
    if (!st && big) {
      /* One work-group a label, up to 64 a compute unit; groups loop over
         the rest. */
      uint64_t labels = direct ? (uint64_t)n : (uint64_t)r.huge_cap;
      size_t g = groups_for(ctx, labels, 64) * r.wg_units;
      st = TABCL_SET_ARGS(r.units, "hash_big", TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(nbytes), TABCL_ARG(xseed),
                          TABCL_ARG(mask), TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(huge),
                          TABCL_ARG(counts), TABCL_ARG(direct_arg), TABCL_ARG(gmin_arg),
                          TABCL_LOCAL((2 * r.wg_units + 24) * sizeof(cl_ulong)));
      if (!st) st = tabcl__launch(ctx, r.units, 1, &g, &r.wg_units, 0, NULL, last ? ev : NULL,
                                  "hash_big");
    } else if (!st && any_huge) {
      /* Enough lanes to keep the device's memory busy; each team loops
         over (label, unit) pairs until the labels run out. */
      uint64_t labels = direct ? (uint64_t)n : (uint64_t)r.huge_cap;
      uint64_t teams = labels << span_log2;
      size_t groups = groups_for(ctx, (teams * 4 + r.wg_units - 1) / r.wg_units, 8192 / r.wg_units);
      size_t g = groups * r.wg_units;
      st = TABCL_SET_ARGS(r.units, "hash_units", TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(nbytes), TABCL_ARG(xseed),
                          TABCL_ARG(huge), TABCL_ARG(counts), TABCL_ARG(direct_arg),
                          TABCL_ARG(gmin_arg), TABCL_ARG(span_log2), TABCL_ARG(r.block_sums),
                          TABCL_ARG(r.tail_sums));
      if (!st) st = tabcl__launch(ctx, r.units, 1, &g, &r.wg_units, 0, NULL, NULL, "hash_units");
      size_t per_group = r.wg_chain / 8;
      groups = groups_for(ctx, (labels + per_group - 1) / per_group, 4096 / r.wg_chain);
      g = groups * r.wg_chain;
      if (!st)
        st = TABCL_SET_ARGS(r.chain, "hash_chain", TABCL_ARG(s->offsets), TABCL_ARG(ubase),
                            TABCL_ARG(count), TABCL_ARG(nbytes), TABCL_ARG(xseed), TABCL_ARG(mask),
                            TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(huge), TABCL_ARG(counts),
                            TABCL_ARG(direct_arg), TABCL_ARG(gmin_arg), TABCL_ARG(r.block_sums),
                            TABCL_ARG(r.tail_sums), TABCL_LOCAL(r.wg_chain * sizeof(cl_ulong)));
      if (!st) st = tabcl__launch(ctx, r.chain, 1, &g, &r.wg_chain, 0, NULL, last ? ev : NULL,
                                  "hash_chain");
    }
  }
  if (st && ev && *ev) {
    clReleaseEvent(*ev);
    *ev = NULL;
  }
  /* OpenCL keeps the temporaries alive until the enqueued kernels finish. */
  run_release(&r);
  return st;
}

/* Label i's length in the self-check column: every length class at odd
   starts, one label past the work-group threshold, then many tiny ones. */
static int64_t check_len(int i) {
  if (i == 150) return GROUP_MIN_DEFAULT + 4321;
  return i < 300 ? (i * 37) % 1500 : i % 7;
}

/* The column hashed four times: its first 300 labels (mostly long: teams
   take every label on a GPU), all of them (mostly tiny: one work-item a
   label, the long ones listed), the tiny ones alone, and the huge one
   alone (the block kernels take it unlisted), so every kernel and mode
   runs; each hash is compared with the host's. */
tabcl_status tabcl__selfcheck_hash(tabcl_context *ctx) {
  enum { N = 6300 };
  int64_t *offsets = tabcl__malloc((N + 1) * sizeof *offsets);
  uint64_t *got = tabcl__malloc(N * sizeof *got);
  int64_t total = 3;
  for (int i = 0; i < N; i++) total += check_len(i);
  uint8_t *data = tabcl__malloc((size_t)total);
  if (!offsets || !got || !data) {
    tabcl__free(offsets);
    tabcl__free(got);
    tabcl__free(data);
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "hash self-check: out of host memory for %d test labels (%lld bytes)", N,
                       (long long)total);
  }
  uint64_t x = 0x243F6A8885A308D3ULL;
  for (int64_t i = 0; i < total; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    data[i] = (uint8_t)x;
  }
  offsets[0] = 3;
  for (int i = 0; i < N; i++) offsets[i + 1] = offsets[i] + check_len(i);
  const uint64_t seed = 0x5EED;
  const int col = 3;
  tabcl_status s = TABCL_OK;
  static const int64_t firsts[4] = {0, 0, 300, 150}, lengths[4] = {300, N, N - 300, 1};
  for (int pass = 0; pass < 4 && !s; pass++) {
    int64_t n = lengths[pass];
    const int64_t *o = offsets + firsts[pass];
    tabcl_strings_view v = {n, o, data, NULL};
    tabcl_dev_strings d;
    memset(&d, 0, sizeof d);
    cl_mem out = NULL;
    s = tabcl__strings_upload(ctx, &v, &d);
    if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)n * sizeof *got, NULL, &out, "hashes");
    if (!s) s = tabcl__hash_column(ctx, &d, col, seed, ~0ULL, out, 0, 0, NULL, NULL);
    if (!s) s = tabcl__read(ctx, out, 0, (size_t)n * sizeof *got, got);
    for (int64_t i = 0; !s && i < n; i++) {
      size_t len = (size_t)(o[i + 1] - o[i]);
      uint64_t want = tabcl__label_hash(data + o[i], len, seed, col, ~0ULL);
      if (got[i] != want)
        s = tabcl__fail(TABCL_OPENCL_ERROR,
                        "hash self-check: label %lld (%zu bytes) of %lld hashed to %016llx on %s, "
                        "%016llx on the host",
                        (long long)i, len, (long long)n, (unsigned long long)got[i], ctx->info.name,
                        (unsigned long long)want);
    }
    tabcl__buffer_release(out);
    tabcl__strings_release(&d);
  }
  tabcl__free(offsets);
  tabcl__free(got);
  tabcl__free(data);
  return s;
}
