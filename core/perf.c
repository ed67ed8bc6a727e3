/* wb.perf: perf_event_open counters on a process and all its descendants (inherit), opened
 * before the program starts (enable_on_exec on a held child) and read after it ends. Each event
 * is opened on its own, so one that cannot be counted is reported with its reason while the others
 * count. The ring-buffer sampler of the same module lives in core/perf_sample.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opt.h"
#include "perf.h"
#include "ticker.h"
#include "internal.h"

#define COUNTERS_MT "wb.perf.counters"
#define MAX_EVENTS 32

struct event_def {
  const char *name;
  uint32_t type;
  uint64_t config;
  const char *unit;
  int kernel_side; /* counted only in the kernel: always 0 with exclude_kernel */
};

static const struct event_def event_defs[] = {
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns", 0},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "count", 1},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "count", 1},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "count", 0},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, "count", 0},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, "count", 0},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "ns", 0},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "count", 0},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "count", 0},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, "count", 0},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "count", 0},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "count", 0},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "count", 0},
};
#define NDEFS (sizeof event_defs / sizeof event_defs[0])

static const char *const default_events[] = {"task-clock", "context-switches", "cpu-migrations",
                                             "page-faults", "cycles", "instructions",
                                             "cache-misses", "branch-misses"};

/* ---- shared helpers (core/perf.h) -------------------------------------------------------- */

int wb_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd) {
  attr->size = sizeof *attr;
  return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

static int read_small_file(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return 0;
}

/* /proc/sys/kernel/perf_event_paranoid, or 2 when unreadable. */
static int paranoid(void) {
  char buf[32];
  if (read_small_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof buf) != 0) return 2;
  return atoi(buf);
}

int wb_online_cpus(int *cpus, int max) {
  char buf[1024];
  int n = 0;
  if (read_small_file("/sys/devices/system/cpu/online", buf, sizeof buf) == 0) {
    for (char *p = buf; *p && *p != '\n' && n < max;) {
      char *end;
      long lo = strtol(p, &end, 10), hi = lo;
      if (end == p) break;
      if (*end == '-') hi = strtol(end + 1, &end, 10);
      for (long c = lo; c <= hi && n < max; c++) cpus[n++] = (int)c;
      p = *end == ',' ? end + 1 : end;
    }
  }
  if (n == 0) cpus[n++] = 0;
  return n;
}

static int in_vm(void) {
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f) return 0;
  char line[4096];
  int vm = 0;
  while (!vm && fgets(line, sizeof line, f))
    if (strncmp(line, "flags", 5) == 0 && strstr(line, " hypervisor")) vm = 1;
  fclose(f);
  return vm;
}

/* Why opening an event of `type` failed with errno e, into buf: for an unprivileged user the
 * privilege it needs; for a hardware event the cause (no PMU, a virtual machine, the event unknown
 * to the PMU). */
static void open_reason(uint32_t type, int e, char *buf, size_t len) {
  if (e == EACCES || e == EPERM)
    snprintf(buf, len, "perf_event_open: %s (perf_event_paranoid=%d; needs root or CAP_PERFMON)",
             strerror(e), paranoid());
  else if (type != PERF_TYPE_HARDWARE)
    snprintf(buf, len, "perf_event_open: %s", strerror(e));
  else if (access("/sys/bus/event_source/devices/cpu", F_OK) != 0)
    snprintf(buf, len, "no hardware PMU (%s): hardware events cannot be counted here",
             in_vm() ? "a virtual machine without a virtual PMU" : "no CPU event source");
  else if (e == ENOENT || e == EOPNOTSUPP || e == EINVAL)
    snprintf(buf, len, "the CPU's PMU does not support this event (%s)", strerror(e));
  else
    snprintf(buf, len, "perf_event_open: %s", strerror(e));
}

/* ---- counters --------------------------------------------------------------------------- */

struct counter {
  const struct event_def *def;
  int fd;
  int user_only;   /* opened with exclude_kernel after EACCES */
  char reason[200]; /* why it is unavailable, when fd < 0 */
};

typedef struct counters {
  int n, closed;
  struct counter c[MAX_EVENTS];
} counters;

static const struct event_def *find_def(const char *name) {
  for (size_t i = 0; i < NDEFS; i++)
    if (strcmp(event_defs[i].name, name) == 0) return &event_defs[i];
  return NULL;
}

static void open_counter(struct counter *c, pid_t pid, int enable_on_exec, int inherit) {
  struct perf_event_attr a;
  for (int user_only = 0; user_only < 2; user_only++) {
    memset(&a, 0, sizeof a);
    a.type = c->def->type;
    a.config = c->def->config;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    a.inherit = (unsigned)inherit;
    a.disabled = (unsigned)enable_on_exec;
    a.enable_on_exec = (unsigned)enable_on_exec;
    a.exclude_kernel = a.exclude_hv = (unsigned)user_only;
    c->fd = wb_perf_open(&a, pid, -1, -1);
    if (c->fd >= 0) {
      c->user_only = user_only;
      return;
    }
    int e = errno;
    open_reason(c->def->type, e, c->reason, sizeof c->reason);
    if (e != EACCES && e != EPERM) return;
  }
}

