/* The log scanner's matching and aggregation (see core/scan.h): numbers with units, exact
 * aggregates, buckets, and the per-segment work. The string map, merging and distributions are in
 * core/scan_table.c; the block reader and threads in core/scan_read.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "scan.h"

#define HOT static inline __attribute__((always_inline))

/* ---- numbers -------------------------------------------------------------------------------- */

static const double P10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define EXACT_MAX (1ll << 53)

static int is_digit(char c) { return (unsigned)(c - '0') < 10; }
static int is_space(char c) { return c == ' ' || c == '\t'; }

/* The unit after the number: its kind and power of ten, or 0. */
HOT int unit_of(const char *p, size_t n, int *scale) {
  *scale = 0;
  if (n == 0) return SCAN_COUNT;
  if (p[n - 1] != 's') return 0;
  if (n == 1) return SCAN_TIME;
  if (n == 2) {
    switch (p[0]) {
    case 'm': *scale = 3; return SCAN_TIME;
    case 'u': *scale = 6; return SCAN_TIME;
    case 'n': *scale = 9; return SCAN_TIME;
    default: return 0;
    }
  }
  const unsigned char *u = (const unsigned char *)p;
  if (n == 3 && ((u[0] == 0xC2 && u[1] == 0xB5) || (u[0] == 0xCE && u[1] == 0xBC))) {
    *scale = 6;
    return SCAN_TIME;
  }
  return 0;
}

/* m × 10^e10, correctly rounded. */
double wb_scan_decimal(int64_t m, int e10) {
  if (m <= EXACT_MAX && m >= -EXACT_MAX && e10 >= -22 && e10 <= 22)
    return e10 < 0 ? (double)m / P10[-e10] : (double)m * P10[e10];
  char buf[48];
  snprintf(buf, sizeof buf, "%llde%d", (long long)m, e10);
  return strtod(buf, NULL);
}

static double num_value(const scan_num *n) { return n->exact ? wb_scan_decimal(n->m, n->e10) : n->x; }

/* Slow path: "<digits>e<exp>" rounded by strtod. */
static double slow_value(const char *digits, const char *end, int e10) {
  char buf[96];
  size_t n = 0;
  for (const char *p = digits; p < end && n < 64; p++)
    if (is_digit(*p)) buf[n++] = *p;
  snprintf(buf + n, sizeof buf - n, "e%d", e10);
  return strtod(buf, NULL);
}

/* Parses the token at p as a number: the token ends at the first space or tab, or at end, and
 * *stop is set there. Returns its kind or 0. The byte at end must not be a digit (a space, a
 * separator or a string's NUL), so digit runs need no bounds checks. */
HOT int number_token(const char *p, const char *end, scan_num *out, const char **stop) {
  const char *start = p;
  int neg = *p == '-';
  if (p < end && (*p == '-' || *p == '+')) p++;
  const char *digits = p;
  uint64_t m = 0;
  for (; is_digit(*p); p++) m = m * 10 + (uint64_t)(*p - '0');
  int nint = (int)(p - digits), nfrac = 0;
  const char *numend = p;
  if (p < end && *p == '.') {
    const char *f = ++p;
    for (; is_digit(*p); p++) m = m * 10 + (uint64_t)(*p - '0');
    nfrac = (int)(p - f);
    numend = p;
  }
  int ndigits = nint + nfrac, ex = 0;
  if (ndigits > 0 && p < end && (*p == 'e' || *p == 'E')) {
    const char *q = p + 1;
    int eneg = q < end && *q == '-';
    if (q < end && (*q == '-' || *q == '+')) q++;
    if (q < end && is_digit(*q)) {
      for (; q < end && is_digit(*q); q++)
        if (ex < 100000) ex = ex * 10 + (*q - '0');
      if (eneg) ex = -ex;
      p = q;
    }
  }
  const char *unit = p;
  while (p < end && !is_space(*p)) p++;
  *stop = p;
  if (ndigits == 0) {
    size_t n = (size_t)(p - start);
    int t = n == 4 && memcmp(start, "true", 4) == 0;
    if (!t && !(n == 5 && memcmp(start, "false", 5) == 0)) return 0;
    *out = (scan_num){t, 0, 1, t};
    return SCAN_BOOL;
  }
  int scale;
  int kind = unit_of(unit, (size_t)(p - unit), &scale);
  if (!kind || ndigits > 64) return 0;
  int e10 = ex - nfrac - scale;
  if (ndigits <= 19 && m <= EXACT_MAX && e10 >= -300 && e10 <= 300) {
    *out = (scan_num){neg ? -(int64_t)m : (int64_t)m, e10, 1, 0};
  } else {
    double x = slow_value(digits, numend, e10);
    *out = (scan_num){0, 0, 0, neg ? -x : x};
  }
  return kind;
}

