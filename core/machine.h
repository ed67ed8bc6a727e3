/* The machine's load, as a trial's interference evidence (core/machine.c): two samples, one at
 * a child's start and one at its reaping, whose difference says how busy the rest of the machine
 * was while the child ran. Every source is world-readable procfs; a missing one reads -1. */
#pragma once
#include <stdint.h>

typedef struct wb_machine_sample {
  int64_t busy_ticks;  /* CPU time of every task on every CPU (user, nice, system, irq, softirq),
                          in USER_HZ ticks, from /proc/stat's "cpu" line; -1 when unread */
  int64_t steal_ticks; /* time a hypervisor ran something else on this machine's CPUs */
  int64_t psi_some_us; /* /proc/pressure/cpu "some" total: wall time in which at least one task
                          waited for a CPU; -1 without PSI (CONFIG_PSI, psi=1) */
  int32_t runnable;    /* tasks runnable at the moment of the sample (/proc/loadavg), this one
                          included; -1 when unread */
} wb_machine_sample;

void wb_machine_sample_now(wb_machine_sample *s);

/* The CPUs this process may run on: its affinity mask's count, and, when quota_cpus is not NULL,
 * in *quota_cpus the tightest CFS bandwidth limit of its cgroup and the cgroup's ancestors
 * (cgroup v2 cpu.max or v1 cpu.cfs_quota_us/cfs_period_us), in CPUs; 0 when there is none.
 * Returns the count, or -1. */
int wb_machine_cpus(double *quota_cpus);

/* The clock ticks per second of /proc/stat's figures. */
long wb_machine_hz(void);
