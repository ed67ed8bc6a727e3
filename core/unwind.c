/* wb.unwind: walks a user stack from a copy of its top bytes and the registers ip, sp, bp (what
 * perf's PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER deliver) through the call-frame
 * information of each mapped object (core/unwind_obj.c, elfutils libdw), frame pointers where an
 * object has no CFI for a pc, through signal frames, and stops — marking the stack truncated —
 * where neither can go: no mapping (JIT, anonymous code), a rule other than CFA = rsp/rbp + k (or
 * the linkers' PLT expression), a value outside the copy. Also symbolization with inline chains
 * and demangling for those frames. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sym.h"
#include "unwind.h"
#include "internal.h"
#include "pidindex.h"

#define UNWIND_MT "wb.unwind"
/* Offsets in the x86-64 ucontext_t of the saved rbp, rsp and rip (uc_mcontext.gregs[REG_*]) */
#define UC_RBP 0x78
#define UC_RSP 0xa0
#define UC_RIP 0xa8

const char *const wb_unw_stop_names[WB_UNW_NREASONS] = {
    "complete", "no_mapping", "no_cfi", "complex_rule", "signal_frame", "off_stack", "bad_frame", "depth", "no_stack"};

typedef struct umap {
  uint64_t start, end, pgoff;
  char *path;
  char build_id[41]; /* from the perf record, "" when unknown: another file on disk is not used */
  wb_dwobj *obj;  /* resolved at first use */
  uint32_t stat;  /* index + 1 into the unwinder's objstats, 0 unknown */
  int failed;     /* the object could not be loaded */
} umap;

typedef struct uspace {
  int pid, tried_snapshot;
  int from_snapshot;    /* the mappings are a snapshot (not records): taken again when a pc misses */
  uint32_t snap_epoch;  /* ... once per epoch */
  int inherited;        /* the snapshot is the parent's, copied at a fork record */
  int snap_failed;      /* the last snapshot found no mappings: the process is gone or a zombie */
  int deferring;        /* gone after leaving its inherited mappings: its records wait (perf records) */
  umap *maps;
  size_t n, cap, last;
} uspace;

struct wb_unwinder {
  uspace *as;
  size_t n, cap;
  wb_pidindex index; /* pid -> position in as */
  wb_unw_objstat *stats;
  size_t nstats, capstats;
  uint64_t reasons[WB_UNW_NREASONS], ns;
  uint32_t epoch;
};

/* ---- address spaces ------------------------------------------------------------------------- */

wb_unwinder *wb_unwinder_new(void) { return calloc(1, sizeof(wb_unwinder)); }

static void clear_space(uspace *a) {
  for (size_t i = 0; i < a->n; i++) free(a->maps[i].path);
  a->n = a->last = 0;
}

void wb_unwinder_free(wb_unwinder *u) {
  if (!u) return;
  for (size_t i = 0; i < u->n; i++) {
    clear_space(&u->as[i]);
    free(u->as[i].maps);
  }
  free(u->as);
  wb_pidindex_free(&u->index);
  free(u->stats);
  free(u);
}

static uspace *find_space(wb_unwinder *u, int pid, int create) {
  ptrdiff_t at = wb_pidindex_find(&u->index, u->as, sizeof *u->as, pid);
  if (at >= 0) return &u->as[at];
  if (!create) return NULL;
  if (u->n == u->cap) {
    size_t cap = u->cap ? u->cap * 2 : 8;
    uspace *p = realloc(u->as, cap * sizeof *p);
    if (!p) return NULL;
    u->as = p;
    u->cap = cap;
  }
  uspace *a = &u->as[u->n];
  memset(a, 0, sizeof *a);
  a->pid = pid;
  if (wb_pidindex_add(&u->index, u->as, sizeof *u->as, u->n) != 0) return NULL;
  u->n++;
  return a;
}

static int add_map(uspace *a, uint64_t start, uint64_t end, uint64_t pgoff, const char *path, const char *build_id) {
  size_t kept = 0;
  for (size_t i = 0; i < a->n; i++) { /* a later mapping replaces those it overlaps */
    if (a->maps[i].start < end && start < a->maps[i].end) free(a->maps[i].path);
    else a->maps[kept++] = a->maps[i];
  }
  a->n = kept;
  a->last = 0;
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 32;
    umap *p = realloc(a->maps, cap * sizeof *p);
    if (!p) return -1;
    a->maps = p;
    a->cap = cap;
  }
  a->maps[a->n] = (umap){.start = start, .end = end, .pgoff = pgoff, .path = strdup(path)};
  if (!a->maps[a->n].path) return -1;
  snprintf(a->maps[a->n].build_id, sizeof a->maps[a->n].build_id, "%s", build_id ? build_id : "");
  a->n++;
  return 0;
}

