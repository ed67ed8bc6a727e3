/* wb.yaml: YAML text -> Lua values with libyaml's event parser. Mappings become ordered tables,
 * sequences "wb.array" tables, plain scalars resolve by the YAML 1.2 core schema. Where each
 * table and each value came from (file, line) is kept off the data, in a weak-keyed registry
 * table, for wb.yaml.location. The dumper is in core/yaml_dump.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <yaml.h>

#include "encode.h"

#define TAG(name) "tag:yaml.org,2002:" name
/* Most table entries that alias expansion may copy in one load. */
#define MAX_ALIAS_COPIES 1000000

static const char LOCATIONS_KEY = 'l'; /* registry: weak-keyed table -> {file, line, lines} */

/* ---- scalar resolution ---------------------------------------------------------------- */

enum plain_kind { PLAIN_STRING, PLAIN_NULL, PLAIN_BOOL, PLAIN_INT, PLAIN_FLOAT };

static int is_one_of(const char *s, size_t n, const char *const *words) {
  for (; *words; words++)
    if (strlen(*words) == n && memcmp(s, *words, n) == 0) return 1;
  return 0;
}

static const char *const null_words[] = {"~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", NULL};
static const char *const false_words[] = {"false", "False", "FALSE", NULL};

static int digit_value(char c, int base) {
  int d = c >= '0' && c <= '9' ? c - '0'
          : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                 : 99;
  return d < base ? d : -1;
}

/* Core-schema integers: [-+]?[0-9]+, 0o[0-7]+, 0x[0-9a-fA-F]+. Returns PLAIN_INT with *i, or
 * PLAIN_FLOAT with *d when the value does not fit in 64 bits, or PLAIN_STRING. s must be
 * NUL-terminated at n. */
static int parse_int(const char *s, size_t n, lua_Integer *i, double *d) {
  int base = 10, neg = 0;
  size_t k = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    base = s[1] == 'x' ? 16 : 8;
    k = 2;
  } else if (n > 1 && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    k = 1;
  }
  if (k == n) return PLAIN_STRING;
  uint64_t v = 0;
  double dv = 0; /* octal only: strtod reads the decimal and hex forms */
  int overflow = 0;
  for (size_t j = k; j < n; j++) {
    int dig = digit_value(s[j], base);
    if (dig < 0) return PLAIN_STRING;
    if (v > (UINT64_MAX - (uint64_t)dig) / (uint64_t)base) overflow = 1;
    v = v * (uint64_t)base + (uint64_t)dig;
    dv = dv * 8 + dig;
  }
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (overflow || v > limit) {
    *d = base == 8 ? dv : strtod(s, NULL);
    return PLAIN_FLOAT;
  }
  *i = neg ? (lua_Integer)(0 - v) : (lua_Integer)v;
  return PLAIN_INT;
}

/* Core-schema floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, [-+]?\.inf, \.nan
 * (and the capitalised forms). s must be NUL-terminated at n. */
static int parse_float(const char *s, size_t n, double *d) {
  static const char *const inf_words[] = {".inf", ".Inf", ".INF", NULL};
  static const char *const nan_words[] = {".nan", ".NaN", ".NAN", NULL};
  size_t k = n > 0 && (s[0] == '-' || s[0] == '+');
  if (is_one_of(s + k, n - k, inf_words)) {
    *d = s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    return 1;
  }
  if (is_one_of(s, n, nan_words)) {
    *d = NAN;
    return 1;
  }
  size_t j = k, int_digits = 0, frac_digits = 0;
  while (j < n && s[j] >= '0' && s[j] <= '9') j++, int_digits++;
  if (j < n && s[j] == '.') {
    j++;
    while (j < n && s[j] >= '0' && s[j] <= '9') j++, frac_digits++;
  }
  if (int_digits == 0 && frac_digits == 0) return 0;
  if (j < n && (s[j] == 'e' || s[j] == 'E')) {
    j++;
    if (j < n && (s[j] == '-' || s[j] == '+')) j++;
    if (j == n) return 0;
    while (j < n && s[j] >= '0' && s[j] <= '9') j++;
  }
  if (j != n) return 0;
  *d = strtod(s, NULL);
  return 1;
}

