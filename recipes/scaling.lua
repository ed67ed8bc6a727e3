-- Strong and weak scaling curves: speedup, parallel efficiency and Karp–Flatt serial fraction.
--
--   wb scaling                                   # strong scaling of the bundled workload, 1 2 4 8 workers
--   wb scaling mode=weak size=200 'workers=[1,2,4]'
--   wb scaling 'command=[./solver, -t, "{workers}", -n, "{size}"]' size=4096 runs=5
--
-- Every point runs the command template with {workers} and {size} substituted (weak scaling:
-- size = base size × workers / smallest worker count); all points are measured by wb.bench in
-- one interleaved pass. Strong: speedup S = T(p0)/T(p), efficiency S/(p/p0). Weak: efficiency
-- E = T(p0)/T(p) (ideal 1), scaled speedup (p/p0)·E. Intervals are percentile bootstraps of the
-- ratio of means. Writes scaling.json (wb.scaling v1), scaling.md, scaling.svg, summary.json and
-- report.html into the run directory and prints the table. See docs/scaling.md.
local wb = require "wb"
local svg = require "wb.svg"

local CI_LEVEL, RESAMPLES = 0.95, 2000
local opt = wb.util.opt

local function usage(msg) wb.usage("scaling: " .. msg, 0) end

-- The CPUs this process may use: nproc (CPU affinity), capped by a cgroup v2 CPU quota.
local function cpu_count()
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

local function load_average()
  return tonumber((wb.fs.read("/proc/loadavg") or ""):match("^([%d.]+)"))
end

local function check_config(cfg)
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

local function fmt_ci(v, lo, hi)
  if lo == nil then return string.format("%.2f", v) end
  return string.format("%.2f [%.2f–%.2f]", v, lo, hi)
end

-- points = analyse(cfg, workers, sizes, summary, cpus) : one table per worker count (docs/scaling.md)
local function analyse(cfg, workers, sizes, summary, cpus)
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
        { stat = "ratio_mean", level = CI_LEVEL, resamples = RESAMPLES, seed = cfg.seed })
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

