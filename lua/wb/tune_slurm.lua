-- The trials of `wb tune` on a Slurm machine profile (recipes/tune.lua): each stage of the
-- campaign runs in one allocation, a job holding one node (`--exclusive` unless the profile's
-- `extra` says otherwise), and each trial is one srun step in it, started when the previous one
-- has ended and measured on the node by `wb job` (lua/wb/slurm.lua) as a local trial is measured.
-- So no two trials of a block run beside each other or beside another job, the node does not idle
-- between blocks, and the race's decisions stay with this process, the campaign's only writer.
--
--   local a <close> = tune_slurm.open(c, machine_cfg, stage_time)  -- stage_time(stage): --time
--   local res = a:trial(stage, case, limit)   -- the result file's fields, as wb.proc's result
--
-- The allocations are listed in the manifest (`tune_allocations`: stage, job id, node, CPUs,
-- state); one left running by a wb that was killed is cancelled when the campaign resumes. An
-- allocation that ends under a running trial (its time limit, scancel, a node failure) stops the
-- campaign with exit 1: `--resume DIR` continues the stage in a new allocation.
local slurm = require "wb.slurm"
local sc = require "wb.slurm_capture"
local clock = require "wb.clock"
local core = require "wb.core"
local errors = require "wb.errors"
local fs = require "wb.fs"
local json = require "wb.json"
local proc = require "wb.proc"
local util = require "wb.util"

local M = {}

local Alloc = {}
Alloc.__index = Alloc

local function set(v) return v ~= nil and v ~= core.null end

-- The profile's extra sbatch options with --exclusive added unless they choose how nodes are
-- shared, and whether the job asks for a node of its own (a plain --exclusive, given or added).
local function extra_options(extra)
  if not set(extra) then return { "--exclusive" }, true end
  local out, chosen, own = {}, false, false
  local function see(name, value)
    name = tostring(name):gsub("^%-+", "")
    local opt, arg = name:match("^([%w-]+)=?(.*)$")
    if opt == "exclusive" or opt == "oversubscribe" or opt == "share" then
      chosen = true
      own = own or (opt == "exclusive" and arg == "" and (value == nil or value == true))
    end
  end
  if extra[1] ~= nil or next(extra) == nil then
    for i, o in ipairs(extra) do
      out[i] = o
      see(o)
    end
    if not chosen then out[#out + 1] = "--exclusive" end
  else
    for k, v in pairs(extra) do
      out[k] = v
      see(k, v)
    end
    if not chosen then out.exclusive = true end
  end
  return out, own or not chosen
end

-- The CPUs of node, or nil when sinfo does not say.
local function node_cpus(self, node)
  local res = slurm.command({ "sinfo", "-h", "-N", "-n", node, "-o", "%c" }, { stats = self.stats, retry_for = 30 })
  return res and math.tointeger(tonumber(res.stdout:match("%d+") or ""))
end

-- scancel of ids; false, with a warning, when it failed (the entries stay open: the next
-- --resume tries again)
local function cancel(self, ids)
  local ok, err = slurm.cancel(ids, { stats = self.stats })
  if not ok then
    io.stderr:write(string.format("wb: warning: scancel %s failed (%s): the allocation may hold its node until its "
      .. "time limit; wb tune --resume %s cancels it again\n", table.concat(ids, " "), tostring(err), self.c.dir))
  end
  return ok
end

-- a = tune_slurm.open(c, cfg, stage_time) : the allocations of campaign c on the machine profile
-- cfg; stage_time(stage) is a stage's --time (minutes or Slurm's "HH:MM:SS"). Cancels the
-- allocations a killed wb left running in a resumed campaign.
function M.open(c, cfg, stage_time)
  local self = setmetatable({ c = c, cfg = cfg, stage_time = stage_time, stats = {} }, Alloc)
  local dir, err = fs.realpath(c.dir)
  if not dir then errors.raise(1, "tune: " .. err, 0) end
  self.dir = dir
  local list = c.manifest.tune_allocations
  if type(list) ~= "table" then
    list = json.array()
    c.manifest.tune_allocations = list
  end
  local stale, entries = {}, {}
  for _, a in ipairs(list) do
    if a.state ~= "ended" and math.type(a.job_id) == "integer" then
      stale[#stale + 1], entries[#entries + 1] = a.job_id, a
    end
  end
  if #stale > 0 then
    if cancel(self, stale) then
      for _, a in ipairs(entries) do a.state, a.ended_by, a.ended_at_utc = "ended", "cancelled when the campaign resumed", clock.utc() end
    end
    c:save()
    c:event("slurm_cancelled", { job_ids = json.array(stale), reason = "left by an earlier wb of this campaign" })
  end
  return self
end

-- The job's state, node list, CPU count and pending reason from squeue; nil when squeue no longer
-- lists it (ended).
local function job_state(self, id)
  local res, err, kind = slurm.command({ "squeue", "-h", "-t", "all", "-j", tostring(id), "-o", "%T|%N|%C|%r" },
    { stats = self.stats, retry_for = set(self.cfg.controller_timeout) and self.cfg.controller_timeout or 600 })
  if not res then
    if err and err:find("Invalid job id", 1, true) then return nil end
    errors.raise(1, "squeue: " .. tostring(err) .. (kind and (" (" .. kind .. ")") or ""), 0)
  end
  local state, nodes, cpus, reason = res.stdout:match("^%s*([%u_]+)|([^|]*)|(%d*)|([^\n]*)")
  if not state then return nil end
  return { state = state, nodes = nodes, cpus = math.tointeger(tonumber(cpus)), reason = reason }
end

local function ended(self, why)
  local a = self.job
  self.job = nil
  if not a then return end
  a.entry.state, a.entry.ended_by = "ended", why
  a.entry.ended_at_utc = clock.utc()
  self.c:save()
end

-- The job's state once it is no longer COMPLETING (squeue shows that while the job's processes
-- are being ended), waiting up to ten seconds for it; nil when squeue no longer lists it.
local function final_state(self, id)
  local st, t = job_state(self, id), clock.timer()
  while st and st.state == "COMPLETING" and t:elapsed() < 10 do
    clock.sleep(0.2)
    st = job_state(self, id)
  end
  return st
