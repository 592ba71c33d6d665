/* Errors, host allocation and failure injection (error.c, alloc.c). */
#ifndef TABCL_RUNTIME_ERROR_H
#define TABCL_RUNTIME_ERROR_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

#include "tabcl/tabcl.h"

#if defined(__GNUC__)
#define TABCL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TABCL_PRINTF(a, b)
#endif

/* ---- errors (error.c) ------------------------------------------------- */

/* Records the calling thread's detail and returns s, so a failure path can
   be one line: return tabcl__fail(TABCL_INVALID_ARGUMENT, "...", ...); */
tabcl_status tabcl__fail(tabcl_status s, const char *fmt, ...) TABCL_PRINTF(2, 3);
/* Maps an OpenCL error to a status (allocation failures become
   TABCL_OUT_OF_MEMORY, the rest TABCL_OPENCL_ERROR) and records
   "<call>: CL_NAME (code)" plus an optional context. */
tabcl_status tabcl__cl_fail(cl_int err, const char *call, const char *what);
const char *tabcl__cl_error_name(cl_int err);
void tabcl__clear_error(void);
/* Appends text to the calling thread's detail (the build log, say). */
void tabcl__append_error(const char *text);

/* ---- host allocation with failure injection (alloc.c) ---------------- */

void *tabcl__malloc(size_t n);
void *tabcl__calloc(size_t count, size_t size);
void *tabcl__realloc(void *p, size_t n);
void tabcl__free(void *p);
char *tabcl__strdup(const char *s);
/* A buffer of n bytes that may be large (a loaded file): from
   TABCL__LARGE_ALLOC bytes, anonymous memory of its own in transparent huge
   pages where the system has them; freed by tabcl__free_large with the same
   n. Counted and failed like tabcl__malloc. */
#define TABCL__LARGE_ALLOC ((size_t)32 << 20)
void *tabcl__malloc_large(size_t n);
void tabcl__free_large(void *p, size_t n);

/* Failure injection. When built with TABCL_FAULT_INJECTION, a test can make
   the Nth host allocation or the Nth OpenCL call from now fail (1-based;
   0 = never). Counting is process-wide. */
void tabcl__fault_set(long fail_alloc_at, long fail_cl_at);
void tabcl__fault_reset(void);
int tabcl__fault_fired(void);     /* whether an injected failure happened since set */
long tabcl__fault_allocs_seen(void);
long tabcl__fault_cl_seen(void);
int tabcl__fault_cl(void);        /* 1: the OpenCL call about to be made must fail */
/* 1: this thread's allocations and OpenCL calls neither count nor fail
   until it is called again with 0 (work whose path depends on timing or
   that is best effort); returns the setting it replaced, for nesting. */
int tabcl__fault_suspend(int on);
/* Whether a failure is set to be injected (an allocation, OpenCL call or
   file operation counted to). */
int tabcl__fault_armed(void);
int tabcl__fault_enabled(void);   /* 1 when the build has injection compiled in */
/* File I/O: the Nth write, fsync or rename (of an index save or a cache
   store) from now fails with errno err (ENOSPC, EDQUOT: a full disk).
   tabcl__fault_set and tabcl__fault_reset turn it off again. */
void tabcl__fault_set_io(long fail_io_at, int err);
long tabcl__fault_io_seen(void);
int tabcl__fault_io(void);        /* the errno the I/O about to be made must fail with, or 0 */
/* Wraps an OpenCL call returning cl_int: fails it on demand before it runs. */
#define TABCL_CL(call) (tabcl__fault_cl() ? CL_OUT_OF_RESOURCES : (call))

/* Live host allocations and live device buffers made through this file's
   helpers, for leak checks in tests. */
long tabcl__alloc_live(void);
long tabcl__mem_live(void);
/* Bytes of the device buffers alive in the process (pooled ones included,
   staging areas and sub-buffers not), and the most since the last reset,
   which starts the next peak at the bytes alive then (buffer.c). */
long long tabcl__mem_bytes_live(void);
long long tabcl__mem_bytes_peak_reset(void);
/* A buffer about to be released leaves the count of bytes. */
void tabcl__mem_bytes_gone(cl_mem m);

#endif
