-- `wb compare` of two large generic JSON documents (400k numeric keys each, every value changed
-- by up to ±10%): wall time and the peak RSS of the wb process, per key.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local function document(path, n, scale)
  local parts, x = { "{" }, 12345
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648 -- a fixed LCG: the same documents every run
    local v = (x % 100000) / 100000 + 0.001
    local f = scale and (0.9 + (x % 2001) / 10000) or 1
    parts[#parts + 1] = string.format('%s"k%d": %.6f', i > 1 and "," or "", i, v * f)
  end
  parts[#parts + 1] = "}\n"
  assert(wb.fs.write(path, table.concat(parts)))
end

return {
  title = "wb compare on 400k-key generic JSON (targets: ≤ 1.5 KB of peak RSS per key, ≤ 20 s)",
  run = function(opts)
    local n = opts.smoke and 20000 or 400000
    local load = (wb.fs.read("/proc/loadavg") or "?"):match("^(%S+)")
    local dir = wb.fs.tmpdir("wbbench")
    document(dir .. "/a.json", n)
    document(dir .. "/b.json", n, true)
    local t = wb.clock.timer()
    local res = assert(wb.proc.run { argv = { lib.wb, "compare", dir .. "/a.json", dir .. "/b.json" },
      stdout = "null", stderr = "capture", timeout = 600 })
    local wall = t:elapsed()
    assert(res.code == 0, res.stderr)
    wb.fs.remove_tree(dir)
    local per_key = res.maxrss_kb * 1024 / n
    return {
      command = "build/wb run bench/run.lua only=compare",
      figures = {
        { name = n .. " keys: wall time", value = string.format("%.1f s", wall), target = "≤ 20 s", met = wall <= 20 },
        { name = n .. " keys: peak RSS", value = string.format("%.0f MB (%.2f KB per key)", res.maxrss_kb / 1024,
          per_key / 1024), target = "≤ 1.5 KB per key", met = per_key <= 1536 },
      },
      notes = "One run, at a load average of " .. load .. " on this machine. Before the change (wb at 0dc8e94, "
        .. "equivalent files, load about 3): 15.2 s and 1009 MB.",
    }
  end,
}