end

-- Raises exit 1 (code: 2 for a job the cluster will never run): the stage's allocation ended or
-- never started; it is cancelled first, whatever state it is in.
local function lost(self, what, code, hint)
  local a = self.job
  cancel(self, { a.id })
  local st = final_state(self, a.id)
  ended(self, what)
  errors.raise(code or 1, string.format("the %s allocation (Slurm job %d) ended %s (%s); %s", a.stage, a.id,
    st and st.state or "(no longer listed)", what,
    hint or ("wb tune --resume " .. self.c.dir .. " continues the campaign in a new one")), 0)
end

-- Raises as lost() "under trial <trial>" unless the stage's allocation is still running; the
-- trial's result file (when given) is removed first: it is the allocation's end, not the trial's.
local function unless_running(self, trial, result)
  local st = job_state(self, self.job.id)
  if st and st.state == "RUNNING" then return end
  if result then fs.remove(result) end
  lost(self, "under trial " .. trial)
end

-- Pending reasons that waiting does not end: a limit of the partition, QOS or account, or a
-- request the cluster cannot satisfy.
local function never_runs(reason)
  return reason:find("TimeLimit", 1, true) or reason:find("WallDuration", 1, true) or reason:find("^Invalid")
      or reason == "PartitionNodeLimit" or reason == "BadConstraints" or reason == "ReqNodeNotAvail, UnavailableNodes"
end

