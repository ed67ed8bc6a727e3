/* Two threads hand a token back and forth through a mutex and condition variable, each spinning
 * SPIN_NS of CPU before it hands it on: about 1e9 / (SPIN_NS + hand-off) wake-ups a second.
 * argv[1]: wake-ups in all (default 100000). Prints wake-ups per second of wall time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SPIN_NS 10000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long turn, total;

static double now(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void spin(void) {
  double t0 = now(CLOCK_MONOTONIC);
  while (now(CLOCK_MONOTONIC) - t0 < SPIN_NS / 1e9) {
  }
}

static void *player(void *arg) {
  long me = (long)arg;
  pthread_mutex_lock(&mu);
  while (turn < total) {
    while (turn < total && turn % 2 != me) pthread_cond_wait(&cv, &mu);
    if (turn >= total) break;
    pthread_mutex_unlock(&mu);
    spin();
    pthread_mutex_lock(&mu);
    turn++;
    pthread_cond_signal(&cv);
  }
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(int argc, char **argv) {
  total = argc > 1 ? atol(argv[1]) : 100000;
  double t0 = now(CLOCK_MONOTONIC);
  pthread_t a, b;
  pthread_create(&a, NULL, player, (void *)0);
  pthread_create(&b, NULL, player, (void *)1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("%.0f\n", total / (now(CLOCK_MONOTONIC) - t0));
  return 0;
}
