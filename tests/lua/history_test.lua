-- wb.history and `wb history` (docs/history.md): run directories as self-contained records, the
-- SQLite index built from them (idempotent, rebuilt to the same answers, safe beside concurrent
-- writers and a kill -9), and the command's bad input.
local T = require "wb.test"
local fs = require "wb.fs"
local json = require "wb.json"
local proc = require "wb.proc"
local history = require "wb.history"
local sqlite = require "wb.sqlite"

local sh = T.sh

-- A git repository with one commit on branch main, and its runs/ directory.
local function repo()
  local dir = T.tmpdir()
  sh("git init -q -b main . && git config user.email t@t && git config user.name t && echo 1 > f && git add f && git commit -qm one", dir)
  return dir, dir .. "/runs"
end

local function bench(dir, out, args)
  local argv = { "bench", "-o", out, "runs=3", "warmup=0" }
  for _, a in ipairs(args or { "sleep 0.001" }) do argv[#argv + 1] = a end
  local res = T.wb(argv, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  return out
end

-- A copy of run directory src as root/name, its creation time set to utc.
local function copy_run(src, root, name, utc)
  local dst = root .. "/" .. name
  assert(fs.mkdir_p(dst))
  local m = assert(json.read(src .. "/manifest.json"))
  m.created_at_utc = utc
  assert(fs.write(dst .. "/manifest.json", json.encode(m)))
  assert(fs.write(dst .. "/preflight.json", assert(fs.read(src .. "/preflight.json"))))
  return dst
end

local function count(db_path, sql)
  local db = assert(sqlite.open(db_path))
  local rows = assert(db:query(sql))
  db:close()
  return rows[1].n
end

T.case("a run directory is a self-contained record: commit, dirty state, branch, machine, samples, load", function()
  local dir, runs = repo()
  local a = bench(dir, runs .. "/a")
  local rec = assert(history.record(a))
  T.eq(rec.recipe, "bench")
  T.eq(rec.status, "complete")
  T.eq(rec.commit, sh("git rev-parse HEAD", dir))
  T.eq(rec.dirty, false)
  T.eq(rec.branch, "main")
  T.eq(rec.machine.cpu_count, tonumber(sh("nproc --all")))
  T.match(rec.machine.class, "%d+ CPUs?, %d+ GiB")
  T.ok(rec.config_hash and #rec.config_hash > 0, "the configuration's hash")
  T.eq(rec.epoch, history.epoch_of(rec.created_at))
  T.eq(rec.report, "report.html")
  local wall
  for _, m in ipairs(rec.metrics) do
    if m.name == "sleep 0.001" and m.metric == "wall mean" then wall = m end
  end
  T.ok(wall, "the command's wall mean")
  T.eq(#wall.samples, 3)
  T.eq(wall.unit, "s")
  T.ok(type(wall.runq_mean) == "number", "run-queue evidence beside the wall samples")
  T.eq(#wall.evidence.runq, 3)
  -- a changed tracked file: dirty; a detached HEAD: no branch
  sh("echo 2 > f", dir)
  T.eq(assert(history.record(bench(dir, runs .. "/b"))).dirty, true)
  sh("git checkout -q -- f && git checkout -q --detach", dir)
  T.eq(assert(history.record(bench(dir, runs .. "/c"))).branch, nil)
  T.eq(history.epoch_of("1970-01-02T00:00:01Z"), 86401)
  T.eq(history.epoch_of("2024-03-01T00:00:00Z"), 1709251200)
end)

T.case("wb history indexes new, changed and removed records; unreadable ones are named, planted links not followed", function()
  local dir, runs = repo()
  local a = bench(dir, runs .. "/a")
  copy_run(a, runs, "copy", "2020-01-01T00:00:00Z")
  assert(fs.mkdir_p(runs .. "/broken"))
  assert(fs.write(runs .. "/broken/manifest.json", "{ not json"))
  local outside = bench(dir, T.tmpdir() .. "/outside")
  assert(fs.symlink(outside, runs .. "/planted"))
  local res = T.wb({ "history" }, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "^history: 3 records from runs in runs/history%.sqlite %(3 new, 0 changed, 0 removed, 0 unchanged%)\n$")
  T.match(res.stderr, "^history: unreadable, left out: [^\n]*/broken: [^\n]*manifest%.json")
  T.eq(T.count(res.stderr, "\n"), 1, res.stderr)
  res = T.wb({ "history" }, { cwd = dir })
  T.match(res.stdout, "%(0 new, 0 changed, 0 removed, 3 unchanged%)")
  copy_run(a, runs, "copy", "2021-01-01T00:00:00Z")
  res = T.wb({ "history" }, { cwd = dir })
  T.match(res.stdout, "%(0 new, 1 changed, 0 removed, 2 unchanged%)")
  assert(fs.remove_tree(runs .. "/copy"))
  res = T.wb({ "history", "records" }, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  T.eq(T.count(res.stdout, "| bench "), 1, res.stdout)
  T.eq(T.count(res.stdout, "planted"), 0, res.stdout)
  res = T.wb({ "history", "series", "--metric", "wall mean", "--json" }, { cwd = dir })
  local series = json.decode(res.stdout)
  T.eq(#series, 1)
  T.eq(series[1].name, "sleep 0.001")
  T.eq(#series[1].points, 1)
  T.eq(#series[1].points[1].samples, 3)
  T.eq(#series[1].points[1].evidence.runq, 3)
end)

-- The records and series of an index, without the row ids an insertion order gives.
local function answers(db_path)
  local index = assert(history.open(db_path))
  local recs = index:records()
  for _, r in ipairs(recs) do r.id = nil end
  local series = index:series()
  for _, s in ipairs(series) do
    for _, p in ipairs(s.points) do p.record_id = nil end
  end
  index:close()
  return { records = recs, series = series }
end

T.case("deleting the index and building it again gives the same answers", function()
  local dir, runs = repo()
  local a = bench(dir, runs .. "/a", { "sleep 0.001", "sleep 0.002" })
  for i = 1, 30 do copy_run(a, runs, string.format("c%02d", i), string.format("2026-01-%02dT12:00:00Z", i)) end
  T.eq(T.wb({ "history" }, { cwd = dir }).code, 0)
  local before = answers(runs .. "/history.sqlite")
  T.eq(#before.records, 31)
  T.eq(#before.series, 14) -- 7 metrics of 2 commands on one machine class
  T.eq(#before.series[1].points, 31)
  local res = T.wb({ "history", "--rebuild" }, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "%(31 new,")
  T.ok(T.deep_equal(answers(runs .. "/history.sqlite"), before), "the rebuilt index answers as before")
end)

-- Run directories enough for an update to take a while: copies of one real run.
local function many_runs(n)
  local dir, runs = repo()
  local a = bench(dir, runs .. "/a")
  for i = 1, n do copy_run(a, runs, string.format("c%04d", i), string.format("2025-%02d-%02dT00:00:00Z", i % 12 + 1, i % 28 + 1)) end
  return dir, runs, n + 1
end

T.case("two wb history and a wb bench at once: nothing lost, the index intact", function()
  local dir, runs, total = many_runs(800)
  local argv = { T.wb_binary(), "history" }
  local ps = {}
  for i = 1, 2 do ps[i] = assert(proc.spawn { argv = argv, cwd = dir, stdout = "capture", stderr = "capture" }) end
  ps[3] = assert(proc.spawn { argv = { T.wb_binary(), "bench", "runs=3", "warmup=0", "sleep 0.001" }, cwd = dir,
    stdout = "capture", stderr = "capture" })
  for _, p in ipairs(ps) do
    local res = p:wait()
    T.eq(res.code, 0, res.stderr)
  end
  local res = T.wb({ "history" }, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "^history: " .. (total + 1) .. " records")
  T.eq(count(runs .. "/history.sqlite", "SELECT count(*) AS n FROM records"), total + 1)
  local db = assert(sqlite.open(runs .. "/history.sqlite"))
  T.eq(assert(db:query("PRAGMA integrity_check"))[1].integrity_check, "ok")
  T.eq(assert(db:query("PRAGMA journal_mode"))[1].journal_mode, "delete")
  db:close()
end)

T.case("a kill -9 in the middle of an update: the next update repairs the index", function()
  local dir, runs, total = many_runs(1500)
  local db_path = runs .. "/history.sqlite"
  local partial = 0
  for _ = 1, 3 do
    local p = assert(proc.spawn { argv = { T.wb_binary(), "history", "--rebuild" }, cwd = dir, stdout = "null", stderr = "null" })
    -- the first batch committed: the kill lands inside the update
    T.wait_until("the first batch", 120, function()
      local st = fs.stat(db_path)
      return not p:running() or (st and st.size > 64 * 1024)
    end)
    p:kill(9)
    p:wait()
    local n = count(db_path, "SELECT count(*) AS n FROM records")
    if n < total then partial = partial + 1 end
    T.ok(n % history.BATCH == 0 or n == total, "whole batches only: " .. n)
  end
  T.ok(partial >= 1, "at least one kill landed inside an update")
  local res = T.wb({ "history" }, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "^history: " .. total .. " records")
  T.eq(count(db_path, "SELECT count(*) AS n FROM records"), total)
  T.eq(count(db_path, "SELECT count(DISTINCT record_id) AS n FROM metrics"), total)
end)

T.case("bad input: one line, exit 2; a planted link or FIFO as the index is neither followed nor waited on", function()
  local dir, runs = repo()
  bench(dir, runs .. "/a")
  local res = T.wb({ "history", "--bogus" }, { cwd = dir })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: history: unknown argument '%-%-bogus'")
  res = T.wb({ "history", "--root", dir .. "/nope" }, { cwd = dir })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: history: root [^\n]*/nope: No such file or directory\n$")
  res = T.wb({ "history", "--root" }, { cwd = dir })
  T.eq(res.code, 2)
  T.match(res.stderr, "%-%-root needs a value")
  local target = T.tmpdir() .. "/target.sqlite"
  assert(fs.symlink(target, runs .. "/link.sqlite"))
  res = T.wb({ "history", "--db", runs .. "/link.sqlite" }, { cwd = dir })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: history: [^\n]*link%.sqlite: not a regular file %(link%)")
  T.eq(fs.lstat(target), nil)
  sh("mkfifo runs/fifo.sqlite", dir)
  res = T.wb({ "history", "--db", runs .. "/fifo.sqlite" }, { cwd = dir, timeout = 30 })
  T.eq(res.code, 2)
  T.match(res.stderr, "not a regular file %(other%)")
  res = T.wb({ "history", "--db", runs .. "/link.sqlite", "--rebuild" }, { cwd = dir })
  T.eq(res.code, 2)
  T.eq(fs.lstat(runs .. "/link.sqlite").type, "link")
end)

T.case("the index is queryable by the sqlite3 shell: the points view and samples through json_each", function()
  local shell = proc.run { argv = { "sqlite3", "-version" }, stdout = "capture", stderr = "capture" }
  if not shell or not shell.ok then T.skip("the sqlite3 shell (Debian package sqlite3) is not installed") end
  local dir, runs = repo()
  bench(dir, runs .. "/a")
  T.eq(T.wb({ "history" }, { cwd = dir }).code, 0)
  local out = sh([[sqlite3 runs/history.sqlite "SELECT count(*) FROM points p, json_each(p.samples) WHERE p.metric = 'wall mean'"]], dir)
  T.eq(out, "3")
end)

T.case("wb regress's per-commit results are history records: the hunt and the history are one store", function()
  local dir = repo()
  for i = 2, 3 do sh("echo " .. i .. " > f && git commit -qam c" .. i, dir) end
  local res = T.wb({ "regress", "bench=[sleep, '0.01']", "build=[]", "runs=3", "warmup=0", "range=HEAD~2..HEAD" }, { cwd = dir, timeout = 300 })
  T.eq(res.code, 0, res.stderr)
  res = T.wb({ "history", "series", "--root", ".git/wb/runs", "--json" }, { cwd = dir })
  T.eq(res.code, 0, res.stderr)
  local series = json.decode(res.stdout)
  T.eq(#series, 1, res.stdout)
  T.eq(series[1].recipe, "regress")
  T.eq(series[1].name, "sleep 0.01")
  T.eq(series[1].metric, "wall mean")
  T.eq(#series[1].points, 2) -- HEAD~2..HEAD: two commits
  T.eq(series[1].points[2].commit, sh("git rev-parse HEAD", dir))
  T.eq(#series[1].points[2].samples, 3)
  T.eq(#series[1].points[2].evidence.runq, 3)
end)

T.case("no root, or --rebuild of a file that is no index: one line, exit 2, nothing deleted", function()
  local dir, runs = repo()
  bench(dir, runs .. "/a")
  local res = T.wb({ "history" }, { cwd = dir, env = { WB_HISTORY = ":" } })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: history: no root")
  assert(fs.write(runs .. "/notes.json", "{}"))
  res = T.wb({ "history", "--db", runs .. "/notes.json", "--rebuild" }, { cwd = dir })
  T.eq(res.code, 2)
  T.match(res.stderr, "not an SQLite database")
  T.eq(fs.read(runs .. "/notes.json"), "{}")
end)
