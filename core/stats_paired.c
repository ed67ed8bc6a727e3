/* wb.stats paired inference: the Wilcoxon signed-rank test and the Hodges–Lehmann estimate with
 * its distribution-free confidence interval, for paired differences (the log ratios of two
 * configurations run side by side in the same rounds). Robust to the odd trial an outside job
 * slowed: a difference counts by its rank, not its size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "stats.h"

/* Up to this many nonzero differences the null distribution is counted exactly. */
#define SR_EXACT_MAX 50
/* Up to this many differences the interval comes from the Walsh averages (n (n + 1) / 2). */
#define SR_WALSH_MAX 2000

static int cmp_abs(const void *a, const void *b) {
  double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
  return (x > y) - (x < y);
}

/* The null distribution of the doubled rank sum W2 (each nonzero difference's doubled midrank,
 * given a positive sign with probability 1/2), as counts over 0..width-1, pushed as scratch. */
static double *null_counts(lua_State *L, const size_t *rank2, size_t n, size_t *width) {
  size_t w = 1;
  for (size_t i = 0; i < n; i++) w += rank2[i];
  double *c = wb_stats_scratch(L, w);
  memset(c, 0, w * sizeof *c);
  c[0] = 1;
  size_t reach = 0;
  for (size_t i = 0; i < n; i++) {
    reach += rank2[i];
    for (size_t s = reach; s >= rank2[i]; s--) c[s] += c[s - rank2[i]];
  }
  *width = w;
  return c;
}

/* The lower critical value c (on the undoubled W+ of integer ranks 1..n, no ties): the largest c
 * with P(W+ < c) <= tail, so that the Walsh averages of order c and N + 1 - c (1-based) bound
 * the shift with confidence 1 - 2 tail. */
static size_t critical(lua_State *L, size_t n, double tail) {
  double nn = (double)n;
  if (n > SR_EXACT_MAX) {
    double z = wb_stats_upper_z(tail);
    double c = nn * (nn + 1) / 4 - z * sqrt(nn * (nn + 1) * (2 * nn + 1) / 24);
    return c > 0 ? (size_t)c : 0;
  }
  size_t *r = lua_newuserdatauv(L, (n ? n : 1) * sizeof *r, 0);
  for (size_t i = 0; i < n; i++) r[i] = i + 1;
  size_t width;
  const double *c = null_counts(L, r, n, &width);
  double all = ldexp(1, (int)n), cum = 0;
  size_t k = 0;
  while (k < width && (cum + c[k]) / all <= tail) cum += c[k++];
  lua_pop(L, 2);
  return k; /* P(W+ <= k - 1) <= tail */
}

/* -- r = wb.stats.signed_rank(ds [, {level = 0.95}]) : the Wilcoxon signed-rank test of paired
 * differences ds (a sequence or a wb.stats.samples): an ordered table {n (the nonzero ones),
 * w_plus (the rank sum of the positive ones, midranks for ties), p_less (one-sided p of "the
 * differences tend to be negative"), p_greater, estimate (Hodges–Lehmann: the median of the Walsh
 * averages), lower, upper (its distribution-free interval at level: exact without ties; absent
 * when too few differences can reach level: 2 P(W+ = 0) = 2^(1-n) > 1 - level), exact}.
 * Zeros are dropped from the test and the estimate (Wilcoxon's rule, as R's wilcox.test). p is exact, given the observed midranks, up to 50 nonzero
 * differences; beyond, the normal approximation with tie and continuity corrections. Without
 * nonzero differences: n = 0, both p = 1, estimate 0. Above 2000 differences lower and upper are
 * absent too. Raises on an empty ds, NaN, or level outside (0, 1). */
int wb_stats_signed_rank(lua_State *L) {
  lua_settop(L, 2);
  int t = wb_opt_table(L, 2);
  double level = wb_opt_number(L, t, "level", 0.95);
  if (!(level > 0 && level < 1)) return luaL_argerror(L, 2, "level must be in (0, 1)");
  size_t total;
  double *x = wb_stats_check_nonempty(L, 1, &total);
  size_t n = 0;
  for (size_t i = 0; i < total; i++)
    if (x[i] != 0) x[n++] = x[i];
  qsort(x, n, sizeof *x, cmp_abs);
  size_t *rank2 = lua_newuserdatauv(L, (n ? n : 1) * sizeof *rank2, 0);
  long long w2 = 0;
  double ties = 0;
  for (size_t i = 0, j; i < n; i = j + 1) {
    for (j = i; j + 1 < n && fabs(x[j + 1]) == fabs(x[i]); j++) {
    }
    double k = (double)(j - i + 1);
    ties += k * k * k - k;
    for (size_t m = i; m <= j; m++) {
      rank2[m] = i + j + 2;
      if (x[m] > 0) w2 += (long long)(i + j + 2);
    }
  }
  double nn = (double)n, p_less = 1, p_greater = 1;
  int exact = n <= SR_EXACT_MAX;
  if (n > 0 && exact) {
    size_t width;
    const double *c = null_counts(L, rank2, n, &width);
    double all = 0, le = 0, ge = 0;
    for (size_t s = 0; s < width; s++) {
      all += c[s];
      if ((long long)s <= w2) le += c[s];
      if ((long long)s >= w2) ge += c[s];
    }
    p_less = le / all, p_greater = ge / all;
    lua_pop(L, 1);
  } else if (n > 0) { /* P(W+ <= w) ~ Phi((w + 1/2 - mean) / sd), P(W+ >= w) ~ 1 - Phi((w - 1/2 - mean) / sd) */
    double mean = nn * (nn + 1) / 4, var = nn * (nn + 1) * (2 * nn + 1) / 24 - ties / 48;
    double d = (double)w2 / 2 - mean, sd = sqrt(var);
    if (sd > 0) {
      p_less = 0.5 * erfc(-(d + 0.5) / sd / sqrt(2));
      p_greater = 0.5 * erfc((d - 0.5) / sd / sqrt(2));
    }
  }
  double est = 0, lower = NAN, upper = NAN;
  if (n > 0 && n <= SR_WALSH_MAX) {
    size_t pairs = n * (n + 1) / 2, k = 0;
    double *walsh = wb_stats_scratch(L, pairs); /* stays on the stack until the function returns */
    for (size_t i = 0; i < n; i++)
      for (size_t j = i; j < n; j++) walsh[k++] = (x[i] + x[j]) / 2;
    wb_stats_sort(walsh, pairs);
    est = wb_stats_quantile_sorted(walsh, pairs, 0.5);
    size_t c = critical(L, n, (1 - level) / 2);
    if (c >= 1) lower = walsh[c - 1], upper = walsh[pairs - c]; /* c = 0: no interval reaches level */
  } else if (n > 0) {
    est = wb_stats_median_inplace(x, n);
  }
  wb_ordered_new(L);
  wb_set_num(L, "n", nn);
  wb_set_num(L, "w_plus", (double)w2 / 2);
  wb_set_num(L, "p_less", fmin(p_less, 1));
  wb_set_num(L, "p_greater", fmin(p_greater, 1));
  wb_set_num(L, "estimate", est);
  if (!isnan(lower)) {
    wb_set_num(L, "lower", lower);
    wb_set_num(L, "upper", upper);
  }
  wb_set_bool(L, "exact", exact);
  return 1;
}
