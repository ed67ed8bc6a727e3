-- Python sampling overhead: a CPU-bound Python script (a fixed amount of work) under Debian's
-- python3, unprofiled, with wb.python's sampler reading its stacks at 99 Hz, and under
-- `python3 -m cProfile`, interleaved with the order rotated each round; medians of the per-round
-- ratios to the unprofiled run.
local wb = require "wb"

local SCRIPT = [[
import sys
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def py_alpha(): return leaf(40000)
def py_beta(): return leaf(20000)
for _ in range(int(sys.argv[1])):
    py_alpha()
    py_beta()
]]

local PYTHON = "/usr/bin/python3"

-- wall = timed(argv [, sample]) : the run's wall time, sampled by wb.python when asked
local function timed(argv, sample)
  local p <close> = wb.check(wb.proc.spawn { argv = argv, held = true, stdout = "null", stderr = "capture" })
  local s <close> = sample and assert(wb.python.sampler(p.pid, { hz = 99 })) or nil
  assert(p:release())
  local res = p:wait()
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed: " .. res.stderr) end
  local r = s and s:stop()
  return res.wall, r
end

return {
  title = "Python sampling overhead (target: wb.python at 99 Hz ≤ 5% of a CPU-bound script's wall time)",
  run = function(opts)
    if not wb.fs.exists(PYTHON) then return { skipped = PYTHON .. " is not installed (Debian package python3)" } end
    local tmp = wb.fs.tmpdir("wbbench")
    local script = tmp .. "/work.py"
    wb.check(wb.fs.write(script, SCRIPT))
    local target = opts.smoke and 0.5 or 3.0
    local probe = timed({ PYTHON, script, "20" })
    local loops = tostring(math.max(5, math.floor(20 * target / probe)))
    local variants = {
      { "plain", { PYTHON, script, loops } },
      { "wb", { PYTHON, script, loops }, true },
      { "cprofile", { PYTHON, "-m", "cProfile", "-o", tmp .. "/out.prof", script, loops } },
    }
    local rounds = opts.smoke and 2 or 9
    local s, samples = { plain = {}, wb = {}, cprofile = {} }, 0
    for round = 0, rounds do -- round 0 warms up
      for k = 0, #variants - 1 do
        local v = variants[(round + k) % #variants + 1]
        local wall, r = timed(v[2], v[3])
        if round > 0 then
          table.insert(s[v[1]], wall)
          if r then samples = r.thread_samples end
        end
      end
    end
    wb.fs.remove_tree(tmp)
    local function paired(a, b)
      local r = {}
      for i = 1, #a do r[i] = a[i] / b[i] end
      return wb.stats.median(r) - 1
    end
    local sampled, cprofile = paired(s.wb, s.plain), paired(s.cprofile, s.plain)
    return {
      command = "build/wb run bench/run.lua only=python",
      figures = {
        { name = "unprofiled script, median wall", value = string.format("%.3f s", wb.stats.median(s.plain)) },
        { name = "wb.python sampling at 99 Hz: overhead on the script's wall time (median of per-round ratios)",
          value = string.format("%+.2f%%", sampled * 100), target = "≤ 5%", met = sampled <= 0.05 },
        { name = "`python3 -m cProfile`: overhead on the same script",
          value = string.format("%+.2f%%", cprofile * 100) },
        { name = "thread samples per sampled run", value = tostring(samples) },
      },
      notes = string.format("`%s work.py %s` (two functions splitting about %.1f s of CPU 2:1), %d interleaved "
        .. "rounds after a warm-up, order rotated each round. wb.python reads the interpreter's frames from "
        .. "another thread with process_vm_readv and never stops the target; cProfile instruments every call.",
        PYTHON, loops, target, rounds),
    }
  end,
}
