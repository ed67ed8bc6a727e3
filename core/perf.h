/* perf_event helpers shared by wb.perf (core/perf.c, core/perf_sample.c) and wb.bpf (core/bpf.c). */
#pragma once
#include <linux/perf_event.h>
#include <lua.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The most CPUs the samplers open an event on. */
#define WB_MAX_CPUS 1024

/* perf_event_open(2) with PERF_FLAG_FD_CLOEXEC; returns the fd or -1 with errno. */
int wb_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd);

/* A counter reading scaled for multiplexing (core/perf.c). */
struct wb_perf_scaled {
  double value;            /* raw * enabled / running when scaled, else raw */
  double running_fraction; /* running / enabled, 1 when never enabled */
  int scaled;              /* running < enabled: the event shared the PMU */
  int never_ran;           /* enabled but never running: no value at all */
};

/* Scales raw by the times an event was enabled and running (PERF_FORMAT_TOTAL_TIME_ENABLED and
 * _RUNNING, in ns). Pure: tests/c/perf_scale_test.c checks it without a PMU. */
struct wb_perf_scaled wb_perf_scale(uint64_t raw, uint64_t enabled, uint64_t running);

/* The online CPUs (from /sys/devices/system/cpu/online) into cpus[0..max); returns the count, at
 * least 1 (CPU 0 when the file is unreadable). */
int wb_online_cpus(int *cpus, int max);

/* ---- the sampler's rings and records (core/perf_ring.c) ------------------------------------ */

#define WB_COMM_SIZE 16

struct ring {
  int fd;
  struct perf_event_mmap_page *meta;
  char *data;
  size_t size, map_len;
};

struct stack_entry { /* one aggregated stack */
  uint32_t pid, comm, nk, nu; /* nk kernel frames then nu user frames, leaf first, in ips */
  size_t ips;                 /* offset into the ip pool */
  uint64_t count, hash;
};

struct mapping_rec {
  uint32_t pid;
  uint64_t time, addr, len, pgoff, ino;
  uint32_t maj, min;
  uint8_t build_id[20], build_id_size;
  char *path;
};

struct task_rec { /* fork, exit or exec */
  uint32_t pid, ppid, tid, ptid;
  uint64_t time;
  uint32_t comm; /* exec only */
};

struct vec {
  void *p;
  size_t n, cap, elem;
};

typedef struct wb_sampler {
  int nrings, sampling, user_only, closed;
  struct ring *rings;
  struct vec stacks, ip_pool, slots; /* slots: hash index into stacks (0 empty, else index + 1) */
  struct vec comms;                  /* interned comm names, char[WB_COMM_SIZE] each */
  struct vec tid_comm;               /* hash table of pairs (tid + 1, comm index) */
  struct vec mappings, forks, exits, execs;
  uint64_t samples, lost;
  uint32_t stack_user;        /* > 0: user registers and this many bytes of user stack per sample,
                                 unwound with the CFI of each object (core/unwind.c) as drained */
  struct wb_unwinder *unwinder; /* set when stack_user > 0 */
  uint64_t stack_bytes;       /* bytes of user stack copied by the kernel, in all */
} wb_sampler;


/* Opens one event (cpu-clock samples with call chains at freq per second when sampling, else a
 * dummy event for the side-band records only) and one ring of `pages` pages per online CPU on pid
 * with inherit, enabled at pid's next exec; falls back to user space only (s->user_only) when
 * kernel stacks are not allowed, and to no build ids on kernels without them. Returns 0, or an
 * errno with everything released. s must be zeroed. */
int wb_sampler_open(wb_sampler *s, pid_t pid, int sampling, long freq, size_t pages);
/* With s->stack_user set before wb_sampler_open, samples carry the user registers and stack
 * instead of the kernel's frame-pointer user call chain, and are unwound as they are drained. */

/* Moves every pending record out of the rings and handles them in time order; returns how many. */
size_t wb_sampler_drain(wb_sampler *s);

/* Releases events, rings and records; sets s->closed. */
void wb_sampler_release(wb_sampler *s);

/* The sampler of wb.perf (core/perf_sample.c): wb_perf_sampler_init creates its metatable,
 * wb_perf_sampler is wb.perf.sampler. */
void wb_perf_sampler_init(lua_State *L);
int wb_perf_sampler(lua_State *L);
