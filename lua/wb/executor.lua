-- Executors: where a campaign's cases run, chosen by the machine profile (`executor: local|slurm`).
--
--   local ex = wb.executor.new(campaign, ctx.cfg.machine)
--   local records = ex:run_cases({ { name = "a", argv = {...}, env = {...}, cwd = ".", timeout = 60 }, ... },
--                                { collect = function(rec, case) rec.metrics = {...} end })
--   ex.kind   -- "local" | "slurm";   ex.stats (Slurm: polls, squeue_calls, sbatch_calls, ...)
--
-- Both fill the campaign records with the same fields (command_arguments, return_code, signal,
-- timed_out, wall_time_seconds, user_seconds, sys_seconds, maxrss_kb, stdout_log, stderr_log,
-- status), skip runs that a resumed campaign already completed, and call opts.collect(rec, case,
-- cap) once per finished case (returning false marks the run failed). Slurm records also carry
-- job_id, array_task_id, slurm_state, slurm_reason, slurm_exit_code, slurm_state_source, node.
-- On --dry-run nothing runs; the Slurm executor still writes its batch scripts into jobs/.
-- opts.one_at_a_time: the cases run one after another (a Slurm array with %1), e.g. timing trials;
-- opts.exclusive: the same unless the machine profile sets array_parallelism (then the user chose
-- overlap). Slurm records also carry started_epoch and finished_epoch; cases of the campaign that
-- ran at the same time on one node get overlapped_with (their names) and overlap_seconds, and
-- when trials (role "trial") did, a warning says so (on stderr, as a WARN event, and in
-- c.overlap_warning for the reports).
--
-- A case with `capture` (wb.capture options: lua/wb/slurm_capture.lua) runs under wb.capture,
-- here or in its job; its record gets method, fallback and capture (the result without the
-- folded text), and cap is the capture result (slurm_capture.load). A case with `tasks = N`
-- (Slurm only) is one srun step of N tasks, each captured: the record gets tasks (per task: rank,
-- node, pid, status, slurm_state, method, fallback, cpu_seconds, offcpu_seconds, samples, top),
-- imbalance, missing_tasks and profiles (the merged ones), and cap is slurm_capture.merge's
-- result. A capture case whose job ended before all its tasks ran to their end is submitted
-- again by --resume, for the missing tasks only.
local campaign = require "wb.campaign"
local clock = require "wb.clock"
local core = require "wb.core"
local errors = require "wb.errors"
local fs = require "wb.fs"
local json = require "wb.json"
local poll = require "wb.slurm_poll"
local slurm = require "wb.slurm"
local sc = require "wb.slurm_capture"
local util = require "wb.util"

local M = {}

local function bad(msg) errors.raise(2, msg, 0) end

local function check_cases(cases)
  if type(cases) ~= "table" then bad("executor: run_cases takes a list of cases") end
  local seen = {}
  for i, cs in ipairs(cases) do
    local where = "executor: case " .. i
    if type(cs) ~= "table" or type(cs.name) ~= "string" or cs.name == "" then bad(where .. ": name must be a string") end
    if seen[cs.name] then bad(where .. ": duplicate name '" .. cs.name .. "'") end
    seen[cs.name] = true
    if type(cs.argv) ~= "table" or #cs.argv == 0 then bad(where .. " (" .. cs.name .. "): argv must be a non-empty list") end
    if cs.env ~= nil and type(cs.env) ~= "table" then bad(where .. " (" .. cs.name .. "): env must be a table") end
    if cs.timeout ~= nil and type(cs.timeout) ~= "number" then bad(where .. " (" .. cs.name .. "): timeout must be a number") end
    sc.check(cs.capture, cs.tasks, where .. " (" .. cs.name .. ")")
  end
end

local function declare(c, cases)
  local names = {}
  for i, cs in ipairs(cases) do names[i] = cs.name end
  c:declare(names)
end

local function is_set(v) return v ~= nil and v ~= core.null end
local function tasks_of(cs) return is_set(cs.tasks) and cs.tasks or 1 end

-- ---- local ---------------------------------------------------------------------------------

local Local = { kind = "local" }
Local.__index = Local

