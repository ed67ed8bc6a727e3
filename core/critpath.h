/* The scheduling timeline of a traced process tree and its critical path (core/critpath.c).
 *
 * The timeline holds, per thread, its off-CPU intervals (switch-out, the wake-up that ended the
 * wait if one was seen, switch-in) with the waker, its creation (who started it, when) and its
 * on-CPU samples, each with the id of its aggregated stack. The walk goes backwards from the end
 * of the root thread: time the thread ran is on the path; time it was runnable but not running is
 * on the path as run-queue time; time it was blocked and then woken by a thread of the tree is
 * explained by what that thread did before the wake-up, so the walk goes on in the waker (as Trace
 * Compass and Perfetto do, unbounded: the whole history of the waker up to the wake-up); a wait
 * ended by an interrupt, a kernel thread or a task outside the tree stays on the path as a wait of
 * the thread itself. The segments tile the window exactly. */
#pragma once
#include <stddef.h>
#include <stdint.h>

enum wb_cp_kind {
  WB_CP_ONCPU = 0,   /* the thread ran */
  WB_CP_RUNQ = 1,    /* it was runnable, waiting for a CPU */
  WB_CP_WAIT = 2,    /* it was blocked, and what ended the wait is not a thread of the tree */
  WB_CP_UNKNOWN = 3, /* nothing is known of the thread then (before its first event) */
};

typedef struct wb_cp_off {
  uint64_t out, wake, in; /* wake 0: no wake-up seen (preempted, or the record was lost) */
  uint32_t tid, tgid;
  uint32_t waker_tid, waker_tgid; /* 0: none (an interrupt on an idle CPU) */
  uint32_t stack;                 /* the id of the stack it blocked in (0: not known) */
  uint16_t kind;                  /* WB_KIND_BLOCKED or WB_KIND_RUNQUEUE (core/bpf/profile.h) */
  uint16_t flags;                 /* WB_WAKE_* of the wake-up */
  char waker_comm[16];            /* the waker thread's name */
} wb_cp_off;

typedef struct wb_cp_sample {
  uint64_t ts;
  uint32_t tid, stack;
} wb_cp_sample;

typedef struct wb_cp_birth {
  uint64_t ts;
  uint32_t tid, tgid, by_tid, by_tgid;
} wb_cp_birth;

typedef struct wb_cp_timeline wb_cp_timeline;

/* A timeline that keeps at most max_bytes of events; later ones are counted as dropped. */
wb_cp_timeline *wb_cp_new(size_t max_bytes);
void wb_cp_free(wb_cp_timeline *t);

/* Adds an event; 0, or -1 when it was dropped (the timeline is full, or out of memory). */
int wb_cp_add_off(wb_cp_timeline *t, const wb_cp_off *o);
int wb_cp_add_sample(wb_cp_timeline *t, uint64_t ts, uint32_t tid, uint32_t stack);
int wb_cp_add_birth(wb_cp_timeline *t, const wb_cp_birth *b);
int wb_cp_add_exit(wb_cp_timeline *t, uint32_t tgid, uint64_t ts); /* the last thread of tgid exited */

/* Replaces every stack id s with map(ctx, s) (ids given before a record's stack was known). */
void wb_cp_map_stacks(wb_cp_timeline *t, uint32_t (*map)(void *ctx, uint32_t id), void *ctx);

/* Whether anything of thread tid is kept (it is of the traced tree). */
int wb_cp_known(wb_cp_timeline *t, uint32_t tid);

/* Calls fn for each off-CPU interval kept (in order of thread and time). */
void wb_cp_each_off(wb_cp_timeline *t, void (*fn)(void *ctx, const wb_cp_off *o), void *ctx);

/* The end of thread tid's process: its exit, else tid's last event, else the timeline's last (0: none). */
uint64_t wb_cp_end(const wb_cp_timeline *t, uint32_t tid);

/* Events dropped, and the earliest time among them (0: none): the timeline is whole before it. */
uint64_t wb_cp_dropped(const wb_cp_timeline *t, uint64_t *first_ts);

typedef struct wb_cp_segment {
  uint64_t t0, t1;
  uint32_t tid, tgid;
  uint32_t kind;  /* wb_cp_kind */
  uint32_t stack; /* WB_CP_WAIT, WB_CP_RUNQ: the stack the thread was switched out in (0: unknown) */
  uint32_t flags; /* WB_CP_WAIT: the WB_WAKE_* of its wake-up (WB_CP_NOWAKE: none seen) */
  uint32_t waker_tid, waker_tgid; /* WB_CP_WAIT: who woke it, when a task outside the tree */
  char waker_comm[16];
} wb_cp_segment;

#define WB_CP_NOWAKE 0x10000 /* a wait that ended without a wake-up record */

/* Walks the critical path of [from, to) back from thread root at `to`; calls emit for each
 * segment (latest first, consecutive ones of the same thread, kind and stack merged) and, for each
 * on-CPU segment s (before merging), sample(ctx, s, stack, ns) with its time shared among the thread's samples
 * inside it (a segment without any: the stack of the thread's nearest sample up to near_ns away,
 * else 0). Returns the number of segments, or -1 when out of
 * memory. */
long wb_cp_walk(wb_cp_timeline *t, uint32_t root, uint64_t from, uint64_t to, uint64_t near_ns,
                void (*emit)(void *ctx, const wb_cp_segment *s), void (*sample)(void *ctx, const wb_cp_segment *s, uint32_t stack, uint64_t ns),
                void *ctx);
