/* Internal contracts shared by the C core's Lua bindings. Not installed. */
#pragma once

#include <lauxlib.h>
#include <lua.h>
#include <signal.h>
#include <stddef.h>

#define WB_VERSION "0.1.0"

/* Marks a definition of a core/wb.h function as exported from libwb.so. */
#define WB_API __attribute__((visibility("default")))

/* Module openers; core/modules.c registers them in package.preload as "wb.<name>". */
int luaopen_wb_bpf(lua_State *L);
int luaopen_wb_clock(lua_State *L);
int luaopen_wb_fs(lua_State *L);
int luaopen_wb_json(lua_State *L);
int luaopen_wb_memory(lua_State *L);
int luaopen_wb_perf(lua_State *L);
int luaopen_wb_proc(lua_State *L);
int luaopen_wb_python(lua_State *L);
int luaopen_wb_scan(lua_State *L);
int luaopen_wb_stats(lua_State *L);
int luaopen_wb_sqlite(lua_State *L);
int luaopen_wb_sym(lua_State *L);
int luaopen_wb_term(lua_State *L);
int luaopen_wb_unwind(lua_State *L);
int luaopen_wb_yaml(lua_State *L);

/* Opens the standard libraries, preloads the native modules, installs the searcher for the
 * embedded lua/wb/ sources and the `wb.null` sentinel. */
void wb_open(lua_State *L);

/* Environment failure convention: pushes nil, "<what>: <strerror(err)>", err and returns 3. */
int wb_push_error(lua_State *L, int err, const char *what);

/* How far apart two reads of one process's RSS or high-water mark can be, in KiB: Linux reads RSS
 * from per-CPU counters without summing them (core/memory.c). wb.proc's maxrss_bound and the
 * memory sampler's stage attribution allow for it. */
long wb_rss_read_error_kb(void);

/* The JSON/YAML null: a light userdata (NULL) shared by wb.json.null, wb.yaml.null, wb.null. */
#define wb_push_null(L) lua_pushlightuserdata((L), NULL)
#define wb_is_null(L, i) (lua_islightuserdata((L), (i)) && lua_touserdata((L), (i)) == NULL)

/* Ordered tables: a table whose metatable is the shared "wb.ordered" metatable, with key
 * insertion order kept in the table's private order list (see core/ordered.c). Decoders (JSON,
 * YAML) build objects with it so that re-encoding keeps the source order.
 * wb_ordered_new pushes a new empty ordered table. */
void wb_ordered_new(lua_State *L);
/* Sets t[key] = value for the ordered table at index t, key and value on the stack top
 * (key below value); pops both. Records key order for new keys. */
void wb_ordered_set(lua_State *L, int t);
/* Pushes the order list (a sequence of keys) of the table at index t, or nil if the table is
 * not ordered. */
void wb_ordered_keys(lua_State *L, int t);

/* Array marker: a table whose metatable is "wb.array" encodes as a JSON array even when empty. */
void wb_array_new(lua_State *L, int narr);
/* -- t = wb.array([t]) : wb.core.array and wb.json.array (core/ordered.c) */
int wb_array(lua_State *L);
/* Creates the "wb.ordered" and "wb.array" metatables (wb_open calls it). */
void wb_ordered_init(lua_State *L);
/* wb.core's functions of ordered tables (array, ordered, ordered_keys; core/ordered.c) and of
 * signals (check_interrupt, defer_interrupt, deferred_interrupt, exit, interrupted,
 * is_interrupt; core/signals.c). */
extern const luaL_Reg wb_ordered_functions[];
extern const luaL_Reg wb_signal_functions[];

/* Whether the value at idx has the metatable registered as `name` (luaL_newmetatable). */
int wb_has_metatable(lua_State *L, int idx, const char *name);

/* Pushes the weak-keyed table stored at registry[key] (a light userdata key), creating it on
 * first use: per-object data that goes away with its object. */
void wb_weak_registry(lua_State *L, const void *key);

/* When idx holds an open wb.stats.samples userdata (core/stats.c): sets *v and *n to its values
 * and *integer to whether it holds integers, and returns 1; else returns 0. Lets the JSON
 * encoder write samples without a table copy. */
int wb_stats_samples_view(lua_State *L, int idx, const double **v, size_t *n, int *integer);

/* Whole-file I/O (core/fs.c). wb_read_file pushes the contents of the file at path and returns
 * 1, or returns 0 with errno set. wb_write_all (Lua-free) writes p[0..n) to fd, retrying after
 * EINTR and short writes; returns 0 or an errno (EIO when write makes no progress). */
int wb_read_file(lua_State *L, const char *path);
int wb_write_all(int fd, const void *p, size_t n);

/* Reads the file at path into a private anonymous mapping of *size bytes (its size when opened,
 * at least 1), of which the first *len hold the text: its whole pages can be given back with
 * munmap as they are used. Returns the mapping, or NULL with errno set. */
char *wb_read_file_mapped(const char *path, size_t *len, size_t *size);

#include "fs_guard.h"

/* Replaces io.open, io.input, io.output, os.remove and os.rename with guarded ones (core/fs.c). */
void wb_fs_guard_io(lua_State *L);

/* Field setters for the table on the top of the stack. */
static inline void wb_set_int(lua_State *L, const char *key, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, key);
}
static inline void wb_set_num(lua_State *L, const char *key, lua_Number v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, key);
}
static inline void wb_set_str(lua_State *L, const char *key, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, key);
}
static inline void wb_set_bool(lua_State *L, const char *key, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, key);
}

/* Registers the metatable `name` of a native object class: __index is the `methods` table, or,
 * when `index` is given, the C closure index(self, key) with `methods` as its upvalue; __gc and
 * __close call `close` (which must be idempotent); __tostring calls `tostring`. Leaves the stack
 * as it was. */
void wb_new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction index,
                  lua_CFunction close, lua_CFunction tostring);

/* Signals (SIGINT, SIGTERM, SIGHUP; core/signals.c). The handler records the signal, writes a
 * byte to a self-pipe and arms a Lua hook so running Lua code raises the interrupt error at its
 * next instruction. wb_signal_pending returns the pending signal number or 0. wb_signal_fd is the
 * read end of the self-pipe, for poll(). wb_raise_interrupt raises the interrupt error object (a
 * table with field `interrupted = <signo>`, metatable "wb.interrupt"). */
void wb_signals_install(lua_State *L);
int wb_signal_pending(void);
int wb_signal_fd(void);
void wb_signal_clear(void);
int wb_raise_interrupt(lua_State *L);
int wb_is_interrupt(lua_State *L, int idx);

/* The REPL (core/repl.c): runs until EOF; returns the process exit status. */
int wb_repl(lua_State *L);
