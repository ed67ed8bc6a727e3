/* On-CPU stack sampling and off-CPU time of a process tree (loader: core/bpf.c).
 *
 * `tracked` holds the process ids (tgids) to watch: the loader adds the root, on_fork adds every
 * process a tracked one creates. on_cpu runs at each tick of a per-CPU cpu-clock event and counts
 * the current stack of a tracked process. on_switch records where a tracked thread leaves the CPU
 * and, when it comes back, adds the time away to that stack, kept apart by kind: runnable (preempted,
 * or woken and waiting for a CPU: run-queue wait) or blocked (until its wake-up, which on_waking
 * stamps). Nothing is counted before the loader sets `armed_ns` (the moment the held command is
 * released), so the gate's wait is never attributed.
 *
 * In unwind mode (ustack_size > 0, set before load) the user stacks are not walked here: on_cpu and
 * on_switch send the user registers and a copy of the top of the user stack through the ring buffer
 * `ustacks` (and on_switch, at switch-in, the interval), for the loader to walk with CFI. For a CPython
 * process the loader put in `py_procs`, the record also carries the thread's Python frames read at
 * that moment (see profile.h), which the loader names and merges with the native stack. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile.h"

#define EFAULT 14
#define TASK_DEAD 0x80    /* include/linux/sched.h */
#define TASK_WAKING 0x200 /* include/linux/sched.h */

char LICENSE[] SEC("license") = "GPL";

volatile __u64 armed_ns; /* set by the loader; 0: not armed */
const volatile __u32 ustack_size = 0; /* set before load: > 0 is unwind mode (see profile.h) */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} tracked SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, WB_BPF_MAX_FRAMES * sizeof(__u64));
  __uint(max_entries, 16384);
} stacks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct wb_stack_key);
  __type(value, __u64);
} oncpu_counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct wb_stack_key);
  __type(value, __u64);
} offcpu_counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct wb_switch_out);
} switched_out SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, WB_LOST_ENTRIES);
  __type(key, struct wb_stack_key);
  __type(value, __u64);
} offcpu_lost SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, WB_NSTATS);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096); /* the loader sizes it in unwind mode */
} ustacks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct wb_ustack);
} scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct wb_py_proc);
} py_procs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct wb_py_thread);
} py_threads SEC(".maps");

struct py_buf {
  __u8 frame[136]; /* the head of one _PyInterpreterFrame; fields at offsets < 128 */
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct py_buf);
} py_scratch SEC(".maps");

/* Every user the tracked processes ran as when sampled or switched out: the real uid and gid, as
 * bpf_get_current_uid_gid gives them (gid << 32 | uid). wb names frames only from files each of
 * them could read (core/sym_access.h), also for processes gone before it could look at them. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, WB_USERS_MAX);
  __type(key, __u64);
  __type(value, __u8);
} users SEC(".maps");

static __always_inline void stat_add(__u32 slot, __u64 n) {
  __u64 *v = bpf_map_lookup_elem(&stats, &slot);
  if (v) *v += n;
}

static __always_inline int is_tracked(__u32 tgid) { return bpf_map_lookup_elem(&tracked, &tgid) != 0; }

static __always_inline int armed(__u64 now) { return armed_ns && now >= armed_ns; }

static __always_inline void note_user(void) {
  __u64 ids = bpf_get_current_uid_gid();
  __u8 one = 1;
  if (!bpf_map_lookup_elem(&users, &ids) && bpf_map_update_elem(&users, &ids, &one, BPF_NOEXIST) != 0 &&
      !bpf_map_lookup_elem(&users, &ids)) /* not inserted by another CPU meanwhile: the map is full */
    stat_add(WB_STAT_LOST_USERS, 1);
}

/* The current task's stacks into the key. -EFAULT is no stack, not an error: a sample in user mode
 * has no kernel stack, an exiting process no user stack. Other failures (a full map, a hash
 * collision) are counted. */
