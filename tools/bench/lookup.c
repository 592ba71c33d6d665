/* tabcl-bench lookup: the categorical index. For each case: fit time (wall,
 * the host API), lookup time with queries already on the device (device
 * events from a marker before tabcl_category_index_lookup_cl to its
 * completion event), the host API's end-to-end lookup (upload included),
 * peak device memory, and a check of every code against the codes the case
 * was built to give. One-column cases with known labels also time align
 * (tabcl_category_index_align, the host call) of a dictionary-encoded
 * column of the same rows: categories a shuffled half of the vocabulary
 * (at most the rows' count) and a tenth as many unknown labels, codes into
 * them with one row in 50 missing. --dump DIR writes each case's inputs and
 * tabcl's codes for the peers (bench/peers/dumpfmt.py reads them).
 *
 * Cases are named v<labels>_len<bytes>_q<rows>[_variant]:
 *   (none)    printable labels, a unique 8-byte tag first; 1 query in 10 unknown
 *   prefix    every label shares all but its last 8 bytes
 *   middle    labels differ only in 8 bytes in the middle
 *   nonascii  bytes 0x80..0xFF only (not valid UTF-8)
 *   unknown   no query label is in the vocabulary
 *   cols4     four columns at once, each with its own labels */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

typedef struct lk_case {
  int64_t v, q;
  int len;
  const char *variant;   /* "" or one of the above */
} lk_case;

typedef struct lk_col {
  int64_t *voff, *qoff;
  uint8_t *vdata, *qdata;
  int32_t *want;
} lk_col;

/* n rounded up to whole 8-byte words, as the kernels read labels. */
static size_t round8(size_t n) { return (n + 7) / 8 * 8; }

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Label `id` of column col: filler bytes, and an 8-byte tag that makes it
   unique, placed as the variant says. */
static void make_label(const char *variant, int col, uint64_t id, int len, uint8_t *out) {
  int nonascii = !strcmp(variant, "nonascii");
  int shared = !strcmp(variant, "prefix") || !strcmp(variant, "middle");
  uint64_t x = mix(((uint64_t)col << 40) ^ (shared ? 0x5bd1e995ULL : id * 0x9E3779B97F4A7C15ULL) ^ 1);
  for (int i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = nonascii ? (uint8_t)(0x80 | (x >> 25)) : (uint8_t)(' ' + (x >> 24) % 95);
  }
  static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  int at = !strcmp(variant, "prefix") ? len - 8 : !strcmp(variant, "middle") ? (len - 8) / 2 : 0;
  uint64_t tag = id + ((uint64_t)col << 36);
  for (int i = 0; i < 8; i++) {
    unsigned d = (unsigned)(tag >> (6 * i)) & 63;
    out[at + i] = nonascii ? (uint8_t)(0x80 | d) : (uint8_t)alpha[d];
  }
}

static void free_cols(lk_col *cols, int ncols) {
  for (int c = 0; c < ncols; c++) {
    free(cols[c].voff);
    free(cols[c].qoff);
    free(cols[c].vdata);
    free(cols[c].qdata);
    free(cols[c].want);
  }
}

static int build(const lk_case *k, int ncols, lk_col *cols) {
  memset(cols, 0, (size_t)ncols * sizeof *cols);
  int unknown_only = !strcmp(k->variant, "unknown");
  for (int c = 0; c < ncols; c++) {
    lk_col *t = &cols[c];
    t->voff = malloc((size_t)(k->v + 1) * 8);
    t->qoff = malloc((size_t)(k->q + 1) * 8);
    t->vdata = malloc((size_t)(k->v * k->len));
    t->qdata = malloc((size_t)(k->q * k->len));
    t->want = malloc((size_t)k->q * 4);
    if (!t->voff || !t->qoff || !t->vdata || !t->qdata || !t->want) return 1;
    for (int64_t i = 0; i <= k->v; i++) t->voff[i] = i * k->len;
    for (int64_t i = 0; i <= k->q; i++) t->qoff[i] = i * k->len;
    for (int64_t i = 0; i < k->v; i++)
      make_label(k->variant, c, (uint64_t)i, k->len, t->vdata + i * k->len);
    uint64_t x = 0x2545F4914F6CDD1DULL ^ (uint64_t)c;
    for (int64_t i = 0; i < k->q; i++) {
      x = mix(x + 0x9E3779B97F4A7C15ULL);
      int64_t j = (int64_t)(x % (uint64_t)k->v);
      if (unknown_only || (x >> 40) % 10 == 0) {
        make_label(k->variant, c, (uint64_t)(k->v + j), k->len, t->qdata + i * k->len);
        t->want[i] = -1;
      } else {
        memcpy(t->qdata + i * k->len, t->vdata + j * k->len, (size_t)k->len);
        t->want[i] = (int32_t)j;
      }
    }
  }
  return 0;
}

