/* wb repl: an interactive Lua prompt with `wb` loaded. readline (history in ~/.wb_history, Lua
 * completion) when stdin is a terminal, plain line reading otherwise. Values are printed by
 * lua/wb/repl.lua; Ctrl-C interrupts the running statement or discards the current input. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "internal.h"

#define PROMPT "wb> "
#define PROMPT_MORE "wb>> "
#define HISTORY_FILE "/.wb_history"
#define HISTORY_MAX 1000

/* Stack slots of repl_main's frame. */
enum { SLOT_HANDLER = 1, SLOT_FORMAT, SLOT_COMPLETE };

/* Outcome of reading input (or of running a statement: INPUT_LINE means carry on). */
enum input { INPUT_LINE, INPUT_EOF, INPUT_CANCEL, INPUT_TERM };

/* Load status meaning "the chunk is incomplete: read another line". */
#define LOAD_MORE (-1)

static struct {
  lua_State *L;
  int tty;
  int verbose;
  char *history; /* history file path, or NULL */
  char *line;    /* the line accepted by readline (NULL at EOF) */
  int accepted;
  char **queue;  /* lines read ahead past the end of a chunk, read again first */
  size_t nqueue, queue_cap;
  int term_signal; /* the signal that ended the REPL */
} repl;

/* ---- errors ----------------------------------------------------------------------------- */

static int repl_main(lua_State *L);

/* Traceback of the statement: without the REPL's own frames (repl_main and its callers). */
static void push_traceback(lua_State *L, const char *msg) {
  lua_Debug ar;
  int own = 0, found = 0; /* traceback lines of repl_main and below */
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    lua_getinfo(L, "ft", &ar);
    if (lua_tocfunction(L, -1) == repl_main) {
      found = 1;
      own = 0;
    }
    own += 1 + ar.istailcall;
    lua_pop(L, 1);
  }
  if (!found) own = 0;
  luaL_traceback(L, L, msg, 1);
  size_t len;
  const char *tb = lua_tolstring(L, -1, &len);
  while (own > 0 && len > 0)
    if (tb[--len] == '\n') own--;
  lua_pushlstring(L, tb, len);
}

/* Message handler: keeps the interrupt object, turns anything else into a one-line message
 * (with a traceback under -v). */
static int message_handler(lua_State *L) {
  if (wb_is_interrupt(L, 1)) return 1;
  const char *msg;
  if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER)
    msg = lua_tostring(L, 1);
  else if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
    msg = lua_tostring(L, -1);
  else
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  if (repl.verbose)
    push_traceback(L, msg);
  else
    lua_pushstring(L, msg);
  return 1;
}

/* SIGTERM and SIGHUP (the terminal is gone) end the REPL, with exit status 128 + the signal. */
static int ends_repl(int signo) { return signo == SIGTERM || signo == SIGHUP; }

/* Prints and pops the error on the top. An interrupt clears the pending signal; SIGTERM or SIGHUP
 * ends the REPL (INPUT_TERM). */
static enum input report(lua_State *L) {
  fflush(stdout);
  if (wb_is_interrupt(L, -1)) {
    lua_getfield(L, -1, "interrupted");
    int signo = (int)lua_tointeger(L, -1), term = ends_repl(signo);
    lua_pop(L, 2);
    wb_signal_clear();
    if (term) repl.term_signal = signo;
    fputs(signo == SIGTERM ? "interrupted (SIGTERM)\n" : signo == SIGHUP ? "interrupted (SIGHUP)\n" : "interrupted\n",
          stderr);
    return term ? INPUT_TERM : INPUT_LINE;
  }
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "%s\n", msg ? msg : "(error object is not a string)");
  lua_pop(L, 1);
  return INPUT_LINE;
}

/* ---- history ---------------------------------------------------------------------------- */

