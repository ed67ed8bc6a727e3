-- The memory of a process tree over time as an SVG line chart: the tree's RSS (and PSS), the
-- processes with the highest peaks, and stage bands when the application reported its stages.
--
--   local svg_text = require("wb.memory_chart").svg(r, {title = "...", stages = {{name, from, to}}, top = 5})
--   -- r: what wb.memory's sampler returned (timeline, processes, peak)
local svg = require "wb.svg"

local M = {}

local W, H = 900, 360
local PAD = { left = 72, right = 250, top = 36, bottom = 52 }

local function mib(kb) return kb / 1024 end

-- The points of a series as an SVG path ("M x,y L x,y ..."): steps, since each sample holds until
-- the next.
local function path_of(ts, vs, x, y)
  local parts = {}
  for i = 1, #ts do
    local px, py = svg.num(x(ts[i])), svg.num(y(mib(vs[i])))
    if i == 1 then
      parts[1] = "M" .. px .. "," .. py
    else
      parts[#parts + 1] = "H" .. px .. "V" .. py
    end
  end
  return table.concat(parts, " ")
end

-- text = memory_chart.svg(r [, {title, stages, top = 5}])
function M.svg(r, opts)
  opts = opts or {}
  local tl = r.timeline
  local t_end = math.max(tl.t[#tl.t] or 0, 1e-3)
  local peak = 0
  for _, v in ipairs(tl.rss_kb) do peak = math.max(peak, mib(v)) end
  local xt, xstep = svg.nice_ticks(0, t_end, 6)
  local yt, ystep = svg.nice_ticks(0, math.max(peak, 1), 5)
  local x = svg.linear(xt[1], xt[#xt], PAD.left, W - PAD.right)
  local y = svg.linear(yt[1], yt[#yt], H - PAD.bottom, PAD.top)
  local out = {}
  for i, st in ipairs(opts.stages or {}) do -- stage bands under the lines
    local x0, x1 = x(math.max(st[2], 0)), x(math.min(st[3], xt[#xt]))
    out[#out + 1] = svg.rect { x = x0, y = PAD.top, width = math.max(x1 - x0, 0.5), height = H - PAD.top - PAD.bottom,
      fill = i % 2 == 1 and "#eef2f6" or "#f6f8fa" }
    out[#out + 1] = svg.text { x = (x0 + x1) / 2, y = PAD.top - 6, ["text-anchor"] = "middle", fill = svg.colors.muted,
      ["font-size"] = 11, text = svg.shorten(st[1], math.max(3, math.floor((x1 - x0) / 7))) }
  end
  out[#out + 1] = svg.axis { orient = "bottom", scale = x, ticks = xt, at = H - PAD.bottom, from = PAD.left,
    to = W - PAD.right, label = "time [s]", format = function(v) return svg.tick_format(v, xstep) end }
  out[#out + 1] = svg.axis { orient = "left", scale = y, ticks = yt, at = PAD.left, from = H - PAD.bottom,
    to = PAD.top, label = "memory [MiB]", grid = W - PAD.left - PAD.right,
    format = function(v) return svg.tick_format(v, ystep) end }
  local procs = {}
  for _, p in ipairs(r.processes) do procs[#procs + 1] = p end
  table.sort(procs, function(a, b) return a.peak_rss_kb > b.peak_rss_kb end)
  local legend, ly = {}, PAD.top
  local function key(color, label, width, dash)
    legend[#legend + 1] = svg.line { x1 = W - PAD.right + 16, y1 = ly, x2 = W - PAD.right + 40, y2 = ly, stroke = color,
      ["stroke-width"] = width, ["stroke-dasharray"] = dash }
    legend[#legend + 1] = svg.text { x = W - PAD.right + 46, y = ly, dy = "0.32em", ["font-size"] = 12,
      text = svg.shorten(label, 32) }
    ly = ly + 18
  end
  for i = 1, math.min(opts.top or 5, #procs) do
    local p = procs[i]
    if #p.series.t > 1 or #procs == 1 then
      local color = svg.palette[(i - 1) % #svg.palette + 1]
      out[#out + 1] = svg.path { d = path_of(p.series.t, p.series.rss_kb, x, y), fill = "none", stroke = color,
        ["stroke-width"] = 1.5, opacity = 0.85 }
      key(color, string.format("%s %d: %.0f MiB", p.comm, p.pid, mib(p.peak_rss_kb)), 1.5)
    end
  end
  if tl.pss_kb then
    out[#out + 1] = svg.path { d = path_of(tl.t, tl.pss_kb, x, y), fill = "none", stroke = "#59636e",
      ["stroke-width"] = 1.5, ["stroke-dasharray"] = "4 3" }
    key("#59636e", "tree PSS", 1.5, "4 3")
  end
  out[#out + 1] = svg.path { d = path_of(tl.t, tl.rss_kb, x, y), fill = "none", stroke = "#1f2328", ["stroke-width"] = 2.5 }
  key("#1f2328", "tree RSS", 2.5)
  if r.peak and r.peak.rss_kb then
    local px, py = x(r.peak.t), y(mib(r.peak.rss_kb))
    out[#out + 1] = svg.circle { cx = px, cy = py, r = 4, fill = "#D55E00" }
    out[#out + 1] = svg.text { x = px + 8, y = py - 8, ["font-size"] = 12, fill = "#D55E00",
      text = string.format("peak %.0f MiB at %.2f s", mib(r.peak.rss_kb), r.peak.t) }
  end
  for _, l in ipairs(legend) do out[#out + 1] = l end
  return svg.document { width = W, height = H, title = opts.title or "Memory over time",
    desc = "Resident set size of the process tree and of its largest processes, sampled at " ..
      svg.sig(r.hz or 20, 3) .. " Hz", content = out }
end

return M
