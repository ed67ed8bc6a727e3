/* wb.stats.shift_ci: the two-sample Hodges–Lehmann ratio (the median of the ratios y / x over
 * every pair of one value of each sample) and its distribution-free confidence interval, the
 * interval that goes with the Mann–Whitney test: on the log scale it is the set of shifts that
 * test would not reject at the same level (no ties). Robust as that test is to the odd run an
 * outside job slowed: a verdict drawn from both does not hang on one sample's mean. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "stats.h"

/* Both samples at most this size: the null distribution of U is counted exactly. */
#define SHIFT_EXACT_MAX 50
/* Pairwise ratios held at most (128 MiB); beyond, shift_ci declines. */
#define SHIFT_PAIRS_MAX ((size_t)1 << 24)

/* The lower critical value c: the largest c with P(U < c) <= tail under no shift (U the number
 * of pairs in which the second sample's value is the larger, no ties), so that the pairwise
 * ratios of order c and mn + 1 - c (1-based) bound the ratio with confidence 1 - 2 tail. */
static size_t critical(lua_State *L, size_t m, size_t n, double tail) {
  double mn = (double)m * (double)n;
  if (m > SHIFT_EXACT_MAX || n > SHIFT_EXACT_MAX) {
    /* the test rejects when U <= mn / 2 - 1/2 - z sd (its continuity correction) */
    double c = mn / 2 + 0.5 - wb_stats_upper_z(tail) * sqrt(mn * ((double)m + (double)n + 1) / 12);
    return c > 0 ? (size_t)c : 0;
  }
  size_t small = m < n ? m : n, total = m + n;
  size_t *rank = lua_newuserdatauv(L, total * sizeof *rank, 0);
  for (size_t i = 0; i < total; i++) rank[i] = i + 1;
  size_t width;
  const double *dist = wb_stats_rank_sum_counts(L, rank, total, small, &width);
  size_t least = small * (small + 1) / 2; /* the smallest rank sum: U = 0 */
  double all = 0, cum = 0;
  for (size_t s = 0; s < width; s++) all += dist[s];
  size_t c = 0;
  while (least + c < width && (cum + dist[least + c]) / all <= tail) cum += dist[least + c++];
  lua_pop(L, 2);
  return c;
}

/* -- est, lo, hi = wb.stats.shift_ci(xs, ys [, {level = 0.95}]) : the Hodges–Lehmann estimate of
 * the ratio ys / xs (new / base) and its distribution-free interval at level: exact critical
 * values when both samples hold at most 50 values, the normal approximation beyond. lo and hi are
 * nil when so few values cannot reach level. nil and the reason when a value of xs is not
 * positive (no ratio) or #xs * #ys exceeds 2^24. Raises on empty samples, NaN, or level outside
 * (0, 1). */
int wb_stats_shift_ci(lua_State *L) {
  lua_settop(L, 3);
  int t = wb_opt_table(L, 3);
  double level = wb_opt_number(L, t, "level", 0.95);
  if (!(level > 0 && level < 1)) return luaL_argerror(L, 3, "level must be in (0, 1)");
  size_t m, n;
  double *x = wb_stats_check_nonempty(L, 1, &m), *y = wb_stats_check_nonempty(L, 2, &n);
  for (size_t i = 0; i < m; i++)
    if (!(x[i] > 0)) {
      lua_pushnil(L);
      lua_pushliteral(L, "a value of the base sample is not positive: no ratio");
      return 2;
    }
  if ((double)m * (double)n > (double)SHIFT_PAIRS_MAX) {
    lua_pushnil(L);
    lua_pushliteral(L, "too many pairs of values for the Hodges-Lehmann ratio");
    return 2;
  }
  size_t pairs = m * n, k = 0;
  double *r = wb_stats_scratch(L, pairs); /* stays on the stack until the function returns */
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) r[k++] = y[j] / x[i];
  wb_stats_sort(r, pairs);
  lua_pushnumber(L, wb_stats_quantile_sorted(r, pairs, 0.5));
  size_t c = critical(L, m, n, (1 - level) / 2);
  if (c == 0) return 1;
  lua_pushnumber(L, r[c - 1]);
  lua_pushnumber(L, r[pairs - c]);
  return 3;
}
