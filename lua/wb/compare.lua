-- `wb compare BASE NEW`: the metrics two result files have in common, judged by wb.verdict
-- (DESIGN §6) and printed as a Markdown table (or, with --json, as a wb.compare document).
--
-- Inputs are recognised by content:
--   wb.bench summary   "<command> wall mean|wall median|user mean|sys mean|maxrss_kb mean",
--                      each with its samples
--   wb.manifest        "<run> <metric>" for the numeric fields of each successful run's
--                      metrics{} (nested ones by dotted path) and wall_time_seconds; samples
--                      from the run's samples{}
--   hyperfine JSON     "<command> mean|median|min|max|user|system", `times` as the samples
--                      of the wall-clock ones
--   any other JSON     metrics{} (with samples{} beside it), else runs[] by name, else
--                      results[] by name, else every numeric leaf by dotted path; array
--                      elements by 1-based index ("a.b[2].c"); records with a metrics{} are
--                      read as manifest runs
-- A wb schema (wb.bench, wb.manifest) with an unknown schema_version is refused.
local errors = require "wb.errors"
local json = require "wb.json"
local report = require "wb.report"
local util = require "wb.util"
local verdict = require "wb.verdict"
local interference = require "wb.interference"

local M = {}
M.SCHEMA_NAME = "wb.compare"
M.SCHEMA_VERSION = 1
M.USAGE = "usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02] [--confirm]"

local WB_SCHEMAS = { ["wb.bench"] = 1, ["wb.manifest"] = 1 }

local function fail(msg) errors.raise(2, "compare: " .. msg, 0) end

local is_array = util.is_list
local function is_object(v) return type(v) == "table" and not is_array(v) end

-- The values of v when it is a non-empty list of numbers (or wb.stats samples), else nil.
local sample_list = verdict.values_of

---- units -----------------------------------------------------------------------------------

local TIME_UNITS = {
  ns = "ns", nanosecond = "ns", nanoseconds = "ns",
  us = "us", usec = "us", micros = "us", microsecond = "us", microseconds = "us",
  ms = "ms", msec = "ms", millis = "ms", millisecond = "ms", milliseconds = "ms",
  s = "s", sec = "s", secs = "s", second = "s", seconds = "s",
}
local MEMORY_UNITS = {
  b = "B", byte = "B", bytes = "B", kb = "KiB", kib = "KiB", mb = "MiB", mib = "MiB",
  gb = "GiB", gib = "GiB",
}
local TO_SECONDS = { ns = 1e-9, us = 1e-6, ms = 1e-3, s = 1 }
local TO_BYTES = { B = 1, KiB = 1024, MiB = 1024 ^ 2, GiB = 1024 ^ 3 }

-- The unit a metric's name states (the word nearest its end that names one), for its kind.
local function unit_of(path, kind)
  local units = kind == "time" and TIME_UNITS or (kind == "memory" or kind == "count") and MEMORY_UNITS
  if not units then return nil end
  local unit
  for word in path:lower():gmatch("[%a]+") do unit = units[word] or unit end
  return unit
end

local function format_plain(v)
  if math.type(v) == "integer" then return string.format("%d", v) end
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", math.tointeger(v)) end
  return string.format("%.6g", v)
end

local function format_bytes(b)
  local a = math.abs(b)
  if a < 1024 then return format_plain(b) .. " B" end
  if a < 1024 ^ 2 then return string.format("%.1f KiB", b / 1024) end
  if a < 1024 ^ 3 then return string.format("%.1f MiB", b / 1024 ^ 2) end
  return string.format("%.2f GiB", b / 1024 ^ 3)
end

-- s = compare.format_value(v, unit) : times auto-scaled (µs, ms, s), memory in B/KiB/MiB/GiB,
-- anything without a unit as a plain number
function M.format_value(v, unit)
  if TO_SECONDS[unit] then
    local s = v * TO_SECONDS[unit]
    if s < 0 then return "-" .. util.format_seconds(-s) end
    return util.format_seconds(s)
  end
  if TO_BYTES[unit] then return format_bytes(v * TO_BYTES[unit]) end
  return format_plain(v)
end

---- loaders ---------------------------------------------------------------------------------

-- A metric set: {path, format, metrics = {name = {record, metric, value, samples, kind, unit,
-- stat}}}. Every input names one quantity alike: "<record> <metric>", where a wb.bench
-- summary, a manifest of wb bench and a hyperfine export of the same commands give the same
-- "<command> wall mean", "wall median", "wall min", "wall max", "user mean", "sys mean" and
-- "maxrss_kb mean" (KiB), and "alloc_bytes mean" (B) where allocations were counted.
local function new_set(path, format) return { path = path, format = format, metrics = {} } end

