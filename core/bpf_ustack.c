/* wb.bpf's unwind mode, the user-space side (see core/bpf_ustack.h): each on-CPU record is walked and
 * counted once; a switch-out record is walked and kept as the thread's pending stack until its
 * switch-in record adds the time away to it. Stacks are aggregated by (process, comm, kind,
 * user pcs, Python frames, kernel pcs) in an open-addressing table. A record of a CPython
 * process carries its Python frames (code object, instruction pointer) as read by the BPF program
 * at the same instant; they are named here (core/python_read.c), and the process is put in the
 * program's py_procs when first seen (looked at again at each drain until it is CPython). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "bpf_ustack.h"
#include "critpath.h"
#include <linux/types.h>

#include "bpf/profile.h"

typedef struct pending {
  uint32_t tid1; /* tid + 1, 0 free */
  uint64_t ts_out;
  size_t entry;  /* index + 1 into entries, 0 none */
  size_t later;  /* or index + 1 into the deferred records */
  uint64_t last_in, wake_ts; /* the thread's last switch-in; its last wake-up since (0: none) */
  uint64_t waker;            /* tgid << 32 | tid of that wake-up's waker */
  uint16_t wake_flags;
  char waker_comm[16];
} pending;

/* A timeline stack id that names a deferred record (index + 1) until wb_ustacks_replay places it */
#define LATER_ID 0x80000000u

/* A record of a process whose mappings were unknown when it was drained (it had exited: /proc has
 * none); walked at the end, once the side-band records gave them (wb_ustacks_replay). */
typedef struct deferred {
  void *rec;
  size_t size;
  uint64_t away;     /* a switch-out: the time away, once its switch-in came */
  uint64_t runnable; /* of that, the time runnable after its wake-up (its run-queue twin's) */
} deferred;

#define DEFERRED_MAX (64u << 20) /* bytes of deferred records kept, at most */

typedef struct pyseen {
  uint32_t tgid1;  /* tgid + 1, 0 free */
  uint32_t epoch;  /* the drain it was looked at in */
  char comm[16];   /* its name then (an exec changes it) */
  wb_pyproc *proc; /* NULL: not a CPython wb reads (yet) */
} pyseen;

struct wb_ustacks {
  wb_unwinder *u;
  wb_pyres *py;
  int (*py_install)(void *ctx, uint32_t tgid, const struct wb_py_proc *pp);
  void *py_ctx;
  pyseen *seen;
  size_t nseen, capseen;
  uint32_t epoch;
  uint64_t py_records;
  wb_ustack_entry *e;
  size_t n, cap;
  uint64_t *pool;
  size_t npool, cappool;
  uint32_t *slots; /* index + 1 into e */
  size_t nslots;
  pending *pend;
  size_t npend, cappend;
  uint64_t bytes;
  uint64_t stack_lost; /* switch-ins placed in a lost entry (lost_entry) */
  uint64_t own[16][2]; /* [start, end) of wb's own BPF code */
  size_t nown;
  deferred *later;
  size_t nlater, caplater, later_bytes;
  wb_cp_timeline *tl; /* NULL: no timeline kept */
};

wb_ustacks *wb_ustacks_new(void) {
  wb_ustacks *a = calloc(1, sizeof *a);
  if (a && !(a->u = wb_unwinder_new())) {
    free(a);
    return NULL;
  }
  return a;
}

void wb_ustacks_free(wb_ustacks *a) {
  if (!a) return;
  wb_unwinder_free(a->u);
  wb_pyres_free(a->py);
  free(a->seen);
  free(a->e);
  free(a->pool);
  free(a->slots);
  free(a->pend);
  for (size_t i = 0; i < a->nlater; i++) free(a->later[i].rec);
  free(a->later);
  wb_cp_free(a->tl);
  free(a);
}

int wb_ustacks_timeline(wb_ustacks *a, size_t max_bytes) {
  if (!a->tl) a->tl = wb_cp_new(max_bytes);
  return a->tl ? 0 : -1;
}

