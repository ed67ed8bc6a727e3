-- Reports of a wb.bench summary (docs/internal/bench-summary-schema.md): JSON, CSV, Markdown,
-- hyperfine's --export-json format and a self-contained HTML page (lua/wb/html.lua), plus the
-- shared pieces they use (units, the summary table, comparison sentences, a Markdown table).
local json = require "wb.json"
local ordered_keys = require("wb.core").ordered_keys
local util = require "wb.util"

local M = {}

local NULL = json.null

local function val(v)
  if v == NULL then return nil end
  return v
end

-- v = get(t, k1, k2, ...) : t[k1][k2]... or nil when a step is missing or null
local function get(t, ...)
  for i = 1, select("#", ...) do
    if type(t) ~= "table" and type(t) ~= "userdata" then return nil end
    t = val(t[select(i, ...)])
  end
  return t
end
M.get = get

-- ---- numbers and units ------------------------------------------------------------------

-- s = report.number(x) : x exactly (shortest text that reads back as x); "" for nil
function M.number(x)
  x = val(x)
  if x == nil then return "" end
  if type(x) ~= "number" then return tostring(x) end
  if math.type(x) == "integer" then return string.format("%d", x) end
  if x ~= x or x == math.huge or x == -math.huge then return "" end
  for prec = 15, 17 do
    local s = string.format("%." .. prec .. "g", x)
    if tonumber(s) == x then return s end
  end
end

local TIME_UNITS = { { "µs", 1e6, 1e-3 }, { "ms", 1e3, 1 }, { "s", 1, math.huge } }
local MEM_UNITS = { { "KiB", 1, 1024 }, { "MiB", 1 / 1024, 1024 * 1024 }, { "GiB", 1 / 1048576, math.huge } }

local function pick_unit(units, values)
  local least
  for _, v in ipairs(values) do
    if v > 0 and (not least or v < least) then least = v end
  end
  for _, u in ipairs(units) do
    if least and least < u[3] then return { name = u[1], factor = u[2] } end
  end
  return { name = units[2][1], factor = units[2][2] }
end

-- unit = report.time_unit(seconds_list) : {name = "µs"|"ms"|"s", factor} suited to the smallest
-- positive value (the unit in which it is at least 1)
function M.time_unit(values) return pick_unit(TIME_UNITS, values) end

-- unit = report.memory_unit(kib_list) : {name = "KiB"|"MiB"|"GiB", factor}
function M.memory_unit(values) return pick_unit(MEM_UNITS, values) end

-- Decimals showing about four significant digits of the smallest value m (1 to 3 decimals).
local function decimals_for(m)
  if not m or m <= 0 then return 3 end
  return math.max(1, math.min(3, 3 - math.floor(math.log(m, 10))))
end

local function fixed(x, decimals)
  if x == nil then return "–" end
  return string.format("%." .. decimals .. "f", x)
end

-- ---- comparisons ------------------------------------------------------------------------

local function p_text(p)
  if p == nil then return nil end
  if p == 0 then return "p ≈ 0" end
  return "p = " .. string.format("%.2g", p)
end

