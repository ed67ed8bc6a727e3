/* The scheduling timeline of a traced process tree and its critical path (see core/critpath.h). */
#include "critpath.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/profile.h"

static void sort_timeline(wb_cp_timeline *t);

struct wb_cp_timeline {
  wb_cp_off *off;
  size_t noff, capoff;
  wb_cp_sample *smp;
  size_t nsmp, capsmp;
  wb_cp_birth *birth;
  size_t nbirth, capbirth;
  wb_cp_birth *exits; /* ts, tgid (in tid) */
  size_t nexits, capexits;
  uint64_t last;      /* the latest time of any event */
  size_t bytes, max_bytes;
  uint64_t dropped, first_drop;
  int sorted;
};

wb_cp_timeline *wb_cp_new(size_t max_bytes) {
  wb_cp_timeline *t = calloc(1, sizeof *t);
  if (t) t->max_bytes = max_bytes;
  return t;
}

void wb_cp_free(wb_cp_timeline *t) {
  if (!t) return;
  free(t->off);
  free(t->smp);
  free(t->birth);
  free(t->exits);
  free(t);
}

/* Room for one more element of size bytes in *p (n used of *cap); 0 or -1. */
static int room(wb_cp_timeline *t, void **p, size_t *cap, size_t n, size_t size, uint64_t ts) {
  if (n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 1024;
  void *q = t->bytes + (c - *cap) * size <= t->max_bytes ? realloc(*p, c * size) : NULL;
  if (!q) {
    if (!t->dropped++ || ts < t->first_drop) t->first_drop = ts;
    return -1;
  }
  t->bytes += (c - *cap) * size;
  *p = q, *cap = c;
  return 0;
}

int wb_cp_add_off(wb_cp_timeline *t, const wb_cp_off *o) {
  if (room(t, (void **)&t->off, &t->capoff, t->noff, sizeof *t->off, o->out) != 0) return -1;
  t->off[t->noff++] = *o;
  if (o->in > t->last) t->last = o->in;
  t->sorted = 0;
  return 0;
}

int wb_cp_add_sample(wb_cp_timeline *t, uint64_t ts, uint32_t tid, uint32_t stack) {
  if (room(t, (void **)&t->smp, &t->capsmp, t->nsmp, sizeof *t->smp, ts) != 0) return -1;
  t->smp[t->nsmp++] = (wb_cp_sample){.ts = ts, .tid = tid, .stack = stack};
  if (ts > t->last) t->last = ts;
  t->sorted = 0;
  return 0;
}

int wb_cp_add_birth(wb_cp_timeline *t, const wb_cp_birth *b) {
  if (room(t, (void **)&t->birth, &t->capbirth, t->nbirth, sizeof *t->birth, b->ts) != 0) return -1;
  t->birth[t->nbirth++] = *b;
  t->sorted = 0;
  return 0;
}

int wb_cp_add_exit(wb_cp_timeline *t, uint32_t tgid, uint64_t ts) {
  if (room(t, (void **)&t->exits, &t->capexits, t->nexits, sizeof *t->exits, ts) != 0) return -1;
  t->exits[t->nexits++] = (wb_cp_birth){.ts = ts, .tid = tgid};
  if (ts > t->last) t->last = ts;
  return 0;
}

void wb_cp_map_stacks(wb_cp_timeline *t, uint32_t (*map)(void *ctx, uint32_t id), void *ctx) {
  for (size_t i = 0; i < t->noff; i++) t->off[i].stack = map(ctx, t->off[i].stack);
  for (size_t i = 0; i < t->nsmp; i++) t->smp[i].stack = map(ctx, t->smp[i].stack);
}

void wb_cp_each_off(wb_cp_timeline *t, void (*fn)(void *ctx, const wb_cp_off *o), void *ctx) {
  sort_timeline(t); /* before: fn may look threads up (wb_cp_known), which sorts */
  for (size_t i = 0; i < t->noff; i++) fn(ctx, &t->off[i]);
}

uint64_t wb_cp_end(const wb_cp_timeline *t, uint32_t tid) {
  uint64_t last = 0;
  for (size_t i = 0; i < t->nexits; i++)
    if (t->exits[i].tid == tid) return t->exits[i].ts; /* tid is its process's leader: tgid == tid */
  for (size_t i = 0; i < t->noff; i++)
    if (t->off[i].tid == tid && t->off[i].in > last) last = t->off[i].in;
  for (size_t i = 0; i < t->nsmp; i++)
    if (t->smp[i].tid == tid && t->smp[i].ts > last) last = t->smp[i].ts;
  return last ? last : t->last;
}

uint64_t wb_cp_dropped(const wb_cp_timeline *t, uint64_t *first_ts) {
  if (first_ts) *first_ts = t->first_drop;
  return t->dropped;
}

/* ---- the walk --------------------------------------------------------------------------------- */

/* The order of the timeline's arrays: by thread, then time. */
static int by_thread_time(uint32_t tid_a, uint64_t ts_a, uint32_t tid_b, uint64_t ts_b) {
  if (tid_a != tid_b) return tid_a < tid_b ? -1 : 1;
  return (ts_a > ts_b) - (ts_a < ts_b);
}

static int off_order(const void *a, const void *b) {
  const wb_cp_off *x = a, *y = b;
  return by_thread_time(x->tid, x->out, y->tid, y->out);
}

static int smp_order(const void *a, const void *b) {
  const wb_cp_sample *x = a, *y = b;
  return by_thread_time(x->tid, x->ts, y->tid, y->ts);
}

static int birth_order(const void *a, const void *b) {
  const wb_cp_birth *x = a, *y = b;
  return by_thread_time(x->tid, x->ts, y->tid, y->ts);
}

/* The first of n elements (size bytes each, sorted by thread and time, whose tid and time lie at
 * byte offsets tid_at and ts_at) not before (tid, ts). */
static size_t lower(const void *base, size_t n, size_t size, size_t tid_at, size_t ts_at, uint32_t tid, uint64_t ts) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *e = (const char *)base + mid * size;
    uint32_t t;
    uint64_t v;
    memcpy(&t, e + tid_at, sizeof t);
    memcpy(&v, e + ts_at, sizeof v);
    if (by_thread_time(t, v, tid, ts) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static size_t off_lower(const wb_cp_timeline *t, uint32_t tid, uint64_t ts) {
  return lower(t->off, t->noff, sizeof *t->off, offsetof(wb_cp_off, tid), offsetof(wb_cp_off, out), tid, ts);
}

static size_t smp_lower(const wb_cp_timeline *t, uint32_t tid, uint64_t ts) {
  return lower(t->smp, t->nsmp, sizeof *t->smp, offsetof(wb_cp_sample, tid), offsetof(wb_cp_sample, ts), tid, ts);
}

/* The last off-CPU interval of tid that began before ts, or NULL. */
static const wb_cp_off *off_before(const wb_cp_timeline *t, uint32_t tid, uint64_t ts) {
  size_t i = off_lower(t, tid, ts);
  return i > 0 && t->off[i - 1].tid == tid ? &t->off[i - 1] : NULL;
}

/* The creation of tid (its first), or NULL. */
static const wb_cp_birth *birth_of(const wb_cp_timeline *t, uint32_t tid) {
  size_t i = lower(t->birth, t->nbirth, sizeof *t->birth, offsetof(wb_cp_birth, tid), offsetof(wb_cp_birth, ts), tid, 0);
  return i < t->nbirth && t->birth[i].tid == tid ? &t->birth[i] : NULL;
}

/* Whether anything of thread tid is known (it is of the traced tree). */
static int known(const wb_cp_timeline *t, uint32_t tid) {
  size_t i = off_lower(t, tid, 0), j = smp_lower(t, tid, 0);
  return (i < t->noff && t->off[i].tid == tid) || (j < t->nsmp && t->smp[j].tid == tid) || birth_of(t, tid);
}

static void sort_timeline(wb_cp_timeline *t) {
  if (t->sorted) return;
  if (t->noff) qsort(t->off, t->noff, sizeof *t->off, off_order);
  if (t->nsmp) qsort(t->smp, t->nsmp, sizeof *t->smp, smp_order);
  if (t->nbirth) qsort(t->birth, t->nbirth, sizeof *t->birth, birth_order);
  t->sorted = 1;
}

int wb_cp_known(wb_cp_timeline *t, uint32_t tid) {
  sort_timeline(t);
  return known(t, tid);
}

/* Whether thread tid was on a CPU just before ts (it existed, and no off-CPU interval holds ts). */
static int running_at(const wb_cp_timeline *t, uint32_t tid, uint64_t ts) {
  const wb_cp_birth *b = birth_of(t, tid);
  if ((b && b->ts >= ts) || !known(t, tid)) return 0;
  const wb_cp_off *o = off_before(t, tid, ts);
  return !(o && ts <= o->in);
}

typedef struct walker {
  wb_cp_timeline *t;
  void (*emit)(void *ctx, const wb_cp_segment *s);
  void (*sample)(void *ctx, const wb_cp_segment *s, uint32_t stack, uint64_t ns);
  void *ctx;
  wb_cp_segment held; /* merged, not yet emitted (t1 == 0: none) */
  uint64_t near;
  long n;
} walker;

static void flush(walker *w) {
  if (!w->held.t1) return;
  w->emit(w->ctx, &w->held);
  w->n++;
  w->held.t1 = 0;
}

/* The thread's samples inside (t0, t1] share the segment's time; a segment shorter than the
 * sampling period usually holds none, and takes the stack of the thread's nearest sample, up to
 * near_ns away (in wall time: a thread that waits for a CPU between its runs has samples far apart). */
static void share(walker *w, uint32_t tid, uint32_t tgid, uint64_t t0, uint64_t t1) {
  const wb_cp_timeline *t = w->t;
  wb_cp_segment seg = {.t0 = t0, .t1 = t1, .tid = tid, .tgid = tgid, .kind = WB_CP_ONCPU};
  size_t i = smp_lower(t, tid, t0 + 1), j = smp_lower(t, tid, t1 + 1);
  uint64_t ns = t1 - t0;
  if (i == j) {
    uint64_t before = i > 0 && t->smp[i - 1].tid == tid ? t0 - t->smp[i - 1].ts : UINT64_MAX;
    uint64_t after = j < t->nsmp && t->smp[j].tid == tid ? t->smp[j].ts - t1 : UINT64_MAX;
    uint64_t gap = before < after ? before : after;
    uint32_t stack = gap > w->near ? 0 : before < after ? t->smp[i - 1].stack : t->smp[j].stack;
    w->sample(w->ctx, &seg, stack, ns);
    return;
  }
  uint64_t each = ns / (j - i), rest = ns - each * (j - i);
  for (size_t k = i; k < j; k++) w->sample(w->ctx, &seg, t->smp[k].stack, each + (k == i ? rest : 0));
}

static void add(walker *w, uint64_t t0, uint64_t t1, uint32_t tid, uint32_t tgid, uint32_t kind,
                const wb_cp_off *o) {
  if (t1 <= t0) return;
  if (kind == WB_CP_ONCPU) share(w, tid, tgid, t0, t1);
  wb_cp_segment s = {.t0 = t0, .t1 = t1, .tid = tid, .tgid = tgid, .kind = kind};
  if (o && kind != WB_CP_ONCPU) {
    s.stack = o->stack;
    if (kind == WB_CP_WAIT) {
      s.flags = o->wake ? o->flags : WB_CP_NOWAKE;
      s.waker_tid = o->waker_tid, s.waker_tgid = o->waker_tgid;
      memcpy(s.waker_comm, o->waker_comm, sizeof s.waker_comm);
    }
  }
  wb_cp_segment *h = &w->held;
  if (h->t1 && h->t0 == t1 && h->tid == tid && h->kind == kind && h->stack == s.stack && h->flags == s.flags &&
      h->waker_tgid == s.waker_tgid) {
    h->t0 = t0;
    return;
  }
  flush(w);
  *h = s;
}

/* The process of thread tid, from what is known of it (0: nothing). */
static uint32_t tgid_of(const wb_cp_timeline *t, uint32_t tid) {
  size_t i = off_lower(t, tid, 0);
  if (i < t->noff && t->off[i].tid == tid) return t->off[i].tgid;
  const wb_cp_birth *b = birth_of(t, tid);
  return b ? b->tgid : tid;
}

long wb_cp_walk(wb_cp_timeline *t, uint32_t root, uint64_t from, uint64_t to, uint64_t near_ns,
                void (*emit)(void *ctx, const wb_cp_segment *s), void (*sample)(void *ctx, const wb_cp_segment *s, uint32_t stack, uint64_t ns),
                void *ctx) {
  sort_timeline(t);
  walker w = {.t = t, .emit = emit, .sample = sample, .ctx = ctx, .near = near_ns};
  uint32_t cur = root, tgid = tgid_of(t, root);
  uint64_t at = to;
  if (!known(t, root)) { /* nothing of the root was kept: no path to tell */
    add(&w, from, to, cur, tgid, WB_CP_UNKNOWN, NULL);
    flush(&w);
    return w.n;
  }
  /* each step lowers `at` or moves to a thread running at `at` (whose next step lowers it) */
  for (size_t guard = 2 * (t->noff + t->nsmp + t->nbirth) + 64; at > from && guard > 0; guard--) {
    const wb_cp_off *o = off_before(t, cur, at);
    if (o && at <= o->in) { /* off the CPU just before `at` */
      uint64_t wake = o->kind == WB_KIND_BLOCKED && o->wake ? (o->wake > o->out ? o->wake : o->out) : 0;
      if (o->kind != WB_KIND_BLOCKED) { /* preempted: runnable all along */
        add(&w, o->out > from ? o->out : from, at, cur, tgid, WB_CP_RUNQ, o);
        at = o->out;
        continue;
      }
      if (wake && at > wake) { /* woken, then waiting for a CPU; what came before the wake-up is next */
        add(&w, wake > from ? wake : from, at, cur, tgid, WB_CP_RUNQ, o);
        at = wake;
        if (at <= from) continue;
      }
      int by_task = !(o->flags & (WB_WAKE_IRQ | WB_WAKE_KTHREAD));
      if (wake && by_task && o->waker_tid && o->waker_tid != cur && running_at(t, o->waker_tid, at)) {
        cur = o->waker_tid; /* what kept it waiting is what the waker did up to the wake-up */
        tgid = tgid_of(t, cur);
        continue;
      }
      add(&w, o->out > from ? o->out : from, at, cur, tgid, WB_CP_WAIT, o);
      at = o->out;
      continue;
    }
    const wb_cp_birth *b = o ? NULL : birth_of(t, cur);
    uint64_t since = o ? o->in : b ? b->ts : from;
    if (since > at) since = at; /* created at `at` (or later: inconsistent times): no run before it */
    add(&w, since > from ? since : from, at, cur, tgid, WB_CP_ONCPU, NULL);
    at = since;
    if (o || at <= from) continue;
    if (b && b->by_tid && b->by_tid != cur && known(t, b->by_tid)) { /* started by a thread of the tree */
      cur = b->by_tid;
      tgid = tgid_of(t, cur);
      continue;
    }
    add(&w, from, at, cur, tgid, WB_CP_UNKNOWN, NULL);
    at = from;
  }
  if (at > from) add(&w, from, at, cur, tgid, WB_CP_UNKNOWN, NULL);
  flush(&w);
  return w.n;
}
