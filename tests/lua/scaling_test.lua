-- wb.scaling, the engine of recipes/scaling.lua (measured end to end in
-- tests/recipes/scaling_test.lua): checks, commands, the analysis on planted times, the report.
local T = require "wb.test"
local wb = require "wb"
local scaling = require "wb.scaling"

local function cfg(o)
  local c = { mode = "strong", workers = { 4, 1, 2 }, size = 100, runs = 3, warmup = 1, seed = 1,
    command = { "prog", "-t", "{workers}", "-n", "{size}" } }
  for k, v in pairs(o or {}) do c[k] = v end
  return c
end

-- A bench summary whose point i has the wall samples times[i] (seconds).
local function summary_of(commands, times)
  local s = { commands = {} }
  for i, xs in ipairs(times) do
    s.commands[i] = { name = commands[i].name, argv = commands[i].argv, samples = { wall = xs },
      stats = { wall = wb.stats.summary(xs) } }
  end
  return s
end

T.case("check and commands: sorted worker counts, weak sizes grow with the workers", function()
  T.eq(scaling.check(cfg()), { 1, 2, 4 })
  local commands, sizes = scaling.commands(cfg(), { 1, 2, 4 })
  T.eq(commands[3], { name = "workers=4", argv = { "prog", "-t", "4", "-n", "100" } })
  T.eq(sizes, { 100, 100, 100 })
  local _, weak = scaling.commands(cfg { mode = "weak" }, { 2, 4, 8 })
  T.eq(weak, { 100, 200, 400 }, "size x p / p0")
  T.raises(function() scaling.check(cfg { mode = "fast" }) end, "scaling: mode must be strong or weak")
  T.raises(function() scaling.check(cfg { workers = { 1, 1 } }) end, "workers: 1 appears twice")
  T.raises(function() scaling.check(cfg { workers = { 0 } }) end, "is not a positive integer")
  T.raises(function() scaling.check(cfg { command = { "prog" } }) end, "no {workers} placeholder")
  T.raises(function() scaling.check(cfg { mode = "weak", command = { "p", "{workers}" } }) end, "needs a {size} placeholder")
  T.ok(scaling.cpu_count() >= 1)
end)

T.case("document: planted times give speedup 2 and 3.2, efficiency 1 and 0.8, Karp-Flatt from its formula", function()
  local c = cfg()
  local workers = scaling.check(c)
  local commands, sizes = scaling.commands(c, workers)
  local sum = summary_of(commands, { { 1.0, 1.0, 1.0 }, { 0.5, 0.5, 0.5 }, { 0.3125, 0.3125, 0.3125 } })
  local doc = scaling.document(c, workers, sizes, sum, { ci_level = 0.9, resamples = 200 })
  T.eq(doc.schema_name, "wb.scaling")
  T.eq(doc.settings.ci_level, 0.9)
  local p = doc.points
  T.eq(p[1].speedup, 1.0)
  T.near(p[2].speedup, 2, 1e-12)
  T.near(p[3].speedup, 3.2, 1e-12)
  T.near(p[3].efficiency, 0.8, 1e-12)
  T.near(p[3].karp_flatt, (1 / 3.2 - 1 / 4) / (1 - 1 / 4), 1e-12)
  T.near(p[2].speedup_ci_lo, 2, 1e-9, "no spread: the interval is the point")
  T.eq(p[1].karp_flatt, wb.null)
  local weak = scaling.document(cfg { mode = "weak" }, workers, sizes, sum)
  T.near(weak.points[3].efficiency, 3.2, 1e-12, "weak: E = T(p0)/T(p)")
  T.near(weak.points[3].speedup, 4 * 3.2, 1e-12, "scaled speedup (p/p0) E")
  local r = scaling.report(c, doc, sum)
  T.match(r.md, "^# Strong scaling of `prog %-t {workers} %-n {size}`\n")
  T.match(r.md, "| +4 | +100 | [^|]+ | +3%.20 %[3%.20–3%.20%] |")
  T.match(r.html, "<h2>Strong scaling</h2>")
  T.eq(select(2, r.html:gsub("<svg ", "")), 3, "speedup and efficiency charts, the bench report's distribution")
  T.match(r.speedup_svg, "^<svg ")
end)
