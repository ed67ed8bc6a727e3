/* wb.proc: child processes for recipes. The mechanism lives in core/spawn.c; this file turns
 * Lua specs into spawn specs, runs the shared loop and calls line callbacks between its turns. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"
#include "machine.h"
#include "spawn.h"

#define PROC_MT "wb.proc"
enum { UV_STDOUT_FN = 1, UV_STDERR_FN = 2, UV_RESULT = 3 };

typedef struct proc {
  wb_child *c; /* NULL once closed */
  pid_t pid;
  int draining;
} proc;

static const char CALLBACKS = 'c'; /* registry key: weak-keyed set of handles with line callbacks */

static int interrupt(lua_State *L) {
  wb_spawn_terminate_all();
  return wb_raise_interrupt(L);
}

/* Starts a child; on failure pushes nil, "spawn: ...", errno and returns NULL. */
static wb_child *start(lua_State *L, const wb_spawn_spec *s) {
  char err[512];
  int e = 0;
  wb_child *c = wb_spawn(s, err, sizeof err, &e);
  if (!c) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    lua_pushinteger(L, e);
  }
  return c;
}

/* Calls wait(handle) protected; then (also on an error, which it rethrows, ending every child on
 * an interrupt) frees *child and clears it. Returns wait's one result. */
static int wait_and_free(lua_State *L, lua_CFunction wait, int handle, wb_child **child) {
  lua_pushcfunction(L, wait);
  lua_pushvalue(L, handle);
  int rc = lua_pcall(L, 1, 1, 0);
  if (rc != LUA_OK && wb_is_interrupt(L, -1)) wb_spawn_terminate_all();
  wb_child_free(*child);
  *child = NULL;
  if (rc != LUA_OK) return lua_error(L);
  return 1;
}

/* Parses the spec at index 1 and starts the child: pushes the handle, or nil, err, errno. */
static int spawn_spec(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_newtable(L); /* 2: anchors */
  wb_spawn_spec s = {0};
  wb_proc_parse_spec(L, &s); /* 3, 4: the stdout and stderr fields */
  proc *p = lua_newuserdatauv(L, sizeof *p, 3);
  *p = (proc){0};
  luaL_setmetatable(L, PROC_MT);
  if (!(p->c = start(L, &s))) return 3;
  p->pid = p->c->pid;
  int lines = 0;
  for (int i = 0; i < 2; i++) {
    if (s.io[i + 1].mode != WB_IO_LINES) continue;
    lua_pushvalue(L, 3 + i);
    lua_setiuservalue(L, 5, UV_STDOUT_FN + i);
    lines = 1;
  }
  if (lines) {
    wb_weak_registry(L, &CALLBACKS);
    lua_pushvalue(L, 5);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
  }
  return 1;
}

/* ---- the loop ----------------------------------------------------------------------------- */

static proc *check_proc(lua_State *L, int idx) { return luaL_checkudata(L, idx, PROC_MT); }

static proc *open_proc(lua_State *L, int idx) {
  proc *p = check_proc(L, idx);
  if (!p->c) luaL_error(L, "wb.proc (pid %d) is closed", (int)p->pid);
  return p;
}

static int lines_pending(const wb_child *c) {
  for (int i = 0; i < 2; i++)
    if (c->out[i].mode == WB_IO_LINES && c->out[i].off < c->out[i].len) return 1;
  return 0;
}

/* Finished, with every line delivered; a closed handle counts when its result is kept. */
static int is_done(lua_State *L, int idx) {
  proc *p = lua_touserdata(L, idx);
  if (!p->c) {
    int kept = lua_getiuservalue(L, idx, UV_RESULT) != LUA_TNIL;
    lua_pop(L, 1);
    return kept;
  }
  return p->c->finished && !lines_pending(p->c);
}

/* The read time of the line being delivered to a line callback (wb.proc.line_time), -1 outside. */
static int64_t line_ns = -1;

/* Lines longer than this reach the callback in pieces of this size, with a second argument true
 * (the line goes on): a child writing without newlines costs wb a bounded buffer. */