wb_cp_timeline *wb_ustacks_get_timeline(wb_ustacks *a) { return a->tl; }

void wb_ustacks_own_code(wb_ustacks *a, uint64_t start, uint32_t len) {
  if (a->nown < sizeof a->own / sizeof a->own[0]) a->own[a->nown][0] = start, a->own[a->nown++][1] = start + len;
}

static int own_code(const wb_ustacks *a, uint64_t pc) {
  for (size_t i = 0; i < a->nown; i++)
    if (pc >= a->own[i][0] && pc < a->own[i][1]) return 1;
  return 0;
}

static uint64_t hash_of(const struct wb_ustack_hdr *h, uint32_t py, const uint64_t *pcs, size_t n) {
  uint64_t x = 1469598103934665603ULL ^ ((uint64_t)h->tgid << 32 | h->kind);
  x ^= (uint64_t)py << 40;
  for (size_t i = 0; i < sizeof h->comm && h->comm[i]; i++) x = (x ^ (uint8_t)h->comm[i]) * 1099511628211ULL;
  for (size_t i = 0; i < n; i++) x = (x ^ pcs[i]) * 1099511628211ULL;
  return x ? x : 1;
}

static int regrow(wb_ustacks *a) {
  size_t nslots = a->nslots ? a->nslots * 2 : 1024;
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < a->n; i++) {
    size_t j = a->e[i].hash & (nslots - 1);
    while (slots[j]) j = (j + 1) & (nslots - 1);
    slots[j] = (uint32_t)i + 1;
  }
  free(a->slots);
  a->slots = slots;
  a->nslots = nslots;
  return 0;
}

/* Room in the pool for n more pcs; -1 when out of memory. */
static int reserve_pool(wb_ustacks *a, size_t n) {
  if (a->npool + n <= a->cappool) return 0;
  size_t cap = a->cappool ? a->cappool * 2 : 4096;
  while (cap < a->npool + n) cap *= 2;
  uint64_t *p = realloc(a->pool, cap * sizeof *p);
  if (!p) return -1;
  a->pool = p;
  a->cappool = cap;
  return 0;
}

/* The index + 1 of the entry of this stack (n items: nu user pcs, the Python items, nk kernel
 * pcs; pcs may point into the pool when reserve_pool(a, n) made room first), made when new; 0 when
 * out of memory. */
static size_t entry_of(wb_ustacks *a, const struct wb_ustack_hdr *h, uint32_t py, const uint64_t *pcs, size_t nu,
                       size_t nk, size_t n) {
  if ((a->n + 1) * 2 > a->nslots && regrow(a) != 0) return 0;
  uint64_t hv = hash_of(h, py, pcs, n);
  size_t j = hv & (a->nslots - 1);
  for (; a->slots[j]; j = (j + 1) & (a->nslots - 1)) {
    wb_ustack_entry *e = &a->e[a->slots[j] - 1];
    if (e->hash == hv && e->tgid == h->tgid && e->kind == h->kind && e->nu == nu && e->nk == nk &&
        e->nu + e->np + e->nk == n && e->py == py && memcmp(e->comm, h->comm, sizeof e->comm) == 0 &&
        (n == 0 || memcmp(a->pool + e->pcs, pcs, n * sizeof *pcs) == 0))
      return a->slots[j];
  }
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 256;
    wb_ustack_entry *p = realloc(a->e, cap * sizeof *p);
    if (!p) return 0;
    a->e = p;
    a->cap = cap;
  }
  if (reserve_pool(a, n) != 0) return 0;
  if (n) memcpy(a->pool + a->npool, pcs, n * sizeof *pcs); /* an empty stack: the pool may be NULL */
  wb_ustack_entry *e = &a->e[a->n];
  *e = (wb_ustack_entry){.tgid = h->tgid, .kind = h->kind, .nu = (uint32_t)nu, .np = (uint32_t)(n - nu - nk),
                         .nk = (uint32_t)nk, .py = py, .pcs = a->npool, .hash = hv};
  memcpy(e->comm, h->comm, sizeof e->comm);
  a->npool += n;
  a->slots[j] = (uint32_t)++a->n;
  return a->n;
}

