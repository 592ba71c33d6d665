/* Failure injection across the public calls: for context create (on
 * tabcl's own OpenCL objects, and on the application's: then the
 * application's reference counts must also come out unchanged), fit,
 * lookup, align, save, load and attention, fail the 1st, 2nd, ... Nth host
 * allocation, and separately the Nth OpenCL call, until a run goes through
 * without an injected failure. Every run where a failure fired must return
 * TABCL_OUT_OF_MEMORY (the injected OpenCL failures are the allocation
 * errors CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES and
 * CL_OUT_OF_HOST_MEMORY) with a message naming what could not be had (the
 * host allocation's purpose; the OpenCL call, its error and, for a buffer,
 * what it was for), leak no host allocation or device buffer, leave its
 * poisoned outputs unchanged (and a saved file as it was), and leave the
 * objects it was given usable: the same call made right after gives the
 * right answer. The run that fires nothing must give the right answer too.
 * Saves are also swept over a full disk: the Nth write, fsync or rename
 * failing with ENOSPC, then EDQUOT, must be TABCL_IO_ERROR naming the
 * error, and leave the old file as it was and no temporary file.
 * (The sanitizer build of CI adds LeakSanitizer to the leak counters.) */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rel_common.h"
#include "tabcl/tabcl_cl.h"

#ifdef TABCL_FAULT_INJECTION

#define POISON32 0x7A7A7A7A
#define MAX_POINTS 20000

/* One call under test. `call` makes it with outputs poisoned by `poison`;
   `check` says whether a successful call's outputs are right; `untouched`
   whether a failed call left them as they were; `cleanup` frees what a
   successful call made. */
typedef struct sweep_ops {
  const char *name;
  void (*poison)(void *st);
  tabcl_status (*call)(void *st);
  int (*check)(void *st);
  int (*untouched)(void *st);
  void (*cleanup)(void *st);
} sweep_ops;

/* Whether a failed run's status and message are what its injection calls
   for; which and io_err as in sweep. */
static void expect_failure_named(const char *name, const char *kind, long n, int which,
                                 int io_err, tabcl_status s) {
  const char *msg = tabcl_last_error();
  if (which == 2) {
    cr_expect_eq(s, TABCL_IO_ERROR, "%s: failing %s %ld gave %s, not TABCL_IO_ERROR: %s", name,
                 kind, n, tabcl_status_name(s), msg);
    cr_expect(strstr(msg, strerror(io_err)) != NULL, "%s: failing %s %ld: the message does not "
              "say \"%s\": %s", name, kind, n, strerror(io_err), msg);
    return;
  }
  cr_expect_eq(s, TABCL_OUT_OF_MEMORY, "%s: failing %s %ld gave %s, not TABCL_OUT_OF_MEMORY: %s",
               name, kind, n, tabcl_status_name(s), msg);
  if (which == 0) {
    cr_expect(strstr(msg, "out of host memory for ") != NULL,
              "%s: failing %s %ld: the message does not say what it was for: %s", name, kind, n,
              msg);
  } else {
    cr_expect(strstr(msg, " failed: CL_") != NULL,
              "%s: failing %s %ld: the message names no OpenCL call and error: %s", name, kind, n,
              msg);
    if (!strncmp(msg, "clCreateBuffer", 14) || !strncmp(msg, "clCreateSubBuffer", 17))
      cr_expect(strstr(msg, ") while ") != NULL,
                "%s: failing %s %ld: the message does not say what the buffer was for: %s", name,
                kind, n, msg);
  }
}

/* which: 0 host allocations, 1 OpenCL calls, 2 file reads, writes, syncs
   and renames failing with io_err. */