static __always_inline void fill_stacks(void *ctx, struct wb_stack_key *key, __u32 err_slot) {
  key->user_stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
  key->kern_stack_id = bpf_get_stackid(ctx, &stacks, 0);
  if ((key->user_stack_id < 0 && key->user_stack_id != -EFAULT) ||
      (key->kern_stack_id < 0 && key->kern_stack_id != -EFAULT))
    stat_add(err_slot, 1);
}

static __always_inline int add_count(void *map, struct wb_stack_key *key, __u64 n) {
  __u64 *v = bpf_map_lookup_elem(map, key);
  if (v) {
    __sync_fetch_and_add(v, n);
    return 0;
  }
  if (bpf_map_update_elem(map, key, &n, BPF_NOEXIST) == 0) return 0;
  v = bpf_map_lookup_elem(map, key); /* another CPU inserted it meanwhile */
  if (!v) return -1;
  __sync_fetch_and_add(v, n);
  return 0;
}

static __always_inline __u64 read_u64(__u64 addr) {
  __u64 v = 0;
  if (bpf_probe_read_user(&v, sizeof v, (void *)addr) != 0) return 0;
  return v;
}

/* The walks below are bpf_loop callbacks, not bounded loops: the verifier checks a callback once,
 * where it would explore every iteration of a loop (256 thread states and 128 frames inlined in
 * both programs made loading take ~350 ms). The offsets they need are copied into their context. */

struct ts_walk {
  __u64 interp, ts, found;
  __u32 tid, interp_next, threads_head, tstate_tid, tstate_next;
};

/* One step through the interpreters' thread lists: 1 stops (found, or no interpreter left). */
static long ts_step(__u32 i, void *arg) {
  struct ts_walk *w = arg;
  (void)i;
  if (!w->interp) return 1;
  if (!w->ts) { /* the next interpreter */
    w->interp = read_u64(w->interp + w->interp_next);
    if (w->interp) w->ts = read_u64(w->interp + w->threads_head);
    return 0;
  }
  if (read_u64(w->ts + w->tstate_tid) == w->tid) {
    w->found = w->ts;
    return 1;
  }
  w->ts = read_u64(w->ts + w->tstate_next);
  return 0;
}

/* The PyThreadState of thread tid: the cached one when it still names tid, else looked for in
 * the interpreters' lists (at most once per WB_PY_RECHECK_NS while there is none). 0: none. */
static __always_inline __u64 py_tstate(const struct wb_py_proc *pp, __u32 tid, __u64 now) {
  struct wb_py_thread *t = bpf_map_lookup_elem(&py_threads, &tid);
  if (t && t->tstate && read_u64(t->tstate + pp->tstate_tid) == tid) return t->tstate;
  if (t && !t->tstate && now - t->checked_ns < WB_PY_RECHECK_NS) return 0;
  struct ts_walk w = {.interp = read_u64(pp->runtime + pp->interp_head), .tid = tid,
                      .interp_next = pp->interp_next, .threads_head = pp->threads_head,
                      .tstate_tid = pp->tstate_tid, .tstate_next = pp->tstate_next};
  if (w.interp) w.ts = read_u64(w.interp + w.threads_head);
  bpf_loop(256, ts_step, &w, 0);
  struct wb_py_thread v = {.tstate = w.found, .checked_ns = now};
  bpf_map_update_elem(&py_threads, &tid, &v, BPF_ANY);
  return w.found;
}

struct frame_walk {
  __u64 frame; /* the next frame to read; 0: done */
  __u32 n, truncated;
  __u32 code, previous, instr, owner, is_entry, owner_cstack, code_qualname;
};

/* Reads one _PyInterpreterFrame into the record's Python frames (the per-CPU scratch record:
 * a program runs on one CPU to its end): 1 stops. */
