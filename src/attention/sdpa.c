/* Scaled dot-product attention: descriptor validation, the choice between
 * the fused kernel and the CLBlast path, batch slicing and the entry points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/sdpa.h"
#include "tabcl/tabcl_cl.h"

size_t tabcl__sdpa_elem_size(tabcl_dtype dt) {
  return dt == TABCL_F64 ? 8 : dt == TABCL_F32 ? 4 : 2;
}

int tabcl__sdpa_has_work(const tabcl_sdpa_desc *d) { return d->batch > 0 && d->q_len > 0; }

double tabcl__sdpa_scale(const tabcl_sdpa_desc *d) {
  return d->scale != 0 ? d->scale : 1.0 / sqrt((double)d->head_dim);
}

int tabcl__sdpa_max_groups_yz = 65535;

tabcl_status tabcl__sdpa_set_args_at(cl_kernel k, const char *kname, int first, int n,
                                     const tabcl__arg *args) {
  for (int i = 0; i < n; i++) {
    cl_int err = TABCL_CL(clSetKernelArg(k, (cl_uint)(first + i), args[i].size, args[i].ptr));
    if (err != CL_SUCCESS) {
      char what[160];
      snprintf(what, sizeof what, "setting argument %d of %s", first + i, kname);
      return tabcl__cl_fail(err, "clSetKernelArg", what);
    }
  }
  return TABCL_OK;
}

void tabcl__sdpa_track(tabcl__sdpa_events *e, cl_event ev) {
  if (!ev) return;
  if (!e) {
    clReleaseEvent(ev);
    return;
  }
  if (e->want_first && !e->first) {
    clRetainEvent(ev);
    e->first = ev;
  }
  if (e->want_last) {
    if (e->last) clReleaseEvent(e->last);
    e->last = ev;
  } else {
    clReleaseEvent(ev);
  }
}

void tabcl__sdpa_events_release(tabcl__sdpa_events *e) {
  if (e->first) clReleaseEvent(e->first);
  if (e->last) clReleaseEvent(e->last);
  e->first = e->last = NULL;
}

tabcl_status tabcl__sdpa_validate(const char *fn, const tabcl_context *ctx,
                                  const tabcl_sdpa_desc *d, int has_q, int has_k, int has_v,
                                  int has_mask, int has_out) {
  if (!ctx) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!d) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: desc is NULL", fn);
  if (d->batch < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: batch is %lld; it must be >= 0", fn,
                       (long long)d->batch);
  if (d->q_len < 0 || d->q_len > INT32_MAX)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q_len is %lld; it must be in [0, 2^31)", fn,
                       (long long)d->q_len);
  if (d->kv_len < 0 || d->kv_len > INT32_MAX)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: kv_len is %lld; it must be in [0, 2^31)",
                       fn, (long long)d->kv_len);
  if ((unsigned)d->dtype > (unsigned)TABCL_F64)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: dtype %d is not a tabcl_dtype", fn,
                       (int)d->dtype);
  if ((unsigned)d->mask > (unsigned)TABCL_MASK_ADD)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: mask kind %d is not a tabcl_mask_kind", fn,
                       (int)d->mask);
  if (!isfinite(d->scale))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: scale is not finite", fn);
  if (d->q_heads > 0 && d->kv_heads > 0 && d->q_heads % d->kv_heads != 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT,
                       "%s: q_heads (%d) is not a multiple of kv_heads (%d)", fn,
                       (int)d->q_heads, (int)d->kv_heads);
  if (d->q_heads < 0 || d->kv_heads < 0 || d->head_dim < 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q_heads %d, kv_heads %d, head_dim %d: "
                       "none may be negative", fn, (int)d->q_heads, (int)d->kv_heads,
                       (int)d->head_dim);
  if (!tabcl__sdpa_has_work(d)) return TABCL_OK;
  if (d->q_heads <= 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q_heads is %d; it must be > 0", fn,
                       (int)d->q_heads);
  if (d->kv_heads <= 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: kv_heads is %d; it must be > 0", fn,
                       (int)d->kv_heads);
  if (d->head_dim <= 0)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: head_dim is %d; it must be > 0", fn,
                       (int)d->head_dim);
  /* Extents whose byte sizes overflow cannot describe real buffers: refuse
     them before anything is read (found by fuzz_sdpa_desc). */
  {
    const uint64_t es = d->dtype == TABCL_F64 ? 8 : d->dtype == TABCL_F32 ? 4 : 2;
    uint64_t qb, kb, mb = 1, t;
    int bad = __builtin_mul_overflow((uint64_t)d->batch, (uint64_t)d->q_len, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->q_heads, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->head_dim, &t) ||
              __builtin_mul_overflow(t, es, &qb) ||
              __builtin_mul_overflow((uint64_t)d->batch, (uint64_t)d->kv_len, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->kv_heads, &t) ||
              __builtin_mul_overflow(t, (uint64_t)d->head_dim, &t) ||
              __builtin_mul_overflow(t, es, &kb);
    if (!bad && d->mask != TABCL_MASK_NONE)
      bad = __builtin_mul_overflow(d->mask_batch_broadcast ? 1u : (uint64_t)d->batch,
                                   d->mask_head_broadcast ? 1u : (uint64_t)d->q_heads, &t) ||
            __builtin_mul_overflow(t, (uint64_t)d->q_len, &t) ||
            __builtin_mul_overflow(t, (uint64_t)d->kv_len, &t) ||
            __builtin_mul_overflow(t, d->mask == TABCL_MASK_ADD ? es : 1u, &mb);
    if (bad || qb > (uint64_t)PTRDIFF_MAX || kb > (uint64_t)PTRDIFF_MAX ||
        mb > (uint64_t)PTRDIFF_MAX)
      return tabcl__fail(TABCL_INVALID_ARGUMENT,
                         "%s: batch %lld x q_len %lld x kv_len %lld x heads %d/%d x head_dim %d "
                         "describes tensors larger than any address space", fn,
                         (long long)d->batch, (long long)d->q_len, (long long)d->kv_len,
                         (int)d->q_heads, (int)d->kv_heads, (int)d->head_dim);
  }
  if (!has_q) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: q is NULL", fn);
  if (!has_out) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (d->kv_len > 0 && !has_k) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: k is NULL", fn);
  if (d->kv_len > 0 && !has_v) return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: v is NULL", fn);
  if (d->kv_len > 0 && d->mask != TABCL_MASK_NONE && !has_mask)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "%s: mask is NULL but the mask kind is %s", fn,
                       d->mask == TABCL_MASK_BOOL ? "TABCL_MASK_BOOL" : "TABCL_MASK_ADD");
  return TABCL_OK;
}

