-- The allocation profile of a process tree (wb.capture{alloc = true}): every process of the tree
-- runs with libwballoc.so preloaded (shim/alloc.c), which samples allocations by bytes and
-- records each sample's stack, and frees of sampled blocks; this module checks that the target
-- can be interposed, reads the records back, weighs each sample, and folds the stacks with
-- wb.sym into three views, in estimated bytes:
--   alloc       bytes allocated, by stack
--   alloc_live  bytes still live at the tree's RSS peak (at exit without a memory timeline)
--   alloc_leak  bytes never freed (live at exit: the leak view)
--
--   local st <close> = alloc.start(spec, o, method)   -- st.spec: spec with LD_PRELOAD set, or st.skipped
--   res.alloc = st:profile(r, o)                        -- after the command ran
local flame = require "wb.flame"
local fold = require "wb.capture_fold"
local fs = require "wb.fs"
local json = require "wb.json"
local paths = require "wb.paths"
local sym = require "wb.sym"

local M = {}

M.DEFAULT_INTERVAL = 512 * 1024
M.SHIM = "libwballoc.so"

-- Text found in a program that allocates with its own allocator: its allocations do not go
-- through malloc (a Rust binary with jemallocator, a C++ one with tcmalloc built in, a program
-- that calls mi_malloc, ...). A program that links a shared allocator (libjemalloc.so.2,
-- libtcmalloc as DT_NEEDED) or preloads one is profiled: the shim forwards to it.
M.OWN_ALLOCATORS = {
  { "_rjem_", "jemalloc (Rust jemallocator)" }, { "<jemalloc>", "jemalloc" }, { "tcmalloc::", "tcmalloc" },
  { "mi_malloc", "mimalloc" }, { "__asan_init", "AddressSanitizer's" },
}

-- o = alloc.options(spec) : {interval, mmap} from spec.alloc_interval (bytes, default 512 KiB)
-- and spec.alloc_mmap (default true); raises on misuse (at the caller of wb.capture)
function M.options(spec)
  local iv = spec.alloc_interval or M.DEFAULT_INTERVAL
  if math.type(iv) ~= "integer" or iv < 1 or iv > 1 << 40 then
    error("wb.capture: alloc_interval must be an integer number of bytes in 1..2^40", 4)
  end
  if spec.alloc_mmap ~= nil and type(spec.alloc_mmap) ~= "boolean" then
    error("wb.capture: alloc_mmap must be a boolean", 4)
  end
  return { interval = iv, mmap = spec.alloc_mmap ~= false }
end

-- ---- can the target be interposed? ---------------------------------------------------------

