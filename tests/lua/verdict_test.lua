-- The comparison engine (wb.verdict): its rules on samples with known answers. End to end (the
-- same bench twice, a planted slowdown, every entry point): tests/lua/verdict_e2e_test.lua.
local T = require "wb.test"
local wb = require "wb"
local verdict = require "wb.verdict"
local fs, json, proc = wb.fs, wb.json, wb.proc

local function spread(level, n, width)
  local xs = {}
  for i = 1, n do xs[i] = level * (1 + width * ((i - 1) / (n - 1) - 0.5)) end
  return xs
end

T.case("min_p: the smallest p the exact rank test can give", function()
  T.near(verdict.min_p(3, 3), 0.1, 1e-12)
  T.near(verdict.min_p(4, 4), 2 / 70, 1e-12)
  T.near(verdict.min_p(10, 10), 2 / 184756, 1e-15)
  T.eq(verdict.min_p(1, 1), 1)
end)

T.case("Benjamini–Hochberg: q-values computed by hand", function()
  -- sorted p: 0.01 (k=1), 0.03 (k=2), 0.04 (k=3); q_k = min over j >= k of p_j * m / j
  local q = verdict.bh({ 0.01, 0.04, 0.03 })
  T.near(q[1], 0.03, 1e-12)
  T.near(q[2], 0.04, 1e-12)
  T.near(q[3], 0.04, 1e-12)
  q = verdict.bh({ 0.5, 0.001, 0.02, 0.9 })
  T.near(q[2], 0.004, 1e-12)
  T.near(q[3], 0.04, 1e-12)
  T.near(q[1], 2 / 3, 1e-12)
  T.near(q[4], 0.9, 1e-12)
end)

T.case("a tested change is a verdict only beyond the threshold, at p < alpha and with a CI excluding 1", function()
  local base = spread(1.0, 10, 0.02)
  local slow = verdict.compare("wall_seconds", 1.0, 1.1, { base_samples = base, new_samples = spread(1.1, 10, 0.02) })
  T.eq({ slow.tested, slow.verdict }, { true, "regression" })
  T.ok(slow.p < 1e-4 and slow.ci_lo > 1.08 and slow.ci_hi < 1.12, slow.reason)
  T.match(slow.reason, "^1%.10× slower: p = [%d.e-]+, CI 1%.%d%d–1%.%d%d×: regression$")
  local fast = verdict.compare("wall_seconds", 1.0, 0.9, { base_samples = base, new_samples = spread(0.9, 10, 0.02) })
  T.eq(fast.verdict, "improvement")
  local small = verdict.compare("wall_seconds", 1.0, 1.01, { base_samples = base, new_samples = spread(1.01, 10, 0.002) })
  T.eq(small.verdict, "unchanged")
  T.match(small.reason, "within the 2%% threshold$")
  -- userdata samples (what wb.bench holds in memory) are tested as lists are
  local s1, s2 = wb.stats.samples(), wb.stats.samples()
  for i, x in ipairs(base) do s1:add(x); s2:add(spread(1.1, 10, 0.02)[i]) end
  local ud = verdict.compare("wall_seconds", 1.0, 1.1, { base_samples = s1, new_samples = s2 })
  T.eq({ ud.verdict, ud.p }, { "regression", slow.p })
end)

T.case("p below alpha but the CI includes 1: not significant (the verdict reads the CI too)", function()
  -- nine of ten base runs are faster than every new run (a rank test says 'slower', p < 0.05),
  -- but one base run of 100 makes the ratio of means swing across 1 under resampling
  local base = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 100 }
  local new = { 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 }
  local r = verdict.compare("wall_seconds", 10.9, 2, { base_samples = base, new_samples = new })
  T.ok(r.p < 0.05, "the rank test alone would call it: p = " .. tostring(r.p))
  T.ok(r.ci_lo < 1 and r.ci_hi > 1, string.format("CI %g–%g", r.ci_lo, r.ci_hi))
  T.eq(r.verdict, "unchanged")
  T.match(r.reason, "^5%.45× faster: p = [%d.e-]+, but CI [%d.]+–[%d.]+× includes 1: not significant$")
end)

