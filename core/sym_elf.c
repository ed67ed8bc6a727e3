/* ELF symbol tables for wb.sym (see core/sym.h; kallsyms: core/sym_kallsyms.c). */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_guard.h"
#include "sym.h"
#include "ticker.h"

#define FP_SAMPLE 4000 /* functions checked for a frame-pointer prologue, at most */
#define FP_WINDOW 64   /* bytes of a function searched for it (the prologue may be shrink-wrapped) */

static wb_elf *files; /* every file loaded so far */
static wb_elf *vdso;

struct names {
  char *p;
  size_t len, cap;
};

static uint32_t add_name(struct names *n, const char *s) {
  size_t len = strlen(s) + 1;
  if (n->len + len > n->cap) {
    size_t cap = n->cap ? n->cap : 4096;
    while (cap < n->len + len) cap *= 2;
    char *p = realloc(n->p, cap);
    if (!p) return 0;
    n->p = p;
    n->cap = cap;
  }
  memcpy(n->p + n->len, s, len);
  n->len += len;
  return (uint32_t)(n->len - len);
}

int wb_symbol_order(const void *a, const void *b) {
  const wb_symbol *x = a, *y = b;
  if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
  if (x->rank != y->rank) return x->rank - y->rank;
  return (y->size > x->size) - (y->size < x->size);
}

void wb_hex(const unsigned char *p, size_t n, char *out, size_t outlen) {
  static const char digits[] = "0123456789abcdef";
  size_t k = 0;
  for (size_t i = 0; i < n && k + 2 < outlen; i++, k += 2) {
    out[k] = digits[p[i] >> 4];
    out[k + 1] = digits[p[i] & 15];
  }
  out[k] = 0;
}

/* The number of symbols of syms[0..n) (sorted by address) at or below addr. */
size_t wb_symbols_at_or_below(const wb_symbol *syms, size_t n, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (syms[mid].addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void wb_elf_build_id(Elf *elf, char *out, size_t outlen) {
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(elf, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data *data = elf_getdata(scn, NULL);
    GElf_Nhdr nh;
    size_t off = 0, name_off, desc_off;
    while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          memcmp((char *)data->d_buf + name_off, "GNU", 4) == 0) {
        wb_hex((const unsigned char *)data->d_buf + desc_off, nh.n_descsz, out, outlen);
        return;
      }
    }
  }
}

/* An assembler label that starts code (ld.so's _start and _dl_start_user are untyped and sizeless):
 * a symbol without size inside, not at the end of, an executable section. Labels are named only
 * where no function's range holds them (set_symbols), as the functions run from each one up to the
 * next symbol. */
#define LABEL_RANK 3
static int code_label(Elf *elf, const GElf_Sym *sym) {
  GElf_Shdr sh;
  Elf_Scn *scn = sym->st_size == 0 && sym->st_shndx < SHN_LORESERVE ? elf_getscn(elf, sym->st_shndx) : NULL;
  return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sym->st_value >= sh.sh_addr &&
         sym->st_value < sh.sh_addr + sh.sh_size;
}

/* The functions (and code labels) of the symbol table of type `type` (SHT_SYMTAB or SHT_DYNSYM); 0
 * when absent. */
static size_t read_symbols(Elf *elf, Elf64_Word type, wb_symbol **out, struct names *names) {
  Elf_Scn *scn = NULL;
  GElf_Shdr sh;
  while ((scn = elf_nextscn(elf, scn)))
    if (gelf_getshdr(scn, &sh) && sh.sh_type == type) break;
  if (!scn || sh.sh_entsize == 0) return 0;
  Elf_Data *data = elf_getdata(scn, NULL);
  size_t count = sh.sh_size / sh.sh_entsize, n = 0;
  wb_symbol *syms = data ? malloc((count ? count : 1) * sizeof *syms) : NULL;
  if (!syms) return 0;
  for (size_t i = 0; i < count; i++) {
    GElf_Sym sym;
    if (!gelf_getsym(data, (int)i, &sym)) continue;
    int t = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
    if (t == STT_NOTYPE ? !code_label(elf, &sym) : t != STT_FUNC && t != STT_GNU_IFUNC) continue;
    const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
    if (!name || !*name) continue;
    uint8_t rank = t == STT_NOTYPE ? LABEL_RANK : bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
    syms[n++] = (wb_symbol){.addr = sym.st_value, .size = sym.st_size, .name = add_name(names, name), .rank = rank};
  }
  if (n == 0) {
    free(syms);
    return 0;
  }
  *out = syms;
  return n;
}