static void sweep(const sweep_ops *ops, void *st, int which, int io_err) {
  const char *kind = which == 2 ? "file operation" : which ? "OpenCL call" : "host allocation";
  /* A clean call first: programs get built and cached outside the window,
     so the baselines below do not count the context's program cache. */
  ops->poison(st);
  tt_assert_ok(ops->call(st));
  cr_assert(ops->check(st), "%s: the clean call gave a wrong answer", ops->name);
  ops->cleanup(st);
  for (long n = 1; n <= MAX_POINTS; n++) {
    ops->poison(st);
    tt_live base = tt_live_now();
    tabcl__clear_error();
    if (which == 2) tabcl__fault_set_io(n, io_err);
    else tabcl__fault_set(which ? 0 : n, which ? n : 0);
    tabcl_status s = ops->call(st);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    if (!fired) {
      cr_expect_eq(s, TABCL_OK, "%s: no failure injected at %s %ld, yet %s: %s", ops->name, kind,
                   n, tabcl_status_name(s), tabcl_last_error());
      if (s == TABCL_OK) {
        cr_expect(ops->check(st), "%s: wrong answer after the sweep", ops->name);
        ops->cleanup(st);
      }
      cr_log_info("%s: %ld %s failure points", ops->name, n - 1, kind);
      return;
    }
    if (s == TABCL_OK) {
      cr_expect_fail("%s: failing %s %ld was swallowed (returned TABCL_OK)", ops->name, kind, n);
      cr_expect(ops->check(st), "%s: ... and the answer is wrong", ops->name);
      ops->cleanup(st);
    } else {
      cr_expect_neq(tabcl_last_error()[0], '\0', "%s: %s %ld failed without a message",
                    ops->name, kind, n);
      expect_failure_named(ops->name, kind, n, which, io_err, s);
      cr_expect(ops->untouched(st), "%s: failing %s %ld changed the outputs (%s)", ops->name,
                kind, n, tabcl_last_error());
    }
    tt_live now = tt_live_now();
    cr_expect(now.allocs == base.allocs && now.mems == base.mems,
              "%s: failing %s %ld leaked %ld host allocations and %ld device buffers (%s)",
              ops->name, kind, n, now.allocs - base.allocs, now.mems - base.mems,
              tabcl_status_name(s));
    /* The objects still work. */
    ops->poison(st);
    tabcl_status again = ops->call(st);
    cr_expect_eq(again, TABCL_OK, "%s: after failing %s %ld the next call gave %s: %s",
                 ops->name, kind, n, tabcl_status_name(again), tabcl_last_error());
    if (again == TABCL_OK) {
      cr_expect(ops->check(st), "%s: after failing %s %ld the next call is wrong", ops->name,
                kind, n);
      ops->cleanup(st);
    }
    if (now.allocs != base.allocs || now.mems != base.mems) return; /* one report is enough */
  }
  cr_assert_fail("%s: the sweep did not end within %d points", ops->name, MAX_POINTS);
}

/* ---- shared state: a context, vocabularies, queries -------------------- */

typedef struct world {
  tabcl_context *ctx;
  tt_strings vocab[2], query[2], cats[2];
  catref ref[2];
  tabcl_category_index *idx;      /* fitted BY_VALUE on vocab */
  int32_t *codes[2], *want[2];
  int32_t *in_codes[2];           /* align inputs */
  int64_t align_len[2];
  tabcl_category_index *made;     /* what fit or load made */
  char path[512];
  rel_sdpa_case sc;
  double *sref;
  tabcl_options opts;
  tabcl_context *made_ctx;
} world;

static void world_init(world *w, const char *seed_name) {
  memset(w, 0, sizeof *w);
  tt_rng r = {tt_seed(seed_name)};
  w->ctx = tt_context();
  for (int c = 0; c < 2; c++) {
    rel_column(&r, &w->vocab[c], 12 + 7 * c, 6);
    rel_column(&r, &w->query[c], 20 + 3 * c, 5);
    rel_column(&r, &w->cats[c], 6, 4);
    tabcl_strings_view v = tt_view(&w->vocab[c]);
    catref_build(&w->ref[c], &v, TABCL_CODES_BY_VALUE);
    w->codes[c] = malloc(64 * sizeof(int32_t));
    w->want[c] = malloc(64 * sizeof(int32_t));
    w->align_len[c] = 15 + c;
    w->in_codes[c] = malloc(64 * sizeof(int32_t));
    for (int64_t i = 0; i < w->align_len[c]; i++)
      w->in_codes[c][i] = (int32_t)tt_below(&r, 7) - 1;   /* -1 .. 5 */
  }
  tabcl_strings_view v[2] = {tt_view(&w->vocab[0]), tt_view(&w->vocab[1])};
  tt_assert_ok(tabcl_category_index_fit(w->ctx, 2, v, TABCL_CODES_BY_VALUE, &w->idx));
  snprintf(w->path, sizeof w->path, "sweep-%d.idx", (int)getpid());
  tabcl_sdpa_desc d = {0};
  d.batch = 2;
  d.q_len = 5;
  d.kv_len = 7;
  d.q_heads = 4;
  d.kv_heads = 2;
  d.head_dim = 16;
  d.dtype = TABCL_F32;
  d.causal = 1;
  d.mask = TABCL_MASK_BOOL;
  d.mask_head_broadcast = 1;
  rel_sdpa_case_make(&r, &w->sc, d);
  w->sref = malloc(w->sc.nq * sizeof *w->sref);
  tt_sdpa_reference(&w->sc.d, w->sc.q, w->sc.k, w->sc.v, w->sc.mask, w->sref, NULL);
}

