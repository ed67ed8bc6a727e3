/* The process tree under a pid, from /proc/PID/stat (see core/proctree.h). */
#define _GNU_SOURCE
#include "proctree.h"
#include "ticker.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SCAN 65536

/* The parent of pid from /proc/PID/stat, or -1. */
static int parent_of(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if (wb_read_small(path, buf, sizeof buf) <= 0) return -1;
  const char *rp = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
  int ppid;
  return rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 ? ppid : -1;
}

/* The index of pid in the previous scan, or -1. */
static int previous(const wb_proctree *t, pid_t pid) {
  int lo = 0, hi = t->n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (t->pid[mid] == pid) return mid;
    if (t->pid[mid] < pid) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

typedef struct entry {
  pid_t pid, ppid;
} entry;

static int by_pid(const void *a, const void *b) {
  pid_t x = ((const entry *)a)->pid, y = ((const entry *)b)->pid;
  return (x > y) - (x < y);
}

/* Root first, then each pass adds the children of what the previous pass added (e sorted by pid). */
static int breadth_first(const entry *e, int m, pid_t root, pid_t *out, int max) {
  int n = 0;
  out[n++] = root;
  for (int from = 0; from < n && n < max;) {
    int to = n;
    for (int i = 0; i < m && n < max; i++)
      for (int j = from; j < to; j++)
        if (e[i].ppid == out[j] && e[i].pid != root) {
          out[n++] = e[i].pid;
          break;
        }
    from = to;
  }
  return n;
}

/* Lists /proc into e (at most MAX_SCAN), each pid's parent read from stat unless t knew it as a
 * non-member. Returns the count, or -1 when /proc cannot be listed. */
static int list_proc(const wb_proctree *t, entry *e) {
  DIR *d = opendir("/proc");
  if (!d) return -1;
  int m = 0;
  struct dirent *de;
  while ((de = readdir(d)) && m < MAX_SCAN) {
    if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
    pid_t pid = (pid_t)atoi(de->d_name);
    int k = previous(t, pid);
    int ppid = k >= 0 && !t->member[k] ? t->ppid[k] : parent_of(pid);
    if (ppid > 0) e[m].pid = pid, e[m++].ppid = ppid;
  }
  closedir(d);
  qsort(e, (size_t)m, sizeof *e, by_pid);
  return m;
}

int wb_proctree_scan(wb_proctree *t, pid_t root, pid_t *out, int max) {
  if (max < 1) return 0;
  entry *e = malloc(MAX_SCAN * sizeof *e);
  int m = e ? list_proc(t, e) : -1;
  int n = breadth_first(e, m < 0 ? 0 : m, root, out, max);
  if (m >= 0 && m > t->cap) {
    pid_t *p = realloc(t->pid, (size_t)m * sizeof *p), *q = p ? realloc(t->ppid, (size_t)m * sizeof *q) : NULL;
    unsigned char *f = q ? realloc(t->member, (size_t)m) : NULL;
    if (p) t->pid = p;
    if (q) t->ppid = q;
    if (f) t->member = f, t->cap = m;
  }
  t->n = m >= 0 && m <= t->cap ? m : 0; /* forget everything rather than keep a stale half */
  for (int i = 0; i < t->n; i++) {
    t->pid[i] = e[i].pid, t->ppid[i] = e[i].ppid, t->member[i] = 0;
  }
  for (int j = 0; j < n; j++) {
    int k = previous(t, out[j]);
    if (k >= 0) t->member[k] = 1;
  }
  free(e);
  return n;
}

void wb_proctree_free(wb_proctree *t) {
  free(t->pid);
  free(t->ppid);
  free(t->member);
  *t = (wb_proctree){ 0 };
}