-- A process's user and system times (per run, in seconds), which the kernel splits at its tick.
local CPU_SPLIT = { ["user mean"] = true, ["sys mean"] = true, user_seconds = true, sys_seconds = true }
-- A peak RSS comes from the kernel's per-CPU RSS counters, read without their pending deltas: two
-- reads of one process differ by up to two counter batches per CPU it ran on, so a change below
-- one CPU's share (wb.memory.rss_error_kb(1): 256 KiB on 2 CPUs, 1152 KiB on 72) is no verdict.
-- The same `sleep` read 5% (55 KiB) apart in two campaigns on a quiet machine.
local RSS_PEAK = { ["maxrss_kb mean"] = true, maxrss_kb = true }

-- resolution, unit text, what it is the resolution of = compare.resolution(metric) : the smallest
-- change metric resolves (nil for a metric with none stated)
local function resolution(metric)
  if CPU_SPLIT[metric] then
    return verdict.CPU_SPLIT_RESOLUTION, nil, "the kernel's user/system split (its scheduler tick)"
  elseif RSS_PEAK[metric] then
    local kb = require("wb.memory").rss_error_kb(1)
    return kb, string.format("%d KiB", kb), "the kernel's per-CPU RSS counters"
  end
end

M.resolution = resolution

-- The statistic a value of samples xs is, when its name does not say: the nearer of their
-- median and mean.
local function stat_from_samples(value, xs)
  if not xs then return nil end
  local stats = require "wb.stats"
  return math.abs(value - stats.median(xs)) < math.abs(value - stats.mean(xs)) and "median" or "mean"
end

local function finite(x) return x == x and x ~= math.huge and x ~= -math.huge end

-- A plain Lua table holding 1..n and nothing else (samples a recipe put in a manifest in memory).
local function is_sequence(t)
  if type(t) ~= "table" or #t == 0 then return false end
  local n = 0
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 or k > #t then return false end
    n = n + 1
  end
  return n == #t
end

-- Raises (exit 2) unless x is a finite number, and a non-negative one for a time, memory or
-- rate: a file holding anything else is not a measurement to compare.
local function check_number(set, name, x, kind, what)
  local bad = type(x) ~= "number" and "not a number" or not finite(x) and "not a finite number"
      or (x < 0 and (kind == "time" or kind == "memory" or kind == "rate")) and ("a negative " .. kind)
  if bad then
    fail(string.format("%s: %s%s is %s (%s)", set.path, name, what or "", bad, tostring(x == json.null and "null" or x)))
  end
end

-- The samples of a metric (a non-empty list), every one checked; nil when there are none.
local function checked_samples(set, name, samples, kind)
  if samples == nil or samples == json.null then return nil end
  if type(samples) == "userdata" and samples.totable then samples = samples:totable() end
  if not is_array(samples) and not is_sequence(samples) then
    fail(string.format("%s: the samples of %s are not a list", set.path, name))
  end
  for i, x in ipairs(samples) do check_number(set, name, x, kind, string.format(" sample %d", i)) end
  return #samples > 0 and samples or nil
end

-- stat: the statistic the value is ("mean", "median", or an information-only one such as
-- "max"); from the metric's name, else (or when false: the name was read and states none) from
-- its samples.
-- evidence: the interference evidence of a wall time's samples (wb.interference.evidence).
local function add(set, record, metric, value, samples, kind, unit, stat, evidence)
  local name = record and (record .. " " .. metric) or metric
  if type(value) ~= "number" or set.metrics[name] then return end
  check_number(set, name, value, kind)
  samples = checked_samples(set, name, samples, kind)
  if stat == nil then stat = verdict.stat_of(metric) end -- false: the name states none
  stat = stat or stat_from_samples(value, samples) or "mean"
  local res, res_text, res_of = resolution(metric)
  set.metrics[name] = { record = record, metric = metric, value = value, samples = samples, kind = kind,
    unit = unit, stat = stat, resolution = res, resolution_text = res_text, resolution_of = res_of,
    evidence = samples and kind == "time" and evidence or nil }
end

-- The kind, unit and stated statistic of a path, cached by its shape: they depend on its words,
-- not its digits, and a large document repeats a few shapes ("variants[#].wall_seconds") many
-- times. The cache is emptied when it holds CACHE_MAX shapes.
local CACHE_MAX = 4096
local named_cache, cached = {}, 0
local function describe_path(path)
  local shape = path:gsub("%d+", "#")
  local hit = named_cache[shape]
  if not hit then
    local leaf = shape:match("([^%.%[%]]+)[%]]*$") or shape
    local kind = verdict.classify(leaf)
    if kind == "other" then kind = verdict.classify(shape) end
    hit = { kind, unit_of(shape, kind) or false, verdict.stat_of(shape) or false }
    if cached >= CACHE_MAX then named_cache, cached = {}, 0 end
    named_cache[shape], cached = hit, cached + 1
  end
  return hit[1], hit[2] or nil, hit[3] or nil
end

-- Adds a metric whose kind and unit come from its path (the last key first, then the whole path).
-- loose: a number found anywhere in a document (not under metrics{}), where a negative value
-- is a signed quantity (an offset, a delta) rather than a broken measurement: it is "other".
local function add_named(set, record, path, value, samples, loose)
  local kind, unit, stat = describe_path(path)
  if loose and value < 0 and kind ~= "count" then kind = "other" end
  add(set, record, path, value, samples, kind, unit, stat or false)
