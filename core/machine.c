/* The machine's load (see core/machine.h). Reads are bounded (wb_read_small), of procfs and
 * cgroupfs only. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine.h"
#include "ticker.h"

void wb_machine_sample_now(wb_machine_sample *s) {
  char buf[512];
  s->busy_ticks = s->steal_ticks = s->psi_some_us = -1;
  s->runnable = -1;
  unsigned long long v[8] = {0};
  /* "cpu  user nice system idle iowait irq softirq steal ...": the first line, whatever the
   * number of CPUs after it */
  if (wb_read_small("/proc/stat", buf, sizeof buf) > 0 &&
      sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
             &v[6], &v[7]) == 8) {
    s->busy_ticks = (int64_t)(v[0] + v[1] + v[2] + v[5] + v[6]);
    s->steal_ticks = (int64_t)v[7];
  }
  const char *total;
  if (wb_read_small("/proc/pressure/cpu", buf, sizeof buf) > 0 && strncmp(buf, "some ", 5) == 0 &&
      (total = strstr(buf, " total=")) && total < strchr(buf, '\n'))
    s->psi_some_us = strtoll(total + 7, NULL, 10);
  int running;
  if (wb_read_small("/proc/loadavg", buf, sizeof buf) > 0 && sscanf(buf, "%*s %*s %*s %d/", &running) == 1)
    s->runnable = running;
}

long wb_machine_hz(void) {
  static long hz;
  if (!hz) hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
  return hz;
}

/* The CPUs of cgroup directory dir's bandwidth limit (v2 cpu.max, else v1 cfs files); 0 when
 * none or unreadable. */
static double quota_of(const char *dir) {
  char path[4300], buf[128];
  snprintf(path, sizeof path, "%s/cpu.max", dir);
  if (wb_read_small(path, buf, sizeof buf) > 0) {
    long long quota, period;
    if (strncmp(buf, "max", 3) == 0 || sscanf(buf, "%lld %lld", &quota, &period) != 2 || quota <= 0 ||
        period <= 0)
      return 0;
    return (double)quota / (double)period;
  }
  long long quota = -1, period = 0;
  snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
  if (wb_read_small(path, buf, sizeof buf) > 0) quota = strtoll(buf, NULL, 10);
  snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
  if (wb_read_small(path, buf, sizeof buf) > 0) period = strtoll(buf, NULL, 10);
  return quota > 0 && period > 0 ? (double)quota / (double)period : 0;
}

/* The tightest limit on the path from cgroup `rel` up to the root of the hierarchy at `mount`. */
static double tightest(const char *mount, const char *rel, double best) {
  char dir[4200];
  int n = snprintf(dir, sizeof dir, "%s%s", mount, rel);
  if (n < 0 || (size_t)n >= sizeof dir) return best;
  size_t root = strlen(mount);
  for (;;) {
    double q = quota_of(dir);
    if (q > 0 && (best == 0 || q < best)) best = q;
    char *slash = strrchr(dir, '/');
    if (!slash || (size_t)(slash - dir) < root) break;
    *slash = 0;
  }
  return best;
}

/* Whether comma-separated list has item. */
static int has_item(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, item, n) == 0 && (p[n] == ',' || p[n] == 0)) return 1;
  return 0;
}

int wb_machine_cpus(double *quota_cpus) {
  cpu_set_t set;
  int count = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  double best = 0;
  char buf[4096];
  if (quota_cpus && wb_read_small("/proc/self/cgroup", buf, sizeof buf) > 0) {
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
      if (!c2 || c2[1] != '/') continue;
      *c2 = 0;
      const char *controllers = c1 + 1, *rel = c2 + 1;
      if (strstr(rel, "/..")) continue;
      if (!*controllers) { /* cgroup v2: unified, or hybrid's second mount */
        best = tightest("/sys/fs/cgroup", rel, best);
        best = tightest("/sys/fs/cgroup/unified", rel, best);
      } else if (has_item(controllers, "cpu")) { /* v1: mounted by its controllers' names */
        char mount[256];
        snprintf(mount, sizeof mount, "/sys/fs/cgroup/%s", controllers);
        best = tightest(mount, rel, best);
        if (strcmp(controllers, "cpu") != 0) best = tightest("/sys/fs/cgroup/cpu", rel, best);
      }
    }
  }
  if (quota_cpus) *quota_cpus = best;
  return count;
}
