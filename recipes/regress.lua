-- Regression hunt over git commits in the manner of airspeed velocity: build, benchmark, find steps.
--
--   wb regress 'bench=[./build/app, --n, "1000"]' build='[make, -s]' range=HEAD~20..HEAD
--   wb regress repo=../proj 'range=[v1.2, v1.3, main]' 'bench=[./app]' runs=20
--
-- Each commit of the range (git rev-list --reverse [--first-parent]) is checked out in a
-- temporary worktree (git worktree add --detach; removed with git worktree remove --force even
-- when the run fails or is interrupted), built with `build` (an argv run in the worktree; [] for
-- none) and measured by wb.bench running `bench` in the worktree. One result per commit is kept
-- in results_dir/<machine>/<sha>.json, so runs accumulate: a commit already measured on this
-- machine with the same build and bench commands is reused unless force=true. Build failures are
-- recorded (status build_failed) and left out of the series. Step detection (wb.stats.steps)
-- over the per-commit means names the first commit of each new level; a Mann–Whitney test
-- between the samples of the segments either side says whether it is significant. Writes
-- regress.json (wb.regress v1), regress.md, regress.svg and report.html. See docs/regress.md.
local wb = require "wb"
local svg = require "wb.svg"

local json, util = wb.json, wb.util
local null = wb.null
local ALPHA, CI_LEVEL, RESAMPLES = 0.05, 0.95, 2000
local RESULT_SCHEMA = "wb.regress.result"

