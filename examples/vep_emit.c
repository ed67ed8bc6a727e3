/* A stand-in for the VEP annotation engine's stderr: writes profile logs in the formats of
 * docs/vep_breakdown.md (the `[VEP_PROFILE]`, `[vep-lance-profile]`, `[VEP_ENGINE_PROFILE]` and
 * `[VEP_TX_ENGINE_PROFILE]` lines), mixed with ordinary log lines, tqdm progress bars redrawn with
 * carriage returns, and log lines that mention a tag in the middle (which readers must ignore).
 *
 *   vep_emit [--bytes SIZE | --lines N] [--seed N] [--contigs N] [--workers N] [--batch-rows N]
 *            [--noise N] [--work-us N] [--all] [-o FILE]
 *
 *   --bytes SIZE    stop after about SIZE bytes (suffix K, M or G: KiB, MiB, GiB); default 4M
 *   --lines N       stop after about N lines instead
 *   --seed N        the random seed (same seed and options, same bytes); default 1
 *   --contigs N     contigs, each ending with a pipeline_profile line (cumulative: the last one is
 *                   the whole run); default 3
 *   --workers N     engine and tx-engine lines per batch; default 1
 *   --batch-rows N  variants per batch; default 5000
 *   --noise N       ordinary log lines per batch on average; default 2
 *   --work-us N     microseconds of real CPU work per batch (so a run takes time); default 0
 *   --all           print every profile family; otherwise, as the real engine, only those whose
 *                   variable is set: VEP_PROFILE, VEP_ENGINE_PROFILE, VEP_TX_ENGINE_PROFILE,
 *                   VEP_LANCE_PROFILE (VEP_ENGINE_PROFILE_HGVSC=1 fills the transcript_hgvsc_*
 *                   sub-timers, else they print 0)
 *   -o FILE         write the log to FILE instead of stderr
 *
 * Timings are drawn from a seeded model, not measured: an engine-bound run where the transcript
 * engine (tx_query_total) makes up evaluate_prepared. stdout gets one summary line. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- output ------------------------------------------------------------------------------------ */

static int out_fd = 2;
static char obuf[1 << 20];
static size_t olen;
static uint64_t total_bytes, total_lines;

static void flush_out(void) {
  size_t off = 0;
  while (off < olen) {
    ssize_t n = write(out_fd, obuf + off, olen - off);
    if (n <= 0) {
      perror("vep_emit: write");
      exit(1);
    }
    off += (size_t)n;
  }
  olen = 0;
}

static void put(const char *s, size_t n) {
  if (olen + n > sizeof obuf) flush_out();
  memcpy(obuf + olen, s, n);
  olen += n;
  total_bytes += n;
  for (size_t i = 0; i < n; i++) total_lines += s[i] == '\n';
}

/* A line under construction. */
static char line[8192];
static size_t llen;

static void ls(const char *s) {
  size_t n = strlen(s);
  memcpy(line + llen, s, n);
  llen += n;
}

static void lu(uint64_t v) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n) line[llen++] = tmp[--n];
}

/* v / 10^dec with dec decimals (v a count of 10^-dec units). */
static void lfix(uint64_t v, int dec) {
  uint64_t p = 1;
  for (int i = 0; i < dec; i++) p *= 10;
  lu(v / p);
  line[llen++] = '.';
  for (uint64_t f = v % p, d = p / 10; d > 0; f %= d, d /= 10) line[llen++] = (char)('0' + f / d);
}

static void kv(const char *k, uint64_t v) {
  line[llen++] = ' ';
  ls(k);
  line[llen++] = '=';
  lu(v);
}

/* key=seconds with dec decimals and an optional "s" suffix; us in microseconds. */
static void kt(const char *k, uint64_t us, int dec, int suffix) {
  line[llen++] = ' ';
  ls(k);
  line[llen++] = '=';
  if (dec == 6) lfix(us, 6);
  else lfix((us + 500) / 1000, 3);
  if (suffix) line[llen++] = 's';
}

/* ---- randomness ------------------------------------------------------------------------------- */

static uint64_t rng = 1;
static uint64_t next_u64(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double uniform(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }
static uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }
/* mean_us × a lognormal factor (sd 0.2), in whole microseconds. */
static uint64_t jitter(double mean_us) {
  double z = (uniform() + uniform() + uniform() + uniform() - 2.0) * 1.7320508;
  return (uint64_t)llround(mean_us * exp(0.2 * z));
}

/* ---- the progress bar ------------------------------------------------------------------------ */

