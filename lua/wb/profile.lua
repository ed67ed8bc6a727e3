-- The engine of `wb profile` (recipes/profile.lua is its policy): where the profiled command's
-- output goes (teed to the terminal and logs/, inherited, dropped or a file), its manifest
-- record from a wb.capture result, and differential flame graphs against the baseline run the
-- campaign found (the previous profile of the same command, or --baseline DIR). On a Slurm
-- machine profile the capture is a job (profile.case), of one task or an srun step of several.
local wb = require "wb"

local M = {}

-- out = profile.output(c, stdout) : the command's streams for wb.capture.run. stdout is "tee"
-- (the terminal and logs/profile.stdout.log, line by line), "inherit", "null" (or wb.null), or a
-- file written as it comes (binary-safe). out = {stdout, stderr (teed to logs/profile.stderr.log),
-- stdout_log (relative to the run directory, or nil), close()}
function M.output(c, stdout)
  local logs, failed = {}, nil
  local function tee(stream)
    local path = c.dir .. "/logs/profile." .. stream .. ".log"
    local f, err = io.open(path, "w")
    if not f then require("wb.errors").raise(1, "profile: " .. err, 0) end
    logs[#logs + 1] = { f = f, path = path }
    local out = stream == "stdout" and io.stdout or io.stderr
    return function(line, piece) -- piece: a part of a line over 1 MiB, the rest follows
      local nl = piece and "" or "\n"
      out:write(line, nl)
      if failed then return end
      local ok, werr = f:write(line, nl)
      if not ok then failed = path .. ": " .. tostring(werr) end -- the disk filled: the log is short
    end
  end
  local o = { stdout_log = "logs/profile.stdout.log" }
  if stdout == wb.null or stdout == "null" then
    o.stdout, o.stdout_log = "null", nil
  elseif stdout == "inherit" then
    o.stdout, o.stdout_log = "inherit", nil
  elseif stdout == "tee" then
    o.stdout = tee("stdout")
  else
    o.stdout, o.stdout_log = { file = stdout }, stdout
  end
  o.stderr = tee("stderr")
  -- a log cut short (ENOSPC, EFBIG) fails the run, naming the file: never a complete run with a
  -- truncated log
  function o.close()
    for _, l in ipairs(logs) do
      local ok, err = l.f:close()
      if not ok and not failed then failed = l.path .. ": " .. tostring(err) end
    end
    if failed then wb.fail("profile: " .. failed, 0) end
  end
  return o
end

-- profile.record(r, res, argv, out, dir) : fills the manifest record r from the wb.capture result
-- res: arguments, method, exit, metrics (times, task-clock, samples, off-CPU time, unwinding
-- reach, the tree's peak RSS, estimated bytes allocated), the profiles written (paths relative to the run directory dir) or why each was skipped,
-- what the capture lost (r.loss), what naming the frames cost (r.symbolize), how the Python frames
-- were read (r.python), warnings
function M.record(r, res, argv, out, dir)
  r.command_arguments = wb.json.array(argv)
  r.method = res.method
  r.fallback = res.fallback
  r.return_code = res.result.code or wb.null
  r.signal = res.result.signal
  r.wall_time_seconds = res.result.wall
  r.stdout_log, r.stderr_log = out.stdout_log or wb.null, "logs/profile.stderr.log"
  if res.stopped then r.stopped_by = res.stopped end
  local metrics = { wall_seconds = res.result.wall, user_seconds = res.result.user, sys_seconds = res.result.sys }
  local tc = res.counters and res.counters["task-clock"]
  if tc and tc.available then metrics.task_clock_seconds = tc.value / 1e9 end
  local profiles = {}
  for _, kind in ipairs({ "oncpu", "offcpu", "critical" }) do
    local p = res[kind]
    if p and not p.skipped then
      profiles[kind] = { folded = p.folded and p.folded:sub(#dir + 2), svg = p.svg and p.svg:sub(#dir + 2),
        speedscope = p.speedscope and p.speedscope:sub(#dir + 2) }
      if kind == "oncpu" then metrics.oncpu_samples = p.samples
      elseif kind == "offcpu" then metrics.offcpu_seconds = p.total_seconds
      else
        metrics.critical_oncpu_seconds = p.by_kind.oncpu
        metrics.critical_runqueue_seconds = p.by_kind.runqueue
        metrics.critical_wait_seconds = p.by_kind.wait
      end
    elseif p then
      profiles[kind] = { skipped = p.skipped }
    end
  end
  -- what the capture could not keep, each apart: samples, off-CPU intervals, and intervals whose
  -- time was kept without their stack
  local on, off = res.oncpu or {}, res.offcpu or {}
  r.loss = { oncpu_samples = on.lost or wb.null, offcpu_intervals = off.lost or wb.null,
    offcpu_intervals_without_stack = off.stack_lost or wb.null,
    offcpu_seconds_without_stack = off.stack_lost_seconds or wb.null, image_records = res.lost_images or wb.null }
  r.symbolize = res.symbolize -- what naming the frames cost, per object
  if res.oncpu and res.oncpu.unwind then
    r.unwind = res.oncpu.unwind
    metrics.reach_entry_fraction = res.oncpu.unwind.reach_entry_fraction
    metrics.truncated_fraction = res.oncpu.unwind.truncated_fraction
  end
  local py = res.python
  if py then -- how the Python frames were read: "bpf" (merged at each sample) or "sampler" (the fallback)
    r.python = { source = py.source, skipped = py.skipped, processes = py.processes and wb.json.array(py.processes) }
    for _, kind in ipairs({ "oncpu", "offcpu" }) do
      local p = py[kind]
      if p and p.folded then
        profiles["python_" .. kind] = { folded = p.folded:sub(#dir + 2), svg = p.svg:sub(#dir + 2),
          speedscope = p.speedscope:sub(#dir + 2) }
      end
    end
  end
  if res.memory and res.memory.peak_rss_kb then metrics.peak_rss_kb = res.memory.peak_rss_kb end
  if res.alloc and not res.alloc.skipped then metrics.alloc_estimated_bytes = res.alloc.estimated_bytes end
  r.metrics = metrics
  r.profiles = profiles
  r.warnings = wb.json.array(res.warnings)
end

-- The recipe's options a capture case carries to its job.
local CAPTURE_KEYS = { "counters", "oncpu", "offcpu", "freq", "method", "root", "top", "unwind", "stack_size",
  "stack_entries", "count_entries", "ring_mib", "alloc", "alloc_interval", "stage_pattern" }

-- case = profile.case(cfg, argv, command) : the executor's case of the profile: the command under
-- wb.capture with the recipe's options (profiles/profile.*), as cfg.tasks tasks of one step
function M.case(cfg, argv, command)
  local cap = { name = "profile", title = command }
  for _, k in ipairs(CAPTURE_KEYS) do cap[k] = wb.util.opt(cfg[k]) end
  return { name = "profile", argv = cfg.shell and { "/bin/sh", "-c", argv[1] } or argv,
    timeout = wb.util.opt(cfg.timeout), capture = cap, tasks = cfg.tasks > 1 and cfg.tasks or nil }
end

-- res = profile.tasks_result(m, rec, freq) : what the report shows of the merged profile m of a
-- step's tasks (wb.slurm_capture.merge): a wb.capture-like result with the merged stacks, the
-- first task's method and the record's exit status
function M.tasks_result(m, rec, freq)
  local first, warnings = nil, {}
  for _, t in ipairs(m.tasks) do
    first = first or (not t.missing and t) or nil
    if t.fallback then warnings[#warnings + 1] = "task " .. t.rank .. " (" .. t.method .. "): " .. t.fallback end
    if t.missing then warnings[#warnings + 1] = "task " .. t.rank .. ": no profile (the job ended first)" end
  end
  local code = wb.util.opt(rec.return_code)
  return { method = first and first.method or "none", freq = freq, warnings = warnings, oncpu = m.oncpu,
    offcpu = m.offcpu, ok = rec.status == "success",
    result = { wall = rec.wall_time_seconds or 0, code = code, exited = code ~= nil, signal = rec.signal } }
end

-- diffs = profile.differential(c, res) : differential flame graphs against the baseline run the
-- campaign found (after c:finish), written as profiles/profile.<kind>.diff.svg, the processes of
-- both matched by name, not pid (wb.capture_fold.by_name), whatever root the runs used;
-- {title, path, href} for each (href relative to the run directory)
function M.differential(c, res)
  local prev = c.manifest.previous_manifest_path
  if not prev or prev == wb.null then return {} end
  local m = wb.campaign.read_manifest(prev)
  local base_dir = prev:match("^(.*)/[^/]*$") or "."
  local run
  for _, r in ipairs(m and m.runs or {}) do
    if r.name == "profile" then run = r end
  end
  local written = {}
  local TITLE = { oncpu = "On-CPU", offcpu = "Off-CPU", critical = "Critical path" }
  for _, kind in ipairs({ "oncpu", "offcpu", "critical" }) do
    local old = run and run.profiles and run.profiles[kind] and run.profiles[kind].folded
    local old_text = old and wb.fs.read(base_dir .. "/" .. old)
    local new = res[kind]
    if old_text and new and new.folded_text then
      local title = TITLE[kind] .. " change from " .. base_dir
      local by_name = require("wb.capture_fold").by_name -- processes matched by name, not pid
      local svg = wb.flame.diff_svg(by_name(old_text), by_name(new.folded_text), { title = title,
        unit = kind == "oncpu" and "samples" or "ns" })
      local rel = "profiles/profile." .. kind .. ".diff.svg"
      written[#written + 1] = { title = title, path = c:write(rel, svg), href = rel }
    end
  end
  return written
end

return M
