/* wb.sym: symbolization of sampled stacks. A symbolizer keeps the executable mappings of each
 * process (from a /proc/PID/maps snapshot taken while it runs, or from perf's mmap, exec and fork
 * records) and resolves user addresses through the ELF .symtab/.dynsym of the mapped files
 * (core/sym_elf.c: cached per file, separate debug files found by build id), kernel addresses
 * through /proc/kallsyms, addresses in no file through the program's /tmp/perf-PID.map when it
 * writes one (core/sym_perfmap.c). Unresolved frames read module+0xoffset (the file offset).
 * As root, a file is named from only when every user the profiled processes ran as could read it
 * (core/sym_access.h); its frames read "module+0xoffset [not readable by the profiled user]". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym.h"
#include "sym_access.h"
#include "unwind.h"
#include "internal.h"
#include "pidindex.h"
#include "wb.h"

#define SYM_MT "wb.sym"

typedef struct mapping {
  uint64_t start, end, pgoff;
  char *path;
  char build_id[41]; /* expected build id (from a perf record), "" when unknown */
  const wb_elf *checked; /* the file the verdict below is for */
  dev_t checked_dev;
  ino_t checked_ino;
  unsigned checked_gen; /* of the users it was reached with */
  int readable;         /* every profiled user could read checked (and its debug file) */
} mapping;

typedef struct aspace {
  int pid, tried_snapshot;
  wb_perfmap *perfmap; /* /tmp/perf-PID.map, read at the first address outside every file */
  mapping *maps;
  size_t n, cap;
} aspace;

/* What naming one object's addresses cost this symbolizer (s:costs()): the first lookup in a file
 * also reads and indexes it, unless another symbolizer or a read-ahead thread did. */
typedef struct obj_cost {
  char *path;
  int64_t ns, addrs;
} obj_cost;

typedef struct symbolizer {
  aspace *as;
  size_t n, cap;
  wb_pidindex index; /* pid -> position in as */
  int closed;
  int dwarf; /* inline chains from DWARF and demangled names (core/unwind_obj.c) */
  obj_cost *costs;
  size_t ncosts, capcosts;
  wb_users users; /* who the profiled processes ran as, what they could not read (core/sym_access.h) */
} symbolizer;

#define KERNEL_OBJECT "[kernel.kallsyms]"
#define NOT_READABLE "[not readable by the profiled user]"

/* Adds ns to the cost of naming one address of path (out of memory: not counted). */
static void charge(symbolizer *s, const char *path, int64_t ns) {
  obj_cost *c = NULL;
  for (size_t i = s->ncosts; i-- > 0;)
    if (strcmp(s->costs[i].path, path) == 0) {
      c = &s->costs[i];
      break;
    }
  if (!c) {
    if (s->ncosts == s->capcosts) {
      size_t cap = s->capcosts ? s->capcosts * 2 : 16;
      obj_cost *m = realloc(s->costs, cap * sizeof *m);
      if (!m) return;
      s->costs = m;
      s->capcosts = cap;
    }
    char *copy = strdup(path);
    if (!copy) return;
    c = &s->costs[s->ncosts++];
    *c = (obj_cost){.path = copy};
  }
  c->ns += ns;
  c->addrs++;
}

/* ---- address spaces ----------------------------------------------------------------------- */

static void clear_maps(aspace *a) {
  for (size_t i = 0; i < a->n; i++) free(a->maps[i].path);
  a->n = 0;
}

static aspace *find_as(symbolizer *s, int pid, int create) {
  ptrdiff_t at = wb_pidindex_find(&s->index, s->as, sizeof *s->as, pid);
  if (at >= 0) return &s->as[at];
  if (!create) return NULL;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    aspace *p = realloc(s->as, cap * sizeof *p);
    if (!p) return NULL;
    s->as = p;
    s->cap = cap;
  }
  aspace *a = &s->as[s->n];
  memset(a, 0, sizeof *a);
  a->pid = pid;
  if (wb_pidindex_add(&s->index, s->as, sizeof *s->as, s->n) != 0) return NULL;
  s->n++;
  return a;
}

