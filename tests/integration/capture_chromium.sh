#!/usr/bin/env bash
# `wb profile` of the bundled workload, then its report.html and flame graph SVG rendered by
# headless Chromium: no console errors, the page holds the counters, the top functions and both
# flame graphs (embedded in iframes), the SVG's frames are in the DOM. Installs nothing: without
# /usr/bin/chromium (Debian's `chromium`, from `make deps`) it skips.
source "$(dirname "$0")/../lib/chromium.sh"

run="$work/run"
check "wb profile writes the run directory" "$BUILD/wb" run recipes/profile.lua -o "$run" freq=499 -- \
  "$BUILD/examples/cpu_split" --cpu 0.6 --sleep 0.3

chrome --enable-logging=stderr --v=0 --dump-dom "file://$run/report.html" >"$work/dom.html" 2>"$work/chrome.log"
check "the report has the counters and the top functions" bash -c "grep -q '<h2>Counters</h2>' '$work/dom.html' &&
  grep -q 'task-clock' '$work/dom.html' && grep -q '<code>spin_a</code>' '$work/dom.html'"
check "the report embeds the flame graphs" bash -c "
  [ \$(grep -o '<iframe title=\"[A-Za-z-]* flame graph\"' '$work/dom.html' | wc -l) -ge 1 ]"
check "the report logs no console errors" no_console_errors "$work/chrome.log"

svg="$run/profiles/profile.oncpu.svg"
chrome --enable-logging=stderr --v=0 --dump-dom "file://$svg" >"$work/svg.html" 2>"$work/svg.log"
check "the flame graph SVG has its frames" bash -c "[ \$(grep -o 'class=\"f\"' '$work/svg.html' | wc -l) -ge 5 ] &&
  grep -q 'spin_a' '$work/svg.html'"
check "the flame graph SVG logs no console errors" no_console_errors "$work/svg.log"

chrome --hide-scrollbars --screenshot="$work/shot.png" --window-size=1280,2400 "file://$run/report.html" \
  >/dev/null 2>"$work/shot.log"
check "the report renders (a non-trivial screenshot)" test "$(stat -c %s "$work/shot.png" 2>/dev/null || echo 0)" -gt 60000

finish
