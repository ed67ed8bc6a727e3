/* wb.stats: descriptive statistics over numeric samples and the compact samples container.
 * Inference (bootstrap, rank test, step detection) lives in core/stats_infer.c. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define SAMPLES_MT "wb.stats.samples"
#define MAX_COUNT ((size_t)1 << 40)

/* A growable float64 array. Its buffer is a plain userdata held as user value 1, so the
 * memory is counted by the Lua collector and released with the object. An integer array holds
 * integers only (exact up to 2^53) and gives them back as Lua integers. */
typedef struct {
  double *v;
  size_t n, cap;
  int closed;
  int integer;
} samples;

/* ---- shared helpers ------------------------------------------------------------------- */

int wb_stats_samples_view(lua_State *L, int idx, const double **v, size_t *n, int *integer) {
  samples *s = luaL_testudata(L, idx, SAMPLES_MT);
  if (!s || s->closed) return 0;
  *v = s->v;
  *n = s->n;
  *integer = s->integer;
  return 1;
}

double *wb_stats_scratch(lua_State *L, size_t n) {
  if (n > MAX_COUNT) luaL_error(L, "wb.stats: too many values (%I)", (lua_Integer)n);
  return lua_newuserdatauv(L, n * sizeof(double), 0);
}

double *wb_stats_check_xs(lua_State *L, int arg, size_t *n) {
  arg = lua_absindex(L, arg);
  samples *s = luaL_testudata(L, arg, SAMPLES_MT);
  if (s) {
    if (s->closed) luaL_argerror(L, arg, SAMPLES_MT " is closed");
    double *x = wb_stats_scratch(L, s->n);
    if (s->n) memcpy(x, s->v, s->n * sizeof(double));
    *n = s->n;
    return x;
  }
  if (!lua_istable(L, arg)) luaL_typeerror(L, arg, "sequence of numbers or " SAMPLES_MT);
  size_t len = (size_t)lua_rawlen(L, arg);
  double *x = wb_stats_scratch(L, len);
  for (size_t i = 0; i < len; i++) {
    int t = lua_rawgeti(L, arg, (lua_Integer)i + 1);
    if (t != LUA_TNUMBER)
      luaL_argerror(L, arg,
                    lua_pushfstring(L, "number expected at [%I], got %s", (lua_Integer)i + 1,
                                    lua_typename(L, t)));
    x[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (isnan(x[i]))
      luaL_argerror(L, arg, lua_pushfstring(L, "NaN at [%I]", (lua_Integer)i + 1));
  }
  *n = len;
  return x;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
  return (x > y) - (x < y);
}

void wb_stats_sort(double *x, size_t n) { qsort(x, n, sizeof *x, cmp_double); }

double wb_stats_quantile_sorted(const double *x, size_t n, double p) {
  double h = (double)(n - 1) * p;
  size_t lo = (size_t)floor(h);
  if (lo >= n - 1) return x[n - 1];
  return x[lo] + (h - (double)lo) * (x[lo + 1] - x[lo]);
}

void wb_stats_select_kth(double *x, size_t n, size_t k) {
  ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
  while (hi > lo) {
    ptrdiff_t mid = lo + (hi - lo) / 2;
    double a = x[lo], b = x[mid], c = x[hi];
    double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    ptrdiff_t i = lo, j = hi;
    while (i <= j) {
      while (x[i] < pivot) i++;
      while (x[j] > pivot) j--;
      if (i <= j) {
        double t = x[i];
        x[i++] = x[j];
        x[j--] = t;
      }
    }
    if (kk <= j)
      hi = j;
    else if (kk >= i)
      lo = i;
    else
      return;
  }
}

double wb_stats_median_inplace(double *x, size_t n) {
  size_t k = (n - 1) / 2;
  wb_stats_select_kth(x, n, k);
  if (n % 2) return x[k];
  double next = x[k + 1];
  for (size_t i = k + 2; i < n; i++)
    if (x[i] < next) next = x[i];
  return x[k] + (next - x[k]) / 2;
}

double wb_stats_sum(const double *x, size_t n) {
  double s = 0, c = 0;
  for (size_t i = 0; i < n; i++) {
    double t = s + x[i];
    c += fabs(s) >= fabs(x[i]) ? (s - t) + x[i] : (x[i] - t) + s;
    s = t;
  }
  return s + c;
}

double wb_stats_mean(const double *x, size_t n) { return wb_stats_sum(x, n) / (double)n; }

/* Sample standard deviation (n - 1), corrected two-pass; 0 for n = 1. */
static double stddev_of(const double *x, size_t n, double mean) {
  if (n < 2) return 0;
  double ss = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - mean;
    ss += d * d;
    s += d;
  }
  double var = (ss - s * s / (double)n) / (double)(n - 1);
  return var > 0 ? sqrt(var) : 0;
}

