/* wb.memory: the memory of a process tree over time — RSS, PSS and swap of every process and of
 * the tree — sampled at a fixed rate from a thread of wb's: /proc/PID/status (VmRSS, VmHWM,
 * VmSwap) and, where cheap, /proc/PID/smaps_rollup (Pss: a process's share of pages it shares,
 * so that the tree's PSS does not count a shared page twice as its RSS does). VmHWM is the
 * kernel's own high-water mark of the process image it runs, so a process's peak is exact for
 * every process sampled at least once, even between samples, and is the child's alone (the
 * wait4 figure also holds the spawner's peak). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opt.h"
#include "internal.h"
#include "proctree.h"
#include "ticker.h"

#define MAX_TREE 1024
#define PSS_BUDGET_S 0.004 /* a process whose smaps_rollup takes longer is sampled without PSS */

typedef struct mproc {
  pid_t pid, ppid;
  char comm[32];
  double first_t, last_t, peak_t;
  int64_t peak_rss_kb, hwm_kb, peak_pss_kb, peak_swap_kb;
  int pss_off;
} mproc;

typedef struct point { /* one process at one tick */
  int32_t proc;
  int32_t tick;
  int64_t rss_kb, pss_kb, swap_kb; /* pss_kb -1: not read */
} point;

typedef struct msampler {
  wb_ticker ticker;
  pid_t root;
  wb_proctree tree; /* the ticker thread's, freed with the sampler */
  double hz, t0;
  int want_pss;
  double *t;
  int64_t *rss, *pss, *swap; /* tree totals per tick */
  size_t ticks, cap;
  mproc *procs;
  int nprocs, capprocs;
  point *points;
  size_t npoints, cappoints;
  int pss_partial; /* a tick whose PSS total leaves out a process (pss_off) */
} msampler;

/* The value in kB of the line "key:   N kB" in text, or -1. */
static int64_t kb_field(const char *text, const char *key) {
  const char *p = strstr(text, key);
  if (!p) return -1;
  return strtoll(p + strlen(key), NULL, 10);
}

/* Reads pid's status: 0 with the figures, -1 when it has no memory to show (gone, a zombie, a
 * kernel thread). */
static int read_status(pid_t pid, int64_t *rss, int64_t *hwm, int64_t *swap, pid_t *ppid, char *comm, size_t commlen) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  if (wb_read_small(path, buf, sizeof buf) <= 0) return -1;
  *rss = kb_field(buf, "\nVmRSS:");
  if (*rss < 0) return -1;
  *hwm = kb_field(buf, "\nVmHWM:");
  *swap = kb_field(buf, "\nVmSwap:");
  if (*swap < 0) *swap = 0;
  const char *pp = strstr(buf, "\nPPid:");
  *ppid = pp ? (pid_t)atoi(pp + 6) : 0;
  if (strncmp(buf, "Name:", 5) == 0) {
    const char *n = buf + 5;
    while (*n == ' ' || *n == '\t') n++;
    size_t len = strcspn(n, "\n");
    if (len >= commlen) len = commlen - 1;
    memcpy(comm, n, len);
    comm[len] = 0;
  }
  return 0;
}

/* Whether pid still runs wb's gate (core/spawn_exec.c: argv "wb __gate EXE ..."), a held child
 * not yet released into its program: its memory is wb's binary's, not the program's. */
static int is_gate(pid_t pid) {
  char path[64], buf[16];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  ssize_t n = wb_read_small(path, buf, sizeof buf);
  return n >= 10 && memcmp(buf, "wb\0__gate\0", 10) == 0;
}

/* Pss of pid in kB from smaps_rollup, or -1. */
static int64_t read_pss(pid_t pid) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
  return wb_read_small(path, buf, sizeof buf) > 0 ? kb_field(buf, "\nPss:") : -1;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return -1;
  *p = q, *cap = c;
  return 0;
}

