-- Full application profile, the engine of recipes/profile_app_full.lua: timing trials with the
-- application's own stage timers, a capture (counters, on/off-CPU stacks), a callgrind pass, the
-- bottleneck model (stages, functions and waits as shares of the run, with Amdahl bounds) and the
-- report: summary.md, summary.json (schema wb.profile_app v1) and report.html.
--
-- A profile r is a table the recipe fills pass by pass: argv, trials (appprofile.trials),
-- capture (wb.capture.run's result or nil), callgrind (appprofile.callgrind or nil), cprofile
-- (wb.cprofile.run or nil), bottlenecks (appprofile.bottlenecks).
local wb = require "wb"
local json, util = wb.json, wb.util
local opt = util.opt
local page = require "wb.page"
local html = require "wb.html"
local interference = require "wb.interference"
local fold = require "wb.capture_fold"
local critical = require "wb.capture_critical"

local M = {}

M.SCHEMA = "wb.profile_app"

-- argv = appprofile.argv(list, run_dir) : the command's words as strings, {run_dir} replaced
function M.argv(list, run_dir)
  local out = {}
  for i, a in ipairs(list) do out[i] = tostring(a):gsub("{run_dir}", run_dir) end
  return out
end

-- path, reason = appprofile.callgrind_tools() : valgrind's path when both valgrind and
-- callgrind_annotate are on PATH, else nil and what is missing
function M.callgrind_tools()
  local valgrind = wb.proc.which("valgrind")
  if not valgrind then return nil, "valgrind is not on PATH" end
  if not wb.proc.which("callgrind_annotate") then return nil, "callgrind_annotate is not on PATH" end
  return valgrind
end

-- planned = appprofile.plan(c, tool, argv, passes) : declares the runs of campaign c (warmups,
-- trials, then the passes chosen: passes.capture, .callgrind, .cprofile) and writes the plan;
-- true when that is all this run does (--dry-run)
function M.plan(c, tool, argv, passes)
  local names, cases = {}, {}
  for i = 1, tool.warmup do names[#names + 1] = "warmup" .. i end
  for i = 1, tool.trials do names[#names + 1] = "trial" .. i end
  for _, n in ipairs(names) do cases[#cases + 1] = { name = n, argv = argv } end
  local sections = { { name = "timing trials", cases = cases } }
  if passes.capture then
    names[#names + 1] = "capture"
    sections[#sections + 1] = { name = "capture (counters, on-CPU, off-CPU)", cases = { { name = "capture", argv = argv } }, subprocess_runs = 1, profiler_runs = 1 }
  end
  if passes.callgrind then
    names[#names + 1] = "callgrind"
    local vargv = { "valgrind", "--tool=callgrind" }
    for _, a in ipairs(argv) do vargv[#vargv + 1] = a end
    sections[#sections + 1] = { name = "callgrind", cases = { { name = "callgrind", argv = vargv } }, subprocess_runs = 1, profiler_runs = 1 }
  end
  if passes.cprofile then
    names[#names + 1] = "cprofile"
    sections[#sections + 1] = { name = "cProfile", cases = { { name = "cprofile", argv = argv } }, subprocess_runs = 1, profiler_runs = 1 }
  end
  c:declare(names)
  return c:plan { sections = sections }
end

-- Stage seconds of one trial: the app's profile_summary.json if it wrote one, else stage lines
-- in its stderr log.
local function trial_stages(tool, summary_path, stderr_log)
  if summary_path and wb.fs.exists(summary_path) then
    local doc = json.read(summary_path)
    wb.fs.remove(summary_path)
    if doc and type(doc.stage_totals_seconds) == "table" then
      local out = {}
      for k, v in pairs(doc.stage_totals_seconds) do
        if type(v) == "number" then out[#out + 1] = { k, v } end
      end
      return out, "profile_summary.json"
    end
  end
  local text = stderr_log and wb.fs.read(stderr_log) or ""
  local out, malformed = {}, {}
  for name, secs in text:gmatch(tool.stage_pattern) do
    local v = tonumber(secs)
    if v and v >= 0 and v < math.huge then
      out[#out + 1] = { name, v }
    else -- the application's line, not wb's: reported and left out, never fatal to the report
      malformed[#malformed + 1] = string.format("%s=%s", name, secs)
    end
  end
  return out, #out > 0 and "stderr stage lines" or nil, malformed
end

-- The names of the warm-up and timing runs, in order, and whether each is measured.
local function trial_names(tool)
  local out = {}
  for i = 1, tool.warmup + tool.trials do
    local measured = i > tool.warmup
    out[i] = { name = measured and ("trial" .. (i - tool.warmup)) or ("warmup" .. i), measured = measured }
  end
  return out
end

-- One finished trial's figures (res: wall, user, sys, maxrss_kb) in its record and, when
-- measured, in the trials t.
local function add_trial(t, tool, rec, res, measured, summary_path, stderr_log)
  local stages, source, malformed = trial_stages(tool, summary_path, stderr_log)
  t.stage_source = t.stage_source or source
  if malformed and #malformed > 0 then
    t.malformed_stages = (t.malformed_stages or 0) + #malformed
    t.malformed_example = t.malformed_example or malformed[1]
  end
  rec.role = measured and "trial" or "warmup"
  rec.metrics = { wall_seconds = res.wall, cpu_seconds = res.user + res.sys, maxrss_kb = res.maxrss_kb }
  if not measured then return end
  t.wall:add(res.wall)
  t.evidence = t.evidence or interference.new_lists()
  interference.add(t.evidence, res)
  t.cpu:add(res.user + res.sys)
  t.rss:add(res.maxrss_kb)
  for _, s in ipairs(stages) do
    if not t.stages[s[1]] then
      t.stages[s[1]] = wb.stats.samples()
      t.order[#t.order + 1] = s[1]
    end
    t.stages[s[1]]:add(s[2])
  end
end

local function check_trial(c, argv, name)
  if c:record(name).status == "failed" then
    wb.fail(string.format("%s failed (exit %s); see %s/logs/%s.stderr.log", argv[1],
      tostring(c:record(name).return_code), c.dir, name), 0)
  end
end

-- trials = appprofile.trials(c, tool, argv, summary_path) : tool.warmup + tool.trials runs of argv
-- (cwd, env, timeout from tool), the measured ones' wall, CPU, peak RSS and stages (samples, in
-- the order first seen), and their summary as campaign c's record "trials". A failed run fails
-- the campaign (exit 1).
function M.trials(c, tool, argv, summary_path)
  local t = { wall = wb.stats.samples(), cpu = wb.stats.samples(), rss = wb.stats.samples(), stages = {}, order = {},
    warmup = tool.warmup }
  for _, run in ipairs(trial_names(tool)) do
    c:run(run.name, function(rec)
      local res = wb.check(c:spawn(run.name, { argv = argv, cwd = opt(tool.cwd), env = tool.env,
        timeout = tool.timeout }))
      if not res.ok then return false end
      add_trial(t, tool, rec, res, run.measured, summary_path, c.dir .. "/" .. rec.stderr_log)
    end)
    check_trial(c, argv, run.name)
  end
  return M.headline(c, t)
end

-- trials = appprofile.headline(c, trials) : the trials as campaign c's record "trials"
function M.headline(c, t)
  -- the trials as one record with their samples: what a later run's comparison tests (the trial
  -- records themselves are not compared one by one)
  local headline = c:record("trials")
  headline.status, headline.role, headline.trials = "success", "run", #t.wall
  headline.metrics, headline.samples = {}, {}
  local per_trial = { wall_seconds = t.wall, cpu_seconds = t.cpu, maxrss_kb = t.rss }
  for _, stage in ipairs(t.order) do per_trial["stage_" .. stage:gsub("[^%w_]", "_") .. "_seconds"] = t.stages[stage] end
  for k, xs in pairs(per_trial) do
    headline.metrics[k] = wb.stats.median(xs)
    headline.samples[k] = xs:totable()
  end
  -- the trials' interference evidence beside their samples (no metrics of their own)
  local ev = interference.record_lists(headline.samples, t.evidence)
  if ev then t.interference = interference.summary(t.wall:totable(), ev) end
  return t
end

-- The options of the capture pass (profiles/app.*).
local function capture_options(tool)
  return { counters = tool.counters, oncpu = tool.oncpu, offcpu = tool.offcpu, freq = tool.freq,
    memory = tool.memory ~= false, alloc = tool.alloc == true, stage_pattern = opt(tool.stage_pattern), name = "app" }
end

-- cap = appprofile.capture(c, tool, argv, summary_path) : campaign c's run "capture", the
-- counters, on/off-CPU stacks, memory timeline (with the stage bands of tool.stage_pattern) and
-- allocation profile tool asks for (wb.capture.run into profiles/app.*); the record's metrics
-- hold the tree's peak RSS and the estimated bytes allocated
function M.capture(c, tool, argv, summary_path)
  local cap
  c:run("capture", function(rec)
    local spec = capture_options(tool)
    spec.argv, spec.cwd, spec.env, spec.timeout = argv, opt(tool.cwd), tool.env, tool.timeout
    spec.dir, spec.stdout, spec.stderr = c.dir .. "/profiles", { file = c.dir .. "/logs/capture.stdout.log" },
      { file = c.dir .. "/logs/capture.stderr.log" }
    local journal = c:child_hooks("capture")
    spec.on_started, spec.on_ended = journal.started, journal.ended
    cap = wb.check(wb.capture.run(spec))
    rec.method = cap.method
    rec.wall_time_seconds = cap.result and cap.result.wall
    -- the tree's peak RSS and the bytes allocated: memory metrics wb compare sets side by side
    local mem, al = cap.memory, cap.alloc
    rec.metrics = { peak_rss_kb = mem and not mem.skipped and mem.peak_rss_kb or nil,
      alloc_estimated_bytes = al and not al.skipped and al.estimated_bytes or nil }
    if summary_path then wb.fs.remove(summary_path) end
    rec.stopped_by = cap.stopped -- a first Ctrl-C stops the command; what it recorded is kept
    return cap.ok
  end)
  return cap
end

-- A run's own summary file: summary_path with the run's name before its extension (jobs of an
-- array would otherwise overwrite each other's before wb reads them).
local function own_summary(summary_path, name)
  return (summary_path:gsub("(%.?[^./]*)$", "." .. name .. "%1", 1))
end

-- cases = appprofile.cases(tool, argv, summary_path, passes) : the warm-ups, trials and (with
-- passes.capture) the capture pass as executor cases, each run writing its own summary file
function M.cases(tool, argv, summary_path, passes)
  local cases = {}
  local runs = trial_names(tool)
  if passes.capture then runs[#runs + 1] = { name = "capture", capture = capture_options(tool) } end
  for _, run in ipairs(runs) do
    local own = summary_path and own_summary(summary_path, run.name)
    local words = {}
    local pattern, with = summary_path and summary_path:gsub("%p", "%%%0"), own and own:gsub("%%", "%%%%")
    for i, a in ipairs(argv) do words[i] = own and (a:gsub(pattern, with)) or a end
    cases[#cases + 1] = { name = run.name, argv = words, cwd = opt(tool.cwd), env = tool.env,
      timeout = opt(tool.timeout), capture = run.capture, measured = run.measured, summary_path = own }
  end
  return cases
end

-- trials, cap = appprofile.run_cases(c, ex, tool, argv, summary_path, passes) : the trials and the
-- capture pass through executor ex (a Slurm array, one run at a time so that the trials do not
-- share the node): the same records and results as appprofile.trials and appprofile.capture
function M.run_cases(c, ex, tool, argv, summary_path, passes)
  local t = { wall = wb.stats.samples(), cpu = wb.stats.samples(), rss = wb.stats.samples(), stages = {}, order = {},
    warmup = tool.warmup }
  local cap
  local cases = M.cases(tool, argv, summary_path, passes)
  ex:run_cases(cases, { one_at_a_time = true, collect = function(rec, cs, res)
    if cs.capture then
      cap = res
      if cs.summary_path then wb.fs.remove(cs.summary_path) end
      return res ~= nil and res.ok
    end
    if rec.status ~= "success" then return false end
    add_trial(t, tool, rec, { wall = rec.wall_time_seconds, user = rec.user_seconds, sys = rec.sys_seconds,
      maxrss_kb = rec.maxrss_kb, runq = rec.runq_seconds, runq_scope = rec.runq_scope, wall_own = rec.wall_own_seconds,
      others_cpu = rec.others_cpu, cpus = rec.cpus }, cs.measured, cs.summary_path, c.dir .. "/" .. rec.stderr_log)
  end })
  for _, cs in ipairs(cases) do
    if not cs.capture then check_trial(c, argv, cs.name) end
  end
  return M.headline(c, t), cap
end

-- total, top = appprofile.parse_callgrind(text, limit) : callgrind_annotate's output: the program's
-- total instructions (Ir) and its first limit functions {name = "fn (file)", instructions, fraction}
function M.parse_callgrind(text, limit)
  local total = tonumber(((text:match("([%d,]+)[^\n]-PROGRAM TOTALS") or "0"):gsub(",", "")))
  local top = {}
  for count, where in text:gmatch("\n%s*([%d,]+) %([%s%d.]+%%%)%s+([^\n]+)") do
    local n = tonumber((count:gsub(",", "")))
    if where ~= "PROGRAM TOTALS" and n and total > 0 and #top < limit then
      where = where:gsub("%s+%[[^%]]*%]$", "")
      local file, fn = where:match("^(.*):([^:]+)$")
      top[#top + 1] = { name = fn and (fn .. " (" .. file:match("[^/]*$") .. ")") or where, instructions = n, fraction = n / total }
    end
  end
  return total, top
end

-- cg = appprofile.callgrind(c, tool, argv, opts) : campaign c's run "callgrind" (argv under
-- valgrind --tool=callgrind, timeout opts.timeout_factor × tool.timeout), read by
-- callgrind_annotate --threshold=opts.threshold: {file, total_instructions, top (opts.top
-- functions)}, or {skipped = why} when a tool is missing or a step fails
function M.callgrind(c, tool, argv, opts)
  local valgrind, missing = M.callgrind_tools()
  if not valgrind then return { skipped = missing } end
  local out = c.dir .. "/profiles/callgrind.out"
  wb.fs.mkdir_p(c.dir .. "/profiles")
  local vargv = { valgrind, "--tool=callgrind", "--callgrind-out-file=" .. out }
  for _, a in ipairs(argv) do vargv[#vargv + 1] = a end
  local res
  c:run("callgrind", function(rec)
    res = wb.check(c:spawn("callgrind", { argv = vargv, cwd = opt(tool.cwd), env = tool.env,
      timeout = tool.timeout * opts.timeout_factor }))
    rec.profiler = "callgrind"
    return res.ok
  end)
  if not res or not res.ok then return { skipped = "the callgrind run failed; see logs/callgrind.stderr.log" } end
  local ann, err = wb.proc.run { argv = { "callgrind_annotate", "--threshold=" .. opts.threshold, out },
    stdout = "capture", stderr = "capture" }
  if not ann then return { skipped = "callgrind_annotate: " .. tostring(err) } end
  if not ann.ok then return { skipped = "callgrind_annotate failed: " .. ann.stderr } end
  local total, top = M.parse_callgrind(ann.stdout, opts.top)
  return { file = "profiles/callgrind.out", total_instructions = total, top = top }
end

local function amdahl(f) return f < 1 and 1 / (1 - f) or math.huge end

-- waits = appprofile.blocked_waits(folded_text [, marked_only]) : blocked (not run-queue) off-CPU time by the
-- innermost user-space frame (after the innermost Python frame, "func (file.py:12): frame", when the
-- stack has one), {name, seconds, cause?}, largest first; time kept without its stack
-- ("[stack lost]") is no wait of the program's and is left out. A critical path's folded text
-- (wb.capture_critical) marks what ended a wait as the last frame: cause is the mark of most of
-- the wait's time; with marked_only, lines without a mark (its time on a CPU) are left out.
function M.blocked_waits(folded_text, marked_only)
  local by, causes = {}, {}
  for line in (folded_text or ""):gmatch("[^\n]+") do
    local stack, count = line:match("^(.*) (%d+)$")
    if stack and not stack:find(fold.RUN_QUEUE, 1, true) and not stack:find(";" .. fold.STACK_LOST, 1, true) then
      local leaf, cause, py
      for frame in stack:gmatch("[^;]+") do
        if critical.is_mark(frame) then cause = frame
        elseif not frame:find("_%[k%]$") then
          leaf = frame
          if frame:find(" %(.-%.py:%d+%)$") then py = frame end
        end
      end
      -- in a Python program the code that waited is its innermost Python frame
      if py and leaf ~= py then leaf = py .. ": " .. leaf end
      if leaf and (cause or not marked_only) then
        local secs = tonumber(count) / 1e9
        by[leaf] = (by[leaf] or 0) + secs
        if cause then
          causes[leaf] = causes[leaf] or {}
          causes[leaf][cause] = (causes[leaf][cause] or 0) + secs
        end
      end
    end
  end
  local out = {}
  for name, secs in pairs(by) do
    local cause, most = nil, 0
    for c, t in pairs(causes[name] or {}) do
      if t > most or (t == most and c < cause) then cause, most = c, t end
    end
    out[#out + 1] = { name = name, seconds = secs, cause = cause }
  end
  table.sort(out, function(a, b)
    if a.seconds ~= b.seconds then return a.seconds > b.seconds end
    return a.name < b.name
  end)
  return out
end

local function percent(f) return string.format("%.0f%%", f * 100) end

-- The first model.waits of waits into b.waits, as fractions of `wall` with their Amdahl bounds.
local function add_waits(b, waits, model, wall)
  for _, w in ipairs(waits) do
    if #b.waits >= model.waits then break end
    w.fraction = w.seconds / wall
    w.amdahl = amdahl(w.fraction)
    b.waits[#b.waits + 1] = w
  end
end

-- The functions (self time) and waits of a flat profile, as fractions of the profiled run.
local function flat_model(b, cap, model, capture_wall, capture_cpu)
  if cap and cap.oncpu and cap.oncpu.top then
    for _, f in ipairs(cap.oncpu.top) do
      local frac = (f.self_fraction or 0) * capture_cpu / capture_wall
      if #b.functions < model.functions and frac > 0 then
        b.functions[#b.functions + 1] = { name = f.name, fraction = frac, cpu_fraction = f.self_fraction,
          amdahl = amdahl(frac), where = fold.where(f) }
      end
    end
  end
  if cap and cap.offcpu and cap.offcpu.folded_text then
    add_waits(b, M.blocked_waits(cap.offcpu.folded_text), model, capture_wall)
    b.offcpu_blocked_seconds = cap.offcpu.blocked_seconds
    b.offcpu_runqueue_seconds = cap.offcpu.runqueue_seconds
  end
end

local function processes_text(c)
  local parts = {}
  for i = 1, math.min(3, #c.by_process) do
    local p = c.by_process[i]
    local t = p.oncpu + p.runqueue + p.wait + p.unknown
    if t / c.wall_seconds >= 0.05 then
      parts[#parts + 1] = string.format("%s[%d] %s", p.comm, p.pid, percent(t / c.wall_seconds))
    end
  end
  return #parts > 1 and ("; along " .. table.concat(parts, ", ")) or ""
end

-- The functions and waits on the critical path (cap.critical, wb.capture's), as fractions of it:
-- the time the run's wall clock followed, where a wait for a child or another thread of the tree
-- is replaced by what that thread did meanwhile, so no second is counted twice.
local function path_model(b, cp, model)
  local path = cp.wall_seconds
  b.critical = { wall_seconds = path, oncpu = cp.by_kind.oncpu, runqueue = cp.by_kind.runqueue,
    wait = cp.by_kind.wait, unknown = cp.by_kind.unknown, by_process = cp.by_process }
  for _, f in ipairs(cp.functions or {}) do
    if #b.functions < model.functions and f.fraction > 0 then
      b.functions[#b.functions + 1] = { name = f.name, fraction = f.fraction, cpu_fraction = f.fraction,
        amdahl = amdahl(f.fraction), on_path = true, where = fold.where(f) }
    end
  end
  add_waits(b, M.blocked_waits(cp.folded_text, true), model, path)
  b.offcpu_blocked_seconds = cp.by_kind.wait
  b.offcpu_runqueue_seconds = cp.by_kind.runqueue
  b.runqueue = cp.by_kind.runqueue > 0 and { name = "waiting for a CPU (run queue)", fraction = cp.by_kind.runqueue / path,
    amdahl = amdahl(cp.by_kind.runqueue / path) } or nil
end


-- A stage and what fills it are one place: each stage candidate names the function or wait that
-- takes most of its time on the critical path (cp.stages: the path within each window the
-- application reported), and a function or wait candidate that lies mostly (M.MERGE_SHARE of its
-- path time) inside one stage is not listed apart from it.
M.MERGE_SHARE = 0.8
local function merge_stages(candidates, cp)
  local inside, fill = {}, {} -- inside[name][stage] = seconds; fill[stage] = {name = seconds}
  local function add(stage, name, seconds)
    inside[name] = inside[name] or {}
    inside[name][stage] = (inside[name][stage] or 0) + seconds
    fill[stage][name] = (fill[stage][name] or 0) + seconds
  end
  local stage_total = {} -- a stage's time on the path (its reports together)
  local where = {} -- where[stage][name]: a function's place (fold.where) in that stage
  for _, st in ipairs(cp.stages) do
    fill[st.name], where[st.name] = fill[st.name] or {}, where[st.name] or {}
    stage_total[st.name] = (stage_total[st.name] or 0) + (st.path_seconds or 0)
    for _, f in ipairs(st.top) do
      if not f.name:find("^%[") then -- marks, [on CPU, between samples]
        add(st.name, f.name, f.seconds)
        where[st.name][f.name] = where[st.name][f.name] or fold.where(f)
      end
    end
    for _, w in ipairs(M.blocked_waits(st.folded_text, true)) do add(st.name, w.name, w.seconds) end
  end
  local stage_of, out = {}, {}
  for _, c in ipairs(candidates) do
    if c.what == "stage" then stage_of[c.name] = c end
  end
  for _, c in ipairs(candidates) do
    local merged = false
    if c.what == "function" or c.what == "wait" then
      local secs = c.fraction * cp.wall_seconds
      for name, t in pairs(inside[c.name] or {}) do
        local st = stage_of[name]
        if st and secs > 0 and t >= M.MERGE_SHARE * secs then
          st.merged = st.merged or {}
          st.merged[#st.merged + 1] = c
          merged = true
        end
      end
    end
    if not merged then out[#out + 1] = c end
  end
  for name, c in pairs(stage_of) do
    local best, most, total = nil, 0, 0
    for n, t in pairs(fill[name] or {}) do
      total = total + t
      if t > most or (t == most and best and n < best) then best, most = n, t end
    end
    total = math.max(total, stage_total[name] or 0)
    if best and total > 0 then
      local at = where[name] and where[name][best]
      c.cause = string.format("on the critical path mostly %s%s, %s of it", best, at and (" at " .. at) or "",
        percent(most / total))
    end
  end
  return out
end

-- b = appprofile.bottlenecks(trials, cap, model) : the bottleneck model: stages (of the median
-- trial) and functions and waits (of the capture, at most model.functions and model.waits) as
-- fractions of the run with their Amdahl bounds; CPU-bound when the CPU time is at least
-- model.cpu_bound of the wall time, else waiting or starved of CPU; the first model.top places
-- to look.
function M.bottlenecks(trials, cap, model)
  local wall = wb.stats.median(trials.wall)
  local cpu = wb.stats.median(trials.cpu)
  local b = { wall_seconds = wall, cpu_seconds = cpu, utilisation = cpu / wall, stages = {}, functions = {}, waits = {} }
  for _, name in ipairs(trials.order) do
    local s = wb.stats.median(trials.stages[name])
    b.stages[#b.stages + 1] = { name = name, seconds = s, fraction = s / wall, amdahl = amdahl(s / wall) }
  end
  table.sort(b.stages, function(x, y) return x.seconds > y.seconds end)
  local capture_wall = cap and cap.result and cap.result.wall or wall
  b.capture_wall_seconds = capture_wall
  local capture_cpu = cap and cap.result and (cap.result.user + cap.result.sys) or cpu
  local cp = cap and cap.critical
  if cp and cp.wall_seconds and cp.wall_seconds > 0 then
    path_model(b, cp, model)
  else
    flat_model(b, cap, model, capture_wall, capture_cpu)
  end
  if b.critical then
    local c = b.critical
    local off = math.max(c.runqueue, c.wait)
    if c.oncpu / c.wall_seconds >= model.cpu_bound then
      b.kind = "cpu-bound"
      b.verdict = string.format("CPU-bound: the run's critical path is on a CPU for %s of its wall time (%s of %s)%s.",
        percent(c.oncpu / c.wall_seconds), util.format_seconds(c.oncpu), util.format_seconds(c.wall_seconds),
        processes_text(c))
    elseif c.runqueue >= off and c.runqueue > 0 then
      b.kind = "cpu-contention"
      b.verdict = string.format("CPU-starved: on the critical path %s runnable but not running (the machine was " ..
        "busy, or more threads than CPUs), so timings are inflated; on a CPU %s, waiting on something outside the " ..
        "process tree %s, of %s.", util.format_seconds(c.runqueue), util.format_seconds(c.oncpu),
        util.format_seconds(c.wait), util.format_seconds(c.wall_seconds))
    else
      b.kind = "waiting"
      b.verdict = string.format("Waiting: the run's critical path is on a CPU for %s of its wall time (%s of %s); " ..
        "it waits %s (%s) on something outside the process tree (sleep, I/O, locks, other programs) and is " ..
        "runnable but not running %s%s.", percent(c.oncpu / c.wall_seconds), util.format_seconds(c.oncpu),
        util.format_seconds(c.wall_seconds), util.format_seconds(c.wait), percent(c.wait / c.wall_seconds),
        util.format_seconds(c.runqueue), processes_text(c))
    end
  elseif b.utilisation >= model.cpu_bound then
    b.kind = "cpu-bound"
    b.verdict = string.format("CPU-bound: the process tree is on a CPU for %s of the wall time (%s CPU in %s).",
      percent(b.utilisation), util.format_seconds(cpu), util.format_seconds(wall))
  else
    local blocked, queued = b.offcpu_blocked_seconds, b.offcpu_runqueue_seconds
    local contention = blocked and queued and queued > blocked
    b.kind = contention and "cpu-contention" or "waiting"
    if contention then
      -- waiting for a CPU is the largest off-CPU share: that, not a wait of the program, leads
      b.verdict = string.format("CPU-starved: %s runnable but not running (the machine was busy, or more " ..
        "threads than CPUs), so timings are inflated; on a CPU %s of the wall time (%s CPU in %s), " ..
        "%s blocked (sleep, I/O, locks).", util.format_seconds(queued), percent(b.utilisation),
        util.format_seconds(cpu), util.format_seconds(wall), util.format_seconds(blocked))
    else
      b.verdict = string.format("Waiting: on a CPU only %s of the wall time (%s CPU in %s)%s.",
        percent(b.utilisation), util.format_seconds(cpu), util.format_seconds(wall),
        blocked and string.format("; off the CPU %s blocked (sleep, I/O, locks) and %s runnable " ..
          "but waiting for a CPU after preemption", util.format_seconds(blocked), util.format_seconds(queued or 0))
        or "")
    end
  end
  local candidates = {}
  for _, s in ipairs(b.stages) do candidates[#candidates + 1] = { what = "stage", name = s.name, fraction = s.fraction, amdahl = s.amdahl } end
  for _, f in ipairs(b.functions) do
    candidates[#candidates + 1] = { what = "function", name = f.name, fraction = f.fraction, amdahl = f.amdahl,
      where = f.where }
  end
  for _, w in ipairs(b.waits) do
    candidates[#candidates + 1] = { what = "wait", name = w.name, fraction = w.fraction, amdahl = w.amdahl,
      cause = w.cause and w.cause:match("^%[(.*)%]$") }
  end
  if b.runqueue then
    candidates[#candidates + 1] = { what = "the run queue", name = b.runqueue.name, fraction = b.runqueue.fraction,
      amdahl = b.runqueue.amdahl, label = "waiting for a CPU (runnable, not running: the machine was busy)" }
  end
  if cp and cp.stages and #cp.stages > 0 then candidates = merge_stages(candidates, cp) end
  table.sort(candidates, function(x, y) return x.fraction > y.fraction end)
  b.first = {}
  local seen = {}
  for _, cand in ipairs(candidates) do
    if #b.first < model.top and not seen[cand.name] then
      seen[cand.name] = true
      cand.text = cand.label and string.format("%s %s: removing it entirely gives at most %.1f×",
          percent(cand.fraction), cand.label, cand.amdahl)
        or string.format("%s in %s %s%s%s: removing it entirely gives at most %.1f×", percent(cand.fraction),
          cand.what, cand.name, cand.where and (" at " .. cand.where) or "", cand.cause and (" (" .. cand.cause .. ")") or "",
          cand.amdahl)
      b.first[#b.first + 1] = cand
    end
  end
  return b
end

-- md = appprofile.markdown(r, limits) : the profile r as Markdown (summary.md): timing, the
-- bottlenecks, then a section per pass that found something (limits.python Python functions,
-- limits.cprofile cProfile rows, limits.processes processes by peak RSS), and notes of what was skipped
function M.markdown(r, limits)
  local argv, trials, b, cap, cg, cp = r.argv, r.trials, r.bottlenecks, r.capture, r.callgrind, r.cprofile
  local T = wb.report.table
  local out = { "# Application profile", "", "`" .. util.shell_join(argv) .. "`", "" }
  local function heading(title)
    out[#out + 1] = ""
    out[#out + 1] = title
    out[#out + 1] = ""
  end
  local w = wb.stats.summary(trials.wall)
  out[#out + 1] = string.format("Wall time over %d trials: median %s, mean %s ± %s (min %s, max %s).", w.n,
    util.format_seconds(w.median), util.format_seconds(w.mean), util.format_seconds(w.stddev),
    util.format_seconds(w.min), util.format_seconds(w.max))
  local itf = trials.interference
  if itf then
    out[#out + 1] = ""
    out[#out + 1] = string.format("Interference: waiting for a CPU %s per trial (%s of wall)%s.",
      util.format_seconds(itf.runq_mean_seconds), percent(itf.runq_share),
      itf.others_cpu_mean and string.format(", other tasks using %.1f CPUs", itf.others_cpu_mean) or "")
  end
  if r.previous_text then
    out[#out + 1] = ""
    out[#out + 1] = "## Compared with the previous run"
    out[#out + 1] = ""
    local previous = r.previous
    out[#out + 1] = r.previous_text
    if previous and #previous.rows > 0 then
      out[#out + 1] = ""
      out[#out + 1] = (require("wb.compare").markdown(previous):gsub("\n$", ""))
    end
  end
  out[#out + 1] = ""
  out[#out + 1] = "## Bottlenecks"
  out[#out + 1] = ""
  out[#out + 1] = b.verdict
  out[#out + 1] = ""
  out[#out + 1] = "Where to look first:"
  out[#out + 1] = ""
  if b.capture_wall_seconds and math.abs(b.capture_wall_seconds - b.wall_seconds) > 0.005 * b.wall_seconds then
    out[#out + 1] = string.format("(Stages are shares of the median trial's wall time, %s; functions and waits " ..
      "of the profiled run's, %s, so the same wait can show two shares.)",
      util.format_seconds(b.wall_seconds), util.format_seconds(b.capture_wall_seconds))
    out[#out + 1] = ""
  end
  for i, f in ipairs(b.first) do out[#out + 1] = string.format("%d. %s", i, f.text) end
  if #b.stages > 0 then
    heading("## Stages (the application's own timers, " .. (trials.stage_source or "") .. ")")
    local rows = { { "stage", "median", "share of wall (median trial, " .. util.format_seconds(b.wall_seconds) .. ")", "Amdahl bound" } }
    for _, s in ipairs(b.stages) do
      rows[#rows + 1] = { s.name, util.format_seconds(s.seconds), percent(s.fraction), string.format("%.1f×", s.amdahl) }
    end
    out[#out + 1] = T(rows)
  end
  if #b.functions > 0 then
    heading("## Functions on the CPU (self time)")
    local rows = { { "function", "where (most self time)", "share of CPU samples", "share of wall (profiled run, " ..
      util.format_seconds(b.capture_wall_seconds) .. ")", "Amdahl bound" } }
    for _, f in ipairs(b.functions) do
      rows[#rows + 1] = { f.name, f.where or "", percent(f.cpu_fraction), percent(f.fraction), string.format("%.1f×", f.amdahl) }
    end
    out[#out + 1] = T(rows)
  end
  if #b.waits > 0 then
    heading("## Off the CPU (blocked, by the innermost user-space frame)")
    if b.offcpu_runqueue_seconds then
      out[#out + 1] = string.format("Blocked %s; waiting for a CPU after preemption (run queue) %s.",
        util.format_seconds(b.offcpu_blocked_seconds or 0), util.format_seconds(b.offcpu_runqueue_seconds))
      out[#out + 1] = ""
    end
    local rows = { { "where", "time", "share of wall (profiled run, " .. util.format_seconds(b.capture_wall_seconds) .. ")" } }
    for _, x in ipairs(b.waits) do rows[#rows + 1] = { x.name, util.format_seconds(x.seconds), percent(x.fraction) } end
    out[#out + 1] = T(rows)
  end
  if cap and cap.counters then
    heading("## Counters")
    local rows = { { "event", "value", "note" } }
    for _, name in ipairs(util.sorted_keys(cap.counters)) do
      local ct = cap.counters[name]
      if ct.available then
        rows[#rows + 1] = { name, require("wb.capture_report").counter_text { available = true, value = ct.value, unit = ct.unit },
          ct.scaled and "scaled (multiplexed)" or "" }
      else
        rows[#rows + 1] = { name, "unavailable", ct.reason or "" }
      end
    end
    out[#out + 1] = T(rows)
  end
  local py = cap and cap.python
  if py and py.oncpu and py.oncpu.samples > 0 then
    heading("## Python functions (sampled on-CPU, " .. py.oncpu.folded:match("profiles/.*$") .. ")")
    local rows = { { "function", "self", "total" } }
    for i, f in ipairs(py.oncpu.top) do
      if i > limits.python then break end
      rows[#rows + 1] = { f.name, percent(f.self_fraction), percent(f.total_fraction) }
    end
    out[#out + 1] = T(rows)
  end
  if cp and cp.top then
    heading("## cProfile (deterministic; cumulative time, " .. cp.file .. ")")
    out[#out + 1] = (wb.cprofile.table_text(cp, limits.cprofile):gsub("\n$", ""))
  end
  local mem = cap and cap.memory
  if mem and not mem.skipped and mem.peak_rss_kb then
    heading("## Memory (the capture run)")
    out[#out + 1] = string.format("Tree peak RSS %s at %s.", wb.capture_report.kib_text(mem.peak_rss_kb),
      util.format_seconds(mem.peak_t))
    out[#out + 1] = ""
    local rows = { { "process", "peak RSS", "own peak (VmHWM)" } }
    for i, p in ipairs(wb.capture_report.largest(mem.processes)) do
      if i > (limits.processes or 5) then break end
      rows[#rows + 1] = { p.comm .. " " .. p.pid, wb.capture_report.kib_text(p.peak_rss_kb), wb.capture_report.kib_text(p.hwm_kb) }
    end
    out[#out + 1] = T(rows)
    if mem.stages and #mem.stages > 0 then
      out[#out + 1] = ""
      out[#out + 1] = "Stages (from the application's stage lines on stderr):"
      out[#out + 1] = ""
      out[#out + 1] = T(require("wb.memory_stages").rows(mem.stages, wb.capture_report.kib_text, util.format_seconds))
    end
    local a = cap.alloc
    if a and not a.skipped then
      out[#out + 1] = string.format("Allocations: %s allocated (estimated from %d samples), %s never freed.",
        util.format_bytes(a.estimated_bytes), a.samples, util.format_bytes(a.leak and a.leak.estimated_bytes or 0))
    end
  end
  if cg and cg.top then
    heading("## callgrind (instructions)")
    local rows = { { "function", "instructions", "share" } }
    for _, f in ipairs(cg.top) do rows[#rows + 1] = { f.name, util.thousands(f.instructions), percent(f.fraction) } end
    out[#out + 1] = T(rows)
  end
  local notes = {}
  if trials.malformed_stages then
    notes[#notes + 1] = string.format("- %d stage line%s left out: the seconds are not a number (first: `%s`)",
      trials.malformed_stages, trials.malformed_stages == 1 and "" or "s", trials.malformed_example)
  end
  for _, x in ipairs(cap and cap.warnings or {}) do notes[#notes + 1] = "- " .. x end
  local passes = { cap and cap.oncpu, cap and cap.offcpu, cg, cp } -- with holes: no ipairs
  for i = 1, 4 do
    local p = passes[i]
    if p and p.skipped then notes[#notes + 1] = "- skipped: " .. p.skipped end
  end
  if #notes > 0 then
    heading("## Notes")
    for _, n in ipairs(notes) do out[#out + 1] = n end
  end
  return table.concat(out, "\n") .. "\n"
end

-- html = appprofile.html(md, r) : report.html: the summary's Markdown, the flame graphs, and the
-- trials' timing table
function M.html(md, r)
  local trials, argv, cap = r.trials, r.argv, r.capture
  -- the summary's Markdown without its title (the page has its own): its opening lines, then a
  -- section per heading
  local parts = { { lines = {} } }
  for line in (md:gsub("^# [^\n]*\n", "") .. "\n"):gmatch("(.-)\n") do
    local title = line:match("^## (.*)$")
    if title then parts[#parts + 1] = { title = title, lines = {} } else table.insert(parts[#parts].lines, line) end
  end
  local blocks = {}
  for _, part in ipairs(parts) do
    if not (part.title or ""):match("^Memory") then -- the page's own Memory section has the chart
      local body = page.markdown(table.concat(part.lines, "\n"), { shift = 0 })
      blocks[#blocks + 1] = part.title and page.section(part.title, body) or body
    end
  end
  for _, side in ipairs({ { "oncpu", "On-CPU flame graph" }, { "offcpu", "Off-CPU flame graph (time blocked, by stack)" } }) do
    local p = cap and cap[side[1]]
    if p and p.svg then
      local rel = p.svg:match("(profiles/[^/]+)$") or p.svg -- relative to report.html
      blocks[#blocks + 1] = page.section(side[2], { page.raw('<object type="image/svg+xml" data="' .. page.escape(rel)
        .. '" style="width:100%"></object>\n'), page.p(page.link(rel, "open")) })
    end
  end
  if cap then
    for _, b in ipairs(wb.capture_report.memory_sections(cap)) do blocks[#blocks + 1] = b end
  end
  local doc = page.document { title = "Application profile", generator = "wb " .. wb.version,
    meta = { html.settings_meta { runs = #trials.wall, warmup = trials.warmup, order = "interleaved", shell = false },
      html.host_meta(nil, nil, wb.version) }, footer = "Generated by wb " .. wb.version }
  for _, b in ipairs(blocks) do doc:add(b) end
  for _, b in ipairs(html.timings { { name = util.shell_join(argv), samples = { wall = trials.wall:totable() } } }) do
    doc:add(b)
  end
  return doc:html()
end

-- doc = appprofile.summary(r) : summary.json (schema wb.profile_app v1), the folded stacks left out
function M.summary(r)
  local trials, cap = r.trials, r.capture
  local doc = json.object()
  doc.schema_name = M.SCHEMA
  doc.schema_version = 1
  doc.command = json.array(r.argv)
  doc.trials = { n = #trials.wall, wall = wb.stats.summary(trials.wall), cpu = wb.stats.summary(trials.cpu),
    maxrss_kb = wb.stats.summary(trials.rss), wall_samples = json.array(trials.wall:totable()) }
  doc.bottlenecks = r.bottlenecks
  local function without_text(p)
    if type(p) ~= "table" then return p end
    local q = {}
    for k, v in pairs(p) do if k ~= "folded_text" then q[k] = v end end
    return q
  end
  doc.capture = cap and { method = cap.method, counters = cap.counters, oncpu = without_text(cap.oncpu),
    offcpu = without_text(cap.offcpu), warnings = json.array(cap.warnings) } or json.null
  doc.callgrind = r.callgrind or json.null
  doc.cprofile = r.cprofile or json.null
  doc.trials.interference = trials.interference or json.null
  local cmp = require "wb.compare"
  local previous = json.object()
  previous.text = r.previous_text or json.null
  previous.path = r.previous and r.previous.base.path or json.null
  previous.rows = json.array()
  for _, row in ipairs(r.previous and r.previous.rows or {}) do previous.rows[#previous.rows + 1] = cmp.row_object(row) end
  previous.summary = r.previous and cmp.summary_object(r.previous) or json.null
  doc.previous = previous
  return doc
end

return M
