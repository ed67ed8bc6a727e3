/* The process engine (see core/spawn.h) and the wb_child_* functions of core/wb.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exitstats.h"
#include "internal.h"
#include "reaper.h"
#include "spawn.h"

#define READ_CHUNK 65536
#define DRAIN_READS 32                /* reads per stream after the leader was reaped */
#define SETTLE_NS 1000000000LL        /* after SIGKILL: longest wait for the group to empty */
#define GROUP_TICK_NS 20000000LL      /* re-check interval while waiting for a group to empty */

static wb_child *live;      /* registry of unfinished children */
static pid_t *lingering;    /* groups whose finished leader left members behind */
static size_t nlingering, lingering_cap;

/* ---- descriptors ---------------------------------------------------------------------- */

/* Opens path close-on-exec above 0..2, so that the child's moves onto stdio cannot clobber it;
 * guarded (wb_guard_open: a log never written through a planted link, no FIFO blocks wb), except
 * a child's stdin (as_named: the file the user gave, whatever it is, which wb never reads); -1
 * with errno on failure. */
static int open_cloexec(const char *path, int flags, int as_named) {
  int fd;
  do fd = as_named ? open(path, flags | O_CLOEXEC) : wb_guard_open(path, flags, 0666);
  while (fd < 0 && errno == EINTR);
  return fd < 0 || wb_fd_above(&fd, 3) == 0 ? fd : -1;
}

/* ---- spawning --------------------------------------------------------------------------- */

struct setup {
  wb_exec_plan plan; /* plan.dir_fd: the cwd, opened here and closed after the spawn */
  int child_fds[3];  /* the child's ends, closed in the parent after the spawn */
  wb_gate_pipes gate; /* held */
};

static const char *const stream_names[3] = {"stdin", "stdout", "stderr"};

/* /dev/null, opened once (close-on-exec, above 2) and dup'ed into children: cheaper than an open
 * in every child. Checked before each use, since a host of the C API may have closed it and
 * reused the number. -1 with errno when it cannot be opened. */
static int null_fd(void) {
  static int fd = -1;
  static dev_t rdev;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == rdev) return fd;
  fd = open_cloexec("/dev/null", O_RDWR, 1);
  if (fd >= 0 && fstat(fd, &st) == 0) rdev = st.st_rdev;
  return fd;
}

/* Prepares stream `fd` (0, 1, 2) of the child. Returns 0 or an errno, with err filled. */
static int setup_stream(struct setup *su, wb_child *c, int fd, const wb_spawn_io *io, char *err,
                        size_t errlen) {
  int pipefd[2], e;
  int out_flags = O_WRONLY | O_CREAT | (io->append ? O_APPEND : O_TRUNC);
  wb_stream *st = fd ? &c->out[fd - 1] : NULL;
  switch (io->mode) {
  case WB_IO_INHERIT:
    return 0;
  case WB_IO_NULL:
    if ((e = null_fd()) < 0) goto fail;
    wb_plan_dup(&su->plan, e, fd);
    return 0;
  case WB_IO_MERGE:
    wb_plan_dup(&su->plan, 1, 2);
    return 0;
  case WB_IO_FILE:
    if ((su->child_fds[fd] = open_cloexec(io->path, fd ? out_flags : O_RDONLY, fd == 0)) < 0) goto fail_path;
    wb_plan_dup(&su->plan, su->child_fds[fd], fd);
    return 0;
  case WB_IO_DATA:
    if (!(c->in_data = malloc(io->len + 1))) errno = ENOMEM;
    if (!c->in_data || wb_pipe_above(pipefd, 3) != 0) goto fail;
    memcpy(c->in_data, io->data, io->len);
    c->in_len = io->len;
    su->child_fds[0] = pipefd[0];
    c->in_fd = pipefd[1];
    fcntl(c->in_fd, F_SETFL, O_NONBLOCK);
    wb_plan_dup(&su->plan, pipefd[0], 0);
    return 0;
  case WB_IO_TEE:
    if ((st->file_fd = open_cloexec(io->path, out_flags, 0)) < 0) goto fail_path;
    /* fallthrough */
  case WB_IO_CAPTURE:
  case WB_IO_LINES:
    if (wb_pipe_above(pipefd, 3) != 0) goto fail;
    su->child_fds[fd] = pipefd[1];
    st->fd = pipefd[0];
    st->mode = io->mode;
    fcntl(st->fd, F_SETFL, O_NONBLOCK);
    wb_plan_dup(&su->plan, pipefd[1], fd);
    return 0;
  }
  snprintf(err, errlen, "spawn: %s: unknown mode %d", stream_names[fd], (int)io->mode);
  return EINVAL;
fail_path:
  e = errno;
  snprintf(err, errlen, "spawn: %s %s: %s", stream_names[fd], io->path, strerror(e));
  return e;
fail:
  e = errno;
  snprintf(err, errlen, "spawn: %s: %s", stream_names[fd], strerror(e));
  return e;
}

