#pragma once
/* wb public C API (libwb.so / libwb.a).
 *
 * This header is FFI-clean: LuaJIT can load it unchanged with
 *   ffi.cdef(io.open("core/wb.h"):read("a"))
 * so it holds only fixed-width types, opaque structs and plain prototypes: no #include, no
 * include guards, no macros in declarations. C users include <stdint.h> and <stddef.h> first,
 * or include "wb_c.h", which does that for them.
 *
 * Ownership: strings returned as `char *` are allocated by wb and released with wb_free.
 * Error buffers (`err`, `errlen`) receive a NUL-terminated one-line message on failure.
 */

/* The library version, e.g. "0.1.0". Static storage. */
const char *wb_version(void);

/* Monotonic clock (CLOCK_MONOTONIC) in nanoseconds. */
int64_t wb_clock_ns(void);

/* Releases memory returned by wb. */
void wb_free(void *ptr);

/* A spawned child process: its own process group, no shell, argv[0] looked up in PATH. */
typedef struct wb_child wb_child;

typedef struct wb_child_result {
  int32_t exited;      /* 1 when the child exited normally */
  int32_t exit_code;   /* exit status when exited, else -1 */
  int32_t term_signal; /* the signal that ended the child, else 0 */
  int32_t timed_out;   /* 1 when the timeout ended the process group */
  int64_t wall_ns;     /* spawn to reap, monotonic */
  int64_t user_ns;     /* user CPU time of the child and the descendants it waited for */
  int64_t sys_ns;      /* system CPU time, likewise */
  int64_t maxrss_kb;   /* peak resident set size in KiB: the largest own peak of the child and of
                          the descendants it waited for, exact from the kernel's taskstats exit
                          messages where wb may listen to them (CAP_NET_ADMIN), else wait4's
                          figure (see maxrss_bound) */
  int32_t maxrss_bound; /* 1 when maxrss_kb is only an upper bound: at exec, Linux records the
                           spawner's peak RSS as the child's, so a child that stays below it
                           shows the spawner's figure */
} wb_child_result;

/* Starts argv (NULL-terminated) with stdin from /dev/null. stdout_path/stderr_path: NULL
 * inherits, "" discards, else the file is truncated and written. timeout_s <= 0 means none; on timeout the whole process group
 * gets SIGTERM, then SIGKILL after grace_s. Returns NULL and fills err on failure, e.g.
 * "spawn: nosuch: No such file or directory". */
wb_child *wb_child_spawn(const char *const *argv, const char *cwd, const char *stdout_path,
                         const char *stderr_path, double timeout_s, double grace_s, char *err,
                         size_t errlen);

/* The child's pid (also its process group id). */
int32_t wb_child_pid(const wb_child *child);

/* Waits for the child (enforcing its timeout), fills *out and returns 0; -1 on error. */
int32_t wb_child_wait(wb_child *child, wb_child_result *out);

/* Kills the process group if still running, reaps it and frees the handle. NULL is ignored. */
void wb_child_free(wb_child *child);

/* Parses JSON text and writes it back canonically (pretty when pretty != 0, else compact).
 * Returns a string to release with wb_free, or NULL with err set to
 * "json: line L col C: message". */
char *wb_json_reformat(const char *text, size_t len, int32_t pretty, char *err, size_t errlen);
