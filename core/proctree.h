/* The process tree under a pid, from /proc (shared by the samplers of wb.python and wb.memory). */
#pragma once
#include <sys/types.h>

/* A scanner for repeated calls (a sampler's ticks): it remembers the parent of each process of the
 * previous scan and reads /proc/PID/stat again only for the tree's members and pids it has not
 * seen, so a tick costs one directory listing plus the tree, not the machine's whole process
 * table. A pid cannot leave the listing and come back as another process between two scans short
 * of a wrap of the whole pid space in that interval. Zero-initialised; one thread at a time. */
typedef struct wb_proctree {
  pid_t *pid, *ppid; /* the previous scan, sorted by pid */
  unsigned char *member;
  int n, cap;
} wb_proctree;

/* Fills out with root and every living descendant of it (root first, then by depth), at most max
 * pids; returns how many. A process whose parent exited is reparented and no longer found. */
int wb_proctree_scan(wb_proctree *t, pid_t root, pid_t *out, int max);
void wb_proctree_free(wb_proctree *t);
