-- wb.gate: the regression gate over the results history (`wb gate`, recipes/gate.lua,
-- docs/history.md): detect, confirm, alert.
--
-- Detect: for every series (wb.trend.series) whose newest point holds the head record, the head's
-- samples against the samples of the series' current level (the points since its last step,
-- before the head), judged by the comparison engine (wb.verdict: net of the runs' wait for a CPU
-- where the evidence is known), all series together (Benjamini–Hochberg); and the head against
-- the references, ReFrame-style (value, lower, upper, unit per machine class, recipe, name and
-- metric). Confirm: a detected regression is confirmed by the two commits built and run again
-- interleaved (wb.regress.confirm_commits) before it counts; where that cannot be done, the alert
-- says "unconfirmed" and why. The fate of every alert is kept in the gate's run directory
-- (gate.json), where `wb history alerts` finds it.
local json = require "wb.json"
local util = require "wb.util"
local verdict = require "wb.verdict"

local M = {}
M.SCHEMA_NAME, M.SCHEMA_VERSION = "wb.gate", 1

-- The samples of a wb.bench summary command that a bench record's metric is made of.
M.BENCH_SAMPLES = { ["wall mean"] = "wall", ["user mean"] = "user", ["sys mean"] = "sys", ["maxrss_kb mean"] = "maxrss_kb",
  ["alloc_bytes mean"] = "alloc_bytes" }

local mean = require("wb.stats").mean

