/* cl-probe's cold-start figures: how long a fresh process takes from its
 * start to its first lookup result, once with empty caches and once with
 * the cache the first run filled. The process is cl-probe itself, started
 * again with --first-lookup (not listed in the usage: it is this file's
 * helper), so the figure includes loading the OpenCL platforms, creating
 * the context and building (or loading) what a fit and a lookup need. The
 * helper writes the moment its codes are checked to its standard output
 * (CLOCK_MONOTONIC, which parent and child share); the time to its exit is
 * shown too, since the context's destroy may still store program binaries
 * in the disk cache (build.store=2). On a CPU device a fit and lookup this
 * small run on the calling thread (fit.host_labels, lookup.host_rows) and
 * build nothing, so the figures are given again for the device's plans
 * (both keys 0, --first-lookup-device-plans): what a first call too large
 * for the calling thread waits for. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cl-probe.h"

extern char **environ;

enum { LABELS = 1000, LABEL_BYTES = 16 };

/* The helper: fit LABELS distinct labels, look them up, check every code.
   0 on success; the error on stderr otherwise. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int first_lookup_main(const char *device, const char *profile, int device_plans) {
  static int64_t off[LABELS + 1];
  static uint8_t data[LABELS * LABEL_BYTES];
  for (int i = 0; i <= LABELS; i++) off[i] = (int64_t)i * LABEL_BYTES;
  for (int i = 0; i < LABELS; i++)
    snprintf((char *)data + i * LABEL_BYTES, LABEL_BYTES, "label-%09d", i);
  tabcl_options o = {0};
  o.device = device;
  o.device_profile = profile;
  if (device_plans) o.tune = "fit.host_labels=0;lookup.host_rows=0;lookup.host_threads=0";
  tabcl_context *ctx = NULL;
  tabcl_category_index *idx = NULL;
  static int32_t codes[LABELS];
  int32_t *out = codes;
  const tabcl_strings_view v = {LABELS, off, data, NULL};
  tabcl_status s = tabcl_context_create(&o, &ctx);
  if (!s) s = tabcl_category_index_fit(ctx, 1, &v, TABCL_CODES_BY_POSITION, &idx);
  if (!s) s = tabcl_category_index_lookup(idx, 1, &v, &out);
  int wrong = 0;
  for (int i = 0; !s && i < LABELS; i++) wrong += codes[i] != i;
  if (s) fprintf(stderr, "cl-probe --first-lookup: %s: %s\n", tabcl_status_name(s), tabcl_last_error());
  else if (wrong) fprintf(stderr, "cl-probe --first-lookup: %d of %d codes wrong\n", wrong, LABELS);
  else printf("%.9f\n", now()), fflush(stdout);
  tabcl_category_index_destroy(idx);
  tabcl_context_destroy(ctx);
  return s || wrong ? 1 : 0;
}

/* The cache variables the helper gets pointed at an empty folder: tabcl's
   own, and the drivers' that a variable can move (PoCL's, NVIDIA's), so
   that "empty" means what a fresh machine has. */
static const char *const cache_vars[] = {"TABCL_CACHE_DIR", "POCL_CACHE_DIR", "CUDA_CACHE_PATH"};
enum { NAMES = sizeof cache_vars / sizeof cache_vars[0] };

/* environ with the cache variables set to dir, appended last. NULL when
   out of memory. */
static char **child_env(const char *dir) {
  const char *const *names = cache_vars;
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + NAMES + 1, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int ours = 0;
    for (int j = 0; j < NAMES; j++) {
      const size_t len = strlen(names[j]);
      ours |= strncmp(environ[i], names[j], len) == 0 && environ[i][len] == '=';
    }
    if (!ours) env[k++] = environ[i];
  }
  for (int j = 0; j < NAMES; j++) {
    const size_t len = strlen(names[j]) + strlen(dir) + 2;
    env[k] = malloc(len);
    if (!env[k]) {
      for (size_t u = k - j; u < k; u++) free(env[u]);
      free(env);
      return NULL;
    }
    snprintf(env[k++], len, "%s=%s", names[j], dir);
  }
  return env;
}

