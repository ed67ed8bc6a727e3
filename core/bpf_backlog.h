/* A FIFO of records copied out of a BPF ring buffer (core/bpf.c): emptying the ring costs a copy
 * per record, so that a drain that falls behind (wb starved of CPU on a busy machine, or slow to
 * walk stacks) keeps the records in wb's memory instead of the kernel dropping them. */
#pragma once
#include <stddef.h>

typedef struct wb_backlog wb_backlog;

/* An empty backlog holding at most max_bytes of records; NULL when out of memory. */
wb_backlog *wb_backlog_new(size_t max_bytes);
void wb_backlog_free(wb_backlog *b);

/* Appends a copy of the record; 0, or -1 when it would pass max_bytes or memory ran out. */
int wb_backlog_push(wb_backlog *b, const void *data, size_t size);

/* The oldest record and its size (valid until the next pop); NULL when the backlog is empty. */
const void *wb_backlog_front(const wb_backlog *b, size_t *size);
void wb_backlog_pop(wb_backlog *b);

size_t wb_backlog_count(const wb_backlog *b);
size_t wb_backlog_peak_bytes(const wb_backlog *b); /* the most it held at once */