static void free_child(wb_child *c) {
  for (int i = 0; i < 2; i++) {
    wb_close_fd(&c->out[i].fd);
    wb_close_fd(&c->out[i].file_fd);
    free(c->out[i].buf);
    free(c->out[i].marks);
  }
  wb_close_fd(&c->in_fd);
  wb_close_fd(&c->pidfd);
  wb_close_fd(&c->gate_fd);
  free(c->in_data);
  free(c);
}

/* Held start: the child runs the wb binary as the gate (see core/spawn_gate.c). */
static int setup_gate(struct setup *su, wb_child *c, const char *exe, const char *const *argv,
                      const char ***gate_argv) {
  if (!(*gate_argv = wb_gate_argv(exe, argv))) return errno;
  int e = wb_gate_prepare(&su->plan, &su->gate);
  c->gate_fd = su->gate.go_wr;
  su->gate.go_wr = -1;
  return e;
}

/* Starts the child's timeout, counted from start_ns. */
static void arm(wb_child *c) {
  if (c->timeout_ns >= 0) c->deadline_ns = c->start_ns + (c->timeout_ns > 0 ? c->timeout_ns : 1);
}

wb_child *wb_spawn(const wb_spawn_spec *s, char *err, size_t errlen, int *errnum) {
  wb_child *c = calloc(1, sizeof *c);
  const char *path = NULL;
  char **envp = c ? wb_spawn_env(s, &path) : NULL;
  if (!envp) {
    free(c);
    snprintf(err, errlen, "spawn: %s", strerror(ENOMEM));
    *errnum = ENOMEM;
    return NULL;
  }
  c->pidfd = c->in_fd = c->gate_fd = -1;
  c->own_peak_kb = -1;
  c->own_wall_ns = -1;
  for (int i = 0; i < 2; i++) c->out[i].fd = c->out[i].file_fd = -1;
  struct setup su = {.plan = {.dir_fd = -1, .close_from = 3}, .child_fds = {-1, -1, -1},
                     .gate = {-1, -1, -1, -1}};
  su.plan.close_from = 3;
  const char **gate_argv = NULL;
  char exe[4096];
  int e = strlen(s->argv[0]) >= sizeof exe ? ENAMETOOLONG : 0;
  /* a held child execs only after its release, too late to fail the spawn: its program is
   * checked now (but a relative path is the child's cwd's to resolve) */
  int checked = !strchr(s->argv[0], '/') || (s->held && (s->argv[0][0] == '/' || !s->cwd));
  if (!e && !checked) strcpy(exe, s->argv[0]);
  else if (!e) e = wb_which(s->argv[0], path, exe, sizeof exe);
  if (e) {
    snprintf(err, errlen, "spawn: %s: %s", s->argv[0], strerror(e));
    goto fail;
  }
  if (s->cwd) {
    su.plan.dir_fd = open_cloexec(s->cwd, O_PATH | O_DIRECTORY, 0);
    if (su.plan.dir_fd < 0) {
      e = errno;
      snprintf(err, errlen, "spawn: cwd %s: %s", s->cwd, strerror(e));
      goto fail;
    }
  }
  for (int fd = 0; fd < 3; fd++)
    if ((e = setup_stream(&su, c, fd, &s->io[fd], err, errlen)) != 0) goto fail;
  if (s->held && (e = setup_gate(&su, c, exe, s->argv, &gate_argv)) != 0) {
    snprintf(err, errlen, "spawn: held start: %s",
             e == ENOTSUP ? "needs the wb binary (the gate)" : strerror(e));
    goto fail;
  }
  su.plan.path = s->held ? wb_gate_binary() : exe;
  su.plan.argv = (char *const *)(s->held ? gate_argv : s->argv);
  su.plan.envp = envp;

  c->cpus_allowed = wb_machine_cpus(NULL);
  c->exits_since = wb_exits_drain();
  wb_machine_sample_now(&c->machine_start);
  c->start_ns = wb_clock_ns();
  e = wb_exec_start(&su.plan, &c->pid);
  if (e) {
    snprintf(err, errlen, "spawn: %s: %s", s->argv[0], strerror(e));
    goto fail;
  }
  wb_reaper_watch(c->pid);
  /* Without pidfd_open (ENOSYS: kernels before 5.3, valgrind) the loop polls for exits. */
  c->pidfd = pidfd_open(c->pid, 0);
  int pidfd_failed = c->pidfd < 0 && errno != ENOSYS;
  if (pidfd_failed) e = errno;
  else if (s->held) e = wb_gate_await(&su.gate);
  if (e) {
    snprintf(err, errlen, pidfd_failed ? "spawn: pidfd_open: %s" : "spawn: held start: the gate did not start: %s",
             strerror(e));
    kill(c->pid, SIGKILL);
    wb_reap(c->pid);
    goto fail;
  }
  if (c->in_fd >= 0 && c->in_len == 0) wb_close_fd(&c->in_fd);
  c->grace_ns = s->grace_ns > 0 ? s->grace_ns : 0;
  c->timeout_ns = s->timeout_ns;
  if (!s->held) arm(c);
  c->next = live;
  if (live) live->prev = c;
  live = c;
  goto done;
fail:
  free_child(c);
  c = NULL;
  *errnum = e;
done:
  for (int i = 0; i < 3; i++) wb_close_fd(&su.child_fds[i]);
  wb_close_fd(&su.plan.dir_fd);
  wb_gate_close(&su.gate);
  free(gate_argv);
  free(envp);
  return c;
}

