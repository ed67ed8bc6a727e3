/* The reaper (core/reaper.c): a process that outlives wb just long enough to end its children's
 * process groups, whatever way wb died.
 *
 * main() calls wb_reaper(argc, argv) first: for `wb __reaper` it serves the pipe on fd 3 and
 * never returns; otherwise it returns at once. wb_reaper_watch(pgid) names a new child's group to
 * the reaper, starting it on first use (the wb binary only: elsewhere, and when it cannot start,
 * nothing is watched and only PR_SET_PDEATHSIG ends the child itself). When wb's end of the pipe
 * closes, the reaper SIGKILLs every named group that still has members and exits. */
#pragma once
#include <sys/types.h>

void wb_reaper(int argc, char **argv);
void wb_reaper_watch(pid_t pgid);
/* wb_reaper_forget(pgid) : the group ended (no member left): the reaper drops it at once, so that
 * a later group given the same id is never signalled. */
void wb_reaper_forget(pid_t pgid);