static void set_symbols(wb_elf *e, wb_symbol *syms, size_t n, struct names *names) {
  qsort(syms, n, sizeof *syms, wb_symbol_order);
  size_t kept = 0;
  uint64_t covered = 0; /* the end of the furthest-reaching function so far */
  for (size_t i = 0; i < n; i++) {
    if (syms[i].rank == LABEL_RANK && syms[i].addr < covered) continue; /* a label inside a function */
    if (kept == 0 || syms[kept - 1].addr != syms[i].addr) syms[kept++] = syms[i];
    if (syms[i].addr + syms[i].size > covered) covered = syms[i].addr + syms[i].size;
  }
  free(e->syms);
  free(e->names);
  e->syms = syms;
  e->nsyms = kept;
  e->names = names->p;
  *names = (struct names){0};
}

/* Reads segments, build id and symbols of an open ELF. */
static void load_elf(wb_elf *e, Elf *elf) {
  size_t nph = 0;
  if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) != 0) {
    snprintf(e->err, sizeof e->err, "not an ELF file");
    return;
  }
  e->loads = calloc(nph ? nph : 1, sizeof *e->loads);
  for (size_t i = 0; e->loads && i < nph; i++) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
      e->loads[e->nloads++] = (wb_load){ph.p_offset, ph.p_filesz, ph.p_vaddr};
  }
  wb_elf_build_id(elf, e->build_id, sizeof e->build_id);
  GElf_Ehdr eh;
  if (gelf_getehdr(elf, &eh)) e->entry = eh.e_entry;
  struct names names = {0};
  wb_symbol *syms = NULL;
  size_t n = read_symbols(elf, SHT_SYMTAB, &syms, &names);
  e->symtab = n > 0;
  if (!n) n = read_symbols(elf, SHT_DYNSYM, &syms, &names);
  if (n) set_symbols(e, syms, n, &names);
  else snprintf(e->err, sizeof e->err, "no symbol table (stripped)");
  free(names.p);
}

/* A stripped file's symbols from its separate debug file (/usr/lib/debug/.build-id/). */
static void load_debug_file(wb_elf *e) {
  if (e->symtab || strlen(e->build_id) < 3) return;
  char path[256];
  snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug", e->build_id, e->build_id + 2);
  int fd = wb_open_foreign(path);
  if (fd < 0) return;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  struct names names = {0};
  wb_symbol *syms = NULL;
  size_t n = elf ? read_symbols(elf, SHT_SYMTAB, &syms, &names) : 0;
  struct stat st;
  if (n && fstat(fd, &st) == 0) {
    set_symbols(e, syms, n, &names);
    e->symtab = 1;
    e->debug_file = strdup(path);
    e->debug_dev = st.st_dev;
    e->debug_ino = st.st_ino;
    e->err[0] = 0;
  } else {
    free(syms);
  }
  free(names.p);
  if (elf) elf_end(elf);
  close(fd);
}

/* Caps on a .gnu_debugdata image (docs/capture.md, "Bounds"): real ones hold a .symtab a few times
 * the size of the compressed section. */
#define MINIDEBUG_RATIO_MAX 100
#define MINIDEBUG_MAX ((size_t)256 << 20)

/* The xz-compressed ELF image in e's .gnu_debugdata section (MiniDebugInfo), malloc'ed, or NULL
 * (also when it would inflate past the caps). */
