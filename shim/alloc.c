/* libwballoc.so: the allocation sampler wb.capture{alloc = true} preloads (LD_PRELOAD) into every
 * process of the tree it runs. It interposes malloc, calloc, realloc, reallocarray, free,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc and, with WB_ALLOC_MMAP=1, anonymous
 * mmap/munmap, forwarding each to the next definition after the shim's (dlsym RTLD_NEXT): glibc's,
 * or that of an allocator the program links (libjemalloc, libtcmalloc as DT_NEEDED) or preloads
 * after the shim, so that every block comes from and returns to the one allocator; mmap goes to
 * the raw system call, and that allocator's own mmap calls (its arenas) are not counted.
 *
 * Sampling is by bytes, as the heap profilers of production allocators do: each thread counts
 * down a gap drawn from an exponential distribution with mean WB_ALLOC_INTERVAL bytes (a Poisson
 * process over the bytes allocated), and the allocation that crosses zero is sampled. An
 * allocation of n bytes is then sampled with probability 1 - exp(-n / interval), whatever the
 * sizes around it, so wb's estimate n / (1 - exp(-n / interval)) per sample is unbiased for small
 * and large allocations alike. The fast path is a thread-local subtraction and a branch.
 *
 * A sampled allocation's stack is walked in the process with libgcc's _Unwind_Backtrace (the
 * objects' .eh_frame CFI, so code without frame pointers unwinds too; libgcc 12 finds FDEs through
 * glibc's lock-free _dl_find_object and allocates nothing). Its address goes into a lock-free set,
 * so that a free (one hashed load when the block was not sampled) can tell wb the block died.
 *
 * Records are text lines appended with one write(2) each (O_APPEND) to WB_ALLOC_DIR/PID.SEQ.alloc,
 * opened at start-up, one per process image: a forked child opens its own under its own pid at its
 * first record, an exec'd image its own (O_CLOEXEC). Nothing is buffered, so a process that dies by
 * a signal or _exit loses nothing. Lines (numbers in hex but pid and interval):
 *   h PID INTERVAL START         the header (START: when the image started or the child forked,
 *                                CLOCK_MONOTONIC ns; a second file with the same PID and START
 *                                continues the first); then "c COMM"
 *   m START END PGOFF PATH       an executable mapping (written at open and when a sampled stack
 *                                leaves the known ones: a dlopen)
 *   a T ADDR SIZE KIND PC...     a sampled allocation (T: CLOCK_MONOTONIC ns; PCs leaf first, the
 *                                first one back inside its call instruction); KIND: m c r a M (mmap)
 *   f T ADDR                     a sampled block freed (free, realloc, munmap)
 *   u T ADDR                     the free just recorded did not happen (a realloc that failed)
 *   x TEXT                       a note (own allocator, set full)
 *
 * Counting (WB_ALLOC_COUNT=FILE, with or without sampling): FILE, a regular file of at least
 * COUNT_BYTES bytes that wb made for one run, is mapped shared by every process image of the tree
 * (a forked child keeps its parent's mapping, an exec'd image maps it again), and every allocation
 * adds its bytes to it atomically: an exact count that a process killed by a signal, an _exit or an
 * exec loses nothing of. Its four little-endian 64-bit words: bytes allocated (the sizes asked of
 * the functions above, realloc's new size; anonymous mmap with WB_ALLOC_MMAP=1), allocations,
 * processes that counted (each image that mapped it, each child forked with it), images whose
 * malloc is not ours (an allocator of their own: their allocations are not counted). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define MAX_FRAMES 128
#define SET_BITS 19 /* 512 Ki slots: 256 GiB live at the default interval */
#define TOMB ((uintptr_t)1)
#define MAX_RANGES 1024


static int enabled;        /* set by the constructor when WB_ALLOC_DIR is given */
static int with_mmap;
static double interval = 512 * 1024;
static char dir[512];
static uintptr_t self_lo, self_hi; /* this object's text: its frames are not the caller's */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* file, ranges, set inserts */
#define FD_FLOOR 512 /* the record file's lowest descriptor number, where the limit allows */
static int fd = -1, seq;
static pid_t fd_pid; /* the process that opened fd: a child made without fork() (clone, _Fork) runs no atfork handler */
static dev_t fd_dev;
static ino_t fd_ino;
static uint64_t start_ns; /* when this image started (or this child was forked) */
static uintptr_t ranges[MAX_RANGES][2];
static int nranges;
static int noted_full;

