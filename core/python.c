/* wb.python: the Python call stacks of CPython processes, sampled from outside the process as it
 * runs (py-spy's way: process_vm_readv from a thread of wb's; core/python_read.c reads the
 * interpreter). wb.capture uses this sampler where the BPF program cannot read the frames at
 * sample time (method perf_event or perf_cli); with eBPF the frames come with each native sample
 * (core/bpf_ustack.c). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "pidindex.h"
#include "proctree.h"
#include "python.h"
#include "ticker.h"
#include "internal.h"

/* ---- the sampler ---------------------------------------------------------------------- */

#define PY_MAX_THREADS 256

/* 'R' when the thread is running or runnable, its state letter otherwise, 0 when gone; *cpu_ns
 * its time on a CPU so far (schedstat's first field, unless 0: a kernel without schedstats or
 * delay accounting; else utime + stime at the clock tick's resolution; -1 when neither can be
 * read). */
static char thread_state(pid_t pid, int64_t tid, int64_t *cpu_ns) {
  char path[80], buf[512];
  snprintf(path, sizeof path, "/proc/%d/task/%lld/stat", (int)pid, (long long)tid);
  *cpu_ns = -1;
  if (wb_read_small(path, buf, sizeof buf) <= 0) return 0;
  char *rp = strrchr(buf, ')');
  if (!rp || rp[1] != ' ') return 0;
  char state = rp[2];
  unsigned long long utime, stime, ns;
  /* after ") S ": ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime */
  if (sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2) {
    static long hz;
    if (!hz) hz = sysconf(_SC_CLK_TCK);
    if (hz > 0) *cpu_ns = (int64_t)((utime + stime) * (1000000000ull / (unsigned long long)hz));
  }
  snprintf(path, sizeof path, "/proc/%d/task/%lld/schedstat", (int)pid, (long long)tid);
  if (wb_read_small(path, buf, sizeof buf) > 0 && sscanf(buf, "%llu", &ns) == 1 && ns > 0) *cpu_ns = (int64_t)ns;
  return state;
}

/* The CPU time of each thread seen, at its previous sample: what it ran in between is its on-CPU
 * weight (a runnable thread waiting for a CPU is not running). Found by tid through a
 * wb_pidindex (the tid first, as it requires). */
typedef struct thread_cpu {
  int tid;
  int64_t cpu_ns;
} thread_cpu;

/* ---- the sampler ---------------------------------------------------------------------- */

typedef struct stack_count {
  char *key;
  uint64_t hash;
  double oncpu, offcpu; /* seconds: on a CPU; off it (blocked, or waiting on the run queue) */
} stack_count;

typedef struct sampler {
  wb_ticker ticker;
  pid_t root;
  double last; /* when the previous sample was taken */
  wb_pyres *res;
  wb_proctree tree; /* the ticker thread's: the tree under root, scanned every 10 samples */
  double hz;
  stack_count *stacks;
  size_t cap, n;
  thread_cpu *threads;
  size_t tcap, tn;
  wb_pidindex tindex;
  int64_t ticks, thread_samples, truncated;
  wb_pythread scratch[PY_MAX_THREADS];
} sampler;

static uint64_t hash_key(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
}

/* The record of tid in s->threads (made when new, with no CPU time read yet; NULL when out of
 * memory). */
static thread_cpu *thread_slot(sampler *s, int tid) {
  ptrdiff_t at = wb_pidindex_find(&s->tindex, s->threads, sizeof *s->threads, tid);
  if (at >= 0) return &s->threads[at];
  if (s->tn == s->tcap) {
    size_t cap = s->tcap ? s->tcap * 2 : 64;
    thread_cpu *t = realloc(s->threads, cap * sizeof *t);
    if (!t) return NULL;
    s->threads = t, s->tcap = cap;
  }
  s->threads[s->tn] = (thread_cpu){.tid = tid, .cpu_ns = -1};
  if (wb_pidindex_add(&s->tindex, s->threads, sizeof *s->threads, s->tn) != 0) return NULL;
  return &s->threads[s->tn++];
}

