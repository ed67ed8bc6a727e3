/* wb.bpf: the loader of core/bpf/profile.bpf.c (libbpf skeleton, build/profile.skel.h): on-CPU
 * stack sampling and off-CPU time of a process tree. open → configure (map sizes, which programs)
 * → load → attach (a cpu-clock perf event per online CPU for on-CPU, sched_switch for off-CPU,
 * sched_process_fork, _exec and _exit always); then track(pid) the root of the tree, arm() right before the held
 * command is released, stop() when it ended, read() the aggregated stacks. libbpf prints only
 * with verbose. In unwind mode (ustack) drain() walks the ring buffer's stack copies
 * (core/bpf_ustack.c, core/unwind.c) while the command runs. */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf_ustack.h"
#include "opt.h"
#include "perf.h"
#include "internal.h"
#include "profile.h"
#include "profile.skel.h"

#define SESSION_MT "wb.bpf.session"

typedef struct session {
  struct wb_profile *skel;
  int nperf;
  int perf_fds[WB_MAX_CPUS];
  struct bpf_link *perf_links[WB_MAX_CPUS];
  int stopped;
  uint32_t ustack;         /* unwind mode: bytes of user stack per record (0: off) */
  struct ring_buffer *rb;  /* its records, walked and aggregated by us */
  wb_ustacks *us;
} session;

static int verbose_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
  (void)level;
  return vfprintf(stderr, fmt, ap);
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
  (void)level;
  (void)fmt;
  (void)ap;
  return 0;
}

/* The effective capability set of this process (CapEff), 0 when unreadable. */
static unsigned long long effective_caps(void) {
  FILE *f = fopen("/proc/self/status", "re");
  if (!f) return 0;
  char line[256];
  unsigned long long eff = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "CapEff: %llx", &eff) == 1) break;
  fclose(f);
  return eff;
}

enum { CAP_SYS_ADMIN_BIT = 21, CAP_PERFMON_BIT = 38, CAP_BPF_BIT = 39 };

/* NULL when BPF profiling can be tried here, else why not. */
static const char *unavailable_reason(void) {
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return "no kernel BTF (/sys/kernel/btf/vmlinux): the kernel lacks CONFIG_DEBUG_INFO_BTF";
  if (geteuid() == 0) return NULL;
  unsigned long long caps = effective_caps(), bpf = (1ULL << CAP_BPF_BIT) | (1ULL << CAP_PERFMON_BIT);
  if (!((caps >> CAP_SYS_ADMIN_BIT) & 1) && (caps & bpf) != bpf)
    return "needs root or CAP_BPF+CAP_PERFMON (unprivileged BPF is disabled)";
  return NULL;
}

/* -- ok, reason = wb.bpf.available() : whether a BPF capture can be tried (kernel BTF present,
 * root or CAP_BPF+CAP_PERFMON), else false and why. Loading can still fail; open() says why. */
static int l_available(lua_State *L) {
  const char *why = unavailable_reason();
  lua_pushboolean(L, why == NULL);
  if (!why) return 1;
  lua_pushstring(L, why);
  return 2;
}

static void stop(session *s) {
  for (int i = 0; i < s->nperf; i++) {
    bpf_link__destroy(s->perf_links[i]);
    if (s->perf_fds[i] >= 0) close(s->perf_fds[i]);
  }
  s->nperf = 0;
  if (s->skel) wb_profile__detach(s->skel);
  s->stopped = 1;
}

static void free_ustacks(session *s) {
  ring_buffer__free(s->rb);
  s->rb = NULL;
  wb_ustacks_free(s->us);
  s->us = NULL;
}

/* Unloads what was set up and pushes nil, "bpf: what: ...", errno. */
static int fail(lua_State *L, session *s, int e, const char *what) {
  if (e < 0) e = -e;
  stop(s);
  free_ustacks(s);
  wb_profile__destroy(s->skel);
  s->skel = NULL;
  if (e == EPERM || e == EACCES) {
    lua_pushnil(L);
    lua_pushfstring(L, "bpf: %s: %s (needs root or CAP_BPF+CAP_PERFMON)", what, strerror(e));
    lua_pushinteger(L, e);
    return 3;
  }
  char buf[128];
  snprintf(buf, sizeof buf, "bpf: %s", what);
  return wb_push_error(L, e, buf);
}

static int on_record(void *ctx, void *data, size_t size) { return wb_ustacks_handle(ctx, data, size); }