end

-- Calls fn(path, number) for every numeric leaf of v, in document order.
local function each_number(v, path, fn)
  if math.type(v) then
    fn(path, v)
  elseif is_array(v) then
    for i, x in ipairs(v) do each_number(x, path .. "[" .. i .. "]", fn) end
  elseif type(v) == "table" then
    for k, x in pairs(v) do
      if type(k) == "string" then each_number(x, path == "" and k or (path .. "." .. k), fn) end
    end
  end
end

-- The samples of a metric path in samples{}: under its own name, else under the name without
-- its statistic ("wall_mean_seconds" and "wall_median_seconds" share "wall_seconds").
-- Returns the samples and the key they are under.
local function samples_for(samples, path)
  if not samples then return nil end
  local own = samples[path]
  if own ~= nil then return own, path end
  local bare = path:gsub("_mean", "", 1):gsub("_median", "", 1)
  if bare ~= path and samples[bare] ~= nil then return samples[bare], bare end
  return nil
end

-- Adds the numeric leaves of v as "<record> <path>", with samples looked up by path; skip: a
-- set of top-level keys left out; loose as for add_named.
local function add_leaves(set, record, v, samples, skip, loose)
  each_number(v, "", function(path, x)
    if path == "" then path = "value" end
    if skip and skip[path:match("^[^%.%[]+")] then return end
    add_named(set, record, path, x, (samples_for(samples, path)), loose)
  end)
end

local function check_version(doc, path)
  local max = WB_SCHEMAS[doc.schema_name]
  local v = doc.schema_version
  local major = math.type(v) and math.floor(v) or tonumber(tostring(v):match("^(%d+)"))
  if not major or major < 1 or major > max then
    fail(string.format("%s: unsupported %s schema_version %s (this wb reads up to %d)", path,
      doc.schema_name, tostring(v == json.null and "null" or v), max))
  end
end

-- name, key = record_name(rec, i, seen) : a record's name (its name, command or id field, else
-- "#i"; "<name> #i" when taken) and the field it came from
local function record_name(rec, i, seen)
  local name, key
  for _, k in ipairs({ "name", "command", "id" }) do
    local v = rec[k]
    if type(v) == "string" or math.type(v) then
      name, key = tostring(v), k
      break
    end
  end
  name = name or ("#" .. i)
  if seen[name] then name = name .. " #" .. i end
  seen[name] = true
  return name, key
end

-- A manifest's names for the quantities of a wb.bench command, and the names they compare under.
local BENCH_METRICS = {
  wall_mean_seconds = { "wall mean", "time", "s" }, wall_median_seconds = { "wall median", "time", "s" },
  wall_min_seconds = { "wall min", "time", "s" }, wall_max_seconds = { "wall max", "time", "s" },
  user_mean_seconds = { "user mean", "time", "s" }, sys_mean_seconds = { "sys mean", "time", "s" },
  maxrss_kb_mean = { "maxrss_kb mean", "memory", "KiB" }, alloc_bytes_mean = { "alloc_bytes mean", "memory", "B" },
}

-- A run record with a metrics{}: its numeric metrics and wall_time_seconds, samples{} beside.
-- A peak RSS that is only an upper bound (wb's own standing in for a small child's) is left out.
local function add_run(set, name, rec)
  local samples = is_object(rec.samples) and rec.samples or nil
  local metrics = is_object(rec.metrics) and rec.metrics or {}
  local rest = {}
  for k, v in pairs(metrics) do
    local alias = BENCH_METRICS[k]
    if alias then
      if not (rec.maxrss_upper_bound == true and alias[2] == "memory") then
        local xs, key = samples_for(samples, k)
        add(set, name, alias[1], v, xs, alias[2], alias[3], nil,
          key and alias[1]:match("^wall") and interference.from_samples(samples, key) or nil)
      end
    elseif type(k) == "string" and k:match("^wall") and type(v) == "number" and verdict.classify(k) == "time" then
      local xs, key = samples_for(samples, k)
      add(set, name, k, v, xs, "time", "s", nil, key and interference.from_samples(samples, key) or nil)
    elseif type(k) == "string" then
      rest[k] = v
    end
  end
  add_leaves(set, name, rest, samples)
  add(set, name, "wall_time_seconds", rec.wall_time_seconds, samples and samples.wall_time_seconds, "time", "s", nil,
    interference.from_samples(samples, "wall_time_seconds"))
end

