/* wb.scan: streaming scans of large logs of `[TAG] key=value ...` lines. Matching and aggregation
 * run in C (core/scan_match.c, core/scan_read.c; contract in core/scan.h): Lua gets one table of
 * aggregates per rule, never a call per line. */
#include <errno.h>
#include <string.h>

#include "opt.h"
#include "scan.h"
#include "internal.h"

#define OUT_MT "wb.scan.out"

static const char *const SUM_NAMES[] = {"time", "count", "number", "all", NULL};
static const int SUM_KINDS[] = {SCAN_TIME, SCAN_COUNT, SCAN_TIME | SCAN_COUNT,
                                SCAN_TIME | SCAN_COUNT | SCAN_BOOL};

static int out_gc(lua_State *L) {
  wb_scan_out_free(luaL_checkudata(L, 1, OUT_MT));
  return 0;
}

/* ---- the spec -------------------------------------------------------------------------------- */

static scan_str field_str(lua_State *L, int t, const char *key, int rule, int required) {
  scan_str s = {NULL, 0};
  int type = lua_getfield(L, t, key);
  if (type == LUA_TSTRING) s.s = lua_tolstring(L, -1, &s.len);
  else if (type != LUA_TNIL || required)
    luaL_error(L, "wb.scan.file: rules[%d].%s must be a string", rule, key);
  lua_pop(L, 1); /* the spec table keeps the string alive */
  if (required && s.len == 0) luaL_error(L, "wb.scan.file: rules[%d].%s must not be empty", rule, key);
  return s;
}

/* The strings of field `key` (a string or a list of strings) into out; returns how many. */
static int field_list(lua_State *L, int t, const char *key, int rule, scan_str *out, int max) {
  int type = lua_getfield(L, t, key);
  int n = 0;
  if (type == LUA_TSTRING) {
    out[n].s = lua_tolstring(L, -1, &out[n].len);
    n++;
  } else if (type == LUA_TTABLE) {
    int len = (int)lua_rawlen(L, -1);
    if (len > max) luaL_error(L, "wb.scan.file: rules[%d].%s has more than %d entries", rule, key, max);
    for (int i = 1; i <= len; i++, n++) {
      if (lua_rawgeti(L, -1, i) != LUA_TSTRING)
        luaL_error(L, "wb.scan.file: rules[%d].%s[%d] must be a string", rule, key, i);
      out[n].s = lua_tolstring(L, -1, &out[n].len);
      lua_pop(L, 1);
    }
  } else if (type != LUA_TNIL) {
    luaL_error(L, "wb.scan.file: rules[%d].%s must be a string or a list of strings", rule, key);
  }
  lua_pop(L, 1);
  return n;
}

static int index_of(const char *const names[], const char *s) {
  for (int i = 0; s && names[i]; i++)
    if (strcmp(names[i], s) == 0) return i;
  return -1;
}

/* The index in names of field `key` (a string), dflt when absent; raises listing the names. */
static int field_choice(lua_State *L, int t, const char *key, int rule, const char *const names[], int dflt) {
  int type = lua_getfield(L, t, key);
  int v = type == LUA_TNIL ? dflt : index_of(names, type == LUA_TSTRING ? lua_tostring(L, -1) : NULL);
  if (v < 0 && type != LUA_TNIL) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int k = 0; names[k]; k++) {
      if (k) luaL_addstring(&b, names[k + 1] ? ", " : " or ");
      luaL_addchar(&b, '"');
      luaL_addstring(&b, names[k]);
      luaL_addchar(&b, '"');
    }
    luaL_pushresult(&b);
    luaL_error(L, "wb.scan.file: rules[%d].%s must be %s", rule, key, lua_tostring(L, -1));
  }
  lua_pop(L, 1);
  return v;
}

/* Reads rules[i] (the table at t) into r; tables it allocates are kept in the anchors table. */
static void parse_rule(lua_State *L, int t, int i, int anchors, scan_rule *r) {
  static const char *const groups[] = {"none", "event", "label", NULL};
  static const char *const keeps[] = {"none", "first", "last", NULL};
  memset(r, 0, sizeof *r);
  r->tag = field_str(L, t, "tag", i, 1);
  r->word = field_str(L, t, "word", i, 0);
  field_str(L, t, "name", i, 0);
  r->group = field_choice(L, t, "group", i, groups, SCAN_GROUP_NONE);
  r->keep = field_choice(L, t, "keep", i, keeps, SCAN_KEEP_NONE);
  int sum = field_choice(L, t, "sum", i, SUM_NAMES, -1);
  if (r->group == SCAN_GROUP_LABEL) {
    r->label_kinds = SUM_KINDS[sum < 0 ? 2 : sum];
  } else {
    r->sum = sum < 0 ? 0 : SUM_KINDS[sum];
    r->nvalue = field_list(L, t, "value", i, r->value_keys, SCAN_MAX_VALUE_KEYS);
  }
  int type = lua_getfield(L, t, "collect");
  if (type == LUA_TBOOLEAN) {
    r->collect_all = lua_toboolean(L, -1);
  } else if (type == LUA_TTABLE) {
    int n = (int)lua_rawlen(L, -1);
    scan_str *names = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *names, 0);
    lua_rawseti(L, anchors, (lua_Integer)lua_rawlen(L, anchors) + 1);
    r->ncollect = field_list(L, t, "collect", i, names, n);
    r->collect = names;
  } else if (type != LUA_TNIL) {
    luaL_error(L, "wb.scan.file: rules[%d].collect must be true or a list of group names", i);
  }
  lua_pop(L, 1);
  if (r->collect_all + r->ncollect && r->group != SCAN_GROUP_LABEL && !r->nvalue)
    luaL_error(L, "wb.scan.file: rules[%d].collect needs value (the key whose values are collected)", i);
}

