/* The reference model of JSON reading (tests/fuzz/json_ref.c), for fuzz_json only. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "encode.h"

/* A scalar token. BOOL and INT use i, FLOAT d. STRING: s[0..n) is the text between the quotes,
 * already validated; when `escaped` is set it still holds escapes (see ref_json_unescape). */
struct ref_scalar {
  enum wb_json_kind kind;
  int escaped;
  int64_t i;
  double d;
  const char *s;
  size_t n;
};

/* The parser's events, in document order; a key precedes each member value. */
struct ref_sink {
  void (*scalar)(void *ctx, const struct ref_scalar *v);
  /* returns 0, or nonzero when the object already has the key (the parse fails there) */
  int (*key)(void *ctx, const struct ref_scalar *k);
  void (*open)(void *ctx, int object);
  void (*close)(void *ctx, int object);
};

/* Parses text[0..len) as wb did before cJSON and feeds the sink. Returns 0, or -1 with err set to
 * "json: line L col C: what". */
int ref_json_parse(const char *text, size_t len, const struct ref_sink *sink, void *ctx,
                   char *err, size_t errlen);

/* Decodes the escapes of a validated string token into out (room for n bytes suffices);
 * returns the decoded length. */
size_t ref_json_unescape(const char *s, size_t n, char *out);
