-- Python frames merged into the native stacks (wb.capture with eBPF: the BPF program reads the
-- frame chain with each sample, lua/wb/capture_python.lua merges), checked against planted ground
-- truth in scripts the tests write: a 2:1 split between two Python functions, a 0.3 s sleep, a C
-- extension the test compiles, threads, a multiprocessing child, the GIL; on Debian's python3
-- (3.11) and on pyenv's 3.12 and 3.13 where installed.
local T = require "wb.test"
local wb = require "wb"
local fs, proc = wb.fs, wb.proc
local capture = require "wb.capture"
local cpy = require "wb.capture_python"

local PY = dofile(T.root() .. "/tests/fixtures/python/interpreters.lua")
local DEBIAN, PYENV, pyenv = PY.DEBIAN, PY.PYENV, PY.pyenv

-- The BPF capture, or a skip saying why it cannot run here.
local function need_bpf()
  local ok, why = wb.bpf.available()
  if not ok then T.skip("eBPF: " .. why) end
end

local function script(text, dir)
  local path = (dir or T.tmpdir()) .. "/script.py"
  assert(fs.write(path, text))
  return path
end

-- res = run(argv [, freq]) : the capture of argv, its outputs in a fresh directory (res.dir)
local function run(argv, freq)
  local dir = T.tmpdir()
  local res = assert(capture.run { argv = argv, dir = dir, name = "cap", stdout = "null", stderr = "null",
    counters = false, freq = freq or 199, memory = false })
  T.eq(res.method, "bpf", res.fallback)
  T.eq(res.python and res.python.source, "bpf", "the Python frames were read with each sample")
  res.dir = dir
  return res
end

-- The count of the folded stacks of text (of which every pattern, a plain string, is a part, in
-- the order given) and the total.
local function under(text, ...)
  local pats, n, total = { ... }, 0, 0
  for line in text:gmatch("[^\n]+") do
    local stack, c = line:match("^(.*) (%d+)$")
    total = total + tonumber(c)
    local at, ok = 1, true
    for _, p in ipairs(pats) do
      local s, e = stack:find(p, at, true)
      if not s then
        ok = false
        break
      end
      at = e -- a pattern's last ';' can begin the next one
    end
    if ok then n = n + tonumber(c) end
  end
  return n, total
end

local SPLIT = PY.SPLIT

-- The 2:1 split in the merged on-CPU stacks, within 5 points; Python frames where the
-- interpreter's loop was, under the native frames that called it (the stack reaches main).
local function check_split(python, version)
  need_bpf()
  local res = run({ python, script(SPLIT), "4" }, 299)
  T.match(res.python.processes[1].version, "^" .. version:gsub("%.", "%%.") .. "%.")
  local text = res.oncpu.folded_text
  local a = under(text, ";<module> (script.py:13);py_alpha (script.py:8);leaf (script.py:")
  local b = under(text, ";<module> (script.py:14);py_beta (script.py:10);leaf (script.py:")
  -- 4 s at 299 Hz: about 1200 samples, the 5 points beyond 3.5 standard errors
  T.ok(a + b >= 600, string.format("%d samples of the two functions of %d", a + b, res.oncpu.samples))
  T.ok(math.abs(a / (a + b) - 2 / 3) <= 0.05, string.format("py_alpha's share %.3f, planted 0.667", a / (a + b)))
  T.ok(under(text, ";Py_BytesMain;", ";<module> (script.py:1") >= 0.9 * (a + b), "native main under the Python frames")
  local left = under(text, "_PyEval_EvalFrameDefault;")
  T.ok(left <= 0.05 * res.oncpu.samples, left .. " samples still show an interpreter loop with frames above it")
  T.ok(res.python.unplaced <= 0.05 * res.python.samples_merged, string.format("%d of %d samples' Python frames "
    .. "found no eval frame (a native walk that stopped early)", res.python.unplaced, res.python.samples_merged))
  T.match(assert(fs.read(res.dir .. "/cap.oncpu.svg")), "py_alpha %(script%.py:8%)")
  -- the python view: Python frames only
  local share = {}
  for _, row in ipairs(res.python.oncpu.top) do share[row.name] = row.total_fraction end
  local pa, pb = share["py_alpha (script.py:8)"], share["py_beta (script.py:10)"]
  T.ok(pa and pb and math.abs(pa / (pa + pb) - 2 / 3) <= 0.05, "the python view's split")
  T.match(assert(fs.read(res.dir .. "/cap.python.oncpu.folded")), "\npython3[.%d]*;<module> %(script%.py:13%);py_alpha %(script%.py:8%);leaf")
  return res