/* Puts a CPython process into the program's py_procs (pp NULL: takes it out). */
static int py_install(void *ctx, uint32_t tgid, const struct wb_py_proc *pp) {
  session *s = ctx;
  int fd = bpf_map__fd(s->skel->maps.py_procs);
  return pp ? bpf_map_update_elem(fd, &tgid, pp, BPF_ANY) : bpf_map_delete_elem(fd, &tgid);
}

static int attach_oncpu(session *s, lua_Integer freq) {
  int cpus[WB_MAX_CPUS];
  int ncpu = wb_online_cpus(cpus, WB_MAX_CPUS);
  for (int i = 0; i < ncpu; i++) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.freq = 1;
    a.sample_freq = (uint64_t)freq;
    int fd = wb_perf_open(&a, -1, cpus[i], -1);
    if (fd < 0) return -errno;
    s->perf_fds[s->nperf] = fd;
    s->perf_links[s->nperf++] = NULL;
    struct bpf_link *link = bpf_program__attach_perf_event(s->skel->progs.on_cpu, fd);
    if (!link) return -errno;
    s->perf_links[s->nperf - 1] = link;
  }
  return 0;
}

/* -- s, err, errno = wb.bpf.open([opts]) : loads and attaches the programs. opts: freq = 99
 * (on-CPU samples per second per CPU), oncpu = true, offcpu = true, stack_entries = 16384 (stack
 * map size), count_entries = 16384 (distinct stacks kept per kind), verbose = false (libbpf's
 * messages on stderr), ustack = 0 (unwind mode: > 0 sends the user registers and this many bytes
 * of user stack, a multiple of 8 in 512..16376, of each on-CPU sample and switch-out through a
 * ring buffer, walked with CFI as s:drain() reads them), python = true (unwind mode: the Python
 * frames of CPython 3.11+ processes are read with each record, see s:read()). nil, "bpf: ...", errno when BTF,
 * privilege or the kernel refuses. */
static int l_open(lua_State *L) {
  int t = wb_opt_table(L, 1);
  lua_Integer freq = wb_opt_int(L, t, "freq", 99, 1, 100000);
  lua_Integer stack_entries = wb_opt_int(L, t, "stack_entries", 16384, 64, 1 << 22);
  lua_Integer count_entries = wb_opt_int(L, t, "count_entries", 16384, 64, 1 << 22);
  int oncpu = wb_opt_bool(L, t, "oncpu", 1), offcpu = wb_opt_bool(L, t, "offcpu", 1);
  int python = wb_opt_bool(L, t, "python", 1);
  lua_Integer ustack = wb_opt_integer(L, t, "ustack", 0);
  luaL_argcheck(L, ustack == 0 || (ustack >= 512 && ustack < WB_USTACK_MAX && ustack % 8 == 0), 1,
                "ustack must be 0 or a multiple of 8 in 512..16376");
  libbpf_set_print(wb_opt_bool(L, t, "verbose", 0) ? verbose_print : quiet_print);
  session *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, SESSION_MT);
  const char *why = unavailable_reason();
  if (why) {
    lua_pushnil(L);
    lua_pushfstring(L, "bpf: %s", why);
    lua_pushinteger(L, EPERM);
    return 3;
  }
  s->skel = wb_profile__open();
  if (!s->skel) return wb_push_error(L, errno, "bpf: open");
  bpf_map__set_max_entries(s->skel->maps.stacks, (uint32_t)stack_entries);
  bpf_map__set_max_entries(s->skel->maps.oncpu_counts, (uint32_t)count_entries);
  bpf_map__set_max_entries(s->skel->maps.offcpu_counts, (uint32_t)count_entries);
  bpf_program__set_autoload(s->skel->progs.on_cpu, oncpu);
  bpf_program__set_autoload(s->skel->progs.on_switch, offcpu);
  s->ustack = (uint32_t)ustack;
  s->skel->rodata->ustack_size = s->ustack;
  if (ustack) bpf_map__set_max_entries(s->skel->maps.ustacks, 16u << 20);
  int e = wb_profile__load(s->skel);
  if (e) return fail(L, s, e, "load");
  if (ustack && !(s->us = wb_ustacks_new())) return fail(L, s, ENOMEM, "unwinder");
  if (ustack && python) wb_ustacks_python(s->us, py_install, s);
  if (ustack && !(s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.ustacks), on_record, s->us, NULL)))
    return fail(L, s, errno, "ring buffer");
  s->skel->links.on_fork = bpf_program__attach(s->skel->progs.on_fork);
  if (!s->skel->links.on_fork) return fail(L, s, errno, "attach sched_process_fork");
  if (!(s->skel->links.on_exec = bpf_program__attach(s->skel->progs.on_exec)))
    return fail(L, s, errno, "attach sched_process_exec");
  if (!(s->skel->links.on_exit = bpf_program__attach(s->skel->progs.on_exit)))
    return fail(L, s, errno, "attach sched_process_exit");
  if (offcpu && !(s->skel->links.on_switch = bpf_program__attach(s->skel->progs.on_switch)))
    return fail(L, s, errno, "attach sched_switch");
  if (oncpu && (e = attach_oncpu(s, freq)) != 0) return fail(L, s, e, "attach cpu-clock sampling");
  return 1;
}

