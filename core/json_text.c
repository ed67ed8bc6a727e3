/* JSON text without Lua: the canonical writers, and the C API wb_json_reformat (read by
 * core/json_read.c). Calls no lua_* function, so libwb.so can serve it inside a host that brings
 * its own Lua (LuaJIT's FFI). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "encode.h"
#include "wb_c.h"

/* ---- writing -------------------------------------------------------------------------- */

void wb_json_write_string(wb_buf *b, const char *s, size_t n) {
  static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
  const char *end = s + n, *run = s;
  wb_buf_addc(b, '"');
  for (const char *q = s; q < end; q++) {
    unsigned char c = (unsigned char)*q;
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    wb_buf_add(b, run, (size_t)(q - run));
    run = q + 1;
    const char *m = c ? strchr(from, c) : NULL;
    char esc[8];
    int k = m ? snprintf(esc, sizeof esc, "\\%c", to[m - from]) : snprintf(esc, sizeof esc, "\\u%04x", c);
    wb_buf_add(b, esc, (size_t)k);
  }
  wb_buf_add(b, run, (size_t)(end - run));
  wb_buf_addc(b, '"');
}

void wb_json_write_int(wb_buf *b, int64_t i, int quoted) {
  char num[32];
  int n = snprintf(num, sizeof num, quoted ? "\"%lld\"" : "%lld", (long long)i);
  wb_buf_add(b, num, (size_t)n);
}

void wb_json_write_float(wb_buf *b, double d, int quoted) {
  char num[32];
  if (!quoted && !isfinite(d)) {
    wb_buf_lit(b, "null");
    return;
  }
  int n = wb_format_float(num, d);
  if (quoted) wb_buf_addc(b, '"');
  wb_buf_add(b, num, (size_t)n);
  if (quoted) wb_buf_addc(b, '"');
}

void wb_json_newline(wb_buf *b, int pretty, int indent, int depth) {
  if (!pretty) return;
  wb_buf_addc(b, '\n');
  wb_buf_spaces(b, (size_t)depth * (size_t)indent);
}

/* ---- wb_json_reformat ----------------------------------------------------------------- */

/* The keys of the objects open in a reformat, to refuse a repeated one as decoding does: the
 * decoded keys in an arena, in the order they came (an object's own at the end, dropped when
 * it closes), and an open-addressing table of their entries by (object, key). */
struct key_entry {
  uint64_t object, hash;
  size_t off, len; /* in the arena */
};

struct key_set {
  char *arena;
  size_t used, cap;
  struct key_entry *entries; /* in arrival order */
  size_t n, ecap;
  size_t *slots; /* 1 + entry index; 0 empty; SIZE_MAX a removed one */
  size_t nslots;
  size_t mark[WB_MAX_NESTING + 1]; /* entries before each open object's first */
  uint64_t object[WB_MAX_NESTING + 1], objects;
};

/* A sink that writes the canonical text of what it is fed. */
struct writer {
  wb_buf b;
  int pretty, depth, after_key;
  int64_t count[WB_MAX_NESTING + 1]; /* members written at each depth */
  struct key_set keys;
};

