/* wb.stats confidence sequences and e-processes: bounds on, and bets about, the mean of bounded observations that hold at every
 * sample size at once, so a caller may look after every observation and stop when it likes (a
 * race of tuning candidates) without the error rate growing with the looks. The construction is
 * the predictable-mixture empirical-Bernstein confidence sequence of Waudby-Smith and Ramdas,
 * "Estimating means of bounded random variables by betting" (JRSS-B 86(1), 2024; arXiv
 * 2010.09686, Theorem 2): for x_i in [0, 1] with a common conditional mean m,
 *   m >= (sum l_i x_i - log(1/a) - sum v_i psi(l_i)) / sum l_i   for every n, with prob. >= 1 - a,
 * where the bets l_i = min(sqrt(2 log(1/a) / (s2_{i-1} i log(1 + i))), 1/2) and the variance terms
 * v_i = (x_i - mu_{i-1})^2 use only earlier observations (mu, s2: running mean and variance with
 * one prior observation of mean 1/2, variance 1/4), and psi(l) = -log(1 - l) - l. The upper bound
 * is the lower bound of 1 - x; each side gets a / 2. */
#include <math.h>

#include "opt.h"
#include "stats.h"

/* The running mean and variance of the observations so far, with one prior observation of mean
 * 1/2 and variance 1/4: what the bets may use (only earlier observations). */
typedef struct moments {
  double n, sum, sq, mu, s2;
} moments;

static moments moments_prior(void) { return (moments){0, 0, 0.25, 0.5, 0.25}; }

static void moments_add(moments *m, double x) {
  m->n++, m->sum += x;
  m->mu = (0.5 + m->sum) / (m->n + 1);
  m->sq += (x - m->mu) * (x - m->mu);
  m->s2 = m->sq / (m->n + 1);
}

/* The numbers at argument 1 (a scratch copy, pushed) scaled from [lo, hi] to [0, 1]; raises
 * "<fn>: value ... outside [lo, hi]". */
static double *unit_xs(lua_State *L, const char *fn, double lo, double hi, size_t *n) {
  double *x = wb_stats_check_xs(L, 1, n);
  for (size_t i = 0; i < *n; i++) {
    if (!(x[i] >= lo && x[i] <= hi))
      luaL_error(L, "%s: value %f (#%d) outside [%f, %f]", fn, x[i], (int)i + 1, lo, hi);
    x[i] = (x[i] - lo) / (hi - lo);
  }
  return x;
}

/* The one-sided lower bound at level a of the mean of x[0..n), each in [0, 1]. */
static double lower_bound(const double *x, size_t n, double a, int flip) {
  double log1a = log(1 / a), num = 0, den = 0, pen = 0;
  moments m = moments_prior();
  for (size_t i = 0; i < n; i++) {
    double t = (double)(i + 1), xi = flip ? 1 - x[i] : x[i];
    double l = fmin(sqrt(2 * log1a / (m.s2 * t * log(1 + t))), 0.5);
    num += l * xi, den += l, pen += (xi - m.mu) * (xi - m.mu) * (-log1p(-l) - l);
    moments_add(&m, xi);
  }
  return den > 0 ? fmax((num - log1a - pen) / den, 0) : 0;
}

/* -- lower, upper = wb.stats.confseq(xs, alpha [, {lo = 0, hi = 1}]) : a confidence sequence for
 * the mean of xs (a sequence of numbers or a wb.stats.samples, in the order observed), each in
 * [lo, hi]: with probability at least 1 - alpha every (lower, upper) it gives, at every length of
 * xs, holds the mean. Empty xs: lo, hi. Raises on a value outside [lo, hi], alpha outside (0, 1),
 * or lo >= hi. */
int wb_stats_confseq(lua_State *L) {
  lua_settop(L, 3);
  int t = wb_opt_table(L, 3);
  double lo = wb_opt_number(L, t, "lo", 0), hi = wb_opt_number(L, t, "hi", 1);
  double alpha = luaL_checknumber(L, 2);
  if (!(alpha > 0 && alpha < 1)) return luaL_argerror(L, 2, "alpha must be in (0, 1)");
  if (!(lo < hi)) return luaL_argerror(L, 3, "lo must be below hi");
  size_t n;
  double *x = unit_xs(L, "wb.stats.confseq", lo, hi, &n);
  double low = lower_bound(x, n, alpha / 2, 0), up = 1 - lower_bound(x, n, alpha / 2, 1);
  lua_pushnumber(L, lo + low * (hi - lo));
  lua_pushnumber(L, lo + up * (hi - lo));
  return 2;
}

/* -- best, last = wb.stats.eprocess(xs, m [, {lo = 0, hi = 1}]) : the capital of betting, in the
 * order observed, that the mean of xs (each in [lo, hi]) is above m: K_t = prod (1 + l_i (x_i - m))
 * with predictable bets l_i in [0, 0.9 / m] (scaled to [0, 1]; aGRAPA, Waudby-Smith and Ramdas,
 * section 5.1: l = (mu - m) / (s2 + (mu - m)^2) from the earlier observations, one prior
 * observation of mean 1/2 and variance 1/4); the largest K_t reached and the last. While the mean
 * is at most m, K is a nonnegative supermartingale: the chance that it ever reaches 1/alpha is at
 * most alpha (Ville), however often it is looked at. Raises as wb.stats.confseq, and on m outside
 * (lo, hi). */
int wb_stats_eprocess(lua_State *L) {
  lua_settop(L, 3);
  int t = wb_opt_table(L, 3);
  double lo = wb_opt_number(L, t, "lo", 0), hi = wb_opt_number(L, t, "hi", 1);
  if (!(lo < hi)) return luaL_argerror(L, 3, "lo must be below hi");
  double m = luaL_checknumber(L, 2);
  if (!(m > lo && m < hi)) return luaL_argerror(L, 2, "m must be inside (lo, hi)");
  m = (m - lo) / (hi - lo);
  size_t n;
  double *x = unit_xs(L, "wb.stats.eprocess", lo, hi, &n);
  double log_k = 0, best = 0;
  moments mo = moments_prior();
  for (size_t i = 0; i < n; i++) {
    double gap = mo.mu - m;
    double l = fmin(fmax(gap / (mo.s2 + gap * gap), 0), 0.9 / m);
    log_k += log1p(l * (x[i] - m));
    best = fmax(best, log_k);
    moments_add(&mo, x[i]);
  }
  lua_pushnumber(L, exp(best));
  lua_pushnumber(L, exp(log_k));
  return 2;
}
