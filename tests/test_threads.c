/* Concurrency: one context and one index used from 8 threads at once, with
 * lookups, aligns and attention calls (both attention paths) interleaved,
 * must give exactly the results of the same calls made from one thread
 * (which are checked against host references first). Also: fits, saves and
 * loads from many threads on one context; first use of a fresh context from
 * many threads (each program built once); saving the shared index while
 * others use it; eight contexts filling one disk-cache folder at once;
 * tabcl_last_error per thread; the
 * self-checks from many threads at once. */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rel_common.h"
#include "attention/sdpa.h"

#define NTHREADS 8
#define NCOLS 3
#define ROUNDS 2

enum { K_LOOKUP, K_ALIGN, K_SDPA, K_SDPA_BLAST };

typedef struct task {
  int kind;
  tt_strings q[NCOLS];              /* lookup queries or align categories */
  int32_t *in_codes[NCOLS];         /* align inputs */
  int64_t rows[NCOLS];
  int32_t *expect[NCOLS];           /* single-thread results */
  rel_sdpa_case sc;
  void *expect_out;
  size_t out_bytes;
} task;

typedef struct shared {
  tabcl_context *ctx;
  tabcl_category_index *idx;
  tt_strings vocab[NCOLS];
  catref ref[NCOLS];
  task *tasks;
  int ntasks;
  pthread_barrier_t start, errors_set;
  char dir[512];
} shared;

typedef struct worker {
  shared *sh;
  int id;
  long mismatches, failures, error_text_wrong, fit_wrong;
  char first_problem[512];
} worker;

static void note(worker *w, const char *fmt, const char *a, int b) {
  if (!w->first_problem[0]) snprintf(w->first_problem, sizeof w->first_problem, fmt, a, b);
}

/* Runs task t into the given outputs; returns the status. */
static tabcl_status run_task(shared *sh, task *t, int32_t **codes, void *out) {
  switch (t->kind) {
    case K_LOOKUP: {
      tabcl_strings_view q[NCOLS];
      for (int c = 0; c < NCOLS; c++) q[c] = tt_view(&t->q[c]);
      return tabcl_category_index_lookup(sh->idx, NCOLS, q, codes);
    }
    case K_ALIGN: {
      tabcl_dictionary_view d[NCOLS];
      for (int c = 0; c < NCOLS; c++) {
        d[c].categories = tt_view(&t->q[c]);
        d[c].length = t->rows[c];
        d[c].codes = t->in_codes[c];
      }
      return tabcl_category_index_align(sh->idx, NCOLS, d, codes);
    }
    default:
      return tabcl__sdpa_host_path(sh->ctx, &t->sc.d, t->sc.q, t->sc.k, t->sc.v,
                                   t->sc.mask, out,
                                   t->kind == K_SDPA ? TABCL__SDPA_AUTO : TABCL__SDPA_CLBLAST);
  }
}

