/* wb.sqlite: a small binding of SQLite (Debian's libsqlite3) for wb's results index (wb.history).
 *
 * Contracts:
 *  - wb asks for SQLITE_OPEN_NOFOLLOW, which refuses a symbolic link as the database path; the
 *    caller (wb.history) also checks the path is a regular file and its directory is confined
 *    (no one else can plant a journal or a link there). Opening a FIFO does not block (O_RDWR)
 *    and fails as "not a database".
 *  - SQL errors and misuse (a bad statement, a wrong parameter type) raise; environment failures
 *    (busy past the timeout, I/O, a full disk, a locked or unreadable file) return nil, message,
 *    SQLite's extended result code.
 *  - A statement userdata keeps its database alive (uservalue); closing the database while
 *    statements exist is deferred by SQLite until they are finalized (sqlite3_close_v2).
 *  - Values: nil and wb.null bind NULL, booleans 0/1, integers INTEGER, floats REAL, strings TEXT
 *    (any bytes). Columns: INTEGER as Lua integers, REAL as floats, TEXT and BLOB as strings,
 *    NULL as absent fields (rows are tables keyed by column name).
 */
#include <sqlite3.h>
#include <string.h>

#include "internal.h"

#define DB_MT "wb.sqlite.db"
#define STMT_MT "wb.sqlite.stmt"

typedef struct {
  sqlite3 *db;
} Db;

typedef struct {
  sqlite3_stmt *stmt;
} Stmt;

static int push_failure(lua_State *L, sqlite3 *db, int rc) {
  lua_pushnil(L);
  lua_pushstring(L, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  lua_pushinteger(L, db ? sqlite3_extended_errcode(db) : rc);
  return 3;
}

/* Result codes of the machine or of another process, not of the caller's SQL. */
static int is_environment(int rc) {
  switch (rc & 0xff) {
  case SQLITE_BUSY: case SQLITE_LOCKED: case SQLITE_IOERR: case SQLITE_FULL: case SQLITE_CANTOPEN:
  case SQLITE_READONLY: case SQLITE_CORRUPT: case SQLITE_NOTADB: case SQLITE_PROTOCOL:
  case SQLITE_PERM: case SQLITE_NOLFS: case SQLITE_NOMEM: case SQLITE_INTERRUPT:
    return 1;
  default:
    return 0;
  }
}

static Db *check_db(lua_State *L, int idx) {
  Db *d = luaL_checkudata(L, idx, DB_MT);
  if (!d->db) luaL_error(L, "wb.sqlite: the database is closed");
  return d;
}

static Stmt *check_stmt(lua_State *L, int idx) {
  Stmt *s = luaL_checkudata(L, idx, STMT_MT);
  if (!s->stmt) luaL_error(L, "wb.sqlite: the statement is finalized");
  return s;
}

/* -- db, err, code = wb.sqlite.open(path [, {readonly = bool, timeout_ms = n}]) : opens (creating
 * unless readonly) the database at path; timeout_ms (default 30000) is how long a statement
 * waits for another process's lock before failing with SQLITE_BUSY */
static int l_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int readonly = 0;
  lua_Integer timeout = 30000;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "readonly");
    readonly = lua_toboolean(L, -1);
    lua_getfield(L, 2, "timeout_ms");
    if (!lua_isnil(L, -1)) timeout = luaL_checkinteger(L, -1);
    lua_pop(L, 2);
  }
  if (timeout < 0 || timeout > 3600000) luaL_error(L, "wb.sqlite.open: timeout_ms must be in 0..3600000");
  Db *d = lua_newuserdatauv(L, sizeof *d, 0);
  d->db = NULL;
  luaL_setmetatable(L, DB_MT);
  int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
              SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE;
  int rc = sqlite3_open_v2(path, &d->db, flags, NULL);
  if (rc != SQLITE_OK) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, d->db ? sqlite3_errmsg(d->db) : sqlite3_errstr(rc));
    lua_pushinteger(L, rc);
    sqlite3_close_v2(d->db);
    d->db = NULL;
    return 3;
  }
  sqlite3_extended_result_codes(d->db, 1);
  sqlite3_busy_timeout(d->db, (int)timeout);
  return 1;
}

