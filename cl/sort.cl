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
//
// Every kernel's last argument `at` is where the n pairs start in keys and
// vals: a sort may order one region of larger tables (a fit sorts each
// column's pairs where the index's entry tables will hold them).

// The defaults only serve builds that name no tile (cl-probe's build check).
#ifndef SORT_TILE
#define SORT_TILE 256
#endif
#ifndef SORT_WG
#define SORT_WG 64
#endif

#define SORT_GREATER(ka, va, kb, vb) ((ka) > (kb) || ((ka) == (kb) && (va) > (vb)))

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

// LOGR consecutive stages on R = 2^LOGR pairs held in registers rk/rv, in
// position order. With flip the first stage is a merge's mirror stage,
// register t <-> R-1-t. The trip counts are constants, so every register
// index is a constant after unrolling and the arrays stay in registers.
#define SORT_NETWORK(R, LOGR)                                                             \
  do {                                                                                    \
    if (flip) {                                                                           \
      _Pragma("unroll") for (uint t = 0; t < R / 2; t++) SORT_CMPX(t, R - 1 - t);         \
    }                                                                                     \
    _Pragma("unroll") for (uint q = 0; q < LOGR; q++) {                                   \
      const uint s = (R / 2) >> q;                                                        \
      if (q > 0 || !flip) {                                                               \
        _Pragma("unroll") for (uint t = 0; t < R; t++) if (!(t & s)) SORT_CMPX(t, t + s); \
      }                                                                                   \
    }                                                                                     \
  } while (0)

// Which R pairs one group of a round takes. A round runs LOGR stages with
// strides j, j/2, ..., j / 2^(LOGR-1) (j = 2^logj) inside blocks of 2j; the
// group's pairs lie at spacing step = 2j / R from offset b = w mod step, so
// adjacent groups touch adjacent addresses. With flip (the first stage is
// the mirror stage of a merge of size 2j) the upper half's pairs are taken
// from offset step - 1 - b instead, which keeps register order equal to
// position order and makes the mirror register t <-> R-1-t. lo and hi are
// the positions of registers 0 and R/2.
#define SORT_GROUP(T, w, logj, LOGR, flip, lo, hi, step)                   \
  const uint logstep_ = (logj) + 1 - (LOGR);                                 \
  const T step = (T)1 << logstep_;                                           \
  const T b_ = (w) & (step - 1);                                             \
  const T lo = (((w) >> logstep_) << ((logj) + 1)) + b_;                     \
  const T hi = (flip) ? lo - b_ + ((T)1 << (logj)) + (step - 1 - b_)         \
                      : lo + ((T)1 << (logj));

// One program holds every kernel of both plans: its build options come from
// the device alone, never from how many pairs a call sorts.

// ---- local memory ---------------------------------------------------------

// One padding slot per 16 keeps the small-step rounds, where a group's pairs
// are adjacent, from piling onto a few local-memory banks.
#define SORT_PAD(i) ((i) + ((i) >> 4))
#define SORT_LOCAL_SLOTS (SORT_TILE + SORT_TILE / 16)

#define SORT_LOCAL_ROUND(R, LOGR)                                                      \
  void sort_round_##R(__local ulong *lk, __local uint *lv, uint logj, int flip,         \
                      uint lid) {                                                      \
    for (uint w = lid; w < SORT_TILE / R; w += SORT_WG) {                              \
      SORT_GROUP(uint, w, logj, LOGR, flip, lo, hi, step)                              \
      ulong rk[R];                                                                     \
      uint rv[R];                                                                      \
      _Pragma("unroll") for (uint t = 0; t < R; t++) {                                 \
        uint p = SORT_PAD(t < R / 2 ? lo + t * step : hi + (t - R / 2) * step);        \
        rk[t] = lk[p];                                                                 \
        rv[t] = lv[p];                                                                 \
      }                                                                                \
      SORT_NETWORK(R, LOGR);                                                           \
      _Pragma("unroll") for (uint t = 0; t < R; t++) {                                 \
        uint p = SORT_PAD(t < R / 2 ? lo + t * step : hi + (t - R / 2) * step);        \
        lk[p] = rk[t];                                                                 \
        lv[p] = rv[t];                                                                 \
      }                                                                                \
    }                                                                                  \
  }

SORT_LOCAL_ROUND(2, 1)
SORT_LOCAL_ROUND(4, 2)
SORT_LOCAL_ROUND(8, 3)

