#!/usr/bin/env bash
# Capabilities instead of root (docs/security.md, "Capabilities"): wb profile run by an
# unprivileged user (nobody, by setpriv) with no capability, with CAP_PERFMON, with
# CAP_BPF+CAP_PERFMON, and with kernel.kptr_restrict=1 with and without CAP_SYSLOG. Each
# method works as far as its capabilities go and says what is missing. Needs root (setpriv).
set -u
cd "$(dirname "$0")/../.."
source tests/lib/check.sh
BUILD=${WB_BUILD:-build}
WB="$PWD/$BUILD/wb"
needs_nobody capabilities
tmp=$(mktemp -d)
restrict=$(cat /proc/sys/kernel/kptr_restrict)
trap 'echo "$restrict" >/proc/sys/kernel/kptr_restrict; [ -n "${WB_KEEP:-}" ] || rm -rf "$tmp"' EXIT
chmod 755 "$tmp" && chown nobody "$tmp"
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
unpriv_bpf=$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null || echo 1)
WORK='i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 0.3'

# profile NAME CAPS [key=value...]: wb profile as nobody with the capabilities CAPS ("" for none),
# its output in $tmp/NAME.out, its run in $tmp/NAME
profile() {
  local name=$1 caps=$2
  shift 2
  local as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  [ -n "$caps" ] && as+=(--inh-caps="$caps" --ambient-caps="$caps")
  mkdir -p "$tmp/home-$name" && chown nobody "$tmp/home-$name"
  HOME="$tmp/home-$name" timeout 300 "${as[@]}" "$WB" profile "$@" -o "$tmp/$name" -- sh -c "$WORK" >"$tmp/$name.out" 2>&1
}
method_of() { grep -m1 -o '(method [a-z_]*' "$tmp/$1.out" | cut -d' ' -f2; }

check "no capability: eBPF passed over, saying which capabilities it needs" bash -c "$(declare -f profile method_of)
  tmp='$tmp' WB='$WB' WORK='$WORK'; profile none ''; cat '$tmp/none.out' | head -20
  [ '$unpriv_bpf' = 0 ] || grep -q 'fallback: bpf: needs root or CAP_BPF+CAP_PERFMON' '$tmp/none.out'"
check "no capability: off-CPU skipped with its reason" grep -q '^off-CPU: skipped: off-CPU time needs eBPF' "$tmp/none.out"
if [ "$paranoid" -ge 2 ]; then
  check "no capability, perf_event_paranoid=$paranoid: user space only, said" \
    grep -q 'user space only: kernel frames and time in the kernel are not sampled (perf_event_paranoid=' "$tmp/none.out"
fi
check "CAP_PERFMON: method perf_event, kernel included (no user-space-only warning)" bash -c "$(declare -f profile method_of)
  tmp='$tmp' WB='$WB' WORK='$WORK'; profile perfmon +perfmon method=perf_event; head -20 '$tmp/perfmon.out'
  [ \"\$(method_of perfmon)\" = perf_event ] && ! grep -q 'user space only' '$tmp/perfmon.out'"
check "CAP_BPF+CAP_PERFMON: method bpf, on-CPU and off-CPU" bash -c "$(declare -f profile method_of)
  tmp='$tmp' WB='$WB' WORK='$WORK'; profile bpf +bpf,+perfmon method=bpf; grep -E '^wb profile|^on-CPU|^off-CPU|fallback' '$tmp/bpf.out'
  [ \"\$(method_of bpf)\" = bpf ] && grep -q '^on-CPU: [0-9]* samples' '$tmp/bpf.out' && grep -qE '^off-CPU: [0-9.]+ m?s ' '$tmp/bpf.out'"
if [ "$restrict" = 0 ] && [ "$paranoid" -le 1 ]; then
  check "CAP_BPF+CAP_PERFMON, kallsyms open to all: kernel frames named" \
    grep -q 'schedule_\[k\]' "$tmp/bpf/profiles/profile.offcpu.folded"
else
  check "CAP_BPF+CAP_PERFMON, kallsyms closed to this user (kptr_restrict=$restrict, perf_event_paranoid=$paranoid): unnamed, and said why" \
    bash -c "grep -q 'kernel frames are not named (\[unknown\]_\[k\]): /proc/kallsyms shows this user no addresses (kernel.kptr_restrict=$restrict' '$tmp/bpf.out' &&
      ! grep -q 'schedule_\[k\]' '$tmp/bpf/profiles/profile.offcpu.folded'"
fi
check "CAP_BPF+CAP_PERFMON+CAP_SYSLOG: kernel frames named, no warning" bash -c "$(declare -f profile method_of)
  tmp='$tmp' WB='$WB' WORK='$WORK'; profile full +bpf,+perfmon,+syslog method=bpf; grep warning '$tmp/full.out'
  ! grep -q 'kernel frames are not named' '$tmp/full.out' && grep -q 'schedule_\[k\]' '$tmp/full/profiles/profile.offcpu.folded'"
echo 1 >/proc/sys/kernel/kptr_restrict
check "kptr_restrict=1 without CAP_SYSLOG: kernel frames unnamed, and wb says why" bash -c "$(declare -f profile method_of)
  tmp='$tmp' WB='$WB' WORK='$WORK'; profile nosyslog +bpf,+perfmon method=bpf; grep warning '$tmp/nosyslog.out'
  grep -q 'kernel frames are not named (\[unknown\]_\[k\]): /proc/kallsyms shows this user no addresses (kernel.kptr_restrict=1: they need CAP_SYSLOG' '$tmp/nosyslog.out' &&
  ! grep -q 'schedule_\[k\]' '$tmp/nosyslog/profiles/profile.offcpu.folded'"
check "kptr_restrict=1 with CAP_SYSLOG too: kernel frames named, no warning" bash -c "$(declare -f profile method_of)
  tmp='$tmp' WB='$WB' WORK='$WORK'; profile syslog +bpf,+perfmon,+syslog method=bpf; grep warning '$tmp/syslog.out'
  ! grep -q 'kernel frames are not named' '$tmp/syslog.out' && grep -q 'schedule_\[k\]' '$tmp/syslog/profiles/profile.offcpu.folded'"
echo "$restrict" >/proc/sys/kernel/kptr_restrict
finish
