/* wb.proc's spec parser: a Lua spec table to a wb_spawn_spec (see core/proc.c for the fields). */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"
#include "spawn.h"

/* Moves the value on top into the anchor table (keeping it alive) and returns it as a string. */
static const char *keep(lua_State *L, int anchors) {
  const char *s = lua_tostring(L, -1);
  lua_rawseti(L, anchors, (lua_Integer)lua_rawlen(L, anchors) + 1);
  return s;
}

static int is_text(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  return t == LUA_TSTRING || t == LUA_TNUMBER;
}

static const char *opt_field_string(lua_State *L, int t, const char *key, int anchors) {
  int type = lua_getfield(L, t, key);
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  if (type != LUA_TSTRING) luaL_argerror(L, 1, lua_pushfstring(L, "%s must be a string", key));
  return keep(L, anchors);
}

static const char **new_array(lua_State *L, int anchors, size_t n) {
  const char **a = lua_newuserdatauv(L, (n + 1) * sizeof *a, 0);
  lua_rawseti(L, anchors, (lua_Integer)lua_rawlen(L, anchors) + 1);
  a[n] = NULL;
  return a;
}

static void parse_argv(lua_State *L, int anchors, wb_spawn_spec *s) {
  lua_getfield(L, 1, "shell");
  int shell = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (shell) {
    const char *cmd = opt_field_string(L, 1, "cmd", anchors);
    if (!cmd && lua_getfield(L, 1, "argv") == LUA_TSTRING) cmd = keep(L, anchors);
    if (!cmd) luaL_argerror(L, 1, "shell=true needs cmd (a string)");
    const char **argv = new_array(L, anchors, 3);
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = cmd;
    s->argv = argv;
    return;
  }
  if (lua_getfield(L, 1, "argv") != LUA_TTABLE || lua_rawlen(L, -1) == 0)
    luaL_argerror(L, 1, "argv must be a non-empty table of strings");
  int t = lua_gettop(L);
  size_t n = lua_rawlen(L, t);
  const char **argv = new_array(L, anchors, n);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, t, (lua_Integer)i + 1);
    size_t len;
    if (!is_text(L, -1) || strlen(lua_tolstring(L, -1, &len)) != len)
      luaL_argerror(L, 1, lua_pushfstring(L, "argv[%d] must be a string", (int)i + 1));
    argv[i] = keep(L, anchors);
  }
  lua_pop(L, 1);
  s->argv = argv;
}

static void parse_env(lua_State *L, int anchors, wb_spawn_spec *s) {
  const char *mode = opt_field_string(L, 1, "env_mode", anchors);
  if (mode && strcmp(mode, "add") != 0 && strcmp(mode, "replace") != 0)
    luaL_argerror(L, 1, "env_mode must be \"add\" or \"replace\"");
  s->env_replace = mode && strcmp(mode, "replace") == 0;
  int type = lua_getfield(L, 1, "env");
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (type != LUA_TTABLE) luaL_argerror(L, 1, "env must be a table of NAME = value");
  int t = lua_gettop(L);
  size_t n = 0;
  for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1)) n++;
  const char **env = new_array(L, anchors, n);
  n = 0;
  for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING || !is_text(L, -1) || strchr(lua_tostring(L, -2), '=') ||
        !*lua_tostring(L, -2))
      luaL_argerror(L, 1, "env must be a table of NAME = value");
    lua_pushfstring(L, "%s=%s", lua_tostring(L, -2), lua_tostring(L, -1));
    env[n++] = keep(L, anchors);
  }
  lua_pop(L, 1);
  s->env = env;
}

static void parse_stdin(lua_State *L, int anchors, wb_spawn_io *io) {
  int type = lua_getfield(L, 1, "stdin");
  const char *s = type == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  io->mode = WB_IO_NULL;
  if (type == LUA_TTABLE && (io->path = opt_field_string(L, -1, "file", anchors))) {
    io->mode = WB_IO_FILE;
  } else if (type == LUA_TTABLE && lua_getfield(L, -1, "data") == LUA_TSTRING) {
    io->mode = WB_IO_DATA;
    io->data = lua_tolstring(L, -1, &io->len);
    keep(L, anchors);
  } else if (s && strcmp(s, "inherit") == 0) {
    io->mode = WB_IO_INHERIT;
  } else if (type != LUA_TNIL && !(s && strcmp(s, "null") == 0)) {
    luaL_argerror(L, 1, "stdin must be \"null\", \"inherit\", {file = path} or {data = string}");
  }
  lua_settop(L, anchors);
}

/* Leaves the field's value on the stack (the line callback, when it is one). */
static void parse_output(lua_State *L, int anchors, int fd, wb_spawn_io *io) {
  const char *name = fd == 1 ? "stdout" : "stderr";
  int type = lua_getfield(L, 1, name);
  int t = lua_gettop(L);
  io->mode = WB_IO_INHERIT;
  if (type == LUA_TFUNCTION) {
    io->mode = WB_IO_LINES;
  } else if (type == LUA_TSTRING) {
    const char *s = lua_tostring(L, t);
    if (strcmp(s, "null") == 0) io->mode = WB_IO_NULL;
    else if (strcmp(s, "capture") == 0) io->mode = WB_IO_CAPTURE;
    else if (fd == 2 && strcmp(s, "stdout") == 0) io->mode = WB_IO_MERGE;
    else if (strcmp(s, "inherit") != 0)
      luaL_argerror(L, 1, lua_pushfstring(L, "unknown %s mode '%s'", name, s));
  } else if (type == LUA_TTABLE) {
    if ((io->path = opt_field_string(L, t, "file", anchors))) io->mode = WB_IO_FILE;
    else if ((io->path = opt_field_string(L, t, "tee", anchors))) io->mode = WB_IO_TEE;
    else luaL_argerror(L, 1, lua_pushfstring(L, "%s table needs file or tee", name));
    lua_getfield(L, t, "append");
    io->append = lua_toboolean(L, -1);
    lua_pop(L, 1);
  } else if (type != LUA_TNIL) {
    luaL_argerror(L, 1, lua_pushfstring(L, "unknown %s mode (a %s)", name, luaL_typename(L, t)));
  }
}

static int64_t opt_seconds(lua_State *L, const char *key, double dflt) {
  int type = lua_getfield(L, 1, key);
  double v = dflt;
  if (type != LUA_TNIL) {
    if (type != LUA_TNUMBER) luaL_argerror(L, 1, lua_pushfstring(L, "%s must be a number", key));
    v = lua_tonumber(L, -1);
    if (!(v >= 0)) luaL_argerror(L, 1, lua_pushfstring(L, "%s must not be negative", key));
  }
  lua_pop(L, 1);
  if (v < 0) return -1;
  return v > 1e9 ? (int64_t)1e18 : (int64_t)(v * 1e9);
}

void wb_proc_parse_spec(lua_State *L, wb_spawn_spec *s) {
  parse_argv(L, 2, s);
  parse_env(L, 2, s);
  s->cwd = opt_field_string(L, 1, "cwd", 2);
  s->timeout_ns = opt_seconds(L, "timeout", -1);
  s->grace_ns = opt_seconds(L, "grace", 2);
  lua_getfield(L, 1, "held");
  s->held = lua_toboolean(L, -1);
  lua_settop(L, 2);
  parse_stdin(L, 2, &s->io[0]);
  parse_output(L, 2, 1, &s->io[1]);
  parse_output(L, 2, 2, &s->io[2]);
}
