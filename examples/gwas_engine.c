/* A GWAS-style association engine for wb's benchmark matrix (recipes/matrix.lua, docs/matrix.md).
 *
 *   gwas_engine --trait binary|linear --out DIR [--device cpu|gpu] [--cache-dir DIR]
 *               [--variants N] [--samples N] [--chunk-size N] [--threads N] [--writers N]
 *               [--iterations N] [--compile-work N] [--seed N] [--run-id ID] [--chrom C]
 *               [--fail-after-chunks N]
 *   gwas_engine --version
 *
 * Stages, each timed: load (a seeded genotype matrix, allele dosages 0/1/2, and a phenotype
 * driven by a few causal variants), compile (tabulates the normal tail by numerical
 * integration: real work standing in for JIT compilation, cached as files in --cache-dir so a
 * warm cache makes it cheap), compute (per variant: least squares for a linear trait, logistic
 * regression by Newton iterations for a binary one; chunks of variants spread over --threads),
 * write (DIR/results.tsv, a header and one row per variant, REGENIE-like columns; the rows
 * formatted by --writers threads, each a contiguous slice, written in order).
 *
 * There is no GPU: --device gpu selects the batched code path (blocks of variants accumulated
 * sample by sample, as a device kernel would; the same sums in the same order, so the estimates
 * are identical) and a finer, costlier compiled kernel (p-values agree to its precision). Cache
 * keys hold trait, device, block size and kernel resolution. Results do not depend on --threads
 * or --writers.
 *
 * Telemetry: DIR/events.jsonl (run_started, compile_finished, progress_tick on the first chunk,
 * then every >= 10 chunks or >= 5 s, and on the last; writer_finished, run_failed) and
 * DIR/profile_summary.json ({schema_version, run_id, stage_totals_seconds, stage_counts}).
 * GWAS_ENGINE_SLOWDOWN=F (F >= 1) plants a regression: each compute chunk burns F times the CPU
 * time its work took (so wall and CPU time of the compute stage grow by F).
 * Exit 0 on success, 1 on failure (after run_failed), 2 on bad usage. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENGINE_VERSION "1.0"
#define BLOCK 8
#define TABLE_ZMAX 12.0
#define MAX_THREADS 64
#define TWO_PI 6.283185307179586

enum { ST_LOAD, ST_COMPILE, ST_COMPUTE, ST_WRITE, NSTAGES };
static const char *stage_names[NSTAGES] = {"load", "compile", "compute", "write"};
static double stage_seconds[NSTAGES];
static long stage_counts[NSTAGES];

typedef struct {
  const char *trait, *device, *cache_dir, *out, *run_id, *chrom;
  long variants, samples, chunk, threads, writers, iterations, compile_work, fail_after;
  uint64_t seed;
  double slowdown;
} options;

typedef struct {
  double beta, se, chisq, log10p, freq;
  long n;
} result;

static options opt = {"", "cpu", NULL, NULL, NULL, "22", 20000, 2000, 256, 1, 1, 6, 1, -1, 1, 1.0};
static FILE *events;
static uint8_t *geno;     /* variants x samples, variant-major */
static double *pheno;     /* samples */
static double *table;     /* log10 two-sided normal tail p on a grid over [0, TABLE_ZMAX] */
static long table_points;
static result *results;
static long chunk_count;
static atomic_long next_chunk, done_chunks;
static pthread_mutex_t event_lock = PTHREAD_MUTEX_INITIALIZER;
static long last_tick_chunks;
static double last_tick_time;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *state) {
  *state += 0x9e3779b97f4a7c15ull;
  return (double)(mix(*state) >> 11) * 0x1.0p-53;
}

/* ---- telemetry ------------------------------------------------------------------------------ */

/* s as a JSON string literal (quotes included) in buf. */
static const char *quoted(char *buf, size_t size, const char *s) {
  size_t n = 0;
  buf[n++] = '"';
  for (; *s && n + 8 < size; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') n += (size_t)snprintf(buf + n, size - n, "\\%c", c);
    else if (c < 0x20) n += (size_t)snprintf(buf + n, size - n, "\\u%04x", c);
    else buf[n++] = (char)c;
  }
  buf[n++] = '"';
  buf[n] = '\0';
  return buf;
}

