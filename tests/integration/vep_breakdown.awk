# The VEP breakdown computed independently of wb (for tests/integration/vep_awk.sh and bench/vep.lua),
# the way users do it today with awk. Reads a VEP stderr capture and prints one
# "section<TAB>key<TAB>value" line per figure (values with 6 decimals; durations in seconds, stage
# timers in ms):
#   pipeline KEY V           from the last pipeline_profile line
#   lance_n EVENT N          lance_total EVENT SECONDS   (seconds=, else open_s=, else scan_s=; 0 if none)
#   take n|min|median|mean|max|total V                    (variation_take seconds per batch)
#   engine STAGE SECONDS     engine_n STAGE N             (every key=<number>s token summed)
#   tx STAGE SECONDS         tx_n STAGE N
#   timer LABEL MS           timer_n LABEL N              ([VEP_PROFILE] label.....   123.4ms)
# Lines are split at "\n" and "\r" (progress bars); a tag counts only at the start of a line.
BEGIN { RS = "\r|\n" }

function starts(tag) { return substr($0, 1, length(tag)) == tag }

function seconds_token(s) { return s ~ /^[-+]?[0-9]+(\.[0-9]*)?s$/ }

function stage_sums(prefix,    i, eq, key, val) {
  for (i = 2; i <= NF; i++) {
    eq = index($i, "=")
    if (eq < 2) continue
    key = substr($i, 1, eq - 1)
    val = substr($i, eq + 1)
    if (!seconds_token(val)) continue
    sum[prefix, key] += substr(val, 1, length(val) - 1)
    cnt[prefix, key]++
    keys[prefix, key] = 1
  }
}

function has_word(w,    i) {
  for (i = 2; i <= NF; i++) if ($i == w) return 1
  return 0
}

function timer(    s, last, label, unit, v) {
  s = substr($0, length("[VEP_PROFILE]") + 1)
  sub(/[ \t]+$/, "", s)
  last = s
  sub(/.*[ \t]/, "", last)
  if (last !~ /^[0-9]+(\.[0-9]*)?(s|ms|us|ns)$/) return
  label = substr(s, 1, length(s) - length(last))
  sub(/^[ \t]+/, "", label)
  sub(/[ \t.]+$/, "", label)
  if (label == "" || index(label, "=")) return
  unit = last
  sub(/^[0-9.]+/, "", unit)
  v = substr(last, 1, length(last) - length(unit))
  if (unit == "s") v *= 1000
  else if (unit == "us") v /= 1000
  else if (unit == "ns") v /= 1000000
  timer_ms[label] += v
  timer_cnt[label]++
}

function lance(    ev, i, eq, key, val, found, v, best) {
  ev = index($2, "=") ? "" : $2
  lance_cnt[ev]++
  best = 4
  for (i = 2; i <= NF; i++) {
    eq = index($i, "=")
    if (eq < 2) continue
    key = substr($i, 1, eq - 1)
    val = substr($i, eq + 1)
    if (key == "seconds" && best > 1) { best = 1; v = val }
    else if (key == "open_s" && best > 2) { best = 2; v = val }
    else if (key == "scan_s" && best > 3) { best = 3; v = val }
  }
  lance_sum[ev] += (best < 4 ? v : 0)
  if (ev == "variation_take" && best < 4) takes[++ntakes] = v + 0
}

starts("[VEP_ENGINE_PROFILE]") { stage_sums("engine") }
starts("[VEP_TX_ENGINE_PROFILE]") { stage_sums("tx") }
starts("[vep-lance-profile]") { lance() }
starts("[VEP_PROFILE]") {
  if (has_word("pipeline_profile")) pipeline_line = $0
  timer()
}

function sift(a, i, n,    c, t) {
  while ((c = 2 * i) <= n) {
    if (c < n && a[c + 1] > a[c]) c++
    if (a[i] >= a[c]) return
    t = a[i]; a[i] = a[c]; a[c] = t
    i = c
  }
}

function heapsort(a, n,    i, t) {
  for (i = int(n / 2); i >= 1; i--) sift(a, i, n)
  for (i = n; i > 1; i--) {
    t = a[1]; a[1] = a[i]; a[i] = t
    sift(a, 1, i - 1)
  }
}

function out(section, key, v) { printf "%s\t%s\t%.6f\n", section, key, v }

END {
  if (pipeline_line != "") {
    n = split(pipeline_line, f, /[ \t]+/)
    for (i = 2; i <= n; i++) {
      eq = index(f[i], "=")
      if (eq < 2) continue
      key = substr(f[i], 1, eq - 1)
      val = substr(f[i], eq + 1)
      sub(/s$/, "", val)
      if (key ~ /^(output_rows|annotate|engine|lookup_wait|hydrate|context_load|tx_window|prepared_ctx)$/)
        out("pipeline", key, val)
    }
  }
  for (ev in lance_cnt) {
    out("lance_n", ev, lance_cnt[ev])
    out("lance_total", ev, lance_sum[ev])
  }
  if (ntakes > 0) {
    heapsort(takes, ntakes)
    total = 0
    for (i = 1; i <= ntakes; i++) total += takes[i]
    median = ntakes % 2 ? takes[(ntakes + 1) / 2] : (takes[ntakes / 2] + takes[ntakes / 2 + 1]) / 2
    out("take", "n", ntakes)
    out("take", "min", takes[1])
    out("take", "median", median)
    out("take", "mean", total / ntakes)
    out("take", "max", takes[ntakes])
    out("take", "total", total)
  }
  for (k in keys) {
    split(k, parts, SUBSEP)
    out(parts[1], parts[2], sum[k])
    out(parts[1] "_n", parts[2], cnt[k])
  }
  for (label in timer_ms) {
    out("timer", label, timer_ms[label])
    out("timer_n", label, timer_cnt[label])
  }
}
