/* Guarded file access for a tool that runs as root beside other users (docs/security.md).
 *
 * Confined directories: a run directory is opened once, without following a link, and must
 * belong to the user wb acts for and be writable by no one else (wb_guard_confine). Every later
 * create, write, rename or removal whose path lies under it is resolved from that descriptor one
 * component at a time with O_NOFOLLOW: a symlink planted anywhere below it, or a swap of the
 * directory itself, cannot redirect the write, and a file there that wb is to write in place must
 * be a regular file of that user. As root, no directory on the way to it may be one another user
 * can change. Paths elsewhere keep normal resolution, except their last component, which a write
 * in place follows only when root or an acting user made the link, and never opens blocking. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"

struct root {
  char *path; /* absolute, lexically normal */
  size_t len;
  int fd;
};

static struct root *roots;
static size_t nroots;

/* Writes the absolute, lexically normal form of path to out ("." and empty components dropped,
 * ".." removing the one before). 0, or -1 with errno. */
static int normalize(const char *path, char *out, size_t cap) {
  char joined[PATH_MAX];
  if (path[0] == '/') {
    if (strlen(path) >= sizeof joined) return errno = ENAMETOOLONG, -1;
    strcpy(joined, path);
  } else {
    if (!getcwd(joined, sizeof joined)) return -1;
    size_t n = strlen(joined);
    if (n + 1 + strlen(path) >= sizeof joined) return errno = ENAMETOOLONG, -1;
    joined[n] = '/';
    strcpy(joined + n + 1, path);
  }
  size_t len = 0;
  for (char *p = joined; *p;) {
    while (*p == '/') p++;
    char *end = p;
    while (*end && *end != '/') end++;
    size_t n = (size_t)(end - p);
    if (n == 0 || (n == 1 && p[0] == '.')) {
    } else if (n == 2 && p[0] == '.' && p[1] == '.') {
      while (len > 0 && out[len - 1] != '/') len--;
      if (len > 0) len--;
    } else {
      if (len + 1 + n >= cap) return errno = ENAMETOOLONG, -1;
      out[len++] = '/';
      memcpy(out + len, p, n);
      len += n;
    }
    p = end;
  }
  if (len == 0) out[len++] = '/';
  out[len] = 0;
  return 0;
}

/* The confined root holding the normal path abs (the longest), with *rel set to the rest (no
 * leading '/', "" for the root itself); NULL when none does. */
static const struct root *root_of(const char *abs, const char **rel) {
  const struct root *best = NULL;
  for (size_t i = 0; i < nroots; i++) {
    const struct root *r = &roots[i];
    if (strncmp(abs, r->path, r->len) != 0) continue;
    if (r->len > 1 && abs[r->len] != '/' && abs[r->len] != 0) continue;
    if (!best || r->len > best->len) best = r;
  }
  if (best) *rel = abs + best->len + (abs[best->len] == '/');
  return best;
}

/* Opens the directory rel[0..n) below the directory fd, a component at a time, never following
 * a link; missing components are made (mode) when create. A new descriptor, or -1 with errno. */
static int walk(int fd, const char *rel, size_t n, int create, mode_t mode) {
  int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const char *p = rel, *end = rel + n;
  while (cur >= 0 && p < end) {
    const char *q = memchr(p, '/', (size_t)(end - p));
    if (!q) q = end;
    char comp[NAME_MAX + 1];
    size_t len = (size_t)(q - p);
    if (len > NAME_MAX) {
      close(cur);
      return errno = ENAMETOOLONG, -1;
    }
    memcpy(comp, p, len);
    comp[len] = 0;
    int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create && (mkdirat(cur, comp, mode) == 0 || errno == EEXIST))
      next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); /* EEXIST: a race */
    int e = errno;
    close(cur);
    errno = e;
    cur = next;
    p = q + 1;
  }
  return cur;
}