int wb_spawn_release(wb_child *c) {
  if (c->gate_fd < 0) return 0;
  wb_machine_sample_now(&c->machine_start);
  c->start_ns = wb_clock_ns();
  char go = 1;
  ssize_t w;
  do w = write(c->gate_fd, &go, 1);
  while (w < 0 && errno == EINTR);
  int e = w == 1 ? 0 : errno;
  wb_close_fd(&c->gate_fd);
  arm(c);
  return e;
}

/* ---- signals, reaping, process groups --------------------------------------------------- */

static int group_alive(pid_t pgid) { return kill(-pgid, 0) == 0 || errno == EPERM; }

static void signal_child(wb_child *c, int signo) {
  if (!c->reaped && getpgid(c->pid) != c->pid) kill(c->pid, signo);
  kill(-c->pid, signo);
}

static void terminate(wb_child *c, int64_t now) {
  signal_child(c, SIGTERM);
  c->term_sent = 1;
  c->kill_at_ns = now + c->grace_ns;
}

/* SIGKILL to the group; the child is finished once the group is empty or SETTLE_NS passed. */
static void kill_group(wb_child *c, int64_t now) {
  signal_child(c, SIGKILL);
  c->kill_sent = 1;
  c->settle_until_ns = now + SETTLE_NS;
}

/* This process's peak RSS in KiB (VmHWM: the figure an exec hands down to a child), or the
 * rusage figure (no smaller) without /proc. It only grows, so it is read again only when asked
 * about a larger figure than the one last read. */