static void world_fini(world *w) {
  tabcl_category_index_destroy(w->idx);
  for (int c = 0; c < 2; c++) {
    tt_strings_free(&w->vocab[c]);
    tt_strings_free(&w->query[c]);
    tt_strings_free(&w->cats[c]);
    catref_free(&w->ref[c]);
    free(w->codes[c]);
    free(w->want[c]);
    free(w->in_codes[c]);
  }
  rel_sdpa_case_free(&w->sc);
  free(w->sref);
  unlink(w->path);
  tabcl_context_destroy(w->ctx);
}

static int same_codes(const int32_t *a, const int32_t *b, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

static void poison_codes(void *p) {
  world *w = p;
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 64; i++) w->codes[c][i] = POISON32;
}
static int codes_untouched(void *p) {
  world *w = p;
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 64; i++)
      if (w->codes[c][i] != POISON32) return 0;
  return 1;
}
static void nothing(void *p) { (void)p; }

/* A fitted (or loaded) index must answer the queries as the reference does. */
static int index_answers(world *w, tabcl_category_index *idx) {
  tabcl_strings_view q[2] = {tt_view(&w->query[0]), tt_view(&w->query[1])};
  int32_t a[64], b[64], *codes[2] = {a, b};
  if (tabcl_category_index_lookup(idx, 2, q, codes) != TABCL_OK) return 0;
  for (int c = 0; c < 2; c++) {
    catref_lookup(&w->ref[c], &q[c], w->want[c]);
    if (!same_codes(codes[c], w->want[c], q[c].length)) return 0;
    if (tabcl_category_index_codes(idx, c) != w->ref[c].ncodes) return 0;
  }
  return 1;
}

/* ---- context create (and a first fit + lookup, which builds programs) -- */

static void poison_ctx(void *p) { ((world *)p)->made_ctx = (tabcl_context *)p; }
static tabcl_status call_create(void *p) {
  world *w = p;
  tabcl_status s = tabcl_context_create(&w->opts, &w->made_ctx);
  if (s) return s;
  /* A fresh context builds its programs (from the disk cache) on first use. */
  tabcl_strings_view v[2] = {tt_view(&w->vocab[0]), tt_view(&w->vocab[1])};
  tabcl_category_index *idx = NULL;
  s = tabcl_category_index_fit(w->made_ctx, 2, v, TABCL_CODES_BY_VALUE, &idx);
  if (!s) {
    tabcl_strings_view q[2] = {tt_view(&w->query[0]), tt_view(&w->query[1])};
    s = tabcl_category_index_lookup(idx, 2, q, w->codes);
  }
  tabcl_category_index_destroy(idx);
  /* The context is the caller's either way: destroy it here so the leak
     check sees only what the library failed to free. */
  tabcl_context_destroy(w->made_ctx);
  w->made_ctx = NULL;
  return s;
}
static int check_create(void *p) {
  world *w = p;
  tabcl_strings_view q[2] = {tt_view(&w->query[0]), tt_view(&w->query[1])};
  for (int c = 0; c < 2; c++) {
    catref_lookup(&w->ref[c], &q[c], w->want[c]);
    if (!same_codes(w->codes[c], w->want[c], q[c].length)) return 0;
  }
  return 1;
}
static int create_untouched(void *p) { return ((world *)p)->made_ctx == NULL; }

/* ---- a context on the application's own objects (create_cl) ------------ */

/* The application's context and queue, made with OpenCL itself on the
   world's device, and their reference counts before the sweep. */
typedef struct app_world {
  world *w;
  cl_context cl;
  cl_device_id device;
  cl_command_queue q;
  cl_uint crefs, qrefs;
} app_world;

static cl_uint refs_of(app_world *aw, int queue) {
  cl_uint n = 0;
  if (queue) clGetCommandQueueInfo(aw->q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL);
  else clGetContextInfo(aw->cl, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL);
  return n;
}
/* Whether the counts are back where they were. The application waits for
   its queue first; PoCL 3.1 drops the reference a finished command holds
   on the queue a little after clFinish returns (seen here: one more,
   now and then), so a count is given up to 30 seconds to come back: a
   reference tabcl kept never does. */
