/* The log scanner behind wb.scan (bindings in core/scan.c; engine in core/scan_match.c: numbers,
 * aggregates, matching; core/scan_table.c: tables, merging, distributions; core/scan_read.c: reading).
 *
 * A log is cut into *segments*: the text between two separators, where both '\n' and '\r' are
 * separators (so a tqdm progress bar redrawn with carriage returns is a run of segments, and a
 * profile line written after one starts a segment of its own). A segment matches a rule when it
 * starts with the rule's tag, byte for byte; a tag anywhere else is ignored. The matching segment
 * is cut into space- or tab-separated tokens; `key=value` tokens are aggregated, bare tokens (no
 * '=', or an empty key) are skipped.
 *
 * Numbers (wb_scan_number): [+-]digits[.digits][e[+-]digits] followed by nothing (a count), by a time
 * unit s, ms, us, µs, μs or ns (converted to seconds), or the words true / false (1 / 0). The
 * conversion is correctly rounded (the double strtod gives). Sums are exact decimal sums while
 * they fit (see scan_agg), so they do not depend on the order of lines or on threads.
 *
 * Memory: per rule, per group, one aggregate per distinct key (at most SCAN_MAX_KEYS keys and
 * SCAN_MAX_GROUPS groups; the rest are counted as dropped), the kept line and the collected values.
 * Files are read in blocks, never whole; a matching segment longer than max_line bytes is skipped
 * and counted as truncated. Uncompressed regular files may be split into byte ranges scanned by
 * threads (scan_spec.threads); results are merged in file order, so first-seen key and group
 * order, kept lines and collected values are those of a sequential scan. */
#pragma once
#include <stddef.h>
#include <stdint.h>

enum { SCAN_TIME = 1, SCAN_COUNT = 2, SCAN_BOOL = 4 };
enum { SCAN_GROUP_NONE, SCAN_GROUP_EVENT, SCAN_GROUP_LABEL };
enum { SCAN_KEEP_NONE, SCAN_KEEP_FIRST, SCAN_KEEP_LAST };

#define SCAN_MAX_KEYS 4096
#define SCAN_MAX_GROUPS 4096
#define SCAN_MAX_VALUE_KEYS 8
#define SCAN_PARALLEL_MIN (64 << 20)
#define SCAN_HINTS 64

/* Parses the whole of [p, end) as a number; returns its kind (SCAN_TIME with *out in seconds,
 * SCAN_COUNT, SCAN_BOOL with *out 0 or 1) or 0 when it is not one. The byte at end must be
 * readable and not a digit (a NUL-terminated string is fine). */
int wb_scan_number(const char *p, const char *end, double *out);

typedef struct scan_str {
  const char *s;
  size_t len;
} scan_str;

typedef struct scan_rule {
  scan_str tag;                            /* required, not empty */
  scan_str word;                           /* len 0: any; else the segment must hold this bare token */
  int group;                               /* SCAN_GROUP_*: event = first token after the tag */
  int sum;                                 /* SCAN_* kinds of key=value tokens aggregated per key */
  int label_kinds;                         /* SCAN_GROUP_LABEL: kinds of the trailing value counted */
  scan_str value_keys[SCAN_MAX_VALUE_KEYS]; /* the line's value: the first of these keys present */
  int nvalue;
  int collect_all;                         /* collect line values of every group */
  const scan_str *collect;                 /* ... or of the groups named here */
  int ncollect;
  int keep;                                /* SCAN_KEEP_*: the first or last matching segment */
} scan_rule;

typedef struct scan_spec {
  const scan_rule *rules;
  int nrules;
  size_t max_line; /* longest matching segment kept whole */
  int threads;     /* 0: one per online CPU (at most 8) for regular files of SCAN_PARALLEL_MIN bytes or
                    * more; n: up to n (at most 8) for regular files, 1 MiB per thread at least */
} scan_spec;

/* A parsed number: exactly m × 10^e10 when exact (|m| ≤ 2^53, the usual case), else x. */
typedef struct scan_num {
  int64_t m;
  int e10, exact;
  double x;
} scan_num;

/* An aggregate. While every value was exact, the sum, min and max are kept exactly as decimal
 * mantissas over one exponent (so sums do not depend on order or threads); wb_scan_path returns
 * every aggregate converted (exact = 0, sum/min/max correctly rounded doubles). */
typedef struct scan_agg {
  int64_t count;
  int exact, e10;
  int64_t msum, mmin, mmax;
  double sum, min, max;
} scan_agg;