static void make_tasks(shared *sh, tt_rng *r) {
  sh->ntasks = 24;
  sh->tasks = calloc((size_t)sh->ntasks, sizeof *sh->tasks);
  static const tabcl_dtype dts[] = {TABCL_F32, TABCL_F16, TABCL_BF16, TABCL_F64};
  for (int i = 0; i < sh->ntasks; i++) {
    task *t = &sh->tasks[i];
    t->kind = i % 4 == 0 ? K_LOOKUP : i % 4 == 1 ? K_ALIGN : i % 4 == 2 ? K_SDPA
            : i % 8 == 3 ? K_SDPA_BLAST : K_LOOKUP;
    if (t->kind == K_LOOKUP || t->kind == K_ALIGN) {
      for (int c = 0; c < NCOLS; c++) {
        int64_t n = 1 + (int64_t)tt_below(r, 300);
        /* half the queries come from the vocabulary, so most hit */
        uint8_t buf[640];
        tt_strings_init(&t->q[c], (int64_t)tt_below(r, 3));
        tabcl_strings_view v = tt_view(&sh->vocab[c]);
        for (int64_t k = 0; k < n; k++) {
          if (tt_below(r, 10) == 0) {
            tt_strings_push_null(&t->q[c]);
          } else if (tt_below(r, 2) && v.length) {
            size_t len;
            const uint8_t *p = tt_label(&v, (int64_t)tt_below(r, (uint64_t)v.length), &len);
            if (p) tt_strings_push(&t->q[c], p, len);
            else tt_strings_push(&t->q[c], "", 0);
          } else {
            size_t len = rel_label(r, buf);
            tt_strings_push(&t->q[c], buf, len);
          }
        }
        t->rows[c] = t->kind == K_LOOKUP ? n : 1 + (int64_t)tt_below(r, 500);
        t->expect[c] = malloc((size_t)t->rows[c] * sizeof(int32_t));
        if (t->kind == K_ALIGN) {
          t->in_codes[c] = malloc((size_t)t->rows[c] * sizeof(int32_t));
          for (int64_t k = 0; k < t->rows[c]; k++)
            t->in_codes[c][k] = (int32_t)tt_below(r, (uint64_t)n + 1) - 1;
        }
      }
    } else {
      tabcl_sdpa_desc d = {0};
      d.batch = 1 + (int64_t)tt_below(r, 3);
      d.q_len = 1 + (int64_t)tt_below(r, 40);
      d.kv_len = (int64_t)tt_below(r, 50);
      d.kv_heads = 1 + (int)tt_below(r, 2);
      d.q_heads = d.kv_heads * (1 + (int)tt_below(r, 2));
      static const int dims[] = {8, 16, 24, 32};   /* two kernel configurations */
      d.head_dim = dims[tt_below(r, 4)];
      d.dtype = t->kind == K_SDPA_BLAST ? (i % 16 == 3 ? TABCL_F32 : TABCL_F64)
                                        : dts[(i / 4) % 4];
      /* f64 without fp64 is TABCL_UNSUPPORTED (test_sdpa checks that); such
         a device (llvmpipe, most mobile GPUs) runs these tasks in f32 */
      if (d.dtype == TABCL_F64 && !sh->ctx->info.has_fp64) d.dtype = TABCL_F32;
      d.causal = (int)tt_below(r, 2);
      d.mask = (tabcl_mask_kind)tt_below(r, 3);
      d.mask_batch_broadcast = (int)tt_below(r, 2);
      d.mask_head_broadcast = (int)tt_below(r, 2);
      rel_sdpa_case_make(r, &t->sc, d);
      t->out_bytes = t->sc.nq * tabcl__sdpa_elem_size(d.dtype);
      t->expect_out = malloc(t->out_bytes + 1);
    }
  }
}

static void free_tasks(shared *sh) {
  for (int i = 0; i < sh->ntasks; i++) {
    task *t = &sh->tasks[i];
    for (int c = 0; c < NCOLS; c++) {
      tt_strings_free(&t->q[c]);
      free(t->in_codes[c]);
      free(t->expect[c]);
    }
    rel_sdpa_case_free(&t->sc);
    free(t->expect_out);
  }
  free(sh->tasks);
}

