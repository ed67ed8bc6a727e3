-- The A/A-under-load harness (`make aa`, tests/aa/aa_test.lua; bench/verdicts.lua reports its
-- figures): the same CPU-bound work benchmarked twice with `wb bench`, two CPU hogs running
-- during one side only (the base in odd pairs, the new side in even ones), and the same again
-- with 10% more CPU work planted in the new side. Every pair is judged by every wb entry point
-- (the campaign's previous-run comparison, `wb compare` of summaries, manifests, run directories
-- and the hyperfine exports wb writes, and `wb compare --confirm`, which runs both sides again
-- interleaved beside two hogs) and by two rules people use instead: hyperfine exports compared naively (the
-- ratio of means beyond 5%) and asv's `compare` (a ratio beyond its factor 1.1 with a
-- Mann–Whitney p < 0.002).
--
-- The work is Debian's xz compressing base64 text, single-threaded (-T1): a real, CPU-bound
-- program whose time is linear in its input, so "10% more work" is 10% more input.
local wb = require "wb"
local fs, json, proc, stats = wb.fs, wb.json, wb.proc, wb.stats

local M = {}

M.PAIRS, M.RUNS, M.HOGS, M.BYTES = 10, 10, 2, 400000
M.CONFIRM_LOAD_SECONDS = 4 -- about half of a confirmation's 2 × 21 runs
M.WB = os.getenv("WB_BIN") or require("wb.core").exe_path() -- the wb under test

-- n busy loops; with seconds, each ends by itself after that long (a load that changes mid-run)
local function start_hogs(n, seconds)
  local hogs = {}
  local loop = { "sh", "-c", "while :; do :; done" }
  if seconds then loop = { "timeout", tostring(seconds), table.unpack(loop) } end
  for i = 1, n do hogs[i] = assert(proc.spawn { argv = loop }) end
  wb.clock.sleep(0.3) -- the hogs are running before the side starts
  return hogs
end

local function stop_hogs(hogs)
  for _, h in ipairs(hogs) do
    h:kill(9)
    h:wait()
    h:close()
  end
end

