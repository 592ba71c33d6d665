/* The disk cache trusts only what this user wrote, and survives what others
 * (or a full disk) do to its folder.
 *
 * Each attack is made on a folder whose entries would otherwise be loaded
 * (checked first), or with a planted name pointing at a valid entry or a
 * file elsewhere: an entry owned by another user, an entry or a folder
 * others may write, a folder owned by another user, a symbolic link at an
 * entry's final name and at its temporary name, a FIFO or a directory at
 * an entry's name. Each time the call still succeeds with answers checked
 * against host references, nothing planted is loaded or followed, nothing
 * outside the cache folder changes, a refused folder is not written into,
 * and the context names what it refused. Then: new folders and entries
 * are private whatever the umask; a store failing at any write, fsync or
 * rename (a full disk) costs only the rebuild and leaves no temporary or
 * short entry; eight processes started together on one empty folder all
 * succeed and leave only whole entries.
 *
 * Changing another user's ownership needs root (CI runs as root); without
 * it those tests say they could not check, and pass. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache_trust_work.h"

#define OTHER_UID 65534   /* "nobody": exists without useradd */
#define MAX_FILES 2048

/* ---- folders ------------------------------------------------------------ */

typedef struct file_state {
  char name[256];
  mode_t mode;
  uid_t uid;
  long long size;
  uint64_t sum;        /* content of a regular file; names and contents inside a directory */
  char link[256];      /* a symbolic link's target */
} file_state;

typedef struct folder_state {
  int n;
  mode_t mode;
  uid_t uid;
  file_state *f;       /* MAX_FILES of them; folder_free */
} folder_state;

static void folder_free(folder_state *s) {
  free(s->f);
  s->f = NULL;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

static uint64_t file_sum(const char *path) {
  uint64_t h = 0xcbf29ce484222325ULL;
  int fd = open(path, O_RDONLY | O_NOFOLLOW);
  cr_assert(fd >= 0, "cannot open %s: %s", path, strerror(errno));
  unsigned char buf[8192];
  ssize_t k;
  while ((k = read(fd, buf, sizeof buf)) > 0) h = fnv(h, buf, (size_t)k);
  close(fd);
  return h;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const file_state *)a)->name, ((const file_state *)b)->name);
}

/* Everything observable about dir and what it holds (one level into a
   directory it holds), without following links or opening FIFOs. */
static void folder_read(const char *dir, folder_state *s) {
  memset(s, 0, sizeof *s);
  s->f = calloc(MAX_FILES, sizeof *s->f);
  cr_assert(s->f);
  struct stat sb;
  cr_assert(stat(dir, &sb) == 0, "cannot stat %s", dir);
  s->mode = sb.st_mode;
  s->uid = sb.st_uid;
  DIR *d = opendir(dir);
  cr_assert(d, "cannot open %s", dir);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    cr_assert_lt(s->n, MAX_FILES);
    file_state *f = &s->f[s->n++];
    snprintf(f->name, sizeof f->name, "%s", e->d_name);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    cr_assert(lstat(path, &sb) == 0);
    f->mode = sb.st_mode;
    f->uid = sb.st_uid;
    f->size = (long long)sb.st_size;
    if (S_ISREG(sb.st_mode)) {
      f->sum = file_sum(path);
    } else if (S_ISLNK(sb.st_mode)) {
      ssize_t n = readlink(path, f->link, sizeof f->link - 1);
      cr_assert(n > 0);
      f->link[n] = '\0';
    } else if (S_ISDIR(sb.st_mode)) {
      folder_state inner;
      folder_read(path, &inner);
      f->sum = 0xcbf29ce484222325ULL;
      for (int i = 0; i < inner.n; i++) {
        f->sum = fnv(f->sum, inner.f[i].name, strlen(inner.f[i].name));
        f->sum = fnv(f->sum, &inner.f[i].sum, sizeof inner.f[i].sum);
      }
      folder_free(&inner);
    }
  }
  closedir(d);
  qsort(s->f, (size_t)s->n, sizeof s->f[0], by_name);
}

