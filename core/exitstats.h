/* The own peak RSS of every process that exits while wb runs children (core/exitstats.c): the
 * kernel's taskstats exit messages (a netlink listener registered on every CPU; CONFIG_TASKSTATS
 * and CONFIG_TASK_XACCT), sent from do_exit before the process's memory is released, carry the
 * high-water mark of the image it last ran (hiwater_rss), its own alone: the wait4 figure holds
 * the spawner's as well, which Linux hands down at exec. Registering needs CAP_NET_ADMIN in the
 * initial user and pid namespaces; without it nothing is recorded and callers keep the wait4
 * figure. The listener hears every exit on the machine; the spawn loop drains it (wb_exits_fd in
 * its poll set), keeping the last WB_EXITS_RING exits. Single-threaded, like the spawn engine. */
#pragma once
#include <stdint.h>
#include <sys/types.h>

#define WB_EXITS_RING 65536

/* The listener's descriptor, opened and registered on first call; -1 when unavailable (then
 * every later call returns -1 at once). */
int wb_exits_fd(void);

/* Reads every pending exit message; returns the sequence number of the last exit recorded (0
 * when none or unavailable). A child's exit is in the ring once wait4 returned it: its message
 * is sent before it becomes a zombie. */
uint64_t wb_exits_drain(void);

/* What the exit messages of a process tree's threads say. The tree is pid and every descendant
 * that exited while its parent, in the tree, still ran (the processes whose peak and CPU times
 * wait4 reports). */
typedef struct wb_exit_tree {
  int64_t own_kb;      /* pid's own peak RSS (the largest over its threads), -1 when unknown */
  int64_t tree_kb;     /* the largest own peak in the tree, -1 when unknown */
  int64_t runq_ns;     /* time the tree's threads spent runnable, waiting for a CPU (the
                          scheduler's per-task run_delay: kept whether or not delay accounting
                          is on) */
  int64_t nivcsw;      /* involuntary context switches of the tree's threads */
  int64_t threads;     /* exit messages in the tree */
  int64_t etime_us;    /* pid's own wall time, from its creation (fork) to its exit, in us */
} wb_exit_tree;

/* The tree rooted at pid from the exits recorded after sequence number `since`. 0, or -1 when
 * pid's exit is not recorded or an exit since `since` may have been lost (the socket
 * overflowed, the ring wrapped). The peaks are -1 when pid's mark reads 0 (a kernel without
 * CONFIG_TASK_XACCT). */
int wb_exits_tree(pid_t pid, uint64_t since, wb_exit_tree *out);
