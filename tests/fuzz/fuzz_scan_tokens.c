/* The log scanner's number-with-unit parser (wb_scan_number, core/scan_match.c) against an independent
 * reading of the grammar in core/scan.h converted by strtod, and its key=value tokenizer
 * (wb.scan.tokens, wb.scan.fields, wb.scan.number in core/scan.c; checks in
 * tests/fuzz/lua/scan_tokens.lua). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_lua.h"
#include "scan.h"

#define MAX_DIGITS 64 /* wb_scan_number refuses numbers of more digits (the scanner's limit) */

static int digit(char c) { return c >= '0' && c <= '9'; }

/* [+-]digits[.digits][e[+-]digits] then a unit, or true/false: the kind, and in *out the value
 * strtod gives for the decimal the text spells (scaled to seconds for a time unit); 0 when the
 * text is not a number. Digits may stand on one side of the point only (".5", "5."). */
static int oracle(const char *s, size_t n, double *out) {
  if ((n == 4 && memcmp(s, "true", 4) == 0) || (n == 5 && memcmp(s, "false", 5) == 0)) {
    *out = n == 4;
    return SCAN_BOOL;
  }
  char dec[MAX_DIGITS + 48];
  size_t i = 0, k = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) dec[k++] = s[i++];
  int ndigits = 0, nfrac = 0;
  for (; i < n && digit(s[i]); i++, ndigits++)
    if (ndigits < MAX_DIGITS) dec[k++] = s[i];
  if (i < n && s[i] == '.') {
    for (i++; i < n && digit(s[i]); i++, ndigits++, nfrac++)
      if (ndigits < MAX_DIGITS) dec[k++] = s[i];
  }
  if (ndigits == 0 || ndigits > MAX_DIGITS) return 0;
  long ex = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    int neg = j < n && s[j] == '-';
    if (j < n && (s[j] == '-' || s[j] == '+')) j++;
    if (j < n && digit(s[j])) {
      for (; j < n && digit(s[j]); j++)
        if (ex < 10000000) ex = ex * 10 + (s[j] - '0');
      if (neg) ex = -ex;
      i = j;
    }
  }
  const char *u = s + i;
  size_t ulen = n - i;
  int scale = -1, kind = SCAN_TIME;
  if (ulen == 0) scale = 0, kind = SCAN_COUNT;
  else if (ulen == 1 && u[0] == 's') scale = 0;
  else if (ulen == 2 && u[1] == 's' && u[0] == 'm') scale = 3;
  else if (ulen == 2 && u[1] == 's' && (u[0] == 'u')) scale = 6;
  else if (ulen == 2 && u[1] == 's' && u[0] == 'n') scale = 9;
  else if (ulen == 3 && (memcmp(u, "\xc2\xb5s", 3) == 0 || memcmp(u, "\xce\xbcs", 3) == 0)) scale = 6;
  if (scale < 0) return 0;
  snprintf(dec + k, sizeof dec - k, "e%ld", ex - nfrac - scale);
  *out = strtod(dec, NULL);
  return kind;
}

/* kind, x = fuzz.number(s) : wb_scan_number of s (kind 0 when not a number); Lua strings end in NUL */
static int l_number(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  double x = 0;
  lua_pushinteger(L, wb_scan_number(s, s + n, &x));
  lua_pushnumber(L, x);
  return 2;
}

static const luaL_Reg helpers[] = {{"number", l_number}, {NULL, NULL}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1); /* wb_scan_number reads the byte at end: a NUL here */
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  double got = 0, want = 0;
  int kind = wb_scan_number(s, s + size, &got);
  int expected = oracle(s, size, &want);
  if (kind != expected || (kind && got != want)) {
    fprintf(stderr, "wb_scan_number(\"%.*s\") = kind %d, %.17g; expected kind %d, %.17g\n", (int)size, s,
            kind, got, expected, want);
    abort();
  }
  free(s);
  fuzz_lua_call(fuzz_lua_state("scan_tokens", helpers), data, size);
  return 0;
}
