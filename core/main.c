/* The wb binary: sets up Lua, hands the command line to lua/wb/cli.lua under one protected call,
 * and maps the outcome to an exit status (0 ok, 1 failed, 2 bad usage/input, 130 interrupted). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"
#include "reaper.h"
#include "spawn.h"
#include "wb_c.h"

static int verbose;

/* Process-wide set-up of the binary (a library never does this behind its host's back): wb is a
 * child subreaper, so that descendants that escape a child's process group are reaped here and
 * stay signallable (core/spawn.h), and its soft descriptor limit is raised to the hard one (each
 * running child holds up to four descriptors). */
static void process_setup(void) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* tostring of the value at idx, protected: a __tostring that raises or returns a non-string
 * gives NULL. Pushes one value (the string, or nil). */
static int safe_tostring_call(lua_State *L) {
  luaL_tolstring(L, 1, NULL);
  return 1;
}

static const char *safe_tostring(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER) {
    lua_pushvalue(L, idx);
    return lua_tostring(L, -1);
  }
  lua_pushcfunction(L, safe_tostring_call);
  lua_pushvalue(L, idx);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return NULL;
  }
  return lua_tostring(L, -1);
}

/* Message handler: keeps wb error objects (tables) as they are, adds a traceback to other errors
 * when -v was given. Raises nothing: a value whose __tostring fails is described by its type. */
static int message_handler(lua_State *L) {
  if (lua_type(L, 1) == LUA_TTABLE) {
    int traced = lua_getfield(L, 1, "traced") != LUA_TNIL;
    lua_pop(L, 1);
    if (verbose && !traced && !wb_is_interrupt(L, 1) && lua_getfield(L, 1, "msg") == LUA_TSTRING) {
      luaL_traceback(L, L, lua_tostring(L, -1), 1);
      lua_setfield(L, 1, "msg");
    }
    lua_settop(L, 1);
    return 1;
  }
  const char *msg = safe_tostring(L, 1);
  if (!msg) msg = lua_pushfstring(L, "error object is a %s value without a message", luaL_typename(L, 1));
  if (verbose)
    luaL_traceback(L, L, msg, 1);
  else
    lua_pushstring(L, msg);
  return 1;
}

/* The exit status for a status a recipe or error asked for: 0-255 as they are, anything else 1
 * (never a value the shell would wrap to 0). */
static int map_status(lua_Integer status) { return status >= 0 && status <= 255 ? (int)status : 1; }

/* Reports the error object on top of the stack; returns the exit status it stands for: never 0,
 * and always with a line on stderr (the message, or what kind of value was raised). */
static int report_error(lua_State *L) {
  if (wb_is_interrupt(L, -1)) {
    lua_getfield(L, -1, "interrupted");
    int signo = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (signo == 0) { /* os.exit in a recipe: the code it gave (a campaign left open is not 0) */
      lua_getfield(L, -1, "exit");
      lua_Integer code = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 1;
      return map_status(code);
    }
    fprintf(stderr, "wb: interrupted\n");
    return 128 + signo;
  }
  lua_Integer status = 1;
  int top = lua_gettop(L);
  const char *msg;
  if (lua_type(L, -1) == LUA_TTABLE) {
    if (lua_getfield(L, top, "exit") == LUA_TNUMBER && lua_isinteger(L, -1)) status = lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, top, "msg");
    msg = lua_isnil(L, -1) ? safe_tostring(L, top) : safe_tostring(L, -1);
    if (msg && strncmp(msg, "table: 0x", 9) == 0) msg = NULL;
  } else {
    msg = safe_tostring(L, top);
  }
  if (!msg || !*msg) msg = lua_pushfstring(L, "error (a %s value without a message)", luaL_typename(L, top));
  fprintf(stderr, "wb: %s\n", msg);
  return status == 0 ? 1 : map_status(status);
}

static int run_cli(lua_State *L, int argc, char **argv) {
  lua_pushcfunction(L, message_handler);
  int handler = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "wb.cli");
  if (lua_pcall(L, 1, 1, handler) != LUA_OK) return report_error(L);
  lua_getfield(L, -1, "main");
  lua_createtable(L, argc, 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_pushboolean(L, verbose);
  if (lua_pcall(L, 2, 1, handler) != LUA_OK) return report_error(L);
  if (lua_isnoneornil(L, -1) || (lua_isboolean(L, -1) && lua_toboolean(L, -1))) return 0;
  return lua_isinteger(L, -1) ? map_status(lua_tointeger(L, -1)) : 1;
}

/* Opens /dev/null on any of descriptors 0-2 that wb was started without, so that none of wb's
 * own descriptors (pipes, files) takes a standard number and reaches children as their stdio. */
static void fill_stdio(void) {
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd) return;
}

int main(int argc, char **argv) {
  fill_stdio();
  if (argc == 2 && (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0)) {
    printf("wb %s (%s)\n", wb_version(), LUA_RELEASE);
    return 0;
  }
  wb_gate(argc, argv);
  wb_reaper(argc, argv);
  process_setup();
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) verbose = 1;
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "wb: cannot create the Lua state: out of memory\n");
    return 1;
  }
  lua_gc(L, LUA_GCSTOP); /* start-up allocates little and keeps most of it: no collection */
  wb_open(L);
  wb_signals_install(L);
  int status = run_cli(L, argc, argv);
  fflush(stdout);
  lua_close(L);
  return status;
}
