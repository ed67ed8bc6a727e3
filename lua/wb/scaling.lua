-- The scaling engine (recipes/scaling.lua is its policy; docs/scaling.md): the points of a
-- strong or weak scaling curve from a command template, their analysis from one wb.bench
-- summary (speedup, parallel efficiency, Karp–Flatt serial fraction, bootstrap intervals of the
-- ratio of means), the notes a reader needs (over-subscription, load, the baseline), and the
-- report: scaling.md, the charts and the bench report's page with the scaling sections.
-- Strong: speedup S = T(p0)/T(p), efficiency S/(p/p0). Weak (size = base size × p/p0):
-- efficiency E = T(p0)/T(p) (ideal 1), scaled speedup (p/p0)·E.
local wb = require "wb"
local page = require "wb.page"
local svg = require "wb.svg"

local M = {}

local opt = wb.util.opt

local function usage(msg) wb.usage("scaling: " .. msg, 0) end

-- n = scaling.cpu_count() : the CPUs this process may use: nproc (CPU affinity), capped by a
-- cgroup v2 CPU quota
function M.cpu_count()
  local res = wb.proc.run { argv = { "nproc" }, stdout = "capture", stderr = "null" }
  local n = res and res.ok and tonumber(res.stdout:match("%d+"))
  if not n then
    n = 0
    for _ in (wb.fs.read("/proc/cpuinfo") or ""):gmatch("\nprocessor%s*:") do n = n + 1 end
    n = math.max(n, 1)
  end
  local quota, period = (wb.fs.read("/sys/fs/cgroup/cpu.max") or ""):match("^(%d+)%s+(%d+)")
  if quota then n = math.min(n, math.max(1, math.ceil(tonumber(quota) / tonumber(period)))) end
  return n
end

-- x = scaling.load_average() : the 1-minute load average, or nil
function M.load_average()
  return tonumber((wb.fs.read("/proc/loadavg") or ""):match("^([%d.]+)"))
end

