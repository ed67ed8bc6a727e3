-- The `wb` module: the entry point recipes require. Submodules load on first use
-- (`wb.proc`, `wb.fs`, ...), so start-up pays only for what a recipe touches.
local core = require "wb.core"

local wb = {
  version = core.version,
  null = core.null,
  ordered = core.ordered,
  ordered_keys = core.ordered_keys,
  array = core.array,
  interrupted = core.interrupted,
  check_interrupt = core.check_interrupt,
}

setmetatable(wb, {
  __index = function(t, name)
    if type(name) ~= "string" or not core.has_module("wb." .. name) then return nil end
    local mod = require("wb." .. name)
    rawset(t, name, mod)
    return mod
  end,
})

-- Errors that carry an exit status. `level` works as in error(): 1 (default) = the caller of
-- usage()/fail(), 0 = no position.
local function level_of(level)
  if level == 0 then return 0 end
  return (level or 1) + 1
end

-- wb.usage(msg [, level]) : bad usage or input, exit 2
function wb.usage(msg, level)
  require("wb.errors").raise(2, msg, level_of(level)) -- not a tail call: levels count this frame
end

-- wb.fail(msg [, level]) : the work ran but failed, exit 1
function wb.fail(msg, level)
  require("wb.errors").raise(1, msg, level_of(level))
end

-- value = wb.check(value, err, ...) : turns an environment failure (nil, err) into an error
-- pointing at the caller's line; returns all values on success.
function wb.check(value, err, ...)
  if value == nil or value == false then
    require("wb.errors").raise(1, tostring(err or "failed"), 2)
  end
  return value, err, ...
end

-- wb.recipe{...} : declares a recipe (see lua/wb/recipe.lua)
function wb.recipe(spec)
  local recipe = require("wb.recipe").declare(spec) -- not a tail call: errors point at the recipe
  return recipe
end

return wb