/* One thread, in order: the expected results, checked against references. */
static void single_thread_pass(shared *sh) {
  for (int i = 0; i < sh->ntasks; i++) {
    task *t = &sh->tasks[i];
    tabcl_status s = run_task(sh, t, t->expect, t->expect_out);
    cr_assert_eq(s, TABCL_OK, "task %d (kind %d): %s: %s", i, t->kind, tabcl_status_name(s),
                 tabcl_last_error());
    if (t->kind == K_LOOKUP || t->kind == K_ALIGN) {
      for (int c = 0; c < NCOLS; c++) {
        int32_t *want = malloc((size_t)t->rows[c] * sizeof *want);
        tabcl_strings_view q = tt_view(&t->q[c]);
        if (t->kind == K_LOOKUP) {
          catref_lookup(&sh->ref[c], &q, want);
        } else {
          tabcl_dictionary_view d = {q, t->rows[c], t->in_codes[c]};
          catref_align(&sh->ref[c], &d, want);
        }
        for (int64_t k = 0; k < t->rows[c]; k++)
          cr_assert_eq(t->expect[c][k], want[k], "task %d column %d row %lld: %d, reference %d",
                       i, c, (long long)k, t->expect[c][k], want[k]);
        free(want);
      }
    } else {
      double *ref = malloc((t->sc.nq + 1) * sizeof *ref);
      tt_sdpa_reference(&t->sc.d, t->sc.q, t->sc.k, t->sc.v, t->sc.mask, ref, NULL);
      memcpy(t->sc.out, t->expect_out, t->out_bytes);
      double err = rel_sdpa_error(&t->sc, ref);
      cr_assert_leq(err, rel_sdpa_tol(t->sc.d.dtype), "task %d (attention, dtype %d): error %g",
                    i, (int)t->sc.d.dtype, err);
      free(ref);
    }
  }
}

static void *work(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  int32_t *codes[NCOLS];
  for (int c = 0; c < NCOLS; c++) codes[c] = malloc(600 * sizeof(int32_t));
  size_t maxout = 0;
  for (int i = 0; i < sh->ntasks; i++)
    if (sh->tasks[i].out_bytes > maxout) maxout = sh->tasks[i].out_bytes;
  unsigned char *out = malloc(maxout + 1);

  pthread_barrier_wait(&sh->start);
  /* Each thread takes the tasks in its own order: a rotation and a stride
     coprime to the count, so neighbours run different kinds at once. */
  for (int round = 0; round < ROUNDS; round++) {
    for (int j = 0; j < sh->ntasks; j++) {
      int i = (w->id * 5 + j * (round ? 7 : 5)) % sh->ntasks;
      task *t = &sh->tasks[i];
      tabcl_status s = run_task(sh, t, codes, out);
      if (s != TABCL_OK) {
        w->failures++;
        note(w, "a call failed: %s (task %d)", tabcl_last_error(), i);
        continue;
      }
      if (t->kind == K_LOOKUP || t->kind == K_ALIGN) {
        for (int c = 0; c < NCOLS; c++)
          if (memcmp(codes[c], t->expect[c], (size_t)t->rows[c] * sizeof(int32_t))) {
            w->mismatches++;
            note(w, "%s differs from one thread's (task %d)",
                 t->kind == K_LOOKUP ? "lookup" : "align", i);
          }
      } else if (memcmp(out, t->expect_out, t->out_bytes)) {
        w->mismatches++;
        note(w, "%s differs from one thread's (task %d)", "attention", i);
      }
    }
  }

  /* tabcl_last_error is per thread: every thread fails differently, waits
     until all have, then finds its own message. */
  tabcl_strings_view q[1] = {{0, NULL, NULL, NULL}};
  tabcl_category_index_lookup(sh->idx, 100 + w->id, q, codes);
  pthread_barrier_wait(&sh->errors_set);
  char want[64];
  snprintf(want, sizeof want, "ncols is %d;", 100 + w->id);
  if (!strstr(tabcl_last_error(), want)) {
    w->error_text_wrong++;
    note(w, "thread's last error is \"%s\" (%d)", tabcl_last_error(), w->id);
  }

  /* Fit, save and load on the shared context, each thread its own index. */
  tabcl_strings_view v[NCOLS];
  for (int c = 0; c < NCOLS; c++) v[c] = tt_view(&sh->vocab[c]);
  tabcl_category_index *mine = NULL, *back = NULL;
  char path[700];
  snprintf(path, sizeof path, "%s/t%d.idx", sh->dir, w->id);
  /* The shared index is saved (by odd threads) while even threads look up
     in it. */
  for (int k = 0; w->id % 2 == 0 && k < 3; k++) {
    task *t = &sh->tasks[0];
    if (run_task(sh, t, codes, out)) {
      w->failures++;
      continue;
    }
    for (int c = 0; c < NCOLS; c++)
      if (memcmp(codes[c], t->expect[c], (size_t)t->rows[c] * sizeof(int32_t))) {
        w->mismatches++;
        note(w, "%s differs from one thread's (task %d)", "lookup during saves", 0);
      }
  }
  if (tabcl_category_index_fit(sh->ctx, NCOLS, v, TABCL_CODES_BY_VALUE, &mine) ||
      tabcl_category_index_save(w->id % 2 ? sh->idx : mine, path) ||
      tabcl_category_index_load(sh->ctx, path, &back)) {
    w->failures++;
    note(w, "fit/save/load failed: %s (%d)", tabcl_last_error(), w->id);
  } else {
    task *t = &sh->tasks[0];   /* a lookup task */
    tabcl_strings_view qq[NCOLS];
    for (int c = 0; c < NCOLS; c++) qq[c] = tt_view(&t->q[c]);
    tabcl_category_index *both[2] = {mine, back};
    for (int k = 0; k < 2; k++) {
      if (tabcl_category_index_lookup(both[k], NCOLS, qq, codes)) {
        w->failures++;
        continue;
      }
      for (int c = 0; c < NCOLS; c++)
        if (memcmp(codes[c], t->expect[c], (size_t)t->rows[c] * sizeof(int32_t))) {
          w->fit_wrong++;
          note(w, "a thread's own %s index answers differently (%d)", k ? "loaded" : "fitted",
               w->id);
        }
    }
  }
  tabcl_category_index_destroy(mine);
  tabcl_category_index_destroy(back);
  for (int c = 0; c < NCOLS; c++) free(codes[c]);
  free(out);
  return NULL;
}

