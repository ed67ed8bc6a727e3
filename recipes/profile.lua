-- Profile a command and its child processes: counters, on-CPU and off-CPU flame graphs, top functions.
--
--   wb profile -- ./app --threads 4
--   wb profile freq=999 offcpu=false -- ./app
--   wb profile method=perf_event -- ./app        (auto | bpf | perf_event | perf_cli)
--   wb profile stdout=null -- ./server           (the command's stdout: tee | inherit | null | FILE)
--   wb profile unwind=dwarf -- ./app              (user stacks walked with CFI: code without frame pointers)
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
local view = require "wb.capture_report"

-- Differential flame graphs against the baseline run the campaign found (the previous profile of
-- the same command, or --baseline DIR): profiles/profile.<kind>.diff.svg. Returns {title, path, href}
-- for each (href relative to the run directory).
local function differential(c, res)
  local prev = c.manifest.previous_manifest_path
  if not prev or prev == wb.null then return {} end
  local m = wb.campaign.read_manifest(prev)
  local base_dir = prev:match("^(.*)/[^/]*$") or "."
  local run
  for _, r in ipairs(m and m.runs or {}) do
    if r.name == "profile" then run = r end
  end
  local written = {}
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local old = run and run.profiles and run.profiles[kind] and run.profiles[kind].folded
    local old_text = old and wb.fs.read(base_dir .. "/" .. old)
    local new = res[kind]
    if old_text and new and new.folded_text then
      local title = (kind == "oncpu" and "On-CPU" or "Off-CPU") .. " change from " .. base_dir
      local svg = wb.flame.diff_svg(old_text, new.folded_text, { title = title,
        unit = kind == "offcpu" and "ns" or "samples" })
      local rel = "profiles/profile." .. kind .. ".diff.svg"
      written[#written + 1] = { title = title, path = c:write(rel, svg), href = rel }
    end
  end
  return written
end

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  defaults = {
    freq = 99, counters = true, oncpu = true, offcpu = true, method = "auto", top = 15,
    shell = false, timeout = wb.null, root = "auto", stdout = "tee", unwind = "fp", stack_size = 8192,
  },
  types = {
    freq = "integer>=1", counters = "boolean", oncpu = "boolean", offcpu = "boolean",
    method = "auto|bpf|perf_event|perf_cli", top = "integer>=1", shell = "boolean", timeout = "number>0|null",
    stdout = "null|string", -- tee (the terminal and logs/profile.stdout.log), inherit, null, or a file
    unwind = "fp|dwarf", stack_size = "integer>=1",
  },
  run = function(ctx)
    local cfg = ctx.cfg
    local argv = {}
    for i, a in ipairs(ctx.args) do argv[i] = a end
    if #argv == 0 then wb.usage("profile: which command? e.g. wb profile -- ./app --threads 4", 0) end
    if cfg.shell and #argv > 1 then argv = { table.concat(argv, " ") } end
    cfg.command = argv -- part of the run's scope: only a profile of the same command is its baseline
    local exe = not cfg.shell and wb.proc.which(argv[1])
    local c = wb.campaign.open(ctx, { profilers = capture.profilers(), inputs = { exe or nil } })
    c:declare({ "profile" })
    if c:plan { sections = { { name = "profile", subprocess_runs = 1, profiler_runs = 1,
      cases = { { name = "profile", argv = cfg.shell and { "/bin/sh", "-c", argv[1] } or argv } } } } } then
      return 0
    end
    local command = table.concat(argv, " ")
    local logs = {}
    local stdout_log = "logs/profile.stdout.log"
    local function tee(stream)
      local path = c.dir .. "/logs/profile." .. stream .. ".log"
      local f = assert(io.open(path, "w"))
      logs[#logs + 1] = f
      local out = stream == "stdout" and io.stdout or io.stderr
      return function(line)
        out:write(line, "\n")
        f:write(line, "\n")
      end
    end
    -- the command's stdout, written as it comes (binary-safe) unless teed line by line
    local out_spec
    if cfg.stdout == wb.null or cfg.stdout == "null" then
      out_spec, stdout_log = "null", nil
    elseif cfg.stdout == "inherit" then
      out_spec, stdout_log = "inherit", nil
    elseif cfg.stdout == "tee" then
      out_spec = tee("stdout")
    else
      out_spec, stdout_log = { file = cfg.stdout }, cfg.stdout
    end
    local res
    local rec = c:run("profile", function(r)
      local err
      res, err = capture.run {
        argv = not cfg.shell and argv or nil, cmd = cfg.shell and argv[1] or nil, shell = cfg.shell,
        stdout = out_spec, stderr = tee("stderr"), stdin = "inherit",
        timeout = cfg.timeout ~= wb.null and cfg.timeout or nil,
        counters = cfg.counters, oncpu = cfg.oncpu, offcpu = cfg.offcpu, freq = cfg.freq,
        method = cfg.method, root = cfg.root, top = cfg.top, dir = c.dir .. "/profiles", name = "profile",
        title = command, verbose = ctx.opts.verbose, unwind = cfg.unwind, stack_size = cfg.stack_size,
      }
      for _, f in ipairs(logs) do f:close() end
      if not res then wb.fail("profile: " .. tostring(err)) end
      r.command_arguments = wb.json.array(argv)
      r.method = res.method
      r.fallback = res.fallback
      r.return_code = res.result.code or wb.null
      r.signal = res.result.signal
      r.wall_time_seconds = res.result.wall
      r.stdout_log, r.stderr_log = stdout_log or wb.null, "logs/profile.stderr.log"
      if res.stopped then r.stopped_by = res.stopped end
      local metrics = { wall_seconds = res.result.wall, user_seconds = res.result.user, sys_seconds = res.result.sys }
      local tc = res.counters and res.counters["task-clock"]
      if tc and tc.available then metrics.task_clock_seconds = tc.value / 1e9 end
      local profiles = {}
      for _, kind in ipairs({ "oncpu", "offcpu" }) do
        local p = res[kind]
        if p and not p.skipped then
          profiles[kind] = { folded = p.folded and p.folded:sub(#c.dir + 2), svg = p.svg and p.svg:sub(#c.dir + 2),
            speedscope = p.speedscope and p.speedscope:sub(#c.dir + 2) }
          if kind == "oncpu" then metrics.oncpu_samples = p.samples else metrics.offcpu_seconds = p.total_seconds end
        elseif p then
          profiles[kind] = { skipped = p.skipped }
        end
      end
      if res.oncpu and res.oncpu.unwind then
        r.unwind = res.oncpu.unwind
        metrics.reach_entry_fraction = res.oncpu.unwind.reach_entry_fraction
        metrics.truncated_fraction = res.oncpu.unwind.truncated_fraction
      end
      r.metrics = metrics
      r.profiles = profiles
      r.warnings = wb.json.array(res.warnings)
      return res.ok
    end)
    if res then io.write("\n", view.text(res, { top = cfg.top, command = command })) end
    c:finish() -- finds the baseline the differential flame graphs compare with
    if res then
      local diffs = differential(c, res)
      c:write("report.html", view.html(res, { title = "Profile of " .. command, command = command, diffs = diffs }))
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
