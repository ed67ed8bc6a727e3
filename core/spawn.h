/* The process engine shared by wb.proc (core/proc.c) and the wb_child_* C API (core/wb.h).
 *
 * Children are started by wb_exec_start (below), each in its own process group, with default signal
 * dispositions, an empty signal mask and every descriptor above 2 closed. All live children are
 * kept in one registry and served by one poll loop (wb_spawn_step) over their pipes and pidfds,
 * so waiting on one child pumps the output of all. When the leader is reaped (wait4, for its
 * rusage), what its pipes hold is read and they are closed: output that descendants write later
 * is not collected. A timeout sends SIGTERM to the group, then SIGKILL after the grace period
 * even when the leader has already exited; a child ended that way (or by an interrupt or a
 * close) is finished only once its group is empty, or one second after the SIGKILL. Groups that
 * a finished leader left behind are remembered: their zombies are reaped on later turns (they
 * are ours when the process is a child subreaper) and they can still be signalled.
 *
 * A held child (spec.held) is created through the gate: the wb binary re-executed as
 * `wb __gate EXE ARGV...`, which reports on WB_GATE_READY_FD that it is started (wb_spawn returns
 * only then), blocks reading WB_GATE_FD until wb_spawn_release writes a byte, then execs EXE in
 * the same process. The pid is known before the program's first instruction, so perf events
 * (enable_on_exec) and BPF filters can be set up on it; its clock and timeout start at the
 * release.
 *
 * Single-threaded: call from the thread that runs Lua. Writing stdin data assumes SIGPIPE is
 * ignored (the wb binary ignores it). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <lua.h>

#include "machine.h"
#include "wb_c.h"

enum wb_io {
  WB_IO_INHERIT,
  WB_IO_NULL,
  WB_IO_FILE,    /* the child reads or writes `path` directly */
  WB_IO_DATA,    /* stdin only: `data` is written through a pipe */
  WB_IO_CAPTURE, /* through a pipe into the stream buffer */
  WB_IO_TEE,     /* through a pipe into the stream buffer and `path` */
  WB_IO_LINES,   /* through a pipe into the stream buffer, consumed by the owner from `off` */
  WB_IO_MERGE,   /* stderr only: the same destination as stdout */
};

typedef struct wb_spawn_io {
  enum wb_io mode;
  const char *path; /* WB_IO_FILE, WB_IO_TEE; opened relative to the caller's cwd */
  int append;       /* output files: append instead of truncating */
  const char *data; /* WB_IO_DATA; copied */
  size_t len;
} wb_spawn_io;

typedef struct wb_spawn_spec {
  const char *const *argv;  /* NULL-terminated; argv[0] without '/' is looked up in PATH */
  const char *const *env;   /* "NAME=value" entries, NULL-terminated, or NULL */
  int env_replace;          /* 1: the child gets exactly `env`; 0: `env` overrides environ */
  const char *cwd;          /* NULL: the caller's */
  wb_spawn_io io[3];        /* stdin, stdout, stderr */
  int64_t timeout_ns;       /* < 0: none */
  int64_t grace_ns;         /* SIGTERM to SIGKILL */
  int held;                 /* 1: wait at the gate until wb_spawn_release */
} wb_spawn_spec;

typedef struct wb_stream {
  enum wb_io mode;
  int fd;      /* the parent's read end, -1 once closed (EOF, or the leader was reaped) */
  int file_fd; /* WB_IO_TEE target, else -1 */
  char *buf;
  size_t len, cap;
  size_t off; /* WB_IO_LINES: bytes the owner has consumed */
  size_t scanned; /* WB_IO_LINES: bytes after off known to hold no newline (searching resumes
                     there, so a long line costs linear time) */
  int in_piece;       /* WB_IO_LINES: the last delivery was a piece of a line that goes on */
  long long long_lines; /* WB_IO_LINES: lines delivered in pieces (over the piece size) */
  struct wb_read_mark {
    size_t end;     /* offset in buf just past the bytes of one read() */
    int64_t ns;     /* wb_clock_ns() after that read */
  } *marks;         /* WB_IO_LINES: the reads holding unconsumed bytes, oldest first */
  size_t nmarks, capmarks;
} wb_stream;

