local T = require "wb.test"
local flame = require "wb.flame"
local fs = require "wb.fs"
local json = require "wb.json"
local clock = require "wb.clock"

local FIX = "tests/fixtures/flame/"

local function unescape(s)
  return (s:gsub("&(#?%w+);", { lt = "<", gt = ">", amp = "&", quot = '"', ["#39"] = "'" }))
end

-- The frames of a flame graph SVG: {name, tip, d, s, n, x, y, width, fill, label}.
local FRAME = '<g class="f" data%-d="(%d+)" data%-s="(%d+)" data%-n="(%d+)"><title>(.-)</title>'
  .. '<rect x="([%d.]+)" y="([%d.]+)" width="([%d.]+)" height="%d+" rx="[%d.]+" fill="(#%x+)"/>'
  .. '<text x="[%d.]+" y="[%d.]+">(.-)</text></g>'
local function frames_of(doc)
  local list, by = {}, {}
  for d, s, n, tip, x, y, w, fill, label in doc:gmatch(FRAME) do
    tip = unescape(tip)
    local f = { name = tip:sub(1, tip:find(" %([^(]*$") - 1), tip = tip, d = tonumber(d),
      s = tonumber(s), n = tonumber(n), x = tonumber(x), y = tonumber(y), width = tonumber(w),
      fill = fill, label = unescape(label) }
    list[#list + 1] = f
    by[f.name] = by[f.name] or f
  end
  return list, by
end

local function rgb(hex)
  return tonumber(hex:sub(2, 3), 16), tonumber(hex:sub(4, 5), 16), tonumber(hex:sub(6, 7), 16)
end

T.case("parse: stacks, counts, total; the count is the last field, names may hold spaces", function()
  local stacks, total = flame.parse("main;do work;x y 12\nmain;f 10 20\n  main;g\t7  \n")
  T.eq(stacks, {
    { frames = { "main", "do work", "x y" }, count = 12 },
    { frames = { "main", "f 10" }, count = 20 },
    { frames = { "main", "g" }, count = 7 },
  })
  T.eq(total, 39)
end)

T.case("parse: CRLF, BOM, blank and malformed lines, empty frames, zero counts", function()
  local text = "\239\187\191a;b 3\r\n\r\n   \nno count here\nx;y 1.5\nneg -4\n42\n;;a;;c; 2\r\n"
    .. "z 0\nhuge 99999999999999999999999\na;b 1"
  local stacks, total = flame.parse(text)
  T.eq(stacks, {
    { frames = { "a", "b" }, count = 3 },
    { frames = { "a", "c" }, count = 2 },
    { frames = { "a", "b" }, count = 1 },
  })
  T.eq(total, 6)
  T.eq({ flame.parse("") }, { {}, 0 })
  T.raises(function() flame.parse(nil) end, "folded text expected")
end)

T.case("svg: identical prefixes merge into one frame, siblings sorted by name", function()
  local doc = flame.svg("a;b 1\na;c 1\na;b 2\nzeta 4\nalpha 2\n")
  local list, by = frames_of(doc)
  T.eq(#list, 6, "all, a, b, c, alpha, zeta")
  T.eq(T.count(doc, "<title>a ("), 1)
  T.eq({ by.all.n, by.a.n, by.b.n, by.c.n, by.alpha.n, by.zeta.n }, { 10, 4, 3, 1, 2, 4 })
  T.eq({ by.a.d, by.b.d, by.zeta.d }, { 1, 2, 1 })
  T.ok(by.a.x < by.alpha.x and by.alpha.x < by.zeta.x, "a < alpha < zeta")
  T.ok(by.b.x < by.c.x)
  T.eq(by.b.x, by.a.x, "the first child starts at its parent")
end)

T.case("svg: widths proportional to counts (2/3 and 1/3 of the fixture), root at the bottom", function()
  local doc = flame.svg(fs.read(FIX .. "tiny.folded"), { width = 1200 })
  local _, by = frames_of(doc)
  local span = 1200 - 20
  T.near(by.all.width, span, 1)
  T.near(by.main.width, span, 1)
  T.near(by.big.width, span * 2 / 3, 1)
  T.near(by.small.width, span / 3, 1)
  T.near(by.small.x, by.big.x + by.big.width, 1)
  T.ok(by.all.y > by.main.y and by.main.y > by.big.y, "children above their parent")
  T.eq(by.big.y, by.small.y)
  T.match(by.big.tip, "^big %(2 samples, 66%.67%%%)$")
  T.match(doc, 'width="1200" height="%d+" viewBox="0 0 1200 %d+"')
end)

T.case("svg: hostile names are escaped, control bytes and invalid UTF-8 replaced", function()
  local hostile = [[<&>"']] .. ";</title><script>alert(1)</script>;x\1y\255z;é 5\nok 1\n"
  local doc = flame.svg(hostile, { title = "t <&> \"'" })
  T.eq(T.count(doc, "<script"), 1, "only wb's own script")
  T.ok(not doc:find("alert(1)</script>", 1, true))
  T.ok(doc:find("&lt;&amp;&gt;&quot;&#39; (5 samples", 1, true))
  T.ok(doc:find("<title>t &lt;&amp;&gt; &quot;&#39;</title>", 1, true))
  T.ok(utf8.len(doc), "valid UTF-8")
  T.ok(not doc:find("[\0-\8\11\12\14-\31]"), "no control characters")
  local _, by = frames_of(doc)
  T.ok(by["</title><script>alert(1)</script>"], "the name survives escaping")
  T.ok(by["x\u{FFFD}y\u{FFFD}z"], "bad bytes become U+FFFD")
  T.ok(by["é"])
  local script = doc:match("<!%[CDATA%[(.*)%]%]></script>")
  T.ok(script and not script:find("]]>", 1, true) and not script:find("alert"), "names stay out of the script")
end)

T.case("svg: labels fit their frame, truncated with '..'", function()
  local long = string.rep("long_function_name_", 20)
  local doc = flame.svg("root;" .. long .. " 1\nroot;other 1\n", { width = 1200 })
  local _, by = frames_of(doc)
  local f = by[long]
  T.ok(f.label:sub(-2) == ".." and #f.label < #long, "truncated: " .. f.label)
  T.ok(#f.label * 12 * 0.61 <= f.width, "fits")
  T.eq(by.other.label, "other")
  local tiny = frames_of(flame.svg("a 1\nb 2000\n"))
  T.eq(tiny[2].label, "", "no room, no label")
end)

T.case("svg: frames narrower than min_width_px are left out", function()
  local text = "main;hot 100000\nmain;rare 1\n"
  local _, by = frames_of(flame.svg(text))
  T.ok(by.hot and not by.rare)
  _, by = frames_of(flame.svg(text, { min_width_px = 0 }))
  T.ok(by.rare)
  T.near(by.main.width, 1180, 1, "the parent keeps the time")
end)

T.case("svg: colours are deterministic, warm for on-CPU, blue for io, distinct for kernel", function()
  local text = fs.read(FIX .. "cpu.folded")
  local a, b = flame.svg(text), flame.svg(text)
  T.eq(a, b)
  local hot_list = frames_of(a)
  local io_list = frames_of(flame.svg(text, { colors = "io" }))
  for i, f in ipairs(hot_list) do
    local r, _, bl = rgb(f.fill)
    local ir, _, ib = rgb(io_list[i].fill)
    if f.name:find("_%[k%]$") then
      T.ok(bl > r, "kernel frame not warm: " .. f.name .. " " .. f.fill)
    else
      T.ok(r > bl + 60, "user frame warm: " .. f.name .. " " .. f.fill)
      T.ok(ib > ir + 40, "io frame blue: " .. f.name .. " " .. io_list[i].fill)
    end
  end
  local _, by = frames_of(flame.svg("x;main 1\n"))
  T.eq(by.main.fill, select(2, frames_of(a)).main.fill, "same name, same colour")
  T.raises(function() flame.svg(text, { colors = "rainbow" }) end, "colors must be")
  T.raises(function() flame.svg(text, { unit = "ms" }) end, "unit must be")
  T.raises(function() flame.diff_svg(text, text, { width = "wide" }) end, "width must be")
  T.raises(function() flame.svg(text, { min_width_px = -1 }) end, "min_width_px must be")
  T.raises(function() flame.svg(42) end, "folded text or parsed stacks expected")
end)

T.case("svg: unit ns shows durations; parsed stacks are accepted", function()
  local doc = flame.svg(flame.parse("main;poll 1500000\nmain;read 500000\n"), { unit = "ns", colors = "io" })
  local _, by = frames_of(doc)
  T.eq(by.poll.tip, "poll (1.50 ms, 75.00%)")
  T.eq(by.all.tip, "all (2.00 ms, 100.00%)")
end)

T.case("the script is lua/wb/flame.js, embedded whole, and it parses (node --check)", function()
  local file = assert(fs.read(T.root() .. "/lua/wb/flame.js"))
  T.eq(require "wb.flame_js", file, "the binary embeds the file byte for byte")
  local body = file:sub((file:find("\n[^/]") or 0) + 1)
  T.match(body, "^%(function %(%) {")
  local doc = flame.svg(fs.read(FIX .. "cpu.folded"))
  local script = doc:match("<!%[CDATA%[\n(.*)%]%]></script>")
  T.eq(script, (body:gsub("__CONFIG__", '{"w": 1200, "pad": 10, "charw": 7.32, "highlight": "#e600e6"}')))
  if not require("wb.proc").which("node") then return T.skip("node: not installed (Debian nodejs, make deps)") end
  local dir = T.tmpdir()
  for name, text in pairs { ok = script, broken = script:gsub("var C = ", "var C = (", 1) } do
    assert(fs.write(dir .. "/" .. name .. ".js", text))
  end
  local function check(name)
    return assert(require("wb.proc").run { argv = { "node", "--check", dir .. "/" .. name .. ".js" },
      stdout = "capture", stderr = "capture", timeout = 60 })
  end
  local res = check("ok")
  T.eq(res.code, 0, res.stderr)
  T.ok(check("broken").code ~= 0, "a syntax error is caught (control)")
end)

T.case("svg: interactive and self-contained; an empty profile still renders", function()
  local doc = flame.svg(fs.read(FIX .. "cpu.folded"), { title = "On-CPU" })
  T.match(doc, '^<%?xml version="1.0" encoding="UTF%-8"')
  T.match(doc, '<script type="text/ecmascript"><!%[CDATA%[')
  for _, id in ipairs { "details", "matched", "unzoom", "search", "frames" } do
    T.ok(doc:find('id="' .. id .. '"', 1, true), id)
  end
  T.match(doc, 'Reset Zoom')
  T.ok(not doc:find("href", 1, true) and not doc:find("url%(%s*[^#]"), "no external references")
  T.eq(T.count(doc, "://"), 1, "no URL but the SVG namespace")
  local empty = flame.svg("")
  T.eq(#frames_of(empty), 0)
  T.match(empty, "no samples")
  T.match(empty, "</svg>\n$")
end)

T.case("top: self and total counts and fractions, recursion counted once", function()
  local rows = flame.top("a;b;a 3\na;c 1\nd;b 4\n")
  T.eq(rows, {
    { name = "b", self = 4, total = 7, self_fraction = 0.5, total_fraction = 0.875 },
    { name = "a", self = 3, total = 4, self_fraction = 0.375, total_fraction = 0.5 },
    { name = "c", self = 1, total = 1, self_fraction = 0.125, total_fraction = 0.125 },
    { name = "d", self = 0, total = 4, self_fraction = 0, total_fraction = 0.5 },
  })
  local top = flame.top(fs.read(FIX .. "cpu.folded"), 3)
  T.eq(#top, 3)
  T.eq({ top[1].name, top[1].self, top[1].total }, { "dgemm", 1320, 2200 })
  T.near(top[1].self_fraction, 1320 / 5760, 1e-12)
  T.near(top[1].total_fraction, 2200 / 5760, 1e-12)
  T.eq({ top[2].name, top[3].name }, { "dgemm_kernel_haswell", "hash_join" })
  T.eq(flame.top(""), {})
end)

T.case("diff_svg: red where new has a larger share, blue smaller, neutral equal; widths from new", function()
  local base = "m;grow 10\nm;shrink 10\nm;same 10\nm;gone 5\n"
  local new = "m;grow 15\nm;shrink 5\nm;same 10\nm;born 5\n"
  local doc = flame.diff_svg(base, new, { title = "diff" })
  local _, by = frames_of(doc)
  local function reddish(f) local r, _, b = rgb(f.fill); return r > b + 60 end
  local function bluish(f) local r, _, b = rgb(f.fill); return b > r + 60 end
  T.ok(reddish(by.grow), "grow " .. by.grow.fill)
  T.ok(reddish(by.born), "born " .. by.born.fill)
  T.ok(bluish(by.shrink), "shrink " .. by.shrink.fill)
  T.eq(by.same.fill, "#e8e8e8")
  T.eq(by.m.fill, "#e8e8e8")
  T.ok(not by.gone, "frames only in base are not drawn")
  T.near(by.grow.width, 1180 * 15 / 35, 1)
  T.eq(by.grow.tip, "grow (base 10, new 15 samples, +5; share 28.57% → 42.86%, +14.29 pp)")
  T.eq(by.shrink.tip, "shrink (base 10, new 5 samples, −5; share 28.57% → 14.29%, −14.29 pp)")
  T.match(doc, "more in new")
  _, by = frames_of(flame.diff_svg("m;x 10\nm;y 10\nm;z 20\n", "m;x 20\nm;y 12\nm;z 8\n"))
  T.eq(by.z.fill, "#4b87e1", "the largest change has the full colour")
  local _, gx = rgb(by.x.fill)
  local _, gy = rgb(by.y.fill)
  T.ok(gx < gy and gy < 232, "a larger increase is a deeper red: " .. by.x.fill .. " " .. by.y.fill)
  local same = frames_of(flame.diff_svg(new, new))
  for _, f in ipairs(same) do T.eq(f.fill, "#e8e8e8", f.name) end
end)

T.case("speedscope: schema, shared frames, one sampled profile whose samples rebuild the input", function()
  local text = fs.read(FIX .. "cpu.folded")
  local stacks, total = flame.parse(text)
  local doc = json.decode(flame.speedscope(text, { name = "cpu", unit = "none" }))
  T.eq(doc["$schema"], "https://www.speedscope.app/file-format-schema.json")
  local frames = doc.shared.frames
  local seen = {}
  for _, f in ipairs(frames) do
    T.ok(not seen[f.name], "unique frame " .. f.name)
    seen[f.name] = true
  end
  T.eq(#doc.profiles, 1)
  local p = doc.profiles[1]
  T.eq({ p.type, p.name, p.unit, p.startValue, p.endValue }, { "sampled", "cpu", "none", 0, total })
  T.eq(#p.samples, #stacks)
  T.eq(#p.weights, #p.samples)
  local sum = 0
  for i, sample in ipairs(p.samples) do
    local names = {}
    for j, k in ipairs(sample) do
      T.ok(math.type(k) == "integer" and k >= 0 and k < #frames, "index in range")
      names[j] = frames[k + 1].name
    end
    T.eq(names, stacks[i].frames)
    T.eq(p.weights[i], stacks[i].count)
    sum = sum + p.weights[i]
  end
  T.eq(sum, total)
  local ns = json.decode(flame.speedscope("a 5\n", { unit = "nanoseconds" }))
  T.eq(ns.profiles[1].unit, "nanoseconds")
  T.raises(function() flame.speedscope("a 1", { unit = "furlongs" }) end, "unknown unit")
  local empty = json.decode(flame.speedscope(""))
  T.eq({ #empty.shared.frames, #empty.profiles[1].samples, empty.profiles[1].endValue }, { 0, 0, 0 })
end)

T.case("trace: complete events in microseconds, object form, process name", function()
  local text = flame.trace({
    { name = "load", ts = 0, dur = 1500, args = { rows = 3 } },
    { name = "fit", cat = "stage", ts = 1500, dur = 250.5, pid = 7, tid = 2 },
  }, { process_name = "wb" })
  local doc = json.decode(text)
  T.match(text, '^{"traceEvents":%[')
  T.eq(doc.displayTimeUnit, "ms")
  local ev = doc.traceEvents
  T.eq(#ev, 4)
  T.eq({ ev[1].ph, ev[1].name, ev[1].pid, ev[1].args.name }, { "M", "process_name", 1, "wb" })
  T.eq({ ev[2].ph, ev[2].pid }, { "M", 7 })
  T.eq({ ev[3].name, ev[3].ph, ev[3].cat, ev[3].ts, ev[3].dur, ev[3].pid, ev[3].tid, ev[3].args.rows },
    { "load", "X", "wb", 0, 1500, 1, 1, 3 })
  T.eq({ ev[4].cat, ev[4].dur, ev[4].pid, ev[4].tid }, { "stage", 250.5, 7, 2 })
  T.raises(function() flame.trace({ { name = "x", ts = 0 } }) end, "needs ts and dur")
  T.raises(function() flame.trace({ { ts = 0, dur = 1 } }) end, "needs a name")
  T.eq(json.decode(flame.trace({})).traceEvents, json.array())
end)

T.case("trace_from_stages: wb.clock stages keep their nesting by timing", function()
  clock.reset_stages()
  clock.stage("outer", function()
    clock.stage("inner", function() clock.sleep(0.002) end)
    clock.stage("second", function() end)
  end)
  clock.stage_begin("open")
  local events = flame.trace_from_stages(clock.stages(), { tid = 3 })
  clock.stage_end("open")
  clock.reset_stages()
  T.eq(#events, 4)
  local outer, inner, second, open = events[1], events[2], events[3], events[4]
  T.eq({ outer.name, inner.name, second.name, open.name }, { "outer", "inner", "second", "open" })
  T.eq(outer.ts, 0)
  T.ok(inner.dur >= 2000, "inner slept 2 ms: " .. inner.dur .. " µs")
  T.ok(inner.ts >= outer.ts and inner.ts + inner.dur <= outer.ts + outer.dur, "inner inside outer")
  T.ok(second.ts >= inner.ts + inner.dur and second.ts + second.dur <= outer.ts + outer.dur)
  T.ok(open.ts >= outer.ts + outer.dur and open.args.open == true)
  T.eq({ inner.args.depth, inner.args.parent, outer.args.depth, inner.tid, inner.cat }, { 1, "outer", 0, 3, "stage" })
  local doc = json.decode(flame.trace(events))
  for i = 1, 4 do T.eq(doc.traceEvents[i].ph, "X") end

  local fixed = flame.trace_from_stages({
    { name = "a", depth = 0, start_ns = 5000000, dur_ns = 3000000 },
    { name = "b", depth = 1, parent = 1, start_ns = 5500000, dur_ns = 1234567 },
  })
  T.eq({ fixed[1].ts, fixed[1].dur, fixed[2].ts, fixed[2].dur }, { 0, 3000, 500, 1234.567 })
end)

T.case("trace_from_runs: one track per run with its stages laid end to end", function()
  local manifest = json.decode(fs.read(FIX .. "manifest.json"))
  local events = flame.trace_from_runs(manifest)
  local runs, stages, meta = {}, {}, {}
  for _, e in ipairs(events) do
    if e.ph == "M" then meta[#meta + 1] = e
    elseif e.cat == "run" then runs[#runs + 1] = e
    else stages[#stages + 1] = e end
  end
  T.eq(#runs, 2, "the pending run has no start")
  T.eq({ runs[1].name, runs[1].tid, runs[1].ts, runs[1].dur }, { "fit threads=1", 1, 0, 5.5e6 })
  T.eq({ runs[2].name, runs[2].tid, runs[2].ts, runs[2].dur }, { "fit threads=2", 2, 86402e6, 3e6 },
    "across 29 February; duration from finished_at_utc")
  T.eq({ runs[1].args.status, runs[2].args.return_code }, { "success", 1 })
  T.eq(#stages, 5)
  T.eq({ stages[1].name, stages[1].ts, stages[1].dur }, { "load", 0, 1.5e6 })
  T.eq({ stages[2].name, stages[2].ts, stages[2].dur }, { "fit", 1.5e6, 3.25e6 })
  T.eq({ stages[3].name, stages[3].ts, stages[3].dur }, { "write", 4.75e6, 0.5e6 })
  T.near(stages[4].dur + stages[5].dur, 3e6, 1e-6, "scaled to fit the run")
  T.eq({ stages[4].args.seconds, stages[4].args.scaled, stages[5].tid }, { 2, true, 2 })
  T.near(stages[5].ts, 86402e6 + 1.2e6, 1e-3)
  T.eq({ meta[1].name, meta[1].args.name, meta[1].tid }, { "thread_name", "fit threads=1", 1 })
  local doc = json.decode(flame.trace(events, { process_name = "flame_fixture" }))
  T.eq(#doc.traceEvents, #events + 1)
  T.eq(flame.trace_from_runs(manifest.runs), events)
end)

-- Correctness at size only: how fast it renders is a speed goal, and a busy machine makes any
-- bound on it a coin toss (11.0 s against a 10 s bound in CI's ASan pass beside two busy loops,
-- 2.9 s quiet); the time is printed.
T.case("100k unique stacks render: a bounded document, complete, and the top functions", function()
  local lines, seed = {}, 12345
  local function rand(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  end
  for i = 1, 100000 do
    local frames = { "main" }
    for d = 2, 6 + rand(18) do frames[d] = "fn_" .. rand(d * 40) end
    frames[#frames + 1] = "leaf_" .. i
    lines[i] = table.concat(frames, ";") .. " " .. (1 + rand(50))
  end
  local text = table.concat(lines, "\n")
  local t = clock.timer()
  local doc = flame.svg(text)
  local elapsed = t:elapsed()
  io.write(string.format("    # 100k stacks: %.2f s, %.1f MB\n", elapsed, #doc / 1e6))
  T.ok(#doc < 20e6, string.format("%.1f MB", #doc / 1e6))
  T.match(doc, "</svg>\n$")
  local top = flame.top(text, 10)
  T.eq(#top, 10)
end)

T.case("changed_frames: only the frame whose time changed beyond run-to-run noise; the spine marked", function()
  local base, new = {}, {}
  for i = 1, 7 do
    local j = i % 3 -- run-to-run noise, the same on both sides
    base[i] = string.format("app;main;slow;sleep %d\napp;main;steady;sleep %d\napp;_dl_start 1\n", 100 + j, 50 + j)
    new[i] = string.format("app;main;slow;sleep %d\napp;main;steady;sleep %d\napp;_dl_start 1\n", 130 + j, 50 + j)
  end
  local rows = flame.changed_frames(base, new, { scale = 0.001 })
  local by = {}
  for _, r in ipairs(rows) do by[r.name] = r end
  T.eq(by.slow.significant, true)
  T.near(by.slow.delta, 0.030, 1e-9)
  T.eq(by.steady.significant, false)
  T.eq(by.main.everywhere, true, "main holds over 95% of every run")
  T.eq(by.slow.everywhere, false)
  T.eq(rows[1].significant, true)
  local self = flame.changed_frames(base, new, { scale = 0.001, self = true })
  local names = {}
  for _, r in ipairs(self) do
    if r.significant then names[#names + 1] = r.name end
  end
  T.eq(names, { "sleep" }, "the leaf's own time")
  -- colouring only the significant frames
  local svg = flame.diff_svg(table.concat(base, "\n"), table.concat(new, "\n"), { only = { slow = true } })
  T.match(svg, "only where beyond run%-to%-run noise")
end)

T.case("culprit: the function that changed beside others that did not; a loop in main is main", function()
  local base, new = {}, {}
  for i = 1, 5 do
    base[i] = { { "app;_start;main;compute 100\napp;[truncated] 30\n", 0.001 },
      { "app;_start;main;read_input;nanosleep 20000000\napp;_start;main;wait_for_data;nanosleep 40000000\n", 1e-9 } }
    new[i] = { { "app;_start;main;compute 100\napp;[truncated] 30\n", 0.001 },
      { "app;_start;main;read_input;nanosleep 20000000\napp;_start;main;wait_for_data;nanosleep 49000000\n", 1e-9 } }
  end
  local path, delta = flame.culprit(base, new)
  T.eq(path, "app;_start;main;wait_for_data")
  T.near(delta, 0.009, 1e-9)
  local b2, n2 = {}, {}
  for i = 1, 5 do
    b2[i] = { { "app;_start;main 100\n", 0.001 } }
    n2[i] = { { "app;_start;main 130\n", 0.001 } }
  end
  T.eq((flame.culprit(b2, n2)), "app;_start;main")
end)
