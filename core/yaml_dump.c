/* wb.yaml.dump: Lua values -> block-style YAML that wb.yaml.load reads back to equal values.
 * Key order follows wb_table_layout (ordered tables in insertion order, others sorted). */
#include <math.h>
#include <stdio.h>

#include "encode.h"

/* libyaml gives up on implicit keys longer than 1024 characters; longer ones use "? key". */
#define MAX_IMPLICIT_KEY 1000

enum place { TOP, AFTER_KEY, AFTER_DASH };

struct dumper {
  lua_State *L;
  wb_buf *b;
  int depth;
  const void *path[WB_MAX_NESTING];
};

/* Decodes the multi-byte UTF-8 sequence at s (s[0] >= 0x80, n bytes available): returns the code
 * point and sets *len, or returns -1 for invalid UTF-8 (overlong forms, surrogates, > U+10FFFF,
 * truncation). */
static long utf8_next(const unsigned char *s, size_t n, int *len) {
  static const long min[] = {0, 0, 0x80, 0x800, 0x10000};
  unsigned char c = s[0];
  int k = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (k == 0 || (size_t)k > n) return -1;
  long cp = c & (0x7f >> k);
  for (int i = 1; i < k; i++) {
    if ((s[i] & 0xc0) != 0x80) return -1;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
  *len = k;
  return cp;
}

/* Code points a YAML reader does not take raw (or takes as a line break): these get escapes. */
static int needs_escape(long cp) {
  return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0xfeff || cp == 0xfffe || cp == 0xffff;
}

/* Whether s can be written as a plain scalar that reads back as the same string; raises if s is
 * not valid UTF-8. */
static int plain_ok(struct dumper *d, const char *s, size_t n) {
  int ok = n > 0 && !strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) && s[n - 1] != ' ' &&
           s[n - 1] != ':' && !(n >= 3 && memcmp(s, "...", 3) == 0) &&
           !(n == 2 && memcmp(s, "<<", 2) == 0);
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    int len = 1;
    long cp = u[i] < 0x80 ? u[i] : utf8_next(u + i, n - i, &len);
    if (cp < 0) luaL_error(d->L, "yaml: cannot dump a string that is not valid UTF-8");
    if (needs_escape(cp) || (i + 1 < n && ((u[i] == ':' && u[i + 1] == ' ') ||
                                           (u[i] == ' ' && u[i + 1] == '#'))))
      ok = 0;
    i += (size_t)len;
  }
  return ok && wb_yaml_plain_is_string(s, n);
}

static void add_quoted(struct dumper *d, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  wb_buf_addc(d->b, '"');
  for (size_t i = 0; i < n;) {
    int len = 1;
    long cp = u[i] < 0x80 ? u[i] : utf8_next(u + i, n - i, &len);
    char esc[16];
    const char *short_esc = NULL;
    switch (cp) {
    case '"': short_esc = "\\\""; break;
    case '\\': short_esc = "\\\\"; break;
    case 0: short_esc = "\\0"; break;
    case '\a': short_esc = "\\a"; break;
    case '\b': short_esc = "\\b"; break;
    case '\t': short_esc = "\\t"; break;
    case '\n': short_esc = "\\n"; break;
    case '\v': short_esc = "\\v"; break;
    case '\f': short_esc = "\\f"; break;
    case '\r': short_esc = "\\r"; break;
    case 0x1b: short_esc = "\\e"; break;
    case 0x85: short_esc = "\\N"; break;
    case 0x2028: short_esc = "\\L"; break;
    case 0x2029: short_esc = "\\P"; break;
    }
    if (short_esc)
      wb_buf_add(d->b, short_esc, strlen(short_esc));
    else if (needs_escape(cp))
      wb_buf_add(d->b, esc,
                 (size_t)snprintf(esc, sizeof esc, cp < 0x100 ? "\\x%02X" : "\\u%04X", (unsigned)cp));
    else
      wb_buf_add(d->b, s + i, (size_t)len);
    i += (size_t)len;
  }
  wb_buf_addc(d->b, '"');
}

static void add_string(struct dumper *d, int idx) {
  size_t n;
  const char *s = lua_tolstring(d->L, idx, &n);
  if (plain_ok(d, s, n))
    wb_buf_add(d->b, s, n);
  else
    add_quoted(d, s, n);
}

static void add_number(struct dumper *d, int idx) {
  char num[32];
  int n;
  lua_Number f = lua_tonumber(d->L, idx);
  if (lua_isinteger(d->L, idx))
    n = snprintf(num, sizeof num, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(d->L, idx));
  else if (isnan(f))
    n = snprintf(num, sizeof num, ".nan");
  else if (isinf(f))
    n = snprintf(num, sizeof num, f > 0 ? ".inf" : "-.inf");
  else
    n = wb_format_float(num, (double)f);
  wb_buf_add(d->b, num, (size_t)n);
}

