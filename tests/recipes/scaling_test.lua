local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local function run_scaling(dir, args) return T.wb({ "scaling", "-o", dir, table.unpack(args) }, { timeout = 120 }) end

local function nproc()
  local res = assert(proc.run { argv = { "nproc" }, stdout = "capture" })
  return tonumber(res.stdout:match("%d+"))
end

local function mean(xs)
  local s = 0
  for _, x in ipairs(xs) do s = s + x end
  return s / #xs
end

T.case("strong scaling on the bundled workload: JSON, speedup, efficiency, table, chart", function()
  local d = T.tmpdir() .. "/strong"
  local res = run_scaling(d, { "workers=[1,2]", "size=150", "runs=3", "warmup=1" })
  T.eq(res.code, 0, res.stderr)
  for _, f in ipairs { "scaling.json", "scaling.md", "scaling.svg", "report.html", "summary.json", "manifest.json" } do
    T.ok(fs.exists(d .. "/" .. f), f)
  end
  local doc = assert(json.read(d .. "/scaling.json"))
  T.eq(doc.schema_name, "wb.scaling")
  T.eq(doc.schema_version, 1)
  T.eq(doc.mode, "strong")
  T.eq(doc.workers, { 1, 2 })
  T.eq(doc.baseline_workers, 1)
  T.eq(doc.base_size, 150)
  T.ok(doc.cpu_count >= 1 and doc.cpu_count <= nproc(), "cpu_count " .. tostring(doc.cpu_count))
  T.eq(doc.settings.runs, 3)
  T.eq(#doc.points, 2)
  local p1, p2 = doc.points[1], doc.points[2]
  T.eq(p1.workers, 1)
  -- ${wb:examples}: the built binary's own examples, as an absolute path (lua/wb/paths.lua)
  T.eq(p2.argv, { wb.fs.realpath(T.example("scale_work")), "--workers", "2", "--size", "150" })
  T.eq(p1.speedup, 1.0)
  T.eq(p1.efficiency, 1.0)
  T.eq(p1.speedup_ci_lo, json.null)
  T.eq(p1.karp_flatt, json.null)
  for _, pt in ipairs(doc.points) do
    T.eq(pt.n, 3)
    T.eq(#pt.samples, 3)
    T.near(pt.mean, mean(pt.samples), 1e-12)
    T.eq(pt.size, 150)
    T.eq(pt.oversubscribed, pt.workers > doc.cpu_count)
  end
  -- the manifest's records carry each run's interference evidence: a comparison of two scaling
  -- runs is judged on wall net of the waits for a CPU
  for _, r in ipairs(T.manifest(d).runs) do
    local runq = r.samples.runq_seconds
    T.ok(type(runq) == "table" and #runq == #r.samples.wall_mean_seconds, r.name .. ": run-queue delay per run")
  end
  local walls = 0
  for _, row in ipairs(wb.compare.compare(wb.compare.load(d), wb.compare.load(d)).rows) do
    if row.metric == "wall mean" then
      walls = walls + 1
      T.ok(row.load ~= nil, row.name .. ": compared with its evidence")
    end
  end
  T.eq(walls, #doc.points, "a wall row per point")
  local s = p1.mean / p2.mean
  T.near(p2.speedup, s, 1e-12)
  T.near(p2.efficiency, s / 2, 1e-12)
  T.near(p2.karp_flatt, (1 / s - 1 / 2) / (1 - 1 / 2), 1e-12)
  T.ok(p2.speedup > 0.2 and p2.speedup < 4, "speedup " .. p2.speedup)
  T.ok(p2.speedup_ci_lo <= p2.speedup_ci_hi, "CI ordered")
  T.near(p2.efficiency_ci_lo, p2.speedup_ci_lo / 2, 1e-12)
  local md = fs.read(d .. "/scaling.md")
  T.match(md, "^# Strong scaling of `")
  T.match(md, "\n| Workers | Size | +Mean ± σ %[[mµ]?s%] | Speedup %[95%% CI%] | Ideal | Efficiency %[95%% CI%] | Karp–Flatt e | Note +|\n")
  T.match(md, "\n|       1 |  150 | +[%d.]+ ± [%d.]+ | +1%.00 |     1 | +1%.00 | +– | +|\n")
  T.match(md, string.format("\n|       2 |  150 | +[%%d.]+ ± [%%d.]+ | %.2f %%[", p2.speedup))
  T.eq(res.stdout, md .. "\nreport: " .. d .. "/report.html\n")
  local chart = fs.read(d .. "/scaling.svg")
  T.match(chart, "^<svg ")
  T.ok(chart:find("ideal (y = p)", 1, true), "the ideal line is labelled")
  T.eq(T.count(chart, 'class="series"'), 2)
  T.ok(T.count(chart, "<circle") >= 4, "measured and ideal points")
  T.ok(chart:find("2 workers: speedup", 1, true), "the measured point carries its value")
  local page = fs.read(d .. "/report.html")
  T.match(page, "<h2>Strong scaling</h2>")
  T.eq(T.count(page, "<svg "), 2 + T.count(page, "Distribution of wall time per command") +
    T.count(page, "Mean time relative to the reference"))
  local m = T.manifest(d)
  T.eq(m.status, "complete")
  T.eq(m.runs[2].name, "workers=2")
  T.near(m.runs[2].metrics.speedup, p2.speedup, 1e-12)
end)

T.case("weak scaling grows the size with the workers; efficiency is T(1)/T(p)", function()
  local d = T.tmpdir() .. "/weak"
  local res = run_scaling(d, { "mode=weak", "workers=[1,2]", "size=100", "runs=3", "warmup=0" })
  T.eq(res.code, 0, res.stderr)
  local doc = assert(json.read(d .. "/scaling.json"))
  T.eq(doc.mode, "weak")
  local p1, p2 = doc.points[1], doc.points[2]
  T.eq({ p1.size, p2.size }, { 100, 200 })
  T.eq(p2.argv[5], "200")
  local e = p1.mean / p2.mean
  T.near(p2.efficiency, e, 1e-12)
  T.near(p2.speedup, 2 * e, 1e-12)
  T.eq(p2.ideal_speedup, 2)
  T.eq(p2.karp_flatt, json.null)
  T.eq(p1.efficiency, 1.0)
  T.ok(p2.efficiency > 0.1 and p2.efficiency < 3, "efficiency " .. p2.efficiency)
  local md = fs.read(d .. "/scaling.md")
  T.match(md, "^# Weak scaling of")
  T.match(md, "Problem size 100 × p;")
  T.match(md, "| Scaled speedup %[95%% CI%] | Ideal | Efficiency %[95%% CI%] | Note")
  T.ok(not md:find("Karp", 1, true), "no Karp–Flatt column in weak scaling")
  T.ok(fs.read(d .. "/scaling.svg"):find("ideal (y = p)", 1, true))
end)

T.case("more workers than CPUs: the point is flagged and the report says so", function()
  local d = T.tmpdir() .. "/over"
  local res = run_scaling(d, { "workers=[1,4]", "size=120", "runs=2", "warmup=0" })
  T.eq(res.code, 0, res.stderr)
  local doc = assert(json.read(d .. "/scaling.json"))
  local over = 4 > doc.cpu_count
  T.eq(doc.points[2].oversubscribed, over)
  local notes = table.concat(doc.notes, "\n")
  local md = fs.read(d .. "/scaling.md")
  if over then
    T.match(notes, string.format("^4 workers exceed the %d CPUs? available here", doc.cpu_count))
    T.match(notes, "over%-subscription, not the program's scalability")
    T.match(md, "|       4 |  120 | .* | over%-subscribed |\n")
    T.match(md, "\n%- 4 workers exceed")
    T.match(fs.read(d .. "/report.html"), "4 workers exceed")
  else
    T.ok(not notes:find("exceed", 1, true), notes)
  end
  T.ok(doc.points[2].speedup > 0, "a speedup was measured")
end)

T.case("bad configurations are usage errors; --dry-run plans without measuring", function()
  local d = T.tmpdir()
  local res = run_scaling(d .. "/a", { "mode=sideways" })
  T.eq(res.code, 2)
  T.eq(res.stderr, "wb: override 'mode=sideways': mode must be 'strong' or 'weak', got string 'sideways'\n")
  res = run_scaling(d .. "/b", { "command=[sleep, '0.01']" })
  T.eq(res.code, 2)
  T.eq(res.stderr, "wb: scaling: command has no {workers} placeholder\n")
  res = run_scaling(d .. "/c", { "workers=[1,0]" })
  T.eq(res.code, 2)
  T.match(res.stderr, "workers: 0 is not a positive integer")
  res = run_scaling(d .. "/e", { "mode=weak", "command=[echo, '{workers}']" })
  T.eq(res.code, 2)
  T.match(res.stderr, "weak scaling needs a {size} placeholder")
  res = T.wb({ "scaling", "--dry-run", "-o", d .. "/plan", "workers=[1,2,4]" })
  T.eq(res.code, 0, res.stderr)
  local plan = json.read(d .. "/plan/plan.json")
  T.eq(#plan.sections[1].cases, 3)
  T.eq(plan.sections[1].subprocess_runs, 3 * 11)
  T.ok(not fs.exists(d .. "/plan/scaling.json"), "nothing measured")
end)

-- Ground truth planted in the command: strong scaling where 2 workers take half the time
-- (speedup 2), weak scaling where the doubled size doubles the time (efficiency 0.5). Each run
-- adds start-up time (up to 60 ms under ASan beside two hogs: a weak efficiency of 0.68 was
-- measured there, seq48 l1), so each mean is checked within that allowance of its planted time,
-- and the ratios as exact functions of the means within the bounds the allowance gives.
T.case("planted timings: strong speedup 2, weak efficiency 0.5, in the JSON and the table", function()
  local d = T.tmpdir()
  local res = run_scaling(d .. "/strong", { "workers=[1,2]", "runs=3", "warmup=0",
    "command=[sh, -c, 'case {workers} in 1) sleep 0.24;; 2) sleep 0.12;; esac']" })
  T.eq(res.code, 0, res.stderr)
  local doc = assert(json.read(d .. "/strong/scaling.json"))
  local p1, p2 = doc.points[1], doc.points[2]
  T.between(p1.mean, 0.24, 0.24 + 0.06, "1 worker: planted 0.24 s")
  T.between(p2.mean, 0.12, 0.12 + 0.06, "2 workers: planted 0.12 s")
  -- the derived figures are exact functions of the means (each mean within its start-up allowance
  -- of the planted time, so within these bounds of the planted ratios too)
  T.near(p2.speedup, p1.mean / p2.mean, 1e-9, "speedup = T1 / T2")
  T.between(p2.speedup, 0.24 / 0.18, 0.30 / 0.12, "speedup, planted 2")
  T.near(p2.efficiency, p2.speedup / 2, 1e-12, "efficiency = speedup / 2")
  T.near(p2.karp_flatt, (1 / p2.speedup - 0.5) / 0.5, 1e-9, "serial fraction (Karp-Flatt), planted 0")
  T.match(fs.read(d .. "/strong/scaling.md"), "\n|       2 | +%S* | +[%d.]+ ± [%d.]+ | [12]%.%d%d %[")
  local speedup_cell = fs.read(d .. "/strong/scaling.md"):match("\n|       2 |[^|]*|[^|]*| ([%d.]+) %[")
  T.near(tonumber(speedup_cell), p2.speedup, 0.005 + 1e-9, "the table's speedup")
  res = run_scaling(d .. "/weak", { "mode=weak", "workers=[1,2]", "size=100", "runs=3", "warmup=0",
    "command=[sh, -c, 'sleep 0.{size} # {workers}']" })
  T.eq(res.code, 0, res.stderr)
  doc = assert(json.read(d .. "/weak/scaling.json"))
  p1, p2 = doc.points[1], doc.points[2]
  T.between(p1.mean, 0.1, 0.1 + 0.06, "size 100: planted 0.1 s")
  T.between(p2.mean, 0.2, 0.2 + 0.06, "size 200: planted 0.2 s")
  T.near(p2.efficiency, p1.mean / p2.mean, 1e-9, "weak efficiency = T1 / T2")
  T.between(p2.efficiency, 0.1 / 0.26, 0.16 / 0.2, "weak efficiency, planted 0.5")
  T.near(p2.speedup, 2 * p2.efficiency, 1e-12)
end)
