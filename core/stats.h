/* Internal to wb.stats (core/stats*.c). Not installed. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

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

/* Moves the k-th smallest value of x[0..n) (k < n) to x[k], smaller ones before it, larger
 * ones after (quickselect). */
void wb_stats_select_kth(double *x, size_t n, size_t k);

/* Median of x (n >= 1) by selection; reorders x. */
double wb_stats_median_inplace(double *x, size_t n);

/* Compensated (Neumaier) sum and the mean built on it. */
double wb_stats_sum(const double *x, size_t n);
double wb_stats_mean(const double *x, size_t n);

/* wb_stats_check_xs that raises "no values" for an empty xs. */
double *wb_stats_check_nonempty(lua_State *L, int arg, size_t *n);

/* Statistical inference (core/stats_infer.c); Lua calls documented there. */
int wb_stats_bootstrap_ci(lua_State *L);
int wb_stats_mann_whitney(lua_State *L);

/* The number of ways to give m of `total` observations with ranks rank[0..total) (ascending, positive
 * integers) to one group, for each rank sum s in [0, *width): the counts, in a scratch userdata it
 * pushes (with its own working rows). */
double *wb_stats_rank_sum_counts(lua_State *L, const size_t *rank, size_t total, size_t m, size_t *width);

/* z with P(Z > z) = tail for a standard normal Z (tail in (0, 0.5]). */
double wb_stats_upper_z(double tail);

/* The Hodges–Lehmann ratio (core/stats_shift.c). */
int wb_stats_shift_ci(lua_State *L);
int wb_stats_steps(lua_State *L);

/* Confidence sequences (core/stats_seq.c). */
int wb_stats_confseq(lua_State *L);
int wb_stats_eprocess(lua_State *L);

/* Paired inference (core/stats_paired.c). */
int wb_stats_signed_rank(lua_State *L);
