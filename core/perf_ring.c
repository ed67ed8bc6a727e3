/* The rings and records of wb.perf.sampler (see core/perf.h; the Lua object is in
 * core/perf_sample.c). One event and one ring per online CPU on the target pid with inherit (a
 * per-task event with inherit cannot be mmapped with cpu = -1), enabled at the target's exec. At
 * each drain the records of all rings are merged in time order, so a sample is attributed to the
 * comm its process had when it was taken; samples are aggregated by (process, comm, stack). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"
#include "sym.h"
#include "unwind.h"

/* ---- small containers --------------------------------------------------------------------- */

static void *vec_push(struct vec *v) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    void *p = realloc(v->p, cap * v->elem);
    if (!p) return NULL;
    v->p = p;
    v->cap = cap;
  }
  return (char *)v->p + v->elem * v->n++;
}

static void vec_free(struct vec *v) {
  free(v->p);
  v->p = NULL;
  v->n = v->cap = 0;
}

static uint32_t intern_comm(wb_sampler *s, const char *comm) {
  char buf[WB_COMM_SIZE] = {0};
  strncpy(buf, comm, WB_COMM_SIZE - 1);
  char (*names)[WB_COMM_SIZE] = s->comms.p;
  for (size_t i = 0; i < s->comms.n; i++)
    if (strcmp(names[i], buf) == 0) return (uint32_t)i;
  char *slot = vec_push(&s->comms);
  if (!slot) return 0;
  memcpy(slot, buf, WB_COMM_SIZE);
  return (uint32_t)(s->comms.n - 1);
}

/* The comm index of thread tid (a hash table of pairs {tid + 1, comm}; 0 marks a free slot). */
static uint32_t *tid_comm_slot(wb_sampler *s, uint32_t tid, int create) {
  if (create && (s->tid_comm.n + 1) * 2 > s->tid_comm.cap) {
    size_t cap = s->tid_comm.cap ? s->tid_comm.cap * 2 : 256;
    uint32_t *fresh = calloc(cap, 2 * sizeof *fresh), *old = s->tid_comm.p;
    if (!fresh) return NULL;
    for (size_t i = 0; i < s->tid_comm.cap; i++) {
      if (!old[2 * i]) continue;
      size_t j = old[2 * i] * 2654435761u & (cap - 1);
      while (fresh[2 * j]) j = (j + 1) & (cap - 1);
      fresh[2 * j] = old[2 * i];
      fresh[2 * j + 1] = old[2 * i + 1];
    }
    free(old);
    s->tid_comm.p = fresh;
    s->tid_comm.cap = cap;
  }
  uint32_t *pairs = s->tid_comm.p;
  if (!pairs) return NULL;
  size_t mask = s->tid_comm.cap - 1;
  for (size_t j = (tid + 1) * 2654435761u & mask;; j = (j + 1) & mask) {
    if (pairs[2 * j] == tid + 1) return &pairs[2 * j + 1];
    if (pairs[2 * j]) continue;
    if (!create) return NULL;
    pairs[2 * j] = tid + 1;
    pairs[2 * j + 1] = 0;
    s->tid_comm.n++;
    return &pairs[2 * j + 1];
  }
}

static uint64_t hash_stack(uint32_t pid, uint32_t comm, const uint64_t *ips, size_t n, size_t nk) {
  uint64_t h = 1469598103934665603ULL ^ ((uint64_t)pid << 32 | comm) ^ (nk * 0x9e3779b97f4a7c15ULL);
  for (size_t i = 0; i < n; i++) h = (h ^ ips[i]) * 1099511628211ULL;
  return h ? h : 1;
}

static int rehash(wb_sampler *s, size_t nslots) {
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (!slots) return -1;
  struct stack_entry *st = s->stacks.p;
  for (size_t i = 0; i < s->stacks.n; i++) {
    size_t j = st[i].hash & (nslots - 1);
    while (slots[j]) j = (j + 1) & (nslots - 1);
    slots[j] = (uint32_t)i + 1;
  }
  free(s->slots.p);
  s->slots.p = slots;
  s->slots.n = s->slots.cap = nslots;
  return 0;
}

