-- `wb tune` with real processes: a synthetic tunable program this test builds (its runtime a
-- known function of two parameters, slept, so that CPU hogs beside the test change it little),
-- real campaigns with and without a difference, kill -9 and --resume, the plan and bad input.
-- The statistics over many seeded campaigns (noise model): tests/lua/tune_test.lua.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local parent = T.tmpdir()

-- The synthetic program (tests/fixtures/tunable.lua): a (1, 2, 3) x b (1, 2), best a=2 b=1.
local _, PROFILES = dofile(T.root() .. "/tests/fixtures/tunable.lua")(parent)

local ENV = { WB_PROFILE_PATH = PROFILES, WB_NO_PROGRESS = "1" }

local function tune_args(dir, ...)
  return { "run", "recipes/tune.lua", "--config-name", "tune_synthetic", "-o", dir, ... }
end

local function summary(dir) return assert(json.read(dir .. "/summary.json")) end

-- The trial records of a campaign's manifest (not its records for the history, role "tuned").
local function trials_of(dir)
  local out = {}
  for _, r in ipairs(T.manifest(dir).runs) do
    if r.role ~= "tuned" then out[#out + 1] = r end
  end
  return out
end

-- The trials the program finished, by name (the log it appends to).
local function finished(log)
  local counts, n = {}, 0
  for line in (fs.read(log) or ""):gmatch("[^\n]+") do
    counts[line] = (counts[line] or 0) + 1
    n = n + 1
  end
  return counts, n
end

-- Every trial record not stopped at the cap was finished by the program; every trial the program
-- finished is a record. (A trial stopped at the cap may have finished: one that ends after its
-- deadline, before wb stops it, counts as stopped.)
local function check_records(records, counts, what)
  local names = {}
  for _, r in ipairs(records) do
    names[r.name] = true
    if not r.capped then T.ok((counts[r.name] or 0) >= 1, what .. ": " .. r.name .. " finished") end
  end
  for name in pairs(counts) do T.ok(names[name], what .. ": " .. name .. " is a record") end
end

T.case("a real campaign finds the best of six (20% ahead), confirms it on new trials, and accounts for every run", function()
  local dir, log = parent .. "/real", parent .. "/real.log"
  local res = T.wb(tune_args(dir, "tune.params.log=" .. log), { env = ENV, timeout = 300 })
  T.eq(res.code, 0, res.stderr)
  local s = summary(dir)
  T.eq({ s.winner.a, s.winner.b }, { 2, 1 })
  T.eq({ s.default.a, s.default.b }, { 1, 2 })
  T.eq(s.recommended_overrides, "a=2 b=1")
  T.eq(s.headline.confirmed, true)
  T.ok(s.headline.ratio < 0.8 and s.headline.ratio_upper < 1,
    string.format("headline %.3f (%.3f-%.3f), truth 0.625", s.headline.ratio, s.headline.ratio_lower, s.headline.ratio_upper))
  T.eq(s.headline.n, 12)
  T.ok(type(s.headline.node) == "string" and #s.headline.node > 0, "the node is named")
  -- the ledger adds up: stage runs = spent = the trial records = what the program finished
  local runs = trials_of(dir)
  local trials, by_stage = 0, {}
  for _, r in ipairs(runs) do
    T.eq(r.status, "success", r.name)
    trials = trials + 1
    by_stage[r.stage] = (by_stage[r.stage] or 0) + 1
  end
  local stage_sum = 0
  for _, st in ipairs(s.ledger.stages) do
    stage_sum = stage_sum + st.runs
    T.eq(st.runs, by_stage[st.stage] or 0, st.stage)
  end
  T.eq(stage_sum, trials)
  T.eq(s.ledger.spent.runs, trials)
  T.eq(s.ledger.remaining.runs, 200 - trials)
  local counts = finished(log)
  for name, k in pairs(counts) do T.eq(k, 1, name) end
  check_records(runs, counts, "")
  -- the history's records: the recommended configuration and the default, their headline trials
  local tuned = {}
  for _, r in ipairs(T.manifest(dir).runs) do
    if r.role == "tuned" then tuned[r.name] = r end
  end
  T.eq(tuned["a=2,b=1"].tune_role, "recommended")
  T.eq(tuned["a=1,b=2"].tune_role, "default")
  for _, r in pairs(tuned) do
    T.eq(r.stage, "headline")
    T.eq(#r.samples.wall_seconds, 12)
    T.near(r.metrics.wall_mean_seconds, wb.stats.mean(r.samples.wall_seconds), 1e-12)
  end
  local hist = T.wb({ "history", "series", "--root", parent, "--db", parent .. "/history.sqlite", "--recipe", "tune",
    "--metric", "wall mean", "--json" }, { env = ENV })
  T.eq(hist.code, 0, hist.stderr)
  local names = {}
  for _, sr in ipairs(json.decode(hist.stdout)) do names[sr.name] = #sr.points[1].samples end
  T.eq(names["a=2,b=1"], 12, hist.stdout)
  T.eq(names["a=1,b=2"], 12, hist.stdout)
  local report = assert(fs.read(dir .. "/report.md"))
  T.match(report, "Recommended: `a=2 b=1`")
  T.match(report, "## Budget ledger")
  T.match(report, "## Screening race")
  T.ok(fs.exists(dir .. "/report.html"), "report.html")
  T.match(res.stdout, "recommended: a=2 b=1")
end)

T.case("A/A: five real campaigns of six equal candidates declare no winner over the default", function()
  local declared = 0
  for i = 1, 5 do
    local dir = parent .. "/aa" .. i
    local res = T.wb(tune_args(dir, "tune.params.slope=0", "tune.seed=" .. i, "tune.max_blocks=10"), { env = ENV, timeout = 300 })
    T.eq(res.code, 0, res.stderr)
    local s = summary(dir)
    if s.winner_name ~= "a=1,b=2" then declared = declared + 1 end
  end
  T.eq(declared, 0, "campaigns that called an equal candidate faster")
end)

-- Waits until the campaign in dir has ended n trials (events.jsonl), then sleeps a random part of
-- a trial: a moment inside the race measured in trials, not seconds, so that a fast machine
-- does not finish the campaign first. False when the process ended before.
local function after_trials(p, dir, n, rand)
  while p:running() do
    local ended = 0
    for line in (fs.read(dir .. "/events.jsonl") or ""):gmatch("[^\n]+") do
      if line:find('"run_finished"', 1, true) then ended = ended + 1 end
    end
    if ended >= n then
      wb.clock.sleep(0.03 * rand())
      return true
    end
    wb.clock.sleep(0.01)
  end
  return false
end

T.case("kill -9 at random moments in 10 races, then --resume: no finished trial run twice, the same winner", function()
  local rand = math.random
  math.randomseed(20261203)
  local kills = 0
  for i = 1, 10 do
    local dir, log = parent .. "/kill" .. i, parent .. "/kill" .. i .. ".log"
    local argv = { T.wb_binary(), table.unpack(tune_args(dir, "tune.params.log=" .. log, "tune.seed=" .. i)) }
    local env = { WB_PROFILE_PATH = PROFILES, WB_NO_PROGRESS = "1", WB_ROOT = T.root() }
    local p = assert(proc.spawn { argv = argv, env = env, stdout = "null", stderr = "null", cwd = T.root() })
    -- a campaign here runs some 100-125 trials: killed after 1 to 70 of them
    if after_trials(p, dir, 1 + math.floor(70 * rand()), rand) then p:kill(9) end
    local r = p:wait()
    p:close()
    local killed = r.signal == 9
    if killed then
      local res = T.wb({ "run", "recipes/tune.lua", "--resume", dir }, { env = ENV, timeout = 300 })
      T.eq(res.code, 0, res.stderr)
    end
    local s = summary(dir)
    T.eq(s.winner_name, "a=2,b=1", "race " .. i)
    -- no trial whose end wb had recorded started again
    local ended = {}
    for _, e in ipairs(T.events(dir)) do
      local run = type(e.fields) == "table" and e.fields.run
      if e.event == "run_finished" then ended[run] = true end
      if e.event == "run_started" then T.eq(ended[run], nil, "race " .. i .. ": " .. tostring(run) .. " started after it ended") end
    end
    -- the program may have finished the one trial running at the kill after wb died (it was an
    -- orphan then, and its result was never recorded): that one ran twice, no other
    local counts = finished(log)
    local twice, records = 0, trials_of(dir)
    for _, k in pairs(counts) do twice = twice + (k - 1) end
    T.ok(twice <= 1, "race " .. i .. ": " .. twice .. " trials finished twice")
    check_records(records, counts, "race " .. i)
    T.eq(s.ledger.spent.runs, #records, "race " .. i .. ": the ledger counts each trial once")
    kills = kills + (killed and 1 or 0)
  end
  T.eq(kills, 10, "races killed before they ended")
end)

T.case("the plan: --dry-run writes the stages' runs; a budget the race cannot work in fails before running", function()
  local dir = parent .. "/dry"
  local res = T.wb(tune_args(dir, "--dry-run"), { env = ENV })
  T.eq(res.code, 0, res.stderr)
  local plan = assert(fs.read(dir .. "/plan.md"))
  T.match(plan, "## screening — 6 cases")
  T.match(plan, "no elimination is possible before block %d+")
  T.match(plan, "## finalists — 0 cases, 30 subprocess runs")
  T.match(plan, "## headline — 0 cases, 24 subprocess runs")
  local over = parent .. "/over"
  res = T.wb(tune_args(over, "tune.budget_runs=40"), { env = ENV })
  T.eq(res.code, 1)
  T.match(res.stderr, "over budget: %d+ subprocess runs > tune.budget_runs 40")
  T.eq(fs.exists(over .. "/runs"), false, "nothing ran")
  res = T.wb(tune_args(parent .. "/over2", "tune.budget_runs=40", "tool.allow_over_budget=true", "--dry-run"), { env = ENV })
  T.eq(res.code, 0, res.stderr)
end)

T.case("bad input: one line naming the key, exit 2, no run directory", function()
  for _, case in ipairs({
    { "tune.alpha=2", "tune.alpha must be in %(0, 1%)" },
    { "tune.default.a=7", "tune.default.a: 7 is not one of tune.axes.a" },
    { "tune.cap=1.01", "tune.cap %(1.01%) must be above 1 %+ tune.delta" },
    { "tune.finalist_rounds=2", "tune.finalist_rounds must be an integer >= 5" },
    { "tune.headline_trials=5", "tune.headline_trials 5 cannot confirm a winner at alpha 0.05: at least 6" },
    { "tune.axes={a: [1, 1], b: [2]}", "two candidates are both a=1,b=2" },
  }) do
    local dir = parent .. "/bad"
    local res = T.wb(tune_args(dir, case[1]), { env = ENV })
    T.eq(res.code, 2, case[1])
    T.match(res.stderr, case[2])
    T.eq(select(2, res.stderr:gsub("\n", "")), 1, "one line: " .. res.stderr)
    T.eq(fs.exists(dir), false, case[1] .. ": no run directory")
  end
end)

T.case("--resume refuses a campaign whose profile changed, or another --config-name, before running anything", function()
  local dir = parent .. "/changed"
  local res = T.wb(tune_args(dir, "tune.max_blocks=10"), { env = ENV, timeout = 300 })
  T.eq(res.code, 0, res.stderr)
  local before = assert(fs.read(dir .. "/manifest.json"))
  -- the same profile name, other contents: another campaign's candidates
  local other = parent .. "/profiles2"
  assert(fs.mkdir_p(other))
  local text = assert(fs.read(PROFILES .. "/tune_synthetic.yaml")):gsub("slope: 0%.3", "slope: 0.5")
  assert(fs.write(other .. "/tune_synthetic.yaml", text))
  res = T.wb({ "run", "recipes/tune.lua", "--resume", dir }, { env = { WB_PROFILE_PATH = other, WB_NO_PROGRESS = "1" } })
  T.eq(res.code, 2, res.stderr)
  T.match(res.stderr, "^wb: %-%-resume: the campaign's candidates or settings changed since it started")
  T.eq(assert(fs.read(dir .. "/manifest.json")), before, "the run directory untouched")
  res = T.wb({ "run", "recipes/tune.lua", "--resume", dir, "--config-name", "tune_gwas" }, { env = ENV })
  T.eq(res.code, 2, res.stderr)
  T.match(res.stderr, "ran with profile tune_synthetic, not %-%-config%-name tune_gwas")
  -- the same profile: nothing left to run, the same summary
  local summary_before = assert(fs.read(dir .. "/summary.json"))
  res = T.wb({ "run", "recipes/tune.lua", "--resume", dir }, { env = ENV, timeout = 120 })
  T.eq(res.code, 0, res.stderr)
  T.eq(json.read(dir .. "/summary.json").ledger.spent.runs, json.decode(summary_before).ledger.spent.runs)
end)