/* One line of events.jsonl; `fields` is a printf format for the trailing `"k":v,...` text. */
static void event(const char *level, const char *name, const char *fields, ...) {
  if (!events) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  char id[1024];
  pthread_mutex_lock(&event_lock);
  fprintf(events, "{\"schema_version\":1,\"run_id\":%s,\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"event\":\"%s\"",
          quoted(id, sizeof id, opt.run_id), stamp, ts.tv_nsec / 1000000, level, name);
  if (fields && *fields) {
    va_list ap;
    va_start(ap, fields);
    fputc(',', events);
    vfprintf(events, fields, ap);
    va_end(ap);
  }
  fputs("}\n", events);
  fflush(events);
  pthread_mutex_unlock(&event_lock);
}

static int write_summary(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/profile_summary.json", opt.out);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  char id[1024];
  fprintf(f, "{\n  \"schema_version\": 1,\n  \"run_id\": %s,\n  \"stage_totals_seconds\": {",
          quoted(id, sizeof id, opt.run_id));
  for (int i = 0; i < NSTAGES; i++)
    fprintf(f, "%s\"%s\": %.6f", i ? ", " : "", stage_names[i], stage_seconds[i]);
  fprintf(f, "},\n  \"stage_counts\": {");
  for (int i = 0; i < NSTAGES; i++) fprintf(f, "%s\"%s\": %ld", i ? ", " : "", stage_names[i], stage_counts[i]);
  fprintf(f, "}\n}\n");
  return fclose(f);
}

static void fail(const char *stage, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "gwas_engine: %s: %s\n", stage, msg);
  char text[2100];
  event("ERROR", "run_failed", "\"stage\":\"%s\",\"message\":%s", stage, quoted(text, sizeof text, msg));
  if (events) write_summary();
  exit(1);
}

/* ---- load ----------------------------------------------------------------------------------- */

static void load_variant(long j) {
  uint64_t st = mix(opt.seed ^ mix((uint64_t)j + 1));
  double p = 0.05 + 0.45 * uniform(&st);
  uint8_t *g = geno + (size_t)j * (size_t)opt.samples;
  for (long i = 0; i < opt.samples; i++) g[i] = (uint8_t)((uniform(&st) < p) + (uniform(&st) < p));
}

static void make_phenotype(void) {
  uint64_t st = mix(opt.seed ^ 0x5eedull);
  for (long i = 0; i < opt.samples; i++) {
    double liability = 0;
    for (long j = 0; j < opt.variants; j += 997) liability += 0.25 * geno[(size_t)j * (size_t)opt.samples + (size_t)i];
    if (strcmp(opt.trait, "linear") == 0) {
      double u1 = uniform(&st), u2 = uniform(&st);
      pheno[i] = liability + sqrt(-2 * log(u1 + 1e-300)) * cos(TWO_PI * u2);
    } else {
      pheno[i] = uniform(&st) < 1 / (1 + exp(1.0 - liability)) ? 1.0 : 0.0;
    }
  }
}

/* ---- compile (the cached kernel) ------------------------------------------------------------ */

static uint64_t checksum(const double *v, long n) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *b = (const unsigned char *)v;
  for (size_t i = 0; i < (size_t)n * sizeof *v; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static double density(double z) { return exp(-0.5 * z * z) / sqrt(TWO_PI); }

/* log10 of 2 * integral of the normal density over [z, z + 16], by Simpson's rule. */
static void tabulate(long steps) {
  double h = TABLE_ZMAX / (double)(table_points - 1);
  for (long k = 0; k < table_points; k++) {
    double a = h * (double)k, w = 16.0 / (double)steps, s = density(a) + density(a + 16.0);
    for (long i = 1; i < steps; i++) s += (i & 1 ? 4 : 2) * density(a + w * (double)i);
    table[k] = log10(fmax(2 * s * w / 3, 1e-300));
  }
}

static int read_kernel(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char magic[8];
  long points = 0;
  uint64_t sum = 0;
  int ok = fread(magic, 1, 8, f) == 8 && memcmp(magic, "GWASKRN1", 8) == 0 &&
           fread(&points, sizeof points, 1, f) == 1 && points == table_points &&
           fread(&sum, sizeof sum, 1, f) == 1 &&
           fread(table, sizeof *table, (size_t)points, f) == (size_t)points && checksum(table, points) == sum;
  fclose(f);
  return ok ? 0 : -1;
}

static void write_kernel(const char *path, const char *key, double seconds) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  uint64_t sum = checksum(table, table_points);
  if (!f || fwrite("GWASKRN1", 1, 8, f) != 8 || fwrite(&table_points, sizeof table_points, 1, f) != 1 ||
      fwrite(&sum, sizeof sum, 1, f) != 1 ||
      fwrite(table, sizeof *table, (size_t)table_points, f) != (size_t)table_points || fclose(f) != 0)
    fail("compile", "%s: %s", tmp, strerror(errno));
  if (rename(tmp, path) != 0) fail("compile", "%s: %s", path, strerror(errno));
  snprintf(tmp, sizeof tmp, "%s.json", path);
  if (!(f = fopen(tmp, "w"))) fail("compile", "%s: %s", tmp, strerror(errno));
  fprintf(f, "{\"key\":\"%s\",\"points\":%ld,\"compile_seconds\":%.6f}\n", key, table_points, seconds);
  fclose(f);
}