-- Deterministic text: base64 of an LCG's bytes (compressible like real data, never the same
-- line twice).
local function write_data(path, bytes)
  local out, x = {}, 42
  local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local line = {}
  for i = 1, bytes do
    x = (x * 1103515245 + 12345) % 2147483648
    local k = (x >> 16) % 64 + 1
    line[#line + 1] = alphabet:sub(k, k)
    if #line == 76 or i == bytes then
      out[#out + 1] = table.concat(line)
      line = {}
    end
  end
  assert(fs.write(path, table.concat(out, "\n") .. "\n"))
end

-- Runs wb bench of the work on dir/<name>-work/data.txt (the same command line on both sides, each
-- in its own directory, so that --confirm can run both again) into dir/runs/<name>, with hogs
-- running when loaded.
local function side(dir, name, loaded)
  local hogs = loaded and start_hogs(M.HOGS) or {}
  local ok, res = pcall(proc.run, { argv = { M.WB, "bench", "xz -6 -T1 -c data.txt",
    "runs=" .. M.RUNS, "warmup=1", "-o", dir .. "/runs/" .. name }, cwd = dir .. "/" .. name .. "-work",
    stdout = "capture", stderr = "capture", timeout = 600 })
  stop_hogs(hogs)
  assert(ok, res)
  assert(res.code == 0, res.stderr)
  return dir .. "/runs/" .. name
end

local function counts_of(rows, verdict_field)
  local n = { regression = 0, improvement = 0 }
  for _, r in ipairs(rows) do
    local v = r[verdict_field or "verdict"]
    if n[v] then n[v] = n[v] + 1 end
  end
  return n
end

-- wb compare A B --json [--confirm]: the regressions and improvements it counts
local function wb_compare(a, b, confirm)
  local res = assert(proc.run { argv = { M.WB, "compare", a, b, "--json", confirm },
    stdout = "capture", stderr = "capture", timeout = 600 })
  assert(res.code == 0, res.stderr)
  local doc = assert(json.decode(res.stdout))
  local confirmed = {} -- what the re-run said of each wall row it confirmed, and of any change
  for _, row in ipairs(confirm and doc.rows or {}) do
    local c = row.confirmation
    if type(c) == "table" and (tostring(row.metric):match("wall") or c.verdict == "regression" or c.verdict == "improvement") then
      confirmed[#confirmed + 1] = row.metric .. ": " .. tostring(row.confirmation.reason)
    end
  end
  return { regression = doc.summary.regressions, improvement = doc.summary.improvements, confirmed = confirmed }
end

-- The wall samples of the one command of a bench summary.
local function walls(dir)
  local s = assert(json.read(dir .. "/summary.json"))
  return s.commands[1].samples.wall
end

-- The rules people use instead, on the same samples: "regression", "improvement" or nil.
local function naive(b, n)
  local r = stats.mean(n) / stats.mean(b)
  return r > 1.05 and "regression" or r < 1 / 1.05 and "improvement" or nil
end

local function asv(b, n)
  local r = stats.median(n) / stats.median(b)
  local p = stats.mann_whitney(b, n).p
  if p >= 0.002 then return nil end
  return r > 1.1 and "regression" or r < 1 / 1.1 and "improvement" or nil
end

-- results = pairs.run({planted = bool, pairs, runs, log}) : per pair {loaded ("base"|"new"),
-- wb = {entry point = {regression, improvement}}, naive, asv, wall_ratio, reasons}
function M.run(opts)
  local results = {}
  for i = 1, opts.pairs or M.PAIRS do
    local dir = fs.tmpdir("wbaa")
    for _, name in ipairs({ "a", "b" }) do
      assert(fs.mkdir_p(dir .. "/" .. name .. "-work"))
      write_data(dir .. "/" .. name .. "-work/data.txt", math.floor(M.BYTES * (opts.planted and name == "b" and 1.1 or 1)))
    end
    local loaded = i % 2 == 1 and "base" or "new"
    local a = side(dir, "a", loaded == "base")
    local b = side(dir, "b", loaded == "new")
    local m = assert(json.read(b .. "/manifest.json"))
    local prev = tostring(m.previous_manifest_path)
    assert(prev:sub(-#"runs/a/manifest.json") == "runs/a/manifest.json", "the new side compares with the base: " .. prev)
    local r = { loaded = loaded, wb = {}, reasons = {} }
    r.wb.campaign = counts_of(m.comparisons or {})
    for _, row in ipairs(m.comparisons or {}) do
      if row.verdict ~= "unchanged" and row.verdict ~= "not tested" then
        r.reasons[#r.reasons + 1] = row.metric .. ": " .. row.verdict .. ": " .. row.reason
      end
    end
    r.wb.summaries = wb_compare(a .. "/summary.json", b .. "/summary.json")
    r.wb.manifests = wb_compare(a .. "/manifest.json", b .. "/manifest.json")
    r.wb.directories = wb_compare(a, b)
    r.wb["hyperfine exports"] = wb_compare(a .. "/hyperfine.json", b .. "/hyperfine.json")
    -- both sides again, interleaved, the hogs running for the first half of it only
    local hogs = start_hogs(M.HOGS, M.CONFIRM_LOAD_SECONDS)
    local ok, confirmed = pcall(wb_compare, a, b, "--confirm")
    stop_hogs(hogs)
    r.wb["--confirm"] = assert(ok and confirmed, confirmed)
    local wa, wn = walls(a), walls(b)
    r.wall_ratio = stats.mean(wn) / stats.mean(wa)
    local function figures(d)
      local s = assert(json.read(d .. "/summary.json")).commands[1].samples
      local itf = require "wb.interference"
      local ev = itf.from_samples(s, "wall")
      local cpu = {}
      for k = 1, #s.user do cpu[k] = s.user[k] + s.sys[k] end
      return stats.mean(cpu), ev and stats.mean(itf.net(s.wall, ev)) or nil
    end
    local cb, nb = figures(a)
    local cn, nn = figures(b)
    r.cpu_ratio, r.net_ratio = cn / cb, nb and nn and nn / nb or nil
    r.naive, r.asv = naive(wa, wn), asv(wa, wn)
    if opts.log then opts.log(i, r) end
    results[i] = r
    fs.remove_tree(dir)
  end
  return results
end

-- The number of pairs in which an entry point (or rule) counted a regression, an improvement,
-- either: {campaign = {regression, improvement, any}, ..., naive = ..., asv = ...}
function M.tally(results)
  local t = {}
  local function add(name, reg, imp)
    t[name] = t[name] or { regression = 0, improvement = 0, any = 0 }
    if reg then t[name].regression = t[name].regression + 1 end
    if imp then t[name].improvement = t[name].improvement + 1 end
    if reg or imp then t[name].any = t[name].any + 1 end
  end
  for _, r in ipairs(results) do
    for name, c in pairs(r.wb) do add("wb " .. name, c.regression > 0, c.improvement > 0) end
    add("hyperfine, naive", r.naive == "regression", r.naive == "improvement")
    add("asv compare", r.asv == "regression", r.asv == "improvement")
  end
  return t
end

return M
