/* wb's cache directory (core/cache.h): kallsyms and the BPF programs' minimal BTF per boot,
 * uncompressed DWARF per build id and content; the size and age limits of the latter. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "fs_guard.h"
#include "ticker.h"

int wb_cache_dir(char *out, size_t size) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n = xdg && *xdg == '/' ? snprintf(out, size, "%s", xdg)
          : home && *home == '/' ? snprintf(out, size, "%s/.cache", home) : -1;
  if (n <= 0 || (size_t)n + 3 >= size) return -1;
  (void)mkdir(out, 0700); /* the cache home, then wb's directory in it */
  memcpy(out + n, "/wb", 4);
  if (mkdir(out, 0700) != 0 && errno != EEXIST) return -1;
  /* only a private directory of this user, on a path no one else can change: with `sudo -E`,
   * HOME is the invoking user's, who could plant files (a FIFO, a poisoned copy) or swap the
   * directory for a link between this check and a write */
  return wb_guard_private_dir(out);
}

int wb_boot_id(char out[40]) {
  char s[64];
  memset(out, 0, 40);
  if (wb_read_small("/proc/sys/kernel/random/boot_id", s, sizeof s) < 0) return -1;
  size_t n = strcspn(s, "\n");
  if (n < 16 || n >= 40) return -1;
  memcpy(out, s, n);
  return 0;
}

int wb_cache_trusted(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077) ? 0 : -1;
}

void wb_cache_prune(const char *dir, const char *prefix, const char boot[40]) {
  DIR *d = opendir(dir);
  if (!d) return;
  size_t np = strlen(prefix), nb = strlen(boot);
  struct dirent *e;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, prefix, np) == 0 && strncmp(e->d_name + np, boot, nb) != 0)
      (void)unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
}

int wb_cache_create(const char *path, char *tmp, size_t n) {
  if (snprintf(tmp, n, "%s.XXXXXX", path) >= (int)n) return -1;
  return mkostemp(tmp, O_CLOEXEC);
}

int wb_cache_commit(int fd, const char *tmp, const char *path, int ok) {
  if (fd >= 0 && close(fd) != 0) ok = 0;
  if (ok && rename(tmp, path) == 0) return 0;
  unlink(tmp);
  return -1;
}

void wb_cache_limits(uint64_t *max_bytes, double *max_age_s) {
  const char *bytes = getenv("WB_MAX_CACHE_BYTES"), *days = getenv("WB_MAX_CACHE_DAYS");
  char *end;
  *max_bytes = WB_CACHE_MAX_BYTES;
  *max_age_s = WB_CACHE_MAX_DAYS * 86400.0;
  if (bytes && *bytes >= '0' && *bytes <= '9') {
    errno = 0;
    unsigned long long v = strtoull(bytes, &end, 10);
    if (!*end && errno == 0) *max_bytes = v;
  }
  if (days && *days) {
    double v = strtod(days, &end);
    if (!*end && v >= 0 && isfinite(v)) *max_age_s = v * 86400.0;
  }
}

void wb_cache_touch(int fd) {
  const struct timespec times[2] = {{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_OMIT}};
  (void)futimens(fd, times);
}

/* 1 when name is NAME + suffix with NAME of hex digits and '-' (*tmp = 0), or that and the
 * ".XXXXXX" of a temporary (*tmp = 1). */
static int made_per_content(const char *name, const char *suffix, int *tmp) {
  size_t n = strspn(name, "0123456789abcdef-"), len = strlen(suffix);
  if (n == 0 || strncmp(name + n, suffix, len) != 0) return 0;
  const char *rest = name + n + len;
  *tmp = *rest != 0;
  return !*tmp || (rest[0] == '.' && strlen(rest) == 7);
}

typedef struct cached {
  char name[256];
  int64_t used_ns; /* its access time */
  uint64_t size;
} cached;

static int least_recent_first(const void *a, const void *b) {
  const cached *x = a, *y = b;
  return (x->used_ns > y->used_ns) - (x->used_ns < y->used_ns);
}

static int64_t ns_of(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

uint64_t wb_cache_trim(const char *dir, const char *suffix, uint64_t max_bytes, double max_age_s, const char *keep) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0) close(dfd);
    return 0;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t now_ns = ns_of(now), max_age_ns = max_age_s > 9e9 ? INT64_MAX : (int64_t)(max_age_s * 1e9);
  cached *list = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    struct stat st;
    int tmp;
    if (!made_per_content(e->d_name, suffix, &tmp) || strlen(e->d_name) >= sizeof list->name ||
        fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077))
      continue; /* not one of the files this user made here */
    int64_t used = ns_of(st.st_atim);
    if (tmp) { /* a temporary: removed when its writer has been gone a day */
      if (now_ns - ns_of(st.st_mtim) > (int64_t)86400 * 1000000000) (void)unlinkat(dfd, e->d_name, 0);
      continue;
    }
    if (keep && strcmp(e->d_name, keep) == 0) {
      total += (uint64_t)st.st_size;
      continue;
    }
    if (now_ns - used > max_age_ns && unlinkat(dfd, e->d_name, 0) == 0) continue;
    if (n == cap) {
      cached *p = realloc(list, (cap = cap ? cap * 2 : 32) * sizeof *p);
      if (!p) break;
      list = p;
    }
    snprintf(list[n].name, sizeof list[n].name, "%s", e->d_name);
    list[n].used_ns = used, list[n].size = (uint64_t)st.st_size;
    total += list[n++].size;
  }
  if (n > 1) qsort(list, n, sizeof *list, least_recent_first);
  for (size_t i = 0; i < n && total > max_bytes; i++)
    if (unlinkat(dfd, list[i].name, 0) == 0) total -= list[i].size;
  free(list);
  closedir(d);
  return total;
}
