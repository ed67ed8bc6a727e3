/* A small workload with distinct phases, for demos and tests of wb.
 *
 *   phases [--scale N] [--sleep-ms MS] [--summary PATH] [--quiet]
 *
 * Phases, in order: generate (fill a buffer with pseudo-random records), parse (tokenise them and
 * hash the tokens), compute (floating-point kernel), sort (qsort of the records), wait (sleep,
 * i.e. off-CPU time). Each phase prints a stage line on stderr,
 *   [phases] stage=parse seconds=0.123456
 * and, with --summary, a profile_summary.json is written in the shape wb reads:
 *   {"schema_version":1,"run_id":"...","stage_totals_seconds":{...},"stage_counts":{...}}
 * The result checksum goes to stdout so the work cannot be optimised away. Built with frame
 * pointers so stack samplers can unwind it. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPHASES 5
static const char *phase_names[NPHASES] = {"generate", "parse", "compute", "sort", "wait"};
static double phase_seconds[NPHASES];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

typedef struct {
  uint64_t key;
  char text[56];
} record;

static __attribute__((noinline)) void generate(record *recs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = next_random();
    recs[i].key = r;
    snprintf(recs[i].text, sizeof recs[i].text, "chr%u:%lu\tA\tG\tgene%u;impact=%u",
             (unsigned)(r % 22 + 1), (unsigned long)(r >> 40), (unsigned)(r % 997),
             (unsigned)(r % 4));
  }
}

static __attribute__((noinline)) uint64_t parse(const record *recs, size_t n, int rounds) {
  uint64_t h = 1469598103934665603ull;
  for (int round = 0; round < rounds; round++)
    for (size_t i = 0; i < n; i++)
      for (const char *p = recs[i].text; *p; p++) {
        if (*p == '\t' || *p == ';' || *p == ':') h = (h ^ 0xff) * 1099511628211ull;
        else h = (h ^ (uint8_t)*p) * 1099511628211ull;
      }
  return h;
}

static __attribute__((noinline)) double compute(size_t n) {
  double acc = 0;
  for (size_t i = 1; i <= n; i++) acc += sin((double)i * 0.001) * sqrt((double)i) / (1.0 + log((double)i));
  return acc;
}

static int by_key(const void *a, const void *b) {
  uint64_t x = ((const record *)a)->key, y = ((const record *)b)->key;
  return x < y ? -1 : x > y;
}

static __attribute__((noinline)) void sort_records(record *recs, size_t n) {
  qsort(recs, n, sizeof *recs, by_key);
}

static __attribute__((noinline)) void wait_for_io(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void finish_phase(int index, double started, int quiet) {
  phase_seconds[index] = now() - started;
  if (!quiet) fprintf(stderr, "[phases] stage=%s seconds=%.6f\n", phase_names[index], phase_seconds[index]);
}

static int write_summary(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return -1;
  }
  fprintf(f, "{\"schema_version\":1,\"run_id\":\"phases-%ld\",\"stage_totals_seconds\":{", (long)time(NULL));
  for (int i = 0; i < NPHASES; i++) fprintf(f, "%s\"%s\":%.6f", i ? "," : "", phase_names[i], phase_seconds[i]);
  fprintf(f, "},\"stage_counts\":{");
  for (int i = 0; i < NPHASES; i++) fprintf(f, "%s\"%s\":1", i ? "," : "", phase_names[i]);
  fprintf(f, "}}\n");
  return fclose(f);
}

int main(int argc, char **argv) {
  long scale = 4;
  int sleep_ms = 50, quiet = 0;
  const char *summary = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) scale = atol(argv[++i]);
    else if (strcmp(argv[i], "--sleep-ms") == 0 && i + 1 < argc) sleep_ms = atoi(argv[++i]);
    else if (strcmp(argv[i], "--summary") == 0 && i + 1 < argc) summary = argv[++i];
    else if (strcmp(argv[i], "--quiet") == 0) quiet = 1;
    else {
      fprintf(stderr, "usage: %s [--scale N] [--sleep-ms MS] [--summary PATH] [--quiet]\n", argv[0]);
      return 2;
    }
  }
  if (scale < 1 || sleep_ms < 0) {
    fprintf(stderr, "phases: --scale must be >= 1 and --sleep-ms >= 0\n");
    return 2;
  }
  size_t n = (size_t)scale * 20000;
  record *recs = malloc(n * sizeof *recs);
  if (!recs) {
    fprintf(stderr, "phases: out of memory\n");
    return 1;
  }
  double t = now();
  generate(recs, n);
  finish_phase(0, t, quiet);
  t = now();
  uint64_t h = parse(recs, n, 3);
  finish_phase(1, t, quiet);
  t = now();
  double acc = compute(n * 10);
  finish_phase(2, t, quiet);
  t = now();
  sort_records(recs, n);
  finish_phase(3, t, quiet);
  t = now();
  wait_for_io(sleep_ms);
  finish_phase(4, t, quiet);
  printf("checksum %016llx %.6f %016llx\n", (unsigned long long)h, acc, (unsigned long long)recs[n / 2].key);
  free(recs);
  if (summary && write_summary(summary) != 0) return 1;
  return 0;
}