-- A capture case run here: the record filled as `wb job` fills a result; returns ok, the capture.
local function capture_here(c, rec, cs)
  local res, doc = sc.run(cs, c.dir)
  rec.command_arguments = json.array(util.deep_copy(cs.argv))
  if not res then
    rec.error, rec.return_code = doc, json.null
    return false
  end
  local logs, rel = campaign.log_paths(c.dir, cs.name)
  campaign.redact_files(logs, campaign.merge_secrets(cs.env, c.secrets))
  campaign.fill_result(rec, res.result, rel)
  sc.fill(rec, doc)
  return res.ok, res
end

function Local:run_cases(cases, opts)
  opts = opts or {}
  check_cases(cases)
  for _, cs in ipairs(cases) do
    if tasks_of(cs) > 1 then
      bad("executor: case " .. cs.name .. ": tasks > 1 is one step of a Slurm job (a machine profile with "
        .. "executor: slurm)")
    end
  end
  local c = self.campaign
  declare(c, cases)
  local records = {}
  for i, cs in ipairs(cases) do
    if c.ctx.opts.dry_run then
      records[i] = c:record(cs.name)
    else
      records[i] = c:run(cs.name, function(rec)
        local ok, cap
        if is_set(cs.capture) then
          ok, cap = capture_here(c, rec, cs)
        else
          local res = c:spawn(cs.name, { argv = cs.argv, env = cs.env, cwd = cs.cwd, timeout = cs.timeout })
          ok = res ~= nil and res.ok
        end
        if opts.collect and opts.collect(rec, cs, cap) == false then ok = false end
        return ok
      end)
    end
  end
  return records
end

-- ---- slurm ---------------------------------------------------------------------------------

local Slurm = { kind = "slurm" }
Slurm.__index = Slurm

-- The fields a case's record takes from its result file (`wb job`; recipes/tune.lua's steps too)
local RESULT_FIELDS = { "started_at_utc", "started_epoch", "finished_epoch", "command_arguments",
  table.unpack(require("wb.campaign").RESULT_FIELDS) }