/* Local memory of a tile shape: the Q tile, the larger of a K chunk and a V
   chunk (unpadded, swizzled), P transposed with four padding columns, a
   rescale factor and tks partial maxima/sums per query. */
static size_t tile_bytes(size_t es, const tabcl__sdpa_tiles *t) {
  const size_t kch = (size_t)t->bk * (size_t)t->kc, vch = (size_t)t->vk * (size_t)t->dp;
  return es * ((size_t)t->bq * (size_t)t->dp + (kch > vch ? kch : vch) +
               (size_t)t->bk * (size_t)(t->bq + 4) + (size_t)(1 + t->tks) * (size_t)t->bq);
}

static int pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* Float4 vectors of the larger chunk (K or V) per work-item. */
static int share_of_chunk(const tabcl__sdpa_tiles *t) {
  const int kg = t->bk * t->kc / 4, vg = t->vk * t->dp / 4, g = kg > vg ? kg : vg;
  return (g + t->nt - 1) / t->nt;
}

/* Reading the next chunk into registers while the current one is used
   hides the reads' latency but holds 4 registers a vector for the whole
   pass. Up to 4 vectors a work-item it pays; past that the registers cost
   resident groups: on the H200 64 x 56 tiles at head dim 64 (7 vectors)
   need 168 registers a work-item with it and 128 without, which lets 4
   groups share an SM instead of 3, and run 5% (f32) to 30% (f16) faster;
   at head dim 128 (64 x 16, 4 vectors) dropping it saved registers but ran
   up to 9% slower (tabcl-bench attention, 2026-11-29). */
static int default_prefetch(const tabcl__sdpa_tiles *t) { return share_of_chunk(t) <= 4; }

/* Whether the kernel's index arithmetic holds for t (see cl/sdpa.cl): every
   work-item has whole register blocks, the swizzles stay inside a row, and
   a work-item's share of a K or V chunk is at most 16 vectors. */
