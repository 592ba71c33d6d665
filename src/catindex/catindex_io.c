/* Saving and loading a categorical index. The file holds the vocabularies
 * and the code order, never hashes or the seed: loading fits again.
 *
 * Layout, all integers little-endian:
 *   "TABCLIDX"              8 bytes
 *   u32 version (1), u32 code order, u32 column count (>= 1), u32 zero
 *   per column: u64 length, u64 bytes, u64 has_validity (0 or 1),
 *               (length + 1) u64 offsets (from 0, non-decreasing, last = bytes),
 *               bytes of label data, (length + 7) / 8 validity bytes if has_validity
 *   u64 checksum of everything before it, so a truncated, extended or
 *       altered file fails it. Version 2 (written): the XXH3-64 digest of
 *       each 1 MiB block, seeded with CHECK_SEED + the block's number, folded
 *       in order (h = XXH3-64 of the digest's 8 bytes, seeded with h), then
 *       the total length; the blocks are independent, so a large file's are
 *       checked on several threads (a load is otherwise this hash's time:
 *       bench/history/2026-11-to-12.md). Version 1 (still read): XXH3-64 chained over the
 *       blocks (each block's seed is the previous block's digest), then the
 *       total length.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catindex/catindex.h"
#include "hash/hash.h"

static const char MAGIC[8] = {'T', 'A', 'B', 'C', 'L', 'I', 'D', 'X'};
#define FORMAT_VERSION 2u   /* written; 1 is read too */
#define BLOCK ((size_t)1 << 20)
#define CHECK_SEED 0x7461626c63696478ULL   /* "tablcidx" */

static uint64_t check_finish(uint64_t h, uint64_t total) {
  uint8_t le[8];
  for (int i = 0; i < 8; i++) le[i] = (uint8_t)(total >> (8 * i));
  return tabcl__xxh3_64(le, 8, h);
}

/* Version 2: block i's digest, and the fold of one digest into h. */
static uint64_t block_digest(const uint8_t *p, size_t n, uint64_t i) {
  return tabcl__xxh3_64(p, n, CHECK_SEED + i);
}
#define check_fold check_finish

/* Digests of blocks [first, end) of the file, for one thread. */
typedef struct digest_job {
  const uint8_t *p;
  size_t n, first, end;
  uint64_t *out;
} digest_job;

static void *digest_run(void *arg) {
  const digest_job *j = arg;
  for (size_t b = j->first; b < j->end; b++) {
    size_t at = b * BLOCK;
    j->out[b] = block_digest(j->p + at, j->n - at < BLOCK ? j->n - at : BLOCK, b);
  }
  return NULL;
}

/* Blocks a thread takes at least. One: the load checks beside its fit, and
   a thread a block brought the load of 10,000 labels of 512 B (a 5 MB
   file) on the H200 from 1.24-1.77x of fit + read to 1.00-1.34x (four
   blocks a thread before; bench/history/2026-11-to-12.md, "Load beside the fit"). */
#define DIGEST_BLOCKS_MIN 1
#define DIGEST_THREADS_MAX 16

static uint64_t checksum_v2(const uint8_t *p, size_t n) {
  const size_t blocks = (n + BLOCK - 1) / BLOCK;
  size_t threads = (size_t)tabcl__online_cores();
  if (threads > DIGEST_THREADS_MAX) threads = DIGEST_THREADS_MAX;
  if (threads > blocks / DIGEST_BLOCKS_MIN) threads = blocks / DIGEST_BLOCKS_MIN;
  /* the digests side by side where there is room for them (plain malloc:
     a failure here only means one thread, never an error) */
  uint64_t *d = threads >= 2 ? malloc(blocks * sizeof *d) : NULL;
  uint64_t h = CHECK_SEED;
  if (!d) {
    for (size_t b = 0; b < blocks; b++) {
      size_t at = b * BLOCK;
      h = check_fold(h, block_digest(p + at, n - at < BLOCK ? n - at : BLOCK, b));
    }
    return check_finish(h, n);
  }
  digest_job job[DIGEST_THREADS_MAX];
  pthread_t tid[DIGEST_THREADS_MAX];
  int started[DIGEST_THREADS_MAX] = {0};
  for (size_t t = 0; t < threads; t++) {
    job[t] = (digest_job){p, n, blocks * t / threads, blocks * (t + 1) / threads, d};
    /* thread 0 is the caller; one that cannot start is run by the caller */
    started[t] = t > 0 && pthread_create(&tid[t], NULL, digest_run, &job[t]) == 0;
  }
  for (size_t t = 0; t < threads; t++)
    if (!started[t]) digest_run(&job[t]);
  for (size_t t = 0; t < threads; t++)
    if (started[t]) pthread_join(tid[t], NULL);
  for (size_t b = 0; b < blocks; b++) h = check_fold(h, d[b]);
  free(d);
  return check_finish(h, n);
}