#define LINE_PIECE_MAX ((size_t)1 << 20)

/* Calls the line callbacks of the handle at idx for each complete line queued (and for a final
 * partial line once its stream is closed), an over-long one in pieces. A callback's error
 * propagates. */
static void drain(lua_State *L, int idx) {
  proc *p = lua_touserdata(L, idx);
  if (!p->c || p->draining) return;
  p->draining = 1;
  for (int i = 0; i < 2; i++) {
    while (p->c && p->c->out[i].mode == WB_IO_LINES && p->c->out[i].off < p->c->out[i].len) {
      wb_stream *st = &p->c->out[i];
      const char *start = st->buf + st->off;
      size_t avail = st->len - st->off;
      const char *nl = st->scanned < avail ? memchr(start + st->scanned, '\n', avail - st->scanned) : NULL;
      int piece = (nl ? (size_t)(nl - start) : avail) > LINE_PIECE_MAX;
      if (!nl && st->fd >= 0 && !piece) {
        st->scanned = avail;
        break;
      }
      if (piece) nl = NULL;
      size_t n = piece ? LINE_PIECE_MAX : nl ? (size_t)(nl - start) : avail;
      if (piece && !st->in_piece) st->long_lines++;
      st->in_piece = piece;
      int64_t outer_ns = line_ns;
      line_ns = wb_stream_read_ns(st, st->off + (nl ? n : n - 1));
      lua_getiuservalue(L, idx, UV_STDOUT_FN + i);
      lua_pushlstring(L, start, n);
      lua_pushboolean(L, piece);
      st->off += nl ? n + 1 : n;
      st->scanned = 0;
      wb_stream_compact(st);
      int rc = lua_pcall(L, 2, 0, 0);
      line_ns = outer_ns;
      if (rc != LUA_OK) {
        p->draining = 0;
        if (wb_is_interrupt(L, -1)) wb_spawn_terminate_all();
        lua_error(L);
      }
    }
  }
  p->draining = 0;
}

static void drain_all(lua_State *L) {
  wb_weak_registry(L, &CALLBACKS);
  int set = lua_gettop(L);
  lua_pushnil(L);
  if (!lua_next(L, set)) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 2);
  lua_newtable(L);
  int list = set + 1, n = 0;
  for (lua_pushnil(L); lua_next(L, set);) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, list, ++n);
  }
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    drain(L, list + 1);
    if (is_done(L, list + 1) || !((proc *)lua_touserdata(L, list + 1))->c) {
      lua_pushnil(L);
      lua_rawset(L, set);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 2);
}

/* Turns the loop until ready(L, arg) returns non-zero (returned) or until_ns passes (0). */
static int run_loop(lua_State *L, int (*ready)(lua_State *, int), int arg, int64_t until_ns) {
  for (int looked = 0;; looked = 1) {
    if (wb_signal_pending()) interrupt(L);
    drain_all(L);
    int r = ready(L, arg);
    if (r) return r;
    /* a timeout already past still looks once (without blocking): an exit is seen, a pipe read */
    if (looked && until_ns >= 0 && wb_clock_ns() >= until_ns) return 0;
    if (wb_spawn_step(until_ns, 1) != 0) luaL_error(L, "wb.proc: poll: %s", strerror(errno));
  }
}

/* is_done for a handle being waited on; raises when it was closed meanwhile (by a callback) or
 * when its own line callback waits on it. */
static int ready_one(lua_State *L, int idx) {
  if (is_done(L, idx)) return 1;
  proc *p = open_proc(L, idx);
  if (p->draining) luaL_error(L, "wb.proc (pid %d) waited on from its own line callback", (int)p->pid);
  return 0;
}

/* Without `all`: the index of the first done handle in the list, or 0. With `all`: 1 when every
 * handle is done, else 0. */
static int scan_list(lua_State *L, int list, int all) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, list);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    int done = ready_one(L, lua_gettop(L));
    lua_pop(L, 1);
    if (done != all) return all ? 0 : (int)i;
  }
  return all;
}