end

T.case("Debian's python3 (3.11): a 2:1 split between two Python functions in the merged stacks", function()
  check_split(DEBIAN, "3.11")
end)

T.case("CPython 3.12 (pyenv): the same split, merged at its C-stack entry frames", function()
  local exe = pyenv(12)
  if not exe then T.skip("no CPython 3.12 under " .. PYENV .. " (pyenv)") end
  check_split(exe, "3.12")
end)

T.case("CPython 3.13 (pyenv): the same split, offsets from its _Py_DebugOffsets", function()
  local exe = pyenv(13)
  if not exe then T.skip("no CPython 3.13 under " .. PYENV .. " (pyenv)") end
  check_split(exe, "3.13")
end)

T.case("off-CPU: 0.3 s asleep under the Python function that sleeps, within 10%", function()
  need_bpf()
  local res = run({ DEBIAN, script(PY.SLEEP) })
  local slept = under(res.offcpu.folded_text, ";sleeper (script.py:3);") / 1e9
  T.ok(math.abs(slept - 0.3) <= 0.03, string.format("%.3f s off-CPU under sleeper, planted 0.300", slept))
  T.ok(under(res.offcpu.folded_text, ";sleeper (script.py:3);", "clock_nanosleep") / 1e9 >= 0.27,
    "the native sleep under it")
  local py = under(assert(fs.read(res.dir .. "/cap.python.offcpu.folded")), ";sleeper (script.py:3)") / 1e9
  T.ok(math.abs(py - 0.3) <= 0.03, string.format("%.3f s in the python view", py))
  T.ok(under(res.oncpu.folded_text, ";spinner (script.py:") >= 0.1 * 199, "the spinner is on-CPU")
end)

