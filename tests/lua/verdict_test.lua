-- The comparison engine (wb.verdict) alone, then end to end: the same bench twice is never a
-- regression, a planted 10% slowdown always is, whichever entry point judges it (the campaign's
-- previous-run comparison, `wb compare` on summaries, manifests, run directories, wb's hyperfine
-- exports and the real hyperfine's).
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

---- end to end ------------------------------------------------------------------------------

local function wb_run(args, opts) return T.wb(args, { timeout = 120, cwd = opts and opts.cwd, env = opts and opts.env }) end

local function regressions_of(res)
  local doc = assert(json.decode(res.stdout), res.stderr)
  return doc.summary.regressions, doc
end

-- wb compare A B --json --fail-on-regression : exit code, number of regressions, the document
local function compare(a, b)
  local res = wb_run({ "compare", a, b, "--json", "--fail-on-regression" })
  T.ok(res.code == 0 or res.code == 1, res.stderr)
  local n, doc = regressions_of(res)
  return res.code, n, doc
end

local function inputs(a, b)
  return {
    { "summaries", a .. "/summary.json", b .. "/summary.json" },
    { "manifests", a .. "/manifest.json", b .. "/manifest.json" },
    { "directories", a, b },
    { "hyperfine exports", a .. "/hyperfine.json", b .. "/hyperfine.json" },
  }
end

T.case("the same bench 21 times in a row: no regression from any entry point", function()
  local d = T.tmpdir()
  local dirs, found = {}, {}
  for i = 1, 21 do
    dirs[i] = string.format("%s/runs/r%02d", d, i)
    local res = wb_run({ "bench", "sleep 0.02", "sleep 0.03", "runs=10", "-o", dirs[i] })
    T.eq(res.code, 0, res.stderr)
    if i > 1 then
      local m = T.manifest(dirs[i])
      T.eq(m.previous_manifest_path, dirs[i - 1] .. "/manifest.json")
      T.ok(m.comparison_summary.tested >= 4, "wall mean and median of both commands tested")
      for _, row in ipairs(m.comparisons) do
        if row.verdict == "regression" or row.verdict == "improvement" then
          found[#found + 1] = "campaign " .. i .. ": " .. row.run_name .. " " .. row.metric .. " " .. row.reason
        end
      end
      -- what the terminal shows of the comparison: its summary line
      local said = res.stdout:match("\n(%d+ regressions?, %d+ improvements?,[^\n]*)")
      T.ok(said, res.stdout)
      if not said:find("^0 regressions, 0 improvements") then found[#found + 1] = "terminal " .. i .. ": " .. said end
      for _, input in ipairs(inputs(dirs[i - 1], dirs[i])) do
        local code, n = compare(input[2], input[3])
        if n > 0 or code ~= 0 then found[#found + 1] = string.format("wb compare %s %d: %d regressions", input[1], i, n) end
      end
    end
  end
  T.eq(#found, 0, table.concat(found, "\n"))
end)

-- Runs `sh work.sh` (which sleeps `seconds`) under wb bench into dir and under hyperfine into
-- dir .. ".hf.json".
local function planted(d, name, seconds)
  assert(fs.write(d .. "/work.sh", "sleep " .. seconds .. "\n"))
  local dir = d .. "/runs/" .. name
  local res = wb_run({ "run", T.root() .. "/recipes/bench.lua", "sh work.sh", "runs=20", "-o", dir }, { cwd = d })
  T.eq(res.code, 0, res.stderr)
  local hf = assert(proc.run { argv = { "hyperfine", "-N", "--runs", "20", "--export-json", dir .. ".hf.json",
    "sh work.sh" }, cwd = d, stdout = "null", stderr = "capture", timeout = 120 })
  T.eq(hf.code, 0, hf.stderr)
  return dir
end

local function row(doc, name)
  for _, r in ipairs(doc.rows) do
    if r.metric == name then return r end
  end
  error("no row " .. name)
end

T.case("a planted 10% slowdown (sleep 0.050 -> 0.055, 20 runs): flagged by every entry point, one p-value", function()
  if not proc.which("hyperfine") then T.skip("hyperfine is not installed (Debian package hyperfine)") end
  local d = T.tmpdir()
  local a, b = planted(d, "a", "0.050"), planted(d, "b", "0.055")
  local m = T.manifest(b)
  T.eq(m.previous_manifest_path, a .. "/manifest.json")
  local campaign
  for _, r in ipairs(m.comparisons) do
    if r.run_name == "sh work.sh" and r.metric == "wall mean" then campaign = r end
  end
  T.eq(campaign.verdict, "regression", campaign.reason)
  T.ok(campaign.ratio > 1.05 and campaign.ratio < 1.15, campaign.ratio)
  local p = campaign.p_value
  T.ok(p < 1e-4, p)
  for _, input in ipairs(inputs(a, b)) do
    local code, n, doc = compare(input[2], input[3])
    T.eq(code, 1, input[1] .. ": --fail-on-regression")
    T.ok(n >= 1, input[1])
    local r = row(doc, "sh work.sh wall mean")
    T.eq(r.verdict, "regression", input[1] .. ": " .. r.reason)
    T.eq(r.p_value, p, input[1] .. ": the same samples give the same p")
  end
  -- the real hyperfine's exports: the same verdict from its own times
  local code, _, doc = compare(a .. ".hf.json", b .. ".hf.json")
  T.eq(code, 1)
  T.eq(row(doc, "sh work.sh wall mean").verdict, "regression")
  T.eq(row(doc, "sh work.sh wall median").verdict, "regression")
  -- hyperfine's base against wb's new run of the same command: rows for mean and median
  code, _, doc = compare(a .. ".hf.json", b .. "/summary.json")
  T.eq(code, 1)
  T.eq(row(doc, "sh work.sh wall mean").verdict, "regression")
  T.eq(row(doc, "sh work.sh wall median").verdict, "regression")
  T.eq(row(doc, "sh work.sh wall max").verdict, "not tested")
  -- and hyperfine against wb on the same work: mean and median compared, no verdict from noise
  code, _, doc = compare(b .. ".hf.json", b .. "/summary.json")
  T.eq(row(doc, "sh work.sh wall mean").tested, true)
  T.ok(row(doc, "sh work.sh wall median").ratio > 0.9 and row(doc, "sh work.sh wall median").ratio < 1.1)
  -- the Markdown and the HTML report carry the same explanation
  local md = assert(fs.read(b .. "/summary.md"))
  T.match(md, "Compared with the previous run")
  T.match(md, "| regression | 1%.%d%d× slower: p = [%d.e-]+")
  local html = assert(fs.read(b .. "/report.html"))
  T.match(html, '<tr class="regression"><td>sh work%.sh wall mean</td>')
  T.match(html, "slower: p = [%d.e-]+[^<]*: regression</td>")
end)
