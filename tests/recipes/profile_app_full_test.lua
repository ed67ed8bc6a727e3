-- recipes/profile_app_full.lua end to end: the bundled example (stages from its
-- profile_summary.json), a Debian program (xz: no stages, functions from the capture), dry-run.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

-- Ground truth independent of the report: the stage lines the app printed on each trial's
-- stderr by its own clock, `[phases] stage=NAME seconds=S` (logs/trialN.stderr.log).
local function logged_stages(dir, n)
  local by = {}
  for i = 1, n do
    local text = assert(fs.read(dir .. "/logs/trial" .. i .. ".stderr.log"))
    for name, secs in text:gmatch("%[phases%] stage=(%w+) seconds=([%d.]+)") do
      by[name] = by[name] or {}
      by[name][i] = tonumber(secs)
    end
  end
  return by
end

local function median3(xs)
  local c = { xs[1], xs[2], xs[3] }
  table.sort(c)
  return c[2]
end

local function run_wb(args)
  return T.wb({ "run", "recipes/profile_app_full.lua", table.unpack(args) }, { timeout = 300 })
end

T.case("the bundled example: trials, stages with Amdahl bounds, capture, reports", function()
  local dir = T.tmpdir() .. "/app"
  local res = run_wb({ "-o", dir, "tool.trials=3", "tool.warmup=0" })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "## Bottlenecks")
  T.match(res.stdout, "removing it entirely gives at most %d+%.%d×")
  T.match(res.stdout, "report: " .. dir:gsub("%p", "%%%0") .. "/report.html")
  local s = assert(json.read(dir .. "/summary.json"))
  T.eq(s.schema_name, "wb.profile_app")
  T.eq(s.trials.n, 3)
  local names = {}
  for _, st in ipairs(s.bottlenecks.stages) do
    names[st.name] = true
    T.near(st.amdahl, 1 / (1 - st.fraction), 1e-9, st.name)
    T.near(st.fraction, st.seconds / s.bottlenecks.wall_seconds, 1e-9, st.name)
  end
  for _, n in ipairs({ "generate", "parse", "compute", "sort", "wait" }) do T.ok(names[n], "stage " .. n) end
  T.ok(#s.bottlenecks.first >= 3 and #s.bottlenecks.first <= 4, "3-4 places to look first")
  T.ok(s.bottlenecks.kind == "cpu-bound" or s.bottlenecks.kind == "waiting" or s.bottlenecks.kind == "cpu-contention")
  T.ok(s.capture.method ~= "none", "a capture method was used: " .. tostring(s.capture.method))
  T.eq(s.capture.counters["task-clock"].available, true)
  if s.capture.counters.cycles.available == false then T.match(s.capture.counters.cycles.reason, "%S") end
  for _, f in ipairs({ "summary.md", "report.html", "trace.json", "manifest.json", "preflight.json",
    "profiles/app.oncpu.folded", "profiles/app.oncpu.svg" }) do
    T.ok(fs.exists(dir .. "/" .. f), f)
  end
  -- the flame graph's total is the sum of the folded stacks it was drawn from, and the app's
  -- CPU-heavy functions are frames of both
  local folded = assert(fs.read(dir .. "/profiles/app.oncpu.folded"))
  local total = 0
  for n in folded:gmatch(" (%d+)\n") do total = total + tonumber(n) end
  T.ok(total > 0, "samples in the folded stacks")
  local svg = assert(fs.read(dir .. "/profiles/app.oncpu.svg"))
  T.eq(tonumber(svg:match("<title>all %((%d+) samples, 100%.00%%%)</title>")), total, "the flame graph's total")
  T.match(folded, ";parse[%.%w]*[; ]")
  T.match(svg, "<title>parse[%.%w]* %(%d+ samples")
  local html = fs.read(dir .. "/report.html")
  T.match(html, "<h2>Bottlenecks</h2>") -- the summary's Markdown rendered, not shown raw
  T.match(html, "<th[^>]*>stage</th>")
  T.ok(not html:find("<pre>", 1, true), "no raw Markdown in a <pre>")
  T.match(html, "<b>0</b> warmup") -- tool.warmup=0 above
  T.match(html, 'data="profiles/app.oncpu.svg"')
  local m = T.manifest(dir)
  T.eq(m.status, "complete")
  T.ok(#m.profilers >= 5, "profiler registry recorded in the manifest")
  -- stage medians against the app's own stderr lines (6 decimals), and the planted 200 ms wait
  local logged = logged_stages(dir, 3)
  local md = assert(fs.read(dir .. "/summary.md"))
  for _, st in ipairs(s.bottlenecks.stages) do
    T.eq(#logged[st.name], 3, st.name .. " in every trial's log")
    local want = median3(logged[st.name])
    T.near(st.seconds, want, 1.5e-6, st.name .. " median")
    -- the unit follows the value (a loaded machine can push a stage past 1 s: "1.231 s")
    T.match(md, "\n| " .. st.name .. " +| " .. wb.util.format_seconds(want):gsub("%p", "%%%0") .. " +| ")
  end
  T.between(median3(logged.wait), 0.2, 0.26, "the wait stage is the planted --sleep-ms 200")
  -- each trial's wall time is its stages' time plus start-up, never less (and not seconds more); so
  -- is the median of the walls against the median of the trials' stage sums (not the sum of the
  -- stages' medians, which come from different trials)
  local sums = { 0, 0, 0 }
  for _, st in ipairs(s.bottlenecks.stages) do
    for i = 1, 3 do sums[i] = sums[i] + logged[st.name][i] end
  end
  local trial_sum = median3(sums)
  T.between(s.bottlenecks.wall_seconds, trial_sum, trial_sum + 0.5, "median wall")
  -- trace.json: one complete event per trial, named after it, lasting the trial's wall time
  local trace = assert(json.read(dir .. "/trace.json"))
  local spans = {}
  for _, e in ipairs(trace.traceEvents) do if e.ph == "X" then spans[e.name] = e end end
  for i = 1, 3 do
    local e = spans["trial" .. i]
    T.ok(e, "a trace event for trial" .. i)
    local sum = 0
    for _, xs in pairs(logged) do sum = sum + xs[i] end
    T.between(e.dur / 1e6, sum, sum + 0.5, "trial" .. i .. " duration (µs) against its logged stages")
  end
  T.ok(spans.capture, "a trace event for the capture")
  -- report.html's timing table: its median cell is the median wall time, in the column's unit
  local unit = html:match('<th class="r" scope="col">Median %[(%a+)%]</th>')
  local factor = ({ s = 1, ms = 1e3 })[unit]
  T.ok(factor, "the median column's unit: " .. tostring(unit))
  local cell = html:match('<td class="r">[%d.]+ ± [%d.]+</td><td class="r">([%d.]+)</td>')
  local half_digit = 0.5 * 10 ^ -#(cell:match("%.(%d+)$") or "") -- the cell is rounded to its digits
  T.near(tonumber(cell), s.bottlenecks.wall_seconds * factor, half_digit + 1e-9, "report.html median [" .. unit .. "]")
end)

T.case("a Debian program (xz): no stage timers, functions from the capture", function()
  if not proc.which("xz") then T.skip("xz is not installed") end
  local d = T.tmpdir()
  local data = d .. "/data.bin"
  local f = assert(io.open(data, "wb"))
  for i = 1, 40000 do f:write(string.format("%08d some compressible text %d\n", i, i % 97)) end
  f:close()
  local res = run_wb({ "-o", d .. "/xz", "tool.trials=2", "tool.warmup=0", "tool.summary_path=null",
    "tool.command=[xz,-6,-T1,-k,-f,-c," .. data .. "]" })
  T.eq(res.code, 0, res.stderr)
  local s = assert(json.read(d .. "/xz/summary.json"))
  T.eq(#s.bottlenecks.stages, 0)
  T.ok(#s.bottlenecks.functions > 0, "functions from the on-CPU capture")
  T.match(fs.read(d .. "/xz/summary.md"), "## Functions on the CPU")
end)

T.case("the previous-run comparison: none and why, then the table with interference, in every report", function()
  local d = T.tmpdir()
  local function run(name, trials)
    local res = run_wb({ "-o", d .. "/" .. name, "tool.trials=" .. trials, "tool.warmup=0", "tool.summary_path=null",
      "tool.counters=false", "tool.oncpu=false", "tool.offcpu=false", "tool.command=[sh,-c,sleep 0.02]" })
    T.eq(res.code, 0, res.stderr)
    return res.stdout, assert(json.read(d .. "/" .. name .. "/summary.json"))
  end
  local out, s = run("a", 2)
  T.match(out, "## Compared with the previous run\n\nPrevious compatible run: none %(no earlier complete run of " ..
    "profile_app_full in [^)]+/%)%.")
  T.eq({ s.previous.path, #s.previous.rows, s.previous.summary }, { wb.null, 0, wb.null })
  T.ok(s.trials.interference.runq_mean_seconds >= 0, "the trials' interference in brief")
  T.match(out, "Interference: waiting for a CPU [%d.]+ %S*s per trial")
  out, s = run("b", 4)
  local why = "the latest complete run of profile_app_full, " .. d .. "/a, is not comparable: it differs in " ..
    "tool.trials: 2 → 4; to compare with it anyway: --baseline " .. d .. "/a"
  T.eq(s.previous.text, "Previous compatible run: none (" .. why .. ").")
  T.eq(T.manifest(d .. "/b").previous_missing_reason, why)
  T.ok(out:find(why, 1, true), "the reason on the terminal")
  out, s = run("c", 4)
  T.eq(s.previous.path, d .. "/b/manifest.json")
  T.eq(s.previous.text, "Previous compatible run: " .. d .. "/b.")
  local wall
  for _, row in ipairs(s.previous.rows) do if row.metric == "trials wall_seconds" then wall = row end end
  T.ok(wall and wall.tested and wall.interference ~= wb.null and wall.interference.net, "the wall tested net of run-queue delay")
  T.match(out, "| metric +| +base | +new | verdict +| why +| interference +|")
  T.match(out, "| trials wall_seconds +|[^\n]*| wall net of run%-queue delay; run%-queue delay ")
  local html = fs.read(d .. "/c/report.html")
  T.ok(html:find("Compared with the previous run", 1, true) and html:find("run-queue delay", 1, true), "report.html")
  T.ok(fs.read(d .. "/c/summary.md"):find("| trials wall_seconds", 1, true), "summary.md")
  -- a baseline named: compared with it whatever differs
  local res = run_wb({ "-o", d .. "/e", "tool.trials=2", "tool.warmup=0", "tool.summary_path=null", "tool.counters=false",
    "tool.oncpu=false", "tool.offcpu=false", "tool.command=[sh,-c,sleep 0.02]", "--baseline", d .. "/c" })
  T.eq(res.code, 0, res.stderr)
  T.eq(assert(json.read(d .. "/e/summary.json")).previous.path, d .. "/c/manifest.json")
end)

-- The application's stage lines are its own: one whose seconds are not a number is reported and
-- left out, never fatal to the report (appprofile.lua:108 raised on `seconds=1.2.3`).
T.case("a malformed stage line: left out and named, the report written", function()
  local d = T.tmpdir()
  assert(fs.write(d .. "/app.sh", "echo 'stage=parse seconds=1.2.3' >&2\necho 'stage=load seconds=0.25' >&2\n"))
  local res = run_wb({ "-o", d .. "/run", "tool.trials=2", "tool.warmup=0", "tool.summary_path=null",
    "tool.oncpu=false", "tool.offcpu=false", "tool.memory=false", "tool.command=[sh," .. d .. "/app.sh]" })
  T.eq(res.code, 0, res.stderr)
  local s = assert(json.read(d .. "/run/summary.json"))
  T.eq(#s.bottlenecks.stages, 1)
  T.eq(s.bottlenecks.stages[1].name, "load")
  T.match(fs.read(d .. "/run/summary.md"), "2 stage lines left out: the seconds are not a number %(first: `parse=1%.2%.3`%)")
end)

-- A program that allocates and touches 96 MiB in 96 blocks from one site, holds them 0.4 s, frees
-- them and holds again, printing each stage's line on stderr (profile_app_full's default
-- stage_pattern): the memory section's peak, stage bands and allocation profile against that.
-- Each stage starts with 0.2 s idle: wb stamps a stage line when it reads it, which can be tens
-- of milliseconds late while it walks a drain of samples on a loaded machine, so each band may
-- sit that much later than the stage (the hold stage read +52 MiB of its 96 once: its band began
-- inside the allocations).
T.case("memory: the capture run's peak RSS, stages and allocations, against a program that holds 96 MiB", function()
  local d = T.tmpdir()
  assert(fs.write(d .. "/hold.c", [[
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void nap(long ms) { struct timespec t = {0, ms * 1000000L}; nanosleep(&t, 0); }
__attribute__((noinline)) char *grab(int i) { char *p = malloc(1 << 20); memset(p, i + 1, 1 << 20); return p; }
int main(void) {
  char *blocks[96];
  double t = now();
  nap(200);
  for (int i = 0; i < 96; i++) blocks[i] = grab(i);
  nap(400);
  fprintf(stderr, "stage=hold seconds=%.6f\n", now() - t);
  t = now();
  nap(200);
  int sum = 0;
  for (int i = 0; i < 96; i++) { sum += blocks[i][i]; free(blocks[i]); }
  nap(400);
  fprintf(stderr, "stage=release seconds=%.6f\n", now() - t);
  return sum == 0;
}
]]))
  local cc = assert(proc.run { argv = { "cc", "-O2", "-g", "-o", d .. "/hold", d .. "/hold.c" }, stderr = "capture" })
  T.eq(cc.code, 0, cc.stderr)
  local res = run_wb({ "-o", d .. "/m", "tool.trials=1", "tool.warmup=0", "tool.summary_path=null", "tool.alloc=true",
    "tool.command=[" .. d .. "/hold]" })
  T.eq(res.code, 0, res.stderr)
  local mem = assert(json.read(d .. "/m/profiles/app.memory.json"))
  local want = 96 * 1024 -- KiB the program touches, on top of its few MiB of base
  T.between(mem.peak.rss_kb, want, want * 1.1 + 8192, "tree peak RSS, KiB")
  local md = assert(fs.read(d .. "/m/summary.md"))
  T.match(md, "## Memory %(the capture run%)\n\nTree peak RSS " .. wb.capture_report.kib_text(mem.peak.rss_kb):gsub("%p", "%%%0"))
  local alloc = assert(json.read(d .. "/m/profiles/app.alloc.json"))
  T.between(alloc.estimated_bytes, 0.8 * 96 * 2^20, 1.2 * 96 * 2^20, "estimated bytes allocated")
  T.match(assert(fs.read(d .. "/m/profiles/app.alloc.folded")), ";grab ")
  local html = assert(fs.read(d .. "/m/report.html"))
  T.match(html, "<h2>Memory</h2>")
  T.match(html, "<h2>Allocations</h2>")
  T.eq(select(2, html:gsub("<h2>Memory", "")), 1, "one Memory section")
  -- the stages: bands on the chart, growth in the tables, the stage holding the peak
  T.eq(#mem.stages, 2)
  local hold, release = mem.stages[1], mem.stages[2]
  T.eq({ hold.name, release.name }, { "hold", "release" })
  T.ok(hold.growth_kb >= 0.8 * want and hold.holds_peak, "hold: +" .. hold.growth_kb .. " KiB, holds the peak")
  T.ok(release.growth_kb <= -0.8 * want and not release.holds_peak, "release: " .. release.growth_kb .. " KiB")
  local chart = assert(fs.read(d .. "/m/profiles/app.memory.svg"))
  T.match(chart, ">hold<")
  T.match(chart, ">release<")
  T.match(md, "\n| *hold *|[^\n]*| *here *|\n")
  T.match(html, "<td[^>]*>hold</td>")
  T.match(assert(fs.read(d .. "/m/logs/capture.stderr.log")), "^stage=hold seconds=[%d.]+\nstage=release seconds=[%d.]+\n$")
  -- the capture's peak and bytes allocated are the manifest's metrics, which wb compare sets side by side
  local rows = {}
  local cmp = assert(proc.run { argv = { T.wb_binary(), "compare", d .. "/m/manifest.json", d .. "/m/manifest.json", "--json" },
    stdout = "capture", stderr = "capture" })
  T.eq(cmp.code, 0, cmp.stderr)
  for _, row in ipairs(json.decode(cmp.stdout).rows) do rows[row.metric] = row end
  T.eq({ rows["capture peak_rss_kb"].base, rows["capture peak_rss_kb"].kind }, { mem.peak.rss_kb, "memory" })
  T.eq({ rows["capture alloc_estimated_bytes"].base, rows["capture alloc_estimated_bytes"].kind }, { alloc.estimated_bytes, "memory" })
end)

T.case("a callgrind pass when valgrind is present and tool.callgrind=true", function()
  if not proc.which("valgrind") then T.skip("valgrind is not installed") end
  local d = T.tmpdir()
  local res = run_wb({ "-o", d .. "/cg", "tool.trials=1", "tool.warmup=0", "tool.callgrind=true",
    "tool.counters=false", "tool.oncpu=false", "tool.offcpu=false",
    "tool.command=[build/examples/phases,--scale,1,--sleep-ms,0,--summary,'{run_dir}/s.json']" })
  T.eq(res.code, 0, res.stderr)
  local s = assert(json.read(d .. "/cg/summary.json"))
  T.ok(s.callgrind.total_instructions > 1e6)
  local names = {}
  for _, f in ipairs(s.callgrind.top) do names[#names + 1] = f.name end
  T.match(table.concat(names, ","), "parse[%.%w]* %(phases%.c%)")
  T.ok(fs.exists(d .. "/cg/profiles/callgrind.out"))
  T.match(fs.read(d .. "/cg/summary.md"), "## callgrind")
end)

T.case("--dry-run writes only the plan, with the budget", function()
  local d = T.tmpdir()
  local res = run_wb({ "-o", d .. "/dry", "--dry-run", "tool.callgrind=true" })
  T.eq(res.code, 0, res.stderr)
  T.ok(fs.exists(d .. "/dry/plan.json") and fs.exists(d .. "/dry/plan.md"))
  T.ok(not fs.exists(d .. "/dry/summary.json"))
  local plan = assert(json.read(d .. "/dry/plan.json"))
  T.eq(plan.totals.subprocess_runs, 6 + 1 + (proc.which("valgrind") and 1 or 0))
  res = run_wb({ "-o", d .. "/over", "tool.max_subprocess_runs=3" })
  T.eq(res.code, 1)
  T.match(res.stderr, "over budget: %d+ subprocess runs > max_subprocess_runs 3")
end)

-- dir = path_without(names) : a directory of symlinks to every program on PATH except names,
-- the PATH of a machine without them
local function path_without(names)
  local drop, dir = {}, T.tmpdir() .. "/bin"
  for _, n in ipairs(names) do drop[n] = true end
  assert(fs.mkdir_p(dir))
  for p in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    for _, name in ipairs(fs.list(p) or {}) do
      if not drop[name] and not fs.lstat(dir .. "/" .. name) then assert(fs.symlink(p .. "/" .. name, dir .. "/" .. name)) end
    end
  end
  return dir
end

T.case("tool.callgrind=true without valgrind or callgrind_annotate: the pass is skipped with its reason, exit 0", function()
  local d = T.tmpdir()
  for _, case in ipairs({ { { "valgrind", "callgrind_annotate" }, "valgrind is not on PATH" },
    { { "callgrind_annotate" }, "callgrind_annotate is not on PATH" } }) do
    local bin = path_without(case[1])
    T.ok(not fs.exists(bin .. "/callgrind_annotate") and fs.exists(bin .. "/sh"), "the PATH lacks only " .. case[2])
    local dir = d .. "/" .. #case[1]
    local res = T.wb({ "run", "recipes/profile_app_full.lua", "-o", dir, "tool.trials=1", "tool.warmup=0",
      "tool.callgrind=true", "tool.counters=false", "tool.oncpu=false", "tool.offcpu=false",
      "tool.command=[build/examples/phases,--scale,1,--sleep-ms,0]" }, { env = { PATH = bin }, timeout = 120 })
    T.eq(res.code, 0, res.stderr)
    T.eq(assert(json.read(dir .. "/summary.json")).callgrind, { skipped = case[2] })
    T.match(assert(fs.read(dir .. "/summary.md")), "\n## Notes\n\n%- skipped: " .. case[2]:gsub("%p", "%%%0") .. "\n")
    T.ok(not fs.exists(dir .. "/logs/callgrind.stderr.log"), "no callgrind run")
    T.eq(T.manifest(dir).status, "complete")
  end
end)
