local T = require "wb.test"
local wb = require "wb"
local report = require "wb.report"
local json = require "wb.json"

local root = T.root()
local FIXTURE = root .. "/tests/fixtures/report/summary.json"
local HOSTILE = '<script>alert(1)</script> & "x"'

local function load() return assert(json.read(FIXTURE)) end

-- RFC 4180 reader: rows of fields.
local function parse_csv(text)
  local rows, row, field, i, quoted = {}, {}, {}, 1, false
  while i <= #text do
    local ch = text:sub(i, i)
    if quoted then
      if ch == '"' and text:sub(i + 1, i + 1) == '"' then
        field[#field + 1], i = '"', i + 1
      elseif ch == '"' then
        quoted = false
      else
        field[#field + 1] = ch
      end
    elseif ch == '"' then
      quoted = true
    elseif ch == "," then
      row[#row + 1], field = table.concat(field), {}
    elseif ch == "\n" then
      row[#row + 1], field = table.concat(field), {}
      rows[#rows + 1], row = row, {}
    else
      field[#field + 1] = ch
    end
    i = i + 1
  end
  return rows
end

local function rename(s, old, new)
  for _, c in ipairs(s.commands) do
    if c.name == old then c.name, c.command = new, new end
  end
  if s.settings.reference == old then s.settings.reference = new end
  for _, c in ipairs(s.comparisons) do
    if c.name == old then c.name = new end
    if c.reference == old then c.reference = new end
  end
  return s
end

T.case("markdown: exact text for the fixture", function()
  local expected = assert(wb.fs.read(root .. "/tests/fixtures/report/summary.md"))
  T.eq(report.markdown(load()), expected)
end)

T.case("markdown: units follow the table's smallest mean", function()
  local s = load()
  for _, c in ipairs(s.commands) do
    for _, k in ipairs { "min", "max", "mean", "stddev", "median" } do c.stats.wall[k] = c.stats.wall[k] / 1000 end
  end
  local md = report.markdown(s)
  T.match(md, "Mean ± σ %[µs%]")
  T.match(md, "| +812%.5 ± 3%.4 |")
  for _, c in ipairs(s.commands) do c.stats.wall.mean = c.stats.wall.mean * 1e6 end
  T.match(report.markdown(s), "Mean ± σ %[s%]")
  T.eq(report.time_unit { 0.5e-3, 2 }.name, "µs")
  T.eq(report.time_unit { 0.02, 3 }.name, "ms")
  T.eq(report.time_unit { 1.5 }.name, "s")
  T.eq(report.memory_unit { 512 }.name, "KiB")
  T.eq(report.memory_unit { 4 * 1024 * 1024 }.name, "GiB")
end)

T.case("comparison sentences: faster, slower, no difference, derived verdict", function()
  local function c(t) return json.object(t) end
  T.eq(report.comparison_sentence(c { name = "B", reference = "A", ratio_mean = 1.98, ci_lo = 1.95,
    ci_hi = 2.01, ci_level = 0.95, p_value = 1e-7, verdict = "slower" }),
    "B is 1.98× slower than A (95% CI 1.95–2.01, p = 1e-07)")
  T.eq(report.comparison_sentence(c { name = "B", reference = "A", ratio_mean = 0.5, ci_lo = 0.4,
    ci_hi = 0.625, ci_level = 0.99, p_value = 0.0042, verdict = "faster" }),
    "B is 2.00× faster than A (99% CI 1.60–2.50, p = 0.0042)")
  T.eq(report.comparison_sentence(c { name = "B", reference = "A", ratio_mean = 1.01, ci_lo = 0.98,
    ci_hi = 1.04, p_value = 0.41, verdict = "no significant difference" }),
    "B shows no significant difference from A (ratio 1.01, 95% CI 0.98–1.04, p = 0.41)")
  T.eq(report.comparison_sentence(c { name = "B", reference = "A", ratio_mean = 1.5, ci_lo = 1.2, ci_hi = 1.8 }),
    "B is 1.50× slower than A (95% CI 1.20–1.80)")
  T.eq(report.comparison_sentence(c { name = "B", reference = "A", ratio_mean = 1.2, verdict = "slower" },
    report.md_code, function(s) return "*" .. s .. "*" end), "`B` is *1.20× slower* than `A`")
end)

T.case("markdown table helper: alignment, padding, escaping", function()
  T.eq(report.table({ { "a", "bb", "c" }, { "µs", "x|y", 1 } }, { align = { "l", "r", "c" } }),
    "| a   |   bb |  c  |\n" ..
    "| :-- | ---: | :-: |\n" ..
    "| µs  | x\\|y |  1  |\n")
  T.eq(report.md_code("a`b"), "``a`b``")
  T.eq(report.md_code("`x"), "`` `x ``")
  T.eq(report.md_text("a*b_c <d>"), "a\\*b\\_c \\<d\\>")
end)

T.case("csv: a command with a comma and a quote is quoted as RFC 4180 says", function()
  local text = report.csv(load())
  local lines = {}
  for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
  T.eq(#lines, 4)
  T.eq(lines[1], "name,command,parameter_threads,n,mean,stddev,median,min,max,mad,p5,p95,user_mean,"
    .. "sys_mean,maxrss_kb_mean")
  T.match(lines[2], '^xz %-T1,"xz %-T1 %-6 %-c ""logs,2026%.tar""",1,10,0%.81246,')
  local rows = parse_csv(text)
  T.eq(rows[2][2], 'xz -T1 -6 -c "logs,2026.tar"')
  T.eq(#rows[2], #rows[1])
  T.eq(rows[4][3], "4")
  T.eq(tonumber(rows[4][5]), 0.26065)
  T.eq(tonumber(rows[3][15]), 172035)
  T.eq(report.csv_field("plain"), "plain")
  T.eq(report.csv_field("a\nb"), '"a\nb"')
  T.eq(report.csv_field(0.1), "0.1")
  T.eq(report.csv_field(json.null), "")
end)

T.case("csv_runs: one row per run", function()
  local rows = parse_csv(report.csv_runs(load()))
  T.eq(rows[1], { "command", "run", "wall", "user", "sys", "maxrss_kb", "exit_code" })
  T.eq(#rows, 1 + 30)
  T.eq(rows[2], { "xz -T1", "1", "0.8121", "0.7903", "0.0192", "98304", "0" })
  T.eq(rows[31], { "xz -T4", "10", "0.2566", "0.9517", "0.0322", "319492", "0" })
end)

T.case("hyperfine json: hyperfine's structure and key names", function()
  local text = report.hyperfine_json(load())
  local doc = assert(json.decode(text))
  T.eq(wb.ordered_keys(doc), { "results" })
  T.eq(#doc.results, 3)
  local r = doc.results[2]
  T.eq(wb.ordered_keys(r), { "command", "mean", "stddev", "median", "user", "system", "min", "max",
    "times", "memory_usage_byte", "exit_codes", "parameters" })
  T.eq(r.command, "xz -T2")
  T.eq(r.mean, 0.43945)
  T.eq(r.system, 0.02403)
  T.eq(#r.times, 10)
  T.eq(r.times[1], 0.4402)
  T.eq(r.memory_usage_byte[1], 172032 * 1024)
  T.eq(r.exit_codes, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 })
  T.eq(r.parameters.threads, "2", "hyperfine writes parameter values as strings")
  local s = load()
  s.commands[1].parameters = json.object()
  s.commands[1].samples.wall = json.array { 0.5 }
  s.commands[1].stats.wall.n = 1
  r = json.decode(report.hyperfine_json(s)).results[1]
  T.eq(r.parameters, nil, "no parameters key without parameters")
  T.eq(r.stddev, json.null, "stddev is null for one run")
  T.eq(r.exit_codes, { 0 })
end)

T.case("json: round trip, schema_name and schema_version first", function()
  local s = load()
  local text = report.json(s)
  T.match(text, '^{\n  "schema_name": "wb.bench",\n  "schema_version": 1,\n')
  T.eq(json.decode(text), s)
  T.eq(report.json(json.decode(text)), text, "stable")
end)

T.case("json: plain Lua tables come out in schema order", function()
  local s = {
    commands = { { warnings = {}, outliers = {}, name = "a", parameters = {}, command = "a" } },
    scan = { values = { 1, 2 }, parameter = "n" },
    schema_version = 1, schema_name = "wb.bench", comparisons = {}, zeta = true,
  }
  local doc = json.decode(report.json(s))
  T.eq(wb.ordered_keys(doc), { "schema_name", "schema_version", "commands", "comparisons", "scan", "zeta" })
  T.eq(wb.ordered_keys(doc.commands[1]), { "name", "command", "parameters", "outliers", "warnings" })
  T.match(report.json(s), '"outliers": %[%]')
  T.match(report.json(s), '"parameters": {}')
  T.match(report.json(s), '"comparisons": %[%]')
end)

T.case("html: table, three charts, self-contained", function()
  local html = report.html(load())
  T.match(html, "^<!DOCTYPE html>")
  T.match(html, "<table>")
  T.match(html, "<td class=\"r\">812%.5 ± 3%.4</td>")
  T.match(html, "Mean ± σ %[ms%]")
  T.eq(T.count(html, "<svg "), 3)
  T.match(html, "<title>Distribution of wall time per command</title>")
  T.match(html, "<title>Mean time relative to the reference</title>")
  T.match(html, "<title>Mean wall time by threads</title>")
  T.match(html, "xz %-T{threads}", "the scan series is labelled by its template")
  T.match(html, "1%.85× faster")
  T.match(html, "1 outlier %(run 7%)")
  T.match(html, "host <b>bench%-01</b>")
  local rest = html:gsub('xmlns="http://www%.w3%.org/2000/svg"', "")
  T.ok(not rest:find("http://", 1, true), "no http:// besides the SVG namespace")
  T.ok(not rest:find("https://", 1, true), "no https://")
  T.ok(not html:find("<script", 1, true), "no script")
  T.ok(not html:find("<link", 1, true), "no link")
  T.ok(not html:find("%ssrc="), "no src attribute")
  T.ok(not html:find("url%("), "no CSS url()")
end)

T.case("html: a hostile command name is escaped everywhere", function()
  local s = rename(load(), "xz -T1", HOSTILE)
  local html = report.html(s, { title = "Report " .. HOSTILE })
  T.ok(not html:find("<script", 1, true), "no raw <script")
  T.ok(not html:find(HOSTILE, 1, true), "no raw name")
  local escaped = "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;"
  T.match(html, "<title>Report " .. escaped:gsub("%p", "%%%0") .. "</title>")
  T.ok(T.count(html, escaped) >= 6, "table, comparisons, charts, title, settings")
  local md = report.markdown(s)
  T.match(md, "| `<script>alert%(1%)</script> & \"x\"` %(reference%) |")
  local rows = parse_csv(report.csv(s))
  T.eq(rows[2][1], HOSTILE)
  T.eq(rows[2][2], HOSTILE)
  T.eq(json.decode(report.hyperfine_json(s)).results[1].command, HOSTILE)
end)

T.case("html: without comparisons or scan only the distribution is drawn", function()
  local s = load()
  s.comparisons = json.array()
  s.scan = json.null
  local html = report.html(s)
  T.eq(T.count(html, "<svg "), 1)
  T.ok(not html:find("Relative", 1, true), "no relative column")
  T.ok(not report.markdown(s):find("Relative", 1, true))
end)

T.case("scan groups: one series per command template", function()
  local html = require "wb.html"
  local s = load()
  local extra = {}
  for i, c in ipairs(s.commands) do
    local d = wb.util.deep_copy(c)
    d.name = "zstd -T" .. c.parameters.threads .. " -19"
    d.command = d.name
    extra[i] = d
  end
  for _, d in ipairs(extra) do s.commands[#s.commands + 1] = d end
  local groups, numeric = html.scan_groups(s)
  T.ok(numeric)
  T.eq(#groups, 2)
  T.eq(groups[1].label, "xz -T{threads}")
  T.eq(groups[2].label, "zstd -T{threads} -19")
  T.eq(#groups[2].points, 3)
  local page = report.html(s)
  T.match(page, "zstd %-T{threads} %-19")
  s.scan.values = json.array { "fast", "slow" }
  s.scan.parameter = "mode"
  s.commands = json.array { s.commands[1], s.commands[2] }
  s.commands[1].parameters, s.commands[2].parameters = json.object { mode = "fast" }, json.object { mode = "slow" }
  s.commands[1].name, s.commands[2].name = "run --mode=fast", "run --mode=slow"
  s.commands[1].command, s.commands[2].command = s.commands[1].name, s.commands[2].name
  groups, numeric = html.scan_groups(s)
  T.ok(not numeric)
  T.eq(#groups, 1)
  T.eq(groups[1].label, "run --mode={mode}")
  T.match(report.html(s), ">slow</text>")
end)

T.case("write_all: every format into a new directory", function()
  local dir = T.tmpdir() .. "/a/b"
  local paths = assert(report.write_all(dir, load()))
  T.eq(#paths, 6)
  for _, name in ipairs { "summary.json", "summary.md", "summary.csv", "runs.csv", "hyperfine.json", "report.html" } do
    local data = assert(wb.fs.read(dir .. "/" .. name), name)
    T.ok(#data > 100, name .. " has content")
  end
  T.eq(paths[1], dir .. "/summary.json")
  T.eq(assert(json.read(dir .. "/summary.json")), load())
  T.eq(assert(wb.fs.read(dir .. "/summary.md")), assert(wb.fs.read(root .. "/tests/fixtures/report/summary.md")))
  local ok, err = report.write_all("/proc/version/x", load())
  T.eq(ok, nil)
  T.match(err, "/proc/version")
end)

T.case("sparse summaries: missing stats, samples and sections still render", function()
  local s = json.decode([[{"schema_name": "wb.bench", "schema_version": 1,
    "commands": [{"name": "a", "command": "a", "parameters": {},
                  "stats": {"wall": {"n": 1, "mean": 0.002, "min": 0.002, "max": 0.002, "stddev": null}}},
                 {"name": "b"}],
    "scan": null}]])
  local md = report.markdown(s)
  T.match(md, "| `a` +| +2%.000 |")
  T.match(md, "| `b` +| +– |")
  T.ok(not md:find("User", 1, true), "no user column without user times")
  T.eq(parse_csv(report.csv(s))[2][1], "a")
  T.eq(#parse_csv(report.csv_runs(s)), 1)
  local hf = json.decode(report.hyperfine_json(s))
  T.eq(hf.results[1].stddev, json.null)
  T.eq(#hf.results[2].times, 0)
  local html = report.html(s)
  T.eq(T.count(html, "<svg "), 0)
  T.match(html, "fastest <code>a</code>")
  T.eq(json.decode(report.json(s)), s)
end)

T.case("html: a long bench draws at most 500 evenly spaced runs, named by their run numbers", function()
  local s = load()
  local c = s.commands[1]
  local wall = wb.stats.samples(1200)
  for i = 1, 1200 do wall:add(0.8 + (i % 7) * 0.001) end
  c.samples.wall = wall
  c.outliers = json.array()
  local html = report.html(s)
  T.match(html, "of more than 500 runs, at most 500 evenly spaced ones")
  T.match(html, "<title>run 601: ")
  T.match(html, "<title>run 1198: ")
  T.ok(not html:find("<title>run 602: ", 1, true), "run 602 is not drawn (every third run is)")
  T.ok(not html:find("<title>run 1200: ", 1, true))
  local before = load()
  T.eq(T.count(html, "<circle") - T.count(report.html(before), "<circle"), 400 - #before.commands[1].samples.wall,
    "every third of 1,200 runs")
end)