static int plain_kind(const char *s, size_t n, lua_Integer *i, double *d) {
  if (n == 0 || is_one_of(s, n, null_words)) return PLAIN_NULL;
  if (is_one_of(s, n, true_words) || is_one_of(s, n, false_words)) return PLAIN_BOOL;
  int k = parse_int(s, n, i, d);
  if (k != PLAIN_STRING) return k;
  return parse_float(s, n, d) ? PLAIN_FLOAT : PLAIN_STRING;
}

int wb_yaml_plain_is_string(const char *s, size_t n) {
  lua_Integer i;
  double d;
  return plain_kind(s, n, &i, &d) == PLAIN_STRING;
}

/* ---- the loader ----------------------------------------------------------------------- */

struct loader {
  lua_State *L;
  yaml_parser_t parser;
  yaml_event_t ev;
  int have_event;
  const char *file, *text;
  size_t len;
  int file_idx, locs_idx, anchors_idx; /* stack slots */
  int depth;
  lua_Integer copies;
};

__attribute__((format(printf, 3, 4), noreturn)) static void fail(struct loader *ld,
                                                                 yaml_mark_t mark,
                                                                 const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  lua_pushfstring(ld->L, "%s:%d:%d: %s", ld->file, (int)mark.line + 1, (int)mark.column + 1, what);
  lua_error(ld->L);
  __builtin_unreachable();
}

__attribute__((noreturn)) static void parser_fail(struct loader *ld) {
  yaml_parser_t *p = &ld->parser;
  const char *problem = p->problem ? p->problem : "syntax error";
  if (p->error == YAML_MEMORY_ERROR) luaL_error(ld->L, "%s: out of memory", ld->file);
  yaml_mark_t mark = p->problem_mark;
  if (p->error == YAML_READER_ERROR) {
    size_t off = p->problem_offset < ld->len ? p->problem_offset : ld->len;
    mark.line = mark.column = 0;
    for (size_t i = 0; i < off; i++) {
      unsigned char c = (unsigned char)ld->text[i];
      if (c == '\n')
        mark.line++, mark.column = 0;
      else if ((c & 0xc0) != 0x80)
        mark.column++;
    }
  }
  if (p->context) fail(ld, mark, "%s (%s)", problem, p->context);
  fail(ld, mark, "%s", problem);
}

static yaml_event_type_t next_event(struct loader *ld) {
  if (ld->have_event) yaml_event_delete(&ld->ev);
  ld->have_event = 0;
  if (!yaml_parser_parse(&ld->parser, &ld->ev)) parser_fail(ld);
  ld->have_event = 1;
  return ld->ev.type;
}

/* Records where the table on top came from; pushes its per-key line table. */
static void new_location(struct loader *ld, int line) {
  lua_State *L = ld->L;
  lua_pushvalue(L, -1);
  lua_createtable(L, 3, 0);
  lua_pushvalue(L, ld->file_idx);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, line);
  lua_rawseti(L, -2, 2);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, 3);
  lua_insert(L, -3);
  lua_rawset(L, ld->locs_idx);
}

/* Pushes the per-key line table of the table at idx, or nil. */
static void push_lines(struct loader *ld, int idx) {
  lua_pushvalue(ld->L, idx);
  if (lua_rawget(ld->L, ld->locs_idx) == LUA_TTABLE) {
    lua_rawgeti(ld->L, -1, 3);
    lua_remove(ld->L, -2);
  }
}

