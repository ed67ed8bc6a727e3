#!/usr/bin/env bash
# The flakiness hunt: runs suites of tests/run.sh N times, quiet or beside LOAD busy loops, and
# prints a table of suite, runs and failures (`make test-repeat N=20 LOAD=2 ONLY=lua`).
#   N      rounds (default 5)
#   LOAD   CPU-bound loops kept running during every round (WB_TEST_LOAD of tests/run.sh; 0: none)
#   ONLY   the kinds of tests/run.sh to repeat (c lua ffi fuzz cli integration; default lua cli)
#   WB_TEST_LUA / WB_TEST_INTEGRATION narrow the suites, as for tests/run.sh.
# The table goes to stdout and to $BUILD/repeat-<when>.md; each failing round's lines (`not ok`
# and what the suite printed under them) go to $BUILD/repeat-<when>.log. Exit status 1 if any
# round of any suite failed.
set -u
cd "$(dirname "$0")/.."
BUILD=${WB_BUILD:-build}
rounds=${N:-5} load=${LOAD:-0} only=${ONLY:-lua cli}
case $rounds$load in *[!0-9]*) echo "tests/repeat.sh: N and LOAD are whole numbers" >&2; exit 2 ;; esac
stamp=$(date +%Y%m%d-%H%M%S)
table=$BUILD/repeat-$stamp.md failures=$BUILD/repeat-$stamp.log
mkdir -p "$BUILD"
: >"$failures"
declare -A runs fails secs
order=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for ((r = 1; r <= rounds; r++)); do
  for kind in $only; do
    WB_TEST_ONLY=$kind WB_TEST_LOAD=$load bash tests/run.sh >"$out" 2>&1
    # per suite: `== name`, its `not ok` lines, then `   N passed, M failed... (S s)`
    awk '
      /^== skips$/ { exit } # the list of skips closes the suites
      /^== / { if (name != "") print name, bad, s; name = $2; bad = 0; s = 0; next }
      /^not ok/ && name != "" { bad = 1 }
      /^   [0-9]+ passed, [0-9]+ failed/ {
        if ($0 !~ / 0 failed/) bad = 1
        if (match($0, /\(([0-9]+) s\)$/)) s = substr($0, RSTART + 1, RLENGTH - 4)
      }
      END { if (name != "") print name, bad, s }' "$out" >"$out.suites"
    while read -r name bad s; do
      [ -n "${runs[$name]+x}" ] || { order+=("$name"); runs[$name]=0 fails[$name]=0 secs[$name]=0; }
      runs[$name]=$((runs[$name] + 1)) secs[$name]=$((secs[$name] + s))
      if [ "$bad" = 1 ]; then
        fails[$name]=$((fails[$name] + 1))
        { echo "## round $r, $name (LOAD=$load)"; awk -v n="$name" '
            /^== / { on = ($2 == n) ; next } on' "$out"; } >>"$failures"
      fi
    done <"$out.suites"
    rm -f "$out.suites"
    total=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    echo "round $r/$rounds, $kind, LOAD=$load: ${total:-no result line}" >&2
  done
done

{
  echo "| suite | runs | failures | mean s | LOAD |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  for name in "${order[@]}"; do
    echo "| $name | ${runs[$name]} | ${fails[$name]} | $((secs[$name] / runs[$name])) | $load |"
  done
} | tee "$table"
echo "table: $table; failing rounds: $failures" >&2
for name in "${order[@]}"; do [ "${fails[$name]}" -eq 0 ] || exit 1; done
exit 0
