/* wb's cache directory and what its per-boot files share (core/cache.c). */
#ifndef WB_CACHE_H
#define WB_CACHE_H
#include <stddef.h>

/* wb's cache directory ($XDG_CACHE_HOME/wb, else $HOME/.cache/wb) into out, created (mode 0700)
 * when missing; -1 without one, and -1 when it is a link, another user's, or writable by others
 * (wb then works without a cache). Its files can be deleted at any time. */
int wb_cache_dir(char *out, size_t size);

/* The boot's id (36 characters, /proc/sys/kernel/random/boot_id) into out[40], NUL-padded; -1
 * when unreadable. */
int wb_boot_id(char out[40]);

/* 0 when the open file fd is a cache file this process may trust: a regular file of this user
 * that no one else can write or read (no group or other bits). */
int wb_cache_trusted(int fd);

/* A new cache file for path: a temporary file beside it (mode 0600, close-on-exec), its name in
 * tmp[n]; the fd, or -1. wb_cache_commit ends it. Safe on any thread (no umask games). */
int wb_cache_create(const char *path, char *tmp, size_t n);

/* Closes fd (when >= 0) and, when ok, renames tmp over path, else removes tmp; 0 when path now
 * holds the new file. */
int wb_cache_commit(int fd, const char *tmp, const char *path, int ok);

/* Removes the files of dir named prefix + another boot's id + anything (the per-boot caches of
 * earlier boots: they are never read again). */
void wb_cache_prune(const char *dir, const char *prefix, const char boot[40]);

#endif
