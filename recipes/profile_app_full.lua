-- Full application profile: timing trials, counters, on/off-CPU flame graphs, stages, bottleneck report.
--
--   wb profile_app_full                                  # the bundled example (make demo)
--   wb profile_app_full 'tool.command=[xz,-9,-k,-f,data.bin]' tool.trials=3
--   wb profile_app_full tool.callgrind=true --dry-run    # the plan and budget only
-- Writes into the run directory: summary.md, summary.json (schema wb.profile_app), report.html,
-- profiles/app.{oncpu,offcpu}.{folded,svg,speedscope.json}, trace.json, logs/, manifest.json.
local wb = require "wb"
local json, util = wb.json, wb.util

local SCHEMA = "wb.profile_app"

local function strings(list, run_dir)
  local out = {}
  for i, a in ipairs(list) do out[i] = tostring(a):gsub("{run_dir}", run_dir) end
  return out
end

local opt = util.opt

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
  local out = {}
  for name, secs in text:gmatch(tool.stage_pattern) do out[#out + 1] = { name, tonumber(secs) } end
  return out, #out > 0 and "stderr stage lines" or nil
end

-- Headline trials: wall, user, sys, peak RSS and the app's stages per trial.
local function run_trials(c, tool, argv, summary_path)
  local t = { wall = wb.stats.samples(), cpu = wb.stats.samples(), rss = wb.stats.samples(), stages = {}, order = {},
    warmup = tool.warmup }
  for i = 1, tool.warmup + tool.trials do
    local measured = i > tool.warmup
    local name = measured and ("trial" .. (i - tool.warmup)) or ("warmup" .. i)
    c:run(name, function(rec)
      local res = wb.check(c:spawn(name, { argv = argv, cwd = opt(tool.cwd), env = tool.env, timeout = tool.timeout }))
      if not res.ok then return false end
      local stages, source = trial_stages(tool, summary_path, c.dir .. "/" .. rec.stderr_log)
      t.stage_source = t.stage_source or source
      rec.role = measured and "trial" or "warmup"
      rec.metrics = { wall_seconds = res.wall, cpu_seconds = res.user + res.sys, maxrss_kb = res.maxrss_kb }
      if measured then
        t.wall:add(res.wall)
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
    end)
    if c:record(name).status == "failed" then
      wb.fail(string.format("%s failed (exit %s); see %s/logs/%s.stderr.log", argv[1],
        tostring(c:record(name).return_code), c.dir, name), 0)
    end
  end
  return t
end

-- callgrind: the functions with the most instructions (Ir), from callgrind_annotate.
local function run_callgrind(c, tool, argv)
  local valgrind = wb.proc.which("valgrind")
  if not valgrind then return { skipped = "valgrind is not on PATH" } end
  local out = c.dir .. "/profiles/callgrind.out"
  wb.fs.mkdir_p(c.dir .. "/profiles")
  local vargv = { valgrind, "--tool=callgrind", "--callgrind-out-file=" .. out }
  for _, a in ipairs(argv) do vargv[#vargv + 1] = a end
  local res
  c:run("callgrind", function(rec)
    res = wb.check(c:spawn("callgrind", { argv = vargv, cwd = opt(tool.cwd), env = tool.env, timeout = tool.timeout * 50 }))
    rec.profiler = "callgrind"
    return res.ok
  end)
  if not res or not res.ok then return { skipped = "the callgrind run failed; see logs/callgrind.stderr.log" } end
  local ann = wb.proc.run { argv = { "callgrind_annotate", "--threshold=100", out }, stdout = "capture", stderr = "capture" }
  if not ann.ok then return { skipped = "callgrind_annotate failed: " .. ann.stderr } end
  local total = tonumber(((ann.stdout:match("([%d,]+)[^\n]-PROGRAM TOTALS") or "0"):gsub(",", "")))
  local top = {}
  for count, where in ann.stdout:gmatch("\n%s*([%d,]+) %([%s%d.]+%%%)%s+([^\n]+)") do
    local n = tonumber((count:gsub(",", "")))
    if where ~= "PROGRAM TOTALS" and n and total > 0 and #top < 15 then
      where = where:gsub("%s+%[[^%]]*%]$", "")
      local file, fn = where:match("^(.*):([^:]+)$")
      top[#top + 1] = { name = fn and (fn .. " (" .. file:match("[^/]*$") .. ")") or where, instructions = n, fraction = n / total }
    end
  end
  return { file = "profiles/callgrind.out", total_instructions = total, top = top }
end

local function amdahl(f) return f < 1 and 1 / (1 - f) or math.huge end

-- Blocked (not run-queue) off-CPU time by the innermost user-space frame, in seconds, largest first.
local function blocked_waits(folded_text)
  local by = {}
  for line in (folded_text or ""):gmatch("[^\n]+") do
    local stack, count = line:match("^(.*) (%d+)$")
    if stack and not stack:find("[run queue]", 1, true) then
      local leaf
      for frame in stack:gmatch("[^;]+") do
        if not frame:find("_%[k%]$") then leaf = frame end
      end
      if leaf then by[leaf] = (by[leaf] or 0) + tonumber(count) / 1e9 end
    end
  end
  local out = {}
  for name, secs in pairs(by) do out[#out + 1] = { name = name, seconds = secs } end
  table.sort(out, function(a, b) return a.seconds > b.seconds end)
  return out
end

local function percent(f) return string.format("%.0f%%", f * 100) end

-- The bottleneck model: stages and functions as fractions of the run, CPU-bound or waiting, and
-- the first places to look.
local function bottlenecks(tool, trials, cap)
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
  if cap and cap.oncpu and cap.oncpu.top then
    for _, f in ipairs(cap.oncpu.top) do
      local frac = (f.self_fraction or 0) * capture_cpu / capture_wall
      if #b.functions < 10 and frac > 0 then
        b.functions[#b.functions + 1] = { name = f.name, fraction = frac, cpu_fraction = f.self_fraction, amdahl = amdahl(frac) }
      end
    end
  end
  if cap and cap.offcpu and cap.offcpu.folded_text then
    for _, w in ipairs(blocked_waits(cap.offcpu.folded_text)) do
      if #b.waits < 5 then
        w.fraction = w.seconds / capture_wall
        w.amdahl = amdahl(w.fraction)
        b.waits[#b.waits + 1] = w
      end
    end
    b.offcpu_blocked_seconds = cap.offcpu.blocked_seconds
    b.offcpu_runqueue_seconds = cap.offcpu.runqueue_seconds
  end
  if b.utilisation >= 0.8 then
    b.kind = "cpu-bound"
    b.verdict = string.format("CPU-bound: the process tree is on a CPU for %s of the wall time (%s CPU in %s).",
      percent(b.utilisation), util.format_seconds(cpu), util.format_seconds(wall))
  else
    local blocked, queued = b.offcpu_blocked_seconds, b.offcpu_runqueue_seconds
    local contention = blocked and queued and queued > blocked
    b.kind = contention and "cpu-contention" or "waiting"
    b.verdict = string.format("%s: on a CPU only %s of the wall time (%s CPU in %s)%s.",
      contention and "Starved of CPU" or "Waiting", percent(b.utilisation), util.format_seconds(cpu),
      util.format_seconds(wall),
      blocked and string.format("; off the CPU %s blocked (sleep, I/O, locks) and %s runnable " ..
        "but waiting for a CPU after preemption%s", util.format_seconds(blocked), util.format_seconds(queued or 0),
        contention and " — the machine is busy, so timings are inflated" or "") or "")
  end
  local candidates = {}
  for _, s in ipairs(b.stages) do candidates[#candidates + 1] = { what = "stage", name = s.name, fraction = s.fraction, amdahl = s.amdahl } end
  for _, f in ipairs(b.functions) do candidates[#candidates + 1] = { what = "function", name = f.name, fraction = f.fraction, amdahl = f.amdahl } end
  for _, w in ipairs(b.waits) do candidates[#candidates + 1] = { what = "wait", name = w.name, fraction = w.fraction, amdahl = w.amdahl } end
  table.sort(candidates, function(x, y) return x.fraction > y.fraction end)
  b.first = {}
  local seen = {}
  for _, cand in ipairs(candidates) do
    if #b.first < tool.top and not seen[cand.name] then
      seen[cand.name] = true
      cand.text = string.format("%s in %s %s: removing it entirely gives at most %.1f×", percent(cand.fraction),
        cand.what, cand.name, cand.amdahl)
      b.first[#b.first + 1] = cand
    end
  end
  return b
end

local function markdown(argv, trials, b, cap, cg, cp)
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
    local rows = { { "function", "share of CPU samples", "share of wall (profiled run, " .. util.format_seconds(b.capture_wall_seconds) .. ")", "Amdahl bound" } }
    for _, f in ipairs(b.functions) do
      rows[#rows + 1] = { f.name, percent(f.cpu_fraction), percent(f.fraction), string.format("%.1f×", f.amdahl) }
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
      if i > 10 then break end
      rows[#rows + 1] = { f.name, percent(f.self_fraction), percent(f.total_fraction) }
    end
    out[#out + 1] = T(rows)
  end
  if cp and cp.top then
    heading("## cProfile (deterministic; cumulative time, " .. cp.file .. ")")
    out[#out + 1] = (wb.cprofile.table_text(cp, 15):gsub("\n$", ""))
  end
  if cg and cg.top then
    heading("## callgrind (instructions)")
    local rows = { { "function", "instructions", "share" } }
    for _, f in ipairs(cg.top) do rows[#rows + 1] = { f.name, util.thousands(f.instructions), percent(f.fraction) } end
    out[#out + 1] = T(rows)
  end
  local notes = {}
  for _, x in ipairs(cap and cap.warnings or {}) do notes[#notes + 1] = "- " .. x end
  for _, p in ipairs({ cap and cap.oncpu, cap and cap.offcpu, cg, cp }) do
    if p and p.skipped then notes[#notes + 1] = "- skipped: " .. p.skipped end
  end
  if #notes > 0 then
    heading("## Notes")
    for _, n in ipairs(notes) do out[#out + 1] = n end
  end
  return table.concat(out, "\n") .. "\n"
end

local function html(md_sections, trials, argv, cap)
  local esc = function(s) return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" })) end
  -- the summary's Markdown as HTML, without its title (the page has its own), headings under the page's h1
  local body = { "<section>\n", require("wb.markdown").html((md_sections:gsub("^# [^\n]*\n", "")), { shift = 0 }),
    "</section>\n" }
  for _, side in ipairs({ { "oncpu", "On-CPU flame graph" }, { "offcpu", "Off-CPU flame graph (time blocked, by stack)" } }) do
    local p = cap and cap[side[1]]
    if p and p.svg then
      local rel = esc(p.svg:match("(profiles/[^/]+)$") or p.svg) -- relative to report.html
      body[#body + 1] = string.format('<section>\n<h2>%s</h2>\n<object type="image/svg+xml" data="%s" ' ..
        'style="width:100%%"></object>\n<p><a href="%s">open</a></p>\n</section>\n', side[2], rel, rel)
    end
  end
  local summary = {
    schema_name = "wb.bench", schema_version = 1, wb_version = wb.version,
    settings = { runs = #trials.wall, warmup = trials.warmup, order = "interleaved", shell = false },
    commands = { { name = util.shell_join(argv), command = util.shell_join(argv), samples = { wall = trials.wall:totable() },
      stats = { wall = wb.stats.summary(trials.wall) }, warnings = json.array() } },
    comparisons = json.array(),
  }
  return wb.report.html(summary, { title = "Application profile", sections = { table.concat(body) } })
end

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  config = "profile_app_full",
  types = {
    ["tool.command"] = "list", ["tool.trials"] = "integer>=1", ["tool.warmup"] = "integer>=0",
    ["tool.timeout"] = "number>0|null", ["tool.freq"] = "integer>=1", ["tool.top"] = "integer>=1",
    ["tool.counters"] = "boolean", ["tool.oncpu"] = "boolean", ["tool.offcpu"] = "boolean",
    ["tool.callgrind"] = "boolean", ["tool.cprofile"] = "boolean", ["tool.max_subprocess_runs"] = "integer>=0|null",
    ["tool.max_major_profiler_runs"] = "integer>=0|null", ["tool.allow_over_budget"] = "boolean",
  },
  run = function(ctx)
    local tool = ctx.cfg.tool
    local registry = wb.capture.profilers()
    local c = wb.campaign.open(ctx, { profilers = registry, inputs = {} })
    local argv = strings(tool.command, c.dir)
    local summary_path = tool.summary_path ~= wb.null and tostring(tool.summary_path):gsub("{run_dir}", c.dir) or nil
    local names, cases = {}, {}
    for i = 1, tool.warmup do names[#names + 1] = "warmup" .. i end
    for i = 1, tool.trials do names[#names + 1] = "trial" .. i end
    for _, n in ipairs(names) do cases[#cases + 1] = { name = n, argv = argv } end
    local capture_wanted = tool.counters or tool.oncpu or tool.offcpu
    local callgrind = tool.callgrind and wb.proc.which("valgrind") ~= nil
    local sections = { { name = "timing trials", cases = cases } }
    if capture_wanted then
      names[#names + 1] = "capture"
      sections[#sections + 1] = { name = "capture (counters, on-CPU, off-CPU)", cases = { { name = "capture", argv = argv } }, subprocess_runs = 1, profiler_runs = 1 }
    end
    if callgrind then
      names[#names + 1] = "callgrind"
      local vargv = { "valgrind", "--tool=callgrind" }
      for _, a in ipairs(argv) do vargv[#vargv + 1] = a end
      sections[#sections + 1] = { name = "callgrind", cases = { { name = "callgrind", argv = vargv } }, subprocess_runs = 1, profiler_runs = 1 }
    end
    local cprofile = tool.cprofile and wb.cprofile.python_of(argv) ~= nil
    if cprofile then
      names[#names + 1] = "cprofile"
      sections[#sections + 1] = { name = "cProfile", cases = { { name = "cprofile", argv = argv } }, subprocess_runs = 1, profiler_runs = 1 }
    end
    c:declare(names)
    if c:plan { sections = sections } then
      return 0
    end
    local trials = run_trials(c, tool, argv, summary_path)
    -- the trials as one record with their samples: what a later run's comparison tests (the trial
    -- records themselves are not compared one by one)
    local headline = c:record("trials")
    headline.status, headline.role, headline.trials = "success", "run", #trials.wall
    headline.metrics, headline.samples = {}, {}
    local per_trial = { wall_seconds = trials.wall, cpu_seconds = trials.cpu, maxrss_kb = trials.rss }
    for _, stage in ipairs(trials.order) do per_trial["stage_" .. stage:gsub("[^%w_]", "_") .. "_seconds"] = trials.stages[stage] end
    for k, xs in pairs(per_trial) do
      headline.metrics[k] = wb.stats.median(xs)
      headline.samples[k] = xs:totable()
    end
    local cap
    if capture_wanted then
      c:run("capture", function(rec)
        cap = wb.check(wb.capture.run { argv = argv, cwd = opt(tool.cwd), env = tool.env, timeout = tool.timeout,
          counters = tool.counters, oncpu = tool.oncpu, offcpu = tool.offcpu, freq = tool.freq,
          dir = c.dir .. "/profiles", name = "app", stdout = { file = c.dir .. "/logs/capture.stdout.log" },
          stderr = { file = c.dir .. "/logs/capture.stderr.log" } })
        rec.method = cap.method
        rec.wall_time_seconds = cap.result and cap.result.wall
        if summary_path then wb.fs.remove(summary_path) end
        rec.stopped_by = cap.stopped -- a first Ctrl-C stops the command; what it recorded is kept
        return cap.ok
      end)
    end
    local cg = callgrind and run_callgrind(c, tool, argv) or (tool.callgrind and { skipped = "valgrind is not on PATH" }) or nil
    local cp = tool.cprofile and wb.cprofile.run(c, argv, { cwd = opt(tool.cwd), env = tool.env, timeout = tool.timeout })
    local b = bottlenecks(tool, trials, cap)
    local md = markdown(argv, trials, b, cap, cg, cp)
    local doc = json.object()
    doc.schema_name = SCHEMA
    doc.schema_version = 1
    doc.command = json.array(argv)
    doc.trials = { n = #trials.wall, wall = wb.stats.summary(trials.wall), cpu = wb.stats.summary(trials.cpu),
      maxrss_kb = wb.stats.summary(trials.rss), wall_samples = json.array(trials.wall:totable()) }
    doc.bottlenecks = b
    local function without_text(p)
      if type(p) ~= "table" then return p end
      local q = {}
      for k, v in pairs(p) do if k ~= "folded_text" then q[k] = v end end
      return q
    end
    doc.capture = cap and { method = cap.method, counters = cap.counters, oncpu = without_text(cap.oncpu),
      offcpu = without_text(cap.offcpu), warnings = json.array(cap.warnings) } or json.null
    doc.callgrind = cg or json.null
    doc.cprofile = cp or json.null
    c:write_json("summary.json", doc)
    c:write("summary.md", md)
    c:write("report.html", html(md, trials, argv, cap))
    c:write("trace.json", wb.flame.trace(wb.flame.trace_from_runs(c.manifest.runs), { process_name = "wb profile_app_full" }))
    c.manifest.profilers = json.array(wb.capture.profilers())
    local result = c:finish()
    io.write(md)
    io.write("\nreport: ", c.dir, "/report.html\n")
    return result.status == "complete" and 0 or 1
  end,
}
