/* The process tree under a pid, from /proc (shared by the samplers of wb.python and wb.memory). */
#pragma once
#include <sys/types.h>

/* Fills out with root and every living descendant of it (root first, then by depth), at most max
 * pids; returns how many. A process whose parent exited is reparented and no longer found. */
int wb_descendants(pid_t root, pid_t *out, int max);
