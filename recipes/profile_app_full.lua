-- Full application profile: timing trials, counters, on/off-CPU flame graphs, stages, bottleneck report.
--
--   wb profile_app_full                                  # the bundled example (make demo)
--   wb profile_app_full 'tool.command=[xz,-9,-k,-f,data.bin]' tool.trials=3
--   wb profile_app_full tool.callgrind=true --dry-run    # the plan and budget only
--   wb profile_app_full machine=slurm_cpu                # the trials and the capture as Slurm jobs
-- Writes into the run directory: summary.md, summary.json (schema wb.profile_app), report.html,
-- profiles/app.{oncpu,offcpu}.{folded,svg,speedscope.json}, trace.json, logs/, manifest.json. The
-- engine: lua/wb/appprofile.lua.
local wb = require "wb"
local app, json, opt = wb.appprofile, wb.json, wb.util.opt

-- The bottleneck model: CPU-bound at this share of CPU time in the wall time; how many functions
-- (on-CPU self time) and waits (blocked, by innermost frame) it weighs. tool.top: places named first.
local MODEL = { cpu_bound = 0.8, functions = 10, waits = 5 }
-- The report's tables: how many Python functions and cProfile rows.
local REPORT = { python = 10, cprofile = 15, processes = 5 } -- rows of the report's tables
-- The callgrind pass: functions listed, callgrind_annotate's --threshold, timeout as a multiple of tool.timeout.
local CALLGRIND = { top = 15, threshold = 100, timeout_factor = 50 }

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  config = "profile_app_full",
  executors = { "local", "slurm" }, -- on a Slurm profile the trials and the capture are an array job
  types = {
    ["tool.command"] = "list", ["tool.trials"] = "integer>=1", ["tool.warmup"] = "integer>=0",
    ["tool.timeout"] = "number>0|null", ["tool.freq"] = "integer>=1", ["tool.top"] = "integer>=1",
    ["tool.counters"] = "boolean", ["tool.oncpu"] = "boolean", ["tool.offcpu"] = "boolean",
    ["tool.callgrind"] = "boolean", ["tool.cprofile"] = "boolean", ["tool.memory"] = "boolean", ["tool.alloc"] = "boolean", ["tool.max_subprocess_runs"] = "integer>=0|null",
    ["tool.max_major_profiler_runs"] = "integer>=0|null", ["tool.allow_over_budget"] = "boolean",
  },
  run = function(ctx)
    local tool = ctx.cfg.tool
    local slurm = ctx.cfg.machine.executor == "slurm"
    if slurm and (tool.callgrind or tool.cprofile) then
      wb.usage("profile_app_full: the callgrind and cProfile passes run on this machine, not as Slurm jobs "
        .. "(the machine profile's executor is slurm): set tool.callgrind=false tool.cprofile=false", 0)
    end
    local c = wb.campaign.open(ctx, { profilers = wb.capture.profilers(), inputs = {} })
    local ex = wb.executor.new(c, ctx.cfg.machine)
    local argv = app.argv(tool.command, c.dir)
    local summary_path = tool.summary_path ~= wb.null and tostring(tool.summary_path):gsub("{run_dir}", c.dir) or nil
    local passes = { capture = tool.counters or tool.oncpu or tool.offcpu,
      callgrind = tool.callgrind and app.callgrind_tools() ~= nil,
      cprofile = tool.cprofile and wb.cprofile.python_of(argv) ~= nil }
    if app.plan(c, tool, argv, passes) then
      if slurm then ex:run_cases(app.cases(tool, argv, summary_path, passes), { one_at_a_time = true }) end
      return 0
    end
    local r = { argv = argv }
    if slurm then
      r.trials, r.capture = app.run_cases(c, ex, tool, argv, summary_path, passes)
    else
      r.trials = app.trials(c, tool, argv, summary_path)
      r.capture = passes.capture and app.capture(c, tool, argv, summary_path) or nil
    end
    r.callgrind = tool.callgrind and app.callgrind(c, tool, argv, CALLGRIND) or nil
    r.cprofile = tool.cprofile and wb.cprofile.run(c, argv, { cwd = opt(tool.cwd), env = tool.env, timeout = tool.timeout })
    r.bottlenecks = app.bottlenecks(r.trials, r.capture, { cpu_bound = MODEL.cpu_bound, functions = MODEL.functions,
      waits = MODEL.waits, top = tool.top })
    r.previous, r.previous_text = c:compare_previous(), c:previous_text()
    local md = app.markdown(r, REPORT)
    c:write_json("summary.json", app.summary(r))
    c:write("summary.md", md)
    c:write("report.html", app.html(md, r))
    c:write("trace.json", wb.flame.trace(wb.flame.trace_from_runs(c.manifest.runs), { process_name = "wb profile_app_full" }))
    c.manifest.profilers = json.array(wb.capture.profilers())
    local result = c:finish()
    io.write(md)
    io.write("\nreport: ", c.dir, "/report.html\n")
    return result.status == "complete" and 0 or 1
  end,
}
