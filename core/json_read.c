/* Reading JSON text: cJSON decodes the values (strings with their escapes, numbers), and a strict
 * walk over the text, guided by what cJSON built, supplies what cJSON does not: RFC 8259's
 * strictness (cJSON takes `01`, `1.`, any byte up to 0x20 as white space, raw control characters
 * and invalid \u escapes in strings), the position and reason of the first error, integers kept
 * apart from floats, and the length of strings holding \u0000. Calls no lua_* function, so
 * libwb.so serves it inside a host that brings its own Lua (LuaJIT's FFI). docs/design.md says
 * why the work is split this way. */
#define _POSIX_C_SOURCE 200809L
#include <cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>

#include "encode.h"

/* The most text cJSON is given at once for a container: one that does not end within it is read
 * member by member, so no tree outgrows about 40 times this (a list of small numbers: a node and
 * malloc's header for each `1,`). The fuzz build makes it small, so most containers take the
 * member-by-member way. */
#ifndef WB_JSON_WINDOW
#define WB_JSON_WINDOW ((size_t)256 << 10)
#endif

/* How far the reader moves between two calls of its sink's `consumed`. */
#define CONSUMED_STEP ((size_t)4 << 20)

struct reader {
  const char *start, *p, *end;
  int depth;
  int line;             /* of r->p: the newlines before it are all in white space */
  const char *bol;      /* where that line begins */
  const char *reported; /* the position last given to the sink's `consumed` */
  const struct wb_json_sink *sink;
  void *ctx;
  void **held; /* the cJSON tree being walked; released on every way out */
  char *err;
  size_t errlen;
  jmp_buf fail;
};

