-- Tracking Slurm jobs: one squeue call per poll for every job being tracked, final states from
-- the best source the cluster offers (sacct when accounting is on, else scontrol show job, else
-- the states squeue -t all reported), and an adaptive poll interval with jitter.
--
--   local t = poll.new{ stats = {}, min = 0.5, max = 30, event = fn(name, fields) }
--   t:add(job_id, is_array, payloads)        -- task i of an array carries payloads[i]
--   while t:busy() do clock.sleep(t:interval()); for _, task in ipairs(t:poll()) do ... end end
--
-- A finished task: {key, job_id, task_id, payload, state, reason, node, exit_code, signal, source}.
local slurm = require "wb.slurm"

local M = {}

local Tracker = {}
Tracker.__index = Tracker

local SQUEUE_FORMAT = "%A|%F|%K|%T|%r|%N"

local function key_of(job_id, task_id)
  return task_id and (job_id .. "_" .. task_id) or tostring(job_id)
end

-- t = poll.new(opts) : opts.stats (counters, shared with the caller), min/max (seconds between
-- polls), event(name, fields) for what is worth recording, outage (seconds of failing squeue
-- calls before giving up, default 600), settle (seconds to wait for sacct to catch up, default 30)
function M.new(opts)
  opts = opts or {}
  local self = setmetatable({
    stats = opts.stats or {}, min = opts.min or 1, max = opts.max or 30, event = opts.event or function() end,
    outage = opts.outage or 600, settle = opts.settle or 30,
    tasks = {}, order = {}, active = 0, jobs = {}, unresolved = {}, failing_since = nil,
  }, Tracker)
  self.stats.polls = self.stats.polls or 0
  self.stats.squeue_calls = self.stats.squeue_calls or 0
  self.stats.poll_failures = self.stats.poll_failures or 0
  self.current = self.min
  return self
end