/* ---- the result -------------------------------------------------------------------------------- */

static void push_agg(lua_State *L, const scan_agg *a) {
  lua_createtable(L, 0, 4);
  wb_set_num(L, "sum", a->sum);
  wb_set_int(L, "count", a->count);
  if (a->count) {
    wb_set_num(L, "min", a->min);
    wb_set_num(L, "max", a->max);
  }
}

static void push_bucket(lua_State *L, scan_bucket *b, const scan_rule *r) {
  wb_set_int(L, "n", b->n);
  if (r->sum) {
    wb_ordered_new(L);
    for (uint32_t i = 0; i < b->keys.n; i++) {
      scan_str k = wb_scan_map_name(&b->keys, i);
      lua_pushlstring(L, k.s, k.len);
      push_agg(L, &b->aggs[i]);
      wb_ordered_set(L, -3);
    }
    lua_setfield(L, -2, "keys");
  }
  if (r->nvalue || r->group == SCAN_GROUP_LABEL) {
    push_agg(L, &b->value);
    lua_setfield(L, -2, "value");
  }
  if (b->collect) {
    scan_dist d = wb_scan_bucket_dist(b);
    lua_createtable(L, 0, 5);
    wb_set_int(L, "n", (lua_Integer)d.n);
    if (d.n) {
      wb_set_num(L, "min", d.min);
      wb_set_num(L, "median", d.median);
      wb_set_num(L, "mean", d.mean);
      wb_set_num(L, "max", d.max);
    }
    lua_setfield(L, -2, "dist");
  }
  if (b->has_kept) {
    lua_pushlstring(L, b->kept, b->kept_len);
    lua_setfield(L, -2, "line");
  }
}

static void push_rule(lua_State *L, int spec_rules, int i, scan_result *res, const scan_rule *r) {
  lua_createtable(L, 0, 8);
  lua_rawgeti(L, spec_rules, i + 1);
  lua_getfield(L, -1, "name");
  lua_setfield(L, -3, "name");
  lua_pop(L, 1);
  lua_pushlstring(L, r->tag.s, r->tag.len);
  lua_setfield(L, -2, "tag");
  if (r->group == SCAN_GROUP_NONE) {
    push_bucket(L, &res->whole, r);
  } else {
    wb_set_int(L, "n", res->whole.n);
    wb_ordered_new(L);
    for (uint32_t g = 0; g < res->groups.n; g++) {
      scan_str name = wb_scan_map_name(&res->groups, g);
      lua_pushlstring(L, name.s, name.len);
      lua_createtable(L, 0, 6);
      push_bucket(L, &res->buckets[g], r);
      wb_ordered_set(L, -3);
    }
    lua_setfield(L, -2, "groups");
  }
  if (res->dropped_keys) wb_set_int(L, "dropped_keys", res->dropped_keys);
  if (res->dropped_groups) wb_set_int(L, "dropped_groups", res->dropped_groups);
}

/* -- res, err, errno = wb.scan.file(path, {rules = {rule, ...} [, threads = 0] [, max_line = 64 MiB]})
 * Scans the file once (gzip-compressed when it is a regular file starting with the gzip magic;
 * pipes and FIFOs are read as they come). A rule:
 *   {tag = "[TAG]", name = s, word = "bare_token", group = "event"|"label",
 *    sum = "time"|"count"|"number"|"all", value = key | {key, ...}, collect = true | {group, ...},
 *    keep = "first"|"last"}
 * res = {bytes, lines, truncated, threads, gzip, rules = {[i] = r, [name] = r}} where
 * r = {name, tag, n, keys = ordered{key = agg}, value = agg, dist = {n, min, median, mean, max},
 *      line = kept segment, groups = ordered{group = {n, keys, value, dist, line}}, dropped_keys,
 *      dropped_groups}; agg = {sum, count, min, max}. Grouped rules carry their aggregates per
 * group; group = "label" reads `[TAG] label....  123.4ms` lines (value = the trailing number of
 * the kinds `sum` selects, default "number"). nil, "path: strerror", errno when unreadable. */