/* Counts one sample of stack ips (nk kernel frames, then user frames). */
static void add_stack(wb_sampler *s, uint32_t pid, uint32_t comm, const uint64_t *ips, size_t n, size_t nk) {
  if ((s->stacks.n + 1) * 2 > s->slots.n && rehash(s, s->slots.n ? s->slots.n * 2 : 1024) != 0) return;
  uint64_t h = hash_stack(pid, comm, ips, n, nk);
  uint32_t *slots = s->slots.p;
  size_t j = h & (s->slots.n - 1);
  for (; slots[j]; j = (j + 1) & (s->slots.n - 1)) {
    struct stack_entry *e = (struct stack_entry *)s->stacks.p + slots[j] - 1;
    if (e->hash == h && e->pid == pid && e->comm == comm && e->nk == nk && e->nk + e->nu == n &&
        memcmp((uint64_t *)s->ip_pool.p + e->ips, ips, n * sizeof *ips) == 0) {
      e->count++;
      return;
    }
  }
  size_t off = s->ip_pool.n;
  for (size_t i = 0; i < n; i++) {
    uint64_t *ip = vec_push(&s->ip_pool);
    if (!ip) return;
    *ip = ips[i];
  }
  struct stack_entry *e = vec_push(&s->stacks);
  if (!e) return;
  *e = (struct stack_entry){.pid = pid, .comm = comm, .nk = (uint32_t)nk, .nu = (uint32_t)(n - nk),
                            .ips = off, .count = 1, .hash = h};
  slots[j] = (uint32_t)s->stacks.n;
}

/* ---- records ------------------------------------------------------------------------------ */

struct raw {
  uint64_t time;
  const struct perf_event_header *h;
};

/* Time order; records of one time keep their order in the drain buffer (ring by ring, each
 * in the order it wrote them). */
static int by_time(const void *a, const void *b) {
  const struct raw *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return (x->h > y->h) - (x->h < y->h);
}

/* The sample_id trailer of a non-sample record: {u32 pid, tid; u64 time}. */
static uint64_t trailer_time(const struct perf_event_header *h) {
  uint64_t t;
  memcpy(&t, (const char *)h + h->size - sizeof t, sizeof t);
  return t;
}

/* The user frames of a sample with {u64 abi; u64 bp, sp, ip (abi != 0)} {u64 size; u8 data[size];
 * u64 dyn_size (size != 0)} at offset `at` of its body: walked by the unwinder; 0 frames when the
 * sample has no user registers (a kernel thread). */
static size_t unwind_user(wb_sampler *s, const struct perf_event_header *h, size_t at, uint32_t pid,
                          uint64_t *out, int max) {
  const char *p = (const char *)(h + 1), *end = (const char *)h + h->size;
  uint64_t abi, regs[3], size, dyn = 0;
  if (p + at + 8 > end) return 0;
  memcpy(&abi, p + at, 8);
  at += 8;
  if (abi == PERF_SAMPLE_REGS_ABI_NONE) return 0;
  if (p + at + sizeof regs + 8 > end) return 0;
  memcpy(regs, p + at, sizeof regs); /* in bit order: bp, sp, ip */
  at += sizeof regs;
  memcpy(&size, p + at, 8);
  at += 8;
  if (size > (uint64_t)(end - (p + at))) return 0;
  if (size && p + at + size + 8 <= end) memcpy(&dyn, p + at + size, 8);
  if (dyn > size) dyn = size;
  s->stack_bytes += dyn;
  int stop;
  int n = wb_unwinder_walk(s->unwinder, (int)pid, regs[2], regs[1], regs[0], (const uint8_t *)p + at, dyn,
                           out, max, &stop);
  return n > 0 ? (size_t)n : 0;
}

/* A sample {u64 ip; u32 pid, tid; u64 time; u64 nr; u64 chain[nr]}: the chain holds context
 * markers, then the kernel frames and the user frames, each leaf first. */
