/* The gate that holds a spawned child between its creation and its exec (see core/spawn.h): the
 * child's side, `wb __gate EXE ARGV...` run by the wb binary's main, and the parent's side. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "spawn.h"

#define GATE_START_MS 10000 /* longest wait for a held child's gate to start */

static int gate_host;          /* this process's executable understands `__gate` */
static char gate_binary[4096]; /* its path, read on first use */

/* ---- the child's side --------------------------------------------------------------------------- */

void wb_gate(int argc, char **argv) {
  if (argc < 4 || strcmp(argv[1], "__gate") != 0) {
    gate_host = 1;
    return;
  }
  const char *slash = strrchr(argv[2], '/');
  prctl(PR_SET_NAME, slash ? slash + 1 : argv[2]); /* what the exec will name it anyway */
  char c = 1;
  ssize_t n;
  do n = write(WB_GATE_READY_FD, &c, 1);
  while (n < 0 && errno == EINTR);
  close(WB_GATE_READY_FD);
  do n = read(WB_GATE_FD, &c, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) _exit(WB_GATE_ABANDONED);
  close(WB_GATE_FD);
  execv(argv[2], argv + 3);
  fprintf(stderr, "wb: %s: %s\n", argv[2], strerror(errno));
  _exit(127);
}

/* ---- the gate: parent side ------------------------------------------------------------- */

/* The gate's pipes sit above WB_GATE_READY_FD, so that its dup2s cannot clobber one another. */
int wb_gate_prepare(wb_exec_plan *plan, wb_gate_pipes *g) {
  int go[2], ready[2];
  if (wb_pipe_above(go, WB_GATE_READY_FD + 1) != 0) return errno;
  g->go_rd = go[0];
  g->go_wr = go[1];
  if (wb_pipe_above(ready, WB_GATE_READY_FD + 1) != 0) return errno;
  g->ready_rd = ready[0];
  g->ready_wr = ready[1];
  wb_plan_dup(plan, go[0], WB_GATE_FD);
  wb_plan_dup(plan, ready[1], WB_GATE_READY_FD);
  plan->close_from = WB_GATE_READY_FD + 1;
  return 0;
}

int wb_gate_await(wb_gate_pipes *g) {
  wb_close_fd(&g->ready_wr);
  struct pollfd pfd = {.fd = g->ready_rd, .events = POLLIN};
  int r;
  do r = poll(&pfd, 1, GATE_START_MS);
  while (r < 0 && errno == EINTR);
  if (r == 0) return ETIMEDOUT;
  char c;
  ssize_t n;
  do n = read(g->ready_rd, &c, 1);
  while (n < 0 && errno == EINTR);
  return n == 1 ? 0 : EPIPE;
}

void wb_gate_close(wb_gate_pipes *g) {
  wb_close_fd(&g->go_rd);
  wb_close_fd(&g->go_wr);
  wb_close_fd(&g->ready_rd);
  wb_close_fd(&g->ready_wr);
}

const char *wb_gate_binary(void) {
  if (!gate_binary[0]) {
    ssize_t n = readlink("/proc/self/exe", gate_binary, sizeof gate_binary - 1);
    gate_binary[n > 0 ? n : 0] = 0;
  }
  return gate_binary[0] && access(gate_binary, X_OK) == 0 ? gate_binary : "/proc/self/exe";
}

const char **wb_gate_argv(const char *exe, const char *const *argv) {
  if (!gate_host) {
    errno = ENOTSUP;
    return NULL;
  }
  size_t n = 0;
  while (argv[n]) n++;
  const char **out = malloc((n + 4) * sizeof *out);
  if (!out) return NULL;
  out[0] = "wb";
  out[1] = "__gate";
  out[2] = exe;
  memcpy(out + 3, argv, (n + 1) * sizeof *out);
  return out;
}
