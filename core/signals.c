/* Signals and interrupts (see core/internal.h): SIGINT, SIGTERM and SIGHUP become an orderly
 * stop of the running Lua code, a repeated one ends every child and wb at once. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "spawn.h"

static volatile sig_atomic_t pending_signal;
/* While defer_first is set, the first SIGINT is only noted in deferred_signal (no interrupt): the
 * code that set it (a capture waiting for its command) stops its work and finishes; a second
 * SIGINT interrupts as usual. */
static volatile sig_atomic_t defer_first, deferred_signal;
static int signal_pipe[2] = {-1, -1};
static lua_State *main_state;

/* Every thread runs with a count hook (watch_hook, every WB_WATCH_COUNT instructions) that raises a
 * pending signal's interrupt once: coroutines inherit it from the thread that creates them, so a
 * pure-Lua loop inside a coroutine is interrupted too. The signal handler also hooks the main
 * thread at its next call, return or instruction, for an immediate stop there. */
#define WB_WATCH_COUNT 65536
static volatile sig_atomic_t interrupt_raised; /* the pending signal's interrupt was raised */

static void watch_hook(lua_State *L, lua_Debug *ar);

static void watch(lua_State *L) { lua_sethook(L, watch_hook, LUA_MASKCOUNT, WB_WATCH_COUNT); }

static void watch_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  if (pending_signal && !interrupt_raised) wb_raise_interrupt(L);
}

static volatile int64_t pending_since_ms; /* CLOCK_MONOTONIC, when pending_signal was set */

static int64_t monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The first SIGINT, SIGTERM or SIGHUP is recorded for an orderly stop; another one at least
 * WB_FORCE_AFTER_MS later while the first is still pending ends every child's group and exits
 * at once (128 + signo). One sooner is the same stop delivered twice (timeout(1) signals its
 * child and then its own process group), not a second request. */
#define WB_FORCE_AFTER_MS 300
static void on_signal(int signo) {
  int saved = errno;
  if (signo == SIGINT && defer_first && !deferred_signal) {
    deferred_signal = signo;
    errno = saved;
    return;
  }
  if (pending_signal) {
    if (monotonic_ms() - pending_since_ms >= WB_FORCE_AFTER_MS) {
      wb_spawn_kill_now();
      _exit(128 + signo);
    }
    errno = saved;
    return;
  }
  pending_since_ms = monotonic_ms();
  pending_signal = signo;
  if (signal_pipe[1] >= 0) {
    char c = (char)signo;
    ssize_t w = write(signal_pipe[1], &c, 1);
    (void)w;
  }
  if (main_state) lua_sethook(main_state, watch_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  errno = saved;
}

int wb_signal_pending(void) { return pending_signal; }
int wb_signal_fd(void) { return signal_pipe[0]; }

void wb_signal_clear(void) {
  char buf[64];
  pending_signal = 0;
  interrupt_raised = 0;
  if (main_state) watch(main_state);
  while (signal_pipe[0] >= 0 && read(signal_pipe[0], buf, sizeof buf) > 0) {
  }
}

static int interrupt_tostring(lua_State *L) {
  lua_getfield(L, 1, "interrupted");
  lua_Integer signo = lua_tointeger(L, -1);
  lua_pushstring(L, signo == SIGTERM ? "interrupted (SIGTERM)" : signo == SIGHUP ? "interrupted (SIGHUP)"
                    : signo == 0 ? "os.exit" : "interrupted (SIGINT)");
  return 1;
}

int wb_raise_interrupt(lua_State *L) {
  int signo = pending_signal ? pending_signal : SIGINT;
  interrupt_raised = 1; /* raised once, not again after a pcall */
  if (main_state) watch(main_state);
  lua_createtable(L, 0, 1);
  lua_pushinteger(L, signo);
  lua_setfield(L, -2, "interrupted");
  if (luaL_newmetatable(L, "wb.interrupt")) {
    lua_pushcfunction(L, interrupt_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  return lua_error(L);
}

int wb_is_interrupt(lua_State *L, int idx) {
  return lua_istable(L, idx) && wb_has_metatable(L, idx, "wb.interrupt");
}

/* -- signo = wb.interrupted() : the pending SIGINT/SIGTERM number, or nil */
static int l_interrupted(lua_State *L) {
  if (!pending_signal) return 0;
  lua_pushinteger(L, pending_signal);
  return 1;
}

/* -- was = wb.core.defer_interrupt(on) : while on, the first SIGINT does not interrupt but is
 * reported by wb.core.deferred_interrupt(); turning it on forgets an earlier deferred one */
static int l_defer_interrupt(lua_State *L) {
  int on = lua_toboolean(L, 1);
  lua_pushboolean(L, defer_first);
  if (on && !defer_first) deferred_signal = 0;
  defer_first = on;
  return 1;
}

/* -- signo = wb.core.deferred_interrupt() : the SIGINT deferred (see defer_interrupt), or nil */
static int l_deferred_interrupt(lua_State *L) {
  if (!deferred_signal) return 0;
  lua_pushinteger(L, deferred_signal);
  return 1;
}

/* -- wb.core.exit(code) : raises the interrupt error object with interrupted = 0 and exit = code:
 * what os.exit does inside wb, so that a recipe's exit takes the same orderly way out as Ctrl-C */
static int l_exit(lua_State *L) {
  lua_Integer code = luaL_checkinteger(L, 1);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, 0);
  lua_setfield(L, -2, "interrupted");
  lua_pushinteger(L, code);
  lua_setfield(L, -2, "exit");
  luaL_getmetatable(L, "wb.interrupt");
  lua_setmetatable(L, -2);
  return lua_error(L);
}

/* -- yes = wb.core.is_interrupt(v) : v is an interrupt error object (a signal or wb.core.exit) */
static int l_is_interrupt(lua_State *L) {
  lua_pushboolean(L, wb_is_interrupt(L, 1));
  return 1;
}

/* -- wb.check_interrupt() : raises the interrupt error when a signal is pending */
static int l_check_interrupt(lua_State *L) {
  if (pending_signal) return wb_raise_interrupt(L);
  return 0;
}

void wb_signals_install(lua_State *L) {
  main_state = L;
  watch(L);
  if (signal_pipe[0] < 0 && pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    signal_pipe[0] = signal_pipe[1] = -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  if (luaL_newmetatable(L, "wb.interrupt")) {
    lua_pushcfunction(L, interrupt_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  signal(SIGPIPE, SIG_IGN);
  /* a file over RLIMIT_FSIZE is a write that fails (EFBIG, reported with the file's name), not
   * the death of wb with its run left "running"; children start with every signal at default */
  signal(SIGXFSZ, SIG_IGN);
}

const luaL_Reg wb_signal_functions[] = {{"check_interrupt", l_check_interrupt},
                                        {"defer_interrupt", l_defer_interrupt},
                                        {"deferred_interrupt", l_deferred_interrupt},
                                        {"exit", l_exit},
                                        {"interrupted", l_interrupted},
                                        {"is_interrupt", l_is_interrupt},
                                        {NULL, NULL}};
