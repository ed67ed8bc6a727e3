-- The regression hunt's engine (recipes/regress.lua is its policy; docs/regress.md): the commits
-- of a range, each built and benchmarked in a temporary detached worktree with one stored result
-- per commit and machine (wb.regress.result v1, reused across runs), step detection over the
-- per-commit means judged by wb.verdict, and the wb.regress v1 document as Markdown, SVG and HTML.
--
-- A hunt h (regress.hunt) is a table: repo, machine, dir (the machine's results directory), build and bench
-- (argv lists of strings; build {} for none), runs, warmup, seed, timeout, build_timeout (nil for
-- none), ci_level, resamples (the per-commit bootstrap CI of the mean), threshold, alpha, min_size
-- (the step rule), first_parent, skip_existing, force.
local wb = require "wb"
local svg = require "wb.svg"
local page = require "wb.page"
local html = require "wb.html"
local interference = require "wb.interference"

local json, util = wb.json, wb.util
local null = wb.null
local RESULT_SCHEMA = "wb.regress.result"

local M = {}

local function usage(msg) wb.usage("regress: " .. msg, 0) end
local function log(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

-- h = regress.hunt(o) : the hunt o with its build and bench words as strings
function M.hunt(o)
  local h = {}
  for k, v in pairs(o) do h[k] = v end
  for _, k in ipairs({ "build", "bench" }) do
    h[k] = {}
    for i, a in ipairs(o[k]) do h[k][i] = tostring(a) end
  end
  return h
end

-- out = regress.git(repo, args...) : git's stdout; a failing git command fails the run with its message
function M.git(repo, ...)
  local argv = { "git", "-C", repo, ... }
  local res = wb.check(wb.proc.run { argv = argv, stdout = "capture", stderr = "capture", timeout = 300 })
  if not res.ok then
    wb.fail("regress: " .. util.shell_join(argv) .. ": " .. (res.stderr:gsub("%s+$", "")), 0)
  end
  return res.stdout
end
local git = M.git

-- commits = regress.commits(repo, range, first_parent) : {sha, short, date, subject} in commit
-- order (rev-list --reverse of a range string, or the listed commits in their order); a range
-- that selects nothing or names no commit is a usage error
function M.commits(repo, range, first_parent)
  local args = { "rev-list", "--format=%H%x1f%cI%x1f%s" }
  if type(range) == "table" then
    args[#args + 1] = "--no-walk=unsorted"
    for _, rev in ipairs(range) do
      local res = wb.check(wb.proc.run { argv = { "git", "-C", repo, "rev-parse", "--verify", "--quiet",
        tostring(rev) .. "^{commit}" }, stdout = "capture", stderr = "null" })
      if not res.ok then usage("range: '" .. tostring(rev) .. "' is not a commit of " .. repo) end
      args[#args + 1] = res.stdout:match("%x+")
    end
  else
    args[#args + 1] = "--reverse"
    if first_parent then args[#args + 1] = "--first-parent" end
    args[#args + 1] = range
    local res = wb.check(wb.proc.run { argv = { "git", "-C", repo, "rev-list", "--quiet", range },
      stdout = "null", stderr = "null" })
    if not res.ok then
      local count = wb.check(wb.proc.run { argv = { "git", "-C", repo, "rev-list", "--count", "HEAD" },
        stdout = "capture", stderr = "null" }).stdout:match("%d+")
      usage("range '" .. range .. "' is not a revision range of " .. repo ..
        (count and (" (it has " .. count .. " commits; range=HEAD measures them all)") or ""))
    end
  end
  local commits = {}
  for line in git(repo, table.unpack(args)):gmatch("[^\n]+") do
    local sha, date, subject = line:match("^(%x+)\31([^\31]*)\31(.*)$")
    if sha then commits[#commits + 1] = { sha = sha, short = sha:sub(1, 10), date = date, subject = subject } end
  end
  if #commits == 0 then usage("range " .. (type(range) == "table" and "list" or range) .. " selects no commits") end
  return commits
end

-- A temporary directory holding a detached worktree; closing it removes both (the worktree
-- need not exist yet). The removal uses os.execute, not wb.proc: wb.proc refuses to start
-- processes while an interrupt is pending, and this cleanup must also run then.
local Worktree = {}
Worktree.__index = Worktree
Worktree.__close = function(self)
  os.execute(util.shell_join { "git", "-C", self.repo, "worktree", "remove", "--force", self.path } .. " >/dev/null 2>&1")
  os.execute(util.shell_join { "git", "-C", self.repo, "worktree", "prune" } .. " >/dev/null 2>&1")
  wb.fs.remove_tree(self.dir)
end

local function same(a, b) return json.encode(a) == json.encode(b) end

-- The stored result of a commit if it can be reused for these commands, else nil.
local function reusable(path, h)
  if not wb.fs.exists(path) then return nil end
  local r = json.read(path)
  if type(r) ~= "table" or r.schema_name ~= RESULT_SCHEMA then
    log("regress: %s is not a %s file; measuring again", path, RESULT_SCHEMA)
    return nil
  end
  if not same(r.build_command, h.build) or not same(r.bench_command, h.bench) then
    return nil
  end
  return r
end

local function tail(path, lines)
  local all = {}
  for l in ((wb.fs.read(path) or ""):gsub("\n$", "") .. "\n"):gmatch("(.-)\n") do all[#all + 1] = l end
  return table.concat(all, "\n", math.max(1, #all - lines + 1))
end

-- A commit checked out in a fresh detached worktree (closing it removes the worktree).
local function checkout(h, commit)
  local wt = setmetatable({ repo = h.repo, dir = wb.check(wb.fs.tmpdir("wb-regress")) }, Worktree)
  wt.path = wt.dir .. "/" .. commit.short
  git(h.repo, "worktree", "add", "--detach", wt.path, commit.sha)
  return wt
end

-- ok = build(c, h, wt, commit, r [, log_name]) : runs h.build in worktree wt (its log in the run
-- directory's logs/), recording build_seconds, build_exit_code and, on failure, status
-- "build_failed" and the log's tail in r
local function build(c, h, wt, commit, r, log_name)
  if #h.build == 0 then return true end
  local logfile = c.dir .. "/logs/" .. (log_name or "build-") .. commit.short .. ".log"
  local res, err = wb.proc.run { argv = h.build, cwd = wt.path, stdout = { file = logfile },
    stderr = "stdout", timeout = h.build_timeout }
  if not res then wb.fail("regress: build of " .. commit.short .. ": " .. err, 0) end
  r.build_seconds, r.build_exit_code = res.wall, res.code or null
  if res.ok then return true end
  r.status = "build_failed"
  r.build_log_tail = tail(logfile, 20)
  return false
end

-- The interference evidence of a wb.bench command's runs, as a result stores it, or nil.
local function evidence_of(samples)
  if not samples.runq then return nil end
  return { runq = samples.runq, wall_own = samples.wall_own, others_cpu = samples.others_cpu,
    user = samples.user, sys = samples.sys, runq_scope = samples.runq_scope }
end

-- result = measure(c, h, commit) : builds and benchmarks one commit in a worktree
local function measure(c, h, commit)
  local r = json.object()
  r.schema_name, r.schema_version = RESULT_SCHEMA, 1
  r.commit, r.date, r.subject = commit.sha, commit.date, commit.subject
  r.machine, r.measured_at_utc, r.wb_version = h.machine, wb.clock.utc(), wb.version
  r.build_command, r.bench_command = json.array(h.build), json.array(h.bench)
  local wt <close> = checkout(h, commit)
  if not build(c, h, wt, commit, r) then return r end
  local ok, summary = pcall(wb.bench.run, { commands = { { name = commit.short, argv = h.bench } },
    cwd = wt.path, runs = h.runs, warmup = h.warmup, seed = h.seed, timeout = h.timeout })
  if not ok then
    if type(summary) == "table" and summary.interrupted then error(summary, 0) end
    r.status = "bench_failed"
    r.error = type(summary) == "table" and summary.msg or tostring(summary)
    return r
  end
  local cmd = summary.commands[1]
  local w = cmd.stats.wall
  r.status = "success"
  r.runs, r.warmup = h.runs, h.warmup
  r.n, r.mean, r.median, r.stddev, r.min, r.max = w.n, w.mean, w.median, w.stddev, w.min, w.max
  r.ci_lo, r.ci_hi = wb.stats.bootstrap_ci(cmd.samples.wall, nil,
    { stat = "mean", level = h.ci_level, resamples = h.resamples, seed = h.seed })
  r.ci_level = h.ci_level
  r.samples = cmd.samples.wall
  -- the interference evidence of each run (docs/compare.md), when every run's is known
  r.evidence = evidence_of(cmd.samples)
  return r
end

-- regress.machine_info(path, name) : writes the machine's description (kernel, CPU, memory) to
-- path unless it exists
function M.machine_info(path, name)
  if wb.fs.exists(path) then return end
  local pre = json.object()
  pre.machine = name
  pre.kernel = (wb.fs.read("/proc/sys/kernel/osrelease") or ""):gsub("%s+$", "")
  pre.cpu_model = (wb.fs.read("/proc/cpuinfo") or ""):match("model name%s*:%s*([^\n]+)") or null
  local n = 0
  for _ in (wb.fs.read("/proc/cpuinfo") or ""):gmatch("processor%s*:") do n = n + 1 end
  pre.cpu_count = n
  pre.memory_kb = tonumber((wb.fs.read("/proc/meminfo") or ""):match("MemTotal:%s*(%d+)")) or null
  wb.check(wb.fs.write(path, json.encode(pre, { pretty = true }) .. "\n"))
end

-- names, todo = regress.plan(commits, h) : the run names (short shas) and the cases to measure;
-- sets each commit's result path and, when its stored result can be reused, its reuse
function M.plan(commits, h)
  local names, todo = {}, {}
  for i, cm in ipairs(commits) do
    names[i] = cm.short
    cm.path = h.dir .. "/" .. cm.sha .. ".json"
    cm.reuse = h.skip_existing and not h.force and reusable(cm.path, h) or nil
    if not cm.reuse then todo[#todo + 1] = { name = cm.short, argv = h.bench } end
  end
  return names, todo
end

-- measured, reused = regress.run(c, commits, h) : each planned commit as campaign c's run named by
-- its short sha: its stored result reused, or measured and stored; progress on stderr
function M.run(c, commits, h)
  local measured, reused = 0, 0
  for i, cm in ipairs(commits) do
    c:run(cm.short, function(rec)
      local r = cm.reuse
      if r then
        reused = reused + 1
        rec.reused = true
        log("[%d/%d] %s reused (%s, measured %s)", i, #commits, cm.short, r.status, r.measured_at_utc)
      else
        measured = measured + 1
        r = measure(c, h, cm)
        wb.check(wb.fs.write(cm.path, json.encode(r, { pretty = true }) .. "\n"))
        log("[%d/%d] %s %s%s", i, #commits, cm.short, r.status:gsub("_", " "),
          r.status == "success" and string.format(": mean %s over %d runs", util.format_seconds(r.mean), r.n) or "")
      end
      c:event(rec.reused and "commit_reused" or "commit_measured", { run = cm.short, status = r.status })
      rec.commit, rec.result_file = cm.sha, cm.path
      if r.status == "success" then
        rec.metrics = { wall_mean_seconds = r.mean, wall_median_seconds = r.median }
        rec.samples = interference.record_samples({ wall_mean_seconds = r.samples }, r.evidence)
      else
        rec.status, rec.reason = "skipped", r.status
      end
    end)
  end
  return measured, reused
end

-- A result's evidence (evidence_of) as wb.verdict.steps takes a point's.
local function point_evidence(ev)
  if type(ev) ~= "table" or type(ev.runq) ~= "table" then return nil end
  local cpu = {}
  for k in ipairs(ev.runq) do cpu[k] = ev.user and ev.sys and ev.user[k] and ev.sys[k] and ev.user[k] + ev.sys[k] or false end
  return { runq = ev.runq, cpu = cpu, wall_own = ev.wall_own, others = ev.others_cpu, scope = ev.runq_scope }
end

-- steps = find_steps(h, rows) : steps of the per-commit means of the measured rows
-- (wb.verdict.steps), each named by the first commit of its new level
local function find_steps(h, rows)
  local series, points = {}, {}
  for _, row in ipairs(rows) do
    if row.status == "success" then
      series[#series + 1] = row
      points[#points + 1] = { samples = row.samples, evidence = point_evidence(row.evidence) }
    end
  end
  local steps = json.array()
  for k, s in ipairs(wb.verdict.steps(points, { metric = "wall mean", kind = "time", stat = "mean",
      min_size = h.min_size, threshold = h.threshold, alpha = h.alpha, seed = h.seed })) do
    local first, prev = series[s.index], series[s.index - 1]
    local st = json.object()
    st.commit, st.short, st.subject, st.date = first.commit, first.short, first.subject, first.date
    st.index = first.index
    st.previous_commit = prev.commit
    st.candidates = json.array()
    for i = prev.index + 1, first.index do st.candidates[#st.candidates + 1] = rows[i].commit end
    st.before, st.after, st.ratio, st.kind = s.before, s.after, s.ratio, s.kind
    local row = s.row
    st.p_value, st.q_value = row.p or null, row.q or null
    st.ci_lo, st.ci_hi = row.ci_lo or null, row.ci_hi or null
    st.significant = s.significant
    st.verdict, st.reason = row.verdict, row.reason
    steps[k] = st
  end
  return steps
end

-- doc = regress.document(commits, h, range, measured, reused) : the wb.regress v1 document of
-- the planned commits, whose results are stored
function M.document(commits, h, range, measured, reused)
  local rows = json.array()
  for i, cm in ipairs(commits) do
    local r = wb.check(json.read(cm.path))
    local row = json.object()
    row.index, row.commit, row.short, row.date, row.subject = i, cm.sha, cm.short, cm.date, cm.subject
    row.status, row.reused = r.status, cm.reuse ~= nil
    for _, k in ipairs { "n", "mean", "median", "stddev", "ci_lo", "ci_hi" } do row[k] = r[k] or null end
    row.samples = r.samples or json.array()
    row.evidence = r.evidence -- the runs' interference evidence (docs/compare.md), when known
    row.result_file = cm.path
    rows[i] = row
  end
  local doc = json.object()
  doc.schema_name, doc.schema_version = "wb.regress", 1
  doc.created_at_utc, doc.wb_version = wb.clock.utc(), wb.version
  doc.repo, doc.range, doc.machine, doc.results_dir = h.repo, range, h.machine, h.dir
  doc.settings = { build = json.array(h.build), bench = json.array(h.bench), runs = h.runs,
    warmup = h.warmup, threshold = h.threshold, alpha = h.alpha, min_size = h.min_size,
    first_parent = h.first_parent, skip_existing = h.skip_existing, force = h.force }
  doc.measured, doc.reused = measured, reused
  doc.commits = rows
  doc.steps = find_steps(h, rows)
  local regressions = 0
  for _, st in ipairs(doc.steps) do
    if st.significant and st.kind == "regression" then regressions = regressions + 1 end
  end
  doc.regressions = regressions
  return doc
end

-- The verdicts a confirmation re-runs: a step called a change, or one the load may have made or hidden.
local TO_CONFIRM = require("wb.confirm").TO_CONFIRM

-- conf, base_cmd, new_cmd = regress.confirm_commits(c, h, base, new) : commits base and new
-- ({sha, short}) built afresh side by side and benchmarked interleaved in one wb.bench run, so that
-- the machine's drift and other load hit both alike: the confirmation of their wall times (a
-- verdict row as find_steps judges, of these runs: verdict, reason, ratio, p_value, ci_lo, ci_hi,
-- before, after, runs, order) and the two wb.bench summary commands (nil when a build or the
-- benchmark failed: conf says why). h.after(wt_base, wt_new, row), when set, runs while both
-- worktrees ({path}) still exist, after the benchmark.
function M.confirm_commits(c, h, base, new)
  local conf = json.object()
  local wt_base <close> = checkout(h, base)
  local wt_new <close> = checkout(h, new)
  for _, side in ipairs({ { base, wt_base }, { new, wt_new } }) do
    if not build(c, h, side[2], side[1], conf, "build-confirm-") then
      conf.verdict, conf.reason = "not confirmed", "the build of " .. side[1].short .. " failed this time"
      return conf
    end
  end
  -- at least wb.confirm.MIN_RUNS a side, as `wb compare --confirm`: a re-run of `runs` (6 in a test
  -- of a +30% step) beside two busy loops under ASan found p = 0.065 and let the gate pass
  local runs = math.max(h.runs, require("wb.confirm").MIN_RUNS)
  local ok, summary = pcall(wb.bench.run, { commands = { { name = base.short, argv = h.bench, cwd = wt_base.path },
    { name = new.short, argv = h.bench, cwd = wt_new.path } }, runs = runs, warmup = h.warmup, seed = h.seed,
    timeout = h.timeout, alloc_runs = h.alloc_runs })
  if not ok then
    if type(summary) == "table" and summary.interrupted then error(summary, 0) end
    conf.verdict = "not confirmed"
    conf.reason = "the interleaved benchmark failed: " .. (type(summary) == "table" and summary.msg or tostring(summary))
    return conf
  end
  local b, n = summary.commands[1], summary.commands[2]
  local function side_evidence(cmd)
    local walls = cmd.samples.wall:totable()
    local ev = wb.verdict.segment_evidence({ { evidence = point_evidence(evidence_of(cmd.samples)) } }, 1, 1, walls)
    return walls, ev
  end
  local bw, be = side_evidence(b)
  local nw, ne = side_evidence(n)
  local row = wb.verdict.compare("wall mean", b.stats.wall.mean, n.stats.wall.mean, { kind = "time", stat = "mean",
    threshold = h.threshold, alpha = h.alpha, base_samples = bw, new_samples = nw, seed = h.seed,
    base_evidence = be, new_evidence = ne, interleaved = true })
  wb.verdict.judge({ row }, { threshold = h.threshold, alpha = h.alpha })
  conf.verdict, conf.reason, conf.ratio = row.verdict, row.reason, row.ratio or null
  conf.p_value, conf.ci_lo, conf.ci_hi = row.p or null, row.ci_lo or null, row.ci_hi or null
  conf.before, conf.after, conf.runs = b.stats.wall.mean, n.stats.wall.mean, runs
  conf.order = "interleaved"
  if h.after then h.after(wt_base, wt_new, row) end
  return conf, b, n
end

-- The two commits of step st (the last of the old level, the first of the new), confirmed.
local function confirm_step(c, h, st, commits)
  return (M.confirm_commits(c, h, commits[st.previous_commit], commits[st.commit]))
end

-- regress.confirm(c, h, doc) : every step doc calls a regression, an improvement, confounded or
-- interference (wb.confirm.TO_CONFIRM), confirmed by its two commits built again and benchmarked
-- interleaved (confirm_step): st.confirmation {verdict, reason, ratio, p_value, ci_lo, ci_hi, before, after, runs, order} beside
-- the step's own verdict, st.confirmed (the confirmation's verdict is a regression or an
-- improvement, the step's kind); doc.regressions then counts the confirmed regressions, and
-- doc.unconfirmed the steps the confirmation did not bear out
function M.confirm(c, h, doc)
  local by_sha = {}
  for _, row in ipairs(doc.commits) do by_sha[row.commit] = { sha = row.commit, short = row.short } end
  local regressions, unconfirmed = 0, 0
  for i, st in ipairs(doc.steps) do
    if TO_CONFIRM[st.verdict] then
      log("[confirm %d] %s..%s: building both and benchmarking them interleaved", i, by_sha[st.previous_commit].short, st.short)
      local conf = confirm_step(c, h, st, by_sha)
      st.confirmation = conf
      st.confirmed = conf.verdict == st.kind
      c:event("step_confirmed", { run = st.short, verdict = st.verdict, confirmed = conf.verdict })
      if st.confirmed and st.kind == "regression" then regressions = regressions + 1 end
      if not st.confirmed and st.significant then unconfirmed = unconfirmed + 1 end
      log("[confirm %d] %s: %s", i, st.short, conf.reason)
    end
  end
  doc.regressions, doc.unconfirmed, doc.confirmed = regressions, unconfirmed, true
  return doc
end

local function pct(ratio) return string.format("%+.1f%%", (ratio - 1) * 100) end

local function step_sentence(st, unit, settings)
  local text = string.format("%s: %.3f → %.3f %s (%s; %s)", st.kind,
    st.before * unit.factor, st.after * unit.factor, unit.name, pct(st.ratio), st.reason)
  if not st.significant then
    text = text .. string.format("; a step counts when it is beyond %g%%, p < %g and its CI excludes 1",
      settings.threshold * 100, settings.alpha)
  end
  if #st.candidates > 1 then
    text = text .. string.format("; the %d commits before it were not measured and may hold the change", #st.candidates - 1)
  end
  local conf = st.confirmation
  if conf then
    text = text .. string.format("; confirmed by an interleaved re-run: %s (%s)", st.confirmed and "yes" or "no",
      conf.reason)
  end
  return text
end

local function rows_table(doc, unit)
  local step_at = {}
  for _, st in ipairs(doc.steps) do step_at[st.commit] = st end
  local rows = { { "#", "Commit", "Date", "Subject", "Status", "Mean ± 95% CI [" .. unit.name .. "]", "Runs", "Step" } }
  for _, row in ipairs(doc.commits) do
    local mean = row.status == "success" and string.format("%.3f [%.3f–%.3f]", row.mean * unit.factor,
      row.ci_lo * unit.factor, row.ci_hi * unit.factor) or "–"
    local st = step_at[row.commit]
    rows[#rows + 1] = { tostring(row.index), row.short, row.date:sub(1, 10), row.subject,
      row.status:gsub("_", " ") .. (row.reused and " (reused)" or ""), mean,
      row.status == "success" and tostring(row.n) or "", st and (pct(st.ratio) .. " " .. st.kind ..
        (st.confirmation and (st.confirmed and ", confirmed" or ", not confirmed") or "")) or "" }
  end
  return rows
end

local function unit_of(doc)
  local means = {}
  for _, row in ipairs(doc.commits) do
    if row.status == "success" then means[#means + 1] = row.mean end
  end
  return wb.report.time_unit(means)
end

-- md = regress.markdown(doc) : the document as Markdown: the steps, then the commits
function M.markdown(doc)
  local unit, md = unit_of(doc), wb.report
  local out = { "# Regression hunt: " .. md.md_code(util.shell_join(doc.settings.bench)), "",
    string.format("Repository %s, %s; machine %s; %d commits (%d measured now, %d reused).",
      md.md_code(doc.repo), type(doc.range) == "table" and "listed commits" or ("range " .. md.md_code(doc.range)),
      md.md_code(doc.machine), #doc.commits, doc.measured, doc.reused), "", "## Steps", "" }
  if #doc.steps == 0 then out[#out + 1] = "No step found in the series of means." end
  for _, st in ipairs(doc.steps) do
    out[#out + 1] = string.format("- %s %s — %s", md.md_code(st.short), md.md_text(st.subject),
      md.md_text(step_sentence(st, unit, doc.settings)))
  end
  local rows = rows_table(doc, unit)
  for i = 2, #rows do
    rows[i][2] = md.md_code(rows[i][2])
    rows[i][4] = md.md_text(rows[i][4])
  end
  out[#out + 1] = ""
  out[#out + 1] = "## Commits"
  out[#out + 1] = ""
  out[#out + 1] = (md.table(rows, { align = { "r", "l", "l", "l", "l", "r", "r", "l" } }):gsub("\n$", ""))
  return table.concat(out, "\n") .. "\n"
end

-- svg = regress.chart(doc) : the series against commit index: means with CI error bars, fitted
-- levels, steps, failures
function M.chart(doc)
  local unit, c = unit_of(doc), svg.colors
  local n = #doc.commits
  local width, height, left, right, top = 900, 440, 84, 28, 40
  local bottom = height - 110
  local ymax = 0
  for _, row in ipairs(doc.commits) do
    if row.status == "success" then ymax = math.max(ymax, row.ci_hi * unit.factor, row.mean * unit.factor) end
  end
  local yticks, ystep = svg.nice_ticks(0, ymax > 0 and ymax or 1, 5)
  local y = svg.linear(0, yticks[#yticks], bottom, top)
  local pad = 24
  local x = n > 1 and svg.linear(1, n, left + pad, width - right - pad) or function() return (left + width - right) / 2 end
  local every = math.max(1, math.ceil(n * 60 / (width - left - right)))
  local xticks = {}
  for i = 1, n, every do xticks[#xticks + 1] = i end
  local out = {
    svg.axis { orient = "left", scale = y, ticks = yticks, at = left, from = bottom, to = top, grid = width - right - left,
      label = "Mean wall time [" .. unit.name .. "]", format = function(v) return svg.tick_format(v, ystep) end },
    svg.axis { orient = "bottom", scale = x, ticks = xticks, at = bottom, from = left, to = width - right,
      label = "Commit (oldest → newest)", format = function(i) return doc.commits[i].short:sub(1, 7) end },
  }
  local levels, bounds = {}, { 1 }
  for _, st in ipairs(doc.steps) do bounds[#bounds + 1] = st.index end
  for k = 1, #bounds do
    local from, to = bounds[k], (bounds[k + 1] or n + 1) - 1
    local level
    if #doc.steps == 0 then
      local ms = {}
      for i = from, to do
        if doc.commits[i].status == "success" then ms[#ms + 1] = doc.commits[i].mean end
      end
      level = #ms > 0 and wb.stats.median(ms) or nil
    else
      level = k == 1 and doc.steps[1].before or doc.steps[k - 1].after
    end
    if level then
      levels[#levels + 1] = svg.line { x1 = x(from) - 8, x2 = x(to) + 8, y1 = y(level * unit.factor), y2 = y(level * unit.factor),
        stroke = c.muted, ["stroke-dasharray"] = "6 4", ["stroke-width"] = 1.5,
        title = string.format("fitted level %.3f %s", level * unit.factor, unit.name) }
    end
  end
  out[#out + 1] = svg.g({ class = "levels" }, levels)
  for _, st in ipairs(doc.steps) do
    local sx = x(st.index) - (n > 1 and (x(2) - x(1)) / 2 or 0)
    local color = not st.significant and c.neutral or (st.kind == "regression" and c.slower or c.faster)
    out[#out + 1] = svg.g({ class = "step" }, {
      svg.line { x1 = sx, x2 = sx, y1 = top - 4, y2 = bottom, stroke = color, ["stroke-dasharray"] = "4 3", ["stroke-width"] = 1.5 },
      svg.text { x = sx + 4, y = top - 10, fill = color, ["font-weight"] = "600",
        text = pct(st.ratio) .. " at " .. st.short:sub(1, 7),
        title = st.short .. " " .. st.subject .. ": " .. step_sentence(st, unit, doc.settings) },
    })
  end
  local path, points = {}, {}
  for _, row in ipairs(doc.commits) do
    local px = x(row.index)
    if row.status == "success" then
      local py = y(row.mean * unit.factor)
      path[#path + 1] = (#path == 0 and "M" or "L") .. svg.num(px) .. " " .. svg.num(py)
      points[#points + 1] = svg.line { x1 = px, x2 = px, y1 = y(row.ci_lo * unit.factor), y2 = y(row.ci_hi * unit.factor),
        stroke = svg.palette[1], ["stroke-width"] = 1.5 }
      points[#points + 1] = svg.circle { cx = px, cy = py, r = 4.2, fill = svg.palette[1], stroke = "#ffffff", ["stroke-width"] = 1.5,
        title = string.format("%s %s: %.3f %s (95%% CI %.3f–%.3f)", row.short, row.subject, row.mean * unit.factor,
          unit.name, row.ci_lo * unit.factor, row.ci_hi * unit.factor) }
    else
      points[#points + 1] = svg.text { x = px, y = bottom - 8, ["text-anchor"] = "middle", fill = c.slower,
        ["font-weight"] = "700", text = "×", title = row.short .. " " .. row.subject .. ": " .. row.status:gsub("_", " ") }
    end
  end
  out[#out + 1] = svg.g({ class = "series" }, { svg.path { d = table.concat(path), fill = "none", stroke = svg.palette[1],
    ["stroke-width"] = 2, ["stroke-linejoin"] = "round" }, table.concat(points) })
  local ly = height - 30
  out[#out + 1] = svg.g({ class = "legend" }, {
    svg.line { x1 = left, y1 = ly, x2 = left + 22, y2 = ly, stroke = svg.palette[1], ["stroke-width"] = 2 },
    svg.circle { cx = left + 11, cy = ly, r = 3.6, fill = svg.palette[1], stroke = "#ffffff" },
    svg.text { x = left + 30, y = ly, dy = "0.32em", fill = c.muted, text = "mean per commit (bars: 95% CI)" },
    svg.line { x1 = left + 250, y1 = ly, x2 = left + 272, y2 = ly, stroke = c.muted, ["stroke-dasharray"] = "6 4" },
    svg.text { x = left + 280, y = ly, dy = "0.32em", fill = c.muted, text = "fitted level" },
    svg.line { x1 = left + 370, y1 = ly - 7, x2 = left + 370, y2 = ly + 7, stroke = c.slower, ["stroke-dasharray"] = "4 3" },
    svg.text { x = left + 378, y = ly, dy = "0.32em", fill = c.muted, text = "step (first commit of the new level)" },
    svg.text { x = left + 610, y = ly, dy = "0.32em", fill = c.slower, ["font-weight"] = "700", text = "×" },
    svg.text { x = left + 622, y = ly, dy = "0.32em", fill = c.muted, text = "build or benchmark failed" },
  })
  return svg.document { width = width, height = height, title = "Mean wall time per commit", content = out }
end

-- html = regress.html(doc, chart_svg) : the report page: steps, the chart, the commits
function M.html(doc, chart_svg)
  local unit = unit_of(doc)
  local items = {}
  for _, st in ipairs(doc.steps) do
    local cls = not st.significant and "same" or (st.kind == "regression" and "slower" or "faster")
    items[#items + 1] = page.join { page.raw('<span class="chip ' .. cls .. '">' .. page.escape(pct(st.ratio) .. " "
      .. (st.significant and st.kind or "not significant")) .. "</span>"), page.code(st.short),
      " " .. st.subject .. " — " .. step_sentence(st, unit, doc.settings) }
  end
  local rows = rows_table(doc, unit)
  for i = 2, #rows do rows[i][2] = page.code(rows[i][2]) end
  local blocks = {
    page.section("Steps", #items > 0 and page.list(items) or page.p("No step found in the series of means.")),
    page.section("Series", page.figure(chart_svg, "Mean wall time of each commit in commit order; "
      .. "dashed lines: the fitted levels and the steps between them.")),
    page.section("Commits", page.table(rows, { align = { "r", "l", "l", "l", "l", "r", "r", "l" } })),
  }
  local runs = {}
  for _, row in ipairs(doc.commits) do
    if row.status == "success" then
      runs[#runs + 1] = { name = row.short .. " " .. row.subject, command = util.shell_join(doc.settings.bench),
        samples = { wall = row.samples } }
    end
  end
  local page_doc = page.document { title = "Regression hunt", generator = "wb " .. doc.wb_version,
    meta = { html.settings_meta { runs = doc.settings.runs, warmup = doc.settings.warmup },
      html.host_meta(doc.machine, doc.created_at_utc, doc.wb_version) },
    footer = "Generated by wb " .. doc.wb_version }
  for _, b in ipairs(blocks) do page_doc:add(b) end
  for _, b in ipairs(html.timings(runs)) do page_doc:add(b) end
  return page_doc:html()
end

-- range = regress.default_range(repo) : the last 10 commits (HEAD~10..HEAD), or all of them in a
-- shorter history
function M.default_range(repo)
  local res = wb.check(wb.proc.run { argv = { "git", "-C", repo, "rev-list", "--count", "--first-parent", "HEAD" },
    stdout = "capture", stderr = "capture" })
  if not res.ok then usage(repo .. ": " .. res.stderr:gsub("%s+$", "")) end
  return tonumber(res.stdout:match("%d+") or 0) > 10 and "HEAD~10..HEAD" or "HEAD"
end

-- root = regress.runs_root(repo) : where runs/ goes. Run from inside the repository under test,
-- runs/ (run directories, and results_dir when it is relative) would be new files in its
-- worktree: they go under its git directory instead, in <git dir>/wb/ (root), which no commit
-- and no `git status` sees; elsewhere nil.
function M.runs_root(repo)
  local cwd = wb.fs.realpath(".")
  if not cwd or (cwd ~= repo and cwd:sub(1, #repo + 1) ~= repo .. "/") then return nil end
  local gitdir = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"):gsub("%s+$", "")
  return gitdir .. "/wb"
end

return M
