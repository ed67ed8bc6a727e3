-- Fault injection: stubborn process trees, interrupts and resume, a full disk, a recipe failing
-- half-way, children that close stdout early or write a 1 GiB line.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local RECIPE = "tests/fixtures/recipes/campaign.lua"

local function lines_of(text)
  local out = {}
  for l in text:gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

local function lines(path) return lines_of(fs.read(path) or "") end

local function alive(marker)
  local res = proc.run { argv = { "pgrep", "-f", marker }, stdout = "capture" }
  return res.stdout
end

T.case("50 timeouts in a row of trees whose grandchildren ignore SIGTERM: none survive", function()
  local marker = "wbfault" .. wb.clock.now()
  local script = "trap '' TERM; for i in 1 2 3; do (trap '' TERM; exec -a " .. marker .. " sleep 60) & done; " ..
      "exec -a " .. marker .. " sleep 60"
  for i = 1, 50 do
    local res = assert(proc.run { argv = { "bash", "-c", script }, timeout = 0.05, grace = 0.05 })
    T.ok(res.timed_out, "run " .. i .. " timed out")
  end
  T.eq(alive(marker), "", "surviving processes")
end)

T.case("SIGINT mid-campaign, then --resume: nothing completed is lost or run twice", function()
  local d = T.tmpdir()
  local dir, marker = d .. "/int", d .. "/marker"
  local p = assert(proc.spawn { argv = { T.wb_binary(), "run", RECIPE, "-o", dir, "cases=6", "sleep=0.3",
    "marker=" .. marker }, stdout = "null", stderr = "capture" })
  T.wait_until("3 cases done", 20, function() return #lines(marker) >= 3 end)
  p:kill(2)
  local res = p:wait()
  T.eq(res.code, 130, res.stderr)
  local m = T.manifest(dir)
  T.eq(m.status, "interrupted")
  local done = {}
  for _, r in ipairs(m.runs) do if r.status == "success" then done[r.name] = true end end
  local before = #lines(marker)
  res = T.wb({ "run", RECIPE, "--resume", dir, "cases=6", "sleep=0.3", "marker=" .. marker })
  T.eq(res.code, 0, res.stderr)
  local after = lines(marker)
  for i = before + 1, #after do T.ok(not done[after[i]], after[i] .. " ran twice") end
  m = T.manifest(dir)
  T.eq(m.status, "complete")
  for _, r in ipairs(m.runs) do T.eq(r.status, "success", r.name) end
end)

T.case("a full disk: a clear error, the previous manifest intact", function()
  local d = T.tmpdir()
  if not os.execute("mount -t tmpfs -o size=96k wbfault '" .. d .. "' 2>/dev/null") then
    T.skip("cannot mount a small tmpfs (needs root)")
  end
  local dir = d .. "/full"
  local res = T.wb({ "run", RECIPE, "-o", dir, "cases=3", "sleep=0", "+big=" .. string.rep("x", 20000) })
  local manifest_text = fs.read(dir .. "/manifest.json")
  os.execute("umount '" .. d .. "'")
  T.ok(res.code == 1 or res.code == 2, "exit " .. tostring(res.code))
  T.match(res.stderr, "^wb: [^\n]*No space left on device\n$")
  local m = json.decode(manifest_text or "")
  T.ok(m and m.schema_name == "wb.manifest", "the last manifest written is valid JSON")
end)

-- Without root: a file-size limit (ulimit -f, SIGXFSZ ignored so that writes fail with EFBIG)
-- that the growing manifest outgrows part-way. An atomic rewrite fails on its temporary and
-- leaves the last manifest whole; a rewrite in place would leave it cut at the limit.
T.case("a file-size limit part-way: the error, the last manifest whole, no temporary left", function()
  local d = T.tmpdir()
  local dir = d .. "/limited"
  local res = proc.run { argv = { "bash", "-c", "trap '' XFSZ; ulimit -f 11; exec \"$@\"", "limit", T.wb_binary(),
    "run", RECIPE, "-o", dir, "cases=20", "sleep=0" }, stdout = "capture", stderr = "capture", timeout = 60 }
  T.eq(res.code, 1, res.stderr)
  T.match(res.stderr, "^wb: [^\n]*/manifest%.json: File too large\n$")
  local m = json.decode(fs.read(dir .. "/manifest.json") or "")
  T.ok(m and m.schema_name == "wb.manifest", "the manifest on disk is whole JSON")
  T.eq(m.status, "running")
  local done = 0
  for _, r in ipairs(m.runs) do if r.status == "success" then done = done + 1 end end
  T.between(done, 1, 19, "runs recorded before the limit")
  for _, name in ipairs(fs.list(dir)) do T.ok(not name:find("manifest%.json.+"), "left over: " .. name) end
end)

T.case("a full disk under streamed writes: nil and the error, the old file and no temporary", function()
  local d = T.tmpdir()
  if not os.execute("mount -t tmpfs -o size=96k wbfault '" .. d .. "' 2>/dev/null") then
    T.skip("cannot mount a small tmpfs (needs root)")
  end
  local big = json.array()
  for i = 1, 50000 do big[i] = i / 3 end
  T.eq(fs.write(d .. "/a.json", "{}\n"), true)
  local ok, err = json.write(d .. "/a.json", big)
  local n = 0
  local ok2, err2 = fs.write(d .. "/a.json", function()
    n = n + 1
    if n <= 100 then return string.rep("y", 4096) end
  end)
  local text, names = fs.read(d .. "/a.json"), fs.list(d)
  os.execute("umount '" .. d .. "'")
  T.eq(ok, nil)
  T.match(err, "a.json: No space left on device")
  T.eq(ok2, nil)
  T.match(err2, "a.json: No space left on device")
  T.eq(text, "{}\n")
  T.eq(names, { "a.json" })
end)

T.case("a recipe that errors half-way: completed runs kept, manifest failed, exit 1", function()
  local d = T.tmpdir()
  local recipe = d .. "/half.lua"
  fs.write(recipe, [[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  local c = wb.campaign.open(ctx)
  c:declare { "a", "b", "c" }
  c:run("a", function(rec) rec.metrics = { x = 1 } end)
  c:run("b", function(rec) error("the parser choked on line 7") end)
  c:run("c", function(rec) end)
end }
]])
  local res = T.wb({ "run", recipe, "-o", d .. "/run" })
  T.eq(res.code, 1)
  T.match(res.stderr, "^wb: " .. recipe:gsub("%p", "%%%0") .. ":6: the parser choked on line 7\n$")
  local m = T.manifest(d .. "/run")
  T.eq(m.status, "failed")
  T.eq(m.runs[1].status, "success")
  T.eq(m.runs[1].metrics.x, 1)
  T.eq(m.runs[3].status, "pending")
end)