/* -- n = s:drain() : walks the pending user-stack records (unwind mode; call it periodically while
 * the target runs: the ring buffer is 16 MiB); how many there were, 0 when not in unwind mode */
static int l_drain(lua_State *L);

static session *check_session(lua_State *L) {
  session *s = luaL_checkudata(L, 1, SESSION_MT);
  if (!s->skel) luaL_error(L, "wb.bpf session is closed");
  return s;
}

/* -- ok, err, errno = s:track(pid) : adds a process (and, from now on, whatever it forks) */
static int l_track(lua_State *L) {
  session *s = check_session(L);
  uint32_t pid = (uint32_t)luaL_checkinteger(L, 2);
  uint8_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.tracked), &pid, &one, BPF_ANY) != 0)
    return wb_push_error(L, errno, "bpf: track");
  lua_pushboolean(L, 1);
  return 1;
}

/* -- ok = s:python(pid) : looks at pid now as a CPython whose frames the program reads (unwind mode
 * with python; otherwise processes are looked at as their records are drained); whether it is
 * one. Call it as the command starts, so that its first samples have their Python frames. */
static int l_python(lua_State *L) {
  session *s = check_session(L);
  uint32_t pid = (uint32_t)luaL_checkinteger(L, 2);
  lua_pushboolean(L, s->us && wb_ustacks_python_attach(s->us, pid));
  return 1;
}

/* -- s:arm() : counting starts now; call it right before releasing the held command, so the
 * wait at the gate is not counted */
static int l_arm(lua_State *L) {
  session *s = check_session(L);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s->skel->bss->armed_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
  return 0;
}

/* -- s:stop() : detaches every program; the maps stay readable */
static int l_stop(lua_State *L) {
  session *s = check_session(L);
  if (!s->stopped) stop(s);
  return 0;
}

static int l_drain(lua_State *L) {
  session *s = check_session(L);
  if (s->us) wb_unwinder_next_epoch(wb_ustacks_unwinder(s->us));
  if (s->us) wb_ustacks_next_epoch(s->us);
  int n = s->rb ? ring_buffer__consume(s->rb) : 0;
  lua_pushinteger(L, n > 0 ? n : 0);
  return 1;
}

/* Pushes stack `id` as a list of addresses (leaf first), cached by id in the table at `cache`. */
static void push_stack(lua_State *L, int stacks_fd, int32_t id, int cache) {
  if (id < 0) {
    lua_newtable(L);
    return;
  }
  if (lua_rawgeti(L, cache, id) != LUA_TNIL) return;
  lua_pop(L, 1);
  uint64_t ips[WB_BPF_MAX_FRAMES] = {0};
  lua_createtable(L, 16, 0);
  if (bpf_map_lookup_elem(stacks_fd, &id, ips) == 0)
    for (int i = 0; i < WB_BPF_MAX_FRAMES && ips[i]; i++) {
      lua_pushinteger(L, (lua_Integer)ips[i]);
      lua_rawseti(L, -2, i + 1);
    }
  lua_pushvalue(L, -1);
  lua_rawseti(L, cache, id);
}

