-- wb.regress in-process: commit listing on a small git repository, stored results and their reuse,
-- the document's steps from planted per-commit samples (no benchmark runs), and its reports. The
-- recipe end to end (worktrees, builds, benchmarks, interrupts): tests/recipes/regress_test.lua.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc
local regress = require "wb.regress"

local GIT_ENV = { GIT_AUTHOR_NAME = "t", GIT_AUTHOR_EMAIL = "t@example.org", GIT_COMMITTER_NAME = "t",
  GIT_COMMITTER_EMAIL = "t@example.org", GIT_CONFIG_GLOBAL = "/dev/null", GIT_CONFIG_NOSYSTEM = "1" }

-- repo, shas = repository(n) : a repository of n commits "c1".."cn", shas oldest first
local function repository(n)
  local repo = T.tmpdir()
  local function git(...)
    local res = assert(proc.run { argv = { "git", "-C", repo, ... }, env = GIT_ENV, stdout = "capture", stderr = "capture" })
    assert(res.ok, res.stderr)
    return res.stdout
  end
  git("init", "-q")
  local shas = {}
  for i = 1, n do
    assert(fs.write(repo .. "/f", tostring(i)))
    git("add", "f")
    git("commit", "-qm", "c" .. i)
    shas[i] = git("rev-parse", "HEAD"):match("%x+")
  end
  return repo, shas
end

local function hunt(dir, over)
  local h = { repo = "/nonexistent", machine = "m", dir = dir, build = {}, bench = { "./app" }, runs = 4, warmup = 0,
    seed = 1, ci_level = 0.95, resamples = 500, threshold = 0.05, alpha = 0.05, min_size = 2, first_parent = true,
    skip_existing = true, force = false }
  for k, v in pairs(over or {}) do h[k] = v end
  return h
end

-- a stored result of commit cm measured as samples (nil: its build failed)
local function store(cm, h, samples)
  local r = { schema_name = "wb.regress.result", schema_version = 1, commit = cm.sha, build_command = h.build,
    bench_command = h.bench, status = samples and "success" or "build_failed", measured_at_utc = "2024-01-01T00:00:00Z" }
  if samples then
    local sum = 0
    for _, x in ipairs(samples) do sum = sum + x end
    r.n, r.mean, r.median, r.samples = #samples, sum / #samples, samples[(#samples + 1) // 2], samples
    r.ci_lo, r.ci_hi, r.stddev = r.mean * 0.99, r.mean * 1.01, 0
  end
  assert(fs.write(cm.path, json.encode(r)))
end