/* The entry of entry at's stack (index + 1) with the kind WB_KIND_RUNQUEUE, made when new; 0 when
 * out of memory. */
static size_t runnable_twin(wb_ustacks *a, size_t at) {
  wb_ustack_entry e = a->e[at - 1];
  size_t n = (size_t)e.nu + e.np + e.nk;
  if (reserve_pool(a, n) != 0) return 0;
  struct wb_ustack_hdr h = {.tgid = e.tgid, .kind = WB_KIND_RUNQUEUE};
  memcpy(h.comm, e.comm, sizeof h.comm);
  return entry_of(a, &h, e.py, n ? a->pool + e.pcs : NULL, e.nu, e.nk, n);
}

/* Adds an off-CPU interval to entry at: blocked, the time until its wake-up; the rest,
 * runnable, to its run-queue twin. */
static void add_away(wb_ustacks *a, size_t at, uint64_t blocked, uint64_t runnable) {
  a->e[at - 1].count += blocked;
  if (!runnable) return;
  size_t twin = runnable_twin(a, at);
  if (twin) a->e[twin - 1].count += runnable;
  else a->e[at - 1].count += runnable; /* out of memory: kept, as blocked */
}

/* The pending slot of tid (created when asked). */
static pending *pending_of(wb_ustacks *a, uint32_t tid, int create) {
  if (create && (a->npend + 1) * 2 > a->cappend) {
    size_t cap = a->cappend ? a->cappend * 2 : 256;
    pending *p = calloc(cap, sizeof *p);
    if (!p) return NULL;
    for (size_t i = 0; i < a->cappend; i++) {
      if (!a->pend[i].tid1) continue;
      size_t j = a->pend[i].tid1 * 2654435761u & (cap - 1);
      while (p[j].tid1) j = (j + 1) & (cap - 1);
      p[j] = a->pend[i];
    }
    free(a->pend);
    a->pend = p;
    a->cappend = cap;
  }
  if (!a->cappend) return NULL;
  for (size_t j = (tid + 1) * 2654435761u & (a->cappend - 1);; j = (j + 1) & (a->cappend - 1)) {
    if (a->pend[j].tid1 == tid + 1) return &a->pend[j];
    if (a->pend[j].tid1) continue;
    if (!create) return NULL;
    a->pend[j].tid1 = tid + 1;
    a->npend++;
    return &a->pend[j];
  }
}

/* The CPython process tgid as the resolver attached it, looked at once per drain (and when its
 * name changes: an exec) until it is one, or now when forced; installed in the BPF program when
 * first attached. */
static wb_pyproc *python_of(wb_ustacks *a, uint32_t tgid, const char *comm, int force) {
  if ((a->nseen + 1) * 2 > a->capseen) {
    size_t cap = a->capseen ? a->capseen * 2 : 64;
    pyseen *t = calloc(cap, sizeof *t);
    if (!t) return NULL;
    for (size_t i = 0; i < a->capseen; i++) {
      if (!a->seen[i].tgid1) continue;
      size_t j = a->seen[i].tgid1 * 2654435761u & (cap - 1);
      while (t[j].tgid1) j = (j + 1) & (cap - 1);
      t[j] = a->seen[i];
    }
    free(a->seen);
    a->seen = t, a->capseen = cap;
  }
  size_t j = (tgid + 1) * 2654435761u & (a->capseen - 1);
  while (a->seen[j].tgid1 && a->seen[j].tgid1 != tgid + 1) j = (j + 1) & (a->capseen - 1);
  pyseen *s = &a->seen[j];
  if (!s->tgid1) {
    s->tgid1 = tgid + 1, s->epoch = a->epoch - 1;
    a->nseen++;
  }
  if (s->proc || (s->epoch == a->epoch && !force && (!comm || memcmp(s->comm, comm, sizeof s->comm) == 0)))
    return s->proc;
  s->epoch = a->epoch;
  if (comm) memcpy(s->comm, comm, sizeof s->comm);
  if ((s->proc = wb_pyres_attach(a->py, (pid_t)tgid))) {
    struct wb_py_proc pp;
    wb_pyproc_bpf(s->proc, &pp);
    a->py_install(a->py_ctx, tgid, &pp);
  }
  return s->proc;
}

