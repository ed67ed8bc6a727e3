local T = require "wb.test"
local scan = require "wb.scan"
local fs = require "wb.fs"

local function write(dir, name, text)
  local p = dir .. "/" .. name
  assert(fs.write(p, text))
  return p
end

local function scan_text(text, rules, opts)
  local d = T.tmpdir()
  local spec = { rules = rules }
  for k, v in pairs(opts or {}) do spec[k] = v end
  return assert(scan.file(write(d, "log", text), spec))
end

T.case("number: units, counts and booleans", function()
  local cases = {
    { "0.382s", 0.382, "s" }, { "123.4ms", 0.1234, "s" }, { "12µs", 12e-6, "s" }, { "12μs", 12e-6, "s" },
    { "12us", 12e-6, "s" }, { "5ns", 5e-9, "s" }, { "2s", 2.0, "s" }, { "1.5e-3s", 0.0015, "s" },
    { "5000", 5000, "" }, { "-3", -3, "" }, { "+2.5", 2.5, "" }, { "1e3", 1000.0, "" }, { ".5", 0.5, "" },
    { "5.", 5.0, "" }, { "0.000800", 0.0008, "" }, { "true", 1, "bool" }, { "false", 0, "bool" },
  }
  for _, c in ipairs(cases) do
    local x, unit = scan.number(c[1])
    T.eq(x, c[2], c[1])
    T.eq(unit, c[3], c[1] .. " unit")
  end
  T.eq(math.type(scan.number("5000")), "integer")
  T.eq(math.type(scan.number("5000.0")), "float")
  for _, s in ipairs({ "", "abc", "1.2.3", "12m", "s", ".", "-", "1e", "12 s", " 12", "0x10", "1,5", "NaN",
    "True", "12sec", "1e5x", "--1", "12µ" }) do
    T.eq(scan.number(s), nil, string.format("%q", s))
  end
end)

T.case("number: correctly rounded, as strtod", function()
  local fixed = { "0.1", "0.3", "0.000800", "123456789.123456", "9007199254740993", "12345678901234567890",
    "1e-300", "1e300", "2.2250738585072014e-308", "0.1e-20", "7.0e22", "1234567890123456789e-5" }
  for _, s in ipairs(fixed) do T.eq(scan.number(s), tonumber(s) + 0.0, s) end
  math.randomseed(7)
  for _ = 1, 3000 do
    local s = string.format("%d.%0" .. math.random(1, 9) .. "d", math.random(0, 99999), math.random(0, 999999))
    T.eq(scan.number(s), tonumber(s), s)
    T.eq(scan.number(s .. "ms"), tonumber(s .. "e-3"), s .. "ms")
  end
end)

T.case("tokens and fields: key=value only, bare tokens and odd spacing skipped", function()
  local line = "[TAG]  a=1   b=x=y path(shared)\t=bad c= \t d=2.5s  "
  T.eq(scan.tokens(line), { { "a", "1" }, { "b", "x=y" }, { "c", "" }, { "d", "2.5s" } })
  local f = scan.fields("k=1 k=2 z=3")
  T.eq(f.k, "2")
  T.eq(require("wb.core").ordered_keys(f), { "k", "z" })
  T.eq(scan.tokens(""), {})
  T.eq(scan.tokens("   "), {})
end)

