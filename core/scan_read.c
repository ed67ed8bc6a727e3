/* The log scanner's reading (see core/scan.h): blocks from a file descriptor or a gzip stream,
 * segment boundaries, and byte ranges of a large file scanned by threads. A range owns the
 * segments that start in it; its thread reads past the range's end to finish the last one. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "scan.h"
#include "internal.h"

#define BLOCK (1 << 20)
#define SCAN_MAX_THREADS 8
#define MIN_RANGE (16 << 20)      /* bytes per thread, at least, when threads = 0 */
#define MIN_RANGE_ASKED (1 << 20) /* ... when the caller asked for a number of threads */
#define PAD 64 /* zeroed bytes after the buffer: the matcher reads a little past a segment */

/* The first '\n' or '\r' in [p, end), or NULL. */
static const char *find_sep_sse2(const char *p, const char *end) {
#ifdef __SSE2__
  const __m128i nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
  for (; end - p >= 32; p += 32) {
    __m128i a = _mm_loadu_si128((const __m128i *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
    unsigned ma = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(a, nl), _mm_cmpeq_epi8(a, cr)));
    unsigned mb = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(b, nl), _mm_cmpeq_epi8(b, cr)));
    unsigned m = ma | (mb << 16);
    if (m) return p + __builtin_ctz(m);
  }
#endif
  for (; p < end; p++)
    if (*p == '\n' || *p == '\r') return p;
  return NULL;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static const char *find_sep_avx2(const char *p, const char *end) {
  const __m256i nl = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r');
  for (; end - p >= 64; p += 64) {
    __m256i a = _mm256_loadu_si256((const __m256i *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(p + 32));
    uint64_t ma = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(a, nl), _mm256_cmpeq_epi8(a, cr)));
    uint64_t mb = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(b, nl), _mm256_cmpeq_epi8(b, cr)));
    uint64_t m = ma | (mb << 32);
    if (m) return p + __builtin_ctzll(m);
  }
  return find_sep_sse2(p, end);
}
#endif

static const char *(*find_sep)(const char *, const char *) = find_sep_sse2;

typedef struct worker {
  const scan_spec *spec;
  int fd;
  gzFile gz;
  int seekable;
  int64_t begin, limit, pos; /* limit: INT64_MAX for the last range */
  scanner sc;
  int64_t lines, truncated, bytes;
  int err;
  pthread_t tid;
} worker;

static ssize_t source_read(worker *w, char *buf, size_t n) {
  if (w->gz) {
    int zerr = Z_OK, k = gzread(w->gz, buf, (unsigned)n);
    if (k == 0) gzerror(w->gz, &zerr); /* a truncated stream reads as its end, with Z_BUF_ERROR */
    if (k < 0 || zerr != Z_OK) {
      errno = wb_signal_pending() ? EINTR : EIO;
      return -1;
    }
    return k;
  }
  for (;;) {
    ssize_t r = w->seekable ? pread(w->fd, buf, n, w->pos) : read(w->fd, buf, n);
    if (r < 0 && errno == EINTR && !wb_signal_pending()) continue;
    if (r > 0) w->pos += r;
    return r;
  }
}

static int is_sep(char c) { return c == '\n' || c == '\r'; }

/* Applies the rules to the segment [p, q) unless it is longer than max_line. */
static void segment(worker *w, const char *p, const char *q) {
  if ((size_t)(q - p) > w->spec->max_line) w->truncated++;
  else wb_scan_segment(&w->sc, p, q);
}