-- rec = gate.head(index, filter [, dir]) : the head record: the newest complete record with
-- metrics of the filter's recipe and machine class (a gate's own records have none), or the
-- record of dir
function M.head(index, filter, dir)
  if dir then
    local rows = index.db:query("SELECT * FROM records WHERE dir = ?", dir)
    return rows and rows[1]
  end
  local cond, vals = { "status = 'complete'", "EXISTS (SELECT 1 FROM metrics m WHERE m.record_id = r.id)" }, {}
  if filter.recipe then cond[#cond + 1], vals[#vals + 1] = "recipe = ?", filter.recipe end
  if filter.machine then cond[#cond + 1], vals[#vals + 1] = "machine_class = ?", filter.machine end
  if filter.roots and #filter.roots > 0 then -- an index shared by several roots: the given ones
    cond[#cond + 1] = "root IN (" .. string.rep("?", #filter.roots, ",") .. ")"
    for _, r in ipairs(filter.roots) do vals[#vals + 1] = r end
  end
  local rows = index.db:query("SELECT * FROM records r WHERE " .. table.concat(cond, " AND ")
    .. " ORDER BY epoch DESC, mtime DESC, dir DESC LIMIT 1", table.unpack(vals))
  return rows and rows[1]
end

-- The samples of the points i..j of series s, pooled.
local function samples_of(s, i, j) return verdict.segment_samples(s.points, i, j) end

-- The samples of the points i..j of series s, pooled, net of the runs' wait for a CPU where the
-- metric is a time and every point carries that evidence: the level the code ran at.
local function net_samples_of(s, i, j)
  if verdict.classify(s.metric) ~= "time" then return samples_of(s, i, j) end
  return (verdict.segment_net(s.points, i, j))
end

-- The comparison engine's row (not yet judged) for the level of points b1..b2 of series s against
-- the level of points n1..n2: its metric's kind and resolution, net of the runs' wait for a CPU
-- (time) where the evidence is known; of their means, or of opts.stat "median".
local function levels_row(s, b1, b2, n1, n2, opts)
  local base, new = samples_of(s, b1, b2), samples_of(s, n1, n2)
  local kind = verdict.classify(s.metric)
  local time = kind == "time"
  local res, res_text, res_of = require("wb.compare").resolution(s.metric)
  local stat = opts.stat or "mean"
  local function central(xs) return stat == "median" and require("wb.stats").median(xs) or mean(xs) end
  return verdict.compare(s.metric, central(base), central(new), { kind = kind, stat = stat,
    threshold = opts.threshold, alpha = opts.alpha, seed = opts.seed, base_samples = base, new_samples = new,
    resolution = res, resolution_text = res_text, resolution_of = res_of,
    base_evidence = time and verdict.segment_evidence(s.points, b1, b2, base) or nil,
    new_evidence = time and verdict.segment_evidence(s.points, n1, n2, new) or nil })
end

local function holds(pt, dir)
  for _, r in ipairs(pt.records) do
    if r.dir == dir then return true end
  end
  return false
end

-- rows = gate.detect(list, head, opts) : a row per series of trend.series' list whose newest
-- point holds the head record: {series, baseline = {first, last, commit}, row (the verdict row),
-- alert (true for a regression, or a change the load may have made or hidden)}; the rows judged
-- together. opts: threshold, alpha, seed.
function M.detect(list, head, opts)
  opts = opts or {}
  local out, rows = {}, {}
  for _, s in ipairs(list) do
    local n = #s.points
    if n >= 1 and holds(s.points[n], head.dir) then
      local first = 1
      for _, st in ipairs(s.steps) do
        if st.index < n then first = st.index end
      end
      local item = { series = s, head = s.points[n] }
      if n >= 2 then
        local last = s.points[n - 1].records
        item.baseline = { first = first, last = n - 1, commit = s.points[n - 1].commit,
          dirty = last[#last].dirty == 1 }
        item.row = levels_row(s, first, n - 1, n, n, opts)
        rows[#rows + 1] = item.row
      end
      out[#out + 1] = item
    end
  end
  verdict.judge(rows, { threshold = opts.threshold, alpha = opts.alpha })
  for _, item in ipairs(out) do
    local r = item.row
    local v = r and r.verdict
    -- a change the load may have made or hidden, in the worse direction (a rate: lower)
    local worse = r and r.ratio and (r.kind == "rate" and r.ratio < 1 or r.kind ~= "rate" and r.ratio > 1)
    item.alert = v == "regression" or (worse and (v == "confounded" or v == "interference")) or false
    item.row_alert = item.alert
  end
  return out
end

-- An alert's series in list (trend.series of its recipe, name, metric and machine), the index of
-- the point holding its head record, and the first point of the level the gate judged it against
-- (the alert's baseline_first_commit; else after the last step before the head).
local function alert_point(list, a)
  for _, s in ipairs(list) do
    if s.name == a.name and s.metric == a.metric and (s.machine or "") == (a.machine or "") then
      for h, pt in ipairs(s.points) do
        if holds(pt, a.head_dir) then
          local first = 1
          for _, st in ipairs(s.steps) do
            if st.index < h then first = st.index end
          end
          for i = h - 1, 1, -1 do
            if s.points[i].commit ~= nil and s.points[i].commit == a.baseline_first_commit then
              first = i
              break
            end
          end
          return s, h, first
        end
      end
    end
  end
end

M.SETTLE_SCAN = 30

local function is_text(v) return type(v) == "string" end

-- gate.settle(index, alerts [, opts]) : the later fate of every confirmed alert: "fixed" when a
-- later level of its series (from one of the SETTLE_SCAN points after the head, or from a later
-- step, to the newest point) has come back at least half of the way to the level the gate judged
-- the head against and is judged by the comparison engine an improvement on the regressed level
-- (the head to that point), both of the medians, net of the runs' wait for a CPU where known (a
-- busier hour while the fix was measured is not its code): one later night's outliers do not
-- hide a fix ("no regression against the level before" at the 2% threshold missed one:
-- campaigns on different nights differ by a few percent). An unconfirmed alert may have been
-- noise, and a noise spike is always "fixed" by the next commit: it keeps its fate. a.gate_fate
-- keeps the gate's own fate, a.fixed_commit and a.fixed_ratio (later level / level before) the fix.
-- Alerts whose fields are not text are left as they are. opts: threshold, alpha, roots.
function M.settle(index, alerts, opts)
  opts = opts or {}
  local cache = {}
  local median = require("wb.stats").median
  for _, a in ipairs(alerts) do
    if type(a) == "table" and a.fate == "confirmed" and is_text(a.head_dir) and is_text(a.name) and is_text(a.metric)
        and (a.recipe == nil or is_text(a.recipe)) and (a.machine == nil or is_text(a.machine)) then
      local key = table.concat({ tostring(a.recipe), a.name, a.metric, tostring(a.machine) }, "\0")
      cache[key] = cache[key] or require("wb.trend").series(index, { recipe = a.recipe, name = a.name,
        metric = a.metric, machine = a.machine, roots = opts.roots }, opts)
      local s, h, first = alert_point(cache[key], a)
      local n = s and #s.points or 0
      if s and h < n and h > first then
        -- where the later level may start: each of the next SETTLE_SCAN points, then each later step
        local starts = {}
        for j = h + 1, math.min(n, h + M.SETTLE_SCAN) do starts[#starts + 1] = j end
        for _, st in ipairs(s.steps) do
          if st.index > h + M.SETTLE_SCAN then starts[#starts + 1] = st.index end
        end
        local function median_of(i, j) -- nil for points without samples
          local xs = net_samples_of(s, i, j)
          return #xs > 0 and median(xs) or nil
        end
        local before = median_of(first, h - 1)
        local sign = verdict.classify(s.metric) == "rate" and -1 or 1 -- the worse way
        for _, j in ipairs(before and starts or {}) do
          local regressed, later = median_of(h, j - 1), median_of(j, n)
          local rise = regressed and sign * (regressed - before) or 0
          local left = later and sign * (later - before) or math.huge
          if rise > 0 and left <= rise / 2 then -- the medians first; the engine's test only then
            local better = levels_row(s, h, j - 1, j, n, { threshold = opts.threshold, alpha = opts.alpha, seed = 1,
              stat = "median" })
            verdict.judge({ better }, opts)
            if better.verdict == "improvement" then
              a.gate_fate, a.fate = a.fate, "fixed"
              a.fixed_commit, a.fixed_ratio = s.points[j].commit, before ~= 0 and later / before or nil
              break
            end
          end
        end
      end
    end
  end
  return alerts
end

-- refs = gate.read_references(path) : the references file (YAML): machine class or "*" ->
-- recipe -> record name -> metric -> [value, lower, upper, unit] (lower and upper are fractions
-- of value, as ReFrame's: [0.05, -0.1, 0.1, s] allows 0.045..0.055 s); raises (exit 2) naming the
-- entry that is not of that shape
function M.read_references(path)
  local doc, err = require("wb.yaml").load_file(path)
  if doc == nil then require("wb.errors").raise(2, "gate: references: " .. tostring(err), 0) end
  local function bad(where, why) require("wb.errors").raise(2, "gate: " .. path .. ": " .. where .. ": " .. why, 0) end
  if type(doc) ~= "table" then bad("the document", "not a mapping of machine classes") end
  for class, recipes in pairs(doc) do
    if type(recipes) ~= "table" then bad(class, "not a mapping of recipes") end
    for recipe, names in pairs(recipes) do
      if type(names) ~= "table" then bad(class .. "." .. recipe, "not a mapping of record names") end
      for name, metrics in pairs(names) do
        if type(metrics) ~= "table" then bad(class .. "." .. recipe .. "." .. name, "not a mapping of metrics") end
        for metric, ref in pairs(metrics) do
          local where = table.concat({ class, recipe, name, metric }, ".")
          if type(ref) ~= "table" or type(ref[1]) ~= "number" or type(ref[2]) ~= "number" or type(ref[3]) ~= "number" then
            bad(where, "expected [value, lower, upper, unit], lower and upper fractions of value")
          end
          if ref[2] > 0 or ref[3] < 0 then bad(where, "lower must be <= 0 and upper >= 0 (fractions of value)") end
        end
      end
    end
  end
  return doc
end

-- The reference of a series, or nil: its machine class's entry, else "*"'s.
function M.reference_of(refs, s)
  for _, class in ipairs({ s.machine or "", "*" }) do
    local r = refs[class] and refs[class][s.recipe or ""] and refs[class][s.recipe or ""][s.name]
    if r and r[s.metric] then return r[s.metric] end
  end
end

-- A reference's unit -> its factor to the unit a series is measured in (s, KiB), or nil.
local TO_SERIES = { s = { s = 1, ms = 1e-3, us = 1e-6, ["µs"] = 1e-6, ns = 1e-9 },
  KiB = { KiB = 1, B = 1 / 1024, MiB = 1024, GiB = 1024 * 1024 },
  B = { B = 1, KiB = 1024, MiB = 1024 ^ 2, GiB = 1024 ^ 3 } }

-- Each detected item gets item.reference {value, lower, upper, unit, head, exceeded, bound} when
-- refs name its series; an exceeded upper bound (worse: for a rate, the lower) is an alert of
-- its own. A reference in a unit that cannot be converted to the series' raises (exit 2).
function M.check_references(items, refs)
  for _, item in ipairs(items) do
    local ref = refs and M.reference_of(refs, item.series)
    if ref then
      local unit, factor = item.series.unit, 1
      if ref[4] ~= nil and ref[4] ~= unit then
        factor = TO_SERIES[unit or ""] and TO_SERIES[unit or ""][ref[4]]
        if not factor then
          require("wb.errors").raise(2, string.format("gate: the reference of %s · %s is in %s, the series in %s",
            item.series.name, item.series.metric, tostring(ref[4]), tostring(unit or "no unit")), 0)
        end
      end
      local head = mean(item.head.samples)
      local value = ref[1] * factor
      local lo, hi = value * (1 + ref[2]), value * (1 + ref[3])
      item.reference = { value = ref[1], lower = ref[2], upper = ref[3], unit = ref[4], head = head,
        exceeded = head > hi and "above" or head < lo and "below" or nil, low = lo, high = hi }
      local rate = verdict.classify(item.series.metric) == "rate"
      if item.reference.exceeded == (rate and "below" or "above") then
        item.alert, item.reference_alert = true, true
      end
    end
  end
end

-- xs = gate.bench_samples(cmd, metric) : the samples of a wb.bench summary command a bench
-- record's metric is made of, or nil
function M.bench_samples(cmd, metric)
  local key = M.BENCH_SAMPLES[metric]
  local xs = key and cmd.samples[key]
  return type(xs) == "userdata" and xs:totable() or xs
end

-- row = gate.confirm_metric(metric, base_cmd, new_cmd, opts) : the verdict of one metric of two
-- interleaved wb.bench commands, or nil for a metric they do not measure; a wall time judged net
-- of the runs' wait for a CPU where the commands carry that evidence, as its detection was
function M.confirm_metric(metric, b, n, opts)
  local key = M.BENCH_SAMPLES[metric]
  if not key then return nil end
  local function list(cmd) return M.bench_samples(cmd, metric) end
  local bs, ns = list(b), list(n)
  if not bs or not ns or #bs == 0 or #ns == 0 then return nil end
  local res, res_text, res_of = require("wb.compare").resolution(metric)
  local itf = key == "wall" and require "wb.interference"
  local row = verdict.compare(metric, mean(bs), mean(ns), { kind = verdict.classify(metric), stat = "mean",
    threshold = opts.threshold, alpha = opts.alpha, seed = opts.seed, base_samples = bs, new_samples = ns,
    interleaved = true, resolution = res, resolution_text = res_text, resolution_of = res_of,
    base_evidence = itf and itf.from_samples(b.samples, key) or nil,
    new_evidence = itf and itf.from_samples(n.samples, key) or nil })
  verdict.judge({ row }, { threshold = opts.threshold, alpha = opts.alpha })
  return row
end

local function pct(ratio) return ratio and string.format("%+.1f%%", (ratio - 1) * 100) or "–" end

-- "regression, confirmed" | "regression, not confirmed" | "regression, unconfirmed: why" | ...
function M.alert_text(item)
  local what = item.row and item.row.verdict or "reference exceeded"
  if item.reference and item.reference.exceeded == "above" and not (item.row and item.row.verdict == "regression") then
    what = "above its reference"
  end
  local c = item.confirmation
  if not c then return what end
  if c.fate == "confirmed" then return what .. ", confirmed" end
  if c.fate == "dismissed" then return what .. ", not confirmed (" .. (c.reason or "") .. ")" end
  return what .. ", unconfirmed: " .. (c.reason or "")
end

-- md = gate.markdown(doc) : the gate's result as a CI or pull-request comment
function M.markdown(doc)
  local out = { "## wb gate: " .. (doc.failed and "regression" or "pass"), "" }
  out[#out + 1] = string.format("Head: `%s` (%s) on %s, %s; %d series checked against their history.",
    doc.head.commit and doc.head.commit:sub(1, 10) or "no commit", doc.head.recipe or "?", doc.head.machine or "?",
    doc.head.created_at or "?", #doc.checks)
  out[#out + 1] = ""
  local t = { { "series", "baseline", "head", "change", "verdict" } }
  for _, ck in ipairs(doc.checks) do
    t[#t + 1] = { ck.name .. " · " .. ck.metric, ck.baseline or "first record", ck.head_value or "",
      pct(ck.ratio) .. (ck.ci and (" (" .. ck.ci .. ")") or ""), ck.text }
  end
  out[#out + 1] = require("wb.page").md_table(t, { "l", "l", "r", "r", "l" })
  if #doc.alerts > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "### Alerts"
    out[#out + 1] = ""
    for _, a in ipairs(doc.alerts) do
      out[#out + 1] = string.format("- **%s · %s**: %s %s (from %s to %s)%s", a.name, a.metric, a.text, pct(a.ratio),
        a.baseline_commit and a.baseline_commit:sub(1, 10) or "?", a.head_commit and a.head_commit:sub(1, 10) or "?",
        a.confirmed_ratio and string.format("; interleaved re-run: %s, p = %.2g", pct(a.confirmed_ratio), a.confirmed_p or 1) or "")
    end
    local shown = {}
    for _, a in ipairs(doc.alerts) do
      local why = a.why
      if why and not shown[why] then
        shown[why] = true
        out[#out + 1] = ""
        if why.skipped then
          out[#out + 1] = "Not profiled: " .. why.skipped .. "."
        else
          out[#out + 1] = string.format("**Why it got slower**: the functions whose time changed beyond run-to-run "
            .. "noise (profiled %d times a side, interleaved; Mann–Whitney per function, Benjamini–Hochberg; "
            .. "frames in every stack, such as main, are named only by their own time):", why.runs)
          out[#out + 1] = ""
          if #why.frames == 0 then out[#out + 1] = "- none beyond its noise" end
          for _, f in ipairs(why.frames) do
            out[#out + 1] = string.format("- `%s` %s%s %s → %s (%s, q = %.2g)", f.name, f.kind == "oncpu" and "on-CPU" or "off-CPU",
              f.time == "self" and ", own time" or "", util.format_seconds(f.base), util.format_seconds(f.new),
              (f.delta >= 0 and "+" or "−") .. util.format_seconds(math.abs(f.delta)), f.q)
          end
          out[#out + 1] = ""
          out[#out + 1] = string.format("Differential flame graphs: `%s`, `%s`", why.graphs.oncpu, why.graphs.offcpu)
        end
      end
    end
  end
  out[#out + 1] = ""
  out[#out + 1] = doc.failed and "The gate fails: " .. doc.reason or "The gate passes: " .. doc.reason
  return table.concat(out, "\n") .. "\n"
end

return M