static counters *check_counters(lua_State *L) {
  counters *cs = luaL_checkudata(L, 1, COUNTERS_MT);
  if (cs->closed) luaL_error(L, "wb.perf counters are closed");
  return cs;
}

/* -- c, err, errno = wb.perf.counters(pid [, opts]) : opens counting events on pid (and, with
 * inherit, every thread and process it creates afterwards). opts: events = {names} (default
 * task-clock, context-switches, cpu-migrations, page-faults, cycles, instructions, cache-misses,
 * branch-misses; wb.perf.events() lists the names), enable_on_exec = true (count from pid's next
 * exec: spawn it held), inherit = true. An event that cannot be opened is kept with its reason;
 * nil, err, errno only when pid does not exist. */
static int l_counters(lua_State *L) {
  lua_Integer pid = luaL_checkinteger(L, 1);
  int opts = wb_opt_table(L, 2);
  int on_exec = wb_opt_bool(L, opts, "enable_on_exec", 1), inherit = wb_opt_bool(L, opts, "inherit", 1);
  const char *names[MAX_EVENTS];
  int n = 0;
  if (lua_getfield(L, opts, "events") == LUA_TTABLE) { /* stays on the stack: it holds the names */
    int t = lua_gettop(L);
    for (lua_Integer i = 1; lua_rawgeti(L, t, i) != LUA_TNIL; i++) {
      const char *name = lua_tostring(L, -1);
      if (!name || !find_def(name))
        luaL_argerror(L, 2, lua_pushfstring(L, "unknown event '%s'", name ? name : "?"));
      if (n == MAX_EVENTS) luaL_argerror(L, 2, "too many events");
      names[n++] = name;
      lua_pop(L, 1);
    }
  } else if (!lua_isnil(L, -1)) {
    luaL_argerror(L, 2, "events must be a list of names");
  }
  if (n == 0)
    for (size_t i = 0; i < sizeof default_events / sizeof *default_events; i++) names[n++] = default_events[i];
  if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return wb_push_error(L, ESRCH, "perf counters");
  counters *cs = lua_newuserdatauv(L, sizeof *cs, 0);
  memset(cs, 0, sizeof *cs);
  luaL_setmetatable(L, COUNTERS_MT);
  for (int i = 0; i < n; i++) {
    cs->c[i].def = find_def(names[i]);
    cs->c[i].fd = -1;
    cs->n = i + 1;
    open_counter(&cs->c[i], (pid_t)pid, on_exec, inherit);
  }
  return 1;
}

struct wb_perf_scaled wb_perf_scale(uint64_t raw, uint64_t enabled, uint64_t running) {
  struct wb_perf_scaled r = {.value = (double)raw, .running_fraction = 1.0};
  if (enabled > 0) r.running_fraction = (double)running / (double)enabled;
  if (enabled > 0 && running == 0) {
    r.never_ran = 1;
    return r;
  }
  r.scaled = running < enabled;
  if (r.scaled) r.value = (double)raw * (double)enabled / (double)running;
  return r;
}

/* Reads an open counter into the table on the stack top; 0 with c->reason set when it has no
 * value. */
static int read_counter(lua_State *L, struct counter *c) {
  uint64_t v[3];
  if (read(c->fd, v, sizeof v) != (ssize_t)sizeof v) {
    snprintf(c->reason, sizeof c->reason, "read: %s", strerror(errno));
    close(c->fd);
    c->fd = -1;
    return 0;
  }
  if (c->user_only && c->def->kernel_side) {
    snprintf(c->reason, sizeof c->reason,
             "counted in the kernel only: reads 0 with exclude_kernel, which perf_event_paranoid=%d "
             "imposes on unprivileged users",
             paranoid());
    return 0;
  }
  struct wb_perf_scaled sc = wb_perf_scale(v[0], v[1], v[2]);
  if (sc.never_ran) {
    snprintf(c->reason, sizeof c->reason, "never scheduled on the PMU (no free counter)");
    return 0;
  }
  wb_set_bool(L, "available", 1);
  if (sc.scaled) wb_set_num(L, "value", sc.value);
  else wb_set_int(L, "value", (lua_Integer)v[0]);
  wb_set_int(L, "raw", (lua_Integer)v[0]);
  wb_set_bool(L, "scaled", sc.scaled);
  wb_set_num(L, "running_fraction", sc.running_fraction);
  wb_set_int(L, "enabled_ns", (lua_Integer)v[1]);
  wb_set_int(L, "running_ns", (lua_Integer)v[2]);
  if (c->user_only) wb_set_bool(L, "user_only", 1);
  return 1;
}

static void push_reading(lua_State *L, struct counter *c) {
  lua_createtable(L, 0, 8);
  wb_set_str(L, "unit", c->def->unit);
  if (c->fd >= 0 && read_counter(L, c)) return;
  wb_set_bool(L, "available", 0);
  wb_set_str(L, "reason", c->reason);
}

