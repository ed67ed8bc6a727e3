/* pid -> record index (see core/pidindex.h). */
#include "pidindex.h"

#include <stdlib.h>
#include <string.h>

static int pid_at(const void *records, size_t stride, size_t i) {
  int pid;
  memcpy(&pid, (const char *)records + i * stride, sizeof pid);
  return pid;
}

/* The slot holding pid, or the free one where it goes. */
static size_t slot_of(const wb_pidindex *x, const void *records, size_t stride, int pid) {
  size_t i = (size_t)(((uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ULL) >> (64 - x->bits));
  while (x->slot[i] && pid_at(records, stride, x->slot[i] - 1) != pid) i = (i + 1) & (x->nslots - 1);
  return i;
}

ptrdiff_t wb_pidindex_find(const wb_pidindex *x, const void *records, size_t stride, int pid) {
  if (!x->nslots) return -1;
  uint32_t at = x->slot[slot_of(x, records, stride, pid)];
  return at ? (ptrdiff_t)at - 1 : -1;
}

int wb_pidindex_add(wb_pidindex *x, const void *records, size_t stride, size_t n) {
  if (n >= UINT32_MAX - 1) return -1;
  if (2 * (n + 1) > x->nslots) {
    int bits = x->nslots ? x->bits + 1 : 6;
    uint32_t *fresh = calloc((size_t)1 << bits, sizeof *fresh);
    if (!fresh) return -1;
    free(x->slot);
    x->slot = fresh, x->nslots = (size_t)1 << bits, x->bits = bits;
    for (size_t i = 0; i < n; i++) x->slot[slot_of(x, records, stride, pid_at(records, stride, i))] = (uint32_t)i + 1;
  }
  x->slot[slot_of(x, records, stride, pid_at(records, stride, n))] = (uint32_t)n + 1;
  return 0;
}

void wb_pidindex_free(wb_pidindex *x) {
  free(x->slot);
  *x = (wb_pidindex){0};
}