static int write_file(const char *dir, const char *name, const void *p, size_t n) {
  char path[4096];
  int len = snprintf(path, sizeof path, "%s/%s", dir, name);
  if (len < 0 || (size_t)len >= sizeof path) return 1; /* a dump folder too deep to name */
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  int bad = n && fwrite(p, 1, n, f) != n;
  return fclose(f) != 0 || bad;
}

/* Little-endian hosts only write the arrays as they are; every host tabcl-bench
   runs on is little-endian. */
static int dump_case(const bench_args *a, const char *name, const lk_case *k, int ncols,
                     const lk_col *cols, int32_t *const *codes) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", a->dump_dir, name);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 1;
  int bad = 0;
  for (int c = 0; c < ncols && !bad; c++) {
    char f[64];
    snprintf(f, sizeof f, "vocab_%d.offsets", c);
    bad |= write_file(dir, f, cols[c].voff, (size_t)(k->v + 1) * 8);
    snprintf(f, sizeof f, "vocab_%d.data", c);
    bad |= write_file(dir, f, cols[c].vdata, (size_t)(k->v * k->len));
    snprintf(f, sizeof f, "query_%d.offsets", c);
    bad |= write_file(dir, f, cols[c].qoff, (size_t)(k->q + 1) * 8);
    snprintf(f, sizeof f, "query_%d.data", c);
    bad |= write_file(dir, f, cols[c].qdata, (size_t)(k->q * k->len));
    snprintf(f, sizeof f, "codes_%d.i32", c);
    bad |= write_file(dir, f, codes[c], (size_t)k->q * 4);
  }
  char meta[512];
  int n = snprintf(meta, sizeof meta, "{\"case\": \"%s\", \"ncols\": %d, \"order\": \"position\"}\n",
                   name, ncols);
  bad |= write_file(dir, "meta.json", meta, (size_t)n);
  return bad;
}

/* The dictionary-encoded column of an align case, and the codes align must
   give for it. */
typedef struct al_col {
  int64_t ncat, rows;
  int64_t *off;
  uint8_t *data;
  int32_t *codes, *want;
} al_col;

static void al_free(al_col *c) {
  free(c->off);
  free(c->data);
  free(c->codes);
  free(c->want);
  memset(c, 0, sizeof *c);
}

static int al_build(const lk_case *k, const lk_col *col, al_col *out) {
  memset(out, 0, sizeof *out);
  int64_t known = k->v / 2 < k->q ? k->v / 2 : k->q;
  if (known < 1) known = 1;
  const int64_t unknown = known / 10, ncat = known + unknown;
  out->ncat = ncat, out->rows = k->q;
  out->off = malloc((size_t)(ncat + 1) * 8);
  out->data = malloc((size_t)(ncat * k->len));
  out->codes = malloc((size_t)k->q * 4);
  out->want = malloc((size_t)k->q * 4);
  int32_t *fitted = malloc((size_t)ncat * 4);   /* each category's fitted code */
  if (!out->off || !out->data || !out->codes || !out->want || !fitted) {
    free(fitted);
    al_free(out);
    return 1;
  }
  /* known categories: vocabulary labels start + i*step (mod v), a step
     coprime with v so they are distinct; then the unknown ones */
  uint64_t step = (uint64_t)(k->v / 3) | 1;
  while (k->v > 1) {
    uint64_t a = step, b = (uint64_t)k->v;
    while (b) { uint64_t t = a % b; a = b; b = t; }
    if (a == 1) break;
    step += 2;
  }
  const uint64_t start = (uint64_t)k->v / 7;
  for (int64_t i = 0; i <= ncat; i++) out->off[i] = i * k->len;
  for (int64_t i = 0; i < ncat; i++) {
    if (i < known) {
      const int64_t j = (int64_t)((start + (uint64_t)i * step) % (uint64_t)k->v);
      memcpy(out->data + i * k->len, col->vdata + j * k->len, (size_t)k->len);
      fitted[i] = (int32_t)j;
    } else {
      make_label(k->variant, 0, (uint64_t)(2 * k->v + i), k->len, out->data + i * k->len);
      fitted[i] = -1;
    }
  }
  uint64_t x = 0x61C8864680B583EBULL;
  for (int64_t i = 0; i < k->q; i++) {
    x = mix(x + 0x9E3779B97F4A7C15ULL);
    const int32_t c = (x >> 40) % 50 == 0 ? -1 : (int32_t)(x % (uint64_t)ncat);
    out->codes[i] = c;
    out->want[i] = c < 0 ? -1 : fitted[c];
  }
  free(fitted);
  return 0;
}

/* Align rows, printed after the lookup table. */
static char align_rows[64][200];
static int nalign;

