/* The compare loader (lua/wb/compare.lua: load, from_document, compare, markdown, document);
 * checks in tests/fuzz/lua/compare.lua. */
#include "fuzz_lua.h"

FUZZ_LUA_TARGET("compare", NULL)
