/* JSON text without Lua: the validating parser (events to a sink), the canonical writers, and
 * the C API wb_json_reformat. Calls no lua_* function, so libwb.so can serve it inside a host
 * that brings its own Lua (LuaJIT's FFI). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "encode.h"
#include "wb_c.h"

/* ---- parsing -------------------------------------------------------------------------- */

struct parser {
  const char *start, *p, *end;
  int depth;
  const struct wb_json_sink *sink;
  void *ctx;
  char *err;
  size_t errlen;
  jmp_buf fail;
};

__attribute__((format(printf, 3, 4), noreturn)) static void parse_fail(struct parser *ps,
                                                                       const char *at,
                                                                       const char *fmt, ...) {
  char what[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int line = 1;
  const char *bol = ps->start;
  for (const char *q = ps->start; q < at; q++)
    if (*q == '\n') line++, bol = q + 1;
  if (ps->err && ps->errlen)
    snprintf(ps->err, ps->errlen, "json: line %d col %d: %s", line, (int)(at - bol) + 1, what);
  longjmp(ps->fail, 1);
}

__attribute__((noreturn)) static void unexpected(struct parser *ps) {
  if (ps->p >= ps->end) parse_fail(ps, ps->p, "unexpected end of input");
  unsigned char c = (unsigned char)*ps->p;
  if (c > 0x20 && c < 0x7f) parse_fail(ps, ps->p, "unexpected character '%c'", c);
  parse_fail(ps, ps->p, "unexpected byte 0x%02x", c);
}

static void skip_ws(struct parser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
    ps->p++;
}

static int is_digit(const struct parser *ps, const char *q) {
  return q < ps->end && *q >= '0' && *q <= '9';
}

static void expect(struct parser *ps, char c) {
  skip_ws(ps);
  if (ps->p >= ps->end || *ps->p != c) unexpected(ps);
  ps->p++;
}

static void parse_literal(struct parser *ps, const char *word, struct wb_json_scalar *v) {
  for (; *word; word++, ps->p++)
    if (ps->p >= ps->end || *ps->p != *word) unexpected(ps);
  ps->sink->scalar(ps->ctx, v);
}

static void parse_number(struct parser *ps) {
  const char *s = ps->p, *q = s;
  int integral = 1;
  if (*q == '-') q++;
  if (q < ps->end && *q == '0')
    q++;
  else if (is_digit(ps, q))
    while (is_digit(ps, q)) q++;
  else
    ps->p = q, unexpected(ps);
  if (q < ps->end && *q == '.') {
    integral = 0;
    if (!is_digit(ps, ++q)) ps->p = q, unexpected(ps);
    while (is_digit(ps, q)) q++;
  }
  if (q < ps->end && (*q == 'e' || *q == 'E')) {
    integral = 0;
    q++;
    if (q < ps->end && (*q == '+' || *q == '-')) q++;
    if (!is_digit(ps, q)) ps->p = q, unexpected(ps);
    while (is_digit(ps, q)) q++;
  }
  struct wb_json_scalar v = {.kind = WB_JSON_FLOAT};
  const char *digits = s + (*s == '-');
  uint64_t u = 0;
  if (integral && q - digits <= 16) {
    for (const char *d = digits; d < q; d++) u = u * 10 + (uint64_t)(*d - '0');
    if (u <= (uint64_t)1 << 53) v.kind = WB_JSON_INT, v.i = *s == '-' ? -(int64_t)u : (int64_t)u;
  }
  if (v.kind == WB_JSON_FLOAT) {
    char small[64], *copy = small;
    size_t len = (size_t)(q - s);
    if (len >= sizeof small && !(copy = malloc(len + 1))) parse_fail(ps, s, "out of memory");
    memcpy(copy, s, len);
    copy[len] = 0;
    v.d = strtod(copy, NULL);
    if (copy != small) free(copy);
  }
  ps->p = q;
  ps->sink->scalar(ps->ctx, &v);
}

static int hex4(const char *q, const char *end) {
  int v = 0;
  for (int i = 0; i < 4; i++, q++) {
    if (q >= end) return -1;
    char c = *q;
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* Checks the escape at q (a backslash); returns the position after it. */
static const char *check_escape(struct parser *ps, const char *q) {
  if (q + 1 >= ps->end) ps->p = q + 1, unexpected(ps);
  if (q[1] && strchr("\"\\/bfnrt", q[1])) return q + 2;
  if (q[1] != 'u') {
    unsigned char c = (unsigned char)q[1];
    if (c > 0x20 && c < 0x7f) parse_fail(ps, q, "invalid escape '\\%c'", c);
    parse_fail(ps, q, "invalid escape");
  }
  int cp = hex4(q + 2, ps->end);
  if (cp < 0) parse_fail(ps, q, "invalid \\u escape");
  if (cp >= 0xdc00 && cp <= 0xdfff) parse_fail(ps, q, "unpaired surrogate \\u%04x", (unsigned)cp);
  if (cp < 0xd800 || cp > 0xdbff) return q + 6;
  int lo = q + 7 < ps->end && q[6] == '\\' && q[7] == 'u' ? hex4(q + 8, ps->end) : -1;
  if (lo < 0xdc00 || lo > 0xdfff) parse_fail(ps, q, "unpaired surrogate \\u%04x", (unsigned)cp);
  return q + 12;
}

/* Scans the string token at ps->p (a quote) into v. */
static void scan_string(struct parser *ps, struct wb_json_scalar *v) {
  const char *q = ps->p + 1;
  v->kind = WB_JSON_STRING;
  v->escaped = 0;
  v->s = q;
  for (;;) {
    while (q < ps->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
    if (q >= ps->end) ps->p = q, unexpected(ps);
    if (*q == '"') break;
    if (*q != '\\') parse_fail(ps, q, "unescaped control character in string");
    v->escaped = 1;
    q = check_escape(ps, q);
  }
  v->n = (size_t)(q - v->s);
  ps->p = q + 1;
}

static void parse_value(struct parser *ps);

static int open_container(struct parser *ps, int object) {
  if (++ps->depth > WB_MAX_NESTING) parse_fail(ps, ps->p, "nesting too deep");
  ps->sink->open(ps->ctx, object);
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) return 0;
  return 1;
}

static void close_container(struct parser *ps, int object) {
  ps->p++;
  ps->depth--;
  ps->sink->close(ps->ctx, object);
}

/* After a member or item: a comma (returns 1) or the closing bracket (returns 0, not consumed). */
static int more(struct parser *ps, char close) {
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == ',') {
    ps->p++;
    return 1;
  }
  if (ps->p >= ps->end || *ps->p != close) unexpected(ps);
  return 0;
}

static void parse_array(struct parser *ps) {
  if (open_container(ps, 0)) do
      parse_value(ps);
    while (more(ps, ']'));
  close_container(ps, 0);
}

static void parse_object(struct parser *ps) {
  if (open_container(ps, 1)) do {
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != '"') unexpected(ps);
      struct wb_json_scalar key;
      scan_string(ps, &key);
      if (ps->sink->key(ps->ctx, &key))
        parse_fail(ps, key.s - 1, "duplicate key \"%.*s\"", (int)(key.n > 60 ? 60 : key.n), key.s);
      expect(ps, ':');
      parse_value(ps);
    } while (more(ps, '}'));
  close_container(ps, 1);
}

static void parse_value(struct parser *ps) {
  skip_ws(ps);
  if (ps->p >= ps->end) unexpected(ps);
  struct wb_json_scalar v = {.kind = WB_JSON_NULL};
  switch (*ps->p) {
  case '{': parse_object(ps); return;
  case '[': parse_array(ps); return;
  case '"':
    scan_string(ps, &v);
    ps->sink->scalar(ps->ctx, &v);
    return;
  case 't': v.kind = WB_JSON_BOOL, v.i = 1, parse_literal(ps, "true", &v); return;
  case 'f': v.kind = WB_JSON_BOOL, parse_literal(ps, "false", &v); return;
  case 'n': parse_literal(ps, "null", &v); return;
  default:
    if (*ps->p != '-' && !is_digit(ps, ps->p)) unexpected(ps);
    parse_number(ps);
  }
}

int wb_json_parse(const char *text, size_t len, const struct wb_json_sink *sink, void *ctx,
                  char *err, size_t errlen) {
  struct parser ps = {.start = text, .p = text, .end = text + len, .sink = sink, .ctx = ctx,
                      .err = err, .errlen = errlen};
  if (setjmp(ps.fail)) return -1;
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) ps.p += 3;
  parse_value(&ps);
  skip_ws(&ps);
  if (ps.p < ps.end) unexpected(&ps);
  return 0;
}