/* The host align of one case: median ms of reps calls, every code checked;
   written under the case's dump folder when there is one. */
static int al_case(const bench_args *a, tabcl_context *ctx, const lk_case *k, const lk_col *col,
                   tabcl_category_index *idx, const char *name, int reps) {
  al_col al;
  if (al_build(k, col, &al)) {
    fprintf(stderr, "align bench %s: out of host memory\n", name);
    return 1;
  }
  int32_t *got = malloc((size_t)k->q * 4);
  double t[64];
  tabcl_status s = got ? TABCL_OK : tabcl__fail(TABCL_OUT_OF_MEMORY, "align codes");
  tabcl_dictionary_view dv = {{al.ncat, al.off, al.data, NULL}, al.rows, al.codes};
  if (!s) s = tabcl_category_index_align(idx, 1, &dv, &got);   /* warm-up */
  for (int r = 0; r < reps && !s; r++) {
    double t0 = bench_now();
    s = tabcl_category_index_align(idx, 1, &dv, &got);
    t[r] = bench_now() - t0;
  }
  int64_t wrong = 0;
  for (int64_t i = 0; !s && i < k->q; i++) wrong += got[i] != al.want[i];
  int bad = s != TABCL_OK || wrong != 0;
  if (s) {
    fprintf(stderr, "align bench %s: %s: %s\n", name, tabcl_status_name(s), tabcl_last_error());
  } else {
    const double ms = bench_median(t, reps) * 1e3;
    /* the call's own bound (issue 16): its categories' bytes and offsets
       and its input codes up, its codes down, at the pinned rates
       measured in this run, as a device align would move them */
    bench_link link;
    double link_ms = 0;
    if (!bench_link_bandwidth(ctx, a->quick, &link) && link.h2d_pinned > 0 &&
        link.d2h_pinned > 0)
      link_ms = (((double)al.ncat * k->len + (double)(al.ncat + 1) * 8 + (double)al.rows * 4) /
                     link.h2d_pinned +
                 (double)al.rows * 4 / link.d2h_pinned) * 1e3;
    char share[32] = "-";
    if (link_ms > 0) snprintf(share, sizeof share, "%.2fx", ms / link_ms);
    if (nalign < 64)
      snprintf(align_rows[nalign++], sizeof align_rows[0], "| %s | %lld | %lld | %.3f | %.3f | %s | %s |",
               name, (long long)al.ncat, (long long)al.rows, ms, link_ms, share,
               wrong ? "**WRONG**" : "ok");
    bench_record(a, "align", name, "host_align_ms", ms, "ms");
    if (link_ms > 0) {
      bench_record(a, "align", name, "align_link_bound_ms", link_ms, "ms");
      bench_record(a, "align", name, "host_align_vs_link_bound", ms / link_ms, "x");
    }
    bench_record(a, "align", name, "categories", (double)al.ncat, "count");
    bench_record(a, "align", name, "align_ok", wrong ? 0 : 1, "bool");
    if (a->dump_dir) {
      char dir[4096];
      snprintf(dir, sizeof dir, "%s/%s", a->dump_dir, name);
      if (mkdir(dir, 0755) != 0 && errno != EEXIST) bad = 1;
      bad |= write_file(dir, "align_categories.offsets", al.off, (size_t)(al.ncat + 1) * 8);
      bad |= write_file(dir, "align_categories.data", al.data, (size_t)(al.ncat * k->len));
      bad |= write_file(dir, "align_codes.i32", al.codes, (size_t)k->q * 4);
      bad |= write_file(dir, "align_want.i32", got, (size_t)k->q * 4);
      if (bad) fprintf(stderr, "align bench %s: cannot write the dump\n", name);
    }
  }
  free(got);
  al_free(&al);
  return bad;
}

typedef struct lk_dev {
  tabcl_strings_cl q[4];
  cl_mem codes[4];
} lk_dev;

static void release_dev(lk_dev *d) {
  for (int c = 0; c < 4; c++) {
    tabcl__buffer_release(d->q[c].data);
    tabcl__buffer_release(d->q[c].offsets);
    tabcl__buffer_release(d->codes[c]);
  }
}

/* n labels of len bytes each on the device, data padded so the calls
   read it in place. */
static tabcl_status strings_to_device(tabcl_context *ctx, int64_t n, int len, const int64_t *off,
                                      const uint8_t *data, tabcl_strings_cl *out) {
  size_t bytes = (size_t)(n * len), padded = round8(bytes) + 8;
  out->length = n;
  out->bytes = (int64_t)bytes;
  out->max_label = len;
  tabcl_status s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, padded, NULL, &out->data,
                                        "bench labels");
  if (!s) s = tabcl__fill_zero(ctx, out->data, padded);
  if (!s) s = tabcl__write(ctx, out->data, 0, bytes, data);
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   (size_t)(n + 1) * 8, (void *)off, &out->offsets,
                                   "bench offsets");
  return s;
}

