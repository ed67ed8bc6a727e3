/* PLT stubs named as perf, gdb and objdump name them, "func@plt" (x86-64). An entry of .plt,
 * .plt.sec or .plt.got jumps through a GOT slot (jmp *disp32(%rip), after at most an endbr64 and
 * a bnd prefix); the dynamic relocation of that slot (R_X86_64_JUMP_SLOT in .rela.plt,
 * R_X86_64_GLOB_DAT in .rela.dyn) names the function. PLT0 and the lazy .plt entries of an IBT
 * build (push, then a jump to PLT0: code that runs while a lazy binding is resolved) jump through
 * no relocated slot: "[plt]". */
#include <elf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "sym.h"

#define PLT_ENTRY_MAX 64          /* bytes: larger entry sizes are not PLTs this reads */
#define PLT_NAMES_MAX (16u << 20) /* bytes of names, at most (a hostile file may repeat long ones) */
#define PLT_RELOCS_MAX (1u << 20) /* relocations read, at most */

typedef struct slot {
  uint64_t got;
  const char *name; /* in the ELF's string table: valid while the ELF is open */
} slot;

static int by_got(const void *a, const void *b) {
  const slot *x = a, *y = b;
  return (x->got > y->got) - (x->got < y->got);
}

/* Whether scn is .plt, .plt.sec or .plt.got (code); *sh its header. */
static int plt_section(Elf *elf, size_t shstrndx, Elf_Scn *scn, GElf_Shdr *sh) {
  const char *n = gelf_getshdr(scn, sh) && (sh->sh_flags & SHF_EXECINSTR) ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
  return n && (strcmp(n, ".plt") == 0 || strcmp(n, ".plt.sec") == 0 || strcmp(n, ".plt.got") == 0);
}

/* The GOT slots of the JUMP_SLOT and GLOB_DAT relocations of the SHT_RELA sections against the
 * dynamic symbol table, sorted; PLT_RELOCS_MAX relocations at most. */
static size_t read_slots(Elf *elf, slot **out) {
  size_t n = 0, cap = 0, seen = 0;
  slot *s = NULL;
  for (Elf_Scn *scn = NULL; seen < PLT_RELOCS_MAX && (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh, link;
    Elf_Scn *syms = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA && sh.sh_entsize ? elf_getscn(elf, sh.sh_link) : NULL;
    if (!syms || !gelf_getshdr(syms, &link) || link.sh_type != SHT_DYNSYM || !link.sh_entsize) continue;
    Elf_Data *d = elf_getdata(scn, NULL), *sd = d ? elf_getdata(syms, NULL) : NULL;
    if (!sd) continue;
    for (size_t i = 0; i < d->d_size / sh.sh_entsize && seen < PLT_RELOCS_MAX; i++, seen++) {
      GElf_Rela r;
      GElf_Sym sym;
      uint32_t type = 0;
      if (gelf_getrela(d, (int)i, &r)) type = (uint32_t)GELF_R_TYPE(r.r_info);
      if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
          !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
        continue;
      const char *name = elf_strptr(elf, link.sh_link, sym.st_name);
      if (!name || !*name) continue;
      if (n == cap) {
        size_t c = cap ? cap * 2 : 64;
        slot *p = realloc(s, c * sizeof *p);
        if (!p) break;
        s = p, cap = c;
      }
      s[n++] = (slot){r.r_offset, name};
    }
  }
  if (n) qsort(s, n, sizeof *s, by_got);
  *out = s;
  return n;
}

/* The GOT slot an entry at `at` jumps through, or 0 when its code is not a PLT entry's. */
static uint64_t slot_of(const unsigned char *p, size_t len, uint64_t at) {
  static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  size_t i = len >= 4 && memcmp(p, endbr64, 4) == 0 ? 4 : 0;
  if (i < len && p[i] == 0xf2) i++; /* bnd */
  if (i + 6 > len || p[i] != 0xff || p[i + 1] != 0x25) return 0;
  int32_t disp;
  memcpy(&disp, p + i + 2, 4);
  return at + i + 6 + (uint64_t)(int64_t)disp;
}

void wb_elf_load_plt(wb_elf *e, Elf *elf) {
  GElf_Ehdr eh;
  size_t shstrndx;
  if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx) != 0) return;
  slot *slots = NULL;
  size_t nslots = 0, n = 0, cap = 0, bytes = 0;
  int read = 0; /* the relocations, at the first PLT section (a file without one needs none) */
  wb_symbol *syms = NULL;
  const char **names = NULL;
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!plt_section(elf, shstrndx, scn, &sh)) continue;
    if (!read++) nslots = read_slots(elf, &slots);
    uint64_t entry = sh.sh_entsize ? sh.sh_entsize : 16;
    Elf_Data *d = entry >= 6 && entry <= PLT_ENTRY_MAX ? elf_getdata(scn, NULL) : NULL;
    for (uint64_t k = 0; d && d->d_buf && k + entry <= d->d_size; k += entry) {
      slot key = {slot_of((const unsigned char *)d->d_buf + k, entry, sh.sh_addr + k), NULL};
      slot *hit = key.got && nslots ? bsearch(&key, slots, nslots, sizeof *slots, by_got) : NULL;
      if (bytes > PLT_NAMES_MAX) break;
      if (n == cap) {
        size_t c = cap ? cap * 2 : 32;
        wb_symbol *p = realloc(syms, c * sizeof *p);
        const char **q = p ? realloc(names, c * sizeof *q) : NULL;
        if (p) syms = p;
        if (!q) break;
        names = q, cap = c;
      }
      names[n] = hit ? hit->name : NULL;
      syms[n++] = (wb_symbol){.addr = sh.sh_addr + k, .size = entry, .name = (uint32_t)bytes};
      bytes += hit ? strlen(hit->name) + sizeof "@plt" : sizeof "[plt]";
    }
  }
  char *blob = n ? malloc(bytes) : NULL;
  for (size_t i = 0; blob && i < n; i++) {
    size_t len = names[i] ? strlen(names[i]) : 0;
    if (names[i]) memcpy(blob + syms[i].name, names[i], len);
    memcpy(blob + syms[i].name + len, names[i] ? "@plt" : "[plt]", names[i] ? sizeof "@plt" : sizeof "[plt]");
  }
  if (blob) {
    qsort(syms, n, sizeof *syms, wb_symbol_order);
    e->plt = syms, e->nplt = n, e->plt_names = blob;
  } else {
    free(syms);
  }
  free(names);
  free(slots);
}

const char *wb_elf_lookup_plt(const wb_elf *e, uint64_t vaddr, uint64_t *off) {
  size_t at = e->nplt ? wb_symbols_at_or_below(e->plt, e->nplt, vaddr) : 0;
  if (!at || vaddr >= e->plt[at - 1].addr + e->plt[at - 1].size) return NULL;
  *off = vaddr - e->plt[at - 1].addr;
  return e->plt_names + e->plt[at - 1].name;
}
