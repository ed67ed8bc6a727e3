-- The benchmark matrix engine (recipes/matrix.lua is its policy; profile keys: docs/matrix.md):
-- a profile's matrix block checked, its runs expanded from axes or listed, scheduled in waves so
-- that warm runs follow the runs that fill their caches, turned into the executor's cases (the
-- command template filled per run and trial), and each finished run measured from what it left
-- behind: its event log, stage totals, output rows, files and bytes, the cache before and after.
-- With trials > 1 each run's record aggregates its trials (medians, samples for comparison).
local wb = require "wb"
local files = require "wb.files"

local fs, json, util = wb.fs, wb.json, wb.util
local null = wb.null

local M = {}

-- The override types of the profile keys the engine reads (wb.recipe's `types`).
M.TYPES = {
  ["matrix.axes"] = "mapping", ["matrix.runs"] = "list", ["matrix.only"] = "list", ["matrix.name"] = "string|null",
  ["matrix.values"] = "mapping", ["matrix.params"] = "mapping", ["matrix.trials"] = "integer>=1",
  ["matrix.command"] = "list", ["matrix.env"] = "mapping", ["matrix.timeout"] = "number>0|null",
  ["matrix.cache_root"] = "string|null", ["matrix.cache_group"] = "string", ["matrix.event_log"] = "string|null",
  ["matrix.profile_summary"] = "string|null", ["matrix.rows"] = "mapping|null", ["matrix.inputs"] = "list",
  ["matrix.tools"] = "list", ["matrix.telemetry"] = "boolean",
  ["tool.threshold"] = "number>=0", ["tool.fail_on_regression"] = "boolean",
  ["tool.max_subprocess_runs"] = "integer>=0|null", ["tool.max_major_profiler_runs"] = "integer>=0|null",
  ["tool.allow_over_budget"] = "boolean", confirm = "boolean",
}

local CACHE_MODES = { disabled = true, cold = true, warm = true }
local BUILT_IN = { name = true, out = true, cache_dir = true, trial = true, run_dir = true }

local function bad(msg) wb.usage(msg, 0) end
local opt = util.opt

local function list_of(v, where)
  v = opt(v)
  if v == nil then return {} end
  if type(v) == "string" then return { v } end
  if type(v) ~= "table" then bad(where .. " must be a list") end
  return v
end

-- ---- the runs --------------------------------------------------------------------------------

-- text with each {key} replaced by params[key]; second result: a placeholder was empty (null or "").
local function fill(text, params, where)
  local empty = false
  local out = text:gsub("{([%a_][%w_]*)}", function(key)
    local v = params[key]
    if v == nil then bad(string.format("%s: unknown placeholder {%s} in '%s'", where, key, text)) end
    if v == null or v == "" then
      empty = true
      return ""
    end
    return tostring(v)
  end)
  return out, empty
end

-- argv from the template: words filled in; a nested list is a group kept only when none of its
-- placeholders is empty (e.g. [--cache-dir, "{cache_dir}"] for runs without a cache).
local function command(template, params)
  local argv = {}
  for _, item in ipairs(template) do
    if type(item) == "table" then
      local words, skip = {}, false
      for i, w in ipairs(item) do
        local empty
        words[i], empty = fill(tostring(w), params, "matrix.command")
        skip = skip or empty
      end
      if not skip then table.move(words, 1, #words, #argv + 1, argv) end
    else
      argv[#argv + 1] = (fill(tostring(item), params, "matrix.command"))
    end
  end
  if #argv == 0 or argv[1] == "" then bad("matrix.command: the template gives an empty command") end
  if argv[1]:find("/") and fs.exists(argv[1]) then argv[1] = fs.realpath(argv[1]) end
  return argv
end

local function merge(dst, src)
  for k, v in pairs(src or {}) do dst[k] = v end
  return dst
end

local function check_params(params, where)
  for k in pairs(params) do
    if BUILT_IN[k] and k ~= "name" then bad(where .. ": '" .. k .. "' is set by the recipe, not the profile") end
  end
  local cache = params.cache or "disabled"
  if not CACHE_MODES[cache] then
    bad(where .. ": cache must be disabled, cold or warm, not '" .. tostring(cache) .. "'")
  end
  params.cache = cache
end

-- s = matrix.settings(cfg) : the profile's matrix block (and tool.threshold, fail_on_regression),
-- checked (bad input: exit 2), with defaults
function M.settings(cfg)
  local m = cfg.matrix
  if type(m) ~= "table" then bad("matrix: the profile has no matrix block") end
  local s = {
    axes = opt(m.axes) or {}, runs = list_of(m.runs, "matrix.runs"), name = opt(m.name),
    values = opt(m.values) or {}, params = opt(m.params) or {}, only = list_of(m.only, "matrix.only"),
    trials = opt(m.trials) or 1, command = opt(m.command), env = opt(m.env) or {}, timeout = opt(m.timeout),
    cache_root = opt(m.cache_root), cache_group = opt(m.cache_group) or "{name}",
    event_log = opt(m.event_log), profile_summary = opt(m.profile_summary), rows = opt(m.rows),
    inputs = list_of(m.inputs, "matrix.inputs"), tools = list_of(m.tools, "matrix.tools"),
    telemetry = opt(m.telemetry) == true,
  }
  if type(s.command) ~= "table" or #s.command == 0 then bad("matrix.command must be a non-empty list") end
  if math.type(s.trials) ~= "integer" or s.trials < 1 then bad("matrix.trials must be a positive integer") end
  if s.timeout ~= nil and type(s.timeout) ~= "number" then bad("matrix.timeout must be a number of seconds") end
  if #s.runs == 0 and s.name == nil then
    bad("matrix.name (a template such as '{trait}_{device}') is needed with axes")
  end
  if s.rows ~= nil and (type(s.rows) ~= "table" or opt(s.rows.glob) == nil) then
    bad("matrix.rows must be {glob: PATTERN, header_lines: N}")
  end
  local tool = type(cfg.tool) == "table" and cfg.tool or {}
  s.threshold = opt(tool.threshold)
  s.fail_on_regression = opt(tool.fail_on_regression) ~= false
  return s
end

-- runs = {{name, params, cache, group, role}} in matrix order, from explicit runs or the axes.
local function expand_runs(s)
  local runs, seen = {}, {}
  local function add(chosen, explicit, where)
    local params = merge(wb.ordered(), s.params)
    for k, v in pairs(chosen) do
      local map = s.values[k]
      local mapped = type(map) == "table" and (map[v] or map[tostring(v)])
      if mapped then merge(params, mapped) end
    end
    merge(params, chosen)
    check_params(params, where)
    local name = explicit or fill(s.name, params, "matrix.name")
    if name == "" then bad(where .. ": empty run name") end
    if seen[name] then bad(where .. ": duplicate run name '" .. name .. "'") end
    seen[name] = true
    params.name = name
    local group = params.cache ~= "disabled" and fill(s.cache_group, params, "matrix.cache_group") or nil
    runs[#runs + 1] = { name = name, params = params, cache = params.cache, group = group, role = "run" }
  end
  if #s.runs > 0 then
    for i, r in ipairs(s.runs) do
      local where = "matrix.runs[" .. (i - 1) .. "]"
      if type(r) ~= "table" or type(r.name) ~= "string" then bad(where .. " needs a name") end
      local chosen = wb.ordered()
      for k, v in pairs(r) do
        if k ~= "name" then chosen[k] = v end
      end
      add(chosen, r.name, where)
    end
  else
    if type(s.axes) ~= "table" or s.axes[1] ~= nil then bad("matrix.axes must be a mapping of axis name to values") end
    for _, sc in ipairs(wb.sweep.expand(s.axes)) do add(sc.params, nil, "matrix.axes (" .. sc.name .. ")") end
  end
  if #s.only > 0 then
    local keep, picked = {}, {}
    for _, n in ipairs(s.only) do keep[tostring(n)] = true end
    for _, r in ipairs(runs) do
      if keep[r.name] then
        picked[#picked + 1] = r
        keep[r.name] = nil
      end
    end
    local unknown = next(keep)
    if unknown then
      local names = {}
      for i, r in ipairs(runs) do names[i] = r.name end
      bad("matrix.only: no run named '" .. unknown .. "' (runs: " .. table.concat(names, ", ") .. ")")
    end
    runs = picked
  end
  return runs
end

-- Waves: a run that uses a cache group runs after the previous run of that group, so a warm run
-- finds the cache its predecessor filled (also on Slurm, where a wave is one job array). A warm
-- run without a predecessor in the matrix gets a warm-up run first.
local function schedule(runs)
  local out, last = {}, {}
  for _, r in ipairs(runs) do
    if r.group then
      if r.cache == "warm" and not last[r.group] then
        out[#out + 1] = { name = r.name .. "_warmup", params = merge(wb.ordered(), r.params), cache = "cold",
          group = r.group, role = "warmup", wave = 1 }
        out[#out].params.name = out[#out].name
        last[r.group] = 1
      end
      r.wave = (last[r.group] or 0) + 1
      last[r.group] = r.wave
    else
      r.wave = 1
    end
    out[#out + 1] = r
  end
  return out
end

-- runs = matrix.runs(s) : {{name, params, cache, group, role = "run"|"warmup", wave}} in matrix
-- order (explicit runs or the product of the axes, matrix.only applied, warm-ups added)
function M.runs(s) return schedule(expand_runs(s)) end

-- waves = matrix.cases(s, runs, root) : the executor's cases, wave by wave, trials interleaved
-- within a wave; each case {name, argv, env, timeout, run, trial, out, params, cache_dir, event_log,
-- capture} with its outputs under root (template mistakes: exit 2); with matrix.telemetry each
-- case runs under wb.capture (profiles/<case>.*, where it runs: locally or in its Slurm job)
function M.cases(s, runs, root)
  local cache_root = s.cache_root or (root .. "/cache")
  local waves = {}
  for _, r in ipairs(runs) do
    waves[r.wave] = waves[r.wave] or {}
    table.insert(waves[r.wave], r)
  end
  local ordered = {}
  for w = 1, #waves do
    local cases = {}
    for k = 1, s.trials do
      for _, r in ipairs(waves[w] or {}) do
        local suffix = s.trials > 1 and ("/t" .. k) or ""
        local p = merge(wb.ordered(), r.params)
        p.out = root .. "/runs/" .. util.safe_name(r.name) .. suffix
        p.cache_dir = r.group and (cache_root .. "/" .. util.safe_name(r.group) .. suffix) or ""
        p.trial = k
        p.run_dir = root
        local env = {}
        for name, v in pairs(s.env) do env[name] = (fill(tostring(v), p, "matrix.env." .. name)) end
        local name = s.trials > 1 and (r.name .. ".t" .. k) or r.name
        cases[#cases + 1] = {
          name = name, argv = command(s.command, p), env = env,
          capture = s.telemetry and { name = util.safe_name(name) } or nil,
          timeout = s.timeout, run = r, trial = k, out = p.out, params = p,
          cache_dir = r.group and p.cache_dir or nil,
          event_log = s.event_log and (p.out .. "/" .. s.event_log) or nil,
        }
      end
    end
    ordered[#ordered + 1] = cases
  end
  return ordered
end

-- What the child's event log says: counts per event, the last processed chunk, a failure.
local function read_events(path)
  local text = fs.read(path)
  if not text then return nil end
  local counts, last_chunk, failure = json.object(), nil, nil
  for line in text:gmatch("[^\n]+") do
    local e = json.decode(line)
    if type(e) == "table" and type(e.event) == "string" then
      counts[e.event] = (counts[e.event] or 0) + 1
      if e.event == "progress_tick" and math.type(e.processed_chunk_count) == "integer" then
        last_chunk = e.processed_chunk_count
      elseif e.event == "run_failed" then
        failure = tostring(opt(e.message) or opt(e.error) or "run_failed")
      end
    end
  end
  return { counts = counts, last_chunk = last_chunk, failure = failure }
end

local function read_stages(path)
  local doc = path and fs.exists(path) and json.read(path)
  local stages = json.object()
  if type(doc) == "table" and type(doc.stage_totals_seconds) == "table" then
    for k, v in pairs(doc.stage_totals_seconds) do
      if type(v) == "number" then stages[k] = v end
    end
  end
  return stages
end

-- metrics{} compared across runs: wall and CPU time, stage_<X>_seconds, output_row_count.
local function metrics_of(rec)
  local m = json.object()
  if type(rec.wall_time_seconds) == "number" then m.wall_time_seconds = rec.wall_time_seconds end
  if type(rec.user_seconds) == "number" and type(rec.sys_seconds) == "number" then
    m.cpu_seconds = rec.user_seconds + rec.sys_seconds
  end
  for stage, secs in pairs(type(rec.stage_seconds) == "table" and rec.stage_seconds or {}) do
    m["stage_" .. stage:gsub("[^%w_]", "_") .. "_seconds"] = secs
  end
  if math.type(rec.output_row_count) == "integer" then m.output_row_count = rec.output_row_count end
  return m
end

-- s = matrix.status_text(record, records) : a run's status with the reason it failed: its error
-- (spawn: ...: No such file or directory), its exit status or signal, or the first of its trials
-- (in records, the manifest's runs) that failed
local function status_text(r, runs)
  if r.status ~= "failed" then return r.status end
  local why = opt(r.error)
  if not why and r.signal then why = "signal " .. tostring(r.signal) end
  if not why and math.type(r.return_code) == "integer" and r.return_code ~= 0 then why = "exit " .. r.return_code end
  if not why then
    for _, t in ipairs(runs) do
      if t.role == "trial" and t.status == "failed" and t.name:sub(1, #r.name + 2) == r.name .. ".t" then
        local inner = status_text(t, {})
        why = inner ~= "failed" and inner:gsub("^failed: ", "") or nil
        if why then break end
      end
    end
  end
  return why and ("failed: " .. tostring(why):gsub("[\r\n|]+", " ")) or "failed"
end
M.status_text = status_text

-- s = matrix.top_stages(stage_seconds, n) : the n longest stages, "compute 1.20 s, load 0.31 s"
function M.top_stages(stages, n)
  local list = {}
  for k, v in pairs(type(stages) == "table" and stages or {}) do list[#list + 1] = { k, v } end
  table.sort(list, function(a, b) return a[2] > b[2] end)
  local parts = {}
  for i = 1, math.min(n, #list) do parts[i] = list[i][1] .. " " .. util.format_seconds(list[i][2]) end
  return table.concat(parts, ", ")
end

local function relative(root, path)
  if path and path:sub(1, #root + 1) == root .. "/" then return path:sub(#root + 2) end
  return path
end

local function median(xs) return #xs > 0 and wb.stats.median(xs) or nil end

local function planned(rec, cs, root, role)
  rec.role = role
  rec.parameters = merge(json.object(), cs.run.params)
  rec.command_arguments = json.array(util.deep_copy(cs.argv))
  rec.command_files = require("wb.matrix_confirm").identity(cs.argv) -- what a confirmation checks
  rec.output_run_directory = relative(root, cs.out)
  rec.event_log_path = cs.event_log and relative(root, cs.event_log) or null
  rec.cache_enabled = cs.cache_dir ~= nil
  rec.cache_directory = cs.cache_dir and relative(root, cs.cache_dir) or null
  rec.cache_state = cs.cache_dir and "enabled" or "disabled"
end

-- Fills a finished run's record from what the child left behind; false when its log says it failed.
local function measure(c, s, root, rec, cs, before)
  local ok = true
  local ev = cs.event_log and read_events(cs.event_log)
  rec.event_log_path = ev and relative(root, cs.event_log) or null
  if ev then
    rec.event_counts = ev.counts
    rec.processed_chunk_count = ev.last_chunk or null
    if ev.failure then
      rec.error = rec.error or ev.failure
      ok = false
    end
  end
  rec.stage_seconds = read_stages(s.profile_summary and (cs.out .. "/" .. s.profile_summary))
  local st = files.tree_stats(cs.out)
  rec.output_row_count = s.rows and files.count_rows(cs.out, list_of(s.rows.glob, "matrix.rows.glob"),
    math.tointeger(opt(s.rows.header_lines)) or 0) or null
  rec.output_file_count = st.file_count
  rec.output_total_bytes = st.total_size_bytes
  if cs.cache_dir then
    rec.cache_before = before or files.tree_stats(cs.cache_dir)
    rec.cache_after = files.tree_stats(cs.cache_dir)
    rec.cache_state = rec.cache_before.file_count > 0 and "warm" or "cold"
    if cs.run.cache == "cold" and rec.cache_state == "warm" then
      c:event("cache_not_cold", { run = cs.name, cache_directory = rec.cache_directory }, "WARN")
    end
  else
    rec.cache_state, rec.cache_before, rec.cache_after = "disabled", null, null
  end
  if s.trials == 1 and cs.run.role == "run" then rec.metrics = metrics_of(rec) end
  return ok
end

-- The merged profile of a run's captured trials (matrix.telemetry): every trial's stacks under a
-- "trial K" root frame in profiles/<run>.merged.*, the trial with the most CPU time against the one
-- with the least, and the record's imbalance (max/mean CPU time of the trials).
local function merge_trials(rec, run, trials, root)
  local m = require("wb.slurm_capture").merge(root, { name = run.name, tasks = #trials,
    capture = { name = util.safe_name(run.name) } }, trials, "trial")
  local function rel(path) return path and path:sub(#root + 2) or nil end
  rec.imbalance = m.imbalance or null
  local missing = json.array()
  for _, rank in ipairs(m.missing) do missing[#missing + 1] = rank + 1 end
  rec.missing_trials = missing
  rec.profiles = json.object()
  rec.profiles.merged_oncpu = m.oncpu and rel(m.oncpu.svg) or null
  rec.profiles.merged_offcpu = m.offcpu and rel(m.offcpu.svg) or null
  rec.profiles.trials_diff = m.diff and rel(m.diff.svg) or null
end

-- With trials > 1: the run's record (rec_name, default the run's name) from its trial records
-- (medians; samples for comparison); with telemetry, their merged profile (merge_trials).
local function aggregate(c, run, names, s, root, rec_name)
  local rec = c:record(rec_name or run.name)
  local trials = {}
  for i, n in ipairs(names) do trials[i] = c:record(n) end
  local first = trials[1]
  for _, k in ipairs({ "command_arguments", "output_run_directory", "event_log_path", "cache_enabled",
    "cache_directory", "cache_state", "cache_before", "cache_after", "output_row_count", "output_file_count",
    "output_total_bytes", "processed_chunk_count" }) do
    rec[k] = first[k]
  end
  local status, code, samples = "success", 0, {}
  for _, t in ipairs(trials) do
    if t.status ~= "success" then status = "failed" end
    if code == 0 and t.return_code ~= 0 then code = t.return_code end
    if t.output_row_count ~= first.output_row_count then rec.output_row_count_varies = true end
    for k, v in pairs(metrics_of(t)) do
      samples[k] = samples[k] or json.array()
      table.insert(samples[k], v)
    end
  end
  local evidence = {}
  for _, f in ipairs(require("wb.interference").RECORD_FIELDS) do
    local xs = json.array()
    for _, t in ipairs(trials) do xs[#xs + 1] = type(t[f[1]]) == "number" and t[f[1]] or nil end
    if #xs == #trials then evidence[f[1]] = xs end
  end
  local scopes = {}
  for _, t in ipairs(trials) do scopes[t.runq_scope or "none"] = true end
  evidence.runq_scope = scopes.none and "none" or scopes.leader and "leader" or "tree"
  rec.status, rec.return_code, rec.trials = status, code, #trials
  rec.trial_runs = json.array(names)
  rec.wall_time_seconds = samples.wall_time_seconds and median(samples.wall_time_seconds) or null
  rec.stage_seconds = json.object()
  for stage in pairs(type(first.stage_seconds) == "table" and first.stage_seconds or {}) do
    local xs = {}
    for _, t in ipairs(trials) do xs[#xs + 1] = type(t.stage_seconds) == "table" and t.stage_seconds[stage] or nil end
    rec.stage_seconds[stage] = median(xs)
  end
  rec.metrics = metrics_of(rec)
  rec.samples = json.object()
  for k, xs in pairs(samples) do
    if k ~= "output_row_count" then
      rec.metrics[k] = median(xs)
      rec.samples[k] = xs
    end
  end
  for k, xs in pairs(evidence) do rec.samples[k] = xs end -- beside the samples: no metric of their own
  if s.telemetry then merge_trials(rec, run, trials, root) end
end

-- Declares the records in matrix order (with trials: the runs, then their trials) and fills the
-- planned fields of those that have not ended.
local function declare(c, s, runs, waves, root)
  local names, by_run = {}, {}
  for _, r in ipairs(runs) do
    by_run[r] = {}
    if s.trials == 1 or r.role == "run" then names[#names + 1] = r.name end
  end
  for _, wave in ipairs(waves) do
    for _, cs in ipairs(wave) do
      table.insert(by_run[cs.run], cs)
      if s.trials > 1 then names[#names + 1] = cs.name end
    end
  end
  c:declare(names)
  for _, r in ipairs(runs) do
    for _, cs in ipairs(by_run[r]) do
      local role = (s.trials > 1 and r.role == "run") and "trial" or r.role
      if not c:is_complete(cs.name) then planned(c:record(cs.name), cs, root, role) end
    end
    if s.trials > 1 and r.role == "run" and not c:is_complete(r.name) then
      planned(c:record(r.name), by_run[r][1], root, "run")
    end
  end
  c:save()
  return by_run
end

-- On a TTY, the progress line follows every run's event log (progress_tick events); nil on a
-- pipe, with WB_NO_PROGRESS set, or without `tail`.
local function watch_progress(c, waves)
  if not wb.term.isatty("stderr") or os.getenv("WB_NO_PROGRESS") then return nil end
  local paths, run_of = {}, {}
  for _, wave in ipairs(waves) do
    for _, cs in ipairs(wave) do
      if cs.event_log then
        paths[#paths + 1] = cs.event_log
        run_of[cs.event_log] = cs.name
      end
    end
  end
  return files.follow(paths, function(path, line)
    local current = run_of[path]
    if current and line:find('"progress_tick"', 1, true) then
      local e = json.decode(line)
      if type(e) == "table" and math.type(e.processed_chunk_count) == "integer" then
        local total = math.type(e.chunk_count) == "integer" and ("/" .. e.chunk_count) or ""
        c:progress(string.format("%s: chunk %d%s", current, e.processed_chunk_count, total))
      end
    end
  end)
end

-- Runs the waves one after another through the machine's executor (on --dry-run: nothing, or
-- the Slurm batch scripts); one_at_a_time: each wave's cases one after another whatever
-- machine.array_parallelism says (a confirmation's alternating sides).
local function run_waves(c, s, ex, waves, root, dry, one_at_a_time)
  for _, wave in ipairs(dry and {} or waves) do
    for _, cs in ipairs(wave) do wb.check(fs.mkdir_p(cs.out)) end
  end
  local watcher <close> = not dry and watch_progress(c, waves) or nil
  for w, wave in ipairs(waves) do
    local before, by_name = {}, {}
    for _, cs in ipairs(wave) do
      before[cs.name] = cs.cache_dir and files.tree_stats(cs.cache_dir)
      by_name[cs.name] = cs
    end
    if not dry then c:event("matrix_wave", { wave = w, cases = #wave }) end
    ex:run_cases(wave, {
      exclusive = s.trials > 1, -- on Slurm trials run one at a time unless array_parallelism says otherwise
      one_at_a_time = one_at_a_time,
      collect = function(rec, cs) return measure(c, s, root, rec, by_name[cs.name], before[cs.name]) end,
    })
  end
end


-- argv = matrix.argv(template, params) : a command template (matrix.command's form: {placeholders},
-- nested lists dropped when one of theirs is empty) filled with params; exit 2 on a mistake
M.argv = command

-- What wb.matrix_confirm runs its cases with: planned(rec, case, root, role) fills a record's
-- planned fields; run_waves(c, s, executor, waves, root, dry, one_at_a_time) runs and measures cases;
-- aggregate(c, run, trial_names, s, root, rec_name) folds trials into one record.
M.planned, M.run_waves, M.aggregate = planned, run_waves, aggregate

-- ---- a matrix run ----------------------------------------------------------------------------

local Matrix = {}
Matrix.__index = Matrix

-- m = matrix.open(ctx) : the recipe context's matrix checked (bad input, missing inputs: exit 2
-- before a run directory exists; with --dry-run missing inputs are only reported), the campaign
-- opened and the records declared. m = {c = campaign, s = settings, runs, waves, root, profile,
-- dry_run}
function M.open(ctx)
  local s = M.settings(ctx.cfg)
  local runs = M.runs(s)
  M.cases(s, runs, "/run-directory") -- template mistakes are exit 2 before a run directory exists
  local missing = {}
  for _, p in ipairs(s.inputs) do
    if not fs.exists(p) then missing[#missing + 1] = p end
  end
  if #missing > 0 then
    local list = table.concat(missing, ", ")
    if not ctx.opts.dry_run then bad("matrix.inputs: missing " .. list .. " (make the dataset first, e.g. `wb data`)") end
    io.stderr:write("wb: matrix: inputs not there yet: ", list, "\n")
  end
  local c = wb.campaign.open(ctx, { inputs = s.inputs, tools = s.tools, threshold = s.threshold })
  local root = wb.check(fs.realpath(c.dir))
  local waves = M.cases(s, runs, root)
  local profile = "matrix"
  for _, e in ipairs(ctx.config_info or {}) do
    if e.kind == "primary" then profile = tostring(e.option) end
  end
  return setmetatable({ c = c, s = s, runs = runs, waves = waves, root = root, profile = profile, ctx = ctx,
    by_run = declare(c, s, runs, waves, root) }, Matrix)
end

-- dry = m:plan() : writes the plan (a section per wave); true on --dry-run
function Matrix:plan()
  local sections = {}
  for w, wave in ipairs(self.waves) do
    local name = "wave " .. w .. (w > 1 and " (after the runs that fill its caches)" or "")
    sections[w] = { name = #self.waves == 1 and "runs" or name, cases = wave }
  end
  self.dry_run = self.c:plan { sections = sections }
  return self.dry_run
end

-- m:run() : runs the waves through the machine profile's executor (on a dry run: only what the
-- executor renders, e.g. Slurm batch scripts) and, with trials, aggregates each run's trials
function Matrix:run()
  local s = self.s
  run_waves(self.c, s, require("wb.executor").new(self.c, self.ctx.cfg.machine), self.waves, self.root, self.dry_run)
  if self.dry_run or s.trials == 1 then return end
  for _, r in ipairs(self.runs) do
    if r.role == "run" then
      local trial_names = {}
      for i, cs in ipairs(self.by_run[r]) do trial_names[i] = cs.name end
      aggregate(self.c, r, trial_names, s, self.root)
    end
  end
end

return M