/* The queries on the device, and their codes' buffers. */
static tabcl_status upload(tabcl_context *ctx, const lk_case *k, int ncols, const lk_col *cols,
                           lk_dev *d) {
  memset(d, 0, sizeof *d);
  tabcl_status s = TABCL_OK;
  for (int c = 0; c < ncols && !s; c++) {
    s = strings_to_device(ctx, k->q, k->len, cols[c].qoff, cols[c].qdata, &d->q[c]);
    if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_WRITE, (size_t)k->q * 4, NULL, &d->codes[c],
                                     "bench codes");
  }
  return s;
}

/* Device seconds of one device-resident lookup, and its wall seconds. */
static tabcl_status time_lookup(tabcl_context *ctx, tabcl_category_index *idx, int ncols,
                                lk_dev *d, double *dev_s, double *wall_s) {
  cl_event start = NULL, end = NULL;
  tabcl_status s = tabcl__finish(ctx);
  if (s) return s;
  double t0 = bench_now();
  cl_int err = clEnqueueMarkerWithWaitList(tabcl_context_cl_queue(ctx), 0, NULL, &start);
  if (err != CL_SUCCESS) return tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "lookup bench");
  s = tabcl_category_index_lookup_cl(idx, ncols, d->q, d->codes, 0, NULL, &end);
  if (!s) s = tabcl__finish(ctx);
  *wall_s = bench_now() - t0;
  if (!s) {
    *dev_s = bench_pick(bench_event_seconds(start, end), *wall_s);
    if (*dev_s < 0) *dev_s = *wall_s;   /* no profiling on markers: the wall time stands in */
  }
  clReleaseEvent(start);
  if (end) clReleaseEvent(end);
  return s;
}

/* The kernel choices a lookup can make, timed on one case so the defaults
   (work-group kernel from 256-byte labels, lanes by label length) can be
   checked on each device; printed after the main table. */
static char tune_rows[16][256];
static int ntune;

static tabcl_status tune(tabcl_context *ctx, const bench_args *a, tabcl_category_index *idx,
                         int ncols, lk_dev *d, const char *name, int reps) {
  static const char *const lane_names[] = {"auto", "32", "64", "128", "256"};
  static const char *const metric[] = {"lookup_ms_item", "lookup_ms_group32", "lookup_ms_group64",
                                       "lookup_ms_group128", "lookup_ms_group256"};
  double ms[5], t[64], wall;
  tabcl_status s = TABCL_OK;
  for (int v = 0; v < 5 && !s; v++) {
    char entries[96];
    snprintf(entries, sizeof entries, "lookup.group_bytes=%s;lookup.group_lanes=%s",
             v == 0 ? "1099511627776" : "0", v == 0 ? "auto" : lane_names[v]);
    s = tabcl__context_tune(ctx, entries);
    if (s) break;
    s = time_lookup(ctx, idx, ncols, d, &t[0], &wall);
    for (int r = 0; r < reps && !s; r++) s = time_lookup(ctx, idx, ncols, d, &t[r], &wall);
    ms[v] = s ? 0 : bench_median(t, reps) * 1e3;
    if (!s) bench_record(a, "lookup", name, metric[v], ms[v], "ms");
  }
  if (tabcl__context_tune(ctx, "lookup.group_bytes=auto;lookup.group_lanes=auto") != TABCL_OK && !s)
    s = TABCL_INVALID_ARGUMENT;
  if (!s && ntune < 16)
    snprintf(tune_rows[ntune++], sizeof tune_rows[0], "| %s | %.3f | %.3f | %.3f | %.3f | %.3f |",
             name, ms[0], ms[1], ms[2], ms[3], ms[4]);
  return s;
}

/* The vocabularies on the device, for tabcl_category_index_fit_cl. */
static tabcl_status upload_vocab(tabcl_context *ctx, const lk_case *k, int ncols,
                                 const lk_col *cols, tabcl_strings_cl *v) {
  memset(v, 0, 4 * sizeof *v);
  tabcl_status s = TABCL_OK;
  for (int c = 0; c < ncols && !s; c++)
    s = strings_to_device(ctx, k->v, k->len, cols[c].voff, cols[c].vdata, &v[c]);
  return s;
}

/* Wall seconds of fit_cl from vocabularies on the device (median of reps;
   *first: the first call's, whose fresh device memory the driver may
   still have to find), its codes checked by a lookup against the host
   fit's in the caller. */
