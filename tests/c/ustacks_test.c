/* core/bpf_ustack.c's off-CPU intervals, from hand-made ring records: a switch-in adds its time to
 * the stack its switch-out recorded; one whose switch-out record never came (the ring had no room)
 * keeps its time under the process, with the single pc WB_UNW_LOST_PC, counted once; a blocked
 * thread's time after its wake-up is run-queue time under the same stack. */
#include <linux/types.h>
#include <string.h>

#include "bpf/profile.h"
#include "bpf_ustack.h"
#include "check.h"

/* A record of thread tid of process 10; woke: a switch-in's wake-up stamp (0: none) */
static void woken(wb_ustacks *a, uint32_t type, uint32_t tid, uint64_t ts, uint64_t ts_out, uint64_t woke) {
  struct wb_ustack_hdr h;
  memset(&h, 0, sizeof h);
  h.type = type, h.tgid = 10, h.tid = tid, h.kind = WB_KIND_BLOCKED, h.ts = ts, h.ts_out = ts_out, h.arg0 = woke;
  memcpy(h.comm, "app", 4);
  wb_ustacks_handle(a, &h, sizeof h);
}

static void record(wb_ustacks *a, uint32_t type, uint32_t tid, uint64_t ts, uint64_t ts_out) {
  woken(a, type, tid, ts, ts_out, 0);
}

/* The count of the entry of kind with nu user pcs whose first is pc (any pc when nu is 0); -1: none. */
static int64_t count_kind(const wb_ustacks *a, uint32_t nu, uint64_t pc, uint32_t kind) {
  size_t n;
  const wb_ustack_entry *e = wb_ustacks_entries(a, &n);
  const uint64_t *pool = wb_ustacks_pool(a);
  for (size_t i = 0; i < n; i++)
    if (e[i].kind == kind && e[i].nu == nu && (nu == 0 || pool[e[i].pcs] == pc)) return (int64_t)e[i].count;
  return -1;
}

static int64_t count_of(const wb_ustacks *a, uint32_t nu, uint64_t pc) { return count_kind(a, nu, pc, WB_KIND_BLOCKED); }

int main(void) {
  int ok = 1;
  wb_ustacks *a = wb_ustacks_new();
  CHECK(a != NULL);
  record(a, WB_REC_OUT, 11, 100, 0);  /* thread 11 leaves the CPU (no registers: an empty stack) */
  record(a, WB_REC_IN, 11, 150, 100); /* and comes back: 50 ns on that stack */
  CHECK(count_of(a, 0, 0) == 50);
  CHECK(count_of(a, 1, WB_UNW_LOST_PC) == -1);
  CHECK(wb_ustacks_stack_lost(a) == 0);
  report("a switch-in adds its interval to its switch-out's stack", ok);

  ok = 1;
  record(a, WB_REC_IN, 11, 300, 200); /* its switch-out at 200 never came */
  record(a, WB_REC_IN, 12, 500, 450); /* a thread never seen leaving */
  record(a, WB_REC_IN, 12, 400, 450); /* malformed: back before it left */
  CHECK(count_of(a, 1, WB_UNW_LOST_PC) == 150);
  CHECK(count_of(a, 0, 0) == 50);
  CHECK(wb_ustacks_stack_lost(a) == 2);
  report("a switch-in without its switch-out record keeps its time under WB_UNW_LOST_PC, counted once", ok);

  ok = 1;
  record(a, WB_REC_OUT, 11, 600, 0);
  record(a, WB_REC_IN, 11, 700, 600);
  record(a, WB_REC_IN, 11, 800, 600); /* a repeated switch-in: its switch-out was used */
  CHECK(count_of(a, 0, 0) == 150);
  CHECK(count_of(a, 1, WB_UNW_LOST_PC) == 150 + 200);
  report("a second switch-in for the same switch-out is not added to its stack again", ok);

  ok = 1;
  CHECK(count_kind(a, 0, 0, WB_KIND_RUNQUEUE) == -1);
  record(a, WB_REC_OUT, 11, 1000, 0);
  woken(a, WB_REC_IN, 11, 1100, 1000, 1030); /* woken at 1030, on a CPU again at 1100 */
  CHECK(count_of(a, 0, 0) == 150 + 30);
  CHECK(count_kind(a, 0, 0, WB_KIND_RUNQUEUE) == 70);
  record(a, WB_REC_OUT, 11, 2000, 0);
  woken(a, WB_REC_IN, 11, 2100, 2000, 2200); /* a stamp outside the interval: no wake-up seen in it */
  woken(a, WB_REC_IN, 12, 3100, 3000, 3090); /* its switch-out record lost */
  CHECK(count_of(a, 0, 0) == 150 + 30 + 100);
  CHECK(count_kind(a, 0, 0, WB_KIND_RUNQUEUE) == 70);
  CHECK(count_of(a, 1, WB_UNW_LOST_PC) == 150 + 200 + 90);
  CHECK(count_kind(a, 1, WB_UNW_LOST_PC, WB_KIND_RUNQUEUE) == 10);
  CHECK(wb_ustacks_stack_lost(a) == 4);
  report("a blocked interval ends at its wake-up: the rest is run-queue time under the same stack", ok);
  wb_ustacks_free(a);
  return summary();
}
