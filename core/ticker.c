/* See core/ticker.h. */
#define _GNU_SOURCE
#include "ticker.h"

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double wb_ticker_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *ticker_main(void *arg) {
  wb_ticker *t = arg;
  double next = wb_ticker_now();
  for (;;) {
    pthread_mutex_lock(&t->lock);
    int stop = t->stop;
    if (!stop) t->tick(t->arg, wb_ticker_now());
    pthread_mutex_unlock(&t->lock);
    if (stop) break;
    next += t->period;
    double wait = next - wb_ticker_now();
    if (wait < 0) next = wb_ticker_now(), wait = 0; /* behind: no burst of catch-up calls */
    struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int wb_ticker_start(wb_ticker *t, double hz, void (*tick)(void *, double), void *arg) {
  t->period = 1.0 / hz, t->tick = tick, t->arg = arg, t->stop = 0;
  pthread_mutex_init(&t->lock, NULL);
  int e = pthread_create(&t->thread, NULL, ticker_main, t);
  t->running = e == 0;
  return e;
}

void wb_ticker_stop(wb_ticker *t) {
  if (!t->running) return;
  pthread_mutex_lock(&t->lock);
  t->stop = 1;
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
