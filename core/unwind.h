/* Unwinding without frame pointers (core/unwind.c: the walk and wb.unwind; core/unwind_obj.c: the
 * objects, their call-frame information, inline chains and demangling, through elfutils libdw). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lua_State;

/* ---- objects (core/unwind_obj.c) ------------------------------------------------------------------ */

/* How one frame was unwound, and why a walk stopped. */
enum wb_unw_stop {
  WB_UNW_COMPLETE,  /* the return address is undefined (_start, clone3) or 0: the stack's end */
  WB_UNW_NO_MAP,    /* the pc is in no mapping of a file: JIT, anonymous code, gone */
  WB_UNW_NO_CFI,    /* the object has no rule for the pc and no frame pointer to follow */
  WB_UNW_COMPLEX,   /* a rule that is not CFA = sp/bp + k with the return address at CFA + k */
  WB_UNW_SIGNAL,    /* as a row: a signal trampoline (the kernel's rt_sigframe is at sp), stepped
                       through; never a stop */
  WB_UNW_OFF_STACK, /* the next value lies outside the stack copy */
  WB_UNW_BAD,       /* the stack pointer did not grow, or the pc is 0 before the end */
  WB_UNW_DEPTH,     /* the frame limit */
  WB_UNW_NO_STACK,  /* the sample came with no stack copy (an exiting or exec'ing process, whose memory
                       is going, or a page at sp the kernel could not read without a fault) */
  WB_UNW_NREASONS
};

/* A rule row: where the caller's registers are at one pc (x86-64). */
typedef struct wb_unw_row {
  uint64_t pc1;      /* pc + 1 of the cache entry (0: free) */
  uint8_t kind;      /* 0 usable, WB_UNW_ROW_END (the return address is undefined: the outermost
                        frame), else an enum wb_unw_stop (NO_CFI, COMPLEX, SIGNAL) */
  uint8_t cfa_bp;    /* CFA = (cfa_bp ? rbp : rsp) + cfa_off */
  uint8_t bp_rule;   /* 0 same value, 1 saved at CFA + bp_off, 2 undefined */
  uint8_t from_eh;   /* the row came from .eh_frame (else .debug_frame) */
  int32_t cfa_off, ra_off, bp_off;
} wb_unw_row;

#define WB_UNW_ROW_END 0xff
#define WB_UNW_ROWS 4096 /* direct-mapped row cache per object */
#define WB_UNW_MAX_FRAMES 1024 /* the most frames one walk gives (wb.unwind, wb.bpf's unwind mode) */

typedef struct wb_dwobj wb_dwobj;

/* The object at path (ELF, its CFI and, lazily, its DWARF from the file or the separate debug file
 * found by build id or .gnu_debuglink), loaded once for the life of the process and shared; a file
 * replaced on disk is loaded again. "[vdso]" is this process's vDSO (the same image as any other
 * process's). NULL only when out of memory. */
wb_dwobj *wb_dwobj_get(const char *path);

/* The ELF virtual address of a file offset in the object; 0 when no PT_LOAD segment holds it. */
uint64_t wb_dwobj_vaddr(const wb_dwobj *o, uint64_t offset);

/* The rule row for virtual address vaddr (cached). */
const wb_unw_row *wb_dwobj_row(wb_dwobj *o, uint64_t vaddr);

/* Whether the object's file could be read as ELF (else its code is an unknown region). */
int wb_dwobj_loaded(const wb_dwobj *o);
/* An uncompressed copy of e's DWARF when e's .debug_* sections are compressed (SHF_COMPRESSED, as
 * Debian's debug files are), opened read-only with its descriptor in *fd; NULL (and *fd = -1) when
 * they are not, or no copy can be made or trusted. src_fd is e's file. The copy is made once per
 * build id and contents in wb_cache_dir()/debug/BUILD_ID-HASH.debug (HASH: wb_content_hash of the
 * file's bytes; mode 0600, this user's, its access time the last use), so that libdw maps it
 * instead of inflating every section at each run (core/unwind_inflate.c). What is hashed is what
 * is inflated: a file another user may change is read into memory first (256 MiB at most, else no
 * copy). A copy of the same build id made from other contents is never used for e; finding one
 * queues a warning naming label (wb_dwarf_cache_warning). The copies are kept within
 * wb_cache_limits(): trimmed at the first call of a process and after each copy made; a copy
 * larger than the limit is not kept. The Elf type is libelf's. */
