-- The allocation profile (res.alloc, lua/wb/alloc.lua) in the capture's text summary and HTML
-- page (lua/wb/capture_report.lua calls these).
local page = require "wb.page"
local util = require "wb.util"

local M = {}

local bytes = util.format_bytes


local function live_text(a)
  return a.live.at == "peak" and string.format("live at the RSS peak (%s)", util.format_seconds(a.live.t))
    or "live at exit"
end

-- The one-line summary of a profile that was made.
local function lead(a)
  return string.format("%s samples, one per %s on average: %s allocated (estimated), %s %s, %s never freed",
    util.thousands(a.samples), bytes(a.interval), bytes(a.estimated_bytes), bytes(a.live.estimated_bytes),
    live_text(a), bytes(a.leak.estimated_bytes))
end

-- alloc_report.text(add, a, n) : lines through add(fmt, ...) — the summary, the top allocating
-- functions and the top never-freed ones (self, total share of bytes)
function M.text(add, a, n)
  add("")
  if a.skipped then
    add("allocations: skipped: %s", a.skipped)
    return
  end
  add("allocations: %s", lead(a))
  for _, view in ipairs({ { "alloc", "allocated" }, { "alloc_leak", "never freed" } }) do
    local rows = a[view[1]].top
    if #rows > 0 then
      add("  %s: top functions (self, total share of bytes)", view[2])
      for i, row in ipairs(rows) do
        if i > n then break end
        add("    %5.1f%% %5.1f%%  %s", row.self_fraction * 100, row.total_fraction * 100, row.name)
      end
    end
  end
  for _, note in ipairs(a.notes) do add("  note: %s", note) end
end

-- block = alloc_report.html(a, {flame = fn(path, title), top = fn(rows, n), n}) : the
-- "Allocations" section (wb.page): the summary, the top allocating functions, the flame graphs of
-- bytes allocated and live at the peak (and never freed)
function M.html(a, kit)
  local function meta(x) return page.p(x, { class = "meta" }) end
  if a.skipped then return page.section("Allocations", { meta("skipped: " .. a.skipped) }) end
  local blocks = { meta(lead(a)), kit.top(a.alloc.top, kit.n) }
  local function add(b) if b then blocks[#blocks + 1] = b end end -- a flame graph not written: none
  add(kit.flame(a.alloc.svg, "Bytes allocated"))
  add(kit.flame(a.alloc_live.svg, "Bytes " .. live_text(a)))
  if a.live.at == "peak" then add(kit.flame(a.alloc_leak.svg, "Bytes never freed")) end
  for _, note in ipairs(a.notes) do add(meta("note: " .. note)) end
  return page.section("Allocations", blocks)
end

return M
