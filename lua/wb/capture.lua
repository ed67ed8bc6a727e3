-- Process capture: which profilers this machine has (the registry), and wb.capture{...}, which
-- runs a command once and records where it and all its descendants spend their time: counters
-- (wb.perf), on-CPU stack samples and off-CPU time by stack (wb.bpf; without it, perf_event ring
-- buffers or the perf CLI), symbolized (wb.sym), folded and rendered (wb.flame).
--
--   local res = wb.capture { argv = {"./app", "-n", "4"}, dir = "out", name = "run1", freq = 99 }
--   res.method                   "bpf" | "perf_event" | "perf_cli" | "none"
--   res.counters["task-clock"]   {available, value, unit, scaled, running_fraction} | {available = false, reason}
--   res.oncpu                    {folded, svg, speedscope, samples, lost, unresolved_fraction, top} | {skipped}
--   res.offcpu                   the same with unit = "ns", total_seconds, blocked_seconds, runqueue_seconds,
--                                stack_lost and stack_lost_seconds (intervals kept under "[stack lost]"),
--                                inferred_ins (intervals whose switch-in the kernel did not report, ended
--                                by the thread's next switch-out less the CPU time it ran since)
--   res.critical                 (wb.bpf with off-CPU time; critical = false: not traced) the run's critical path (lua/wb/capture_critical.lua):
--                                the same files and top in ns, wall_seconds, by_kind = {oncpu, runqueue, wait,
--                                unknown}, by_process = {{pid, comm, oncpu, runqueue, wait, unknown}}, stages =
--                                {{name, seconds, by_kind, top}} (the path within each stage the command reported)
--   res.symbolize                what naming the frames cost: {seconds, addresses, objects = {{path,
--                                seconds, addresses}}}, the most costly object first (not for perf_cli)
--   res.processes                the pids of the tree, the command's first, then by pid
--   res.warnings, res.result (the wb.proc result of the command), res.profilers (the registry
--   entries this capture consulted to choose its method)
local alloc = require "wb.alloc"
local bpf = require "wb.bpf"
local memory = require "wb.memory"
local python = require "wb.python"
local clock = require "wb.clock"
local flame = require "wb.flame"
local fold = require "wb.capture_fold"
local critical = require "wb.capture_critical"
local pyframes = require "wb.capture_python"
local fs = require "wb.fs"
local json = require "wb.json"
local perf = require "wb.perf"
local proc = require "wb.proc"
local sym = require "wb.sym"
local unwind_q = require "wb.capture_unwind"
local util = require "wb.util"

local M = {}

M.DEFAULT_FREQ = 99
M.UNRESOLVED_LIMIT = 0.20 -- warn above this fraction of samples with an unnamed frame
M.THIN_SAMPLES = 50       -- warn below this many on-CPU samples
M.BPF_STACK_MAX = unwind_q.BPF_STACK_MAX -- the most bytes of user stack wb.bpf copies per record (unwind = "dwarf")
M.PERF_STACK_SIZE = 8192   -- the default stack copy of perf_event and perf_cli (size_stack)
M.OBSERVE = 0.25          -- seconds between two readings of the users the tree runs as (s:observe)
M.DRAIN = 0.05            -- seconds between two drains of the sample buffers while the command runs
M.DRAIN_SLICE = 0.02      -- seconds of walking stacks at most between two looks at the command
-- User stacks are walked with each object's CFI from per-sample stack copies by default: Debian's
-- libraries and -O2 builds have no frame pointers (docs/capture.md, "Unwinding").
M.DEFAULT_UNWIND = "dwarf"

-- ---- the registry -----------------------------------------------------------------------------

-- The output of the probe commands (a program's --version, python3's cProfile import), one run
-- each per process: key (argv joined) -> {ok, stdout}.
local outputs = {}

local function key_of(argv) return table.concat(argv, "\0") end

-- Runs the probe commands of list (argvs) not run yet, all at once (stderr with stdout, 10 s at
-- most): their wall time is the slowest one's, not the sum (python3 alone takes some 30 ms to
-- start). A command that cannot be started is {ok = false, stdout = why}.
local function probe_runs(list)
  local procs, keys, started = {}, {}, {}
  for _, argv in ipairs(list) do
    local key = key_of(argv)
    if not outputs[key] and not started[key] then
      started[key] = true
      local ok, p, err = pcall(proc.spawn, { argv = argv, stdout = "capture", stderr = "stdout", timeout = 10 })
      if ok and p then
        procs[#procs + 1], keys[#keys + 1] = p, key
      else
        outputs[key] = { ok = false, stdout = tostring(ok and err or p) }
      end
    end
  end
  for i, r in ipairs(#procs > 0 and proc.wait_all(procs) or {}) do
    outputs[keys[i]] = { ok = r.ok, stdout = r.stdout or "" }
    procs[i]:close()
  end
end

-- {ok, stdout} of running argv, run once.
local function probe_run(argv)
  probe_runs({ argv })
  return outputs[key_of(argv)]
end

local function first_version_line(argv)
  local out = probe_run(argv)
  if not out.ok then return nil, out.stdout end
  for line in out.stdout:gmatch("[^\n]+") do
    if line:find("%d+%.%d+") then return (line:gsub("^%s+", ""):gsub("%s+$", "")) end
  end
  return (out.stdout:match("^%s*([^\n]-)%s*\n") or out.stdout)
end

-- An external program: available when found in PATH and `--version` works. Returns the probe and
-- the command it runs (nil: the program is not in PATH).
local function tool(name, program, notes)
  local function argv()
    local path = proc.which(program)
    return path and { path, "--version" }
  end
  return function()
    local cmd = argv()
    if not cmd then
      return { name = name, available = false, notes = program .. " not found in PATH" }
    end
    local path = cmd[1]
    local version, out = first_version_line(cmd)
    if not version then
      return { name = name, available = false, path = path,
        notes = string.format("%s does not run: %s", program, (out or ""):match("[^\n]*")) }
    end
    return { name = name, available = true, path = path, version = version, notes = notes }
  end, argv
end

local function probe_ebpf()
  local ok, why = bpf.available()
  if not ok then return { name = "ebpf", available = false, notes = why } end
  return { name = "ebpf", available = true,
    notes = "wb.bpf: on-CPU stack sampling and off-CPU time (sched_switch) of a process tree" }
end

local function probe_perf_event()
  local self = tonumber((fs.read("/proc/self/stat") or ""):match("^(%d+)"))
  local c = self and perf.counters(self, { events = { "task-clock" }, enable_on_exec = false, inherit = false })
  local r = c and c:read()["task-clock"]
  if c then c:close() end
  if not r or not r.available then
    return { name = "perf_event", available = false,
      notes = r and r.reason or ("perf_event_open refused (perf_event_paranoid=" .. perf.paranoid() .. ")") }
  end
  return { name = "perf_event", available = true,
    notes = r.user_only and string.format("user space only: perf_event_paranoid=%d keeps kernel stacks "
      .. "and kernel-side events from unprivileged users", perf.paranoid())
      or "wb.perf: ring-buffer stack sampling (one event and one ring per CPU)" }
end

local function cprofile_argv()
  local py = proc.which("python3")
  return py and { py, "-c", "import cProfile, pstats, sys; print(sys.version.split()[0])" }
end

local function probe_cprofile()
  local argv = cprofile_argv()
  if not argv then return { name = "python_cprofile", available = false, notes = "python3 not found in PATH" } end
  local r = probe_run(argv)
  if not r.ok then
    return { name = "python_cprofile", available = false, path = argv[1], notes = "python3 cannot import cProfile" }
  end
  return { name = "python_cprofile", available = true, path = argv[1], version = r.stdout:match("%S+"),
    notes = "python3 -m cProfile: deterministic function timings of a Python command (wb.cprofile)" }
end

-- {name, probe, command}: command() is the argv the probe runs, if any (several are run at once).
M.PROBES = {
  { "ebpf", probe_ebpf },
  { "perf_event", probe_perf_event },
  { "perf", tool("perf", "perf", "perf record -g / perf script") },
  { "callgrind", tool("callgrind", "valgrind", "valgrind --tool=callgrind") },
  { "massif", tool("massif", "valgrind", "valgrind --tool=massif") },
  { "py-spy", tool("py-spy", "py-spy") },
  { "python_cprofile", probe_cprofile, cprofile_argv },
  { "nsys", tool("nsys", "nsys") },
  { "ncu", tool("ncu", "ncu") },
}

local cache, order = {}, {}

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- entry = capture.profiler(name) : {name, available, path?, version?, notes}, probed once per
-- process; an unknown name is an error
function M.profiler(name)
  if not cache[name] then
    for _, p in ipairs(M.PROBES) do
      if p[1] == name then cache[name] = p[2]() end
    end
    if not cache[name] then error("capture: unknown profiler '" .. tostring(name) .. "'", 2) end
    order[#order + 1] = name
  end
  return copy(cache[name])
end

-- list = capture.profilers([names]) : the registry entries of the named profilers (default all);
-- an unavailable one carries skipped = its reason. This is what a manifest's profilers[] holds.
function M.profilers(names)
  local list = {}
  if not names then
    names = {}
    for i, p in ipairs(M.PROBES) do names[i] = p[1] end
  end
  local commands = {}
  for _, p in ipairs(M.PROBES) do
    for _, name in ipairs(names) do
      local cmd = p[1] == name and not cache[name] and p[3] and p[3]()
      if cmd then commands[#commands + 1] = cmd end
    end
  end
  probe_runs(commands)
  for _, name in ipairs(names) do
    local e = M.profiler(name)
    if not e.available then e.skipped = e.notes end
    list[#list + 1] = e
  end
  return list
end

-- result = capture.with(name, fn) : fn(entry) when the profiler is available, else the skipped
-- record {name, available = false, skipped = reason}
function M.with(name, fn)
  local e = M.profiler(name)
  if not e.available then
    e.skipped = e.notes
    return e
  end
  return fn(e)
end

-- The registry entries probed so far, in probe order (with skipped reasons).
local function consulted() return M.profilers(order) end

-- ---- choosing how to sample ---------------------------------------------------------------

local METHODS = { auto = true, bpf = true, perf_event = true, perf_cli = true, none = true }

-- The method to try and the reasons the better ones were passed over.
local function choose(requested, want_stacks)
  local passed = {}
  if not want_stacks then return "none", passed end
  local order = requested == "auto" and { "ebpf", "perf_event", "perf" } or
    ({ bpf = { "ebpf" }, perf_event = { "perf_event" }, perf_cli = { "perf" }, none = {} })[requested]
  local method_of = { ebpf = "bpf", perf_event = "perf_event", perf = "perf_cli" }
  for _, name in ipairs(order) do
    local e = M.profiler(name)
    if e.available then return method_of[name], passed end
    passed[#passed + 1] = { method = method_of[name], reason = e.notes }
  end
  return "none", passed
end

local function reason_text(passed)
  local parts = {}
  for _, p in ipairs(passed) do parts[#parts + 1] = p.method .. ": " .. p.reason end
  return table.concat(parts, "; ")
end

-- ---- running --------------------------------------------------------------------------------

local SPAWN_KEYS = { "argv", "cmd", "shell", "env", "env_mode", "cwd", "stdin", "stdout", "stderr", "timeout",
  "grace" }

local function spawn_spec(spec, argv)
  local s = { held = true }
  for _, k in ipairs(SPAWN_KEYS) do s[k] = spec[k] end
  if argv then s.argv, s.cmd, s.shell = argv, nil, nil end
  return s
end

-- result = wait_stoppable(p, res [, each]) : waits for p, calling each(done) about every DRAIN s
-- (the ring buffers are sized for that: core/bpf.c, o.pages), or at once again when each returned
-- true (work is left: it did a slice of it, so that p's exit and timeout are seen in time).
-- The first Ctrl-C meanwhile stops the command instead of wb (SIGINT to its process group, then
-- SIGTERM STOP_GRACE seconds later) and sets res.stopped = "SIGINT", so that what was recorded
-- is kept and written; a second Ctrl-C interrupts wb as usual.
local STOP_GRACE = 5
local function wait_stoppable(p, res, each)
  local core = require "wb.core"
  local was = core.defer_interrupt(true)
  local ok, err = pcall(function()
    local stop_ns, busy
    repeat
      local done = proc.wait_any({ p }, busy and 0 or M.DRAIN)
      busy = each and each(done)
      if not done and core.deferred_interrupt() then
        if not stop_ns then
          stop_ns, res.stopped = clock.now(), "SIGINT"
          io.stderr:write("\nwb: stopping the command; what was recorded is kept (Ctrl-C again to abort)\n")
          p:kill(2)
        elseif stop_ns > 0 and clock.now() - stop_ns > STOP_GRACE * 1e9 then
          stop_ns = 0
          p:kill(15)
        end
      end
    until done
  end)
  core.defer_interrupt(was)
  if not ok then error(err, 0) end
  return p:wait()
end

-- A function that notes, at most every OBSERVE seconds, the users the tree under pid runs as in
-- the symbolizer s (frames are named only from files they could read: docs/security.md).
local function observer(s, pid)
  local last = 0
  return function()
    if clock.now() >= last + M.OBSERVE * 1e9 then
      last = clock.now()
      s:observe(pid)
    end
  end
end

-- The perf CLI: `perf record` wraps the command; its samples come back through `perf script`.
-- With unwind = "dwarf", perf copies stack_size bytes of user stack per sample and unwinds them
-- at `perf script` time (--call-graph dwarf); with "fp" it walks frame pointers (-g). users (a
-- wb.sym symbolizer) notes who the tree runs as; frames of files they could not read are dropped.
local function run_perf_cli(spec, res, o, users)
  local freq, dir, name = o.freq, o.dir, o.name
  local tmp = not dir and assert(fs.tmpdir("wbperf"))
  local data = (dir or tmp) .. "/" .. name .. ".perf.data"
  local argv = { M.profiler("perf").path, "record", "-F", tostring(freq), "--call-graph",
    o.unwind == "dwarf" and ("dwarf," .. o.stack_size) or "fp", "--no-bpf-event", "-q", "-o", data, "--" }
  local cmd = spec.shell and { "/bin/sh", "-c", spec.cmd or spec.argv } or spec.argv
  for _, a in ipairs(cmd) do argv[#argv + 1] = a end
  local p <close>, err, errno = proc.spawn(spawn_spec(spec, argv))
  if not p then
    if tmp then fs.remove_tree(tmp) end
    return nil, err, errno
  end
  local counters <close> = spec.counters ~= false and perf.counters(p.pid) or nil
  if spec.on_started then spec.on_started(p.pid) end
  p:release()
  res.result = wait_stoppable(p, res, observer(users, p.pid))
  if spec.on_ended then spec.on_ended(p.pid, res.result) end
  res.counters = counters and counters:read()
  if counters then res.warnings[#res.warnings + 1] = "counters include the perf CLI's own work" end
  local script = proc.run { argv = { M.profiler("perf").path, "script", "-i", data, "-F", "comm,pid,ip,sym,dso",
    "--max-stack", tostring(fold.PERF_SCRIPT_MAX_STACK) }, stdout = "capture", stderr = "null" }
  if tmp then fs.remove_tree(tmp) end
  if not script or not script.ok then return nil, "perf script failed" end
  return fold.parse_perf_script(script.stdout, function(path) return users:readable(path) end)
end

local function write(path, text)
  local ok, err = fs.write(path, text, { sync = false })
  if not ok then error(err, 0) end
  return path
end

-- Writes the folded text and its renderings; returns the profile table.
local TITLES = { offcpu = "Off-CPU time: ", oncpu = "On-CPU samples: ", critical = "Critical path: " }

local function outputs(kind, text, info, opts)
  local unit = kind == "oncpu" and "samples" or "ns"
  local t = { samples = info.total, unit = unit, stacks = #info.stacks, folded_text = text, symbols = info.symbols,
    unresolved_fraction = info.total > 0 and info.unresolved / info.total or 0 }
  if not opts.dir then return t end
  local base = opts.dir .. "/" .. opts.name .. "." .. kind
  t.folded = write(base .. ".folded", text)
  local stacks = flame.parse(text)
  t.svg = write(base .. ".svg", flame.svg(stacks, { title = TITLES[kind] .. opts.title, unit = unit,
    colors = kind == "offcpu" and "io" or "hot" }))
  t.speedscope = write(base .. ".speedscope.json", flame.speedscope(stacks,
    { name = opts.name .. " " .. kind, unit = unit == "ns" and "nanoseconds" or "none", located = info.located }))
  return t
end

-- The args of a process's span: its hottest on-CPU source lines and where it blocked most, each
-- "function file:line share" (the deepest user frame, by the sampled address), at most five.
local function span_args(pid, leaves, off_leaves)
  local args
  for _, v in ipairs({ { "oncpu", leaves }, { "offcpu", off_leaves } }) do
    local list = v[2] and v[2][pid]
    if list and #list > 0 then
      local total = 0
      for _, e in ipairs(list) do total = total + e.count end
      local out = json.array()
      for i = 1, math.min(5, #list) do
        local e = list[i]
        out[i] = string.format("%s%s %.1f%%", e.name, e.file and (" " .. e.file .. ":" .. e.line) or "",
          100 * e.count / total)
      end
      args = args or json.object()
      args[v[1]] = out
    end
  end
  return args
end

-- Chrome trace events of the process tree: one span per process from its fork (or the release)
-- to its exit, with its hottest lines (span_args).
local function process_trace(side, started_ns, ended_ns, names, leaves, off_leaves)
  local start, stop = {}, {}
  for _, f in ipairs(side.forks) do start[f.pid] = f.time end
  for _, e in ipairs(side.exits) do stop[e.pid] = e.time end
  local events = {}
  for pid, name in pairs(names) do
    local t0, t1 = start[pid] or started_ns, stop[pid] or ended_ns
    events[#events + 1] = { name = name .. " (" .. pid .. ")", ts = math.max(0, (t0 - started_ns) / 1000),
      dur = math.max(0, (t1 - t0) / 1000), pid = pid, tid = pid, cat = "process",
      args = span_args(pid, leaves, off_leaves) }
  end
  table.sort(events, function(a, b) return a.ts < b.ts or (a.ts == b.ts and a.pid < b.pid) end)
  return events
end

-- The modules of unresolved frames in folded text, with the samples that have one: {{name,
-- count}} by count, largest first.
local function unresolved_modules(text)
  local by = {}
  for line in text:gmatch("[^\n]+") do
    local stack, count = line:match("^(.*) (%d+)$")
    local seen = {}
    for frame in (stack or ""):gmatch("[^;]+") do
      local m = fold.module_of(frame)
      if m and not seen[m] then
        seen[m] = true
        by[m] = (by[m] or 0) + tonumber(count)
      end
    end
  end
  local out = {}
  for name, n in pairs(by) do out[#out + 1] = { name = name, count = n } end
  table.sort(out, function(a, b) return a.count > b.count or (a.count == b.count and a.name < b.name) end)
  return out
end

-- Warnings on how far the profile can be trusted.
local function quality(res, side, sampled, denied)
  local w = res.warnings
  local seen, unread = {}, {} -- the files named by a warning already; those the users could not read
  for _, d in ipairs(denied or {}) do
    w[#w + 1] = fold.denied_text(d)
    seen[d.path], unread[d.path] = true, unread[d.path] or not d.debug
  end
  for _, o in ipairs(res.oncpu and res.oncpu.unwind and res.oncpu.unwind.objects or {}) do
    if unread[o.path] then o.build_id = nil end -- read from the file: not reported either
  end
  local on = res.oncpu
  local modules = on and on.folded_text and unresolved_modules(on.folded_text) or {}
  if on and on.samples and on.samples > 0 and on.unresolved_fraction > M.UNRESOLVED_LIMIT then
    local named = {}
    for i = 1, math.min(#modules, 3) do
      local share = modules[i].count / on.samples
      if share >= 0.01 then named[#named + 1] = string.format("%s %.0f%%", modules[i].name, share * 100) end
    end
    w[#w + 1] = string.format("%.0f%% of on-CPU samples have unresolved frames (shown as module+0xoffset)%s: "
      .. "stripped binaries or code that is gone; install debug symbols or keep .symtab",
      on.unresolved_fraction * 100, #named > 0 and (", in " .. table.concat(named, ", ")) or "")
  end
  local kernel_frames = false
  for _, prof in ipairs({ res.oncpu, res.offcpu }) do
    kernel_frames = kernel_frames or (prof and prof.folded_text and prof.folded_text:find("_%[k%]") ~= nil)
  end
  if kernel_frames and sym.load_kernel() == 0 then
    local function sysctl(name) return tonumber((fs.read("/proc/sys/kernel/" .. name) or ""):match("%-?%d+")) end
    local restrict, paranoid = sysctl("kptr_restrict"), sysctl("perf_event_paranoid")
    local why = restrict == 2 and "kernel.kptr_restrict=2 hides them from every user"
        or restrict == 1 and "kernel.kptr_restrict=1: they need CAP_SYSLOG"
        or string.format("kernel.kptr_restrict=%s and kernel.perf_event_paranoid=%s: they need CAP_SYSLOG, or " ..
          "perf_event_paranoid <= 1", tostring(restrict or "?"), tostring(paranoid or "?"))
    w[#w + 1] = "kernel frames are not named ([unknown]_[k]): /proc/kallsyms shows this user no addresses (" .. why .. ")"
  end
  if on and on.samples and on.samples < M.THIN_SAMPLES then
    w[#w + 1] = string.format("thin profile: %d on-CPU samples; run longer or raise freq", on.samples)
  end
  for _, prof in ipairs({ res.oncpu, res.offcpu }) do
    if prof and (prof.lost or 0) > 0 then
      w[#w + 1] = prof.unit == "ns" and string.format("%d off-CPU intervals lost (the map of threads switched out, "
        .. "or of time without a stack, was full); the profile undercounts", prof.lost)
        or string.format("%d samples lost (a full map or ring buffer); the profile undercounts", prof.lost)
    end
    if prof and (prof.stack_lost or 0) > 0 then
      w[#w + 1] = string.format("%d off-CPU intervals (%s, %.1f%% of the off-CPU time) are under %s: %s",
        prof.stack_lost, util.format_seconds(prof.stack_lost_seconds), 100 * prof.stack_lost_seconds /
        math.max(prof.total_seconds, 1e-9), fold.STACK_LOST, prof.unwound and "the ring buffer had no room for their "
        .. "records (wb's drain fell behind: raise ring_mib)" or "the counts map had no room for their stack (raise "
        .. "count_entries)")
    end
    if prof and (prof.stack_errors or 0) > 0 then
      w[#w + 1] = string.format("%d %s counted without their stack: the kernel's stack map was full, or the stack " ..
        "hashed to a bucket another stack holds (raise stack_entries: more buckets, fewer collisions)", prof.stack_errors,
        prof.unit == "ns" and "off-CPU intervals" or "samples")
    end
  end
  if side and sampled then
    -- with CFI unwinding, the objects that stopped walks are named by capture_unwind.warn instead
    local unwound = res.oncpu and res.oncpu.unwind ~= nil
    local paths = {}
    for pid, path in pairs(fold.executables(side)) do
      if sampled[pid] and not seen[path] then
        seen[path] = true
        paths[#paths + 1] = path
      end
    end
    table.sort(paths)
    for _, path in ipairs(paths) do
      local f = sym.file(path)
      local fp = f.frame_pointers
      if fp and fp.functions > 0 and fp.with / fp.functions < 0.5 and not unwound then
        w[#w + 1] = string.format("%s has no frame pointers (%d of %d functions set up %%rbp): callers are "
          .. "missing from its stacks; unwind with CFI (unwind=dwarf, the default) or rebuild with "
          .. "-fno-omit-frame-pointer", path, fp.with, fp.functions)
      elseif f.unreadable then
        w[#w + 1] = path .. " could not be read (" .. tostring(f.error) .. "): its frames show as module+0xoffset"
      elseif not f.symtab and f.symbols == 0 then
        w[#w + 1] = path .. " has no symbols (stripped): its frames show as module+0xoffset"
      end
    end
    -- the libraries (not the executables) whose frames stayed unresolved, named by their path
    local wanted = {}
    for _, m in ipairs(modules) do wanted[m.name] = true end
    for _, m in ipairs(side.mappings) do
      local base = m.path:match("([^/]+)$")
      if base and wanted[base] and not seen[m.path] and m.path:sub(1, 1) == "/" then
        seen[m.path], wanted[base] = true, nil
        local f = sym.file(m.path)
        if f.unreadable then
          w[#w + 1] = m.path .. " could not be read (" .. tostring(f.error) .. "): its frames show as " .. base .. "+0xoffset"
        elseif not f.symtab then
          w[#w + 1] = m.path .. " has no symbol table (stripped" .. (f.symbols > 0 and ", only its exported symbols" or "") ..
            "): its frames show as " .. base .. "+0xoffset; install its debug symbols (a -dbgsym package) to name them"
        end
      end
    end
  end
end

-- The profile table of folded text: outputs, top functions, the extra fields and, off-CPU, the
-- time split.
local function profile_of(kind, text, info, opts, extra)
  local t = outputs(kind, text, info, opts)
  t.top = fold.locate(fold.top(info.stacks, opts.top, { user_only = kind == "offcpu" }), info.located,
    { user_only = kind == "offcpu" })
  for k, v in pairs(extra or {}) do t[k] = v end
  if kind == "offcpu" then
    t.total_seconds = info.total / 1e9
    t.blocked_seconds = (info.by_kind.blocked or 0) / 1e9
    t.runqueue_seconds = (info.by_kind.runqueue or 0) / 1e9
    t.stack_lost_seconds = info.stack_lost / 1e9
  end
  return t
end

local function finish_profile(kind, records, symbolizer, root, opts, extra, python)
  local text, info = fold.fold(records, symbolizer, { root = root,
    cut = opts.unwind == "fp" and fold.KERNEL_MAX_DEPTH or nil, python = python })
  return profile_of(kind, text, info, opts, extra), info.leaves
end

-- The root frame: root itself unless "auto", which is "pid" when the record lists hold several
-- processes, else "comm".
local function auto_root(root, on_records, off_records)
  if root ~= "auto" then return root end
  return fold.process_count(on_records, off_records) > 1 and "pid" or "comm"
end

-- The options of a capture, checked; misuse raises at the caller of wb.capture.
local function options(spec)
  if type(spec) ~= "table" then error("wb.capture: a spec table expected", 3) end
  if spec.argv == nil and spec.cmd == nil then error("wb.capture: argv (or cmd with shell = true) expected", 3) end
  local o = { requested = spec.method or "auto", freq = spec.freq or M.DEFAULT_FREQ, name = spec.name or "capture",
    dir = spec.dir, top = spec.top or 20, root = spec.root or "auto",
    want_on = spec.oncpu ~= false, want_off = spec.offcpu ~= false, python = spec.python ~= false,
    memory = spec.memory ~= false, memory_hz = spec.memory_hz or 20 }
  o.alloc = spec.alloc and alloc.options(spec) or nil
  if not METHODS[o.requested] then error("wb.capture: unknown method '" .. tostring(o.requested) .. "'", 3) end
  if math.type(o.freq) ~= "integer" or o.freq < 1 or o.freq > 100000 then
    error("wb.capture: freq must be an integer in 1..100000", 3)
  end
  o.unwind, o.stack_size, o.stack_given = spec.unwind or M.DEFAULT_UNWIND, spec.stack_size or M.PERF_STACK_SIZE,
    spec.stack_size ~= nil
  if o.unwind == "auto" then o.unwind = "dwarf" end
  if o.unwind ~= "fp" and o.unwind ~= "dwarf" then
    error("wb.capture: unwind must be \"auto\", \"dwarf\" or \"fp\"", 3)
  end
  if o.unwind == "dwarf" and o.requested == "bpf" and o.stack_size > M.BPF_STACK_MAX then
    error("wb.capture: stack_size above " .. M.BPF_STACK_MAX .. " needs method \"perf_event\"", 3)
  end
  if math.type(o.stack_size) ~= "integer" or o.stack_size < 512 or o.stack_size > unwind_q.STACK_MAX
    or o.stack_size % 8 ~= 0 then
    error("wb.capture: stack_size must be a multiple of 8 in 512.." .. unwind_q.STACK_MAX, 3)
  end
  local ring = spec.ring_mib or 0
  if math.type(ring) ~= "integer" or ring < 0 or ring > 2048 or ring & (ring - 1) ~= 0 then
    error("wb.capture: ring_mib must be 0 (sized for the sample rate) or a power of two up to 2048", 3)
  end
  local words = type(spec.argv) == "table" and spec.argv or { spec.cmd or spec.argv }
  o.title = spec.title or table.concat(words, " ")
  return o
end

-- The root's first samples get their Python frames: its interpreter is looked for as it starts
-- (the exec, then ld.so mapping libpython) every 2 ms for up to PYTHON_START seconds, or until it
-- exits; the other processes are found as their samples are drained (a fork of a CPython at once,
-- by the program).
M.PYTHON_START = 0.03
local function python_start(session, p)
  local t0 = clock.now()
  repeat
    if session:python(p.pid) or proc.wait_any({ p }, 0.002) then return end
  until clock.now() - t0 > M.PYTHON_START * 1e9
end

-- The bytes of user stack copied per sample, unless spec.stack_size chose them: with eBPF all it
-- can copy, which costs shallow stacks nothing more (a main thread's copy stops at the process's
-- start_stack; a thread's is halved until it ends in readable memory), so that programs keeping a
-- large buffer on main's frame (Debian's sqlite3 shell) are walked to main; with perf_event and
-- perf_cli perf's 8192, as the kernel copies all of it and the rings must fit an unprivileged
-- user's locked memory (perf_event_mlock_kb: 516 KiB per CPU). Sizes the perf_event rings
-- (o.pages) for it.
local function size_stack(o, method)
  if not o.stack_given then o.stack_size = method == "bpf" and M.BPF_STACK_MAX or M.PERF_STACK_SIZE end
  o.pages = 128 -- ring pages per CPU: room for 4x what a CPU writes in 0.1 s (two drains, M.DRAIN)
  while o.pages < 4096 and o.pages * 4096 < 4 * o.freq * 0.1 * (o.stack_size + 256) do o.pages = o.pages * 2 end
end

-- st = {method, passed, session}: the BPF session could not be had (err): the next method, and why.
local function fall_back(st, o, err)
  st.passed[#st.passed + 1] = { method = "bpf", reason = err }
  st.method = o.requested == "auto" and M.profiler("perf_event").available and "perf_event" or "none"
  st.session = nil
  size_stack(o, st.method)
end

-- What naming the frames will need, read on threads of wb's while the BPF programs load and the
-- command runs, so that a short command's profile does not wait for it: /proc/kallsyms (tens of
-- ms of kernel time), and the DWARF (inline chains, lines) of the command's executable and of
-- libc, which nearly every stack holds (libc's debug file: some 40 ms to inflate).
local function read_ahead(spec, o)
  sym.prefetch_kernel()
  if o.unwind ~= "dwarf" then return end
  local unwind = require "wb.unwind"
  local exe = not spec.shell and type(spec.argv) == "table" and spec.argv[1] and proc.which(spec.argv[1])
  exe = exe and fs.realpath(exe) -- the path its mappings will show
  if exe then unwind.prefetch(exe) end
  local libc = (fs.read("/proc/self/maps") or ""):match("%s(/%S+/libc%.so%.6)\n")
  if libc then unwind.prefetch(libc) end
end

-- Waits for the BPF load of st.session (bpf.open async) and sets what follows from the method
-- that is used: res.method, res.fallback, o.merged, st.off_skip.
local function settle(st, o, res)
  if st.session then
    local ok, err = st.session:ready()
    if not ok then fall_back(st, o, err) end
    local _, btf_err, refused
    if ok then _, btf_err, refused = st.session:btf() end
    if btf_err then -- made again after this run
      res.warnings[#res.warnings + 1] = "the cached kernel types did not serve the load (" .. btf_err
        .. "): the kernel's own BTF was used, and the file is removed"
      os.remove(refused)
    end
  end
  res.method = st.method
  -- the BPF program reads the Python frames with each sample when it copies user stacks
  o.merged = st.session ~= nil and o.unwind == "dwarf" and o.python
  if #st.passed > 0 then res.fallback = reason_text(st.passed) end
  st.off_skip = st.method ~= "bpf" and o.want_off and
    ("off-CPU time needs eBPF (sched_switch)" .. (res.fallback and ": " .. res.fallback or "")) or nil
end

-- The records of processes that exited before their first records were drained (short-lived
-- children: /proc no longer had their mappings) wait in the session; their mappings, forks and
-- execs from the side-band records, in time order, let s:read() walk them. Their ancestors' are
-- replayed too: a child starts with its parent's mappings, and the session forgot those of a
-- parent that has exited.
local function replay_mappings(session, side)
  local deferred, pids, parent = session:deferred(), {}, {}
  if #deferred == 0 then return end
  for _, f in ipairs(side.forks) do
    if f.pid ~= f.ppid then parent[f.pid] = f.ppid end
  end
  for _, pid in ipairs(deferred) do
    local p = pid
    while p and not pids[p] do
      pids[p] = true
      p = parent[p]
    end
  end
  fold.feed({
    fork = function(_, pid, ppid) if pids[pid] and pid ~= ppid then session:fork(pid, ppid) end end,
    exec = function(_, pid) if pids[pid] then session:exec(pid) end end,
    add_map = function(_, pid, ...) if pids[pid] then session:add_map(pid, ...) end end,
  }, side)
end

-- Runs the command held: counters, side-band (and, for perf_event, sampling) events and the BPF
-- session are set up on its pid before it execs. Returns what they recorded, or nil, err, errno.
local function record(spec, o, res, st)
  local p <close>, err, errno = proc.spawn(spawn_spec(spec))
  if not p then
    settle(st, o, res)
    return nil, err, errno
  end
  local counters <close> = spec.counters ~= false and perf.counters(p.pid) or nil
  settle(st, o, res) -- the BPF load, on its thread since before the spawn
  local method, session = st.method, st.session
  local sampling = method == "perf_event" and o.want_on
  local dwarf = sampling and o.unwind == "dwarf"
  local side <close>, side_err = perf.sampler(p.pid, { sample = sampling, freq = o.freq,
    pages = dwarf and o.pages or sampling and 128 or 16, unwind = dwarf and "dwarf" or nil, stack_size = o.stack_size })
  if not side and sampling then
    res.method = "none"
    res.fallback = (res.fallback and res.fallback .. "; " or "") .. "perf_event: " .. side_err
  elseif not side then
    res.warnings[#res.warnings + 1] = "no perf side-band records (" .. side_err
      .. "): user frames are named from /proc/PID/maps snapshots only"
  end
  local symbolizer = sym.new { dwarf = o.unwind == "dwarf" }
  if session then
    assert(session:track(p.pid))
    session:arm()
  end
  local r = { pid = p.pid, sym = symbolizer, sampling = sampling and side ~= nil, started = clock.now() }
  if spec.on_started then spec.on_started(p.pid) end
  r.released = clock.now() -- the critical path's start: the gate's wait before it is not the command's
  assert(p:release())
  if o.merged then python_start(session, p) end
  -- RSS, PSS and swap of every process of the tree over time (first: its first sample is at once)
  local mem_sampler <close> = o.memory and memory.sampler(p.pid, { hz = o.memory_hz }) or nil
  -- Python stacks of every CPython process of the tree: read by the BPF program with each sample
  -- (o.merged), else sampled from outside at the same rate by a thread of wb's
  local py_sampler <close> = o.python and not o.merged and python.sampler(p.pid, { hz = o.freq }) or nil
  local snapped, observe = false, observer(symbolizer, p.pid)
  res.result = wait_stoppable(p, res, function(done)
    observe()
    if side then side:drain() end
    local left = session and select(2, session:drain(M.DRAIN_SLICE)) or 0
    if not side and not done and not snapped then snapped = symbolizer:snapshot(p.pid) ~= nil end
    return left > 0
  end)
  if spec.on_ended then spec.on_ended(p.pid, res.result) end
  r.python = py_sampler and py_sampler:stop()
  r.memory = mem_sampler and mem_sampler:stop()
  r.ended = clock.now()
  if session then
    session:stop()
    session:drain() -- every record in: the ones that are to wait are known before their replay
  end
  res.counters = counters and counters:read() or nil
  r.side = side and side:read()
  if r.side then fold.feed(symbolizer, r.side) end
  if session and r.side then replay_mappings(session, r.side) end
  r.data = session and session:read()
  if r.data then -- the path, also over each stage the application reported (stage_pattern)
    local windows = {}
    for _, m in ipairs(o.stage_marks or {}) do
      windows[#windows + 1] = { math.floor((m[2] - m[3]) * 1e9), math.floor(m[2] * 1e9) }
    end
    r.critical = session:critical_path(p.pid, nil, windows, r.released)
  end
  if r.data then -- every user a sample was taken of, also in processes gone before a drain saw them
    local users, full = session:users()
    for _, u in ipairs(users) do symbolizer:add_user(u.uid, u.gid) end
    -- a user that could not be noted: with the map full, wb cannot know who ran, and names only
    -- what every user may read; otherwise the insert failed on a busy CPU (the PLT test's signal
    -- storm beside busy loops lost some), and the user was noted by its other samples and /proc
    if r.data.stats.lost_users > 0 and full then symbolizer:add_user() end
  end
  return r
end

-- The processes of the capture (the command's first, then by pid) and a Chrome trace of their
-- lifetimes.
local function processes(res, r, o, on_records)
  local sb = r.side
  if r.data then
    res.processes = r.data.pids -- the BPF map's order: a hash's
    table.sort(res.processes, function(a, b)
      if (a == r.pid) ~= (b == r.pid) then return a == r.pid end
      return a < b
    end)
  elseif sb then
    res.processes = { r.pid }
    for _, f in ipairs(sb.forks) do res.processes[#res.processes + 1] = f.pid end
  end
  if not (sb and o.dir) then return end
  local names = {}
  for _, rec in ipairs(on_records or {}) do names[rec.pid] = rec.comm end
  for _, e in ipairs(sb.execs) do names[e.pid] = e.comm end
  for _, f in ipairs(sb.forks) do names[f.pid] = names[f.pid] or names[f.ppid] or "?" end
  res.trace = write(o.dir .. "/" .. o.name .. ".trace.json",
    flame.trace(process_trace(sb, r.started, r.ended, names, r.leaves, r.off_leaves)))
end

-- The memory profile: the tree's RSS over time and each process's peak, written as
-- <name>.memory.json (everything, with each process's series), <name>.memory.csv (the tree's
-- totals per sample) and <name>.memory.svg. res.memory = {hz, samples, peak_rss_kb, peak_t,
-- peak_pss_kb, processes = {{pid, ppid, comm, peak_rss_kb, peak_t, hwm_kb, peak_pss_kb,
-- first_t, last_t}}, json, csv, svg}. The root's own peak, res.result.own_peak_rss_kb, is the
-- one its exit message gave wb.proc (exact, core/exitstats.h) or else its last VmHWM sampled (not
-- the wait4 figure that holds wb's); the root's hwm_kb is the former when known.
local function memory_profile(res, r, o)
  local m = r.memory
  if not m then return end
  local procs, exact = {}, res.result.own_peak_rss_kb
  for i, p in ipairs(m.processes) do
    if p.pid == r.pid then
      if exact then p.hwm_kb = exact end
      if p.hwm_kb > 0 then res.result.own_peak_rss_kb = p.hwm_kb end
    end
    procs[i] = { pid = p.pid, ppid = p.ppid, comm = p.comm, peak_rss_kb = p.peak_rss_kb, peak_t = p.peak_t,
      hwm_kb = p.hwm_kb, peak_pss_kb = p.peak_pss_kb >= 0 and p.peak_pss_kb or nil, first_t = p.first_t,
      last_t = p.last_t }
  end
  -- a tree PSS that leaves out a process (its smaps_rollup was too slow to read) is not shown
  if m.pss_partial then m.timeline.pss_kb, m.peak.pss_kb = nil, nil end
  res.memory = { hz = m.hz, samples = m.ticks, peak_rss_kb = m.peak.rss_kb, peak_t = m.peak.t,
    peak_pss_kb = m.peak.pss_kb, pss_partial = m.pss_partial or nil, processes = procs }
  res.memory.stages = o.stages and require("wb.memory_stages").attribute(m, o.stages) or nil
  if m.ticks == 0 then
    res.memory.skipped = "the command exited before the first memory sample (1/" .. m.hz .. " s)"
    return
  end
  if not o.dir then return end
  local base = o.dir .. "/" .. o.name .. ".memory"
  local doc = json.object()
  doc.schema_name, doc.schema_version = "wb.memory", 1
  doc.hz, doc.samples, doc.peak = m.hz, m.ticks, m.peak
  doc.timeline = m.timeline
  doc.processes = m.processes
  doc.stages = res.memory.stages
  res.memory.json = write(base .. ".json", json.encode(doc) .. "\n")
  local lines = { "t_seconds,tree_rss_kb,tree_pss_kb,tree_swap_kb" }
  for i, t in ipairs(m.timeline.t) do
    lines[#lines + 1] = string.format("%.4f,%d,%s,%d", t, m.timeline.rss_kb[i],
      m.timeline.pss_kb and tostring(m.timeline.pss_kb[i]) or "", m.timeline.swap_kb[i])
  end
  res.memory.csv = write(base .. ".csv", table.concat(lines, "\n") .. "\n")
  res.memory.svg = write(base .. ".svg", require("wb.memory_chart").svg(m, { title = "Memory: " .. o.title,
    stages = o.stages }) .. "\n")
end

-- The on-CPU and off-CPU profiles from what record() returned.
local function profiles(res, r, o, off_skip)
  local data, sb = r.data, r.side
  local on_records = data and data.oncpu or (r.sampling and sb.samples) or nil
  local off_records = data and o.want_off and data.offcpu or nil
  local root = auto_root(o.root, on_records, off_records)
  local sampled, views = nil, {} -- the python views of the merged stacks
  if o.want_on and on_records then
    sampled = {}
    for _, rec in ipairs(on_records) do
      if rec.count > 0 then sampled[rec.pid] = true end
    end
    local stats = data and data.stats
    local leaves
    views.oncpu = data and data.python and pyframes.collector() or nil
    res.oncpu, leaves = finish_profile("oncpu", on_records, r.sym, root, o, {
      lost = stats and stats.lost_samples + (stats.lost_ustacks or 0) or sb.lost,
      stack_errors = stats and stats.oncpu_stack_errors or 0,
      user_only = not data and sb.user_only or nil,
    }, views.oncpu)
    r.leaves = leaves
    local ustats = data and data.unwind or sb and sb.unwind
    if ustats then
      res.oncpu.unwind = unwind_q.figures(ustats, res.oncpu.folded_text)
      unwind_q.warn(res.warnings, res.oncpu.unwind)
    end
    if res.oncpu.user_only then
      res.warnings[#res.warnings + 1] = string.format("user space only: kernel frames and time in the kernel "
        .. "are not sampled (perf_event_paranoid=%d for unprivileged users)", perf.paranoid())
    end
  elseif o.want_on then
    res.oncpu = { skipped = "no stack sampler: " .. (res.fallback or "none available") }
  end
  if off_records then
    views.offcpu = data.python and pyframes.collector() or nil
    local st = data.stats
    res.offcpu, r.off_leaves = finish_profile("offcpu", off_records, r.sym, root, o, { lost = st.lost_switches,
      stack_errors = st.offcpu_stack_errors, intervals = st.switches, inferred_ins = st.inferred_ins,
      stack_lost = st.stack_lost, unwound = data.unwind ~= nil }, views.offcpu)
    local reach, looked = unwind_q.reach_entry(res.offcpu.folded_text)
    if data.unwind and looked > 0 then res.offcpu.unwind = { reach_entry_fraction = reach } end
  elseif o.want_off then
    res.offcpu = { skipped = off_skip }
  end
  if r.critical then
    local cp = critical.profile(r.critical, data, r.sym, root)
    res.critical = outputs("critical", cp.folded_text, cp.info, o)
    res.critical.top = fold.locate(fold.top(cp.info.stacks, o.top, { user_only = true }), cp.info.located,
      { user_only = true })
    res.critical.leaves = cp.info.leaves
    for _, k in ipairs({ "wall_seconds", "by_process", "by_kind", "segment_count", "dropped", "waits_for", "functions" }) do
      res.critical[k] = cp[k]
    end
    res.critical.stages = {}
    for i, w in ipairs(r.critical.windows or {}) do
      local m = o.stage_marks[i]
      res.critical.stages[i] = critical.stage(w, data, r.sym, root, m[1])
    end
    local st = data.stats
    local lost = (st.lost_switch_outs or 0) + (st.lost_switch_ins or 0) + (st.lost_wakes or 0)
    if lost > 0 then
      res.warnings[#res.warnings + 1] = string.format("critical path: %d switch or wake-up records were lost (the " ..
        "ring buffer had no room: raise ring_mib); around them the path may count a wait as time on a CPU or miss " ..
        "who ended it", lost)
    end
    if cp.dropped then
      res.warnings[#res.warnings + 1] = string.format("critical path: the timeline was full (timeline_mib) after " ..
        "%d events; the path covers the run up to the first one left out", cp.dropped)
    end
  end
  res.lost_images = data and data.stats.lost_images or nil
  if (res.lost_images or 0) > 0 then
    res.warnings[#res.warnings + 1] = string.format("%d fork, exec or exit records lost (the ring buffer had no " ..
      "room: raise ring_mib): those processes' stacks may have been walked with another image's mappings",
      res.lost_images)
  end
  processes(res, r, o, on_records)
  pyframes.profiles(res, r, o, views, outputs)
  memory_profile(res, r, o)
  return sampled
end

-- res, err, errno = capture.run(spec) : see the top of this file and docs/capture.md. spec: argv
-- (or cmd with shell = true), env, env_mode, cwd, stdin, stdout, stderr, timeout, grace (as
-- wb.proc.spawn; the timeout starts when the command is released); counters = true, oncpu = true,
-- offcpu = true, freq = 99, method = "auto" | "bpf" | "perf_event" | "perf_cli" | "none", dir
-- (outputs are written there when given), name = "capture", title, root = "auto" | "comm" | "pid"
-- (the root frame: "comm-PID" when auto finds several processes), top = 20, verbose (libbpf's
-- messages), stack_entries, count_entries and ring_mib (wb.bpf map sizes), unwind = "auto" (= "dwarf": user
-- stacks walked with each object's CFI from a copy of stack_size bytes per sample (16376 with eBPF,
-- 8192 with perf_event and perf_cli) and, with
-- eBPF, per switch-out; perf_cli records --call-graph dwarf) | "fp" (frame pointers, walked by the
-- kernel); res.oncpu.unwind holds the quality figures, res.oncpu.symbols the mangled names and
-- file:line of inlined frames), python = true (Python stacks of CPython processes, res.python),
-- memory = true and memory_hz = 20 (the tree's memory over time, res.memory), alloc = false,
-- alloc_interval = 524288 and alloc_mmap = true (sampled allocation stacks, res.alloc: lua/wb/alloc.lua),
-- stage_pattern (the command's stage lines: bands on the memory chart, res.memory.stages:
-- lua/wb/memory_stages.lua), on_started(pid) (called while the command is held, before its exec)
-- and on_ended(pid, result) (called the moment it has been waited for): a campaign's journal,
-- c:child_hooks. Raises on misuse;
-- nil, err, errno when the command cannot be started. The first Ctrl-C while the command runs
-- stops it (res.stopped = "SIGINT", res.ok = true) and the profile is still made; a second one
-- interrupts.
function M.run(spec)
  local o = options(spec)
  if o.dir then assert(fs.mkdir_p(o.dir)) end
  local res = { warnings = {}, freq = o.freq }
  local method, passed = choose(o.requested == "auto" and o.unwind == "dwarf" and o.stack_size > M.BPF_STACK_MAX
    and "perf_event" or o.requested, o.want_on or o.want_off)
  size_stack(o, method)
  res.profilers = consulted()
  local st = { method = method, passed = passed }
  if method == "bpf" then -- loaded on a thread while the command is spawned and its counters opened
    local err
    st.session, err = bpf.open { freq = o.freq, oncpu = o.want_on, offcpu = o.want_off, verbose = spec.verbose,
      stack_entries = spec.stack_entries, count_entries = spec.count_entries, ring_mib = spec.ring_mib,
      ustack = o.unwind == "dwarf" and o.stack_size or nil, python = o.python, async = true,
      wakes = spec.critical ~= false }
    if not st.session then fall_back(st, o, err) end
  end
  if spec.counters ~= false or st.method == "perf_event" then perf.warm() end -- the RCU wait off the path
  if st.method == "bpf" or st.method == "perf_event" then read_ahead(spec, o) end
  local session_close <close> = st.session
  local al <close> = o.alloc and alloc.start(spec, o, method) or nil -- the allocation sampler preloaded
  if al and al.spec then spec = al.spec end
  local stages <close>, stages_err = require("wb.memory_stages").watch(spec) -- the application's stage lines, stamped
  if stages_err then return nil, "stderr: " .. stages_err end
  if stages then spec = stages.spec end
  if st.method == "perf_cli" then
    settle(st, o, res)
    local users <close> = sym.new() -- who the tree runs as: perf names the frames, wb drops some
    local records, err, errno = run_perf_cli(spec, res, o, users)
    if not res.result then return nil, err, errno end
    if not records then
      res.oncpu = { skipped = err }
    else
      -- a stack at its limit is marked truncated: the kernel's frame-pointer walk, or perf script's
      local cut = o.unwind == "fp" and fold.KERNEL_MAX_DEPTH or fold.PERF_SCRIPT_MAX_STACK
      local text, info = fold.fold_named(records, { root = auto_root(o.root, records), cut = cut })
      res.oncpu = profile_of("oncpu", text, info, o)
    end
    res.offcpu = o.want_off and { skipped = st.off_skip } or nil
    quality(res, nil, nil, users:denied())
    if al then res.alloc = al:profile({ sym = users }, o) end
  else
    o.stage_marks = stages and stages.marks -- filled as the command reports its stages
    local r, err, errno = record(spec, o, res, st)
    if not r then return nil, err, errno end
    if stages and r.memory then o.stages = stages:bands(r.memory.t0, 1 / r.memory.hz) end
    local sym_close <close> = r.sym
    local sampled = profiles(res, r, o, st.off_skip)
    quality(res, r.side, sampled, r.sym:denied())
    if al then res.alloc = al:profile(r, o) end
    res.symbolize = r.sym:costs()
  end
  for _, w in ipairs(require("wb.unwind").cache_warnings()) do res.warnings[#res.warnings + 1] = w end
  res.ok = res.result.ok or res.stopped ~= nil -- stopped by the user's Ctrl-C: a complete profile
  if res.method == "bpf" and not bpf.btf() then bpf.make_btf() end -- for the loads of the next captures
  if res.counters and o.dir then
    res.counters_file = write(o.dir .. "/" .. o.name .. ".counters.json",
      json.encode(res.counters, { pretty = true }) .. "\n")
  end
  return res
end

return setmetatable(M, { __call = function(_, spec) return M.run(spec) end })
