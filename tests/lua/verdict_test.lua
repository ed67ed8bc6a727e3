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