T.case("sides run interleaved: the rank test and its own interval judge them, not a mean an odd run moved", function()
  -- the runs above, alternated in one campaign (they shared the machine's load run by run): one
  -- base run an outside job held up moves neither the test nor its Hodges–Lehmann ratio
  local base = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 100 }
  local new = { 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 }
  local r = verdict.compare("wall_seconds", 10.9, 2, { base_samples = base, new_samples = new, interleaved = true })
  T.eq({ r.estimate, r.ratio, r.ci_lo, r.ci_hi, r.verdict }, { "hodges_lehmann", 2, 2, 2, "regression" })
  T.eq(r.delta, 10.9, "the change the ratio implies at the base's level, not the means' difference")
  T.match(r.reason, "^2%.00× slower %(Hodges–Lehmann%): p = [%d.e-]+, CI 2%.00–2%.00×: regression$")
  -- a median row whose base has a value that is not positive has no Hodges–Lehmann ratio: its
  -- interval is then the bootstrap's, of medians
  r = verdict.compare("wall_seconds median", 1, 2, { base_samples = { 0, 1, 1, 1, 1, 1, 1, 1 },
    new_samples = { 2, 2, 2, 2, 2, 2, 2, 2 }, interleaved = true })
  T.eq({ r.estimate, r.ratio, r.ci_lo, r.ci_hi }, { nil, 2, 2, 2 })
  -- a rate: higher is better
  r = verdict.compare("throughput", 100, 80, { base_samples = { 100, 101, 99, 100, 102, 98, 100, 101 },
    new_samples = { 80, 81, 79, 80, 82, 78, 80, 81 }, interleaved = true })
  T.eq({ r.estimate, r.verdict }, { "hodges_lehmann", "regression" })
  T.near(r.ratio, 0.8, 0.01)
  -- and an A/A pair with an odd run on each side is no verdict
  r = verdict.compare("wall_seconds", 1, 1, { base_samples = { 1, 1.01, 0.99, 1.02, 0.98, 3, 1, 1.01 },
    new_samples = { 1.01, 0.99, 1, 5, 1.02, 0.98, 1, 0.99 }, interleaved = true })
  T.eq(r.verdict, "unchanged")
end)

T.case("beyond the threshold and significant, but the CI reaches into the threshold: not a verdict", function()
  -- a 3% shift, p tiny, its CI about 1.01–1.05: past 1 but not wholly past 1.02
  local base, new = {}, {}
  for i = 1, 40 do
    local wiggle = ((i * 37) % 17 - 8) / 8 * 0.05
    base[i], new[i] = 1 + wiggle, 1.03 * (1 + ((i * 53) % 19 - 9) / 9 * 0.05)
  end
  local r = verdict.compare("wall_seconds", wb.stats.mean(base), wb.stats.mean(new), { base_samples = base, new_samples = new })
  T.ok(r.p < 0.05 and r.ci_lo > 1 and r.ci_lo < 1.02 and r.ratio >= 1.02,
    string.format("p %.2g, ratio %.3f, CI %.3f–%.3f", r.p, r.ratio, r.ci_lo, r.ci_hi))
  T.eq(r.verdict, "unchanged")
  T.match(r.reason, "but CI 1%.0%d–1%.%d%d× is not wholly beyond the 2%% threshold: not significant$")
end)

T.case("untested rows: no samples, too few runs, information-only statistics, exact metrics", function()
  local none = verdict.compare("wall_seconds", 1, 2)
  T.eq({ none.verdict, none.tested, none.reason }, { "not tested", false, "2.00× slower: no repeated samples on either side" })
  local three = verdict.compare("wall_seconds", 1, 2, { base_samples = { 1, 1.01, 0.99 }, new_samples = { 2, 2.01, 1.99 } })
  T.eq({ three.verdict, three.tested }, { "not tested", false })
  T.eq(three.reason, "2.00× slower: p = 0.1, but 3 vs 3 runs cannot reach p < 0.05")
  local max = verdict.compare("wall max", 1, 2, { base_samples = spread(1, 10, 0.1), new_samples = spread(2, 10, 0.1) })
  T.eq({ max.verdict, max.stat, max.reason }, { "not tested", "max", "2.00× slower: max: information only" })
  local rows = verdict.compare("output_row_count", 100, 101)
  T.eq({ rows.kind, rows.verdict, rows.reason }, { "count", "regression", "+1: exact metric changed" })
  T.eq(verdict.classify("output_total_bytes"), "count")
  T.eq(verdict.classify("peak_rss_bytes"), "memory")
  T.eq(verdict.classify("maxrss_kb mean"), "memory")
end)

