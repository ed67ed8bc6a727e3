/* Readers of options tables (`f(x [, opts])`) for the C core's Lua bindings. Not installed.
 * A field that is absent or nil gives the default; one of the wrong type raises
 * "option 'name': <type> expected, got <type>". */
#pragma once

#include <lauxlib.h>
#include <lua.h>

/* The stack index of the options table at argument arg: arg when it holds a table, a new empty
 * table pushed on the stack when it is none or nil; raises otherwise. */
static inline int wb_opt_table(lua_State *L, int arg) {
  if (lua_isnoneornil(L, arg)) {
    lua_newtable(L);
    return lua_gettop(L);
  }
  luaL_checktype(L, arg, LUA_TTABLE);
  return arg;
}

/* Pushes field `name` of the table at t and returns whether it is set; raises when it is set to
 * a value that is not of `type`. */
static inline int wb_opt_field(lua_State *L, int t, const char *name, int type) {
  int got = lua_getfield(L, t, name);
  if (got != LUA_TNIL && got != type)
    luaL_error(L, "option '%s': %s expected, got %s", name, lua_typename(L, type),
               lua_typename(L, got));
  return got != LUA_TNIL;
}

static inline lua_Number wb_opt_number(lua_State *L, int t, const char *name, lua_Number def) {
  lua_Number v = wb_opt_field(L, t, name, LUA_TNUMBER) ? lua_tonumber(L, -1) : def;
  lua_pop(L, 1);
  return v;
}

/* An integer field (a float with an integral value counts): raises "option 'name': integer
 * expected" for another number. */
static inline lua_Integer wb_opt_integer(lua_State *L, int t, const char *name, lua_Integer def) {
  lua_Integer v = def;
  if (wb_opt_field(L, t, name, LUA_TNUMBER)) {
    int ok;
    v = lua_tointegerx(L, -1, &ok);
    if (!ok) luaL_error(L, "option '%s': integer expected", name);
  }
  lua_pop(L, 1);
  return v;
}

/* wb_opt_integer within [lo, hi]; out of it raises the argument error "name must be in lo..hi"
 * at t. */
static inline lua_Integer wb_opt_int(lua_State *L, int t, const char *name, lua_Integer def,
                                     lua_Integer lo, lua_Integer hi) {
  lua_Integer v = wb_opt_integer(L, t, name, def);
  if (v < lo || v > hi) luaL_argerror(L, t, lua_pushfstring(L, "%s must be in %I..%I", name, lo, hi));
  return v;
}

/* A flag: any value but nil and false is true (no type check). */
static inline int wb_opt_bool(lua_State *L, int t, const char *name, int def) {
  int v = lua_getfield(L, t, name) == LUA_TNIL ? def : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* The string stays valid while the options table holds it. */
static inline const char *wb_opt_string(lua_State *L, int t, const char *name, const char *def) {
  const char *v = wb_opt_field(L, t, name, LUA_TSTRING) ? lua_tostring(L, -1) : def;
  lua_pop(L, 1);
  return v;
}
