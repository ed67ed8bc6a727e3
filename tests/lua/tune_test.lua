-- wb.tune (the three stages of `wb tune`) and wb.stats.signed_rank, with the trial runner
-- replaced by a noise model: a candidate's true time x a factor its block or round shares (the
-- machine's drift, 5% log-sd) x its own log-normal noise (3% log-sd), from seeded generators, so
-- every figure is the same on every run. The recipe with real processes: tests/cli/tune.t.
local T = require "wb.test"
local wb = require "wb"
local tune = require "wb.tune"

local generator = T.seeded

-- The settings of a campaign over axes a (4 values) x b (6 values), default a=1 b=1.
local function settings(extra)
  local cfg = { tune = { command = { "true" }, axes = { a = { 1, 2, 3, 4 }, b = { 1, 2, 3, 4, 5, 6 } },
    default = { a = 1, b = 1 } } }
  for k, v in pairs(extra or {}) do cfg.tune[k] = v end
  return tune.settings(cfg)
end

-- 24 candidates whose best (a=3, b=2) is 5% ahead of the next four; the default is 45% slower.
local function truth_grid(cd) return 1 + 0.05 * ((cd.axes.a - 3) ^ 2 + (cd.axes.b - 2) ^ 2) end
local function truth_flat() return 1 end

