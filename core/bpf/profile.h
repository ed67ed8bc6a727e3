/* Shared between core/bpf/profile.bpf.c and its loader core/bpf.c: map keys, values and the
 * statistics slots. */
#pragma once

#define WB_COMM_LEN 16
#define WB_BPF_MAX_FRAMES 127 /* frames per stack, the kernel's perf_event_max_stack default */

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
  WB_STAT_LOST_USTACKS,     /* user-stack records the ring buffer had no room for (unwind mode) */
  WB_NSTATS,
};

/* Unwind mode (ustack_size > 0): instead of counting kernel-walked user stacks, each on-CPU sample
 * and each switch-out of a tracked thread sends its user registers and a copy of the top of its
 * user stack through the ring buffer `ustacks`, and each switch-in the interval; the loader walks
 * the copies with CFI (core/unwind.c) and aggregates. Kernel stacks stay in the stack map. */
#define WB_USTACK_MAX 16384 /* bytes of stack per record, at most (a power of two) */

enum wb_rec {
  WB_REC_ONCPU = 0, /* an on-CPU sample */
  WB_REC_OUT = 1,   /* a tracked thread left the CPU (kind: blocked or run queue) */
  WB_REC_IN = 2,    /* it came back: ts_out .. ts is its time away; no stack */
};

struct wb_ustack_hdr {
  __u32 type, tgid, tid, kind;
  __u64 ts, ts_out;
  __s32 kern_stack_id;
  __u32 size; /* bytes of data[] that follow: the user stack from sp (0: none could be read) */
  __u64 ip, sp, bp;
  char comm[WB_COMM_LEN];
};

struct wb_ustack {
  struct wb_ustack_hdr h;
  __u8 data[WB_USTACK_MAX];
};