int wb_unwinder_add_map(wb_unwinder *u, int pid, uint64_t start, uint64_t len, uint64_t pgoff, const char *path,
                        const char *build_id) {
  uspace *a = find_space(u, pid, 1);
  if (a) a->from_snapshot = a->inherited = a->deferring = 0;
  return a ? add_map(a, start, start + len, pgoff, path, build_id) : -1;
}

void wb_unwinder_fork(wb_unwinder *u, int child, int parent) {
  uspace *c = find_space(u, child, 1);
  if (!c) return;
  clear_space(c);
  c->tried_snapshot = 1, c->from_snapshot = c->inherited = c->deferring = c->snap_failed = 0;
  uspace *p = find_space(u, parent, 0); /* after creating c: that may move the array */
  for (size_t i = 0; p && i < p->n; i++) add_map(c, p->maps[i].start, p->maps[i].end, p->maps[i].pgoff, p->maps[i].path, p->maps[i].build_id);
}

void wb_unwinder_exec(wb_unwinder *u, int pid) {
  uspace *a = find_space(u, pid, 1);
  if (!a) return;
  clear_space(a);
  a->tried_snapshot = 1, a->from_snapshot = a->inherited = a->deferring = a->snap_failed = 0;
}

static int snapshot_one(void *arg, uint64_t lo, uint64_t hi, uint64_t off, const char *path) {
  uspace *a = arg;
  if (path[0] != '/' && strcmp(path, "[vdso]") != 0) return 1; /* the heap, the stack: no code of a file */
  if (!a->tried_snapshot) {
    clear_space(a);
    a->tried_snapshot = 1;
  }
  return add_map(a, lo, hi, off, path, NULL);
}

static int snapshot(uspace *a, uint32_t epoch) {
  a->tried_snapshot = 0;
  int n = wb_maps_each(a->pid, snapshot_one, a);
  a->tried_snapshot = 1;
  a->from_snapshot = 1;
  a->snap_epoch = epoch;
  if (n > 0) a->inherited = 0; /* its own mappings now */
  a->snap_failed = n <= 0;
  return n;
}

void wb_unwinder_image(wb_unwinder *u, int pid, int parent) {
  if (parent == pid) return; /* a thread: the same mappings */
  uspace *a = find_space(u, pid, 0);
  if (a && a->n && !a->from_snapshot) return;
  if (a) clear_space(a), a->tried_snapshot = a->inherited = a->deferring = a->snap_failed = 0;
  if (parent <= 0) return; /* an exec: the next record takes a snapshot */
  /* the parent's mappings as of this epoch (it is alive, usually waiting for the child) */
  uspace *p = find_space(u, parent, 1);
  if (p && (p->from_snapshot || !p->n) && (!p->tried_snapshot || p->snap_epoch != u->epoch)) snapshot(p, u->epoch);
  if (!p || !p->n) return; /* the child's first record takes a snapshot */
  uint32_t epoch = p->snap_epoch;
  wb_unwinder_fork(u, pid, parent); /* may move p */
  if ((a = find_space(u, pid, 0))) a->from_snapshot = 1, a->snap_epoch = epoch, a->inherited = 1;
}

void wb_unwinder_exit(wb_unwinder *u, int pid) {
  uspace *a = find_space(u, pid, 0);
  if (!a || (a->n && !a->from_snapshot)) return;
  clear_space(a);
  free(a->maps);
  a->maps = NULL;
  a->cap = 0;
  a->tried_snapshot = 1, a->inherited = a->deferring = 0; /* the pid may be another process's by now */
}

void wb_unwinder_discount(wb_unwinder *u, int stop) {
  if (stop >= 0 && stop < WB_UNW_NREASONS && u->reasons[stop]) u->reasons[stop]--;
}

int wb_unwinder_inherited_gone(wb_unwinder *u, int pid) {
  uspace *a = find_space(u, pid, 0);
  if (!a || !a->inherited || !a->snap_failed) return 0;
  a->deferring = 1; /* the mappings stay, for a record that cannot wait */
  return 1;
}

void wb_unwinder_next_epoch(wb_unwinder *u) { u->epoch++; }

