-- wb.capture, the profiler registry and `wb profile`: real eBPF, perf_event and perf CLI captures
-- of the bundled workload (examples/cpu_split: 2/3 of its CPU in spin_a, 1/3 in spin_b, then
-- sleep_phase blocks), as root and as an unprivileged user.
local T = require "wb.test"
local wb = require "wb"
local capture = require "wb.capture"
local fs = require "wb.fs"
local json = require "wb.json"
local proc = require "wb.proc"

local SPLIT = T.example("cpu_split")

-- `wb run recipes/profile.lua ARGS`
local function profile(args) return T.wb({ "run", T.root() .. "/recipes/profile.lua", table.unpack(args) }) end

local function need_bpf()
  local ok, why = wb.bpf.available()
  if not ok then T.skip("eBPF unavailable: " .. why) end
end

-- {root frame = {function = count including callees}} and the total, from folded text.
local function shares(folded)
  local by_root, total = {}, 0
  for line in folded:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    T.ok(stack, "a folded line: " .. line)
    n = tonumber(n)
    total = total + n
    local frames, seen = {}, {}
    for f in stack:gmatch("[^;]+") do frames[#frames + 1] = f end
    local r = by_root[frames[1]] or {}
    by_root[frames[1]] = r
    r[""] = (r[""] or 0) + n
    for i = 2, #frames do
      if not seen[frames[i]] then
        seen[frames[i]] = true
        r[frames[i]] = (r[frames[i]] or 0) + n
      end
    end
  end
  return by_root, total
end

-- The total count of stacks holding `fn` not ending in `last`.
local function under(folded, fn, last)
  local sum = 0
  for line in folded:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    if (";" .. stack .. ";"):find(";" .. fn .. ";", 1, true) and not stack:find(last, #stack - #last + 1, true) then
      sum = sum + tonumber(n)
    end
  end
  return sum
end

local function fraction(rows, name)
  for _, r in ipairs(rows) do
    if r.name == name then return r.total_fraction end
  end
  return 0
end

T.case("eBPF: the on-CPU split within ±5 points, 1.0 s off-CPU under sleep_phase, all outputs", function()
  need_bpf()
  local dir = T.tmpdir()
  local res = assert(wb.capture { argv = { SPLIT, "--cpu", "2.4", "--sleep", "1.0" }, freq = 499, dir = dir,
    name = "split", stdout = "capture" })
  T.eq(res.method, "bpf")
  T.ok(res.ok)
  T.match(res.result.stdout, "^checksum %x+\n$")
  local on, off = res.oncpu, res.offcpu
  T.ok(on.samples > 600, "samples: " .. on.samples)
  T.near(fraction(on.top, "spin_a"), 2 / 3, 0.05, "spin_a share")
  T.near(fraction(on.top, "spin_b"), 1 / 3, 0.05, "spin_b share")
  T.eq(on.top[1].name, "spin_a")
  T.eq(on.lost, 0)
  T.ok(on.unresolved_fraction < 0.05)
  local folded = fs.read(on.folded)
  T.eq(folded, on.folded_text)
  local by_root = shares(folded)
  T.eq(next(by_root), "cpu_split", "one process: the root frame is its name")
  T.ok(folded:find("cpu_split;[^\n]*main;run;spin_a %d+\n"))
  T.eq(off.unit, "ns")
  local slept = under(off.folded_text, "sleep_phase", require("wb.capture_fold").RUN_QUEUE) / 1e9
  -- when it fails, the stacks and the unwinder's counters (a CI run beside two hogs once read 0.0)
  T.near(slept, 1.0, 0.1, "off-CPU time under sleep_phase" .. (math.abs(slept - 1.0) > 0.1 and
    ("; off-CPU stacks:\n" .. off.folded_text:sub(1, 4000) .. "\nunwind: " .. wb.json.encode(off.unwind or {}) ..
      "; lost " .. tostring(off.lost)) or ""))
  T.ok(off.blocked_seconds >= 1.0 and off.total_seconds >= off.blocked_seconds)
  T.near(off.total_seconds, off.blocked_seconds + off.runqueue_seconds, 1e-6)
  T.ok(off.folded_text:find("sleep_phase;pause_for;__nanosleep;clock_nanosleep[^;]*;[^\n]*schedule_%[k%]"),
    "the sleep's caller in libc's frameless nanosleep (CFI unwinding, the default), then the kernel frames")
  T.ok(not T.probe_frame(off.folded_text) and not off.folded_text:find("%[unknown%]_%[k%]"),
    "none of wb's own probe frames: " .. tostring(T.probe_frame(off.folded_text)))
  T.eq(res.counters["task-clock"].available, true)
  T.near(res.counters["task-clock"].value / 1e9, 2.4, 0.4)
  T.match(fs.read(on.svg), "^<%?xml")
  T.match(fs.read(off.svg), "<svg ")
  T.eq(assert(json.decode(fs.read(on.speedscope)))["$schema"], "https://www.speedscope.app/file-format-schema.json")
  T.ok(#assert(json.decode(fs.read(res.trace))).traceEvents >= 1)
  T.eq(assert(json.read(res.counters_file))["task-clock"].unit, "ns")
  for _, w in ipairs(res.warnings) do T.ok(not w:find("frame pointers"), w) end
end)

-- Workers' pids as the example prints them.
local function worker_pids(stdout)
  local pids = {}
  for pid in stdout:gmatch("worker %d+ pid (%d+)") do pids[#pids + 1] = tonumber(pid) end
  return pids
end

local function check_workers(res)
  local pids = worker_pids(res.result.stdout)
  T.eq(#pids, 2)
  local by_root = shares(res.oncpu.folded_text)
  for _, pid in ipairs(pids) do
    local r = by_root["cpu_split-" .. pid]
    T.ok(r, "samples of worker " .. pid)
    T.ok(r.worker and r.spin_a and r.spin_b, "the worker's own functions")
    T.near(r.spin_a / r[""], 2 / 3, 0.06, "worker " .. pid .. " split (2:1; 3:1 would be 0.75)")
  end
  local parent = by_root["cpu_split-" .. res.result.pid]
  T.ok(not parent or not parent.spin_a, "no worker samples attributed to the parent")
end

T.case("eBPF: a forking workload, children's samples attributed to their own processes", function()
  need_bpf()
  local res = assert(wb.capture { argv = { SPLIT, "--fork", "2", "--cpu", "0.8", "--sleep", "0.3" }, freq = 499,
    stdout = "capture", counters = false })
  T.eq(res.method, "bpf")
  check_workers(res)
  for _, pid in ipairs(worker_pids(res.result.stdout)) do
    T.ok((";" .. table.concat(res.processes, ";") .. ";"):find(";" .. pid .. ";"), "tracked " .. pid)
    local slept = 0
    for line in res.offcpu.folded_text:gmatch("[^\n]+") do
      if line:find("^cpu_split%-" .. pid .. ";.*sleep_phase;") then slept = slept + tonumber(line:match("(%d+)$")) end
    end
    T.near(slept / 1e9, 0.3, 0.1, "worker " .. pid .. " sleeps")
  end
  T.eq(res.counters, nil)
end)

T.case("eBPF: full maps are counted and reported, not silent", function()
  need_bpf()
  -- 150 processes that each block in nanosleep and are woken: 150 off-CPU keys (one per process)
  -- for a 64-entry map however the machine schedules them (a /bin/true need never be switched
  -- out, and on a loaded machine 150 of them made fewer than 64 keys)
  local SLEEPERS = "for i in $(seq 150); do /bin/sleep 0.001; done"
  local res = assert(wb.capture { cmd = SLEEPERS, shell = true, freq = 999,
    stack_entries = 64, count_entries = 64, counters = false, unwind = "fp" })
  T.eq(res.method, "bpf")
  -- the intervals whose stack had no room in the counts map keep their time, under [stack lost]
  T.ok(res.offcpu.stack_lost > 0, "off-CPU intervals without their stack: " .. res.offcpu.stack_lost)
  T.ok(res.offcpu.stack_lost_seconds > 0, "their time")
  T.eq(res.offcpu.lost, 0, "no interval's time lost")
  -- the shell waits for its children the whole run but for its own CPU time: no less than the
  -- run's wall time less the whole tree's CPU time
  local by_sh = {} -- the shell's forks are "sh" too until their exec; "sh-PID N" is time whose
  -- stack the full stack map did not keep (the process frame alone)
  for line in res.offcpu.folded_text:gmatch("[^\n]+") do
    local pid = line:match("^sh%-(%d+)[; ]")
    if pid then by_sh[pid] = (by_sh[pid] or 0) + tonumber(line:match("(%d+)$")) end
  end
  local shell = 0
  for _, ns in pairs(by_sh) do shell = math.max(shell, ns) end
  local r = res.result
  T.ok(shell / 1e9 >= 0.9 * (r.wall - r.user - r.sys), string.format("the shell off the CPU %.3f s, the run %.3f s " ..
    "wall, %.3f s CPU", shell / 1e9, r.wall, r.user + r.sys))
  T.match(res.offcpu.folded_text, "%-%d+;%[stack lost%] %d+\n")
  T.ok(res.offcpu.stack_errors > 0, "stacks that did not fit: " .. res.offcpu.stack_errors)
  local text = table.concat(res.warnings, "\n")
  T.match(text, "%d+ off%-CPU intervals %([^)]+ of the off%-CPU time%) are under %[stack lost%]: the counts map " ..
    "had no room for their stack %(raise count_entries%)")
  T.match(text, "%d+ off%-CPU intervals counted without their stack: the kernel's stack map was full")
  -- with CFI unwinding (the default) every stack, the kernel's too, travels in its record: the
  -- stack map is not used, so however small, nothing is lost to it
  res = assert(wb.capture { cmd = SLEEPERS, shell = true, freq = 999, stack_entries = 64, counters = false })
  T.eq(res.offcpu.stack_errors, 0)
  T.eq(res.oncpu.stack_errors, 0)
  T.ok(not table.concat(res.warnings, "\n"):find("without their stack", 1, true), table.concat(res.warnings, "\n"))
  local kernel = 0
  for line in res.offcpu.folded_text:gmatch("[^\n]+") do
    if line:find("_[k]", 1, true) then kernel = kernel + tonumber(line:match("(%d+)$")) end
  end
  T.ok(kernel > 0.9 * res.offcpu.samples, "off-CPU ns under kernel frames: " .. kernel .. " of " .. res.offcpu.samples)
end)

-- The seconds blocked in nanosleep, and runnable after its wake-up, of the process (a folded
-- root) that slept the longest: {blocked, runnable}.
local function longest_sleep(folded)
  local by_root, longest = {}, { blocked = 0, runnable = 0 }
  for line in folded:gmatch("[^\n]+") do
    local root = line:match("^([^;]+);")
    if root and line:find("nanosleep", 1, true) then
      local t = by_root[root] or { blocked = 0, runnable = 0 }
      local kind = line:find("[run queue]", 1, true) and "runnable" or "blocked"
      t[kind] = t[kind] + tonumber(line:match("(%d+)$")) / 1e9
      by_root[root] = t
      if t.blocked > longest.blocked then longest = t end
    end
  end
  return longest
end

T.case("eBPF, both stack modes: a sleep is blocked for its length, busy machine or not; the wait for a CPU after "
  .. "its wake-up is run-queue time under the same stack", function()
  need_bpf()
  for _, unwind in ipairs({ "fp", "dwarf" }) do
    local res = assert(wb.capture { argv = { "/bin/sleep", "0.3" }, freq = 99, counters = false, unwind = unwind })
    local sleep = longest_sleep(res.offcpu.folded_text)
    -- the timer fires on time beside any load (the kernel's slack for a 0.3 s sleep is 50 us);
    -- only the wait for a CPU after it grows, and that is not blocked time
    T.between(sleep.blocked, 0.299, 0.31, unwind .. ": seconds blocked in nanosleep\n" .. res.offcpu.folded_text)
    T.ok(sleep.runnable < 0.3, unwind .. ": its wait for a CPU after the wake-up: " .. sleep.runnable)
  end
  -- a real-time loop holds the sleeper's CPU for 0.8 s from some 0.1 s (later beside other load:
  -- its commands start first; any start before 0.6 s will do): woken at 0.6 s, the sleeper waits
  -- for its CPU until the loop ends (the loop's own timeout is not pinned: it can end it from
  -- another CPU; 0.8 s is under the 0.95 s a second real-time throttling allows)
  local probe = proc.run { argv = { "chrt", "-f", "1", "true" }, stdout = "capture", stderr = "capture" }
  if not probe.ok then T.skip("no real-time scheduling here (chrt -f: " .. (probe.stderr:match("[^\n]*")) .. ")") end
  local cmd = "(sleep 0.1; timeout 0.8 taskset -c 0 chrt -f 1 sh -c 'while :; do :; done') & "
    .. "taskset -c 0 sleep 0.6; wait"
  for _, unwind in ipairs({ "fp", "dwarf" }) do
    local res = assert(wb.capture { cmd = cmd, shell = true, freq = 99, counters = false, unwind = unwind, root = "pid" })
    local sleeper = longest_sleep(res.offcpu.folded_text)
    local msg = unwind .. ": the 0.6 s sleeper\n" .. res.offcpu.folded_text
    T.between(sleeper.blocked, 0.599, 0.61, msg)
    -- (some 0.3 s: the loop ends at 0.9 s or later; beside other load later still, its start and
    -- its timeout's wake-up waiting for a CPU too)
    T.between(sleeper.runnable, 0.15, 1.5, msg)
  end
end)

-- Two threads passing a byte over pipes for 1 s (tens of thousands of switches a second), main
-- joining them; each thread prints its lifetime minus its CPU time: its time off the CPU.
local PING_PONG = [[
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static int ab[2], ba[2];
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static double off(double t0, double c0) {
  return now(CLOCK_MONOTONIC) - t0 - (now(CLOCK_THREAD_CPUTIME_ID) - c0);
}
static double end_at, off_a, off_b;
__attribute__((noinline)) static void *server(void *arg) {
  double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
  char c;
  while (read(ab[0], &c, 1) == 1 && c && write(ba[1], &c, 1) == 1) {}
  off_b = off(t0, c0);
  return arg;
}
__attribute__((noinline)) static void *client(void *arg) {
  double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
  char c = 1;
  while (now(CLOCK_MONOTONIC) < end_at && write(ab[1], &c, 1) == 1 && read(ba[0], &c, 1) == 1) {}
  c = 0;
  if (write(ab[1], &c, 1) != 1) return arg;
  off_a = off(t0, c0);
  return arg;
}
int main(void) {
  double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
  if (pipe(ab) || pipe(ba)) return 1;
  end_at = t0 + 1.0;
  pthread_t a, b;
  pthread_create(&b, NULL, server, NULL);
  pthread_create(&a, NULL, client, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("%.6f\n", off(t0, c0) + off_a + off_b);
  return 0;
}
]]

T.case("eBPF: a ring buffer too small for the switching loses no off-CPU time: what had no room is under " ..
  "[stack lost], said apart from lost samples", function()
  need_bpf()
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/ping_pong.c", PING_PONG))
  T.ok(proc.run({ argv = { "gcc", "-O2", "-g", "-pthread", "-o", dir .. "/ping_pong", dir .. "/ping_pong.c" } }).ok)
  local res = assert(wb.capture { argv = { dir .. "/ping_pong" }, freq = 99, counters = false, ring_mib = 1,
    stdout = "capture" })
  T.eq(res.method, "bpf")
  T.ok(res.result.ok, "the program ran")
  local truth = tonumber(res.result.stdout:match("^(%S+)\n$"))
  local off = res.offcpu
  local said = table.concat(res.warnings, "\n")
  T.eq(off.lost, 0, "every interval's time kept")
  -- the process's time off the CPU, whether its stack was recorded or not, is the threads' own
  -- measurement (which also holds what the two clock reads cost)
  T.near(off.total_seconds, truth, 0.1 * truth, string.format("off-CPU seconds (%.3f under [stack lost])",
    off.stack_lost_seconds))
  T.ok(not said:find("off-CPU intervals lost", 1, true), said)
  -- tens of thousands of switch-outs a second at ~16 KB each overflow a 1 MiB ring drained every
  -- 50 ms (on a machine so loaded that the threads barely switch, it may not)
  local report = require "wb.capture_report"
  if off.stack_lost > 0 then
    T.ok(off.stack_lost_seconds > 0)
    if off.stack_lost_seconds > 0.01 * off.total_seconds then
      -- the summary's first lines say how far the off-CPU shares may be off
      local head = report.text(res, { command = "ping_pong" }):match("^wb profile: [^\n]*\n(.-)\n\n")
      T.match(head, "LOSS: [^\n]+ of [^\n]+ off%-CPU %([%d.]+%%%) has no stack %(%[stack lost%]%): " ..
        "each off%-CPU share below may be off by up to [%d.]+ points")
    end
    T.match(off.folded_text, "ping_pong;%[stack lost%] %d+\n")
    T.match(said, string.format("%d off%%-CPU intervals %%([^)]+ of the off%%-CPU time%%) are under %%[stack lost%%]: "
      .. "the ring buffer had no room for their records", off.stack_lost))
  end
  -- on-CPU samples lost are samples (99 a second per CPU, for some 1 s): the switch records the ring
  -- had no room for are not among them
  T.ok(res.oncpu.lost + res.oncpu.samples <= 99 * proc.cpus() * 3,
    string.format("%d samples and %d lost", res.oncpu.samples, res.oncpu.lost))
  local named = 0
  for line in off.folded_text:gmatch("[^\n]+") do
    if line:find(";client;", 1, true) or line:find(";server;", 1, true) then named = named + tonumber(line:match("(%d+)$")) end
  end
  T.ok(named > 0, "the intervals that had room are under their callers")
end)

-- 20,480 threads, 32 at a time, each sleeping briefly: more thread lifetimes than the map of
-- threads switched out holds (16,384). (32 at a time: one at a time, every start and every join
-- would wait for a CPU on a busy machine.)
local THREAD_CHURN = [[
#include <pthread.h>
#include <unistd.h>
static void *run(void *a) { (void)a; usleep(10); return NULL; }
int main(void) {
  for (int round = 0; round < 640; round++) {
    pthread_t t[32];
    for (int i = 0; i < 32; i++) pthread_create(&t[i], NULL, run, NULL);
    for (int i = 0; i < 32; i++) pthread_join(t[i], NULL);
  }
  return 0;
}
]]

T.case("eBPF, both stack modes: 20,480 threads that come and go lose no off-CPU interval (a thread's last "
  .. "switch-out holds no place)", function()
  need_bpf()
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/churn.c", THREAD_CHURN))
  T.ok(proc.run({ argv = { "gcc", "-O2", "-g", "-pthread", "-o", dir .. "/churn", dir .. "/churn.c" } }).ok)
  for _, unwind in ipairs({ "fp", "dwarf" }) do
    local res = assert(wb.capture { argv = { dir .. "/churn" }, freq = 99, counters = false, unwind = unwind })
    T.ok(res.result.ok, "the program ran")
    T.eq(res.offcpu.lost, 0, unwind .. ": " .. table.concat(res.warnings, "\n"))
  end
end)

T.case("node --perf-basic-prof: its JIT code named from /tmp/perf-PID.map after it exited", function()
  need_bpf()
  local node = proc.which("node")
  if not node then T.skip("no node (nodejs, tools/deps.sh)") end
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/hot.js", [[
function hot(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * (i & 7); return s; }
const end = Date.now() + 1000;
let acc = 0;
while (Date.now() < end) acc += hot(100000);
]]))
  -- (in dir: node writes isolate-*-v8.log files where it runs)
  local res = assert(wb.capture { argv = { node, "--perf-basic-prof", dir .. "/hot.js" }, cwd = dir, freq = 199,
    offcpu = false, counters = false })
  for _, pid in ipairs(res.processes) do fs.remove("/tmp/perf-" .. pid .. ".map") end
  T.ok(res.result.ok, "node ran")
  local js, hot, unknown = 0, 0, 0
  for line in res.oncpu.folded_text:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    local leaf = stack:match("([^;]*)$")
    if leaf:find("^JS:[^;]*hot%.js") then js = js + tonumber(n) end
    if leaf:find("^JS:%*?hot [^;]*hot%.js") then hot = hot + tonumber(n) end
    if leaf == "[unknown]" then unknown = unknown + tonumber(n) end
  end
  -- the loop is most of the run: its samples end in hot.js's JIT code, named from the map: hot
  -- itself (JS:*hot, the optimized code), or the script's top level where V8 inlined hot into
  -- its loop (JS:* hot.js:1:1: 127 of 210 samples, hot itself 71, in each of 7 quiet runs here)
  T.ok(js >= 0.5 * res.oncpu.samples, string.format("%d of %d samples in hot.js's code (%d of them in hot, %d with " ..
    "an unknown leaf)", js, res.oncpu.samples, hot, unknown))
  T.ok(hot > 0, "hot named: " .. hot)
  T.ok(js >= 9 * unknown, string.format("%d samples named in hot.js, %d with an unknown leaf", js, unknown))
end)

T.case("capture_report.loss_lines: a loss beyond 1 point of the shares is said first, with its bound", function()
  local report = require "wb.capture_report"
  local function lines(on_lost, stack_lost_seconds)
    return report.loss_lines({ oncpu = { samples = 990, lost = on_lost },
      offcpu = { total_seconds = 2.0, stack_lost_seconds = stack_lost_seconds } })
  end
  T.eq(lines(0, 0), {})
  T.eq(lines(10, 0.02), {}, "1.0% of each: within a point")
  T.eq(lines(90, 0), { "LOSS: 90 of 1,080 on-CPU samples were lost (8.3%): each share below may be off by up to " ..
    "8.3 points" })
  T.eq(lines(0, 0.5), { "LOSS: 500.0 ms of 2.000 s off-CPU (25.0%) has no stack ([stack lost]): each off-CPU share " ..
    "below may be off by up to 25.0 points" })
  T.eq(report.loss_lines({ oncpu = { skipped = "x" }, offcpu = { skipped = "y" } }), {})
  T.eq(report.loss_lines({ offcpu = { lost = 3, total_seconds = 1 } }), { "LOSS: 3 off-CPU intervals were lost with " ..
    "their time (a full map): the off-CPU profile undercounts by an unknown amount" })
end)

T.case("capture_report.html: a flame graph over EMBED_MAX is linked, not embedded, and said", function()
  local report = require "wb.capture_report"
  local dir = T.tmpdir()
  local svg = '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><text>spin_a</text></svg>'
  assert(fs.mkdir_p(dir .. "/profiles"))
  assert(fs.write(dir .. "/profiles/p.oncpu.svg", svg .. string.rep(" ", 2000)))
  local res = { method = "bpf", freq = 99, result = { wall = 1, exited = true, code = 0 }, warnings = {},
    oncpu = { samples = 10, lost = 0, top = {}, svg = dir .. "/profiles/p.oncpu.svg" } }
  local whole = report.html(res, { base = dir })
  T.ok(whole:find("spin_a", 1, true), "embedded")
  local saved = report.EMBED_MAX
  report.EMBED_MAX = 1000
  local ok, page = pcall(report.html, res, { base = dir })
  local outside = report.html(res)
  report.EMBED_MAX = saved
  assert(ok, page)
  T.ok(not page:find("spin_a", 1, true), "not embedded")
  T.match(page, 'On%-CPU flame graph: 2%.%d KiB, not embedded %(over 1,000 B%): <a href="profiles/p%.oncpu%.svg">')
  T.match(outside, '<a href="file://' .. dir:gsub("%p", "%%%0") .. '/profiles/p%.oncpu%.svg">')
end)

T.case("perf_event fallback: the same attribution from ring buffers; off-CPU skipped", function()
  local res = assert(wb.capture { argv = { SPLIT, "--fork", "2", "--cpu", "0.8", "--sleep", "0" }, freq = 499,
    method = "perf_event", stdout = "capture" })
  T.eq(res.method, "perf_event")
  check_workers(res)
  T.match(res.offcpu.skipped, "needs eBPF")
  T.eq(res.oncpu.lost, 0)
end)

T.case("perf CLI method: perf record + perf script folded the same way", function()
  if not capture.profiler("perf").available then T.skip("perf: " .. capture.profiler("perf").notes) end
  local dir = T.tmpdir()
  local res = assert(wb.capture { argv = { SPLIT, "--cpu", "1.0", "--sleep", "0" }, freq = 499, method = "perf_cli",
    dir = dir, name = "cli", stdout = "null", offcpu = false })
  T.eq(res.method, "perf_cli")
  T.near(fraction(res.oncpu.top, "spin_a"), 2 / 3, 0.08)
  T.near(fraction(res.oncpu.top, "spin_b"), 1 / 3, 0.08)
  T.ok(fs.exists(dir .. "/cli.perf.data"))
  T.eq(res.offcpu, nil)
end)

T.case("perf CLI method: a 300-deep recursion complete with DWARF (perf script's 127-frame default raised); " ..
  "frame-pointer stacks cut at the kernel's 127 are marked truncated", function()
  if not capture.profiler("perf").available then T.skip("perf: " .. capture.profiler("perf").notes) end
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/deep.c", [[
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void recurse(int n) {
  if (n > 0) recurse(n - 1);
  else for (clock_t end = clock() + CLOCKS_PER_SEC / 3; clock() < end;) sink++;
  sink++; /* not a tail call */
}
int main(void) { recurse(300); return 0; }
]]))
  T.ok(proc.run({ argv = { "gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", dir .. "/deep", dir .. "/deep.c" } }).ok)
  local function depths(unwind, stack_size)
    local res = assert(wb.capture { argv = { dir .. "/deep" }, freq = 199, method = "perf_cli", unwind = unwind,
      stack_size = stack_size, offcpu = false, counters = false })
    T.eq(res.method, "perf_cli")
    local out = { samples = 0, complete = 0, marked = 0 }
    for line in res.oncpu.folded_text:gmatch("[^\n]+") do
      local stack, n = line:match("^(.*) (%d+)$")
      n = tonumber(n)
      local _, recursions = stack:gsub(";recurse", "")
      if recursions > 0 then
        out.samples = out.samples + n
        if recursions >= 301 and stack:find(";main;", 1, true) then out.complete = out.complete + n end
        if stack:find(";%[truncated after %d+ frames%];") then out.marked = out.marked + n end
      end
    end
    return out
  end
  local d = depths("dwarf", 65528)
  T.ok(d.samples >= 20, "samples in recurse: " .. d.samples)
  T.ok(d.complete >= 0.9 * d.samples, string.format("%d of %d stacks reach main through 301 frames of recurse",
    d.complete, d.samples))
  local fp = depths("fp")
  T.ok(fp.samples >= 20, "samples in recurse: " .. fp.samples)
  T.ok(fp.marked >= 0.9 * fp.samples, string.format("%d of %d frame-pointer stacks marked truncated", fp.marked,
    fp.samples))
