-- The critical path of a capture (wb.bpf's wake-ups and timeline, wb.capture_critical) on programs
-- built here: a Python driver waiting for a CPU-bound child, a thread pool serialised by a mutex,
-- and a pipeline whose consumer is the slow side. Each checks against what the program itself
-- does (CPU seconds it spins, seconds it sleeps), which a busy machine does not change.
local T = require "wb.test"
local app = require "wb.appprofile"
local capture = require "wb.capture"
local fs = require "wb.fs"
local proc = require "wb.proc"

local dir

local function build(name, source, flags)
  dir = dir or T.tmpdir()
  local src = dir .. "/" .. name .. ".c"
  assert(fs.write(src, source))
  local argv = { "gcc", "-O2", "-g", "-o", dir .. "/" .. name, src }
  for _, f in ipairs(flags or {}) do argv[#argv + 1] = f end
  local res = assert(proc.run { argv = argv, stdout = "capture", stderr = "capture" })
  assert(res.ok, res.stderr)
  return dir .. "/" .. name
end

local function need_bpf()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip(why) end
end

local function critical(spec)
  spec.method, spec.freq, spec.stdout = "bpf", spec.freq or 499, "capture"
  local res = assert(capture.run(spec))
  T.eq(res.method, "bpf")
  T.ok(res.ok, "the program ran")
  local c = res.critical
  T.ok(c, "a critical path")
  local sum = 0
  for _, v in pairs(c.by_kind) do sum = sum + v end
  T.near(sum, c.wall_seconds, 1e-6, "the path's parts tile its window")
  T.near(c.wall_seconds, res.result.wall, 0.05 * res.result.wall, "the window is the run's wall time")
  return res, c
end

-- Seconds under lines of the path's folded text that hold `frame` (and not `without`).
local function seconds_under(folded, frame, without)
  local ns = 0
  for line in folded:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    if (";" .. stack .. ";"):find(";" .. frame .. ";", 1, true) and not (without and stack:find(without, 1, true)) then
      ns = ns + tonumber(n)
    end
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
  T.eq({ b.first[1].what, b.first[1].name }, { "function", "spin" }, "the first place to look (hot's spin)")
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
  T.ok(seconds_under(c.folded_text, "parallel_work", "[run queue]") < 0.1, "the parallel work is mostly off the path")
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
