-- Tuning campaign: which configuration of a program is fastest, with an error rate that holds
-- however often wb looks (wb.tune; keys and statistics: docs/tune.md).
--
--   wb tune [key=value ...] [--dry-run] [-o DIR] [--resume DIR]
--   wb tune --config-name tune_gwas tune.budget_runs=400 ...
--
-- Screening races the candidates of tune.axes in blocks, finalists compares the best few with
-- the default in interleaved rounds (Holm-corrected), the headline measures the winner against
-- the default on new trials. Every trial is a record of the run directory's manifest, journaled
-- as it ends: `--resume DIR` after a kill or a timeout continues the same campaign. DIR holds
-- summary.json (winner, default, headline, ledger), report.md and report.html. On a Slurm
-- machine profile (machine=slurm_cpu) each stage is one allocation of one node and each trial an
-- srun step in it, one at a time (docs/tune.md, "On Slurm").
-- Exit 0 with a verdict (candidates whose trials failed are listed in the report, not a failure),
-- 1 when a trial of the default failed, 2 on bad input.
-- What is yours to change here: the default profile, the report, the exit policy.
local wb = require "wb"
local tune = require "wb.tune"
local matrix = require "wb.matrix"
local page = require "wb.page"

local json, util, fs = wb.json, wb.util, wb.fs
local null = wb.null

local function seconds(x) return type(x) == "number" and util.format_seconds(x) or "–" end
local function ratio(x) return type(x) == "number" and string.format("%.3f", x) or "–" end
local function interval(lo, up) return (lo and up) and string.format("%.3f – %.3f", lo, up) or "–" end

-- The trial name of candidate `name` in a stage's block or round: "screening.007.chunk=256,threads=2".
local function trial_name(stage, index, name) return string.format("%s.%03d.%s", stage, index, name) end

-- A candidate's argv for one trial (its parameters, and {out}, {trial}, {name}, {run_dir}).
local function trial_case(s, cand, tname, root)
  local p = {}
  for k, v in pairs(cand.params) do p[k] = v end
  p.name, p.trial, p.run_dir = cand.name, tname, root
  p.out = root .. "/runs/" .. util.safe_name(tname)
  local env = {}
  for k, v in pairs(s.env) do env[k] = tostring(v):gsub("{([%a_][%w_]*)}", function(x) return tostring(p[x] or "") end) end
  return { name = tname, argv = matrix.argv(s.command, p), env = env, out = p.out }
end

-- What a finished trial's record says, as wb.tune reads it.
local function result_of(rec)
  if rec.status ~= "success" then
    local why = util.opt(rec.error) or (rec.signal and ("signal " .. tostring(rec.signal)))
        or (rec.timed_out and "timed out at tune.timeout") or ("exit " .. tostring(util.opt(rec.return_code)))
    return { failed = tostring(why) }
  end
  return { seconds = tune.trial_seconds(rec), capped = rec.capped == true }
end

-- run_block for wb.tune: each trial a campaign record, run unless the resumed directory has it;
-- run_trial(r, case, limit, stage) runs one where the machine profile says and fills r.
local function block_runner(c, s, cands, root, run_trial)
  local by = {}
  for _, cd in ipairs(cands) do by[cd.name] = cd end
  return function(stage, index, order, cap)
    local names = {}
    for i, name in ipairs(order) do names[i] = trial_name(stage, index, name) end
    c:declare(names)
    local out = {}
    for i, name in ipairs(order) do
      local cs = trial_case(s, by[name], names[i], root)
      local limit = cap and (s.timeout and math.min(cap, s.timeout) or cap) or s.timeout
      local rec = c:run(cs.name, function(r)
        r.role, r.stage, r.index, r.candidate = "trial", stage, index, name
        r.cap_seconds = cap or null
        wb.check(fs.mkdir_p(cs.out))
        local res = run_trial(r, cs, limit, stage)
        if res and res.timed_out and cap and limit == cap then
          r.capped, r.status, r.error = true, "running", nil -- stopped at the cap: counts as the cap
          return true
        end
        return res ~= nil and res.ok
      end)
      out[name] = result_of(rec)
      if out[name].capped then out[name].seconds = cap or rec.cap_seconds end
    end
    return out
  end