/* Unscaled median absolute deviation around med; overwrites x. */
static double mad_of(double *x, size_t n, double med) {
  for (size_t i = 0; i < n; i++) x[i] = fabs(x[i] - med);
  return wb_stats_median_inplace(x, n);
}

double *wb_stats_check_nonempty(lua_State *L, int arg, size_t *n) {
  double *x = wb_stats_check_xs(L, arg, n);
  if (*n == 0) luaL_argerror(L, arg, "no values");
  return x;
}

/* ---- descriptive statistics ----------------------------------------------------------- */

/* -- t = wb.stats.summary(xs) : an ordered table {n, min, max, mean, stddev, median, mad, q1,
 * q3, p5, p95, sum}; stddev is the sample one (n - 1; 0 for n = 1), mad the unscaled median
 * absolute deviation, quantiles R type 7. xs: a sequence of numbers or samples; empty raises. */
static int l_summary(lua_State *L) {
  size_t n;
  double *x = wb_stats_check_nonempty(L, 1, &n);
  wb_stats_sort(x, n);
  double sum = wb_stats_sum(x, n), mean = sum / (double)n;
  double med = wb_stats_quantile_sorted(x, n, 0.5);
  double q1 = wb_stats_quantile_sorted(x, n, 0.25), q3 = wb_stats_quantile_sorted(x, n, 0.75);
  double p5 = wb_stats_quantile_sorted(x, n, 0.05), p95 = wb_stats_quantile_sorted(x, n, 0.95);
  double lo = x[0], hi = x[n - 1], sd = stddev_of(x, n, mean), mad = mad_of(x, n, med);
  wb_ordered_new(L);
  wb_set_int(L, "n", (lua_Integer)n);
  wb_set_num(L, "min", lo);
  wb_set_num(L, "max", hi);
  wb_set_num(L, "mean", mean);
  wb_set_num(L, "stddev", sd);
  wb_set_num(L, "median", med);
  wb_set_num(L, "mad", mad);
  wb_set_num(L, "q1", q1);
  wb_set_num(L, "q3", q3);
  wb_set_num(L, "p5", p5);
  wb_set_num(L, "p95", p95);
  wb_set_num(L, "sum", sum);
  return 1;
}

/* -- q = wb.stats.quantile(xs, p) : linear interpolation between order statistics (R type 7,
 * numpy's default); p in [0, 1]; empty xs raises. */
static int l_quantile(lua_State *L) {
  double p = luaL_checknumber(L, 2);
  luaL_argcheck(L, p >= 0 && p <= 1, 2, "p must be in [0, 1]");
  size_t n;
  double *x = wb_stats_check_nonempty(L, 1, &n);
  wb_stats_sort(x, n);
  lua_pushnumber(L, wb_stats_quantile_sorted(x, n, p));
  return 1;
}

/* -- m = wb.stats.mean(xs) : arithmetic mean (compensated sum); empty xs raises. */
static int l_mean(lua_State *L) {
  size_t n;
  double *x = wb_stats_check_nonempty(L, 1, &n);
  lua_pushnumber(L, wb_stats_mean(x, n));
  return 1;
}

/* -- sd = wb.stats.stddev(xs) : sample standard deviation (n - 1); 0 for one value. */
static int l_stddev(lua_State *L) {
  size_t n;
  double *x = wb_stats_check_nonempty(L, 1, &n);
  lua_pushnumber(L, stddev_of(x, n, wb_stats_mean(x, n)));
  return 1;
}

/* -- med = wb.stats.median(xs) : the type 7 median (mean of the middle two for even n). */
static int l_median(lua_State *L) {
  size_t n;
  double *x = wb_stats_check_nonempty(L, 1, &n);
  lua_pushnumber(L, wb_stats_median_inplace(x, n));
  return 1;
}

/* -- mad = wb.stats.mad(xs) : median of |x - median|, unscaled (multiply by 1.4826 for a
 * normal-consistent sigma). */
static int l_mad(lua_State *L) {
  size_t n;
  double *x = wb_stats_check_nonempty(L, 1, &n);
  lua_pushnumber(L, mad_of(x, n, wb_stats_median_inplace(x, n)));
  return 1;
}