struct Elf;
struct Elf *wb_dwarf_inflated(struct Elf *e, int src_fd, const char *build_id, const char *label, int *fd);

/* The next warning wb_dwarf_inflated queued (each is given once), or NULL. Thread-safe. */
const char *wb_dwarf_cache_warning(void);

/* Caps on what compressed debug data may inflate to (docs/capture.md, "Bounds"): a section at
 * most WB_INFLATE_RATIO_MAX times its compressed size (+1 MiB), a file's sections together at most
 * WB_INFLATE_TOTAL_MAX. wb_dwarf_over_cap: 1 when e's compressed sections (SHF_COMPRESSED or the
 * GNU .zdebug_* form) say they exceed them, or a header cannot be read (their DWARF is then not
 * read: a decompression bomb costs nothing), else 0. */
#define WB_INFLATE_RATIO_MAX 100
#define WB_INFLATE_TOTAL_MAX ((uint64_t)4 << 30)
int wb_dwarf_over_cap(struct Elf *e);

/* Queues o's DWARF (debug info, .debug_frame, the separate debug file) to be read on a worker
 * thread, ahead of the symbolization that will need it; the first use waits for it if it is being
 * read. Without a worker (none could start) nothing changes. */
void wb_dwobj_prefetch(wb_dwobj *o);

/* Whether most of the object's functions set up %rbp (core/sym_elf.c's check). */
int wb_dwobj_frame_pointers(wb_dwobj *o);

/* The path, build id (hex or ""), whether .eh_frame/.debug_frame/.debug_info were found, and the
 * separate debug file (or NULL). */
const char *wb_dwobj_path(const wb_dwobj *o);
const char *wb_dwobj_build_id(const wb_dwobj *o);
void wb_dwobj_info(wb_dwobj *o, int *eh_frame, int *debug_frame, int *debug_info, const char **debug_file);

/* The separate debug file the object's DWARF comes from (read first, when it was not), with the
 * file read there in *dev, *ino; NULL when its DWARF is its own, or it has none. */
const char *wb_dwobj_debug_source(wb_dwobj *o, dev_t *dev, ino_t *ino);

/* One frame of an inline chain. Strings live as long as the object. */
typedef struct wb_inline_frame {
  const char *name;    /* the DWARF name (linkage name when there is one), never NULL */
  const char *file;    /* the source file of the frame's line, or NULL */
  int line;            /* 0 when unknown */
  int inlined;         /* 1 for an inlined frame, 0 for the function holding it (the last one) */
} wb_inline_frame;

/* The inline chain at vaddr, innermost first, into out[0..max): the inlined functions, then the
 * function that holds them, each with the file:line it is at (addr2line -i -f). Returns the count,
 * 0 without DWARF for the address. */
int wb_dwobj_inline(wb_dwobj *o, uint64_t vaddr, wb_inline_frame *out, int max);

/* The demangled form of a C++ or Rust symbol, malloc'ed, or NULL when it is not mangled. */
char *wb_demangle(const char *name);

/* ---- the walk (core/unwind.c) ---------------------------------------------------------------- */

typedef struct wb_unwinder wb_unwinder;

wb_unwinder *wb_unwinder_new(void);
void wb_unwinder_free(wb_unwinder *u);

/* The mappings of a process: one executable mapping (a perf mmap record, with its build id in hex
 * or NULL: an object on disk with another build id is not used), a fork (the child
 * starts with the parent's), an exec (forgotten), or a /proc/PID/maps snapshot (returns the count
 * of mappings, -1 with errno). */