static int ready_any(lua_State *L, int list) { return scan_list(L, list, 0); }

static int ready_all(lua_State *L, int list) { return scan_list(L, list, 1); }

/* Sets field name to the integer v when have, else to nil. */
static void set_int_or_nil(lua_State *L, const char *name, int have, lua_Integer v) {
  if (have) lua_pushinteger(L, v);
  else lua_pushnil(L);
  lua_setfield(L, -2, name);
}

/* Sets field name to v when have, else to nil. */
static void set_num_or_nil(lua_State *L, const char *name, int have, double v) {
  if (have) lua_pushnumber(L, v);
  else lua_pushnil(L);
  lua_setfield(L, -2, name);
}

/* The interference evidence of a finished child (see l_wait's contract). */
static void set_interference(lua_State *L, const wb_child *c, const wb_child_result *r) {
  double wall = (double)r->wall_ns / 1e9, cpu = (double)(r->user_ns + r->sys_ns) / 1e9;
  const wb_machine_sample *a = &c->machine_start, *b = &c->machine_end;
  double hz = (double)wb_machine_hz();
  set_num_or_nil(L, "runq", c->runq_scope, (double)c->runq_ns / 1e9);
  set_num_or_nil(L, "wall_own", c->own_wall_ns >= 0, (double)c->own_wall_ns / 1e9);
  lua_pushstring(L, c->runq_scope == 2 ? "tree" : c->runq_scope == 1 ? "leader" : "none");
  lua_setfield(L, -2, "runq_scope");
  wb_set_int(L, "nivcsw", c->ru.ru_nivcsw);
  wb_set_int(L, "nvcsw", c->ru.ru_nvcsw);
  set_int_or_nil(L, "cpus", c->cpus_allowed > 0, c->cpus_allowed);
  double others = wall > 0 ? ((double)(b->busy_ticks - a->busy_ticks) / hz - cpu) / wall : 0;
  set_num_or_nil(L, "others_cpu", a->busy_ticks >= 0 && b->busy_ticks >= a->busy_ticks && wall > 0,
                 others > 0 ? others : 0);
  set_num_or_nil(L, "steal", a->steal_ticks >= 0 && b->steal_ticks >= a->steal_ticks,
                 (double)(b->steal_ticks - a->steal_ticks) / hz);
  set_num_or_nil(L, "cpu_pressure", a->psi_some_us >= 0 && b->psi_some_us >= a->psi_some_us,
                 (double)(b->psi_some_us - a->psi_some_us) / 1e6);
  int runnable = a->runnable > b->runnable ? a->runnable : b->runnable;
  set_int_or_nil(L, "others_runnable", runnable > 0, runnable - 1);
}

/* Sets the result fields of the finished child c into the table on the top of the stack (absent
 * ones to nil, so a table can be reused); hands captured output over. */
static void set_result(lua_State *L, wb_child *c) {
  wb_child_result r;
  wb_spawn_result(c, &r);
  wb_set_int(L, "pid", c->pid);
  wb_set_bool(L, "exited", r.exited);
  if (r.exited)
    lua_pushinteger(L, r.exit_code);
  else
    lua_pushnil(L);
  lua_setfield(L, -2, "code");
  if (r.term_signal)
    lua_pushinteger(L, r.term_signal);
  else
    lua_pushnil(L);
  lua_setfield(L, -2, "signal");
  wb_set_bool(L, "timed_out", r.timed_out);
  wb_set_bool(L, "ok", r.exited && r.exit_code == 0 && !r.timed_out);
  wb_set_num(L, "wall", (double)r.wall_ns / 1e9);
  wb_set_int(L, "wall_ns", r.wall_ns);
  wb_set_num(L, "user", (double)r.user_ns / 1e9);
  wb_set_num(L, "sys", (double)r.sys_ns / 1e9);
  wb_set_int(L, "maxrss_kb", r.maxrss_kb);
  wb_set_bool(L, "maxrss_bound", r.maxrss_bound);
  if (c->own_peak_kb >= 0) wb_set_int(L, "own_peak_rss_kb", c->own_peak_kb);
  set_interference(L, c, &r);
  if (c->out[0].long_lines) wb_set_int(L, "stdout_long_lines", (lua_Integer)c->out[0].long_lines);
  if (c->out[1].long_lines) wb_set_int(L, "stderr_long_lines", (lua_Integer)c->out[1].long_lines);
  for (int i = 0; i < 2; i++) {
    wb_stream *st = &c->out[i];
    if (st->mode != WB_IO_CAPTURE && st->mode != WB_IO_TEE) continue;
    lua_pushlstring(L, st->buf ? st->buf : "", st->len);
    lua_setfield(L, -2, i ? "stderr" : "stdout");
    free(st->buf);
    st->buf = NULL;
    st->len = st->cap = 0;
  }
}