/* Adds seconds on a CPU, or off it, to the folded stack key (copied). */
static void count_stack(sampler *s, const char *key, int oncpu, double seconds) {
  if (s->n * 2 >= s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    stack_count *t = calloc(cap, sizeof *t);
    if (!t) return;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->stacks[i].key) continue;
      size_t j = s->stacks[i].hash & (cap - 1);
      while (t[j].key) j = (j + 1) & (cap - 1);
      t[j] = s->stacks[i];
    }
    free(s->stacks);
    s->stacks = t, s->cap = cap;
  }
  uint64_t h = hash_key(key);
  size_t j = h & (s->cap - 1);
  while (s->stacks[j].key && (s->stacks[j].hash != h || strcmp(s->stacks[j].key, key) != 0)) j = (j + 1) & (s->cap - 1);
  if (!s->stacks[j].key) {
    if (!(s->stacks[j].key = strdup(key))) return;
    s->stacks[j].hash = h;
    s->n++;
  }
  if (oncpu) s->stacks[j].oncpu += seconds;
  else s->stacks[j].offcpu += seconds;
}

/* Attaches to the root and to every descendant of it not known yet (wb_pyres_attach). */
static void discover(sampler *s) {
  pid_t tree[1024];
  int n = wb_proctree_scan(&s->tree, s->root, tree, 1024);
  for (int i = 0; i < n; i++) wb_pyres_attach(s->res, tree[i]);
}

/* One sample of every thread of every attached process: the dt seconds since the previous one
 * go to the thread's stack now, split as it spent them: its CPU time since then on-CPU, the rest
 * off-CPU (blocked, or under "[run queue]" when it is runnable). A thread seen for the first time,
 * or whose CPU time cannot be read, is on-CPU for dt when runnable. */
static void tick(sampler *s, double dt) {
  char key[8192];
  static const char run_queue[] = ";[run queue]";
  for (size_t i = 0; i < wb_pyres_count(s->res); i++) {
    wb_pyproc *p = (wb_pyproc *)wb_pyres_proc(s->res, i);
    pid_t pid = wb_pyproc_pid(p);
    int n = wb_pyproc_stacks(s->res, p, s->scratch, PY_MAX_THREADS);
    for (int t = 0; t < n; t++) {
      wb_pythread *th = &s->scratch[t];
      int64_t cpu_ns;
      char st = thread_state(pid, th->tid, &cpu_ns);
      if (!st) continue;
      size_t o = (size_t)snprintf(key, sizeof key, "python %d;%s %lld", (int)pid,
                                  th->tid == pid ? "main thread" : "thread", (long long)th->tid);
      if (th->truncated) o += (size_t)snprintf(key + o, sizeof key - o, ";[truncated]");
      for (int f = th->nframes - 1; f >= 0 && o < sizeof key; f--)
        o += (size_t)snprintf(key + o, sizeof key - o, ";%s", wb_pyres_text(s->res, th->frames[f]));
      if (o + sizeof run_queue > sizeof key) continue;
      s->thread_samples++;
      s->truncated += th->truncated;
      thread_cpu *tc = thread_slot(s, (int)th->tid);
      double ran = st == 'R' ? dt : 0;
      if (tc && tc->cpu_ns >= 0 && cpu_ns >= tc->cpu_ns) {
        /* the kernel adds CPU time at ticks and switches: what overflows this interval is the
         * next one's (the baseline advances by what was counted) */
        ran = fmin((double)(cpu_ns - tc->cpu_ns) / 1e9, dt);
        tc->cpu_ns += (int64_t)(ran * 1e9);
      } else if (tc) {
        tc->cpu_ns = cpu_ns;
      }
      if (ran > dt) ran = dt;
      if (ran > 0) count_stack(s, key, 1, ran);
      if (dt - ran <= 0) continue;
      if (st == 'R') memcpy(key + o, run_queue, sizeof run_queue);
      count_stack(s, key, 0, dt - ran);
    }
  }
  s->ticks++;
}

/* One sample of every attached process (a wb_ticker call); descendants are looked for every 10. */
static void sample(void *arg, double now) {
  sampler *s = arg;
  if (s->ticks % 10 == 0) discover(s);
  tick(s, s->ticks ? now - s->last : 0);
  s->last = now;
}

static void sampler_free(sampler *s) {
  wb_pyres_free(s->res);
  s->res = NULL;
  wb_proctree_free(&s->tree);
  for (size_t i = 0; i < s->cap; i++) free(s->stacks[i].key);
  free(s->stacks);
  s->stacks = NULL, s->cap = s->n = 0;
  free(s->threads);
  s->threads = NULL, s->tcap = s->tn = 0;
  wb_pidindex_free(&s->tindex);
}

typedef struct share_left {
  double frac;
  size_t at;
} share_left;