int wb_unwinder_mapped(wb_unwinder *u, int pid) {
  uspace *a = find_space(u, pid, 1);
  if (a && a->n == 0 && !a->tried_snapshot) snapshot(a, u->epoch);
  return a && !a->deferring ? (int)a->n : 0;
}

int wb_unwinder_snapshot(wb_unwinder *u, int pid) {
  uspace *a = find_space(u, pid, 1);
  if (!a) {
    errno = ENOMEM;
    return -1;
  }
  return snapshot(a, u->epoch);
}

static umap *find_map(uspace *a, uint64_t addr) {
  if (a->last < a->n && addr >= a->maps[a->last].start && addr < a->maps[a->last].end) return &a->maps[a->last];
  for (size_t i = a->n; i-- > 0;)
    if (addr >= a->maps[i].start && addr < a->maps[i].end) {
      a->last = i;
      return &a->maps[i];
    }
  return NULL;
}

static wb_unw_objstat *stat_of(wb_unwinder *u, umap *m) {
  if (m->stat) return &u->stats[m->stat - 1];
  for (size_t i = 0; i < u->nstats; i++)
    if (u->stats[i].obj == m->obj) {
      m->stat = (uint32_t)i + 1;
      return &u->stats[i];
    }
  if (u->nstats == u->capstats) {
    size_t cap = u->capstats ? u->capstats * 2 : 16;
    wb_unw_objstat *p = realloc(u->stats, cap * sizeof *p);
    if (!p) return NULL;
    u->stats = p;
    u->capstats = cap;
  }
  u->stats[u->nstats] = (wb_unw_objstat){.obj = m->obj};
  m->stat = (uint32_t)++u->nstats;
  return &u->stats[u->nstats - 1];
}

/* ---- the walk -------------------------------------------------------------------------------- */