static long frame_step(__u32 i, void *arg) {
  struct frame_walk *w = arg;
  __u32 zero = 0;
  struct py_buf *b = bpf_map_lookup_elem(&py_scratch, &zero);
  struct wb_ustack *r = bpf_map_lookup_elem(&scratch, &zero);
  if (!b || !r || !w->frame) return 1;
  if (bpf_probe_read_user(b->frame, WB_PY_FRAME_READ, (void *)w->frame) != 0) {
    w->truncated = 1;
    return 1;
  }
  __u64 code = *(__u64 *)&b->frame[w->code & 127];
  __u64 prev = *(__u64 *)&b->frame[w->previous & 127];
  __u64 instr = *(__u64 *)&b->frame[w->instr & 127];
  __u8 owner = b->frame[w->owner & 127];
  code &= ~(__u64)3;
  if (w->is_entry != WB_PY_NONE && b->frame[w->is_entry & 127]) code |= WB_PY_ENTRY;
  if (owner == w->owner_cstack) code |= WB_PY_SHIM;
  __u32 at = (r->h.kern_n * 8) & 1023; /* after the kernel frames */
  struct wb_py_frame *f = (struct wb_py_frame *)&r->data[at + (i & (WB_PY_MAX_FRAMES - 1)) * sizeof(*f)];
  f->code = code;
  f->instr = instr;
  bpf_probe_read_user(&f->qual, sizeof f->qual, (void *)((code & ~(__u64)3) + w->code_qualname)); /* 0 if not */
  w->n = i + 1;
  w->frame = prev == w->frame ? 0 : prev;
  return 0;
}

/* Reads the current thread's Python frames into r->data after the kernel frames (innermost
 * first, at most WB_PY_MAX_FRAMES - 1); their number. */
static __always_inline __u32 py_frames(struct wb_ustack *r, __u64 now) {
  r->h.py_flags = 0;
  const struct wb_py_proc *pp = bpf_map_lookup_elem(&py_procs, &r->h.tgid);
  if (!pp) return 0;
  r->h.py_flags = WB_PYF_PROCESS;
  __u64 ts = py_tstate(pp, r->h.tid, now);
  if (!ts) return 0;
  r->h.py_flags |= WB_PYF_THREAD;
  struct frame_walk w = {.code = pp->frame_code, .previous = pp->frame_previous, .instr = pp->frame_instr,
                         .owner = pp->frame_owner, .is_entry = pp->frame_is_entry,
                         .code_qualname = pp->code_qualname,
                         .owner_cstack = pp->owner_cstack};
  w.frame = pp->tstate_cframe ? read_u64(read_u64(ts + pp->tstate_cframe) + pp->frame_at)
                              : read_u64(ts + pp->frame_at);
  bpf_loop(WB_PY_MAX_FRAMES - 1, frame_step, &w, 0);
  if (w.truncated || w.frame) r->h.py_flags |= WB_PYF_TRUNCATED;
  return w.n;
}

/* Sends the current task's kernel stack, Python frames, user registers and user stack copy (up to
 * the process's start_stack, else halved until readable: the stack may end sooner). A kernel stack
 * that cannot be had is counted as a stack error, except -EFAULT: none (a sample in user mode).
 * -1 (counted) when the ring had no room for the record. */
