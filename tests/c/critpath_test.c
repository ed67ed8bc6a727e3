/* core/critpath.h: the critical-path walk over hand-built timelines. Every path tiles its window;
 * a wait ended by a thread of the tree is replaced by what that thread did; a wait ended by an
 * interrupt, or by nothing seen, stays the waiter's; run-queue time after a wake-up is its own;
 * a thread's start leads to its creator; a wake-up stamped before the switch-out is kept. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "critpath.h"
#include <linux/types.h>

#include "bpf/profile.h"

#define MS 1000000ull

typedef struct got {
  wb_cp_segment s[64];
  int n;
  uint64_t by_stack[16]; /* on-CPU ns by sample stack */
} got;

static void emit(void *ctx, const wb_cp_segment *s) {
  got *g = ctx;
  if (g->n < 64) g->s[g->n++] = *s;
}

static void sample(void *ctx, const wb_cp_segment *s, uint32_t stack, uint64_t ns) {
  (void)s;
  got *g = ctx;
  if (stack < 16) g->by_stack[stack] += ns;
}

/* The segments (latest first) tile [from, to]: each ends where the next (earlier) begins. */
static int tiles(const got *g, uint64_t from, uint64_t to) {
  if (g->n == 0) return from == to;
  if (g->s[0].t1 != to || g->s[g->n - 1].t0 != from) return 0;
  for (int i = 0; i + 1 < g->n; i++)
    if (g->s[i].t0 != g->s[i + 1].t1 || g->s[i].t1 <= g->s[i].t0) return 0;
  return 1;
}

/* The ns of segments of thread tid and kind. */
static uint64_t sum(const got *g, uint32_t tid, uint32_t kind) {
  uint64_t n = 0;
  for (int i = 0; i < g->n; i++)
    if (g->s[i].tid == tid && g->s[i].kind == kind) n += g->s[i].t1 - g->s[i].t0;
  return n;
}

static wb_cp_off off(uint32_t tid, uint64_t out, uint64_t wake, uint64_t in, uint32_t waker, uint16_t flags) {
  return (wb_cp_off){.out = out * MS, .wake = wake * MS, .in = in * MS, .tid = tid, .tgid = tid, .waker_tid = waker,
                     .waker_tgid = waker, .stack = 9, .kind = WB_KIND_BLOCKED, .flags = flags};
}

