/* The objects of the unwinder (see core/unwind.h): each mapped file's call-frame information
 * (.eh_frame of the file, .debug_frame of the file or of its separate debug file) read through
 * elfutils libdw's CFI API, turned into compact rule rows (CFA = rsp/rbp + k, return address and
 * saved rbp at CFA + k) kept in a per-object cache; its DWARF for inline chains; demangling through
 * libiberty. Loaded once per file (by path, checked against the file on disk),
 * indexed lazily: libdw reads a CFI table or a CU only when an address in it is asked for. Objects
 * live as long as the process (an object replaced on disk is kept, inert, for who holds it). */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libiberty/demangle.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym.h"
#include "unwind.h"

#define REG_RBP 6
#define REG_RSP 7

struct wb_dwobj {
  wb_elf *elf;          /* symbols, segments, build id (core/sym_elf.c) */
  char *path, build_id[41];
  int fd, dbg_fd;
  Elf *e, *dbg_e;       /* the file; the separate debug file */
  Dwarf_CFI *eh, *dcfi; /* .eh_frame; .debug_frame */
  Dwarf *dw;            /* DWARF of the file or of its debug file */
  int dw_tried, fp_known, fp;
  char *debug_file;
  wb_unw_row rows[WB_UNW_ROWS];
  struct wb_dwobj *next;
};

static wb_dwobj *objects, *retired; /* retired: replaced on disk, kept for who holds them */

/* ---- loading ---------------------------------------------------------------------------------- */

static int has_section(Elf *e, const char *name) {
  size_t shstrndx;
  if (!e || elf_getshdrstrndx(e, &shstrndx) != 0) return 0;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
    GElf_Shdr sh;
    const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
    if (n && strcmp(n, name) == 0 && sh.sh_type != SHT_NOBITS) return 1;
  }
  return 0;
}

/* The .gnu_debuglink file name of e, or NULL. */
static const char *debuglink(Elf *e) {
  size_t shstrndx;
  if (!e || elf_getshdrstrndx(e, &shstrndx) != 0) return NULL;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
    GElf_Shdr sh;
    const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
    if (!n || strcmp(n, ".gnu_debuglink") != 0) continue;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (d && d->d_size > 1 && memchr(d->d_buf, 0, d->d_size)) return d->d_buf;
  }
  return NULL;
}

static int open_elf(const char *path, int *fd, Elf **e) {
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) return -1;
  *e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
  if (*e && elf_kind(*e) == ELF_K_ELF) return 0;
  if (*e) elf_end(*e);
  close(*fd);
  *fd = -1;
  *e = NULL;
  return -1;
}

/* The separate debug file: /usr/lib/debug/.build-id/xx/rest.debug, else .gnu_debuglink's name next
 * to the file, in its .debug/ directory or under /usr/lib/debug. The link's CRC is not checked. */
static void find_debug_file(wb_dwobj *o) {
  const char *bid = o->build_id;
  char path[4096];
  if (strlen(bid) > 2) {
    snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
    if (open_elf(path, &o->dbg_fd, &o->dbg_e) == 0) goto found;
  }
  const char *link = debuglink(o->e);
  if (!link || o->path[0] != '/') return;
  const char *slash = strrchr(o->path, '/');
  int dirlen = (int)(slash - o->path);
  const char *forms[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, forms[i], dirlen, o->path, link);
    if (strcmp(path, o->path) != 0 && open_elf(path, &o->dbg_fd, &o->dbg_e) == 0) goto found;
  }
  return;
found:
  o->debug_file = strdup(path);
}

static void load_dwarf(wb_dwobj *o) {
  if (o->dw_tried) return;
  o->dw_tried = 1;
  if (o->e && has_section(o->e, ".debug_info")) o->dw = dwarf_begin_elf(o->e, DWARF_C_READ, NULL);
  if (!o->dw && o->e) {
    find_debug_file(o);
    if (o->dbg_e) o->dw = dwarf_begin_elf(o->dbg_e, DWARF_C_READ, NULL);
  }
  if (o->dw) o->dcfi = dwarf_getcfi(o->dw);
  if (!o->dcfi && o->e && has_section(o->e, ".debug_frame")) {
    Dwarf *d = o->dw ? NULL : dwarf_begin_elf(o->e, DWARF_C_READ, NULL);
    if (d) {
      o->dw = d;
      o->dcfi = dwarf_getcfi(d);
    }
  }
}

