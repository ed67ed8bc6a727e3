/* The allocation-heavy workload of bench/alloc.lua: N malloc/free pairs (argv[1], default 10 M)
 * of 16..527 bytes through a ring of 256 live blocks, each block touched once. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000000;
  static char *ring[256];
  unsigned r = 1;
  unsigned long sum = 0;
  for (long i = 0; i < n; i++) {
    r = r * 1103515245u + 12345u;
    size_t size = 16 + (r >> 8) % 512;
    free(ring[i & 255]);
    char *p = malloc(size);
    p[0] = (char)i;
    sum += (unsigned char)p[size / 2];
    ring[i & 255] = p;
  }
  for (int i = 0; i < 256; i++) free(ring[i]);
  printf("%lu\n", sum);
  return 0;
}