static int by_frac(const void *a, const void *b) {
  const share_left *x = a, *y = b;
  return x->frac < y->frac ? 1 : x->frac > y->frac ? -1 : (x->at > y->at) - (x->at < y->at);
}

/* The on-CPU seconds of each slot of s->stacks in samples (seconds x hz), rounded so that they add
 * up to the rounded total (largest remainders): stacks of less than half a sample each do not all
 * vanish. malloc'd, s->cap entries; NULL when out of memory. */
static int64_t *on_samples(const sampler *s) {
  int64_t *out = calloc(s->cap ? s->cap : 1, sizeof *out);
  share_left *r = calloc(s->cap ? s->cap : 1, sizeof *r);
  if (!out || !r) {
    free(out), free(r);
    return NULL;
  }
  double total = 0;
  int64_t given = 0;
  size_t n = 0;
  for (size_t i = 0; i < s->cap; i++) {
    if (!s->stacks[i].key || s->stacks[i].oncpu <= 0) continue;
    double x = s->stacks[i].oncpu * s->hz;
    out[i] = (int64_t)x;
    given += out[i];
    total += x;
    r[n++] = (share_left){x - (double)out[i], i};
  }
  qsort(r, n, sizeof *r, by_frac);
  for (size_t k = 0; k < n && given < (int64_t)(total + 0.5); k++, given++) out[r[k].at]++;
  free(r);
  return out;
}

/* ---- Lua API -------------------------------------------------------------------------- */

#define PYTHON_SAMPLER_MT "wb.python.sampler"

void wb_pyres_push_procs(lua_State *L, const wb_pyres *r) {
  size_t n = r ? wb_pyres_count(r) : 0;
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    const wb_pyproc *p = wb_pyres_proc(r, i);
    lua_createtable(L, 0, 3);
    wb_set_int(L, "pid", wb_pyproc_pid(p));
    wb_set_str(L, "version", wb_pyproc_version(p));
    wb_set_str(L, "binary", wb_pyproc_binary(p));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "processes");
  lua_newtable(L);
  for (size_t i = 0, k = 0; r && i < wb_pyres_nskipped(r); i++) {
    pid_t pid;
    const char *image, *why;
    wb_pyres_skipped(r, i, &pid, &image, &why);
    if (!pid) continue;
    lua_createtable(L, 0, 3);
    wb_set_int(L, "pid", pid);
    wb_set_str(L, "image", image);
    wb_set_str(L, "reason", why);
    lua_rawseti(L, -2, (lua_Integer)++k);
  }
  lua_setfield(L, -2, "skipped");
}

/* -- info, err = wb.python.probe(pid) : {version = "3.11.2", binary = path} of a CPython process
 * wb can read, or nil and why not (not CPython, stripped, unsupported version, gone). */
static int l_probe(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  char version[16], binary[256], why[WB_PY_WHY_LEN];
  if (wb_py_probe(pid, version, sizeof version, binary, sizeof binary, why, sizeof why) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "pid %d: %s", (int)pid, why);
    return 2;
  }
  lua_createtable(L, 0, 2);
  wb_set_str(L, "version", version);
  wb_set_str(L, "binary", binary);
  return 1;
}

typedef struct one_reading {
  wb_pyres *res;
  wb_pythread th[64];
} one_reading;

static int reading_gc(lua_State *L) {
  one_reading *o = lua_touserdata(L, 1);
  wb_pyres_free(o->res);
  o->res = NULL;
  return 0;
}

/* -- threads, err = wb.python.stacks(pid) : one reading of the Python stacks of every thread,
 * {{tid, frames = {"func (file.py:12)", ... innermost first, each at the line it executes},
 * truncated}}; nil, err as probe. */
static int l_stacks(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  one_reading *o = lua_newuserdatauv(L, sizeof *o, 0);
  o->res = NULL;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, reading_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  if (!(o->res = wb_pyres_new())) return luaL_error(L, "not enough memory");
  wb_pyproc *p = wb_pyres_attach(o->res, pid);
  if (!p) {
    pid_t spid;
    const char *image, *why;
    wb_pyres_skipped(o->res, 0, &spid, &image, &why);
    lua_pushnil(L);
    lua_pushfstring(L, "pid %d: %s", (int)pid, why);
    return 2;
  }
  int n = wb_pyproc_stacks(o->res, p, o->th, 64);
  if (n < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "pid %d: the interpreter state cannot be read (exited?)", (int)pid);
    return 2;
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 3);
    wb_set_int(L, "tid", o->th[i].tid);
    wb_set_bool(L, "truncated", o->th[i].truncated);
    lua_createtable(L, o->th[i].nframes, 0);
    for (int f = 0; f < o->th[i].nframes; f++) {
      lua_pushstring(L, wb_pyres_text(o->res, o->th[i].frames[f]));
      lua_rawseti(L, -2, f + 1);
    }
    lua_setfield(L, -2, "frames");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* -- s, err = wb.python.sampler(pid [, {hz = 99}]) : samples the Python stacks of pid and of
 * its descendants (looked for every 10 samples) from a thread of wb's, until s:stop(). */
