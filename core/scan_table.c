/* The log scanner's tables (see core/scan.h): the string map, groups, merging the results of
 * several threads, and distributions of collected values. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"
#include "stats.h"

/* ---- the string map --------------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
  for (; n >= 8; s += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  if (n) {
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0x94d049bb133111ebull;
  }
  return h ^ (h >> 29);
}

static int map_rehash(scan_map *m, uint32_t size) {
  uint32_t *slots = calloc(size, sizeof *slots);
  if (!slots) return -1;
  for (uint32_t k = 0; k < m->n; k++) {
    uint32_t i = (uint32_t)m->ents[k].hash & (size - 1);
    while (slots[i]) i = (i + 1) & (size - 1);
    slots[i] = k + 1;
  }
  free(m->slots);
  m->slots = slots;
  m->mask = size - 1;
  return 0;
}

int wb_scan_map_get(scan_map *m, const char *key, size_t len, uint32_t limit) {
  uint64_t h = hash_bytes(key, len);
  if (m->slots) {
    for (uint32_t i = (uint32_t)h & m->mask;; i = (i + 1) & m->mask) {
      uint32_t s = m->slots[i];
      if (!s) break;
      const struct scan_map_entry *e = &m->ents[s - 1];
      if (e->hash == h && e->len == len && memcmp(m->arena + e->off, key, len) == 0) return (int)(s - 1);
    }
  }
  if (m->n >= limit) return -1;
  if (!m->slots || (m->n + 1) * 2 > m->mask + 1) {
    if (map_rehash(m, m->slots ? (m->mask + 1) * 2 : 16) != 0) return -2;
  }
  if (m->n == m->cap) {
    uint32_t cap = m->cap ? m->cap * 2 : 16;
    void *ents = realloc(m->ents, cap * sizeof *m->ents);
    if (!ents) return -2;
    m->ents = ents;
    m->cap = cap;
  }
  if (m->arena_len + len + 1 > m->arena_cap) {
    size_t cap = m->arena_cap ? m->arena_cap * 2 : 256;
    while (cap < m->arena_len + len + 1) cap *= 2;
    char *arena = realloc(m->arena, cap);
    if (!arena) return -2;
    m->arena = arena;
    m->arena_cap = cap;
  }
  memcpy(m->arena + m->arena_len, key, len);
  m->arena[m->arena_len + len] = 0;
  m->ents[m->n] = (struct scan_map_entry){h, (uint32_t)m->arena_len, (uint32_t)len};
  m->arena_len += len + 1;
  uint32_t i = (uint32_t)h & m->mask;
  while (m->slots[i]) i = (i + 1) & m->mask;
  m->slots[i] = ++m->n;
  return (int)(m->n - 1);
}

scan_str wb_scan_map_name(const scan_map *m, uint32_t i) {
  return (scan_str){m->arena + m->ents[i].off, m->ents[i].len};
}

static void map_free(scan_map *m) {
  free(m->slots);
  free(m->ents);
  free(m->arena);
  memset(m, 0, sizeof *m);
}

/* ---- groups and results ------------------------------------------------------------------------- */

static int wants_collect(const scan_rule *r, const char *name, size_t len) {
  if (r->collect_all) return 1;
  for (int i = 0; i < r->ncollect; i++)
    if (r->collect[i].len == len && memcmp(r->collect[i].s, name, len) == 0) return 1;
  return 0;
}

scan_bucket *wb_scan_group_bucket(scan_result *res, const char *name, size_t len, const scan_rule *r, int *err) {
  int i = wb_scan_map_get(&res->groups, name, len, SCAN_MAX_GROUPS);
  if (i < 0) {
    if (i == -2) *err = ENOMEM;
    else res->dropped_groups++;
    return NULL;
  }
  if ((size_t)i >= res->buckets_cap) {
    size_t cap = res->buckets_cap ? res->buckets_cap * 2 : 16;
    scan_bucket *b = realloc(res->buckets, cap * sizeof *b);
    if (!b) {
      *err = ENOMEM;
      return NULL;
    }
    memset(b + res->buckets_cap, 0, (cap - res->buckets_cap) * sizeof *b);
    res->buckets = b;
    res->buckets_cap = cap;
  }
  scan_bucket *b = &res->buckets[i];
  if ((uint32_t)i + 1 == res->groups.n && b->n == 0 && b->value.count == 0 && !b->has_kept)
    b->collect = wants_collect(r, name, len);
  return b;
}

