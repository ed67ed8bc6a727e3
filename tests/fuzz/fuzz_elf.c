/* The ELF and DWARF readers (core/sym_elf.c, core/unwind_obj.c, core/unwind_inflate.c and libdw
 * under them) on arbitrary files, as the adversarial pass of issue #26 made them (truncated,
 * overlapping and oversized sections, bogus compression headers, decompression bombs, broken
 * CFI); checks in tests/fuzz/lua/elf.lua. fuzz.cfi(path, vaddr) is the unwinder's rule row. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "fuzz_lua.h"
#include "unwind.h"

/* -- kind, cfa_off, ra_off = fuzz.cfi(path, vaddr) : the CFI row wb's unwinder would use at vaddr
 * of the file (kind 0: usable; else WB_UNW_ROW_END or why the walk stops there); nothing when
 * there is no row */
static int l_cfi(lua_State *L) {
  wb_dwobj *o = wb_dwobj_get(luaL_checkstring(L, 1));
  if (!o) return luaL_error(L, "out of memory");
  const wb_unw_row *r = wb_dwobj_row(o, (uint64_t)luaL_checkinteger(L, 2));
  if (!r) return 0;
  lua_pushinteger(L, r->kind);
  lua_pushinteger(L, r->cfa_off);
  lua_pushinteger(L, r->ra_off);
  return 3;
}

static const luaL_Reg extra[] = {{"cfi", l_cfi}, {NULL, NULL}};

/* No DWARF copies in the user's cache: every input would leave one. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("WB_MAX_CACHE_BYTES", "0", 1);
  return 0;
}

FUZZ_LUA_TARGET("elf", extra)
