/* wb.fs: files and directories. Writes are atomic by default: a temporary file in the same
 * directory, fsync, rename, fsync of the directory — a crash leaves the old or the new file,
 * never a torn one. Environment failures return nil, "path: strerror", errno. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "internal.h"

/* wb_push_error for a write: a link refused by the guard (ELOOP from O_NOFOLLOW) says so. */
static int push_write_error(lua_State *L, int err, const char *path) {
  if (err != ELOOP) return wb_push_error(L, err, path);
  lua_pushnil(L);
  lua_pushfstring(L, "%s: a symbolic link: wb does not write through one", path);
  lua_pushinteger(L, err);
  return 3;
}

static int push_ok(lua_State *L) {
  lua_pushboolean(L, 1);
  return 1;
}

int wb_read_file(lua_State *L, const char *path) {
  int fd = wb_guard_open(path, O_RDONLY, 0);
  if (fd < 0) return 0;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (;;) {
    char *p = luaL_prepbuffsize(&b, 1 << 16);
    ssize_t n = read(fd, p, 1 << 16);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      luaL_pushresult(&b);
      lua_pop(L, 1);
      errno = err;
      return 0;
    }
    if (n == 0) break;
    luaL_addsize(&b, (size_t)n);
  }
  close(fd);
  luaL_pushresult(&b);
  return 1;
}

char *wb_read_file_mapped(const char *path, size_t *len, size_t *size) {
  int fd = wb_guard_open(path, O_RDONLY, 0);
  struct stat st;
  if (fd < 0) return NULL;
  char *map = MAP_FAILED;
  if (fstat(fd, &st) == 0) {
    *size = st.st_size > 0 ? (size_t)st.st_size : 1;
    map = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  int err = errno;
  for (*len = 0; map != MAP_FAILED && *len < *size;) {
    ssize_t n = read(fd, map + *len, *size - *len);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) break;
    if (n > 0) {
      *len += (size_t)n;
      continue;
    }
    err = errno;
    munmap(map, *size);
    map = MAP_FAILED;
  }
  close(fd);
  errno = err;
  return map == MAP_FAILED ? NULL : map;
}

/* -- data, err = wb.fs.read(path) : the whole file */
static int l_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!wb_read_file(L, path)) return wb_push_error(L, errno, path);
  return 1;
}