struct wb_child {
  pid_t pid; /* also the process group id */
  int pidfd;
  int64_t start_ns, end_ns;
  int64_t deadline_ns; /* timeout, 0 when none */
  int64_t timeout_ns;  /* < 0: none; armed at the start (a held child's release) */
  int gate_fd;         /* held: the write end of the gate pipe, else -1 */
  int64_t grace_ns, kill_at_ns, settle_until_ns;
  int term_sent, kill_sent, timed_out;
  int reaped, status_known, finished;
  int status;
  struct rusage ru;
  int maxrss_bound;       /* maxrss_kb is only an upper bound (wb.h) */
  int64_t maxrss_kb;      /* the tree's largest own peak (core/exitstats.h), else ru.ru_maxrss */
  int64_t own_peak_kb;    /* the leader's own peak from its exit message, -1 when unknown */
  uint64_t exits_since;   /* the last exit recorded before the spawn (core/exitstats.h) */
  /* interference evidence: the machine at start and at reaping (core/machine.h), and the time
   * the child's threads waited for a CPU: the whole tree's from the exit messages, else the
   * leader's own, read from /proc before it is reaped (runq_scope 2: tree, 1: leader, 0: none) */
  wb_machine_sample machine_start, machine_end;
  int64_t runq_ns;
  int64_t own_wall_ns; /* creation to exit, by the kernel's clock (tree scope only), else -1 */
  int runq_scope;
  int cpus_allowed;
  wb_stream out[2]; /* stdout, stderr */
  int in_fd;
  char *in_data;
  size_t in_len, in_off;
  struct wb_child *prev, *next; /* registry of live (unfinished) children */
};

/* Starts a child. On failure returns NULL, writes "spawn: ..." into err and the errno into
 * *errnum. */
wb_child *wb_spawn(const wb_spawn_spec *spec, char *err, size_t errlen, int *errnum);

/* One turn of the loop over every live child: fires due timers, polls pipes, pidfds and (when
 * watch_signal) wb_signal_fd() until an event, `until_ns` (monotonic; < 0: no limit) or the
 * nearest timer, then moves data, reaps and finishes children. A turn in which a child finishes
 * before the poll returns without polling. Returns 0, or -1 with errno when poll fails. */
int wb_spawn_step(int64_t until_ns, int watch_signal);

/* Sends SIGTERM to every live child's group, SIGKILL after each one's grace, and returns once
 * all are reaped. */
void wb_spawn_terminate_all(void);

/* Sends SIGKILL to every live child's group and every group a finished leader left behind, and
 * returns at once (nothing is reaped). Only kill(2): callable from a signal handler. */
void wb_spawn_kill_now(void);

/* Signals the child's process group (and the leader, if it left the group). After the child
 * finished, only a group that still has members is signalled. Returns 0 or an errno. */
int wb_spawn_signal(wb_child *c, int signo);

/* Lets a held child run (exec its program). Returns 0, or EPIPE when the gate is gone (the child
 * was killed meanwhile); a child not held is left alone. */
int wb_spawn_release(wb_child *c);

/* Fills *out from a finished child. */
void wb_spawn_result(const wb_child *c, wb_child_result *out);

/* Drops the consumed part of a WB_IO_LINES buffer. */
void wb_stream_compact(wb_stream *st);

/* WB_IO_LINES: the wb_clock_ns() at which the byte at buf offset `at` (unconsumed) was read. */
int64_t wb_stream_read_ns(const wb_stream *st, size_t at);

/* The child's environment: a malloc'ed array of borrowed strings (environ with spec->env applied,
 * or spec->env alone); *path is the PATH the child will see. NULL when out of memory. */
char **wb_spawn_env(const wb_spawn_spec *spec, const char **path);

/* The gate (core/spawn_gate.c). main() calls wb_gate(argc, argv) first: for `wb __gate EXE ARGV...` it names
 * itself like EXE, writes a byte to WB_GATE_READY_FD, waits on WB_GATE_FD and execs EXE with ARGV
 * (exit 127 when the exec fails, WB_GATE_ABANDONED when the pipe closes without a release) and
 * never returns; otherwise it records that this executable can
 * serve as the gate and returns. wb_gate_argv builds that argv (malloc'ed, borrowing the strings);
 * NULL with errno ENOTSUP in a process that is not wb. */