static int read_word(const uint8_t *stack, size_t len, uint64_t base, uint64_t addr, uint64_t *v) {
  if (addr < base || addr - base > len || len - (addr - base) < 8) return 0;
  memcpy(v, stack + (addr - base), 8);
  return 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int wb_unwinder_walk(wb_unwinder *u, int pid, uint64_t ip, uint64_t sp, uint64_t bp, const uint8_t *stack,
                     size_t len, uint64_t *out, int max, int *stop) {
  uint64_t t0 = now_ns(), base = sp;
  uspace *a = find_space(u, pid, 1);
  if (a && a->n == 0 && !a->tried_snapshot) snapshot(a, u->epoch);
  int n = 0, why = WB_UNW_DEPTH, exact = 1;
  wb_unw_objstat *st = NULL; /* the object of the frame being unwound, while it is */
  while (a && n < max) {
    out[n++] = ip;
    uint64_t pc = ip - !exact; /* a return address: the call is the byte before */
    exact = 0;
    umap *m = find_map(a, pc);
    if (!m && a->from_snapshot && (a->inherited || a->snap_epoch != u->epoch) && snapshot(a, u->epoch) > 0)
      m = find_map(a, pc); /* mapped since the snapshot (dlopen), or by a child since its fork */
    if (m && !m->obj && !m->failed) {
      m->obj = m->path[0] == '/' || m->path[0] == '[' ? wb_dwobj_get(m->path) : NULL;
      if (m->obj && !wb_dwobj_loaded(m->obj)) m->obj = NULL; /* //anon, a deleted file: unknown code */
      const char *bid = m->obj ? wb_dwobj_build_id(m->obj) : "";
      if (m->build_id[0] && bid[0] && strcmp(bid, m->build_id) != 0) m->obj = NULL; /* replaced since */
      m->failed = !m->obj;
      if (m->obj) wb_dwobj_prefetch(m->obj); /* its frames will be symbolized after the run */
    }
    if (!m || !m->obj) {
      why = ip == 0 ? WB_UNW_COMPLETE : WB_UNW_NO_MAP;
      break;
    }
    st = stat_of(u, m);
    uint64_t vaddr = wb_dwobj_vaddr(m->obj, pc - m->start + m->pgoff);
    const wb_unw_row *r = vaddr ? wb_dwobj_row(m->obj, vaddr) : NULL;
    uint64_t ra = 0, nsp, nbp = bp;
    if (r && r->kind == 0) {
      uint64_t cfa = (r->cfa_bp ? bp : sp) + (uint64_t)(int64_t)r->cfa_off;
      uint64_t bp_slot = cfa + (uint64_t)(int64_t)r->bp_off;
      /* A save slot below sp has been popped already: GCC's epilogues keep the save rule in force
       * up to the ret, while rbp already holds the caller's value. */
      int bp_saved = r->bp_rule == 1 && bp_slot >= sp;
      if (!read_word(stack, len, base, cfa + (uint64_t)(int64_t)r->ra_off, &ra) ||
          (bp_saved && !read_word(stack, len, base, bp_slot, &nbp))) {
        why = WB_UNW_OFF_STACK;
        break;
      }
      nsp = cfa;
      if (st) st->cfi++;
    } else if (r && r->kind == WB_UNW_SIGNAL) {
      /* a signal handler's return into the trampoline: the interrupted registers are in the
       * ucontext the kernel put at sp (uc_mcontext.gregs: rbp, rsp, rip), its rip exact */
      if (!read_word(stack, len, base, sp + UC_RIP, &ra) || !read_word(stack, len, base, sp + UC_RSP, &nsp) ||
          !read_word(stack, len, base, sp + UC_RBP, &nbp)) {
        why = WB_UNW_OFF_STACK;
        break;
      }
      exact = 1;
      if (st) st->cfi++;
    } else if (r && r->kind == WB_UNW_ROW_END) {
      why = WB_UNW_COMPLETE;
      break;
    } else if ((!r || r->kind == WB_UNW_NO_CFI) && wb_dwobj_frame_pointers(m->obj)) {
      if (bp < sp || !read_word(stack, len, base, bp, &nbp) || !read_word(stack, len, base, bp + 8, &ra)) {
        why = WB_UNW_OFF_STACK;
        break;
      }
      nsp = bp + 16;
      if (st) st->fp++;
    } else {
      why = r ? r->kind : WB_UNW_NO_CFI;
      break;
    }
    if (ra == 0) {
      why = WB_UNW_COMPLETE;
      break;
    }
    if (nsp <= sp) {
      why = WB_UNW_BAD;
      break;
    }
    ip = ra;
    sp = nsp;
    bp = nbp;
    st = NULL;
  }
  if (why == WB_UNW_OFF_STACK && len == 0) why = WB_UNW_NO_STACK;
  if (st && why != WB_UNW_COMPLETE) {
    st->stopped++;
    st->stops[why]++;
  }
  if (!a) why = WB_UNW_NO_MAP;
  u->reasons[why]++;
  u->ns += now_ns() - t0;
  *stop = why;
  return n;
}

const wb_unw_objstat *wb_unwinder_objects(const wb_unwinder *u, size_t *n) {
  *n = u->nstats;
  return u->stats;
}
const uint64_t *wb_unwinder_reasons(const wb_unwinder *u) { return u->reasons; }
uint64_t wb_unwinder_ns(const wb_unwinder *u) { return u->ns; }

void wb_unwind_push_stats(lua_State *L, const wb_unwinder *u) {
  lua_createtable(L, 0, 6);
  uint64_t walks = 0;
  lua_createtable(L, 0, WB_UNW_NREASONS);
  for (int i = 0; i < WB_UNW_NREASONS; i++) {
    walks += u->reasons[i];
    wb_set_int(L, wb_unw_stop_names[i], (lua_Integer)u->reasons[i]);
  }
  lua_setfield(L, -2, "reasons");
  wb_set_int(L, "walks", (lua_Integer)walks);
  wb_set_int(L, "truncated", (lua_Integer)(walks - u->reasons[WB_UNW_COMPLETE]));
  lua_pushnumber(L, (double)u->ns / 1e9);
  lua_setfield(L, -2, "seconds");
  lua_createtable(L, (int)u->nstats, 0);
  for (size_t i = 0; i < u->nstats; i++) {
    const wb_unw_objstat *s = &u->stats[i];
    lua_createtable(L, 0, 6);
    wb_set_str(L, "path", wb_dwobj_path(s->obj));
    wb_set_str(L, "build_id", wb_dwobj_build_id(s->obj));
    wb_set_int(L, "cfi", (lua_Integer)s->cfi);
    wb_set_int(L, "fp", (lua_Integer)s->fp);
    wb_set_int(L, "stopped", (lua_Integer)s->stopped);
    lua_createtable(L, 0, 2);
    for (int r = 1; r < WB_UNW_NREASONS; r++)
      if (s->stops[r]) wb_set_int(L, wb_unw_stop_names[r], (lua_Integer)s->stops[r]);
    lua_setfield(L, -2, "stops");
    wb_set_str(L, "method", s->cfi ? (s->fp ? "cfi+fp" : "cfi") : s->fp ? "fp" : "none");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "objects");
}

/* ---- Lua bindings ---------------------------------------------------------------------------- */

typedef struct {
  wb_unwinder *u;
} unwind_ud;

static wb_unwinder *check_unwind(lua_State *L) {
  unwind_ud *p = luaL_checkudata(L, 1, UNWIND_MT);
  if (!p->u) luaL_error(L, "wb.unwind unwinder is closed");
  return p->u;
}

/* -- u = wb.unwind.new() : an unwinder with no address spaces (objects are shared by all) */
static int l_new(lua_State *L) {
  unwind_ud *p = lua_newuserdatauv(L, sizeof *p, 0);
  p->u = NULL;
  luaL_setmetatable(L, UNWIND_MT);
  if (!(p->u = wb_unwinder_new())) return luaL_error(L, "out of memory");
  return 1;
}

/* -- u:add_map(pid, addr, len, pgoff, path [, build_id]) : one executable mapping of pid; with
 * build_id (hex), a file on disk with another build id is not used for it */
static int l_add_map(lua_State *L) {
  wb_unwinder *u = check_unwind(L);
  if (wb_unwinder_add_map(u, (int)luaL_checkinteger(L, 2), (uint64_t)luaL_checkinteger(L, 3),
                          (uint64_t)luaL_checkinteger(L, 4), (uint64_t)luaL_checkinteger(L, 5),
                          luaL_checkstring(L, 6), luaL_optstring(L, 7, NULL)) != 0)
    return luaL_error(L, "out of memory");
  return 0;
}

/* -- u:fork(child, parent) ; u:exec(pid) */
static int l_fork(lua_State *L) {
  wb_unwinder_fork(check_unwind(L), (int)luaL_checkinteger(L, 2), (int)luaL_checkinteger(L, 3));
  return 0;
}
static int l_exec(lua_State *L) {
  wb_unwinder_exec(check_unwind(L), (int)luaL_checkinteger(L, 2));
  return 0;
}

/* -- n, err, errno = u:snapshot(pid) : the executable mappings of a running process */
static int l_snapshot(lua_State *L) {
  int n = wb_unwinder_snapshot(check_unwind(L), (int)luaL_checkinteger(L, 2));
  if (n < 0) return wb_push_error(L, errno, "unwind: snapshot");
  lua_pushinteger(L, n);
  return 1;
}

static uint64_t reg_field(lua_State *L, const char *name) {
  lua_getfield(L, 3, name);
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok) luaL_error(L, "wb.unwind: regs.%s must be an integer", name);
  lua_pop(L, 1);
  return (uint64_t)v;
}

