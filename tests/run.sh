#!/usr/bin/env bash
# Runs every test suite: C unit tests (build/tests/*), Lua tests (module tests tests/lua/*_test.lua
# and recipe tests tests/recipes/*_test.lua, run by wb),
# the LuaJIT FFI test of core/wb.h, a short smoke run of each fuzz target (make fuzz-smoke), CLI
# transcript tests (tests/cli/*.t), integration tests (tests/integration/*.sh).
# Each suite reports `N passed, N failed[, N skipped]` (shown with the suite's seconds); this script adds them up and ends with
# the total line. Exit status 1 if anything failed. WB_TEST_ONLY=c|lua|ffi|fuzz|cli|integration limits it;
# WB_TEST_SKIP="name ..." leaves suites out by the name printed after `==`, each counted as one
# skip (named with the pass WB_TEST_PASS, e.g. asan, when set); WB_TEST_LUA="file ..." and
# WB_TEST_INTEGRATION="file ..." replace the lists of Lua test files and integration scripts.
# WB_TEST_LOAD=N keeps N CPU-bound loops running for the whole run (every test must pass on a
# busy machine; tests/repeat.sh uses it).
# The integration suites named in WB_TEST_BEHIND (default: the two Slurm suites, which spend most of
# their time waiting on slurmctld) start at the beginning, one after another, behind the others;
# each is reported in its place in the list, with the seconds it took.
# A suite that runs no case fails. Every skip (a suite's `skip - ...` lines and the suites left
# out) is listed at the end as `SUITE: skip - ...`; with CI=true a skip that no entry of
# tests/skips.allow matches is a failure (that file documents why each allowed skip is
# acceptable on the CI machine).
set -u
cd "$(dirname "$0")/.."
BUILD=${WB_BUILD:-build}
export WB_BIN="$PWD/$BUILD/wb" WB_BUILD="$BUILD" WB_ROOT="$PWD"
export PATH="$PWD/$BUILD:$PATH"
only=${WB_TEST_ONLY:-}
passed=0 failed=0 skipped=0
log=$(mktemp) skips=$(mktemp)
hogs=() behind_pid= behind_dir=$(mktemp -d)
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null; }
# stop_behind: ends the suites behind the others (their own session) and waits up to 60 s for
# them: the loop first, so that no next suite starts, then the running suite through its
# timeout(1) (which passes the TERM on; the suite stops its cluster), then whatever is left
stop_behind() {
  [ -n "$behind_pid" ] || return 0
  kill -TERM "$behind_pid" 2>/dev/null
  pkill -TERM -s "$behind_pid" -x timeout
  local i
  for ((i = 0; i < 600; i++)); do pgrep -s "$behind_pid" >/dev/null || break; sleep 0.1; done
  pkill -KILL -s "$behind_pid"
  behind_pid=
}
patterns=
trap 'stop_hogs; stop_behind; rm -rf "$log" "$skips" "$behind_dir" ${patterns:+"$patterns"}' EXIT
load=${WB_TEST_LOAD:-0}
unset WB_TEST_LOAD # the suites' own runs of this script (tests/cli/harness.t) start no more loops
export WB_TEST_UNDER_LOAD=$load # what a suite sees of it (a known defect under load skips by it)
case $load in '' | *[!0-9]*) echo "tests/run.sh: WB_TEST_LOAD is a whole number, not '$load'" >&2; exit 2 ;; esac
for ((i = 0; i < load; i++)); do
  sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
  hogs+=($!)
done
[ "$load" -eq 0 ] || echo "# load: $load busy loops running (WB_TEST_LOAD)"

tally() { # reads a suite's output from $log, adds its counts
  local line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    echo "not ok - $1: no result line (crashed?)"
    failed=$((failed + 1))
    return
  fi
  local p f s
  p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
  s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line")
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + ${s:-0}))
  if [ $((p + f + ${s:-0})) -eq 0 ]; then
    echo "not ok - $1: no case ran"
    failed=$((failed + 1))
  fi
  grep -E '^skip - ' "$log" | sed "s|^|$1: |" >>"$skips"
  local bare
  bare=$(grep -E '^skip - ' "$log" | grep -vE '^skip - [^:]+: .*[^ ]' || true)
  if [ -n "$bare" ]; then # a skip must say what is missing: `skip - WHAT: reason`
    echo "not ok - $1: a skip without its reason: $bare"
    failed=$((failed + 1))
  fi
}

