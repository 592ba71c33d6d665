/* The context's worker pool (workers.h). */
#include <sched.h>
#include <string.h>

#include "runtime/internal.h"

typedef struct tabcl__workers_part {
  tabcl__range_fn fn;
  uint8_t *dst;
  size_t at, n;
  const void *arg;
} part_t;

#define PARTS_MAX 256

int tabcl__workers_threads(const tabcl_context *ctx, size_t bytes) {
  const int cores = tabcl__online_cores();
  const int cap = bytes >= TABCL__WORKERS_LARGE ? 16 : 8;
  const int64_t v = tabcl__tuned_rule(&ctx->tune, TABCL__TUNE_UPLOAD_THREADS, cores < cap ? cores : cap);
  return v < 1 ? 1 : v > TABCL__WORKERS_MAX + 1 ? TABCL__WORKERS_MAX + 1 : (int)v;
}

int tabcl__workers_init(tabcl__workers *w) {
  memset(w, 0, sizeof *w);
  atomic_init(&w->posted, 0);
  atomic_init(&w->next, 0);
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

void tabcl__workers_destroy(tabcl__workers *w) {
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

/* Takes and runs parts of `part` until none is left; returns whether this
   thread finished the job's last part. */
static int take_parts(tabcl__workers *w, const part_t *part, size_t parts) {
  int last = 0;
  for (;;) {
    const size_t k = atomic_fetch_add_explicit(&w->next, 1, memory_order_relaxed);
    if (k >= parts) return last;
    part[k].fn(part[k].dst, part[k].at, part[k].n, part[k].arg);
    last = atomic_fetch_sub_explicit(&w->left, 1, memory_order_acq_rel) == 1;
  }
}

/* Whether a job after `seen` is posted within TABCL__WORKERS_WATCH yields
   (read without the lock; the caller checks again under it). */
static int watch(const tabcl__workers *w, unsigned long seen) {
  for (int i = 0; i < TABCL__WORKERS_WATCH; i++) {
    if (atomic_load_explicit(&w->posted, memory_order_relaxed) != seen) return 1;
    sched_yield();
  }
  return 0;
}

static void *worker_main(void *arg) {
  tabcl__workers *w = arg;
  unsigned long seen = 0;
  int watched = 1;   /* a new thread was started for a job already posted */
  pthread_mutex_lock(&w->lock);
  for (;;) {
    while (!w->stop && (atomic_load_explicit(&w->posted, memory_order_relaxed) == seen ||
                        !w->part)) {
      seen = atomic_load_explicit(&w->posted, memory_order_relaxed);
      if (!watched) {
        watched = 1;
        pthread_mutex_unlock(&w->lock);
        (void)watch(w, seen);
        pthread_mutex_lock(&w->lock);
        continue;
      }
      pthread_cond_wait(&w->work, &w->lock);
    }
    if (w->stop) break;
    /* join the job: its caller does not end it while a thread is active */
    seen = atomic_load_explicit(&w->posted, memory_order_relaxed);
    watched = 0;
    const part_t *part = w->part;
    const size_t parts = w->parts;
    w->active++;
    pthread_mutex_unlock(&w->lock);
    const int last = take_parts(w, part, parts);
    pthread_mutex_lock(&w->lock);
    w->active--;
    if (last || w->active == 0) pthread_cond_broadcast(&w->done);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

/* Cuts [at, at + n) into at most `parts` parts of whole 64-byte lines;
   returns how many it made. */
static size_t cut(part_t *part, size_t parts, tabcl__range_fn fn, void *dst, size_t at, size_t n,
                  const void *arg) {
  const size_t each = (n / parts + 63) & ~(size_t)63;
  size_t off = 0, k = 0;
  for (; k < parts && off < n; k++) {
    const size_t len = k + 1 == parts || n - off < each ? n - off : each;
    part[k] = (part_t){fn, dst ? (uint8_t *)dst + off : NULL, at + off, len, arg};
    off += len;
  }
  return k;
}

void tabcl__workers_run(tabcl_context *ctx, int threads, size_t least, tabcl__range_fn fn,
                        void *dst, size_t at, size_t n, const void *arg) {
  tabcl__workers *w = &ctx->workers;
  if (least < 64) least = 64;
  if (threads > TABCL__WORKERS_MAX + 1) threads = TABCL__WORKERS_MAX + 1;
  size_t parts = n / least;
  if (threads < 2 || parts < 2 || pthread_mutex_trylock(&w->job) != 0) {
    fn(dst, at, n, arg);
    return;
  }
  if (parts > (size_t)threads * TABCL__WORKERS_PARTS_PER_THREAD)
    parts = (size_t)threads * TABCL__WORKERS_PARTS_PER_THREAD;
  if (parts > PARTS_MAX) parts = PARTS_MAX;
  part_t part[PARTS_MAX];
  parts = cut(part, parts, fn, dst, at, n, arg);
  /* helpers for the parts beyond the caller's first, at most threads - 1 */
  const int helpers = (int)(parts - 1 < (size_t)threads - 1 ? parts - 1 : (size_t)threads - 1);
  pthread_mutex_lock(&w->lock);
  /* a thread that cannot be started leaves its parts to the others */
  while (w->threads < helpers && pthread_create(&w->tid[w->threads], NULL, worker_main, w) == 0)
    w->threads++;
  atomic_store_explicit(&w->next, 0, memory_order_relaxed);
  atomic_store_explicit(&w->left, parts, memory_order_relaxed);
  w->part = part;
  w->parts = parts;
  atomic_fetch_add_explicit(&w->posted, 1, memory_order_relaxed);
  for (int i = 0; i < helpers; i++) pthread_cond_signal(&w->work);
  pthread_mutex_unlock(&w->lock);
  (void)take_parts(w, part, parts);
  /* every part finished, and no thread still holding the job's parts */
  pthread_mutex_lock(&w->lock);
  while (atomic_load_explicit(&w->left, memory_order_acquire) || w->active)
    pthread_cond_wait(&w->done, &w->lock);
  w->part = NULL;
  w->parts = 0;
  pthread_mutex_unlock(&w->lock);
  pthread_mutex_unlock(&w->job);
}
