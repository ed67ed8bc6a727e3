/* The VEP profile reader (lua/wb/vep.lua: its scan rules and analysis on top of wb.scan);
 * checks in tests/fuzz/lua/vep.lua. */
#include "fuzz_lua.h"

FUZZ_LUA_TARGET("vep", NULL)