static int app_refs_kept(app_world *aw) {
  clFinish(aw->q);
  for (int i = 0; i < 30000; i++) {
    if (refs_of(aw, 0) == aw->crefs && refs_of(aw, 1) == aw->qrefs) return 1;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return 0;
}
static void poison_app_ctx(void *p) { ((app_world *)p)->w->made_ctx = (tabcl_context *)p; }
static tabcl_status call_create_app(void *p) {
  app_world *aw = p;
  world *w = aw->w;
  tabcl_status s = tabcl_context_create_cl(aw->cl, aw->device, aw->q, NULL, &w->made_ctx);
  if (s) return s;
  tabcl_context *ctx = w->made_ctx;
  tabcl_strings_view v[2] = {tt_view(&w->vocab[0]), tt_view(&w->vocab[1])};
  tabcl_category_index *idx = NULL;
  s = tabcl_category_index_fit(ctx, 2, v, TABCL_CODES_BY_VALUE, &idx);
  if (!s) {
    tabcl_strings_view q[2] = {tt_view(&w->query[0]), tt_view(&w->query[1])};
    s = tabcl_category_index_lookup(idx, 2, q, w->codes);
  }
  tabcl_category_index_destroy(idx);
  tabcl_context_destroy(ctx);
  /* a failure after the context was made leaves *out as the poison too */
  w->made_ctx = (tabcl_context *)p;
  return s;
}
static int check_create_app(void *p) {
  app_world *aw = p;
  return check_create(aw->w) && app_refs_kept(aw);
}
static int create_app_untouched(void *p) {
  app_world *aw = p;
  return aw->w->made_ctx == (tabcl_context *)p && app_refs_kept(aw);
}

/* ---- fit ---------------------------------------------------------------- */

static void poison_made(void *p) { ((world *)p)->made = (tabcl_category_index *)p; }
static tabcl_status call_fit(void *p) {
  world *w = p;
  tabcl_strings_view v[2] = {tt_view(&w->vocab[0]), tt_view(&w->vocab[1])};
  return tabcl_category_index_fit(w->ctx, 2, v, TABCL_CODES_BY_VALUE, &w->made);
}
static int check_made(void *p) {
  world *w = p;
  return w->made && w->made != (tabcl_category_index *)p && index_answers(w, w->made);
}
static int made_untouched(void *p) {
  world *w = p;
  return w->made == (tabcl_category_index *)p || w->made == NULL;
}
static void cleanup_made(void *p) {
  world *w = p;
  tabcl_category_index_destroy(w->made);
  w->made = NULL;
}

/* ---- lookup and align ---------------------------------------------------- */

static tabcl_status call_lookup(void *p) {
  world *w = p;
  tabcl_strings_view q[2] = {tt_view(&w->query[0]), tt_view(&w->query[1])};
  return tabcl_category_index_lookup(w->idx, 2, q, w->codes);
}
static int check_lookup(void *p) { return check_create(p) && index_answers(p, ((world *)p)->idx); }

static void dict(world *w, tabcl_dictionary_view *d) {
  for (int c = 0; c < 2; c++) {
    d[c].categories = tt_view(&w->cats[c]);
    d[c].length = w->align_len[c];
    d[c].codes = w->in_codes[c];
  }
}
static tabcl_status call_align(void *p) {
  world *w = p;
  tabcl_dictionary_view d[2];
  dict(w, d);
  return tabcl_category_index_align(w->idx, 2, d, w->codes);
}
static int check_align(void *p) {
  world *w = p;
  tabcl_dictionary_view d[2];
  dict(w, d);
  for (int c = 0; c < 2; c++) {
    catref_align(&w->ref[c], &d[c], w->want[c]);
    if (!same_codes(w->codes[c], w->want[c], d[c].length)) return 0;
  }
  return index_answers(w, w->idx);
}

/* ---- save and load ------------------------------------------------------- */

/* The file at path before each save: a different, valid index. A failed
   save must leave it exactly so. */
static unsigned char old_file[1 << 16];
static size_t old_size;

static size_t read_all(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return (size_t)-1;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static void poison_save(void *p) {
  world *w = p;
  FILE *f = fopen(w->path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(old_file, 1, old_size, f), old_size);
  fclose(f);
}
static tabcl_status call_save(void *p) {
  world *w = p;
  return tabcl_category_index_save(w->idx, w->path);
}
static int check_save(void *p) {
  world *w = p;
  tabcl_category_index *back = NULL;
  if (tabcl_category_index_load(w->ctx, w->path, &back) != TABCL_OK) return 0;
  int ok = index_answers(w, back);
  tabcl_category_index_destroy(back);
  return ok;
}
static int save_untouched(void *p) {
  world *w = p;
  static unsigned char now[1 << 16];
  size_t n = read_all(w->path, now, sizeof now);
  if (n != old_size || memcmp(now, old_file, n) != 0) return 0;
  /* and no temporary left beside it */
  char prefix[64];
  snprintf(prefix, sizeof prefix, "sweep-%d.", (int)getpid());
  int count = 0;
  DIR *d = opendir(".");
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix))) count++;
  closedir(d);
  return count == 1;
}