-- A stage's --time: stage_time(stage), capped at the partition's MaxTime when that is what wb
-- derived (an explicit tune.stage_time is passed as it is); the cap, or nil.
local function stage_limit(self, stage)
  local t, derived = self.stage_time(stage)
  if not derived or type(t) ~= "number" then return t end
  local argv = { "sinfo", "-h", "-o", "%P %l" }
  if set(self.cfg.partition) then argv[#argv + 1] = "--partition=" .. tostring(self.cfg.partition) end
  local res = slurm.command(argv, { stats = self.stats, retry_for = 30 })
  local max
  for line in (res and res.stdout or ""):gmatch("[^\n]+") do
    local name, limit = line:match("^(%S+)%s+(%S+)")
    if name and (set(self.cfg.partition) or name:sub(-1) == "*") then max = slurm.minutes(limit) end
  end
  if max and t > max then
    self.c:event("slurm_time_capped", { stage = stage, minutes = t, partition_max_minutes = max })
    return max
  end
  return t
end

-- Submits the stage's job and waits until it runs.
local function allocate(self, stage)
  local c, cfg = self.c, self.cfg
  local ok, err = fs.mkdir_p(c.dir .. "/jobs/trials")
  if not ok then errors.raise(1, "tune: " .. err, 0) end
  local rel = "jobs/tune-" .. stage .. ".sbatch"
  local time = stage_limit(self, stage)
  local spec = {
    name = set(cfg.job_name) and cfg.job_name or ("wb-tune-" .. stage),
    argv = { "sleep", "infinity" }, cwd = self.dir,
    partition = cfg.partition, account = cfg.account, qos = cfg.qos, cpus = cfg.cpus, mem = cfg.mem, gres = cfg.gres,
    nodes = 1, time = time, extra = nil,
    output = self.dir .. "/jobs/tune-" .. stage .. "-%j.out", requeue = false,
  }
  local own
  spec.extra, own = extra_options(cfg.extra)
  local id, serr, kind = slurm.submit(spec, { script_path = self.dir .. "/" .. rel, stats = self.stats })
  if not id then
    errors.raise(kind == "transient" and 1 or 2, serr .. (kind == "rejected" and
      string.format(" (the %s allocation: one node, --time %s; tune.stage_time sets it)", stage, tostring(time)) or ""), 0)
  end
  local entry = json.object()
  entry.stage, entry.job_id, entry.script, entry.state = stage, id, rel, "pending"
  entry.time = time
  entry.submitted_at_utc = clock.utc()
  local list = c.manifest.tune_allocations
  list[#list + 1] = entry
  self.job = { id = id, stage = stage, entry = entry }
  c:save()
  c:event("slurm_submitted", { job_id = id, stage = stage, script = rel })
  local wait, said, t = 0.2, nil, clock.timer()
  while true do
    local st = job_state(self, id)
    if not st then lost(self, "before it started") end
    if st.state == "RUNNING" then
      entry.state, entry.node, entry.cpus = "running", st.nodes, st.cpus
      entry.started_at_utc = clock.utc()
      local all = own and st.cpus and node_cpus(self, st.nodes)
      if all and st.cpus < all then -- --exclusive ignored: the partition shares nodes whatever is asked
        entry.shared_node = true
        io.stderr:write(string.format("wb: warning: the %s allocation (Slurm job %d) has %d of %s's %d CPUs although "
          .. "it asked for the node (the partition shares nodes: OverSubscribe=FORCE?): other jobs may run beside "
          .. "its trials\n", stage, id, st.cpus, st.nodes, all))
      end
      c:save()
      c:event("slurm_allocation", { job_id = id, stage = stage, node = st.nodes, cpus = st.cpus })
      return
    elseif st.state ~= "PENDING" and st.state ~= "CONFIGURING" then
      lost(self, "before it started")
    elseif never_runs(st.reason) then
      lost(self, "pending: " .. st.reason, 2, "the cluster will not run it as asked (--time " .. tostring(time)
        .. ", tune.stage_time; the machine profile's partition, qos, account)")
    end
    if st.reason ~= said and t:elapsed() >= 3 then -- a wait worth saying
      io.stderr:write(string.format("wb tune: %s allocation, Slurm job %d: %s (%s)\n", stage, id, st.state, st.reason))
      said = st.reason
    end
    clock.sleep(wait)
    wait = math.min(wait * 1.5, 5)
  end
end

-- The result file of a step of job id: what `wb job` wrote there, or nil (none yet, or another
-- job's: a step of an earlier allocation that was ending while this one ran). A file system
-- shared with the node may show it late: up to `patience` seconds are waited for.
local function result_of(path, id, patience)
  local t = clock.timer()
  while true do
    local res = sc.read_result(path)
    if res and res.job_id == id then return res end
    if t:elapsed() >= patience then return nil end
    clock.sleep(0.2)
  end
end

-- The campaign's earlier allocations of stage, by job id.
local function stage_jobs(self, stage)
  local out = {}
  for _, a in ipairs(self.c.manifest.tune_allocations) do
    if a.stage == stage and math.type(a.job_id) == "integer" then out[a.job_id] = true end
  end
  return out
end

local STEP_ATTEMPTS = 3

-- res = a:trial(stage, case, limit) : the trial case {name, argv, env} run as an srun step of
-- the stage's allocation (submitted first when the stage has none), stopped after limit seconds
-- (nil: never); res holds the result file's fields (lua/wb/slurm.lua's job_main) with ok and
-- timed_out as wb.proc's result has them, and the job id. Only `wb job`'s result of a trial that
-- ran to its end decides it: a step that ran none (srun refused, the node unreachable) or was
-- stopped itself is tried again, and after STEP_ATTEMPTS raises exit 1 with the trial left to
-- --resume; a trial that failed while its allocation ended raises as the allocation's loss.
function Alloc:trial(stage, cs, limit)
  local safe = util.safe_name(cs.name)
  local cases = self.dir .. "/jobs/trials/" .. safe .. ".json"
  local result = self.dir .. "/jobs/results/" .. safe .. ".json"
  local before = sc.read_result(result)
  if before and slurm.task_done(before) and stage_jobs(self, stage)[before.job_id] then
    before.ok = before.status == "success" -- it ended after the wb that started it was killed
    self.c:event("trial_adopted", { run = cs.name, job_id = before.job_id })
    return before
  end
  if self.job and self.job.stage ~= stage then self:close() end
  if not self.job then allocate(self, stage) end
  local a = self.job
  local written, secret = slurm.split_env(cs.env or {})
  local env, names = json.object(), util.sorted_keys(secret)
  for _, k in ipairs(written) do env[k] = tostring(cs.env[k]) end
  local case = json.object()
  case.name, case.argv, case.env = cs.name, json.array(util.deep_copy(cs.argv)), env
  case.secret_env, case.timeout = json.array(names), limit
  local doc = json.object()
  doc.schema_name, doc.schema_version, doc.run_dir, doc.cases = slurm.CASES_SCHEMA, 1, self.dir, json.array({ case })
  fs.remove(result) -- an interrupted attempt's: this trial is run again
  local ok, err = fs.write(cases, json.encode(doc, { pretty = true }) .. "\n")
  if not ok then errors.raise(1, "tune: " .. err, 0) end
  local step_env = {}
  for _, k in ipairs(names) do step_env[slurm.secret_var(0, k)] = secret[k] end
  local argv = { "srun", "--jobid=" .. a.id, "--nodes=1", "--ntasks=1", "--quiet", "--job-name=" .. cs.name }
  if a.entry.cpus then argv[#argv + 1] = "--cpus-per-task=" .. a.entry.cpus end
  for _, x in ipairs({ core.exe_path(), "job", cases, "0" }) do argv[#argv + 1] = x end
  local log = "jobs/trials/" .. safe .. ".srun.log"
  local why
  for attempt = 1, STEP_ATTEMPTS do
    local step, serr = proc.run { argv = argv, env = step_env, timeout = limit and (limit + 300) or nil,
      stdout = { file = self.dir .. "/" .. log, append = attempt > 1 }, stderr = "stdout" }
    local res = result_of(result, a.id, step and (step.ok or step.code) and 5 or 0)
    if res and not res.interrupted then
      res.ok = res.status == "success"
      if not res.ok then
        -- a trial killed with its allocation (scancel, time limit, preemption) whose process died
        -- before `wb job` heard of the stop: the allocation's end, not the trial's result
        unless_running(self, cs.name, result)
      end
      return res
    end
    unless_running(self, cs.name)
    why = res and "the step was stopped, not its trial (scancel of the step?)"
      or step and (step.timed_out and "srun did not end" or step.signal and ("srun: signal " .. step.signal)
        or ("srun: exit " .. tostring(step.code))) or ("srun: " .. tostring(serr))
    self.c:event("slurm_step_failed", { run = cs.name, job_id = a.id, attempt = attempt, why = why, log = log }, "WARN")
    if attempt < STEP_ATTEMPTS then clock.sleep(attempt) end
  end
  errors.raise(1, string.format("trial %s: %d steps in the %s allocation (Slurm job %d) ran no trial (%s; see %s/%s); "
    .. "wb tune --resume %s runs it again", cs.name, STEP_ATTEMPTS, stage, a.id, why, self.c.dir, log, self.c.dir), 0)
end

-- a:close([err]) : cancels the open allocation: its stage is over, or (err) the campaign stopped
function Alloc:close(err)
  if not self.job then return end
  if not cancel(self, { self.job.id }) then
    self.job = nil -- left open in the manifest: the next --resume cancels it
    return
  end
  ended(self, err and "cancelled by wb: the campaign stopped" or "cancelled by wb at the end of its stage")
end

Alloc.__close = Alloc.close

return M
