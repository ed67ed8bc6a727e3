-- The tuning campaign engine (recipes/tune.lua is its policy; keys: docs/tune.md): candidates
-- from a profile's axes, then three stages under one budget of runs and seconds:
--   screening  the race of wb.tune_race: blocks of one trial of every surviving candidate, in a
--              seeded random order, trials stopped at cap x the leader's median time;
--   finalists  the best K survivors and the default, `finalist_rounds` interleaved rounds, each
--              finalist's paired log ratios to the default tested (Wilcoxon signed-rank, one
--              sided) with Holm's correction at alpha;
--   headline   the winner and the default again, `headline_trials` new interleaved rounds: the
--              ratio reported with its interval comes from trials that chose nothing (no
--              winner's curse).
-- The engine is a pure function of the trials' results: it asks run_block(stage, index, order,
-- cap) for each block or round in turn, and the same results give the same campaign, so a
-- resumed campaign whose finished trials come from its journal continues exactly where it
-- stopped. Tests replace run_block by a noise model.
--
--   local s = tune.settings(cfg)           -- bad input: exit 2
--   local cands = tune.candidates(s)       -- {name, params, default = bool}
--   local p = tune.plan(s, cands)          -- planned runs per stage, the least screening can do
--   local result = tune.run(s, cands, run_block)
local stats = require "wb.stats"
local tune_race = require "wb.tune_race"
local errors = require "wb.errors"
local util = require "wb.util"

local M = {}

M.DEFAULTS = { alpha = 0.05, delta = 0.02, cap = 1.5, finalists = 3, finalist_rounds = 10, headline_trials = 10,
  max_blocks = 40, seed = 1 }