left_out() { case " ${WB_TEST_SKIP:-} " in *" $1 "*) return 0 ;; esac; return 1; }
is_behind() { case " ${WB_TEST_BEHIND-integration/slurm.sh integration/slurm_accounting.sh} " in *" $1 "*) return 0 ;; esac; return 1; }
integration_scripts() { local t; for t in ${WB_TEST_INTEGRATION:-tests/integration/*.sh}; do [ -f "$t" ] && echo "$t"; done; }

# start_behind: the integration suites that run behind the others, one after another, in a session
# of their own; each leaves its output in $behind_dir/N.log, then its status and seconds in N.done.
start_behind() {
  local t name list=()
  while IFS= read -r t; do
    name="integration/$(basename "$t")"
    is_behind "$name" && ! left_out "$name" && list+=("$t")
  done < <(integration_scripts)
  [ ${#list[@]} -gt 0 ] || return 0
  setsid bash -c 'dir=$1; shift
    for t; do
      n=$(basename "$t") t0=$SECONDS
      timeout 900 bash "$t" >"$dir/$n.log" 2>&1
      echo "$? $((SECONDS - t0))" >"$dir/$n.tmp" && mv "$dir/$n.tmp" "$dir/$n.done"
    done' behind "$behind_dir" "${list[@]}" </dev/null &
  behind_pid=$!
}

# behind_result SCRIPT: waits for a suite started by start_behind; its output, then its status
behind_result() {
  local n; n=$(basename "$1")
  while [ ! -f "$behind_dir/$n.done" ]; do
    kill -0 "$behind_pid" 2>/dev/null || { echo "not ok - $1: the suites behind the others ended before it"; return 1; }
    sleep 1
  done
  cat "$behind_dir/$n.log"
  local rc secs
  read -r rc secs <"$behind_dir/$n.done"
  echo "# ran behind the other suites: $secs s"
  return "$rc"
}

run_suite() { # name command...
  local name=$1
  shift
  if left_out "$name"; then
    echo "== $name (skipped: WB_TEST_SKIP)"
    echo "$name: skip - left out by WB_TEST_SKIP${WB_TEST_PASS:+ (pass: $WB_TEST_PASS)}" >>"$skips"
    skipped=$((skipped + 1))
    return
  fi
  echo "== $name"
  local t0=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^# ran behind the other suites' "$log" || true
  grep -vE '^[0-9]+ passed, [0-9]+ failed' "$log" | grep -E '^(not ok|skip)|^    ' || true
  tally "$name"
  if [ $rc -ne 0 ] && ! grep -qE '^[0-9]+ passed, [1-9]' "$log"; then
    echo "not ok - $name exited $rc"; tail -n 20 "$log"; failed=$((failed + 1))
  fi
  grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 | sed "s/^/   /;s/\$/ ($((SECONDS - t0)) s)/"
}

if [ -z "$only" ] || [ "$only" = integration ]; then start_behind; fi
if [ -z "$only" ] || [ "$only" = c ]; then
  for t in "$BUILD"/tests/*_test; do
    [ -x "$t" ] && run_suite "c/$(basename "$t")" "$t"
  done
fi
if [ -z "$only" ] || [ "$only" = lua ]; then
  for t in ${WB_TEST_LUA:-tests/lua/*_test.lua tests/recipes/*_test.lua}; do
    case $t in tests/recipes/*) kind=recipes ;; *) kind=lua ;; esac # recipes/x_test.lua, lua/x_test.lua
    [ -f "$t" ] && run_suite "$kind/$(basename "$t")" timeout 600 "$WB_BIN" test "$t"
  done
fi
if [ -z "$only" ] || [ "$only" = ffi ]; then
  if readelf -d "$BUILD/libwb.so" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
    # An ASan libwb.so loads into luajit only with the ASan runtime first in the process;
    # luajit's own allocations are not wb's leaks.
    run_suite ffi/luajit env LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 \
      luajit tests/ffi/wb_ffi_test.lua "$BUILD"
  else
    run_suite ffi/luajit luajit tests/ffi/wb_ffi_test.lua "$BUILD"
  fi
fi
if [ -z "$only" ] || [ "$only" = fuzz ]; then
  # a fresh make: not the MAKEFLAGS (BUILD=..., sanitizer flags) of a `make test` or `make asan` above
  run_suite fuzz env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s fuzz-smoke
fi
if [ -z "$only" ] || [ "$only" = cli ]; then
  run_suite cli bash tests/cli/run.sh tests/cli/*.t
fi
if [ -z "$only" ] || [ "$only" = integration ]; then
  while IFS= read -r t; do
    name="integration/$(basename "$t")"
    if [ -n "$behind_pid" ] && is_behind "$name"; then
      run_suite "$name" behind_result "$t"
    else
      run_suite "$name" timeout 900 bash "$t"
    fi
  done < <(integration_scripts)
  [ -z "$behind_pid" ] || wait "$behind_pid"
  behind_pid=
fi
if [ -s "$skips" ]; then
  echo "== skips"
  sed 's/^/   /' "$skips"
fi
if [ "${CI:-}" = true ] && [ -s "$skips" ]; then
  # tests/skips.allow: `ERE ## why` per line; an entry without its why is itself a failure.
  allow=tests/skips.allow patterns=$(mktemp)
  while IFS= read -r entry; do
    case $entry in '#'* | '') continue ;; esac
    pat=${entry%%' ## '*} why=${entry#*' ## '}
    if [ "$pat" = "$entry" ] || [ -z "${why// /}" ]; then
      echo "not ok - $allow: an entry without its reason (\`ERE ## why\`): $entry"
      failed=$((failed + 1))
      continue
    fi
    printf '%s\n' "$pat" >>"$patterns"
  done < <(cat "$allow" 2>/dev/null)
  while IFS= read -r line; do
    if ! [ -s "$patterns" ] || ! grep -qE -f "$patterns" <<<"$line"; then
      echo "not ok - undocumented skip (CI=true, not in $allow): $line"
      failed=$((failed + 1))
    fi
  done <"$skips"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