int main(void) {
  { /* parent 1 forks child 2 at 10 ms and waits for it (10..90 ms), the child runs 12..88 ms, exits */
    int ok = 1;
    wb_cp_timeline *t = wb_cp_new(1 << 20);
    wb_cp_birth b = {.ts = 10 * MS, .tid = 2, .tgid = 2, .by_tid = 1, .by_tgid = 1};
    CHECK(wb_cp_add_birth(t, &b) == 0);
    wb_cp_off w = off(1, 11, 88, 90, 2, 0); /* wait4: woken by the child's exit at 88 ms, running at 90 */
    CHECK(wb_cp_add_off(t, &w) == 0);
    wb_cp_off pre = off(2, 10, 0, 12, 0, 0); /* the child waits for a CPU from its creation to 12 ms */
    pre.kind = WB_KIND_RUNQUEUE;
    CHECK(wb_cp_add_off(t, &pre) == 0);
    for (int i = 0; i < 76; i++) wb_cp_add_sample(t, (12 + i) * MS + MS / 2, 2, 3); /* the child's hot stack 3 */
    for (int i = 0; i < 10; i++) wb_cp_add_sample(t, (90 + i) * MS + MS / 2, 1, 5);
    got g = {0};
    long n = wb_cp_walk(t, 1, 0, 100 * MS, 2 * MS, emit, sample, &g);
    CHECK(n == g.n && tiles(&g, 0, 100 * MS));
    CHECK(sum(&g, 1, WB_CP_WAIT) == 0);              /* the wait on the child is not on the path */
    CHECK(sum(&g, 2, WB_CP_ONCPU) == 76 * MS);       /* the child's run, up to its wake-up of the parent */
    CHECK(sum(&g, 2, WB_CP_RUNQ) == 2 * MS);         /* its start, waiting for a CPU */
    CHECK(sum(&g, 1, WB_CP_RUNQ) == 2 * MS);         /* the parent, woken at 88, ran at 90 */
    CHECK(sum(&g, 1, WB_CP_ONCPU) == 20 * MS);       /* 0..10 before the fork, 90..100 after */
    CHECK(g.by_stack[3] == 76 * MS && g.by_stack[5] == 10 * MS);
    report("critpath: a wait for a child is the child's work; the creator before the fork; run-queue time apart", ok);
    wb_cp_free(t);
  }
  { /* a sleep ended by an interrupt, a wait with no wake-up seen, and a wake-up stamped before the
     * switch-out (it raced the sleep): the first two stay the thread's, the third is followed */
    int ok = 1;
    wb_cp_timeline *t = wb_cp_new(1 << 20);
    wb_cp_off sleep = off(1, 10, 50, 51, 7, WB_WAKE_IRQ); /* 7 was only the interrupted task */
    wb_cp_off lost = off(1, 60, 0, 70, 0, 0);
    wb_cp_off raced = off(1, 80, 79, 81, 3, 0); /* 3 woke it at 79, before it was out at 80 */
    wb_cp_add_off(t, &sleep);
    wb_cp_add_off(t, &lost);
    wb_cp_add_off(t, &raced);
    wb_cp_birth three = {.ts = 75 * MS, .tid = 3, .tgid = 1, .by_tid = 1, .by_tgid = 1}; /* 1 started it at 75 */
    wb_cp_add_birth(t, &three);
    got g = {0};
    wb_cp_walk(t, 1, 0, 100 * MS, 2 * MS, emit, sample, &g);
    CHECK(tiles(&g, 0, 100 * MS));
    CHECK(sum(&g, 1, WB_CP_WAIT) == 40 * MS + 10 * MS);
    int irq = 0, nowake = 0;
    for (int i = 0; i < g.n; i++) {
      if (g.s[i].kind == WB_CP_WAIT && g.s[i].t0 == 10 * MS) irq = g.s[i].flags == WB_WAKE_IRQ;
      if (g.s[i].kind == WB_CP_WAIT && g.s[i].t0 == 60 * MS) nowake = (g.s[i].flags & WB_CP_NOWAKE) != 0;
    }
    CHECK(irq && nowake);
    CHECK(sum(&g, 1, WB_CP_RUNQ) == 2 * MS);  /* 50..51 after the timer, 80..81 after the race */
    CHECK(sum(&g, 3, WB_CP_ONCPU) == 5 * MS); /* followed into 3 from its start, then back to 1 */
    CHECK(sum(&g, 1, WB_CP_ONCPU) == 10 * MS + 9 * MS + 5 * MS + 19 * MS);
    report("critpath: interrupt and unseen wake-ups stay the waiter's; a wake-up before the switch-out is followed", ok);
    wb_cp_free(t);
  }
  { /* a lock: 1 waits 20..60 for 2, which held it since 0 and released it at 55; a waker whose
     * timeline says it was off the CPU at the wake-up is not followed (the data is inconsistent) */
    int ok = 1;
    wb_cp_timeline *t = wb_cp_new(1 << 20);
    wb_cp_off lockwait = off(1, 20, 55, 60, 2, 0);
    wb_cp_off bogus = off(1, 70, 75, 76, 2, 0);
    wb_cp_off two_off = off(2, 72, 0, 78, 0, 0); /* 2 was itself asleep at 75 */
    wb_cp_add_off(t, &lockwait);
    wb_cp_add_off(t, &bogus);
    wb_cp_add_off(t, &two_off);
    wb_cp_add_sample(t, 30 * MS, 2, 6);
    got g = {0};
    wb_cp_walk(t, 1, 0, 80 * MS, 2 * MS, emit, sample, &g);
    CHECK(tiles(&g, 0, 80 * MS));
    CHECK(sum(&g, 2, WB_CP_ONCPU) == 55 * MS);
    CHECK(sum(&g, 1, WB_CP_WAIT) == 5 * MS); /* 70..75 */
    CHECK(g.by_stack[6] == 55 * MS);
    report("critpath: a lock wait is the holder's work up to its release; an inconsistent waker is not followed", ok);
    wb_cp_free(t);
  }
  { /* a full timeline drops events and says from when */
    int ok = 1;
    wb_cp_timeline *t = wb_cp_new(1024 * sizeof(wb_cp_sample));
    int dropped = 0;
    for (int i = 0; i < 5000; i++) dropped += wb_cp_add_sample(t, (uint64_t)i * MS, 1, 1) != 0;
    uint64_t first;
    CHECK(dropped > 0 && wb_cp_dropped(t, &first) == (uint64_t)dropped && first == (uint64_t)(5000 - dropped) * MS);
    report("critpath: a timeline over its bound drops later events and tells the first one's time", ok);
    wb_cp_free(t);
  }
  return summary();
}