/* -- pcs, stop = u:walk(pid, {ip = , sp = , bp = }, stack [, max = 1024]) : the frames of a user
 * stack from its registers and a copy (a string) of the memory at sp: the ip, then the return
 * addresses; stop is "complete" when the walk reached the stack's end, else why it stopped
 * ("no_mapping", "no_cfi", "complex_rule", "signal_frame", "off_stack", "bad_frame", "depth", "no_stack") */
static int l_walk(lua_State *L) {
  wb_unwinder *u = check_unwind(L);
  int pid = (int)luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  size_t len;
  const char *stack = luaL_checklstring(L, 4, &len);
  lua_Integer max = luaL_optinteger(L, 5, WB_UNW_MAX_FRAMES);
  luaL_argcheck(L, max >= 1 && max <= WB_UNW_MAX_FRAMES, 5, "1..1024 expected");
  uint64_t ip = reg_field(L, "ip"), sp = reg_field(L, "sp"), bp = reg_field(L, "bp");
  uint64_t pcs[WB_UNW_MAX_FRAMES];
  int stop;
  int n = wb_unwinder_walk(u, pid, ip, sp, bp, (const uint8_t *)stack, len, pcs, (int)max, &stop);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)pcs[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushstring(L, wb_unw_stop_names[stop]);
  return 2;
}

/* -- t = u:stats() : {walks, truncated, reasons = {reason = walks}, seconds (walking), objects =
 * {{path, build_id, cfi, fp, stopped, method = "cfi"|"fp"|"cfi+fp"|"none"}}} */
static int l_stats(lua_State *L) {
  wb_unwind_push_stats(L, check_unwind(L));
  return 1;
}

/* -- u:close() : idempotent (also __gc, __close) */
static int l_close(lua_State *L) {
  unwind_ud *p = luaL_checkudata(L, 1, UNWIND_MT);
  wb_unwinder_free(p->u);
  p->u = NULL;
  return 0;
}