static void push_counts(lua_State *L, session *s, struct bpf_map *map, int cache) {
  int fd = bpf_map__fd(map), stacks_fd = bpf_map__fd(s->skel->maps.stacks);
  static const char *const kinds[] = {"oncpu", "blocked", "runqueue"};
  struct wb_stack_key key, next;
  int n = 0, more = bpf_map_get_next_key(fd, NULL, &next) == 0;
  lua_newtable(L);
  while (more) {
    key = next;
    more = bpf_map_get_next_key(fd, &key, &next) == 0;
    uint64_t count;
    if (bpf_map_lookup_elem(fd, &key, &count) != 0) continue;
    lua_createtable(L, 0, 6);
    wb_set_int(L, "pid", key.tgid);
    char comm[WB_COMM_LEN + 1] = {0};
    memcpy(comm, key.comm, WB_COMM_LEN);
    lua_pushstring(L, comm);
    lua_setfield(L, -2, "comm");
    lua_pushstring(L, key.kind < 3 ? kinds[key.kind] : "?");
    lua_setfield(L, -2, "kind");
    push_stack(L, stacks_fd, key.user_stack_id, cache);
    lua_setfield(L, -2, "user");
    push_stack(L, stacks_fd, key.kern_stack_id, cache);
    lua_setfield(L, -2, "kernel");
    wb_set_int(L, "count", (lua_Integer)count);
    lua_rawseti(L, -2, ++n);
  }
}

/* Sets python = {{frames of one _PyEval_EvalFrameDefault call, innermost first}, ... innermost
 * first}, python_truncated, gil_wait on the record table at the top. */
static void push_python(lua_State *L, session *s, const wb_ustack_entry *e, const uint64_t *items) {
  const wb_pyres *r = wb_ustacks_pyres(s->us);
  lua_newtable(L);
  int groups = 0, k = 0;
  for (uint32_t i = 0; i < e->np; i++) {
    if (items[i] == WB_PY_GROUP_END) {
      if (k) lua_rawseti(L, -2, ++groups);
      k = 0;
      continue;
    }
    if (!k) lua_newtable(L);
    lua_pushstring(L, wb_pyres_text(r, (uint32_t)items[i]));
    lua_rawseti(L, -2, ++k);
  }
  if (k) lua_rawseti(L, -2, ++groups);
  lua_setfield(L, -2, "python");
  if (e->py & WB_PYF_TRUNCATED) wb_set_bool(L, "python_truncated", 1);
  if (e->py & WB_PY_GIL_WAIT) wb_set_bool(L, "gil_wait", 1);
}

/* The aggregated stacks of unwind mode: on-CPU (kind 0) or off-CPU, as push_counts does. */
static void push_ustacks(lua_State *L, session *s, int offcpu, int cache) {
  static const char *const kinds[] = {"oncpu", "blocked", "runqueue"};
  int stacks_fd = bpf_map__fd(s->skel->maps.stacks), n = 0;
  size_t count;
  const wb_ustack_entry *e = wb_ustacks_entries(s->us, &count);
  const uint64_t *pool = wb_ustacks_pool(s->us);
  lua_newtable(L);
  for (size_t i = 0; i < count; i++) {
    if ((e[i].kind != WB_KIND_ONCPU) != offcpu || e[i].count == 0) continue;
    lua_createtable(L, 0, 6);
    wb_set_int(L, "pid", e[i].tgid);
    char comm[WB_COMM_LEN + 1] = {0};
    memcpy(comm, e[i].comm, WB_COMM_LEN);
    wb_set_str(L, "comm", comm);
    wb_set_str(L, "kind", e[i].kind < 3 ? kinds[e[i].kind] : "?");
    lua_createtable(L, (int)e[i].nu, 0);
    for (uint32_t k = 0; k < e[i].nu; k++) {
      lua_pushinteger(L, (lua_Integer)pool[e[i].pcs + k]);
      lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "user");
    push_stack(L, stacks_fd, e[i].kern_stack_id, cache);
    lua_setfield(L, -2, "kernel");
    wb_set_int(L, "count", (lua_Integer)e[i].count);
    if (e[i].py & WB_PYF_PROCESS) push_python(L, s, &e[i], pool + e[i].pcs + e[i].nu);
    lua_rawseti(L, -2, ++n);
  }
}

/* -- t = s:read() : {oncpu = {{pid, comm, kind = "oncpu", user = {addrs, leaf first}, kernel =
 * {addrs}, count (samples)}}, offcpu = {... kind = "blocked"|"runqueue", count (ns)}, pids =
 * {tracked process ids}, stats = {samples, lost_samples, oncpu_stack_errors, switches,
 * lost_switches, offcpu_stack_errors, forks}}: lost_* were not counted for a full map,
 * *_stack_errors are events whose stack the stack map could not take, full or a hash collision
 * (counted without it). In unwind mode (after a last drain) the user stacks were walked with CFI,
 * and t.unwind holds the walk statistics (wb.unwind's u:stats(), stack_bytes, stack_size);
 * stats.lost_ustacks counts records the ring buffer had no room for. With python, a record of a
 * CPython process also has python = {{"func (file.py:12)", ... the frames one
 * _PyEval_EvalFrameDefault call runs, innermost first}, ... innermost call first} (read at the
 * instant of the sample; each frame at the line it executes), python_truncated when its chain was
 * cut, gil_wait when it was switched out waiting for the GIL; and t.python = {processes = {{pid,
 * version, binary}}, skipped = {{pid, image, reason}}, records (that carried Python frames)}. */
