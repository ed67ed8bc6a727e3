-- Profile a command and its child processes: counters, on-CPU and off-CPU flame graphs, top functions.
--
--   wb profile -- ./app --threads 4
--   wb profile freq=999 offcpu=false -- ./app
--   wb profile method=perf_event -- ./app        (auto | bpf | perf_event | perf_cli)
--   wb profile stdout=null -- ./server           (the command's stdout: tee | inherit | null | FILE)
--   wb profile unwind=fp -- ./app                 (frame pointers only; by default user stacks are walked with CFI)
--   wb profile unwind=fp stack_entries=65536 -- ./app (frame pointers: more stack-map buckets, fewer collisions)
--   wb profile method=perf_event stack_size=65528 -- ./app (stack bytes per sample; default 16376 eBPF, 8192 perf_event)
--   wb profile alloc=true -- ./app                (sampled allocation stacks: profiles/profile.alloc*)
--   wb profile stage_pattern='stage=(%S+) seconds=([%d.]+)' -- ./app   (stage bands on the memory chart)
--   wb profile machine=slurm_cpu -- ./app        (the capture is a Slurm job; docs/slurm.md)
--   wb profile machine=slurm_cpu tasks=4 -- ./app (an srun step of 4 tasks: per-task and merged profiles)
-- Profiling until Ctrl-C: the first Ctrl-C stops the command and the profile and report are still
-- written (exit 0); a second Ctrl-C aborts (exit 130).
-- Writes into the run directory: profiles/profile.{oncpu,offcpu}.{folded,svg,speedscope.json},
-- profiles/profile.counters.json, profiles/profile.trace.json, report.html, the command's output in
-- logs/, and the profilers found on this machine in manifest.json; with a previous profile of the
-- same command beside it (or --baseline DIR), differential flame graphs profile.*.diff.svg, shown in
-- report.html. Prints
-- the counters and the top functions with their share of samples. Exit 1 when the command fails.
local wb = require "wb"
local capture = require "wb.capture"
local profile = require "wb.profile"
local view = require "wb.capture_report"
local tasks = require "wb.slurm_capture"

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  executors = { "local", "slurm" }, -- on a Slurm profile the capture is a job
  defaults = {
    tasks = 1, -- tasks of the step (Slurm): one profile per task and a merged one
    freq = 99, counters = true, oncpu = true, offcpu = true, method = "auto", top = 15,
    shell = false, timeout = wb.null, root = "auto", stdout = "tee", unwind = "auto", stack_size = wb.null,
    stack_entries = 16384, count_entries = 16384, ring_mib = wb.null, alloc = false, alloc_interval = 524288, stage_pattern = wb.null,
  },
  types = {
    freq = "integer>=1", counters = "boolean", oncpu = "boolean", offcpu = "boolean",
    method = "auto|bpf|perf_event|perf_cli", top = "integer>=1", shell = "boolean", timeout = "number>0|null",
    stdout = "null|string", -- tee (the terminal and logs/profile.stdout.log), inherit, null, or a file
    unwind = "auto|dwarf|fp",
    stack_size = "integer 512.." .. require("wb.capture_unwind").STACK_MAX .. " %8|null", -- null: the method's
    -- (16376 eBPF, 8192 perf_event)
    stack_entries = "integer>=64", count_entries = "integer>=64",
    ring_mib = "integer 1..2048 pow2|null", -- the eBPF ring buffer in MiB; null: sized for the sample rate
    alloc = "boolean", alloc_interval = "integer>=1", stage_pattern = "string|null", tasks = "integer>=1",
  },
  run = function(ctx)
    local cfg = ctx.cfg
    local argv = {}
    for i, a in ipairs(ctx.args) do argv[i] = a end
    if #argv == 0 then wb.usage("profile: which command? e.g. wb profile -- ./app --threads 4", 0) end
    if cfg.tasks > 1 and (cfg.machine or {}).executor ~= "slurm" then
      wb.usage("profile: tasks=" .. cfg.tasks .. " is one srun step of a Slurm job: needs a machine profile whose "
        .. "executor is slurm (machine=slurm_cpu)", 0)
    end
    local bpf_max = require("wb.capture_unwind").BPF_STACK_MAX
    if cfg.method == "bpf" and cfg.stack_size ~= wb.null and cfg.stack_size > bpf_max then
      wb.usage("profile: stack_size=" .. cfg.stack_size .. " with method=bpf: eBPF copies at most " .. bpf_max ..
        " bytes per sample (method=perf_event copies more)", 0)
    end
    if cfg.shell and #argv > 1 then argv = { table.concat(argv, " ") } end
    cfg.command = argv -- part of the run's scope: only a profile of the same command is its baseline
    local exe = not cfg.shell and wb.proc.which(argv[1])
    local c = wb.campaign.open(ctx, { inputs = { exe or nil } })
    c:declare({ "profile" })
    local command = table.concat(argv, " ")
    local ex = wb.executor.new(c, ctx.cfg.machine)
    local submit = ex.kind == "slurm" or cfg.tasks > 1
    if c:plan { sections = { { name = "profile", subprocess_runs = 1, profiler_runs = 1,
      cases = { { name = "profile", argv = cfg.shell and { "/bin/sh", "-c", argv[1] } or argv } } } } } then
      if submit then ex:run_cases({ profile.case(cfg, argv, command) }) end -- the batch script only
      return 0
    end
    local res, rec, merged
    if submit then
      rec = ex:run_cases({ profile.case(cfg, argv, command) }, { collect = function(r, _, cap)
        if cap and cfg.tasks > 1 then
          merged, res = cap, profile.tasks_result(cap, r, cfg.freq)
        elseif cap then
          res = cap
          profile.record(r, res, argv, { stdout_log = "logs/profile.stdout.log" }, wb.fs.realpath(c.dir))
        end
      end })[1]
    end
    local out = not rec and profile.output(c, cfg.stdout)
    rec = rec or c:run("profile", function(r)
      local err
      local journal = c:child_hooks("profile")
      res, err = capture.run {
        on_started = journal.started, on_ended = journal.ended,
        argv = not cfg.shell and argv or nil, cmd = cfg.shell and argv[1] or nil, shell = cfg.shell,
        stdout = out.stdout, stderr = out.stderr, stdin = "inherit",
        timeout = cfg.timeout ~= wb.null and cfg.timeout or nil,
        counters = cfg.counters, oncpu = cfg.oncpu, offcpu = cfg.offcpu, freq = cfg.freq,
        method = cfg.method, root = cfg.root, top = cfg.top, dir = c.dir .. "/profiles", name = "profile",
        title = command, verbose = ctx.opts.verbose, unwind = cfg.unwind, stack_size = wb.util.opt(cfg.stack_size),
        stack_entries = cfg.stack_entries, count_entries = cfg.count_entries, ring_mib = wb.util.opt(cfg.ring_mib),
        alloc = cfg.alloc, alloc_interval = cfg.alloc_interval, stage_pattern = wb.util.opt(cfg.stage_pattern),
      }
      local closed, close_err = pcall(out.close) -- a short log fails the run, after its record
      if not res then wb.fail("profile: " .. tostring(err), 0) end
      profile.record(r, res, argv, out, c.dir)
      if not closed then
        r.status, r.error = "failed", type(close_err) == "table" and close_err.msg or tostring(close_err)
        error(close_err, 0)
      end
      return res.ok
    end)
    if res then io.write("\n", view.text(res, { top = cfg.top, command = command })) end
    -- what this machine has, probed after the command: their --version runs take no CPU from it
    c.manifest.profilers = wb.json.array(capture.profilers())
    c:finish() -- finds the baseline the differential flame graphs compare with
    if res then
      local diffs = profile.differential(c, res)
      c:write("report.html", view.html(res, { title = "Profile of " .. command, command = command, diffs = diffs,
        sections = merged and tasks.report_sections(merged, c.dir), base = c.dir }))
      for _, d in ipairs(diffs) do io.write("differential flame graph: ", d.path, "\n") end
      if res.stopped then
        io.write(string.format("stopped by Ctrl-C after %s; the profile covers the command until then\n",
          wb.util.format_seconds(res.result.wall)))
      end
      io.write("report: ", c.dir, "/report.html\n")
    end
    return rec.status == "success" and 0 or 1
  end,
}