static tabcl_status call_load(void *p) {
  world *w = p;
  return tabcl_category_index_load(w->ctx, w->path, &w->made);
}

/* ---- attention ------------------------------------------------------------ */

static void poison_sdpa(void *p) {
  world *w = p;
  memset(w->sc.out, 0xCD, w->sc.nq * 4);
}
static tabcl_status call_sdpa(void *p) {
  world *w = p;
  return tabcl_sdpa_host(w->ctx, &w->sc.d, w->sc.q, w->sc.k, w->sc.v, w->sc.mask, w->sc.out);
}
static int check_sdpa(void *p) {
  world *w = p;
  return rel_sdpa_error(&w->sc, w->sref) <= rel_sdpa_tol(w->sc.d.dtype);
}
static int sdpa_untouched(void *p) {
  world *w = p;
  const unsigned char *o = w->sc.out;
  for (size_t i = 0; i < w->sc.nq * 4; i++)
    if (o[i] != 0xCD) return 0;
  return 1;
}

/* ---- the device-resident calls ------------------------------------------ */

/* Test-owned device copies of the queries and the attention case, made with
   plain OpenCL so the library's buffer count sees only its own. An OpenCL
   failure after the first launch may leave these outputs partly written
   (tabcl_cl.h says so), so a failed call is not held to untouched outputs,
   only to handing out no event. */
typedef struct device_world {
  world *w;
  cl_mem qdata[2], qoff[2], qvalid[2], codes[2];
  tabcl_strings_cl q[2];
  cl_mem sq, sk, sv, smask, sout;
  int event_leaked;
} device_world;

static cl_mem device_copy(tabcl_context *ctx, const void *src, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(tabcl_context_cl_context(ctx),
                            CL_MEM_READ_WRITE | (src ? CL_MEM_COPY_HOST_PTR : 0),
                            bytes ? bytes : 8, (void *)src, &err);
  cr_assert_eq(err, CL_SUCCESS, "clCreateBuffer: %d", err);
  return m;
}

static void device_world_init(device_world *dw, world *w) {
  memset(dw, 0, sizeof *dw);
  dw->w = w;
  for (int c = 0; c < 2; c++) {
    tabcl_strings_view v = tt_view(&w->query[c]);
    int64_t first = v.offsets[0], bytes = v.offsets[v.length] - first;
    int64_t *off = malloc((size_t)(v.length + 1) * 8);
    size_t cap = (size_t)(bytes + 7) / 8 * 8 + 8;   /* read in place: no copy of the call's own */
    uint8_t *data = calloc(cap, 1);
    cr_assert(off && data);
    for (int64_t i = 0; i <= v.length; i++) off[i] = v.offsets[i] - first;
    if (bytes) memcpy(data, v.data + first, (size_t)bytes);
    dw->qdata[c] = device_copy(w->ctx, data, cap);
    dw->qoff[c] = device_copy(w->ctx, off, (size_t)(v.length + 1) * 8);
    dw->codes[c] = device_copy(w->ctx, NULL, (size_t)v.length * 4);
    if (v.validity) dw->qvalid[c] = device_copy(w->ctx, v.validity, (size_t)(v.length + 7) / 8);
    dw->q[c] = (tabcl_strings_cl){v.length, bytes, dw->qdata[c], dw->qoff[c], dw->qvalid[c], 0};
    free(off);
    free(data);
  }
  rel_sdpa_case *sc = &w->sc;
  dw->sq = device_copy(w->ctx, sc->q, sc->nq * 4);
  dw->sk = device_copy(w->ctx, sc->k, sc->nk * 4);
  dw->sv = device_copy(w->ctx, sc->v, sc->nk * 4);
  dw->smask = device_copy(w->ctx, sc->mask, sc->nm);
  dw->sout = device_copy(w->ctx, NULL, sc->nq * 4);
}

static void device_world_fini(device_world *dw) {
  cl_mem all[] = {dw->qdata[0], dw->qdata[1], dw->qoff[0], dw->qoff[1], dw->codes[0],
                  dw->codes[1], dw->sq, dw->sk, dw->sv, dw->smask, dw->sout};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) clReleaseMemObject(all[i]);
  for (int c = 0; c < 2; c++)
    if (dw->qvalid[c]) clReleaseMemObject(dw->qvalid[c]);
}

/* Waits for a successful call's event; a failed call must not hand one out. */
static void settle(device_world *dw, tabcl_status s, cl_event ev) {
  if (s == TABCL_OK && ev) {
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
  } else if (ev) {
    dw->event_leaked = 1;
    clReleaseEvent(ev);
  }
  clFinish(tabcl_context_cl_queue(dw->w->ctx));
}

