-- Memory stays flat: peak RSS of wb over 10,000 benchmark runs against 100 runs.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

-- Linux adds the RSS of the process image a child replaces at exec to the child's ru_maxrss, so
-- wb bench is started by a small launcher (bench/peakrss.c), not by this (larger) wb process.
local function peak(launcher, runs, dir)
  local res = lib.run({ launcher, lib.wb, "bench", "/bin/true", "runs=" .. runs, "-o", dir })
  return tonumber(res.stdout:match("(%d+)%s*$"))
end

return {
  title = "Memory (target: 10,000 runs grow peak RSS by ≤ 2 MB over 100 runs)",
  run = function(opts)
    local big = opts.smoke and 500 or 10000
    local tmp = wb.fs.tmpdir("wbbench")
    local launcher = lib.cc("bench/peakrss.c", tmp)
    local small_kb = peak(launcher, 100, tmp .. "/small")
    local big_kb = peak(launcher, big, tmp .. "/big")
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
