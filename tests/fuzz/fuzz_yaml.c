/* YAML -> Lua (core/yaml.c via wb.yaml.load) and back (core/yaml_dump.c); checks in
 * tests/fuzz/lua/yaml.lua. */
#include "fuzz_lua.h"

FUZZ_LUA_TARGET("yaml", NULL)
