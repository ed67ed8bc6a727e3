/* Shared between core/bpf/profile.bpf.c and its loader core/bpf.c: map keys, values and the
 * statistics slots. */
#pragma once

#define WB_COMM_LEN 16
#define WB_BPF_MAX_FRAMES 127 /* frames per stack, the kernel's perf_event_max_stack default */

enum wb_kind {
  WB_KIND_ONCPU = 0,
  WB_KIND_BLOCKED = 1,  /* off-CPU: switched out in a sleep state (I/O, lock, sleep, wait) */
  WB_KIND_RUNQUEUE = 2, /* off-CPU: runnable (preempted, or woken), waiting on the run queue */
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

/* offcpu_lost: the time of off-CPU intervals whose stack is not known, per process and kind
 * (key's stack ids -1): its switch-out or switch-in record had no room in the ring, or the counts
 * map was full. */
#define WB_LOST_ENTRIES 16384 /* both kinds of each of the 8192 processes `tracked` holds */

/* A thread switched out and not yet back: where and when it left the CPU (stack_lost: unwind
 * mode's record of it had no room in the ring; its interval goes to offcpu_lost), and when a
 * blocked one was woken (0: not yet, or wake-ups not traced): from then on it was runnable, its
 * time until the switch-in a wait for a CPU (counted as WB_KIND_RUNQUEUE under the same stack). */
struct wb_switch_out {
  __u64 ts, woke;
  __u64 ran; /* the thread's CPU time (se.sum_exec_runtime) at its switch-out */
  struct wb_stack_key key;
  __u32 stack_lost, pad;
};

enum wb_stat {
  WB_STAT_SAMPLES,          /* on-CPU samples of tracked processes */
  WB_STAT_LOST_SAMPLES,     /* on-CPU samples not counted: the counts map was full */
  WB_STAT_ONCPU_STACK_ERR,  /* on-CPU stacks (user or kernel) the stack map could not take */
  WB_STAT_SWITCHES,         /* off-CPU intervals counted */
  WB_STAT_LOST_SWITCHES,    /* off-CPU intervals not counted: a map was full */
  WB_STAT_OFFCPU_STACK_ERR, /* off-CPU stacks the stack map could not take */
  WB_STAT_FORKS,            /* processes added to the tracked set by fork */
  WB_STAT_LOST_USTACKS,     /* on-CPU sample records the ring buffer had no room for (unwind mode) */
  WB_STAT_LOST_USERS,       /* samples of a user the users map had no room for */
  WB_STAT_LOST_OUTS,        /* switch-out records the ring had no room for (unwind mode) */
  WB_STAT_LOST_INS,         /* switch-in records the ring had no room for (unwind mode) */
  WB_STAT_LOST_IMAGES,      /* fork, exec and exit records the ring had no room for */
  WB_STAT_STACK_LOST,       /* off-CPU intervals counted in offcpu_lost: their switch-out or
                             * switch-in record had no room in the ring, or the counts map was full */
  WB_STAT_WAKES,            /* wake-ups of tracked threads sent (unwind mode) */
  WB_STAT_LOST_WAKES,       /* wake-up records the ring had no room for */
  WB_STAT_INFERRED_INS,     /* switch-ins the tracepoint did not report (now and then a thread is
                             * back on a CPU without one): each placed by the thread's next
                             * switch-out, at that moment less the CPU time it ran since */
  WB_NSTATS,
};

#define WB_USERS_MAX 64 /* distinct (uid, gid) pairs the users map holds */

/* Unwind mode (ustack_size > 0): instead of counting kernel-walked user stacks, each on-CPU sample
 * and each switch-out of a tracked thread sends its user registers and a copy of the top of its
 * user stack through the ring buffer `ustacks`, and each switch-in the interval; the loader walks
 * the copies with CFI (core/unwind.c) and aggregates. The kernel stack travels in the record too
 * (the stack map, 16 MiB to allocate at each load and a hash that can collide, is not used). A
 * record's data[]: kern_n kernel addresses, py_n Python frames, size bytes of user stack. */
#define WB_USTACK_MAX 16384 /* bytes of stack per record, at most (a power of two) */

enum wb_rec {
  WB_REC_ONCPU = 0, /* an on-CPU sample */
  WB_REC_OUT = 1,   /* a tracked thread left the CPU (kind: blocked or run queue) */
  WB_REC_IN = 2,    /* it came back: ts_out .. ts is its time away; no stack (comm: the process's) */
  WB_REC_FORK = 3,  /* tracked process arg0 forked tgid (before the child runs); no stack */
  WB_REC_EXEC = 4,  /* tgid exec'd (its records after this one are of the new image); no stack */
  WB_REC_EXIT = 5,  /* tgid's last thread exited (its records all came before this one); no stack */
  WB_REC_WAKE = 6,  /* thread tid of tgid was woken by arg0 (the waker's tgid << 32 | tid; 0: none, an
                     * interrupt of an idle CPU), kind its WB_WAKE_* flags, comm the waker thread's name;
                     * no stack (offcpu only) */
};

/* How a thread was woken (sched_waking, in the waker's context; or sched_wakeup_new, in its creator's) */
#define WB_WAKE_IRQ 1      /* in an interrupt (timers, I/O completions): the waker is whatever task it interrupted */
#define WB_WAKE_NOCTX 8    /* whether it ran in an interrupt is not known */
#define WB_WAKE_NEW 16     /* the thread's start: arg0 created it */
#define WB_WAKE_KTHREAD 32 /* the waker is a kernel thread */

struct wb_ustack_hdr {
  __u32 type, tgid, tid, kind;
  __u64 ts, ts_out;
  __u32 kern_n; /* kernel frames (addresses, leaf first) at the start of data[] */
  __u32 size;   /* bytes of user stack from sp in data[], after the Python frames (0: none read) */
  __u64 ip, sp, bp;
  __u64 sysno, arg0; /* orig_ax and di: the system call a switched-out thread waits in; WB_REC_IN:
                     * its wake-up (wb_switch_out.woke); WB_REC_WAKE: the waker's pid_tgid */
  __u32 py_n;        /* Python frames in data[] after the kernel frames (struct wb_py_frame) */
  __u32 py_flags;    /* WB_PYF_*: whether the process is a CPython that wb reads */
  char comm[WB_COMM_LEN];
};

/* Python frames read at sample time (CPython processes the loader put in py_procs): the thread's
 * PyThreadState is found by its native thread id in the interpreter's list (cached in py_threads),
 * then tstate -> current frame -> previous ... for up to WB_PY_MAX_FRAMES - 1 frames, innermost first. */
#define WB_PY_MAX_FRAMES 128 /* a power of two */
#define WB_PY_FRAME_READ 72 /* bytes of each _PyInterpreterFrame read: every field wb uses */
#define WB_PYF_PROCESS 1    /* the process is in py_procs */
#define WB_PYF_THREAD 2     /* the thread's PyThreadState was found */
#define WB_PYF_TRUNCATED 4  /* the chain went on past WB_PY_MAX_FRAMES - 1 frames, or a read failed */

/* The low bits of wb_py_frame.code (code objects are 16-byte aligned). */
#define WB_PY_ENTRY 1 /* 3.11: the frame's is_entry: the first frame of its _PyEval_EvalFrameDefault */
#define WB_PY_SHIM 2  /* 3.12+: a frame owned by the C stack: the entry of a _PyEval_EvalFrameDefault */

struct wb_py_frame {
  __u64 code;  /* the code object (f_code / f_executable) | WB_PY_* */
  __u64 instr; /* prev_instr (3.11, 3.12) or instr_ptr (3.13+) */
  __u64 qual;  /* the code object's co_qualname then: which object the address held at the sample
                * (a code object freed and another made at its address before the loader named
                * it must not lend its name; 0: not read) */
};

/* Per process: where the runtime is and the offsets of the fields walked (core/python_read.c). */
struct wb_py_proc {
  __u64 runtime;
  __u32 interp_head, interp_next, threads_head, tstate_next, tstate_tid;
  __u32 tstate_cframe; /* 3.11, 3.12: tstate->cframe->current_frame; 0 (3.13+): tstate->current_frame */
  __u32 frame_at;      /* offset of current_frame in the cframe, or in the thread state */
  __u32 frame_previous, frame_code, frame_instr, frame_owner;
  __u32 code_qualname; /* offset of co_qualname in the code object */
  __u32 frame_is_entry; /* 3.11; WB_PY_NONE after */
  __u32 owner_cstack;   /* FRAME_OWNED_BY_CSTACK (3.12+); WB_PY_NONE before */
  __u32 forked;         /* copied from the parent by the program at fork (0: the loader's) */
};
#define WB_PY_NONE 0xff

struct wb_py_thread {
  __u64 tstate; /* 0: none found at checked_ns */
  __u64 checked_ns;
};
/* A thread without a thread state is looked for again after this: a new thread's state gets its
 * native id in the thread itself, and a thread that starts and soon sleeps must be found by its
 * switch-out (20 ms lost a 1 s sleep under load); a scan reads one pointer per thread state. */
#define WB_PY_RECHECK_NS 2000000ULL

#define WB_KSTACK_BYTES (WB_BPF_MAX_FRAMES * 8) /* room for the kernel frames: < 1024 */

struct wb_ustack {
  struct wb_ustack_hdr h;
  __u8 data[1024 + WB_PY_MAX_FRAMES * sizeof(struct wb_py_frame) + WB_USTACK_MAX];
};
