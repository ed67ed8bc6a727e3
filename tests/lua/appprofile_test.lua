-- wb.appprofile in-process: callgrind_annotate's output, off-CPU waits from folded stacks, the
-- bottleneck model on planted trials and captures, and the notes of skipped passes. The recipe
-- end to end (trials, capture, callgrind, reports): tests/recipes/profile_app_full_test.lua.
local T = require "wb.test"
local wb = require "wb"
local app = require "wb.appprofile"

local MODEL = { cpu_bound = 0.8, functions = 10, waits = 5, top = 4 }

-- trials of the given walls and CPU times with stages {name = {seconds per trial}}
local function trials(walls, cpus, stages)
  local t = { wall = wb.stats.samples(), cpu = wb.stats.samples(), rss = wb.stats.samples(), stages = {}, order = {},
    warmup = 0 }
  for i, w in ipairs(walls) do
    t.wall:add(w)
    t.cpu:add(cpus[i])
    t.rss:add(1000)
  end
  for _, s in ipairs(stages or {}) do
    t.order[#t.order + 1] = s[1]
    t.stages[s[1]] = wb.stats.samples()
    for _, x in ipairs(s[2]) do t.stages[s[1]]:add(x) end
  end
  return t
end

T.case("argv: words as strings, {run_dir} replaced", function()
  T.eq(app.argv({ "prog", 3, "--out={run_dir}/x", "{run_dir}" }, "/r"), { "prog", "3", "--out=/r/x", "/r" })
end)

T.case("parse_callgrind: the total and the first functions, named with their file's base name", function()
  local text = table.concat({
    "Events shown:     Ir", "", "-----", "Ir", "-----", "2,000,000 (100.0%)  PROGRAM TOTALS", "", "-----",
    "Ir                   file:function", "-----",
    "1,000,000 (50.00%)  /src/app/main.c:parse [/build/app]",
    "  500,000 (25.00%)  ./math/s_sin.c:__sin_fma [/usr/lib/libm.so.6]",
    "  100,000 ( 5.00%)  ???:0x0000000000001040 [/usr/lib/ld.so]",
    "   50,000 ( 2.50%)  /src/app/util.c:tiny [/build/app]", "" }, "\n")
  local total, top = app.parse_callgrind(text, 3)
  T.eq(total, 2000000)
  T.eq(#top, 3)
  T.eq({ top[1].name, top[1].instructions, top[1].fraction }, { "parse (main.c)", 1000000, 0.5 })
  T.eq({ top[2].name, top[2].fraction }, { "__sin_fma (s_sin.c)", 0.25 })
  T.eq(top[3].name, "0x0000000000001040 (???)")
  local none, empty = app.parse_callgrind("no totals here\n", 15)
  T.eq({ none, empty }, { 0, {} })
end)

T.case("blocked_waits: seconds by the innermost user frame, kernel frames, the run queue and time without its " ..
  "stack left out", function()
  local folded = table.concat({
    "main;read_input;__read;entry_SYSCALL_64_[k];vfs_read_[k] 300000000",
    "main;read_input;__read 100000000",
    "main;sleep_a_bit;clock_nanosleep 250000000",
    "main;compute;[run queue] 900000000", "main;[stack lost] 700000000", "" }, "\n")
  local w = app.blocked_waits(folded)
  T.eq(#w, 2)
  T.eq(w[1].name, "__read")
  T.near(w[1].seconds, 0.4, 1e-12)
  T.eq(w[2].name, "clock_nanosleep")
  T.near(w[2].seconds, 0.25, 1e-12)
  T.eq(app.blocked_waits(nil), {})
  -- a Python program's wait is named by the Python code that waited, then the native frame
  local py = app.blocked_waits("python3;main (driver.py:9);run (subprocess.py:505);_wait;waitpid;do_wait_[k] 1000000000\n")
  T.eq(py[1].name, "run (subprocess.py:505): waitpid")
end)

T.case("bottlenecks: stage shares of the median trial with Amdahl bounds; CPU-bound at cpu_bound", function()
  local t = trials({ 1.0, 2.0, 1.2 }, { 0.9, 1.0, 0.96 }, { { "load", { 0.2, 0.3, 0.25 } }, { "solve", { 0.5, 1.5, 0.75 } } })
  local b = app.bottlenecks(t, nil, MODEL)
  T.eq({ b.wall_seconds, b.cpu_seconds, b.kind }, { 1.2, 0.96, "cpu-bound" })
  T.near(b.utilisation, 0.8, 1e-12)
  T.eq({ b.stages[1].name, b.stages[2].name }, { "solve", "load" })
  T.near(b.stages[1].fraction, 0.75 / 1.2, 1e-12)
  T.near(b.stages[1].amdahl, 1 / (1 - 0.75 / 1.2), 1e-12)
  T.eq(#b.first, 2)
  T.match(b.first[1].text, "^62%% in stage solve: removing it entirely gives at most 2%.7×$")
  T.match(b.verdict, "^CPU%-bound: the process tree is on a CPU for 80%% of the wall time")
  local waiting = app.bottlenecks(t, nil, { cpu_bound = 0.81, functions = 10, waits = 5, top = 1 })
  T.eq({ waiting.kind, #waiting.first }, { "waiting", 1 })
end)

T.case("bottlenecks: functions and waits from the capture, starved of CPU when the run queue dominates", function()
  local t = trials({ 1.0 }, { 0.4 })
  local cap = { result = { wall = 2.0, user = 0.5, sys = 0.3 },
    oncpu = { top = { { name = "hot", self_fraction = 0.5 }, { name = "cold", self_fraction = 0 } } },
    offcpu = { folded_text = "main;poll 600000000\nmain;work;[run queue] 700000000\n", blocked_seconds = 0.6,
      runqueue_seconds = 0.7 } }
  local b = app.bottlenecks(t, cap, MODEL)
  T.eq(b.capture_wall_seconds, 2.0)
  T.eq(#b.functions, 1, "a function without self time is left out")
  T.near(b.functions[1].fraction, 0.5 * 0.8 / 2.0, 1e-12)
  T.eq({ #b.waits, b.waits[1].name }, { 1, "poll" })
  T.near(b.waits[1].fraction, 0.3, 1e-12)
  T.eq(b.kind, "cpu-contention")
  T.eq(b.verdict, "CPU-starved: 700.0 ms runnable but not running (the machine was busy, or more threads than " ..
    "CPUs), so timings are inflated; on a CPU 40% of the wall time (400.0 ms CPU in 1.000 s), 600.0 ms blocked " ..
    "(sleep, I/O, locks).")
  T.eq({ b.first[1].what, b.first[1].name, b.first[2].name }, { "wait", "poll", "hot" })
end)

T.case("bottlenecks from a critical path: its functions, waits with their cause and run queue, no second twice; "
  .. "a stage names what fills it and absorbs the function inside it", function()
  local t = trials({ 2.0 }, { 1.2 }, { { "native", { 1.0 } }, { "wait", { 0.4 } } })
  local mark = "[woken by an interrupt: a timer or a device]"
  local cap = { result = { wall = 2.0, user = 1.0, sys = 0.2 }, critical = {
    wall_seconds = 2.0, by_kind = { oncpu = 1.4, runqueue = 0.2, wait = 0.4, unknown = 0 }, by_process = {},
    functions = { { name = "hot", fraction = 0.5, seconds = 1.0 }, { name = "own_work", fraction = 0.2, seconds = 0.4 } },
    folded_text = "helper;main;hot 1000000000\npy;own_work 400000000\npy;own_work;[run queue] 200000000\n"
      .. "py;main;clock_nanosleep;do_nanosleep_[k];" .. mark .. " 400000000\n",
    stages = {
      { name = "native", path_seconds = 1.0, top = { { name = "hot", seconds = 0.98 }, { name = "[on CPU, between samples]", seconds = 0.02 } },
        folded_text = "helper;main;hot 980000000\n" },
      { name = "wait", path_seconds = 0.4, top = { { name = mark, seconds = 0.4 } },
        folded_text = "py;main;clock_nanosleep;" .. mark .. " 400000000\n" },
    } } }
  local b = app.bottlenecks(t, cap, { cpu_bound = 0.8, functions = 10, waits = 5, top = 5 })
  T.eq(b.kind, "waiting", "on a CPU 70% of the path: not CPU-bound; the wait is larger than the run queue")
  T.eq({ #b.functions, b.functions[1].name }, { 2, "hot" }, "functions from the path's time on a CPU")
  T.eq({ #b.waits, b.waits[1].name, b.waits[1].cause }, { 1, "clock_nanosleep", mark }, "the wait with what ended it")
  local names = {}
  for _, f in ipairs(b.first) do names[#names + 1] = f.what .. " " .. f.name end
  T.eq(names, { "stage native", "function own_work", "stage wait", "the run queue waiting for a CPU (run queue)" },
    "hot is inside stage native and the sleep inside stage wait: each listed once, as its stage")
  T.match(b.first[1].text, "^50%% in stage native %(on the critical path mostly hot, 98%% of it%)")
  T.match(b.first[3].text, "^20%% in stage wait %(on the critical path mostly clock_nanosleep, 100%% of it%)")
end)

T.case("markdown: a skipped pass is a note even without a capture", function()
  local t = trials({ 1.0 }, { 0.9 })
  local r = { argv = { "app", "x y" }, trials = t, bottlenecks = app.bottlenecks(t, nil, MODEL),
    callgrind = { skipped = "callgrind_annotate is not on PATH" } }
  local md = app.markdown(r, { python = 10, cprofile = 15 })
  T.match(md, "^# Application profile\n\n`app 'x y'`\n")
  T.match(md, "\n## Notes\n\n%- skipped: callgrind_annotate is not on PATH\n$")
  local doc = app.summary(r)
  T.eq({ doc.schema_name, doc.trials.n, doc.capture, doc.callgrind.skipped },
    { "wb.profile_app", 1, wb.null, "callgrind_annotate is not on PATH" })
end)
