/* core/bpf/profile.bpf.c's on_switch, loaded (not attached) and run by BPF_PROG_TEST_RUN with this
 * process as the thread switched out (the program takes prev from the current task): a switch-out
 * whose switch-in the tracepoint never reported is ended by the thread's next switch-out, counted
 * once and as inferred, and its time kept; nothing is inferred for a switch-in that came. Needs
 * root (CAP_BPF and CAP_PERFMON); otherwise, or without BPF here, one skip with the reason. */
#define _POSIX_C_SOURCE 200809L
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include <linux/types.h>

#include "bpf/profile.h"
#include "profile.skel.h"

/* A per-CPU counter of the program's stats map, summed over the CPUs. */
static uint64_t stat_of(struct wb_profile *skel, uint32_t k) {
  int ncpu = libbpf_num_possible_cpus();
  uint64_t *vals = calloc(ncpu > 0 ? (size_t)ncpu : 1, sizeof *vals), sum = 0;
  if (vals && bpf_map_lookup_elem(bpf_map__fd(skel->maps.stats), &k, vals) == 0)
    for (int c = 0; c < ncpu; c++) sum += vals[c];
  free(vals);
  return sum;
}

/* on_switch(preempt, prev, next) with prev and next given as 0: every read of them fails and reads
 * 0 (a runnable switch-out of the current thread; the thread switched in has id 0). */
static int run_switch(struct wb_profile *skel) {
  __u64 args[3] = {0, 0, 0};
  LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = args, .ctx_size_in = sizeof args);
  return bpf_prog_test_run_opts(bpf_program__fd(skel->progs.on_switch), &o);
}

/* The time counted away under every stack, in ns (kernel-stack mode: the offcpu_counts map). */
static uint64_t away_ns(struct wb_profile *skel) {
  int fd = bpf_map__fd(skel->maps.offcpu_counts);
  struct wb_stack_key key, next;
  uint64_t sum = 0, v;
  for (int more = bpf_map_get_next_key(fd, NULL, &next) == 0; more;) {
    key = next;
    more = bpf_map_get_next_key(fd, &key, &next) == 0;
    if (bpf_map_lookup_elem(fd, &key, &v) == 0) sum += v;
  }
  return sum;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int skip(const char *why) {
  printf("skip - bpf_switch_test: %s\n0 passed, 0 failed, 1 skipped\n", why);
  return 0;
}

int main(void) {
  if (geteuid() != 0) return skip("needs root (BPF_PROG_TEST_RUN of a tracing program)");
  libbpf_set_print(NULL);
  struct wb_profile *skel = wb_profile__open();
  if (!skel) return skip("the BPF object does not open here");
  /* only on_switch: kernel-stack mode (ustack_size 0), nothing attached */
  struct bpf_program *p;
  bpf_object__for_each_program(p, skel->obj) bpf_program__set_autoload(p, p == skel->progs.on_switch);
  int e = wb_profile__load(skel);
  if (e) {
    wb_profile__destroy(skel);
    char why[160];
    snprintf(why, sizeof why, "the BPF program does not load here: %s", strerror(e < 0 ? -e : e));
    return skip(why);
  }
  uint32_t me = (uint32_t)getpid();
  uint8_t one = 1;
  bpf_map_update_elem(bpf_map__fd(skel->maps.tracked), &me, &one, BPF_ANY);
  skel->bss->armed_ns = now_ns();

  int ok = 1;
  /* out: the thread leaves; again: it leaves again with no switch-in between (the skipped one) */
  CHECK(run_switch(skel) == 0);
  CHECK(stat_of(skel, WB_STAT_SWITCHES) == 0);
  struct timespec pause = {0, 2000000};
  nanosleep(&pause, NULL);
  CHECK(run_switch(skel) == 0);
  CHECK(stat_of(skel, WB_STAT_INFERRED_INS) == 1);
  CHECK(stat_of(skel, WB_STAT_SWITCHES) == 1);
  CHECK(stat_of(skel, WB_STAT_LOST_SWITCHES) == 0);
  /* at least the 2 ms between the two switch-outs (the thread's CPU time reads 0 here: no less) */
  uint64_t away = away_ns(skel);
  CHECK(away >= 2000000 && away < 2000000000);
  report("a switch-out with no switch-in since ends the interval before it: counted once, inferred", ok);

  /* a switch-in that came (next is thread 0 here: the entry of thread 0 stands for it); this
   * thread's own entry taken out first, as its switch-in would */
  ok = 1;
  uint32_t zero = 0;
  CHECK(bpf_map_delete_elem(bpf_map__fd(skel->maps.switched_out), &me) == 0);
  struct wb_switch_out out;
  memset(&out, 0, sizeof out);
  out.ts = now_ns();
  out.key.tgid = me;
  out.key.kind = WB_KIND_BLOCKED;
  out.key.user_stack_id = out.key.kern_stack_id = -1;
  CHECK(bpf_map_update_elem(bpf_map__fd(skel->maps.switched_out), &zero, &out, BPF_ANY) == 0);
  nanosleep(&pause, NULL);
  CHECK(run_switch(skel) == 0);
  CHECK(stat_of(skel, WB_STAT_SWITCHES) == 2);
  CHECK(stat_of(skel, WB_STAT_INFERRED_INS) == 1);
  CHECK(away_ns(skel) >= away + 2000000);
  CHECK(bpf_map_lookup_elem(bpf_map__fd(skel->maps.switched_out), &zero, &out) != 0 && errno == ENOENT);
  report("a reported switch-in ends its interval as it is (its entry gone)", ok);

  wb_profile__destroy(skel);
  return summary();
}
