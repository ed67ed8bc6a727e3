/* Which files the users of a profiled process tree could read (core/sym_access.c), so that wb,
 * reading as root, names nothing from a file those users could not have read themselves
 * (docs/security.md, "Reading with the profiled user's rights"). Lua-free; one thread at a time
 * per wb_users. */
#pragma once
#include <stdint.h>
#include <sys/types.h>

#include "proctree.h"

#define WB_USER_GROUPS 64 /* supplementary groups kept per user; more are dropped (fewer rights) */
#define WB_USERS_MAX 16   /* users kept; past them the last becomes a stranger (see below) */

/* A user as the kernel checks a read: file-system ids, supplementary groups. */
typedef struct wb_user {
  uint32_t uid, gid;
  uint32_t ngroups;
  uint32_t groups[WB_USER_GROUPS];
  int reads_all; /* CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH in effect: every file is readable */
} wb_user;

typedef struct wb_user_verdict wb_user_verdict;

/* A file a user could not read, among those wb read to name frames. */
enum { WB_DENIED_FILE, WB_DENIED_SYMBOLS, WB_DENIED_DWARF };
typedef struct wb_denial {
  char *path;   /* the file as a process mapped it */
  uint32_t uid; /* one user who could not read it */
  int part;     /* WB_DENIED_FILE: the file; _SYMBOLS, _DWARF: the separate debug file its
                   symbols, or its DWARF, would come from */
} wb_denial;

/* The users seen so far and the verdicts on files; zero-initialised. */
typedef struct wb_users {
  wb_user u[WB_USERS_MAX];
  size_t n;
  wb_user_verdict *v; /* per (path, file): cleared when a user is added */
  size_t nv, capv;
  unsigned gen; /* changes whenever a user is added */
  wb_proctree tree;
  pid_t *seen; /* the processes observed so far, sorted */
  size_t nseen, capseen, turn;
  wb_denial *denied; /* once per path and part */
  size_t ndenied, capdenied;
} wb_users;

/* Adds the users process pid runs as, from /proc/PID/status: its file-system ids and its real
 * ids (a set-uid program's caller: both must be able to read a file), the supplementary groups,
 * and whether its effective capabilities read every file (only in wb's user namespace: a
 * container's root reads its own files only). A status that cannot be parsed adds a stranger.
 * 0, or -1 when the process is gone. */
int wb_users_observe(wb_users *s, pid_t pid);

/* wb_users_observe for root and its living descendants: every one not observed before, then as
 * many of the others as WB_USERS_BUDGET allows, in turns (a process may change its ids: each is
 * read again every few calls). Returns how many were read. */
#define WB_USERS_BUDGET 8
int wb_users_observe_tree(wb_users *s, pid_t root);

/* Adds one user (a copy); a user already known is not added twice. With WB_USERS_MAX users
 * known, the last is replaced by a stranger: only what every user may read passes. */
void wb_users_add(wb_users *s, const wb_user *u);

/* Adds a user known by its real ids only (a BPF sample's): no supplementary groups, and reading
 * all when uid is 0; nothing when a user of these ids was observed (with its groups). */
void wb_users_add_ids(wb_users *s, uint32_t uid, uint32_t gid);

/* Adds a user who owns no file and is in no group: only what every user may read passes. */
void wb_users_add_stranger(wb_users *s);

/* 1 when every user of s could open path (as the kernel would let them: mode, ACL, every
 * directory on the way, a link's protections) and would find there the file dev/ino that wb read;
 * 0 otherwise, with *uid the user who could not. Always 1 when wb itself reads with no more than
 * its own rights (not root, no CAP_DAC_*), or when every user reads all. Each open runs on a
 * short-lived thread of its own that takes the user's ids (setfsuid, setfsgid, setgroups act on
 * the calling thread only, at the system call level) and drops the DAC capabilities; a thread
 * that cannot take them counts as a refusal. Verdicts are kept per path and file. */
int wb_users_may_read(wb_users *s, const char *path, dev_t dev, ino_t ino, uint32_t *uid);

/* Whether the frames of path, the ELF file e of core/sym.h that a process maps, may be named
 * from e: every user may read the file wb read there, and the debug file e's symbols came from
 * (wb_users_may_read). A refusal is noted in s->denied. */
struct wb_elf;
int wb_users_may_name(wb_users *s, const char *path, const struct wb_elf *e);

/* Whether inline frames and source lines of path may come from o's DWARF (core/unwind.h): every
 * user may read the separate debug file it comes from (none: yes). A refusal is noted. */
struct wb_dwobj;
int wb_users_may_inline(wb_users *s, const char *path, struct wb_dwobj *o);

void wb_users_free(wb_users *s);
