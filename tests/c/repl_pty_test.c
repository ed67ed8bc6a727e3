/* `wb repl` driven through a pseudo-terminal (and once through pipes): expressions, multi-line
 * input, errors, Ctrl-C while running and at the prompt, Ctrl-D, SIGTERM, the history file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wb_c.h"

#define TIMEOUT_MS 10000

static int passed, failed;

static const char *wb_bin(void) {
  const char *bin = getenv("WB_BIN");
  return bin && *bin ? bin : "build/wb";
}

/* A running `wb repl` on a pty: everything it printed, and how far the expectations got. */
struct session {
  pid_t pid;
  int fd;
  char *out;
  size_t len, cap, mark;
  int eof;
};

static void start(struct session *s, const char *home) {
  memset(s, 0, sizeof *s);
  struct winsize ws = {.ws_row = 40, .ws_col = 200};
  s->pid = forkpty(&s->fd, NULL, NULL, &ws);
  if (s->pid < 0) {
    perror("forkpty");
    exit(1);
  }
  if (s->pid == 0) {
    setenv("HOME", home, 1);
    setenv("TERM", "xterm", 1);
    setenv("INPUTRC", "/dev/null", 1);
    execl(wb_bin(), wb_bin(), "repl", (char *)NULL);
    perror("exec");
    _exit(127);
  }
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads more output within the deadline; 0 at the deadline or at EOF. */
static int read_more(struct session *s, long deadline) {
  if (s->eof) return 0;
  long left = deadline - now_ms();
  if (left <= 0) return 0;
  struct pollfd p = {.fd = s->fd, .events = POLLIN};
  int n = poll(&p, 1, (int)left);
  if (n < 0 && errno == EINTR) return 1;
  if (n <= 0) return 0;
  if (s->cap - s->len < 4096) {
    s->cap = s->cap ? s->cap * 2 : 65536;
    s->out = realloc(s->out, s->cap + 1);
    if (!s->out) exit(1);
  }
  ssize_t r = read(s->fd, s->out + s->len, s->cap - s->len);
  if (r <= 0) { /* EIO once the child has closed the terminal */
    s->eof = 1;
    return 0;
  }
  s->len += (size_t)r;
  s->out[s->len] = '\0';
  return 1;
}

/* Waits until `want` appears after the mark; moves the mark past it. */
static int expect(struct session *s, const char *want) {
  long deadline = now_ms() + TIMEOUT_MS;
  for (;;) {
    if (s->out) {
      char *hit = memmem(s->out + s->mark, s->len - s->mark, want, strlen(want));
      if (hit) {
        s->mark = (size_t)(hit - s->out) + strlen(want);
        return 1;
      }
    }
    if (!read_more(s, deadline)) return 0;
  }
}

/* Waits for a whole output line `want` after the mark; moves the mark past it. */
static int expect_line(struct session *s, const char *want) {
  char line[256];
  snprintf(line, sizeof line, "%s\r\n", want);
  for (;;) {
    if (!expect(s, line)) return 0;
    size_t at = s->mark - strlen(line);
    if (at == 0 || s->out[at - 1] == '\n' || s->out[at - 1] == '\r') return 1;
    s->mark = at + 1;
  }
}

static void send(struct session *s, const char *text) {
  size_t len = strlen(text);
  while (len > 0) {
    ssize_t w = write(s->fd, text, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    text += w;
    len -= (size_t)w;
  }
}

/* Reads to EOF and reaps the child; returns its wait status, or -1 if it did not exit. */
static int finish(struct session *s) {
  long deadline = now_ms() + TIMEOUT_MS;
  int status = -1;
  while (!s->eof && read_more(s, deadline)) {
  }
  while (now_ms() < deadline) {
    pid_t r = waitpid(s->pid, &status, WNOHANG);
    if (r == s->pid) break;
    status = -1;
    struct timespec pause = {0, 10 * 1000000};
    nanosleep(&pause, NULL);
  }
  if (status == -1) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
  }
  close(s->fd);
  free(s->out);
  return status;
}

/* Prints the output since the last mark as the failure detail (control characters escaped). */
static void show_recent(const struct session *s) {
  size_t from = s->mark, to = s->len;
  if (to - from > 600) from = to - 600;
  printf("    output: \"");
  for (size_t i = from; i < to; i++) {
    unsigned char c = (unsigned char)s->out[i];
    if (c == '\n')
      printf("\\n");
    else if (c == '\r')
      printf("\\r");
    else if (c < 32 || c == 127)
      printf("\\x%02x", c);
    else
      putchar(c);
  }
  printf("\"\n");
}

static void result(int ok, const char *name, const struct session *s) {
  printf("%s - %s\n", ok ? "ok" : "not ok", name);
  if (ok) {
    passed++;
  } else {
    failed++;
    if (s) show_recent(s);
  }
}

/* True when the output between from and to is only line breaks and escape sequences. */
static int nothing_shown(const struct session *s, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) {
    char c = s->out[i];
    if (c == '\x1b' && i + 1 < to && s->out[i + 1] == '[') {
      for (i += 2; i < to && (s->out[i] < 0x40 || s->out[i] > 0x7e); i++) {
      }
    } else if (c != '\r' && c != '\n') {
      return 0;
    }
  }
  return 1;
}