/* Pushes the result table of the done handle at idx, built once and kept. */
static void push_result(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_getiuservalue(L, idx, UV_RESULT) != LUA_TNIL) return;
  lua_pop(L, 1);
  proc *p = lua_touserdata(L, idx);
  lua_createtable(L, 0, 14);
  set_result(L, p->c);
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, idx, UV_RESULT);
}

/* Checks that the table at index 1 is a list of usable wb.proc handles; returns its length. */
static int check_list(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)lua_rawlen(L, 1);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    proc *p = luaL_testudata(L, -1, PROC_MT);
    if (!p) luaL_argerror(L, 1, "a list of wb.proc handles expected");
    if (!p->c && !is_done(L, -1)) luaL_argerror(L, 1, "a wb.proc in the list is closed");
    lua_pop(L, 1);
  }
  return n;
}

/* ---- the functions ------------------------------------------------------------------------- */

/* -- p, err, errno = wb.proc.spawn(spec) : starts a child in its own process group; nil,
 * "spawn: ...", errno when the environment fails (missing program or cwd, unreadable or
 * unwritable file). spec: argv = {prog, args...} (prog looked up in the child's PATH, no shell)
 * | shell = true with cmd = "..." (or argv = "..."), run by /bin/sh -c; env = {NAME = value},
 * env_mode = "add" (default) | "replace"; cwd; stdin = "null" (default) | "inherit" |
 * {file = path} | {data = string}; stdout, stderr = "inherit" (default) | "null" | "capture" |
 * {file = path, append = bool} | {tee = path, append = bool} | function(line, piece) (a line
 * over 1 MiB in 1 MiB pieces, piece true on all but the last; the result's stdout_long_lines and
 * stderr_long_lines count them); stderr may also be "stdout"; timeout (seconds; SIGTERM to the group, then SIGKILL after grace, default 2);
 * held = true: the child is created (p.pid is valid) but waits before exec until p:release(), so
 * perf events and BPF filters can be attached to it first; its wall time and timeout start at the
 * release. */
static int l_spawn(lua_State *L) { return spawn_spec(L); }

/* Raises when the handle at idx is held at the gate: waiting on it would never end. */
static void check_released(lua_State *L, int idx) {
  proc *p = lua_touserdata(L, idx);
  if (p->c && p->c->gate_fd >= 0)
    luaL_error(L, "wb.proc (pid %d) is held: call p:release() first", (int)p->pid);
}

/* -- ok, err, errno = p:release() : lets a child spawned with held = true exec its program; true
 * for a child that is not held (or already released); nil, "release: ...", errno when the child
 * died at the gate */
static int l_release(lua_State *L) {
  proc *p = open_proc(L, 1);
  int e = wb_spawn_release(p->c);
  if (e) return wb_push_error(L, e, "release");
  lua_pushboolean(L, 1);
  return 1;
}

