-- wb compare --confirm (lua/wb/confirm.lua): the commands behind a comparison's changes run
-- again, interleaved, and only confirmed changes count.
local T = require "wb.test"
local wb = require "wb"
local fs, json = wb.fs, wb.json

-- A directory holding ./work, a shell script sleeping `seconds`, and the wb bench summary of it.
local function side(root, name, seconds)
  local dir = root .. "/" .. name
  assert(fs.mkdir_p(dir))
  assert(fs.write(dir .. "/work", "#!/bin/sh\nsleep " .. seconds .. "\n"))
  assert(os.execute("chmod +x '" .. dir .. "/work'"))
  local res = T.wb({ "bench", "./work", "runs=6", "warmup=1", "-o", root .. "/runs/" .. name }, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  return root .. "/runs/" .. name
end

local function compare(args)
  return T.wb({ "compare", table.unpack(args) }, { timeout = 120 })
end

-- The rows of a wb.compare document by metric name.
local function rows_of(text)
  local by = {}
  for _, r in ipairs(json.decode(text).rows) do by[r.metric] = r end
  return by
end

T.case("a real change is confirmed by the interleaved re-run; the gate fails on it", function()
  local root = T.tmpdir()
  local a, b = side(root, "a", "0.03"), side(root, "b", "0.045")
  local res = compare({ a, b, "--confirm", "--json", "--fail-on-regression" })
  T.eq(res.code, 1, res.stderr)
  local doc = json.decode(res.stdout)
  T.eq({ doc.summary.confirmed, doc.summary.regressions, doc.summary.unconfirmed }, { true, 2, 0 })
  local wall = rows_of(res.stdout)["./work wall mean"]
  T.eq({ wall.verdict, wall.confirmation.verdict }, { "regression", "regression" })
  T.between(wall.confirmation.ratio, 1.3, 1.7, "45 ms against 30 ms, interleaved")
  T.eq(rows_of(res.stdout)["./work wall max"].confirmation, nil, "an information-only row is not re-run")
  T.match(res.stderr, "^confirm: %./work: base and new again, interleaved, 20 runs each\n")
end)

T.case("a change the first runs made up is not confirmed, and does not count", function()
  local root = T.tmpdir()
  local a, b = side(root, "a", "0.03"), side(root, "b", "0.03")
  -- the base's runs as a faster machine (or a quieter hour) could have measured them
  local doc = assert(json.read(a .. "/summary.json"))
  local cmd = doc.commands[1]
  for _, key in ipairs({ "wall", "wall_own" }) do
    for i, x in ipairs(cmd.samples[key] or {}) do cmd.samples[key][i] = x * 0.6 end
  end
  for k, v in pairs(cmd.stats.wall) do if k ~= "n" then cmd.stats.wall[k] = v * 0.6 end end
  assert(fs.write(a .. "/summary.json", json.encode(doc)))
  local plain = compare({ a .. "/summary.json", b .. "/summary.json", "--json" })
  T.eq(rows_of(plain.stdout)["./work wall mean"].verdict, "regression", "without --confirm: a regression")
  local res = compare({ a .. "/summary.json", b .. "/summary.json", "--confirm", "--fail-on-regression" })
  T.eq(res.code, 0, "nothing confirmed, the gate passes: " .. res.stderr)
  T.match(res.stdout, "| confirmed by an interleaved re%-run +|\n")
  T.match(res.stdout, "| ./work wall mean +|[^\n]*| regression |[^\n]*| 1%.%d%d× [%a]+ %(paired runs, Hodges–Lehmann%): [^\n]*|\n")
  T.match(res.stdout, "confirmed by an interleaved re%-run: 0 regressions, 0 improvements %(2 changes not confirmed%)")
  local rows = rows_of(compare({ a .. "/summary.json", b .. "/summary.json", "--confirm", "--json" }).stdout)
  T.ok(rows["./work wall mean"].confirmation.verdict ~= "regression", rows["./work wall mean"].confirmation.reason)
  T.between(rows["./work wall mean"].confirmation.ratio, 0.85, 1.15, "the same script twice, interleaved")
end)

T.case("the same command in the same directory cannot be confirmed: said, and counted as called", function()
  local root = T.tmpdir()
  local a = side(root, "a", "0.03")
  local doc = assert(json.read(a .. "/summary.json"))
  local cmd = doc.commands[1]
  for i, x in ipairs(cmd.samples.wall) do cmd.samples.wall[i] = x * 2 end
  for i, x in ipairs(cmd.samples.wall_own or {}) do cmd.samples.wall_own[i] = x * 2 end
  for k, v in pairs(cmd.stats.wall) do if k ~= "n" then cmd.stats.wall[k] = v * 2 end end
  assert(fs.write(root .. "/slower.json", json.encode(doc)))
  local res = compare({ a, root .. "/slower.json", "--confirm", "--json", "--fail-on-regression" })
  T.eq(res.code, 1, "a gate does not pass on a change nothing disproved: " .. res.stderr)
  local wall = rows_of(res.stdout)["./work wall mean"]
  T.eq({ wall.verdict, wall.confirmation.verdict }, { "regression", "not confirmable" })
  T.match(wall.confirmation.reason, "^both sides are the same command in the same directory")
  local summary = json.decode(res.stdout).summary
  T.ok(summary.regressions >= 1 and summary.unconfirmable == summary.regressions and summary.unconfirmed == 0,
    json.encode(summary))
end)

T.case("--confirm needs wb bench summaries: anything else is one line, exit 2", function()
  local root = T.tmpdir()
  local a = side(root, "a", "0.01")
  assert(fs.write(root .. "/hf.json", [[{"results": [{"command": "./work", "mean": 0.01, "stddev": 0.001,
    "median": 0.01, "user": 0.001, "system": 0.001, "min": 0.01, "max": 0.01, "times": [0.01, 0.01]}]}]]))
  local res = compare({ root .. "/hf.json", a, "--confirm" })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: compare: %-%-confirm re%-runs the commands of wb bench summaries %(summary%.json, or a " ..
    "wb bench run directory%); [^\n]*hf%.json is not one %(hyperfine exports and manifests do not record where a " ..
    "command ran%)\n$")
end)

T.case("wb bench --confirm: the previous run's commands and these re-run interleaved; confirm keeps the scope", function()
  local root = T.tmpdir()
  side(root, "a", "0.03")
  side(root, "b", "0.045")
  local function bench(name, dir, ...)
    local res = T.wb({ "bench", "commands=[{name: work, argv: [" .. root .. "/" .. dir .. "/work]}]", "runs=6",
      "-o", root .. "/runs/" .. name, ... }, { timeout = 120 })
    T.eq(res.code, 0, res.stderr)
    return T.manifest(root .. "/runs/" .. name), res
  end
  bench("r1", "a")
  local m = bench("r2", "a", "--confirm")
  T.eq(m.previous_manifest_path, root .. "/runs/r1/manifest.json", "confirm=true is no other compatibility scope")
  local res
  m, res = bench("r3", "b", "--baseline", root .. "/runs/r1", "--confirm")
  local wall
  for _, c in ipairs(m.comparisons) do if c.metric == "wall mean" then wall = c end end
  -- the original verdict is across two runs minutes apart: beside load that changed between them
  -- it may be "interference"; the interleaved re-run settles it, and the counts follow the re-run
  T.ok(wall.verdict == "regression" or wall.verdict == "interference" or wall.verdict == "confounded",
    wall.verdict .. ": " .. tostring(wall.reason))
  T.eq(wall.confirmation.verdict, "regression", tostring(wall.confirmation.reason))
  T.eq(m.comparison_summary.regressions, 2)
  T.match(res.stdout, "confirmed by an interleaved re%-run: 2 regressions, 0 improvements %(0 changes not confirmed%)")
end)

T.case("a change in the bytes allocated is confirmed by a re-run that counts them (alloc_runs)", function()
  local root = T.tmpdir()
  local function alloc_side(name, preset)
    local dir = root .. "/" .. name
    assert(fs.mkdir_p(dir))
    -- xz's encoder allocates by its preset, the same bytes every run (empty input: quick)
    assert(fs.write(dir .. "/work", "#!/bin/sh\nexec xz -" .. preset .. " -c /dev/null\n"))
    assert(os.execute("chmod +x '" .. dir .. "/work'"))
    local res = T.wb({ "bench", "./work", "runs=3", "warmup=0", "alloc_runs=2", "-o", root .. "/runs/" .. name },
      { cwd = dir })
    T.eq(res.code, 0, res.stderr)
    return root .. "/runs/" .. name
  end
  local a, b = alloc_side("a", 1), alloc_side("b", 2)
  local res = compare({ a, b, "--confirm", "--json" })
  T.eq(res.code, 0, res.stderr)
  local row = rows_of(res.stdout)["./work alloc_bytes mean"]
  T.eq(row.verdict, "regression", row.reason)
  T.match(row.reason, "exact: each side.s 2 and 2 runs measured the same")
  T.eq(row.confirmation.verdict, "regression", "the re-run counted the bytes too: " .. tostring(row.confirmation.reason))
  T.near(row.confirmation.ratio, row.ratio, 1e-9, "the same counts again")
  T.match(res.stderr, "confirm: %./work: base and new again")
end)

T.case("wb gate's re-run of a wall time is judged net of the runs' wait for a CPU, as its detection", function()
  -- 20 interleaved runs a side: 60 ms of code against 69 ms; every other run of either side waited
  -- 10-40 ms for a CPU (busy loops beside), the base's in one round, the new side's in the next,
  -- which swamps the 9 ms in the raw walls, paired or not
  local function cmd(code, phase)
    local wall, runq, user, sys, own = {}, {}, {}, {}, {}
    for i = 1, 20 do
      local wait = (i + phase) % 2 == 0 and 0.010 + 0.030 * ((i * 7) % 11) / 10 or 0.0002
      wall[i], runq[i], user[i], sys[i], own[i] = code + wait + 0.0004, wait, 0.001, 0.0005, code + wait
    end
    return { samples = { wall = wall, runq = runq, user = user, sys = sys, wall_own = own, runq_scope = "tree" } }
  end
  local b, n = cmd(0.060, 0), cmd(0.069, 1)
  local row = wb.gate.confirm_metric("wall mean", b, n, { threshold = 0.05, seed = 1 })
  T.eq(row.verdict, "regression", row.reason)
  T.between(row.ratio, 1.14, 1.16, "69 ms against 60 ms, net of the waits")
  T.ok(row.raw and row.raw.ratio < 1.13, "the raw walls' ratio is diluted by the waits")
  -- without the evidence (a command that did not record it) the raw walls decide
  for _, c in ipairs({ b, n }) do c.samples.runq = nil end
  row = wb.gate.confirm_metric("wall mean", b, n, { threshold = 0.05, seed = 1 })
  T.eq(row.raw, nil)
  T.ok(row.verdict ~= "regression", "the raw walls' CI reaches below the threshold: " .. tostring(row.reason))
end)