/* Thread body: scans a range read in blocks (pread), or a stream (read, gzread). */
static void *scan_range(void *arg) {
  worker *w = arg;
  scanner *sc = &w->sc;
  size_t cap = BLOCK, len = 0;
  char *buf = malloc(cap + PAD);
  if (!buf) {
    w->err = ENOMEM;
    return NULL;
  }
  memset(buf + cap, 0, PAD);
  int64_t base = w->begin; /* file offset of buf[0] */
  int skipping = 0, eof = 0, done = 0, any = 0;
  char last = '\n';
  if (w->begin > 0) { /* the segment running into the range belongs to the previous one */
    char c = '\n';
    if (pread(w->fd, &c, 1, w->begin - 1) != 1) w->err = errno ? errno : EIO;
    skipping = !is_sep(c);
  }
  while (!eof && !done && !w->err) {
    if (wb_signal_pending()) {
      w->err = EINTR;
      break;
    }
    ssize_t r = source_read(w, buf + len, cap - len);
    if (r < 0) {
      w->err = errno ? errno : EIO;
      break;
    }
    eof = r == 0;
    if (r > 0) {
      any = 1;
      last = buf[len + (size_t)r - 1];
    }
    len += (size_t)r;
    buf[len] = 0; /* a number at the end of the data stops here */
    const char *p = buf, *end = buf + len;
    while (p < end) {
      if (skipping) {
        const char *q = find_sep(p, end);
        if (!q) {
          p = end;
          break;
        }
        if (*q == '\n' && base + (q - buf) < w->limit) w->lines++;
        skipping = 0;
        p = q + 1;
        continue;
      }
      if (base + (p - buf) >= w->limit) {
        done = 1;
        break;
      }
      if (!sc->first[(unsigned char)*p]) {
        skipping = 1;
        continue;
      }
      const char *q = find_sep(p, end);
      if (!q) {
        if (eof) segment(w, p, end), p = end;
        else if (!wb_scan_may_match(sc, p, (size_t)(end - p))) skipping = 1, p = end;
        break;
      }
      segment(w, p, q);
      if (*q == '\n' && base + (q - buf) < w->limit) w->lines++;
      p = q + 1;
    }
    if (sc->err) w->err = sc->err;
    size_t keep = (size_t)(end - p);
    if (keep == cap && !done) { /* one candidate segment fills the buffer */
      char *bigger = cap <= w->spec->max_line ? realloc(buf, cap * 2 + PAD) : NULL;
      if (bigger) {
        p = buf = bigger;
        cap *= 2;
        memset(buf + cap, 0, PAD);
      } else if (cap <= w->spec->max_line) {
        w->err = ENOMEM;
      } else {
        w->truncated++;
        skipping = 1;
        p = end;
        keep = 0;
      }
    }
    memmove(buf, p, keep);
    base += p - buf;
    len = keep;
  }
  if (eof && any && last != '\n' && w->limit == INT64_MAX) w->lines++;
  int64_t reached = base + (int64_t)len;
  w->bytes = (reached < w->limit ? reached : w->limit) - w->begin;
  free(buf);
  return NULL;
}

static int fail(char *err, size_t errlen, const char *path, int e) {
  snprintf(err, errlen, "%s: %s", path, wb_strerror(e));
  return e;
}

static void free_results(scan_result *res, int nrules) {
  for (int i = 0; res && i < nrules; i++) wb_scan_result_free(&res[i]);
  free(res);
}

void wb_scan_out_free(scan_out *out) {
  free_results(out->results, out->nrules);
  out->results = NULL;
}

static void worker_free(worker *w, int nrules) {
  free_results(w->sc.res, nrules);
  free(w->sc.tags);
  free(w->sc.recent);
  w->sc.res = NULL;
  w->sc.tags = NULL;
  w->sc.recent = NULL;
}

static int worker_init(worker *w, const scan_spec *spec) {
  w->spec = spec;
  w->sc.spec = spec;
  w->sc.res = calloc((size_t)spec->nrules + 1, sizeof *w->sc.res);
  if (!w->sc.res) return ENOMEM;
  for (int i = 0; i < spec->nrules; i++) wb_scan_result_init(&w->sc.res[i], &spec->rules[i]);
  return wb_scan_scanner_init(&w->sc);
}

/* Runs the workers, one thread each (the caller's thread takes the first); 0 or the first error. */
static int run_workers(worker *ws, int n) {
  for (int i = 1; i < n; i++)
    if (pthread_create(&ws[i].tid, NULL, scan_range, &ws[i]) != 0) ws[i].tid = 0;
  scan_range(&ws[0]);
  for (int i = 1; i < n; i++) {
    if (ws[i].tid) pthread_join(ws[i].tid, NULL);
    else scan_range(&ws[i]);
  }
  for (int i = 0; i < n; i++)
    if (ws[i].err) return ws[i].err;
  return 0;
}

