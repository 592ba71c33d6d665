/* The context's worker pool (workers.h). */
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

/* Takes parts while there are any; w->lock is held on entry and on return. */
static void take_parts(tabcl__workers *w) {
  while (w->next < w->parts) {
    const part_t *p = &w->part[w->next++];
    pthread_mutex_unlock(&w->lock);
    p->fn(p->dst, p->at, p->n, p->arg);
    pthread_mutex_lock(&w->lock);
    if (--w->left == 0) pthread_cond_broadcast(&w->done);
  }
}

static void *worker_main(void *arg) {
  tabcl__workers *w = arg;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    while (!w->stop && w->next >= w->parts) pthread_cond_wait(&w->work, &w->lock);
    if (w->stop) break;
    take_parts(w);
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
  const int helpers = (int)(parts < (size_t)threads ? parts : (size_t)threads) - 1;
  pthread_mutex_lock(&w->lock);
  /* a thread that cannot be started leaves its parts to the others */
  while (w->threads < helpers && pthread_create(&w->tid[w->threads], NULL, worker_main, w) == 0)
    w->threads++;
  w->part = part;
  w->parts = parts;
  w->next = 0;
  w->left = parts;
  pthread_cond_broadcast(&w->work);
  take_parts(w);
  while (w->left) pthread_cond_wait(&w->done, &w->lock);
  w->part = NULL;
  w->parts = w->next = 0;
  pthread_mutex_unlock(&w->lock);
  pthread_mutex_unlock(&w->job);
}
