-- wb.python: Python stacks read from outside CPython processes (3.11 from Debian, 3.12 and 3.13
-- where pyenv installed them), checked against planted ground truth: a 2:1 split of CPU between
-- two functions, a 0.3 s sleep, two threads, a forked child; the struct offsets against the
-- interpreters' own headers.
local T = require "wb.test"
local wb = require "wb"
local fs, proc = wb.fs, wb.proc
local py = require "wb.python"

local PY = dofile(T.root() .. "/tests/fixtures/python/interpreters.lua")
local DEBIAN, PYENV, pyenv = PY.DEBIAN, PY.PYENV, PY.pyenv

local function script(text)
  local path = T.tmpdir() .. "/script.py"
  assert(fs.write(path, text))
  return path
end

-- r = sampled(python, path, args, hz) : the sampler's result over the whole run of the script
local function sampled(python, path, args, hz)
  local argv = { python, path }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  local p = assert(proc.spawn { argv = argv, stdout = "null", stderr = "capture", timeout = 60 })
  local s = assert(py.sampler(p.pid, { hz = hz or 199 }))
  local res = p:wait()
  local r = s:stop()
  T.eq(res.code, 0, res.stderr)
  return r
end

-- Sum of the weights of the stacks (of kind "oncpu" or "offcpu") whose frames include pattern.
local function under(r, kind, pattern)
  local total = 0
  for stack, w in pairs(r[kind]) do
    if stack:find(pattern, 1, true) then total = total + w end
  end
  return total
end

local SPLIT = PY.SPLIT