static void expect_folder_unchanged(const char *dir, const folder_state *before, const char *why) {
  folder_state now;
  folder_read(dir, &now);
  cr_expect_eq(now.mode, before->mode, "%s: %s's mode changed", why, dir);
  cr_expect_eq(now.uid, before->uid, "%s: %s's owner changed", why, dir);
  cr_expect_eq(now.n, before->n, "%s: %s held %d files, now %d", why, dir, before->n, now.n);
  for (int i = 0; i < now.n && i < before->n; i++) {
    const file_state *a = &before->f[i], *b = &now.f[i];
    cr_expect(!strcmp(a->name, b->name) && a->mode == b->mode && a->uid == b->uid &&
                  a->size == b->size && a->sum == b->sum && !strcmp(a->link, b->link),
              "%s: %s/%s changed (or %s appeared)", why, dir, a->name, b->name);
  }
  folder_free(&now);
}

/* Whether name is an entry's name: 16 hex digits and ".clbin". */
static int entry_like(const char *name) {
  if (strlen(name) != 22 || strcmp(name + 16, ".clbin") != 0) return 0;
  for (int i = 0; i < 16; i++)
    if (!strchr("0123456789abcdef", name[i])) return 0;
  return 1;
}

/* The folder holds only entries, each a private regular file of this user:
   no temporary file and nothing else. Returns their number. */
static int expect_only_entries(const char *dir, const char *why) {
  folder_state s;
  folder_read(dir, &s);
  for (int i = 0; i < s.n; i++) {
    const file_state *f = &s.f[i];
    cr_expect(entry_like(f->name), "%s: %s holds %s, which is not an entry", why, dir, f->name);
    cr_expect(S_ISREG(f->mode) && f->uid == geteuid() && (f->mode & 07777) == 0600,
              "%s: %s/%s is not a private regular file of this user (mode %o, uid %u)", why, dir,
              f->name, (unsigned)f->mode, (unsigned)f->uid);
  }
  folder_free(&s);
  return s.n;
}