end)

T.case("unprivileged (runuser nobody): BPF skipped with the reason, a user-space perf_event profile", function()
  if not T.is_root() then T.skip("needs root to run a capture as nobody") end
  local dir = T.tmpdir()
  os.execute("chmod 777 " .. dir)
  local script = dir .. "/cap.lua"
  assert(fs.write(script, string.format([[
local wb = require "wb"
return wb.recipe { run = function()
  local res = assert(wb.capture { argv = { %q, "--cpu", "1.2", "--sleep", "0.1" }, freq = 499, dir = %q, name = "u",
    stdout = "null" })
  res.result = nil
  assert(wb.fs.write(%q, wb.json.encode(res)))
end }
]], SPLIT, dir .. "/out", dir .. "/res.json")))
  local run = proc.run { argv = { "runuser", "-u", "nobody", "--", T.wb_binary(), "run", script }, cwd = dir,
    stdout = "capture", stderr = "capture", timeout = 60 }
  T.ok(run.ok, run.stderr)
  local res = assert(json.read(dir .. "/res.json"))
  T.eq(res.method, "perf_event")
  T.match(res.fallback, "bpf: needs root or CAP_BPF%+CAP_PERFMON")
  T.match(res.offcpu.skipped, "needs root or CAP_BPF")
  T.eq(res.oncpu.user_only, true)
  T.near(fraction(res.oncpu.top, "spin_a"), 2 / 3, 0.08)
  T.near(fraction(res.oncpu.top, "spin_b"), 1 / 3, 0.08)
  T.ok(not res.oncpu.folded_text:find("_%[k%]"), "no kernel frames")
  local warned = false
  for _, w in ipairs(res.warnings) do warned = warned or w:find("user space only") ~= nil end
  T.ok(warned, "the user-space-only warning")
  T.eq(res.counters["context-switches"].available, false)
  T.match(res.counters["context-switches"].reason, "exclude_kernel")
  local ebpf
  for _, e in ipairs(res.profilers) do if e.name == "ebpf" then ebpf = e end end
  T.eq({ ebpf.available, ebpf.skipped }, { false, "needs root or CAP_BPF+CAP_PERFMON (unprivileged BPF is disabled)" })
  T.ok(fs.exists(dir .. "/out/u.oncpu.svg"))
end)