-- The metrics of one wb.bench command: its stats{} (or statistics of its samples) and samples.
local function add_command(set, name, cmd)
  local stats = require "wb.stats"
  local samples = is_object(cmd.samples) and cmd.samples or {}
  local st = is_object(cmd.stats) and cmd.stats or {}
  local evidence = interference.from_samples(samples, "wall")
  local function stat(field, which)
    local s = is_object(st[field]) and st[field][which]
    if type(s) == "number" then return s end
    local xs = sample_list(samples[field])
    return xs and stats.summary(xs)[which]
  end
  for _, which in ipairs({ "mean", "median", "min", "max" }) do
    add(set, name, "wall " .. which, stat("wall", which), samples.wall, "time", "s", which, evidence)
  end
  add(set, name, "user mean", stat("user", "mean"), samples.user, "time", "s", "mean")
  add(set, name, "sys mean", stat("sys", "mean"), samples.sys, "time", "s", "mean")
  if cmd.maxrss_upper_bound ~= true then
    add(set, name, "maxrss_kb mean", stat("maxrss_kb", "mean"), samples.maxrss_kb, "memory", "KiB", "mean")
  end
  if samples.alloc_bytes then -- counted in the allocation runs (alloc_runs)
    add(set, name, "alloc_bytes mean", stat("alloc_bytes", "mean"), samples.alloc_bytes, "memory", "B", "mean")
  end
end

local function load_bench(set, doc)
  local seen = {}
  for i, cmd in ipairs(is_array(doc.commands) and doc.commands or {}) do
    if is_object(cmd) then add_command(set, record_name(cmd, i, seen), cmd) end
  end
end

-- Successful runs; a trial or warm-up record of a run is left out (the run carries its trials'
-- samples), and so are a confirmation's (wb.matrix_confirm: judged on their own).
local NOT_COMPARED = { trial = true, warmup = true, confirmation = true }
local function load_manifest(set, doc)
  set.load_average = is_object(doc.load_average) and doc.load_average or nil
  local seen = {}
  for i, rec in ipairs(is_array(doc.runs) and doc.runs or {}) do
    if is_object(rec) and rec.status == "success" and not NOT_COMPARED[rec.role] then
      add_run(set, record_name(rec, i, seen), rec)
    end
  end
end

-- hyperfine's fields, as the quantities wb names them ({field, metric, stat, with times{}}).
local HYPERFINE = {
  { "mean", "wall mean", "mean", true }, { "median", "wall median", "median", true },
  { "min", "wall min", "min" }, { "max", "wall max", "max" },
  { "user", "user mean", "mean" }, { "system", "sys mean", "mean" },
}

local function is_hyperfine(doc)
  local first = is_array(doc.results) and doc.results[1]
  return is_object(first) and type(first.command) == "string" and type(first.mean) == "number"
end

local function load_hyperfine(set, doc)
  local stats = require "wb.stats"
  local seen = {}
  for i, res in ipairs(doc.results) do
    if is_object(res) then
      local name = record_name(res, i, seen)
      for _, f in ipairs(HYPERFINE) do
        add(set, name, f[2], res[f[1]], f[4] and res.times or nil, "time", "s", f[3])
      end
      local mem = sample_list(res.memory_usage_byte)
      if mem then
        local kib = {}
        for j, b in ipairs(mem) do kib[j] = b / 1024 end
        add(set, name, "maxrss_kb mean", stats.mean(kib), kib, "memory", "KiB", "mean")
      end
    end
  end
end

local function load_records(set, list)
  local seen = {}
  for i, rec in ipairs(list) do
    if not is_object(rec) then
      add_leaves(set, "#" .. i, rec, nil, nil, true)
    elseif is_object(rec.metrics) then
      add_run(set, record_name(rec, i, seen), rec)
    else
      local name, key = record_name(rec, i, seen)
      local samples = is_object(rec.samples) and rec.samples or nil
      local skip = { samples = samples ~= nil }
      if key then skip[key] = true end
      add_leaves(set, name, rec, samples, skip, true)
    end
  end
end

local function load_generic(set, doc)
  if is_object(doc) and is_object(doc.metrics) then
    add_leaves(set, nil, doc.metrics, is_object(doc.samples) and doc.samples or nil)
  elseif is_object(doc) and is_array(doc.runs) then
    load_records(set, doc.runs)
  elseif is_object(doc) and is_array(doc.results) then
    load_records(set, doc.results)
  else
    add_leaves(set, nil, doc, nil, nil, true)
  end
end

-- A CPU time: what co-running work inflates only through shared caches, never by the wait.
-- "split": a user or a system time alone, whose split of the sum the kernel samples at its tick
-- (preemption moves it: the same python read 65 ms of system time quiet, 40 ms beside two hogs).
local function is_cpu_time(metric)
  local m = metric:lower()
  if m:find("^user") or m:find("^sys") then return "split" end
  return (m:find("cpu_seconds") or m:find("^cpu[ _]")) and true or false
end

-- Every time metric in seconds of a record one of whose wall metrics carries interference evidence
-- gets the load that record ran under (load: wb.interference.side; cpu_time), to be weighed
-- against.
local function attach_load(set)
  local sides = {}
  for _, m in pairs(set.metrics) do
    if m.evidence and m.record ~= nil and not sides[m.record] then
      sides[m.record] = interference.side(m.samples, m.evidence)
    end
  end
  if next(sides) == nil then return end
  for _, m in pairs(set.metrics) do
    if m.kind == "time" and m.unit == "s" and not m.evidence and sides[m.record] then
      m.load, m.cpu_time = sides[m.record], is_cpu_time(m.metric)
    end
  end
end