/* Pushes the modified z-scores of xs at arg as a scratch array; *n gets the count. */
static double *modified_z(lua_State *L, int arg, size_t *n) {
  double *x = wb_stats_check_xs(L, arg, n);
  double *w = wb_stats_scratch(L, *n);
  double *z = wb_stats_scratch(L, *n);
  if (*n == 0) return z;
  memcpy(w, x, *n * sizeof *w);
  double med = wb_stats_median_inplace(w, *n);
  memcpy(w, x, *n * sizeof *w);
  double mad = mad_of(w, *n, med), scale;
  if (mad > 0) {
    scale = mad / 0.6745;
  } else {
    double meanad = 0;
    for (size_t i = 0; i < *n; i++) meanad += fabs(x[i] - med);
    scale = 1.253314 * meanad / (double)*n;
  }
  for (size_t i = 0; i < *n; i++) z[i] = scale > 0 ? (x[i] - med) / scale : 0;
  return z;
}

/* Pushes x[0..n) as a new sequence (a wb.array, so an empty one encodes as []). */
static void push_list(lua_State *L, const double *x, size_t n) {
  wb_array_new(L, n > INT_MAX ? INT_MAX : (int)n);
  for (size_t i = 0; i < n; i++) {
    lua_pushnumber(L, x[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* -- zs = wb.stats.modified_z(xs) : Iglewicz–Hoaglin modified z-scores,
 * 0.6745 * (x - median) / MAD. When MAD = 0 the scale is the mean absolute deviation around
 * the median: (x - median) / (1.253314 * meanAD); when that is 0 too (all values equal),
 * every score is 0. Empty xs gives an empty list. */
static int l_modified_z(lua_State *L) {
  size_t n;
  double *z = modified_z(L, 1, &n);
  push_list(L, z, n);
  return 1;
}

/* -- idx = wb.stats.outliers(xs [, threshold = 3.5]) : ascending 1-based indices of the values
 * whose |modified z| exceeds threshold (see modified_z). */
static int l_outliers(lua_State *L) {
  double threshold = luaL_optnumber(L, 2, 3.5);
  luaL_argcheck(L, threshold >= 0, 2, "threshold must be >= 0");
  size_t n;
  double *z = modified_z(L, 1, &n);
  wb_array_new(L, 0);
  lua_Integer k = 0;
  for (size_t i = 0; i < n; i++) {
    if (fabs(z[i]) <= threshold) continue;
    lua_pushinteger(L, (lua_Integer)i + 1);
    lua_rawseti(L, -2, ++k);
  }
  return 1;
}

/* ---- samples -------------------------------------------------------------------------- */

static samples *check_samples(lua_State *L, int idx) {
  samples *s = luaL_checkudata(L, idx, SAMPLES_MT);
  if (s->closed) luaL_argerror(L, idx, SAMPLES_MT " is closed");
  return s;
}

static void samples_reserve(lua_State *L, int idx, samples *s, size_t need) {
  if (need <= s->cap) return;
  size_t cap = s->cap < 16 ? 16 : s->cap * 2;
  if (cap < need) cap = need;
  double *v = wb_stats_scratch(L, cap);
  if (s->n) memcpy(v, s->v, s->n * sizeof *v);
  lua_setiuservalue(L, idx, 1);
  s->v = v;
  s->cap = cap;
}

static samples *new_samples(lua_State *L, size_t cap, int integer) {
  samples *s = lua_newuserdatauv(L, sizeof *s, 1);
  memset(s, 0, sizeof *s);
  s->integer = integer;
  luaL_setmetatable(L, SAMPLES_MT);
  samples_reserve(L, lua_gettop(L), s, cap);
  return s;
}

/* -- s = wb.stats.samples([capacity [, "float" | "integer"]]) : an empty growable array of
 * float64 values (8 bytes a value) with room for capacity values; accepted wherever xs is. An
 * "integer" array takes integers only (|x| <= 2^53), and reads and encodes them as integers. */
static int l_samples(lua_State *L) {
  lua_Integer cap = luaL_optinteger(L, 1, 0);
  luaL_argcheck(L, cap >= 0 && (size_t)cap <= MAX_COUNT, 1, "capacity out of range");
  static const char *const kinds[] = {"float", "integer", NULL};
  int integer = luaL_checkoption(L, 2, "float", kinds);
  new_samples(L, (size_t)cap, integer);
  return 1;
}

static void push_value(lua_State *L, const samples *s, double x) {
  if (s->integer)
    lua_pushinteger(L, (lua_Integer)x);
  else
    lua_pushnumber(L, x);
}

/* -- s:add(x) : appends the number x (NaN raises; a non-integer raises in an integer array). */
static int samples_add(lua_State *L) {
  samples *s = check_samples(L, 1);
  luaL_checktype(L, 2, LUA_TNUMBER);
  double x = lua_tonumber(L, 2);
  luaL_argcheck(L, !isnan(x), 2, "NaN");
  if (s->integer) {
    int isint;
    lua_Integer i = lua_tointegerx(L, 2, &isint);
    luaL_argcheck(L, isint && i >= -(1LL << 53) && i <= (1LL << 53), 2, "integer expected");
    x = (double)i;
  }
  samples_reserve(L, 1, s, s->n + 1);
  s->v[s->n++] = x;
  return 0;
}

/* -- kind = s:kind() : "float" or "integer" */
static int samples_kind(lua_State *L) {
  lua_pushstring(L, check_samples(L, 1)->integer ? "integer" : "float");
  return 1;
}

/* -- t = s:scaled(k) : a new array of the same kind holding each value times k (rounded to the
 * nearest integer in an integer array, which raises when a result leaves +-2^53); k finite. */
static int samples_scaled(lua_State *L) {
  samples *s = check_samples(L, 1);
  double k = luaL_checknumber(L, 2);
  luaL_argcheck(L, isfinite(k), 2, "a finite number expected");
  samples *t = new_samples(L, s->n, s->integer);
  for (size_t i = 0; i < s->n; i++) {
    double x = s->integer ? round(s->v[i] * k) : s->v[i] * k;
    if (s->integer && !(fabs(x) <= 9007199254740992.0))
      luaL_error(L, "wb.stats.samples: scaled value out of the integer range at [%I]", (lua_Integer)i + 1);
    t->v[i] = x;
  }
  t->n = s->n;
  return 1;
}

/* -- s:close() : releases the values; later use raises. Also __close and __gc. */
static int samples_close(lua_State *L) {
  samples *s = luaL_checkudata(L, 1, SAMPLES_MT);
  s->closed = 1;
  s->v = NULL;
  s->n = s->cap = 0;
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1);
  return 0;
}

/* -- t = s:totable() : the values as a new sequence. */
static int samples_totable(lua_State *L) {
  samples *s = check_samples(L, 1);
  wb_array_new(L, s->n > INT_MAX ? INT_MAX : (int)s->n);
  for (size_t i = 0; i < s->n; i++) {
    push_value(L, s, s->v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* -- #s : the number of values. */
static int samples_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_samples(L, 1)->n);
  return 1;
}

/* -- s[i] : the i-th value (1-based), nil outside 1..#s; s.name : a method. */
static int samples_index(lua_State *L) {
  if (lua_type(L, 2) != LUA_TNUMBER) {
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
  }
  samples *s = check_samples(L, 1);
  int isint;
  lua_Integer i = lua_tointegerx(L, 2, &isint);
  if (isint && i >= 1 && (size_t)i <= s->n)
    push_value(L, s, s->v[i - 1]);
  else
    lua_pushnil(L);
  return 1;
}

/* -- tostring(s) : "wb.stats.samples (n=N)" or "wb.stats.samples (closed)". */
static int samples_tostring(lua_State *L) {
  samples *s = luaL_checkudata(L, 1, SAMPLES_MT);
  if (s->closed)
    lua_pushliteral(L, SAMPLES_MT " (closed)");
  else
    lua_pushfstring(L, SAMPLES_MT " (n=%I%s)", (lua_Integer)s->n, s->integer ? ", integer" : "");
  return 1;
}

static const luaL_Reg samples_methods[] = {{"add", samples_add},
                                           {"close", samples_close},
                                           {"kind", samples_kind},
                                           {"scaled", samples_scaled},
                                           {"summary", l_summary},
                                           {"totable", samples_totable},
                                           {NULL, NULL}};

static const luaL_Reg samples_meta[] = {{"__close", samples_close},
                                        {"__gc", samples_close},
                                        {"__len", samples_len},
                                        {"__tostring", samples_tostring},
                                        {NULL, NULL}};

static const luaL_Reg stats_functions[] = {{"bootstrap_ci", wb_stats_bootstrap_ci},
                                           {"confseq", wb_stats_confseq},
                                           {"eprocess", wb_stats_eprocess},
                                           {"mad", l_mad},
                                           {"mann_whitney", wb_stats_mann_whitney},
                                           {"mean", l_mean},
                                           {"median", l_median},
                                           {"modified_z", l_modified_z},
                                           {"outliers", l_outliers},
                                           {"quantile", l_quantile},
                                           {"samples", l_samples},
                                           {"shift_ci", wb_stats_shift_ci},
                                           {"signed_rank", wb_stats_signed_rank},
                                           {"stddev", l_stddev},
                                           {"steps", wb_stats_steps},
                                           {"summary", l_summary},
                                           {NULL, NULL}};

/* package.preload["wb.stats"]: the functions above; registers the samples metatable. */
int luaopen_wb_stats(lua_State *L) {
  luaL_newmetatable(L, SAMPLES_MT);
  luaL_setfuncs(L, samples_meta, 0);
  luaL_newlib(L, samples_methods);
  lua_pushcclosure(L, samples_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, stats_functions);
  return 1;
}
