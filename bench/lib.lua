-- Helpers for bench/*.lua: interleaved timing of several commands with wb.proc.
local wb = require "wb"
local M = {}

-- results = lib.interleave(commands, runs [, warmup]) : commands = {name = argv, ...} in a list
-- {{name, argv}}; runs them A B C A B C ... and returns {name = samples (seconds)}.
function M.interleave(commands, runs, warmup)
  local samples = {}
  for _, c in ipairs(commands) do samples[c[1]] = {} end
  for round = 1, (warmup or 2) + runs do
    for _, c in ipairs(commands) do
      local res = wb.check(wb.proc.run { argv = c[2], stdout = "null", stderr = "null" })
      if not res.ok then wb.fail(table.concat(c[2], " ") .. " failed") end
      if round > (warmup or 2) then table.insert(samples[c[1]], res.wall) end
    end
  end
  return samples
end

function M.ms(x) return string.format("%.3f ms", x * 1000) end
function M.ratio(x) return string.format("%.2f×", x) end

return M