static void on_sample(wb_sampler *s, const struct perf_event_header *h) {
  enum { CAP = PERF_MAX_STACK_DEPTH + 8, UCAP = 1024 };
  const char *p = (const char *)(h + 1);
  uint32_t pid, tid;
  uint64_t nr, ips[CAP + UCAP], user[UCAP];
  memcpy(&pid, p + 8, 4);
  memcpy(&tid, p + 12, 4);
  memcpy(&nr, p + 24, 8);
  if (32 + nr * 8 > h->size - sizeof *h) return;
  size_t nk = 0, nu = 0;
  int ctx = 0; /* 1 kernel, 2 user */
  for (uint64_t i = 0; i < nr; i++) {
    uint64_t ip;
    memcpy(&ip, p + 32 + i * 8, 8);
    if (ip == PERF_CONTEXT_KERNEL) ctx = 1;
    else if (ip == PERF_CONTEXT_USER) ctx = 2;
    else if (ip >= (uint64_t)PERF_CONTEXT_MAX) ctx = 0;
    else if (ctx == 1 && nk < CAP) ips[nk++] = ip;
    else if (ctx == 2 && nu < CAP) user[nu++] = ip;
  }
  if (s->stack_user) nu = unwind_user(s, h, 32 + nr * 8, pid, user, UCAP);
  memcpy(ips + nk, user, nu * sizeof *ips);
  uint32_t *comm = tid_comm_slot(s, pid, 0); /* the process's name: its main thread's */
  if (!comm) comm = tid_comm_slot(s, tid, 0);
  s->samples++;
  add_stack(s, pid, comm ? *comm : intern_comm(s, "?"), ips, nk + nu, nk);
}

static void on_mmap2(wb_sampler *s, const struct perf_event_header *h) {
  const char *p = (const char *)(h + 1);
  struct mapping_rec *m = vec_push(&s->mappings);
  if (!m) return;
  memset(m, 0, sizeof *m);
  memcpy(&m->pid, p, 4);
  memcpy(&m->addr, p + 8, 8);
  memcpy(&m->len, p + 16, 8);
  memcpy(&m->pgoff, p + 24, 8);
  if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
    m->build_id_size = (uint8_t)p[32];
    if (m->build_id_size > 20) m->build_id_size = 20;
    memcpy(m->build_id, p + 36, m->build_id_size);
  } else {
    memcpy(&m->maj, p + 32, 4);
    memcpy(&m->min, p + 36, 4);
    memcpy(&m->ino, p + 40, 8);
  }
  m->time = trailer_time(h);
  const char *name = p + 64;
  size_t max = h->size - sizeof *h - 64;
  m->path = strndup(name, max);
  if (!m->path) s->mappings.n--;
  else if (s->unwinder) {
    char hex[2 * sizeof m->build_id + 1];
    wb_hex(m->build_id, m->build_id_size, hex, sizeof hex);
    wb_unwinder_add_map(s->unwinder, (int)m->pid, m->addr, m->len, m->pgoff, m->path, hex);
  }
}

static void on_task(wb_sampler *s, const struct perf_event_header *h) {
  struct task_rec r = {0};
  const char *p = (const char *)(h + 1);
  memcpy(&r.pid, p, 4);
  memcpy(&r.ppid, p + 4, 4);
  memcpy(&r.tid, p + 8, 4);
  memcpy(&r.ptid, p + 12, 4);
  memcpy(&r.time, p + 16, 8);
  if (h->type == PERF_RECORD_FORK) { /* the new thread has the comm of the one that made it */
    uint32_t *child = tid_comm_slot(s, r.tid, 1), *parent = tid_comm_slot(s, r.ptid, 0);
    if (parent && child) *child = *parent;
  }
  if (h->type == PERF_RECORD_FORK ? r.pid == r.ppid : r.pid != r.tid) return; /* threads */
  if (h->type == PERF_RECORD_FORK && s->unwinder) wb_unwinder_fork(s->unwinder, (int)r.pid, (int)r.ppid);
  struct task_rec *slot = vec_push(h->type == PERF_RECORD_FORK ? &s->forks : &s->exits);
  if (slot) *slot = r;
}

