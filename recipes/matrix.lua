-- Benchmark matrix: runs from a profile's axes, each a subprocess; stages, rows, cache, comparison.
--
--   wb matrix [key=value ...] [--dry-run] [--confirm] [-o DIR] [--baseline PATH] [--resume DIR]
--   wb matrix --config-name matrix_plink2 ...        another saved profile (default matrix_chr22)
--
-- With confirm=true (--confirm) the runs behind a change against the previous run are re-run,
-- the previous side and this one alternating; a change the re-run does not bear out no longer
-- counts (one that could not be re-run still does: wb.matrix_confirm).
-- Each run is the profile's command template with the run's parameters filled in; the machine
-- profile's executor runs it (locally or as a Slurm array). After each run wb.matrix reads the
-- child's events.jsonl and profile_summary.json, counts output rows, files and bytes, and the
-- compile cache before and after. manifest.json (runs, comparisons with the previous compatible
-- run), report.md and report.html go into the run directory. Profile keys: docs/matrix.md.
-- What is yours to change here: the default profile, the report's columns, the exit policy.
local wb = require "wb"
local matrix = require "wb.matrix"
local page = require "wb.page"
local matrix_confirm = require "wb.matrix_confirm"

local opt = wb.util.opt
local TOP_STAGES = 3 -- stages named per run in the report

local function seconds(x) return type(x) == "number" and wb.util.format_seconds(x) or "–" end
local function count(x) return tostring(opt(x) or "–") end

-- The report: one row per run (trials folded into their run), then the comparison with the
-- previous compatible run.
local function report(m)
  local c, trials = m.c, m.s.trials
  local man = c.manifest
  local doc = page.document { title = "Benchmark matrix: " .. m.profile }
  doc:add(page.p(page.join { "Run directory ", page.code(c.dir), ", status ", page.strong(man.status),
    (man.dry_run and " (dry run)" or "") .. "." },
    c:previous_text()))
  local rows = { { "run", "status", trials > 1 and ("wall (median of " .. trials .. ")") or "wall", "rows", "files",
    "bytes", "cache", "cache files before → after", "top stages" } }
  for _, r in ipairs(man.runs) do
    if r.role ~= "trial" and r.role ~= "confirmation" then
      local moved = type(r.cache_before) == "table" and type(r.cache_after) == "table" and
          (r.cache_before.file_count .. " → " .. r.cache_after.file_count) or ""
      rows[#rows + 1] = { r.name .. (r.role == "warmup" and " (warm-up)" or ""), matrix.status_text(r, man.runs),
        seconds(r.wall_time_seconds), count(r.output_row_count), count(r.output_file_count),
        count(r.output_total_bytes), r.cache_state or "–", moved, matrix.top_stages(r.stage_seconds, TOP_STAGES) }
    end
  end
  doc:add(page.table(rows, { align = { "l", "l", "r", "r", "r", "r", "l", "l", "l" } }))
  -- on a cluster: where each trial ran and what ran beside it (lua/wb/executor.lua)
  local placed = { { "trial", "node", "wall", "ran at the same time as" } }
  for _, r in ipairs(man.runs) do
    if r.role == "trial" and opt(r.node) then
      placed[#placed + 1] = { r.name, tostring(r.node), seconds(r.wall_time_seconds),
        type(r.overlapped_with) == "table" and table.concat(r.overlapped_with, ", ") or "nothing" }
    end
  end
  if #placed > 1 then doc:add(page.section("Trials on the cluster", page.table(placed, { align = { "l", "l", "r", "l" } }))) end
  if c.overlap_warning then doc:add(page.p(page.join { page.strong("Warning:"), " ", c.overlap_warning })) end
  if #man.comparisons > 0 then
    local confirmed = type(man.comparison_summary) == "table" and man.comparison_summary.confirmed == true
    local cmp = { { "run", "metric", "previous", "current", "ratio", "verdict", "why", "interference",
      confirmed and "confirmed by an interleaved re-run" or nil } }
    for _, row in ipairs(man.comparisons) do
      local ratio = opt(row.ratio)
      local itf = opt(row.interference)
      cmp[#cmp + 1] = { row.run_name, row.metric, wb.report.number(row.previous_value),
        wb.report.number(row.current_value), ratio and string.format("%.3f", ratio) or "–",
        row.verdict == "regression" and page.strong("regression") or row.verdict, row.reason, itf and itf.text or "",
        confirmed and wb.confirm.text(row) or nil }
    end
    local env = m.c.previous_path and matrix_confirm.environment_text(wb.util.dirname(m.c.previous_path), m.c.dir)
    doc:add(page.section("Comparison with the previous run", {
      page.table(cmp, { align = { "l", "l", "r", "r", "r", "l", "l", "l", "l" } }), page.p(man.comparison_summary.text),
      env and page.p("The environment differs from the previous run's: " .. env .. ".") or nil }))
  end
  doc:write(c, "report", { md = true })
  return doc:md()
end

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  config = "matrix_chr22",
  executors = { "local", "slurm" }, -- the machine profile's executor runs the cases
  types = matrix.TYPES,
  run = function(ctx)
    local m = matrix.open(ctx) -- the profile checked, the campaign opened, the runs declared
    local dry = m:plan()
    m:run()
    if dry then
      report(m)
      return 0
    end
    local previous = m.c:compare_previous()
    if previous and ctx.cfg.confirm then matrix_confirm.run(m, previous) end -- before finish records it
    local result = m.c:finish()
    io.write(report(m), "\nreport: ", m.c.dir, "/report.md\n")
    if result.regressions > 0 then
      io.write(string.format("%d regression(s) against %s\n", result.regressions, m.c.manifest.previous_manifest_path))
    end
    if result.status ~= "complete" then return 1 end
    return (result.regressions > 0 and m.s.fail_on_regression) and 1 or 0
  end,
}
