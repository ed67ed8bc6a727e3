/* The shared harness of the fuzz targets (tests/fuzz/fuzz_lua.c): a Lua state with wb's runtime in
 * which a Lua driver checks one input. */
#pragma once
#include <lauxlib.h>
#include <lua.h>
#include <stddef.h>
#include <stdint.h>

/* The state of the target `name`, made on the first call and closed at exit: wb_open's runtime,
 * package.path extended with FUZZ_LUA_DIR (so drivers can require "fuzzlib"), the global table
 * `fuzz` holding fuzz.tmpfile(data) (writes data to an unlinked file of this process and returns a
 * path that opens it) and the target's C helpers `extra` (NULL: none), and the driver
 * FUZZ_LUA_DIR/<name>.lua, a chunk returning function(data). A driver that fails to load aborts. */
lua_State *fuzz_lua_state(const char *name, const luaL_Reg *extra);

/* Calls the driver with data as a Lua string. An error escaping the driver is a finding: it is
 * printed with a traceback and the process aborts, so libFuzzer saves the input. */
void fuzz_lua_call(lua_State *L, const uint8_t *data, size_t size);

/* A target that only runs its Lua driver. */
#define FUZZ_LUA_TARGET(name, extra)                                   \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {      \
    fuzz_lua_call(fuzz_lua_state((name), (extra)), data, size);       \
    return 0;                                                         \
  }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