-- set = compare.from_document(doc, path) : the metrics of a decoded document; raises (exit 2)
-- on a wb schema this wb cannot read
function M.from_document(doc, path)
  local schema = is_object(doc) and doc.schema_name
  local set
  if WB_SCHEMAS[schema] then
    check_version(doc, path)
    set = new_set(path, schema)
    if schema == "wb.bench" then load_bench(set, doc) else load_manifest(set, doc) end
  elseif is_object(doc) and is_hyperfine(doc) then
    set = new_set(path, "hyperfine")
    load_hyperfine(set, doc)
  else
    set = new_set(path, "json")
    load_generic(set, doc)
  end
  attach_load(set)
  return set
end

-- set = compare.load(path) : reads a result file (or DIR/manifest.json for a run directory);
-- raises (exit 2) when it is missing, malformed or of an unsupported version
function M.load(path)
  local st = require("wb.fs").stat(path)
  local file = (st and st.type == "dir") and util.join(path, "manifest.json") or path
  local doc, err = json.read(file)
  if doc == nil then fail(err) end
  if type(doc) == "table" and doc.schema_name == "wb.manifest" and util.is_list(doc.runs) then -- an unfinished run's journal
    local campaign = require "wb.campaign"
    local ok, jerr = campaign.apply_journal(doc, util.join(util.dirname(file), campaign.JOURNAL))
    if not ok then fail(jerr) end
  end
  return M.from_document(doc, file)
end

---- comparison ------------------------------------------------------------------------------

-- "ran with a load average of 3.1 on 2 CPUs" when a manifest's load average (at its start or
-- finish) reached its CPU count (the work measured counts for one), else nil
local function busy_text(load)
  if type(load) ~= "table" or not math.type(load.cpus) or load.cpus < 1 then return nil end
  local worst
  for _, k in ipairs({ "start", "finish" }) do
    local v = load[k]
    if type(v) == "number" and (not worst or v > worst) then worst = v end
  end
  if not worst or worst < load.cpus + 1 then return nil end
  return string.format("ran with a load average of %.1f on %d CPU%s", worst, load.cpus, load.cpus == 1 and "" or "s")
end

local function or_null(v) return v == nil and json.null or v end

-- The change column: verdict.describe plus, for a tested row, the 95% CI of the ratio (inverted
-- along with it for "faster"/"smaller") and the Mann–Whitney p-value.
local function change_text(row)
  local s = verdict.describe(row):gsub("%s+$", "")
  if row.p and row.ratio then
    local lo, hi = row.ci_lo, row.ci_hi
    if lo and hi and row.ratio < 1 then lo, hi = 1 / hi, 1 / lo end
    local finite = lo and hi and lo == lo and hi == hi and math.abs(lo) < math.huge and math.abs(hi) < math.huge
    if finite then
      s = s .. string.format(" (95%% CI %.2f–%.2f×, p = %.2g)", lo, hi, row.p)
    else -- a side with zeros in its samples, or too few runs for the rank test's interval
      s = s .. string.format(" (p = %.2g)", row.p)
    end
  end
  return s
end

-- The mean CPU time (user + system) of each record of a set that has both.
local function mean_cpus(set)
  local out, user = {}, {}
  for _, m in pairs(set.metrics) do
    if m.record and m.metric == "user mean" then user[m.record] = m.value end
  end
  for _, m in pairs(set.metrics) do
    if m.record and m.metric == "sys mean" and user[m.record] then out[m.record] = user[m.record] + m.value end
  end
  return out
end

-- hyperfine exports carry no per-run CPU or run-queue times, so a wall change between two of
-- them (or between one and a wb run) cannot be told from a change of the machine's load: a
-- wall regression or improvement stands only when the mean CPU time moved the same way by more
-- than co-running work can inflate it (verdict.LOAD_INFLATION); else it is "confounded".
local function weigh_hyperfine(rows, counts, base_cpu, new_cpu)
  for _, r in ipairs(rows) do
    if r.kind == "time" and not r.load then r.evidence_note = "none: hyperfine export" end
    if r.kind == "time" and r.metric:match("^wall") and not r.load and
        (r.verdict == "regression" or r.verdict == "improvement") then
      local cb, cn = base_cpu[r.record or ""], new_cpu[r.record or ""]
      local cpu = cb and cn and cb > 0 and cn / cb
      local bound = 1 + verdict.LOAD_INFLATION
      local same = cpu and ((r.ratio > 1 and cpu > bound) or (r.ratio < 1 and cpu < 1 / bound))
      local cpu_text = cpu and string.format("mean CPU time (user + system) %s", verdict.describe({ kind = "time", ratio = cpu }))
          or "no CPU time on both sides"
      if same then
        r.reason = r.reason .. string.format(" (%s too, beyond the %.2f× that load can account for)", cpu_text, bound)
      else
        counts[r.verdict] = counts[r.verdict] - 1
        counts.confounded = counts.confounded + 1
        r.significant = nil
        r.reason = string.format("wall %s, but a hyperfine export carries no per-run CPU or run-queue times, so " ..
          "a change of the machine's load between the two cannot be told from a change of the code, and the %s " ..
          "does not bear it out: confounded; measure both with wb bench for a verdict", r.reason, cpu_text)
        r.verdict = "confounded"
      end
    end
  end