// The stages of one merge from stride 2^logj down to 1, three per round
// (one read and one write of local memory per three stages).
void sort_local_merge(__local ulong *lk, __local uint *lv, int logj, int flip, uint lid) {
  while (logj >= 0) {
    int logr = logj + 1 < 3 ? logj + 1 : 3;
    if (logr == 3) sort_round_8(lk, lv, (uint)logj, flip, lid);
    else if (logr == 2) sort_round_4(lk, lv, (uint)logj, flip, lid);
    else sort_round_2(lk, lv, (uint)logj, flip, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    logj -= logr;
    flip = 0;
  }
}

// Stages run in local memory on one tile per work-group. full = 1: a
// complete sort of the tile (merges of size 2 .. SORT_TILE). full = 0: only
// the strides SORT_TILE/2 .. 1 that finish a longer merge after the global
// passes. Tiles are numbered from first_tile so a host can split a launch
// that would exceed the NDRange limits.
__kernel __attribute__((reqd_work_group_size(SORT_WG, 1, 1)))
void sort_local(__global ulong *keys, __global uint *vals, ulong n, ulong first_tile, int full,
                ulong at) {
  keys += at;
  vals += at;
  __local ulong lk[SORT_LOCAL_SLOTS];
  __local uint lv[SORT_LOCAL_SLOTS];
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
    lk[SORT_PAD(i)] = key;
    lv[SORT_PAD(i)] = val;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int logt = 31 - (int)clz((uint)SORT_TILE);
  if (full) {
    for (int logk = 1; logk <= logt; logk++) sort_local_merge(lk, lv, logk - 1, 1, lid);
  } else {
    sort_local_merge(lk, lv, logt - 1, 0, lid);
  }
  for (uint i = lid; i < SORT_TILE; i += SORT_WG) {
    ulong p = base + i;
    if (p < n) {
      keys[p] = lk[SORT_PAD(i)];
      vals[p] = lv[SORT_PAD(i)];
    }
  }
}

// ---- one work-item a run (the CPU plan, sort.serial) ------------------------
//
// On a CPU a work-group's barriers cost far more than the loop they split
// (sort_local took 3.5 ms a launch of 49 tiles on PoCL 3.1, most of a fit's
// time). The CPU plan gives each work-item a run of consecutive pairs
// instead: it merge-sorts the run whole, and finishes each longer merge
// (after the register passes) by one linear merge; the passes in between
// are the same bitonic network. Scratch sk holds n keys, then n values, and
// each work-item uses only its own run's positions.

#define SORT_SERIAL_SMALL 16

// Positions [lo, hi) of (ak, av) merged from the sorted runs [lo, mid) and
// [mid, hi) into (bk, bv).
inline void sort_merge_into(__global const ulong *ak, __global const uint *av, __global ulong *bk,
                            __global uint *bv, ulong lo, ulong mid, ulong hi) {
  ulong i = lo, j = mid, o = lo;
  while (i < mid && j < hi) {
    const int right = SORT_GREATER(ak[i], av[i], ak[j], av[j]);
    const ulong t = right ? j++ : i++;
    bk[o] = ak[t];
    bv[o++] = av[t];
  }
  for (; i < mid; i++, o++) { bk[o] = ak[i]; bv[o] = av[i]; }
  for (; j < hi; j++, o++) { bk[o] = ak[j]; bv[o] = av[j]; }
}

// The run [lo, hi) sorted in place: insertion sort of groups of
// SORT_SERIAL_SMALL, then merges of doubling width between the run and its
// scratch, copied back if they end in the scratch.
inline void sort_run_full(__global ulong *keys, __global uint *vals, __global ulong *sk,
                          __global uint *sv, ulong lo, ulong hi) {
  for (ulong g = lo; g < hi; g += SORT_SERIAL_SMALL) {
    const ulong e = min(g + SORT_SERIAL_SMALL, hi);
    for (ulong i = g + 1; i < e; i++) {
      const ulong k = keys[i];
      const uint v = vals[i];
      ulong j = i;
      for (; j > g && SORT_GREATER(keys[j - 1], vals[j - 1], k, v); j--) {
        keys[j] = keys[j - 1];
        vals[j] = vals[j - 1];
      }
      keys[j] = k;
      vals[j] = v;
    }
  }
  int in_scratch = 0;
  for (ulong w = SORT_SERIAL_SMALL; w < hi - lo; w *= 2) {
    __global ulong *ak = in_scratch ? sk : keys, *bk = in_scratch ? keys : sk;
    __global uint *av = in_scratch ? sv : vals, *bv = in_scratch ? vals : sv;
    for (ulong a = lo; a < hi; a += 2 * w)
      sort_merge_into(ak, av, bk, bv, a, min(a + w, hi), min(a + 2 * w, hi));
    in_scratch = !in_scratch;
  }
  if (in_scratch)
    for (ulong i = lo; i < hi; i++) {
      keys[i] = sk[i];
      vals[i] = sv[i];
    }
}

// The finish of a longer merge on [lo, hi): after the passes with strides
// down to the run's length the run holds its final pairs as a bitonic
// sequence read cyclically (one lowest and one highest pair; positions past
// n, the +infinity slots, sit at the highest). From the lowest pair both
// directions rise, so one linear merge of the two directions sorts it,
// into the scratch and back.
inline void sort_run_finish(__global ulong *keys, __global uint *vals, __global ulong *sk,
                            __global uint *sv, ulong lo, ulong hi) {
  const ulong len = hi - lo;
  ulong m = 0;
  for (ulong i = 1; i < len; i++)
    if (SORT_GREATER(keys[lo + m], vals[lo + m], keys[lo + i], vals[lo + i])) m = i;
  sk[lo] = keys[lo + m];
  sv[lo] = vals[lo + m];
  ulong l = m == 0 ? len - 1 : m - 1, r = m + 1 == len ? 0 : m + 1;
  for (ulong o = 1; o < len; o++) {
    ulong t;
    if (o + 1 == len || !SORT_GREATER(keys[lo + l], vals[lo + l], keys[lo + r], vals[lo + r])) {
      t = l;
      l = l == 0 ? len - 1 : l - 1;
    } else {
      t = r;
      r = r + 1 == len ? 0 : r + 1;
    }
    sk[lo + o] = keys[lo + t];
    sv[lo + o] = vals[lo + t];
  }
  for (ulong i = lo; i < hi; i++) {
    keys[i] = sk[i];
    vals[i] = sv[i];
  }
}

// Runs of `run` pairs from run `first`: full = 1 sorts each whole, 0
// finishes a merge.
__kernel void sort_serial(__global ulong *keys, __global uint *vals, __global ulong *sk, ulong n,
                          ulong run, ulong first, int full, ulong at) {
  keys += at;
  vals += at;
  const ulong lo = (first + get_global_id(0)) * run;
  if (lo >= n) return;
  const ulong hi = min(lo + run, n);
  __global uint *sv = (__global uint *)(sk + n);
  if (full) sort_run_full(keys, vals, sk, sv, lo, hi);
  else sort_run_finish(keys, vals, sk, sv, lo, hi);
}
// ---- global memory --------------------------------------------------------

// One pass over global memory running LOGR stages from stride 2^logj
// (>= SORT_TILE) down, each work-item holding one group of R pairs in
// registers: a long merge costs one trip through memory per LOGR stages
// instead of one per stage. Work-items are numbered from first so the host
// can split a launch; those whose lowest position is past n have nothing
// to do.
#define SORT_GLOBAL_KERNEL(R, LOGR)                                                  \
  __kernel void sort_global_##R(__global ulong *keys, __global uint *vals, ulong n, \
                                uint logj, int flip, ulong first, ulong at) {       \
    keys += at;                                                                      \
    vals += at;                                                                      \
    const ulong w = first + get_global_id(0);                                        \
    SORT_GROUP(ulong, w, logj, LOGR, flip, lo, hi, step)                             \
    if (lo >= n) return;                                                             \
    ulong rk[R];                                                                     \
    uint rv[R];                                                                      \
    _Pragma("unroll") for (uint t = 0; t < R; t++) {                                 \
      ulong p = t < R / 2 ? lo + t * step : hi + (t - R / 2) * step;                 \
      ulong key = ULONG_MAX;                                                         \
      uint val = UINT_MAX;                                                           \
      if (p < n) {                                                                   \
        key = keys[p];                                                               \
        val = vals[p];                                                               \
      }                                                                              \
      rk[t] = key;                                                                   \
      rv[t] = val;                                                                   \
    }                                                                                \
    SORT_NETWORK(R, LOGR);                                                           \
    _Pragma("unroll") for (uint t = 0; t < R; t++) {                                 \
      ulong p = t < R / 2 ? lo + t * step : hi + (t - R / 2) * step;                 \
      if (p < n) {                                                                   \
        keys[p] = rk[t];                                                             \
        vals[p] = rv[t];                                                             \
      }                                                                              \
    }                                                                                \
  }

SORT_GLOBAL_KERNEL(2, 1)
SORT_GLOBAL_KERNEL(4, 2)
SORT_GLOBAL_KERNEL(8, 3)
SORT_GLOBAL_KERNEL(16, 4)
SORT_GLOBAL_KERNEL(32, 5)
