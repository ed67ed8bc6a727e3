-- The VEP profile reader: the scan rules of the VEP_*_PROFILE stderr lines, the breakdown of one
-- capture (json-ready, schema wb.vep_breakdown v1), its reading (the interpretation rules as
-- sentences with the numbers in), its Markdown and two captures side by side (wb.vep_compare v1).
-- The log formats and the rules: docs/vep_breakdown.md. recipes/vep_breakdown.lua runs it.
local json = require "wb.json"
local report = require "wb.report"
local scan = require "wb.scan"
local opt = require("wb.util").opt

local M = {}

-- The wb.scan rules of a capture (bench/vep.lua and the fuzz target scan with them too).
M.RULES = {
  { name = "pipeline", tag = "[VEP_PROFILE]", word = "pipeline_profile", keep = "last" },
  { name = "plan", tag = "[VEP_PROFILE]", word = "concurrency_plan", keep = "last" },
  { name = "sink", tag = "[VEP_PROFILE]", word = "vcf_sink_profile", keep = "last" },
  { name = "timers", tag = "[VEP_PROFILE]", group = "label", sum = "time" },
  { name = "lance", tag = "[vep-lance-profile]", group = "event", value = { "seconds", "open_s", "scan_s" },
    collect = { "variation_take" } },
  { name = "engine", tag = "[VEP_ENGINE_PROFILE]", sum = "time" },
  { name = "tx", tag = "[VEP_TX_ENGINE_PROFILE]", sum = "time" },
  { name = "done", tag = "Done:", keep = "last" },
}

local RULES = M.RULES

local PIPELINE_KEYS = { "output_rows", "annotate", "engine", "lookup_wait", "hydrate", "context_load", "tx_window",
  "prepared_ctx" }

-- Where the transcript engine's stages sit (every other tx stage is inside tx_query_total).
local INSIDE = {
  tx_query_total = "evaluate_prepared",
  transcript_hgvsc = "transcript_output_materialize",
  transcript_hgvsc_simple_fast = "transcript_hgvsc",
  transcript_hgvsc_coord_map = "transcript_hgvsc",
  transcript_hgvsc_fallback = "transcript_hgvsc",
  overlap_splice_terms = "transcript_overlap_eval",
}
local UMBRELLAS = { evaluate_prepared = true, tx_query_total = true }

local function s3(x) return type(x) == "number" and string.format("%.3f s", x) or "–" end
local function pct(x) return type(x) == "number" and string.format("%.1f%%", x * 100) or "–" end
local function ratio(b, a) if a and b and a > 0 then return b / a end end

-- ---- reading a capture ------------------------------------------------------------------------

local function fields_of(line)
  if not line then return nil end
  local out = json.object()
  for _, kv in ipairs(scan.tokens(line)) do
    local x, unit = scan.number(kv[2])
    if unit == "bool" then out[kv[1]] = x == 1
    elseif x then out[kv[1]] = x
    else out[kv[1]] = kv[2] end
  end
  return out
end

