/* The minimal kernel BTF of wb.bpf's programs (core/bpf_btf.h). libbpf relocates the programs'
 * CO-RE field accesses against the kernel's BTF, and parsing all of /sys/kernel/btf/vmlinux (some
 * 5 MB) for it took about half of each load (~10 of ~20 ms here). `bpftool gen min_core_btf`
 * keeps only the types and members the relocations name (a few hundred bytes); the kernel's BTF
 * cannot change before the next boot, so the file is made once per boot and per build of the
 * programs, and given to libbpf as btf_custom_path. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf_btf.h"
#include "cache.h"
#include "spawn.h"

extern char **environ;

#define MAKE_TIMEOUT_MS 10000

int wb_btf_path(const void *obj, size_t len, char *out, size_t n) {
  char boot[40], dir[4096];
  if (wb_boot_id(boot) != 0 || wb_cache_dir(dir, sizeof dir) != 0) return -1;
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
  for (size_t i = 0; i < len; i++) h = (h ^ ((const unsigned char *)obj)[i]) * 0x100000001b3ULL;
  return snprintf(out, n, "%s/btf-%s-%016llx", dir, boot, (unsigned long long)h) < (int)n ? 0 : -1;
}

static char failed_why[256];

int wb_btf_usable(const char *path, const char **why) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  int exists = fd >= 0 || errno != ENOENT;
  unsigned char magic[2] = {0};
  int ok = fd >= 0 && wb_cache_trusted(fd) == 0 && pread(fd, magic, 2, 0) == 2 && magic[0] == 0x9f &&
           magic[1] == 0xeb;
  if (fd >= 0) close(fd);
  if (ok) return 0;
  char failed[4200];
  snprintf(failed, sizeof failed, "%s.failed", path);
  fd = open(failed, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  ssize_t k = fd >= 0 && wb_cache_trusted(fd) == 0 ? pread(fd, failed_why, sizeof failed_why - 1, 0) : -1;
  if (fd >= 0) close(fd);
  if (k > 0) {
    failed_why[k] = 0;
    failed_why[strcspn(failed_why, "\n")] = 0;
    *why = failed_why;
    return 1;
  }
  *why = exists ? "the cache file is not usable (not this user's only, or not BTF)" : "not made yet this boot";
  return -1;
}

/* Runs argv with /dev/null as its standard streams and default signals; its exit status (as
 * waitpid gives it), or -1 with errno (it could not start, or ran past MAKE_TIMEOUT_MS: killed). */
static int run_quiet(char *const argv[]) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawn_file_actions_init(&fa);
  for (int i = 0; i < 3; i++) posix_spawn_file_actions_addopen(&fa, i, "/dev/null", i ? O_WRONLY : O_RDONLY, 0);
  posix_spawnattr_init(&at);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
  if (e == ENOENT && !strchr(argv[0], '/')) {
    char sbin[256];
    snprintf(sbin, sizeof sbin, "/usr/sbin/%s", argv[0]);
    e = posix_spawn(&pid, sbin, &fa, &at, argv, environ);
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (e) {
    errno = e;
    return -1;
  }
  int status;
  for (int waited = 0;; waited += 5) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (waited >= MAKE_TIMEOUT_MS) {
      kill(pid, SIGKILL);
      wb_reap(pid);
      errno = ETIMEDOUT;
      return -1;
    }
    nanosleep(&(struct timespec){0, 5000000}, NULL);
  }
}

/* Writes why to path.failed, so that wb_btf_usable says it until the next boot. */
static void remember_failure(const char *path, const char *why) {
  char failed[4200], tmp[4300];
  snprintf(failed, sizeof failed, "%s.failed", path);
  int fd = wb_cache_create(failed, tmp, sizeof tmp);
  if (fd >= 0) wb_cache_commit(fd, tmp, failed, write(fd, why, strlen(why)) == (ssize_t)strlen(why));
}

int wb_btf_make(const void *obj, size_t len, const char *path, char *err, size_t n) {
  char objtmp[4300], outtmp[4300], boot[40];
  const char *slash = strrchr(path, '/');
  if (!slash || wb_boot_id(boot) != 0) {
    snprintf(err, n, "no cache directory or boot id");
    return -1;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  wb_cache_prune(dir, "btf-", boot);
  int ofd = wb_cache_create(path, objtmp, sizeof objtmp), nfd = -1;
  int ok = ofd >= 0 && write(ofd, obj, len) == (ssize_t)len;
  if (ofd >= 0 && close(ofd) != 0) ok = 0;
  if (ok) nfd = wb_cache_create(path, outtmp, sizeof outtmp); /* bpftool writes into it */
  if (nfd < 0) {
    snprintf(err, n, "%s: %s", dir, strerror(errno));
    if (ofd >= 0) unlink(objtmp);
    return -1;
  }
  close(nfd);
  char *argv[] = {"bpftool", "gen", "min_core_btf", "/sys/kernel/btf/vmlinux", outtmp, objtmp, NULL};
  int status = run_quiet(argv);
  const char *why;
  if (status < 0) snprintf(err, n, "bpftool: %s", strerror(errno));
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    snprintf(err, n, "bpftool gen min_core_btf failed (%s %d)", WIFEXITED(status) ? "exit" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  else if (wb_btf_usable(outtmp, &why) != 0) snprintf(err, n, "bpftool gen min_core_btf wrote no BTF");
  else err[0] = 0;
  unlink(objtmp);
  if (wb_cache_commit(-1, outtmp, path, !err[0]) != 0 && !err[0]) snprintf(err, n, "%s: %s", path, strerror(errno));
  if (!err[0]) return 0;
  remember_failure(path, err);
  return -1;
}
