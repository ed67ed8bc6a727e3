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

/* The peaks of the tree rooted at pid from the exits recorded after sequence number `since`:
 * *own_kb, pid's own (the largest over its threads), and *tree_kb, the largest of pid's and of
 * every descendant that exited while its parent, in the tree, still ran (the processes whose
 * peak wait4 reports). 0, or -1 when pid's exit is not recorded, its mark reads 0 (a kernel
 * without CONFIG_TASK_XACCT) or an exit since `since` may have been lost (the socket overflowed,
 * the ring wrapped). */
int wb_exits_peak(pid_t pid, uint64_t since, int64_t *own_kb, int64_t *tree_kb);
