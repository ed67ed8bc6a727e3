-- A deterministic cProfile pass over a Python command: `python -m cProfile -o FILE script args`
-- run by a campaign, the .prof kept, and its functions by cumulative time read back through the
-- interpreter's own pstats (as a table and as text).
--
--   local cp = wb.cprofile.run(c, argv, {cwd, env, timeout, top = 25})
--   -- cp = {file = "profiles/cprofile.prof", text = "profiles/cprofile.txt", total_seconds, calls,
--   --       top = {{name, file, line, calls, primitive_calls, self_seconds, cumulative_seconds}}}
--   -- or {skipped = "why"} when argv is no Python command or the pass failed
local M = {}

-- Interpreter options that take a value.
local WITH_VALUE = { ["-X"] = true, ["-W"] = true, ["-Q"] = true }

-- interpreter, flags, rest = python_of(argv) : the Python interpreter of a command run as
-- `python3[.X] [flags] script.py ...`, its flags (-u, -X dev, ...) and the script with its
-- arguments; or nil, why (not Python, -m or -c, no script)
function M.python_of(argv)
  local exe = argv[1] and tostring(argv[1])
  local base = exe and exe:match("([^/]+)$") or ""
  if not base:match("^python3?[%d.]*$") then
    return nil, "not a Python command (" .. (exe or "nothing") .. "): a cProfile pass needs python3 SCRIPT ..."
  end
  local flags, i = {}, 2
  while argv[i] and tostring(argv[i]):match("^%-") do
    local a = tostring(argv[i])
    if a == "-m" or a == "-c" or a == "-" then
      return nil, "`" .. table.concat(argv, " ") .. "`: a cProfile pass needs a script file, not " .. a
    end
    flags[#flags + 1] = a
    if WITH_VALUE[a] and argv[i + 1] then
      flags[#flags + 1] = tostring(argv[i + 1])
      i = i + 1
    end
    i = i + 1
  end
  local rest = {}
  for k = i, #argv do rest[#rest + 1] = tostring(argv[k]) end
  if #rest == 0 then return nil, "no script after " .. exe end
  return exe, flags, rest
end

-- The interpreter's own pstats, printing the top functions by cumulative time as tab-separated
-- rows (file, line, name, calls, primitive calls, self, cumulative) after a totals line.
local READER = [[
import pstats, sys
st = pstats.Stats(sys.argv[1])
print("total\t%d\t%d\t%.9f" % (st.total_calls, st.prim_calls, st.total_tt))
rows = sorted(st.stats.items(), key=lambda kv: -kv[1][3])[:int(sys.argv[2])]
for (file, line, name), (cc, nc, tt, ct, callers) in rows:
    print("%s\t%d\t%s\t%d\t%d\t%.9f\t%.9f" % (file, line, name, nc, cc, tt, ct))
]]

local function parse(text)
  local out = { top = {} }
  for line in text:gmatch("[^\n]+") do
    local f = {}
    for field in (line .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = field end
    if f[1] == "total" then
      out.calls, out.primitive_calls, out.total_seconds = tonumber(f[2]), tonumber(f[3]), tonumber(f[4])
    elseif #f == 7 then
      out.top[#out.top + 1] = { file = f[1], line = tonumber(f[2]), name = f[3], calls = tonumber(f[4]),
        primitive_calls = tonumber(f[5]), self_seconds = tonumber(f[6]), cumulative_seconds = tonumber(f[7]) }
    end
  end
  return out
end

-- text = cprofile.table_text(cp, n) : the top rows as an aligned text table
function M.table_text(cp, n)
  local util = require "wb.util"
  local rows = { { "cumulative", "self", "calls", "function" } }
  for i, r in ipairs(cp.top) do
    if i > n then break end
    local where = r.file == "~" and r.name or string.format("%s (%s:%d)", r.name, r.file:match("[^/]*$"), r.line)
    rows[#rows + 1] = { util.format_seconds(r.cumulative_seconds), util.format_seconds(r.self_seconds),
      r.calls == r.primitive_calls and tostring(r.calls) or (r.calls .. "/" .. r.primitive_calls), where }
  end
  return require("wb.report").table(rows, { align = { "r", "r", "r", "l" } })
end

-- cp = cprofile.run(c, argv [, {cwd, env, timeout, top = 25, name = "cprofile"}]) : the pass, as
-- the campaign c's run `name` (its logs in logs/); see the header
function M.run(c, argv, opts)
  opts = opts or {}
  local name, top = opts.name or "cprofile", opts.top or 25
  local python, flags, rest = M.python_of(argv)
  if not python then return { skipped = flags } end
  local fs = require "wb.fs"
  assert(fs.mkdir_p(c.dir .. "/profiles"))
  local prof = "profiles/" .. name .. ".prof"
  local pargv = { python }
  for _, a in ipairs(flags) do pargv[#pargv + 1] = a end
  for _, a in ipairs({ "-m", "cProfile", "-o", c.dir .. "/" .. prof }) do pargv[#pargv + 1] = a end
  for _, a in ipairs(rest) do pargv[#pargv + 1] = a end
  local res
  c:run(name, function(rec)
    res = require("wb").check(c:spawn(name, { argv = pargv, cwd = opts.cwd, env = opts.env, timeout = opts.timeout }))
    rec.profiler = "python_cprofile"
    return res.ok
  end)
  if not res or not res.ok then return { skipped = "the cProfile run failed; see logs/" .. name .. ".stderr.log" } end
  local read = require("wb.proc").run { argv = { python, "-c", READER, c.dir .. "/" .. prof, tostring(top) },
    stdout = "capture", stderr = "capture" }
  if not read.ok then return { skipped = "reading " .. prof .. " failed: " .. read.stderr } end
  local cp = parse(read.stdout)
  cp.file = prof
  cp.text = "profiles/" .. name .. ".txt"
  c:write(cp.text, M.table_text(cp, top))
  return cp
end

return M