#define WB_GATE_FD 3
#define WB_GATE_READY_FD 4
#define WB_GATE_ABANDONED 125
void wb_gate(int argc, char **argv);
const char **wb_gate_argv(const char *exe, const char *const *argv);

/* The executable to run as the gate: this wb binary's path as read on first use (under valgrind,
 * the client's), or /proc/self/exe when that path is gone. */
const char *wb_gate_binary(void);

/* The parent's side of the gate: wb_gate_prepare makes the go and ready pipes (close-on-exec, all
 * ends above WB_GATE_READY_FD) and adds to the plan the moves that put the child's ends in place,
 * closing everything above them; after the spawn, wb_gate_await waits (10 s at most) for the ready
 * byte, 0 or an errno (EPIPE: the gate died; ETIMEDOUT); wb_gate_close closes what is left open.
 * go_wr is the handle's to keep: writing a byte to it releases the child. */
typedef struct wb_gate_pipes {
  int go_rd, go_wr, ready_rd, ready_wr;
} wb_gate_pipes;
struct wb_exec_plan;
int wb_gate_prepare(struct wb_exec_plan *plan, wb_gate_pipes *g);
int wb_gate_await(wb_gate_pipes *g);
void wb_gate_close(wb_gate_pipes *g);

/* What a child does between its creation and its exec (core/spawn_child.c): it becomes the leader
 * of a new process group, asks for SIGKILL when wb dies (PR_SET_PDEATHSIG; not under valgrind's
 * posix_spawn), sets every signal to its default disposition, changes to dir_fd unless
 * it is -1, moves descriptors (dup2 from[i] onto to[i], in order; from == to clears
 * close-on-exec), closes every descriptor from close_from up, empties its signal mask and execs
 * path with argv and envp (which are not searched in PATH). Descriptors below close_from that
 * are close-on-exec still close at the exec. */
typedef struct wb_exec_plan {
  int from[6], to[6], ndup;
  int dir_fd;
  int close_from;
  const char *path;
  char *const *argv;
  char *const *envp;
} wb_exec_plan;

/* Adds a descriptor move to the plan (at most 6). */
void wb_plan_dup(wb_exec_plan *plan, int from, int to);

/* Starts a child that carries out the plan. Returns 0 with *pid set, or an errno: of the
 * creation, or of the child's first failing step (a failed exec included; that child has been
 * reaped). The child is created with clone(CLONE_VM | CLONE_VFORK) and a handful of system calls
 * (about 30 µs less per spawn than posix_spawn, which resets 64 signal dispositions one by one
 * and maps a stack each time); under valgrind, which emulates such clones as forks, and on kernels
 * without close_range, posix_spawn does the same work. */
int wb_exec_start(const wb_exec_plan *plan, pid_t *pid);

/* Descriptors of the spawn engine (core/spawn_exec.c). wb_fd_above moves *fd to a close-on-exec
 * descriptor >= min unless it is one already (the old one closed); wb_pipe_above makes a
 * close-on-exec pipe with both ends >= min. Both return 0, or -1 with errno (nothing left open,
 * *fd -1). wb_close_fd closes *fd if open and sets it to -1. wb_reap reaps pid, waiting. */
int wb_fd_above(int *fd, int min);
int wb_pipe_above(int fds[2], int min);
void wb_close_fd(int *fd);
void wb_reap(pid_t pid);

/* Resolves an executable like execvp: a name with '/' is checked as it is, else each entry of
 * `path` (NULL: "/bin:/usr/bin"; an empty entry is "."). Writes the path into out; returns 0 or
 * an errno (ENOENT, EACCES, ENAMETOOLONG). */
int wb_which(const char *name, const char *path, char *out, size_t outlen);

/* wb.proc (core/proc_spec.c): parses the spec table at index 1 into *spec, anchoring the strings it
 * borrows in the table at index 2; leaves the stdout and stderr fields at indices 3 and 4 (the
 * line callbacks, when they are functions). Raises on misuse. */
void wb_proc_parse_spec(lua_State *L, wb_spawn_spec *spec);
