/* Shared by the fuzz targets: one context per process, a byte reader over
 * the fuzz input, and a hard stop that libFuzzer reports as a crash. */
#ifndef TABCL_FUZZ_COMMON_H
#define TABCL_FUZZ_COMMON_H
#include <stddef.h>
#include <stdint.h>

#include "tabcl/tabcl.h"

/* The process's context (created on first use, which must be inside
   LLVMFuzzerTestOneInput; aborts if none can be made).
   Kernels are cached on disk in the build folder (TABCL_FUZZ_CACHE), or in
   $TABCL_CACHE_DIR when that is set. */
tabcl_context *fz_context(void);

/* Puts back the deadly-signal handlers that were in place before the first
   tabcl call (PoCL's LLVM replaces them when it compiles), so libFuzzer
   saves the input of a crash. Call after library calls. */
void fz_restore_signals(void);

/* Reads the input front to back; past the end every read gives zeros. */
typedef struct fz_reader {
  const uint8_t *p;
  size_t n, at;
} fz_reader;
uint8_t fz_u8(fz_reader *r);
uint16_t fz_u16(fz_reader *r);
uint64_t fz_u64(fz_reader *r);
size_t fz_left(const fz_reader *r);

/* Prints what went wrong and aborts, so libFuzzer saves the input. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#define FZ_CHECK(cond, ...) \
  do { if (!(cond)) fz_fail(__VA_ARGS__); } while (0)
#endif