static void fill_device(tabcl_context *ctx, cl_mem m, size_t bytes, int32_t value) {
  cr_assert_eq(clEnqueueFillBuffer(tabcl_context_cl_queue(ctx), m, &value, sizeof value, 0,
                                   bytes, 0, NULL, NULL), CL_SUCCESS);
  cr_assert_eq(clFinish(tabcl_context_cl_queue(ctx)), CL_SUCCESS);
}

static void poison_lookup_cl(void *p) {
  device_world *dw = p;
  for (int c = 0; c < 2; c++)
    fill_device(dw->w->ctx, dw->codes[c], (size_t)dw->q[c].length * 4, POISON32);
}
static tabcl_status call_lookup_cl(void *p) {
  device_world *dw = p;
  cl_event ev = NULL;
  tabcl_status s = tabcl_category_index_lookup_cl(dw->w->idx, 2, dw->q, dw->codes, 0, NULL, &ev);
  settle(dw, s, ev);
  return s;
}
static int check_lookup_cl(void *p) {
  device_world *dw = p;
  for (int c = 0; c < 2; c++) {
    int32_t got[64];
    tabcl_strings_view q = tt_view(&dw->w->query[c]);
    if (clEnqueueReadBuffer(tabcl_context_cl_queue(dw->w->ctx), dw->codes[c], CL_TRUE, 0,
                            (size_t)q.length * 4, got, 0, NULL, NULL) != CL_SUCCESS)
      return 0;
    catref_lookup(&dw->w->ref[c], &q, dw->w->want[c]);
    if (!same_codes(got, dw->w->want[c], q.length)) return 0;
  }
  return index_answers(dw->w, dw->w->idx);
}
static int no_event_handed_out(void *p) { return !((device_world *)p)->event_leaked; }

static void poison_sdpa_cl(void *p) {
  device_world *dw = p;
  fill_device(dw->w->ctx, dw->sout, dw->w->sc.nq * 4, (int32_t)0xCDCDCDCD);
}
static tabcl_status call_sdpa_cl(void *p) {
  device_world *dw = p;
  cl_event ev = NULL;
  tabcl_status s = tabcl_sdpa_cl(dw->w->ctx, &dw->w->sc.d, dw->sq, dw->sk, dw->sv, dw->smask,
                                 dw->sout, 0, NULL, &ev);
  settle(dw, s, ev);
  return s;
}
static int check_sdpa_cl(void *p) {
  device_world *dw = p;
  rel_sdpa_case *sc = &dw->w->sc;
  if (clEnqueueReadBuffer(tabcl_context_cl_queue(dw->w->ctx), dw->sout, CL_TRUE, 0, sc->nq * 4,
                          sc->out, 0, NULL, NULL) != CL_SUCCESS)
    return 0;
  return rel_sdpa_error(sc, dw->w->sref) <= rel_sdpa_tol(sc->d.dtype);
}

/* ---- program preparation and the self-checks on a fresh context --------- */

/* Each run makes a context of its own (with the suite's disk cache), so it
   builds or loads the program again, and destroys it before returning, so
   the leak check sees the programs a failed run did build as freed. When
   the work fails, the same context does it again right away (the injected
   failure has fired by then): it must succeed, which is what "usable"
   means here; the first failure's status and message are what is returned.
   (Failures inside tabcl_context_create are the create sweep's.) */
typedef struct fresh_world {
  world *w;
  int from_cache;
  int usable, untouched;
} fresh_world;

static tabcl_status on_fresh_context(fresh_world *f,
                                     tabcl_status (*work)(fresh_world *, tabcl_context *)) {
  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create(NULL, &ctx);
  if (s) {
    f->usable = f->untouched = 1;
    return s;
  }
  f->from_cache = 7;
  s = work(f, ctx);
  if (s) {
    static _Thread_local char saved[16384];
    snprintf(saved, sizeof saved, "%s", tabcl_last_error());
    f->untouched = f->from_cache == 7;
    f->usable = work(f, ctx) == TABCL_OK;
    tabcl__fail(s, "%s", saved);
  }
  tabcl_context_destroy(ctx);
  return s;
}

static void poison_fresh(void *p) {
  fresh_world *f = p;
  f->usable = f->untouched = 0;
}
static int fresh_untouched(void *p) {
  fresh_world *f = p;
  return f->usable && f->untouched;
}