static _Atomic uintptr_t set[1u << SET_BITS];
/* How many sampled blocks hash to each of FILTER slots: a free whose counter is 0 (nearly every
 * free) is done after one load from this 16 KiB array, not a cache miss in the 4 MiB set. */
#define FILTER_BITS 12
static _Atomic uint32_t filter[1u << FILTER_BITS];

#define COUNT_BYTES 32
static _Atomic uint64_t *count; /* the tree's counter (WB_ALLOC_COUNT), or NULL */
static int foreign_image;       /* this image's malloc is not ours: its allocator's mmaps are its own */
static void map_count(const char *path);
static __thread int64_t tl_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t tl_rng __attribute__((tls_model("initial-exec")));
static __thread int tl_busy __attribute__((tls_model("initial-exec")));

/* ---- the allocator underneath --------------------------------------------------------------- */

/* The next definitions (see the top), resolved at the first call of any of them (a constructor
 * that runs before the shim's may allocate). What dlsym allocates while it resolves them comes
 * from boot_heap, which is never reused: its blocks are dropped when freed. */
typedef struct fns {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
  void *(*memalign)(size_t, size_t); /* also aligned_alloc, posix_memalign */
  void *(*valloc)(size_t);           /* NULL (jemalloc has no pvalloc): by memalign */
  void *(*pvalloc)(size_t);
} fns;
static fns next;
static uintptr_t next_lo, next_hi; /* the text of the object that defines next.malloc */
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int tl_resolving __attribute__((tls_model("initial-exec")));
static char boot_heap[64 * 1024] __attribute__((aligned(64)));
static _Atomic size_t boot_used;

static inline int in_boot(const void *p) { return (const char *)p >= boot_heap && (const char *)p < boot_heap + sizeof boot_heap; }

static void *boot_alloc(size_t n, size_t align) {
  size_t at;
  do {
    at = atomic_load(&boot_used);
    size_t start = (at + align - 1) & ~(align - 1);
    if (start + n > sizeof boot_heap) return NULL;
    if (atomic_compare_exchange_weak(&boot_used, &at, start + n)) return boot_heap + start;
  } while (1);
}

static int text_of(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t fn = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && fn >= lo && fn < hi) {
      next_lo = lo, next_hi = hi;
      return 1;
    }
  }
  return 0;
}

/* Whether next is resolved: 1, or 0 in the thread that is resolving it (use boot_heap). */
static int resolved(void) {
  if (LIKELY(next.free != NULL)) return 1;
  if (tl_resolving) return 0;
  pthread_mutex_lock(&resolve_lock);
  if (!next.free) {
    tl_resolving = 1;
    fns f;
    f.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    f.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    f.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    f.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    f.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
    f.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    f.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    if (!f.malloc || !f.calloc || !f.realloc || !f.memalign || !f.free) abort(); /* libc has them all */
    dl_iterate_phdr(text_of, (void *)f.malloc);
    /* the counter from the first allocation on, also those of libraries initialised before the
     * shim's constructor runs */
    const char *cp = getenv("WB_ALLOC_COUNT");
    if (cp && *cp) map_count(cp);
    next.malloc = f.malloc, next.calloc = f.calloc, next.realloc = f.realloc, next.memalign = f.memalign;
    next.valloc = f.valloc, next.pvalloc = f.pvalloc;
    atomic_store((_Atomic(void (*)(void *)) *)&next.free, f.free);
    tl_resolving = 0;
  }
  pthread_mutex_unlock(&resolve_lock);
  return 1;
}

/* ---- the sampled set ---------------------------------------------------------------------- */

static inline uint64_t hash_of(uintptr_t p) { return (p >> 4) * 0x9E3779B97F4A7C15ull; }
static inline size_t slot_of(uintptr_t p) { return (size_t)(hash_of(p) >> (64 - SET_BITS)); }
static inline _Atomic uint32_t *counter_of(uintptr_t p) { return &filter[hash_of(p) >> (64 - FILTER_BITS)]; }

/* The farthest any block was placed from its home slot: a lookup never scans past it (slots never
 * return to 0, so without this bound a lookup of an absent address could scan the whole set). */
static _Atomic size_t max_probe;

