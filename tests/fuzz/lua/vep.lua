-- The VEP profile reader of recipes/vep_breakdown.lua: its scan rules (the recipe's RULES) on any
-- log must give what the plain-Lua reading of the scanner contract gives (scanref.lua), and its
-- analysis, reading, Markdown, summary, comparison and JSON must not fail on what the scan returns.
-- The recipe's functions are taken from its run function's upvalues, so this follows the recipe.
local F = require "fuzzlib"
local json = require "wb.json"
local ref = require "scanref"

local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/fuzz/lua/[^/]+$")
local recipe = dofile(root .. "/recipes/vep_breakdown.lua")

local function upvalue(fn, name)
  for i = 1, math.huge do
    local n, v = debug.getupvalue(fn, i)
    if n == nil then error("recipes/vep_breakdown.lua: no upvalue " .. name, 0) end
    if n == name then return v end
  end
end

local analyse = upvalue(recipe.run, "analyse")
local read_breakdown = upvalue(recipe.run, "read_breakdown")
local markdown = upvalue(recipe.run, "markdown")
local summary_md = upvalue(recipe.run, "summary_md")
local compare = upvalue(recipe.run, "compare")
local RULES = upvalue(analyse, "RULES")
local CFG = { bound_ratio = 0.2, top = 4, wall = "auto" }

return function(data)
  local path = fuzz.tmpfile(data)
  local gzip = data:sub(1, 2) == "\x1f\x8b"
  if not gzip then ref.check(RULES, data, assert(require("wb.scan").file(path, { rules = RULES }))) end
  local ok, b, err = F.try(analyse, path, 0)
  F.check(ok, "analyse raised %s", tostring(b))
  if not b then
    F.check(gzip, "analyse failed on a plain log: %s", tostring(err))
    return
  end
  for _, wall in ipairs({ false, 1.5 }) do
    F.check(F.try(read_breakdown, b, CFG, wall or nil), "read_breakdown raised")
    F.check(F.try(markdown, b, "t"), "markdown raised")
    F.check(F.try(summary_md, b, wall and { argv = { "x" }, exit_code = 0, wall_seconds = wall } or nil), "summary_md raised")
  end
  F.check(F.try(compare, b, b), "compare raised")
  json.decode(json.encode(b))
end
