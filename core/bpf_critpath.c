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

typedef struct pusher {
  lua_State *L;
  int segments, parts, shares; /* stack indexes of the tables */
  long nseg, nparts, nshares;
  uint64_t total[4];
} pusher;

/* parts[key] = {pid, tid, kind, stack, woken_by, waker_pid, waker_comm, ns}, summed by key */
static void emit(void *ctx, const wb_cp_segment *s) {
  pusher *p = ctx;
  lua_State *L = p->L;
  const char *by = s->kind == WB_CP_WAIT ? woken_by(s) : NULL;
  char comm[17] = {0};
  memcpy(comm, s->waker_comm, 16);
  uint64_t ns = s->t1 - s->t0;
  p->total[s->kind & 3] += ns;
  if (p->nseg < SEGMENTS_MAX) {
    lua_createtable(L, 0, 8);
    wb_set_int(L, "t0", (lua_Integer)s->t0);
    wb_set_int(L, "t1", (lua_Integer)s->t1);
    wb_set_int(L, "tid", s->tid);
    wb_set_int(L, "pid", s->tgid);
    wb_set_str(L, "kind", CP_KINDS[s->kind & 3]);
    if (s->stack) wb_set_int(L, "stack", s->stack);
    if (by) wb_set_str(L, "woken_by", by);
    lua_rawseti(L, p->segments, (lua_Integer)++p->nseg);
  } else {
    p->nseg++;
  }
  lua_pushfstring(L, "%d %d %d %s %d %s", (int)s->tid, (int)s->kind, (int)s->stack, by ? by : "", (int)s->waker_tgid,
                  by && !strcmp(by, "external") ? comm : "");
  if (added(L, p->parts, ns)) return;
  lua_createtable(L, 0, 8);
  wb_set_int(L, "pid", s->tgid);
  wb_set_int(L, "tid", s->tid);
  wb_set_str(L, "kind", CP_KINDS[s->kind & 3]);
  if (s->stack) wb_set_int(L, "stack", s->stack);
  if (by) wb_set_str(L, "woken_by", by);
  if (by && !strcmp(by, "external")) {
    wb_set_int(L, "waker_pid", s->waker_tgid);
    wb_set_str(L, "waker_comm", comm);
  }
  wb_set_int(L, "ns", (lua_Integer)ns);
  lua_rawset(L, p->parts);
  p->nparts++;
}

/* shares[tid .. stack] = {tid, pid, stack, ns}: on-CPU time on the path by the sampled stack */
static void sample(void *ctx, uint32_t tid, uint32_t tgid, uint32_t stack, uint64_t ns) {
  pusher *p = ctx;
  lua_State *L = p->L;
  lua_pushfstring(L, "%d %d", (int)tid, (int)stack);
  if (added(L, p->shares, ns)) return;
  lua_createtable(L, 0, 4);
  wb_set_int(L, "tid", tid);
  wb_set_int(L, "pid", tgid);
  if (stack) wb_set_int(L, "stack", stack);
  wb_set_int(L, "ns", (lua_Integer)ns);
  lua_rawset(L, p->shares);
  p->nshares++;
}

typedef struct waits {
  lua_State *L;
  int tab;
  long n;
  uint64_t from, to;
} waits;

/* waits_for[key] = {pid, waker_pid, ns}: blocked time (switch-out to wake-up, inside the window)
 * each process spent waiting for another thread of the tree (not itself, not an interrupt) */
static void wait_for(void *ctx, const wb_cp_off *o) {
  waits *w = ctx;
  if (o->kind != WB_KIND_BLOCKED || !o->wake || !o->waker_tid || o->waker_tid == o->tid ||
      (o->flags & (WB_WAKE_IRQ | WB_WAKE_KTHREAD | WB_WAKE_NEW)))
    return;
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

int wb_bpf_push_critical_path(lua_State *L, wb_ustacks *us, uint32_t root, uint64_t from, uint64_t to, uint64_t near_ns) {
  wb_cp_timeline *t = us ? wb_ustacks_get_timeline(us) : NULL;
  if (!t || (!to && !wb_cp_end(t, root))) return 0;
  uint64_t first_drop, dropped = wb_cp_dropped(t, &first_drop);
  if (!to) to = wb_cp_end(t, root);
  if (dropped && first_drop < to) to = first_drop;
  lua_createtable(L, 0, 8);
  int top = lua_gettop(L);
  pusher p = {.L = L};
  lua_newtable(L);
  p.segments = lua_gettop(L);
  lua_newtable(L);
  p.parts = lua_gettop(L);
  lua_newtable(L);
  p.shares = lua_gettop(L);
  long n = to > from ? wb_cp_walk(t, root, from, to, near_ns, emit, sample, &p) : 0;
  if (n < 0) return luaL_error(L, "out of memory");
  listify(L, p.parts, p.nparts);
  listify(L, p.shares, p.nshares);
  lua_setfield(L, top, "oncpu");
  lua_setfield(L, top, "parts");
  lua_setfield(L, top, "segments");
  lua_newtable(L);
  waits w = {.L = L, .tab = lua_gettop(L), .from = from, .to = to};
  wb_cp_each_off(t, wait_for, &w);
  listify(L, w.tab, w.n);
  lua_setfield(L, top, "waits_for");
  wb_set_int(L, "from", (lua_Integer)from);
  wb_set_int(L, "to", (lua_Integer)to);
  wb_set_int(L, "segment_count", n);
  if (dropped) wb_set_int(L, "dropped", (lua_Integer)dropped);
  return 1;
}
