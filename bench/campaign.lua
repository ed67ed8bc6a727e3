-- Campaigns at scale: a 10,000-case campaign of /bin/true (the seconds each thousand cases take,
-- first against last: the manifest's cost must not grow with the runs already recorded), and a
-- child writing 1 GB without a newline (wb's peak RSS must stay bounded).
local wb = require "wb"
local lib = dofile("bench/lib.lua")

return {
  title = "Campaigns at scale (targets: the last thousand cases ≤ 1.5× the first; 1 GB without a newline in ≤ 64 MiB)",
  run = function(opts)
    local cases, block = opts.smoke and 400 or 10000, opts.smoke and 100 or 1000
    local bytes = opts.smoke and 50000000 or 1000000000
    local tmp = wb.fs.tmpdir("wbbench")
    local _, total = lib.run({ lib.wb, "run", "bench/fixtures/cases.lua", "cases=" .. cases, "block=" .. block,
      "times=" .. tmp .. "/times", "-o", tmp .. "/cases" })
    local blocks = {}
    for _, t in (wb.fs.read(tmp .. "/times") or ""):gmatch("(%d+) (%S+)") do blocks[#blocks + 1] = tonumber(t) end
    local launcher = lib.cc("bench/peakrss.c", tmp)
    local res = lib.run({ launcher, lib.wb, "run", "bench/fixtures/noline.lua", "bytes=" .. bytes })
    local seen, long, kb = res.stdout:match("^(%d+) (%d+)%s+(%d+)%s*$")
    wb.fs.remove_tree(tmp)
    local first, last = blocks[1], blocks[#blocks]
    local ratio = last / first
    local mib = tonumber(kb) / 1024
    return {
      command = "build/wb run bench/run.lua only=campaign",
      figures = {
        { name = string.format("%d cases of /bin/true, total", cases), value = string.format("%.1f s", total) },
        { name = string.format("first %d cases", block), value = string.format("%.2f s", first) },
        { name = string.format("last %d cases", block), value = string.format("%.2f s", last) },
        { name = "last / first", value = string.format("%.2f×", ratio), target = "≤ 1.5×", met = ratio <= 1.5 },
        { name = string.format("%.0f MB without a newline: bytes seen by the line callback", bytes / 1e6),
          value = string.format("%s (%s line over 1 MiB counted)", seen, long), target = tostring(bytes), met = tonumber(seen) == bytes },
        { name = "peak RSS of wb reading it", value = string.format("%.1f MiB", mib), target = "≤ 64 MiB", met = mib <= 64 },
      },
      notes = "Each case is one c:run + c:spawn (logs, events, the kill -9 journal, its manifest record). " ..
        "The peak RSS is wait4's ru_maxrss of the wb process (started by bench/peakrss.c).",
    }
  end,
}
