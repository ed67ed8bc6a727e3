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
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf_backlog.h"
#include "bpf_btf.h"
#include "bpf_ustack.h"
#include "opt.h"
#include "perf.h"
#include "internal.h"
#include "profile.h"
#include "profile.skel.h"
#include "ticker.h"
#include "wb.h"

#define SESSION_MT "wb.bpf.session"
#define BACKLOG_MAX ((size_t)256 << 20) /* records drained from the ring but not yet walked */

/* What open() was asked for: read from Lua before the load, used by it (maybe on its thread). */
typedef struct load_opts {
  lua_Integer freq, stack_entries, count_entries, ring_mib, timeline_mib;
  int oncpu, offcpu, python, wakes;
  uint32_t ustack;
  char btf[4200]; /* the BTF the programs are relocated against ("": the kernel's own) */
} load_opts;

typedef struct session {
  load_opts opt;
  int loading;            /* async: the loader thread runs or has not been joined */
  int pending;            /* async: ready() has not yet said true */
  pthread_t loader;
  int load_err;           /* after the load: 0, or the errno of what failed ... */
  const char *load_what;  /* ... and its name */
  char btf_err[4400];     /* why opt.btf could not be used (the load then used the kernel's BTF) */
  struct wb_profile *skel;
  int nperf;
  int perf_fds[WB_MAX_CPUS];
  struct bpf_link *perf_links[WB_MAX_CPUS];
  int stopped;
  uint32_t ustack;         /* unwind mode: bytes of user stack per record (0: off) */
  struct ring_buffer *rb;  /* its records, copied into backlog as drained ... */
  wb_backlog *backlog;
  wb_ustacks *us;          /* ... and walked and aggregated here, in order */
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
  wb_backlog_free(s->backlog);
  s->backlog = NULL;
  wb_ustacks_free(s->us);
  s->us = NULL;
}

/* Unloads whatever was set up. */
static void teardown(session *s) {
  stop(s);
  free_ustacks(s);
  wb_profile__destroy(s->skel);
  s->skel = NULL;
}

/* Pushes nil, "bpf: what: ...", errno for a failed load. */
static int push_load_error(lua_State *L, int e, const char *what) {
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

/* The backlog's oldest record walked and aggregated; 0 when there is none. */
static int handle_oldest(session *s) {
  size_t size;
  const void *rec = wb_backlog_front(s->backlog, &size);
  if (!rec) return 0;
  wb_ustacks_handle(s->us, rec, size);
  wb_backlog_pop(s->backlog);
  return 1;
}

/* A record of the ring: into the backlog; when the backlog is full, its oldest are handled first
 * (the order of the records is kept; past BACKLOG_MAX the drain is as slow as the walks). */
static int on_record(void *ctx, void *data, size_t size) {
  session *s = ctx;
  wb_ustacks_prime(s->us, data, size);
  while (wb_backlog_push(s->backlog, data, size) != 0)
    if (!handle_oldest(s)) return wb_ustacks_handle(s->us, data, size); /* out of memory */
  return 0;
}

/* Empties the ring into the backlog and walks the records the backlog held then (all: until both
 * are empty; budget_ns > 0: until that much time has passed), emptying the ring again every 64
 * walks, so that the ring keeps room while wb walks (on a busy machine the walks may take longer
 * than the ring lasts). The records read from the ring. */
static int drain(session *s, int all, int64_t budget_ns) {
  if (!s->rb) return 0;
  int64_t until = budget_ns > 0 ? wb_clock_ns() + budget_ns : 0;
  int n = ring_buffer__consume(s->rb), m;
  size_t todo = wb_backlog_count(s->backlog);
  for (size_t i = 0; (all || i < todo) && handle_oldest(s); i++) {
    if ((i & 63) == 63 && (m = ring_buffer__consume(s->rb)) > 0) n += m;
    if (until && wb_clock_ns() >= until) break;
  }
  if (all && (m = ring_buffer__consume(s->rb)) > 0) {
    n += m;
    while (handle_oldest(s)) {}
  }
  return n > 0 ? n : 0;
}

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

/* Tells the unwinder where the JIT-compiled code of the session's programs is (every function
 * of each: bpf_loop callbacks are functions of their own), so that the kernel stacks the programs
 * take from inside themselves start at the code they interrupted, not in wb's own frames. */
static void tell_own_code(session *s) {
  struct bpf_program *prog;
  bpf_object__for_each_program(prog, s->skel->obj) {
    int fd = bpf_program__fd(prog);
    if (fd < 0) continue;
    uint64_t addrs[64];
    uint32_t lens[64];
    struct bpf_prog_info info;
    uint32_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0 || info.nr_jited_ksyms == 0) continue;
    uint32_t n = info.nr_jited_ksyms < 64 ? info.nr_jited_ksyms : 64;
    memset(&info, 0, sizeof info);
    info.nr_jited_ksyms = n, info.nr_jited_func_lens = n;
    info.jited_ksyms = (uint64_t)(uintptr_t)addrs, info.jited_func_lens = (uint64_t)(uintptr_t)lens;
    len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
    for (uint32_t i = 0; i < n && i < info.nr_jited_ksyms; i++) wb_ustacks_own_code(s->us, addrs[i], lens[i]);
  }
}

