# The bad-input table of docs/errors.md: each kind of bad input, the exact one-line message, the
# exit status, and that nothing else was written (no run directory) or lost (the previous run).

$ cd tests/fixtures/errors && wb run run_one.lua -o $T/previous -- true && test -f $T/previous/manifest.json && echo kept
kept

$ cd tests/fixtures/errors && wb run run_one.lua machine=broken -o $T/x1; test ! -e $T/x1 && echo nothing written
wb: profiles/machine/broken.yaml:3:1: did not find expected ',' or ']' (while parsing a flow sequence)
nothing written

$ cd tests/fixtures/errors && wb run run_one.lua machine=nosuch -o $T/x2; test ! -e $T/x2 && echo nothing written
wb: override 'machine=nosuch': unknown option 'nosuch' for group 'machine' (available: broken, local, slurm_cpu, slurm_gpu)
nothing written

$ cd tests/fixtures/errors && wb run run_one.lua 'tool.trials=[1,2' -o $T/x3; test ! -e $T/x3 && echo nothing written
wb: override 'tool.trials=[1,2': malformed list: missing ']'
nothing written

$ cd tests/fixtures/errors && wb run run_one.lua tool.trials=abc -o $T/x4; test ! -e $T/x4 && echo nothing written
wb: override 'tool.trials=abc': type mismatch: tool.trials is an integer (profiles/good.yaml:6), got string 'abc'
nothing written

$ cd tests/fixtures/errors && wb run run_one.lua tool.trails=5 -o $T/x5; test ! -e $T/x5 && echo nothing written
wb: override 'tool.trails=5': unknown key 'tool.trails' (use +tool.trails=5 to add it); did you mean 'tool.trials'?
nothing written

$ printf '{"a": 1,\n "b": }\n' > $T/bad.json && wb compare $T/bad.json $T/bad.json
wb: compare: /tmp/wbcli%.%w+/bad%.json: json: line 2 col 7: unexpected character .}. (re)
[2]

$ wb run tests/fixtures/recipes/syntax_error.lua -o $T/x6; test ! -e $T/x6 && echo nothing written
wb: tests/fixtures/recipes/syntax_error.lua:4: unexpected symbol near 'then'
nothing written

$ wb run tests/fixtures/recipes/undefined_global.lua -o $T/x7; test ! -e $T/x7 && echo nothing written
wb: tests/fixtures/recipes/undefined_global.lua:5: undefined global 'trails'
nothing written

$ cd tests/fixtures/errors && wb run run_one.lua -o $T/x8 -- wb-no-such-program; echo "exit $?"; grep -c '"status": "failed"' $T/x8/manifest.json; test -f $T/previous/manifest.json && echo previous kept
wb: run 'one' failed: spawn: wb-no-such-program: No such file or directory
exit 1
2
previous kept

# requires: root: it runs wb as nobody (runuser), to whom the file is unreadable
$ printf 'x' > $T/unreadable.lua && chmod 600 $T/unreadable.lua && chmod 755 $T && runuser -u nobody -- wb run $T/unreadable.lua
wb: /tmp/wbcli%.%w+/unreadable%.lua: Permission denied (re)
[2]

$ wb compare $T/missing.json $T/bad.json
wb: compare: /tmp/wbcli%.%w+/missing%.json: No such file or directory (re)
[2]

$ cd tests/fixtures/errors && wb run run_one.lua --config-name bomb -o $T/x9; test ! -e $T/x9 && echo nothing written
wb: profiles/bomb.yaml:9: interpolation ${f}${f}${f}${f}${f}${f}${f}${f}: the value would be over the limit of 1048576 bytes (WB_MAX_INTERPOLATION=N raises it)
nothing written

$ cd tests/fixtures/errors && WB_MAX_INTERPOLATION=300000000 wb run run_one.lua --config-name bomb --cfg job | grep -c '^i: '
1

$ wb run tests/fixtures/recipes/campaign.lua --multirun cases=$(seq -s, 1 1000) sleep=$(seq -s, 1 1000) -o $T/x10; test ! -e $T/x10 && echo nothing written
wb: --multirun: 1000 x 1000 = 1000000 runs, over the limit of 1000 (WB_MAX_MULTIRUN=N raises it)
nothing written

$ WB_MAX_MULTIRUN=10 wb run tests/fixtures/recipes/campaign.lua --multirun cases=1,2,3,4 sleep=0,0.0,0.00 -o $T/x11; test ! -e $T/x11 && echo nothing written
wb: --multirun: 4 x 3 = 12 runs, over the limit of 10 (WB_MAX_MULTIRUN=N raises it)
nothing written

