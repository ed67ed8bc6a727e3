# shellcheck shell=bash
# Counting checks of the shell test suites (sourced): `check NAME CMD...` runs CMD, prints
# `ok - NAME` or `not ok - NAME` with the tail of its output; `finish` prints the
# `N passed, N failed` line and fails if a check did, or if no check ran.
passed=0 failed=0
check() { # name command...
  local name=$1 log; shift
  if log=$("$@" 2>&1); then passed=$((passed + 1)); echo "ok - $name"
  else failed=$((failed + 1)); echo "not ok - $name"; echo "$log" | sed 's/^/    /' | tail -n 20; fi
}
finish() {
  if [ $((passed + failed)) -eq 0 ]; then echo "not ok - no check ran"; failed=1; fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
# needs_nobody NAME: exits with one skip unless this is root with setpriv and the user nobody
# (the suites that play an unprivileged user)
needs_nobody() {
  if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
    echo "skip - $1: needs root, setpriv (util-linux) and the user nobody"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
  fi
}