T.case("a child that closes stdout early is still waited for, its stderr kept", function()
  local res = assert(proc.run { argv = { "sh", "-c", "echo early; exec >&-; sleep 0.2; echo late >&2; exit 3" },
    stdout = "capture", stderr = "capture" })
  T.eq(res.stdout, "early\n")
  T.eq(res.stderr, "late\n")
  T.eq(res.code, 3)
  T.ok(res.wall >= 0.2)
end)

T.case("a child writing a 1 GiB line: streamed to a file, wb's memory stays small", function()
  local d = T.tmpdir()
  local out = d .. "/big.log"
  local function hwm()
    return tonumber((fs.read("/proc/self/status") or ""):match("VmHWM:%s*(%d+)")) or 0
  end
  local before = hwm()
  local res = assert(proc.run { argv = { "sh", "-c", "head -c 1073741824 /dev/zero | tr '\\0' x" },
    stdout = { file = out }, stderr = "capture", timeout = 120 })
  T.eq(res.code, 0, res.stderr)
  T.eq(fs.stat(out).size, 1073741824)
  fs.remove(out)
  T.ok(hwm() - before < 64 * 1024, "peak RSS grew by " .. (hwm() - before) .. " KiB")
  local count, pieces = 0, 0
  res = assert(proc.run { argv = { "sh", "-c", "head -c 67108864 /dev/zero | tr '\\0' y; echo; echo tail" },
    stdout = function(line, piece)
      pieces = pieces + 1
      if not piece then count = count + 1 end
    end })
  T.eq(res.code, 0)
  T.eq(count, 2, "a 64 MiB line and a short one, each ended once")
  T.eq(pieces, 65, "the long line in 64 pieces of 1 MiB (the last one ends it), then the short one")
end)

T.case("a command that does not exist fails its run with the message, not the campaign tool", function()
  local res = proc.run { argv = { "wb-no-such-command" } }
  T.eq(res, nil)
  local _, err = proc.run { argv = { "wb-no-such-command" } }
  T.eq(err, "spawn: wb-no-such-command: No such file or directory")
end)

-- ---- issue 14: nothing run twice, nothing lost, no false success -------------------------

local FAULTS = "tests/fixtures/recipes/faults.lua"

