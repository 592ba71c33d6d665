/* An upload's fill spread over host threads (the upload.threads tuning).
 *
 * Copying the caller's ordinary memory into pinned memory is what bounds a
 * host call's upload on a discrete GPU: one thread copies at a fraction of
 * what the link takes (H200: 7.7 GB/s from malloc'd memory, 55 GB/s from
 * pinned, tabcl-bench copy), and on a CPU device the "upload" is that copy
 * alone. A fill produces any range of an upload independently of the others
 * (tabcl__fill_fn), so a chunk can be cut into parts filled side by side.
 *
 * The threads are the context's own: started by the first fill that wants
 * them, parked on a condition variable between fills, joined when the
 * context is destroyed. Starting threads per chunk cost tens of
 * microseconds each, so parts had to be 1 MiB or more, and a host call's
 * 1.6 MB of offsets was filled by one thread (125 us on the H200's host,
 * bench/RESULTS.md); parked threads take parts of 256 KiB. One fill uses
 * them at a time: a fill that finds them busy (another thread's call on
 * the same context) starts threads of its own for parts of 1 MiB, as
 * before. Every part is done before the fill returns, and a thread that
 * cannot be started is replaced by the calling thread (never a failure). */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"

/* Below this a part is not worth a thread started for it; of a parked one. */
#define FILL_PART_MIN ((size_t)1 << 20)
#define FILL_PART_MIN_PARKED ((size_t)256 << 10)
#define FILL_THREADS_MAX (TABCL__FILL_WORKERS_MAX + 1)
/* Parts a parked fill is cut into: up to this many a thread, each taken by
   whichever thread is free, so that a thread held back (woken late, or its
   core busy) takes fewer instead of the others waiting for its share. Cut
   in one part a thread, host lookups on a 2-core VM took as long with two
   threads as with one (bench/RESULTS.md, 2026-12-05). */
#define FILL_PARTS_PER_THREAD 4
/* How long a parked thread that has just finished its parts watches for
   the next fill before it sleeps. A thread woken from its condition
   variable ran 8-13 us after the broadcast on the 2-core development VM,
   and at times 1.6-2.8 ms (a vCPU halted by the hypervisor); a call of 1,000
   rows of 64 B takes 14 us on one thread. Calls that follow each other (a
   lookup per column, a loop of batches) find the thread running. The
   watch yields the core at every turn: where the driver's threads held the
   other core, a helper and its caller could share one, and a watch that
   kept it turned host lookups of 100,000 x 64 B from 1.07 ms into 1.4-2.0. */
#define FILL_WAKE_SPIN_US 100.0
/* A fill that finds threads parked wakes them where that repays: where
   the last fill on them ended less than FILL_WAKE_SPIN_US ago and they
   took part in it (calls that follow each other: once woken, the threads
   watch for the next; a call of two fills after a pause, whose first the
   caller did alone, does not count), or where the caller's work, shared,
   ends FILL_WAKE_COST_US sooner (wake_saves). The work is the caller's
   alone at the rate of the last fill of the same function (before any
   part) or of its own parts so far (after each); the caller does it alone
   until a woken thread runs, and the rest is shared by the threads that
   can take a part (the parts left, at most every thread). How long a
   woken thread takes to run is timed on every wake and averaged, since it
   is the machine's: 50-93 us on the 2-core VM after 2 ms pauses, 15-67 us
   on an H100 machine's 16-core host.

   On the VM, two threads always woken took 0.026 ms (median of 200) for
   host lookups of 1,000 rows of 8 B after 2 ms pauses, where one took
   0.011, and waking for 8,000 rows lost too (0.098 against 0.083 ms); the
   first rule kept here, 100 us of work, was level there and still gained
   at 16,000 rows (0.145-0.154 against 0.172). On 16 cores that rule cost
   4,000 rows 0.080 ms against 0.056 always woken, and 100,000 rows 0.323
   against 0.269: such a lookup runs two fills, a check of its 800 KB of
   offsets in three parts and then the lookup, and with one rate kept (the
   last fill's) neither fill's was known before its first part. With the
   wake timed and a rate kept a function: 0.052 and 0.264 ms, 1,000 rows
   0.013 (bench/RESULTS.md, 2026-12-06). */
#define FILL_WAKE_COST_US 25.0
/* How long a woken thread is taken to need until a wake is timed (the
   VM's, after 2 ms pauses). */
#define FILL_WAKE_FIRST_US 50.0
#define FILL_PARTS_MAX 256

typedef struct tabcl__fill_part {
  tabcl__fill_fn fill;
  uint8_t *dst;
  size_t at, n;
  const void *arg;
} fill_part;

