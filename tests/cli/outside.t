# The first hour, as a new user meets wb: every command runs from a temporary directory outside
# the repository, with $WB_BIN (the built binary; tests/integration/install.sh runs this file
# again with an installed copy). The comment before each block names the item of issue 13.

# 1. the binary finds the recipes of the tree it was built from, or of its installed set
$ cd $T && ${WB_BIN:-wb} list | grep -c -E '^    (bench|demo|matrix|profile|profile_app_full|regress|scaling|vep_breakdown|data) '
9

$ cd $T && ${WB_BIN:-wb} bench true runs=2 -o $T/b1 | grep -c '`true` (reference)'
1

# 1. a binary copied away from any tree of its own (and with none at its prefix: WB_PREFIX points
# it away from the one it was built for, where wb may be installed) says where it looked instead of
# listing nothing
$ cd $T && mkdir lonely && cp "$(command -v ${WB_BIN:-wb})" lonely/wb && cd lonely && export WB_PREFIX=$T/none && ./wb list; ./wb bench true
wb: list: no recipes found (looked in recipes); is wb installed (make install)?
wb: unknown command or recipe 'bench' (no recipes found: looked in recipes)
[2]

# 13. data paths print normalised (no bin/../share), recipes are found by absolute path
$ cd $T && ${WB_BIN:-wb} help demo | grep '^recipe: '
recipe: /.*/recipes/demo%.lua (re)

$ cd $T && ${WB_BIN:-wb} help demo | grep -c '/\.\./'
0
[1]

# 2. the bundled examples are found (built: build/examples, installed: libexec/wb/examples), so
# shipped recipes run with their defaults from any directory
$ cd $T && ${WB_BIN:-wb} demo | head -1
/.*/examples/phases %-%-scale 4 %-%-sleep%-ms 50: 5 trials %(%+1 warmup%) (re)

$ cd $T && ${WB_BIN:-wb} scaling runs=2 warmup=0 -o $T/sc > /dev/null && grep -c '"speedup"' $T/sc/scaling.json
4

$ cd $T && ${WB_BIN:-wb} matrix -o $T/mx > /dev/null 2>&1; grep -c '| success ' $T/mx/report.md
6

# 2. a matrix whose runs fail says why in its table
$ cd $T && WB_EXAMPLES=$T/none ${WB_BIN:-wb} matrix -o $T/mxf 2>/dev/null | grep -c 'failed: spawn: .*/none/gwas_engine: No such file or directory'
6

$ cd $T && WB_EXAMPLES=$T/none ${WB_BIN:-wb} matrix -o $T/mxf2 > /dev/null
[1]

# 3. --dry-run runs nothing: it writes the plan, says where, and the manifest says so
$ cd $T && ${WB_BIN:-wb} bench "touch $T/bench-ran" runs=3 --dry-run -o $T/d1; test ! -e $T/bench-ran && grep -c '"dry_run": true' $T/d1/manifest.json
plan: .*/d1/plan%.md (re)
1

$ cd $T && ${WB_BIN:-wb} profile --dry-run -o $T/d2 -- touch $T/profile-ran; test ! -e $T/profile-ran && grep -c 'touch' $T/d2/plan.md
plan: .*/d2/plan%.md (re)
1

$ cd $T && ${WB_BIN:-wb} scaling --dry-run -o $T/d3 && grep -c '^| workers=' $T/d3/plan.md
plan: .*/d3/plan%.md (re)
4

$ cd $T && ${WB_BIN:-wb} profile_app_full --dry-run -o $T/d4 | grep -c '^plan: '
1

$ cd $T && ${WB_BIN:-wb} demo --dry-run; ls $T | grep -c runs
wb: --dry-run: recipe 'demo' cannot plan (it has no plan step); run it without --dry-run
0
[1]

$ cd $T && ${WB_BIN:-wb} vep_breakdown --dry-run
wb: --dry-run: recipe 'vep_breakdown' cannot plan (it has no plan step); run it without --dry-run
[2]

# 4. the first Ctrl-C stops the profiled command and keeps the profile and report (exit 0) ...
# requires: root: the eBPF capture gives the off-CPU profile and the critical path beside the on-CPU one
$ cd $T && { ${WB_BIN:-wb} profile -o $T/int1 -- sleep 30 > $T/int1.out 2>&1 & pid=$!; for i in $(seq 300); do pgrep -P $pid -x sleep > /dev/null && break; sleep 0.1; done; sleep 0.5; kill -INT $pid; wait $pid; echo "exit $?"; }; ls $T/int1/profiles | grep -c folded; ls $T/int1 | grep -c report.html; grep -c 'stopped by Ctrl-C' $T/int1.out
exit 0
3
1
1

