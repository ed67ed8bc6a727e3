-- examples/recipes/compressors.lua, the recipe docs/recipes.md walks through: its page's table
-- against the run's own samples (summary.json and manifest.json), and its chart.
local T = require "wb.test"
local wb = require "wb"
local fs, json = wb.fs, wb.json

local function mean(xs)
  local s = 0
  for _, x in ipairs(xs) do s = s + x end
  return s / #xs
end

T.case("three compressors over two inputs: the table is the samples' means, the chart is there", function()
  for _, tool in ipairs { "gzip", "xz", "zstd" } do
    if not wb.proc.which(tool) then return T.skip(tool .. ": not installed (make deps)") end
  end
  local d = T.tmpdir()
  local text = ("the quick brown fox %d\n"):rep(20000):gsub("%%d", "jumps")
  assert(fs.write(d .. "/a.txt", text))
  assert(fs.write(d .. "/b.bin", assert(fs.read(T.wb_binary())):sub(1, 400000)))
  local res = T.wb({ "run", T.root() .. "/examples/recipes/compressors.lua", "runs=3",
    "inputs=[" .. d .. "/a.txt, " .. d .. "/b.bin]", "-o", d .. "/run" }, { timeout = 120 })
  T.eq(res.code, 0, res.stderr)
  local html = assert(fs.read(d .. "/run/report.html"))
  local summary = assert(json.read(d .. "/run/summary.json"))
  local manifest = T.manifest(d .. "/run")
  T.eq(#summary.commands, 6, "3 compressors x 2 inputs")
  local shown = {}
  for tool, input, m, n in html:gmatch('<tr><td>(%w+)</td><td>([%w.]+)</td><td class="r">([%d.]+)</td>'
    .. '<td class="r">[%d.]+</td><td class="r">(%d+)</td></tr>') do
    shown[tool .. " " .. input] = { mean = tonumber(m), n = tonumber(n) }
  end
  local seen = 0
  for i, cmd in ipairs(summary.commands) do
    local key = cmd.argv[1] .. " " .. cmd.parameters.input:match("[^/]*$")
    local row = shown[key]
    T.ok(row, "a table row for " .. key)
    local wall = cmd.samples.wall
    T.eq(row.n, #wall, key .. ": runs")
    T.eq(#wall, 3)
    T.near(row.mean, mean(wall) * 1e3, 6e-4, key .. ": the mean of summary.json's samples")
    local rec = manifest.runs[i]
    T.eq(rec.name, cmd.name)
    T.near(row.mean, mean(rec.samples.wall_seconds) * 1e3, 6e-4, key .. ": the mean of manifest.json's samples")
    seen = seen + 1
  end
  T.eq(seen, 6)
  T.eq(T.count(html, "<svg "), 1, "one chart")
  T.match(html, "<title>Mean wall time per compressor and input</title>")
  T.ok(not html:find("<script", 1, true), "no script")
  local chart = html:match("<svg .-</svg>")
  for key in pairs(shown) do
    T.match(chart, ">" .. key:gsub(" ", " · "):gsub("%p", "%%%0") .. "<", "the chart has a bar for " .. key)
  end
end)
