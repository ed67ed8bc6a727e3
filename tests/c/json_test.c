/* The wb_json_reformat C API: canonical compact and pretty output, errors, length handling. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wb_c.h"

/* The fixture's text without its final newline (malloc'd), or NULL. */
static char *fixture(const char *name) {
  const char *root = getenv("WB_ROOT");
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/fixtures/json/%s", root ? root : ".", name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = calloc(1, 65536);
  size_t n = buf ? fread(buf, 1, 65535, f) : 0;
  fclose(f);
  if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = 0;
  return buf;
}

static int reformats_to(const char *in, int pretty, const char *want) {
  char err[128] = "";
  char *out = wb_json_reformat(in, strlen(in), pretty, err, sizeof err);
  int ok = out && strcmp(out, want) == 0 && err[0] == 0;
  if (!ok) printf("    got %s (err '%s'), want %s\n", out ? out : "NULL", err, want);
  wb_free(out);
  return ok;
}

static int fails_with(const char *in, size_t len, const char *want) {
  char err[128] = "";
  char *out = wb_json_reformat(in, len, 0, err, sizeof err);
  int ok = out == NULL && strcmp(err, want) == 0;
  if (!ok) printf("    got '%s', want '%s'\n", err, want);
  wb_free(out);
  return ok;
}

static void test_fixture(void) {
  int ok = 1;
  char *src = fixture("small.json"), *compact = fixture("small.compact.json"),
       *pretty = fixture("small.pretty.json");
  CHECK(src && compact && pretty);
  if (src && compact && pretty) {
    CHECK(reformats_to(src, 0, compact));
    CHECK(reformats_to(src, 1, pretty));
    CHECK(reformats_to(pretty, 0, compact));
    CHECK(reformats_to(compact, 1, pretty));
  }
  free(src);
  free(compact);
  free(pretty);
  report("fixture: compact and pretty, source key order kept", ok);
}

static void test_canonical_scalars(void) {
  int ok = 1;
  CHECK(reformats_to(" [1.0, 1e2, 10, 0.1, -0, 9007199254740993, true, null] ", 0,
                     "[1.0,100.0,10,0.1,0,9007199254740992.0,true,null]"));
  CHECK(reformats_to("\"\\u00e9\\t\\/\\u0001\"", 0, "\"\xc3\xa9\\t/\\u0001\""));
  CHECK(reformats_to("{}", 1, "{}"));
  CHECK(reformats_to("[[], {}]", 1, "[\n  [],\n  {}\n]"));
  CHECK(reformats_to("{\"b\": 1, \"a\": {\"d\": 2, \"c\": 3}}", 0, "{\"b\":1,\"a\":{\"d\":2,\"c\":3}}"));
  report("canonical numbers, strings and empty containers", ok);
}

static void test_errors(void) {
  int ok = 1;
  const char *bad = "[1,\n 2,,]";
  CHECK(fails_with(bad, strlen(bad), "json: line 2 col 4: unexpected character ','"));
  CHECK(fails_with("", 0, "json: line 1 col 1: unexpected end of input"));
  CHECK(fails_with("{\"a\" 1}", 7, "json: line 1 col 6: unexpected character '1'"));
  /* a repeated key is refused as decoding refuses it, also spelt with an escape; the same key in
   * two objects, or after its object closed, is not repeated */
  CHECK(fails_with("{\"a\":1,\"a\":2}", 13, "json: line 1 col 8: duplicate key \"a\""));
  CHECK(fails_with("{\"a\":1,\"\\u0061\":2}", 18, "json: line 1 col 8: duplicate key \"\\u0061\""));
  CHECK(reformats_to("[{\"a\":1},{\"a\":2},{\"o\":{\"a\":1},\"a\":3}]", 0,
                     "[{\"a\":1},{\"a\":2},{\"o\":{\"a\":1},\"a\":3}]"));
  CHECK(reformats_to("{\"\":1,\"x\":{\"\":2}}", 0, "{\"\":1,\"x\":{\"\":2}}"));
  char deep[3000];
  memset(deep, '[', sizeof deep);
  CHECK(fails_with(deep, sizeof deep, "json: line 1 col 1001: nesting too deep"));
  char small[12];
  CHECK(wb_json_reformat("[", 1, 0, small, sizeof small) == NULL);
  CHECK(strcmp(small, "json: line ") == 0);
  CHECK(wb_json_reformat("[", 1, 0, NULL, 0) == NULL);
  report("errors: message, truncation, no buffer", ok);
}

static void test_length(void) {
  int ok = 1;
  char err[128] = "";
  char *out = wb_json_reformat("[1,2]garbage", 5, 0, err, sizeof err);
  CHECK(out && strcmp(out, "[1,2]") == 0);
  wb_free(out);
  static const char with_nul[] = "[\"a\\u0000b\"]";
  CHECK(reformats_to(with_nul, 0, "[\"a\\u0000b\"]"));
  CHECK(fails_with("[1]\0[2]", 7, "json: line 1 col 4: unexpected byte 0x00"));
  report("only len bytes are read; NUL handling", ok);
}

static void test_garbage(void) {
  int ok = 1;
  static const char alphabet[] = "{}[]:,\"\\u0123456789abcdefnulltrue-+.eE \n\t\x01\xff";
  uint32_t seed = 12345;
  char text[64], err[128];
  int parsed = 0;
  for (int i = 0; i < 20000; i++) {
    size_t n = (size_t)(i % (int)sizeof text);
    for (size_t k = 0; k < n; k++) {
      seed = seed * 1103515245u + 12345u;
      text[k] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
    }
    char *out = wb_json_reformat(text, n, i & 1, err, sizeof err);
    if (out)
      parsed++;
    else
      CHECK(strncmp(err, "json: line ", 11) == 0);
    wb_free(out);
  }
  CHECK(parsed > 0);
  report("random inputs: a result or a positioned error", ok);
}

static void test_repeated(void) {
  int ok = 1;
  for (int i = 0; i < 200; i++) {
    char *out = wb_json_reformat("{\"k\": [1, 2, 3]}", 16, i & 1, NULL, 0);
    CHECK(out != NULL);
    wb_free(out);
  }
  report("repeated calls", ok);
}

int main(void) {
  test_fixture();
  test_canonical_scalars();
  test_errors();
  test_length();
  test_garbage();
  test_repeated();
  return summary();
}