$ wb run tests/fixtures/recipes/campaign.lua --multirun cases=$(seq -s, 1 25) sleep=0 --dry-run -o $T/x12 2>&1 >/dev/null | head -n 1
wb: --multirun: 25 = 25 runs; composing each

$ cd tests/fixtures/errors && wb run run_one.lua -o $T/previous -- true; echo "exit $?"; grep -c '"status": "complete"' $T/previous/manifest.json
wb: %-o /tmp/wbcli%.%w+/previous: holds a completed run %(%-%-overwrite replaces it%) (re)
exit 2
1

$ cd tests/fixtures/errors && wb run run_one.lua -o $T/previous --overwrite -- true; echo "exit $?"
exit 0

$ wb run tests/fixtures/recipes/faults.lua mode=error_exit0; echo "exit $?"
wb: asked for exit 0
exit 1

$ wb run tests/fixtures/recipes/faults.lua mode=error_tostring; echo "exit $?"
wb: error (a table value without a message)
exit 1

$ wb run tests/fixtures/recipes/faults.lua mode=return code=256; echo "exit $?"
exit 1

$ cd tests/fixtures/errors && wb run run_one.lua 'tool.trіals=1' -o $T/x13 -- true; echo "exit $?"; test ! -e $T/x13 && echo nothing written
wb: override 'tool.trіals=1': bad key 'tool.trіals': 'і' is not an ASCII character; did you mean 'tool.trials'?
exit 2
nothing written

$ cd tests/fixtures/errors && wb run run_one.lua 1tool.trials=1 -o $T/x14 -- true; echo "exit $?"; test ! -e $T/x14 && echo nothing written
wb: override '1tool.trials=1': bad key '1tool.trials': a key starts with a letter or '_'; did you mean 'tool.trials'?
exit 2
nothing written

$ cd tests/fixtures/errors && wb run run_one.lua --tool.trials=1 -o $T/x15 -- true; echo "exit $?"
wb: unknown option '--tool.trials=1': did you mean tool.trials=1?
exit 2

$ cd tests/fixtures/errors && wb run run_one.lua --output=$T/x16 -- true && test -f $T/x16/manifest.json && echo written there
written there

$ for v in 2.5 1e20 inf nan; do wb run tests/fixtures/recipes/campaign.lua cases=$v -o $T/x17; echo "exit $?"; done; test ! -e $T/x17 && echo nothing written
wb: override 'cases=2.5': cases is an integer (tests/fixtures/recipes/campaign.lua), got float 2.5
exit 2
wb: override 'cases=1e20': cases is an integer (tests/fixtures/recipes/campaign.lua), got float 1e+20
exit 2
wb: override 'cases=inf': cases is an integer (tests/fixtures/recipes/campaign.lua), got float .inf
exit 2
wb: override 'cases=nan': cases is an integer (tests/fixtures/recipes/campaign.lua), got float .nan
exit 2
nothing written

$ wb run tests/fixtures/recipes/campaign.lua sleep=inf -o $T/x18; echo "exit $?"
wb: override 'sleep=inf': sleep is a finite number (tests/fixtures/recipes/campaign.lua), got .inf
exit 2

$ cd tests/fixtures/errors && wb run run_one.lua --config-name two_docs -o $T/x19 -- true; echo "exit $?"; test ! -e $T/x19 && echo nothing written
wb: profiles/two_docs.yaml:4:1: a second document: the file must hold one (remove the '---' and what follows)
exit 2
nothing written

A recipe that runs its work on this machine refuses a machine profile whose executor is Slurm
(nothing written); the matrix, data, profile and profile_app_full recipes run their cases through
it (a dry run writes the batch scripts).