RESULT_FIELDS[#RESULT_FIELDS + 1] = "error"
M.RESULT_FIELDS = RESULT_FIELDS

local function number_field(cfg, key, default, prefix)
  local v = cfg[key]
  if not is_set(v) then return default end
  if type(v) ~= "number" or v < 0 then
    bad((prefix or "machine.") .. key .. " must be a non-negative number, got " .. tostring(v))
  end
  return v
end

function Slurm:abs_dir()
  if not self.dir then
    local dir, err = fs.realpath(self.campaign.dir)
    if not dir then errors.raise(1, "executor: " .. err, 0) end
    self.dir = dir
  end
  return self.dir
end

-- The next free jobs/batch-NNN number in the run directory (batches of earlier attempts stay).
function Slurm:next_batch()
  local n = 0
  for _, name in ipairs(fs.list(self.campaign.dir .. "/jobs") or {}) do
    local k = tonumber(name:match("^batch%-(%d+)%.json$"))
    if k and k > n then n = k end
  end
  return n + 1
end

-- The job spec of one batch of cases (one job, an array when more than one case).
function Slurm:spec(chunk, cases_path, opts)
  local cfg = self.cfg
  local time = cfg.time
  if not is_set(time) then
    local longest
    for _, cs in ipairs(chunk) do
      if cs.timeout and (not longest or cs.timeout > longest) then longest = cs.timeout end
    end
    time = longest and math.ceil((longest + 60) / 60) or nil
  end
  local array = #chunk > 1
  local limit = (opts and opts.one_at_a_time) and "%1" or
    is_set(cfg.array_parallelism) and ("%" .. tostring(cfg.array_parallelism)) or
    (opts and opts.exclusive) and "%1" or ""
  local ntasks = tasks_of(chunk[1])
  local argv = { core.exe_path(), "job", cases_path, array and slurm.TASK_ID or "0" }
  if ntasks > 1 then table.insert(argv, 1, "srun") table.insert(argv, 2, "--ntasks=" .. ntasks) end
  return {
    name = is_set(cfg.job_name) and cfg.job_name or ("wb-" .. util.safe_name(self.campaign.ctx.name)),
    argv = argv, ntasks = ntasks > 1 and ntasks or nil,
    cwd = fs.cwd(),
    partition = cfg.partition, account = cfg.account, qos = cfg.qos, cpus = cfg.cpus, mem = cfg.mem,
    time = time, gres = cfg.gres, nodes = cfg.nodes, extra = cfg.extra,
    array = array and ("0-" .. (#chunk - 1) .. limit) or nil,
    output = self:abs_dir() .. "/jobs/slurm-" .. (array and "%A_%a" or "%j") .. ".out",
    requeue = false,
  }
end

-- Writes jobs/batch-NNN.json (the cases) and returns the spec and paths.
function Slurm:prepare(chunk, opts)
  local c = self.campaign
  local n = self:next_batch()
  local base = string.format("jobs/batch-%03d", n)
  local dir = self:abs_dir()
  local doc = json.object()
  doc.schema_name = slurm.CASES_SCHEMA
  doc.schema_version = 1
  doc.run_dir = dir
  doc.batch = n
  doc.cases = json.array()
  local submit_env = {}
  for i, cs in ipairs(chunk) do
    local written, secret = slurm.split_env(cs.env)
    local env = json.object()
    for _, k in ipairs(written) do env[k] = tostring(cs.env[k]) end
    local names = util.sorted_keys(secret)
    for _, k in ipairs(names) do submit_env[slurm.secret_var(i - 1, k)] = secret[k] end
    local e = json.object()
    e.name = cs.name
    e.argv = json.array(util.deep_copy(cs.argv))
    e.env = env
    e.secret_env = json.array(names)
    e.cwd = cs.cwd
    e.timeout = cs.timeout
    e.capture = is_set(cs.capture) and util.deep_copy(cs.capture) or nil
    e.tasks = tasks_of(cs) > 1 and cs.tasks or nil
    doc.cases[i] = e
    for _, path in ipairs(self:result_paths(cs)) do
      -- a task that ran to its end keeps its result and profile (a retry or --resume skips it)
      if tasks_of(cs) == 1 or not slurm.task_done(sc.read_result(path)) then fs.remove(path) end
    end
  end
  local ok, err = fs.mkdir_p(c.dir .. "/jobs/results")
  if ok then ok, err = fs.write(c.dir .. "/" .. base .. ".json", json.encode(doc, { pretty = true }) .. "\n") end
  if not ok then errors.raise(1, "executor: " .. err, 0) end
  local spec = self:spec(chunk, dir .. "/" .. base .. ".json", opts)
  spec.submit_env = submit_env
  return spec, base .. ".sbatch", dir .. "/" .. base .. ".sbatch"
end

-- The batches of cases: at most size per array; a case of several tasks is a job of its own.
local function chunks(list, size)
  local out, plain = {}, {}
  for _, cs in ipairs(list) do
    if tasks_of(cs) > 1 then out[#out + 1] = { cs } else plain[#plain + 1] = cs end
  end
  for i = 1, #plain, size do out[#out + 1] = table.move(plain, i, math.min(i + size - 1, #plain), 1, {}) end
  return out
end

-- paths = ex:result_paths(case) : its result files (one per task)
function Slurm:result_paths(cs)
  local out = {}
  local n = tasks_of(cs)
  for rank = 0, n - 1 do
    local name = sc.task_name(cs.name, n > 1 and rank or nil)
    out[#out + 1] = self.campaign.dir .. "/jobs/results/" .. util.safe_name(name) .. ".json"
  end
  return out
end

-- Submits the cases (one job per chunk of max_array_size); a rejected submission raises exit 2
-- with sbatch's message.
function Slurm:submit(cases, tracker, opts)
  local c = self.campaign
  for _, chunk in ipairs(chunks(cases, self.max_array_size)) do
    local spec, rel, script = self:prepare(chunk, opts)
    local id, err, kind = slurm.submit(spec, { script_path = script, stats = self.stats })
    if not id then errors.raise(kind == "transient" and 1 or 2, err, 0) end
    self.stats.submitted_jobs = (self.stats.submitted_jobs or 0) + 1
    tracker:add(id, #chunk > 1, chunk)
    for i, cs in ipairs(chunk) do
      local task_id = #chunk > 1 and (i - 1) or nil
      local rec = c:start_run(cs.name, { job_id = id, array_task_id = task_id })
      rec.job_id = id
      rec.array_task_id = task_id
      rec.slurm_state = "PENDING"
      rec.slurm_script = rel
      rec.error = nil -- of an earlier attempt (--resume)
    end
    local names = {}
    for i, cs in ipairs(chunk) do names[i] = cs.name end
    c:save(names)
    c:event("slurm_submitted", { job_id = id, cases = #chunk, script = rel, warning = err ~= "" and err or nil })
  end
end

-- The record of a case of several tasks from their result files: each task's figures and state,
-- the merged profile, the exit status of the first task that failed (else the first one's).
local function collect_tasks(self, rec, cs, state)
  local results = {}
  for i, path in ipairs(self:result_paths(cs)) do results[i] = sc.read_result(path) end
  local m = sc.merge(self.campaign.dir, cs, results)
  local tasks, lead, missing = json.array(), nil, json.array()
  for i, t in ipairs(m.tasks) do
    local r = results[i]
    if not slurm.task_done(r) then missing[#missing + 1] = t.rank end
    local row = json.object()
    for _, k in ipairs({ "rank", "node", "pid", "status", "method", "fallback", "cpu_seconds", "offcpu_seconds",
      "samples", "top" }) do row[k] = t[k] end
    row.offcpu = t.offcpu_skipped and ("skipped: " .. t.offcpu_skipped) or nil
    row.slurm_state = state
    row.result = r and ("jobs/results/" .. util.safe_name(sc.task_name(cs.name, t.rank)) .. ".json") or nil
    row.interrupted = r and r.interrupted or nil
    tasks[i] = row
    if r and (not lead or (lead.status == "success" and r.status ~= "success")) then lead = r end
  end
  rec.tasks, rec.missing_tasks, rec.imbalance = tasks, missing, m.imbalance
  rec.profiles = json.object()
  local dir = self:abs_dir()
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local p = m[kind]
    if p then rec.profiles[kind] = { folded = p.folded:sub(#dir + 2), svg = p.svg:sub(#dir + 2) } end
  end
  if m.diff then rec.profiles.tasks_diff = m.diff.svg:sub(#dir + 2) end
  local all = #missing == 0
  for _, r in ipairs(results) do all = all and r.status == "success" end
  return lead, m, all
end

-- Marks the campaign's Slurm records that ran at the same time as another on the same node
-- (overlapped_with, overlap_seconds) and warns once when timed trials did: they disturbed each
-- other's times (other cases of a sweep may run side by side on purpose).
local function note_overlaps(c)
  local recs = {}
  for _, r in ipairs(c.manifest.runs) do
    if is_set(r.node) and type(r.started_epoch) == "number" and type(r.finished_epoch) == "number" then
      recs[#recs + 1] = r
    end
  end
  table.sort(recs, function(a, b) return a.started_epoch < b.started_epoch end)
  local pairs_text = {}
  for i, a in ipairs(recs) do
    for j = i + 1, #recs do
      local b = recs[j]
      if b.started_epoch >= a.finished_epoch then break end
      if a.node == b.node then
        local shared = math.min(a.finished_epoch, b.finished_epoch) - b.started_epoch
        for _, x in ipairs({ { a, b }, { b, a } }) do
          local r, other = x[1], x[2]
          r.overlapped_with = type(r.overlapped_with) == "table" and r.overlapped_with or json.array()
          r.overlapped_with[#r.overlapped_with + 1] = other.name
          r.overlap_seconds = (r.overlap_seconds or 0) + shared
        end
        if a.role == "trial" and b.role == "trial" then -- timed trials: each disturbed the other's times
          pairs_text[#pairs_text + 1] = string.format("%s with %s on %s (%.1f s)", a.name, b.name, tostring(a.node),
            shared)
        end
      end
    end
  end
  if #pairs_text == 0 then return end
  local shown = table.concat(pairs_text, ", ", 1, math.min(#pairs_text, 3)) ..
      (#pairs_text > 3 and string.format(", and %d more", #pairs_text - 3) or "")
  c.overlap_warning = string.format("%d pair%s of trials ran at the same time on one node (%s): their times " ..
    "disturb each other; trials run one at a time unless machine.array_parallelism is set", #pairs_text,
    #pairs_text == 1 and "" or "s", shown)
  io.stderr:write("wb: warning: ", c.overlap_warning, "\n")
  c:event("cases_overlapped", { pairs = #pairs_text, text = c.overlap_warning }, "WARN")
end

-- Copies a finished task's result into its campaign record.
function Slurm:collect(task, cs, opts)
  local c = self.campaign
  local rec = c:record(cs.name)
  local res, cap, all
  if tasks_of(cs) > 1 then
    res, cap, all = collect_tasks(self, rec, cs, task.state)
  else
    res = sc.read_result(self:result_paths(cs)[1])
    all = res ~= nil and res.status == "success"
    if res and res.capture then
      sc.fill(rec, res.capture)
      cap = sc.load(res.capture)
    end
    if is_set(cs.capture) then rec.missing_tasks = json.array(slurm.task_done(res) and {} or { 0 }) end
  end
  rec.command_arguments = json.array(util.deep_copy(cs.argv))
  if res then
    for _, k in ipairs(RESULT_FIELDS) do
      if res[k] ~= nil then rec[k] = res[k] end
    end
  end
  local state = task.state
  if not res or res.interrupted then
    rec.return_code = (state == "FAILED" and task.exit_code) or json.null
    rec.signal = task.signal ~= 0 and task.signal or nil
  end
  rec.job_id = task.job_id
  rec.array_task_id = task.task_id
  rec.slurm_state = state
  rec.slurm_reason = task.reason or json.null
  rec.slurm_exit_code = task.exit_code and string.format("%d:%d", task.exit_code, task.signal or 0) or json.null
  rec.slurm_state_source = task.source
  rec.node = task.node or (res and res.node) or json.null
  if state == "TIMEOUT" then rec.timed_out = true end
  local ok = state == "COMPLETED" and all
  if not ok and rec.error == nil then
    if not res then
      rec.error = "slurm: job " .. state .. (task.reason and (" (" .. task.reason .. ")") or "") ..
          " without a result; see jobs/slurm-" .. task.job_id .. (task.task_id and ("_" .. task.task_id) or "") .. ".out"
    elseif state ~= "COMPLETED" and state ~= "FAILED" then
      rec.error = "slurm: job " .. state .. (task.reason and (" (" .. task.reason .. ")") or "")
    end
  end
  local missing = type(rec.missing_tasks) == "table" and rec.missing_tasks or {}
  if not ok and #missing > 0 then
    local what = tasks_of(cs) > 1 and ("tasks " .. table.concat(missing, ", ")) or "the case"
    rec.error = (rec.error or ("slurm: job " .. state)) .. "; no complete capture of " .. what ..
        " (--resume runs it again)"
  end
  rec.status = ok and "success" or "failed"
  if opts.collect and opts.collect(rec, cs, cap) == false then rec.status = "failed" end
  c:end_run(cs.name, { slurm_state = state })
end

-- Dry run: the cases files and batch scripts, nothing submitted.
function Slurm:render_only(cases, opts)
  local c = self.campaign
  for _, chunk in ipairs(chunks(cases, self.max_array_size)) do
    local spec, rel, script = self:prepare(chunk, opts)
    local ok, err = fs.write(script, slurm.render(spec), { mode = tonumber("755", 8) })
    if not ok then errors.raise(1, "executor: " .. err, 0) end
    for _, cs in ipairs(chunk) do
      local rec = c:record(cs.name)
      if rec.status == "pending" then rec.status = "dry_run" end
      rec.slurm_script = rel
    end
    c:event("slurm_dry_run", { script = rel, cases = #chunk })
  end
  c:save()
end

function Slurm:progress(tracker)
  local counts = tracker:counts()
  local parts = {}
  for _, s in ipairs(util.sorted_keys(counts)) do parts[#parts + 1] = counts[s] .. " " .. s:lower() end
  self.campaign:progress("slurm: " .. (#parts > 0 and table.concat(parts, ", ") or "collecting"))
end

function Slurm:run_cases(cases, opts)
  opts = opts or {}
  check_cases(cases)
  local c = self.campaign
  declare(c, cases)
  local records, todo = {}, {}
  for i, cs in ipairs(cases) do
    records[i] = c:record(cs.name)
    local missing = records[i].missing_tasks
    if c.ctx.opts.resume and c:is_complete(cs.name) and type(missing) == "table" and #missing > 0 then
      c:event("slurm_resubmit", { run = cs.name, missing_tasks = json.array(util.deep_copy(missing)) })
      todo[#todo + 1] = cs
    elseif c.ctx.opts.dry_run or not c:skip_ended(cs.name) then
      todo[#todo + 1] = cs
    end
  end
  if c.ctx.opts.dry_run then
    if #todo > 0 then self:render_only(todo, opts) end
    return records
  end
  if #todo == 0 then return records end
  local tracker = poll.new { stats = self.stats, min = self.poll_min, max = self.poll_max,
    outage = self.outage, event = function(name, fields, level) c:event(name, fields, level) end }
  local attempts = {}
  local ok, err = slurm.protect(function()
    self:submit(todo, tracker, opts)
    local changed
    while tracker:busy() do
      clock.sleep(tracker:interval(changed))
      local ended = tracker:poll()
      changed = #ended > 0
      local retry = {}
      for _, task in ipairs(ended) do
        local cs = task.payload
        attempts[cs.name] = attempts[cs.name] or 0
        if slurm.RETRYABLE[task.state] and attempts[cs.name] < self.max_retries then
          attempts[cs.name] = attempts[cs.name] + 1
          self.stats.retries = (self.stats.retries or 0) + 1
          local rec = c:record(cs.name)
          rec.slurm_attempts = attempts[cs.name] + 1
          c:event("slurm_retry", { run = cs.name, job_id = task.job_id, array_task_id = task.task_id,
            slurm_state = task.state, attempt = attempts[cs.name] + 1 }, "WARN")
          retry[#retry + 1] = cs
        else
          self:collect(task, cs, opts)
        end
      end
      if changed then c:save() end
      if #retry > 0 then self:submit(retry, tracker, opts) end
      self:progress(tracker)
    end
  end)
  require("wb.term").progress_done()
  if not ok then
    local ids = tracker:job_ids()
    if #ids > 0 then
      local cancelled = slurm.cancel(ids, { stats = self.stats })
      require("wb.recipe").raw_pcall(c.event, c, "slurm_cancelled", { job_ids = json.array(ids), ok = cancelled,
        reason = tostring(type(err) == "table" and (err.msg or err) or err) }, "ERROR")
    end
    error(err, 0)
  end
  note_overlaps(c)
  c:event("slurm_finished", util.deep_copy(self.stats))
  return records
end

-- ---- construction ----------------------------------------------------------------------------

-- ex = executor.new(campaign, machine_cfg) : machine_cfg is ctx.cfg.machine (nil: local)
function M.new(campaign, cfg)
  cfg = cfg or {}
  local kind = is_set(cfg.executor) and cfg.executor or "local"
  if kind == "local" then
    return setmetatable({ campaign = campaign, cfg = cfg, stats = {} }, Local)
  elseif kind ~= "slurm" then
    bad("machine.executor must be local or slurm, not '" .. tostring(kind) .. "'")
  end
  local p = is_set(cfg.poll) and cfg.poll or {}
  if type(p) ~= "table" then bad("machine.poll must be a mapping {min, max}") end
  local self = setmetatable({
    campaign = campaign, cfg = cfg,
    stats = { polls = 0, squeue_calls = 0, sbatch_calls = 0, submitted_jobs = 0, retries = 0, poll_failures = 0 },
    max_retries = math.tointeger(number_field(cfg, "max_retries", 0)),
    max_array_size = math.tointeger(number_field(cfg, "max_array_size", 1000)),
    poll_min = number_field(p, "min", 1, "machine.poll."), poll_max = number_field(p, "max", 30, "machine.poll."),
    outage = number_field(cfg, "controller_timeout", 600),
  }, Slurm)
  if not self.max_retries then bad("machine.max_retries must be an integer") end
  if not self.max_array_size or self.max_array_size < 1 then bad("machine.max_array_size must be a positive integer") end
  if self.poll_min <= 0 or self.poll_max < self.poll_min then bad("machine.poll needs 0 < min <= max") end
  slurm.directives(self:spec({ { name = "x", argv = { "x" } } }, "cases.json"))
  return self
end

return M