static void *fill_run(void *p) {
  const fill_part *f = p;
  f->fill(f->dst, f->at, f->n, f->arg);
  return NULL;
}

/* The rule's count, asked of the system once a process: glibc answers
   _SC_NPROCESSORS_ONLN by reading a file under /sys, too slow for every
   upload of a small call. */
static int rule_threads, rule_threads_large, online_cores;
static pthread_once_t rule_once = PTHREAD_ONCE_INIT;

static void rule_init(void) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  online_cores = online < 1 ? 1 : online > 1024 ? 1024 : (int)online;
  /* every online core up to eight (more rarely adds bandwidth), up to 16
     for the largest uploads, whose fill of pinned memory bounds them */
  rule_threads = online_cores > 8 ? 8 : online_cores;
  rule_threads_large = online_cores > 16 ? 16 : online_cores;
}

int tabcl__online_cores(void) {
  pthread_once(&rule_once, rule_init);
  return online_cores;
}

int tabcl__fill_threads(const tabcl_context *ctx) { return tabcl__fill_threads_for(ctx, 0); }

int tabcl__fill_threads_for(const tabcl_context *ctx, size_t bytes) {
  int64_t v = tabcl__tuned(&ctx->tune, TABCL__TUNE_UPLOAD_THREADS, 0);
  if (v > 0) return v > FILL_THREADS_MAX ? FILL_THREADS_MAX : (int)v;
  pthread_once(&rule_once, rule_init);
  return bytes >= TABCL__FILL_LARGE ? rule_threads_large : rule_threads;
}

void tabcl__fill_parallel(tabcl_context *ctx, tabcl__fill_fn fill, void *dst, size_t at,
                          size_t n, const void *arg) {
  tabcl__fill_parallel_n(ctx, tabcl__fill_threads(ctx), fill, dst, at, n, arg);
}

/* ---- the context's parked threads ---------------------------------------- */

int tabcl__fill_workers_init(tabcl_context *ctx) {
  tabcl__fill_workers *w = &ctx->workers;
  memset(w, 0, sizeof *w);
  w->wake_us = FILL_WAKE_FIRST_US;
  atomic_init(&w->posted, 0);
  atomic_init(&w->left, 0);
  if (pthread_mutex_init(&w->job, NULL) != 0) return -1;
  if (pthread_mutex_init(&w->lock, NULL) != 0) goto no_lock;
  if (pthread_cond_init(&w->work, NULL) != 0) goto no_work;
  if (pthread_cond_init(&w->done, NULL) != 0) goto no_done;
  return 0;
no_done:
  pthread_cond_destroy(&w->work);
no_work:
  pthread_mutex_destroy(&w->lock);
no_lock:
  pthread_mutex_destroy(&w->job);
  return -1;
}

