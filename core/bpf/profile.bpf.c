/* On-CPU stack sampling and off-CPU time of a process tree (loader: core/bpf.c).
 *
 * `tracked` holds the process ids (tgids) to watch: the loader adds the root, on_fork adds every
 * process a tracked one creates. on_cpu runs at each tick of a per-CPU cpu-clock event and counts
 * the current stack of a tracked process. on_switch records where a tracked thread leaves the CPU
 * and, when it comes back, adds the time away to that stack, kept apart by kind: preempted while
 * runnable (run-queue wait) or blocked. Nothing is counted before the loader sets `armed_ns` (the
 * moment the held command is released), so the gate's wait is never attributed.
 *
 * In unwind mode (ustack_size > 0, set before load) the user stacks are not walked here: on_cpu and
 * on_switch send the user registers and a copy of the top of the user stack through the ring buffer
 * `ustacks` (and on_switch, at switch-in, the interval), for the loader to walk with CFI. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile.h"

#define EFAULT 14

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

static __always_inline void stat_add(__u32 slot, __u64 n) {
  __u64 *v = bpf_map_lookup_elem(&stats, &slot);
  if (v) *v += n;
}

static __always_inline int is_tracked(__u32 tgid) { return bpf_map_lookup_elem(&tracked, &tgid) != 0; }

static __always_inline int armed(__u64 now) { return armed_ns && now >= armed_ns; }

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

/* Sends the current task's user registers and stack copy (halved until readable: the stack may end
 * sooner) with the kernel stack id. */
static __always_inline void send_ustack(void *ctx, __u32 type, __u32 kind, __u64 now) {
  __u32 zero = 0;
  struct wb_ustack *r = bpf_map_lookup_elem(&scratch, &zero);
  if (!r) return;
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
  r->h.kern_stack_id = bpf_get_stackid(ctx, &stacks, 0);
  if (r->h.kern_stack_id < 0 && r->h.kern_stack_id != -EFAULT)
    stat_add(type == WB_REC_ONCPU ? WB_STAT_ONCPU_STACK_ERR : WB_STAT_OFFCPU_STACK_ERR, 1);
  __u32 size = ustack_size;
  long err = -1;
  for (int i = 0; i < 6 && size >= 256; i++) {
    err = bpf_probe_read_user(r->data, size & (WB_USTACK_MAX - 1), (void *)r->h.sp);
    if (!err) break;
    size >>= 1;
  }
  r->h.size = err ? 0 : size & (WB_USTACK_MAX - 1);
  if (bpf_ringbuf_output(&ustacks, r, sizeof(r->h) + (r->h.size & (WB_USTACK_MAX - 1)), 0) != 0)
    stat_add(WB_STAT_LOST_USTACKS, 1);
}

SEC("perf_event")
int on_cpu(struct bpf_perf_event_data *ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!is_tracked(tgid) || !armed(bpf_ktime_get_ns())) return 0;
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

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 ptgid = parent->tgid, ctgid = child->tgid;
  if (ptgid == ctgid || !is_tracked(ptgid)) return 0;
  __u8 one = 1;
  if (bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY) == 0) stat_add(WB_STAT_FORKS, 1);
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u64 now = bpf_ktime_get_ns();
  if (!armed(now)) return 0;
  __u32 prev_tid = prev->pid, next_tid = next->pid;
  if (is_tracked(prev->tgid)) {
    struct wb_switch_out out = {.ts = now};
    out.key.tgid = prev->tgid;
    out.key.kind = prev->__state == 0 ? WB_KIND_RUNQUEUE : WB_KIND_BLOCKED;
    out.key.user_stack_id = out.key.kern_stack_id = -1;
    bpf_probe_read_kernel_str(out.key.comm, sizeof out.key.comm, prev->group_leader->comm);
    if (ustack_size) send_ustack(ctx, WB_REC_OUT, out.key.kind, now); /* prev is the current task */
    else fill_stacks(ctx, &out.key, WB_STAT_OFFCPU_STACK_ERR);
    if (bpf_map_update_elem(&switched_out, &prev_tid, &out, BPF_ANY) != 0)
      stat_add(WB_STAT_LOST_SWITCHES, 1);
  }
  struct wb_switch_out *back = bpf_map_lookup_elem(&switched_out, &next_tid);
  if (!back) return 0;
  if (back->ts >= armed_ns && ustack_size) {
    struct wb_ustack_hdr in = {.type = WB_REC_IN, .tgid = back->key.tgid, .tid = next_tid,
                               .kind = back->key.kind, .ts = now, .ts_out = back->ts};
    stat_add(WB_STAT_SWITCHES, 1);
    if (bpf_ringbuf_output(&ustacks, &in, sizeof in, 0) != 0) stat_add(WB_STAT_LOST_USTACKS, 1);
  } else if (back->ts >= armed_ns) {
    stat_add(WB_STAT_SWITCHES, 1);
    if (add_count(&offcpu_counts, &back->key, now - back->ts) != 0) stat_add(WB_STAT_LOST_SWITCHES, 1);
  }
  bpf_map_delete_elem(&switched_out, &next_tid);
  return 0;
}
