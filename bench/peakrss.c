/* Runs a command and prints its peak RSS in KiB (wait4 ru_maxrss). Linux counts the RSS of the
 * process image a child replaces at exec into that figure, so a large parent inflates it; this
 * small launcher keeps that floor near 1 MiB. usage: peakrss PROGRAM [ARGS...] */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  pid_t pid;
  if (posix_spawnp(&pid, argv[1], NULL, NULL, argv + 1, environ) != 0) return 1;
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) return 1;
  printf("%ld\n", ru.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
