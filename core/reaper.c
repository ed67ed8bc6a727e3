/* The reaper: ends the process groups of wb's children when wb dies, even by kill -9
 * (core/reaper.h). PR_SET_PDEATHSIG ends a child, not what it started in its group; the reaper,
 * a separate process (the wb binary re-executed as `wb __reaper`), hears of every group wb makes
 * through a pipe and, when the pipe's last write end closes (wb is gone, however it went),
 * SIGKILLs each group that still has members. wb says when a group has ended (its leader reaped
 * and no member left), and the reaper drops it then; groups that emptied otherwise are dropped
 * within a second (checked at least once a second, also while wb keeps writing), so a group id
 * is signalled only while that group exists or within a second of its end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reaper.h"
#include "spawn.h"

extern char **environ;

#define REAPER_FD 3
#define PRUNE_MS 1000

static int reaper_fd = -1; /* wb's write end, close-on-exec; -2: no reaper can be had */
static int reaper_host;    /* this process's executable understands `__reaper` */

static int group_gone(pid_t pgid) { return kill(-pgid, 0) != 0 && errno == ESRCH; }

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void wb_reaper(int argc, char **argv) {
  if (argc != 2 || strcmp(argv[1], "__reaper") != 0) {
    reaper_host = 1;
    return;
  }
  static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU};
  for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) signal(ignored[i], SIG_IGN);
  pid_t *groups = NULL;
  size_t n = 0, cap = 0;
  int64_t pruned = now_ms();
  for (;;) {
    struct pollfd pfd = {.fd = REAPER_FD, .events = POLLIN};
    int r = poll(&pfd, 1, PRUNE_MS);
    if (r < 0 && errno == EINTR) continue;
    if (now_ms() - pruned >= PRUNE_MS) { /* also while wb keeps writing */
      size_t kept = 0;
      for (size_t i = 0; i < n; i++)
        if (!group_gone(groups[i])) groups[kept++] = groups[i];
      n = kept;
      pruned = now_ms();
    }
    if (r == 0) continue;
    int32_t buf[1024];
    ssize_t got = r < 0 ? 0 : read(REAPER_FD, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break; /* wb is gone */
    for (size_t i = 0; i < (size_t)got / sizeof buf[0]; i++) {
      if (buf[i] < 0) { /* wb saw the group end: forget it at once */
        for (size_t k = 0; k < n; k++)
          if (groups[k] == -buf[i]) {
            groups[k] = groups[--n];
            break;
          }
        continue;
      }
      if (n == cap) {
        size_t ncap = cap ? cap * 2 : 64;
        pid_t *p = realloc(groups, ncap * sizeof *p);
        if (!p) break;
        groups = p;
        cap = ncap;
      }
      groups[n++] = buf[i];
    }
  }
  for (size_t i = 0; i < n; i++) kill(-groups[i], SIGKILL);
  _exit(0);
}

/* Starts the reaper; its write end, or -1. */
static int start(void) {
  if (!reaper_host) return -1; /* not the wb binary: nothing to re-execute */
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  if (wb_fd_above(&p[0], REAPER_FD + 1) != 0) {
    close(p[1]);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  int e = posix_spawn_file_actions_adddup2(&fa, p[0], REAPER_FD);
  for (int fd = 0; fd < 3 && !e; fd++)
    e = posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
  if (!e) e = posix_spawn_file_actions_addclosefrom_np(&fa, REAPER_FD + 1);
  if (!e) e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                    POSIX_SPAWN_SETSIGDEF);
  if (!e) e = posix_spawnattr_setpgroup(&attr, 0); /* out of reach of the terminal's signals */
  if (!e) e = posix_spawnattr_setsigmask(&attr, &none);
  if (!e) e = posix_spawnattr_setsigdefault(&attr, &all);
  pid_t pid;
  if (!e)
    e = posix_spawn(&pid, wb_gate_binary(), &fa, &attr, (char *const[]){"wb", "__reaper", NULL}, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(p[0]);
  if (e) {
    close(p[1]);
    return -1;
  }
  return p[1];
}

static void tell(int32_t v) {
  ssize_t w;
  do w = write(reaper_fd, &v, sizeof v);
  while (w < 0 && errno == EINTR);
}

void wb_reaper_watch(pid_t pgid) {
  if (reaper_fd == -1) reaper_fd = start();
  if (reaper_fd == -1) reaper_fd = -2;
  if (reaper_fd >= 0) tell((int32_t)pgid);
}

void wb_reaper_forget(pid_t pgid) {
  if (reaper_fd >= 0) tell(-(int32_t)pgid);
}
