-- Recipes: loading a recipe file in a strict environment, and running it with a context.
--
-- A recipe file returns wb.recipe{ run = function(ctx) ... end, config = "name" | nil,
-- defaults = { ... } | nil, open = { "dotted.path", ... } | nil (mappings in the config whose
-- keys the user chooses: `path.key=v` adds one), description = "..." | nil, plans = true | nil
-- (run calls c:plan{...} before it runs anything, so --dry-run stops there; --dry-run of a recipe
-- without it is refused with exit 2), types = { ["dotted.key"] = "integer>=1|null", ... } | nil
-- (declared types, lua/wb/schema.lua, checked before run is called) }. The run function gets a context:
--   ctx.cfg      the composed, resolved config (profiles + overrides)
--   ctx.args     positional arguments (words that are not key=value, and all after --)
--   ctx.opts     parsed command-line options (dry_run, output, resume, baseline, verbose, ...)
--   ctx.name     the recipe name; ctx.path its file
--   ctx.config_name  the profile composed (--config-name, else the recipe's config), or nil
-- and returns an exit status (default 0).

local M = {}

-- errors.raise (lua/wb/errors.lua), loaded when an error is raised; level as there.
local function raise(exit, msg, level)
  require("wb.errors").raise(exit, msg, level > 0 and level + 1 or 0) -- not a tail call
end

local Recipe = { __name = "wb.recipe" }
Recipe.__index = Recipe

function M.declare(spec)
  if type(spec) ~= "table" then raise(2, "wb.recipe{...} takes a table", 3) end
  if type(spec.run) ~= "function" then raise(2, "wb.recipe{...} needs a run function", 3) end
  return setmetatable(spec, Recipe)
end

function M.is_recipe(v) return getmetatable(v) == Recipe end

-- The environment recipes run in: globals are read-only views of _G; reading an undefined
-- name is an error naming it (exit 2).
function M.strict_env()
  local env = {}
  return setmetatable(env, {
    __index = function(_, key)
      local v = _G[key]
      if v == nil then raise(2, "undefined global '" .. tostring(key) .. "'", 2) end
      return v
    end,
  })
end

-- lines = recipe.header(path [, first_only]) : the comment block at the top of the file, its
-- `-- ` markers removed (from its first non-empty line; only that line with first_only)
function M.header(path, first_only)
  local f = io.open(path, "r")
  if not f then return {} end
  local lines = {}
  for line in f:lines() do
    if not line:match("^#!") then
      local text = line:match("^%-%-+%s?(.*)$")
      if not text then break end
      text = text:gsub("%s+$", "")
      if #lines > 0 or text:match("%S") then lines[#lines + 1] = text end
      if first_only and #lines > 0 then break end
    end
  end
  f:close()
  while #lines > 0 and lines[#lines] == "" do lines[#lines] = nil end
  return lines
end

-- The one-line description: the first line of the comment block at the top of the file.
function M.description(path) return M.header(path, true)[1] or "" end

-- Loads and evaluates a recipe file; returns the recipe. Syntax errors are exit 2.
function M.load(path)
  local chunk, err = loadfile(path, "t", M.strict_env())
  if not chunk then
    if err:match("^cannot open") then raise(2, err:gsub("^cannot open ", ""), 0) end
    raise(2, err, 0)
  end
  -- core/main.c stops the collector while the runtime loads; the recipe's own code runs with it
  collectgarbage("restart")
  local recipe = chunk()
  if not M.is_recipe(recipe) then
    raise(2, path .. ": a recipe must return wb.recipe{...}", 0)
  end
  recipe.path = path
  recipe.name = recipe.name or path:match("([^/]+)%.lua$")
  return recipe
end

-- Composes the recipe's config from its profile and the command-line overrides.
local function compose(recipe, opts)
  if not recipe.config and not opts.config_name and not recipe.defaults and #opts.overrides == 0
      and not opts.cfg and not opts.info then
    return require("wb.core").ordered(), {}
  end
  local config = require "wb.config"
  return config.compose {
    name = opts.config_name or recipe.config,
    inline = recipe.defaults,
    open = recipe.open,
    types = recipe.types,
    overrides = opts.overrides,
    recipe_path = recipe.path,
  }
end

-- keys, err = recipe.keys(recipe) : the recipe's config keys with their defaults (its profile
-- composed without overrides) and declared or default types: a list of {key, default, type}
-- in composition order; nil and the composition's message when it does not compose
function M.keys(recipe)
  local ok, cfg = pcall(compose, recipe, { overrides = {} })
  if not ok then return nil, type(cfg) == "table" and tostring(cfg.msg) or tostring(cfg) end
  local override = require "wb.override"
  local schema = require "wb.schema"
  local types, out = recipe.types or {}, {}
  local function walk(t, prefix)
    for _, k in ipairs(override.keys(t)) do
      local key, v = prefix .. tostring(k), t[k]
      if override.kind(v) == "mapping" and next(v) ~= nil and not types[key] then
        walk(v, key .. ".")
      else
        local kind = override.kind(v)
        out[#out + 1] = { key = key, default = v,
          type = schema.describe(types[key] or (kind == "null" and "any") or (kind == "float" and "number") or kind) }
      end
    end
  end
  walk(cfg, "")
  return out
