#!/usr/bin/env bash
# The Slurm integration suite: brings up a private single-node cluster (tests/slurm/start.sh),
# runs tests/lua/slurm_test.lua (and, without accounting, slurm_capture_test.lua) against it
# with $WB_BIN, and always tears the cluster down (tests/slurm/stop.sh, from a trap). `--accounting` runs the same tests with slurmdbd + MariaDB
# (tests/integration/slurm_accounting.sh). Ends with the `N passed, N failed` line of the Lua run.
# Needs root and the Slurm packages (make deps); otherwise it reports one skip.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
mode=${1:-}
export WB_BIN=${WB_BIN:-$root/build/wb} WB_ROOT=$root
if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null ||
  { [ "$mode" = --accounting ] && ! command -v slurmdbd >/dev/null; }; then
  echo "skip - slurm${mode:+ $mode}: needs root and the Slurm packages (make deps)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
base=$(mktemp -d "${TMPDIR:-/tmp}/wb-slurm-test.XXXXXX")
chmod 755 "$base"
export WB_SLURM_DIR=$base/cluster

# Four free TCP ports of its own (another cluster, e.g. a concurrent run of this suite, may be
# up); the lock is held until the cluster has bound them.
port_used() { awk -v p="$(printf ':%04X' "$1")" 'substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
exec 9>"${TMPDIR:-/tmp}/wb-slurm-test-ports.lock"
flock 9
port=${WB_SLURM_TEST_PORT:-}
if [ -z "$port" ]; then
  for ((port = 16837; port < 17837; port += 10)); do
    port_used $port || port_used $((port + 1)) || port_used $((port + 2)) || port_used $((port + 3)) || break
  done
fi
export WB_SLURM_PORT=$port
# Interrupted: the test run and the campaigns it started (its own session) are stopped.
wbpid=
# shellcheck disable=SC2317 # (called from the EXIT trap)
stop_tests() {
  [ -n "$wbpid" ] && [ "$(ps -o sid= -p "$wbpid" | tr -d ' ')" = "$wbpid" ] || return 0
  pkill -TERM -s "$wbpid"
  for ((i = 0; i < 50; i++)); do kill -0 "$wbpid" 2>/dev/null || break; sleep 0.1; done
  pkill -KILL -s "$wbpid"
}
# shellcheck disable=SC2317 # (the EXIT trap)
cleanup() {
  trap '' INT TERM # (a second TERM, e.g. timeout(1)'s to its group, must not cut the cleanup short)
  stop_tests
  bash "$root/tests/slurm/stop.sh" || echo "not ok - slurm: stop.sh could not stop every daemon"
  rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$SECONDS
if ! bash tests/slurm/start.sh ${mode:+"$mode"} >"$base/start.log" 2>&1 9>&-; then
  echo "not ok - slurm: the test cluster did not start"
  sed 's/^/    /' "$base/start.log"
  echo "0 passed, 1 failed"
  exit 1
fi
flock -u 9
echo "# cluster${mode:+ ($mode)} up in $((SECONDS - start)) s (ports $port-$((port + 3)))"
# shellcheck disable=SC1091
. "$WB_SLURM_DIR/env"
# In the background, so that a signal reaches the traps at once; its output is shown as it comes.
: >"$base/test.log"
# Capture in jobs (tests/lua/slurm_capture_test.lua) does not depend on where final states come
# from: the plain cluster only.
files=tests/lua/slurm_test.lua
[ -z "$mode" ] && files="$files tests/lua/slurm_capture_test.lua tests/lua/slurm_tune_test.lua"
# shellcheck disable=SC2086 # (file names)
setsid "$WB_BIN" test $files >>"$base/test.log" 2>&1 &
wbpid=$!
tail --pid="$wbpid" -n +1 -f "$base/test.log" | grep --line-buffered -vE '^[0-9]+ passed, [0-9]+ failed' &
wait "$wbpid"
rc=$?
wbpid=
wait
if [ $rc -ne 0 ]; then
  for f in "$WB_SLURM_DIR"/log/slurmctld.log "$WB_SLURM_DIR"/log/slurmd.log "$WB_SLURM_DIR"/log/slurmdbd.log; do
    [ -f "$f" ] && { echo "# --- tail $f"; tail -n 15 "$f" | sed 's/^/# /'; }
  done
fi
echo "# slurm suite${mode:+ ($mode)}: $((SECONDS - start)) s"
grep -E '^[0-9]+ passed, [0-9]+ failed' "$base/test.log" | tail -n 1
exit $rc