# ... and a second Ctrl-C aborts (exit 130), the manifest says interrupted (bash execs the sleep,
# which keeps the ignored SIGINT)
$ cd $T && { ${WB_BIN:-wb} profile -o $T/int2 -- bash -c 'trap "" INT; sleep 30' > /dev/null 2>&1 & pid=$!; for i in $(seq 300); do pgrep -P $pid -x sleep > /dev/null && break; sleep 0.1; done; sleep 0.5; kill -INT $pid; sleep 0.5; kill -INT $pid; wait $pid; echo "exit $?"; }; grep -m1 -o '"status": "[a-z]*"' $T/int2/manifest.json
exit 130
"status": "interrupted"

# ... in every capture: profile_app_full's capture pass (its trial ran quickly, the capture would sleep)
$ cd $T && { ${WB_BIN:-wb} profile_app_full "tool.command=[sh, -c, 'test -e $T/F4 && sleep 30; touch $T/F4']" tool.trials=1 tool.warmup=0 -o $T/int3 > /dev/null 2>&1 & pid=$!; for i in $(seq 300); do [ -e $T/F4 ] && pgrep -f "^sleep 30$" > /dev/null && break; sleep 0.1; done; sleep 0.5; kill -INT $pid; wait $pid; echo "exit $?"; }; ls $T/int3 | grep -c -x report.html; grep -c '"stopped_by": "SIGINT"' $T/int3/manifest.json
exit 0
1
1

# 11. stdout=null|inherit|FILE: the command's output is discarded, passed through or kept byte for byte
$ cd $T && ${WB_BIN:-wb} profile stdout=$T/bin.out offcpu=false -o $T/so -- printf 'a\0b' > /dev/null && od -An -c $T/bin.out
   a  \0   b

$ cd $T && ${WB_BIN:-wb} profile stdout=null offcpu=false oncpu=false -o $T/sn -- echo hidden-line | grep -c -x hidden-line
0
[1]

$ cd $T && ${WB_BIN:-wb} profile stdout=inherit offcpu=false oncpu=false -o $T/si -- echo shown-line | grep -c -x shown-line
1

# 5. -o DIR never makes or replaces DIR/../latest; wb's own runs/ gets runs/latest
$ cd $T && mkdir o5 && echo keep > o5/latest && ${WB_BIN:-wb} bench true runs=2 -o $T/o5/x > /dev/null && cat o5/latest && ${WB_BIN:-wb} bench true runs=2 -o $T/o5b > /dev/null && ls $T | grep -c '^latest$'
keep
0
[1]

$ cd $T && mkdir w5 && cd w5 && ${WB_BIN:-wb} bench true runs=2 > /dev/null && readlink runs/latest
bench_.* (re)

# 7. every value is checked against its declared type before any directory is made
$ cd $T && ${WB_BIN:-wb} bench true runs=abc -o $T/t7a; ls $T | grep -c t7a
wb: override 'runs=abc': runs must be an integer >= 1 or null, got string 'abc'
0
[1]

$ cd $T && ${WB_BIN:-wb} bench true runs=2.5 -o $T/t7
wb: override 'runs=2.5': runs must be an integer >= 1 or null, got float 2.5
[2]

$ cd $T && ${WB_BIN:-wb} bench true runs=-1 -o $T/t7
wb: override 'runs=-1': runs must be an integer >= 1 or null, got integer -1
[2]

$ cd $T && ${WB_BIN:-wb} bench true runs=0 -o $T/t7
wb: override 'runs=0': runs must be an integer >= 1 or null, got integer 0
[2]

$ cd $T && ${WB_BIN:-wb} bench true warmup=-2 -o $T/t7
wb: override 'warmup=-2': warmup must be an integer >= 0, got integer -2
[2]

$ cd $T && ${WB_BIN:-wb} profile_app_full tool.trials=0 -o $T/t7
wb: override 'tool.trials=0': tool.trials must be an integer >= 1, got integer 0
[2]

$ cd $T && ${WB_BIN:-wb} profile stack_entries=10 -o $T/t7 -- true
wb: override 'stack_entries=10': stack_entries must be an integer >= 64, got integer 10
[2]

$ cd $T && ${WB_BIN:-wb} profile stack_size=abc -o $T/t7 -- true
wb: override 'stack_size=abc': stack_size must be a multiple of 8 in 512..65528 or null, got string 'abc'
[2]