static uint64_t checksum_v1(const uint8_t *p, size_t n) {
  uint64_t h = CHECK_SEED;
  for (size_t at = 0; at < n; at += BLOCK)
    h = tabcl__xxh3_64(p + at, n - at < BLOCK ? n - at : BLOCK, h);
  return check_finish(h, n);
}

uint64_t tabcl__catindex_file_checksum(uint32_t version, const uint8_t *p, size_t n) {
  return version == 1 ? checksum_v1(p, n) : checksum_v2(p, n);
}

/* ---- save --------------------------------------------------------------- */

typedef struct writer {
  FILE *f;
  uint8_t *buf;
  size_t fill;
  uint64_t h, total;
  uint64_t block;   /* the next block's number */
  int failed;
} writer;

/* The errno of a write that failed, injected (a full disk in tests) or real. */
static int w_write(writer *w, const void *p, size_t n) {
  int injected = tabcl__fault_io();
  if (injected) return injected;
  errno = 0;
  return fwrite(p, 1, n, w->f) == n ? 0 : errno ? errno : EIO;
}

static void w_flush(writer *w) {
  if (!w->fill || w->failed) return;
  w->h = check_fold(w->h, block_digest(w->buf, w->fill, w->block++));
  w->failed = w_write(w, w->buf, w->fill);
  w->fill = 0;
}

static void w_put(writer *w, const void *p, size_t n) {
  const uint8_t *b = p;
  w->total += n;
  while (n && !w->failed) {
    size_t take = BLOCK - w->fill < n ? BLOCK - w->fill : n;
    memcpy(w->buf + w->fill, b, take);
    w->fill += take;
    b += take;
    n -= take;
    if (w->fill == BLOCK) w_flush(w);
  }
}

static void w_u64(writer *w, uint64_t v) {
  uint8_t le[8];
  for (int i = 0; i < 8; i++) le[i] = (uint8_t)(v >> (8 * i));
  w_put(w, le, 8);
}

static void w_u32(writer *w, uint32_t v) {
  uint8_t le[4];
  for (int i = 0; i < 4; i++) le[i] = (uint8_t)(v >> (8 * i));
  w_put(w, le, 4);
}

/* bytes and offs: the index's labels and each column's offsets (from
   offs + label_base + c, rebased to 0), read back from its device copies. */
static void write_index(writer *w, const tabcl_category_index *idx, const uint8_t *bytes,
                        const int64_t *offs) {
  w_put(w, MAGIC, 8);
  w_u32(w, FORMAT_VERSION);
  w_u32(w, (uint32_t)idx->order);
  w_u32(w, (uint32_t)idx->ncols);
  w_u32(w, 0);
  for (int c = 0; c < idx->ncols && !w->failed; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    const int64_t *o = offs + col->label_base + c;
    int64_t n = col->length;
    w_u64(w, (uint64_t)n);
    w_u64(w, (uint64_t)o[n]);
    w_u64(w, col->validity ? 1 : 0);
    for (int64_t i = 0; i <= n; i++) w_u64(w, (uint64_t)o[i]);
    w_put(w, bytes + col->data_base, (size_t)o[n]);
    if (col->validity) w_put(w, col->validity, (size_t)(n + 7) / 8);
  }
  w_flush(w);
  uint64_t sum = check_finish(w->h, w->total);
  uint8_t le[8];
  for (int i = 0; i < 8; i++) le[i] = (uint8_t)(sum >> (8 * i));
  if (!w->failed) w->failed = w_write(w, le, 8);
}

/* Makes the rename durable: the folder's entry for path is on disk too. A
   file system that cannot sync folders (EINVAL) is taken at its word;
   dir has room for path's bytes: allocated before anything was written, so
   nothing can fail for want of memory once path has been replaced. */
static int sync_folder(const char *path, char *dir) {
  const char *slash = strrchr(path, '/');
  if (slash) {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    memcpy(dir, path, n);
    dir[n] = '\0';
  } else {
    strcpy(dir, ".");
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if (fsync(fd) != 0 && errno != EINVAL) err = errno;
    close(fd);
  }
  return err;
}