static long own_peak_rss_kb(long at_least) {
  static long peak = -1;
  if (peak >= 0 && at_least <= peak) return peak;
  char buf[4096];
  ssize_t n = -1;
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
  }
  const char *line = n > 0 ? (buf[n] = 0, strstr(buf, "\nVmHWM:")) : NULL;
  if (line) {
    peak = strtol(line + 7, NULL, 10);
  } else {
    struct rusage self;
    peak = getrusage(RUSAGE_SELF, &self) == 0 ? self.ru_maxrss : LONG_MAX;
  }
  return peak;
}

static void record(wb_child *c, int status, const struct rusage *ru) {
  c->reaped = c->status_known = 1;
  c->status = status;
  c->ru = *ru;
  c->end_ns = wb_clock_ns();
  wb_machine_sample_now(&c->machine_end);
  wb_exit_tree t;
  if (wb_exits_tree(c->pid, c->exits_since, &t) == 0) {
    c->runq_ns = t.runq_ns, c->runq_scope = 2;
    c->own_wall_ns = t.etime_us >= 0 ? t.etime_us * 1000 : -1;
    if (t.own_kb >= 0) { /* exact: no spawner's peak in it */
      c->own_peak_kb = t.own_kb, c->maxrss_kb = t.tree_kb, c->maxrss_bound = 0;
      return;
    }
  }
  c->own_peak_kb = -1, c->maxrss_kb = ru->ru_maxrss;
  /* at or below wb's own peak, give or take the counters' error: possibly wb's, handed down */
  long slack = wb_rss_read_error_kb();
  c->maxrss_bound = ru->ru_maxrss <= own_peak_rss_kb(ru->ru_maxrss - slack) + slack;
}

/* Without the exit messages: the leader's own run-queue delay, read from its zombie before it is
 * reaped (its other threads' and its children's are gone by then). */
static void note_leader_delay(wb_child *c) {
  if (c->reaped || c->runq_scope || wb_exits_fd() >= 0) return;
  siginfo_t si = {0};
  if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != c->pid) return;
  char path[64], buf[128];
  snprintf(path, sizeof path, "/proc/%d/schedstat", (int)c->pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  unsigned long long ran, waited;
  if (n > 0 && (buf[n] = 0, sscanf(buf, "%llu %llu", &ran, &waited) == 2))
    c->runq_ns = (int64_t)waited, c->runq_scope = 1;
}

/* Reaps zombies of group pgid that are our children, the leader c included. */
static void reap_group(pid_t pgid, wb_child *c) {
  if (c) note_leader_delay(c);
  for (;;) {
    int status;
    struct rusage ru;
    pid_t r = wait4(-pgid, &status, WNOHANG, &ru);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    if (c && r == c->pid) record(c, status, &ru);
  }
}

static void reap_leader(wb_child *c) {
  int status;
  struct rusage ru;
  pid_t r;
  note_leader_delay(c);
  do r = wait4(c->pid, &status, WNOHANG, &ru);
  while (r < 0 && errno == EINTR);
  if (r == c->pid) {
    record(c, status, &ru);
  } else if (r < 0) { /* reaped elsewhere (e.g. SIGCHLD ignored): no status */
    c->reaped = 1;
    c->end_ns = wb_clock_ns();
  }
  reap_group(c->pid, c);
}

static void reap_lingering(void) {
  size_t kept = 0;
  for (size_t i = 0; i < nlingering; i++) {
    reap_group(lingering[i], NULL);
    if (group_alive(lingering[i])) lingering[kept++] = lingering[i];
    else wb_reaper_forget(lingering[i]);
  }
  nlingering = kept;
}

static void add_lingering(pid_t pgid) {
  if (nlingering == lingering_cap) {
    size_t cap = lingering_cap ? lingering_cap * 2 : 16;
    pid_t *p = realloc(lingering, cap * sizeof *p);
    if (!p) return;
    lingering = p;
    lingering_cap = cap;
  }
  lingering[nlingering++] = pgid;
}

int wb_spawn_signal(wb_child *c, int signo) {
  if (!c->finished) {
    signal_child(c, signo);
    return 0;
  }
  for (size_t i = 0; i < nlingering; i++)
    if (lingering[i] == c->pid) return kill(-c->pid, signo) == 0 ? 0 : errno;
  return ESRCH;
}