$ for r in bench demo regress scaling vep_breakdown; do wb $r machine=slurm_cpu -o $T/s_$r 2>&1 | sed "s/'$r'/'R'/"; echo "$r exit ${PIPESTATUS[0]}"; test ! -e $T/s_$r || echo "$r wrote"; done
wb: recipe 'R' runs its work on this machine, not through executor 'slurm' (the machine profile's executor); use machine=local, or run wb itself inside a job
bench exit 2
wb: recipe 'R' runs its work on this machine, not through executor 'slurm' (the machine profile's executor); use machine=local, or run wb itself inside a job
demo exit 2
wb: recipe 'R' runs its work on this machine, not through executor 'slurm' (the machine profile's executor); use machine=local, or run wb itself inside a job
regress exit 2
wb: recipe 'R' runs its work on this machine, not through executor 'slurm' (the machine profile's executor); use machine=local, or run wb itself inside a job
scaling exit 2
wb: recipe 'R' runs its work on this machine, not through executor 'slurm' (the machine profile's executor); use machine=local, or run wb itself inside a job
vep_breakdown exit 2

$ wb tune machine=slurm_cpu --dry-run -o $T/s_tune >/dev/null; echo "tune exit $?"; grep -c 'one Slurm allocation (one node' $T/s_tune/plan.md
tune exit 0
3

$ for r in matrix data profile profile_app_full; do wb $r machine=slurm_cpu --dry-run -o $T/s_$r -- true >/dev/null; echo "$r exit $?"; ls $T/s_$r/jobs | grep -c sbatch; done
matrix exit 0
2
data exit 0
1
profile exit 0
1
profile_app_full exit 0
1

What profile_app_full cannot submit, and a step of several tasks without Slurm, are refused before
anything is written.

$ wb profile_app_full machine=slurm_cpu tool.callgrind=true -o $T/s_cg; echo "exit $?"; test ! -e $T/s_cg && echo nothing written
wb: profile_app_full: the callgrind and cProfile passes run on this machine, not as Slurm jobs (the machine profile's executor is slurm): set tool.callgrind=false tool.cprofile=false
exit 2
nothing written

$ wb profile tasks=4 -o $T/s_t4 -- true; echo "exit $?"; test ! -e $T/s_t4 && echo nothing written
wb: profile: tasks=4 is one srun step of a Slurm job: needs a machine profile whose executor is slurm (machine=slurm_cpu)
exit 2
nothing written

$ wb profile ring_mib=3 -o $T/s_r3 -- true; echo "exit $?"; test ! -e $T/s_r3 && echo nothing written
wb: override 'ring_mib=3': ring_mib must be a power of two in 1..2048 or null, got integer 3
exit 2
nothing written

$ wb profile stack_size=100 -o $T/s_s100 -- true; echo "exit $?"; test ! -e $T/s_s100 && echo nothing written
wb: override 'stack_size=100': stack_size must be a multiple of 8 in 512..65528 or null, got integer 100
exit 2
nothing written

$ wb profile method=bpf stack_size=20000 -o $T/s_s20k -- true; echo "exit $?"; test ! -e $T/s_s20k && echo nothing written
wb: profile: stack_size=20000 with method=bpf: eBPF copies at most 16376 bytes per sample (method=perf_event copies more)
exit 2
nothing written

$ wb bench true runs=2 '.=v' -o $T/x20; echo "exit $?"; test ! -e $T/x20 && echo nothing written
wb: override '.=v': bad key '.'
exit 2
nothing written

$ wb bench true runs=2 'tool. name=v' -o $T/x21; echo "exit $?"; test ! -e $T/x21 && echo nothing written
wb: override 'tool. name=v': bad key 'tool. name'
exit 2
nothing written

$ wb demo '~trials' -o $T/x22; echo "exit $?"; test ! -e $T/x22 && echo nothing written
wb: override '~trials': trials, a setting the recipe needs (type integer>=1): set it instead of removing it
exit 2
nothing written

$ wb run recipes/profile_app_full.lua '~tool' -o $T/x23; echo "exit $?"; test ! -e $T/x23 && echo nothing written
wb: override '~tool': tool holds tool.alloc, a setting the recipe needs (type boolean): set it instead of removing it
exit 2
nothing written

$ mkdir -p $T/planted/logs && ln -s $T/victim $T/planted/logs/profile.stdout.log && echo precious > $T/victim && wb run recipes/profile.lua -o $T/planted -- echo overwritten; echo "exit $?"; cat $T/victim
wb: profile: /tmp/wbcli%.%w+/planted/logs/profile%.stdout%.log: a symbolic link: wb does not write through one (re)
exit 1
precious

$ (ulimit -f 1000; wb run recipes/profile.lua -o $T/efbig -- sh -c 'yes 0123456789 | head -c 3000000' >/dev/null); echo "exit $?"; grep -c '"status": "failed"' $T/efbig/manifest.json
wb: profile: /tmp/wbcli%.%w+/efbig/logs/profile%.stdout%.log: File too large (re)
exit 1
2

$ wb bench true runs=2 "+$(printf 'a.%.0s' $(seq 999))a=1" -o $T/x24; echo "exit $?"; test ! -e $T/x24 && echo nothing written
wb: override '+a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a... (2002 bytes)': bad key 'a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.... (1999 bytes)': 1000 levels deep, at most 32
exit 2
nothing written
