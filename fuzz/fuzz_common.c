#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TABCL_FUZZ_CACHE
#define TABCL_FUZZ_CACHE ""
#endif

static tabcl_context *ctx;

tabcl_context *fz_context(void) {
  if (ctx) return ctx;
  tabcl_options o = {0};
  const char *env = getenv("TABCL_CACHE_DIR");
  o.cache_dir = env ? env : TABCL_FUZZ_CACHE;
  tabcl_status s = tabcl_context_create(&o, &ctx);
  if (s != TABCL_OK) {
    fprintf(stderr, "fuzz: tabcl_context_create: %s: %s\n", tabcl_status_name(s),
            tabcl_last_error());
    abort();
  }
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
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz check failed: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n  last error: %s\n", tabcl_last_error());
  va_end(ap);
  abort();
}
