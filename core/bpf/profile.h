/* Shared between core/bpf/profile.bpf.c and its loader core/bpf.c: map keys, values and the
 * statistics slots. */
#pragma once

#define WB_COMM_LEN 16
#define WB_MAX_DEPTH 127 /* frames per stack, the kernel's perf_event_max_stack default */

enum wb_kind {
  WB_KIND_ONCPU = 0,
  WB_KIND_BLOCKED = 1,  /* off-CPU: switched out in a sleep state (I/O, lock, sleep, wait) */
  WB_KIND_RUNQUEUE = 2, /* off-CPU: preempted while runnable, waiting on the run queue */
};

/* One aggregated stack: the counts maps hold samples (on-CPU) or nanoseconds (off-CPU). comm is
 * the process's name (its thread group leader's), not the thread's. */
struct wb_stack_key {
  __u32 tgid;
  __u32 kind;
  __s32 user_stack_id; /* < 0: none (see the stack statistics) */
  __s32 kern_stack_id; /* < 0: none (a sample in user mode has no kernel stack) */
  char comm[WB_COMM_LEN];
};

/* A thread switched out and not yet back: where and when it left the CPU. */
struct wb_switch_out {
  __u64 ts;
  struct wb_stack_key key;
};

enum wb_stat {
  WB_STAT_SAMPLES,          /* on-CPU samples of tracked processes */
  WB_STAT_LOST_SAMPLES,     /* on-CPU samples not counted: the counts map was full */
  WB_STAT_ONCPU_STACK_ERR,  /* on-CPU stacks (user or kernel) the stack map could not take */
  WB_STAT_SWITCHES,         /* off-CPU intervals counted */
  WB_STAT_LOST_SWITCHES,    /* off-CPU intervals not counted: a map was full */
  WB_STAT_OFFCPU_STACK_ERR, /* off-CPU stacks the stack map could not take */
  WB_STAT_FORKS,            /* processes added to the tracked set by fork */
  WB_NSTATS,
};
