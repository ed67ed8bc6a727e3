/* The user-space side of wb.bpf's unwind mode (core/bpf_ustack.c): the records of the ring buffer
 * (core/bpf/profile.h) walked with core/unwind.c and aggregated by stack. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

typedef struct wb_ustack_entry {
  uint32_t tgid, kind;
  int32_t kern_stack_id;
  char comm[16];
  uint32_t nu;   /* user pcs, leaf first, at pcs */
  size_t pcs;    /* offset into the pool */
  uint64_t count, hash; /* samples (on-CPU) or nanoseconds (off-CPU) */
} wb_ustack_entry;

typedef struct wb_ustacks wb_ustacks;

wb_ustacks *wb_ustacks_new(void);
void wb_ustacks_free(wb_ustacks *a);

/* Handles one record of the ring buffer; returns 0 (a malformed one is counted and skipped). */
int wb_ustacks_handle(wb_ustacks *a, const void *data, size_t size);

/* The aggregated stacks; the pool of pcs they point into. */
const wb_ustack_entry *wb_ustacks_entries(const wb_ustacks *a, size_t *n);
const uint64_t *wb_ustacks_pool(const wb_ustacks *a);

/* The unwinder (its statistics, wb_unwind_push_stats) and the bytes of stack copied. */
wb_unwinder *wb_ustacks_unwinder(wb_ustacks *a);
uint64_t wb_ustacks_bytes(const wb_ustacks *a);
