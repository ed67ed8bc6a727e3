/* Uncompressed copies of compressed DWARF (see wb_dwarf_inflated in core/unwind.h). Debian's
 * debug files keep their .debug_* sections zlib-compressed (SHF_COMPRESSED); libdw inflates all
 * of them when it opens one (libc6-dbg's: some 40 ms of CPU at every run). The copy is made once
 * per build id and contents, with libelf: every section of the debug file, the compressed ones
 * inflated, no program headers (only the sections are read from it). A build id is what a file
 * claims, the contents' hash what it is: a file carrying another's build id gets a copy of its
 * own, and the other's copy is never read for it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "sym.h"
#include "unwind.h"

/* 1 when e has a compressed .debug_* section, 0 when none, -1 for the old .zdebug_* form. */
static int compressed_dwarf(Elf *e) {
  size_t shstrndx;
  if (elf_getshdrstrndx(e, &shstrndx) != 0) return 0;
  int found = 0;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
    GElf_Shdr sh;
    const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
    if (!name) continue;
    if (strncmp(name, ".zdebug_", 8) == 0) return -1;
    if (strncmp(name, ".debug_", 7) == 0 && (sh.sh_flags & SHF_COMPRESSED)) found = 1;
  }
  return found;
}

/* The size a compressed section says it inflates to: its ELF compression header (SHF_COMPRESSED),
 * or the "ZLIB" + 64-bit big-endian size of the GNU .zdebug_* form; 0 when it is not compressed. */
static uint64_t inflated_size(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, size_t shstrndx) {
  GElf_Chdr ch;
  if (sh->sh_flags & SHF_COMPRESSED) return gelf_getchdr(scn, &ch) ? ch.ch_size : UINT64_MAX;
  const char *name = elf_strptr(e, shstrndx, sh->sh_name);
  if (!name || strncmp(name, ".zdebug_", 8) != 0) return 0;
  Elf_Data *d = elf_rawdata(scn, NULL);
  if (!d || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4) != 0) return UINT64_MAX;
  uint64_t size = 0;
  for (int i = 4; i < 12; i++) size = size << 8 | ((const unsigned char *)d->d_buf)[i];
  return size;
}

int wb_dwarf_over_cap(Elf *e) {
  size_t shstrndx;
  if (elf_getshdrstrndx(e, &shstrndx) != 0) return 0;
  uint64_t total = 0;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    uint64_t size = inflated_size(e, scn, &sh, shstrndx);
    if (size == 0) continue;
    if (size == UINT64_MAX || size > WB_INFLATE_RATIO_MAX * (uint64_t)sh.sh_size + (1u << 20)) return 1;
    if ((total += size) > WB_INFLATE_TOTAL_MAX) return 1;
  }
  return 0;
}

/* Opens the copy at path when this user made it (mode 0600, a regular file) and it is of build_id. */
static Elf *open_copy(const char *path, const char *build_id, int *fd) {
  *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (*fd < 0) return NULL;
  Elf *e = NULL;
  char bid[41] = "";
  if (wb_cache_trusted(*fd) == 0) e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
  if (e && elf_kind(e) == ELF_K_ELF) wb_elf_build_id(e, bid, sizeof bid);
  if (e && bid[0] && strcmp(bid, build_id) == 0 && compressed_dwarf(e) == 0) return e;
  if (e) elf_end(e);
  close(*fd);
  *fd = -1;
  return NULL;
}

/* Writes src, its compressed sections inflated, to the open file fd; 0 or -1. */
static int write_copy(Elf *src, int fd) {
  GElf_Ehdr eh;
  size_t shstrndx;
  if (!gelf_getehdr(src, &eh) || elf_getshdrstrndx(src, &shstrndx) != 0 || shstrndx >= SHN_LORESERVE) return -1;
  Elf *out = elf_begin(fd, ELF_C_WRITE, NULL);
  if (!out || !gelf_newehdr(out, gelf_getclass(src))) {
    if (out) elf_end(out);
    return -1;
  }
  int ok = 1;
  for (Elf_Scn *scn = NULL; ok && (scn = elf_nextscn(src, scn));) {
    GElf_Shdr sh;
    Elf_Scn *copy = elf_newscn(out);
    ok = copy && gelf_getshdr(scn, &sh) != NULL;
    for (Elf_Data *d = NULL; ok && (d = elf_getdata(scn, d));) {
      Elf_Data *nd = elf_newdata(copy);
      if (!(ok = nd != NULL)) break;
      *nd = *d; /* points into src, which outlives the write */
    }
    ok = ok && gelf_update_shdr(copy, &sh);
    if (ok && (sh.sh_flags & SHF_COMPRESSED)) ok = elf_compress(copy, 0, 0) >= 0; /* 0: inflate */
  }
  eh.e_phoff = 0, eh.e_phnum = 0;
  ok = ok && gelf_update_ehdr(out, &eh) && elf_update(out, ELF_C_WRITE) >= 0;
  elf_end(out);
  return ok ? 0 : -1;
}

/* 1 when only root or this user may change the file behind fd: its contents stay what wb hashed. */
static int settled(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & 022);
}

