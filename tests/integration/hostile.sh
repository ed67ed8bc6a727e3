#!/usr/bin/env bash
# wb as root beside an unprivileged user who plants things (docs/security.md): the user (nobody,
# by setpriv) prepares directories, links and FIFOs; root wb must refuse them with one clear line
# (exit 2), touch no file it was steered at, and never hang on a FIFO named by a profiled
# program. Needs root (setpriv to another user); otherwise it reports one skip.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/check.sh
BUILD=${WB_BUILD:-build}
WB="$PWD/$BUILD/wb"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
  echo "skip - hostile: needs root, setpriv (util-linux) and the user nobody"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
tmp=$(mktemp -d)
trap 'umount "$tmp/small" 2>/dev/null; rm -rf "$tmp"' EXIT
chmod 1777 "$tmp" # a shared /tmp
as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
echo precious >"$tmp/victim"
victim_intact() { [ "$(cat "$tmp/victim")" = precious ]; }

# Runs wb bench (two runs of true) with -o DIR; expects exit 2 and a stderr line matching re.
refused() { # dir regex [args...]
  local dir=$1 re=$2 err code
  shift 2
  err=$("$WB" bench true runs=2 -o "$dir" "$@" 2>&1 >/dev/null)
  code=$?
  [ $code -eq 2 ] || { echo "exit $code (expected 2): $err"; return 1; }
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || { echo "not one line: $err"; return 1; }
  printf '%s\n' "$err" | grep -Eq "$re" || { echo "stderr: $err (expected /$re/)"; return 1; }
  victim_intact || { echo "the victim file was written"; return 1; }
}

mkdir "$tmp/rootonly" # a directory only root may write in (standing for /etc): never written through a link
as_user sh -c "mkdir '$tmp/theirs' && ln -s '$tmp/victim' '$tmp/theirs/wb.lock' &&
  mkdir '$tmp/theirs/logs' && ln -s '$tmp/victim' '$tmp/theirs/logs/bench.stdout.log' &&
  ln -s '$tmp/rootonly' '$tmp/etc_link' && ln -s '$tmp/victim' '$tmp/file_link'"
check "a run directory another user made (lock and log links planted): refused" \
  refused "$tmp/theirs" "^wb: run directory .*/theirs: belongs to another user \(uid [0-9]+\)"
