/* The categorical index's self-check for cl-probe: a small vocabulary with
 * duplicates, a null and an empty label, short and long queries (so both
 * lookup kernels run), known and unknown, against a linear host scan. */
#include <string.h>

#include "catindex/catindex.h"

enum { NV = 48, NQ = 96, LONG_AT = 40, LONG_LEN = 700 };

/* Label i of the check's vocabulary (i < NV) or of its unknown queries. */
static size_t make_label(int i, int is_long, uint8_t *out) {
  if (i == 3) return 0;                       /* the empty label */
  size_t n = is_long ? LONG_LEN + (size_t)(i % 5) : 1 + (size_t)(i * 7 % 19);
  for (size_t k = 0; k < n; k++) out[k] = (uint8_t)('a' + (k * 31 + (size_t)i * 17) % 26);
  if (n > 2) out[n / 2] = (uint8_t)(0x80 + i);   /* differ in the middle, not ASCII */
  return n;
}

/* Buffers of one run: the check may run on several threads at once. */
typedef struct check_mem {
  int64_t voff[NV + 1], qoff[NQ + 1];
  uint8_t vdata[NV * (LONG_LEN + 8)], qdata[NQ * (LONG_LEN + 8)];
  int32_t got[NQ], want[NQ];
} check_mem;

static tabcl_status run(tabcl_context *ctx, tabcl_category_index *idx, check_mem *m,
                        int long_queries) {
  const int64_t *voff = m->voff;
  const uint8_t *vdata = m->vdata;
  int64_t *qoff = m->qoff;
  uint8_t *qdata = m->qdata;
  int32_t *got = m->got, *want = m->want;
  int64_t at = 0;
  qoff[0] = 0;
  for (int i = 0; i < NQ; i++) {
    /* even rows: a vocabulary label; odd rows: an unknown one */
    int src = long_queries ? LONG_AT + (i / 2) % (NV - LONG_AT) : (i / 2) % LONG_AT;
    size_t n;
    if (i % 2 == 0) {
      n = (size_t)(voff[src + 1] - voff[src]);
      memcpy(qdata + at, vdata + voff[src], n);
    } else {
      n = make_label(NV + i, long_queries, qdata + at);
    }
    at += (int64_t)n;
    qoff[i + 1] = at;
    want[i] = -1;
    for (int v = 0; v < NV; v++)
      if (v != 5 && voff[v + 1] - voff[v] == (int64_t)n && !memcmp(vdata + voff[v], qdata + qoff[i], n))
        want[i] = v;                           /* the last position wins */
  }
  uint8_t qvalid[(NQ + 7) / 8];
  memset(qvalid, 0xFF, sizeof qvalid);
  qvalid[0] &= (uint8_t)~1u;                   /* query 0 is null */
  want[0] = -1;
  tabcl_strings_view q = {NQ, qoff, qdata, qvalid};
  int32_t *codes = got;
  tabcl_status s = tabcl_category_index_lookup(idx, 1, &q, &codes);
  for (int i = 0; !s && i < NQ; i++)
    if (got[i] != want[i])
      s = tabcl__fail(TABCL_OPENCL_ERROR,
                      "catindex self-check: %s query %d got code %d, expected %d on %s",
                      long_queries ? "long" : "short", i, got[i], want[i], ctx->info.name);
  return s;
}

tabcl_status tabcl__selfcheck_catindex(tabcl_context *ctx) {
  check_mem *m = tabcl__malloc(sizeof *m);
  if (!m) return tabcl__fail(TABCL_OUT_OF_MEMORY, "catindex self-check: out of host memory for its test "
                                "columns (%zu bytes)", sizeof *m);
  int64_t *voff = m->voff;
  uint8_t *vdata = m->vdata;
  int64_t at = 0;
  voff[0] = 0;
  for (int i = 0; i < NV; i++) {
    /* labels 20..23 repeat 10..13, so the last position must win */
    at += (int64_t)make_label(i >= 20 && i < 24 ? i - 10 : i, i >= LONG_AT, vdata + at);
    voff[i + 1] = at;
  }
  uint8_t valid[(NV + 7) / 8];
  memset(valid, 0xFF, sizeof valid);
  valid[0] &= (uint8_t)~(1u << 5);             /* label 5 is null: never matched */
  tabcl_strings_view v = {NV, voff, vdata, valid};
  tabcl_category_index *idx = NULL;
  tabcl_status s = tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_POSITION, &idx);
  if (!s) s = run(ctx, idx, m, 0);
  if (!s) s = run(ctx, idx, m, 1);
  tabcl_category_index_destroy(idx);
  tabcl__free(m);
  return s;
}
