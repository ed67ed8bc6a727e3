-- Per-run overhead on /bin/true: wb bench vs hyperfine -N vs a bare posix_spawn+wait loop (the
-- floor), and agreement of the mean of `sleep 0.05` between wb and hyperfine.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local function elapsed(argv)
  local t = wb.clock.timer()
  local res = wb.check(wb.proc.run { argv = argv, stdout = "capture", stderr = "capture" })
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed: " .. res.stderr) end
  return t:elapsed(), res.stdout
end

return {
  title = "Per-run overhead and agreement with hyperfine",
  run = function(opts)
    if not wb.proc.which("hyperfine") then return { skipped = "hyperfine is not installed" } end
    local n = opts.smoke and 20 or 300
    local rounds = opts.smoke and 1 or 9
    local tmp = wb.fs.tmpdir("wbbench")
    local loop = tmp .. "/spawnloop"
    local cc = wb.proc.run { argv = { "cc", "-O2", "-o", loop, "bench/spawnloop.c" }, stderr = "capture" }
    if not cc.ok then wb.fail("cannot build bench/spawnloop.c: " .. cc.stderr) end
    local bin = require("wb.core").exe_path()
    -- Per-run cost is the marginal cost of one more run: (T(2n) - T(n)) / n for the whole
    -- invocation, so each tool's fixed costs (start-up, reports) drop out.
    local per = { wb = {}, hyperfine = {}, floor = {} }
    local function wb_bench(runs, r)
      return elapsed({ bin, "bench", "/bin/true", "runs=" .. runs, "warmup=0", "-o", tmp .. "/wb" .. r .. "_" .. runs })
    end
    local function hyperfine(runs)
      return elapsed({ "hyperfine", "-N", "--runs", tostring(runs), "--warmup", "0", "--style", "none", "/bin/true" })
    end
    for r = 1, rounds do -- interleaved rounds
      per.wb[#per.wb + 1] = (wb_bench(2 * n, r) - wb_bench(n, r)) / n
      per.hyperfine[#per.hyperfine + 1] = (hyperfine(2 * n) - hyperfine(n)) / n
      local _, out = elapsed({ loop, tostring(n), "/bin/true" })
      per.floor[#per.floor + 1] = tonumber(out)
    end
    local w, h, f = wb.stats.median(per.wb), wb.stats.median(per.hyperfine), wb.stats.median(per.floor)
    -- agreement on sleep 0.05
    local sruns = opts.smoke and 5 or 30
    elapsed({ bin, "bench", "sleep 0.05", "runs=" .. sruns, "-o", tmp .. "/agree" })
    local wb_mean = wb.json.read(tmp .. "/agree/summary.json").commands[1].stats.wall.mean
    elapsed({ "hyperfine", "-N", "--runs", tostring(sruns), "--style", "none", "--export-json", tmp .. "/hf.json", "sleep 0.05" })
    local hf_mean = wb.json.read(tmp .. "/hf.json").results[1].mean
    wb.fs.remove_tree(tmp)
    local diff = math.abs(wb_mean - hf_mean) / hf_mean
    return {
      command = "build/wb run bench/run.lua only=overhead",
      figures = {
        { name = "floor: posix_spawn + wait4 per run", value = lib.ms(f) },
        { name = "hyperfine -N per run ((T(2n) - T(n)) / n)", value = lib.ms(h) },
        { name = "wb bench per run ((T(2n) - T(n)) / n)", value = lib.ms(w) },
        { name = "wb / hyperfine per-run cost", value = lib.ratio(w / h), target = "≤ 1×", met = w <= h },
        { name = "wb / floor per-run cost", value = lib.ratio(w / f) },
        { name = "mean of `sleep 0.05`: wb vs hyperfine", value = string.format("%s vs %s (%.2f%% apart)", lib.ms(wb_mean), lib.ms(hf_mean), diff * 100), target = "within 3%", met = diff <= 0.03 },
      },
      notes = string.format("Invocations of %d and %d runs of /bin/true, %d interleaved rounds, medians. " ..
        "The difference of the two invocations' wall times over %d is each tool's marginal cost per run " ..
        "(spawn, wait, measurement, bookkeeping), without its start-up and report writing.", n, 2 * n, rounds, n),
    }
  end,
}
