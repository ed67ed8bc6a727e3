-- Memory stays flat: peak RSS of wb over 10,000 benchmark runs against 100 runs.
local wb = require "wb"

-- Linux adds the RSS of the process image a child replaces at exec to the child's ru_maxrss, so
-- wb bench is started by a small launcher (bench/peakrss.c), not by this (larger) wb process.
local function peak(launcher, bin, runs, dir)
  local res = wb.check(wb.proc.run { argv = { launcher, bin, "bench", "/bin/true", "runs=" .. runs, "-o", dir },
    stdout = "capture", stderr = "capture" })
  if not res.ok then wb.fail("wb bench failed: " .. res.stderr) end
  return tonumber(res.stdout:match("(%d+)%s*$"))
end

return {
  title = "Memory (target: 10,000 runs grow peak RSS by ≤ 2 MB over 100 runs)",
  run = function(opts)
    local big = opts.smoke and 500 or 10000
    local tmp = wb.fs.tmpdir("wbbench")
    local launcher = tmp .. "/peakrss"
    local cc = wb.proc.run { argv = { "cc", "-O2", "-o", launcher, "bench/peakrss.c" }, stderr = "capture" }
    if not cc.ok then wb.fail("cannot build bench/peakrss.c: " .. cc.stderr) end
    local bin = require("wb.core").exe_path()
    local small_kb = peak(launcher, bin, 100, tmp .. "/small")
    local big_kb = peak(launcher, bin, big, tmp .. "/big")
    wb.fs.remove_tree(tmp)
    local growth = (big_kb - small_kb) / 1024
    return {
      command = "build/wb run bench/run.lua only=memory",
      figures = {
        { name = "peak RSS, 100 runs", value = string.format("%.1f MiB", small_kb / 1024) },
        { name = string.format("peak RSS, %d runs", big), value = string.format("%.1f MiB", big_kb / 1024) },
        { name = "growth", value = string.format("%.2f MiB", growth), target = "≤ 2 MB", met = growth <= 2 },
      },
      notes = "Peak RSS of the `wb bench /bin/true runs=N` process (wait4 ru_maxrss, started by bench/peakrss.c), " ..
        "summary, reports and manifest included.",
    }
  end,
}