static Elf *vdso_image(void) {
  unsigned long base = getauxval(AT_SYSINFO_EHDR);
  FILE *f = fopen("/proc/self/maps", "re");
  char line[512];
  size_t size = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base) size = hi - lo;
  }
  if (f) fclose(f);
  return base && size ? elf_memory((char *)base, size) : NULL;
}

wb_dwobj *wb_dwobj_get(const char *path) {
  int vdso = strcmp(path, "[vdso]") == 0;
  wb_elf *elf = vdso ? wb_elf_vdso() : wb_elf_get(path); /* checks the file on disk */
  if (!elf) return NULL;
  for (wb_dwobj **pp = &objects; *pp; pp = &(*pp)->next) {
    if ((*pp)->elf == elf) return *pp;
    if (strcmp((*pp)->path, path) == 0) { /* wb_elf loaded it again: replaced on disk */
      wb_dwobj *old = *pp;
      *pp = old->next;
      old->elf = NULL; /* freed by wb_elf_get; unwinders may still hold old: it stays, inert */
      old->next = retired;
      retired = old;
      break;
    }
  }
  elf_version(EV_CURRENT);
  wb_dwobj *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->elf = elf;
  o->fd = o->dbg_fd = -1;
  if (!(o->path = strdup(path))) {
    free(o);
    return NULL;
  }
  memcpy(o->build_id, elf->build_id, sizeof o->build_id);
  if (vdso) o->e = vdso_image();
  else open_elf(path, &o->fd, &o->e);
  if (o->e) o->eh = dwarf_getcfi_elf(o->e);
  o->next = objects;
  objects = o;
  return o;
}

uint64_t wb_dwobj_vaddr(const wb_dwobj *o, uint64_t offset) { return o->elf ? wb_elf_vaddr(o->elf, offset) : 0; }
const char *wb_dwobj_path(const wb_dwobj *o) { return o->path; }
int wb_dwobj_loaded(const wb_dwobj *o) { return o->e != NULL && o->elf != NULL; }
const char *wb_dwobj_build_id(const wb_dwobj *o) { return o->build_id; }

void wb_dwobj_info(wb_dwobj *o, int *eh_frame, int *debug_frame, int *debug_info, const char **debug_file) {
  load_dwarf(o);
  *eh_frame = o->eh != NULL;
  *debug_frame = o->dcfi != NULL;
  *debug_info = o->dw != NULL;
  *debug_file = o->debug_file;
}

int wb_dwobj_frame_pointers(wb_dwobj *o) {
  if (!o->fp_known && o->elf) {
    o->fp_known = 1;
    wb_elf_check_frame_pointers(o->elf);
    o->fp = o->elf->fp_functions > 0 && o->elf->fp_with * 2 >= o->elf->fp_functions;
  }
  return o->fp;
}

/* ---- rule rows -------------------------------------------------------------------------------- */

/* The offset k of a location "CFA + k" ([DW_OP_call_frame_cfa] or [.., DW_OP_plus_uconst k]); -1
 * for any other form. */
static int cfa_offset(const Dwarf_Op *ops, size_t nops, int32_t *k) {
  if (nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa) return -1;
  *k = nops == 2 && ops[1].atom == DW_OP_plus_uconst ? (int32_t)(int64_t)ops[1].number : 0;
  return nops == 2 && ops[1].atom != DW_OP_plus_uconst ? -1 : 0;
}

/* CFA = rsp or rbp + k: [DW_OP_bregx reg k] (libdw's form of a register rule) or [DW_OP_bregN k]. */
static int cfa_rule(const Dwarf_Op *op, wb_unw_row *r) {
  uint64_t reg = op->atom == DW_OP_bregx ? op->number : (uint64_t)op->atom - DW_OP_breg0;
  int64_t off = (int64_t)(op->atom == DW_OP_bregx ? op->number2 : op->number);
  if ((op->atom != DW_OP_bregx && (op->atom < DW_OP_breg0 || op->atom > DW_OP_breg31)) ||
      (reg != REG_RSP && reg != REG_RBP) || off < INT32_MIN || off > INT32_MAX)
    return -1;
  r->cfa_bp = reg == REG_RBP;
  r->cfa_off = (int32_t)off;
  return 0;
}

