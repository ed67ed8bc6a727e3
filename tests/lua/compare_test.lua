local T = require "wb.test"
local compare = require "wb.compare"
local json = require "wb.json"
local fs = require "wb.fs"

local DIR = "tests/fixtures/compare/"

local function pair(kind, opts)
  return compare.compare(compare.load(DIR .. kind .. "_base.json"), compare.load(DIR .. kind .. "_new.json"), opts)
end

-- {name = verdict} for the rows of a result
local function verdicts(result)
  local out = {}
  for _, r in ipairs(result.rows) do out[r.name] = r.verdict end
  return out
end

local function row(result, name)
  for _, r in ipairs(result.rows) do
    if r.name == name then return r end
  end
  error("no row " .. name)
end

local function names(set)
  local out = {}
  for name in pairs(set.metrics) do out[#out + 1] = name end
  table.sort(out)
  return out
end

-- A decoded generic document {metrics = {name = value}, samples = {name = samples}}.
local function generic(metrics, samples)
  return json.decode(json.encode({ metrics = metrics, samples = samples or {} }))
end

local function run_wb(...) return T.wb({ "compare", ... }, { timeout = 30 }) end

T.case("wb bench summaries: metrics per command, samples attached, exact Markdown", function()
  local base = compare.load(DIR .. "bench_base.json")
  T.eq(base.format, "wb.bench")
  T.eq(names(base), {
    "gzip -k data maxrss_kb mean", "gzip -k data sys mean", "gzip -k data user mean",
    "gzip -k data wall max", "gzip -k data wall mean", "gzip -k data wall median", "gzip -k data wall min",
    "xz -k data maxrss_kb mean", "xz -k data sys mean", "xz -k data user mean",
    "xz -k data wall max", "xz -k data wall mean", "xz -k data wall median", "xz -k data wall min" })
  local wall = base.metrics["xz -k data wall mean"]
  T.eq({ wall.value, wall.kind, wall.unit, #wall.samples }, { 0.2, "time", "s", 10 })
  T.eq(base.metrics["xz -k data maxrss_kb mean"].unit, "KiB")
  T.eq(base.metrics["xz -k data wall median"].samples, wall.samples)
  local bare = compare.from_document(json.decode([[{"schema_name": "wb.bench", "schema_version": 1,
    "commands": [{"name": "a", "samples": {"wall": [0.3, 0.1, 0.2]}}, 5]}]]), "b.json")
  T.eq(names(bare), { "a wall max", "a wall mean", "a wall median", "a wall min" },
    "statistics from the samples when stats{} is absent")
  T.near(bare.metrics["a wall mean"].value, 0.2, 1e-12)

  local result = pair("bench")
  T.eq(verdicts(result), {
    ["gzip -k data maxrss_kb mean"] = "unchanged", ["gzip -k data sys mean"] = "unchanged",
    ["gzip -k data user mean"] = "unchanged", ["gzip -k data wall mean"] = "unchanged",
    ["gzip -k data wall median"] = "unchanged", ["gzip -k data wall min"] = "not tested",
    ["gzip -k data wall max"] = "not tested",
    ["xz -k data maxrss_kb mean"] = "unchanged", ["xz -k data sys mean"] = "unchanged",
    ["xz -k data user mean"] = "regression", ["xz -k data wall mean"] = "regression",
    ["xz -k data wall median"] = "regression", ["xz -k data wall min"] = "not tested",
    ["xz -k data wall max"] = "not tested" })
  local slow = row(result, "xz -k data wall mean")
  T.near(slow.ratio, 1.1, 1e-9)
  T.ok(slow.p < 0.001 and slow.ci_lo > 1.09 and slow.ci_hi < 1.11, "significant with a tight CI")
  -- ten tested rows, eight tests (a wall mean and median share their samples): Benjamini–Hochberg
  -- over the eight, the two equal smallest p (wall, user) each scaled by 8/2
  T.near(slow.q, slow.p * 8 / 2, 1e-12)
  T.eq(row(result, "xz -k data wall median").q, slow.q)
  T.eq({ result.summary.tested, result.summary.tests, result.summary.correction }, { 10, 8, "Benjamini–Hochberg" })
  T.eq(compare.markdown(result), [[
| metric                      |     base |      new | verdict    | why                                                               | interference |
| :-------------------------- | -------: | -------: | :--------- | :---------------------------------------------------------------- | :----------- |
| gzip -k data maxrss_kb mean |  1.8 MiB |  1.8 MiB | unchanged  | 1.00× larger: p = 1, within the 2% threshold                      |              |
| gzip -k data sys mean       |   3.0 ms |   3.0 ms | unchanged  | 1.00× slower: p = 1, within the 2% threshold                      | no evidence  |
| gzip -k data user mean      |  46.0 ms |  46.0 ms | unchanged  | 1.00× slower: p = 1, within the 2% threshold                      | no evidence  |
| gzip -k data wall max       |  50.1 ms |  50.1 ms | not tested | 1.00× slower: max: information only                               | no evidence  |
| gzip -k data wall mean      |  50.0 ms |  50.0 ms | unchanged  | 1.00× slower: p = 1, within the 2% threshold                      | no evidence  |
| gzip -k data wall median    |  50.0 ms |  50.0 ms | unchanged  | 1.00× slower: p = 1, within the 2% threshold                      | no evidence  |
| gzip -k data wall min       |  49.9 ms |  49.9 ms | not tested | 1.00× slower: min: information only                               | no evidence  |
| xz -k data maxrss_kb mean   |  5.0 MiB |  5.0 MiB | unchanged  | 1.00× larger: p = 1, within the 2% threshold                      |              |
| xz -k data sys mean         |   8.0 ms |   8.0 ms | unchanged  | 1.00× slower: p = 1, within the 2% threshold                      | no evidence  |
| xz -k data user mean        | 190.0 ms | 209.0 ms | regression | 1.10× slower: p = 1.1e-05, q = 4.3e-05, CI 1.10–1.10×: regression | no evidence  |
| xz -k data wall max         | 200.6 ms | 220.7 ms | not tested | 1.10× slower: max: information only                               | no evidence  |
| xz -k data wall mean        | 200.0 ms | 220.0 ms | regression | 1.10× slower: p = 1.1e-05, q = 4.3e-05, CI 1.10–1.10×: regression | no evidence  |
| xz -k data wall median      | 200.0 ms | 220.0 ms | regression | 1.10× slower: p = 1.1e-05, q = 4.3e-05, CI 1.10–1.10×: regression | no evidence  |
| xz -k data wall min         | 199.4 ms | 219.3 ms | not tested | 1.10× slower: min: information only                               | no evidence  |

3 regressions, 0 improvements, 7 unchanged, 4 not tested; 10 metrics tested together (8 tests), p-values adjusted by Benjamini–Hochberg for a false-discovery rate of 5%
]])
end)

T.case("wb manifests: successful runs' metrics{} and wall time; a changed row count regresses", function()
  local base, new = compare.load(DIR .. "manifest_base.json"), compare.load(DIR .. "manifest_new.json")
  T.eq(base.format, "wb.manifest")
  T.eq(names(new), {
    "binary_cpu output_row_count", "binary_cpu output_total_bytes", "binary_cpu stage_seconds.fit",
    "binary_cpu stage_seconds.load", "binary_cpu wall_time_seconds",
    "linear_cpu output_row_count", "linear_cpu output_total_bytes", "linear_cpu stage_seconds.fit",
    "linear_cpu stage_seconds.load", "linear_cpu wall_time_seconds" }, "the failed run is left out")
  T.eq({ base.metrics["binary_cpu stage_seconds.fit"].kind, base.metrics["binary_cpu stage_seconds.fit"].unit },
    { "time", "s" })
  T.eq(base.metrics["binary_cpu output_total_bytes"].unit, "B")
  local result = compare.compare(base, new)
  local rows = row(result, "linear_cpu output_row_count")
  T.eq({ rows.kind, rows.verdict, rows.change, rows.reason }, { "count", "regression", "-2", "-2: exact metric changed" })
  -- a 4x change without samples is shown, never judged
  local fit = row(result, "linear_cpu stage_seconds.fit")
  T.eq({ fit.change, fit.verdict, fit.reason }, { "4.00× faster", "not tested",
    "4.00× faster: no repeated samples on either side" })
  local wall = row(result, "binary_cpu wall_time_seconds")
  T.eq({ wall.verdict, wall.tested, wall.reason }, { "not tested", false,
    "1.01× slower: p = 1, but 3 vs 3 runs cannot reach p < 0.05" }, "samples on both sides, too few for the rank test")
  T.eq(result.summary.text, "1 regression, 0 improvements, 3 unchanged, 6 not tested (2 metrics not in both files)")
  T.eq({ result.summary.only_base, result.summary.only_new }, { 2, 0 })
end)

T.case("a run directory stands for its manifest.json", function()
  local d = T.tmpdir()
  assert(fs.write(d .. "/manifest.json", assert(fs.read(DIR .. "manifest_base.json"))))
  local set = compare.load(d)
  T.eq(set.path, d .. "/manifest.json")
  T.eq(set.metrics["linear_cpu output_row_count"].value, 50000)
end)

T.case("hyperfine: per command mean/median/min/max/user/system, times as samples of mean and median", function()
  local base = compare.load(DIR .. "hyperfine_base.json")
  T.eq(base.format, "hyperfine")
  -- hyperfine's names map onto wb's: mean -> wall mean, median -> wall median, user -> user
  -- mean, system -> sys mean, min/max -> wall min/max
  T.eq(names(base), {
    "sort -n --parallel=2 data.txt sys mean", "sort -n --parallel=2 data.txt user mean",
    "sort -n --parallel=2 data.txt wall max", "sort -n --parallel=2 data.txt wall mean",
    "sort -n --parallel=2 data.txt wall median", "sort -n --parallel=2 data.txt wall min",
    "sort -n data.txt sys mean", "sort -n data.txt user mean", "sort -n data.txt wall max",
    "sort -n data.txt wall mean", "sort -n data.txt wall median", "sort -n data.txt wall min" })
  T.eq(#base.metrics["sort -n data.txt wall mean"].samples, 8)
  T.eq({ #base.metrics["sort -n data.txt wall median"].samples, base.metrics["sort -n data.txt wall median"].stat },
    { 8, "median" })
  T.eq(base.metrics["sort -n data.txt wall min"].stat, "min")
  T.eq(base.metrics["sort -n data.txt user mean"].samples, nil)
  local result = pair("hyperfine")
  T.eq(row(result, "sort -n data.txt wall mean").change:match("^[^(]+"), "2.00× faster ")
  T.eq(row(result, "sort -n data.txt wall mean").verdict, "improvement")
  -- min, max and the CPU times (one figure per command, no samples) are shown, not judged
  T.eq({ row(result, "sort -n data.txt user mean").change, row(result, "sort -n data.txt user mean").verdict },
    { "2.00× faster", "not tested" })
  T.eq(row(result, "sort -n data.txt wall max").reason, "2.00× faster: max: information only")
  T.eq(row(result, "sort -n --parallel=2 data.txt wall mean").verdict, "unchanged")
  T.eq(result.summary.text, "0 regressions, 2 improvements, 2 unchanged, 8 not tested; 4 metrics tested " ..
    "together (2 tests), p-values adjusted by Benjamini–Hochberg for a false-discovery rate of 5%")
end)

T.case("generic JSON: numeric leaves by dotted path, booleans and strings skipped", function()
  local base = compare.load(DIR .. "generic_base.json")
  T.eq(base.format, "json")
  T.eq(names(base), { "base_only", "build.compile_seconds", "build.warnings_count", "scores[1]",
    "scores[2]", "sizes.binary_bytes", "sizes.sections[1].size_kb", "sizes.sections[2].size_kb" })
  local result = pair("generic")
  T.eq(verdicts(result), {
    ["build.compile_seconds"] = "not tested", ["build.warnings_count"] = "regression",
    ["scores[1]"] = "unchanged", ["scores[2]"] = "changed", ["sizes.binary_bytes"] = "regression",
    ["sizes.sections[1].size_kb"] = "not tested", ["sizes.sections[2].size_kb"] = "not tested" })
  T.eq(row(result, "build.warnings_count").change, "+1")
  -- a size in bytes is exact: any change is flagged
  T.eq({ row(result, "sizes.binary_bytes").kind, row(result, "sizes.binary_bytes").change }, { "count", "+104858" })
  T.eq(row(result, "build.compile_seconds").change, "1.14× faster")
  T.eq(result.summary.text, "2 regressions, 0 improvements, 1 unchanged, 3 not tested, 1 changed (2 metrics not in both files)")
end)

T.case("generic JSON: metrics{} with samples{}, else runs[] by name, else results[]", function()
  local set = compare.from_document(generic({ wall_seconds = 1.5, nested = { peak_rss_kb = 10 } },
    { wall_seconds = { 1.4, 1.5, 1.6 } }), "m.json")
  T.eq(names(set), { "nested.peak_rss_kb", "wall_seconds" })
  T.eq(#set.metrics.wall_seconds.samples, 3)
  T.eq(set.metrics["nested.peak_rss_kb"].kind, "memory")

  local runs = json.decode([[{"runs": [
    {"name": "a", "wall_time_seconds": 2, "output_row_count": 5, "stage_seconds": {"x": 1},
     "samples": {"wall_time_seconds": [1, 2, 3]}},
    {"name": "b", "metrics": {"rows": 7}, "wall_time_seconds": 3},
    {"wall_time_seconds": 9}]}]])
  set = compare.from_document(runs, "r.json")
  T.eq(names(set), { "#3 wall_time_seconds", "a output_row_count", "a stage_seconds.x",
    "a wall_time_seconds", "b rows", "b wall_time_seconds" })
  T.eq(#set.metrics["a wall_time_seconds"].samples, 3)

  local results = json.decode([[{"results": [{"id": 7, "latency_ms": 12.5, "ok": true}, 3]}]])
  set = compare.from_document(results, "q.json")
  T.eq(names(set), { "#2 value", "7 latency_ms" })
  T.eq(set.metrics["7 latency_ms"].unit, "ms")
  set = compare.from_document(json.decode("[1, {\"a\": 2.5}]"), "top.json")
  T.eq(names(set), { "[1]", "[2].a" })
  T.eq(compare.format_value(12.5, "ms"), "12.5 ms")
end)

T.case("significance: a 3% shift is a regression with low noise, not with huge noise", function()
  local noise = { -0.3, 0.25, -0.15, 0.4, -0.35, 0.1, 0.2, -0.05, 0.3, -0.4 }
  local function samples(scale, factor)
    local xs = {}
    for i, n in ipairs(noise) do xs[i] = 0.1 * factor * (1 + n * scale) end
    return xs
  end
  local function judge(scale)
    local b, n = samples(scale, 1), samples(scale, 1.03)
    local base = compare.from_document(generic({ wall_seconds = 0.1 }, { wall_seconds = b }), "b")
    local new = compare.from_document(generic({ wall_seconds = 0.103 }, { wall_seconds = n }), "n")
    return compare.compare(base, new).rows[1]
  end
  local quiet = judge(0.01)
  T.eq(quiet.verdict, "regression")
  T.ok(quiet.p < 0.05)
  T.match(quiet.reason, "^1%.03× slower: p = [%d.e-]+, CI 1%.0%d–1%.0%d×: regression$")
  local noisy = judge(1)
  T.eq(noisy.verdict, "unchanged")
  T.ok(noisy.p > 0.05)
  T.match(noisy.change, "^1%.03× slower %(95%% CI ")
  T.match(noisy.reason, "^1%.03× slower: p = 0%.%d+: not significant$")
  local r = compare.compare(compare.from_document(generic({ wall_seconds = 0.1 }), "b"),
    compare.from_document(generic({ wall_seconds = 0.103 }), "n")).rows[1]
  T.eq({ r.verdict, r.change, r.p, r.reason }, { "not tested", "1.03× slower", nil,
    "1.03× slower: no repeated samples on either side" }, "no samples: no verdict")
  T.eq(compare.compare(compare.from_document(generic({ wall_seconds = 0.1 }, { wall_seconds = samples(0.01, 1) }), "b"),
    compare.from_document(generic({ wall_seconds = 0.103 }, { wall_seconds = samples(0.01, 1.03) }), "n"),
    { threshold = 0.05 }).rows[1].verdict, "unchanged", "within a 5% threshold")
end)

T.case("values carry units: times auto-scaled, memory in KiB/MiB, counts plain", function()
  T.eq(compare.format_value(0.0000123, "s"), "12.3 µs")
  T.eq(compare.format_value(0.25, "s"), "250.0 ms")
  T.eq(compare.format_value(1500, "ms"), "1.500 s")
  T.eq(compare.format_value(512, "B"), "512 B")
  T.eq(compare.format_value(2048, "KiB"), "2.0 MiB")
  T.eq(compare.format_value(3 * 1024 ^ 3, "B"), "3.00 GiB")
  T.eq(compare.format_value(49998, nil), "49998")
  T.eq(compare.format_value(0.125, nil), "0.125")
end)

T.case("--json: a wb.compare document", function()
  local doc = compare.document(pair("manifest"))
  local back = json.decode(json.encode(doc))
  T.eq(back.schema_name, "wb.compare")
  T.eq(back.schema_version, 1)
  T.eq(back.base, { path = DIR .. "manifest_base.json", format = "wb.manifest" })
  T.eq(back.threshold, 0.02)
  T.eq(#back.rows, 10)
  local r = back.rows[6]
  T.eq(r.metric, "linear_cpu output_row_count")
  T.eq({ r.record, r.quantity, r.kind, r.base, r.new, r.delta, r.verdict, r.change, r.reason, r.tested },
    { "linear_cpu", "output_row_count", "count", 50000, 49998, -2, "regression", "-2", "-2: exact metric changed", false })
  T.eq({ r.unit, r.p_value, r.q_value, r.ci_lo }, { json.null, json.null, json.null, json.null })
  T.eq(back.summary, { compared = 10, tested = 0, tests = 0, correction = json.null, alpha = 0.05, regressions = 1,
    improvements = 0, unchanged = 3, not_tested = 6, changed = 0, inconclusive = 0, interference = 0, confounded = 0,
    only_base = 2, only_new = 0, notes = {},
    text = "1 regression, 0 improvements, 3 unchanged, 6 not tested (2 metrics not in both files)" })

  local res = run_wb(DIR .. "bench_base.json", DIR .. "bench_new.json", "--json", "--fail-on-regression")
  T.eq(res.code, 1, res.stderr)
  local out = assert(json.decode(res.stdout))
  T.eq(out.summary.regressions, 3)
  T.eq(out.rows[13].metric, "xz -k data wall median")
  T.ok(out.rows[13].p_value < 0.001 and out.rows[13].q_value < 0.001)
  T.eq(out.rows[13].reason, "1.10× slower: p = 1.1e-05, q = 4.3e-05, CI 1.10–1.10×: regression")
end)

T.case("bad input is exit 2 with one line", function()
  local function err(fn, ...)
    local e = T.raises(fn, nil, ...)
    T.eq(e.exit, 2)
    return e.msg
  end
  T.eq(err(compare.load, DIR .. "bench_v2.json"),
    "compare: " .. DIR .. "bench_v2.json: unsupported wb.bench schema_version 2 (this wb reads up to 1)")
  T.eq(err(compare.load, DIR .. "malformed.json"),
    "compare: " .. DIR .. "malformed.json: json: line 3 col 39: unexpected character '}'")
  T.eq(err(compare.load, DIR .. "nope.json"), "compare: " .. DIR .. "nope.json: No such file or directory")
  T.eq(err(function()
    compare.compare(compare.load(DIR .. "hyperfine_base.json"), compare.load(DIR .. "generic_new.json"))
  end),
    "compare: no metric in common between " .. DIR .. "hyperfine_base.json and " .. DIR .. "generic_new.json")
  local manifest = json.decode([[{"schema_name": "wb.manifest", "schema_version": 3, "runs": []}]])
  T.match(err(compare.from_document, manifest, "m.json"), "m%.json: unsupported wb%.manifest schema_version 3")
  T.match(err(compare.main, { "a.json" }), "expected two files %(BASE and NEW%), got 1\nusage: wb compare")
  T.match(err(compare.main, { "a.json", "b.json", "--frob" }), "unknown option '%-%-frob'")
  T.match(err(compare.main, { "a.json", "b.json", "--threshold" }), "%-%-threshold needs a value")
  T.match(err(compare.main, { "a.json", "b.json", "--threshold=x" }), "not 'x'")
end)

T.case("exit status: 0, 1 with --fail-on-regression on a regression, --threshold", function()
  local res = run_wb(DIR .. "generic_base.json", DIR .. "generic_new.json")
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "\n2 regressions, 0 improvements, 1 unchanged, 3 not tested, 1 changed")
  T.eq(run_wb(DIR .. "generic_base.json", DIR .. "generic_new.json", "--fail-on-regression").code, 1)
  T.eq(run_wb(DIR .. "hyperfine_base.json", DIR .. "hyperfine_new.json", "--fail-on-regression").code, 0)
  T.eq(run_wb(DIR .. "bench_base.json", DIR .. "bench_new.json", "--fail-on-regression").code, 1)
  res = run_wb("--threshold", "20%", DIR .. "bench_base.json", DIR .. "bench_new.json", "--fail-on-regression")
  T.eq(res.code, 0, "a 10% slowdown is within a 20% threshold")
  T.match(res.stdout, "\n0 regressions, 0 improvements, 10 unchanged, 4 not tested")
end)

T.case("rates: higher is better (throughput, MB/s, per second, qps); a drop is a regression", function()
  local verdict = require "wb.verdict"
  for _, name in ipairs { "throughput.mb_s", "read_mb_s", "ops_per_sec", "bandwidth", "qps", "gib_s" } do
    T.eq(verdict.classify(name), "rate", name)
  end
  T.eq(verdict.classify("wall_s"), "time")
  local function xs(level) return { level * 0.99, level, level * 1.01, level * 0.995, level * 1.005 } end
  local function judge(base, new)
    return verdict.compare("throughput.mb_s", base, new, { base_samples = xs(base), new_samples = xs(new) })
  end
  local down = judge(100, 80)
  T.eq({ down.verdict, verdict.describe(down) }, { "regression", "1.25× lower" })
  local up = judge(100, 120)
  T.eq({ up.verdict, verdict.describe(up) }, { "improvement", "1.20× higher" })
  T.eq(judge(100, 101).verdict, "unchanged")
  T.eq(verdict.compare("throughput.mb_s", 100, 80).verdict, "not tested", "no samples: no verdict")
end)

T.case("a side whose samples are all zero: the change shows its p-value without a ratio interval", function()
  local d = T.tmpdir()
  local function doc(sys)
    return { schema_name = "wb.bench", schema_version = 1, commands = { { name = "c",
      samples = { wall = { 1, 1.1, 0.9, 1 }, sys = sys }, stats = {} } } }
  end
  json.write(d .. "/a.json", doc({ 0.1, 0.2, 0.15, 0.12 }))
  json.write(d .. "/b.json", doc({ 0, 0, 0, 0 }))
  local res = T.wb { "compare", d .. "/a.json", d .. "/b.json" }
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "| c sys mean +|[^|]+|[^|]+| [%a ]+ | → 0: p = [%d.e-]+[^|]* +|")
  T.ok(not res.stdout:find("%f[%a]nan%f[%A]") and not res.stdout:find("%f[%a]inf%f[%A]"), res.stdout)
end)

T.case("a manifest whose machine was busy (load average at least its CPUs + 1) is named in the summary", function()
  local function manifest(load)
    return json.decode(json.encode({ schema_name = "wb.manifest", schema_version = 1, load_average = load,
      runs = { { name = "r", status = "success", metrics = { wall_seconds = 1 } } } }))
  end
  local quiet = compare.from_document(manifest({ cpus = 2, start = 0.4, finish = 1.2 }), "a")
  local busy = compare.from_document(manifest({ cpus = 2, start = 1.0, finish = 3.6 }), "b")
  local r = compare.compare(quiet, busy)
  T.eq(r.summary.notes, { "the new run ran with a load average of 3.6 on 2 CPUs" })
  T.match(r.summary.text, "; note: the new run ran with a load average of 3%.6 on 2 CPUs: other load may account")
  T.eq(compare.compare(quiet, quiet).summary.notes, {})
end)

T.case("values that are no measurement: one line, exit 2 (infinite, NaN-like, negative, bad samples, repeated keys)", function()
  local d = T.tmpdir()
  local ok = d .. "/ok.json"
  assert(fs.write(ok, '{"metrics": {"wall_seconds": 1}}'))
  local function refused(text)
    assert(fs.write(d .. "/bad.json", text))
    local res = run_wb(d .. "/bad.json", ok, "--json")
    T.eq({ res.code, res.stdout }, { 2, "" }, res.stderr)
    T.eq(select(2, res.stderr:gsub("\n", "")), 1, "one line: " .. res.stderr)
    return res.stderr
  end
  T.match(refused('{"metrics": {"wall_seconds": 1e400}}'), "bad%.json: wall_seconds is not a finite number %(inf%)")
  T.match(refused('{"metrics": {"wall_seconds": -1}}'), "bad%.json: wall_seconds is a negative time %(%-1%)")
  T.match(refused('{"metrics": {"peak_rss_kb": -5}}'), "peak_rss_kb is a negative memory")
  T.match(refused('{"metrics": {"wall_seconds": 1}, "samples": {"wall_seconds": [1, "x"]}}'),
    "wall_seconds sample 2 is not a number %(x%)")
  T.match(refused('{"metrics": {"wall_seconds": 1}, "samples": {"wall_seconds": [1, -0.5]}}'),
    "wall_seconds sample 2 is a negative time")
  T.match(refused('{"metrics": {"wall_seconds": 1, "wall_seconds": 2}}'), 'line 1 col 33: duplicate key "wall_seconds"')
  -- a signed number found anywhere in a document (not under metrics{}) is an offset, not a time
  assert(fs.write(d .. "/loose.json", '{"clock_offset_ms": -3, "run": {"wall_seconds": 2}}'))
  local set = compare.load(d .. "/loose.json")
  T.eq({ set.metrics.clock_offset_ms.kind, set.metrics["run.wall_seconds"].kind }, { "other", "time" })
end)

T.case("--json streams the document a row at a time, byte for byte what encoding it whole gives", function()
  for _, kind in ipairs({ "bench", "manifest", "hyperfine", "generic" }) do
    local result = pair(kind)
    local pieces = {}
    compare.write_document(result, function(s) pieces[#pieces + 1] = s end)
    T.eq(table.concat(pieces), json.encode(compare.document(result), { pretty = true }), kind)
    T.ok(#pieces >= #result.rows, "one piece a row at least")
  end
  local empty = compare.compare(compare.from_document(generic({}), "a"), compare.from_document(generic({}), "b"),
    { allow_empty = true })
  local pieces = {}
  compare.write_document(empty, function(s) pieces[#pieces + 1] = s end)
  T.eq(table.concat(pieces), json.encode(compare.document(empty), { pretty = true }))
end)

-- A peak RSS is read from per-CPU counters: a change below one CPU's share of their error is no
-- verdict (the same `sleep` measured 5% apart, 55 KiB, in two campaigns); a larger one still is.
T.case("peak RSS: a change below the RSS counters' resolution is unchanged, a larger one a regression", function()
  local res = require("wb.memory").rss_error_kb(1)
  T.ok(res >= 256, "resolution " .. res .. " KiB")
  local noise = { -0.002, 0.001, 0.0015, -0.001, 0.002, 0, -0.0015, 0.001, -0.0005, 0.0005 }
  local function side(kb)
    local xs = {}
    for i, n in ipairs(noise) do xs[i] = kb * (1 + n) end
    return compare.from_document(generic({ maxrss_kb = kb }, { maxrss_kb = xs }), "s")
  end
  local small = compare.compare(side(1000), side(1055)).rows[1]
  T.eq(small.verdict, "unchanged")
  T.match(small.reason, "below the " .. res .. " KiB resolution of the kernel's per%-CPU RSS counters")
  local big = compare.compare(side(1000), side(1000 + 4 * res)).rows[1]
  T.eq(big.verdict, "regression")
end)

T.case("hyperfine exports: a wall change the CPU time does not bear out is confounded, not a regression", function()
  local stats = require "wb.stats"
  local function export(times, user, system)
    return compare.from_document(json.decode(json.encode({ results = { { command = "work", mean = stats.mean(times),
      median = stats.median(times), min = 0, max = 1, user = user, system = system, times = times } } })), "hf.json")
  end
  local function times(level)
    local xs = {}
    for i = 1, 10 do xs[i] = level * (1 + 0.01 * (i - 5.5)) end
    return xs
  end
  -- the same commands back to back, the second beside other work: 1.24× slower wall, same CPU
  local result = compare.compare(export(times(0.10), 0.09, 0.005), export(times(0.124), 0.092, 0.005))
  local r = row(result, "work wall mean")
  T.eq(r.verdict, "confounded", r.reason)
  T.match(r.reason, "^wall 1%.24× slower: p = .*: regression, but a hyperfine export carries no per%-run CPU")
  T.match(r.reason, "mean CPU time %(user %+ system%) 1%.02× slower does not bear it out: confounded")
  T.eq({ result.summary.regressions, result.summary.confounded }, { 0, 2 })
  T.eq(compare.interference_text(r), "none: hyperfine export")
  -- more CPU work than load can account for: the verdict stands
  result = compare.compare(export(times(0.10), 0.09, 0.005), export(times(0.16), 0.15, 0.005))
  r = row(result, "work wall mean")
  T.eq(r.verdict, "regression", r.reason)
  T.match(r.reason, "%(mean CPU time %(user %+ system%) 1%.63× slower too, beyond the 1%.50× that load can account for%)$")
end)

T.case("sides run interleaved: a user time alone that moved without its wall is the tick-sampled split", function()
  -- 20 rounds; the new side's user time 10% lower in every round and its system time higher by as
  -- much (the kernel's split moved), its wall the same: user unchanged, said why; with the wall 10%
  -- faster too, the user time's improvement stands
  local function doc(wall_k, user_k, sys_k)
    local w, u, sy, q = {}, {}, {}, {}
    for k = 1, 20 do
      local load = k <= 10 and 1.5 or 1.0
      local e = 1 + ((k * 37) % 11 - 5) / 500
      w[k], u[k], sy[k], q[k] = 0.1 * load * e * wall_k, 0.09 * e * user_k, 0.01 * e * sys_k, 0.0001
    end
    return json.decode(json.encode({ schema_name = "wb.bench", schema_version = 1,
      commands = { { name = "c", samples = { wall = w, user = u, sys = sy, runq = q, runq_scope = "tree" } } } }))
  end
  local function judged(wall_k, user_k, sys_k)
    return compare.compare(compare.from_document(doc(1, 1, 1), "a"),
      compare.from_document(doc(wall_k, user_k, sys_k), "b"), { interleaved = true })
  end
  local result = judged(1, 0.9, 1.9)
  local r = row(result, "c user mean")
  T.eq(r.verdict, "unchanged", r.reason)
  T.match(r.reason, "^1%.11× faster %(paired runs, Hodges–Lehmann%).*: improvement, but the wall time it is part of is " ..
    "unchanged %(1%.00× [a-z]+%): the kernel's tick%-sampled user/system split moved, not the code's time: unchanged$")
  T.eq(result.summary.improvements, 0, result.summary.text)
  r = row(judged(0.9, 0.9, 0.9), "c user mean")
  T.eq(r.verdict, "improvement", r.reason)
end)

T.case("sides run interleaved with too few runs for the rank test's interval: shown, not a crash", function()
  -- 3 runs a side (a re-run cut short): the Hodges–Lehmann ratio has no 95% interval; the
  -- document, the Markdown and the change column show the change with its p and no interval
  local function doc(w)
    return json.decode(json.encode({ schema_name = "wb.bench", schema_version = 1,
      commands = { { name = "c", samples = { wall = w } } } }))
  end
  local result = compare.compare(compare.from_document(doc({ 1, 1.01, 0.99 }), "a"),
    compare.from_document(doc({ 2, 2.01, 1.99 }), "b"), { interleaved = true })
  local r = row(result, "c wall mean")
  T.eq({ r.verdict, r.ci_lo, r.ci_hi }, { "not tested", nil, nil })
  T.eq(r.change, "2.00× slower (p = 0.1)")
  local out = json.decode(json.encode(compare.document(result)))
  T.eq(#out.rows, #result.rows)
  local md = {}
  compare.markdown(result, function(s) md[#md + 1] = s end)
  T.match(table.concat(md), "| c wall mean +|")
end)
