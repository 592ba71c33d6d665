/* The on-disk cache of program binaries.
 *
 * One file per key: a header (magic, format version, key length, binary
 * length, checksums), the key text itself and the binary. The file name
 * comes from a hash of the key, and the full key is stored and compared, so
 * a name collision or a stale entry is never trusted. Files are written to a
 * temporary name and renamed into place, so a reader sees a whole entry or
 * none.
 *
 * A cache that cannot be read or written only costs a rebuild, so this file
 * allocates with plain malloc: failure injection aims at paths that must
 * report an error, and every failure here is absorbed. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/internal.h"

#define CACHE_MAGIC "TABCLBIN"
#define CACHE_FORMAT 1u

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

char *tabcl__disk_cache_path(const char *dir, const char *key) {
  size_t cap = strlen(dir) + 64;
  char *path = malloc(cap);
  if (path)
    snprintf(path, cap, "%s/%016llx.clbin", dir, (unsigned long long)sum64(key, strlen(key)));
  return path;
}

unsigned char *tabcl__disk_cache_load(const char *dir, const char *key, size_t *size) {
  char *path = tabcl__disk_cache_path(dir, key);
  if (!path) return NULL;
  FILE *f = fopen(path, "rb");
  free(path);
  if (!f) return NULL;
  unsigned char *bin = NULL;
  char *stored_key = NULL;
  header h;
  size_t key_len = strlen(key);
  if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, CACHE_MAGIC, 8) != 0 ||
      h.format != CACHE_FORMAT || h.key_len != key_len || h.bin_len == 0 ||
      h.bin_len > ((uint64_t)1 << 31))
    goto bad;
  stored_key = malloc(key_len + 1);
  bin = malloc((size_t)h.bin_len);
  if (!stored_key || !bin) goto bad;
  if (fread(stored_key, 1, key_len, f) != key_len || memcmp(stored_key, key, key_len) != 0 ||
      sum64(stored_key, key_len) != h.key_sum)
    goto bad;
  if (fread(bin, 1, (size_t)h.bin_len, f) != h.bin_len || sum64(bin, (size_t)h.bin_len) != h.bin_sum)
    goto bad;
  if (fgetc(f) != EOF) goto bad; /* trailing bytes: not what we wrote */
  fclose(f);
  free(stored_key);
  *size = (size_t)h.bin_len;
  return bin;
bad:
  fclose(f);
  free(stored_key);
  free(bin);
  return NULL;
}

static int make_dirs(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) return -1;
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] == '/' || path[i] == '\0') {
      char c = path[i];
      path[i] = '\0';
      if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
      path[i] = c;
    }
  }
  return 0;
}

void tabcl__disk_cache_store(const char *dir, const char *key, const unsigned char *bin,
                             size_t size) {
  if (make_dirs(dir) != 0) return;
  char *path = tabcl__disk_cache_path(dir, key);
  if (!path) return;
  size_t cap = strlen(path) + 64;
  char *tmp = malloc(cap);
  if (!tmp) {
    free(path);
    return;
  }
  /* One counter for the whole process: two contexts building the same
     program on two threads must not write through one temporary name. */
  static atomic_uint counter;
  snprintf(tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
  FILE *f = fopen(tmp, "wb");
  if (f) {
    header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.format = CACHE_FORMAT;
    h.key_len = (uint32_t)strlen(key);
    h.bin_len = size;
    h.key_sum = sum64(key, h.key_len);
    h.bin_sum = sum64(bin, size);
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(key, 1, h.key_len, f) == h.key_len &&
             fwrite(bin, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
  }
  free(tmp);
  free(path);
}