int wb_write_all(int fd, const void *p, size_t n) {
  const char *data = p;
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return EIO;
    data += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes the data argument (index 2) to fd: a string, or the pieces a function returns until
 * it returns nil. Returns 0, the errno of a failed write, or -1 with the error of the function
 * (or of a piece that is not a string) on the stack. */
static int write_data(lua_State *L, int fd) {
  size_t len;
  if (!lua_isfunction(L, 2)) {
    const char *data = lua_tolstring(L, 2, &len);
    return wb_write_all(fd, data, len);
  }
  for (;;) {
    lua_pushvalue(L, 2);
    if (lua_pcall(L, 0, 1, 0) != LUA_OK) return -1;
    if (lua_isnil(L, -1)) break;
    if (lua_type(L, -1) != LUA_TSTRING) {
      lua_pushfstring(L, "wb.fs.write: the data function returned a %s, not a string", luaL_typename(L, -1));
      return -1;
    }
    const char *piece = lua_tolstring(L, -1, &len);
    int e = wb_write_all(fd, piece, len);
    if (e) return e;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

/* -- ok, err = wb.fs.write(path, data [, {append = false, atomic = true, mode = 0644, sync = true}])
 * Replaces the file atomically (unless append, which appends in place). data: a string, or a
 * function returning the next piece on each call and nil at the end, so a large file is written
 * without being held in memory whole; an error it raises propagates (an atomic write then leaves
 * the old file as it was; append and atomic = false keep what was written so far). */
static int l_write(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!lua_isfunction(L, 2)) luaL_checkstring(L, 2);
  int append = 0, atomic = 1, sync = 1;
  mode_t mode = 0644;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    if (lua_getfield(L, 3, "append") != LUA_TNIL) append = lua_toboolean(L, -1);
    if (lua_getfield(L, 3, "atomic") != LUA_TNIL) atomic = lua_toboolean(L, -1);
    if (lua_getfield(L, 3, "sync") != LUA_TNIL) sync = lua_toboolean(L, -1);
    if (lua_getfield(L, 3, "mode") != LUA_TNIL) mode = (mode_t)luaL_checkinteger(L, -1);
    lua_pop(L, 4);
  }
  lua_settop(L, 2);
  char tmp[PATH_MAX];
  int fd;
  if (append || !atomic) {
    int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
    if ((fd = wb_guard_open(path, flags, mode)) < 0) return push_write_error(L, errno, path);
    int r = write_data(L, fd);
    int e = r > 0 ? r : r == 0 && sync && fsync(fd) != 0 ? errno : 0;
    if (close(fd) != 0 && !e && r == 0) e = errno;
    if (r < 0) return lua_error(L);
    if (e) return wb_push_error(L, e, path);
    return push_ok(L);
  }
  if ((fd = wb_atomic_open(path, tmp, sizeof tmp)) < 0) return push_write_error(L, errno, path);
  int r = write_data(L, fd);
  if (r != 0) {
    wb_atomic_abort(fd, tmp);
    if (r < 0) return lua_error(L);
    return wb_push_error(L, r, path);
  }
  int e = wb_atomic_commit(fd, tmp, path, mode, sync);
  if (e) return wb_push_error(L, e, path);
  return push_ok(L);
}

/* -- ok, err = wb.fs.mkdir_p(path [, mode = 0755]) : creates path and missing parents */
static int l_mkdir_p(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  mode_t mode = (mode_t)luaL_optinteger(L, 2, 0755);
  if (wb_guard_mkdir(path, mode, 1) != 0) return push_write_error(L, errno, path);
  return push_ok(L);
}

/* -- ok, err, errno = wb.fs.mkdir(path [, mode = 0755]) : creates one directory; an existing
 * one is an error (EEXIST), so that of two processes making the same name only one succeeds */
static int l_mkdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  mode_t mode = (mode_t)luaL_optinteger(L, 2, 0755);
  if (wb_guard_mkdir(path, mode, 0) != 0) return push_write_error(L, errno, path);
  return push_ok(L);
}

/* -- ok, err = wb.fs.confine(dir [, create]) : makes dir a confined directory (core/fs_guard.c),
 * made with its missing parents when create. Refused (nil, "dir: why") when it is another
 * user's, writable by others, or reached through a link another user made; afterwards no write
 * below it follows a symlink or writes in place a file that is not the acting user's own. */