static void compile(void) {
  int gpu = strcmp(opt.device, "gpu") == 0;
  table_points = 4096;
  table = malloc((size_t)table_points * sizeof *table);
  if (!table) fail("compile", "out of memory");
  long steps = 2000 * opt.compile_work * (gpu ? 2 : 1);
  char key[256], path[4096];
  snprintf(key, sizeof key, "gwas-%s-%s-b%d-%ld", opt.trait, opt.device, gpu ? BLOCK : 1, steps);
  const char *state = "disabled";
  if (opt.cache_dir) {
    snprintf(path, sizeof path, "%s/%s.kernel", opt.cache_dir, key);
    state = read_kernel(path) == 0 ? "hit" : "miss";
  }
  double t0 = now();
  if (strcmp(state, "hit") != 0) tabulate(steps);
  if (strcmp(state, "miss") == 0) write_kernel(path, key, now() - t0);
  event("INFO", "compile_finished", "\"cache\":\"%s\",\"kernel\":\"%s\",\"seconds\":%.6f", state, key, now() - t0);
}

static double log10p(double chisq) {
  double z = sqrt(chisq);
  if (!(z < TABLE_ZMAX)) return log10(2 * density(z) / z);
  double x = z / TABLE_ZMAX * (double)(table_points - 1);
  long k = (long)x;
  if (k >= table_points - 1) return table[table_points - 1];
  return table[k] + (x - (double)k) * (table[k + 1] - table[k]);
}

/* ---- compute -------------------------------------------------------------------------------- */

static void finish_linear(result *r, double n, double sg, double sgg, double sy, double syy, double sgy) {
  double vg = sgg - sg * sg / n;
  r->n = (long)n;
  r->freq = sg / (2 * n);
  if (vg <= 0) {
    r->beta = r->se = r->chisq = r->log10p = NAN;
    return;
  }
  double b = (sgy - sg * sy / n) / vg, a = (sy - b * sg) / n;
  double rss = syy - a * sy - b * sgy;
  r->beta = b;
  r->se = sqrt(fmax(rss, 0) / (n - 2) / vg);
  r->chisq = (b / r->se) * (b / r->se);
  r->log10p = -log10p(r->chisq);
}

static void linear_block(long j0, long nb) {
  double sg[BLOCK] = {0}, sgg[BLOCK] = {0}, sgy[BLOCK] = {0}, sy = 0, syy = 0;
  const uint8_t *g[BLOCK];
  for (long b = 0; b < nb; b++) g[b] = geno + (size_t)(j0 + b) * (size_t)opt.samples;
  for (long i = 0; i < opt.samples; i++) {
    double y = pheno[i];
    sy += y;
    syy += y * y;
    for (long b = 0; b < nb; b++) {
      double x = g[b][i];
      sg[b] += x;
      sgg[b] += x * x;
      sgy[b] += x * y;
    }
  }
  for (long b = 0; b < nb; b++) finish_linear(&results[j0 + b], (double)opt.samples, sg[b], sgg[b], sy, syy, sgy[b]);
}