local function markdown(cfg, doc)
  local rows = table_rows(cfg, doc.points)
  local align = { "r", "r", "r", "r", "r", "r", "r", "l" }
  if cfg.mode == "weak" then table.remove(align, 7) end
  local out = {
    string.format("# %s scaling of %s", cfg.mode == "strong" and "Strong" or "Weak",
      wb.report.md_code(table.concat(doc.command, " "))),
    "",
    string.format("Problem size %s; %d runs per point (+%d warmup), interleaved; %d CPU%s available.",
      cfg.mode == "strong" and tostring(doc.base_size)
        or (doc.base_size .. " × " .. (doc.baseline_workers == 1 and "p" or ("p/" .. doc.baseline_workers))),
      cfg.runs, cfg.warmup, doc.cpu_count, doc.cpu_count == 1 and "" or "s"),
    "",
    (wb.report.table(rows, { align = align }):gsub("\n$", "")),
  }
  if #doc.notes > 0 then
    out[#out + 1] = ""
    for _, n in ipairs(doc.notes) do out[#out + 1] = "- " .. wb.report.md_text(n) end
  end
  return table.concat(out, "\n") .. "\n"
end

-- svg = chart(cfg, points, which) : speedup (with the ideal line y = p/p0) or efficiency (ideal 1)
-- against workers on a log2 axis
local function chart(cfg, points, which)
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
    band_label = "shaded band: " .. math.floor(CI_LEVEL * 100) .. "% bootstrap CI",
  }
end

local function html_table(rows)
  local esc = svg.escape
  local function cells(row, tag)
    local out = {}
    for j, v in ipairs(row) do
      out[j] = string.format('<%s%s>%s</%s>', tag, j < #row and ' class="r"' or "", esc(v), tag)
    end
    return table.concat(out)
  end
  local out = { '<div class="scroll"><table>\n<thead><tr>', cells(rows[1], "th"), "</tr></thead>\n<tbody>\n" }
  for i = 2, #rows do out[#out + 1] = "<tr>" .. cells(rows[i], "td") .. "</tr>\n" end
  out[#out + 1] = "</tbody></table></div>\n"
  return table.concat(out)
end

local function html(cfg, doc, summary, speedup_svg, efficiency_svg)
  local esc = svg.escape
  local notes = {}
  for _, n in ipairs(doc.notes) do notes[#notes + 1] = "<li>" .. esc(n) .. "</li>\n" end
  local body = { "<section>\n<h2>", cfg.mode == "strong" and "Strong" or "Weak", " scaling</h2>\n",
    html_table(table_rows(cfg, doc.points)),
    #notes > 0 and ("<ul>\n" .. table.concat(notes) .. "</ul>\n") or "", "</section>\n",
    "<section>\n<h2>Speedup</h2>\n<figure>\n", speedup_svg,
    "\n<figcaption>Measured against ideal linear scaling; workers on a log2 axis.</figcaption>\n</figure>\n</section>\n",
    "<section>\n<h2>Parallel efficiency</h2>\n<figure>\n", efficiency_svg,
    "\n<figcaption>1 is perfect scaling.</figcaption>\n</figure>\n</section>\n" }
  return wb.report.html(summary, { title = (cfg.mode == "strong" and "Strong" or "Weak") .. " scaling",
    sections = { table.concat(body) } })
end

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  defaults = {
    mode = "strong",
    workers = { 1, 2, 4, 8 },
    size = 400,
    command = { "${wb:examples}/scale_work", "--workers", "{workers}", "--size", "{size}" },
    runs = 10,
    warmup = 1,
    seed = 1,
    timeout = wb.null,
  },
  types = { mode = "strong|weak", workers = "list|integer>=1", size = "integer>=1", command = "list",
    runs = "integer>=1", warmup = "integer>=0", seed = "integer", timeout = "number>0|null" },
  run = function(ctx)
    local cfg = ctx.cfg
    local workers = check_config(cfg)
    local p0 = workers[1]
    local sizes, commands = {}, {}
    for i, p in ipairs(workers) do
      sizes[i] = cfg.mode == "weak" and cfg.size * p // p0 or cfg.size
      commands[i] = { name = "workers=" .. p, argv = substitute(cfg.command, { workers = p, size = sizes[i] }) }
    end
    local c = wb.campaign.open(ctx)
    local names = {}
    for i, cmd in ipairs(commands) do names[i] = cmd.name end
    c:declare(names)
    if c:plan { sections = { { name = cfg.mode .. " scaling", cases = commands,
      subprocess_runs = #commands * (cfg.runs + cfg.warmup) } } } then
      return 0
    end
    local cpus, load = cpu_count(), load_average()
    local summary = wb.bench.run { commands = commands, runs = cfg.runs, warmup = cfg.warmup,
      order = "interleaved", seed = cfg.seed, timeout = cfg.timeout ~= wb.null and cfg.timeout or nil }
    local doc = wb.json.object()
    doc.schema_name, doc.schema_version = "wb.scaling", 1
    doc.created_at_utc, doc.wb_version = wb.clock.utc(), wb.version
    doc.mode = cfg.mode
    doc.command = wb.json.array(wb.util.deep_copy(cfg.command))
    doc.base_size = cfg.size
    doc.workers = wb.json.array(workers)
    doc.baseline_workers = p0
    doc.cpu_count = cpus
    doc.load_average = load or wb.null
    local settings = wb.json.object()
    settings.runs, settings.warmup, settings.order, settings.seed = cfg.runs, cfg.warmup, "interleaved", cfg.seed
    settings.ci_level, settings.resamples = CI_LEVEL, RESAMPLES
    doc.settings = settings
    doc.points = analyse(cfg, workers, sizes, summary, cpus)
    doc.notes = notes_for(cfg, doc.points, cpus, load)
    for _, pt in ipairs(doc.points) do
      local rec = c:record("workers=" .. pt.workers)
      rec.status = "success"
      rec.command_arguments = pt.argv
      rec.metrics = { wall_mean_seconds = pt.mean, speedup = pt.speedup, efficiency = pt.efficiency }
      rec.samples = { wall_mean_seconds = pt.samples }
    end
    local md = markdown(cfg, doc)
    local speedup_svg, efficiency_svg = chart(cfg, doc.points, "speedup"), chart(cfg, doc.points, "efficiency")
    c:write_json("scaling.json", doc)
    c:write("scaling.md", md)
    c:write("scaling.svg", speedup_svg .. "\n")
    c:write("summary.json", wb.report.json(summary))
    c:write("report.html", html(cfg, doc, summary, speedup_svg, efficiency_svg))
    c:finish()
    io.write(md, "\nreport: ", c.dir, "/report.html\n")
    return 0
  end,
}