static void setup(shared *sh, tt_rng *r) {
  memset(sh, 0, sizeof *sh);
  sh->ctx = tt_context();
  for (int c = 0; c < NCOLS; c++) {
    rel_column(r, &sh->vocab[c], 50 + 150 * c, 8);
    tabcl_strings_view v = tt_view(&sh->vocab[c]);
    catref_build(&sh->ref[c], &v, TABCL_CODES_BY_VALUE);
  }
  tabcl_strings_view v[NCOLS];
  for (int c = 0; c < NCOLS; c++) v[c] = tt_view(&sh->vocab[c]);
  tt_assert_ok(tabcl_category_index_fit(sh->ctx, NCOLS, v, TABCL_CODES_BY_VALUE, &sh->idx));
  char *dir = tt_temp_dir("threads");
  snprintf(sh->dir, sizeof sh->dir, "%s", dir);
  free(dir);
}

static void teardown(shared *sh) {
  tabcl_category_index_destroy(sh->idx);
  for (int c = 0; c < NCOLS; c++) {
    tt_strings_free(&sh->vocab[c]);
    catref_free(&sh->ref[c]);
  }
  tt_remove_tree(sh->dir);
  tabcl_context_destroy(sh->ctx);
}

Test(threads, eight_threads_match_one) {
  tt_rng r = {tt_seed("threads/eight_threads_match_one")};
  shared sh;
  setup(&sh, &r);
  make_tasks(&sh, &r);
  single_thread_pass(&sh);
  tt_live base = tt_live_now();
  pthread_barrier_init(&sh.start, NULL, NTHREADS);
  pthread_barrier_init(&sh.errors_set, NULL, NTHREADS);
  worker w[NTHREADS];
  pthread_t th[NTHREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < NTHREADS; i++) {
    w[i].sh = &sh;
    w[i].id = i;
    cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++) {
    cr_expect_eq(w[i].failures, 0, "thread %d: %ld calls failed; first: %s", i, w[i].failures,
                 w[i].first_problem);
    cr_expect_eq(w[i].mismatches, 0, "thread %d: %ld results differ; first: %s", i,
                 w[i].mismatches, w[i].first_problem);
    cr_expect_eq(w[i].error_text_wrong, 0, "thread %d: %s", i, w[i].first_problem);
    cr_expect_eq(w[i].fit_wrong, 0, "thread %d: %s", i, w[i].first_problem);
  }
  tt_expect_no_leak(base);
  pthread_barrier_destroy(&sh.start);
  pthread_barrier_destroy(&sh.errors_set);
  free_tasks(&sh);
  teardown(&sh);
}