static int shape_ok(const tabcl_context *ctx, size_t es, size_t maxwg, const tabcl__sdpa_tiles *t) {
  if (t->nt <= 0 || (size_t)t->nt > maxwg || !pow2(t->nt) || !pow2(t->tks) || t->tks > 32)
    return 0;
  if (t->bk < 8 || t->bk > 64 || t->bk % t->tks || t->nt % t->tks || t->bq % (t->nt / t->tks))
    return 0;
  if (t->nt % t->tc || t->bq % (t->nt / t->tc)) return 0;
  /* A chunk narrower than the row has a power of two of float4 columns, so
     the XOR masks (powers of two less one) fit in it. */
  if (t->kc < 4 || t->kc % 4 || t->dp % t->kc || (t->kc < t->dp && !pow2(t->kc / 4))) return 0;
  if (t->vk < 4 || t->vk % 4 || t->bk % t->vk) return 0;
  if (share_of_chunk(t) > 16) return 0;
  return tile_bytes(es, t) <= ctx->info.local_mem_size;
}

/* Tuning knob for benchmarks: TABCL_SDPA_TILES="64:64x32,128:64x16" makes
   padded head dim 64 use 64 queries x 32 keys, and so on; "64:64x56/4"
   also sets the work-items per query row (1, 2 or 4, at most tc; the
   group has that many times the queries, at least 32), and suffixes set
   the chunks: "128:32x64/2t16k32v16" has 16 work-items across the keys of
   S, K chunks of 32 head-dim columns and V chunks of 16 keys ("p0"/"p1":
   without or with the register prefetch of chunks). An entry
   that does not fit the device (or is malformed) is ignored. */
static void override_tiles(const tabcl_context *ctx, size_t es, size_t maxwg, tabcl__sdpa_tiles *t) {
  const char *env = getenv("TABCL_SDPA_TILES");
  while (env && *env) {
    int d = 0, q = 0, k = 0, f = 0, n = 0, ok = 1;
    tabcl__sdpa_tiles c = *t;
    if (sscanf(env, "%d:%dx%d%n", &d, &q, &k, &n) != 3) ok = 0;
    const char *p = env + (ok ? n : 0);
    f = t->nt / t->bq;
    if (ok && *p == '/') ok = sscanf(p, "/%d%n", &f, &n) == 1, p += ok ? n : 0;
    c.bq = q, c.bk = k, c.tks = 8, c.kc = t->dp, c.vk = k;
    c.prefetch = -1;
    while (ok && (*p == 't' || *p == 'k' || *p == 'v' || *p == 'p')) {
      int x = 0;
      char which = *p;
      ok = sscanf(p + 1, "%d%n", &x, &n) == 1;
      if (ok)
        *(which == 't' ? &c.tks : which == 'k' ? &c.kc : which == 'v' ? &c.vk : &c.prefetch) = x,
            p += 1 + n;
    }
    ok = ok && (*p == ',' || *p == 0) && d == t->dp && (q == 16 || q == 32 || q == 64) &&
         (f == 1 || f == 2 || f == 4) && f <= t->tc && q * f >= 32 && k % 8 == 0;
    if (ok) c.nt = q * f;
    /* The default prefetch divides by the work-items and multiplies the
       chunk sizes: it is judged only on a shape that shape_ok has taken. */
    if (ok && shape_ok(ctx, es, maxwg, &c)) {
      if (c.prefetch == -1) c.prefetch = default_prefetch(&c);
      if (c.prefetch == 0 || c.prefetch == 1) {
        *t = c;
        return;
      }
    }
    env = strchr(env, ',');
    if (env) env++;
  }
}