T.case("commits: a range oldest first, a list in its order, bad revisions are usage errors", function()
  local repo, shas = repository(4)
  local cs = regress.commits(repo, "HEAD~3..HEAD", true)
  T.eq({ #cs, cs[1].sha, cs[3].sha, cs[3].subject, cs[3].short }, { 3, shas[2], shas[4], "c4", shas[4]:sub(1, 10) })
  T.match(cs[1].date, "^%d%d%d%d%-%d%d%-%d%dT")
  local listed = regress.commits(repo, { shas[3], "HEAD~3" }, true)
  T.eq({ listed[1].sha, listed[2].sha }, { shas[3], shas[1] })
  T.raises(function() regress.commits(repo, { "nope" }, true) end, "range: 'nope' is not a commit of")
  T.raises(function() regress.commits(repo, "nope..HEAD", true) end, "(it has 4 commits; range=HEAD measures them all)")
  T.eq(regress.default_range(repo), "HEAD")
  T.eq(regress.runs_root(repo), nil, "the tests do not run inside the repository")
end)

T.case("plan: a stored result is reused only for the same commands, without force", function()
  local dir = T.tmpdir()
  local commits = { { sha = ("a"):rep(40), short = ("a"):rep(10) }, { sha = ("b"):rep(40), short = ("b"):rep(10) } }
  local h = hunt(dir)
  regress.plan(commits, h)
  T.eq(commits[1].path, dir .. "/" .. ("a"):rep(40) .. ".json")
  store(commits[1], h, { 1, 2 })
  assert(fs.write(commits[2].path, '{"schema_name": "other"}'))
  local names, todo = regress.plan(commits, h)
  T.eq(names, { ("a"):rep(10), ("b"):rep(10) })
  T.eq(#todo, 1)
  T.eq({ todo[1].name, todo[1].argv }, { ("b"):rep(10), { "./app" } })
  T.eq(commits[1].reuse.status, "success")
  for _, over in ipairs({ { bench = { "./other" } }, { build = { "make" } }, { force = true }, { skip_existing = false } }) do
    local _, again = regress.plan(commits, hunt(dir, over))
    T.eq(#again, 2, json.encode(over))
  end
end)

T.case("document: the planted step is found at its first commit and judged; failed builds are left out", function()
  local dir = T.tmpdir()
  local h = hunt(dir)
  local commits = {}
  for i = 1, 7 do commits[i] = { sha = string.format("%040d", i), short = string.format("%010d", i), date = "2024-01-0" .. i,
    subject = "s" .. i } end
  regress.plan(commits, h)
  local base = { 0.0100, 0.0101, 0.0099, 0.0102, 0.0098, 0.0100 }
  for i, cm in ipairs(commits) do
    local samples
    if i ~= 3 then
      samples = {}
      for j, x in ipairs(base) do samples[j] = x * (i >= 5 and 1.5 or 1) end
    end
    store(cm, h, samples)
  end
  local doc = regress.document(commits, h, "HEAD~7..HEAD", 0, 7)
  T.eq({ doc.schema_name, doc.measured, doc.reused, doc.machine, #doc.commits }, { "wb.regress", 0, 7, "m", 7 })
  T.eq({ doc.commits[3].status, doc.commits[3].mean }, { "build_failed", json.null })
  T.eq(#doc.steps, 1)
  local st = doc.steps[1]
  T.eq({ st.commit, st.previous_commit, st.kind, st.significant }, { commits[5].sha, commits[4].sha, "regression", true })
  T.near(st.ratio, 1.5, 1e-9)
  T.eq(st.candidates, { commits[5].sha })
  T.eq(doc.regressions, 1)
  local md = regress.markdown(doc)
  T.match(md, "^# Regression hunt: `%./app`\n")
  T.match(md, "\n%- `0000000005` s5 — regression: 10%.000 → 15%.000 ms %(%+50%.0%%; ")
  T.match(md, "|   3 | `0000000003` | 2024%-01%-03 | s3 +| build failed +| +– |")
  local chart = regress.chart(doc)
  T.eq(T.count(chart, "<circle"), 6 + 1, "one point per measured commit, plus the legend's")
  T.match(chart, "%+50%.0%% at 0000000")
  T.match(regress.html(doc, chart), "<h2>Steps</h2>")
end)

T.case("document: a flat series has no step", function()
  local h = hunt(T.tmpdir())
  local commits = {}
  for i = 1, 4 do commits[i] = { sha = string.format("%040d", i), short = string.format("%010d", i), date = "2024-01-01",
    subject = "s" } end
  regress.plan(commits, h)
  for _, cm in ipairs(commits) do store(cm, h, { 0.01, 0.0101, 0.0099, 0.01 }) end
  local doc = regress.document(commits, h, "HEAD", 4, 0)
  T.eq({ #doc.steps, doc.regressions }, { 0, 0 })
  T.match(regress.markdown(doc), "No step found in the series of means%.")
end)

T.case("machine_info: written once, never overwritten", function()
  local path = T.tmpdir() .. "/machine.json"
  regress.machine_info(path, "box")
  local m = assert(json.read(path))
  T.eq(m.machine, "box")
  T.ok(m.cpu_count >= 1 and m.memory_kb > 0, "cpu_count and memory_kb from /proc")
  regress.machine_info(path, "other")
  T.eq(assert(json.read(path)).machine, "box")
end)
