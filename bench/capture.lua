-- Capture overhead: a CPU-bound run of the bundled workload (examples/cpu_split --work, a fixed
-- amount of work) unprofiled, under wb's eBPF capture at 99 Hz (counters, on-CPU and off-CPU;
-- symbolized, folded and rendered) and under `perf record -F 99 -g --no-bpf-event`, interleaved
-- with the order rotated each round; medians.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local RECIPE = [[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  local res = assert(wb.capture { argv = ctx.args, freq = 99, dir = os.getenv("WB_BENCH_DIR"), name = "b",
    stdout = "null" })
  if res.method ~= "bpf" or not res.ok then
    error("capture: method " .. res.method .. ", ok " .. tostring(res.ok))
  end
  io.write(string.format("%.9f %.9f %d\n", res.result.wall, res.result.user + res.result.sys, res.oncpu.samples))
end }
]]

local held_run = lib.held_run

return {
  title = "Capture overhead (targets: eBPF capture at 99 Hz ≤ 3% on the workload; wb no slower than perf record)",
  run = function(opts)
    local ok, why = wb.bpf.available()
    if not ok then return { skipped = "eBPF unavailable: " .. why } end
    local perf = wb.proc.which("perf")
    local split = lib.example("cpu_split")
    local tmp = wb.fs.tmpdir("wbbench")
    local recipe = tmp .. "/capture_once.lua"
    wb.check(wb.fs.write(recipe, RECIPE))
    local target = opts.smoke and 0.3 or 2.0
    local probe = lib.run({ split, "--work", "300", "--sleep", "0" })
    local work = math.max(10, math.floor(300 * target / probe.wall))
    local workload = { split, "--work", tostring(work), "--sleep", "0" }
    local function with(prefix)
      local argv = {}
      for _, a in ipairs(prefix) do argv[#argv + 1] = a end
      for _, a in ipairs(workload) do argv[#argv + 1] = a end
      return argv
    end
    local variants = {
      { "plain", workload },
      { "wb", with({ lib.wb, "run", recipe, "--" }), { WB_BENCH_DIR = tmp .. "/out" } },
    }
    if perf then
      variants[#variants + 1] = { "perf", with({ perf, "record", "-F", "99", "-g", "--no-bpf-event", "-q", "-o",
        tmp .. "/perf.data", "--" }) }
    end
    local rounds = opts.smoke and 2 or 9
    local s = { plain = {}, plain_cpu = {}, wb = {}, wb_workload = {}, wb_cpu = {}, perf = {} }
    local samples = 0
    for round = 0, rounds do -- round 0 warms up
      for k = 0, #variants - 1 do
        local v = variants[(round + k) % #variants + 1]
        local elapsed, res
        if v[1] == "plain" then res = held_run(v[2]) else res, elapsed = lib.run(v[2], v[3]) end
        if round > 0 then
          if v[1] == "plain" then
            table.insert(s.plain, res.wall)
            table.insert(s.plain_cpu, res.user + res.sys)
          elseif v[1] == "wb" then
            local wall, cpu, n = res.stdout:match("^(%S+) (%S+) (%d+)")
            table.insert(s.wb, elapsed)
            table.insert(s.wb_workload, tonumber(wall))
            table.insert(s.wb_cpu, tonumber(cpu))
            samples = tonumber(n)
          else
            table.insert(s.perf, elapsed)
          end
        end
      end
    end
    wb.fs.remove_tree(tmp)
    local med = {}
    for k, v in pairs(s) do med[k] = #v > 0 and wb.stats.median(v) or nil end
    local paired = lib.paired
    local overhead = paired(s.wb_workload, s.plain)
    local cpu_overhead = paired(s.wb_cpu, s.plain_cpu)
    local figures = {
      { name = "unprofiled workload, median wall", value = lib.ms(med.plain) },
      { name = "workload under wb's eBPF capture at 99 Hz, median wall", value = lib.ms(med.wb_workload) },
      { name = "eBPF capture overhead on the workload's wall time (median of per-round ratios)",
        value = string.format("%+.2f%%", overhead * 100),
        target = "≤ 3%", met = overhead <= 0.03 },
      { name = "the same for its CPU time (user + sys; less sensitive to other load)",
        value = string.format("%+.2f%% (%s vs %s)", cpu_overhead * 100, lib.ms(med.wb_cpu),
          lib.ms(med.plain_cpu)) },
      { name = "wb capture end to end (start, BPF load, run, symbolize, folded + SVG), median",
        value = lib.ms(med.wb) },
      { name = "on-CPU samples per capture", value = tostring(samples) },
    }
    if med.perf then
      local r = med.wb / med.perf
      figures[#figures + 1] = { name = "`perf record -F 99 -g --no-bpf-event` end to end, median",
        value = lib.ms(med.perf) }
      figures[#figures + 1] = { name = "wb end to end / perf record", value = lib.ratio(r), target = "≤ 1×",
        met = r <= 1 }
    end
    return {
      command = "build/wb run bench/run.lua only=capture",
      figures = figures,
      notes = string.format("`cpu_split --work %d --sleep 0` (about %.1f s of CPU), %d interleaved rounds after a "
        .. "warm-up, order rotated each round. The workload's wall time, unprofiled and under wb, runs from its "
        .. "release at the gate (wb.proc held start) to its exit; its CPU time is the rusage of the process. End "
        .. "to end includes wb's start-up and outputs; perf record's includes writing perf.data (no perf script, "
        .. "no flame graph). Wall times move with the machine's other load; CPU time much less.%s", work, target,
        rounds,
        perf and "" or " perf is not installed: no perf figures."),
    }
  end,
}