end

-- Interrupts cannot be swallowed by a recipe: from the first recipe run on, pcall, xpcall and
-- coroutine.resume rethrow an interrupt (a signal's, or os.exit's) instead of returning it, and
-- os.exit raises one (wb.core.exit), so every way out ends children and marks the manifest
-- interrupted. wb's own handlers keep the raw functions (M.raw_pcall, M.raw_xpcall).
M.raw_pcall, M.raw_xpcall = pcall, xpcall
local guarded = false

local function guard()
  if guarded then return end
  guarded = true
  local core = require "wb.core"
  local raw_pcall, raw_xpcall, raw_resume = pcall, xpcall, coroutine.resume
  local exiting -- os.exit's error object, once called
  local function pass(ok, ...)
    if not ok then
      local e = ...
      if core.is_interrupt(e) then error(e, 0) end
      if exiting then error(exiting, 0) end
      core.check_interrupt() -- a handler replaced the interrupt: raise it again
    end
    return ok, ...
  end
  pcall = function(...) return pass(raw_pcall(...)) end
  xpcall = function(...) return pass(raw_xpcall(...)) end
  coroutine.resume = function(...) return pass(raw_resume(...)) end
  os.exit = function(code)
    if code == nil or code == true then code = 0 elseif code == false then code = 1 end
    code = math.tointeger(code) or 1
    local ok, e = raw_pcall(core.exit, code)
    assert(not ok)
    exiting = e
    error(e, 0)
  end
end

-- Runs a recipe file with parsed command-line options; returns the exit status.
function M.run_file(path, opts)
  local recipe = M.load(path)
  return M.run(recipe, opts)
end

local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