/* String -> dense index in first-seen order. */
typedef struct scan_map {
  uint32_t *slots; /* index + 1, 0 = empty */
  uint32_t mask, n, cap;
  struct scan_map_entry {
    uint64_t hash;
    uint32_t off, len;
  } *ents;
  char *arena;
  size_t arena_len, arena_cap;
} scan_map;

/* Returns the index of [key, key + len), adding it when absent; -1 when the map holds `limit`
 * entries already or memory ran out. */
int wb_scan_map_get(scan_map *m, const char *key, size_t len, uint32_t limit);
scan_str wb_scan_map_name(const scan_map *m, uint32_t i);

typedef struct scan_bucket {
  int64_t n;          /* matching segments */
  scan_map keys;
  scan_agg *aggs;     /* per key index */
  size_t aggs_cap;
  uint32_t hint[SCAN_HINTS]; /* key index + 1 of the i-th key=value token of the last line */
  scan_agg value;     /* line values */
  int collect;
  double *vals;
  size_t nvals, vals_cap;
  char *kept;
  size_t kept_len;
  int has_kept;
} scan_bucket;

typedef struct scan_result {
  scan_bucket whole;  /* ungrouped rules; for grouped ones only n */
  scan_map groups;
  scan_bucket *buckets;
  size_t buckets_cap;
  int64_t dropped_keys, dropped_groups;
} scan_result;

typedef struct scan_out {
  scan_result *results; /* one per rule */
  int nrules;
  int64_t bytes, lines, truncated;
  int threads, gzip;
} scan_out;

/* Scans the file at path (gzip-compressed when a regular file starts with the gzip magic).
 * Returns 0, or an errno value with err filled ("path: strerror", "path: gzip: what"); EINTR when
 * a signal is pending (wb signals). */
int wb_scan_path(const scan_spec *spec, const char *path, scan_out *out, char *err, size_t errlen);
/* Frees what wb_scan_path allocated (safe on a zeroed or partly filled out). */
void wb_scan_out_free(scan_out *out);

/* Distribution of a bucket's collected values (reorders them). */
typedef struct scan_dist {
  double min, max, mean, median;
  size_t n;
} scan_dist;
scan_dist wb_scan_bucket_dist(scan_bucket *b);

/* ---- between core/scan_match.c (matching) and core/scan_read.c (reading) ---------------------------- */

/* One scanning thread's state: its own results, one per rule. */
typedef struct scanner {
  const scan_spec *spec;
  scan_result *res;
  unsigned char first[256]; /* 1 for the first byte of some tag */
  struct scan_tag {
    uint64_t head, mask; /* the tag's first 8 bytes, and which of them it has */
    int same_as;         /* an earlier rule with the same tag, or -1 */
    int hit;             /* whether the current segment starts with it */
  } *tags;               /* per rule */
  uint32_t (*recent)[4]; /* per rule: its last groups (index + 1), tried before the map */
  int err;               /* ENOMEM once an allocation failed */
} scanner;

/* Fills sc->tags and sc->first for sc->spec; 0 or ENOMEM. */
int wb_scan_scanner_init(scanner *sc);

/* m × 10^e10 correctly rounded. */
double wb_scan_decimal(int64_t m, int e10);
void wb_scan_agg_to_double(scan_agg *a);
void wb_scan_agg_merge(scan_agg *d, const scan_agg *s);
/* The index of key in b's aggregates (added when new), or -1: dropped (counted in *dropped) or
 * out of memory (*err = ENOMEM). */
int wb_scan_bucket_key(scan_bucket *b, const char *key, size_t len, int64_t *dropped, int *err);
int wb_scan_bucket_push(scan_bucket *b, const double *x, size_t n);
int wb_scan_bucket_keep(scan_bucket *b, const char *s, size_t len);
/* The bucket of group `name` in res (created collecting values when r asks for that group), or
 * NULL: dropped (counted) or out of memory (*err = ENOMEM). */
scan_bucket *wb_scan_group_bucket(scan_result *res, const char *name, size_t len, const scan_rule *r, int *err);
void wb_scan_result_init(scan_result *res, const scan_rule *r);
/* Converts every aggregate of res to doubles. */
void wb_scan_result_finish(scan_result *res);
void wb_scan_result_free(scan_result *res);
/* Adds s (a later part of the file) into d; 0 or ENOMEM. */
int wb_scan_result_merge(scan_result *d, const scan_result *s, const scan_rule *r);
/* Applies every rule whose tag starts the segment [p, q); 16 bytes after q must be readable and
 * the byte at q must not be a digit. */
void wb_scan_segment(scanner *sc, const char *p, const char *q);
/* Whether the incomplete segment [p, p + len) may still turn out to start with a tag. */
int wb_scan_may_match(const scanner *sc, const char *p, size_t len);
