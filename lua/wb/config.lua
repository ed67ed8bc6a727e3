-- Config composition (DESIGN §4), Hydra-style. A profile `profiles/NAME.yaml` has a `defaults:`
-- list of config group choices (`- machine: local`); `profiles/GROUP/OPTION.yaml` merges under
-- the key GROUP unless its header says `# @package _global_` (or another package); defaults
-- lists are expanded by lua/wb/defaults.lua. Command-line overrides (grammar: lua/wb/override.lua)
-- re-select groups before merging, then change keys with type checks; then `${...}`
-- interpolation runs (lua/wb/interpolate.lua).
local util = require "wb.util"
local core = require "wb.core"
local defaults = require "wb.defaults"
local errors = require "wb.errors"
local interpolate = require "wb.interpolate"
local override = require "wb.override"

local M = {}

local null = core.null
local deep_equal = util.deep_equal
local kind = override.kind

local function raise(msg) errors.raise(2, msg, 0) end

-- ---- values and where they were defined ------------------------------------------------

-- origin[tbl][key] = "FILE:LINE" (or "override '...'", or the recipe file) for a composed table.
local origin = setmetatable({}, { __mode = "k" })
-- composed[cfg] = {search_path = {...}} for configs returned by compose.
local composed = setmetatable({}, { __mode = "k" })

local function note(t, k, where)
  if not where then return end
  local o = origin[t]
  if not o then
    o = {}
    origin[t] = o
  end
  o[k] = where
end

-- where = config.where(tbl, key) : "FILE:LINE" where tbl[key] of a composed config was defined
-- (or "override '...'"), or nil.
function M.where(t, k) return origin[t] and origin[t][k] end

local keys_of = override.keys
local is_sequence = override.is_sequence

-- Deep-copies v into ordered tables and wb.array lists, recording where(src, key) for each
-- entry; `skip` is a top-level key left out; `path` names v in messages.
local function normalize(v, where, path, skip)
  local t = type(v)
  if t == "table" then
    local out
    if is_sequence(v) then
      out = core.array()
      for i = 1, #v do
        out[i] = normalize(v[i], where, path .. "[" .. (i - 1) .. "]")
        note(out, i, where(v, i))
      end
    else
      out = core.ordered()
      for _, k in ipairs(keys_of(v)) do
        if k ~= skip then
          out[k] = normalize(v[k], where, path == "" and tostring(k) or path .. "." .. tostring(k))
          note(out, k, where(v, k))
        end
      end
    end
    return out
  elseif t == "function" or t == "thread" or (t == "userdata" and v ~= null) then
    raise((where(nil) or "config") .. ": " .. path .. ": a config value cannot be a " .. t)
  end
  return v
end

local function copy_composed(v)
  return normalize(v, function(t, k) return t and M.where(t, k) end, "")
end

local function merge(dst, src)
  for _, k in ipairs(keys_of(src)) do
    local s, d = src[k], dst[k]
    if kind(s) == "mapping" and kind(d) == "mapping" then
      merge(d, s)
    else
      dst[k] = s
      note(dst, k, M.where(src, k))
    end
  end
end

-- Merges content under the dotted package ("" = the root).
local function place(cfg, package, content, where)
  local t = cfg
  for seg in package:gmatch("[^.]+") do
    if kind(t[seg]) ~= "mapping" then
      t[seg] = core.ordered()
      note(t, seg, where)
    end
    t = t[seg]
  end
  merge(t, content)
end

-- ---- command-line overrides --------------------------------------------------------------

local ARTICLE = { integer = "an integer", float = "a float", string = "a string", boolean = "a boolean",
  list = "a list", mapping = "a mapping", null = "null" }

local function fail(o, msg) raise("override '" .. override.shown(o.text) .. "': " .. msg) end

local function located(t, k)
  local w = M.where(t, k)
  return w and " (" .. w .. ")" or ""
end

local function show(v)
  if type(v) == "string" then return "'" .. v .. "'" end
  return override.format(v)
end