/* The Python items of a record (innermost first): label ids and WB_PY_GROUP_END after the
 * frames of each _PyEval_EvalFrameDefault call; their number. */
static size_t python_items(wb_ustacks *a, wb_pyproc *p, const struct wb_py_frame *f, uint32_t n, uint64_t *out) {
  size_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t flags = f[i].code & 3, code = f[i].code & ~(uint64_t)3;
    if (flags & WB_PY_SHIM) {
      if (k > 0 && out[k - 1] != WB_PY_GROUP_END) out[k++] = WB_PY_GROUP_END;
      continue;
    }
    out[k++] = wb_pyres_label(a->py, p, code, f[i].instr, f[i].qual);
    if (flags & WB_PY_ENTRY) out[k++] = WB_PY_GROUP_END;
  }
  return k;
}

void wb_ustacks_prime(wb_ustacks *a, const void *data, size_t size) {
  struct wb_ustack_hdr h;
  if (!a->py || size < sizeof h) return;
  memcpy(&h, data, sizeof h);
  if ((h.type != WB_REC_ONCPU && h.type != WB_REC_OUT) || !(h.py_flags & WB_PYF_PROCESS)) return;
  size_t kbytes = h.kern_n > WB_BPF_MAX_FRAMES ? 0 : (size_t)h.kern_n * 8; /* as place() reads it */
  if (h.py_n == 0 || h.py_n > WB_PY_MAX_FRAMES || sizeof h + kbytes + h.py_n * sizeof(struct wb_py_frame) > size)
    return;
  wb_pyproc *proc = python_of(a, h.tgid, h.comm, 0);
  for (uint32_t i = 0; proc && i < h.py_n; i++) {
    struct wb_py_frame f;
    memcpy(&f, (const uint8_t *)data + sizeof h + kbytes + i * sizeof f, sizeof f);
    if (!(f.code & WB_PY_SHIM)) wb_pyres_prime(a->py, proc, f.code & ~(uint64_t)3, f.qual);
  }
}

/* Keeps a copy of the record for wb_ustacks_replay; 0 when there is no room left (it is walked
 * now, without mappings). A switch-out's pending slot points at it. */
static int defer(wb_ustacks *a, const void *data, size_t size, const struct wb_ustack_hdr *h) {
  if (a->later_bytes + size > DEFERRED_MAX) return 0;
  if (a->nlater == a->caplater) {
    size_t cap = a->caplater ? a->caplater * 2 : 64;
    deferred *p = realloc(a->later, cap * sizeof *p);
    if (!p) return 0;
    a->later = p, a->caplater = cap;
  }
  void *copy = malloc(size);
  if (!copy) return 0;
  memcpy(copy, data, size);
  a->later[a->nlater++] = (deferred){.rec = copy, .size = size};
  a->later_bytes += size;
  pending *p = h->type == WB_REC_OUT ? pending_of(a, h->tid, 1) : NULL;
  if (p) p->ts_out = h->ts, p->entry = 0, p->later = a->nlater;
  return 1;
}

#define PLACE_LATER SIZE_MAX

/* Walks an on-CPU or switch-out record and names its Python frames: the index + 1 of its entry
 * (0: malformed or out of memory); with `live`, PLACE_LATER (nothing counted) when the walk left
 * the mappings a process got from its parent at a fork and the process is gone since: the record
 * is to wait for its own mappings. */