static void set_anchor(struct loader *ld, const yaml_char_t *anchor, int value) {
  if (!anchor) return;
  value = lua_absindex(ld->L, value);
  lua_pushstring(ld->L, (const char *)anchor);
  lua_pushvalue(ld->L, value);
  lua_rawset(ld->L, ld->anchors_idx);
}

static void push_scalar(struct loader *ld) {
  lua_State *L = ld->L;
  const yaml_event_t *ev = &ld->ev;
  const char *s = (const char *)ev->data.scalar.value, *tag = (const char *)ev->data.scalar.tag;
  size_t n = ev->data.scalar.length;
  lua_Integer i = 0;
  double d = 0;
  int kind = PLAIN_STRING;
  if (!tag)
    kind = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_kind(s, n, &i, &d) : PLAIN_STRING;
  else if (strcmp(tag, "!") == 0 || strcmp(tag, TAG("str")) == 0)
    kind = PLAIN_STRING;
  else if (strcmp(tag, TAG("int")) == 0) {
    if ((kind = parse_int(s, n, &i, &d)) == PLAIN_STRING)
      fail(ld, ev->start_mark, "invalid !!int value '%s'", s);
  } else if (strcmp(tag, TAG("float")) == 0) {
    kind = PLAIN_FLOAT;
    if (parse_int(s, n, &i, &d) == PLAIN_INT)
      d = (double)i;
    else if (!parse_float(s, n, &d))
      fail(ld, ev->start_mark, "invalid !!float value '%s'", s);
  } else if (strcmp(tag, TAG("bool")) == 0) {
    if ((kind = plain_kind(s, n, &i, &d)) != PLAIN_BOOL)
      fail(ld, ev->start_mark, "invalid !!bool value '%s'", s);
  } else if (strcmp(tag, TAG("null")) == 0) {
    if ((kind = plain_kind(s, n, &i, &d)) != PLAIN_NULL)
      fail(ld, ev->start_mark, "invalid !!null value '%s'", s);
  } else
    fail(ld, ev->start_mark, "unsupported tag '%s'", tag);
  switch (kind) {
  case PLAIN_NULL: wb_push_null(L); break;
  case PLAIN_BOOL: lua_pushboolean(L, is_one_of(s, n, true_words)); break;
  case PLAIN_INT: lua_pushinteger(L, i); break;
  case PLAIN_FLOAT: lua_pushnumber(L, d); break;
  default: lua_pushlstring(L, s, n); break;
  }
  set_anchor(ld, ev->data.scalar.anchor, -1);
}

/* Replaces the table on top with a deep copy that shares its location records. */
static void deep_copy(struct loader *ld, int depth) {
  lua_State *L = ld->L;
  int src = lua_gettop(L);
  if (ld->depth + depth > WB_MAX_NESTING) fail(ld, ld->ev.start_mark, "nesting too deep");
  luaL_checkstack(L, 12, "yaml: nesting too deep");
  int array = wb_has_metatable(L, src, "wb.array");
  if (array) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, src);
    if ((ld->copies += n + 1) > MAX_ALIAS_COPIES) fail(ld, ld->ev.start_mark, "too many alias expansions");
    wb_array_new(L, (int)n);
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_rawgeti(L, src, i) == LUA_TTABLE) deep_copy(ld, depth + 1);
      lua_rawseti(L, -2, i);
    }
  } else {
    wb_ordered_keys(L, src);
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if ((ld->copies += n + 1) > MAX_ALIAS_COPIES) fail(ld, ld->ev.start_mark, "too many alias expansions");
    wb_ordered_new(L);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -2, i);
      lua_pushvalue(L, -1);
      if (lua_rawget(L, src) == LUA_TTABLE) deep_copy(ld, depth + 1);
      wb_ordered_set(L, -3);
    }
    lua_remove(L, -2);
  }
  lua_pushvalue(L, src);
  if (lua_rawget(L, ld->locs_idx) != LUA_TNIL) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, ld->locs_idx);
  } else
    lua_pop(L, 1);
  lua_replace(L, src);
}