/* Inserts p (under lock); 0, or -1 when the set is full. */
static int set_insert(uintptr_t p) {
  size_t mask = (1u << SET_BITS) - 1, i = slot_of(p);
  for (size_t n = 0; n < (1u << SET_BITS) / 2; n++, i = (i + 1) & mask) {
    uintptr_t v = atomic_load_explicit(&set[i], memory_order_relaxed);
    if (v == 0 || v == TOMB) {
      if (n > atomic_load_explicit(&max_probe, memory_order_relaxed))
        atomic_store_explicit(&max_probe, n, memory_order_release);
      atomic_fetch_add_explicit(counter_of(p), 1, memory_order_relaxed);
      atomic_store_explicit(&set[i], p, memory_order_release);
      return 0;
    }
  }
  return -1;
}

/* Removes p; whether it was there. Lock-free: a slot only ever goes 0 -> p -> TOMB -> q, and p
 * lies within max_probe slots of its home. */
static inline int set_remove(uintptr_t p) {
  if (LIKELY(atomic_load_explicit(counter_of(p), memory_order_acquire) == 0)) return 0;
  size_t mask = (1u << SET_BITS) - 1, i = slot_of(p);
  size_t limit = atomic_load_explicit(&max_probe, memory_order_acquire);
  for (size_t n = 0; n <= limit; n++) {
    uintptr_t v = atomic_load_explicit(&set[i], memory_order_acquire);
    if (v == 0) return 0;
    if (v == p) {
      uintptr_t expect = p;
      if (!atomic_compare_exchange_strong(&set[i], &expect, TOMB)) return 0;
      atomic_fetch_sub_explicit(counter_of(p), 1, memory_order_relaxed);
      return 1;
    }
    i = (i + 1) & mask;
  }
  return 0;
}

/* ---- writing --------------------------------------------------------------------------- */

typedef struct line {
  char buf[64 + MAX_FRAMES * 17 + 600];
  size_t n;
} line;

static void put(line *l, const char *s) {
  size_t k = strlen(s);
  if (l->n + k < sizeof l->buf) memcpy(l->buf + l->n, s, k), l->n += k;
}

static void put_hex(line *l, uint64_t v) {
  char t[17];
  int k = 16;
  t[k] = 0;
  do t[--k] = "0123456789abcdef"[v & 15], v >>= 4;
  while (v);
  put(l, " "), put(l, t + k);
}

static void put_dec(line *l, uint64_t v) {
  char t[21];
  int k = 20;
  t[k] = 0;
  do t[--k] = (char)('0' + v % 10), v /= 10;
  while (v);
  put(l, " "), put(l, t + k);
}