int tabcl__sdpa_choose_tiles(const tabcl_context *ctx, tabcl_dtype dt, int head_dim,
                             tabcl__sdpa_tiles *t) {
  /* The fused kernel's register blocks are sized for head dims up to 256;
     wider heads take the CLBlast path. */
  if (head_dim > 256) return 0;
  const size_t es = dt == TABCL_F64 ? 8 : 4;
  const int dp = (head_dim + 15) / 16 * 16;
  /* More work-items per query row for the widest heads keeps the output
     block (and so the register count) per work-item at most 64 values. */
  const int ntf = dp > 128 ? 4 : 2;
  /* The output's float4 columns split evenly over a power of two of work-items. */
  const int tc = (dp / 4) % 16 == 0 ? 16 : (dp / 4) % 8 == 0 ? 8 : 4;
  size_t maxwg = ctx->info.max_work_group_size;
  if (ctx->info.max_work_item_sizes[0] < maxwg) maxwg = ctx->info.max_work_item_sizes[0];
  static const int bqs[] = {64, 32, 16};
  tabcl__sdpa_tiles best = {0};
  /* First choice: the largest query tile that takes a key tile of 16 or
     more (fewer barriers and softmax passes per FLOP; each K/V tile reused
     by more queries), with the largest such key tile. On the H200 64 x 16
     beat 32 x 32 at head dim 128 by 10% in f32 and 30% in f16 (tabcl-bench
     attention, 4 x 32 heads x 4096), and 64 x 56 beat 64 x 48 and 32 x 64
     at head dim 64. Else the shape with
     the most query x key pairs per tile, ties to the longer key tile. Key
     tiles are multiples of 8 up to 64 that shape_ok takes (which bounds a
     work-item's share of one at 16 vectors). With 48 KiB in f32 this gives
     64 x 64 for head dims up to 32, 64 x 56 for 64, 64 x 16 for 128 and
     16 x 16 for 256. Whole tiles go through local memory (one K chunk, one
     V chunk). */
  for (int pass = 0; pass < 2 && !best.bq; pass++)
    for (size_t i = 0; i < sizeof bqs / sizeof bqs[0]; i++) {
      const int bq = bqs[i], nt = bq * ntf;
      if ((size_t)nt > maxwg) continue;
      for (int bk = 64; bk >= (pass == 0 ? 16 : 8); bk -= 8) {
        tabcl__sdpa_tiles c = {dp, bq, bk, nt, tc, 8, dp, bk, 0, 0};
        if (!shape_ok(ctx, es, maxwg, &c)) continue;
        c.prefetch = default_prefetch(&c);
        if (pass == 0 || bq * bk > best.bq * best.bk ||
            (bq * bk == best.bq * best.bk && bk > best.bk))
          best = c;
        break;
      }
      if (pass == 0 && best.bq) break;
    }
  if (!best.bq) return 0;
  override_tiles(ctx, es, maxwg, &best);
  best.local_bytes = tile_bytes(es, &best);
  *t = best;
  return 1;
}

tabcl_status tabcl__sdpa_pick_path(const tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                                   int *picked, tabcl__sdpa_tiles *t) {
  if (d->dtype == TABCL_F64 && !ctx->info.has_fp64)
    return tabcl__fail(TABCL_UNSUPPORTED, "attention in f64: %s has no fp64", ctx->info.name);
  tabcl__sdpa_mma_shape m;
  if (path == TABCL__SDPA_MMA) {
    if (!tabcl__sdpa_mma_tiles(ctx, d, &m))
      return tabcl__fail(TABCL_UNSUPPORTED, "attention: the tensor-core kernel does not run "
                         "this dtype and head_dim %d on %s", (int)d->head_dim, ctx->info.name);
    *picked = path;
    return TABCL_OK;
  }
  int fits = tabcl__sdpa_choose_tiles(ctx, d->dtype, d->head_dim, t);
  if (path == TABCL__SDPA_AUTO) path = fits ? TABCL__SDPA_FUSED : TABCL__SDPA_CLBLAST;
  if (path == TABCL__SDPA_FUSED && !fits)
    return tabcl__fail(TABCL_UNSUPPORTED,
                       "attention: the fused kernel for head_dim %d does not fit %s's %llu bytes "
                       "of local memory", (int)d->head_dim, ctx->info.name,
                       (unsigned long long)ctx->info.local_mem_size);
  if (path == TABCL__SDPA_CLBLAST && !tabcl__sdpa_clblast_available())
    return tabcl__fail(TABCL_UNSUPPORTED, "attention: head_dim %d needs the CLBlast path, and "
                       "this build has no CLBlast", (int)d->head_dim);
  if (path != TABCL__SDPA_FUSED && path != TABCL__SDPA_CLBLAST)
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "attention: no path %d", path);
  *picked = path;
  return TABCL_OK;
}

