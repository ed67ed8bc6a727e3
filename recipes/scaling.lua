-- Strong and weak scaling curves: speedup, parallel efficiency and Karp–Flatt serial fraction.
--
--   wb scaling                                   # strong scaling of the bundled workload, 1 2 4 8 workers
--   wb scaling mode=weak size=200 'workers=[1,2,4]'
--   wb scaling 'command=[./solver, -t, "{workers}", -n, "{size}"]' size=4096 runs=5
--
-- Every point runs the command template with {workers} and {size} substituted (weak scaling:
-- size = base size × workers / smallest worker count); all points are measured by wb.bench in
-- one interleaved pass. Strong: speedup S = T(p0)/T(p), efficiency S/(p/p0). Weak: efficiency
-- E = T(p0)/T(p) (ideal 1), scaled speedup (p/p0)·E. Intervals are percentile bootstraps of the
-- ratio of means. Writes scaling.json (wb.scaling v1), scaling.md, scaling.svg, summary.json and
-- report.html into the run directory and prints the table. See docs/scaling.md; the engine is
-- wb.scaling. Yours to change here: the defaults, the interval's level and resamples.
local wb = require "wb"
local scaling = require "wb.scaling"

local CI = { ci_level = 0.95, resamples = 2000 } -- the bootstrap intervals of the speedups

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  defaults = {
    mode = "strong",
    workers = { 1, 2, 4, 8 },
    size = 400,
    command = { "${wb:examples}/scale_work", "--workers", "{workers}", "--size", "{size}" },
    runs = 10,
    warmup = 1,
    seed = 1,
    timeout = wb.null,
  },
  types = { mode = "strong|weak", workers = "list|integer>=1", size = "integer>=1", command = "list",
    runs = "integer>=1", warmup = "integer>=0", seed = "integer", timeout = "number>0|null" },
  run = function(ctx)
    local cfg = ctx.cfg
    local workers = scaling.check(cfg)
    local commands, sizes = scaling.commands(cfg, workers)
    local c = wb.campaign.open(ctx)
    local names = {}
    for i, cmd in ipairs(commands) do names[i] = cmd.name end
    c:declare(names)
    if c:plan { sections = { { name = cfg.mode .. " scaling", cases = commands,
      subprocess_runs = #commands * (cfg.runs + cfg.warmup) } } } then
      return 0
    end
    local summary = wb.bench.run { commands = commands, runs = cfg.runs, warmup = cfg.warmup,
      order = "interleaved", seed = cfg.seed, timeout = wb.util.opt(cfg.timeout) }
    local doc = scaling.document(cfg, workers, sizes, summary, CI)
    for i, pt in ipairs(doc.points) do
      local rec = c:record("workers=" .. pt.workers)
      rec.status = "success"
      rec.command_arguments = pt.argv
      rec.metrics = { wall_mean_seconds = pt.mean, speedup = pt.speedup, efficiency = pt.efficiency }
      -- each run's interference evidence beside its wall time (a comparison of two scaling runs
      -- judges net wall)
      rec.samples = wb.interference.record_samples({ wall_mean_seconds = pt.samples }, summary.commands[i].samples)
    end
    local report = scaling.report(cfg, doc, summary)
    c:write_json("scaling.json", doc)
    c:write("scaling.md", report.md)
    c:write("scaling.svg", report.speedup_svg .. "\n")
    c:write("summary.json", wb.report.json(summary))
    c:write("report.html", report.html)
    c:finish()
    io.write(report.md, "\nreport: ", c.dir, "/report.html\n")
    return 0
  end,
}