tabcl_status tabcl_category_index_save(const tabcl_category_index *idx, const char *path) {
  static const char fn[] = "tabcl_category_index_save";
  if (!idx || !path || !*path)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s", fn,
                       !idx ? "idx is NULL" : "path is NULL or empty");
  size_t plen = strlen(path);
  char *tmp = tabcl__malloc(plen + 16);
  char *folder = tabcl__malloc(plen + 2);
  writer w = {0};
  w.buf = tabcl__malloc(BLOCK);
  w.h = CHECK_SEED;
  /* the labels and their offsets live on the device only (catindex_fit.c) */
  const size_t nbytes = idx->data_bytes ? (size_t)idx->data_bytes : 1;
  uint8_t *bytes = tabcl__malloc_large(nbytes);   /* read back from the device: fresh pages */
  const size_t noffs = (size_t)idx->labels + (size_t)idx->ncols;
  int64_t *offs = tabcl__malloc(noffs * sizeof *offs);
  if (!tmp || !folder || !w.buf || !bytes || !offs) {
    tabcl__free(tmp);
    tabcl__free(folder);
    tabcl__free(w.buf);
    tabcl__free_large(bytes, nbytes);
    tabcl__free(offs);
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "%s: out of host memory for the %zu-byte write buffer, the %lld label "
                       "bytes, their %zu offsets and the names of %s's temporary file and "
                       "folder", fn, (size_t)BLOCK, (long long)idx->data_bytes, noffs, path);
  }
  tabcl_status st = tabcl__download(idx->ctx, idx->vdata, 0, (size_t)idx->data_bytes, bytes);
  for (int c = 0; c < idx->ncols && !st; c++) {
    const tabcl__catcol *col = &idx->cols[c];
    int64_t *o = offs + col->label_base + c;
    o[0] = 0;
    if (!col->length) continue;
    st = tabcl__download(idx->ctx, col->doffs, 0, ((size_t)col->length + 1) * 8, o);
    for (int64_t i = 0; !st && i <= col->length; i++) o[i] -= col->data_base;
  }
  if (st) goto done;
  /* A temporary file in the same folder, renamed over path at the end, so
     no reader ever sees a partial index and a failure leaves nothing. */
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp-XXXXXX", 12);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    st = tabcl__fail(TABCL_IO_ERROR, "%s: cannot create a file next to %s: %s", fn, path,
                     strerror(errno));
    goto done;
  }
  (void)fchmod(fd, 0644);
  w.f = fdopen(fd, "wb");
  if (!w.f) {
    st = tabcl__fail(TABCL_IO_ERROR, "%s: cannot write %s: %s", fn, tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    goto done;
  }
  errno = 0;
  write_index(&w, idx, bytes, offs);
  /* fflush is where a full disk usually shows; fsync where quotas on some
     network file systems do. Both pass the injection point. */
  if (!w.failed && (w.failed = tabcl__fault_io()) == 0 && fflush(w.f) != 0)
    w.failed = errno ? errno : EIO;
  if (!w.failed && (w.failed = tabcl__fault_io()) == 0 && fsync(fileno(w.f)) != 0 &&
      errno != EINVAL)
    w.failed = errno;
  if (fclose(w.f) != 0 && !w.failed) w.failed = errno ? errno : EIO;
  if (w.failed) {
    st = tabcl__fail(TABCL_IO_ERROR, "%s: writing %s failed: %s", fn, path, strerror(w.failed));
    unlink(tmp);
    goto done;
  }
  int injected = tabcl__fault_io();
  if (injected || rename(tmp, path) != 0) {
    st = tabcl__fail(TABCL_IO_ERROR, "%s: cannot replace %s: %s", fn, path,
                     strerror(injected ? injected : errno));
    unlink(tmp);
    goto done;
  }
  /* After the rename the new index is the file at path; a folder that will
     not sync leaves it there but may lose the rename in a crash, so the
     caller hears of it (saving again is safe). */
  int synced = sync_folder(path, folder);
  if (synced)
    st = tabcl__fail(TABCL_IO_ERROR, "%s: %s was replaced, but syncing its folder failed: %s",
                     fn, path, strerror(synced));
done:
  tabcl__free(tmp);
  tabcl__free(folder);
  tabcl__free(w.buf);
  tabcl__free_large(bytes, nbytes);
  tabcl__free(offs);
  return st;
}

/* ---- load --------------------------------------------------------------- */

