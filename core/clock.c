/* wb.clock: monotonic nanosecond clock, wall clock, timers and nested stage timing.
 *
 * Stages form a tree recorded in call order: stage_begin/stage_end (or stage(name, fn)) push and
 * pop a stack; stages() lists every finished and open stage with its depth and parent, which is
 * what Chrome trace-event export and stage reports need. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "wb_c.h"

#define TIMER_MT "wb.clock.timer"
#define MAX_DEPTH 64

typedef struct {
  int64_t start_ns;
} timer;

typedef struct {
  char *name;
  int64_t start_ns;
  int64_t dur_ns; /* -1 while open */
  int depth;
  int parent; /* index into stages, -1 for top level */
} stage;

static stage *stages;
static size_t nstages, capstages;
static int open_stack[MAX_DEPTH];
static int open_depth;

/* -- ns = wb.clock.now() : monotonic time in integer nanoseconds */
static int l_now(lua_State *L) {
  lua_pushinteger(L, wb_clock_ns());
  return 1;
}

/* -- seconds = wb.clock.wall() : real time since the epoch, as a float */
static int l_wall(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + ts.tv_nsec / 1e9);
  return 1;
}

/* -- s = wb.clock.utc([seconds [, format]]) : UTC time formatted with strftime; default
 * format "%Y-%m-%dT%H:%M:%SZ", default time now */
static int l_utc(lua_State *L) {
  time_t t = luaL_opt(L, (time_t)luaL_checknumber, 1, time(NULL));
  const char *fmt = luaL_optstring(L, 2, "%Y-%m-%dT%H:%M:%SZ");
  struct tm tm;
  char buf[256];
  if (!gmtime_r(&t, &tm)) return luaL_argerror(L, 1, "time out of range");
  size_t n = strftime(buf, sizeof buf, fmt, &tm);
  lua_pushlstring(L, buf, n);
  return 1;
}

/* -- wb.clock.sleep(seconds) : sleeps; returns early (raising the interrupt) on SIGINT/SIGTERM */
static int l_sleep(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  luaL_argcheck(L, s >= 0, 1, "negative duration");
  struct timespec req = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}, rem;
  while (nanosleep(&req, &rem) != 0 && errno == EINTR) {
    if (wb_signal_pending()) return wb_raise_interrupt(L);
    req = rem;
  }
  return 0;
}

/* -- t = wb.clock.timer() : a started timer; t:elapsed() seconds (float), t:elapsed_ns(),
 * t:restart() returns the elapsed seconds and starts again */
static int l_timer(lua_State *L) {
  timer *t = lua_newuserdatauv(L, sizeof *t, 0);
  t->start_ns = wb_clock_ns();
  luaL_setmetatable(L, TIMER_MT);
  return 1;
}

static int timer_elapsed(lua_State *L) {
  timer *t = luaL_checkudata(L, 1, TIMER_MT);
  lua_pushnumber(L, (double)(wb_clock_ns() - t->start_ns) / 1e9);
  return 1;
}

static int timer_elapsed_ns(lua_State *L) {
  timer *t = luaL_checkudata(L, 1, TIMER_MT);
  lua_pushinteger(L, wb_clock_ns() - t->start_ns);
  return 1;
}

static int timer_restart(lua_State *L) {
  timer *t = luaL_checkudata(L, 1, TIMER_MT);
  int64_t now = wb_clock_ns();
  lua_pushnumber(L, (double)(now - t->start_ns) / 1e9);
  t->start_ns = now;
  return 1;
}

static int timer_tostring(lua_State *L) {
  timer *t = luaL_checkudata(L, 1, TIMER_MT);
  lua_pushfstring(L, "wb.clock.timer (%f s)", (double)(wb_clock_ns() - t->start_ns) / 1e9);
  return 1;
}

/* -- index = wb.clock.stage_begin(name) : opens a stage nested in the innermost open one */
static int l_stage_begin(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  if (open_depth >= MAX_DEPTH) return luaL_error(L, "stages nested deeper than %d", MAX_DEPTH);
  if (nstages == capstages) {
    size_t cap = capstages ? capstages * 2 : 64;
    stage *grown = realloc(stages, cap * sizeof *grown);
    if (!grown) return luaL_error(L, "out of memory");
    stages = grown;
    capstages = cap;
  }
  char *copy = strdup(name);
  if (!copy) return luaL_error(L, "out of memory");
  stage *s = &stages[nstages];
  s->name = copy;
  s->start_ns = wb_clock_ns();
  s->dur_ns = -1;
  s->depth = open_depth;
  s->parent = open_depth ? open_stack[open_depth - 1] : -1;
  open_stack[open_depth++] = (int)nstages;
  lua_pushinteger(L, (lua_Integer)++nstages);
  return 1;
}

