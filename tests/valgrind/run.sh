#!/usr/bin/env bash
# Runs the C unit tests ($WB_BUILD/tests/*_test) and a representative set of CLI runs of
# $WB_BUILD/wb (version, list, a recipe with config overrides, the composed config as YAML, JSON,
# YAML and log-scanner round trips, the VEP breakdown recipe on a log, compare, error exits) under
# valgrind memcheck: any memory error or definite leak fails the case, as does an exit status other
# than the expected one. tests/valgrind/wb.supp holds suppressions for third-party noise only.
# valgrind before 3.20 does not know pidfd_open (434): wb.proc then falls back to polling for
# exits, which is what runs here. A case needing any other syscall, or bpf(2) command, valgrind
# does not know is skipped with that reason (c/bpf_switch_test: BPF_PROG_TEST_RUN). Ends with `N passed, N failed, N skipped`.
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD=${WB_BUILD:-build}
WB=$PWD/$BUILD/wb
if ! command -v valgrind >/dev/null; then
  echo "not ok - valgrind is not installed (apt-get install valgrind)"
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi
VALGRIND=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
  --show-leak-kinds=definite --suppressions=tests/valgrind/wb.supp --num-callers=30)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0 skipped=0 n=0

# check NAME EXPECTED_EXIT COMMAND... : runs COMMAND under memcheck
check() {
  local name=$1 want=$2
  shift 2
  n=$((n + 1))
  local vlog=$work/$n.valgrind out=$work/$n.out
  "${VALGRIND[@]}" --log-file="$vlog" "$@" >"$out" 2>&1
  local rc=$?
  local errors
  errors=$(sed -nE 's/.*ERROR SUMMARY: ([0-9]+) errors.*/\1/p' "$vlog" | tail -n 1)
  local syscall
  syscall=$(sed -nE 's/.*WARNING: unhandled [a-z0-9-]+ syscall: ([0-9]+).*/\1/p' "$vlog" | grep -v '^434$' | head -n 1)
  local bpf_cmd
  bpf_cmd=$(sed -nE 's/.*WARNING: unhandled eBPF command ([0-9]+).*/\1/p' "$vlog" | head -n 1)
  if [ -n "$syscall" ]; then
    echo "skip - $name: $(valgrind --version) does not handle syscall $syscall"
    skipped=$((skipped + 1))
  elif [ -n "$bpf_cmd" ]; then
    # (nor the bpf(2) attr union libbpf fills per command: its unused bytes read as uninitialised)
    echo "skip - $name: $(valgrind --version) does not handle bpf(2) command $bpf_cmd"
    skipped=$((skipped + 1))
  elif [ "${errors:-x}" = 0 ] && [ "$rc" -eq "$want" ]; then
    echo "ok - $name"
    passed=$((passed + 1))
  else
    echo "not ok - $name: exit $rc (expected $want), ${errors:-?} memcheck errors"
    grep -E '^==[0-9]+== ' "$vlog" | grep -vE '^==[0-9]+== *$' | head -n 40 | sed 's/^/    /'
    tail -n 5 "$out" | sed 's/^/    out: /'
    failed=$((failed + 1))
  fi
}

for t in "$BUILD"/tests/*_test; do
  [ -x "$t" ] && check "c/$(basename "$t")" 0 "$t"
done

export WB_PROFILE_PATH=tests/fixtures/profiles/main
check "cli/version" 0 "$WB" version
check "cli/list" 0 "$WB" list
check "cli/run with overrides" 0 "$WB" run tests/fixtures/recipes/cfg.lua -o "$work/cfg" machine=slurm_cpu \
  tool.trials=7 'tool.threads=[1,2]' "+tool.note='a, b'"
check "cli/composed config as YAML" 0 "$WB" run tests/fixtures/recipes/cfg.lua --cfg job workload=big '~tool.flag'
check "cli/json, yaml and scan round trips" 0 "$WB" test tests/valgrind/data_test.lua
check "cli/vep_breakdown on a log" 0 "$WB" run recipes/vep_breakdown.lua \
  log=tests/fuzz/corpus/vep/emit_all.log compare=tests/fuzz/corpus/vep/emit_lance.log.gz -o "$work/vep"
check "cli/compare" 0 "$WB" compare tests/fixtures/compare/bench_base.json tests/fixtures/compare/bench_new.json --json
check "cli/campaign running commands" 0 "$WB" run tests/fixtures/recipes/campaign.lua cases=2 sleep=0 -o "$work/camp"
check "cli/error: a recipe that raises" 1 "$WB" run tests/fixtures/recipes/runtime_error.lua
check "cli/error: a malformed override" 2 "$WB" run tests/fixtures/recipes/cfg.lua 'tool.trials=[1'
check "cli/error: compare of malformed JSON" 2 "$WB" compare tests/fixtures/compare/malformed.json \
  tests/fixtures/compare/bench_new.json
check "cli/error: unknown command" 2 "$WB" frobnicate

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