typedef struct reader {
  const uint8_t *p;
  size_t left;
} reader;

static int r_u64(reader *r, uint64_t *v) {
  if (r->left < 8) return 0;
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)r->p[i] << (8 * i);
  r->p += 8;
  r->left -= 8;
  *v = x;
  return 1;
}

static int r_u32(reader *r, uint32_t *v) {
  if (r->left < 4) return 0;
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) x |= (uint32_t)r->p[i] << (8 * i);
  r->p += 4;
  r->left -= 4;
  *v = x;
  return 1;
}

/* From this many bytes a file is read by the context's worker pool (where
   upload.threads gives two or more), a part each with pread: the copy out
   of the page cache, and the clearing of the buffer's fresh pages on their
   first write, then run on several cores (bench/history/code-notes.md, "Threaded reads"). */
#define READ_PARALLEL_MIN ((size_t)1 << 20)

/* Bytes [at + *got, at + n) of fd into dst + *got with pread: 0, or the
   errno of a failed read. A file that shrank ends the read early, *got
   short of n. Both the calling thread's read and each threaded part. */
static int read_range(int fd, uint8_t *dst, size_t at, size_t n, size_t *got) {
  while (*got < n) {
    const int injected = tabcl__fault_io();
    ssize_t k = injected ? (errno = injected, -1)
                         : pread(fd, dst + *got, n - *got, (off_t)(at + *got));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    if (k == 0) break;
    *got += (size_t)k;
  }
  return 0;
}

typedef struct read_job {
  int fd;
  atomic_int err;   /* the first failed part's errno; -1 where the file ended early */
} read_job;

/* One part of a threaded read: bytes [at, at + n) of the file into dst. */
static void read_part(void *dst, size_t at, size_t n, const void *arg) {
  read_job *j = (read_job *)(uintptr_t)arg;
  if (atomic_load_explicit(&j->err, memory_order_relaxed)) return;   /* another part failed */
  size_t got = 0;
  const int e = read_range(j->fd, dst, at, n, &got);
  if (e || got < n) {
    int none = 0;
    atomic_compare_exchange_strong(&j->err, &none, e ? e : -1);
  }
}

/* The file whole into *out (tabcl__malloc_large of *cap bytes; *size of
   them read). */
static tabcl_status read_file(tabcl_context *ctx, const char *path, uint8_t **out, size_t *size,
                              size_t *cap) {
  static const char fn[] = "tabcl_category_index_load";
  int fd = open(path, O_RDONLY);
  if (fd < 0) return tabcl__fail(TABCL_IO_ERROR, "%s: cannot open %s: %s", fn, path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return tabcl__fail(TABCL_IO_ERROR, "%s: cannot stat %s: %s", fn, path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return tabcl__fail(TABCL_IO_ERROR, "%s: %s is %s, not a regular file", fn, path,
                       S_ISDIR(sb.st_mode) ? "a directory" : "something else");
  }
  size_t n = (size_t)sb.st_size;
  /* a foreign file is refused before it is read whole, however large */
  uint8_t head[8];
  ssize_t got_head = n >= 8 ? pread(fd, head, 8, 0) : 0;
  if (got_head < 0) {
    int e = errno;
    close(fd);
    return tabcl__fail(TABCL_IO_ERROR, "%s: reading %s failed: %s", fn, path, strerror(e));
  }
  if (got_head == 8 && memcmp(head, MAGIC, 8) != 0) {
    close(fd);
    return tabcl__fail(TABCL_CORRUPT_DATA, "%s: %s: not a tabcl index file (bad magic)", fn, path);
  }
  const size_t want = n ? n : 1;   /* never a request for 0 bytes */
  uint8_t *buf = tabcl__malloc_large(want);
  if (!buf) {
    close(fd);
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "%s: out of host memory for the %zu bytes of %s", fn,
                       n, path);
  }
  size_t got = 0;
  int e = 0;
  const int threads = tabcl__workers_threads(ctx, 0);
  if (n >= READ_PARALLEL_MIN && threads >= 2) {
    read_job j = {.fd = fd};
    atomic_init(&j.err, 0);
    tabcl__workers_run(ctx, threads, TABCL__WORKERS_PART, read_part, buf, 0, n, &j);
    e = atomic_load(&j.err);
    if (!e) got = n;
    e = e < 0 ? 0 : e;   /* ended early: read again on this thread, as far as it goes */
  }
  if (!e && got < n) e = read_range(fd, buf, 0, n, &got);
  if (e) {
    close(fd);
    tabcl__free_large(buf, want);
    return tabcl__fail(TABCL_IO_ERROR, "%s: reading %s failed: %s", fn, path, strerror(e));
  }
  close(fd);
  *out = buf;
  *size = got;
  *cap = want;
  return TABCL_OK;
}

