/* The floor for per-run overhead: posix_spawn + wait4 of a command N times, nothing else.
 * usage: spawnloop N PROGRAM [ARGS...] ; prints the mean seconds per run. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  long n = atol(argv[1]);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++) {
    pid_t pid;
    if (posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0) return 1;
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.9f\n", ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9) / (double)n);
  return 0;
}