-- p = start_campaign(dir, marker, started, args) : wb running the campaign fixture into dir with
-- the overrides args, once `started` cases have started (their names appended to marker)
local function start_campaign(dir, marker, started, args)
  local argv = { T.wb_binary(), "run", RECIPE, "-o", dir, "marker=" .. marker }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local p = assert(proc.spawn { argv = argv, stdout = "null", stderr = "null" })
  T.wait_until(started .. " case(s) started", 20, function() return #lines(marker) >= started end, p)
  return p
end

local function count_lines(path)
  local n = {}
  for _, l in ipairs(lines(path)) do n[l] = (n[l] or 0) + 1 end
  return n
end

-- Kills wb (kill -9) at `kills` random moments of the runs argv(dir, extra) makes, each followed by
-- --resume until complete; then counts, from each run's DIR.done (a line per case that ended),
-- the cases run twice without wb saying so, the cases lost, and the ones wb said it runs again.
local KILLS = tonumber(os.getenv("WB_KILL_LOOP") or "") or 20
local function kill_loop(d, kills, argv, pause)
  local seed = math.floor(wb.clock.wall() * 1000) % 1000000
  math.randomseed(seed)
  local runs, dir = {}, nil
  local function status(path)
    local m = json.read(path .. "/manifest.json")
    return m and m.status
  end
  -- the cases a resume said it runs again (a kill between their exit and wb's journal entry, or
  -- after it but before what wb recorded of them was kept)
  local said = {}
  local function note(run, text)
    for names in (text or ""):gmatch("died while ([^\n]-) ran, before recording how it ended") do
      for name in names:gmatch("[^, ]+") do said[run .. " " .. name] = true end
    end
    for name in (text or ""):gmatch("wb: [^\n]-: (%S+) had ended before the previous wb died") do
      said[run .. " " .. name] = true
    end
  end
  local reused = 0
  for _ = 1, kills do
    local extra
    if dir and status(dir) and status(dir) ~= "complete" then
      extra = { "--resume", dir }
    elseif dir and not status(dir) then
      extra = { "-o", dir } -- killed before its first manifest: started afresh
    else
      dir = d .. "/run" .. (#runs + 1)
      runs[#runs + 1] = dir
      extra = { "-o", dir }
    end
    local p = assert(proc.spawn { argv = argv(dir, extra), stdout = "null", stderr = "capture" })
    wb.clock.sleep(0.02 + math.random() * pause)
    p:kill(9)
    note(dir, p:wait().stderr)
    p:close()
  end
  for _, r in ipairs(runs) do
    local st = status(r)
    if st ~= "complete" then
      local res = T.wb({ table.unpack(argv(r, st and { "--resume", r } or { "-o", r }), 2) })
      T.eq(res.code, 0, "finishing " .. r .. ": " .. res.stderr)
      note(r, res.stderr)
    end
  end
  local twice, lost, window = 0, 0, 0
  for _, r in ipairs(runs) do
    local done = count_lines(r .. ".done")
    local m = T.manifest(r)
    T.eq(m.status, "complete", r)
    for _, rec in ipairs(m.runs) do
      if rec.status ~= "success" or not done[rec.name] then lost = lost + 1 end
      if (done[rec.name] or 0) > 1 and not said[r .. " " .. rec.name] then twice = twice + 1 end
      if (done[rec.name] or 0) > 1 and said[r .. " " .. rec.name] then window = window + 1 end
    end
    reused = reused + #T.events(r, "run_reused")
  end
  print(string.format("# kill -9 loop (seed %d, %d kills): %d runs, %d cases run twice unannounced, %d lost, " ..
    "%d results reused, %d run again as wb said", seed, kills, #runs, twice, lost, reused, window))
  T.eq(twice, 0, "cases run twice (seed " .. seed .. ")")
  T.eq(lost, 0, "cases lost (seed " .. seed .. ")")
end

T.case("kill -9 of a campaign at " .. KILLS .. " random moments, each followed by --resume: 0 cases run twice unannounced, 0 lost", function()
  kill_loop(T.tmpdir(), KILLS, function(dir, extra)
    local a = { T.wb_binary(), "run", RECIPE, "cases=6", "sleep=0.12", "marker=/dev/null", "done=" .. dir .. ".done" }
    for _, x in ipairs(extra) do a[#a + 1] = x end
    return a
  end, 0.5)
end)

T.case("kill -9 of wb profile at " .. KILLS .. " random moments, each followed by --resume: its command run twice only where wb says so", function()
  kill_loop(T.tmpdir(), KILLS, function(dir, extra)
    local a = { T.wb_binary(), "profile", "offcpu=false", "stdout=null" }
    for _, x in ipairs(extra) do a[#a + 1] = x end
    for _, x in ipairs({ "--", "sh", "-c", "sleep 0.1; echo profile >> '" .. dir .. ".done'" }) do a[#a + 1] = x end
    return a
  end, 0.8)
end)

T.case("kill -9 of wb: the case's process and what it started in its group die with it; --resume finishes", function()
  local d = T.tmpdir()
  local dir, marker = d .. "/k", d .. "/marker"
  -- a sleep of about 1.5 s unique to this run (as the config prints it: no trailing 0); --resume
  -- takes the run's own overrides, so its cases sleep as long again
  local tag = "1.5" .. math.floor(wb.clock.wall() * 1000) % 100000 .. "1"
  local p = start_campaign(dir, marker, 1, { "cases=2", "sleep=" .. tag })
  wb.clock.sleep(0.1)
  p:kill(9)
  p:wait()
  p:close()
  wb.clock.sleep(0.2)
  T.eq(alive("^sh -c .*sleep " .. tag), "", "the case's shell outlived wb")
  T.wait_until("the shell's sleep (in its group) ended by the reaper", 5, function()
    return alive("^sleep " .. tag) == ""
  end)
  local res = T.wb({ "run", RECIPE, "--resume", dir, "marker=" .. marker, "cases=2", "sleep=" .. tag })
  T.eq(res.code, 0, res.stderr)
  T.eq(T.manifest(dir).status, "complete")
  T.eq(alive("sleep " .. tag), "", "survivors after --resume")
end)

T.case("kill -9 of wb: a child started by wb.proc outside a campaign dies with it, and its group too", function()
  local d = T.tmpdir()
  local tag = "wbfault_direct" .. math.floor(wb.clock.wall() * 1000) % 100000
  local p = assert(proc.spawn { argv = { T.wb_binary(), "run", FAULTS, "mode=direct_tree", "tag=" .. tag,
    "ready=" .. d .. "/ready" }, stdout = "null", stderr = "null" })
  T.wait_until("ready", 20, function() return fs.exists(d .. "/ready") end, p)
  T.eq(#lines_of(alive("^" .. tag)), 2, "the child and its own child run")
  p:kill(9)
  T.eq(p:wait().signal, 9)
  p:close()
  T.wait_until("no survivor", 5, function() return alive("^" .. tag) == "" end)
end)

T.case("--resume refuses another -o, changed overrides (naming the keys) and a manifest of the wrong shape", function()
  local d = T.tmpdir()
  local dir = d .. "/r"
  T.eq(T.wb({ "run", RECIPE, "-o", dir, "cases=2", "sleep=0" }).code, 0)
  local res = T.wb({ "run", RECIPE, "--resume", dir, "-o", d .. "/other", "cases=2", "sleep=0" })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: %-%-resume [^\n]*/r %-o [^\n]*/other: a resumed run stays in its directory")
  T.ok(not fs.exists(d .. "/other"), "nothing made at -o")
  res = T.wb({ "run", RECIPE, "--resume", dir, "cases=3", "sleep=0", "trials=2" })
  T.eq(res.code, 2)
  T.match(res.stderr, "%(changed: cases, trials; resume without them, or start a new run%)\n$")
  local shapes = {
    { '"runs": 5', "runs is a number, not a list" },
    { '"runs": [5]', "runs%[1%] is a number, not a mapping" },
    { '"runs": [{"name": 1, "status": "success"}]', "runs%[1%]%.name is a number, not a string" },
    { '"runs": [{"name": "case1", "status": "success", "metrics": 3}]', "runs%[1%]%.metrics is a number" },
    { '"runs": [], "overrides": [1]', "overrides%[1%] is a number, not a string" },
    { '"status": null, "runs": []', "status is null, not a string" },
  }
  for _, c in ipairs(shapes) do
    local text = '{"schema_name": "wb.manifest", "schema_version": 1, "recipe": "campaign", "status": "running", ' ..
        c[1] .. "}\n"
    text = text:gsub('"status": "running", ("status": null)', "%1")
    fs.write(dir .. "/manifest.json", text)
    res = T.wb({ "run", RECIPE, "--resume", dir, "cases=2", "sleep=0" })
    T.eq(res.code, 2, c[1])
    T.match(res.stderr, "^wb: %-%-resume: [^\n]*manifest%.json: " .. c[2] .. "[^\n]*\n$")
    T.eq(fs.read(dir .. "/manifest.json"), text, "the manifest is untouched")
  end
end)

T.case("an interrupted --multirun (kill -9) is finished by --resume PARENT: each case done once", function()
  local d = T.tmpdir()
  local parent, done = d .. "/mr", d .. "/done"
  local argv = { T.wb_binary(), "run", RECIPE, "--multirun", "cases=1,2,3", "sleep=0.2", "done=" .. done, "-o", parent }
  local p = assert(proc.spawn { argv = argv, stdout = "null", stderr = "null" })
  T.wait_until("the second run started", 20, function() return fs.exists(parent .. "/2_cases=2/manifest.json") end, p)
  p:kill(9)
  p:wait()
  p:close()
  local listing = json.read(parent .. "/multirun.json")
  T.eq(listing.status, "running")
  T.eq(#listing.runs, 3, "every combination listed from the start")
  local res = T.wb({ "run", RECIPE, "--resume", parent })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "%[multirun 2/3%] cases=2 [^\n]* resumed, was running")
  T.ok(not res.stdout:find("multirun 1/3", 1, true), "the completed run is not run again")
  listing = json.read(parent .. "/multirun.json")
  T.eq(listing.status, "complete")
  for i, e in ipairs(listing.runs) do
    T.eq(e.exit_status, 0, e.label)
    T.eq(T.manifest(e.dir).status, "complete", e.label)
    T.eq(#T.manifest(e.dir).runs, i)
  end
  local n = {}
  for _, l in ipairs(lines(done)) do n[l] = (n[l] or 0) + 1 end
  local want = { case1 = 3, case2 = 2, case3 = 1 } -- each run's cases done once (case1 is in all three runs)
  -- a case announced as running when wb died may have finished then (done twice) or been ended
  -- by the reaper before it wrote its line (done once)
  for name in (res.stderr:match("died while ([^\n]-) ran") or ""):gmatch("[^, ]+") do
    if n[name] == want[name] + 1 then want[name] = want[name] + 1 end
  end
  T.eq(n, want, res.stderr)
  res = T.wb({ "run", RECIPE, "--resume", parent, "cases=1,2" })
  T.eq(res.code, 2)
  T.match(res.stderr, "ran with the overrides")
end)

T.case("two wb on one run directory: the second exits 2 naming the owner's pid", function()
  local d = T.tmpdir()
  local dir, marker = d .. "/one", d .. "/marker"
  local p = start_campaign(dir, marker, 1, { "cases=1", "sleep=5" })
  local res = T.wb({ "run", RECIPE, "-o", dir, "cases=1", "sleep=0" })
  T.eq(res.code, 2)
  T.eq(res.stderr, "wb: run directory " .. dir .. " is in use by wb pid " .. p.pid .. "\n")
  res = T.wb({ "run", RECIPE, "--resume", dir, "marker=" .. marker, "cases=1", "sleep=5" })
  T.eq(res.code, 2)
  T.match(res.stderr, "is in use by wb pid " .. p.pid)
  p:kill(15)
  T.eq(p:wait().code, 143)
  p:close()
  T.eq(#lines(marker), 1, "the case ran once")
end)

T.case("two default-named runs started in the same second get different directories", function()
  local d = T.tmpdir()
  local ps = {}
  for i = 1, 4 do
    ps[i] = assert(proc.spawn { argv = { T.wb_binary(), "run", T.root() .. "/" .. RECIPE, "cases=1", "sleep=0" },
      cwd = d, stdout = "capture", stderr = "capture" })
  end
  local dirs = {}
  for i = 1, 4 do
    local res = ps[i]:wait()
    T.eq(res.code, 0, res.stderr)
    local out = res.stdout:match("complete (%S+)")
    T.ok(out and not dirs[out], "run " .. i .. " got its own directory: " .. tostring(out))
    dirs[out or i] = true
    ps[i]:close()
  end
  local names = fs.list(d .. "/runs")
  local n = 0
  for _, name in ipairs(names) do if name ~= "latest" then n = n + 1 end end
  T.eq(n, 4)
end)

T.case("-o onto a completed run is refused (exit 2, nothing lost) unless --overwrite", function()
  local d = T.tmpdir()
  local dir = d .. "/done"
  T.eq(T.wb({ "run", RECIPE, "-o", dir, "cases=1", "sleep=0" }).code, 0)
  local before = fs.read(dir .. "/manifest.json")
  local res = T.wb({ "run", RECIPE, "-o", dir, "cases=2", "sleep=0" })
  T.eq(res.code, 2)
  T.eq(res.stderr, "wb: -o " .. dir .. ": holds a completed run (--overwrite replaces it)\n")
  T.eq(fs.read(dir .. "/manifest.json"), before)
  res = T.wb({ "run", RECIPE, "-o", dir, "cases=2", "sleep=0", "--overwrite" })
  T.eq(res.code, 0, res.stderr)
  T.eq(#T.manifest(dir).runs, 2)
  T.eq(#T.events(dir, "campaign_started"), 1, "the old run's events are gone")
end)

-- Runs faults.lua with mode, sends signo once it is ready (nil: none); returns exit code, stderr,
-- the manifest and what is left running of its child.
local function fault_run(mode, signo, extra)
  local d = T.tmpdir()
  local tag = "wbfault_" .. mode .. math.floor(wb.clock.wall() * 1000) % 100000
  local argv = { T.wb_binary(), "run", FAULTS, "mode=" .. mode, "-o", d .. "/run", "ready=" .. d .. "/ready",
    "tag=" .. tag }
  for _, x in ipairs(extra or {}) do argv[#argv + 1] = x end
  local p = assert(proc.spawn { argv = argv, stdout = "null", stderr = "capture" })
  T.wait_until("ready", 20, function() return fs.exists(d .. "/ready") end, p)
  wb.clock.sleep(0.15)
  if signo then p:kill(signo) end
  local res = p:wait()
  p:close()
  wb.clock.sleep(0.05)
  return res.code, res.stderr, json.read(d .. "/run/manifest.json"), alive(tag)
end

for _, sig in ipairs({ { 1, "SIGHUP", 129 }, { 15, "SIGTERM", 143 }, { 2, "SIGINT", 130 } }) do
  T.case(sig[2] .. " during a case: children ended, manifest interrupted, exit " .. sig[3], function()
    local code, stderr, m, left = fault_run("plain", sig[1])
    T.eq(code, sig[3], stderr)
    T.eq(m.status, "interrupted")
    T.eq(left, "")
  end)
end

T.case("a pure-Lua loop inside pcall that swallows errors is interrupted anyway (SIGINT, SIGTERM)", function()
  for _, sig in ipairs({ { 2, 130 }, { 15, 143 } }) do
    local code, stderr, m, left = fault_run("pcall_loop", sig[1])
    T.eq(code, sig[2], stderr)
    T.eq(m.status, "interrupted")
    T.eq(left, "", "the child it left running")
  end
end)

T.case("a pure-Lua loop inside a coroutine is interrupted too (SIGINT, SIGTERM, SIGHUP)", function()
  for _, sig in ipairs({ { 2, 130 }, { 15, 143 }, { 1, 129 } }) do
    local code, stderr, m, left = fault_run("co_loop", sig[1])
    T.eq(code, sig[2], stderr)
    T.eq(m.status, "interrupted")
    T.eq(left, "", "the child it left running")
  end
end)

T.case("Ctrl-C inside a recipe's pcall does not exit 0", function()
  local code, stderr, m, left = fault_run("pcall_spawn", 2)
  T.eq(code, 130, stderr)
  T.eq(m.status, "interrupted")
  T.eq(left, "")
end)

T.case("os.exit in a recipe: the same orderly way out (children ended, manifest interrupted)", function()
  local code, stderr, m, left = fault_run("os_exit", nil, { "code=3" })
  T.eq(code, 3, stderr)
  T.eq(m.status, "interrupted")
  T.eq(left, "")
  code, stderr, m = fault_run("os_exit", nil, { "code=0" })
  T.eq(code, 1, "os.exit(0) with the campaign open")
  T.match(stderr, "os.exit%(0%) before the campaign finished")
  T.eq(m.status, "interrupted")
end)

T.case("a second signal forces exit while the first one's orderly stop waits", function()
  local d = T.tmpdir()
  local dir, marker = d .. "/s", d .. "/marker"
  local tag = "28.0" .. math.floor(wb.clock.wall() * 1000) % 100000 .. "1"
  local p = start_campaign(dir, marker, 1, { "cases=1", "sleep=" .. tag, "ignore_term=true" })
  wb.clock.sleep(0.1)
  p:kill(2) -- the case ignores SIGTERM: the orderly stop waits out the grace (2 s) before SIGKILL
  wb.clock.sleep(0.5)
  local t = wb.clock.timer()
  p:kill(2)
  local res = p:wait()
  p:close()
  T.eq(res.code, 130)
  T.ok(t:elapsed() < 1, "forced exit took " .. t:elapsed() .. " s")
  wb.clock.sleep(0.1)
  T.eq(alive("sleep " .. tag), "")
end)

T.case("error objects and statuses that must not exit 0, each with a message", function()
  local cases = {
    { { "mode=error_exit0" }, 1, "wb: asked for exit 0\n" },
    { { "mode=error_exit256" }, 1, "wb: asked for exit 256\n" },
    { { "mode=error_empty" }, 1, "wb: error (a table value without a message)\n" },
    { { "mode=error_tostring" }, 1, "wb: error (a table value without a message)\n" },
    { { "mode=return", "code=256" }, 1, "" },
    { { "mode=return", "code=-1" }, 1, "" },
    { { "mode=return", "code=7" }, 7, "" },
  }
  for _, c in ipairs(cases) do
    local res = T.wb({ "run", FAULTS, table.unpack(c[1]) })
    T.eq(res.code, c[2], table.concat(c[1], " "))
    T.eq(res.stderr, c[3], table.concat(c[1], " "))
  end
end)

T.case("--resume after a death between a child's end and the manifest: the result is used, not run again, " ..
  "also by a second --resume when the first died before recording it", function()
  local d = T.tmpdir()
  local dir, done = d .. "/r", d .. "/done"
  local res = T.wb({ "run", RECIPE, "-o", dir, "cases=2", "sleep=0", "done=" .. done })
  T.eq(res.code, 0, res.stderr)
  local function rewind() -- what kill -9 right after case2's wait leaves: the manifest still running
    local m = T.manifest(dir)
    m.status, m.runs[2].status = "running", "running"
    T.ok(json.write(dir .. "/manifest.json", m))
  end
  rewind()
  T.match(fs.read(dir .. "/wb.lock"), "\nend %d+ {[^\n]*\"name\":\"case2\"")
  for resume = 1, 2 do
    res = T.wb({ "run", RECIPE, "--resume", dir, "cases=2", "sleep=0", "done=" .. done })
    T.eq(res.code, 0, res.stderr)
    T.eq(count_lines(done), { case1 = 1, case2 = 1 }, "resume " .. resume)
    T.eq(#T.events(dir, "run_reused"), resume)
    local m = T.manifest(dir)
    T.eq(m.status, "complete")
    T.eq(m.runs[2].status, "success")
    T.eq(m.runs[2].return_code, 0)
    -- the resume wrote the end it used after its owner line, before "settled" (the next resume
    -- reads from there on) and nothing after: its journal is what a kill -9 of it right after
    -- settling leaves, and the second resume is that case
    T.match(fs.read(dir .. "/wb.lock"), "\nwb %d+ %d+\nend %d+ {[^\n]*\"name\":\"case2\"[^\n]*\nsettled\n$")
    rewind()
  end
end)

-- Every file under dir, with its text.
local function files_under(dir, out)
  out = out or {}
  for _, name in ipairs(fs.list(dir) or {}) do
    local path = dir .. "/" .. name
    local st = fs.lstat(path)
    if st and st.type == "dir" then files_under(path, out) elseif st and st.type == "file" then out[path] = fs.read(path) end
  end
  return out
end

-- A small git repository of two commits whose build is `true`, for wb regress.
local function tiny_repo(d)
  local repo = d .. "/repo"
  local env = { GIT_AUTHOR_NAME = "t", GIT_AUTHOR_EMAIL = "t@example.org", GIT_COMMITTER_NAME = "t",
    GIT_COMMITTER_EMAIL = "t@example.org", GIT_CONFIG_GLOBAL = "/dev/null", GIT_CONFIG_NOSYSTEM = "1" }
  local script = "set -e; git init -q; echo 1 > f; git add f; git commit -qm one; echo 2 > f; git commit -qam two"
  assert(fs.mkdir_p(repo))
  local res = assert(proc.run { argv = { "sh", "-c", script }, cwd = repo, env = env, stderr = "capture" })
  assert(res.ok, res.stderr)
  return repo
end

T.case("three planted secrets (a token in a command, a config password, a secret-looking env value): 0 hits " ..
  "in any file of a run directory of each shipped recipe", function()
  local d = T.tmpdir()
  local env = { WB_TEST_TOKEN = "tok-AAAA1111", MY_API_KEY = "key-CCCC3333" }
  local cmd = "echo tok-AAAA1111 $MY_API_KEY >&2; echo tok-AAAA1111 $MY_API_KEY"
  local list = "[sh, -c, '" .. cmd .. "']"
  local pw = "+db.password=pw-BBBB2222"
  local recipes = {
    bench = { cmd, "shell=true", "runs=2", "min_runs=2", "min_time=0", pw },
    data = { "dataset.samples=20", "dataset.variants=50", "dataset.dir=" .. d .. "/data", pw },
    demo = { "command=" .. list, "trials=1", "warmup=0", pw },
    gate = { "roots=" .. d, "fail_unconfirmed=false", "+auth.password=pw-BBBB2222" }, -- its db is the index path
    matrix = { "dataset.variants=200", "dataset.samples=20", "workload.threads=1", "+matrix.env.NOTE=tok-AAAA1111",
      pw },
    profile = { "freq=49", pw, "--", "sh", "-c", cmd },
    profile_app_full = { "tool.command=" .. list, "tool.trials=1", "tool.warmup=0", pw },
    regress = { "repo=" .. tiny_repo(d), "range=HEAD~1..HEAD", "build=[true]", "bench=" .. list, "runs=2",
      "warmup=0", "results_dir=" .. d .. "/regress-results", pw },
    scaling = { "command=[sh, -c, '" .. cmd .. " {workers}']", "workers=[1,2]", "runs=2", "warmup=0", pw },
    tune = { "tune.command=[sh, -c, '" .. cmd .. " {a}']", "tune.axes={a: [1, 2]}", "tune.default=null",
      "tune.override=null", "tune.max_blocks=8", "tune.finalist_rounds=6", "tune.headline_trials=6",
      "+tune.env.NOTE=tok-AAAA1111", pw },
    vep_breakdown = { "emit.bytes=64k", "+env.SERVICE_TOKEN=tok-AAAA1111", pw },
  }
  local names = {}
  for _, file in ipairs(fs.list(T.root() .. "/recipes")) do
    local name = file:match("^(.+)%.lua$")
    if name then names[#names + 1] = name end
  end
  table.sort(names)
  local hits, counts = {}, {}
  for _, name in ipairs(names) do
    local args = recipes[name]
    T.ok(args, "the test knows how to run recipes/" .. name .. ".lua")
    local dir = d .. "/" .. name
    local argv = { "run", T.root() .. "/recipes/" .. name .. ".lua", "-o", dir }
    for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
    local res = T.wb(argv, { env = env, cwd = d, timeout = 300 })
    T.eq(res.code, 0, name .. ": " .. res.stderr)
    local n = 0
    for path, text in pairs(files_under(dir)) do
      n = n + 1
      for _, secret in ipairs({ "AAAA1111", "BBBB2222", "CCCC3333" }) do
        if text:find(secret, 1, true) then hits[#hits + 1] = path .. ": " .. secret end
      end
    end
    counts[#counts + 1] = name .. " " .. n
    T.ok(n >= 4 or name == "demo", name .. ": " .. n .. " files") -- demo writes no run directory
  end
  print("# files searched per run directory: " .. table.concat(counts, ", "))
  T.eq(hits, {})
  T.match(fs.read(d .. "/bench/config.yaml"), "password: '?%[REDACTED%]")
end)

T.case("atomic writes honour the umask (077: files 0600)", function()
  local d = T.tmpdir()
  local res = assert(proc.run { argv = { "sh", "-c", 'umask 077; exec "$0" "$@"', T.wb_binary(), "run", RECIPE,
    "cases=1", "sleep=0", "-o", d .. "/u" }, stdout = "null", stderr = "capture" })
  T.eq(res.code, 0, res.stderr)
  for _, name in ipairs({ "manifest.json", "config.yaml", "plan.json", "events.jsonl" }) do
    T.eq(fs.stat(d .. "/u/" .. name).mode & 511, 384, name .. " mode")
  end
  res = T.wb({ "run", RECIPE, "cases=1", "sleep=0", "-o", d .. "/v" })
  T.eq(fs.stat(d .. "/v/manifest.json").mode & 511, tonumber("644", 8), "umask 022 (the tests')")
end)

T.case("line callbacks are linear in line length: one 256 MiB line in seconds (was quadratic)", function()
  local t, count, len = wb.clock.timer(), 0, 0
  local res = assert(proc.run { argv = { "sh", "-c", "head -c 268435456 /dev/zero | tr '\\0' y; echo; echo tail" },
    stdout = function(line, piece) count, len = count + (piece and 0 or 1), len + #line end, timeout = 120 })
  T.eq(res.code, 0)
  T.eq({ count, len }, { 2, 268435456 + 4 })
  -- quadratic searching took 4.6 s for 64 MiB, so about 70 s here; linear takes about 1 s
  T.ok(t:elapsed() < 15, string.format("%.1f s", t:elapsed()))
end)

T.case("pasting a 20000-line statement into the REPL is linear (was 13 s piped, 17 s on a terminal)", function()
  local d = T.tmpdir()
  local text = { "t = {" }
  for i = 1, 20000 do text[#text + 1] = i .. "," end
  text[#text + 1] = "}"
  text[#text + 1] = "=#t"
  text[#text + 1] = "for i = 1, 2 do"
  text[#text + 1] = "print('loop', i) end"
  fs.write(d .. "/paste.lua", table.concat(text, "\n") .. "\n")
  local t = wb.clock.timer()
  local res = assert(proc.run { argv = { T.wb_binary(), "repl" }, stdin = { file = d .. "/paste.lua" },
    stdout = "capture", stderr = "capture", timeout = 60 })
  T.eq(res.stdout, "20000\nloop\t1\nloop\t2\n", res.stderr)
  T.ok(t:elapsed() < 3, string.format("%.1f s", t:elapsed()))
end)

-- The bisection that finds where a pasted statement ends must leave that statement compiled, not
-- the last prefix it tried: a 4-line table followed by an expression once ran the message of its
-- 3-line prefix ("attempt to call a string value"). Every statement length from 1 to 40 lines.
T.case("pasted statements of every length from 1 to 40 lines run as written", function()
  local d = T.tmpdir()
  local text, want = {}, {}
  for k = 1, 40 do
    text[#text + 1] = "t = {"
    for i = 1, k - 1 do text[#text + 1] = i .. "," end
    text[#text + 1] = "}"
    text[#text + 1] = "=#t"
    want[#want + 1] = tostring(k - 1)
  end
  fs.write(d .. "/paste.lua", table.concat(text, "\n") .. "\n")
  local res = assert(proc.run { argv = { T.wb_binary(), "repl" }, stdin = { file = d .. "/paste.lua" },
    stdout = "capture", stderr = "capture", timeout = 60 })
  T.eq(res.stderr, "")
  T.eq(res.stdout, table.concat(want, "\n") .. "\n")
end)

T.case("the REPL ends on SIGHUP (terminal gone) with 129, on SIGTERM with 143", function()
  for _, sig in ipairs({ { 1, 129 }, { 15, 143 } }) do
    local p = assert(proc.spawn { argv = { "bash", "-c", 'exec "$0" repl < <(sleep 10)', T.wb_binary() },
      stdout = "null", stderr = "null" })
    wb.clock.sleep(0.3)
    p:kill(sig[1])
    T.eq(p:wait().code, sig[2], "signal " .. sig[1])
    p:close()
  end
end)