static void push_alias(struct loader *ld) {
  const char *name = (const char *)ld->ev.data.alias.anchor;
  lua_pushstring(ld->L, name);
  int type = lua_rawget(ld->L, ld->anchors_idx);
  if (type == LUA_TNIL) fail(ld, ld->ev.start_mark, "unknown anchor '%s'", name);
  if (type == LUA_TTABLE) deep_copy(ld, 1);
}

static void push_node(struct loader *ld);

/* Checks the tag and depth of a collection start event and pushes its anchor name (or nil). */
static void enter(struct loader *ld, const yaml_char_t *tag, const yaml_char_t *anchor,
                  const char *std) {
  if (tag && strcmp((const char *)tag, "!") != 0 && strcmp((const char *)tag, std) != 0)
    fail(ld, ld->ev.start_mark, "unsupported tag '%s'", (const char *)tag);
  if (++ld->depth > WB_MAX_NESTING) fail(ld, ld->ev.start_mark, "nesting too deep");
  luaL_checkstack(ld->L, 16, "yaml: nesting too deep");
  if (anchor)
    lua_pushstring(ld->L, (const char *)anchor);
  else
    lua_pushnil(ld->L);
}

/* Anchors the finished collection on top (if its start event had an anchor), drops the anchor
 * name below it. */
static void leave(struct loader *ld) {
  lua_State *L = ld->L;
  ld->depth--;
  if (!lua_isnil(L, -2)) {
    lua_pushvalue(L, -2);
    lua_pushvalue(L, -2);
    lua_rawset(L, ld->anchors_idx);
  }
  lua_remove(L, -2);
}

static void push_sequence(struct loader *ld) {
  lua_State *L = ld->L;
  enter(ld, ld->ev.data.sequence_start.tag, ld->ev.data.sequence_start.anchor, TAG("seq"));
  wb_array_new(L, 0);
  new_location(ld, (int)ld->ev.start_mark.line + 1);
  int lines = lua_gettop(L), t = lines - 1;
  for (lua_Integer i = 1; next_event(ld) != YAML_SEQUENCE_END_EVENT; i++) {
    lua_Integer line = (lua_Integer)ld->ev.start_mark.line + 1;
    push_node(ld);
    lua_rawseti(L, t, i);
    lua_pushinteger(L, line);
    lua_rawseti(L, lines, i);
  }
  lua_pop(L, 1);
  leave(ld);
}

static int is_merge_key(const yaml_event_t *ev) {
  return ev->type == YAML_SCALAR_EVENT && !ev->data.scalar.tag &&
         ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && ev->data.scalar.length == 2 &&
         memcmp(ev->data.scalar.value, "<<", 2) == 0;
}

/* Adds the keys of the mapping on top that t lacks (recording them in the merged set, copying
 * their lines); pops the mapping. */
static void merge_one(struct loader *ld, int t, int lines, int merged, yaml_mark_t mark) {
  lua_State *L = ld->L;
  int src = lua_gettop(L);
  if (lua_type(L, src) != LUA_TTABLE || wb_has_metatable(L, src, "wb.array"))
    fail(ld, mark, "merge value must be a mapping or a list of mappings");
  wb_ordered_keys(L, src);
  push_lines(ld, src);
  lua_Integer n = (lua_Integer)lua_rawlen(L, src + 1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, src + 1, i);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, t) != LUA_TNIL) {
      lua_pop(L, 2);
      continue;
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushboolean(L, 1);
    lua_rawset(L, merged);
    if (lua_istable(L, src + 2)) {
      lua_pushvalue(L, -1);
      lua_pushvalue(L, -1);
      lua_rawget(L, src + 2);
      lua_rawset(L, lines);
    }
    lua_pushvalue(L, -1);
    lua_rawget(L, src);
    wb_ordered_set(L, t);
  }
  lua_settop(L, src - 1);
}

