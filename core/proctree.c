/* The process tree under a pid, from /proc/PID/stat (see core/proctree.h). */
#define _GNU_SOURCE
#include "proctree.h"
#include "ticker.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SCAN 8192

/* The parent of pid from /proc/<name>/stat, or -1. */
static int parent_of(const char *name) {
  char path[300], buf[512];
  snprintf(path, sizeof path, "/proc/%s/stat", name);
  if (wb_read_small(path, buf, sizeof buf) <= 0) return -1;
  const char *rp = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
  int ppid;
  return rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 ? ppid : -1;
}

int wb_descendants(pid_t root, pid_t *out, int max) {
  if (max < 1) return 0;
  int n = 0;
  out[n++] = root;
  DIR *d = opendir("/proc");
  if (!d) return n;
  pid_t *pids = malloc(MAX_SCAN * sizeof *pids), *parents = malloc(MAX_SCAN * sizeof *parents);
  int m = 0;
  struct dirent *e;
  while (pids && parents && (e = readdir(d)) && m < MAX_SCAN) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    int ppid = parent_of(e->d_name);
    if (ppid > 0) pids[m] = (pid_t)atoi(e->d_name), parents[m++] = (pid_t)ppid;
  }
  closedir(d);
  /* breadth first: each pass adds the children of what the previous pass added */
  for (int from = 0; from < n && n < max;) {
    int to = n;
    for (int i = 0; i < m && n < max; i++)
      for (int j = from; j < to; j++)
        if (parents[i] == out[j]) {
          out[n++] = pids[i];
          break;
        }
    from = to;
  }
  free(pids);
  free(parents);
  return n;
}