/* A fresh context's first calls from 8 threads at once: every program is
   built (or loaded) once, as in a one-thread run, and every thread's fit
   and lookup are right. */
typedef struct first_use {
  tabcl_context *ctx;
  shared *sh;
  task *t;
  pthread_barrier_t *start;
  int ok;
  char msg[300];
} first_use;

static void *first_use_work(void *arg) {
  first_use *f = arg;
  pthread_barrier_wait(f->start);
  tabcl_strings_view v[NCOLS], q[NCOLS];
  for (int c = 0; c < NCOLS; c++) {
    v[c] = tt_view(&f->sh->vocab[c]);
    q[c] = tt_view(&f->t->q[c]);
  }
  tabcl_category_index *idx = NULL;
  int32_t *codes[NCOLS];
  for (int c = 0; c < NCOLS; c++) codes[c] = malloc(600 * sizeof(int32_t));
  f->ok = tabcl_category_index_fit(f->ctx, NCOLS, v, TABCL_CODES_BY_VALUE, &idx) == TABCL_OK &&
          tabcl_category_index_lookup(idx, NCOLS, q, codes) == TABCL_OK;
  if (!f->ok) snprintf(f->msg, sizeof f->msg, "%s", tabcl_last_error());
  for (int c = 0; f->ok && c < NCOLS; c++)
    if (memcmp(codes[c], f->t->expect[c], (size_t)f->t->rows[c] * sizeof(int32_t))) {
      f->ok = 0;
      snprintf(f->msg, sizeof f->msg, "column %d differs", c);
    }
  tabcl_category_index_destroy(idx);
  for (int c = 0; c < NCOLS; c++) free(codes[c]);
  return NULL;
}

Test(threads, fresh_context_first_use) {
  tt_rng r = {tt_seed("threads/fresh_context_first_use")};
  shared sh;
  setup(&sh, &r);
  make_tasks(&sh, &r);
  single_thread_pass(&sh);
  tabcl_stats one, many;
  {
    tabcl_context *c1 = tt_context();
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 1);
    first_use f = {c1, &sh, &sh.tasks[0], &b, 0, ""};
    first_use_work(&f);
    cr_assert(f.ok, "one thread: %s", f.msg);
    tabcl_context_stats(c1, &one);
    tabcl_context_destroy(c1);
    pthread_barrier_destroy(&b);
  }
  tabcl_context *c8 = tt_context();
  pthread_barrier_t b;
  pthread_barrier_init(&b, NULL, NTHREADS);
  first_use f[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    f[i] = (first_use){c8, &sh, &sh.tasks[0], &b, 0, ""};
    cr_assert_eq(pthread_create(&th[i], NULL, first_use_work, &f[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++) cr_expect(f[i].ok, "thread %d: %s", i, f[i].msg);
  tabcl_context_stats(c8, &many);
  cr_expect_eq(many.programs_built + many.programs_from_cache,
               one.programs_built + one.programs_from_cache,
               "8 threads made %llu programs, one thread %llu",
               (unsigned long long)(many.programs_built + many.programs_from_cache),
               (unsigned long long)(one.programs_built + one.programs_from_cache));
  cr_expect_eq(many.kernel_launches, one.kernel_launches * NTHREADS,
               "launches: %llu from 8 threads, %llu from one",
               (unsigned long long)many.kernel_launches, (unsigned long long)one.kernel_launches);
  pthread_barrier_destroy(&b);
  tabcl_context_destroy(c8);
  free_tasks(&sh);
  teardown(&sh);
}

/* Eight contexts on one fresh disk-cache folder, first used from eight
   threads at once, all build and store the same programs together: the
   folder must end with whole entries only (no temporary file left, and a
   ninth context loads every program from it, building none). */
static int has_temp_file(const char *dir) {
  DIR *d = opendir(dir);
  int found = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".tmp.")) found = 1;
  if (d) closedir(d);
  return found;
}

