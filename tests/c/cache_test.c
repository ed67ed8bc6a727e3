/* core/cache.h: the content hash of cached copies, the limits from the environment, and the
 * trimming of the copies by age and size (real files in a temporary directory). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"

static char dir[64];

/* Makes dir/name: size bytes, mode, last used (access time) hours_ago, last written the same. */
static void plant(const char *name, size_t size, unsigned mode, double hours_ago) {
  char path[256], zeros[4096] = {0};
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  for (size_t left = size; fd >= 0 && left > 0;) {
    size_t n = left < sizeof zeros ? left : sizeof zeros;
    if (write(fd, zeros, n) != (ssize_t)n) break;
    left -= n;
  }
  time_t t = time(NULL) - (time_t)(hours_ago * 3600);
  struct timespec times[2] = {{.tv_sec = t}, {.tv_sec = t}};
  if (fd >= 0) futimens(fd, times), fchmod(fd, mode), close(fd);
}

static int present(const char *name) {
  struct stat st;
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return lstat(path, &st) == 0;
}

static void hash(void) {
  int ok = 1;
  char hex[65];
  wb_content_hash("", 0, hex);
  CHECK(strcmp(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8") == 0);
  wb_content_hash("abc", 3, hex);
  CHECK(strcmp(hex, "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319") == 0);
  static unsigned char block[1000]; /* whole and partial 128-byte blocks: one byte changed, another hash */
  char other[65];
  wb_content_hash(block, sizeof block, hex);
  block[999] = 1;
  wb_content_hash(block, sizeof block, other);
  CHECK(strcmp(hex, other) != 0);
  static const size_t pieces[] = {1, 7, 127, 128, 129, 256, 1000}; /* in pieces: the same hash */
  for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
    wb_hash h;
    wb_hash_init(&h);
    for (size_t at = 0; at < sizeof block; at += pieces[i])
      wb_hash_update(&h, block + at, sizeof block - at < pieces[i] ? sizeof block - at : pieces[i]);
    wb_hash_final(&h, hex);
    CHECK(strcmp(hex, other) == 0);
  }
  wb_hash empty;
  wb_hash_init(&empty);
  wb_hash_final(&empty, hex);
  CHECK(strcmp(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8") == 0);
  report("content hash: BLAKE2b-256 (RFC 7693) of the bytes, whole or in pieces", ok);
}

static void limits(void) {
  int ok = 1;
  uint64_t bytes;
  double age;
  unsetenv("WB_MAX_CACHE_BYTES");
  unsetenv("WB_MAX_CACHE_DAYS");
  wb_cache_limits(&bytes, &age);
  CHECK(bytes == WB_CACHE_MAX_BYTES && age == WB_CACHE_MAX_DAYS * 86400.0);
  setenv("WB_MAX_CACHE_BYTES", "123", 1);
  setenv("WB_MAX_CACHE_DAYS", "0.5", 1);
  wb_cache_limits(&bytes, &age);
  CHECK(bytes == 123 && age == 43200.0);
  setenv("WB_MAX_CACHE_BYTES", "-5", 1);
  setenv("WB_MAX_CACHE_DAYS", "a week", 1);
  wb_cache_limits(&bytes, &age);
  CHECK(bytes == WB_CACHE_MAX_BYTES && age == WB_CACHE_MAX_DAYS * 86400.0);
  setenv("WB_MAX_CACHE_BYTES", "1e9", 1);
  setenv("WB_MAX_CACHE_DAYS", "-1", 1);
  wb_cache_limits(&bytes, &age);
  CHECK(bytes == WB_CACHE_MAX_BYTES && age == WB_CACHE_MAX_DAYS * 86400.0);
  unsetenv("WB_MAX_CACHE_BYTES");
  unsetenv("WB_MAX_CACHE_DAYS");
  report("limits: WB_MAX_CACHE_BYTES, WB_MAX_CACHE_DAYS; other values leave the defaults", ok);
}

static void trim(void) {
  int ok = 1;
  plant("aa-01.debug", 1000, 0600, 1);
  plant("aa-02.debug", 1000, 0600, 2);
  plant("aa-03.debug", 1000, 0600, 3);
  plant("aa-04.debug", 1000, 0600, 4); /* the oldest, but kept: the copy just made */
  plant("aa-40d.debug", 10, 0600, 40 * 24);
  plant("aa-05.debug.Xy12Ab", 1000, 0600, 25); /* a temporary its writer left a day ago */
  plant("aa-06.debug.Xy12Cd", 1000, 0600, 1);  /* one being written */
  plant("aa-07.debug", 5000, 0644, 9);         /* not a file wb made: mode 0644 */
  plant("notes.txt", 5000, 0600, 9);           /* nor of the copies' names */
  char link[128];
  snprintf(link, sizeof link, "%s/aa-08.debug", dir);
  CHECK(symlink("/etc/passwd", link) == 0);
  uint64_t kept = wb_cache_trim(dir, ".debug", 2500, 30 * 86400.0, "aa-04.debug");
  CHECK(kept == 2000);
  CHECK(present("aa-01.debug") && present("aa-04.debug") && !present("aa-02.debug") && !present("aa-03.debug"));
  CHECK(!present("aa-40d.debug") && !present("aa-05.debug.Xy12Ab") && present("aa-06.debug.Xy12Cd"));
  CHECK(present("aa-07.debug") && present("notes.txt") && present("aa-08.debug"));
  CHECK(wb_cache_trim(dir, ".debug", 0, 30 * 86400.0, NULL) == 0 && !present("aa-01.debug") && !present("aa-04.debug"));
  CHECK(present("aa-08.debug") && present("aa-07.debug"));
  char missing[128];
  snprintf(missing, sizeof missing, "%s/none", dir);
  CHECK(wb_cache_trim(missing, ".debug", 0, 0, NULL) == 0);
  CHECK(wb_cache_trim(link, ".debug", 0, 0, NULL) == 0); /* a link as the directory: not followed */
  report("trim: unused for too long, then least recently used first, down to the size; only its own files", ok);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/wb-cache-test.XXXXXX");
  if (!mkdtemp(dir)) return 1;
  hash();
  limits();
  trim();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return summary();
}
