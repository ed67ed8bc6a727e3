-- Capture cases of the executor (lua/wb/executor.lua): a case with `capture` options runs under
-- wb.capture (counters, on/off-CPU stacks symbolized where the command ran, the quality figures)
-- locally, or on a Slurm node inside `wb job`; a case with `tasks = N` is one Slurm step of N
-- tasks (srun), each task captured by its own `wb job`, and the tasks merged into one profile
-- whose stacks have the task as their root frame.
--
--   case = { name = "profile", argv = {...}, capture = { freq = 99, name = "profile" }, tasks = 4 }
--   local res, doc = slurm_capture.run(case, run_dir [, rank])  -- where the command runs
--   local res = slurm_capture.load(doc)                          -- the capture, on the submit side
--   local m = slurm_capture.merge(run_dir, case, docs)           -- per-task table, merged profile
--
-- doc is what a result file keeps of a wb.capture result: everything but the folded text (which
-- stays in its .folded file) and the symbol tables.
local campaign = require "wb.campaign"
local flame = require "wb.flame"
local fs = require "wb.fs"
local json = require "wb.json"
local core = require "wb.core"
local util = require "wb.util"

local M = {}

-- The wb.capture options a case may set (values a cases file can hold).
M.OPTIONS = { "counters", "oncpu", "offcpu", "freq", "method", "unwind", "stack_size", "stack_entries",
  "count_entries", "ring_mib", "memory", "memory_hz", "alloc", "alloc_interval", "python", "stage_pattern", "root", "top",
  "title" }
local KNOWN = { name = true, dir = true }
for _, k in ipairs(M.OPTIONS) do KNOWN[k] = true end

local function bad(msg) require("wb.errors").raise(2, msg, 0) end
local function set(v) return v ~= nil and v ~= core.null end

-- slurm_capture.check(capture, tasks, where) : a case's capture options and task count (exit 2
-- naming the case when one is not usable)
function M.check(cap, tasks, where)
  if set(cap) then
    if type(cap) ~= "table" then bad(where .. ": capture must be a table of wb.capture options") end
    for k in pairs(cap) do
      if not KNOWN[k] then bad(where .. ": capture option '" .. tostring(k) .. "' is not one a job can take") end
    end
  end
  if set(tasks) and (math.type(tasks) ~= "integer" or tasks < 1) then
    bad(where .. ": tasks must be a positive integer")
  end
  if set(tasks) and tasks > 1 and not set(cap) then bad(where .. ": tasks > 1 needs capture options") end
end

-- name = slurm_capture.task_name(case_name, rank) : the run name of one task's logs and result
function M.task_name(name, rank) return rank and (name .. ".task" .. rank) or name end

-- The profile file stem of a case (and task).
local function stem(case, rank)
  local base = set(case.capture.name) and case.capture.name or util.safe_name(case.name)
  return rank and (base .. ".task" .. rank) or base
end

-- The wb.capture spec of a case: its command, logs under run_dir/logs, outputs under
-- run_dir/<capture.dir or "profiles">.
local function spec_of(case, run_dir, rank)
  local cap = case.capture
  local s = {}
  for _, k in ipairs(M.OPTIONS) do
    if set(cap[k]) then s[k] = cap[k] end
  end
  local logs = campaign.log_paths(run_dir, M.task_name(case.name, rank))
  s.argv, s.env, s.cwd, s.timeout = case.argv, case.env, set(case.cwd) and case.cwd or nil, util.opt(case.timeout)
  s.dir = run_dir .. "/" .. (set(cap.dir) and cap.dir or "profiles")
  s.name = stem(case, rank)
  s.stdout, s.stderr = { file = logs[1] }, { file = logs[2] }
  return s
end

local DROP = { folded_text = true, symbols = true, profilers = true, located = true }

-- The JSON-able part of a capture result.
local function plain(v)
  if type(v) ~= "table" then
    return (type(v) == "number" or type(v) == "string" or type(v) == "boolean") and v or nil
  end
  if v == core.null then return v end
  local out = (util.is_list(v) or v[1] ~= nil) and json.array() or json.object()
  for k, x in pairs(v) do
    if type(k) == "string" and not DROP[k] then
      out[k] = plain(x)
    elseif type(k) == "number" then
      out[k] = plain(x)
    end
  end
  return out
end