/* -- seconds = wb.clock.stage_end([name]) : closes the innermost open stage (its name must match
 * when given) and returns its duration */
static int l_stage_end(lua_State *L) {
  const char *name = luaL_optstring(L, 1, NULL);
  if (open_depth == 0) return luaL_error(L, "stage_end without an open stage");
  stage *s = &stages[open_stack[open_depth - 1]];
  if (name && strcmp(name, s->name) != 0)
    return luaL_error(L, "stage_end('%s') but the open stage is '%s'", name, s->name);
  open_depth--;
  s->dur_ns = wb_clock_ns() - s->start_ns;
  lua_pushnumber(L, (double)s->dur_ns / 1e9);
  return 1;
}

static int stage_finish(lua_State *L, int status, lua_KContext ctx) {
  (void)ctx;
  int saved_depth = (int)lua_tointeger(L, 2);
  if (status != LUA_OK && status != LUA_YIELD) {
    while (open_depth > saved_depth) { /* close what the failed function left open */
      stage *s = &stages[open_stack[--open_depth]];
      s->dur_ns = wb_clock_ns() - s->start_ns;
    }
    return lua_error(L);
  }
  if (open_depth > saved_depth + 1) return luaL_error(L, "stage function left stages open");
  lua_pushcfunction(L, l_stage_end);
  lua_call(L, 0, 0);
  return lua_gettop(L) - 3;
}

/* -- ... = wb.clock.stage(name, fn, ...) : runs fn(...) inside a stage; the stage is closed even
 * when fn raises (the error propagates); returns fn's results */
static int l_stage(lua_State *L) {
  luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  int nargs = lua_gettop(L) - 2;
  lua_pushinteger(L, open_depth);
  lua_insert(L, 2); /* name, depth, fn, args... */
  lua_pushcfunction(L, l_stage_begin);
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  lua_insert(L, 3); /* name, depth, index, fn, args... */
  int status = lua_pcallk(L, nargs, LUA_MULTRET, 0, 0, stage_finish);
  return stage_finish(L, status, 0);
}

/* -- list = wb.clock.stages() : every stage in begin order:
 * {name, depth (0 = top), parent (1-based index or nil), start_ns, dur_ns (nil while open)} */
static int l_stages(lua_State *L) {
  lua_createtable(L, (int)nstages, 0);
  for (size_t i = 0; i < nstages; i++) {
    stage *s = &stages[i];
    lua_createtable(L, 0, 5);
    lua_pushstring(L, s->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, s->depth);
    lua_setfield(L, -2, "depth");
    if (s->parent >= 0) {
      lua_pushinteger(L, s->parent + 1);
      lua_setfield(L, -2, "parent");
    }
    lua_pushinteger(L, s->start_ns);
    lua_setfield(L, -2, "start_ns");
    if (s->dur_ns >= 0) {
      lua_pushinteger(L, s->dur_ns);
      lua_setfield(L, -2, "dur_ns");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* -- wb.clock.reset_stages() : forgets all stages (open ones too) */
static int l_reset_stages(lua_State *L) {
  (void)L;
  for (size_t i = 0; i < nstages; i++) free(stages[i].name);
  nstages = 0;
  open_depth = 0;
  return 0;
}

static const luaL_Reg functions[] = {{"now", l_now},
                                     {"reset_stages", l_reset_stages},
                                     {"sleep", l_sleep},
                                     {"stage", l_stage},
                                     {"stage_begin", l_stage_begin},
                                     {"stage_end", l_stage_end},
                                     {"stages", l_stages},
                                     {"timer", l_timer},
                                     {"utc", l_utc},
                                     {"wall", l_wall},
                                     {NULL, NULL}};

static const luaL_Reg timer_methods[] = {{"elapsed", timer_elapsed},
                                        {"elapsed_ns", timer_elapsed_ns},
                                        {"restart", timer_restart},
                                        {NULL, NULL}};

int luaopen_wb_clock(lua_State *L) {
  luaL_newmetatable(L, TIMER_MT);
  luaL_newlib(L, timer_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, timer_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  luaL_newlib(L, functions);
  return 1;
}