static char *debugdata(Elf *elf, size_t *len) {
  size_t shstrndx;
  Elf_Data *d = NULL;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return NULL;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
    if (n && strcmp(n, ".gnu_debugdata") == 0 && sh.sh_type == SHT_PROGBITS) d = elf_getdata(scn, NULL);
  }
  if (!d || d->d_size == 0) return NULL;
  lzma_stream z = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&z, 256u << 20, 0) != LZMA_OK) return NULL;
  /* a bomb stops at the cap: MINIDEBUG_RATIO_MAX times the section, MINIDEBUG_MAX at most */
  size_t limit = d->d_size > MINIDEBUG_MAX / MINIDEBUG_RATIO_MAX ? MINIDEBUG_MAX : d->d_size * MINIDEBUG_RATIO_MAX;
  size_t cap = d->d_size * 4 + 4096;
  char *out = malloc(cap);
  z.next_in = d->d_buf;
  z.avail_in = d->d_size;
  lzma_ret r = LZMA_OK;
  while (out && r == LZMA_OK) {
    z.next_out = (uint8_t *)out + z.total_out;
    z.avail_out = cap - z.total_out;
    r = lzma_code(&z, LZMA_FINISH);
    if ((r == LZMA_OK || r == LZMA_BUF_ERROR) && z.avail_out == 0) { /* the output is full */
      if (cap >= limit) break; /* r is not LZMA_STREAM_END: refused below */
      cap = cap * 2 > limit ? limit : cap * 2;
      char *p = realloc(out, cap);
      if (!p) free(out);
      out = p;
      r = LZMA_OK;
    }
  }
  *len = z.total_out;
  lzma_end(&z);
  if (r != LZMA_STREAM_END) {
    free(out);
    return NULL;
  }
  return out;
}

/* A stripped file's MiniDebugInfo: .gnu_debugdata holds an ELF whose .symtab has the functions that
 * .dynsym lacks; both are kept. */
static void load_minidebug(wb_elf *e, Elf *elf) {
  if (e->symtab) return;
  size_t len;
  char *image = debugdata(elf, &len);
  Elf *mini = image ? elf_memory(image, len) : NULL;
  struct names names = {0};
  wb_symbol *dyn = NULL, *local = NULL;
  size_t nd = read_symbols(elf, SHT_DYNSYM, &dyn, &names);
  size_t nl = mini ? read_symbols(mini, SHT_SYMTAB, &local, &names) : 0;
  wb_symbol *all = nl ? realloc(dyn, (nd + nl) * sizeof *all) : NULL;
  if (all) {
    memcpy(all + nd, local, nl * sizeof *all);
    set_symbols(e, all, nd + nl, &names);
    e->symtab = 1;
    e->minidebug = 1;
    e->err[0] = 0;
  } else {
    free(dyn);
  }
  free(local);
  free(names.p);
  if (mini) elf_end(mini);
  free(image);
}

/* A file replaced on disk: its tables go, the struct stays (on `retired`, never freed), so that a
 * wb_elf pointer names one file for the life of the process (wb_dwobj and the symbolizer's
 * verdicts compare them). */
static wb_elf *retired;

static void retire_elf(wb_elf *e) {
  free(e->syms);
  free(e->names);
  free(e->plt);
  free(e->plt_names);
  e->syms = e->plt = NULL, e->names = e->plt_names = NULL;
  e->nsyms = e->nplt = 0;
  wb_load *loads = e->nloads ? realloc(e->loads, (size_t)e->nloads * sizeof *loads) : NULL;
  if (loads) e->loads = loads; /* allocated for every program header */
  e->replaced = 1;
  snprintf(e->err, sizeof e->err, "replaced on disk");
  e->next = retired;
  retired = e;
}

wb_elf *wb_elf_get(const char *path) {
  struct stat st;
  int have_stat = stat(path, &st) == 0;
  int64_t mtime = have_stat ? (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec : 0;
  for (wb_elf **pp = &files; *pp; pp = &(*pp)->next) {
    wb_elf *e = *pp;
    if (strcmp(e->path, path) != 0) continue;
    if (!have_stat || (e->dev == st.st_dev && e->ino == st.st_ino && e->size == st.st_size &&
                       e->mtime_ns == mtime))
      return e;
    *pp = e->next; /* replaced on disk */
    retire_elf(e);
    break;
  }
  elf_version(EV_CURRENT);
  wb_elf *e = calloc(1, sizeof *e);
  if (!e || !(e->path = strdup(path))) {
    free(e);
    return NULL;
  }
  int fd = wb_open_foreign(path); /* the path may have been replaced by a FIFO since it was mapped */
  if (fd >= 0 && fstat(fd, &st) == 0) { /* the file read, whatever the path names by now */
    have_stat = 1;
    mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
  if (have_stat) {
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->size = st.st_size;
    e->mtime_ns = mtime;
  }
  Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
  e->unreadable = fd < 0 || !elf;
  if (fd == -2) snprintf(e->err, sizeof e->err, "not a regular file");
  else if (fd < 0) snprintf(e->err, sizeof e->err, "%s", strerror(errno));
  else if (!elf) snprintf(e->err, sizeof e->err, "%s", elf_errmsg(-1));
  else load_elf(e, elf);
  if (elf && e->loads) wb_elf_load_plt(e, elf);
  load_debug_file(e);
  if (elf) load_minidebug(e, elf);
  if (elf) elf_end(elf);
  if (fd >= 0) close(fd);
  e->next = files;
  files = e;
  return e;
}

wb_elf *wb_elf_vdso(void) {
  if (vdso) return vdso;
  unsigned long base = getauxval(AT_SYSINFO_EHDR);
  size_t size = 0;
  FILE *f = fopen("/proc/self/maps", "re");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base) size = hi - lo;
  }
  if (f) fclose(f);
  elf_version(EV_CURRENT);
  if (!(vdso = calloc(1, sizeof *vdso)) || !(vdso->path = strdup("[vdso]"))) {
    free(vdso);
    return vdso = NULL;
  }
  Elf *elf = base && size ? elf_memory((char *)base, size) : NULL;
  if (elf) {
    load_elf(vdso, elf);
    elf_end(elf);
  } else {
    snprintf(vdso->err, sizeof vdso->err, "no vDSO image");
  }
  return vdso;
}

