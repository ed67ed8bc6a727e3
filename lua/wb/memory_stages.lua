-- The application's stages on the memory timeline: wb.capture{stage_pattern = ...} watches the
-- command's stage lines (a Lua pattern with two captures, the stage's name and its seconds, as
-- profile_app_full's stage_pattern), stamps each with the time wb read it from the pipe, and takes a
-- stage reported at t that took d seconds to have run over [t - d, t]. The bands go to the memory
-- chart, and each stage gets the tree's RSS at its start and end, its growth and its peak.
--
--   local w <close> = memory_stages.watch(spec)    -- nil without spec.stage_pattern
--   spec = w.spec                                   -- stderr (and a stdout callback) also stamped
--   local bands = w:bands(t0, 1 / hz)               -- {{name, from, to}} in seconds from t0
--   res.memory.stages = memory_stages.attribute(m, bands)
local proc = require "wb.proc"

local M = {}

local Watch = {}
Watch.__index = Watch
Watch.__close = function(w) w:close() end

-- w:close() : closes the file a {file = path} stderr is copied to
function Watch:close()
  if self.file then self.file:close() end
  self.file = nil
end

-- w = memory_stages.watch(spec) : a copy of spec (w.spec) whose stderr (when inherited, a line
-- callback or {file = path [, append]}: then read line by line and copied to the file) and stdout
-- (when a line callback) also stamp the stage lines; nil when spec has no stage_pattern. Raises
-- when stage_pattern is not a string (at the caller of wb.capture); nil, err when the file cannot
-- be opened.
function M.watch(spec)
  local pattern = spec.stage_pattern
  if pattern == nil then return nil end
  if type(pattern) ~= "string" then error("wb.capture: stage_pattern must be a Lua pattern string", 4) end
  local w = setmetatable({ marks = {} }, Watch)
  local copy = {}
  for k, v in pairs(spec) do copy[k] = v end
  local function stamp(line)
    local name, secs = line:match(pattern)
    if name and tonumber(secs) then w.marks[#w.marks + 1] = { name, proc.line_time() / 1e9, tonumber(secs) } end
  end
  -- piece: a part of a line over 1 MiB whose rest follows (wb.proc): passed on, no newline added
  if spec.stderr == nil or spec.stderr == "inherit" then
    copy.stderr = function(line, piece)
      stamp(line)
      io.stderr:write(line, piece and "" or "\n")
    end
  elseif type(spec.stderr) == "function" then
    copy.stderr = function(line, piece)
      stamp(line)
      spec.stderr(line, piece)
    end
  elseif type(spec.stderr) == "table" and spec.stderr.file then
    local f, err = io.open(spec.stderr.file, spec.stderr.append and "a" or "w")
    if not f then return nil, err end
    f:setvbuf("line")
    w.file = f
    copy.stderr = function(line, piece)
      stamp(line)
      f:write(line, piece and "" or "\n")
    end
  end
  if type(spec.stdout) == "function" then
    copy.stdout = function(line, piece)
      stamp(line)
      spec.stdout(line, piece)
    end
  end
  w.spec = copy
  return w
end

-- bands = w:bands(t0, period) : the stages seen, {{name, from, to}} in seconds from t0
-- (CLOCK_MONOTONIC seconds, as wb.memory's), in the order they ended. A stamp can only be late
-- (wb reads a line after it was written, by up to a scheduling delay), so two stages reported one
-- after the other whose boundaries miss by less than `period` (the memory timeline's resolution)
-- and by less than half of either stage are taken to meet, at the earlier of the two boundaries.
function Watch:bands(t0, period)
  local out = {}
  for i, m in ipairs(self.marks) do
    local b = { m[1], m[2] - m[3] - t0, m[2] - t0 }
    local prev = out[i - 1]
    if prev then
      local miss = math.abs(b[2] - prev[3])
      if miss < period and miss < (prev[3] - prev[2]) / 2 and miss < (b[3] - b[2]) / 2 then
        local meet = math.min(b[2], prev[3])
        b[2], prev[3] = meet, meet
      end
    end
    out[i] = b
  end
  return out
end

-- rows = memory_stages.rows(stages, kib, seconds) : a table's rows (a header, then one per stage,
-- strings) for the list attribute() made; kib and seconds format KiB and seconds
function M.rows(stages, kib, seconds)
  local rows = { { "stage", "from – to", "RSS at start", "at end", "growth", "peak RSS", "tree peak" } }
  for _, s in ipairs(stages) do
    local g = s.growth_kb
    rows[#rows + 1] = { s.name, seconds(math.max(s.from, 0)) .. " – " .. seconds(s.to), kib(s.start_rss_kb),
      kib(s.end_rss_kb), (g >= 0 and "+" or "−") .. kib(math.abs(g)), kib(s.peak_rss_kb), s.holds_peak and "here" or "" }
  end
  return rows
end

-- The time the tree first came within reading error of its peak RSS: Linux reads RSS from per-CPU
-- counters without summing them (m.rss_error_kb, the sampler's: wb_rss_read_error_kb), so along a plateau the strict maximum falls on any sample of
-- it, often one after the stage that made it (a program holding 96 MiB, then napping before it
-- freed them, had its peak read in the nap). A process's error, within 1% to 5% of the peak.
local function peak_reached(m)
  local tl, peak = m.timeline, m.peak.rss_kb
  if not (peak and tl and tl.t) then return m.peak.t end
  local floor = peak - math.max(0.01 * peak, math.min(m.rss_error_kb or 0, 0.05 * peak))
  for k, t in ipairs(tl.t) do
    if tl.rss_kb[k] >= floor then return t end
  end
  return m.peak.t
end

-- list = memory_stages.attribute(m, bands) : per stage {name, from, to, start_rss_kb, end_rss_kb,
-- growth_kb, peak_rss_kb, peak_t, holds_peak (the tree reached its peak RSS in it: its first
-- sample within reading error of the peak, peak_reached)}, from the timeline's samples (the last
-- one at or before a time is the RSS then)
function M.attribute(m, bands)
  local tl = m.timeline
  local reached = peak_reached(m)
  local function at(t)
    local v = tl.rss_kb[1] or 0
    for i, ti in ipairs(tl.t) do
      if ti > t then break end
      v = tl.rss_kb[i]
    end
    return v
  end
  local out = {}
  for i, b in ipairs(bands) do
    local s = { name = b[1], from = b[2], to = b[3], start_rss_kb = at(b[2]), end_rss_kb = at(b[3]), peak_rss_kb = 0 }
    s.growth_kb = s.end_rss_kb - s.start_rss_kb
    for k, t in ipairs(tl.t) do
      if t >= b[2] and t <= b[3] and tl.rss_kb[k] > s.peak_rss_kb then s.peak_rss_kb, s.peak_t = tl.rss_kb[k], t end
    end
    s.holds_peak = reached ~= nil and reached >= b[2] and reached <= b[3]
    out[i] = s
  end
  return out
end

return M
