local T = require "wb.test"
local fs = require "wb.fs"
local json = require "wb.json"
local proc = require "wb.proc"

local ROOT = T.root()
local FIXTURE = ROOT .. "/tests/fixtures/vep/small.log"
local EMIT = T.example("vep_emit")

-- res, dir = breakdown(args) : `wb run recipes/vep_breakdown.lua -o DIR ARGS` from the repository root
local function breakdown(args)
  local dir = T.tmpdir() .. "/run"
  return T.wb({ "run", "recipes/vep_breakdown.lua", "-o", dir, table.unpack(args) }, { cwd = ROOT, timeout = 120 }), dir
end

local function stage(list, name)
  for _, s in ipairs(list) do if s.stage == name then return s end end
end

local function names(list, key)
  local out = {}
  for i, x in ipairs(list) do out[i] = x[key] end
  return out
end

local function check_fixture(b)
  T.eq(b.schema_name, "wb.vep_breakdown")
  T.eq(b.schema_version, 1)
  local p = b.pipeline
  T.eq({ p.contig, p.lines, p.output_rows, p.annotate, p.engine, p.lookup_wait, p.hydrate, p.context_load,
    p.tx_window, p.prepared_ctx }, { "chr2", 2, 12500, 0.56, 0.508, 0.025, 0.04, 0.5, 0.06, 0.15 })
  T.eq(names(b.lance.events, "event"), { "open", "variation_take", "sift_key_take", "open_breakdown",
    "streaming_reread", "variation_resolve" })
  T.eq(names(b.lance.events, "n"), { 1, 3, 2, 1, 1, 3 })
  T.eq(names(b.lance.events, "total_seconds"), { 2.613, 0.111, 0.022, 0, 0, 0 })
  T.eq(b.lance.variation_take, { n = 3, total_seconds = 0.111, min = 0.02, median = 0.041, mean = 0.037, max = 0.05 })
  T.eq(b.engine.batches, 3)
  T.eq(b.engine.total_seconds, 0.5085)
  T.eq(names(b.engine.stages, "stage"), { "evaluate_prepared", "csq_format", "colocated_fields", "row_setup" })
  T.eq(names(b.engine.stages, "total_seconds"), { 0.28, 0.12, 0.105, 0.0035 })
  T.eq(stage(b.engine.stages, "csq_format").n, 3)
  T.near(stage(b.engine.stages, "csq_format").mean_seconds, 0.04, 1e-15)
  T.near(stage(b.engine.stages, "evaluate_prepared").share, 0.28 / 0.5085, 1e-15)
  T.eq(names(b.tx_engine.stages, "stage"), { "tx_query_total", "transcript_output_materialize", "transcript_hgvsc",
    "transcript_overlap_eval", "overlap_splice_terms" })
  T.eq(names(b.tx_engine.stages, "total_seconds"), { 0.275, 0.14, 0.08, 0.055, 0.013 })
  T.eq(names(b.tx_engine.stages, "inside"), { "evaluate_prepared", "tx_query_total", "transcript_output_materialize",
    "tx_query_total", "transcript_overlap_eval" })
  T.eq(names(b.timers, "label"), { "load transcripts", "write output" })
  T.near(b.timers[1].total_ms, 123.4, 1e-9)
  T.eq(b.concurrency_plan.workers, 1)
  T.eq(b.concurrency_plan.inline_lookup, true)
  T.eq(b.vcf_sink.stream_next, 0.123)
  T.eq(b.progress_bar_rows, 12000)
  local r = b.reading
  T.eq(r.bound, "engine")
  T.eq(r.wall_source, "annotate")
  T.near(r.lookup_wait_over_engine, 0.025 / 0.508, 1e-15)
  T.near(r.engine_share_of_wall, 0.508 / 0.56, 1e-15)
  T.eq(r.targets, { "transcript_output_materialize", "csq_format", "colocated_fields", "transcript_hgvsc" })
  T.eq(r.sentences[1], "Engine-bound: lookup_wait (0.025 s) is 4.9% of engine (0.508 s), and the engine is 90.7% "
    .. "of the annotate wall time (0.560 s). Lookup or cache-encoding changes will not move the end-to-end time.")
  local all = table.concat(r.sentences, "\n")
  T.match(all, "evaluate_prepared %(0%.280 s%) ≈ tx_query_total %(0%.275 s, 98%.2%% of it%)")
  T.match(all, "transcript_output_materialize %(0%.140 s%) contains transcript_hgvsc %(0%.080 s, 57%.1%% of it%)")
  T.match(all, "trust output_rows = 12500 %(pipeline_profile%), not the progress bar's 12000")
  T.match(all, "Targets: transcript_output_materialize %(0%.140 s, 27%.5%% of engine%), csq_format")
  T.match(all, "transcript_hgvsc %(0%.080 s, 15%.7%% of engine, inside transcript_output_materialize%)")