local function usage(msg) wb.usage("regress: " .. msg, 0) end
local opt = util.opt
local function log(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

local function strings(list)
  local out = {}
  for i, a in ipairs(list) do out[i] = tostring(a) end
  return out
end

-- out = git(repo, args...) : git's stdout; a failing git command fails the run with its message
local function git(repo, ...)
  local argv = { "git", "-C", repo, ... }
  local res = wb.check(wb.proc.run { argv = argv, stdout = "capture", stderr = "capture", timeout = 300 })
  if not res.ok then
    wb.fail("regress: " .. util.shell_join(argv) .. ": " .. (res.stderr:gsub("%s+$", "")), 0)
  end
  return res.stdout
end

-- commits = list_commits(repo, range, first_parent) : {sha, short, date, subject} in commit order
-- (rev-list --reverse of a range, or the listed commits in their order)
local function list_commits(repo, range, first_parent)
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
local function reusable(path, cfg)
  if not wb.fs.exists(path) then return nil end
  local r = json.read(path)
  if type(r) ~= "table" or r.schema_name ~= RESULT_SCHEMA then
    log("regress: %s is not a %s file; measuring again", path, RESULT_SCHEMA)
    return nil
  end
  if not same(r.build_command, strings(cfg.build)) or not same(r.bench_command, strings(cfg.bench)) then
    return nil
  end
  return r
end

local function tail(path, lines)
  local all = {}
  for l in ((wb.fs.read(path) or ""):gsub("\n$", "") .. "\n"):gmatch("(.-)\n") do all[#all + 1] = l end
  return table.concat(all, "\n", math.max(1, #all - lines + 1))
end

-- result = measure(c, cfg, repo, commit, machine) : builds and benchmarks one commit in a worktree
local function measure(c, cfg, repo, commit, machine)
  local r = json.object()
  r.schema_name, r.schema_version = RESULT_SCHEMA, 1
  r.commit, r.date, r.subject = commit.sha, commit.date, commit.subject
  r.machine, r.measured_at_utc, r.wb_version = machine, wb.clock.utc(), wb.version
  r.build_command, r.bench_command = json.array(strings(cfg.build)), json.array(strings(cfg.bench))
  local wt <close> = setmetatable({ repo = repo, dir = wb.check(wb.fs.tmpdir("wb-regress")) }, Worktree)
  wt.path = wt.dir .. "/" .. commit.short
  git(repo, "worktree", "add", "--detach", wt.path, commit.sha)
  if #cfg.build > 0 then
    local logfile = c.dir .. "/logs/build-" .. commit.short .. ".log"
    local res, err = wb.proc.run { argv = strings(cfg.build), cwd = wt.path, stdout = { file = logfile },
      stderr = "stdout", timeout = opt(cfg.build_timeout) }
    if not res then wb.fail("regress: build of " .. commit.short .. ": " .. err, 0) end
    r.build_seconds, r.build_exit_code = res.wall, res.code or null
    if not res.ok then
      r.status = "build_failed"
      r.build_log_tail = tail(logfile, 20)
      return r
    end
  end
  local ok, summary = pcall(wb.bench.run, { commands = { { name = commit.short, argv = strings(cfg.bench) } },
    cwd = wt.path, runs = cfg.runs, warmup = cfg.warmup, seed = cfg.seed, timeout = opt(cfg.timeout) })
  if not ok then
    if type(summary) == "table" and summary.interrupted then error(summary, 0) end
    r.status = "bench_failed"
    r.error = type(summary) == "table" and summary.msg or tostring(summary)
    return r
  end
  local cmd = summary.commands[1]
  local w = cmd.stats.wall
  r.status = "success"
  r.runs, r.warmup = cfg.runs, cfg.warmup
  r.n, r.mean, r.median, r.stddev, r.min, r.max = w.n, w.mean, w.median, w.stddev, w.min, w.max
  r.ci_lo, r.ci_hi = wb.stats.bootstrap_ci(cmd.samples.wall, nil,
    { stat = "mean", level = CI_LEVEL, resamples = RESAMPLES, seed = cfg.seed })
  r.ci_level = CI_LEVEL
  r.samples = cmd.samples.wall
  return r
end

local function machine_info(path, name)
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

-- steps = find_steps(cfg, rows) : steps of the per-commit means of the measured rows, each
-- named by the first commit of its new level, with the significance test between segments
local function find_steps(cfg, rows)
  local series = {}
  for _, row in ipairs(rows) do
    if row.status == "success" then series[#series + 1] = row end
  end
  local means = {}
  for i, row in ipairs(series) do means[i] = row.mean end
  local raw = #means >= 2 and wb.stats.steps(means, { min_size = cfg.min_size }) or {}
  local bounds = { 1 }
  for _, s in ipairs(raw) do bounds[#bounds + 1] = s.index end
  bounds[#bounds + 1] = #series + 1
  local steps, judged = json.array(), {}
  for k, s in ipairs(raw) do
    local before, after = {}, {}
    for i = bounds[k], bounds[k + 1] - 1 do
      for _, x in ipairs(series[i].samples) do before[#before + 1] = x end
    end
    for i = bounds[k + 1], bounds[k + 2] - 1 do
      for _, x in ipairs(series[i].samples) do after[#after + 1] = x end
    end
    local first, prev = series[s.index], series[s.index - 1]
    local st = json.object()
    st.commit, st.short, st.subject, st.date = first.commit, first.short, first.subject, first.date
    st.index = first.index
    st.previous_commit = prev.commit
    st.candidates = json.array()
    for i = prev.index + 1, first.index do st.candidates[#st.candidates + 1] = rows[i].commit end
    st.before, st.after, st.ratio = s.before, s.after, s.ratio
    st.kind = s.ratio > 1 and "regression" or "improvement"
    steps[#steps + 1] = st
    judged[#judged + 1] = wb.verdict.compare("wall mean", s.before, s.after, { kind = "time", stat = "mean",
      threshold = cfg.threshold, alpha = ALPHA, base_samples = before, new_samples = after, seed = cfg.seed })
  end
  -- every step is judged by the comparison engine, all together (Benjamini–Hochberg over the steps)
  wb.verdict.judge(judged, { threshold = cfg.threshold, alpha = ALPHA })
  for k, st in ipairs(steps) do
    local row = judged[k]
    st.p_value, st.q_value = row.p or null, row.q or null
    st.ci_lo, st.ci_hi = row.ci_lo or null, row.ci_hi or null
    st.significant = row.verdict == "regression" or row.verdict == "improvement"
    st.verdict, st.reason = row.verdict, row.reason
  end
  return steps
end

local function pct(ratio) return string.format("%+.1f%%", (ratio - 1) * 100) end

local function step_sentence(st, unit, threshold)
  local text = string.format("%s: %.3f → %.3f %s (%s; %s)", st.kind,
    st.before * unit.factor, st.after * unit.factor, unit.name, pct(st.ratio), st.reason)
  if not st.significant then
    text = text .. string.format("; a step counts when it is beyond %g%%, p < %g and its CI excludes 1", threshold * 100, ALPHA)
  end
  if #st.candidates > 1 then
    text = text .. string.format("; the %d commits before it were not measured and may hold the change", #st.candidates - 1)
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
      row.status == "success" and tostring(row.n) or "", st and (pct(st.ratio) .. " " .. st.kind) or "" }
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

local function markdown(doc)
  local unit, md = unit_of(doc), wb.report
  local out = { "# Regression hunt: " .. md.md_code(util.shell_join(doc.settings.bench)), "",
    string.format("Repository %s, %s; machine %s; %d commits (%d measured now, %d reused).",
      md.md_code(doc.repo), type(doc.range) == "table" and "listed commits" or ("range " .. md.md_code(doc.range)),
      md.md_code(doc.machine), #doc.commits, doc.measured, doc.reused), "", "## Steps", "" }
  if #doc.steps == 0 then out[#out + 1] = "No step found in the series of means." end
  for _, st in ipairs(doc.steps) do
    out[#out + 1] = string.format("- %s %s — %s", md.md_code(st.short), md.md_text(st.subject),
      md.md_text(step_sentence(st, unit, doc.settings.threshold)))
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

-- The series against commit index: means with CI error bars, fitted levels, steps, failures.
local function chart(doc)
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
        title = st.short .. " " .. st.subject .. ": " .. step_sentence(st, unit, doc.settings.threshold) },
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

local function html(doc, chart_svg)
  local esc, unit = svg.escape, unit_of(doc)
  local items = {}
  for _, st in ipairs(doc.steps) do
    local cls = not st.significant and "same" or (st.kind == "regression" and "slower" or "faster")
    items[#items + 1] = string.format('<li><span class="chip %s">%s %s</span><code>%s</code> %s — %s</li>\n', cls,
      esc(pct(st.ratio)), esc(st.significant and st.kind or "not significant"), esc(st.short), esc(st.subject),
      esc(step_sentence(st, unit, doc.settings.threshold)))
  end
  local rows = rows_table(doc, unit)
  local t = { '<div class="scroll"><table>\n<thead><tr>' }
  for j, h in ipairs(rows[1]) do t[#t + 1] = string.format('<th%s>%s</th>', (j == 1 or j >= 6) and ' class="r"' or "", esc(h)) end
  t[#t + 1] = "</tr></thead>\n<tbody>\n"
  for i = 2, #rows do
    t[#t + 1] = "<tr>"
    for j, v in ipairs(rows[i]) do
      t[#t + 1] = string.format('<td%s>%s</td>', (j == 1 or (j >= 6 and j < 8)) and ' class="r"' or "", j == 2 and ("<code>" .. esc(v) .. "</code>") or esc(v))
    end
    t[#t + 1] = "</tr>\n"
  end
  t[#t + 1] = "</tbody></table></div>\n"
  local body = "<section>\n<h2>Steps</h2>\n" .. (#items > 0 and ("<ul>\n" .. table.concat(items) .. "</ul>\n")
      or "<p>No step found in the series of means.</p>\n") .. "</section>\n"
      .. "<section>\n<h2>Series</h2>\n<figure>\n" .. chart_svg .. "\n<figcaption>Mean wall time of each commit in commit order; "
      .. "dashed lines: the fitted levels and the steps between them.</figcaption>\n</figure>\n</section>\n"
      .. "<section>\n<h2>Commits</h2>\n" .. table.concat(t) .. "</section>\n"
  local summary = json.object()
  summary.schema_name, summary.schema_version = "wb.bench", 1
  summary.created_at_utc, summary.wb_version = doc.created_at_utc, doc.wb_version
  summary.settings = { runs = doc.settings.runs, warmup = doc.settings.warmup }
  summary.host = doc.machine
  local commands = json.array()
  for _, row in ipairs(doc.commits) do
    if row.status == "success" then
      local s = wb.stats.summary(row.samples)
      commands[#commands + 1] = { name = row.short .. " " .. row.subject, command = util.shell_join(doc.settings.bench),
        samples = { wall = row.samples }, stats = { wall = s }, warnings = json.array() }
    end
  end
  summary.commands, summary.comparisons, summary.scan = commands, json.array(), null
  return wb.report.html(summary, { title = "Regression hunt", sections = { body } })
end

local function check_config(cfg)
  if type(cfg.bench) ~= "table" or #cfg.bench == 0 then usage("which benchmark? e.g. 'bench=[./build/app, --n, \"1000\"]'") end
  if type(cfg.build) ~= "table" then usage("build must be an argv list ([] for no build step)") end
  if math.type(cfg.runs) ~= "integer" or cfg.runs < 1 then usage("runs must be a positive integer") end
  if math.type(cfg.min_size) ~= "integer" or cfg.min_size < 1 then usage("min_size must be a positive integer") end
  if type(cfg.threshold) ~= "number" or cfg.threshold < 0 then usage("threshold must be a number >= 0") end
  local range = opt(cfg.range)
  if range ~= nil and type(range) ~= "string" and type(range) ~= "table" then usage("range must be a revision range or a list of commits") end
  return range
end

-- The default range: the last 10 commits (HEAD~10..HEAD), or all of them in a shorter history.
local function default_range(repo)
  local res = wb.check(wb.proc.run { argv = { "git", "-C", repo, "rev-list", "--count", "--first-parent", "HEAD" },
    stdout = "capture", stderr = "capture" })
  if not res.ok then usage(repo .. ": " .. res.stderr:gsub("%s+$", "")) end
  return tonumber(res.stdout:match("%d+") or 0) > 10 and "HEAD~10..HEAD" or "HEAD"
end

-- Run from inside the repository under test, runs/ (run directories and results_dir when it is
-- relative) would be new files in its worktree: they go under its git directory instead, in
-- <git dir>/wb/, which no commit and no `git status` sees.
local function runs_root(repo)
  local cwd = wb.fs.realpath(".")
  if not cwd or (cwd ~= repo and cwd:sub(1, #repo + 1) ~= repo .. "/") then return nil end
  local gitdir = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"):gsub("%s+$", "")
  return gitdir .. "/wb"
end

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  defaults = {
    repo = ".", range = null, first_parent = true,
    build = { "make", "-s" }, bench = null, runs = 10, warmup = 1, timeout = null, build_timeout = null,
    results_dir = "runs/regress-results", machine_name = null, skip_existing = true, force = false,
    threshold = 0.05, min_size = 2, seed = 1, fail_on_regression = false,
  },
  types = {
    repo = "string", range = "string|list|null", first_parent = "boolean", build = "list", bench = "list|null",
    runs = "integer>=1", warmup = "integer>=0", timeout = "number>0|null", build_timeout = "number>0|null",
    results_dir = "string", machine_name = "string|null", skip_existing = "boolean", force = "boolean",
    threshold = "number>=0", min_size = "integer>=1", seed = "integer", fail_on_regression = "boolean",
  },
  run = function(ctx)
    local cfg = ctx.cfg
    local range = check_config(cfg)
    local path, err = wb.fs.realpath(tostring(cfg.repo))
    if not path then usage("repo: " .. err) end
    local repo = git(path, "rev-parse", "--show-toplevel"):gsub("%s+$", "")
    local machine = opt(cfg.machine_name) or ((wb.fs.read("/proc/sys/kernel/hostname") or "localhost"):gsub("%s+$", ""))
    range = range or default_range(repo)
    local commits = list_commits(repo, range, cfg.first_parent)
    local root = runs_root(repo)
    local results_dir = tostring(cfg.results_dir)
    if root and results_dir:sub(1, 1) ~= "/" then results_dir = util.join(root, results_dir) end
    if root and not ctx.opts.output and not ctx.opts.resume then
      ctx.runs_root = root .. "/runs"
      log("regress: inside the repository under test, so the run directory is under %s/runs", root)
    end
    local dir = util.join(results_dir, util.safe_name(machine))
    wb.check(wb.fs.mkdir_p(dir))
    machine_info(dir .. "/machine.json", machine)
    local c = wb.campaign.open(ctx)
    local names, todo = {}, {}
    for i, cm in ipairs(commits) do
      names[i] = cm.short
      cm.path = dir .. "/" .. cm.sha .. ".json"
      cm.reuse = cfg.skip_existing and not cfg.force and reusable(cm.path, cfg) or nil
      if not cm.reuse then todo[#todo + 1] = { name = cm.short, argv = strings(cfg.bench) } end
    end
    c:declare(names)
    if c:plan { sections = { { name = "regress", cases = todo,
      subprocess_runs = #todo * (cfg.runs + cfg.warmup + (#cfg.build > 0 and 1 or 0)) } } } then
      return 0
    end
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
          r = measure(c, cfg, repo, cm, machine)
          wb.check(wb.fs.write(cm.path, json.encode(r, { pretty = true }) .. "\n"))
          log("[%d/%d] %s %s%s", i, #commits, cm.short, r.status:gsub("_", " "),
            r.status == "success" and string.format(": mean %s over %d runs", util.format_seconds(r.mean), r.n) or "")
        end
        c:event(rec.reused and "commit_reused" or "commit_measured", { run = cm.short, status = r.status })
        rec.commit, rec.result_file = cm.sha, cm.path
        if r.status == "success" then
          rec.metrics = { wall_mean_seconds = r.mean, wall_median_seconds = r.median }
          rec.samples = { wall_mean_seconds = r.samples }
        else
          rec.status, rec.reason = "skipped", r.status
        end
      end)
    end
    local rows = json.array()
    for i, cm in ipairs(commits) do
      local r = wb.check(json.read(cm.path))
      local row = json.object()
      row.index, row.commit, row.short, row.date, row.subject = i, cm.sha, cm.short, cm.date, cm.subject
      row.status, row.reused = r.status, cm.reuse ~= nil
      for _, k in ipairs { "n", "mean", "median", "stddev", "ci_lo", "ci_hi" } do row[k] = r[k] or null end
      row.samples = r.samples or json.array()
      row.result_file = cm.path
      rows[i] = row
    end
    local doc = json.object()
    doc.schema_name, doc.schema_version = "wb.regress", 1
    doc.created_at_utc, doc.wb_version = wb.clock.utc(), wb.version
    doc.repo, doc.range, doc.machine, doc.results_dir = repo, range, machine, dir
    doc.settings = { build = json.array(strings(cfg.build)), bench = json.array(strings(cfg.bench)), runs = cfg.runs,
      warmup = cfg.warmup, threshold = cfg.threshold, alpha = ALPHA, min_size = cfg.min_size,
      first_parent = cfg.first_parent, skip_existing = cfg.skip_existing, force = cfg.force }
    doc.measured, doc.reused = measured, reused
    doc.commits = rows
    doc.steps = find_steps(cfg, rows)
    local regressions = 0
    for _, st in ipairs(doc.steps) do
      if st.significant and st.kind == "regression" then regressions = regressions + 1 end
    end
    doc.regressions = regressions
    local md, chart_svg = markdown(doc), chart(doc)
    c:write_json("regress.json", doc)
    c:write("regress.md", md)
    c:write("regress.svg", chart_svg .. "\n")
    c:write("report.html", html(doc, chart_svg))
    c:finish()
    io.write(md, "\nreport: ", c.dir, "/report.html\n")
    return (cfg.fail_on_regression and regressions > 0) and 1 or 0
  end,
}
