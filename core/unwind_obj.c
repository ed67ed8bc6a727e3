/* The objects of the unwinder (see core/unwind.h): each mapped file's call-frame information
 * (.eh_frame of the file, .debug_frame of the file or of its separate debug file) read through
 * elfutils libdw's CFI API, turned into compact rule rows (CFA = rsp/rbp + k, return address and
 * saved rbp at CFA + k) kept in a per-object cache; its DWARF for inline chains; demangling through
 * libiberty. Loaded once per file (by path, checked against the file on disk),
 * indexed lazily: libdw reads a CFI table or a CU only when an address in it is asked for. Objects
 * live as long as the process (an object replaced on disk is kept, inert, for who holds it).
 * Threads: one thread uses the objects, except that the DWARF of an object (its debug sections,
 * often compressed: tens of milliseconds for libc's) may be read ahead on a worker thread
 * (wb_dwobj_prefetch) through ELF handles of its own, under the object's dw_lock. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libiberty/demangle.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_guard.h"
#include "sym.h"
#include "ticker.h"
#include "unwind.h"

#define DWREG_RBP 6
#define DWREG_RSP 7

struct wb_dwobj {
  wb_elf *elf;          /* symbols, segments, build id (core/sym_elf.c) */
  char *path, build_id[41];
  int fd, dbg_fd;
  Elf *e, *dbg_e;       /* the file (CFI, the using thread's); the separate debug file */
  Dwarf_CFI *eh, *dcfi; /* .eh_frame; .debug_frame */
  Dwarf *dw;            /* DWARF of the file or of its debug file */
  int fp_known, fp;
  pthread_mutex_t dw_lock; /* held while the DWARF is read: dw_tried, dw_fd, dw_e, dbg_*, dw, dcfi */
  int dw_tried, dw_fd, queued;
  int inflated_fd;         /* the uncompressed copy of the DWARF, when it was compressed */
  Elf *inflated_e;
  Elf *dw_e;               /* the file again, for its DWARF: never the same handle as e */
  char *debug_file;
  dev_t debug_dev;         /* the file read as debug_file */
  ino_t debug_ino;
  struct wb_dwobj *queue_next; /* the prefetch queue */
  struct cu_index **cus; /* the CUs indexed so far, by offset (inline chains) */
  size_t ncus;
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
  *fd = wb_open_foreign(path); /* a debug link another user planted may name a FIFO */
  if (*fd < 0) return *fd = -1;
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
  const char *link = debuglink(o->dw_e);
  if (!link || o->path[0] != '/') return;
  const char *slash = strrchr(o->path, '/');
  int dirlen = (int)(slash - o->path);
  const char *forms[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, forms[i], dirlen, o->path, link);
    if (strcmp(path, o->path) != 0 && open_elf(path, &o->dbg_fd, &o->dbg_e) == 0) goto found;
  }
  return;
found:;
  struct stat st;
  if (fstat(o->dbg_fd, &st) == 0) o->debug_dev = st.st_dev, o->debug_ino = st.st_ino;
  o->debug_file = strdup(path);
}

/* e (of the file fd), or the uncompressed copy of its DWARF (wb_dwarf_inflated), kept with o: one per object, for
 * the first file whose DWARF is read (a second one, should the first fail, is read as it is);
 * NULL when its compressed sections would inflate past the caps (wb_dwarf_over_cap). */
static Elf *uncompressed(wb_dwobj *o, Elf *e, int fd) {
  if (wb_dwarf_over_cap(e)) return NULL;
  if (o->inflated_e) return e;
  Elf *c = wb_dwarf_inflated(e, fd, o->build_id, o->path, &o->inflated_fd);
  if (!c) return e;
  o->inflated_e = c;
  return c;
}

/* Reads the DWARF of o (once; under dw_lock), through an ELF handle of its own on the file o
 * opened (a descriptor duplicated from o->fd: the same inode, even if the path was replaced). */