uint64_t wb_elf_vaddr(const wb_elf *e, uint64_t offset) {
  for (int i = 0; i < e->nloads; i++)
    if (offset >= e->loads[i].offset && offset < e->loads[i].offset + e->loads[i].filesz)
      return offset - e->loads[i].offset + e->loads[i].vaddr;
  return 0;
}

/* The file offset of a virtual address (the inverse of wb_elf_vaddr); 0 when no segment holds it. */
static uint64_t file_offset(const wb_elf *e, uint64_t vaddr) {
  for (int i = 0; i < e->nloads; i++)
    if (vaddr >= e->loads[i].vaddr && vaddr < e->loads[i].vaddr + e->loads[i].filesz)
      return vaddr - e->loads[i].vaddr + e->loads[i].offset;
  return 0;
}

const char *wb_elf_lookup(const wb_elf *e, uint64_t vaddr, uint64_t *off) {
  const char *plt = wb_elf_lookup_plt(e, vaddr, off);
  if (plt) return plt;
  size_t lo = wb_symbols_at_or_below(e->syms, e->nsyms, vaddr);
  for (size_t k = 0; k < 8 && lo > k; k++) {
    const wb_symbol *s = &e->syms[lo - 1 - k];
    int inside = s->size ? vaddr < s->addr + s->size : k == 0;
    if (inside) {
      *off = vaddr - s->addr;
      return e->names + s->name;
    }
  }
  return NULL;
}

static int startup_code(const char *name) {
  static const char *const names[] = {"_start", "_init", "_fini", "deregister_tm_clones",
                                      "register_tm_clones", "__do_global_dtors_aux", "frame_dummy",
                                      "__libc_csu_init", "__libc_csu_fini", "_dl_relocate_static_pie"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

void wb_elf_check_frame_pointers(wb_elf *e) {
  if (e->fp_checked || e->replaced) return; /* a replaced file: its path names another file now */
  e->fp_checked = 1;
  int fd = e->path[0] == '[' ? -1 : wb_open_foreign(e->path);
  if (fd < 0) return;
  size_t step = e->nsyms > FP_SAMPLE ? e->nsyms / FP_SAMPLE : 1;
  for (size_t i = 0; i < e->nsyms; i += step) {
    const wb_symbol *s = &e->syms[i];
    if (s->size < 8 || startup_code(e->names + s->name)) continue;
    uint64_t file_off = file_offset(e, s->addr);
    unsigned char code[FP_WINDOW];
    size_t n = s->size < sizeof code ? (size_t)s->size : sizeof code;
    if (!file_off || pread(fd, code, n, (off_t)file_off) != (ssize_t)n) continue;
    e->fp_functions++;
    for (size_t k = 0; k + 3 <= n; k++) { /* mov %rsp,%rbp in either encoding */
      if (code[k] == 0x48 && ((code[k + 1] == 0x89 && code[k + 2] == 0xe5) ||
                              (code[k + 1] == 0x8b && code[k + 2] == 0xec))) {
        e->fp_with++;
        break;
      }
    }
  }
  close(fd);
}