int wb_scan_number(const char *p, const char *end, double *out) {
  scan_num n;
  const char *stop;
  int kind = p < end ? number_token(p, end, &n, &stop) : 0;
  if (!kind || stop != end) return 0;
  *out = num_value(&n);
  return kind;
}

/* ---- aggregates ------------------------------------------------------------------------------ */

#define MSUM_MAX (1ll << 62)

/* v × 10^d (0 ≤ d), or 0 with *ok cleared when it would leave ±MSUM_MAX. */
static int64_t widen(int64_t v, int d, int *ok) {
  for (; d > 0 && *ok; d--) {
    if (v > MSUM_MAX / 10 || v < -MSUM_MAX / 10) *ok = 0;
    else v *= 10;
  }
  return *ok ? v : 0;
}

/* Brings a (exact) to exponent e10 ≤ a->e10; 0 when that would overflow. */
static int lower_exponent(scan_agg *a, int e10) {
  int ok = 1, d = a->e10 - e10;
  int64_t s = widen(a->msum, d, &ok), lo = widen(a->mmin, d, &ok), hi = widen(a->mmax, d, &ok);
  if (!ok) return 0;
  a->msum = s, a->mmin = lo, a->mmax = hi, a->e10 = e10;
  return 1;
}

void wb_scan_agg_to_double(scan_agg *a) {
  if (!a->exact) return;
  a->exact = 0;
  a->sum = wb_scan_decimal(a->msum, a->e10);
  a->min = wb_scan_decimal(a->mmin, a->e10);
  a->max = wb_scan_decimal(a->mmax, a->e10);
}

static void add_double(scan_agg *a, double x) {
  wb_scan_agg_to_double(a);
  if (a->count == 0) {
    a->min = a->max = x;
  } else {
    if (x < a->min) a->min = x;
    if (x > a->max) a->max = x;
  }
  a->sum += x;
  a->count++;
}

/* Adds count values of sum `sum`, least min and greatest max, at a's exponent, to the exact a;
 * 0 (a unchanged) when a's sum is beyond ±MSUM_MAX. */
HOT int add_exact(scan_agg *a, int64_t sum, int64_t min, int64_t max, int64_t count) {
  if (a->msum >= MSUM_MAX || a->msum <= -MSUM_MAX) return 0;
  a->msum += sum;
  if (min < a->mmin) a->mmin = min;
  if (max > a->mmax) a->mmax = max;
  a->count += count;
  return 1;
}

HOT void agg_add(scan_agg *a, const scan_num *n) {
  if (n->exact && a->exact && a->e10 == n->e10 && add_exact(a, n->m, n->m, n->m, 1)) return;
  if (n->exact) {
    if (a->count == 0) {
      *a = (scan_agg){1, 1, n->e10, n->m, n->m, n->m, 0, 0, 0};
      return;
    }
    /* an equal exponent failed above on the sum's range only */
    if (a->exact && ((n->e10 < a->e10 && lower_exponent(a, n->e10)) || n->e10 > a->e10)) {
      int ok = 1;
      int64_t m = widen(n->m, n->e10 - a->e10, &ok);
      if (ok && add_exact(a, m, m, m, 1)) return;
    }
  }
  add_double(a, num_value(n));
}