static __always_inline int send_ustack(void *ctx, __u32 type, __u32 kind, __u64 now) {
  __u32 zero = 0;
  struct wb_ustack *r = bpf_map_lookup_elem(&scratch, &zero);
  if (!r) return -1;
  struct task_struct *task = bpf_get_current_task_btf();
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  r->h.type = type;
  r->h.tgid = pid_tgid >> 32;
  r->h.tid = (__u32)pid_tgid;
  r->h.kind = kind;
  r->h.ts = now;
  r->h.ts_out = 0;
  r->h.ip = BPF_CORE_READ(regs, ip);
  r->h.sp = BPF_CORE_READ(regs, sp);
  r->h.bp = BPF_CORE_READ(regs, bp);
  BPF_CORE_READ_STR_INTO(&r->h.comm, task, group_leader, comm);
  r->h.sysno = BPF_CORE_READ(regs, orig_ax);
  r->h.arg0 = BPF_CORE_READ(regs, di);
  long kb = bpf_get_stack(ctx, r->data, WB_KSTACK_BYTES, 0);
  if (kb < 0 && kb != -EFAULT) stat_add(type == WB_REC_ONCPU ? WB_STAT_ONCPU_STACK_ERR : WB_STAT_OFFCPU_STACK_ERR, 1);
  r->h.kern_n = kb > 0 ? (__u32)(kb / 8) & 127 : 0;
  __u32 kbytes = (r->h.kern_n * 8) & 1023;
  __u32 size = ustack_size;
  /* the main thread's stack holds nothing of interest above the process's start_stack (the
   * arguments, the environment) and may end soon after it: read up to there, not halve */
  __u64 top = BPF_CORE_READ(task, mm, start_stack);
  if (top > r->h.sp && top - r->h.sp < size) size = ((top - r->h.sp) + 7) & ~7u;
  __u32 py_n = py_frames(r, now) & (WB_PY_MAX_FRAMES - 1); /* < WB_PY_MAX_FRAMES: a bound the verifier sees */
  r->h.py_n = py_n;
  __u32 py_bytes = py_n * sizeof(struct wb_py_frame);
  long err = -1;
  for (int i = 0; i < 6 && size >= 256; i++) {
    err = bpf_probe_read_user(r->data + kbytes + py_bytes, size & (WB_USTACK_MAX - 1), (void *)r->h.sp);
    if (!err) break;
    size >>= 1;
  }
  r->h.size = err ? 0 : size & (WB_USTACK_MAX - 1);
  if (bpf_ringbuf_output(&ustacks, r, sizeof(r->h) + kbytes + py_bytes + (r->h.size & (WB_USTACK_MAX - 1)), BPF_RB_NO_WAKEUP) == 0)
    return 0;
  stat_add(type == WB_REC_ONCPU ? WB_STAT_LOST_USTACKS : WB_STAT_LOST_OUTS, 1);
  return -1;
}

/* Unwind mode: a fork, exec or exit of a tracked process, in order with its samples: the loader
 * knows which image (which /proc snapshot, or none) each of the process's records ran in. */
static __always_inline void send_image(__u32 type, __u32 tgid, __u32 parent) {
  if (!ustack_size) return;
  struct wb_ustack_hdr h = {.type = type, .tgid = tgid, .tid = tgid, .ts = bpf_ktime_get_ns(), .arg0 = parent};
  if (bpf_ringbuf_output(&ustacks, &h, sizeof h, BPF_RB_NO_WAKEUP) != 0) stat_add(WB_STAT_LOST_IMAGES, 1);
}

/* The end of a switched-out thread's wait: its wake-up when one was stamped inside the interval,
 * else the switch-in. */
static __always_inline __u64 wait_end(const struct wb_switch_out *back, __u64 now) {
  return back->woke > back->ts && back->woke < now ? back->woke : now;
}

/* Counts ns of off-CPU time under key in offcpu_counts (known: kernel-stack mode, the key's stacks
 * are known), else, or when that map is full, in offcpu_lost without its stacks. 0: counted under
 * its stack, 1: under no stack, 2: not at all (offcpu_lost full). */
static __always_inline int count_away(const struct wb_stack_key *key, __u64 ns, int known) {
  if (!ns || (known && add_count(&offcpu_counts, (struct wb_stack_key *)key, ns) == 0)) return 0;
  struct wb_stack_key lost = *key;
  lost.user_stack_id = lost.kern_stack_id = -1;
  return add_count(&offcpu_lost, &lost, ns) == 0 ? 1 : 2;
}