/* Adds a mapping, dropping those it overlaps (a later mmap replaces them). */
static int add_mapping(aspace *a, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
                       const char *build_id) {
  size_t kept = 0;
  for (size_t i = 0; i < a->n; i++) {
    if (a->maps[i].start < end && start < a->maps[i].end) free(a->maps[i].path);
    else a->maps[kept++] = a->maps[i];
  }
  a->n = kept;
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 32;
    mapping *p = realloc(a->maps, cap * sizeof *p);
    if (!p) return -1;
    a->maps = p;
    a->cap = cap;
  }
  mapping *m = &a->maps[a->n];
  *m = (mapping){.start = start, .end = end, .pgoff = pgoff, .path = strdup(path)};
  if (!m->path) return -1;
  snprintf(m->build_id, sizeof m->build_id, "%s", build_id ? build_id : "");
  a->n++;
  return 0;
}

static int snapshot_one(void *arg, uint64_t lo, uint64_t hi, uint64_t off, const char *path) {
  aspace *a = arg;
  if (!a->tried_snapshot) { /* the first mapping read: the file is there, forget the old ones */
    clear_maps(a);
    a->tried_snapshot = 1;
  }
  return add_mapping(a, lo, hi, off, path, NULL);
}

/* Replaces the process's mappings with the executable ones of /proc/PID/maps; returns the count
 * or -1 with errno. */
static int snapshot(aspace *a) {
  a->tried_snapshot = 0;
  int n = wb_maps_each(a->pid, snapshot_one, a);
  a->tried_snapshot = 1;
  return n;
}

static mapping *find_mapping(const aspace *a, uint64_t addr) {
  for (size_t i = a->n; i-- > 0;)
    if (addr >= a->maps[i].start && addr < a->maps[i].end) return &a->maps[i];
  return NULL;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

struct frame {
  int denied;       /* the file is one a profiled user could not read: not named */
  const char *name; /* NULL: unresolved */
  const char *module;
  uint64_t offset;  /* into the symbol when resolved, else into the module's file */
  const char *path; /* the mapping's file, NULL when the address is in none */
  uint64_t vaddr;   /* the address in the file's ELF terms, when named */
};

/* wb_users_may_name for the file e that m maps; the verdict is kept with m until the file or the
 * users change. */
static int readable(symbolizer *s, mapping *m, const wb_elf *e) {
  if (m->checked == e && m->checked_dev == e->dev && m->checked_ino == e->ino && m->checked_gen == s->users.gen)
    return m->readable;
  m->checked = e, m->checked_dev = e->dev, m->checked_ino = e->ino, m->checked_gen = s->users.gen;
  return m->readable = wb_users_may_name(&s->users, m->path, e);
}

static struct frame resolve_user(symbolizer *s, int pid, uint64_t addr) {
  struct frame f = {0};
  aspace *a = find_as(s, pid, 1);
  if (a && a->n == 0 && !a->tried_snapshot && snapshot(a) >= 0) wb_users_observe(&s->users, pid);
  mapping *m = a ? find_mapping(a, addr) : NULL;
  if (!m || strncmp(m->path, "//anon", 6) == 0) { /* generated code: the program's own perf map */
    uint64_t off;
    f.name = a ? wb_perfmap_lookup(a->perfmap, addr, &off) : NULL;
    if (a && !f.name) { /* not in the map read so far: read it again if it grew */
      uint32_t uids[WB_USERS_MAX];
      for (size_t i = 0; i < s->users.n; i++) uids[i] = s->users.u[i].uid;
      a->perfmap = wb_perfmap_load(pid, a->perfmap, uids, s->users.n);
      f.name = wb_perfmap_lookup(a->perfmap, addr, &off);
    }
    if (f.name) f.offset = off;
    return f;
  }
  f.path = m->path;
  f.module = base_name(m->path);
  f.offset = addr - m->start + m->pgoff;
  wb_elf *e = strcmp(m->path, "[vdso]") == 0 ? wb_elf_vdso() : m->path[0] == '/' ? wb_elf_get(m->path) : NULL;
  if (!e || (m->build_id[0] && e->build_id[0] && strcmp(m->build_id, e->build_id) != 0)) return f;
  if (m->path[0] == '/' && !readable(s, m, e)) {
    f.denied = 1;
    return f;
  }
  uint64_t vaddr = wb_elf_vaddr(e, f.offset), off;
  const char *name = vaddr ? wb_elf_lookup(e, vaddr, &off) : NULL;
  if (name) {
    f.name = name;
    f.offset = off;
    f.vaddr = vaddr;
  }
  return f;
}

/* ---- Lua bindings ----------------------------------------------------------------------------- */

static symbolizer *check_sym(lua_State *L) {
  symbolizer *s = luaL_checkudata(L, 1, SYM_MT);
  if (s->closed) luaL_error(L, "wb.sym symbolizer is closed");
  return s;
}

/* -- s = wb.sym.new([{dwarf = false}]) : an empty symbolizer (ELF files are cached across
 * symbolizers). dwarf: frames expand to their inline chains where the object has DWARF (its own
 * or a separate debug file), and C++/Rust names are demangled. */
static int l_new(lua_State *L) {
  int dwarf = 0;
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "dwarf");
    dwarf = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  symbolizer *s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  s->dwarf = dwarf;
  luaL_setmetatable(L, SYM_MT);
  return 1;
}