void wb_scan_agg_merge(scan_agg *d, const scan_agg *s) {
  if (s->count == 0) return;
  if (d->count == 0) {
    *d = *s;
    return;
  }
  if (d->exact && s->exact) {
    scan_agg t = *s;
    int e10 = d->e10 < t.e10 ? d->e10 : t.e10;
    if (lower_exponent(d, e10) && lower_exponent(&t, e10) && t.msum < MSUM_MAX && t.msum > -MSUM_MAX &&
        add_exact(d, t.msum, t.mmin, t.mmax, t.count))
      return;
  }
  scan_agg t = *s;
  wb_scan_agg_to_double(&t);
  wb_scan_agg_to_double(d);
  d->sum += t.sum;
  d->count += t.count;
  if (t.min < d->min) d->min = t.min;
  if (t.max > d->max) d->max = t.max;
}

/* ---- buckets ----------------------------------------------------------------------------------- */

/* The index of key in b's aggregates, or -1 (dropped, or out of memory: *err). */
int wb_scan_bucket_key(scan_bucket *b, const char *key, size_t len, int64_t *dropped, int *err) {
  int i = wb_scan_map_get(&b->keys, key, len, SCAN_MAX_KEYS);
  if (i < 0) {
    if (i == -2) *err = ENOMEM;
    else (*dropped)++;
    return -1;
  }
  if ((size_t)i >= b->aggs_cap) {
    size_t cap = b->aggs_cap ? b->aggs_cap * 2 : 32;
    scan_agg *a = realloc(b->aggs, cap * sizeof *a);
    if (!a) {
      *err = ENOMEM;
      return -1;
    }
    memset(a + b->aggs_cap, 0, (cap - b->aggs_cap) * sizeof *a);
    b->aggs = a;
    b->aggs_cap = cap;
  }
  return i;
}

int wb_scan_bucket_push(scan_bucket *b, const double *x, size_t n) {
  if (b->nvals + n > b->vals_cap) {
    size_t cap = b->vals_cap ? b->vals_cap * 2 : 256;
    while (cap < b->nvals + n) cap *= 2;
    double *v = realloc(b->vals, cap * sizeof *v);
    if (!v) return ENOMEM;
    b->vals = v;
    b->vals_cap = cap;
  }
  memcpy(b->vals + b->nvals, x, n * sizeof *x);
  b->nvals += n;
  return 0;
}

int wb_scan_bucket_keep(scan_bucket *b, const char *s, size_t len) {
  char *k = realloc(b->kept, len + 1);
  if (!k) return ENOMEM;
  memcpy(k, s, len);
  k[len] = 0;
  b->kept = k;
  b->kept_len = len;
  b->has_kept = 1;
  return 0;
}

/* ---- segments ----------------------------------------------------------------------------------- */

HOT int same(const char *a, const char *b, size_t n) {
  uint64_t x, y;
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      memcpy(&x, a + i, 8);
      memcpy(&y, b + i, 8);
      if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
  }
  uint32_t u, w;
  if (n >= 4) {
    memcpy(&u, a, 4), memcpy(&w, b, 4);
    if (u != w) return 0;
    memcpy(&u, a + n - 4, 4), memcpy(&w, b + n - 4, 4);
    return u == w;
  }
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* The first '=', space or tab in [p, q), or q. Reads up to 15 bytes past q. */
HOT const char *key_end(const char *p, const char *q) {
#ifdef __SSE2__
  const __m128i eq = _mm_set1_epi8('='), sp = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t');
  for (; p < q; p += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, eq), _mm_cmpeq_epi8(v, sp)), _mm_cmpeq_epi8(v, tab));
    unsigned m = (unsigned)_mm_movemask_epi8(hit);
    if (m) return p + __builtin_ctz(m) < q ? p + __builtin_ctz(m) : q;
  }
  return q;
#else
  while (p < q && *p != '=' && !is_space(*p)) p++;
  return p;
#endif
}

/* The first space or tab in [p, q), or q. Reads up to 15 bytes past q. */
HOT const char *space_at(const char *p, const char *q) {
#ifdef __SSE2__
  const __m128i sp = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t');
  for (; p < q; p += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, tab)));
    if (m) return p + __builtin_ctz(m) < q ? p + __builtin_ctz(m) : q;
  }
  return q;
