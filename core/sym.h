/* Symbol tables for wb.sym (core/sym.c): ELF files (core/sym_elf.c), loaded once per file for the
 * life of the process and shared by every symbolizer, and the kernel's /proc/kallsyms. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct wb_symbol {
  uint64_t addr, size;
  uint32_t name; /* offset into the file's names */
  uint8_t rank;  /* 0 global, 1 weak, 2 local, 3 code label: the preferred name at an address ranks lowest */
} wb_symbol;

typedef struct wb_load { /* a PT_LOAD segment */
  uint64_t offset, filesz, vaddr;
} wb_load;

typedef struct wb_elf {
  char *path;
  dev_t dev; /* of the file read (fstat of the descriptor), else of the path */
  ino_t ino;
  off_t size;
  int64_t mtime_ns;
  char build_id[41]; /* hex, "" when the file has none */
  char err[160];     /* why the file gave no symbols, "" when it did */
  int unreadable;    /* it could not be opened or was not a regular ELF file: err says why */
  int replaced;      /* a newer wb_elf_get found another file at path: no symbols are kept */
  int symtab;        /* symbols come from a .symtab (not only .dynsym) */
  char *debug_file;  /* the separate debug file (by build id) the symbols came from, or NULL */
  dev_t debug_dev;   /* ... and the file read there */
  ino_t debug_ino;
  int minidebug;     /* .symtab from the file's .gnu_debugdata (MiniDebugInfo), with .dynsym */
  uint64_t entry;    /* the ELF header's entry point (a virtual address), 0 for none */
  wb_load *loads;
  int nloads;
  wb_symbol *syms;
  size_t nsyms;
  char *names;
  wb_symbol *plt; /* the PLT stubs, "func@plt" (core/sym_plt.c) */
  size_t nplt;
  char *plt_names;
  int fp_checked, fp_functions, fp_with; /* frame-pointer prologues among checked functions */
  struct wb_elf *next;
} wb_elf;

/* The cached symbol table of the file at path (opened, parsed and sorted on first use); never
 * NULL except when out of memory. A file that cannot be read has nsyms == 0 and err set. A file
 * replaced on disk (other inode, size or mtime) is loaded again; the old wb_elf keeps its
 * segments, build id and entry, loses its symbols and is never freed: a pointer to one is the
 * identity of one file for the life of the process. */
wb_elf *wb_elf_get(const char *path);

/* The vDSO of this process, which is the same image as any other process's on this kernel. */
wb_elf *wb_elf_vdso(void);

/* The ELF virtual address of a file offset, via the PT_LOAD segments; 0 when none holds it. */
uint64_t wb_elf_vaddr(const wb_elf *e, uint64_t offset);

/* The function containing vaddr, or NULL; *off receives vaddr minus its start. */
const char *wb_elf_lookup(const wb_elf *e, uint64_t vaddr, uint64_t *off);

/* Counts the functions of a file with a .symtab whose first instructions set up a frame pointer
 * (mov %rsp,%rbp within the first 64 bytes: compilers schedule other instructions into the
 * prologue or shrink-wrap it after an early exit); fills fp_functions and fp_with. */
void wb_elf_check_frame_pointers(wb_elf *e);

/* Lower-case hex of p[0..n) into out, NUL-terminated, as much as outlen (>= 1) holds: a build
 * id as tools print it. */
void wb_hex(const unsigned char *p, size_t n, char *out, size_t outlen);

/* The GNU build id of an ELF handle (its NT_GNU_BUILD_ID note) as lower-case hex into out, "" when
 * it has none. The Elf type is libelf's (an incomplete type here). */
struct Elf;
void wb_elf_build_id(struct Elf *elf, char *out, size_t outlen);

/* qsort order of symbols: by address, then the preferred name (rank), then the larger. */
int wb_symbol_order(const void *a, const void *b);

/* How many of the n symbols (in wb_symbol_order) start at or below addr. */
size_t wb_symbols_at_or_below(const wb_symbol *syms, size_t n, uint64_t addr);

/* e's PLT stubs from the ELF it was read from; the name of the stub holding vaddr, or NULL. */
struct Elf;
void wb_elf_load_plt(wb_elf *e, struct Elf *elf);
const char *wb_elf_lookup_plt(const wb_elf *e, uint64_t vaddr, uint64_t *off);

/* The kernel symbol containing addr, or NULL when unknown (including when kallsyms shows zero
 * addresses to an unprivileged reader); *off as above (core/sym_kallsyms.c). The kernel image's
 * own text symbols are read once per boot from /proc/kallsyms and kept in a cache file
 * ($XDG_CACHE_HOME, else ~/.cache, /wb/kallsyms-BOOT_ID, mode 0600): they cannot change until
 * the next boot. Addresses outside the image (modules, BPF programs, trampolines, which come and
 * go) are looked up in /proc/kallsyms as it is now, read the first time one is asked for. */
const char *wb_kallsyms_lookup(uint64_t addr, uint64_t *off);

/* Loads the kernel image's symbols now (once: from the cache, else /proc/kallsyms); returns the
 * number of kernel functions known, 0 when kallsyms shows zero addresses. */
size_t wb_kallsyms_load(void);

/* Starts reading /proc/kallsyms on a thread of its own (it costs tens of milliseconds of kernel
 * time), so that a later lookup finds it read; the lookup waits for the thread if it has not
 * finished; one thread per process, however often it is called. 0, or -1 when no thread could be
 * started (the lookup then reads it itself). */
int wb_kallsyms_prefetch(void);

/* Calls fn(arg, start, end, file offset, name) for each executable mapping with a name in
 * /proc/PID/maps (core/sym_perfmap.c); returns how many fn accepted (returned 0), or -1 with errno (ESRCH
 * when there were none: a zombie or a kernel thread; and, before fn is called at all, when the process
 * had begun to exit by the end of the read, which may then hold only a part of its mappings). */
int wb_maps_each(int pid, int (*fn)(void *arg, uint64_t lo, uint64_t hi, uint64_t off, const char *path),
                 void *arg);

/* perf's JIT maps, /tmp/perf-PID.map (core/sym_perfmap.c). */
typedef struct wb_perfmap wb_perfmap;
wb_perfmap *wb_perfmap_load(int pid, wb_perfmap *old, const uint32_t *uids, size_t nuids);
const char *wb_perfmap_lookup(const wb_perfmap *m, uint64_t addr, uint64_t *off);
void wb_perfmap_free(wb_perfmap *m);
