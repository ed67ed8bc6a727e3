-- The results history at scale: `wb history` indexing 10,000 records (copies of one real `wb
-- bench` run, tests/fixtures/recipes/history_copies.lua), an update that finds them unchanged, a
-- rebuild; and the `wb trend` page of 1,000 series × 200 points: its size, the time wb takes to
-- write it, and the time headless Chromium takes to open it (the page's own clock at the end of
-- its script: JSON parsed, 1,000 cards built, the visible charts drawn).
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

return {
  title = "Results history: index build for 10,000 records, the trend page of 1,000 series × 200 points (targets: open in under 2 s)",
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
    wb.fs.remove_tree(dir)
    return {
      command = "build/wb run bench/run.lua only=history",
      figures = {
        { name = string.format("wb history: index %d records (a new index)", nrec),
          value = string.format("%s (%.2f ms per record)", wb.util.format_seconds(build), build / nrec * 1000) },
        { name = "wb history: the same records again (nothing changed)", value = wb.util.format_seconds(again) },
        { name = "wb history --rebuild", value = wb.util.format_seconds(rebuild) },
        { name = "index size", value = wb.util.format_bytes(db and db.size or 0) },
        { name = string.format("wb trend page of %d series × %d points: size, time to write", nseries, npoints),
          value = string.format("%s, %s", wb.util.format_bytes(#html), wb.util.format_seconds(write)) },
        { name = "the page's open time in headless Chromium (its script done, visible charts drawn)",
          value = open and wb.util.format_seconds(open) or why, target = "< 2 s", met = open and open < 2 or nil },
      },
      notes = "No side-by-side figure with asv's publish yet (asv, from PyPI, is not set up here with these records "
        .. "converted to its result format); the time per record is given instead. Records are "
        .. "copies of one `wb bench` run of 10 samples (7 metrics each). Load average at the end: " .. lib.loadavg() .. ".",
    }
  end,
}
