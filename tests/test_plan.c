/* The planners without a device: every family planned for hand-written
 * device descriptions (small and large limits, no fp64, tiny local memory,
 * work-group limits of 64 and 1024, a 256 MiB max allocation) at sizes
 * from 0 to past 2^31 elements, checking properties of each plan: every
 * launch within the limits, local memory within the device's, slices that
 * cover the work exactly once, buffers within the max allocation, and one
 * build per configuration whatever the sizes. ctest runs this binary with
 * no OpenCL platform at all (OCL_ICD_VENDORS names an empty folder), so a
 * planner that reached for the device would fail here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"
#include "catindex/catindex.h"
#include "hash/hash.h"
#include "sort/sort.h"
#include "tt.h"

typedef struct dev_case {
  const char *what;
  tabcl__device_desc d;
} dev_case;

static tabcl__device_desc make_dev(const char *name, int gpu, const char *vendor, size_t maxwg,
                                   cl_ulong local, cl_ulong max_alloc, int fp64, cl_uint cus) {
  tabcl__device_desc d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%s", name);
  snprintf(d.vendor, sizeof d.vendor, "%s", vendor);
  d.type = gpu ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU;
  d.is_gpu = gpu, d.is_cpu = !gpu;
  d.is_nvidia = gpu && strstr(vendor, "NVIDIA") != NULL;
  d.is_amd = gpu && strstr(vendor, "Advanced Micro") != NULL;
  d.is_intel = gpu && strstr(vendor, "Intel") != NULL;
  d.compute_units = cus;
  d.max_work_item_dims = 3;
  d.max_work_item_sizes[0] = maxwg, d.max_work_item_sizes[1] = maxwg;
  d.max_work_item_sizes[2] = 64;
  d.max_work_group_size = maxwg;
  d.local_mem_size = local;
  d.max_mem_alloc_size = max_alloc;
  d.global_mem_size = max_alloc * 4;
  d.address_bits = 64;
  d.mem_base_addr_align_bits = 1024;
  d.has_fp64 = fp64;
  d.preferred_wg_multiple = 32;
  d.cl_major = 1, d.cl_minor = 2;
  return d;
}

#define GiB ((cl_ulong)1 << 30)
#define MiB ((cl_ulong)1 << 20)
#define KiB ((cl_ulong)1 << 10)

static int make_devices(dev_case *out) {
  int n = 0;
  out[n++] = (dev_case){"large GPU", make_dev("big gpu", 1, "NVIDIA Corporation", 1024, 48 * KiB,
                                                  32 * GiB, 1, 132)};
  out[n++] = (dev_case){"wg 64, tiny local", make_dev("small gpu", 1, "Advanced Micro Devices",
                                                          64, 4 * KiB, 256 * MiB, 0, 4)};
  out[n++] = (dev_case){"mobile, 256 MiB", make_dev("mobile gpu", 1, "ARM", 256, 32 * KiB,
                                                        256 * MiB, 0, 8)};
  out[n++] = (dev_case){"CPU", make_dev("cpu", 0, "GenuineIntel", 4096, 2 * MiB, 8 * GiB, 1, 2)};
  out[n++] = (dev_case){"wg 1024, 16 KiB", make_dev("mid gpu", 1, "Intel(R) Corporation", 1024,
                                                        16 * KiB, 1 * GiB, 0, 32)};
  return n;
}

static size_t dev_wg_cap(const tabcl__device_desc *d) {
  return d->max_work_group_size < d->max_work_item_sizes[0] ? d->max_work_group_size
                                                            : d->max_work_item_sizes[0];
}

static tabcl__tuning tuning_for(const tabcl__device_desc *d, const char *override) {
  tabcl__tuning t;
  cr_assert_eq(tabcl__tune_resolve(d, override, &t), TABCL_OK, "%s: %s", d->name,
               tabcl_last_error());
  return t;
}

static const uint64_t sizes[] = {0, 1, 2, 3, 255, 257, 4097, 65537, 1000003,
                                 ((uint64_t)1 << 31) + 11, ((uint64_t)1 << 33) + 5};

/* Every row of the table parses, for every device kind, and resolving
   twice gives the same tuning. */
Test(plan, table_rows_parse) {
  dev_case devs[8];
  int n = make_devices(devs);
  for (int i = 0; i < n; i++) {
    tabcl__tuning a = tuning_for(&devs[i].d, NULL), b = tuning_for(&devs[i].d, "");
    cr_expect_eq(memcmp(a.value, b.value, sizeof a.value), 0);
    for (int k = 0; k < TABCL__TUNE_COUNT; k++) {
      /* A key the table names is resolved from its row (or its rule, "auto"). */
      cr_expect(a.origin[k] == TABCL__TUNE_FROM_TABLE || a.origin[k] == TABCL__TUNE_FROM_RULE);
      if (a.origin[k] == TABCL__TUNE_FROM_TABLE) cr_expect_not_null(a.source[k]);
    }
  }
  /* device-type rows: CPUs map uploads and give teams longer labels */
  tabcl__tuning cpu = tuning_for(&devs[3].d, NULL), gpu = tuning_for(&devs[0].d, NULL);
  cr_expect_eq(cpu.value[TABCL__TUNE_UPLOAD_STAGING], 0);
  cr_expect_eq(gpu.value[TABCL__TUNE_UPLOAD_STAGING], 1);
  cr_expect_eq(cpu.value[TABCL__TUNE_HASH_TEAM_AVG], 240);
  cr_expect_eq(gpu.value[TABCL__TUNE_HASH_TEAM_AVG], 48);
}

/* Defaults live in the table alone: every key read without a rule
   (tabcl__tuned) resolves to a number on every device, also after an
   override of "auto" (which goes back to the table); only the keys of
   TABCL__TUNE_RULE_KEYS may stay "auto" for their planner's rule. */
Test(plan, numeric_keys_never_auto) {
  int rule[TABCL__TUNE_COUNT] = {0};
#define RULE_KEY(id) rule[TABCL__TUNE_##id] = 1;
  TABCL__TUNE_RULE_KEYS(RULE_KEY)
#undef RULE_KEY
  dev_case devs[8];
  int n = make_devices(devs);
  for (int i = 0; i < n; i++) {
    tabcl__tuning t = tuning_for(&devs[i].d, NULL);
    for (int k = 0; k < TABCL__TUNE_COUNT; k++) {
      char entry[96];
      snprintf(entry, sizeof entry, "%s=auto", tabcl__tune_key_name((tabcl__tune_key)k));
      tabcl__tuning back = tuning_for(&devs[i].d, entry);
      cr_expect_eq(back.value[k], t.value[k], "%s on %s", entry, devs[i].what);
      if (!rule[k])
        cr_expect_neq(t.value[k], TABCL__TUNE_AUTO, "%s is auto on %s but has no rule",
                      tabcl__tune_key_name((tabcl__tune_key)k), devs[i].what);
    }
  }
}

/* TABCL_TUNE entries: taken, or refused with the entry named and the
   tuning untouched. */