-- res, doc = slurm_capture.run(case, run_dir [, rank]) : the case's command under wb.capture, its
-- profiles in run_dir; doc is what a result file keeps of res. nil, err when it cannot start.
function M.run(case, run_dir, rank)
  local res, err = require("wb.capture").run(spec_of(case, run_dir, rank))
  if not res then return nil, err end
  local doc = plain(res)
  doc.pid = res.result.pid or (res.processes and res.processes[1]) or json.null
  return res, doc
end

-- res = slurm_capture.load(doc) : a capture result as wb.capture returned it, from what a result
-- file kept: the folded text read back from the .folded files (paths are absolute: the run
-- directory is on a filesystem the nodes share)
function M.load(doc)
  local res = util.deep_copy(doc)
  res.warnings = res.warnings or {}
  local function text(p)
    if type(p) == "table" and p.folded and not p.skipped then p.folded_text = fs.read(p.folded) or "" end
  end
  text(res.oncpu)
  text(res.offcpu)
  if type(res.python) == "table" then
    text(res.python.oncpu)
    text(res.python.offcpu)
  end
  return res
end

-- slurm_capture.fill(rec, doc) : a finished capture's fields in its run's record: method,
-- fallback, capture (doc), stopped_by
function M.fill(rec, doc)
  rec.method = doc.method
  rec.fallback = doc.fallback
  rec.capture = doc
  if doc.stopped then rec.stopped_by = doc.stopped end
end

-- ---- tasks --------------------------------------------------------------------------------

-- The frame naming a task (or, with label "trial", trial rank + 1) at the root of merged stacks.
function M.task_frame(t, label)
  local who = label == "trial" and string.format("trial %d", t.rank + 1) or string.format("task %d", t.rank)
  return string.format("%s (%s, pid %s)", who, tostring(util.opt(t.node) or "?"), tostring(util.opt(t.pid) or "?"))
end

