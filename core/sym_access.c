/* The users of a profiled process tree and the files they could read (see core/sym_access.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sym.h"
#include "sym_access.h"
#include "ticker.h"
#include "unwind.h"

#define DAC_CAPS ((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH))
#define STRANGER 0xfffffffeu /* an id no file belongs to, nor any group */
#define TREE_MAX 4096

struct wb_user_verdict {
  char *path;
  dev_t dev;
  ino_t ino;
  int readable;
  uint32_t uid; /* who could not read it */
};

/* Whether this thread may read every file (CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH in effect). */
static int self_reads_all(void) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  return syscall(SYS_capget, &h, d) == 0 && (d[0].effective & DAC_CAPS) != 0;
}

/* Room for one more of the n elements (size bytes each) of the array *p, *cap allocated; 0 or -1. */
static int room(void *p, size_t n, size_t *cap, size_t size) {
  if (n < *cap) return 0;
  size_t more = *cap ? *cap * 2 : 16;
  void *q = realloc(*(void **)p, more * size);
  if (!q) return -1;
  *(void **)p = q;
  *cap = more;
  return 0;
}

static int same_user(const wb_user *a, const wb_user *b) {
  return a->uid == b->uid && a->gid == b->gid && a->reads_all == b->reads_all && a->ngroups == b->ngroups &&
         memcmp(a->groups, b->groups, a->ngroups * sizeof *a->groups) == 0;
}

static void clear_verdicts(wb_users *s) {
  for (size_t i = 0; i < s->nv; i++) free(s->v[i].path);
  s->nv = 0;
}

void wb_users_add(wb_users *s, const wb_user *u) {
  static const wb_user stranger = {.uid = STRANGER, .gid = STRANGER};
  for (size_t i = 0; i < s->n; i++)
    if (same_user(&s->u[i], u)) return;
  if (s->n == WB_USERS_MAX) { /* no room: the last becomes (or stays) a stranger */
    if (same_user(&s->u[s->n - 1], &stranger)) return;
    u = &stranger, s->n--;
  }
  s->u[s->n++] = *u;
  s->gen++;
  clear_verdicts(s);
}

void wb_users_add_ids(wb_users *s, uint32_t uid, uint32_t gid) {
  for (size_t i = 0; i < s->n; i++)
    if (s->u[i].uid == uid && s->u[i].gid == gid) return;
  wb_users_add(s, &(wb_user){.uid = uid, .gid = gid, .reads_all = uid == 0});
}

void wb_users_add_stranger(wb_users *s) { wb_users_add(s, &(wb_user){.uid = STRANGER, .gid = STRANGER}); }

/* The numbers after a "Name:" line's tab of /proc/PID/status, at most max; their count. */
static int status_numbers(const char *text, const char *name, unsigned long long *out, int max, int hex) {
  size_t len = strlen(name);
  const char *p = text;
  while (p && strncmp(p, name, len) != 0) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p) return -1;
  p += len;
  int n = 0;
  while (n < max) {
    char *end;
    p += strspn(p, " \t");
    if (*p == '\n' || !*p) break;
    out[n] = strtoull(p, &end, hex ? 16 : 10);
    if (end == p) break;
    n++;
    p = end;
  }
  return n;
}

/* Whether pid lives in wb's user namespace (where its capabilities are over every file). */
static int same_userns(pid_t pid) {
  static struct stat mine;
  static int known;
  char path[64];
  struct stat theirs;
  if (!known) known = stat("/proc/self/ns/user", &mine) == 0 ? 1 : -1;
  snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
  return known == 1 && stat(path, &theirs) == 0 && mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
}

int wb_users_observe(wb_users *s, pid_t pid) {
  char path[64], text[16384];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  if (wb_read_small(path, text, sizeof text) <= 0) return -1;
  unsigned long long uids[4], gids[4], groups[WB_USER_GROUPS], cap = 0;
  int ng = status_numbers(text, "Groups:", groups, WB_USER_GROUPS, 0);
  if (status_numbers(text, "Uid:", uids, 4, 0) != 4 || status_numbers(text, "Gid:", gids, 4, 0) != 4 || ng < 0 ||
      status_numbers(text, "CapEff:", &cap, 1, 1) != 1) {
    wb_users_add_stranger(s);
    return 0;
  }
  wb_user u = {.uid = (uint32_t)uids[3], .gid = (uint32_t)gids[3], .ngroups = (uint32_t)ng,
               .reads_all = (cap & DAC_CAPS) && same_userns(pid)};
  for (int i = 0; i < ng; i++) u.groups[i] = (uint32_t)groups[i];
  wb_users_add(s, &u); /* the file-system ids: what the process itself may open */
  u.uid = (uint32_t)uids[0], u.gid = (uint32_t)gids[0];
  u.reads_all = u.reads_all && u.uid == 0; /* the real user reads all only as root */
  wb_users_add(s, &u);
  return 0;
}

/* Adds pid to the sorted set s->seen; 1 when it was not there (or there is no room to say). */
static int first_sight(wb_users *s, pid_t pid) {
  size_t lo = 0, hi = s->nseen;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->seen[mid] < pid) lo = mid + 1;
    else hi = mid;
  }
  if (lo < s->nseen && s->seen[lo] == pid) return 0;
  if (room(&s->seen, s->nseen, &s->capseen, sizeof *s->seen) != 0) return 1;
  memmove(s->seen + lo + 1, s->seen + lo, (s->nseen - lo) * sizeof *s->seen);
  s->seen[lo] = pid;
  s->nseen++;
  return 1;
}