/* Counts a switched-out thread's interval [back->ts, now) (see count_away): the part after a
 * blocked thread's wake-up as WB_KIND_RUNQUEUE under the same stack. An interval not counted under
 * its stack is one stack_lost, or one lost_switches. */
static __always_inline void add_away(const struct wb_switch_out *back, __u64 now, int known) {
  struct wb_stack_key key = back->key;
  __u64 end = wait_end(back, now);
  int r = count_away(&key, end - back->ts, known);
  key.kind = WB_KIND_RUNQUEUE;
  int q = count_away(&key, now - end, known);
  if (q > r) r = q;
  if (r) stat_add(r == 1 ? WB_STAT_STACK_LOST : WB_STAT_LOST_SWITCHES, 1);
}

SEC("perf_event")
int on_cpu(struct bpf_perf_event_data *ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!is_tracked(tgid) || !armed(bpf_ktime_get_ns())) return 0;
  note_user();
  if (ustack_size) {
    stat_add(WB_STAT_SAMPLES, 1);
    send_ustack(ctx, WB_REC_ONCPU, WB_KIND_ONCPU, bpf_ktime_get_ns());
    return 0;
  }
  struct wb_stack_key key = {.tgid = tgid, .kind = WB_KIND_ONCPU};
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  BPF_CORE_READ_STR_INTO(&key.comm, task, group_leader, comm);
  fill_stacks(ctx, &key, WB_STAT_ONCPU_STACK_ERR);
  stat_add(WB_STAT_SAMPLES, 1);
  if (add_count(&oncpu_counts, &key, 1) != 0) stat_add(WB_STAT_LOST_SAMPLES, 1);
  return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
  if (ptgid == ctgid || !is_tracked(ptgid)) return 0;
  __u8 one = 1;
  if (bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY) == 0) {
    stat_add(WB_STAT_FORKS, 1);
    send_image(WB_REC_FORK, ctgid, ptgid);
  }
  /* a forked CPython is the same image at the same addresses: its frames are read at once */
  struct wb_py_proc *pp = bpf_map_lookup_elem(&py_procs, &ptgid);
  if (pp) {
    struct wb_py_proc copy = *pp;
    copy.forked = 1;
    bpf_map_update_elem(&py_procs, &ctgid, &copy, BPF_ANY);
  }
  return 0;
}

/* Offsets copied at fork hold for the parent's image only: the child's exec drops them (py_procs
 * would otherwise fill with the subprocesses of a Python driver and refuse the next CPython).
 * The loader's own entries stay: it may have read the new image before this tracepoint, which
 * comes at the end of exec. Every entry goes when its process exits. */
SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) {
  __u32 tgid = BPF_CORE_READ(p, tgid);
  if (is_tracked(tgid)) send_image(WB_REC_EXEC, tgid, 0);
  struct wb_py_proc *pp = bpf_map_lookup_elem(&py_procs, &tgid);
  if (pp && pp->forked) bpf_map_delete_elem(&py_procs, &tgid);
  return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p) {
  __u32 tgid = BPF_CORE_READ(p, tgid);
  if (BPF_CORE_READ(p, pid) == tgid) bpf_map_delete_elem(&py_procs, &tgid);
  /* the last thread of the process (whichever it is: the leader may exit first) */
  if (BPF_CORE_READ(p, signal, live.counter) == 0 && is_tracked(tgid)) send_image(WB_REC_EXIT, tgid, 0);
  return 0;
}

/* Per CPU: how deep in interrupt handlers it is (hard interrupts, softirqs, hrtimer callbacks:
 * the wake-ups of sleeps and timeouts), from their entry and exit tracepoints. A wake-up there is
 * not the work of `current`, merely the task interrupted. (The kernel's preempt count would say it
 * too, but its per-CPU variable is not in every kernel's symbol table; and a handler entered from
 * user mode runs on the task's own stack.) */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __s32);
} irq_depth SEC(".maps");

