// The categorical index: the (hash, slot) pairs a fit sorts, the lookup of
// query labels (binary search among a column's sorted hashes, then a byte
// comparison with every candidate of equal hash), and the align gather.
// Sizes, counts and offsets are all arguments, so one build serves any shape.

// Fit: pair each present label's hash with its global slot for the sort.
__kernel void catindex_pairs(__global const ulong *hash, __global const uint *slots,
                             __global ulong *keys, __global uint *vals, long first, long n) {
  long j = first + (long)get_global_id(0);
  if (j >= n) return;
  uint s = slots[j];
  keys[j] = hash[s];
  vals[j] = s;
}

// The first position in keys[lo, hi) whose key is not below h.
inline long cat_lower_bound(__global const ulong *keys, long lo, long hi, ulong h) {
  while (lo < hi) {
    long mid = lo + ((hi - lo) >> 1);
    if (keys[mid] < h) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

inline int cat_bytes_equal(__global const uchar *a, __global const uchar *b, long n) {
  for (long i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

// One launch serves up to four query columns (OpenCL 1.2 has no arrays of
// buffers), each with its own data, offsets, validity and output buffer.
// Their rows are laid end to end: rows.s0 of slot 0, then rows.s1 of slot 1...
#define CAT_QARGS(n)                                                             \
  __global const uchar *qd##n, __global const long *qo##n, __global const uchar *qv##n, \
      __global int *out##n

#define CAT_COMMON_ARGS                                                             \
  __global const ulong *keys, __global const long2 *spans, __global const int *ecodes, \
      __global const long *ranges, __global const uchar *vdata, __global const ulong *qhash, \
      long4 rows, long4 qh_off, long4 qbytes, long4 out_off, int4 col, int4 has_valid

// Everything one query row needs: where its bytes are, its hash, the
// candidate run and where its code goes.
typedef struct cat_row {
  __global const uchar *qd;
  __global int *out;
  long qs, len;       // query bytes [qs, qs + len) in qd
  long lo, hi;        // candidates: entries lo .. hi - 1 share the query's hash
  long out_at;
  int null_row;
} cat_row;

inline cat_row cat_locate(long t, __global const ulong *keys, __global const long *ranges,
                          __global const ulong *qhash, long4 rows, long4 qh_off, long4 qbytes,
                          long4 out_off, int4 col, int4 has_valid, CAT_QARGS(0), CAT_QARGS(1),
                          CAT_QARGS(2), CAT_QARGS(3)) {
  cat_row q;
  int k = 0;
  long r = t;
  if (r >= rows.s0) { r -= rows.s0; k = 1;
    if (r >= rows.s1) { r -= rows.s1; k = 2;
      if (r >= rows.s2) { r -= rows.s2; k = 3; } } }
  __global const long *qo;
  __global const uchar *qv;
  long hoff, nbytes;
  int c, hv;
  if (k == 0) { q.qd = qd0; qo = qo0; qv = qv0; q.out = out0; q.out_at = out_off.s0; hoff = qh_off.s0; nbytes = qbytes.s0; c = col.s0; hv = has_valid.s0; }
  else if (k == 1) { q.qd = qd1; qo = qo1; qv = qv1; q.out = out1; q.out_at = out_off.s1; hoff = qh_off.s1; nbytes = qbytes.s1; c = col.s1; hv = has_valid.s1; }
  else if (k == 2) { q.qd = qd2; qo = qo2; qv = qv2; q.out = out2; q.out_at = out_off.s2; hoff = qh_off.s2; nbytes = qbytes.s2; c = col.s2; hv = has_valid.s2; }
  else { q.qd = qd3; qo = qo3; qv = qv3; q.out = out3; q.out_at = out_off.s3; hoff = qh_off.s3; nbytes = qbytes.s3; c = col.s3; hv = has_valid.s3; }
  q.out_at += r;
  q.null_row = hv && !((qv[r >> 3] >> (r & 7)) & 1);
  // Offsets from a caller's buffers are clamped so a bad one can never read
  // outside the data; it can only fail to match.
  long s = clamp(qo[r], 0L, nbytes);
  long e = clamp(qo[r + 1], s, nbytes);
  q.qs = s;
  q.len = e - s;
  q.lo = q.hi = 0;
  if (!q.null_row) {
    ulong h = qhash[hoff + r];
    long lo = cat_lower_bound(keys, ranges[c], ranges[c + 1], h);
    long hi = lo;
    long end = ranges[c + 1];
    while (hi < end && keys[hi] == h) hi++;
    q.lo = lo;
    q.hi = hi;
  }
  return q;
}

#define CAT_PASS_Q qd0, qo0, qv0, out0, qd1, qo1, qv1, out1, qd2, qo2, qv2, out2, qd3, qo3, qv3, out3

// One work-item per query row: for short labels.
__kernel void catindex_lookup_item(CAT_COMMON_ARGS, long first, long count, CAT_QARGS(0),
                                   CAT_QARGS(1), CAT_QARGS(2), CAT_QARGS(3)) {
  long g = (long)get_global_id(0);
  if (g >= count) return;
  cat_row q = cat_locate(first + g, keys, ranges, qhash, rows, qh_off, qbytes, out_off, col,
                         has_valid, CAT_PASS_Q);
  int code = -1;
  for (long j = q.lo; j < q.hi; j++) {
    long2 sp = spans[j];
    if (sp.y == q.len && cat_bytes_equal(vdata + sp.x, q.qd + q.qs, q.len)) {
      code = ecodes[j];
      break;
    }
  }
  q.out[q.out_at] = code;
}

// One work-group per query row: the group's lanes read neighbouring bytes,
// so long labels are compared with coalesced loads. Every lane computes the
// same row and candidate run, so loops and barriers are uniform in the group.
__kernel void catindex_lookup_group(CAT_COMMON_ARGS, long first, long count, CAT_QARGS(0),
                                    CAT_QARGS(1), CAT_QARGS(2), CAT_QARGS(3)) {
  __local int differ;
  long g = (long)get_group_id(0);
  if (g >= count) return;   // uniform: the whole group leaves together
  long lid = (long)get_local_id(0), wg = (long)get_local_size(0);
  cat_row q = cat_locate(first + g, keys, ranges, qhash, rows, qh_off, qbytes, out_off, col,
                         has_valid, CAT_PASS_Q);
  int code = -1;
  for (long j = q.lo; j < q.hi; j++) {
    long2 sp = spans[j];
    if (sp.y != q.len) continue;
    barrier(CLK_LOCAL_MEM_FENCE);   // every lane has read the previous verdict
    if (lid == 0) differ = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    __global const uchar *a = vdata + sp.x;
    __global const uchar *b = q.qd + q.qs;
    int mine = 0;
    for (long i = lid; i < q.len; i += wg) mine |= a[i] != b[i];
    if (mine) atomic_or(&differ, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!differ) {
      code = ecodes[j];
      break;
    }
  }
  if (lid == 0) q.out[q.out_at] = code;
}

// Align: out[i] = table[block of i's column + its code], where code -1 reads
// the block's last slot (-1). rowstart and tbase hold ncols + 1 entries.
__kernel void catindex_align_gather(__global const int *in_codes, __global const long *rowstart,
                                    __global const long *tbase, int ncols,
                                    __global const int *table, __global int *out, long first,
                                    long n) {
  long i = first + (long)get_global_id(0);
  if (i >= n) return;
  int lo = 0, hi = ncols;
  while (hi - lo > 1) {
    int mid = (lo + hi) >> 1;
    if (rowstart[mid] <= i) lo = mid;
    else hi = mid;
  }
  long base = tbase[lo];
  long ncat = tbase[lo + 1] - base - 1;
  long code = in_codes[i];
  long slot = code < 0 ? ncat : code;
  out[i] = slot <= ncat ? table[base + slot] : -1;
}
