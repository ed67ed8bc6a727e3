/* The user-space side of wb.bpf's unwind mode (core/bpf_ustack.c): the records of the ring buffer
 * (core/bpf/profile.h) walked with core/unwind.c and aggregated by stack. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "python.h"
#include "unwind.h"

/* A Python item of an entry: a label id (wb_pyres_text), or the end of the frames one
 * _PyEval_EvalFrameDefault call runs (its entry frame). */
#define WB_PY_GROUP_END UINT64_MAX

typedef struct wb_ustack_entry {
  uint32_t tgid, kind;
  char comm[16];
  uint32_t nu;   /* user pcs, leaf first, at pcs */
  size_t pcs;    /* offset into the pool; the Python items follow the pcs, the kernel pcs them */
  uint32_t np;   /* Python items, innermost first */
  uint32_t nk;   /* kernel pcs, leaf first */
  uint32_t py;   /* WB_PYF_* of the record, and WB_PY_GIL_WAIT */
  uint64_t count, hash; /* samples (on-CPU) or nanoseconds (off-CPU) */
} wb_ustack_entry;

#define WB_PY_GIL_WAIT 0x100 /* switched out in a futex wait on the GIL */

typedef struct wb_ustacks wb_ustacks;

wb_ustacks *wb_ustacks_new(void);
void wb_ustacks_free(wb_ustacks *a);

/* [start, start + len) is code of wb's own programs: a record's kernel stack is dropped up to its
 * outermost frame there, with the frames it called (at most 16 ranges are kept). */
void wb_ustacks_own_code(wb_ustacks *a, uint64_t start, uint32_t len);

/* Handles one record of the ring buffer; returns 0 (a malformed one is counted and skipped). */
int wb_ustacks_handle(wb_ustacks *a, const void *data, size_t size);

/* What of a record is to be read from its process while it lives, read now (the Python code
 * objects of its frames), for a record handled later. */
void wb_ustacks_prime(wb_ustacks *a, const void *data, size_t size);

/* A record of a process with no known mappings (it exited before its records were drained) is
 * kept; the processes of those (at most max) into out, their count. Give the unwinder their
 * mappings (wb_ustacks_unwinder: fork, exec, add_map from the side-band records), then replay:
 * they are walked and counted (switch-outs with their time away). */
size_t wb_ustacks_deferred_pids(const wb_ustacks *a, uint32_t *out, size_t max);
size_t wb_ustacks_deferred_count(const wb_ustacks *a); /* the records waiting: at least their pids */
void wb_ustacks_replay(wb_ustacks *a);

/* The aggregated stacks; the pool of pcs they point into. */
const wb_ustack_entry *wb_ustacks_entries(const wb_ustacks *a, size_t *n);
const uint64_t *wb_ustacks_pool(const wb_ustacks *a);

/* Python frames (records of CPython processes): install(ctx, tgid, offsets) puts a process the
 * resolver attached into the BPF program's py_procs (offsets NULL: takes it out). */
void wb_ustacks_python(wb_ustacks *a, int (*install)(void *ctx, uint32_t tgid, const struct wb_py_proc *pp), void *ctx);
wb_pyres *wb_ustacks_pyres(const wb_ustacks *a); /* NULL without Python frames */
void wb_ustacks_next_epoch(wb_ustacks *a);       /* a drain: processes are looked at again */
/* Looks at tgid now (before its first record: the frames of its first samples are read); 1 when
 * it is a CPython wb reads. */
int wb_ustacks_python_attach(wb_ustacks *a, uint32_t tgid);

/* Keeps the scheduling timeline (core/critpath.h: off-CPU intervals with their wake-ups, thread
 * starts, on-CPU samples; stack ids are entry indexes + 1), at most max_bytes of it; 0 or -1. */
typedef struct wb_cp_timeline wb_cp_timeline;
int wb_ustacks_timeline(wb_ustacks *a, size_t max_bytes);
wb_cp_timeline *wb_ustacks_get_timeline(wb_ustacks *a); /* NULL when none is kept */

/* Pushes the critical path of [from, to) of the timeline (to 0: root's process's end) as
 * s:critical_path() returns it (core/bpf_critpath.c; near_ns: wb_cp_walk's), also summed over each
 * of the nwin windows [windows[2i], windows[2i+1]); 0 (nothing pushed) without a timeline. */
int wb_bpf_push_critical_path(struct lua_State *L, wb_ustacks *us, uint32_t root, uint64_t from, uint64_t to,
                              uint64_t near_ns, const uint64_t *windows, size_t nwin);

/* Records that carried Python frames. */
uint64_t wb_ustacks_py_records(const wb_ustacks *a);

/* The unwinder (its statistics, wb_unwind_push_stats) and the bytes of stack copied. */
wb_unwinder *wb_ustacks_unwinder(wb_ustacks *a);
uint64_t wb_ustacks_bytes(const wb_ustacks *a);
/* Switch-ins counted under WB_UNW_LOST_PC: their switch-out record was not placed. */
uint64_t wb_ustacks_stack_lost(const wb_ustacks *a);