-- Whether the ELF file at path asks for a dynamic loader (PT_INTERP): true, false (statically
-- linked), or nil when it is not a 64-bit ELF file (a script: its interpreter is what runs).
local function dynamic(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local h = f:read(64)
  if not h or #h < 64 or h:sub(1, 4) ~= "\127ELF" or h:byte(5) ~= 2 then
    f:close()
    return nil
  end
  local phoff = string.unpack("<I8", h, 0x21)
  local phentsize, phnum = string.unpack("<I2I2", h, 0x37)
  f:seek("set", phoff)
  local ph = f:read(phentsize * phnum) or ""
  f:close()
  for i = 0, phnum - 1 do
    if #ph >= i * phentsize + 4 and string.unpack("<I4", ph, i * phentsize + 1) == 3 then return true end
  end
  return false
end

-- The allocator a program brings, by the text it holds (read in 16 MiB pieces), or nil.
local function own_allocator(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local tail = ""
  while true do
    local piece = f:read(16 << 20)
    if not piece then break end
    local text = tail .. piece
    for _, m in ipairs(M.OWN_ALLOCATORS) do
      if text:find(m[1], 1, true) then
        f:close()
        return m[2], m[1]
      end
    end
    tail = piece:sub(-32)
  end
  f:close()
  return nil
end

-- why = alloc.unsupported(path) : why the allocations of the program at path cannot be sampled
-- by preloading (statically linked, its own allocator), or nil
function M.unsupported(path)
  local dyn = dynamic(path)
  if dyn == false then
    return "statically linked: " .. path .. " has no dynamic loader, so LD_PRELOAD cannot interpose its malloc"
  end
  if dyn == nil then return nil end
  local name, marker = own_allocator(path)
  if name then
    return string.format("%s has its own allocator, %s (it holds \"%s\"): its allocations do not go through malloc",
      path, name, marker)
  end
end

-- ---- starting ---------------------------------------------------------------------------------

local State = {}
State.__index = State
State.__close = function(st) st:close() end

function State:close()
  if self.dir then fs.remove_tree(self.dir) end
  self.dir = nil
end

-- The command the shim is preloaded into: argv run by env(1), which sets the preload after wb's
-- gate (core/spawn_exec.c), so that wb's own binary never runs with the shim in it (a wb built
-- with AddressSanitizer could not); an allocator the command preloads (spec.env's LD_PRELOAD, or
-- wb's own environment's) comes after the shim, which forwards to it. path: the program found.
local function preloaded(spec, shim, path, vars)
  local old = (spec.env or {}).LD_PRELOAD or (spec.env_mode ~= "replace" and os.getenv("LD_PRELOAD")) or nil
  local argv = { "/usr/bin/env", "LD_PRELOAD=" .. shim .. ((old and old ~= "") and (" " .. old) or "") }
  for _, v in ipairs(vars) do argv[#argv + 1] = v end
  local cmd = spec.shell and { "/bin/sh", "-c", spec.cmd or spec.argv } or spec.argv
  for i, a in ipairs(cmd) do argv[#argv + 1] = (i == 1 and path) or a end
  return argv
end

-- shim, program path = the shim and the program spec runs (argv[1] found in PATH, or relative to
-- spec.cwd; /bin/sh for a shell command), or nil, why they cannot be preloaded
local function target(spec)
  local shim, err = os.getenv("WB_ALLOC_SHIM") or paths.helper(M.SHIM)
  if not shim then return nil, err end
  local prog = spec.shell and "/bin/sh" or (type(spec.argv) == "table" and spec.argv[1]) or nil
  local path = prog and (prog:find("/") and prog or require("wb.proc").which(prog))
  if path and path:sub(1, 1) ~= "/" and type(spec.cwd) == "string" then path = require("wb.util").join(spec.cwd, path) end
  if not path then return nil, tostring(prog) .. " not found in PATH" end
  local why = M.unsupported(path)
  if why then return nil, why end
  return shim, path
end

-- st = alloc.start(spec, o, method) : the record directory and a copy of spec that runs the
-- command under env(1) with the shim preloaded (st.spec), or {skipped = why}. o: capture's options
-- (o.alloc from alloc.options). The program checked is argv[1] found in PATH (/bin/sh for shell
-- commands); that path is what env runs.
function M.start(spec, o, method)
  local st = setmetatable({ interval = o.alloc.interval, mmap = o.alloc.mmap }, State)
  if method == "perf_cli" then
    st.skipped = "method perf_cli: perf record would be preloaded with the sampler too"
    return st
  end
  local shim, path = target(spec)
  if not shim then
    st.skipped = path
    return st
  end
  st.dir = assert(fs.tmpdir("wballoc"))
  local copy = {}
  for k, v in pairs(spec) do copy[k] = v end
  copy.argv, copy.cmd, copy.shell = preloaded(spec, shim, path, { "WB_ALLOC_DIR=" .. st.dir,
    "WB_ALLOC_INTERVAL=" .. st.interval, "WB_ALLOC_MMAP=" .. (st.mmap and "1" or "0") }), nil, nil
  st.spec = copy
  return st
end

-- ---- counting -----------------------------------------------------------------------------------

local Counter = {}
Counter.__index = Counter
Counter.__close = function(ct) ct:close() end
Counter.__gc = Counter.__close

function Counter:close()
  if self.dir then fs.remove_tree(self.dir) end
  self.dir = nil
end

M.COUNT_BYTES = 32

-- ok = counter:reset() : the counter file zeroed for the next run (nil, err when it cannot be)
function Counter:reset()
  return fs.write(self.file, string.rep("\0", M.COUNT_BYTES))
end

-- n = counter:read() : what the run since the last reset allocated, exactly: {bytes, allocations,
-- processes (images and forked children that counted), foreign (images whose malloc is their own,
-- uncounted)};
-- nil, err when the file cannot be read
function Counter:read()
  local f, err = io.open(self.file, "rb") -- in wb's own directory; a bounded read
  if not f then return nil, err end
  local text = f:read(M.COUNT_BYTES) or ""
  f:close()
  if #text < M.COUNT_BYTES then return nil, self.file .. ": shorter than " .. M.COUNT_BYTES .. " bytes" end
  local bytes, allocations, processes, foreign = string.unpack("<i8i8i8i8", text)
  return { bytes = bytes, allocations = allocations, processes = processes, foreign = foreign }
end

-- ct = alloc.counter(spec) : an exact count of the bytes the process tree of spec (a wb.proc
-- spec: argv or shell command, env) allocates: ct.argv runs it with the shim preloaded and every
-- allocation added to a counter file all its processes share (shim/alloc.c, WB_ALLOC_COUNT);
-- ct:reset() before a run, ct:read() after it. {skipped = why} when the program cannot be
-- interposed (statically linked, its own allocator, not found). Closed: its file removed.
function M.counter(spec)
  local shim, path = target(spec)
  if not shim then return setmetatable({ skipped = path }, Counter) end
  local ct = setmetatable({ dir = assert(fs.tmpdir("wballoc")) }, Counter)
  ct.file = ct.dir .. "/count"
  ct.argv = preloaded(spec, shim, path, { "WB_ALLOC_COUNT=" .. ct.file, "WB_ALLOC_MMAP=1" })
  assert(ct:reset())
  return ct
end

-- ---- reading the records ---------------------------------------------------------------------

-- The process images of the record directory in the order they started: {{pid, start (ns),
-- interval, comm, maps = {{lo, hi, off, path}}, allocs = {{t, size, kind, pcs, freed?}}, notes}}.
local function read_images(dir)
  local files = {}
  for _, name in ipairs(fs.list(dir) or {}) do
    local pid, seq = name:match("^(%d+)%.(%d+)%.alloc$")
    if pid then files[#files + 1] = { name = name, pid = tonumber(pid), seq = tonumber(seq) } end
  end
  table.sort(files, function(a, b) return a.pid < b.pid or (a.pid == b.pid and a.seq < b.seq) end)
  local by_key, images, stacks = {}, {}, {}
  for _, file in ipairs(files) do
    local text = fs.read(dir .. "/" .. file.name) or ""
    local pid, interval, start = text:match("^h (%d+) (%d+) (%x+)\n")
    if pid then
      local key = pid .. " " .. start
      local img = by_key[key]
      if not img then
        img = { pid = tonumber(pid), interval = tonumber(interval), start = tonumber(start, 16), comm = "?",
          maps = {}, allocs = {}, notes = {}, live = {}, dead = {} }
        by_key[key] = img
        images[#images + 1] = img
      end
      for line in text:gmatch("[^\n]+") do
        local c = line:sub(1, 1)
        if c == "a" then
          local t, addr, size, kind, pcs = line:match("^a (%x+) (%x+) (%x+) (%a)(.*)$")
          if t then
            local list = stacks[pcs]
            if not list then
              list = {}
              for h in pcs:gmatch("%x+") do list[#list + 1] = tonumber(h, 16) end
              stacks[pcs] = list
            end
            local a = { t = tonumber(t, 16), size = tonumber(size, 16), kind = kind, pcs = list }
            img.allocs[#img.allocs + 1] = a
            img.live[addr] = a
          end
        elseif c == "f" then
          local t, addr = line:match("^f (%x+) (%x+)$")
          local a = addr and img.live[addr]
          if a then a.freed, img.live[addr], img.dead[addr] = tonumber(t, 16), nil, a end
        elseif c == "u" then -- a realloc failed: the block it was to free lives on
          local addr = line:match("^u %x+ (%x+)$")
          local a = addr and img.dead[addr]
          if a then a.freed, img.live[addr], img.dead[addr] = nil, a, nil end
        elseif c == "m" then
          local lo, hi, off, path = line:match("^m (%x+) (%x+) (%x+) (/.+)$")
          if lo then img.maps[#img.maps + 1] = { tonumber(lo, 16), tonumber(hi, 16), tonumber(off, 16), path } end
        elseif c == "c" then
          img.comm = line:sub(3)
        elseif c == "x" then
          img.notes[#img.notes + 1] = line:sub(3)
        end
      end
    end
  end
  table.sort(images, function(a, b) return a.start < b.start or (a.start == b.start and a.pid < b.pid) end)
  return images
end

-- The estimated bytes one sample of n bytes stands for: it was sampled with probability
-- 1 - exp(-n / interval).
local function weight(n, interval) return n / (1 - math.exp(-n / interval)) end

-- When each image ended (ns, math.huge when unknown): a later image of the same pid began (an
-- exec), or the memory sampler last saw the pid.
local function image_ends(images, mem)
  local last = {}
  if mem then
    for _, p in ipairs(mem.processes) do last[p.pid] = (mem.t0 + p.last_t + 1 / mem.hz) * 1e9 end
  end
  for i, img in ipairs(images) do
    img.ends = last[img.pid] or math.huge
    for j = i + 1, #images do
      if images[j].pid == img.pid then
        img.ends, img.execed = images[j].start, true
        break
      end
    end
  end
end

-- ---- the profile ----------------------------------------------------------------------------

local function write(path, text)
  assert(fs.write(path, text, { sync = false }))
  return path
end

local VIEWS = {
  { key = "alloc", title = "Bytes allocated" },
  { key = "alloc_live", title = "Bytes live at the RSS peak" },
  { key = "alloc_leak", title = "Bytes never freed" },
}

-- res.alloc = st:profile(r, o) : r: what capture's record() returned (pid, memory); o: capture's
-- options (dir, name, title, root, top). {interval, mmap, samples, sampled_bytes,
-- estimated_bytes, live = {at = "peak"|"exit", t?, samples, estimated_bytes}, leak = {samples,
-- estimated_bytes}, processes = {{pid, comm, samples, estimated_bytes, skipped?}}, notes, and per
-- view alloc/alloc_live/alloc_leak = {folded_text, top, stacks, unresolved_fraction, folded?,
-- svg?}, json?} or {skipped = why}.
function State:profile(r, o)
  if self.skipped then return { skipped = self.skipped } end
  local images = read_images(self.dir)
  self:close()
  if #images == 0 then
    return { skipped = "no process of the tree loaded " .. M.SHIM ..
      " (a statically linked or setuid program, or one that cleared LD_PRELOAD)" }
  end
  local mem = r.memory and r.memory.ticks > 0 and r.memory or nil
  image_ends(images, mem)
  local at_ns = mem and (mem.t0 + mem.peak.t) * 1e9 or math.huge
  local out = { interval = self.interval, mmap = self.mmap, samples = 0, sampled_bytes = 0, estimated_bytes = 0,
    live = { at = mem and "peak" or "exit", t = mem and mem.peak.t or nil, samples = 0, estimated_bytes = 0 },
    leak = { samples = 0, estimated_bytes = 0 }, processes = {}, notes = {} }
  local s <close> = sym.new { dwarf = true }
  if r.sym then s:add_users(r.sym) end -- the shim's maps name files: only those the tree could read
  local pids, npids = {}, 0
  for _, img in ipairs(images) do
    if #img.allocs > 0 and not pids[img.pid] then pids[img.pid], npids = true, npids + 1 end
  end
  local by_pid = o.root == "pid" or (o.root == "auto" and npids > 1)
  local records = { alloc = {}, alloc_live = {}, alloc_leak = {} }
  local function add(view, rec, w)
    local list = records["alloc_" .. view]
    list[#list + 1] = rec
    out[view].samples, out[view].estimated_bytes = out[view].samples + 1, out[view].estimated_bytes + w
  end
  for k, img in ipairs(images) do
    for _, m in ipairs(img.maps) do s:add_map(k, m[1], m[2] - m[1], m[3], m[4]) end
    local p = { pid = img.pid, comm = img.comm, samples = #img.allocs, estimated_bytes = 0 }
    for _, n in ipairs(img.notes) do
      out.notes[#out.notes + 1] = string.format("%s %d: %s", img.comm, img.pid, n)
      if n:find("^own allocator") then p.skipped = n end
    end
    local label = by_pid and (img.comm .. "-" .. img.pid) or img.comm
    local alive_at_peak = mem and img.start <= at_ns and img.ends > at_ns
    for _, a in ipairs(img.allocs) do
      local w = weight(a.size, img.interval)
      local rec = { pid = k, comm = label, kind = "alloc", user = a.pcs, kernel = {}, count = math.floor(w + 0.5) }
      records.alloc[#records.alloc + 1] = rec
      out.samples, out.sampled_bytes, out.estimated_bytes = out.samples + 1, out.sampled_bytes + a.size,
        out.estimated_bytes + w
      p.estimated_bytes = p.estimated_bytes + w
      local leaked = not a.freed and not img.execed
      if leaked then add("leak", rec, w) end
      if (mem and alive_at_peak and a.t <= at_ns and (not a.freed or a.freed > at_ns)) or (not mem and leaked) then
        add("live", rec, w)
      end
    end
    p.estimated_bytes = math.floor(p.estimated_bytes + 0.5)
    if #img.allocs > 0 or #img.notes > 0 then out.processes[#out.processes + 1] = p end
  end
  out.estimated_bytes = math.floor(out.estimated_bytes + 0.5)
  out.live.estimated_bytes = math.floor(out.live.estimated_bytes + 0.5)
  out.leak.estimated_bytes = math.floor(out.leak.estimated_bytes + 0.5)
  local skipped = {}
  for _, p in ipairs(out.processes) do
    if p.skipped then skipped[#skipped + 1] = p end
  end
  if #skipped > 0 and #skipped == #out.processes then
    return { skipped = string.format("%s %d: %s", skipped[1].comm, skipped[1].pid, skipped[1].skipped) }
  end
  local doc = json.object()
  doc.schema_name, doc.schema_version = "wb.alloc", 1
  for _, view in ipairs(VIEWS) do
    local text, info = fold.fold(records[view.key], s, { root = "comm" })
    local v = { folded_text = text, stacks = #info.stacks, top = fold.top(info.stacks, o.top or 20),
      unresolved_fraction = info.total > 0 and info.unresolved / info.total or 0 }
    if o.dir then
      local base = o.dir .. "/" .. o.name .. "." .. view.key
      v.folded = write(base .. ".folded", text)
      v.svg = write(base .. ".svg", flame.svg(flame.parse(text), { title = view.title .. ": " .. (o.title or ""),
        unit = "bytes", colors = "mem" }))
    end
    out[view.key] = v
  end
  for _, d in ipairs(s:denied()) do out.notes[#out.notes + 1] = fold.denied_text(d) end
  if o.dir then
    for _, k in ipairs({ "interval", "mmap", "samples", "sampled_bytes", "estimated_bytes", "live", "leak",
      "processes", "notes" }) do
      doc[k] = out[k]
    end
    doc.notes = json.array(out.notes)
    for _, view in ipairs(VIEWS) do doc[view.key .. "_top"] = json.array(out[view.key].top) end
    out.json = write(o.dir .. "/" .. o.name .. ".alloc.json", json.encode(doc, { pretty = true }) .. "\n")
  end
  return out
end

return M