T.case("file: per-key sum, count, min, max of the chosen kinds", function()
  local text = table.concat({
    "[E] rows=10 a=0.5s b=2ms ok=true path(shared)",
    "[E] rows=20 a=1.5s b=4ms ok=false note=hello",
    "[E] rows=5 a=0.25s",
    "[X] a=100s",
    "",
  }, "\n")
  local rules = { { tag = "[E]", name = "t", sum = "time" }, { tag = "[E]", name = "c", sum = "count" },
    { tag = "[E]", name = "n", sum = "number" }, { tag = "[E]", name = "all", sum = "all" } }
  local r = scan_text(text, rules)
  T.eq(r.lines, 4)
  T.eq(r.bytes, #text)
  local t = r.rules.t
  T.eq(t.n, 3)
  T.eq(t.keys.a, { sum = 2.25, count = 3, min = 0.25, max = 1.5 })
  T.eq(t.keys.b, { sum = 0.006, count = 2, min = 0.002, max = 0.004 })
  T.eq(require("wb.core").ordered_keys(t.keys), { "a", "b" })
  T.eq(r.rules.c.keys.rows, { sum = 35.0, count = 3, min = 5.0, max = 20.0 })
  T.eq(r.rules.c.keys.a, nil)
  T.eq(require("wb.core").ordered_keys(r.rules.n.keys), { "rows", "a", "b" })
  T.eq(r.rules.all.keys.ok, { sum = 1.0, count = 2, min = 0.0, max = 1.0 })
  T.eq(r.rules[1], t)
end)

T.case("file: sums are exact decimal sums, independent of order", function()
  local n = 100000
  local r = scan_text(string.rep("[T] x=0.1s y=0.000001s\n", n), { { tag = "[T]", sum = "time" } })
  T.eq(r.rules[1].keys.x.sum, 10000.0)
  T.eq(r.rules[1].keys.y.sum, 0.1)
  local mixed = scan_text("[T] x=0.5s\n[T] x=0.25s\n[T] x=1s\n[T] x=2ms\n[T] x=3us\n", { { tag = "[T]", sum = "time" } })
  T.eq(mixed.rules[1].keys.x, { sum = 1.752003, count = 5, min = 0.000003, max = 1.0 })
end)

T.case("file: carriage returns split lines; a tag counts only where a line or segment starts", function()
  local text = "\r 10%|#  | 1/10\r 20%|## | 2/10\r[T] a=1s\n" -- after progress on the same line
    .. "[T] a=2s\r\n" -- CRLF
    .. " 50%|#####| [T] a=100s\n" -- mid-segment: ignored
    .. "INFO saw [T] a=100s in the log\n" -- mid-line: ignored
    .. "\r                    \r[T] a=4s\n" -- tqdm.write clearing the bar first
    .. "[T] a=8s" -- no final newline
  local r = scan_text(text, { { tag = "[T]", sum = "time" } })
  T.eq(r.rules[1].n, 4)
  T.eq(r.rules[1].keys.a.sum, 15.0)
  T.eq(r.lines, 6)
end)

T.case("file: words, keep first/last, events with line values and distributions", function()
  local lines = {
    "[P] chr1: pipeline_profile rows=1 t=1.000s",
    "[P] concurrency_plan workers=1",
    "[P] chr2: pipeline_profile rows=2 t=2.000s",
    "[P] chr2: pipeline_profile_extra rows=9",
  }
  math.randomseed(3)
  local takes = {}
  for i = 1, 1001 do
    takes[i] = math.random(1, 100000) / 1000
    lines[#lines + 1] = string.format("[L] take row_ids=5 seconds=%.3f", takes[i])
    if i % 3 == 0 then lines[#lines + 1] = string.format("[L] open path(shared) open_s=0.5 seconds=%.3f", 1.0) end
  end
  lines[#lines + 1] = "[L] open_breakdown manifest_s=0.1"
  lines[#lines + 1] = "[L] scan rows=3 scan_s=2"
  lines[#lines + 1] = "[L] rows=3 seconds=1"
  local r = scan_text(table.concat(lines, "\n") .. "\n", {
    { tag = "[P]", name = "last", word = "pipeline_profile", keep = "last" },
    { tag = "[P]", name = "first", word = "pipeline_profile", keep = "first" },
    { tag = "[L]", name = "lance", group = "event", value = { "seconds", "open_s", "scan_s" }, collect = { "take" } },
  })
  T.eq(r.rules.last.line, "[P] chr2: pipeline_profile rows=2 t=2.000s")
  T.eq(r.rules.last.n, 2)
  T.eq(r.rules.first.line, "[P] chr1: pipeline_profile rows=1 t=1.000s")
  local g = r.rules.lance.groups
  T.eq(require("wb.core").ordered_keys(g), { "take", "open", "open_breakdown", "scan", "" })
  T.eq(g.open.n, 333)
  T.eq(g.open.value.sum, 333.0, "seconds= wins over open_s=")
  T.eq(g.open_breakdown.value.count, 0)
  T.eq(g.scan.value.sum, 2.0)
  T.eq(g[""].n, 1)
  T.eq(g.open.dist, nil)
  table.sort(takes)
  local sum = 0
  for _, x in ipairs(takes) do sum = sum + x end
  local d = g.take.dist
  T.eq(d.n, 1001)
  T.eq(d.min, takes[1])
  T.eq(d.max, takes[1001])
  T.eq(d.median, takes[501])
  T.near(d.mean, sum / 1001, 1e-9)
  local even = scan_text("[L] take seconds=4\n[L] take seconds=1\n[L] take seconds=3\n[L] take seconds=2\n",
    { { tag = "[L]", group = "event", value = "seconds", collect = true } })
  T.eq(even.rules[1].groups.take.dist, { n = 4, min = 1.0, median = 2.5, mean = 2.5, max = 4.0 })
end)

T.case("file: label lines (ad-hoc stage timers)", function()
  local text = table.concat({
    "[V] load transcripts....................................    123.4ms",
    "[V] load transcripts....................................     10.0ms",
    "[V] write output..........   2.5s",
    "[V] chr1: pipeline_profile rows=1 engine=1.0s",
    "[V] no value here........",
    "[V] count only.....   42",
  }, "\n")
  local r = scan_text(text, { { tag = "[V]", group = "label", sum = "time" } })
  local g = r.rules[1].groups
  T.eq(require("wb.core").ordered_keys(g), { "load transcripts", "write output" })
  T.eq(g["load transcripts"].n, 2)
  T.near(g["load transcripts"].value.sum, 0.1334, 1e-15)
  T.eq(g["write output"].value.sum, 2.5)
end)

T.case("file: huge lines, a line longer than max_line, an empty file", function()
  local d = T.tmpdir()
  local big = {}
  for i = 1, 400000 do big[i] = "k" .. (i % 7) .. "=1s" end
  local huge = "[H] " .. table.concat(big, " ")
  local text = huge .. "\n" .. string.rep("x", 5 * 1024 * 1024) .. "\n[H] k0=5s\n"
  local p = write(d, "huge", text)
  local r = assert(scan.file(p, { rules = { { tag = "[H]", sum = "time" } } }))
  T.ok(#huge > 2 * 1024 * 1024)
  T.eq(r.rules[1].n, 2)
  T.eq(r.rules[1].keys.k0.count, 400000 // 7 + 1)
  T.eq(r.truncated, 0)
  r = assert(scan.file(p, { max_line = 65536, rules = { { tag = "[H]", sum = "time" } } }))
  T.eq(r.truncated, 1)
  T.eq(r.rules[1].n, 1)
  T.eq(r.rules[1].keys.k0.sum, 5.0)
  T.eq(r.lines, 3)
  local e = assert(scan.file(write(d, "empty", ""), { rules = { { tag = "[H]", sum = "time" } } }))
  T.eq({ e.bytes, e.lines, e.rules[1].n }, { 0, 0, 0 })
  T.eq(require("wb.core").ordered_keys(e.rules[1].keys), {})
end)

T.case("file: too many distinct keys or groups are dropped and counted", function()
  local lines = {}
  for i = 1, 5000 do lines[i] = string.format("[K] ev%d k%d=1s", i, i) end
  local r = scan_text(table.concat(lines, "\n"), { { tag = "[K]", sum = "time" }, { tag = "[K]", group = "event" } })
  T.eq(#require("wb.core").ordered_keys(r.rules[1].keys), 4096)
  T.eq(r.rules[1].dropped_keys, 904)
  T.eq(r.rules[2].dropped_groups, 904)
  T.eq(r.rules[2].n, 5000)
end)

T.case("file: threads and gzip give the sequential plain result", function()
  local d = T.tmpdir()
  local lines = {}
  math.randomseed(11)
  for i = 1, 60000 do
    lines[#lines + 1] = string.format("[E] rows=%d a=%.6fs b=%.3fs", i, math.random() , math.random() * 10)
    lines[#lines + 1] = "\r progress " .. i
    lines[#lines + 1] = string.format("[L] ev%d seconds=%.3f", i % 5, math.random())
    if i % 1000 == 0 then lines[#lines + 1] = "[P] pipeline_profile n=" .. i end
  end
  local p = write(d, "log", table.concat(lines, "\n") .. "\n")
  local rules = { { tag = "[E]", sum = "number" }, { tag = "[P]", keep = "last" }, { tag = "[P]", name = "f", keep = "first" },
    { tag = "[L]", group = "event", value = "seconds", collect = true } }
  local one = assert(scan.file(p, { threads = 1, rules = rules }))
  local three = assert(scan.file(p, { threads = 3, rules = rules }))
  T.eq(one.threads, 1)
  T.eq(three.threads, 3)
  one.threads = 3
  T.eq(three, one)
  T.eq(three.rules[2].line, "[P] pipeline_profile n=60000")
  T.eq(three.rules.f.line, "[P] pipeline_profile n=1000")
  assert(os.execute("gzip -k '" .. p .. "'"))
  local gz = assert(scan.file(p .. ".gz", { rules = rules }))
  T.eq(gz.gzip, true)
  one.threads, one.gzip = 1, true
  T.eq(gz, one)
  local data = assert(fs.read(p .. ".gz"))
  write(d, "cut.gz", data:sub(1, #data // 2))
  local v, err = scan.file(d .. "/cut.gz", { rules = rules })
  T.eq(v, nil)
  T.match(err, "cut%.gz: gzip: ")
end)

T.case("environment failures return nil, message, errno", function()
  local v, err, errno = scan.file("/nonexistent/log", { rules = {} })
  T.eq(v, nil)
  T.eq(err, "/nonexistent/log: No such file or directory")
  T.eq(errno, 2)
  v, err, errno = scan.file("/tmp", { rules = {} })
  T.eq(v, nil)
  T.eq(err, "/tmp: Is a directory")
  T.eq(errno, 21)
end)

T.case("misuse raises", function()
  T.raises(function() scan.file("x") end, "table expected")
  T.raises(function() scan.file("x", {}) end, "rules must be a list of rules")
  T.raises(function() scan.file("x", { rules = { 5 } }) end, "rules[1] must be a table")
  T.raises(function() scan.file("x", { rules = { {} } }) end, "rules[1].tag must be a string")
  T.raises(function() scan.file("x", { rules = { { tag = "" } } }) end, "rules[1].tag must not be empty")
  T.raises(function() scan.file("x", { rules = { { tag = "[T]", group = "x" } } }) end,
    'rules[1].group must be "none", "event" or "label"')
  T.raises(function() scan.file("x", { rules = { { tag = "[T]", sum = 1 } } }) end,
    'rules[1].sum must be "time", "count", "number" or "all"')
  T.raises(function() scan.file("x", { rules = { { tag = "[T]", collect = true } } }) end, "collect needs value")
  T.raises(function() scan.file("x", { rules = { { tag = "[T]", value = { 1 } } } }) end, "rules[1].value[1] must be a string")
  T.raises(function() scan.file("x", { threads = -1, rules = {} }) end, "threads must be 0..64")
  T.raises(function() scan.number({}) end, "string expected")
end)

-- Thread ranges that begin mid-line or right after a CR. Lines of 200 `x` then ` n=1`: a range
-- that begins inside the run of x starts on the tag, so only skipping to the next separator keeps
-- a line from counting twice. Segments `x n=1\r` of 6 bytes, 2.4 MB: two 1.2 MB ranges, the second
-- beginning just after a CR, so the CR must count as the separator it is.
T.case("file: ranges beginning mid-line or after a CR count each line once", function()
  local d = T.tmpdir()
  local rules = { { tag = "x", sum = "number" } }
  local n = 20000
  local a = write(d, "a", string.rep(string.rep("x", 200) .. " n=1\n", n))
  for t = 1, 4 do
    local r = assert(scan.file(a, { threads = t, rules = rules }))
    T.eq({ r.rules[1].n, r.rules[1].keys.n.sum }, { n, n }, t .. " threads")
  end
  local m = 400000
  local b = write(d, "b", string.rep("x n=1\r", m))
  local r = assert(scan.file(b, { threads = 2, rules = rules }))
  T.eq(r.threads, 2)
  T.eq({ r.rules[1].n, r.rules[1].keys.n.sum }, { m, m }, "CR-separated segments over 2 ranges")
end)