-- The override types of the keys the engine reads (wb.recipe's `types`).
M.TYPES = {
  ["tune.command"] = "list", ["tune.axes"] = "mapping", ["tune.default"] = "mapping|null",
  ["tune.values"] = "mapping", ["tune.params"] = "mapping", ["tune.env"] = "mapping",
  ["tune.timeout"] = "number>0|null", ["tune.alpha"] = "number>0", ["tune.delta"] = "number>=0",
  ["tune.cap"] = "number>0", ["tune.budget_runs"] = "integer>=1|null", ["tune.budget_seconds"] = "number>0|null",
  ["tune.finalists"] = "integer>=1", ["tune.finalist_rounds"] = "integer>=5",
  ["tune.headline_trials"] = "integer>=5", ["tune.max_blocks"] = "integer>=1", ["tune.sample"] = "integer>=2|null",
  ["tune.seed"] = "integer", ["tune.override"] = "string|null", ["tune.stage_time"] = "integer>=1|string|null",
  ["tool.allow_over_budget"] = "boolean",
}

-- cfg = tune.config_defaults() : the keys every tune profile has (wb.recipe's `defaults`), so that
-- a profile gives only its command and axes and every key can be overridden
function M.config_defaults()
  local null = require("wb.core").null
  local t = {}
  for k, v in pairs(M.DEFAULTS) do t[k] = v end
  for _, k in ipairs({ "default", "timeout", "budget_runs", "budget_seconds", "sample", "override", "stage_time" }) do
    t[k] = null
  end
  t.values, t.params, t.env = {}, {}, {}
  return { tune = t, tool = { allow_over_budget = false } }
end

local function bad(msg) errors.raise(2, msg, 0) end
local opt = util.opt

-- ---- a seeded generator -----------------------------------------------------------------------

-- rand = tune.rng(seed, stage, index) : a generator of numbers in [0, 1) that depends only on its
-- three integers (splitmix64): the order of block `index` of `stage` is the same on every resume
function M.rng(seed, stage, index)
  local x = seed * -7046029254386353131 + stage * -4658895280553007687 + index * -7723592293110705685
  return function()
    x = x + -7046029254386353131
    local z = x
    z = (z ~ (z >> 30)) * -4658895280553007687
    z = (z ~ (z >> 27)) * -7723592293110705685
    z = z ~ (z >> 31)
    return (z >> 11) * 2.0 ^ -53
  end
end

local shuffled = tune_race.shuffled

-- ---- settings and candidates ------------------------------------------------------------------

-- s = tune.settings(cfg) : the profile's tune block checked (exit 2 naming the key), with defaults
function M.settings(cfg)
  local t = cfg.tune
  if type(t) ~= "table" then bad("tune: the profile has no tune block") end
  local s = {}
  for k, v in pairs(M.DEFAULTS) do s[k] = opt(t[k]) == nil and v or t[k] end
  s.command, s.axes, s.default = opt(t.command), opt(t.axes), opt(t.default)
  s.values, s.params, s.env = opt(t.values) or {}, opt(t.params) or {}, opt(t.env) or {}
  s.timeout, s.budget_runs, s.budget_seconds = opt(t.timeout), opt(t.budget_runs), opt(t.budget_seconds)
  s.sample, s.override, s.stage_time = opt(t.sample), opt(t.override), opt(t.stage_time)
  if type(s.command) ~= "table" or #s.command == 0 then bad("tune.command must be a non-empty list") end
  if type(s.axes) ~= "table" or s.axes[1] ~= nil or next(s.axes) == nil then
    bad("tune.axes must be a mapping of axis name to its values")
  end
  for name, values in pairs(s.axes) do
    if type(values) ~= "table" or #values == 0 then bad("tune.axes." .. name .. " must be a non-empty list") end
  end
  if not (s.alpha > 0 and s.alpha < 1) then bad("tune.alpha must be in (0, 1), not " .. tostring(s.alpha)) end
  if not (s.cap > 1 + s.delta) then bad(string.format("tune.cap (%g) must be above 1 + tune.delta (%g)", s.cap, 1 + s.delta)) end
  for _, k in ipairs({ "finalists", "finalist_rounds", "headline_trials", "max_blocks", "seed" }) do
    if math.type(s[k]) ~= "integer" then bad("tune." .. k .. " must be an integer, not " .. tostring(s[k])) end
  end
  local tool = type(cfg.tool) == "table" and cfg.tool or {}
  s.allow_over_budget = opt(tool.allow_over_budget) == true
  return s
end

local function axis_names(axes) return require("wb.override").keys(axes) end

local function same_value(a, b) return a == b or tostring(a) == tostring(b) end

-- cands = tune.candidates(s) : {name, params (the axes' values, then per-value and fixed
-- parameters), axes (the axes' values alone), default = true for one} in grid order, or a
-- seeded sample of tune.sample of them (the default always in); exit 2 when tune.default names
-- a value not on its axis
function M.candidates(s)
  local sweep = require "wb.sweep"
  local names = axis_names(s.axes)
  local default = {}
  for _, axis in ipairs(names) do
    local v = s.default and s.default[axis]
    if s.default and v == nil then bad("tune.default: no value for axis '" .. axis .. "'") end
    default[axis] = v == nil and s.axes[axis][1] or nil
    for _, x in ipairs(v ~= nil and s.axes[axis] or {}) do
      if same_value(x, v) then
        default[axis] = x -- the axis's own value (1 for "1")
        break
      end
    end
    if default[axis] == nil then
      bad(string.format("tune.default.%s: %s is not one of tune.axes.%s", axis, tostring(v), axis))
    end
  end
  for k in pairs(s.default or {}) do
    if s.axes[k] == nil then bad("tune.default." .. k .. ": not an axis") end
  end
  local out = {}
  for _, sc in ipairs(sweep.expand(s.axes)) do
    local params, axes, is_default = {}, {}, true
    for k, v in pairs(s.params) do params[k] = v end
    for _, axis in ipairs(names) do
      local v = sc.params[axis]
      axes[axis] = v
      local map = s.values[axis]
      local mapped = type(map) == "table" and (map[v] or map[tostring(v)])
      if type(mapped) == "table" then
        for k, x in pairs(mapped) do params[k] = x end
      end
      is_default = is_default and v == default[axis]
    end
    for k, v in pairs(axes) do params[k] = v end
    out[#out + 1] = { name = sc.name, params = params, axes = axes, default = is_default or nil }
  end
  if s.sample and s.sample < #out then
    local picked, rest = {}, {}
    for _, cd in ipairs(out) do
      if cd.default then picked[1] = cd else rest[#rest + 1] = cd end
    end
    for _, cd in ipairs(shuffled(rest, M.rng(s.seed, 0, 0))) do
      if #picked >= s.sample then break end
      picked[#picked + 1] = cd
    end
    local order = {}
    for i, cd in ipairs(out) do order[cd] = i end
    table.sort(picked, function(a, b) return order[a] < order[b] end)
    out = picked
  end
  if #out < 2 then bad("tune.axes: at least two candidates are needed, got " .. #out) end
  local names, files = {}, {}
  for _, cd in ipairs(out) do
    if names[cd.name] then bad("tune.axes: two candidates are both " .. cd.name .. " (a value twice on an axis?)") end
    local file = util.safe_name(cd.name)
    if files[file] then
      bad(string.format("tune.axes: candidates %s and %s would share their files (%s): change one value", files[file],
        cd.name, file))
    end
    names[cd.name], files[file] = true, cd.name
  end
  return out
end

-- ---- the plan --------------------------------------------------------------------------------

-- n = tune.blocks_to_eliminate(k, alpha) : the fewest blocks after which the race can eliminate
-- one of k candidates (every block won by the same one: the capital of its bet at its fastest)
function M.blocks_to_eliminate(k, alpha)
  local ones, need = {}, (k - 1) / alpha
  for n = 1, 10000 do
    ones[n] = 1
    if stats.eprocess(ones, 0.5) >= need then return n end
  end
  return math.huge
end

-- p = tune.plan(s, cands) : {stages = {{stage, runs (the most it will run), least (screening: the
-- runs before the race can eliminate anything), note}}, runs (their sum), over (why the plan is
-- over budget, or nil), too_few_blocks (that part of it tune.budget_runs cannot show)}
function M.plan(s, cands)
  local k = #cands
  local final_n = math.min(s.finalists, k - 1) + 1
  -- the smallest p of n rounds is 2^-n: Holm's first step needs alpha / m, the headline's
  -- interval (two-sided at 1 - alpha) alpha / 2
  local need_f, need_h = math.ceil(math.log((final_n - 1) / s.alpha, 2) - 1e-9), math.ceil(math.log(2 / s.alpha, 2) - 1e-9)
  if s.finalist_rounds < need_f then
    bad(string.format("tune.finalist_rounds %d cannot show one of %d finalists faster at alpha %g: at least %d "
      .. "(2^-n <= alpha / finalists)", s.finalist_rounds, final_n - 1, s.alpha, need_f))
  end
  if s.headline_trials < need_h then
    bad(string.format("tune.headline_trials %d cannot confirm a winner at alpha %g: at least %d (2^-n <= alpha / 2)",
      s.headline_trials, s.alpha, need_h))
  end
  local finals = final_n * s.finalist_rounds
  local headline = 2 * s.headline_trials
  local first = M.blocks_to_eliminate(k, s.alpha)
  local least = k * math.min(first, s.max_blocks)
  local most = k * s.max_blocks
  local screening = s.budget_runs and math.max(least, math.min(most, s.budget_runs - finals - headline)) or most
  local p = { stages = {
    { stage = "screening", runs = screening, least = least, note = string.format(
      "%d candidates in blocks (at most %d); no elimination is possible before block %d at alpha %g",
      k, s.max_blocks, first, s.alpha) },
    { stage = "finalists", runs = finals, note = string.format("%d finalists and the default, %d interleaved rounds",
      final_n - 1, s.finalist_rounds) },
    { stage = "headline", runs = headline, note = string.format("the winner and the default, %d new rounds",
      s.headline_trials) },
  } }
  p.runs = screening + finals + headline
  if first > s.max_blocks then
    p.too_few_blocks = string.format("tune.max_blocks %d is below the %d blocks the race needs to eliminate one of %d candidates",
      s.max_blocks, first, k)
    p.over = p.too_few_blocks
  elseif s.budget_runs and p.runs > s.budget_runs then
    p.over = string.format("%d runs (%d screening, the least that can eliminate a candidate, %d finalists, %d headline) "
      .. "> tune.budget_runs %d", p.runs, screening, finals, headline, s.budget_runs)
  end
  return p
end

-- ---- the stages ------------------------------------------------------------------------------

-- The ledger of one stage, filled as its blocks come back.
local function stage_ledger(name, planned)
  return { stage = name, planned_runs = planned, runs = 0, seconds = 0, blocks = 0 }
end

local function charge(ledger, total, results, order)
  for _, name in ipairs(order) do -- in the order run: the same sum on every resume
    local r = results[name]
    ledger.runs, total.runs = ledger.runs + 1, total.runs + 1
    local secs = r.seconds or 0
    ledger.seconds, total.seconds = ledger.seconds + secs, total.seconds + secs
  end
  ledger.blocks = ledger.blocks + 1
end

-- Checks what run_block gave for the names it was asked to run.
local function check_results(results, order, stage, index)
  if type(results) ~= "table" then error("wb.tune: run_block gave no results for " .. stage .. " " .. index, 0) end
  for _, name in ipairs(order) do
    local r = results[name]
    if type(r) ~= "table" or (r.failed == nil and not (type(r.seconds) == "number" and r.seconds > 0)) then
      error(string.format("wb.tune: run_block gave no result for %s in %s %d", name, stage, index), 0)
    end
  end
end

-- seconds a run of n more trials is expected to take: the mean trial so far
local function expected(total, n) return total.runs > 0 and total.seconds / total.runs * n or 0 end

local function screen(s, cands, run_block, plan, total)
  local names, by_name = {}, {}
  for i, cd in ipairs(cands) do names[i], by_name[cd.name] = cd.name, cd end
  local race = tune_race.new { candidates = names, alpha = s.alpha, delta = s.delta, cap = s.cap }
  local ledger = stage_ledger("screening", plan.stages[1].runs)
  local reserve = plan.stages[2].runs + plan.stages[3].runs
  local when = {} -- the seconds spent when each candidate left the race
  local stopped, default_failed
  for b = 1, s.max_blocks do
    local alive = race:alive()
    if #alive <= 1 then stopped = #alive == 1 and "one candidate left" or "no candidate left" break end
    if ledger.runs + #alive > ledger.planned_runs then stopped = "its share of tune.budget_runs spent" break end
    if s.budget_seconds and total.seconds + expected(total, #alive + reserve) > s.budget_seconds then
      stopped = "its share of tune.budget_seconds spent"
      break
    end
    local order = race:order(M.rng(s.seed, 1, b))
    local cap = race:cap_seconds()
    local results = run_block("screening", b, order, cap)
    check_results(results, order, "screening", b)
    charge(ledger, total, results, order)
    local block = {}
    for _, name in ipairs(order) do
      local r = results[name]
      if r.failed then
        race:drop(name, r.failed)
        when[name] = total.seconds
        if by_name[name].default then default_failed = r.failed end
      else
        block[name] = r.capped and { seconds = cap or r.seconds, capped = true } or r.seconds
      end
    end
    if default_failed then
      stopped = "the default failed: " .. default_failed
      break
    end
    if next(block) then
      local before = #race:eliminated()
      race:add(block)
      for i = before + 1, #race:eliminated() do when[race:eliminated()[i].name] = total.seconds end
    end
  end
  ledger.stopped = stopped or ("tune.max_blocks " .. s.max_blocks .. " reached")
  return race, ledger, when, default_failed
end

-- The candidates' standing after screening: the survivors by mean log time, best first.
local function ranked_survivors(race)
  local list = {}
  for _, name in ipairs(race:alive()) do
    local t = race.times[name]
    if #t > 0 then
      local m = 0
      for _, x in ipairs(t) do m = m + math.log(x) end
      list[#list + 1] = { name = name, mean_log = m / #t }
    end
  end
  table.sort(list, function(a, b) return a.mean_log < b.mean_log end)
  return list
end

-- Rounds of `names` (the default among them) in a seeded order per round; {name = {log ratios
-- to the default}}, the failed ({name = why}), the ledger.
local function paired_rounds(s, stage_no, stage, names, default, rounds, run_block, total, planned)
  local ledger = stage_ledger(stage, planned)
  local ratios, failed = {}, {}
  for _, name in ipairs(names) do
    if name ~= default then ratios[name] = {} end
  end
  for r = 1, rounds do
    local live = {}
    for _, name in ipairs(names) do
      if not failed[name] then live[#live + 1] = name end
    end
    if failed[default] or #live < 2 then break end
    local order = shuffled(live, M.rng(s.seed, stage_no, r))
    local results = run_block(stage, r, order, nil)
    check_results(results, order, stage, r)
    charge(ledger, total, results, order)
    if results[default].failed then
      failed[default] = results[default].failed
    else
      for _, name in ipairs(order) do
        local res = results[name]
        if name ~= default then
          if res.failed then failed[name] = res.failed
          else table.insert(ratios[name], math.log(res.seconds) - math.log(results[default].seconds)) end
        end
      end
    end
  end
  return ratios, failed, ledger
end

-- The one-sided signed-rank test of "faster than the default" of each finalist, with Holm's
-- step-down correction at alpha (rejected in order of p while p <= alpha / (m - i + 1)) and an
-- interval of the ratio at level 1 - alpha / m (Bonferroni, so the intervals hold together).
local function holm(ratios, failed, alpha)
  local rows, m = {}, 0
  for _ in pairs(ratios) do m = m + 1 end
  for name, ds in pairs(ratios) do
    if not failed[name] and #ds > 0 then
      local t = stats.signed_rank(ds, { level = 1 - alpha / m })
      rows[#rows + 1] = { name = name, n = #ds, p = t.p_less, ratio = math.exp(t.estimate),
        ratio_lower = t.lower and math.exp(t.lower), ratio_upper = t.upper and math.exp(t.upper) }
    end
  end
  table.sort(rows, function(a, b) return a.p < b.p or (a.p == b.p and a.name < b.name) end)
  local still
  still, m = true, #rows
  for i, row in ipairs(rows) do
    row.p_holm = math.min(1, row.p * (m - i + 1))
    if i > 1 then row.p_holm = math.max(row.p_holm, rows[i - 1].p_holm) end
    still = still and row.p <= alpha / (m - i + 1)
    row.faster = still
  end
  local gone = {}
  for name, why in pairs(failed) do gone[#gone + 1] = { name = name, failed = why, faster = false } end
  table.sort(gone, function(a, b) return a.name < b.name end)
  table.move(gone, 1, #gone, #rows + 1, rows)
  return rows
end

-- seconds = tune.trial_seconds(rec) : the time a trial's campaign record counts as: its wall time
-- net of its wait for a CPU where the record has that evidence (wb.interference.record_net), as
-- wb compare and wb gate judge wall times; else its wall time. Beside busy loops and other suites,
-- the waits of a 20 ms trial at its start and after its sleep sank a 0.63x best in a paired
-- headline (interval 0.64-1.20x) in a CI run: they are the machine's, not the candidate's.
function M.trial_seconds(rec) return require("wb.interference").record_net(rec) end

-- result = tune.run(s, cands, run_block) : the campaign. run_block(stage, index, order, cap)
-- runs the trials of one block or round (stage "screening", "finalists" or "headline"; order:
-- candidate names in the order to run them; cap: seconds after which a trial is stopped, or nil)
-- and returns {[name] = {seconds = s, capped = bool} | {failed = why}}.
-- result = {race, chosen (the finalists' choice: the default unless one was faster), winner (the
-- chosen one if the headline confirmed it faster, else the default), default, default_failed (why
-- a trial of the default failed: then nothing is compared with it), finalists = {rows},
-- headline = {n, ratio, ratio_lower, ratio_upper, level, p, confirmed, failed} | nil,
-- ledger = {budget, stages, spent, remaining, candidates}}
function M.run(s, cands, run_block)
  local plan = M.plan(s, cands)
  local default, by_name = nil, {}
  for _, cd in ipairs(cands) do
    by_name[cd.name] = cd
    if cd.default then default = cd end
  end
  local total = { runs = 0, seconds = 0 }
  local race, screening, when, default_failed = screen(s, cands, run_block, plan, total)

  local finalists = {}
  for _, row in ipairs(ranked_survivors(race)) do
    if row.name ~= default.name and #finalists < s.finalists then finalists[#finalists + 1] = row.name end
  end
  local rows, finals_ledger = {}, stage_ledger("finalists", plan.stages[2].runs)
  if default_failed then
    finals_ledger.stopped = "the default failed in screening: " .. default_failed
  elseif #finalists > 0 then
    local names = table.move(finalists, 1, #finalists, 1, {})
    names[#names + 1] = default.name
    local ratios, failed
    ratios, failed, finals_ledger = paired_rounds(s, 2, "finalists", names, default.name, s.finalist_rounds,
      run_block, total, plan.stages[2].runs)
    if failed[default.name] then
      default_failed = failed[default.name]
      finals_ledger.stopped = "the default failed: " .. default_failed
    else
      rows = holm(ratios, failed, s.alpha)
    end
  else
    finals_ledger.stopped = "no survivor besides the default"
  end
  local best
  for _, row in ipairs(rows) do
    if row.faster and (not best or row.ratio < best.ratio) then best = row end
  end
  local winner = best and by_name[best.name] or default -- the finalists' choice, until the headline

  local headline, head_ledger = nil, stage_ledger("headline", plan.stages[3].runs)
  if winner ~= default then
    local ratios, failed
    ratios, failed, head_ledger = paired_rounds(s, 3, "headline", { winner.name, default.name }, default.name,
      s.headline_trials, run_block, total, plan.stages[3].runs)
    local ds = ratios[winner.name]
    headline = { n = #ds, failed = failed[winner.name] or failed[default.name] }
    if #ds > 0 then
      local t = stats.signed_rank(ds, { level = 1 - s.alpha })
      headline.ratio, headline.p = math.exp(t.estimate), t.p_less
      headline.ratio_lower, headline.ratio_upper = t.lower and math.exp(t.lower), t.upper and math.exp(t.upper)
      headline.level = 1 - s.alpha
      headline.confirmed = headline.ratio_upper ~= nil and headline.ratio_upper < 1 and not headline.failed
    end
  else
    head_ledger.stopped = default_failed and "the default failed" or "no finalist was faster than the default"
  end
  local chosen = winner
  if headline and not headline.confirmed then winner = default end

  -- the candidates' lines of the ledger, in candidate order
  local gone = {}
  for _, e in ipairs(race:eliminated()) do gone[e.name] = e end
  local final_row = {}
  for _, row in ipairs(rows) do final_row[row.name] = row end
  local lines = {}
  for _, cd in ipairs(cands) do
    local e, line = gone[cd.name], { name = cd.name, axes = cd.axes, default = cd.default == true,
      trials = #race.times[cd.name] }
    if e then
      line.status = e.failed and "failed" or "eliminated"
      line.block, line.spent_seconds, line.why = e.block, when[cd.name], e.failed
      line.slower_than, line.ratio, line.ratio_lower, line.ratio_upper = e.slower_than, e.ratio, e.ratio_lower,
          e.ratio_upper
      line.slower_blocks, line.met_blocks, line.evalue = e.slower_blocks, e.met_blocks, e.evalue
    else
      line.status = "survived"
    end
    local fr = final_row[cd.name]
    if fr then
      line.status = fr.failed and "failed in the finalists" or "finalist"
      line.why = fr.failed or line.why
    end
    if cd == winner and winner ~= default then line.status = "winner"
    elseif cd == chosen and chosen ~= default then line.status = "finalists' choice, not confirmed by the headline" end
    lines[#lines + 1] = line
  end
  local stages = { screening, finals_ledger, head_ledger }
  local remaining = { runs = s.budget_runs and (s.budget_runs - total.runs) or nil,
    seconds = s.budget_seconds and (s.budget_seconds - total.seconds) or nil }
  return { race = race, plan = plan, winner = winner, chosen = chosen, default = default, finalists = rows,
    headline = headline, default_failed = default_failed,
    ledger = { budget = { runs = s.budget_runs, seconds = s.budget_seconds }, stages = stages, spent = total,
      remaining = remaining, candidates = lines } }
end

-- text = tune.override_line(s, cand) : the recommended configuration as overrides: tune.override
-- with the candidate's axis values filled in ("workload.chunk_size={chunk_size}"), else, or when
-- the template names a placeholder that is no axis of this campaign (a profile's template after
-- tune.axes was replaced), axis=value; values in override form, each word shell-quoted when it
-- needs it (a line to paste)
function M.override_line(s, cand)
  local override = require "wb.override"
  local words, fits = {}, s.override ~= nil
  for k in (s.override or ""):gmatch("{([%a_][%w_]*)}") do fits = fits and cand.axes[k] ~= nil end
  if fits then
    for word in s.override:gmatch("%S+") do
      words[#words + 1] = (word:gsub("{([%a_][%w_]*)}", function(k) return override.format(cand.axes[k]) end))
    end
  else
    for _, axis in ipairs(axis_names(s.axes)) do words[#words + 1] = axis .. "=" .. override.format(cand.axes[axis]) end
  end
  return util.shell_join(words)
end

return M
