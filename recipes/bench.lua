-- Time commands like hyperfine: interleaved runs, statistics, ratios with confidence intervals.
--
--   wb bench 'sleep 0.05' 'sleep 0.1' runs=20 warmup=2
--   wb bench 'xz -T{threads} -k -f data' scan.threads=1,2,4 shell=true
--   wb bench ./app alloc_runs=3          -- and the bytes it allocates, counted in 3 more runs
-- Writes summary.json (+ .md, .csv, hyperfine.json, report.html) into the run directory and
-- prints the Markdown summary. Exit 1 if a command fails (unless ignore_failure=true). With
-- confirm=true (--confirm) the changes found against the previous compatible run are re-run, its
-- commands and these interleaved (wb.confirm): a change the re-run does not bear out no longer
-- counts.
local wb = require "wb"

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  defaults = {
    runs = wb.null, min_runs = 10, min_time = 3.0, max_runs = wb.null, warmup = 0, alloc_runs = 0,
    setup = wb.null, prepare = wb.null, conclude = wb.null, cleanup = wb.null,
    ignore_failure = false, shell = false, order = "interleaved", seed = 1,
    reference = wb.null, timeout = wb.null, scan = {}, commands = wb.json.array(), threshold = 0.01, confirm = false,
  },
  open = { "scan" }, -- scan.PARAM=values names the parameter
  types = {
    runs = "integer>=1|null", min_runs = "integer>=1", min_time = "number>=0", max_runs = "integer>=1|null",
    warmup = "integer>=0", alloc_runs = "integer>=0", setup = "string|null", prepare = "string|null", conclude = "string|null",
    cleanup = "string|null", ignore_failure = "boolean", shell = "boolean", order = "interleaved|random",
    seed = "integer", reference = "string|integer|null", timeout = "number>0|null", scan = "mapping",
    commands = "list", threshold = "number>=0", confirm = "boolean",
  },
  run = function(ctx)
    local cfg = ctx.cfg
    local opt = wb.util.opt
    local commands = {}
    for _, c in ipairs(cfg.commands) do commands[#commands + 1] = c end
    for _, c in ipairs(ctx.args) do commands[#commands + 1] = c end
    if #commands == 0 then wb.usage("bench: which commands? e.g. wb bench 'sleep 0.1' 'sleep 0.2'", 0) end
    local spec = {
      commands = commands, runs = opt(cfg.runs), min_runs = cfg.min_runs, min_time = cfg.min_time,
      max_runs = opt(cfg.max_runs), warmup = cfg.warmup, alloc_runs = cfg.alloc_runs, setup = opt(cfg.setup), prepare = opt(cfg.prepare),
      conclude = opt(cfg.conclude), cleanup = opt(cfg.cleanup), ignore_failure = cfg.ignore_failure,
      shell = cfg.shell, order = cfg.order, seed = cfg.seed, reference = opt(cfg.reference),
      timeout = opt(cfg.timeout), scan = cfg.scan, threshold = cfg.threshold,
    }
    local plan = wb.bench.plan(spec) -- also checks the commands before the run directory is made
    local c = wb.campaign.open(ctx)
    wb.bench.declare(c, plan)
    if c:plan { sections = { plan } } then return 0 end
    local summary = wb.bench.run(spec)
    wb.bench.record(c, summary)
    local previous, previous_text = c:compare_previous(), c:previous_text()
    if previous and cfg.confirm then -- the changes re-run, the previous run's commands and these interleaved
      local base = wb.json.read(previous.base.path:gsub("manifest%.json$", "summary.json"))
      wb.confirm.run(previous, base, summary, { warmup = cfg.warmup, timeout = opt(cfg.timeout) })
    end
    wb.check(wb.report.write_all(c.dir, summary, { previous = previous, previous_text = previous_text }))
    c:finish()
    io.write(wb.report.markdown(summary, { previous = previous, previous_text = previous_text, terminal = true }))
    io.write("\nreport: ", c.dir, "/report.html\n")
    return 0
  end,
}