int wb_guard_parent(const char *path, char *buf, size_t cap, const char **name, int *confined) {
  *confined = 0;
  if (nroots > 0 && normalize(path, buf, cap) != 0) return -1; /* it may lie in one: fail closed */
  if (nroots > 0) {
    const char *rel;
    const struct root *r = root_of(buf, &rel);
    if (r && *rel) {
      const char *slash = strrchr(rel, '/');
      *name = slash ? slash + 1 : rel;
      *confined = 1;
      return walk(r->fd, rel, slash ? (size_t)(slash - rel) : 0, 0, 0);
    }
  }
  size_t n = strlen(path);
  if (n >= cap) return errno = ENAMETOOLONG, -1;
  memcpy(buf, path, n + 1);
  while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) {
    *name = buf;
    return open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  *name = slash + 1;
  if (slash == buf) return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  *slash = 0;
  int fd = open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
  *slash = '/';
  return fd;
}

/* The users whose directories and files wb may write into: the effective user, and under sudo
 * the user who ran it (SUDO_UID), whose own files these are. */
static int acting_user(uid_t uid) {
  if (uid == geteuid()) return 1;
  const char *sudo = geteuid() == 0 ? getenv("SUDO_UID") : NULL;
  char *end;
  unsigned long u = sudo && *sudo ? strtoul(sudo, &end, 10) : ULONG_MAX;
  return sudo && *sudo && !*end && u == (unsigned long)uid;
}

/* Whether a file of ours opened for writing at fd is one wb may write in place: a regular file
 * of an acting user, with one name (not a hard link planted to another file). */
static int writable_in_place(int fd, int confined) {
  struct stat st;
  if (!confined) return 1;
  if (fstat(fd, &st) != 0) return 0;
  if (!S_ISREG(st.st_mode)) return errno = EINVAL, 0;
  if (!acting_user(st.st_uid) || st.st_nlink > 1) return errno = EPERM, 0;
  return 1;
}

/* Whether the link name in the directory dfd may be followed outside a confined directory: root
 * or an acting user made it (/dev/stdout, /dev/fd/N, a user's own), not another user. */
static int trusted_link(int dfd, const char *name) {
  struct stat st;
  return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) &&
         (st.st_uid == 0 || acting_user(st.st_uid));
}

const char *wb_strerror(int e) {
  return e == WB_ENOTREG ? "not a regular file (wb reads a FIFO, device or socket only as /dev/stdin, /dev/fd/N or "
                           "/proc/self/fd/N, and follows no link in a run directory)"
                         : strerror(e);
}

/* Whether a path names one of this process's own descriptors, which may be a pipe or a terminal:
 * /dev/stdin, /dev/fd/N (a shell's <(...)), /proc/self/fd/N. */
static int own_descriptor(const char *path) {
  if (strcmp(path, "/dev/stdin") == 0) return 1;
  const char *n = strncmp(path, "/dev/fd/", 8) == 0 ? path + 8 : strncmp(path, "/proc/self/fd/", 14) == 0 ? path + 14 : NULL;
  if (!n || !*n) return 0;
  while (*n >= '0' && *n <= '9') n++;
  return *n == 0;
}

/* The directory of a confined root that holds path (a descriptor, *name its last component),
 * -2 when path lies in none, -1 with errno on failure. */
static int confined_parent(const char *path, char *buf, size_t cap, const char **name) {
  if (nroots == 0) return -2;
  if (normalize(path, buf, cap) != 0) return -1; /* it may lie in one: fail closed */
  const char *rel;
  const struct root *r = root_of(buf, &rel);
  if (!r || !*rel) return -2;
  const char *slash = strrchr(rel, '/');
  *name = slash ? slash + 1 : rel;
  return walk(r->fd, rel, slash ? (size_t)(slash - rel) : 0, 0, 0);
}

/* Reads look before they open: the file is first reached with O_PATH (no device's open runs, no
 * FIFO blocks) and only a regular file or a directory is then opened, through that very
 * descriptor (/proc/self/fd), so a swap in between changes nothing; below a confined directory no
 * link is followed. A FIFO, device or socket is opened only as one of this process's own
 * descriptors (own_descriptor), as named. */
