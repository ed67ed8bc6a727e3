#!/usr/bin/env bash
# Mutation testing with curated mutants: tests/mutate/NNN-name.patch, one source mutation each.
#   tests/mutate/run.sh [--sample] [PATCH...]
# Each patch starts with header lines before its diff:
#   Mutant: what the mutation does (the operator and where)
#   Suites: the suites that must kill it (lua/x_test.lua, recipes/x_test.lua, c/x_test, cli/x.t,
#           integration/x.sh)
#   Filter: SUITE TEXT   (optional, one line per Lua suite: run only its cases whose name holds
#                        TEXT, WB_TEST_FILTER, where the case that kills the mutant is a small part
#                        of a long suite; a filter that matches no case is an error, not a kill)
#   Sample: yes          (optional: part of the fixed CI sample, `--sample`)
#   Accepted: why        (optional: a survivor that is acceptable — an equivalent mutant, or one
#                        this machine cannot observe; reported, not counted as a failure)
# The driver makes a scratch git worktree of HEAD plus the uncommitted changes to tracked files,
# builds it once and runs the union of the selected suites there (all must pass unmutated), then
# for each mutant: git apply, an incremental build, the mutant's suites (stopping at the first
# that fails: killed), git apply -R. A mutant that does not apply or does not build is an error.
# Prints a line per mutant, every survivor with its diff, and `mutation score: K/N killed (P%)`.
# Exit status 0 when every mutant not marked Accepted was killed. MUTATE_DIR keeps the scratch
# worktree (default: a temporary one, removed at the end); MUTATE_JOBS=2 the make -j;
# MUTATE_BASELINE=passed skips the unmutated run of the suites, for a caller that has just passed
# every suite on this same tree (.ci/run, after `make test`). A run of the
# whole set (no --sample, no PATCH arguments) rewrites the `## Mutation testing` section at the
# end of bench/RESULTS.md with the score and the survivors.
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
sample=0
[ "${1:-}" = --sample ] && { sample=1; shift; }
patches=("$@")
full=0
[ ${#patches[@]} -eq 0 ] && [ $sample -eq 0 ] && full=1
[ ${#patches[@]} -eq 0 ] && patches=(tests/mutate/[0-9]*.patch)

header() { sed -n "s/^$2: //p;/^diff --git /q" "$1" | head -n 1; } # patch field
selected=()
for p in "${patches[@]}"; do
  [ -f "$p" ] || { echo "mutate: no such patch: $p" >&2; exit 2; }
  if [ -z "$(header "$p" Suites)" ]; then echo "mutate: $p has no Suites: line" >&2; exit 2; fi
  [ $sample -eq 1 ] && [ "$(header "$p" Sample)" != yes ] && continue
  selected+=("$p")
done
[ ${#selected[@]} -gt 0 ] || { echo "mutate: no mutant selected" >&2; exit 2; }

jobs=${MUTATE_JOBS:-2}
work=${MUTATE_DIR:-}
keep=1
if [ -z "$work" ]; then work=$(mktemp -d /tmp/wb-mutate.XXXXXX) && rmdir "$work"; keep=0; fi
log=$(mktemp)
cleanup() {
  rm -f "$log"
  if [ $keep -eq 0 ]; then git -C "$root" worktree remove --force "$work" >/dev/null 2>&1 || rm -rf "$work"; fi
}
trap cleanup EXIT
head=$(git rev-parse HEAD)
if [ ! -e "$work/.git" ]; then
  git worktree add --detach "$work" "$head" >/dev/null 2>&1 || { echo "mutate: git worktree add $work failed" >&2; exit 2; }
else
  git -C "$work" reset -q --hard "$head" && git -C "$work" clean -qfd -e build
fi
git diff HEAD --binary >"$log"
if [ -s "$log" ] && ! (cd "$work" && git apply "$log"); then
  echo "mutate: the uncommitted changes do not apply to the scratch worktree" >&2
  exit 2
fi

build() { make -C "$work" -j"$jobs" all tests-c >"$log" 2>&1; }

# filter_of PATCH SUITE : the text of the patch's Filter: line for the suite, or nothing
filter_of() { sed -n "s|^Filter: $2 ||p;/^diff --git /q" "$1" | head -n 1; }

# run_suite NAME [FILTER] : runs one suite (only its cases whose name holds FILTER) in the scratch
# worktree; its status
run_suite() {
  local s=$1 filter=${2:-}
  (
    cd "$work" || exit 2
    export WB_BIN="$work/build/wb" WB_BUILD=build WB_ROOT="$work" PATH="$work/build:$PATH"
    unset WB_TEST_FILTER WB_TEST_SKIP WB_TEST_ONLY WB_TEST_LUA WB_TEST_PASS
    [ -z "$filter" ] || export WB_TEST_FILTER="$filter"
    case $s in
    lua/* | recipes/*) timeout 600 build/wb test "tests/$s" ;;
    c/*) timeout 600 "build/tests/${s#c/}" ;;
    cli/*) timeout 600 bash tests/cli/run.sh "tests/$s" ;;
    integration/*) timeout 900 bash "tests/$s" ;;
    *) echo "unknown suite $s"; exit 2 ;;
    esac
  ) >>"$log" 2>&1
}

echo "mutate: ${#selected[@]} mutants in $work"
t0=$(date +%s)
if ! build; then echo "mutate: the unmutated tree does not build"; tail -n 30 "$log"; exit 2; fi
declare -A suites_seen=()
for p in "${selected[@]}"; do for s in $(header "$p" Suites); do suites_seen[$s]=1; done; done
[ "${MUTATE_BASELINE:-}" = passed ] && suites_seen=() # make test just ran them on this tree
for s in $(printf '%s\n' "${!suites_seen[@]}" | sort); do
  : >"$log"
  if ! run_suite "$s"; then
    # a timing-dependent case can fail once on a loaded machine: the suite gets one more run, and
    # must pass it (the first failure is shown either way)
    echo "mutate: suite $s failed once on the unmutated tree; running it again:"
    grep -E '^not ok' -A3 "$log" | head -n 12
    : >"$log"
    if ! run_suite "$s"; then
      echo "mutate: suite $s fails on the unmutated tree: no mutant can be judged"
      grep -E '^not ok' -A5 "$log" | head -n 30
      exit 2
    fi
  fi
done
if [ "${MUTATE_BASELINE:-}" = passed ]; then
  echo "mutate: the unmutated tree builds; its suites passed in the caller's run ($(($(date +%s) - t0)) s)"
else
  echo "mutate: the unmutated tree passes ${#suites_seen[@]} suites ($(($(date +%s) - t0)) s)"
fi

killed=0 survived=0 accepted=0 errors=0
survivors=() lines=()
for p in "${selected[@]}"; do
  name=$(basename "$p" .patch)
  start=$(date +%s)
  if ! (cd "$work" && git apply "$root/$p") 2>"$log"; then
    echo "ERROR    $name: does not apply"; sed 's/^/    /' "$log"; errors=$((errors + 1)); continue
  fi
  verdict="" by=""
  if ! build; then
    verdict=ERROR
    tail -n 15 "$log" | sed 's/^/    /'
  else
    for s in $(header "$p" Suites); do
      : >"$log"
      filter=$(filter_of "$p" "$s")
      if ! run_suite "$s" "$filter"; then
        if [ -n "$filter" ] && grep -q "^not ok - WB_TEST_FILTER=.* matches none" "$log"; then
          verdict=NOFILTER by=$s
        else
          verdict=killed by=$s${filter:+ (cases: $filter)}
        fi
        break
      fi
    done
  fi
  (cd "$work" && git apply -R "$root/$p") || { echo "mutate: cannot revert $name" >&2; exit 2; }
  secs=$(($(date +%s) - start))
  eq=$(header "$p" Accepted)
  case $verdict in
  killed)
    killed=$((killed + 1))
    line="killed   $name by $by" ;;
  ERROR)
    errors=$((errors + 1))
    line="ERROR    $name: does not build" ;;
  NOFILTER)
    errors=$((errors + 1))
    line="ERROR    $name: its Filter: line for $by matches no case" ;;
  *)
    if [ -n "$eq" ]; then
      accepted=$((accepted + 1))
      line="survived $name (accepted: $eq)"
    else
      survived=$((survived + 1))
      line="SURVIVED $name: $(header "$p" Mutant)"
    fi
    survivors+=("$p") ;;
  esac
  lines+=("$line")
  echo "$line (${secs} s)"
done
# the worktree's build matches the unmutated tree again for a kept MUTATE_DIR
build || true

total=$((killed + survived + accepted))
if [ ${#survivors[@]} -gt 0 ]; then
  echo "== survivors"
  for p in "${survivors[@]}"; do
    echo "--- $(basename "$p" .patch): $(header "$p" Mutant)"
    eq=$(header "$p" Accepted)
    [ -n "$eq" ] && echo "    accepted: $eq"
    sed -n '/^diff --git /,$p' "$p" | sed 's/^/    /'
  done
fi
pct=0
[ $total -gt 0 ] && pct=$((100 * killed / total))
score="mutation score: $killed/$total killed ($pct%), $survived survived, $accepted accepted, $errors errors ($(($(date +%s) - t0)) s)"
echo "$score"
if [ $full -eq 1 ] && [ -f bench/RESULTS.md ]; then
  {
    sed '/^## Mutation testing/,$d' bench/RESULTS.md
    echo "## Mutation testing (make mutate)"
    echo
    echo "Generated by \`make mutate\` (\`tests/mutate/run.sh\`) at $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%M:%SZ)."
    echo "Curated mutants (tests/mutate/*.patch), each run against the suites its Suites: line names."
    echo
    echo "$score"
    echo
    echo '```'
    printf '%s\n' "${lines[@]}"
    echo '```'
    if [ ${#survivors[@]} -gt 0 ]; then
      echo
      echo "Survivors:"
      echo
      for p in "${survivors[@]}"; do
        eq=$(header "$p" Accepted)
        echo "- \`$(basename "$p" .patch)\`: $(header "$p" Mutant)${eq:+ — accepted: $eq}"
      done
    fi
  } >bench/RESULTS.md.new && mv bench/RESULTS.md.new bench/RESULTS.md
  echo "mutate: the score is in bench/RESULTS.md"
fi
[ $survived -eq 0 ] && [ $errors -eq 0 ]