T.case("hardware counters: unavailable with the reason here, or real values", function()
  local res = assert(wb.capture { argv = { SPLIT, "--cpu", "0.2", "--sleep", "0" }, oncpu = false, offcpu = false,
    stdout = "null" })
  T.eq(res.method, "none")
  T.eq({ res.oncpu, res.offcpu }, { nil, nil })
  for _, name in ipairs({ "cycles", "instructions", "cache-misses", "branch-misses" }) do
    local c = res.counters[name]
    if c.available then T.ok(c.value > 0, name)
    else
      T.eq(c.value, nil)
      T.ok(#c.reason > 10, name .. ": " .. tostring(c.reason))
    end
  end
end)

T.case("profile quality: no frame pointers, stripped code and thin profiles are warned about", function()
  local dir = T.tmpdir()
  local src = dir .. "/burn.c"
  assert(fs.write(src, [[
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void burn(void) { for (int i = 0; i < 100000; i++) sink += (unsigned long)i * 3; }
int main(void) { clock_t end = clock() + CLOCKS_PER_SEC / 4; while (clock() < end) burn(); return 0; }
]]))
  local function build_it(name, flags)
    local argv = { "gcc", "-O2", "-o", dir .. "/" .. name, src }
    for _, f in ipairs(flags) do argv[#argv + 1] = f end
    T.ok(proc.run({ argv = argv }).ok, "gcc " .. name)
    return dir .. "/" .. name
  end
  local function warnings(path, unwind)
    local res = assert(wb.capture { argv = { path }, offcpu = false, counters = false, freq = 99, unwind = unwind })
    return table.concat(res.warnings, "\n"), res
  end
  local nofp_exe = build_it("nofp", { "-fomit-frame-pointer" })
  local nofp = warnings(nofp_exe, "fp")
  T.match(nofp, "has no frame pointers %(%d+ of %d+ functions set up %%rbp%)")
  T.match(nofp, "%-fno%-omit%-frame%-pointer")
  T.match(nofp, "thin profile: %d+ on%-CPU samples")
  local cfi = warnings(nofp_exe)
  T.ok(not cfi:find("frame pointers"), "by default (CFI unwinding) no frame-pointer warning: " .. cfi)
  -- neither CFI nor frame pointers: the precise warning names the object and the stacks
  local bare_exe = build_it("bare", { "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables" })
  local bare, bres = warnings(bare_exe)
  T.match(bare, bare_exe:gsub("%p", "%%%0") .. " has neither call%-frame information nor frame pointers where %d+ of "
    .. "%d+ user stacks were")
  T.ok(bres.oncpu.unwind.reasons.no_cfi > 0)
  T.ok(bres.oncpu.folded_text:find("%[truncated after 1 frames%];burn"), "the stack is marked truncated")
  local stripped, res = warnings(build_it("stripped", { "-s" }))
  T.match(stripped, "unresolved frames")
  T.match(stripped, "stripped%): its frames show as module%+0xoffset")
  T.ok(res.oncpu.unresolved_fraction > 0.2)
  T.ok(res.oncpu.folded_text:find("stripped%+0x%x+"), "module+0xoffset frames")
end)

T.case("registry: every profiler has a record; unavailable ones are skipped with the reason", function()
  local list = capture.profilers()
  local names = {}
  for i, e in ipairs(list) do
    names[i] = e.name
    T.eq(type(e.available), "boolean")
    T.ok(type(e.notes) == "string" and e.notes ~= "", e.name)
    if e.available then T.eq(e.skipped, nil) else T.eq(e.skipped, e.notes) end
    if e.available and e.path then T.ok(fs.exists(e.path)) end
  end
  T.eq(names, { "ebpf", "perf_event", "perf", "callgrind", "massif", "py-spy", "python_cprofile", "nsys", "ncu" })
  local missing = capture.with("nsys", function() return "ran" end)
  if capture.profiler("nsys").available then T.eq(missing, "ran")
  else T.eq({ missing.name, missing.available, missing.skipped }, { "nsys", false, "nsys not found in PATH" }) end
  T.eq(capture.with("perf_event", function(e) return e.name end), "perf_event")
  T.raises(function() capture.profiler("gprof") end, "unknown profiler 'gprof'")
  T.eq(#capture.profilers({ "perf", "massif" }), 2)
end)

T.case("misuse raises; a missing program is an error value; a timeout still yields the profile", function()
  T.raises(function() wb.capture {} end, "argv (or cmd with shell = true) expected")
  T.raises(function() wb.capture { argv = { "true" }, method = "dtrace" } end, "unknown method 'dtrace'")
  T.raises(function() wb.capture { argv = { "true" }, freq = 0 } end, "freq must be")
  local res, err = wb.capture { argv = { "no-such-program-wb" } }
  T.eq(res, nil)
  T.match(err, "no%-such%-program%-wb")
  local t = assert(wb.capture { argv = { SPLIT, "--cpu", "5", "--sleep", "0" }, timeout = 0.4, offcpu = false })
  T.eq({ t.ok, t.result.timed_out }, { false, true })
  T.ok(t.oncpu.samples >= 1)
  local sh = assert(wb.capture { cmd = "exit 3", shell = true, oncpu = false, offcpu = false })
  T.eq({ sh.ok, sh.result.code }, { false, 3 })
end)

T.case("wb.bpf.open{async = true}: loads on a thread; ready() says whether it worked, methods before it raise", function()
  need_bpf()
  local s = assert(wb.bpf.open { async = true, ustack = 8192 })
  T.raises(function() s:track(1) end, "loading: call s:ready() first")
  T.eq(s:ready(), true)
  T.eq(s:ready(), true) -- again: the same answer
  T.eq(tostring(s), "wb.bpf.session (attached)")
  -- the same stacks as a session opened without async
  local p = assert(wb.proc.spawn { argv = { "sleep", "0.2" }, held = true })
  assert(s:track(p.pid))
  s:arm()
  assert(p:release())
  p:wait()
  s:stop()
  local t = s:read()
  local slept = 0
  for _, r in ipairs(t.offcpu) do slept = slept + r.count end
  T.ok(slept >= 0.18e9, "off-CPU ns of sleep 0.2: " .. slept)
  s:close()
  T.eq(tostring(s), "wb.bpf.session (closed)")
  -- closed (or collected) before ready: the loader is joined, nothing leaks
  wb.bpf.open({ async = true }):close()
  local _ = wb.bpf.open { async = true }
  _ = nil
  collectgarbage()
end)

-- Prints what wb.bpf says of this boot's minimal BTF, with the cache home of the test's choosing:
-- btf(), then (with "make") make_btf(), then the BTF a session was relocated against and the
-- off-CPU nanoseconds it saw of `sleep 0.1`.
local BTF_PROBE = [[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  local function say(k, a, b) io.write(k, "\t", tostring(a), "\t", tostring(b), "\n") end
  say("btf", wb.bpf.btf())
  if ctx.args[1] == "make" then say("make", wb.bpf.make_btf()) end
  local s <close> = assert(wb.bpf.open { ustack = 8192, btf = ctx.args[2] })
  local used, why, refused = s:btf()
  say("session", used, why)
  say("refused", refused)
  local p = assert(wb.proc.spawn { argv = { "sleep", "0.1" }, held = true })
  assert(s:track(p.pid))
  s:arm()
  assert(p:release())
  p:wait()
  s:stop()
  local slept = 0
  for _, r in ipairs(s:read().offcpu) do slept = slept + r.count end
  say("slept", slept)
end }
]]

T.case("wb.bpf: the kernel types the programs need, made once per boot into the cache (0600, "
  .. "checked), are what later loads relocate against; a file that does not serve falls back to "
  .. "the kernel's BTF", function()
  need_bpf()
  local dir = T.tmpdir()
  local script = dir .. "/btf.lua"
  assert(fs.write(script, BTF_PROBE))
  local boot = assert(fs.read("/proc/sys/kernel/random/boot_id")):match("%S+")
  local home = dir .. "/cache"
  assert(fs.mkdir_p(home .. "/wb"))
  -- files of an earlier boot: removed when this boot's is made
  assert(fs.write(home .. "/wb/btf-00000000-0000-0000-0000-000000000000-0123456789abcdef", "old"))
  local function probe(...)
    local res = T.wb({ "run", script, "--", ... }, { env = { XDG_CACHE_HOME = home } })
    T.eq(res.code, 0, res.stderr)
    local out = {}
    for k, a, b in res.stdout:gmatch("(%a+)\t([^\t]*)\t([^\n]*)\n") do out[k] = { a, b } end
    T.ok(tonumber(out.slept[1]) >= 0.09e9, "the session saw sleep's off-CPU time: " .. out.slept[1])
    return out
  end
  local first = probe("make")
  T.eq(first.btf, { "nil", "not made yet this boot" })
  local path = first.make[1]
  T.eq(first.session, { path, "nil" })
  T.match(path, "^" .. home:gsub("%p", "%%%0") .. "/wb/btf%-" .. boot:gsub("%p", "%%%0") .. "%-%x+$")
  T.eq(assert(fs.stat(path)).mode & 511, 384, "mode 0600")
  T.eq(assert(fs.read(path)):sub(1, 2), "\x9f\xeb", "BTF's magic")
  T.ok(assert(fs.stat(path)).size < 8192, "a few types, not the kernel's 5 MB")
  T.eq(fs.glob(home .. "/wb/btf-00000000*"), {}, "the earlier boot's file is gone")
  local again = probe()
  T.eq(again.btf, { path, "nil" })
  T.eq(again.session, { path, "nil" })
  -- one that another user could have written is not used
  os.execute("chmod 666 " .. path)
  local loose = probe()
  T.eq(loose.btf[1], "nil")
  T.eq(loose.session, { "kernel", "nil" })
  os.execute("chmod 600 " .. path)
  -- a file that is not BTF, asked for by name: the load uses the kernel's and says why
  local bad = probe("", script)
  T.eq(bad.session[1], "kernel")
  T.match(bad.session[2], "^" .. script:gsub("%p", "%%%0") .. ": ")
  T.eq(bad.refused, { script, "nil" })
  T.eq(again.refused, { "nil", "nil" })
  -- a file with BTF's magic that libbpf refuses: wb.capture warns, loads against the kernel's BTF,
  -- and the file is made again after the run
  assert(fs.write(path, "\x9f\xeb" .. string.rep("x", 64)))
  os.execute("chmod 600 " .. path)
  assert(fs.write(dir .. "/cap.lua", [[
local wb = require "wb"
return wb.recipe { run = function()
  local res = assert(wb.capture { argv = { "sleep", "0.1" }, method = "bpf", stdout = "null" })
  io.write(res.method, "\n", table.concat(res.warnings, "\n"), "\n")
end }
]]))
  local cap = T.wb({ "run", dir .. "/cap.lua" }, { env = { XDG_CACHE_HOME = home } })
  T.eq(cap.code, 0, cap.stderr)
  T.match(cap.stdout, "^bpf\n")
  T.match(cap.stdout, "the cached kernel types did not serve the load %(" .. path:gsub("%p", "%%%0") .. ": ")
  local remade = assert(fs.read(path))
  T.ok(remade:sub(1, 2) == "\x9f\xeb" and not remade:find("xxxx", 1, true), "made again after the run")
  T.eq(probe().session, { path, "nil" })
  -- a failure to make it is remembered for the boot, and said
  os.remove(path)
  assert(fs.write(path .. ".failed", "bpftool gen min_core_btf failed (exit 255)\n"))
  os.execute("chmod 600 " .. path .. ".failed")
  local failed = probe("make")
  T.eq(failed.btf, { "nil", "bpftool gen min_core_btf failed (exit 255)" })
  T.eq(failed.make, { "nil", "bpf: btf: bpftool gen min_core_btf failed (exit 255)" })
  T.eq(fs.exists(path), false)
end)

T.case("wb.bpf.open: no options and nil options are the defaults; bad options raise", function()
  T.raises(function() wb.bpf.open(5) end, "table expected")
  T.raises(function() wb.bpf.open { freq = 0 } end, "freq must be in 1..100000")
  T.raises(function() wb.bpf.open { stack_entries = 1.5 } end, "option 'stack_entries': integer expected")
  T.raises(function() wb.bpf.open { btf = 5 } end, "option 'btf': boolean or string expected")
  T.raises(function() wb.bpf.open { btf = "" } end, "option 'btf': a path expected")
  local ok = wb.bpf.available()
  for _, open in ipairs { function() return wb.bpf.open() end, function() return wb.bpf.open(nil) end } do
    local s, err = open()
    if ok then
      T.eq(tostring(s), "wb.bpf.session (attached)", err)
      s:close()
    else
      T.eq(s, nil)
      T.match(err, "^bpf: ")
    end
  end
end)

T.case("wb profile: run directory, manifest with profilers and method, top functions printed", function()
  local dir = T.tmpdir() .. "/run"
  local res = profile({ "-o", dir, "freq=499", "--", SPLIT, "--cpu", "1.0", "--sleep", "0.2" })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "^checksum %x+\n")
  T.match(res.stdout, "\non%-CPU: [%d,]+ samples")
  -- each function with the line most of its self time was sampled at: spin_a's loop (the example is built with -g)
  T.match(res.stdout, "\n +%d+%.%d%% +%d+%.%d%%  spin_a  at examples/cpu_split%.c:4[45]\n")
  T.match(res.stdout, "\noff%-CPU: ")
  T.match(res.stdout, "task%-clock +%d")
  local m = T.manifest(dir)
  T.eq(m.status, "complete")
  T.eq(#m.profilers, 9)
  local run = m.runs[1]
  T.eq({ run.name, run.status, run.method }, { "profile", "success", wb.bpf.available() and "bpf" or "perf_event" })
  T.ok(fs.exists(dir .. "/" .. run.profiles.oncpu.svg))
  T.ok(run.metrics.oncpu_samples > 100)
  T.match(fs.read(dir .. "/report.html"), "<iframe title=\"On%-CPU flame graph\"")
  T.match(fs.read(dir .. "/report.html"), "<code>spin_a</code></td><td[^>]*>[^<]*</td><td[^>]*>[^<]*</td>"
    .. "<td[^>]*><code>examples/cpu_split%.c:4[45]</code>")
  T.match(fs.read(dir .. "/logs/profile.stdout.log"), "^checksum")
  local again = profile({ "-o", dir .. "_again", "freq=499", "--", SPLIT, "--cpu", "1.0", "--sleep", "0.2" })
  T.eq(again.code, 0, again.stderr)
  T.match(again.stdout, "differential flame graph: [^\n]*profile%.oncpu%.diff%.svg")
  T.eq(T.manifest(dir .. "_again").previous_manifest_path, dir .. "/manifest.json")
  T.match(fs.read(dir .. "_again/profiles/profile.oncpu.diff.svg"), "Differential")
  local bad = profile({ "-o", dir .. "2", "--", "false" })
  T.eq(bad.code, 1)
  local none = profile({ "-o", dir .. "3" })
  T.eq(none.code, 2)
  T.match(none.stderr, "which command")
end)

T.case("wb profile twice on one multi-process command: the differential flame graph matches processes " ..
  "by name, not pid (largest change under 5 pp)", function()
  -- a parent and two forked workers, all named cpu_split, with spin loops whose split does not
  -- move with the machine's load (a memory-bound program's does: xz's functions moved 5 pp)
  local d = T.tmpdir()
  for _, name in ipairs({ "a", "b" }) do
    local res = profile({ "-o", d .. "/" .. name, "freq=999", "offcpu=false", "--", SPLIT, "--fork", "2", "--cpu",
      "0.8", "--sleep", "0" })
    T.eq(res.code, 0, res.stderr)
  end
  local folded = fs.read(d .. "/b/" .. T.manifest(d .. "/b").runs[1].profiles.oncpu.folded)
  T.match(folded, "^cpu_split%-%d+;") -- the single-run views keep their pids
  local text = assert(fs.read(d .. "/b/profiles/profile.oncpu.diff.svg"))
  local largest, where, n = 0, "", 0
  for tip, pp in text:gmatch("<title>([^<]-)(%d+%.%d+) pp%)</title>") do
    n = n + 1
    if tonumber(pp) > largest then largest, where = tonumber(pp), tip end
  end
  print(string.format("# largest change %.2f pp at %s", largest, where))
  T.ok(n >= 6, n .. " frames with a change")
  T.ok(not text:find("cpu_split%-%d+"), "no pid in the differential graph")
  T.ok(largest < 5, string.format("largest change %.2f pp at %s", largest, where))
end)