static size_t put_utf8(char *out, unsigned cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | cp >> 12);
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | cp >> 18);
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

size_t wb_json_unescape(const char *s, size_t n, char *out) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  const char *end = s + n;
  size_t len = 0;
  while (s < end) {
    if (*s != '\\' || s + 1 >= end) {
      out[len++] = *s++;
      continue;
    }
    const char *m = s[1] ? strchr(from, s[1]) : NULL;
    int cp = m ? -1 : hex4(s + 2, end);
    if (m) {
      out[len++] = to[m - from];
      s += 2;
    } else if (cp >= 0xd800 && cp <= 0xdbff && s + 12 <= end) {
      int lo = hex4(s + 8, end);
      len += put_utf8(out + len, 0x10000 + (((unsigned)cp - 0xd800) << 10) + ((unsigned)lo - 0xdc00));
      s += 12;
    } else if (cp >= 0) {
      len += put_utf8(out + len, (unsigned)cp);
      s += 6;
    } else
      out[len++] = *s++;
  }
  return len;
}

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
 * unescaped keys in an arena, in the order they came (an object's own at the end, dropped when
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
  char *scratch;                   /* unescaped strings */
  size_t scratch_cap;
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

static void write_token_string(struct writer *w, const struct wb_json_scalar *v) {
  if (!v->escaped) {
    wb_json_write_string(&w->b, v->s, v->n);
    return;
  }
  if (v->n > w->scratch_cap) {
    char *p = realloc(w->scratch, v->n);
    if (!p) {
      w->b.failed = 1;
      return;
    }
    w->scratch = p;
    w->scratch_cap = v->n;
  }
  wb_json_write_string(&w->b, w->scratch, wb_json_unescape(v->s, v->n, w->scratch));
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
  case WB_JSON_STRING: write_token_string(w, v); break;
  }
}