static void merge(struct loader *ld, int t, int lines, int merged, yaml_mark_t mark) {
  lua_State *L = ld->L;
  if (lua_istable(L, -1) && wb_has_metatable(L, -1, "wb.array")) {
    int list = lua_gettop(L);
    lua_Integer n = (lua_Integer)lua_rawlen(L, list);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, list, i);
      merge_one(ld, t, lines, merged, mark);
    }
    lua_pop(L, 1);
  } else
    merge_one(ld, t, lines, merged, mark);
}

/* Pushes the key of the current event; fails unless it is a scalar usable as a table key. */
static void push_key(struct loader *ld) {
  lua_State *L = ld->L;
  yaml_mark_t mark = ld->ev.start_mark;
  if (ld->ev.type == YAML_SEQUENCE_START_EVENT || ld->ev.type == YAML_MAPPING_START_EVENT)
    fail(ld, mark, "non-scalar key");
  push_node(ld);
  if (lua_istable(L, -1)) fail(ld, mark, "non-scalar key");
  if (wb_is_null(L, -1)) fail(ld, mark, "null key");
  if (lua_type(L, -1) == LUA_TNUMBER && isnan(lua_tonumber(L, -1))) fail(ld, mark, "NaN key");
}

static void push_mapping(struct loader *ld) {
  lua_State *L = ld->L;
  enter(ld, ld->ev.data.mapping_start.tag, ld->ev.data.mapping_start.anchor, TAG("map"));
  wb_ordered_new(L);
  new_location(ld, (int)ld->ev.start_mark.line + 1);
  lua_newtable(L); /* keys that came from merges, which explicit keys may override */
  int merged = lua_gettop(L), lines = merged - 1, t = merged - 2;
  while (next_event(ld) != YAML_MAPPING_END_EVENT) {
    yaml_mark_t mark = ld->ev.start_mark;
    if (is_merge_key(&ld->ev)) {
      next_event(ld);
      push_node(ld);
      merge(ld, t, lines, merged, mark);
      continue;
    }
    const char *text = ld->ev.type == YAML_SCALAR_EVENT ? (const char *)ld->ev.data.scalar.value
                       : ld->ev.type == YAML_ALIAS_EVENT ? (const char *)ld->ev.data.alias.anchor
                                                          : "";
    push_key(ld);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, t) != LUA_TNIL) {
      lua_pushvalue(L, -2);
      if (lua_rawget(L, merged) == LUA_TNIL) fail(ld, mark, "duplicate key '%s'", text);
      lua_pop(L, 1);
      lua_pushvalue(L, -2);
      lua_pushnil(L);
      lua_rawset(L, merged);
    }
    lua_pop(L, 1);
    next_event(ld);
    lua_pushvalue(L, -1);
    lua_pushinteger(L, (lua_Integer)ld->ev.start_mark.line + 1);
    lua_rawset(L, lines);
    push_node(ld);
    wb_ordered_set(L, t);
  }
  lua_pop(L, 2);
  leave(ld);
}

static void push_node(struct loader *ld) {
  switch (ld->ev.type) {
  case YAML_SCALAR_EVENT: push_scalar(ld); return;
  case YAML_ALIAS_EVENT: push_alias(ld); return;
  case YAML_SEQUENCE_START_EVENT: push_sequence(ld); return;
  case YAML_MAPPING_START_EVENT: push_mapping(ld); return;
  default: fail(ld, ld->ev.start_mark, "unexpected parser event");
  }
}

/* Arguments: the loader, a boolean "all documents". Returns the only document (wb.null when
 * there is none; a second one is an error at its start) or an array of all documents. */
