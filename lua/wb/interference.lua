-- Interference evidence: how much of a timed run's wall time was the machine, not the code.
--
-- Every wb.proc result carries (core/proc.c): runq, the time the run's threads spent runnable
-- but waiting for a CPU (the whole tree's, from the kernel's exit messages, where wb may hear
-- them (root); else the leader's own, read before it is reaped: runq_scope says which);
-- wall_own, the child's own wall time by the kernel's clock (fork to exit; without wb's start
-- and reap latency; tree scope only); nivcsw, involuntary context switches; others_cpu, the CPUs'
-- worth of time other tasks used while it ran; others_runnable; cpu_pressure, the machine's PSI
-- "some" stall time during the run; steal; cpus, the CPUs it could use. docs/compare.md says why
-- these and what is missing unprivileged.
--
-- A run's *net wall* is its wall time less the wait for a CPU: own wall − runq / k, where k, the
-- mean number of its threads runnable at once, is (cpu + runq) / wall, at least 1. For a
-- single-threaded run it is exact (wall − runq); for k threads equally busy it removes the
-- wait's share of the wall; for other shapes it is an estimate, and verdict.lua treats it so.
local M = {}

-- The mean number of threads runnable at once above which a run's net wall is an estimate.
M.PARALLEL_ESTIMATE = 1.2

-- The fields a run record (and a trial's) keeps, from the wb.proc result's.
M.RECORD_FIELDS = {
  { "runq_seconds", "runq" }, { "wall_own_seconds", "wall_own" }, { "nivcsw", "nivcsw" },
  { "others_cpu", "others_cpu" }, { "others_runnable", "others_runnable" },
  { "cpu_pressure_seconds", "cpu_pressure" }, { "steal_seconds", "steal" }, { "cpus", "cpus" },
}

-- interference.record(rec, res) : the evidence of wb.proc result res in record rec
function M.record(rec, res)
  for _, f in ipairs(M.RECORD_FIELDS) do rec[f[1]] = res[f[2]] end
  rec.runq_scope = res.runq_scope ~= "none" and res.runq_scope or nil
end

local SCOPE_RANK = { none = 0, leader = 1, tree = 2 }

-- Whether list xs holds n numbers (an unknown entry is false).
local function complete(xs, n)
  if type(xs) ~= "table" or #xs ~= n then return false end
  for i = 1, n do
    if type(xs[i]) ~= "number" or xs[i] ~= xs[i] then return false end
  end
  return true
end

-- samples = interference.record_samples(samples, s) : a wb.bench command's per-run evidence s
-- (its samples: runq, wall_own, others_cpu, user, sys, runq_scope; any may be absent) added to a
-- run record's samples under the names wb.compare reads beside a wall metric's
function M.record_samples(samples, s)
  if type(s) ~= "table" then return samples end
  samples.runq_seconds, samples.wall_own_seconds, samples.others_cpu = s.runq, s.wall_own, s.others_cpu
  samples.user_seconds, samples.sys_seconds, samples.runq_scope = s.user, s.sys, s.runq_scope
  return samples
end

-- A fresh per-run evidence accumulator: lists aligned with a metric's samples.
function M.new_lists()
  return { runq = {}, wall_own = {}, cpu = {}, others = {}, scope = nil }
end

-- interference.add(lists, res [, shift]) : appends wb.proc result res's evidence (shift, a fixed
-- cost subtracted from the wall samples, is subtracted from the own wall too)
function M.add(lists, res, shift)
  local n = #lists.cpu + 1
  lists.cpu[n] = (res.user or 0) + (res.sys or 0)
  lists.runq[n] = res.runq or false
  lists.wall_own[n] = res.wall_own and math.max(res.wall_own - (shift or 0), 0) or false
  lists.others[n] = res.others_cpu or false
  lists.cpus = res.cpus or lists.cpus
  local scope = res.runq_scope or "none"
  if lists.scope == nil or SCOPE_RANK[scope] < SCOPE_RANK[lists.scope] then lists.scope = scope end
end

-- lists = interference.complete_lists(lists) : {runq, wall_own, cpu, others, scope} with every
-- list whose every entry is known (the others nil), or nil when the run-queue delay is not
function M.complete_lists(lists)
  local n = lists and #lists.cpu or 0
  if n == 0 or not complete(lists.runq, n) then return nil end
  return { runq = lists.runq, cpu = lists.cpu, wall_own = complete(lists.wall_own, n) and lists.wall_own or nil,
    others = complete(lists.others, n) and lists.others or nil, scope = lists.scope, cpus = lists.cpus }
end

-- ev = interference.record_lists(samples, lists) : the complete lists of an accumulator
-- (complete_lists) added to a run record's samples under the names wb.compare reads beside a wall
-- metric's (runq_seconds, runq_scope, wall_own_seconds, others_cpu, cpus, and cpu_seconds unless
-- the record has its own); ev, or nil (nothing added) when a trial's run-queue delay is unknown
function M.record_lists(samples, lists)
  local ev = M.complete_lists(lists)
  if not ev then return nil end
  samples.runq_seconds, samples.runq_scope, samples.wall_own_seconds = ev.runq, ev.scope, ev.wall_own
  samples.others_cpu, samples.cpus = ev.others, ev.cpus
  samples.cpu_seconds = samples.cpu_seconds or ev.cpu
  return ev
