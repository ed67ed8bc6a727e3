/* Kernel symbols for wb.sym (see core/sym.h): the text symbols of the kernel image, read from
 * /proc/kallsyms once per boot and kept in a cache file, and the rest of kallsyms (modules, BPF
 * programs, trampolines: they come and go) read as it is when an address outside the image is
 * first asked for. Generating kallsyms costs the kernel some 30-50 ms of CPU at every read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "sym.h"
#include "ticker.h"

#define OUTSIDE 0x80 /* rank bit: a symbol outside the kernel image (a "\t[module]" line) */

typedef struct table {
  wb_symbol *syms; /* text symbols (t T w W), in wb_symbol_order */
  size_t n;
  char *names;
  size_t names_len;
  void *block; /* what to free, when the table was read from the cache in one piece */
} table;

static struct {
  pthread_once_t once, all_once;
  table image;     /* the image's symbols; with complete, everything kallsyms listed */
  int complete;    /* image was parsed from kallsyms itself: `all` is not needed */
  uint64_t lo, hi; /* the image's first and last symbol */
  table all;       /* kallsyms now, read at the first address outside [lo, hi] */
  _Atomic int loaded, ahead_tid; /* image read; the read-ahead thread (wb_kallsyms_prefetch) */
} ks = {.once = PTHREAD_ONCE_INIT, .all_once = PTHREAD_ONCE_INIT};

/* The cache file's header; the symbols and then the names follow. */
struct cache_header {
  char magic[8];    /* "wbksyms1" */
  char boot_id[40]; /* /proc/sys/kernel/random/boot_id, NUL-padded */
  uint32_t sym_size;
  uint32_t pad;
  uint64_t n, names_len;
};

/* Reads a whole file at once (kallsyms is generated as it is read: large reads are cheaper). */
static char *slurp(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t cap = 1 << 22, n = 0;
  char *buf = malloc(cap);
  for (ssize_t r = 1; buf && r > 0;) {
    if (cap - n < (1 << 20)) {
      char *p = realloc(buf, cap *= 2);
      if (!p) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = p;
    }
    do r = read(fd, buf + n, cap - n - 1);
    while (r < 0 && errno == EINTR);
    if (r > 0) n += (size_t)r;
  }
  close(fd);
  if (buf) buf[n] = 0;
  *len = n;
  return buf;
}

/* Parses kallsyms text ("ADDR TYPE NAME[\t[MODULE]]" lines) into t, sorted; symbols outside the
 * image get OUTSIDE in their rank. Leaves t empty when every address is zero (kallsyms as an
 * unprivileged reader sees it). */
static void parse(const char *text, size_t len, table *t) {
  size_t cap = len / 40 + 16;
  t->syms = malloc(cap * sizeof *t->syms);
  t->names = malloc(len + 1);
  if (!t->syms || !t->names) {
    free(t->syms), free(t->names);
    *t = (table){0};
    return;
  }
  int nonzero = 0;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    char *p;
    unsigned long long addr = strtoull(line, &p, 16);
    if (p[0] == ' ' && p[1] && p[2] == ' ' && strchr("tTwW", p[1]) && t->n < cap) {
      char type = p[1], *name = p + 3;
      size_t nlen = strcspn(name, "\t\n");
      memcpy(t->names + t->names_len, name, nlen);
      t->names[t->names_len + nlen] = 0;
      uint8_t rank = (uint8_t)(type == 'T' ? 0 : type == 'W' ? 1 : 2);
      if (name[nlen] == '\t') rank |= OUTSIDE;
      t->syms[t->n++] = (wb_symbol){.addr = addr, .name = (uint32_t)t->names_len, .rank = rank};
      t->names_len += nlen + 1;
      nonzero |= addr != 0;
    }
    line = *end ? end + 1 : end;
  }
  if (!nonzero) t->n = 0;
  qsort(t->syms, t->n, sizeof *t->syms, wb_symbol_order);
}

static void read_all(table *t) {
  size_t len;
  char *text = slurp("/proc/kallsyms", &len);
  if (text) parse(text, len, t);
  free(text);
}

/* Loads the image's symbols from the cache file of this boot into t; 0, or -1 when there is none
 * that this user wrote (mode 0600) with this layout. */
