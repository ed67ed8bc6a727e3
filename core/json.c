/* wb.json: JSON text <-> Lua values. Objects decode to ordered tables (source order), arrays to
 * "wb.array" tables, null to wb.null. The encoder writes ordered tables in insertion order and
 * other tables with sorted keys, so its output is deterministic. Text is read through cJSON
 * (core/json_read.c): errors carry line and column, integers stay integers, duplicate keys are
 * rejected; the writer is wb's own and streams (docs/design.md). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "encode.h"

/* ---- decoding: a sink of the reader (core/json_read.c) that builds Lua values ----------- */

struct builder {
  lua_State *L;
  void *held;     /* the reader's cJSON tree, released when a Lua error ends the read */
  char *map;      /* the text, when decode owns it (a mapping of wb_read_file_mapped); else NULL */
  size_t dropped; /* the bytes at its start already unmapped */
  int depth;
  lua_Integer count[WB_MAX_NESTING + 1]; /* items so far at each depth; -1 in objects */
};

/* Stores the value on top into its container (below it, after the key for objects). */
static void attach(struct builder *bd) {
  if (bd->depth == 0) return;
  if (bd->count[bd->depth] < 0)
    wb_ordered_set(bd->L, -3);
  else
    lua_rawseti(bd->L, -2, ++bd->count[bd->depth]);
}

static void build_scalar(void *ctx, const struct wb_json_scalar *v) {
  struct builder *bd = ctx;
  switch (v->kind) {
  case WB_JSON_NULL: wb_push_null(bd->L); break;
  case WB_JSON_BOOL: lua_pushboolean(bd->L, (int)v->i); break;
  case WB_JSON_INT: lua_pushinteger(bd->L, (lua_Integer)v->i); break;
  case WB_JSON_FLOAT: lua_pushnumber(bd->L, (lua_Number)v->d); break;
  case WB_JSON_STRING: lua_pushlstring(bd->L, v->s, v->n); break;
  }
  attach(bd);
}

/* Pushes the key; nonzero (the key popped) when the object below already has it. */
static int build_key(void *ctx, const struct wb_json_scalar *k) {
  lua_State *L = ((struct builder *)ctx)->L;
  lua_pushlstring(L, k->s, k->n);
  lua_pushvalue(L, -1);
  int taken = lua_rawget(L, -3) != LUA_TNIL;
  lua_pop(L, taken ? 2 : 1);
  return taken;
}

static void build_open(void *ctx, int object) {
  struct builder *bd = ctx;
  luaL_checkstack(bd->L, 12, "json: nesting too deep");
  if (object)
    wb_ordered_new(bd->L);
  else
    wb_array_new(bd->L, 0);
  bd->count[++bd->depth] = object ? -1 : 0;
}

static void build_close(void *ctx, int object) {
  struct builder *bd = ctx;
  (void)object;
  bd->depth--;
  attach(bd);
}

/* Gives back the whole pages of a mapped text that the reader is done with. */
static void build_consumed(void *ctx, size_t offset) {
  struct builder *bd = ctx;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), upto = offset / page * page;
  if (!bd->map || upto <= bd->dropped) return;
  munmap(bd->map + bd->dropped, upto - bd->dropped);
  bd->dropped = upto;
}

static const struct wb_json_sink builder_sink = {build_scalar, build_key, build_open, build_close,
                                                 build_consumed};

/* A decode under way: the text, the builder, the error message. */
struct decoding {
  const char *text;
  size_t len;
  struct builder bd;
  char err[160];
};

/* Protected part of decode (the decoding a light userdata): returns the value, or nothing with
 * the message in err. */
static int decode_protected(lua_State *L) {
  struct decoding *d = lua_touserdata(L, 1);
  lua_settop(L, 0);
  return wb_json_parse(d->text, d->len, &builder_sink, &d->bd, &d->bd.held, d->err, sizeof d->err) == 0;
}

