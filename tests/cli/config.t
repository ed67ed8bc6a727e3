# Config composition on the command line: --cfg job, --cfg all, --info defaults, overrides and
# their errors. Commands run in $T, which links tests/, so the repository's ./profiles stay out.

$ ln -s "$PWD/tests" "$T/tests"

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua --cfg job
tool:
  source: recipe
  trials: 3
  ratio: 0.5
  include_cold: true
  name: demo
  flag: 1
  chunk: 8192
  label: chunk-8192
  threads:
    - 1
    - 2
  data_dir: data
machine:
  executor: local
  cpus: 2
workload:
  name: demo
  chunk_size: 8192
  repeat: 2
telemetry:
  output_parent: out
  json_summary_path: null

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main WB_TEST_DATA_DIR=/data wb run tests/fixtures/recipes/cfg.lua --cfg job machine=slurm_cpu workload=big tool.trials=5 tool.include_cold=false 'tool.threads=[1,2,4,8]' telemetry.json_summary_path=out/run.json "+tool.note='a, b'" '~tool.flag' workload.chunk_size=1024
tool:
  source: recipe
  trials: 5
  ratio: 0.5
  include_cold: false
  name: demo
  chunk: 1024
  label: chunk-1024
  threads:
    - 1
    - 2
    - 4
    - 8
  data_dir: /data
  note: a, b
machine:
  executor: slurm
  partition: cpu
  cpus: 8
workload:
  name: big
  chunk_size: 1024
  repeat: 2
telemetry:
  output_parent: out
  json_summary_path: out/run.json

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua --info defaults
recipe: defaults  (tests/fixtures/recipes/cfg.lua)
machine: local  (tests/fixtures/profiles/main/machine/local.yaml)
workload: demo  (tests/fixtures/profiles/main/workload/demo.yaml)
telemetry: local  (tests/fixtures/profiles/main/telemetry/local.yaml)
config: cfg  (tests/fixtures/profiles/main/cfg.yaml)

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua --info defaults machine=cluster telemetry=null
recipe: defaults  (tests/fixtures/recipes/cfg.lua)
machine/node: big  (tests/fixtures/profiles/main/machine/node/big.yaml)
machine: cluster  (tests/fixtures/profiles/main/machine/cluster.yaml)
workload: demo  (tests/fixtures/profiles/main/workload/demo.yaml)
telemetry: null  (disabled)
config: cfg  (tests/fixtures/profiles/main/cfg.yaml)

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua --cfg all -o runs/x tool.trials=4
tool:
  source: recipe
  trials: 4
...
wb:
  version: 0.1.0
  search_path:
    - ./profiles
    - tests/fixtures/profiles/main
...
  overrides:
    - tool.trials=4
  run:
    output: runs/x
    dry_run: false
    resume: null
    baseline: null
    multirun: false
    verbose: false

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/alt:tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua --info defaults
recipe: defaults  (tests/fixtures/recipes/cfg.lua)
config: cfg  (tests/fixtures/profiles/alt/cfg.yaml)

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua machine=slurm_cpu tool.trials=7
trials=7	executor=slurm	source=recipe

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua machine=nosuch
wb: override 'machine=nosuch': unknown option 'nosuch' for group 'machine' (available: cluster, local, slurm_cpu, slurm_gpu)
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua tool.trials=abc
wb: override 'tool.trials=abc': type mismatch: tool.trials is an integer (tests/fixtures/profiles/main/cfg.yaml:9), got string 'abc'
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua tool.trails=5
wb: override 'tool.trails=5': unknown key 'tool.trails' (use +tool.trails=5 to add it); did you mean 'tool.trials'?
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua 'tool.threads=[1,2'
wb: override 'tool.threads=[1,2': malformed list: missing ']'
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua tool.include_cold=maybe --cfg job
wb: override 'tool.include_cold=maybe': type mismatch: tool.include_cold is a boolean (tests/fixtures/profiles/main/cfg.yaml:11), got string 'maybe'
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua '+tool.out=${nosuch.key}'
wb: override '+tool.out=${nosuch.key}': interpolation ${nosuch.key}: no such key 'nosuch.key'
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg.lua tool.trials=1,2
wb: override 'tool.trials=1,2': several values (1,2) need --multirun (quote the value to keep its commas)
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main wb run tests/fixtures/recipes/cfg_broken.lua
wb: tests/fixtures/profiles/main/errors/missing_ref.yaml:5: interpolation ${workload.nosuch}: no such key 'workload.nosuch'
[2]

$ cd $T && WB_PROFILE_PATH=tests/fixtures/profiles/main/workload wb run tests/fixtures/recipes/cfg.lua
wb: no profile 'cfg' %(looked in %./profiles, tests/fixtures/profiles/main/workload.*%) (re)
[2]