__attribute__((format(printf, 3, 4), noreturn)) static void read_fail(struct reader *r,
                                                                      const char *at,
                                                                      const char *fmt, ...) {
  char what[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (r->err && r->errlen)
    snprintf(r->err, r->errlen, "json: line %d col %d: %s", r->line, (int)(at - r->bol) + 1, what);
  longjmp(r->fail, 1);
}

__attribute__((noreturn)) static void unexpected(struct reader *r) {
  if (r->p >= r->end) read_fail(r, r->p, "unexpected end of input");
  unsigned char c = (unsigned char)*r->p;
  if (c > 0x20 && c < 0x7f) read_fail(r, r->p, "unexpected character '%c'", c);
  read_fail(r, r->p, "unexpected byte 0x%02x", c);
}

static void skip_ws(struct reader *r) {
  for (; r->p < r->end; r->p++) {
    if (*r->p == '\n')
      r->line++, r->bol = r->p + 1;
    else if (*r->p != ' ' && *r->p != '\r' && *r->p != '\t')
      return;
  }
}

/* Between members: tells the sink, every CONSUMED_STEP bytes, that the text before r->p will not
 * be read again (errors are placed from the tracked line, not by counting from the start). */
static void report_consumed(struct reader *r) {
  if (!r->sink->consumed || (size_t)(r->p - r->reported) < CONSUMED_STEP) return;
  r->reported = r->p;
  r->sink->consumed(r->ctx, (size_t)(r->p - r->start));
}

static int is_digit(const struct reader *r, const char *q) {
  return q < r->end && *q >= '0' && *q <= '9';
}

static void expect(struct reader *r, char c) {
  skip_ws(r);
  if (r->p >= r->end || *r->p != c) unexpected(r);
  r->p++;
}

/* cJSON's tree of the one value at s[0..n), held until release_tree; NULL when cJSON refuses it
 * (or the text holds more than one value, or memory ran out). */
static cJSON *parse_held(struct reader *r, const char *s, size_t n) {
  cJSON *tree = cJSON_ParseWithLengthOpts(s, n, NULL, 0);
  *r->held = tree;
  return tree;
}

static void release_tree(struct reader *r) {
  cJSON_Delete(*r->held);
  *r->held = NULL;
}

/* cJSON's value of the scalar token s[0..n) the walk has validated: it cannot refuse it, so
 * a refusal is memory running out. */
static const cJSON *token_value(struct reader *r, const char *s, size_t n) {
  const cJSON *v = parse_held(r, s, n);
  if (!v) read_fail(r, s, "out of memory");
  return v;
}

static void read_literal(struct reader *r, const char *word, struct wb_json_scalar *v) {
  for (; *word; word++, r->p++)
    if (r->p >= r->end || *r->p != *word) unexpected(r);
  r->sink->scalar(r->ctx, v);
}

/* A number: cJSON gives floats their value, integers come from the digits (exactly). */
static void read_number(struct reader *r, const cJSON *node) {
  const char *s = r->p, *q = s;
  int integral = 1;
  if (*q == '-') q++;
  if (q < r->end && *q == '0')
    q++;
  else if (is_digit(r, q))
    while (is_digit(r, q)) q++;
  else
    r->p = q, unexpected(r);
  if (q < r->end && *q == '.') {
    integral = 0;
    if (!is_digit(r, ++q)) r->p = q, unexpected(r);
    while (is_digit(r, q)) q++;
  }
  if (q < r->end && (*q == 'e' || *q == 'E')) {
    integral = 0;
    q++;
    if (q < r->end && (*q == '+' || *q == '-')) q++;
    if (!is_digit(r, q)) r->p = q, unexpected(r);
    while (is_digit(r, q)) q++;
  }
  struct wb_json_scalar v = {.kind = WB_JSON_FLOAT};
  const char *digits = s + (*s == '-');
  if (integral && q - digits <= 16) {
    uint64_t u = 0;
    for (const char *d = digits; d < q; d++) u = u * 10 + (uint64_t)(*d - '0');
    if (u <= (uint64_t)1 << 53) v.kind = WB_JSON_INT, v.i = *s == '-' ? -(int64_t)u : (int64_t)u;
  }
  r->p = q;
  if (v.kind == WB_JSON_FLOAT) v.d = (node ? node : token_value(r, s, (size_t)(q - s)))->valuedouble;
  r->sink->scalar(r->ctx, &v);
  if (!node) release_tree(r);
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

/* Checks the escape at q (a backslash); returns the position after it and counts a \u0000. */
static const char *check_escape(struct reader *r, const char *q, size_t *nuls) {
  if (q + 1 >= r->end) r->p = q + 1, unexpected(r);
  if (q[1] && strchr("\"\\/bfnrt", q[1])) return q + 2;
  if (q[1] != 'u') {
    unsigned char c = (unsigned char)q[1];
    if (c > 0x20 && c < 0x7f) read_fail(r, q, "invalid escape '\\%c'", c);
    read_fail(r, q, "invalid escape");
  }
  int cp = hex4(q + 2, r->end);
  if (cp < 0) read_fail(r, q, "invalid \\u escape");
  if (cp == 0) ++*nuls;
  if (cp >= 0xdc00 && cp <= 0xdfff) read_fail(r, q, "unpaired surrogate \\u%04x", (unsigned)cp);
  if (cp < 0xd800 || cp > 0xdbff) return q + 6;
  int lo = q + 7 < r->end && q[6] == '\\' && q[7] == 'u' ? hex4(q + 8, r->end) : -1;
  if (lo < 0xdc00 || lo > 0xdfff) read_fail(r, q, "unpaired surrogate \\u%04x", (unsigned)cp);
  return q + 12;
}

/* Checks the string token at r->p (a quote) and moves past it; returns the number of \u0000
 * escapes in it. */
static size_t scan_string(struct reader *r) {
  const char *q = r->p + 1;
  size_t nuls = 0;
  for (;;) {
    while (q < r->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
    if (q >= r->end) r->p = q, unexpected(r);
    if (*q == '"') break;
    if (*q != '\\') read_fail(r, q, "unescaped control character in string");
    q = check_escape(r, q, &nuls);
  }
  r->p = q + 1;
  return nuls;
}

/* The length of cJSON's decoding at s of a string with `nuls` \u0000 escapes: the bytes up to
 * its (nuls + 1)th NUL, the terminator. */
static size_t decoded_length(const char *s, size_t nuls) {
  const char *q = s;
  for (size_t len = strlen(q); nuls; nuls--, len = strlen(q)) q += len + 1;
  return (size_t)(q - s) + strlen(q);
}

/* Reads the string token at r->p into v: decoded by cJSON (node, or the token alone). The value
 * lives until release_tree when node is NULL. */
static void read_string(struct reader *r, const cJSON *node, int key, struct wb_json_scalar *v) {
  const char *s = r->p;
  size_t nuls = scan_string(r);
  if (!node) node = token_value(r, s, (size_t)(r->p - s));
  v->kind = WB_JSON_STRING;
  v->s = key && node->string ? node->string : node->valuestring;
  v->n = decoded_length(v->s, nuls);
}

static void read_value(struct reader *r, const cJSON *node);

/* After a member or item: a comma (returns 1) or the closing bracket (returns 0, not consumed). */
static int more(struct reader *r, char close) {
  skip_ws(r);
  if (r->p < r->end && *r->p == ',') {
    r->p++;
    return 1;
  }
  if (r->p >= r->end || *r->p != close) unexpected(r);
  return 0;
}

static void read_member(struct reader *r, const cJSON *child) {
  skip_ws(r);
  if (r->p >= r->end || *r->p != '"') unexpected(r);
  const char *at = r->p;
  struct wb_json_scalar key;
  read_string(r, child, 1, &key);
  int taken = r->sink->key(r->ctx, &key);
  if (!child) release_tree(r);
  if (taken) {
    size_t raw = (size_t)(r->p - at) - 2;
    read_fail(r, at, "duplicate key \"%.*s\"", (int)(raw > 60 ? 60 : raw), at + 1);
  }
  expect(r, ':');
  read_value(r, child);
}

/* A container at r->p. Without a node, cJSON reads it whole when it ends within WB_JSON_WINDOW bytes;
 * else (or when cJSON refuses it) its members are read one by one. */
static void read_container(struct reader *r, const cJSON *node, int object) {
  char close = object ? '}' : ']';
  if (++r->depth > WB_MAX_NESTING) read_fail(r, r->p, "nesting too deep");
  int own = !node;
  if (own) {
    size_t left = (size_t)(r->end - r->p);
    node = parse_held(r, r->p, left < WB_JSON_WINDOW ? left : WB_JSON_WINDOW);
  }
  const cJSON *child = node ? node->child : NULL;
  r->sink->open(r->ctx, object);
  r->p++;
  skip_ws(r);
  if (r->p >= r->end || *r->p != close) do {
      if (object)
        read_member(r, child);
      else
        read_value(r, child);
      child = child ? child->next : NULL;
      report_consumed(r);
    } while (more(r, close));
  r->p++;
  r->depth--;
  if (own) release_tree(r);
  r->sink->close(r->ctx, object);
}

static void read_value(struct reader *r, const cJSON *node) {
  skip_ws(r);
  if (r->p >= r->end) unexpected(r);
  struct wb_json_scalar v = {.kind = WB_JSON_NULL};
  switch (*r->p) {
  case '{': read_container(r, node, 1); return;
  case '[': read_container(r, node, 0); return;
  case '"':
    read_string(r, node, 0, &v);
    r->sink->scalar(r->ctx, &v);
    if (!node) release_tree(r);
    return;
  case 't': v.kind = WB_JSON_BOOL, v.i = 1, read_literal(r, "true", &v); return;
  case 'f': v.kind = WB_JSON_BOOL, read_literal(r, "false", &v); return;
  case 'n': read_literal(r, "null", &v); return;
  default:
    if (*r->p != '-' && !is_digit(r, r->p)) unexpected(r);
    read_number(r, node);
  }
}

int wb_json_parse(const char *text, size_t len, const struct wb_json_sink *sink, void *ctx,
                  void **held, char *err, size_t errlen) {
  struct reader r = {.start = text, .p = text, .end = text + len, .line = 1, .bol = text,
                     .reported = text, .sink = sink, .ctx = ctx, .held = held, .err = err,
                     .errlen = errlen};
  *held = NULL;
  if (setjmp(r.fail)) {
    wb_json_release(held);
    return -1;
  }
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) r.p += 3;
  read_value(&r, NULL);
  skip_ws(&r);
  if (r.p < r.end) unexpected(&r);
  return 0;
}

void wb_json_release(void **held) {
  cJSON_Delete(*held);
  *held = NULL;
}