tabcl_status tabcl__sdpa_run(tabcl_context *ctx, const tabcl_sdpa_desc *d, int path,
                             const tabcl__sdpa_bufs *b, cl_uint nwait, const cl_event *wait,
                             tabcl__sdpa_events *ev) {
  int taken = 0;
  tabcl_status s = tabcl__sdpa_mma_run(ctx, d, path, b, nwait, wait, ev, &taken);
  if (taken) return s;
  tabcl__sdpa_tiles t;
  int picked = 0;
  s = tabcl__sdpa_pick_path(ctx, d, path, &picked, &t);
  if (s) return s;
  int64_t step = picked == TABCL__SDPA_FUSED ? tabcl__sdpa_fused_slice(ctx, d, &t)
                                             : tabcl__sdpa_clblast_slice(ctx, d);
  for (int64_t b0 = 0; b0 < d->batch && !s; b0 += step) {
    int64_t nb = d->batch - b0 < step ? d->batch - b0 : step;
    cl_uint nw = b0 == 0 ? nwait : 0;
    const cl_event *w = b0 == 0 ? wait : NULL;
    s = picked == TABCL__SDPA_FUSED ? tabcl__sdpa_fused_launch(ctx, d, &t, b, b0, nb, nw, w, ev)
                                    : tabcl__sdpa_clblast_run(ctx, d, b, b0, nb, nw, w, ev);
    /* The fused kernel refuses before enqueueing anything when the compiled
       kernel cannot run NT work-items per group on this device (too many
       registers, say): the automatic choice then falls back to CLBlast. */
    if (s == TABCL_UNSUPPORTED && b0 == 0 && path == TABCL__SDPA_AUTO &&
        picked == TABCL__SDPA_FUSED && tabcl__sdpa_clblast_available()) {
      picked = TABCL__SDPA_CLBLAST;
      step = tabcl__sdpa_clblast_slice(ctx, d);
      s = tabcl__sdpa_clblast_run(ctx, d, b, 0, d->batch < step ? d->batch : step, nw, w, ev);
    }
  }
  return s;
}

/* p + off, where p may be NULL (k and v are when kv_len is 0): pointer
   arithmetic on NULL is undefined even with a zero offset. */
static const void *at(const void *p, size_t off) {
  return p ? (const unsigned char *)p + off : NULL;
}

/* Sizes in bytes of one batch entry of each tensor. */
typedef struct item_bytes {
  size_t q, kv, mask, mask_whole;
} item_bytes;

static item_bytes sizes_of(const tabcl_sdpa_desc *d) {
  item_bytes r;
  size_t es = tabcl__sdpa_elem_size(d->dtype);
  r.q = (size_t)d->q_len * (size_t)d->q_heads * (size_t)d->head_dim * es;
  r.kv = (size_t)d->kv_len * (size_t)d->kv_heads * (size_t)d->head_dim * es;
  size_t mes = d->mask == TABCL_MASK_BOOL ? 1 : es;
  size_t one = d->mask == TABCL_MASK_NONE
                   ? 0
                   : (size_t)(d->mask_head_broadcast ? 1 : d->q_heads) * (size_t)d->q_len *
                         (size_t)d->kv_len * mes;
  r.mask = d->mask_batch_broadcast ? 0 : one;
  r.mask_whole = d->mask_batch_broadcast ? one : 0;
  return r;
}

