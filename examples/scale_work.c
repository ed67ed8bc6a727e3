/* A parallel CPU-bound workload for scaling measurements (recipes/scaling.lua).
 *
 *   scale_work [--workers N] [--size UNITS] [--quiet]
 *
 * Computes pi by the midpoint rule on 4 / (1 + x^2) over [0, 1] with UNITS × 100,000 intervals,
 * split into N contiguous blocks of whole units, one per POSIX thread. The threads share nothing
 * while they work (each sums its own block into a local variable); the main thread adds the
 * partial sums after joining them. So for a fixed UNITS the run time falls as 1/N while N does
 * not exceed the free cores (strong scaling), and UNITS = base × N keeps the time per thread
 * constant (weak scaling). The result and the settings go to stdout, e.g.
 *   workers=4 size=800 pi=3.14159265358979 seconds=0.0812
 * unless --quiet. Exit status 2 on bad arguments, 1 when a thread cannot be started. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEPS_PER_UNIT 100000L
#define MAX_WORKERS 4096

typedef struct {
  long first_unit, units, total_units;
  double sum;
} block;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *integrate(void *arg) {
  block *b = arg;
  double h = 1.0 / ((double)b->total_units * STEPS_PER_UNIT), sum = 0;
  long from = b->first_unit * STEPS_PER_UNIT, to = (b->first_unit + b->units) * STEPS_PER_UNIT;
  for (long i = from; i < to; i++) {
    double x = ((double)i + 0.5) * h;
    sum += 4.0 / (1.0 + x * x);
  }
  b->sum = sum * h;
  return NULL;
}

static int usage(const char *msg) {
  fprintf(stderr, "scale_work: %s\nusage: scale_work [--workers N] [--size UNITS] [--quiet]\n", msg);
  return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  long workers = 1, size = 100;
  int quiet = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
      if (parse_long(argv[++i], 1, MAX_WORKERS, &workers)) return usage("--workers takes 1..4096");
    } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      if (parse_long(argv[++i], 1, 100000000, &size)) return usage("--size takes 1..1e8 units");
    } else {
      return usage("unknown or incomplete argument");
    }
  }
  if (workers > size) return usage("--workers must not exceed --size (a worker gets whole units)");

  block *blocks = calloc((size_t)workers, sizeof *blocks);
  pthread_t *threads = calloc((size_t)workers, sizeof *threads);
  if (!blocks || !threads) {
    fprintf(stderr, "scale_work: out of memory\n");
    return 1;
  }
  double start = now();
  long next = 0;
  for (long w = 0; w < workers; w++) {
    blocks[w] = (block){next, size / workers + (w < size % workers), size, 0};
    next += blocks[w].units;
  }
  long started = 0;
  int rc = 0;
  for (long w = 1; w < workers; w++, started++) {
    rc = pthread_create(&threads[w], NULL, integrate, &blocks[w]);
    if (rc) break;
  }
  if (!rc) integrate(&blocks[0]);
  for (long w = 1; w <= started; w++) pthread_join(threads[w], NULL);
  if (rc) {
    fprintf(stderr, "scale_work: pthread_create: %s\n", strerror(rc));
    return 1;
  }
  double pi = 0;
  for (long w = 0; w < workers; w++) pi += blocks[w].sum;
  if (!quiet)
    printf("workers=%ld size=%ld pi=%.15g seconds=%.4f\n", workers, size, pi, now() - start);
  free(blocks);
  free(threads);
  return 0;
}
