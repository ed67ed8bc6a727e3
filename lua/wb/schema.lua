-- Declared types of config keys (a recipe's `types = { ["dotted.key"] = "TYPE", ... }`), checked on
-- the composed config before anything runs or any directory is made.
--
-- TYPE is alternatives separated by `|`: null, integer, number (finite), string, boolean, list, mapping,
-- a numeric type with one bound (integer>=1, number>0, integer<=64), an integer range, of
-- multiples of N or of powers of two (integer 1..64, integer 512..65528 %8, integer 1..2048 pow2),
-- or a bare word, which is an allowed string value (interleaved|random). A key without a declared type keeps the type of
-- its default (the override rules of lua/wb/config.lua).
--
--   schema.check(cfg, types [, where])  raises exit 2: "<where>: runs must be an integer >= 1 or
--                                        null, got string 'abc'"; converts integral floats of
--                                        integer keys (runs=3.0) to integers
--   schema.describe(type)               "an integer >= 1, or null"
local core = require "wb.core"
local errors = require "wb.errors"
local override = require "wb.override"

local M = {}

local KINDS = { any = true, null = true, integer = true, number = true, string = true, boolean = true, list = true,
  mapping = true }
local ARTICLE = { any = "any value", null = "null", integer = "an integer", number = "a number", string = "a string",
  boolean = "a boolean", list = "a list", mapping = "a mapping" }

local function parse(text)
  local alts = {}
  for alt in text:gmatch("[^|]+") do
    alt = alt:match("^%s*(.-)%s*$")
    local kind, op, bound = alt:match("^(%a+)%s*([<>]=?)%s*(%-?[%d.]+)$")
    local rkind, lo, hi, mod = alt:match("^(%a+)%s+(%-?%d+)%.%.(%-?%d+)%s*(.-)$")
    if rkind then
      local step = mod:match("^%%(%d+)$")
      if rkind ~= "integer" or not (mod == "" or mod == "pow2" or step) then
        error("schema: bad range '" .. text .. "'", 3)
      end
      alts[#alts + 1] = { kind = "integer", lo = tonumber(lo), hi = tonumber(hi), step = tonumber(step),
        pow2 = mod == "pow2" }
    elseif kind then
      if kind ~= "integer" and kind ~= "number" then error("schema: a bound needs a numeric type: " .. text, 3) end
      alts[#alts + 1] = { kind = kind, op = op, bound = tonumber(bound) }
    elseif KINDS[alt] then
      alts[#alts + 1] = { kind = alt }
    elseif alt:match("^[%w_%-%.]+$") then
      alts[#alts + 1] = { word = alt }
    else
      error("schema: bad type '" .. text .. "'", 3)
    end
  end
  return alts
end

local function describe_alt(a)
  if a.word then return "'" .. a.word .. "'" end
  local s = ARTICLE[a.kind]
  if a.op then s = s .. " " .. a.op .. " " .. override.format(a.bound) end
  if a.lo then
    s = (a.pow2 and "a power of two" or a.step and ("a multiple of " .. a.step) or s) .. " in " .. a.lo .. ".." .. a.hi
  end
  return s
end

-- text = schema.describe(type) : the type in words, e.g. "an integer >= 1 or null"
function M.describe(text)
  local parts = {}
  for i, a in ipairs(parse(text)) do parts[i] = describe_alt(a) end
  if #parts <= 1 then return parts[1] or "" end
  return table.concat(parts, ", ", 1, #parts - 1) .. " or " .. parts[#parts]
end

local function in_bound(a, v)
  if a.lo then
    return v >= a.lo and v <= a.hi and (not a.step or v % a.step == 0) and (not a.pow2 or (v > 0 and v & (v - 1) == 0))
  end
  if a.op == ">=" then return v >= a.bound end
  if a.op == ">" then return v > a.bound end
  if a.op == "<=" then return v <= a.bound end
  if a.op == "<" then return v < a.bound end
  return true
end

-- ok, value = matches(alts, v) : whether v is one of the alternatives, and v as that type
local function matches(alts, v)
  local k = override.kind(v)
  for _, a in ipairs(alts) do
    if a.word then
      if v == a.word then return true, v end
    elseif a.kind == "any" then
      return true, v
    elseif a.kind == "null" then
      if v == core.null then return true, v end
    elseif a.kind == "integer" then
      local i = (k == "integer" or k == "float") and math.tointeger(v)
      if i and in_bound(a, i) then return true, i end
    elseif a.kind == "number" then
      if (k == "integer" or (k == "float" and v > -math.huge and v < math.huge)) and in_bound(a, v) then
        return true, v
      end
    elseif a.kind == k or ((a.kind == "list" or a.kind == "mapping") and type(v) == "table" and next(v) == nil) then
      return true, v -- an empty {} is either
    end
  end
  return false
end

local function show(v)
  local k = override.kind(v)
  if k == "string" then return "string '" .. v .. "'" end
  if k == "null" then return "null" end
  return k .. " " .. override.format(v)
end

-- schema.check(cfg, types [, where]) : checks (and normalises) every declared key of cfg;
-- where(tbl, key) names where a value was set ("FILE:LINE", "override '...'"), as config.where
function M.check(cfg, types, where)
  if not types then return end
  local keys = {}
  for key in pairs(types) do keys[#keys + 1] = key end
  table.sort(keys)
  for _, key in ipairs(keys) do
    local t, last = cfg, nil
    local segs = {}
    for seg in key:gmatch("[^.]+") do segs[#segs + 1] = seg end
    for i = 1, #segs - 1 do
      t = type(t) == "table" and t[segs[i]] or nil
    end
    last = segs[#segs]
    local v = type(t) == "table" and t[last] or nil
    if v ~= nil then
      local ok, conv = matches(parse(types[key]), v)
      if not ok then
        local at = where and where(t, last)
        errors.raise(2, (at and (at .. ": ") or "") .. key .. " must be " .. M.describe(types[key]) ..
          ", got " .. show(v), 0)
      end
      if conv ~= v or math.type(conv) ~= math.type(v) then t[last] = conv end -- 3.0 == 3 in Lua
    end
  end
end

return M