static int l_confine(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char err[PATH_MAX + 160];
  if (wb_guard_confine(path, lua_toboolean(L, 2), err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  return push_ok(L);
}

/* ---- io.open for writing -------------------------------------------------------------- */

static int close_stream(lua_State *L) {
  luaL_Stream *p = luaL_checkudata(L, 1, LUA_FILEHANDLE);
  int ok = fclose(p->f) == 0;
  return luaL_fileresult(L, ok, NULL);
}

/* io.open(path [, mode]) as wb installs it: every mode opens through wb_guard_open (no planted
 * link followed below a run directory, no FIFO blocking, a read finds a regular file unless the
 * user named /dev/...) and returns the standard library's kind of file handle. */
static int l_io_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  const char *mode = luaL_optstring(L, 2, "r");
  int flags;
  switch (mode[0]) {
  case 'w': flags = O_CREAT | O_TRUNC; break;
  case 'a': flags = O_CREAT | O_APPEND; break;
  case 'r': flags = 0; break;
  default: return luaL_argerror(L, 2, "invalid mode");
  }
  int plus = strchr(mode, '+') != NULL;
  const char *rest = mode + 1 + plus * (mode[1] == '+');
  if ((plus && mode[1] != '+') || strspn(rest, "b") != strlen(rest)) return luaL_argerror(L, 2, "invalid mode");
  flags |= plus ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY;
  luaL_Stream *p = lua_newuserdatauv(L, sizeof *p, 0);
  p->closef = NULL;
  luaL_setmetatable(L, LUA_FILEHANDLE);
  int fd = wb_guard_open(path, flags, 0666);
  FILE *f = fd >= 0 ? fdopen(fd, mode) : NULL;
  if (!f) {
    int e = errno;
    if (fd >= 0) close(fd);
    return (flags & O_ACCMODE) == O_RDONLY ? wb_push_error(L, e, path) : push_write_error(L, e, path);
  }
  p->f = f;
  p->closef = close_stream;
  return 1;
}

/* io.input(path) and io.output(path) as wb installs them: a path is opened by io.open above
 * ("r", "w"), then handed to the standard library's function (the upvalue), as is anything else. */
static int l_io_default(lua_State *L) {
  if (lua_type(L, 1) == LUA_TSTRING) {
    lua_pushcfunction(L, l_io_open);
    lua_pushvalue(L, 1);
    lua_pushstring(L, lua_toboolean(L, lua_upvalueindex(2)) ? "w" : "r");
    lua_call(L, 2, 3);
    if (lua_isnil(L, -3)) return luaL_error(L, "%s", lua_tostring(L, -2));
    lua_pop(L, 2);
    lua_replace(L, 1);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

static int l_remove(lua_State *L);
static int l_rename(lua_State *L);

void wb_fs_guard_io(lua_State *L) {
  lua_getglobal(L, "io");
  if (lua_istable(L, -1)) {
    lua_pushcfunction(L, l_io_open);
    lua_setfield(L, -2, "open");
    static const char *const defaults[] = {"input", "output"};
    for (int i = 0; i < 2; i++) {
      lua_getfield(L, -1, defaults[i]);
      lua_pushboolean(L, i == 1);
      lua_pushcclosure(L, l_io_default, 2);
      lua_setfield(L, -2, defaults[i]);
    }
  }
  lua_pop(L, 1);
  lua_getglobal(L, "os");
  if (lua_istable(L, -1)) {
    lua_pushcfunction(L, l_remove);
    lua_setfield(L, -2, "remove");
    lua_pushcfunction(L, l_rename);
    lua_setfield(L, -2, "rename");
  }
  lua_pop(L, 1);
}

/* ---- locks ------------------------------------------------------------------------------- */

typedef struct {
  int fd; /* -1 once closed */
} fs_lock;

static fs_lock *check_lock(lua_State *L) {
  fs_lock *k = luaL_checkudata(L, 1, "wb.fs.lock");
  if (k->fd < 0) luaL_error(L, "wb.fs.lock: closed");
  return k;
}

/* Reads what fd holds from its start into a pushed string (empty on a read error). */
static void push_content(lua_State *L, int fd) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  off_t off = 0;
  for (;;) {
    char *p = luaL_prepbuffsize(&b, 4096);
    ssize_t n = pread(fd, p, 4096, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    luaL_addsize(&b, (size_t)n);
    off += n;
  }
  luaL_pushresult(&b);
}

/* Appends text at the end of fd's file, after a newline when the file does not end with one (a
 * line a killed writer left torn stays apart from it); 0 or an errno. */
static int append_line(int fd, const char *text, size_t len) {
  off_t end = lseek(fd, 0, SEEK_END);
  if (end < 0) return errno;
  char last = '\n';
  if (end > 0 && pread(fd, &last, 1, end - 1) != 1) return errno ? errno : EIO;
  int e = last == '\n' ? 0 : wb_write_all(fd, "\n", 1);
  return e ? e : wb_write_all(fd, text, len);
}

/* Makes fd's file hold exactly text; 0 or an errno. */
static int replace_content(int fd, const char *text, size_t len) {
  if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) < 0) return errno;
  return wb_write_all(fd, text, len);
}

/* -- lock, previous = wb.fs.lock(path, text [, keep]) : takes an exclusive flock on path (created
 * with mode 0666 less the umask), held until lock:close(), collection or the end of the process,
 * however it ends (kill -9 included); previous is what the file held (the last owners' text),
 * then the file holds text (keep: previous followed by text on a line of its own, so that nothing
 * of it is ever lost to a kill between truncating and writing).
 * -- nil, err, errno, holder = wb.fs.lock(...) when another process holds it (errno
 * EWOULDBLOCK; holder is the file's content) or the file cannot be opened. */
static int l_lock(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  int fd = wb_guard_open(path, O_RDWR | O_CREAT, 0666);
  if (fd < 0) return push_write_error(L, errno, path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    wb_push_error(L, e, path);
    push_content(L, fd);
    close(fd);
    return 4;
  }
  fs_lock *k = lua_newuserdatauv(L, sizeof *k, 0);
  k->fd = fd;
  luaL_setmetatable(L, "wb.fs.lock");
  push_content(L, fd);
  int e = lua_toboolean(L, 3) ? append_line(fd, text, len) : replace_content(fd, text, len);
  if (e) {
    close(fd);
    k->fd = -1;
    return wb_push_error(L, e, path);
  }
  return 2;
}

/* -- ok, err, errno = lock:append(text) : adds text at the end of the lock file (no fsync: it
 * must outlive the process, not the machine) */
static int l_lock_append(lua_State *L) {
  fs_lock *k = check_lock(L);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  int e = lseek(k->fd, 0, SEEK_END) < 0 ? errno : wb_write_all(k->fd, text, len);
  if (e) return wb_push_error(L, e, "lock");
  return push_ok(L);
}

/* -- ok, err, errno = lock:reset(text) : the lock file holds exactly text (what earlier owners
 * wrote is dropped: a new run in the directory) */
static int l_lock_reset(lua_State *L) {
  fs_lock *k = check_lock(L);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  int e = replace_content(k->fd, text, len);
  if (e) return wb_push_error(L, e, "lock");
  return push_ok(L);
}

/* -- lock:close() : releases the lock (the file stays); idempotent */
static int l_lock_close(lua_State *L) {
  fs_lock *k = luaL_checkudata(L, 1, "wb.fs.lock");
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  return 0;
}

/* -- s = tostring(lock) : "wb.fs.lock (fd 5)" or "wb.fs.lock (closed)" */
static int l_lock_tostring(lua_State *L) {
  fs_lock *k = luaL_checkudata(L, 1, "wb.fs.lock");
  if (k->fd < 0) lua_pushliteral(L, "wb.fs.lock (closed)");
  else lua_pushfstring(L, "wb.fs.lock (fd %d)", k->fd);
  return 1;
}

static const char *type_name(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "dir";
  if (S_ISLNK(m)) return "link";
  return "other";
}

static int push_stat(lua_State *L, const char *path, int follow) {
  struct stat st;
  if ((follow ? stat(path, &st) : lstat(path, &st)) != 0) return wb_push_error(L, errno, path);
  lua_createtable(L, 0, 6);
  lua_pushstring(L, type_name(st.st_mode));
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st.st_size);
  lua_setfield(L, -2, "size");
  lua_pushnumber(L, (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9);
  lua_setfield(L, -2, "mtime");
  lua_pushinteger(L, (lua_Integer)(st.st_mode & 07777));
  lua_setfield(L, -2, "mode");
  lua_pushinteger(L, (lua_Integer)st.st_ino);
  lua_setfield(L, -2, "ino");
  lua_pushinteger(L, (lua_Integer)st.st_uid);
  lua_setfield(L, -2, "uid");
  return 1;
}

/* -- st, err = wb.fs.stat(path) : {type = "file"|"dir"|"link"|"other", size, mtime, mode, ino, uid} */
static int l_stat(lua_State *L) { return push_stat(L, luaL_checkstring(L, 1), 1); }

/* -- st, err = wb.fs.lstat(path) : like stat, not following a final symlink */
static int l_lstat(lua_State *L) { return push_stat(L, luaL_checkstring(L, 1), 0); }

/* -- hex, size = wb.fs.hash(path [, max_bytes]) : BLAKE2b-256 of a regular file's contents (the
 * content identity wb_content_hash gives), read in pieces; nil, err, errno for anything but a
 * regular file (wb_open_foreign: no FIFO waited on, no device opened) and, with EFBIG, for a file
 * over max_bytes (default 1 GiB). */
static int l_hash(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer max = luaL_optinteger(L, 2, (lua_Integer)1 << 30);
  luaL_argcheck(L, max >= 0, 2, "max_bytes must be >= 0");
  int fd = wb_open_foreign(path);
  if (fd == -2) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: not a regular file", path);
    lua_pushinteger(L, EINVAL);
    return 3;
  }
  if (fd < 0) return wb_push_error(L, errno, path);
  enum { PIECE = 1 << 16 };
  unsigned char *buf = malloc(PIECE);
  if (!buf) {
    close(fd);
    return wb_push_error(L, ENOMEM, path);
  }
  wb_hash h;
  wb_hash_init(&h);
  lua_Integer size = 0;
  int err = 0;
  for (;;) {
    ssize_t n = read(fd, buf, PIECE);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    if ((size += n) > max) {
      err = EFBIG;
      break;
    }
    wb_hash_update(&h, buf, (size_t)n);
  }
  free(buf);
  close(fd);
  if (err == EFBIG) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: larger than %I bytes", path, max);
    lua_pushinteger(L, EFBIG);
    return 3;
  }
  if (err) return wb_push_error(L, err, path);
  char hex[65];
  wb_hash_final(&h, hex);
  lua_pushstring(L, hex);
  lua_pushinteger(L, size);
  return 2;
}

