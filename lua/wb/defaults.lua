-- Profiles and their defaults lists (DESIGN §4), for lua/wb/config.lua: the search path, loading
-- profile files (with their `# @package` header), and expanding defaults lists into the ordered
-- merge steps. A defaults list holds group choices (`- machine: local`, `- /abs/group: x`,
-- `- machine: null`), includes (`- base`), `_self_` (where the file's own keys merge; last when
-- absent), and `optional` / `override` entries; option files may have their own lists (groups in
-- them are relative to the file's group). Command-line choices win over `override` entries, which
-- win over the entries they override.
local core = require "wb.core"
local errors = require "wb.errors"
local fs = require "wb.fs"
local override = require "wb.override"

local M = {}

local null = core.null
local is_list = override.is_list
local kind = override.kind
local keys_of = override.keys

local function raise(msg) errors.raise(2, msg, 0) end

local function has_type(path, t)
  local st = fs.stat(path)
  return st ~= nil and st.type == t
end

-- dirs = defaults.search_path([env [, recipe_path]]) : ./profiles, the entries of
-- $WB_PROFILE_PATH (or env), the profiles beside a recipe file (<recipe dir>/../profiles), then
-- those of the source tree or the installed set (lua/wb/paths.lua).
function M.search_path(env, recipe_path)
  local paths = require "wb.paths"
  local dirs = { "./profiles" }
  for d in (env or os.getenv("WB_PROFILE_PATH") or ""):gmatch("[^:]+") do dirs[#dirs + 1] = d end
  local beside = recipe_path and paths.normalize((recipe_path:match("^(.*)/[^/]*$") or ".") .. "/../profiles")
  if beside and beside ~= "profiles" and has_type(beside, "dir") then dirs[#dirs + 1] = beside end
  for _, d in ipairs(paths.sub_dirs("profiles")) do dirs[#dirs + 1] = d end
  return dirs
end

local function join(dir, rel) return ((dir:gsub("/+$", "") .. "/" .. rel):gsub("^%./", "")) end


local function find(roots, rel)
  for _, dir in ipairs(roots) do
    local p = join(dir, rel)
    if has_type(p, "file") then return p end
  end
end

local function is_group_dir(roots, group)
  for _, dir in ipairs(roots) do
    if has_type(join(dir, group), "dir") then return true end
  end
  return false
end

local function group_options(roots, group)
  local seen, out = {}, {}
  for _, dir in ipairs(roots) do
    for _, name in ipairs(fs.list(join(dir, group)) or {}) do
      local opt = name:match("^(.+)%.yaml$")
      if opt and not seen[opt] then
        seen[opt] = true
        out[#out + 1] = opt
      end
    end
  end
  table.sort(out)
  return out
end

local function yaml_where(t, k)
  if t == nil then return nil end
  local file, line = require("wb.yaml").location(t, k)
  if file then return file .. ":" .. line end
end

local function header_package(text)
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    if line:match("^%s*#") then
      local pkg = line:match("^%s*#%s*@package%s+(%S+)")
      if pkg then return pkg end
    elseif line:match("%S") then
      break
    end
  end
end

local function load_profile(ctx, path)
  if ctx.cache[path] then return ctx.cache[path] end
  local text, err = fs.read(path)
  if not text then raise(err) end
  local data, yerr = require("wb.yaml").load(text, path)
  if data == nil and yerr then raise(yerr) end
  if data == nil or data == null then data = core.ordered() end
  if kind(data) ~= "mapping" then raise(path .. ":1: a profile must be a mapping, not a " .. kind(data)) end
  local prof = { path = path, data = data, package = header_package(text), where = yaml_where, entries = {} }
  ctx.cache[path] = prof
  return prof
end

-- ---- defaults lists ----------------------------------------------------------------------

local function group_join(a, b) return a == "" and b or a .. "/" .. b end
local function pkg_join(a, b) return a == "" and b or (b == "" and a or a .. "." .. b) end
local function dotted(group) return (group:gsub("/", ".")) end

local function group_entry(parent_group, key, value, where)
  local words = {}
  for w in tostring(key):gmatch("%S+") do words[#words + 1] = w end
  local e = { kind = "group", name = table.remove(words), where = where }
  for _, w in ipairs(words) do
    if w == "optional" then
      e.optional = true
    elseif w == "override" then
      e.override = true
    else
      raise(where .. ": bad defaults entry '" .. key .. "'")
    end
  end
  local abs = e.name and e.name:match("^/(.+)$")
  if not e.name or not (abs or e.name):match("^[%w_%-]+[%w_%-/]*$") then
    raise(where .. ": bad defaults entry '" .. key .. "'")
  end
  e.group = abs or group_join(parent_group, e.name)
  e.package = not abs and dotted(e.name) or nil
  if value == null then
    e.option = null
  elseif type(value) == "string" or math.type(value) == "integer" then
    e.option = tostring(value)
  else
    raise(where .. ": defaults entry '" .. key .. "' needs an option name, not a " .. kind(value))
  end
  return e
end

-- The entries of a profile's defaults list, with `_self_` appended when absent.
local function defaults_of(prof, group)
  if prof.entries[group] then return prof.entries[group] end
  local d, entries, self = prof.data.defaults, {}, false
  local function add_mapping(m, where)
    for _, k in ipairs(keys_of(m)) do
      entries[#entries + 1] = group_entry(group, k, m[k], where(k))
    end
  end
  if is_list(d) then
    for i, e in ipairs(d) do
      local where = prof.where(d, i) or prof.path
      if e == "_self_" then
        entries[#entries + 1] = { kind = "self" }
        self = true
      elseif type(e) == "string" then
        entries[#entries + 1] = { kind = "include", name = e, where = where }
      elseif kind(e) == "mapping" then
        add_mapping(e, function() return where end)
      else
        raise(where .. ": bad defaults entry " .. override.format(e))
      end
    end
  elseif kind(d) == "mapping" then
    add_mapping(d, function(k) return prof.where(d, k) or prof.path end)
  elseif d ~= nil and d ~= null then
    raise((prof.where(prof.data, "defaults") or prof.path) .. ": defaults must be a list, not a " .. kind(d))
  end
  if not self then entries[#entries + 1] = { kind = "self" } end
  prof.entries[group] = entries
  return entries
end

local expand

local function select_group(ctx, e, parent_pkg)
  local g = e.group
  if ctx.selected[g] then
    if e.cli then
      raise(e.where .. ": group '" .. g .. "' is already in the defaults list (use " .. g .. "=" .. e.option ..
        " to change it)")
    end
    raise(e.where .. ": group '" .. g .. "' is selected twice (first at " .. ctx.selected[g] ..
      "); write 'override " .. e.name .. ": " .. tostring(e.option) .. "' to change the choice")
  end
  ctx.selected[g] = e.where
  local choice, source = e.option, e.where
  if ctx.dl[g] then choice, source = ctx.dl[g].option, ctx.dl[g].where end
  local cli = ctx.cli[g]
  if cli then
    cli.used = true
    source = "override '" .. cli.text .. "'"
    if cli.delete then
      if cli.option and cli.option ~= choice then
        raise(source .. ": group '" .. g .. "' is '" .. tostring(choice) .. "', not '" .. cli.option .. "'")
      end
      return
    end
    choice = cli.option
  end
  if choice == null then
    ctx.info[#ctx.info + 1] = { group = g, option = "null", kind = "disabled" }
    return
  end
  local file = find(ctx.roots, g .. "/" .. choice .. ".yaml")
  if not file then
    if e.optional and not cli then return end
    raise(source .. ": unknown option '" .. choice .. "' for group '" .. g .. "' (available: " ..
      table.concat(group_options(ctx.roots, g), ", ") .. ")")
  end
  local pkg = e.package and pkg_join(parent_pkg, e.package) or dotted(g)
  expand(ctx, load_profile(ctx, file), g, pkg, { group = g, option = choice, file = file, kind = "group" }, source)
end

-- The package a `# @package` header names: dotted components, where a leading `_global_` is the
-- root, `_group_` the file's group and `_name_` its name.
local function header_to_package(h, group, path)
  local out = {}
  for comp in h:gmatch("[^.]+") do
    if comp == "_group_" then
      out[#out + 1] = group ~= "" and dotted(group) or nil
    elseif comp == "_name_" then
      out[#out + 1] = path:match("([^/]+)%.yaml$")
    elseif comp ~= "_global_" or #out > 0 then
      out[#out + 1] = comp
    end
  end
  return table.concat(out, ".")
end

-- Walks a profile's defaults list, appending merge steps and info entries in order.
function expand(ctx, prof, group, package, label, where, extra)
  if ctx.active[prof.path] then raise(where .. ": defaults cycle: " .. prof.path .. " includes itself") end
  ctx.active[prof.path] = true
  if prof.package then package = header_to_package(prof.package, group, prof.path) end
  local entries = defaults_of(prof, group)
  if extra then entries = table.move(extra, 1, #extra, #entries + 1, table.move(entries, 1, #entries, 1, {})) end
  for _, e in ipairs(entries) do
    if e.kind == "self" then
      ctx.steps[#ctx.steps + 1] = { profile = prof, package = package }
      ctx.info[#ctx.info + 1] = label
    elseif e.kind == "include" then
      local abs = e.name:match("^/(.*)$")
      local path = abs or group_join(group, e.name)
      local file = find(ctx.roots, path .. ".yaml")
      if not file then
        raise(e.where .. ": no config '" .. e.name .. "' (looked for " .. path .. ".yaml in " ..
          table.concat(ctx.roots, ", ") .. ")")
      end
      local dir = path:match("^(.*)/[^/]*$") or ""
      local pkg = abs and dotted(dir) or pkg_join(package, dotted(e.name:match("^(.*)/[^/]*$") or ""))
      expand(ctx, load_profile(ctx, file), dir, pkg, { option = e.name, file = file, kind = "include" }, e.where)
    elseif e.override then
      ctx.pass_dl[e.group] = { option = e.option, where = e.where }
    else
      select_group(ctx, e, package)
    end
  end
  ctx.active[prof.path] = nil
end

local function same_choices(a, b)
  for g, x in pairs(a) do
    if not b[g] or b[g].option ~= x.option then return false end
  end
  for g in pairs(b) do
    if not a[g] then return false end
  end
  return true
end

-- Expands the primaries until `override` entries and command-line choices stop changing the
-- tree; leaves ctx.steps and ctx.info.
local function settle(ctx, primaries)
  for _ = 1, 10 do
    ctx.steps, ctx.info, ctx.selected, ctx.active, ctx.pass_dl = {}, {}, {}, {}, core.ordered()
    for _, c in pairs(ctx.cli) do c.used = false end
    for i, prof in ipairs(primaries) do
      expand(ctx, prof, "", "", prof.label, prof.path, i == #primaries and ctx.append or nil)
    end
    local again = false
    for g, c in pairs(ctx.cli) do
      if not c.used then
        if c.delete then raise("override '" .. c.text .. "': group '" .. g .. "' is not in the defaults list") end
        ctx.append[#ctx.append + 1] = { kind = "group", group = g, name = g, option = c.option, where = "override '" .. c.text .. "'" }
        again = true
      end
    end
    if not same_choices(ctx.pass_dl, ctx.dl) then
      ctx.dl = ctx.pass_dl
      again = true
    end
    if not again then
      for g, d in pairs(ctx.dl) do
        if not ctx.selected[g] then
          raise(d.where .. ": 'override " .. g .. "': group '" .. g .. "' is not in the defaults list")
        end
      end
      return
    end
  end
  raise("the defaults lists do not settle: conflicting 'override' entries")
end

-- ctx = defaults.new(roots) : the state of one composition over the search path `roots`
function M.new(roots)
  return { roots = roots, cache = {}, cli = core.ordered(), append = {}, dl = {} }
end

-- yes = defaults.is_group(ctx, key) : key names a config group (a directory on the search path)
function M.is_group(ctx, key)
  return not key:find(".", 1, true) and is_group_dir(ctx.roots, key)
end

-- Command-line group choices; `text` is the override, for messages.
-- defaults.select(ctx, group, option, text) : chooses option (appended when the lists lack group)
function M.select(ctx, group, option, text) ctx.cli[group] = { option = option, text = text } end

-- defaults.add(ctx, group, option, text) : appends group (an error when the lists have it)
function M.add(ctx, group, option, text)
  ctx.append[#ctx.append + 1] = {
    kind = "group", group = group, name = group, option = option, where = "override '" .. text .. "'", cli = true,
  }
end

-- defaults.remove(ctx, group [, option], text) : drops group (when its choice is option)
function M.remove(ctx, group, option, text) ctx.cli[group] = { delete = true, option = option, text = text } end

-- prof = defaults.primary(ctx, name) : the primary profile NAME.yaml from the search path
function M.primary(ctx, name)
  local file = find(ctx.roots, name .. ".yaml")
  if not file then
    raise("no profile '" .. name .. "' (looked in " .. table.concat(ctx.roots, ", ") ..
      "; add a directory with WB_PROFILE_PATH=DIR)")
  end
  local prof = load_profile(ctx, file)
  prof.label = { option = name, file = file, kind = "primary" }
  return prof
end

-- prof = defaults.inline(data, file, listed) : a primary made of a recipe's defaults table;
-- `file` names it in messages, `listed` makes it an entry of the info list
function M.inline(data, file, listed)
  return {
    path = file, data = data, entries = {}, where = function() return file end,
    label = listed and { option = "defaults", file = file, kind = "recipe" } or nil,
  }
end

-- steps, info = defaults.expand(ctx, primaries) : the merge steps ({profile, package}) and the
-- info entries ({group, option, file, kind}), both in composition order.
function M.expand(ctx, primaries)
  settle(ctx, primaries)
  return ctx.steps, ctx.info
end

return M