Test(plan, override_entries) {
  dev_case devs[8];
  make_devices(devs);
  const tabcl__device_desc *small = &devs[1].d;
  tabcl__tuning t = tuning_for(small, "sort.local=32; hash.mid=3;sdpa.fused.d64=32x16/2");
  cr_expect_eq(t.value[TABCL__TUNE_SORT_LOCAL], 32);
  cr_expect_eq(t.origin[TABCL__TUNE_SORT_LOCAL], TABCL__TUNE_FROM_OVERRIDE);
  cr_expect_eq(t.value[TABCL__TUNE_HASH_MID], 3);
  cr_expect_eq(t.tiles[TABCL__TUNE_SDPA_FUSED_D64].bq, 32);
  static const char *const bad[] = {
      "sort.local=128",        /* more work-items than the device's 64 */
      "sort.tile=4096",        /* 4096 pairs need 52 KB of its 4 KiB */
      "sort.local=3",          /* not a power of two */
      "no.such.key=1",         "sort.local",      "sort.local=",      "sort.local=12x",
      "upload.staging=-1",     "hash.mid=2",      "sdpa.fused.d64=48x16",
      "sdpa.mma.warps=16",     "sort.max_items=0"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tabcl__tuning u = t;
    cr_expect_eq(tabcl__tune_apply(small, bad[i], &u), TABCL_INVALID_ARGUMENT, "%s", bad[i]);
    cr_expect(strstr(tabcl_last_error(), bad[i]) != NULL, "%s: %s", bad[i], tabcl_last_error());
    cr_expect_eq(memcmp(&u, &t, sizeof t), 0, "%s changed the tuning", bad[i]);
  }
  /* "auto" goes back to the table's value for this device */
  tabcl__tuning cpu = tuning_for(&devs[3].d, "hash.team_avg=7");
  cr_expect_eq(cpu.value[TABCL__TUNE_HASH_TEAM_AVG], 7);
  cr_assert_eq(tabcl__tune_apply(&devs[3].d, "hash.team_avg=auto", &cpu), TABCL_OK);
  cr_expect_eq(cpu.value[TABCL__TUNE_HASH_TEAM_AVG], 240);
}

/* Sort: groups and tiles within the device, every pass's work split into
   launches of at most max_items that cover it exactly once, no register
   pass where one tile holds every pair, and build options that never
   depend on n: one program per device, whichever plan a size takes. */
Test(plan, sort_plans) {
  dev_case devs[8];
  int nd = make_devices(devs);
  for (int i = 0; i < nd; i++) {
    const tabcl__device_desc *dev = &devs[i].d;
    for (int o = 0; o < 2; o++) {
      tabcl__tuning tune = tuning_for(dev, o ? "sort.tile=4;sort.max_items=1000" : NULL);
      tabcl__target tg = {dev, &tune, 0, 0};
      /* n within one tile, n past it; local tiles, then the CPU plan's runs
         (a CPU takes local tiles only for sorts whose scratch would not fit
         one allocation), all from one program */
      char opts[64] = "";
      for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const uint64_t n = sizes[si] > ((uint64_t)1 << 40) ? ((uint64_t)1 << 40) : sizes[si];
        static tabcl__sort_plan p;
        tabcl__sort_plan_make(&tg, n, &p);
        cr_expect_leq(p.wg, dev_wg_cap(dev), "%s: local group %u", devs[i].what, p.wg);
        cr_expect_leq(p.gwg, dev_wg_cap(dev), "%s: register-pass group %zu", devs[i].what, p.gwg);
        /* the CPU plan (sort.serial) on CPUs only: runs a work-item, no
           local memory, at least 4,096 pairs (or the forced tile), within
           the loop limit; elsewhere local tiles within local memory */
        cr_expect_eq(p.serial, dev->is_cpu && n * 12 <= dev->max_mem_alloc_size,
                     "%s: n = %llu: serial %d", devs[i].what,
                     (unsigned long long)n, p.serial);
        if (p.serial) {
          cr_expect_eq(p.wg, 1u);
          cr_expect_eq(p.tile & (p.tile - 1), 0u, "%s: run %u", devs[i].what, p.tile);
          cr_expect_geq(p.tile, o ? 4u : (unsigned)TABCL__SORT_SERIAL_MIN_RUN);
          cr_expect_eq(p.serial_loops, tabcl__sort_serial_loops(p.tile));
          cr_expect_leq(p.serial_loops, tabcl__loop_budget(dev));
        } else {
          cr_expect_leq((cl_ulong)(p.tile + p.tile / 16) * 12, dev->local_mem_size,
                        "%s: tile %u", devs[i].what, p.tile);
          cr_expect_geq(p.tile, 2 * p.wg);
        }
        const int big = n > p.tile;
        if (!opts[0]) snprintf(opts, sizeof opts, "%s", p.extra);
        cr_expect_str_eq(p.extra, opts, "%s: build options changed with n = %llu",
                         devs[i].what, (unsigned long long)n);
        for (int s = 0; !big && s < p.nsteps; s++)
          cr_expect_eq(p.steps[s].logr, 0u, "%s: a register pass in a one-tile sort",
                       devs[i].what);
        cr_expect_eq(p.nsteps == 0, n < 2);
        cr_expect_leq(p.nsteps, TABCL__SORT_MAX_STEPS);
        /* Each pass covers its items once in launches of at most max_items;
           the stages of each merge level are all taken. */
        for (int s = 0; s < p.nsteps; s++) {
          const tabcl__sort_step *st = &p.steps[s];
          uint64_t items = tabcl__sort_step_items(&p, st), covered = 0, per = p.max_items;
          if (st->logr) per = p.max_items >= p.gwg ? p.max_items / p.gwg * p.gwg : p.gwg;
          else per = (p.max_items >= p.wg ? p.max_items / p.wg : 1) * p.wg;
          /* launches of per items, the last of what is left */
          const uint64_t launches = (items + per - 1) / per;
          const uint64_t last = items - (launches ? launches - 1 : 0) * per;
          cr_expect_leq(per, ((uint64_t)1 << 31), "launches of %llu work-items",
                        (unsigned long long)per);
          cr_expect(launches == 0 || (last >= 1 && last <= per));
          covered = launches ? (launches - 1) * per + last : 0;
          cr_expect_eq(covered, items);
          cr_expect_leq(st->logr, p.max_logr);
        }
      }
    }
  }
}

/* Hash: kernels' groups within the device, lists and block sums within
   one allocation, slices covering the labels once, and the lists no
   longer than a slice. */
Test(plan, hash_plans) {
  dev_case devs[8];
  int nd = make_devices(devs);
  static const int64_t lens[] = {0, 1, 8, 240, 241, 1000, 8191, 8192, 70000, 1 << 20};
  for (int i = 0; i < nd; i++) {
    const tabcl__device_desc *dev = &devs[i].d;
    tabcl__tuning tune = tuning_for(dev, NULL);
    for (int batch = 0; batch < 2; batch++) {
      tabcl__target tg = {dev, &tune, batch ? 1000 : 0, 0};
      for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
          const int64_t n = (int64_t)sizes[si], max = lens[li];
          const int64_t bytes = n ? (n - 1) * (max / 2) + max : 0;
          tabcl__hash_plan p;
          tabcl__hash_plan_make(&tg, n, bytes, max, &p);
          if (!n) continue;
          const size_t cap = dev_wg_cap(dev);
          cr_expect_leq(p.wg_short, cap);
          cr_expect_leq(p.wg_team, cap);
          cr_expect_leq(p.wg_units, cap);
          cr_expect_geq(p.slice, 1);
          cr_expect_leq((uint64_t)p.slice * 8, dev->max_mem_alloc_size,
                        "%s: a slice of %lld hashes", devs[i].what, (long long)p.slice);
          if (batch) cr_expect_leq(p.slice, 1000);
          cr_expect_leq((uint64_t)p.huge_cap * 4, dev->max_mem_alloc_size);
          cr_expect_leq(p.huge_cap, (uint64_t)p.slice);
          cr_expect_leq(p.mid_cap, (uint64_t)p.slice);
          /* the CPU plan (the table's hash.serial for CPUs): hash_serial
             alone, runs that cover a launch's labels with the work-items
             hash.serial asks for a compute unit */
          cr_expect_eq(p.serial_kernel != NULL, dev->is_cpu, "%s", devs[i].what);
          if (p.serial_kernel) {
            const int64_t per_launch = n < p.slice ? n : p.slice;
            const int64_t items = (int64_t)dev->compute_units * tune.value[TABCL__TUNE_HASH_SERIAL];
            cr_expect_geq((int64_t)p.serial_run * items, per_launch);
            cr_expect_lt((int64_t)(p.serial_run - 1) * items, per_launch);
            cr_expect_eq(p.wg_serial, 1);
            cr_expect_str_eq(p.options, "-DHASH_SERIAL_ONLY=1");
            cr_expect(!p.short_kernel && !p.team_kernel && !p.units_kernel);
            continue;
          }
          cr_expect_null(p.options, "GPU kernels come from the program's default build");
          cr_expect_eq(p.any_huge, max >= p.group_min);
          cr_expect_eq(p.short_kernel == NULL, p.team_all);
          if (p.any_huge) cr_expect_not_null(p.units_kernel);
          /* the team kernels' local words fit the device */
          if (p.team_kernel)
            cr_expect_leq((p.team_words * p.wg_team + 24) * 8, dev->local_mem_size,
                          "%s: team kernel local memory", devs[i].what);
        }
    }
  }
}

