/* core/bpf_backlog.h: records come out in the order they went in, byte for byte, across chunks,
 * interleaved pushes and pops and records larger than a chunk; a push past max_bytes is refused
 * and nothing held is lost; the peak is the most held at once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpf_backlog.h"
#include "check.h"

/* Record i: its size, and its bytes (i in each, then a position pattern). */
static size_t rec_size(uint32_t i) { return i % 1499 == 0 ? (3u << 20) + i : 1 + (i * 2654435761u) % 20000; }
static void rec_fill(uint8_t *buf, uint32_t i, size_t n) {
  for (size_t k = 0; k < n; k++) buf[k] = (uint8_t)(i * 31 + k * 7);
}

static int pop_matches(wb_backlog *b, uint32_t i, uint8_t *want) {
  size_t n = 0;
  const void *r = wb_backlog_front(b, &n);
  if (!r || n != rec_size(i)) return 0;
  rec_fill(want, i, n);
  int same = memcmp(r, want, n) == 0;
  wb_backlog_pop(b);
  return same;
}

int main(void) {
  uint8_t *buf = malloc((4u << 20) + 100), *want = malloc((4u << 20) + 100);
  int ok = 1;
  wb_backlog *b = wb_backlog_new((size_t)1 << 30);
  size_t n;
  CHECK(wb_backlog_front(b, &n) == NULL && wb_backlog_count(b) == 0);
  uint32_t in = 0, out = 0;
  for (int round = 0; round < 40; round++) { /* 150 in, 100 out per round */
    for (int k = 0; k < 150; k++, in++) {
      rec_fill(buf, in, rec_size(in));
      CHECK(wb_backlog_push(b, buf, rec_size(in)) == 0);
    }
    for (int k = 0; k < 100; k++, out++) CHECK(pop_matches(b, out, want));
  }
  while (out < in) CHECK(pop_matches(b, out++, want));
  CHECK(wb_backlog_front(b, &n) == NULL && wb_backlog_count(b) == 0);
  CHECK(wb_backlog_peak_bytes(b) > (size_t)1000 * 10000);
  report("backlog: 6,000 records of 1 B to 3 MiB, pushed and popped interleaved, come out in order and intact", ok);
  wb_backlog_free(b);

  ok = 1;
  b = wb_backlog_new(100000);
  int pushed = 0;
  memset(buf, 0xab, 1000);
  while (wb_backlog_push(b, buf, 1000) == 0) pushed++;
  CHECK(pushed >= 90 && pushed < 100);
  CHECK(wb_backlog_count(b) == (size_t)pushed && wb_backlog_peak_bytes(b) <= 100000);
  wb_backlog_pop(b);
  CHECK(wb_backlog_push(b, buf, 1000) == 0 && wb_backlog_push(b, buf, 1000) != 0);
  size_t held = 0;
  for (const void *r; (r = wb_backlog_front(b, &n)); wb_backlog_pop(b)) {
    CHECK(n == 1000 && memcmp(r, buf, n) == 0);
    held++;
  }
  CHECK(held == (size_t)pushed);
  report("backlog: a push past max_bytes is refused; what it holds stays, and a pop makes room", ok);
  wb_backlog_free(b);
  free(buf);
  free(want);
  return summary();
}