/* Writes the scalar at idx; `what` names it in errors ("value", "key"). */
static void add_scalar(struct dumper *d, int idx, const char *what) {
  lua_State *L = d->L;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: wb_buf_lit(d->b, "null"); return;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx))
      wb_buf_lit(d->b, "true");
    else
      wb_buf_lit(d->b, "false");
    return;
  case LUA_TNUMBER: add_number(d, idx); return;
  case LUA_TSTRING: add_string(d, idx); return;
  case LUA_TLIGHTUSERDATA:
    if (wb_is_null(L, idx)) {
      wb_buf_lit(d->b, "null");
      return;
    }
    break;
  }
  luaL_error(L, "yaml: cannot dump a %s %s", luaL_typename(L, idx), what);
}

static void add_key(struct dumper *d, int key, int indent) {
  lua_State *L = d->L;
  size_t start = d->b->len;
  if (lua_type(L, key) == LUA_TTABLE) luaL_error(L, "yaml: cannot dump a table key");
  if (wb_is_null(L, key)) luaL_error(L, "yaml: cannot dump a null key");
  add_scalar(d, key, "key");
  size_t n = d->b->len - start;
  if (n <= MAX_IMPLICIT_KEY) {
    wb_buf_addc(d->b, ':');
    return;
  }
  wb_buf_lit(d->b, "  ");
  memmove(d->b->data + start + 2, d->b->data + start, n);
  memcpy(d->b->data + start, "? ", 2);
  wb_buf_addc(d->b, '\n');
  wb_buf_spaces(d->b, (size_t)indent);
  wb_buf_addc(d->b, ':');
}

static void dump_value(struct dumper *d, int idx, int indent, enum place place);

/* Writes the non-empty table t: an array of n items (n > 0) or, n < 0, a mapping whose keys are
 * on the stack top. */
static void dump_block(struct dumper *d, int t, lua_Integer n, int indent, enum place place) {
  lua_State *L = d->L;
  int child = place == TOP ? 0 : indent + 2;
  if (place == AFTER_KEY) wb_buf_addc(d->b, '\n');
  if (place == AFTER_DASH) wb_buf_addc(d->b, ' ');
  int keys = n < 0 ? lua_gettop(L) : 0;
  if (keys) n = (lua_Integer)lua_rawlen(L, keys);
  for (lua_Integer i = 1; i <= n; i++) {
    if (i > 1 || place != AFTER_DASH) wb_buf_spaces(d->b, (size_t)child);
    if (keys) {
      lua_rawgeti(L, keys, i);
      add_key(d, lua_gettop(L), child);
      lua_rawget(L, t);
      dump_value(d, lua_gettop(L), child, AFTER_KEY);
    } else {
      wb_buf_addc(d->b, '-');
      lua_rawgeti(L, t, i);
      dump_value(d, lua_gettop(L), child, AFTER_DASH);
    }
    lua_pop(L, 1);
  }
  if (keys) lua_pop(L, 1);
}

static void dump_value(struct dumper *d, int idx, int indent, enum place place) {
  lua_State *L = d->L;
  if (lua_type(L, idx) == LUA_TTABLE) {
    wb_enter_table(L, idx, d->path, &d->depth, "yaml");
    lua_Integer n = wb_table_layout(L, idx);
    int empty = n == 0 || (n < 0 && lua_rawlen(L, -1) == 0);
    if (!empty) {
      dump_block(d, idx, n, indent, place);
      d->depth--;
      return;
    }
    if (n < 0) lua_pop(L, 1);
    d->depth--;
    if (place != TOP) wb_buf_addc(d->b, ' ');
    if (n == 0)
      wb_buf_lit(d->b, "[]\n");
    else
      wb_buf_lit(d->b, "{}\n");
    return;
  }
  if (place != TOP) wb_buf_addc(d->b, ' ');
  add_scalar(d, idx, "value");
  wb_buf_addc(d->b, '\n');
}

/* -- s = wb.yaml.dump(v) : block-style YAML ending with "\n". Raises on functions, userdata other
 * than wb.null, strings that are not UTF-8, cycles ("yaml: cycle") and nesting deeper than 1000. */
int wb_yaml_dump(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  struct dumper *d = lua_newuserdatauv(L, sizeof *d, 0);
  d->L = L;
  d->depth = 0;
  d->b = wb_buf_new(L);
  dump_value(d, 1, 0, TOP);
  wb_buf_push_result(L, d->b);
  return 1;
}