-- stages = {{stage, total_seconds, n, mean_seconds}}, by total (largest first), then by name
local function stages_of(keys)
  local list = {}
  for name, a in pairs(keys or {}) do
    list[#list + 1] = { stage = name, total_seconds = a.sum, n = a.count, mean_seconds = a.sum / a.count }
  end
  table.sort(list, function(x, y)
    if x.total_seconds ~= y.total_seconds then return x.total_seconds > y.total_seconds end
    return x.stage < y.stage
  end)
  return list
end

local function object_list(rows, keys)
  local out = json.array()
  for i, r in ipairs(rows) do
    local o = json.object()
    for _, k in ipairs(keys) do o[k] = r[k] end
    out[i] = o
  end
  return out
end

-- b = analyse(path, threads) : the breakdown of one capture (json-ready), or nil, err
-- b, err = vep.analyse(path, threads) : the breakdown of one capture (json-ready), or nil, err
function M.analyse(path, threads)
  local res, err = scan.file(path, { rules = RULES, threads = threads })
  if not res then return nil, err end
  local r = res.rules
  local b = json.object()
  b.schema_name = "wb.vep_breakdown"
  b.schema_version = 1
  b.source = json.object({ path = path, bytes = res.bytes, lines = res.lines, gzip = res.gzip,
    scan_threads = res.threads, lines_too_long = res.truncated })
  local pl = r.pipeline.line and fields_of(r.pipeline.line)
  if pl then
    local p = json.object()
    p.contig = r.pipeline.line:match("^%[VEP_PROFILE%]%s+(%S-):?%s+pipeline_profile") or json.null
    p.lines = r.pipeline.n
    for _, k in ipairs(PIPELINE_KEYS) do
      local v = pl[k]
      if type(v) ~= "number" or (k == "output_rows" and not math.tointeger(v)) then v = json.null end
      p[k] = v
    end
    p.fields = pl
    b.pipeline = p
  else
    b.pipeline = json.null
  end
  local events = {}
  for name, g in pairs(r.lance.groups or {}) do
    events[#events + 1] = { event = name, n = g.n, total_seconds = g.value.sum }
  end
  table.sort(events, function(x, y)
    if x.total_seconds ~= y.total_seconds then return x.total_seconds > y.total_seconds end
    return x.event < y.event
  end)
  local lance = json.object()
  lance.lines = r.lance.n
  lance.events = object_list(events, { "event", "n", "total_seconds" })
  local take = r.lance.groups and r.lance.groups.variation_take
  if take and take.dist and take.dist.n > 0 then
    local d = take.dist
    lance.variation_take = json.object({ n = d.n, total_seconds = take.value.sum, min = d.min, median = d.median,
      mean = d.mean, max = d.max })
  else
    lance.variation_take = json.null
  end
  b.lance = lance
  local engine = stages_of(r.engine.keys)
  local engine_total = 0
  for _, s in ipairs(engine) do engine_total = engine_total + s.total_seconds end
  for _, s in ipairs(engine) do s.share = engine_total > 0 and s.total_seconds / engine_total or 0 end
  b.engine = json.object({ batches = r.engine.n, total_seconds = engine_total,
    stages = object_list(engine, { "stage", "total_seconds", "n", "mean_seconds", "share" }) })
  local tx = stages_of(r.tx.keys)
  for _, s in ipairs(tx) do s.inside = INSIDE[s.stage] or (s.stage ~= "tx_query_total" and "tx_query_total") or nil end
  b.tx_engine = json.object({ batches = r.tx.n,
    stages = object_list(tx, { "stage", "total_seconds", "n", "mean_seconds", "inside" }) })
  local timers = {}
  for label, g in pairs(r.timers.groups or {}) do
    timers[#timers + 1] = { label = label, n = g.n, total_ms = g.value.sum * 1000 }
  end
  table.sort(timers, function(x, y) return x.total_ms > y.total_ms or (x.total_ms == y.total_ms and x.label < y.label) end)
  b.timers = object_list(timers, { "label", "n", "total_ms" })
  b.concurrency_plan = fields_of(r.plan.line) or json.null
  b.vcf_sink = fields_of(r.sink.line) or json.null
  b.progress_bar_rows = r.done.line and tonumber(r.done.line:match("(%d+)")) or json.null
  -- a stage line none of whose values could be read (`evaluate_prepared=NaNs`) says nothing
  b.unreadable_lines = json.object()
  for _, name in ipairs({ "engine", "tx" }) do
    local rule = r[name]
    if rule.n > 0 and #stages_of(rule.keys) == 0 then b.unreadable_lines[rule.tag] = rule.n end
  end
  b.profile_lines = r.pipeline.n + r.plan.n + r.sink.n + r.timers.n + r.lance.n + r.engine.n + r.tx.n
  for _, n in pairs(b.unreadable_lines) do b.profile_lines = b.profile_lines - n end
  return b
end

-- ---- the reading --------------------------------------------------------------------------------

local function stage_total(list, name)
  for _, s in ipairs(list) do if s.stage == name then return s.total_seconds end end
end

-- Fills b.reading: the interpretation rules as sentences with the numbers in.
-- vep.read(b, cfg, command_wall) : fills b.reading, the interpretation rules as sentences with the
-- numbers in; cfg = {bound_ratio, top, wall = "auto"|"annotate"|"command"}, command_wall the
-- measured command's wall seconds or nil
function M.read(b, cfg, command_wall)
  local rd = json.object()
  local say = json.array()
  local p = b.pipeline ~= json.null and b.pipeline or nil
  local engine, wait, annotate = p and p.engine, p and p.lookup_wait, p and p.annotate
  if engine == json.null then engine = nil end
  if wait == json.null then wait = nil end
  if annotate == json.null then annotate = nil end
  local wall, source
  if cfg.wall ~= "annotate" and command_wall and (cfg.wall == "command" or not annotate or command_wall >= annotate) then
    wall, source = command_wall, "command"
  elseif annotate then
    wall, source = annotate, "annotate"
  end
  rd.wall_seconds = wall or json.null
  rd.wall_source = source or json.null
  rd.engine_share_of_wall = engine and wall and wall > 0 and engine / wall or json.null
  rd.lookup_wait_over_engine = engine and wait and engine > 0 and wait / engine or json.null
  if engine and wait then
    local r = engine > 0 and wait / engine or math.huge
    rd.bound = r < cfg.bound_ratio and "engine" or "lookup"
    local share = wall and string.format(", and the engine is %s of the %s wall time (%s)", pct(engine / wall),
      source == "command" and "command's measured" or "annotate", s3(wall)) or ""
    if rd.bound == "engine" then
      say[#say + 1] = string.format("Engine-bound: lookup_wait (%s) is %s of engine (%s)%s. Lookup or cache-encoding "
        .. "changes will not move the end-to-end time.", s3(wait), pct(r), s3(engine), share)
    else
      say[#say + 1] = string.format("Lookup-bound: lookup_wait (%s) is %s of engine (%s)%s. The engine waits on the "
        .. "variation cache; lookup and cache-layout changes are what move the end-to-end time.", s3(wait), pct(r),
        s3(engine), share)
    end
  else
    rd.bound = json.null
    say[#say + 1] = "No pipeline_profile line with engine and lookup_wait (was VEP_PROFILE=1 set?): "
      .. "engine- or lookup-bound cannot be told."
  end
  local take = b.lance.variation_take ~= json.null and b.lance.variation_take or nil
  if take and wait then
    say[#say + 1] = string.format("variation_take spends %s over %d batches (median %s per batch), but it overlaps "
      .. "engine work: what the engine pays for lookups is lookup_wait (%s).", s3(take.total_seconds), take.n,
      s3(take.median), s3(wait))
  end
  local es, ts = b.engine.stages, b.tx_engine.stages
  local ev, tq = stage_total(es, "evaluate_prepared"), stage_total(ts, "tx_query_total")
  if ev and tq then
    say[#say + 1] = string.format("evaluate_prepared (%s) ≈ tx_query_total (%s, %s of it): the transcript engine "
      .. "runs inside evaluate_prepared, so never add the two.", s3(ev), s3(tq), pct(tq / ev))
  end
  local mat, hg = stage_total(ts, "transcript_output_materialize"), stage_total(ts, "transcript_hgvsc")
  if mat and hg then
    say[#say + 1] = string.format("transcript_output_materialize (%s) contains transcript_hgvsc (%s, %s of it).",
      s3(mat), s3(hg), pct(mat > 0 and hg / mat or nil))
  end
  local csq = stage_total(es, "csq_format")
  if csq then
    say[#say + 1] = string.format("csq_format (%s) includes SIFT/PolyPhen, protein domains and miRNA.", s3(csq))
  end
  local rows = p and math.tointeger(p.output_rows)
  if rows then
    local bar = math.tointeger(b.progress_bar_rows)
    say[#say + 1] = string.format("Rows: trust output_rows = %d (pipeline_profile)%s.", rows,
      bar and bar ~= rows and string.format(", not the progress bar's %d", bar) or "")
  end
  local candidates = {}
  for _, s in ipairs(es) do if not UMBRELLAS[s.stage] then candidates[#candidates + 1] = s end end
  for _, s in ipairs(ts) do
    if not UMBRELLAS[s.stage] and INSIDE[s.stage] ~= "transcript_hgvsc" then candidates[#candidates + 1] = s end
  end
  table.sort(candidates, function(x, y)
    if x.total_seconds ~= y.total_seconds then return x.total_seconds > y.total_seconds end
    return x.stage < y.stage
  end)
  local targets, named = json.array(), {}
  for i = 1, math.min(cfg.top, #candidates) do
    local s = candidates[i]
    targets[i] = s.stage
    local share = b.engine.total_seconds > 0 and ", " .. pct(s.total_seconds / b.engine.total_seconds) .. " of engine" or ""
    local where = s.inside and s.inside ~= "tx_query_total" and ", inside " .. s.inside or ""
    named[i] = string.format("%s (%s%s%s)", s.stage, s3(s.total_seconds), share, where)
  end
  rd.targets = targets
  if #named > 0 then
    say[#say + 1] = "Targets: " .. table.concat(named, ", ") .. "."
  end
  rd.sentences = say
  b.reading = rd
end

-- ---- Markdown ------------------------------------------------------------------------------------

-- lines = vep.incomplete(b) : what of a capture could not be read, one sentence each ({} when all of it was)
function M.incomplete(b)
  local out = {}
  if (b.source.lines_too_long or 0) > 0 then
    out[#out + 1] = string.format("%d line%s longer than the scanner's limit %s skipped", b.source.lines_too_long,
      b.source.lines_too_long == 1 and "" or "s", b.source.lines_too_long == 1 and "was" or "were")
  end
  for tag, n in pairs(b.unreadable_lines) do
    out[#out + 1] = string.format("%d `%s` line%s held no readable value (e.g. NaN or inf)", n, tag, n == 1 and "" or "s")
  end
  table.sort(out)
  return out
end

-- md = vep.markdown(b, title) : the breakdown as Markdown
function M.markdown(b, title)
  local out = { "# " .. title, "" }
  local function add(s) out[#out + 1] = s end
  add(string.format("Source: `%s` (%d bytes, %d lines%s); %d profile lines.", b.source.path, b.source.bytes,
    b.source.lines, b.source.gzip and ", gzip" or "", b.profile_lines))
  for _, w in ipairs(M.incomplete(b)) do add("**Incomplete:** " .. w .. ".") end
  add("")
  add("## Pipeline (VEP_PROFILE)")
  add("")
  if b.pipeline == json.null then
    add("No `pipeline_profile` line.")
  else
    local p = b.pipeline
    add(string.format("Last `pipeline_profile` line (%s, %d contig line%s; the last is the whole run):",
      p.contig ~= json.null and p.contig or "?", p.lines, p.lines == 1 and "" or "s"))
    add("")
    local rows = { { "key", "value" } }
    for _, k in ipairs(PIPELINE_KEYS) do
      local v = p[k]
      if v ~= json.null then rows[#rows + 1] = { k, k == "output_rows" and string.format("%d", v) or s3(v) } end
    end
    add(report.table(rows, { align = { "l", "r" } }))
  end
  add("## Lance lookup (VEP_LANCE_PROFILE)")
  add("")
  if #b.lance.events == 0 then
    add("No `[vep-lance-profile]` lines.")
  else
    local rows = { { "event", "n", "total" } }
    for _, e in ipairs(b.lance.events) do rows[#rows + 1] = { e.event, string.format("%d", e.n), s3(e.total_seconds) } end
    add(report.table(rows, { align = { "l", "r", "r" } }))
    local t = b.lance.variation_take
    if t ~= json.null then
      add("`variation_take` per batch:")
      add("")
      add(report.table({ { "min", "median", "mean", "max", "n" },
        { s3(t.min), s3(t.median), s3(t.mean), s3(t.max), string.format("%d", t.n) } },
        { align = { "r", "r", "r", "r", "r" } }))
    end
  end
  add("## Engine — top level (VEP_ENGINE_PROFILE), additive")
  add("")
  if #b.engine.stages == 0 then
    add("No `[VEP_ENGINE_PROFILE]` lines.")
  else
    add(string.format("Summed over %d batch lines; total %s.", b.engine.batches, s3(b.engine.total_seconds)))
    add("")
    local rows = { { "stage", "total", "share", "per batch" } }
    for _, s in ipairs(b.engine.stages) do
      rows[#rows + 1] = { s.stage, s3(s.total_seconds), pct(s.share), string.format("%.6f s", s.mean_seconds) }
    end
    add(report.table(rows, { align = { "l", "r", "r", "r" } }))
  end
  add("## Transcript engine — inside evaluate_prepared (VEP_TX_ENGINE_PROFILE), nested")
  add("")
  if #b.tx_engine.stages == 0 then
    add("No `[VEP_TX_ENGINE_PROFILE]` lines.")
  else
    add(string.format("Summed over %d batch lines. Nested: do not add a stage to the one it is inside.",
      b.tx_engine.batches))
    add("")
    local rows = { { "stage", "total", "inside", "per batch" } }
    for _, s in ipairs(b.tx_engine.stages) do
      rows[#rows + 1] = { s.stage, s3(s.total_seconds), s.inside or "", string.format("%.6f s", s.mean_seconds) }
    end
    add(report.table(rows, { align = { "l", "r", "l", "r" } }))
  end
  if #b.timers > 0 then
    add("## Stage timers (VEP_PROFILE, ms)")
    add("")
    local rows = { { "label", "n", "total" } }
    for _, t in ipairs(b.timers) do rows[#rows + 1] = { t.label, string.format("%d", t.n), string.format("%.1f ms", t.total_ms) } end
    add(report.table(rows, { align = { "l", "r", "r" } }))
  end
  add("## Reading it")
  add("")
  for _, s in ipairs(b.reading.sentences) do add("- " .. s) end
  add("")
  return table.concat(out, "\n")
end

-- md = vep.summary(b [, command]) : the reading as Markdown, after the command line, exit and wall time
function M.summary(b, command)
  local out = { "# VEP breakdown summary", "" }
  if command then
    out[#out + 1] = string.format("Command: `%s` — exit %s, %s wall.", table.concat(command.argv, " "),
      tostring(command.exit_code), s3(command.wall_seconds))
    out[#out + 1] = ""
  end
  for _, s in ipairs(b.reading.sentences) do out[#out + 1] = "- " .. s end
  out[#out + 1] = ""
  return table.concat(out, "\n")
end

-- ---- two captures side by side -------------------------------------------------------------------

-- c, md = vep.compare(a, b) : two read breakdowns side by side (wb.vep_compare v1) and as Markdown
function M.compare(a, b)
  local function take(x, k)
    local t = x.lance.variation_take
    return t ~= json.null and t[k] or nil
  end
  local function pipe(x, k)
    local v = x.pipeline ~= json.null and x.pipeline[k] or nil
    return v ~= json.null and v or nil
  end
  local rows = {
    { "variation_take total", take(a, "total_seconds"), take(b, "total_seconds"), "s" },
    { "variation_take per batch (mean)", take(a, "mean"), take(b, "mean"), "s" },
    { "variation_take per batch (median)", take(a, "median"), take(b, "median"), "s" },
    { "variation_take batches", take(a, "n"), take(b, "n"), "" },
    { "lookup_wait", pipe(a, "lookup_wait"), pipe(b, "lookup_wait"), "s" },
    { "engine", pipe(a, "engine"), pipe(b, "engine"), "s" },
    { "annotate", pipe(a, "annotate"), pipe(b, "annotate"), "s" },
    { "output_rows", pipe(a, "output_rows"), pipe(b, "output_rows"), "" },
  }
  local seen = {}
  for _, x in ipairs({ a, b }) do
    for _, s in ipairs(x.engine.stages) do
      if not seen[s.stage] then
        seen[s.stage] = true
        rows[#rows + 1] = { "engine: " .. s.stage, stage_total(a.engine.stages, s.stage), stage_total(b.engine.stages, s.stage), "s" }
      end
    end
  end
  local c = json.object()
  c.schema_name = "wb.vep_compare"
  c.schema_version = 1
  c.a = a.source.path
  c.b = b.source.path
  c.rows = json.array()
  local md = { "# Two captures side by side", "", "A: `" .. c.a .. "`  ", "B: `" .. c.b .. "`", "" }
  local t = { { "metric", "A", "B", "B/A" } }
  for i, r in ipairs(rows) do
    local q = ratio(r[3], r[2])
    c.rows[i] = json.object({ metric = r[1], a = r[2] or json.null, b = r[3] or json.null, ratio = q or json.null,
      unit = r[4] })
    local function f(v) if v == nil then return "–" end return r[4] == "s" and s3(v) or string.format("%d", v) end
    t[#t + 1] = { r[1], f(r[2]), f(r[3]), q and string.format("%.3f×", q) or "–" }
  end
  md[#md + 1] = report.table(t, { align = { "l", "r", "r", "r" } })
  local say = {}
  for _, x in ipairs({ { "A", a }, { "B", b } }) do
    if x[2].reading.bound ~= json.null then
      say[#say + 1] = string.format("%s is %s-bound (lookup_wait/engine = %s).", x[1], x[2].reading.bound,
        pct(x[2].reading.lookup_wait_over_engine))
    end
  end
  local pa, pb = take(a, "mean"), take(b, "mean")
  if pa and pb then
    say[#say + 1] = string.format("variation_take per batch: B/A = %.3f×%s.", pb / pa,
      a.reading.bound == "engine" and b.reading.bound == "engine"
        and "; both runs are engine-bound, so the lookup difference barely moves the end-to-end time" or "")
  end
  c.sentences = json.array(say)
  md[#md + 1] = ""
  for _, s in ipairs(say) do md[#md + 1] = "- " .. s end
  md[#md + 1] = ""
  return c, table.concat(md, "\n")
end

-- ---- a command's capture ---------------------------------------------------------------------------

-- command, log = vep.run_command(c, argv, env [, timeout]) : runs argv (strings) as campaign c's run
-- "command" with env set, its stderr to logs/command.stderr.log (the capture, path log); command
-- is its json-ready record (argv, exit_code, signal, timed_out, wall_seconds, stderr_log). A
-- command that cannot start fails the run (exit 1).
function M.run_command(c, argv, env, timeout)
  local res, err = c:spawn("command", { argv = argv, env = env, timeout = timeout })
  local rec = c:record("command")
  if rec.status ~= "failed" then rec.status = "success" end
  c:save()
  if not res then
    c:finish()
    require("wb.errors").raise(1, "command: " .. tostring(err), 0)
  end
  return json.object({ argv = json.array(argv), exit_code = res.code or json.null, signal = res.signal or json.null,
    timed_out = res.timed_out or false, wall_seconds = res.wall, stderr_log = rec.stderr_log }),
    c.dir .. "/" .. rec.stderr_log
end

-- metrics = vep.metrics(b) : a breakdown's headline figures, for its manifest record
function M.metrics(b)
  local p = b.pipeline ~= json.null and b.pipeline or {}
  local take = b.lance.variation_take ~= json.null and b.lance.variation_take or {}
  return json.object({ engine_seconds = opt(p.engine), lookup_wait_seconds = opt(p.lookup_wait),
    annotate_seconds = opt(p.annotate), output_rows = opt(p.output_rows),
    variation_take_total_seconds = take.total_seconds, engine_stages_seconds = b.engine.total_seconds })
end

return M