/* -- n, err, errno = s:snapshot(pid) : the executable mappings of a running process from
 * /proc/PID/maps (replacing what was known of pid); the count, or nil when it is gone */
static int l_snapshot(lua_State *L) {
  symbolizer *s = check_sym(L);
  aspace *a = find_as(s, (int)luaL_checkinteger(L, 2), 1);
  int n = a ? snapshot(a) : -1;
  if (n < 0) return wb_push_error(L, a ? errno : ENOMEM, "sym: snapshot");
  wb_users_observe(&s->users, a->pid);
  lua_pushinteger(L, n);
  return 1;
}

/* -- s:add_map(pid, addr, len, pgoff, path [, build_id]) : one mapping (a perf mmap record);
 * overlapped mappings are dropped. With build_id (hex), a file on disk with another build id is
 * not used to name these addresses. */
static int l_add_map(lua_State *L) {
  symbolizer *s = check_sym(L);
  int pid = (int)luaL_checkinteger(L, 2);
  uint64_t addr = (uint64_t)luaL_checkinteger(L, 3), len = (uint64_t)luaL_checkinteger(L, 4);
  uint64_t pgoff = (uint64_t)luaL_checkinteger(L, 5);
  const char *path = luaL_checkstring(L, 6);
  const char *build_id = luaL_optstring(L, 7, NULL);
  aspace *a = find_as(s, pid, 1);
  if (!a || add_mapping(a, addr, addr + len, pgoff, path, build_id) != 0) return luaL_error(L, "out of memory");
  return 0;
}

/* -- n = s:observe(pid) : notes the users pid and its living descendants run as (/proc/PID/status):
 * from then on, frames are named only from files every user noted could read; the number of
 * processes read (0 when pid is gone). A capture calls it at each drain. */
static int l_observe(lua_State *L) {
  symbolizer *s = check_sym(L);
  lua_pushinteger(L, wb_users_observe_tree(&s->users, (pid_t)luaL_checkinteger(L, 2)));
  return 1;
}

/* -- s:add_user([uid, gid]) : notes a user seen otherwise (the real ids of a BPF sample: no
 * supplementary groups, uid 0 reads all; nothing new when s:observe saw these ids); without
 * arguments, a user who owns nothing (wb could not see who ran: only what every user may read is
 * named) */
static int l_add_user(lua_State *L) {
  symbolizer *s = check_sym(L);
  if (lua_isnoneornil(L, 2)) {
    wb_users_add_stranger(&s->users);
    return 0;
  }
  lua_Integer uid = luaL_checkinteger(L, 2), gid = luaL_checkinteger(L, 3);
  luaL_argcheck(L, uid >= 0 && uid <= UINT32_MAX, 2, "a user id expected");
  luaL_argcheck(L, gid >= 0 && gid <= UINT32_MAX, 3, "a group id expected");
  wb_users_add_ids(&s->users, (uint32_t)uid, (uint32_t)gid);
  return 0;
}

