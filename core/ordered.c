/* Ordered tables and the array marker (see core/internal.h): key insertion order kept off the
 * data, in a weak-keyed registry table, so that decoders can keep the source order and encoders
 * write it back. */
#include <string.h>

#include "internal.h"

static const char ORDER_KEY = 'o'; /* registry key of the weak table: t -> order list */

static void push_order_list(lua_State *L, int t, int create) {
  t = lua_absindex(L, t);
  wb_weak_registry(L, &ORDER_KEY);
  lua_pushvalue(L, t);
  if (lua_rawget(L, -2) == LUA_TNIL && create) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, t);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_remove(L, -2);
}

static int ordered_newindex(lua_State *L) {
  lua_settop(L, 3);
  if (!lua_isnil(L, 3)) {
    push_order_list(L, 1, 1);
    lua_pushvalue(L, 2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
  }
  lua_rawset(L, 1);
  return 0;
}

void wb_ordered_keys(lua_State *L, int t) {
  t = lua_absindex(L, t);
  push_order_list(L, t, wb_has_metatable(L, t, "wb.ordered"));
  if (lua_isnil(L, -1)) return;
  /* Compact: drop keys whose value is now nil and repeated keys; then append keys that were
   * stored with rawset and so never recorded. */
  int list = lua_gettop(L);
  lua_newtable(L); /* seen */
  int seen = list + 1;
  lua_Integer n = (lua_Integer)lua_rawlen(L, list), out = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_pushvalue(L, -1);
    int dup = lua_rawget(L, seen) != LUA_TNIL;
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    int present = lua_rawget(L, t) != LUA_TNIL;
    lua_pop(L, 1);
    if (dup || !present) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -1);
    lua_pushboolean(L, 1);
    lua_rawset(L, seen);
    lua_rawseti(L, list, ++out);
  }
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, seen) == LUA_TNIL) {
      lua_pushvalue(L, -2);
      lua_rawseti(L, list, ++out);
    }
    lua_pop(L, 1);
  }
  for (lua_Integer i = out + 1; i <= n; i++) {
    lua_pushnil(L);
    lua_rawseti(L, list, i);
  }
  lua_pop(L, 1); /* seen */
}

static int ordered_next(lua_State *L) {
  /* upvalue 1: order list; upvalue 2: position */
  lua_Integer i = lua_tointeger(L, lua_upvalueindex(2)) + 1;
  for (;; i++) {
    if (lua_rawgeti(L, lua_upvalueindex(1), i) == LUA_TNIL) return 0;
    lua_pushvalue(L, -1);
    if (lua_rawget(L, 1) != LUA_TNIL) break;
    lua_pop(L, 2);
  }
  lua_pushinteger(L, i);
  lua_replace(L, lua_upvalueindex(2));
  return 2;
}

static int ordered_pairs(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  wb_ordered_keys(L, 1);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, ordered_next, 2);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

void wb_ordered_new(lua_State *L) {
  lua_newtable(L);
  luaL_setmetatable(L, "wb.ordered");
}

void wb_ordered_set(lua_State *L, int t) {
  t = lua_absindex(L, t);
  lua_pushvalue(L, -2);
  lua_rawget(L, t);
  int fresh = lua_isnil(L, -1);
  lua_pop(L, 1);
  if (fresh && !lua_isnil(L, -1)) {
    push_order_list(L, t, 1);
    lua_pushvalue(L, -3);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
  }
  lua_rawset(L, t);
}

void wb_array_new(lua_State *L, int narr) {
  lua_createtable(L, narr, 0);
  luaL_setmetatable(L, "wb.array");
}

/* -- t = wb.ordered([t]) : marks t (or a new table) as ordered; existing keys keep next() order */
static int l_ordered(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    wb_ordered_new(L);
    return 1;
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  luaL_setmetatable(L, "wb.ordered");
  return 1;
}

/* -- keys = wb.ordered_keys(t) : keys of an ordered table in insertion order, or nil */
static int l_ordered_keys(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  wb_ordered_keys(L, 1);
  return 1;
}

/* -- t = wb.array([t]) : marks t (or a new table) as an array; an empty one encodes as [] */
int wb_array(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    wb_array_new(L, 0);
    return 1;
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  luaL_setmetatable(L, "wb.array");
  return 1;
}

void wb_ordered_init(lua_State *L) {
  luaL_newmetatable(L, "wb.ordered");
  lua_pushcfunction(L, ordered_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, ordered_pairs);
  lua_setfield(L, -2, "__pairs");
  lua_pop(L, 1);
  luaL_newmetatable(L, "wb.array");
  lua_pop(L, 1);
}

const luaL_Reg wb_ordered_functions[] = {{"array", wb_array},
                                         {"ordered", l_ordered},
                                         {"ordered_keys", l_ordered_keys},
                                         {NULL, NULL}};
