#!/usr/bin/env bash
# Tears down the cluster of tests/slurm/start.sh: cancels its jobs, stops slurmd, slurmctld,
# slurmdbd, MariaDB and munged (TERM, then KILL after a bounded wait), checks that none of them
# and no slurmstepd of this cluster is left, and removes the directory (WB_SLURM_KEEP=1 keeps it).
# Safe to run when nothing is up. Exit 1 if a process could not be stopped.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
dir=${WB_SLURM_DIR:-${TMPDIR:-/tmp}/wb-slurm}
[ -d "$dir" ] || exit 0
run=$dir/run
export SLURM_CONF=$dir/etc/slurm.conf

# Stops the processes (TERM, up to 15 s, then KILL); returns 1 if one survives KILL.
stop_pids() {
  local pid
  for pid in "$@"; do alive_pid "$pid" && kill -TERM "$pid" 2>/dev/null; done
  wait_dead 150 "$@" && return 0
  for pid in "$@"; do alive_pid "$pid" && kill -KILL "$pid" 2>/dev/null; done
  wait_dead 50 "$@" && return 0
  for pid in "$@"; do alive_pid "$pid" && echo "stop.sh: pid $pid survived SIGKILL" >&2; done
  return 1
}

pid_of() { local p; p=$(cat "$run/$1.pid" 2>/dev/null) && [ -n "$p" ] && alive_pid "$p" && echo "$p"; }

# slurmstepd processes of this cluster: those holding a unix socket under our spool directory.
stepds() {
  local inodes p pid exe fd
  inodes=$(awk -v d="$dir/spool/" 'index($8, d) == 1 { print $7 }' /proc/net/unix 2>/dev/null | sort -u)
  [ -n "$inodes" ] || return 0
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
    [[ $exe == */slurmstepd* ]] || continue
    for fd in /proc/"$pid"/fd/*; do
      [[ $(readlink "$fd" 2>/dev/null) =~ ^socket:\[([0-9]+)\]$ ]] || continue
      if grep -qx "${BASH_REMATCH[1]}" <<<"$inodes"; then echo "$pid"; break; fi
    done
  done
}

# The processes below the given ones (their children, grandchildren, ...).
descendants() {
  local out="" frontier="$*" next p q pid ppid
  while [ -n "$frontier" ]; do
    next=""
    for p in /proc/[0-9]*; do
      pid=${p#/proc/}
      ppid=$(sed -E 's/^[0-9]+ \(.*\) . ([0-9]+) .*/\1/' "/proc/$pid/stat" 2>/dev/null) || continue
      for q in $frontier; do [ "$ppid" = "$q" ] && next="$next $pid"; done
    done
    out="$out$next"
    frontier=$next
  done
  echo "$out"
}

status=0
if pid_of slurmctld >/dev/null; then
  ids=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
  # shellcheck disable=SC2086
  [ -n "${ids// /}" ] && scancel $ids 2>/dev/null
  for ((i = 0; i < 150; i++)); do
    [ -z "$(squeue -h -t running,completing,suspended -o %A 2>/dev/null)" ] && break
    sleep 0.1
  done
fi
for d in slurmd slurmctld slurmdbd mariadb; do
  pid=$(pid_of "$d") && { stop_pids "$pid" || status=1; }
done
alive "$dir/munge/munged.pid" && { stop_pids "$(cat "$dir/munge/munged.pid")" || status=1; }
steps=$(stepds)
if [ -n "$steps" ]; then
  # Left behind when slurmd could not end its jobs (slurmstepd blocks SIGTERM): KILL them and
  # every process of their jobs.
  echo "stop.sh: killing slurmstepd left behind: $steps" >&2
  # shellcheck disable=SC2086
  pids="$(descendants $steps) $steps"
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
  # shellcheck disable=SC2086
  stop_pids $pids || status=1
fi
if [ $status -eq 0 ] && [ "${WB_SLURM_KEEP:-0}" != 1 ]; then
  rm -rf "$dir"
fi
exit $status