/* -- s:add_users(other) : notes the users another symbolizer noted */
static int l_add_users(lua_State *L) {
  symbolizer *s = check_sym(L), *other = luaL_checkudata(L, 2, SYM_MT);
  for (size_t i = 0; i < other->users.n; i++) wb_users_add(&s->users, &other->users.u[i]);
  return 0;
}

/* -- ok = s:readable(path) : whether every user noted could read the ELF file at path as it is
 * now (and the debug file its symbols come from); one who could not is listed by s:denied() */
static int l_readable(lua_State *L) {
  symbolizer *s = check_sym(L);
  mapping m = {.path = (char *)luaL_checkstring(L, 2)};
  wb_elf *e = m.path[0] == '/' ? wb_elf_get(m.path) : NULL;
  lua_pushboolean(L, e && readable(s, &m, e));
  return 1;
}

/* -- list = s:denied() : the files a profiled user could not read: {{path (as mapped), uid (one
 * who could not), debug}}. Without debug, the file itself: its frames read "module+0xoffset [not
 * readable by the profiled user]"; debug = "symbols": the separate debug file its symbols would
 * come from (its frames read the same); debug = "dwarf": the one its DWARF would come from (its
 * frames are named, without inline frames or source lines). */
static int l_denied(lua_State *L) {
  symbolizer *s = check_sym(L);
  static const char *const parts[] = {[WB_DENIED_SYMBOLS] = "symbols", [WB_DENIED_DWARF] = "dwarf"};
  lua_createtable(L, (int)s->users.ndenied, 0);
  for (size_t i = 0; i < s->users.ndenied; i++) {
    const wb_denial *d = &s->users.denied[i];
    lua_createtable(L, 0, 3);
    wb_set_str(L, "path", d->path);
    wb_set_int(L, "uid", d->uid);
    if (d->part != WB_DENIED_FILE) wb_set_str(L, "debug", parts[d->part]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* -- s:fork(child, parent) : child starts with a copy of parent's mappings */
static int l_fork(lua_State *L) {
  symbolizer *s = check_sym(L);
  int child = (int)luaL_checkinteger(L, 2), parent = (int)luaL_checkinteger(L, 3);
  aspace *c = find_as(s, child, 1);
  aspace *p = find_as(s, parent, 0); /* after creating c: that may move the array */
  if (!c) return luaL_error(L, "out of memory");
  clear_maps(c);
  for (size_t i = 0; p && i < p->n; i++)
    add_mapping(c, p->maps[i].start, p->maps[i].end, p->maps[i].pgoff, p->maps[i].path, p->maps[i].build_id);
  return 0;
}

/* -- s:exec(pid) : pid executed a new program: its mappings are forgotten */
static int l_exec(lua_State *L) {
  symbolizer *s = check_sym(L);
  aspace *a = find_as(s, (int)luaL_checkinteger(L, 2), 1);
  if (a) {
    clear_maps(a);
    a->tried_snapshot = 1;
  }
  return 0;
}

/* -- name, module, offset = s:resolve(pid, addr) : the function holding a user address of pid
 * (offset into it); nil, module, file offset when the module has no symbol there; nil when no
 * mapping holds addr */
static int l_resolve(lua_State *L) {
  symbolizer *s = check_sym(L);
  struct frame f = resolve_user(s, (int)luaL_checkinteger(L, 2), (uint64_t)luaL_checkinteger(L, 3));
  if (!f.module) return 0;
  if (f.name) lua_pushstring(L, f.name);
  else lua_pushnil(L);
  lua_pushstring(L, f.module);
  lua_pushinteger(L, (lua_Integer)f.offset);
  return 3;
}

/* Pushes name into the table at -2 at position *at (demangled with s->dwarf); records what it
 * came from in the table at `info` (name -> {mangled?, file?, line?}). */
static void push_name(lua_State *L, symbolizer *s, const char *name, const char *suffix, const wb_inline_frame *fr,
                      int info, lua_Integer *at) {
  char *d = s->dwarf ? wb_demangle(name) : NULL;
  lua_pushfstring(L, "%s%s", d ? d : name, suffix);
  if (info && (d || fr)) {
    lua_pushvalue(L, -1);
    lua_createtable(L, 0, 3);
    if (d) wb_set_str(L, "mangled", name);
    if (fr && fr->file) wb_set_str(L, "file", fr->file);
    if (fr && fr->line) wb_set_int(L, "line", fr->line);
    lua_rawset(L, info);
  }
  free(d);
  lua_rawseti(L, -2, ++*at);
}

/* The frames of a user address with s->dwarf: its inlined functions (innermost first, each
 * "name (inlined)"), then the function holding them. *line (and *file) become the source position
 * of the address itself when DWARF has one. */
static void push_user(lua_State *L, symbolizer *s, const struct frame *f, int info, lua_Integer *at,
                      const char **file, int *line) {
  wb_inline_frame fr[32];
  /* f->name is in the file's symbol table, which wb_dwobj_get frees if it finds the file replaced:
   * a copy of it waits below the frames table */
  lua_pushstring(L, f->name);
  lua_insert(L, -2);
  const char *name = lua_tostring(L, -2);
  wb_dwobj *o = f->path ? wb_dwobj_get(f->path) : NULL;
  if (o && !wb_users_may_inline(&s->users, f->path, o)) o = NULL;
  int n = o ? wb_dwobj_inline(o, f->vaddr, fr, 32) : 0;
  if (n > 0 && fr[0].file && fr[0].line) {
    *file = fr[0].file;
    *line = fr[0].line;
  }
  for (int i = 0; i + 1 < n; i++) push_name(L, s, fr[i].name, " (inlined)", &fr[i], info, at);
  push_name(L, s, name, "", n > 0 ? &fr[n - 1] : NULL, info, at);
  lua_remove(L, -2);
}

/* -- names, unresolved, info, leaf = s:frames(pid, addrs [, "user"|"kernel"]) : frame names of one
 * sampled stack (leaf first, as sampled: every address but the first is a return address, looked
 * up one byte back). User frames: the function, else "module+0xoff", else "[unknown]"; kernel
 * frames get the suffix "_[k]". unresolved counts the frames not named by a symbol. With a dwarf
 * symbolizer a user frame expands to its inline chain ("name (inlined)" frames before the function
 * holding them), names are demangled, info maps each such name to {mangled?, file?, line?}
 * (the file:line of the frame's address: for an inlined function's caller, the call site), and
 * leaf = {file, line} is the source position of the first address (nil without DWARF for it). */
static int l_frames(lua_State *L) {
  symbolizer *s = check_sym(L);
  int pid = (int)luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  const char *kind = luaL_optstring(L, 4, "user");
  int kernel = strcmp(kind, "kernel") == 0;
  luaL_argcheck(L, kernel || strcmp(kind, "user") == 0, 4, "\"user\" or \"kernel\" expected");
  lua_Integer n = (lua_Integer)lua_rawlen(L, 3), unresolved = 0, at = 0;
  int info = 0, leaf_line = 0, ignored_line;
  const char *leaf_file = NULL, *ignored_file;
  if (s->dwarf) {
    lua_newtable(L);
    info = lua_gettop(L);
  }
  lua_createtable(L, (int)n, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 3, i);
    uint64_t addr = (uint64_t)lua_tointeger(L, -1) - (i > 1);
    lua_pop(L, 1);
    int64_t t0 = wb_clock_ns();
    const char *object = KERNEL_OBJECT; /* whose cost naming this address is */
    if (kernel) {
      uint64_t off;
      const char *name = wb_kallsyms_lookup(addr, &off);
      if (!name) unresolved++;
      lua_pushfstring(L, "%s_[k]", name ? name : "[unknown]");
      lua_rawseti(L, -2, ++at);
    } else {
      struct frame f = resolve_user(s, pid, addr);
      if (!f.name && i > 1) {
        /* a return address whose byte before is in no function: the start of a signal
         * trampoline (__restore_rt), which the kernel "returns" to */
        struct frame at = resolve_user(s, pid, addr + 1);
        if (at.name) f = at;
      }
      object = f.path;
      if (f.name && s->dwarf) {
        push_user(L, s, &f, info, &at, i == 1 ? &leaf_file : &ignored_file, i == 1 ? &leaf_line : &ignored_line);
      } else {
        if (f.name) {
          lua_pushstring(L, f.name);
        } else {
          char buf[320];
          if (f.module)
            snprintf(buf, sizeof buf, "%s+0x%llx%s", f.module, (unsigned long long)(f.offset + (i > 1)),
                     f.denied ? " " NOT_READABLE : "");
          else snprintf(buf, sizeof buf, "[unknown]");
          lua_pushstring(L, buf);
          unresolved++;
        }
        lua_rawseti(L, -2, ++at);
      }
    }
    if (object) charge(s, object, wb_clock_ns() - t0);
  }
  lua_pushinteger(L, unresolved);
  if (!info) return 2;
  lua_pushvalue(L, info);
  if (!leaf_line) return 3;
  lua_createtable(L, 0, 2);
  wb_set_str(L, "file", leaf_file);
  wb_set_int(L, "line", leaf_line);
  return 4;
}

static int by_cost(const void *a, const void *b) {
  const obj_cost *x = a, *y = b;
  return (x->ns < y->ns) - (x->ns > y->ns);
}

/* -- c = s:costs() : what naming addresses has cost so far: {seconds, addresses, objects =
 * {{path, seconds, addresses}, ...}} (the most costly object first; the kernel is
 * "[kernel.kallsyms]"). An object's first address includes reading and indexing the file when no
 * other symbolizer or read-ahead did. */
static int l_costs(lua_State *L) {
  symbolizer *s = check_sym(L);
  if (s->ncosts > 1) qsort(s->costs, s->ncosts, sizeof *s->costs, by_cost); /* costs is NULL when none */
  int64_t ns = 0, addrs = 0;
  lua_createtable(L, 0, 3);
  lua_createtable(L, (int)s->ncosts, 0);
  for (size_t i = 0; i < s->ncosts; i++) {
    const obj_cost *c = &s->costs[i];
    ns += c->ns;
    addrs += c->addrs;
    lua_createtable(L, 0, 3);
    wb_set_str(L, "path", c->path);
    wb_set_num(L, "seconds", (double)c->ns / 1e9);
    wb_set_int(L, "addresses", c->addrs);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "objects");
  wb_set_num(L, "seconds", (double)ns / 1e9);
  wb_set_int(L, "addresses", addrs);
  return 1;
}

/* -- list = s:pids() : the processes the symbolizer knows mappings of */
static int l_pids(lua_State *L) {
  symbolizer *s = check_sym(L);
  lua_createtable(L, (int)s->n, 0);
  int k = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->as[i].n == 0) continue;
    lua_pushinteger(L, s->as[i].pid);
    lua_rawseti(L, -2, ++k);
  }
  return 1;
}

