-- The cost of tracing wake-ups for the critical path (wb.bpf's sched_waking, sched_wakeup_new and
-- interrupt tracepoints, and the timeline): a program doing about 50,000 wake-ups a second
-- (bench/pingpong.c) unprofiled, under wb's eBPF capture without them (critical = false) and with
-- them (the default), interleaved with the order rotated each round; medians of per-round ratios. Both captures get a
-- 128 MiB ring buffer: the default's, sized for the sample rate, drops switch records at this rate.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local RECIPE = [[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  local res = assert(wb.capture { argv = ctx.args, freq = 99, stdout = "capture", ring_mib = 128,
    critical = os.getenv("WB_BENCH_CRITICAL") == "1" })
  if res.method ~= "bpf" or not res.ok then
    error("capture: method " .. res.method .. ", ok " .. tostring(res.ok))
  end
  local lost = 0
  for _, w in ipairs(res.warnings) do lost = lost + (tonumber(w:match("^(%d+) off%-CPU intervals")) or 0) end
  io.write(string.format("%.9f %.9f %s %s %d\n", res.result.wall, res.result.user + res.result.sys,
    res.result.stdout or "", res.critical and res.critical.segment_count or 0, lost))
end }
]]

return {
  title = "Wake-up tracing for the critical path (target: ≤ 10% on a program doing 50,000 wake-ups a second)",
  run = function(opts)
    local ok, why = wb.bpf.available()
    if not ok then return { skipped = "eBPF unavailable: " .. why } end
    local tmp = wb.fs.tmpdir("wbbench")
    local prog = tmp .. "/pingpong"
    local built = wb.check(wb.proc.run { argv = { "cc", "-O2", "-pthread", "-o", prog, "bench/pingpong.c" },
      stderr = "capture" })
    if not built.ok then wb.fail("cannot build bench/pingpong.c: " .. built.stderr) end
    local recipe = tmp .. "/capture_once.lua"
    wb.check(wb.fs.write(recipe, RECIPE))
    local n = opts.smoke and 5000 or 75000 -- per pair: 2 pairs spinning 30 us a hand-off, ~50,000 a second here
    local workload = { prog, tostring(n), "2", "30" }
    local capture = { lib.wb, "run", recipe, "--", table.unpack(workload) }
    local variants = { "plain", "without", "with" }
    local wall, cpu, rate = { plain = {}, without = {}, with = {} }, { plain = {}, without = {}, with = {} }, {}
    local segments, lost = 0, 0
    local rounds = opts.smoke and 2 or 9
    for round = 0, rounds do -- round 0 warms up
      for k = 0, #variants - 1 do
        local v = variants[(round + k) % #variants + 1]
        local w, c, r
        if v == "plain" then
          local res = lib.held_run(workload)
          w, c = res.wall, res.user + res.sys
        else
          local res = lib.run(capture, { WB_BENCH_CRITICAL = v == "with" and "1" or "0" })
          local a, b, per, segs, l = res.stdout:match("^(%S+) (%S+) (%d+)%s+(%d+) (%d+)")
          w, c, r = tonumber(a), tonumber(b), tonumber(per)
          lost = math.max(lost, tonumber(l))
          if v == "with" then segments = tonumber(segs) end
        end
        if round > 0 then
          table.insert(wall[v], w)
          table.insert(cpu[v], c)
          if v == "with" then rate[#rate + 1] = r end
        end
      end
    end
    wb.fs.remove_tree(tmp)
    local paired = lib.paired
    local med = wb.stats.median
    local added = paired(wall.with, wall.without)
    return {
      command = "build/wb run bench/run.lua only=wakeups",
      figures = {
        { name = "wake-ups per second of the program under capture with wake-up tracing, median",
          value = string.format("%.0f", med(rate)) },
        { name = "unprofiled, median wall", value = lib.ms(med(wall.plain)) },
        { name = "eBPF capture without wake-up tracing (critical = false), median wall",
          value = lib.ms(med(wall.without)) },
        { name = "eBPF capture with it (the default), median wall", value = lib.ms(med(wall.with)) },
        { name = "added by wake-up tracing: wall (median of per-round ratios)",
          value = string.format("%+.1f%%", added * 100), target = "≤ 10%", met = added <= 0.10 },
        { name = "added by wake-up tracing: the program's CPU time",
          value = string.format("%+.1f%%", paired(cpu.with, cpu.without) * 100) },
        { name = "capture without vs unprofiled: wall", value = string.format("%+.1f%%",
          paired(wall.without, wall.plain) * 100) },
        { name = "critical-path segments of the last capture", value = tostring(segments) },
        { name = "off-CPU intervals without their stack in the worst capture (ring_mib = 128)", value = tostring(lost) },
      },
      notes = string.format("`bench/pingpong.c %d 2 30`: two pairs of threads each hand a token through a "
        .. "mutex and condition variable, each thread spinning 30 µs before it hands it on. %d interleaved rounds after a warm-up, "
        .. "order rotated each round; the program's wall time runs from its release at the gate to its exit. "
        .. "With wake-up tracing, every wake-up of a traced thread is a record in the ring buffer and every "
        .. "interrupt on every CPU passes two small programs (the context of a wake-up).", n, rounds),
    }
  end,
}