/* Sends `input` and checks that the output line `want` then a fresh primary prompt follow. */
static void step(struct session *s, const char *name, const char *input, const char *want) {
  send(s, input);
  int ok = expect_line(s, want) && expect(s, "wb> ");
  result(ok, name, s);
}

static void session_one(const char *home) {
  struct session s;
  start(&s, home);
  result(expect(&s, "Ctrl-D to exit") && expect(&s, "wb> "), "banner and prompt", &s);

  step(&s, "expression is printed", "1+1\r", "2");

  send(&s, "function f(x)\r");
  int ok = expect(&s, "wb>> ");
  send(&s, "return x*2\r");
  ok = ok && expect(&s, "wb>> ");
  send(&s, "end\r");
  ok = ok && expect(&s, "wb> ");
  send(&s, "=f(21)\r");
  ok = ok && expect_line(&s, "42") && expect(&s, "wb> ");
  result(ok, "multi-line function definition", &s);

  step(&s, "=wb.version prints the version", "=wb.version\r", wb_version());

  step(&s, "table preview", "{a = 1, b = {2}, 'x'}\r", "{\"x\", a = 1, b = {...}}");

  step(&s, "runtime error is reported", "error('bo' .. 'om')\r", "stdin:1: boom");
  step(&s, "REPL works after a runtime error", "=2+3\r", "5");

  step(&s, "syntax error is reported", "x = = 1\r", "stdin:1: unexpected symbol near '='");
  step(&s, "REPL works after a syntax error", "=3+4\r", "7");

  send(&s, "while true do end\r");
  ok = expect(&s, "do end\r\n"); /* the line was accepted: the loop is running */
  send(&s, "\x03");
  ok = ok && expect(&s, "interrupted") && expect(&s, "wb> ");
  result(ok, "Ctrl-C interrupts a running statement", &s);
  step(&s, "REPL works after an interrupt", "=7*6\r", "42");

  send(&s, "foo = (1 +");
  ok = expect(&s, "(1 +");
  send(&s, "\x03");
  ok = ok && expect(&s, "^C") && expect(&s, "wb> ");
  result(ok, "Ctrl-C at the prompt gives a fresh prompt", &s);
  step(&s, "the half-typed line was discarded", "=6*7\r", "42");

  send(&s, "t = {\r");
  ok = expect(&s, "wb>> ");
  send(&s, "\x03");
  ok = ok && expect(&s, "wb> ");
  result(ok, "Ctrl-C at a continuation prompt", &s);
  step(&s, "the pending lines were discarded", "=1+2\r", "3");

  send(&s, "y = 40\r");
  ok = expect(&s, "y = 40");
  size_t from = s.mark;
  ok = ok && expect(&s, "wb> ") && nothing_shown(&s, from, s.mark - strlen("wb> "));
  result(ok, "a statement without results prints nothing", &s);
  step(&s, "a repeated line", "=y+2\r", "42");
  step(&s, "a repeated line again", "=y+2\r", "42");

  send(&s, "g = function()\r");
  ok = expect(&s, "wb>> ");
  send(&s, "return 5\r");
  ok = ok && expect(&s, "wb>> ");
  send(&s, "end\r");
  ok = ok && expect(&s, "wb> ");
  result(ok, "multi-line statement as last entry", &s);

  send(&s, "\x04");
  int status = finish(&s);
  result(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "Ctrl-D exits with status 0",
         NULL);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 20);
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void check_history(const char *home) {
  char path[4096];
  snprintf(path, sizeof path, "%s/.wb_history", home);
  char *h = read_file(path);
  result(h != NULL, "~/.wb_history exists", NULL);
  if (!h) return;
  result(strstr(h, "1+1\n") && strstr(h, "=f(21)\n") && strstr(h, "=wb.version\n") &&
             strstr(h, "while true do end\n"),
         "history holds the entered statements", NULL);
  result(strstr(h, "function f(x)\nreturn x*2\nend\n") != NULL, "a multi-line statement is kept whole",
         NULL);
  result(!strstr(h, "foo = (1 +") && !strstr(h, "t = {"), "discarded input is not in the history",
         NULL);
  result(count(h, "=y+2\n") == 1, "no duplicate consecutive entries", NULL);
  free(h);
}