end

T.case("log mode: exact figures for the hand-written fixture", function()
  local res, dir = breakdown({ "log=" .. FIXTURE })
  T.eq(res.code, 0, res.stderr)
  local b = assert(json.read(dir .. "/breakdown.json"))
  check_fixture(b)
  T.eq(b.mode, "log")
  T.eq(b.source.lines, 27)
  local md = assert(fs.read(dir .. "/breakdown.md"))
  for _, section in ipairs({ "## Pipeline", "## Lance lookup", "## Engine — top level", "## Transcript engine",
    "## Reading it" }) do
    T.ok(md:find(section, 1, true), section)
  end
  T.match(md, "| variation_take%s+|%s+3 | 0%.111 s |")
  T.ok(res.stdout:find(md, 1, true), "the breakdown is printed")
  T.match(assert(fs.read(dir .. "/summary.md")), "^# VEP breakdown summary\n\n%- Engine%-bound")
  local m = T.manifest(dir)
  T.eq(m.status, "complete")
  T.eq(m.runs[1].metrics.engine_seconds, 0.508)
end)

T.case("log mode: a gzip capture reads as the plain one", function()
  local d = T.tmpdir()
  assert(fs.write(d .. "/small.log", assert(fs.read(FIXTURE))))
  assert(os.execute("gzip '" .. d .. "/small.log'"))
  local res, dir = breakdown({ "log=" .. d .. "/small.log.gz" })
  T.eq(res.code, 0, res.stderr)
  local b = assert(json.read(dir .. "/breakdown.json"))
  check_fixture(b)
  T.eq(b.source.gzip, true)
end)

-- A capture cut off mid-line (a killed run): the last line has no newline, and it is the
-- CR-overwritten progress bar the fixture's progress_bar_rows come from. Plain and gzip.
T.case("log mode: no final newline, last line a CR progress bar, plain and gzip", function()
  local d = T.tmpdir()
  local text = assert(fs.read(FIXTURE))
  T.eq(text:sub(-1), "\n")
  T.match(text, "\n\rDone: 12000 variants\n$")
  local cut = text:sub(1, -2)
  assert(fs.write(d .. "/cut.log", cut))
  assert(fs.write(d .. "/cutz.log", cut))
  assert(os.execute("gzip '" .. d .. "/cutz.log'"))
  for _, path in ipairs({ d .. "/cut.log", d .. "/cutz.log.gz" }) do
    local res, dir = breakdown({ "log=" .. path })
    T.eq(res.code, 0, res.stderr)
    local b = assert(json.read(dir .. "/breakdown.json"))
    check_fixture(b)
    T.eq(b.source.lines, 27, path)
  end
end)

T.case("compare mode: two captures side by side with ratios", function()
  local d = T.tmpdir()
  local text = assert(fs.read(FIXTURE))
  local other = text:gsub("variation_take (.-) seconds=(%d%.%d+)", function(pre, s)
    return string.format("variation_take %s seconds=%.3f", pre, tonumber(s) * 2)
  end):gsub("lookup_wait=0%.025s", "lookup_wait=0.200s")
  assert(fs.write(d .. "/b.log", other))
  local res, dir = breakdown({ "log=" .. FIXTURE, "compare=" .. d .. "/b.log" })
  T.eq(res.code, 0, res.stderr)
  local c = assert(json.read(dir .. "/compare.json"))
  T.eq(c.schema_name, "wb.vep_compare")
  local rows = {}
  for _, r in ipairs(c.rows) do rows[r.metric] = r end
  T.eq({ rows["variation_take total"].a, rows["variation_take total"].b }, { 0.111, 0.222 })
  T.near(rows["variation_take total"].ratio, 2, 1e-12)
  T.near(rows["variation_take per batch (mean)"].b, 0.074, 1e-12)
  T.eq(rows["variation_take batches"].ratio, 1.0)
  T.near(rows["lookup_wait"].ratio, 8, 1e-12)
  T.eq(rows["engine"].ratio, 1.0)
  T.eq(rows["engine: csq_format"].a, 0.12)
  T.eq(c.sentences[1], "A is engine-bound (lookup_wait/engine = 4.9%).")
  T.eq(c.sentences[2], "B is lookup-bound (lookup_wait/engine = 39.4%).")
  T.match(assert(fs.read(dir .. "/compare.md")), "| variation_take total%s+| 0%.111 s | 0%.222 s | 2%.000× |")
  T.ok(res.stdout:find("# Two captures side by side", 1, true))
end)