#define SNAPSHOT_MAX ((size_t)256 << 20) /* the most of another user's file read into memory */

/* The contents of the file behind fd, read into memory (*len bytes); NULL past SNAPSHOT_MAX. */
static char *snapshot(int fd, size_t *len) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0 || (uint64_t)st.st_size > SNAPSHOT_MAX) return NULL;
  size_t size = (size_t)st.st_size, got = 0;
  char *buf = malloc(size);
  while (buf && got < size) {
    ssize_t k = pread(fd, buf + got, size - got, (off_t)got);
    if (k <= 0) break;
    got += (size_t)k;
  }
  if (buf && got == size) return *len = size, buf;
  free(buf); /* cut short while read: no copy */
  return NULL;
}

/* Warnings for wb.unwind.cache_warnings(): once per file and build id in a process. */
static struct {
  pthread_mutex_t lock;
  char **text;
  size_t n, taken, cap;
} notes = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};

static void note_other_contents(const char *label, const char *build_id) {
  char line[4400];
  snprintf(line, sizeof line, "%s: the DWARF wb cached for its build id %s was made from other contents (a rebuild "
           "that kept the build id, or a file passing for another): not used, its own is read", label, build_id);
  pthread_mutex_lock(&notes.lock);
  int known = 0;
  for (size_t i = 0; i < notes.n && !known; i++) known = strcmp(notes.text[i], line) == 0;
  if (!known && notes.n == notes.cap) {
    size_t cap = notes.cap ? notes.cap * 2 : 8;
    char **p = realloc(notes.text, cap * sizeof *p);
    if (p) notes.text = p, notes.cap = cap;
  }
  if (!known && notes.n < notes.cap && (notes.text[notes.n] = strdup(line))) notes.n++;
  pthread_mutex_unlock(&notes.lock);
}

const char *wb_dwarf_cache_warning(void) {
  pthread_mutex_lock(&notes.lock);
  const char *w = notes.taken < notes.n ? notes.text[notes.taken++] : NULL;
  pthread_mutex_unlock(&notes.lock);
  return w;
}

/* 1 when dir holds a copy for build_id other than name. */
static int other_copy(const char *dir, const char *build_id, const char *name) {
  DIR *d = opendir(dir);
  size_t n = strlen(build_id);
  int found = 0;
  for (struct dirent *e; d && !found && (e = readdir(d));) {
    const char *dot = strrchr(e->d_name, '.');
    found = strncmp(e->d_name, build_id, n) == 0 && e->d_name[n] == '-' && dot && strcmp(dot, ".debug") == 0 &&
            strcmp(e->d_name, name) != 0;
  }
  if (d) closedir(d);
  return found;
}

/* Trims dir once per process, before its first copy is looked up. */
static void trim_once(const char *dir, uint64_t max_bytes, double max_age) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static int done;
  pthread_mutex_lock(&lock);
  if (!done) wb_cache_trim(dir, ".debug", max_bytes, max_age, NULL);
  done = 1;
  pthread_mutex_unlock(&lock);
}

Elf *wb_dwarf_inflated(Elf *e, int src_fd, const char *build_id, const char *label, int *fd) {
  *fd = -1;
  if (!build_id || strlen(build_id) < 8 || strspn(build_id, "0123456789abcdef") != strlen(build_id) ||
      compressed_dwarf(e) != 1)
    return NULL;
  char dir[4200], name[128], path[4400], tmp[4500], hash[65];
  uint64_t max_bytes;
  double max_age;
  if (wb_cache_dir(dir, sizeof dir - 8) != 0) return NULL;
  strcat(dir, "/debug");
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return NULL;
  wb_cache_limits(&max_bytes, &max_age);
  trim_once(dir, max_bytes, max_age);
  /* the contents hashed are the contents inflated: another user's file is read into memory first */
  size_t len = 0;
  int stable = settled(src_fd);
  char *own = stable ? NULL : snapshot(src_fd, &len);
  const char *image = stable ? elf_rawfile(e, &len) : own;
  if (!image || max_bytes == 0) {
    free(own);
    return NULL;
  }
  wb_content_hash(image, len, hash);
  snprintf(name, sizeof name, "%s-%s.debug", build_id, hash);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  Elf *c = open_copy(path, build_id, fd);
  if (c) {
    wb_cache_touch(*fd);
    free(own);
    return c;
  }
  if (other_copy(dir, build_id, name)) note_other_contents(label, build_id);
  Elf *src = own ? elf_memory(own, len) : e;
  int tfd = src ? wb_cache_create(path, tmp, sizeof tmp) : -1;
  struct stat st;
  int ok = tfd >= 0 && write_copy(src, tfd) == 0 && fstat(tfd, &st) == 0 && (uint64_t)st.st_size <= max_bytes;
  if (own && src) elf_end(src);
  free(own);
  if (tfd < 0 || wb_cache_commit(tfd, tmp, path, ok) != 0) return NULL;
  wb_cache_trim(dir, ".debug", max_bytes, max_age, name);
  return open_copy(path, build_id, fd);
}
