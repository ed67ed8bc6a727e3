/* core/bpf_ustack.c's off-CPU intervals, from hand-made ring records: a switch-in adds its time to
 * the stack its switch-out recorded; one whose switch-out record never came (the ring had no room)
 * keeps its time under the process, with the single pc WB_UNW_LOST_PC, counted once. */
#include <linux/types.h>
#include <string.h>

#include "bpf/profile.h"
#include "bpf_ustack.h"
#include "check.h"

static void record(wb_ustacks *a, uint32_t type, uint32_t tid, uint64_t ts, uint64_t ts_out) {
  struct wb_ustack_hdr h;
  memset(&h, 0, sizeof h);
  h.type = type, h.tgid = 10, h.tid = tid, h.kind = WB_KIND_BLOCKED, h.ts = ts, h.ts_out = ts_out;
  memcpy(h.comm, "app", 4);
  wb_ustacks_handle(a, &h, sizeof h);
}

/* The count of the entry with nu user pcs whose first is pc (any pc when nu is 0); -1: none. */
static int64_t count_of(const wb_ustacks *a, uint32_t nu, uint64_t pc) {
  size_t n;
  const wb_ustack_entry *e = wb_ustacks_entries(a, &n);
  const uint64_t *pool = wb_ustacks_pool(a);
  for (size_t i = 0; i < n; i++)
    if (e[i].nu == nu && (nu == 0 || pool[e[i].pcs] == pc)) return (int64_t)e[i].count;
  return -1;
}

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
  wb_ustacks_free(a);
  return summary();
}
