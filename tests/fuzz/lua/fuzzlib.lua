-- Helpers of the fuzz drivers (tests/fuzz/lua/<target>.lua). A driver raises to report a
-- finding; the harness (tests/fuzz/fuzz_lua.c) prints the error and aborts.
local core = require "wb.core"
local errors = require "wb.errors"

local F = {}

local ARRAY_MT = getmetatable(core.array())
local ORDERED_MT = getmetatable(core.ordered())

-- ok, ... = F.try(fn, ...) : fn's results after true; false, err when fn raised a wb error object
-- (the documented way for parsers to reject input); any other error is re-raised as a finding,
-- with the traceback of where it happened.
function F.try(fn, ...)
  local r = table.pack(xpcall(fn, function(e)
    if errors.is(e) then return e end
    return { finding = debug.traceback(tostring(e), 2) }
  end, ...))
  if not r[1] and type(r[2]) == "table" and r[2].finding then error(r[2].finding, 0) end
  return table.unpack(r, 1, r.n)
end

-- F.check(cond, fmt, ...) : raises a finding when cond is false.
function F.check(cond, fmt, ...)
  if not cond then error(string.format(fmt, ...), 2) end
  return cond
end

-- The number of nodes of v once aliases (shared tables) are expanded, or nil past limit.
function F.size(v, limit)
  local n = 0
  local function walk(x)
    n = n + 1
    if n > limit then return false end
    if type(x) ~= "table" then return true end
    for k, y in pairs(x) do
      if not walk(k) or not walk(y) then return false end
    end
    return true
  end
  return walk(v) and n or nil
end

local function kind(v)
  if type(v) == "number" then return math.type(v) end
  return type(v)
end

-- equal, where = F.same(a, b [, opts]) : deep equality. Numbers must agree in math.type unless
-- opts.numbers_only; NaN equals NaN; with opts.nonfinite_null a NaN or infinity in a matches
-- wb.null in b; tables must agree in array-ness (wb.array metatable) and, for ordered tables with
-- opts.order, in key order. where describes the first difference.
function F.same(a, b, opts, path)
  opts = opts or {}
  path = path or "$"
  if opts.nonfinite_null and b == core.null and type(a) == "number" and (a ~= a or a == math.huge or a == -math.huge) then
    return true
  end
  if type(a) == "number" and type(b) == "number" then
    if not opts.numbers_only and math.type(a) ~= math.type(b) then
      return false, path .. ": " .. math.type(a) .. " vs " .. math.type(b)
    end
    if a == b or (a ~= a and b ~= b) then return true end
    return false, string.format("%s: %.17g vs %.17g", path, a, b)
  end
  if kind(a) ~= kind(b) then return false, path .. ": " .. kind(a) .. " vs " .. kind(b) end
  if type(a) ~= "table" then
    if a == b then return true end
    return false, string.format("%s: %q vs %q", path, tostring(a), tostring(b))
  end
  if (getmetatable(a) == ARRAY_MT) ~= (getmetatable(b) == ARRAY_MT) then
    return false, path .. ": array vs mapping"
  end
  if opts.order and getmetatable(a) == ORDERED_MT and getmetatable(b) == ORDERED_MT then
    local ka, kb = core.ordered_keys(a), core.ordered_keys(b)
    for i = 1, math.max(#ka, #kb) do
      if ka[i] ~= kb[i] then return false, path .. ": key order differs at " .. i end
    end
  end
  for k, x in pairs(a) do
    local y = b[k]
    if y == nil then return false, path .. ": key " .. tostring(k) .. " missing" end
    local ok, where = F.same(x, y, opts, path .. "." .. tostring(k))
    if not ok then return false, where end
  end
  for k in pairs(b) do
    if a[k] == nil then return false, path .. ": extra key " .. tostring(k) end
  end
  return true
end

-- F.printable(s) : s with control and non-ASCII bytes escaped, for messages.
function F.printable(s)
  return (s:gsub("[^\32-\126]", function(c) return string.format("\\x%02x", c:byte()) end))
end

return F