/* The entry names in a primed folder. */
static int entry_names(const char *dir, char names[][32], int cap) {
  folder_state s;
  folder_read(dir, &s);
  int n = 0;
  for (int i = 0; i < s.n && n < cap; i++)
    if (entry_like(s.f[i].name)) memcpy(names[n++], s.f[i].name, 23);   /* 22 and the NUL */
  folder_free(&s);
  return n;
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  cr_assert(p);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* ---- the workload ------------------------------------------------------- */

static uint64_t seed;

/* One fresh context on dir: every call succeeds with the right answers. */
static ctw_result use(const char *dir) {
  ctw_result r;
  ctw_run(dir, seed, &r);
  cr_assert_eq(r.error[0], '\0', "with cache folder %s: %s", dir, r.error);
  return r;
}

static unsigned long long programs(const ctw_result *r) {
  return (unsigned long long)(r->stats.programs_built + r->stats.programs_from_cache);
}

/* A cache folder dir/cache filled by one run, then loaded whole by a second
   (so the attacks below are made on entries that would be loaded). Returns
   the number of programs the workload uses. */
static unsigned long long prime(const char *cache) {
  ctw_result a = use(cache);
  cr_assert_eq(a.stats.programs_from_cache, 0);
  cr_assert_gt(a.stats.programs_built, 0);
  cr_assert_eq(a.refusal[0], '\0', "a fresh private folder was refused: %s", a.refusal);
  ctw_result b = use(cache);
  cr_assert_eq(b.stats.programs_built, 0, "the primed folder %s does not load", cache);
  cr_assert_eq(b.stats.programs_from_cache, a.stats.programs_built);
  cr_assert_eq(expect_only_entries(cache, "primed"), (int)a.stats.programs_built);
  return programs(&a);
}

/* The run on an attacked folder: everything rebuilt, nothing loaded, and
   the refusal names the place and the reason. */
static void expect_refused(const ctw_result *r, unsigned long long n, const char *place,
                           const char *reason) {
  cr_expect_eq(r->stats.programs_from_cache, 0, "%s: %llu programs were loaded", reason,
               (unsigned long long)r->stats.programs_from_cache);
  cr_expect_eq((unsigned long long)r->stats.programs_built, n, "%s: built %llu of %llu programs",
               reason, (unsigned long long)r->stats.programs_built, n);
  cr_expect(strstr(r->refusal, place) != NULL, "the refusal does not name %s: \"%s\"", place,
            r->refusal);
  cr_expect(strstr(r->refusal, reason) != NULL, "the refusal does not say \"%s\": \"%s\"", reason,
            r->refusal);
}

typedef struct place {
  char *root;    /* a private temporary folder */
  char *cache;   /* root/cache */
} place;

static place place_make(const char *tag) {
  place p;
  p.root = tt_temp_dir(tag);
  p.cache = join(p.root, "cache");
  return p;
}

static void place_free(place *p) {
  chmod(p->cache, 0700);
  tt_remove_tree(p->root);
  free(p->root);
  free(p->cache);
}

static int as_root(const char *what) {
  if (geteuid() == 0) return 1;
  cr_log_warn("not root: could not check %s (needs chown to uid %d)", what, OTHER_UID);
  return 0;
}

static void init(void) { seed = tt_seed("cache_trust"); }

/* ---- attacks -------------------------------------------------------------- */

Test(cache_trust, entry_owned_by_another_user, .init = init) {
  if (!as_root("an entry owned by another user")) return;
  place p = place_make("trust-owner");
  unsigned long long n = prime(p.cache);
  char names[16][32];
  int k = entry_names(p.cache, names, 16);
  for (int i = 0; i < k; i++) {
    char *e = join(p.cache, names[i]);
    cr_assert(chown(e, OTHER_UID, OTHER_UID) == 0, "chown %s: %s", e, strerror(errno));
    free(e);
  }
  ctw_result r = use(p.cache);
  expect_refused(&r, n, p.cache, "is owned by uid 65534");
  /* the rebuilt programs replaced the foreign entries with this user's own */
  cr_expect_eq(expect_only_entries(p.cache, "after the rebuild"), (int)n);
  ctw_result again = use(p.cache);
  cr_expect_eq((unsigned long long)again.stats.programs_from_cache, n);
  place_free(&p);
}

Test(cache_trust, entry_writable_by_group_or_others, .init = init) {
  static const mode_t modes[] = {0620, 0602, 0666};
  static const char *const says[] = {"writable by its group", "writable by others",
                                     "writable by its group and others"};
  place p = place_make("trust-entry-mode");
  unsigned long long n = prime(p.cache);
  for (int m = 0; m < 3; m++) {
    char names[16][32];
    int k = entry_names(p.cache, names, 16);
    cr_assert_eq((unsigned long long)k, n);
    for (int i = 0; i < k; i++) {
      char *e = join(p.cache, names[i]);
      cr_assert(chmod(e, modes[m]) == 0);
      free(e);
    }
    ctw_result r = use(p.cache);
    expect_refused(&r, n, p.cache, says[m]);
    cr_expect_eq(expect_only_entries(p.cache, says[m]), (int)n);
  }
  place_free(&p);
}

/* A folder the cache must neither read nor write: after the call it holds
   exactly what it held, and once put right its entries load again. */
static void refused_folder(const char *tag, mode_t mode, int other_owner, const char *reason) {
  place p = place_make(tag);
  unsigned long long n = prime(p.cache);
  if (other_owner) cr_assert(chown(p.cache, OTHER_UID, OTHER_UID) == 0, "chown: %s", strerror(errno));
  cr_assert(chmod(p.cache, mode) == 0);
  folder_state before;
  folder_read(p.cache, &before);
  ctw_result r = use(p.cache);
  expect_refused(&r, n, p.cache, reason);
  cr_expect(strstr(r.refusal, "cache folder") != NULL, "not named a folder: %s", r.refusal);
  expect_folder_unchanged(p.cache, &before, reason);
  folder_free(&before);
  if (other_owner) cr_assert(chown(p.cache, geteuid(), getegid()) == 0);
  cr_assert(chmod(p.cache, 0700) == 0);
  ctw_result fixed = use(p.cache);
  cr_expect_eq((unsigned long long)fixed.stats.programs_from_cache, n,
               "the untouched entries load once the folder is private again");
  place_free(&p);
}

Test(cache_trust, group_writable_folder, .init = init) {
  refused_folder("trust-group", 0770, 0, "writable by its group (mode 0770)");
}

Test(cache_trust, world_writable_folder, .init = init) {
  /* as /tmp is: writable by everyone, sticky */
  refused_folder("trust-world", 01777, 0, "writable by its group and others (mode 1777)");
  refused_folder("trust-others", 0703, 0, "writable by others (mode 0703)");
}

Test(cache_trust, folder_owned_by_another_user, .init = init) {
  if (!as_root("a folder owned by another user")) return;
  /* root may write anywhere: only the check keeps the cache out of it */
  refused_folder("trust-folder-owner", 0700, 1, "is owned by uid 65534");
}

/* Symbolic links at the entries' names, to valid entries of another cache
   folder: loading through them would count as a load from the cache. */
Test(cache_trust, symlink_at_entry_name, .init = init) {
  place other = place_make("trust-link-target");
  unsigned long long n = prime(other.cache);
  folder_state target_before;
  folder_read(other.cache, &target_before);
  place p = place_make("trust-link");
  cr_assert(mkdir(p.cache, 0700) == 0);
  char names[16][32];
  int k = entry_names(other.cache, names, 16);
  for (int i = 0; i < k; i++) {
    char *from = join(p.cache, names[i]), *to = join(other.cache, names[i]);
    cr_assert(symlink(to, from) == 0);
    free(from);
    free(to);
  }
  ctw_result r = use(p.cache);
  expect_refused(&r, n, p.cache, "is a symbolic link");
  expect_folder_unchanged(other.cache, &target_before, "the links' targets");
  folder_free(&target_before);
  /* the store replaced each link (not its target) with an entry of its own */
  cr_expect_eq(expect_only_entries(p.cache, "after the rebuild"), (int)n);
  ctw_result again = use(p.cache);
  cr_expect_eq((unsigned long long)again.stats.programs_from_cache, n);
  place_free(&p);
  place_free(&other);
}

/* Symbolic links at the temporary names the stores will try, to a file
   outside the folder: first at every name they may try (nothing can be
   stored), then at each entry's first try only (they go on to the next). */
Test(cache_trust, symlink_at_temporary_name, .init = init) {
  place other = place_make("trust-tmp-target");
  unsigned long long n = prime(other.cache);
  char names[16][32];
  int k = entry_names(other.cache, names, 16);
  char *target = join(other.root, "precious");
  FILE *f = fopen(target, "w");
  cr_assert(f);
  fputs("a file the cache must never write\n", f);
  fclose(f);
  const uint64_t target_sum = file_sum(target);
  place p = place_make("trust-tmp");
  cr_assert(mkdir(p.cache, 0700) == 0);

  /* each store tries at most 16 names, and the stores of this run take
     their names from one counter: this covers every name any may try */
  const unsigned ahead = 16 * ((unsigned)n + 1);
  for (int i = 0; i < k; i++)
    for (unsigned a = 0; a < ahead; a++) {
      char tmp[128];
      tabcl__disk_cache_temp_name(names[i], a, tmp, sizeof tmp);
      char *at = join(p.cache, tmp);
      cr_assert(symlink(target, at) == 0, "symlink %s: %s", at, strerror(errno));
      free(at);
    }
  folder_state before;
  folder_read(p.cache, &before);
  ctw_result r = use(p.cache);
  cr_expect_eq(r.stats.programs_from_cache, 0);
  cr_expect(strstr(r.refusal, "already taken") != NULL, "refusal: \"%s\"", r.refusal);
  cr_expect_eq(file_sum(target), target_sum, "the links' target was written");
  expect_folder_unchanged(p.cache, &before, "every temporary name taken");
  folder_free(&before);

  tt_remove_tree(p.cache);
  cr_assert(mkdir(p.cache, 0700) == 0);
  for (int i = 0; i < k; i++) {
    char tmp[128];
    tabcl__disk_cache_temp_name(names[i], 0, tmp, sizeof tmp);
    char *at = join(p.cache, tmp);
    cr_assert(symlink(target, at) == 0);
    free(at);
  }
  r = use(p.cache);
  cr_expect_eq(file_sum(target), target_sum, "the links' target was written");
  folder_state after;
  folder_read(p.cache, &after);
  int links = 0, entries = 0;
  for (int i = 0; i < after.n; i++) {
    if (S_ISLNK(after.f[i].mode) && !strcmp(after.f[i].link, target)) links++;
    else if (entry_like(after.f[i].name) && S_ISREG(after.f[i].mode)) entries++;
    else cr_expect_fail("unexpected %s in the cache folder", after.f[i].name);
  }
  folder_free(&after);
  cr_expect_eq(links, k, "the planted links stay links to the same file");
  cr_expect_eq((unsigned long long)entries, n, "each store went on to a free temporary name");
  ctw_result again = use(p.cache);
  cr_expect_eq((unsigned long long)again.stats.programs_from_cache, n);
  free(target);
  place_free(&p);
  place_free(&other);
}

/* FIFOs and directories where entries should be: neither is opened for its
   content (a FIFO would block a plain open) nor changed. */
static void not_a_file_at_entry_name(int fifo) {
  place other = place_make("trust-names");
  unsigned long long n = prime(other.cache);
  char names[16][32];
  int k = entry_names(other.cache, names, 16);
  place p = place_make(fifo ? "trust-fifo" : "trust-dir");
  cr_assert(mkdir(p.cache, 0700) == 0);
  for (int i = 0; i < k; i++) {
    char *at = join(p.cache, names[i]);
    if (fifo) {
      cr_assert(mkfifo(at, 0600) == 0);
    } else {
      cr_assert(mkdir(at, 0700) == 0);
      char *inner = join(at, "kept");
      FILE *f = fopen(inner, "w");
      cr_assert(f);
      fputs("left alone\n", f);
      fclose(f);
      free(inner);
    }
    free(at);
  }
  folder_state before;
  folder_read(p.cache, &before);
  ctw_result r = use(p.cache);
  expect_refused(&r, n, p.cache, fifo ? "is a FIFO" : "is a directory");
  if (fifo) {
    /* renamed over: the FIFOs gave way to whole entries */
    cr_expect_eq(expect_only_entries(p.cache, "after the rebuild"), (int)n);
    ctw_result again = use(p.cache);
    cr_expect_eq((unsigned long long)again.stats.programs_from_cache, n);
  } else {
    /* a directory cannot be renamed over: it stays, with its content, and
       no temporary file is left beside it */
    expect_folder_unchanged(p.cache, &before, "directories at the entry names");
  }
  folder_free(&before);
  place_free(&p);
  place_free(&other);
}

Test(cache_trust, fifo_at_entry_name, .init = init, .timeout = 120) {
  not_a_file_at_entry_name(1);
}

Test(cache_trust, directory_at_entry_name, .init = init) { not_a_file_at_entry_name(0); }

/* ---- modes, a full disk, many processes ---------------------------------- */

Test(cache_trust, new_folders_and_entries_are_private, .init = init) {
  place p = place_make("trust-modes");
  char *deep = join(p.root, "a/b/cache");
  mode_t old = umask(0);   /* the modes must not rely on the caller's umask */
  ctw_result r = use(deep);
  umask(old);
  cr_expect_gt(r.stats.programs_built, 0);
  const char *levels[] = {"a", "a/b", "a/b/cache"};
  for (int i = 0; i < 3; i++) {
    char *d = join(p.root, levels[i]);
    struct stat sb;
    cr_assert(stat(d, &sb) == 0);
    cr_expect_eq(sb.st_mode & 07777, 0700, "%s was made with mode %04o", d,
                 (unsigned)(sb.st_mode & 07777));
    free(d);
  }
  cr_expect_eq((unsigned long long)expect_only_entries(deep, "new entries"), programs(&r));
  free(deep);
  place_free(&p);
}

/* Each write, fsync and rename of a store failing in turn with ENOSPC: the
   entry of one program is removed before each run (the others load), so
   every run stores once. The call succeeds with the right answers, the
   failed store leaves nothing behind (no temporary, no short entry), and
   the first run without a failure stores it whole. */
Test(cache_trust, full_disk_costs_only_the_rebuild, .init = init) {
  if (!tabcl__fault_enabled()) {
    cr_log_warn("built without TABCL_FAULT_INJECTION: could not check a full disk");
    return;
  }
  place p = place_make("trust-full");
  unsigned long long n = prime(p.cache);
  char names[16][32];
  cr_assert_gt(entry_names(p.cache, names, 16), 0);
  char *victim = join(p.cache, names[0]);
  long points = 0;
  for (long at = 1; at <= 100; at++) {
    /* there after a run that stored it, gone after one whose store failed */
    cr_assert(unlink(victim) == 0 || errno == ENOENT, "unlink %s: %s", victim, strerror(errno));
    tabcl__fault_set_io(at, ENOSPC);
    ctw_result r;
    ctw_run(p.cache, seed, &r);
    int fired = tabcl__fault_fired();
    tabcl__fault_reset();
    cr_assert_eq(r.error[0], '\0', "disk full at file operation %ld: %s", at, r.error);
    cr_expect_eq(r.stats.programs_built, 1, "disk full at file operation %ld: built %llu", at,
                 (unsigned long long)r.stats.programs_built);
    cr_expect_eq((unsigned long long)r.stats.programs_from_cache, n - 1);
    int stored = expect_only_entries(p.cache, "disk full");
    if (!fired) {
      cr_expect_eq((unsigned long long)stored, n, "a store without a failure stores");
      break;
    }
    points++;
    cr_expect_eq((unsigned long long)stored, n - 1,
                 "disk full at file operation %ld: the failed store left %s", at, victim);
  }
  cr_log_info("%ld file operations failed in turn", points);
  /* a header, key and binary write, an fsync and a rename */
  cr_expect_geq(points, 5L);
  free(victim);
  place_free(&p);
}

#ifndef TABCL_CACHE_WORKER
#error "tests/CMakeLists.txt passes the helper's path as TABCL_CACHE_WORKER"
#endif

Test(cache_trust, eight_processes_one_empty_folder, .init = init, .timeout = 600) {
  enum { PROCS = 8 };
  place p = place_make("trust-procs");
  int start[2];
  cr_assert(pipe(start) == 0);
  /* everything exec needs is made before fork: the child only execs */
  char fd_arg[16], seed_arg[32];
  snprintf(fd_arg, sizeof fd_arg, "%d", start[0]);
  snprintf(seed_arg, sizeof seed_arg, "%llu", (unsigned long long)seed);
  char *const argv[] = {(char *)TABCL_CACHE_WORKER, p.cache, fd_arg, seed_arg, NULL};
  /* The helper links Criterion for the test-support library; without
     boxfort's variables it does not take itself for a sandboxed test. */
  extern char **environ;
  size_t nenv = 0;
  while (environ[nenv]) nenv++;
  char **envp = calloc(nenv + 1, sizeof *envp);
  cr_assert(envp);
  for (size_t i = 0, j = 0; i < nenv; i++)
    if (strncmp(environ[i], "BXFI_", 5) != 0) envp[j++] = environ[i];
  cr_assert(fcntl(start[1], F_SETFD, FD_CLOEXEC) == 0);
  pid_t pids[PROCS];
  for (int i = 0; i < PROCS; i++) {
    fflush(NULL);
    pids[i] = fork();
    cr_assert(pids[i] >= 0, "fork: %s", strerror(errno));
    if (pids[i] == 0) {
      execve(argv[0], argv, envp);
      _exit(127);
    }
  }
  /* all of them are waiting on the pipe: closing it starts them together */
  close(start[0]);
  close(start[1]);
  for (int i = 0; i < PROCS; i++) {
    int status = 0;
    cr_assert(waitpid(pids[i], &status, 0) == pids[i]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "process %d (%s) failed: status %#x (its line above says why)", i, argv[0], status);
  }
  free(envp);
  int entries = expect_only_entries(p.cache, "after 8 processes");
  ctw_result ninth = use(p.cache);
  cr_expect_eq(ninth.stats.programs_built, 0, "a ninth context built %llu programs",
               (unsigned long long)ninth.stats.programs_built);
  cr_expect_eq((unsigned long long)ninth.stats.programs_from_cache, (unsigned long long)entries,
               "%d entries, %llu loaded", entries,
               (unsigned long long)ninth.stats.programs_from_cache);
  place_free(&p);
}