static int bar_shown;
static char bar[256];

static void clear_bar(void) {
  if (!bar_shown) return;
  static const char clear[] = "\r                                                                        \r";
  if (below(2)) put(clear, sizeof clear - 1);
  else put("\r", 1);
  bar_shown = 0;
}

static void emit_line(void) {
  clear_bar();
  line[llen++] = '\n';
  put(line, llen);
  llen = 0;
}

static void show_bar(const char *chrom, uint64_t done, double elapsed) {
  int n = snprintf(bar, sizeof bar, "\rAnnotating %s: %llu variants [00:%02d, %.2f variants/s]", chrom,
                   (unsigned long long)done, (int)elapsed % 60, elapsed > 0 ? done / elapsed : 0.0);
  put(bar, (size_t)n);
  bar_shown = 1;
}

/* ---- the model -------------------------------------------------------------------------------- */

static const char *ENGINE_STAGES[] = {"row_setup",  "input_decode",       "colocated_fields", "prepare_context",
                                      "hgvs_shift", "evaluate_prepared",  "collapse_pick_sort", "csq_format",
                                      "frequency_fields", "output_append", "finish_builders"};
static const double ENGINE_US[] = {1200, 4000, 45000, 6000, 13000, 0, 21000, 46000, 8000, 5000, 800};
enum { N_ENGINE = 11, EVALUATE = 5 };

static const char *TX_STAGES[] = {"structural_collect", "tx_query_total", "tx_exon_lookup", "tx_overlap_predicate",
                                  "transcript_overlap_eval", "transcript_output_materialize",
                                  "transcript_position_fields", "transcript_hgvsc", "transcript_hgvsc_simple_fast",
                                  "transcript_hgvsc_coord_map", "transcript_hgvsc_fallback", "transcript_hgvsp",
                                  "overlap_splice_terms", "upstream_downstream_eval", "intergenic_append"};
enum { STRUCT, TOTAL, EXON, PRED, OVL, MAT, POS, HGVSC, SIMPLE, COORD, FALLBACK, HGVSP, SPLICE, UPDOWN, INTERGENIC, N_TX };

struct totals {
  uint64_t rows, batches, lookup_batches, engine_us, lookup_wait_us, hydrate_us, annotate_us, context_load_us,
      context_tx_us, tx_window_us, prepared_ctx_us, projection_us, stream_next_us, batch_to_lines_us;
};

static int want_pipeline, want_engine, want_tx, want_hgvsc, want_lance;

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static void ordinary_line(const char *chrom, uint64_t batch) {
  static const char *const levels[] = {"INFO", "DEBUG", "WARN"};
  switch (below(6)) {
  case 0:
    snprintf(line, sizeof line, "2024-05-01 12:%02d:%02d,%03d %s vepyr.annotate: %s: batch %llu done",
             (int)below(60), (int)below(60), (int)below(1000), levels[below(3)], chrom, (unsigned long long)batch);
    break;
  case 1:
    snprintf(line, sizeof line, "[2024-05-01T12:00:%02dZ DEBUG datafusion::physical_plan::repartition] partition 0 produced %d rows",
             (int)below(60), (int)below(9000));
    break;
  case 2:
    snprintf(line, sizeof line, "WARN vepyr.cache: transcript ENST%011llu has no CDS end; skipping HGVSp",
             (unsigned long long)below(99999999999ull));
    break;
  case 3: /* key=value tokens without a tag: not a profile line */
    snprintf(line, sizeof line, "INFO lance::dataset: take rows=%d seconds=%d.%03d", (int)below(5000), (int)below(3),
             (int)below(1000));
    break;
  case 4: /* a tag in the middle of a line: must be ignored */
    snprintf(line, sizeof line, "WARN vepyr.profile: dropped stale sample [VEP_ENGINE_PROFILE] rows=1 evaluate_prepared=9.000000s csq_format=1.000000s");
    break;
  default:
    snprintf(line, sizeof line, "INFO vepyr.writer: flushed %d records to output.vcf.gz", (int)below(20000));
  }
  llen = strlen(line);
  emit_line();
}

static void adhoc_timer(const char *label, uint64_t us) {
  char buf[128];
  int n = snprintf(buf, sizeof buf, "[VEP_PROFILE] %s", label);
  memcpy(line, buf, (size_t)n);
  llen = (size_t)n;
  while (llen < 14 + 50) line[llen++] = '.';
  n = snprintf(buf, sizeof buf, "%8.1fms", us / 1000.0);
  memcpy(line + llen, buf, (size_t)n);
  llen += (size_t)n;
  if (want_pipeline) emit_line();
  else llen = 0;
}