static void emit(line *l) {
  if (fd < 0) return;
  l->buf[l->n++] = '\n';
  ssize_t w;
  do w = write(fd, l->buf, l->n);
  while (w < 0 && errno == EINTR);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t hex_at(const char **s) {
  uint64_t v = 0;
  for (;; (*s)++) {
    char c = **s;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return v;
    v = v * 16 + (uint64_t)d;
  }
}

/* Writes the executable mappings of /proc/self/maps as "m" lines and makes them the known
 * ranges (under lock). */
static void write_maps(void) {
  static char text[256 * 1024];
  int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (mfd < 0) return;
  size_t n = 0;
  ssize_t r;
  while (n < sizeof text - 1 && ((r = read(mfd, text + n, sizeof text - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) n += (size_t)r;
  close(mfd);
  text[n] = 0;
  nranges = 0;
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    if (!end) break;
    const char *s = p;
    uint64_t lo = hex_at(&s);
    s++;
    uint64_t hi = hex_at(&s);
    int x = s[1] && s[2] && s[3] == 'x';
    s += 6;
    uint64_t off = hex_at(&s);
    const char *path = memchr(s, '/', (size_t)(end - s));
    const char *special = memchr(s, '[', (size_t)(end - s));
    if (x && nranges < MAX_RANGES) ranges[nranges][0] = lo, ranges[nranges][1] = hi, nranges++;
    if (x && (path || special)) {
      line l = {.n = 0};
      put(&l, "m");
      put_hex(&l, lo), put_hex(&l, hi), put_hex(&l, off);
      put(&l, " ");
      const char *name = path ? path : special;
      size_t k = (size_t)(end - name);
      if (k > 500) k = 500;
      memcpy(l.buf + l.n, name, k), l.n += k;
      emit(&l);
    }
    p = end + 1;
  }
}

/* Opens a file for this process image (under lock): at start-up, in a forked child at its first
 * record, and again when the program closed ours (a daemon closing every descriptor; the number
 * may now be one of its own files). */
static void open_file(void) {
  char path[600];
  pid_t pid = getpid();
  for (; fd < 0 && seq < 10000; seq++) {
    snprintf(path, sizeof path, "%s/%d.%d.alloc", dir, (int)pid, seq);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd >= 0 && fd < FD_FLOOR) { /* out of the low numbers a program may close and reuse */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR);
    if (high >= 0) {
      close(fd);
      fd = high;
    }
  }
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return;
  fd_dev = st.st_dev, fd_ino = st.st_ino, fd_pid = pid;
  line l = {.n = 0};
  put(&l, "h");
  put_dec(&l, (uint64_t)pid), put_dec(&l, (uint64_t)interval), put_hex(&l, start_ns);
  emit(&l);
  char comm[64] = "";
  int cfd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  ssize_t r = cfd >= 0 ? read(cfd, comm, sizeof comm - 1) : -1;
  if (cfd >= 0) close(cfd);
  if (r > 0 && comm[r - 1] == '\n') r--;
  comm[r > 0 ? r : 0] = 0;
  l.n = 0;
  put(&l, "c "), put(&l, comm);
  emit(&l);
  write_maps();
}

/* Makes fd this image's own file (under lock): not one the program closed and reused, nor a
 * parent's. */
static void own_file(void) {
  struct stat st;
  if (fd >= 0 && (getpid() != fd_pid || fstat(fd, &st) != 0 || st.st_dev != fd_dev || st.st_ino != fd_ino)) fd = -1;
  if (fd < 0) open_file();
}

/* ---- sampling -------------------------------------------------------------------------- */

static uint64_t rng_next(void) { /* xorshift64* */
  tl_rng ^= tl_rng >> 12, tl_rng ^= tl_rng << 25, tl_rng ^= tl_rng >> 27;
  return tl_rng * 0x2545F4914F6CDD1Dull;
}

static int64_t next_gap(void) {
  double u = ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
  return (int64_t)(-log(u) * interval) + 1;
}

typedef struct walk {
  uintptr_t pc[MAX_FRAMES];
  int n;
} walk;

static _Unwind_Reason_Code on_frame(struct _Unwind_Context *ctx, void *arg) {
  walk *w = arg;
  int before = 0;
  uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);
  if (ip == 0) return _URC_END_OF_STACK;
  if (ip >= self_lo && ip < self_hi && w->n == 0) return _URC_NO_REASON; /* the shim's own frames */
  if (w->n == 0 && !before) ip--; /* the leaf's return address, back into its call */
  w->pc[w->n++] = ip;
  return w->n < MAX_FRAMES ? _URC_NO_REASON : _URC_END_OF_STACK;
}

static int known(const walk *w) {
  for (int i = 0; i < w->n; i++) {
    int in = 0;
    for (int k = 0; k < nranges && !in; k++) in = w->pc[i] >= ranges[k][0] && w->pc[i] < ranges[k][1];
    if (!in) return 0;
  }
  return 1;
}

/* The lock, with cancellation off while it is held: write() and open() are cancellation points,
 * and a thread cancelled there would leave the lock taken for every other thread. */
static int lock_shim(void) {
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  pthread_mutex_lock(&lock);
  return old;
}

static void unlock_shim(int old) {
  pthread_mutex_unlock(&lock);
  pthread_setcancelstate(old, NULL);
}

static __attribute__((noinline)) void record(void *p, size_t n, char kind) {
  walk w = {.n = 0};
  _Unwind_Backtrace(on_frame, &w);
  line l = {.n = 0};
  put(&l, "a");
  put_hex(&l, now_ns()), put_hex(&l, (uintptr_t)p), put_hex(&l, n);
  char k[3] = {' ', kind, 0};
  put(&l, k);
  for (int i = 0; i < w.n; i++) put_hex(&l, w.pc[i]);
  int cancel = lock_shim();
  own_file();
  if (!known(&w)) write_maps();
  if (set_insert((uintptr_t)p) == 0) {
    emit(&l);
  } else if (!noted_full) {
    noted_full = 1;
    line x = {.n = 0};
    put(&x, "x the set of sampled blocks is full: later samples are dropped");
    emit(&x);
  }
  unlock_shim(cancel);
}

static __attribute__((noinline)) void sample(void *p, size_t n, char kind) {
  if (!tl_rng) { /* a thread's first allocation starts its countdown */
    tl_rng = (uint64_t)now_ns() ^ ((uint64_t)syscall(SYS_gettid) << 32) ^ (uintptr_t)&tl_rng;
    if (!tl_rng) tl_rng = 1;
    tl_left = next_gap() - (int64_t)n;
    if (tl_left > 0) return;
  }
  tl_left = next_gap();
  if (!enabled || !p || tl_busy) return;
  tl_busy = 1;
  int e = errno;
  record(p, n, kind);
  errno = e;
  tl_busy = 0;
}

static inline void account(void *p, size_t n, char kind) {
  if (count && p) {
    atomic_fetch_add_explicit(&count[0], n, memory_order_relaxed);
    atomic_fetch_add_explicit(&count[1], 1, memory_order_relaxed);
  }
  if (LIKELY((tl_left -= (int64_t)n) > 0)) return;
  sample(p, n, kind);
}

static __attribute__((noinline)) void freed(void *p) {
  if (tl_busy) return;
  tl_busy = 1;
  int e = errno;
  line l = {.n = 0};
  put(&l, "f");
  put_hex(&l, now_ns()), put_hex(&l, (uintptr_t)p);
  int cancel = lock_shim();
  own_file();
  emit(&l);
  unlock_shim(cancel);
  errno = e;
  tl_busy = 0;
}

static inline void forget(void *p) {
  if (p && enabled && set_remove((uintptr_t)p)) freed(p);
}

/* ---- the interposed functions ----------------------------------------------------------- */

EXPORT void *malloc(size_t n) {
  if (!resolved()) return boot_alloc(n, 16);
  void *p = next.malloc(n);
  account(p, n, 'm');
  return p;
}

EXPORT void *calloc(size_t k, size_t n) {
  if (n && k > SIZE_MAX / n) {
    errno = ENOMEM;
    return NULL;
  }
  if (!resolved()) return boot_alloc(k * n, 16); /* zeroed: never handed out before */
  void *p = next.calloc(k, n);
  account(p, k * n, 'c');
  return p;
}

EXPORT void free(void *p) {
  if (!p || in_boot(p)) return;
  forget(p);
  if (resolved()) next.free(p);
}

/* A sampled p leaves the set, and its free is recorded, before the real realloc: once that
 * returns, another thread may get p back and record it, and the file must hold p's free first.
 * A realloc that fails leaves p alive: a "u" line takes the free back. */
EXPORT void *realloc(void *p, size_t n) {
  if (!resolved() || in_boot(p)) { /* a block of boot_heap moves out (its size is not known) */
    void *q = resolved() ? malloc(n) : boot_alloc(n, 16);
    /* a boot block's bytes end at most at the heap's end; both may be boot blocks (memmove) */
    size_t room = p && in_boot(p) ? (size_t)(boot_heap + sizeof boot_heap - (char *)p) : n;
    if (q && p) memmove(q, p, n < room ? n : room);
    return q;
  }
  int was = p && enabled && set_remove((uintptr_t)p);
  if (was) freed(p);
  void *q = next.realloc(p, n);
  if (was && !q && n && !tl_busy) {
    tl_busy = 1; /* a signal handler's malloc must not wait for this thread's lock */
    int e = errno;
    line l = {.n = 0};
    put(&l, "u");
    put_hex(&l, now_ns()), put_hex(&l, (uintptr_t)p);
    int cancel = lock_shim();
    set_insert((uintptr_t)p);
    own_file();
    emit(&l);
    unlock_shim(cancel);
    errno = e;
    tl_busy = 0;
    return q;
  }
  account(q, n, 'r');
  return q;
}

EXPORT void *reallocarray(void *p, size_t k, size_t n) {
  if (n && k > SIZE_MAX / n) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, k * n);
}

