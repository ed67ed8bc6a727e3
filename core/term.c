/* wb.term: terminal detection, colour (honouring NO_COLOR), and a single progress line. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

static int stream_fd(lua_State *L, int arg, const char *def) {
  if (lua_isinteger(L, arg)) return (int)lua_tointeger(L, arg);
  const char *name = luaL_optstring(L, arg, def);
  if (strcmp(name, "stdout") == 0) return 1;
  if (strcmp(name, "stderr") == 0) return 2;
  if (strcmp(name, "stdin") == 0) return 0;
  return luaL_argerror(L, arg, "expected \"stdin\", \"stdout\", \"stderr\" or a descriptor");
}

/* -- yes = wb.term.isatty([stream = "stdout"]) */
static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty(stream_fd(L, 1, "stdout")));
  return 1;
}

static int color_enabled(int fd) {
  const char *no = getenv("NO_COLOR");
  if (no && *no) return 0;
  const char *force = getenv("WB_COLOR");
  if (force && strcmp(force, "always") == 0) return 1;
  const char *term = getenv("TERM");
  if (term && strcmp(term, "dumb") == 0) return 0;
  return isatty(fd);
}

/* -- yes = wb.term.color_enabled([stream = "stdout"]) : a TTY, TERM not dumb, NO_COLOR unset
 * (WB_COLOR=always forces colour) */
static int l_color_enabled(lua_State *L) {
  lua_pushboolean(L, color_enabled(stream_fd(L, 1, "stdout")));
  return 1;
}

static const struct {
  const char *name, *code;
} colors[] = {{"bold", "1"},   {"dim", "2"},     {"red", "31"},  {"green", "32"},
              {"yellow", "33"}, {"blue", "34"}, {"magenta", "35"}, {"cyan", "36"}};

/* -- s = wb.term.color(text, name [, stream = "stdout"]) : text wrapped in the ANSI colour `name`
 * (bold, dim, red, green, yellow, blue, magenta, cyan) when colour is enabled for the stream */
static int l_color(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *name = luaL_checkstring(L, 2);
  const char *code = NULL;
  for (size_t i = 0; i < sizeof colors / sizeof colors[0]; i++)
    if (strcmp(colors[i].name, name) == 0) code = colors[i].code;
  if (!code) return luaL_argerror(L, 2, "unknown colour");
  if (!color_enabled(stream_fd(L, 3, "stdout"))) {
    lua_settop(L, 1);
    return 1;
  }
  lua_pushfstring(L, "\x1b[%sm%s\x1b[0m", code, text);
  return 1;
}

/* -- columns = wb.term.width([stream = "stderr"]) : terminal width, 80 when not a terminal */
static int l_width(lua_State *L) {
  struct winsize ws;
  int fd = stream_fd(L, 1, "stderr");
  lua_pushinteger(L, ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80);
  return 1;
}

static int progress_shown;

/* -- shown = wb.term.progress(text) : replaces the progress line on stderr when stderr is a TTY
 * (cut to the terminal width); does nothing on a pipe */
static int l_progress(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  if (!isatty(2) || getenv("WB_NO_PROGRESS")) {
    lua_pushboolean(L, 0);
    return 1;
  }
  struct winsize ws;
  size_t width = ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
  if (len > width) len = width;
  fprintf(stderr, "\r\x1b[K%.*s", (int)len, text);
  fflush(stderr);
  progress_shown = 1;
  lua_pushboolean(L, 1);
  return 1;
}

/* -- wb.term.progress_done() : clears the progress line if one is shown */
static int l_progress_done(lua_State *L) {
  (void)L;
  if (progress_shown) {
    fputs("\r\x1b[K", stderr);
    fflush(stderr);
    progress_shown = 0;
  }
  return 0;
}

static const luaL_Reg functions[] = {{"color", l_color},
                                     {"color_enabled", l_color_enabled},
                                     {"isatty", l_isatty},
                                     {"progress", l_progress},
                                     {"progress_done", l_progress_done},
                                     {"width", l_width},
                                     {NULL, NULL}};

int luaopen_wb_term(lua_State *L) {
  luaL_newlib(L, functions);
  return 1;
}