static int open_for_reading(const char *path, int flags) {
  char buf[PATH_MAX];
  const char *name = NULL;
  int dfd = confined_parent(path, buf, sizeof buf, &name);
  if (dfd == -1) return -1;
  int confined = dfd >= 0;
  int dir = flags & O_DIRECTORY;
  int at = confined ? openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | dir) : open(path, O_PATH | O_CLOEXEC | dir);
  int e = at < 0 ? (confined && errno == ELOOP ? WB_ENOTREG : errno) : 0;
  if (confined) close(dfd);
  struct stat st;
  if (!e && fstat(at, &st) != 0) e = errno;
  int plain = !e && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
  if (!e && !plain && (confined || !own_descriptor(path))) e = WB_ENOTREG;
  if (flags & O_PATH) {
    if (e && at >= 0) close(at);
    return e ? (errno = e, -1) : at;
  }
  int fd = -1;
  if (!e && plain) {
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", at);
    fd = open(self, (flags & ~O_NOFOLLOW) | O_CLOEXEC | O_NOCTTY);
    struct stat again;
    if (fd < 0 && errno == ENOENT) fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); /* no /proc */
    if (fd >= 0 && (fstat(fd, &again) != 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino)) {
      close(fd);
      fd = -1, errno = WB_ENOTREG;
    }
    if (fd < 0) e = errno;
  } else if (!e) {
    fd = open(path, flags | O_CLOEXEC | O_NOCTTY); /* the user's own descriptor, as named */
    if (fd < 0) e = errno;
  }
  if (at >= 0) close(at);
  if (!e && (fcntl(fd, F_GETFL) & O_NONBLOCK) && !(flags & O_NONBLOCK))
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return e ? (errno = e, -1) : fd;
}

int wb_guard_open(const char *path, int flags, unsigned mode) {
  int accmode = flags & O_ACCMODE;
  if (accmode == O_RDONLY && !(flags & O_CREAT)) return open_for_reading(path, flags);
  char buf[PATH_MAX];
  const char *name;
  int confined;
  int dfd = wb_guard_parent(path, buf, sizeof buf, &name, &confined);
  if (dfd < 0) return -1;
  int base = (flags & ~O_TRUNC) | O_NONBLOCK | O_CLOEXEC;
  int fd = openat(dfd, name, base | O_NOFOLLOW, (mode_t)mode);
  if (fd < 0 && errno == ELOOP && !confined && trusted_link(dfd, name)) fd = openat(dfd, name, base, (mode_t)mode);
  int e = errno;
  close(dfd);
  if (fd < 0) return errno = e, -1;
  struct stat st;
  int regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!writable_in_place(fd, confined) || ((flags & O_TRUNC) && regular && ftruncate(fd, 0) != 0)) {
    e = errno;
    close(fd);
    return errno = e, -1;
  }
  if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

