#!/usr/bin/env bash
# `wb trend` of a history of 30 records (copies of one real `wb bench` run, a 1.5x step planted
# at the 16th) rendered by headless Chromium: one card per series, the step drawn and named at
# its commit, filters given in the address applied, no console errors, links that resolve.
# Installs nothing: without /usr/bin/chromium (Debian's `chromium`, from `make deps`) it skips.
source "$(dirname "$0")/../lib/chromium.sh"

root="$work/runs"
mkdir -p "$root"
check "wb bench writes the source run" "$BUILD/wb" bench runs=8 warmup=0 -o "$work/src" 'sleep 0.01'
check "the history is made" "$BUILD/wb" run tests/fixtures/recipes/history_copies.lua "$work/src" "$root" 30 16 1.5
check "wb trend writes the page and names the step" bash -c "
  '$BUILD/wb' trend --root '$root' > '$work/trend.out' &&
  grep -q '^regression +[0-9.]*% in bench · sleep 0.01 · wall mean (.*) at 0000000010 (from 000000000f' '$work/trend.out' &&
  grep -q '^trend: 4 series from 30 records, 1 step: ' '$work/trend.out'"
page="file://$root/trend/index.html"

chrome --enable-logging=stderr --v=0 --dump-dom "$page" >"$work/dom.html" 2>"$work/chrome.log"
check "one card per series, every one shown" bash -c "[ \$(grep -o '<div class=\"card\"' '$work/dom.html' | wc -l) -eq 4 ] &&
  grep -q '4 of 4 series' '$work/dom.html'"
check "the script ran to its end" grep -q 'data-ready="[0-9]*"' "$work/dom.html"
check "the step is named under its chart" bash -c "grep -q 'data-steps=\"1\"' '$work/dom.html' &&
  grep -q 'regression +[0-9.]*% at 0000000010 (from 000000000f' '$work/dom.html'"
check "the page logs no console errors" no_console_errors "$work/chrome.log"

chrome --enable-logging=stderr --v=0 --dump-dom "$page#steps=1&metric=wall%20mean" >"$work/dom2.html" 2>"$work/chrome2.log"
check "filters in the address: only the series with a step" bash -c "grep -q '1 of 4 series' '$work/dom2.html' &&
  [ \$(grep -o 'class=\"card hidden\"' '$work/dom2.html' | wc -l) -eq 3 ]"

check "the links of a point resolve from the page" bash -c "
  rel=\$(grep -o '\"records\":\[\[\"[^\"]*\"' '$root/trend/index.html' | sed 's/.*\\[\"//; s/\"\$//') &&
  test -f '$root/trend/'\"\$rel\"/manifest.json"

chrome --hide-scrollbars --screenshot="$work/shot.png" --window-size=1200,1400 "$page" >/dev/null 2>"$work/shot.log"
check "the page renders (a non-trivial screenshot)" png_ok "$work/shot.png" 1200 1400 40000
finish