/* -- s:close() : forgets every mapping; idempotent (also __gc, __close) */
static int l_close(lua_State *L) {
  symbolizer *s = luaL_checkudata(L, 1, SYM_MT);
  for (size_t i = 0; i < s->n; i++) {
    clear_maps(&s->as[i]);
    free(s->as[i].maps);
    wb_perfmap_free(s->as[i].perfmap);
  }
  free(s->as);
  wb_pidindex_free(&s->index);
  for (size_t i = 0; i < s->ncosts; i++) free(s->costs[i].path);
  free(s->costs);
  wb_users_free(&s->users);
  s->costs = NULL;
  s->ncosts = s->capcosts = 0;
  s->as = NULL;
  s->n = s->cap = 0;
  s->closed = 1;
  return 0;
}

static int l_tostring(lua_State *L) {
  symbolizer *s = luaL_checkudata(L, 1, SYM_MT);
  if (s->closed) lua_pushliteral(L, "wb.sym (closed)");
  else lua_pushfstring(L, "wb.sym (%d processes)", (int)s->n);
  return 1;
}

/* -- info = wb.sym.file(path) : {build_id, symbols (functions known), symtab (true when not only
 * .dynsym), debug_file?, minidebug? (the .symtab came from .gnu_debugdata), error?, unreadable? (true when the file could not be read: error says why),
 * frame_pointers
 * = {functions, with}} — frame_pointers counts the
 * functions (of a file with a .symtab) whose code starts by setting up %rbp */