static uint64_t key_hash(uint64_t object, const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull ^ object;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static int slots_grow(struct key_set *k) {
  size_t n = k->nslots ? k->nslots * 2 : 64;
  size_t *t = calloc(n, sizeof *t);
  if (!t) return -1;
  for (size_t i = 0; i < k->nslots; i++) {
    size_t e = k->slots[i];
    if (e == 0 || e == SIZE_MAX) continue;
    size_t j = k->entries[e - 1].hash & (n - 1);
    while (t[j]) j = (j + 1) & (n - 1);
    t[j] = e;
  }
  free(k->slots);
  k->slots = t, k->nslots = n;
  return 0;
}

/* Adds key s[0..n) to the innermost open object; 1 when it has it already, -1 out of memory. */
static int key_add(struct key_set *k, int depth, const char *s, size_t n) {
  uint64_t obj = k->object[depth], h = key_hash(obj, s, n);
  if ((k->n + 1) * 2 > k->nslots && slots_grow(k)) return -1;
  size_t j = h & (k->nslots - 1), free_slot = SIZE_MAX;
  for (; k->slots[j]; j = (j + 1) & (k->nslots - 1)) {
    size_t e = k->slots[j];
    if (e == SIZE_MAX) {
      if (free_slot == SIZE_MAX) free_slot = j;
      continue;
    }
    const struct key_entry *x = &k->entries[e - 1];
    if (x->hash == h && x->object == obj && x->len == n && memcmp(k->arena + x->off, s, n) == 0) return 1;
  }
  if (free_slot == SIZE_MAX) free_slot = j;
  if (!k->arena || k->used + n > k->cap) { /* allocated even for "" (no arithmetic on NULL) */
    size_t cap = k->cap ? k->cap : 4096;
    while (cap < k->used + n) cap *= 2;
    char *a = realloc(k->arena, cap);
    if (!a) return -1;
    k->arena = a, k->cap = cap;
  }
  if (k->n == k->ecap) {
    size_t cap = k->ecap ? k->ecap * 2 : 256;
    struct key_entry *e = realloc(k->entries, cap * sizeof *e);
    if (!e) return -1;
    k->entries = e, k->ecap = cap;
  }
  memcpy(k->arena + k->used, s, n);
  k->entries[k->n] = (struct key_entry){obj, h, k->used, n};
  k->used += n;
  k->slots[free_slot] = ++k->n;
  return 0;
}

static void keys_free(struct key_set *k) {
  free(k->arena);
  free(k->entries);
  free(k->slots);
}

/* Drops the keys of the object closing at depth. */
static void keys_close(struct key_set *k, int depth) {
  while (k->n > k->mark[depth]) {
    const struct key_entry *x = &k->entries[k->n - 1];
    size_t j = x->hash & (k->nslots - 1);
    while (k->slots[j] != k->n) j = (j + 1) & (k->nslots - 1);
    k->slots[j] = SIZE_MAX;
    k->used = x->off;
    k->n--;
  }
}

static void write_separator(struct writer *w) {
  if (w->after_key) {
    w->after_key = 0;
    return;
  }
  if (w->depth == 0) return;
  if (w->count[w->depth]++) wb_buf_addc(&w->b, ',');
  wb_json_newline(&w->b, w->pretty, 2, w->depth);
}

static void writer_scalar(void *ctx, const struct wb_json_scalar *v) {
  struct writer *w = ctx;
  write_separator(w);
  switch (v->kind) {
  case WB_JSON_NULL: wb_buf_lit(&w->b, "null"); break;
  case WB_JSON_BOOL:
    if (v->i)
      wb_buf_lit(&w->b, "true");
    else
      wb_buf_lit(&w->b, "false");
    break;
  case WB_JSON_INT: wb_json_write_int(&w->b, v->i, 0); break;
  case WB_JSON_FLOAT: wb_json_write_float(&w->b, v->d, 0); break;
  case WB_JSON_STRING: wb_json_write_string(&w->b, v->s, v->n); break;
  }
}

/* Writes the key; 1 (the parse fails) when its object has it already, as decoding refuses it. */
static int writer_key(void *ctx, const struct wb_json_scalar *k) {
  struct writer *w = ctx;
  int taken = key_add(&w->keys, w->depth, k->s, k->n);
  if (taken < 0) w->b.failed = 1;
  if (taken > 0) return 1;
  write_separator(w);
  wb_json_write_string(&w->b, k->s, k->n);
  wb_buf_addc(&w->b, ':');
  if (w->pretty) wb_buf_addc(&w->b, ' ');
  w->after_key = 1;
  return 0;
}

static void writer_open(void *ctx, int object) {
  struct writer *w = ctx;
  write_separator(w);
  wb_buf_addc(&w->b, object ? '{' : '[');
  w->count[++w->depth] = 0;
  if (object) {
    w->keys.mark[w->depth] = w->keys.n;
    w->keys.object[w->depth] = ++w->keys.objects;
  }
}

static void writer_close(void *ctx, int object) {
  struct writer *w = ctx;
  if (object) keys_close(&w->keys, w->depth);
  if (w->count[w->depth--]) wb_json_newline(&w->b, w->pretty, 2, w->depth);
  wb_buf_addc(&w->b, object ? '}' : ']');
}

static const struct wb_json_sink writer_sink = {writer_scalar, writer_key, writer_open,
                                                writer_close, NULL};

WB_API char *wb_json_reformat(const char *text, size_t len, int32_t pretty, char *err,
                              size_t errlen) {
  struct writer *w = calloc(1, sizeof *w);
  char *out = NULL;
  int failed = !w;
  if (w) {
    w->pretty = pretty != 0;
    wb_buf_init(&w->b, NULL);
    void *held;
    if (wb_json_parse(text, len, &writer_sink, w, &held, err, errlen) != 0) {
      free(w->b.data);
      keys_free(&w->keys);
      free(w);
      return NULL;
    }
    wb_buf_addc(&w->b, '\0');
    failed = w->b.failed;
    if (failed)
      free(w->b.data);
    else
      out = w->b.data;
    keys_free(&w->keys);
    free(w);
  }
  if (failed && err && errlen) snprintf(err, errlen, "json: out of memory");
  return out;
}
