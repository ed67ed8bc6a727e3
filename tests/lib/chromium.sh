# Shared set-up of the headless-Chromium checks (sourced by tests/integration/*_chromium.sh):
# skips the suite when Debian's chromium is missing; gives `check NAME CMD...` and `finish`
# (tests/lib/check.sh), `chrome ARGS...` (a private profile, no network features), the checks
# `count`, `no_console_errors` and `png_ok`, $work (removed at exit) and $BUILD.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/check.sh
BUILD=${WB_BUILD:-build}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "skip - chromium: $CHROMIUM is not installed (make deps installs Debian's chromium)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chrome() { # chromium with a private profile and no network features; args...
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$work")" "$@"
}
count() { grep -o -- "$1" "$2" | wc -l; } # pattern file : how many times pattern occurs
no_console_errors() { ! grep -E ':CONSOLE|Uncaught|net::ERR' "$1"; } # chrome's stderr log
png_ok() { # file width height min_bytes : a PNG of that size, larger than min_bytes
  [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
    [ "$(od -An -tu4 --endian=big -j16 -N8 "$1" | tr -s ' ' | sed 's/^ //')" = "$2 $3" ] &&
    [ "$(stat -c %s "$1")" -gt "$4" ]
}