/* Newton-Raphson for logit P(y=1) = b0 + b1 g over nb variants at once, samples outermost. */
static void logistic_block(long j0, long nb) {
  double b0[BLOCK], b1[BLOCK], i00[BLOCK], i01[BLOCK], i11[BLOCK], u0[BLOCK], u1[BLOCK], sg[BLOCK];
  const uint8_t *g[BLOCK];
  for (long b = 0; b < nb; b++) {
    g[b] = geno + (size_t)(j0 + b) * (size_t)opt.samples;
    b0[b] = b1[b] = sg[b] = 0;
  }
  for (long it = 0; it <= opt.iterations; it++) {
    for (long b = 0; b < nb; b++) i00[b] = i01[b] = i11[b] = u0[b] = u1[b] = 0;
    for (long i = 0; i < opt.samples; i++) {
      double y = pheno[i];
      for (long b = 0; b < nb; b++) {
        double x = g[b][i], p = 1 / (1 + exp(-(b0[b] + b1[b] * x))), w = p * (1 - p);
        i00[b] += w;
        i01[b] += w * x;
        i11[b] += w * x * x;
        u0[b] += y - p;
        u1[b] += x * (y - p);
        if (it == 0) sg[b] += x;
      }
    }
    for (long b = 0; b < nb; b++) {
      double det = i00[b] * i11[b] - i01[b] * i01[b];
      result *r = &results[j0 + b];
      if (it == opt.iterations || !(det > 1e-12)) {
        r->n = opt.samples;
        r->freq = sg[b] / (2.0 * (double)opt.samples);
        r->beta = b1[b];
        r->se = det > 1e-12 ? sqrt(i00[b] / det) : NAN;
        r->chisq = (r->beta / r->se) * (r->beta / r->se);
        r->log10p = det > 1e-12 ? -log10p(r->chisq) : NAN;
        continue;
      }
      b0[b] += (i11[b] * u0[b] - i01[b] * u1[b]) / det;
      b1[b] += (i00[b] * u1[b] - i01[b] * u0[b]) / det;
    }
  }
}

static void compute_chunk(long c) {
  long j0 = c * opt.chunk, j1 = j0 + opt.chunk < opt.variants ? j0 + opt.chunk : opt.variants;
  long width = strcmp(opt.device, "gpu") == 0 ? BLOCK : 1;
  void (*kernel)(long, long) = strcmp(opt.trait, "linear") == 0 ? linear_block : logistic_block;
  for (long j = j0; j < j1; j += width) kernel(j, j + width < j1 ? width : j1 - j);
}