static int l_file(lua_State *L) {
  wb_elf *e = wb_elf_get(luaL_checkstring(L, 1));
  if (!e) return luaL_error(L, "out of memory");
  lua_createtable(L, 0, 6);
  wb_set_str(L, "build_id", e->build_id);
  wb_set_int(L, "symbols", (lua_Integer)e->nsyms);
  wb_set_bool(L, "symtab", e->symtab);
  if (e->debug_file) wb_set_str(L, "debug_file", e->debug_file);
  if (e->minidebug) wb_set_bool(L, "minidebug", 1);
  if (e->err[0]) wb_set_str(L, "error", e->err);
  if (e->unreadable) wb_set_bool(L, "unreadable", 1);
  if (e->symtab && !e->debug_file) {
    wb_elf_check_frame_pointers(e);
    lua_createtable(L, 0, 2);
    wb_set_int(L, "functions", e->fp_functions);
    wb_set_int(L, "with", e->fp_with);
    lua_setfield(L, -2, "frame_pointers");
  }
  return 1;
}

/* -- name, offset = wb.sym.lookup(path, vaddr) : the function of an ELF file at a virtual
 * address (as nm prints them), or nil */
static int l_lookup(lua_State *L) {
  wb_elf *e = wb_elf_get(luaL_checkstring(L, 1));
  uint64_t off;
  const char *name = e ? wb_elf_lookup(e, (uint64_t)luaL_checkinteger(L, 2), &off) : NULL;
  if (!name) return 0;
  lua_pushstring(L, name);
  lua_pushinteger(L, (lua_Integer)off);
  return 2;
}