/* -- res = p:wait() : waits (enforcing the timeout, calling line callbacks) and returns the
 * result table {pid, exited, code, signal, timed_out, ok, wall, wall_ns, user, sys, maxrss_kb,
 * maxrss_bound, own_peak_rss_kb?, stdout, stderr (capture and tee only)}; later calls return the
 * same table. maxrss_kb: the largest own peak RSS of the child and of the descendants it waited
 * for, exact where wb hears the kernel's taskstats exit messages (root: core/exitstats.h), which
 * also give own_peak_rss_kb, the child's alone; else the wait4 figure, and maxrss_bound says
 * when that is only an upper bound (Linux counts this process's peak RSS into a child's at exec
 * and the child stayed below it). While waiting, the
 * output of every child is pumped; a pending SIGINT/SIGTERM ends every child, then raises. */
static int l_wait(lua_State *L) {
  check_proc(L, 1);
  if (lua_getiuservalue(L, 1, UV_RESULT) != LUA_TNIL) return 1;
  open_proc(L, 1);
  check_released(L, 1);
  run_loop(L, ready_one, 1, -1);
  push_result(L, 1);
  return 1;
}

/* -- res, err, errno = wb.proc.run(spec) : spawn, wait and close */
static int l_run(lua_State *L) {
  int n = spawn_spec(L);
  if (n != 1) return n;
  int h = lua_gettop(L);
  return wait_and_free(L, l_wait, h, &((proc *)lua_touserdata(L, h))->c);
}

/* -- res = p:poll() : pumps the loop once without blocking; the result, or nil while running */
static int l_poll(lua_State *L) {
  check_proc(L, 1);
  if (lua_getiuservalue(L, 1, UV_RESULT) != LUA_TNIL) return 1;
  open_proc(L, 1);
  if (wb_signal_pending()) interrupt(L);
  if (wb_spawn_step(0, 1) != 0) return luaL_error(L, "wb.proc: poll: %s", strerror(errno));
  if (!run_loop(L, ready_one, 1, 0)) return 0;
  push_result(L, 1);
  return 1;
}

/* -- ok = p:running() : whether the child is still running (pumps the loop without blocking) */
static int l_running(lua_State *L) {
  proc *p = check_proc(L, 1);
  if (p->c && !p->c->finished) wb_spawn_step(0, 0);
  lua_pushboolean(L, p->c && !p->c->finished);
  return 1;
}

/* -- ok, err, errno = p:kill([signo]) : signals the process group (default SIGTERM) */
static int l_kill(lua_State *L) {
  proc *p = open_proc(L, 1);
  lua_Integer signo = luaL_optinteger(L, 2, SIGTERM);
  luaL_argcheck(L, signo >= 0 && signo < NSIG, 2, "not a signal number");
  int e = wb_spawn_signal(p->c, (int)signo);
  if (e) return wb_push_error(L, e, "kill");
  lua_pushboolean(L, 1);
  return 1;
}

/* -- ok, err, errno = wb.proc.signal_group(pgid [, signo = SIGTERM]) : kill(-pgid, signo), for
 * groups wb did not start in this process (a previous wb's survivors); signo 0 tests that the
 * group exists */
static int l_signal_group(lua_State *L) {
  lua_Integer pgid = luaL_checkinteger(L, 1);
  lua_Integer signo = luaL_optinteger(L, 2, SIGTERM);
  luaL_argcheck(L, pgid > 1 && pgid <= INT32_MAX, 1, "not a process group id");
  luaL_argcheck(L, signo >= 0 && signo < NSIG, 2, "not a signal number");
  if (kill(-(pid_t)pgid, (int)signo) != 0) return wb_push_error(L, errno, "kill");
  lua_pushboolean(L, 1);
  return 1;
}

/* -- p:close() : kills the process group (SIGKILL) if the child still runs, reaps it and
 * releases the handle; idempotent (also __close and __gc) */
static int l_close(lua_State *L) {
  proc *p = check_proc(L, 1);
  wb_child_free(p->c);
  p->c = NULL;
  return 0;
}