-- Appends each line of folded text to out under the root frame.
local function prefixed(out, text, frame)
  for line in (text or ""):gmatch("[^\n]+") do out[#out + 1] = frame .. ";" .. line end
end

local function write(path, text)
  local ok, err = fs.write(path, text)
  if not ok then require("wb.errors").raise(1, "slurm_capture: " .. err, 0) end
  return path
end

-- m = slurm_capture.merge(run_dir, case, results [, label]) : results[rank + 1] is the result file
-- (or the record) of task rank (nil when it has none); label "trial" names the root frames and
-- titles after trials 1..N (the trials of one run, each captured) rather than tasks 0..N-1. Writes <stem>.merged.{oncpu,offcpu}.{folded,svg} (every
-- task's stacks under its task frame) and <stem>.tasks.diff.svg (the task with the least CPU
-- time against the one with the most) and returns {tasks = {{rank, node, pid, status, method,
-- fallback, cpu_seconds, offcpu_seconds, samples, top, svg, missing}}, imbalance (max/mean CPU
-- time of the tasks with a result), oncpu, offcpu ({folded, svg, samples, folded_text, top}),
-- diff = {svg, base, new} (ranks), missing (ranks without a result)}
function M.merge(run_dir, case, results, label)
  local dir = run_dir .. "/" .. (set(case.capture.dir) and case.capture.dir or "profiles")
  local base = dir .. "/" .. stem(case)
  local m = { tasks = {}, missing = {} }
  local lines = { oncpu = {}, offcpu = {} }
  local texts = {}
  local sum, most, least, n = 0, nil, nil, 0
  for rank = 0, (case.tasks or 1) - 1 do
    local r = results[rank + 1]
    local t = { rank = rank }
    m.tasks[#m.tasks + 1] = t
    local doc = r and r.capture
    if not doc then
      t.missing, t.status = true, "missing"
      m.missing[#m.missing + 1] = rank
    else
      local res = M.load(doc)
      t.node, t.pid, t.status = r.node, doc.pid, r.status
      t.method, t.fallback = doc.method, doc.fallback
      t.cpu_seconds = (r.user_seconds or 0) + (r.sys_seconds or 0)
      t.wall_seconds = r.wall_time_seconds
      local on, off = res.oncpu or {}, res.offcpu or {}
      t.samples = on.samples
      t.offcpu_seconds = off.total_seconds
      t.top = on.top and on.top[1] and on.top[1].name or nil
      t.svg = on.svg
      t.offcpu_skipped = off.skipped
      local frame = M.task_frame(t, label)
      prefixed(lines.oncpu, on.folded_text, frame)
      prefixed(lines.offcpu, off.folded_text, frame)
      texts[rank] = require("wb.capture_fold").by_name(on.folded_text or "") -- tasks' pids differ
      n, sum = n + 1, sum + t.cpu_seconds
      if not most or t.cpu_seconds > most.cpu_seconds then most = t end
      if not least or t.cpu_seconds < least.cpu_seconds then least = t end
    end
  end
  m.imbalance = n > 0 and sum > 0 and most.cpu_seconds / (sum / n) or nil
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    if #lines[kind] > 0 then
      local text = table.concat(lines[kind], "\n") .. "\n"
      local stacks, total = flame.parse(text)
      local unit = kind == "offcpu" and "ns" or "samples"
      m[kind] = { folded_text = text, samples = total, unit = unit,
        folded = write(base .. ".merged." .. kind .. ".folded", text),
        svg = write(base .. ".merged." .. kind .. ".svg", flame.svg(stacks, {
          title = (kind == "offcpu" and "Off-CPU time, " or "On-CPU samples, ") .. "all " .. (label or "task")
            .. "s: " .. case.name,
          unit = unit, colors = kind == "offcpu" and "io" or "hot" })),
        top = require("wb.capture_fold").top(stacks, 20, { first = 3, user_only = kind == "offcpu" }) }
      if kind == "offcpu" then m[kind].total_seconds = total / 1e9 end
    end
  end
  if most and least and most ~= least then
    m.diff = { base = least.rank, new = most.rank, svg = write(base .. ".tasks.diff.svg",
      flame.diff_svg(texts[least.rank], texts[most.rank], { title = string.format(
        "On-CPU: %s (most CPU time) against %s (least)", M.task_frame(most, label), M.task_frame(least, label)) })) }
  end
  return m
end

-- blocks = slurm_capture.report_sections(m, run_dir) : the report's sections of a merged
-- profile: the per-task table with the imbalance, the merged flame graph, each task's own
-- flame graph (the drill-down) and the differential one
function M.report_sections(m, run_dir)
  local page = require "wb.page"
  local function rel(p) return p and (p:sub(1, #run_dir + 1) == run_dir .. "/" and p:sub(#run_dir + 2) or p) end
  local function secs(x) return x and util.format_seconds(x) or "–" end
  local rows = { { "task", "node", "pid", "status", "method", "CPU time", "off-CPU time", "samples", "top function",
    "flame graph" } }
  for _, t in ipairs(m.tasks) do
    rows[#rows + 1] = { tostring(t.rank), tostring(util.opt(t.node) or "–"), tostring(util.opt(t.pid) or "–"),
      t.status, t.method or "–", secs(t.cpu_seconds), t.offcpu_seconds and secs(t.offcpu_seconds) or "–",
      tostring(t.samples or "–"), t.top or "–", t.svg and page.link(rel(t.svg), "task " .. t.rank) or "–" }
  end
  local lead = m.imbalance and string.format("Imbalance (max/mean CPU time of the tasks): %.2f×", m.imbalance)
      or "No task left a profile."
  local body = { page.p(lead), page.table(rows, { align = { "r", "l", "r", "l", "l", "r", "r", "r", "l", "l" } }) }
  if #m.missing > 0 then
    body[#body + 1] = page.p("Without a profile (the job ended first; --resume runs them): tasks " ..
      table.concat(m.missing, ", "))
  end
  local blocks = { page.section("Tasks", body) }
  local function frame(title, path)
    return page.section(title, { page.raw('<object type="image/svg+xml" data="' .. page.escape(rel(path))
      .. '" style="width:100%"></object>\n'), page.p(page.link(rel(path), "open")) })
  end
  if m.oncpu then blocks[#blocks + 1] = frame("On-CPU flame graph, all tasks (root frame: the task)", m.oncpu.svg) end
  if m.offcpu then blocks[#blocks + 1] = frame("Off-CPU flame graph, all tasks", m.offcpu.svg) end
  if m.diff then
    blocks[#blocks + 1] = frame(string.format("Task %d against task %d (red: more in task %d)", m.diff.new,
      m.diff.base, m.diff.new), m.diff.svg)
  end
  return blocks
end

-- doc = slurm_capture.read_result(path) : a result file, or nil
function M.read_result(path)
  return fs.exists(path) and json.read(path) or nil
end

return M