static void read_dwarf(wb_dwobj *o) {
  if (o->fd < 0 || (o->dw_fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0)) < 0) return; /* [vdso]: none */
  o->dw_e = elf_begin(o->dw_fd, ELF_C_READ_MMAP, NULL);
  if (!o->dw_e || elf_kind(o->dw_e) != ELF_K_ELF) {
    if (o->dw_e) elf_end(o->dw_e);
    close(o->dw_fd);
    o->dw_fd = -1, o->dw_e = NULL;
    return;
  }
  Elf *de = has_section(o->dw_e, ".debug_info") ? uncompressed(o, o->dw_e, o->dw_fd) : NULL;
  if (de) o->dw = dwarf_begin_elf(de, DWARF_C_READ, NULL);
  if (!o->dw) {
    find_debug_file(o);
    de = o->dbg_e ? uncompressed(o, o->dbg_e, o->dbg_fd) : NULL;
    if (de) o->dw = dwarf_begin_elf(de, DWARF_C_READ, NULL);
  }
  if (o->dw) o->dcfi = dwarf_getcfi(o->dw);
  Dwarf_Aranges *ar;
  size_t nar;
  if (o->dw) (void)dwarf_getaranges(o->dw, &ar, &nar); /* the address -> CU index the first lookup needs */
  if (!o->dcfi && has_section(o->dw_e, ".debug_frame") && !wb_dwarf_over_cap(o->dw_e)) {
    Dwarf *d = o->dw ? NULL : dwarf_begin_elf(o->dw_e, DWARF_C_READ, NULL);
    if (d) {
      o->dw = d;
      o->dcfi = dwarf_getcfi(d);
    }
  }
}

/* ---- reading ahead ---------------------------------------------------------------------------- */

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  wb_dwobj *head, *tail;
  int started;     /* 1 running, -1 could not start */
  _Atomic int tid; /* the read-ahead thread, hurried by whoever waits on its dw_lock */
} ahead = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0};

/* Reads o's DWARF once. A caller finding dw_lock held (by the read-ahead thread, at nice 19)
 * hurries that thread before it waits: the capture's drain calls this for code without .eh_frame. */
static void load_dwarf(wb_dwobj *o) {
  if (pthread_mutex_trylock(&o->dw_lock) != 0) {
    wb_thread_hurry(&ahead.tid);
    pthread_mutex_lock(&o->dw_lock);
  }
  if (!o->dw_tried) {
    o->dw_tried = 1;
    read_dwarf(o);
  }
  pthread_mutex_unlock(&o->dw_lock);
}

static void *ahead_main(void *arg) {
  (void)arg;
  for (;;) {
    wb_thread_background(&ahead.tid); /* again after each object: it may have been hurried */
    pthread_mutex_lock(&ahead.lock);
    while (!ahead.head) pthread_cond_wait(&ahead.wake, &ahead.lock);
    wb_dwobj *o = ahead.head;
    ahead.head = o->queue_next;
    if (!ahead.head) ahead.tail = NULL;
    pthread_mutex_unlock(&ahead.lock);
    load_dwarf(o);
  }
  return NULL;
}

void wb_dwobj_prefetch(wb_dwobj *o) {
  pthread_mutex_lock(&ahead.lock);
  if (!ahead.started) ahead.started = wb_thread_start(NULL, ahead_main, NULL) == 0 ? 1 : -1;
  if (ahead.started == 1 && !o->queued) {
    o->queued = 1;
    if (ahead.tail) ahead.tail->queue_next = o;
    else ahead.head = o;
    ahead.tail = o;
    pthread_cond_signal(&ahead.wake);
  }
  pthread_mutex_unlock(&ahead.lock);
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
      old->elf = NULL; /* retired by wb_elf_get; unwinders may still hold old: it stays, inert */
      old->next = retired;
      retired = old;
      break;
    }
  }
  elf_version(EV_CURRENT);
  wb_dwobj *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->elf = elf;
  o->fd = o->dbg_fd = o->dw_fd = o->inflated_fd = -1;
  pthread_mutex_init(&o->dw_lock, NULL);
  if (!(o->path = strdup(path))) {
    free(o);
    return NULL;
  }
  memcpy(o->build_id, elf->build_id, sizeof o->build_id);
  struct stat st;
  if (vdso) o->e = vdso_image();
  else if (open_elf(path, &o->fd, &o->e) == 0 &&
           (fstat(o->fd, &st) != 0 || st.st_dev != elf->dev || st.st_ino != elf->ino)) {
    elf_end(o->e); /* not the file wb_elf_get read (replaced since): nothing of it is used */
    close(o->fd);
    o->e = NULL, o->fd = -1;
  }
  if (o->e) o->eh = dwarf_getcfi_elf(o->e);
  o->next = objects;
  objects = o;
  return o;
}

uint64_t wb_dwobj_vaddr(const wb_dwobj *o, uint64_t offset) { return o->elf ? wb_elf_vaddr(o->elf, offset) : 0; }
const char *wb_dwobj_path(const wb_dwobj *o) { return o->path; }
int wb_dwobj_loaded(const wb_dwobj *o) { return o->e != NULL && o->elf != NULL; }
const char *wb_dwobj_build_id(const wb_dwobj *o) { return o->build_id; }