int wb_users_observe_tree(wb_users *s, pid_t root) {
  pid_t pids[TREE_MAX];
  int n = wb_proctree_scan(&s->tree, root, pids, TREE_MAX), read = 0, again = 0;
  for (int i = 0; i < n; i++) {
    if (first_sight(s, pids[i])) read += wb_users_observe(s, pids[i]) == 0;
    else pids[again++] = pids[i];
  }
  for (int k = 0; k < again && k < WB_USERS_BUDGET; k++) read += wb_users_observe(s, pids[(s->turn + k) % again]) == 0;
  if (again) s->turn = (s->turn + WB_USERS_BUDGET) % (size_t)again;
  return read;
}

/* ---- opening a file as a user ---------------------------------------------------------------- */

struct probe {
  const wb_user *u;
  const char *path;
  int fd;
};

/* Takes p->u's ids on this thread only (raw system calls: the C library's wrappers would apply
 * them to every thread), drops the DAC capabilities, and opens p->path. */
static void *probe_main(void *arg) {
  struct probe *p = arg;
  gid_t groups[WB_USER_GROUPS];
  for (uint32_t i = 0; i < p->u->ngroups; i++) groups[i] = p->u->groups[i];
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_setgroups, (size_t)p->u->ngroups, groups) != 0) return NULL;
  syscall(SYS_setfsgid, p->u->gid);
  syscall(SYS_setfsuid, p->u->uid);
  /* setfs*id report no error: an invalid id (-1) makes them return the current one */
  if ((uint32_t)syscall(SYS_setfsuid, -1) != p->u->uid || (uint32_t)syscall(SYS_setfsgid, -1) != p->u->gid) return NULL;
  if (syscall(SYS_capget, &h, d) != 0) return NULL;
  d[0].effective &= ~DAC_CAPS;
  if (syscall(SYS_capset, &h, d) != 0) return NULL;
  p->fd = open(p->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  return NULL;
}

/* 1 when u can open path and finds the file dev/ino there. */
static int user_opens(const wb_user *u, const char *path, dev_t dev, ino_t ino) {
  struct probe p = {u, path, -1};
  pthread_t t;
  if (wb_thread_start(&t, probe_main, &p) != 0) return 0;
  pthread_join(t, NULL);
  if (p.fd < 0) return 0;
  struct stat st;
  int same = fstat(p.fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev && st.st_ino == ino;
  close(p.fd);
  return same;
}

int wb_users_may_read(wb_users *s, const char *path, dev_t dev, ino_t ino, uint32_t *uid) {
  static int privileged = -1;
  if (privileged < 0) privileged = self_reads_all();
  if (!privileged) return 1;
  for (size_t i = 0; i < s->nv; i++)
    if (s->v[i].dev == dev && s->v[i].ino == ino && strcmp(s->v[i].path, path) == 0) {
      *uid = s->v[i].uid;
      return s->v[i].readable;
    }
  wb_user_verdict v = {.dev = dev, .ino = ino, .readable = 1};
  for (size_t i = 0; i < s->n && v.readable; i++)
    if (!s->u[i].reads_all && !user_opens(&s->u[i], path, dev, ino)) v.readable = 0, v.uid = s->u[i].uid;
  *uid = v.uid;
  if (room(&s->v, s->nv, &s->capv, sizeof *s->v) == 0 && (v.path = strdup(path))) s->v[s->nv++] = v;
  return v.readable;
}

/* Notes that uid could not read path's part; once per path and part. */
static void deny(wb_users *s, const char *path, uint32_t uid, int part) {
  for (size_t i = 0; i < s->ndenied; i++)
    if (s->denied[i].part == part && strcmp(s->denied[i].path, path) == 0) return;
  char *copy = room(&s->denied, s->ndenied, &s->capdenied, sizeof *s->denied) == 0 ? strdup(path) : NULL;
  if (copy) s->denied[s->ndenied++] = (wb_denial){copy, uid, part};
}

int wb_users_may_name(wb_users *s, const char *path, const wb_elf *e) {
  uint32_t uid = 0;
  if (!wb_users_may_read(s, path, e->dev, e->ino, &uid)) {
    deny(s, path, uid, WB_DENIED_FILE);
    return 0;
  }
  if (e->debug_file && !wb_users_may_read(s, e->debug_file, e->debug_dev, e->debug_ino, &uid)) {
    deny(s, path, uid, WB_DENIED_SYMBOLS);
    return 0;
  }
  return 1;
}

int wb_users_may_inline(wb_users *s, const char *path, wb_dwobj *o) {
  dev_t dev;
  ino_t ino;
  uint32_t uid = 0;
  const char *debug = wb_dwobj_debug_source(o, &dev, &ino);
  if (!debug || wb_users_may_read(s, debug, dev, ino, &uid)) return 1;
  deny(s, path, uid, WB_DENIED_DWARF);
  return 0;
}

void wb_users_free(wb_users *s) {
  clear_verdicts(s);
  free(s->v);
  free(s->seen);
  for (size_t i = 0; i < s->ndenied; i++) free(s->denied[i].path);
  free(s->denied);
  wb_proctree_free(&s->tree);
  *s = (wb_users){0};
}
