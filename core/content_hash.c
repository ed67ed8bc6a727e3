/* BLAKE2b with a 32-byte digest, unkeyed (RFC 7693): the content identity of files wb caches
 * what it derived from (core/cache.h). */
#include <stdint.h>
#include <string.h>

#include "cache.h"

static const uint64_t IV[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                               0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                               0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

/* The message words each round feeds to its eight mixings, two a mixing. */
static const uint8_t SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t rotr(uint64_t x, int n) { return x >> n | x << (64 - n); }

static inline uint64_t load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

#define MIX(a, b, c, d, x, y)                                                                                 \
  do {                                                                                                        \
    v[a] += v[b] + (x), v[d] = rotr(v[d] ^ v[a], 32), v[c] += v[d], v[b] = rotr(v[b] ^ v[c], 24);             \
    v[a] += v[b] + (y), v[d] = rotr(v[d] ^ v[a], 16), v[c] += v[d], v[b] = rotr(v[b] ^ v[c], 63);             \
  } while (0)

/* Folds one 128-byte block into h; t: the bytes hashed so far, this block's included. */
static void compress(uint64_t h[8], const unsigned char block[128], uint64_t t, int last) {
  uint64_t m[16], v[16];
  for (int i = 0; i < 16; i++) m[i] = load64(block + 8 * i);
  for (int i = 0; i < 8; i++) v[i] = h[i], v[i + 8] = IV[i];
  v[12] ^= t; /* the high word of the 128-bit counter stays 0: inputs under 2^64 bytes */
  if (last) v[14] = ~v[14];
  for (int r = 0; r < 12; r++) {
    const uint8_t *s = SIGMA[r];
    MIX(0, 4, 8, 12, m[s[0]], m[s[1]]);
    MIX(1, 5, 9, 13, m[s[2]], m[s[3]]);
    MIX(2, 6, 10, 14, m[s[4]], m[s[5]]);
    MIX(3, 7, 11, 15, m[s[6]], m[s[7]]);
    MIX(0, 5, 10, 15, m[s[8]], m[s[9]]);
    MIX(1, 6, 11, 12, m[s[10]], m[s[11]]);
    MIX(2, 7, 8, 13, m[s[12]], m[s[13]]);
    MIX(3, 4, 9, 14, m[s[14]], m[s[15]]);
  }
  for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

void wb_hash_init(wb_hash *s) {
  memcpy(s->h, IV, sizeof s->h);
  s->h[0] ^= 0x01010000 | 32; /* fan-out and depth 1, no key, a 32-byte digest */
  s->fill = 0, s->total = 0;
}

void wb_hash_update(wb_hash *s, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n > 0) {
    if (s->fill == 128) { /* a full block is compressed only once more bytes follow it: the last is final */
      s->total += 128;
      compress(s->h, s->buf, s->total, 0);
      s->fill = 0;
    }
    size_t take = n < 128 - s->fill ? n : 128 - s->fill;
    memcpy(s->buf + s->fill, p, take);
    s->fill += take, p += take, n -= take;
  }
}

void wb_hash_final(wb_hash *s, char hex[65]) {
  memset(s->buf + s->fill, 0, 128 - s->fill); /* zero-padded (a whole block of zeros when nothing came) */
  compress(s->h, s->buf, s->total + s->fill, 1);
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    unsigned char b = (unsigned char)(s->h[i / 8] >> (8 * (i % 8)));
    hex[2 * i] = digits[b >> 4], hex[2 * i + 1] = digits[b & 15];
  }
  hex[64] = 0;
}

void wb_content_hash(const void *data, size_t n, char hex[65]) {
  wb_hash s;
  wb_hash_init(&s);
  wb_hash_update(&s, data, n);
  wb_hash_final(&s, hex);
}