/* One program (the probe's, the smallest), built or from the disk cache. */
static tabcl_status prepare_one(fresh_world *f, tabcl_context *ctx) {
  int i = 0;
  while (tabcl_program_name(i) && strcmp(tabcl_program_name(i), "probe") != 0) i++;
  f->from_cache = 7;
  tabcl_status s = tabcl_program_prepare(ctx, i, &f->from_cache);
  if (!s && f->from_cache != 0 && f->from_cache != 1)
    s = tabcl__fail(TABCL_INVALID_ARGUMENT, "tabcl_program_prepare gave from_cache %d",
                    f->from_cache);
  return s;
}
static tabcl_status call_prepare(void *p) { return on_fresh_context(p, prepare_one); }

/* A successful run already compared every result with its reference. */
static int ran_right(void *p) { (void)p; return 1; }

/* Every self-check on the world's context (its programs built by the clean
   call); each compares the device with a host reference, and one that does
   not apply to the device (a vendor path) counts as passed. The OpenCL
   sweep leaves out the hash and catindex checks: they make about 360 OpenCL
   calls, which would make it the longest sweep here, through the hashing,
   fit and lookup code whose OpenCL calls the fit and lookup sweeps above
   fail one by one already. */
static int heavy_check(int i) {
  return !strcmp(tabcl_selfcheck_name(i), "hash") || !strcmp(tabcl_selfcheck_name(i), "catindex");
}
static tabcl_status selfchecks(world *w, int all) {
  tabcl_status s = TABCL_OK;
  for (int i = 0; i < tabcl_selfcheck_count() && !s; i++) {
    if (!all && heavy_check(i)) continue;
    s = tabcl_selfcheck_run(w->ctx, i);
    if (tt_selfcheck_passed(w->ctx, i, s)) s = TABCL_OK;
  }
  return s;
}
static tabcl_status call_selfchecks(void *p) { return selfchecks(p, 1); }
static tabcl_status call_selfchecks_light(void *p) { return selfchecks(p, 0); }

static const sweep_ops ops_create = {"tabcl_context_create + first fit and lookup", poison_ctx,
                                     call_create, check_create, create_untouched, nothing};
static const sweep_ops ops_create_app = {"tabcl_context_create_cl + first fit and lookup",
                                         poison_app_ctx, call_create_app, check_create_app,
                                         create_app_untouched, nothing};
static const sweep_ops ops_fit = {"tabcl_category_index_fit", poison_made, call_fit, check_made,
                                  made_untouched, cleanup_made};
static const sweep_ops ops_lookup = {"tabcl_category_index_lookup", poison_codes, call_lookup,
                                     check_lookup, codes_untouched, nothing};
static const sweep_ops ops_align = {"tabcl_category_index_align", poison_codes, call_align,
                                    check_align, codes_untouched, nothing};
static const sweep_ops ops_save = {"tabcl_category_index_save", poison_save, call_save,
                                   check_save, save_untouched, nothing};
static const sweep_ops ops_load = {"tabcl_category_index_load", poison_made, call_load,
                                   check_made, made_untouched, cleanup_made};
static const sweep_ops ops_sdpa = {"tabcl_sdpa_host", poison_sdpa, call_sdpa, check_sdpa,
                                   sdpa_untouched, nothing};
static const sweep_ops ops_lookup_cl = {"tabcl_category_index_lookup_cl", poison_lookup_cl,
                                        call_lookup_cl, check_lookup_cl, no_event_handed_out,
                                        nothing};
static const sweep_ops ops_sdpa_cl = {"tabcl_sdpa_cl", poison_sdpa_cl, call_sdpa_cl,
                                      check_sdpa_cl, no_event_handed_out, nothing};
static const sweep_ops ops_prepare = {"tabcl_program_prepare (fresh context)",
                                      poison_fresh, call_prepare, ran_right, fresh_untouched,
                                      nothing};
static const sweep_ops ops_selfchecks = {"tabcl_selfcheck_run (every check)", nothing,
                                         call_selfchecks, ran_right, ran_right, nothing};
static const sweep_ops ops_selfchecks_light = {"tabcl_selfcheck_run (probe, sort, attention)",
                                               nothing, call_selfchecks_light, ran_right,
                                               ran_right, nothing};

static void run_device(const sweep_ops *ops, int which) {
  world w;
  world_init(&w, ops->name);
  device_world dw;
  device_world_init(&dw, &w);
  sweep(ops, &dw, which, 0);
  device_world_fini(&dw);
  world_fini(&w);
}

