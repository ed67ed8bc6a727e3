-- The results history at scale: `wb history` indexing 10,000 records (copies of one real `wb
-- bench` run, tests/fixtures/recipes/history_copies.lua), an update that finds them unchanged, a
-- rebuild; the `wb trend` page of 1,000 series × 200 points: its size, the time wb takes to write
-- it, and the time headless Chromium takes to open it (the page's own clock at the end of its
-- script: JSON parsed, 1,000 cards built, the visible charts drawn); and `wb history` + `wb trend`
-- side by side with asv's `asv publish` on one history of 200 real commits × 1,000 benchmarks
-- with planted steps (asv from $(BUILD)/asv-venv, which tools/bench-deps.sh makes).
local wb = require "wb"
local lib = dofile("bench/lib.lua")

-- 1,000 synthetic series of 200 points (5 samples each), a step in every tenth.
local function synthetic(nseries, npoints)
  local list = {}
  for s = 1, nseries do
    local points = {}
    for i = 1, npoints do
      local level = (s % 10 == 0 and i > npoints / 2) and 1.2 or 1.0
      local samples = {}
      for k = 1, 5 do samples[k] = level * (0.1 + 0.002 * math.sin(s * 7 + i * 13 + k)) end
      points[i] = { commit = string.format("%040x", i), samples = samples, records = { { dir = "/r/" .. i,
        created_at = "2026-01-01T00:00:00Z" } }, median = level * 0.1 }
      points[i].lo, points[i].hi = level * 0.099, level * 0.101
    end
    local steps = {}
    if s % 10 == 0 then
      steps[1] = { index = npoints // 2 + 1, ratio = 1.2, row = { ratio = 1.2, ci_lo = 1.19, ci_hi = 1.21, p = 1e-9,
        verdict = "regression" }, commit = points[npoints // 2 + 1].commit, previous_commit = points[npoints // 2].commit }
    end
    list[s] = { recipe = "bench", name = "cmd " .. s, metric = "wall mean", machine = "AMD EPYC, 2 CPUs, 24 GiB",
      unit = "s", points = points, steps = steps }
  end
  return list
end

local function chromium_ready(path)
  local chromium = "/usr/bin/chromium"
  if not wb.fs.exists(chromium) then return nil, "skipped: chromium is not installed" end
  local profile = assert(wb.fs.tmpdir("wbchrome", "/tmp"))
  local r = wb.proc.run { argv = { chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--user-data-dir=" .. profile, "--window-size=1280,1000", "--dump-dom", "file://" .. path },
    stdout = "capture", stderr = "null", timeout = 120 }
  wb.fs.remove_tree(profile)
  local ms = r.stdout and r.stdout:match('data%-ready="(%d+)"')
  return ms and tonumber(ms) / 1000, ms and nil or "the page did not finish its script"
end

---- wb trend and asv publish on one history ---------------------------------------------------

-- The shared history: SIDE's commits × series commands, SAMPLES wall samples each (seconds):
-- command s at commit i takes level_s × (1 + DRIFT × a standard normal of the commit) ×
-- (1 + NOISE × a standard normal of the sample); every EVERY-th command runs STEPS[k] times
-- slower from its planted commit on (k cycling through STEPS).
local SIDE = { full = { commits = 200, series = 1000, rounds = 3 }, smoke = { commits = 10, series = 40, rounds = 1 } }
local SAMPLES, EVERY, NOISE, DRIFT = 5, 10, 0.02, 0.005
local STEPS = { 1.02, 1.05, 1.10, 1.20 }

-- i, factor = planted_at(s, ncommits) : the first commit (1-based) of command s's step and its
-- size, or nil for a command without one; the steps are spread over the commits of the middle half
local function planted_at(s, ncommits)
  if s % EVERY ~= 0 then return nil end
  local k = s // EVERY
  return ncommits // 4 + 1 + (k * 37) % (ncommits // 2), STEPS[(k - 1) % #STEPS + 1]
end

local function series_name(s) return string.format("series_%04d", s) end

-- A standard normal deviate from math.random (Box–Muller).
local function normal()
  return math.sqrt(-2 * math.log(1 - math.random())) * math.cos(2 * math.pi * math.random())
end

-- shas = git_history(dir, n, t0) : a new git repository at dir whose branch main has n commits,
-- commit i made at t0 + 3600 i; their shas, oldest first
local function git_history(dir, n, t0)
  local stream = {}
  for i = 1, n do
    local msg, body = "commit " .. i, i .. "\n"
    stream[i] = string.format("commit refs/heads/main\nmark :%d\ncommitter wb bench <bench@example.invalid> %d +0000\n"
      .. "data %d\n%s\n%sM 644 inline counter\ndata %d\n%s\n", i, t0 + 3600 * i, #msg, msg,
      i > 1 and ("from :" .. (i - 1) .. "\n") or "", #body, body)
  end
  lib.run({ "git", "init", "-q", "-b", "main", dir })
  local res = wb.check(wb.proc.run { argv = { "git", "-C", dir, "fast-import", "--quiet" },
    stdin = { data = table.concat(stream) }, stdout = "null", stderr = "capture" })
  if not res.ok then wb.fail("git fast-import failed: " .. res.stderr) end
  local shas = {}
  for sha in lib.run({ "git", "-C", dir, "rev-list", "--reverse", "main" }).stdout:gmatch("%x+") do shas[#shas + 1] = sha end
  assert(#shas == n, "git_history: not every commit was made")
  return shas
end

-- history_records(src, root, shas, nseries, t0) : one run directory per commit under root
-- (root/c0001..), made from the `wb bench` run directory src as
-- tests/fixtures/recipes/history_copies.lua makes its copies: its preflight with git.commit the
-- commit's sha, its manifest created an hour after the previous one with its runs replaced by
-- the nseries commands, each with its SAMPLES wall samples and their mean
local function history_records(src, root, shas, nseries, t0)
  local manifest = wb.check(wb.json.read(src .. "/manifest.json"))
  local preflight = wb.check(wb.json.read(src .. "/preflight.json"))
  math.randomseed(20260101)
  for i, sha in ipairs(shas) do
    local m = wb.util.deep_copy(manifest)
    m.created_at_utc = os.date("!%Y-%m-%dT%H:%M:%SZ", t0 + 3600 * i + 600)
    m.runs = {}
    for s = 1, nseries do
      local at, factor = planted_at(s, #shas)
      local level = 0.001 * (1 + (s * 37) % 100) * ((at and i >= at) and factor or 1) * (1 + DRIFT * normal())
      local xs, sum = {}, 0
      for k = 1, SAMPLES do
        xs[k] = level * (1 + NOISE * normal())
        sum = sum + xs[k]
      end
      m.runs[s] = { name = series_name(s), status = "success", metrics = { wall_mean_seconds = sum / SAMPLES },
        samples = { wall_seconds = xs } }
    end
    local p = wb.util.deep_copy(preflight)
    p.git = { commit = sha, dirty = false, branch = "main" }
    local dir = string.format("%s/c%04d", root, i)
    wb.check(wb.fs.mkdir_p(dir))
    wb.check(wb.fs.write(dir .. "/manifest.json", wb.json.encode(m)))
    wb.check(wb.fs.write(dir .. "/preflight.json", wb.json.encode(p)))
  end
end

-- t = tally(reports, shas, nseries) : the steps reported for nseries commands ({{series = s,
-- commit = sha, verdict}}) against the planted ones: t.found[size] planted steps of that size (a
-- factor of STEPS) named as a regression at their commit, out of t.planted[size]; t.near those
-- named at a commit one or two away; t.other every other report
local function tally(reports, shas, nseries)
  local pos = {}
  for i, sha in ipairs(shas) do pos[sha] = i end
  local t, seen = { found = {}, planted = {}, near = 0, other = 0 }, {}
  for _, size in ipairs(STEPS) do t.found[size], t.planted[size] = 0, 0 end
  for s = 1, nseries do
    local at, size = planted_at(s, #shas)
    if at then t.planted[size] = t.planted[size] + 1 end
  end
  for _, r in ipairs(reports) do
    local at, size = planted_at(r.series, #shas)
    local off = at and r.verdict == "regression" and not seen[r.series] and pos[r.commit] and math.abs(pos[r.commit] - at)
    if off == 0 then
      t.found[size], seen[r.series] = t.found[size] + 1, true
    elseif off and off <= 2 then
      t.near, seen[r.series] = t.near + 1, true
    else
      t.other = t.other + 1
    end
  end
  return t
end

-- "76 of 100 (+2%: 1 of 25, +5%: 25 of 25, ...); 1 a commit or two away; 0 other" : a tally
local function tally_text(t)
  local total, all, parts = 0, 0, {}
  for _, size in ipairs(STEPS) do
    total, all = total + t.found[size], all + t.planted[size]
    parts[#parts + 1] = string.format("+%.0f%%: %d of %d", (size - 1) * 100, t.found[size], t.planted[size])
  end
  return string.format("%d of %d (%s); %d a commit or two away; %d other", total, all, table.concat(parts, ", "),
    t.near, t.other)
end

-- reports = wb_steps(stdout, shas) : the steps `wb trend` printed, each {series, commit, verdict}
-- (its step lines name a commit by its first 10 digits)
local function wb_steps(stdout, shas)
  local full = {}
  for _, sha in ipairs(shas) do full[sha:sub(1, 10)] = sha end
  local out = {}
  for verdict, s, commit in stdout:gmatch("(%a+) [^\n]-· series_(%d+) · wall mean %b() at (%x+)") do
    out[#out + 1] = { series = tonumber(s), commit = full[commit] or commit, verdict = verdict }
  end
  return out
end

-- reports = asv_steps(html) : the regressions of asv publish's regressions.json, each {series,
-- commit, verdict} (the first commit after its jump; index.json maps asv's revisions to shas)
local function asv_steps(html)
  local index = wb.check(wb.json.read(html .. "/index.json"))
  local regressions = wb.check(wb.json.read(html .. "/regressions.json")).regressions
  local out = {}
  for _, r in ipairs(regressions) do
    local s = tonumber(r[1]:match("time_series_(%d+)$"))
    for _, jump in ipairs(r[7]) do
      out[#out + 1] = { series = s, commit = index.revision_to_hash[tostring(math.tointeger(jump[2]))],
        verdict = "regression" }
    end
  end
  return out
end

-- bytes, files = tree_size(path) : the total size of the regular files under path, and their number
local function tree_size(path)
  local st = wb.fs.lstat(path)
  if not st then return 0, 0 end
  if st.type == "file" then return st.size, 1 end
  if st.type ~= "dir" then return 0, 0 end
  local bytes, files = 0, 0
  for _, name in ipairs(wb.fs.list(path) or {}) do
    local b, f = tree_size(path .. "/" .. name)
    bytes, files = bytes + b, files + f
  end
  return bytes, files
end

-- The virtual environment beside the wb binary that tools/bench-deps.sh made (its .wb-pins is
-- written once asv runs), or nil and why not.
local function asv_venv()
  local venv = lib.wb:match("^(.*)/[^/]*$") .. "/asv-venv"
  if wb.fs.exists(venv .. "/.wb-pins") and wb.fs.exists(venv .. "/bin/asv") then return venv end
  return nil, "no asv in " .. venv .. " (`make bench` runs tools/bench-deps.sh, which installs it when it can)"
end

-- index, trend, stdout = wb_round(runs, out, rebuild) : the seconds of `wb history` (a new index,
-- or --rebuild) then of `wb trend -o out` on the records under runs, and wb trend's stdout
local function wb_round(runs, out, rebuild)
  local argv = { lib.wb, "history", "--root", runs }
  if rebuild then argv[#argv + 1] = "--rebuild" end
  local _, index = lib.run(argv)
  local res, trend = lib.run({ lib.wb, "trend", "--root", runs, "-o", out })
  return index, trend, res.stdout
end

-- seconds = asv_round(venv, dir) : `asv publish` of the asv project in dir, timed
local function asv_round(venv, dir)
  local _, seconds = lib.run({ venv .. "/bin/asv", "--config", dir .. "/asv.conf.json", "publish", "--no-pull" })
  return seconds
end

-- "12.3 s (11.9–13.0 s)" : the median of xs and their range
local function spread(xs)
  local s = wb.stats.summary(xs)
  if #xs == 1 then return wb.util.format_seconds(s.median) end
  return string.format("%s (%s–%s)", wb.util.format_seconds(s.median), wb.util.format_seconds(s.min),
    wb.util.format_seconds(s.max))
end

-- figures = side_by_side(dir, src, smoke) : on one history made in dir from the `wb bench` run
-- directory src, SIDE's rounds, interleaved, of wb history + wb trend and of asv publish (the
-- records converted to asv's format once, by bench/asv_convert.py, untimed)
local function side_by_side(dir, src, smoke)
  local size = smoke and SIDE.smoke or SIDE.full
  local t0 = wb.history.epoch_of("2026-01-01T00:00:00Z")
  local shas = git_history(dir .. "/repo", size.commits, t0)
  local runs, asv_dir = dir .. "/side", dir .. "/asv"
  history_records(src, runs, shas, size.series, t0)
  local venv, why = asv_venv()
  if venv then
    local ok, err = pcall(lib.run, { venv .. "/bin/python", "bench/asv_convert.py", runs, dir .. "/repo", asv_dir })
    if not ok then venv, why = nil, "bench/asv_convert.py failed: " .. tostring(type(err) == "table" and err.msg or err) end
  end
  local t = { index = {}, trend = {}, asv = {} }
  local stdout
  for round = 1, size.rounds do
    t.index[round], t.trend[round], stdout = wb_round(runs, dir .. "/trend", round > 1)
    if venv then
      local ok, seconds = pcall(asv_round, venv, asv_dir)
      if not ok then venv, why = nil, "asv publish failed: " .. tostring(type(seconds) == "table" and seconds.msg or seconds) end
      t.asv[round] = seconds
    end
  end
  local page = (wb.fs.stat(dir .. "/trend/index.html") or { size = 0 }).size
  local db = (wb.fs.stat(runs .. "/history.sqlite") or { size = 0 }).size
  local open, not_open = chromium_ready(dir .. "/trend/index.html")
  local fmt, bytes = wb.util.format_seconds, wb.util.format_bytes
  local figures = {
    { name = string.format("side by side, %d commits × %d benchmarks × %d samples: wb history (a new index of %d records)",
      size.commits, size.series, SAMPLES, size.commits), value = spread(t.index) },
    { name = "side by side: wb trend -o DIR (the index up to date: series, steps, page)", value = spread(t.trend) },
    { name = "side by side: wb's output: the trend page; the index", value = bytes(page) .. "; " .. bytes(db) },
    { name = "side by side: the trend page's open time in headless Chromium", value = open and fmt(open) or not_open,
      target = "< 2 s", met = open and open < 2 or nil },
    { name = "side by side: planted steps wb trend calls a regression at their commit",
      value = tally_text(tally(wb_steps(stdout, shas), shas, size.series)) },
  }
  if not venv then
    figures[#figures + 1] = { name = "side by side: asv publish", value = "skipped: " .. why:gsub("\n.*", "") }
    return figures
  end
  local wb_total, asv_total = {}, {}
  for round = 1, size.rounds do wb_total[round], asv_total[round] = t.index[round] + t.trend[round], t.asv[round] end
  local ratio = wb.stats.summary(asv_total).median / wb.stats.summary(wb_total).median
  local html_bytes, html_files = tree_size(asv_dir .. "/html")
  for _, f in ipairs({
    { name = "side by side: asv publish --no-pull (asv 0.6.4: reads the results, finds steps, writes html/)",
      value = spread(t.asv) },
    { name = "side by side: asv publish / (wb history + wb trend), medians", value = lib.ratio(ratio) },
    { name = "side by side: asv's output: html/", value = string.format("%s in %s files", bytes(html_bytes),
      wb.util.thousands(html_files)) },
    { name = "side by side: planted steps asv publish lists as a regression at their commit",
      value = tally_text(tally(asv_steps(asv_dir .. "/html"), shas, size.series)) },
  }) do figures[#figures + 1] = f end
  return figures
end

return {
  title = "Results history: index build for 10,000 records, the trend page of 1,000 series × 200 points, "
    .. "side by side with asv publish on the same data (targets: open in under 2 s)",
  run = function(opts)
    local dir = assert(wb.fs.tmpdir("wbbench", "/tmp"))
    local nrec = opts.smoke and 200 or 10000
    assert(wb.fs.mkdir_p(dir .. "/runs"))
    lib.run({ lib.wb, "bench", "runs=10", "warmup=0", "-o", dir .. "/src", "sleep 0.001" })
    lib.run({ lib.wb, "run", "tests/fixtures/recipes/history_copies.lua", dir .. "/src", dir .. "/runs", tostring(nrec) })
    local _, build = lib.run({ lib.wb, "history", "--root", dir .. "/runs" })
    local _, again = lib.run({ lib.wb, "history", "--root", dir .. "/runs" })
    local _, rebuild = lib.run({ lib.wb, "history", "--root", dir .. "/runs", "--rebuild" })
    local db = wb.fs.stat(dir .. "/runs/history.sqlite")
    local nseries, npoints = opts.smoke and 50 or 1000, opts.smoke and 20 or 200
    local t = wb.clock.timer()
    local html = wb.trend.html(synthetic(nseries, npoints), { out_dir = dir, roots = { "synthetic" } })
    local write = t:elapsed()
    assert(wb.fs.write(dir .. "/trend.html", html))
    local open, why = chromium_ready(dir .. "/trend.html")
    local ok, side = pcall(side_by_side, dir, dir .. "/src", opts.smoke)
    wb.fs.remove_tree(dir)
    if not ok then error(side, 0) end
    local figures = {
      { name = string.format("wb history: index %d records (a new index)", nrec),
        value = string.format("%s (%.2f ms per record)", wb.util.format_seconds(build), build / nrec * 1000) },
      { name = "wb history: the same records again (nothing changed)", value = wb.util.format_seconds(again) },
      { name = "wb history --rebuild", value = wb.util.format_seconds(rebuild) },
      { name = "index size", value = wb.util.format_bytes(db and db.size or 0) },
      { name = string.format("wb trend page of %d series × %d points: size, time to write", nseries, npoints),
        value = string.format("%s, %s", wb.util.format_bytes(#html), wb.util.format_seconds(write)) },
      { name = "the page's open time in headless Chromium (its script done, visible charts drawn)",
        value = open and wb.util.format_seconds(open) or why, target = "< 2 s", met = open and open < 2 or nil },
    }
    for _, f in ipairs(side) do figures[#figures + 1] = f end
    return {
      command = "build/wb run bench/run.lua only=history",
      figures = figures,
      notes = "The first figures: records are copies of one `wb bench` run of 10 samples (7 metrics each); the "
        .. "page of 1,000 synthetic series is written in-process. Side by side: a git repository of 200 real "
        .. "commits, one wb run directory per commit whose manifest holds 1,000 commands × 5 wall samples "
        .. "(2% noise per sample, 0.5% per commit; every tenth command steps up from a commit in the middle half, "
        .. "by 2%, 5%, 10% or 20% in turn), and the same samples as an asv 0.6.4 project (bench/asv_convert.py: "
        .. "asv.conf.json with environment_type existing, machine.json, benchmarks.json of 1,000 time benchmarks, "
        .. "one results file per commit in format version 2 with each result and its statistics computed by "
        .. "asv_runner's compute_stats, as `asv run` would). Each round runs wb history (a new index, then "
        .. "--rebuild), wb trend and asv publish in turn; the times are medians of the rounds (with their range). "
        .. "wb runs in one process; asv publish finds steps in a pool of as many processes as CPUs. "
        .. "What each tool calls a step differs: wb trend calls a regression when the 95% CI of the ratio "
        .. "(all samples of the segment before against all of the segment after) lies wholly beyond its 2% "
        .. "threshold; asv lists an upward jump only when the best value after it stays above the value "
        .. "before by more than 5% of it (the default regressions_thresholds) and more than the segments' "
        .. "mean deviation, so a +5% step is at the edge of asv's default as a +2% step is at wb's. A commit "
        .. "or two away: a planted step found, placed next to its commit by the noise; other: any further "
        .. "report (wb trend also names improvements, asv lists only regressions). On the next commit wb "
        .. "history indexes only the new record; asv publish "
        .. "reads every results file again. Load average at the end: " .. lib.loadavg() .. ".",
    }
  end,
}
