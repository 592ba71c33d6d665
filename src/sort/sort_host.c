/* The host sort of (key, value) pairs (sort.h): a least-significant-byte
 * radix sort, for the fits small enough to run on the calling thread
 * (catindex_fit.c, fit.host_labels). */
#include <string.h>

#include "sort/sort.h"

void tabcl__sort_pairs_host(uint64_t *keys, uint32_t *values, size_t n, uint64_t *tkeys,
                            uint32_t *tvalues) {
  /* every byte's histogram in one read of the keys */
  size_t count[8][256];
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < n; i++)
    for (int b = 0; b < 8; b++) count[b][(keys[i] >> (8 * b)) & 0xFF]++;
  uint64_t *k = keys, *tk = tkeys;
  uint32_t *v = values, *tv = tvalues;
  for (int b = 0; b < 8; b++) {
    /* a byte every key shares moves nothing (short hashes, small columns'
       top bytes) */
    if (n == 0 || count[b][(k[0] >> (8 * b)) & 0xFF] == n) continue;
    size_t at[256], sum = 0;
    for (int d = 0; d < 256; d++) {
      at[d] = sum;
      sum += count[b][d];
    }
    /* stable: pairs of one digit keep their order */
    for (size_t i = 0; i < n; i++) {
      const size_t to = at[(k[i] >> (8 * b)) & 0xFF]++;
      tk[to] = k[i];
      tv[to] = v[i];
    }
    uint64_t *sk = k;
    uint32_t *sv = v;
    k = tk, v = tv, tk = sk, tv = sv;
  }
  if (k != keys) {
    memcpy(keys, k, n * sizeof *keys);
    memcpy(values, v, n * sizeof *values);
  }
}