static void busy(long us) {
  if (us <= 0) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile uint64_t h = 1469598103934665603ull;
  do {
    for (int i = 0; i < 1000; i++) h = (h ^ (uint64_t)i) * 1099511628211ull;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static void emit_lance_batch(uint64_t rows, uint64_t take_us, struct totals *t) {
  uint64_t starts = rows - below(rows / 50 + 1), matched = starts * (55 + below(15)) / 100;
  uint64_t row_ids = matched + below(matched / 10 + 1), keys = rows * (15 + below(5)) / 100;
  t->lookup_batches++;
  if (!want_lance) return;
  ls("[vep-lance-profile] variation_resolve");
  kv("requested_starts", starts), kv("matched_positions", matched), kv("row_ids", row_ids), kv("cursor", matched);
  emit_line();
  ls("[vep-lance-profile] variation_take");
  kv("row_ids", row_ids), kv("batch_rows", row_ids), kt("seconds", take_us, 3, 0);
  emit_line();
  ls("[vep-lance-profile] sift_key_take path=/c/sift.lance");
  kv("requested_keys", keys), kv("unique_keys", keys - keys / 20), kv("row_ids", keys - keys / 20);
  kv("batch_rows", keys - keys / 20), kt("seconds", jitter(12000.0 * rows / 5000), 3, 0);
  emit_line();
  if (below(20) == 0) {
    ls("[vep-lance-profile] streaming_reread");
    kv("position", below(248000000));
    emit_line();
  }
}

/* One worker's share of a batch: its engine and tx-engine lines; returns its engine time. */
static uint64_t emit_worker(uint64_t rows) {
  double f = rows / 5000.0;
  uint64_t tx[N_TX];
  tx[SIMPLE] = jitter(12000 * f), tx[COORD] = jitter(15000 * f), tx[FALLBACK] = jitter(6000 * f);
  tx[HGVSC] = tx[SIMPLE] + tx[COORD] + tx[FALLBACK] + jitter(2000 * f);
  tx[HGVSP] = jitter(9000 * f), tx[POS] = jitter(8000 * f);
  tx[MAT] = tx[HGVSC] + tx[HGVSP] + tx[POS] + jitter(10000 * f);
  tx[SPLICE] = jitter(6000 * f), tx[OVL] = tx[SPLICE] + jitter(14000 * f);
  tx[STRUCT] = jitter(10000 * f), tx[EXON] = jitter(12000 * f), tx[PRED] = jitter(6000 * f);
  tx[UPDOWN] = jitter(7000 * f), tx[INTERGENIC] = jitter(1000 * f);
  tx[TOTAL] = tx[STRUCT] + tx[EXON] + tx[PRED] + tx[OVL] + tx[MAT] + tx[UPDOWN] + tx[INTERGENIC] + jitter(1500 * f);
  if (!want_hgvsc) tx[SIMPLE] = tx[COORD] = tx[FALLBACK] = 0;
  uint64_t skipped = below(8), assignments = rows * (11 + below(3)), engine = 0;
  if (want_engine) {
    ls("[VEP_ENGINE_PROFILE]");
    kv("rows", rows), kv("null_chrom_rows", 0), kv("skipped_rows", skipped), kv("engine_rows", rows - skipped);
    kv("assignments", assignments), kv("csq_entries", assignments + assignments / 7);
    kv("colocated_hits", rows * 6 / 10);
    ls(" skip_csq=false everything=true");
  }
  for (int i = 0; i < N_ENGINE; i++) {
    uint64_t us = i == EVALUATE ? tx[TOTAL] + jitter(1000 * f) : jitter(ENGINE_US[i] * f);
    engine += us;
    if (want_engine) kt(ENGINE_STAGES[i], us, 6, 1);
  }
  if (want_engine) emit_line();
  if (want_tx) {
    ls("[VEP_TX_ENGINE_PROFILE]");
    kv("rows", rows), kv("tx_candidates", assignments + rows * 3), kv("tx_outputs", assignments);
    kv("tx_overlaps", assignments * 2 / 3), kv("exon_hits", assignments / 2), kv("hgvsc_calls", assignments / 3);
    for (int i = 0; i < N_TX; i++) kt(TX_STAGES[i], tx[i], 6, 1);
    emit_line();
  }
  return engine;
}

static void emit_pipeline(const char *chrom, const struct totals *t) {
  if (!want_pipeline) return;
  ls("[VEP_PROFILE] "), ls(chrom), ls(": pipeline_profile");
  kv("lookup_partitions", 1), kv("lookup_batches", t->lookup_batches), kv("input_batches", t->batches);
  kv("output_batches", t->batches), kv("output_rows", t->rows);
  kt("context_load", t->context_load_us, 3, 1), kt("context_tx", t->context_tx_us, 3, 1);
  kt("tx_window", t->tx_window_us, 3, 1), kt("prepared_ctx", t->prepared_ctx_us, 3, 1);
  kt("lookup_wait", t->lookup_wait_us, 3, 1), kt("hydrate", t->hydrate_us, 3, 1);
  kt("annotate", t->annotate_us, 3, 1), kt("engine", t->engine_us, 3, 1);
  kt("projection", t->projection_us, 3, 1), kt("send_wait", 0, 3, 1), kt("ordered_drain_wait", 0, 3, 1);
  emit_line();
}

static void emit_contig_start(const char *chrom, struct totals *t) {
  t->context_load_us += jitter(382000), t->context_tx_us += jitter(210000);
  t->tx_window_us += jitter(50000), t->prepared_ctx_us += jitter(120000);
  if (want_lance) {
    ls("[vep-lance-profile] open chrom="), ls(chrom);
    ls(" path(shared) projected_cols(shared) collect_colocated=true");
    kv("row_ids", 88000000 + below(1000000)), kv("unique_positions", 80000000 + below(1000000));
    kt("open_s", jitter(2613000), 3, 0);
    emit_line();
    ls("[vep-lance-profile] open_breakdown chrom="), ls(chrom);
    kt("manifest_s", jitter(12000), 3, 0), kt("schema_s", jitter(3000), 3, 0);
    kt("fragments_s", jitter(210000), 3, 0), kt("index_s", jitter(44000), 3, 0);
    emit_line();
    ls("[vep-lance-profile] scan chrom="), ls(chrom);
    kv("fragments", 12 + below(4)), kv("rows", 1000000 + below(100000)), kt("scan_s", jitter(812000), 3, 0);
    emit_line();
  }
  char label[64];
  snprintf(label, sizeof label, "prepare contig %s", chrom);
  adhoc_timer(label, jitter(45000));
}

static uint64_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  uint64_t mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1ull << 10;
  else if (*end == 'M' || *end == 'm') mult = 1ull << 20;
  else if (*end == 'G' || *end == 'g') mult = 1ull << 30;
  else if (*end) mult = 0;
  if (v <= 0 || !mult || (*end && end[1] && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)) {
    fprintf(stderr, "vep_emit: bad size '%s' (e.g. 4M, 1G)\n", s);
    exit(2);
  }
  return (uint64_t)(v * (double)mult);
}

static long parse_count(const char *s, const char *flag) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < 0) {
    fprintf(stderr, "vep_emit: %s takes a non-negative integer, not '%s'\n", flag, s);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  uint64_t target_bytes = 4ull << 20, target_lines = 0;
  long seed = 1, contigs = 3, workers = 1, batch_rows = 5000, noise = 2, work_us = 0;
  int all = 0;
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--all") == 0) {
      all = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "usage: vep_emit [--bytes SIZE | --lines N] [--seed N] [--contigs N] [--workers N] "
                      "[--batch-rows N] [--noise N] [--work-us N] [--all] [-o FILE]\n");
      return 2;
    }
    i++;
    if (strcmp(a, "--bytes") == 0) target_bytes = parse_size(v), target_lines = 0;
    else if (strcmp(a, "--lines") == 0) target_lines = (uint64_t)parse_count(v, a), target_bytes = 0;
    else if (strcmp(a, "--seed") == 0) seed = parse_count(v, a);
    else if (strcmp(a, "--contigs") == 0) contigs = parse_count(v, a);
    else if (strcmp(a, "--workers") == 0) workers = parse_count(v, a);
    else if (strcmp(a, "--batch-rows") == 0) batch_rows = parse_count(v, a);
    else if (strcmp(a, "--noise") == 0) noise = parse_count(v, a);
    else if (strcmp(a, "--work-us") == 0) work_us = parse_count(v, a);
    else if (strcmp(a, "-o") == 0) out = v;
    else {
      fprintf(stderr, "vep_emit: unknown option '%s'\n", a);
      return 2;
    }
  }
  if (contigs < 1 || contigs > 24 || workers < 1 || batch_rows < 1) {
    fprintf(stderr, "vep_emit: need 1..24 contigs, at least 1 worker and 1 row per batch\n");
    return 2;
  }
  if (out && (out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
    perror(out);
    return 1;
  }
  rng = (uint64_t)seed * 0x2545F4914F6CDD1Dull + 1;
  want_pipeline = all || env_on("VEP_PROFILE");
  want_engine = all || env_on("VEP_ENGINE_PROFILE");
  want_tx = all || env_on("VEP_TX_ENGINE_PROFILE");
  want_hgvsc = all || env_on("VEP_ENGINE_PROFILE_HGVSC");
  want_lance = all || env_on("VEP_LANCE_PROFILE");
  static const char *const CHROMS[] = {"chr1",  "chr2",  "chr3",  "chr4",  "chr5",  "chr6",  "chr7",  "chr8",
                                       "chr9",  "chr10", "chr11", "chr12", "chr13", "chr14", "chr15", "chr16",
                                       "chr17", "chr18", "chr19", "chr20", "chr21", "chr22", "chrX",  "chrY"};
  struct totals t = {0};
  snprintf(line, sizeof line, "INFO vepyr: annotating with cache /data/vep/merged (backend lance, forks 0)");
  llen = strlen(line);
  emit_line();
  if (want_pipeline) {
    ls("[VEP_PROFILE] concurrency_plan lookup_partitions=1 chromosome_lanes=1");
    kv("workers", (uint64_t)workers), kv("lookup_workers", 1), kv("batch_rows", (uint64_t)batch_rows);
    ls(" inline_lookup=true prefetch_batches=2");
    emit_line();
  }
  adhoc_timer("load transcripts", jitter(123400));
  adhoc_timer("build interval index", jitter(56700));
  adhoc_timer("load regulatory features", jitter(8900));
  if (want_lance) {
    ls("[vep-lance-profile] transcript_lookup_open path=/c/transcripts.lance");
    kv("rows", 250000 + below(10000)), kt("seconds", jitter(334000), 3, 0);
    emit_line();
  }
  for (long c = 0; c < contigs; c++) {
    const char *chrom = CHROMS[c];
    uint64_t contig_rows = 0;
    double elapsed = 0;
    emit_contig_start(chrom, &t);
    for (;;) {
      uint64_t take_us = jitter(41000.0 * batch_rows / 5000);
      emit_lance_batch((uint64_t)batch_rows, take_us, &t);
      uint64_t engine = 0;
      for (long w = 0; w < workers; w++)
        engine += emit_worker((uint64_t)(batch_rows / workers + (w == 0 ? batch_rows % workers : 0)));
      double f = batch_rows / 5000.0;
      uint64_t wait = jitter(take_us * 0.25), hydrate = jitter(20000 * f), projection = jitter(2500 * f);
      t.engine_us += engine, t.lookup_wait_us += wait, t.hydrate_us += hydrate, t.projection_us += projection;
      t.annotate_us += engine + wait + hydrate + projection + jitter(3000 * f);
      t.stream_next_us += jitter(9000 * f), t.batch_to_lines_us += jitter(30000 * f);
      t.rows += (uint64_t)batch_rows, t.batches++;
      contig_rows += (uint64_t)batch_rows;
      for (uint64_t k = below((uint64_t)noise * 2 + 1); k > 0; k--) ordinary_line(chrom, t.batches);
      elapsed += (engine + wait + hydrate) / 1e6;
      show_bar(chrom, contig_rows, elapsed);
      busy(work_us);
      double done = target_lines ? (double)total_lines / (double)target_lines : (double)total_bytes / (double)target_bytes;
      if (done >= (double)(c + 1) / (double)contigs) break;
    }
    emit_pipeline(chrom, &t);
  }
  if (want_pipeline) {
    ls("[VEP_PROFILE] vcf_sink_profile");
    kv("batches", t.batches), kv("rows", t.rows), kt("stream_next", t.stream_next_us, 3, 1);
    kt("batch_to_lines", t.batch_to_lines_us, 3, 1), kt("write", t.rows * 2, 3, 1);
    emit_line();
  }
  adhoc_timer("write output", jitter(456000));
  clear_bar();
  snprintf(line, sizeof line, "Done: %llu variants", (unsigned long long)(t.rows - t.rows / 40));
  llen = strlen(line);
  emit_line();
  flush_out();
  if (out) close(out_fd);
  printf("vep_emit: %llu bytes, %llu lines, %llu batches, %llu rows\n", (unsigned long long)total_bytes,
         (unsigned long long)total_lines, (unsigned long long)t.batches, (unsigned long long)t.rows);
  return 0;
}