/* The ring buffer of unwind mode: room for 4x what every CPU's samples write between two drains
 * (0.05 s apart, lua/wb/capture.lua) at full records, 8 MiB at least (switch-outs are not bounded
 * by the rate: the floor holds some 900 full ones per drain, 18,000 a second; allocating the
 * pages costs ~0.5 ms per MiB at each load), 256 MiB at most; or opts.ring_mib. */
static uint32_t ring_bytes(const load_opts *o) {
  if (o->ring_mib > 0) return (uint32_t)o->ring_mib << 20;
  int ncpu = libbpf_num_possible_cpus();
  double need = 4.0 * (ncpu > 0 ? ncpu : 1) * (double)o->freq * 0.05 *
                (double)(o->ustack + sizeof(struct wb_ustack) - WB_USTACK_MAX);
  uint32_t bytes = 8u << 20;
  while (bytes < need && bytes < (256u << 20)) bytes <<= 1;
  return bytes;
}

/* Records a failed step of load(): 0 is returned by load() when nothing failed. */
static int load_failed(session *s, int e, const char *what) {
  s->load_err = e < 0 ? -e : e ? e : EINVAL;
  s->load_what = what;
  teardown(s);
  return s->load_err;
}

/* Opens, sizes and loads the programs as s->opt says, relocated against the BTF at btf (NULL:
 * the kernel's); 0, or the errno of the step that failed with *what naming it. */
static int open_load(session *s, const char *btf, const char **what) {
  const load_opts *o = &s->opt;
  LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf);
  *what = "open";
  s->skel = wb_profile__open_opts(&oo);
  if (!s->skel) return errno ? errno : EINVAL;
  /* unwind mode sends every stack through the ring buffer: the stack and count maps go unused */
  s->ustack = o->ustack;
  bpf_map__set_max_entries(s->skel->maps.stacks, s->ustack ? 1 : (uint32_t)o->stack_entries);
  bpf_map__set_max_entries(s->skel->maps.oncpu_counts, s->ustack ? 1 : (uint32_t)o->count_entries);
  bpf_map__set_max_entries(s->skel->maps.offcpu_counts, s->ustack ? 1 : (uint32_t)o->count_entries);
  bpf_program__set_autoload(s->skel->progs.on_cpu, o->oncpu);
  bpf_program__set_autoload(s->skel->progs.on_switch, o->offcpu);
  int wakes = o->offcpu && o->wakes;
  bpf_program__set_autoload(s->skel->progs.on_waking, wakes);
  bpf_program__set_autoload(s->skel->progs.on_wakeup_new, wakes);
  struct bpf_program *irq_progs[] = {s->skel->progs.on_irq_entry, s->skel->progs.on_irq_exit,
                                     s->skel->progs.on_softirq_entry, s->skel->progs.on_softirq_exit,
                                     s->skel->progs.on_hrtimer_entry, s->skel->progs.on_hrtimer_exit};
  for (size_t i = 0; i < sizeof irq_progs / sizeof *irq_progs; i++)
    bpf_program__set_autoload(irq_progs[i], wakes && o->ustack);
  s->skel->rodata->ustack_size = s->ustack;
  if (s->ustack) bpf_map__set_max_entries(s->skel->maps.ustacks, ring_bytes(o));
  *what = "load";
  int e = wb_profile__load(s->skel);
  return e < 0 ? -e : e;
}

/* The interrupt entry and exit programs (the wake-ups they bracket are not their `current`'s):
 * the exits first, so that no handler entered meanwhile leaves its CPU counted as in one. */
static int attach_irq(session *s) {
  struct wb_profile *k = s->skel;
  return !(k->links.on_irq_exit = bpf_program__attach(k->progs.on_irq_exit)) ||
                 !(k->links.on_softirq_exit = bpf_program__attach(k->progs.on_softirq_exit)) ||
                 !(k->links.on_hrtimer_exit = bpf_program__attach(k->progs.on_hrtimer_exit)) ||
                 !(k->links.on_irq_entry = bpf_program__attach(k->progs.on_irq_entry)) ||
                 !(k->links.on_softirq_entry = bpf_program__attach(k->progs.on_softirq_entry)) ||
                 !(k->links.on_hrtimer_entry = bpf_program__attach(k->progs.on_hrtimer_entry))
             ? -1
             : 0;
}