/* Lookup: groups within the device and launches within the NDRange. */
Test(plan, lookup_plans) {
  dev_case devs[8];
  int nd = make_devices(devs);
  for (int i = 0; i < nd; i++) {
    const tabcl__device_desc *dev = &devs[i].d;
    tabcl__tuning tune = tuning_for(dev, NULL);
    tabcl__target tg = {dev, &tune, 0, 0};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int64_t avg = 0; avg <= 4096; avg = avg ? avg * 4 : 1) {
        tabcl__lookup_plan p;
        const int64_t rows = (int64_t)sizes[si];
        tabcl__lookup_plan_make(&tg, rows, rows * avg, avg, 1, &p);
        cr_expect_leq(p.lanes, dev_wg_cap(dev));
        cr_expect_leq(p.item_wg, dev_wg_cap(dev));
        /* the CPU plan: runs of rows a work-item, covering a launch's rows
           with the work-items lookup.serial asks for a compute unit */
        cr_expect_eq(p.serial, dev->is_cpu, "%s", devs[i].what);
        cr_expect_eq(p.grouped, !p.serial && rows > 0 && avg >= 256);
        if (p.serial) {
          const int64_t n = rows < p.item_step ? rows : p.item_step;
          const int64_t items = (int64_t)dev->compute_units * tune.value[TABCL__TUNE_LOOKUP_SERIAL];
          cr_expect_geq(p.serial_run * items, n);
          cr_expect_geq(p.serial_run, 1);
          cr_expect(n == 0 || (p.serial_run - 1) * items < n);
        }
        cr_expect_leq((uint64_t)p.group_step * p.lanes, ((uint64_t)1 << 31));
        cr_expect_leq((uint64_t)p.item_step, ((uint64_t)1 << 31));
      }
  }
}

/* The CPU plans under a device's loop limit (llvmpipe's 65,535): every
   work-item's loops within half of it, by the plans' own bound; a label
   too long for one work-item takes hash_serial_part of the same build;
   without a limit the runs are the longest the work-item count allows. */
Test(plan, cpu_plans_keep_within_the_loop_limit) {
  dev_case devs[8];
  cr_assert_gt(make_devices(devs), 3);
  tabcl__device_desc cpu = devs[3].d;
  cr_assert(cpu.is_cpu);
  static const uint64_t limits[] = {0, 65535, 4000};
  static const int64_t lens[] = {0, 8, 240, 241, 4096, 70000, 200000, 1 << 20};
  for (size_t li = 0; li < sizeof limits / sizeof limits[0]; li++) {
    cpu.loop_limit = limits[li];
    tabcl__tuning tune = tuning_for(&cpu, NULL);
    tabcl__target tg = {&cpu, &tune, 0, 0};
    for (size_t si = 1; si < 8; si++)
      for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        const int64_t n = (int64_t)sizes[si], max = lens[k];
        tabcl__hash_plan h;
        tabcl__hash_plan_make(&tg, n, n * max, max, &h);
        tabcl__lookup_plan l;
        tabcl__lookup_plan_make(&tg, n, n * max, max, 1, &l);
        cr_expect_not_null(h.serial_kernel, "a CPU: always the serial kernels");
        cr_expect_str_eq(h.options, "-DHASH_SERIAL_ONLY=1", "one build whatever the lengths");
        if (limits[li]) {
          if (h.serial_kernel) cr_expect_leq(h.serial_loops, limits[li] / 2, "%lld x %lld B", (long long)n, (long long)max);
          if (l.serial) cr_expect_leq(l.serial_loops, limits[li] / 2, "%lld x %lld B", (long long)n, (long long)max);
        } else {
          cr_expect(l.serial, "no limit: always the CPU plan");
        }
        if (h.serial_kernel) cr_expect_geq(h.serial_run, 1);
        if (l.serial) cr_expect_geq(l.serial_run, 1);
      }
    /* a label of 1 MiB needs more loops than half of 65,535: its blocks
       over launches, each within the limit, covering all 1,023 whole blocks */
    tabcl__hash_plan h;
    tabcl__hash_plan_make(&tg, 10, 10 << 20, 1 << 20, &h);
    cr_expect_eq(h.parts > 0, limits[li] != 0, "limit %llu", (unsigned long long)limits[li]);
    if (limits[li]) {
      cr_expect_str_eq(h.serial_kernel, "hash_serial_part");
      cr_expect_leq(h.serial_loops, limits[li] / 2);
      cr_expect_geq(h.parts * h.part_blocks, 1023);
      cr_expect_lt((h.parts - 1) * h.part_blocks, 1023, "no launch past the last block");
      cr_expect_eq(h.part_bytes, 10 * 64, "the accumulators of every label of the slice");
    }
    /* kept collisions (candidates unknown): no CPU plan under a limit */
    tabcl__lookup_plan l;
    tabcl__lookup_plan_make(&tg, 1000, 8000, 8, 0, &l);
    cr_expect_eq(l.serial, limits[li] == 0);
  }
}

/* An attention plan refused with status want and a message containing word. */
static void expect_refused(const tabcl__target *tg, const tabcl__sdpa_facts *f,
                           const tabcl_sdpa_desc *d, tabcl_status want, const char *word) {
  tabcl__sdpa_plan p;
  cr_expect_eq(tabcl__sdpa_plan_make(tg, f, d, TABCL__SDPA_AUTO, &p), want, "%s",
               tabcl_last_error());
  cr_expect(strstr(tabcl_last_error(), word) != NULL, "\"%s\" not in: %s", word,
            tabcl_last_error());
}

/* Fit and align: their groups within the device, launches within the
   NDRange, and buffers of exactly the sizes their contents need. */
