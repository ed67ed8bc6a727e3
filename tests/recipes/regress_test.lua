local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local GIT_ENV = { GIT_AUTHOR_NAME = "wb test", GIT_AUTHOR_EMAIL = "wb@example.org", GIT_COMMITTER_NAME = "wb test",
  GIT_COMMITTER_EMAIL = "wb@example.org", GIT_CONFIG_GLOBAL = "/dev/null", GIT_CONFIG_NOSYSTEM = "1" }

local function git(repo, ...)
  local res = assert(proc.run { argv = { "git", "-C", repo, ... }, env = GIT_ENV, stdout = "capture", stderr = "capture" })
  assert(res.ok, res.stderr)
  return res.stdout
end

-- A repository with an initial commit and commits 1..8 of a C program sleeping 20 ms (26 ms
-- from commit 5 on, +30%); commit 7 does not compile. Returns repo, shas[1..8].
local fixture
local function repo_fixture()
  if fixture then return table.unpack(fixture) end
  local repo = T.tmpdir() .. "/repo"
  assert(fs.mkdir_p(repo))
  git(repo, "init", "-q")
  assert(fs.write(repo .. "/Makefile", "app: app.c\n\tcc -O1 -o app app.c\n"))
  assert(fs.write(repo .. "/README", "regress fixture\n"))
  git(repo, "add", "-A")
  git(repo, "commit", "-qm", "initial")
  local shas = {}
  for i = 1, 8 do
    local ms = i >= 5 and 26 or 20
    assert(fs.write(repo .. "/app.c", string.format([[
#define _POSIX_C_SOURCE 200809L
#include <time.h>
/* revision %d */
%s
int main(void) { struct timespec t = {0, %dL * 1000000L}; nanosleep(&t, 0); return 0; }
]], i, i == 7 and "this line is not C" or "", ms)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "commit " .. i .. (i == 5 and ": slower sleep" or ""))
    shas[i] = git(repo, "rev-parse", "HEAD"):match("%x+")
  end
  fixture = { repo, shas }
  return repo, shas
end

local function run_regress(args, tmp)
  return T.wb({ "regress", table.unpack(args) }, { env = { TMPDIR = tmp }, timeout = 120 })
end

local function worktrees(repo)
  local n = 0
  for _ in git(repo, "worktree", "list", "--porcelain"):gmatch("worktree ") do n = n + 1 end
  return n
end

T.case("the +30% step is named at commit 5; the build failure is recorded and skipped; no worktree remains", function()
  local repo, shas = repo_fixture()
  local d, tmp = T.tmpdir(), T.tmpdir()
  local res = run_regress({ "repo=" .. repo, "range=HEAD~8..HEAD", "build=[make, -s]", "bench=[./app]", "runs=5",
    "warmup=1", "machine_name=testbox", "results_dir=" .. d .. "/results", "-o", d .. "/run" }, tmp)
  T.eq(res.code, 0, res.stderr)
  local doc = assert(json.read(d .. "/run/regress.json"))
  T.eq(doc.schema_name, "wb.regress")
  T.eq(doc.schema_version, 1)
  T.eq(doc.machine, "testbox")
  T.eq(doc.range, "HEAD~8..HEAD")
  T.eq({ doc.measured, doc.reused }, { 8, 0 })
  T.eq(#doc.commits, 8)
  for i, row in ipairs(doc.commits) do
    T.eq(row.commit, shas[i])
    T.eq(row.status, i == 7 and "build_failed" or "success", "commit " .. i)
    T.ok(fs.exists(d .. "/results/testbox/" .. shas[i] .. ".json"), "result file of commit " .. i)
  end
  T.eq(doc.commits[7].mean, json.null)
  -- each measured commit's record carries its runs' interference evidence beside their wall times
  local measured = 0
  for _, r in ipairs(T.manifest(d .. "/run").runs) do
    if r.status == "success" then
      measured = measured + 1
      local runq = r.samples.runq_seconds
      T.ok(type(runq) == "table" and #runq == #r.samples.wall_mean_seconds, r.name .. ": run-queue delay per run")
    end
  end
  T.eq(measured, 7)
  local failed = assert(json.read(d .. "/results/testbox/" .. shas[7] .. ".json"))
  T.eq(failed.status, "build_failed")
  T.ok(failed.build_exit_code ~= 0, "build exit code recorded")
  T.match(failed.build_log_tail, "error")
  T.eq(failed.subject, "commit 7")
  local ok5 = assert(json.read(d .. "/results/testbox/" .. shas[5] .. ".json"))
  T.eq({ ok5.status, ok5.n, #ok5.samples, ok5.subject }, { "success", 5, 5, "commit 5: slower sleep" })
  T.ok(ok5.ci_lo <= ok5.mean and ok5.mean <= ok5.ci_hi, "CI brackets the mean")
  T.ok(ok5.mean > 0.024 and ok5.mean < 0.2, "commit 5 sleeps 26 ms: " .. ok5.mean)
  local step
  for _, st in ipairs(doc.steps) do
    if st.commit == shas[5] then step = st end
  end
  T.ok(step, "a step at commit 5")
  T.eq(step.kind, "regression")
  T.ok(step.ratio > 1.1 and step.ratio < 1.6, "ratio " .. step.ratio)
  T.eq(step.significant, true)
  T.ok(step.p_value < 0.05)
  T.ok(step.ci_lo > 1.02, "the CI clears the threshold") -- judged by wb.verdict, the one engine
  T.match(step.reason, "^1%.%d%d× slower: p = [%d.e-]+.*: regression")
  T.eq(step.previous_commit, shas[4])
  T.eq(step.candidates, { shas[5] })
  T.eq(step.subject, "commit 5: slower sleep")
  T.eq(doc.regressions >= 1, true)
  local md = fs.read(d .. "/run/regress.md")
  T.match(md, "^# Regression hunt: `%./app`")
  T.ok(md:find("- `" .. shas[5]:sub(1, 10) .. "` commit 5: slower sleep — regression: ", 1, true), md)
  T.match(md, "|   7 | `" .. shas[7]:sub(1, 10) .. "` | [%d-]+ | commit 7 +| build failed +| +– |")
  T.match(md, "|   5 | `" .. shas[5]:sub(1, 10) .. "` | .* | success +| +[%d.]+ %[[%d.]+–[%d.]+%] | +5 | %+%d+%.%d%% regression |")
  local chart = fs.read(d .. "/run/regress.svg")
  T.match(chart, "^<svg ")
  T.ok(chart:find("at " .. shas[5]:sub(1, 7), 1, true), "the step is marked on the chart")
  T.eq(T.count(chart, "<circle") - 1, 7, "one point per measured commit (plus the legend's)")
  T.ok(chart:find("build failed", 1, true), "the failed build is marked")
  T.match(fs.read(d .. "/run/report.html"), "<h2>Steps</h2>")
  T.ok(res.stdout:find(md, 1, true) == 1, "stdout is the Markdown report")
  T.eq(worktrees(repo), 1)
  T.eq(fs.list(tmp), {}, "temporary directories removed")
  T.eq(T.manifest(d .. "/run").status, "complete")
end)

T.case("results accumulate: measured commits are reused, new ones measured, force re-measures", function()
  local repo, shas = repo_fixture()
  local d, tmp = T.tmpdir(), T.tmpdir()
  local k = 0
  local function run(range, ...)
    k = k + 1
    local dir = d .. "/run" .. k
    local args = { "repo=" .. repo, "range=" .. range, "bench=[./app]", "runs=3", "warmup=0", "machine_name=acc",
      "results_dir=" .. d .. "/results", "-o", dir, ... }
    local res = run_regress(args, tmp)
    T.eq(res.code, 0, res.stderr)
    return assert(json.read(dir .. "/regress.json")), res
  end
  local first, r1 = run("HEAD~3..HEAD")
  T.eq({ first.measured, first.reused }, { 3, 0 })
  local files = {}
  for i = 6, 8 do files[i] = fs.read(d .. "/results/acc/" .. shas[i] .. ".json") end
  local again, r2 = run("HEAD~3..HEAD")
  T.eq({ again.measured, again.reused }, { 0, 3 })
  T.eq(T.count(r2.stderr, " reused ("), 3)
  T.ok(r2.wall < r1.wall, string.format("reusing (%.3f s) is faster than measuring (%.3f s)", r2.wall, r1.wall))
  for i = 6, 8 do T.eq(fs.read(d .. "/results/acc/" .. shas[i] .. ".json"), files[i], "result " .. i .. " untouched") end
  T.eq(again.commits[1].mean, first.commits[1].mean)
  T.eq(again.commits[2].status, "build_failed")
  T.eq(T.count(fs.read(d .. "/run1/events.jsonl"), '"event":"commit_measured"'), 3)
  T.eq(T.count(fs.read(d .. "/run2/events.jsonl"), '"event":"commit_reused"'), 3)
  T.eq(T.manifest(d .. "/run2").runs[1].reused, true)
  local wider = run("HEAD~5..HEAD")
  T.eq({ wider.measured, wider.reused }, { 2, 3 })
  T.eq(wider.commits[1].commit, shas[4])
  local forced = run("HEAD~1..HEAD", "force=true")
  T.eq({ forced.measured, forced.reused }, { 1, 0 })
  T.ok(fs.read(d .. "/results/acc/" .. shas[8] .. ".json") ~= files[8], "force=true measured commit 8 again")
  local listed = run("[" .. shas[2] .. "," .. shas[6] .. "]")
  T.eq({ listed.measured, listed.reused }, { 1, 1 })
  T.eq(listed.commits[2].commit, shas[6])
  T.eq(worktrees(repo), 1)
  T.eq(fs.list(tmp), {})
end)

T.case("--confirm: a real step is borne out by an interleaved re-run, a step the stored results made up is not", function()
  local repo, shas = repo_fixture()
  local d, tmp = T.tmpdir(), T.tmpdir()
  local function run(name, commits, ...)
    local list = {}
    for i, k in ipairs(commits) do list[i] = shas[k] end
    local res = run_regress({ "repo=" .. repo, "range=[" .. table.concat(list, ",") .. "]", "bench=[./app]",
      "runs=6", "warmup=1", "machine_name=conf", "results_dir=" .. d .. "/results", "-o", d .. "/" .. name, ... }, tmp)
    return res, json.read(d .. "/" .. name .. "/regress.json")
  end
  -- commits 1-4 all sleep 20 ms; the stored results of 3 and 4 are then made 3x slower, as a
  -- busy machine could have made them: a step at 3 that the code never had
  local res = run("measured", { 1, 2, 3, 4 })
  T.eq(res.code, 0, res.stderr)
  for _, k in ipairs({ 3, 4 }) do
    local path = d .. "/results/conf/" .. shas[k] .. ".json"
    local r = assert(json.read(path))
    for _, key in ipairs({ "mean", "median", "min", "max", "ci_lo", "ci_hi" }) do r[key] = r[key] * 3 end
    for i, x in ipairs(r.samples) do r.samples[i] = x * 3 end
    for i, x in ipairs(r.evidence.wall_own) do r.evidence.wall_own[i] = x * 3 end
    assert(fs.write(path, json.encode(r)))
  end
  local doc
  res, doc = run("false", { 1, 2, 3, 4 }, "fail_on_regression=true", "--confirm")
  T.eq(res.code, 0, "an unconfirmed step does not fail the gate: " .. res.stderr)
  T.eq(#doc.steps, 1, fs.read(d .. "/false/regress.md"))
  local st = doc.steps[1]
  T.eq({ st.commit, st.verdict, st.confirmed }, { shas[3], "regression", false })
  T.eq(st.confirmation.order, "interleaved")
  T.ok(st.confirmation.verdict ~= "regression", st.confirmation.reason)
  T.between(st.confirmation.ratio, 0.9, 1.1, "the same code, interleaved")
  T.eq({ doc.regressions, doc.unconfirmed, doc.confirmed }, { 0, 1, true })
  T.match(fs.read(d .. "/false/regress.md"), "confirmed by an interleaved re%-run: no %(")
  T.match(res.stderr, "%[confirm 1%] [%x]+%.%.[%x]+: building both and benchmarking them interleaved")
  T.ok(fs.exists(d .. "/false/logs/build-confirm-" .. shas[3]:sub(1, 10) .. ".log"), "the confirmation's build log")
  -- commits 3-6 measured again: the real +30% at 5, confirmed; the gate fails on it
  res, doc = run("real", { 3, 4, 5, 6 }, "fail_on_regression=true", "confirm=true", "force=true")
  T.eq(res.code, 1, res.stderr)
  st = nil
  for _, x in ipairs(doc.steps) do if x.commit == shas[5] then st = x end end
  T.ok(st and st.confirmed, st and st.confirmation and st.confirmation.reason or "no step at commit 5")
  T.eq(st.confirmation.verdict, "regression")
  T.between(st.confirmation.ratio, 1.1, 1.6, "26 ms against 20 ms")
  T.eq(doc.regressions, 1)
  T.match(fs.read(d .. "/real/regress.md"), "%+%d+%.%d%% regression, confirmed |")
  T.eq(worktrees(repo), 1)
  T.eq(fs.list(tmp), {}, "the confirmation's worktrees removed")
  -- a recipe without a confirmation step refuses the flag
  local other = T.wb({ "demo", "--confirm" })
  T.eq(other.code, 2)
  T.match(other.stderr, "^wb: %-%-confirm: recipe 'demo' has no confirmation step")
end)

T.case("an interrupt removes the worktree and leaves no result", function()
  local repo, shas = repo_fixture()
  local d, tmp = T.tmpdir(), T.tmpdir()
  local p <close> = assert(proc.spawn { argv = { T.wb_binary(), "regress", "repo=" .. repo, "range=HEAD~1..HEAD",
    "build=[]", "bench=[sleep, '10']", "runs=1", "warmup=0", "machine_name=intr", "results_dir=" .. d .. "/results",
    "-o", d .. "/run" }, env = { TMPDIR = tmp }, stdout = "null", stderr = "capture" })
  local t = wb.clock.timer()
  T.wait_until("the worktree", 20, function() return #fs.glob(tmp .. "/wb-regress.*/*/app.c") > 0 end)
  wb.clock.sleep(0.2)
  T.eq(worktrees(repo), 2, "the worktree exists while the benchmark runs")
  p:kill()
  local res = p:wait()
  T.ok(res.code ~= 0, "wb exits non-zero")
  T.ok(t:elapsed() < 9, "stopped before the 10 s benchmark ended")
  T.eq(worktrees(repo), 1)
  T.eq(fs.list(tmp), {})
  T.ok(not fs.exists(d .. "/results/intr/" .. shas[8] .. ".json"), "no result for the interrupted commit")
  T.eq(T.manifest(d .. "/run").status, "interrupted")
end)

T.case("usage errors: no benchmark, unknown commit, missing repository", function()
  local repo = repo_fixture()
  local d = T.tmpdir()
  local res = run_regress({ "repo=" .. repo, "-o", d .. "/a" }, d)
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: regress: which benchmark%?")
  res = run_regress({ "repo=" .. repo, "range=[no-such-rev]", "bench=[./app]", "-o", d .. "/b" }, d)
  T.eq(res.code, 2)
  T.eq(res.stderr, "wb: regress: range: 'no-such-rev' is not a commit of " .. repo .. "\n")
  res = run_regress({ "repo=" .. d .. "/nothing", "bench=[./app]", "-o", d .. "/c" }, d)
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: regress: repo: .*No such file or directory")
end)