/* ---- the loop ----------------------------------------------------------------------------- */

/* Records when the bytes up to st->len were read (a line's time is its last byte's read). Without
 * memory for the mark, the bytes join the previous read's: their time is then early, never lost. */
static void mark_read(wb_stream *st) {
  int64_t now = wb_clock_ns();
  if (st->nmarks == st->capmarks) {
    size_t cap = st->capmarks ? st->capmarks * 2 : 8;
    struct wb_read_mark *m = realloc(st->marks, cap * sizeof *m);
    if (!m) {
      if (st->nmarks) st->marks[st->nmarks - 1].end = st->len;
      return;
    }
    st->marks = m;
    st->capmarks = cap;
  }
  st->marks[st->nmarks++] = (struct wb_read_mark){.end = st->len, .ns = now};
}

int64_t wb_stream_read_ns(const wb_stream *st, size_t at) {
  for (size_t i = 0; i < st->nmarks; i++)
    if (st->marks[i].end > at) return st->marks[i].ns;
  return st->nmarks ? st->marks[st->nmarks - 1].ns : wb_clock_ns();
}

/* Reads what one read() returns; returns the byte count, 0 at EOF or when nothing is there. */
static ssize_t stream_read(wb_stream *st) {
  if (st->cap - st->len < READ_CHUNK) {
    size_t cap = st->cap ? st->cap : READ_CHUNK;
    while (cap - st->len < READ_CHUNK) cap *= 2;
    char *p = realloc(st->buf, cap);
    if (!p) {
      wb_close_fd(&st->fd);
      return 0;
    }
    st->buf = p;
    st->cap = cap;
  }
  ssize_t n = read(st->fd, st->buf + st->len, READ_CHUNK);
  if (n > 0) {
    if (st->file_fd >= 0) wb_write_all(st->file_fd, st->buf + st->len, (size_t)n); /* tee's copy */
    st->len += (size_t)n;
    if (st->mode == WB_IO_LINES) mark_read(st);
    return n;
  }
  if (n == 0 || (errno != EAGAIN && errno != EINTR)) wb_close_fd(&st->fd);
  return 0;
}

void wb_stream_compact(wb_stream *st) {
  size_t gone = 0; /* marks wholly consumed */
  while (gone < st->nmarks && st->marks[gone].end <= st->off) gone++;
  if (gone) {
    memmove(st->marks, st->marks + gone, (st->nmarks - gone) * sizeof *st->marks);
    st->nmarks -= gone;
  }
  size_t shift = 0;
  if (st->off == st->len) {
    shift = st->off;
    st->off = st->len = 0;
  } else if (st->off > st->cap / 2) {
    memmove(st->buf, st->buf + st->off, st->len - st->off);
    shift = st->off;
    st->len -= st->off;
    st->off = 0;
  }
  for (size_t i = 0; i < st->nmarks; i++) st->marks[i].end -= shift;
}

static void stdin_write(wb_child *c) {
  size_t n = c->in_len - c->in_off;
  ssize_t w = write(c->in_fd, c->in_data + c->in_off, n < READ_CHUNK ? n : READ_CHUNK);
  if (w > 0) c->in_off += (size_t)w;
  if ((w < 0 && errno != EAGAIN && errno != EINTR) || c->in_off == c->in_len) {
    wb_close_fd(&c->in_fd);
    free(c->in_data);
    c->in_data = NULL;
  }
}

static void finish(wb_child *c) {
  c->finished = 1;
  wb_close_fd(&c->pidfd);
  if (c->prev) c->prev->next = c->next;
  else live = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  if (group_alive(c->pid)) add_lingering(c->pid);
  else wb_reaper_forget(c->pid);
}

/* Fires due timers; after the leader was reaped, collects its output and decides whether the
 * child is finished. Returns the next time this child needs attention (0: none). */
