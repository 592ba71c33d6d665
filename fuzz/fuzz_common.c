#include "fuzz_common.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TABCL_FUZZ_CACHE
#define TABCL_FUZZ_CACHE ""
#endif

static tabcl_context *ctx;

/* PoCL's LLVM installs its own handlers for the deadly signals when it
   first compiles; libFuzzer's and the sanitizers' (which save the crashing
   input) are kept from before the first tabcl call and put back. */
static const int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
static struct sigaction saved[5];
static int have_saved;

void fz_restore_signals(void) {
  if (!have_saved) return;
  for (int i = 0; i < 5; i++) sigaction(sigs[i], &saved[i], NULL);
}

tabcl_context *fz_context(void) {
  if (ctx) return ctx;
  if (!have_saved) {
    for (int i = 0; i < 5; i++) sigaction(sigs[i], NULL, &saved[i]);
    have_saved = 1;
  }
  tabcl_options o = {0};
  const char *env = getenv("TABCL_CACHE_DIR");
  o.cache_dir = env ? env : TABCL_FUZZ_CACHE;
  tabcl_status s = tabcl_context_create(&o, &ctx);
  if (s != TABCL_OK) {
    fprintf(stderr, "fuzz: tabcl_context_create: %s: %s\n", tabcl_status_name(s),
            tabcl_last_error());
    abort();
  }
  fz_restore_signals();
  return ctx;
}

uint8_t fz_u8(fz_reader *r) { return r->at < r->n ? r->p[r->at++] : 0; }
uint16_t fz_u16(fz_reader *r) {
  uint16_t v = fz_u8(r);
  return (uint16_t)(v | (uint16_t)fz_u8(r) << 8);
}
uint64_t fz_u64(fz_reader *r) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)fz_u8(r) << (8 * i);
  return v;
}
size_t fz_left(const fz_reader *r) { return r->n - r->at; }

void fz_fail(const char *fmt, ...) {
  fz_restore_signals();
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz check failed: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n  last error: %s\n", tabcl_last_error());
  va_end(ap);
  abort();
}
