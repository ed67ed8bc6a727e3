-- The comparison engine end to end: the same bench twice is never a regression, a planted 20%
-- slowdown always is (10% of a sleep sits at the edge of what 20 runs resolve beside four busy
-- loops: 1.07×, CI 1.02–1.11× was seen; a planted 10% of CPU work is tests/aa's), whichever entry point judges it (the campaign's previous-run comparison,
-- `wb compare` on summaries, manifests, run directories, wb's hyperfine exports and the real
-- hyperfine's). The engine's rules alone: tests/lua/verdict_test.lua.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

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
  if os.getenv("WB_TEST_PASS") == "asan" then
    T.skip("ASan pass: 21 runs of a sanitized wb, where a shift of the machine's load is a real change; it runs in full in the first pass")
  end
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

-- Runs `sh work.sh` (which becomes `sleep seconds`) under wb bench into dir and under hyperfine
-- into dir .. ".hf.json". The shell execs its command: one task, whose net wall is exact
-- (docs/compare.md); a shell that forks it waits for a CPU beside its child right after the fork,
-- and the tree's summed waits take out a 4 ms tick too much in up to a quarter of the runs beside
-- busy loops (a ratio of net means 0.03 off, measured beside four and six).
local function planted(d, name, seconds)
  assert(fs.write(d .. "/work.sh", "exec sleep " .. seconds .. "\n"))
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

T.case("a planted 20% slowdown (sleep 0.050 -> 0.060, 20 runs): flagged by every entry point, one p-value", function()
  if not proc.which("hyperfine") then T.skip("hyperfine is not installed (Debian package hyperfine)") end
  local d = T.tmpdir()
  local a, b = planted(d, "a", "0.050"), planted(d, "b", "0.060")
  local m = T.manifest(b)
  T.eq(m.previous_manifest_path, a .. "/manifest.json")
  local campaign
  for _, r in ipairs(m.comparisons) do
    if r.run_name == "sh work.sh" and r.metric == "wall mean" then campaign = r end
  end
  T.eq(campaign.verdict, "regression", campaign.reason)
  -- the size of the change: the campaigns ran one after the other, so time the machine took that
  -- no run-queue figure shows (a VM's host) stays in some runs; a median resists a few such runs,
  -- a mean does not (a CI run's load pass read 1.31 from the means for this 1.19, cause not found)
  local median
  for _, r in ipairs(m.comparisons) do
    if r.run_name == "sh work.sh" and r.metric == "wall median" then median = r end
  end
  print(string.format("# campaign: wall mean %.3f×, wall median %.3f× (%s)", campaign.ratio, median.ratio,
    campaign.reason))
  T.ok(median.ratio > 1.12 and median.ratio < 1.28, median.ratio)
  T.ok(campaign.ratio > 1.12, campaign.ratio)
  local p = campaign.p_value
  for _, input in ipairs(inputs(a, b)) do
    local code, n, doc = compare(input[2], input[3])
    local r = row(doc, "sh work.sh wall mean")
    if input[1] == "hyperfine exports" then
      -- no per-run CPU or run-queue times: a wall change that the CPU time does not bear out may
      -- be the machine's (a sleep's CPU time does not change)
      -- (beside busy loops their raw times can also be too noisy for the rank test: then unchanged)
      T.eq(code, 0, input[1])
      T.ok(r.verdict == "confounded" or r.verdict == "unchanged", input[1] .. ": " .. r.reason)
      if r.verdict == "confounded" then
        T.match(r.reason, "hyperfine export carries no per%-run CPU or run%-queue times")
      end
    else
      T.eq(code, 1, input[1] .. ": --fail-on-regression")
      T.ok(n >= 1, input[1])
      T.eq(r.verdict, "regression", input[1] .. ": " .. r.reason)
      T.eq(r.p_value, p, input[1] .. ": the same samples give the same p")
      T.eq(r.interference.net, true, input[1] .. ": tested net of run-queue delay")
    end
  end
  -- the real hyperfine's exports: the same rule, from its own times
  -- (beside busy loops hyperfine's raw times can be too noisy for the rank test: then unchanged)
  local function no_verdict(r) return r.verdict == "confounded" or r.verdict == "unchanged" end
  local code, _, doc = compare(a .. ".hf.json", b .. ".hf.json")
  T.eq(code, 0)
  T.ok(no_verdict(row(doc, "sh work.sh wall mean")), row(doc, "sh work.sh wall mean").reason)
  T.ok(no_verdict(row(doc, "sh work.sh wall median")), row(doc, "sh work.sh wall median").reason)
  -- hyperfine's base against wb's new run of the same command: rows for mean and median
  code, _, doc = compare(a .. ".hf.json", b .. "/summary.json")
  T.eq(code, 0)
  T.ok(no_verdict(row(doc, "sh work.sh wall mean")), row(doc, "sh work.sh wall mean").reason)
  T.ok(no_verdict(row(doc, "sh work.sh wall median")), row(doc, "sh work.sh wall median").reason)
  T.eq(row(doc, "sh work.sh wall max").verdict, "not tested")
  -- and hyperfine against wb on the same work: mean and median compared, no verdict from noise
  code, _, doc = compare(b .. ".hf.json", b .. "/summary.json")
  T.eq(row(doc, "sh work.sh wall mean").tested, true)
  local same = row(doc, "sh work.sh wall median")
  T.ok(no_verdict(same), same.reason)
  -- the two tools measure the same: their fastest runs agree (the medians of runs taken at other
  -- moments differ by what the machine did meanwhile: 13% beside four busy loops)
  local fastest = row(doc, "sh work.sh wall min")
  print(string.format("# hyperfine %.4f s, wb %.4f s: ratio %.3f (medians %.4f s, %.4f s)", fastest.base, fastest.new,
    fastest.ratio, same.base, same.new))
  T.ok(fastest.ratio > 0.9 and fastest.ratio < 1.1, string.format("fastest runs: hyperfine %.4f s, wb %.4f s",
    fastest.base, fastest.new))
  -- the Markdown and the HTML report carry the same explanation
  local md = assert(fs.read(b .. "/summary.md"))
  T.match(md, "Compared with the previous run")
  T.match(md, "| regression | 1%.%d%d× slower: p = [%d.e-]+")
  local html = assert(fs.read(b .. "/report.html"))
  T.match(html, '<tr class="regression"><td>sh work%.sh wall mean</td>')
  T.match(html, "slower: p = [%d.e-]+[^<]*: regression[^<]*</td>")
end)
