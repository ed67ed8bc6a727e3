#!/usr/bin/env bash
# The memory chart and the allocation flame graphs rendered by headless Chromium: a program the
# test builds grows by 120 MiB from one site, holds it and frees it, printing those stages on
# stderr; wb.capture{alloc = true, stage_pattern} writes <name>.memory.svg (with the stage bands),
# <name>.alloc*.svg and the capture's HTML page (with the stage table), and Chromium loads each
# without console errors, with the chart's series and bands and the flame graphs' frames in the DOM. Without
# /usr/bin/chromium (Debian's `chromium`, from `make deps`) it skips.
source "$(dirname "$0")/../lib/chromium.sh"

cat >"$work/grow.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static void sleep_ms(int ms) { struct timespec t = {0, ms * 1000000L}; nanosleep(&t, 0); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
__attribute__((noinline)) static char *grow_site(size_t n) { char *p = malloc(n); memset(p, 1, n); return p; }
int main(void) {
  static char *blocks[120];
  sleep_ms(200);
  double t = now();
  for (int i = 0; i < 120; i++) blocks[i] = grow_site(1 << 20);
  sleep_ms(400);
  fprintf(stderr, "stage=hold seconds=%.6f\n", now() - t);
  t = now();
  for (int i = 0; i < 120; i++) free(blocks[i]);
  sleep_ms(200);
  fprintf(stderr, "stage=release seconds=%.6f\n", now() - t);
  return 0;
}
C
cat >"$work/capture.lua" <<'LUA'
local wb = require "wb"
return wb.recipe { run = function(ctx)
  local dir = ctx.args[2]
  local res = assert(wb.capture { argv = { ctx.args[1] }, alloc = true, method = "none", oncpu = false,
    offcpu = false, dir = dir, name = "m", title = "grow", stage_pattern = "stage=(%S+) seconds=([%d.]+)",
    stderr = { file = dir .. "/stderr.log" } })
  assert(not res.alloc.skipped, res.alloc.skipped)
  assert(wb.fs.write(dir .. "/report.html", require("wb.capture_report").html(res, { title = "grow" })))
  return 0
end }
LUA
check "the test program builds" cc -O2 -g -o "$work/grow" "$work/grow.c"
check "wb.capture writes the memory chart, the allocation flame graphs and the page" \
  "$BUILD/wb" run "$work/capture.lua" -- "$work/grow" "$work/out"

chrome --enable-logging=stderr --v=0 --dump-dom "file://$work/out/m.memory.svg" >"$work/mem.html" 2>"$work/mem.log"
check "the memory chart has the tree's series, its peak and the stage bands" bash -c "grep -q '<path' '$work/mem.html' &&
  grep -Eq 'peak 1[23][0-9](\\.[0-9])? MiB' '$work/mem.html' && grep -q '>hold<' '$work/mem.html' &&
  grep -q '>release<' '$work/mem.html'"
check "the memory chart logs no console errors" no_console_errors "$work/mem.log"

for view in alloc alloc_live; do
  chrome --enable-logging=stderr --v=0 --dump-dom "file://$work/out/m.$view.svg" >"$work/$view.html" 2>"$work/$view.log"
  check "the $view flame graph has its frames and names the site" bash -c "
    [ \$(grep -o 'class=\"f\"' '$work/$view.html' | wc -l) -ge 3 ] && grep -q 'grow_site' '$work/$view.html'"
  check "the $view flame graph logs no console errors" no_console_errors "$work/$view.log"
done

chrome --enable-logging=stderr --v=0 --dump-dom "file://$work/out/report.html" >"$work/page.html" 2>"$work/page.log"
check "the page has the memory chart and the allocations" bash -c "grep -q '<h2>Memory</h2>' '$work/page.html' &&
  grep -q '<h2>Allocations</h2>' '$work/page.html' && grep -q '<figure class=\"memory\">' '$work/page.html' &&
  grep -q '<td[^>]*>hold</td>' '$work/page.html' &&
  [ \$(grep -o '<iframe title=\"Bytes ' '$work/page.html' | wc -l) -ge 2 ]"
check "the page logs no console errors" no_console_errors "$work/page.log"

finish
