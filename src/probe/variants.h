/* Every program variant the library can build on a device (variants.c):
 * the distinct (program, build options) pairs its planners can choose,
 * derived by asking the planners rather than listed by hand, so that a new
 * planner choice is covered without touching this file. cl-probe
 * --all-variants builds them all, so that a machine whose probe passes
 * never meets a build failure later. */
#ifndef TABCL_VARIANTS_H
#define TABCL_VARIANTS_H
#include "attention/sdpa.h"

typedef struct tabcl__variant {
  const char *program;   /* cl/<program>.cl */
  char options[256];     /* the planner's build options ("" for none) */
  char what[96];         /* the planner choice that asked for it first */
  int path;              /* attention: TABCL__SDPA_FUSED, _MMA or _CLBLAST; 0 otherwise */
  int dtype, head_dim;   /* attention: the call it was planned for */
  size_t group;          /* attention: work-items a group of its main kernel */
} tabcl__variant;

/* Pure: the variants the planners choose on target t with facts f (its
   clblast and mma_enabled say which backends exist; its fused_cap bounds
   the fused kernel's groups): every program with no options; attention in
   every dtype and every head dim 16..256 on every backend that takes it
   (each head dim of a tier pads to the same shape) and head dims past 256
   on the GEMM path; the sort at sizes from 2 to 2^30 pairs. Fills up to
   cap entries of out, each (program, options) once, and returns how many
   there are in all. */
int tabcl__variants_collect(const tabcl__target *t, const tabcl__sdpa_facts *f,
                            tabcl__variant *out, int cap);

/* Called for each variant built: s its status, ms the time it took,
   from_cache 1 from the disk cache, 0 compiled, -1 already in memory. */
typedef void (*tabcl__variant_report)(const tabcl__variant *v, tabcl_status s, double ms,
                                      int from_cache, void *arg);
/* Builds every variant of ctx's device through ctx's program cache
   (tabcl__program_get), reporting each. A fused variant whose compiled
   kernel runs fewer work-items a group than its shape needs adds the
   variant planned within that limit, as the executor would plan it.
   Returns the number that failed; *cold_ms (may be NULL) gets the time of
   the builds from source. With shards > 1 only the listed variants whose
   position modulo shards is shard are built (and what they add): processes
   given shards 0 .. shards-1 build the whole list between them. */
int tabcl__variants_build(tabcl_context *ctx, int shard, int shards,
                          tabcl__variant_report report, void *arg, double *cold_ms);
#endif