static void run_app(const sweep_ops *ops, int which) {
  world w;
  world_init(&w, ops->name);
  app_world aw = {&w, NULL, tabcl_context_cl_device(w.ctx), NULL, 0, 0};
  cl_platform_id platform = NULL;
  cr_assert_eq(clGetDeviceInfo(aw.device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL),
               CL_SUCCESS);
  cl_context_properties cp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_int err = CL_SUCCESS;
  aw.cl = clCreateContext(cp, 1, &aw.device, NULL, NULL, &err);
  cr_assert_eq(err, CL_SUCCESS);
  aw.q = clCreateCommandQueue(aw.cl, aw.device, 0, &err);
  cr_assert_eq(err, CL_SUCCESS);
  aw.crefs = refs_of(&aw, 0);
  aw.qrefs = refs_of(&aw, 1);
  sweep(ops, &aw, which, 0);
  clReleaseCommandQueue(aw.q);
  clReleaseContext(aw.cl);
  world_fini(&w);
}

static void run_fresh(const sweep_ops *ops, int which) {
  world w;
  world_init(&w, ops->name);
  fresh_world f = {&w, 7, 0, 0};
  sweep(ops, &f, which, 0);
  world_fini(&w);
}

static void run_io(const sweep_ops *ops, int which, int io_err) {
  world w;
  world_init(&w, ops->name);
  if (ops == &ops_save || ops == &ops_load) {
    /* the "old" file: an index of the queries, so it differs from idx */
    tabcl_strings_view q[2] = {tt_view(&w.query[0]), tt_view(&w.query[1])};
    tabcl_category_index *other = NULL;
    tt_assert_ok(tabcl_category_index_fit(w.ctx, 2, q, TABCL_CODES_BY_POSITION, &other));
    tt_assert_ok(tabcl_category_index_save(other, w.path));
    tabcl_category_index_destroy(other);
    old_size = read_all(w.path, old_file, sizeof old_file);
    cr_assert(old_size > 0 && old_size < sizeof old_file);
    if (ops == &ops_load) tt_assert_ok(tabcl_category_index_save(w.idx, w.path));
  }
  if (ops == &ops_create) w.opts.cache_dir = NULL;   /* $TABCL_CACHE_DIR: binaries */
  sweep(ops, &w, which, io_err);
  world_fini(&w);
}

static void run(const sweep_ops *ops, int which) { run_io(ops, which, 0); }

Test(sweep, context_create_alloc) { run(&ops_create, 0); }
Test(sweep, context_create_cl) { run(&ops_create, 1); }
Test(sweep, context_create_app_alloc) { run_app(&ops_create_app, 0); }
Test(sweep, context_create_app_cl) { run_app(&ops_create_app, 1); }
Test(sweep, fit_alloc) { run(&ops_fit, 0); }
Test(sweep, fit_cl) { run(&ops_fit, 1); }
Test(sweep, lookup_alloc) { run(&ops_lookup, 0); }
Test(sweep, lookup_cl) { run(&ops_lookup, 1); }
Test(sweep, align_alloc) { run(&ops_align, 0); }
Test(sweep, align_cl) { run(&ops_align, 1); }
Test(sweep, save_alloc) { run(&ops_save, 0); }
Test(sweep, save_cl) { run(&ops_save, 1); }
/* A full disk, and a full quota, at each write, sync and rename of a save. */
Test(sweep, save_disk_full) { run_io(&ops_save, 2, ENOSPC); }
Test(sweep, save_quota_full) { run_io(&ops_save, 2, EDQUOT); }
/* A read that fails (an I/O error) at each read of a load. */
Test(sweep, load_read_error) { run_io(&ops_load, 2, EIO); }
Test(sweep, load_alloc) { run(&ops_load, 0); }
Test(sweep, load_cl) { run(&ops_load, 1); }
Test(sweep, lookup_device_alloc) { run_device(&ops_lookup_cl, 0); }
Test(sweep, lookup_device_cl) { run_device(&ops_lookup_cl, 1); }
Test(sweep, sdpa_device_alloc) { run_device(&ops_sdpa_cl, 0); }
Test(sweep, sdpa_device_cl) { run_device(&ops_sdpa_cl, 1); }
Test(sweep, program_prepare_alloc) { run_fresh(&ops_prepare, 0); }
Test(sweep, program_prepare_cl) { run_fresh(&ops_prepare, 1); }
Test(sweep, selfchecks_alloc) { run(&ops_selfchecks, 0); }
Test(sweep, selfchecks_cl) { run(&ops_selfchecks_light, 1); }
Test(sweep, sdpa_alloc) { run(&ops_sdpa, 0); }
Test(sweep, sdpa_cl) { run(&ops_sdpa, 1); }

#else
Test(sweep, needs_fault_injection) {
  cr_log_warn("built without TABCL_FAULT_INJECTION: no failure sweeps");
}
#endif
