#!/usr/bin/env bash
# tools/bench-deps.sh DIR : makes DIR a Python virtual environment holding airspeed velocity (asv)
# 0.6.4 and its dependencies at the versions pinned below, which bench/history.lua compares `wb
# trend` with (`make bench` passes $(BUILD)/asv-venv). Quick when DIR already holds them: its
# .wb-pins file lists what it was made with. When python3's venv module, pip or the network is
# missing, one line "wb: asv not installed: REASON" goes to stderr and it exits 0 (the bench
# section reports the asv figures skipped). The interpreter is $PYTHON, else Debian's
# /usr/bin/python3, else python3 on PATH.
set -euo pipefail
dir=${1:?usage: tools/bench-deps.sh DIR}
# asv 0.6.4 and everything pip resolves for it on Python 3.11
pins=(
  asv==0.6.4 asv_runner==0.3.2 build==1.6.1 distlib==0.4.4 filelock==4.3.2 json5==0.17.3 packaging==26.4
  platformdirs==4.14.9 Pympler==1.1 pyproject_hooks==1.3.3 python-discovery==1.9.9 PyYAML==6.0.4
  tabulate==0.10.0 virtualenv==21.15.14
)
python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=$(command -v python3 || true); fi
fi
want=$(printf '%s\n' "python: $python" "${pins[@]}")
stamp=$dir/.wb-pins
if [ -x "$dir/bin/asv" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

skip() {
  echo "wb: asv not installed: $*" >&2
  exit 0
}
[ -n "$python" ] || skip "no python3"
"$python" -c 'import venv, ensurepip' 2>/dev/null || skip "$python cannot import venv and ensurepip (Debian: python3-venv)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --clear: a DIR made with other pins (or half made) is emptied first
"$python" -m venv --clear "$dir" >"$log" 2>&1 || skip "python3 -m venv $dir failed: $(tail -n 1 "$log")"
echo "wb: installing asv 0.6.4 into $dir" >&2
if ! "$dir/bin/pip" install --disable-pip-version-check --no-input --quiet --timeout 30 --retries 2 \
    "${pins[@]}" >"$log" 2>&1; then
  rm -f "$stamp"
  skip "pip install failed (no network?): $(grep -v '^\s*$' "$log" | tail -n 1)"
fi
"$dir/bin/asv" --version >/dev/null 2>&1 || skip "$dir/bin/asv does not run after its installation"
printf '%s\n' "$want" >"$stamp"
