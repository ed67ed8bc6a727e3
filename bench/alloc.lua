-- Memory profiling overhead: (1) the memory timeline (wb.capture's 20 Hz RSS/PSS sampler, nothing
-- else) on a CPU-bound run of examples/cpu_split; (2) the allocation profile (wb.capture{alloc =
-- true}: libwballoc.so preloaded, 512 KiB sampling interval) on bench/allocloop.c's 10 M
-- malloc/free pairs, beside `valgrind --tool=massif` and heaptrack on the same program. Variants
-- interleaved with the order rotated each round; medians of per-round ratios (adjacent runs share
-- the machine's load).
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local loadavg = lib.loadavg

local held_run = lib.held_run

local function captured(argv, opts)
  local spec = { argv = argv, method = "none", oncpu = false, offcpu = false, counters = false, python = false,
    stdout = "null" }
  for k, v in pairs(opts) do spec[k] = v end
  local t = wb.clock.timer()
  local res = wb.check(wb.capture(spec))
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed under wb.capture") end
  return res.result, t:elapsed(), res
end

local function tool_run(argv)
  local res = wb.check(wb.proc.run { argv = argv, stdout = "null", stderr = "null" })
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed") end
  return res
end

local function paired(a, b)
  local r = {}
  for i = 1, #a do r[i] = a[i] / b[i] end
  return wb.stats.median(r)
end

local function pct(x) return string.format("%+.2f%%", x * 100) end

-- Rounds of variants {{name, fn() -> {wall, cpu}}}, order rotated; {name = {wall = {}, cpu = {}}}.
local function rounds(variants, n)
  local s = {}
  for _, v in ipairs(variants) do s[v[1]] = { wall = {}, cpu = {} } end
  for round = 0, n do -- round 0 warms up
    for k = 0, #variants - 1 do
      local v = variants[(round + k) % #variants + 1]
      local wall, cpu = v[2]()
      if round > 0 then
        table.insert(s[v[1]].wall, wall)
        table.insert(s[v[1]].cpu, cpu)
      end
    end
  end
  return s
end

return {
  title = "Memory profiling overhead (targets: timeline ≤ 1% of wall; allocation profile ≥ 10× cheaper than massif)",
  run = function(opts)
    local tmp = wb.fs.tmpdir("wbbench")
    local load0 = loadavg()
    local figures = {}
    -- (1) the timeline
    local split = lib.example("cpu_split")
    local probe = lib.run({ split, "--work", "300", "--sleep", "0" })
    local target = opts.smoke and 0.3 or 1.5
    local work = { split, "--work", tostring(math.max(10, math.floor(300 * target / probe.wall))), "--sleep", "0" }
    local t = rounds({
      { "plain", function()
        local r = held_run(work)
        return r.wall, r.user + r.sys
      end },
      { "timeline", function()
        local r = captured(work, { memory = true, memory_hz = 20 })
        return r.wall, r.user + r.sys
      end },
    }, opts.smoke and 1 or 9)
    local tl = paired(t.timeline.wall, t.plain.wall) - 1
    figures[#figures + 1] = { name = "CPU-bound workload, unprofiled, median wall", value = lib.ms(wb.stats.median(t.plain.wall)) }
    figures[#figures + 1] = { name = "the same under the 20 Hz memory timeline, median wall",
      value = lib.ms(wb.stats.median(t.timeline.wall)) }
    figures[#figures + 1] = { name = "timeline overhead on the workload's wall (median of per-round ratios)",
      value = pct(tl), target = "≤ 1%", met = tl <= 0.01 }
    figures[#figures + 1] = { name = "the same for its CPU time (user + sys)",
      value = pct(paired(t.timeline.cpu, t.plain.cpu) - 1) }
    -- (2) the allocation profile
    local loop = lib.cc("bench/allocloop.c", tmp)
    local pairs_n = opts.smoke and 200000 or 10000000
    local argv = { loop, tostring(pairs_n) }
    local massif = wb.proc.which("valgrind")
    local heaptrack = wb.proc.which("heaptrack")
    local e2e, samples = {}, 0
    local variants = {
      { "plain", function()
        local r = held_run(argv)
        return r.wall, r.user + r.sys
      end },
      { "wb", function()
        local r, elapsed, res = captured(argv, { memory = false, alloc = true })
        if res.alloc.skipped then wb.fail("alloc skipped: " .. res.alloc.skipped) end
        e2e[#e2e + 1], samples = elapsed, res.alloc.samples
        return r.wall, r.user + r.sys
      end },
    }
    if massif then
      variants[#variants + 1] = { "massif", function()
        local r = tool_run({ massif, "--tool=massif", "--massif-out-file=" .. tmp .. "/massif.out", table.unpack(argv) })
        return r.wall, r.user + r.sys
      end }
    end
    if heaptrack then
      variants[#variants + 1] = { "heaptrack", function()
        local r = tool_run({ heaptrack, "-o", tmp .. "/heaptrack", table.unpack(argv) })
        return r.wall, r.user + r.sys
      end }
    end
    local a = rounds(variants, opts.smoke and 1 or 5)
    wb.fs.remove_tree(tmp)
    local plain = wb.stats.median(a.plain.wall)
    local wb_extra = paired(a.wb.wall, a.plain.wall) - 1
    figures[#figures + 1] = { name = string.format("%s malloc/free pairs, unprofiled, median wall",
      require("wb.util").thousands(pairs_n)), value = lib.ms(plain) }
    figures[#figures + 1] = { name = "under wb's allocation profile (workload wall), median",
      value = string.format("%s (%s; CPU %s)", lib.ms(wb.stats.median(a.wb.wall)), pct(wb_extra),
        pct(paired(a.wb.cpu, a.plain.cpu) - 1)) }
    figures[#figures + 1] = { name = "wb capture end to end (run, read, symbolize, fold, three flame graphs), median",
      value = string.format("%s, %d samples", lib.ms(wb.stats.median(e2e)), samples) }
    for _, tool in ipairs({ "massif", "heaptrack" }) do
      if a[tool] then
        local extra = paired(a[tool].wall, a.plain.wall) - 1
        local ratio = wb_extra > 0 and extra / wb_extra or math.huge
        figures[#figures + 1] = { name = tool == "massif" and "`valgrind --tool=massif`, median wall" or
          "`heaptrack -o FILE`, median wall",
          value = string.format("%s (%s; CPU %s)", lib.ms(wb.stats.median(a[tool].wall)), pct(extra),
            pct(paired(a[tool].cpu, a.plain.cpu) - 1)) }
        figures[#figures + 1] = { name = tool .. "'s overhead / wb's overhead (wall)",
          value = ratio == math.huge and "∞ (wb's is within noise)" or lib.ratio(ratio),
          target = tool == "massif" and "≥ 10×" or nil, met = tool == "massif" and ratio >= 10 or nil }
      end
    end
    return {
      command = "build/wb run bench/run.lua only=alloc",
      figures = figures,
      notes = string.format("Timeline: `%s` (about %.1f s), %d rounds, unprofiled (held at the gate, released) "
        .. "against wb.capture{memory = true, method = \"none\"}. Allocation profile: `allocloop %d` "
        .. "(bench/allocloop.c, 16..527-byte blocks through a ring of 256), %d rounds; the overheads are those "
        .. "of the workload's wall time against the unprofiled run of the same round.%s%s Load average "
        .. "(1, 5, 15 min) before: %s, after: %s, on %s.", table.concat(work, " "):gsub("^.*/", ""), target,
        opts.smoke and 1 or 9, pairs_n, opts.smoke and 1 or 5,
        massif and "" or " valgrind is not installed: no massif figures.",
        heaptrack and "" or " heaptrack is not installed (Debian: heaptrack): no heaptrack figures.",
        load0, loadavg(), "this machine"),
    }
  end,
}