static int proc_index(msampler *s, pid_t pid) {
  for (int i = 0; i < s->nprocs; i++)
    if (s->procs[i].pid == pid) return i;
  return -1;
}

/* One sample of the tree (a wb_ticker call). */
static void tick(void *arg, double now) {
  msampler *s = arg;
  pid_t tree[MAX_TREE];
  int n = wb_proctree_scan(&s->tree, s->root, tree, MAX_TREE);
  double t = now - s->t0;
  size_t cap1 = s->cap;
  if (grow((void **)&s->t, &cap1, s->ticks + 1, sizeof *s->t)) return;
  size_t cap2 = s->cap, cap3 = s->cap, cap4 = s->cap;
  if (grow((void **)&s->rss, &cap2, s->ticks + 1, sizeof *s->rss) || grow((void **)&s->pss, &cap3, s->ticks + 1, sizeof *s->pss) ||
      grow((void **)&s->swap, &cap4, s->ticks + 1, sizeof *s->swap))
    return;
  s->cap = cap1;
  int64_t rss_total = 0, pss_total = 0, swap_total = 0;
  int seen = 0;
  for (int i = 0; i < n; i++) {
    int64_t rss, hwm, swap;
    pid_t ppid;
    char comm[32] = "";
    if (read_status(tree[i], &rss, &hwm, &swap, &ppid, comm, sizeof comm) != 0) continue;
    int k = proc_index(s, tree[i]);
    if (k < 0 && is_gate(tree[i])) continue; /* seen once it runs its program */
    if (k < 0) {
      size_t capp = (size_t)s->capprocs;
      if (grow((void **)&s->procs, &capp, (size_t)s->nprocs + 1, sizeof *s->procs)) continue;
      s->capprocs = (int)capp;
      k = s->nprocs++;
      memset(&s->procs[k], 0, sizeof s->procs[k]);
      s->procs[k].pid = tree[i];
      s->procs[k].first_t = t;
      s->procs[k].peak_pss_kb = -1;
    }
    mproc *m = &s->procs[k];
    m->ppid = ppid;
    if (comm[0]) snprintf(m->comm, sizeof m->comm, "%s", comm);
    m->last_t = t;
    if (rss > m->peak_rss_kb) m->peak_rss_kb = rss, m->peak_t = t;
    m->hwm_kb = hwm; /* monotonic within one image; after an exec, the new image's own */
    if (swap > m->peak_swap_kb) m->peak_swap_kb = swap;
    int64_t pss = -1;
    if (s->want_pss && !m->pss_off) {
      double a = wb_ticker_now();
      pss = read_pss(tree[i]);
      if (wb_ticker_now() - a > PSS_BUDGET_S) m->pss_off = 1;
      if (pss > m->peak_pss_kb) m->peak_pss_kb = pss;
    }
    if (s->want_pss && pss < 0) s->pss_partial = 1;
    size_t capq = s->cappoints;
    if (grow((void **)&s->points, &capq, s->npoints + 1, sizeof *s->points) == 0) {
      s->cappoints = capq;
      s->points[s->npoints++] = (point){k, (int32_t)s->ticks, rss, pss, swap};
    }
    rss_total += rss, swap_total += swap, pss_total += pss > 0 ? pss : 0;
    seen++;
  }
  if (!seen && s->ticks > 0) return; /* the tree is gone: no empty point after its end */
  s->t[s->ticks] = t;
  s->rss[s->ticks] = rss_total;
  s->pss[s->ticks] = pss_total;
  s->swap[s->ticks] = swap_total;
  s->ticks++;
}

static void sampler_free(msampler *s) {
  free(s->t), free(s->rss), free(s->pss), free(s->swap), free(s->procs), free(s->points);
  wb_proctree_free(&s->tree);
  s->t = NULL, s->rss = s->pss = s->swap = NULL, s->procs = NULL, s->points = NULL;
  s->ticks = s->cap = s->npoints = s->cappoints = 0, s->nprocs = s->capprocs = 0;
}

/* ---- Lua API -------------------------------------------------------------------------- */