end

-- Sides run interleaved: a user or a system time alone (cpu_time "split") whose change the same
-- record's wall time of the same statistic does not show the same way is the kernel's
-- tick-sampled split moving, not the code's time (an A/A pair's interleaved re-run read user time
-- 1.10x faster, CI 1.03-1.19x, its wall 1.03x within the threshold): unchanged, said so.
local function weigh_split(rows, counts)
  local walls = {}
  for _, r in ipairs(rows) do
    local stat = r.kind == "time" and r.record ~= nil and tostring(r.metric):match("^wall.* (%a+)$")
    if stat then walls[tostring(r.record) .. " " .. stat] = r end
  end
  for _, r in ipairs(rows) do
    local wall = r.cpu_time == "split" and walls[tostring(r.record) .. " " .. tostring(r.stat)]
    if wall and (r.verdict == "regression" or r.verdict == "improvement") and wall.verdict ~= r.verdict then
      counts[r.verdict] = counts[r.verdict] - 1
      counts.unchanged = counts.unchanged + 1
      r.significant = nil
      r.reason = string.format("%s, but the wall time it is part of is %s (%s): the kernel's tick-sampled " ..
        "user/system split moved, not the code's time: unchanged", r.reason, wall.verdict,
        verdict.describe(wall))
      r.verdict = "unchanged"
    end
  end
end

-- A row's change text is made when it is read: a 400k-metric comparison need not hold 400k of them.
local ROW = { __index = function(r, k) if k == "change" then return change_text(r) end end }

