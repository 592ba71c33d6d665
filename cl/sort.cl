// Bitonic sort of (ulong key, uint value) pairs, ascending by key then value.
//
// The network is the "flip" form of bitonic sort: the first stage of each
// merge of blocks of size k pairs position a with its mirror a ^ (k - 1),
// every later stage pairs a with a + j, and every comparator puts the
// smaller pair at the lower position. Positions >= n act as +infinity and
// then never move, so no kernel reads or writes them: the array need not
// be padded to a power of two.
//
// The host defines SORT_TILE (pairs one work-group sorts in local memory, a
// power of two) and SORT_WG (its work-group size, a power of two dividing
// SORT_TILE / 2) from the device's local memory and work-group limits.

// The defaults only serve builds that name no tile (cl-probe's build check).
#ifndef SORT_TILE
#define SORT_TILE 256
#endif
#ifndef SORT_WG
#define SORT_WG 64
#endif

#define SORT_GREATER(ka, va, kb, vb) ((ka) > (kb) || ((ka) == (kb) && (va) > (vb)))

// Stages run in local memory on one tile per work-group. full = 1: every
// stage of a complete sort of the tile (merges of size 2 .. SORT_TILE).
// full = 0: only the strides SORT_TILE/2 .. 1 that finish a longer merge
// after the global passes. Tiles are numbered from first_tile so a host can
// split a launch that would exceed the NDRange limits.
__kernel __attribute__((reqd_work_group_size(SORT_WG, 1, 1)))
void sort_local(__global ulong *keys, __global uint *vals, ulong n, ulong first_tile, int full) {
  __local ulong lk[SORT_TILE];
  __local uint lv[SORT_TILE];
  const uint lid = (uint)get_local_id(0);
  const ulong base = (first_tile + get_group_id(0)) * (ulong)SORT_TILE;
  for (uint i = lid; i < SORT_TILE; i += SORT_WG) {
    ulong p = base + i;
    // The sentinel is never placed below a real pair: it only ties or loses
    // against pairs at lower positions, and ties do not swap.
    ulong key = ULONG_MAX;
    uint val = UINT_MAX;
    if (p < n) {
      key = keys[p];
      val = vals[p];
    }
    lk[i] = key;
    lv[i] = val;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = full ? 2u : (uint)SORT_TILE; k <= SORT_TILE; k <<= 1) {
    for (uint j = k >> 1; j > 0; j >>= 1) {
      const int flip = full && j == (k >> 1);
      for (uint c = lid; c < SORT_TILE / 2; c += SORT_WG) {
        // the c-th comparator's lower position: c with a zero bit inserted at j
        uint a = ((c & ~(j - 1)) << 1) | (c & (j - 1));
        uint b = flip ? (a ^ (k - 1)) : (a | j);
        ulong ka = lk[a], kb = lk[b];
        uint va = lv[a], vb = lv[b];
        if (SORT_GREATER(ka, va, kb, vb)) {
          lk[a] = kb;
          lk[b] = ka;
          lv[a] = vb;
          lv[b] = va;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  for (uint i = lid; i < SORT_TILE; i += SORT_WG) {
    ulong p = base + i;
    if (p < n) {
      keys[p] = lk[i];
      vals[p] = lv[i];
    }
  }
}

#define SORT_CMPX(x, y)                                                 \
  do {                                                                  \
    if (SORT_GREATER(rk[x], rv[x], rk[y], rv[y])) {                     \
      ulong tk_ = rk[x];                                                \
      uint tv_ = rv[x];                                                 \
      rk[x] = rk[y];                                                    \
      rv[x] = rv[y];                                                    \
      rk[y] = tk_;                                                      \
      rv[y] = tv_;                                                      \
    }                                                                   \
  } while (0)

// One global pass running LOGR consecutive stages with strides j, j/2, ...,
// j / 2^(LOGR-1) (j = 2^logj >= SORT_TILE), each work-item holding R pairs in
// registers, so a long merge costs one pass over memory per LOGR stages
// instead of one per stage. The R pairs of work-item w lie in a block of 2j
// at spacing step = 2j / R, offset b = w mod step; adjacent work-items touch
// adjacent addresses. With flip set the first stage is the mirror stage of
// a merge of size 2j: the upper half's pairs are then taken at offset
// step - 1 - b, which keeps register order equal to position order and
// turns the mirror into register t <-> R-1-t. Work-items are numbered from
// first so the host can split a launch.
#define SORT_GLOBAL_KERNEL(R, LOGR)                                                        \
  __kernel void sort_global_##R(__global ulong *keys, __global uint *vals, ulong n,       \
                                uint logj, int flip, ulong first) {                       \
    const ulong w = first + get_global_id(0);                                              \
    const uint logstep = logj + 1 - LOGR;                                                  \
    const ulong step = (ulong)1 << logstep;                                                \
    const ulong b = w & (step - 1);                                                        \
    const ulong lo = ((w >> logstep) << (logj + 1)) + b;                                   \
    if (lo >= n) return;                                                                   \
    const ulong hi = flip ? lo - b + ((ulong)1 << logj) + (step - 1 - b)                   \
                          : lo + ((ulong)1 << logj);                                       \
    ulong rk[R];                                                                           \
    uint rv[R];                                                                            \
    _Pragma("unroll") for (uint t = 0; t < R; t++) {                                       \
      ulong p = t < R / 2 ? lo + t * step : hi + (t - R / 2) * step;                       \
      rk[t] = p < n ? keys[p] : (ulong)ULONG_MAX;                                          \
      rv[t] = p < n ? vals[p] : (uint)UINT_MAX;                                            \
    }                                                                                      \
    if (flip) {                                                                            \
      _Pragma("unroll") for (uint t = 0; t < R / 2; t++) SORT_CMPX(t, R - 1 - t);          \
    }                                                                                      \
    /* constant trip counts, so every register index is a constant after unrolling */     \
    _Pragma("unroll") for (uint q = 0; q < LOGR; q++) {                                    \
      const uint s = (R / 2) >> q;                                                         \
      if (q > 0 || !flip) {                                                                \
        _Pragma("unroll") for (uint t = 0; t < R; t++) if (!(t & s)) SORT_CMPX(t, t + s);  \
      }                                                                                    \
    }                                                                                      \
    _Pragma("unroll") for (uint t = 0; t < R; t++) {                                       \
      ulong p = t < R / 2 ? lo + t * step : hi + (t - R / 2) * step;                       \
      if (p < n) {                                                                         \
        keys[p] = rk[t];                                                                   \
        vals[p] = rv[t];                                                                   \
      }                                                                                    \
    }                                                                                      \
  }

SORT_GLOBAL_KERNEL(2, 1)
SORT_GLOBAL_KERNEL(4, 2)
SORT_GLOBAL_KERNEL(8, 3)
SORT_GLOBAL_KERNEL(16, 4)
