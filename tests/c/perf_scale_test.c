/* The multiplexing scale of wb.perf counters (wb_perf_scale, core/perf.c) from fake
 * enabled/running pairs: no PMU needed, so it runs on every VM. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "perf.h"

static int near(double a, double b) { return isfinite(a) && fabs(a - b) <= 1e-9 * fabs(b) + 1e-12; }

static void test_not_multiplexed(void) {
  int ok = 1;
  struct wb_perf_scaled s = wb_perf_scale(1000, 250, 250);
  CHECK(s.scaled == 0 && s.never_ran == 0);
  CHECK(s.value == 1000.0 && s.running_fraction == 1.0);
  s = wb_perf_scale(42, 0, 0); /* never enabled: the raw count, fraction 1 */
  CHECK(s.scaled == 0 && s.never_ran == 0 && s.value == 42.0 && s.running_fraction == 1.0);
  report("running == enabled: the raw count, not scaled", ok);
}

static void test_multiplexed(void) {
  int ok = 1;
  struct wb_perf_scaled s = wb_perf_scale(1000, 300, 100); /* ran a third of the time */
  CHECK(s.scaled == 1 && s.never_ran == 0);
  CHECK(near(s.value, 3000.0));
  CHECK(near(s.running_fraction, 1.0 / 3.0));
  s = wb_perf_scale(7, 1000000000, 999999999); /* barely multiplexed, still scaled */
  CHECK(s.scaled == 1 && near(s.value, 7.0 * 1000000000.0 / 999999999.0) && s.value > 7.0);
  s = wb_perf_scale(123456789012ULL, 4000000, 1000000); /* large counts keep their precision */
  CHECK(s.scaled == 1 && near(s.value, 493827156048.0) && near(s.running_fraction, 0.25));
  report("running < enabled: raw * enabled / running, scaled", ok);
}

static void test_never_ran(void) {
  int ok = 1;
  struct wb_perf_scaled s = wb_perf_scale(0, 5000, 0);
  CHECK(s.never_ran == 1 && s.running_fraction == 0.0);
  report("enabled but never running: no value", ok);
}

int main(void) {
  test_not_multiplexed();
  test_multiplexed();
  test_never_ran();
  return summary();
}