static int64_t update(wb_child *c, int64_t now) {
  if (c->deadline_ns && !c->term_sent && now >= c->deadline_ns) {
    c->timed_out = 1;
    terminate(c, now);
  }
  if (c->term_sent && !c->kill_sent && now >= c->kill_at_ns) kill_group(c, now);
  if (!c->reaped) return c->term_sent ? (c->kill_sent ? 0 : c->kill_at_ns) : c->deadline_ns;
  for (int i = 0; i < 2; i++) {
    for (int k = 0; k < DRAIN_READS && c->out[i].fd >= 0 && stream_read(&c->out[i]) > 0; k++) {
    }
    wb_close_fd(&c->out[i].fd);
  }
  wb_close_fd(&c->in_fd);
  if (c->term_sent) { /* ended by timeout, interrupt or close: the group must not outlive it */
    reap_group(c->pid, c);
    if (group_alive(c->pid) && (!c->kill_sent || now < c->settle_until_ns)) {
      int64_t tick = now + GROUP_TICK_NS;
      return !c->kill_sent && c->kill_at_ns < tick ? c->kill_at_ns : tick;
    }
  }
  finish(c);
  return 0;
}

static struct pollfd *pfds;
static wb_child **pchild; /* owner of each pollfd; NULL for the signal fd */
static size_t pcap;

static int reserve_pollfds(size_t n) {
  if (n <= pcap) return 0;
  size_t cap = pcap ? pcap : 64;
  while (cap < n) cap *= 2;
  struct pollfd *p = realloc(pfds, cap * sizeof *p);
  if (!p) return -1;
  pfds = p;
  wb_child **q = realloc(pchild, cap * sizeof *q);
  if (!q) return -1;
  pchild = q;
  pcap = cap;
  return 0;
}

static void add_pollfd(size_t *n, int fd, short events, wb_child *c) {
  pfds[*n] = (struct pollfd){.fd = fd, .events = events};
  pchild[(*n)++] = c;
}

/* An unreaped child whose exit its pidfd may not announce: there is none, or it was SIGKILLed
 * (a pidfd once stayed quiet then). The loop looks for its exit at least every 10 ms. */
static int needs_exit_poll(const wb_child *c) { return !c->reaped && (c->pidfd < 0 || c->kill_sent); }

int wb_spawn_step(int64_t until_ns, int watch_signal) {
  int64_t now = wb_clock_ns(), wake = until_ns;
  size_t count = 2;
  int finished = 0;
  for (wb_child *c = live, *next; c; c = next) {
    next = c->next;
    int64_t t = update(c, now);
    finished |= c->finished;
    if (t && (wake < 0 || t < wake)) wake = t;
    count += 4;
  }
  reap_lingering();
  /* A child whose group emptied since the last turn has just finished: the caller may be waiting
   * for it, and with nothing left to poll, waiting here would never end. */
  if (finished) return 0;
  if (reserve_pollfds(count) != 0) return -1;
  size_t n = 0;
  if (watch_signal && wb_signal_fd() >= 0) add_pollfd(&n, wb_signal_fd(), POLLIN, NULL);
  if (wb_exits_fd() >= 0) add_pollfd(&n, wb_exits_fd(), POLLIN, NULL); /* drained below */
  int exits_polled = 0;
  for (wb_child *c = live; c; c = c->next) {
    if (!c->reaped && c->pidfd >= 0) add_pollfd(&n, c->pidfd, POLLIN, c);
    exits_polled |= needs_exit_poll(c);
    for (int i = 0; i < 2; i++)
      if (c->out[i].fd >= 0) add_pollfd(&n, c->out[i].fd, POLLIN, c);
    if (c->in_fd >= 0) add_pollfd(&n, c->in_fd, POLLOUT, c);
  }
  int timeout = -1;
  if (wake >= 0) {
    int64_t ms = wake > now ? (wake - now + 999999) / 1000000 : 0;
    timeout = ms > 60000 ? 60000 : (int)ms;
  }
  if (exits_polled && (timeout < 0 || timeout > 10)) timeout = 10;
  if (n == 0 && timeout < 0) return 0;
  int r = poll(pfds, n, timeout);
  if (r < 0) return errno == EINTR ? 0 : -1;
  for (size_t i = 0; i < n && r > 0; i++) {
    wb_child *c = pchild[i];
    if (pfds[i].revents && pfds[i].fd == wb_exits_fd()) wb_exits_drain();
    if (!pfds[i].revents || !c) continue;
    if (pfds[i].fd == c->pidfd) reap_leader(c);
    else if (pfds[i].fd == c->in_fd) stdin_write(c);
    else stream_read(&c->out[pfds[i].fd == c->out[0].fd ? 0 : 1]);
  }
  if (exits_polled)
    for (wb_child *c = live; c; c = c->next)
      if (needs_exit_poll(c)) reap_leader(c);
  now = wb_clock_ns();
  for (wb_child *c = live, *next; c; c = next) {
    next = c->next;
    if (c->reaped) update(c, now);
  }
  return 0;
}