static int load_protected(lua_State *L) {
  struct loader *ld = lua_touserdata(L, 1);
  int all = lua_toboolean(L, 2);
  lua_pushstring(L, ld->file);
  ld->file_idx = lua_gettop(L);
  wb_weak_registry(L, &LOCATIONS_KEY);
  ld->locs_idx = lua_gettop(L);
  lua_pushnil(L);
  ld->anchors_idx = lua_gettop(L);
  if (all) wb_array_new(L, 0);
  next_event(ld); /* stream start */
  for (lua_Integer n = 1; next_event(ld) == YAML_DOCUMENT_START_EVENT; n++) {
    lua_newtable(L);
    lua_replace(L, ld->anchors_idx);
    next_event(ld);
    push_node(ld);
    next_event(ld); /* document end */
    if (!all) {
      if (next_event(ld) == YAML_DOCUMENT_START_EVENT)
        fail(ld, ld->ev.start_mark,
             "a second document: the file must hold one (remove the '---' and what follows)");
      return 1;
    }
    lua_rawseti(L, -2, n);
  }
  if (!all) wb_push_null(L);
  return 1;
}

/* Loads text; pushes the result and returns 1, or pushes nil and the message and returns 2. */
static int load(lua_State *L, const char *text, size_t len, const char *file, int all) {
  struct loader ld;
  memset(&ld, 0, sizeof ld);
  ld.L = L;
  ld.file = file;
  ld.text = text;
  ld.len = len;
  if (!yaml_parser_initialize(&ld.parser)) return luaL_error(L, "%s: out of memory", file);
  yaml_parser_set_input_string(&ld.parser, (const unsigned char *)text, len);
  lua_pushcfunction(L, load_protected);
  lua_pushlightuserdata(L, &ld);
  lua_pushboolean(L, all);
  int status = lua_pcall(L, 2, 1, 0);
  if (ld.have_event) yaml_event_delete(&ld.ev);
  yaml_parser_delete(&ld.parser);
  if (status == LUA_OK) return 1;
  if (status != LUA_ERRRUN || lua_type(L, -1) != LUA_TSTRING) return lua_error(L);
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

/* -- v, err = wb.yaml.load(text [, filename]) : the only document (wb.null if none; a second one
 * is an error); err is "FILE:LINE:COL: problem (context)", FILE defaulting to "<string>" */
static int l_load(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  return load(L, text, len, luaL_optstring(L, 2, "<string>"), 0);
}

/* -- docs, err = wb.yaml.load_all(text [, filename]) : every document, as an array */
static int l_load_all(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  return load(L, text, len, luaL_optstring(L, 2, "<string>"), 1);
}

/* -- v, err = wb.yaml.load_file(path) : the only document of the file, as wb.yaml.load; an unreadable file
 * gives nil, "PATH: strerror", errno */
static int l_load_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!wb_read_file(L, path)) return wb_push_error(L, errno, path);
  size_t len;
  const char *text = lua_tolstring(L, -1, &len);
  return load(L, text, len, path, 0);
}

/* -- file, line = wb.yaml.location(tbl [, key]) : where a loaded mapping or sequence (key nil)
 * or the value tbl[key] started (1-based line); nil when unknown */
static int l_location(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  wb_weak_registry(L, &LOCATIONS_KEY);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, -2) != LUA_TTABLE) return 0;
  int info = lua_gettop(L);
  lua_rawgeti(L, info, 1);
  if (lua_isnoneornil(L, 2)) {
    lua_rawgeti(L, info, 2);
    return 2;
  }
  lua_rawgeti(L, info, 3);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, -2) == LUA_TNIL) return 0;
  lua_remove(L, -2);
  return 2;
}

static const luaL_Reg yaml_functions[] = {
    {"dump", wb_yaml_dump},   {"load", l_load},         {"load_all", l_load_all},
    {"load_file", l_load_file}, {"location", l_location}, {NULL, NULL}};

int luaopen_wb_yaml(lua_State *L) {
  luaL_newlib(L, yaml_functions);
  wb_push_null(L);
  lua_setfield(L, -2, "null");
  return 1;
}
