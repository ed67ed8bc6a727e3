-- Runs and wall time to a winner: `wb tune` against an exhaustive grid with the same number of
-- trials per candidate, on the same program (tests/fixtures/tunable.c: its runtime a known
-- function of two parameters, 24 candidates, the best 5% ahead of the next three; the default
-- 1.5 times the best's time). The grid runs every candidate as many times as the race ran its
-- winner, in blocks of a random order, and picks the fastest mean: what people do by hand.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local AXES_A, AXES_B = { 1, 2, 3, 4 }, { 1, 2, 3, 4, 5, 6 }

return {
  title = "Tuning: runs and wall time to a winner, wb tune against an exhaustive grid (targets: screening at most half the grid's runs, the same winner)",
  run = function(opts)
    local dir = assert(wb.fs.tmpdir("wbbench", "/tmp"))
    local program = lib.cc("tests/fixtures/tunable.c", dir)
    local base, slope = opts.smoke and 5 or 30, 0.05
    assert(wb.fs.mkdir_p(dir .. "/profiles"))
    assert(wb.fs.write(dir .. "/profiles/tune_bench.yaml", string.format([[
tune:
  axes: {a: [1, 2, 3, 4], b: [1, 2, 3, 4, 5, 6]}
  default: {a: 1, b: 4}
  command: [%s, --a, "{a}", --b, "{b}", --base, "%g", --slope, "%g"]
  max_blocks: %d
  finalists: 3
  finalist_rounds: 10
  headline_trials: 10
]], program, base, slope, opts.smoke and 12 or 40)))
    local _, race_wall = lib.run({ lib.wb, "run", "recipes/tune.lua", "--config-name", "tune_bench", "-o", dir .. "/race" },
      { WB_PROFILE_PATH = dir .. "/profiles", WB_NO_PROGRESS = "1" })
    local s = assert(wb.json.read(dir .. "/race/summary.json"))
    local per_candidate = 0
    for _, l in ipairs(s.ledger.candidates) do per_candidate = math.max(per_candidate, l.trials) end
    -- the grid: every candidate per_candidate times, blocks in a random order, the fastest mean
    local cands = {}
    for _, a in ipairs(AXES_A) do
      for _, b in ipairs(AXES_B) do cands[#cands + 1] = { a = a, b = b, times = {} } end
    end
    local t = wb.clock.timer()
    math.randomseed(1)
    for _ = 1, per_candidate do
      for i = #cands, 2, -1 do
        local j = math.random(i)
        cands[i], cands[j] = cands[j], cands[i]
      end
      for _, c in ipairs(cands) do
        local r = wb.proc.run { argv = { program, "--a", tostring(c.a), "--b", tostring(c.b), "--base", tostring(base),
          "--slope", tostring(slope) } }
        c.times[#c.times + 1] = r.wall
      end
    end
    local grid_wall = t:elapsed()
    local best, default
    for _, c in ipairs(cands) do
      c.mean = wb.stats.mean(c.times)
      if not best or c.mean < best.mean then best = c end
      if c.a == 1 and c.b == 4 then default = c end
    end
    local grid_runs = #cands * per_candidate
    local race_runs = s.ledger.spent.runs
    wb.fs.remove_tree(dir)
    local truth = 1 / (1 + slope * 10) -- the best's time over the default's
    local screening = s.ledger.stages[1].runs
    return {
      command = "build/wb run bench/run.lua only=tune",
      figures = {
        { name = "runs: wb tune's screening / the grid", value = string.format("%d / %d = %.2f",
          screening, grid_runs, screening / grid_runs), target = "≤ 0.5", met = screening / grid_runs <= 0.5 },
        { name = "runs to a winner: wb tune (all three stages) / the grid", value = string.format("%d / %d = %.2f",
          race_runs, grid_runs, race_runs / grid_runs) },
        { name = "wall time: wb tune / the grid", value = string.format("%s / %s = %.2f",
          wb.util.format_seconds(race_wall), wb.util.format_seconds(grid_wall), race_wall / grid_wall) },
        { name = "winner: wb tune, the grid (truth a=2,b=1)", value = string.format("%s, a=%d,b=%d", s.winner_name,
          best.a, best.b), target = "both a=2,b=1", met = s.winner_name == "a=2,b=1" and best.a == 2 and best.b == 1 },
        { name = "the winner's time over the default's: wb's headline (new trials), the grid's best mean (truth)",
          value = string.format("%.3f [%.3f, %.3f], %.3f (%.3f)", s.headline ~= wb.null and s.headline.ratio or 0,
            s.headline ~= wb.null and s.headline.ratio_lower or 0, s.headline ~= wb.null and s.headline.ratio_upper or 0,
            best.mean / default.mean, truth) },
      },
      notes = string.format("The grid ran each of the 24 candidates %d times (the race's most trials of one candidate). " ..
        "Each trial sleeps %g ms × (1 + %g ((a-2)² + (b-1)²)); wb's run time includes its manifest journal per trial " ..
        "(each trial's start and end written and fsynced). Load average at the end: %s.", per_candidate, base, slope, lib.loadavg()),
    }
  end,
}
