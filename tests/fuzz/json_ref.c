/* The reference model of JSON reading for fuzz_json: the parser wb had before it read JSON
 * through cJSON (core/json_read.c), kept unchanged but for its names. Test-only: never linked into
 * wb. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "json_ref.h"

struct parser {
  const char *start, *p, *end;
  int depth;
  const struct ref_sink *sink;
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

static void parse_literal(struct parser *ps, const char *word, struct ref_scalar *v) {
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
  struct ref_scalar v = {.kind = WB_JSON_FLOAT};
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
static void scan_string(struct parser *ps, struct ref_scalar *v) {
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
      struct ref_scalar key;
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
  struct ref_scalar v = {.kind = WB_JSON_NULL};
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

int ref_json_parse(const char *text, size_t len, const struct ref_sink *sink, void *ctx,
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

size_t ref_json_unescape(const char *s, size_t n, char *out) {
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