/* -- t = c:read() : an ordered table event name -> {available = true, value, unit ("ns" or
 * "count"), scaled, running_fraction, raw, enabled_ns, running_ns, user_only?} or {available =
 * false, reason, unit}. A multiplexed event (running < enabled) is scaled: value = raw * enabled
 * / running, scaled = true. user_only: counted with exclude_kernel (unprivileged). */
static int l_read(lua_State *L) {
  counters *cs = check_counters(L);
  wb_ordered_new(L);
  for (int i = 0; i < cs->n; i++) {
    lua_pushstring(L, cs->c[i].def->name);
    push_reading(L, &cs->c[i]);
    wb_ordered_set(L, -3);
  }
  return 1;
}

static int set_enabled(lua_State *L, unsigned long request) {
  counters *cs = check_counters(L);
  for (int i = 0; i < cs->n; i++)
    if (cs->c[i].fd >= 0) ioctl(cs->c[i].fd, request, 0);
  return 0;
}

/* -- c:enable() : starts counting now (for counters opened with enable_on_exec = false) */
static int l_enable(lua_State *L) { return set_enabled(L, PERF_EVENT_IOC_ENABLE); }

/* -- c:disable() : stops counting; read() still returns the totals */
static int l_disable(lua_State *L) { return set_enabled(L, PERF_EVENT_IOC_DISABLE); }

/* -- c:close() : releases the events; idempotent (also __gc, __close) */
static int l_close(lua_State *L) {
  counters *cs = luaL_checkudata(L, 1, COUNTERS_MT);
  for (int i = 0; i < cs->n; i++)
    if (cs->c[i].fd >= 0) close(cs->c[i].fd);
  cs->n = 0;
  cs->closed = 1;
  return 0;
}

static int l_tostring(lua_State *L) {
  counters *cs = luaL_checkudata(L, 1, COUNTERS_MT);
  if (cs->closed) lua_pushliteral(L, "wb.perf.counters (closed)");
  else lua_pushfstring(L, "wb.perf.counters (%d events)", cs->n);
  return 1;
}

/* -- list = wb.perf.events() : {name, kind = "software"|"hardware", unit} for every known event */
static int l_events(lua_State *L) {
  lua_createtable(L, (int)NDEFS, 0);
  for (size_t i = 0; i < NDEFS; i++) {
    lua_createtable(L, 0, 3);
    wb_set_str(L, "name", event_defs[i].name);
    wb_set_str(L, "kind", event_defs[i].type == PERF_TYPE_HARDWARE ? "hardware" : "software");
    wb_set_str(L, "unit", event_defs[i].unit);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* -- n = wb.perf.paranoid() : kernel.perf_event_paranoid (2 when unreadable) */
static int l_paranoid(lua_State *L) {
  lua_pushinteger(L, paranoid());
  return 1;
}

/* -- ok, reason = wb.perf.hardware() : whether hardware events can be opened here, else why */
static int l_hardware(lua_State *L) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_INSTRUCTIONS;
  a.disabled = 1;
  a.exclude_kernel = a.exclude_hv = 1;
  int fd = wb_perf_open(&a, 0, -1, -1);
  if (fd >= 0) {
    close(fd);
    lua_pushboolean(L, 1);
    return 1;
  }
  char reason[200];
  open_reason(PERF_TYPE_HARDWARE, errno, reason, sizeof reason);
  lua_pushboolean(L, 0);
  lua_pushstring(L, reason);
  return 2;
}

static void *warm_main(void *arg) {
  (void)arg;
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.disabled = 1;
  int fd = wb_perf_open(&a, 0, -1, -1);
  if (fd >= 0) close(fd);
  return NULL;
}

/* -- ok = wb.perf.warm() : opens and closes a per-task event on a thread of its own, at once. The
 * first per-task event of the machine (none open for a second) waits out an RCU grace period in
 * the kernel (perf_sched_events: ~10 ms); counters opened soon after on the command then do not.
 * A capture calls it as it starts; false when no thread could be started. */
static int l_warm(lua_State *L) {
  lua_pushboolean(L, wb_thread_start(NULL, warm_main, NULL) == 0);
  return 1;
}

static const luaL_Reg counters_methods[] = {{"close", l_close},   {"disable", l_disable},
                                            {"enable", l_enable}, {"read", l_read},
                                            {NULL, NULL}};

static const luaL_Reg perf_functions[] = {{"counters", l_counters}, {"events", l_events},
                                          {"hardware", l_hardware}, {"paranoid", l_paranoid},
                                          {"sampler", wb_perf_sampler}, {"warm", l_warm}, {NULL, NULL}};

int luaopen_wb_perf(lua_State *L) {
  wb_new_class(L, COUNTERS_MT, counters_methods, NULL, l_close, l_tostring);
  wb_perf_sampler_init(L);
  luaL_newlib(L, perf_functions);
  return 1;
}
