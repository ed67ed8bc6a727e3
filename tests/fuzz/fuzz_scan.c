/* The log scanner wb.scan.file (core/scan.c, core/scan_match.c, core/scan_read.c, core/scan_table.c) against
 * a plain-Lua reading of its contract; checks in tests/fuzz/lua/scan.lua and scanref.lua. */
#include "fuzz_lua.h"

FUZZ_LUA_TARGET("scan", NULL)
