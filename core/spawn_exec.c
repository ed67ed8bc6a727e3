/* What a spawned child executes (see core/spawn.h): the program found like execvp, its
 * environment, and the spawn engine's descriptor helpers. The gate is in core/spawn_gate.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

extern char **environ;

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

/* ---- descriptors ------------------------------------------------------------------------ */

void wb_close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

int wb_fd_above(int *fd, int min) {
  if (*fd >= min) return 0;
  int moved = fcntl(*fd, F_DUPFD_CLOEXEC, min);
  int e = errno;
  close(*fd);
  *fd = moved;
  errno = e;
  return moved < 0 ? -1 : 0;
}

int wb_pipe_above(int fds[2], int min) {
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  if (wb_fd_above(&fds[0], min) == 0 && wb_fd_above(&fds[1], min) == 0) return 0;
  int e = errno;
  wb_close_fd(&fds[0]);
  wb_close_fd(&fds[1]);
  errno = e;
  return -1;
}

void wb_reap(pid_t pid) {
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}
