/* The context's worker pool: the library's one parallel loop on the host
 * (workers.c). Uploads fill pinned memory with it, the offsets check scans
 * with it, host lookups and aligns run their rows on it, index files are
 * read with it.
 *
 * Like zstd's pool: threads made once per context (on first use, up to the
 * most a job asked for), sleeping on a condition variable between jobs,
 * joined at destroy. A job is a range of bytes cut into parts; the caller
 * takes parts too, so a job always completes, even where no thread could
 * be started; parts are taken with an atomic counter, and a job wakes no
 * more threads than it has parts beyond the caller's first. A thread that
 * ends a job watches for the next for a fixed number of yields
 * (TABCL__WORKERS_WATCH) before it sleeps, so calls that follow each other
 * find it awake; nothing is timed. One job runs on the pool at a time: a job posted while
 * another runs (another thread's call on the same context, or a job inside
 * a job) runs on its caller alone. No timing rule decides anything. */
#ifndef TABCL_RUNTIME_WORKERS_H
#define TABCL_RUNTIME_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "tabcl/tabcl.h"

/* Produces bytes [at, at + n) of a job's output into dst (dst points at
   byte `at`; work that writes no output, a check, ignores dst). */
typedef void (*tabcl__range_fn)(void *dst, size_t at, size_t n, const void *arg);

/* Threads a pool may hold besides the caller. */
#define TABCL__WORKERS_MAX 63
/* A job's parts are whole 64-byte lines of at least this many bytes unless
   the caller asks for another size: a copy of 256 KiB takes tens of
   microseconds, well above the cost of handing a part to a waiting thread. */
#define TABCL__WORKERS_PART ((size_t)256 << 10)
/* Parts cut a thread, taken by whichever thread is free, so that a thread
   held back (its core busy) takes fewer instead of the others waiting for
   its share (bench/history/2026-11-to-12.md, "Tuning: upload.threads"). */
#define TABCL__WORKERS_PARTS_PER_THREAD 4
/* Yields a thread watches for the next job before it sleeps: a few tens of
   microseconds on the machines measured, less than a sleeping thread takes
   to wake (bench/RESULTS.md, "The worker pool"). */
#define TABCL__WORKERS_WATCH 256

struct tabcl__workers_part;
typedef struct tabcl__workers {
  pthread_mutex_t job;        /* held by the job that uses the pool */
  pthread_mutex_t lock;       /* guards the fields up to `next` */
  pthread_cond_t work, done;
  pthread_t tid[TABCL__WORKERS_MAX];
  int threads, stop;
  atomic_ulong posted;        /* jobs posted so far (written under lock): a thread joins
                                 each once, and watches it for a while before sleeping */
  const struct tabcl__workers_part *part; /* the job's parts; NULL once it has ended */
  size_t parts;
  int active;                 /* threads that joined the job and may still take a part */
  atomic_size_t next;         /* the next part to take: taken without the lock, so the
                                 caller's parts never wait for a thread that wakes */
  atomic_size_t left;         /* parts not finished */
} tabcl__workers;

/* Made with the context (0, or -1 where a lock cannot be made); destroy
   joins the threads. */
int tabcl__workers_init(tabcl__workers *w);
void tabcl__workers_destroy(tabcl__workers *w);

/* Runs fn over [at, at + n) with up to `threads` threads, the caller one of
   them, in parts of whole 64-byte lines of at least `least` bytes (at least
   64): a part of 4-byte elements starts on a multiple of 16. Every part is
   done when it returns. */
void tabcl__workers_run(tabcl_context *ctx, int threads, size_t least, tabcl__range_fn fn,
                        void *dst, size_t at, size_t n, const void *arg);

/* The threads a job of `bytes` may use: the upload.threads tuning where it
   is set; else every online core up to 8, up to 16 from
   TABCL__WORKERS_LARGE bytes, whose fill of pinned memory bounds an upload
   (bench/history/2026-11-to-12.md, "Tuning: upload.threads"). bytes 0: the small rule. */
#define TABCL__WORKERS_LARGE ((size_t)256 << 20)
int tabcl__workers_threads(const tabcl_context *ctx, size_t bytes);

#endif