tabcl_status tabcl__sdpa_host_path(tabcl_context *ctx, const tabcl_sdpa_desc *d, const void *q,
                                   const void *k, const void *v, const void *mask, void *out,
                                   int path) {
  tabcl_status s = tabcl__sdpa_validate("tabcl_sdpa_host", ctx, d, q != NULL, k != NULL,
                                        v != NULL, mask != NULL, out != NULL);
  if (s || !tabcl__sdpa_has_work(d)) return s;
  tabcl__sdpa_tiles t;
  int picked = 0;
  if ((s = tabcl__sdpa_pick_path(ctx, d, path, &picked, &t))) return s;

  item_bytes ib = sizes_of(d);
  uint64_t per_item = ib.q > ib.kv ? ib.q : ib.kv;
  if (ib.mask > per_item) per_item = ib.mask;
  /* Uploads are split only where a tensor exceeds one allocation; the
     launches are sliced again (tabcl__sdpa_run) to the NDRange and to
     max_batch_per_launch. With one upload the output is read straight into
     out as the last step; with several, into a host temporary first, so a
     failure in a later slice leaves out untouched. */
  int64_t step = per_item ? (int64_t)(ctx->info.max_mem_alloc_size / per_item) : d->batch;
  if (step < 1) step = 1;
  if (step > d->batch) step = d->batch;
  const size_t out_bytes = (size_t)d->batch * ib.q;
  tabcl__sdpa_bufs b = {0};
  unsigned char *tmp = out;
  if (step < d->batch && !(tmp = tabcl__malloc(out_bytes)))
    return tabcl__fail(TABCL_OUT_OF_MEMORY, "tabcl_sdpa_host: out of host memory for %zu bytes "
                       "of output", out_bytes);
  const int has_mask = d->mask != TABCL_MASK_NONE && d->kv_len > 0;
  s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, (size_t)step * ib.q, NULL, &b.q, "attention q");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, (size_t)step * ib.kv, NULL, &b.k,
                                   "attention k");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY, (size_t)step * ib.kv, NULL, &b.v,
                                   "attention v");
  if (!s && has_mask)
    s = tabcl__buffer_create(ctx, CL_MEM_READ_ONLY,
                             ib.mask_whole ? ib.mask_whole : (size_t)step * ib.mask, NULL,
                             &b.mask, "attention mask");
  if (!s) s = tabcl__buffer_create(ctx, CL_MEM_WRITE_ONLY, (size_t)step * ib.q, NULL, &b.out,
                                   "attention out");
  if (!s && has_mask && ib.mask_whole) s = tabcl__write(ctx, b.mask, 0, ib.mask_whole, mask);
  tabcl_sdpa_desc sd = *d;
  if (!has_mask) sd.mask = TABCL_MASK_NONE;
  for (int64_t b0 = 0; b0 < d->batch && !s; b0 += step) {
    int64_t nb = d->batch - b0 < step ? d->batch - b0 : step;
    sd.batch = nb;
    s = tabcl__write(ctx, b.q, 0, (size_t)nb * ib.q, at(q, (size_t)b0 * ib.q));
    if (!s) s = tabcl__write(ctx, b.k, 0, (size_t)nb * ib.kv, at(k, (size_t)b0 * ib.kv));
    if (!s) s = tabcl__write(ctx, b.v, 0, (size_t)nb * ib.kv, at(v, (size_t)b0 * ib.kv));
    if (!s && has_mask && !ib.mask_whole)
      s = tabcl__write(ctx, b.mask, 0, (size_t)nb * ib.mask, at(mask, (size_t)b0 * ib.mask));
    if (!s) s = tabcl__sdpa_run(ctx, &sd, path, &b, 0, NULL, NULL);
    if (!s) s = tabcl__read(ctx, b.out, 0, (size_t)nb * ib.q, tmp + (size_t)b0 * ib.q);
  }
  /* Commands may still run after a failure; they must not outlive the buffers' users. */
  if (s) clFinish(ctx->queue);
  if (!s && tmp != out) memcpy(out, tmp, out_bytes);
  tabcl__buffer_release(b.q);
  tabcl__buffer_release(b.k);
  tabcl__buffer_release(b.v);
  tabcl__buffer_release(b.mask);
  tabcl__buffer_release(b.out);
  if (tmp != out) tabcl__free(tmp);
  return s;
}

tabcl_status tabcl_sdpa_host(tabcl_context *ctx, const tabcl_sdpa_desc *desc, const void *q,
                             const void *k, const void *v, const void *mask, void *out) {
  return tabcl__sdpa_host_path(ctx, desc, q, k, v, mask, out, TABCL__SDPA_AUTO);
}

tabcl_status tabcl_sdpa_cl(tabcl_context *ctx, const tabcl_sdpa_desc *desc, cl_mem q, cl_mem k,
                           cl_mem v, cl_mem mask, cl_mem out, cl_uint nwait, const cl_event *wait,
                           cl_event *ev) {
  tabcl_status s = tabcl__sdpa_validate("tabcl_sdpa_cl", ctx, desc, q != NULL, k != NULL,
                                        v != NULL, mask != NULL, out != NULL);
  if (s) return s;
  if ((nwait == 0) != (wait == NULL))
    return tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_sdpa_cl: nwait is %u but wait is %s",
                       nwait, wait ? "not NULL" : "NULL");
  if (ev) *ev = NULL;
  if (!tabcl__sdpa_has_work(desc)) {
    if (!ev) return TABCL_OK;
    cl_int err = TABCL_CL(clEnqueueMarkerWithWaitList(ctx->queue, nwait, wait, ev));
    return err == CL_SUCCESS ? TABCL_OK
                             : tabcl__cl_fail(err, "clEnqueueMarkerWithWaitList", "tabcl_sdpa_cl");
  }
  tabcl_sdpa_desc sd = *desc;
  if (sd.kv_len == 0) sd.mask = TABCL_MASK_NONE;
  tabcl__sdpa_bufs b = {q, k ? k : q, v ? v : q, mask, out};
  tabcl__sdpa_events e = {NULL, NULL, 0, ev != NULL};
  s = tabcl__sdpa_run(ctx, &sd, TABCL__SDPA_AUTO, &b, nwait, wait, &e);
  if (s) {
    tabcl__sdpa_events_release(&e);
    return s;
  }
  if (ev) *ev = e.last;
  return TABCL_OK;
}
