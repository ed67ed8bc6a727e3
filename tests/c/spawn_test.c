/* The wb_child_* C API: real children, real files. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "wb_c.h"

static char *slurp(const char *path) {
  static char buf[4096];
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static void test_echo_to_file(const char *dir) {
  int ok = 1;
  char out[512], err[256];
  snprintf(out, sizeof out, "%s/out", dir);
  const char *argv[] = {"echo", "hello", "world", NULL};
  wb_child *c = wb_child_spawn(argv, NULL, out, "", 0, 0, err, sizeof err);
  CHECK(c != NULL);
  if (c) {
    CHECK(wb_child_pid(c) > 0);
    wb_child_result r;
    CHECK(wb_child_wait(c, &r) == 0);
    CHECK(r.exited == 1 && r.exit_code == 0 && r.term_signal == 0 && r.timed_out == 0);
    CHECK(r.wall_ns > 0 && r.maxrss_kb > 0);
    wb_child_result again;
    CHECK(wb_child_wait(c, &again) == 0 && again.wall_ns == r.wall_ns);
    wb_child_free(c);
  }
  const char *text = slurp(out);
  CHECK(text && strcmp(text, "hello world\n") == 0);
  report("echo to a file", ok);
}

static void test_cwd_and_exit_code(const char *dir) {
  int ok = 1;
  char out[512], err[256];
  snprintf(out, sizeof out, "%s/pwd", dir);
  const char *argv[] = {"sh", "-c", "pwd; exit 7", NULL};
  wb_child *c = wb_child_spawn(argv, dir, out, NULL, 0, 0, err, sizeof err);
  CHECK(c != NULL);
  wb_child_result r;
  CHECK(c && wb_child_wait(c, &r) == 0 && r.exited && r.exit_code == 7);
  wb_child_free(c);
  char want[520];
  snprintf(want, sizeof want, "%s\n", dir);
  const char *text = slurp(out);
  CHECK(text && strcmp(text, want) == 0);
  report("cwd and exit code", ok);
}

static void test_missing(void) {
  int ok = 1;
  char err[256] = "";
  const char *argv[] = {"nosuchprog", NULL};
  CHECK(wb_child_spawn(argv, NULL, NULL, NULL, 0, 0, err, sizeof err) == NULL);
  CHECK(strcmp(err, "spawn: nosuchprog: No such file or directory") == 0);
  const char *sh[] = {"sh", "-c", "true", NULL};
  CHECK(wb_child_spawn(sh, "/nonexistent", NULL, NULL, 0, 0, err, sizeof err) == NULL);
  CHECK(strcmp(err, "spawn: cwd /nonexistent: No such file or directory") == 0);
  CHECK(wb_child_spawn(sh, NULL, "/nonexistent/out", NULL, 0, 0, err, sizeof err) == NULL);
  CHECK(strcmp(err, "spawn: stdout /nonexistent/out: No such file or directory") == 0);
  report("missing executable, cwd and output directory", ok);
}

static void test_timeout(void) {
  int ok = 1;
  char err[256];
  const char *argv[] = {"sleep", "10", NULL};
  int64_t t0 = wb_clock_ns();
  wb_child *c = wb_child_spawn(argv, NULL, NULL, NULL, 0.2, 1, err, sizeof err);
  CHECK(c != NULL);
  wb_child_result r;
  CHECK(c && wb_child_wait(c, &r) == 0);
  CHECK(r.timed_out == 1 && r.exited == 0 && r.exit_code == -1 && r.term_signal == SIGTERM);
  CHECK(r.wall_ns >= 200000000 && r.wall_ns < 800000000);
  CHECK(wb_clock_ns() - t0 < 1000000000LL);
  wb_child_free(c);
  report("timeout ends the child with SIGTERM", ok);
}

/* The deadline by the child's own clock: bash prints its start and the moment SIGTERM arrived
 * ($EPOCHREALTIME), so the test's scheduling does not blur it. 0.5 s at most (the child starts
 * after the spawn's clock), late by at most 0.35 s; 3x late would be 1.5 s. */
static void test_timeout_child_clock(const char *dir) {
  int ok = 1;
  char out[512], err[256];
  snprintf(out, sizeof out, "%s/clocked", dir);
  const char *argv[] = {"bash", "-c",
                        "s=$EPOCHREALTIME; trap 'echo \"$s $EPOCHREALTIME\"; exit 0' TERM; sleep 30 & wait", NULL};
  wb_child *c = wb_child_spawn(argv, NULL, out, NULL, 0.5, 1, err, sizeof err);
  CHECK(c != NULL);
  wb_child_result r;
  CHECK(c && wb_child_wait(c, &r) == 0 && r.timed_out == 1);
  wb_child_free(c);
  const char *text = slurp(out);
  double a = 0, b = 0;
  CHECK(text && sscanf(text, "%lf %lf", &a, &b) == 2);
  double seconds = b - a;
  CHECK(seconds > 0.0 && seconds <= 0.5 + 0.35);
  if (!ok) fprintf(stderr, "child saw SIGTERM after %.3f s (%s)\n", seconds, text ? text : "no output");
  report("timeout: SIGTERM at the deadline by the child's clock", ok);
}

static void test_free_running(void) {
  int ok = 1;
  char err[256];
  const char *argv[] = {"sleep", "10", NULL};
  wb_child *c = wb_child_spawn(argv, NULL, NULL, NULL, 0, 0, err, sizeof err);
  CHECK(c != NULL);
  pid_t pid = c ? wb_child_pid(c) : 0;
  wb_child_free(c);
  CHECK(pid > 0 && kill(pid, 0) != 0 && errno == ESRCH);
  wb_child_free(NULL);
  report("free kills and reaps a running child", ok);
}

/* The engine keeps /dev/null open for discarded streams; a host that closes that descriptor and
 * reuses its number for a file must not have children's output land in the file. */
static void test_discard_after_host_closes_fds(const char *dir) {
  int ok = 1;
  char err[256];
  const char *argv[] = {"sh", "-c", "echo leaked; echo leaked >&2", NULL};
  for (int round = 0; round < 2; round++) {
    wb_child *c = wb_child_spawn(argv, NULL, "", "", 0, 0, err, sizeof err);
    wb_child_result r;
    CHECK(c && wb_child_wait(c, &r) == 0 && r.exited && r.exit_code == 0);
    wb_child_free(c);
    if (round == 1) break;
    for (int fd = 3; fd < 64; fd++) close(fd);
    for (int i = 0; i < 8; i++) {
      char name[520];
      snprintf(name, sizeof name, "%s/victim%d", dir, i);
      CHECK(fopen(name, "w") != NULL); /* left open: they take the low descriptor numbers */
    }
  }
  for (int i = 0; i < 8; i++) {
    char name[520];
    snprintf(name, sizeof name, "%s/victim%d", dir, i);
    const char *text = slurp(name);
    CHECK(text && text[0] == 0);
  }
  report("discarded output after the host closed and reused descriptors", ok);
}

int main(void) {
  char dir[] = "/tmp/wb_spawn_test.XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_echo_to_file(dir);
  test_cwd_and_exit_code(dir);
  test_missing();
  test_timeout();
  test_timeout_child_clock(dir);
  test_free_running();
  test_discard_after_host_closes_fds(dir);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return summary();
}