local function quoted(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = "'" .. tostring(v) .. "'" end
  return #out > 0 and table.concat(out, " ") or "none"
end

-- --resume DIR: the overrides and positional arguments (commands) of the run in DIR, unless the
-- same ones are given again; different ones are refused (exit 2), as they would be another run.
-- The keys whose overrides differ between two override lists ("cases, sleep").
local function changed_keys(a, b)
  local function by_key(list)
    local out = {}
    for _, text in ipairs(list) do
      local key = tostring(text):match("^[%+~]*([^=]*)") or text
      out[key] = (out[key] and (out[key] .. "\0") or "") .. text
    end
    return out
  end
  local ka, kb, keys = by_key(a), by_key(b), {}
  for k, v in pairs(ka) do if kb[k] ~= v then keys[#keys + 1] = k end end
  for k in pairs(kb) do if ka[k] == nil then keys[#keys + 1] = k end end
  table.sort(keys)
  return table.concat(keys, ", ")
end

local function resumed(opts)
  local dir = opts.resume:gsub("/+$", "")
  if opts.output and opts.output:gsub("/+$", "") ~= dir then
    raise(2, string.format("--resume %s -o %s: a resumed run stays in its directory (drop -o, or start a new run " ..
      "with -o %s)", opts.resume, opts.output, opts.output), 0)
  end
  require("wb.rundir").confine_existing(dir)
  local m, err = require("wb.campaign").read_resumable(dir .. "/manifest.json")
  if not m then raise(2, "--resume: " .. err, 0) end
  local o = setmetatable({}, { __index = opts })
  local function take(field, given, what)
    local stored = type(m[field]) == "table" and m[field] or nil
    if not stored then return given end
    local util = require "wb.util"
    local secret = field == "overrides" and util.redacted_keys(stored) or {}
    if #given == 0 and #secret > 0 then
      raise(2, string.format("--resume: %s ran with overrides of secret keys (%s), whose values wb does not keep: " ..
        "give the run's overrides again", dir, table.concat(secret, ", ")), 0)
    end
    local redacted = false -- a secret's value (an environment secret's) replaced within the recorded text
    for _, v in ipairs(stored) do redacted = redacted or tostring(v):find("[REDACTED]", 1, true) ~= nil end
    if #given == 0 and redacted then
      raise(2, string.format("--resume: %s ran with %s holding secret values, which wb does not keep: give %s again",
        dir, what, what), 0)
    end
    if #given == 0 then return table.move(stored, 1, #stored, 1, {}) end
    -- compared, and shown, as recorded: secret values (of secret keys, and the environment's) redacted
    local shown = field == "overrides" and util.redact_overrides(given) or given
    local values = require("wb.campaign").secrets()
    local plain = {}
    for i, v in ipairs(shown) do plain[i] = util.redact(tostring(v), values) end
    shown = plain
    if not same_list(shown, stored) then
      local changed = field == "overrides" and ("changed: " .. changed_keys(stored, shown) .. "; ") or ""
      raise(2, string.format("--resume: %s ran with %s %s, not %s (%sresume without them, or start a new run)",
        dir, what, quoted(stored), quoted(shown), changed), 0)
    end
    return given
  end
  o.overrides = take("overrides", opts.overrides or {}, "the overrides")
  o.positional = take("arguments", opts.positional or {}, "the arguments")
  -- the profile it composed (absent in manifests older than this field: then what is given)
  local stored = m.config_name
  if stored ~= nil and opts.config_name and opts.config_name ~= stored then
    raise(2, string.format("--resume: %s ran with %s, not --config-name %s (resume without it, or start a new run)",
      dir, type(stored) == "string" and ("profile " .. stored) or "the recipe's own defaults", opts.config_name), 0)
  end
  o.config_name = opts.config_name or (type(stored) == "string" and stored or nil)
  return o
end

-- A recipe runs its work through the executors it declares (`executors = {"local", "slurm"}`; by
-- default only "local", on the machine wb runs on): a machine profile naming another is refused
-- (exit 2) before anything runs, so that no work meant for a cluster runs on a login node.
local function check_executor(recipe, cfg)
  local machine = type(cfg) == "table" and rawget(cfg, "machine")
  local kind = type(machine) == "table" and machine.executor or "local"
  for _, k in ipairs(recipe.executors or { "local" }) do
    if k == kind then return end
  end
  raise(2, string.format("recipe '%s' runs its work on this machine, not through executor '%s' (the machine "
    .. "profile's executor); use machine=local, or run wb itself inside a job", recipe.name, tostring(kind)), 0)
end

function M.run(recipe, opts)
  local multirun = require "wb.multirun"
  if opts.resume and multirun.is_parent(opts.resume) then return multirun.resume(recipe, opts) end
  if opts.resume then opts = resumed(opts) end
  if opts.multirun and recipe.multirun ~= false then
    require("wb.config").check_multirun(opts.overrides, recipe.open)
    local multi = require("wb.config").multirun_overrides(opts.overrides, recipe.open)
    if multi then
      for _, overrides in ipairs(multi) do -- every combination must compose before any runs
        local cfg = compose(recipe, setmetatable({ overrides = overrides }, { __index = opts }))
        require("wb.schema").check(cfg, recipe.types, require("wb.config").where)
      end
      if not (opts.info or opts.cfg) then return multirun.run(recipe, opts, multi) end
      opts = setmetatable({ overrides = multi[1] }, { __index = opts })
    end
  end
  if opts.dry_run and not recipe.plans then
    raise(2, "--dry-run: recipe '" .. recipe.name .. "' cannot plan (it has no plan step); run it without --dry-run", 0)
  end
  local cfg, info = compose(recipe, opts)
  require("wb.schema").check(cfg, recipe.types, require("wb.config").where)
  if opts.info or opts.cfg then
    local config = require "wb.config"
    if opts.info then
      io.write(config.format_info(info))
      return 0
    end
    io.write(config.to_yaml(opts.cfg == "all" and config.with_wb_settings(cfg, opts) or cfg))
    return 0
  end
  check_executor(recipe, cfg)
  if opts.confirm then -- the flag is the recipe's confirm key
    if not (recipe.types and recipe.types.confirm == "boolean") then
      raise(2, "--confirm: recipe '" .. recipe.name .. "' has no confirmation step (it has no confirm key; " ..
        "wb regress has one)", 0)
    end
    cfg.confirm = true
  end
  local ctx = {
    cfg = cfg, args = opts.positional or {}, opts = opts, name = recipe.name, path = recipe.path,
    config_info = info, config_name = opts.config_name or recipe.config, -- the profile composed, or nil
  }
  local function on_error(e)
    local campaign = package.loaded["wb.campaign"]
    if campaign then campaign.abort(e) end
    if opts.verbose or require("wb.cli").verbose then
      local errors = require "wb.errors"
      if type(e) == "string" then
        e = errors.wrap(debug.traceback(e, 2))
        e.traced = true
      elseif errors.is(e) and not e.traced then
        e.msg, e.traced = debug.traceback(e.msg, 2), true
      end
    end
    return e
  end
  guard()
  local ok, status = M.raw_xpcall(function()
    local st = recipe.run(ctx)
    require("wb.core").check_interrupt() -- a signal the recipe's own code let pass
    return st
  end, on_error, ctx)
  if not ok then error(status, 0) end
  if status == nil or status == true then return 0 end
  if status == false then return 1 end
  status = math.tointeger(status)
  return status and status >= 0 and status <= 255 and status or 1 -- 256 must not wrap to 0
end

return M