static void on_comm(wb_sampler *s, const struct perf_event_header *h) {
  const char *p = (const char *)(h + 1);
  struct task_rec r = {0};
  memcpy(&r.pid, p, 4);
  memcpy(&r.tid, p + 4, 4);
  r.comm = intern_comm(s, p + 8);
  r.time = trailer_time(h);
  uint32_t *slot = tid_comm_slot(s, r.tid, 1);
  if (slot) *slot = r.comm;
  if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC)) return;
  if (s->unwinder) wb_unwinder_exec(s->unwinder, (int)r.pid);
  struct task_rec *e = vec_push(&s->execs);
  if (e) *e = r;
}

static void handle(wb_sampler *s, const struct perf_event_header *h) {
  switch (h->type) {
  case PERF_RECORD_SAMPLE: on_sample(s, h); break;
  case PERF_RECORD_MMAP2: on_mmap2(s, h); break;
  case PERF_RECORD_FORK:
  case PERF_RECORD_EXIT: on_task(s, h); break;
  case PERF_RECORD_COMM: on_comm(s, h); break;
  case PERF_RECORD_LOST: {
    uint64_t n;
    memcpy(&n, (const char *)(h + 1) + 8, 8);
    s->lost += n;
    break;
  }
  case PERF_RECORD_LOST_SAMPLES: {
    uint64_t n;
    memcpy(&n, (const char *)(h + 1), 8);
    s->lost += n;
    break;
  }
  }
}

size_t wb_sampler_drain(wb_sampler *s) {
  size_t total = 0, bytes = 0;
  uint64_t heads[WB_MAX_CPUS];
  for (int i = 0; i < s->nrings; i++) {
    struct ring *r = &s->rings[i];
    heads[i] = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
    bytes += heads[i] - r->meta->data_tail;
  }
  if (bytes == 0) return 0;
  char *buf = malloc(bytes);
  struct raw *recs = malloc(bytes / sizeof(struct perf_event_header) * sizeof *recs);
  size_t used = 0;
  for (int i = 0; buf && recs && i < s->nrings; i++) {
    struct ring *r = &s->rings[i];
    uint64_t tail = r->meta->data_tail;
    size_t len = (size_t)(heads[i] - tail), off = tail & (r->size - 1);
    size_t first = len < r->size - off ? len : r->size - off; /* up to the ring's end, then wrap */
    memcpy(buf + used, r->data + off, first);
    memcpy(buf + used + first, r->data, len - first);
    __atomic_store_n(&r->meta->data_tail, heads[i], __ATOMIC_RELEASE);
    for (size_t end = used + len; end - used >= sizeof(struct perf_event_header);) {
      struct perf_event_header *h = (struct perf_event_header *)(buf + used);
      if (h->size < sizeof *h || h->size > end - used) break;
      uint64_t t = 0;
      if (h->type == PERF_RECORD_SAMPLE) memcpy(&t, buf + used + sizeof *h + 16, 8);
      else if (h->size >= sizeof *h + 16) t = trailer_time(h);
      recs[total++] = (struct raw){t, h};
      used += h->size;
    }
  }
  if (buf && recs) {
    qsort(recs, total, sizeof *recs, by_time);
    for (size_t i = 0; i < total; i++) handle(s, recs[i].h);
  }
  free(buf);
  free(recs);
  return total;
}

/* ---- the events ---------------------------------------------------------------------------- */