local function all_paths(t, prefix, out)
  for _, k in ipairs(keys_of(t)) do
    local p = prefix .. tostring(k)
    out[#out + 1] = p
    if kind(t[k]) == "mapping" then all_paths(t[k], p .. ".", out) end
  end
  return out
end

local function unknown_key(cfg, o)
  local msg = "unknown key '" .. o.key .. "'"
  if o.op == "set" then msg = msg .. " (use +" .. o.key .. "=" .. o.value_text .. " to add it)" end
  local near = util.suggest(o.key, all_paths(cfg, "", {}))
  if near[1] then msg = msg .. "; did you mean '" .. near[1] .. "'?" end
  fail(o, msg)
end

-- The parent table of o's key (creating missing mappings when `create`), or nil.
local function walk(cfg, o, create)
  local t = cfg
  for i = 1, #o.path - 1 do
    local seg = o.path[i]
    local v = t[seg]
    if v == nil then
      if not create then return nil end
      v = core.ordered()
      t[seg] = v
      note(t, seg, "override '" .. o.text .. "'")
    elseif kind(v) ~= "mapping" then
      fail(o, table.concat(o.path, ".", 1, i) .. " is " .. ARTICLE[kind(v)] .. located(t, seg) .. ", not a mapping")
    end
    t = v
  end
  return t
end

-- The value o sets in place of cur, converted, or a type mismatch error.
-- A key whose default is a number takes finite numbers only; one whose default is an integer,
-- integers only (3.0 becomes 3; 1.5, 1e20, inf and nan are refused). A key with a declared type
-- (types, lua/wb/schema.lua) takes any number here: its type decides (a timeout of 600 takes 0.5).
local function checked(o, cur, t, k, types)
  local v, ck, vk = o.value, kind(cur), kind(o.value)
  if types and types[o.key] and (ck == "integer" or ck == "float") and (vk == "integer" or vk == "float") then
    return v
  end
  if ck == "integer" and vk == "float" then
    if math.tointeger(v) then return math.tointeger(v) end
    fail(o, o.key .. " is an integer" .. located(t, k) .. ", got float " .. show(v))
  end
  if ck == "float" and vk == "float" and not (v > -math.huge and v < math.huge) then
    fail(o, o.key .. " is a finite number" .. located(t, k) .. ", got " .. show(v))
  end
  if ck == "null" or vk == "null" or ck == vk then return v end
  if vk == "string" and v:find("${", 1, true) then return v end
  if ck == "float" and vk == "integer" then return v + 0.0 end
  if ck == "string" and (vk == "integer" or vk == "float" or vk == "boolean") then return o.raw end
  fail(o, "type mismatch: " .. o.key .. " is " .. ARTICLE[ck] .. located(t, k) .. ", got " .. vk .. " " .. show(v))
end


-- Whether o's key sits directly in one of the open mappings (a set of dotted paths).
local function in_open(o, open)
  return #o.path > 1 and open[table.concat(o.path, ".", 1, #o.path - 1)] == true
end

-- open: the set of dotted paths of mappings that take new keys without `+` (a recipe's open list)
local function apply(cfg, o, open, types)
  local here = "override '" .. o.text .. "'"
  local last = o.path[#o.path]
  local t = walk(cfg, o, o.op == "add" or o.op == "force")
  local cur = t and t[last]
  if o.op == "set" and cur == nil and t and in_open(o, open) then
    o = setmetatable({ op = "add" }, { __index = o })
  end
  if o.op == "delete" then
    if cur == nil then unknown_key(cfg, o) end
    -- a setting whose declared type has no null is one the recipe reads: it stays (set it instead)
    local needed = {}
    for key, ty in pairs(types or {}) do
      if (key == o.key or key:sub(1, #o.key + 1) == o.key .. ".") and not tostring(ty):find("null", 1, true) then
        needed[#needed + 1] = key
      end
    end
    if #needed > 0 then
      table.sort(needed)
      fail(o, (#needed == 1 and needed[1] == o.key and o.key or o.key .. " holds " .. needed[1]) ..
        ", a setting the recipe needs (type " .. tostring(types[needed[1]]) .. "): set it instead of removing it")
    end
    if o.has_value and not (deep_equal(cur, o.value) or cur == o.raw) then
      fail(o, o.key .. " is " .. show(cur) .. ", not " .. show(o.value))
    end
    t[last] = nil
    return
  end
  local v
  if o.op == "set" then
    if cur == nil then unknown_key(cfg, o) end
    v = checked(o, cur, t, last, types)
  elseif o.op == "add" and cur ~= nil then
    fail(o, "key '" .. o.key .. "' already exists (use " .. o.key .. "=" .. o.value_text .. " to change it)")
  else
    v = o.value
  end
  t[last] = normalize(v, function() return here end, o.key)
  note(t, last, here)
end

local function group_option(o)
  local v = o.value
  if v == null then return null end
  if math.type(v) == "integer" then return o.raw end
  if type(v) == "string" and v ~= "" then return v end
  fail(o, "config group '" .. o.key .. "' takes an option name, got " .. kind(v) .. " " .. show(v))
end

-- Records group choices in the defaults context; returns the key overrides. In an open mapping
-- several values are a list (scan.threads=1,2,4), not a sweep.
local function classify(ctx, overrides, open)
  local keys = {}
  for _, text in ipairs(overrides) do
    local key = text:match("^[%+~]?%+?([^=]*)")
    if override.key_problem(key:match("^%s*(.-)%s*$")) then
      keys.bad = keys.bad or text -- refused once the keys are known, with the nearest one
      goto next
    end
    local o = override.parse(text)
    if o.values and #o.values > 1 and in_open(o, open) then
      local list = {}
      for i, e in ipairs(o.values) do list[i] = e.value end
      o.value = list
    elseif o.values and #o.values > 1 then
      fail(o, "several values (" .. o.value_text .. ") need --multirun (quote the value to keep its commas)")
    end
    local is_group = defaults.is_group(ctx, o.key)
    if o.key:find("/", 1, true) and not is_group then fail(o, "no config group '" .. o.key .. "'") end
    if not is_group then
      keys[#keys + 1] = o
    elseif o.op == "delete" then
      defaults.remove(ctx, o.key, o.has_value and group_option(o) or nil, o.text)
    elseif o.op == "add" then
      defaults.add(ctx, o.key, group_option(o), o.text)
    else
      defaults.select(ctx, o.key, group_option(o), o.text)
    end
    ::next::
  end
  return keys
end

-- Refuses the override text whose key is not a valid key, suggesting the nearest key of cfg
-- (`tool.trіals=1` with a Cyrillic і: did you mean 'tool.trials'?).
local function bad_key(cfg, text)
  local key = text:match("^[%+~]?%+?([^=]*)"):match("^%s*(.-)%s*$")
  local msg = override.key_problem(key)
  local plain = key:gsub("[\192-\255][\128-\191]*", "?")
  local near = util.suggest(plain, all_paths(cfg, "", {}))
  raise("override '" .. override.shown(text) .. "': " .. msg .. (near[1] and ("; did you mean '" .. near[1] .. "'?") or ""))
end

-- ---- the API -----------------------------------------------------------------------------

-- dirs = config.search_path([env]) : where profiles are looked up: ./profiles, the entries of
-- $WB_PROFILE_PATH (or of env, colon-separated), then the installed profiles.
M.search_path = defaults.search_path

-- cfg, info = config.compose{name =, inline =, overrides =, recipe_path =, search_path =, open =, types =}
-- Composes profile `name` (profiles/NAME.yaml on the search path) over the recipe's inline
-- defaults, applies the overrides and resolves interpolations. open: dotted paths of mappings
-- whose keys are the user's to choose (`scan` in wb bench): `open.key=v` adds a key there as
-- `+open.key=v` would, and `open.key=a,b,c` sets the list {a, b, c} (no sweep). info lists, in composition
-- order, {group, option, file, kind = "group"|"primary"|"include"|"recipe"|"disabled"}.
-- Errors (bad overrides, unknown options or keys, YAML problems) raise exit-2 wb errors.
function M.compose(args)
  args = args or {}
  local roots = args.search_path or defaults.search_path(nil, args.recipe_path)
  local ctx = defaults.new(roots)
  local open = {}
  for _, path in ipairs(args.open or {}) do open[path] = true end
  local key_overrides = classify(ctx, args.overrides or {}, open)
  local primaries = {}
  if args.inline ~= nil or args.name == nil then
    local inline = args.inline or {}
    if type(inline) ~= "table" or (next(inline) ~= nil and is_sequence(inline)) then
      error("config.compose: inline must be a mapping", 2)
    end
    primaries[1] = defaults.inline(inline, args.recipe_path or "recipe defaults", args.inline ~= nil)
  end
  if args.name then primaries[#primaries + 1] = defaults.primary(ctx, args.name) end
  local steps, info = defaults.expand(ctx, primaries)
  local cfg = core.ordered()
  for _, step in ipairs(steps) do
    local prof = step.profile
    local content = normalize(prof.data, prof.where, "", "defaults")
    place(cfg, step.package, content, prof.where(prof.data) or prof.path)
  end
  if key_overrides.bad then bad_key(cfg, key_overrides.bad) end
  for _, o in ipairs(key_overrides) do apply(cfg, o, open, args.types) end
  interpolate.resolve(cfg, { where = M.where, copy = copy_composed })
  composed[cfg] = { search_path = roots }
  return cfg, info
end

-- text = config.format_info(info) : one line per entry, "machine: local  (profiles/machine/local.yaml)"
function M.format_info(info)
  local lines = {}
  for _, e in ipairs(info) do
    local label = e.group or (e.kind == "recipe" and "recipe" or "config")
    local src = e.file or (e.kind == "disabled" and "disabled") or "inline"
    lines[#lines + 1] = label .. ": " .. tostring(e.option) .. "  (" .. src .. ")"
  end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

-- text = config.to_yaml(cfg) : the config as block YAML, keys in composition order
function M.to_yaml(cfg)
  local text, err = require("wb.yaml").dump(cfg)
  if not text then raise("config: " .. tostring(err)) end
  return text
end

-- cfg2 = config.with_wb_settings(cfg, opts) : a copy of cfg with a `wb:` block (version, the
-- profile search path, the run options), for `--cfg all`
function M.with_wb_settings(cfg, opts)
  opts = opts or {}
  local out = core.ordered()
  for _, k in ipairs(keys_of(cfg)) do out[k] = cfg[k] end
  local function opt(v) if v == nil then return null end return v end
  local run = core.ordered()
  run.output = opt(opts.output)
  run.dry_run = opts.dry_run == true
  run.resume = opt(opts.resume)
  run.baseline = opt(opts.baseline)
  run.multirun = opts.multirun == true
  run.verbose = opts.verbose == true
  local wb = core.ordered()
  wb.version = core.version
  local function array_of(list) return core.array(table.move(list, 1, #list, 1, {})) end
  wb.search_path = array_of((composed[cfg] or {}).search_path or defaults.search_path())
  wb.overrides = array_of(opts.overrides or {})
  wb.run = run
  out.wb = wb
  return out
end

-- list = config.multirun_overrides(overrides [, open]) : nil when no override has several values
-- (those in the open mappings are lists, not sweeps)
-- (top-level commas); else the override lists of every combination, the first sweeping
-- override varying slowest
function M.multirun_overrides(overrides, open)
  local set = {}
  for _, path in ipairs(open or {}) do set[path] = true end
  return override.multirun(overrides or {}, function(o) return in_open(o, set) end)
end

-- The most runs one --multirun makes unless $WB_MAX_MULTIRUN says otherwise, and the count from
-- which the plan is announced before composing (docs/errors.md).
M.MAX_MULTIRUN = 1000
M.ANNOUNCE_MULTIRUN = 20

-- config.check_multirun(overrides [, open]) : raises (exit 2) when the product of the sweeps is
-- over the limit, before any combination is made; announces a large one on stderr
function M.check_multirun(overrides, open)
  local set = {}
  for _, path in ipairs(open or {}) do set[path] = true end
  local n, factors = override.multirun_count(overrides or {}, function(o) return in_open(o, set) end)
  if not n then return end
  local limit = math.tointeger(tonumber(os.getenv("WB_MAX_MULTIRUN") or "")) or M.MAX_MULTIRUN
  local shape = table.concat(factors, " x ")
  if n > limit then
    errors.raise(2, string.format("--multirun: %s = %.0f runs, over the limit of %d (WB_MAX_MULTIRUN=N raises it)",
      shape, n, limit), 0)
  end
  if n > M.ANNOUNCE_MULTIRUN then
    io.stderr:write(string.format("wb: --multirun: %s = %d runs; composing each\n", shape, n))
  end
end

return M
