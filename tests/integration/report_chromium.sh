#!/usr/bin/env bash
# The HTML report of tests/fixtures/report/summary.json, written by `wb run` and rendered by
# headless Chromium: the DOM holds the summary table and the three SVG charts, the page logs no
# console errors and loads nothing, and the screenshot is a real PNG of the requested size.
# Installs nothing: without /usr/bin/chromium (Debian's `chromium`, from `make deps`) it skips.
source "$(dirname "$0")/../lib/chromium.sh"

out="$work/report"
check "wb run writes the report" "$BUILD/wb" run tests/fixtures/recipes/report_html.lua \
  tests/fixtures/report/summary.json "$out" "xz threads"
page="file://$out/report.html"

chrome --enable-logging=stderr --v=0 --dump-dom "$page" >"$work/dom.html" 2>"$work/chrome.log"
check "the DOM has the summary table" bash -c "grep -q '<table>' '$work/dom.html' &&
  grep -q 'Mean ± σ \[ms\]' '$work/dom.html' && [ \$(grep -o '<tr>' '$work/dom.html' | wc -l) -ge 3 ]"
check "the DOM has three SVG charts" test "$(count '<svg ' "$work/dom.html")" -eq 3
check "the charts have titles, axes and points" bash -c "
  grep -q '<title>Distribution of wall time per command</title>' '$work/dom.html' &&
  grep -q '<title>Mean time relative to the reference</title>' '$work/dom.html' &&
  grep -q '<title>Mean wall time by threads</title>' '$work/dom.html' &&
  [ \$(grep -o '<circle' '$work/dom.html' | wc -l) -ge 30 ]"
check "the page has the given title" grep -q '<h1>xz threads</h1>' "$work/dom.html"

# The rendered table against the fixture's raw samples: each command's row shows the mean ± σ and
# the median of its wall samples in ms, recomputed here with plain arithmetic (not wb.stats).
cat >"$work/expect.lua" <<'LUA'
local wb = require "wb"
return wb.recipe { run = function(ctx)
  for _, c in ipairs(wb.check(wb.json.read(ctx.args[1])).commands) do
    local xs, sum = {}, 0
    for i, x in ipairs(c.samples.wall) do xs[i] = x * 1000; sum = sum + xs[i] end
    local mean, ss = sum / #xs, 0
    for _, x in ipairs(xs) do ss = ss + (x - mean) ^ 2 end
    table.sort(xs)
    local m = #xs // 2
    local median = #xs % 2 == 1 and xs[m + 1] or (xs[m] + xs[m + 1]) / 2
    print(string.format('<code>%s</code>\t<td class="r">%.1f ± %.1f</td><td class="r">%.1f</td>', c.name, mean,
      math.sqrt(ss / (#xs - 1)), median))
  end
end }
LUA
"$BUILD/wb" run "$work/expect.lua" tests/fixtures/report/summary.json >"$work/expect.txt"
rows_match() { # each expected row: the command's <code> cell, then its mean ± σ and median cells
  [ "$(wc -l <"$work/expect.txt")" -eq 3 ] || return 1
  while IFS=$'\t' read -r code cells; do
    grep -F "$code" "$work/dom.html" | grep -qF "$cells" || { echo "no row with $code ... $cells"; return 1; }
  done <"$work/expect.txt"
}
check "the table's mean ± σ and median cells equal the raw samples' (ms)" rows_match
check "no console errors" no_console_errors "$work/chrome.log"
check "no external resources" bash -c "[ -s '$work/dom.html' ] &&
  ! grep -Eq ' (src|href)=|url\\(|<link|<script' '$work/dom.html' '$out/report.html'"

# The console check must be able to fail: a page with a script error is caught.
printf '<!DOCTYPE html><title>t</title><script>undefinedFunction()</script>\n' >"$work/bad.html"
chrome --enable-logging=stderr --v=0 --dump-dom "file://$work/bad.html" >/dev/null 2>"$work/bad.log"
check "a script error is detected (control)" grep -q ':CONSOLE.*Uncaught ReferenceError' "$work/bad.log"

chrome --hide-scrollbars --screenshot="$work/shot.png" --window-size=1200,2000 "$page" \
  >/dev/null 2>"$work/shot.log"
check "the screenshot is a 1200×2000 PNG" png_ok "$work/shot.png" 1200 2000 0
check "the screenshot is not trivial (> 60 KB)" test "$(stat -c %s "$work/shot.png" 2>/dev/null || echo 0)" -gt 60000
if [ -n "${WB_REPORT_SCREENSHOT:-}" ]; then cp "$work/shot.png" "$WB_REPORT_SCREENSHOT"; fi

finish
