# Shared set-up of the headless-Chromium checks (sourced by tests/integration/*_chromium.sh):
# skips the suite when Debian's chromium is missing; gives `check NAME CMD...`, `chrome ARGS...`
# (a private profile, no network features), $work (removed at exit) and $BUILD.
set -u
cd "$(dirname "$0")/../.."
BUILD=${WB_BUILD:-build}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "skip - chromium not installed"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { # name command...
  local name=$1 log; shift
  if log=$("$@" 2>&1); then passed=$((passed + 1)); echo "ok - $name"
  else failed=$((failed + 1)); echo "not ok - $name"; echo "$log" | sed 's/^/    /' | tail -n 20; fi
}
chrome() { # chromium with a private profile and no network features; args...
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$work")" "$@"
}
