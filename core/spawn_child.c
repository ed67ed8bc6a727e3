/* The child's side of a spawn (see wb_exec_plan in core/spawn.h): a clone(CLONE_VM |
 * CLONE_VFORK) child that runs on a small stack of its own, shares the parent's memory until its
 * exec, and makes raw system calls only (no allocation, no locks, nothing a sanitizer
 * intercepts). A close-on-exec pipe carries the errno of a failing step back to the parent: EOF
 * means the exec happened. Single-threaded use, like the rest of the spawn engine. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

void wb_plan_dup(wb_exec_plan *plan, int from, int to) {
  if (plan->ndup >= (int)(sizeof plan->from / sizeof plan->from[0])) abort();
  plan->from[plan->ndup] = from;
  plan->to[plan->ndup] = to;
  plan->ndup++;
}

/* ---- posix_spawn, for valgrind ------------------------------------------------------------ */

static int start_posix_spawn(const wb_exec_plan *p, pid_t *pid) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  int e = p->dir_fd >= 0 ? posix_spawn_file_actions_addfchdir_np(&fa, p->dir_fd) : 0;
  for (int i = 0; i < p->ndup && !e; i++) e = posix_spawn_file_actions_adddup2(&fa, p->from[i], p->to[i]);
  if (!e) e = posix_spawn_file_actions_addclosefrom_np(&fa, p->close_from);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  if (!e) e = posix_spawn(pid, p->path, &fa, &attr, p->argv, p->envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return e;
}

/* ---- the clone child ---------------------------------------------------------------------- */

/* The kernel's struct sigaction; zeroed, it sets SIG_DFL. */
struct kernel_sigaction {
  void *handler;
  unsigned long flags;
  void *restorer;
  unsigned long mask;
};

struct child_args {
  const wb_exec_plan *plan;
  int err_fd;
  unsigned long long reset; /* bit s-1: set signal s to SIG_DFL */
  pid_t parent;             /* the spawning process: a child that outlives it exits at once */
};

static char child_stack[32 * 1024] __attribute__((aligned(64)));

static int sys(long r) { return r < 0 ? errno : 0; }

__attribute__((no_sanitize("address", "undefined"))) static int child_main(void *arg) {
  const struct child_args *a = arg;
  const wb_exec_plan *p = a->plan;
  static const struct kernel_sigaction dfl;
  for (int s = 1; s <= 64; s++)
    if (a->reset >> (s - 1) & 1) syscall(SYS_rt_sigaction, s, &dfl, NULL, 8);
  /* SIGKILL when the spawning thread dies (wb is single-threaded), even by kill -9; an exec of a
   * set-uid program resets it (the run lock covers those, lua/wb/campaign.lua). A parent already
   * gone before the prctl is seen by getppid. */
  syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (syscall(SYS_getppid) != a->parent) syscall(SYS_exit, 127);
  int e = sys(syscall(SYS_setpgid, 0, 0));
  if (!e && p->dir_fd >= 0) e = sys(syscall(SYS_fchdir, p->dir_fd)); /* before a move covers it */
  for (int i = 0; i < p->ndup && !e; i++) {
    if (p->from[i] == p->to[i]) e = sys(syscall(SYS_fcntl, p->to[i], F_SETFD, 0));
    else e = sys(syscall(SYS_dup3, p->from[i], p->to[i], 0));
  }
  if (!e) { /* everything from close_from up except the error pipe, which closes at the exec */
    if (a->err_fd > p->close_from) syscall(SYS_close_range, p->close_from, a->err_fd - 1, 0);
    syscall(SYS_close_range, a->err_fd + 1 > p->close_from ? a->err_fd + 1 : p->close_from, ~0U, 0);
    unsigned long none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
    syscall(SYS_execve, p->path, p->argv, p->envp);
    e = errno;
  }
  syscall(SYS_write, a->err_fd, &e, sizeof e);
  syscall(SYS_exit, 127);
  return 0;
}

/* Signals the child resets: all the standard ones, and the real-time ones that were not at
 * their default when the first child was started (wb installs no real-time handlers). */
static unsigned long long reset_mask(void) {
  static unsigned long long mask;
  if (mask) return mask;
  unsigned long long m = 0;
  for (int s = 1; s <= 64; s++) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    struct sigaction old;
    if (s < 32 || (sigaction(s, NULL, &old) == 0 && old.sa_handler != SIG_DFL)) m |= 1ULL << (s - 1);
  }
  return mask = m;
}

/* posix_spawn serves where the clone child cannot: under valgrind, which runs CLONE_VM |
 * CLONE_VFORK children as forks on its own terms, and on kernels without close_range (before 5.9),
 * where glibc closes descriptors another way. */
static int use_posix_spawn(void) {
  static int known = -1;
  if (known < 0) {
    const char *preload = getenv("LD_PRELOAD");
    known = (preload && strstr(preload, "vgpreload") != NULL) ||
            (syscall(SYS_close_range, ~0U, ~0U, 0) != 0 && errno == ENOSYS);
  }
  return known;
}

int wb_exec_start(const wb_exec_plan *p, pid_t *pid) {
  if (use_posix_spawn()) return start_posix_spawn(p, pid);
  int errpipe[2]; /* out of the way of the moves onto 0..4 */
  if (wb_pipe_above(errpipe, WB_GATE_READY_FD + 1) != 0) return errno;
  struct child_args a = {.plan = p, .err_fd = errpipe[1], .reset = reset_mask(), .parent = getpid()};
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t child = clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
  int e = child < 0 ? errno : 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(errpipe[1]);
  if (!e) {
    int child_errno;
    ssize_t n;
    do n = read(errpipe[0], &child_errno, sizeof child_errno);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof child_errno) {
      e = child_errno ? child_errno : EIO;
      wb_reap(child);
    } else {
      *pid = child;
    }
  }
  close(errpipe[0]);
  return e;
}