int wb_unwinder_add_map(wb_unwinder *u, int pid, uint64_t start, uint64_t len, uint64_t pgoff, const char *path,
                        const char *build_id);
void wb_unwinder_fork(wb_unwinder *u, int child, int parent);
void wb_unwinder_exec(wb_unwinder *u, int pid);
int wb_unwinder_snapshot(wb_unwinder *u, int pid);

/* A fork (parent > 0: the child starts with the parent's mappings) or an exec (parent 0: the
 * mappings are taken anew at the process's next record) seen in order with the process's samples,
 * while its mappings are /proc snapshots; mappings that came from perf records are kept (those
 * records hold the whole history). */
void wb_unwinder_image(wb_unwinder *u, int pid, int parent);

/* 1 when pid's mappings are its parent's, copied at a fork record, and a snapshot of its own found
 * none (it exited, or is exiting): its records are to wait for its own mappings, from perf records
 * (it may have mapped code after the fork); the inherited ones stay for a record that cannot. */
int wb_unwinder_inherited_gone(wb_unwinder *u, int pid);

/* The exit of process pid (its last thread) seen in order with its samples, while its mappings
 * are /proc snapshots: they are freed, and none is taken again (the pid may be reused: a record
 * that still comes waits for perf records). */
void wb_unwinder_exit(wb_unwinder *u, int pid);

/* Takes a walk that stopped for `stop` out of the statistics (its record is walked again later). */
void wb_unwinder_discount(wb_unwinder *u, int stop);

/* How many mappings pid has, after a /proc/PID/maps snapshot if it had none yet: 0 when it
 * exited before any were known, or when its records are to wait (wb_unwinder_inherited_gone). */
int wb_unwinder_mapped(wb_unwinder *u, int pid);

/* Starts a new epoch (a drain): a process whose mappings are a snapshot gets a fresh one, once per
 * epoch, when a pc is in none of them (code mapped since, as by dlopen). */
void wb_unwinder_next_epoch(wb_unwinder *u);

/* Walks the user stack of pid from registers ip, sp, bp over stack[0..len), a copy of the memory
 * at sp. Writes the pcs (the sampled ip, then return addresses) into out[0..max); returns the
 * count and sets *stop to why the walk ended (WB_UNW_COMPLETE when it reached the stack's end).
 * Counts each frame's method per object (see wb_unwinder_stats). When pid has no mappings yet, a
 * /proc/PID/maps snapshot is taken. */
int wb_unwinder_walk(wb_unwinder *u, int pid, uint64_t ip, uint64_t sp, uint64_t bp, const uint8_t *stack,
                     size_t len, uint64_t *out, int max, int *stop);

/* Per-object counts of the frames unwound with CFI, with frame pointers, and of the walks that
 * stopped in the object; totals of walks by reason. */
typedef struct wb_unw_objstat {
  wb_dwobj *obj;
  uint64_t cfi, fp, stopped;
  uint64_t stops[WB_UNW_NREASONS]; /* the walks that stopped there, by reason */
} wb_unw_objstat;

/* What a sampler appends to the pcs of a walk that stopped before the stack's end (and before
 * its max), so that aggregation and the folded output keep it apart as truncated: no user pc is
 * all ones. */
#define WB_UNW_TRUNCATED_PC UINT64_MAX
/* The only pc of an off-CPU interval whose stack was not recorded (its switch-out record lost):
 * its time is kept, apart, under the process. */
#define WB_UNW_LOST_PC (UINT64_MAX - 1)

const wb_unw_objstat *wb_unwinder_objects(const wb_unwinder *u, size_t *n);
const uint64_t *wb_unwinder_reasons(const wb_unwinder *u); /* [WB_UNW_NREASONS] walks */
uint64_t wb_unwinder_ns(const wb_unwinder *u);              /* time spent walking */

extern const char *const wb_unw_stop_names[WB_UNW_NREASONS];

/* Pushes {walks, truncated, reasons, seconds, objects} (wb.unwind's u:stats()). */
void wb_unwind_push_stats(struct lua_State *L, const wb_unwinder *u);
