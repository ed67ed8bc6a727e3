/* What a spawned child executes (see core/lspawn.h): the program found like execvp, its
 * environment, and the gate that holds a child between its creation and its exec. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lspawn.h"

extern char **environ;

#define GATE_START_MS 10000 /* longest wait for a held child's gate to start */

static int gate_host;          /* this process's executable understands `__gate` */
static char gate_binary[4096]; /* its path, read on first use */

/* ---- PATH lookup and environment -------------------------------------------------------- */

static int check_exec(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return EACCES;
  return access(path, X_OK) == 0 ? 0 : errno;
}

int wb_which(const char *name, const char *path, char *out, size_t outlen) {
  if (!*name) return ENOENT;
  if (strchr(name, '/')) {
    if (strlen(name) >= outlen) return ENAMETOOLONG;
    strcpy(out, name);
    return check_exec(out);
  }
  if (!path) path = "/bin:/usr/bin";
  int result = ENOENT;
  for (const char *p = path;;) {
    const char *end = strchrnul(p, ':');
    int dlen = (int)(end - p);
    int n = snprintf(out, outlen, "%.*s/%s", dlen ? dlen : 1, dlen ? p : ".", name);
    if (n < 0 || (size_t)n >= outlen) {
      result = ENAMETOOLONG;
    } else {
      int e = check_exec(out);
      if (e == 0) return 0;
      if (e == EACCES) result = EACCES;
    }
    if (!*end) break;
    p = end + 1;
  }
  return result;
}

static int same_name(const char *a, const char *b) {
  size_t n = strcspn(a, "=");
  return strncmp(a, b, n) == 0 && b[n] == '=';
}

char **wb_spawn_env(const wb_spawn_spec *s, const char **path) {
  size_t nenv = 0, nadd = 0;
  while (environ[nenv]) nenv++;
  while (s->env && s->env[nadd]) nadd++;
  char **envp = malloc((nenv + nadd + 1) * sizeof *envp);
  if (!envp) return NULL;
  size_t n = 0;
  for (size_t i = 0; !s->env_replace && i < nenv; i++) {
    size_t j = 0;
    while (j < nadd && !same_name(s->env[j], environ[i])) j++;
    if (j == nadd) envp[n++] = environ[i];
  }
  *path = getenv("PATH");
  for (size_t j = 0; j < nadd; j++) {
    envp[n++] = (char *)s->env[j];
    if (strncmp(s->env[j], "PATH=", 5) == 0) *path = s->env[j] + 5;
  }
  envp[n] = NULL;
  return envp;
}

/* ---- the gate --------------------------------------------------------------------------- */

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

/* A pipe whose ends are above WB_GATE_READY_FD, so the gate's dup2s cannot clobber one another. */
static int gate_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  int e = 0;
  for (int i = 0; i < 2; i++) {
    if (fds[i] > WB_GATE_READY_FD) continue;
    int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, WB_GATE_READY_FD + 1);
    if (moved < 0) e = errno;
    close(fds[i]);
    fds[i] = moved;
  }
  if (!e) return 0;
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0) close(fds[i]);
  return e;
}

int wb_gate_prepare(wb_exec_plan *plan, wb_gate_pipes *g) {
  int go[2], ready[2], e;
  if ((e = gate_pipe(go)) != 0) return e;
  g->go_rd = go[0];
  g->go_wr = go[1];
  if ((e = gate_pipe(ready)) != 0) return e;
  g->ready_rd = ready[0];
  g->ready_wr = ready[1];
  wb_plan_dup(plan, go[0], WB_GATE_FD);
  wb_plan_dup(plan, ready[1], WB_GATE_READY_FD);
  plan->close_from = WB_GATE_READY_FD + 1;
  return 0;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

int wb_gate_await(wb_gate_pipes *g) {
  close_fd(&g->ready_wr);
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
  close_fd(&g->go_rd);
  close_fd(&g->go_wr);
  close_fd(&g->ready_rd);
  close_fd(&g->ready_wr);
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
