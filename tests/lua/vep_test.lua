-- wb.vep, the VEP profile reader, in-process on small hand-written captures (the recipe end to
-- end: tests/recipes/vep_breakdown_test.lua).
local T = require "wb.test"
local fs = require "wb.fs"
local json = require "wb.json"
local vep = require "wb.vep"

local CFG = { bound_ratio = 0.2, top = 3, wall = "auto" }

-- b = capture(text) : the breakdown of a capture holding text
local function capture(text)
  local path = T.tmpdir() .. "/c.log"
  assert(fs.write(path, text))
  return assert(vep.analyse(path, 1)), path
end

local function pipeline(wait, engine, annotate)
  return string.format("[VEP_PROFILE] chr7: pipeline_profile output_rows=40 lookup_wait=%gs engine=%gs annotate=%gs\n",
    wait, engine, annotate)
end

local ENGINE = "[VEP_ENGINE_PROFILE] rows=10 evaluate_prepared=0.300000s csq_format=0.150000s\n"
  .. "[VEP_ENGINE_PROFILE] rows=10 evaluate_prepared=0.100000s csq_format=0.050000s\n"
local TX = "[VEP_TX_ENGINE_PROFILE] rows=10 tx_query_total=0.390000s transcript_hgvsc=0.040000s tx_other=0.010000s\n"

T.case("analyse: stages summed over batch lines, shares of the engine, where tx stages sit", function()
  local b, path = capture(pipeline(0.01, 0.6, 0.7) .. ENGINE .. TX)
  T.eq(b.schema_name, "wb.vep_breakdown")
  T.eq(b.source.path, path)
  T.eq({ b.pipeline.contig, b.pipeline.lines, b.pipeline.output_rows, b.pipeline.hydrate },
    { "chr7", 1, 40, json.null })
  T.eq(b.engine.batches, 2)
  T.near(b.engine.total_seconds, 0.6, 1e-12)
  local s = b.engine.stages
  T.eq({ s[1].stage, s[2].stage }, { "evaluate_prepared", "csq_format" })
  T.near(s[1].total_seconds, 0.4, 1e-12)
  T.near(s[1].mean_seconds, 0.2, 1e-12)
  T.near(s[1].share, 2 / 3, 1e-12)
  local inside = {}
  for _, t in ipairs(b.tx_engine.stages) do inside[t.stage] = t.inside end
  T.eq(inside, { tx_query_total = "evaluate_prepared", transcript_hgvsc = "transcript_output_materialize",
    tx_other = "tx_query_total" })
  T.eq(b.profile_lines, 4)
  T.eq(b.lance.variation_take, json.null)
  T.eq(vep.incomplete(b), {})
  local m = vep.metrics(b)
  T.eq({ m.engine_seconds, m.lookup_wait_seconds, m.output_rows, m.variation_take_total_seconds },
    { 0.6, 0.01, 40, nil })
end)

T.case("read: engine-bound below bound_ratio, lookup-bound at it; which wall the share is of", function()
  local b = capture(pipeline(0.1, 0.5, 0.8) .. ENGINE)
  vep.read(b, CFG, nil)
  T.eq({ b.reading.bound, b.reading.wall_source, b.reading.wall_seconds }, { "lookup", "annotate", 0.8 })
  T.near(b.reading.lookup_wait_over_engine, 0.2, 1e-12)
  T.match(b.reading.sentences[1], "^Lookup%-bound: lookup_wait %(0%.100 s%) is 20%.0%% of engine %(0%.500 s%)")
  vep.read(b, { bound_ratio = 0.21, top = 3, wall = "auto" }, nil)
  T.eq(b.reading.bound, "engine")
  for _, c in ipairs({ { "auto", 0.7, "annotate" }, { "auto", 0.9, "command" }, { "annotate", 0.9, "annotate" },
    { "command", 0.7, "command" } }) do
    vep.read(b, { bound_ratio = 0.2, top = 3, wall = c[1] }, c[2])
    T.eq(b.reading.wall_source, c[3], c[1] .. " with a command of " .. c[2] .. " s")
  end
  T.eq(b.reading.targets, { "csq_format" }, "evaluate_prepared is an umbrella, never a target")
end)

T.case("read: no pipeline line, no verdict; a NaN stage line is unreadable, not a stage", function()
  local b = capture("[VEP_ENGINE_PROFILE] rows=1 evaluate_prepared=NaNs\n")
  vep.read(b, CFG, 2.0)
  T.eq({ b.pipeline, b.reading.bound, b.profile_lines }, { json.null, json.null, 0 })
  T.match(b.reading.sentences[1], "^No pipeline_profile line")
  T.eq(vep.incomplete(b), { "1 `[VEP_ENGINE_PROFILE]` line held no readable value (e.g. NaN or inf)" })
  T.match(vep.markdown(b, "T"), "%*%*Incomplete:%*%* 1 `%[VEP_ENGINE_PROFILE%]` line held")
  T.match(vep.summary(b, { argv = { "a", "b" }, exit_code = 0, wall_seconds = 2 }), "Command: `a b` — exit 0, 2%.000 s wall%.")
end)

T.case("compare: B/A per metric, a dash where either side has none", function()
  local a = capture(pipeline(0.05, 0.5, 0.6) .. ENGINE)
  local b = capture(pipeline(0.2, 1.0, 1.1))
  vep.read(a, CFG, nil)
  vep.read(b, CFG, nil)
  local c, md = vep.compare(a, b)
  T.eq(c.schema_name, "wb.vep_compare")
  local rows = {}
  for _, r in ipairs(c.rows) do rows[r.metric] = r end
  T.near(rows.lookup_wait.ratio, 4, 1e-12)
  T.near(rows.engine.ratio, 2, 1e-12)
  T.eq({ rows["engine: csq_format"].b, rows["engine: csq_format"].ratio }, { json.null, json.null })
  T.eq(c.sentences, { "A is engine-bound (lookup_wait/engine = 10.0%).", "B is lookup-bound (lookup_wait/engine = 20.0%)." })
  T.match(md, "| lookup_wait +| 0%.050 s | 0%.200 s | 4%.000× |")
  T.match(md, "| engine: csq_format +| 0%.200 s | +– | +– |")
end)

T.case("analyse: a missing capture is nil and the reason", function()
  local b, err = vep.analyse(T.tmpdir() .. "/none.log", 1)
  T.eq(b, nil)
  T.match(err, "none%.log: No such file or directory")
end)