-- t:add(job_id, is_array, payloads) : tracks the tasks of one submitted job
function Tracker:add(job_id, is_array, payloads)
  local job = { id = job_id, active = 0 }
  self.jobs[#self.jobs + 1] = job
  for i, p in ipairs(payloads) do
    local task_id = is_array and (i - 1) or nil
    local task = { key = key_of(job_id, task_id), job_id = job_id, task_id = task_id, payload = p,
      job = job, state = "PENDING", misses = 0 }
    self.tasks[task.key] = task
    self.order[#self.order + 1] = task
    job.active = job.active + 1
    self.active = self.active + 1
  end
end

-- yes = t:busy() : tasks still running, or ended and waiting for their final state
function Tracker:busy() return self.active > 0 or #self.unresolved > 0 end

-- ids = t:job_ids() : every job id added
function Tracker:job_ids()
  local out = {}
  for _, j in ipairs(self.jobs) do out[#out + 1] = j.id end
  return out
end

-- ids = t:active_job_ids() : the jobs with tasks that have not ended
function Tracker:active_job_ids()
  local out = {}
  for _, j in ipairs(self.jobs) do
    if j.active > 0 then out[#out + 1] = tostring(j.id) end
  end
  return out
end

-- counts = t:counts() : state name -> number of tasks not yet ended
function Tracker:counts()
  local c = {}
  for _, task in ipairs(self.order) do
    if not task.ended then c[task.state] = (c[task.state] or 0) + 1 end
  end
  return c
end

-- seconds = t:interval([changed]) : the next wait, jittered ±20%: starts at min, grows 1.5x per
-- poll that saw no task end, halves when one did.
function Tracker:interval(changed)
  if changed == true then
    self.current = math.max(self.min, self.current / 2)
  elseif changed == false then
    self.current = math.min(self.max, self.current * 1.5)
  end
  return self.current * (0.8 + 0.4 * math.random())
end

local function end_task(self, task)
  if task.ended then return end
  task.ended = true
  task.job.active = task.job.active - 1
  self.active = self.active - 1
  task.waiting_since = require("wb.clock").now()
  self.unresolved[#self.unresolved + 1] = task
end

-- Applies one squeue listing; returns true when it was usable.
local function apply_squeue(self, text)
  local seen = {}
  for line in text:gmatch("[^\n]+") do
    local raw, job, task_id, state, reason, node = line:match("^(%d+)|(%d+)|([^|]*)|([^|]*)|([^|]*)|(.*)$")
    if raw then
      local task = self.tasks[key_of(job, task_id ~= "N/A" and task_id or nil)]
      if task and not task.ended then
        seen[task] = true
        task.state = state
        task.reason = reason ~= "None" and reason ~= "" and reason or nil
        task.node = node ~= "" and node or task.node
        task.seen, task.misses = true, 0
        if slurm.TERMINAL[state] then end_task(self, task) end
      end
    end
  end
  for _, task in ipairs(self.order) do
    if not task.ended and not seen[task] then
      task.misses = task.misses + 1
      if task.seen or task.misses >= 3 then end_task(self, task) end
    end
  end
end

-- ---- final states -------------------------------------------------------------------------

-- Sets the source of final states and logs it (level nil: INFO).
local function set_source(self, source, why, level)
  self.source, self.source_detail = source, why
  self.stats.state_source = source
  self.event("slurm_state_source", { source = source, detail = why }, level)
end

-- The source of final states, detected once: "sacct" when accounting storage is configured,
-- else "scontrol", else "squeue".
function Tracker:detect()
  if self.source then return self.source end
  local res, err = slurm.command({ "scontrol", "show", "config" }, { stats = self.stats, retry_for = 60 })
  local storage = res and res.stdout:match("AccountingStorageType%s*=%s*(%S+)")
  if not res then
    set_source(self, "squeue", "scontrol show config failed: " .. tostring(err))
  elseif storage and storage ~= "accounting_storage/none" and storage ~= "(null)" then
    set_source(self, "sacct", "AccountingStorageType=" .. storage)
  else
    set_source(self, "scontrol", "no accounting storage (AccountingStorageType=" .. tostring(storage) .. ")")
  end
  return self.source
end

-- rows[key] = {state, exit_code, reason, node} from sacct for the tasks' jobs, or nil, err
local function from_sacct(self, jobs)
  local res, err = slurm.command({ "sacct", "-n", "-P", "-X", "-j", table.concat(jobs, ","),
    "-o", "JobID,JobIDRaw,State,ExitCode,Reason,NodeList" }, { stats = self.stats })
  if not res then return nil, err end
  local rows = {}
  for line in res.stdout:gmatch("[^\n]+") do
    local id, _, state, code, reason, node = line:match("^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$")
    if id and not id:find("[", 1, true) then
      rows[id] = { state = slurm.state(state), exit_code = code, reason = reason, node = node }
    end
  end
  return rows
end

local function from_scontrol(self, jobs)
  local rows = {}
  for _, job in ipairs(jobs) do
    local res, err = slurm.command({ "scontrol", "show", "job", "-o", job }, { stats = self.stats })
    if not res then
      if not err:find("Invalid job id", 1, true) then return nil, err end
    else
      for line in res.stdout:gmatch("[^\n]+") do
        local head, rest = line:match("^(.-) JobName=.-( UserId=.*)$")
        local function field(k) return (rest or line):match(" " .. k .. "=(%S*)") end
        local id = (head or line):match("^JobId=(%d+)")
        local array_job, task = (head or ""):match(" ArrayJobId=(%d+) ArrayTaskId=(%d+)")
        local key = array_job and key_of(array_job, task) or id
        if key then
          rows[key] = { state = slurm.state(field("JobState")), exit_code = field("ExitCode"),
            reason = field("Reason"), node = field("NodeList") }
        end
      end
    end
  end
  return rows
end

-- A row is final when its state is; sacct briefly shows FAILED with ExitCode 0:0 before the exit
-- code arrives, so that one waits too (a real one is resolved from scontrol after `settle`).
local function final(row)
  return row ~= nil and slurm.TERMINAL[row.state] and not (row.state == "FAILED" and row.exit_code == "0:0")
end

local function finish(task, row, source)
  if row then
    task.state = row.state or task.state
    if row.reason and row.reason ~= "None" and row.reason ~= "" then task.reason = row.reason end
    if row.node and row.node ~= "" and row.node ~= "None assigned" and row.node ~= "(null)" then task.node = row.node end
    task.exit_code, task.signal = slurm.exit_code(row.exit_code)
  end
  task.source = source
end

local function final_rows(self, source, jobs)
  local rows, err
  if source == "sacct" then
    rows, err = from_sacct(self, jobs)
    if not rows and err:find("accounting storage is disabled", 1, true) then
      set_source(self, "scontrol", "sacct: " .. err, "WARN")
      return final_rows(self, "scontrol", jobs)
    end
  elseif source == "scontrol" then
    rows, err = from_scontrol(self, jobs)
  end
  if not rows and err then self.stats.final_state_failures = (self.stats.final_state_failures or 0) + 1 end
  return rows or {}
end

local function job_list(tasks)
  local jobs, seen = {}, {}
  for _, task in ipairs(tasks) do
    local id = tostring(task.job_id)
    if not seen[id] then seen[id] = true; jobs[#jobs + 1] = id end
  end
  return jobs
end

-- Resolves the final state of ended tasks; returns those resolved. Tasks the source does not
-- show as ended yet (sacct lagging behind the controller) wait up to `settle` seconds, then are
-- resolved from scontrol, else from what squeue reported.
local function resolve(self)
  if #self.unresolved == 0 then return {} end
  local source = self:detect()
  local rows = source ~= "squeue" and final_rows(self, source, job_list(self.unresolved)) or {}
  source = self.source
  local now = require("wb.clock").now()
  local done, late, waiting = {}, {}, {}
  for _, task in ipairs(self.unresolved) do
    local row = rows[task.key]
    if source ~= "squeue" and final(row) then
      finish(task, row, source)
      done[#done + 1] = task
    elseif source == "squeue" or (now - task.waiting_since) / 1e9 >= self.settle then
      late[#late + 1] = task
    else
      waiting[#waiting + 1] = task
    end
  end
  if #late > 0 then
    local more = source == "sacct" and final_rows(self, "scontrol", job_list(late)) or {}
    for _, task in ipairs(late) do
      local row = more[task.key]
      if row and slurm.TERMINAL[row.state] then finish(task, row, "scontrol") else finish(task, nil, "squeue") end
      done[#done + 1] = task
    end
  end
  self.unresolved = waiting
  return done
end

-- tasks = t:poll() : one squeue call for every job with running tasks (none when only final
-- states are awaited), then the final states of the tasks that ended. A failing squeue
-- (controller restarting) is counted and retried at the next poll; after `outage` seconds of
-- failures it raises (exit 1).
function Tracker:poll()
  local jobs = self:active_job_ids()
  if #jobs > 0 then
    self.stats.polls = self.stats.polls + 1
    local res, err = slurm.command({ "squeue", "-h", "-r", "-t", "all", "-j", table.concat(jobs, ","),
      "-o", SQUEUE_FORMAT }, { stats = self.stats })
    if res or err:find("Invalid job id specified", 1, true) then
      self.failing_since = nil
      apply_squeue(self, res and res.stdout or "")
    else
      self.stats.poll_failures = self.stats.poll_failures + 1
      local now = require("wb.clock").now()
      self.failing_since = self.failing_since or now
      self.event("slurm_poll_failed", { error = err, failures = self.stats.poll_failures }, "WARN")
      if (now - self.failing_since) / 1e9 > self.outage then
        require("wb.errors").raise(1, "slurm: squeue kept failing for " .. self.outage .. " s: " .. err, 0)
      end
    end
  end
  return resolve(self)
end

return M
