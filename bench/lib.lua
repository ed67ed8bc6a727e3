-- Helpers for bench/*.lua: interleaved timing of several commands with wb.proc.
local wb = require "wb"
local M = {}

-- The wb binary running the benchmarks.
M.wb = require("wb.core").exe_path()

-- The path of a bundled example program, built beside that binary.
function M.example(name) return M.wb:match("^(.*)/[^/]*$") .. "/examples/" .. name end

-- s = lib.loadavg() : the 1, 5 and 15-minute load averages, as /proc/loadavg gives them
function M.loadavg() return (wb.fs.read("/proc/loadavg") or "?"):match("^(%S+ %S+ %S+)") end

-- res = lib.held_run(argv) : argv started the way a capture starts it (held at the gate, then
-- released) and waited for; fails with its stderr unless it succeeds. The unprofiled baseline.
function M.held_run(argv)
  local p <close> = wb.check(wb.proc.spawn { argv = argv, held = true, stdout = "null", stderr = "capture" })
  assert(p:release())
  local res = p:wait()
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed: " .. res.stderr) end
  return res
end

-- res, seconds = lib.run(argv [, env]) : runs argv to its end, stdout and stderr captured, and
-- times it; fails with its stderr unless it succeeds.
function M.run(argv, env)
  local t = wb.clock.timer()
  local res = wb.check(wb.proc.run { argv = argv, env = env, stdout = "capture", stderr = "capture" })
  local seconds = t:elapsed()
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed: " .. res.stderr) end
  return res, seconds
end

-- path = lib.cc(src, dir) : compiles the C program src with cc -O2 into dir; fails with the
-- compiler's messages.
function M.cc(src, dir)
  local exe = dir .. "/" .. src:match("([^/]+)%.c$")
  local res = wb.check(wb.proc.run { argv = { "cc", "-O2", "-o", exe, src }, stderr = "capture" })
  if not res.ok then wb.fail("cannot build " .. src .. ": " .. res.stderr) end
  return exe
end

-- results = lib.interleave(commands, runs [, warmup]) : commands = {name = argv, ...} in a list
-- {{name, argv}}; runs them A B C A B C ... and returns {name = samples (seconds)}.
function M.interleave(commands, runs, warmup)
  local samples = {}
  for _, c in ipairs(commands) do samples[c[1]] = {} end
  for round = 1, (warmup or 2) + runs do
    for _, c in ipairs(commands) do
      local res = wb.check(wb.proc.run { argv = c[2], stdout = "null", stderr = "null" })
      if not res.ok then wb.fail(table.concat(c[2], " ") .. " failed") end
      if round > (warmup or 2) then table.insert(samples[c[1]], res.wall) end
    end
  end
  return samples
end

-- x = lib.paired(a, b) : the median of the per-round ratios a[i] / b[i], minus 1 (adjacent runs of a
-- round share the machine's load, so their ratio moves less than either)
function M.paired(a, b)
  local r = {}
  for i = 1, #a do r[i] = a[i] / b[i] end
  return wb.stats.median(r) - 1
end

function M.ms(x) return string.format("%.3f ms", x * 1000) end
function M.ratio(x) return string.format("%.2f×", x) end

return M