static tabcl_status time_fit_cl(tabcl_context *ctx, const lk_case *k, int ncols,
                                const lk_col *cols, int reps, double *sec, double *first) {
  tabcl_strings_cl v[4];
  tabcl_status s = upload_vocab(ctx, k, ncols, cols, v);
  double t[64];
  if (!s) s = tabcl__finish(ctx);
  for (int r = 0; r < reps && !s; r++) {
    tabcl_category_index *idx = NULL;
    double t0 = bench_now();
    s = tabcl_category_index_fit_cl(ctx, ncols, v, TABCL_CODES_BY_POSITION, 0, NULL, NULL, &idx);
    t[r] = bench_now() - t0;
    tabcl_category_index_destroy(idx);
  }
  if (!s) *sec = bench_median(t, reps);
  if (!s) *first = t[0];
  for (int c = 0; c < 4; c++) {
    tabcl__buffer_release(v[c].data);
    tabcl__buffer_release(v[c].offsets);
  }
  return s;
}

/* Load against its bound (issue 16): the index saved to a file in TMPDIR,
   read once so it is in the page cache, then the wall time of reading it
   whole into memory (what load does first) and of tabcl_category_index_load
   (medians of reps). */
static tabcl_status time_load(tabcl_context *ctx, tabcl_category_index *idx, int reps,
                              double *read_s, double *load_s) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tabcl-bench-%ld.idx", dir && *dir ? dir : "/tmp", (long)getpid());
  tabcl_status s = tabcl_category_index_save(idx, path);
  double tr[64], tl[64];
  for (int r = -1; r < reps && !s; r++) {   /* r = -1: into the page cache */
    double t0 = bench_now();
    FILE *f = fopen(path, "rb");
    if (!f) {
      s = tabcl__fail(TABCL_IO_ERROR, "bench: cannot read %s", path);
      break;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    free(buf);
    if (got != (size_t)n) s = tabcl__fail(TABCL_IO_ERROR, "bench: short read of %s", path);
    if (r >= 0) tr[r] = bench_now() - t0;
  }
  for (int r = 0; r < reps && !s; r++) {
    tabcl_category_index *back = NULL;
    double t0 = bench_now();
    s = tabcl_category_index_load(ctx, path, &back);
    tl[r] = bench_now() - t0;
    tabcl_category_index_destroy(back);
  }
  remove(path);
  if (!s) {
    *read_s = bench_median(tr, reps);
    *load_s = bench_median(tl, reps);
  }
  return s;
}

