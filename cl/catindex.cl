// The categorical index: the (hash, slot) pairs a fit sorts, the lookup of
// query labels (the hash's bucket in the column's directory, a search among
// the bucket's sorted hashes, then a byte comparison with every candidate
// of equal hash), and the align gather.
// Sizes, counts and offsets are all arguments, so one build serves any shape.
// The fit's own kernels (catindex_fit_*) follow the byte comparisons they use.

// The first position in keys[lo, hi) whose key is not below h.
inline long cat_lower_bound(__global const ulong *keys, long lo, long hi, ulong h) {
  while (lo < hi) {
    long mid = lo + ((hi - lo) >> 1);
    if (keys[mid] < h) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Bytes [pos, pos + 8) of w, from the two aligned words that hold them
// (little-endian, as every OpenCL device tabcl targets). Label buffers are
// padded to a whole word plus one, so the second word always exists.
inline ulong cat_word(__global const ulong *w, long pos) {
  long q = pos >> 3;
  uint r = (uint)(pos & 7) * 8;
  return (w[q] >> r) | ((w[q + 1] << 1) << (63 - r));   // the double shift keeps r == 0 exact
}

// Whether bytes [a, a + n) of A equal bytes [b, b + n) of B, checking the
// 8-byte chunks first, first + step, ... (step > 1: lanes share the work).
inline int cat_chunks_equal(__global const ulong *A, long a, __global const ulong *B, long b,
                            long n, long first, long step) {
  for (long k = first * 8; k < n; k += step * 8) {
    ulong x = cat_word(A, a + k) ^ cat_word(B, b + k);
    long left = n - k;
    if (left < 8) x &= ((ulong)1 << (left * 8)) - 1;
    if (x) return 0;
  }
  return 1;
}

#ifdef CAT_QUERY_BYTES
// The CPU build (lookup.serial) reads query labels as bytes from any
// address (cat_qdata): a device lookup on a CPU reads the caller's query
// buffers in place, which start anywhere and end at the last label's last
// byte. 8 bytes at any byte, through a pointer whose type says alignment 1
// (one instruction on a CPU). Its GPU kernels read only padded copies, as
// words (cat_qwords).
typedef uchar cat_qdata;
inline ulong cat_ld64(__global const uchar *p) {
  typedef ulong __attribute__((aligned(1))) cat_ulong_u;
  return *(__global const cat_ulong_u *)p;
}

// Whether bytes [a, a + n) of A equal bytes [b, b + n) of B, for one
// work-item (the CPU plan), reading no byte outside either: four words a
// step with one branch, then a word a step, then the last 8 bytes (they
// may overlap the words before), or bytes where the label is shorter.
inline int cat_bytes_equal(__global const void *A_, long a, __global const void *B_, long b,
                           long n) {
  __global const uchar *x = (__global const uchar *)A_ + a, *y = (__global const uchar *)B_ + b;
  if (n < 8) {
    uint d = 0;
    for (long k = 0; k < n; k++) d |= x[k] ^ y[k];
    return d == 0;
  }
  long k = 0;
  for (; k + 32 <= n; k += 32)
    if ((cat_ld64(x + k) ^ cat_ld64(y + k)) | (cat_ld64(x + k + 8) ^ cat_ld64(y + k + 8)) |
        (cat_ld64(x + k + 16) ^ cat_ld64(y + k + 16)) | (cat_ld64(x + k + 24) ^ cat_ld64(y + k + 24)))
      return 0;
  for (; k + 8 <= n; k += 8)
    if (cat_ld64(x + k) != cat_ld64(y + k)) return 0;
  return k == n || cat_ld64(x + n - 8) == cat_ld64(y + n - 8);
}
#else
// The GPU kernels read whole aligned words of a copy padded past its end.
typedef ulong cat_qdata;

// cat_chunks_equal for one work-item (the CPU plan): where both labels
// start on a word, four words a step with straight loads and one branch;
// else, and for the rest, chunk by chunk.
inline int cat_bytes_equal(__global const ulong *A, long a, __global const ulong *B, long b,
                           long n) {
  long k = 0;
  if (((a | b) & 7) == 0) {
    __global const ulong *x = A + (a >> 3), *y = B + (b >> 3);
    for (; k + 32 <= n; k += 32) {
      long i = k >> 3;
      if ((x[i] ^ y[i]) | (x[i + 1] ^ y[i + 1]) | (x[i + 2] ^ y[i + 2]) | (x[i + 3] ^ y[i + 3]))
        return 0;
    }
  }
  return cat_chunks_equal(A, a + k, B, b + k, n - k, 0, 1);
}
#endif

// The block i falls in: the last b < n with starts[b] <= i (starts
// ascending, starts[0] <= i). Fit's pack and align's gather find columns so.
inline int cat_block_of(__global const long *starts, int n, long i) {
  int lo = 0, hi = n;
  while (hi - lo > 1) {
    int mid = (lo + hi) >> 1;
    if (starts[mid] <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

// ---- Fit, one column at a time (catindex_fit.c) ----
// offs are the column's offsets into vdata (shifted by the column's first
// byte); its labels are slots label_base + i.

// The column's present slots paired with their hashes, written from pair
// `at` of keys and vals (the column's place in the index's entry tables,
// where it is sorted and its entries made). A dense column (no nulls) was
// hashed into keys there already and its slots are base, base + 1, ...
// themselves; a column with nulls was hashed into `hash` from its label 0
// and its present slots are slots[first ..]. The try's first column
// (reset) clears the collision flag, flags[flag_at], which no command
// before it in the try reads: one host write fewer a try.
__kernel void catindex_fit_pairs(__global const ulong *hash, __global const uint *slots,
                                 __global ulong *keys, __global uint *vals, long first, long from,
                                 long n, uint base, int dense, __global int *flags, long flag_at,
                                 int reset, long at) {
  long j = from + (long)get_global_id(0);
  if (j >= n) return;
  if (reset && j == 0) flags[flag_at] = 0;
  if (dense) {
    vals[at + j] = base + (uint)j;
    return;
  }
  uint s = slots[first + j];
  keys[at + j] = hash[s - base];
  vals[at + j] = s;
}

// Sets *flag where sorted neighbours j - 1 and j have one hash but are
// different labels: the seed try failed. Dimension 1 takes the bytes in
// chunks of CAT_FIT_CHUNK, so no work-item loops long (llvmpipe ends long
// loops). Equal labels pass; they are duplicates, the last one wins.
#define CAT_FIT_CHUNK 65536
__kernel void catindex_fit_collide(__global const ulong *keys, __global const uint *vals,
                                   __global const ulong *vdata, __global const long *offs,
                                   uint label_base, long from, long n, __global int *flags,
                                   long flag_at, long at) {
  __global int *flag = flags + flag_at;
  keys += at;
  vals += at;
  long j = from + (long)get_global_id(0) + 1;
  if (j >= n || keys[j] != keys[j - 1]) return;
  long a = (long)(vals[j - 1] - label_base), b = (long)(vals[j] - label_base);
  long sa = offs[a], na = offs[a + 1] - sa, sb = offs[b], nb = offs[b + 1] - sb;
  long k0 = (long)get_global_id(1) * CAT_FIT_CHUNK;
  if (na != nb) {
    if (k0 == 0) atomic_or(flag, 1);
    return;
  }
  if (k0 >= na) return;
  long len = min((long)CAT_FIT_CHUNK, na - k0);
  if (!cat_bytes_equal(vdata, sa + k0, vdata, sb + k0, len)) atomic_or(flag, 1);
}

// Whether sorted pair j ends its run of equal hash: the run's entry (pairs
// of one hash are sorted by slot, so the last is the last position).
inline int cat_fit_ends_run(__global const ulong *keys, long j, long n) {
  return j + 1 == n || keys[j + 1] != keys[j];
}

// counts[r]: the entries among pairs [r * run, (r + 1) * run).
__kernel void catindex_fit_count(__global const ulong *keys, long n, long run, long from,
                                 __global long *counts, long at) {
  keys += at;
  long r = from + (long)get_global_id(0);
  long lo = r * run;
  if (lo >= n) return;
  long hi = min(lo + run, n), c = 0;
  for (long j = lo; j < hi; j++) c += cat_fit_ends_run(keys, j, n);
  counts[r] = c;
}

// One work-group: counts[0 .. runs) become each run's first entry,
// counted from base (the column's first pair: its entries are written
// where its pairs would start); totals[col] gets the column's entries. Each
// lane sums a stretch of runs, lane 0 adds up the lanes, each lane writes
// its stretch. Nothing is read that an earlier column wrote.
__kernel void catindex_fit_scan(__global long *counts, long runs, long base,
                                __global long *totals, int col, __local long *part) {
  uint lanes = (uint)get_local_size(0), l = (uint)get_local_id(0);
  long per = (runs + lanes - 1) / lanes, lo = min((long)l * per, runs), hi = min(lo + per, runs);
  long s = 0;
  for (long i = lo; i < hi; i++) s += counts[i];
  part[l] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    long acc = base;
    for (uint i = 0; i < lanes; i++) {
      long t = part[i];
      part[i] = acc;
      acc += t;
    }
    totals[col] = acc - base;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  long acc = part[l];
  for (long i = lo; i < hi; i++) {
    long t = counts[i];
    counts[i] = acc;
    acc += t;
  }
}

// Entries in two passes, because the sorted pairs sit where the entries
// go (entry e of a column is at or before its pair e, and a work-item's
// entries may land on pairs another has yet to read). First each run
// copies the last pair of each run of one hash, from entry firsts[r], into
// `stage` (the span table, two longs an entry: key, slot), which no pair
// occupies; catindex_fit_spans then turns them into entries in place.
__kernel void catindex_fit_entries(__global const ulong *keys, __global const uint *vals,
                                   long n, long run, long from, __global const long *firsts,
                                   __global long *stage, long at) {
  keys += at;
  vals += at;
  long r = from + (long)get_global_id(0);
  long lo = r * run;
  if (lo >= n) return;
  long hi = min(lo + run, n), e = firsts[r];
  for (long j = lo; j < hi; j++) {
    if (!cat_fit_ends_run(keys, j, n)) continue;
    stage[2 * e] = (long)keys[j];
    stage[2 * e + 1] = (long)vals[j];
    e++;
  }
}

// Entry at + j of the column (j below its count, totals[col]) from the
// staged (key, slot): key, span (first byte in vdata, length) and code,
// the label's position in its column (a BY_VALUE fit ranks them on the
// host afterwards). Each item reads its staged pair before writing the
// span over it; no item reads another's. Work-items past a launch's `step`
// items return: a launch is rounded up to whole groups, and an entry done
// twice would read its span as a staged pair.
__kernel void catindex_fit_spans(__global long *espans, __global const long *offs,
                                 uint label_base, long from, long n, __global const long *totals,
                                 int col, __global ulong *ekeys, __global int *ecodes, long at,
                                 long step) {
  long j = from + (long)get_global_id(0);
  if ((long)get_global_id(0) >= step || j >= n || j >= totals[col]) return;
  long e = at + j;
  long key = espans[2 * e], i = espans[2 * e + 1] - (long)label_base;
  long s = offs[i], len = offs[i + 1] - s;
  ekeys[e] = (ulong)key;
  espans[2 * e] = s;
  espans[2 * e + 1] = len;
  ecodes[e] = (int)i;
}

// Packs the entries of every column, written from the column's first pair
// (seg[c]), to their places in the index's tables (from ranges[c]) where
// duplicates left gaps: entry e of the tables is found by its column.
__kernel void catindex_fit_pack(__global const ulong *ekeys, __global const long2 *espans,
                                __global const int *ecodes, __global const long *seg,
                                __global const long *ranges, int ncols, long from, long n,
                                __global ulong *keys, __global long2 *spans,
                                __global int *codes) {
  long e = from + (long)get_global_id(0);
  if (e >= n) return;
  int lo = cat_block_of(ranges, ncols, e);
  long at = seg[lo] + (e - ranges[lo]);
  keys[e] = ekeys[at];
  spans[e] = espans[at];
  codes[e] = ecodes[at];
}

// The bucket of hash h in a column's directory: its top bits (the column's
// shift is 64 or more where the directory has one bucket).
inline long cat_bucket(ulong h, long shift) { return shift < 64 ? (long)(h >> shift) : 0; }

// The directory of one column's sorted keys [lo, lo + n): slot t of its
// `slots` (2^bits + 1, from dir's `base`) is the first entry whose bucket
// is t or more, lo + n past the last, so bucket t's keys are the entries
// from slot t to slot t + 1. Item i (0 .. n) fills the slots after the
// bucket of key i - 1 up to that of key i (the slots before the first key
// and after the last, for items 0 and n).
__kernel void catindex_fit_directory(__global const ulong *keys, long lo, long n, long shift,
                                     long slots, __global uint *dir, long base, long from) {
  long i = from + (long)get_global_id(0);
  if (i > n) return;
  long a = i == 0 ? 0 : cat_bucket(keys[lo + i - 1], shift) + 1;
  long b = i == n ? slots - 1 : cat_bucket(keys[lo + i], shift);
  for (long t = a; t <= b; t++) dir[base + t] = (uint)(lo + i);
}

// The entries of column c that may hold hash h: those of its bucket, [x, y).
// dinfo[c]: the column's first directory slot, and its shift.
inline long2 cat_bucket_range(__global const uint *dir, __global const long2 *dinfo, int c,
                              ulong h) {
  const long2 di = dinfo[c];
  const long t = di.x + cat_bucket(h, di.y);
  return (long2)((long)dir[t], (long)dir[t + 1]);
}

// One launch serves up to four query columns (OpenCL 1.2 has no arrays of
// buffers), each with its own data, offsets, validity and output buffer.
// Their rows are laid end to end: rows.s0 of slot 0, then rows.s1 of slot 1...
#define CAT_QARGS(n)                                                                 \
  __global const cat_qdata *qd##n, __global const long *qo##n, __global const uchar *qv##n, \
      __global int *out##n

// `serial_run`: rows a work-item of catindex_lookup_serial; the others
// ignore it, so that every lookup kernel takes one argument list.
#define CAT_ARGS                                                                          \
  __global const ulong *keys, __global const long2 *spans, __global const int *ecodes,    \
      __global const long *ranges, __global const uint *dir, __global const long2 *dinfo,  \
      __global const ulong *vdata, __global const ulong *qhash,                            \
      long4 rows, long4 qh_off, long4 qbytes, long4 out_off, int4 col, int4 has_valid,    \
      __global uint2 *cand, long first, long count, CAT_QARGS(0), CAT_QARGS(1), CAT_QARGS(2), \
      CAT_QARGS(3), long serial_run

// Everything one query row needs: where its bytes are, its hash, its column
// and where its code goes.
typedef struct cat_row {
  __global const cat_qdata *qd;
  __global int *out;
  long qs, len;       // query bytes [qs, qs + len) in qd
  long out_at;
  ulong h;
  int c;
  int null_row;
} cat_row;

inline cat_row cat_locate(long t, __global const ulong *qhash, long4 rows, long4 qh_off,
                          long4 qbytes, long4 out_off, int4 col, int4 has_valid, CAT_QARGS(0),
                          CAT_QARGS(1), CAT_QARGS(2), CAT_QARGS(3)) {
  cat_row q;
  int k = 0;
  long r = t;
  if (r >= rows.s0) { r -= rows.s0; k = 1;
    if (r >= rows.s1) { r -= rows.s1; k = 2;
      if (r >= rows.s2) { r -= rows.s2; k = 3; } } }
  __global const long *qo;
  __global const uchar *qv;
  long hoff, nbytes;
  int hv;
  if (k == 0) { q.qd = qd0; qo = qo0; qv = qv0; q.out = out0; q.out_at = out_off.s0; hoff = qh_off.s0; nbytes = qbytes.s0; q.c = col.s0; hv = has_valid.s0; }
  else if (k == 1) { q.qd = qd1; qo = qo1; qv = qv1; q.out = out1; q.out_at = out_off.s1; hoff = qh_off.s1; nbytes = qbytes.s1; q.c = col.s1; hv = has_valid.s1; }
  else if (k == 2) { q.qd = qd2; qo = qo2; qv = qv2; q.out = out2; q.out_at = out_off.s2; hoff = qh_off.s2; nbytes = qbytes.s2; q.c = col.s2; hv = has_valid.s2; }
  else { q.qd = qd3; qo = qo3; qv = qv3; q.out = out3; q.out_at = out_off.s3; hoff = qh_off.s3; nbytes = qbytes.s3; q.c = col.s3; hv = has_valid.s3; }
  q.out_at += r;
  q.null_row = hv && !((qv[r >> 3] >> (r & 7)) & 1);
  // Offsets from a caller's buffers are clamped so a bad one can never read
  // outside the data; it can only fail to match.
  long s = clamp(qo[r], 0L, nbytes);
  long e = clamp(qo[r + 1], s, nbytes);
  q.qs = s;
  q.len = e - s;
  q.h = q.null_row ? 0 : qhash[hoff + r];   // a null row's hash is never written
  return q;
}

// The run of entries of column c whose key is h: [lo, hi).
inline uint2 cat_candidates(__global const ulong *keys, __global const uint *dir,
                            __global const long2 *dinfo, int c, ulong h) {
  const long2 b = cat_bucket_range(dir, dinfo, c, h);
  long lo = cat_lower_bound(keys, b.x, b.y, h);
  long hi = lo;
  while (hi < b.y && keys[hi] == h) hi++;
  return (uint2)((uint)lo, (uint)hi);
}

#define CAT_LOCATE(t) \
  cat_locate((t), qhash, rows, qh_off, qbytes, out_off, col, has_valid, qd0, qo0, qv0, out0, \
             qd1, qo1, qv1, out1, qd2, qo2, qv2, out2, qd3, qo3, qv3, out3)

// The GPU lookup kernels, in every build: a CPU takes catindex_lookup_serial
// except where a row could loop past the device's loop limit. They read
// queries as words of a padded copy, whatever cat_qdata is.
#define cat_qwords(q) ((__global const ulong *)(q).qd)

// One work-item per query row: search, confirm and write. For short labels.
__kernel void catindex_lookup_item(CAT_ARGS) {
  long g = (long)get_global_id(0);
  if (g >= count) return;
  cat_row q = CAT_LOCATE(first + g);
  int code = -1;
  if (!q.null_row) {
    uint2 run = cat_candidates(keys, dir, dinfo, q.c, q.h);
    for (uint j = run.x; j < run.y; j++) {
      long2 sp = spans[j];
      if (sp.y == q.len && cat_chunks_equal(vdata, sp.x, cat_qwords(q), q.qs, q.len, 0, 1)) {
        code = ecodes[j];
        break;
      }
    }
  }
  q.out[q.out_at] = code;
}

// A row's candidates from j, confirmed by their bytes; its code written.
inline void cat_serial_finish(__global const ulong *keys, __global const long2 *spans,
                              __global const int *ecodes, __global const ulong *vdata,
                              const cat_row *q, long j, long end) {
  int code = -1;
  if (!q->null_row)
    for (; j < end && keys[j] == q->h; j++) {
      long2 sp = spans[j];
      if (sp.y == q->len && cat_bytes_equal(vdata, sp.x, q->qd, q->qs, q->len)) {
        code = ecodes[j];
        break;
      }
    }
  q->out[q->out_at] = code;
}

// One row by itself: its bucket searched, its candidates confirmed.
inline void cat_serial_row(__global const ulong *keys, __global const long2 *spans,
                           __global const int *ecodes, __global const ulong *vdata,
                           __global const uint *dir, __global const long2 *dinfo,
                           const cat_row *q) {
  const long2 b = cat_bucket_range(dir, dinfo, q->c, q->h);
  const long j = q->null_row ? b.y : cat_lower_bound(keys, b.x, b.y, q->h);
  cat_serial_finish(keys, spans, ecodes, vdata, q, j, b.y);
}

// Rows the CPU plan takes side by side.
#define CAT_LANES 32
// The keys a row's search spans in the CPU plan where its column has more
// than CAT_WHOLE_MAX: a window this long holding its bucket (a bucket holds
// one or two keys on average, more than 8 in about 1 in 4,000 buckets,
// whose rows then search it alone). Up to CAT_WHOLE_MAX keys the column is
// searched whole: a few more levels of keys in the cache cost less than
// the directory's reads. PoCL, 100,000 rows of 8 B, least of 101 calls,
// whole column against window: 0.69 against 0.82 ms for 100 keys, 0.78
// against 0.82 for 1,000, 0.87 against 0.82 for 10,000, 1.2 against 0.85
// for 200,000.
#define CAT_WINDOW 8
#define CAT_WHOLE_MAX 2048

// Lower bounds of CAT_LANES rows' hashes among the len keys from base[l]
// each (len the same for all), without branches, level by level together.
inline void cat_lanes_lower_bound(__global const ulong *keys, long *base, long len,
                                  const cat_row *q) {
  while (len > 1) {
    const long mid = len >> 1;
    for (int l = 0; l < CAT_LANES; l++)
      base[l] = keys[base[l] + mid - 1] < q[l].h ? base[l] + mid : base[l];
    len -= mid;
  }
  for (int l = 0; l < CAT_LANES; l++) base[l] += len > 0 && keys[base[l]] < q[l].h;
}

// The CPU plan (lookup.serial): one work-item a run of `serial_run` rows; no local
// memory, no barriers. Where CAT_LANES rows share a column, their binary
// searches run without branches, level by level together, so that a CPU
// has that many independent loads in flight instead of one chain of
// dependent ones, and no branch to mispredict (searching each bucket by
// itself, with branches, was slower than searching the whole column
// without). Rows of a group spanning columns, and a run's last rows,
// search their buckets one by one.
__kernel void catindex_lookup_serial(CAT_ARGS) {
  const long r0 = (long)get_global_id(0) * serial_run;
  const long r1 = min(r0 + serial_run, count);
  long g = r0;
  for (; g + CAT_LANES <= r1; g += CAT_LANES) {
    cat_row q[CAT_LANES];
    for (int l = 0; l < CAT_LANES; l++) q[l] = CAT_LOCATE(first + g + l);
    const int c = q[0].c;
    int same = 1;
    for (int l = 1; l < CAT_LANES; l++) same &= q[l].c == c;
    if (!same) {
      for (int l = 0; l < CAT_LANES; l++)
        cat_serial_row(keys, spans, ecodes, vdata, dir, dinfo, &q[l]);
      continue;
    }
    const long lo = ranges[c], end = ranges[c + 1];
    long base[CAT_LANES];
    if (end - lo <= CAT_WHOLE_MAX) {
      for (int l = 0; l < CAT_LANES; l++) base[l] = lo;
      cat_lanes_lower_bound(keys, base, end - lo, q);
      for (int l = 0; l < CAT_LANES; l++)
        cat_serial_finish(keys, spans, ecodes, vdata, &q[l], base[l], end);
      continue;
    }
    // A window of CAT_WINDOW keys from each row's bucket, moved back to end
    // with the column where it would pass it (keys before a bucket are
    // below its hashes, keys after it above).
    const long2 di = dinfo[c];
    long2 b[CAT_LANES];
    for (int l = 0; l < CAT_LANES; l++) {
      const long t = di.x + cat_bucket(q[l].h, di.y);
      b[l] = (long2)((long)dir[t], (long)dir[t + 1]);
      base[l] = min(b[l].x, end - CAT_WINDOW);
    }
    cat_lanes_lower_bound(keys, base, CAT_WINDOW, q);
    for (int l = 0; l < CAT_LANES; l++) {
      const long j = b[l].y - b[l].x <= CAT_WINDOW ? base[l]
                                                   : cat_lower_bound(keys, b[l].x, b[l].y, q[l].h);
      cat_serial_finish(keys, spans, ecodes, vdata, &q[l], j, b[l].y);
    }
  }
  for (; g < r1; g++) {
    const cat_row q = CAT_LOCATE(first + g);
    cat_serial_row(keys, spans, ecodes, vdata, dir, dinfo, &q);
  }
}

// The search alone, one work-item per row, ahead of catindex_lookup_group:
// a binary search is a chain of dependent loads, cheap for one work-item
// but a stall for a whole work-group.
__kernel void catindex_probe(CAT_ARGS) {
  long g = (long)get_global_id(0);
  if (g >= count) return;
  cat_row q = CAT_LOCATE(first + g);
  cand[first + g] = q.null_row ? (uint2)(0, 0) : cat_candidates(keys, dir, dinfo, q.c, q.h);
}

// One work-group per query row, its candidates from catindex_probe: the
// lanes compare neighbouring 8-byte chunks, so long labels are read with
// coalesced loads. Every lane sees the same row and run, so loops and
// barriers are uniform in the group.
__kernel void catindex_lookup_group(CAT_ARGS) {
  __local int differ;
  long g = (long)get_group_id(0);
  if (g >= count) return;   // uniform: the whole group leaves together
  long lid = (long)get_local_id(0), wg = (long)get_local_size(0);
  cat_row q = CAT_LOCATE(first + g);
  uint2 run = cand[first + g];
  int code = -1;
  for (uint j = run.x; j < run.y; j++) {
    long2 sp = spans[j];
    if (sp.y != q.len) continue;
    barrier(CLK_LOCAL_MEM_FENCE);   // every lane has read the previous verdict
    if (lid == 0) differ = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!cat_chunks_equal(vdata, sp.x, cat_qwords(q), q.qs, q.len, lid, wg)) atomic_or(&differ, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!differ) {
      code = ecodes[j];
      break;
    }
  }
  // The row is located again for its write: Intel's OpenCL CPU compiler
  // (2026.2) crashed building this kernel while q.out, a pointer chosen by
  // branches, stayed live across the loop's barriers.
  if (lid == 0) {
    cat_row w = CAT_LOCATE(first + g);
    w.out[w.out_at] = code;
  }
}

// Align: out[i] = table[block of i's column + its code], where code -1 reads
// the block's last slot (-1). rowstart and tbase hold ncols + 1 entries.
__kernel void catindex_align_gather(__global const int *in_codes, __global const long *rowstart,
                                    __global const long *tbase, int ncols,
                                    __global const int *table, __global int *out, long first,
                                    long n) {
  long i = first + (long)get_global_id(0);
  if (i >= n) return;
  int lo = cat_block_of(rowstart, ncols, i);
  long base = tbase[lo];
  long ncat = tbase[lo + 1] - base - 1;
  // The code is tested as the 32-bit value it is, before widening: Mesa
  // 22.3's rusticl (llvmpipe) compiles a compare of a sign-extended int with
  // a 64-bit constant wrongly (long c = -1; c < 0 came out false), which
  // sent missing codes to the slot before the block instead of its last.
  int code = in_codes[i];
  long slot = code < 0 ? ncat : (long)code;
  out[i] = slot <= ncat ? table[base + slot] : -1;
}
