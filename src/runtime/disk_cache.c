/* The on-disk cache of program binaries.
 *
 * One file per key: a header (magic, format version, key length, binary
 * length, checksums), the key text itself and the binary. The file name
 * comes from a hash of the key, and the full key is stored and compared, so
 * a name collision or a stale entry is never trusted. Files are written
 * whole and synced under a temporary name, then renamed into place, so a
 * reader sees a whole entry or none.
 *
 * Trust. On a CPU device a program binary is native code that runs in the
 * caller's process, so an entry is only as trustworthy as whoever could
 * write it. The cache uses a folder, and an entry in it, only when it is
 * owned by this process's user and neither its group nor others may write
 * it; anything else is refused (not read, not written into) and the call
 * builds from source as if there were no cache. The folder is opened once
 * per load or store and every entry is reached through that descriptor
 * (openat / renameat), so the folder that was checked is the folder used,
 * whatever happens to its path meanwhile. Entries are opened with
 * O_NOFOLLOW and checked with fstat on the open descriptor; temporary files
 * are created with O_CREAT | O_EXCL | O_NOFOLLOW, so a name someone planted
 * (a symbolic link, a FIFO) is never followed or written through. Folders
 * are created 0700 and entries 0600.
 *
 * A cache that cannot be read or written only costs a rebuild, so this file
 * allocates with plain malloc: failure injection aims at paths that must
 * report an error, and every failure here is absorbed. Its writes, fsync
 * and rename do pass the I/O injection point, so tests can fill the disk. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/internal.h"

#define CACHE_MAGIC "TABCLBIN"
#define CACHE_FORMAT 1u
/* Temporary names tried before a store gives up (each taken name means
   something this process did not make sits in the folder). */
#define TEMP_TRIES 16

typedef struct header {
  char magic[8];
  uint32_t format;
  uint32_t key_len;
  uint64_t bin_len;
  uint64_t key_sum;
  uint64_t bin_sum;
} header;

static uint64_t sum64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* The entry's file name inside the folder. */
static void entry_name(const char *key, char *buf, size_t cap) {
  snprintf(buf, cap, "%016llx.clbin", (unsigned long long)sum64(key, strlen(key)));
}

char *tabcl__disk_cache_path(const char *dir, const char *key) {
  size_t cap = strlen(dir) + 64;
  char *path = malloc(cap);
  if (path) {
    char name[40];
    entry_name(key, name, sizeof name);
    snprintf(path, cap, "%s/%s", dir, name);
  }
  return path;
}

static void refuse(char *why, size_t cap, const char *fmt, ...) TABCL_PRINTF(3, 4);
static void refuse(char *why, size_t cap, const char *fmt, ...) {
  if (!why || !cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
}

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a regular file";
}

/* Whether sb (of `what` at `path`, of the wanted type) may be trusted: owned
   by this user, writable by no one else. Fills why when not. */
static int trusted(const struct stat *sb, int want_dir, const char *what, const char *path,
                   char *why, size_t cap) {
  if (want_dir ? !S_ISDIR(sb->st_mode) : !S_ISREG(sb->st_mode)) {
    refuse(why, cap, "%s %s is %s", what, path, file_kind(sb->st_mode));
    return 0;
  }
  uid_t me = geteuid();
  if (sb->st_uid != me) {
    refuse(why, cap, "%s %s is owned by uid %u, not by this user (uid %u)", what, path,
           (unsigned)sb->st_uid, (unsigned)me);
    return 0;
  }
  if (sb->st_mode & (S_IWGRP | S_IWOTH)) {
    refuse(why, cap, "%s %s is writable by %s (mode %04o)", what, path,
           (sb->st_mode & S_IWGRP) && (sb->st_mode & S_IWOTH) ? "its group and others"
           : (sb->st_mode & S_IWGRP)                          ? "its group"
                                                              : "others",
           (unsigned)(sb->st_mode & 07777));
    return 0;
  }
  return 1;
}

/* Creates dir and its missing parents, new ones 0700 (existing ones are left
   as they are: the folder itself is checked after it is opened). */
static int make_dirs(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) return -1;
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] == '/' || path[i] == '\0') {
      char c = path[i];
      path[i] = '\0';
      if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
      path[i] = c;
    }
  }
  return 0;
}

/* Opens the cache folder, creating it when asked, and checks it. Returns
   the descriptor, or -1: missing (why untouched) or refused (why filled). */
static int open_folder(const char *dir, int create, char *why, size_t cap) {
  if (create && make_dirs(dir) != 0) return -1;
  /* The folder's own path may be a symbolic link (a ~/.cache kept on another
     disk); what is checked is the folder it leads to, through this fd. */
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) refuse(why, cap, "cache folder %s cannot be opened: %s", dir, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !trusted(&sb, 1, "cache folder", dir, why, cap)) {
    close(fd);
    return -1;
  }
  return fd;
}