/* mkdir -p outside confined directories. */
static int mkdir_parents(const char *path, mode_t mode) {
  char buf[PATH_MAX];
  size_t len = strlen(path);
  if (len >= sizeof buf) return errno = ENAMETOOLONG, -1;
  memcpy(buf, path, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char saved = buf[i];
    buf[i] = 0;
    if (mkdir(buf, mode) != 0 && errno != EEXIST) return -1;
    buf[i] = saved;
  }
  struct stat st;
  if (stat(buf, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return 0;
}

int wb_guard_mkdir(const char *path, unsigned mode, int parents) {
  char buf[PATH_MAX];
  const char *name;
  int confined;
  if (nroots > 0 && normalize(path, buf, sizeof buf) == 0) {
    const char *rel;
    const struct root *r = root_of(buf, &rel);
    if (r && *rel) {
      if (parents) {
        int fd = walk(r->fd, rel, strlen(rel), 1, (mode_t)mode);
        if (fd < 0) return -1;
        close(fd);
        return 0;
      }
    } else if (r) {
      return parents ? 0 : (errno = EEXIST, -1);
    }
  }
  if (parents) return mkdir_parents(path, (mode_t)mode);
  int dfd = wb_guard_parent(path, buf, sizeof buf, &name, &confined);
  if (dfd < 0) return -1;
  int rc = mkdirat(dfd, name, (mode_t)mode);
  int e = errno;
  close(dfd);
  return errno = e, rc;
}

int wb_guard_rename(const char *from, const char *to) {
  char fbuf[PATH_MAX], tbuf[PATH_MAX];
  const char *fname, *tname;
  int fc, tc;
  int ffd = wb_guard_parent(from, fbuf, sizeof fbuf, &fname, &fc);
  if (ffd < 0) return -1;
  int tfd = wb_guard_parent(to, tbuf, sizeof tbuf, &tname, &tc);
  if (tfd < 0) {
    int e = errno;
    close(ffd);
    return errno = e, -1;
  }
  int rc = renameat(ffd, fname, tfd, tname);
  int e = errno;
  close(ffd);
  close(tfd);
  return errno = e, rc;
}

/* Creates a new file named after name in the directory dfd: name.tmp.XXXXXX, never an existing
 * one; writes its name to tmp. The descriptor, or -1 with errno. */
static int create_temporary(int dfd, const char *name, char *tmp, size_t cap) {
  static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) return -1;
    int n = snprintf(tmp, cap, "%s.tmp.", name);
    if (n < 0 || (size_t)n + 7 > cap) return errno = ENAMETOOLONG, -1;
    for (int i = 0; i < 6; i++) tmp[n + i] = digits[r[i] % (sizeof digits - 1)];
    tmp[n + 6] = 0;
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return errno = EEXIST, -1;
}

int wb_atomic_open(const char *path, char *tmp, size_t tmplen) {
  char buf[PATH_MAX], name[NAME_MAX + 1];
  const char *base;
  int confined;
  int dfd = wb_guard_parent(path, buf, sizeof buf, &base, &confined);
  if (dfd < 0) return -1;
  int fd = create_temporary(dfd, base, name, sizeof name);
  int e = errno;
  close(dfd);
  if (fd < 0) return errno = e, -1;
  size_t dirlen = (size_t)(base - buf); /* tmp: the directory as resolved, then the new name */
  if (dirlen + strlen(name) + 1 > tmplen) {
    close(fd);
    return errno = ENAMETOOLONG, -1;
  }
  memcpy(tmp, buf, dirlen);
  strcpy(tmp + dirlen, name);
  return fd;
}

/* The process's umask (read by setting and restoring it; wb is single-threaded). */
static mode_t current_umask(void) {
  mode_t m = umask(022);
  umask(m);
  return m;
}

static int unlink_guarded(const char *path) {
  char buf[PATH_MAX];
  const char *name;
  int confined;
  int dfd = wb_guard_parent(path, buf, sizeof buf, &name, &confined);
  if (dfd < 0) return -1;
  int rc = unlinkat(dfd, name, 0);
  close(dfd);
  return rc;
}

int wb_atomic_commit(int fd, const char *tmp, const char *path, unsigned mode, int sync) {
  int e = 0;
  if ((sync && fsync(fd) != 0) || fchmod(fd, (mode_t)mode & ~current_umask()) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  /* tmp was made in path's directory (wb_atomic_open): one resolution serves the rename and sync */
  char buf[PATH_MAX];
  const char *name, *slash = strrchr(tmp, '/'), *tmpname = slash ? slash + 1 : tmp;
  int confined;
  int dfd = wb_guard_parent(path, buf, sizeof buf, &name, &confined);
  if (dfd < 0) {
    if (!e) e = errno;
    unlink_guarded(tmp);
    return e;
  }
  if (!e && renameat(dfd, tmpname, dfd, name) != 0) e = errno;
  if (e) {
    unlinkat(dfd, tmpname, 0);
  } else if (sync) {
    int dir = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      fsync(dir);
      close(dir);
    }
  }
  close(dfd);
  return e;
}

void wb_atomic_abort(int fd, const char *tmp) {
  close(fd);
  unlink_guarded(tmp);
}

/* Whether uid may own what wb trusts: root, the effective user, and unless strict the user who ran
 * sudo (acting_user). */
static int trusted_owner(uid_t uid, int strict) {
  return uid == 0 || uid == geteuid() || (!strict && acting_user(uid));
}

/* Whether st's group is its owner's user-private group: named as the owner, the owner's primary
 * group, with no listed members (Debian's usergroups with umask 002). */
static int private_group(const struct stat *st) {
  struct passwd pw, *pf = NULL;
  struct group gr, *gf = NULL;
  char pbuf[4096], gbuf[16384];
  if (getpwuid_r(st->st_uid, &pw, pbuf, sizeof pbuf, &pf) != 0 || !pf) return 0;
  if (getgrgid_r(st->st_gid, &gr, gbuf, sizeof gbuf, &gf) != 0 || !gf) return 0;
  return pw.pw_gid == st->st_gid && strcmp(gr.gr_name, pw.pw_name) == 0 && !(gr.gr_mem && gr.gr_mem[0]);
}

/* Whether the POSIX access ACL of the open directory fd lets a named user or group write
 * (ACL_USER or ACL_GROUP entries with ACL_WRITE; an ACL too long to read counts as one). */
static int acl_lets_others_write(int fd) {
  unsigned char buf[4 + 8 * 128]; /* the version word, then {le16 tag, le16 perm, le32 id} */
  ssize_t n = fgetxattr(fd, "system.posix_acl_access", buf, sizeof buf);
  if (n < 0) return errno == ERANGE;
  for (ssize_t i = 4; i + 8 <= n; i += 8) {
    unsigned tag = buf[i] | (unsigned)buf[i + 1] << 8, perm = buf[i + 2] | (unsigned)buf[i + 3] << 8;
    if ((tag == 0x02 || tag == 0x08) && (perm & 0x02)) return 1;
  }
  return 0;
}

/* Why users other than the trusted ones could add, remove or rename entries of the open
 * directory fd (st its status), into why; NULL when they cannot. sticky: the sticky bit protects
 * entries (true for a directory wb walks through, not for the one it writes in). */
static const char *others_may_change(int fd, const struct stat *st, int strict, int sticky, char *why, size_t n) {
  unsigned mode = (unsigned)(st->st_mode & 07777);
  if (!trusted_owner(st->st_uid, strict))
    snprintf(why, n, "belongs to another user (uid %lu)", (unsigned long)st->st_uid);
  else if (sticky && (st->st_mode & S_ISVTX))
    return NULL;
  else if (st->st_mode & S_IWOTH)
    snprintf(why, n, "is writable by every user (mode %04o)", mode);
  else if ((st->st_mode & S_IWGRP) && !private_group(st))
    snprintf(why, n, "is writable by group %lu (mode %04o)", (unsigned long)st->st_gid, mode);
  else if (acl_lets_others_write(fd))
    snprintf(why, n, "has an ACL that lets other users write in it");
  else
    return NULL;
  return why;
}

/* Opens the directory at path, making missing components (mode 0755 less the umask) when create,
 * and following a symbolic link only when a trusted owner (trusted_owner) made it: never one
 * another user planted. With ancestors, every directory it walks through must be one no other
 * user can change (others_may_change): else they could swap what lies below it after wb checked
 * it. A descriptor, or -1 with a one-line reason in err. */
static int open_trusted_dir(const char *path, int create, int ancestors, int strict, char *err, size_t errlen) {
  char rest[PATH_MAX], target[PATH_MAX];
  if (strlen(path) >= sizeof rest) {
    snprintf(err, errlen, "%.200s...: %s", path, strerror(ENAMETOOLONG));
    return -1;
  }
  strcpy(rest, path);
  int cur = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), links = 0;
  char *p = rest;
  while (cur >= 0 && *p) {
    while (*p == '/') p++;
    char *end = p;
    while (*end && *end != '/') end++;
    char comp[NAME_MAX + 1];
    size_t len = (size_t)(end - p);
    if (len > NAME_MAX) {
      snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
      close(cur);
      return -1;
    }
    memcpy(comp, p, len);
    comp[len] = 0;
    p = end;
    if (!comp[0] || strcmp(comp, ".") == 0) continue;
    struct stat cst;
    char why[128];
    if (ancestors && fstat(cur, &cst) == 0 && others_may_change(cur, &cst, strict, 1, why, sizeof why)) {
      snprintf(err, errlen, "%s: the directory holding %s %s: refused (another user could swap what lies below it)",
               path, comp, why);
      close(cur);
      return -1;
    }
    struct stat st;
    int r = fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW);
    if (r != 0 && errno == ENOENT && create && (mkdirat(cur, comp, 0755) == 0 || errno == EEXIST))
      r = fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW);
    if (r != 0) {
      snprintf(err, errlen, "%s: %s", path, strerror(errno));
      close(cur);
      return -1;
    }
    if (S_ISLNK(st.st_mode)) {
      if (!trusted_owner(st.st_uid, strict)) {
        snprintf(err, errlen, "%s: %s is a symbolic link of another user (uid %lu): not followed", path, comp,
                 (unsigned long)st.st_uid);
        close(cur);
        return -1;
      }
      ssize_t n = readlinkat(cur, comp, target, sizeof target - 1);
      if (n <= 0 || ++links > 40 || (size_t)n + 1 + strlen(p) >= sizeof target) {
        snprintf(err, errlen, "%s: %s", path, strerror(n <= 0 ? errno : ELOOP));
        close(cur);
        return -1;
      }
      target[n] = 0;
      strcat(target, p); /* p is "" or starts with '/' */
      strcpy(rest, target);
      p = rest;
      if (rest[0] == '/') {
        close(cur);
        cur = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      }
      continue;
    }
    int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(cur);
    if (next < 0) {
      snprintf(err, errlen, "%s: %s", path, strerror(e));
      return -1;
    }
    cur = next;
  }
  if (cur < 0) snprintf(err, errlen, "%s: %s", path, strerror(errno));
  return cur;
}

