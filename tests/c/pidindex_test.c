/* core/pidindex.h: pid -> position in an array of records whose first member is the pid, through
 * growth, colliding pids (multiples of a power of two) and lookups of pids never added. */
#include <stdlib.h>

#include "check.h"
#include "pidindex.h"

typedef struct rec {
  int pid;
  double payload;
} rec;

int main(void) {
  int ok = 1;
  enum { N = 5000 };
  rec *recs = calloc(N, sizeof *recs);
  wb_pidindex x = {0};
  CHECK(wb_pidindex_find(&x, recs, sizeof *recs, 1) == -1);
  for (size_t i = 0; i < N; i++) {
    recs[i].pid = (int)(i * 4096 + 7); /* the low bits all alike */
    CHECK(wb_pidindex_add(&x, recs, sizeof *recs, i) == 0);
  }
  for (size_t i = 0; i < N; i++) CHECK(wb_pidindex_find(&x, recs, sizeof *recs, (int)(i * 4096 + 7)) == (ptrdiff_t)i);
  CHECK(wb_pidindex_find(&x, recs, sizeof *recs, 8) == -1);
  CHECK(wb_pidindex_find(&x, recs, sizeof *recs, N * 4096 + 7) == -1);
  CHECK(x.nslots >= 2 * N && (x.nslots & (x.nslots - 1)) == 0);
  report("pidindex: 5,000 pids added, each found at its position, others not found; at most half full", ok);
  wb_pidindex_free(&x);
  free(recs);
  return summary();
}