check "a link another user made, as the run directory: not followed" bash -c "$(declare -f refused victim_intact)
  WB='$WB' tmp='$tmp'; refused '$tmp/etc_link' 'etc_link is a symbolic link of another user' && [ -z \"\$(ls -A '$tmp/rootonly')\" ]"
check "a link another user made, as a parent of the run directory: nothing made behind it" \
  bash -c "$(declare -f refused victim_intact); WB='$WB' tmp='$tmp'; refused '$tmp/etc_link/run' 'etc_link is a symbolic link of another user' && [ -z \"\$(ls -A '$tmp/rootonly')\" ]"
check "a directory every user may write in (a shared /tmp): refused" \
  refused "$tmp" "writable by every user \(mode 1777\)"

as_user mkdir "$tmp/theirs2"
check "a directory inside another user's: refused (they could swap it for a link later)" \
  refused "$tmp/theirs2/run" "the directory holding run belongs to another user"

mkdir "$tmp/mine" && ln -s "$tmp/victim" "$tmp/mine/wb.lock"
check "a link inside wb's own run directory: not written through" \
  refused "$tmp/mine" "mine/wb.lock: a symbolic link: wb does not write through one"
mkdir -p "$tmp/mine2/logs" && ln -s "$tmp/victim" "$tmp/mine2/logs/profile.stdout.log"
check "a link where the profiled command's log goes: one line, exit 1, the target untouched" bash -c "
  '$WB' run recipes/profile.lua -o '$tmp/mine2' -- echo planted >/dev/null 2>'$tmp/mine2.err'; code=\$?
  cat '$tmp/mine2.err'; [ \$code -eq 1 ] && [ \"\$(cat '$tmp/victim')\" = precious ] && [ \$(wc -l <'$tmp/mine2.err') -eq 1 ] &&
  grep -q 'profile.stdout.log: a symbolic link: wb does not write through one' '$tmp/mine2.err'"

mkdir "$tmp/notrun" && touch "$tmp/notrun/thesis.tex" "$tmp/notrun/data.csv"
check "--overwrite of a directory that holds no run: refused, its files kept" \
  bash -c "$(declare -f refused victim_intact); WB='$WB' tmp='$tmp'; refused '$tmp/notrun' 'holds no wb run' --overwrite &&
    [ -e '$tmp/notrun/thesis.tex' ] && [ -e '$tmp/notrun/data.csv' ]"
check "--overwrite of a run wb made: replaced" bash -c "'$WB' bench true runs=2 -o '$tmp/run' >/dev/null 2>&1 &&
  touch '$tmp/run/stale' && '$WB' bench true runs=2 -o '$tmp/run' --overwrite >/dev/null 2>&1 && [ ! -e '$tmp/run/stale' ] &&
  [ -e '$tmp/run/manifest.json' ]"

# FIFOs named by a profiled program: a library it mapped, replaced by a FIFO once loaded, and a
# stripped library whose .gnu_debuglink names a FIFO. wb must finish (no blocking open) and say
# what it could not read.
lib="$tmp/lib"
as_user mkdir "$lib"
cat >"$tmp/spin.c" <<'C'
double spin(long n) { double x = 0; for (long i = 0; i < n; i++) x += (double)i * 0.5; return x; }
C
as_user cp "$tmp/spin.c" "$lib/spin.c"
as_user sh -c "cd '$lib' && gcc -O2 -g -shared -fPIC -fno-omit-frame-pointer spin.c -o libswapped.so &&
  gcc -O2 -g -shared -fPIC spin.c -o liblinked.so && objcopy --only-keep-debug liblinked.so liblinked.debug &&
  strip --strip-all liblinked.so && objcopy --add-gnu-debuglink=liblinked.debug liblinked.so &&
  rm liblinked.debug && mkfifo liblinked.debug"
cat >"$tmp/driver.py" <<PY
import ctypes, os, stat, sys, time
swapped = ctypes.CDLL("$lib/libswapped.so")
linked = ctypes.CDLL("$lib/liblinked.so")
for f in (swapped.spin, linked.spin):
    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_long]
open("$tmp/loaded", "w").close()
deadline = time.monotonic() + 30
while not stat.S_ISFIFO(os.stat("$lib/libswapped.so").st_mode) and time.monotonic() < deadline:
    time.sleep(0.01)
start = time.process_time()
while time.process_time() - start < 0.6:
    swapped.spin(200000)
    linked.spin(200000)
PY
as_user timeout 150 sh -c "while [ ! -e '$tmp/loaded' ]; do sleep 0.01; done; mkfifo '$lib/fifo' && mv -f '$lib/fifo' '$lib/libswapped.so'" &
swapper=$!
profile_fifos() {
  timeout -s KILL 120 "$WB" run recipes/profile.lua -o "$tmp/fifo_run" freq=499 -- /usr/bin/python3 "$tmp/driver.py" \
    >"$tmp/fifo.out" 2>&1 || { grep -E -A3 "Traceback|Error|^wb:|exit" "$tmp/fifo.out" | head -n 20; return 1; }
}
check "FIFOs as a mapped library and as a debug link: wb profile finishes" profile_fifos
kill $swapper 2>/dev/null
wait $swapper 2>/dev/null
check "FIFOs: wb says which library it could not read, and why" \
  grep -q "libswapped.so could not be read (not a regular file)" "$tmp/fifo.out"

# Decompression bombs in a library another user built: 200 MB of zeros as its .gnu_debugdata
# (30 KB of xz) and as a zlib-compressed .debug_str (200 KB). wb must neither inflate them (with
# 300 MB ones its peak RSS was 640 MB) nor cache them (a 298 MB file): over the caps, passed over.
bombs="$tmp/bombs"
as_user mkdir "$bombs"
as_user sh -c "cd '$bombs' && cp '$lib/spin.c' . && gcc -O2 -g -shared -fPIC spin.c -o libmd.so &&
  cp libmd.so libdwb.so && strip --strip-all libmd.so &&
  head -c 200000000 /dev/zero | xz -0 -T1 >bomb.xz && objcopy --add-section .gnu_debugdata=bomb.xz libmd.so &&
  head -c 200000000 /dev/zero >zeros.bin && objcopy --update-section .debug_str=zeros.bin libdwb.so &&
  objcopy --compress-debug-sections=zlib libdwb.so && rm zeros.bin bomb.xz"
cat >"$tmp/bombs.py" <<PY
import ctypes, time
libs = [ctypes.CDLL("$bombs/libmd.so"), ctypes.CDLL("$bombs/libdwb.so")]
for l in libs:
    l.spin.restype, l.spin.argtypes = ctypes.c_double, [ctypes.c_long]
start = time.process_time()
while time.process_time() - start < 0.5:
    for l in libs:
        l.spin(200000)
PY
mkdir -m 700 "$tmp/bomb_cache"
check "decompression bombs: wb's peak RSS under 250 MB, no cache file over 50 MB" bash -c "
  XDG_CACHE_HOME='$tmp/bomb_cache' /usr/bin/time -f '%M' -o '$tmp/bomb_rss' \
    '$WB' run recipes/profile.lua -o '$tmp/bomb_run' -- /usr/bin/python3 '$tmp/bombs.py' >/dev/null 2>&1 || exit 1
  echo \"peak RSS \$(cat '$tmp/bomb_rss') KB\"; [ \$(cat '$tmp/bomb_rss') -lt 250000 ] &&
  [ -z \"\$(find '$tmp/bomb_cache' -type f -size +50M)\" ]"

# A cache of another user's (sudo -E keeps HOME): a FIFO where wb keeps the kernel's symbols.
boot=$(cat /proc/sys/kernel/random/boot_id)
as_user sh -c "mkdir -p '$tmp/home/.cache/wb' && mkfifo '$tmp/home/.cache/wb/kallsyms-$boot'"
check "a cache directory of another user: not used, no hang" \
  env HOME="$tmp/home" XDG_CACHE_HOME= timeout -s KILL 120 "$WB" run recipes/profile.lua -o "$tmp/cache_run" -- \
  /usr/bin/python3 -c "sum(range(3000000))"

# A full disk (a 1 MiB tmpfs) under a profile whose output does not fit: exit 1, the file named.
mkdir "$tmp/small"
check "a 1 MiB tmpfs for the full disk (root)" mount -t tmpfs -o size=1m tmpfs "$tmp/small"
check "a disk that fills during a profile: exit 1, the file named" bash -c "
  '$WB' run recipes/profile.lua -o '$tmp/small/run' -- sh -c 'yes 0123456789 | head -c 3000000' >/dev/null 2>'$tmp/enospc.err'
  code=\$?; cat '$tmp/enospc.err'; [ \$code -eq 1 ] && grep -Eq '^wb: .*$tmp/small/run/.*: No space left on device' '$tmp/enospc.err'"
umount "$tmp/small" 2>/dev/null

finish
