/* Internal to wb.stats (core/stats.c, core/stats_infer.c). Not installed. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lwb.h"

/* Pushes a scratch copy of the numbers at stack index arg (a sequence of numbers or a
 * wb.stats.samples) as a userdata and returns it; *n gets the count. Raises on misuse (not a
 * sequence, a non-number or NaN element, a closed samples object). The scratch is owned by
 * the Lua stack slot it occupies. */
double *wb_stats_check_xs(lua_State *L, int arg, size_t *n);

/* Pushes an uninitialised scratch userdata of n doubles and returns it. */
double *wb_stats_scratch(lua_State *L, size_t n);

/* Sorts ascending. */
void wb_stats_sort(double *x, size_t n);

/* Quantile of sorted x (n >= 1) at p in [0,1]: linear interpolation between order statistics
 * (R type 7). */
double wb_stats_quantile_sorted(const double *x, size_t n, double p);

/* Median of x (n >= 1) by selection; reorders x. */
double wb_stats_median_inplace(double *x, size_t n);

/* Compensated (Neumaier) sum and the mean built on it. */
double wb_stats_sum(const double *x, size_t n);
double wb_stats_mean(const double *x, size_t n);

/* Field `name` of the options table at idx (absent or nil: def). Raise on a wrong type. */
double wb_stats_opt_number(lua_State *L, int idx, const char *name, double def);
lua_Integer wb_stats_opt_integer(lua_State *L, int idx, const char *name, lua_Integer def);
const char *wb_stats_opt_string(lua_State *L, int idx, const char *name, const char *def);

/* Sets t[key] = v for the table on the stack top. */
void wb_stats_setnum(lua_State *L, const char *key, double v);

/* Statistical inference (core/stats_infer.c); Lua calls documented there. */
int wb_stats_bootstrap_ci(lua_State *L);
int wb_stats_mann_whitney(lua_State *L);
int wb_stats_steps(lua_State *L);
