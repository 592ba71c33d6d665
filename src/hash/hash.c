/* The label hash: seeds, masks, the device launches (cl/hash.cl) and the
 * cl-probe self-check. The host XXH3 itself is in xxh3.c. */
#include <string.h>

#include "hash/hash.h"

/* Lists of huge labels up to this size are made from host zeros (see
   tabcl__hash_column). */
#define LIST_ZEROED_MAX ((size_t)64 << 10)
/* The self-check's huge label: past the default hash.group_min. */
#define CHECK_HUGE (8192 + 4321)

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
  cl_kernel shortk, team, units;
  size_t wg_short, wg_team, wg_units;
  cl_mem mid, huge, counts;       /* lists of long labels' indices, their counts */
  cl_uint mid_cap, huge_cap;
} hash_run;

/* Work-groups a looping kernel gets: enough for every item, at most
   per_cu a compute unit (about 4096 work-items each, two waves on a large
   GPU); the groups loop over what is left. */
static size_t loop_groups(const tabcl__device_desc *dev, uint64_t items, size_t per_cu) {
  uint64_t cap = (uint64_t)(dev->compute_units ? dev->compute_units : 1) * per_cu;
  if (cap < 1) cap = 1;
  if (items < 1) items = 1;
  return (size_t)(items < cap ? items : cap);
}

static void run_release(hash_run *r) {
  tabcl__kernel_release(r->shortk);
  tabcl__kernel_release(r->team);
  tabcl__kernel_release(r->units);
  tabcl__buffer_release(r->mid);
  tabcl__buffer_release(r->huge);
  tabcl__buffer_release(r->counts);
}

/* The CPU plan: hash_serial, one launch a slice; or hash_serial_part,
   p->parts launches a slice, its accumulators in a buffer of the pool. */
static tabcl_status hash_serial(tabcl_context *ctx, const tabcl__dev_strings *s,
                                const tabcl__hash_plan *p, uint64_t xseed, uint64_t mask,
                                cl_mem out, size_t out_offset, cl_uint nwait,
                                const cl_event *wait, cl_event *ev) {
  cl_kernel k = NULL;
  cl_mem acc = NULL;
  tabcl_status st = tabcl__kernel_create(ctx, "hash", p->options, p->serial_kernel, &k);
  if (!st && p->parts)
    st = tabcl__pool_get(ctx, CL_MEM_READ_WRITE, (size_t)p->part_bytes, &acc, "hash accumulators");
  size_t wg = k ? tabcl__wg_size(ctx, k, p->wg_serial) : 1;
  const uint64_t nbytes = (uint64_t)s->bytes, out_off = out_offset, nb = p->part_blocks;
  const cl_uint run = p->serial_run;
  const uint64_t parts = p->parts ? p->parts : 1;
  for (int64_t base = 0; !st && base < s->length; base += p->slice) {
    const int64_t n = s->length - base < p->slice ? s->length - base : p->slice;
    const uint64_t ubase = (uint64_t)base;
    const cl_uint count = (cl_uint)n;
    st = TABCL_SET_ARGS(k, p->serial_kernel, TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                        TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(xseed), TABCL_ARG(mask),
                        TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(nbytes));
    if (!st && !p->parts) st = TABCL_SET_ARGS_AT(k, p->serial_kernel, 9, TABCL_ARG(run));
    if (!st && p->parts) st = TABCL_SET_ARGS_AT(k, p->serial_kernel, 9, TABCL_ARG(acc));
    size_t global = tabcl__round_up(((size_t)n + run - 1) / run, wg);
    for (uint64_t part = 0; !st && part < parts; part++) {
      const uint64_t b0 = part * nb;
      const int first = base == 0 && part == 0, last = base + n >= s->length && part + 1 == parts;
      if (p->parts) st = TABCL_SET_ARGS_AT(k, p->serial_kernel, 10, TABCL_ARG(b0), TABCL_ARG(nb));
      if (!st)
        st = tabcl__launch(ctx, k, 1, &global, &wg, first ? nwait : 0, first ? wait : NULL,
                           last ? ev : NULL, p->serial_kernel);
    }
  }
  if (st && ev && *ev) {
    clReleaseEvent(*ev);
    *ev = NULL;
  }
  /* back to the pool once the launches that use it are done */
  tabcl__pool_put(ctx, acc);
  tabcl__kernel_release(k);
  return st;
}