static int read_full(int fd, void *buf, size_t n) {
  unsigned char *p = buf;
  while (n) {
    ssize_t k = read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Every write of a store passes the I/O injection point, so a test can
   stand in for a full disk. */
static int write_full(int fd, const void *buf, size_t n) {
  const unsigned char *p = buf;
  while (n) {
    int injected = tabcl__fault_io();
    if (injected) {
      errno = injected;
      return -1;
    }
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Reads and checks the entry behind fd; NULL if it is not whole and ours. */
static unsigned char *read_entry(int fd, const char *key, const char *dir, const char *name,
                                 size_t *size, char *why, size_t cap) {
  struct stat sb;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (fstat(fd, &sb) != 0 || !trusted(&sb, 0, "cache entry", path, why, cap)) return NULL;
  header h;
  size_t key_len = strlen(key);
  if (read_full(fd, &h, sizeof h) != 0 || memcmp(h.magic, CACHE_MAGIC, 8) != 0 ||
      h.format != CACHE_FORMAT || h.key_len != key_len || h.bin_len == 0 ||
      h.bin_len > ((uint64_t)1 << 31) ||
      (uint64_t)sb.st_size != sizeof h + key_len + h.bin_len)
    return NULL;   /* short, long, foreign or stale: rebuilt, not a trust matter */
  char *stored_key = malloc(key_len + 1);
  unsigned char *bin = malloc((size_t)h.bin_len);
  unsigned char extra;
  if (!stored_key || !bin || read_full(fd, stored_key, key_len) != 0 ||
      memcmp(stored_key, key, key_len) != 0 || sum64(stored_key, key_len) != h.key_sum ||
      read_full(fd, bin, (size_t)h.bin_len) != 0 || sum64(bin, (size_t)h.bin_len) != h.bin_sum ||
      read(fd, &extra, 1) != 0) {   /* grew since fstat: not what was written */
    free(stored_key);
    free(bin);
    return NULL;
  }
  free(stored_key);
  *size = (size_t)h.bin_len;
  return bin;
}

unsigned char *tabcl__disk_cache_load(const char *dir, const char *key, size_t *size, char *why,
                                      size_t cap) {
  int dfd = open_folder(dir, 0, why, cap);
  if (dfd < 0) return NULL;
  char name[40];
  entry_name(key, name, sizeof name);
  /* O_NONBLOCK: opening a FIFO someone put at the name must not wait for a
     writer; fstat then refuses it. */
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  unsigned char *bin = NULL;
  if (fd >= 0) {
    bin = read_entry(fd, key, dir, name, size, why, cap);
    close(fd);
  } else if (errno == ELOOP) {
    refuse(why, cap, "cache entry %s/%s is a symbolic link", dir, name);
  }
  close(dfd);
  return bin;
}

static atomic_uint temp_counter;

void tabcl__disk_cache_temp_name(const char *entry, unsigned ahead, char *buf, size_t cap) {
  snprintf(buf, cap, "%s.tmp.%ld.%u", entry, (long)getpid(),
           atomic_load(&temp_counter) + ahead);
}

/* Creates a fresh temporary file beside the entry; -1 when none could be. */
static int create_temp(int dfd, const char *dir, const char *name, char *tmp, size_t tcap,
                       char *why, size_t cap) {
  for (int i = 0; i < TEMP_TRIES; i++) {
    /* One counter for the whole process (two contexts on two threads never
       pick one name) and the pid (two processes never do). O_EXCL makes a
       name that is already taken, by anything, fail rather than be used. */
    snprintf(tmp, tcap, "%s.tmp.%ld.%u", name, (long)getpid(), atomic_fetch_add(&temp_counter, 1));
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    if (errno != EEXIST) return -1;
  }
  refuse(why, cap, "cache folder %s: %d temporary names for %s were already taken; not stored",
         dir, TEMP_TRIES, name);
  return -1;
}

void tabcl__disk_cache_store(const char *dir, const char *key, const unsigned char *bin,
                             size_t size, char *why, size_t cap) {
  int dfd = open_folder(dir, 1, why, cap);
  if (dfd < 0) return;
  char name[40], tmp[96];
  entry_name(key, name, sizeof name);
  int fd = create_temp(dfd, dir, name, tmp, sizeof tmp, why, cap);
  if (fd < 0) {
    close(dfd);
    return;
  }
  header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CACHE_MAGIC, 8);
  h.format = CACHE_FORMAT;
  h.key_len = (uint32_t)strlen(key);
  h.bin_len = size;
  h.key_sum = sum64(key, h.key_len);
  h.bin_sum = sum64(bin, size);
  /* Whole and on disk before it gets its name: a crash never leaves a short
     entry under the final name (and a short one would be rebuilt anyway). */
  int ok = write_full(fd, &h, sizeof h) == 0 && write_full(fd, key, h.key_len) == 0 &&
           write_full(fd, bin, size) == 0 && !tabcl__fault_io() && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  /* renameat replaces whatever is at the name (a refused entry, a symbolic
     link, a FIFO: the link itself, never its target) and fails on a
     directory; either way nothing outside the folder is touched. */
  if (!ok || tabcl__fault_io() || renameat(dfd, tmp, dfd, name) != 0) unlinkat(dfd, tmp, 0);
  close(dfd);
}
