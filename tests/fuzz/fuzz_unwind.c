/* The stack walker wb.unwind (core/unwind.c, core/unwind_obj.c) on arbitrary stack copies and
 * registers, over the fuzzer's own mappings; checks in tests/fuzz/lua/unwind.lua. */
#include "fuzz_lua.h"

FUZZ_LUA_TARGET("unwind", NULL)
