-- Flame graphs of folded stacks: parsing, the hottest frames, an interactive self-contained SVG
-- (one graph, or the difference of two), and re-exports of the JSON exports in wb.trace.
--
-- Folded text: one stack per line, frames root-first joined by ";", then a space and an integer
-- count (samples, or ns of off-CPU time). Kernel frames end in "_[k]".
--
-- The SVG draws the root at the bottom ("all", the whole input) and each caller's callees above
-- it, siblings in byte order of their names, widths proportional to counts. Frames narrower than
-- min_width_px are not drawn (their time stays in their parent's width). An embedded script
-- (no external resource) adds: hover details, click to zoom, Reset Zoom, Search (a regular
-- expression; Ctrl-F or "/"), Escape to reset; the URL query `?s=REGEX` searches and `?x=NAME`
-- zooms into the widest frame of that name when the file is opened.
local svg = require "wb.svg"
local trace = require "wb.trace"
local util = require "wb.util"

local M = {}

local PAD, TOP, BOTTOM = 10, 66, 34
local FRAME_H, RECT_H = 16, 15
local FONT_SIZE = 12
local CHAR_W = FONT_SIZE * 0.61
local NEUTRAL = { 232, 232, 232 }
local MORE, LESS = { 230, 85, 65 }, { 75, 135, 225 }
local HIGHLIGHT = { flame = "#e600e6", diff = "#16b15c" }

-- Hue, saturation and lightness ranges of user and kernel frames per palette.
local PALETTES = {
  hot = { user = { 0, 48, 0.80, 0.95, 0.52, 0.62 }, kernel = { 172, 192, 0.45, 0.60, 0.52, 0.64 } },
  io = { user = { 196, 232, 0.55, 0.75, 0.56, 0.68 }, kernel = { 262, 288, 0.35, 0.50, 0.62, 0.72 } },
  mem = { user = { 88, 138, 0.45, 0.60, 0.46, 0.58 }, kernel = { 26, 44, 0.70, 0.85, 0.58, 0.66 } },
}

-- ---- parsing -------------------------------------------------------------------------------

-- stacks, total = flame.parse(folded_text) : {{frames = {root, ..., leaf}, count = N}, ...} in
-- input order and the sum of the counts. Tolerant: CRLF, a UTF-8 BOM and blank lines are
-- accepted; the count is the last whitespace-separated field (frame names may hold spaces);
-- empty frames (";;") are dropped; lines without a non-negative integer count, without frames
-- or with a zero count are skipped.
function M.parse(text)
  if type(text) ~= "string" then error("flame.parse: folded text expected, got " .. type(text), 2) end
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
  local stacks, total = {}, 0
  for line in text:gmatch("[^\n]+") do
    local stack, digits = line:match("^%s*(.*%S)%s+(%d+)%s*$")
    local count = digits and math.tointeger(tonumber(digits))
    if count and count > 0 then
      local frames = {}
      for f in stack:gmatch("[^;]+") do frames[#frames + 1] = f end
      if #frames > 0 then
        stacks[#stacks + 1] = { frames = frames, count = count }
        total = total + count
      end
    end
  end
  return stacks, total
end

-- Folded text or an already parsed list of stacks.
local function stacks_of(folded, what)
  if type(folded) == "string" then return M.parse(folded) end
  if type(folded) ~= "table" then
    error(string.format("flame.%s: folded text or parsed stacks expected, got %s", what, type(folded)), 3)
  end
  local total = 0
  for _, st in ipairs(folded) do total = total + st.count end
  return folded, total
end

-- top = flame.top(folded [, n]) : the n (default all) frames with the most self count:
-- {{name, self, total, self_fraction, total_fraction}, ...} sorted by self, then total, then
-- name. self counts stacks ending in the frame, total stacks containing it (once per stack
-- even when recursive); fractions are of the whole input. folded may be text or parse()'s list.
function M.top(folded, n)
  return require("wb.capture_fold").top((stacks_of(folded, "top")), n, { first = 1 })
end

-- ---- text and colour -----------------------------------------------------------------------

-- s with invalid UTF-8 and characters XML 1.0 forbids replaced by U+FFFD.
local function clean(s)
  if not s:find("[\0-\8\11\12\14-\31\128-\255]") then return s end
  local out, i = {}, 1
  while i <= #s do
    local ok, bad = utf8.len(s, i)
    if ok then
      out[#out + 1] = s:sub(i)
      break
    end
    out[#out + 1] = s:sub(i, bad - 1) .. "\u{FFFD}"
    i = bad + 1
  end
  s = table.concat(out):gsub("[\0-\8\11\12\14-\31]", "\u{FFFD}")
  return (s:gsub("\239\191[\190\191]", "\u{FFFD}"))
end

local thousands = util.thousands

local function duration(ns)
  local a = math.abs(ns)
  if a < 1e3 then return string.format("%s ns", thousands(ns)) end
  if a < 1e6 then return string.format("%.2f µs", ns / 1e3) end
  if a < 1e9 then return string.format("%.2f ms", ns / 1e6) end
  return string.format("%.3f s", ns / 1e9)
end

local bytes = util.format_bytes

local function amount(n, unit)
  if unit == "ns" then return duration(n) end
  if unit == "bytes" then return bytes(n) end
  return thousands(n) .. (n == 1 and " sample" or " samples")
end

local function quantity(n, unit)
  return unit == "ns" and duration(n) or unit == "bytes" and bytes(n) or thousands(n)
end

local function signed(n, unit)
  return (n > 0 and "+" or n < 0 and "−" or "±") .. quantity(math.abs(n), unit)
end

local function pct(f) return string.format("%.2f%%", f * 100) end

local function fnv(s)
  local h = 2166136261
  for i = 1, #s do h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff end
  return h
end

local function hex(r, g, b)
  return string.format("#%02x%02x%02x", math.floor(r + 0.5), math.floor(g + 0.5), math.floor(b + 0.5))
end

-- The CSS Color 4 HSL conversion; h in degrees, s and l in [0, 1].
local function hsl(h, s, l)
  local a = s * math.min(l, 1 - l)
  local function channel(n)
    local k = (n + h / 30) % 12
    return (l - a * math.max(-1, math.min(k - 3, 9 - k, 1))) * 255
  end
  return hex(channel(0), channel(8), channel(4))
end

-- A colour that depends only on the name: its hash picks hue, saturation and lightness within
-- the palette's range for user or kernel ("_[k]") frames.
local function name_color(name, palette)
  local r = name:sub(-4) == "_[k]" and palette.kernel or palette.user
  local h = fnv(name)
  local u1, u2, u3 = (h & 1023) / 1023, ((h >> 10) & 1023) / 1023, ((h >> 20) & 1023) / 1023
  return hsl(r[1] + (r[2] - r[1]) * u1, r[3] + (r[4] - r[3]) * u2, r[5] + (r[6] - r[5]) * u3)
end

local function mix(a, b, t)
  return hex(a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t, a[3] + (b[3] - a[3]) * t)
end

-- The label drawn in a frame w px wide: the name, or its first three or more characters and
-- "..", or nothing.
local function fit(name, w)
  local room = math.floor((w - 6) / CHAR_W)
  if utf8.len(name) <= room then return name end
  if room < 5 then return "" end
  return name:sub(1, utf8.offset(name, room - 1) - 1) .. ".."
end

-- ---- the frame tree and its layout ---------------------------------------------------------

-- The call tree: node = {name, n = count including callees, kids = {[name] = node} or nil}.
local function build(stacks)
  local root = { name = "all", n = 0 }
  for _, st in ipairs(stacks) do
    local c = st.count
    local node = root
    node.n = node.n + c
    for _, f in ipairs(st.frames) do
      local kids = node.kids or {}
      node.kids = kids
      local kid = kids[f]
      if not kid then
        kid = { name = f, n = 0 }
        kids[f] = kid
      end
      kid.n = kid.n + c
      node = kid
    end
  end
  return root
end

-- The frames wide enough to draw, in pre-order: {node, d = depth, s = offset in counts, base =
-- the node at the same path in `base_root` (diff)}; and the greatest depth drawn.
local function layout(root, scale, min_px, base_root)
  local list, maxd = {}, 0
  local function visit(node, depth, s, base)
    list[#list + 1] = { node = node, d = depth, s = s, base = base }
    if depth > maxd then maxd = depth end
    local kids = node.kids
    if not kids then return end
    local names = {}
    for name in pairs(kids) do names[#names + 1] = name end
    table.sort(names)
    local base_kids = base and base.kids
    for _, name in ipairs(names) do
      local kid = kids[name]
      if kid.n * scale >= min_px then visit(kid, depth + 1, s, base_kids and base_kids[name]) end
      s = s + kid.n
    end
  end
  if root.n > 0 then visit(root, 0, 0, base_root) end
  return list, maxd
end

-- ---- the document --------------------------------------------------------------------------

local CSS = [[
.f{cursor:pointer}
.f text{pointer-events:none;fill:#1f2328}
.f:hover rect{stroke:#1f2328;stroke-width:.8}
.anc rect{fill-opacity:.55}
.hide{display:none}
.btn{cursor:pointer}
.btn rect{fill:#ffffff;stroke:#c4cbd3}
.btn:hover rect{fill:#eef1f4}
.btn text{pointer-events:none}
]]

-- The script (lua/wb/flame.js, embedded in the binary), run when the parser reaches the end of
-- the document: everything above it exists.
local SCRIPT = require "wb.flame_js"
SCRIPT = SCRIPT:sub((SCRIPT:find("\n[^/]") or 0) + 1) -- without its leading comment lines

local function button(id, x, w, label, hidden)
  return string.format('<g id="%s" class="btn%s"><rect x="%s" y="10" width="%s" height="22" rx="4"/>'
    .. '<text id="%s-label" x="%s" y="25" text-anchor="middle">%s</text></g>\n', id,
    hidden and " hide" or "", svg.num(x), svg.num(w), id, svg.num(x + w / 2), label)
end

-- The whole document. style = {kind = "flame"|"diff", desc, subtitle, color(f, name), tip(f, name)
-- [, legend] [, base = the BASE tree] [, prepare(list) called with the frames to draw]}.
local function render(root, opts, style)
  local width, min_px = opts.width or 1200, opts.min_width_px or 0.1
  local span = width - 2 * PAD
  local scale = root.n > 0 and span / root.n or 0
  local list, maxd = layout(root, scale, min_px, style.base)
  if style.prepare then style.prepare(list) end
  local height = TOP + (maxd + 1) * FRAME_H + BOTTOM
  local esc = svg.escape
  local title = clean(tostring(opts.title or (style.kind == "diff" and "Differential Flame Graph"
    or "Flame Graph")))
  local out = {
    '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
    string.format('<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%s" height="%s" '
      .. 'viewBox="0 0 %s %s" font-family="%s" font-size="%d">\n', svg.num(width), svg.num(height),
      svg.num(width), svg.num(height), esc(svg.mono), FONT_SIZE),
    "<title>", esc(title), "</title>\n",
    "<desc>", esc(style.desc), "</desc>\n",
    "<style>", CSS, "</style>\n",
    '<defs><linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#ffffff"/>'
      .. '<stop offset="1" stop-color="#f1f3f5"/></linearGradient></defs>\n',
    string.format('<rect width="%s" height="%s" fill="url(#bg)"/>\n', svg.num(width), svg.num(height)),
    string.format('<text id="title" x="%s" y="26" text-anchor="middle" font-family="%s" font-size="17" '
      .. 'font-weight="600" fill="%s">%s</text>\n', svg.num(width / 2), esc(svg.font), svg.colors.text,
      esc(title)),
    string.format('<text id="subtitle" x="%s" y="46" text-anchor="middle" font-family="%s" fill="%s">%s'
      .. '</text>\n', svg.num(width / 2), esc(svg.font), svg.colors.muted, esc(style.subtitle)),
    '<g font-family="', esc(svg.font), '" fill="', svg.colors.text, '">\n',
    button("unzoom", PAD, 92, "Reset Zoom", true),
    button("search", width - PAD - 104, 104, "Search", false),
    "</g>\n",
    style.legend or "",
  }
  if #list == 0 then
    out[#out + 1] = string.format('<text x="%s" y="%s" text-anchor="middle" fill="%s">no samples</text>\n',
      svg.num(width / 2), svg.num(TOP + RECT_H / 2 + 4), svg.colors.muted)
  end
  out[#out + 1] = '<g id="frames">\n'
  local names = {}
  for _, f in ipairs(list) do
    local node = f.node
    local name = names[node.name]
    if not name then
      name = clean(node.name)
      names[node.name] = name
    end
    local x, w = PAD + f.s * scale, node.n * scale
    local y = TOP + (maxd - f.d) * FRAME_H
    out[#out + 1] = string.format('<g class="f" data-d="%d" data-s="%d" data-n="%d"><title>%s</title>'
      .. '<rect x="%s" y="%s" width="%s" height="%d" rx="1.5" fill="%s"/><text x="%s" y="%s">%s</text>'
      .. '</g>\n', f.d, f.s, node.n, esc(style.tip(f, name)), svg.num(x), svg.num(y), svg.num(w),
      RECT_H, style.color(f, name), svg.num(x + 3), svg.num(y + 11.5), esc(fit(name, w)))
  end
  out[#out + 1] = "</g>\n"
  out[#out + 1] = string.format('<g font-family="%s" fill="%s"><text id="details" x="%s" y="%s">%s</text>'
    .. '<text id="matched" x="%s" y="%s" text-anchor="end"></text></g>\n', esc(svg.font), svg.colors.text,
    svg.num(PAD), svg.num(height - 12), #list > 0 and "Hover over a frame for details · click to zoom · "
      .. "Ctrl-F or / to search · Esc to reset" or " ", svg.num(width - PAD), svg.num(height - 12))
  local config = string.format('{"w": %s, "pad": %d, "charw": %s, "highlight": "%s"}', svg.num(width),
    PAD, svg.num(CHAR_W), HIGHLIGHT[style.kind])
  out[#out + 1] = '<script type="text/ecmascript"><![CDATA[\n'
  out[#out + 1] = (SCRIPT:gsub("__CONFIG__", config))
  out[#out + 1] = "]]></script>\n</svg>\n"
  return table.concat(out)
end

-- The unit, after checking the options shared by svg() and diff_svg().
local function check_opts(opts)
  local unit, width, min_px = opts.unit or "samples", opts.width or 1200, opts.min_width_px or 0.1
  if unit ~= "samples" and unit ~= "ns" and unit ~= "bytes" then
    error("flame: unit must be \"samples\", \"ns\" or \"bytes\"", 3)
  end
  if type(width) ~= "number" or width < 200 then error("flame: width must be a number >= 200", 3) end
  if type(min_px) ~= "number" or min_px < 0 then error("flame: min_width_px must be a number >= 0", 3) end
  return unit
end

-- svg_text = flame.svg(folded [, {title, unit = "samples"|"ns"|"bytes", width = 1200, min_width_px =
-- 0.1, colors = "hot"|"io"|"mem"}]) : an interactive flame graph (see the top of this file). Each
-- frame's tooltip reads "name (N samples, P%)" (a duration for unit "ns", KiB/MiB for "bytes"), P
-- of the total.
function M.svg(folded, opts)
  opts = opts or {}
  local unit = check_opts(opts)
  local palette = PALETTES[opts.colors or "hot"]
  if not palette then error("flame.svg: colors must be \"hot\", \"io\" or \"mem\"", 2) end
  local stacks, total = stacks_of(folded, "svg")
  local root = build(stacks)
  local colors = {}
  return render(root, opts, {
    kind = "flame",
    desc = string.format("Flame graph of %d stacks, %s in total; root at the bottom, width "
      .. "proportional to %s; frames narrower than %s px are not drawn.", #stacks, amount(total, unit),
      unit == "ns" and "time" or unit, svg.num(opts.min_width_px or 0.1)),
    subtitle = #stacks > 0 and string.format("%s · %s stacks", amount(total, unit), thousands(#stacks))
      or "empty profile",
    color = function(_, name)
      local c = colors[name]
      if not c then
        c = name_color(name, palette)
        colors[name] = c
      end
      return c
    end,
    tip = function(f, name)
      return string.format("%s (%s, %s)", name, amount(f.node.n, unit), pct(f.node.n / total))
    end,
  })
end

-- svg_text = flame.diff_svg(base_folded, new_folded [, {title, unit, width, min_width_px, only}]) :
-- a differential flame graph. Frames and widths come from NEW; each frame is coloured by the change
-- of its share of all samples (inclusive) from BASE to NEW: red where NEW has more, blue where
-- less, neutral grey where equal, intensity proportional to the change relative to the largest
-- change drawn; with only (a set of frame names), frames of other names stay grey. Tooltips give
-- both counts, the difference and both shares.
function M.diff_svg(base_folded, new_folded, opts)
  opts = opts or {}
  local unit = check_opts(opts)
  local base_stacks, base_total = stacks_of(base_folded, "diff_svg")
  local new_stacks, new_total = stacks_of(new_folded, "diff_svg")
  local root, base_root = build(new_stacks), build(base_stacks)
  local function shares(f)
    local b = f.base and f.base.n or 0
    return f.node.n / new_total, base_total > 0 and b / base_total or 0, b
  end
  local biggest = 0
  local lx = PAD + 104
  local legend = string.format('<g font-family="%s" fill="%s" font-size="11">'
    .. '<rect x="%s" y="14" width="12" height="12" rx="2" fill="%s"/><text x="%s" y="24">more in new</text>'
    .. '<rect x="%s" y="14" width="12" height="12" rx="2" fill="%s"/><text x="%s" y="24">less in new</text>'
    .. '</g>\n', svg.escape(svg.font), svg.colors.muted, lx, mix(NEUTRAL, MORE, 1), lx + 16,
    lx + 96, mix(NEUTRAL, LESS, 1), lx + 112)
  return render(root, opts, {
    kind = "diff",
    base = base_root,
    desc = string.format("Differential flame graph: widths from NEW (%s), colours from the change "
      .. "in share against BASE (%s): red more, blue less.", amount(new_total, unit),
      amount(base_total, unit)),
    subtitle = string.format("width: new (%s) · colour: change in share from base (%s)%s",
      amount(new_total, unit), amount(base_total, unit), opts.only and ", only where beyond run-to-run noise" or ""),
    legend = legend,
    prepare = function(list)
      for _, f in ipairs(list) do
        local new, old = shares(f)
        biggest = math.max(biggest, math.abs(new - old))
      end
    end,
    color = function(f, name)
      local new, old = shares(f)
      local d = new - old
      if math.abs(d) <= 1e-12 or (opts.only and not opts.only[name]) then return hex(table.unpack(NEUTRAL)) end
      return mix(NEUTRAL, d > 0 and MORE or LESS, math.abs(d) / biggest)
    end,
    tip = function(f, name)
      local new, old, b = shares(f)
      return string.format("%s (base %s, new %s%s, %s; share %s → %s, %s%.2f pp)", name,
        quantity(b, unit), quantity(f.node.n, unit), unit == "samples" and " samples" or "",
        signed(f.node.n - b, unit), pct(old), pct(new), new - old >= 0 and "+" or "−",
        math.abs(new - old) * 100)
    end,
  })
end

M.SPINE = 0.95

-- The amount of each frame name in one folded text: inclusive (each stack counted once per
-- name), or with self, only where the name is the stack's leaf.
local function amounts_of(text, self, depths)
  local stacks, total = M.parse(text)
  local out = { [""] = total } -- "": the whole (no frame has an empty name)
  for _, st in ipairs(stacks) do
    if self then
      local leaf = st.frames[#st.frames]
      out[leaf] = (out[leaf] or 0) + st.count
    else
      local seen = {}
      for d, f in ipairs(st.frames) do
        if not seen[f] then
          seen[f] = true
          out[f] = (out[f] or 0) + st.count
          if depths then -- the depth weighted by amount: a truncated stack's few samples do not move it
            local w = depths[f] or { 0, 0 }
            w[1], w[2] = w[1] + d * st.count, w[2] + st.count
            depths[f] = w
          end
        end
      end
    end
  end
  return out
end

-- set = flame.spine(runs [, share]) : the frame names that hold at least share (flame.SPINE) of
-- every run's time, a run being a list of {folded text, scale} (its on- and off-CPU profiles,
-- scale turning their amounts into seconds): the program's spine (_start, main), which explains
-- no change apart from the frames under it
function M.spine(runs, share)
  share = share or M.SPINE
  local set
  for _, run in ipairs(runs) do
    local amounts, total = {}, 0
    for _, part in ipairs(run) do
      local a = amounts_of(part[1])
      total = total + a[""] * part[2]
      for name, v in pairs(a) do
        if name ~= "" then amounts[name] = (amounts[name] or 0) + v * part[2] end
      end
    end
    local keep = {}
    for name, v in pairs(amounts) do
      if v >= share * total and (set == nil or set[name]) then keep[name] = true end
    end
    set = keep
  end
  return set or {}
end

-- The mean amount of each path ("a;b;c", in seconds) over runs, a run being a list of
-- {folded text, scale}; and each path's children.
local function path_means(runs, kids)
  local sum = {}
  for _, run in ipairs(runs) do
    for _, part in ipairs(run) do
      for _, st in ipairs(M.parse(part[1])) do
        local path
        for _, f in ipairs(st.frames) do
          local parent = path
          path = path and (path .. ";" .. f) or f
          if not sum[path] then
            sum[path] = 0
            local list = kids[parent or ""] or {}
            list[#list + 1] = path
            kids[parent or ""] = list
          end
          sum[path] = sum[path] + st.count * part[2]
        end
      end
    end
  end
  for k, v in pairs(sum) do sum[k] = v / math.max(#runs, 1) end
  return sum
end

-- path = flame.culprit(base_runs, new_runs) : where a change between two sets of repeated
-- profiles concentrates, a run being a list of {folded text, scale} (its on- and off-CPU
-- profiles in seconds, taken as one tree): from the root, down the child that carries at least
-- 80% of its parent's change, to the first such child that has a sibling holding 5% of the
-- parent's time (wb's bracketed markers, "[run queue]", do not count): the function that changed
-- beside others that did not; or, where no child carries the change, the frame whose own time
-- holds it. Returns the path ("app;main;wait_for_data"), its change (seconds) and its means.
function M.culprit(base_runs, new_runs)
  local kids = {}
  local b, n = path_means(base_runs, kids), path_means(new_runs, kids)
  local function mean(t, path) return t[path] or 0 end
  local function delta(path) return mean(n, path) - mean(b, path) end
  local function by_change(list)
    local sorted = table.move(list, 1, #list, 1, {})
    table.sort(sorted, function(x, y)
      if math.abs(delta(x)) ~= math.abs(delta(y)) then return math.abs(delta(x)) > math.abs(delta(y)) end
      return x < y
    end)
    return sorted
  end
  local roots = by_change(kids[""] or {})
  local node = roots[1]
  while node do
    local list = by_change(kids[node] or {})
    local top = list[1]
    if not top or math.abs(delta(top)) < 0.8 * math.abs(delta(node)) then break end
    local size, others = math.max(mean(b, node), mean(n, node)), 0
    for _, k in ipairs(list) do
      if k ~= top and not k:match("%[[^;]*%]$") and math.max(mean(b, k), mean(n, k)) >= 0.05 * size then
        others = others + 1
      end
    end
    node = top
    if others > 0 then break end
  end
  if not node then return nil end
  return node, delta(node), mean(b, node), mean(n, node)
end

-- rows = flame.changed_frames(base_texts, new_texts [, {scale = 1, alpha = 0.05, min = 0, self, spine}]) :
-- the frames whose inclusive (with self: self) time changed beyond run-to-run noise between two sets of repeated
-- profiles of the same work (folded texts, one per run): for every frame name whose mean amount
-- (times scale: 1/freq for samples, 1e-9 for ns) reaches min on either side, its amounts per run
-- on each side compared by the two-sided Mann–Whitney test (wb.verdict.test), the frames together
-- by Benjamini–Hochberg. Each row {name, base, new (means), delta, p, q, significant, depth (its
-- mean position in its stacks, 1 the root, weighted by amount; inclusive only), everywhere
-- (inclusive only: the frame is in opts.spine, a set from flame.spine, or without it holds at
-- least flame.SPINE of every run's time in these profiles, as main does)}, the significant ones
-- first, by |delta|.
function M.changed_frames(base_texts, new_texts, opts)
  opts = opts or {}
  local scale, alpha, min = opts.scale or 1, opts.alpha or 0.05, opts.min or 0
  local depths = {} -- each name's position in its stacks (1: the root), weighted by amount
  local function per_run(texts)
    local runs = {}
    for i, t in ipairs(texts) do runs[i] = amounts_of(t, opts.self, depths) end
    return runs
  end
  local b, n = per_run(base_texts), per_run(new_texts)
  local names = {}
  for _, side in ipairs({ b, n }) do
    for _, run in ipairs(side) do
      for name in pairs(run) do names[name] = true end
    end
  end
  local verdict = require "wb.verdict"
  local rows, ps = {}, {}
  local function amounts(side, name)
    local xs, sum = {}, 0
    for i, run in ipairs(side) do
      xs[i] = (run[name] or 0) * scale
      sum = sum + xs[i]
    end
    return xs, sum / math.max(#xs, 1)
  end
  names[""] = nil
  -- a frame in (nearly) every stack of every run, the program's spine (_start, main: all but the
  -- loader's first samples), explains nothing apart
  local function everywhere(name)
    for _, side in ipairs({ b, n }) do
      for _, run in ipairs(side) do
        if (run[name] or 0) < M.SPINE * run[""] then return false end
      end
    end
    return true
  end
  for name in pairs(names) do
    local bx, bm = amounts(b, name)
    local nx, nm = amounts(n, name)
    if math.max(bm, nm) >= min then
      local t = verdict.test(bx, nx, { stat = "mean", resamples = 200, seed = 1 })
      local dw = depths[name]
      local row = { name = name, base = bm, new = nm, delta = nm - bm, p = t and t.p or 1,
        depth = dw and dw[2] > 0 and dw[1] / dw[2] or nil,
        everywhere = not opts.self and (opts.spine and opts.spine[name] or not opts.spine and everywhere(name)) or false }
      rows[#rows + 1] = row
      ps[#ps + 1] = row.p
    end
  end
  local q = verdict.bh(ps)
  for i, row in ipairs(rows) do
    row.q = q[i]
    row.significant = row.q < alpha and row.delta ~= 0
  end
  table.sort(rows, function(x, y)
    if x.significant ~= y.significant then return x.significant end
    if math.abs(x.delta) ~= math.abs(y.delta) then return math.abs(x.delta) > math.abs(y.delta) end
    return x.name < y.name
  end)
  return rows
end

-- json_text = flame.speedscope(folded [, {name = "profile", unit = "none"|"nanoseconds"|...,
-- located}]) : a speedscope file with one sampled profile (see wb.trace.speedscope); located
-- (capture_fold.fold's info.located) replaces folded: the stacks apart by their leaf's file:line.
function M.speedscope(folded, opts)
  local stacks = opts and opts.located or stacks_of(folded, "speedscope")
  local names, cleaned = {}, {}
  for i, st in ipairs(stacks) do
    local frames = {}
    for j, f in ipairs(st.frames) do
      local c = names[f]
      if not c then
        c = clean(f)
        names[f] = c
      end
      frames[j] = c
    end
    cleaned[i] = { frames = frames, count = st.count, leaf = st.leaf, file = st.file, line = st.line }
  end
  return trace.speedscope(cleaned, opts)
end

M.trace = trace.encode
M.trace_from_stages = trace.from_stages
M.trace_from_runs = trace.from_runs

return M