static tabcl_status corrupt(const char *path, const char *why) {
  return tabcl__fail(TABCL_CORRUPT_DATA, "tabcl_category_index_load: %s: %s", path, why);
}

/* A column's offsets as int64: the file's own bytes where they are aligned
   on a little-endian host (a load of short labels was mostly this decode:
   a byte loop per offset into fresh memory), else decoded into *own. NULL
   when out of memory. */
static const int64_t *column_offsets(const uint8_t *at, uint64_t n, int64_t **own) {
  *own = NULL;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if ((uintptr_t)at % _Alignof(int64_t) == 0) return (const int64_t *)(const void *)at;
#endif
  int64_t *off = tabcl__malloc((size_t)n * sizeof *off);
  if (!off) return NULL;
  reader r = {at, (size_t)n * 8};
  for (uint64_t i = 0; i < n; i++) {
    uint64_t o = 0;
    r_u64(&r, &o);
    off[i] = (int64_t)o;
  }
  *own = off;
  return off;
}

/* Frees the views' offsets that are not the file's own bytes. */
static void free_views(tabcl_strings_view *views, uint32_t n, const uint8_t *file, size_t size) {
  for (uint32_t i = 0; views && i < n; i++) {
    const uint8_t *p = (const uint8_t *)(const void *)views[i].offsets;
    if (p && !(p >= file && p < file + size)) tabcl__free((void *)views[i].offsets);
  }
  tabcl__free(views);
}

/* Parses the columns into views pointing at the file's offsets (or decoded
   ones) and at its bytes, with each column's longest label. Every size is
   checked against what is left of the file before anything is allocated
   for it, so the structure needs no checksum to be read safely. The
   checksum is compared first where `check`; else load compares it beside
   the fit (*version_out and *want_out say how). */
static tabcl_status parse(tabcl_context *ctx, const char *path, const uint8_t *file, size_t size,
                          int check,
                          uint32_t *version_out, uint64_t *want_out, int *ncols_out,
                          tabcl_code_order *order_out, tabcl_strings_view **views_out,
                          int64_t **longest_out) {
  static const size_t HEADER = 8 + 16;
  if (size < HEADER + 8) return corrupt(path, "too short to be a saved index");
  if (memcmp(file, MAGIC, 8) != 0) return corrupt(path, "not a tabcl index file (bad magic)");
  size_t body = size - 8;
  reader r = {file + 8, body - 8};
  uint32_t version = 0, order = 0, ncols = 0, zero = 0;
  r_u32(&r, &version);
  /* the version says which checksum the file has */
  if (version != 1 && version != FORMAT_VERSION) {
    char why[96];
    snprintf(why, sizeof why, "format version %u; this library reads 1 and %u", version,
             FORMAT_VERSION);
    return corrupt(path, why);
  }
  reader ck = {file + body, 8};
  uint64_t want = 0;
  r_u64(&ck, &want);
  if (check && tabcl__catindex_file_checksum(version, file, body) != want)
    return corrupt(path, "checksum mismatch (truncated, extended or altered)");
  *version_out = version;
  *want_out = want;
  r_u32(&r, &order);
  r_u32(&r, &ncols);
  r_u32(&r, &zero);
  if (order > 1 || zero != 0) return corrupt(path, "bad header fields");
  /* each column takes at least 32 bytes, which bounds the count before allocating */
  if (ncols < 1 || ncols > r.left / 32) return corrupt(path, "bad column count");
  tabcl_strings_view *views = tabcl__calloc(ncols, sizeof *views);
  int64_t *longest = tabcl__calloc(ncols, sizeof *longest);
  if (!views || !longest) {
    tabcl__free(views);
    tabcl__free(longest);
    return tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "tabcl_category_index_load: out of host memory for %u column views", ncols);
  }
  tabcl_status st = TABCL_OK;
  uint32_t c;
  for (c = 0; c < ncols; c++) {
    uint64_t len, bytes, hasv;
    if (!r_u64(&r, &len) || !r_u64(&r, &bytes) || !r_u64(&r, &hasv)) {
      st = corrupt(path, "column header cut short");
      break;
    }
    if (hasv > 1 || len > (uint64_t)INT32_MAX - 1 || len + 1 > r.left / 8) {
      st = corrupt(path, "bad column header");
      break;
    }
    int64_t *own;
    const int64_t *off = column_offsets(r.p, len + 1, &own);
    if (!off) {
      st = tabcl__fail(TABCL_OUT_OF_MEMORY,
                       "tabcl_category_index_load: column %u: out of host memory for %llu offsets",
                       c, (unsigned long long)len + 1);
      break;
    }
    views[c].offsets = off;
    views[c].length = (int64_t)len;
    r.p += (len + 1) * 8;
    r.left -= (len + 1) * 8;
    const uint64_t last = (uint64_t)off[len];
    /* the check of a caller's view (an offset past INT64_MAX reads as
       negative), which finds the longest label too, on the context's
       worker pool for long columns as a fit's is; its message is replaced
       by the file's */
    views[c].data = r.p;
    if (off[0] != 0 || tabcl__strings_validate_on(ctx, &views[c], NULL, -1, &longest[c])) {
      st = corrupt(path, "bad offsets");
      break;
    }
    if (last != bytes || bytes > r.left) {
      st = corrupt(path, "label data cut short or offsets disagree with it");
      break;
    }
    r.p += bytes;
    r.left -= bytes;
    if (hasv) {
      size_t vb = (size_t)(len + 7) / 8;
      if (vb > r.left) {
        st = corrupt(path, "validity cut short");
        break;
      }
      views[c].validity = r.p;
      r.p += vb;
      r.left -= vb;
    }
  }
  if (!st && r.left != 0) st = corrupt(path, "bytes after the last column");
  if (st) {
    free_views(views, ncols, file, size);
    tabcl__free(longest);
    return st;
  }
  *ncols_out = (int)ncols;
  *order_out = (tabcl_code_order)order;
  *views_out = views;
  *longest_out = longest;
  return TABCL_OK;
}