/* Opens, sizes, loads and attaches the programs as s->opt says; touches no Lua state (it may run
 * on the loader thread). A BTF file (s->opt.btf) that does not serve is dropped for the kernel's
 * own, and why is kept in s->btf_err. 0, or the errno of the step that failed (load_failed). */
static int load(session *s) {
  const load_opts *o = &s->opt;
  const char *what;
  int e = open_load(s, o->btf[0] ? o->btf : NULL, &what);
  if (e && o->btf[0]) {
    char msg[128];
    libbpf_strerror(e, msg, sizeof msg);
    snprintf(s->btf_err, sizeof s->btf_err, "%s: %s: %s", o->btf, what, msg);
    wb_profile__destroy(s->skel);
    s->skel = NULL;
    e = open_load(s, NULL, &what);
  }
  if (e) return load_failed(s, e, what);
  if (s->ustack && !(s->us = wb_ustacks_new())) return load_failed(s, ENOMEM, "unwinder");
  int wakes = o->offcpu && o->wakes;
  if (wakes && s->us && o->timeline_mib && wb_ustacks_timeline(s->us, (size_t)o->timeline_mib << 20) != 0)
    return load_failed(s, ENOMEM, "timeline");
  if (s->us) tell_own_code(s);
  if (s->ustack && o->python) wb_ustacks_python(s->us, py_install, s);
  if (s->ustack && !(s->backlog = wb_backlog_new(BACKLOG_MAX))) return load_failed(s, ENOMEM, "backlog");
  if (s->ustack && !(s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.ustacks), on_record, s, NULL)))
    return load_failed(s, errno, "ring buffer");
  if (!(s->skel->links.on_fork = bpf_program__attach(s->skel->progs.on_fork)))
    return load_failed(s, errno, "attach sched_process_fork");
  if (!(s->skel->links.on_exec = bpf_program__attach(s->skel->progs.on_exec)))
    return load_failed(s, errno, "attach sched_process_exec");
  if (!(s->skel->links.on_exit = bpf_program__attach(s->skel->progs.on_exit)))
    return load_failed(s, errno, "attach sched_process_exit");
  if (o->offcpu && !(s->skel->links.on_switch = bpf_program__attach(s->skel->progs.on_switch)))
    return load_failed(s, errno, "attach sched_switch");
  if (wakes && !(s->skel->links.on_waking = bpf_program__attach(s->skel->progs.on_waking)))
    return load_failed(s, errno, "attach sched_waking");
  if (wakes && !(s->skel->links.on_wakeup_new = bpf_program__attach(s->skel->progs.on_wakeup_new)))
    return load_failed(s, errno, "attach sched_wakeup_new");
  if (wakes && s->us && attach_irq(s) != 0) return load_failed(s, errno, "attach irq tracepoints");
  if (o->oncpu && (e = attach_oncpu(s, o->freq)) != 0) return load_failed(s, e, "attach cpu-clock sampling");
  return 0;
}

static void *loader_main(void *arg) {
  load((session *)arg);
  return NULL;
}

/* Waits for the loader thread of an async open, once. */
static void join_loader(session *s) {
  if (!s->loading) return;
  pthread_join(s->loader, NULL);
  s->loading = 0;
}

/* This boot's cache of the minimal BTF of the programs into out (core/bpf_btf.c); -1 without one. */
static int btf_cache_path(char *out, size_t n) {
  size_t len;
  const void *obj = wb_profile__elf_bytes(&len);
  return wb_btf_path(obj, len, out, n);
}

/* opts.btf into o->btf: nil or true, this boot's cache when it is usable; false, none; a string,
 * that file. */
static void btf_option(lua_State *L, int t, load_opts *o) {
  int type = lua_getfield(L, t, "btf");
  const char *why;
  o->btf[0] = 0;
  if (type == LUA_TSTRING) {
    size_t len;
    const char *path = lua_tolstring(L, -1, &len);
    luaL_argcheck(L, len > 0 && len < sizeof o->btf, 1, "option 'btf': a path expected");
    memcpy(o->btf, path, len + 1);
  } else if (type == LUA_TNIL || (type == LUA_TBOOLEAN && lua_toboolean(L, -1))) {
    if (btf_cache_path(o->btf, sizeof o->btf) != 0 || wb_btf_usable(o->btf, &why) != 0) o->btf[0] = 0;
  } else if (type != LUA_TBOOLEAN) {
    luaL_error(L, "option 'btf': boolean or string expected, got %s", lua_typename(L, type));
  }
  lua_pop(L, 1);
}