static int l_sampler(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  double hz = wb_opt_number(L, 2, "hz", 99);
  if (!(hz >= 1 && hz <= 10000)) luaL_argerror(L, 2, "hz must be in [1, 10000]");
  sampler *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, PYTHON_SAMPLER_MT);
  s->root = pid;
  s->hz = hz;
  if (!(s->res = wb_pyres_new())) return luaL_error(L, "not enough memory");
  int e = wb_ticker_start(&s->ticker, hz, sample, s);
  if (e) return wb_push_error(L, e, "python sampler");
  return 1;
}

/* -- r = s:stop() : {oncpu = {[folded] = samples}, offcpu = {[folded] = seconds}, ticks,
 * thread_samples, truncated, processes = {{pid, version, binary}}, skipped = {{pid, reason}}}.
 * A folded stack is "python PID;main thread TID|thread TID;outer (f.py:1);...;inner (f.py:9)".
 * Each sample gives the time since the previous one to the thread's stack then: its CPU time in
 * between on-CPU (in samples: seconds x hz, by largest remainders), the rest off-CPU, under "...;[run queue]"
 * when the thread was runnable (waiting for a CPU). */
static int l_sampler_stop(lua_State *L) {
  sampler *s = luaL_checkudata(L, 1, PYTHON_SAMPLER_MT);
  wb_ticker_stop(&s->ticker);
  int64_t *samples = on_samples(s);
  if (!samples && s->n) return luaL_error(L, "not enough memory");
  lua_createtable(L, 0, 7);
  lua_newtable(L);
  lua_newtable(L);
  for (size_t i = 0; i < s->cap; i++) {
    const stack_count *c = &s->stacks[i];
    if (!c->key) continue;
    if (samples[i] > 0) {
      lua_pushinteger(L, samples[i]);
      lua_setfield(L, -3, c->key);
    }
    if (c->offcpu > 0) {
      lua_pushnumber(L, c->offcpu);
      lua_setfield(L, -2, c->key);
    }
  }
  free(samples);
  lua_setfield(L, -3, "offcpu");
  lua_setfield(L, -2, "oncpu");
  wb_set_int(L, "ticks", s->ticks);
  wb_set_int(L, "thread_samples", s->thread_samples);
  wb_set_int(L, "truncated", s->truncated);
  wb_pyres_push_procs(L, s->res);
  sampler_free(s);
  return 1;
}

static int l_sampler_gc(lua_State *L) {
  sampler *s = luaL_checkudata(L, 1, PYTHON_SAMPLER_MT);
  wb_ticker_stop(&s->ticker);
  sampler_free(s);
  return 0;
}

/* -- t = wb.python.layout(minor) : the struct offsets wb uses for CPython 3.<minor> (11 or 12;
 * 3.13's are read from the interpreter), for tests to check against the headers; nil
 * for another minor version. */
static int l_layout(lua_State *L) {
  wb_py_offset off[64];
  int n = wb_py_layout((int)luaL_checkinteger(L, 1), off, 64);
  if (!n) return 0;
  lua_createtable(L, 0, n);
  for (int i = 0; i < n; i++) wb_set_int(L, off[i].name, (lua_Integer)(int64_t)off[i].value);
  return 1;
}

static const luaL_Reg sampler_methods[] = {{"stop", l_sampler_stop}, {NULL, NULL}};
static const luaL_Reg sampler_meta[] = {{"__gc", l_sampler_gc}, {"__close", l_sampler_gc}, {NULL, NULL}};
static const luaL_Reg python_functions[] = {
    {"layout", l_layout}, {"probe", l_probe}, {"sampler", l_sampler}, {"stacks", l_stacks}, {NULL, NULL}};

int luaopen_wb_python(lua_State *L) {
  luaL_newmetatable(L, PYTHON_SAMPLER_MT);
  luaL_setfuncs(L, sampler_meta, 0);
  luaL_newlib(L, sampler_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, python_functions);
  return 1;
}
