-- The critical path of a capture (wb.bpf's wake-ups and timeline, wb.capture_critical) on programs
-- built here: a Python driver waiting for a CPU-bound child, a thread pool serialised by a mutex,
-- and a pipeline whose consumer is the slow side. Each checks against what the program itself
-- does (CPU seconds it spins, seconds it sleeps), which a busy machine does not change.
local T = require "wb.test"
local app = require "wb.appprofile"
local capture = require "wb.capture"
local fold = require "wb.capture_fold"
local fs = require "wb.fs"
local proc = require "wb.proc"
local clock = require "wb.clock"

local dir

-- Compiles source (C with gcc, or Rust with rustc) into the file's directory; the program's path.
local function build(name, source, flags, compiler)
  dir = dir or T.tmpdir()
  local src = dir .. "/" .. name .. (compiler and ".rs" or ".c")
  assert(fs.write(src, source))
  local argv = { compiler or "gcc", compiler and "-O" or "-O2", "-g", "-o", dir .. "/" .. name, src }
  for _, f in ipairs(flags or {}) do argv[#argv + 1] = f end
  local res = assert(proc.run { argv = argv, stdout = "capture", stderr = "capture" })
  assert(res.ok, res.stderr)
  return dir .. "/" .. name
end

local function need_bpf()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip(why) end
end

-- reaped_late: wb may have seen the command's exit late (starved of CPU), so that its wall time
-- is longer than the window, which ends at the exit by the kernel's clock.
local function critical(spec, reaped_late)
  spec.method, spec.freq, spec.stdout = "bpf", spec.freq or 499, "capture"
  local res = assert(capture.run(spec))
  T.eq(res.method, "bpf")
  T.ok(res.ok, "the program ran")
  local c = res.critical
  T.ok(c, "a critical path")
  local sum = 0
  for _, v in pairs(c.by_kind) do sum = sum + v end
  T.near(sum, c.wall_seconds, 1e-6, "the path's parts tile its window")
  if reaped_late then
    T.between(c.wall_seconds, 0.5 * res.result.wall, res.result.wall + 0.01, "the window is within the wall time")
  else
    T.near(c.wall_seconds, res.result.wall, 0.05 * res.result.wall, "the window is the run's wall time")
  end
  return res, c
end

-- Seconds under lines of the path's folded text that hold a frame named `frame` (or, with
-- pattern, matching it), and not `without`.
local function seconds_under(folded, frame, without, pattern)
  local ns = 0
  for line in folded:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    local hit = false
    for f in (stack .. ";"):gmatch("([^;]*);") do
      if (pattern and f:find(frame)) or f == frame or f:match("::([%w_]+)$") == frame then hit = true end
    end
    if hit and not (without and stack:find(without, 1, true)) then ns = ns + tonumber(n) end
  end
  return ns / 1e9
end

local function process(c, comm)
  for _, p in ipairs(c.by_process) do
    if p.comm == comm then return p end
  end
  error("no process " .. comm .. " on the path")
end

local SPIN = [[
#include <stdlib.h>
#include <time.h>
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
__attribute__((noinline)) unsigned long spin(double s, unsigned long x) {
  for (double t0 = cpu_now(); cpu_now() - t0 < s;)
    for (int i = 0; i < 2000; i++) x = x * 6364136223846793005UL + 1;
  return x;
}
]]

local HELPER = SPIN .. [[
volatile unsigned long sink;
__attribute__((noinline)) unsigned long hot(double s) { return spin(s, 7) + 1; } /* + 1: no tail call */
int main(int argc, char **argv) {
  sink = hot(argc > 1 ? atof(argv[1]) : 1.0);
  return 0;
}
]]

local DRIVER = [[
import subprocess, sys, time
def own_work(s):
    t0 = time.process_time(); x = 0
    while time.process_time() - t0 < s:
        for i in range(1000): x += i
    return x
def main():
    subprocess.run([sys.argv[1], "1.0"], check=True)
    own_work(0.5)
    time.sleep(0.4)
main()
]]

T.case("a Python driver waiting for its CPU-bound child: the path is the child's work, the driver's own work "
  .. "and its sleep, once each; the wait for the child is not a bottleneck", function()
  need_bpf()
  local python = fs.exists("/usr/bin/python3") and "/usr/bin/python3" or T.skip("no /usr/bin/python3")
  local helper = build("helper", HELPER)
  assert(fs.write(dir .. "/driver.py", DRIVER))
  local res, c = critical { argv = { python, dir .. "/driver.py", helper } }
  local child = process(c, "helper")
  T.near(child.oncpu, 1.0, 0.05, string.format("the child's CPU seconds on the path (it spins 1.0 s of CPU; " ..
    "off-CPU intervals without their stack: %d)", res.offcpu.stack_lost or 0))
  T.near(child.wait, 0, 0.01, "the child waits for nothing")
  local driver = process(c, "python3")
  T.between(driver.oncpu, 0.5, 0.5 + 0.5, "the driver's CPU seconds on the path (0.5 s of work, its start-up)")
  T.near(driver.wait, 0.4, 0.02, "the driver's only wait on the path: its 0.4 s sleep")
  T.near(seconds_under(c.folded_text, "hot", "[run queue]"), 1.0, 0.05, "seconds under hot on the path")
  local trials = { wall = { res.result.wall }, cpu = { res.result.user + res.result.sys }, order = {}, stages = {} }
  local b = app.bottlenecks(trials, res, { cpu_bound = 0.8, functions = 10, waits = 5, top = 5 })
  local first -- the first function or wait (the run queue may lead on a busy machine: it is no code's)
  for _, f in ipairs(b.first) do
    if not first and (f.what == "function" or f.what == "wait") then first = f end
  end
  T.eq({ first.what, first.name }, { "function", "spin" }, "the first function or wait to look at (hot's spin)")
  -- where: the line most of spin's samples were taken at, in its loop (lines 9-11 of helper.c)
  local file, line = (first.where or ""):match("^(.*):(%d+)$")
  T.eq(file, dir .. "/helper.c", "the file of spin's self time: " .. tostring(first.where))
  T.between(tonumber(line), 9, 11, "the line of spin's self time (its loop)")
  T.match(first.text, " at " .. first.where:gsub("%p", "%%%0") .. ":", "the entry names the place")
  -- the report's tables, each placed from its own stacks: the path's (its waits' stacks too) and
  -- the on-CPU profile's
  for _, top in ipairs({ c.top, res.oncpu.top }) do
    local row
    for _, f in ipairs(top) do row = row or (f.name == "spin" and f) end
    local tfile, tline = (fold.where(row or {}) or ""):match("^(.*):(%d+)$")
    T.eq(tfile, dir .. "/helper.c", "spin's place in a top table: " .. tostring(row and fold.where(row)))
    T.between(tonumber(tline), 9, 11, "spin's line in a top table")
  end
  local sleeps, child_waits = 0, 0
  for _, w in ipairs(b.waits) do
    if w.name:find("nanosleep") then sleeps = sleeps + 1 end
    if w.name:find("wait4") or w.name:find("waitpid") or w.name:find("poll") then child_waits = child_waits + 1 end
  end
  T.eq({ sleeps, child_waits }, { 1, 0 }, "the sleep once, no wait on the child")
  T.match(b.waits[1].cause or "", "interrupt", "the sleep was ended by a timer's interrupt")
end)

local POOL = SPIN .. [[
#include <pthread.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
__attribute__((noinline)) unsigned long serial_work(unsigned long x) { return spin(0.020, x) + 1; }
__attribute__((noinline)) unsigned long parallel_work(unsigned long x) { return spin(0.005, x) + 1; }
static void *worker(void *arg) {
  unsigned long x = (unsigned long)arg;
  for (int k = 0; k < 10; k++) {
    pthread_mutex_lock(&mu);
    x = serial_work(x);
    pthread_mutex_unlock(&mu);
    x = parallel_work(x);
  }
  return (void *)x;
}
int main(void) {
  pthread_t t[4];
  for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, worker, (void *)i);
  for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
  return 0;
}
]]

T.case("a 4-thread pool serialised by a mutex: the path names the holders' serial work for its 0.8 s", function()
  need_bpf()
  local pool = build("pool", POOL, { "-pthread" })
  local _, c = critical { argv = { pool } }
  T.near(seconds_under(c.folded_text, "serial_work", "[run queue]"), 0.8, 0.08,
    "seconds of serial_work on the path (40 sections of 20 ms of CPU)")
  T.ok(c.by_kind.wait < 0.05 * c.wall_seconds, "the lock waits are explained by the holders, not left as waits")
end)

local PRODUCER = [[
#include <string.h>
#include <unistd.h>
int main(void) {
  char buf[4096];
  memset(buf, 'x', sizeof buf);
  for (int i = 0; i < 4000; i++)
    if (write(1, buf, sizeof buf) != sizeof buf) return 1;
  return 0;
}
]]

local CONSUMER = SPIN .. [[
#include <unistd.h>
__attribute__((noinline)) unsigned long digest(unsigned long x) { return spin(0.00025, x) + 1; }
int main(void) {
  char buf[4096];
  unsigned long x = 0;
  while (read(0, buf, sizeof buf) > 0) x = digest(x + (unsigned char)buf[0]);
  return (int)(x & 1);
}
]]

T.case("a pipeline whose consumer is the slow side: the producer's blocked writes are the consumer's work", function()
  need_bpf()
  local producer, consumer = build("producer", PRODUCER), build("consumer", CONSUMER)
  local _, c = critical { cmd = producer .. " | " .. consumer, shell = true }
  local slow = process(c, "consumer")
  T.ok(slow.oncpu + slow.runqueue >= 0.85 * c.wall_seconds, string.format("the consumer's share of the path: " ..
    "%.2f s of %.2f s", slow.oncpu + slow.runqueue, c.wall_seconds))
  T.ok(c.by_kind.wait < 0.05 * c.wall_seconds, "no wait of the producer's left on the path")
  T.near(seconds_under(c.folded_text, "digest", "[run queue]"), 1.0, 0.1, "digest's seconds (4000 × 250 µs of CPU)")
end)

local RUST_POOL = [[
use std::sync::mpsc;
use std::thread;
fn cpu_now() -> f64 {
    #[repr(C)] struct Ts { s: i64, ns: i64 }
    extern "C" { fn clock_gettime(c: i32, t: *mut Ts) -> i32; }
    let mut t = Ts { s: 0, ns: 0 };
    unsafe { clock_gettime(3, &mut t) }; // CLOCK_THREAD_CPUTIME_ID
    t.s as f64 + t.ns as f64 / 1e9
}
#[inline(never)]
fn spin(s: f64, mut x: u64) -> u64 {
    let t0 = cpu_now();
    while cpu_now() - t0 < s { for _ in 0..1000 { x = x.wrapping_mul(6364136223846793005).wrapping_add(1); } }
    x
}
#[inline(never)]
fn worker_hot(x: u64) -> u64 { spin(0.3, x) + 1 }
#[inline(never)]
fn serial_part(x: u64) -> u64 { spin(0.2, x) + 1 }
fn main() {
    let mut x = serial_part(1);
    let (tx, rx) = mpsc::channel();
    let mut jobs = Vec::new();
    for i in 0..8u64 {
        let (jtx, jrx) = mpsc::channel::<u64>();
        let tx = tx.clone();
        thread::spawn(move || { for v in jrx { tx.send(worker_hot(v + i)).unwrap(); } });
        jobs.push(jtx);
    }
    for j in &jobs { j.send(x).unwrap(); }
    for _ in 0..8 { x ^= rx.recv().unwrap(); }
    x = serial_part(x);
    std::process::exit((x & 1) as i32 * 0);
}
]]

T.case("a Rust pool of 8 workers and a coordinator waiting on a channel: the path is the coordinator's serial "
  .. "part and one worker's work", function()
  need_bpf()
  local rustc = proc.which("rustc") or T.skip("rustc is not installed")
  local _, c = critical { argv = { build("pool_rs", RUST_POOL, nil, rustc) } }
  T.near(seconds_under(c.folded_text, "serial_part", "[run queue]"), 0.4, 0.05,
    "seconds of the coordinator's serial_part on a CPU on the path (2 × 0.2 s)")
  T.near(seconds_under(c.folded_text, "worker_hot", "[run queue]"), 0.3, 0.05,
    "seconds of worker_hot on a CPU on the path (the last worker's 0.3 s)")
  T.ok(c.by_kind.wait < 0.05 * c.wall_seconds, "the channel waits are explained by the threads that sent")
end)

local MP_POOL = [[
import multiprocessing as mp, time
def burn(s):
    t0 = time.process_time(); x = 0
    while time.process_time() - t0 < s:
        for i in range(1000): x += i
    return x
def work(n):
    return burn(0.3)
def serial():
    return burn(0.2)
if __name__ == "__main__":
    serial()
    with mp.Pool(4) as p:
        p.map(work, range(8), chunksize=1)
    serial()
]]

-- The Pool driver's argv (python3 on its script), after the checks that the cases need (eBPF,
-- Debian's python3).
local function pool_argv()
  need_bpf()
  local python = fs.exists("/usr/bin/python3") and "/usr/bin/python3" or T.skip("no /usr/bin/python3")
  dir = dir or T.tmpdir()
  assert(fs.write(dir .. "/mp.py", MP_POOL))
  return { python, dir .. "/mp.py" }
end

-- The Pool driver's path: its serial() parts, and its workers' work() however late wb read the
-- workers' records (they have exited then: their code objects were named as the records came).
-- starved: wb attaches to the driver's interpreter when it first drains the driver's samples
-- (a known limit, issue 31), which a wb starved of CPU does late: seconds of either serial() may
-- lack their Python frames (a quiet CI run, its Slurm suites behind it, named 0.15 s of 0.4), so
-- only the upper bound holds then; and beside that contention which worker's tasks the path runs
-- through varies, so only the last task's 0.3 s is certain on it (0.54 s once, of the 0.6 s of two
-- tasks in a row), which a worker's frames unnamed would take to 0.
local function check_pool(res, c, starved)
  local evidence = string.format("the capture's warnings:\n%s\nthe path:\n%s", table.concat(res.warnings, "\n"),
    c.folded_text)
  local serial = seconds_under(c.folded_text, "^serial %(mp%.py:%d+%)$", "[run queue]", true)
  T.between(serial, starved and 0 or 0.34, 0.46,
    "seconds of the driver's serial() on a CPU on the path (2 × 0.2 s); " .. evidence)
  local work = seconds_under(c.folded_text, "^work %(mp%.py:%d+%)$", "[run queue]", true)
  T.ok(work >= (starved and 0.25 or 0.55), string.format("the workers' work() on a CPU on the path: %.2f s (8 "
    .. "tasks of 0.3 s on 4 workers: at least two in a row on one, the last of them at least); %s", work, evidence))
end

T.case("a Python multiprocessing.Pool driver: the path is the driver's serial parts and its workers' work", function()
  check_pool(critical { argv = pool_argv() })
end)

T.case("wb.bpf: records walked after their process exited keep their Python frames' names", function()
  local argv = pool_argv()
  local s <close> = assert(require("wb.bpf").open { freq = 199, ustack = 16376, python = true, offcpu = false })
  local p <close> = assert(proc.spawn { argv = argv, held = true })
  assert(s:track(p.pid))
  s:arm()
  assert(p:release())
  local t0 = clock.now()
  repeat until s:python(p.pid) or proc.wait_any({ p }, 0.002) or clock.now() - t0 > 2e9
  -- drains that walk one record each: most records are walked after the workers are gone
  while not proc.wait_any({ p }, 0.05) do s:drain(1e-9) end
  s:stop()
  local samples, named = 0, 0
  for _, r in ipairs(s:read().oncpu) do
    if r.pid ~= p.pid then
      samples = samples + r.count
      local work = false
      for _, group in ipairs(r.python or {}) do
        for _, f in ipairs(group) do work = work or f:find("^work %(mp%.py:%d+%)$") ~= nil end
      end
      if work then named = named + r.count end
    end
  end
  T.ok(samples >= 100, "samples of the workers: " .. samples)
  T.ok(named >= 0.8 * samples, string.format("%d of the workers' %d samples under work()", named, samples))
end)

-- Runs fn(starve) with, from starve() on, wb's own threads (not the programs it started before) on
-- CPU 0 at nice 13 beside two busy loops pinned there: wb gets 1/38 of one CPU and its drain falls
-- far behind. Built with ASan (libasan among its mappings), whose copies and walks cost wb some 3x
-- the CPU, at nice 10 (1/20), which leaves it about as far behind: at nice 15 (1/58) there, wb's
-- reads of the ring buffer were up to 0.55 s apart and each took up to 2 s, and the 8 MiB ring
-- lost switch records in 3 runs of 7. Their CPUs and nice value are put back after.
local function starved(fn)
  local stat = assert(fs.read("/proc/self/stat"))
  local self, nice = stat:match("^(%d+)"), stat:match("^%d+ %b() " .. ("%S+ "):rep(16) .. "(%-?%d+)")
  local mask = assert(proc.run { argv = { "taskset", "-p", self }, stdout = "capture" }).stdout:match(": (%x+)")
  local hogs = {}
  for i = 1, 2 do hogs[i] = assert(proc.spawn { argv = { "taskset", "-c", "0", "sh", "-c", "while :; do :; done" } }) end
  local function set(cpus, nice)
    assert(proc.run { argv = { "sh", "-c", 'taskset -ap "$1" "$2" && for t in /proc/"$2"/task/*; do ' ..
      'renice -n "$3" -p "${t##*/}"; done', "sh", cpus, self, tostring(nice) }, stdout = "null", stderr = "null" })
  end
  local asan = (fs.read("/proc/self/maps") or ""):find("libasan", 1, true) ~= nil
  local ok, a, b = pcall(fn, function() set("1", asan and 10 or 13) end)
  set(mask, nice)
  for _, h in ipairs(hogs) do
    h:kill()
    h:wait()
    h:close()
  end
  assert(ok, a)
  return a, b
end

T.case("the Pool driver with wb starved of CPU: no record lost, its exited workers' frames named", function()
  local argv = pool_argv()
  if not (proc.run { argv = { "taskset", "-c", "0", "true" } } or {}).ok then T.skip("taskset cannot pin to CPU 0") end
  local res, c = starved(function(starve) return critical({ argv = argv, on_started = starve }, true) end)
  for _, w in ipairs(res.warnings) do T.ok(not w:find("lost"), w) end
  check_pool(res, c, true)
end)