-- parts = report.comparison_parts(c) : the pieces of a comparison sentence:
-- {name, reference, kind = "faster"|"slower"|"same", factor = "1.85×" | nil,
--  details = "95% CI 1.84–1.86, p = 2.1e-08"}; for "faster" the factor and interval are
-- reference/name so that both read as "N× faster".
function M.comparison_parts(c)
  local ratio, lo, hi = get(c, "ratio_mean"), get(c, "ci_lo"), get(c, "ci_hi")
  local kind = get(c, "verdict")
  if kind ~= "faster" and kind ~= "slower" then
    if kind == nil and ratio and lo and hi and (hi < 1 or lo > 1) then
      kind = hi < 1 and "faster" or "slower"
    else
      kind = "same"
    end
  end
  local details = {}
  local level = string.format("%g%% CI", (get(c, "ci_level") or 0.95) * 100)
  local factor
  if kind == "faster" and ratio and ratio > 0 then
    factor = string.format("%.2f×", 1 / ratio)
    if lo and hi and lo > 0 then details[#details + 1] = string.format("%s %.2f–%.2f", level, 1 / hi, 1 / lo) end
  elseif ratio then
    factor = string.format("%.2f×", ratio)
    if kind == "same" then details[#details + 1] = "ratio " .. string.format("%.2f", ratio) end
    if lo and hi then details[#details + 1] = string.format("%s %.2f–%.2f", level, lo, hi) end
  end
  details[#details + 1] = p_text(get(c, "p_value"))
  return { name = tostring(get(c, "name") or "?"), reference = tostring(get(c, "reference") or "?"),
    kind = kind, factor = factor, details = table.concat(details, ", ") }
end

-- s = report.comparison_sentence(c, code, strong) : the comparison as one sentence; code(s)
-- and strong(s) format a command name and the verdict (plain text when omitted)
function M.comparison_sentence(c, code, strong)
  code = code or tostring
  strong = strong or tostring
  local p = M.comparison_parts(c)
  local tail = (p.details ~= "" and " (" .. p.details .. ")" or "") .. (get(c, "note") and "; " .. get(c, "note") or "")
  if p.kind == "same" then
    return code(p.name) .. " shows " .. strong("no significant difference") .. " from "
        .. code(p.reference) .. tail
  end
  local verdict = p.factor and (p.factor .. " " .. p.kind) or p.kind
  return code(p.name) .. " is " .. strong(verdict) .. " than " .. code(p.reference) .. tail
end

-- ---- the summary table ------------------------------------------------------------------

-- model = report.model(summary) : the summary table shared by Markdown and HTML:
-- {columns = {{key, title, align}}, rows = {{name, command, cells = {key = text},
-- reference = bool, warnings, index, mean = seconds}}, unit, memory_unit, decimals, reference}
function M.model(summary)
  local commands = get(summary, "commands") or {}
  local means, rss, alloc, have_user, have_sys = {}, {}, {}, false, false
  for _, c in ipairs(commands) do
    means[#means + 1] = get(c, "stats", "wall", "mean")
    rss[#rss + 1] = get(c, "stats", "maxrss_kb", "mean")
    local a = get(c, "stats", "alloc_bytes", "mean")
    alloc[#alloc + 1] = a and a / 1024 -- KiB, as memory_unit takes them
    have_user = have_user or get(c, "stats", "user", "mean") ~= nil
    have_sys = have_sys or get(c, "stats", "sys", "mean") ~= nil
  end
  local unit, mem, amem = M.time_unit(means), M.memory_unit(rss), M.memory_unit(alloc)
  local least
  for _, m in ipairs(means) do
    if m > 0 then least = math.min(least or math.huge, m * unit.factor) end
  end
  local d = decimals_for(least)
  local ratios, reference = {}, get(summary, "settings", "reference")
  for _, c in ipairs(get(summary, "comparisons") or {}) do
    local name = get(c, "name")
    if name then ratios[name] = get(c, "ratio_mean") end
    reference = reference or get(c, "reference")
  end
  local has_cmp = next(ratios) ~= nil
  local u = " [" .. unit.name .. "]"
  local columns = { { key = "name", title = "Command", align = "l" },
    { key = "mean", title = "Mean ± σ" .. u, align = "r" },
    { key = "median", title = "Median" .. u, align = "r" },
    { key = "range", title = "Min … Max" .. u, align = "r" } }
  if have_user then columns[#columns + 1] = { key = "user", title = "User" .. u, align = "r" } end
  if have_sys then columns[#columns + 1] = { key = "sys", title = "Sys" .. u, align = "r" } end
  if #rss > 0 then columns[#columns + 1] = { key = "rss", title = "RSS [" .. mem.name .. "]", align = "r" } end
  if #alloc > 0 then columns[#columns + 1] = { key = "alloc", title = "Allocated [" .. amem.name .. "]", align = "r" } end
  if has_cmp then columns[#columns + 1] = { key = "relative", title = "Relative", align = "r" } end
  local rows = {}
  for i, c in ipairs(commands) do
    local w = get(c, "stats", "wall") or {}
    local function t(x) return x and x * unit.factor end
    local name = tostring(get(c, "name") or get(c, "command") or ("#" .. i))
    local mean, sd = t(get(w, "mean")), t(get(w, "stddev"))
    local cells = {
      mean = mean and (fixed(mean, d) .. (sd and (" ± " .. fixed(sd, d)) or "")) or "–",
      median = fixed(t(get(w, "median")), d),
      range = (get(w, "min") and get(w, "max")) and (fixed(t(w.min), d) .. " … " .. fixed(t(w.max), d))
          or "–",
      user = fixed(t(get(c, "stats", "user", "mean")), d),
      sys = fixed(t(get(c, "stats", "sys", "mean")), d),
      rss = fixed(get(c, "stats", "maxrss_kb", "mean") and get(c, "stats", "maxrss_kb", "mean") * mem.factor, 1),
      alloc = fixed(get(c, "stats", "alloc_bytes", "mean") and get(c, "stats", "alloc_bytes", "mean") / 1024 * amem.factor, 1),
    }
    if get(c, "maxrss_upper_bound") and cells.rss ~= "–" then cells.rss = "≤ " .. cells.rss end
    local is_ref = reference ~= nil and name == reference
    if is_ref then
      cells.relative = "1.00"
    elseif ratios[name] then
      cells.relative = string.format("%.2f", ratios[name])
    else
      cells.relative = ""
    end
    rows[i] = { name = name, command = get(c, "command"), cells = cells, reference = is_ref,
      warnings = get(c, "warnings") or {}, index = i, mean = get(w, "mean") }
  end
  return { columns = columns, rows = rows, unit = unit, memory_unit = mem, decimals = d,
    reference = reference }
end

-- ---- Markdown ---------------------------------------------------------------------------

-- report.md_code, report.md_text, report.table: the page kit's Markdown pieces (lua/wb/page.lua)
local page = require "wb.page"
M.md_code, M.md_text = page.md_code, page.md_text

-- text = report.table(rows [, {align = {"l"|"r"|"c", ...}}]) : a Markdown table, rows[1] the
-- header; cells are Markdown (converted with tostring, pipes and newlines made safe) padded to
-- aligned columns
function M.table(rows, opts) return page.md_table(rows, (opts and opts.align) or {}) end

-- s = report.previous_title(result) : the heading of a comparison with the previous run
function M.previous_title(result)
  return "Compared with the previous run (" .. tostring(result.base.path):gsub("/manifest%.json$", "") .. ")"
end

-- text = report.markdown(summary [, {terminal = true, previous, previous_text}]) : the summary
-- table, the comparisons as sentences, the comparison with the previous run (previous: a
-- wb.compare result; else previous_text, the campaign's line saying there is none and why), warnings (one line per distinct warning, naming the commands it is about); for the
-- terminal the warnings and headings are plain text, without Markdown's escapes
function M.markdown(summary, opts)
  local plain = opts and opts.terminal
  local model = M.model(summary)
  local rows, align = { {} }, {}
  for j, col in ipairs(model.columns) do
    rows[1][j], align[j] = col.title, col.align
  end
  for _, r in ipairs(model.rows) do
    local row = {}
    for j, col in ipairs(model.columns) do
      row[j] = col.key == "name" and (M.md_code(r.name) .. (r.reference and " (reference)" or ""))
          or r.cells[col.key]
    end
    rows[#rows + 1] = row
  end
  local out = { (M.table(rows, { align = align }):gsub("\n$", "")) }
  local cmps = get(summary, "comparisons") or {}
  if #cmps > 0 then
    out[#out + 1] = ""
    for _, c in ipairs(cmps) do
      out[#out + 1] = "- " .. M.comparison_sentence(c, M.md_code, function(s) return "**" .. s .. "**" end)
    end
  end
  local previous = opts and opts.previous
  if previous and #previous.rows > 0 then
    local title = M.previous_title(previous)
    out[#out + 1] = plain and ("\n" .. title .. "\n") or ("\n**" .. M.md_text(title) .. "**\n")
    out[#out + 1] = (require("wb.compare").markdown(previous):gsub("\n$", ""))
  elseif opts and opts.previous_text then
    out[#out + 1] = "\n" .. (plain and opts.previous_text or M.md_text(opts.previous_text))
  end
  local order, about = {}, {}
  for _, r in ipairs(model.rows) do
    for _, w in ipairs(r.warnings) do
      if not about[w] then order[#order + 1], about[w] = w, {} end
      table.insert(about[w], M.md_code(r.name))
    end
  end
  if #order > 0 then out[#out + 1] = "\n**Warnings**\n" end
  for _, w in ipairs(order) do
    local names = #about[w] == #model.rows and #model.rows > 1 and "all commands" or table.concat(about[w], ", ")
    out[#out + 1] = "- " .. names .. ": " .. (plain and tostring(w) or M.md_text(w))
  end
  return table.concat(out, "\n") .. "\n"
end

-- ---- CSV --------------------------------------------------------------------------------

-- s = report.csv_field(v) : v as an RFC 4180 field (quoted when it holds , " CR or LF)
function M.csv_field(v)
  local s = type(v) == "number" and M.number(v) or (val(v) == nil and "" or tostring(v))
  if s:find('[,"\r\n]') then s = '"' .. s:gsub('"', '""') .. '"' end
  return s
end

local function csv_line(fields)
  local out = {}
  for i, f in ipairs(fields) do out[i] = M.csv_field(f) end
  return table.concat(out, ",") .. "\n"
end

local function parameter_names(commands)
  local names, seen = {}, {}
  for _, c in ipairs(commands) do
    local params = get(c, "parameters") or {}
    for _, k in ipairs(util.keys(params)) do
      if not seen[k] then seen[k], names[#names + 1] = true, k end
    end
  end
  return names
end
M.parameter_names = parameter_names

local STAT_COLUMNS = { "n", "mean", "stddev", "median", "min", "max", "mad", "p5", "p95" }

-- text = report.csv(summary) : one row per command; columns name, command, parameter_<p>...,
-- n, mean, stddev, median, min, max, mad, p5, p95 (wall, seconds), user_mean, sys_mean,
-- maxrss_kb_mean
function M.csv(summary)
  local commands = get(summary, "commands") or {}
  local params = parameter_names(commands)
  local header = { "name", "command" }
  for _, p in ipairs(params) do header[#header + 1] = "parameter_" .. p end
  for _, k in ipairs(STAT_COLUMNS) do header[#header + 1] = k end
  for _, k in ipairs { "user_mean", "sys_mean", "maxrss_kb_mean" } do header[#header + 1] = k end
  local out = { csv_line(header) }
  for _, c in ipairs(commands) do
    local row = { get(c, "name"), get(c, "command") }
    for _, p in ipairs(params) do row[#row + 1] = get(c, "parameters", p) or "" end
    for _, k in ipairs(STAT_COLUMNS) do row[#row + 1] = get(c, "stats", "wall", k) or "" end
    row[#row + 1] = get(c, "stats", "user", "mean") or ""
    row[#row + 1] = get(c, "stats", "sys", "mean") or ""
    row[#row + 1] = get(c, "stats", "maxrss_kb", "mean") or ""
    out[#out + 1] = csv_line(row)
  end
  return table.concat(out)
end

-- next_piece = report.csv_runs_pieces(summary) : a function returning runs.csv (see csv_runs) a
-- few hundred rows at a time, then nil; what wb.fs.write takes to stream a file
function M.csv_runs_pieces(summary)
  local commands = get(summary, "commands") or {}
  local header_due = true
  local ci, i = 1, 0
  local num, name, s, n = M.number, nil, nil, 0
  return function()
    if header_due then
      header_due = false
      return csv_line { "command", "run", "wall", "user", "sys", "maxrss_kb", "exit_code" }
    end
    local rows = {}
    while #rows < 500 do
      if i >= n then
        local c = commands[ci]
        if not c then break end
        ci, i = ci + 1, 0
        s = get(c, "samples") or {}
        name = M.csv_field(get(c, "name") or get(c, "command"))
        n = #(get(s, "wall") or {})
      else
        i = i + 1
        rows[#rows + 1] = string.format("%s,%d,%s,%s,%s,%s,%s\n", name, i, num(get(s, "wall", i)),
          num(get(s, "user", i)), num(get(s, "sys", i)), num(get(s, "maxrss_kb", i)), num(get(s, "exit_code", i)))
      end
    end
    if #rows == 0 then return nil end
    return table.concat(rows)
  end
end

-- text = report.csv_runs(summary) : one row per run: command (the command's name), run
-- (1-based), wall, user, sys, maxrss_kb, exit_code
function M.csv_runs(summary)
  local out = {}
  for piece in M.csv_runs_pieces(summary) do out[#out + 1] = piece end
  return table.concat(out)
end

-- ---- JSON -------------------------------------------------------------------------------

local ARRAY = { array = true }
local STAT = { keys = { "n", "min", "max", "mean", "stddev", "median", "mad", "p5", "p95", "q1", "q3" } }
local SUMMARY_SHAPE = {
  keys = { "schema_name", "schema_version", "created_at_utc", "wb_version", "settings", "host",
    "commands", "comparisons", "scan" },
  fields = {
    settings = { keys = { "runs", "min_runs", "min_time", "warmup", "shell", "order", "seed",
      "reference", "shell_spawn_seconds", "alloc_runs" } },
    commands = { array = true, item = {
      keys = { "name", "command", "argv", "cwd", "parameters", "samples", "stats", "interference", "maxrss_upper_bound",
        "alloc", "outliers", "warnings" },
      fields = {
        argv = ARRAY, outliers = ARRAY, warnings = ARRAY,
        samples = { keys = { "wall", "user", "sys", "maxrss_kb", "alloc_bytes", "exit_code", "runq", "wall_own",
          "others_cpu", "runq_scope" },
          fields = { wall = ARRAY, user = ARRAY, sys = ARRAY, maxrss_kb = ARRAY, alloc_bytes = ARRAY, exit_code = ARRAY,
            runq = ARRAY, wall_own = ARRAY, others_cpu = ARRAY } },
        alloc = { keys = { "runs", "allocations", "processes", "foreign", "skipped" } },
        interference = { keys = { "runq_mean_seconds", "runq_share", "parallelism", "others_cpu_mean", "runq_scope" } },
        stats = { keys = { "wall", "user", "sys", "maxrss_kb", "alloc_bytes" },
          fields = { wall = STAT, user = STAT, sys = STAT, maxrss_kb = STAT, alloc_bytes = STAT } },
      } } },
    comparisons = { array = true, item = { keys = { "name", "reference", "ratio_mean",
      "ratio_median", "ci_lo", "ci_hi", "ci_level", "p_value", "verdict", "text", "note", "net_of_run_queue_delay" } } },
    scan = { keys = { "parameter", "values" }, fields = { values = ARRAY } },
  },
}

-- A plain (not ordered) non-empty table whose keys are exactly 1..#v.
local function is_sequence(v)
  if ordered_keys(v) then return false end
  local n = 0
  for _ in next, v do n = n + 1 end
  return n > 0 and n == #v
end

-- A copy of v as ordered objects and marked arrays: keys named by the shape first, in its
-- order, then the others in the table's own order (ordered tables) or sorted.
local function canonical(v, shape)
  if type(v) ~= "table" then return v end
  shape = shape or {}
  if util.is_list(v) or (shape.array and next(v) == nil) or is_sequence(v) then
    local out = json.array()
    for i, x in ipairs(v) do out[i] = canonical(x, shape.item) end
    return out
  end
  local out, done = json.object(), {}
  local fields = shape.fields or {}
  local function put(k)
    if v[k] ~= nil and not done[k] then
      done[k] = true
      out[k] = canonical(v[k], fields[k])
    end
  end
  for _, k in ipairs(shape.keys or {}) do put(k) end
  for _, k in ipairs(util.keys(v)) do put(k) end
  return out
end

local function summary_document(summary) return canonical(summary, SUMMARY_SHAPE) end

-- text = report.json(summary) : the summary as pretty JSON, keys in schema order
function M.json(summary)
  return json.encode(summary_document(summary), { pretty = true }) .. "\n"
end

-- A list of the values of xs (a table or wb.stats.samples), each through f.
local function mapped(xs, f)
  local out = json.array()
  for i = 1, #xs do out[i] = f(xs[i]) end
  return out
end

local function hyperfine_document(summary)
  local results = json.array()
  for _, c in ipairs(get(summary, "commands") or {}) do
    local w = get(c, "stats", "wall") or {}
    local r = json.object()
    r.command = get(c, "name") or get(c, "command")
    r.mean = get(w, "mean") or NULL
    local times = get(c, "samples", "wall") or json.array()
    local n = get(w, "n") or #times
    r.stddev = (n > 1 and get(w, "stddev")) or NULL
    r.median = get(w, "median") or NULL
    r.user = get(c, "stats", "user", "mean") or NULL
    r.system = get(c, "stats", "sys", "mean") or NULL
    r.min = get(w, "min") or NULL
    r.max = get(w, "max") or NULL
    -- wb.stats.samples are written as they are; tables read back from a summary are copied
    r.times = type(times) == "userdata" and times or mapped(times, function(t) return t end)
    -- an upper bound (wb's own peak RSS standing in for a small child's) is no measurement of
    -- the command: hyperfine's field is left out, as a reader would compare it
    local rss = get(c, "maxrss_upper_bound") ~= true and get(c, "samples", "maxrss_kb") or nil
    if type(rss) == "userdata" and rss:kind() == "integer" then
      r.memory_usage_byte = rss:scaled(1024)
    elseif rss then
      r.memory_usage_byte = mapped(rss, function(kb)
        return val(kb) and math.tointeger(math.floor(kb * 1024 + 0.5)) or NULL
      end)
    end
    local codes = get(c, "samples", "exit_code")
    if type(codes) == "userdata" and #codes == #times then
      r.exit_codes = codes
    else
      codes = codes or {}
      r.exit_codes = json.array()
      for i = 1, #times do r.exit_codes[i] = codes[i] == nil and NULL or codes[i] end
    end
    local names = parameter_names { c }
    if #names > 0 then
      r.parameters = json.object()
      for _, k in ipairs(names) do r.parameters[k] = M.number(get(c, "parameters", k)) end
    end
    results[#results + 1] = r
  end
  local doc = json.object()
  doc.results = results
  return doc
end

-- text = report.hyperfine_json(summary) : hyperfine's --export-json layout: {"results": [{command,
-- mean, stddev, median, user, system, min, max, times, memory_usage_byte, exit_codes
-- [, parameters]}]}; command is the command's name, parameter values are strings, stddev is
-- null for a single run; memory_usage_byte is left out when the peak RSS is only an upper bound
function M.hyperfine_json(summary)
  return json.encode(hyperfine_document(summary), { pretty = true }) .. "\n"
end

-- ---- HTML and files ---------------------------------------------------------------------

-- text = report.html(summary [, {title, blocks, previous}]) : a self-contained HTML page (lua/wb/html.lua)
function M.html(summary, opts)
  return require("wb.html").page(summary, opts)
end

-- The files write_all writes, with the function that formats each.
M.FILES = {
  { "summary.json", "json" }, { "summary.md", "markdown" }, { "summary.csv", "csv" },
  { "runs.csv", "csv_runs" }, { "hyperfine.json", "hyperfine_json" }, { "report.html", "html" },
}

-- How write_all streams the large formats, so long benches do not hold a whole file in memory.
local STREAMED = {
  json = function(path, summary) return json.write(path, summary_document(summary), { pretty = true }) end,
  hyperfine_json = function(path, summary) return json.write(path, hyperfine_document(summary), { pretty = true }) end,
  csv_runs = function(path, summary) return require("wb.fs").write(path, M.csv_runs_pieces(summary)) end,
}

-- paths, err = report.write_all(dir, summary [, opts]) : writes every format into dir (created
-- if missing) atomically; opts go to report.html; returns the paths written, or nil, err
function M.write_all(dir, summary, opts)
  local fs = require "wb.fs"
  local ok, err = fs.mkdir_p(dir)
  if not ok then return nil, err end
  local paths = {}
  -- formatting makes many short-lived strings: a collection cycle starts whenever the heap has
  -- grown by a quarter (not doubled) and works four times as fast, so that they do not pile up
  -- in peak memory
  local pause, stepmul = collectgarbage("setpause", 125), collectgarbage("setstepmul", 400)
  local _ <close> = setmetatable({}, { __close = function()
    collectgarbage("setpause", pause)
    collectgarbage("setstepmul", stepmul)
  end })
  for _, f in ipairs(M.FILES) do
    local path = dir:gsub("/+$", "") .. "/" .. f[1]
    local stream = STREAMED[f[2]]
    if stream then
      ok, err = stream(path, summary)
    else
      ok, err = fs.write(path, M[f[2]](summary, opts))
    end
    if not ok then return nil, err end
    paths[#paths + 1] = path
    collectgarbage() -- each document is large for long benches: free it before the next
  end
  local campaign = require "wb.campaign" -- the one redaction every run-directory writer has
  ok, err = campaign.redact_files(paths, campaign.secrets())
  if not ok then return nil, err end
  return paths
end

return M
