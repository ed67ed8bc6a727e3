-- Time commands like hyperfine: interleaved runs, statistics, ratios with confidence intervals.
--
--   wb bench 'sleep 0.05' 'sleep 0.1' runs=20 warmup=2
--   wb bench 'xz -T{threads} -k -f data' scan.threads=1,2,4 shell=true
-- Writes summary.json (+ .md, .csv, hyperfine.json, report.html) into the run directory and
-- prints the Markdown summary. Exit 1 if a command fails (unless ignore_failure=true).
local wb = require "wb"

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  defaults = {
    runs = wb.null, min_runs = 10, min_time = 3.0, max_runs = wb.null, warmup = 0,
    setup = wb.null, prepare = wb.null, conclude = wb.null, cleanup = wb.null,
    ignore_failure = false, shell = false, order = "interleaved", seed = 1,
    reference = wb.null, timeout = wb.null, scan = {}, commands = {},
  },
  open = { "scan" }, -- scan.PARAM=values names the parameter
  types = {
    runs = "integer>=1|null", min_runs = "integer>=1", min_time = "number>=0", max_runs = "integer>=1|null",
    warmup = "integer>=0", setup = "string|null", prepare = "string|null", conclude = "string|null",
    cleanup = "string|null", ignore_failure = "boolean", shell = "boolean", order = "interleaved|random",
    seed = "integer", reference = "string|integer|null", timeout = "number>0|null", scan = "mapping",
    commands = "list",
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
      max_runs = opt(cfg.max_runs), warmup = cfg.warmup, setup = opt(cfg.setup), prepare = opt(cfg.prepare),
      conclude = opt(cfg.conclude), cleanup = opt(cfg.cleanup), ignore_failure = cfg.ignore_failure,
      shell = cfg.shell, order = cfg.order, seed = cfg.seed, reference = opt(cfg.reference),
      timeout = opt(cfg.timeout), scan = cfg.scan,
    }
    local plan = wb.bench.plan(spec) -- also checks the commands before the run directory is made
    local c = wb.campaign.open(ctx)
    local names = {}
    for i, cs in ipairs(plan.cases) do names[i] = cs.name end
    c:declare(names)
    if c:plan { sections = { plan } } then return 0 end
    local summary = wb.bench.run(spec)
    for _, cmd in ipairs(summary.commands) do
      local rec = c:record(cmd.name)
      rec.status = "success"
      rec.command_arguments = cmd.argv
      local st = cmd.stats
      rec.metrics = {
        wall_mean_seconds = st.wall.mean, wall_median_seconds = st.wall.median,
        wall_min_seconds = st.wall.min, wall_max_seconds = st.wall.max,
        user_mean_seconds = st.user.mean, sys_mean_seconds = st.sys.mean, maxrss_kb_mean = st.maxrss_kb.mean,
      }
      -- the samples every tested metric needs, once each (wall_mean_seconds and
      -- wall_median_seconds share wall_seconds)
      rec.samples = { wall_seconds = cmd.samples.wall, user_seconds = cmd.samples.user,
        sys_seconds = cmd.samples.sys, maxrss_kb = cmd.samples.maxrss_kb }
      rec.maxrss_upper_bound = cmd.maxrss_upper_bound
    end
    local previous = c:compare_previous()
    wb.check(wb.report.write_all(c.dir, summary, { previous = previous }))
    c:finish()
    io.write(wb.report.markdown(summary, { previous = previous, terminal = true }))
    io.write("\nreport: ", c.dir, "/report.html\n")
    return 0
  end,
}