#else
  while (p < q && !is_space(*p)) p++;
  return p;
#endif
}

static int has_word(const char *p, const char *q, scan_str w) {
  for (const char *s = p; s < q && (s = memmem(s, (size_t)(q - s), w.s, w.len)); s++) {
    const char *e = s + w.len;
    if ((s == p || is_space(s[-1])) && (e == q || is_space(*e))) return 1;
  }
  return 0;
}

/* "label......   123.4ms": the label (dots and spaces trimmed) and the trailing value. */
static int parse_label(const char *p, const char *q, int kinds, scan_str *label, scan_num *x) {
  while (q > p && is_space(q[-1])) q--;
  const char *v = q;
  while (v > p && !is_space(v[-1])) v--;
  const char *stop;
  if (v == q || !(number_token(v, q, x, &stop) & kinds)) return 0;
  while (p < v && is_space(*p)) p++;
  const char *e = v;
  while (e > p && (is_space(e[-1]) || e[-1] == '.')) e--;
  if (e == p || memchr(p, '=', (size_t)(e - p))) return 0;
  *label = (scan_str){p, (size_t)(e - p)};
  return 1;
}

static void add_value(scanner *sc, scan_bucket *b, const scan_num *n) {
  agg_add(&b->value, n);
  double x = num_value(n);
  if (b->collect && wb_scan_bucket_push(b, &x, 1) != 0) sc->err = ENOMEM;
}

/* Aggregates the key=value tokens of [p, q) into b: per key (the kinds r->sum selects) and the
 * line value (the first of r->value_keys present). Token i's key is first tried against the key
 * the i-th token had in the bucket's previous line (b->hint), which skips hashing on logs that
 * print the same keys in the same order. */
static void tokens(scanner *sc, const scan_rule *r, scan_result *res, scan_bucket *b, const char *p,
                   const char *q) {
  int best = r->nvalue, ord = 0;
  scan_num line_value = {0, 0, 1, 0};
  const char *s = p;
  while (s < q) {
    if (is_space(*s)) {
      s++;
      continue;
    }
    const char *k = s, *eq = NULL;
    int ki = -1;
    uint32_t h = ord < SCAN_HINTS ? b->hint[ord] : 0;
    if (h) {
      const struct scan_map_entry *e = &b->keys.ents[h - 1];
      if ((size_t)(q - k) > e->len && k[e->len] == '=' && same(k, b->keys.arena + e->off, e->len)) {
        ki = (int)h - 1;
        eq = k + e->len;
      }
    }
    if (!eq) {
      eq = key_end(k, q);
      if (eq == q || *eq != '=' || eq == k) {
        s = space_at(eq, q);
        continue;
      }
    }
    const char *v = eq + 1;
    int slot = ord++;
    size_t klen = (size_t)(eq - k);
    int value_key = best;
    for (int i = 0; i < best; i++) {
      if (r->value_keys[i].len == klen && same(r->value_keys[i].s, k, klen)) {
        value_key = i;
        break;
      }
    }
    if (!r->sum && value_key == best) {
      s = space_at(v, q);
      continue;
    }
    scan_num x;
    int kind = number_token(v, q, &x, &s);
    if (!kind) continue;
    if (value_key < best) {
      best = value_key;
      line_value = x;
    }
    if (kind & r->sum) {
      if (ki < 0) ki = wb_scan_bucket_key(b, k, klen, &res->dropped_keys, &sc->err);
      if (ki >= 0) {
        agg_add(&b->aggs[ki], &x);
        if (slot < SCAN_HINTS) b->hint[slot] = (uint32_t)ki + 1;
      }
    }
  }
  if (best < r->nvalue) add_value(sc, b, &line_value);
}