T.case("run mode: the bundled emitter with the profile knobs, stderr captured", function()
  local res, dir = breakdown({ "emit.bytes=256K", "emit.seed=3", "emit.work_us=0" })
  T.eq(res.code, 0, res.stderr)
  local b = assert(json.read(dir .. "/breakdown.json"))
  T.eq(b.mode, "run")
  T.eq(b.command.exit_code, 0)
  T.eq(b.command.stderr_log, "logs/command.stderr.log")
  T.ok(fs.stat(dir .. "/logs/command.stderr.log").size >= 256 * 1024)
  T.eq(b.source.path, dir .. "/logs/command.stderr.log")
  T.ok(b.engine.batches > 50)
  T.eq(#b.tx_engine.stages, 15)
  T.ok(stage(b.tx_engine.stages, "transcript_hgvsc_coord_map").total_seconds > 0, "VEP_ENGINE_PROFILE_HGVSC was set")
  T.eq(b.reading.bound, "engine")
  T.eq(b.pipeline.lines, 3)
  T.match(assert(fs.read(dir .. "/summary.md")), "Command: `.*vep_emit %-%-bytes 256K %-%-seed 3")
end)

T.case("run mode: a command after --, its environment pinned to one thread", function()
  local script = "env | grep -E '^(VEP_|LANCE_|RAYON_)' | sort | sed 's/^/INFO env /' >&2; cat '" .. FIXTURE .. "' >&2"
  local res, dir = breakdown({ "--", "sh", "-c", script })
  T.eq(res.code, 0, res.stderr)
  local log = assert(fs.read(dir .. "/logs/command.stderr.log"))
  for _, v in ipairs({ "LANCE_CPU_THREADS=1", "LANCE_IO_THREADS=1", "RAYON_NUM_THREADS=1", "VEP_PROFILE=1",
    "VEP_ENGINE_PROFILE=1", "VEP_TX_ENGINE_PROFILE=1", "VEP_ENGINE_PROFILE_HGVSC=1", "VEP_LANCE_PROFILE=1" }) do
    T.ok(log:find("INFO env " .. v .. "\n", 1, true), v)
  end
  check_fixture(assert(json.read(dir .. "/breakdown.json")))
end)

T.case("run mode: a failing or timed-out command is exit 1, with the breakdown of what it printed", function()
  local res, dir = breakdown({ "--", "sh", "-c", "cat '" .. FIXTURE .. "' >&2; exit 3" })
  T.eq(res.code, 1)
  T.match(res.stderr, "the command exited 3")
  check_fixture(assert(json.read(dir .. "/breakdown.json")))
  T.eq(T.manifest(dir).status, "failed")
  local r2, dir2 = breakdown({ "timeout=0.3", "--", "sh", "-c", "cat '" .. FIXTURE .. "' >&2; exec sleep 30" })
  T.eq(r2.code, 1)
  T.match(r2.stderr, "the command timed out")
  local b = assert(json.read(dir2 .. "/breakdown.json"))
  T.eq(b.command.timed_out, true)
  T.eq(b.pipeline.output_rows, 12500)
end)

T.case("bad input: a missing log is exit 2; a log without profile lines is exit 1", function()
  local res = breakdown({ "log=/nonexistent/prof.log" })
  T.eq(res.code, 2)
  T.match(res.stderr, "log: /nonexistent/prof%.log: No such file or directory")
  local d = T.tmpdir()
  assert(fs.write(d .. "/plain.log", "INFO nothing to see\n"))
  local r2, dir = breakdown({ "log=" .. d .. "/plain.log" })
  T.eq(r2.code, 1)
  T.match(r2.stderr, "no VEP profile lines")
  local b = assert(json.read(dir .. "/breakdown.json"))
  T.eq(b.pipeline, json.null)
  T.eq(b.reading.bound, json.null)
  T.eq(breakdown({ "wall=median" }).code, 2)
end)

T.case("emitter: profile families follow the environment; seeded output is reproducible", function()
  local d = T.tmpdir()
  local function emit(env, out)
    local r = assert(proc.run { argv = { EMIT, "--bytes", "64K", "--seed", "5", "-o", out }, env = env,
      env_mode = "replace", stdout = "capture" })
    T.eq(r.code, 0)
    return assert(fs.read(out))
  end
  local scan = require "wb.scan"
  local rules = { { tag = "[VEP_PROFILE]" }, { tag = "[VEP_ENGINE_PROFILE]" }, { tag = "[VEP_TX_ENGINE_PROFILE]", sum = "time" },
    { tag = "[vep-lance-profile]" } }
  emit({ PATH = "/usr/bin:/bin" }, d .. "/none.log")
  local none = assert(scan.file(d .. "/none.log", { rules = rules }))
  T.eq({ none.rules[1].n, none.rules[2].n, none.rules[3].n, none.rules[4].n }, { 0, 0, 0, 0 })
  emit({ VEP_TX_ENGINE_PROFILE = "1" }, d .. "/tx.log")
  local tx = assert(scan.file(d .. "/tx.log", { rules = rules }))
  T.eq({ tx.rules[1].n, tx.rules[2].n, tx.rules[4].n }, { 0, 0, 0 })
  T.ok(tx.rules[3].n > 0)
  T.eq(tx.rules[3].keys.transcript_hgvsc_coord_map.sum, 0.0, "HGVSc sub-timers are 0 without VEP_ENGINE_PROFILE_HGVSC")
  T.ok(tx.rules[3].keys.transcript_hgvsc.sum > 0)
  local a = emit({ VEP_PROFILE = "1", VEP_LANCE_PROFILE = "1" }, d .. "/a.log")
  T.eq(emit({ VEP_PROFILE = "1", VEP_LANCE_PROFILE = "1" }, d .. "/b.log"), a)
  local r = assert(proc.run { argv = { EMIT, "--lines", "500", "--all", "-o", d .. "/c.log" }, stdout = "capture" })
  T.match(r.stdout, "^vep_emit: %d+ bytes, (%d+) lines")
  local lines = tonumber(r.stdout:match("bytes, (%d+) lines"))
  T.ok(lines >= 500 and lines < 600, tostring(lines))
  T.eq(proc.run { argv = { EMIT, "--bytes", "lots" }, stderr = "capture" }.code, 2)
end)

T.case("partial input is never a success: cut or corrupt gzip (exit 2, the path named), unreadable values, an empty compare=, an over-long line", function()
  local d = T.tmpdir()
  local gz = d .. "/small.log.gz"
  T.ok(assert(proc.run { argv = { "sh", "-c", 'gzip -c "$1" > "$2"', "sh", FIXTURE, gz } }).ok)
  local whole = assert(fs.read(gz))
  assert(fs.write(d .. "/cut.log.gz", whole:sub(1, #whole // 2)))
  local res = breakdown({ "log=" .. d .. "/cut.log.gz" })
  T.eq(res.code, 2, res.stderr)
  T.eq(res.stderr, "wb: " .. d .. "/cut.log.gz: gzip: unexpected end of file\n")
  assert(fs.write(d .. "/bad.log.gz", "\31\139 not deflate at all"))
  res = breakdown({ "log=" .. d .. "/bad.log.gz" })
  T.eq(res.code, 2, res.stderr)
  T.ok(not res.stderr:find("<fd:", 1, true), res.stderr)
  T.match(res.stderr, "^wb: " .. d:gsub("%p", "%%%0") .. "/bad%.log%.gz: gzip: ")

  assert(fs.write(d .. "/nan.log", "[VEP_ENGINE_PROFILE] rows=1 evaluate_prepared=NaNs\n" ..
    "[VEP_ENGINE_PROFILE] rows=1 evaluate_prepared=infs\n"))
  local dir
  res, dir = breakdown({ "log=" .. d .. "/nan.log" })
  T.eq(res.code, 1, res.stderr)
  T.match(res.stderr, "2 `%[VEP_ENGINE_PROFILE%]` lines held no readable value")
  local b = assert(json.read(dir .. "/breakdown.json"))
  T.eq({ b.profile_lines, b.unreadable_lines["[VEP_ENGINE_PROFILE]"] }, { 0, 2 })
  T.match(assert(fs.read(dir .. "/breakdown.md")), "%*%*Incomplete:%*%* 2 `%[VEP_ENGINE_PROFILE%]` lines")

  assert(fs.write(d .. "/none.log", "no profile here\n"))
  res = breakdown({ "log=" .. FIXTURE, "compare=" .. d .. "/none.log" })
  T.eq(res.code, 1, "a comparison with nothing to compare is no success")
  T.match(res.stderr, "compare: no VEP profile lines in " .. d:gsub("%p", "%%%0") .. "/none%.log")

  -- one profile line past the scanner's 64 MiB line limit, between two captures that are read
  local long = d .. "/long.log"
  local f = assert(io.open(long, "wb"))
  local fixture = assert(fs.read(FIXTURE))
  f:write(fixture, "[VEP_ENGINE_PROFILE] rows=1 note=", ("y"):rep(64 * 1024 * 1024 + 16), "\n", fixture)
  f:close()
  res, dir = breakdown({ "log=" .. long })
  T.eq(res.code, 1, res.stderr)
  T.match(res.stderr, "1 line longer than the scanner's limit was skipped")
  T.eq(assert(json.read(dir .. "/breakdown.json")).source.lines_too_long, 1)
end)
