-- Complete stacks without frame pointers: a `gcc -O2 -g` workload (no frame pointers; a hot
-- function under two callers, 2:1) unprofiled, under wb's default capture at 99 Hz (user stacks
-- walked with CFI from stack copies, on-CPU and off-CPU, symbolized, folded and rendered) and under
-- `perf record -F 99 --call-graph dwarf` followed by `perf script` (its report), interleaved with
-- the order rotated each round; medians. Then the symbolization of a large generated binary
-- (tens of thousands of functions, -O2 -g, inline chains): wb against `addr2line -i -f` on the same
-- addresses.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local WORKLOAD = [[
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
volatile unsigned long sink;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
__attribute__((noinline)) unsigned long churn(unsigned long x, long n) {
  for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}
__attribute__((noinline)) void outer_alpha(long n) { sink += churn(sink, n); }
__attribute__((noinline)) void outer_beta(long n) { sink += churn(sink ^ 1, n); }
int main(int argc, char **argv) {
  double t0 = now();
  long rounds = argc > 1 ? atol(argv[1]) : 10;
  for (long r = 0; r < rounds; r++) {
    outer_alpha(4000000);
    outer_alpha(4000000);
    outer_beta(4000000);
  }
  printf("%lu\n", sink);
  fprintf(stderr, "nofp: own wall %.9f s\n", now() - t0); /* main's own time, under any profiler */
  return 0;
}
]]

-- Prints the workload's wall and CPU time inside the capture, the bytes wb wrote, the on-CPU
-- samples whose stack holds main and all of them, the method.
local RECIPE = [[
local wb = require "wb"
local fold = require "wb.capture_fold"
return wb.recipe { run = function(ctx)
  local dir = os.getenv("WB_BENCH_DIR")
  local freq = tonumber(os.getenv("WB_BENCH_FREQ"))
  local res = assert(wb.capture { argv = ctx.args, freq = freq, dir = dir, name = "b", stdout = "null" })
  if not res.ok then error("capture failed") end
  local bytes = 0
  for _, f in ipairs(wb.fs.list(dir)) do bytes = bytes + (wb.fs.stat(dir .. "/" .. f).size or 0) end
  local total, main = 0, 0
  for _, st in ipairs(wb.flame.parse(res.oncpu.folded_text)) do
    total = total + st.count
    for i = 2, #st.frames do
      if st.frames[i] == "main" then main = main + st.count break end
    end
  end
  io.write(string.format("%.9f %.9f %d %d %d %s\n", res.result.wall, res.result.user + res.result.sys, bytes, main,
    total, res.method))
end }
]]

-- perf script's samples of the workload whose frames hold main, and all of them.
local function perf_complete(text, comm)
  local total, main = 0, 0
  for _, r in ipairs(require("wb.capture_fold").parse_perf_script(text)) do
    if r.comm == comm then
      total = total + 1
      for _, n in ipairs(r.names) do
        if n == "main" then
          main = main + 1
          break
        end
      end
    end
  end
  return main, total
end

