-- wb.bench: hyperfine-grade timing of commands (see docs/internal/bench-summary-schema.md).
--
--   local summary = wb.bench.run {
--     commands = { "sleep 0.05", { name = "b", argv = { "sleep", "0.1" } } },  -- a table may name
--                            -- its own cwd (two builds of one program side by side)
--     runs = nil,            -- fixed count; nil = automatic: at least min_runs and min_time seconds
--     min_runs = 10, min_time = 3, max_runs = nil, warmup = 0,
--     setup = nil, prepare = nil, conclude = nil, cleanup = nil,   -- shell commands
--     ignore_failure = false, shell = false, order = "interleaved" | "random", seed = 1,
--     scan = { threads = { 1, 2, 4 } },   -- substituted into {threads} in the commands
--     reference = nil,       -- name or index of the command the others are compared with
--     threshold = 0.01,      -- a difference of the means below it is no difference
--     timeout = nil,         -- seconds per run
--     cwd = nil,             -- working directory of the commands (and of setup ... cleanup)
--     alloc_runs = 0,        -- runs more of each command, after the timed ones and untimed, that
--                            -- count the bytes its process tree allocates, exactly (wb.alloc.counter)
--   }
--
-- Commands run without a shell (split into words as a shell would) unless shell = true; then
-- /bin/sh -c runs them and the shell's own spawn cost, measured first, is subtracted. Several
-- commands run interleaved, each round's order rotated by one (A B, B A, A B ... after the first
-- timed run of each), or in seeded random blocks, so a drifting machine hits all alike and no
-- command keeps the place in the order that runs faster. Samples are kept in compact
-- wb.stats.samples arrays.
local clock = require "wb.clock"
local core = require "wb.core"
local errors = require "wb.errors"
local json = require "wb.json"
local proc = require "wb.proc"
local stats = require "wb.stats"
local util = require "wb.util"

local interference = require "wb.interference"

local M = {}
M.SCHEMA_NAME = "wb.bench"
M.SCHEMA_VERSION = 1
M.METRICS = { "wall", "user", "sys", "maxrss_kb" }
M.MIN_OUTLIER_RUNS = 5 -- fewer runs than this have no outliers worth a warning (a modified z-score needs a spread)

local function usage(msg) errors.raise(2, "bench: " .. msg, 0) end

