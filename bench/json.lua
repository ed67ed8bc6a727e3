-- Decoding large JSON (wb.json.read, through cJSON): wall time and the peak RSS of a wb process
-- that reads a wb.bench summary of 100 MB and one of 500 MB (2500 and 12500 commands of 1000 runs
-- each: sample lists and statistics, as `wb bench` writes them).
local wb = require "wb"
local lib = dofile("bench/lib.lua")

-- A recipe that reads path and prints the seconds wb.json.read took.
local READER = [[
local wb = require "wb"
return wb.recipe {
  defaults = { path = "" },
  run = function(ctx)
    local t = wb.clock.timer()
    assert(wb.json.read(ctx.cfg.path))
    io.write(string.format("%.6f\n", t:elapsed()))
    return 0
  end,
}
]]

local function samples(x, n, base, spread, fmt)
  local out = {}
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648 -- a fixed LCG: the same documents every run
    out[i] = string.format(fmt, base + (x % 10000) / 10000 * spread)
  end
  return "[" .. table.concat(out, ", ") .. "]", x
end

local function stats(x)
  return string.format('{"n": 1000, "min": %.6f, "max": %.6f, "mean": %.6f, "stddev": %.9f, "median": %.6f, '
    .. '"mad": %.6f, "p5": %.6f, "p95": %.6f, "q1": %.6f, "q3": %.6f}', x, x * 1.1, x * 1.05, x / 300, x * 1.04,
    x / 500, x * 1.01, x * 1.09, x * 1.02, x * 1.07)
end

-- Writes a summary of about `mb` MB to path and returns its size in bytes.
local function summary(path, mb)
  local f = assert(io.open(path, "wb"))
  f:write('{\n  "schema_name": "wb.bench",\n  "schema_version": 1,\n  "created_at_utc": "2026-11-29T14:00:00Z",\n',
    '  "wb_version": "0.1.0",\n  "settings": {"runs": 1000, "min_runs": 10, "min_time": 3.0, "warmup": 1, ',
    '"shell": false, "order": "interleaved", "seed": 1, "reference": "cmd 1", "shell_spawn_seconds": null},\n',
    '  "commands": [\n')
  local x, size, i = 12345, 0, 0
  while size < mb * 1000000 do
    i = i + 1
    local wall, user, sys, rss, code
    wall, x = samples(x, 1000, 0.2, 0.01, "%.6f")
    user, x = samples(x, 1000, 0.19, 0.01, "%.6f")
    sys, x = samples(x, 1000, 0.008, 0.001, "%.7f")
    rss, x = samples(x, 1000, 5000, 200, "%.0f")
    code = "[" .. string.rep("0, ", 999) .. "0]"
    local cmd = string.format(
      '%s    {"name": "cmd %d", "command": "xz -k -T%d data", "argv": ["xz", "-k", "-T%d", "data"], '
      .. '"parameters": {"threads": %d},\n     "samples": {"wall": %s,\n       "user": %s,\n       "sys": %s,\n'
      .. '       "maxrss_kb": %s,\n       "exit_code": %s},\n     "stats": {"wall": %s, "user": %s, "sys": %s, '
      .. '"maxrss_kb": %s},\n     "maxrss_upper_bound": false, "outliers": {"wall": [], "user": []}}',
      i > 1 and ",\n" or "", i, i, i, i, wall, user, sys, rss, code, stats(0.2), stats(0.19), stats(0.008), stats(5000))
    f:write(cmd)
    size = size + #cmd
  end
  f:write('\n  ]\n}\n')
  f:close()
  return size
end

return {
  title = "JSON decoding (targets: peak RSS ≤ 3× the file for 100 MB and 500 MB summaries)",
  run = function(opts)
    local dir = wb.fs.tmpdir("wbbench")
    local launcher = lib.cc("bench/peakrss.c", dir)
    assert(wb.fs.write(dir .. "/read.lua", READER))
    local figures = {}
    for _, mb in ipairs(opts.smoke and { 1 } or { 100, 500 }) do
      local path = dir .. "/summary.json"
      local bytes = summary(path, mb)
      local res = lib.run({ launcher, lib.wb, "run", dir .. "/read.lua", "path=" .. path })
      local seconds, kb = res.stdout:match("^([%d.]+)\n(%d+)%s*$")
      seconds, kb = tonumber(seconds), tonumber(kb)
      local ratio = kb * 1024 / bytes
      figures[#figures + 1] = { name = string.format("%d MB summary: decode", mb),
        value = string.format("%.2f s (%.0f MB/s)", seconds, bytes / 1e6 / seconds) }
      figures[#figures + 1] = { name = string.format("%d MB summary: peak RSS", mb),
        value = string.format("%.0f MB (%.2f× the file)", kb * 1024 / 1e6, ratio), target = "≤ 3×", met = ratio <= 3 }
      wb.fs.remove(path)
    end
    wb.fs.remove_tree(dir)
    return {
      command = "build/wb run bench/run.lua only=json",
      figures = figures,
      notes = "One run each: wb.json.read's wall time inside the process, and the whole wb process's peak RSS "
        .. "(wait4 ru_maxrss, started by bench/peakrss.c), the text of the file and the decoded tables included. "
        .. "Before cJSON (the hand-written parser, wb at 86456f1 running this section just before, load about 1): "
        .. "100 MB in 1.27 s (79 MB/s), peak 318 MB (3.18×); 500 MB in 7.33 s (68 MB/s), peak 1573 MB (3.15×).",
    }
  end,
}
