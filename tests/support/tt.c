#include "tt.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

tabcl_context *tt_context_with(const tabcl_options *o) {
  tabcl_context *ctx = NULL;
  tabcl_status s = tabcl_context_create(o, &ctx);
  cr_assert_eq(s, TABCL_OK, "tabcl_context_create: %s: %s", tabcl_status_name(s),
               tabcl_last_error());
  return ctx;
}

tabcl_context *tt_context(void) { return tt_context_with(NULL); }

uint64_t tt_seed(const char *test_name) {
  const char *env = getenv("TABCL_TEST_SEED");
  uint64_t seed;
  if (env && *env) {
    seed = strtoull(env, NULL, 0);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
  }
  fprintf(stderr, "[seed] %s: TABCL_TEST_SEED=%llu\n", test_name, (unsigned long long)seed);
  return seed;
}

uint64_t tt_next(tt_rng *r) {
  /* splitmix64: small, fast, and good enough for test data */
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t tt_below(tt_rng *r, uint64_t n) { return tt_next(r) % n; }
double tt_uniform(tt_rng *r) { return (double)(tt_next(r) >> 11) * 0x1.0p-53; }
double tt_normal(tt_rng *r) {
  double u = tt_uniform(r), v = tt_uniform(r);
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void tt_strings_init(tt_strings *s, int64_t first_offset) {
  memset(s, 0, sizeof *s);
  s->len_cap = 16;
  s->offsets = malloc(s->len_cap * sizeof *s->offsets);
  cr_assert(s->offsets);
  s->offsets[0] = first_offset;
  s->data_cap = (size_t)first_offset + 64;
  s->data = malloc(s->data_cap);
  cr_assert(s->data);
  memset(s->data, 0xEE, (size_t)first_offset); /* bytes before the slice start */
}

static void grow(tt_strings *s, size_t extra) {
  if (s->length + 2 > (int64_t)s->len_cap) {
    s->len_cap *= 2;
    s->offsets = realloc(s->offsets, s->len_cap * sizeof *s->offsets);
    cr_assert(s->offsets);
    if (s->validity) {
      s->validity = realloc(s->validity, s->len_cap / 8 + 1);
      cr_assert(s->validity);
    }
  }
  size_t need = (size_t)s->offsets[s->length] + extra;
  if (need > s->data_cap) {
    while (s->data_cap < need) s->data_cap *= 2;
    s->data = realloc(s->data, s->data_cap);
    cr_assert(s->data);
  }
}

static void set_valid(tt_strings *s, int64_t i, int valid) {
  if (!s->validity) {
    if (valid) return;
    s->validity = malloc(s->len_cap / 8 + 1);
    cr_assert(s->validity);
    memset(s->validity, 0xFF, s->len_cap / 8 + 1);
  }
  if (valid) s->validity[i / 8] |= (uint8_t)(1u << (i % 8));
  else s->validity[i / 8] &= (uint8_t)~(1u << (i % 8));
}

void tt_strings_push(tt_strings *s, const void *bytes, size_t n) {
  grow(s, n);
  if (n) memcpy(s->data + s->offsets[s->length], bytes, n);
  s->offsets[s->length + 1] = s->offsets[s->length] + (int64_t)n;
  set_valid(s, s->length, 1);
  s->length++;
}

void tt_strings_push_null(tt_strings *s) {
  grow(s, 0);
  s->offsets[s->length + 1] = s->offsets[s->length];
  set_valid(s, s->length, 0);
  s->length++;
}

void tt_strings_free(tt_strings *s) {
  free(s->offsets);
  free(s->data);
  free(s->validity);
  memset(s, 0, sizeof *s);
}

tabcl_strings_view tt_view(const tt_strings *s) {
  tabcl_strings_view v = {s->length, s->offsets, s->data, s->validity};
  return v;
}

const uint8_t *tt_label(const tabcl_strings_view *v, int64_t i, size_t *n) {
  if (v->validity && !(v->validity[i / 8] >> (i % 8) & 1)) {
    *n = 0;
    return NULL;
  }
  *n = (size_t)(v->offsets[i + 1] - v->offsets[i]);
  static const uint8_t empty[1] = {0};
  return v->data ? v->data + v->offsets[i] : empty;
}

tt_live tt_live_now(void) {
  tt_live l = {tabcl__alloc_live(), tabcl__mem_live()};
  return l;
}

char *tt_temp_dir(const char *tag) {
  char tmpl[512];
  const char *base = getenv("TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/tabcl-%s-XXXXXX", base && *base ? base : "/tmp", tag);
  char *dir = mkdtemp(tmpl);
  cr_assert(dir, "mkdtemp failed");
  return strdup(dir);
}

void tt_remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char sub[4096];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      struct stat st;
      if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) tt_remove_tree(sub);
      else unlink(sub);
    }
    closedir(d);
  }
  rmdir(path);
}

int tt_selfcheck_passed(tabcl_context *ctx, int i, tabcl_status s) {
  if (s == TABCL_OK) return 1;
  const char *name = tabcl_selfcheck_name(i);
  return s == TABCL_UNSUPPORTED && name && strcmp(name, "sdpa_mma") == 0 && !ctx->info.is_nvidia;
}

void tt_staging(tabcl_context *ctx, int on, size_t cap) {
  if (on < 0) tt_tune(ctx, "upload.staging=0");
  else if (on > 0) tt_tune(ctx, "upload.staging=%zu", cap ? cap : (size_t)1);
}

void tt_tune(tabcl_context *ctx, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  tabcl_status s = tabcl__context_tune(ctx, buf);
  cr_assert_eq(s, TABCL_OK, "tuning \"%s\": %s", buf, tabcl_last_error());
}

uint8_t *tt_slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len + 1);
  cr_assert(b);
  cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len, "short read of %s", path);
  fclose(f);
  b[len] = 0;
  *n = (size_t)len;
  return b;
}