-- result = compare.compare(base_set, new_set [, {threshold, alpha, allow_empty, consume, interleaved}]) :
-- {base, new,
-- threshold, rows, judged, summary}; rows sorted by metric name, each a verdict row (metric,
-- kind, stat, base, new, delta, ratio, tested, p, q, ci_lo, ci_hi, verdict, reason, note) with
-- record, name, unit and change added; all rows judged together (verdict.judge: the
-- Benjamini–Hochberg correction when several are tested). Raises (exit 2) when no metric is in
-- both sets, unless allow_empty. consume: the sets' metrics are dropped as their rows are made
-- (the sets are spent; a large comparison then holds one copy of its metrics). interleaved: the
-- two sides' runs alternated in one run (wb.confirm), so no load difference is weighed (and a user
-- or system time alone changes only with its wall time: weigh_split).
function M.compare(base, new, opts)
  opts = opts or {}
  local threshold = opts.threshold or verdict.DEFAULT_THRESHOLD
  local names, only_base, only_new = {}, 0, 0
  for name in pairs(base.metrics) do
    if new.metrics[name] then names[#names + 1] = name else only_base = only_base + 1 end
  end
  for name in pairs(new.metrics) do
    if not base.metrics[name] then only_new = only_new + 1 end
  end
  if #names == 0 and not opts.allow_empty then
    fail(string.format("no metric in common between %s and %s", base.path, new.path))
  end
  table.sort(names)
  local hyperfine = (base.format == "hyperfine" or new.format == "hyperfine") and { mean_cpus(base), mean_cpus(new) }
  local rows = {}
  for _, name in ipairs(names) do
    local b, n = base.metrics[name], new.metrics[name]
    local r = verdict.compare(b.metric, b.value, n.value, { threshold = threshold, alpha = opts.alpha,
      kind = b.kind, stat = b.stat, base_samples = b.samples, new_samples = n.samples, resolution = b.resolution,
      base_evidence = b.evidence, new_evidence = n.evidence, base_load = b.load, new_load = n.load,
      cpu_time = b.cpu_time, interleaved = opts.interleaved,
      resolution_text = b.resolution_text, resolution_of = b.resolution_of })
    r.name, r.record, r.unit = name, b.record, b.unit
    rows[#rows + 1] = r
    if opts.consume then base.metrics[name], new.metrics[name] = nil, nil end
  end
  if opts.consume then base.metrics, new.metrics = nil, nil end
  local judged = verdict.judge(rows, { threshold = threshold, alpha = opts.alpha, interleaved = opts.interleaved })
  if hyperfine then weigh_hyperfine(rows, judged.counts, table.unpack(hyperfine)) end
  if opts.interleaved then weigh_split(rows, judged.counts) end
  for _, r in ipairs(rows) do setmetatable(r, ROW) end
  local c = judged.counts
  local text = verdict.summary_text(judged)
  local notes = {}
  for _, side in ipairs({ { "base", base }, { "new", new } }) do
    local busy = busy_text(side[2].load_average)
    if busy then notes[#notes + 1] = string.format("the %s run %s", side[1], busy) end
  end
  if only_base + only_new > 0 then
    text = text .. string.format(" (%d metric%s not in both files)", only_base + only_new,
      only_base + only_new == 1 and "" or "s")
  end
  if #notes > 0 then
    text = text .. "; note: " .. table.concat(notes, ", ") .. ": other load may account for differences between them"
  end
  return {
    base = base, new = new, threshold = threshold, rows = rows, judged = judged,
    summary = { compared = #rows, tested = judged.tested, tests = judged.tests, correction = judged.correction,
      alpha = judged.alpha, regressions = c.regression, improvements = c.improvement,
      unchanged = c.unchanged, not_tested = c["not tested"], changed = c.changed,
      inconclusive = c.inconclusive, interference = c.interference, confounded = c.confounded,
      only_base = only_base, only_new = only_new, notes = notes, text = text },
  }
end

---- output ----------------------------------------------------------------------------------

local HEADER = { "metric", "base", "new", "verdict", "why", "interference" }
local ALIGN = { "l", "r", "r", "l", "l", "l" }

-- The interference column: the load each side ran under, as far as wb knows it.
function M.interference_text(r)
  if r.load then return (r.raw and "wall net of run-queue delay; " or "") .. r.load.text end
  return r.evidence_note or (r.kind == "time" and "no evidence" or "")
end

-- The table's header and alignment: with a confirmation (wb.confirm), its column last.
local function header_of(result)
  if not result.confirmed then return HEADER, ALIGN end
  local h, a = { table.unpack(HEADER) }, { table.unpack(ALIGN) }
  h[#h + 1], a[#a + 1] = "confirmed by an interleaved re-run", "l"
  return h, a
end

local function cells_of(r, result)
  local cells = { r.name, M.format_value(r.base, r.unit), M.format_value(r.new, r.unit), r.verdict, r.reason,
    M.interference_text(r) }
  if result.confirmed then cells[#cells + 1] = require("wb.confirm").text(r) end
  return cells
end

-- text = compare.markdown(result [, write]) : the table (each row with the reason for its verdict)
-- and the summary line; with write, the text is passed to write(piece) line by line instead
function M.markdown(result, write)
  local header, align = header_of(result)
  local cells = { header }
  for _, r in ipairs(result.rows) do cells[#cells + 1] = cells_of(r, result) end
  local out = {}
  local emit = write or function(piece) out[#out + 1] = piece end
  require("wb.page").md_table(cells, align, emit)
  emit("\n" .. result.summary.text .. "\n")
  return not write and table.concat(out) or nil
end

-- f = compare.html(result) : the same table and summary as a page kit fragment (lua/wb/page.lua),
-- each row's verdict its class, the change in bold for regressions and improvements
function M.html(result)
  local page = require "wb.page"
  local header, align = header_of(result)
  local rows, classes = { header }, {}
  for i, r in ipairs(result.rows) do
    local cells = cells_of(r, result)
    if r.verdict == "regression" or r.verdict == "improvement" then cells[4] = page.strong(cells[4]) end
    rows[i + 1], classes[i + 1] = cells, r.verdict:gsub(" ", "-")
  end
  return page.join { page.table(rows, { align = align, class = "compare", row_class = classes }),
    page.p(result.summary.text) }
end

-- o = compare.row_object(r) : a row as the JSON object of wb.compare documents and manifests
function M.row_object(r)
  local o = json.object()
  o.metric = r.name
  o.record = or_null(r.record)
  o.quantity = r.metric
  o.kind = r.kind
  o.stat = r.stat
  o.unit = or_null(r.unit)
  o.base = r.base
  o.new = r.new
  o.delta = or_null(r.delta)
  o.ratio = or_null(r.ratio)
  o.estimate = or_null(r.estimate)
  o.tested = r.tested
  o.n_base = or_null(r.n_base)
  o.n_new = or_null(r.n_new)
  o.p_value = or_null(r.p)
  o.q_value = or_null(r.q)
  o.ci_lo = or_null(r.ci_lo)
  o.ci_hi = or_null(r.ci_hi)
  o.verdict = r.verdict
  o.reason = r.reason
  o.note = or_null(r.note)
  o.change = r.change
  o.interference = M.interference_object(r)
  if r.confirmation then o.confirmation = r.confirmation end -- with --confirm (wb.confirm)
  return o
end

local function side_object(side)
  local o = json.object()
  o.runq_mean_seconds, o.wall_mean_seconds, o.runq_share = side.runq, side.wall, side.share
  o.parallelism, o.others_cpu_mean, o.runq_scope = side.k, or_null(side.others), side.scope
  return o
end

-- o = compare.interference_object(r) : a row's interference evidence as JSON (null when none):
-- {base, new (runq_mean_seconds, wall_mean_seconds, runq_share, parallelism, others_cpu_mean,
-- runq_scope), heavier ("base"|"new"|null), net (the row was tested net of run-queue delay),
-- raw_ratio, raw_p_value, text}
function M.interference_object(r)
  if not r.load then return r.evidence_note and { text = r.evidence_note } or json.null end
  local o = json.object()
  o.base, o.new = side_object(r.load.base), side_object(r.load.new)
  o.heavier = or_null(r.load.heavier)
  o.net = r.raw ~= nil
  o.raw_ratio = r.raw and or_null(r.raw.ratio) or json.null
  o.raw_p_value = r.raw and r.raw.p or json.null
  o.text = M.interference_text(r)
  return o
end

local SUMMARY_KEYS = { "compared", "tested", "tests", "correction", "alpha", "regressions", "improvements",
  "unchanged", "not_tested", "changed", "inconclusive", "interference", "confounded", "only_base", "only_new", "text" }

-- o = compare.summary_object(result) : the summary as a JSON object
function M.summary_object(result)
  local s = json.object()
  for _, k in ipairs(SUMMARY_KEYS) do s[k] = or_null(result.summary[k]) end
  s.notes = json.array(result.summary.notes or {})
  if result.confirmed then -- with --confirm: regressions and improvements are the confirmed ones
    s.confirmed, s.unconfirmed, s.unconfirmable = true, result.summary.unconfirmed, result.summary.unconfirmable or 0
  end
  return s
end

-- compare.write_document(result, write) : the document's pretty JSON (exactly
-- json.encode(compare.document(result), {pretty = true})), passed to write(piece) a row at a
-- time, so that a large comparison is never one string
function M.write_document(result, write)
  local doc = M.document(result, true)
  local text = json.encode(doc, { pretty = true })
  local open = '\n  "rows": ['
  local at = text:find(open .. "],\n", 1, true)
  write(text:sub(1, at + #open - 1))
  for i, r in ipairs(result.rows) do
    local row = json.encode(M.row_object(r), { pretty = true }):gsub("\n", "\n    ")
    write((i == 1 and "\n    " or ",\n    ") .. row)
  end
  write(#result.rows > 0 and "\n  ]" or "]")
  write(text:sub(at + #open + 1))
end

-- doc = compare.document(result [, without_rows]) : the wb.compare document printed by --json
-- (rows = [] when without_rows)
function M.document(result, without_rows)
  local doc = json.object()
  doc.schema_name = M.SCHEMA_NAME
  doc.schema_version = M.SCHEMA_VERSION
  for _, side in ipairs({ "base", "new" }) do
    local s = json.object()
    s.path = result[side].path
    s.format = result[side].format
    doc[side] = s
  end
  doc.threshold = result.threshold
  doc.rows = json.array()
  if not without_rows then
    for _, r in ipairs(result.rows) do doc.rows[#doc.rows + 1] = M.row_object(r) end
  end
  doc.summary = M.summary_object(result)
  return doc
end

---- command line ----------------------------------------------------------------------------

local function usage_error(msg) fail(msg .. "\n" .. M.USAGE) end

local function parse_threshold(s)
  if s == nil then usage_error("--threshold needs a value") end
  local pct = s:match("^(.-)%%$")
  local v = tonumber(pct or s)
  if v and pct then v = v / 100 end
  if not v or v < 0 or v >= 1 then
    usage_error("--threshold takes a fraction in [0, 1) such as 0.02 or 2%, not '" .. s .. "'")
  end
  return v
end

-- status = compare.main(args) : 0; 1 with --fail-on-regression when a metric regressed;
-- raises exit 2 on bad usage or input
-- The wb.bench summary a --confirm re-runs the commands of: path, or DIR/summary.json of a run
-- directory of wb bench; anything else is a usage error.
local function confirm_source(path)
  local st = require("wb.fs").stat(path)
  local file = (st and st.type == "dir") and util.join(path, "summary.json") or path
  local doc, err = json.read(file)
  if doc == nil then fail(err) end
  if not (is_object(doc) and doc.schema_name == "wb.bench") then
    fail("--confirm re-runs the commands of wb bench summaries (summary.json, or a wb bench run directory); " ..
      file .. " is not one (hyperfine exports and manifests do not record where a command ran)")
  end
  return doc
end

function M.main(args)
  local opts, files = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then
      io.write(M.USAGE, "\n")
      return 0
    elseif a == "--json" then
      opts.json = true
    elseif a == "--fail-on-regression" then
      opts.fail_on_regression = true
    elseif a == "--confirm" then
      opts.confirm = true
    elseif a == "--threshold" then
      i = i + 1
      opts.threshold = parse_threshold(args[i])
    elseif a:match("^%-%-threshold=") then
      opts.threshold = parse_threshold(a:match("=(.*)$"))
    elseif a:match("^%-.") then
      usage_error("unknown option '" .. a .. "'")
    else
      files[#files + 1] = a
    end
    i = i + 1
  end
  if #files ~= 2 then
    usage_error(string.format("expected two files (BASE and NEW), got %d", #files))
  end
  local docs = opts.confirm and { confirm_source(files[1]), confirm_source(files[2]) }
  opts.consume = true
  local result = M.compare(M.load(files[1]), M.load(files[2]), opts)
  if docs then require("wb.confirm").run(result, docs[1], docs[2]) end
  if opts.json then
    M.write_document(result, function(piece) io.write(piece) end)
    io.write("\n")
  else
    M.markdown(result, function(piece) io.write(piece) end)
  end
  if opts.fail_on_regression and result.summary.regressions > 0 then return 1 end
  return 0
end

return M