static size_t place(wb_ustacks *a, const void *data, size_t size, struct wb_ustack_hdr *hp, int live) {
  struct wb_ustack_hdr h = *hp;
  const uint8_t *body = (const uint8_t *)data + sizeof h;
  size_t room = size - sizeof h;
  if (h.kern_n > WB_BPF_MAX_FRAMES || h.kern_n * 8u > room) h.kern_n = 0;
  size_t kbytes = (size_t)h.kern_n * 8;
  room -= kbytes;
  size_t py_bytes = (size_t)h.py_n * sizeof(struct wb_py_frame);
  if (h.py_n > WB_PY_MAX_FRAMES || py_bytes > room) h.py_n = 0, py_bytes = 0;
  if (h.size > room - py_bytes) h.size = 0;
  uint64_t pcs[WB_UNW_MAX_FRAMES + 2 * WB_PY_MAX_FRAMES + 1 + WB_BPF_MAX_FRAMES];
  int stop = WB_UNW_COMPLETE, n = 0;
  if (h.ip) n = wb_unwinder_walk(a->u, (int)h.tgid, h.ip, h.sp, h.bp, body + kbytes + py_bytes, h.size, pcs,
                                 WB_UNW_MAX_FRAMES - 1, &stop);
  if (h.ip && live && stop == WB_UNW_NO_MAP && wb_unwinder_inherited_gone(a->u, (int)h.tgid)) {
    wb_unwinder_discount(a->u, stop);
    return PLACE_LATER;
  }
  a->bytes += h.size;
  if (n > 0 && stop != WB_UNW_COMPLETE) pcs[n++] = WB_UNW_TRUNCATED_PC;
  if (n < 0) n = 0;
  size_t total = (size_t)n;
  uint32_t py = 0;
  wb_pyproc *proc = a->py ? python_of(a, h.tgid, h.comm, 0) : NULL;
  if (proc && (h.py_flags & WB_PYF_PROCESS)) {
    struct wb_py_frame f[WB_PY_MAX_FRAMES];
    memcpy(f, body + kbytes, py_bytes);
    total += python_items(a, proc, f, h.py_n, pcs + n);
    py = h.py_flags;
    if (h.py_n) a->py_records++;
    if (h.type == WB_REC_OUT && h.sysno == SYS_futex && wb_pyproc_in_gil(proc, h.arg0)) py |= WB_PY_GIL_WAIT;
  }
  /* up to the program's own outermost frame: its code and what it called (helpers, bpf_loop),
   * as when a sample interrupted it; the stack of the code it ran for starts after that */
  uint32_t skip = 0;
  memcpy(pcs + total, body, kbytes);
  for (uint32_t k = 0; k < h.kern_n; k++)
    if (own_code(a, pcs[total + k])) skip = k + 1;
  uint32_t nk = h.kern_n - skip;
  memmove(pcs + total, pcs + total + skip, (size_t)nk * 8);
  total += nk;
  return entry_of(a, &h, py, pcs, (size_t)n, nk, total);
}

/* The entry of the process's off-CPU time of h's kind for a switch-in without its switch-out
 * record (not placed, or the pending table out of memory): its only pc WB_UNW_LOST_PC, as the
 * kernel's offcpu_lost; 0 when out of memory. */
static size_t lost_entry(wb_ustacks *a, const struct wb_ustack_hdr *h) {
  uint64_t pc = WB_UNW_LOST_PC;
  size_t at = entry_of(a, h, 0, &pc, 1, 0, 1);
  if (at) a->stack_lost++;
  return at;
}