static int one_case(tabcl_context *ctx, const bench_args *a, const lk_case *k, double copy_bw) {
  int ncols = !strcmp(k->variant, "cols4") ? 4 : 1;
  char name[128];
  snprintf(name, sizeof name, "v%lld_len%d_q%lld%s%s", (long long)k->v, k->len, (long long)k->q,
           *k->variant ? "_" : "", k->variant);
  if (!bench_case_taken(a, name)) return 0;
  lk_col cols[4];
  if (build(k, ncols, cols)) {
    fprintf(stderr, "lookup bench %s: out of host memory\n", name);
    free_cols(cols, ncols);
    return 1;
  }
  tabcl_strings_view vv[4], qv[4];
  for (int c = 0; c < ncols; c++) {
    vv[c] = (tabcl_strings_view){k->v, cols[c].voff, cols[c].vdata, NULL};
    qv[c] = (tabcl_strings_view){k->q, cols[c].qoff, cols[c].qdata, NULL};
  }
  double vocab_bytes = (double)ncols * (double)k->v * k->len;
  int big = vocab_bytes + (double)ncols * (double)k->q * k->len > 256e6;
  int reps = a->reps < 1 ? 1 : a->reps > 64 ? 64 : a->reps;
  int host_reps = big ? (reps < 3 ? reps : 3) : reps;
  tabcl_category_index *idx = NULL;
  double fit_t[64], look_t[64], wall_t[64], host_t[64];
  int fit_reps = big ? 1 : (reps < 5 ? reps : 5);
  tabcl_status s = TABCL_OK;
  /* The first fit of a case timed apart (fit_first_ms), the median of the
     fits after it: the same protocol as the host peers' (a warm-up call,
     then the median; bench/peers/common.py). A first fit here pays for
     fresh memory, which on some VMs costs far more than the fit
     (bench/history/2026-11-to-12.md, "First touch on this VM"). */
  double fit_first_s = 0;
  for (int r = -1; r < fit_reps && !s; r++) {
    tabcl_category_index_destroy(idx);
    idx = NULL;
    double t0 = bench_now();
    s = tabcl_category_index_fit(ctx, ncols, vv, TABCL_CODES_BY_POSITION, &idx);
    if (r < 0) fit_first_s = bench_now() - t0;
    else fit_t[r] = bench_now() - t0;
  }
  /* The fit's peak device memory, measured: the context's idle pooled
     buffers released first (a fit may take them), then the most bytes of
     device buffers alive during one more fit, less those alive before it. */
  int64_t fit_peak = 0;
  if (!s) {
    tabcl_category_index *m = NULL;
    tabcl__tools_pool_trim(ctx);
    const int64_t before = tabcl__tools_device_bytes_live();
    (void)tabcl__tools_device_bytes_peak_reset();
    s = tabcl_category_index_fit(ctx, ncols, vv, TABCL_CODES_BY_POSITION, &m);
    fit_peak = tabcl__tools_device_bytes_peak_reset() - before;
    tabcl_category_index_destroy(m);
  }
  double fit_cl_s = 0, fit_cl_first_s = 0, read_s = 0, load_s = 0;
  /* fit_cl takes milliseconds even where the host fit takes a second (the
     big cases' one rep): as many reps as the small cases */
  const int fit_cl_reps = reps < 5 ? reps : 5;
  if (!s) s = time_fit_cl(ctx, k, ncols, cols, fit_cl_reps, &fit_cl_s, &fit_cl_first_s);
  if (!s) s = time_load(ctx, idx, fit_reps, &read_s, &load_s);
  lk_dev d;
  memset(&d, 0, sizeof d);
  if (!s) s = upload(ctx, k, ncols, cols, &d);
  double dev_s = 0, wall_s = 0;
  if (!s) s = time_lookup(ctx, idx, ncols, &d, &dev_s, &wall_s);   /* warm-up */
  for (int r = 0; r < reps && !s; r++) s = time_lookup(ctx, idx, ncols, &d, &look_t[r], &wall_t[r]);
  int tuned = !*k->variant && (a->quick ? k->len == 300 && k->v == 3000
                                        : k->q == 100000 && k->v >= 10000 && k->len >= 64);
  if (!s && tuned) s = tune(ctx, a, idx, ncols, &d, name, reps);
  /* every code against the one the case was built to give */
  int32_t *got[4] = {NULL, NULL, NULL, NULL};
  int64_t wrong = 0;
  for (int c = 0; c < ncols && !s; c++) {
    got[c] = malloc((size_t)k->q * 4);
    if (!got[c]) s = tabcl__fail(TABCL_OUT_OF_MEMORY, "bench codes");
    if (!s) s = tabcl__read(ctx, d.codes[c], 0, (size_t)k->q * 4, got[c]);
    for (int64_t i = 0; !s && i < k->q; i++) wrong += got[c][i] != cols[c].want[i];
  }
  release_dev(&d);
  /* the host API, upload and read-back included; the first call apart
     (host_lookup_first_ms: it maps the index's tables on a CPU device and
     starts the context's threads), then the median as for the peers */
  double host_first_s = 0;
  for (int r = -1; r < host_reps && !s; r++) {
    double t0 = bench_now();
    s = tabcl_category_index_lookup(idx, ncols, qv, got);
    if (r < 0) host_first_s = bench_now() - t0;
    else host_t[r] = bench_now() - t0;
  }
  for (int c = 0; c < ncols && !s; c++)
    for (int64_t i = 0; i < k->q; i++) wrong += got[c][i] != cols[c].want[i];
  if (s) {
    fprintf(stderr, "lookup bench %s: %s: %s\n", name, tabcl_status_name(s), tabcl_last_error());
    tabcl_category_index_destroy(idx);
    free_cols(cols, ncols);
    for (int c = 0; c < ncols; c++) free(got[c]);
    return 1;
  }
  double fit_ms = bench_median(fit_t, fit_reps) * 1e3;
  double look_ms = bench_median(look_t, reps) * 1e3;
  double wall_ms = bench_median(wall_t, reps) * 1e3;
  double host_ms = bench_median(host_t, host_reps) * 1e3;
  int64_t peak = tabcl__tools_lookup_peak_bytes(ncols, qv);
  const int64_t index_bytes = tabcl__tools_index_device_bytes(idx);
  /* the least a lookup moves: query bytes and offsets once, each found
     label's bytes once, a code per row */
  double found = 0;
  for (int c = 0; c < ncols; c++)
    for (int64_t i = 0; i < k->q; i++) found += cols[c].want[i] >= 0;
  double moved = (double)ncols * k->q * (k->len + 12) + found * k->len;
  double bound_ms = copy_bw > 0 ? moved / copy_bw * 1e3 : 0;
  /* the host call's own bound: its query bytes and offsets up, its codes
     down, at the pinned rates measured in this run (issue 16) */
  bench_link link;
  double link_ms = 0, fit_link_ms = 0;
  if (!bench_link_bandwidth(ctx, a->quick, &link) && link.h2d_pinned > 0 && link.d2h_pinned > 0) {
    link_ms = ((double)ncols * k->q * (k->len + 8) / link.h2d_pinned +
               (double)ncols * k->q * 4 / link.d2h_pinned) * 1e3;
    /* a fit's: its label bytes and offsets up */
    fit_link_ms = (double)ncols * k->v * (k->len + 8) / link.h2d_pinned * 1e3;
  }
  const double fit_cl_ms = fit_cl_s * 1e3;
  printf("| %s | %d | %.2f | %.3f | %.3f | %.2f | %.2f | %.3f | %.3f | %.2f | %.3f | %.3f | %.1f | "
         "%.1f | %.1f | %s |\n", name, ncols, fit_ms, fit_link_ms, fit_cl_ms, load_s * 1e3,
         read_s * 1e3, look_ms, wall_ms, host_ms,
         link_ms, bound_ms, (double)peak / 1048576.0,
         (double)fit_peak / 1048576.0, (double)index_bytes / 1048576.0,
         wrong ? "**WRONG**" : "ok");
  fflush(stdout);
  bench_record(a, "lookup", name, "fit_ms", fit_ms, "ms");
  bench_record(a, "lookup", name, "fit_first_ms", fit_first_s * 1e3, "ms");
  bench_record(a, "lookup", name, "fit_cl_ms", fit_cl_ms, "ms");
  bench_record(a, "lookup", name, "fit_cl_first_ms", fit_cl_first_s * 1e3, "ms");
  bench_record(a, "lookup", name, "load_ms", load_s * 1e3, "ms");
  bench_record(a, "lookup", name, "file_read_ms", read_s * 1e3, "ms");
  bench_record(a, "lookup", name, "load_vs_fit_and_read", load_s * 1e3 / (fit_ms + read_s * 1e3),
               "x");
  if (fit_link_ms > 0) {
    bench_record(a, "lookup", name, "fit_link_bound_ms", fit_link_ms, "ms");
    bench_record(a, "lookup", name, "fit_vs_link_bound", fit_ms / fit_link_ms, "x");
  }
  bench_record(a, "lookup", name, "fit_peak_vs_index", (double)fit_peak / (double)index_bytes, "x");
  bench_record(a, "lookup", name, "lookup_ms", look_ms, "ms");
  bench_record(a, "lookup", name, "lookup_wall_ms", wall_ms, "ms");
  bench_record(a, "lookup", name, "host_lookup_ms", host_ms, "ms");
  bench_record(a, "lookup", name, "host_lookup_first_ms", host_first_s * 1e3, "ms");
  bench_record(a, "lookup", name, "moved_bound_ms", bound_ms, "ms");
  if (link_ms > 0) {
    bench_record(a, "lookup", name, "host_link_bound_ms", link_ms, "ms");
    bench_record(a, "lookup", name, "host_vs_link_bound", host_ms / link_ms, "x");
  }
  bench_record(a, "lookup", name, "peak_bytes", (double)peak, "bytes");
  bench_record(a, "lookup", name, "fit_peak_bytes", (double)fit_peak, "bytes");
  bench_record(a, "lookup", name, "index_bytes", (double)index_bytes, "bytes");
  bench_record(a, "lookup", name, "queries", (double)k->q, "rows");
  bench_record(a, "lookup", name, "codes_ok", wrong ? 0 : 1, "bool");
  int bad = wrong != 0;
  if (a->dump_dir) {
    double total = vocab_bytes + (double)ncols * k->q * (k->len + 12) + (double)ncols * (k->v + 1) * 8;
    if (total > 2e9)
      fprintf(stderr, "lookup bench %s: %.1f GB, not dumped\n", name, total * 1e-9);
    else if (dump_case(a, name, k, ncols, cols, got)) {
      fprintf(stderr, "lookup bench %s: cannot write the dump under %s\n", name, a->dump_dir);
      bad = 1;
    }
  }
  if (ncols == 1 && strcmp(k->variant, "unknown") != 0)
    bad |= al_case(a, ctx, k, &cols[0], idx, name, host_reps);
  tabcl_category_index_destroy(idx);
  free_cols(cols, ncols);
  for (int c = 0; c < ncols; c++) free(got[c]);
  return bad;
}