end

-- A trial on this machine.
local function local_trial(c)
  return function(_, cs, limit) return c:spawn(cs.name, { argv = cs.argv, env = cs.env, timeout = limit }) end
end


-- A trial as an srun step of its stage's allocation (wb.tune_slurm).
local function slurm_trial(alloc)
  return function(r, cs, limit, stage)
    local res = alloc:trial(stage, cs, limit)
    for _, k in ipairs(require("wb.executor").RESULT_FIELDS) do -- what a Slurm case's record takes
      if res[k] ~= nil then r[k] = res[k] end
    end
    r.node, r.job_id = res.node, res.job_id
    return res
  end
end

-- A stage's --time and whether wb derived it: tune.stage_time as given, else the minutes the
-- budget or the trials' timeouts allow it plus ten (wb.tune_slurm caps them at the partition's
-- MaxTime); nil (the partition's default) when nothing bounds it.
local function stage_minutes(s, p)
  local planned = {}
  for _, st in ipairs(p.stages) do planned[st.stage] = st.runs end
  return function(stage)
    if s.stage_time then return s.stage_time, false end
    local secs = s.timeout and planned[stage] and planned[stage] * s.timeout
    if s.budget_seconds and (not secs or s.budget_seconds < secs) then secs = s.budget_seconds end
    return secs and math.ceil(secs / 60) + 10 or nil, true
  end
end

-- The campaign's identity: its candidates' commands and the settings the engine reads. A resumed
-- campaign must have the same, or the journal's trials belong to another campaign.
local function identity(s, cands)
  local doc = json.object()
  local list = json.array()
  for _, cd in ipairs(cands) do
    list[#list + 1] = { name = cd.name, default = cd.default == true,
      argv = json.array(trial_case(s, cd, "{trial}", "{run_dir}").argv) }
  end
  doc.candidates = list
  for _, k in ipairs({ "alpha", "delta", "cap", "seed", "max_blocks", "finalists", "finalist_rounds", "headline_trials",
    "budget_runs", "budget_seconds", "timeout" }) do
    doc[k] = s[k] == nil and null or s[k]
  end
  return doc
end

-- tune.json's text for this campaign; on --resume DIR, exit 2 (before DIR is touched) when DIR's
-- differs: the journal's trials would belong to another campaign.
local function check_identity(ctx, s, cands)
  local now = json.encode(identity(s, cands)) .. "\n"
  local was = ctx.opts.resume and fs.read(ctx.opts.resume:gsub("/+$", "") .. "/tune.json")
  if was and was ~= now then
    wb.usage("--resume: the campaign's candidates or settings changed since it started (a profile edited?); "
      .. ctx.opts.resume .. "/tune.json holds what it ran with", 0)
  end
  return now
end

-- ---- the history's records ----------------------------------------------------------------------

-- The per-trial evidence a record's wall samples carry (wb.interference.from_samples reads them).
local EVIDENCE = { "runq_seconds", "user_seconds", "sys_seconds", "wall_own_seconds", "others_cpu" }

-- The samples of candidate name's successful, uncapped trials in a stage (every block or round
-- the journal holds): {wall_seconds = {...}, runq_seconds = {...}, ...}, an evidence list only
-- where every trial has it.
local function stage_samples(c, stage, name, rounds)
  local out, scope = { wall_seconds = {} }, nil
  local lists = {}
  for _, k in ipairs(EVIDENCE) do lists[k] = {} end
  for i = 1, rounds do
    local rec = c:find(trial_name(stage, i, name))
    if rec and rec.status == "success" and not rec.capped and type(rec.wall_time_seconds) == "number" then
      out.wall_seconds[#out.wall_seconds + 1] = rec.wall_time_seconds
      for _, k in ipairs(EVIDENCE) do
        if lists[k] and type(rec[k]) == "number" then lists[k][#lists[k] + 1] = rec[k] else lists[k] = nil end
      end
      scope = scope or util.opt(rec.runq_scope)
    end
  end
  for k, xs in pairs(lists) do out[k] = xs end
  out.runq_scope = out.runq_seconds and scope or nil
  return out
end

-- Records of the campaign that form series across campaigns (wb history, wb trend, wb gate): the
-- recommended configuration and the default, each named by its candidate, with the wall seconds
-- of their newest fair trials: the headline's new trials when it ran, else the finalists' rounds,
-- else screening (role "tuned": a later campaign's record of the same configuration is the next
-- point of its series).
local function history_records(c, s, res)
  local roles = { [res.winner.name] = "recommended", [res.default.name] = "default" }
  if res.winner == res.default then roles[res.default.name] = "recommended and default" end
  for _, name in ipairs(util.sorted_keys(roles)) do
    local samples, stage
    for _, st in ipairs({ { "headline", s.headline_trials }, { "finalists", s.finalist_rounds },
        { "screening", s.max_blocks } }) do
      samples, stage = stage_samples(c, st[1], name, st[2]), st[1]
      if #samples.wall_seconds >= 2 then break end
    end
    if #samples.wall_seconds >= 1 then
      local rec = c:record(name)
      rec.role, rec.tune_role, rec.status, rec.stage = "tuned", roles[name], "success", stage
      rec.metrics = { wall_mean_seconds = wb.stats.mean(samples.wall_seconds) }
      rec.samples = samples
    end
  end
  c:save()
end

-- ---- summary.json and the report ---------------------------------------------------------------

local function axes_object(s, cand)
  local o = json.object()
  for _, axis in ipairs(wb.override.keys(s.axes)) do o[axis] = cand.axes[axis] end
  return o
end

-- stage -> {jobs, nodes, node}: the job ids of its Slurm allocations (wb.tune_slurm) in the
-- order they ran, the node of each (null for one that never started), the last node
local function allocations(c)
  local out = {}
  local list = c.manifest.tune_allocations
  for _, a in ipairs(type(list) == "table" and list or {}) do
    local o = out[a.stage] or { jobs = json.array(), nodes = json.array() }
    out[a.stage] = o
    o.jobs[#o.jobs + 1] = a.job_id
    o.nodes[#o.jobs] = type(a.node) == "string" and a.node ~= "" and a.node or null
    o.node = type(a.node) == "string" and a.node ~= "" and a.node or o.node
  end
  return out
end

local function summary(c, s, res, pre)
  local allocs = allocations(c)
  local doc = json.object()
  doc.schema_name, doc.schema_version = "wb.tune", 1
  doc.winner = axes_object(s, res.winner)
  doc.winner_name = res.winner.name
  doc.default = axes_object(s, res.default)
  doc.finalists_choice = axes_object(s, res.chosen)
  doc.recommended_overrides = tune.override_line(s, res.winner)
  local h = res.headline
  local head = json.object()
  if h then
    head.candidate = res.chosen.name
    head.ratio, head.ratio_lower, head.ratio_upper = h.ratio or null, h.ratio_lower or null, h.ratio_upper or null
    head.level, head.n, head.p = h.level or null, h.n, h.p or null
    head.confirmed = h.confirmed == true
    head.failed = h.failed or null
  end
  head.node = allocs.headline and allocs.headline.node or type(pre) == "table" and pre.host or null
  head.commit = type(pre) == "table" and type(pre.git) == "table" and pre.git.commit or null
  doc.headline = h and head or null
  local finals = json.array()
  for _, row in ipairs(res.finalists) do
    finals[#finals + 1] = { candidate = row.name, n = row.n or null, ratio = row.ratio or null,
      ratio_lower = row.ratio_lower or null, ratio_upper = row.ratio_upper or null, p = row.p or null,
      p_holm = row.p_holm or null, faster = row.faster == true, failed = row.failed or null }
  end
  doc.finalists = finals
  local L = res.ledger
  local stages = json.array()
  for _, st in ipairs(L.stages) do
    stages[#stages + 1] = { stage = st.stage, planned_runs = st.planned_runs, runs = st.runs, seconds = st.seconds,
      blocks = st.blocks, stopped = st.stopped or null, slurm_jobs = allocs[st.stage] and allocs[st.stage].jobs or nil,
      nodes = allocs[st.stage] and allocs[st.stage].nodes or nil }
  end
  local cands = json.array()
  for _, l in ipairs(L.candidates) do
    cands[#cands + 1] = { name = l.name, axes = axes_object(s, { axes = l.axes }), default = l.default,
      status = l.status, trials = l.trials, block = l.block or null, spent_seconds = l.spent_seconds or null,
      why = l.why or null, slower_than = l.slower_than or null, ratio = l.ratio or null,
      ratio_lower = l.ratio_lower or null, ratio_upper = l.ratio_upper or null,
      slower_blocks = l.slower_blocks or null, met_blocks = l.met_blocks or null, evalue = l.evalue or null }
  end
  doc.ledger = { budget = { runs = L.budget.runs or null, seconds = L.budget.seconds or null }, stages = stages,
    spent = { runs = L.spent.runs, seconds = L.spent.seconds },
    remaining = { runs = L.remaining.runs or null, seconds = L.remaining.seconds or null }, candidates = cands }
  doc.settings = { alpha = s.alpha, delta = s.delta, cap = s.cap, finalists = s.finalists,
    finalist_rounds = s.finalist_rounds, headline_trials = s.headline_trials, max_blocks = s.max_blocks, seed = s.seed }
  c:write_json("summary.json", doc)
  return doc
end

-- The race as a table: a row per candidate, its time in each block (capped marked, its
-- elimination where it happened), and a chart of the survivors block by block.
local function race_section(c, res)
  local race, blocks = res.race, res.ledger.stages[1].blocks
  local gone = {}
  for _, e in ipairs(race:eliminated()) do gone[e.name] = e end
  local head = { "candidate" }
  for b = 1, blocks do head[#head + 1] = tostring(b) end
  local rows, alive_after = { head }, {}
  for b = 1, blocks do alive_after[b] = #race.names end
  for _, name in ipairs(race.names) do
    local row, t, e = { name }, race.times[name], gone[name]
    for b = 1, blocks do
      local rec = c:find(trial_name("screening", b, name))
      local cell = t[b] and string.format("%.3g", t[b]) or ""
      if t[b] and rec and rec.capped then cell = cell .. "⌃" end
      if e and e.block == b then cell = cell .. (e.failed and " ✗" or " ✕") end
      row[#row + 1] = cell
      if e and b >= e.block then alive_after[b] = alive_after[b] - 1 end
    end
    rows[#rows + 1] = row
  end
  local points = {}
  for b = 1, blocks do points[b] = { x = b, y = alive_after[b] } end
  local chart = #points > 1 and wb.svg.line_chart { series = { { label = "surviving candidates", points = points } },
    x_label = "block", y_label = "candidates", title = "Survivors by block",
    y_format = function(v) return string.format("%d", v) end }
  local align = { "l" }
  for b = 1, blocks do align[b + 1] = "r" end
  return page.section("Screening race", {
    page.p("Trial seconds per block (⌃ stopped at the cap, ✕ eliminated after that block, ✗ its trial failed)."),
    page.table(rows, { align = align }), chart and page.figure(chart, "Surviving candidates after each block") or nil })
end

local function report(c, s, res, doc)
  local d = page.document { title = "Tuning campaign" }
  local L = res.ledger
  local h = res.headline
  local verdict
  if res.default_failed then
    verdict = string.format("A trial of the default %s failed (%s): nothing can be compared with it.", res.default.name,
      res.default_failed)
  elseif #res.race:alive() == 0 and #res.finalists == 0 then
    verdict = "Every candidate failed: see the candidates' reasons."
  elseif res.winner ~= res.default then
    verdict = string.format("%s is faster than the default %s: %s × its time (%g%% interval %s) on %d new paired rounds.",
      res.winner.name, res.default.name, ratio(h.ratio), 100 * h.level, interval(h.ratio_lower, h.ratio_upper), h.n)
  elseif h then
    verdict = string.format("The finalists chose %s, but its headline did not confirm it (%s × the default's time, "
      .. "interval %s): keep the default %s.", res.chosen.name, ratio(h.ratio), interval(h.ratio_lower, h.ratio_upper),
      res.default.name)
  else
    verdict = "No finalist was faster than the default " .. res.default.name .. ": keep it."
  end
  d:add(page.p(page.join { "Run directory ", page.code(c.dir), ". ", verdict }))
  d:add(page.p(page.join { "Recommended: ", page.code(doc.recommended_overrides) }))
  local ledger = { { "stage", "planned runs", "runs", "seconds", "blocks/rounds", "stopped because" } }
  local on_slurm = c.manifest.tune_allocations ~= nil
  if on_slurm then ledger[1][7] = "Slurm job (node)" end
  for i, st in ipairs(L.stages) do
    ledger[#ledger + 1] = { st.stage, tostring(st.planned_runs), tostring(st.runs), seconds(st.seconds),
      tostring(st.blocks), st.stopped or "" }
    local jobs, nodes = doc.ledger.stages[i].slurm_jobs, doc.ledger.stages[i].nodes
    if on_slurm then
      local cells = {}
      for k, id in ipairs(jobs or {}) do cells[k] = string.format("%d (%s)", id, tostring(util.opt(nodes[k]) or "–")) end
      ledger[#ledger][7] = table.concat(cells, ", ")
    end
  end
  ledger[#ledger + 1] = { "total", tostring(L.budget.runs or "no budget"), tostring(L.spent.runs),
    seconds(L.spent.seconds), "", L.remaining.runs and (L.remaining.runs .. " runs left" ..
      (L.remaining.seconds and (", " .. seconds(L.remaining.seconds) .. " left") or "")) or "", on_slurm and "" or nil }
  d:add(page.section("Budget ledger", page.table(ledger, { align = { "l", "r", "r", "r", "r", "l", "l" } })))
  if h then
    d:add(page.section("Headline", page.table({ { "candidate", "ratio to the default", "interval", "rounds", "p", "node",
      "commit" }, { res.chosen.name, ratio(h.ratio), interval(h.ratio_lower, h.ratio_upper), tostring(h.n),
      h.p and string.format("%.3g", h.p) or "–", tostring(util.opt(doc.headline.node) or "–"),
      tostring(util.opt(doc.headline.commit) or "–"):sub(1, 12) } })))
  end
  if #res.finalists > 0 then
    local rows = { { "finalist", "ratio to the default", "interval (simultaneous)", "rounds", "p", "p (Holm)", "faster" } }
    for _, row in ipairs(res.finalists) do
      rows[#rows + 1] = { row.name, ratio(row.ratio), interval(row.ratio_lower, row.ratio_upper), tostring(row.n or "–"),
        row.p and string.format("%.3g", row.p) or "–", row.p_holm and string.format("%.3g", row.p_holm) or "–",
        row.failed and ("failed: " .. row.failed) or (row.faster and "yes" or "no") }
    end
    d:add(page.section("Finalists against the default", page.table(rows)))
  end
  local out = { { "candidate", "status", "trials", "left after block", "seconds spent then", "why" } }
  for _, l in ipairs(L.candidates) do
    local why = l.why or (l.slower_than and string.format("slower than %s by more than %g%% in %d of %d blocks "
      .. "(mean ratio %s, e-value %.0f)", l.slower_than, 100 * s.delta, l.slower_blocks, l.met_blocks, ratio(l.ratio),
      l.evalue)) or ""
    out[#out + 1] = { l.name .. (l.default and " (default)" or ""), l.status, tostring(l.trials),
      l.block and tostring(l.block) or "", l.spent_seconds and seconds(l.spent_seconds) or "", why }
  end
  d:add(page.section("Candidates", page.table(out, { align = { "l", "l", "r", "r", "r", "l" } })))
  d:add(race_section(c, res))
  d:write(c, "report", { md = true })
  return verdict
end

return wb.recipe {
  plans = true,
  config = "tune_gwas",
  executors = { "local", "slurm" }, -- on Slurm each stage is one allocation (wb.tune_slurm)
  types = tune.TYPES,
  defaults = tune.config_defaults(),
  description = "Tuning campaign: screening race, finalists, headline trials (docs/tune.md)",
  run = function(ctx)
    local s = tune.settings(ctx.cfg)
    local cands = tune.candidates(s)
    for _, cd in ipairs(cands) do trial_case(s, cd, "check", "/run-directory") end -- template mistakes: exit 2 now
    local p = tune.plan(s, cands)
    local machine = ctx.cfg.machine
    local on_slurm = type(machine) == "table" and machine.executor == "slurm"
    local t = s.stage_time
    if on_slurm and type(t) == "string" and not (require("wb.slurm").minutes(t) or t == "UNLIMITED" or t == "INFINITE") then
      wb.usage("tune.stage_time must be minutes or Slurm's [D-]HH:MM:SS, got '" .. t .. "'", 0)
    end
    local ident = check_identity(ctx, s, cands)
    local c = wb.campaign.open(ctx, {})
    if not fs.exists(c.dir .. "/tune.json") then c:write("tune.json", ident) end
    local root = wb.check(fs.realpath(c.dir))
    local first = {}
    for i, cd in ipairs(cands) do first[i] = trial_case(s, cd, trial_name("screening", 1, cd.name), root) end
    local minutes = stage_minutes(s, p)
    local sections = {}
    for i, st in ipairs(p.stages) do
      local where = on_slurm and string.format("; one Slurm allocation (one node, --time %s), a step per trial",
        tostring(minutes(st.stage) or "the partition's default")) or ""
      sections[i] = { name = st.stage, cases = i == 1 and first or {}, subprocess_runs = st.runs,
        note = st.note .. (st.least and string.format(" (at least %d runs)", st.least) or "") .. where }
    end
    if c:plan { sections = sections, over = p.too_few_blocks,
          budget = { max_subprocess_runs = s.budget_runs, allow_over_budget = s.allow_over_budget,
            runs_key = "tune.budget_runs" } } then
      return 0
    end
    local res
    if on_slurm then
      local alloc <close> = require("wb.tune_slurm").open(c, machine, minutes)
      res = tune.run(s, cands, block_runner(c, s, cands, root, slurm_trial(alloc)))
    else
      res = tune.run(s, cands, block_runner(c, s, cands, root, local_trial(c)))
    end
    if not res.default_failed then history_records(c, s, res) end
    local doc = summary(c, s, res, json.read(c.dir .. "/preflight.json"))
    local verdict = report(c, s, res, doc)
    -- a candidate whose trial failed is an answer (it cannot be used); a default that failed is not
    local done = c:finish(res.default_failed and "failed" or "complete")
    io.write(verdict, "\nrecommended: ", doc.recommended_overrides, "\nreport: ", c.dir, "/report.md\n")
    return done.status == "complete" and 0 or 1
  end,
}