-- values = bench.parse_scan(v) : a list from a list, "1,2,4", "1..8" (doubling when it starts
-- at 1: 1,2,4,8) or "1:8:2" (start:stop:step)
function M.parse_scan(v)
  if type(v) == "table" then return v end
  if type(v) == "number" then return { v } end
  v = tostring(v)
  local a, b = v:match("^(%-?%d+)%.%.(%-?%d+)$")
  if a then
    local out, x = {}, tonumber(a)
    while x <= tonumber(b) do
      out[#out + 1] = x
      x = (tonumber(a) >= 1) and x * 2 or x + 1
    end
    return out
  end
  local s, e, step = v:match("^(%-?[%d.]+):(%-?[%d.]+):([%d.]+)$")
  if s then
    local out = {}
    for x = tonumber(s), tonumber(e) + 1e-9, tonumber(step) do out[#out + 1] = math.tointeger(x) or x end
    return out
  end
  local out = {}
  for item in v:gmatch("[^,]+") do out[#out + 1] = tonumber(item) or item end
  return out
end

local function expand_scan(commands, scan)
  if not scan or next(scan) == nil then return commands, nil end
  local axes = {}
  for _, name in ipairs(util.sorted_keys(scan)) do axes[#axes + 1] = { name, M.parse_scan(scan[name]) } end
  if #axes > 1 then usage("scan takes one parameter at a time (got " .. #axes .. ")") end
  local param, values = axes[1][1], axes[1][2]
  local out = {}
  for _, c in ipairs(commands) do
    for _, v in ipairs(values) do
      local text = c.command:gsub("{" .. param .. "}", tostring(v))
      local argv = nil
      if c.argv then
        argv = {}
        for i, a in ipairs(c.argv) do argv[i] = a:gsub("{" .. param .. "}", tostring(v)) end
      end
      out[#out + 1] = { name = c.name:gsub("{" .. param .. "}", tostring(v)), command = text, argv = argv,
        cwd = c.cwd, parameters = { [param] = v } }
    end
  end
  return out, { parameter = param, values = values }
end

local function count_arg(spec, key, min)
  local v = spec[key]
  if v ~= nil and (math.type(v) ~= "integer" or v < min) then
    usage(string.format("%s must be an integer >= %d, got %s", key, min, tostring(v)))
  end
end

local function normalise(spec)
  count_arg(spec, "runs", 1)
  count_arg(spec, "min_runs", 1)
  count_arg(spec, "max_runs", 1)
  count_arg(spec, "warmup", 0)
  count_arg(spec, "alloc_runs", 0)
  local list = {}
  for i, c in ipairs(spec.commands or {}) do
    if type(c) == "string" then
      list[i] = { name = c, command = c }
    elseif type(c) == "table" and (c.argv or c.command) then
      list[i] = { name = c.name or c.command or util.shell_join(c.argv), command = c.command or util.shell_join(c.argv),
        argv = c.argv, cwd = c.cwd }
    else
      usage("command " .. i .. " must be a string or {name, argv [, cwd]}")
    end
  end
  if #list == 0 then usage("no command to benchmark") end
  local cmds, scan = expand_scan(list, spec.scan)
  for _, c in ipairs(cmds) do
    if spec.shell then
      c.argv = { "/bin/sh", "-c", c.command }
    elseif not c.argv then
      local argv, err = util.split_words(c.command)
      if not argv then usage("'" .. c.command .. "': " .. err) end
      if #argv == 0 then usage("empty command") end
      for _, w in ipairs(argv) do -- a word a shell would have taken as an operator
        if w:match("^[|&;<>]") or w:match("^%d[<>]") or w == "$(" then
          usage("'" .. c.command .. "': '" .. w .. "' is shell syntax, but commands run without a shell; " ..
            "add shell=true to run them with /bin/sh -c")
        end
      end
      c.argv = argv
    end
    c.samples = {}
    for _, m in ipairs(M.METRICS) do -- sized when the run count is known
      c.samples[m] = stats.samples(spec.runs, m == "maxrss_kb" and "integer" or "float")
    end
    c.evidence = interference.new_lists()
    c.exit_codes = stats.samples(spec.runs, "integer")
    c.failures = 0
    c.maxrss_bounded = 0 -- runs whose maxrss_kb is only an upper bound (see wb.proc)
  end
  return cmds, scan
end

local function run_shell(cmd, what, spec)
  if not cmd or cmd == "" then return end
  local res, err = proc.run { argv = { "/bin/sh", "-c", cmd }, stdout = "null", stderr = "capture",
    timeout = spec.timeout, cwd = spec.cwd }
  if not res then errors.raise(1, "bench: " .. what .. ": " .. err, 0) end
  if not res.ok then
    errors.raise(1, string.format("bench: %s command failed (exit %s): %s%s", what,
      tostring(res.code or ("signal " .. tostring(res.signal))), cmd,
      res.stderr ~= "" and (": " .. res.stderr:gsub("%s+$", "")) or ""), 0)
  end
end

-- The median wall time of `/bin/sh -c ''`, subtracted from shell-run commands.
local function shell_spawn_cost(n)
  local s = stats.samples()
  for _ = 1, n do
    local res = proc.run { argv = { "/bin/sh", "-c", "" }, stdout = "null", stderr = "null" }
    s:add(res.wall)
  end
  return stats.median(s)
end

local function measure(c, spec, record)
  c.runner = c.runner or proc.runner { argv = c.argv, stdout = spec.output or "null", stderr = "null",
    stdin = "null", timeout = spec.timeout, cwd = c.cwd or spec.cwd }
  local res, err = c.runner:run() -- a table the next run reuses
  if not res then errors.raise(1, "bench: " .. c.name .. ": " .. err, 0) end
  if not res.ok and not spec.ignore_failure then
    local why = res.timed_out and "timed out" or res.code and ("exit code " .. res.code) or ("signal " .. tostring(res.signal))
    errors.raise(1, string.format("bench: command '%s' failed (%s); use ignore_failure=true to measure it anyway", c.name, why), 0)
  end
  if record then
    local shell = spec.shell_cost or 0
    c.samples.wall:add(math.max(res.wall - shell, 0))
    c.samples.user:add(res.user)
    c.samples.sys:add(res.sys)
    c.samples.maxrss_kb:add(res.maxrss_kb)
    interference.add(c.evidence, res, shell)
    c.exit_codes:add(res.code or (128 + (res.signal or 0)))
    if not res.ok then c.failures = c.failures + 1 end
    if res.maxrss_bound then c.maxrss_bounded = c.maxrss_bounded + 1 end
  end
  return res
end

-- The allocation runs of command c (spec.alloc_runs, untimed, each between prepare and conclude):
-- the bytes its process tree allocated in each, exactly (wb.alloc.counter), into
-- c.samples.alloc_bytes; c.alloc = {runs, allocations (mean), processes, foreign} or {skipped = why}
local function count_allocations(c, spec)
  local ct <close> = require("wb.alloc").counter({ argv = c.argv, cwd = c.cwd or spec.cwd })
  if ct.skipped then
    c.alloc = { skipped = ct.skipped }
    return
  end
  c.samples.alloc_bytes = stats.samples(spec.alloc_runs, "float")
  local allocations, processes, foreign = 0, 0, 0
  for _ = 1, spec.alloc_runs do
    assert(ct:reset())
    run_shell(spec.prepare, "prepare", spec)
    local res, err = proc.run { argv = ct.argv, stdout = "null", stderr = "null", stdin = "null",
      timeout = spec.timeout, cwd = c.cwd or spec.cwd }
    -- a failure here costs the count, not the timed runs already made
    local failed = not res and err or (not res.ok and not spec.ignore_failure) and (res.timed_out and "timed out"
      or res.code and ("exit code " .. res.code) or ("signal " .. tostring(res.signal)))
    if failed then
      c.samples.alloc_bytes = nil
      c.alloc = { skipped = "an allocation run failed (" .. failed .. ")" }
      return
    end
    run_shell(spec.conclude, "conclude", spec)
    local n, rerr = ct:read()
    if not n then errors.raise(1, "bench: " .. c.name .. ": the allocation count: " .. tostring(rerr), 0) end
    if n.processes == 0 then
      c.samples.alloc_bytes = nil
      c.alloc = { skipped = "no process of the command counted its allocations (a set-user-ID program ignores the preload)" }
      return
    end
    c.samples.alloc_bytes:add(n.bytes)
    allocations, processes, foreign = allocations + n.allocations, math.max(processes, n.processes), math.max(foreign, n.foreign)
  end
  c.alloc = { runs = spec.alloc_runs, allocations = allocations / spec.alloc_runs, processes = processes, foreign = foreign }
end

local function planned_runs(spec, estimate)
  if spec.runs then return spec.runs end
  local n = math.max(spec.min_runs or 10, math.ceil((spec.min_time or 3) / math.max(estimate, 1e-6)))
  if spec.max_runs then n = math.min(n, spec.max_runs) end
  return n
end

-- Statistics copy the samples into scratch arrays; for long runs those are collected at once,
-- so that they do not add up in peak memory.
local function collect_scratch(c)
  if #c.samples.wall > 1000 then collectgarbage() end
end

local function summarise(c)
  local st = json.object()
  local metrics = { table.unpack(M.METRICS) }
  if c.samples.alloc_bytes then metrics[#metrics + 1] = "alloc_bytes" end
  for _, m in ipairs(metrics) do
    local s = stats.summary(c.samples[m])
    local o = json.object()
    for _, k in ipairs({ "n", "min", "max", "mean", "stddev", "median", "mad", "p5", "p95", "q1", "q3" }) do o[k] = s[k] end
    st[m] = o
    collect_scratch(c)
  end
  return st
end

-- ev, net = net_walls(c) : a command's complete interference evidence and its wall samples net
-- of each run's wait for a CPU (both nil when some run's wait is unknown); made once, after the
-- last run
local function net_walls(c)
  if c.net == nil then
    local ev = interference.complete_lists(c.evidence)
    c.ev, c.net = ev, ev and interference.net(c.samples.wall:totable(), ev) or false
  end
  return c.ev, c.net or nil
end

local function warnings_for(c, st, outliers)
  local w = json.array()
  if #outliers > 0 and st.wall.n >= M.MIN_OUTLIER_RUNS then
    w[#w + 1] = string.format("%d statistical outlier%s (modified z-score > 3.5) in %d runs: other load on the machine, caches, or a first-run effect",
      #outliers, #outliers == 1 and "" or "s", st.wall.n)
  end
  -- net of the wait for a CPU where known: on a busy machine a 1 ms command's wall is mostly waiting
  local ev, net = net_walls(c)
  local mean = net and stats.mean(net) or st.wall.mean
  if mean < 0.005 then
    w[#w + 1] = string.format("mean wall time %.3f ms%s is under 5 ms: process start-up dominates; results may not reflect the work",
      mean * 1000, ev and " (net of run-queue delay)" or "")
  end
  if c.failures > 0 then
    w[#w + 1] = string.format("%d of %d runs exited with a non-zero status", c.failures, st.wall.n)
  end
  if c.maxrss_bounded > 0 then
    w[#w + 1] = string.format("peak RSS is an upper bound in %s: the command stays below wb's own " ..
      "peak RSS, which Linux reports in its place (exec inherits the spawner's high-water mark)",
      c.maxrss_bounded == st.wall.n and "every run" or string.format("%d of %d runs", c.maxrss_bounded, st.wall.n))
  end
  if c.alloc and c.alloc.skipped then
    w[#w + 1] = "allocations not counted: " .. c.alloc.skipped
  elseif c.alloc and c.alloc.foreign > 0 then
    w[#w + 1] = string.format("allocations counted in %d process%s; %d program%s of them allocate%s with an allocator "
      .. "of their own, whose allocations are not counted", c.alloc.processes, c.alloc.processes == 1 and "" or "es",
      c.alloc.foreign, c.alloc.foreign == 1 and "" or "s", c.alloc.foreign == 1 and "s" or "")
  end
  return w
end

-- The comparison of a command with the reference, by the comparison engine's test (wb.verdict:
-- Mann–Whitney and a bootstrap CI of the ratio of means). A significant difference of the means
-- smaller than `threshold` (default 1%) is no difference: two runs of the same command differed by
-- that much here from where they stood in a fixed run order alone (sleep 0.02 twice: 0.5-0.7%,
-- p < 1e-6 on this VM, 1.2% in a sanitized wb); the rotated order cancels most of it, the
-- threshold what is left.
M.DEFAULT_THRESHOLD = 0.01
local function compare(c, ref, seed, threshold)
  local verdict = require "wb.verdict"
  local cmp = json.object()
  cmp.name, cmp.reference = c.name, ref.name
  local a, b = c.samples.wall, ref.samples.wall
  -- net of the wait for a CPU where every run's is known: what the code took, not the machine
  local _, na = net_walls(c)
  local _, nb = net_walls(ref)
  if na and nb then
    a, b = na, nb
    cmp.net_of_run_queue_delay = true
  end
  cmp.ratio_mean = stats.mean(a) / stats.mean(b)
  cmp.ratio_median = stats.median(a) / stats.median(b)
  local t, why = verdict.test(b, a, { stat = "mean", resamples = 5000, seed = seed })
  if not t then -- a single run each: nothing to test
    cmp.verdict, cmp.note = "no significant difference", why .. ": run more"
    cmp.text = string.format("%s and %s: ratio %.2f; %s", c.name, ref.name, cmp.ratio_mean, cmp.note)
    return cmp
  end
  cmp.ci_lo, cmp.ci_hi, cmp.ci_level, cmp.p_value = t.ci_lo, t.ci_hi, verdict.CI_LEVEL, t.p
  local significant = not t.underpowered and t.p < verdict.ALPHA and (t.ci_lo > 1 or t.ci_hi < 1)
  -- a difference counts when its CI lies wholly beyond the threshold, as in wb compare (two
  -- identical sleeps interleaved beside other work read 1.01×, CI 1.00–1.02, p = 0.009)
  local beyond = (cmp.ratio_mean > 1 and t.ci_lo > 1 + threshold) or (cmp.ratio_mean < 1 and t.ci_hi < 1 - threshold)
  local small = significant and not beyond
  if not significant or small then
    cmp.verdict = "no significant difference"
    cmp.text = string.format("%s and %s show no significant difference (ratio %.2f, 95%% CI %.2f–%.2f, p = %.2g)",
      c.name, ref.name, cmp.ratio_mean, t.ci_lo, t.ci_hi, t.p)
    if small then
      cmp.note = math.abs(cmp.ratio_mean - 1) < threshold and string.format("within the %g%% threshold", threshold * 100)
          or string.format("its CI is not wholly beyond the %g%% threshold", threshold * 100)
      cmp.text = cmp.text .. "; " .. cmp.note
    end
    if t.underpowered then
      cmp.note = t.underpowered .. ": run more"
      cmp.text = cmp.text .. "; " .. cmp.note
    end
  else
    local slower = cmp.ratio_mean > 1
    cmp.verdict = slower and "slower" or "faster"
    cmp.text = string.format("%s is %.2f× %s than %s (95%% CI %.2f–%.2f, p = %.2g)", c.name,
      slower and cmp.ratio_mean or 1 / cmp.ratio_mean, cmp.verdict, ref.name,
      slower and t.ci_lo or 1 / t.ci_hi, slower and t.ci_hi or 1 / t.ci_lo, t.p)
  end
  return cmp
end

local function progress(text) require("wb.term").progress(text) end

-- section = bench.plan(spec) : the plan section of bench.run(spec) (lua/wb/plan.lua) without
-- running anything: its commands as cases and the subprocess runs (automatic counts as min_runs)
function M.plan(spec)
  local cmds = normalise(spec)
  local cases, per = {}, (spec.runs or spec.min_runs or 10) + (spec.warmup or 0)
  local hooks = 0
  for _, h in ipairs({ spec.prepare, spec.conclude }) do
    if h and h ~= "" then hooks = hooks + per end
  end
  for _, h in ipairs({ spec.setup, spec.cleanup }) do
    if h and h ~= "" then hooks = hooks + 1 end
  end
  for i, c in ipairs(cmds) do cases[i] = { name = c.name, argv = c.argv } end
  return { name = spec.runs and "bench" or string.format("bench (automatic run count: at least %d, planned as %d)",
    spec.min_runs or 10, spec.min_runs or 10), cases = cases, subprocess_runs = #cmds * (per + hooks) }
end

-- bench.declare(c, plan) : the cases of a bench.plan section declared as the records of the
-- campaign c, in order
function M.declare(c, plan)
  local names = {}
  for i, cs in ipairs(plan.cases) do names[i] = cs.name end
  c:declare(names)
end

-- bench.record(c, summary) : each command's record in the campaign c: status, arguments, the
-- mean, median, min and max wall time and mean CPU times and peak RSS as metrics, and the samples
-- every compared metric needs (once each: wall_mean_seconds and wall_median_seconds share
-- wall_seconds)
function M.record(c, summary)
  for _, cmd in ipairs(summary.commands) do
    local rec = c:record(cmd.name)
    rec.status = "success"
    rec.command_arguments = cmd.argv
    local st = cmd.stats
    rec.metrics = {
      wall_mean_seconds = st.wall.mean, wall_median_seconds = st.wall.median,
      wall_min_seconds = st.wall.min, wall_max_seconds = st.wall.max,
      user_mean_seconds = st.user.mean, sys_mean_seconds = st.sys.mean, maxrss_kb_mean = st.maxrss_kb.mean,
      alloc_bytes_mean = st.alloc_bytes and st.alloc_bytes.mean,
    }
    rec.samples = interference.record_samples({ wall_seconds = cmd.samples.wall, maxrss_kb = cmd.samples.maxrss_kb,
      alloc_bytes = cmd.samples.alloc_bytes }, cmd.samples)
    rec.interference = cmd.interference
    rec.maxrss_upper_bound = cmd.maxrss_upper_bound
  end
end

-- summary = bench.run(spec) : measures and returns the wb.bench summary table
function M.run(spec)
  local cmds, scan = normalise(spec)
  local seed = spec.seed or 1
  local threshold = spec.threshold or M.DEFAULT_THRESHOLD
  if type(threshold) ~= "number" or threshold < 0 or threshold >= 1 then usage("threshold must be a number in 0..1") end
  local warmup = spec.warmup or 0
  local order = spec.order or "interleaved"
  if order ~= "interleaved" and order ~= "random" then usage("order must be interleaved or random") end
  if spec.shell then spec.shell_cost = shell_spawn_cost(spec.runs and math.min(spec.runs, 50) or 30) end
  local ref_index = 1
  if spec.reference then
    ref_index = nil
    for i, c in ipairs(cmds) do
      if c.name == spec.reference or tostring(i) == tostring(spec.reference) then ref_index = i end
    end
    if not ref_index then usage("reference '" .. tostring(spec.reference) .. "' is not one of the commands") end
  end
  -- on any exit, also an error: the runners closed and the collector's pause restored
  local pause = collectgarbage("setpause")
  collectgarbage("setpause", pause)
  local _ <close> = setmetatable({}, { __close = function()
    for _, c in ipairs(cmds) do
      if c.runner then c.runner:close() end
    end
    collectgarbage("setpause", pause)
  end })
  for _, c in ipairs(cmds) do
    run_shell(spec.setup, "setup", spec)
    for _ = 1, warmup do measure(c, spec, false) end
    -- the first timed run also estimates how many runs the time budget allows
    run_shell(spec.prepare, "prepare", spec)
    local first = measure(c, spec, true)
    run_shell(spec.conclude, "conclude", spec)
    c.planned = planned_runs(spec, first.wall)
  end
  local rng_state = seed
  local function next_random(n) -- deterministic LCG, independent of math.random's global state
    rng_state = (rng_state * 6364136223846793005 + 1442695040888963407)
    return ((rng_state >> 33) % n) + 1
  end
  local total, done = 0, 0
  for _, c in ipairs(cmds) do total = total + c.planned end
  done = #cmds
  local t = clock.timer()
  local tty, shown = require("wb.term").isatty("stderr"), -1
  -- a full collection cycle whenever the heap doubles would let the runs' short-lived garbage
  -- grow with the run count; collecting at +50% keeps peak memory flat for 10,000 runs
  collectgarbage("setpause", 150)
  local rounds = 0
  while true do
    local round = {}
    for _, c in ipairs(cmds) do
      if #c.samples.wall < c.planned then round[#round + 1] = c end
    end
    rounds = rounds + 1
    -- rotated, so that each command takes each place in turn (a place moves a mean: compare())
    if order == "interleaved" and #round > 1 then
      local k = rounds % #round
      local rotated = {}
      for i = 1, #round do rotated[i] = round[(i - 1 + k) % #round + 1] end
      round = rotated
    end
    if #round == 0 and not spec.runs then
      -- the first run only estimated the count: when the runs add up to less than min_time
      -- (a slow first run), plan again from their mean, so that automatic counts honour it
      for _, c in ipairs(cmds) do
        local n = #c.samples.wall
        local mean = stats.mean(c.samples.wall)
        local more = n * mean < (spec.min_time or 3) and planned_runs(spec, mean) or n
        if more > n then
          total, c.planned = total + more - c.planned, more
          round[#round + 1] = c
        end
      end
    end
    if #round == 0 then break end
    if order == "random" then
      for i = #round, 2, -1 do
        local j = next_random(i)
        round[i], round[j] = round[j], round[i]
      end
    end
    for _, c in ipairs(round) do
      run_shell(spec.prepare, "prepare", spec)
      measure(c, spec, true)
      run_shell(spec.conclude, "conclude", spec)
      done = done + 1
      if spec.on_run then spec.on_run(c.name, done, total) end
      if tty then -- at most ten updates a second: the line costs more than a fast run
        local elapsed = t:elapsed()
        if elapsed - shown >= 0.1 then
          shown = elapsed
          progress(string.format("bench: %d/%d runs  ETA %s  (%s)", done, total,
            util.format_seconds(elapsed / math.max(done - #cmds, 1) * (total - done)), c.name))
        end
      end
    end
  end
  require("wb.term").progress_done()
  if spec.alloc_runs and spec.alloc_runs > 0 then
    for _, c in ipairs(cmds) do count_allocations(c, spec) end
  end
  for _, _ in ipairs(cmds) do run_shell(spec.cleanup, "cleanup", spec) end
  collectgarbage("setpause", pause)
  collectgarbage() -- the runs' garbage, before the summary is built

  local summary = json.object()
  summary.schema_name = M.SCHEMA_NAME
  summary.schema_version = M.SCHEMA_VERSION
  summary.created_at_utc = clock.utc()
  summary.wb_version = core.version
  local settings = json.object()
  settings.runs = spec.runs or json.null
  settings.min_runs = spec.min_runs or 10
  settings.min_time = spec.min_time or 3
  settings.warmup = warmup
  settings.shell = spec.shell and true or false
  settings.order = order
  settings.seed = seed
  settings.threshold = threshold
  settings.reference = cmds[ref_index].name
  settings.shell_spawn_seconds = spec.shell_cost or json.null
  settings.alloc_runs = spec.alloc_runs or 0
  summary.settings = settings
  local commands = json.array()
  local here = require("wb.fs").realpath(".")
  for _, c in ipairs(cmds) do
    local dir = c.cwd or spec.cwd
    local work_dir = dir and (dir:sub(1, 1) == "/" and dir or (here and util.join(here, dir)) or dir) or here or json.null
    local o = json.object()
    o.name = c.name
    o.command = c.command
    o.argv = json.array(c.argv)
    o.cwd = work_dir -- where it ran: what a confirmation re-runs (docs/compare.md)
    local params = json.object()
    for k, v in pairs(c.parameters or {}) do params[k] = v end
    o.parameters = params
    local samples = json.object()
    for _, m in ipairs(M.METRICS) do samples[m] = c.samples[m] end -- compact; wb.json writes them
    samples.alloc_bytes = c.samples.alloc_bytes
    samples.exit_code = c.exit_codes
    local ev = net_walls(c)
    if ev then
      samples.runq, samples.runq_scope = json.array(ev.runq), ev.scope
      samples.wall_own = ev.wall_own and json.array(ev.wall_own) or nil
      samples.others_cpu = ev.others and json.array(ev.others) or nil
      o.interference = interference.summary(c.samples.wall:totable(), ev)
    end
    o.samples = samples
    o.stats = summarise(c)
    o.maxrss_upper_bound = c.maxrss_bounded > 0
    o.alloc = c.alloc
    o.outliers = json.array(stats.outliers(c.samples.wall, 3.5))
    o.warnings = warnings_for(c, o.stats, o.outliers)
    commands[#commands + 1] = o
    collect_scratch(c)
  end
  summary.commands = commands
  local comparisons = json.array()
  for i, c in ipairs(cmds) do
    if i ~= ref_index then
      comparisons[#comparisons + 1] = compare(c, cmds[ref_index], seed, threshold)
      collect_scratch(c)
    end
  end
  summary.comparisons = comparisons
  summary.scan = scan and { parameter = scan.parameter, values = json.array(scan.values) } or json.null
  return summary
end

return M
