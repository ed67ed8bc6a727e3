-- Python frames in wb.capture's profiles (lua/wb/capture.lua): the merge of the Python frames the
-- BPF program read at each sample with the native stack walked from the same sample, the `python`
-- view (Python frames only), and res.python, from the merged stacks or from wb.python's separate
-- sampler where eBPF cannot read the frames (method perf_event or perf_cli, unwind = "fp").
local flame = require "wb.flame"
local fold = require "wb.capture_fold"

local M = {}

M.GIL_WAIT = "[waiting for the GIL]"         -- off-CPU in a futex wait on the interpreter's GIL
M.UNPLACED = "[Python frames not placed]"    -- under it: native frames no eval frame was found in
M.NO_PYTHON = "[no Python frames]"           -- a thread of a CPython process that ran no Python code
M.TRUNCATED = "[truncated]"                  -- the Python frame chain went on
M.EVAL = "^_PyEval_EvalFrameDefault"         -- the interpreter's loop (".cold" parts too)
M.UNPLACED_LIMIT = 0.05 -- warn above this share of Python samples whose frames were not placed

-- merged, placed = M.merge(user, groups) : user is a native stack's frame names, leaf first;
-- groups the Python frames of each _PyEval_EvalFrameDefault call, innermost call first, each
-- innermost frame first. The k-th eval frame from the leaf is replaced by the k-th group (the
-- inlined frames named at its address go with it); groups left over (the native walk stopped
-- before reaching their eval frames) go at the root end. When the stack has no eval frame at all
-- (an interpreter whose symbols do not name it), the Python frames go above the native leaf,
-- under M.UNPLACED, and placed is false.
function M.merge(user, groups)
  local out, g = {}, 1
  for _, f in ipairs(user) do
    if groups[g] and f:find(M.EVAL) then
      while #out > 0 and out[#out]:find(" %(inlined%)$") do out[#out] = nil end
      for _, p in ipairs(groups[g]) do out[#out + 1] = p end
      g = g + 1
    else
      out[#out + 1] = f
    end
  end
  if g == 1 and #groups > 0 then
    local top = {}
    for _, grp in ipairs(groups) do
      for _, p in ipairs(grp) do top[#top + 1] = p end
    end
    top[#top + 1] = M.UNPLACED
    for _, f in ipairs(out) do top[#top + 1] = f end
    return top, false
  end
  for i = g, #groups do
    for _, p in ipairs(groups[i]) do out[#out + 1] = p end
  end
  return out, true
end

local Collector = {}
Collector.__index = Collector

-- c = M.collector() : gathers the python view while capture_fold.fold merges (its opts.python)
function M.collector()
  return setmetatable({ counts = {}, order = {}, total = 0, samples = 0, unplaced = 0 }, Collector)
end

-- merged = c:add(root, user, r) : the merged native stack of record r (user: its native frames,
-- leaf first; r.python, r.gil_wait, r.python_truncated as wb.bpf's read() gives them), counting
-- r.count under "root;[truncated];outer;...;inner[;[waiting for the GIL]]" in the python view
function Collector:add(root, user, r)
  local merged, py = user, {}
  if #r.python > 0 then
    local placed
    merged, placed = M.merge(user, r.python)
    for gi = #r.python, 1, -1 do
      local grp = r.python[gi]
      for k = #grp, 1, -1 do py[#py + 1] = grp[k] end
    end
    self.samples = self.samples + r.count
    if not placed then self.unplaced = self.unplaced + r.count end
  end
  if r.gil_wait then
    merged = table.move(merged, 1, #merged, 2, { M.GIL_WAIT })
    py[#py + 1] = M.GIL_WAIT
  end
  if #py == 0 then py[1] = M.NO_PYTHON end
  if r.python_truncated then table.insert(py, 1, M.TRUNCATED) end
  local key = root .. ";" .. table.concat(py, ";")
  if not self.counts[key] then
    self.counts[key] = 0
    self.order[#self.order + 1] = key
  end
  self.counts[key] = self.counts[key] + r.count
  self.total = self.total + r.count
  return merged
end

-- text, stacks = c:view() : the python view as folded text (sorted) and flame.parse stacks
function Collector:view()
  table.sort(self.order)
  local lines = {}
  for i, key in ipairs(self.order) do lines[i] = key .. " " .. self.counts[key] end
  local text = #lines > 0 and table.concat(lines, "\n") .. "\n" or ""
  return text, flame.parse(text)
end

-- The warning when no process could be read, or nil.
local function skipped_reason(skipped)
  for _, s in ipairs(skipped or {}) do
    if s.image ~= "" then return s.reason end
  end
end

-- M.profiles(res, r, o, views, outputs) : res.python and the <name>.python.{oncpu,offcpu}.*
-- files. views = {oncpu = collector, offcpu = collector} from the merged folds (eBPF), else r.python
-- is wb.python's sampler result. res.python = {source = "bpf" | "sampler", processes, oncpu,
-- offcpu (each as a native profile, with top), samples_merged, unplaced}; nil when no process of
-- the tree ran CPython; {skipped = why} when one did and could not be read (stripped, unsupported).
-- outputs(kind, text, info, opts) writes the files (lua/wb/capture.lua).
function M.profiles(res, r, o, views, outputs)
  local merged = r.data and r.data.python
  local src = merged or r.python
  if not src then return end
  if #src.processes == 0 then
    local why = skipped_reason(src.skipped)
    if why then
      res.python = { skipped = why }
      res.warnings[#res.warnings + 1] = "no Python frames: " .. why
    end
    return
  end
  res.python = { source = merged and "bpf" or "sampler", processes = src.processes }
  local po = setmetatable({ name = o.name .. ".python", title = "Python: " .. o.title }, { __index = o })
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local text, stacks, total
    if merged then
      local c = views[kind]
      if c then text, stacks, total = c:view(), nil, c.total end
    else
      local lines = {}
      total = 0
      for stack, w in pairs(src[kind]) do
        local n = kind == "offcpu" and math.floor(w * 1e9 + 0.5) or w -- off-CPU in ns, as natively
        if n > 0 then
          lines[#lines + 1] = stack .. " " .. n
          total = total + n
        end
      end
      table.sort(lines)
      text = #lines > 0 and table.concat(lines, "\n") .. "\n" or ""
    end
    if text then
      stacks = flame.parse(text)
      local t = outputs(kind, text, { total = total, unresolved = 0, stacks = stacks }, po)
      -- after the root (merged: the process; the sampler's: the process and the thread)
      t.top = fold.top(stacks, o.top, { first = merged and 2 or 3, user_only = kind == "offcpu" })
      if kind == "offcpu" then t.total_seconds = total / 1e9 end
      res.python[kind] = t
    end
  end
  if merged then
    local on = views.oncpu
    res.python.samples_merged = on and on.samples or 0
    res.python.unplaced = on and on.unplaced or 0
    if on and on.samples > 0 and on.unplaced > M.UNPLACED_LIMIT * on.samples then
      res.warnings[#res.warnings + 1] = string.format("%.0f%% of the on-CPU samples with Python frames have no "
        .. "_PyEval_EvalFrameDefault frame in their native stack (an interpreter whose symbols do not name it?): "
        .. "their Python frames are shown above the native stack, under %s", on.unplaced / on.samples * 100, M.UNPLACED)
    end
  else
    res.python.thread_samples, res.python.truncated = src.thread_samples, src.truncated
  end
end

return M
