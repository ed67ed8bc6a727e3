#!/usr/bin/env bash
# The VEP breakdown against an independent computation: seeded logs from the bundled emitter, wb's
# breakdown.json against tests/integration/vep_breakdown.awk, number for number (6 decimals) — for a
# plain log, its gzip, a scan split over threads, the same cut off without a final newline, and a
# run-mode capture.
set -u
cd "$(dirname "$0")/../.."
BUILD=${WB_BUILD:-build}
WB="$PWD/$BUILD/wb"
EMIT="$PWD/$BUILD/examples/vep_emit"
AWK="$PWD/tests/integration/vep_breakdown.awk"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() {
  failed=$((failed + 1))
  echo "not ok - $1"
  shift
  [ $# -gt 0 ] && sed 's/^/    /' "$@" | head -n 30
}

cat >"$tmp/print.lua" <<'LUA'
-- Prints a breakdown.json as the lines tests/integration/vep_breakdown.awk prints.
local wb = require "wb"
return wb.recipe {
  defaults = { path = "" },
  run = function(ctx)
    local b = assert(wb.json.read(ctx.cfg.path))
    local function add(section, key, v) io.write(string.format("%s\t%s\t%.6f\n", section, key, v)) end
    if b.pipeline ~= wb.null then
      for _, k in ipairs({ "output_rows", "annotate", "engine", "lookup_wait", "hydrate", "context_load",
        "tx_window", "prepared_ctx" }) do
        if b.pipeline[k] ~= wb.null then add("pipeline", k, b.pipeline[k]) end
      end
    end
    for _, e in ipairs(b.lance.events) do
      add("lance_n", e.event, e.n)
      add("lance_total", e.event, e.total_seconds)
    end
    local t = b.lance.variation_take
    if t ~= wb.null then
      for _, k in ipairs({ "n", "min", "median", "mean", "max" }) do add("take", k, t[k]) end
      add("take", "total", t.total_seconds)
    end
    for _, s in ipairs(b.engine.stages) do add("engine", s.stage, s.total_seconds) add("engine_n", s.stage, s.n) end
    for _, s in ipairs(b.tx_engine.stages) do add("tx", s.stage, s.total_seconds) add("tx_n", s.stage, s.n) end
    for _, s in ipairs(b.timers) do add("timer", s.label, s.total_ms) add("timer_n", s.label, s.n) end
  end,
}
LUA

# check NAME BREAKDOWN_JSON LOG READER : wb's figures equal awk's
check() {
  local name=$1 json=$2 log=$3 reader=$4
  "$WB" run "$tmp/print.lua" path="$json" | LC_ALL=C sort >"$tmp/$name.wb"
  $reader "$log" | awk -f "$AWK" | LC_ALL=C sort >"$tmp/$name.awk"
  local sections
  sections=$(cut -f1 "$tmp/$name.awk" | sort -u | tr '\n' ' ')
  if [ "$sections" != "engine engine_n lance_n lance_total pipeline take timer timer_n tx tx_n " ]; then
    not_ok "$name: awk found every section (got: $sections)"
  elif diff -u "$tmp/$name.awk" "$tmp/$name.wb" >"$tmp/$name.diff"; then
    ok "$name: wb and awk agree on $(wc -l <"$tmp/$name.wb") figures"
  else
    not_ok "$name: wb and awk differ (- awk, + wb)" "$tmp/$name.diff"
  fi
}

# breakdown NAME LOG [override...] : wb vep_breakdown in log mode into $tmp/NAME
breakdown() {
  local name=$1 log=$2
  shift 2
  if "$WB" vep_breakdown log="$log" -o "$tmp/$name" "$@" >"$tmp/$name.out" 2>&1; then
    return 0
  fi
  not_ok "$name: wb vep_breakdown log=$log exited $?" "$tmp/$name.out"
  return 1
}

if "$EMIT" --all --bytes 3M --seed 42 --workers 2 --noise 4 --contigs 4 -o "$tmp/a.log" >/dev/null; then
  ok "emitter wrote a 3 MiB log"
else
  not_ok "emitter failed"
fi

breakdown plain "$tmp/a.log" && check plain "$tmp/plain/breakdown.json" "$tmp/a.log" cat

gzip -c "$tmp/a.log" >"$tmp/a.log.gz"
breakdown gz "$tmp/a.log.gz" && check gz "$tmp/gz/breakdown.json" "$tmp/a.log.gz" "gzip -dc"

breakdown threads "$tmp/a.log" threads=3 && check threads "$tmp/threads/breakdown.json" "$tmp/a.log" cat
if cmp -s "$tmp/plain.wb" "$tmp/threads.wb"; then
  ok "a scan split over 3 threads gives the figures of a sequential one"
else
  not_ok "threaded and sequential scans differ"
fi

# Cut off mid-run: the last line, a profile timer, has no newline (plain, gzip, threaded scan).
{ cat "$tmp/a.log"; printf '[VEP_PROFILE] write output......................................    45.6ms'; } >"$tmp/cut.log"
if [ "$(tail -c 4 "$tmp/cut.log")" = .6ms ]; then ok "the cut log ends without a newline"; else not_ok "cut log"; fi
gzip -c "$tmp/cut.log" >"$tmp/cut.log.gz"
breakdown cut "$tmp/cut.log" && check cut "$tmp/cut/breakdown.json" "$tmp/cut.log" cat
breakdown cutgz "$tmp/cut.log.gz" && check cutgz "$tmp/cutgz/breakdown.json" "$tmp/cut.log.gz" "gzip -dc"
breakdown cut3 "$tmp/cut.log" threads=3 && check cut3 "$tmp/cut3/breakdown.json" "$tmp/cut.log" cat
if ! cmp -s "$tmp/plain.wb" "$tmp/cut.wb"; then
  ok "the unterminated last line counts (its timer changes the figures)"
else
  not_ok "the cut log gave the figures of the plain one: its last line was dropped"
fi

if "$WB" vep_breakdown emit.bytes=1M emit.seed=7 emit.work_us=0 -o "$tmp/runmode" >"$tmp/runmode.out" 2>&1; then
  check runmode "$tmp/runmode/breakdown.json" "$tmp/runmode/logs/command.stderr.log" cat
else
  not_ok "run mode: wb vep_breakdown exited $?" "$tmp/runmode.out"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