$ cd $T && ${WB_BIN:-wb} vep_breakdown top=0 -o $T/t7
wb: override 'top=0': top must be an integer >= 1, got integer 0
[2]

$ cd $T && ${WB_BIN:-wb} data dataset.samples=0 --dry-run -o $T/t7
wb: override 'dataset.samples=0': dataset.samples must be an integer >= 1, got integer 0
[2]

$ ls $T | grep -c t7
0
[1]

# 8. --resume DIR keeps the run's commands and overrides, and refuses other ones
$ cd $T && ${WB_BIN:-wb} bench 'sleep 0.01' runs=2 -o $T/r8 > /dev/null && ${WB_BIN:-wb} bench --resume $T/r8 | grep -c '`sleep 0.01` (reference)'
1

$ cd $T && ${WB_BIN:-wb} bench --resume $T/r8 'sleep 0.02'
wb: %-%-resume: .*/r8 ran with the arguments 'sleep 0.01', not 'sleep 0.02' %(resume without them, or start a new run%) (re)
[2]

$ cd $T && ${WB_BIN:-wb} bench --resume $T/r8 runs=5
wb: %-%-resume: .*/r8 ran with the overrides 'runs=2', not 'runs=5' %(changed: runs; resume without them, or start a new run%) (re)
[2]

# 10. per-recipe help, and hints for hyperfine habits
$ cd $T && ${WB_BIN:-wb} help bench | grep -E '^(Time commands|keys|examples|  runs |  warmup )'
Time commands like hyperfine: interleaved runs, statistics, ratios with confidence intervals.
keys (override with key=value):
  runs            an integer >= 1 or null       default null
  warmup          an integer >= 0               default 0
examples:

$ cd $T && ${WB_BIN:-wb} profile --help | grep -c -E '^  (freq|stdout) '
2

$ cd $T && ${WB_BIN:-wb} help profile_app_full | grep '^  tool.trials '
  tool.trials .* an integer >= 1 .* default 5 (re)

$ cd $T && ${WB_BIN:-wb} bench --runs 5 'sleep 0.1'
wb: unknown option '--runs': did you mean runs=5?
[2]

$ cd $T && ${WB_BIN:-wb} bench 'sleep 0.1' --warmup=3
wb: unknown option '--warmup=3': did you mean warmup=3?
[2]

$ cd $T && ${WB_BIN:-wb} bench 'seq 100 | wc -l' runs=2
wb: bench: 'seq 100 | wc -l': '|' is shell syntax, but commands run without a shell; add shell=true to run them with /bin/sh -c
[2]

$ cd $T && ${WB_BIN:-wb} bench 'seq 100 | wc -l' runs=2 shell=true -o $T/sh10 | grep -c '(reference)'
1

# 12. a run directory that cannot be made is the environment refusing before any work: exit 2
$ cd $T && touch plainfile && ${WB_BIN:-wb} bench true runs=2 -o $T/plainfile/run
wb: run directory .*/plainfile/run: Not a directory (re)
[2]

# 13. a recipe run by path finds the profiles beside it; a missing profile names WB_PROFILE_PATH
$ cd $T && mkdir -p proj/recipes proj/profiles && printf -- '-- Mine.\nlocal wb = require "wb"\nreturn wb.recipe { config = "mine", run = function(ctx) print("n=" .. ctx.cfg.n) end }\n' > proj/recipes/mine.lua && echo 'n: 7' > proj/profiles/mine.yaml && ${WB_BIN:-wb} run proj/recipes/mine.lua && ${WB_BIN:-wb} run $T/proj/recipes/mine.lua n=8
n=7
n=8

$ cd $T && mkdir -p lone && cp proj/recipes/mine.lua lone/ && ${WB_BIN:-wb} run lone/mine.lua
wb: no profile 'mine' %(looked in .*; add a directory with WB_PROFILE_PATH=DIR%) (re)
[2]

$ cd $T && WB_PROFILE_PATH=$T/proj/profiles ${WB_BIN:-wb} run lone/mine.lua
n=7

# 14. --multirun labels each job before its output and points runs/latest at the sweep
$ cd $T && mkdir m14 && cd m14 && ${WB_BIN:-wb} bench true runs=1,2 --multirun | grep '^\[multirun' && readlink runs/latest
%[multirun 1/2%] runs=1  %(runs/bench_.*_multirun/1_runs=1%) (re)
%[multirun 2/2%] runs=2  %(runs/bench_.*_multirun/2_runs=2%) (re)
bench_.*_multirun (re)