static int l_read(lua_State *L) {
  session *s = check_session(L);
  if (s->rb) ring_buffer__consume(s->rb);
  lua_newtable(L);
  int cache = lua_gettop(L);
  lua_createtable(L, 0, 5);
  if (s->us) push_ustacks(L, s, 0, cache);
  else push_counts(L, s, s->skel->maps.oncpu_counts, cache);
  lua_setfield(L, -2, "oncpu");
  if (s->us) push_ustacks(L, s, 1, cache);
  else push_counts(L, s, s->skel->maps.offcpu_counts, cache);
  lua_setfield(L, -2, "offcpu");
  if (s->us) {
    wb_unwind_push_stats(L, wb_ustacks_unwinder(s->us));
    wb_set_int(L, "stack_bytes", (lua_Integer)wb_ustacks_bytes(s->us));
    wb_set_int(L, "stack_size", (lua_Integer)s->ustack);
    lua_setfield(L, -2, "unwind");
  }
  if (s->us && wb_ustacks_pyres(s->us)) {
    lua_createtable(L, 0, 3);
    wb_pyres_push_procs(L, wb_ustacks_pyres(s->us));
    wb_set_int(L, "records", (lua_Integer)wb_ustacks_py_records(s->us));
    lua_setfield(L, -2, "python");
  }
  int tfd = bpf_map__fd(s->skel->maps.tracked), n = 0;
  uint32_t pid, next;
  lua_newtable(L);
  for (int more = bpf_map_get_next_key(tfd, NULL, &next) == 0; more;) {
    pid = next;
    more = bpf_map_get_next_key(tfd, &pid, &next) == 0;
    lua_pushinteger(L, pid);
    lua_rawseti(L, -2, ++n);
  }
  lua_setfield(L, -2, "pids");
  int ncpu = libbpf_num_possible_cpus();
  uint64_t *vals = calloc(ncpu > 0 ? (size_t)ncpu : 1, sizeof *vals);
  static const char *const names[WB_NSTATS] = {"samples",  "lost_samples",  "oncpu_stack_errors",
                                               "switches", "lost_switches", "offcpu_stack_errors",
                                               "forks", "lost_ustacks"};
  lua_createtable(L, 0, WB_NSTATS);
  for (uint32_t k = 0; vals && k < WB_NSTATS; k++) {
    uint64_t sum = 0;
    if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &k, vals) == 0)
      for (int c = 0; c < ncpu; c++) sum += vals[c];
    wb_set_int(L, names[k], (lua_Integer)sum);
  }
  free(vals);
  lua_setfield(L, -2, "stats");
  return 1;
}

/* -- s:close() : detaches and unloads; idempotent (also __gc, __close) */
static int l_close(lua_State *L) {
  session *s = luaL_checkudata(L, 1, SESSION_MT);
  if (!s->stopped) stop(s);
  free_ustacks(s);
  wb_profile__destroy(s->skel);
  s->skel = NULL;
  return 0;
}

static int l_tostring(lua_State *L) {
  session *s = luaL_checkudata(L, 1, SESSION_MT);
  lua_pushstring(L, !s->skel ? "wb.bpf.session (closed)" : s->stopped ? "wb.bpf.session (stopped)"
                                                                       : "wb.bpf.session (attached)");
  return 1;
}

static const luaL_Reg session_methods[] = {{"arm", l_arm},     {"close", l_close}, {"drain", l_drain}, {"python", l_python}, {"read", l_read},
                                           {"stop", l_stop},   {"track", l_track}, {NULL, NULL}};

static const luaL_Reg bpf_functions[] = {{"available", l_available}, {"open", l_open}, {NULL, NULL}};

int luaopen_wb_bpf(lua_State *L) {
  wb_new_class(L, SESSION_MT, session_methods, NULL, l_close, l_tostring);
  luaL_newlib(L, bpf_functions);
  return 1;
}
