-- Fault injection: stubborn process trees, interrupts and resume, a full disk, a recipe failing
-- half-way, children that close stdout early or write a 1 GiB line.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local RECIPE = "tests/fixtures/recipes/campaign.lua"

local function lines(path)
  local out = {}
  for l in (fs.read(path) or ""):gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

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
  local count = 0
  res = assert(proc.run { argv = { "sh", "-c", "head -c 67108864 /dev/zero | tr '\\0' y; echo; echo tail" },
    stdout = function(line) count = count + 1 end })
  T.eq(res.code, 0)
  T.eq(count, 2, "a 64 MiB line and a short one, each delivered once")
end)

T.case("a command that does not exist fails its run with the message, not the campaign tool", function()
  local res = proc.run { argv = { "wb-no-such-command" } }
  T.eq(res, nil)
  local _, err = proc.run { argv = { "wb-no-such-command" } }
  T.eq(err, "spawn: wb-no-such-command: No such file or directory")
end)