static int l_tostring(lua_State *L) {
  unwind_ud *p = luaL_checkudata(L, 1, UNWIND_MT);
  if (!p->u) lua_pushliteral(L, "wb.unwind (closed)");
  else lua_pushfstring(L, "wb.unwind (%d processes)", (int)p->u->n);
  return 1;
}

/* -- frames = wb.unwind.symbolize(path, vaddr) : the inline chain at an ELF virtual address of the
 * file, innermost first: {{name, mangled?, file?, line?, inlined}} (the last one is the function
 * holding the others, inlined = false); {} without DWARF for it */
static int l_symbolize(lua_State *L) {
  wb_dwobj *o = wb_dwobj_get(luaL_checkstring(L, 1));
  uint64_t vaddr = (uint64_t)luaL_checkinteger(L, 2);
  wb_inline_frame fr[64];
  int n = o ? wb_dwobj_inline(o, vaddr, fr, 64) : 0;
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 5);
    char *d = wb_demangle(fr[i].name);
    wb_set_str(L, "name", d ? d : fr[i].name);
    if (d) wb_set_str(L, "mangled", fr[i].name);
    free(d);
    if (fr[i].file) wb_set_str(L, "file", fr[i].file);
    if (fr[i].line) wb_set_int(L, "line", fr[i].line);
    wb_set_bool(L, "inlined", fr[i].inlined);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* -- ok = wb.unwind.prefetch(path) : starts reading the DWARF of the file (inline chains, lines,
 * .debug_frame: tens of milliseconds of inflating for a compressed debug file such as libc's) on
 * wb's worker thread, ahead of the frames that will need it; false when the file cannot be loaded */
static int l_prefetch(lua_State *L) {
  wb_dwobj *o = wb_dwobj_get(luaL_checkstring(L, 1));
  if (o && wb_dwobj_loaded(o)) wb_dwobj_prefetch(o);
  lua_pushboolean(L, o && wb_dwobj_loaded(o));
  return 1;
}

/* -- list = wb.unwind.cache_warnings() : the warnings about wb's cache of inflated DWARF not given
 * yet ({} when none): a file whose build id has a copy made from other contents */
static int l_cache_warnings(lua_State *L) {
  lua_newtable(L);
  int n = 0;
  for (const char *w; (w = wb_dwarf_cache_warning());) {
    lua_pushstring(L, w);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/* -- name = wb.unwind.demangle(symbol) : the demangled C++ or Rust name, or nil */
static int l_demangle(lua_State *L) {
  char *d = wb_demangle(luaL_checkstring(L, 1));
  if (!d) return 0;
  lua_pushstring(L, d);
  free(d);
  return 1;
}

/* -- info = wb.unwind.object(path) : {build_id, eh_frame, debug_frame, debug_info, debug_file?,
 * frame_pointers} — what the unwinder and symbolizer can use in a file */
static int l_object(lua_State *L) {
  wb_dwobj *o = wb_dwobj_get(luaL_checkstring(L, 1));
  if (!o) return luaL_error(L, "out of memory");
  int eh, df, di;
  const char *dbg;
  wb_dwobj_info(o, &eh, &df, &di, &dbg);
  lua_createtable(L, 0, 6);
  wb_set_str(L, "build_id", wb_dwobj_build_id(o));
  wb_set_bool(L, "eh_frame", eh);
  wb_set_bool(L, "debug_frame", df);
  wb_set_bool(L, "debug_info", di);
  if (dbg) wb_set_str(L, "debug_file", dbg);
  wb_set_bool(L, "frame_pointers", wb_dwobj_frame_pointers(o));
  return 1;
}

static const luaL_Reg unwind_methods[] = {{"add_map", l_add_map}, {"close", l_close}, {"exec", l_exec},
                                          {"fork", l_fork},       {"snapshot", l_snapshot},
                                          {"stats", l_stats},     {"walk", l_walk}, {NULL, NULL}};

static const luaL_Reg unwind_functions[] = {{"cache_warnings", l_cache_warnings}, {"demangle", l_demangle},
                                            {"new", l_new},       {"object", l_object},
                                            {"prefetch", l_prefetch}, {"symbolize", l_symbolize}, {NULL, NULL}};

int luaopen_wb_unwind(lua_State *L) {
  wb_new_class(L, UNWIND_MT, unwind_methods, NULL, l_close, l_tostring);
  luaL_newlib(L, unwind_functions);
  return 1;
}