/* A wake-up of a tracked thread: its creation, or the end of a wait (kept until its switch-in). */
static void on_wake(wb_ustacks *a, const struct wb_ustack_hdr *h) {
  if (!a->tl) return;
  if (h->kind & WB_WAKE_NEW) {
    wb_cp_birth b = {.ts = h->ts, .tid = h->tid, .tgid = h->tgid, .by_tid = (uint32_t)h->arg0,
                     .by_tgid = (uint32_t)(h->arg0 >> 32)};
    wb_cp_add_birth(a->tl, &b);
    return;
  }
  pending *p = pending_of(a, h->tid, 1);
  if (!p) return;
  p->wake_ts = h->ts, p->waker = h->arg0, p->wake_flags = (uint16_t)h->kind;
  memcpy(p->waker_comm, h->comm, sizeof p->waker_comm);
}

/* A switch-in: the thread's off-CPU interval into the timeline, with the wake-up that ended it
 * (the last one since its previous switch-in: a wake-up may be stamped before the switch-out). */
static void on_switch_in(wb_ustacks *a, const struct wb_ustack_hdr *h, pending *p) {
  if (!a->tl) return;
  wb_cp_off o = {.out = h->ts_out, .in = h->ts, .tid = h->tid, .tgid = h->tgid, .kind = (uint16_t)h->kind};
  if (p && p->ts_out == h->ts_out) o.stack = p->entry ? (uint32_t)p->entry : p->later ? (uint32_t)p->later | LATER_ID : 0;
  if (p && p->wake_ts && p->wake_ts > p->last_in && p->wake_ts <= h->ts) {
    o.wake = p->wake_ts, o.waker_tid = (uint32_t)p->waker, o.waker_tgid = (uint32_t)(p->waker >> 32);
    o.flags = p->wake_flags;
    memcpy(o.waker_comm, p->waker_comm, sizeof o.waker_comm);
  }
  wb_cp_add_off(a->tl, &o);
}

int wb_ustacks_handle(wb_ustacks *a, const void *data, size_t size) {
  struct wb_ustack_hdr h;
  if (size < sizeof h) return 0;
  memcpy(&h, data, sizeof h);
  if (h.type == WB_REC_FORK || h.type == WB_REC_EXEC) {
    wb_unwinder_image(a->u, (int)h.tgid, h.type == WB_REC_FORK ? (int)h.arg0 : 0);
    return 0;
  }
  if (h.type == WB_REC_EXIT) {
    if (a->tl) wb_cp_add_exit(a->tl, h.tgid, h.ts);
    wb_unwinder_exit(a->u, (int)h.tgid);
    return 0;
  }
  if (h.type == WB_REC_WAKE) {
    on_wake(a, &h);
    return 0;
  }
  if (h.type == WB_REC_IN) {
    if (h.ts < h.ts_out) return 0;
    pending *p = pending_of(a, h.tid, 0);
    size_t lost = 0;
    /* a blocked thread's wake-up (stamped by the program) ends its wait: then it was runnable */
    uint64_t end = h.kind == WB_KIND_BLOCKED && h.arg0 > h.ts_out && h.arg0 < h.ts ? h.arg0 : h.ts;
    if (p && p->ts_out == h.ts_out && p->entry) add_away(a, p->entry, end - h.ts_out, h.ts - end);
    else if (p && p->ts_out == h.ts_out && p->later) {
      a->later[p->later - 1].away += h.ts - h.ts_out;
      a->later[p->later - 1].runnable += h.ts - end;
    } else if ((lost = lost_entry(a, &h))) add_away(a, lost, end - h.ts_out, h.ts - end);
    on_switch_in(a, &h, p);
    if (p) p->entry = 0, p->later = 0, p->last_in = h.ts, p->wake_ts = 0;
    return 0;
  }
  if (h.ip && wb_unwinder_mapped(a->u, (int)h.tgid) == 0 && defer(a, data, size, &h)) {
    if (h.type == WB_REC_ONCPU && a->tl) wb_cp_add_sample(a->tl, h.ts, h.tid, (uint32_t)a->nlater | LATER_ID);
    return 0;
  }
  size_t at = place(a, data, size, &h, 1);
  if (at == PLACE_LATER) {
    int waits = defer(a, data, size, &h);
    at = waits ? 0 : place(a, data, size, &h, 0);
    if (waits && h.type == WB_REC_ONCPU && a->tl) wb_cp_add_sample(a->tl, h.ts, h.tid, (uint32_t)a->nlater | LATER_ID);
  }
  if (!at) return 0;
  if (h.type == WB_REC_ONCPU) {
    a->e[at - 1].count++;
    if (a->tl) wb_cp_add_sample(a->tl, h.ts, h.tid, (uint32_t)at);
  } else {
    pending *p = pending_of(a, h.tid, 1);
    if (p) {
      p->ts_out = h.ts;
      p->entry = at;
      p->later = 0;
    }
  }
  return 0;
}