void wb_spawn_kill_now(void) {
  for (wb_child *c = live; c; c = c->next) kill(-c->pid, SIGKILL);
  for (size_t i = 0; i < nlingering; i++) kill(-lingering[i], SIGKILL);
}

void wb_spawn_terminate_all(void) {
  int64_t now = wb_clock_ns();
  for (wb_child *c = live; c; c = c->next)
    if (!c->term_sent) terminate(c, now);
  while (live)
    if (wb_spawn_step(-1, 0) != 0) break;
}

void wb_spawn_result(const wb_child *c, wb_child_result *out) {
  int st = c->status;
  out->exited = c->status_known && WIFEXITED(st);
  out->exit_code = out->exited ? WEXITSTATUS(st) : -1;
  out->term_signal = c->status_known && WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  out->timed_out = c->timed_out;
  out->wall_ns = c->end_ns - c->start_ns;
  out->user_ns = (int64_t)c->ru.ru_utime.tv_sec * 1000000000 + c->ru.ru_utime.tv_usec * 1000;
  out->sys_ns = (int64_t)c->ru.ru_stime.tv_sec * 1000000000 + c->ru.ru_stime.tv_usec * 1000;
  out->maxrss_kb = c->maxrss_kb;
  out->maxrss_bound = c->maxrss_bound;
}

/* ---- the C API ---------------------------------------------------------------------------- */

static void output_path(wb_spawn_io *io, const char *path) {
  io->mode = !path ? WB_IO_INHERIT : *path ? WB_IO_FILE : WB_IO_NULL;
  io->path = path;
}

WB_API wb_child *wb_child_spawn(const char *const *argv, const char *cwd, const char *stdout_path,
                                const char *stderr_path, double timeout_s, double grace_s, char *err,
                                size_t errlen) {
  char buf[512];
  if (!err || errlen == 0) {
    err = buf;
    errlen = sizeof buf;
  }
  if (!argv || !argv[0]) {
    snprintf(err, errlen, "spawn: empty argv");
    return NULL;
  }
  wb_spawn_spec spec = {.argv = argv, .cwd = cwd, .timeout_ns = -1};
  spec.io[0].mode = WB_IO_NULL;
  output_path(&spec.io[1], stdout_path);
  output_path(&spec.io[2], stderr_path);
  if (timeout_s > 0) spec.timeout_ns = (int64_t)(timeout_s * 1e9);
  if (grace_s > 0) spec.grace_ns = (int64_t)(grace_s * 1e9);
  int e;
  return wb_spawn(&spec, err, errlen, &e);
}

WB_API int32_t wb_child_pid(const wb_child *child) { return child ? child->pid : -1; }

WB_API int32_t wb_child_wait(wb_child *child, wb_child_result *out) {
  if (!child || !out) return -1;
  while (!child->finished)
    if (wb_spawn_step(-1, 0) != 0) return -1;
  wb_spawn_result(child, out);
  return 0;
}

WB_API void wb_child_free(wb_child *child) {
  if (!child) return;
  if (!child->finished) {
    if (!child->kill_sent) {
      child->term_sent = 1;
      kill_group(child, wb_clock_ns());
    }
    while (!child->finished && wb_spawn_step(-1, 0) == 0) {
    }
    if (!child->finished) { /* the loop failed: reap the leader directly */
      wb_reap(child->pid);
      finish(child);
    }
  }
  free_child(child);
}
