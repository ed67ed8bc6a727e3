local T = require "wb.test"
local wb = require "wb"
local bench, fs, json = wb.bench, wb.fs, wb.json

local function by_name(summary)
  local out = {}
  for _, c in ipairs(summary.commands) do out[c.name] = c end
  return out
end

T.case("sleep 0.05 vs sleep 0.1: ratio near 2, CI excludes 1, verdict slower", function()
  local s = bench.run { commands = { "sleep 0.05", "sleep 0.1" }, runs = 10 }
  local cmp = s.comparisons[1]
  T.eq(cmp.name, "sleep 0.1")
  T.eq(cmp.reference, "sleep 0.05")
  local fast, slow = by_name(s)["sleep 0.05"].samples.wall:totable(), by_name(s)["sleep 0.1"].samples.wall:totable()
  -- the ratio is of the means wb measured, net of each run's wait for a CPU where wb knows it
  local function net(name, walls)
    local ev = wb.interference.from_samples(by_name(s)[name].samples, "wall")
    return ev and wb.interference.net(walls, ev) or walls
  end
  T.eq(cmp.net_of_run_queue_delay, wb.interference.from_samples(by_name(s)["sleep 0.05"].samples, "wall") and true or nil)
  T.near(cmp.ratio_mean, wb.stats.mean(net("sleep 0.1", slow)) / wb.stats.mean(net("sleep 0.05", fast)), 1e-9,
    "the ratio of the measured means")
  T.ok(cmp.ci_lo > 1 and cmp.ci_lo <= cmp.ratio_mean and cmp.ci_hi >= cmp.ratio_mean, "CI brackets the ratio, excludes 1")
  T.eq(cmp.verdict, "slower")
  T.match(cmp.text, "^sleep 0%.1 is %d%.%d%d× slower than sleep 0%.05 %(95%% CI")
  T.eq(tonumber(cmp.text:match("^sleep 0%.1 is ([%d.]+)×")), tonumber(string.format("%.2f", cmp.ratio_mean)),
    "the ratio in the text")
  -- the planted ratio is 2, give or take the few ms of start-up of each side: a run that the
  -- machine delayed (a busy CPU, a stalled VM) lengthens one mean but not the medians of 10 runs
  -- ... and net of each run's wait for a CPU (which on a busy machine is most of the difference)
  T.near(wb.stats.median(net("sleep 0.1", slow)) / wb.stats.median(net("sleep 0.05", fast)), 2.0, 0.15,
    "the ratio of the medians, net of the wait for a CPU")
  for i = 1, 10 do T.ok(fast[i] >= 0.05 and slow[i] >= 0.1, "no run shorter than its sleep") end
  local c = by_name(s)["sleep 0.05"]
  T.eq(c.stats.wall.n, 10)
  T.eq(#c.samples.wall, 10)
  T.near(c.stats.wall.median, 0.05, 0.03)
  T.eq(c.samples.exit_code:totable(), { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 })
  T.eq(c.samples.maxrss_kb:kind(), "integer")
end)

T.case("two identical commands: no significant difference", function()
  local s = bench.run { commands = { { name = "a", argv = { "sleep", "0.02" } }, { name = "b", argv = { "sleep", "0.02" } } }, runs = 15 }
  T.eq(s.comparisons[1].verdict, "no significant difference", s.comparisons[1].text)
end)

T.case("automatic run count: at least min_runs and min_time", function()
  local s = bench.run { commands = { "sleep 0.02" }, min_runs = 5, min_time = 0.5 }
  local n, mean = s.commands[1].stats.wall.n, s.commands[1].stats.wall.mean
  -- planned from the measured wall (longer than 20 ms when the machine is busy): the runs fill
  -- min_time, give or take the last one
  T.ok(n >= 5 and n <= 30 and (n + 1) * mean >= 0.5, string.format("runs: %d of %.1f ms", n, mean * 1000))
  s = bench.run { commands = { "sleep 0.02" }, min_runs = 7, min_time = 0.01 }
  T.eq(s.commands[1].stats.wall.n, 7)
  -- a first run slower than the rest (the command sleeps only the first time) must not cut the
  -- measured total short of min_time
  local d = T.tmpdir()
  s = bench.run { commands = { "sh -c 'test -e " .. d .. "/warm || { touch " .. d .. "/warm; sleep 0.3; }'" },
    min_runs = 3, min_time = 0.6 }
  local w = s.commands[1].stats.wall
  T.ok(w.n * w.mean >= 0.6, string.format("%d runs, %.3f s measured", w.n, w.n * w.mean))
end)

T.case("setup, prepare, conclude, cleanup and warmup run in order, interleaved commands, each round rotated", function()
  local d = T.tmpdir()
  local log = d .. "/log"
  local function note(word) return "echo " .. word .. " >> " .. log end
  bench.run {
    commands = { { name = "A", argv = { "sh", "-c", note("A") } }, { name = "B", argv = { "sh", "-c", note("B") } } },
    runs = 2, warmup = 1, setup = note("setup"), prepare = note("prepare"), conclude = note("conclude"),
    cleanup = note("cleanup"),
  }
  local words = {}
  for w in fs.read(log):gmatch("%S+") do words[#words + 1] = w end
  T.eq(table.concat(words, " "), table.concat({
    "setup A prepare A conclude", "setup B prepare B conclude",
    "prepare B conclude prepare A conclude", "cleanup cleanup" }, " "), "the round after the first runs rotated")
end)

T.case("interleaved: after the first timed run of each, every command takes every place of the order in turn", function()
  local seen = {}
  bench.run { commands = { "true", "sleep 0", "echo" }, runs = 7,
    on_run = function(name) seen[#seen + 1] = name end }
  T.eq(#seen, 18, "6 rounds of 3 after the 3 first runs")
  local places = {} -- places[name][k]: the rounds in which name ran k-th
  for i, name in ipairs(seen) do
    places[name] = places[name] or { 0, 0, 0 }
    local k = (i - 1) % 3 + 1
    places[name][k] = places[name][k] + 1
  end
  for _, name in ipairs({ "true", "sleep 0", "echo" }) do T.eq(places[name], { 2, 2, 2 }, name) end
end)

T.case("random order is seeded and reproducible", function()
  local function order(seed)
    local seen = {}
    bench.run { commands = { "true", "sleep 0", "echo" }, runs = 6, order = "random", seed = seed,
      on_run = function(name) seen[#seen + 1] = name end }
    return table.concat(seen, ",")
  end
  T.eq(order(7), order(7))
  T.ok(order(7) ~= order(8) or order(7) ~= order(9), "different seeds shuffle differently")
end)

T.case("failures stop the bench unless ignore_failure; warnings name them", function()
  T.raises(function() bench.run { commands = { "false" }, runs = 2 } end,
    "bench: command 'false' failed (exit code 1); use ignore_failure=true")
  local s = bench.run { commands = { "false" }, runs = 3, ignore_failure = true }
  T.eq(s.commands[1].samples.exit_code:totable(), { 1, 1, 1 })
  local w = table.concat(s.commands[1].warnings, "\n")
  T.match(w, "3 of 3 runs exited with a non%-zero status")
  T.match(w, "under 5 ms")
  T.raises(function() bench.run { commands = { "wb-no-such-cmd" }, runs = 1 } end,
    "bench: wb-no-such-cmd: spawn: wb-no-such-cmd: No such file or directory")
  T.raises(function() bench.run { commands = { "echo 'open" }, runs = 1 } end, "unterminated single quote")
end)

T.case("shell=true subtracts the shell's spawn cost", function()
  local s = bench.run { commands = { "sleep 0.03" }, shell = true, runs = 8 }
  T.ok(s.settings.shell_spawn_seconds > 0 and s.settings.shell_spawn_seconds < 0.02)
  T.eq(s.commands[1].argv, { "/bin/sh", "-c", "sleep 0.03" })
  -- net of the wait for a CPU where wb knows it: a busy machine adds that wait to every run
  local ev = wb.interference.from_samples(s.commands[1].samples, "wall")
  local walls = s.commands[1].samples.wall:totable()
  T.near(wb.stats.median(ev and wb.interference.net(walls, ev) or walls), 0.03, 0.01)
end)

T.case("parameter scans substitute {param} and record the axis", function()
  local s = bench.run { commands = { "sleep 0.0{n}" }, scan = { n = "1,2" }, runs = 3 }
  T.eq(#s.commands, 2)
  T.eq(s.commands[1].name, "sleep 0.01")
  T.eq(s.commands[2].argv, { "sleep", "0.02" })
  T.eq(s.commands[2].parameters.n, 2)
  T.eq(s.scan.parameter, "n")
  T.eq(bench.parse_scan("1..8"), { 1, 2, 4, 8 })
  T.eq(bench.parse_scan("0..3"), { 0, 1, 2, 3 })
  T.eq(bench.parse_scan("2:8:3"), { 2, 5, 8 })
end)

T.case("wb bench CLI writes the run directory and reports", function()
  local d = T.tmpdir()
  local res = wb.proc.run { argv = { T.wb_binary(), "bench", "sleep 0.01", "sleep 0.02", "runs=5", "-o", d .. "/b" },
    stdout = "capture", stderr = "capture" }
  T.eq(res.code, 0, res.stderr)
  -- planted ratio 2 (sleep 0.02 vs 0.01), give or take each side's few ms of start-up; 1:1 and
  -- 3:1 are outside
  T.between(tonumber(res.stdout:match("%*%*([%d.]+)× slower%*%* than `sleep 0%.01`")), 1.5, 2.3, "ratio in the report")
  for _, f in ipairs({ "summary.json", "summary.md", "summary.csv", "runs.csv", "hyperfine.json", "report.html", "manifest.json" }) do
    T.ok(fs.exists(d .. "/b/" .. f), f)
  end
  -- runs.csv: the raw samples, five per command, no shorter than the planted sleep
  local runs_csv = assert(fs.read(d .. "/b/runs.csv"))
  local header, walls = runs_csv:match("^([^\n]*)\n"), { ["sleep 0.01"] = {}, ["sleep 0.02"] = {} }
  T.eq(header, "command,run,wall,user,sys,maxrss_kb,exit_code")
  for cmd, run, wall, code in runs_csv:gmatch("\n([^,\n]+),(%d+),([%d.e-]+),[^,]*,[^,]*,%d+,(%d+)") do
    T.eq(tonumber(run), #walls[cmd] + 1, cmd .. " run number")
    T.eq(code, "0")
    walls[cmd][#walls[cmd] + 1] = tonumber(wall)
  end
  for cmd, planted in pairs({ ["sleep 0.01"] = 0.01, ["sleep 0.02"] = 0.02 }) do
    T.eq(#walls[cmd], 5, cmd .. " rows in runs.csv")
    for _, w in ipairs(walls[cmd]) do T.between(w, planted, planted + 0.1, cmd .. " wall") end
  end
  -- summary.csv: its columns, and each mean and median recomputed from runs.csv
  local summary_csv = assert(fs.read(d .. "/b/summary.csv"))
  T.eq(summary_csv:match("^([^\n]*)\n"),
    "name,command,n,mean,stddev,median,min,max,mad,p5,p95,user_mean,sys_mean,maxrss_kb_mean")
  local rows = 0
  for name, n, mean, median, min, max in summary_csv:gmatch("\n([^,\n]+),[^,]+,(%d+),([%d.e-]+),[^,]+,([%d.e-]+),([%d.e-]+),([%d.e-]+),") do
    rows = rows + 1
    local xs = walls[name]
    T.eq(tonumber(n), 5, name)
    local sum = 0
    for _, w in ipairs(xs) do sum = sum + w end
    T.near(tonumber(mean), sum / 5, 1e-9, name .. " mean")
    local sorted = table.move(xs, 1, 5, 1, {})
    table.sort(sorted)
    T.near(tonumber(median), sorted[3], 1e-9, name .. " median")
    T.near(tonumber(min), sorted[1], 1e-9, name .. " min")
    T.near(tonumber(max), sorted[5], 1e-9, name .. " max")
  end
  T.eq(rows, 2, "summary.csv rows")
  -- report.html: a row per command whose median cell is the median of its runs, in ms
  local html = assert(fs.read(d .. "/b/report.html"))
  for cmd, xs in pairs(walls) do
    local sorted = table.move(xs, 1, 5, 1, {})
    table.sort(sorted)
    local cell = html:match("<code>" .. cmd:gsub("%p", "%%%0") .. '</code>.-</th><td class="r">[^<]*</td><td class="r">([%d.]+)</td>')
    T.near(tonumber(cell), sorted[3] * 1000, 0.05 + 1e-9, cmd .. " median in report.html")
  end
  local s = json.read(d .. "/b/summary.json")
  T.eq(s.schema_name, "wb.bench")
  local hf = json.read(d .. "/b/hyperfine.json")
  T.eq(#hf.results[1].times, 5)
  local m = json.read(d .. "/b/manifest.json")
  T.eq(m.status, "complete")
  T.eq(#m.runs, 2)
  res = wb.proc.run { argv = { T.wb_binary(), "bench" }, stdout = "capture", stderr = "capture" }
  T.eq(res.code, 2)
  T.eq(res.stderr, "wb: bench: which commands? e.g. wb bench 'sleep 0.1' 'sleep 0.2'\n")
end)

-- The bound path of a bench whose wb cannot hear exit messages: as root, the same bench in a wb
-- without CAP_NET_ADMIN (setpriv).
local function bench_without_exits(d, commands)
  local argv = { T.wb_binary(), "bench", "runs=3", "-o", d .. "/b" }
  for _, c in ipairs(commands) do argv[#argv + 1] = c end
  if wb.proc.run({ argv = { "true" } }).own_peak_rss_kb then
    if not wb.proc.which("setpriv") then T.skip("setpriv (util-linux) is not installed") end
    table.insert(argv, 1, "setpriv")
    table.insert(argv, 2, "--bounding-set")
    table.insert(argv, 3, "-net_admin")
  end
  local r = assert(wb.proc.run { argv = argv, stdout = "capture", stderr = "capture", timeout = 120 })
  T.eq(r.code, 0, r.stderr)
  return json.read(d .. "/b/summary.json"), r.stdout
end

T.case("peak RSS below wb's own, when only wait4's figure is known: an upper bound (warning, ≤, not compared)", function()
  local d = T.tmpdir()
  local big = "lua5.4 -e \"local s = string.rep('x', 96 * 1024 * 1024)\""
  local doc, md = bench_without_exits(d, { "true", big })
  local c = by_name(doc)
  T.eq(c["true"].maxrss_upper_bound, true)
  T.match(table.concat(c["true"].warnings, "\n"), "peak RSS is an upper bound in every run")
  T.eq(c[big].maxrss_upper_bound, false)
  T.ok(c[big].stats.maxrss_kb.min >= 96 * 1024)
  T.match(md, "| +≤ %d[%d.]* |")
  local metrics = wb.compare.from_document(doc, "summary.json").metrics
  T.ok(metrics["true wall mean"] ~= nil)
  T.ok(metrics["true maxrss_kb mean"] == nil, "an upper bound is not compared")
  T.ok(metrics[big .. " maxrss_kb mean"] ~= nil)
end)

T.case("peak RSS where wb hears exit messages (root): each run's own, compared", function()
  if not wb.proc.run({ argv = { "true" } }).own_peak_rss_kb then
    T.skip("taskstats exit messages need CAP_NET_ADMIN (root)")
  end
  local s = bench.run { commands = { "true" }, runs = 3 }
  local c = by_name(s)["true"]
  T.eq(c.maxrss_upper_bound, false)
  T.ok(c.stats.maxrss_kb.max < 8 * 1024, "true's own peak, not wb's: " .. c.stats.maxrss_kb.max)
  local metrics = wb.compare.from_document(json.decode(wb.report.json(s)), "summary.json").metrics
  T.ok(metrics["true maxrss_kb mean"] ~= nil, "an exact peak RSS is a metric")
end)

T.case("too few runs for the rank test to reach p < 0.05: the verdict says so", function()
  local s = bench.run { commands = { "sleep 0.001", "sleep 0.004" }, runs = 3 }
  local cmp = s.comparisons[1]
  T.eq(cmp.verdict, "no significant difference")
  T.eq(cmp.note, "3 vs 3 runs cannot reach p < 0.05: run more")
  T.match(wb.report.markdown(s), "p = [%d.]+%); 3 vs 3 runs cannot reach p < 0%.05: run more")
  local four = bench.run { commands = { "sleep 0.001", "sleep 0.004" }, runs = 4 }
  T.eq(four.comparisons[1].note, nil)
end)

T.case("bad run counts from Lua are usage errors naming the key, not a bad argument deep inside", function()
  for _, case in ipairs({ { runs = 2.5 }, { runs = 0 }, { runs = "abc" }, { warmup = -2 }, { min_runs = 0 } }) do
    local spec = { commands = { "true" } }
    for k, v in pairs(case) do spec[k] = v end
    local e = T.raises(bench.run, "must be an integer >= ", spec)
    T.eq(e.exit, 2)
    T.match(e.msg, "^bench: [%a_]+ must be an integer >= %d, got ")
  end
end)

T.case("declare and record: a plan's cases become campaign records, each with its metrics and samples", function()
  local spec = { commands = { "true", { name = "f", argv = { "false" } } }, runs = 2, ignore_failure = true }
  local declared, records = nil, {}
  local c = { declare = function(_, names) declared = names end,
    record = function(_, name) records[name] = records[name] or {} return records[name] end }
  bench.declare(c, bench.plan(spec))
  T.eq(declared, { "true", "f" })
  local summary = bench.run(spec)
  bench.record(c, summary)
  local t = records["true"]
  T.eq(t.status, "success")
  T.eq(t.command_arguments[1], "true")
  T.eq(t.metrics.wall_mean_seconds, summary.commands[1].stats.wall.mean)
  T.eq(#t.samples.wall_seconds, 2)
  T.eq(records.f.metrics.wall_max_seconds, summary.commands[2].stats.wall.max)
end)

-- A program that allocates N blocks of 1000 bytes, forks a child that allocates 300,000 bytes
-- and leaves by _exit, another that allocates 200,000 and is killed by SIGKILL, and then execs
-- itself ("again") to allocate 50,000 more: every byte of the tree, exactly.
local ALLOCATOR = [[
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
void *volatile kept; /* the blocks escape: no compiler leaves out their malloc */
static void use(size_t n) { char *p = malloc(n); if (p) { memset(p, 1, n); } kept = p; }
int main(int argc, char **argv) {
  if (argc > 2) { use(50000); return 0; }
  int n = atoi(argv[1]);
  for (int i = 0; i < n; i++) use(1000);
  pid_t a = fork();
  if (a == 0) { use(300000); _exit(0); }
  waitpid(a, NULL, 0);
  pid_t b = fork();
  if (b == 0) { use(200000); raise(SIGKILL); }
  waitpid(b, NULL, 0);
  execl(argv[0], argv[0], argv[1], "again", (char *)NULL);
  return 1;
}
]]

T.case("alloc_runs: the bytes a process tree allocates, exactly (fork, _exit, SIGKILL, exec); a static program is skipped", function()
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/a.c", ALLOCATOR))
  T.sh("cc -O1 -o a a.c && cc -O1 -static -o s a.c", dir)
  local s = bench.run { commands = { dir .. "/a 1000", dir .. "/a 3000", dir .. "/s 1000",
    { name = "relative", argv = { "./s", "1000" }, cwd = dir } }, runs = 2, alloc_runs = 3 }
  local c = by_name(s)
  local one, three = c[dir .. "/a 1000"], c[dir .. "/a 3000"]
  -- the program's own: N x 1000 + 300,000 + 200,000 + 50,000; the C library may add a little of its own
  local own = 1000 * 1000 + 550000
  T.eq(#one.samples.alloc_bytes, 3)
  for _, x in ipairs(one.samples.alloc_bytes) do T.between(x, own, own + 16384) end
  -- two programs that differ by 2000 allocations of 1000 bytes differ by exactly that
  T.eq(three.stats.alloc_bytes.mean - one.stats.alloc_bytes.mean, 2000 * 1000)
  T.eq(one.stats.alloc_bytes.stddev, 0, "a deterministic program allocates the same every run")
  T.ok(one.alloc.processes >= 4, "the parent, both children and the exec'd image counted: " .. one.alloc.processes)
  T.eq(one.alloc.foreign, 0)
  T.ok(one.alloc.allocations >= 1000 + 3, "allocations: " .. one.alloc.allocations)
  -- the timed runs never had the shim: the counted tree's samples only in alloc_bytes
  T.eq(#one.samples.wall, 2)
  -- statically linked: no preload can count it, and the summary says so
  local st = c[dir .. "/s 1000"]
  T.eq(st.samples.alloc_bytes, nil)
  T.match(st.alloc.skipped, "statically linked")
  T.match(c.relative.alloc.skipped, "statically linked: " .. dir .. "/%./s has no dynamic loader", "found in its cwd")
  local warned = false
  for _, w in ipairs(st.warnings) do warned = warned or w:find("allocations not counted: ", 1, true) ~= nil end
  T.ok(warned, "a warning names the skip")
  -- the memory metric wb compare, the history and the gate read
  local set = wb.compare.from_document(s)
  local m = set.metrics[dir .. "/a 1000 alloc_bytes mean"]
  T.ok(m, "alloc_bytes mean is a compared metric")
  T.eq(m.kind, "memory")
  T.eq(m.unit, "B")
  T.eq(#m.samples, 3)
  T.raises(function() bench.run { commands = { "true" }, runs = 1, alloc_runs = -1 } end, "alloc_runs")
end)