/* -- yes = wb.fs.exists(path) */
static int l_exists(lua_State *L) {
  struct stat st;
  lua_pushboolean(L, lstat(luaL_checkstring(L, 1), &st) == 0);
  return 1;
}

/* -- paths = wb.fs.glob(pattern) : matching paths, sorted; {} when none */
static int l_glob(lua_State *L) {
  const char *pattern = luaL_checkstring(L, 1);
  glob_t g;
  int rc = glob(pattern, 0, NULL, &g);
  lua_newtable(L);
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; i++) {
      lua_pushstring(L, g.gl_pathv[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  if (rc == 0 || rc == GLOB_NOMATCH) globfree(&g);
  if (rc == GLOB_NOSPACE) return luaL_error(L, "glob: out of memory");
  return 1;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* -- names, err = wb.fs.list(dir) : entry names (not . and ..), sorted */
static int l_list(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  if (!d) return wb_push_error(L, errno, path);
  size_t n = 0, cap = 32;
  char **names = malloc(cap * sizeof *names);
  struct dirent *e;
  while (names && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n == cap) {
      char **grown = realloc(names, (cap *= 2) * sizeof *names);
      if (!grown) break;
      names = grown;
    }
    names[n] = strdup(e->d_name);
    if (!names[n]) break;
    n++;
  }
  closedir(d);
  if (!names) return luaL_error(L, "out of memory");
  qsort(names, n, sizeof *names, name_cmp);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    free(names[i]);
  }
  free(names);
  return 1;
}

/* -- path, err = wb.fs.tmpdir([prefix = "wb" [, dir]]) : a new private directory under dir, else
 * $TMPDIR or /tmp */
static int l_tmpdir(lua_State *L) {
  const char *prefix = luaL_optstring(L, 1, "wb");
  const char *base = luaL_optstring(L, 2, getenv("TMPDIR"));
  char buf[PATH_MAX], template[PATH_MAX];
  snprintf(template, sizeof template, "%s/%s.XXXXXX", base && *base ? base : "/tmp", prefix);
  memcpy(buf, template, sizeof buf);
  if (!mkdtemp(buf)) return wb_push_error(L, errno, template);
  lua_pushstring(L, buf);
  return 1;
}

/* -- ok, err = wb.fs.remove(path) : a file, a symlink or an empty directory */
static int l_remove(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char buf[PATH_MAX];
  const char *name;
  int confined;
  int dfd = wb_guard_parent(path, buf, sizeof buf, &name, &confined);
  if (dfd < 0) return wb_push_error(L, errno, path);
  int rc = unlinkat(dfd, name, 0);
  if (rc != 0 && errno == EISDIR) rc = unlinkat(dfd, name, AT_REMOVEDIR);
  int e = errno;
  close(dfd);
  if (rc != 0) return wb_push_error(L, e, path);
  return push_ok(L);
}

/* -- ok, err, errno = wb.fs.reserve(path, bytes) : makes path (a new or regular file of ours, as
 * wb_guard_open finds it) hold at least bytes of allocated disk space (posix_fallocate: blocks
 * reserved, not a sparse size), so that removing it frees that much when the disk is full */
static int l_reserve(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer bytes = luaL_checkinteger(L, 2);
  luaL_argcheck(L, bytes > 0, 2, "must be > 0");
  int fd = wb_guard_open(path, O_WRONLY | O_CREAT, 0600);
  if (fd < 0) return push_write_error(L, errno, path);
  int e = posix_fallocate(fd, 0, (off_t)bytes);
  close(fd);
  if (e) return wb_push_error(L, e, path);
  return push_ok(L);
}

static int remove_tree(int dirfd, const char *name) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) return unlinkat(dirfd, name, 0);
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && remove_tree(fd, e->d_name) != 0)
      rc = -1;
  closedir(d);
  return rc == 0 ? unlinkat(dirfd, name, AT_REMOVEDIR) : -1;
}