static int l_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchors */
  if (lua_getfield(L, 2, "rules") != LUA_TTABLE) luaL_argerror(L, 2, "rules must be a list of rules");
  int spec_rules = lua_gettop(L);
  int n = (int)lua_rawlen(L, spec_rules);
  scan_rule *rules = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *rules, 0);
  lua_rawseti(L, 3, (lua_Integer)lua_rawlen(L, 3) + 1);
  for (int i = 0; i < n; i++) {
    if (lua_rawgeti(L, spec_rules, i + 1) != LUA_TTABLE)
      luaL_error(L, "wb.scan.file: rules[%d] must be a table", i + 1);
    parse_rule(L, lua_gettop(L), i + 1, 3, &rules[i]);
    lua_pop(L, 1);
  }
  scan_spec spec = {rules, n, 64u << 20, 0};
  lua_Integer threads = wb_opt_integer(L, 2, "threads", 0);
  lua_Integer max_line = wb_opt_integer(L, 2, "max_line", (lua_Integer)spec.max_line);
  if (threads < 0 || threads > 64) luaL_argerror(L, 2, "threads must be 0..64");
  spec.threads = (int)threads;
  if (max_line < 1024) luaL_argerror(L, 2, "max_line must be at least 1024");
  spec.max_line = (size_t)max_line;
  scan_out *out = lua_newuserdatauv(L, sizeof *out, 0);
  memset(out, 0, sizeof *out);
  luaL_setmetatable(L, OUT_MT);
  char err[512];
  int e = wb_scan_path(&spec, path, out, err, sizeof err);
  if (e == EINTR && wb_signal_pending()) return wb_raise_interrupt(L);
  if (e) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    lua_pushinteger(L, e);
    return 3;
  }
  lua_createtable(L, 0, 6);
  wb_set_int(L, "bytes", out->bytes);
  wb_set_int(L, "lines", out->lines);
  wb_set_int(L, "truncated", out->truncated);
  wb_set_int(L, "threads", out->threads);
  wb_set_bool(L, "gzip", out->gzip);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    push_rule(L, spec_rules, i, &out->results[i], &rules[i]);
    lua_getfield(L, -1, "name");
    if (lua_isstring(L, -1)) {
      lua_pushvalue(L, -2);
      lua_settable(L, -4);
    } else {
      lua_pop(L, 1);
    }
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "rules");
  wb_scan_out_free(out);
  return 1;
}

/* -- x, unit = wb.scan.number(s) : s parsed as a number (see core/scan.h): unit "s" with x in
 * seconds for durations, "" for plain numbers (an integer when s is one), "bool" for true/false
 * (1/0); nil when s is not a number */
static int l_number(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  double x;
  int kind = wb_scan_number(s, s + len, &x);
  if (!kind) return 0;
  if (kind == SCAN_COUNT && !strpbrk(s, ".eE") && x > -9007199254740992.0 && x < 9007199254740992.0)
    lua_pushinteger(L, (lua_Integer)x);
  else
    lua_pushnumber(L, x);
  lua_pushstring(L, kind == SCAN_TIME ? "s" : kind == SCAN_BOOL ? "bool" : "");
  return 2;
}

/* Calls fn(L, key, klen, value, vlen) for every key=value token of s. */
static void each_token(lua_State *L, const char *s, size_t len,
                       void (*fn)(lua_State *, const char *, size_t, const char *, size_t)) {
  const char *p = s, *end = s + len;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    const char *t = p;
    while (p < end && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
    const char *eq = memchr(t, '=', (size_t)(p - t));
    if (eq && eq > t) fn(L, t, (size_t)(eq - t), eq + 1, (size_t)(p - eq - 1));
  }
}

static void add_pair(lua_State *L, const char *k, size_t klen, const char *v, size_t vlen) {
  lua_createtable(L, 2, 0);
  lua_pushlstring(L, k, klen);
  lua_rawseti(L, -2, 1);
  lua_pushlstring(L, v, vlen);
  lua_rawseti(L, -2, 2);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
}

static void add_field(lua_State *L, const char *k, size_t klen, const char *v, size_t vlen) {
  lua_pushlstring(L, k, klen);
  lua_pushlstring(L, v, vlen);
  wb_ordered_set(L, -3);
}

/* -- tokens = wb.scan.tokens(line) : the key=value tokens of line in order, as {{key, value}, ...};
 * tokens without '=' (bare words, tags) and with an empty key are skipped; a value may hold '=' */
static int l_tokens(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_newtable(L);
  each_token(L, s, len, add_pair);
  return 1;
}

/* -- fields = wb.scan.fields(line) : the key=value tokens of line as an ordered table
 * {key = value (a string)}; a repeated key keeps its last value */
static int l_fields(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  wb_ordered_new(L);
  each_token(L, s, len, add_field);
  return 1;
}

static const luaL_Reg functions[] = {{"fields", l_fields},
                                     {"file", l_file},
                                     {"number", l_number},
                                     {"tokens", l_tokens},
                                     {NULL, NULL}};

int luaopen_wb_scan(lua_State *L) {
  luaL_newmetatable(L, OUT_MT);
  lua_pushcfunction(L, out_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newlib(L, functions);
  return 1;
}
