/* The key split the fused and CPU kernels share: how many parts a query
 * tile's keys take, and the launches and scratch of a split. Pure: the
 * planner calls it for hand-written devices in tests. */
#include "attention/sdpa.h"

/* Two work-groups a compute unit: one waiting on memory while the other
   computes (issue 51's context call: 64 groups on 132 units ran at a tenth
   of the tensor-core kernel's rate). */
#define GROUPS_A_UNIT 2

int64_t tabcl__sdpa_split_rule(uint64_t units, int64_t groups, int64_t keys, int64_t min_keys) {
  if (groups <= 0 || keys <= 0 || units == 0) return 1;
  const uint64_t want = GROUPS_A_UNIT * units;
  if ((uint64_t)groups >= want) return 1;
  int64_t parts = (int64_t)((want + (uint64_t)groups - 1) / (uint64_t)groups);
  const int64_t most = min_keys > 0 ? keys / min_keys : keys;
  if (parts > most) parts = most;
  return parts > 1 ? parts : 1;
}

int64_t tabcl__sdpa_split_wanted(const tabcl__target *tg, const tabcl_sdpa_desc *d,
                                 int64_t groups, const char **reason) {
  const int64_t most = tabcl__tuned(tg->tune, TABCL__TUNE_SDPA_GROUPS_YZ);
  const int64_t forced = tabcl__tuned(tg->tune, TABCL__TUNE_SDPA_SPLIT);
  int64_t parts = forced;
  if (forced == TABCL__TUNE_AUTO)
    parts = tabcl__sdpa_split_rule(tg->dev->compute_units, groups, d->kv_len,
                                   tabcl__tuned(tg->tune, TABCL__TUNE_SDPA_SPLIT_KEYS));
  if (parts > most) parts = most;
  if (parts < 1) parts = 1;
  *reason = parts <= 1 ? NULL : forced == TABCL__TUNE_AUTO ? "fill" : "tuning";
  return parts;
}

/* The most one launch's scratch may take: a quarter of an allocation, at
   most 256 MiB (the same order as the tensors themselves). */
static uint64_t scratch_cap(const tabcl__device_desc *dev) {
  const uint64_t q = dev->max_mem_alloc_size / 4, most = (uint64_t)256 << 20;
  return q < most ? q : most;
}

int tabcl__sdpa_split_fit(const tabcl__target *tg, const tabcl_sdpa_desc *d, int64_t nqt,
                          int rows, int bk, int cols, int64_t parts, const char *reason,
                          int64_t *launch_step, tabcl__sdpa_keysplit *ks) {
  ks->parts = 1, ks->part_keys = d->kv_len, ks->reason = NULL;
  ks->qtile_step = 0, ks->part_bytes = 0;
  const int64_t tiles = (d->kv_len + bk - 1) / bk;
  if (parts <= 1 || tiles <= 0) return 0;
  const int64_t part_tiles = (tiles + parts - 1) / parts;
  /* A count the rule or the limit chose leaves no part empty; a forced
     one may (those parts' rows attend nothing and merge as zeros). */
  if (reason[0] != 't') parts = (tiles + part_tiles - 1) / part_tiles;
  if (parts <= 1) return 0;
  const int64_t most = tabcl__tuned(tg->tune, TABCL__TUNE_SDPA_GROUPS_YZ);
  if (parts > most) return -1;
  const int64_t heads = d->q_heads < most ? d->q_heads : most;
  const uint64_t per_group =
      (uint64_t)rows * (2 + (uint64_t)cols) * (d->dtype == TABCL_F64 ? 8 : 4) * (uint64_t)parts;
  const uint64_t groups = scratch_cap(tg->dev) / per_group;
  /* Whole batch entries where the scratch of one fits, else one entry and
     as many query tiles a launch as fit; dim 2 holds query tiles x parts. */
  int64_t qt = nqt < most / parts ? nqt : most / parts;
  int64_t step = *launch_step;
  if ((uint64_t)heads * (uint64_t)qt <= groups) {
    const int64_t entries = (int64_t)(groups / ((uint64_t)heads * (uint64_t)qt));
    if (entries < step) step = entries;
  } else {
    /* a split only for speed is dropped rather than refused */
    if ((uint64_t)heads > groups) return reason[0] == 'l' ? -2 : 0;
    step = 1;
    qt = (int64_t)(groups / (uint64_t)heads);
  }
  *launch_step = step;
  ks->parts = parts;
  ks->part_keys = part_tiles * bk;
  ks->reason = reason;
  ks->qtile_step = qt;
  /* sized for the entries a launch takes, not the most it could */
  const int64_t used = step < d->batch ? step : d->batch;
  ks->part_bytes = (uint64_t)used * (uint64_t)heads * (uint64_t)qt * per_group;
  ks->merge_rows = rows, ks->merge_cols4 = cols / 4;
  return 0;
}