-- The 2:1 split, within 5 points, of the on-CPU samples under py_alpha and py_beta.
local function check_split(python)
  local r = sampled(python, script(SPLIT), { "4" })
  -- each frame at the line it executes: py_alpha's call of leaf is line 8
  local a, b = under(r, "oncpu", ";py_alpha (script.py:8)"), under(r, "oncpu", ";py_beta (script.py:10)")
  -- 4 s at 199 Hz is 796 ticks; at least 300 samples keep the 5 points beyond 2.8 standard errors
  T.ok(a + b >= 300, string.format("%d samples of the two functions in %d ticks", a + b, r.ticks))
  local share = a / (a + b)
  T.ok(math.abs(share - 2 / 3) <= 0.05, string.format("py_alpha's share %.3f, planted 0.667", share))
  T.ok(under(r, "oncpu", "py_alpha (script.py:8);leaf (script.py:") > 0.9 * a, "leaf is under its caller")
  T.ok(under(r, "oncpu", ";leaf (script.py:4)") + under(r, "oncpu", ";leaf (script.py:5)") > 0.9 * (a + b),
    "leaf runs its loop, lines 4 and 5")
  -- a sample can catch a call before its first instruction (the def line) or the caller a line on
  local whole = 0
  for stack, n in pairs(r.oncpu) do
    if stack:find("^python %d+;main thread %d+;<module> %(script%.py:13%);py_alpha %(script%.py:8%)") then whole = whole + n end
  end
  T.ok(whole >= 0.95 * a, string.format("%d of %d samples under <module> (script.py:13);py_alpha (script.py:8)", whole, a))
  T.eq(#r.processes, 1)
  return r
end

T.case("Debian's python3 (3.11): a 2:1 split between two Python functions, within 5 points", function()
  local r = check_split(DEBIAN)
  T.match(r.processes[1].version, "^3%.11%.")
end)

T.case("CPython 3.12 (pyenv): the same split", function()
  local exe = pyenv(12)
  if not exe then T.skip("no CPython 3.12 under " .. PYENV .. " (pyenv)") end
  T.match(check_split(exe).processes[1].version, "^3%.12%.")
end)

T.case("CPython 3.13 (pyenv): the same split, offsets from its _Py_DebugOffsets", function()
  local exe = pyenv(13)
  if not exe then T.skip("no CPython 3.13 under " .. PYENV .. " (pyenv)") end
  T.match(check_split(exe).processes[1].version, "^3%.13%.")
end)

T.case("off-CPU: 0.3 s asleep under the function that sleeps, within 10%", function()
  local r = sampled(DEBIAN, script(PY.SLEEP))
  local slept = under(r, "offcpu", ";sleeper (script.py:3)")
  T.ok(math.abs(slept - 0.3) <= 0.03, string.format("%.3f s off-CPU under sleeper, planted 0.300", slept))
  T.ok(under(r, "oncpu", ";spinner (script.py:") >= 0.25 * 199, "the spinner is on-CPU")
  -- it holds the GIL: never blocked while spinning (waiting for a CPU, beside other work, is
  -- "[run queue]")
  local blocked = 0
  for stack, w in pairs(r.offcpu) do
    if stack:find(";spinner (", 1, true) and not stack:find(";[run queue]", 1, true) then blocked = blocked + w end
  end
  T.eq(blocked, 0, "never blocked while spinning")
end)

-- spin(seconds) prints the CPU and wall time it took itself (the interpreter's start is not under
-- it); the samples of the sampler at 199 Hz under spin, its CPU and wall time, the sampler's result
local function spinner(argv_prefix)
  local path = script("import time\ndef spin():\n    t = time.time()\n    while time.time() - t < 1.0:\n" ..
    "        pass\nc, w = time.process_time(), time.time()\nspin()\n" ..
    "print(time.process_time() - c, time.time() - w)\n")
  local argv = table.move(argv_prefix, 1, #argv_prefix, 1, {})
  argv[#argv + 1], argv[#argv + 2] = DEBIAN, path
  local p = assert(proc.spawn { argv = argv, stdout = "capture", stderr = "capture", timeout = 60 })
  local s = assert(py.sampler(p.pid, { hz = 199 }))
  local res = p:wait()
  local r = s:stop()
  T.eq(res.code, 0, res.stderr)
  local cpu, wall = res.stdout:match("^(%S+) (%S+)\n$")
  return under(r, "oncpu", ";spin (script.py:"), tonumber(cpu), tonumber(wall), r
end

T.case("a spinner: its on-CPU samples at 199 Hz are its CPU time within 10% (the kernel's CPU time moves at " ..
  "ticks: what one interval overflows is the next one's)", function()
  local on, cpu, wall = spinner({})
  T.near(on / 199, cpu, 0.1 * cpu + 2 / 199, string.format("%d samples under spin, its CPU time %.3f s (wall %.3f s)",
    on, cpu, wall))
end)

T.case("a spinner sharing one CPU with a busy loop: on-CPU samples follow its CPU time, not its wall time; " ..
  "the wait is under [run queue]", function()
  local hog = assert(proc.spawn { argv = { "taskset", "-c", "0", "sh", "-c", "while :; do :; done" } })
  local _ <close> = setmetatable({}, { __close = function() hog:kill(); hog:wait() end }) -- whatever fails below
  local on, cpu, wall, r = spinner({ "taskset", "-c", "0" })
  T.ok(cpu < 0.8 * wall, string.format("the busy loop took its share of the CPU: %.3f s CPU in %.3f s", cpu, wall))
  T.near(on / 199, cpu, 0.1 * cpu + 2 / 199, string.format("%d samples under spin at 199 Hz, its CPU time %.3f s " ..
    "(wall %.3f s)", on, cpu, wall))
  local waited, blocked = 0, 0
  for stack, w in pairs(r.offcpu) do
    if stack:find(";spin (script.py:", 1, true) then
      waited = waited + w
      if not stack:find(";[run queue]", 1, true) then blocked = blocked + w end
    end
  end
  T.near(waited, wall - cpu, 0.1 * (wall - cpu) + 2 / 199, "seconds off the CPU under spin")
  T.ok(blocked <= 0.05 * waited, string.format("%.3f s of them blocked, not waiting for the CPU", blocked))
end)

T.case("threads: each thread's own Python stack", function()
  local r = sampled(DEBIAN, script(PY.THREADS))
  local tids = {}
  for stack in pairs(r.oncpu) do
    if stack:find(";work_a (script.py:", 1, true) then tids[stack:match(";thread (%d+);")] = "a" end
  end
  for stack in pairs(r.offcpu) do
    if stack:find(";work_b (script.py:7)", 1, true) then tids[stack:match(";thread (%d+);")] = "b" end
  end
  local seen = {}
  for _, v in pairs(tids) do seen[v] = true end
  local shown = {}
  for stack, w in pairs(r.oncpu) do shown[#shown + 1] = "on " .. w .. " " .. stack end
  for stack, w in pairs(r.offcpu) do shown[#shown + 1] = "off " .. w .. " " .. stack end
  T.ok(seen.a and seen.b, "work_a on-CPU and work_b off-CPU in threads of their own:\n" .. table.concat(shown, "\n"))
  T.ok(under(r, "offcpu", ";work_b (script.py:7)") > 0.8, "work_b's second asleep")
  T.ok(under(r, "offcpu", "main thread") > 0.8, "the main thread waits in join")
end)

T.case("a forked child (multiprocessing): its Python stacks too, under its own pid", function()
  local r = sampled(DEBIAN, script(PY.FORK))
  T.ok(#r.processes >= 2, "parent and child attached")
  local pids, n = {}, 0
  for stack, w in pairs(r.oncpu) do
    if stack:find(";child_work (script.py:", 1, true) then
      pids[tonumber(stack:match("^python (%d+);"))] = true
      n = n + w
    end
  end
  T.ok(n >= 100, n .. " samples of the child's child_work on-CPU")
  T.ok(next(pids) and not pids[r.processes[1].pid], "under the child's pid")
end)

T.case("what is not CPython 3.11+ is detected and said, never mis-read", function()
  local p = assert(proc.spawn { argv = { "sleep", "5" } })
  local info, err = py.probe(p.pid)
  T.eq(info, nil)
  T.match(err, "^pid %d+: no CPython image %(python3%.X or libpython3%.X%.so%) in its mappings$")
  p:kill(9)
  p:wait()
  local old = pyenv(10)
  if old then -- 3.10 has no Py_Version
    local q = assert(proc.spawn { argv = { old, "-c", "import time; time.sleep(5)" } })
    wb.clock.sleep(0.3)
    info, err = py.probe(q.pid)
    T.eq(info, nil)
    T.match(err, "CPython before 3%.11")
    q:kill(9)
    q:wait()
  end
  T.eq(py.layout(10), nil)
end)

-- The offsets of py.layout(minor) against offsetof() of the interpreter's own headers.
local FIELDS = {
  runtime_interpreters_head = "_PyRuntimeState, interpreters.head",
  interp_next = "PyInterpreterState, next", interp_threads_head = "PyInterpreterState, threads.head",
  tstate_next = "PyThreadState, next", tstate_native_thread_id = "PyThreadState, native_thread_id",
  tstate_cframe = "PyThreadState, cframe", cframe_current_frame = "_PyCFrame, current_frame",
  frame_previous = "_PyInterpreterFrame, previous", frame_code = "_PyInterpreterFrame, f_code",
  frame_owner = "_PyInterpreterFrame, owner", code_filename = "PyCodeObject, co_filename",
  code_qualname = "PyCodeObject, co_qualname", code_firstlineno = "PyCodeObject, co_firstlineno",
  unicode_length = "PyASCIIObject, length", unicode_state = "PyASCIIObject, state",
  frame_instr = "_PyInterpreterFrame, prev_instr", code_linetable = "PyCodeObject, co_linetable",
  code_adaptive = "PyCodeObject, co_code_adaptive", bytes_size = "PyVarObject, ob_size",
  bytes_sval = "PyBytesObject, ob_sval",
}
-- and the fields of one version only: C expressions
local ONLY = {
  [11] = { frame_is_entry = "offsetof(_PyInterpreterFrame, is_entry)", runtime_gil = "offsetof(_PyRuntimeState, ceval.gil)" },
  [12] = { owner_cstack = "FRAME_OWNED_BY_CSTACK", interp_gil_ptr = "offsetof(PyInterpreterState, ceval.gil)" },
}

local function check_headers(minor, include)
  local names = {}
  for k in pairs(FIELDS) do names[#names + 1] = k end
  table.sort(names)
  local c = { "#define Py_BUILD_CORE 1", "#include <Python.h>", "#include <internal/pycore_runtime.h>",
    "#include <internal/pycore_interp.h>", "#include <internal/pycore_frame.h>", "#include <stddef.h>",
    "#include <stdio.h>", "int main(void) {" }
  for _, k in ipairs(names) do
    c[#c + 1] = string.format('  printf("%s %%zu\\n", offsetof(%s));', k, FIELDS[k])
  end
  local only = {}
  for k in pairs(ONLY[minor]) do only[#only + 1] = k end
  table.sort(only)
  for _, k in ipairs(only) do
    c[#c + 1] = string.format('  printf("%s %%zu\\n", (size_t)(%s));', k, ONLY[minor][k])
  end
  c[#c + 1] = '  printf("gil_size %zu\\n", sizeof(struct _gil_runtime_state));'
  c[#c + 1] = '  printf("ascii_size %zu\\ncompact_size %zu\\n", sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject));'
  c[#c + 1] = "  return 0;\n}\n"
  local d = T.tmpdir()
  assert(fs.write(d .. "/off.c", table.concat(c, "\n")))
  local cc = assert(proc.run { argv = { "cc", "-I" .. include, d .. "/off.c", "-o", d .. "/off" }, stderr = "capture" })
  T.eq(cc.code, 0, cc.stderr)
  local out = assert(proc.run { argv = { d .. "/off" }, stdout = "capture" }).stdout
  local lay = assert(py.layout(minor))
  local n = 0
  for k, v in out:gmatch("(%S+) (%d+)") do
    T.eq(lay[k], tonumber(v), string.format("3.%d %s", minor, k))
    n = n + 1
  end
  T.eq(n, #names + #only + 3)
end

T.case("the 3.11 and 3.12 offsets are those of the interpreters' own headers", function()
  local inc11 = "/usr/include/python3.11"
  if not fs.exists(inc11 .. "/internal/pycore_frame.h") then
    T.skip("no CPython 3.11 internal headers (Debian package python3.11-dev)")
  end
  check_headers(11, inc11)
  local exe = pyenv(12)
  if exe then check_headers(12, (exe:gsub("/bin/python3%.12$", "/include/python3.12"))) end
end)

T.case("wb.capture with method=perf_event: the separate sampler's Python profiles, said so", function()
  local path = script(SPLIT)
  local dir = T.tmpdir()
  -- 4 s at 299 Hz: about 1200 samples, the 5 points beyond 3.5 standard errors
  local res = assert(require("wb.capture").run { argv = { DEBIAN, path, "4" }, dir = dir, name = "cap",
    stdout = "null", counters = false, freq = 299, method = "perf_event" })
  if res.method ~= "perf_event" then T.skip("perf_event sampling unavailable: " .. tostring(res.fallback)) end
  T.eq(res.python.source, "sampler")
  local share = {}
  for _, row in ipairs(res.python.oncpu.top) do share[row.name] = row.total_fraction end
  local a, b = share["py_alpha (script.py:8)"], share["py_beta (script.py:10)"]
  T.ok(a and b and math.abs(a / (a + b) - 2 / 3) <= 0.05, string.format("py_alpha %.3f of the two", a / (a + b)))
  local svg = assert(fs.read(dir .. "/cap.python.oncpu.svg"))
  T.match(svg, "py_alpha %(script%.py:8%)")
  T.match(assert(fs.read(dir .. "/cap.python.oncpu.folded")), "\n?python %d+;main thread %d+;<module> %(script%.py:13%);py_alpha")
  local report = require("wb.capture_report").text(res, { top = 10 })
  T.match(report, "Python frames: sampled apart from the native stacks")
end)

T.case("a program that is not Python gets no Python profile and no warning about it", function()
  local res = assert(require("wb.capture").run { argv = { "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done" },
    stdout = "null", counters = false })
  T.eq(res.python, nil)
  for _, w in ipairs(res.warnings) do T.ok(not w:find("Python", 1, true), w) end
end)

T.case("cProfile pass (profile_app_full tool.cprofile=true): the .prof, its table, the planted 0.2 s wait", function()
  local cp = require "wb.cprofile"
  T.eq({ cp.python_of({ "/usr/bin/python3", "-u", "-X", "dev", "app.py", "x" }) },
    { "/usr/bin/python3", { "-u", "-X", "dev" }, { "app.py", "x" } })
  T.eq(select(2, cp.python_of({ "./app" })), "not a Python command (./app): a cProfile pass needs python3 SCRIPT ...")
  T.match(select(2, cp.python_of({ "python3", "-m", "pkg" })), "needs a script file, not %-m$")
  local path = script([[
import time
def compute(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def wait():
    time.sleep(0.2)
compute(2000000)
wait()
]])
  local dir = T.tmpdir() .. "/run"
  local res = T.wb({ "run", T.root() .. "/recipes/profile_app_full.lua", "-o", dir, "tool.command=[" .. DEBIAN .. ", " .. path .. "]",
    "tool.summary_path=null", "tool.cprofile=true", "tool.trials=2", "tool.warmup=0" }, { cwd = T.root(), timeout = 120 })
  T.eq(res.code, 0, res.stderr)
  local doc = assert(require("wb.json").read(dir .. "/summary.json"))
  local by = {}
  for _, r in ipairs(doc.cprofile.top) do by[r.name] = r end
  T.ok(math.abs(by.wait.cumulative_seconds - 0.2) <= 0.02, "wait: " .. by.wait.cumulative_seconds .. " s, planted 0.2")
  T.eq({ by.wait.line, by.compute.calls }, { 7, 1 })
  T.ok(fs.exists(dir .. "/profiles/cprofile.prof"), "the .prof is kept for pstats and snakeviz")
  T.match(assert(fs.read(dir .. "/profiles/cprofile.txt")), "| wait %(script%.py:7%) +|")
  T.match(res.stdout, "## cProfile %(deterministic; cumulative time, profiles/cprofile%.prof%)")
  T.match(res.stdout, "## Python functions %(sampled on%-CPU")
  local m = T.manifest(dir)
  local seen = {}
  for _, p in ipairs(m.profilers) do seen[p.name] = p.available end
  T.eq(seen.python_cprofile, true)
end)

T.case("a python3.X image without the interpreter's symbols (stripped, or no CPython) is reported, not read", function()
  local d = T.tmpdir()
  local fake = d .. "/python3.11"
  assert(fs.write(fake, assert(fs.read("/bin/sleep"))))
  assert(proc.run { argv = { "chmod", "755", fake } })
  local p = assert(proc.spawn { argv = { fake, "3" } })
  wb.clock.sleep(0.2)
  local info, err = py.probe(p.pid)
  T.eq(info, nil)
  T.eq(err, "pid " .. p.pid .. ": " .. fake .. " has no _PyRuntime or PyCode_Type symbol (stripped?)")
  p:kill(9)
  p:wait()
  local res = assert(require("wb.capture").run { argv = { fake, "0.5" }, counters = false, oncpu = false, offcpu = false })
  T.eq(res.python, { skipped = fake .. " has no _PyRuntime or PyCode_Type symbol (stripped?)" })
  local said = false
  for _, w in ipairs(res.warnings) do said = said or w == "no Python frames: " .. res.python.skipped end
  T.ok(said, "the warning says why there are no Python frames")
end)