/* Decodes text[0..len): pushes the value and returns 1, or pushes nil and the message and returns
 * 2 (the message prefixed with `prefix: ` when prefix is given). mapped 0: the caller keeps the
 * text alive; else the text is a mapping of that many bytes from wb_read_file_mapped, which decode
 * owns: unmapped from its start as the reader moves on, the rest at the end. A Lua error while
 * building (memory) is raised again once the reader's tree and the mapping are released. */
static int decode(lua_State *L, const char *text, size_t len, size_t mapped, const char *prefix) {
  struct decoding d = {.text = text, .len = len, .bd = {.L = L}};
  if (mapped) d.bd.map = (char *)text; /* wb_read_file_mapped's: writable, and ours */
  lua_pushcfunction(L, decode_protected);
  lua_pushlightuserdata(L, &d);
  int status = lua_pcall(L, 1, 1, 0);
  wb_json_release(&d.bd.held);
  if (mapped) munmap(d.bd.map + d.bd.dropped, mapped - d.bd.dropped);
  if (status != LUA_OK) return lua_error(L);
  const char *err = d.err;
  if (!err[0]) return 1;
  lua_pop(L, 1);
  lua_pushnil(L);
  if (prefix)
    lua_pushfstring(L, "%s: %s", prefix, err);
  else
    lua_pushstring(L, err);
  return 2;
}

/* ---- encoding ------------------------------------------------------------------------- */

struct encoder {
  lua_State *L;
  wb_buf *b;
  int pretty, indent, depth;
  const void *path[WB_MAX_NESTING];
};

static void encode_value(struct encoder *e, int idx);

static void encode_string(struct encoder *e, int idx) {
  size_t n;
  const char *s = lua_tolstring(e->L, idx, &n);
  wb_json_write_string(e->b, s, n);
}

static void encode_number(struct encoder *e, int idx, int quoted) {
  if (lua_isinteger(e->L, idx))
    wb_json_write_int(e->b, (int64_t)lua_tointeger(e->L, idx), quoted);
  else
    wb_json_write_float(e->b, (double)lua_tonumber(e->L, idx), quoted);
}

static void newline(struct encoder *e, int depth) {
  wb_json_newline(e->b, e->pretty, e->indent, depth);
}

static void encode_table(struct encoder *e, int t) {
  lua_State *L = e->L;
  wb_enter_table(L, t, e->path, &e->depth, "json");
  lua_Integer n = wb_table_layout(L, t);
  if (n >= 0) {
    wb_buf_addc(e->b, '[');
    for (lua_Integer i = 1; i <= n; i++) {
      if (i > 1) wb_buf_addc(e->b, ',');
      newline(e, e->depth);
      lua_rawgeti(L, t, i);
      encode_value(e, lua_gettop(L));
      lua_pop(L, 1);
    }
    if (n > 0) newline(e, e->depth - 1);
    wb_buf_addc(e->b, ']');
  } else {
    int keys = lua_gettop(L);
    lua_Integer m = (lua_Integer)lua_rawlen(L, keys);
    wb_buf_addc(e->b, '{');
    for (lua_Integer i = 1; i <= m; i++) {
      if (i > 1) wb_buf_addc(e->b, ',');
      newline(e, e->depth);
      lua_rawgeti(L, keys, i);
      int type = lua_type(L, -1);
      if (type == LUA_TSTRING)
        encode_string(e, -1);
      else if (type == LUA_TNUMBER)
        encode_number(e, -1, 1);
      else
        luaL_error(L, "json: cannot encode a %s key", lua_typename(L, type));
      wb_buf_addc(e->b, ':');
      if (e->pretty) wb_buf_addc(e->b, ' ');
      lua_rawget(L, t);
      encode_value(e, lua_gettop(L));
      lua_pop(L, 1);
    }
    if (m > 0) newline(e, e->depth - 1);
    wb_buf_addc(e->b, '}');
    lua_pop(L, 1);
  }
  e->depth--;
}

