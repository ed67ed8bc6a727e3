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

-- The profile's extra sbatch options with --exclusive added, unless they choose sharing.
local function extra_options(extra)
  if not set(extra) then return { "--exclusive" } end
  local out, chosen = {}, false
  if extra[1] ~= nil or next(extra) == nil then
    for i, o in ipairs(extra) do
      out[i] = o
      local name = tostring(o):match("^%-%-([%w-]+)")
      chosen = chosen or name == "exclusive" or name == "oversubscribe" or name == "share"
    end
    if not chosen then out[#out + 1] = "--exclusive" end
  else
    for k, v in pairs(extra) do out[k] = v end
    if out.exclusive == nil and out.oversubscribe == nil and out.share == nil then out.exclusive = true end
  end
  return out
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
  local stale = {}
  for _, a in ipairs(list) do
    if a.state ~= "ended" and math.type(a.job_id) == "integer" then
      stale[#stale + 1] = a.job_id
      a.state, a.ended_by = "ended", "cancelled when the campaign resumed"
    end
  end
  if #stale > 0 then
    slurm.cancel(stale, { stats = self.stats })
    c:event("slurm_cancelled", { job_ids = json.array(stale), reason = "left by an earlier wb of this campaign" })
  end
  return self
end

-- The job's state, node list, CPU count and pending reason from squeue; nil when squeue no longer
-- lists it (ended).
local function job_state(self, id)
  local res, err, kind = slurm.command({ "squeue", "-h", "-t", "all", "-j", tostring(id), "-o", "%T|%N|%C|%r" },
    { stats = self.stats, retry_for = 120 })
  if not res then
    if err and err:find("Invalid job id", 1, true) then return nil end
    errors.raise(kind == "rejected" and 2 or 1, "squeue: " .. tostring(err), 0)
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

local function lost(self, what)
  local a = self.job
  local st = job_state(self, a.id)
  ended(self, what)
  errors.raise(1, string.format("the %s allocation (Slurm job %d) ended %s (%s); wb tune --resume %s continues the "
    .. "campaign in a new one", a.stage, a.id, st and st.state or "(no longer listed)", what, self.c.dir), 0)
end

-- Submits the stage's job and waits until it runs.
local function allocate(self, stage)
  local c, cfg = self.c, self.cfg
  local ok, err = fs.mkdir_p(c.dir .. "/jobs/trials")
  if not ok then errors.raise(1, "tune: " .. err, 0) end
  local rel = "jobs/tune-" .. stage .. ".sbatch"
  local spec = {
    name = set(cfg.job_name) and cfg.job_name or ("wb-tune-" .. stage),
    argv = { "sleep", "infinity" }, cwd = fs.cwd(),
    partition = cfg.partition, account = cfg.account, qos = cfg.qos, cpus = cfg.cpus, mem = cfg.mem, gres = cfg.gres,
    nodes = 1, time = self.stage_time(stage), extra = extra_options(cfg.extra),
    output = self.dir .. "/jobs/tune-" .. stage .. "-%j.out", requeue = false,
  }
  local id, serr, kind = slurm.submit(spec, { script_path = self.dir .. "/" .. rel, stats = self.stats })
  if not id then errors.raise(kind == "transient" and 1 or 2, serr, 0) end
  local entry = json.object()
  entry.stage, entry.job_id, entry.script, entry.state = stage, id, rel, "pending"
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
      c:save()
      c:event("slurm_allocation", { job_id = id, stage = stage, node = st.nodes, cpus = st.cpus })
      return
    elseif st.state ~= "PENDING" and st.state ~= "CONFIGURING" then
      lost(self, "before it started")
    end
    if st.reason ~= said and t:elapsed() >= 3 then -- a wait worth saying
      io.stderr:write(string.format("wb tune: %s allocation, Slurm job %d: %s (%s)\n", stage, id, st.state, st.reason))
      said = st.reason
    end
    clock.sleep(wait)
    wait = math.min(wait * 1.5, 5)
  end
end

-- res = a:trial(stage, case, limit) : the trial case {name, argv, env} run as an srun step of
-- the stage's allocation (submitted first when the stage has none), stopped after limit seconds
-- (nil: never); res holds the result file's fields (lua/wb/slurm.lua's job_main) with ok and
-- timed_out as wb.proc's result has them, and the allocation's job id.
function Alloc:trial(stage, cs, limit)
  if self.job and self.job.stage ~= stage then self:close() end
  if not self.job then allocate(self, stage) end
  local a, safe = self.job, util.safe_name(cs.name)
  local written, secret = slurm.split_env(cs.env or {})
  local env, names = json.object(), util.sorted_keys(secret)
  for _, k in ipairs(written) do env[k] = tostring(cs.env[k]) end
  local case = json.object()
  case.name, case.argv, case.env = cs.name, json.array(util.deep_copy(cs.argv)), env
  case.secret_env, case.timeout = json.array(names), limit
  local doc = json.object()
  doc.schema_name, doc.schema_version, doc.run_dir, doc.cases = slurm.CASES_SCHEMA, 1, self.dir, json.array({ case })
  local cases = self.dir .. "/jobs/trials/" .. safe .. ".json"
  local result = self.dir .. "/jobs/results/" .. safe .. ".json"
  local before = sc.read_result(result)
  if before and slurm.task_done(before) then -- ended after the wb that started it was killed
    before.ok = before.status == "success"
    self.c:event("trial_adopted", { run = cs.name, reason = "its step ended after the wb that started it" })
    return before
  end
  fs.remove(result) -- an interrupted attempt's: this trial is run again
  local ok, err = fs.write(cases, json.encode(doc, { pretty = true }) .. "\n")
  if not ok then errors.raise(1, "tune: " .. err, 0) end
  local step_env = {}
  for _, k in ipairs(names) do step_env[slurm.secret_var(0, k)] = secret[k] end
  local argv = { "srun", "--jobid=" .. a.id, "--nodes=1", "--ntasks=1", "--quiet", "--job-name=" .. cs.name }
  if a.entry.cpus then argv[#argv + 1] = "--cpus-per-task=" .. a.entry.cpus end
  for _, x in ipairs({ core.exe_path(), "job", cases, "0" }) do argv[#argv + 1] = x end
  local log = self.dir .. "/jobs/trials/" .. safe .. ".srun.log"
  local step = proc.run { argv = argv, env = step_env, timeout = limit and (limit + 300) or nil,
    stdout = { file = log }, stderr = "stdout" }
  local res = sc.read_result(result)
  if not res or res.interrupted or not (step and (step.ok or step.code)) then
    local st = job_state(self, a.id)
    if not st or st.state ~= "RUNNING" then lost(self, "under trial " .. cs.name) end
    if not res then
      return { ok = false, status = "failed", job_id = a.id, node = a.entry.node,
        error = "srun: the step ran no trial (" .. (step and (step.signal and ("signal " .. step.signal) or
          ("exit " .. tostring(step.code))) or "not started") .. "); see jobs/trials/" .. safe .. ".srun.log" }
    end
  end
  res.ok = res.status == "success"
  res.job_id = res.job_id or a.id
  return res
end

-- a:close([err]) : cancels the open allocation: its stage is over, or (err) the campaign stopped
function Alloc:close(err)
  if not self.job then return end
  local id = self.job.id
  slurm.cancel({ id }, { stats = self.stats })
  ended(self, err and "cancelled by wb: the campaign stopped" or "cancelled by wb at the end of its stage")
end

Alloc.__close = Alloc.close

return M