void tabcl__fill_workers_destroy(tabcl_context *ctx) {
  tabcl__fill_workers *w = &ctx->workers;
  pthread_mutex_lock(&w->lock);
  w->stop = 1;
  pthread_cond_broadcast(&w->work);
  pthread_mutex_unlock(&w->lock);
  for (int i = 0; i < w->threads; i++) pthread_join(w->tid[i], NULL);
  pthread_cond_destroy(&w->done);
  pthread_cond_destroy(&w->work);
  pthread_mutex_destroy(&w->lock);
  pthread_mutex_destroy(&w->job);
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* Takes the next part and fills it; w->lock is held on entry and on
   return, with a part left to take. Returns the part. */
static const fill_part *take_part(tabcl__fill_workers *w) {
  const fill_part *f = &w->part[w->next++];
  pthread_mutex_unlock(&w->lock);
  f->fill(f->dst, f->at, f->n, f->arg);
  pthread_mutex_lock(&w->lock);
  if (atomic_fetch_sub_explicit(&w->left, 1, memory_order_release) == 1)
    pthread_cond_broadcast(&w->done);
  return f;
}

/* Takes parts while there are any; w->lock is held on entry and on return. */
static void take_parts(tabcl__fill_workers *w) {
  while (w->next < w->parts) (void)take_part(w);
}

/* The rate kept for fill, or a negative one where none is. */
static double rate_of(const tabcl__fill_workers *w, tabcl__fill_fn fill) {
  for (int i = 0; i < TABCL__FILL_RATES; i++)
    if (w->rate[i].fill == fill) return w->rate[i].us_per_byte;
  return -1;
}

/* Keeps fill's rate, in its own slot or, for a function not seen yet, in
   the one taken longest ago. */
static void keep_rate(tabcl__fill_workers *w, tabcl__fill_fn fill, double us_per_byte) {
  int i = 0;
  while (i < TABCL__FILL_RATES && w->rate[i].fill != fill) i++;
  if (i == TABCL__FILL_RATES) i = (int)(w->rate_next++ % TABCL__FILL_RATES);
  w->rate[i].fill = fill;
  w->rate[i].us_per_byte = us_per_byte;
}

/* The threads that can share `parts` parts: the caller and the started
   ones, at most one a part. */
static size_t sharers(const tabcl__fill_workers *w, size_t parts) {
  const size_t threads = (size_t)w->threads + 1;
  return parts < threads ? parts : threads;
}

/* Whether waking the parked threads repays for work that takes the caller
   us_alone alone, shared by `by` threads: the caller works alone until a
   woken thread runs (wake_us), and what is left then goes faster shared,
   by FILL_WAKE_COST_US at least. */
static int wake_saves(const tabcl__fill_workers *w, double us_alone, size_t by) {
  const double left = us_alone - w->wake_us;
  return by > 1 && left - left / (double)by >= FILL_WAKE_COST_US;
}

/* Wakes the parked threads; the first to run times the wake. w->lock is
   held; none may be parked by now (a spurious return from the wait), and
   then no wake is marked, or it would stay marked until the next. */
static void wake_parked(tabcl__fill_workers *w) {
  if (w->parked == 0) return;
  w->woken_us = now_us();
  pthread_cond_broadcast(&w->work);
}

/* The fill's caller's share: take_parts, its first part timed for the
   next fill of the same function, and the parked threads woken (wake = 1)
   after a part once that repays on the parts left (wake_saves). Returns
   the parts the caller took. */
static size_t take_parts_caller(tabcl__fill_workers *w, int wake) {
  const double t0 = now_us();
  size_t done = 0;
  while (w->next < w->parts) {
    const fill_part *f = take_part(w);
    done++;
    if (done > 1 && !wake) continue;
    const double spent = now_us() - t0;
    if (done == 1) keep_rate(w, f->fill, spent / (double)f->n);
    const size_t left = w->parts - w->next;
    if (wake && wake_saves(w, spent / (double)done * (double)left, sharers(w, left))) {
      wake_parked(w);
      wake = 0;
    }
  }
  return done;
}

static int posted_since(const tabcl__fill_workers *w, size_t seen) {
  return atomic_load_explicit(&w->posted, memory_order_relaxed) != seen;
}

static int all_finished(const tabcl__fill_workers *w, size_t unused) {
  (void)unused;
  return !atomic_load_explicit(&w->left, memory_order_acquire);
}

/* Whether ready(w, arg) holds within FILL_WAKE_SPIN_US, watched without
   the lock, the core yielded at every turn. */
static int watch(const tabcl__fill_workers *w, int (*ready)(const tabcl__fill_workers *, size_t),
                 size_t arg) {
  const double until = now_us() + FILL_WAKE_SPIN_US;
  for (unsigned i = 1;; i++) {
    if (ready(w, arg)) return 1;
    if (!(i & 15) && now_us() > until) return 0;
    sched_yield();
  }
}

static void *worker_main(void *arg) {
  tabcl__fill_workers *w = arg;
  pthread_mutex_lock(&w->lock);
  while (!w->stop) {
    take_parts(w);
    if (w->stop) break;
    /* the next fill watched for a while before the thread parks: posted
       and checked under the lock, so a fill posted while it watches or
       just after is never missed */
    const unsigned seen = atomic_load_explicit(&w->posted, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
    const int soon = watch(w, posted_since, seen);
    pthread_mutex_lock(&w->lock);
    if (!soon && !w->stop && atomic_load_explicit(&w->posted, memory_order_relaxed) == seen) {
      w->parked++;
      pthread_cond_wait(&w->work, &w->lock);
      w->parked--;
      if (w->woken_us > 0) {
        /* the first thread to run after a wake times it; a vCPU halted by
           the hypervisor (milliseconds, rarely) counts as a watch's length */
        double took = now_us() - w->woken_us;
        if (took > FILL_WAKE_SPIN_US) took = FILL_WAKE_SPIN_US;
        w->wake_us += (took - w->wake_us) / 4;
        w->woken_us = 0;
      }
    }
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

/* Cuts [at, at + n) into `parts` parts of whole 64-byte lines (fills of
   8-byte elements never split one); returns how many it made. */
static size_t cut(fill_part *part, size_t parts, tabcl__fill_fn fill, void *dst, size_t at,
                  size_t n, const void *arg) {
  const size_t each = tabcl__round_up(n / parts, 64);
  size_t off = 0, k = 0;
  for (; k < parts && off < n; k++) {
    const size_t len = k + 1 == parts || n - off < each ? n - off : each;
    part[k] = (fill_part){fill, (uint8_t *)dst + off, at + off, len, arg};
    off += len;
  }
  return k;
}

/* The fill on the parked threads, started here up to threads - 1 of them,
   in parts of at least `least` bytes; 0 where they are busy (the caller
   then starts its own). */
static int fill_parked(tabcl_context *ctx, size_t threads, size_t least, tabcl__fill_fn fill,
                       void *dst, size_t at, size_t n, const void *arg) {
  tabcl__fill_workers *w = &ctx->workers;
  size_t parts = n / least;
  if (parts > threads * FILL_PARTS_PER_THREAD) parts = threads * FILL_PARTS_PER_THREAD;
  if (parts > FILL_PARTS_MAX) parts = FILL_PARTS_MAX;
  if (parts < 2) {
    fill(dst, at, n, arg);
    return 1;
  }
  if (pthread_mutex_trylock(&w->job) != 0) return 0;
  fill_part part[FILL_PARTS_MAX];
  parts = cut(part, parts, fill, dst, at, n, arg);
  const size_t helpers = (parts < threads ? parts : threads) - 1;
  pthread_mutex_lock(&w->lock);
  while ((size_t)w->threads < helpers &&
         pthread_create(&w->tid[w->threads], NULL, worker_main, w) == 0)
    w->threads++;
  w->part = part;
  w->parts = parts;
  w->next = 0;
  atomic_store_explicit(&w->left, parts, memory_order_relaxed);
  atomic_fetch_add_explicit(&w->posted, 1, memory_order_relaxed);
  /* threads watching for work see the post; parked ones are woken where
     that repays (wake_saves), here or after a part */
  int wake = w->parked > 0;
  if (wake && ((w->helped && now_us() - w->ended_us < FILL_WAKE_SPIN_US) ||
               wake_saves(w, rate_of(w, fill) * (double)n, sharers(w, parts)))) {
    wake_parked(w);
    wake = 0;
  }
  /* the caller fills too (all of it, where no thread runs) */
  const size_t by_caller = take_parts_caller(w, wake);
  /* the other threads' last parts watched for a while, then waited for */
  if (atomic_load_explicit(&w->left, memory_order_relaxed)) {
    pthread_mutex_unlock(&w->lock);
    (void)watch(w, all_finished, 0);
    pthread_mutex_lock(&w->lock);
  }
  while (atomic_load_explicit(&w->left, memory_order_acquire))
    pthread_cond_wait(&w->done, &w->lock);
  w->part = NULL;
  w->parts = w->next = 0;
  w->ended_us = now_us();
  w->helped = by_caller < parts;
  pthread_mutex_unlock(&w->lock);
  pthread_mutex_unlock(&w->job);
  return 1;
}

void tabcl__fill_parallel_n(tabcl_context *ctx, int nthreads, tabcl__fill_fn fill, void *dst,
                            size_t at, size_t n, const void *arg) {
  tabcl__fill_parallel_parts(ctx, nthreads, FILL_PART_MIN_PARKED, fill, dst, at, n, arg);
}

void tabcl__fill_parallel_parts(tabcl_context *ctx, int nthreads, size_t least,
                                tabcl__fill_fn fill, void *dst, size_t at, size_t n,
                                const void *arg) {
  const size_t threads = nthreads < 1 ? 1 : nthreads > FILL_THREADS_MAX ? FILL_THREADS_MAX
                                                                          : (size_t)nthreads;
  if (least < 64) least = 64;
  if (threads < 2) {
    fill(dst, at, n, arg);
    return;
  }
  if (fill_parked(ctx, threads, least, fill, dst, at, n, arg)) return;
  /* the parked threads are busy: threads of this call's own */
  size_t parts = n / (least > FILL_PART_MIN ? least : FILL_PART_MIN);
  if (parts > threads) parts = threads;
  if (parts < 2) {
    fill(dst, at, n, arg);
    return;
  }
  fill_part part[FILL_THREADS_MAX];
  pthread_t tid[FILL_THREADS_MAX];
  int started[FILL_THREADS_MAX];
  parts = cut(part, parts, fill, dst, at, n, arg);
  for (size_t i = 1; i < parts; i++)
    started[i] = pthread_create(&tid[i], NULL, fill_run, &part[i]) == 0;
  fill_run(&part[0]);
  for (size_t i = 1; i < parts; i++) {
    if (started[i]) pthread_join(tid[i], NULL);
    else fill_run(&part[i]);
  }
}