const char *wb_dwobj_debug_source(wb_dwobj *o, dev_t *dev, ino_t *ino) {
  load_dwarf(o);
  *dev = o->debug_dev, *ino = o->debug_ino;
  return o->debug_file;
}

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
      (reg != DWREG_RSP && reg != DWREG_RBP) || off < INT32_MIN || off > INT32_MAX)
    return -1;
  r->cfa_bp = reg == DWREG_RBP;
  r->cfa_off = (int32_t)off;
  return 0;
}

/* The one CFA expression linkers write for lazy PLT entries (binutils' x86-64 .plt: CFA = rsp + k,
 * + 8 once the entry has pushed its index, at (rip & 15) >= t), recognized whole, not evaluated:
 * [breg7 k, breg16 0, lit15, and, lit<t>, ge, lit3, shl, plus]. */
static int plt_rule(const Dwarf_Op *op, size_t n, uint64_t pc, wb_unw_row *r) {
  if (n != 9 || op[0].atom != DW_OP_breg7 || op[1].atom != DW_OP_breg16 || op[1].number != 0 ||
      op[2].atom != DW_OP_lit15 || op[3].atom != DW_OP_and || op[4].atom < DW_OP_lit0 || op[4].atom > DW_OP_lit15 ||
      op[5].atom != DW_OP_ge || op[6].atom != DW_OP_lit3 || op[7].atom != DW_OP_shl || op[8].atom != DW_OP_plus ||
      (int64_t)op[0].number < 0 || op[0].number > 64)
    return -1;
  r->cfa_bp = 0;
  r->cfa_off = (int32_t)op[0].number + ((pc & 15) >= (uint64_t)(op[4].atom - DW_OP_lit0) ? 8 : 0);
  return 0;
}

/* The first bytes at an object's ELF entry point, where code without CFI is the outermost frame:
 * ld.so's _start (mov %rsp, %rdi; call _dl_start) has no FDE, and nothing calls it. */
#define ENTRY_STUB 16