/* -- s = tostring(p) : "wb.proc (pid 123, running)", "... exited 0", "... signal 9", "... closed" */
static int l_tostring(lua_State *L) {
  proc *p = check_proc(L, 1);
  wb_child_result r;
  if (!p->c) {
    lua_pushfstring(L, "wb.proc (pid %d, closed)", (int)p->pid);
  } else if (!p->c->finished) {
    lua_pushfstring(L, "wb.proc (pid %d, running)", (int)p->pid);
  } else {
    wb_spawn_result(p->c, &r);
    if (r.exited) lua_pushfstring(L, "wb.proc (pid %d, exited %d)", (int)p->pid, (int)r.exit_code);
    else lua_pushfstring(L, "wb.proc (pid %d, signal %d)", (int)p->pid, (int)r.term_signal);
  }
  return 1;
}

/* p.pid, then the methods */
static int l_index(lua_State *L) {
  proc *p = check_proc(L, 1);
  const char *key = lua_tostring(L, 2);
  if (key && strcmp(key, "pid") == 0) {
    lua_pushinteger(L, p->pid);
    return 1;
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

/* -- p, res = wb.proc.wait_any(list [, timeout]) : the first handle in the list that is done, and
 * its result; nil when the timeout (seconds) passes first or the list is empty */
static int l_wait_any(lua_State *L) {
  int n = check_list(L);
  double timeout = luaL_optnumber(L, 2, -1);
  luaL_argcheck(L, lua_isnoneornil(L, 2) || timeout >= 0, 2, "timeout must not be negative");
  if (n == 0) return 0;
  int64_t until = timeout < 0 ? -1 : wb_clock_ns() + (int64_t)(timeout > 1e9 ? 1e18 : timeout * 1e9);
  int i = run_loop(L, ready_any, 1, until);
  if (!i) return 0;
  lua_rawgeti(L, 1, i);
  push_result(L, -1);
  return 2;
}

/* -- results = wb.proc.wait_all(list) : waits for every handle; results in list order */
static int l_wait_all(lua_State *L) {
  int n = check_list(L);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    check_released(L, -1);
    lua_pop(L, 1);
  }
  run_loop(L, ready_all, 1, -1);
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    push_result(L, -1);
    lua_rawseti(L, -3, i);
    lua_pop(L, 1);
  }
  return 1;
}

/* -- ns = wb.proc.line_time() : inside a line callback, the wb.clock.now() at which wb read the
 * line being delivered (its last byte) from the pipe, which a busy caller may deliver later;
 * nil outside a line callback */
static int l_line_time(lua_State *L) {
  if (line_ns < 0) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)line_ns);
  return 1;
}

/* -- path = wb.proc.which(name [, PATH]) : the executable spawn would run, or nil */
static int l_which(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *path = luaL_optstring(L, 2, getenv("PATH"));
  char out[4096];
  if (wb_which(name, path, out, sizeof out) != 0) return 0;
  lua_pushstring(L, out);
  return 1;
}

/* ---- runners ------------------------------------------------------------------------------ */

#define RUNNER_MT "wb.proc.runner"
enum { RUV_ANCHORS = 1, RUV_RESULT = 2 };

typedef struct runner {
  wb_spawn_spec spec; /* its strings anchored in user value RUV_ANCHORS */
  wb_child *c;        /* the child of the run in progress, else NULL */
  int closed;
} runner;

static runner *check_runner(lua_State *L, int idx) {
  runner *r = luaL_checkudata(L, idx, RUNNER_MT);
  if (r->closed) luaL_error(L, RUNNER_MT " is closed");
  return r;
}

/* -- r = wb.proc.runner(spec) : a spec parsed once, to run the same command many times with
 * r:run() at the least cost per run. spec is as for wb.proc.spawn, without line callbacks and
 * held. */