void wb_sampler_release(wb_sampler *s) {
  for (int i = 0; i < s->nrings; i++) {
    if (s->rings[i].meta) munmap(s->rings[i].meta, s->rings[i].map_len);
    if (s->rings[i].fd >= 0) close(s->rings[i].fd);
  }
  free(s->rings);
  s->rings = NULL;
  s->nrings = 0;
  struct mapping_rec *m = s->mappings.p;
  for (size_t i = 0; i < s->mappings.n; i++) free(m[i].path);
  struct vec *vs[] = {&s->stacks, &s->ip_pool, &s->slots, &s->comms, &s->tid_comm,
                      &s->mappings, &s->forks, &s->exits, &s->execs};
  for (size_t i = 0; i < sizeof vs / sizeof *vs; i++) vec_free(vs[i]);
  wb_unwinder_free(s->unwinder);
  s->unwinder = NULL;
  s->closed = 1;
}

static void fill_attr(struct perf_event_attr *a, int sampling, long freq, int user_only,
                      int build_id, uint32_t stack_user) {
  memset(a, 0, sizeof *a);
  a->type = PERF_TYPE_SOFTWARE;
  a->config = sampling ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_DUMMY;
  a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  if (sampling) {
    a->sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
    a->freq = 1;
    a->sample_freq = (uint64_t)freq;
    if (stack_user) { /* the user stack is walked here: the kernel's frame-pointer walk is not needed */
      a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
      a->sample_regs_user = 1u << 6 | 1u << 7 | 1u << 8; /* PERF_REG_X86_BP, _SP, _IP */
      a->sample_stack_user = stack_user;
      a->exclude_callchain_user = 1;
    }
  }
  a->disabled = a->enable_on_exec = a->inherit = 1;
  a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = a->sample_id_all = 1;
  a->build_id = (unsigned)build_id;
  a->use_clockid = 1;
  a->clockid = CLOCK_MONOTONIC;
  a->exclude_kernel = a->exclude_hv = a->exclude_callchain_kernel = (unsigned)user_only;
}

/* Opens the event and its ring on one CPU; returns 0 or an errno. */
static int open_ring(struct ring *r, struct perf_event_attr *a, pid_t pid, int cpu, size_t pages) {
  r->fd = wb_perf_open(a, pid, cpu, -1);
  if (r->fd < 0) return errno;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  r->map_len = (pages + 1) * page;
  void *base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
  if (base == MAP_FAILED) {
    int e = errno;
    close(r->fd);
    r->fd = -1;
    return e;
  }
  r->meta = base;
  r->data = (char *)base + page;
  r->size = pages * page;
  return 0;
}

int wb_sampler_open(wb_sampler *s, pid_t pid, int sampling, long freq, size_t pages) {
  int cpus[WB_MAX_CPUS];
  int ncpu = wb_online_cpus(cpus, WB_MAX_CPUS);
  s->stacks.elem = sizeof(struct stack_entry);
  s->ip_pool.elem = sizeof(uint64_t);
  s->slots.elem = sizeof(uint32_t);
  s->comms.elem = WB_COMM_SIZE;
  s->mappings.elem = sizeof(struct mapping_rec);
  s->forks.elem = s->exits.elem = s->execs.elem = sizeof(struct task_rec);
  s->sampling = sampling;
  if (!sampling) s->stack_user = 0;
  if (s->stack_user && !(s->unwinder = wb_unwinder_new())) return ENOMEM;
  if (!(s->rings = calloc((size_t)ncpu, sizeof *s->rings))) {
    wb_unwinder_free(s->unwinder);
    s->unwinder = NULL;
    return ENOMEM;
  }
  struct perf_event_attr a;
  int build_id = 1;
  for (int i = 0; i < ncpu; i++) {
    s->rings[i].fd = -1;
    s->nrings = i + 1;
    int e;
    for (;;) {
      fill_attr(&a, sampling, freq, s->user_only, build_id, s->stack_user);
      if ((e = open_ring(&s->rings[i], &a, pid, cpus[i], pages)) == 0) break;
      if ((e == EACCES || e == EPERM) && !s->user_only) s->user_only = 1;
      else if (e == EINVAL && build_id) build_id = 0;
      else break;
    }
    if (e) {
      wb_sampler_release(s);
      return e;
    }
  }
  return 0;
}