typedef struct check_job {
  const uint8_t *file;
  size_t body;
  uint32_t version;
  uint64_t want, got;
} check_job;

static void *check_run(void *arg) {
  check_job *j = arg;
  j->got = tabcl__catindex_file_checksum(j->version, j->file, j->body);
  return NULL;
}

tabcl_status tabcl_category_index_load(tabcl_context *ctx, const char *path,
                                       tabcl_category_index **out) {
  static const char fn[] = "tabcl_category_index_load";
  if (!ctx || !path || !out)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                       !ctx ? "ctx" : !path ? "path" : "out");
  uint8_t *file = NULL;
  size_t size = 0, cap = 0;
  tabcl_status st = read_file(ctx, path, &file, &size, &cap);
  if (st) return st;
  int ncols = 0;
  tabcl_code_order order = TABCL_CODES_BY_POSITION;
  tabcl_strings_view *views = NULL;
  int64_t *longest = NULL;
  check_job job = {file, 0, 0, 0, 0};
  st = parse(ctx, path, file, size, 0, &job.version, &job.want, &ncols, &order, &views, &longest);
  /* A file that fails its structure gets the verdicts in their order of
     old, its checksum first. */
  if (st == TABCL_CORRUPT_DATA)
    st = parse(ctx, path, file, size, 1, &job.version, &job.want, &ncols, &order, &views, &longest);
  if (!st) {
    /* The checksum beside the fit, which mostly waits for the device (the
       fit reads only what parse bounded): on the H200 the load of 200,000
       labels of 8 B went from 1.35-1.46x of fit + read to 1.09-1.16x
       (bench/history/2026-11-to-12.md, "Load beside the fit"). A mismatch throws the
       index away. */
    job.body = size - 8;
    pthread_t tid;
    const int threaded = pthread_create(&tid, NULL, check_run, &job) == 0;
    if (!threaded) check_run(&job);
    tabcl__clear_error();
    if (!threaded && job.got != job.want)
      st = corrupt(path, "checksum mismatch (truncated, extended or altered)");
    tabcl_category_index *idx = NULL;
    if (!st) st = tabcl__catindex_build(ctx, ncols, views, longest, order, fn, &idx);
    if (threaded) pthread_join(tid, NULL);
    if (job.got != job.want) {
      tabcl_category_index_destroy(idx);
      idx = NULL;
      st = corrupt(path, "checksum mismatch (truncated, extended or altered)");
    }
    if (!st) *out = idx;
    free_views(views, (uint32_t)ncols, file, size);
    tabcl__free(longest);
  }
  tabcl__free_large(file, cap);
  return st;
}
