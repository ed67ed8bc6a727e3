/* Contract in bpf_backlog.h. Records are kept in chunks of at least CHUNK bytes, each record a
 * size word and its bytes rounded up to 8; the emptied chunk at the head is kept for reuse. */
#include "bpf_backlog.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1u << 20)

typedef struct chunk {
  struct chunk *next;
  size_t cap, end, at; /* bytes of data; written up to end; read up to at */
  uint8_t data[];
} chunk;

struct wb_backlog {
  chunk *head, *tail, *spare;
  size_t max, bytes, peak, count;
};

static size_t footprint(size_t size) { return sizeof(uint64_t) + ((size + 7) & ~(size_t)7); }

wb_backlog *wb_backlog_new(size_t max_bytes) {
  wb_backlog *b = calloc(1, sizeof *b);
  if (b) b->max = max_bytes;
  return b;
}

void wb_backlog_free(wb_backlog *b) {
  if (!b) return;
  for (chunk *c = b->head, *next; c; c = next) next = c->next, free(c);
  free(b->spare);
  free(b);
}

static chunk *new_chunk(wb_backlog *b, size_t need) {
  chunk *c;
  if (b->spare && b->spare->cap >= need) {
    c = b->spare, b->spare = NULL;
  } else {
    size_t cap = need > CHUNK ? need : CHUNK;
    if (!(c = malloc(sizeof *c + cap))) return NULL;
    c->cap = cap;
  }
  c->next = NULL, c->end = c->at = 0;
  return c;
}

int wb_backlog_push(wb_backlog *b, const void *data, size_t size) {
  size_t need = footprint(size);
  if (b->bytes + need > b->max) return -1;
  if (!b->tail || b->tail->cap - b->tail->end < need) {
    chunk *c = new_chunk(b, need);
    if (!c) return -1;
    if (b->tail) b->tail->next = c;
    else b->head = c;
    b->tail = c;
  }
  uint64_t n = size;
  memcpy(b->tail->data + b->tail->end, &n, sizeof n);
  memcpy(b->tail->data + b->tail->end + sizeof n, data, size);
  b->tail->end += need;
  b->bytes += need, b->count++;
  if (b->bytes > b->peak) b->peak = b->bytes;
  return 0;
}

const void *wb_backlog_front(const wb_backlog *b, size_t *size) {
  const chunk *c = b->head;
  if (!c || c->at == c->end) return NULL;
  uint64_t n;
  memcpy(&n, c->data + c->at, sizeof n);
  *size = (size_t)n;
  return c->data + c->at + sizeof n;
}

void wb_backlog_pop(wb_backlog *b) {
  chunk *c = b->head;
  if (!c || c->at == c->end) return;
  uint64_t n;
  memcpy(&n, c->data + c->at, sizeof n);
  c->at += footprint((size_t)n);
  b->bytes -= footprint((size_t)n), b->count--;
  if (c->at < c->end) return;
  if (c == b->tail) {
    c->at = c->end = 0; /* the only chunk: written again from its start */
    return;
  }
  b->head = c->next;
  if (!b->spare) b->spare = c;
  else free(c);
}

size_t wb_backlog_count(const wb_backlog *b) { return b->count; }
size_t wb_backlog_peak_bytes(const wb_backlog *b) { return b->peak; }
