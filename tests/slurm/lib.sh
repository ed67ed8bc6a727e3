# shellcheck shell=bash
# Process checks shared by tests/slurm/start.sh and stop.sh (sourced).

# The state letter of process $1 (R, S, Z, ...); fails when there is no such process.
state_of() { sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null; }

# Whether process $1 exists and is neither a zombie nor dead.
alive_pid() {
  local s
  s=$(state_of "$1") || return 1
  [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
}

# Whether the pid file $1 names a live process.
alive() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && [ -n "$pid" ] && alive_pid "$pid"
}

# wait_dead TENTHS PID... : waits up to TENTHS tenths of a second until none of the processes
# is alive; fails if one still is.
wait_dead() {
  local n=$1 i pid left
  shift
  for ((i = 0; i < n; i++)); do
    left=0
    for pid in "$@"; do alive_pid "$pid" && left=1; done
    [ $left -eq 0 ] && return 0
    sleep 0.1
  done
  return 1
}
