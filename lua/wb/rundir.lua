-- Run-directory ownership (docs/errors.md, "Faults"): one wb process per run directory, held by
-- an exclusive flock on DIR/wb.lock for the life of the process (released by the kernel however
-- wb ends, kill -9 included). The lock file is also the journal of the campaign's children: the
-- owner ("wb PID START"), each child about to start ("start NAME") and started ("child PID START
-- NAME") and each child's result the moment wait returns ("end PID {json}"); a resumed run's
-- owner appends its line after the previous owners' (nothing of the journal is ever truncated
-- away by a resume), so that a --resume after an unplanned death
--   * ends the processes the dead owner left running before it runs their cases again, and
--   * does not run again a child that had finished (its result and logs are used), which closes
--     all but microseconds of the window between a child's exit and the manifest saying so.
--
--   local lock = rundir.create(ctx.opts, base)   -- the run directory, made and locked (exit 2 if not)
--   rundir.child_started(dir, pid, name); rundir.child_ended(dir, pid, name, res)
--   local res = rundir.finished(dir, name)      -- on resume: the result of a child that had ended
local errors = require "wb.errors"
local fs = require "wb.fs"

local M = {}

M.LOCK = "wb.lock"

local held = {}     -- dir -> lock, kept for the life of the process
local finished = {} -- dir -> name -> result table of a previous owner's child that had ended

-- Appends text to dir's lock file when this process holds it; a failed write (a full disk) fails
-- the run (exit 1): a journal line lost is a case that may run twice.
local function journal(dir, text)
  local lock = held[dir]
  if not lock then return end
  local ok, err = lock:append(text)
  if not ok then errors.raise(1, dir .. "/" .. M.LOCK .. ": " .. tostring(err):gsub("^lock: ", ""), 0) end
end

-- The scalar fields of a wb.proc result that a reused result carries.
M.RESULT_FIELDS = { "pid", "exited", "code", "signal", "timed_out", "ok", "wall", "wall_ns", "user",
  "sys", "maxrss_kb", "maxrss_bound", "runq", "runq_scope", "wall_own", "nivcsw", "nvcsw", "others_cpu",
  "others_runnable", "cpu_pressure", "steal", "cpus" }