static void progress(long c, long processed) {
  double t = now();
  pthread_mutex_lock(&event_lock);
  int tick = processed == 1 || processed == chunk_count || processed - last_tick_chunks >= 10 ||
             t - last_tick_time >= 5.0;
  if (tick) {
    last_tick_chunks = processed;
    last_tick_time = t;
  }
  pthread_mutex_unlock(&event_lock);
  long j0 = c * opt.chunk, j1 = j0 + opt.chunk < opt.variants ? j0 + opt.chunk : opt.variants;
  if (tick)
    event("INFO", "progress_tick",
          "\"processed_chunk_count\":%ld,\"chunk_count\":%ld,\"variant_start_index\":%ld,\"variant_stop_index\":%ld",
          processed, chunk_count, j0, j1);
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *compute_worker(void *arg) {
  (void)arg;
  for (long c; (c = atomic_fetch_add(&next_chunk, 1)) < chunk_count;) {
    double t0 = thread_cpu();
    compute_chunk(c);
    double stop = t0 + (thread_cpu() - t0) * opt.slowdown;
    while (thread_cpu() < stop) continue;
    long processed = atomic_fetch_add(&done_chunks, 1) + 1;
    if (opt.fail_after >= 0 && processed > opt.fail_after)
      fail("compute", "simulated failure after %ld chunks (--fail-after-chunks)", opt.fail_after);
    progress(c, processed);
  }
  return NULL;
}

static void *load_worker(void *arg) {
  for (long c; (c = atomic_fetch_add(&next_chunk, 1)) < chunk_count;)
    for (long j = c * opt.chunk; j < (c + 1) * opt.chunk && j < opt.variants; j++) load_variant(j);
  return arg;
}

static void run_parallel(void *(*fn)(void *)) {
  pthread_t tids[MAX_THREADS];
  atomic_store(&next_chunk, 0);
  long started = 0;
  for (; started < opt.threads - 1; started++)
    if (pthread_create(&tids[started], NULL, fn, NULL) != 0) break;
  fn(NULL);
  for (long i = 0; i < started; i++) pthread_join(tids[i], NULL);
}

/* ---- write ---------------------------------------------------------------------------------- */

/* A writer's slice of the rows, formatted into its own growing buffer. */
typedef struct {
  long j0, j1;
  char *buf;
  size_t len, cap;
  int failed;
} writer;

static void *format_rows(void *arg) {
  writer *w = arg;
  static const char bases[] = "ACGT";
  for (long j = w->j0; j < w->j1 && !w->failed; j++) {
    const result *r = &results[j];
    long pos = 16000000 + 97 * j;
    uint64_t h = mix((uint64_t)j);
    int a0 = (int)(h & 3), a1 = (a0 + 1 + (int)((h >> 2) % 3)) & 3;
    for (;;) { /* formats the row, growing the buffer until it fits */
      size_t room = w->cap - w->len;
      int n = snprintf(w->buf ? w->buf + w->len : NULL, room, "%s\t%ld\t%s:%ld\t%c\t%c\t%.6g\t%ld\tADD\t%.6g\t%.6g\t%.6g\t%.6g\n",
                       opt.chrom, pos, opt.chrom, pos, bases[a0], bases[a1], r->freq, r->n, r->beta, r->se, r->chisq,
                       r->log10p);
      if (n < 0) {
        w->failed = 1;
        break;
      }
      if ((size_t)n < room) {
        w->len += (size_t)n;
        break;
      }
      size_t cap = w->cap ? 2 * w->cap : 1 << 16;
      while (cap - w->len <= (size_t)n) cap *= 2;
      char *b = realloc(w->buf, cap);
      if (!b) {
        w->failed = 1;
        break;
      }
      w->buf = b, w->cap = cap;
    }
  }
  return NULL;
}

/* results.tsv: the rows formatted by --writers threads (each a contiguous slice), written in order;
 * the file is the same for any number of writers. */
static void write_results(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/results.tsv", opt.out);
  FILE *f = fopen(path, "w");
  if (!f) fail("write", "%s: %s", path, strerror(errno));
  fputs("CHROM\tGENPOS\tID\tALLELE0\tALLELE1\tA1FREQ\tN\tTEST\tBETA\tSE\tCHISQ\tLOG10P\n", f);
  long n = opt.writers < opt.variants ? opt.writers : opt.variants;
  writer *ws = calloc((size_t)n, sizeof *ws);
  pthread_t *tids = calloc((size_t)n, sizeof *tids);
  char *started = calloc((size_t)n, 1);
  if (!ws || !tids || !started) fail("write", "out of memory");
  for (long i = 0; i < n; i++) {
    ws[i].j0 = opt.variants * i / n, ws[i].j1 = opt.variants * (i + 1) / n;
    started[i] = i > 0 && pthread_create(&tids[i], NULL, format_rows, &ws[i]) == 0;
    if (i > 0 && !started[i]) format_rows(&ws[i]); /* no thread: this one formats it */
  }
  format_rows(&ws[0]);
  for (long i = 1; i < n; i++)
    if (started[i]) pthread_join(tids[i], NULL);
  free(started);
  for (long i = 0; i < n; i++) {
    if (ws[i].failed) fail("write", "formatting rows: out of memory");
    if (fwrite(ws[i].buf, 1, ws[i].len, f) != ws[i].len) fail("write", "%s: %s", path, strerror(errno));
    free(ws[i].buf);
  }
  free(ws);
  free(tids);
  long bytes = ftell(f);
  if (fclose(f) != 0) fail("write", "%s: %s", path, strerror(errno));
  event("INFO", "writer_finished", "\"output_row_count\":%ld,\"output_bytes\":%ld,\"path\":\"results.tsv\"",
        opt.variants, bytes);
}

/* ---- main ----------------------------------------------------------------------------------- */

static void usage(const char *msg) {
  fprintf(stderr,
          "gwas_engine: %s\nusage: gwas_engine --trait binary|linear --out DIR [--device cpu|gpu] "
          "[--cache-dir DIR] [--variants N] [--samples N] [--chunk-size N] [--threads N] "
          "[--writers N] [--iterations N] [--compile-work N] [--seed N] [--run-id ID] [--chrom C] "
          "[--fail-after-chunks N]\n",
          msg);
  exit(2);
}

static long number(const char *flag, const char *s, long min) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < min) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s needs an integer >= %ld, not '%s'", flag, min, s);
    usage(msg);
  }
  return v;
}

