-- Comparison semantics shared by campaigns (previous-run baseline) and `wb compare`.
--
-- Metrics are classed by name: counts (rows, counts: any change is flagged), time (seconds, wall,
-- user, sys, ...: a change is a regression or an improvement only beyond the threshold, default
-- 2%, and, when both sides carry samples, only when statistically significant), rates
-- (throughput, mb_s, ops_per_s, qps, ...: the same, but higher is better), memory (rss, bytes: beyond
-- the threshold), and other numbers (reported, never a verdict).
local M = {}

M.DEFAULT_THRESHOLD = 0.02
M.ALPHA = 0.05

-- kind = verdict.classify(metric_name) : "count" | "rate" | "time" | "memory" | "other"
function M.classify(name)
  local n = name:lower()
  if n:find("row_count") or n:find("rows$") or n:find("_count$") or n:find("^count") or
      n:find("file_count") then
    return "count"
  end
  if n:find("throughput") or n:find("bandwidth") or n:find("per_s") or n:find("_ps$") or
      n:find("[kmgt]i?b_s$") or n:find("speed") or n:find("[iqr]ps$") then
    return "rate"
  end
  if n:find("rss") or n:find("bytes") or n:find("memory") or n:find("_kb$") or n:find("_mb$") then
    return "memory"
  end
  if n:find("second") or n:find("_s$") or n:find("_ms$") or n:find("_ns$") or n:find("time") or
      n:find("wall") or n:find("^user") or n:find("^sys") or n:find("latency") or
      n:find("duration") or n:find("mean") or n:find("median") then
    return "time"
  end
  return "other"
end

local function significance(base_samples, new_samples, opts)
  if type(base_samples) ~= "table" or type(new_samples) ~= "table" or #base_samples < 3 or
      #new_samples < 3 then
    return nil
  end
  local stats = require "wb.stats"
  local mw = stats.mann_whitney(base_samples, new_samples)
  local lo, hi = stats.bootstrap_ci(base_samples, new_samples,
    { stat = "ratio_" .. (opts.stat or "mean"), level = 0.95, resamples = opts.resamples or 2000, seed = opts.seed or 1 })
  return { p = mw.p, ci_lo = lo, ci_hi = hi }
end

-- row = verdict.compare(metric, base, new [, {threshold, base_samples, new_samples, kind, stat}])
-- (stat: "mean" (default) or "median", the statistic whose ratio the samples' interval is for)
-- row: {metric, kind, base, new, delta, ratio, p, ci_lo, ci_hi, verdict, note, significant}
-- (significant = false when the change is beyond the threshold but not statistically significant)
-- verdict: "regression" | "improvement" | "unchanged" | "changed" | "inconclusive"
function M.compare(metric, base, new, opts)
  opts = opts or {}
  local threshold = opts.threshold or M.DEFAULT_THRESHOLD
  local kind = opts.kind or M.classify(metric)
  local row = { metric = metric, kind = kind, base = base, new = new }
  if type(base) ~= "number" or type(new) ~= "number" then
    row.verdict, row.note = "inconclusive", "missing on one side"
    return row
  end
  row.delta = new - base
  row.ratio = base ~= 0 and new / base or nil
  if kind == "count" then
    row.verdict = new == base and "unchanged" or "regression"
    if new ~= base then row.note = "exact metric changed" end
    return row
  end
  if kind == "other" then
    row.verdict = new == base and "unchanged" or "changed"
    return row
  end
  if not row.ratio then
    row.verdict = new == base and "unchanged" or "inconclusive"
    return row
  end
  local sig = significance(opts.base_samples, opts.new_samples, opts)
  if sig then row.p, row.ci_lo, row.ci_hi = sig.p, sig.ci_lo, sig.ci_hi end
  local up, down = row.ratio >= 1 + threshold, row.ratio <= 1 - threshold
  local worse, better = up, down
  if kind == "rate" then worse, better = down, up end
  if not worse and not better then
    row.verdict = "unchanged"
  elseif sig and not (sig.p < M.ALPHA and (sig.ci_lo > 1 or sig.ci_hi < 1)) then
    row.verdict, row.note = "unchanged", "beyond threshold but not significant"
    row.significant = false
  else
    row.verdict = worse and "regression" or "improvement"
  end
  return row
end

-- s = verdict.describe(row) : "1.23× slower", "2.00× faster", "+5 rows", "unchanged"
function M.describe(row)
  if row.verdict == "inconclusive" and not row.ratio then return "inconclusive" end
  if row.kind == "count" then
    if row.delta == 0 then return "unchanged" end
    return string.format("%+g", row.delta)
  end
  if not row.ratio then return row.verdict end
  if row.ratio == 0 then return "→ 0" end
  if row.kind == "time" then
    if row.ratio >= 1 then return string.format("%.2f× slower", row.ratio) end
    return string.format("%.2f× faster", 1 / row.ratio)
  end
  if row.kind == "memory" then
    if row.ratio >= 1 then return string.format("%.2f× larger", row.ratio) end
    return string.format("%.2f× smaller", 1 / row.ratio)
  end
  if row.kind == "rate" then
    if row.ratio >= 1 then return string.format("%.2f× higher", row.ratio) end
    return string.format("%.2f× lower", 1 / row.ratio)
  end
  return string.format("%.3g×", row.ratio)
end

return M