#define MEMORY_SAMPLER_MT "wb.memory.sampler"

/* -- s, err = wb.memory.sampler(pid [, {hz = 20, pss = true}]) : samples the memory of pid and
 * of its descendants until s:stop(). */
static int l_sampler(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  double hz = wb_opt_number(L, 2, "hz", 20);
  if (!(hz >= 1 && hz <= 1000)) luaL_argerror(L, 2, "hz must be in [1, 1000]");
  int pss = wb_opt_bool(L, 2, "pss", 1);
  msampler *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, MEMORY_SAMPLER_MT);
  s->root = pid, s->hz = hz, s->want_pss = pss, s->t0 = wb_ticker_now();
  tick(s, s->t0); /* at once: a command that lives less than one period is still seen */
  int e = wb_ticker_start(&s->ticker, hz, tick, s);
  if (e) {
    lua_pushnil(L);
    lua_pushfstring(L, "memory sampler: %s", strerror(e));
    return 2;
  }
  return 1;
}

static void push_i64_list(lua_State *L, const int64_t *v, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushinteger(L, v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* See core/internal.h. How far apart two reads of one process's RSS high-water mark can be (KiB). Linux keeps RSS in
 * per-CPU counters (6.2+) and reads them without summing the CPUs' pending deltas, each below
 * percpu_counter_batch = max(32, 2 x CPUs) pages, so the figure exec hands down and VmHWM read
 * later can each be off by that many pages per CPU, in either direction. */
static long rss_error_kb(long ran_on) {
  long cpus = sysconf(_SC_NPROCESSORS_CONF), page_kb = sysconf(_SC_PAGESIZE) / 1024;
  if (cpus < 1) cpus = 1;
  if (page_kb < 1) page_kb = 4;
  long batch = 2 * cpus > 32 ? 2 * cpus : 32;
  return 2 * batch * (ran_on > 0 && ran_on < cpus ? ran_on : cpus) * page_kb;
}

long wb_rss_read_error_kb(void) { return rss_error_kb(0); }

/* -- r = s:stop() : {hz, t0 (CLOCK_MONOTONIC seconds of t = 0), ticks, timeline = {t, rss_kb, pss_kb, swap_kb} (the tree's totals per
 * sample, t in seconds from the start), peak = {rss_kb, t, pss_kb}, pss_partial, processes =
 * {{pid, ppid, comm, first_t, last_t, peak_rss_kb, peak_t, hwm_kb, peak_pss_kb, peak_swap_kb,
 * series = {t, rss_kb, pss_kb}}} in the order they were first seen}. hwm_kb: the process's own
 * peak (the kernel's VmHWM) as last seen: the peak of the image it last ran, not of one it
 * replaced by an exec; peak_pss_kb -1 when PSS was not read. rss_error_kb: how far two
 * reads of one process's RSS may differ (wb_rss_read_error_kb). */
static int l_sampler_stop(lua_State *L) {
  msampler *s = luaL_checkudata(L, 1, MEMORY_SAMPLER_MT);
  wb_ticker_stop(&s->ticker);
  lua_createtable(L, 0, 6);
  wb_set_num(L, "hz", s->hz);
  wb_set_num(L, "t0", s->t0);
  wb_set_int(L, "ticks", (lua_Integer)s->ticks);
  wb_set_bool(L, "pss_partial", s->pss_partial);
  wb_set_int(L, "rss_error_kb", wb_rss_read_error_kb());
  lua_createtable(L, 0, 4);
  lua_createtable(L, (int)s->ticks, 0);
  for (size_t i = 0; i < s->ticks; i++) {
    lua_pushnumber(L, s->t[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "t");
  push_i64_list(L, s->rss, s->ticks);
  lua_setfield(L, -2, "rss_kb");
  if (s->want_pss) {
    push_i64_list(L, s->pss, s->ticks);
    lua_setfield(L, -2, "pss_kb");
  }
  push_i64_list(L, s->swap, s->ticks);
  lua_setfield(L, -2, "swap_kb");
  lua_setfield(L, -2, "timeline");
  size_t at = 0;
  for (size_t i = 1; i < s->ticks; i++)
    if (s->rss[i] > s->rss[at]) at = i;
  lua_createtable(L, 0, 3);
  if (s->ticks) {
    wb_set_int(L, "rss_kb", s->rss[at]);
    wb_set_num(L, "t", s->t[at]);
    int64_t pss_peak = 0;
    for (size_t i = 0; s->want_pss && i < s->ticks; i++)
      if (s->pss[i] > pss_peak) pss_peak = s->pss[i];
    if (s->want_pss) wb_set_int(L, "pss_kb", pss_peak);
  }
  lua_setfield(L, -2, "peak");
  lua_createtable(L, s->nprocs, 0);
  for (int k = 0; k < s->nprocs; k++) {
    const mproc *m = &s->procs[k];
    lua_createtable(L, 0, 11);
    wb_set_int(L, "pid", m->pid);
    wb_set_int(L, "ppid", m->ppid);
    wb_set_str(L, "comm", m->comm);
    wb_set_num(L, "first_t", m->first_t);
    wb_set_num(L, "last_t", m->last_t);
    wb_set_int(L, "peak_rss_kb", m->peak_rss_kb);
    wb_set_num(L, "peak_t", m->peak_t);
    wb_set_int(L, "hwm_kb", m->hwm_kb);
    wb_set_int(L, "peak_pss_kb", m->peak_pss_kb);
    wb_set_int(L, "peak_swap_kb", m->peak_swap_kb);
    lua_createtable(L, 0, 3);
    lua_newtable(L);
    lua_newtable(L);
    lua_newtable(L);
    int n = 0;
    for (size_t i = 0; i < s->npoints; i++) {
      const point *pt = &s->points[i];
      if (pt->proc != k) continue;
      n++;
      lua_pushnumber(L, s->t[pt->tick < (int32_t)s->ticks ? pt->tick : (int32_t)s->ticks - 1]);
      lua_rawseti(L, -4, n);
      lua_pushinteger(L, pt->rss_kb);
      lua_rawseti(L, -3, n);
      lua_pushinteger(L, pt->pss_kb);
      lua_rawseti(L, -2, n);
    }
    lua_setfield(L, -4, "pss_kb");
    lua_setfield(L, -3, "rss_kb");
    lua_setfield(L, -2, "t");
    lua_setfield(L, -2, "series");
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, "processes");
  sampler_free(s);
  return 1;
}

static int l_sampler_gc(lua_State *L) {
  msampler *s = luaL_checkudata(L, 1, MEMORY_SAMPLER_MT);
  wb_ticker_stop(&s->ticker);
  sampler_free(s);
  return 0;
}

static const luaL_Reg sampler_methods[] = {{"stop", l_sampler_stop}, {NULL, NULL}};
static const luaL_Reg sampler_meta[] = {{"__gc", l_sampler_gc}, {"__close", l_sampler_gc}, {NULL, NULL}};
/* -- kb = wb.memory.rss_error_kb([cpus]) : how far apart two reads of one process's RSS or peak
 * RSS can be, in KiB (the kernel's per-CPU RSS counters, read without their pending deltas), for
 * a process that ran on `cpus` CPUs (default: all of them, the bound wb.proc's maxrss_bound uses) */
static int l_rss_error_kb(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)rss_error_kb((long)luaL_optinteger(L, 1, 0)));
  return 1;
}

static const luaL_Reg memory_functions[] = {{"rss_error_kb", l_rss_error_kb}, {"sampler", l_sampler}, {NULL, NULL}};

int luaopen_wb_memory(lua_State *L) {
  luaL_newmetatable(L, MEMORY_SAMPLER_MT);
  luaL_setfuncs(L, sampler_meta, 0);
  luaL_newlib(L, sampler_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, memory_functions);
  return 1;
}