tabcl_status tabcl__hash_plan_for(tabcl_context *ctx, int64_t length, int64_t bytes,
                                  int64_t max_label, tabcl__hash_plan *p) {
  tabcl__device_desc dev;
  tabcl__target tg;
  int limit_known = tabcl__context_target_limited(ctx, &dev, &tg), again = 0;
  tabcl__hash_plan_make(&tg, length, bytes, max_label, p);
  /* The CPU plan loops over many labels in a work-item: where that could
     run long, the device's loop limit decides the runs (plan again). */
  tabcl_status s = tabcl__loop_limit_learn(ctx, &limit_known, &dev,
                                           p->serial_kernel ? p->serial_loops : 0, &again);
  if (!s && again) tabcl__hash_plan_make(&tg, length, bytes, max_label, p);
  return s;
}

tabcl_status tabcl__hash_column(tabcl_context *ctx, const tabcl__dev_strings *s, int col,
                                uint64_t seed, uint64_t mask, cl_mem out, size_t out_offset,
                                cl_uint nwait, const cl_event *wait, cl_event *ev) {
  if (!ctx || !s || !out || s->length < 0 || s->bytes < 0 || (nwait && !wait))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl__hash_column: column %d: bad arguments", col);
  if (!nwait) wait = NULL;   /* OpenCL refuses a non-NULL list with no events */
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
  tabcl__hash_plan p;
  tabcl_status ls = tabcl__hash_plan_for(ctx, s->length, s->bytes, s->max_label, &p);
  if (ls) return ls;
  if (p.serial_kernel) return hash_serial(ctx, s, &p, xseed, mask, out, out_offset, nwait, wait, ev);
  /* the GPU kernels read whole words past a label: only a padded copy */
  if (s->in_place)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "tabcl__hash_column: column %d is the caller's memory in place, which only "
                       "the CPU kernel reads (hash.serial)", col);
  const int64_t gmin = p.group_min, per = p.slice;
  const int any_long = p.any_long, any_huge = p.any_huge, direct = p.direct;
  const int team_all = p.team_all, list_huge = p.list_huge, lists = p.lists;
  const size_t lanes = p.lanes, team_words = p.team_words;
  const char *short_name = p.short_kernel, *team_name = p.team_kernel;
  hash_run r;
  memset(&r, 0, sizeof r);
  /* Kernels, then each group size lowered where the kernel's own limit is
     below the plan's. */
  tabcl_status st = TABCL_OK;
  if (short_name) st = tabcl__kernel_create(ctx, "hash", NULL, short_name, &r.shortk);
  r.wg_short = r.shortk ? tabcl__wg_size(ctx, r.shortk, p.wg_short) : p.wg_short;
  if (!st && team_name) st = tabcl__kernel_create(ctx, "hash", NULL, team_name, &r.team);
  if (!st && team_name) r.wg_team = tabcl__wg_size(ctx, r.team, p.wg_team);
  if (!st && p.units_kernel) st = tabcl__kernel_create(ctx, "hash", NULL, p.units_kernel, &r.units);
  if (!st && r.units) r.wg_units = tabcl__wg_size(ctx, r.units, p.wg_units);
  if (!st && (r.wg_short < 8 || (team_name && r.wg_team < 8) ||
              (any_huge && r.wg_units < 8)))
    st = tabcl__fail(TABCL_UNSUPPORTED, "tabcl__hash_column: %s allows work-groups of fewer than 8",
                     ctx->info.name);
  if (!st && lists) {
    /* The list of huge labels, which the kernels fill for each other: a
       small one (columns up to about 1 MiB) is made from host zeros, which
       costs little: oclgrind 21.10 took what a later call's kernels wrote
       into such buffers as uninitialised (an enqueued fill made it worse).
       A large one is left as it is: a host copy of its size would cost
       more than the hashing. */
    r.mid_cap = p.mid_cap;
    r.huge_cap = p.huge_cap;
    const size_t huge_bytes = (size_t)p.huge_cap * sizeof(cl_uint);
    void *zeros = huge_bytes <= LIST_ZEROED_MAX ? tabcl__calloc(huge_bytes, 1) : NULL;
    if (!zeros && huge_bytes <= LIST_ZEROED_MAX)
      st = tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl__hash_column: column %d: out of host memory "
                       "for %zu zero bytes of the huge-label list", col, huge_bytes);
    if (!st && !team_all)
      st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)p.mid_cap * sizeof(cl_uint), NULL,
                                &r.mid, "long-label list");
    if (!st)
      st = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE | (zeros ? CL_MEM_COPY_HOST_PTR : 0),
                                huge_bytes, zeros, &r.huge, "huge-label list");
    tabcl__free(zeros);
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
    /* Each kernel's global size: the short kernel a work-item a label; the
       team and block kernels loop over their labels (loop_groups). */
    size_t global = tabcl__round_up((size_t)n, r.wg_short), g_team = 0, g_units = 0;
    if (r.team) {
      const size_t teams = r.wg_team / (team_all ? lanes : 4);
      const uint64_t items = team_all ? (uint64_t)n : (uint64_t)r.mid_cap;
      g_team = loop_groups(&ctx->info, (items + teams - 1) / teams, 4096 / r.wg_team) * r.wg_team;
    }
    if (r.units)
      g_units = loop_groups(&ctx->info, direct ? (uint64_t)n : (uint64_t)r.huge_cap, 64) * r.wg_units;
    if (!st && !team_all)
      st = tabcl__launch(ctx, r.shortk, 1, &global, &r.wg_short, nw, wl,
                         last && !any_long ? ev : NULL, short_name);
    if (!st && team_all) {
      st = TABCL_SET_ARGS(r.team, team_name, TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(xseed), TABCL_ARG(mask),
                          TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(nbytes), TABCL_ARG(huge),
                          TABCL_ARG(counts), TABCL_ARG(gmin_arg), TABCL_ARG(list_arg),
                          TABCL_LOCAL((team_words * r.wg_team + 24) * sizeof(cl_ulong)));
      if (!st) st = tabcl__launch(ctx, r.team, 1, &g_team, &r.wg_team, nw, wl,
                                  last && !any_huge ? ev : NULL, team_name);
    } else if (!st && any_long) {
      st = TABCL_SET_ARGS(r.team, "hash_team", TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(xseed), TABCL_ARG(mask), TABCL_ARG(out),
                          TABCL_ARG(out_off), TABCL_ARG(r.mid), TABCL_ARG(r.counts),
                          TABCL_LOCAL((r.wg_team + 24) * sizeof(cl_ulong)));
      if (!st) st = tabcl__launch(ctx, r.team, 1, &g_team, &r.wg_team, 0, NULL,
                                  last && !any_huge ? ev : NULL, "hash_team");
    }
    if (!st && any_huge) {
      /* one work-group a label, up to 64 a compute unit (g_units) */
      st = TABCL_SET_ARGS(r.units, "hash_big", TABCL_ARG(s->data), TABCL_ARG(s->offsets),
                          TABCL_ARG(ubase), TABCL_ARG(count), TABCL_ARG(nbytes), TABCL_ARG(xseed),
                          TABCL_ARG(mask), TABCL_ARG(out), TABCL_ARG(out_off), TABCL_ARG(huge),
                          TABCL_ARG(counts), TABCL_ARG(direct_arg), TABCL_ARG(gmin_arg),
                          TABCL_LOCAL((2 * r.wg_units + 24) * sizeof(cl_ulong)));
      if (!st) st = tabcl__launch(ctx, r.units, 1, &g_units, &r.wg_units, 0, NULL, last ? ev : NULL,
                                  "hash_big");
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
  if (i == 150) return CHECK_HUGE;
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
    tabcl__dev_strings d;
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
