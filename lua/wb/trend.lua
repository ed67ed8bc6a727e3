-- wb.trend: the trend dashboard of the results history (`wb trend`, docs/history.md).
--
-- Series come from the history index (wb.history): one metric of one record name of one recipe
-- on one machine class, its records in time order, consecutive records of one clean commit pooled
-- into one point. Each series' steps are found by wb.stats.steps and judged by the comparison
-- engine (wb.verdict.steps: net of the runs' wait for a CPU where the evidence is known); only the
-- steps it calls a regression or an improvement are shown. The page is one static HTML file: the
-- data as JSON (values quantized to 1/4000 of each series' range), drawn by lua/wb/trend.js on
-- canvases as they scroll into view.
local fs = require "wb.fs"
local json = require "wb.json"
local util = require "wb.util"
local verdict = require "wb.verdict"

local M = {}
M.QUANT = 4000

---- series ----------------------------------------------------------------------------------

local function sorted(xs)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  return s
end

local function median_of(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
end

-- lo, hi = trend.median_interval(xs) : a distribution-free interval of about 95% for the median
-- of xs (order statistics at n/2 ∓ 0.98√n, the normal approximation of the binomial), or nil for
-- fewer than 6 samples
function M.median_interval(xs)
  local n = #xs
  if n < 6 then return nil end
  local s = sorted(xs)
  local j = math.floor(n / 2 - 0.98 * math.sqrt(n))
  local k = math.ceil(n / 2 + 1 + 0.98 * math.sqrt(n))
  if j < 1 or k > n then return nil end
  return s[j], s[k]
end

-- points = trend.pool(history_points) : a series' records (wb.history index:series points, oldest
-- first) with consecutive records of the same clean commit pooled: {commit, samples, evidence,
-- records = {point, ...}, median, lo, hi}
function M.pool(hpoints)
  local out, last = {}, nil
  for _, p in ipairs(hpoints) do
    local samples = p.samples or { p.value }
    local clean = p.commit and p.dirty ~= 1
    if last and clean and last.commit == p.commit and last.clean then
      for _, x in ipairs(samples) do last.samples[#last.samples + 1] = x end
      last.records[#last.records + 1] = p
      last.evidences[#last.evidences + 1] = p.evidence or false
    else
      last = { commit = p.commit, clean = clean, samples = {}, records = { p }, evidences = { p.evidence or false } }
      for i, x in ipairs(samples) do last.samples[i] = x end
      out[#out + 1] = last
    end
  end
  for _, pt in ipairs(out) do
    local records = {}
    for i, ev in ipairs(pt.evidences) do records[i] = { evidence = ev or nil } end
    pt.evidence = verdict.segment_evidence(records, 1, #records, pt.samples)
    pt.evidences = nil
    pt.median = median_of(sorted(pt.samples))
    pt.lo, pt.hi = M.median_interval(pt.samples)
  end
  return out
end

-- The metrics that repeat another's samples (a wall mean, median, min and max of the same runs:
-- names that differ only in their statistic, with the same samples at every point) are one
-- series: the mean's, else the first; information-only statistics (min, max) are never a series
-- of their own.
local function distinct(list)
  local chosen, order = {}, {}
  for _, s in ipairs(list) do
    local stat = verdict.stat_of(s.metric)
    if not verdict.INFO_STATS[stat or ""] then
      local quantity = stat and s.metric:gsub("[%s_]*" .. stat .. "$", "") or s.metric
      local samples = {}
      for i, p in ipairs(s.points) do samples[i] = json.encode(p.samples or p.value) end
      local key = table.concat({ s.recipe or "", s.name, s.machine or "", quantity, table.concat(samples, "|") }, "\0")
      local other = chosen[key]
      if not other then
        chosen[key], order[#order + 1] = s, key
      elseif stat == "mean" and verdict.stat_of(other.metric) ~= "mean" then
        chosen[key] = s
      end
    end
  end
  local out = {}
  for i, key in ipairs(order) do out[i] = chosen[key] end
  return out
end

-- list = trend.series(index [, filter, opts]) : the dashboard's series from the history index
-- (filter as index:series'), each with its pooled points and its steps (wb.verdict.steps, opts
-- threshold, alpha, min_size, seed): {recipe, name, metric, machine, unit, points, steps, candidates}
-- where steps are the significant ones, each {index, commit, previous_commit, ratio, row, kind}
function M.series(index, filter, opts)
  opts = opts or {}
  local out = {}
  for _, s in ipairs(distinct(index:series(filter))) do
    s.points = M.pool(s.points)
    s.steps, s.candidates = {}, 0
    local kind = verdict.classify(s.metric)
    if (kind == "time" or kind == "memory" or kind == "rate") and #s.points >= 2 then
      local res, res_text, res_of = require("wb.compare").resolution(s.metric)
      for _, st in ipairs(verdict.steps(s.points, { metric = s.metric, kind = kind, stat = verdict.stat_of(s.metric),
          threshold = opts.threshold, alpha = opts.alpha, min_size = opts.min_size, seed = opts.seed or 1,
          resolution = res, resolution_text = res_text, resolution_of = res_of })) do
        s.candidates = s.candidates + 1
        if st.significant then
          st.commit, st.previous_commit = s.points[st.index].commit, s.points[st.index - 1].commit
          s.steps[#s.steps + 1] = st
        end
      end
    end
    out[#out + 1] = s
  end
  return out
end

---- the page --------------------------------------------------------------------------------

-- A path as a relative URL: each segment percent-encoded, "./" before one that does not start
-- with "..", so that no directory name is read as a scheme ("javascript:") or a fragment.
local function href(rel)
  local parts = {}
  for seg in rel:gmatch("[^/]+") do
    parts[#parts + 1] = seg == ".." and seg or seg:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end)
  end
  local out = table.concat(parts, "/")
  return out:sub(1, 2) == ".." and out or ("./" .. out)
end

local function relative(from_dir, path)
  local a, b = {}, {}
  for part in from_dir:gmatch("[^/]+") do a[#a + 1] = part end
  for part in path:gmatch("[^/]+") do b[#b + 1] = part end
  local i = 1
  while a[i] and b[i] and a[i] == b[i] do i = i + 1 end
  local rel = {}
  for _ = i, #a do rel[#rel + 1] = ".." end
  for j = i, #b do rel[#rel + 1] = b[j] end
  return #rel > 0 and table.concat(rel, "/") or "."
end

local function flame_of(profiles_json)
  local ok, list = pcall(json.decode, profiles_json or "[]")
  for _, p in ipairs(ok and type(list) == "table" and list or {}) do
    if p:match("%.svg$") and not p:match("diff") then return p end
  end
end

-- The page's data: commits and records by index, each series with its values quantized.
local function page_data(list, out_dir)
  local data = { commits = json.array(), records = json.array(), series = json.array() }
  local commit_at, record_at = {}, {}
  local function commit_index(c)
    if not c then return -1 end
    if not commit_at[c] then
      data.commits[#data.commits + 1] = c
      commit_at[c] = #data.commits - 1
    end
    return commit_at[c]
  end
  local function record_index(p)
    if not record_at[p.dir] then
      local flame = flame_of(p.profiles)
      data.records[#data.records + 1] = json.array({ href(relative(out_dir, p.dir)),
        p.report and href(relative(out_dir, p.dir .. "/" .. p.report)) or json.null,
        flame and href(relative(out_dir, p.dir .. "/" .. flame)) or json.null, p.created_at or json.null })
      record_at[p.dir] = #data.records - 1
    end
    return record_at[p.dir]
  end
  for _, s in ipairs(list) do
    local lo, hi = math.huge, -math.huge
    for _, pt in ipairs(s.points) do
      for _, x in ipairs(pt.samples) do lo, hi = math.min(lo, x), math.max(hi, x) end
    end
    local scale = hi > lo and (hi - lo) / M.QUANT or 1
    local function q(x) return x and math.floor((x - lo) / scale + 0.5) or -1 end
    local pts, samples = json.array(), json.array()
    for i, pt in ipairs(s.points) do
      pts[i] = json.array({ commit_index(pt.commit), record_index(pt.records[#pt.records]), q(pt.median), q(pt.lo), q(pt.hi),
        #pt.records })
      local qs = json.array()
      for j, x in ipairs(pt.samples) do qs[j] = q(x) end
      samples[i] = qs
    end
    local steps = json.array()
    for _, st in ipairs(s.steps) do
      local r = st.row
      steps[#steps + 1] = json.array({ st.index - 1, r.ratio or st.ratio, r.ci_lo or json.null, r.ci_hi or json.null,
        r.exact and "exact" or r.q or r.p or json.null, r.verdict })
    end
    data.series[#data.series + 1] = { r = s.recipe or "", n = s.name, m = s.metric, c = s.machine or "", u = s.unit or "",
      lo = lo, sc = scale, p = pts, s = samples, st = steps }
  end
  return data
end

local CSS = [[
.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin-top:16px}
.filters select,.filters input{font:inherit;font-size:14px;padding:3px 6px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:14px;margin-top:16px}
.card{background:#fff;border:1px solid var(--border);border-radius:8px;padding:10px 12px;position:relative}
.card h3{font-size:13px;margin:0;font-weight:600;overflow-wrap:anywhere}
.card .sub{color:var(--muted);font-size:12px}
.card canvas{width:100%;height:120px;display:block;margin-top:6px}
.card .steps{font-size:12px;margin-top:4px}
.card.hidden{display:none}
.tip{position:absolute;z-index:2;background:#fff;border:1px solid var(--border);border-radius:6px;padding:6px 8px;font-size:12px;box-shadow:0 2px 6px rgba(0,0,0,.12);white-space:nowrap}
]]

-- html = trend.html(list, {out_dir, title, roots, records}) : the dashboard page of trend.series'
-- list; links to each point's run directory, report and flame graph are relative to out_dir
function M.html(list, o)
  local page = require "wb.page"
  local data = page_data(list, o.out_dir)
  local nsteps, lines = 0, {}
  for _, s in ipairs(list) do
    for _, st in ipairs(s.steps) do
      nsteps = nsteps + 1
      lines[#lines + 1] = M.step_text(s, st)
    end
  end
  local body = {
    '<div class="filters"><label>recipe <select id="f-recipe"></select></label>',
    '<label>machine <select id="f-machine"></select></label><label>metric <select id="f-metric"></select></label>',
    '<label>name <input id="f-name" placeholder="contains"></label>',
    '<label><input type="checkbox" id="f-steps"> only series with steps</label>',
    '<span id="f-count" class="sub"></span></div>\n<div class="grid" id="grid"></div>\n',
    -- every <, > and & as a JSON escape: no name can end the element or open a comment in it
    '<script type="application/json" id="trend-data">',
    (json.encode(data):gsub("[<>&]", { ["<"] = "\\u003c", [">"] = "\\u003e", ["&"] = "\\u0026" })), "</script>\n",
    "<script>\n", require("wb.trend_js"), "</script>\n",
  }
  local steps_block = #lines > 0 and page.section("Steps", { page.list(lines) })
      or page.section("Steps", { "No step: every series' changes are within its noise, or too small to call." })
  local doc = page.document {
    title = o.title or "Trends",
    meta = { { string.format("%d series", #list), string.format("%d records", o.records or #data.records),
      string.format("%d step%s", nsteps, nsteps == 1 and "" or "s"), "from " .. table.concat(o.roots or {}, ", ") } },
    lead = "Each chart is one metric of one benchmark on one machine class over time: samples as dots, the median of "
      .. "each commit's runs as the line, its 95% interval as the band; a vertical line marks a step the comparison "
      .. "engine calls a regression or an improvement. Hover a point for its commit and its links.",
    blocks = { steps_block, page.raw(table.concat(body)) },
    css = CSS, generator = "wb " .. require("wb.core").version,
  }
  return page.html(doc)
end

-- "regression +15.2% in bench · ./app · wall mean (AMD EPYC, 2 CPUs) at 1a2b3c4d5e (from 9f8e7d6c5b;
-- 95% CI 1.12–1.18×, q = 0.001)"
function M.step_text(s, st)
  local r = st.row
  local ci = (r.ci_lo and r.ci_hi) and string.format("95%% CI %.3f–%.3f×, ", r.ci_lo, r.ci_hi) or ""
  return string.format("%s %+.1f%% in %s · %s · %s (%s) at %s (from %s; %s%s)", r.verdict,
    ((r.ratio or st.ratio) - 1) * 100, s.recipe or "?", s.name, s.metric, s.machine or "?",
    st.commit and st.commit:sub(1, 10) or "a record without a commit", st.previous_commit and st.previous_commit:sub(1, 10) or "?",
    ci, r.exact and "exact: no run-to-run variation" or string.format("p = %.2g", r.q or r.p or 0))
end

---- the command: wb trend --------------------------------------------------------------------

M.USAGE = [[usage: wb trend [-o DIR] [--root DIR]... [--db FILE] [--recipe R] [--name N] [--metric M]
                [--machine CLASS]
  updates the history index (wb history), then writes DIR/index.html (default ROOT/trend of the
  first root): one chart per series, the steps the comparison engine calls]]

-- status = trend.main(args) : `wb trend ...` (exit 0; 2 as `wb history`'s, or an output
-- directory that cannot be written)
function M.main(args)
  local history = require "wb.history"
  local o = history.parse_args(args, "trend")
  if o.help then
    io.write(M.USAGE, "\n")
    return 0
  end
  local index, sum = history.updated(o)
  local list = M.series(index, o.filter)
  local out = o.out or util.join(o.roots[1], "trend")
  local ok, err = fs.confine(out, true)
  if not ok then require("wb.errors").raise(2, "trend: " .. err, 0) end
  local abs = assert(fs.realpath(out))
  local path = util.join(out, "index.html")
  ok, err = fs.write(path, M.html(list, { out_dir = abs, roots = o.roots, records = sum.records }))
  index:close()
  if not ok then require("wb.errors").raise(2, "trend: " .. err, 0) end
  local nsteps = 0
  for _, s in ipairs(list) do
    for _, st in ipairs(s.steps) do
      nsteps = nsteps + 1
      io.write(M.step_text(s, st), "\n")
    end
  end
  io.write(string.format("trend: %d series from %d records, %d step%s: %s\n", #list, sum.records, nsteps,
    nsteps == 1 and "" or "s", path))
  return 0
end

return M