static void encode_value(struct encoder *e, int idx) {
  lua_State *L = e->L;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: wb_buf_lit(e->b, "null"); return;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx))
      wb_buf_lit(e->b, "true");
    else
      wb_buf_lit(e->b, "false");
    return;
  case LUA_TNUMBER: encode_number(e, idx, 0); return;
  case LUA_TSTRING: encode_string(e, idx); return;
  case LUA_TTABLE: encode_table(e, idx); return;
  case LUA_TLIGHTUSERDATA:
    if (wb_is_null(L, idx)) {
      wb_buf_lit(e->b, "null");
      return;
    }
    break;
  case LUA_TUSERDATA: { /* wb.stats.samples: an array of floats, written without a copy */
    const double *v;
    size_t n;
    int integer;
    if (!wb_stats_samples_view(L, idx, &v, &n, &integer)) break;
    wb_buf_addc(e->b, '[');
    for (size_t i = 0; i < n; i++) {
      if (i > 0) wb_buf_addc(e->b, ',');
      newline(e, e->depth + 1);
      if (integer)
        wb_json_write_int(e->b, (int64_t)v[i], 0);
      else
        wb_json_write_float(e->b, v[i], 0);
    }
    if (n > 0) newline(e, e->depth);
    wb_buf_addc(e->b, ']');
    return;
  }
  }
  luaL_error(L, "json: cannot encode a %s value", luaL_typename(L, idx));
}

/* Encodes the value at idx into a new buffer (streaming to fd when fd >= 0); leaves the encoder
 * and the buffer userdata on the stack and returns the buffer. */
static wb_buf *encode_into(lua_State *L, int idx, int pretty, int indent, int fd) {
  idx = lua_absindex(L, idx);
  struct encoder *e = lua_newuserdatauv(L, sizeof *e, 0);
  e->L = L;
  e->pretty = pretty;
  e->indent = indent;
  e->depth = 0;
  e->b = wb_buf_new(L);
  if (fd >= 0) wb_buf_to_fd(e->b, fd);
  encode_value(e, idx);
  return e->b;
}

/* Encodes the value at idx; pushes the result string. */
static void encode(lua_State *L, int idx, int pretty, int indent) {
  wb_buf *b = encode_into(L, idx, pretty, indent, -1);
  wb_buf_push_result(L, b);
  lua_replace(L, -3);
  lua_pop(L, 1);
}

/* Reads the {pretty, indent} options at index arg. */
static void encode_options(lua_State *L, int arg, int *pretty, int *indent) {
  *pretty = 0;
  *indent = 2;
  if (lua_isnoneornil(L, arg)) return;
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_getfield(L, arg, "pretty");
  *pretty = lua_toboolean(L, -1);
  lua_getfield(L, arg, "indent");
  if (!lua_isnil(L, -1)) {
    lua_Integer n = luaL_checkinteger(L, -1);
    luaL_argcheck(L, n >= 0 && n <= 16, arg, "indent must be 0..16");
    *indent = (int)n;
  }
  lua_pop(L, 2);
}

/* ---- Lua API -------------------------------------------------------------------------- */

/* -- v, err = wb.json.decode(text) : err is "json: line L col C: what" (1-based, columns in
 * bytes). Objects become ordered tables, arrays wb.array tables, null wb.null; integral numbers
 * without fraction or exponent and |v| <= 2^53 become integers, other numbers floats. */
static int l_decode(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  return decode(L, s, len, 0, NULL);
}

/* -- s = wb.json.encode(v [, {pretty = bool, indent = n}]) : raises on functions, userdata other
 * than wb.null, threads, cycles ("json: cycle") and nesting deeper than 1000. NaN and infinities
 * encode as null. pretty: newlines and `indent` spaces (default 2) per level. */
static int l_encode(lua_State *L) {
  luaL_checkany(L, 1);
  int pretty, indent;
  encode_options(L, 2, &pretty, &indent);
  encode(L, 1, pretty, indent);
  return 1;
}

