/* JSON: wb.json.decode/encode (core/json.c), the reader (core/json_read.c) and the Lua-free
 * wb_json_reformat (core/json_text.c), against the reference model of the parser wb had before
 * cJSON (json_ref.c); checks in tests/fuzz/lua/json.lua. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "encode.h"
#include "fuzz_lua.h"
#include "json_ref.h"
#include "wb_c.h"

/* text, err = fuzz.reformat(s, pretty) : wb_json_reformat of s */
static int l_reformat(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  char err[160] = "";
  char *out = wb_json_reformat(s, len, lua_toboolean(L, 2), err, sizeof err);
  if (!out) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushstring(L, out);
  wb_free(out);
  return 1;
}

/* ---- event logs: what a reader fed its sink, one line per event ------------------------- */

/* A log and the keys of the objects open in it (to refuse a repeated key as decode does). */
struct event_log {
  wb_buf b;
  int depth;
  struct logged_key {
    int depth;
    size_t n;
    char *s;
  } *keys;
  size_t nkeys, cap;
};

static void log_printf(struct event_log *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_printf(struct event_log *g, const char *fmt, ...) {
  char line[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  wb_buf_add(&g->b, line, (size_t)n);
}

static void log_bytes(struct event_log *g, char tag, const char *s, size_t n) {
  log_printf(g, "%c%zu:", tag, n);
  wb_buf_add(&g->b, s, n);
  wb_buf_addc(&g->b, '\n');
}

static void log_scalar(struct event_log *g, enum wb_json_kind kind, int64_t i, double d,
                       const char *s, size_t n) {
  switch (kind) {
  case WB_JSON_NULL: log_printf(g, "null\n"); break;
  case WB_JSON_BOOL: log_printf(g, "bool %d\n", (int)i); break;
  case WB_JSON_INT: log_printf(g, "int %lld\n", (long long)i); break;
  case WB_JSON_FLOAT: log_printf(g, "float %a\n", d); break;
  case WB_JSON_STRING: log_bytes(g, 's', s, n); break;
  }
}

/* Logs the key; 1 when the innermost open object has it already (nothing logged). */
static int log_key(struct event_log *g, const char *s, size_t n) {
  for (size_t k = g->nkeys; k-- > 0 && g->keys[k].depth == g->depth;)
    if (g->keys[k].n == n && memcmp(g->keys[k].s, s, n) == 0) return 1;
  if (g->nkeys == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    if (!(g->keys = realloc(g->keys, g->cap * sizeof *g->keys))) abort();
  }
  char *copy = malloc(n + 1);
  if (!copy) abort();
  memcpy(copy, s, n);
  g->keys[g->nkeys].depth = g->depth;
  g->keys[g->nkeys].n = n;
  g->keys[g->nkeys++].s = copy;
  log_bytes(g, 'k', s, n);
  return 0;
}

static void log_open(struct event_log *g, int object) {
  g->depth++;
  log_printf(g, "%c\n", object ? '{' : '[');
}

static void log_close(struct event_log *g, int object) {
  while (g->nkeys > 0 && g->keys[g->nkeys - 1].depth == g->depth) free(g->keys[--g->nkeys].s);
  g->depth--;
  log_printf(g, "%c\n", object ? '}' : ']');
}

/* Pushes the log (or nil and the reader's message) and frees it. */
static int log_push(lua_State *L, struct event_log *g, int failed, const char *err) {
  while (g->nkeys > 0) free(g->keys[--g->nkeys].s);
  free(g->keys);
  if (failed) {
    lua_pushnil(L);
    lua_pushstring(L, err);
  } else
    lua_pushlstring(L, g->b.data ? g->b.data : "", g->b.len);
  free(g->b.data);
  free(g);
  return failed ? 2 : 1;
}

static struct event_log *log_new(void) {
  struct event_log *g = calloc(1, sizeof *g);
  if (!g) abort();
  wb_buf_init(&g->b, NULL);
  return g;
}

/* ---- wb's reader ---- */

static void reader_scalar(void *ctx, const struct wb_json_scalar *v) {
  log_scalar(ctx, v->kind, v->i, v->d, v->s, v->n);
}
static int reader_key(void *ctx, const struct wb_json_scalar *k) { return log_key(ctx, k->s, k->n); }
static void log_open_event(void *ctx, int object) { log_open(ctx, object); }
static void log_close_event(void *ctx, int object) { log_close(ctx, object); }
static const struct wb_json_sink reader_log_sink = {reader_scalar, reader_key, log_open_event,
                                                   log_close_event, NULL};

/* log, err = fuzz.events(s) : what core/json_read.c reads in s */
static int l_events(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  struct event_log *g = log_new();
  char err[160] = "";
  void *held;
  int failed = wb_json_parse(s, len, &reader_log_sink, g, &held, err, sizeof err) != 0;
  return log_push(L, g, failed, err);
}

/* ---- the reference model ---- */

/* Logs a string token of the reference parser, its escapes decoded. */
static int ref_string(struct event_log *g, const struct ref_scalar *v, int key) {
  char *out = malloc(v->n + 1);
  if (!out) abort();
  size_t n = v->escaped ? ref_json_unescape(v->s, v->n, out) : (memcpy(out, v->s, v->n), v->n);
  int taken = 0;
  if (key)
    taken = log_key(g, out, n);
  else
    log_scalar(g, WB_JSON_STRING, 0, 0, out, n);
  free(out);
  return taken;
}

static void ref_scalar(void *ctx, const struct ref_scalar *v) {
  if (v->kind == WB_JSON_STRING)
    ref_string(ctx, v, 0);
  else
    log_scalar(ctx, v->kind, v->i, v->d, NULL, 0);
}
static int ref_key(void *ctx, const struct ref_scalar *k) { return ref_string(ctx, k, 1); }
static const struct ref_sink ref_log_sink = {ref_scalar, ref_key, log_open_event, log_close_event};

/* log, err = fuzz.ref_events(s) : what the reference parser reads in s */
static int l_ref_events(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  struct event_log *g = log_new();
  char err[160] = "";
  int failed = ref_json_parse(s, len, &ref_log_sink, g, err, sizeof err) != 0;
  return log_push(L, g, failed, err);
}

static const luaL_Reg helpers[] = {
    {"reformat", l_reformat}, {"events", l_events}, {"ref_events", l_ref_events}, {NULL, NULL}};

FUZZ_LUA_TARGET("json", helpers)
