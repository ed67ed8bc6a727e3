/* Helpers shared by the data-format modules (encode.h): the output buffer, float formatting,
 * and the table layout rules (array or object, key order) of the encoders. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "encode.h"

static int buf_gc(lua_State *L) {
  wb_buf *b = lua_touserdata(L, 1);
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  return 0;
}

wb_buf *wb_buf_new(lua_State *L) {
  wb_buf *b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  if (luaL_newmetatable(L, "wb.buf")) {
    lua_pushcfunction(L, buf_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  wb_buf_init(b, L);
  return b;
}

void wb_buf_init(wb_buf *b, lua_State *L) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->L = L;
  b->failed = 0;
  b->fd = -1;
  b->werr = 0;
  wb_buf_reserve(b, 256);
}

#define WB_BUF_FILE_CHUNK (64 * 1024)

void wb_buf_to_fd(wb_buf *b, int fd) {
  b->fd = fd;
  if (b->cap < WB_BUF_FILE_CHUNK) wb_buf_reserve(b, WB_BUF_FILE_CHUNK - b->len);
}

int wb_buf_flush(wb_buf *b) {
  if (b->fd >= 0 && !b->werr && b->len > 0 && (b->werr = wb_write_all(b->fd, b->data, b->len)))
    b->failed = 1;
  if (b->fd >= 0) b->len = 0;
  return b->werr;
}

int wb_buf_reserve(wb_buf *b, size_t extra) {
  if (b->fd >= 0 && b->len > 0 && b->cap - b->len < extra && wb_buf_flush(b)) return -1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < extra && cap <= ((size_t)-1) / 2) cap *= 2;
  if (cap == b->cap && cap - b->len >= extra) return 0;
  char *p = cap - b->len >= extra ? realloc(b->data, cap) : NULL;
  if (!p) {
    if (b->L) luaL_error(b->L, "not enough memory");
    b->failed = 1;
    return -1;
  }
  b->data = p;
  b->cap = cap;
  return 0;
}

void wb_buf_spaces(wb_buf *b, size_t n) {
  if (b->failed || (b->cap - b->len < n && wb_buf_reserve(b, n))) return;
  memset(b->data + b->len, ' ', n);
  b->len += n;
}

void wb_buf_push_result(lua_State *L, wb_buf *b) {
  lua_pushlstring(L, b->data, b->len);
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int wb_format_float(char *buf, double d) {
  if (isnan(d)) return snprintf(buf, 32, "nan");
  if (isinf(d)) return snprintf(buf, 32, d > 0 ? "inf" : "-inf");
  int n = 0;
  for (int prec = 15; prec <= 17; prec++) {
    n = snprintf(buf, 32, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) break;
  }
  if (strspn(buf, "-0123456789") == (size_t)n) {
    memcpy(buf + n, ".0", 3);
    n += 2;
  }
  return n;
}

struct key_entry {
  int kind; /* 0 boolean, 1 number, 2 string, 3 other */
  int isint;
  lua_Integer i;
  double d;
  const char *s;
  size_t len;
  lua_Integer pos;
};

static int key_cmp(const void *pa, const void *pb) {
  const struct key_entry *a = pa, *b = pb;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  int c = 0;
  if (a->kind == 0 || (a->kind == 1 && a->isint && b->isint))
    c = (a->i > b->i) - (a->i < b->i);
  else if (a->kind == 1)
    c = (a->d > b->d) - (a->d < b->d);
  else if (a->kind == 2) {
    size_t n = a->len < b->len ? a->len : b->len;
    c = memcmp(a->s, b->s, n);
    if (c == 0) c = (a->len > b->len) - (a->len < b->len);
  }
  return c ? c : (a->pos > b->pos) - (a->pos < b->pos);
}

void wb_sorted_keys(lua_State *L, int t) {
  t = lua_absindex(L, t);
  lua_Integer n = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    n++;
  }
  struct key_entry *e = lua_newuserdatauv(L, (size_t)n * sizeof *e + 1, 0);
  lua_createtable(L, (int)n, 0);
  int list = lua_gettop(L);
  lua_Integer i = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    struct key_entry *k = &e[i];
    memset(k, 0, sizeof *k);
    k->pos = ++i;
    switch (lua_type(L, -1)) {
    case LUA_TBOOLEAN: k->kind = 0, k->i = lua_toboolean(L, -1); break;
    case LUA_TNUMBER:
      k->kind = 1;
      k->isint = lua_isinteger(L, -1);
      k->i = lua_tointeger(L, -1);
      k->d = lua_tonumber(L, -1);
      break;
    case LUA_TSTRING: k->kind = 2, k->s = lua_tolstring(L, -1, &k->len); break;
    default: k->kind = 3; break;
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, list, i);
  }
  qsort(e, (size_t)i, sizeof *e, key_cmp);
  lua_createtable(L, (int)i, 0);
  for (lua_Integer j = 0; j < i; j++) {
    lua_rawgeti(L, list, e[j].pos);
    lua_rawseti(L, -2, j + 1);
  }
  lua_replace(L, list - 1);
  lua_pop(L, 1);
}

lua_Integer wb_table_layout(lua_State *L, int t) {
  t = lua_absindex(L, t);
  if (wb_has_metatable(L, t, "wb.array")) return (lua_Integer)lua_rawlen(L, t);
  if (wb_has_metatable(L, t, "wb.ordered")) {
    wb_ordered_keys(L, t);
    return -1;
  }
  lua_Integer count = 0, max = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    lua_Integer k;
    if (!lua_isinteger(L, -1) || (k = lua_tointeger(L, -1)) < 1) {
      lua_pop(L, 1);
      count = -1;
      break;
    }
    count++;
    if (k > max) max = k;
  }
  if (count >= 1 && count == max) return count;
  wb_sorted_keys(L, t);
  return -1;
}

void wb_enter_table(lua_State *L, int idx, const void **path, int *depth, const char *format) {
  const void *self = lua_topointer(L, idx);
  for (int i = 0; i < *depth; i++)
    if (path[i] == self) luaL_error(L, "%s: cycle", format);
  if (*depth >= WB_MAX_NESTING) luaL_error(L, "%s: nesting too deep", format);
  if (!lua_checkstack(L, 12)) luaL_error(L, "stack overflow (%s: nesting too deep)", format);
  path[(*depth)++] = self;
}