/* -- path, why = wb.bpf.btf() : this boot's file of the kernel types the programs need (made by
 * wb.bpf.make_btf()) when there is a usable one, which open() then relocates the programs
 * against instead of parsing all of /sys/kernel/btf/vmlinux (about half of a load); else nil and
 * why not ("not made yet this boot", or why making it failed) */
static int l_btf(lua_State *L) {
  char path[4200];
  const char *why = "no cache directory";
  if (btf_cache_path(path, sizeof path) == 0 && wb_btf_usable(path, &why) == 0) {
    lua_pushstring(L, path);
    return 1;
  }
  lua_pushnil(L);
  lua_pushstring(L, why);
  return 2;
}

/* -- path, err = wb.bpf.make_btf() : makes this boot's file that wb.bpf.btf() names (bpftool gen
 * min_core_btf, some 50 ms; earlier boots' files are removed), unless there is one; its path, or
 * nil and why it could not be made (remembered: later calls of this boot say the same at once) */
static int l_make_btf(lua_State *L) {
  char path[4200], err[512];
  const char *why;
  size_t len;
  const void *obj = wb_profile__elf_bytes(&len);
  if (wb_btf_path(obj, len, path, sizeof path) != 0) {
    lua_pushnil(L);
    lua_pushliteral(L, "bpf: btf: no cache directory or boot id");
    return 2;
  }
  int usable = wb_btf_usable(path, &why);
  if (usable == 0 || (usable < 0 && wb_btf_make(obj, len, path, err, sizeof err) == 0)) {
    lua_pushstring(L, path);
    return 1;
  }
  if (usable > 0) snprintf(err, sizeof err, "%s", why);
  lua_pushnil(L);
  lua_pushfstring(L, "bpf: btf: %s", err);
  return 2;
}

/* -- s, err, errno = wb.bpf.open([opts]) : loads and attaches the programs. opts: freq = 99
 * (on-CPU samples per second per CPU), oncpu = true, offcpu = true, stack_entries = 16384 (stack
 * map size), count_entries = 16384 (distinct stacks kept per kind), verbose = false (libbpf's
 * messages on stderr), ustack = 0 (unwind mode: > 0 sends the user registers and this many bytes
 * of user stack, a multiple of 8 in 512..16376, of each on-CPU sample and switch-out through a
 * ring buffer, walked with CFI as s:drain() reads them), ring_mib = 0 (unwind mode: the ring
 * buffer's size, a power of two; 0: room for 4 drains of samples, 8..256 MiB), python = true
 * (unwind mode: the Python frames of CPython 3.11+ processes are read with each record, see
 * s:read()), async = false (the load, some 20 ms of verifier, BTF and map set-up, runs on a
 * thread of its own: open returns at once and s:ready() waits for it and says whether it worked; no other method may be called
 * before it said true), btf = true (the kernel types the programs are relocated against: true, this
 * boot's file of wb.bpf.btf() when there is one, else the kernel's BTF; false, the kernel's; a
 * path, that file, dropped for the kernel's if it does not serve: s:btf()). nil, "bpf: ...", errno
 * when BTF, privilege or the kernel refuses. wakes = true (with off-CPU time: sched_waking and
 * sched_wakeup_new traced, a blocked interval ends at its wake-up, the rest of it counted as run-queue
 * wait under the same stack; in unwind mode also who woke each tracked thread, for
 * s:critical_path(), with the interrupt entry and exit tracepoints that tell an interrupt's wake-ups
 * apart; false: a blocked interval runs to the switch-in), timeline_mib = 128 (the
 * scheduling timeline kept for it, at most this many MiB; 0: none). */
