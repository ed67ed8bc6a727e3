-- wb.memory: the RSS of a process tree over time, against programs the test builds with planted
-- ground truth: a 200 MiB rise and fall at times the program reports by its own clock, a forked
-- child's memory under its own pid; and the memory section of wb.capture / wb profile.
local T = require "wb.test"
local wb = require "wb"
local fs, proc = wb.fs, wb.proc

local GROW = [[
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void sleep_ms(int ms) { struct timespec t = {ms / 1000, (ms % 1000) * 1000000L}; nanosleep(&t, 0); }
static void touch(size_t mib, int hold_ms) {
  size_t n = mib << 20;
  volatile char *p = malloc(n);
  fprintf(stderr, "alloc_start %.6f\n", now());
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  fprintf(stderr, "alloc_end %.6f\n", now());
  sleep_ms(hold_ms);
  fprintf(stderr, "free %.6f\n", now());
  free((void *)p);
}
int main(int argc, char **argv) {
  sleep_ms(300);
  if (argc > 1) { /* fork: the child holds 100 MiB, the parent stays small */
    pid_t c = fork();
    if (c == 0) { touch(100, 600); _exit(0); }
    waitpid(c, 0, 0);
    sleep_ms(100);
    return 0;
  }
  touch(200, 500);
  sleep_ms(300);
  return 0;
}
]]

local function build()
  local d = T.tmpdir()
  assert(fs.write(d .. "/grow.c", GROW))
  local cc = assert(proc.run { argv = { "cc", "-O2", "-o", d .. "/grow", d .. "/grow.c" }, stderr = "capture" })
  T.eq(cc.code, 0, cc.stderr)
  return d .. "/grow"
end

local EXE = build()