Test(plan, fit_and_align_plans) {
  dev_case devs[8];
  int nd = make_devices(devs);
  for (int i = 0; i < nd; i++) {
    const tabcl__device_desc *dev = &devs[i].d;
    tabcl__tuning tune = tuning_for(dev, NULL);
    tabcl__target tg = {dev, &tune, 0, 0};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int64_t avg = 0; avg <= 4096; avg = avg ? avg * 8 : 1) {
        const int64_t labels = (int64_t)sizes[si], pairs = labels - labels / 3;
        tabcl__fit_plan p;
        const int64_t lpairs = pairs / 2, longest = avg * 4;
        const int64_t lsparse = labels / 4; /* the longest column with nulls */
        tabcl__fit_plan_make(&tg, labels, pairs, labels * avg, labels / 2, lpairs, lsparse,
                             longest, 0, &p);
        cr_expect_leq(p.pairs_wg, dev_wg_cap(dev), "%s", devs[i].what);
        cr_expect_gt(p.pairs_step, 0);
        cr_expect_leq((uint64_t)p.pairs_step, ((uint64_t)1 << 31));
        cr_expect_eq(p.hash_bytes, (uint64_t)lsparse * 8,
                     "hashes of one column with nulls at a time, none for dense ones");
        cr_expect_eq(p.longest_pairs, lpairs);
        cr_expect_eq(p.slot_bytes, (uint64_t)pairs * 4);
        cr_expect_eq(p.entry_bytes, (uint64_t)pairs * 28);
        cr_expect_geq(p.chunks * TABCL__FIT_CHUNK, longest, "every byte of the longest label");
        cr_expect(p.chunks == 1 || (p.chunks - 1) * TABCL__FIT_CHUNK < longest);
        cr_expect_gt(p.run, 0);
        cr_expect_geq(p.runs * p.run, lpairs, "the runs cover the longest column");
        cr_expect_lt((p.runs - 1) * p.run, lpairs > 0 ? lpairs : 1);
        cr_expect_leq((uint64_t)p.runs,
                      (uint64_t)p.scan_lanes * TABCL__FIT_SCAN_PER_LANE, "the scan's loop bound");
        cr_expect_eq(p.run_bytes, (uint64_t)(p.runs ? p.runs : 1) * 8);
        cr_expect_leq(p.run_wg, dev_wg_cap(dev));
        cr_expect_leq(p.scan_lanes, dev_wg_cap(dev));
        cr_expect_gt(p.run_step, 0);
        cr_expect_geq(p.vdata_bytes, (uint64_t)(labels * avg) + 8, "room for a word past the end");
        cr_expect_eq(p.vdata_bytes % 8, 0);
        cr_expect_eq(p.offsets_bytes, (uint64_t)(labels / 2 + 1) * 8);
        cr_expect_geq(p.seed_tries, 1);
        uint64_t big = p.hash_bytes > p.vdata_bytes ? p.hash_bytes : p.vdata_bytes;
        if (p.entry_bytes > big) big = p.entry_bytes;
        cr_expect_eq(p.largest, big);
        tabcl__align_plan a;
        tabcl__align_plan_make(&tg, 3, labels, labels * avg, &a);
        cr_expect_leq(a.gather_wg, dev_wg_cap(dev), "%s", devs[i].what);
        cr_expect_gt(a.gather_step, 0);
        cr_expect_leq((uint64_t)a.gather_step, ((uint64_t)1 << 31));
        cr_expect_eq(a.table_entries, labels * avg + 3, "one -1 slot a column");
        cr_expect_eq(a.table_bytes, (uint64_t)a.table_entries * 4);
        cr_expect_eq(a.codes_bytes, (uint64_t)labels * 4);
      }
  }
}

/* Attention: the backend picked from the table, launches within the
   device's groups and local memory, host buffers within one allocation,
   f64 refused without fp64, and the build options a function of dtype and
   head dim alone. */
/* The directory's bits: 2^bits below the keys and at least half of them
   (one or two keys a bucket), none for 0 to 2 keys, never more than the
   hash keeps. */
Test(plan, directory_bits) {
  static const struct { int64_t entries; uint64_t mask; int bits; } cases[] = {
      {0, ~0ULL, 0},        {1, ~0ULL, 0},         {2, ~0ULL, 0},       {3, ~0ULL, 1},
      {4, ~0ULL, 1},        {5, ~0ULL, 2},         {100, ~0ULL, 6},     {128, ~0ULL, 6},
      {129, ~0ULL, 7},      {200000, ~0ULL, 17},   {(int64_t)1 << 40, ~0ULL, 30},
      {200000, 0x1FF, 9},   {200000, 0xFFFFF, 17}, {100, 0x7, 3},       {100, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int got = tabcl__catindex_dir_bits(cases[i].entries, cases[i].mask);
    cr_expect_eq(got, cases[i].bits, "%lld keys, mask %llx: %d bits, expected %d",
                 (long long)cases[i].entries, (unsigned long long)cases[i].mask, got,
                 cases[i].bits);
    if (cases[i].entries > 2 && cases[i].bits < 30 && cases[i].mask == ~0ULL)
      cr_expect(((int64_t)1 << got) < cases[i].entries &&
                ((int64_t)2 << got) >= cases[i].entries);
  }
}

Test(plan, attention_plans) {
  dev_case devs[8];
  int nd = make_devices(devs);
  static const int dims[] = {1, 16, 40, 64, 100, 128, 200, 256, 300};
  static const int64_t batches[] = {0, 1, 7, 65537, (int64_t)1 << 31};
  for (int i = 0; i < nd; i++) {
    const tabcl__device_desc *dev = &devs[i].d;
    tabcl__tuning tune = tuning_for(dev, NULL);
    tabcl__target tg = {dev, &tune, 0, 0};
    for (int cl = 0; cl < 2; cl++)
      for (int dt = TABCL_F32; dt <= TABCL_F64; dt++)
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
          char opts[256] = "";
          for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
            tabcl__sdpa_facts f = {cl, 1, 1, 0, 0};
            tabcl_sdpa_desc d = {batches[bi], 54, 54, 8, 2, dims[di], (tabcl_dtype)dt,
                                 0, 1, TABCL_MASK_BOOL, 1, 0, 0};
            tabcl__sdpa_plan p;
            tabcl_status s = tabcl__sdpa_plan_make(&tg, &f, &d, TABCL__SDPA_AUTO, &p);
            if (dt == TABCL_F64 && !dev->has_fp64) {
              cr_expect_eq(s, TABCL_UNSUPPORTED, "%s: f64", devs[i].what);
              continue;
            }
            if (s) {
              /* only a head dim no kernel holds, without CLBlast */
              cr_expect_eq(s, TABCL_UNSUPPORTED);
              cr_expect(!cl, "%s: head dim %d: %s", devs[i].what, dims[di], tabcl_last_error());
              continue;
            }
            cr_expect_leq(p.group, dev_wg_cap(dev), "%s: group %zu", devs[i].what, p.group);
            if (p.path == TABCL__SDPA_FUSED)
              cr_expect_leq(p.tiles.local_bytes, dev->local_mem_size);
            if (p.path == TABCL__SDPA_MMA) cr_expect(dev->is_nvidia);
            if (d.batch > 0) {
              cr_expect_geq(p.launch_step, 1);
              cr_expect_geq(p.host_step, 1);
              cr_expect_leq(p.host_step, d.batch);
              /* a host call's buffers fit one allocation unless one batch entry alone does not */
              if (p.host_step > 1) {
                cr_expect_leq(p.q_bytes, dev->max_mem_alloc_size);
                cr_expect_leq(p.kv_bytes, dev->max_mem_alloc_size);
              }
              /* launches stay inside the NDRange */
              if (p.path != TABCL__SDPA_CLBLAST)
                cr_expect_leq((uint64_t)p.launch_step * p.group * (uint64_t)p.query_tiles *
                                  (uint64_t)d.q_heads, (uint64_t)1 << 31);
            }
            if (!opts[0]) snprintf(opts, sizeof opts, "%s", p.options);
            cr_expect_str_eq(p.options, opts, "%s: options changed with the batch",
                             devs[i].what);
          }
        }
  }
}

/* The fused kernel's own work-group limit, once known, bounds the plan:
   a limit of 32 (as Mesa's llvmpipe reports for large kernels) still
   gives a fused plan, in groups of 32. */