-- workers = scaling.check(cfg) : the configuration checked (bad input: exit 2); the worker
-- counts sorted
function M.check(cfg)
  if cfg.mode ~= "strong" and cfg.mode ~= "weak" then usage("mode must be strong or weak, not '" .. tostring(cfg.mode) .. "'") end
  if type(cfg.workers) ~= "table" or #cfg.workers == 0 then usage("workers must be a list such as [1,2,4,8]") end
  local workers, seen = {}, {}
  for _, p in ipairs(cfg.workers) do
    if math.type(p) ~= "integer" or p < 1 then usage("workers: " .. tostring(p) .. " is not a positive integer") end
    if seen[p] then usage("workers: " .. p .. " appears twice") end
    seen[p], workers[#workers + 1] = true, p
  end
  table.sort(workers)
  if math.type(cfg.size) ~= "integer" or cfg.size < 1 then usage("size must be a positive integer") end
  if math.type(cfg.runs) ~= "integer" or cfg.runs < 1 then usage("runs must be a positive integer") end
  if type(cfg.command) ~= "table" or #cfg.command == 0 then usage("command must be an argv list") end
  local text = table.concat(wb.util.deep_copy(cfg.command), " ")
  if not text:find("{workers}", 1, true) then usage("command has no {workers} placeholder") end
  if cfg.mode == "weak" and not text:find("{size}", 1, true) then
    usage("weak scaling needs a {size} placeholder in the command")
  end
  return workers
end

local function substitute(template, values)
  local argv = {}
  for i, a in ipairs(template) do
    argv[i] = (tostring(a):gsub("{(%w+)}", function(k) return values[k] and tostring(values[k]) end))
  end
  return argv
end

-- commands, sizes = scaling.commands(cfg, workers) : one wb.bench command per worker count
-- ({name = "workers=P", argv}) and its problem size (weak: size × p / p0)
function M.commands(cfg, workers)
  local sizes, commands = {}, {}
  for i, p in ipairs(workers) do
    sizes[i] = cfg.mode == "weak" and cfg.size * p // workers[1] or cfg.size
    commands[i] = { name = "workers=" .. p, argv = substitute(cfg.command, { workers = p, size = sizes[i] }) }
  end
  return commands, sizes
end

local function fmt_ci(v, lo, hi)
  if lo == nil then return string.format("%.2f", v) end
  return string.format("%.2f [%.2f–%.2f]", v, lo, hi)
end

-- points = analyse(cfg, workers, sizes, summary, cpus, ci) : one table per worker count (docs/scaling.md)
local function analyse(cfg, workers, sizes, summary, cpus, ci)
  local p0 = workers[1]
  local base = summary.commands[1]
  local points = wb.json.array()
  for i, p in ipairs(workers) do
    local c = summary.commands[i]
    local w = c.stats.wall
    local q = p / p0
    local pt = wb.json.object()
    pt.workers, pt.size = p, sizes[i]
    pt.argv = c.argv
    pt.n, pt.mean, pt.stddev, pt.median, pt.min, pt.max = w.n, w.mean, w.stddev, w.median, w.min, w.max
    local ratio = i == 1 and 1.0 or base.stats.wall.mean / w.mean
    local lo, hi
    if i > 1 then
      lo, hi = wb.stats.bootstrap_ci(c.samples.wall, base.samples.wall,
        { stat = "ratio_mean", level = ci.level, resamples = ci.resamples, seed = cfg.seed })
    end
    pt.ideal_speedup = q
    if cfg.mode == "strong" then
      pt.speedup = ratio
      pt.speedup_ci_lo, pt.speedup_ci_hi = lo or wb.null, hi or wb.null
      pt.efficiency = pt.speedup / q
      pt.efficiency_ci_lo, pt.efficiency_ci_hi = lo and lo / q or wb.null, hi and hi / q or wb.null
      pt.karp_flatt = i == 1 and wb.null or (1 / pt.speedup - 1 / q) / (1 - 1 / q)
    else
      pt.efficiency = ratio
      pt.efficiency_ci_lo, pt.efficiency_ci_hi = lo or wb.null, hi or wb.null
      pt.speedup = q * pt.efficiency
      pt.speedup_ci_lo, pt.speedup_ci_hi = lo and lo * q or wb.null, hi and hi * q or wb.null
      pt.karp_flatt = wb.null
    end
    pt.oversubscribed = p > cpus
    pt.samples = c.samples.wall
    points[i] = pt
  end
  return points
end

local function notes_for(cfg, points, cpus, load)
  local notes = wb.json.array()
  local over = {}
  for _, pt in ipairs(points) do
    if pt.oversubscribed then over[#over + 1] = tostring(pt.workers) end
  end
  if #over > 0 then
    notes[#notes + 1] = string.format("%s workers exceed the %d CPU%s available here: the threads "
      .. "time-share the cores, so %s; %s over-subscription, not the program's scalability.",
      #over == 1 and over[1] or table.concat(over, ", ", 1, #over - 1) .. " and " .. over[#over],
      cpus, cpus == 1 and "" or "s",
      cfg.mode == "strong" and ("speedup cannot exceed " .. cpus .. "× and efficiency falls")
        or "run times grow and efficiency falls",
      #over == 1 and "that point measures" or "those points measure")
  end
  if load and load >= 0.5 then
    notes[#notes + 1] = string.format("The 1-minute load average was %.2f before the measurements "
      .. "(%d CPU%s): other processes competed for the cores, which lowers the measured speedup.",
      load, cpus, cpus == 1 and "" or "s")
  end
  if points[1].workers ~= 1 then
    notes[#notes + 1] = string.format("The baseline is %d workers, not 1: speedups are relative to it "
      .. "and the ideal is p/%d.", points[1].workers, points[1].workers)
  end
  local best
  for _, pt in ipairs(points) do
    if not best or pt.speedup > best.speedup then best = pt end
  end
  if best ~= points[1] then
    notes[#notes + 1] = string.format("Best %s: %.2f× at %d workers (efficiency %.2f).",
      cfg.mode == "strong" and "speedup" or "scaled speedup", best.speedup, best.workers, best.efficiency)
  elseif #points > 1 then
    notes[#notes + 1] = string.format("No point ran faster than the baseline of %d worker%s.", best.workers,
      best.workers == 1 and "" or "s")
  end
  return notes
end

-- The table rows shared by Markdown, HTML and stdout: header, then one row per point.
local function table_rows(cfg, points)
  local means = {}
  for i, pt in ipairs(points) do means[i] = pt.mean end
  local unit = wb.report.time_unit(means)
  local strong = cfg.mode == "strong"
  local rows = { { "Workers", "Size", "Mean ± σ [" .. unit.name .. "]", strong and "Speedup [95% CI]" or "Scaled speedup [95% CI]",
    "Ideal", "Efficiency [95% CI]" } }
  if strong then rows[1][#rows[1] + 1] = "Karp–Flatt e" end
  rows[1][#rows[1] + 1] = "Note"
  for _, pt in ipairs(points) do
    local row = { tostring(pt.workers), tostring(pt.size),
      string.format("%.3f ± %.3f", pt.mean * unit.factor, pt.stddev * unit.factor),
      fmt_ci(pt.speedup, opt(pt.speedup_ci_lo), opt(pt.speedup_ci_hi)), string.format("%g", pt.ideal_speedup),
      fmt_ci(pt.efficiency, opt(pt.efficiency_ci_lo), opt(pt.efficiency_ci_hi)) }
    if strong then row[#row + 1] = opt(pt.karp_flatt) and string.format("%.3f", pt.karp_flatt) or "–" end
    row[#row + 1] = pt.oversubscribed and "over-subscribed" or ""
    rows[#rows + 1] = row
  end
  return rows
end

local function mode_title(cfg) return cfg.mode == "strong" and "Strong" or "Weak" end

-- The table (right-aligned but for the note) and the notes as page kit blocks.
local function table_blocks(cfg, doc)
  local rows = table_rows(cfg, doc.points)
  local align = {}
  for j = 1, #rows[1] - 1 do align[j] = "r" end
  align[#rows[1]] = "l"
  return page.table(rows, { align = align }), #doc.notes > 0 and page.list(doc.notes) or nil
end

-- svg = chart(cfg, points, which, level) : speedup (with the ideal line y = p/p0) or efficiency
-- (ideal 1) against workers on a log2 axis
local function chart(cfg, points, which, level)
  local measured, ideal, xticks = {}, {}, {}
  for i, pt in ipairs(points) do
    xticks[i] = pt.workers
    local y = which == "speedup" and pt.speedup or pt.efficiency
    measured[i] = { x = pt.workers, y = y, lo = opt(pt[which .. "_ci_lo"]) or (i == 1 and y or nil),
      hi = opt(pt[which .. "_ci_hi"]) or (i == 1 and y or nil),
      tip = string.format("%d workers: %s %.3f%s", pt.workers, which, y,
        pt.oversubscribed and " (over-subscribed)" or "") }
    ideal[i] = { x = pt.workers, y = which == "speedup" and pt.ideal_speedup or 1,
      tip = string.format("ideal at %d workers: %g", pt.workers, which == "speedup" and pt.ideal_speedup or 1) }
  end
  local p0 = points[1].workers
  local speed_label = cfg.mode == "strong" and "Speedup T(p0)/T(p)" or "Scaled speedup (p/p0)·T(p0)/T(p)"
  return svg.line_chart {
    series = {
      { label = "measured " .. (which == "speedup" and (cfg.mode == "strong" and "speedup" or "scaled speedup") or "efficiency"),
        points = measured, color = svg.palette[1] },
      { label = which == "speedup" and (p0 == 1 and "ideal (y = p)" or "ideal (y = p/" .. p0 .. ")") or "ideal (y = 1)",
        points = ideal, color = svg.colors.neutral },
    },
    x_label = "Workers (log2 scale)", y_label = which == "speedup" and speed_label or "Parallel efficiency",
    x_log = #points > 1, x_ticks = xticks,
    x_format = function(x) return string.format("%d", x) end,
    title = (cfg.mode == "strong" and "Strong" or "Weak") .. " scaling: " .. which .. " against workers",
    band_label = "shaded band: " .. math.floor(level * 100) .. "% bootstrap CI",
  }
end


-- doc = scaling.document(cfg, workers, sizes, summary [, {ci_level = 0.95, resamples = 2000}]) :
-- the wb.scaling v1 document of the measured points (docs/scaling.md)
function M.document(cfg, workers, sizes, summary, opts)
  local ci = { level = opts and opts.ci_level or 0.95, resamples = opts and opts.resamples or 2000 }
  local cpus, load = M.cpu_count(), M.load_average()
  local doc = wb.json.object()
  doc.schema_name, doc.schema_version = "wb.scaling", 1
  doc.created_at_utc, doc.wb_version = wb.clock.utc(), wb.version
  doc.mode = cfg.mode
  doc.command = wb.json.array(wb.util.deep_copy(cfg.command))
  doc.base_size = cfg.size
  doc.workers = wb.json.array(workers)
  doc.baseline_workers = workers[1]
  doc.cpu_count = cpus
  doc.load_average = load or wb.null
  local settings = wb.json.object()
  settings.runs, settings.warmup, settings.order, settings.seed = cfg.runs, cfg.warmup, "interleaved", cfg.seed
  settings.ci_level, settings.resamples = ci.level, ci.resamples
  doc.settings = settings
  doc.points = analyse(cfg, workers, sizes, summary, cpus, ci)
  doc.notes = notes_for(cfg, doc.points, cpus, load)
  return doc
end

-- r = scaling.report(cfg, doc, summary) : {md = scaling.md's text, html = report.html's (the
-- bench report of summary with the scaling sections first), speedup_svg, efficiency_svg}
function M.report(cfg, doc, summary)
  local level = doc.settings.ci_level
  local speedup, efficiency = chart(cfg, doc.points, "speedup", level), chart(cfg, doc.points, "efficiency", level)
  local tbl, notes = table_blocks(cfg, doc)
  local md = page.document { title = page.join { mode_title(cfg) .. " scaling of ", page.code(table.concat(doc.command, " ")) },
    blocks = { string.format("Problem size %s; %d runs per point (+%d warmup), interleaved; %d CPU%s available.",
      cfg.mode == "strong" and tostring(doc.base_size)
        or (doc.base_size .. " × " .. (doc.baseline_workers == 1 and "p" or ("p/" .. doc.baseline_workers))),
      cfg.runs, cfg.warmup, doc.cpu_count, doc.cpu_count == 1 and "" or "s"), tbl, notes } }
  local html = require("wb.html").document(summary, { title = mode_title(cfg) .. " scaling", blocks = {
    page.section(mode_title(cfg) .. " scaling", { tbl, notes }),
    page.section("Speedup", page.figure(speedup, "Measured against ideal linear scaling; workers on a log2 axis.")),
    page.section("Parallel efficiency", page.figure(efficiency, "1 is perfect scaling.")),
  } })
  return { md = page.md(md), html = page.html(html), speedup_svg = speedup, efficiency_svg = efficiency }
end

return M