EXPORT void *memalign(size_t align, size_t n) {
  if (!resolved()) return boot_alloc(n, align > 16 ? align : 16);
  void *p = next.memalign(align, n);
  account(p, n, 'a');
  return p;
}

EXPORT void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
  int e = errno;
  void *p = memalign(align, n);
  if (!p) return ENOMEM;
  errno = e;
  *out = p;
  return 0;
}

EXPORT void *valloc(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (!resolved() || !next.valloc) return memalign(page, n);
  void *p = next.valloc(n);
  account(p, n, 'a');
  return p;
}

EXPORT void *pvalloc(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (!resolved() || !next.pvalloc) {
    if (n > SIZE_MAX - page) { /* rounding up would wrap to a tiny block */
      errno = ENOMEM;
      return NULL;
    }
    return memalign(page, (n + page - 1) & ~(page - 1));
  }
  void *p = next.pvalloc(n);
  account(p, n, 'a');
  return p;
}

/* from: the caller's return address: the next allocator's own arenas are its blocks' (counted
 * as they are handed out), not allocations of the program. */
static inline void *map(uintptr_t from, void *addr, size_t len, int prot, int flags, int mfd, off_t off) {
  long r = syscall(SYS_mmap, addr, len, prot, flags, mfd, off);
  void *p = r == -1 ? MAP_FAILED : (void *)r;
  if (with_mmap && !foreign_image && p != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_FIXED) &&
      !(from >= next_lo && from < next_hi))
    account(p, len, 'M');
  return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int mfd, off_t off) {
  return map((uintptr_t)__builtin_return_address(0), addr, len, prot, flags, mfd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int mfd, off_t off) {
  return map((uintptr_t)__builtin_return_address(0), addr, len, prot, flags, mfd, off);
}

EXPORT int munmap(void *addr, size_t len) {
  if (with_mmap) forget(addr);
  return (int)syscall(SYS_munmap, addr, len);
}

/* ---- set-up ------------------------------------------------------------------------------ */

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size, (void)arg;
  uintptr_t me = (uintptr_t)&find_self;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
      self_lo = lo, self_hi = hi;
      return 1;
    }
  }
  return 0;
}

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }
static void after_fork_child(void) { /* the child writes its own file, under its own pid */
  if (count) atomic_fetch_add_explicit(&count[2], 1, memory_order_relaxed);
  if (fd >= 0) close(fd);
  fd = -1, seq = 0, start_ns = now_ns();
  pthread_mutex_unlock(&lock);
}

