-- Config composition: `wb run X --cfg job` with 5 groups and 20 overrides against `wb version`.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local OVERRIDES = {
  "machine.cpus=4", "machine.mem=8G", "dataset=chr22", "dataset.samples=5000", "workload.chunk_size=4096",
  "workload.threads=2", "telemetry.events=false", "telemetry.offcpu=true", "sweep.threads=[1,2]",
  "sweep.chunk=[1024,2048,4096]", "tool.trials=5", "tool.warmup=2", "tool.include_cold=false",
  "tool.note='a, b'", "+tool.extra=1", "+tool.label=bench", "telemetry.json_summary_path=out/x.json",
  "dataset.variants=2000000", "machine.executor=local", "~telemetry.counters",
}

return {
  title = "Config composition (target: `--cfg job` with 5 groups + 20 overrides ≤ 2× `wb version`)",
  run = function(opts)
    local runs = opts.smoke and 5 or 200
    local argv = { "env", "WB_PROFILE_PATH=bench/fixtures/profiles", lib.wb, "run", "bench/fixtures/cfg_recipe.lua", "--cfg", "job" }
    for _, o in ipairs(OVERRIDES) do argv[#argv + 1] = o end
    local s = lib.interleave({
      { "version", { "env", "WB_PROFILE_PATH=bench/fixtures/profiles", lib.wb, "version" } },
      { "compose", argv },
    }, runs)
    local v, c = wb.stats.median(s.version), wb.stats.median(s.compose)
    return {
      command = "build/wb run bench/run.lua only=config",
      figures = {
        { name = "`wb version` median", value = lib.ms(v) },
        { name = "`--cfg job`, 5 groups, 20 overrides, median", value = lib.ms(c) },
        { name = "ratio", value = lib.ratio(c / v), target = "≤ 2×", met = c / v <= 2 },
      },
      notes = string.format("%d runs each, interleaved; both through `env` so the spawn path is the same.", runs),
    }
  end,
}