/* How many ranges to split a file of `size` bytes into (see scan_spec.threads). */
static int thread_count(const scan_spec *spec, int splittable, int64_t size) {
  if (!splittable || spec->threads == 1 || (spec->threads == 0 && size < SCAN_PARALLEL_MIN)) return 1;
  int64_t n = spec->threads > 0 ? spec->threads : sysconf(_SC_NPROCESSORS_ONLN);
  int64_t most = size / (spec->threads > 0 ? MIN_RANGE_ASKED : MIN_RANGE);
  if (n > most) n = most;
  return n < 1 ? 1 : n > SCAN_MAX_THREADS ? SCAN_MAX_THREADS : (int)n;
}

/* Merges the workers' results into out (in file order) and converts the aggregates. */
static int collect(worker *ws, int n, const scan_spec *spec, scan_out *out) {
  int e = 0;
  out->results = ws[0].sc.res;
  ws[0].sc.res = NULL;
  for (int i = 0; i < n; i++) {
    for (int r = 0; i > 0 && !e && r < spec->nrules; r++)
      e = wb_scan_result_merge(&out->results[r], &ws[i].sc.res[r], &spec->rules[r]);
    out->bytes += ws[i].bytes;
    out->lines += ws[i].lines;
    out->truncated += ws[i].truncated;
  }
  for (int r = 0; !e && r < spec->nrules; r++) wb_scan_result_finish(&out->results[r]);
  out->threads = n;
  return e;
}

int wb_scan_path(const scan_spec *spec, const char *path, scan_out *out, char *err, size_t errlen) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) find_sep = find_sep_avx2;
#endif
  memset(out, 0, sizeof *out);
  out->nrules = spec->nrules;
  int fd = wb_guard_open(path, O_RDONLY, 0);
  if (fd < 0) return fail(err, errlen, path, errno);
  struct stat st;
  int e = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (e) {
    close(fd);
    return fail(err, errlen, path, e);
  }
  int regular = S_ISREG(st.st_mode);
  unsigned char magic[2];
  out->gzip = regular && pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  int n = thread_count(spec, regular && !out->gzip, st.st_size);
  if (regular) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  worker *ws = calloc((size_t)n, sizeof *ws);
  e = ws ? 0 : ENOMEM;
  for (int i = 0; i < n && !e; i++) {
    worker *w = &ws[i];
    e = worker_init(w, spec);
    w->fd = fd;
    w->seekable = regular && !out->gzip;
    w->begin = w->pos = n == 1 ? 0 : (int64_t)((double)st.st_size * i / n);
    w->limit = i == n - 1 ? INT64_MAX : (int64_t)((double)st.st_size * (i + 1) / n);
  }
  if (!e && out->gzip) {
    int dupfd = dup(fd);
    ws[0].gz = dupfd >= 0 ? gzdopen(dupfd, "rb") : NULL;
    if (!ws[0].gz) e = dupfd >= 0 ? ENOMEM : errno;
    if (!ws[0].gz && dupfd >= 0) close(dupfd);
    if (ws[0].gz) gzbuffer(ws[0].gz, 1 << 18);
  }
  if (!e) e = run_workers(ws, n);
  if (!e) e = collect(ws, n, spec, out);
  int zerr;
  if (e == EIO && out->gzip) {
    /* zlib names a stream opened by descriptor "<fd:N>": the path says it better */
    const char *what = gzerror(ws[0].gz, &zerr);
    if (strncmp(what, "<fd:", 4) == 0 && strstr(what, ": ")) what = strstr(what, ": ") + 2;
    snprintf(err, errlen, "%s: gzip: %s", path, what);
  }
  else if (e) fail(err, errlen, path, e);
  for (int i = 0; ws && i < n; i++) {
    if (ws[i].gz) gzclose(ws[i].gz);
    worker_free(&ws[i], spec->nrules);
  }
  free(ws);
  close(fd);
  if (e) wb_scan_out_free(out);
  return e;
}
