#!/usr/bin/env bash
# Runs the libFuzzer targets built by `make fuzz-build` ($FUZZ_BUILD/fuzz_*, default build-fuzz/).
#   tests/fuzz/run.sh smoke [TARGET...]          each target briefly (seeded, at most
#                                               FUZZ_SMOKE_RUNS inputs or FUZZ_SMOKE_SECONDS s)
#   tests/fuzz/run.sh run SECONDS [TARGET...]    each target for SECONDS, growing the working
#                                               corpus $FUZZ_BUILD/corpus/<target>
# Seeds come from tests/fuzz/corpus/<target>/ (never written to), a dictionary from
# tests/fuzz/dict/<target>.dict when present. One line per target with its exec count; a finding
# leaves its input in $FUZZ_BUILD/crashes/ and prints its report. Ends with `N passed, N failed`.
set -u
cd "$(dirname "$0")/../.." || exit 2
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
mode=${1:-smoke}
shift || true
case $mode in
smoke) seconds=${FUZZ_SMOKE_SECONDS:-3} ;;
run)
  seconds=${1:-60}
  shift || true
  ;;
*)
  echo "usage: $0 smoke|run [SECONDS] [TARGET...]" >&2
  exit 2
  ;;
esac
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    [ "$t" = fuzz_lua ] || targets+=("${t#fuzz_}")
  done
fi
mkdir -p "$FUZZ_BUILD/crashes"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

for t in "${targets[@]}"; do
  bin=$FUZZ_BUILD/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "not ok - fuzz_$t: $bin is missing (make fuzz-build)"
    failed=$((failed + 1))
    continue
  fi
  if [ "$mode" = smoke ]; then
    corpus=$work/$t
    opts=(-seed=1 "-runs=${FUZZ_SMOKE_RUNS:-20000}")
  else
    corpus=$FUZZ_BUILD/corpus/$t
    opts=()
  fi
  mkdir -p "$corpus"
  [ -f "tests/fuzz/dict/$t.dict" ] && opts+=("-dict=tests/fuzz/dict/$t.dict")
  log=$work/$t.log
  start=$(date +%s%N)
  # -detect_leaks=0: no leak check per new input (the reused Lua state makes each one run LSan, 40x
  # slower); LeakSanitizer still checks the whole run at exit and fails it on a leak.
  "$bin" "${opts[@]}" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -detect_leaks=0 -print_final_stats=1 \
    -artifact_prefix="$FUZZ_BUILD/crashes/$t-" "$corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
  units=$(sed -nE 's/^#[0-9]+.*corp: ([0-9]+)\/.*/\1/p' "$log" | tail -n 1)
  if [ $rc -eq 0 ]; then
    printf 'ok - fuzz_%s: %s execs in %d.%d s (%s/s), corpus %s\n' "$t" "${execs:-?}" $((ms / 1000)) \
      $((ms % 1000 / 100)) "$((${execs:-0} * 1000 / (ms > 0 ? ms : 1)))" "${units:-?}"
    passed=$((passed + 1))
  else
    artifact=$(sed -nE "s/.*Test unit written to (.*)$/\1/p" "$log" | tail -n 1)
    echo "not ok - fuzz_$t: exit $rc after ${execs:-?} execs; input: ${artifact:-none}"
    grep -E '^fuzz: |^wb_scan_number|^SUMMARY|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' "$log" |
      head -n 8 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