Test(threads, contexts_share_cache_folder) {
  tt_rng r = {tt_seed("threads/contexts_share_cache_folder")};
  shared sh;
  setup(&sh, &r);
  make_tasks(&sh, &r);
  single_thread_pass(&sh);
  char *dir = tt_temp_dir("threads-cache");
  tabcl_options o = {0};
  o.cache_dir = dir;
  tabcl_context *ctx[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) ctx[i] = tt_context_with(&o);
  pthread_barrier_t b;
  pthread_barrier_init(&b, NULL, NTHREADS);
  first_use f[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    f[i] = (first_use){ctx[i], &sh, &sh.tasks[0], &b, 0, ""};
    cr_assert_eq(pthread_create(&th[i], NULL, first_use_work, &f[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  tabcl_stats first;
  tabcl_context_stats(ctx[0], &first);
  for (int i = 0; i < NTHREADS; i++) {
    cr_expect(f[i].ok, "thread %d: %s", i, f[i].msg);
    tabcl_context_destroy(ctx[i]);
  }
  pthread_barrier_destroy(&b);
  cr_expect(!has_temp_file(dir), "a temporary file was left in %s", dir);

  tabcl_context *again = tt_context_with(&o);
  pthread_barrier_t one;
  pthread_barrier_init(&one, NULL, 1);
  first_use g = {again, &sh, &sh.tasks[0], &one, 0, ""};
  first_use_work(&g);
  cr_expect(g.ok, "ninth context: %s", g.msg);
  tabcl_stats st;
  tabcl_context_stats(again, &st);
  cr_expect_eq(st.programs_built, 0, "the ninth context built %llu programs; the cache should "
               "have held them all", (unsigned long long)st.programs_built);
  cr_expect_eq(st.programs_from_cache, first.programs_built + first.programs_from_cache,
               "the ninth context loaded %llu programs, the first needed %llu",
               (unsigned long long)st.programs_from_cache,
               (unsigned long long)(first.programs_built + first.programs_from_cache));
  pthread_barrier_destroy(&one);
  tabcl_context_destroy(again);
  tt_remove_tree(dir);
  free(dir);
  free_tasks(&sh);
  teardown(&sh);
}

/* tabcl_selfcheck_run takes a context, so it too may run on many threads. */
typedef struct sc_arg {
  tabcl_context *ctx;
  pthread_barrier_t *start;
  int failures;
  char msg[300];
} sc_arg;

static void *selfcheck_work(void *arg) {
  sc_arg *a = arg;
  pthread_barrier_wait(a->start);
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < tabcl_selfcheck_count(); i++) {
      tabcl_status s = tabcl_selfcheck_run(a->ctx, i);
      if (!tt_selfcheck_passed(a->ctx, i, s) && !a->failures++)
        snprintf(a->msg, sizeof a->msg, "%s: %s", tabcl_selfcheck_name(i), tabcl_last_error());
    }
  return NULL;
}

Test(threads, selfchecks_concurrently) {
  tabcl_context *ctx = tt_context();
  for (int i = 0; i < tabcl_selfcheck_count(); i++)
    cr_assert(tt_selfcheck_passed(ctx, i, tabcl_selfcheck_run(ctx, i)), "one thread: %s",
              tabcl_last_error());
  pthread_barrier_t b;
  pthread_barrier_init(&b, NULL, NTHREADS);
  sc_arg a[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    a[i] = (sc_arg){ctx, &b, 0, ""};
    cr_assert_eq(pthread_create(&th[i], NULL, selfcheck_work, &a[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++)
    cr_expect_eq(a[i].failures, 0, "thread %d: %d self-checks failed; first: %s", i,
                 a[i].failures, a[i].msg);
  pthread_barrier_destroy(&b);
  tabcl_context_destroy(ctx);
}

/* A blocking transfer returns only after its own command has run, however
   many threads share the queue. Each thread writes a pattern of its own from
   memory it scribbles over at once, reads it back into memory it frees at
   once, and compares; a call that returned early shows as a wrong byte here
   (and as a use after free under AddressSanitizer). Mesa's rusticl 22.3 did
   return early from blocking calls and clFinish with threads sharing a queue;
   see buffer.c. */
typedef struct xfer_arg {
  tabcl_context *ctx;
  pthread_barrier_t *start;
  int id;
  long wrong, failures;
} xfer_arg;

static atomic_int transfers_left;

/* Odd threads keep the queue's pending list busy: small non-blocking writes
   and a clFlush after each, the pattern of a staged upload; every 16th is
   waited for, so the queue cannot grow without bound. */
static void *flush_work(xfer_arg *a, cl_mem m) {
  static const uint8_t junk[64];
  for (long n = 1; atomic_load(&transfers_left) > 0; n++) {
    cl_event ev = NULL;
    if (clEnqueueWriteBuffer(a->ctx->queue, m, CL_FALSE, 0, sizeof junk, junk, 0, NULL, &ev) !=
            CL_SUCCESS ||
        clFlush(a->ctx->queue) != CL_SUCCESS || (n % 16 == 0 && clWaitForEvents(1, &ev)))
      a->failures++;
    if (ev) clReleaseEvent(ev);
  }
  if (tabcl__finish(a->ctx)) a->failures++;
  tabcl__buffer_release(m);
  return NULL;
}

static void *transfer_work(void *p) {
  xfer_arg *a = p;
  enum { BYTES = 96 << 10, ROUNDS_X = 60 };
  cl_mem m = NULL;
  if (tabcl__buffer_create(a->ctx, CL_MEM_READ_WRITE, BYTES, NULL, &m, "test buffer")) {
    a->failures++;
    pthread_barrier_wait(a->start);
    return NULL;
  }
  pthread_barrier_wait(a->start);
  if (a->id & 1) return flush_work(a, m);
  for (int r = 0; r < ROUNDS_X; r++) {
    uint8_t *src = malloc(BYTES), *back = malloc(BYTES);
    const uint8_t tag = (uint8_t)(a->id * 37 + r * 11 + 1);
    for (size_t i = 0; i < BYTES; i++) src[i] = (uint8_t)(tag + i * 7);
    if (tabcl__write(a->ctx, m, 0, BYTES, src)) a->failures++;
    memset(src, 0xEE, BYTES);   /* a write still reading src would take this */
    if (tabcl__read(a->ctx, m, 0, BYTES, back)) a->failures++;
    size_t bad = 0;
    for (size_t i = 0; i < BYTES; i++) bad += back[i] != (uint8_t)(tag + i * 7);
    if (bad) a->wrong++;
    if (tabcl__finish(a->ctx)) a->failures++;
    free(src);
    free(back);   /* a read still writing back would write freed memory */
  }
  tabcl__buffer_release(m);
  atomic_fetch_sub(&transfers_left, 1);
  return NULL;
}

Test(threads, blocking_calls_wait_for_their_own_command) {
  tabcl_context *ctx = tt_context();
  atomic_store(&transfers_left, NTHREADS / 2);
  pthread_barrier_t b;
  pthread_barrier_init(&b, NULL, NTHREADS);
  xfer_arg a[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    a[i] = (xfer_arg){ctx, &b, i, 0, 0};
    cr_assert_eq(pthread_create(&th[i], NULL, transfer_work, &a[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++) {
    cr_expect_eq(a[i].failures, 0, "thread %d: %ld calls failed", i, a[i].failures);
    if (i & 1) continue;
    cr_expect_eq(a[i].wrong, 0, "thread %d: %ld of 60 rounds read back wrong bytes", i,
                 a[i].wrong);
  }
  pthread_barrier_destroy(&b);
  tabcl_context_destroy(ctx);
}

/* tabcl__programs_prefetch: the programs a call names are built side by
   side, each once (a duplicate in the list, a second prefetch and threads
   asking for the same program meanwhile build nothing more); with
   build.threads=1 it builds nothing; a program that cannot build is left
   for the caller's own request, which reports it; nothing leaks. */
typedef struct asker {
  tabcl_context *ctx;
  const tabcl__program_want *w;
  int n;
  cl_program got[8];
} asker;

static void *ask_all(void *arg) {
  asker *a = arg;
  for (int i = 0; i < a->n; i++) {
    a->got[i] = NULL;
    (void)tabcl__program_get(a->ctx, a->w[i].name, a->w[i].extra, &a->got[i], NULL);
  }
  return NULL;
}

static uint64_t programs_made(tabcl_context *ctx) {
  tabcl_stats st;
  tabcl_context_stats(ctx, &st);
  return st.programs_built + st.programs_from_cache;
}

/* Off under AddressSanitizer since a 128-byte leak from an unloaded module
   was blamed on the building threads; it turned out to be Clover's (any
   thread count; CI's sanitizer step now registers PoCL alone). Run by hand
   under ASan with PoCL alone it passed (2026-12-02): it may be turned back
   on there. ctest's first step and the H200's runs take it. */
#if defined(__SANITIZE_ADDRESS__)
#define PREFETCH_TEST_OFF 1
#else
#define PREFETCH_TEST_OFF 0
#endif
Test(threads, prefetch_builds_each_program_once, .disabled = PREFETCH_TEST_OFF) {
  tt_live base = tt_live_now();
  tabcl_context *ctx = tt_context();
  const tabcl__program_want w[] = {{"probe", NULL},
                                   {"sort", "-DSORT_TILE=64 -DSORT_WG=16"},
                                   {"probe", NULL},
                                   {"catindex", NULL}};
  tt_tune(ctx, "build.threads=1");
  const uint64_t before = programs_made(ctx);
  tabcl__programs_prefetch(ctx, 4, w);
  cr_expect_eq(programs_made(ctx), before, "build.threads=1 built something");
  tt_tune(ctx, "build.threads=3");
  /* threads asking for the same programs while the prefetch builds them */
  asker a[3];
  pthread_t th[3];
  for (int t = 0; t < 3; t++) {
    a[t] = (asker){ctx, w, 4, {0}};
    cr_assert_eq(pthread_create(&th[t], NULL, ask_all, &a[t]), 0);
  }
  tabcl__programs_prefetch(ctx, 4, w);
  for (int t = 0; t < 3; t++) pthread_join(th[t], NULL);
  cr_expect_eq(programs_made(ctx), before + 3, "three distinct programs: %llu made",
               (unsigned long long)(programs_made(ctx) - before));
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < 4; i++) {
      cl_program p = NULL;
      tt_assert_ok(tabcl__program_get(ctx, w[i].name, w[i].extra, &p, NULL));
      cr_expect_eq(a[t].got[i], p, "thread %d, program %d: another build than the list's", t, i);
    }
  tabcl__programs_prefetch(ctx, 4, w);
  cr_expect_eq(programs_made(ctx), before + 3, "a second prefetch built again");
  /* one that cannot build, beside one that can: the prefetch says nothing,
     the caller's own request reports it */
  const tabcl__program_want bad[] = {{"no_such_program", NULL}, {"hash", NULL}};
  tabcl__programs_prefetch(ctx, 2, bad);
  cr_expect_eq(programs_made(ctx), before + 4, "the good program of the pair was not built");
  cl_program p = NULL;
  cr_expect_eq(tabcl__program_get(ctx, "no_such_program", NULL, &p, NULL), TABCL_INVALID_ARGUMENT);
  cr_expect(strstr(tabcl_last_error(), "no_such_program"), "message: %s", tabcl_last_error());
  tabcl_context_destroy(ctx);
  tt_expect_no_leak(base);
}
