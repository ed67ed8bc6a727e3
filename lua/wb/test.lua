-- A small test harness run by wb itself: `wb test tests/lua/x_test.lua ...`.
-- A test file calls T.case(name, fn) for each case; fn fails by raising (T.eq, T.ok, ...) and
-- may call T.skip(reason), the reason naming what is missing. Prints `ok`/`not ok`/`skip` lines
-- and ends with `N passed, N failed, N skipped`; exit status 1 when any case failed. A file that
-- registers no case fails, and so does a WB_TEST_FILTER that matches no case. The numeric
-- assertions (T.near, T.between, T.finite) fail on NaN and infinities unless told
-- `{nonfinite = true}`.
local fs, json, proc, clock = require "wb.fs", require "wb.json", require "wb.proc", require "wb.clock"

local M = {}

local cases, final_cases = {}, {}
local SKIP = {}

function M.case(name, fn) cases[#cases + 1] = { name = name, fn = fn, file = M.current_file } end

-- A case that runs after every M.case of every file of the run (final cases in the order
-- registered): for one that must wait, or must not disturb the others.
function M.final_case(name, fn) final_cases[#final_cases + 1] = { name = name, fn = fn, file = M.current_file } end

function M.skip(reason)
  if type(reason) ~= "string" or not reason:find("%S") then
    error("T.skip needs a reason naming what is missing", 2)
  end
  error(setmetatable({ reason = reason }, SKIP), 0)
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. show(v[k]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end
M.show = show

local deep_equal = require("wb.util").deep_equal
M.deep_equal = deep_equal

function M.eq(actual, expected, msg)
  if not deep_equal(actual, expected) then
    error((msg and msg .. ": " or "") .. "expected " .. show(expected) .. ", got " .. show(actual), 2)
  end
end

function M.ok(cond, msg)
  if not cond then error(msg or "assertion failed", 2) end
  return cond
end

local function finite(x) return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge end
M.isfinite = finite

-- msg is a string, or a table {msg = string, nonfinite = true}; nonfinite lets a numeric
-- assertion accept NaN or an infinity where the expectation itself is one.
local function options(msg)
  if type(msg) == "table" then return msg.msg and msg.msg .. ": " or "", msg.nonfinite end
  return msg and msg .. ": " or "", false
end

-- T.near(actual, expected, tol [, msg]) : |actual - expected| <= tol, all three finite. With
-- {nonfinite = true}, a non-finite expected matches the same value (NaN matches NaN).
function M.near(actual, expected, tol, msg)
  local prefix, nonfinite = options(msg)
  local good
  if nonfinite and type(actual) == "number" and not finite(expected) then
    good = actual == expected or (actual ~= actual and expected ~= expected)
  else
    good = finite(actual) and finite(expected) and finite(tol) and tol >= 0 and math.abs(actual - expected) <= tol
  end
  if not good then
    error(string.format("%sexpected %s ± %s, got %s", prefix, tostring(expected), tostring(tol), tostring(actual)), 2)
  end
  return actual
end

-- u, normal = T.seeded(seed) : generators of [0, 1) floats and of standard normals (Box-Muller)
-- from a 64-bit LCG, apart from math.random: the same figures on every run
function M.seeded(seed)
  local s = seed
  local function u()
    s = (s * 6364136223846793005 + 1442695040888963407) -- wraps modulo 2^64
    return ((s >> 11) & ((1 << 53) - 1)) / (1 << 53)
  end
  local function normal() return math.sqrt(-2 * math.log(1 - u())) * math.cos(2 * math.pi * u()) end
  return u, normal
end

-- T.between(actual, lo, hi [, msg]) : lo <= actual <= hi, all finite (lo or hi may be
-- -math.huge/math.huge for an open side; actual must still be finite unless {nonfinite = true}).
function M.between(actual, lo, hi, msg)
  local prefix, nonfinite = options(msg)
  local good = type(actual) == "number" and type(lo) == "number" and type(hi) == "number" and lo == lo and hi == hi
      and (nonfinite or finite(actual)) and actual >= lo and actual <= hi
  if not good then
    error(string.format("%sexpected a value in [%s, %s], got %s", prefix, tostring(lo), tostring(hi), tostring(actual)), 2)
  end
  return actual
end

-- T.finite(actual [, msg]) : a number that is neither NaN nor an infinity.
function M.finite(actual, msg)
  if not finite(actual) then error(options(msg) .. "expected a finite number, got " .. show(actual), 2) end
  return actual
end

function M.match(s, pattern, msg)
  if type(s) ~= "string" or not s:find(pattern) then
    error((msg and msg .. ": " or "") .. "expected a match for " .. show(pattern) .. " in " .. show(s), 2)
  end
end

-- Calls fn and checks that it raises an error whose message matches pattern (plain find).
function M.raises(fn, pattern, ...)
  local ok, err = pcall(fn, ...)
  if ok then error("expected an error matching " .. show(pattern) .. ", none raised", 2) end
  local msg = type(err) == "table" and (err.msg or tostring(err)) or tostring(err)
  if pattern and not msg:find(pattern, 1, true) then
    error("expected an error matching " .. show(pattern) .. ", got " .. show(msg), 2)
  end
  return err
end

-- The number of occurrences of plain (a plain string, not a pattern) in s.
function M.count(s, plain)
  local n, i = 0, 1
  while true do
    local a, b = s:find(plain, i, true)
    if not a then return n end
    n, i = n + 1, b + 1
  end
end

-- A fresh temporary directory, removed when the run ends.
local tmpdirs = {}
-- line = test.probe_frame(folded) : the first folded line holding a frame of wb's own BPF probes
-- (run from a perf_event overflow and the sched raw tracepoints: a frame that starts with one of
-- their names), or nil; another tool's BPF trampoline (__bpf_prog_enter_recur) is the program's
-- own time and may show
function M.probe_frame(text)
  local probes = { "bpf_prog_", "bpf_overflow_handler", "bpf_trace_run", "__bpf_trace_" }
  for line in text:gmatch("[^\n]+") do
    for frame in line:gmatch("[^;]+") do
      for _, probe in ipairs(probes) do
        if frame:sub(1, #probe) == probe then return line end
      end
    end
  end
  return nil
end

function M.tmpdir()
  local dir = assert(fs.tmpdir("wbtest", "/tmp"))
  tmpdirs[#tmpdirs + 1] = dir
  return dir
end

-- The wb binary under test.
function M.wb_binary() return os.getenv("WB_BIN") or require("wb.core").exe_path() end

-- The repository root ($WB_ROOT, else the current directory).
function M.root() return os.getenv("WB_ROOT") or fs.cwd() end

-- The path of a bundled example program: ROOT/$WB_BUILD/examples/name.
function M.example(name) return M.root() .. "/" .. (os.getenv("WB_BUILD") or "build") .. "/examples/" .. name end

-- Whether this process runs as root (real uid 0).
function M.is_root() return (assert(fs.read("/proc/self/status")):match("\nUid:%s+(%d+)")) == "0" end

-- res = T.wb(args [, {env, cwd, stdin, timeout = 60}]) : runs the wb binary under test with args,
-- stdout and stderr captured.
function M.wb(args, opts)
  opts = opts or {}
  return assert(proc.run { argv = { M.wb_binary(), table.unpack(args) }, env = opts.env, cwd = opts.cwd,
    stdin = opts.stdin, timeout = opts.timeout or 60, stdout = "capture", stderr = "capture" })
end

-- out = T.sh(cmd [, cwd]) : runs `sh -c cmd` (in cwd) to its end; its stdout without trailing
-- space; fails the case with its stderr unless it exits 0
function M.sh(cmd, cwd)
  local res = assert(proc.run { argv = { "sh", "-c", cmd }, cwd = cwd, stdout = "capture", stderr = "capture", timeout = 120 })
  if not res.ok then error(cmd .. ": " .. res.stderr, 2) end
  return (res.stdout:gsub("%s+$", ""))
end

-- values = T.pluck(list, key) : list[i][key] for each item, in order
function M.pluck(list, key)
  local out = {}
  for i, v in ipairs(list) do out[i] = v[key] end
  return out
end

-- The decoded manifest.json of a run directory, with its journal folded in (campaign.read_manifest).
function M.manifest(dir) return assert(require("wb.campaign").read_manifest(dir .. "/manifest.json")) end

-- The events of a run directory's events.jsonl, those named name when given.
function M.events(dir, name)
  local out = {}
  for line in (fs.read(dir .. "/events.jsonl") or ""):gmatch("[^\n]+") do
    local e = json.decode(line)
    if e and (not name or e.event == name) then out[#out + 1] = e end
  end
  return out
end

-- Polls fn every 0.1 s until it returns a true value, which it returns; fails after timeout
-- seconds, or as soon as the wb process p (when given) has exited.
function M.wait_until(what, timeout, fn, p)
  local t = clock.timer()
  while true do
    local v = fn()
    if v then return v end
    if p and not p:running() then
      local res = p:wait()
      error("wb exited " .. tostring(res.code) .. " before " .. what .. ": " .. tostring(res.stderr), 2)
    end
    if t:elapsed() > timeout then error("timed out after " .. timeout .. " s waiting for " .. what, 2) end
    clock.sleep(0.1)
  end
end

local function run_case(c, counts)
  local ok, err = xpcall(c.fn, function(e)
    if getmetatable(e) == SKIP then return e end
    if type(e) == "table" then e = e.msg or tostring(e) end
    return debug.traceback(tostring(e), 2)
  end)
  local label = c.file:match("([^/]+)$") .. ": " .. c.name
  if ok then
    counts.passed = counts.passed + 1
    io.write("ok - ", label, "\n")
  elseif getmetatable(err) == SKIP then
    counts.skipped = counts.skipped + 1
    io.write("skip - ", label, ": skipped: ", err.reason, "\n")
  else
    counts.failed = counts.failed + 1
    io.write("not ok - ", label, "\n    ", (tostring(err):gsub("\n", "\n    ")), "\n")
  end
  io.flush()
end

function M.main(files)
  if #files == 0 then require("wb.errors").raise(2, "test: no test files given", 0) end
  local counts = { passed = 0, failed = 0, skipped = 0 }
  local loaded = {}
  for _, file in ipairs(files) do
    M.current_file = file
    local before = #cases + #final_cases
    local chunk, err = loadfile(file)
    local ok, lerr = chunk ~= nil, err
    if chunk then ok, lerr = xpcall(chunk, debug.traceback) end
    if not ok then
      io.write("not ok - ", file, ": ", tostring(lerr), "\n")
      counts.failed = counts.failed + 1
    elseif #cases + #final_cases == before then
      io.write("not ok - ", file, ": the file registers no test case\n")
      counts.failed = counts.failed + 1
    end
    loaded[#loaded + 1] = file
  end
  local filter = os.getenv("WB_TEST_FILTER")
  if filter == "" then filter = nil end
  local matched = 0
  for _, c in ipairs(final_cases) do cases[#cases + 1] = c end
  final_cases = {}
  for _, c in ipairs(cases) do
    if not filter or c.name:find(filter, 1, true) then
      matched = matched + 1
      run_case(c, counts)
    end
  end
  if filter and matched == 0 and #cases > 0 then
    io.write("not ok - WB_TEST_FILTER=", filter, " matches none of the ", #cases, " cases of ",
      table.concat(loaded, " "), "\n")
    counts.failed = counts.failed + 1
  end
  for _, d in ipairs(tmpdirs) do fs.remove_tree(d) end
  io.write(string.format("%d passed, %d failed, %d skipped\n", counts.passed, counts.failed, counts.skipped))
  return counts.failed > 0 and 1 or 0
end

return M
