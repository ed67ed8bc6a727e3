-- recipes/profile_app_full.lua end to end: the bundled example (stages from its
-- profile_summary.json), a Debian program (xz: no stages, functions from the capture), dry-run.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local function run_wb(args)
  return T.wb({ "run", "recipes/profile_app_full.lua", table.unpack(args) }, { timeout = 300 })
end

T.case("the bundled example: trials, stages with Amdahl bounds, capture, reports", function()
  local dir = T.tmpdir() .. "/app"
  local res = run_wb({ "-o", dir, "tool.trials=3", "tool.warmup=0" })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "## Bottlenecks")
  T.match(res.stdout, "removing it entirely gives at most %d+%.%d×")
  T.match(res.stdout, "report: " .. dir:gsub("%p", "%%%0") .. "/report.html")
  local s = assert(json.read(dir .. "/summary.json"))
  T.eq(s.schema_name, "wb.profile_app")
  T.eq(s.trials.n, 3)
  local names = {}
  for _, st in ipairs(s.bottlenecks.stages) do
    names[st.name] = true
    T.near(st.amdahl, 1 / (1 - st.fraction), 1e-9, st.name)
    T.near(st.fraction, st.seconds / s.bottlenecks.wall_seconds, 1e-9, st.name)
  end
  for _, n in ipairs({ "generate", "parse", "compute", "sort", "wait" }) do T.ok(names[n], "stage " .. n) end
  T.ok(#s.bottlenecks.first >= 3 and #s.bottlenecks.first <= 4, "3-4 places to look first")
  T.ok(s.bottlenecks.kind == "cpu-bound" or s.bottlenecks.kind == "waiting" or s.bottlenecks.kind == "cpu-contention")
  T.ok(s.capture.method ~= "none", "a capture method was used: " .. tostring(s.capture.method))
  T.eq(s.capture.counters["task-clock"].available, true)
  if s.capture.counters.cycles.available == false then T.match(s.capture.counters.cycles.reason, "%S") end
  for _, f in ipairs({ "summary.md", "report.html", "trace.json", "manifest.json", "preflight.json",
    "profiles/app.oncpu.folded", "profiles/app.oncpu.svg" }) do
    T.ok(fs.exists(dir .. "/" .. f), f)
  end
  local html = fs.read(dir .. "/report.html")
  T.match(html, "<h2>Bottlenecks</h2>") -- the summary's Markdown rendered, not shown raw
  T.match(html, "<th[^>]*>stage</th>")
  T.ok(not html:find("<pre>", 1, true), "no raw Markdown in a <pre>")
  T.match(html, "<b>0</b> warmup") -- tool.warmup=0 above
  T.match(html, 'data="profiles/app.oncpu.svg"')
  local m = T.manifest(dir)
  T.eq(m.status, "complete")
  T.ok(#m.profilers >= 5, "profiler registry recorded in the manifest")
  local trace = assert(json.read(dir .. "/trace.json"))
  T.ok(#trace.traceEvents >= 3)
end)

T.case("a Debian program (xz): no stage timers, functions from the capture", function()
  if not proc.which("xz") then T.skip("xz is not installed") end
  local d = T.tmpdir()
  local data = d .. "/data.bin"
  local f = assert(io.open(data, "wb"))
  for i = 1, 40000 do f:write(string.format("%08d some compressible text %d\n", i, i % 97)) end
  f:close()
  local res = run_wb({ "-o", d .. "/xz", "tool.trials=2", "tool.warmup=0", "tool.summary_path=null",
    "tool.command=[xz,-6,-T1,-k,-f,-c," .. data .. "]" })
  T.eq(res.code, 0, res.stderr)
  local s = assert(json.read(d .. "/xz/summary.json"))
  T.eq(#s.bottlenecks.stages, 0)
  T.ok(#s.bottlenecks.functions > 0, "functions from the on-CPU capture")
  T.match(fs.read(d .. "/xz/summary.md"), "## Functions on the CPU")
end)

T.case("a callgrind pass when valgrind is present and tool.callgrind=true", function()
  if not proc.which("valgrind") then T.skip("valgrind is not installed") end
  local d = T.tmpdir()
  local res = run_wb({ "-o", d .. "/cg", "tool.trials=1", "tool.warmup=0", "tool.callgrind=true",
    "tool.counters=false", "tool.oncpu=false", "tool.offcpu=false",
    "tool.command=[build/examples/phases,--scale,1,--sleep-ms,0,--summary,'{run_dir}/s.json']" })
  T.eq(res.code, 0, res.stderr)
  local s = assert(json.read(d .. "/cg/summary.json"))
  T.ok(s.callgrind.total_instructions > 1e6)
  local names = {}
  for _, f in ipairs(s.callgrind.top) do names[#names + 1] = f.name end
  T.match(table.concat(names, ","), "parse[%.%w]* %(phases%.c%)")
  T.ok(fs.exists(d .. "/cg/profiles/callgrind.out"))
  T.match(fs.read(d .. "/cg/summary.md"), "## callgrind")
end)

T.case("--dry-run writes only the plan, with the budget", function()
  local d = T.tmpdir()
  local res = run_wb({ "-o", d .. "/dry", "--dry-run", "tool.callgrind=true" })
  T.eq(res.code, 0, res.stderr)
  T.ok(fs.exists(d .. "/dry/plan.json") and fs.exists(d .. "/dry/plan.md"))
  T.ok(not fs.exists(d .. "/dry/summary.json"))
  local plan = assert(json.read(d .. "/dry/plan.json"))
  T.eq(plan.totals.subprocess_runs, 6 + 1 + (proc.which("valgrind") and 1 or 0))
  res = run_wb({ "-o", d .. "/over", "tool.max_subprocess_runs=3" })
  T.eq(res.code, 1)
  T.match(res.stderr, "over budget: %d+ subprocess runs > max_subprocess_runs 3")
end)
