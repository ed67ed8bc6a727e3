/* wb's cache directory (core/cache.h): kallsyms and the BPF programs' minimal BTF per boot,
 * uncompressed DWARF per build id. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