end

-- ev = interference.evidence(walls, runq, cpu, wall_own, others, scope) : the evidence of
-- one side's wall samples, or nil when the run-queue delay is not known for every sample.
-- cpu, wall_own and others may be nil or incomplete (then they are not used); cpus: the CPUs
-- the runs could use.
function M.evidence(walls, runq, cpu, wall_own, others, scope, cpus)
  local n = type(walls) == "table" and #walls or 0
  if n == 0 or not complete(runq, n) then return nil end
  return { runq = runq, cpu = complete(cpu, n) and cpu or nil, wall_own = complete(wall_own, n) and wall_own or nil,
    others = complete(others, n) and others or nil, scope = scope or "tree", cpus = cpus }
end

-- ev = interference.from_samples(samples, wall_key) : the evidence beside the wall samples
-- samples[wall_key] of a record's samples{} (runq_seconds, cpu_seconds or user_seconds +
-- sys_seconds, wall_own_seconds, others_cpu; runq_scope, the weakest scope of them, "tree"
-- when absent), or nil
function M.from_samples(samples, wall_key)
  if type(samples) ~= "table" then return nil end
  local walls = samples[wall_key]
  if type(walls) == "userdata" and walls.totable then walls = walls:totable() end
  local function list(k)
    local v = samples[k]
    if type(v) == "userdata" and v.totable then v = v:totable() end
    return v
  end
  local user, sys = list("user_seconds") or list("user"), list("sys_seconds") or list("sys")
  local cpu = list("cpu_seconds")
  if type(cpu) ~= "table" and type(user) == "table" and type(sys) == "table" and #user == #sys then
    cpu = {}
    for i = 1, #user do cpu[i] = (tonumber(user[i]) or 0) + (tonumber(sys[i]) or 0) end
  end
  local scope = samples.runq_scope
  local cpus = list("cpus")
  cpus = type(cpus) == "table" and tonumber(cpus[1]) or tonumber(cpus)
  return M.evidence(walls, list("runq_seconds") or list("runq"), cpu, list("wall_own_seconds") or list("wall_own"),
    list("others_cpu"), type(scope) == "string" and scope or nil, cpus)
end

-- k = interference.parallelism(wall, cpu, runq) : the mean number of a run's threads runnable
-- at once, at least 1
function M.parallelism(wall, cpu, runq)
  if not cpu or wall <= 0 then return 1 end
  return math.max(1, (cpu + runq) / wall)
end

-- net = interference.net(walls, ev) : the net wall time of each sample
function M.net(walls, ev)
  local out = {}
  for i, w in ipairs(walls) do
    local own = ev.wall_own and math.min(ev.wall_own[i], w) or w
    local k = M.parallelism(own, ev.cpu and ev.cpu[i], ev.runq[i])
    out[i] = math.max(own - ev.runq[i] / k, 0)
  end
  return out
end

-- seconds = interference.record_net(rec) : a run record's wall_time_seconds net of its wait for a
-- CPU (M.net over the evidence M.record kept in it: runq_seconds, wall_own_seconds, user_seconds,
-- sys_seconds), or its wall time when the record's run-queue delay is unknown
function M.record_net(rec)
  local wall = rec.wall_time_seconds
  if type(wall) ~= "number" then return wall end
  local samples = { wall = { wall } }
  for _, k in ipairs({ "runq_seconds", "wall_own_seconds", "user_seconds", "sys_seconds" }) do
    if type(rec[k]) == "number" then samples[k] = { rec[k] } end
  end
  local ev = M.from_samples(samples, "wall")
  return ev and M.net({ wall }, ev)[1] or wall