static void compute_row(wb_dwobj *o, uint64_t pc, wb_unw_row *r) {
  Dwarf_Frame *fr = NULL;
  r->kind = WB_UNW_NO_CFI;
  if (o->eh && dwarf_cfi_addrframe(o->eh, pc, &fr) == 0) {
    r->from_eh = 1;
  } else {
    fr = NULL;
    load_dwarf(o);
    if (!o->dcfi || dwarf_cfi_addrframe(o->dcfi, pc, &fr) != 0) {
      if (o->elf && o->elf->entry && pc >= o->elf->entry && pc < o->elf->entry + ENTRY_STUB)
        r->kind = WB_UNW_ROW_END;
      return;
    }
  }
  Dwarf_Addr start, end;
  bool signal = false;
  int ra = dwarf_frame_info(fr, &start, &end, &signal);
  Dwarf_Op *ops, mem[3];
  size_t nops;
  r->kind = WB_UNW_COMPLEX;
  if (signal) {
    r->kind = WB_UNW_SIGNAL;
  } else if (ra >= 0 && dwarf_frame_cfa(fr, &ops, &nops) == 0 &&
             ((nops == 1 && cfa_rule(&ops[0], r) == 0) || plt_rule(ops, nops, pc, r) == 0)) {
    if (dwarf_frame_register(fr, ra, mem, &ops, &nops) == 0) {
      if (nops == 0 && ops == mem) r->kind = WB_UNW_ROW_END; /* undefined: the outermost frame */
      else if (cfa_offset(ops, nops, &r->ra_off) == 0) r->kind = 0;
    }
    if (r->kind == 0) {
      int rc = dwarf_frame_register(fr, DWREG_RBP, mem, &ops, &nops);
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

/* The index of one CU: the address ranges of its concrete functions (subprograms at its top
 * level or in namespaces and types), sorted, built at the first lookup in the CU. */
typedef struct fn_range {
  uint64_t lo, hi;
  Dwarf_Off die;
} fn_range;

typedef struct cu_index {
  Dwarf_Off cu;
  fn_range *r;
  size_t n, cap;
} cu_index;

static int by_lo(const void *a, const void *b) {
  const fn_range *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

static void index_scope(cu_index *ci, Dwarf_Die *parent) {
  Dwarf_Die d;
  if (dwarf_child(parent, &d) != 0) return;
  do {
    int tag = dwarf_tag(&d);
    if (tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
        tag == DW_TAG_union_type || tag == DW_TAG_module) {
      index_scope(ci, &d);
    } else if (tag == DW_TAG_subprogram) {
      Dwarf_Addr base, lo, hi;
      for (ptrdiff_t off = 0; (off = dwarf_ranges(&d, off, &base, &lo, &hi)) > 0;) {
        if (ci->n == ci->cap) {
          size_t cap = ci->cap ? ci->cap * 2 : 64;
          fn_range *p = realloc(ci->r, cap * sizeof *p);
          if (!p) return;
          ci->r = p;
          ci->cap = cap;
        }
        ci->r[ci->n++] = (fn_range){lo, hi, dwarf_dieoffset(&d)};
      }
    }
  } while (dwarf_siblingof(&d, &d) == 0);
}

static cu_index *index_of(wb_dwobj *o, Dwarf_Die *cu) {
  Dwarf_Off off = dwarf_dieoffset(cu);
  size_t lo = 0, hi = o->ncus;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (o->cus[mid]->cu < off) lo = mid + 1;
    else hi = mid;
  }
  if (lo < o->ncus && o->cus[lo]->cu == off) return o->cus[lo];
  cu_index **p = realloc(o->cus, (o->ncus + 1) * sizeof *p), *ci = calloc(1, sizeof *ci);
  if (p) o->cus = p;
  if (!p || !ci) {
    free(ci);
    return NULL;
  }
  ci->cu = off;
  index_scope(ci, cu);
  if (ci->n > 1) qsort(ci->r, ci->n, sizeof *ci->r, by_lo); /* r is NULL in a CU without functions */
  memmove(o->cus + lo + 1, o->cus + lo, (o->ncus - lo) * sizeof *o->cus);
  o->cus[lo] = ci;
  o->ncus++;
  return ci;
}

/* The concrete function of the CU holding pc. */
static int function_at(wb_dwobj *o, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *fn) {
  cu_index *ci = index_of(o, cu);
  if (!ci) return 0;
  size_t lo = 0, hi = ci->n; /* the last range starting at or below pc */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ci->r[mid].lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i-- > 0 && lo - i <= 8;) /* nested or overlapping ranges: the nearest few */
    if (pc >= ci->r[i].lo && pc < ci->r[i].hi) return dwarf_offdie(o->dw, ci->r[i].die, fn) != NULL;
  return 0;
}

/* Appends to chain[*n..max) the inlined subroutines holding pc below parent, outermost first,
 * through lexical blocks; returns whether pc was found in a child scope. */
static int inlined_at(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *chain, int *n, int max) {
  Dwarf_Die d;
  if (dwarf_child(parent, &d) != 0) return 0;
  do {
    int tag = dwarf_tag(&d);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block) continue;
    int has = dwarf_haspc(&d, pc);
    Dwarf_Addr lo;
    if (has == 1 && tag == DW_TAG_inlined_subroutine) {
      if (*n < max) chain[(*n)++] = d;
      inlined_at(&d, pc, chain, n, max);
      return 1;
    }
    /* a block holding pc, or one without addresses of its own (its children have them) */
    if ((has == 1 || (dwarf_lowpc(&d, &lo) != 0 && !dwarf_hasattr(&d, DW_AT_ranges))) &&
        inlined_at(&d, pc, chain, n, max))
      return 1;
    if (has == 1) return 0;
  } while (dwarf_siblingof(&d, &d) == 0);
  return 0;
}

int wb_dwobj_inline(wb_dwobj *o, uint64_t vaddr, wb_inline_frame *out, int max) {
  load_dwarf(o);
  Dwarf_Die cu, chain[64];
  if (!o->dw || max < 1 || !dwarf_addrdie(o->dw, vaddr, &cu) || !function_at(o, &cu, vaddr, &chain[0])) return 0;
  int depth = 1;
  inlined_at(&chain[0], vaddr, chain, &depth, 64);
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
  for (int i = depth - 1; i >= 0 && n < max; i--) { /* innermost first */
    out[n++] = (wb_inline_frame){.name = die_name(&chain[i]), .file = file, .line = line, .inlined = i > 0};
    Dwarf_Attribute a; /* the caller's position: where this one was inlined */
    Dwarf_Word w = 0;
    file = NULL;
    line = 0;
    if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &a), &w) == 0 && files)
      file = dwarf_filesrc(files, w, NULL, NULL);
    if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &a), &w) == 0) line = (int)w;
  }
  if (n > 0) out[n - 1].inlined = 0;
  return n;
}

/* ---- demangling ------------------------------------------------------------------------------- */

char *wb_demangle(const char *name) {
  if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R')) return NULL;
  return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO); /* tries Rust's forms first */
}