size_t wb_ustacks_deferred_count(const wb_ustacks *a) { return a->nlater; }

size_t wb_ustacks_deferred_pids(const wb_ustacks *a, uint32_t *out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < a->nlater; i++) {
    uint32_t tgid;
    memcpy(&tgid, (const uint8_t *)a->later[i].rec + offsetof(struct wb_ustack_hdr, tgid), sizeof tgid);
    size_t k = 0;
    while (k < n && out[k] != tgid) k++;
    if (k == n && n < max) out[n++] = tgid;
  }
  return n;
}

typedef struct placed {
  const uint32_t *at;
  size_t n;
} placed;

/* A timeline stack id with the deferred records' places (0 for one not placed). */
static uint32_t placed_id(void *ctx, uint32_t id) {
  const placed *p = ctx;
  if (!(id & LATER_ID)) return id;
  id &= ~LATER_ID;
  return id >= 1 && id <= p->n ? p->at[id - 1] : 0;
}

void wb_ustacks_replay(wb_ustacks *a) {
  for (size_t i = 0; i < a->cappend; i++) a->pend[i].later = 0; /* their switch-ins are gone */
  uint32_t *ats = a->tl && a->nlater ? calloc(a->nlater, sizeof *ats) : NULL;
  for (size_t i = 0; i < a->nlater; i++) {
    deferred *d = &a->later[i];
    struct wb_ustack_hdr h;
    memcpy(&h, d->rec, sizeof h);
    size_t at = place(a, d->rec, d->size, &h, 0);
    if (at && h.type == WB_REC_ONCPU) a->e[at - 1].count++;
    else if (at) add_away(a, at, d->away - d->runnable, d->runnable);
    if (ats) ats[i] = (uint32_t)at;
    free(d->rec);
  }
  if (a->tl) {
    placed p = {.at = ats, .n = ats ? a->nlater : 0};
    wb_cp_map_stacks(a->tl, placed_id, &p);
  }
  free(ats);
  a->nlater = a->later_bytes = 0;
}

const wb_ustack_entry *wb_ustacks_entries(const wb_ustacks *a, size_t *n) {
  *n = a->n;
  return a->e;
}
const uint64_t *wb_ustacks_pool(const wb_ustacks *a) { return a->pool; }

void wb_ustacks_python(wb_ustacks *a, int (*install)(void *ctx, uint32_t tgid, const struct wb_py_proc *pp), void *ctx) {
  if (!a->py) a->py = wb_pyres_new();
  a->py_install = install, a->py_ctx = ctx;
}
wb_pyres *wb_ustacks_pyres(const wb_ustacks *a) { return a->py; }
void wb_ustacks_next_epoch(wb_ustacks *a) { a->epoch++; }
int wb_ustacks_python_attach(wb_ustacks *a, uint32_t tgid) { return a->py && python_of(a, tgid, NULL, 1) != NULL; }
uint64_t wb_ustacks_py_records(const wb_ustacks *a) { return a->py_records; }
wb_unwinder *wb_ustacks_unwinder(wb_ustacks *a) { return a->u; }
uint64_t wb_ustacks_bytes(const wb_ustacks *a) { return a->bytes; }
uint64_t wb_ustacks_stack_lost(const wb_ustacks *a) { return a->stack_lost; }
