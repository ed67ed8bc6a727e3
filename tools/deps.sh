#!/usr/bin/env bash
# Installs the Debian packages wb needs to build and test (when run as root); otherwise prints the
# apt-get line and exits 1. Quick when everything is present.
#   tools/deps.sh --test : what `make test` runs first. Without root, missing packages are only
#   reported (the tests that need them report skips with their reason) and it exits 0, except
#   in CI (CI=true), where every package must be there.
set -euo pipefail
for_test=0
[ "${1:-}" = --test ] && for_test=1
packages=(
  gcc make pkg-config liblua5.4-dev lua5.4 libyaml-dev libcjson-dev libreadline-dev libsqlite3-dev plink2 valgrind
  libbpf-dev bpftool clang llvm libelf-dev zlib1g-dev linux-perf luajit hyperfine
  slurmctld slurmd slurm-client munge slurmdbd mariadb-server chromium
  procps util-linux xz-utils libclang-rt-14-dev strace libdw-dev libiberty-dev libbz2-dev liblzma-dev libc6-dbg
  nodejs zstd heaptrack libjemalloc2 libtcmalloc-minimal4 sqlite3 time
)
# WB_EXTRA_PACKAGES adds names to the check (the tests use it to prove the non-root path).
# shellcheck disable=SC2206
packages+=(${WB_EXTRA_PACKAGES:-})
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if [ $for_test -eq 1 ] && [ "${CI:-}" != true ]; then
    echo "wb: missing Debian packages (the tests that need them are skipped); to install them, as root:" >&2
    echo "  $line" >&2
    exit 0
  fi
  echo "wb: missing Debian packages; run as root:" >&2
  echo "  $line" >&2
  exit 1
fi
echo "wb: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