-- A C file of n small functions in chains of ten (each calls the next through a static inline
-- helper, so addresses have inline chains); main calls the first of each chain.
local function big_source(n)
  local out = { "volatile unsigned long sink;" }
  for i = 0, n - 1 do out[#out + 1] = string.format("unsigned long fn%d(unsigned long);", i) end
  for i = 0, n - 1 do
    out[#out + 1] = string.format("static inline unsigned long mix%d(unsigned long x) { return x * %dUL + %d; }", i,
      2 * i + 3, i)
    out[#out + 1] = string.format("__attribute__((noinline)) unsigned long fn%d(unsigned long x) {", i)
    out[#out + 1] = i % 10 == 9 and string.format("  return mix%d(x) ^ sink;", i)
      or string.format("  return fn%d(mix%d(x)) + 1;", i + 1, i)
    out[#out + 1] = "}"
  end
  out[#out + 1] = "int main(void) {"
  for i = 0, n - 1, 10 do out[#out + 1] = string.format("  sink += fn%d(sink);", i) end
  out[#out + 1] = "  return 0;\n}\n"
  return table.concat(out, "\n")
end

-- Symbolizes the addresses of a file (one hex per line) with wb.unwind.symbolize; prints the
-- seconds it took and the frames found.
local SYMBOLIZE = [[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  local exe, list = ctx.args[1], ctx.args[2]
  local t = wb.clock.timer()
  local frames, lines = 0, 0
  for hex in io.lines(list) do
    for _, f in ipairs(require("wb.unwind").symbolize(exe, tonumber(hex, 16))) do
      frames = frames + 1
      if f.line then lines = lines + 1 end
    end
  end
  io.write(string.format("%.9f %d %d\n", t:elapsed(), frames, lines))
end }
]]

local function symbolization(tmp, smoke)
  local n = smoke and 2000 or 30000
  local src = tmp .. "/big.c"
  wb.check(wb.fs.write(src, big_source(n)))
  local exe = tmp .. "/big"
  local t = wb.clock.timer()
  lib.run({ "gcc", "-O2", "-g", "-o", exe, src })
  local build = t:elapsed()
  local addrs = {}
  for addr, name in lib.run({ "nm", exe }).stdout:gmatch("(%x+) [tT] (fn%d+)\n") do
    if tonumber(name:match("%d+")) % 10 == 0 then addrs[#addrs + 1] = string.format("%x", tonumber(addr, 16) + 4) end
  end
  local list = tmp .. "/addrs"
  wb.check(wb.fs.write(list, table.concat(addrs, "\n") .. "\n"))
  local recipe = tmp .. "/symbolize.lua"
  wb.check(wb.fs.write(recipe, SYMBOLIZE))
  local runs = smoke and 1 or 5
  local wb_wall, wb_inner, a2l = {}, {}, {}
  local frames, a2l_frames
  for _ = 1, runs do
    local res, elapsed = lib.run({ lib.wb, "run", recipe, "--", exe, list })
    local inner, nf = res.stdout:match("^(%S+) (%d+)")
    wb_wall[#wb_wall + 1], wb_inner[#wb_inner + 1], frames = elapsed, tonumber(inner), tonumber(nf)
    local argv = { "addr2line", "-i", "-f", "-e", exe }
    for _, a in ipairs(addrs) do argv[#argv + 1] = "0x" .. a end
    local out
    out, elapsed = lib.run(argv)
    a2l[#a2l + 1] = elapsed
    a2l_frames = select(2, out.stdout:gsub("\n", "")) // 2
  end
  local med = function(v) return wb.stats.median(v) end
  return {
    { name = string.format("large binary: %d functions, -O2 -g, %.1f MB (gcc took %.0f s)", n,
      wb.fs.stat(exe).size / 1e6, build), value = string.format("%d addresses", #addrs) },
    { name = "wb.unwind.symbolize of those addresses (inline chains + lines), in-process, median",
      value = lib.ms(med(wb_inner)) },
    { name = "the same as a wb process end to end (start-up included), median", value = lib.ms(med(wb_wall)) },
    { name = "`addr2line -i -f -e` on the same addresses (one process), median", value = lib.ms(med(a2l)) },
    { name = "frames found: wb / addr2line", value = string.format("%d / %d", frames, a2l_frames),
      target = "equal", met = frames == a2l_frames },
    { name = "addr2line / wb end to end", value = lib.ratio(med(a2l) / med(wb_wall)), target = "≥ 1×",
      met = med(a2l) >= med(wb_wall) },
  }
end

-- The workload's own wall time (main's, as it printed it on stderr), or fails.
local function own_wall(stderr)
  local t = tonumber(stderr:match("nofp: own wall ([%d.]+) s"))
  if not t then wb.fail("the workload did not print its own wall time: " .. stderr) end
  return t
end

-- One series: unprofiled, wb and perf interleaved for `rounds` rounds (after a warm-up), order
-- rotated, on a workload of about `target` seconds, sampled at freq (perf script after perf record
-- unless no_report). Each run's end-to-end time and the workload's own wall inside it: their
-- difference is the tool's cost outside the workload (start-up, set-up, teardown, report). Returns
-- the samples and the last run's counts.
local function series(exe, recipe, tmp, perf, target, rounds, freq, no_report)
  local probe = lib.run({ exe, "5" })
  local rounds_arg = tostring(math.max(2, math.floor(5 * target / probe.wall)))
  local wb_dir, perf_data, script_out = tmp .. "/wb", tmp .. "/perf.data", tmp .. "/perf.script"
  local s = { plain = {}, plain_own = {}, plain_cpu = {}, wb = {}, wb_own = {}, wb_cpu = {}, wb_workload = {},
    wb_workload_cpu = {}, perf = {}, perf_own = {}, perf_cpu = {}, perf_record = {} }
  local last = { rounds_arg = rounds_arg }
  for round = 0, rounds do -- round 0 warms up
    for k = 0, 2 do
      local v = (round + k) % 3
      if v == 0 then
        local res = lib.run({ exe, rounds_arg })
        if round > 0 then
          table.insert(s.plain, res.wall)
          table.insert(s.plain_own, own_wall(res.stderr))
          table.insert(s.plain_cpu, res.user + res.sys)
        end
      elseif v == 1 then
        wb.fs.remove_tree(wb_dir)
        wb.check(wb.fs.mkdir_p(wb_dir))
        local res, elapsed = lib.run({ lib.wb, "run", recipe, "--", exe, rounds_arg },
          { WB_BENCH_DIR = wb_dir, WB_BENCH_FREQ = tostring(freq) })
        local wall, cpu, bytes, main, total, method = res.stdout:match("^(%S+) (%S+) (%d+) (%d+) (%d+) (%S+)")
        if method ~= "bpf" then wb.fail("wb capture used " .. tostring(method)) end
        last.wb_bytes, last.wb_main, last.wb_total = tonumber(bytes), tonumber(main), tonumber(total)
        if round > 0 then
          table.insert(s.wb, elapsed)
          table.insert(s.wb_own, own_wall(res.stderr))
          table.insert(s.wb_cpu, res.user + res.sys) -- wb's own and the workload's (its child)
          table.insert(s.wb_workload, tonumber(wall))
          table.insert(s.wb_workload_cpu, tonumber(cpu))
        end
      else
        local recres, rec = lib.run({ perf, "record", "-F", tostring(freq), "--call-graph", "dwarf", "--no-bpf-event",
          "-q", "-o", perf_data, "--", exe, rounds_arg })
        local rep, script = 0, { user = 0, sys = 0 }
        if not no_report then
          local t = wb.clock.timer()
          script = wb.check(wb.proc.run { argv = { perf, "script", "-i", perf_data, "-F", "comm,pid,ip,sym,dso" },
            stdout = { file = script_out }, stderr = "null" })
          if not script.ok then wb.fail("perf script failed") end
          rep = t:elapsed()
          last.perf_bytes = wb.fs.stat(perf_data).size + wb.fs.stat(script_out).size
          last.perf_main, last.perf_total = perf_complete(wb.fs.read(script_out), "nofp")
        end
        if round > 0 then
          table.insert(s.perf, rec + rep)
          table.insert(s.perf_own, own_wall(recres.stderr))
          table.insert(s.perf_cpu, recres.user + recres.sys + script.user + script.sys)
          table.insert(s.perf_record, rec)
        end
      end
    end
  end
  return s, last
end

return {
  title = "Complete stacks without frame pointers (targets: wb ≤ 3% on the workload; wb's overhead and bytes " ..
    "≥ 5× smaller than perf --call-graph dwarf's, end to end; stacks at least as complete)",
  run = function(opts)
    local ok, why = wb.bpf.available()
    if not ok then return { skipped = "eBPF unavailable: " .. why } end
    local perf = wb.proc.which("perf")
    if not perf then return { skipped = "perf is not installed" } end
    local load = (wb.fs.read("/proc/loadavg") or "?"):match("^(%S+ %S+ %S+)")
    local tmp = wb.fs.tmpdir("wbbench")
    local src = tmp .. "/nofp.c"
    wb.check(wb.fs.write(src, WORKLOAD))
    local exe = tmp .. "/nofp"
    lib.run({ "gcc", "-O2", "-g", "-o", exe, src })
    local recipe = tmp .. "/capture_once.lua"
    wb.check(wb.fs.write(recipe, RECIPE))
    local target = opts.smoke and 0.3 or 5.0 -- perf's costs grow with the run; wb's mostly do not
    local rounds = opts.smoke and 1 or 11
    local s, last = series(exe, recipe, tmp, perf, target, rounds, 99)
    local short_target = opts.smoke and 0.15 or 1.0
    local short = series(exe, recipe, tmp, perf, short_target, rounds, 99)
    local hot_freq = 4999 -- the per-sample cost, 50x what it is at 99 Hz: above the machine's noise
    local hot = series(exe, recipe, tmp, perf, short_target, rounds, hot_freq, true)
    local rounds_arg = last.rounds_arg
    local median = wb.stats.median
    local med = {}
    for k, v in pairs(s) do med[k] = median(v) end
    local paired = lib.paired
    local function added(a, b) -- median of per-round differences, as paired for the same reason
      local d = {}
      for i = 1, #a do d[i] = a[i] - b[i] end
      return median(d)
    end
    -- A tool's cost outside the workload in each run (end to end minus the workload's own wall,
    -- minus the same for the unprofiled run: process start and exit), median: exact per run, so
    -- the speed of the machine, which moves the workload's own time by percents between runs,
    -- does not enter it.
    local function outside(sr, tool)
      local d = {}
      for i = 1, #sr.plain do d[i] = (sr[tool][i] - sr[tool .. "_own"][i]) - (sr.plain[i] - sr.plain_own[i]) end
      return median(d)
    end
    local overhead, cpu_overhead = paired(s.wb_workload, s.plain), paired(s.wb_workload_cpu, s.plain_cpu)
    local wb_cost, perf_cost = added(s.wb, s.plain), added(s.perf, s.plain)
    local wb_short, perf_short = added(short.wb, short.plain), added(short.perf, short.plain)
    local wb_cpu_cost, perf_cpu_cost = added(s.wb_cpu, s.plain_cpu), added(s.perf_cpu, s.plain_cpu)
    local wb_complete, perf_complete_share = last.wb_main / last.wb_total, last.perf_main / last.perf_total
    -- added wall time at run length T = outside cost (fixed + per second, fitted on the two series)
    -- + the workload's slowdown, per sample (the 4999 Hz series) x 99 samples/s x T
    local t_long, t_short = median(s.plain_own), median(short.plain_own)
    local model = {}
    for _, tool in ipairs { "wb", "perf" } do
      local o_long, o_short = outside(s, tool), outside(short, tool)
      local rate = (o_long - o_short) / (t_long - t_short)
      local per_sample = paired(hot[tool .. "_own"], hot.plain_own) / hot_freq -- of run time, per sample/s
      model[tool] = { fixed = o_short - rate * t_short, rate = rate, per_sample = per_sample,
        at = function(t) return o_short + rate * (t - t_short) + per_sample * 99 * t end }
    end
    local w, p = model.wb, model.perf
    local wb_at, perf_at = w.at(t_long), p.at(t_long)
    local wb_at_short, perf_at_short = w.at(t_short), p.at(t_short)
    local slope_w, slope_p = w.rate + w.per_sample * 99, p.rate + p.per_sample * 99
    local crossover -- the run length up to which perf's added time is at least 5x wb's
    if p.fixed < 5 * w.fixed then crossover = "none: perf's fixed cost is not 5x wb's"
    elseif slope_p >= 5 * slope_w then crossover = "any length"
    else crossover = string.format("%.0f s", (p.fixed - 5 * w.fixed) / (5 * slope_w - slope_p)) end
    local function ratio(a, b) return lib.ratio(a / math.max(b, 1e-3)) end
    local figures = {
      { name = "unprofiled `gcc -O2 -g` workload (no frame pointers), median wall", value = lib.ms(med.plain) },
      { name = "the workload under wb (default unwinding: CFI, eBPF, 99 Hz), median wall",
        value = lib.ms(med.wb_workload) },
      { name = "wb's overhead on the workload's wall time (median of per-round ratios)",
        value = string.format("%+.2f%%", overhead * 100), target = "≤ 3%", met = overhead <= 0.03 },
      { name = "the same for its CPU time (user + sys: the machine's other load moves it much less)",
        value = string.format("%+.2f%% (%s vs %s)", cpu_overhead * 100, lib.ms(med.wb_workload_cpu),
          lib.ms(med.plain_cpu)), target = "≤ 3%", met = cpu_overhead <= 0.03 },
      { name = "wb end to end (start-up, BPF load, run, walk, symbolize, folded + SVG + speedscope + report files)",
        value = lib.ms(med.wb) },
      { name = "`perf record -F 99 --call-graph dwarf` + `perf script`, end to end", value = string.format("%s (%s record)",
        lib.ms(med.perf), lib.ms(med.perf_record)) },
      { name = "cost outside the workload (end to end minus its own wall, per run), fixed + per second: wb; perf",
        value = string.format("%s + %.1f ms/s; %s + %.1f ms/s", lib.ms(w.fixed), w.rate * 1e3, lib.ms(p.fixed),
          p.rate * 1e3) },
      { name = string.format("the workload's slowdown per sample (%d Hz series): wb; perf", hot_freq),
        value = string.format("%.1f µs; %.1f µs", w.per_sample * 1e6, p.per_sample * 1e6) },
      { name = string.format("wall time added to the %.1f s run (outside + slowdown at 99 Hz): perf's / wb's", t_long),
        value = string.format("%s / %s = %s", lib.ms(perf_at), lib.ms(wb_at), ratio(perf_at, wb_at)),
        target = "≥ 5×", met = perf_at >= 5 * wb_at },
      { name = string.format("the same for the %.1f s run", t_short), value = string.format("%s / %s = %s",
        lib.ms(perf_at_short), lib.ms(wb_at_short), ratio(perf_at_short, wb_at_short)), target = "≥ 5×",
        met = perf_at_short >= 5 * wb_at_short },
      { name = "run length up to which perf's added time is ≥ 5× wb's (99 Hz)", value = crossover },
      { name = string.format("measured directly (median of per-round end-to-end differences): %.1f s run; %.1f s run",
        t_long, t_short), value = string.format("perf %s / wb %s = %s; perf %s / wb %s = %s", lib.ms(perf_cost),
        lib.ms(wb_cost), ratio(perf_cost, wb_cost), lib.ms(perf_short), lib.ms(wb_short), ratio(perf_short, wb_short)) },
      { name = "CPU time added to the run (all processes): perf's / wb's", value = string.format("%s / %s = %s",
        lib.ms(perf_cpu_cost), lib.ms(wb_cpu_cost), lib.ratio(perf_cpu_cost / math.max(wb_cpu_cost, 1e-3))) },
      { name = "bytes written: perf.data + perf script's output / wb's outputs", value = string.format("%.1f MB / %.1f KB = %s",
        last.perf_bytes / 1e6, last.wb_bytes / 1e3, lib.ratio(last.perf_bytes / last.wb_bytes)), target = "≥ 5×",
        met = last.perf_bytes >= 5 * last.wb_bytes },
      { name = "on-CPU samples whose stack reaches main: wb / perf", value = string.format("%.1f%% (%d of %d) / "
        .. "%.1f%% (%d of %d)", 100 * wb_complete, last.wb_main, last.wb_total, 100 * perf_complete_share,
        last.perf_main, last.perf_total), target = "wb ≥ perf", met = wb_complete >= perf_complete_share },
    }
    for _, f in ipairs(symbolization(tmp, opts.smoke)) do figures[#figures + 1] = f end
    wb.fs.remove_tree(tmp)
    return {
      command = "build/wb run bench/run.lua only=unwind",
      figures = figures,
      notes = string.format("Load average before the section: %s. Workload: `nofp %s` (about %.1f s; churn() under "
        .. "outer_alpha and outer_beta, 2:1; it prints its own wall time, main's), %d interleaved rounds after a "
        .. "warm-up, order rotated, per series. wb runs `wb.capture{freq = 99}` (counters, on-CPU and off-CPU, "
        .. "Python and memory samplers) in a fresh wb process; its bytes are every file of the capture's directory. "
        .. "perf's end to end is `perf record` plus `perf script` (the report a flame graph is made from); "
        .. "completeness of both is counted from their own outputs. On this VM the speed of a CPU-bound run moves "
        .. "by a few percent from one run to the next, as much as the whole of wb's cost on a 5 s run, so the "
        .. "added time is measured in two parts: what each tool costs outside the workload, exact in each run (its "
        .. "end to end minus the workload's own wall), fitted as fixed + per second on a %.1f s and a %.1f s "
        .. "series; and the workload's slowdown, from a series at %d Hz, where the cost per sample is 50x what it "
        .. "is at 99 Hz (the sampling interrupt, which perf pays as well), scaled to 99 Hz. The direct medians of "
        .. "per-round differences are shown too. The symbolization figures time every tenth function's address "
        .. "+4 (%s). CPU times are the rusage of each command with its children (wb's includes the workload, "
        .. "perf's its record and script).", load, rounds_arg, target, rounds, target, short_target, hot_freq,
        opts.smoke and "smoke: a small binary" or "30,000 functions"),
    }
  end,
}