static void history_open(void) {
  using_history();
  stifle_history(HISTORY_MAX);
  history_comment_char = '#'; /* "#<time>" lines delimit multi-line entries in the file */
  history_write_timestamps = 1;
  history_multiline_entries = 1;
  const char *home = getenv("HOME");
  if (!home || !*home) return;
  size_t size = strlen(home) + sizeof HISTORY_FILE;
  repl.history = malloc(size);
  if (!repl.history) return;
  snprintf(repl.history, size, "%s%s", home, HISTORY_FILE);
  int fd = open(repl.history, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  read_history(repl.history);
}

/* Adds a complete statement (possibly several lines) unless blank or equal to the last entry;
 * appends it to the file at once so that a crash keeps it. */
static void history_add(const char *entry) {
  if (!repl.tty || entry[strspn(entry, " \t\r\n")] == '\0') return;
  HIST_ENTRY *last = history_get(history_base + history_length - 1);
  if (last && strcmp(last->line, entry) == 0) return;
  add_history(entry);
  if (repl.history) append_history(1, repl.history);
}

/* Rewrites the file with its last HISTORY_MAX entries (entries appended by other sessions kept). */
static void history_close(void) {
  if (repl.history) {
    clear_history();
    read_history(repl.history);
    write_history(repl.history);
  }
  clear_history();
  free(repl.history);
  repl.history = NULL;
}

/* ---- completion ------------------------------------------------------------------------- */

/* readline generator over the candidate list on the stack top. */
static char *next_candidate(const char *text, int state) {
  static lua_Integer i;
  (void)text;
  if (state == 0) i = 0;
  char *s = NULL;
  if (lua_rawgeti(repl.L, -1, ++i) == LUA_TSTRING) s = strdup(lua_tostring(repl.L, -1));
  lua_pop(repl.L, 1);
  return s;
}

/* Lua names from wb.repl.complete; file names inside a string literal (it returns nil). */
static char **complete(const char *text, int start, int end) {
  lua_State *L = repl.L;
  (void)end;
  rl_completion_append_character = '\0';
  if (!lua_checkstack(L, 4)) return NULL;
  lua_pushvalue(L, SLOT_COMPLETE);
  lua_pushstring(L, text);
  lua_pushlstring(L, rl_line_buffer, (size_t)start);
  int status = lua_pcall(L, 2, 1, 0);
  char **matches = NULL;
  if (status != LUA_OK || !lua_isnil(L, -1)) {
    rl_attempted_completion_over = 1;
    if (status == LUA_OK && lua_istable(L, -1)) matches = rl_completion_matches(text, next_candidate);
  }
  lua_pop(L, 1);
  return matches;
}

static void readline_open(void) {
  rl_readline_name = "wb";
  rl_catch_signals = 0; /* SIGINT stays with wb's handler; the input loop polls for it */
  rl_persistent_signal_handlers = 1;
  rl_change_environment = 0; /* no LINES/COLUMNS exported to the processes wb runs */
  rl_basic_word_break_characters = " \t\n\"'`<>=;+*%^#&|,()[]{}";
  rl_attempted_completion_function = complete;
}

/* ---- input ------------------------------------------------------------------------------ */

/* A signal arrived while reading: consume it. */
static enum input signal_input(void) {
  int signo = wb_signal_pending(), term = ends_repl(signo);
  wb_signal_clear();
  if (term) repl.term_signal = signo;
  return term ? INPUT_TERM : INPUT_CANCEL;
}

static void on_line(char *line) {
  repl.line = line;
  repl.accepted = 1;
  rl_callback_handler_remove();
}

/* Abandons the line being edited (Ctrl-C) and leaves the cursor on a fresh line. */
static void cancel_line(void) {
  rl_point = rl_end;
  rl_redisplay();
  fputs("^C\n", rl_outstream);
  rl_free_line_state();
  rl_callback_sigcleanup();
  rl_callback_handler_remove();
  using_history();
}

static enum input read_tty(const char *prompt, char **line) {
  repl.accepted = 0;
  repl.line = NULL;
  rl_eof_found = 0; /* left from an earlier Ctrl-D, it would make readline add a blank line */
  rl_callback_handler_install(prompt, on_line);
  for (;;) {
    if (repl.accepted) {
      *line = repl.line;
      if (repl.line) return INPUT_LINE;
      const char *paste = rl_variable_value("enable-bracketed-paste");
      if (!paste || strcmp(paste, "on") != 0)
        fputc('\n', rl_outstream); /* else readline has ended the line */
      return INPUT_EOF;
    }
    if (wb_signal_pending()) {
      cancel_line();
      return signal_input();
    }
    struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                            {.fd = wb_signal_fd(), .events = POLLIN}};
    int n = poll(fds, fds[1].fd >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR) {
      rl_check_signals(); /* e.g. a window resize caught by readline */
    } else if (n < 0) {
      rl_callback_handler_remove();
      return INPUT_EOF;
    } else if (fds[0].revents) {
      rl_callback_read_char();
    } else if (!wb_signal_pending()) {
      wb_signal_clear(); /* a stray byte in the self-pipe */
    }
  }
}

