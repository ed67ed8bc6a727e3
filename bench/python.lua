-- Python sampling overhead: a CPU-bound Python script (a fixed amount of work) under Debian's
-- python3, unprofiled; under wb.capture at 99 Hz with eBPF (its Python frames read by the BPF
-- program with each sample and merged: what `wb profile` does); with wb.python's separate sampler
-- at 99 Hz (the fallback without eBPF); and under `python3 -m cProfile`; interleaved with the order
-- rotated each round; medians of the per-round ratios to the unprofiled run.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

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

-- wall, r = captured(argv, dir) : the wall time of the command under wb.capture's defaults at 99 Hz
-- (counters, on-CPU and off-CPU stacks, Python frames, memory), its result
local function captured(argv, dir)
  local res = assert(wb.capture { argv = argv, dir = dir, name = "bench", freq = 99, stdout = "null" })
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed under wb.capture") end
  return res.result.wall, res
end

-- wall = timed(argv [, sample]) : the run's wall time, sampled by wb.python when asked
local function timed(argv, sample, dir)
  if sample == "capture" then return captured(argv, dir) end
  local p <close> = wb.check(wb.proc.spawn { argv = argv, held = true, stdout = "null", stderr = "capture" })
  local s <close> = sample and assert(wb.python.sampler(p.pid, { hz = 99 })) or nil
  assert(p:release())
  local res = p:wait()
  if not res.ok then wb.fail(table.concat(argv, " ") .. " failed: " .. res.stderr) end
  local r = s and s:stop()
  return res.wall, r
end

return {
  title = "Python sampling overhead (target: the merged capture at 99 Hz ≤ 5% of a CPU-bound script's wall time)",
  run = function(opts)
    if not wb.fs.exists(PYTHON) then return { skipped = PYTHON .. " is not installed (Debian package python3)" } end
    local tmp = wb.fs.tmpdir("wbbench")
    local script = tmp .. "/work.py"
    wb.check(wb.fs.write(script, SCRIPT))
    local target = opts.smoke and 0.5 or 3.0
    local probe = timed({ PYTHON, script, "20" })
    local loops = tostring(math.max(5, math.floor(20 * target / probe)))
    local bpf_ok, bpf_why = wb.bpf.available()
    local variants = {
      { "plain", { PYTHON, script, loops } },
      { "sampler", { PYTHON, script, loops }, true },
      { "cprofile", { PYTHON, "-m", "cProfile", "-o", tmp .. "/out.prof", script, loops } },
    }
    if bpf_ok then table.insert(variants, 2, { "merged", { PYTHON, script, loops }, "capture" }) end
    local rounds = opts.smoke and 2 or 9
    local s, samples, merged = { plain = {}, merged = {}, sampler = {}, cprofile = {} }, 0, nil
    for round = 0, rounds do -- round 0 warms up
      for k = 0, #variants - 1 do
        local v = variants[(round + k) % #variants + 1]
        local wall, r = timed(v[2], v[3], tmp .. "/cap")
        if round > 0 then
          table.insert(s[v[1]], wall)
          if r and v[3] == true then samples = r.thread_samples end
          if r and v[3] == "capture" then merged = r end
        end
      end
    end
    wb.fs.remove_tree(tmp)
    local paired = lib.paired
    local sampled, cprofile = paired(s.sampler, s.plain), paired(s.cprofile, s.plain)
    local figures = {
      { name = "unprofiled script, median wall", value = string.format("%.3f s", wb.stats.median(s.plain)) },
    }
    if bpf_ok then
      local m = paired(s.merged, s.plain)
      figures[#figures + 1] = { name = "wb.capture at 99 Hz, Python frames merged (eBPF): overhead on the script's "
        .. "wall time (median of per-round ratios)", value = string.format("%+.2f%%", m * 100), target = "≤ 5%",
        met = m <= 0.05 }
      figures[#figures + 1] = { name = "on-CPU samples with merged Python frames, last merged run",
        value = string.format("%d of %d", merged.python.samples_merged, merged.oncpu.samples) }
    else
      figures[#figures + 1] = { name = "wb.capture with merged Python frames", value = "skipped: " .. bpf_why }
    end
    figures[#figures + 1] = { name = "wb.python's separate sampler at 99 Hz (the fallback without eBPF): overhead",
      value = string.format("%+.2f%%", sampled * 100), target = not bpf_ok and "≤ 5%" or nil,
      met = not bpf_ok and sampled <= 0.05 or nil }
    figures[#figures + 1] = { name = "`python3 -m cProfile`: overhead on the same script",
      value = string.format("%+.2f%%", cprofile * 100) }
    figures[#figures + 1] = { name = "thread samples per sampled run (separate sampler)", value = tostring(samples) }
    return {
      command = "build/wb run bench/run.lua only=python",
      figures = figures,
      notes = string.format("`%s work.py %s` (two functions splitting about %.1f s of CPU 2:1), %d interleaved "
        .. "rounds after a warm-up, order rotated each round. The merged capture is wb.capture's defaults "
        .. "(counters, on-CPU and off-CPU stacks walked with CFI, the memory timeline) in this wb process, its "
        .. "wall the command's own; the BPF program reads the Python frames with each sample, so no sampler "
        .. "thread runs. The separate sampler reads the interpreter's frames from another thread with "
        .. "process_vm_readv and never stops the target; cProfile instruments every call.",
        PYTHON, loops, target, rounds),
    }
  end,
}
