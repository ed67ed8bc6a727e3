-- The HTML report of a wb.bench summary, a page of the page kit (lua/wb/page.lua): the settings,
-- the summary table, the comparisons, warnings and three charts: run-time distributions, ratios
-- to the reference, and a scan's scaling curve. Self-contained: inline CSS and SVG, no script.
local page = require "wb.page"
local report = require "wb.report"
local svg = require "wb.svg"
local util = require "wb.util"

local M = {}

local esc, get = page.escape, report.get
local code, strong, join = page.code, page.strong, page.join

local function color_of(i) return svg.palette[(i - 1) % #svg.palette + 1] end

local function utc(s)
  if type(s) ~= "string" then return nil end
  local d, t = s:match("^(%d+%-%d+%-%d+)T(%d+:%d+)")
  return d and (d .. " " .. t .. " UTC") or s
end

-- ---- header -----------------------------------------------------------------------------

local function settings_items(summary)
  local s, items = get(summary, "settings") or {}, {}
  local function b(v) return strong(report.number(v)) end
  if get(s, "runs") then -- a fixed count; min_runs and min_time only shape an automatic one
    items[#items + 1] = join { b(s.runs), " runs" }
  elseif get(s, "min_runs") or get(s, "min_time") then
    local extra = {}
    if get(s, "min_runs") then extra[#extra + 1] = "at least " .. report.number(s.min_runs) end
    if get(s, "min_time") then extra[#extra + 1] = "≥ " .. report.number(s.min_time) .. " s" end
    items[#items + 1] = "automatic run count (" .. table.concat(extra, ", ") .. ")"
  end
  if get(s, "warmup") then items[#items + 1] = join { b(s.warmup), " warmup" } end
  if get(s, "order") then
    items[#items + 1] = join { "order ", strong(s.order),
      get(s, "seed") and (" (seed " .. report.number(s.seed) .. ")") or "" }
  end
  if get(s, "reference") then items[#items + 1] = join { "reference ", code(s.reference) } end
  if get(s, "shell") ~= nil then
    local spawn = get(s, "shell_spawn_seconds")
    items[#items + 1] = s.shell and ("shell" .. (spawn and (" (spawn " ..
        string.format("%.2f ms", spawn * 1e3) .. ")") or "")) or "no shell"
  end
  return items
end

local function host_items(summary)
  local host, items = get(summary, "host"), {}
  if type(host) == "string" then
    items[1] = join { "host ", strong(host) }
  elseif type(host) == "table" then
    for _, k in ipairs(util.keys(host)) do
      local v = get(host, k)
      if type(v) == "string" or type(v) == "number" or type(v) == "boolean" then
        local text = report.number(v)
        if k == "hostname" or k == "name" then
          table.insert(items, 1, join { "host ", strong(text) })
        else
          items[#items + 1] = k .. " " .. text
        end
      end
    end
  end
  local created, version = utc(get(summary, "created_at_utc")), get(summary, "wb_version")
  if created then items[#items + 1] = created end
  if version then items[#items + 1] = "wb " .. version end
  return items
end

local function lead(model)
  local best
  for _, r in ipairs(model.rows) do
    if r.mean and (not best or r.mean < best.mean) then best = r end
  end
  if not best or #model.rows < 2 then return nil end
  return join { #model.rows .. " commands; fastest ", code(best.name), " with a mean of ",
    strong(string.format("%." .. model.decimals .. "f", best.mean * model.unit.factor) .. " " .. model.unit.name), "." }
end

-- ---- sections ---------------------------------------------------------------------------

local function verdicts(summary)
  local out = {}
  for _, c in ipairs(get(summary, "comparisons") or {}) do
    local p = report.comparison_parts(c)
    out[p.name] = p.kind
  end
  return out
end

local function summary_table(summary, model)
  local kinds = verdicts(summary)
  local out = { '<div class="scroll"><table>\n<thead><tr>' }
  for _, col in ipairs(model.columns) do
    out[#out + 1] = string.format('<th%s scope="col">%s</th>', col.align == "r" and ' class="r"' or "",
      esc(col.title))
  end
  out[#out + 1] = "</tr></thead>\n<tbody>\n"
  for _, r in ipairs(model.rows) do
    local name = string.format('<span class="sw" style="background:%s"></span>%s', color_of(r.index),
      code(r.name).html)
    if r.reference then name = name .. '<span class="badge">reference</span>' end
    if #r.warnings > 0 then
      local tips = {}
      for i, w in ipairs(r.warnings) do tips[i] = tostring(w) end
      name = name .. string.format('<span class="warn" title="%s">⚠</span>', esc(table.concat(tips, "\n")))
    end
    if r.command and r.command ~= r.name then
      name = name .. '<div class="cmd">' .. code(r.command).html .. "</div>"
    end
    out[#out + 1] = '<tr><th scope="row">' .. name .. "</th>"
    for j = 2, #model.columns do
      local col = model.columns[j]
      local cls = col.align == "r" and "r" or ""
      if col.key == "relative" and kinds[r.name] and kinds[r.name] ~= "same" then
        cls = cls .. " " .. kinds[r.name]
      end
      out[#out + 1] = string.format('<td class="%s">%s</td>', cls, esc(r.cells[col.key]))
    end
    out[#out + 1] = "</tr>\n"
  end
  out[#out + 1] = "</tbody></table></div>\n"
  return table.concat(out)
end

local function comparisons_list(summary)
  local cmps = get(summary, "comparisons") or {}
  if #cmps == 0 then return nil end
  local out = { "<ul>\n" }
  for _, c in ipairs(cmps) do
    local p = report.comparison_parts(c)
    local chip = p.kind == "same" and "no difference" or ((p.factor and p.factor .. " " or "") .. p.kind)
    out[#out + 1] = string.format('<li><span class="chip %s">%s</span>%s</li>\n', p.kind, esc(chip),
      report.comparison_sentence(c, function(x) return code(x).html end, function(x) return strong(x).html end))
  end
  out[#out + 1] = "</ul>\n"
  return table.concat(out)
end

local function warnings_list(model)
  local out = {}
  for _, r in ipairs(model.rows) do
    for _, w in ipairs(r.warnings) do
      out[#out + 1] = "<li>" .. code(r.name).html .. ": " .. esc(w) .. "</li>\n"
    end
  end
  if #out == 0 then return nil end
  return "<ul>\n" .. table.concat(out) .. "</ul>\n"
end

-- ---- charts -----------------------------------------------------------------------------

local MAX_POINTS = 500

local function distribution_chart(summary, model)
  local f = model.unit.factor
  local rows, sampled = {}, false
  for i, c in ipairs(get(summary, "commands") or {}) do
    -- At most MAX_POINTS runs are drawn (evenly spaced in run order; the box uses the full
    -- statistics), so a 10,000-run bench stays a page of modest size and memory.
    local all = get(c, "samples", "wall") or {}
    local step = math.max(1, math.ceil(#all / MAX_POINTS))
    local values, runs = {}, {}
    for j = 1, #all, step do
      local v = all[j]
      if type(v) ~= "number" then values = {} break end
      values[#values + 1], runs[#runs + 1] = v * f, j
    end
    if #values > 0 then
      local w = get(c, "stats", "wall") or {}
      local flagged, outliers = {}, {}
      for _, k in ipairs(get(c, "outliers") or {}) do flagged[k] = true end
      for i, j in ipairs(runs) do outliers[i] = flagged[j] end
      local function s(k) return get(w, k) and get(w, k) * f end
      rows[#rows + 1] = { label = model.rows[i].name, values = values, runs = runs, color = color_of(i),
        q1 = s("q1"), q3 = s("q3"), median = s("median"), mean = s("mean"), outliers = outliers }
      sampled = sampled or step > 1
    end
  end
  if #rows == 0 then return nil end
  return svg.box_plot { rows = rows, x_label = "Wall time [" .. model.unit.name .. "]",
    title = "Distribution of wall time per command",
    format = function(v) return svg.sig(v) .. " " .. model.unit.name end,
    outlier_note = "outlier (modified z-score > 3.5)" }, sampled
end

local function ratio_chart(summary)
  local cmps = get(summary, "comparisons") or {}
  if #cmps == 0 then return nil end
  local refs, nref = {}, 0
  for _, c in ipairs(cmps) do
    local r = tostring(get(c, "reference") or "?")
    if not refs[r] then refs[r], nref = true, nref + 1 end
  end
  local bars = {}
  for _, c in ipairs(cmps) do
    local p = report.comparison_parts(c)
    local ratio = get(c, "ratio_mean")
    if ratio then
      bars[#bars + 1] = {
        label = nref > 1 and (p.name .. " vs " .. p.reference) or p.name,
        value = ratio, lo = get(c, "ci_lo"), hi = get(c, "ci_hi"),
        color = svg.colors[p.kind == "same" and "neutral" or p.kind],
        note = p.kind == "same" and "no difference" or ((p.factor or "") .. " " .. p.kind),
        tip = report.comparison_sentence(c),
      }
    end
  end
  if #bars == 0 then return nil end
  local ref_name = next(refs)
  local level = string.format("%g%%", (get(cmps[1], "ci_level") or 0.95) * 100)
  return svg.bar_chart { bars = bars, reference = 1, left_note = "faster", right_note = "slower",
    title = "Mean time relative to the reference",
    x_label = (nref == 1 and ("Mean time ÷ mean time of " .. svg.shorten(ref_name, 40))
      or "Mean time ÷ mean time of the reference") .. " (error bars: " .. level .. " CI)" }
end

local function param_text(v) return report.number(v) end

-- Replaces the whole-number (or whole-word) occurrences of value in s by {name}.
local function template(s, name, value)
  local v = param_text(value)
  if v == "" then return s end
  local bound = v:find("^[%d.%-]+$") and "[%d.]" or "[%w_]"
  local out, i = {}, 1
  while true do
    local a, b = s:find(v, i, true)
    if not a then break end
    local keep = s:sub(a - 1, a - 1):find(bound) or s:sub(b + 1, b + 1):find(bound)
    out[#out + 1] = s:sub(i, a - 1) .. (keep and v or ("{" .. name .. "}"))
    i = b + 1
  end
  out[#out + 1] = s:sub(i)
  return table.concat(out)
end

-- groups, numeric, values = html.scan_groups(summary) : the commands of a scan grouped into
-- series: commands whose command line (with the scan value replaced by {parameter}) and other
-- parameters agree form one series {label, points = {{value, index}}}; numeric tells whether
-- every value is a number; values are the scan's values in order.
function M.scan_groups(summary)
  local param = get(summary, "scan", "parameter")
  if not param then return {}, false, {} end
  local groups, by_key, values, seen, numeric = {}, {}, {}, {}, true
  for _, v in ipairs(get(summary, "scan", "values") or {}) do
    if not seen[param_text(v)] then seen[param_text(v)], values[#values + 1] = true, v end
  end
  for i, c in ipairs(get(summary, "commands") or {}) do
    local v = get(c, "parameters", param)
    if v ~= nil then
      if not seen[param_text(v)] then seen[param_text(v)], values[#values + 1] = true, v end
      numeric = numeric and tonumber(v) ~= nil
      local others = {}
      for _, k in ipairs(report.parameter_names { c }) do
        if k ~= param then others[#others + 1] = k .. "=" .. param_text(get(c, "parameters", k)) end
      end
      local name = tostring(get(c, "name") or get(c, "command") or i)
      local cmd = tostring(get(c, "command") or name)
      local key = template(cmd, param, v) .. "\0" .. table.concat(others, ",")
      local g = by_key[key]
      if not g then
        g = { name_label = template(name, param, v), cmd_label = template(cmd, param, v),
          others = table.concat(others, ", "), points = {} }
        by_key[key], groups[#groups + 1] = g, g
      elseif g.name_label ~= template(name, param, v) then
        g.name_label = g.cmd_label
      end
      g.points[#g.points + 1] = { value = v, index = i }
    end
  end
  local names = {}
  for _, g in ipairs(groups) do names[g.name_label] = (names[g.name_label] or 0) + 1 end
  for _, g in ipairs(groups) do
    g.label = names[g.name_label] == 1 and g.name_label or g.cmd_label
    if names[g.name_label] > 1 and g.others ~= "" then g.label = g.label .. " (" .. g.others .. ")" end
  end
  return groups, numeric, values
end

-- Whether the sorted positive values grow by a roughly constant factor of at least 1.5.
local function geometric(values)
  local xs = {}
  for i, v in ipairs(values) do xs[i] = tonumber(v) end
  table.sort(xs)
  if #xs < 3 or xs[1] <= 0 then return false end
  local lo, hi = math.huge, 0
  for i = 2, #xs do
    local r = xs[i] / xs[i - 1]
    lo, hi = math.min(lo, r), math.max(hi, r)
  end
  return lo >= 1.5 and hi <= lo * 1.25
end

local function scan_chart(summary, model)
  local groups, numeric, values = M.scan_groups(summary)
  if #groups == 0 then return nil end
  local param = tostring(get(summary, "scan", "parameter"))
  local position = {}
  for i, v in ipairs(values) do position[param_text(v)] = i end
  local commands, f, u = get(summary, "commands"), model.unit.factor, model.unit.name
  local series, xmin, xmax = {}, math.huge, -math.huge
  for gi, g in ipairs(groups) do
    local pts = {}
    for _, p in ipairs(g.points) do
      local w = get(commands[p.index], "stats", "wall") or {}
      if get(w, "mean") then
        local x = numeric and tonumber(p.value) or position[param_text(p.value)]
        xmin, xmax = math.min(xmin, x), math.max(xmax, x)
        pts[#pts + 1] = { x = x, y = w.mean * f, lo = get(w, "min") and w.min * f,
          hi = get(w, "max") and w.max * f,
          tip = string.format("%s = %s: mean %s %s (min %s, max %s)", param, param_text(p.value),
            svg.sig(w.mean * f), u, svg.sig((get(w, "min") or 0) * f), svg.sig((get(w, "max") or 0) * f)) }
      end
    end
    if #pts > 0 then series[#series + 1] = { label = g.label, points = pts, color = color_of(gi) } end
  end
  if #series == 0 then return nil end
  local opts = { series = series, x_label = param, y_label = "Mean wall time [" .. u .. "]",
    title = "Mean wall time by " .. param, band_label = "shaded band: min–max over runs" }
  if numeric then
    opts.x_log = geometric(values)
    opts.x_format = param_text
  else
    opts.x_ticks = {}
    for i = 1, #values do opts.x_ticks[i] = i end
    opts.x_format = function(i) return param_text(values[i]) end
  end
  return svg.line_chart(opts), param, opts.x_log
end

-- ---- page -------------------------------------------------------------------------------

local section, raw = page.section, page.raw

-- A section of bench-report markup made here.
local function part(title, html, class) return section(title, raw(html), class and { class = class }) end

local function distribution_section(summary, model)
  local dist, sampled = distribution_chart(summary, model)
  if not dist then return nil end
  return section("Distribution of wall time", page.figure(dist,
    "Each dot is one run (spread vertically for legibility" .. (sampled and string.format(
      "; of more than %d runs, at most %d evenly spaced ones", MAX_POINTS, MAX_POINTS) or "") .. "). Box: quartiles; thick line: median; "
    .. "◇: mean; whiskers reach the furthest run within 1.5 IQR of the box. Hover for values."))
end

-- items = html.settings_meta(settings) : the header items of a timing's settings ({runs, warmup,
-- order, seed, reference, shell}), for page.document's meta
function M.settings_meta(settings) return settings_items({ settings = settings }) end

-- items = html.host_meta(host, created_at_utc, wb_version) : the header items naming the host (a
-- name or a table of facts), the time and wb's version; any may be nil
function M.host_meta(host, created, version)
  return host_items({ host = host, created_at_utc = created, wb_version = version })
end

-- blocks = html.timings(runs) : the summary table and the wall-time distribution of timed runs, as
-- page sections for any page; each run is {name, command, samples = {wall = {seconds...}}}, its
-- statistics computed here
function M.timings(runs)
  local commands = {}
  for i, r in ipairs(runs) do
    commands[i] = { name = r.name, command = r.command or r.name, samples = { wall = r.samples.wall },
      stats = { wall = require("wb.stats").summary(r.samples.wall) }, warnings = {} }
  end
  local timed = { commands = commands }
  local model = report.model(timed)
  local blocks = { part("Summary", summary_table(timed, model)) }
  blocks[#blocks + 1] = distribution_section(timed, model)
  return blocks
end

-- doc = html.document(summary [, {title, blocks, previous}]) : the bench report as a page.document;
-- `blocks` (page kit fragments, e.g. page.section) come first, after the header; `previous` (a
-- wb.compare result) adds the comparison with the previous run, `previous_text` the line saying
-- there is none and why
function M.document(summary, opts)
  opts = opts or {}
  local model = report.model(summary)
  local doc = page.document { title = opts.title or "Benchmark report",
    generator = "wb " .. (get(summary, "wb_version") or ""),
    meta = { settings_items(summary), host_items(summary) }, lead = lead(model) }
  for _, b in ipairs(opts.blocks or {}) do doc:add(b) end
  doc:add(part("Summary", summary_table(summary, model)))
  local cmps = comparisons_list(summary)
  if cmps then doc:add(part("Comparisons", cmps)) end
  local previous = opts.previous
  if previous and #previous.rows > 0 then
    doc:add(section(report.previous_title(previous), require("wb.compare").html(previous)))
  elseif opts.previous_text then
    doc:add(page.p(opts.previous_text))
  end
  local warnings = warnings_list(model)
  if warnings then doc:add(part("Warnings", warnings, "warnings")) end
  local dist = distribution_section(summary, model)
  if dist then doc:add(dist) end
  local ratios = ratio_chart(summary)
  if ratios then
    doc:add(section("Relative to the reference", page.figure(ratios,
      "Ratio of mean wall time to the reference’s: left of the dashed line at 1.0 is faster, right is "
      .. "slower. Error bars show the confidence interval; green and orange mark significant changes.")))
  end
  local scan, param, log = scan_chart(summary, model)
  if scan then
    doc:add(section("Scaling with " .. param, page.figure(scan, join { "Mean wall time for each value of ",
      code(param), (log and " (logarithmic axis)" or "") .. "; the shaded band spans the fastest to the slowest run." })))
  end
  local version, created = get(summary, "wb_version"), utc(get(summary, "created_at_utc"))
  doc.footer = string.format("Generated by wb%s%s · schema %s v%s", version and (" " .. version) or "",
    created and (" on " .. created) or "", get(summary, "schema_name") or "?",
    report.number(get(summary, "schema_version") or "?"))
  return doc
end

-- text = html.page(summary [, opts]) : the whole HTML document of html.document(summary, opts)
function M.page(summary, opts) return page.html(M.document(summary, opts)) end

return M
