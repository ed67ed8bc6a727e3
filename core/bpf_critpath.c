/* s:critical_path() of wb.bpf (core/bpf.c): the walk of core/critpath.c as Lua tables. */
#include <string.h>

#include "bpf_ustack.h"
#include "critpath.h"
#include "internal.h"

#include <linux/types.h>

#include "bpf/profile.h"

#define SEGMENTS_MAX 20000 /* segments listed (the parts and shares count them all) */

static const char *const CP_KINDS[] = {"oncpu", "runqueue", "wait", "unknown"};

/* What ended a wait that is not explained by a thread of the tree. */
static const char *woken_by(const wb_cp_segment *s) {
  if (s->flags & WB_CP_NOWAKE) return "none";
  if (s->flags & WB_WAKE_IRQ) return "interrupt";
  if (s->flags & WB_WAKE_KTHREAD) return "kernel";
  if (!s->waker_tid) return "interrupt"; /* the idle task */
  if (s->waker_tid == s->tid) return "self";
  return "external";
}

/* With a key on the top of the stack: when tab holds a table at it, adds ns to its field ns, pops
 * the key and returns 1; else returns 0 with the key left for the caller's new entry. */
static int added(lua_State *L, int tab, uint64_t ns) {
  lua_pushvalue(L, -1);
  if (lua_rawget(L, tab) == LUA_TTABLE) {
    lua_getfield(L, -1, "ns");
    lua_Integer sum = lua_tointeger(L, -1) + (lua_Integer)ns;
    lua_pop(L, 1);
    wb_set_int(L, "ns", sum);
    lua_pop(L, 2);
    return 1;
  }
  lua_pop(L, 1);
  return 0;
}

/* Where the path's time is summed: parts and shares tables (stack indexes) for [from, to). */
typedef struct sink {
  int parts, shares;
  long nparts, nshares;
  uint64_t from, to;
} sink;

#define WINDOWS_MAX 256 /* windows (the application's stages) a path is also summed over */

typedef struct pusher {
  lua_State *L;
  int segments; /* stack index of the list */
  long nseg;
  sink all, win[WINDOWS_MAX];
  size_t nwin;
} pusher;

/* The part of [t0, t1) inside k's window. */
static uint64_t overlap(const sink *k, uint64_t t0, uint64_t t1) {
  uint64_t a = t0 > k->from ? t0 : k->from, b = t1 < k->to ? t1 : k->to;
  return b > a ? b - a : 0;
}

/* parts[key] = {pid, tid, kind, stack, woken_by, waker_pid, waker_comm, ns}, summed by key */
static void add_part(lua_State *L, sink *k, const wb_cp_segment *s, const char *by, const char *comm, uint64_t ns) {
  int external = by && !strcmp(by, "external");
  lua_pushfstring(L, "%d %d %d %s %d %s", (int)s->tid, (int)s->kind, (int)s->stack, by ? by : "", (int)s->waker_tgid,
                  external ? comm : "");
  if (added(L, k->parts, ns)) return;
  lua_createtable(L, 0, 8);
  wb_set_int(L, "pid", s->tgid);
  wb_set_int(L, "tid", s->tid);
  wb_set_str(L, "kind", CP_KINDS[s->kind & 3]);
  if (s->stack) wb_set_int(L, "stack", s->stack);
  if (by) wb_set_str(L, "woken_by", by);
  if (external) {
    wb_set_int(L, "waker_pid", s->waker_tgid);
    wb_set_str(L, "waker_comm", comm);
  }
  wb_set_int(L, "ns", (lua_Integer)ns);
  lua_rawset(L, k->parts);
  k->nparts++;
}

static void emit(void *ctx, const wb_cp_segment *s) {
  pusher *p = ctx;
  lua_State *L = p->L;
  const char *by = s->kind == WB_CP_WAIT ? woken_by(s) : NULL;
  char comm[17] = {0};
  memcpy(comm, s->waker_comm, 16);
  if (p->nseg++ < SEGMENTS_MAX) {
    lua_createtable(L, 0, 8);
    wb_set_int(L, "t0", (lua_Integer)s->t0);
    wb_set_int(L, "t1", (lua_Integer)s->t1);
    wb_set_int(L, "tid", s->tid);
    wb_set_int(L, "pid", s->tgid);
    wb_set_str(L, "kind", CP_KINDS[s->kind & 3]);
    if (s->stack) wb_set_int(L, "stack", s->stack);
    if (by) wb_set_str(L, "woken_by", by);
    lua_rawseti(L, p->segments, (lua_Integer)p->nseg);
  }
  add_part(L, &p->all, s, by, comm, s->t1 - s->t0);
  for (size_t i = 0; i < p->nwin; i++) {
    uint64_t ns = overlap(&p->win[i], s->t0, s->t1);
    if (ns) add_part(L, &p->win[i], s, by, comm, ns);
  }
}

/* shares[tid .. stack] = {tid, pid, stack, ns}: on-CPU time on the path by the sampled stack */
static void add_share(lua_State *L, sink *k, const wb_cp_segment *s, uint32_t stack, uint64_t ns) {
  lua_pushfstring(L, "%d %d", (int)s->tid, (int)stack);
  if (added(L, k->shares, ns)) return;
  lua_createtable(L, 0, 4);
  wb_set_int(L, "tid", s->tid);
  wb_set_int(L, "pid", s->tgid);
  if (stack) wb_set_int(L, "stack", stack);
  wb_set_int(L, "ns", (lua_Integer)ns);
  lua_rawset(L, k->shares);
  k->nshares++;
}

