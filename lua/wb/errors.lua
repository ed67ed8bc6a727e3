-- Error objects with an exit status: {exit = 1|2, msg = "where: what"}. lua/wb/cli.lua and
-- core/main.c print them as one line `wb: <msg>` and exit with `exit`.
local M = {}

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return e.msg end
Error.__name = "wb.error"

-- Raises an error object; level as in error() (0 = no position).
function M.raise(exit, msg, level)
  level = level or 1
  local where = ""
  if level > 0 then
    local info = debug.getinfo(level + 1, "Sl")
    if info and info.currentline and info.currentline > 0 then
      where = info.short_src .. ":" .. info.currentline .. ": "
    end
  end
  error(setmetatable({ exit = exit, msg = where .. msg }, Error), 0)
end

-- True for wb error objects.
function M.is(e) return getmetatable(e) == Error end

-- Wraps any error value as an error object (keeps wb errors and interrupts unchanged).
function M.wrap(e, exit)
  if type(e) == "table" then return e end
  return setmetatable({ exit = exit or 1, msg = tostring(e) }, Error)
end

return M