/* Writes the key; 1 (the parse fails) when its object has it already, as decoding refuses it. */
static int writer_key(void *ctx, const struct wb_json_scalar *k) {
  struct writer *w = ctx;
  const char *s = k->s;
  size_t n = k->n;
  if (k->escaped) {
    if (n > w->scratch_cap) {
      char *p = realloc(w->scratch, n);
      if (!p) {
        w->b.failed = 1;
        return 0;
      }
      w->scratch = p, w->scratch_cap = n;
    }
    n = wb_json_unescape(k->s, k->n, w->scratch);
    s = w->scratch;
  }
  int taken = key_add(&w->keys, w->depth, s, n);
  if (taken < 0) w->b.failed = 1;
  if (taken > 0) return 1;
  write_separator(w);
  write_token_string(w, k);
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
                                                writer_close};

WB_API char *wb_json_reformat(const char *text, size_t len, int32_t pretty, char *err,
                              size_t errlen) {
  struct writer *w = calloc(1, sizeof *w);
  char *out = NULL;
  int failed = !w;
  if (w) {
    w->pretty = pretty != 0;
    wb_buf_init(&w->b, NULL);
    if (wb_json_parse(text, len, &writer_sink, w, err, errlen) != 0) {
      free(w->b.data);
      free(w->scratch);
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
    free(w->scratch);
    keys_free(&w->keys);
    free(w);
  }
  if (failed && err && errlen) snprintf(err, errlen, "json: out of memory");
  return out;
}
