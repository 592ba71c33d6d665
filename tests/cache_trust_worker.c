/* A helper process of test_cache_trust.c (not a test itself): waits until
 * the descriptor it is given reaches end of file, so that all its siblings
 * start together, then runs the cache-trust workload twice on the cache
 * folder it is given, each time on a fresh context. The first run builds
 * or loads (whatever the others have stored by then); the second must load
 * every program from the folder, which shows each entry there is whole.
 *
 *   cache_trust_worker CACHE_DIR START_FD SEED
 *
 * Prints one line and exits 0 when every call succeeded, every answer was
 * right and the second run built nothing; else 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cache_trust_work.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CACHE_DIR START_FD SEED\n", argv[0]);
    return 2;
  }
  int start = atoi(argv[2]);
  uint64_t seed = strtoull(argv[3], NULL, 0);
  char c;
  ssize_t k;
  while ((k = read(start, &c, 1)) != 0)
    if (k < 0 && errno != EINTR) break;
  close(start);

  ctw_result first, second;
  ctw_run(argv[1], seed, &first);
  if (first.error[0]) {
    printf("worker %ld: first run: %s\n", (long)getpid(), first.error);
    return 1;
  }
  ctw_run(argv[1], seed, &second);
  if (second.error[0]) {
    printf("worker %ld: second run: %s\n", (long)getpid(), second.error);
    return 1;
  }
  uint64_t programs = first.stats.programs_built + first.stats.programs_from_cache;
  printf("worker %ld: first run built %llu, loaded %llu; second built %llu, loaded %llu%s%s\n",
         (long)getpid(), (unsigned long long)first.stats.programs_built,
         (unsigned long long)first.stats.programs_from_cache,
         (unsigned long long)second.stats.programs_built,
         (unsigned long long)second.stats.programs_from_cache,
         first.refusal[0] ? "; refused: " : "", first.refusal);
  /* The first run stored every program it built (or found it stored), so a
     second context must find all of them whole. */
  if (second.stats.programs_built != 0 || second.stats.programs_from_cache != programs ||
      first.refusal[0] || second.refusal[0])
    return 1;
  return 0;
}
