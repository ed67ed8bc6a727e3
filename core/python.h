/* Reading CPython 3.11+ processes from outside (core/python_read.c), shared by wb.python's sampler
 * (core/python.c) and wb.bpf's unwind mode (core/bpf_ustack.c), which reads the frame chain in the
 * BPF program at sample time and names its code objects here. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "bpf/profile.h"

#define WB_PY_NAME_MAX 200
#define WB_PY_WHY_LEN 320 /* room for a path and a reason */
#define WB_PY_MAX_PROCS 64

/* The label of a frame wb could not name (its code object was freed, or the read was torn). */
#define WB_PY_UNKNOWN "[unknown Python frame]"

typedef struct wb_pyproc wb_pyproc;

/* The CPython processes of a capture: attached once per (pid, image), code objects named by
 * address (checked against reuse) with the line of the instruction, labels interned. */
typedef struct wb_pyres wb_pyres;

wb_pyres *wb_pyres_new(void);
void wb_pyres_free(wb_pyres *r);

/* The process pid as a CPython wb can read: attached at the first call (again after its CPython
 * image changed: an exec, or libpython mapped after the executable). NULL when it is not one; the
 * reason is kept for wb_pyres_skipped. */
wb_pyproc *wb_pyres_attach(wb_pyres *r, pid_t pid);

/* The offsets the BPF program walks the frame chain of p with. */
void wb_pyproc_bpf(const wb_pyproc *p, struct wb_py_proc *out);

/* The label id (> 0) of a frame: code object and instruction pointer as read from the frame, and
 * the code object's co_qualname pointer as read at the same moment (0: not read; the frame was
 * read just now). A code object that cannot be read, or whose address holds another code object
 * than the one sampled, gets the id of WB_PY_UNKNOWN. */
uint32_t wb_pyres_label(wb_pyres *r, wb_pyproc *p, uint64_t code, uint64_t instr, uint64_t qual);

/* Reads code object `code` now when p has no entry for its address (arguments as
 * wb_pyres_label's): a label asked for after the process is gone is named from that entry. */
void wb_pyres_prime(wb_pyres *r, wb_pyproc *p, uint64_t code, uint64_t qual);
const char *wb_pyres_text(const wb_pyres *r, uint32_t id);

/* Whether addr lies in the GIL of p's main interpreter (a futex wait there is a wait for the
 * GIL, or for its hand-over). */
int wb_pyproc_in_gil(wb_pyproc *p, uint64_t addr);

/* The processes attached and those looked at and skipped (image "" when none was mapped). */
size_t wb_pyres_count(const wb_pyres *r);
const wb_pyproc *wb_pyres_proc(const wb_pyres *r, size_t i);
pid_t wb_pyproc_pid(const wb_pyproc *p);
const char *wb_pyproc_version(const wb_pyproc *p);
const char *wb_pyproc_binary(const wb_pyproc *p);
size_t wb_pyres_nskipped(const wb_pyres *r);
void wb_pyres_skipped(const wb_pyres *r, size_t i, pid_t *pid, const char **image, const char **why);

/* One thread's Python stack, read from user space (the sampler): label ids, innermost first. */
#define WB_PY_STACK_MAX 128
typedef struct wb_pythread {
  int64_t tid;
  int nframes, truncated;
  uint32_t frames[WB_PY_STACK_MAX];
} wb_pythread;

/* The Python stacks of every thread of every interpreter of p; the number of threads, -1 when the
 * runtime cannot be read (the process has exited). */
int wb_pyproc_stacks(wb_pyres *r, wb_pyproc *p, wb_pythread *out, int max);

/* Probing one process without a wb_pyres (wb.python.probe): 0, or -1 with why set. */
int wb_py_probe(pid_t pid, char *version, size_t vlen, char *binary, size_t blen, char *why, size_t whylen);

/* The struct offsets of CPython 3.<minor> (11 or 12) wb uses, by name, for the tests; n pairs. */
typedef struct wb_py_offset {
  const char *name;
  uint64_t value;
} wb_py_offset;
int wb_py_layout(int minor, wb_py_offset *out, int max);

/* Sets t.processes = {{pid, version, binary}} and t.skipped = {{pid, image, reason}} on the table
 * at the top of the stack (core/python.c). */
struct lua_State;
void wb_pyres_push_procs(struct lua_State *L, const wb_pyres *r);