/* Protected part of l_write: value, fd, pretty, indent; returns the errno of a failed write, 0. */
static int write_protected(lua_State *L) {
  int fd = (int)lua_tointeger(L, 2);
  wb_buf *b = encode_into(L, 1, lua_toboolean(L, 3), (int)lua_tointeger(L, 4), fd);
  wb_buf_addc(b, '\n');
  lua_pushinteger(L, wb_buf_flush(b));
  return 1;
}

/* -- ok, err, errno = wb.json.write(path, v [, {pretty, indent, sync = true}]) : writes the
 * encoding of v and a newline to path, atomically (see wb.fs.write), streaming: memory stays
 * bounded however large the document. Encoding errors raise as in encode (the old file is kept);
 * failures of the file system return nil, "path: strerror", errno. */
static int l_write(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checkany(L, 2);
  int pretty, indent, sync = 1;
  encode_options(L, 3, &pretty, &indent);
  if (lua_istable(L, 3) && lua_getfield(L, 3, "sync") != LUA_TNIL) sync = lua_toboolean(L, -1);
  char tmp[4096];
  int fd = wb_atomic_open(path, tmp, sizeof tmp);
  if (fd < 0) return wb_push_error(L, errno, path);
  lua_pushcfunction(L, write_protected);
  lua_pushvalue(L, 2);
  lua_pushinteger(L, fd);
  lua_pushboolean(L, pretty);
  lua_pushinteger(L, indent);
  if (lua_pcall(L, 4, 1, 0) != LUA_OK) {
    wb_atomic_abort(fd, tmp);
    return lua_error(L);
  }
  int e = (int)lua_tointeger(L, -1);
  if (e) {
    wb_atomic_abort(fd, tmp);
    return wb_push_error(L, e, path);
  }
  e = wb_atomic_commit(fd, tmp, path, 0644, sync); /* less the umask */
  if (e) return wb_push_error(L, e, path);
  lua_pushboolean(L, 1);
  return 1;
}

/* -- t = wb.json.object([t]) : an ordered table; t's existing keys are ordered as encode sorts
 * them, keys added later follow in insertion order. */
static int l_object(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    wb_ordered_new(L);
    return 1;
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  wb_ordered_keys(L, 1);
  if (!lua_isnil(L, -1)) {
    lua_settop(L, 1);
    return 1;
  }
  lua_pop(L, 1);
  wb_sorted_keys(L, 1);
  lua_pushvalue(L, 1);
  luaL_setmetatable(L, "wb.ordered");
  lua_pop(L, 1);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    lua_pushvalue(L, -1);
    lua_rawget(L, 1);
    lua_pushvalue(L, -2);
    lua_pushnil(L);
    lua_rawset(L, 1);
    wb_ordered_set(L, 1);
  }
  lua_settop(L, 1);
  return 1;
}

/* Files from this size on are read into a mapping that decoding gives back as it goes: their
 * text and their values are not held whole at once. */
#define READ_MAPPED_MIN ((off_t)16 << 20)

/* -- v, err = wb.json.read(path) : reads and decodes a file; errors start with the path */
static int l_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= READ_MAPPED_MIN) {
    size_t len, size;
    char *map = wb_read_file_mapped(path, &len, &size);
    if (!map) return wb_push_error(L, errno, path);
    return decode(L, map, len, size, path);
  }
  if (!wb_read_file(L, path)) return wb_push_error(L, errno, path);
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  return decode(L, s, len, 0, path);
}

/* -- t = wb.json.array([t]) : wb.array (core/ordered.c), for encoders: an empty one encodes as [] */
static const luaL_Reg json_functions[] = {{"array", wb_array},   {"decode", l_decode},
                                          {"encode", l_encode}, {"object", l_object},
                                          {"read", l_read},     {"write", l_write},
                                          {NULL, NULL}};

int luaopen_wb_json(lua_State *L) {
  luaL_newlib(L, json_functions);
  wb_push_null(L);
  lua_setfield(L, -2, "null");
  return 1;
}
