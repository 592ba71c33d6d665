/* An upload's fill spread over host threads (the upload.threads tuning).
 *
 * Copying the caller's ordinary memory into pinned memory is what bounds a
 * host call's upload on a discrete GPU: one thread copies at a fraction of
 * what the link takes (H200: 7.7 GB/s from malloc'd memory, 55 GB/s from
 * pinned, tabcl-bench copy), and on a CPU device the "upload" is that copy
 * alone. A fill produces any range of an upload independently of the others
 * (tabcl__fill_fn), so a chunk can be cut into parts filled side by side.
 * Threads are started per chunk and joined before the chunk is handed to the
 * device: nothing outlives the call, and a thread that cannot be started is
 * replaced by the calling thread (never a failure). */
#include <pthread.h>
#include <unistd.h>

#include "runtime/internal.h"

/* Below this a part is not worth a thread. */
#define FILL_PART_MIN ((size_t)1 << 20)
#define FILL_THREADS_MAX 64

typedef struct fill_part {
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

void tabcl__fill_parallel(const tabcl_context *ctx, tabcl__fill_fn fill, void *dst, size_t at,
                          size_t n, const void *arg) {
  tabcl__fill_parallel_n(tabcl__fill_threads(ctx), fill, dst, at, n, arg);
}

void tabcl__fill_parallel_n(int nthreads, tabcl__fill_fn fill, void *dst, size_t at, size_t n,
                            const void *arg) {
  const size_t threads = nthreads < 1 ? 1 : nthreads > FILL_THREADS_MAX ? FILL_THREADS_MAX
                                                                          : (size_t)nthreads;
  size_t parts = n / FILL_PART_MIN;
  if (parts > threads) parts = threads;
  if (parts < 2) {
    fill(dst, at, n, arg);
    return;
  }
  fill_part part[FILL_THREADS_MAX];
  pthread_t tid[FILL_THREADS_MAX];
  int started[FILL_THREADS_MAX];
  /* parts of whole 64-byte lines (fills of 8-byte elements never split one) */
  const size_t each = tabcl__round_up(n / parts, 64);
  size_t off = 0, k = 0;
  for (; k < parts && off < n; k++) {
    const size_t len = k + 1 == parts || n - off < each ? n - off : each;
    part[k] = (fill_part){fill, (uint8_t *)dst + off, at + off, len, arg};
    off += len;
  }
  parts = k;
  for (size_t i = 1; i < parts; i++)
    started[i] = pthread_create(&tid[i], NULL, fill_run, &part[i]) == 0;
  fill_run(&part[0]);
  for (size_t i = 1; i < parts; i++) {
    if (started[i]) pthread_join(tid[i], NULL);
    else fill_run(&part[i]);
  }
}
