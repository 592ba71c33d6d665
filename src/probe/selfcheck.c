/* The registry of self-checks that cl-probe runs on each device. Each
 * kernel family adds one line to the table. */
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "catindex/catindex.h"
#include "hash/hash.h"
#include "attention/sdpa.h"
#include "sort/sort.h"

typedef struct selfcheck {
  const char *name;
  tabcl__selfcheck_fn run;
} selfcheck;

static const selfcheck checks[] = {
    {"probe", tabcl__selfcheck_probe},
    {"hash", tabcl__selfcheck_hash},
    {"sdpa", tabcl__selfcheck_sdpa},
    {"sdpa_mma", tabcl__selfcheck_sdpa_mma},
    {"sort", tabcl__selfcheck_sort},
    {"catindex", tabcl__selfcheck_catindex},
};

int tabcl_selfcheck_count(void) { return (int)(sizeof checks / sizeof checks[0]); }

const char *tabcl_selfcheck_name(int i) {
  return i >= 0 && i < tabcl_selfcheck_count() ? checks[i].name : NULL;
}

tabcl_status tabcl_selfcheck_run(tabcl_context *ctx, int i) {
  if (!ctx || i < 0 || i >= tabcl_selfcheck_count())
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_selfcheck_run: no context or no check %d", i);
  tabcl__clear_error();
  return checks[i].run(ctx);
}

/* The simplest end-to-end check: a kernel writes base + i*i over a size that
   is not a work-group multiple, and the host compares every element. */
tabcl_status tabcl__selfcheck_probe(tabcl_context *ctx) {
  const uint64_t n = 100003, base = 0x123456789ULL;
  cl_mem buf = NULL;
  cl_kernel k = NULL;
  uint64_t *host = tabcl__malloc(n * sizeof *host);
  if (!host) return tabcl__fail(TABCL_OUT_OF_MEMORY, "probe self-check: out of host memory for %llu results",
                                (unsigned long long)n);
  tabcl_status s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, n * sizeof *host, NULL, &buf, "probe");
  if (!s) s = tabcl__kernel_create(ctx, "probe", NULL, "probe_iota", &k);
  size_t wg = k ? tabcl__wg_size(ctx, k, 256) : 1;
  uint64_t nn = n;
  if (!s) s = TABCL_SET_ARGS(k, "probe_iota", TABCL_ARG(buf), TABCL_ARG(base), TABCL_ARG(nn));
  if (!s) {
    size_t global = tabcl__round_up((size_t)n, wg);
    s = tabcl__launch(ctx, k, 1, &global, &wg, 0, NULL, NULL, "probe_iota");
  }
  if (!s) s = tabcl__read(ctx, buf, 0, n * sizeof *host, host);
  for (uint64_t i = 0; !s && i < n; i++)
    if (host[i] != base + i * i)
      s = tabcl__fail(TABCL_OPENCL_ERROR, "probe self-check: element %llu is %llu, expected %llu",
                      (unsigned long long)i, (unsigned long long)host[i],
                      (unsigned long long)(base + i * i));
  tabcl__kernel_release(k);
  tabcl__buffer_release(buf);
  tabcl__free(host);
  return s;
}