/* Raises for an SQL error or misuse, returns push_failure's 3 for an environment failure. */
static int fail(lua_State *L, sqlite3 *db, int rc, const char *sql) {
  if (is_environment(rc)) return push_failure(L, db, rc);
  return luaL_error(L, "wb.sqlite: %s (in: %s)", sqlite3_errmsg(db), sql ? sql : "?");
}

/* -- ok, err, code = db:exec(sql) : runs statements without parameters or results */
static int db_exec(lua_State *L) {
  Db *d = check_db(L, 1);
  const char *sql = luaL_checkstring(L, 2);
  int rc = sqlite3_exec(d->db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) return fail(L, d->db, rc, sql);
  lua_pushboolean(L, 1);
  return 1;
}

/* -- stmt = db:prepare(sql) : one statement (raises on bad SQL or trailing text) */
static int db_prepare(lua_State *L) {
  Db *d = check_db(L, 1);
  size_t len;
  const char *sql = luaL_checklstring(L, 2, &len);
  Stmt *s = lua_newuserdatauv(L, sizeof *s, 1);
  s->stmt = NULL;
  luaL_setmetatable(L, STMT_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  const char *tail = NULL;
  int rc = sqlite3_prepare_v2(d->db, sql, (int)len, &s->stmt, &tail);
  if (rc != SQLITE_OK) return fail(L, d->db, rc, sql);
  if (!s->stmt) luaL_error(L, "wb.sqlite: no statement in: %s", sql);
  while (tail && *tail && strchr(" \t\r\n;", *tail)) tail++;
  if (tail && *tail) luaL_error(L, "wb.sqlite.prepare: one statement only (left: %s)", tail);
  return 1;
}

/* Binds the Lua values at first..top to parameters 1..n. */
static void bind_all(lua_State *L, sqlite3_stmt *st, int first) {
  int top = lua_gettop(L), n = sqlite3_bind_parameter_count(st);
  if (top - first + 1 > n) luaL_error(L, "wb.sqlite: %d values for %d parameters", top - first + 1, n);
  sqlite3_clear_bindings(st);
  for (int i = first; i <= top; i++) {
    int p = i - first + 1, rc;
    switch (lua_type(L, i)) {
    case LUA_TNIL: rc = sqlite3_bind_null(st, p); break;
    case LUA_TBOOLEAN: rc = sqlite3_bind_int(st, p, lua_toboolean(L, i)); break;
    case LUA_TNUMBER:
      rc = lua_isinteger(L, i) ? sqlite3_bind_int64(st, p, lua_tointeger(L, i))
                               : sqlite3_bind_double(st, p, lua_tonumber(L, i));
      break;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, i, &len);
      rc = sqlite3_bind_text64(st, p, s, len, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    }
    default:
      if (wb_is_null(L, i)) { rc = sqlite3_bind_null(st, p); break; }
      return (void)luaL_error(L, "wb.sqlite: parameter %d: cannot bind a %s", p, luaL_typename(L, i));
    }
    if (rc != SQLITE_OK) luaL_error(L, "wb.sqlite: parameter %d: %s", p, sqlite3_errstr(rc));
  }
}

static void push_row(lua_State *L, sqlite3_stmt *st) {
  int n = sqlite3_column_count(st);
  lua_createtable(L, 0, n);
  for (int c = 0; c < n; c++) {
    switch (sqlite3_column_type(st, c)) {
    case SQLITE_INTEGER: lua_pushinteger(L, sqlite3_column_int64(st, c)); break;
    case SQLITE_FLOAT: lua_pushnumber(L, sqlite3_column_double(st, c)); break;
    case SQLITE_NULL: continue;
    default: {
      const void *p = sqlite3_column_blob(st, c);
      lua_pushlstring(L, p ? p : "", (size_t)sqlite3_column_bytes(st, c));
    }
    }
    lua_setfield(L, -2, sqlite3_column_name(st, c));
  }
}

/* Steps st to its end with the values at first.. bound: pushes the list of rows and returns 1,
 * or returns push_failure's 3. The statement is reset either way. */
