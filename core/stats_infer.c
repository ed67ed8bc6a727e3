/* wb.stats inference: percentile bootstrap confidence intervals, the Mann–Whitney rank test
 * and step detection over a series (L1 optimal partitioning). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "stats.h"

/* ---- seeded PRNG: xoshiro256** seeded by splitmix64 (bit-identical on every machine) ---- */

typedef struct {
  uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Uniform in [0, n), unbiased (rejection). */
static size_t rng_below(rng *r, size_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n, v;
  do v = rng_next(r);
  while (v >= limit);
  return (size_t)(v % n);
}

/* ---- bootstrap ------------------------------------------------------------------------ */

/* Draws n values of x with replacement into out and returns their mean or median. */
static double resample_stat(rng *r, const double *x, size_t n, double *out, int median) {
  for (size_t i = 0; i < n; i++) out[i] = x[rng_below(r, n)];
  return median ? wb_stats_median_inplace(out, n) : wb_stats_mean(out, n);
}

static double stat_of(const double *x, size_t n, double *work, int median) {
  memcpy(work, x, n * sizeof *work);
  return median ? wb_stats_median_inplace(work, n) : wb_stats_mean(work, n);
}

/* Above this many drawn values (resamples x (nx + ny): about a second of CPU), with every sample
 * at least BOOT_LARGE_N long, the bootstrap's distribution is replaced by its large-sample normal
 * limit (normal_ci). */
#define BOOT_WORK_MAX 2e8
#define BOOT_LARGE_N 1000

/* z with P(Z > z) = tail for a standard normal Z (bisection on erfc; tail in (0, 0.5]). */
double wb_stats_upper_z(double tail) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; i++) {
    double mid = (lo + hi) / 2;
    if (0.5 * erfc(mid / sqrt(2)) > tail) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/* A sample's statistic c and its standard error se, and on the log scale se_log (0 when the
 * values are not all positive). The mean: s / sqrt(n). The median: from the order statistics
 * k = (n + 1) / 2 - sqrt(n) and n + 1 - k, which bracket it with about 95.4% confidence (z = 2),
 * so se = (x(n+1-k) - x(k)) / 4, as in Price and Bonett's interval for a ratio of medians.
 * work: n values, sorted here for the median. */
typedef struct {
  double c, se, se_log;
} spread;

static spread spread_of(const double *x, size_t n, double *work, int median) {
  spread r = {0, 0, 0};
  if (!median) {
    r.c = wb_stats_mean(x, n);
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (x[i] - r.c) * (x[i] - r.c);
    r.se = n > 1 ? sqrt(ss / (double)(n - 1) / (double)n) : 0;
    r.se_log = r.c > 0 ? r.se / r.c : 0;
    return r;
  }
  memcpy(work, x, n * sizeof *work);
  wb_stats_sort(work, n);
  r.c = wb_stats_quantile_sorted(work, n, 0.5);
  double kf = floor(((double)n + 1) / 2 - sqrt((double)n));
  size_t k = kf < 1 ? 1 : (size_t)kf;
  double lo = work[k - 1], hi = work[n - k];
  r.se = (hi - lo) / 4;
  r.se_log = lo > 0 ? (log(hi) - log(lo)) / 4 : 0;
  return r;
}

/* Pushes lo, hi of the normal-limit interval: stat +- z se for one sample; for a ratio
 * exp(log(cy / cx) +- z sqrt(se_log_x^2 + se_log_y^2)) when both are positive, else the delta
 * method on the ratio itself. */
static void normal_ci(lua_State *L, const double *x, size_t nx, const double *y, size_t ny, double *wx,
                      double *wy, int median, double level) {
  double z = wb_stats_upper_z((1 - level) / 2);
  spread sx = spread_of(x, nx, wx, median);
  if (!y) {
    lua_pushnumber(L, sx.c - z * sx.se);
    lua_pushnumber(L, sx.c + z * sx.se);
    return;
  }
  spread sy = spread_of(y, ny, wy, median);
  double r = sy.c / sx.c;
  if (sx.c > 0 && sy.c > 0 && sx.se_log > 0 && sy.se_log > 0) {
    double s = sqrt(sx.se_log * sx.se_log + sy.se_log * sy.se_log);
    lua_pushnumber(L, r * exp(-z * s));
    lua_pushnumber(L, r * exp(z * s));
    return;
  }
  double rel = sqrt(pow(sx.se / sx.c, 2) + pow(sy.se / sy.c, 2));
  lua_pushnumber(L, r - z * fabs(r) * rel);
  lua_pushnumber(L, r + z * fabs(r) * rel);
}

/* -- lo, hi, est = wb.stats.bootstrap_ci(xs [, ys] [, opts]) : percentile bootstrap confidence
 * interval. opts: stat = "mean" | "median" (one sample; the default without ys) or
 * "ratio_mean" | "ratio_median" (stat(ys) / stat(xs), i.e. new/base, xs and ys resampled
 * independently; the default with ys), level = 0.95, resamples = 10000, seed = 1.
 * est is the statistic on the original data. The PRNG (xoshiro256** seeded by splitmix64)
 * and the arithmetic are fixed, so a seed gives bit-identical bounds on every machine.
 * The second argument is ys when it is samples or a non-empty sequence or when opts follows
 * it; bootstrap_ci(xs, nil, opts) is the one-sample form. When resamples x (#xs + #ys) exceeds
 * BOOT_WORK_MAX (2e8: e.g. 2000 resamples of 120,000 values) and each sample holds at least
 * BOOT_LARGE_N values, lo and hi are the bootstrap's large-sample normal limit instead
 * (normal_ci), at the same level and independent of the seed: at those sizes the percentile
 * bootstrap takes minutes and gives the same interval (tests/lua/stats_test.lua). */
int wb_stats_bootstrap_ci(lua_State *L) {
  lua_settop(L, 3);
  int has_ys = luaL_testudata(L, 2, "wb.stats.samples") ||
               (lua_istable(L, 2) && (lua_rawlen(L, 2) > 0 || !lua_isnil(L, 3)));
  int opts = wb_opt_table(L, has_ys || lua_isnil(L, 2) ? 3 : 2);
  const char *stat = wb_opt_string(L, opts, "stat", has_ys ? "ratio_mean" : "mean");
  double level = wb_opt_number(L, opts, "level", 0.95);
  lua_Integer resamples = wb_opt_integer(L, opts, "resamples", 10000);
  uint64_t seed = (uint64_t)wb_opt_integer(L, opts, "seed", 1);
  int ratio = strncmp(stat, "ratio_", 6) == 0;
  const char *base = ratio ? stat + 6 : stat;
  if (strcmp(base, "mean") != 0 && strcmp(base, "median") != 0)
    return luaL_error(L, "option 'stat': unknown statistic '%s'", stat);
  if (ratio && !has_ys) return luaL_error(L, "stat '%s' needs ys", stat);
  if (!ratio && has_ys)
    return luaL_error(L, "stat '%s' takes one sample; use 'ratio_%s'", stat, stat);
  if (!(level > 0 && level < 1)) return luaL_error(L, "option 'level' must be in (0, 1)");
  if (resamples < 1 || resamples > 100000000)
    return luaL_error(L, "option 'resamples' must be in [1, 1e8]");
  int median = strcmp(base, "median") == 0;

  size_t nx, ny = 0, nb = (size_t)resamples;
  double *x = wb_stats_check_nonempty(L, 1, &nx);
  double *y = has_ys ? wb_stats_check_nonempty(L, 2, &ny) : NULL;
  double *bx = wb_stats_scratch(L, nx), *by = wb_stats_scratch(L, ny);
  double est = stat_of(x, nx, bx, median);
  if (ratio) est = stat_of(y, ny, by, median) / est;
  if ((double)nb * (double)(nx + ny) > BOOT_WORK_MAX && nx >= BOOT_LARGE_N && (!ratio || ny >= BOOT_LARGE_N)) {
    normal_ci(L, x, nx, ratio ? y : NULL, ny, bx, by, median, level);
    lua_pushnumber(L, est);
    return 3;
  }
  double *boot = wb_stats_scratch(L, nb);

  rng r;
  rng_seed(&r, seed);
  for (size_t b = 0; b < nb; b++) {
    if (wb_signal_pending()) return wb_raise_interrupt(L);
    double sx = resample_stat(&r, x, nx, bx, median);
    boot[b] = ratio ? resample_stat(&r, y, ny, by, median) / sx : sx;
  }
  wb_stats_sort(boot, nb);
  double alpha = (1 - level) / 2;
  lua_pushnumber(L, wb_stats_quantile_sorted(boot, nb, alpha));
  lua_pushnumber(L, wb_stats_quantile_sorted(boot, nb, 1 - alpha));
  lua_pushnumber(L, est);
  return 3;
}

/* ---- Mann–Whitney U ------------------------------------------------------------------- */

typedef struct {
  double v;
  int group;
} obs;

static int cmp_obs(const void *a, const void *b) {
  double x = ((const obs *)a)->v, y = ((const obs *)b)->v;
  return (x > y) - (x < y);
}

double *wb_stats_rank_sum_counts(lua_State *L, const size_t *rank, size_t total, size_t m, size_t *width) {
  size_t w = 0; /* the largest reachable sum, plus one: the m largest ranks */
  for (size_t k = 0; k < m; k++) w += rank[total - 1 - k];
  w += 1;
  double *c = wb_stats_scratch(L, (m + 1) * w);
  memset(c, 0, (m + 1) * w * sizeof *c);
  c[0] = 1;
  size_t reach = 0; /* the largest sum any subset of the items seen so far can have */
  for (size_t t = 0; t < total; t++) {
    size_t r = rank[t];
    reach += r;
    size_t top_k = t + 1 < m ? t + 1 : m;
    for (size_t k = top_k; k >= 1; k--) {
      double *row = c + k * w, *below = c + (k - 1) * w;
      size_t hi = reach < w - 1 ? reach : w - 1;
      for (size_t s = hi; s >= r; s--) row[s] += below[s - r];
    }
  }
  *width = w;
  return c + m * w;
}

/* Exact two-sided p of the rank sum of one group, conditional on the observed ranks (ties
 * included): of all ways to give `m` of the `total` sorted observations to that group, the
 * share whose rank sum is at least as far out on the nearer tail, doubled. Ranks are held
 * doubled (a midrank (i + j) / 2 + 1 becomes the integer i + j + 2). */
static double exact_p(lua_State *L, const obs *a, size_t total, int group, size_t m) {
  size_t *rank2 = lua_newuserdatauv(L, total * sizeof *rank2, 0);
  long long observed = 0;
  for (size_t i = 0, j; i < total; i = j + 1) {
    for (j = i; j + 1 < total && a[j + 1].v == a[i].v; j++) {
    }
    for (size_t k = i; k <= j; k++) {
      rank2[k] = i + j + 2;
      if (a[k].group == group) observed += (long long)(i + j + 2);
    }
  }
  size_t width;
  const double *dist = wb_stats_rank_sum_counts(L, rank2, total, m, &width);
  double all = 0, le = 0, ge = 0;
  for (size_t s = 0; s < width; s++) {
    all += dist[s];
    if ((long long)s <= observed) le += dist[s];
    if ((long long)s >= observed) ge += dist[s];
  }
  lua_pop(L, 2);
  double p = 2 * (le < ge ? le : ge) / all;
  return p < 1 ? p : 1;
}

/* -- r = wb.stats.mann_whitney(xs, ys) : two-sided Mann–Whitney U test, an ordered table
 * {u, p, z, exact}. u is the U of xs: the number of pairs (x, y) with x > y plus half the tied
 * pairs. When both samples have at most 50 values, p is exact and exact = true: the
 * permutation distribution of the rank sum given the observed midranks, so tied values (a
 * clock's resolution makes them common) cost no power; otherwise p comes from the normal
 * approximation with tie and continuity corrections. z is the normal-approximation
 * statistic in either case (positive when xs tend to be larger). */
int wb_stats_mann_whitney(lua_State *L) {
  lua_settop(L, 2);
  size_t n1, n2;
  double *x = wb_stats_check_nonempty(L, 1, &n1), *y = wb_stats_check_nonempty(L, 2, &n2);
  size_t total = n1 + n2;
  obs *a = lua_newuserdatauv(L, total * sizeof *a, 0);
  for (size_t i = 0; i < n1; i++) a[i] = (obs){x[i], 0};
  for (size_t i = 0; i < n2; i++) a[n1 + i] = (obs){y[i], 1};
  qsort(a, total, sizeof *a, cmp_obs);
  double rank_sum = 0, ties = 0;
  for (size_t i = 0, j; i < total; i = j + 1) {
    for (j = i; j + 1 < total && a[j + 1].v == a[i].v; j++) {
    }
    double rank = (double)(i + j) / 2 + 1, t = (double)(j - i + 1);
    for (size_t k = i; k <= j; k++)
      if (a[k].group == 0) rank_sum += rank;
    ties += t * t * t - t;
  }
  double dn1 = (double)n1, dn2 = (double)n2, dn = (double)total;
  double u = rank_sum - dn1 * (dn1 + 1) / 2, d = u - dn1 * dn2 / 2;
  double var = dn1 * dn2 / 12 * ((dn + 1) - ties / (dn * (dn - 1)));
  double z = var > 0 ? copysign(fmax(fabs(d) - 0.5, 0), d) / sqrt(var) : 0;
  int exact = n1 <= 50 && n2 <= 50;
  double p = exact ? exact_p(L, a, total, n1 <= n2 ? 0 : 1, n1 <= n2 ? n1 : n2)
                   : (var > 0 ? erfc(fabs(z) / sqrt(2)) : 1);
  wb_ordered_new(L);
  wb_set_num(L, "u", u);
  wb_set_num(L, "p", p);
  wb_set_num(L, "z", z);
  wb_set_bool(L, "exact", exact);
  return 1;
}

/* ---- step detection ------------------------------------------------------------------- */

/* A binary heap of values stored multiplied by sign (+1: max-heap, -1: min-heap). */
typedef struct {
  double *a, sum, sign;
  size_t n;
} heap;

static void heap_push(heap *h, double v) {
  size_t i = h->n++;
  double key = h->sign * v;
  h->sum += v;
  while (i > 0 && h->a[(i - 1) / 2] < key) {
    h->a[i] = h->a[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->a[i] = key;
}

static double heap_top(const heap *h) { return h->sign * h->a[0]; }

static double heap_pop(heap *h) {
  double top = heap_top(h), last = h->a[--h->n];
  h->sum -= top;
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->a[c + 1] > h->a[c]) c++;
    if (h->a[c] <= last) break;
    h->a[i] = h->a[c];
    i = c;
  }
  if (h->n) h->a[i] = last;
  return top;
}

/* Adds v to the running median split (lo: lower half, max-heap; hi: upper half) and returns
 * the L1 cost sum |x - median| of the values added so far. */
static double median_split_add(heap *lo, heap *hi, double v) {
  if (lo->n == 0 || v <= heap_top(lo))
    heap_push(lo, v);
  else
    heap_push(hi, v);
  if (lo->n > hi->n + 1)
    heap_push(hi, heap_pop(lo));
  else if (hi->n > lo->n)
    heap_push(lo, heap_pop(hi));
  double m = lo->n > hi->n ? heap_top(lo) : (heap_top(lo) + heap_top(hi)) / 2;
  return m * ((double)lo->n - (double)hi->n) - lo->sum + hi->sum;
}

/* Noise scale (a normal sigma) of a series from its m successive differences d: the larger of
 * 1.4826 * MAD and 1.253314 * mean absolute deviation (both around the median of d), over
 * sqrt(2). The mean form keeps heavy-tailed or quantized noise from looking quiet.
 * Uses d[0..2m); overwrites it. */
static double diff_sigma(double *d, size_t m) {
  if (m == 0) return 0;
  double *w = d + m;
  memcpy(w, d, m * sizeof *w);
  double med = wb_stats_median_inplace(w, m), meanad = 0;
  for (size_t i = 0; i < m; i++) {
    d[i] = fabs(d[i] - med);
    meanad += d[i];
  }
  double mad = wb_stats_median_inplace(d, m);
  return fmax(1.4826 * mad, 1.253314 * meanad / (double)m) / sqrt(2);
}

static double segment_median(const double *y, size_t from, size_t to, double *work) {
  memcpy(work, y + from, (to - from) * sizeof *work);
  return wb_stats_median_inplace(work, to - from);
}

/* -- steps = wb.stats.steps(series [, {min_size = 2, penalty = nil}]) : step detection in the
 * manner of asv. Fits a piecewise-constant function minimising the sum of absolute deviations
 * from each segment's median plus `penalty` per segment (optimal partitioning by dynamic
 * programming, O(n^2 log n) time, O(n) memory; segments have at least min_size points).
 * The default penalty is 3 * sigma * ln(n), sigma the noise scale estimated robustly from the
 * successive differences (see diff_sigma). Returns a list of {index (1-based first index of
 * the new segment), before, after (segment medians), ratio = after / before}. */
int wb_stats_steps(lua_State *L) {
  lua_settop(L, 2);
  int opts = wb_opt_table(L, 2);
  lua_Integer min_size = wb_opt_integer(L, opts, "min_size", 2);
  if (min_size < 1) return luaL_error(L, "option 'min_size' must be >= 1");
  int auto_penalty = lua_getfield(L, opts, "penalty") == LUA_TNIL;
  lua_pop(L, 1);
  double penalty = wb_opt_number(L, opts, "penalty", 0);
  if (!(penalty >= 0)) return luaL_error(L, "option 'penalty' must be >= 0");
  size_t n, k = (size_t)min_size;
  double *y = wb_stats_check_xs(L, 1, &n);
  if (n / 2 < k) {
    wb_array_new(L, 0);
    return 1;
  }

  double *work = wb_stats_scratch(L, 2 * n), *f = wb_stats_scratch(L, n + 1);
  size_t *prev = lua_newuserdatauv(L, (n + 1) * sizeof *prev, 0);
  double *ys = wb_stats_scratch(L, n);
  double shift = segment_median(y, 0, n, work);
  for (size_t i = 0; i < n; i++) ys[i] = y[i] - shift;
  if (auto_penalty) {
    for (size_t i = 0; i + 1 < n; i++) work[i] = ys[i + 1] - ys[i];
    penalty = 3 * diff_sigma(work, n - 1) * log((double)n);
  }

  heap lo = {work, 0, 1, 0}, hi = {work + n, 0, -1, 0};
  f[0] = 0;
  for (size_t j = 1; j <= n; j++) f[j] = HUGE_VAL;
  for (size_t i = 0; i + k <= n; i++) {
    if (wb_signal_pending()) return wb_raise_interrupt(L);
    if (f[i] == HUGE_VAL) continue;
    lo.n = hi.n = 0;
    lo.sum = hi.sum = 0;
    for (size_t j = i; j < n; j++) {
      double cost = median_split_add(&lo, &hi, ys[j]);
      if (j + 1 - i < k) continue;
      double c = f[i] + cost + penalty;
      if (c < f[j + 1]) {
        f[j + 1] = c;
        prev[j + 1] = i;
      }
    }
  }

  size_t nseg = 0, *ends = lua_newuserdatauv(L, n * sizeof *ends, 0);
  for (size_t b = n; b > 0; b = prev[b]) ends[nseg++] = b; /* last segment first */
  wb_array_new(L, (int)(nseg - 1));
  double before = 0;
  for (size_t s = nseg; s-- > 0;) {
    size_t start = s + 1 < nseg ? ends[s + 1] : 0, end = ends[s];
    double level = segment_median(y, start, end, work);
    if (s + 1 < nseg) {
      wb_ordered_new(L);
      wb_set_int(L, "index", (lua_Integer)start + 1);
      wb_set_num(L, "before", before);
      wb_set_num(L, "after", level);
      wb_set_num(L, "ratio", level / before);
      lua_rawseti(L, -2, (lua_Integer)(nseg - 1 - s));
    }
    before = level;
  }
  return 1;
}
