/* A workload with a known profile, for tests of wb's profilers.
 *
 *   cpu_split [--cpu SECONDS | --work MILLIONS] [--sleep SECONDS] [--fork N]
 *
 * Spends --cpu seconds of CPU time (default 1.5), two thirds in spin_a and one third in spin_b,
 * alternating in short slices measured in thread CPU time (so preemption on a busy machine does
 * not shift the split), then blocks in sleep_phase for --sleep seconds (default 1.0; 0 skips it):
 * main;run;sleep_phase;clock_nanosleep in an off-CPU profile. --work does a fixed amount of work
 * instead (MILLIONS million loop iterations, split the same way), for overhead benchmarks: work
 * counted in CPU time would hide a profiler's cost.
 * With --fork N, N worker processes each do all of that (stack main;worker;spin_a ...) while the
 * parent only waits; each worker prints "worker I pid PID" on stdout. The result checksum goes to
 * stdout so the work cannot be optimised away. Built with frame pointers (see the Makefile). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLICE_A 0.006 /* seconds of CPU per slice of spin_a; spin_b gets half */
#define CHUNK 50000   /* iterations between two looks at the CPU clock */

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A dependent multiply-add chain the compiler cannot shorten; distinct increments keep the two
 * functions from being merged as identical code. */
#define BURN(x, inc)                                                                               \
  for (int i_ = 0; i_ < CHUNK; i_++) {                                                             \
    x = x * 6364136223846793005ULL + (inc);                                                        \
    __asm__ volatile("" : "+r"(x));                                                                \
  }

/* Spins for `seconds` of CPU time, or exactly `chunks` chunks when chunks > 0. */
static __attribute__((noinline, noclone)) uint64_t spin_a(uint64_t x, double seconds, long chunks) {
  double end = chunks > 0 ? 0 : cpu_now() + seconds;
  do BURN(x, 1442695040888963407ULL)
  while (chunks > 0 ? --chunks > 0 : cpu_now() < end);
  return x;
}

static __attribute__((noinline, noclone)) uint64_t spin_b(uint64_t x, double seconds, long chunks) {
  double end = chunks > 0 ? 0 : cpu_now() + seconds;
  do BURN(x, 1013904223ULL)
  while (chunks > 0 ? --chunks > 0 : cpu_now() < end);
  return x;
}

/* Frame-pointer unwinding (wb's unwind=fp) loses the direct caller of a function in a library
 * built without frame pointers (Debian's libc): here that is pause_for, so sleep_phase stays in the
 * stack. CFI unwinding, the default, shows pause_for too. */
static __attribute__((noinline, noclone)) void pause_for(double seconds) {
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static __attribute__((noinline, noclone)) void sleep_phase(double seconds) {
  pause_for(seconds);
  __asm__ volatile(""); /* keeps the call above from becoming a tail call */
}

static double work; /* --work: million iterations in all, 0 when --cpu rules */

static __attribute__((noinline, noclone)) uint64_t run(double cpu, double sleep_s) {
  uint64_t x = 88172645463325252ULL;
  double start = cpu_now();
  for (long rounds = (long)(work * 1e6 / (3.0 * CHUNK)); work > 0 ? rounds-- > 0 : cpu_now() - start < cpu;) {
    x = spin_a(x, SLICE_A, work > 0 ? 2 : 0);
    x = spin_b(x, SLICE_A / 2, work > 0 ? 1 : 0);
  }
  if (sleep_s > 0) sleep_phase(sleep_s);
  return x;
}

static __attribute__((noinline, noclone)) int worker(int i, double cpu, double sleep_s) {
  printf("worker %d pid %d\n", i, (int)getpid());
  fflush(stdout);
  uint64_t x = run(cpu, sleep_s);
  printf("worker %d checksum %016llx\n", i, (unsigned long long)x);
  fflush(stdout);
  return 0;
}

static double number_arg(const char *opt, const char *v) {
  char *end;
  double x = v ? strtod(v, &end) : -1;
  if (!v || *end || x < 0) {
    fprintf(stderr, "cpu_split: %s needs a non-negative number\n", opt);
    exit(2);
  }
  return x;
}

int main(int argc, char **argv) {
  double cpu = 1.5, sleep_s = 1.0;
  int workers = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cpu") == 0) cpu = number_arg(argv[i], argv[i + 1]), i++;
    else if (strcmp(argv[i], "--sleep") == 0) sleep_s = number_arg(argv[i], argv[i + 1]), i++;
    else if (strcmp(argv[i], "--work") == 0) work = number_arg(argv[i], argv[i + 1]), i++;
    else if (strcmp(argv[i], "--fork") == 0) workers = (int)number_arg(argv[i], argv[i + 1]), i++;
    else {
      fprintf(stderr, "usage: cpu_split [--cpu SECONDS | --work MILLIONS] [--sleep SECONDS] [--fork N]\n");
      return 2;
    }
  }
  if (workers == 0) {
    printf("checksum %016llx\n", (unsigned long long)run(cpu, sleep_s));
    return 0;
  }
  for (int i = 1; i <= workers; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("cpu_split: fork");
      return 1;
    }
    if (pid == 0) _exit(worker(i, cpu, sleep_s));
  }
  int failed = 0, status;
  while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  return failed;
}
