/* Uncompressed copies of compressed DWARF (see wb_dwarf_inflated in core/unwind.h). Debian's
 * debug files keep their .debug_* sections zlib-compressed (SHF_COMPRESSED); libdw inflates all
 * of them when it opens one (libc6-dbg's: some 40 ms of CPU at every run). The copy is made once
 * per build id, with libelf: every section of the debug file, the compressed ones inflated, no
 * program headers (only the sections are read from it). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
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

Elf *wb_dwarf_inflated(Elf *e, const char *build_id, int *fd) {
  *fd = -1;
  if (!build_id || strlen(build_id) < 8 || strspn(build_id, "0123456789abcdef") != strlen(build_id) ||
      compressed_dwarf(e) != 1)
    return NULL;
  char dir[4096], path[4200], tmp[4300];
  if (wb_cache_dir(dir, sizeof dir) != 0) return NULL;
  if (snprintf(path, sizeof path, "%s/debug", dir) >= (int)sizeof path) return NULL;
  if (mkdir(path, 0700) != 0 && errno != EEXIST) return NULL;
  if (snprintf(path, sizeof path, "%s/debug/%s.debug", dir, build_id) >= (int)sizeof path) return NULL;
  Elf *c = open_copy(path, build_id, fd);
  if (c) return c;
  int tfd = wb_cache_create(path, tmp, sizeof tmp);
  if (tfd < 0 || wb_cache_commit(tfd, tmp, path, write_copy(e, tfd) == 0) != 0) return NULL;
  return open_copy(path, build_id, fd);
}