Test(plan, kernel_limit_bounds_the_group) {
  dev_case devs[8];
  make_devices(devs);
  const tabcl__device_desc *dev = &devs[3].d;
  /* the fused kernel's plans: the CPU kernel off */
  tabcl__tuning tune = tuning_for(dev, "sdpa.cpu=0");
  tabcl__target tg = {dev, &tune, 0, 0};
  for (int dim = 16; dim <= 256; dim += 16) {
    tabcl__sdpa_facts f = {1, 1, 0, 32, 0};
    tabcl_sdpa_desc d = {3, 70, 70, 2, 1, dim, TABCL_F32, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
    tabcl__sdpa_plan p;
    cr_assert_eq(tabcl__sdpa_plan_make(&tg, &f, &d, TABCL__SDPA_AUTO, &p), TABCL_OK);
    if (dim <= 128) cr_expect_eq(p.path, TABCL__SDPA_FUSED, "head dim %d: %s", dim, p.backend);
    cr_expect_leq(p.group, 32, "head dim %d", dim);
  }
  /* a tile tuning that cannot run in 32 is refused, naming the entry */
  tabcl__tuning forced = tuning_for(dev, "sdpa.cpu=0;sdpa.fused.d64=64x32/2");
  tabcl__target tf = {dev, &forced, 0, 0};
  const tabcl__sdpa_facts f = {1, 1, 0, 32, 0};
  const tabcl_sdpa_desc d = {3, 70, 70, 2, 1, 64, TABCL_F32, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  expect_refused(&tf, &f, &d, TABCL_INVALID_ARGUMENT, "sdpa.fused.d64");
}

/* A device that ends a work-item's loops after `limit` iterations (Mesa
   22.3's llvmpipe: 65,535) gets the fused kernel's keys split into parts
   whose loops stay within half of it, the parts covering the keys once in
   whole key tiles with none empty, their scratch within a quarter of an
   allocation, and one build whatever the key count; no limit, no split. */
Test(plan, loop_limit_splits_the_keys) {
  dev_case devs[8];
  int nd = make_devices(devs);
  static const int64_t keys[] = {1, 100, 2048, 4096, 65536, 200000, (int64_t)1 << 24};
  static const uint64_t limits[] = {0, 65535, 20000};
  static const int dims[] = {16, 64, 128, 256};
  for (int i = 0; i < nd; i++) {
    const tabcl__device_desc *dev = &devs[i].d;
    /* one part unless the loop limit asks for more */
    tabcl__tuning tune = tuning_for(dev, "sdpa.split=1");
    tabcl__target tg = {dev, &tune, 0, 0};
    for (size_t li = 0; li < sizeof limits / sizeof limits[0]; li++)
      for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int causal = 0; causal < 2; causal++) {
          char opts[288] = "";
          for (size_t ki = 0; ki < sizeof keys / sizeof keys[0]; ki++) {
            tabcl__sdpa_facts f = {0, 0, 0, 0, limits[li]};
            tabcl_sdpa_desc d = {3, 8, keys[ki], 4, 2, dims[di], TABCL_F32, 0, causal,
                                 TABCL_MASK_NONE, 0, 0, 0};
            tabcl__sdpa_plan p;
            tabcl_status s = tabcl__sdpa_plan_make(&tg, &f, &d, TABCL__SDPA_FUSED, &p);
            if (s == TABCL_UNSUPPORTED) {
              /* the fused kernel does not fit this device at this head dim,
                 or the limit cannot hold one tile a part, or the merge */
              cr_expect(strstr(tabcl_last_error(), "local memory") ||
                            (limits[li] && strstr(tabcl_last_error(), "loops")),
                        "%s: %s", devs[i].what, tabcl_last_error());
              continue;
            }
            cr_assert_eq(s, TABCL_OK, "%s: %s", devs[i].what, tabcl_last_error());
            const tabcl__sdpa_keysplit *ks = &p.keys;
            cr_expect_eq(ks->loop_bound, tabcl__sdpa_fused_loops(&p.tiles, d.kv_len));
            const int split = ks->parts > 1;
            cr_expect_eq(split, limits[li] > 0 && ks->loop_bound > limits[li] / 2,
                         "%s: %lld keys, limit %llu", devs[i].what, (long long)d.kv_len,
                         (unsigned long long)limits[li]);
            /* the split is an argument: one program for every key count */
            cr_expect_null(strstr(p.options, "SPLIT"));
            if (!opts[0]) snprintf(opts, sizeof opts, "%s", p.options);
            cr_expect_str_eq(p.options, opts, "%s: options changed with the keys", devs[i].what);
            if (!split) {
              cr_expect_eq(ks->part_keys, d.kv_len);
              continue;
            }
            cr_expect_str_eq(ks->reason, "loop limit");
            cr_expect_eq(ks->part_keys % p.tiles.bk, 0);
            cr_expect_leq(tabcl__sdpa_fused_loops(&p.tiles, ks->part_keys), limits[li] / 2,
                          "%s: %lld keys a part", devs[i].what, (long long)ks->part_keys);
            /* the parts cover the keys, none empty */
            cr_expect_geq(ks->parts * ks->part_keys, d.kv_len);
            cr_expect_lt((ks->parts - 1) * ks->part_keys, d.kv_len);
            cr_expect_geq(p.launch_step, 1);
            cr_expect_geq(ks->qtile_step, 1);
            cr_expect_leq(ks->qtile_step * ks->parts,
                          tabcl__tuned(&tune, TABCL__TUNE_SDPA_GROUPS_YZ));
            cr_expect_leq(ks->part_bytes, dev->max_mem_alloc_size / 4);
          }
        }
  }
  /* a limit too small for one tile is refused, saying so */
  const tabcl__device_desc *cpu = &devs[3].d;
  tabcl__tuning tc = tuning_for(cpu, NULL);
  tabcl__target gc = {cpu, &tc, 0, 0};
  const tabcl__sdpa_facts f = {0, 0, 0, 0, 64};
  const tabcl_sdpa_desc d = {1, 8, 100000, 1, 1, 64, TABCL_F32, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  expect_refused(&gc, &f, &d, TABCL_UNSUPPORTED, "loops");
}

/* The key split that fills a device: the context call (512 queries over
   40,000 keys, 8 heads, d 64: 64 groups of 64 queries) splits on 132
   compute units until the groups are two a unit, not on 2 units; the
   parts never go under sdpa.split.keys keys; the sdpa.split tuning forces
   a count (more parts than key tiles too); llvmpipe's loop limit splits
   for the limit; the tensor-core kernel splits as the fused one. One
   program serves every split. */
Test(plan, key_split_fills_the_compute_units) {
  cr_expect_eq(tabcl__sdpa_split_rule(132, 64, 40000, 1024), 5);
  cr_expect_eq(tabcl__sdpa_split_rule(2, 64, 40000, 1024), 1);
  cr_expect_eq(tabcl__sdpa_split_rule(132, 64, 3000, 1024), 2);
  cr_expect_eq(tabcl__sdpa_split_rule(132, 64, 1000, 1024), 1);
  cr_expect_eq(tabcl__sdpa_split_rule(132, 264, 40000, 1024), 1);
  cr_expect_eq(tabcl__sdpa_split_rule(132, 0, 40000, 1024), 1);
  dev_case devs[8];
  make_devices(devs);
  const tabcl__device_desc *gpu = &devs[0].d, *cpu = &devs[3].d;
  cr_assert_eq(gpu->compute_units, 132);
  cr_assert_eq(cpu->compute_units, 2);
  const tabcl__sdpa_facts f = {0, 0, 0, 0, 0};
  for (int dt = TABCL_F32; dt <= TABCL_F64; dt++) {
    const tabcl_sdpa_desc d = {1, 512, 40000, 8, 8, 64, (tabcl_dtype)dt, 0, 0,
                               TABCL_MASK_BOOL, 1, 0, 0};
    tabcl__tuning tg_t = tuning_for(gpu, NULL);
    tabcl__target tg = {gpu, &tg_t, 0, 0};
    tabcl__sdpa_plan p, whole;
    cr_assert_eq(tabcl__sdpa_plan_make(&tg, &f, &d, TABCL__SDPA_AUTO, &p), TABCL_OK, "%s",
                 tabcl_last_error());
    cr_assert_eq(p.path, TABCL__SDPA_FUSED);
    const int64_t groups = d.batch * d.q_heads * p.query_tiles;
    cr_expect_gt(p.keys.parts, 1, "dtype %d: %lld groups on 132 units", dt, (long long)groups);
    cr_expect_geq(groups * p.keys.parts, 2 * 132);
    cr_expect_lt(groups * (p.keys.parts - 1), 2 * 132);
    cr_expect_str_eq(p.keys.reason, "fill");
    cr_expect_geq(p.keys.part_keys, 1024);
    cr_expect_eq(p.keys.part_keys % p.tiles.bk, 0);
    cr_expect_geq(p.keys.parts * p.keys.part_keys, d.kv_len);
    cr_expect_lt((p.keys.parts - 1) * p.keys.part_keys, d.kv_len);
    cr_expect_eq(p.keys.qtile_step, p.query_tiles);
    char text[1024];
    tabcl__sdpa_plan_print(&p, text, sizeof text);
    cr_expect(strstr(text, "parts of") && strstr(text, "merge"), "%s", text);
    /* the same program with one part */
    tabcl__tuning one = tuning_for(gpu, "sdpa.split=1");
    tabcl__target t1 = {gpu, &one, 0, 0};
    cr_assert_eq(tabcl__sdpa_plan_make(&t1, &f, &d, TABCL__SDPA_AUTO, &whole), TABCL_OK);
    cr_expect_eq(whole.keys.parts, 1);
    cr_expect_str_eq(whole.options, p.options);
    /* few keys a part: sdpa.split.keys bounds the parts */
    tabcl__tuning big = tuning_for(gpu, "sdpa.split.keys=16384");
    tabcl__target tb = {gpu, &big, 0, 0};
    cr_assert_eq(tabcl__sdpa_plan_make(&tb, &f, &d, TABCL__SDPA_AUTO, &whole), TABCL_OK);
    cr_expect_eq(whole.keys.parts, 2);
    /* 2 compute units: 64 groups are plenty */
    tabcl__tuning ct = tuning_for(cpu, "sdpa.cpu=0");
    tabcl__target tc = {cpu, &ct, 0, 0};
    cr_assert_eq(tabcl__sdpa_plan_make(&tc, &f, &d, TABCL__SDPA_AUTO, &whole), TABCL_OK);
    cr_expect_eq(whole.keys.parts, 1);
  }
  /* the tensor-core kernel (its check passed) splits the same call alike */
  const tabcl__sdpa_facts mma = {1, 1, 1, 0, 0};
  for (int dt = TABCL_F16; dt <= TABCL_BF16; dt++) {
    const tabcl_sdpa_desc d = {1, 512, 40000, 8, 8, 64, (tabcl_dtype)dt, 0, 0,
                               TABCL_MASK_BOOL, 1, 0, 0};
    tabcl__tuning tg_t = tuning_for(gpu, NULL);
    tabcl__target tg = {gpu, &tg_t, 0, 0};
    tabcl__sdpa_plan p;
    cr_assert_eq(tabcl__sdpa_plan_make(&tg, &mma, &d, TABCL__SDPA_AUTO, &p), TABCL_OK, "%s",
                 tabcl_last_error());
    cr_assert_eq(p.path, TABCL__SDPA_MMA, "dtype %d: %s", dt, p.backend);
    const int64_t groups = d.batch * d.q_heads * p.query_tiles;
    cr_expect_geq(groups * p.keys.parts, 2 * 132, "dtype %d: %lld parts", dt,
                  (long long)p.keys.parts);
    cr_expect_lt(groups * (p.keys.parts - 1), 2 * 132);
    cr_expect_str_eq(p.keys.reason, "fill");
    cr_expect_eq(p.keys.part_keys % p.mma.bk, 0);
    cr_expect_geq(p.keys.parts * p.keys.part_keys, d.kv_len);
    cr_expect_eq(p.keys.merge_rows, 16 * p.mma.nw * p.mma.mt);
    char text[1024];
    tabcl__sdpa_plan_print(&p, text, sizeof text);
    cr_expect(strstr(text, "parts of") && strstr(text, "merge"), "%s", text);
    tabcl__tuning one = tuning_for(gpu, "sdpa.split=1");
    tabcl__target t1 = {gpu, &one, 0, 0};
    tabcl__sdpa_plan whole;
    cr_assert_eq(tabcl__sdpa_plan_make(&t1, &mma, &d, TABCL__SDPA_AUTO, &whole), TABCL_OK);
    cr_expect_eq(whole.path, TABCL__SDPA_MMA);
    cr_expect_eq(whole.keys.parts, 1);
    cr_expect_str_eq(whole.options, p.options);
  }
  /* forced counts, also past the key tiles (empty parts) */
  static const int64_t forced[] = {2, 3, 7, 40};
  for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++) {
    char entry[48];
    snprintf(entry, sizeof entry, "sdpa.split=%lld", (long long)forced[i]);
    tabcl__tuning t = tuning_for(cpu, entry);
    tabcl__target tc = {cpu, &t, 0, 0};
    const tabcl_sdpa_desc d = {2, 70, 301, 4, 2, 64, TABCL_F32, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
    tabcl__sdpa_plan p;
    cr_assert_eq(tabcl__sdpa_plan_make(&tc, &f, &d, TABCL__SDPA_FUSED, &p), TABCL_OK);
    cr_expect_eq(p.keys.parts, forced[i], "%s", entry);
    cr_expect_str_eq(p.keys.reason, "tuning");
    const int64_t tiles = (d.kv_len + p.tiles.bk - 1) / p.tiles.bk;
    cr_expect_eq(p.keys.part_keys, (tiles + forced[i] - 1) / forced[i] * p.tiles.bk);
  }
  /* llvmpipe: a CPU whose driver ends loops after 65,535 iterations */
  tabcl__tuning lt = tuning_for(cpu, "sdpa.cpu=0");
  tabcl__target tl = {cpu, &lt, 0, 0};
  const tabcl__sdpa_facts lim = {0, 0, 0, 0, 65535};
  const tabcl_sdpa_desc d = {1, 512, 40000, 8, 8, 64, TABCL_F32, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  tabcl__sdpa_plan p;
  cr_assert_eq(tabcl__sdpa_plan_make(&tl, &lim, &d, TABCL__SDPA_AUTO, &p), TABCL_OK, "%s",
               tabcl_last_error());
  cr_expect_gt(p.keys.parts, 1);
  cr_expect_str_eq(p.keys.reason, "loop limit");
  cr_expect_leq(tabcl__sdpa_fused_loops(&p.tiles, p.keys.part_keys), 65535 / 2);
  /* and no more parts than the limit needs */
  const int64_t tiles = (d.kv_len + p.tiles.bk - 1) / p.tiles.bk;
  const int64_t fewer = (tiles + p.keys.parts - 2) / (p.keys.parts - 1);
  cr_expect_gt(tabcl__sdpa_fused_loops(&p.tiles, fewer * p.tiles.bk), 65535 / 2);
}

/* The tensor-core kernel takes f32 only up to TABCL__SDPA_MMA_F32_KEYS
   keys a row (its error grows with the row; sdpa_mma.c); f16 at any length. */
Test(plan, tensor_core_f32_rows_are_bounded) {
  dev_case devs[8];
  make_devices(devs);
  const tabcl__device_desc *nv = &devs[0].d;
  cr_assert(nv->is_nvidia);
  tabcl__tuning tn = tuning_for(nv, NULL);
  tabcl__target gn = {nv, &tn, 0, 0};
  tabcl__sdpa_facts passed = {1, 1, 1, 0, 0};
  static const int64_t keys[] = {1, 1024, 1025, 200000};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    for (int dt = TABCL_F32; dt <= TABCL_F16; dt++) {
      tabcl_sdpa_desc d = {1, 8, keys[i], 2, 1, 64, (tabcl_dtype)dt, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
      tabcl__sdpa_plan p;
      cr_assert_eq(tabcl__sdpa_plan_make(&gn, &passed, &d, TABCL__SDPA_AUTO, &p), TABCL_OK);
      const int mma = dt == TABCL_F16 || keys[i] <= TABCL__SDPA_MMA_F32_KEYS;
      cr_expect_eq(p.path == TABCL__SDPA_MMA, mma, "dtype %d, %lld keys: %s", dt,
                   (long long)keys[i], p.backend);
    }
}

/* The automatic choice follows the backend table: the tensor-core kernel
   only on NVIDIA and only after its check passed, the fused kernel where
   it fits, CLBlast past head dim 256. */
Test(plan, backend_table_order) {
  dev_case devs[8];
  make_devices(devs);
  const tabcl__device_desc *nv = &devs[0].d, *cpu = &devs[3].d;
  tabcl__tuning tn = tuning_for(nv, NULL), tc = tuning_for(cpu, NULL);
  tabcl__target gn = {nv, &tn, 0, 0}, gc = {cpu, &tc, 0, 0};
  tabcl_sdpa_desc d = {2, 54, 54, 8, 8, 64, TABCL_F16, 0, 0, TABCL_MASK_NONE, 0, 0, 0};
  tabcl__sdpa_plan p;
  tabcl__sdpa_facts passed = {1, 1, 1, 0, 0}, unchecked = {1, 1, 0, 0, 0}, off = {1, 0, 1, 0, 0};
  cr_assert_eq(tabcl__sdpa_plan_make(&gn, &passed, &d, TABCL__SDPA_AUTO, &p), TABCL_OK);
  cr_expect_eq(p.path, TABCL__SDPA_MMA);
  cr_assert_eq(tabcl__sdpa_plan_make(&gn, &unchecked, &d, TABCL__SDPA_AUTO, &p), TABCL_OK);
  cr_expect_eq(p.path, TABCL__SDPA_FUSED);
  cr_expect_eq(tabcl__sdpa_plan_make(&gn, &off, &d, TABCL__SDPA_MMA, &p), TABCL_UNSUPPORTED);
  cr_assert_eq(tabcl__sdpa_plan_make(&gc, &passed, &d, TABCL__SDPA_AUTO, &p), TABCL_OK);
  cr_expect_eq(p.path, TABCL__SDPA_CPU);
  cr_expect_eq(tabcl__sdpa_plan_make(&gc, &passed, &d, TABCL__SDPA_MMA, &p), TABCL_UNSUPPORTED);
  /* the CPU kernel only where the tuning gives it (CPUs), or forced */
  cr_expect_neq(tabcl__sdpa_plan_make(&gn, &unchecked, &d, TABCL__SDPA_AUTO, &p) == TABCL_OK &&
                    p.path == TABCL__SDPA_CPU, 1);
  cr_assert_eq(tabcl__sdpa_plan_make(&gn, &unchecked, &d, TABCL__SDPA_CPU, &p), TABCL_OK);
  cr_expect_eq(p.path, TABCL__SDPA_CPU);
  /* a loop limit the CPU kernel's work-items would pass hands the call to
     the fused kernel, which splits its keys */
  tabcl_sdpa_desc lng = d;
  lng.kv_len = 100000;
  tabcl__sdpa_facts limited = {1, 1, 1, 0, 65535};
  cr_assert_eq(tabcl__sdpa_plan_make(&gc, &limited, &lng, TABCL__SDPA_AUTO, &p), TABCL_OK);
  cr_expect_eq(p.path, TABCL__SDPA_FUSED);
  cr_expect_eq(tabcl__sdpa_plan_make(&gc, &limited, &lng, TABCL__SDPA_CPU, &p), TABCL_UNSUPPORTED);
  d.head_dim = 300;
  cr_assert_eq(tabcl__sdpa_plan_make(&gc, &passed, &d, TABCL__SDPA_AUTO, &p), TABCL_OK);
  cr_expect_eq(p.path, TABCL__SDPA_CLBLAST);
  tabcl__sdpa_facts noblas = {0, 1, 1, 0, 0};
  cr_expect_eq(tabcl__sdpa_plan_make(&gc, &noblas, &d, TABCL__SDPA_AUTO, &p), TABCL_UNSUPPORTED);
}

/* The threads of tabcl__lookup_route's plan, checked against its route:
   0 the device, 1 the calling thread, more the worker pool. */
static int route_threads(const tabcl__target *t, int64_t rows, int64_t bytes, int64_t index) {
  const tabcl__route_plan p = tabcl__lookup_route(t, rows, bytes, index);
  const tabcl__route want = p.threads == 0   ? TABCL__ROUTE_DEVICE
                            : p.threads == 1 ? TABCL__ROUTE_CALLER
                                             : TABCL__ROUTE_WORKERS;
  cr_expect_eq(p.route, want, "route %s with %d threads", tabcl__route_name(p.route), p.threads);
  return p.threads;
}

/* Small fits on the calling thread: CPUs only (fit.host_labels). Host
   lookups and aligns on the host (lookup.host_rows, lookup.host_threads):
   CPUs and NVIDIA GPUs, within the row and byte bounds and, beside a GPU,
   for indexes within lookup.host_index (256 MiB); never where the override
   sets the keys to 0. */
Test(plan, calls_on_the_host_by_device_kind) {
  dev_case devs[8];
  int nd = make_devices(devs);
  for (int i = 0; i < nd; i++) {
    const tabcl__device_desc *dev = &devs[i].d;
    for (int off = 0; off < 2; off++) {
      tabcl__tuning tune = tuning_for(dev, off ? "fit.host_labels=0;lookup.host_rows=0;lookup.host_threads=0" : NULL);
      tabcl__target tg = {dev, &tune, 0, 12};
      const int cpu = dev->is_cpu && !off;
      const int host = (dev->is_cpu || (dev->is_gpu && dev->is_nvidia)) && !off;
      tabcl__fit_plan p;
      tabcl__fit_plan_make(&tg, 100, 100, 800, 100, 100, 0, 8, 0, &p);
      cr_expect_eq(p.route == TABCL__ROUTE_CALLER, cpu, "%s, off %d: a fit of 100 labels", devs[i].what, off);
      tabcl__fit_plan_make(&tg, 16384, 16384, 16384 * 8, 16384, 16384, 0, 8, 0, &p);
      cr_expect_eq(p.route == TABCL__ROUTE_CALLER, cpu, "%s, off %d: a fit of 16,384 labels", devs[i].what, off);
      tabcl__fit_plan_make(&tg, 1048576, 1048576, 1048576 * 4, 1048576, 1048576, 0, 4, 0, &p);
      cr_expect_eq(p.route == TABCL__ROUTE_CALLER, cpu, "%s, off %d: a fit of 1,048,576 labels", devs[i].what, off);
      tabcl__fit_plan_make(&tg, 1048577, 1048577, 1048577 * 4, 1048577, 1048577, 0, 4, 0, &p);
      cr_expect_eq(p.route == TABCL__ROUTE_CALLER, 0, "%s: a fit of 1,048,577 labels", devs[i].what);
      tabcl__fit_plan_make(&tg, 1000, 1000, 1000 * 4096, 1000, 1000, 0, 4096, 0, &p);
      cr_expect_eq(p.route == TABCL__ROUTE_CALLER, cpu, "%s, off %d: a fit of 4 MB of labels", devs[i].what, off);
      tabcl__fit_plan_make(&tg, 2000, 2000, 2000 * 4096, 2000, 2000, 0, 4096, 0, &p);
      cr_expect_eq(p.route == TABCL__ROUTE_CALLER, 0, "%s: a fit of 8 MB of labels", devs[i].what);
      cr_expect_eq(tabcl__lookup_on_host(&tg, 500, 32000), host, "%s, off %d", devs[i].what, off);
      const int64_t most = 512 * TABCL__LOOKUP_HOST_ROW_BYTES;
      cr_expect_eq(tabcl__lookup_on_host(&tg, 512, most), host, "%s", devs[i].what);
      cr_expect_eq(tabcl__lookup_on_host(&tg, 100, 100 * 512), host, "%s: 512 B labels",
                   devs[i].what);
      cr_expect_eq(tabcl__lookup_on_host(&tg, 513, 513), 0, "%s", devs[i].what);
      cr_expect_eq(tabcl__lookup_on_host(&tg, 100, most + 1), 0, "%s", devs[i].what);
      /* past those bounds: a thread a compute unit on CPUs, a thread a host
         core (12 here) beside an NVIDIA GPU (lookup.host_threads), the
         device's kernels elsewhere and where the override sets 0 */
      const int units = dev->compute_units < 1 ? 1
                        : dev->compute_units > TABCL__LOOKUP_HOST_THREADS_MAX
                            ? TABCL__LOOKUP_HOST_THREADS_MAX
                            : (int)dev->compute_units;
      const int past = !host ? 0 : dev->is_cpu ? units : 12;
      const int64_t small = 1 << 20, big = (int64_t)1 << 40;
      cr_expect_eq(route_threads(&tg, 500, 32000, small), host, "%s, off %d",
                   devs[i].what, off);
      cr_expect_eq(route_threads(&tg, 16385, 16385, small), past, "%s, off %d",
                   devs[i].what, off);
      cr_expect_eq(route_threads(&tg, 100, most + 1, small), past,
                   "%s, off %d: 656 B rows", devs[i].what, off);
      cr_expect_eq(route_threads(&tg, 100000000, 800000000, small), past,
                   "%s, off %d", devs[i].what, off);
      /* lookup.host_index: any index on a CPU (its tables are the host's
         memory), up to 256 MiB beside a GPU (a copy of the index) */
      const int64_t gpu_most = (int64_t)256 << 20;
      cr_expect_eq(route_threads(&tg, 100000, 800000, gpu_most), past, "%s, off %d",
                   devs[i].what, off);
      cr_expect_eq(route_threads(&tg, 100000, 800000, gpu_most + 1),
                   dev->is_cpu ? past : 0, "%s, off %d: an index past 256 MiB", devs[i].what, off);
      cr_expect_eq(route_threads(&tg, 500, 32000, big), dev->is_cpu ? host : 0,
                   "%s, off %d: an index of 1 TiB", devs[i].what, off);
    }
    /* the override's count, on any device, and its index bound */
    tabcl__tuning tune = tuning_for(dev, "lookup.host_threads=5;lookup.host_index=1000");
    tabcl__target tg = {dev, &tune, 0, 12};
    cr_expect_eq(route_threads(&tg, 100000, 800000, 1000), 5, "%s", devs[i].what);
    cr_expect_eq(route_threads(&tg, 100000, 800000, 1001), 0, "%s", devs[i].what);
    /* an align's passes over its rows: one thread below 16,384 rows, the
       override's count from there, whatever the index; 0 counts as 1 */
    cr_expect_eq(tabcl__align_row_threads(&tg, TABCL__ALIGN_ROWS_THREADED - 1), 1, "%s",
                 devs[i].what);
    cr_expect_eq(tabcl__align_row_threads(&tg, TABCL__ALIGN_ROWS_THREADED), 5, "%s", devs[i].what);
    tabcl__tuning none = tuning_for(dev, "lookup.host_threads=0");
    tabcl__target tn = {dev, &none, 0, 12};
    cr_expect_eq(tabcl__align_row_threads(&tn, 1000000), 1, "%s", devs[i].what);
  }
}

/* The implementation behind a device, from its platform and vendor alone:
   CPU runtimes name their device after the CPU, so the name says nothing. */
Test(plan, implementation_from_platform_and_vendor) {
  const cl_device_type cpu = CL_DEVICE_TYPE_CPU, gpu = CL_DEVICE_TYPE_GPU;
  cr_expect_eq(tabcl__device_impl("Intel(R) OpenCL", "Intel(R) Corporation", cpu),
               TABCL__IMPL_INTEL_CPU);
  cr_expect_eq(tabcl__device_impl("Portable Computing Language", "AuthenticAMD", cpu),
               TABCL__IMPL_POCL);
  cr_expect_eq(tabcl__device_impl("rusticl", "Mesa/X.org", cpu), TABCL__IMPL_RUSTICL);
  /* Intel's GPU runtime, and Intel CPUs under other runtimes, are not it */
  cr_expect_eq(tabcl__device_impl("Intel(R) OpenCL Graphics", "Intel(R) Corporation", gpu),
               TABCL__IMPL_OTHER);
  cr_expect_eq(tabcl__device_impl("Portable Computing Language", "GenuineIntel", cpu),
               TABCL__IMPL_POCL);
  cr_expect_eq(tabcl__device_impl("NVIDIA CUDA", "NVIDIA Corporation", gpu), TABCL__IMPL_OTHER);
  cr_expect_eq(tabcl__device_impl("", "", cpu), TABCL__IMPL_OTHER);
}

static tabcl__device_desc cpu_runtime(const char *platform, const char *vendor) {
  tabcl__device_desc d = make_dev("AMD EPYC", 0, vendor, 8192, 256 * KiB, 8 * GiB, 1, 2);
  snprintf(d.platform_name, sizeof d.platform_name, "%s", platform);
  d.impl = tabcl__device_impl(platform, vendor, d.type);
  return d;
}

/* Vendor rows reach Intel's CPU runtime through the implementation, not
   the device's name (which is the CPU's on PoCL too), and no other CPU
   runtime; Intel's GPUs keep their own rows. */
Test(plan, vendor_rows_match_the_cpu_runtime) {
  const tabcl__device_desc intel = cpu_runtime("Intel(R) OpenCL", "Intel(R) Corporation"),
                           pocl = cpu_runtime("Portable Computing Language", "GenuineIntel"),
                           llvm = cpu_runtime("rusticl", "Mesa/X.org");
  const tabcl__device_desc igpu = make_dev("mid gpu", 1, "Intel(R) Corporation", 1024, 64 * KiB,
                                           1 * GiB, 0, 32);
  cr_expect_gt(tabcl__tune_row_rank("cpu", "intel", NULL, NULL, &intel),
               tabcl__tune_row_rank("cpu", NULL, NULL, NULL, &intel));
  cr_expect_eq(tabcl__tune_row_rank("cpu", "intel", NULL, NULL, &pocl), -1);
  cr_expect_eq(tabcl__tune_row_rank(NULL, "intel", NULL, NULL, &llvm), -1);
  cr_expect_eq(tabcl__tune_row_rank("gpu", "intel", NULL, NULL, &intel), -1);
  cr_expect_gt(tabcl__tune_row_rank("gpu", "intel", NULL, NULL, &igpu), 0);
  cr_expect_eq(tabcl__tune_row_rank("cpu", "intel", NULL, NULL, &igpu), -1);
  cr_expect_gt(tabcl__tune_row_rank("cpu", "pocl", NULL, NULL, &pocl), 0);
  cr_expect_eq(tabcl__tune_row_rank("cpu", "pocl", NULL, NULL, &intel), -1);
  cr_expect_gt(tabcl__tune_row_rank("cpu", "rusticl", NULL, NULL, &llvm), 0);
  /* What cl-probe --plan prints on Intel's runtime: the CPU rows, as on
     PoCL (bench/RESULTS.md, "Intel's CPU runtime beside PoCL and
     llvmpipe": no knob measured wanted another value there). */
  tabcl__tuning ti = tuning_for(&intel, NULL), tp = tuning_for(&pocl, NULL);
  cr_expect_eq(memcmp(ti.value, tp.value, sizeof ti.value), 0);
  char text[256];
  tabcl__tune_describe(&ti, TABCL__TUNE_SORT_SERIAL, text, sizeof text);
  cr_expect(strncmp(text, "4 (table; ", 10) == 0 && strstr(text, "sort.serial"), "%s", text);
}
