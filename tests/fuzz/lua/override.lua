-- The override grammar (lua/wb/override.lua): parse any text; a rejection must be a wb error
-- (exit 2). An accepted override must be consistent, and each sweep element's source text must
-- read back as the same value on its own (wb.override.multirun rebuilds overrides from it).
local F = require "fuzzlib"
local override = require "wb.override"

local OPS = { set = "", add = "+", force = "++", delete = "~" }

return function(data)
  local ok, o = F.try(override.parse, data)
  if not ok then
    F.check(o.exit == 2 and o.msg:find("override '", 1, true) == 1, "bad rejection: %s", tostring(o))
    return
  end
  F.check(OPS[o.op] == o.prefix, "op %s with prefix %q", tostring(o.op), tostring(o.prefix))
  F.check(o.key ~= "" and #o.path >= 1, "empty key")
  F.check(o.has_value == (o.values ~= nil), "has_value and values disagree")
  if not o.has_value then return end
  F.check(#o.values >= 1, "no values")
  for i, e in ipairs(o.values) do
    local k = override.kind(e.value)
    F.check(k ~= "nil", "value %d is nil", i)
    local read, again = F.try(override.parse, "k=" .. e.raw)
    F.check(read, "raw %q of value %d is rejected: %s", e.raw, i, tostring(again))
    F.check(#again.values == 1, "raw %q of value %d reads as %d values", e.raw, i, #again.values)
    local same, where = F.same(e.value, again.value, { order = true })
    F.check(same, "raw %q of value %d reads back differently: %s", e.raw, i, where or "")
    override.format(e.value)
  end
  local runs = override.multirun({ data })
  F.check((runs == nil) == (#o.values == 1), "multirun disagrees with the sweep")
  if runs then F.check(#runs == #o.values, "multirun gave %d runs for %d values", #runs, #o.values) end
end