/* A new session recalls the last (multi-line) entry with Ctrl-P; SIGTERM then ends it. */
static void session_two(const char *home) {
  struct session s;
  start(&s, home);
  int ok = expect(&s, "wb> ");
  send(&s, "\x10\r");
  ok = ok && expect(&s, "wb> ");
  send(&s, "=g()\r");
  ok = ok && expect_line(&s, "5") && expect(&s, "wb> ");
  result(ok, "history is loaded; a multi-line entry is recalled whole", &s);

  kill(s.pid, SIGTERM);
  int status = finish(&s);
  result(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM,
         "SIGTERM at the prompt exits with 143", NULL);
}

static char *read_fd(int fd) {
  char *buf = malloc(65536);
  ssize_t n = buf ? pread(fd, buf, 65535, 0) : -1;
  if (buf) buf[n > 0 ? n : 0] = '\0';
  close(fd);
  return buf;
}

/* Runs `wb repl` with `input` on a pipe; returns the wait status, stdout and stderr. */
static int run_piped(const char *input, const char *home, char **out, char **err) {
  char out_path[] = "/tmp/wb_repl_out_XXXXXX", err_path[] = "/tmp/wb_repl_err_XXXXXX";
  int ofd = mkstemp(out_path), efd = mkstemp(err_path);
  int in[2];
  if (ofd < 0 || efd < 0 || pipe(in) != 0) {
    perror("run_piped");
    exit(1);
  }
  unlink(out_path);
  unlink(err_path);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(ofd, 1);
    dup2(efd, 2);
    close(in[1]);
    setenv("HOME", home, 1);
    execl(wb_bin(), wb_bin(), "repl", (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  ssize_t w = write(in[1], input, strlen(input));
  (void)w;
  close(in[1]);
  int status = -1;
  waitpid(pid, &status, 0);
  *out = read_fd(ofd);
  *err = read_fd(efd);
  return status;
}

static void piped(const char *home) {
  char *out, *err;
  int status = run_piped("=1+2\n", home, &out, &err);
  result(WIFEXITED(status) && WEXITSTATUS(status) == 0 && out && strcmp(out, "3\n") == 0,
         "piped input: =1+2 prints 3, exit 0", NULL);
  free(out);
  free(err);
  status = run_piped("error('x')\n=1, 'a', nil\nx = 1\n=x\n", home, &out, &err);
  result(WIFEXITED(status) && WEXITSTATUS(status) == 0 && out && err &&
             strcmp(out, "1\ta\tnil\n1\n") == 0 && strcmp(err, "stdin:1: x\n") == 0,
         "piped input: error on stderr, values tab-separated", NULL);
  free(out);
  free(err);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  char home[] = "/tmp/wb_repl_home_XXXXXX";
  if (!mkdtemp(home)) {
    perror("mkdtemp");
    return 1;
  }
  session_one(home);
  check_history(home);
  session_two(home);
  piped(home);
  char path[4096];
  snprintf(path, sizeof path, "%s/.wb_history", home);
  unlink(path);
  rmdir(home);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
