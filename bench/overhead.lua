-- Per-run overhead on /bin/true: wb bench vs hyperfine -N vs a bare posix_spawn+wait loop (the
-- floor), and agreement of the mean of `sleep 0.05` between wb and hyperfine.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

-- wall, cpu = measured(argv, file) : the invocation's wall time and, when perf is installed, the
-- CPU time of the tool's own process (perf stat --no-inherit task-clock: its children excluded)
local function measured(argv, file)
  local perf = wb.proc.which("perf")
  if not perf then return select(2, lib.run(argv)), nil end
  local _, wall = lib.run({ perf, "stat", "-x,", "-e", "task-clock", "--no-inherit", "-o", file, "--", table.unpack(argv) })
  local ms = (wb.fs.read(file) or ""):match("([%d.]+),msec,task%-clock")
  return wall, ms and tonumber(ms) / 1000
end

return {
  title = "Per-run overhead and agreement with hyperfine",
  run = function(opts)
    if not wb.proc.which("hyperfine") then return { skipped = "hyperfine is not installed" } end
    local n = opts.smoke and 20 or 500
    local rounds = opts.smoke and 1 or 9
    local tmp = wb.fs.tmpdir("wbbench")
    local loop = lib.cc("bench/spawnloop.c", tmp)
    -- Per-run cost is the marginal cost of one more run: (T(2n) - T(n)) / n for the whole
    -- invocation, so each tool's fixed costs (start-up, reports) drop out.
    -- wb's run directories go to a tmpfs when there is one: the fsyncs of its reports are a fixed
    -- cost, but their jitter on a disk would swamp a per-run difference of microseconds
    local shm = wb.fs.exists("/dev/shm") and wb.fs.tmpdir("wbbench", "/dev/shm") or nil
    local out = shm or tmp
    local stat = tmp .. "/perf.txt"
    local function wb_bench(runs, r)
      return measured({ lib.wb, "bench", "/bin/true", "runs=" .. runs, "warmup=0", "-o", out .. "/wb" .. r .. "_" .. runs }, stat)
    end
    local function hyperfine(runs)
      return measured({ "hyperfine", "-N", "--runs", tostring(runs), "--warmup", "0", "--style", "none", "/bin/true" }, stat)
    end
    -- one round: the marginal wall and own-CPU cost per run of a tool
    local function marginal(tool, r)
      local w1, c1 = tool(n, r)
      local w2, c2 = tool(2 * n, r)
      return (w2 - w1) / n, c1 and c2 and (c2 - c1) / n
    end
    local wall = { wb = {}, hyperfine = {}, floor = {} }
    local cpu = { wb = {}, hyperfine = {} }
    local wall_ratio, cpu_ratio = {}, {}
    for r = 1, rounds do -- interleaved rounds, the tools' order alternating
      local ww, wc, hw, hc
      if r % 2 == 1 then
        ww, wc = marginal(wb_bench, r)
        hw, hc = marginal(hyperfine, r)
      else
        hw, hc = marginal(hyperfine, r)
        ww, wc = marginal(wb_bench, r)
      end
      wall.wb[r], wall.hyperfine[r], wall_ratio[r] = ww, hw, ww / hw
      if wc and hc then cpu.wb[#cpu.wb + 1], cpu.hyperfine[#cpu.hyperfine + 1], cpu_ratio[#cpu_ratio + 1] = wc, hc, wc / hc end
      wall.floor[r] = tonumber(lib.run({ loop, tostring(n), "/bin/true" }).stdout)
    end
    local median = wb.stats.median
    local w, h, f = median(wall.wb), median(wall.hyperfine), median(wall.floor)
    local function ci(xs) return wb.stats.bootstrap_ci(xs, { stat = "median", resamples = 2000, seed = 1 }) end
    local wr, wr_lo, wr_hi = median(wall_ratio), ci(wall_ratio)
    -- agreement on sleep 0.05
    local sruns = opts.smoke and 5 or 30
    lib.run({ lib.wb, "bench", "sleep 0.05", "runs=" .. sruns, "-o", tmp .. "/agree" })
    local wb_mean = wb.json.read(tmp .. "/agree/summary.json").commands[1].stats.wall.mean
    lib.run({ "hyperfine", "-N", "--runs", tostring(sruns), "--style", "none", "--export-json", tmp .. "/hf.json", "sleep 0.05" })
    local hf_mean = wb.json.read(tmp .. "/hf.json").results[1].mean
    -- and on /bin/true, where what the clock includes (the spawn, the exec) is most of the figure
    lib.run({ lib.wb, "bench", "/bin/true", "runs=" .. n, "-o", tmp .. "/true" })
    local wb_true = wb.json.read(tmp .. "/true/summary.json").commands[1].stats.wall.mean
    lib.run({ "hyperfine", "-N", "--runs", tostring(n), "--style", "none", "--export-json", tmp .. "/hf_true.json", "/bin/true" })
    local hf_true = wb.json.read(tmp .. "/hf_true.json").results[1].mean
    wb.fs.remove_tree(tmp)
    if shm then wb.fs.remove_tree(shm) end
    local diff = math.abs(wb_mean - hf_mean) / hf_mean
    local figures = {
      { name = "floor: posix_spawn + wait4 per run", value = lib.ms(f) },
      { name = "hyperfine -N per run ((T(2n) - T(n)) / n)", value = lib.ms(h) },
      { name = "wb bench per run ((T(2n) - T(n)) / n)", value = lib.ms(w) },
      { name = "wb / hyperfine per-run wall cost (median of per-round ratios, 95% CI)",
        value = string.format("%s (%.2f–%.2f)", lib.ratio(wr), wr_lo, wr_hi), target = "≤ 1×", met = wr <= 1 },
      { name = "wb / floor per-run wall cost", value = lib.ratio(w / f) },
    }
    if #cpu_ratio > 0 then
      local cr, cr_lo, cr_hi = median(cpu_ratio), ci(cpu_ratio)
      figures[#figures + 1] = { name = "hyperfine -N own CPU per run (perf stat --no-inherit)", value = string.format("%.1f µs", median(cpu.hyperfine) * 1e6) }
      figures[#figures + 1] = { name = "wb bench own CPU per run", value = string.format("%.1f µs", median(cpu.wb) * 1e6) }
      figures[#figures + 1] = { name = "wb / hyperfine own CPU per run (median of per-round ratios, 95% CI)",
        value = string.format("%s (%.2f–%.2f)", lib.ratio(cr), cr_lo, cr_hi) }
    end
    figures[#figures + 1] = { name = "mean of `sleep 0.05`: wb vs hyperfine", value = string.format("%s vs %s (%.2f%% apart)", lib.ms(wb_mean), lib.ms(hf_mean), diff * 100), target = "within 3%", met = diff <= 0.03 }
    figures[#figures + 1] = { name = "mean of `/bin/true`: wb vs hyperfine", value = string.format("%s vs %s (%.1f%% apart)", lib.ms(wb_true), lib.ms(hf_true),
      math.abs(wb_true - hf_true) / hf_true * 100) }
    return {
      command = "build/wb run bench/run.lua only=overhead",
      figures = figures,
      notes = string.format("Invocations of %d and %d runs of /bin/true, %d rounds with the tools' order alternating. " ..
        "The difference of the two invocations' wall times over %d is each tool's marginal cost per run " ..
        "(spawn, wait, measurement, bookkeeping), without its start-up and report writing; the same difference of " ..
        "the tool's own CPU time (its children excluded) is the work it adds to each run. wb writes its run " ..
        "directories to /dev/shm here, so that the jitter of its reports' fsyncs stays out of the difference. " ..
        "Per-run wall costs differ between rounds by several percent on this shared machine; the CIs say how far " ..
        "the medians can be trusted.", n, 2 * n, rounds, n),
    }
  end,
}
