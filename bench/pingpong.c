/* Pairs of threads hand a token back and forth through a mutex and condition variable, each
 * spinning a while before it hands it on. argv[1]: wake-ups per pair (default 100000), argv[2]:
 * pairs (default 4), argv[3]: microseconds spun per hand-off (default 10). Prints wake-ups per
 * second of wall time, all pairs together. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double spin_s = 10e-6; /* argv[3]: microseconds spun per hand-off */

typedef struct pair {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long turn;
} pair;

typedef struct player_arg {
  pair *p;
  long me;
} player_arg;

static long total;

static double now(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void spin(void) {
  double t0 = now(CLOCK_MONOTONIC);
  while (now(CLOCK_MONOTONIC) - t0 < spin_s) {
  }
}

static void *player(void *arg) {
  pair *p = ((player_arg *)arg)->p;
  long me = ((player_arg *)arg)->me;
  pthread_mutex_lock(&p->mu);
  while (p->turn < total) {
    while (p->turn < total && p->turn % 2 != me) pthread_cond_wait(&p->cv, &p->mu);
    if (p->turn >= total) break;
    pthread_mutex_unlock(&p->mu);
    spin();
    pthread_mutex_lock(&p->mu);
    p->turn++;
    pthread_cond_signal(&p->cv);
  }
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int main(int argc, char **argv) {
  total = argc > 1 ? atol(argv[1]) : 100000;
  int pairs = argc > 2 ? atoi(argv[2]) : 4;
  if (pairs < 1 || pairs > 64) pairs = 4;
  if (argc > 3) spin_s = atof(argv[3]) / 1e6;
  pair p[64];
  player_arg args[128];
  pthread_t t[128];
  double t0 = now(CLOCK_MONOTONIC);
  for (int i = 0; i < pairs; i++) {
    pthread_mutex_init(&p[i].mu, NULL);
    pthread_cond_init(&p[i].cv, NULL);
    p[i].turn = 0;
    for (int k = 0; k < 2; k++) {
      args[2 * i + k] = (player_arg){.p = &p[i], .me = k};
      pthread_create(&t[2 * i + k], NULL, player, &args[2 * i + k]);
    }
  }
  for (int i = 0; i < 2 * pairs; i++) pthread_join(t[i], NULL);
  printf("%.0f\n", pairs * total / (now(CLOCK_MONOTONIC) - t0));
  return 0;
}