static int l_open(lua_State *L) {
  int t = wb_opt_table(L, 1);
  load_opts o;
  o.freq = wb_opt_int(L, t, "freq", 99, 1, 100000);
  o.stack_entries = wb_opt_int(L, t, "stack_entries", 16384, 64, 1 << 22);
  o.count_entries = wb_opt_int(L, t, "count_entries", 16384, 64, 1 << 22);
  o.ring_mib = wb_opt_int(L, t, "ring_mib", 0, 0, 2048);
  if (o.ring_mib & (o.ring_mib - 1)) return luaL_error(L, "wb.bpf.open: ring_mib must be a power of two (got %d)",
                                                        (int)o.ring_mib);
  o.timeline_mib = wb_opt_int(L, t, "timeline_mib", 128, 0, 1 << 16);
  o.wakes = wb_opt_bool(L, t, "wakes", 1);
  o.oncpu = wb_opt_bool(L, t, "oncpu", 1);
  o.offcpu = wb_opt_bool(L, t, "offcpu", 1);
  o.python = wb_opt_bool(L, t, "python", 1);
  int async = wb_opt_bool(L, t, "async", 0);
  lua_Integer ustack = wb_opt_integer(L, t, "ustack", 0);
  luaL_argcheck(L, ustack == 0 || (ustack >= 512 && ustack < WB_USTACK_MAX && ustack % 8 == 0), 1,
                "ustack must be 0 or a multiple of 8 in 512..16376");
  o.ustack = (uint32_t)ustack;
  btf_option(L, t, &o);
  libbpf_set_print(wb_opt_bool(L, t, "verbose", 0) ? verbose_print : quiet_print);
  session *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  s->opt = o;
  luaL_setmetatable(L, SESSION_MT);
  const char *why = unavailable_reason();
  if (why) {
    lua_pushnil(L);
    lua_pushfstring(L, "bpf: %s", why);
    lua_pushinteger(L, EPERM);
    return 3;
  }
  if (async && wb_thread_start(&s->loader, loader_main, s) == 0) {
    s->loading = s->pending = 1; /* the userdata stays put: __gc joins the loader before it is freed */
    return 1;
  }
  if (load(s)) return push_load_error(L, s->load_err, s->load_what);
  return 1;
}

/* -- ok, err, errno = s:ready() : waits for the load of an async open; true when the programs are
 * attached, else nil, "bpf: ...", errno as open would have said (the session is then closed).
 * At once for a session opened without async. */
static int l_ready(lua_State *L) {
  session *s = luaL_checkudata(L, 1, SESSION_MT);
  join_loader(s);
  if (s->load_err) return push_load_error(L, s->load_err, s->load_what);
  if (!s->skel) luaL_error(L, "wb.bpf session is closed");
  s->pending = 0;
  lua_pushboolean(L, 1);
  return 1;
}

/* -- path, err, refused = s:btf() : the BTF file the programs were relocated against, or "kernel"
 * (all of /sys/kernel/btf/vmlinux); when the file asked for (opts.btf, or this boot's cache) did
 * not serve, "kernel", why, and that file */
static int l_session_btf(lua_State *L);

/* -- n, left = s:drain([seconds]) : empties the ring buffer of user-stack records into wb's memory
 * and walks them (unwind mode; call it periodically while the target runs: the ring buffer holds
 * 0.2 s of samples at full records, 8 MiB at least; the backlog 256 MiB more); with seconds, walks
 * for at most that long (by the clock: the caller's wait on the target is not held up behind a
 * long backlog), else every record there was. How many records came from the ring, and how many
 * wait to be walked (0 when not in unwind mode). */
static int l_drain(lua_State *L);

static session *check_session(lua_State *L) {
  session *s = luaL_checkudata(L, 1, SESSION_MT);
  if (s->pending) luaL_error(L, "wb.bpf session is loading: call s:ready() first");
  if (!s->skel) luaL_error(L, "wb.bpf session is closed");
  return s;
}

