-- Stacks to folded text for wb.capture (lua/wb/capture.lua): symbolizer set-up from perf's
-- side-band records, folding of sampled stacks (FlameGraph's format), the top functions of a
-- profile, and the perf CLI's `perf script` output.
--
-- Folded lines: frames root-first joined by ";", a space, an integer count. The root frame is the
-- process name (its main thread's comm; threads are merged), or "comm-PID" when the profile holds
-- several processes (root = "pid"),
-- then user frames, then kernel frames with the suffix "_[k]". An off-CPU stack of a thread that
-- was runnable, waiting for a CPU (preempted, or woken from a wait), ends in the frame "[run
-- queue]"; a blocked thread's stack ends in the kernel's scheduler path.
local M = {}

M.RUN_QUEUE = "[run queue]"
-- An off-CPU interval whose stack was not recorded (the ring buffer or a map had no room: wb.bpf's
-- record with user = {M.STACK_LOST_PC}) keeps its time under the process in this frame.
M.STACK_LOST = "[stack lost]"
M.STACK_LOST_PC = -2
-- A user stack whose walk stopped before its end (core/lunwind.h's WB_UNW_TRUNCATED_PC closes
-- its pcs), or one the kernel cut at its frame limit, gets this frame above its outermost one,
-- with its depth.
M.TRUNCATED = "[truncated after %d frames]"
M.TRUNCATED_PC = -1
M.KERNEL_MAX_DEPTH = 127 -- the kernel's frame-pointer walks (perf_event_max_stack) stop there
M.PERF_SCRIPT_MAX_STACK = 1024 -- `perf script --max-stack` for the perf CLI's DWARF unwinding
-- What follows "module+0xoffset" in a frame of a file the profiled user could not read
-- (core/sym.c, docs/security.md).
M.NOT_READABLE = "[not readable by the profiled user]"

-- Kernel frames of the sampling machinery itself, dropped from the leaf end of kernel stacks,
-- with the frames they called, when among the first PROBE_DEPTH frames.
M.PROBE_DEPTH = 6
local MACHINERY = { "^bpf_prog_", "^bpf_trace_run", "^__bpf_trace_", "^__traceiter_", "^perf_trace_" }

local function machinery(name)
  for _, p in ipairs(MACHINERY) do
    if name:find(p) then return true end
  end
  return false
end

-- M.feed(sym, side) : replays a wb.perf sampler's read() (mappings, forks, execs) into a wb.sym
-- symbolizer in time order: a fork copies the parent's mappings, an exec forgets them.
function M.feed(sym, side)
  local events = {}
  for _, f in ipairs(side.forks) do events[#events + 1] = { f.time, 1, f } end
  for _, e in ipairs(side.execs) do events[#events + 1] = { e.time, 2, e } end
  for _, m in ipairs(side.mappings) do events[#events + 1] = { m.time, 3, m } end
  table.sort(events, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[2] < b[2]
  end)
  for _, ev in ipairs(events) do
    local r = ev[3]
    if ev[2] == 1 then sym:fork(r.pid, r.ppid)
    elseif ev[2] == 2 then sym:exec(r.pid)
    else sym:add_map(r.pid, r.addr, r.len, r.pgoff, r.path, r.build_id) end
  end
end

-- The executable each process ran: its first mapping after its (last) exec. {pid = path}
function M.executables(side)
  local exec_time, exe = {}, {}
  for _, e in ipairs(side.execs) do exec_time[e.pid] = math.max(exec_time[e.pid] or e.time, e.time) end
  local sorted = {}
  for _, m in ipairs(side.mappings) do sorted[#sorted + 1] = m end
  table.sort(sorted, function(a, b) return a.time < b.time end)
  for _, m in ipairs(sorted) do
    local t = exec_time[m.pid]
    if t and m.time >= t and not exe[m.pid] and m.path:sub(1, 1) == "/" then exe[m.pid] = m.path end
  end
  return exe
end

-- n = number of distinct processes with a non-zero count among the record lists
function M.process_count(...)
  local seen, n = {}, 0
  for i = 1, select("#", ...) do
    for _, r in ipairs(select(i, ...) or {}) do
      if r.count > 0 and not seen[r.pid] then
        seen[r.pid] = true
        n = n + 1
      end
    end
  end
  return n
end

-- text = M.by_name(folded) : folded text whose processes are named so that two runs of one
-- command match (differential views): when its stacks hold several root frames, all "comm-PID"
-- (root = "pid"), each becomes "comm", so the processes of one name are one (their stacks add up
-- where the text is read). Telling namesakes apart by place, such as start order, does not
-- survive a run where one of them drew no sample. Any other text is returned as it is.
function M.by_name(folded)
  local roots, n = {}, 0
  for line in (folded or ""):gmatch("[^\n]+") do
    local root = (line:match("^(.*) %d+$") or ""):match("^[^;]*")
    if not root:find(".%-%d+$") then return folded end
    if not roots[root] then roots[root], n = true, n + 1 end
  end
  if n < 2 then return folded end
  return (folded:gsub("[^\n]+", function(line)
    local stack, count = line:match("^(.*) (%d+)$")
    local root, rest = stack:match("^([^;]*)(.*)$")
    return root:gsub("%-%d+$", "") .. rest .. " " .. count
  end))
end

-- text, info = M.fold(records, sym [, {root = "comm"|"pid", cut = n, python = collector, marks = {[record] =
-- frame}}]) : records = {{pid, comm, kind =
-- "oncpu"|"blocked"|"runqueue", user = {addrs, leaf first}, kernel = {addrs}, count}} (wb.bpf
-- read(), or a wb.perf sampler's samples); info = {stacks = {{frames, count}} sorted by count
-- (descending) then text, total, unresolved (count of samples with an unnamed frame), by_kind =
-- {kind = total}, stack_lost (the count under M.STACK_LOST), symbols = {name = {mangled?, file?,
-- line?}} from a dwarf symbolizer, else nil,
-- located = the stacks kept apart by the source position of their sampled user address:
-- {{frames, count, leaf (the index of the deepest user frame), file, line}}, file and line nil
-- where the symbolizer had none, leaves = {[pid] = {{name, file?, line?, count}}}: each process's
-- deepest user frames by source position, largest count first}.
-- A user stack is marked truncated (M.TRUNCATED) when its pcs end in M.TRUNCATED_PC, or when it
-- holds cut pcs or more (the kernel's frame-pointer walks: M.KERNEL_MAX_DEPTH). A record with
-- Python frames (wb.bpf's r.python) has them merged into its user stack by the collector
-- (lua/wb/capture_python.lua), which also counts it in the python view. A record in marks gets
-- its frame there as its stack's last (after the run-queue mark).
function M.fold(records, sym, opts)
  local by_pid, cut, py = opts and opts.root == "pid", opts and opts.cut, opts and opts.python
  local marks = opts and opts.marks
  local memo, symbols = {}, nil
  local function names(pid, addrs, kind)
    if #addrs == 0 then return {}, 0 end
    local m = memo[pid]
    if not m then
      m = { user = setmetatable({}, { __mode = "k" }), kernel = setmetatable({}, { __mode = "k" }) }
      memo[pid] = m
    end
    local hit = m[kind][addrs]
    if hit then return hit[1], hit[2], hit[3] end
    local list, unresolved, info, leaf = sym:frames(pid, addrs, kind)
    for name, v in pairs(info or {}) do
      symbols = symbols or {}
      symbols[name] = v
    end
    if kind == "kernel" then
      -- the probe's own frames at the leaf: the machinery and the JIT-compiled BPF program it
      -- called (unnamed, or named after whatever kernel symbol precedes its address), up to the
      -- last machinery frame among the first PROBE_DEPTH
      local first, dropped = 1, 0
      for i = 1, math.min(#list, M.PROBE_DEPTH) do
        if machinery(list[i]) then first = i + 1 end
      end
      for i = 1, first - 1 do
        if list[i]:find("^%[unknown%]") then dropped = dropped + 1 end
      end
      if first > 1 then
        list = table.move(list, first, #list, 1, {})
        unresolved = math.max(unresolved - dropped, 0)
      end
    end
    m[kind][addrs] = { list, unresolved, leaf }
    return list, unresolved, leaf
  end
  local counts, order = {}, {}
  local located, lorder = {}, {} -- the stacks again, apart by the source line of their user leaf
  local total, unresolved, by_kind, stack_lost = 0, 0, {}, 0
  local leaves = {} -- pid -> position key -> {name, file, line, count}
  for _, r in ipairs(records) do
    if r.count > 0 then
      local frames = { by_pid and (r.comm .. "-" .. r.pid) or r.comm }
      local addrs, depth = r.user, #r.user
      if addrs[1] == M.STACK_LOST_PC then
        frames[2], addrs, depth = M.STACK_LOST, {}, 0
        stack_lost = stack_lost + r.count
      end
      if addrs[depth] == M.TRUNCATED_PC then
        depth = depth - 1
        addrs = table.move(addrs, 1, depth, 1, {})
      end
      local user, ubad, leaf = names(r.pid, addrs, "user")
      if r.python and py then
        local native = user[1]
        user = py:add(frames[1], user, r)
        -- the leaf's place is the native leaf's: not a Python frame or GIL mark merged in its stead
        if user[1] ~= native then leaf = nil end
      end
      if depth > 0 and (depth < #r.user or (cut and depth >= cut)) then
        frames[2] = string.format(M.TRUNCATED, #user) -- the frames shown, inlined ones included
      end
      local kernel, kbad = names(r.pid, r.kernel, "kernel")
      for i = #user, 1, -1 do frames[#frames + 1] = user[i] end
      local leaf_at = #frames
      for i = #kernel, 1, -1 do frames[#frames + 1] = kernel[i] end
      if r.kind == "runqueue" then frames[#frames + 1] = M.RUN_QUEUE end
      local mark = marks and marks[r]
      if mark then frames[#frames + 1] = mark end
      local key = table.concat(frames, ";")
      if not counts[key] then
        counts[key] = 0
        order[#order + 1] = { key = key, frames = frames }
      end
      counts[key] = counts[key] + r.count
      local lkey = leaf and (key .. "\0" .. leaf.file .. ":" .. leaf.line) or key
      local l = located[lkey]
      if not l then
        l = { frames = frames, count = 0, leaf = leaf and leaf_at, file = leaf and leaf.file, line = leaf and leaf.line }
        located[lkey] = l
        lorder[#lorder + 1] = lkey
      end
      l.count = l.count + r.count
      if #user > 0 then
        local at = leaves[r.pid] or {}
        leaves[r.pid] = at
        local pkey = user[1] .. (leaf and ("\0" .. leaf.file .. ":" .. leaf.line) or "")
        local e = at[pkey]
        if not e then
          e = { name = user[1], file = leaf and leaf.file, line = leaf and leaf.line, count = 0 }
          at[pkey] = e
        end
        e.count = e.count + r.count
      end
      total = total + r.count
      if ubad + kbad > 0 then unresolved = unresolved + r.count end
      by_kind[r.kind or "oncpu"] = (by_kind[r.kind or "oncpu"] or 0) + r.count
    end
  end
  table.sort(order, function(a, b)
    if counts[a.key] ~= counts[b.key] then return counts[a.key] > counts[b.key] end
    return a.key < b.key
  end)
  local lines, stacks = {}, {}
  for i, o in ipairs(order) do
    lines[i] = o.key .. " " .. counts[o.key]
    stacks[i] = { frames = o.frames, count = counts[o.key] }
  end
  table.sort(lorder, function(a, b)
    if located[a].count ~= located[b].count then return located[a].count > located[b].count end
    return a < b
  end)
  for i, k in ipairs(lorder) do lorder[i] = located[k] end
  for pid, at in pairs(leaves) do
    local list = {}
    for _, e in pairs(at) do list[#list + 1] = e end
    table.sort(list, function(a, b)
      if a.count ~= b.count then return a.count > b.count end
      return (a.name .. (a.line or "")) < (b.name .. (b.line or ""))
    end)
    leaves[pid] = list
  end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or ""),
    { stacks = stacks, total = total, unresolved = unresolved, by_kind = by_kind, symbols = symbols, located = lorder,
      leaves = leaves, stack_lost = stack_lost }
end

local function is_function(name) return not name:find("_%[k%]$") and name ~= M.RUN_QUEUE and name ~= M.STACK_LOST end

-- M.module_of(frame) : the module of an unresolved frame ("liblzma.so.5+0x15bc9" ->
-- "liblzma.so.5"), or nil for a named one
function M.module_of(frame) return frame:match("^(.+)%+0x%x+$") end

-- line = M.denied_text(d) : the warning for one entry of a symbolizer's s:denied()
function M.denied_text(d)
  local base = d.path:match("([^/]+)$") or d.path
  return string.format("%s is not readable by the profiled user (uid %d): %s",
    d.debug and d.path .. "'s separate debug file" or d.path, d.uid,
    d.debug == "dwarf" and "its frames are named without inline frames or source lines"
      or "its frames show as " .. base .. "+0xoffset " .. M.NOT_READABLE)
end

-- The row a frame counts under in the top table: the unresolved addresses of one module are one
-- row, "liblzma.so.5 (unresolved addresses)", not one row per address; those of a file the
-- profiled user could not read, "libx.so [not readable by the profiled user]".
local function top_name(f)
  local module = M.module_of(f)
  if module then return module .. " (unresolved addresses)" end
  module = f:sub(-#M.NOT_READABLE - 1) == " " .. M.NOT_READABLE and f:match("^(.-)%+0x%x+ ")
  return module and (module .. " " .. M.NOT_READABLE) or f
end

-- Whether frame f (as top_name gives it) is a function of the top table.
local function counts_in_top(f, user_only)
  return not f:find("^%[truncated after") and (not user_only or is_function(f))
end

-- top = M.top(stacks, n [, {user_only = bool, first = 2}]) : the n functions with the most self
-- count: {{name, self, total, self_fraction, total_fraction}} sorted by self, then total, then
-- name; fractions are of the whole input. Frames before index `first` are not functions (by
-- default the root frame, the process). With user_only, kernel frames and the run-queue mark are
-- left out and a stack's self count goes to its deepest user frame (for off-CPU profiles, whose
-- leaves are the scheduler).
function M.top(stacks, n, opts)
  local user_only = opts and opts.user_only
  local first = opts and opts.first or 2
  local self, total, seen, sum = {}, {}, {}, 0
  for i, st in ipairs(stacks) do
    sum = sum + st.count
    local leaf
    for j = first, #st.frames do
      local f = top_name(st.frames[j])
      if counts_in_top(f, user_only) then
        leaf = f
        if seen[f] ~= i then
          seen[f] = i
          total[f] = (total[f] or 0) + st.count
        end
      end
    end
    if leaf then self[leaf] = (self[leaf] or 0) + st.count end
  end
  local rows = {}
  for name, t in pairs(total) do
    local s = self[name] or 0
    rows[#rows + 1] = { name = name, self = s, total = t, self_fraction = sum > 0 and s / sum or 0,
      total_fraction = sum > 0 and t / sum or 0 }
  end
  table.sort(rows, function(a, b)
    if a.self ~= b.self then return a.self > b.self end
    if a.total ~= b.total then return a.total > b.total end
    return a.name < b.name
  end)
  if n and #rows > n then rows = table.move(rows, 1, n, 1, {}) end
  return rows
end

-- M.locate(rows, located [, opts]) : gives each row of M.top(stacks, n, opts) the source line that
-- most of its self count was sampled at, from fold's info.located: row.file, row.line (none where
-- no such sample had a line: no DWARF for it, a kernel frame, a Python frame, whose name holds its
-- own place, or a perf_cli capture). opts as M.top's, and keep(frames): the stacks to count (as the
-- stacks given to M.top were chosen). The rows, for chaining.
function M.locate(rows, located, opts)
  local user_only, first, keep = opts and opts.user_only, opts and opts.first or 2, opts and opts.keep
  local lines = {} -- row name -> "file\0line" -> count
  for _, l in ipairs(located or {}) do
    if l.file and (not keep or keep(l.frames)) then
      local at, name
      for j = first, #l.frames do
        local f = top_name(l.frames[j])
        if counts_in_top(f, user_only) then at, name = j, f end
      end
      if at == l.leaf then
        local t = lines[name] or {}
        lines[name] = t
        local key = l.file .. "\0" .. l.line
        t[key] = (t[key] or 0) + l.count
      end
    end
  end
  for _, row in ipairs(rows) do
    local best, most
    for key, count in pairs(lines[row.name] or {}) do
      if not most or count > most or (count == most and key < best) then best, most = key, count end
    end
    if best then
      local file, line = best:match("^(.*)%z(%d+)$")
      row.file, row.line = file, tonumber(line)
    end
  end
  return rows
end

-- text = M.where(row) : "file:line" of a row M.locate gave a place, else nil
function M.where(row) return row.file and string.format("%s:%d", row.file, row.line) or nil end

-- records = M.parse_perf_script(text [, readable]) : `perf script -F comm,pid,ip,sym,dso` output as
-- records of already named frames {pid, comm, kind = "oncpu", names = {leaf first}, unresolved,
-- count = 1}; a user frame whose file fails readable(path) reads "module+0xIP [not readable by
-- the profiled user]"
function M.parse_perf_script(text, readable)
  local records, cur = {}, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%S") then
      local comm, pid = line:match("^(.-)%s+(%d+)%s*$")
      cur = comm and { comm = comm, pid = tonumber(pid), kind = "oncpu", names = {}, unresolved = 0, count = 1 }
      if cur then records[#records + 1] = cur end
    elseif cur then
      local ip, sym, dso = line:match("^%s+(%x+)%s+(.-)%s+%((.*)%)%s*$")
      if ip then
        local kernel = dso:find("kernel.kallsyms", 1, true) or dso:find("^%[kernel")
        local name = sym:gsub("%+0x%x+$", "")
        if not kernel and readable and dso:sub(1, 1) == "/" and not readable(dso) then
          cur.unresolved = cur.unresolved + 1
          name = (dso:match("([^/]+)$") or dso) .. "+0x" .. ip .. " " .. M.NOT_READABLE
        elseif name == "[unknown]" then
          cur.unresolved = cur.unresolved + 1
          if not kernel and dso ~= "[unknown]" then name = (dso:match("([^/]+)$") or dso) .. "+0x" .. ip end
        end
        cur.names[#cur.names + 1] = kernel and (name .. "_[k]") or name
      end
    end
  end
  return records
end

-- text, info = M.fold_named(records [, opts]) : M.fold for records whose frames are already
-- named (the perf CLI's)
function M.fold_named(records, opts)
  local sym = {
    frames = function(_, _, list) return list, 0 end,
  }
  local out = {}
  for i, r in ipairs(records) do
    out[i] = { pid = r.pid, comm = r.comm, kind = r.kind, user = r.names, kernel = {}, count = r.count }
  end
  local text, info = M.fold(out, sym, opts)
  for _, r in ipairs(records) do
    if r.unresolved > 0 then info.unresolved = info.unresolved + r.count end
  end
  return text, info
end

return M