void wb_scan_result_init(scan_result *res, const scan_rule *r) {
  memset(res, 0, sizeof *res);
  res->whole.collect = r->group == SCAN_GROUP_NONE && r->collect_all;
}

static void bucket_free(scan_bucket *b) {
  map_free(&b->keys);
  free(b->aggs);
  free(b->vals);
  free(b->kept);
  memset(b, 0, sizeof *b);
}

void wb_scan_result_free(scan_result *res) {
  bucket_free(&res->whole);
  for (uint32_t i = 0; i < res->groups.n; i++) bucket_free(&res->buckets[i]);
  free(res->buckets);
  map_free(&res->groups);
}

static void bucket_finish(scan_bucket *b) {
  for (uint32_t i = 0; i < b->keys.n; i++) wb_scan_agg_to_double(&b->aggs[i]);
  wb_scan_agg_to_double(&b->value);
}

void wb_scan_result_finish(scan_result *res) {
  bucket_finish(&res->whole);
  for (uint32_t i = 0; i < res->groups.n; i++) bucket_finish(&res->buckets[i]);
}

static int merge_bucket(scan_bucket *d, const scan_bucket *s, int keep, int64_t *dropped) {
  int err = 0;
  d->n += s->n;
  for (uint32_t i = 0; i < s->keys.n && !err; i++) {
    scan_str k = wb_scan_map_name(&s->keys, i);
    int j = wb_scan_bucket_key(d, k.s, k.len, dropped, &err);
    if (j >= 0) wb_scan_agg_merge(&d->aggs[j], &s->aggs[i]);
  }
  wb_scan_agg_merge(&d->value, &s->value);
  if (!err && s->nvals) err = wb_scan_bucket_push(d, s->vals, s->nvals);
  if (!err && s->has_kept && (keep == SCAN_KEEP_LAST || !d->has_kept))
    err = wb_scan_bucket_keep(d, s->kept, s->kept_len);
  return err;
}

int wb_scan_result_merge(scan_result *d, const scan_result *s, const scan_rule *r) {
  int err = merge_bucket(&d->whole, &s->whole, r->keep, &d->dropped_keys);
  for (uint32_t i = 0; i < s->groups.n && !err; i++) {
    scan_str name = wb_scan_map_name(&s->groups, i);
    scan_bucket *b = wb_scan_group_bucket(d, name.s, name.len, r, &err);
    if (b) err = merge_bucket(b, &s->buckets[i], r->keep, &d->dropped_keys);
  }
  d->dropped_keys += s->dropped_keys;
  d->dropped_groups += s->dropped_groups;
  return err;
}

/* ---- distributions ---------------------------------------------------------------------------- */

/* min, max, mean (from the line values' sum) and median of the collected values (reordered). */
scan_dist wb_scan_bucket_dist(scan_bucket *b) {
  scan_dist d = {0};
  d.n = b->nvals;
  if (d.n == 0) return d;
  size_t k = d.n / 2;
  wb_stats_select_kth(b->vals, d.n, k);
  d.median = b->vals[k];
  d.min = d.max = b->vals[0];
  double below = -INFINITY, sum = 0;
  for (size_t i = 0; i < d.n; i++) {
    double x = b->vals[i];
    if (x < d.min) d.min = x;
    if (x > d.max) d.max = x;
    if (i < k && x > below) below = x;
    sum += x;
  }
  if (d.n % 2 == 0) d.median = (below + d.median) / 2;
  d.mean = b->value.count == (int64_t)d.n ? b->value.sum / (double)d.n : sum / (double)d.n;
  return d;
}
