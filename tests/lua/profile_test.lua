-- wb.profile, the engine of recipes/profile.lua (run end to end in capture_test, memory_test and
-- unwind_test): the command's streams and the manifest record of a capture result.
local T = require "wb.test"
local wb = require "wb"
local profile = require "wb.profile"

T.case("output: tee writes each line to its log; null, inherit and a file name their log", function()
  local d = T.tmpdir()
  assert(wb.fs.mkdir_p(d .. "/logs"))
  local out = profile.output({ dir = d }, "tee")
  T.eq(out.stdout_log, "logs/profile.stdout.log")
  out.stdout("one")
  out.stderr("two")
  out.close()
  T.eq(wb.fs.read(d .. "/logs/profile.stdout.log"), "one\n")
  T.eq(wb.fs.read(d .. "/logs/profile.stderr.log"), "two\n")
  for _, v in ipairs { "null", wb.null, "inherit" } do
    local o = profile.output({ dir = d }, v)
    T.eq(o.stdout, v == "inherit" and "inherit" or "null")
    T.eq(o.stdout_log, nil)
    o.close()
  end
  local f = profile.output({ dir = d }, "out.bin")
  T.eq(f.stdout, { file = "out.bin" })
  T.eq(f.stdout_log, "out.bin")
  f.close()
end)

T.case("record: times, counters, profiles relative to the run directory, skipped kinds with their reason", function()
  local res = { method = "perf_event", result = { code = 0, wall = 1.5, user = 1.0, sys = 0.25 },
    counters = { ["task-clock"] = { available = true, value = 1.2e9 } },
    oncpu = { folded = "/r/profiles/p.folded", svg = "/r/profiles/p.svg", samples = 42,
      unwind = { reach_entry_fraction = 0.9, truncated_fraction = 0.05 } },
    offcpu = { skipped = "no permission" }, warnings = { "w1" } }
  local r = {}
  profile.record(r, res, { "./app", "-x" }, { stdout_log = nil }, "/r")
  T.eq(r.command_arguments, { "./app", "-x" })
  T.eq(r.return_code, 0)
  T.eq(r.stdout_log, wb.null)
  T.eq(r.stderr_log, "logs/profile.stderr.log")
  T.eq(r.metrics, { wall_seconds = 1.5, user_seconds = 1.0, sys_seconds = 0.25, task_clock_seconds = 1.2,
    oncpu_samples = 42, reach_entry_fraction = 0.9, truncated_fraction = 0.05 })
  T.eq(r.profiles, { oncpu = { folded = "profiles/p.folded", svg = "profiles/p.svg" }, offcpu = { skipped = "no permission" } })
  T.eq(r.warnings, { "w1" })
end)

-- A line over 1 MiB reaches the tee in pieces (wb.proc): the log holds the output byte for byte,
-- through the memory sampler's stage watcher too, with no newline added between pieces.
T.case("a 3 MB line is logged byte for byte (pieces joined)", function()
  local d = T.tmpdir()
  local res = T.wb({ "run", T.root() .. "/recipes/profile.lua", "-o", d .. "/r", "--", "sh", "-c",
    "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end" })
  T.eq(res.code, 0, res.stderr)
  T.eq(wb.fs.read(d .. "/r/logs/profile.stdout.log"), string.rep("x", 3000000) .. "\nend\n")
end)