static int l_runner(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_newtable(L); /* 2: anchors */
  wb_spawn_spec s = {0};
  wb_proc_parse_spec(L, &s);
  if (s.io[1].mode == WB_IO_LINES || s.io[2].mode == WB_IO_LINES)
    luaL_argerror(L, 1, "a runner takes no line callbacks");
  if (s.held) luaL_argerror(L, 1, "a runner cannot hold its child (held)");
  runner *r = lua_newuserdatauv(L, sizeof *r, 2);
  *r = (runner){.spec = s};
  luaL_setmetatable(L, RUNNER_MT);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, RUV_ANCHORS);
  lua_createtable(L, 0, 14);
  lua_setiuservalue(L, -2, RUV_RESULT);
  return 1;
}

static int runner_ready(lua_State *L, int idx) {
  return ((runner *)lua_touserdata(L, idx))->c->finished;
}

/* Protected part of r:run(): waits, then fills the result table (which may raise too). */
static int runner_wait(lua_State *L) {
  run_loop(L, runner_ready, 1, -1);
  lua_getiuservalue(L, 1, RUV_RESULT);
  set_result(L, ((runner *)lua_touserdata(L, 1))->c);
  return 1;
}

/* -- res, err, errno = r:run() : spawns the command, waits for it, and returns its result as
 * p:wait() does, in a table the runner reuses: the next run overwrites it. nil, "spawn: ...",
 * errno when the environment fails. */
static int l_runner_run(lua_State *L) {
  runner *r = check_runner(L, 1);
  lua_settop(L, 1);
  if (r->c) luaL_error(L, RUNNER_MT " is already running");
  if (!(r->c = start(L, &r->spec))) return 3;
  return wait_and_free(L, runner_wait, 1, &r->c);
}

/* -- r:close() : releases the runner; idempotent (also __close and __gc). Raises while a run is
 * in progress (from a line callback of another child). */
static int l_runner_close(lua_State *L) {
  runner *r = luaL_checkudata(L, 1, RUNNER_MT);
  if (r->c) luaL_error(L, RUNNER_MT " is running: it closes when the run ends");
  r->closed = 1;
  return 0;
}

/* -- s = tostring(r) : "wb.proc.runner (ARGV0)" or "wb.proc.runner (closed)" */
static int l_runner_tostring(lua_State *L) {
  runner *r = luaL_checkudata(L, 1, RUNNER_MT);
  if (r->closed) lua_pushliteral(L, RUNNER_MT " (closed)");
  else lua_pushfstring(L, RUNNER_MT " (%s)", r->spec.argv[0]);
  return 1;
}

static const luaL_Reg runner_methods[] = {{"close", l_runner_close}, {"run", l_runner_run}, {NULL, NULL}};

static const luaL_Reg proc_methods[] = {{"close", l_close},     {"kill", l_kill},
                                        {"poll", l_poll},       {"release", l_release},
                                        {"running", l_running}, {"wait", l_wait},
                                        {NULL, NULL}};

/* -- n, quota = wb.proc.cpus() : the CPUs a child of this process could use: the affinity mask's
 * count, and the tightest CFS bandwidth quota of this process's cgroup and its ancestors in CPUs
 * (nil when none) */
static int l_cpus(lua_State *L) {
  double quota = 0;
  int n = wb_machine_cpus(&quota);
  if (n > 0) lua_pushinteger(L, n);
  else lua_pushnil(L);
  if (quota > 0) lua_pushnumber(L, quota);
  else lua_pushnil(L);
  return 2;
}

static const luaL_Reg proc_functions[] = {
    {"cpus", l_cpus}, {"line_time", l_line_time}, {"run", l_run},           {"runner", l_runner},
    {"signal_group", l_signal_group}, {"spawn", l_spawn}, {"wait_all", l_wait_all},
    {"wait_any", l_wait_any},   {"which", l_which},
    {NULL, NULL}};

/* The wb binary makes itself a child subreaper and raises its descriptor limit (core/main.c);
 * opening the module changes no process-wide state. */
int luaopen_wb_proc(lua_State *L) {
  wb_new_class(L, PROC_MT, proc_methods, l_index, l_close, l_tostring);
  wb_new_class(L, RUNNER_MT, runner_methods, NULL, l_runner_close, l_runner_tostring);

  luaL_newlib(L, proc_functions);
  return 1;
}
