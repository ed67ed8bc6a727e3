-- The log scanner's Lua-facing parsers (core/scan.c): wb.scan.number agrees with wb_scan_number
-- (checked against strtod in fuzz_scan_tokens.c) and gives integers only for integer texts;
-- wb.scan.tokens and wb.scan.fields agree with a plain reading of "key=value tokens separated by
-- spaces, tabs and line breaks; no '=' or an empty key: skipped; the value may hold '='".
local F = require "fuzzlib"
local core = require "wb.core"
local scan = require "wb.scan"

local UNITS = { [1] = "s", [2] = "", [4] = "bool" }

return function(data)
  local x, unit = scan.number(data)
  local kind, y = fuzz.number(data)
  if kind == 0 then
    F.check(x == nil, "wb.scan.number accepts what wb_scan_number rejects")
  else
    F.check(unit == UNITS[kind], "unit %q for kind %d", tostring(unit), kind)
    F.check(x == y, "wb.scan.number %.17g vs wb_scan_number %.17g", x or 0 / 0, y)
    if math.type(x) == "integer" then F.check(not data:find("[.eE]"), "integer from %q", data) end
  end

  local want, last, order = {}, {}, {}
  for tok in data:gmatch("[^ \t\r\n]+") do
    local eq = tok:find("=", 1, true)
    if eq and eq > 1 then
      local k, v = tok:sub(1, eq - 1), tok:sub(eq + 1)
      want[#want + 1] = { k, v }
      if last[k] == nil then order[#order + 1] = k end
      last[k] = v
    end
  end
  local got = scan.tokens(data)
  F.check(#got == #want, "%d tokens, expected %d", #got, #want)
  for i, t in ipairs(want) do
    F.check(got[i][1] == t[1] and got[i][2] == t[2], "token %d: %q=%q, expected %q=%q", i,
      got[i][1], got[i][2], t[1], t[2])
  end
  local fields = scan.fields(data)
  local keys = core.ordered_keys(fields)
  F.check(#keys == #order, "%d fields, expected %d", #keys, #order)
  for i, k in ipairs(order) do
    F.check(keys[i] == k and fields[k] == last[k], "field %d: %q", i, k)
  end
end