# 9. wb regress on a short history measures all of it, says which range is impossible, and keeps
# its runs out of the repository it measures when run from inside it
$ cd $T && mkdir rg && cd rg && git init -q && for i in 1 2 3; do echo "sleep 0.00$i" > app.sh && git add app.sh && git -c user.email=t@t -c user.name=t commit -qm "c$i"; done && ${WB_BIN:-wb} regress 'bench=[sh, app.sh]' 'build=[]' runs=2 warmup=0 2>$T/rg.err | grep -c -E '^\| +[123] \|'; head -1 $T/rg.err; git status --short; ls .git/wb/runs | grep -c '^regress_'
3
regress: inside the repository under test, so the run directory is under .*/rg/%.git/wb/runs (re)
1

$ cd $T/rg && ${WB_BIN:-wb} regress 'bench=[sh, app.sh]' 'build=[]' range=HEAD~10..HEAD
wb: regress: range 'HEAD~10..HEAD' is not a revision range of .*/rg %(it has 3 commits; range=HEAD measures them all%) (re)
[2]

# 15. the terminal summary: no Markdown escapes in warnings, one line for a warning every command
# has, no outliers among fewer than 5 runs; report.html states a fixed run count as it is
$ cd $T && ${WB_BIN:-wb} bench "test -e $T/f6 || { touch $T/f6; sleep 0.2; }" shell=true runs=6 -o $T/w6 | grep -c 'modified z-score > 3.5'
1

$ cd $T && ${WB_BIN:-wb} bench "test -e $T/f3 || { touch $T/f3; sleep 0.2; }" shell=true runs=3 -o $T/w3 | grep -c -i outlier
0
[1]

$ cd $T && n=$(${WB_BIN:-wb} bench true 'sleep 0.001' runs=3 -o $T/w15 | grep -c -E 'peak RSS is an upper bound|\\'); test "$n" -le 1 && echo "at most one"
at most one

$ cd $T && ${WB_BIN:-wb} bench true runs=15 -o $T/h15 > /dev/null && grep -c -E 'at least 10|≥ 3 s' $T/h15/report.html
0
[1]

# 6. profile_app_full's report.html renders its summary (tables, no raw Markdown) and its header
# counts the warm-up that ran, with two stage tables (the bottlenecks' and the memory section's,
# from the example's stage lines on stderr); 16. one formatter: durations in s/ms, not raw ns; counts grouped;
# two shares of one wait name their denominators
$ cd $T && ${WB_BIN:-wb} profile_app_full -o $T/paf > $T/paf.out 2>&1; grep -c '<pre>' $T/paf/report.html; grep -c '<b>1</b> warmup' $T/paf/report.html; grep -c '<th[^>]*>stage</th>' $T/paf/report.html
0
1
2

$ grep -E '^\| (task-clock|page-faults) ' $T/paf.out; grep -c -E '[0-9]{7,} ns' $T/paf.out; grep -c 'share of wall (median trial, ' $T/paf.out
| page%-faults .*| [0-9],[0-9][0-9][0-9] .* (re)
| task%-clock .*| [0-9.]+ ms .* (re)
0
1

# 6. wb profile's report.html shows the differential flame graphs against the previous profile
# requires: root: the eBPF capture gives the off-CPU profile and the critical path whose differential graphs are counted
$ cd $T && mkdir p6 && cd p6 && ${WB_BIN:-wb} profile -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' > /dev/null 2>&1 && ${WB_BIN:-wb} profile -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' 2>&1 | grep -c '^differential flame graph: '; grep -c 'href="profiles/profile.oncpu.diff.svg"' runs/latest/report.html
3
1

# 11. a stripped library: its unresolved addresses are one row of the top functions, and the
# warning names the library (its path), not only the executable
$ cd $T && head -c 3000000 /dev/urandom > r.bin && ${WB_BIN:-wb} profile stdout=null offcpu=false freq=499 -o $T/xz -- xz -6 -T1 -c r.bin 2>&1 | grep -E 'liblzma[^ ]* \(unresolved addresses\)$|^warning: /.*/liblzma[^ ]* has no symbol table' | sed -E 's/^ +[0-9.]+% +[0-9.]+% +//; s/^warning: \/.*\/(liblzma[^ ]*) .*/warning: \1 .../' | sort -u
liblzma.so.%S+ %(unresolved addresses%) (re)
warning: liblzma.so.%S+ ... (re)
