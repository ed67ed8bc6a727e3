local T = require "wb.test"
local svg = require "wb.svg"

T.case("nice ticks: 0–1 in steps of 0.2", function()
  local ticks, step = svg.nice_ticks(0, 1)
  T.eq(ticks, { 0, 0.2, 0.4, 0.6, 0.8, 1 })
  T.eq(step, 0.2)
end)

T.case("nice ticks: 0.013–0.052 in steps of 0.01, covering the data", function()
  local ticks, step = svg.nice_ticks(0.013, 0.052)
  T.eq(ticks, { 0.01, 0.02, 0.03, 0.04, 0.05, 0.06 })
  T.eq(step, 0.01)
end)

T.case("nice ticks: steps of 1, 2 or 5 × 10^k for several ranges", function()
  T.eq(svg.nice_ticks(0, 100), { 0, 20, 40, 60, 80, 100 })
  -- no data to scale, or a spread too small for the values' precision: a usable axis, never an
  -- error or an endless loop (wb bench ':' ':' gave runs of zero length)
  for _, c in ipairs { { 0 / 0, 0 / 0 }, { 0, math.huge }, { 5e-324, 1e-323 }, { 1e17, 1e17 + 32 }, { 0, 0 } } do
    local ticks, step = svg.nice_ticks(c[1], c[2])
    T.ok(#ticks >= 2 and #ticks <= 12 and step > 0, string.format("%s..%s: %d ticks, step %s", c[1], c[2], #ticks, step))
  end
  T.eq(svg.nice_ticks(3, 97), { 0, 20, 40, 60, 80, 100 })
  T.eq(svg.nice_ticks(252.8, 818.7, 6), { 200, 300, 400, 500, 600, 700, 800, 900 })
  T.eq(svg.nice_ticks(-1, 1), { -1, -0.5, 0, 0.5, 1 })
  T.eq(svg.nice_ticks(0.3134, 1, 6), { 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1 })
  T.eq(svg.nice_ticks(1200, 98000), { 0, 20000, 40000, 60000, 80000, 100000 })
  local ticks, step = svg.nice_ticks(0.00012, 0.00052)
  T.eq(step, 0.0001)
  T.eq(ticks, { 0.0001, 0.0002, 0.0003, 0.0004, 0.0005, 0.0006 })
  T.eq(select(2, svg.nice_ticks(0.00012, 0.00047)), 0.00005)
end)

T.case("nice ticks: reversed and empty ranges still give an axis", function()
  T.eq(svg.nice_ticks(1, 0), { 0, 0.2, 0.4, 0.6, 0.8, 1 })
  local ticks = svg.nice_ticks(5, 5)
  T.ok(ticks[1] < 5 and ticks[#ticks] > 5, "a constant value lies inside the axis")
  ticks = svg.nice_ticks(0, 0)
  T.ok(ticks[1] < 0 and ticks[#ticks] > 0)
end)

T.case("tick labels carry the decimals of the step", function()
  T.eq(svg.tick_format(0.4, 0.2), "0.4")
  T.eq(svg.tick_format(0.05, 0.01), "0.05")
  T.eq(svg.tick_format(300, 100), "300")
  T.eq(svg.tick_format(1, 0.5), "1.0")
end)

T.case("sig: four significant digits without exponents", function()
  T.eq(svg.sig(812.46), "812.5")
  T.eq(svg.sig(0.012345), "0.01235")
  T.eq(svg.sig(123456), "123456")
  T.eq(svg.sig(0), "0")
end)

T.case("linear and log scales map domain onto range", function()
  local x = svg.linear(0, 10, 100, 200)
  T.eq(x(0), 100)
  T.eq(x(5), 150)
  T.eq(x(10), 200)
  local y = svg.linear(0, 10, 300, 100) -- SVG y grows downwards
  T.eq(y(0), 300)
  T.eq(y(10), 100)
  T.eq(y(2.5), 250)
  local l = svg.log(1, 100, 0, 100)
  T.near(l(10), 50, 1e-9)
  T.near(l(1), 0, 1e-9)
  T.eq(svg.linear(3, 3, 0, 10)(3), 0)
end)

T.case("escape covers every XML special character", function()
  T.eq(svg.escape([[<a href="x">&'b']]), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;b&#39;")
  T.eq(svg.escape(42), "42")
  T.eq(svg.escape("µs – ok"), "µs – ok")
end)

T.case("elements: sorted attributes, rounded numbers, escaped title and text", function()
  T.eq(svg.rect { y = 2, x = 1.23456, width = 10, height = 4.5 },
    '<rect height="4.5" width="10" x="1.23" y="2"/>')
  T.eq(svg.text { x = 0, y = 0, fill = "a&b", text = "<b>", title = 'say "hi"' },
    '<text fill="a&amp;b" x="0" y="0"><title>say &quot;hi&quot;</title>&lt;b&gt;</text>')
  T.eq(svg.line { x1 = 0, y1 = 0, x2 = 1, y2 = 1, hidden = false }, '<line x1="0" x2="1" y1="0" y2="1"/>')
  T.eq(svg.g({ class = "k" }, { "<a/>", "<b/>" }), '<g class="k"><a/><b/></g>')
  T.eq(svg.num(2.5), "2.5")
  T.eq(svg.num(100), "100")
  T.eq(svg.num(-0.001), "0")
end)

T.case("document: viewBox, namespace, accessible title", function()
  local doc = svg.document { width = 300, height = 120, title = "A & B", desc = "d", content = { "<g/>" } }
  T.match(doc, '^<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 300 120"')
  T.match(doc, 'role="img"')
  T.match(doc, "<title>A &amp; B</title><desc>d</desc><g/></svg>$", "title first")
end)

T.case("shorten cuts UTF-8 text with an ellipsis", function()
  T.eq(svg.shorten("abcdef", 10), "abcdef")
  T.eq(svg.shorten("abcdef", 3), "abc…")
  T.eq(svg.shorten("µµµµµ", 2), "µµ…")
  T.eq(svg.shorten("a\nb", 5), "a b")
end)

T.case("box stats: quartiles and whiskers at 1.5 IQR", function()
  local b = svg.box_stats { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100 }
  T.eq(b.q1, 3.5)
  T.eq(b.med, 6)
  T.eq(b.q3, 8.5)
  T.eq(b.wlo, 1)
  T.eq(b.whi, 10, "100 lies beyond q3 + 1.5 IQR")
  T.eq(b.max, 100)
  b = svg.box_stats({ 5, 1, 3 }, 2, 3, 4)
  T.eq({ b.q1, b.med, b.q3, b.wlo, b.whi }, { 2, 3, 4, 1, 5 })
end)

T.case("box plot: one point per run, outliers highlighted, escaped labels", function()
  local s = svg.box_plot { x_label = "Wall time [ms]", rows = {
    { label = "a<b", values = { 10, 11, 12, 13, 40 }, outliers = { [5] = true } },
    { label = "c", values = { 20, 21, 22 } },
  } }
  T.eq(T.count(s, "<circle"), 8 + 2, "8 runs plus 2 legend markers")
  T.eq(T.count(s, 'fill="' .. svg.colors.outlier .. '"'), 1 + 1, "the outlier and its legend marker")
  T.match(s, "a&lt;b", "label escaped")
  T.ok(not s:find("a<b", 1, true))
  T.match(s, "Wall time %[ms%]")
  T.match(s, "<title>run 5: 40 %(outlier%)</title>")
  T.match(s, ">10</text>")
  T.match(s, ">40</text>")
end)

T.case("bar chart: bars from the reference, error bars, notes", function()
  local s = svg.bar_chart { reference = 1, left_note = "faster", right_note = "slower",
    x_label = "ratio", bars = {
      { label = "x", value = 0.5, lo = 0.45, hi = 0.55, note = "2.00× faster" },
      { label = "y", value = 1.5, note = "1.50× slower" },
    } }
  T.match(s, 'stroke%-dasharray="4 3"', "reference line")
  T.match(s, "← faster")
  T.match(s, "slower →")
  T.match(s, "2.00× faster")
  T.match(s, ">0.4</text>")
  T.match(s, ">1.6</text>")
  T.eq(T.count(s, "<rect"), 2)
end)

T.case("line chart: series, bands, legend, x ticks at the values", function()
  local s = svg.line_chart { x_label = "threads", y_label = "time [s]", band_label = "min–max",
    series = {
      { label = "p & q", points = { { x = 1, y = 4, lo = 3, hi = 5 }, { x = 2, y = 2, lo = 1.5, hi = 2.5 },
        { x = 4, y = 1, lo = 0.8, hi = 1.3 } } },
      { label = "r", points = { { x = 1, y = 3 }, { x = 4, y = 0.9 } } },
    } }
  T.match(s, "p &amp; q")
  T.match(s, "min–max")
  T.match(s, ">threads</text>")
  for _, v in ipairs { "1", "2", "4" } do T.match(s, ">" .. v .. "</text>") end
  T.eq(T.count(s, 'fill-opacity="0.15"'), 1, "one band (the second series has none)")
  T.eq(T.count(s, 'fill="none"'), 2, "two lines")
end)

T.case("line chart: a log x axis spaces doublings evenly", function()
  local s = svg.line_chart { x_log = true, series = { { label = "s", points = {
    { x = 1, y = 1 }, { x = 2, y = 1 }, { x = 4, y = 1 } } } } }
  local xs = {}
  for cx in s:gmatch('<circle cx="([%d.]+)"') do xs[#xs + 1] = tonumber(cx) end
  T.near(xs[2] - xs[1], xs[3] - xs[2], 0.02)
end)
