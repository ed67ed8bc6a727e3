-- The previous-run baseline of a campaign (DESIGN §5): the latest complete run of the same
-- recipe beside it with the same compatibility scope, or `--baseline PATH`; and, when there is
-- none, why: which configuration key, tool version or input made the nearest run incompatible.
--
--   local base, path, why = baseline.find(dir, manifest, explicit, campaign.read_manifest)
local fs = require "wb.fs"
local json = require "wb.json"
local util = require "wb.util"

local M = {}

-- How many differing keys a reason names before "and N more".
local NAMED = 3
-- A value longer than this is shown cut.
local VALUE_WIDTH = 40

-- The latest first: by finished_at_utc (whole seconds), then by the manifest's mtime.
local function later(key, best_key)
  return not best_key or key[1] > best_key[1] or (key[1] == best_key[1] and key[2] > best_key[2])
end

-- Every leaf of a configuration tree as dotted key → JSON text (lists are leaves: their order is
-- their meaning).
local function flatten(t, prefix, out)
  out = out or {}
  for k, v in pairs(t) do
    local key = prefix and (prefix .. "." .. tostring(k)) or tostring(k)
    if type(v) == "table" and not util.is_list(v) and next(v) ~= nil then
      flatten(v, key, out)
    else
      out[key] = json.encode(v)
    end
  end
  return out
end

local function shown(key, text)
  if text == nil then return "unset" end
  for part in key:gmatch("[^%.]+") do
    if util.is_secret_key(part) then return "[REDACTED]" end
  end
  return #text > VALUE_WIDTH and text:sub(1, VALUE_WIDTH - 1) .. "…" or text
end

-- The differences of two flat maps as "key: old → new" texts, sorted by key.
local function differences(old, new, label)
  local keys, seen = {}, {}
  for k in pairs(old) do keys[#keys + 1], seen[k] = k, true end
  for k in pairs(new) do if not seen[k] then keys[#keys + 1] = k end end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    if old[k] ~= new[k] then
      out[#out + 1] = string.format("%s%s: %s → %s", label or "", k, shown(k, old[k]), shown(k, new[k]))
    end
  end
  return out
end

-- pre = baseline.preflight(dir) : the run directory's preflight.json, or nil
function M.preflight(dir)
  local p = json.read(dir .. "/preflight.json")
  return type(p) == "table" and p or nil
end
local preflight_of = M.preflight

-- The tools' versions and the inputs' sizes of a preflight, as a flat map.
local function environment(p)
  local out = {}
  for name, v in pairs(type(p.tools) == "table" and p.tools or {}) do out[tostring(name)] = json.encode(v) end
  for _, inp in ipairs(type(p.inputs) == "table" and p.inputs or {}) do
    if type(inp) == "table" and inp.path then out["input " .. tostring(inp.path)] = json.encode(inp.size) end
  end
  return out
end

-- why = baseline.incompatibility(other, other_dir, manifest, dir) : what made run other_dir
-- (its manifest other) incompatible with this run (dir, manifest), in words
function M.incompatibility(other, other_dir, manifest, dir)
  -- both configurations as JSON gives them back (lists as arrays, whichever reader made them)
  local function config_of(m)
    return type(m.configuration) == "table" and flatten(json.decode(json.encode(m.configuration))) or {}
  end
  local diffs = differences(config_of(other), config_of(manifest))
  if #diffs == 0 then
    local po, pn = preflight_of(other_dir), preflight_of(dir)
    if po and pn then diffs = differences(environment(po), environment(pn), "") end
  end
  if #diffs == 0 then return "its compatibility scope differs" end
  local more = #diffs > NAMED and string.format(", and %d more", #diffs - NAMED) or ""
  return "it differs in " .. table.concat(diffs, ", ", 1, math.min(#diffs, NAMED)) .. more
end

-- base, path, why, nearest = baseline.find(dir, manifest, explicit, read_manifest) : the
-- baseline of the run in dir (its manifest): explicit (a manifest or a run directory, from
-- --baseline) or the latest complete, non-dry run of the same recipe and compatibility scope
-- beside dir. Without one: nil, nil, why (a sentence) and the nearest run that was passed over
-- (the latest complete run of the recipe), or nil. An explicit baseline that cannot be read
-- gives nil and the reader's error as why.
function M.find(dir, manifest, explicit, read_manifest)
  if explicit then
    local path = explicit:match("%.json$") and explicit or (explicit .. "/manifest.json")
    local m, err = read_manifest(path)
    if not m then return nil, nil, err end
    return m, path
  end
  local best, best_path, best_key, near, near_dir, near_key
  local parent = util.dirname(dir)
  for _, name in ipairs(fs.list(parent) or {}) do
    local other_dir = parent .. "/" .. name
    local path = other_dir .. "/manifest.json"
    local st = name ~= "latest" and other_dir ~= dir and fs.stat(path)
    local m = st and st.type == "file" and read_manifest(path)
    if m and m.recipe == manifest.recipe and m.status == "complete" and not m.dry_run then
      local key = { tostring(m.finished_at_utc or m.created_at_utc), st.mtime or 0 }
      if m.compatibility_scope == manifest.compatibility_scope then
        if later(key, best_key) then best, best_path, best_key = m, path, key end
      elseif later(key, near_key) then
        near, near_dir, near_key = m, other_dir, key
      end
    end
  end
  if best then return best, best_path end
  if not near then
    return nil, nil, string.format("no earlier complete run of %s in %s/", tostring(manifest.recipe), parent)
  end
  return nil, nil, string.format("the latest complete run of %s, %s, is not comparable: %s; to compare with it " ..
    "anyway: --baseline %s", tostring(manifest.recipe), near_dir, M.incompatibility(near, near_dir, manifest, dir),
    near_dir), near_dir
end

return M
