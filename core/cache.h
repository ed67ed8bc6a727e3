/* wb's cache directory and what its per-boot files share (core/cache.c). */
#ifndef WB_CACHE_H
#define WB_CACHE_H
#include <stddef.h>
#include <stdint.h>

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

/* The limits of the files kept per content (the inflated DWARF copies): WB_MAX_CACHE_BYTES
 * (bytes, default WB_CACHE_MAX_BYTES) and WB_MAX_CACHE_DAYS (days unused, default
 * WB_CACHE_MAX_DAYS; fractions allowed) from the environment; a value that is not a number >= 0
 * is not used (the default). */
#define WB_CACHE_MAX_BYTES ((uint64_t)1 << 30)
#define WB_CACHE_MAX_DAYS 30
void wb_cache_limits(uint64_t *max_bytes, double *max_age_s);

/* Marks the cache file fd as used now (its access time: the order wb_cache_trim removes in). */
void wb_cache_touch(int fd);

/* Keeps the files of dir named NAME + suffix (NAME of hex digits and '-': the files made per
 * content) within the limits: removes those unused for longer than max_age_s, then the least
 * recently used until they hold max_bytes at most, never keep (a name in dir, or NULL); and the
 * temporaries of such files (suffix + ".XXXXXX") left for a day by a writer that died. Only this
 * user's regular files of mode 0600 are counted or removed; links are not followed. Returns the
 * bytes kept. */
uint64_t wb_cache_trim(const char *dir, const char *suffix, uint64_t max_bytes, double max_age_s, const char *keep);

/* The content identity of n bytes at data: BLAKE2b-256 (core/content_hash.c) as 64 hex digits and a
 * NUL into hex. A strong hash: another file's contents cannot be made to match it. */
void wb_content_hash(const void *data, size_t n, char hex[65]);

/* The same hash over bytes that come in pieces: init, update with each piece in order, final. */
typedef struct {
  uint64_t h[8];
  uint64_t total; /* bytes compressed so far */
  unsigned char buf[128];
  size_t fill; /* bytes waiting in buf */
} wb_hash;
void wb_hash_init(wb_hash *s);
void wb_hash_update(wb_hash *s, const void *data, size_t n);
void wb_hash_final(wb_hash *s, char hex[65]);

#endif
