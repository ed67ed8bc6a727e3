-- Timeline and profile exports as JSON: Chrome trace-event files (open in Perfetto or
-- chrome://tracing) from wb's nested stage timers or a campaign's runs, and speedscope files of
-- sampled stacks. wb.flame re-exports these as flame.trace, flame.trace_from_stages,
-- flame.trace_from_runs and (from folded text) flame.speedscope.
local json = require "wb.json"
local core = require "wb.core"
local util = require "wb.util"

local M = {}

local UNITS = { none = true, nanoseconds = true, microseconds = true, milliseconds = true,
  seconds = true, bytes = true }

local function object(pairs_list)
  local o = json.object()
  for i = 1, #pairs_list, 2 do o[pairs_list[i]] = pairs_list[i + 1] end
  return o
end


-- json_text = trace.speedscope(stacks [, {name = "profile", unit = "none"}]) : a speedscope file
-- (https://www.speedscope.app/file-format-schema.json) with one "sampled" profile: every frame
-- name once in shared.frames, one sample per stack (frame indices root-first) weighted by its
-- count; startValue 0, endValue the total. stacks = {{frames = {...}, count = N [, leaf = i,
-- file = path, line = n]}, ...}: with leaf, frame i of that stack carries the source position
-- (a frame per name and position).
function M.speedscope(stacks, opts)
  opts = opts or {}
  local unit = opts.unit or "none"
  if not UNITS[unit] then error("speedscope: unknown unit '" .. tostring(unit) .. "'", 2) end
  local name = opts.name or "profile"
  local frames, index = json.array(), {}
  local samples, weights, total = json.array(), json.array(), 0
  for i, st in ipairs(stacks) do
    local sample = #st.frames > 0 and {} or json.array()
    for j, f in ipairs(st.frames) do
      local at = j == st.leaf and st.file and f .. "\0" .. st.file .. ":" .. st.line or f
      local k = index[at]
      if not k then
        frames[#frames + 1] = at == f and object { "name", f } or object { "name", f, "file", st.file, "line", st.line }
        k = #frames - 1
        index[at] = k
      end
      sample[j] = k
    end
    samples[i], weights[i] = sample, st.count
    total = total + st.count
  end
  return json.encode(object {
    "$schema", "https://www.speedscope.app/file-format-schema.json",
    "shared", object { "frames", frames },
    "profiles", json.array { object {
      "type", "sampled", "name", name, "unit", unit, "startValue", 0, "endValue", total,
      "samples", samples, "weights", weights,
    } },
    "name", name,
    "activeProfileIndex", 0,
    "exporter", "wb " .. core.version,
  })
end

-- json_text = trace.encode(events [, {process_name}]) : a Chrome trace-event file in object form,
-- {"traceEvents": [...], "displayTimeUnit": "ms"}. Each event is {name, ts, dur, pid = 1,
-- tid = 1, cat = "wb", args, ph = "X"}: a complete event, ts and dur in microseconds; other ph
-- values (e.g. "M" metadata) pass through with their name, pid, tid, ts and args. process_name
-- names every pid the events use.
function M.encode(events, opts)
  if type(events) ~= "table" then error("trace: a list of events expected", 2) end
  opts = opts or {}
  local out, pids, seen = json.array(), {}, {}
  for i, e in ipairs(events) do
    if type(e) ~= "table" or type(e.name) ~= "string" then
      error(string.format("trace: event %d needs a name", i), 2)
    end
    local ph = e.ph or "X"
    local pid, tid = e.pid or 1, e.tid or 1
    local ev
    if ph == "X" then
      if type(e.ts) ~= "number" or type(e.dur) ~= "number" or e.dur < 0 then
        error(string.format("trace: event %d (%s) needs ts and dur >= 0 in microseconds", i, e.name), 2)
      end
      ev = object { "name", e.name, "cat", e.cat or "wb", "ph", "X", "ts", e.ts, "dur", e.dur,
        "pid", pid, "tid", tid }
    else
      ev = object { "name", e.name, "ph", ph, "pid", pid, "tid", tid }
      if e.cat then ev.cat = e.cat end
      if e.ts then ev.ts = e.ts end
    end
    if e.args then ev.args = e.args end
    out[#out + 1] = ev
    if not seen[pid] then
      seen[pid] = true
      pids[#pids + 1] = pid
    end
  end
  if opts.process_name then
    for i, pid in ipairs(pids) do
      table.insert(out, i, object { "name", "process_name", "ph", "M", "pid", pid, "tid", 0,
        "args", object { "name", opts.process_name } })
    end
  end
  return json.encode(object { "traceEvents", out, "displayTimeUnit", "ms" })
end

local function us(ns)
  local v = ns / 1000
  return math.tointeger(v) or v
end

-- events = trace.from_stages(stages [, {pid = 1, tid = 1, cat = "stage"}]) : wb.clock.stages()
-- as complete events, times relative to the first stage's start; a stage still open lasts until
-- now and has args.open = true. Nesting is kept by timing (children lie inside their parent).
function M.from_stages(stages, opts)
  if type(stages) ~= "table" then error("trace_from_stages: a list of stages expected", 2) end
  opts = opts or {}
  local t0
  for _, s in ipairs(stages) do
    if type(s.name) ~= "string" or math.type(s.start_ns) ~= "integer" then
      error("trace_from_stages: stages need a name and an integer start_ns", 2)
    end
    t0 = math.min(t0 or s.start_ns, s.start_ns)
  end
  local events, now = {}, nil
  for i, s in ipairs(stages) do
    local dur, args = s.dur_ns, object { "depth", s.depth }
    if s.parent and stages[s.parent] then args.parent = stages[s.parent].name end
    if not dur then
      now = now or require("wb.clock").now()
      dur = now - s.start_ns
      args.open = true
    end
    events[i] = { name = s.name, cat = opts.cat or "stage", ts = us(s.start_ns - t0), dur = us(dur),
      pid = opts.pid or 1, tid = opts.tid or 1, args = args }
  end
  return events
end

-- Seconds since the epoch of "YYYY-MM-DDTHH:MM:SS[.fff]Z", or nil.
local function utc_seconds(s)
  if type(s) ~= "string" then return nil end
  local y, mo, d, h, mi, sec = s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)[T ](%d%d):(%d%d):(%d%d%.?%d*)Z?$")
  if not y then return nil end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  local yy = mo <= 2 and y - 1 or y
  local era = yy // 400
  local yoe = yy - era * 400
  local doy = (153 * (mo + (mo > 2 and -3 or 9)) + 2) // 5 + d - 1
  local days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
end

local function stage_seconds(rec)
  local st = rec.stage_seconds
  if type(st) ~= "table" and type(rec.metrics) == "table" then st = rec.metrics.stage_seconds end
  return type(st) == "table" and st or nil
end

-- events = trace.from_runs(runs) : a campaign's runs (manifest.runs, or the manifest) as complete
-- events on one track per run (tid = its position; thread_name and thread_sort_index metadata
-- name and order the tracks): the run from started_at_utc for wall_time_seconds (else until
-- finished_at_utc), and its stage_seconds{} (or metrics.stage_seconds{}) laid end to end from
-- the run's start, scaled down to fit the run when they add up to more. Times are relative to
-- the earliest start; runs without a start or a duration are left out.
function M.from_runs(runs)
  if type(runs) ~= "table" then error("trace_from_runs: a list of runs expected", 2) end
  if type(runs.runs) == "table" then runs = runs.runs end
  local items, t0 = {}, nil
  for _, rec in ipairs(runs) do
    local start = utc_seconds(rec.started_at_utc)
    local dur = type(rec.wall_time_seconds) == "number" and rec.wall_time_seconds or nil
    if start and not dur then
      local finish = utc_seconds(rec.finished_at_utc)
      dur = finish and finish >= start and finish - start or nil
    end
    if start and dur then
      items[#items + 1] = { rec = rec, start = start, dur = dur }
      t0 = math.min(t0 or start, start)
    end
  end
  local events = {}
  local function add(e) events[#events + 1] = e end
  for tid, it in ipairs(items) do
    local rec, ts = it.rec, (it.start - t0) * 1e6
    local name = tostring(rec.name or ("run " .. tid))
    add { ph = "M", name = "thread_name", pid = 1, tid = tid, args = object { "name", name } }
    add { ph = "M", name = "thread_sort_index", pid = 1, tid = tid, args = object { "sort_index", tid } }
    local args = object {}
    for _, k in ipairs { "status", "return_code", "started_at_utc", "finished_at_utc", "wall_time_seconds" } do
      if rec[k] ~= nil then args[k] = rec[k] end
    end
    add { name = name, cat = "run", ts = ts, dur = it.dur * 1e6, pid = 1, tid = tid, args = args }
    local stages = stage_seconds(rec)
    if stages then
      local keys, sum = {}, 0
      for _, k in ipairs(util.keys(stages)) do
        local v = stages[k]
        if type(v) == "number" and v >= 0 then
          keys[#keys + 1] = k
          sum = sum + v
        end
      end
      local fit = sum > it.dur and it.dur / sum or 1
      local at = ts
      for _, k in ipairs(keys) do
        local d = stages[k] * fit * 1e6
        local sargs = object { "seconds", stages[k] }
        if fit < 1 then sargs.scaled = true end
        add { name = tostring(k), cat = "stage", ts = at, dur = d, pid = 1, tid = tid, args = sargs }
        at = at + d
      end
    end
  end
  return events
end

return M