/* Maps the counter file named by WB_ALLOC_COUNT (see the top) once per image: a regular file, not
 * a link, at least COUNT_BYTES long; anything else is left alone. Under resolve_lock, or in the
 * constructor. */
static void map_count(const char *path) {
  static int tried;
  if (tried) return;
  tried = 1;
  int cfd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (cfd < 0) return;
  struct stat st;
  if (fstat(cfd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= COUNT_BYTES) {
    long r = syscall(SYS_mmap, NULL, (size_t)COUNT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, (off_t)0);
    if (r != -1) count = (_Atomic uint64_t *)r;
  }
  close(cfd);
  if (count) atomic_fetch_add_explicit(&count[2], 1, memory_order_relaxed);
}

/* Whether the program (or a library before this one) defines malloc, so that ours is never called;
 * *who names it. (The address of malloc in a non-PIE executable that takes malloc's address is its
 * PLT stub, which leads to ours: an undefined symbol there, not a definition.) */
static int foreign_malloc(const char **who) {
  void *m = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info, mine;
  const ElfW(Sym) *def = NULL;
  if (m && dladdr1(m, &info, (void **)&def, RTLD_DL_SYMENT) && def && def->st_shndx != SHN_UNDEF &&
      dladdr((void *)&find_self, &mine) && info.dli_fbase != mine.dli_fbase) {
    *who = info.dli_fname && *info.dli_fname ? info.dli_fname : "the executable";
    return 1;
  }
  return 0;
}

__attribute__((constructor)) static void init(void) {
  const char *d = getenv("WB_ALLOC_DIR"), *iv = getenv("WB_ALLOC_INTERVAL"), *mm = getenv("WB_ALLOC_MMAP");
  const char *cp = getenv("WB_ALLOC_COUNT"), *who = NULL;
  start_ns = now_ns();
  with_mmap = mm && strcmp(mm, "1") == 0;
  if (cp && *cp) {
    map_count(cp);
    resolved();
    if (count) pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    if (count && foreign_malloc(&who)) {
      foreign_image = 1;
      atomic_fetch_add_explicit(&count[3], 1, memory_order_relaxed);
    }
  }
  if (!d || !*d || strlen(d) >= sizeof dir) return;
  memcpy(dir, d, strlen(d) + 1);
  if (iv && atof(iv) >= 1) interval = atof(iv);
  resolved();
  dl_iterate_phdr(find_self, NULL);
  if (!count) pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  if (who || foreign_malloc(&who)) {
    line l = {.n = 0};
    put(&l, "x own allocator: malloc is defined by ");
    put(&l, who);
    pthread_mutex_lock(&lock);
    open_file();
    emit(&l);
    pthread_mutex_unlock(&lock);
    return;
  }
  pthread_mutex_lock(&lock);
  open_file();
  pthread_mutex_unlock(&lock);
  enabled = 1;
}