static void sample(void *ctx, const wb_cp_segment *s, uint32_t stack, uint64_t ns) {
  pusher *p = ctx;
  add_share(p->L, &p->all, s, stack, ns);
  uint64_t len = s->t1 - s->t0;
  for (size_t i = 0; i < p->nwin; i++) { /* the window's part of the segment, in proportion */
    uint64_t in = overlap(&p->win[i], s->t0, s->t1);
    if (in) add_share(p->L, &p->win[i], s, stack, in == len ? ns : (uint64_t)((double)ns * (double)in / (double)len));
  }
}

typedef struct waits {
  lua_State *L;
  int tab;
  long n;
  uint64_t from, to;
  wb_cp_timeline *t;
} waits;

/* waits_for[key] = {pid, waker_pid, ns}: blocked time (switch-out to wake-up, inside the window)
 * each process spent waiting for another thread of the tree (not itself, not an interrupt) */
static void wait_for(void *ctx, const wb_cp_off *o) {
  waits *w = ctx;
  if (o->kind != WB_KIND_BLOCKED || !o->wake || !o->waker_tid || o->waker_tid == o->tid ||
      (o->flags & (WB_WAKE_IRQ | WB_WAKE_KTHREAD | WB_WAKE_NEW)) || !wb_cp_known(w->t, o->waker_tid))
    return; /* not a wait for the tree: an interrupt, a kernel thread, itself, a task outside */
  uint64_t a = o->out > w->from ? o->out : w->from, b = o->wake < w->to ? o->wake : w->to;
  if (b <= a) return;
  lua_State *L = w->L;
  lua_pushfstring(L, "%d %d", (int)o->tgid, (int)o->waker_tgid);
  if (added(L, w->tab, b - a)) return;
  lua_createtable(L, 0, 3);
  wb_set_int(L, "pid", o->tgid);
  wb_set_int(L, "waker_pid", o->waker_tgid);
  wb_set_int(L, "ns", (lua_Integer)(b - a));
  lua_rawset(L, w->tab);
  w->n++;
}

/* Replaces the keyed table at idx with the list of its values. */
static void listify(lua_State *L, int idx, long n) {
  lua_createtable(L, (int)n, 0);
  long k = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_rawseti(L, -3, ++k);
  }
  lua_replace(L, idx);
}

/* New parts and shares tables on the stack for k. */
static void open_sink(lua_State *L, sink *k, uint64_t from, uint64_t to) {
  *k = (sink){.from = from, .to = to};
  lua_newtable(L);
  k->parts = lua_gettop(L);
  lua_newtable(L);
  k->shares = lua_gettop(L);
}

/* Sets k's parts and shares (as lists) as fields parts and oncpu of the table at idx. */
static void close_sink(lua_State *L, sink *k, int idx) {
  listify(L, k->parts, k->nparts);
  listify(L, k->shares, k->nshares);
  lua_pushvalue(L, k->shares);
  lua_setfield(L, idx, "oncpu");
  lua_pushvalue(L, k->parts);
  lua_setfield(L, idx, "parts");
}

int wb_bpf_push_critical_path(lua_State *L, wb_ustacks *us, uint32_t root, uint64_t from, uint64_t to, uint64_t near_ns,
                              const uint64_t *windows, size_t nwin) {
  wb_cp_timeline *t = us ? wb_ustacks_get_timeline(us) : NULL;
  if (!t || (!to && !wb_cp_end(t, root))) return 0;
  uint64_t first_drop, dropped = wb_cp_dropped(t, &first_drop);
  if (!to) to = wb_cp_end(t, root);
  if (dropped && first_drop < to) to = first_drop;
  if (nwin > WINDOWS_MAX) nwin = WINDOWS_MAX;
  luaL_checkstack(L, (int)(2 * nwin + 16), "critical path");
  lua_createtable(L, 0, 10);
  int top = lua_gettop(L);
  pusher *p = lua_newuserdatauv(L, sizeof *p, 0); /* freed with the stack, also after an error */
  memset(p, 0, sizeof *p);
  p->L = L;
  lua_newtable(L);
  p->segments = lua_gettop(L);
  open_sink(L, &p->all, from, to);
  p->nwin = nwin;
  for (size_t i = 0; i < nwin; i++) open_sink(L, &p->win[i], windows[2 * i], windows[2 * i + 1]);
  long n = to > from ? wb_cp_walk(t, root, from, to, near_ns, emit, sample, p) : 0;
  if (n < 0) return luaL_error(L, "out of memory");
  close_sink(L, &p->all, top);
  lua_createtable(L, (int)nwin, 0);
  for (size_t i = 0; i < nwin; i++) {
    lua_createtable(L, 0, 4);
    close_sink(L, &p->win[i], lua_gettop(L));
    wb_set_int(L, "from", (lua_Integer)p->win[i].from);
    wb_set_int(L, "to", (lua_Integer)p->win[i].to);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, top, "windows");
  lua_pushvalue(L, p->segments);
  lua_setfield(L, top, "segments");
  lua_newtable(L);
  waits w = {.L = L, .tab = lua_gettop(L), .from = from, .to = to, .t = t};
  wb_cp_each_off(t, wait_for, &w);
  listify(L, w.tab, w.n);
  lua_setfield(L, top, "waits_for");
  lua_settop(L, top); /* the result on the top again */
  wb_set_int(L, "from", (lua_Integer)from);
  wb_set_int(L, "to", (lua_Integer)to);
  wb_set_int(L, "segment_count", n);
  if (dropped) wb_set_int(L, "dropped", (lua_Integer)dropped);
  return 1;
}
