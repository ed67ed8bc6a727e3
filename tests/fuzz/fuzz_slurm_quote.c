/* Batch-script quoting (lua/wb/slurm.lua: shell_quote, directive_quote, render; lua/wb/util.lua:
 * shell_quote, shell_join, split_words) read back by independent readers written here: the POSIX
 * shell's word rules and sbatch's #SBATCH argument rules. Checks in tests/fuzz/lua/slurm_quote.lua. */
#include <string.h>

#include "fuzz_lua.h"

/* The one command substitution slurm.shell_quote writes: a carriage return (a script must hold
 * none, or sbatch takes it for DOS line breaks). */
#define PRINTF_CR "$(printf '\\r')"

/* Characters the shell treats specially when unquoted; a quoted word must never leave one bare. */
static int sh_special(char c, int at_word_start) {
  if (strchr("|&;<>()$`*?[\"'\\", c)) return 1;
  return at_word_start && (c == '#' || c == '~');
}

/* -- words, next = fuzz.sh_words(text [, init]) : the words of the simple command starting at
 * text[init] as /bin/sh reads them (blanks: space and tab; quotes '...' and "..."; backslash
 * escapes; "$(printf '\r')" as a carriage return) up to an unquoted newline or the end, and the
 * 1-based position after that newline. nil, err when the command holds anything the shell would expand, glob or treat as an operator
 * (an unquoted $ ` * ? [ | & ; < > ( ), a leading # or ~), or a quote is not closed. */
static int l_sh_words(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  size_t i = (size_t)luaL_optinteger(L, 2, 1) - 1;
  luaL_Buffer word;
  int have = 0, count = 0;
  lua_newtable(L);
  luaL_buffinit(L, &word);
  for (; i < n; i++) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (have) {
        luaL_pushresult(&word);
        lua_rawseti(L, -2, ++count);
        luaL_buffinit(L, &word);
        have = 0;
      }
      if (c == '\n') {
        i++;
        break;
      }
    } else if (c == '\'') {
      const char *q = memchr(s + i + 1, '\'', n - i - 1);
      if (!q) return luaL_pushfail(L), lua_pushliteral(L, "unterminated '"), 2;
      luaL_addlstring(&word, s + i + 1, (size_t)(q - s - i - 1));
      i = (size_t)(q - s);
      have = 1;
    } else if (c == '"') {
      for (i++; i < n && s[i] != '"'; i++) {
        if (n - i >= sizeof PRINTF_CR - 1 && memcmp(s + i, PRINTF_CR, sizeof PRINTF_CR - 1) == 0) {
          luaL_addchar(&word, '\r');
          i += sizeof PRINTF_CR - 2;
          continue;
        }
        if (s[i] == '$' || s[i] == '`') return luaL_pushfail(L), lua_pushliteral(L, "expansion in \"...\""), 2;
        if (s[i] == '\\' && i + 1 < n && strchr("$`\"\\\n", s[i + 1])) {
          if (s[++i] == '\n') continue;
        }
        luaL_addchar(&word, s[i]);
      }
      if (i >= n) return luaL_pushfail(L), lua_pushliteral(L, "unterminated \""), 2;
      have = 1;
    } else if (c == '\\') {
      if (i + 1 >= n) return luaL_pushfail(L), lua_pushliteral(L, "trailing backslash"), 2;
      if (s[++i] != '\n') {
        luaL_addchar(&word, s[i]);
        have = 1;
      }
    } else if (sh_special(c, !have)) {
      lua_pushnil(L);
      lua_pushfstring(L, "unquoted '%c' at %d", c, (int)i + 1);
      return 2;
    } else {
      luaL_addchar(&word, c);
      have = 1;
    }
  }
  if (have) {
    luaL_pushresult(&word);
    lua_rawseti(L, -2, ++count);
  } else {
    luaL_pushresult(&word);
    lua_pop(L, 1);
  }
  lua_pushinteger(L, (lua_Integer)i + 1);
  return 2;
}

/* -- args = fuzz.sbatch_args(text) : the arguments of an "#SBATCH ..." line's text after the
 * prefix, as sbatch reads them: whitespace-separated; '...' or "..." quote (blanks included); a
 * backslash takes the next character literally; an unquoted, unescaped # ends the line. */
static int l_sbatch_args(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  lua_newtable(L);
  int count = 0;
  size_t i = 0;
  for (;;) {
    while (i < n && s[i] != '\n' && (s[i] == ' ' || s[i] == '\t' || s[i] == '\v' || s[i] == '\f' || s[i] == '\r'))
      i++;
    if (i >= n || s[i] == '\n' || s[i] == '#') break;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    char quote = 0;
    int escaped = 0;
    for (; i < n && s[i] != '\n'; i++) {
      char c = s[i];
      if (!quote && !escaped && (c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r')) break;
      if (escaped) {
        escaped = 0;
      } else if (c == '\\') {
        escaped = 1;
        continue;
      } else if (quote) {
        if (c == quote) {
          quote = 0;
          continue;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
        continue;
      } else if (c == '#') {
        break;
      }
      luaL_addchar(&b, c);
    }
    luaL_pushresult(&b);
    lua_rawseti(L, -2, ++count);
    if (i < n && s[i] == '#' && !quote) break;
  }
  return 1;
}

static const luaL_Reg helpers[] = {{"sbatch_args", l_sbatch_args}, {"sh_words", l_sh_words}, {NULL, NULL}};

FUZZ_LUA_TARGET("slurm_quote", helpers)
