#!/usr/bin/env bash
# Flame graphs written by wb.flame (tests/fixtures/flame/render.lua) rendered by headless Chromium:
# the SVGs parse (hostile names included; an unescaped "&" is caught: control), show their frames,
# log no console errors (a broken script is caught: control), the URL query searches (?s=) and zooms (?x=), a page driving the
# graph with real events exercises hover, click-to-zoom, Reset Zoom, Search, Ctrl-F, "/" and
# Escape (a graph without its script fails there: control), and screenshots are real PNGs.
# Installs nothing: without /usr/bin/chromium (Debian's `chromium`, from `make deps`) it skips.
source "$(dirname "$0")/../lib/chromium.sh"
dump() { # url out log : the DOM after the page's scripts ran, console output in log
  chrome --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom "$1" >"$2" 2>"$3"
}
out="$work/out"
check "wb writes the flame graphs" "$BUILD/wb" run tests/fixtures/flame/render.lua "$out"

for name in flame diff hostile; do
  dump "file://$out/$name.svg" "$work/$name.dom" "$work/$name.log"
  check "$name.svg: parses and shows its frames" bash -c "
    ! grep -q parsererror '$work/$name.dom' && [ \$(grep -o '<g class=\"f\"' '$work/$name.dom' | wc -l) -ge 5 ]"
  check "$name.svg: no console errors" no_console_errors "$work/$name.log"
done
check "flame.svg: frames from the fixture, labels and tooltips" bash -c "
  grep -q '<title>fit_model (3,550 samples, 61.63%)</title>' '$work/flame.dom' &&
  grep -q '>dgemm_kernel_haswell</text>' '$work/flame.dom' && grep -q 'Reset Zoom' '$work/flame.dom'"
check "diff.svg: both counts and the change in tooltips" \
  grep -q '<title>hash_join (base 750, new 1,190 samples, +440; share' "$work/diff.dom"
check "hostile.svg: names escaped, no injected script" bash -c "
  grep -q '&lt;&amp;&gt;\"'\"'\"' &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; (5 samples' '$work/hostile.dom' &&
  [ \$(grep -o '<script' '$work/hostile.dom' | wc -l) -eq 1 ]"

sed 's|<title>main (|<title>main & (|' "$out/hostile.svg" >"$work/unescaped.svg"
dump "file://$work/unescaped.svg" "$work/unescaped.dom" "$work/unescaped.log"
check "an unescaped name breaks the parse (control)" grep -q parsererror "$work/unescaped.dom"

sed 's|var C = |undefinedFunction(); var C = |' "$out/flame.svg" >"$work/broken.svg"
dump "file://$work/broken.svg" "$work/broken.dom" "$work/broken.log"
check "a script error in the SVG is detected (control)" grep -q ':CONSOLE.*Uncaught ReferenceError' "$work/broken.log"

dump "file://$out/flame.svg?s=dgemm&x=fit_model" "$work/query.dom" "$work/query.log"
check "?s= searches: matched share and highlighted frames" bash -c "
  grep -q '>Matched: 38.19% (2 frames)<' '$work/query.dom' &&
  [ \$(grep -o 'fill=\"#e600e6\"' '$work/query.dom' | wc -l) -eq 2 ]"
check "?x= zooms: the frame spans the width, others hidden" bash -c "
  grep -q '<title>fit_model (3,550 samples, 61.63%)</title><rect x=\"10.00\" y=\"[0-9]*\" width=\"1180.00\"' '$work/query.dom' &&
  grep -q 'class=\"f hide\"' '$work/query.dom' && grep -q 'id=\"unzoom\" class=\"btn\"' '$work/query.dom'"
check "?s= and ?x= log no console errors" no_console_errors "$work/query.log"

interact() { # svg frame search matched out : the interaction page's result
  chrome --allow-file-access-from-files --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom \
    "file://$PWD/tests/fixtures/flame/interact.html?svg=file://$1&frame=$2&search=$3&matched=$4" >"$5" 2>"$5.log"
}
passes() { # dom : every check passed, and there were at least 15
  grep -q '^DONE' "$1" && ! grep -q '^FAIL' "$1" && [ "$(grep -c '^PASS' "$1")" -ge 15 ] || { grep -E '^(FAIL|PASS)' "$1"; false; }
}
interact "$out/flame.svg" fit_model dgemm 38.19 "$work/ui_flame.dom"
check "flame.svg: hover, zoom, reset, search, Ctrl-F, / and Escape work" passes "$work/ui_flame.dom"
check "flame.svg: interaction logs no console errors" no_console_errors "$work/ui_flame.dom.log"
interact "$out/diff.svg" process_batch hash_join 20.43 "$work/ui_diff.dom"
check "diff.svg: hover, zoom, reset, search, Ctrl-F, / and Escape work" passes "$work/ui_diff.dom"
sed '/<script type="text\/ecmascript">/,/<\/script>/d' "$out/flame.svg" >"$work/inert.svg"
interact "$work/inert.svg" fit_model dgemm 38.19 "$work/ui_inert.dom"
check "a graph without its script fails the interaction checks (control)" \
  bash -c "grep -q '^DONE' '$work/ui_inert.dom' && grep -q '^FAIL zoom' '$work/ui_inert.dom'"

for name in flame diff; do
  height=$(sed -n 's/.*<svg [^>]* height="\([0-9]*\)".*/\1/p' "$out/$name.svg" | head -n 1)
  chrome --hide-scrollbars --screenshot="$work/$name.png" --window-size="1200,$height" \
    "file://$out/$name.svg" >/dev/null 2>&1
  check "$name.svg: the screenshot is a 1200×$height PNG, not blank (> 20 KB)" png_ok "$work/$name.png" 1200 "$height" 20000
done
if [ -n "${WB_FLAME_SCREENSHOTS:-}" ]; then cp "$work"/*.png "$WB_FLAME_SCREENSHOTS"/; fi

finish
