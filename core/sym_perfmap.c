/* The maps of a process: its executable mappings from /proc/PID/maps (wb_maps_each, shared by
 * wb.sym and wb.unwind), and the JIT maps of perf's convention, /tmp/perf-PID.map: one "START
 * SIZE name" line (hex) per piece of generated code, written by the program itself (CPython 3.12+
 * with -X perf or PYTHONPERFSUPPORT=1 names each Python function's trampoline
 * "py::qualname:file"). wb.sym names addresses outside every mapped file with them (core/sym.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym.h"
#include "ticker.h"

#define MAPS_MAX (64u << 20) /* bytes of /proc/PID/maps read, at most (a million mappings) */
#define PF_EXITING 0x4        /* include/linux/sched.h: the task has begun to exit */

/* Whether process pid has begun to exit (or is gone): its leader's state and flags in /proc/PID/stat. */
static int exiting(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  if (wb_read_small(path, buf, sizeof buf) <= 0) return 1;
  const char *rp = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
  char state;
  unsigned flags;
  if (!rp || sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2) return 1;
  return state == 'Z' || state == 'X' || state == 'x' || (flags & PF_EXITING);
}

/* The whole of /proc/PID/maps (NUL-terminated, *len bytes; at most MAPS_MAX, cut at a line), or
 * NULL with errno. The kernel hands it over a read() at a time, each under its own hold of the
 * process's memory: a process that exits between two reads leaves a part (an EOF comes early). */
static char *read_maps(int pid, size_t *len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t cap = 64 << 10, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    if (n == cap) {
      if (cap >= MAPS_MAX) break;
      char *p = realloc(buf, 2 * cap + 1);
      if (!p) {
        free(buf);
        buf = NULL;
        errno = ENOMEM;
        break;
      }
      buf = p, cap *= 2;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int e = errno;
      free(buf);
      buf = NULL;
      errno = e;
    }
    if (got <= 0) break;
    n += (size_t)got;
  }
  close(fd);
  if (!buf) return NULL;
  if (n == cap) /* cut: up to the last whole line */
    while (n > 0 && buf[n - 1] != '\n') n--;
  buf[n] = 0;
  *len = n;
  return buf;
}

int wb_maps_each(int pid, int (*fn)(void *arg, uint64_t lo, uint64_t hi, uint64_t off, const char *path),
                 void *arg) {
  size_t len;
  char *text = read_maps(pid, &len);
  if (!text) return -1;
  if (exiting(pid)) { /* what was read may be a part of its mappings */
    free(text);
    errno = ESRCH;
    return -1;
  }
  int n = 0;
  for (char *line = text, *next; line < text + len; line = next) {
    char *nl = strchr(line, '\n');
    next = nl ? nl + 1 : text + len;
    if (nl) *nl = 0;
    unsigned long long lo, hi, off, ino;
    char perms[8];
    int name_at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*x:%*x %llu %n", &lo, &hi, perms, &off, &ino, &name_at) < 5) continue;
    if (perms[2] != 'x' || !name_at || !line[name_at]) continue;
    if (fn(arg, lo, hi, off, line + name_at) == 0) n++;
  }
  free(text);
  if (n == 0) { /* a zombie or a kernel thread: nothing mapped */
    errno = ESRCH;
    return -1;
  }
  return n;
}

typedef struct perfsym {
  uint64_t start, size;
  char *name;
} perfsym;

struct wb_perfmap {
  perfsym *syms; /* sorted by start */
  size_t n;
  off_t size; /* of the file when read */
};

static int by_start(const void *a, const void *b) {
  const perfsym *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

void wb_perfmap_free(wb_perfmap *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n; i++) free(m->syms[i].name);
  free(m->syms);
  free(m);
}

#define PERFMAP_MAX (256 << 20) /* bytes: a larger file is not read */

/* Whether a perf map owned by uid may name pid's code: root's, or its user's as perf requires;
 * once the process is gone (wb names its frames after the run), the user of one of the uids the
 * profiled tree ran as. */
static int owner_ok(int pid, uid_t uid, const uint32_t *uids, size_t nuids) {
  char proc[32];
  struct stat owner;
  if (uid == 0) return 1;
  snprintf(proc, sizeof proc, "/proc/%d", pid);
  if (stat(proc, &owner) == 0) return uid == owner.st_uid;
  for (size_t i = 0; i < nuids; i++)
    if (uids[i] == uid) return 1;
  return 0;
}

/* The map of pid, read again when the file grew since *old was read (*old is freed then); NULL
 * when there is none. /tmp is anyone's: the file is taken only when it is a regular file (not a
 * FIFO that would block, not a symbolic link) whose owner passes owner_ok (uids: the tree's users),
 * and at most PERFMAP_MAX bytes: its size when opened, however it grows while read. */
wb_perfmap *wb_perfmap_load(int pid, wb_perfmap *old, const uint32_t *uids, size_t nuids) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", pid);
  struct stat st;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return old;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > PERFMAP_MAX ||
      !owner_ok(pid, st.st_uid, uids, nuids) || (old && old->size == st.st_size)) {
    close(fd);
    return old;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return old;
  }
  wb_perfmap *m = calloc(1, sizeof *m);
  size_t cap = 0;
  char line[1024];
  off_t left = st.st_size; /* what fstat saw: a file its owner keeps extending is read no further */
  while (m && left > 0 && fgets(line, sizeof line, f)) {
    left -= (off_t)strlen(line);
    unsigned long long start, size;
    int at = 0;
    if (sscanf(line, "%llx %llx %n", &start, &size, &at) < 2 || !at) continue;
    line[strcspn(line, "\n")] = 0;
    for (char *c = line + at; *c; c++) /* ';' separates folded frames */
      if (*c == ';') *c = ',';
    if (m->n == cap) {
      cap = cap ? cap * 2 : 256;
      perfsym *p = realloc(m->syms, cap * sizeof *p);
      if (!p) break;
      m->syms = p;
    }
    if (!(m->syms[m->n].name = strdup(line + at))) break;
    m->syms[m->n].start = start, m->syms[m->n].size = size;
    m->n++;
  }
  fclose(f);
  if (!m) return old;
  m->size = st.st_size;
  qsort(m->syms, m->n, sizeof *m->syms, by_start);
  wb_perfmap_free(old);
  return m;
}

const char *wb_perfmap_lookup(const wb_perfmap *m, uint64_t addr, uint64_t *off) {
  if (!m) return NULL;
  size_t lo = 0, hi = m->n;
  while (lo < hi) { /* the first symbol starting after addr */
    size_t mid = (lo + hi) / 2;
    if (m->syms[mid].start <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  const perfsym *s = &m->syms[lo - 1];
  if (addr >= s->start + s->size) return NULL;
  *off = addr - s->start;
  return s->name;
}