static __always_inline void irq_step(__s32 d) {
  __u32 zero = 0;
  __s32 *v = bpf_map_lookup_elem(&irq_depth, &zero);
  if (v) *v = *v + d < 0 ? 0 : *v + d; /* an exit whose entry came before the attach */
}

SEC("raw_tp/irq_handler_entry")
int on_irq_entry(void *ctx) { irq_step(1); return 0; }
SEC("raw_tp/irq_handler_exit")
int on_irq_exit(void *ctx) { irq_step(-1); return 0; }
SEC("raw_tp/softirq_entry")
int on_softirq_entry(void *ctx) { irq_step(1); return 0; }
SEC("raw_tp/softirq_exit")
int on_softirq_exit(void *ctx) { irq_step(-1); return 0; }
SEC("raw_tp/hrtimer_expire_entry")
int on_hrtimer_entry(void *ctx) { irq_step(1); return 0; }
SEC("raw_tp/hrtimer_expire_exit")
int on_hrtimer_exit(void *ctx) { irq_step(-1); return 0; }

/* A context switch never happens inside a handler: the depth of this CPU is 0 (a handler entered
 * while another one's tracepoint program ran is not seen by its program, and would leave it high). */
static __always_inline void irq_reset(void) {
  __u32 zero = 0;
  __s32 *v = bpf_map_lookup_elem(&irq_depth, &zero);
  if (v) *v = 0;
}

static __always_inline __u32 wake_context(void) {
  __u32 zero = 0;
  __s32 *v = bpf_map_lookup_elem(&irq_depth, &zero);
  return v && *v > 0 ? WB_WAKE_IRQ : 0;
}

/* A tracked thread woken: the end of its wait stamped on its switch-out (the first wake-up counts:
 * a second one finds it runnable); in unwind mode, a record of who woke it and in which context. */
static __always_inline void send_wake(struct task_struct *p, __u32 flags) {
  __u64 now = bpf_ktime_get_ns();
  __u32 tgid = BPF_CORE_READ(p, tgid);
  if (!armed(now) || !is_tracked(tgid)) return;
  __u32 tid = BPF_CORE_READ(p, pid);
  struct wb_switch_out *out = bpf_map_lookup_elem(&switched_out, &tid);
  if (out && out->key.kind == WB_KIND_BLOCKED && !out->woke && out->ts < now) out->woke = now;
  if (!ustack_size) return;
  struct task_struct *cur = bpf_get_current_task_btf();
  struct wb_ustack_hdr h = {.type = WB_REC_WAKE, .tgid = tgid, .tid = tid, .ts = now,
                            .arg0 = bpf_get_current_pid_tgid()};
  h.kind = flags | wake_context() | (BPF_CORE_READ(cur, flags) & 0x00200000 ? WB_WAKE_KTHREAD : 0); /* PF_KTHREAD */
  bpf_get_current_comm(h.comm, sizeof h.comm);
  stat_add(WB_STAT_WAKES, 1);
  if (bpf_ringbuf_output(&ustacks, &h, sizeof h, BPF_RB_NO_WAKEUP) != 0) stat_add(WB_STAT_LOST_WAKES, 1);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p) {
  send_wake(p, 0);
  return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p) {
  send_wake(p, WB_WAKE_NEW);
  return 0;
}

/* The end of thread tid's time away, switched out at back->ts and back on a CPU at `in`: the
 * interval counted (unwind mode: its switch-in record sent), its entry removed. */