static int run_stmt(lua_State *L, sqlite3 *db, sqlite3_stmt *st, int first) {
  bind_all(L, st, first);
  lua_newtable(L);
  int rc, n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    push_row(L, st);
    lua_rawseti(L, -2, ++n);
  }
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) {
    lua_pop(L, 1);
    return fail(L, db, rc, sqlite3_sql(st));
  }
  return 1;
}

/* -- rows, err, code = stmt:run(...) : binds the values, steps to the end; the rows (possibly
 * none) as a list of tables */
static int stmt_run(lua_State *L) {
  Stmt *s = check_stmt(L, 1);
  lua_getiuservalue(L, 1, 1); /* its database: running on a closed one would be misuse */
  Db *d = luaL_checkudata(L, -1, DB_MT);
  if (!d->db) luaL_error(L, "wb.sqlite: the statement's database is closed");
  lua_pop(L, 1);
  return run_stmt(L, sqlite3_db_handle(s->stmt), s->stmt, 2);
}

/* -- rows, err, code = db:query(sql, ...) : prepare + run + finalize */
static int db_query(lua_State *L) {
  Db *d = check_db(L, 1);
  size_t len;
  const char *sql = luaL_checklstring(L, 2, &len);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(d->db, sql, (int)len, &st, NULL);
  if (rc != SQLITE_OK) return fail(L, d->db, rc, sql);
  if (!st) luaL_error(L, "wb.sqlite: no statement in: %s", sql);
  /* run_stmt may raise (a bad parameter): the guard's __gc finalizes the statement then */
  Stmt *guard = lua_newuserdatauv(L, sizeof *guard, 1);
  guard->stmt = st;
  luaL_setmetatable(L, STMT_MT);
  lua_insert(L, 3);
  int nret = run_stmt(L, d->db, st, 4);
  sqlite3_finalize(guard->stmt);
  guard->stmt = NULL;
  return nret;
}

/* -- n = db:changes() : rows changed by the last INSERT, UPDATE or DELETE */
static int db_changes(lua_State *L) {
  lua_pushinteger(L, sqlite3_changes64(check_db(L, 1)->db));
  return 1;
}

/* -- id = db:last_insert_rowid() */
static int db_last_rowid(lua_State *L) {
  lua_pushinteger(L, sqlite3_last_insert_rowid(check_db(L, 1)->db));
  return 1;
}

/* -- db:close() : idempotent */
static int db_close(lua_State *L) {
  Db *d = luaL_checkudata(L, 1, DB_MT);
  if (d->db) sqlite3_close_v2(d->db);
  d->db = NULL;
  return 0;
}

static int db_tostring(lua_State *L) {
  Db *d = luaL_checkudata(L, 1, DB_MT);
  const char *f = d->db ? sqlite3_db_filename(d->db, "main") : NULL;
  lua_pushfstring(L, "wb.sqlite.db(%s)", d->db ? (f ? f : "?") : "closed");
  return 1;
}

/* -- stmt:finalize() : idempotent */
static int stmt_close(lua_State *L) {
  Stmt *s = luaL_checkudata(L, 1, STMT_MT);
  if (s->stmt) sqlite3_finalize(s->stmt);
  s->stmt = NULL;
  return 0;
}

static int stmt_tostring(lua_State *L) {
  Stmt *s = luaL_checkudata(L, 1, STMT_MT);
  lua_pushfstring(L, "wb.sqlite.stmt(%s)", s->stmt ? sqlite3_sql(s->stmt) : "finalized");
  return 1;
}

/* -- v = wb.sqlite.version : the library's version string */
int luaopen_wb_sqlite(lua_State *L) {
  static const luaL_Reg db_methods[] = {
      {"exec", db_exec},       {"prepare", db_prepare}, {"query", db_query},
      {"changes", db_changes}, {"last_insert_rowid", db_last_rowid}, {"close", db_close},
      {NULL, NULL}};
  static const luaL_Reg stmt_methods[] = {{"run", stmt_run}, {"finalize", stmt_close}, {NULL, NULL}};
  wb_new_class(L, DB_MT, db_methods, NULL, db_close, db_tostring);
  wb_new_class(L, STMT_MT, stmt_methods, NULL, stmt_close, stmt_tostring);
  static const luaL_Reg fns[] = {{"open", l_open}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_pushstring(L, sqlite3_libversion());
  lua_setfield(L, -2, "version");
  return 1;
}
