/* Host allocation and the failure-injection counters.
 *
 * Every host allocation and every OpenCL call the library makes passes a
 * counter here, so a test can make exactly the Nth one fail and then check
 * that the public call returned an error and leaked nothing (the SQLite
 * approach). Without TABCL_FAULT_INJECTION the counters compile away. */
/* MAP_ANONYMOUS and madvise (tabcl__malloc_large) are outside POSIX 2008 */
#define _DEFAULT_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/internal.h"

static atomic_long live_allocs;

#ifdef TABCL_FAULT_INJECTION
static atomic_long fail_alloc_at, fail_cl_at, allocs_seen, cl_seen;
static atomic_long fail_io_at, io_seen;
static atomic_int fired, io_errno;

void tabcl__fault_set(long a, long c) {
  atomic_store(&allocs_seen, 0);
  atomic_store(&cl_seen, 0);
  atomic_store(&io_seen, 0);
  atomic_store(&fired, 0);
  atomic_store(&fail_io_at, 0);
  atomic_store(&fail_alloc_at, a);
  atomic_store(&fail_cl_at, c);
}

void tabcl__fault_set_io(long at, int err) {
  tabcl__fault_set(0, 0);
  atomic_store(&io_errno, err);
  atomic_store(&fail_io_at, at);
}
int tabcl__fault_enabled(void) { return 1; }
int tabcl__fault_armed(void) {
  return atomic_load(&fail_alloc_at) > 0 || atomic_load(&fail_cl_at) > 0 ||
         atomic_load(&fail_io_at) > 0;
}

static _Thread_local int suspended;
int tabcl__fault_suspend(int on) {
  const int was = suspended;
  suspended = on;
  return was;
}

static int should_fail(atomic_long *seen, atomic_long *at) {
  if (suspended) return 0;
  long n = atomic_fetch_add(seen, 1) + 1;
  long target = atomic_load(at);
  if (target > 0 && n == target) {
    atomic_store(&fired, 1);
    return 1;
  }
  return 0;
}
int tabcl__fault_cl(void) { return should_fail(&cl_seen, &fail_cl_at); }
static int fail_alloc(void) { return should_fail(&allocs_seen, &fail_alloc_at); }
int tabcl__fault_io(void) {
  return should_fail(&io_seen, &fail_io_at) ? atomic_load(&io_errno) : 0;
}
int tabcl__fault_fired(void) { return atomic_load(&fired); }
long tabcl__fault_allocs_seen(void) { return atomic_load(&allocs_seen); }
long tabcl__fault_cl_seen(void) { return atomic_load(&cl_seen); }
long tabcl__fault_io_seen(void) { return atomic_load(&io_seen); }
#else
void tabcl__fault_set(long a, long c) { (void)a; (void)c; }
int tabcl__fault_suspend(int on) { (void)on; return 0; }
void tabcl__fault_set_io(long at, int err) { (void)at; (void)err; }
int tabcl__fault_io(void) { return 0; }
long tabcl__fault_io_seen(void) { return 0; }
int tabcl__fault_enabled(void) { return 0; }
int tabcl__fault_armed(void) { return 0; }
int tabcl__fault_cl(void) { return 0; }
static int fail_alloc(void) { return 0; }
int tabcl__fault_fired(void) { return 0; }
long tabcl__fault_allocs_seen(void) { return 0; }
long tabcl__fault_cl_seen(void) { return 0; }
#endif

void tabcl__fault_reset(void) { tabcl__fault_set(0, 0); }

long tabcl__alloc_live(void) { return atomic_load(&live_allocs); }

void *tabcl__malloc(size_t n) {
  if (fail_alloc()) return NULL;
  void *p = malloc(n ? n : 1);
  if (p) atomic_fetch_add(&live_allocs, 1);
  return p;
}

void *tabcl__calloc(size_t count, size_t size) {
  if (fail_alloc()) return NULL;
  if (count == 0 || size == 0) count = size = 1;
  void *p = calloc(count, size);
  if (p) atomic_fetch_add(&live_allocs, 1);
  return p;
}

void *tabcl__realloc(void *p, size_t n) {
  if (!p) return tabcl__malloc(n);
  if (fail_alloc()) return NULL;
  return realloc(p, n ? n : 1);
}

void tabcl__free(void *p) {
  if (!p) return;
  atomic_fetch_sub(&live_allocs, 1);
  free(p);
}

/* Large buffers in memory of their own, in transparent huge pages where
   the kernel allows: fresh memory is cleared page by page as it is first
   written, and 2 MiB pages make that several times quicker than 4 KiB
   ones (bench/history/code-notes.md, "Huge pages").
   Below TABCL__LARGE_ALLOC glibc's malloc reuses its heap instead. */
static int large_mapped(size_t n) {
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
  return n >= TABCL__LARGE_ALLOC;
#else
  (void)n;
  return 0;
#endif
}

void *tabcl__malloc_large(size_t n) {
  if (!large_mapped(n)) return tabcl__malloc(n);
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
  if (fail_alloc()) return NULL;
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  (void)madvise(p, n, MADV_HUGEPAGE);   /* advice: may be ignored */
  atomic_fetch_add(&live_allocs, 1);
  return p;
#else
  return NULL;
#endif
}

void tabcl__free_large(void *p, size_t n) {
  if (!p) return;
  if (!large_mapped(n)) {
    tabcl__free(p);
    return;
  }
  atomic_fetch_sub(&live_allocs, 1);
  munmap(p, n);
}

char *tabcl__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = tabcl__malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}
