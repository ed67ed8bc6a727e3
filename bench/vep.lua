-- VEP log breakdown on a large capture: wb's log mode against the awk implementation and `wc -l`.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local function mbps(bytes, seconds) return string.format("%.0f MB/s", bytes / seconds / 1e6) end

local function first_line(argv)
  local res = wb.proc.run { argv = argv, stdout = "capture", stderr = "null" }
  return res.ok and res.stdout:match("^[^\n]*") or "?"
end

local function measure(opts, dir)
  local log = dir .. "/vep.log"
  local size = opts.smoke and "5M" or "1G"
  local gen = wb.check(wb.proc.run {
    argv = { lib.example("vep_emit"), "--all", "--bytes", size, "--seed", "1", "-o", log },
    stdout = "null",
  })
  if not gen.ok then wb.fail("vep_emit failed") end
  local bytes = wb.check(wb.fs.stat(log)).size
  wb.check(wb.proc.run { argv = { "cat", log }, stdout = "null" }) -- warm the page cache
  local runs = 3
  local s = lib.interleave({
    { "wb", { lib.wb, "run", "recipes/vep_breakdown.lua", "log=" .. log, "-o", dir .. "/run" } },
    { "wb1", { lib.wb, "run", "recipes/vep_breakdown.lua", "log=" .. log, "threads=1", "-o", dir .. "/run1" } },
    { "awk", { "awk", "-f", "tests/integration/vep_breakdown.awk", log } },
    { "wc", { "wc", "-l", log } },
  }, runs, 0)
  local rules = require("wb.vep").RULES
  s.scan = {}
  for i = 1, runs do
    local t = wb.clock.timer()
    wb.check(wb.scan.file(log, { rules = rules }))
    s.scan[i] = t:elapsed()
  end
  local med = {}
  for k, v in pairs(s) do med[k] = wb.stats.median(v) end
  local vs_awk, vs_wc = med.awk / med.wb, med.wc / med.wb
  local threads = wb.check(wb.json.read(dir .. "/run/breakdown.json")).source.scan_threads
  return {
    command = "build/wb run bench/run.lua only=vep",
    figures = {
      { name = "log size", value = string.format("%.1f MiB", bytes / 1048576) },
      { name = string.format("wb vep_breakdown (log mode, %d scanning threads) median", threads),
        value = string.format("%s, %s", lib.ms(med.wb), mbps(bytes, med.wb)) },
      { name = "wb vep_breakdown (log mode, threads=1) median", value = string.format("%s, %s", lib.ms(med.wb1), mbps(bytes, med.wb1)) },
      { name = "wb.scan alone (the recipe's rules, in-process) median", value = string.format("%s, %s", lib.ms(med.scan), mbps(bytes, med.scan)) },
      { name = "awk median", value = string.format("%s, %s", lib.ms(med.awk), mbps(bytes, med.awk)) },
      { name = "`wc -l` median", value = string.format("%s, %s", lib.ms(med.wc), mbps(bytes, med.wc)) },
      { name = "wb speed / awk", value = lib.ratio(vs_awk), target = "≥ 10×", met = vs_awk >= 10 },
      { name = "wb speed / `wc -l`", value = lib.ratio(vs_wc), target = "≥ 0.3×", met = vs_wc >= 0.3 },
      { name = "wb threads=1 speed / `wc -l`", value = lib.ratio(med.wc / med.wb1) },
      { name = "wb.scan alone speed / `wc -l`", value = lib.ratio(med.wc / med.scan) },
    },
    notes = string.format("A seeded log from examples/vep_emit (--all --bytes %s). After one read to warm the page "
      .. "cache, %d runs of each, interleaved; medians of wall time from spawn to reap. wb runs the whole recipe "
      .. "(start-up, run directory, breakdown.json/md); awk is `%s` running tests/integration/vep_breakdown.awk, "
      .. "the independent implementation the integration test checks wb against. wb.scan alone is the recipe's scan "
      .. "timed inside this process, without start-up and run-directory costs. `wc -l` uses one CPU, wb one per "
      .. "CPU: on a busy machine its figure drops toward the threads=1 one.",
      size, runs, first_line({ "awk", "--version" })),
  }
end

return {
  title = "VEP log breakdown (targets: ≥ 10× awk, ≥ 0.3× `wc -l`)",
  run = function(opts)
    local dir = wb.check(wb.fs.tmpdir("wbbench"))
    local ok, result = pcall(measure, opts, dir)
    wb.fs.remove_tree(dir)
    if not ok then error(result, 0) end
    return result
  end,
}
