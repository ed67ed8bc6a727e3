-- The regression gate over the results history: detect, confirm, alert (exit 0 pass, 1 regression).
--
--   wb gate                                            the newest record in runs/ against its history
--   wb gate 'build=[make, -s]' repo=.                  confirm alerts by building both commits again
--   wb gate references=perf-references.yaml            and ReFrame-style references per machine class
--
-- The newest complete record (record=DIR to name one) is checked, series by series, against the
-- current level of its history (wb.gate.detect: the comparison engine, load-aware, all series
-- together) and against the references. Before a regression fails the gate it is confirmed: the
-- baseline commit and the head are checked out, built with `build` and their benchmark (`bench`,
-- else the head record's own command) run interleaved in one campaign; only a regression the
-- re-run bears out counts ("confirmed"), one it does not is "dismissed". Where that cannot be
-- done (no build command, a dirty head, a commit that is gone), the alert is "unconfirmed" with
-- its reason and fails the gate unless fail_unconfirmed=false. A confirmed regression is then
-- profiled, base and head profile_runs times each, interleaved: the functions whose time changed
-- beyond run-to-run noise (wb.flame.changed_frames) are named, and the differential flame graphs
-- colour only them. Writes gate.json (every alert and its fate: what `wb history alerts` reads)
-- and gate.md, a comment for CI or a pull request.
local wb = require "wb"
local opt, null = wb.util.opt, wb.null

local function list_of(v)
  if type(v) == "table" then return v end
  return v ~= nil and v ~= null and { v } or nil
end

local function short(sha) return sha and sha:sub(1, 10) or "?" end

-- The allocation runs a side of a re-run that confirms an alert on the bytes allocated (a count
-- that is exact: a few runs show its spread, which is none for a deterministic program).
local ALLOC_RUNS = 5

-- The argv of the head record's command named name (a bench record), or nil and why. Only a
-- record the acting user owns, in a directory no one else can write (wb.fs.confine), is trusted
-- to name a command: a record another user planted in a shared root is not run.
local function record_command(head_dir, name)
  local ok, err = wb.fs.confine(head_dir:match("%.json$") and wb.util.dirname(head_dir) or head_dir)
  if not ok then return nil, "the record's command is not run: " .. err .. "; give bench=[...]" end
  local st = wb.fs.lstat(head_dir:match("%.json$") and head_dir or (head_dir .. "/manifest.json"))
  if not st or st.type ~= "file" then return nil, "the record is not a regular file; give bench=[...]" end
  if head_dir:match("%.json$") then -- a `wb regress` result
    local rec = wb.history.record(head_dir)
    return rec and #rec.bench_command > 0 and rec.bench_command or nil
  end
  local m = wb.campaign.read_manifest(head_dir .. "/manifest.json")
  for _, r in ipairs(m and m.runs or {}) do
    if r.name == name and type(r.command_arguments) == "table" then return r.command_arguments end
  end
end

-- Folded off-CPU text without its waits for a CPU (stacks ending in the run-queue frame): the time
-- a task was runnable but not running is the machine's, not the code's, and beside other load it
-- differs from run to run by more than a planted change (a 9 ms longer sleep read +15 ms with
-- its wake-up delays beside two busy loops).
local function blocked_only(folded)
  local mark = ";" .. require("wb.capture_fold").RUN_QUEUE .. " "
  local keep = {}
  for line in folded:gmatch("[^\n]+") do
    if not line:find(mark, 1, true) then keep[#keep + 1] = line end
  end
  return table.concat(keep, "\n")
end

-- The profiles of base and head, runs times each, interleaved (base, head, base, ...) in their
-- worktrees: {oncpu = {base = {folded...}, new = {...}}, offcpu = {...} (blocked time only), freq},
-- or {skipped = why}.
local function profile_pair(argv, base_dir, new_dir, runs, freq)
  local out = { oncpu = { base = {}, new = {} }, offcpu = { base = {}, new = {} }, freq = freq }
  for _ = 1, runs do
    for _, side in ipairs({ { "base", base_dir }, { "new", new_dir } }) do
      local res = wb.capture { argv = argv, cwd = side[2], freq = freq, python = false, memory = false,
        stdout = "null", name = side[1] }
      for _, kind in ipairs({ "oncpu", "offcpu" }) do
        local prof = res[kind]
        if not prof or not prof.folded_text then
          return { skipped = kind .. ": " .. tostring(prof and prof.skipped or "no profile") }
        end
        table.insert(out[kind][side[1]], kind == "offcpu" and blocked_only(prof.folded_text) or prof.folded_text)
      end
    end
  end
  return out
end

-- The frames a confirmed regression changed beyond run-to-run noise, and the differential flame
-- graphs (pooled runs, coloured only there) written into the gate's run directory.
local function explain(c, rr)
  local p = rr.profiles
  if not p or p.skipped then return { skipped = p and p.skipped or "profile_runs=0" } end
  local out = { runs = #p.oncpu.base, frames = wb.json.array(), graphs = {} }
  -- the spine over on- and off-CPU time together: main holds nearly all of it, a function that
  -- only waits (all of the off-CPU time, none of the on-CPU) does not
  local runs = {}
  for _, side in ipairs({ "base", "new" }) do
    for i = 1, #p.oncpu[side] do
      runs[#runs + 1] = { { p.oncpu[side][i], 1 / p.freq }, { p.offcpu[side][i], 1e-9 } }
    end
  end
  local spine = wb.flame.spine(runs)
  -- the culprit: where the change concentrates in the tree of on- and off-CPU time together
  local base_runs, new_runs = {}, {}
  for i = 1, #p.oncpu.base do
    base_runs[i] = { { p.oncpu.base[i], 1 / p.freq }, { p.offcpu.base[i], 1e-9 } }
    new_runs[i] = { { p.oncpu.new[i], 1 / p.freq }, { p.offcpu.new[i], 1e-9 } }
  end
  local path, change, before, after = wb.flame.culprit(base_runs, new_runs)
  if path then
    out.culprit = { path = path, name = path:match("([^;]*)$"), delta = change, base = before, new = after }
  end
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local scale = kind == "oncpu" and 1 / p.freq or 1e-9
    -- coloured: the frames whose inclusive time changed; named: those of them that are not in every
    -- stack (the spine, main, explains nothing apart), and the functions whose own time changed
    local only, named = {}, {}
    local function name_row(row, what)
      if not named[row.name] or math.abs(row.delta) > math.abs(named[row.name].delta) then
        named[row.name] = { name = row.name, kind = kind, time = what, base = row.base, new = row.new,
          delta = row.delta, q = row.q, depth = row.depth }
      end
    end
    for _, row in ipairs(wb.flame.changed_frames(p[kind].base, p[kind].new, { scale = scale, min = 0.001, spine = spine })) do
      if row.significant then
        only[row.name] = true
        if not row.everywhere then name_row(row, "inclusive") end
      end
    end
    for _, row in ipairs(wb.flame.changed_frames(p[kind].base, p[kind].new, { scale = scale, min = 0.001, self = true })) do
      if row.significant then name_row(row, "self") end
    end
    for _, f in pairs(named) do out.frames[#out.frames + 1] = f end
    local rel = string.format("profiles/%s..%s.%s.diff.svg", short(rr.base), short(rr.head), kind)
    c:write(rel, wb.flame.diff_svg(table.concat(p[kind].base, "\n"), table.concat(p[kind].new, "\n"),
      { title = string.format("%s, %s → %s (%d runs each)", kind == "oncpu" and "On-CPU" or "Off-CPU", short(rr.base),
        short(rr.head), out.runs), unit = kind == "oncpu" and "samples" or "ns", only = only }))
    out.graphs[kind] = rel
  end
  -- the functions first (inclusive), then where in them (own time); of a chain of frames carrying
  -- the same change (within 10%: a function, the libc call and the kernel frames under it), the
  -- shallowest (by its mean depth) first, the program's own function; frames with less than a tenth of the
  -- largest change last out
  local biggest, kept = 0, {}
  for _, f in ipairs(out.frames) do biggest = math.max(biggest, math.abs(f.delta)) end
  for _, f in ipairs(out.frames) do
    if math.abs(f.delta) >= 0.1 * biggest then kept[#kept + 1] = f end
  end
  -- (a strict key: the change in buckets of 10% of the largest, so that the order is consistent)
  for _, f in ipairs(kept) do f.bucket = math.floor(math.abs(f.delta) / (0.1 * biggest)) end
  table.sort(kept, function(a, b)
    if a.time ~= b.time then return a.time == "inclusive" end
    if a.bucket ~= b.bucket then return a.bucket > b.bucket end
    if (a.depth or 0) ~= (b.depth or 0) then return (a.depth or 0) < (b.depth or 0) end
    return a.name < b.name
  end)
  for _, f in ipairs(kept) do f.bucket = nil end
  -- the culprit, when the per-function test bears it out, first
  if out.culprit then
    for i, f in ipairs(kept) do
      if f.name == out.culprit.name and f.time == "inclusive" then
        table.remove(kept, i)
        table.insert(kept, 1, f)
        break
      end
    end
  end
  out.frames = wb.json.array()
  for i = 1, math.min(#kept, 10) do out.frames[i] = kept[i] end
  return out
end

return wb.recipe {
  defaults = {
    roots = null, db = null, record = null, recipe = null, name = null, metric = null, machine = null,
    references = null, repo = ".", build = null, bench = null, confirm = true, fail_unconfirmed = true,
    runs = 20, warmup = 1, timeout = null, build_timeout = null, threshold = 0.05, seed = 1,
    profile_runs = 7, freq = 999,
  },
  types = {
    roots = "string|list|null", db = "string|null", record = "string|null", recipe = "string|null",
    name = "string|null", metric = "string|null", machine = "string|null", references = "string|null",
    repo = "string", build = "list|null", bench = "list|null", confirm = "boolean", fail_unconfirmed = "boolean",
    runs = "integer>=2", warmup = "integer>=0", timeout = "number>0|null", build_timeout = "number>0|null",
    threshold = "number>=0", seed = "integer", profile_runs = "integer>=0", freq = "integer>=1",
  },
  run = function(ctx)
    local cfg = ctx.cfg
    local args = {}
    for _, r in ipairs(list_of(opt(cfg.roots)) or {}) do args[#args + 1] = "--root=" .. tostring(r) end
    if opt(cfg.db) then args[#args + 1] = "--db=" .. cfg.db end
    local o = wb.history.parse_args(args, "history", "gate")
    o.filter = { recipe = opt(cfg.recipe), name = opt(cfg.name), metric = opt(cfg.metric), machine = opt(cfg.machine),
      roots = o.filter.roots }
    local refs = opt(cfg.references) and wb.gate.read_references(cfg.references)
    local record, rerr
    if opt(cfg.record) then
      record, rerr = wb.fs.realpath(tostring(cfg.record))
      if not record then wb.usage("gate: record " .. rerr, 0) end
    end
    local index = wb.history.updated(o)
    local head = wb.gate.head(index, o.filter, record)
    if not head then
      index:close()
      wb.usage("gate: " .. (record and (cfg.record .. " is not a record of the history under " .. table.concat(o.roots, ", "))
        or ("no complete record under " .. table.concat(o.roots, ", "))), 0)
    end
    local opts = { threshold = cfg.threshold, seed = cfg.seed }
    local items = wb.gate.detect(wb.trend.series(index, o.filter, opts), head, opts)
    index:close()
    if #items == 0 then
      wb.usage("gate: nothing to check: no series " .. (opt(cfg.metric) and ("of metric '" .. cfg.metric .. "' ") or "")
        .. "holds the head record " .. head.dir .. (head.status ~= "complete" and (" (" .. tostring(head.status) .. ")") or ""), 0)
    end
    wb.gate.check_references(items, refs)
    local c = wb.campaign.open(ctx)

    -- confirm each alert: one interleaved re-run per pair of commits
    local repo = wb.fs.realpath(tostring(cfg.repo))
    local reruns = {}
    -- an alert on the bytes allocated: the re-runs count them too (every re-run of the gate alike)
    local counts_allocations = false
    for _, item in ipairs(items) do
      counts_allocations = counts_allocations or (item.alert and item.series.metric == "alloc_bytes mean")
    end
    for _, item in ipairs(items) do
      if item.alert then
        local conf = { fate = "unconfirmed" }
        item.confirmation = conf
        local base_sha, head_sha = item.baseline and item.baseline.commit, head.git_commit
        local bench, untrusted = opt(cfg.bench), nil
        if not bench then bench, untrusted = record_command(head.dir, item.series.name) end
        if not cfg.confirm then
          conf.reason = "confirm=false"
        elseif not item.baseline then
          conf.reason = "the series has no earlier record"
        elseif not base_sha or not head_sha then
          conf.reason = "a record without a commit (not run inside a git repository)"
        elseif head.dirty == 1 then
          conf.reason = "the head was measured with uncommitted changes: its code is in no commit"
        elseif item.baseline.dirty then
          conf.reason = "the baseline was measured with uncommitted changes: its code is in no commit"
        elseif base_sha == head_sha then
          conf.reason = "the baseline and the head are the same commit: nothing to build apart"
        elseif not opt(cfg.build) then
          conf.reason = "no build command (build=[...], or build=[] when nothing needs building)"
        elseif not bench then
          conf.reason = untrusted or "no benchmark command (bench=[...]): the record names none"
        elseif not wb.gate.BENCH_SAMPLES[item.series.metric] then
          conf.reason = "an interleaved re-run measures wall, CPU time, peak RSS and bytes allocated, not "
            .. item.series.metric
        elseif not repo then
          conf.reason = "repo " .. tostring(cfg.repo) .. " is not a directory"
        else
          local key = base_sha .. " " .. head_sha .. " " .. table.concat(bench, "\0")
          local rr = reruns[key]
          if not rr then
            local ok = pcall(wb.regress.git, repo, "cat-file", "-e", base_sha .. "^{commit}")
            local ok2 = ok and pcall(wb.regress.git, repo, "cat-file", "-e", head_sha .. "^{commit}")
            if not ok2 then
              rr = { conf = { reason = "a commit is not in " .. repo } }
            else
              io.stderr:write(string.format("gate: confirming %s..%s: both built and run interleaved\n", short(base_sha), short(head_sha)))
              local h = wb.regress.hunt { repo = repo, build = cfg.build, bench = bench, runs = cfg.runs,
                warmup = cfg.warmup, seed = cfg.seed, timeout = opt(cfg.timeout), build_timeout = opt(cfg.build_timeout),
                threshold = cfg.threshold, alpha = wb.verdict.ALPHA, alloc_runs = counts_allocations and ALLOC_RUNS or nil }
              local profiles
              if cfg.profile_runs > 0 then
                h.after = function(wt_base, wt_new)
                  profiles = profile_pair(bench, wt_base.path, wt_new.path, cfg.profile_runs, cfg.freq)
                end
              end
              local r, b, n = wb.regress.confirm_commits(c, h, { sha = base_sha, short = short(base_sha) },
                { sha = head_sha, short = short(head_sha) })
              rr = { conf = r, b = b, n = n, profiles = profiles, base = base_sha, head = head_sha }
            end
            reruns[key] = rr
          end
          if not rr.b then
            conf.reason = rr.conf.reason
          elseif not wb.gate.bench_samples(rr.b, item.series.metric) or not wb.gate.bench_samples(rr.n, item.series.metric) then
            conf.reason = "the interleaved re-run did not measure " .. item.series.metric
              .. ((rr.n.alloc and rr.n.alloc.skipped) and (": " .. rr.n.alloc.skipped) or "")
          elseif item.reference_alert and not item.row_alert then
            -- above its reference, not a change against its history: the re-run head against the bound
            local xs = wb.gate.bench_samples(rr.n, item.series.metric)
            local m = 0
            for _, x in ipairs(xs) do m = m + x / #xs end
            local ref = item.reference
            local over = ref.exceeded == "above" and m > ref.high or ref.exceeded == "below" and m < ref.low
            conf.fate = over and "confirmed" or "dismissed"
            conf.reason = string.format("the re-run head's mean %s against the reference's bound %s",
              wb.compare.format_value(m, item.series.unit),
              wb.compare.format_value(ref.exceeded == "above" and ref.high or ref.low, item.series.unit))
          else
            local row = wb.gate.confirm_metric(item.series.metric, rr.b, rr.n, opts)
            conf.verdict, conf.ratio, conf.p = row.verdict, row.ratio, row.p
            conf.fate = row.verdict == "regression" and "confirmed" or "dismissed" -- (a rate's: lower)
            conf.reason = (row.reason or wb.verdict.describe(row)):gsub("%s+$", "")
            if conf.fate == "confirmed" and item.series.metric == "alloc_bytes mean" then
              conf.why = { skipped = "the profiles the gate takes are of time; where the bytes are allocated, "
                .. "an allocation profile of each commit shows (wb profile_app_full tool.alloc=true)" }
            elseif conf.fate == "confirmed" then
              rr.why = rr.why or explain(c, rr)
              conf.why = rr.why
            end
          end
        end
      end
    end

    -- the document
    local doc = wb.json.object()
    doc.schema_name, doc.schema_version = wb.gate.SCHEMA_NAME, wb.gate.SCHEMA_VERSION
    doc.head = { dir = head.dir, commit = head.git_commit, recipe = head.recipe, machine = head.machine_class,
      created_at = head.created_at }
    doc.checks, doc.alerts = wb.json.array(), wb.json.array()
    local confirmed, unconfirmed = 0, 0
    for _, item in ipairs(items) do
      local s, r = item.series, item.row
      local unit = s.unit
      local ck = { name = s.name, metric = s.metric, machine = s.machine, recipe = s.recipe,
        verdict = r and r.verdict or "first record", ratio = r and r.ratio,
        ci = r and r.ci_lo and r.ci_hi and r.ci_lo == r.ci_lo and r.ci_hi == r.ci_hi
          and string.format("95%% CI %.3f–%.3f×", r.ci_lo, r.ci_hi) or nil,
        baseline = item.baseline and string.format("%s (%d point%s)", wb.compare.format_value(r.base, unit),
          item.baseline.last - item.baseline.first + 1, item.baseline.last == item.baseline.first and "" or "s") or nil,
        head_value = r and wb.compare.format_value(r.new, unit) or nil, reference = item.reference }
      ck.text = item.alert and wb.gate.alert_text(item) or (r and r.verdict or "first record of its series")
      doc.checks[#doc.checks + 1] = ck
      if item.alert then
        local conf = item.confirmation
        doc.alerts[#doc.alerts + 1] = { name = s.name, metric = s.metric, machine = s.machine, recipe = s.recipe,
          detected = r and r.verdict or "reference exceeded", ratio = r and r.ratio, p = r and (r.q or r.p),
          baseline_commit = item.baseline and item.baseline.commit, head_commit = head.git_commit, head_dir = head.dir,
          baseline_first_commit = item.baseline and s.points[item.baseline.first].commit,
          fate = conf.fate, reason = conf.reason, confirmed_ratio = conf.ratio, confirmed_p = conf.p, text = ck.text,
          why = conf.why }
        if conf.fate == "confirmed" then confirmed = confirmed + 1 end
        if conf.fate == "unconfirmed" then unconfirmed = unconfirmed + 1 end
      end
    end
    doc.failed = confirmed > 0 or (unconfirmed > 0 and cfg.fail_unconfirmed)
    doc.reason = confirmed > 0 and string.format("%d regression%s confirmed by an interleaved re-run", confirmed, confirmed == 1 and "" or "s")
      or (doc.failed and string.format("%d regression%s that could not be confirmed (fail_unconfirmed=false to let them pass)",
        unconfirmed, unconfirmed == 1 and "" or "s"))
      or (#doc.alerts > 0 and "every alert was dismissed by its interleaved re-run" or "no series changed beyond its noise")
    local md = wb.gate.markdown(doc)
    c:write_json("gate.json", doc)
    c:write("gate.md", md)
    c:finish()
    io.write(md, "\ngate: ", c.dir, "/gate.md\n")
    return doc.failed and 1 or 0
  end,
}