static enum input read_plain(char **line) {
  size_t cap = 0;
  *line = NULL;
  for (;;) {
    errno = 0;
    ssize_t n = getline(line, &cap, stdin);
    if (wb_signal_pending()) {
      clearerr(stdin);
      free(*line);
      *line = NULL;
      return signal_input();
    }
    if (n >= 0) {
      if (n > 0 && (*line)[n - 1] == '\n') (*line)[n - 1] = '\0';
      return INPUT_LINE;
    }
    if (errno != EINTR) break;
    clearerr(stdin);
  }
  free(*line);
  *line = NULL;
  return INPUT_EOF;
}

/* Puts lines[0..n) (malloc'd; taken over) before what the queue holds. Returns 0, or -1 when
 * out of memory (the lines are freed). */
static int queue_front(char **lines, size_t n) {
  if (repl.nqueue + n > repl.queue_cap) {
    size_t cap = (repl.nqueue + n) * 2;
    char **q = realloc(repl.queue, cap * sizeof *q);
    if (!q) {
      for (size_t i = 0; i < n; i++) free(lines[i]);
      return -1;
    }
    repl.queue = q;
    repl.queue_cap = cap;
  }
  memmove(repl.queue + n, repl.queue, repl.nqueue * sizeof *repl.queue);
  memcpy(repl.queue, lines, n * sizeof *lines);
  repl.nqueue += n;
  return 0;
}

static void queue_clear(void) {
  for (size_t i = 0; i < repl.nqueue; i++) free(repl.queue[i]);
  repl.nqueue = 0;
}

/* Reads one line into *line (malloc'd, without the newline): a queued one first. */
static enum input read_line(const char *prompt, char **line) {
  *line = NULL;
  if (repl.nqueue) {
    *line = repl.queue[0];
    memmove(repl.queue, repl.queue + 1, --repl.nqueue * sizeof *repl.queue);
    return INPUT_LINE;
  }
  fflush(stdout);
  if (ends_repl(wb_signal_pending())) {
    repl.term_signal = wb_signal_pending();
    return INPUT_TERM;
  }
  if (wb_signal_pending()) wb_signal_clear(); /* came too late to stop the last statement */
  return repl.tty ? read_tty(prompt, line) : read_plain(line);
}

