/* The fuzz targets' Lua state (see fuzz_lua.h): one per process, reused across inputs. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_lua.h"
#include "internal.h"

#ifndef FUZZ_LUA_DIR
#error "FUZZ_LUA_DIR must name the directory of the Lua drivers"
#endif

/* liblua is not instrumented, so libFuzzer would see no coverage of the Lua code a driver runs.
 * It reads this section as extra features: a line hook counts the edges between consecutive Lua
 * lines (hashed line numbers) while a driver runs. */
#define LUA_EDGES 65536
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t lua_edges[LUA_EDGES];
static unsigned prev_line;

static void line_hook(lua_State *L, lua_Debug *ar) {
  (void)L;
  unsigned line = (unsigned)ar->currentline;
  lua_edges[(prev_line * 0x9E3779B1u ^ line) & (LUA_EDGES - 1)]++;
  prev_line = line;
}

static lua_State *state;
static const char DRIVER_KEY = 'd'; /* registry key of the driver function */
static char tmp_path[64];
static int tmp_fd = -1;

static void close_state(void) {
  if (state) lua_close(state);
  state = NULL;
  if (tmp_fd >= 0) close(tmp_fd);
}

/* -- path = fuzz.tmpfile(data) : a file of this process now holding data: an unlinked file (so a
 * crash leaves nothing behind) named through /proc/self/fd */
static int l_tmpfile(lua_State *L) {
  size_t n;
  const char *data = luaL_checklstring(L, 1, &n);
  if (tmp_fd < 0) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; /* tmpfs: no disk I/O */
    snprintf(tmp_path, sizeof tmp_path, "%s/wb-fuzz-XXXXXX", dir);
    tmp_fd = mkstemp(tmp_path);
    if (tmp_fd < 0) return luaL_error(L, "fuzz.tmpfile: %s: %s", tmp_path, strerror(errno));
    unlink(tmp_path);
    snprintf(tmp_path, sizeof tmp_path, "/proc/self/fd/%d", tmp_fd);
  }
  if (ftruncate(tmp_fd, 0) != 0 || pwrite(tmp_fd, data, n, 0) != (ssize_t)n)
    return luaL_error(L, "fuzz.tmpfile: %s: %s", tmp_path, strerror(errno));
  lua_pushstring(L, tmp_path);
  return 1;
}

static int traceback(lua_State *L) {
  const char *msg = luaL_tolstring(L, 1, NULL);
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static void die(lua_State *L, const char *what) {
  fprintf(stderr, "fuzz: %s: %s\n", what, lua_tostring(L, -1));
  fflush(stderr);
  abort();
}

lua_State *fuzz_lua_state(const char *name, const luaL_Reg *extra) {
  if (state) return state;
  lua_State *L = luaL_newstate();
  if (!L) abort();
  wb_open(L);
  lua_getglobal(L, "package");
  lua_pushliteral(L, FUZZ_LUA_DIR "/?.lua;");
  lua_getfield(L, -2, "path");
  lua_concat(L, 2);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, l_tmpfile);
  lua_setfield(L, -2, "tmpfile");
  if (extra) luaL_setfuncs(L, extra, 0);
  lua_setglobal(L, "fuzz");
  lua_pushcfunction(L, traceback);
  lua_pushfstring(L, "%s/%s.lua", FUZZ_LUA_DIR, name);
  if (luaL_loadfile(L, lua_tostring(L, -1)) != LUA_OK) die(L, "loading the driver");
  if (lua_pcall(L, 0, 1, -3) != LUA_OK) die(L, "running the driver");
  if (!lua_isfunction(L, -1)) {
    lua_pushfstring(L, "%s.lua must return a function", name);
    die(L, "driver");
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, &DRIVER_KEY);
  lua_settop(L, 0);
  state = L;
  atexit(close_state);
  return L;
}

void fuzz_lua_call(lua_State *L, const uint8_t *data, size_t size) {
  lua_pushcfunction(L, traceback);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &DRIVER_KEY);
  lua_pushlstring(L, (const char *)data, size);
  prev_line = 0;
  lua_sethook(L, line_hook, LUA_MASKLINE, 0);
  int status = lua_pcall(L, 1, 0, 1);
  lua_sethook(L, NULL, 0, 0);
  if (status != LUA_OK) die(L, "finding");
  lua_settop(L, 0);
}