/* -- ok, err = wb.fs.remove_tree(path) : removes path recursively without following symlinks;
 * a missing path is not an error */
static int l_remove_tree(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (strcmp(path, "/") == 0 || *path == 0) return luaL_argerror(L, 1, "refusing to remove '/'");
  char buf[PATH_MAX];
  const char *name;
  int confined;
  int dfd = wb_guard_parent(path, buf, sizeof buf, &name, &confined);
  if (dfd < 0) return errno == ENOENT ? push_ok(L) : wb_push_error(L, errno, path);
  int rc = remove_tree(dfd, name);
  int e = errno;
  close(dfd);
  if (rc != 0) return wb_push_error(L, e, path);
  return push_ok(L);
}

/* -- ok, err = wb.fs.rename(from, to) */
static int l_rename(lua_State *L) {
  const char *from = luaL_checkstring(L, 1), *to = luaL_checkstring(L, 2);
  if (wb_guard_rename(from, to) != 0) return wb_push_error(L, errno, from);
  return push_ok(L);
}

/* -- ok, err = wb.fs.symlink(target, link) : creates or atomically replaces the symlink `link` */
static int l_symlink(lua_State *L) {
  const char *target = luaL_checkstring(L, 1), *link = luaL_checkstring(L, 2);
  char buf[PATH_MAX], tmp[NAME_MAX + 1];
  const char *name;
  int confined;
  int dfd = wb_guard_parent(link, buf, sizeof buf, &name, &confined);
  if (dfd < 0) return wb_push_error(L, errno, link);
  int e = 0;
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", name, (long)getpid()) >= (int)sizeof tmp) e = ENAMETOOLONG;
  if (!e) unlinkat(dfd, tmp, 0);
  if (!e && symlinkat(target, dfd, tmp) != 0) e = errno;
  else if (!e && renameat(dfd, tmp, dfd, name) != 0) {
    e = errno;
    unlinkat(dfd, tmp, 0);
  }
  close(dfd);
  if (e) return wb_push_error(L, e, link);
  return push_ok(L);
}