/* -- name, offset = wb.sym.kernel(addr) : the kernel function at addr from /proc/kallsyms, or nil
 * (always nil for a reader to whom kallsyms shows zero addresses) */
static int l_kernel(lua_State *L) {
  uint64_t off;
  const char *name = wb_kallsyms_lookup((uint64_t)luaL_checkinteger(L, 1), &off);
  if (!name) return 0;
  lua_pushstring(L, name);
  lua_pushinteger(L, (lua_Integer)off);
  return 2;
}

/* -- n = wb.sym.load_kernel() : reads /proc/kallsyms now rather than at the first kernel lookup;
 * the number of kernel functions, 0 when kallsyms shows zero addresses to this user */
static int l_load_kernel(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)wb_kallsyms_load());
  return 1;
}

/* -- ok = wb.sym.prefetch_kernel() : starts reading /proc/kallsyms on a thread of wb's, so that the
 * first kernel lookup after a run finds it read (a capture calls it as it starts); false
 * when no thread could be started (the first lookup then reads it) */
static int l_prefetch_kernel(lua_State *L) {
  lua_pushboolean(L, wb_kallsyms_prefetch() == 0);
  return 1;
}

static const luaL_Reg sym_methods[] = {{"add_map", l_add_map}, {"add_user", l_add_user}, {"add_users", l_add_users},
                                       {"close", l_close},
                                       {"costs", l_costs},     {"denied", l_denied},     {"exec", l_exec},
                                       {"fork", l_fork},       {"frames", l_frames},     {"observe", l_observe},
                                       {"pids", l_pids},       {"readable", l_readable}, {"resolve", l_resolve},
                                       {"snapshot", l_snapshot},
                                       {NULL, NULL}};

static const luaL_Reg sym_functions[] = {{"file", l_file},     {"kernel", l_kernel},
                                         {"load_kernel", l_load_kernel}, {"lookup", l_lookup},
                                         {"prefetch_kernel", l_prefetch_kernel},
                                         {"new", l_new},       {NULL, NULL}};

int luaopen_wb_sym(lua_State *L) {
  wb_new_class(L, SYM_MT, sym_methods, NULL, l_close, l_tostring);
  luaL_newlib(L, sym_functions);
  return 1;
}