/* More input is there without waiting: a paste, or input that is not a terminal. */
static int input_pending(void) {
  if (repl.nqueue || !repl.tty) return 1;
  struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

/* ---- evaluation ------------------------------------------------------------------------- */

static int incomplete(lua_State *L, int status) {
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  return status == LUA_ERRSYNTAX && msg && len >= 5 && strcmp(msg + len - 5, "<eof>") == 0;
}

/* Compiles the code at index `code` as `return <code>` and, unless `expr`, as a statement.
 * Pushes the function or the error message; returns the load status or LOAD_MORE when either
 * form only lacks more input. */
static int load_chunk(lua_State *L, int code, int expr) {
  size_t len;
  lua_pushliteral(L, "return ");
  lua_pushvalue(L, code);
  lua_concat(L, 2);
  const char *ret = lua_tolstring(L, -1, &len);
  int status = luaL_loadbuffer(L, ret, len, "=stdin");
  lua_remove(L, -2);
  if (status == LUA_OK) return LUA_OK;
  int more = incomplete(L, status);
  if (expr) return more ? LOAD_MORE : status;
  const char *s = lua_tolstring(L, code, &len);
  int stmt = luaL_loadbuffer(L, s, len, "=stdin");
  if (stmt == LUA_OK || incomplete(L, stmt) || !more) {
    lua_remove(L, -2);
    return stmt != LUA_OK && incomplete(L, stmt) ? LOAD_MORE : stmt;
  }
  lua_pop(L, 1); /* an expression lacking more input: keep its message */
  return LOAD_MORE;
}

/* Pushes lines[0..n) joined by newlines, the first without its leading '=' when expr. */
static void push_joined(lua_State *L, char **lines, size_t n, int expr) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (size_t i = 0; i < n; i++) {
    if (i) luaL_addchar(&b, '\n');
    luaL_addstring(&b, lines[i] + (i == 0 ? expr : 0));
  }
  luaL_pushresult(&b);
}

/* Compiles the first n lines; pushes the function or the message; returns load_chunk's status. */
static int try_lines(lua_State *L, char **lines, size_t n, int expr) {
  push_joined(L, lines, n, expr);
  int code = lua_gettop(L);
  int status = load_chunk(L, code, expr);
  lua_remove(L, code);
  return status;
}

static void free_lines(char **lines, size_t n) {
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
}

/* Reads lines until they form a chunk (or an error more lines cannot fix). On INPUT_LINE,
 * pushes the function or the error message and sets *status to the load status.
 * Typed input is compiled after every line. Lines that are there without waiting (a paste, a
 * pipe) are compiled at doubling counts, and a chunk found complete is narrowed by bisection to
 * the first line count that completes it (the lines after go back to the queue): linear in
 * the size of a long statement, where compiling after every line was quadratic. */
static enum input read_chunk(lua_State *L, int *status) {
  char *line;
  enum input in = read_line(PROMPT, &line);
  if (in != INPUT_LINE) return in;
  int expr = line[0] == '=';
  size_t n = 0, cap = 16, known_more = 0; /* lines; the longest prefix known to be incomplete */
  char **lines = malloc(cap * sizeof *lines);
  if (!lines) {
    free(line);
    lua_pushliteral(L, "out of memory");
    *status = LUA_ERRMEM;
    return INPUT_LINE;
  }
  lines[n++] = line;
  for (;;) {
    int eof = in == INPUT_EOF;
    if (eof || !input_pending() || n - known_more >= (known_more ? known_more : 1)) {
      *status = try_lines(L, lines, n, expr);
      if (*status != LOAD_MORE) {
        size_t lo = known_more, hi = n, top = n; /* prefix lo needs more, prefix hi does not; */
        while (hi - lo > 1) {                       /* top: the prefix whose result is pushed */
          size_t mid = lo + (hi - lo) / 2;
          lua_pop(L, 1);
          int st = try_lines(L, lines, mid, expr);
          top = mid;
          if (st == LOAD_MORE) {
            lo = mid;
          } else {
            hi = mid;
            *status = st;
          }
        }
        if (top != hi) {
          lua_pop(L, 1);
          *status = try_lines(L, lines, hi, expr);
        }
        if (hi != n) {
          if (queue_front(lines + hi, n - hi) != 0) queue_clear();
          n = hi;
        }
        break;
      }
      if (eof) { /* report why the chunk is incomplete */
        *status = LUA_ERRSYNTAX;
        break;
      }
      lua_pop(L, 1);
      known_more = n;
    }
    in = read_line(PROMPT_MORE, &line);
    if (in == INPUT_EOF) continue;
    if (in != INPUT_LINE) {
      free_lines(lines, n);
      queue_clear();
      return in;
    }
    if (n == cap) {
      char **more = realloc(lines, (cap *= 2) * sizeof *lines);
      if (!more) { /* what was read so far is the chunk */
        free(line);
        in = INPUT_EOF;
        continue;
      }
      lines = more;
    }
    lines[n++] = line;
  }
  push_joined(L, lines, n, 0);
  history_add(lua_tostring(L, -1));
  lua_pop(L, 1);
  free_lines(lines, n);
  return INPUT_LINE;
}

