/* The override grammar (lua/wb/override.lua); checks in tests/fuzz/lua/override.lua. */
#include "fuzz_lua.h"

FUZZ_LUA_TARGET("override", NULL)