end

local function mean(xs)
  local s = 0
  for _, x in ipairs(xs) do s = s + x end
  return #xs > 0 and s / #xs or 0
end

-- s = interference.side(walls, ev) : {runq, wall, share, cpu (nil when unknown), k, others} means
-- of one side
function M.side(walls, ev)
  local s = { runq = mean(ev.runq), wall = mean(walls), scope = ev.scope }
  s.share = s.wall > 0 and s.runq / s.wall or 0
  s.cpu = ev.cpu and mean(ev.cpu) or nil
  s.k = s.cpu and M.parallelism(s.wall, s.cpu, s.runq) or 1
  s.others = ev.others and mean(ev.others) or nil
  s.cpus = ev.cpus
  return s
end

-- The smallest difference of other tasks' CPU use (in CPUs: 0.5, or this share of the CPUs a run
-- could use if more) that makes two sides' load differ; where that is unknown, the smallest
-- difference of the run-queue share of wall.
M.OTHERS_MATERIAL, M.OTHERS_MATERIAL_SHARE, M.SHARE_MATERIAL = 0.5, 0.1, 0.05

-- load = interference.load(base_side, new_side) : {base, new, text, heavier ("base", "new" or nil:
-- no material difference), busy (a side ran beside material other load), both_busy (both sides
-- did), max_share (the larger
-- run-queue share of wall), estimate (a net wall is an estimate on a side: several threads
-- runnable at once, or only the leader's delay known)}
function M.load(b, n)
  local l = { base = b, new = n, text = M.text(b, n), max_share = math.max(b.share, n.share) }
  l.estimate = math.max(b.k, n.k) > M.PARALLEL_ESTIMATE or b.scope ~= "tree" or n.scope ~= "tree"
  local cpus = math.max(b.cpus or 1, n.cpus or 1)
  local material = math.max(M.OTHERS_MATERIAL, M.OTHERS_MATERIAL_SHARE * cpus)
  local d_share = n.share - b.share
  -- busy: a side ran beside material other load (verdict.BUSY_THRESHOLD applies)
  if b.others and n.others then
    l.busy = math.max(b.others, n.others) >= material
    l.both_busy = math.min(b.others, n.others) >= material
  else
    l.busy = l.max_share >= M.SHARE_MATERIAL
    l.both_busy = math.min(b.share, n.share) >= M.SHARE_MATERIAL
  end
  -- other tasks' CPU use is the witness of other load; a run's own wait for a CPU is one where
  -- that is unknown, or where it saturates: on a machine already busy with other tasks, more of
  -- them get no more CPU (xz beside two hogs and other jobs read 1.7 vs 1.1 CPUs of other load
  -- with 614 vs 26 ms of wait per run), when the run is not parallel (a parallel run also waits
  -- for its own threads)
  if b.others and n.others and math.abs(n.others - b.others) >= material then
    l.heavier = n.others > b.others and "new" or "base"
  elseif math.abs(d_share) >= M.SHARE_MATERIAL and (not (b.others and n.others) or
      (l.busy and math.max(b.k, n.k) <= M.PARALLEL_ESTIMATE)) then
    l.heavier = d_share > 0 and "new" or "base"
  end
  return l
end

-- o = interference.summary(walls, ev) : {runq_mean_seconds, runq_share, others_cpu_mean,
-- parallelism, runq_scope}, a command's or run's evidence in brief
function M.summary(walls, ev)
  local s = M.side(walls, ev)
  local json = require "wb.json"
  local o = json.object()
  o.runq_mean_seconds, o.runq_share, o.parallelism = s.runq, s.share, s.k
  o.others_cpu_mean = s.others
  o.runq_scope = ev.scope
  return o
end

-- text = interference.text(base_side, new_side) : "run-queue delay 1.55 s vs 0.05 s per run"
function M.text(b, n)
  local util = require "wb.util"
  local t = string.format("run-queue delay %s vs %s per run", util.format_seconds(b.runq), util.format_seconds(n.runq))
  if b.others and n.others then
    t = t .. string.format(", other load %.1f vs %.1f CPUs", b.others, n.others)
  end
  return t
end

return M
