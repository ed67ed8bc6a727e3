-- SVG chart primitives: XML escaping, elements, scales with nice ticks, axes, and three charts
-- (horizontal box plot with jittered points, bar chart with error bars, line chart with bands).
-- Output is deterministic: attributes are sorted, numbers rounded, jitter derived from indices.
-- Charts take values already in display units and return a standalone <svg> string (inline
-- presentation attributes, no CSS, no script, no external reference).
local M = {}

-- Okabe–Ito colours (distinguishable with common colour-vision deficiencies), then greys.
M.palette = { "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000" }
M.colors = {
  text = "#1f2328", muted = "#59636e", axis = "#8c959f", grid = "#e6e9ed",
  faster = "#009E73", slower = "#D55E00", neutral = "#8c959f", outlier = "#D55E00",
}
M.font = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"
M.mono = "ui-monospace, SFMono-Regular, Menlo, Consolas, DejaVu Sans Mono, monospace"

local FONT_SIZE = 12
local MONO_WIDTH = 0.61 -- advance of a monospace glyph, in em

-- s = svg.escape(v) : text safe inside XML content and double- or single-quoted attributes
function M.escape(v)
  return (tostring(v):gsub("[&<>\"']", {
    ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;",
  }))
end

-- s = svg.num(x) : a coordinate with at most two decimals, trailing zeros dropped
function M.num(x)
  local s = string.format("%.2f", x)
  if s:find("%.") then s = s:gsub("0+$", ""):gsub("%.$", "") end
  if s == "-0" then s = "0" end
  return s
end

-- s = svg.attrs(t) : ` k="v"` pairs sorted by key; nil and false values are left out
function M.attrs(t)
  local keys = {}
  for k, v in pairs(t or {}) do
    if v ~= nil and v ~= false and k ~= "title" and k ~= "text" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  local out = {}
  for i, k in ipairs(keys) do
    local v = t[k]
    out[i] = string.format(' %s="%s"', k, type(v) == "number" and M.num(v) or M.escape(v))
  end
  return table.concat(out)
end

