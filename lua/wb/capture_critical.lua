-- The critical path of a capture (wb.bpf's s:critical_path(), core/critpath.h) as a profile: the
-- time the run's wall clock followed, across the processes and threads of the tree, as stacks
-- weighted by nanoseconds (folded text, flame graph), its top functions and waits, and its shares
-- by process and by kind (on a CPU, waiting for one, waiting on something outside the tree).
local fold = require "wb.capture_fold"

local M = {}

M.NOT_SAMPLED = "[on CPU, between samples]"
M.UNKNOWN = "[not traced]"

-- Whether a folded frame is one of the marks M.records puts after a wait: what ended it.
function M.is_mark(frame) return frame:find("^%[woken ") ~= nil or frame:find("^%[no wake%-up") ~= nil end

local WOKEN = { interrupt = "[woken by an interrupt: a timer or a device]", kernel = "[woken by a kernel thread]",
  none = "[no wake-up seen]", self = "[woken by itself]" }

-- The records of s:read() by id, and the name of each process.
local function index(data)
  local by_id, comm = {}, {}
  for _, list in ipairs({ data.oncpu, data.offcpu }) do
    for _, r in ipairs(list) do
      if r.id then by_id[r.id] = r end
      comm[r.pid] = comm[r.pid] or r.comm
    end
  end
  return by_id, comm
end

local function copy(r, count, kind)
  return { pid = r.pid, comm = r.comm, kind = kind, user = r.user, kernel = r.kernel, python = r.python,
    python_truncated = r.python_truncated, count = count, id = r.id }
end

-- records, marks, names = M.records(cp, data) : the path as records fold.fold takes (count: ns; kind "oncpu" for
-- time on a CPU, by the samples inside it; "blocked" and "runqueue" by the stack the thread waited
-- in; what ended a wait, when not a thread of the tree, as an extra leaf in `marks` by record);
-- names: a name of each process of data's records
function M.records(cp, data)
  local by_id, comm = index(data)
  local out, marks = {}, {}
  local function bare(pid, count, kind, mark) -- a wait's stack unknown: under [stack lost]
    local r = { pid = pid, comm = comm[pid] or "?", kind = kind, user = kind == "oncpu" and {} or { fold.STACK_LOST_PC },
      kernel = {}, count = count }
    out[#out + 1] = r
    marks[r] = mark
  end
  for _, s in ipairs(cp.oncpu) do
    local r = s.stack and by_id[s.stack]
    if r then out[#out + 1] = copy(r, s.ns, "oncpu")
    else bare(s.pid, s.ns, "oncpu", M.NOT_SAMPLED) end
  end
  for _, p in ipairs(cp.parts) do
    if p.kind ~= "oncpu" then
      local r = p.stack and by_id[p.stack]
      local kind = p.kind == "runqueue" and "runqueue" or "blocked"
      local mark = p.kind == "unknown" and M.UNKNOWN or (p.woken_by == "external"
        and string.format("[woken by %s (pid %d), outside the traced tree]", p.waker_comm or "?", p.waker_pid or 0)
        or WOKEN[p.woken_by or ""])
      if r then
        local c = copy(r, p.ns, kind)
        out[#out + 1] = c
        marks[c] = mark
      else
        bare(p.pid, p.ns, kind, mark)
      end
    end
  end
  return out, marks, comm
end

-- text, info = fold_path(records, marks, data, sym, root) : a path's records folded, with their
-- Python frames when data has them
local function fold_path(records, marks, data, sym, root)
  return fold.fold(records, sym, { root = root, marks = marks,
    python = data.python and require("wb.capture_python").collector() or nil })
end

-- t = M.profile(cp, data, sym, root) : {folded_text, info (fold's), wall_seconds, by_process =
-- {{pid, comm, oncpu, runqueue, wait, unknown (seconds)}}, by_kind = {kind = seconds}, functions =
-- {{name, fraction, seconds, file?, line?}} (self time on a CPU on the path, largest first; file
-- and line: where most of it was sampled, fold.locate), waits_for =
-- {{pid, comm, waker_pid, waker_comm, seconds}} (blocked until another thread of the tree woke it;
-- largest first), segment_count, dropped}
function M.profile(cp, data, sym, root)
  local records, marks, names = M.records(cp, data)
  local text, info = fold_path(records, marks, data, sym, root)
  -- a process's name on the path: the one most of its time there ran under (a child is its
  -- parent's name until it execs)
  local by_name, comm = {}, {}
  for _, r in ipairs(records) do
    local t = by_name[r.pid] or {}
    by_name[r.pid] = t
    t[r.comm] = (t[r.comm] or 0) + r.count
  end
  for pid, t in pairs(by_name) do
    local best
    for name, ns in pairs(t) do
      if not best or ns > t[best] or (ns == t[best] and name < best) then best = name end
    end
    comm[pid] = best
  end
  local procs, by_kind = {}, { oncpu = 0, runqueue = 0, wait = 0, unknown = 0 }
  for _, p in ipairs(cp.parts) do
    local e = procs[p.pid]
    if not e then
      e = { pid = p.pid, comm = comm[p.pid] or "?", oncpu = 0, runqueue = 0, wait = 0, unknown = 0 }
      procs[p.pid] = e
    end
    e[p.kind] = e[p.kind] + p.ns / 1e9
    by_kind[p.kind] = by_kind[p.kind] + p.ns / 1e9
  end
  local list = {}
  for _, e in pairs(procs) do list[#list + 1] = e end
  table.sort(list, function(a, b)
    local x, y = a.oncpu + a.runqueue + a.wait + a.unknown, b.oncpu + b.runqueue + b.wait + b.unknown
    if x ~= y then return x > y end
    return a.pid < b.pid
  end)
  local waits = {}
  for _, w in ipairs(cp.waits_for or {}) do
    waits[#waits + 1] = { pid = w.pid, comm = comm[w.pid] or names[w.pid] or "?", waker_pid = w.waker_pid,
      waker_comm = comm[w.waker_pid] or names[w.waker_pid] or "?", seconds = w.ns / 1e9 }
  end
  table.sort(waits, function(a, b)
    if a.seconds ~= b.seconds then return a.seconds > b.seconds end
    return a.pid < b.pid or (a.pid == b.pid and a.waker_pid < b.waker_pid)
  end)
  -- the functions on a CPU on the path (its run-queue and wait stacks left out: their leaf is where
  -- the thread was preempted or blocked, not code that ran), as fractions of the path
  local function on_cpu(frames)
    local last = frames[#frames]
    return last ~= fold.RUN_QUEUE and not M.is_mark(last) and last ~= M.UNKNOWN
  end
  local ran = {}
  for _, st in ipairs(info.stacks) do
    if on_cpu(st.frames) then ran[#ran + 1] = st end
  end
  local functions = {}
  local top = fold.locate(fold.top(ran, 20, { user_only = true }), info.located, { user_only = true, keep = on_cpu })
  for _, f in ipairs(top) do
    if not f.name:find("^%[") and info.total > 0 then
      functions[#functions + 1] = { name = f.name, fraction = f.self / info.total, seconds = f.self / 1e9,
        file = f.file, line = f.line }
    end
  end
  return { folded_text = text, info = info, wall_seconds = (cp.to - cp.from) / 1e9, by_process = list, functions = functions,
    by_kind = by_kind, segment_count = cp.segment_count, dropped = cp.dropped, waits_for = waits }
end

-- s = M.stage(w, data, sym, root, name) : the path within one stage's window (s:critical_path()'s
-- windows[i]): {name, seconds, path_seconds, by_kind = {kind = seconds}, top = {{name, seconds,
-- share, file?, line?}} (its functions by self time, as M.profile's top; a wait's leaf is its
-- mark; file and line as M.profile's functions), folded_text}
function M.stage(w, data, sym, root, name)
  local records, marks = M.records(w, data)
  local text, info = fold_path(records, marks, data, sym, root)
  local by_kind, total = { oncpu = 0, runqueue = 0, wait = 0, unknown = 0 }, 0
  for _, p in ipairs(w.parts) do
    by_kind[p.kind] = by_kind[p.kind] + p.ns / 1e9
    total = total + p.ns / 1e9
  end
  local top = {}
  for _, f in ipairs(fold.locate(fold.top(info.stacks, 10, { user_only = true }), info.located, { user_only = true })) do
    top[#top + 1] = { name = f.name, seconds = f.self_fraction * info.total / 1e9, share = f.self_fraction,
      file = f.file, line = f.line }
  end
  return { name = name, seconds = (w.to - w.from) / 1e9, path_seconds = total, by_kind = by_kind, top = top,
    folded_text = text }
end

return M
