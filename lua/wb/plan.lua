-- Plans and budgets: what a campaign will run, written before anything runs (plan.json, plan.md),
-- checked against the budget in the config's tool block.
--
-- plan = { sections = { { name = "timing", cases = { { name = "a", argv = {...} }, ... },
--                         subprocess_runs = N, profiler_runs = N [, note = "..."] }, ... }
--          [, budget = {max_subprocess_runs, max_major_profiler_runs, allow_over_budget, runs_key}]
--          [, over = "why it is over budget"] }
-- budget defaults to the config's tool block (plan.budget); runs_key names the key of the runs
-- budget (default tool.max_subprocess_runs); over adds to what plan.check_budget finds.
local json = require "wb.json"
local util = require "wb.util"
local errors = require "wb.errors"

local M = {}

-- totals = plan.totals(plan) : {subprocess_runs, profiler_runs, cases}
function M.totals(plan)
  local t = { subprocess_runs = 0, profiler_runs = 0, cases = 0 }
  for _, s in ipairs(plan.sections or {}) do
    t.subprocess_runs = t.subprocess_runs + (s.subprocess_runs or #(s.cases or {}))
    t.profiler_runs = t.profiler_runs + (s.profiler_runs or 0)
    t.cases = t.cases + #(s.cases or {})
  end
  return t
end

-- budget = plan.budget(cfg) : {max_subprocess_runs, max_major_profiler_runs, allow_over_budget}
-- from the config's tool block
function M.budget(cfg)
  local tool = type(cfg.tool) == "table" and cfg.tool or {}
  return {
    max_subprocess_runs = tool.max_subprocess_runs,
    max_major_profiler_runs = tool.max_major_profiler_runs,
    allow_over_budget = tool.allow_over_budget == true,
  }
end

function M.markdown(plan, totals, budget, over)
  local out = { "# Plan", "" }
  for _, s in ipairs(plan.sections or {}) do
    out[#out + 1] = string.format("## %s — %d cases, %d subprocess runs, %d profiler runs", s.name,
      #(s.cases or {}), s.subprocess_runs or #(s.cases or {}), s.profiler_runs or 0)
    out[#out + 1] = ""
    if s.note then
      out[#out + 1] = s.note
      out[#out + 1] = ""
    end
    if #(s.cases or {}) > 0 then
      out[#out + 1] = "| case | command |"
      out[#out + 1] = "| --- | --- |"
      for _, c in ipairs(s.cases) do
        local cmd = c.argv and util.shell_join(c.argv) or (c.command or "")
        out[#out + 1] = string.format("| %s | `%s` |", c.name, (cmd:gsub("|", "\\|")))
      end
      out[#out + 1] = ""
    end
  end
  out[#out + 1] = "## Budget"
  out[#out + 1] = ""
  out[#out + 1] = "| what | planned | budget |"
  out[#out + 1] = "| --- | --- | --- |"
  out[#out + 1] = string.format("| subprocess runs | %d | %s |", totals.subprocess_runs,
    tostring(budget.max_subprocess_runs or "none"))
  out[#out + 1] = string.format("| heavy-profiler runs | %d | %s |", totals.profiler_runs,
    tostring(budget.max_major_profiler_runs or "none"))
  out[#out + 1] = ""
  out[#out + 1] = over and ("**Over budget**: " .. over) or "Within budget."
  return table.concat(out, "\n") .. "\n"
end

-- over = plan.check_budget(totals, budget) : a sentence naming the counts, or nil
function M.check_budget(totals, budget)
  local parts = {}
  if budget.max_subprocess_runs and totals.subprocess_runs > budget.max_subprocess_runs then
    parts[#parts + 1] = string.format("%d subprocess runs > %s %d",
      totals.subprocess_runs, budget.runs_key or "max_subprocess_runs", budget.max_subprocess_runs)
  end
  if budget.max_major_profiler_runs and totals.profiler_runs > budget.max_major_profiler_runs then
    parts[#parts + 1] = string.format("%d heavy-profiler runs > max_major_profiler_runs %d",
      totals.profiler_runs, budget.max_major_profiler_runs)
  end
  return #parts > 0 and table.concat(parts, "; ") or nil
end

-- stop = plan.write(campaign, plan) : writes plan.json and plan.md into the run directory;
-- true on --dry-run (the campaign is finished as a dry run and `plan: DIR/plan.md` printed);
-- raises exit 1 when over budget unless tool.allow_over_budget=true.
function M.write(c, plan)
  local totals = M.totals(plan)
  local budget = plan.budget or M.budget(c.ctx.cfg)
  local over = M.check_budget(totals, budget)
  if plan.over then over = over and (plan.over .. "; " .. over) or plan.over end
  local doc = json.object()
  doc.schema_name = "wb.plan"
  doc.schema_version = 1
  doc.recipe = c.ctx.name
  local sections = json.array()
  for _, s in ipairs(plan.sections or {}) do
    local cases = json.array()
    for _, cs in ipairs(s.cases or {}) do
      cases[#cases + 1] = { name = cs.name, argv = cs.argv and json.array(util.deep_copy(cs.argv)) or nil,
        command = cs.argv and util.shell_join(cs.argv) or cs.command }
    end
    sections[#sections + 1] = { name = s.name, cases = cases, note = s.note,
      subprocess_runs = s.subprocess_runs or #(s.cases or {}), profiler_runs = s.profiler_runs or 0 }
  end
  doc.sections = sections
  doc.totals = totals
  doc.budget = { max_subprocess_runs = budget.max_subprocess_runs or json.null,
    max_major_profiler_runs = budget.max_major_profiler_runs or json.null,
    allow_over_budget = budget.allow_over_budget }
  doc.over_budget = over or json.null
  c:write_json("plan.json", doc)
  c:write("plan.md", M.markdown(plan, totals, budget, over))
  c:event("plan_written", { subprocess_runs = totals.subprocess_runs, profiler_runs = totals.profiler_runs })
  c.planned = true
  if c.ctx.opts.dry_run then
    io.write("plan: ", c.dir, "/plan.md", over and ("  (over budget: " .. over .. ")") or "", "\n")
    for _, r in ipairs(c.manifest.runs) do
      if r.status == "pending" then r.status = "dry_run" end
    end
    c:finish("complete")
    return true
  end
  if over and not budget.allow_over_budget then
    c:finish("failed")
    errors.raise(1, "over budget: " .. over .. " (set tool.allow_over_budget=true to run anyway)", 0)
  end
  return false
end

return M
