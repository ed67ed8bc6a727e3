-- Parameter sweeps: the cartesian product of named axes, in a stable order.
local core = require "wb.core"
local override = require "wb.override"

local M = {}

local null = core.null
local is_list = override.is_list
local is_axis = override.is_sequence

local function text(v)
  if type(v) == "string" then
    if v:find("[,=']") then return "'" .. v:gsub("'", "''") .. "'" end
    return v
  end
  if math.type(v) == "integer" then return tostring(v) end
  return override.format(v)
end

-- The cases for `values` (name -> value) with names in `order`; axis(v) picks the axes.
local function product(values, order, axis)
  local cases = { {} }
  for _, name in ipairs(order) do
    if axis(values[name]) then
      local nxt = {}
      for _, partial in ipairs(cases) do
        for _, v in ipairs(values[name]) do
          local c = table.move(partial, 1, #partial, 1, {})
          c[#c + 1] = { name, v }
          nxt[#nxt + 1] = c
        end
      end
      cases = nxt
    end
  end
  local out = {}
  for i, chosen in ipairs(cases) do
    local params, parts, pick = core.ordered(), {}, {}
    for _, nv in ipairs(chosen) do
      pick[nv[1]] = nv[2]
      parts[#parts + 1] = tostring(nv[1]) .. "=" .. text(nv[2])
    end
    for _, name in ipairs(order) do
      local v = pick[name]
      if v == nil then v = values[name] end
      params[name] = v
    end
    out[i] = { index = i, name = #parts > 0 and table.concat(parts, ",") or "default", params = params }
  end
  return out
end

-- cases = wb.sweep.expand(axes [, {order = {names...}}])
-- axes maps a name to a list of values (an axis) or to one value (fixed for every case). Returns
-- the cartesian product as a list of {index, name = "threads=4,chunk=8192", params = {...}}: the
-- axes in mapping order (or `order` first, then the others), the first axis varying slowest;
-- names show the axes only. An empty list gives no cases. Plain Lua tables are taken in sorted
-- key order.
function M.expand(axes, opts)
  if type(axes) ~= "table" or is_list(axes) then error("sweep.expand: axes must be a mapping", 2) end
  local names, seen = {}, {}
  for _, name in ipairs((opts and opts.order) or {}) do
    if axes[name] == nil then error("sweep.expand: order names unknown axis '" .. tostring(name) .. "'", 2) end
    if not seen[name] then
      seen[name] = true
      names[#names + 1] = name
    end
  end
  for _, name in ipairs(override.keys(axes)) do
    if not seen[name] then names[#names + 1] = name end
  end
  return product(axes, names, is_axis)
end

-- cases = wb.sweep.from_config(sweep) : expand for a config's `sweep:` block: non-empty lists
-- are axes, everything else (scalars, mappings, empty lists) is fixed. A nil or null block
-- gives one case named "default".
function M.from_config(sweep)
  if sweep == nil or sweep == null then return { { index = 1, name = "default", params = core.ordered() } } end
  if type(sweep) ~= "table" or is_list(sweep) then error("sweep.from_config: expected a mapping", 2) end
  return product(sweep, override.keys(sweep), function(v) return is_axis(v) and #v > 0 end)
end

return M
