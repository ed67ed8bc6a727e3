/* See core/ticker.h. */
#define _GNU_SOURCE
#include "ticker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int wb_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
  pthread_t own;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(t ? t : &own, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e == 0 && !t) pthread_detach(own);
  return e;
}

/* Whether this thread may set a thread's nice value back to `nice` after lowering it. */
static int can_raise_to(int nice) {
  char status[4096];
  int got = wb_read_small("/proc/thread-self/status", status, sizeof status) > 0;
  const char *cap = got ? strstr(status, "\nCapEff:") : NULL;
  if (cap && (strtoull(cap + 8, NULL, 16) >> 23 & 1)) return 1; /* CAP_SYS_NICE */
  struct rlimit rl;
  return getrlimit(RLIMIT_NICE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || 20 - (long)rl.rlim_cur <= nice);
}

void wb_thread_background(_Atomic int *tid) {
  int self = (int)syscall(SYS_gettid);
  atomic_store(tid, self);
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, (id_t)self);
  static _Thread_local int raisable = -1; /* can_raise_to(nice), asked once per thread */
  if (errno == 0 && nice < 19 && raisable < 0) raisable = can_raise_to(nice);
  if (errno == 0 && nice < 19 && raisable == 1)
    (void)setpriority(PRIO_PROCESS, (id_t)self, 19); /* Linux: per thread */
}

void wb_thread_hurry(_Atomic int *tid) {
  int t = atomic_load(tid);
  if (t <= 0) return;
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
  if (errno == 0) (void)setpriority(PRIO_PROCESS, (id_t)t, nice);
}

double wb_ticker_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct timespec monotonic_at(double t) {
  struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
  return ts;
}

static void *ticker_main(void *arg) {
  wb_ticker *t = arg;
  pthread_mutex_lock(&t->lock);
  double next = wb_ticker_now();
  while (!t->stop) {
    t->tick(t->arg, wb_ticker_now());
    next += t->period;
    if (next < wb_ticker_now()) next = wb_ticker_now(); /* behind: no burst of catch-up calls */
    struct timespec at = monotonic_at(next);
    while (!t->stop && pthread_cond_timedwait(&t->wake, &t->lock, &at) != ETIMEDOUT) {}
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

int wb_ticker_start(wb_ticker *t, double hz, void (*tick)(void *, double), void *arg) {
  t->period = 1.0 / hz, t->tick = tick, t->arg = arg, t->stop = 0;
  pthread_mutex_init(&t->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&t->wake, &ca);
  pthread_condattr_destroy(&ca);
  int e = wb_thread_start(&t->thread, ticker_main, t);
  t->running = e == 0;
  return e;
}

void wb_ticker_stop(wb_ticker *t) {
  if (!t->running) return;
  pthread_mutex_lock(&t->lock);
  t->stop = 1;
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->thread, NULL);
  t->running = 0;
}

ssize_t wb_read_small(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t k = read(fd, buf, len - 1);
  close(fd);
  if (k < 0) return -1;
  buf[k] = 0;
  return k;
}
