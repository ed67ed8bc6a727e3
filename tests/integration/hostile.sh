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
needs_nobody hostile
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

# wb's own files read back (--resume, compare): a FIFO or a link planted in their place is not read.
echo "SECRET_root_only" >"$tmp/rootsecret" && chmod 600 "$tmp/rootsecret"
"$WB" bench true runs=2 -o "$tmp/res" >/dev/null 2>&1 && rm "$tmp/res/manifest.json" && mkfifo "$tmp/res/manifest.json"
"$WB" bench true runs=2 -o "$tmp/res2" >/dev/null 2>&1 && ln -sf "$tmp/rootsecret" "$tmp/res2/manifest.json"
check "--resume of a run whose manifest.json is a FIFO: one line, exit 2, no hang" bash -c "
  err=\$(timeout 30 '$WB' bench true runs=2 --resume '$tmp/res' 2>&1 >/dev/null); code=\$?; echo \"\$err\"
  [ \$code -eq 2 ] && [ \$(printf '%s\n' \"\$err\" | wc -l) -eq 1 ] && printf '%s' \"\$err\" | grep -q 'manifest.json: not a regular file'"
check "--resume of a run whose manifest.json links to root's file: not read through" bash -c "
  err=\$(timeout 30 '$WB' bench true runs=2 --resume '$tmp/res2' 2>&1 >/dev/null); code=\$?; echo \"\$err\"
  [ \$code -eq 2 ] && ! printf '%s' \"\$err\" | grep -q SECRET_ && printf '%s' \"\$err\" | grep -q 'manifest.json: not a regular file'"
as_user sh -c "mkdir '$tmp/cmp' && mkfifo '$tmp/cmp/manifest.json'"
check "wb compare of a directory whose manifest.json another user made a FIFO: one line, exit 2, no hang" bash -c "
  err=\$(timeout 30 '$WB' compare '$tmp/res2' '$tmp/cmp' 2>&1 >/dev/null); code=\$?; echo \"\$err\"
  [ \$code -eq 2 ] && [ \$(printf '%s\n' \"\$err\" | wc -l) -eq 1 ]"

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

# Files the profiled user could not read (docs/security.md, "Reading with the profiled user's
# rights"). nobody's program maps three libraries of its own, then swaps the paths of two for
# links to root's ELF files: one of mode 0600, one of mode 0644 in a directory of mode 0700, each
# with the build id of the library it replaces (as an attacker who learned it would give his own);
# the third is stripped and its debug link names a link to root's debug file (mode 0600). Then
# nobody runs root's execute-only program (mode 0711). Root wb names nothing of root's files: no
# SECRET_ name and no vault_secret source in any file of the run directories or in wb's output;
# those frames read "libx.so+0xoffset [not readable by the profiled user]", and a warning names
# each library.
vault="$tmp/vault" att="$tmp/att"
mkdir -m 755 "$vault" && mkdir -m 700 "$vault/closed"
as_user mkdir "$att"
spin_src() { # function inline-function: the same code under names of the same length (the same layout),
  # its time in the inlined loop
  printf 'static inline __attribute__((always_inline)) double %s(long i) {\n' "$2"
  printf '  double y = 0; for (long k = 0; k < 64; k++) y += (double)(i ^ k) * 0.5; return y; }\n'
  printf 'double %s(long n) { double x = 0; for (long i = 0; i < n; i++) x += %s(i); return x; }\n' "$1" "$2"
}
spin_src SECRET_payroll_alpha SECRET_inline_ab12 >"$vault/vault_secret.c"
spin_src spin_public_function spin_public_inline >"$tmp/pub.c"
as_user cp "$tmp/pub.c" "$att/pub.c"
id1=0x11112222333344445555666677778888aaaabbbb id2=0x99992222333344445555666677778888cccc0000
id3=0x77772222333344445555666677778888dddd0000
(cd "$vault" && gcc -O2 -g -shared -fPIC -Wl,--build-id=$id1 vault_secret.c -o libsecret1.so &&
  gcc -O2 -g -shared -fPIC -Wl,--build-id=$id2 vault_secret.c -o closed/libsecret2.so &&
  gcc -O2 -g -shared -fPIC -Wl,--build-id=$id3 vault_secret.c -o libsecret3.so &&
  objcopy --only-keep-debug libsecret3.so secret3.debug && rm libsecret3.so &&
  chmod 600 libsecret1.so secret3.debug && chmod 644 closed/libsecret2.so)
as_user sh -c "cd '$att' && gcc -O2 -g -shared -fPIC -Wl,--build-id=$id1 pub.c -o libone.so &&
  gcc -O2 -g -shared -fPIC -Wl,--build-id=$id2 pub.c -o libtwo.so &&
  gcc -O2 -g -shared -fPIC -Wl,--build-id=$id3 pub.c -o libthree.so && objcopy --only-keep-debug libthree.so libthree.debug &&
  strip --strip-debug libthree.so && objcopy --add-gnu-debuglink=libthree.debug libthree.so &&
  ln -sf '$vault/secret3.debug' libthree.debug"
cat >"$tmp/secrets.py" <<PY
import ctypes, os, time
libs = [ctypes.CDLL("$att/" + n) for n in ("libone.so", "libtwo.so", "libthree.so")]
for l in libs:
    l.spin_public_function.restype, l.spin_public_function.argtypes = ctypes.c_double, [ctypes.c_long]
for name, target in (("libone.so", "$vault/libsecret1.so"), ("libtwo.so", "$vault/closed/libsecret2.so")):
    os.symlink(target, "$att/new"); os.rename("$att/new", "$att/" + name)  # mapped: swapped for a link
start = time.process_time()
while time.process_time() - start < 0.6:
    for l in libs:
        l.spin_public_function(20000)
PY
cat >"$vault/xo.c" <<'C'
#include <time.h>
__attribute__((noinline)) double SECRET_xo_inner_loop(long n) { double x = 0; for (long i = 0; i < n; i++) x += (double)i * 0.5; return x; }
int main(void) { double s = 0; clock_t t0 = clock(); while (clock() - t0 < CLOCKS_PER_SEC / 2) s += SECRET_xo_inner_loop(100000); return s < 0; }
C
gcc -O2 -g -fno-omit-frame-pointer "$vault/xo.c" -o "$vault/xo" && chmod 711 "$vault/xo" && chmod 600 "$vault/xo.c"
profile_as_nobody() { # run-name command...
  local name=$1
  shift
  "$WB" run recipes/profile.lua -o "$tmp/$name" freq=499 -- setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$@" >"$tmp/$name.out" 2>&1 || { tail -n 20 "$tmp/$name.out"; return 1; }
}
check "links to root's libraries swapped in by the profiled user: wb profile finishes" \
  profile_as_nobody secret_run /usr/bin/python3 "$tmp/secrets.py"
check "root's execute-only program run by the profiled user: wb profile finishes" profile_as_nobody xo_run "$vault/xo"
check "nothing of root's files is named: no SECRET_ name, no vault_secret source, in the runs or wb's output" bash -c "
  ! grep -rl -e SECRET_ -e vault_secret '$tmp/secret_run' '$tmp/secret_run.out' '$tmp/xo_run' '$tmp/xo_run.out'"
not_readable() { # run-name module
  grep -q "$2+0x[0-9a-f]* \[not readable by the profiled user\]" "$tmp/$1/profiles/profile.oncpu.folded" ||
    { echo "no frame of $2 reads [not readable by the profiled user]"; return 1; }
}
check "the frames of root's files read module+0xoffset [not readable by the profiled user]" bash -c "
  $(declare -f not_readable); tmp='$tmp'; not_readable secret_run libone.so && not_readable secret_run libtwo.so &&
  not_readable xo_run xo"
check "warnings name each file the profiled user could not read; the readable one is still named" bash -c "
  grep -q '$att/libone.so is not readable by the profiled user (uid 65534)' '$tmp/secret_run.out' &&
  grep -q '$att/libtwo.so is not readable by the profiled user (uid 65534)' '$tmp/secret_run.out' &&
  grep -q \"$att/libthree.so's separate debug file is not readable by the profiled user\" '$tmp/secret_run.out' &&
  grep -q '$vault/xo is not readable by the profiled user' '$tmp/xo_run.out' &&
  grep -q 'spin_public_function' '$tmp/secret_run/profiles/profile.oncpu.folded'"

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

# A poisoned build id (docs/security.md, "The cache"): nobody builds a library with the build id
# of root's library (libreal.so, compressed DWARF) and DWARF of his own (evil3.c, evil_inline_step),
# profiled first; root's library, profiled next with the same cache, keeps its own inline frames
# and source: wb's copies of inflated DWARF are kept per build id and contents.
poison="$tmp/poison" real="$tmp/real"
mkdir -m 700 "$tmp/poison_cache" && mkdir -m 755 "$real" && as_user mkdir "$poison"
spin_src spin real_inline_step >"$real/real.c"
spin_src spin evil_inline_step >"$tmp/evil3.c"
as_user cp "$tmp/evil3.c" "$poison/evil3.c"
idr=0x5555222233334444555566667777888899991111
(cd "$real" && gcc -O2 -g -gz -shared -fPIC -Wl,--build-id=$idr real.c -o libreal.so)
as_user sh -c "cd '$poison' && gcc -O2 -g -gz -shared -fPIC -Wl,--build-id=$idr evil3.c -o libevil.so"
spin_driver() { # library: a Python program spinning in its spin()
  printf 'import ctypes, time\nl = ctypes.CDLL("%s")\nl.spin.restype, l.spin.argtypes = ctypes.c_double, [ctypes.c_long]\n' "$1"
  printf 'start = time.process_time()\nwhile time.process_time() - start < 0.5:\n    l.spin(20000)\n'
}
spin_driver "$poison/libevil.so" >"$tmp/evil.py"
spin_driver "$real/libreal.so" >"$tmp/real.py"
profile_cached() { # run-name [env...] -- command...: a profile with the poison test's cache
  local name=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env XDG_CACHE_HOME="$tmp/poison_cache" "${envs[@]}" "$WB" run recipes/profile.lua -o "$tmp/$name" freq=499 -- "$@" \
    >"$tmp/$name.out" 2>&1 || { tail -n 20 "$tmp/$name.out"; return 1; }
}
check "a library with another's build id and its own compressed DWARF: profiled, its DWARF cached" bash -c "
  $(declare -f profile_cached); WB='$WB' tmp='$tmp'
  profile_cached evil_run -- setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 '$tmp/evil.py' &&
  grep -q 'evil_inline_step (inlined)' '$tmp/evil_run/profiles/profile.oncpu.folded' &&
  ls '$tmp/poison_cache/wb/debug/' | grep -q '^${idr#0x}-[0-9a-f]\{64\}\.debug$'"
check "the real library of that build id, profiled after it: its own inline frames, nothing of evil3.c" bash -c "
  $(declare -f profile_cached); WB='$WB' tmp='$tmp'
  profile_cached real_run -- /usr/bin/python3 '$tmp/real.py' &&
  grep -q 'real_inline_step (inlined)' '$tmp/real_run/profiles/profile.oncpu.folded' &&
  ! grep -rl -e evil_inline_step -e evil3.c '$tmp/real_run' '$tmp/real_run.out' &&
  [ \$(ls '$tmp/poison_cache/wb/debug/' | grep -c '^${idr#0x}-') -eq 2 ]"
check "a cached copy of the same build id from other contents is a warning" \
  grep -q "libreal.so: the DWARF wb cached for its build id ${idr#0x} was made from other contents" "$tmp/real_run.out"

# Pruning (a cache of its own): copies unused for 40 days go, then the least recently used, down
# to WB_MAX_CACHE_BYTES, whatever else wb caches on this machine (libc6-dbg's copies); a link and a
# file wb did not make (mode 0644), named like copies, are neither followed nor removed.
debug="$tmp/prune_cache/wb/debug"
mkdir -m 700 "$tmp/prune_cache" "$tmp/prune_cache/wb" "$debug"
planted() { echo "$debug/00000000$1-$(printf '%064d' "$1").debug"; }
for age in 1 2 3 960; do
  head -c 1000000 /dev/zero >"$(planted $age)" && chmod 600 "$(planted $age)" && touch -a -d "$age hours ago" "$(planted $age)"
done
ln -s "$tmp/victim" "$debug/0000000009-link.debug"
head -c 1000000 /dev/zero >"$debug/0000000009-other.debug" && chmod 644 "$debug/0000000009-other.debug"
check "pruned to WB_MAX_CACHE_BYTES: unused for 40 days, then least recently used first; nothing else touched" bash -c "
  $(declare -f victim_intact planted); tmp='$tmp' debug='$debug'
  XDG_CACHE_HOME='$tmp/prune_cache' WB_MAX_CACHE_BYTES=2500000 '$WB' run recipes/profile.lua -o '$tmp/prune_run' \
    -- /usr/bin/python3 '$tmp/real.py' >'$tmp/prune_run.out' 2>&1 || { tail '$tmp/prune_run.out'; exit 1; }
  ls -la '$debug'
  [ ! -e \$(planted 960) ] && [ ! -e \$(planted 3) ] && { [ ! -e \$(planted 2) ] || [ -e \$(planted 1) ]; } &&
  ls '$debug' | grep -q '^${idr#0x}-' && [ -L '$debug/0000000009-link.debug' ] && [ -e '$debug/0000000009-other.debug' ] &&
  victim_intact && [ \$(find '$debug' -type f -perm 600 -printf '%s\n' | awk '{ t += \$1 } END { print t }') -le 2500000 ]"

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
rm -rf "$tmp/small/run"
# The disk fills while a campaign runs (after its first case): the run ends failed, exit 1, the
# file named, the first case kept; with space again, --resume finishes it.
check "a disk that fills during a campaign: exit 1, the file named, the manifest says failed, case1 kept" bash -c "
  (while ! grep -qs case2 '$tmp/small/marker'; do sleep 0.01; done; head -c 2000000 /dev/zero >'$tmp/small/filler') &
  '$WB' run tests/fixtures/recipes/campaign.lua cases=3 sleep=0.3 marker='$tmp/small/marker' -o '$tmp/small/camp' >/dev/null 2>'$tmp/camp.err'
  code=\$?; wait; cat '$tmp/camp.err'; [ \$code -eq 1 ] && [ \$(wc -l <'$tmp/camp.err') -eq 1 ] &&
  grep -Eq '^wb: .*$tmp/small/camp/.*: No space left on device' '$tmp/camp.err' &&
  python3 -c \"import json,sys; m=json.load(open('$tmp/small/camp/manifest.json')); r={x['name']:x['status'] for x in m['runs']}
sys.exit(not (m['status']=='failed' and 'No space' in m['error'] and r['case1']=='success'))\""
check "with space again, --resume completes it (no error kept, no reserve left)" bash -c "rm -f '$tmp/small/filler' &&
  '$WB' run tests/fixtures/recipes/campaign.lua --resume '$tmp/small/camp' >/dev/null && [ ! -e '$tmp/small/camp/.wb.reserve' ] &&
  python3 -c \"import json,sys; m=json.load(open('$tmp/small/camp/manifest.json'))
sys.exit(not (m['status']=='complete' and 'error' not in m and all(x['status']=='success' for x in m['runs'])))\""
umount "$tmp/small" 2>/dev/null

finish
