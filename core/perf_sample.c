/* wb.perf.sampler: stack sampling with perf_event ring buffers, the path used without BPF, and the
 * side-band records (exec mappings, comm, fork, exit) that symbolize any capture of a process
 * tree. The rings and records are core/perf_ring.c; this file is the Lua object. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "opt.h"
#include "perf.h"
#include "sym.h"
#include "unwind.h"
#include "internal.h"

#define PERF_SAMPLER_MT "wb.perf.sampler"

static wb_sampler *check_sampler(lua_State *L) {
  wb_sampler *s = luaL_checkudata(L, 1, PERF_SAMPLER_MT);
  if (s->closed) luaL_error(L, "wb.perf.sampler is closed");
  return s;
}

/* -- s, err, errno = wb.perf.sampler(pid [, opts]) : one event + ring per online CPU on pid and
 * its descendants, enabled at pid's next exec (spawn it held). opts: freq = 99 (cpu-clock samples
 * per second with user and kernel call chains), sample = true (false: only the side-band records,
 * for symbolizing another sampler's stacks), pages = 64 (ring size per CPU, a power of two),
 * unwind = "fp" (the kernel's frame-pointer user call chains) | "dwarf" (each sample carries the user
 * registers and the top stack_size = 8192 bytes of the user stack, walked with each object's CFI as
 * the rings are drained; x86-64).
 * Without the privilege to see kernel stacks (perf_event_paranoid) it falls back to user space
 * only: s.user_only. nil, "perf sampler: ...", errno when perf_event_open or mmap fails. */
int wb_perf_sampler(lua_State *L) {
  lua_Integer pid = luaL_checkinteger(L, 1);
  int opts = wb_opt_table(L, 2);
  lua_Integer freq = wb_opt_int(L, opts, "freq", 99, 1, 100000);
  lua_Integer pages = wb_opt_integer(L, opts, "pages", 64);
  int sampling = wb_opt_bool(L, opts, "sample", 1);
  const char *unwind = wb_opt_string(L, opts, "unwind", "fp");
  lua_Integer stack_size = wb_opt_integer(L, opts, "stack_size", 8192);
  luaL_argcheck(L, strcmp(unwind, "fp") == 0 || strcmp(unwind, "dwarf") == 0, 2,
                "unwind must be \"fp\" or \"dwarf\"");
  luaL_argcheck(L, stack_size >= 512 && stack_size <= 65528 && stack_size % 8 == 0, 2,
                "stack_size must be a multiple of 8 in 512..65528");
  luaL_argcheck(L, pages > 0 && pages <= 4096 && (pages & (pages - 1)) == 0, 2,
                "pages must be a power of two up to 4096");
  wb_sampler *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, PERF_SAMPLER_MT);
#if defined(__x86_64__)
  if (strcmp(unwind, "dwarf") == 0) s->stack_user = (uint32_t)stack_size;
#else
  if (strcmp(unwind, "dwarf") == 0) return luaL_error(L, "wb.perf.sampler: unwind = \"dwarf\" needs x86-64");
#endif
  int e = wb_sampler_open(s, (pid_t)pid, sampling, (long)freq, (size_t)pages);
  if (e)
    return wb_push_error(L, e, e == EACCES || e == EPERM ? "perf sampler (perf_event_paranoid)"
                                                         : "perf sampler");
  return 1;
}

/* -- n = s:drain() : moves the pending records out of the rings (call it periodically while the
 * target runs, so the rings do not overflow); returns how many there were */
static int l_drain(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)wb_sampler_drain(check_sampler(L)));
  return 1;
}