static __always_inline void come_back(struct wb_switch_out *back, __u32 tid, __u64 in) {
  if (back->ts >= armed_ns && ustack_size) { /* with or without the record of where it waited */
    struct wb_ustack_hdr h = {.type = WB_REC_IN, .tgid = back->key.tgid, .tid = tid, .kind = back->key.kind,
                              .ts = in, .ts_out = back->ts, .arg0 = wait_end(back, in) < in ? back->woke : 0};
    __builtin_memcpy(h.comm, back->key.comm, WB_COMM_LEN); /* for an interval whose stack was lost */
    stat_add(WB_STAT_SWITCHES, 1);
    if (bpf_ringbuf_output(&ustacks, &h, sizeof h, BPF_RB_NO_WAKEUP) != 0) {
      stat_add(WB_STAT_LOST_INS, 1);
      add_away(back, in, 0);
    }
  } else if (back->ts >= armed_ns) {
    stat_add(WB_STAT_SWITCHES, 1);
    add_away(back, in, 1);
  }
  bpf_map_delete_elem(&switched_out, &tid);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u64 now = bpf_ktime_get_ns();
  if (ustack_size) irq_reset();
  if (!armed(now)) return 0;
  __u64 prev_id = bpf_get_current_pid_tgid(); /* prev is the current task */
  __u32 prev_tid = (__u32)prev_id, prev_tgid = prev_id >> 32, next_tid = BPF_CORE_READ(next, pid);
  unsigned int state = BPF_CORE_READ(prev, __state);
  int watched = is_tracked(prev_tgid);
  __u64 ran = watched ? BPF_CORE_READ(prev, se.sum_exec_runtime) : 0;
  /* prev still away by the map: its switch-in was not reported (the tracepoint now and then skips
   * one, quiet machine or not: 4-7 of some 4,500 switch-ins of a 60 ms program run 1,500 times
   * here). It has run without a break since (a break would be a switch-out, seen here), so it came
   * back as long before now as the CPU time it used since it left. */
  struct wb_switch_out *stale = watched ? bpf_map_lookup_elem(&switched_out, &prev_tid) : NULL;
  if (stale) {
    __u64 in = ran > stale->ran && ran - stale->ran < now - stale->ts ? now - (ran - stale->ran) : now;
    stat_add(WB_STAT_INFERRED_INS, 1);
    come_back(stale, prev_tid, in);
  }
  /* a thread's last switch-out (TASK_DEAD) has no switch-in: its entry would stay, filling the map
   * and lending its time to the next thread given its id */
  if (watched && !(state & TASK_DEAD)) {
    note_user(); /* prev is the current task */
    struct wb_switch_out out = {.ts = now, .ran = ran};
    out.key.tgid = prev_tgid;
    /* runnable: preempted (it stays on the run queue whatever its state), running, or being woken
     * already (TASK_WAKING: a wake-up that came while it was leaving the CPU) */
    out.key.kind = preempt || state == 0 || (state & TASK_WAKING) ? WB_KIND_RUNQUEUE : WB_KIND_BLOCKED;
    out.key.user_stack_id = out.key.kern_stack_id = -1;
    BPF_CORE_READ_STR_INTO(&out.key.comm, prev, group_leader, comm);
    /* in the map before its stacks are taken (microseconds): a wake-up meanwhile finds it */
    struct wb_switch_out *o = bpf_map_update_elem(&switched_out, &prev_tid, &out, BPF_ANY) == 0
                                  ? bpf_map_lookup_elem(&switched_out, &prev_tid)
                                  : NULL;
    if (!o) {
      stat_add(WB_STAT_LOST_SWITCHES, 1);
    } else if (ustack_size) {
      o->stack_lost = send_ustack(ctx, WB_REC_OUT, out.key.kind, now) != 0; /* prev: current */
    } else {
      fill_stacks(ctx, &o->key, WB_STAT_OFFCPU_STACK_ERR);
    }
  }
  struct wb_switch_out *back = bpf_map_lookup_elem(&switched_out, &next_tid);
  if (!back) return 0;
  if (now < back->ts) { /* clocks of two CPUs out of step: no interval */
    bpf_map_delete_elem(&switched_out, &next_tid);
    return 0;
  }
  come_back(back, next_tid, now);
  return 0;
}