static void parse(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    puts("gwas_engine " ENGINE_VERSION);
    exit(0);
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage("every option takes a value");
    const char *v = argv[++i];
    if (strcmp(a, "--trait") == 0) opt.trait = v;
    else if (strcmp(a, "--device") == 0) opt.device = v;
    else if (strcmp(a, "--cache-dir") == 0) opt.cache_dir = *v ? v : NULL;
    else if (strcmp(a, "--out") == 0) opt.out = v;
    else if (strcmp(a, "--run-id") == 0) opt.run_id = v;
    else if (strcmp(a, "--chrom") == 0) opt.chrom = v;
    else if (strcmp(a, "--variants") == 0) opt.variants = number(a, v, 1);
    else if (strcmp(a, "--samples") == 0) opt.samples = number(a, v, 3);
    else if (strcmp(a, "--chunk-size") == 0) opt.chunk = number(a, v, 1);
    else if (strcmp(a, "--threads") == 0) opt.threads = number(a, v, 1);
    else if (strcmp(a, "--writers") == 0) opt.writers = number(a, v, 1);
    else if (strcmp(a, "--iterations") == 0) opt.iterations = number(a, v, 1);
    else if (strcmp(a, "--compile-work") == 0) opt.compile_work = number(a, v, 1);
    else if (strcmp(a, "--seed") == 0) opt.seed = (uint64_t)number(a, v, 0);
    else if (strcmp(a, "--fail-after-chunks") == 0) opt.fail_after = number(a, v, 0);
    else {
      char msg[256];
      snprintf(msg, sizeof msg, "unknown option '%s'", a);
      usage(msg);
    }
  }
  if (strcmp(opt.trait, "binary") != 0 && strcmp(opt.trait, "linear") != 0) usage("--trait must be binary or linear");
  if (strcmp(opt.device, "cpu") != 0 && strcmp(opt.device, "gpu") != 0) usage("--device must be cpu or gpu");
  if (!opt.out) usage("--out is required");
  if (opt.threads > MAX_THREADS) opt.threads = MAX_THREADS;
  if (opt.writers > MAX_THREADS) opt.writers = MAX_THREADS;
  const char *slow = getenv("GWAS_ENGINE_SLOWDOWN");
  if (slow && *slow) {
    char *end;
    opt.slowdown = strtod(slow, &end);
    if (*end || !(opt.slowdown >= 1.0)) usage("GWAS_ENGINE_SLOWDOWN must be a number >= 1");
  }
}

static void mkdirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "gwas_engine: %s: %s\n", buf, strerror(errno));
      exit(1);
    }
    if (!(*p = c)) break;
  }
}

static void stage(int s, double t0) {
  stage_seconds[s] += now() - t0;
  stage_counts[s] += 1;
}

int main(int argc, char **argv) {
  parse(argc, argv);
  mkdirs(opt.out);
  if (opt.cache_dir) mkdirs(opt.cache_dir);
  char path[4096], id[64];
  if (!opt.run_id) {
    snprintf(id, sizeof id, "gwas-%s-%s-%ld", opt.trait, opt.device, (long)getpid());
    opt.run_id = id;
  }
  snprintf(path, sizeof path, "%s/events.jsonl", opt.out);
  if (!(events = fopen(path, "w"))) {
    fprintf(stderr, "gwas_engine: %s: %s\n", path, strerror(errno));
    return 1;
  }
  chunk_count = (opt.variants + opt.chunk - 1) / opt.chunk;
  event("INFO", "run_started",
        "\"trait\":\"%s\",\"device\":\"%s\",\"variants\":%ld,\"samples\":%ld,\"chunk_size\":%ld,"
        "\"chunk_count\":%ld,\"threads\":%ld,\"writers\":%ld,\"cache_enabled\":%s",
        opt.trait, opt.device, opt.variants, opt.samples, opt.chunk, chunk_count, opt.threads, opt.writers,
        opt.cache_dir ? "true" : "false");

  double t0 = now();
  geno = malloc((size_t)opt.variants * (size_t)opt.samples);
  pheno = malloc((size_t)opt.samples * sizeof *pheno);
  results = calloc((size_t)opt.variants, sizeof *results);
  if (!geno || !pheno || !results) fail("load", "out of memory for %ld x %ld genotypes", opt.variants, opt.samples);
  run_parallel(load_worker);
  make_phenotype();
  stage(ST_LOAD, t0);

  t0 = now();
  compile();
  stage(ST_COMPILE, t0);

  t0 = now();
  run_parallel(compute_worker);
  stage(ST_COMPUTE, t0);
  stage_counts[ST_COMPUTE] = chunk_count;

  t0 = now();
  write_results();
  stage(ST_WRITE, t0);

  if (write_summary() != 0) fail("write", "%s/profile_summary.json: %s", opt.out, strerror(errno));
  fclose(events);
  printf("%s: %ld variants x %ld samples, %s on %s, compute %.3f s\n", opt.run_id, opt.variants, opt.samples,
         opt.trait, opt.device, stage_seconds[ST_COMPUTE]);
  return 0;
}