/* The bucket of group name of rule ri: one of the rule's last few groups, or from the map. */
static scan_bucket *group_of(scanner *sc, int ri, const char *name, size_t len) {
  scan_result *res = &sc->res[ri];
  uint32_t *recent = sc->recent[ri];
  for (int i = 0; i < 4 && recent[i]; i++) {
    const struct scan_map_entry *e = &res->groups.ents[recent[i] - 1];
    if (e->len == len && same(res->groups.arena + e->off, name, len)) return &res->buckets[recent[i] - 1];
  }
  scan_bucket *b = wb_scan_group_bucket(res, name, len, &sc->spec->rules[ri], &sc->err);
  if (b) {
    memmove(recent + 1, recent, 3 * sizeof *recent);
    recent[0] = (uint32_t)(b - res->buckets) + 1;
  }
  return b;
}

/* Applies rule ri to the segment seg..q whose text after the tag starts at p. */
static void apply(scanner *sc, int ri, const char *seg, const char *p, const char *q) {
  const scan_rule *r = &sc->spec->rules[ri];
  scan_result *res = &sc->res[ri];
  if (r->word.len && !has_word(p, q, r->word)) return;
  scan_bucket *b = &res->whole;
  scan_num label_value;
  if (r->group == SCAN_GROUP_EVENT) {
    const char *s = p;
    while (s < q && is_space(*s)) s++;
    const char *e = space_at(s, q);
    if (memchr(s, '=', (size_t)(e - s))) e = s;
    res->whole.n++;
    b = group_of(sc, ri, s, (size_t)(e - s));
  } else if (r->group == SCAN_GROUP_LABEL) {
    scan_str label;
    if (!parse_label(p, q, r->label_kinds, &label, &label_value)) return;
    res->whole.n++;
    b = group_of(sc, ri, label.s, label.len);
  }
  if (!b) return;
  b->n++;
  if (r->keep == SCAN_KEEP_LAST || (r->keep == SCAN_KEEP_FIRST && !b->has_kept)) {
    if (wb_scan_bucket_keep(b, seg, (size_t)(q - seg)) != 0) sc->err = ENOMEM;
  }
  if (r->group == SCAN_GROUP_LABEL) add_value(sc, b, &label_value);
  else if (r->sum || r->nvalue) tokens(sc, r, res, b, p, q);
}

int wb_scan_scanner_init(scanner *sc) {
  int n = sc->spec->nrules;
  sc->tags = calloc((size_t)n + 1, sizeof *sc->tags);
  sc->recent = calloc((size_t)n + 1, sizeof *sc->recent);
  if (!sc->tags || !sc->recent) return ENOMEM;
  for (int i = 0; i < n; i++) {
    scan_str t = sc->spec->rules[i].tag;
    struct scan_tag *g = &sc->tags[i];
    size_t k = t.len < 8 ? t.len : 8;
    memcpy(&g->head, t.s, k);
    memset(&g->mask, 0xff, k);
    g->same_as = -1;
    for (int j = 0; j < i && g->same_as < 0; j++)
      if (sc->spec->rules[j].tag.len == t.len && memcmp(sc->spec->rules[j].tag.s, t.s, t.len) == 0) g->same_as = j;
    sc->first[(unsigned char)t.s[0]] = 1;
  }
  return 0;
}

void wb_scan_segment(scanner *sc, const char *p, const char *q) {
  size_t len = (size_t)(q - p);
  uint64_t head;
  memcpy(&head, p, 8);
  for (int i = 0; i < sc->spec->nrules; i++) {
    struct scan_tag *g = &sc->tags[i];
    if (g->same_as >= 0) {
      g->hit = sc->tags[g->same_as].hit;
    } else {
      scan_str t = sc->spec->rules[i].tag;
      g->hit = (head & g->mask) == g->head && len >= t.len && (t.len <= 8 || same(p + 8, t.s + 8, t.len - 8));
    }
    if (g->hit) apply(sc, i, p, p + sc->spec->rules[i].tag.len, q);
  }
}

int wb_scan_may_match(const scanner *sc, const char *p, size_t len) {
  for (int i = 0; i < sc->spec->nrules; i++) {
    scan_str t = sc->spec->rules[i].tag;
    if (memcmp(p, t.s, len < t.len ? len : t.len) == 0) return 1;
  }
  return 0;
}
