/* Guarded file access and atomic file replacement (core/fs_guard.c); Lua-free. */
#pragma once

#include <errno.h>
#include <stddef.h>

/* Atomic replacement of a file (core/fs_guard.c). wb_atomic_open creates a new temporary file
 * next to path, writes its name into tmp, and returns its descriptor, or -1 with errno.
 * wb_atomic_commit fsyncs it (when sync), sets its mode, closes it and renames it over path (a
 * link there is replaced, never followed), then fsyncs the directory; returns 0, or an errno
 * after removing the temporary file. wb_atomic_abort closes and removes it. A crash leaves the old
 * file or the new one, never a torn one. Under a confined directory both resolve as
 * wb_guard_parent does. */
int wb_atomic_open(const char *path, char *tmp, size_t tmplen);
int wb_atomic_commit(int fd, const char *tmp, const char *path, unsigned mode, int sync);
void wb_atomic_abort(int fd, const char *tmp);

/* Guarded file access (core/fs_guard.c; docs/security.md).
 * wb_guard_confine: makes the directory at path confined (see wb.fs.confine), first making it
 *   and its missing parents when create; 0, or -1 with a one-line reason in err.
 * wb_guard_parent: opens the directory that holds path's last component and points *name at
 *   that component (inside buf); under a confined directory, resolved from it a component at a
 *   time without following links (*confined = 1). A descriptor, or -1 with errno.
 * wb_guard_open: open(2) for wb's own files. A read opens only a regular file or a directory,
 *   after fstat of an O_PATH descriptor (no device is opened, no FIFO blocks; else -1 with errno
 *   WB_ENOTREG): under a confined directory resolved without following links, elsewhere as named;
 *   /dev/stdin, /dev/fd/N and /proc/self/fd/N (the process's own descriptors: a pipe, a shell's
 *   <(...)) are opened as named whatever they are. A write or create never
 *   blocks on a FIFO (ENXIO without a reader) and follows a last-component link only outside
 *   confined directories and only when root or an acting user made it; under a confined
 *   directory it must find a regular, single-link file of the acting user (else EPERM/EINVAL,
 *   nothing truncated). O_TRUNC truncates a regular file after those checks. Close-on-exec.
 * wb_guard_mkdir: mkdir (parents = 0: EEXIST when present) or mkdir -p, confined as above.
 * wb_guard_rename: rename(2) with both sides resolved as wb_guard_parent does.
 * wb_guard_private_dir: 0 when the directory at path is the effective user's own, writable by no
 *   one else, and every directory above it is root's or that user's (or sticky), with no link of
 *   another user on the way: a private place (wb's cache); -1 otherwise.
 * wb_open_foreign: opens for reading a file named by another process (a mapping, a debug link):
 *   never blocks (a FIFO), never opens a device (the path is looked at through an O_PATH
 *   descriptor first, and that inode reopened), and only a regular file: -2 (errno EINVAL) for
 *   anything else, -1 with errno when it cannot be opened. */
/* errno of a read refused because the file is not regular (strerror via wb_strerror). */
#define WB_ENOTREG EMEDIUMTYPE
/* strerror(e), and for WB_ENOTREG what wb refused. */
const char *wb_strerror(int e);

int wb_guard_confine(const char *path, int create, char *err, size_t errlen);
int wb_guard_parent(const char *path, char *buf, size_t cap, const char **name, int *confined);
int wb_guard_open(const char *path, int flags, unsigned mode);
int wb_guard_mkdir(const char *path, unsigned mode, int parents);
int wb_guard_rename(const char *from, const char *to);
int wb_guard_private_dir(const char *path);
int wb_open_foreign(const char *path);