int wb_guard_confine(const char *path, int create, char *err, size_t errlen) {
  char abs[PATH_MAX];
  if (normalize(path, abs, sizeof abs) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < nroots; i++)
    if (strcmp(roots[i].path, abs) == 0) return 0;
  /* as root, nothing on the way may be changeable by another user (wb hands children paths) */
  int fd = open_trusted_dir(path, create, geteuid() == 0, 0, err, errlen);
  struct stat st;
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  const char *why = NULL;
  char detail[128];
  if (!acting_user(st.st_uid)) {
    snprintf(detail, sizeof detail, "belongs to another user (uid %lu)", (unsigned long)st.st_uid);
    why = detail;
  } else if (geteuid() == 0) { /* root: no one else may write in it, by mode, group or ACL */
    why = others_may_change(fd, &st, 0, 0, detail, sizeof detail);
  } else if (st.st_mode & S_IWOTH) { /* a user: their own group may share it */
    snprintf(detail, sizeof detail, "is writable by every user (mode %04o)", (unsigned)(st.st_mode & 07777));
    why = detail;
  }
  if (why) {
    snprintf(err, errlen, "%s: %s: refused as a run directory (others could plant files in it)", path, why);
    close(fd);
    return -1;
  }
  int above = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  if (above < 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  struct root *grown = realloc(roots, (nroots + 1) * sizeof *roots);
  char *copy = strdup(abs);
  if (!grown || !copy) {
    if (grown) roots = grown;
    free(copy);
    close(above);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  roots = grown;
  roots[nroots++] = (struct root){copy, strlen(copy), above};
  return 0;
}

int wb_guard_private_dir(const char *path) {
  char err[256];
  int fd = open_trusted_dir(path, 0, 1, 1, err, sizeof err);
  struct stat st;
  if (fd < 0) return -1;
  int ok = fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 022) && !acl_lets_others_write(fd);
  close(fd);
  return ok ? 0 : -1;
}

int wb_open_foreign(const char *path) {
  int at = open(path, O_PATH | O_CLOEXEC); /* looked at before it is opened: no device's open runs */
  if (at < 0) return -1;
  struct stat st;
  if (fstat(at, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(at);
    return errno = EINVAL, -2;
  }
  char self[64];
  snprintf(self, sizeof self, "/proc/self/fd/%d", at);
  int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC); /* the inode looked at, not the path again */
  int e = errno;
  close(at);
  if (fd < 0) return errno = e, -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return errno = EINVAL, -2;
  }
  return fd;
}