/* -- target, err = wb.fs.readlink(path) */
static int l_readlink(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char buf[PATH_MAX];
  ssize_t n = readlink(path, buf, sizeof buf);
  if (n < 0) return wb_push_error(L, errno, path);
  lua_pushlstring(L, buf, (size_t)n);
  return 1;
}

/* -- abs, err = wb.fs.realpath(path) */
static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char buf[PATH_MAX];
  if (!realpath(path, buf)) return wb_push_error(L, errno, path);
  lua_pushstring(L, buf);
  return 1;
}

/* -- dir = wb.fs.cwd() */
static int l_cwd(lua_State *L) {
  char buf[PATH_MAX];
  if (!getcwd(buf, sizeof buf)) return wb_push_error(L, errno, "getcwd");
  lua_pushstring(L, buf);
  return 1;
}

static const luaL_Reg functions[] = {
    {"confine", l_confine}, {"cwd", l_cwd},         {"exists", l_exists},   {"glob", l_glob},       {"hash", l_hash},         {"list", l_list},
    {"lock", l_lock},       {"lstat", l_lstat},     {"mkdir", l_mkdir},     {"mkdir_p", l_mkdir_p}, {"read", l_read},         {"readlink", l_readlink},
    {"realpath", l_realpath}, {"remove", l_remove}, {"reserve", l_reserve}, {"remove_tree", l_remove_tree},
    {"rename", l_rename},   {"stat", l_stat},       {"symlink", l_symlink},   {"tmpdir", l_tmpdir},
    {"write", l_write},     {NULL, NULL}};

static const luaL_Reg lock_methods[] = {
    {"append", l_lock_append}, {"close", l_lock_close}, {"reset", l_lock_reset}, {NULL, NULL}};

int luaopen_wb_fs(lua_State *L) {
  wb_new_class(L, "wb.fs.lock", lock_methods, NULL, l_lock_close, l_lock_tostring);
  luaL_newlib(L, functions);
  return 1;
}