static int l_session_btf(lua_State *L) {
  session *s = check_session(L);
  if (s->opt.btf[0] && !s->btf_err[0]) lua_pushstring(L, s->opt.btf);
  else lua_pushliteral(L, "kernel");
  if (!s->btf_err[0]) return 1;
  lua_pushstring(L, s->btf_err);
  lua_pushstring(L, s->opt.btf);
  return 3;
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

/* -- pids = s:deferred() : unwind mode: the processes whose records wait for their mappings (they
 * exited before their first records were drained, so /proc no longer had them); give them with
 * s:fork, s:exec and s:add_map (the side-band records, in time order) before s:read(), which walks
 * them. {} otherwise. */
static int l_deferred(lua_State *L) {
  session *s = check_session(L);
  size_t max = s->us ? wb_ustacks_deferred_count(s->us) : 0, n = 0;
  uint32_t *pids = lua_newuserdatauv(L, (max ? max : 1) * sizeof *pids, 0); /* collected: nothing leaks */
  if (max) n = wb_ustacks_deferred_pids(s->us, pids, max);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushinteger(L, pids[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* -- s:add_map(pid, addr, len, pgoff, path [, build_id]), s:fork(child, parent), s:exec(pid) :
 * unwind mode: the mappings of a process, for its deferred records (see s:deferred) */
static int l_add_map(lua_State *L) {
  session *s = check_session(L);
  if (s->us)
    wb_unwinder_add_map(wb_ustacks_unwinder(s->us), (int)luaL_checkinteger(L, 2), (uint64_t)luaL_checkinteger(L, 3),
                        (uint64_t)luaL_checkinteger(L, 4), (uint64_t)luaL_checkinteger(L, 5), luaL_checkstring(L, 6),
                        luaL_optstring(L, 7, NULL));
  return 0;
}

static int l_fork(lua_State *L) {
  session *s = check_session(L);
  if (s->us)
    wb_unwinder_fork(wb_ustacks_unwinder(s->us), (int)luaL_checkinteger(L, 2), (int)luaL_checkinteger(L, 3));
  return 0;
}

static int l_exec(lua_State *L) {
  session *s = check_session(L);
  if (s->us) wb_unwinder_exec(wb_ustacks_unwinder(s->us), (int)luaL_checkinteger(L, 2));
  return 0;
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

/* -- cp = s:critical_path(root [, to [, windows [, from]]]) : after s:read(), the critical path of the run from
 * `from` (a CLOCK_MONOTONIC time in ns, not before the session was armed: its default; the command's
 * release) to `to` (a CLOCK_MONOTONIC time in ns; default: the exit of root's
 * process, else root's last event), walked back from thread root (core/critpath.h); nil without a timeline (not
 * unwind mode, or no off-CPU time). cp = {from, to (ns), segments = {{t0, t1, tid, pid, kind =
 * "oncpu"|"runqueue"|"wait"|"unknown", stack (the record id of s:read()'s offcpu stack it waited
 * in), woken_by (a wait: "interrupt"|"softirq"|"kernel"|"external"|"self"|"none")}, ... latest
 * first, at most 20000}, segment_count, parts = {{pid, tid, kind, stack, woken_by, waker_pid,
 * waker_comm (an external waker), ns}} (the segments summed by those), oncpu = {{tid, stack (the
 * id of an on-CPU record; nil: no sample of the thread in or within a second of the segment), ns}}
 * (on-CPU time on the path shared by the samples inside it, else given to the thread's nearest), dropped (events the full timeline did not keep: the path ends at the
 * first)} */
static int l_critical_path(lua_State *L) {
  session *s = check_session(L);
  lua_Integer root = luaL_checkinteger(L, 2), to = luaL_optinteger(L, 3, 0), start = luaL_optinteger(L, 5, 0);
  uint64_t from = s->skel->bss->armed_ns;
  if (start > 0 && (uint64_t)start > from) from = (uint64_t)start;
  uint64_t near = 1000000000ull; /* the nearest sample of the thread within a second */
  uint64_t win[2 * 256];
  size_t nwin = 0;
  if (!lua_isnoneornil(L, 4)) {
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 4);
    luaL_argcheck(L, n <= 256, 4, "at most 256 windows");
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, 4, i);
      luaL_argcheck(L, lua_istable(L, -1), 4, "each window a {from, to} pair of ns");
      lua_geti(L, -1, 1);
      lua_geti(L, -2, 2);
      int ok_a, ok_b;
      lua_Integer a = lua_tointegerx(L, -2, &ok_a), b = lua_tointegerx(L, -1, &ok_b);
      luaL_argcheck(L, ok_a && ok_b, 4, "each window a {from, to} pair of ns");
      lua_pop(L, 3);
      win[2 * nwin] = a > 0 ? (uint64_t)a : 0, win[2 * nwin + 1] = b > a ? (uint64_t)b : win[2 * nwin];
      nwin++;
    }
  }
  if (wb_bpf_push_critical_path(L, s->us, (uint32_t)root, from, to > 0 ? (uint64_t)to : 0, near, win, nwin)) return 1;
  lua_pushnil(L);
  return 1;
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
  double seconds = luaL_optnumber(L, 2, 0);
  if (!(seconds >= 0)) return luaL_error(L, "s:drain: seconds must be >= 0");
  lua_pushinteger(L, drain(s, 0, (int64_t)(seconds * 1e9)));
  lua_pushinteger(L, s->backlog ? (lua_Integer)wb_backlog_count(s->backlog) : 0);
  return 2;
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

/* Pushes n addresses as a list. */
static void push_pcs(lua_State *L, const uint64_t *pcs, uint32_t n) {
  lua_createtable(L, (int)n, 0);
  for (uint32_t k = 0; k < n; k++) {
    lua_pushinteger(L, (lua_Integer)pcs[k]);
    lua_rawseti(L, -2, k + 1);
  }
}

static const char *const KINDS[] = {"oncpu", "blocked", "runqueue"};

/* Pushes a record's table with its pid, comm and kind set. */
static void push_head(lua_State *L, uint32_t tgid, const char *comm16, uint32_t kind) {
  lua_createtable(L, 0, 6);
  wb_set_int(L, "pid", tgid);
  char comm[WB_COMM_LEN + 1] = {0};
  memcpy(comm, comm16, WB_COMM_LEN);
  wb_set_str(L, "comm", comm);
  wb_set_str(L, "kind", kind < 3 ? KINDS[kind] : "?");
}

/* Appends to the list at the top, after its n records, those of a counts map (stacks from the
 * stack map); with lost (offcpu_lost: the time of intervals whose stack is not known, per process
 * and kind), each with user = {WB_UNW_LOST_PC}, kernel = {}. The new count. */
static int push_counts(lua_State *L, session *s, struct bpf_map *map, int cache, int n, int lost) {
  int fd = bpf_map__fd(map), stacks_fd = bpf_map__fd(s->skel->maps.stacks);
  struct wb_stack_key key, next;
  for (int more = bpf_map_get_next_key(fd, NULL, &next) == 0; more;) {
    key = next;
    more = bpf_map_get_next_key(fd, &key, &next) == 0;
    uint64_t count;
    if (bpf_map_lookup_elem(fd, &key, &count) != 0 || count == 0) continue;
    push_head(L, key.tgid, key.comm, key.kind);
    uint64_t pc = WB_UNW_LOST_PC;
    if (lost) push_pcs(L, &pc, 1);
    else push_stack(L, stacks_fd, key.user_stack_id, cache);
    lua_setfield(L, -2, "user");
    push_stack(L, stacks_fd, lost ? -1 : key.kern_stack_id, cache);
    lua_setfield(L, -2, "kernel");
    wb_set_int(L, "count", (lua_Integer)count);
    lua_rawseti(L, -2, ++n);
  }
  return n;
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

/* The aggregated stacks of unwind mode, on-CPU (kind 0) or off-CPU, appended to the list at the
 * top as push_counts does (from no records); their count. */
static int push_ustacks(lua_State *L, session *s, int offcpu) {
  int n = 0;
  size_t count;
  const wb_ustack_entry *e = wb_ustacks_entries(s->us, &count);
  const uint64_t *pool = wb_ustacks_pool(s->us);
  for (size_t i = 0; i < count; i++) {
    if ((e[i].kind != WB_KIND_ONCPU) != offcpu || e[i].count == 0) continue;
    push_head(L, e[i].tgid, e[i].comm, e[i].kind);
    wb_set_int(L, "id", (lua_Integer)i + 1);
    push_pcs(L, pool + e[i].pcs, e[i].nu);
    lua_setfield(L, -2, "user");
    push_pcs(L, pool + e[i].pcs + e[i].nu + e[i].np, e[i].nk);
    lua_setfield(L, -2, "kernel");
    wb_set_int(L, "count", (lua_Integer)e[i].count);
    if (e[i].py & WB_PYF_PROCESS) push_python(L, s, &e[i], pool + e[i].pcs + e[i].nu);
    lua_rawseti(L, -2, ++n);
  }
  return n;
}

/* -- t = s:read() : {oncpu = {{pid, comm, kind = "oncpu", user = {addrs, leaf first}, kernel =
 * {addrs}, count (samples)}}, offcpu = {... kind = "blocked"|"runqueue", count (ns)}, pids =
 * {tracked process ids}, stats = {samples, lost_samples, oncpu_stack_errors, switches,
 * lost_switches, offcpu_stack_errors, forks, lost_ustacks, lost_users, lost_switch_outs,
 * lost_switch_ins, lost_images, stack_lost}}: lost_samples were not counted for a full map,
 * lost_switches not at all (a full map of threads switched out, or of lost time),
 * *_stack_errors are events whose stack the stack map could not take, full or a hash collision
 * (counted without it). The stack_lost off-CPU intervals whose stack is not known (a full counts
 * map; or the ring had no room for the switch-out or the switch-in record: lost_switch_outs,
 * lost_switch_ins count those records) are kept in offcpu with user = {WB_UNW_LOST_PC}, kernel =
 * {}, summed per process and kind. In unwind mode (after a last drain) the user stacks were walked with CFI, and t.unwind
 * holds the walk statistics (wb.unwind's u:stats(), stack_bytes, stack_size, backlog_peak_bytes: the
 * most records drained but not yet walked held at once); stats.lost_ustacks
 * counts on-CPU samples the ring buffer had no room for, lost_images fork, exec and exit records,
 * stats.lost_users the samples of users past those s:users() lists. With python, a record of a
 * CPython process also has python = {{"func (file.py:12)", ... the frames one
 * _PyEval_EvalFrameDefault call runs, innermost first}, ... innermost call first} (read at the
 * instant of the sample; each frame at the line it executes), python_truncated when its chain was
 * cut, gil_wait when it was switched out waiting for the GIL; and t.python = {processes = {{pid,
 * version, binary}}, skipped = {{pid, image, reason}}, records (that carried Python frames)}. */
static int l_read(lua_State *L) {
  session *s = check_session(L);
  drain(s, 1, 0);
  if (s->us) wb_ustacks_replay(s->us);
  lua_newtable(L);
  int cache = lua_gettop(L);
  lua_createtable(L, 0, 5);
  lua_newtable(L);
  if (s->us) push_ustacks(L, s, 0);
  else push_counts(L, s, s->skel->maps.oncpu_counts, cache, 0, 0);
  lua_setfield(L, -2, "oncpu");
  lua_newtable(L);
  int off = s->us ? push_ustacks(L, s, 1) : push_counts(L, s, s->skel->maps.offcpu_counts, cache, 0, 0);
  push_counts(L, s, s->skel->maps.offcpu_lost, cache, off, 1);
  lua_setfield(L, -2, "offcpu");
  if (s->us) {
    wb_unwind_push_stats(L, wb_ustacks_unwinder(s->us));
    wb_set_int(L, "stack_bytes", (lua_Integer)wb_ustacks_bytes(s->us));
    wb_set_int(L, "stack_size", (lua_Integer)s->ustack);
    wb_set_int(L, "backlog_peak_bytes", (lua_Integer)wb_backlog_peak_bytes(s->backlog));
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
                                               "forks", "lost_ustacks", "lost_users",
                                               "lost_switch_outs", "lost_switch_ins", "lost_images",
                                               "stack_lost", "wakes", "lost_wakes", "inferred_ins"};
  lua_createtable(L, 0, WB_NSTATS);
  for (uint32_t k = 0; vals && k < WB_NSTATS; k++) {
    uint64_t sum = 0;
    if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &k, vals) == 0)
      for (int c = 0; c < ncpu; c++) sum += vals[c];
    if (k == WB_STAT_STACK_LOST && s->us) sum += wb_ustacks_stack_lost(s->us);
    wb_set_int(L, names[k], (lua_Integer)sum);
  }
  free(vals);
  lua_setfield(L, -2, "stats");
  return 1;
}

/* -- list, full = s:users() : the users the tracked processes ran as when sampled or switched
 * out, {{uid, gid}} (real ids), and whether the map holds its WB_USERS_MAX; stats.lost_users
 * (s:read()) counts samples whose user could not be noted: past a full map, or when the insert
 * failed on a busy CPU (the map's bucket lock held there: heavy switching) */
static int l_users(lua_State *L) {
  session *s = check_session(L);
  int fd = bpf_map__fd(s->skel->maps.users), n = 0;
  uint64_t ids, next;
  lua_newtable(L);
  for (int more = bpf_map_get_next_key(fd, NULL, &next) == 0; more;) {
    ids = next;
    more = bpf_map_get_next_key(fd, &ids, &next) == 0;
    lua_createtable(L, 0, 2);
    wb_set_int(L, "uid", (lua_Integer)(ids & 0xffffffffu));
    wb_set_int(L, "gid", (lua_Integer)(ids >> 32));
    lua_rawseti(L, -2, ++n);
  }
  lua_pushboolean(L, n >= WB_USERS_MAX);
  return 2;
}

/* -- s:close() : detaches and unloads; idempotent (also __gc, __close) */
static int l_close(lua_State *L) {
  session *s = luaL_checkudata(L, 1, SESSION_MT);
  join_loader(s);
  s->pending = 0;
  teardown(s);
  return 0;
}

static int l_tostring(lua_State *L) {
  session *s = luaL_checkudata(L, 1, SESSION_MT);
  lua_pushstring(L, s->loading    ? "wb.bpf.session (loading)"
                   : !s->skel    ? "wb.bpf.session (closed)"
                   : s->stopped  ? "wb.bpf.session (stopped)"
                                 : "wb.bpf.session (attached)");
  return 1;
}

static const luaL_Reg session_methods[] = {
    {"add_map", l_add_map}, {"arm", l_arm},     {"close", l_close}, {"critical_path", l_critical_path}, {"deferred", l_deferred}, {"drain", l_drain},
    {"btf", l_session_btf}, {"exec", l_exec},   {"fork", l_fork},   {"python", l_python}, {"read", l_read},     {"ready", l_ready},
    {"stop", l_stop},       {"track", l_track}, {"users", l_users}, {NULL, NULL}};

static const luaL_Reg bpf_functions[] = {{"available", l_available}, {"btf", l_btf}, {"make_btf", l_make_btf},
                                         {"open", l_open},           {NULL, NULL}};

int luaopen_wb_bpf(lua_State *L) {
  wb_new_class(L, SESSION_MT, session_methods, NULL, l_close, l_tostring);
  luaL_newlib(L, bpf_functions);
  return 1;
}