int bench_lookup(tabcl_context *ctx, const bench_args *a) {
  static const lk_case quick[] = {
      {100, 1000, 8, ""},        {3000, 1000, 8, ""},         {100, 1000, 300, ""},
      {3000, 1000, 300, ""},     {1000, 1000, 300, "prefix"}, {1000, 1000, 300, "middle"},
      {1000, 1000, 64, "nonascii"}, {1000, 1000, 64, "unknown"}, {500, 1000, 16, "cols4"},
  };
  static const int lens[] = {8, 64, 512, 4096};
  static const int64_t vocabs[] = {100, 10000, 200000}, queries[] = {1000, 100000};
  static const lk_case extra[] = {
      {10000, 100000, 512, "prefix"},   {10000, 100000, 512, "middle"},
      {10000, 100000, 512, "nonascii"}, {10000, 100000, 512, "unknown"},
      {10000, 100000, 64, "cols4"},     {200000, 100000, 64, "cols4"},
      {200000, 100000, 4096, "prefix"}, {200000, 100000, 4096, "middle"},
  };
  lk_case full[4 * 3 * 2 + sizeof extra / sizeof extra[0]];
  int nfull = 0;
  for (int l = 0; l < 4; l++)
    for (int v = 0; v < 3; v++)
      for (int q = 0; q < 2; q++) full[nfull++] = (lk_case){vocabs[v], queries[q], lens[l], ""};
  for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) full[nfull++] = extra[e];
  const lk_case *cases = a->quick ? quick : full;
  int n = a->quick ? (int)(sizeof quick / sizeof quick[0]) : nfull;

  double bw = bench_copy_bandwidth(ctx, a->quick);
  /* the least any host call waits here: a floor for the small cases */
  double rt = 0, rt_min = 0;
  if (bench_round_trip(ctx, a->quick, &rt, &rt_min) == 0) {
    printf("Round trip (one launch and a blocking read of 128 B, the least a host call waits): "
           "median %.1f us, least %.1f us.\n\n", rt * 1e6, rt_min * 1e6);
    bench_record(a, "lookup", "device", "round_trip_us", rt * 1e6, "us");
  }
  /* builds every program once, so no case pays for a compile */
  lk_case warm = {16, 16, 300, ""};
  lk_col cols[4];
  int bad = build(&warm, 1, cols);
  if (!bad) {
    tabcl_strings_view v = {warm.v, cols[0].voff, cols[0].vdata, NULL};
    tabcl_category_index *idx = NULL;
    int32_t *codes = cols[0].want;
    tabcl_status s = tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_POSITION, &idx);
    if (!s) s = tabcl_category_index_lookup(idx, 1, &v, &codes);
    if (s) fprintf(stderr, "lookup bench warm-up: %s\n", tabcl_last_error());
    bad = s != TABCL_OK;
    tabcl_category_index_destroy(idx);
  }
  free_cols(cols, 1);
  printf("Fit: wall time of tabcl_category_index_fit (BY_POSITION), the median of up to 5 fits "
         "after a first one (fit_first_ms in --jsonl); fit link bound: its label "
         "bytes and offsets at the pinned host-to-device rate; fit_cl: wall time of "
         "tabcl_category_index_fit_cl from the same labels already on the device (median of up to 5 "
         "calls; fit_cl_first_ms in --jsonl: the first); load: "
         "tabcl_category_index_load of the index saved to TMPDIR, beside reading that file whole "
         "from the page cache. Lookup: device time of "
         "tabcl_category_index_lookup_cl with the queries on the device (median of %d), its wall "
         "time, and the host call with upload and read-back (the median after a first call, "
         "host_lookup_first_ms in --jsonl). Link bound: the host call's query "
         "bytes and offsets up and codes down at the pinned transfer rates of tabcl-bench copy. "
         "Bound: the least bytes a lookup moves at the measured copy bandwidth (%.1f GB/s). "
         "Fit peak: the most bytes of device buffers alive during one more fit, less those "
         "alive before it (idle pooled buffers released first); index: the fitted index's own "
         "device bytes.\n\n",
         a->reps, bw * 1e-9);
  printf("| case | cols | fit ms | fit link bound ms | fit_cl ms | load ms | file read ms | "
         "lookup ms | lookup wall ms | host lookup ms | link bound ms | bound ms | lookup peak MiB | "
         "fit peak MiB | index MiB | codes |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < n; i++) bad |= one_case(ctx, a, &cases[i], bw);
  if (ntune) {
    printf("\nLookup device ms by kernel choice (queries on the device): one work-item per row, "
           "or a work-group of N lanes per row after a probe.\n\n");
    printf("| case | item | group 32 | group 64 | group 128 | group 256 |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < ntune; i++) printf("%s\n", tune_rows[i]);
  }
  if (nalign) {
    printf("\nAlign: the host call tabcl_category_index_align of a dictionary-encoded column "
           "(median of %d; its categories a shuffled half of the vocabulary, at most one a row, "
           "and a tenth as many unknown; 1 row in 50 missing), every code checked. Link bound: "
           "its categories' bytes and offsets and its input codes up, its codes down, at the "
           "pinned rates measured in this run.\n\n",
           a->reps);
    printf("| case | categories | rows | host align ms | link bound ms | align / bound | codes |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nalign; i++) printf("%s\n", align_rows[i]);
  }
  return bad;
}