T.case("many rows judged together: Benjamini–Hochberg decides, and the summary says so", function()
  -- one change at p ~ 0.03 among nine clean nulls: alone a regression, with the others not
  local base = { 1.00, 1.01, 0.99, 1.02, 0.98, 1.005, 0.995, 1.015 }
  local new = { 1.10, 1.12, 0.99, 1.11, 1.09, 1.115, 1.0, 1.105 }
  local alone = verdict.compare("wall_seconds", 1.0, 1.07875, { base_samples = base, new_samples = new })
  T.ok(alone.p < 0.05 and alone.p > 0.005, alone.p)
  T.eq(alone.verdict, "regression", alone.reason)
  local rows = { verdict.compare("wall_seconds", 1.0, 1.07875, { base_samples = base, new_samples = new }) }
  for i = 1, 9 do -- nine tests on nine pairs of samples (copies: shared samples are one test)
    rows[#rows + 1] = verdict.compare("m" .. i .. "_seconds", 1.0, 1.0,
      { base_samples = table.move(base, 1, #base, 1, {}), new_samples = table.move(base, 1, #base, 1, {}) })
  end
  local info = verdict.judge(rows)
  T.eq({ info.tested, info.tests, info.correction }, { 10, 10, "Benjamini–Hochberg" })
  T.near(rows[1].q, math.min(1, rows[1].p * 10), 1e-12)
  T.eq(rows[1].verdict, "unchanged")
  T.match(rows[1].reason, "after Benjamini–Hochberg: not significant$")
  T.eq(info.counts.regression, 0)
  T.match(verdict.summary_text(info), "; 10 metrics tested together %(10 tests%), p%-values adjusted by Benjamini–Hochberg")
end)

T.case("a user or system time change below the kernel's 4 ms tick is no verdict; above it, it is", function()
  local compare = require "wb.compare"
  local function doc(user)
    local xs = {}
    for i = 1, 10 do xs[i] = user * (1 + (i - 5.5) / 100) end
    return json.decode(json.encode({ schema_name = "wb.bench", schema_version = 1,
      commands = { { name = "c", samples = { wall = spread(1, 10, 0.01), user = xs } } } }))
  end
  local function user_row(a, b)
    local r = compare.compare(compare.from_document(doc(a), "a"), compare.from_document(doc(b), "b"))
    for _, row in ipairs(r.rows) do if row.name == "c user mean" then return row end end
  end
  local small = user_row(0.001, 0.0015) -- 1.5x, but 0.5 ms: within one tick
  T.eq(small.verdict, "unchanged")
  T.match(small.reason, "^1%.50× slower: p = [%d.e-]+.*, but the change is below the 4%.0 ms resolution of the kernel's user/system split")
  local big = user_row(0.100, 0.150)
  T.eq(big.verdict, "regression", big.reason)
end)

T.case("an exact count (no run-to-run variation on either side): a difference is a verdict with 2 runs a side", function()
  local more = verdict.compare("alloc_bytes mean", 1000, 1100, { base_samples = { 1000, 1000 }, new_samples = { 1100, 1100 } })
  local noisy = verdict.compare("heap mean", 1, 1.5, { base_samples = spread(1, 10, 0.01), new_samples = spread(1.5, 10, 0.01) })
  verdict.judge({ more, noisy })
  T.eq(more.verdict, "regression", more.reason)
  T.eq(more.exact, true)
  T.eq(more.q, 0, "judged among other tests (Benjamini–Hochberg), it stays significant")
  T.match(more.reason, "^1%.10× larger: exact: each side's 2 and 2 runs measured the same")
  local same = verdict.compare("alloc_bytes mean", 1000, 1000, { base_samples = { 1000, 1000 }, new_samples = { 1000, 1000 } })
  verdict.judge({ same })
  T.eq(same.verdict, "unchanged")
  T.match(same.reason, "exact")
  -- one side varies: the rank test decides (2 vs 2 runs cannot reach p < 0.05)
  local varies = verdict.compare("alloc_bytes mean", 1000, 1100, { base_samples = { 1000, 1001 }, new_samples = { 1100, 1100 } })
  verdict.judge({ varies })
  T.eq(varies.verdict, "not tested")
  -- only an exact count: a CPU time in 4 ms ticks that repeats by chance is no certainty
  local tick = verdict.compare("user mean", 0.004, 0.008, { base_samples = { 0.004, 0.004 }, new_samples = { 0.008, 0.008 },
    resolution = 0.004, resolution_of = "the kernel's user/system split" })
  verdict.judge({ tick })
  T.eq(tick.exact, nil)
  T.eq(tick.verdict, "not tested", tick.reason)
end)

---- interference: how much of a change was the machine ------------------------------------------

local itf = require "wb.interference"

-- One side of n single-threaded runs: cpu seconds of work each, runq seconds of waiting for a
-- CPU, others CPUs of other load, asleep seconds asleep; walls = cpu + runq + asleep (+ a spread).
local function side(cpu, runq, others, n, asleep)
  local walls, ev = {}, { runq = {}, cpu = {}, others = {} }
  local cpus = spread(cpu, n, 0.02)
  for i = 1, n do
    walls[i] = cpus[i] + runq + (asleep or 0)
    ev.runq[i], ev.cpu[i], ev.others[i] = runq, cpus[i], others
  end
  return walls, itf.evidence(walls, ev.runq, ev.cpu, nil, ev.others, "tree", 2)
end

local function judged(metric, b_walls, b_ev, n_walls, n_ev)
  local mean = function(xs) return wb.stats.mean(xs) end
  local row = verdict.compare(metric, mean(b_walls), mean(n_walls), { base_samples = b_walls, new_samples = n_walls,
    base_evidence = b_ev, new_evidence = n_ev })
  local info = verdict.judge({ row })
  return row, info
end

T.case("net wall: a single-threaded run's wall less its wait for a CPU; k threads share the wait", function()
  local ev = itf.evidence({ 1.5 }, { 0.5 }, { 1.0 }, nil, nil, "tree")
  T.near(itf.net({ 1.5 }, ev)[1], 1.0, 1e-12)
  -- two threads busy 1 s each, each waiting 0.5 s: 2 runnable at once, 1.5 s of wall, 1 s net
  ev = itf.evidence({ 1.5 }, { 1.0 }, { 2.0 }, nil, nil, "tree")
  T.near(itf.parallelism(1.5, 2.0, 1.0), 2, 1e-12)
  T.near(itf.net({ 1.5 }, ev)[1], 1.0, 1e-12)
  -- a sleeper (little CPU): one thread, its wake-up wait taken out
  ev = itf.evidence({ 0.05 }, { 0.004 }, { 0.001 }, { 0.049 }, nil, "tree")
  T.near(itf.net({ 0.05 }, ev)[1], 0.045, 1e-12, "the own wall (fork to exit) less the wait")
  T.eq(itf.evidence({ 1, 2 }, { 0.1 }, nil, nil, nil), nil, "no verdict on partial evidence")
end)

T.case("a wall change that is all run-queue delay: interference, not code, not counted", function()
  local bw, be = side(0.10, 0.001, 0.0, 12)
  local nw, ne = side(0.10, 0.05, 1.5, 12)
  local row, info = judged("wall mean", bw, be, nw, ne)
  T.eq(row.verdict, "interference", row.reason)
  T.match(row.reason, "^wall 1%.49× slower %(p = [%d.e-]+%), but net of run%-queue delay 1%.00× [a-z]+ %(p = ")
  T.match(row.reason, "interference, not code: run%-queue delay 1%.0 ms vs 50%.0 ms per run, other load 0%.0 vs 1%.5 CPUs$")
  T.eq({ info.counts.regression, info.counts.interference }, { 0, 1 })
  T.match(verdict.summary_text(info), "1 interference, not code")
end)

T.case("a real change under a load change: confounded within what the load can do either way, found beyond", function()
  -- 10% more CPU work on the quieter side: load can speed code up too (a virtual CPU kept busy:
  -- xz here used less CPU a run beside two busy loops than alone), so no verdict
  local bw, be = side(0.10, 0.06, 1.5, 12)
  local nw, ne = side(0.11, 0.0, 0.0, 12)
  local row = judged("wall mean", bw, be, nw, ne)
  T.eq(row.verdict, "confounded", row.reason)
  T.near(row.ratio, 1.1, 1e-9)
  T.match(row.reason, "but the base side ran under more load, and load can speed code up too %(.-%), which can " ..
    "account for 50%.0 ms of the 10%.0 ms change: confounded")
  -- 1.6x on the quieter side is more than any load can account for
  nw, ne = side(0.16, 0.0, 0.0, 12)
  row = judged("wall mean", bw, be, nw, ne)
  T.eq(row.verdict, "regression", row.reason)
  T.match(row.reason, "%(net of run%-queue delay; beyond the 50%.0 ms the load difference can account for: ")
  -- the same 10% on the busier side: the load could have made it (CPU time grows beside other work)
  bw, be = side(0.10, 0.0, 0.0, 12)
  nw, ne = side(0.11, 0.06, 1.5, 12)
  row = judged("wall mean", bw, be, nw, ne)
  T.eq(row.verdict, "confounded", row.reason)
  T.match(row.reason, "^1%.10× slower net of run%-queue delay %(p = .-%), but the new side ran under more load")
  T.match(row.reason, "which can account for 50%.0 ms of the 10%.0 ms change: confounded")
  -- 1.6× on the busier side is more than any load can account for
  nw, ne = side(0.16, 0.06, 1.5, 12)
  row = judged("wall mean", bw, be, nw, ne)
  T.eq(row.verdict, "regression", row.reason)
  T.match(row.reason, "%(net of run%-queue delay; beyond the 50%.0 ms the load difference can account for: ")
  -- no material difference of load: the net verdict as it is
  bw, be = side(0.10, 0.0, 0.2, 12)
  nw, ne = side(0.11, 0.0, 0.3, 12)
  row = judged("wall mean", bw, be, nw, ne)
  T.eq(row.verdict, "regression", row.reason)
  T.match(row.reason, "regression$")
end)

T.case("a CPU time weighed against the load its record ran under", function()
  local bw, be = side(0.10, 0.0, 0.0, 12)
  local nw, ne = side(0.10, 0.06, 1.5, 12)
  local b_load, n_load = itf.side(bw, be), itf.side(nw, ne)
  local function cpu_row(level)
    local b, n = spread(0.10, 12, 0.02), spread(level, 12, 0.02)
    return verdict.compare("user mean", 0.10, level, { base_samples = b, new_samples = n, base_load = b_load,
      new_load = n_load, cpu_time = true })
  end
  T.eq(cpu_row(0.114).verdict, "confounded", "14% more user time beside two CPU hogs is what the hogs do")
  T.eq(cpu_row(0.16).verdict, "regression", "60% more: beyond what the load can do")
  T.eq(cpu_row(0.086).verdict, "confounded", "14% less user time beside two CPU hogs: load can do that too")
  T.eq(cpu_row(0.04).verdict, "improvement", "60% less: beyond what the load can do")
end)

T.case("a stage's time, with no wait taken out, is weighed against the difference of the waits", function()
  local bw, be = side(1.0, 0.05, 0.0, 12)
  local nw, ne = side(1.0, 1.55, 0.0, 12)
  local b_load, n_load = itf.side(bw, be), itf.side(nw, ne)
  local function stage(base, new)
    return verdict.compare("stage_native_seconds", base, new, { base_samples = spread(base, 12, 0.02),
      new_samples = spread(new, 12, 0.02), base_load = n_load, new_load = b_load })
  end
  -- the base waited 1.5 s more in the run queue; its stage was 0.7 s longer: the wait can hold it
  local r = stage(1.7, 1.0)
  T.eq(r.verdict, "confounded", r.reason)
  T.match(r.reason, "^1%.70× faster %(p = .-%), but the base side waited longer for a CPU %(run%-queue delay 1%.550 s vs 50%.0 ms")
  -- 2 s faster is more than 1.5 s of waiting can explain
  r = stage(3.0, 1.0)
  T.eq(r.verdict, "improvement", r.reason)
end)

T.case("a user or system time alone under a load change: confounded, whatever its size", function()
  local bw, be = side(0.10, 0.0, 0.0, 12)
  local nw, ne = side(0.10, 0.06, 1.5, 12)
  local function sys(new, b_ev, n_ev)
    return verdict.compare("sys mean", 0.065, new, { base_samples = spread(0.065, 12, 0.02),
      new_samples = spread(new, 12, 0.02), base_load = itf.side(bw, b_ev), new_load = itf.side(nw, n_ev), cpu_time = "split" })
  end
  local r = sys(0.040, be, ne)
  T.eq(r.verdict, "confounded", r.reason)
  T.match(r.reason, "^1%.62× faster %(p = .-%), but the sides ran under different load %(.-%), and preemption moves the " ..
    "kernel's tick%-sampled user/system split: confounded; the wall net of run%-queue delay is the witness$")
  -- the same load on both sides: a verdict
  T.eq(sys(0.040, be, be).verdict, "improvement")
end)

T.case("beside material other load the estimate must clear 5%: what campaigns on a busy machine differ by", function()
  -- the base beside other work, the new side quiet, a run of 2 ms of CPU and 18 ms asleep (the
  -- load can change the CPU time, by at most 1 ms): a change beyond that stands, from 5%
  local bw, be = side(0.002, 0.001, 1.6, 12, 0.018)
  local nw, ne = side(0.002, 0.001, 0.1, 12, 0.0186)
  local row = judged("wall median", bw, be, nw, ne)
  T.eq(row.verdict, "unchanged", row.reason)
  T.match(row.reason, "within the 5%% threshold of a busy machine$")
  nw, ne = side(0.002, 0.001, 0.1, 12, 0.020)
  row = judged("wall median", bw, be, nw, ne)
  T.eq(row.verdict, "regression", row.reason)
  T.match(row.reason, "%(net of run%-queue delay; beyond the 1%.0 ms the load difference can account for: ")
  -- an estimate beyond 5% needs its CI beyond the plain 2% only (a planted 10% read 1.06× here)
  nw, ne = side(0.002, 0.001, 0.1, 12, 0.01928)
  row = judged("wall median", bw, be, nw, ne)
  T.eq(row.verdict, "regression", row.reason)
  -- a CPU-bound run of 20 ms: 10% either way is what the load can do
  bw, be = side(0.020, 0.001, 1.6, 12)
  -- both sides beside other work: its kind, not only its amount, slows the CPU; 10% either way
  -- is what it can do (an A/A pair of xz read 1.15x apart so), 60% is not
  nw, ne = side(0.022, 0.001, 1.7, 12)
  row = judged("wall median", bw, be, nw, ne)
  T.eq(row.verdict, "confounded", row.reason)
  T.match(row.reason, "but both sides ran beside other work %(.-%), which can account for 10%.0 ms of the 2%.0 ms change")
  nw, ne = side(0.017, 0.001, 1.7, 12)
  T.eq(judged("wall median", bw, be, nw, ne).verdict, "confounded", "faster beside the same load: no verdict either")
  nw, ne = side(0.032, 0.001, 1.7, 12)
  T.eq(judged("wall median", bw, be, nw, ne).verdict, "regression", "60% more is beyond what the load can do")
  -- quiet on both sides: 3% is a verdict
  bw, be = side(0.020, 0.001, 0.1, 12)
  nw, ne = side(0.0206, 0.001, 0.1, 12)
  T.eq(judged("wall median", bw, be, nw, ne).verdict, "regression")
end)

T.case("an alpha the rank test can reach but its 95% interval cannot: untested, not a crash", function()
  -- 3 vs 4 runs: p can be 0.057 < 0.1, but the rank test's 95% interval needs more runs
  local r = verdict.compare("wall_seconds", 1, 2, { base_samples = { 1, 1.01, 0.99 },
    new_samples = { 2, 2.01, 1.99, 2.02 }, interleaved = true, alpha = 0.1 })
  T.eq({ r.estimate, r.ci_lo, r.verdict }, { "hodges_lehmann", nil, "not tested" })
  T.match(r.reason, "3 vs 4 runs give the rank test no 95%% interval$")
end)

T.case("sides run interleaved, 20 rounds: paired run by run, a load that comes and goes cancels", function()
  -- 20 rounds, the first 10 beside other work (every run 1.5x longer), the new side 10% slower in
  -- each round: the paired log ratios say 1.10x with a narrow interval; unpaired, the same runs are
  -- two clusters each side, and the bootstrap of the means cannot tell
  local function rounds(ratio)
    local b, n = {}, {}
    for k = 1, 20 do
      local load = k <= 10 and 1.5 or 1.0
      b[k] = load * (1 + ((k * 37) % 11 - 5) / 500)
      n[k] = ratio * load * (1 + ((k * 53) % 13 - 6) / 500)
    end
    return b, n
  end
  local b, n = rounds(1.10)
  local r = verdict.compare("wall mean", wb.stats.mean(b), wb.stats.mean(n),
    { base_samples = b, new_samples = n, interleaved = true })
  T.eq({ r.estimate, r.verdict }, { "paired", "regression" }, r.reason)
  T.near(r.ratio, 1.10, 0.01)
  T.ok(r.ci_lo > 1.08 and r.ci_hi < 1.12, string.format("CI %g–%g", r.ci_lo, r.ci_hi))
  T.match(r.reason, "^1%.10× slower %(paired runs, Hodges–Lehmann%): p = [%d.e-]+, CI 1%.%d%d–1%.%d%d×: regression$")
  T.eq(verdict.compare("wall mean", wb.stats.mean(b), wb.stats.mean(n), { base_samples = b, new_samples = n }).verdict,
    "unchanged", "the same runs one side after the other: no verdict")
  -- the same load pattern, the same work: no change
  b, n = rounds(1.0)
  r = verdict.compare("wall mean", wb.stats.mean(b), wb.stats.mean(n),
    { base_samples = b, new_samples = n, interleaved = true })
  T.eq({ r.estimate, r.verdict }, { "paired", "unchanged" }, r.reason)
  -- below 12 rounds, or with more than a tenth of the rounds tied (CPU ticks), the unpaired test
  b, n = rounds(1.10)
  local b11, n11 = table.move(b, 1, 11, 1, {}), table.move(n, 1, 11, 1, {})
  r = verdict.compare("wall mean", wb.stats.mean(b11), wb.stats.mean(n11),
    { base_samples = b11, new_samples = n11, interleaved = true })
  T.eq(r.estimate, "hodges_lehmann", r.reason)
  local ticks_b, ticks_n = {}, {}
  for k = 1, 20 do ticks_b[k], ticks_n[k] = 0.004 * (17 + k % 2), 0.004 * (17 + k % 3 // 2 + k % 2) end
  T.eq(verdict.paired_test(ticks_b, ticks_n, 0.05), nil, "a third of the rounds tie")
  r = verdict.compare("user mean", wb.stats.mean(ticks_b), wb.stats.mean(ticks_n),
    { base_samples = ticks_b, new_samples = ticks_n, interleaved = true })
  T.ok(r.estimate ~= "paired", r.reason)
  -- unequal counts (a side cut short) cannot be paired
  n[#n + 1] = n[1]
  r = verdict.compare("wall mean", wb.stats.mean(b), wb.stats.mean(n),
    { base_samples = b, new_samples = n, interleaved = true })
  T.eq(r.estimate, "hodges_lehmann", r.reason)
end)

T.case("sides run interleaved: a mean still sees a change of a share of the runs", function()
  -- 40 runs a side, 12 of the new ones 1.5x slower (a lock, a cold path): the mean is 15% up, the
  -- typical run is not; the Hodges–Lehmann ratio alone (1.01x) would dismiss it
  local base, new = {}, {}
  for i = 1, 40 do
    base[i] = 1 + ((i * 37) % 17 - 8) / 800
    new[i] = base[i] * (i % 10 < 3 and 1.5 or 1)
  end
  local mean = verdict.compare("wall mean", wb.stats.mean(base), wb.stats.mean(new),
    { base_samples = base, new_samples = new, interleaved = true })
  T.eq({ mean.estimate, mean.verdict }, { nil, "regression" }, mean.reason)
  T.near(mean.ratio, 1.15, 0.01)
  T.match(mean.reason, "; the mean moved, the typical run did not %(Hodges–Lehmann 1%.0%d× slower%): a share of the runs changed$")
  -- the median row of the same runs: the typical run, unchanged
  local median = verdict.compare("wall median", wb.stats.median(base), wb.stats.median(new),
    { base_samples = base, new_samples = new, interleaved = true })
  T.eq({ median.estimate, median.verdict }, { "hodges_lehmann", "unchanged" }, median.reason)
  -- one odd run on one side moves the mean but is no verdict of it (the case above, as A/A)
  local odd = table.move(base, 1, #base, 1, {})
  odd[7] = 5
  local aa = verdict.compare("wall mean", wb.stats.mean(base), wb.stats.mean(odd),
    { base_samples = base, new_samples = odd, interleaved = true })
  T.eq(aa.verdict, "unchanged", aa.reason)
end)