static void push_ips(lua_State *L, const uint64_t *ips, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)ips[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static void push_tasks(lua_State *L, wb_sampler *s, struct vec *v, const char *name) {
  struct task_rec *t = v->p;
  char (*comms)[WB_COMM_SIZE] = s->comms.p;
  lua_createtable(L, (int)v->n, 0);
  for (size_t i = 0; i < v->n; i++) {
    lua_createtable(L, 0, 4);
    wb_set_int(L, "pid", t[i].pid);
    wb_set_int(L, "time", (lua_Integer)t[i].time);
    if (v == &s->execs) {
      wb_set_str(L, "comm", comms[t[i].comm]);
    } else {
      wb_set_int(L, "ppid", t[i].ppid);
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, name);
}

/* -- t = s:read() : drains, then everything recorded so far: {samples = {{pid, comm, user = {ips,
 * leaf first}, kernel = {ips}, count}}, mappings = {{pid, time, addr, len, pgoff, path,
 * build_id (hex) | maj, min, ino}}, execs = {{pid, comm, time}}, forks = {{pid, ppid, time}}, exits = {{pid,
 * ppid, time}}, sample_count, lost, user_only, unwind?}. Times are CLOCK_MONOTONIC nanoseconds.
 * unwind (with unwind = "dwarf"): wb.unwind's u:stats() plus stack_bytes (copied in all) and
 * stack_size. */
static int l_read(lua_State *L) {
  wb_sampler *s = check_sampler(L);
  wb_sampler_drain(s);
  lua_createtable(L, 0, 9);
  struct stack_entry *st = s->stacks.p;
  const uint64_t *pool = s->ip_pool.p;
  char (*comms)[WB_COMM_SIZE] = s->comms.p;
  lua_createtable(L, (int)s->stacks.n, 0);
  for (size_t i = 0; i < s->stacks.n; i++) {
    lua_createtable(L, 0, 5);
    wb_set_int(L, "pid", st[i].pid);
    wb_set_str(L, "comm", comms[st[i].comm]);
    push_ips(L, pool + st[i].ips, st[i].nk);
    lua_setfield(L, -2, "kernel");
    push_ips(L, pool + st[i].ips + st[i].nk, st[i].nu);
    lua_setfield(L, -2, "user");
    wb_set_int(L, "count", (lua_Integer)st[i].count);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "samples");
  struct mapping_rec *m = s->mappings.p;
  lua_createtable(L, (int)s->mappings.n, 0);
  for (size_t i = 0; i < s->mappings.n; i++) {
    lua_createtable(L, 0, 7);
    wb_set_int(L, "pid", m[i].pid);
    wb_set_int(L, "addr", (lua_Integer)m[i].addr);
    wb_set_int(L, "len", (lua_Integer)m[i].len);
    wb_set_int(L, "pgoff", (lua_Integer)m[i].pgoff);
    wb_set_int(L, "time", (lua_Integer)m[i].time);
    wb_set_str(L, "path", m[i].path);
    if (m[i].build_id_size) {
      char hex[2 * sizeof m[i].build_id + 1];
      wb_hex(m[i].build_id, m[i].build_id_size, hex, sizeof hex);
      wb_set_str(L, "build_id", hex);
    } else {
      wb_set_int(L, "maj", m[i].maj);
      wb_set_int(L, "min", m[i].min);
      wb_set_int(L, "ino", (lua_Integer)m[i].ino);
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "mappings");
  push_tasks(L, s, &s->execs, "execs");
  push_tasks(L, s, &s->forks, "forks");
  push_tasks(L, s, &s->exits, "exits");
  wb_set_int(L, "sample_count", (lua_Integer)s->samples);
  wb_set_int(L, "lost", (lua_Integer)s->lost);
  wb_set_bool(L, "user_only", s->user_only);
  if (s->unwinder) {
    wb_unwind_push_stats(L, s->unwinder);
    wb_set_int(L, "stack_bytes", (lua_Integer)s->stack_bytes);
    wb_set_int(L, "stack_size", (lua_Integer)s->stack_user);
    lua_setfield(L, -2, "unwind");
  }
  return 1;
}

static int set_enabled(lua_State *L, unsigned long request) {
  wb_sampler *s = check_sampler(L);
  for (int i = 0; i < s->nrings; i++) ioctl(s->rings[i].fd, request, 0);
  return 0;
}

/* -- s:enable() : starts now instead of at the next exec */
static int l_enable(lua_State *L) { return set_enabled(L, PERF_EVENT_IOC_ENABLE); }

/* -- s:disable() : stops sampling; what was recorded stays readable */
static int l_disable(lua_State *L) { return set_enabled(L, PERF_EVENT_IOC_DISABLE); }

/* -- s:close() : releases events, rings and records; idempotent (also __gc, __close) */
static int l_close(lua_State *L) {
  wb_sampler *s = luaL_checkudata(L, 1, PERF_SAMPLER_MT);
  if (!s->closed) wb_sampler_release(s);
  return 0;
}

/* s.user_only, then the methods */
static int l_index(lua_State *L) {
  wb_sampler *s = luaL_checkudata(L, 1, PERF_SAMPLER_MT);
  const char *key = lua_tostring(L, 2);
  if (key && strcmp(key, "user_only") == 0) {
    lua_pushboolean(L, s->user_only);
    return 1;
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

static int l_tostring(lua_State *L) {
  wb_sampler *s = luaL_checkudata(L, 1, PERF_SAMPLER_MT);
  if (s->closed) lua_pushliteral(L, "wb.perf.sampler (closed)");
  else lua_pushfstring(L, "wb.perf.sampler (%d CPUs, %s)", s->nrings, s->sampling ? "sampling" : "side-band");
  return 1;
}

static const luaL_Reg sampler_methods[] = {{"close", l_close},     {"disable", l_disable},
                                           {"drain", l_drain},     {"enable", l_enable},
                                           {"read", l_read},       {NULL, NULL}};

void wb_perf_sampler_init(lua_State *L) {
  wb_new_class(L, PERF_SAMPLER_MT, sampler_methods, l_index, l_close, l_tostring);
}