static int read_cache(const char *path, const char boot[40], table *t) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  struct cache_header h;
  char *block = NULL;
  int ok = wb_cache_trusted(fd) == 0 && fstat(fd, &st) == 0 && (size_t)st.st_size > sizeof h &&
           (block = malloc((size_t)st.st_size)) != NULL && pread(fd, block, (size_t)st.st_size, 0) == st.st_size;
  close(fd);
  if (ok) {
    memcpy(&h, block, sizeof h);
    ok = memcmp(h.magic, "wbksyms1", 8) == 0 && memcmp(h.boot_id, boot, 40) == 0 &&
         h.sym_size == sizeof(wb_symbol) && h.n > 0 && h.names_len > 0 && h.n < (1u << 24) &&
         h.names_len < (1u << 28) && sizeof h + h.n * sizeof(wb_symbol) + h.names_len == (uint64_t)st.st_size;
  }
  if (ok) {
    t->syms = (wb_symbol *)(void *)(block + sizeof h);
    t->n = h.n;
    t->names = block + sizeof h + h.n * sizeof(wb_symbol);
    t->names_len = h.names_len;
    ok = t->names[t->names_len - 1] == 0;
    for (size_t i = 0; ok && i < t->n; i++) ok = t->syms[i].name < t->names_len && !(t->syms[i].rank & OUTSIDE);
  }
  if (!ok) {
    free(block);
    *t = (table){0};
    return -1;
  }
  t->block = block;
  return 0;
}

/* Writes the image's symbols of t (the whole of kallsyms) to the cache file, atomically; a
 * failure leaves no file and is not an error (the next run reads kallsyms again). */
static void write_cache(const char *path, const char boot[40], const table *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++) n += !(t->syms[i].rank & OUTSIDE);
  if (n == 0) return;
  char tmp[4300];
  int fd = wb_cache_create(path, tmp, sizeof tmp);
  if (fd < 0) return;
  struct cache_header h = {.sym_size = sizeof(wb_symbol), .n = n, .names_len = t->names_len};
  memcpy(h.magic, "wbksyms1", 8);
  memcpy(h.boot_id, boot, 40);
  FILE *f = fdopen(fd, "w");
  int ok = f && fwrite(&h, sizeof h, 1, f) == 1;
  for (size_t i = 0; ok && i < t->n; i++)
    if (!(t->syms[i].rank & OUTSIDE)) ok = fwrite(&t->syms[i], sizeof *t->syms, 1, f) == 1;
  ok = ok && fwrite(t->names, 1, t->names_len, f) == t->names_len;
  if (f) {
    ok = fclose(f) == 0 && ok;
    fd = -1; /* closed with f */
  }
  wb_cache_commit(fd, tmp, path, f && ok);
}

/* The image's symbols: from this boot's cache, else kallsyms (then cached). */
static void load_image(void) {
  char boot[40], dir[4096], path[4200];
  int cacheable = wb_boot_id(boot) == 0 && wb_cache_dir(dir, sizeof dir) == 0 &&
                  snprintf(path, sizeof path, "%s/kallsyms-%s", dir, boot) < (int)sizeof path;
  if (!cacheable || read_cache(path, boot, &ks.image) != 0) {
    read_all(&ks.image);
    ks.complete = 1;
    if (cacheable && ks.image.n > 0) {
      write_cache(path, boot, &ks.image);
      wb_cache_prune(dir, "kallsyms-", boot);
    }
  }
  for (size_t i = 0; i < ks.image.n; i++) {
    if (ks.image.syms[i].rank & OUTSIDE) continue;
    if (!ks.lo) ks.lo = ks.image.syms[i].addr;
    ks.hi = ks.image.syms[i].addr;
  }
}

static void load_all(void) { read_all(&ks.all); }

/* The image's symbols, read once: a caller that finds the read-ahead thread (nice 19) at it
 * hurries that thread before waiting. */
size_t wb_kallsyms_load(void) {
  if (!atomic_load(&ks.loaded)) wb_thread_hurry(&ks.ahead_tid);
  pthread_once(&ks.once, load_image);
  atomic_store(&ks.loaded, 1);
  return ks.image.n;
}

static void *kallsyms_thread(void *arg) {
  (void)arg;
  wb_thread_background(&ks.ahead_tid);
  wb_kallsyms_load();
  return NULL;
}

int wb_kallsyms_prefetch(void) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static int started;
  pthread_mutex_lock(&lock);
  if (!started) started = wb_thread_start(NULL, kallsyms_thread, NULL) == 0;
  pthread_mutex_unlock(&lock);
  return started ? 0 : -1;
}

const char *wb_kallsyms_lookup(uint64_t addr, uint64_t *off) {
  wb_kallsyms_load();
  const table *t = &ks.image;
  if (!ks.complete && (addr < ks.lo || addr > ks.hi)) {
    pthread_once(&ks.all_once, load_all);
    t = &ks.all;
  }
  size_t lo = wb_symbols_at_or_below(t->syms, t->n, addr);
  if (lo == 0 || lo == t->n) return NULL; /* below the first or past the last symbol */
  const char *name = t->names + t->syms[lo - 1].name;
  /* past the end of the kernel image's text: code of no listed symbol (a BPF program gone from
   * kallsyms, a trampoline), not the marker's */
  if (strcmp(name, "_etext") == 0 || strcmp(name, "_einittext") == 0) return NULL;
  *off = addr - t->syms[lo - 1].addr;
  return name;
}