static void compute_row(wb_dwobj *o, uint64_t pc, wb_unw_row *r) {
  Dwarf_Frame *fr = NULL;
  r->kind = WB_UNW_NO_CFI;
  if (o->eh && dwarf_cfi_addrframe(o->eh, pc, &fr) == 0) {
    r->from_eh = 1;
  } else {
    fr = NULL;
    load_dwarf(o);
    if (!o->dcfi || dwarf_cfi_addrframe(o->dcfi, pc, &fr) != 0) return;
  }
  Dwarf_Addr start, end;
  bool signal = false;
  int ra = dwarf_frame_info(fr, &start, &end, &signal);
  Dwarf_Op *ops, mem[3];
  size_t nops;
  r->kind = WB_UNW_COMPLEX;
  if (signal) {
    r->kind = WB_UNW_SIGNAL;
  } else if (ra >= 0 && dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops == 1 && cfa_rule(&ops[0], r) == 0) {
    if (dwarf_frame_register(fr, ra, mem, &ops, &nops) == 0) {
      if (nops == 0 && ops == mem) r->kind = WB_UNW_ROW_END; /* undefined: the outermost frame */
      else if (cfa_offset(ops, nops, &r->ra_off) == 0) r->kind = 0;
    }
    if (r->kind == 0) {
      int rc = dwarf_frame_register(fr, REG_RBP, mem, &ops, &nops);
      if (rc == 0 && nops == 0) r->bp_rule = ops == mem ? 2 : 0;
      else if (rc == 0 && cfa_offset(ops, nops, &r->bp_off) == 0) r->bp_rule = 1;
      else r->bp_rule = 2;
    }
  }
  free(fr);
}

const wb_unw_row *wb_dwobj_row(wb_dwobj *o, uint64_t vaddr) {
  wb_unw_row *r = &o->rows[(vaddr * 0x9e3779b97f4a7c15ULL) >> 52 & (WB_UNW_ROWS - 1)];
  if (r->pc1 != vaddr + 1) {
    memset(r, 0, sizeof *r);
    compute_row(o, vaddr, r);
    r->pc1 = vaddr + 1;
  }
  return r;
}

/* ---- inline chains ---------------------------------------------------------------------------- */

static const char *die_name(Dwarf_Die *die) {
  Dwarf_Attribute a;
  const char *n = NULL;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
    n = dwarf_formstring(&a);
  if (!n && dwarf_attr_integrate(die, DW_AT_name, &a)) n = dwarf_formstring(&a);
  return n ? n : "??";
}

int wb_dwobj_inline(wb_dwobj *o, uint64_t vaddr, wb_inline_frame *out, int max) {
  load_dwarf(o);
  Dwarf_Die cu;
  if (!o->dw || max < 1 || !dwarf_addrdie(o->dw, vaddr, &cu)) return 0;
  Dwarf_Die *scopes = NULL;
  int ns = dwarf_getscopes(&cu, vaddr, &scopes);
  /* Past an inlined function, dwarf_getscopes goes on through its abstract definition; the
   * concrete chain (the inlined copies and the function holding them) is that of the DIE itself. */
  int first = 0;
  while (first < ns && dwarf_tag(&scopes[first]) != DW_TAG_inlined_subroutine &&
         dwarf_tag(&scopes[first]) != DW_TAG_subprogram)
    first++;
  if (first >= ns) {
    free(scopes);
    return 0;
  }
  Dwarf_Die inner = scopes[first];
  free(scopes);
  scopes = NULL;
  ns = dwarf_getscopes_die(&inner, &scopes);
  if (ns <= 0) return 0;
  Dwarf_Files *files = NULL;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(&cu, &files, &nfiles) != 0) files = NULL;
  const char *file = NULL;
  int line = 0, n = 0;
  Dwarf_Line *l = dwarf_getsrc_die(&cu, vaddr);
  if (l) {
    file = dwarf_linesrc(l, NULL, NULL);
    dwarf_lineno(l, &line);
  }
  for (int i = 0; i < ns && n < max; i++) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
    out[n++] = (wb_inline_frame){.name = die_name(&scopes[i]), .file = file, .line = line,
                                 .inlined = tag == DW_TAG_inlined_subroutine};
    if (tag == DW_TAG_subprogram) break;
    Dwarf_Attribute a; /* the caller's position: where this one was inlined */
    Dwarf_Word w = 0;
    file = NULL;
    line = 0;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &w) == 0 && files)
      file = dwarf_filesrc(files, w, NULL, NULL);
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &w) == 0) line = (int)w;
  }
  free(scopes);
  if (n > 0) out[n - 1].inlined = 0;
  return n;
}

/* ---- demangling ------------------------------------------------------------------------------- */

char *wb_demangle(const char *name) {
  if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R')) return NULL;
  return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO); /* tries Rust's forms first */
}