-- run_block of the noise model; log (optional) gets "stage/index/name" per trial run.
local function model(cands, truth, seed, log)
  local u, normal = generator(seed)
  local by = {}
  for _, cd in ipairs(cands) do by[cd.name] = cd end
  return function(stage, index, order, cap)
    local drift, out = math.exp(0.05 * normal()), {}
    for _, name in ipairs(order) do
      local t = truth(by[name]) * drift * math.exp(0.03 * normal())
      out[name] = cap and t > cap and { seconds = cap, capped = true } or { seconds = t }
      if log then log[#log + 1] = stage .. "/" .. index .. "/" .. name end
    end
    return out
  end
end

T.case("signed_rank: the Hollander-Wolfe example (V = 40, p = 0.0195), interval and large-sample form", function()
  local x = { 1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30 }
  local y = { 0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29 }
  local d = {}
  for i = 1, #x do d[i] = x[i] - y[i] end
  local r = wb.stats.signed_rank(d)
  T.eq(r.w_plus, 40)
  T.near(r.p_greater, 10 / 512, 1e-12)
  T.near(r.estimate, 0.46, 1e-9)
  -- P(W+ <= 5) = 10/512 <= 0.025 < P(W+ <= 6): the 6th and 40th of the 45 Walsh averages
  T.near(r.lower, 0.01, 1e-9)
  T.near(r.upper, 0.786, 1e-9)
  T.eq(r.exact, true)
  local big = {}
  for i = 1, 80 do big[i] = (i % 9) - 3.5 end
  local b = wb.stats.signed_rank(big)
  T.eq(b.exact, false)
  T.ok(b.p_greater < 0.05 and b.p_less > 0.9, "a shifted sample: p " .. b.p_greater)
  T.ok(b.lower < b.estimate and b.estimate < b.upper, "estimate inside its interval")
  local none = wb.stats.signed_rank({ 0, 0, 0 })
  T.eq({ none.n, none.p_less, none.p_greater }, { 0, 1, 1 })
  T.raises(function() wb.stats.signed_rank({}) end, "no values")
  T.raises(function() wb.stats.signed_rank({ 1 }, { level = 1 }) end, "level")
end)

T.case("the race, the finalists and the headline find the best of 24 in at least 19 of 20 seeded campaigns", function()
  local s = settings()
  local cands = tune.candidates(s)
  T.eq(#cands, 24)
  local found, confirmed, runs = 0, 0, {}
  for seed = 1, 20 do
    local r = tune.run(s, cands, model(cands, truth_grid, seed))
    if r.winner.name == "a=3,b=2" then found = found + 1 end
    if r.headline and r.headline.confirmed then confirmed = confirmed + 1 end
    runs[#runs + 1] = r.ledger.spent.runs
  end
  T.ok(found >= 19, found .. " of 20 campaigns chose a=3,b=2")
  T.ok(confirmed >= 19, confirmed .. " of 20 headlines confirmed the winner faster than the default")
end)

T.case("A/A: 24 equal candidates, 60 campaigns: a winner better than the default in at most alpha of them", function()
  local s = settings({ max_blocks = 20 })
  local cands = tune.candidates(s)
  local declared, confirmed = 0, 0
  for seed = 101, 160 do
    local r = tune.run(s, cands, model(cands, truth_flat, seed))
    if r.chosen ~= r.default then declared = declared + 1 end
    if r.headline and r.headline.confirmed then confirmed = confirmed + 1 end
  end
  -- the finalists' Holm-corrected choice alone holds the error rate; the headline's new trials
  -- must confirm it as well before it is the winner
  T.ok(declared <= 3, declared .. " of 60 finalist stages chose a candidate over the default (alpha 0.05 allows 3)")
  T.ok(confirmed <= declared, "a confirmed headline needs a chosen candidate")
end)

T.case("budget: screening 24 candidates spends at most half the runs of the full grid; the ledger adds up", function()
  local s = settings()
  local cands = tune.candidates(s)
  local log = {}
  local r = tune.run(s, cands, model(cands, truth_grid, 7, log))
  local sc = r.ledger.stages[1]
  T.eq(sc.stage, "screening")
  local grid = #cands * sc.blocks
  T.ok(sc.runs <= grid / 2, string.format("screening ran %d trials in %d blocks; the grid %d", sc.runs, sc.blocks, grid))
  local stage_runs, trials = 0, 0
  for _, st in ipairs(r.ledger.stages) do stage_runs = stage_runs + st.runs end
  for _, line in ipairs(r.ledger.candidates) do trials = trials + line.trials end
  T.eq(stage_runs, #log)
  T.eq(r.ledger.spent.runs, #log)
  T.eq(trials, sc.runs)
  local eliminated = 0
  for _, line in ipairs(r.ledger.candidates) do
    if line.status == "eliminated" then
      eliminated = eliminated + 1
      T.ok(line.block >= 1 and line.slower_than and line.ratio > 1 and line.spent_seconds > 0,
        line.name .. ": when (block, seconds) and why (slower than, ratio)")
    end
  end
  T.ok(eliminated >= 15, eliminated .. " of 23 eliminated")
end)

T.case("budget_seconds: screening stops early enough to leave the later stages their room", function()
  local s = settings({ budget_seconds = 250 })
  local cands = tune.candidates(s)
  local r = tune.run(s, cands, model(cands, truth_grid, 9))
  local sc = r.ledger.stages[1]
  T.eq(sc.stopped, "its share of tune.budget_seconds spent")
  T.ok(r.ledger.spent.seconds <= 250 * 1.05, "spent " .. r.ledger.spent.seconds .. " s of 250")
  T.ok(r.ledger.remaining.seconds == 250 - r.ledger.spent.seconds, "remaining = budget - spent")
  T.ok(r.ledger.stages[2].runs > 0 and r.ledger.stages[3].runs > 0, "the finalists and the headline ran")
end)

T.case("resume: a campaign interrupted at any trial and continued from its journal is the same campaign", function()
  local s = settings({ max_blocks = 25 })
  local cands = tune.candidates(s)
  local whole_log = {}
  local whole = tune.run(s, cands, model(cands, truth_grid, 3, whole_log))
  for _, stop_at in ipairs({ 1, 37, 200, #whole_log - 5 }) do
    -- the journal: trials by stage/index/name, as the run directory keeps them
    local journal, count, inner = {}, 0, model(cands, truth_grid, 3)
    local function journaled(stage, index, order, cap)
      local fresh = inner(stage, index, order, cap) -- the model draws per block, as a machine would run it
      local out = {}
      for _, name in ipairs(order) do
        local key = stage .. "/" .. index .. "/" .. name
        if not journal[key] then
          count = count + 1
          if count > stop_at then error("killed", 0) end
          journal[key] = fresh[name]
        end
        out[name] = journal[key]
      end
      return out
    end
    T.ok(not pcall(tune.run, s, cands, journaled), "interrupted after " .. stop_at)
    local ran, again = 0, model(cands, truth_grid, 3)
    local r = tune.run(s, cands, function(stage, index, order, cap)
      local fresh = again(stage, index, order, cap)
      local out = {}
      for _, name in ipairs(order) do
        local key = stage .. "/" .. index .. "/" .. name
        if not journal[key] then
          journal[key] = fresh[name]
          ran = ran + 1
        end
        out[name] = journal[key]
      end
      return out
    end)
    T.eq(ran, #whole_log - stop_at) -- no trial of the journal run again
    T.eq(r.winner.name, whole.winner.name)
    T.eq(r.ledger.spent.runs, whole.ledger.spent.runs)
    T.eq(r.ledger.stages[1].blocks, whole.ledger.stages[1].blocks)
    T.eq(#r.race:eliminated(), #whole.race:eliminated())
  end
end)

-- tune.run over the noise model (seed 5, 15 blocks at most) with mutate(stage, index, results)
-- changing what each block returns.
local function run_mutated(mutate)
  local s = settings({ max_blocks = 15 })
  local cands = tune.candidates(s)
  local inner = model(cands, truth_grid, 5)
  return tune.run(s, cands, function(stage, index, order, cap)
    local out = inner(stage, index, order, cap)
    mutate(stage, index, out)
    return out
  end)
end

T.case("failed trials: a candidate whose trial fails leaves the race with its reason; a failing default stops the finalists", function()
  local r = run_mutated(function(_, index, out)
    if out["a=4,b=6"] and index == 2 then out["a=4,b=6"] = { failed = "exit 3" } end
  end)
  local line
  for _, l in ipairs(r.ledger.candidates) do
    if l.name == "a=4,b=6" then line = l end
  end
  T.eq({ line.status, line.why, line.block }, { "failed", "exit 3", 2 })
  local r2 = run_mutated(function(stage, _, out)
    if stage == "finalists" then out["a=1,b=1"] = { failed = "signal 9" } end
  end)
  T.eq(r2.winner.name, "a=1,b=1")
  T.match(r2.ledger.stages[2].stopped, "the default failed: signal 9")
end)

T.case("a default whose trial fails in screening ends the comparison; every candidate failing is said", function()
  local r = run_mutated(function(_, index, out)
    if index == 3 and out["a=1,b=1"] then out["a=1,b=1"] = { failed = "exit 1" } end
  end)
  T.eq(r.default_failed, "exit 1")
  T.eq(r.ledger.stages[1].stopped, "the default failed: exit 1")
  T.eq({ r.ledger.stages[2].runs, r.ledger.stages[3].runs }, { 0, 0 })
  T.eq(r.winner.name, "a=1,b=1")
  local all = run_mutated(function(_, _, out)
    for name in pairs(out) do out[name] = { failed = "exit 2" } end
  end)
  T.eq(all.ledger.stages[1].stopped, "the default failed: exit 2")
  local gone = 0
  for _, l in ipairs(all.ledger.candidates) do gone = gone + (l.status == "failed" and 1 or 0) end
  T.eq(gone, 24)
end)

T.case("signed_rank: too few differences for the level give no interval, not a narrower one", function()
  local r = wb.stats.signed_rank({ -0.1, -0.2, -0.3, -0.4, -0.5 }, { level = 0.95 })
  T.eq({ r.lower, r.upper }, { nil, nil }) -- 2 P(W+ = 0) = 1/16 > 0.05
  T.near(r.p_less, 1 / 32, 1e-12)
  local six = wb.stats.signed_rank({ -0.1, -0.2, -0.3, -0.4, -0.5, -0.6 }, { level = 0.95 })
  T.near(six.upper, -0.1, 1e-12) -- 2/64 <= 0.05: the widest interval, (min, max) of the Walsh averages
  T.near(six.lower, -0.6, 1e-12)
end)

T.case("settings and plan: bad keys are exit 2 naming the key; a budget the race cannot work in is over budget", function()
  local function err(extra)
    local ok, e = pcall(settings, extra)
    T.ok(not ok, "refused")
    return tostring(type(e) == "table" and e.message or e)
  end
  T.match(err({ alpha = 1.5 }), "tune.alpha must be in")
  T.match(err({ cap = 1.01 }), "tune.cap")
  local function plan_err(extra)
    local st = settings(extra)
    local ok, e = pcall(tune.plan, st, tune.candidates(st))
    T.ok(not ok, "refused")
    return tostring(type(e) == "table" and (e.msg or e.message) or e)
  end
  T.match(plan_err({ headline_trials = 5 }), "tune.headline_trials 5 cannot confirm a winner at alpha 0.05: at least 6")
  T.match(plan_err({ finalist_rounds = 5 }), "tune.finalist_rounds 5 cannot show one of 3 finalists faster at alpha 0.05: at least 6")
  local dup = settings({ axes = { a = { 1, 1, 2 }, b = { 1 } }, default = { a = 1, b = 1 } })
  local okd, ed = pcall(tune.candidates, dup)
  T.ok(not okd)
  T.match(tostring(type(ed) == "table" and (ed.msg or ed.message) or ed), "two candidates are both a=1,b=1")
  local clash = settings({ axes = { a = { "x y", "x_y" } }, default = { a = "x y" } })
  local okc, ec = pcall(tune.candidates, clash)
  T.ok(not okc)
  T.match(tostring(type(ec) == "table" and (ec.msg or ec.message) or ec), "would share their files")
  T.eq(tune.override_line(clash, { axes = { a = "x y" } }), "'a=x y'") -- one shell word
  -- the template fills in the axes; a template over another campaign's axes (a profile's, after
  -- tune.axes was replaced on the command line) gives axis=value, not its placeholders
  local templ = settings({ axes = { level = { 0, 6 } }, default = { level = 6 } })
  templ.override = "xz.level={level} xz.threads=1"
  T.eq(tune.override_line(templ, { axes = { level = 0 } }), "xz.level=0 xz.threads=1")
  templ.override = "workload.chunk_size={chunk_size} workload.level={level}"
  T.eq(tune.override_line(templ, { axes = { level = 0 } }), "level=0")
  local ok, e = pcall(function() return tune.candidates(settings({ default = { a = 9, b = 1 } })) end)
  T.ok(not ok)
  T.match(tostring(type(e) == "table" and e.message or e), "tune.default.a: 9 is not one of tune.axes.a")
  local s = settings({ budget_runs = 100 })
  local p = tune.plan(s, tune.candidates(s))
  T.match(p.over or "", "> tune.budget_runs 100")
  local k = tune.blocks_to_eliminate(24, 0.05)
  T.ok(k >= 5 and k <= 15, "24 candidates at alpha 0.05: the first elimination after " .. k .. " blocks")
  s = settings({ budget_runs = 600 })
  p = tune.plan(s, tune.candidates(s))
  T.eq(p.over, nil)
  T.eq(p.runs, 600)
  local sampled = tune.candidates(settings({ sample = 6 }))
  T.eq(#sampled, 6)
  local has_default = false
  for _, cd in ipairs(sampled) do has_default = has_default or cd.default == true end
  T.ok(has_default, "a sample keeps the default")
  T.eq(tune.override_line(s, sampled[1]), "a=1 b=1")
end)


T.case("Slurm's time limits as minutes (a stage's --time capped at the partition's MaxTime)", function()
  local minutes_of = require("wb.slurm").minutes
  T.eq(minutes_of("2-00:00:00"), 2880)
  T.eq(minutes_of("1-12"), 36 * 60)
  T.eq(minutes_of("1-12:30"), 36 * 60 + 30)
  T.eq(minutes_of("1:30:00"), 90)
  T.eq(minutes_of("45:30"), 46)
  T.eq(minutes_of("30"), 30)
  T.eq(minutes_of("infinite"), nil)
  T.eq(minutes_of("UNLIMITED"), nil)
  T.eq(minutes_of(""), nil)
end)

T.case("a trial counts its wall time net of its wait for a CPU, when its record has that evidence", function()
  -- 20 ms slept, 30 ms of it waiting for a CPU at the start and after the sleep, 2 ms of wb's reap
  local rec = { wall_time_seconds = 0.052, wall_own_seconds = 0.050, runq_seconds = 0.030, user_seconds = 0.0008,
    sys_seconds = 0.0002, runq_scope = "tree" }
  T.near(tune.trial_seconds(rec), 0.020, 1e-9)
  -- no evidence (a record of a wb that did not keep it, or null from JSON): the wall time
  T.eq(tune.trial_seconds({ wall_time_seconds = 0.052 }), 0.052)
  T.eq(tune.trial_seconds({ wall_time_seconds = 0.052, runq_seconds = wb.null }), 0.052)
  -- without the kernel's own wall: wb's wall less the wait
  T.near(tune.trial_seconds({ wall_time_seconds = 0.052, runq_seconds = 0.030 }), 0.022, 1e-9)
end)
