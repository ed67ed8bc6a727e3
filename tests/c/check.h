/* The C unit tests' scaffolding: in a case, `int ok = 1;` then CHECK(cond) ...; report(name, ok).
 * main ends with `return summary();`, which prints the `N passed, N failed` line. */
#ifndef WB_TEST_CHECK_H
#define WB_TEST_CHECK_H
#include <stdio.h>

static int passed, failed;

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      printf("    %s:%d: %s\n", __FILE__, __LINE__, #cond);                                \
      ok = 0;                                                                              \
    }                                                                                      \
  } while (0)

static void report(const char *name, int ok) {
  printf("%s - %s\n", ok ? "ok" : "not ok", name);
  if (ok)
    passed++;
  else
    failed++;
}

static int summary(void) {
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
#endif