-- s = svg.el(name, attrs [, content]) : an element; content is raw markup (a string or a list
-- of strings). attrs.title becomes an escaped <title> child (a hover tooltip), attrs.text
-- escaped text content.
function M.el(name, attrs, content)
  attrs = attrs or {}
  local inner = {}
  if attrs.title then inner[#inner + 1] = "<title>" .. M.escape(attrs.title) .. "</title>" end
  if attrs.text then inner[#inner + 1] = M.escape(attrs.text) end
  if type(content) == "table" then
    inner[#inner + 1] = table.concat(content)
  elseif content then
    inner[#inner + 1] = content
  end
  if #inner == 0 then return "<" .. name .. M.attrs(attrs) .. "/>" end
  return "<" .. name .. M.attrs(attrs) .. ">" .. table.concat(inner) .. "</" .. name .. ">"
end

function M.rect(a) return M.el("rect", a) end
function M.line(a) return M.el("line", a) end
function M.circle(a) return M.el("circle", a) end
function M.path(a) return M.el("path", a) end
function M.text(a) return M.el("text", a) end
function M.g(a, children) return M.el("g", a, children or {}) end

-- s = svg.document{width, height, title, desc, content} : a standalone <svg> with a viewBox
-- (scales to its container), an accessible <title> and optional <desc>
function M.document(o)
  local head = "<title>" .. M.escape(o.title or "chart") .. "</title>"
  if o.desc then head = head .. "<desc>" .. M.escape(o.desc) .. "</desc>" end
  local body = type(o.content) == "table" and table.concat(o.content) or (o.content or "")
  return string.format('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" '
    .. 'height="%s" role="img" font-family="%s" font-size="%d" fill="%s">%s%s</svg>',
    M.num(o.width), M.num(o.height), M.num(o.width), M.num(o.height), M.escape(M.font), FONT_SIZE,
    M.colors.text, head, body)
end

local function round(x) return tonumber(string.format("%.12g", x)) end

-- ticks, step = svg.nice_ticks(lo, hi [, count = 5]) : evenly spaced ticks covering [lo, hi]
-- with a step of 1, 2 or 5 × 10^k giving about `count` intervals; the first and last ticks
-- bound the data (use them as the axis domain).
function M.nice_ticks(lo, hi, count)
  count = count or 5
  local function finite(x) return x == x and x > -math.huge and x < math.huge end
  if not finite(lo) or not finite(hi) then lo, hi = 0, 1 end -- no data to scale: a unit axis
  if hi < lo then lo, hi = hi, lo end
  if hi - lo < 1e-300 then -- equal, or so close that their steps would underflow
    local pad = math.abs(lo) > 1e-290 and math.abs(lo) * 0.1 or 1
    lo, hi = lo - pad, hi + pad
  end
  local raw = (hi - lo) / count
  local mag = 10 ^ math.floor(math.log(raw, 10))
  local norm = raw / mag
  local step = (norm >= 7.07 and 10 or norm >= 3.16 and 5 or norm >= 1.41 and 2 or 1) * mag
  step = round(step)
  local first = math.floor(lo / step + 1e-9)
  local last = math.ceil(hi / step - 1e-9)
  if math.type(first) ~= "integer" or math.type(last) ~= "integer" or last - first > 100 * count then
    -- a spread below the values' precision (1e17 and 1e17 + 32): padded as equal values are
    return M.nice_ticks(lo - math.abs(lo) * 0.1, hi + math.abs(hi) * 0.1, count)
  end
  local ticks = {}
  for i = first, last do ticks[#ticks + 1] = round(i * step) end
  return ticks, step
end

-- s = svg.tick_format(v, step) : v with as many decimals as the tick step needs
function M.tick_format(v, step)
  local decimals = math.max(0, -math.floor(math.log(step, 10) + 1e-9))
  return string.format("%." .. decimals .. "f", v)
end

-- s = svg.sig(v [, digits = 4]) : v with about `digits` significant digits, never in exponent form
function M.sig(v, digits)
  digits = digits or 4
  if v == 0 then return "0" end
  local decimals = math.max(0, digits - 1 - math.floor(math.log(math.abs(v), 10)))
  return string.format("%." .. decimals .. "f", v)
end

-- f = svg.linear(d0, d1, r0, r1) : maps the domain [d0, d1] linearly onto the range [r0, r1]
function M.linear(d0, d1, r0, r1)
  local k = d1 == d0 and 0 or (r1 - r0) / (d1 - d0)
  return function(x) return r0 + (x - d0) * k end
end

-- f = svg.log(d0, d1, r0, r1) : logarithmic mapping of [d0, d1] (both > 0) onto [r0, r1]
function M.log(d0, d1, r0, r1)
  local f = M.linear(math.log(d0), math.log(d1), r0, r1)
  return function(x) return f(math.log(x)) end
end

-- s = svg.axis{orient = "bottom"|"left", scale, ticks, at, from, to [, format] [, label]
-- [, grid]} : an axis line at `at` (y for bottom, x for left) spanning from..to in range
-- coordinates, with ticks, labels and an optional title; grid = length of light grid lines
-- drawn across the plot.
function M.axis(o)
  local fmt = o.format or tostring
  local c = M.colors
  local out = {}
  if o.orient == "bottom" then
    for _, t in ipairs(o.ticks) do
      local x = o.scale(t)
      if o.grid then
        out[#out + 1] = M.line { x1 = x, y1 = o.at, x2 = x, y2 = o.at - o.grid, stroke = c.grid }
      end
      out[#out + 1] = M.line { x1 = x, y1 = o.at, x2 = x, y2 = o.at + 5, stroke = c.axis }
      out[#out + 1] = M.text { x = x, y = o.at + 18, ["text-anchor"] = "middle", fill = c.muted,
        text = fmt(t) }
    end
    out[#out + 1] = M.line { x1 = o.from, y1 = o.at, x2 = o.to, y2 = o.at, stroke = c.axis }
    if o.label then
      out[#out + 1] = M.text { x = (o.from + o.to) / 2, y = o.at + 38, ["text-anchor"] = "middle",
        ["font-weight"] = "600", text = o.label }
    end
  else
    for _, t in ipairs(o.ticks) do
      local y = o.scale(t)
      if o.grid then
        out[#out + 1] = M.line { x1 = o.at, y1 = y, x2 = o.at + o.grid, y2 = y, stroke = c.grid }
      end
      out[#out + 1] = M.line { x1 = o.at - 5, y1 = y, x2 = o.at, y2 = y, stroke = c.axis }
      out[#out + 1] = M.text { x = o.at - 8, y = y, dy = "0.32em", ["text-anchor"] = "end",
        fill = c.muted, text = fmt(t) }
    end
    out[#out + 1] = M.line { x1 = o.at, y1 = o.from, x2 = o.at, y2 = o.to, stroke = c.axis }
    if o.label then
      local y = (o.from + o.to) / 2
      local x = o.at - (o.label_offset or 52)
      out[#out + 1] = M.text { x = x, y = y, ["text-anchor"] = "middle", ["font-weight"] = "600",
        transform = string.format("rotate(-90 %s %s)", M.num(x), M.num(y)), text = o.label }
    end
  end
  return M.g({ class = "axis" }, out)
end

-- label = svg.shorten(s, max) : s cut to max characters (UTF-8) with an ellipsis
function M.shorten(s, max)
  s = tostring(s):gsub("[%c]", " ")
  local n = utf8.len(s)
  if not n then return #s <= max and s or (s:sub(1, max) .. "…") end
  if n <= max then return s end
  return s:sub(1, utf8.offset(s, max + 1) - 1) .. "…"
end

local function text_width(s, mono)
  return (utf8.len(s) or #s) * FONT_SIZE * (mono and MONO_WIDTH or 0.56)
end

local LABEL_CHARS = 34

-- Left margin wide enough for the row labels (monospace, shortened).
local function label_margin(labels)
  local w = 0
  for _, l in ipairs(labels) do w = math.max(w, text_width(M.shorten(l, LABEL_CHARS), true)) end
  return math.max(80, math.ceil(w) + 20)
end

local function quantile(sorted, p)
  local n = #sorted
  if n == 0 then return nil end
  local h = (n - 1) * p + 1
  local lo = math.floor(h)
  if lo >= n then return sorted[n] end
  return sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo])
end

-- Deterministic jitter in [-0.5, 0.5) for the i-th point (golden-ratio sequence).
local function jitter(i) return (i * 0.6180339887498949) % 1 - 0.5 end

-- x, step, axis = value_axis(lo, hi, from, to, top, plot_h, label) : the value scale of a
-- horizontal chart (nice ticks over lo..hi drawn from x = from to x = to), its tick step, and
-- the bottom axis of the plot area top..top + plot_h, grid lines across it
local function value_axis(lo, hi, from, to, top, plot_h, label)
  local ticks, step = M.nice_ticks(lo, hi, 6)
  local x = M.linear(ticks[1], ticks[#ticks], from, to)
  return x, step, M.axis { orient = "bottom", scale = x, ticks = ticks, at = top + plot_h,
    from = from, to = to, grid = plot_h, label = label,
    format = function(v) return M.tick_format(v, step) end }
end

local function extent(lo, hi, v)
  if v == nil then return lo, hi end
  return math.min(lo or v, v), math.max(hi or v, v)
end

-- b = svg.box_stats(values [, q1, median, q3]) : {q1, med, q3, wlo, whi, min, max} of a box
-- plot; quartiles (R type 7) computed unless given; whiskers wlo/whi are the furthest values
-- within 1.5 IQR of the box (the box edge when there is none).
function M.box_stats(values, q1, med, q3)
  local sorted = {}
  for j, v in ipairs(values) do sorted[j] = v end
  table.sort(sorted)
  q1 = q1 or quantile(sorted, 0.25)
  q3 = q3 or quantile(sorted, 0.75)
  med = med or quantile(sorted, 0.5)
  local fence_lo, fence_hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
  local wlo, whi
  for _, v in ipairs(sorted) do
    if v >= fence_lo and not wlo then wlo = v end
    if v <= fence_hi then whi = v end
  end
  return { q1 = q1, q3 = q3, med = med, wlo = math.min(wlo or q1, q1), whi = math.max(whi or q3, q3),
    min = math.min(sorted[1] or q1, q1), max = math.max(sorted[#sorted] or q3, q3) }
end

-- s = svg.box_plot{rows, x_label [, format] [, width] [, title] [, outlier_note]} : horizontal
-- box plots on a shared axis, one row per {label, values [, color] [, q1, median, q3, mean]
-- [, outliers = {[i] = true}] [, runs = {[i] = run number}] [, tip]}. Box = quartiles, thick line = median, diamond = mean,
-- whiskers = the furthest values within 1.5 IQR of the box; every value is drawn as a
-- vertically jittered point, the rows' `outliers` in the outlier colour.
function M.box_plot(o)
  local rows, c = o.rows, M.colors
  local width, row_h, top = o.width or 900, 46, 14
  local labels = {}
  for i, r in ipairs(rows) do labels[i] = r.label end
  local left, right = label_margin(labels), 84
  local plot_h = row_h * #rows
  local height = top + plot_h + 78
  local lo, hi
  local prepared = {}
  for i, r in ipairs(rows) do
    local p = M.box_stats(r.values, r.q1, r.median, r.q3)
    prepared[i] = p
    lo, hi = extent(lo, hi, p.min)
    lo, hi = extent(lo, hi, p.max)
  end
  local x, step, axis = value_axis(lo or 0, hi or 1, left, width - right, top, plot_h, o.x_label)
  local fmt = o.format or function(v) return M.tick_format(v, step) end
  local out = { axis }
  for i, r in ipairs(rows) do
    local p = prepared[i]
    local color = r.color or M.palette[(i - 1) % #M.palette + 1]
    local cy = top + row_h * (i - 0.5)
    local bh = row_h * 0.52
    local g = {}
    if i % 2 == 0 then
      g[#g + 1] = M.rect { x = left, y = top + row_h * (i - 1), width = width - right - left,
        height = row_h, fill = "#f6f8fa", ["fill-opacity"] = 0.6 }
    end
    g[#g + 1] = M.text { x = left - 12, y = cy, dy = "0.32em", ["text-anchor"] = "end",
      ["font-family"] = M.mono, title = r.label, text = M.shorten(r.label, LABEL_CHARS) }
    g[#g + 1] = M.line { x1 = x(p.wlo), y1 = cy, x2 = x(p.q1), y2 = cy, stroke = color,
      ["stroke-width"] = 1.5 }
    g[#g + 1] = M.line { x1 = x(p.q3), y1 = cy, x2 = x(p.whi), y2 = cy, stroke = color,
      ["stroke-width"] = 1.5 }
    for _, w in ipairs { p.wlo, p.whi } do
      g[#g + 1] = M.line { x1 = x(w), y1 = cy - bh * 0.3, x2 = x(w), y2 = cy + bh * 0.3,
        stroke = color, ["stroke-width"] = 1.5 }
    end
    g[#g + 1] = M.rect { x = x(p.q1), y = cy - bh / 2, width = math.max(1, x(p.q3) - x(p.q1)),
      height = bh, rx = 2, fill = color, ["fill-opacity"] = 0.16, stroke = color,
      ["stroke-width"] = 1.5, title = r.tip or string.format("%s: median %s, quartiles %s – %s, n = %d",
        r.label, fmt(p.med), fmt(p.q1), fmt(p.q3), #r.values) }
    for j, v in ipairs(r.values) do
      local out_pt = r.outliers and r.outliers[j]
      g[#g + 1] = M.circle { cx = x(v), cy = cy + jitter(j) * bh * 0.8, r = out_pt and 3.4 or 2.4,
        fill = out_pt and c.outlier or color, ["fill-opacity"] = out_pt and 0.95 or 0.55,
        stroke = out_pt and "#ffffff" or nil, ["stroke-width"] = out_pt and 0.8 or nil,
        title = string.format("run %d: %s%s", r.runs and r.runs[j] or j, fmt(v), out_pt and " (outlier)" or "") }
    end
    g[#g + 1] = M.line { x1 = x(p.med), y1 = cy - bh / 2, x2 = x(p.med), y2 = cy + bh / 2,
      stroke = c.text, ["stroke-width"] = 2.5, title = "median " .. fmt(p.med) }
    g[#g + 1] = M.text { x = x(math.max(p.max, p.whi)) + 10, y = cy, dy = "0.32em", fill = c.muted,
      text = fmt(p.med) }
    if r.mean then
      local mx, d = x(r.mean), 4.5
      g[#g + 1] = M.path { d = string.format("M%s %sL%s %sL%s %sL%s %sZ", M.num(mx), M.num(cy - d),
        M.num(mx + d), M.num(cy), M.num(mx), M.num(cy + d), M.num(mx - d), M.num(cy)),
        fill = "#ffffff", stroke = c.text, ["stroke-width"] = 1.3, title = "mean " .. fmt(r.mean) }
    end
    out[#out + 1] = M.g({ class = "row" }, g)
  end
  local ly = height - 14
  local legend = {
    M.rect { x = left, y = ly - 6, width = 16, height = 10, fill = M.colors.axis,
      ["fill-opacity"] = 0.16, stroke = M.colors.axis },
    M.text { x = left + 22, y = ly, dy = "0.32em", fill = c.muted,
      text = "quartiles, whiskers at 1.5 IQR" },
    M.line { x1 = left + 232, y1 = ly - 6, x2 = left + 232, y2 = ly + 6, stroke = c.text,
      ["stroke-width"] = 2.5 },
    M.text { x = left + 240, y = ly, dy = "0.32em", fill = c.muted, text = "median" },
    M.path { d = string.format("M%s %sl4 4l-4 4l-4 -4Z", M.num(left + 302), M.num(ly - 4)),
      fill = "#ffffff", stroke = c.text },
    M.text { x = left + 312, y = ly, dy = "0.32em", fill = c.muted, text = "mean" },
    M.circle { cx = left + 362, cy = ly, r = 2.4, fill = c.axis },
    M.text { x = left + 370, y = ly, dy = "0.32em", fill = c.muted, text = "run" },
    M.circle { cx = left + 412, cy = ly, r = 3.4, fill = c.outlier },
    M.text { x = left + 420, y = ly, dy = "0.32em", fill = c.muted,
      text = o.outlier_note or "outlier" },
  }
  out[#out + 1] = M.g({ class = "legend" }, legend)
  return M.document { width = width, height = height, title = o.title or "Distribution",
    desc = o.desc, content = out }
end

-- s = svg.bar_chart{bars, x_label [, reference] [, left_note, right_note] [, width] [, title]} :
-- one horizontal bar per {label, value [, lo, hi] [, color] [, note] [, tip]}, drawn from the
-- reference value (default 0) to value, with [lo, hi] as an error bar, a dashed vertical line at
-- the reference, and left/right notes (e.g. "faster"/"slower") beside it.
function M.bar_chart(o)
  local bars, c = o.bars, M.colors
  local ref = o.reference or 0
  local width, row_h, top = o.width or 900, 40, 30
  local labels, note_w = {}, 0
  for i, b in ipairs(bars) do
    labels[i] = b.label
    if b.note then note_w = math.max(note_w, text_width(b.note)) end
  end
  local left, right = label_margin(labels), math.ceil(note_w) + 24
  local plot_h = row_h * #bars
  local height = top + plot_h + 56
  local lo, hi = ref, ref
  for _, b in ipairs(bars) do
    lo, hi = extent(lo, hi, b.value)
    lo, hi = extent(lo, hi, b.lo)
    lo, hi = extent(lo, hi, b.hi)
  end
  local x, _, axis = value_axis(lo, hi, left, width - right, top, plot_h, o.x_label)
  local out = { axis }
  local rx = x(ref)
  for i, b in ipairs(bars) do
    local cy = top + row_h * (i - 0.5)
    local bh = row_h * 0.5
    local color = b.color or M.palette[(i - 1) % #M.palette + 1]
    local x0, x1 = math.min(rx, x(b.value)), math.max(rx, x(b.value))
    local g = {
      M.text { x = left - 12, y = cy, dy = "0.32em", ["text-anchor"] = "end",
        ["font-family"] = M.mono, title = b.label, text = M.shorten(b.label, LABEL_CHARS) },
      M.rect { x = x0, y = cy - bh / 2, width = math.max(1, x1 - x0), height = bh, rx = 2,
        fill = color, ["fill-opacity"] = 0.75, title = b.tip },
    }
    local tip_x = x(b.value)
    if b.lo and b.hi then
      local el, eh = x(b.lo), x(b.hi)
      g[#g + 1] = M.line { x1 = el, y1 = cy, x2 = eh, y2 = cy, stroke = c.text,
        ["stroke-width"] = 1.5 }
      for _, ex in ipairs { el, eh } do
        g[#g + 1] = M.line { x1 = ex, y1 = cy - 6, x2 = ex, y2 = cy + 6, stroke = c.text,
          ["stroke-width"] = 1.5 }
      end
      tip_x = math.max(tip_x, eh)
    end
    g[#g + 1] = M.circle { cx = x(b.value), cy = cy, r = 3.5, fill = c.text, title = b.tip }
    if b.note then
      g[#g + 1] = M.text { x = math.max(tip_x, rx) + 10, y = cy, dy = "0.32em", fill = color,
        ["font-weight"] = "600", text = b.note }
    end
    out[#out + 1] = M.g({ class = "bar" }, g)
  end
  out[#out + 1] = M.line { x1 = rx, y1 = top - 8, x2 = rx, y2 = top + plot_h,
    stroke = c.text, ["stroke-dasharray"] = "4 3", ["stroke-width"] = 1.2 }
  if o.left_note then
    out[#out + 1] = M.text { x = rx - 8, y = top - 12, ["text-anchor"] = "end", fill = c.faster,
      ["font-weight"] = "600", text = "← " .. o.left_note }
  end
  if o.right_note then
    out[#out + 1] = M.text { x = rx + 8, y = top - 12, fill = c.slower, ["font-weight"] = "600",
      text = o.right_note .. " →" }
  end
  return M.document { width = width, height = height, title = o.title or "Bar chart",
    desc = o.desc, content = out }
end

-- s = svg.line_chart{series, x_label, y_label [, x_ticks] [, x_log] [, x_format, y_format]
-- [, band_label] [, width, height] [, title]} : one line per {label, points = {{x, y [, lo, hi]
-- [, tip]}} [, color]} with a shaded lo–hi band, markers, a y axis from 0 and a legend below.
-- x_ticks defaults to the distinct x values when there are at most 12; x_log uses a log scale.
-- A single series of at most twelve points has each point labelled with y_format(y) (default:
-- four significant digits).
function M.line_chart(o)
  local c = M.colors
  local width, height = o.width or 900, o.height or 400
  local left, right, top = 84, 28, 16
  local legend_rows, lx, legend = 1, left, {}
  for i, s in ipairs(o.series) do
    local w = text_width(M.shorten(s.label, 48), true) + 44
    if lx + w > width - right and lx > left then
      legend_rows, lx = legend_rows + 1, left
    end
    legend[i] = { x = lx, row = legend_rows }
    lx = lx + w
  end
  local has_band = false
  for _, s in ipairs(o.series) do
    for _, p in ipairs(s.points) do has_band = has_band or (p.lo ~= nil and p.hi ~= nil) end
  end
  local legend_h = 22 * legend_rows + (has_band and 22 or 0)
  local bottom = height - 58 - legend_h
  local xs, seen, ymax, xlo, xhi = {}, {}, 0, nil, nil
  for _, s in ipairs(o.series) do
    for _, p in ipairs(s.points) do
      if not seen[p.x] then seen[p.x], xs[#xs + 1] = true, p.x end
      xlo, xhi = extent(xlo, xhi, p.x)
      ymax = math.max(ymax, p.hi or p.y, p.y)
    end
  end
  table.sort(xs)
  xlo, xhi = xlo or 0, xhi or 1
  local xticks, xstep = o.x_ticks, nil
  if not xticks then
    if #xs <= 12 and #xs > 1 then
      xticks = xs
    else
      xticks, xstep = M.nice_ticks(xlo, xhi, 6)
      xlo, xhi = xticks[1], xticks[#xticks]
    end
  end
  local pad = (width - left - right) * 0.03
  local x
  if o.x_log and xlo > 0 and xhi > xlo then
    x = M.log(xlo, xhi, left + pad, width - right - pad)
  elseif xhi > xlo then
    x = M.linear(xlo, xhi, left + pad, width - right - pad)
  else
    x = function() return (left + width - right) / 2 end
  end
  local yticks, ystep = M.nice_ticks(0, ymax > 0 and ymax or 1, 5)
  local y = M.linear(0, yticks[#yticks], bottom, top)
  local yfmt = o.y_format or M.sig
  local label_points = #o.series == 1 and #xs <= 12
  local out = {}
  out[#out + 1] = M.axis { orient = "left", scale = y, ticks = yticks, at = left, from = bottom,
    to = top, grid = width - right - left, label = o.y_label,
    format = function(v) return M.tick_format(v, ystep) end }
  out[#out + 1] = M.axis { orient = "bottom", scale = x, ticks = xticks, at = bottom, from = left,
    to = width - right, label = o.x_label,
    format = o.x_format or function(v) return xstep and M.tick_format(v, xstep) or tostring(v) end }
  for i, s in ipairs(o.series) do
    local color = s.color or M.palette[(i - 1) % #M.palette + 1]
    local pts = {}
    for j, p in ipairs(s.points) do pts[j] = p end
    table.sort(pts, function(a, b) return a.x < b.x end)
    local band_top, band_bottom, line = {}, {}, {}
    for j, p in ipairs(pts) do
      line[j] = (j == 1 and "M" or "L") .. M.num(x(p.x)) .. " " .. M.num(y(p.y))
      if p.lo and p.hi then
        band_top[#band_top + 1] = M.num(x(p.x)) .. " " .. M.num(y(p.hi))
        table.insert(band_bottom, 1, M.num(x(p.x)) .. " " .. M.num(y(p.lo)))
      end
    end
    local g = {}
    if #band_top > 1 then
      g[#g + 1] = M.path { d = "M" .. table.concat(band_top, "L") .. "L" ..
        table.concat(band_bottom, "L") .. "Z", fill = color, ["fill-opacity"] = 0.15 }
    end
    for _, p in ipairs(pts) do
      if p.lo and p.hi and #band_top <= 1 then
        g[#g + 1] = M.line { x1 = x(p.x), y1 = y(p.lo), x2 = x(p.x), y2 = y(p.hi), stroke = color,
          ["stroke-opacity"] = 0.5, ["stroke-width"] = 6 }
      end
    end
    g[#g + 1] = M.path { d = table.concat(line), fill = "none", stroke = color,
      ["stroke-width"] = 2.2, ["stroke-linejoin"] = "round" }
    for _, p in ipairs(pts) do
      g[#g + 1] = M.circle { cx = x(p.x), cy = y(p.y), r = 4.2, fill = color, stroke = "#ffffff",
        ["stroke-width"] = 1.5, title = p.tip }
      if label_points then
        g[#g + 1] = M.text { x = x(p.x), y = y(p.hi or p.y) - 9, ["text-anchor"] = "middle",
          ["font-size"] = 11, fill = color, text = yfmt(p.y) }
      end
    end
    out[#out + 1] = M.g({ class = "series" }, g)
    local l = legend[i]
    local ly = bottom + 58 + 22 * (l.row - 1)
    out[#out + 1] = M.g({ class = "legend" }, {
      M.line { x1 = l.x, y1 = ly, x2 = l.x + 22, y2 = ly, stroke = color, ["stroke-width"] = 2.2 },
      M.circle { cx = l.x + 11, cy = ly, r = 3.6, fill = color, stroke = "#ffffff" },
      M.text { x = l.x + 30, y = ly, dy = "0.32em", ["font-family"] = M.mono, title = s.label,
        text = M.shorten(s.label, 48) },
    })
  end
  if has_band then
    local ly = bottom + 58 + 22 * legend_rows
    out[#out + 1] = M.g({ class = "legend" }, {
      M.rect { x = left, y = ly - 6, width = 22, height = 12, fill = c.axis, ["fill-opacity"] = 0.3 },
      M.text { x = left + 30, y = ly, dy = "0.32em", fill = c.muted,
        text = o.band_label or "band: lo–hi" },
    })
  end
  return M.document { width = width, height = height, title = o.title or "Line chart",
    desc = o.desc, content = out }
end

return M