-- start, pgrp, state = rundir.start_time(pid) : the process's start time in clock ticks since
-- boot (field 22 of /proc/PID/stat), its process group and state letter; nil when there is no
-- such process
function M.start_time(pid)
  local stat = fs.read("/proc/" .. pid .. "/stat")
  if not stat then return nil end
  local rest = stat:match("^.*%)%s(.*)$") -- after the command name, which may hold spaces
  local fields = {}
  for f in (rest or ""):gmatch("%S+") do fields[#fields + 1] = f end
  -- rest starts at field 3 (state): field n is fields[n - 2]
  return tonumber(fields[20]), tonumber(fields[3]), fields[1]
end

-- pids = rundir.group_members(pgid, since) : the live processes of process group pgid started at
-- or after since (clock ticks; the group's leader started first, so older ones are not its
-- members); zombies, which only their parent can remove, are not counted
function M.group_members(pgid, since)
  local out = {}
  for _, name in ipairs(fs.list("/proc") or {}) do
    local pid = tonumber(name)
    if pid then
      local start, pgrp, state = M.start_time(pid)
      if pgrp == pgid and start and start >= since and state ~= "Z" then out[#out + 1] = pid end
    end
  end
  return out
end

local function owner_line()
  local pid = tonumber((fs.readlink("/proc/self") or ""):match("^(%d+)$"))
  return string.format("wb %d %d\n", pid or 0, pid and M.start_time(pid) or 0), pid
end

-- The part of the journal a resume must settle: from the owner line before the last "settled"
-- line (the last resume that finished settling what came before it) to the end; all of it when no
-- resume finished.
local function unsettled(previous)
  local settled = 0
  for at in ("\n" .. previous):gmatch("\n()settled\n") do settled = at - 1 end
  local from = 1
  for at in ("\n" .. previous):gmatch("\n()wb %d+ %d+\n") do
    if at - 1 < settled then from = at - 1 end
  end
  return previous:sub(from)
end

-- Ends the processes the unsettled owners recorded as running (children without an "end" line):
-- SIGTERM to each group, SIGKILL after a second, until the groups are empty (10 s at most).
local function end_survivors(dir, previous)
  local running, order = {}, {}
  local starting = {} -- name -> true: about to be spawned, no child line yet
  for line in previous:gmatch("[^\n]+") do
    local pid, start, name = line:match("^child (%d+) (%d+) (.*)$")
    if pid then
      running[tonumber(pid)] = { start = tonumber(start), name = name }
      order[#order + 1] = tonumber(pid)
      starting[name] = nil
    end
    local about = line:match("^start (.*)$")
    if about then starting[about] = true end
    local failed = line:match("^unstarted (.*)$") -- the spawn failed: nothing ran
    if failed then starting[failed] = nil end
    local ended = line:match("^end (%d+)")
    if ended then running[tonumber(ended)] = nil end
  end
  local proc, clock = require "wb.proc", require "wb.clock"
  local found = {}
  for _, pid in ipairs(order) do
    local c = running[pid]
    if c and #M.group_members(pid, c.start) > 0 then
      found[#found + 1] = c.name
      proc.signal_group(pid, 15)
      local t = clock.timer()
      while #M.group_members(pid, c.start) > 0 and t:elapsed() < 10 do
        if t:elapsed() > 1 then proc.signal_group(pid, 9) end
        clock.sleep(0.02)
      end
    end
  end
  if #found > 0 then
    io.stderr:write(string.format("wb: %s: ended what the previous wb left running of %s\n", dir,
      table.concat(found, ", ")))
  end
  -- children gone with no end recorded: wb died between their exit and its journal entry, so
  -- whether they finished is unknown; they are run again, and the user is told
  local unknown = {}
  for _, pid in ipairs(order) do
    local c = running[pid]
    if c then
      local left = false
      for _, n in ipairs(found) do left = left or n == c.name end
      if not left then unknown[#unknown + 1] = c.name end
    end
  end
  -- spawned, or about to be, when wb died: it may have run (the reaper ended it, or it finished)
  local names = {}
  for name in pairs(starting) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do unknown[#unknown + 1] = name end
  if #unknown > 0 then
    io.stderr:write(string.format("wb: %s: the previous wb died while %s ran, before recording how it ended: "
      .. "run again (it may have finished)\n", dir, table.concat(unknown, ", ")))
  end
  return found
end

-- Confines dir (wb.fs.confine: no write below it follows a link; exit 2 when it belongs to
-- another user or others may write in it).
local function confine(dir, create)
  local ok, err = fs.confine(dir, create)
  if not ok then errors.raise(2, "run directory " .. err, 0) end
end

-- rundir.confine_existing(dir) : confines dir when it is a directory, before wb reads its files on
-- --resume (so that a link planted there is not read through); exit 2 as rundir.lock
function M.confine_existing(dir)
  local st = fs.stat(dir)
  if st and st.type == "dir" then confine(dir) end
end

-- rundir.lock(dir [, resume [, keep [, recorded]]]) : takes DIR/wb.lock for this process (exit 2
-- naming the owner's pid when another process holds it); with resume, first ends what the
-- previous owners left running and keeps their journal; with keep, the journal is kept (appended
-- to) too. recorded(name) is true for a child whose result the manifest holds: its end line is
-- not carried into this owner's part of the journal.
function M.lock(dir, resume, keep, recorded)
  if held[dir] then return held[dir] end
  confine(dir)
  local line = owner_line()
  local lock, previous, errno, holder = fs.lock(dir .. "/" .. M.LOCK, line, resume or keep)
  if not lock then
    local err = previous
    local pid
    for p in ("\n" .. (holder or "")):gmatch("\nwb (%d+) ") do pid = p end -- the last owner's
    if errno == 11 and pid then
      errors.raise(2, string.format("run directory %s is in use by wb pid %s", dir, pid), 0)
    elseif errno == 11 then
      errors.raise(2, string.format("run directory %s is in use by another process", dir), 0)
    end
    errors.raise(2, "run directory " .. dir .. ": " .. tostring(err), 0)
  end
  held[dir] = lock
  finished[dir] = {}
  if resume then
    local open = unsettled(previous or "")
    end_survivors(dir, open)
    local json = require "wb.json"
    local carried = {} -- name -> the end line, the last of its name
    for line in open:gmatch("[^\n]+") do
      local doc = line:match("^end %d+ (.*)$")
      local ok, res = pcall(json.decode, doc or "")
      if ok and type(res) == "table" and type(res.name) == "string" then
        finished[dir][res.name] = res
        if not (recorded and recorded(res.name)) then carried[res.name] = line end
      end
    end
    -- the ends the manifest does not hold are written again after this owner's line, before
    -- "settled": the next resume reads from this owner's line on, and a kill -9 before this run
    -- records their results must not make it run them again
    local names = {}
    for name in pairs(carried) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do journal(dir, carried[name] .. "\n") end
    journal(dir, "settled\n")
  end
  return lock
end

-- dir = rundir.create(opts, base) : the run directory for a new run, made, confined and locked.
-- Without -o: base, or base-2, base-3, ... whichever this process is first to create (mkdir
-- is atomic, so two runs started in the same second get different directories).
-- With -o DIR: DIR (made if missing); refused (exit 2) when it holds a run's manifest, unless
-- --overwrite, which removes that run's files first; --overwrite of a directory that holds no
-- run is refused, whatever it holds.
function M.create(opts, base)
  local dir = opts.output
  if not dir then
    local n = 1
    dir = base
    local parent = dir:match("^(.*)/[^/]+$")
    if parent then confine(parent, true) end
    while true do
      local ok, err, errno = fs.mkdir(dir)
      if ok then break end
      if errno ~= 17 then errors.raise(2, "run directory " .. dir .. ": " .. tostring(err), 0) end
      n = n + 1
      dir = base .. "-" .. n
    end
    confine(dir)
    M.lock(dir, false, true)
    return dir
  end
  dir = dir:gsub("(.)/+$", "%1")
  confine(dir, true)
  if opts.overwrite and not fs.exists(dir .. "/manifest.json") then
    local others = {}
    for _, name in ipairs(fs.list(dir) or {}) do
      if name ~= M.LOCK then others[#others + 1] = name end
    end
    if #others > 0 then
      errors.raise(2, string.format("-o %s: holds no wb run (no manifest.json; %d other entries): "
        .. "--overwrite only replaces a run", dir, #others), 0)
    end
  end
  local lock = M.lock(dir, false, true) -- the journal kept until this is known to be a new run
  local m = fs.exists(dir .. "/manifest.json") and require("wb.json").read(dir .. "/manifest.json")
  if fs.exists(dir .. "/manifest.json") and not opts.overwrite then
    local status = type(m) == "table" and m.status
    if status == "complete" then
      errors.raise(2, string.format("-o %s: holds a completed run (--overwrite replaces it)", dir), 0)
    end
    errors.raise(2, string.format("-o %s: holds a run (status %s): --resume %s finishes it, --overwrite replaces it",
      dir, tostring(status or "unreadable"), dir), 0)
  end
  if opts.overwrite then
    for _, name in ipairs(fs.list(dir) or {}) do
      if name ~= M.LOCK then
        local path = dir .. "/" .. name
        local rok, rerr = fs.remove_tree(path)
        if not rok then errors.raise(2, "--overwrite: " .. tostring(rerr), 0) end
      end
    end
  end
  local ok, err = lock:reset(owner_line()) -- a new run: the journal of what was here goes
  if not ok then errors.raise(1, dir .. "/" .. M.LOCK .. ": " .. tostring(err):gsub("^lock: ", ""), 0) end
  return dir
end

-- rundir.child_starting(dir, name) / rundir.child_unstarted(dir, name) /
-- rundir.child_started(dir, pid, name) / rundir.child_ended(dir, pid, name, res) : the lock
-- file's record of a campaign's child (what a --resume after kill -9 ends, reuses, or announces
-- as run again): "start" is written before the spawn, so that a kill between the spawn and its
-- "child" line is announced too, "unstarted" when the spawn failed; no-ops for a directory this
-- process has not locked
function M.child_starting(dir, name) journal(dir, "start " .. name .. "\n") end

function M.child_unstarted(dir, name) journal(dir, "unstarted " .. name .. "\n") end

function M.child_started(dir, pid, name)
  journal(dir, string.format("child %d %d %s\n", pid, M.start_time(pid) or 0, name))
end

function M.child_ended(dir, pid, name, res)
  if not held[dir] then return end
  local json = require "wb.json"
  local doc = json.object()
  doc.name = name
  for _, k in ipairs(M.RESULT_FIELDS) do doc[k] = res[k] end
  journal(dir, string.format("end %d %s\n", pid, json.encode(doc)))
end

-- res = rundir.finished(dir, name) : on resume, the result of the previous owner's child of that
-- name that had ended before it died (nil when there is none); taken once
function M.finished(dir, name)
  local f = finished[dir]
  local res = f and f[name]
  if res then f[name] = nil end
  return res
end

return M