/* Runs the function on the top and prints its results. */
static enum input run_chunk(lua_State *L) {
  int base = lua_gettop(L);
  if (lua_pcall(L, 0, LUA_MULTRET, SLOT_HANDLER) != LUA_OK) return report(L);
  int n = lua_gettop(L) - base + 1;
  if (n == 0) return INPUT_LINE;
  if (!lua_checkstack(L, 2)) {
    lua_settop(L, base - 1);
    fprintf(stderr, "too many results to print (%d)\n", n);
    return INPUT_LINE;
  }
  lua_pushvalue(L, SLOT_FORMAT);
  lua_insert(L, base);
  if (lua_pcall(L, n, 1, SLOT_HANDLER) != LUA_OK) return report(L);
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  if (s) {
    fwrite(s, 1, len, stdout);
    fputc('\n', stdout);
  }
  lua_pop(L, 1);
  return INPUT_LINE;
}

static void require_into(lua_State *L, const char *name) {
  lua_getglobal(L, "require");
  lua_pushstring(L, name);
  lua_call(L, 1, 1);
}

/* The REPL loop, run protected; returns the exit status. */
static int repl_main(lua_State *L) {
  lua_settop(L, 0);
  lua_pushcfunction(L, message_handler);
  require_into(L, "wb.repl");
  lua_getfield(L, -1, "format");
  lua_getfield(L, -2, "complete");
  lua_remove(L, -3);
  require_into(L, "wb");
  lua_setglobal(L, "wb");
  require_into(L, "wb.cli");
  lua_getfield(L, -1, "verbose");
  repl.verbose = lua_toboolean(L, -1);
  lua_settop(L, SLOT_COMPLETE);

  int exit_status = 0;
  for (;;) {
    int status;
    enum input in = read_chunk(L, &status);
    if (in == INPUT_LINE) in = status == LUA_OK ? run_chunk(L) : report(L);
    if (in == INPUT_EOF) break;
    if (in == INPUT_TERM) {
      exit_status = 128 + (repl.term_signal ? repl.term_signal : SIGTERM);
      break;
    }
    lua_settop(L, SLOT_COMPLETE);
  }
  lua_pushinteger(L, exit_status);
  return 1;
}

int wb_repl(lua_State *L) {
  if (repl.L) {
    fputs("wb repl: already running\n", stderr);
    return 1;
  }
  repl.L = L;
  repl.tty = isatty(STDIN_FILENO);
  if (repl.tty) {
    readline_open();
    history_open();
    printf("wb %s (%s) \u2014 Ctrl-D to exit\n", WB_VERSION, LUA_RELEASE);
  }
  int status = 1;
  lua_pushcfunction(L, repl_main);
  if (lua_pcall(L, 0, 1, 0) == LUA_OK) {
    status = (int)lua_tointeger(L, -1);
  } else {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "wb repl: %s\n", msg ? msg : "failed");
  }
  lua_pop(L, 1);
  if (repl.tty) {
    rl_callback_handler_remove();
    history_close();
  }
  queue_clear(); /* input left unread */
  free(repl.queue);
  repl.queue = NULL;
  repl.queue_cap = 0;
  fflush(stdout);
  repl.L = NULL;
  return status;
}
