/* The taskstats exit listener (see core/exitstats.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exitstats.h"

#define RCVBUF (8 << 20) /* about 6000 exits between two drains */

typedef struct exit_rec {
  uint64_t seq;
  pid_t tgid, ppid;
  int64_t hiwater_kb;
  int64_t run_delay_ns, nivcsw;
  int64_t etime_us;
} exit_rec;

static int sock = -2; /* -2: not tried yet */
static exit_rec *ring;
static uint64_t seq;      /* exits recorded so far */
static uint64_t lost_at;  /* exits after this one may be missing (the socket overflowed) */

typedef struct nlmsg {
  struct nlmsghdr n;
  struct genlmsghdr g;
  char attrs[256];
} nlmsg;

static void put_attr(nlmsg *m, int type, const void *data, size_t len) {
  struct nlattr *a = (struct nlattr *)((char *)m + NLMSG_ALIGN(m->n.nlmsg_len));
  a->nla_type = (uint16_t)type;
  a->nla_len = (uint16_t)(NLA_HDRLEN + len);
  memcpy((char *)a + NLA_HDRLEN, data, len);
  m->n.nlmsg_len = NLMSG_ALIGN(m->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void start(nlmsg *m, uint16_t type, uint8_t cmd, uint16_t flags) {
  memset(m, 0, sizeof *m);
  m->n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
  m->n.nlmsg_type = type;
  m->n.nlmsg_flags = NLM_F_REQUEST | flags;
  m->g.cmd = cmd;
  m->g.version = 1;
}

/* The first attribute of a generic netlink message's payload, and the bytes they take. */
static struct nlattr *first_attr(struct nlmsghdr *h, int *left) {
  *left = (int)h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
  return (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
}

static struct nlattr *next_attr(struct nlattr *a, int *left) {
  *left -= NLA_ALIGN(a->nla_len);
  return (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
}

static int attr_ok(const struct nlattr *a, int left) {
  return left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= left;
}

/* Sends m and reads one reply into buf; its length, or -1. */
static ssize_t ask(int fd, nlmsg *m, char *buf, size_t len) {
  if (send(fd, m, m->n.nlmsg_len, 0) < 0) return -1;
  ssize_t n;
  do n = recv(fd, buf, len, 0);
  while (n < 0 && errno == EINTR);
  return n;
}

/* The TASKSTATS family's id, or -1. */
static int family_id(int fd, char *buf, size_t len) {
  nlmsg m;
  start(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
  put_attr(&m, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME, sizeof TASKSTATS_GENL_NAME);
  ssize_t n = ask(fd, &m, buf, len);
  struct nlmsghdr *h = (struct nlmsghdr *)buf;
  if (n < (ssize_t)NLMSG_LENGTH(GENL_HDRLEN) || !NLMSG_OK(h, n) || h->nlmsg_type == NLMSG_ERROR) return -1;
  int left;
  for (struct nlattr *a = first_attr(h, &left); attr_ok(a, left); a = next_attr(a, &left))
    if (a->nla_type == CTRL_ATTR_FAMILY_ID) return *(uint16_t *)((char *)a + NLA_HDRLEN);
  return -1;
}

static int open_listener(void) {
  char buf[4096];
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_GENERIC);
  if (fd < 0) return -1;
  struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
  int size = RCVBUF, fam = -1;
  struct timeval tv = {.tv_sec = 1};
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
    goto fail;
  int flags = fcntl(fd, F_GETFL); /* blocking (with a timeout) while asking, non-blocking after */
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if ((fam = family_id(fd, buf, sizeof buf)) < 0) goto fail;
  nlmsg m;
  start(&m, (uint16_t)fam, TASKSTATS_CMD_GET, NLM_F_ACK);
  char mask[32];
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  snprintf(mask, sizeof mask, "0-%ld", cpus > 1 ? cpus - 1 : 0);
  put_attr(&m, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, mask, strlen(mask) + 1);
  /* the reply: the ACK, after any exit message queued once the listener was linked (an exit in
   * between); EPERM without CAP_NET_ADMIN, EINVAL in a user or pid namespace of its own */
  ssize_t n = ask(fd, &m, buf, sizeof buf);
  struct nlmsghdr *h = (struct nlmsghdr *)buf;
  for (int tries = 0; n >= (ssize_t)NLMSG_HDRLEN && NLMSG_OK(h, n) && h->nlmsg_type == fam && tries < 64; tries++) {
    do n = recv(fd, buf, sizeof buf, 0);
    while (n < 0 && errno == EINTR);
  }
  if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR ||
      ((struct nlmsgerr *)NLMSG_DATA(h))->error != 0)
    goto fail;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  if (!(ring = calloc(WB_EXITS_RING, sizeof *ring))) goto fail;
  return fd;
fail:
  close(fd);
  return -1;
}

int wb_exits_fd(void) {
  if (sock == -2) sock = open_listener();
  return sock;
}

static void add(const struct taskstats *t, size_t len) {
  exit_rec *r = &ring[seq % WB_EXITS_RING];
  r->seq = ++seq;
  r->ppid = (pid_t)t->ac_ppid;
  /* ac_tgid (version 13): a thread's exit is its process's */
  r->tgid = len >= offsetof(struct taskstats, ac_tgid) + sizeof t->ac_tgid && t->ac_tgid ? (pid_t)t->ac_tgid
                                                                                       : (pid_t)t->ac_pid;
  r->hiwater_kb = (int64_t)t->hiwater_rss;
  r->run_delay_ns = (int64_t)t->cpu_delay_total;
  r->nivcsw = (int64_t)t->nivcsw;
  r->etime_us = (int64_t)t->ac_etime;
}

/* Records the per-thread exits of one message (its TASKSTATS_TYPE_AGGR_PID attribute). */
static void parse(struct nlmsghdr *h) {
  if (h->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN)) return;
  int left;
  for (struct nlattr *a = first_attr(h, &left); attr_ok(a, left); a = next_attr(a, &left)) {
    if ((a->nla_type & NLA_TYPE_MASK) != TASKSTATS_TYPE_AGGR_PID) continue;
    int in = a->nla_len - NLA_HDRLEN;
    for (struct nlattr *b = (struct nlattr *)((char *)a + NLA_HDRLEN); attr_ok(b, in); b = next_attr(b, &in)) {
      size_t len = (size_t)b->nla_len - NLA_HDRLEN;
      if (b->nla_type == TASKSTATS_TYPE_STATS && len >= offsetof(struct taskstats, hiwater_rss) + 8) {
        struct taskstats t = {0};
        memcpy(&t, (char *)b + NLA_HDRLEN, len < sizeof t ? len : sizeof t);
        add(&t, len);
      }
    }
  }
}

uint64_t wb_exits_drain(void) {
  if (wb_exits_fd() < 0) return 0;
  static char buf[64 * 1024] __attribute__((aligned(8)));
  for (;;) {
    ssize_t n = recv(sock, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOBUFS) { /* exits were dropped: the next one recorded may follow a gap */
      lost_at = seq + 1;
      continue;
    }
    if (n <= 0) break;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n))
      if (h->nlmsg_type != NLMSG_ERROR && h->nlmsg_type != NLMSG_DONE) parse(h);
  }
  return seq;
}