local EXT = [[
#define PY_SSIZE_T_CLEAN
#include <Python.h>
__attribute__((noinline)) double wb_hot_native(long n) {
  volatile double s = 0;
  for (long i = 0; i < n; i++) s += i * 0.5;
  return s;
}
static PyObject *spin(PyObject *self, PyObject *arg) {
  (void)self;
  return PyFloat_FromDouble(wb_hot_native(PyLong_AsLong(arg)));
}
static PyMethodDef methods[] = {{"spin", spin, METH_O, "burn CPU"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "wbext", NULL, -1, methods};
PyMODINIT_FUNC PyInit_wbext(void) { return PyModule_Create(&module); }
]]

T.case("a C extension built by the test: its native frames under the Python function that called it", function()
  need_bpf()
  local include = "/usr/include/python3.11"
  if not fs.exists(include .. "/Python.h") then T.skip("no Python.h for 3.11 (Debian package python3-dev)") end
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/wbext.c", EXT))
  local cc = assert(proc.run { argv = { "cc", "-shared", "-fPIC", "-O2", "-g", "-I" .. include, dir .. "/wbext.c",
    "-o", dir .. "/wbext.so" }, stderr = "capture" })
  T.eq(cc.code, 0, cc.stderr)
  local res = run({ DEBIAN, script([[
import sys, time
sys.path.insert(0, sys.argv[2])
import wbext
def py_caller():
    return wbext.spin(3000000)
end = time.process_time() + float(sys.argv[1])
while time.process_time() < end:
    py_caller()
]], dir), "2", dir })
  local text = res.oncpu.folded_text
  local hot = under(text, ";wb_hot_native")
  T.ok(hot >= 100, hot .. " samples in wb_hot_native")
  local placed = under(text, ";<module> (script.py:8);py_caller (script.py:5);", ";spin;wb_hot_native")
  T.ok(placed >= 0.9 * hot, string.format("%d of %d under py_caller (script.py:5) -> spin", placed, hot))
  -- the python view folds the native leaf into its caller
  local row = res.python.oncpu.top[1]
  T.eq(row.name, "py_caller (script.py:5)")
  T.ok(row.self_fraction >= 0.8, "py_caller's self share in the python view " .. row.self_fraction)
end)

T.case("threads: each thread's own Python stack over its native thread entry", function()
  need_bpf()
  local res = run({ DEBIAN, script(PY.THREADS) })
  local a = under(res.oncpu.folded_text, ";start_thread;", ";Thread._bootstrap (threading.py:", ";work_a (script.py:")
  T.ok(a >= 0.5 * 199, a .. " samples of work_a in its thread")
  local b = under(res.offcpu.folded_text, ";start_thread;", ";work_b (script.py:7);") / 1e9
  T.ok(b >= 0.9, b .. " s of work_b asleep in its thread")
  local main = under(res.offcpu.folded_text, ";Py_BytesMain;", ";<module> (script.py:9);Thread.join (threading.py:") / 1e9
  T.ok(main >= 0.9, main .. " s of the main thread in join")
  -- CPython 3.11 gives a new thread's state its creator's native id until the thread starts: a
  -- sample of the main thread in that window can read the new state (one of ~200 was seen once)
  local stray = under(res.oncpu.folded_text, ";Py_BytesMain;", ";work_a (")
  T.ok(stray <= 0.02 * a, stray .. " samples of work_a under the main thread")
end)

T.case("a multiprocessing child: its Python frames under its own pid", function()
  need_bpf()
  local res = run({ DEBIAN, script(PY.FORK) })
  local parent = res.result.pid -- the command's own process (python.processes is in the order they were found)
  local n, pids, stray = 0, {}, {}
  for line in res.oncpu.folded_text:gmatch("[^\n]+") do
    local pid = line:match("^python3%-(%d+);")
    if line:find(";child_work (script.py:", 1, true) then
      n = n + tonumber(line:match(" (%d+)$"))
      pids[tonumber(pid)] = true
      if tonumber(pid) == parent and #stray < 3 then stray[#stray + 1] = line end
    end
  end
  T.ok(n >= 0.4 * 199, n .. " samples of child_work")
  T.ok(next(pids) and not pids[parent], "under the child's pid, not the parent's " .. parent .. " ("
    .. n .. " samples of child_work; under the parent: " .. table.concat(stray, " | ") .. ")")
end)

T.case("the GIL: a CPU-bound thread waiting for it is marked, a sleeping one is not", function()
  need_bpf()
  local res = run({ DEBIAN, script([[
import threading, time
def spin_a():
    end = time.monotonic() + 1
    while time.monotonic() < end:
        pass
def spin_b():
    end = time.monotonic() + 1
    while time.monotonic() < end:
        pass
def nap():
    time.sleep(1)
ts = [threading.Thread(target=f) for f in (spin_a, spin_b, nap)]
for t in ts: t.start()
for t in ts: t.join()
]]) })
  local off = res.offcpu.folded_text
  -- two threads wanting the GIL for a second each: about a second waiting between them
  local waited = (under(off, ";spin_a (script.py:", cpy.GIL_WAIT) + under(off, ";spin_b (script.py:", cpy.GIL_WAIT)) / 1e9
  T.ok(waited >= 0.5, string.format("%.2f s waiting for the GIL under spin_a and spin_b", waited))
  local napped = under(off, ";nap (script.py:11);") / 1e9
  T.ok(napped >= 0.9, napped .. " s of nap asleep")
  T.ok(under(off, ";nap (script.py:11);", cpy.GIL_WAIT) / 1e9 <= 0.1 * napped, "the sleep is not a GIL wait")
  T.match(assert(fs.read(res.dir .. "/cap.python.offcpu.folded")), "spin_[ab] %(script%.py:%d+%);%[waiting for the GIL%] %d+")
end)

T.case("merge: Python frames replace the eval frames, leaf side first; without one they are put above, marked", function()
  local g = { { "inner (a.py:3)", "mid (a.py:7)" }, { "<module> (a.py:9)" } }
  T.eq({ cpy.merge({ "PyObject_Free", "helper (inlined)", "_PyEval_EvalFrameDefault", "cfunc",
    "_PyEval_EvalFrameDefault.cold", "main" }, g) },
    { { "PyObject_Free", "inner (a.py:3)", "mid (a.py:7)", "cfunc", "<module> (a.py:9)", "main" }, true })
  -- the native walk stopped before the outer eval frame: the outer call goes at the root end
  T.eq({ cpy.merge({ "x", "_PyEval_EvalFrameDefault" }, g) },
    { { "x", "inner (a.py:3)", "mid (a.py:7)", "<module> (a.py:9)" }, true })
  -- an interpreter whose symbols do not name its loop
  T.eq({ cpy.merge({ "python3.11+0x1234", "main" }, g) },
    { { "inner (a.py:3)", "mid (a.py:7)", "<module> (a.py:9)", cpy.UNPLACED, "python3.11+0x1234", "main" }, false })
end)

T.case("a python3.X image without the interpreter's symbols is reported with eBPF too, not read", function()
  need_bpf()
  local d = T.tmpdir()
  local fake = d .. "/python3.11"
  assert(fs.write(fake, assert(fs.read("/bin/sleep"))))
  assert(proc.run { argv = { "chmod", "755", fake } })
  local res = assert(capture.run { argv = { fake, "0.5" }, counters = false, memory = false })
  T.eq(res.method, "bpf")
  T.eq(res.python, { skipped = fake .. " has no _PyRuntime or PyCode_Type symbol (stripped?)" })
end)

T.case("wb profile: the merged flame graph and top table, and how the frames were read", function()
  need_bpf()
  local path = script(SPLIT)
  local out = T.tmpdir() .. "/run"
  local cli = T.wb({ "run", T.root() .. "/recipes/profile.lua", "-o", out, "--", DEBIAN, path, "2" }, { timeout = 60 })
  T.eq(cli.code, 0, cli.stderr)
  T.match(cli.stdout, "\nPython frames: read by the BPF program with each native sample")
  T.match(cli.stdout, "%%  py_alpha %(script%.py:8%)\n")
  T.match(assert(fs.read(out .. "/profiles/profile.oncpu.svg")), "py_alpha %(script%.py:8%)")
  T.match(assert(fs.read(out .. "/report.html")), "<h2>Python on%-CPU</h2>")
  local m = T.manifest(out)
  local r = m.runs[1]
  T.eq(r.python.source, "bpf")
  T.eq(r.profiles.python_oncpu.folded, "profiles/profile.python.oncpu.folded")
end)

T.case("CPython 3.12 -X perf: addresses in its trampolines are named from /tmp/perf-PID.map", function()
  local exe = pyenv(12)
  if not exe then T.skip("no CPython 3.12 under " .. PYENV .. " (pyenv)") end
  local p = assert(proc.spawn { argv = { exe, "-X", "perf", script([[
import time
def py_tramp():
    time.sleep(5)
py_tramp()
]]) } })
  local map = "/tmp/perf-" .. p.pid .. ".map"
  local text
  for _ = 1, 100 do
    text = fs.read(map)
    if text and text:find("py::py_tramp:", 1, true) then break end
    wb.clock.sleep(0.05)
  end
  local start, size = (text or ""):match("(%x+) (%x+) py::py_tramp:[^\n]*script%.py\n")
  T.ok(start, "the interpreter wrote its trampoline of py_tramp to " .. map)
  local s <close> = wb.sym.new()
  local names, unresolved = s:frames(p.pid, { tonumber(start, 16) + tonumber(size, 16) // 2 })
  p:kill(9)
  p:wait()
  fs.remove(map)
  T.match(names[1], "^py::py_tramp:.*script%.py$")
  T.eq(unresolved, 0)
end)
