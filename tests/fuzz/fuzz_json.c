/* JSON: wb.json.decode/encode (core/json.c) and the Lua-free wb_json_reformat (core/json_text.c);
 * checks in tests/fuzz/lua/json.lua. */
#include "fuzz_lua.h"
#include "wb_c.h"

/* text, err = fuzz.reformat(s, pretty) : wb_json_reformat of s */
static int l_reformat(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  char err[160] = "";
  char *out = wb_json_reformat(s, len, lua_toboolean(L, 2), err, sizeof err);
  if (!out) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushstring(L, out);
  wb_free(out);
  return 1;
}

static const luaL_Reg helpers[] = {{"reformat", l_reformat}, {NULL, NULL}};

FUZZ_LUA_TARGET("json", helpers)