/* Open addressing over pids (never 0), sized for the window. */
typedef struct pidset {
  pid_t *slot;
  size_t mask;
} pidset;

static int pidset_has(const pidset *s, pid_t p) {
  for (size_t i = (size_t)p * 2654435761u & s->mask; s->slot[i]; i = (i + 1) & s->mask)
    if (s->slot[i] == p) return 1;
  return 0;
}

static void pidset_add(pidset *s, pid_t p) {
  size_t i = (size_t)p * 2654435761u & s->mask;
  while (s->slot[i] && s->slot[i] != p) i = (i + 1) & s->mask;
  s->slot[i] = p;
}

int wb_exits_tree(pid_t pid, uint64_t since, wb_exit_tree *out) {
  if (wb_exits_drain() <= since || lost_at > since || seq - since > WB_EXITS_RING) return -1;
  size_t window = (size_t)(seq - since), size = 16;
  while (size < 2 * window + 2) size *= 2;
  pidset tree = {calloc(size, sizeof(pid_t)), size - 1};
  if (!tree.slot) return -1;
  pidset_add(&tree, pid);
  wb_exit_tree t = {.own_kb = -1, .tree_kb = -1, .etime_us = -1};
  /* newest first: a process's children that it reaped exited before it did */
  for (uint64_t k = seq; k > since; k--) {
    const exit_rec *r = &ring[(k - 1) % WB_EXITS_RING];
    if (r->tgid == pid) {
      if (r->hiwater_kb > t.own_kb) t.own_kb = r->hiwater_kb;
      if (r->etime_us > t.etime_us) t.etime_us = r->etime_us;
    } else if (t.threads > 0 && pidset_has(&tree, r->ppid)) {
      pidset_add(&tree, r->tgid);
    } else {
      continue;
    }
    t.threads++;
    if (r->hiwater_kb > t.tree_kb) t.tree_kb = r->hiwater_kb;
    t.runq_ns += r->run_delay_ns;
    t.nivcsw += r->nivcsw;
  }
  free(tree.slot);
  if (t.threads == 0) return -1;
  if (t.own_kb <= 0) t.own_kb = t.tree_kb = -1; /* 0: a kernel without CONFIG_TASK_XACCT */
  *out = t;
  return 0;
}
