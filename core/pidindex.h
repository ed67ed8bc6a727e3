/* An open-addressing index of pid -> position + 1 in an array of records whose first member is
 * their int pid (the per-process address spaces of wb.sym and wb.unwind). At most half full. */
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct wb_pidindex {
  uint32_t *slot; /* position + 1, 0: free */
  size_t nslots;  /* a power of 2, or 0 */
  int bits;
} wb_pidindex;

/* The position of pid's record among records (each `stride` bytes), or -1. */
ptrdiff_t wb_pidindex_find(const wb_pidindex *x, const void *records, size_t stride, int pid);

/* Makes room for record n (at position n, its pid set), rebuilding the index of records[0..n)
 * first when it would be more than half full, and indexes it: 0, or -1 out of memory (nothing
 * changed). */
int wb_pidindex_add(wb_pidindex *x, const void *records, size_t stride, size_t n);

void wb_pidindex_free(wb_pidindex *x);