static void free_env(char **env) {
  if (!env) return;
  size_t n = 0;
  while (env[n]) n++;
  for (size_t i = n - NAMES; i < n; i++) free(env[i]);   /* those child_env appended */
  free(env);
}

/* Seconds from starting the helper to its first result (*result) and to
   its exit (the return value), or -1 and an error in err. */
static double run_helper(const char *sel, const char *profile, int device_plans, char **env,
                         double *result, char *err, size_t cap) {
  char *argv[6];
  int argc = 0;
  argv[argc++] = "cl-probe";
  argv[argc++] = device_plans ? "--first-lookup-device-plans" : "--first-lookup";
  argv[argc++] = (char *)sel;
  if (profile && *profile) {
    argv[argc++] = "--device-profile";
    argv[argc++] = (char *)profile;
  }
  argv[argc] = NULL;
  int fd[2];
  if (pipe(fd) != 0) {
    snprintf(err, cap, "pipe: %s", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t fa;
  int rc = posix_spawn_file_actions_init(&fa);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_addclose(&fa, fd[0]);
  pid_t pid;
  const double t0 = now();
  if (rc == 0) rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  if (rc != 0) {
    close(fd[0]);
    snprintf(err, cap, "cannot start cl-probe again: %s", strerror(rc));
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      close(fd[0]);
      snprintf(err, cap, "waitpid: %s", strerror(errno));
      return -1;
    }
  const double t = now() - t0;
  char line[64] = "";
  ssize_t got = read(fd[0], line, sizeof line - 1);
  close(fd[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(err, cap, "the first lookup failed (its message is above)");
    return -1;
  }
  char *end = NULL;
  line[got > 0 ? got : 0] = '\0';
  const double at = strtod(line, &end);
  if (end == line || at < t0 || at - t0 > t) {
    snprintf(err, cap, "the helper gave no time of its result (it wrote \"%.40s\")", line);
    return -1;
  }
  *result = at - t0;
  return t;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(path) != 0 && errno != ENOENT;
}

int probe_cold_start(const char *sel, const char *profile) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tabcl-start-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    char err[4200];
    snprintf(err, sizeof err, "cannot make a folder under %s: %s", tmp && *tmp ? tmp : "/tmp",
             strerror(errno));
    row("first lookup, empty caches (s)", err, NULL);
    return 1;
  }
  char **env = child_env(dir);
  int failures = 0;
  static const char *const rows[2][3] = {
      {"first lookup, empty caches (s)", "  its process to exit (s)", "first lookup, warm cache (s)"},
      {"device plans, empty caches (s)", "  its process to exit (s)",
       "device plans, warm cache (s)"}};
  for (int plans = 0; plans < 2; plans++) {
    /* each pair starts from empty caches */
    if (plans) {
      nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
      if (mkdir(dir, 0700) != 0) {
        row(rows[plans][0], strerror(errno), NULL), failures++;
        break;
      }
    }
    char err[512] = "out of host memory";
    double cold = 0, warm = 0;
    const double cold_exit =
        env ? run_helper(sel, profile, plans, env, &cold, err, sizeof err) : -1;
    if (cold_exit < 0) row(rows[plans][0], err, NULL), failures++;
    else {
      row(rows[plans][0], NULL, "%.2f", cold);
      row(rows[plans][1], NULL, "%.2f", cold_exit);
    }
    const double warm_exit =
        cold_exit < 0 ? -1 : run_helper(sel, profile, plans, env, &warm, err, sizeof err);
    if (cold_exit >= 0 && warm_exit < 0) row(rows[plans][2], err, NULL), failures++;
    else if (warm_exit >= 0) row(rows[plans][2], NULL, "%.2f", warm);
  }
  free_env(env);
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return failures;
}