-- r, marks = sampled(args) : the sampler's result over the run, and the program's own times
-- (seconds on the sampler's clock: from its t0)
local function sampled(args)
  local argv = { EXE }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  local p = assert(proc.spawn { argv = argv, stdout = "null", stderr = "capture" })
  local s = assert(wb.memory.sampler(p.pid, { hz = 20 }))
  local res = p:wait()
  local r = s:stop()
  T.eq(res.code, 0, res.stderr)
  local marks = {}
  for k, v in res.stderr:gmatch("(%S+) ([%d.]+)") do marks[k] = tonumber(v) - r.t0 end
  return r, marks
end

-- The first sample time at which the tree's RSS crosses kb upwards (rising) or downwards.
local function crossing(tl, kb, rising)
  for i, v in ipairs(tl.rss_kb) do
    if (rising and v > kb) or (not rising and i > 1 and tl.rss_kb[i - 1] > kb and v <= kb) then return tl.t[i] end
  end
end

T.case("a 200 MiB rise and fall: the peak within 5% of 200 MiB plus the base, the rise and fall within 100 ms", function()
  local r, m = sampled()
  local tl = r.timeline
  T.ok(r.ticks >= 18, r.ticks .. " samples over about 1.1 s at 20 Hz")
  local base = tl.rss_kb[1]
  local want = 200 * 1024 + base
  T.ok(math.abs(r.peak.rss_kb - want) <= 0.05 * want, string.format("peak %d KiB, planted %d", r.peak.rss_kb, want))
  T.ok(r.peak.t >= m.alloc_start and r.peak.t <= m.free + 0.05, string.format("peak at %.3f s, held %.3f–%.3f",
    r.peak.t, m.alloc_start, m.free))
  local up, down = crossing(tl, 100 * 1024, true), crossing(tl, 100 * 1024, false)
  T.ok(up and up >= m.alloc_start and up <= m.alloc_end + 0.1, string.format("up at %s, allocated %.3f–%.3f",
    tostring(up), m.alloc_start, m.alloc_end))
  T.ok(down and down >= m.free and down <= m.free + 0.1, string.format("down at %s, freed %.3f", tostring(down), m.free))
  T.ok(tl.rss_kb[#tl.rss_kb] < 50 * 1024, "back down at the end")
  local me = r.processes[1]
  T.eq(#r.processes, 1)
  T.ok(math.abs(me.hwm_kb - want) <= 0.05 * want, "the process's own peak (VmHWM): " .. me.hwm_kb)
end)

T.case("a forked child's memory is under its own pid, the parent's stays small", function()
  local r, m = sampled({ "fork" })
  T.eq(#r.processes, 2, "parent and child")
  local parent, child = r.processes[1], r.processes[2]
  T.eq(child.ppid, parent.pid)
  T.ok(math.abs(child.peak_rss_kb - 100 * 1024) <= 0.08 * 100 * 1024, "child peak " .. child.peak_rss_kb)
  T.ok(parent.peak_rss_kb < 20 * 1024, "parent peak " .. parent.peak_rss_kb)
  T.ok(child.first_t >= 0.25 and child.last_t <= m.free + 0.1, "the child is seen while it lives")
  T.ok(#child.series.t == #child.series.rss_kb and #child.series.t >= 5)
end)

T.case("wb profile: the memory section, timeline files and the own peak of the root", function()
  local dir = T.tmpdir() .. "/run"
  local res = T.wb({ "run", T.root() .. "/recipes/profile.lua", "-o", dir, "--", EXE }, { timeout = 60 })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "\nmemory: tree peak RSS 2%d%d%.%d MiB at [%d.]+ ms")
  local doc = assert(wb.json.read(dir .. "/profiles/profile.memory.json"))
  T.eq({ doc.schema_name, doc.schema_version, doc.hz }, { "wb.memory", 1, 20 })
  T.eq(#doc.timeline.t, doc.samples)
  local csv = assert(fs.read(dir .. "/profiles/profile.memory.csv"))
  T.match(csv, "^t_seconds,tree_rss_kb,tree_pss_kb,tree_swap_kb\n")
  local rows, top = 0, 0
  for rss in csv:gmatch("\n[%d.]+,(%d+),") do
    rows, top = rows + 1, math.max(top, tonumber(rss))
  end
  T.eq(rows, doc.samples)
  T.eq(top, doc.peak.rss_kb, "the CSV's largest tree RSS is the peak")
  local svg = assert(fs.read(dir .. "/profiles/profile.memory.svg"))
  T.match(svg, "^<svg ")
  T.match(svg, "peak 20%d MiB at")
  T.match(assert(fs.read(dir .. "/report.html")), "<h2>Memory</h2>")
end)

T.case("wb compare: the peak RSS and the bytes allocated of two wb profile runs, as memory metrics", function()
  local d = T.tmpdir()
  assert(fs.write(d .. "/hold.c", [[
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(int argc, char **argv) { /* holds argv[1] MiB, in 1 MiB blocks, for 0.3 s */
  int n = atoi(argv[1]);
  for (int i = 0; i < n; i++) memset(malloc(1 << 20), 1, 1 << 20);
  struct timespec t = {0, 300000000L};
  nanosleep(&t, 0);
  return 0;
}
]]))
  local cc = assert(proc.run { argv = { "cc", "-O2", "-o", d .. "/hold", d .. "/hold.c" }, stderr = "capture" })
  T.eq(cc.code, 0, cc.stderr)
  for _, side in ipairs({ { "a", "40" }, { "b", "120" } }) do
    local r = T.wb({ "profile", "alloc=true", "-o", d .. "/" .. side[1], "--", d .. "/hold", side[2] }, { timeout = 60 })
    T.eq(r.code, 0, r.stderr)
  end
  local cmp = assert(proc.run { argv = { T.wb_binary(), "compare", d .. "/a/manifest.json", d .. "/b/manifest.json", "--json" },
    stdout = "capture", stderr = "capture" })
  T.eq(cmp.code, 0, cmp.stderr)
  local rows = {}
  for _, row in ipairs(wb.json.decode(cmp.stdout).rows) do rows[row.quantity] = row end
  local peak, bytes = rows.peak_rss_kb, rows.alloc_estimated_bytes
  T.ok(peak and bytes, "both metrics compared: " .. cmp.stdout:sub(1, 400))
  T.eq({ peak.kind, bytes.kind }, { "memory", "memory" })
  T.between(peak.new - peak.base, 0.9 * 80 * 1024, 1.1 * 80 * 1024, "the peak grows by the 80 MiB planted (KiB)")
  T.between(bytes.ratio, 2.2, 3.8, "bytes allocated: 120 MiB against 40 (sampled every 512 KiB)")
end)

-- Whether wb may hear the kernel's taskstats exit messages, read here from the kernel's own
-- words: CAP_NET_ADMIN (bit 12 of CapEff) in the initial user namespace (a full uid map).
local function hears_exits()
  local status, map = fs.read("/proc/self/status") or "", fs.read("/proc/self/uid_map") or ""
  local eff = tonumber(status:match("\nCapEff:%s*(%x+)") or "0", 16)
  return (eff >> 12) & 1 == 1 and map:match("^%s*0%s+0%s+4294967295%s*$") ~= nil
end

-- argv's peak RSS as GNU time measures it (its own fork child execs it: no wb in the figure)
local function time_kb(argv)
  local r = assert(proc.run { argv = { "/usr/bin/time", "-v", table.unpack(argv) }, stderr = "capture" })
  T.eq(r.code, 0, r.stderr)
  return tonumber(r.stderr:match("Maximum resident set size %(kbytes%): (%d+)"))
end

T.case("/bin/true's own peak RSS is its few MB as /usr/bin/time measures it, in 20 of 20 runs, not wb's", function()
  if not fs.exists("/usr/bin/time") then T.skip("/usr/bin/time: the time package is not installed") end
  if not hears_exits() then T.skip("taskstats exit messages need CAP_NET_ADMIN (root); the unprivileged case is below") end
  local ballast = string.rep("x", 64 << 20) -- wb's own peak is now above 64 MiB: wait4 would say so
  local want = time_kb({ "/bin/true" })
  local lo, hi = want // 2, want * 3 // 2 + 256
  for i = 1, 20 do
    local r = assert(proc.run { argv = { "/bin/true" } })
    T.between(r.own_peak_rss_kb, lo, hi, string.format("run %d: own peak KiB (time -v: %d)", i, want))
    T.eq(r.maxrss_kb, r.own_peak_rss_kb, "a tree of one: its peak is the child's own")
    T.eq(r.maxrss_bound, false)
  end
  -- a held start (wb's gate, then /bin/true) under wb.capture with the memory sampler
  for i = 1, 5 do
    local r = assert(wb.capture { argv = { "/bin/true" }, oncpu = false, offcpu = false, method = "none" })
    T.between(r.result.own_peak_rss_kb, lo, hi, string.format("capture %d: own peak KiB (time -v: %d)", i, want))
    T.eq(r.result.maxrss_bound, false)
  end
  -- a shell's tree: the peak is its largest process's own (wait4's meaning), exact
  local lua = { "lua5.4", "-e", "local s = string.rep('x', 96 << 20)" }
  local lua_kb = time_kb(lua)
  local sh = assert(proc.run { argv = { "/bin/sh", "-c", "/bin/true; " .. lua[1] .. " -e \"" .. lua[3] .. "\"" } })
  T.between(sh.maxrss_kb, lua_kb * 0.9, lua_kb * 1.1, "the tree's peak: lua's (time -v: " .. lua_kb .. " KiB)")
  T.ok(sh.own_peak_rss_kb < 8 * 1024, "the shell's own: " .. sh.own_peak_rss_kb)
  T.ok(#ballast > 0)
end)

local UNPRIVILEGED = [[
local T = require "wb.test"
local wb = require "wb"
T.case("without CAP_NET_ADMIN: the wait4 figure, flagged as an upper bound", function()
  local r = assert(wb.proc.run { argv = { "/bin/true" } })
  T.eq(r.own_peak_rss_kb, nil)
  T.eq(r.maxrss_bound, true)
  -- /bin/sleep lives past the sampler's first sample (taken at once): its own VmHWM, below wait4's
  local c = assert(wb.capture { argv = { "/bin/sleep", "0.2" }, oncpu = false, offcpu = false, method = "none" })
  T.between(c.result.own_peak_rss_kb, 256, 8 * 1024, "sleep's own peak in KiB")
  T.ok(c.result.maxrss_bound and c.result.own_peak_rss_kb < c.result.maxrss_kb)
  -- /bin/true lives about a millisecond: seen or not by the first sample, never with wb's figure
  for _ = 1, 5 do
    local t = assert(wb.capture { argv = { "/bin/true" }, oncpu = false, offcpu = false, method = "none" })
    T.ok(t.result.own_peak_rss_kb == nil or t.result.own_peak_rss_kb < 8 * 1024, tostring(t.result.own_peak_rss_kb))
    T.eq(t.result.maxrss_bound, true)
  end
end)
]]

T.case("unprivileged: the sampler's VmHWM when it saw the process, else the wait4 figure flagged as a bound", function()
  local path = T.tmpdir() .. "/unprivileged_test.lua"
  assert(fs.write(path, UNPRIVILEGED))
  local argv = { T.wb_binary(), "test", path }
  if hears_exits() then -- root: the same wb without CAP_NET_ADMIN
    if not proc.which("setpriv") then T.skip("setpriv (util-linux) is not installed") end
    table.insert(argv, 1, "setpriv")
    table.insert(argv, 2, "--bounding-set")
    table.insert(argv, 3, "-net_admin")
  end
  local r = assert(proc.run { argv = argv, stdout = "capture", stderr = "capture", timeout = 60 })
  T.eq(r.code, 0, r.stdout .. r.stderr)
  T.match(r.stdout, "1 passed")
end)

local STAGES = [[
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void sleep_ms(int ms) { struct timespec t = {ms / 1000, (ms % 1000) * 1000000L}; nanosleep(&t, 0); }
int main(void) {
  static char *b[100];
  double t = now();
  for (int i = 0; i < 100; i++) { b[i] = malloc(1 << 20); memset(b[i], 1, 1 << 20); sleep_ms(3); }
  fprintf(stderr, "stage=grow seconds=%.6f\n", now() - t);
  t = now();
  sleep_ms(400);
  fprintf(stderr, "stage=hold seconds=%.6f\n", now() - t);
  t = now();
  for (int i = 0; i < 100; i++) free(b[i]);
  sleep_ms(300);
  fprintf(stderr, "stage=release seconds=%.6f\n", now() - t);
  return 0;
}
]]

T.case("stage lines: bands on the chart, each stage's growth, the stage that holds the peak", function()
  local d = T.tmpdir()
  assert(fs.write(d .. "/stages.c", STAGES))
  local cc = assert(proc.run { argv = { "cc", "-O2", "-o", d .. "/stages", d .. "/stages.c" }, stderr = "capture" })
  T.eq(cc.code, 0, cc.stderr)
  local seen = {}
  local res = assert(wb.capture { argv = { d .. "/stages" }, oncpu = false, offcpu = false, method = "none",
    dir = d, name = "s", stage_pattern = "stage=(%S+) seconds=([%d.]+)",
    stderr = function(line) seen[#seen + 1] = line end })
  T.eq(res.result.code, 0)
  T.eq(#seen, 3, "the command's stderr still reaches its own callback")
  local st = res.memory.stages
  T.eq(#st, 3)
  T.eq({ st[1].name, st[2].name, st[3].name }, { "grow", "hold", "release" })
  local mib = 1024
  T.ok(st[1].growth_kb >= 80 * mib, "grow: " .. st[1].growth_kb .. " KiB")
  -- a stage's start and end RSS are the samples nearest its boundary: at 20 Hz one can be 50 ms off,
  -- and grow adds 1 MiB per 3 ms (up to ~17 MiB in 50 ms; 10.4 MiB was seen)
  T.ok(math.abs(st[2].growth_kb) <= 25 * mib, "hold: " .. st[2].growth_kb .. " KiB")
  T.ok(st[3].growth_kb <= -80 * mib, "release: " .. st[3].growth_kb .. " KiB")
  T.ok(st[2].peak_rss_kb >= 95 * mib, "the hold stage holds the 100 MiB")
  T.ok(st[1].holds_peak or st[2].holds_peak, string.format("the peak (%.3f s) is in grow (%.3f–%.3f) or hold (%.3f–%.3f)", res.memory.peak_t, st[1].from, st[1].to, st[2].from, st[2].to))
  T.ok(not st[3].holds_peak)
  local chart = assert(fs.read(res.memory.svg))
  for _, name in ipairs({ "grow", "hold", "release" }) do T.match(chart, ">" .. name .. "<") end
  T.raises(function() wb.capture { argv = { "/bin/true" }, stage_pattern = 1 } end, "stage_pattern must be")
end)

T.case("stage bands: stages reported one after the other meet at the earlier boundary; far misses and nesting are kept", function()
  local stages = require "wb.memory_stages"
  local function bands(marks)
    local w = assert(stages.watch { argv = { "/bin/true" }, stage_pattern = "(%S+) ([%d.]+)" })
    w.marks = marks
    return w:bands(100, 0.05)
  end
  -- b's line was read 4 ms later than a's: b's start (t - d) falls 4 ms after a's end
  local b = bands { { "a", 101.000, 1.0 }, { "b", 101.504, 0.5 } }
  T.eq({ b[1][3], b[2][2] }, { 1.000, 1.000 })
  -- a's line was read 30 ms late: its end lies past b's start, which is the boundary
  b = bands { { "a", 101.030, 1.0 }, { "b", 101.500, 0.5 } }
  T.near(b[1][3], 1.000, 1e-9)
  T.near(b[2][2], 1.000, 1e-9)
  -- a real pause of 0.2 s between stages, and a stage nested in the one reported after it
  b = bands { { "a", 101.0, 1.0 }, { "b", 101.7, 0.5 }, { "all", 101.71, 1.7 } }
  T.eq(b[1][3], 1.0)
  T.near(b[2][2], 1.2, 1e-9)
  T.near(b[3][2], 0.01, 1e-9)
  -- a short stage is not stretched by a miss as long as half of it
  b = bands { { "a", 101.0, 1.0 }, { "tiny", 101.03, 0.01 } }
  T.near(b[2][2], 1.02, 1e-9)
  -- read from a real child: each stamp is its line's read time, so two lines written together share it
  local seen = {}
  local w = assert(stages.watch { argv = { "sh", "-c", "printf 'x 0.1\\ny 0.2\\n' >&2" }, stage_pattern = "(%S+) ([%d.]+)",
    stderr = function(line) seen[#seen + 1] = line end })
  local r = assert(proc.run(w.spec))
  T.ok(r.ok)
  T.eq(#seen, 2)
  T.eq(w.marks[1][2], w.marks[2][2])
end)

