-- The command line: `wb run|list|repl|compare|test|help|version` and `wb NAME` shorthand.
-- main(argv, verbose) returns the exit status; errors are wb error objects (lua/wb/errors.lua).
local core = require "wb.core"

local M = {}

local USAGE = [[
usage: wb <command> [args]

  wb run RECIPE [key=value ...] [options] [-- ARGS...]   run a recipe (a path or a name)
  wb NAME [key=value ...] [ARGS...]                     shorthand for `wb run recipes/NAME.lua`
  wb list                                               recipes with their descriptions
  wb repl                                               interactive Lua with `wb` loaded
  wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02]
  wb history [records|series|alerts] [--root DIR] ...   index run directories; query series
  wb trend [-o DIR] [--root DIR] ...                    the history as a dashboard: series and their steps
  wb test FILE_test.lua...                              run Lua test files
  wb help RECIPE | wb RECIPE --help                     a recipe's description, keys and examples
  wb help compare|history|trend                         that command's options
  wb version | wb help

run options:
  --dry-run            write the plan (plan.json, plan.md) and stop
  --cfg job|all        print the composed config as YAML and stop
  --config-name NAME   compose profiles/NAME.yaml instead of the recipe's own profile
  --info defaults      print which file each config group came from
  -o DIR               the run directory (default runs/<recipe>_<UTC time>)
  --resume DIR         re-run what did not complete in DIR
  --overwrite          with -o DIR: replace the run DIR holds (refused without it)
  --baseline PATH      compare against this manifest instead of the previous compatible run
  --confirm            re-run both sides of a change interleaved before reporting it (confirm=true)
  --multirun           run once per combination of comma-separated override values
  -v, --verbose        tracebacks and more detail
]]

local COMMANDS = { "run", "list", "repl", "compare", "history", "trend", "test", "help", "version", "job" }
-- The commands with a usage of their own (`wb help compare` is `wb compare --help`).
local COMMAND_HELP = { compare = "wb.compare", history = "wb.history", trend = "wb.trend" }

local function usage(msg) require("wb.errors").raise(2, msg, 0) end

-- The directories recipes are looked up in: ./recipes, then the source tree the binary was built
-- in or the installed set (lua/wb/paths.lua).
function M.recipe_dirs()
  local dirs = { "recipes" }
  for _, d in ipairs(require("wb.paths").sub_dirs("recipes")) do dirs[#dirs + 1] = d end
  return dirs
end

local function file_exists(path) return require("wb.fs").exists(path) end

-- Returns the path of recipe NAME (a path ending in .lua, or a name), or nil.
function M.find_recipe(name)
  if name:find("/") or name:match("%.lua$") then
    return file_exists(name) and name or nil
  end
  for _, dir in ipairs(M.recipe_dirs()) do
    local path = dir .. "/" .. name .. ".lua"
    if file_exists(path) then return path end
  end
end

-- All recipes: list of {name, path, description}, local ones shadowing installed ones.
function M.list_recipes()
  local recipe = require "wb.recipe"
  local seen, out = {}, {}
  for _, dir in ipairs(M.recipe_dirs()) do
    local p = io.popen("ls -1 '" .. dir:gsub("'", "'\\''") .. "' 2>/dev/null")
    local names = {}
    for line in p:lines() do
      local n = line:match("^(.-)%.lua$")
      if n and not n:match("^_") then names[#names + 1] = n end
    end
    p:close()
    table.sort(names)
    for _, n in ipairs(names) do
      if not seen[n] then
        seen[n] = true
        local path = dir .. "/" .. n .. ".lua"
        out[#out + 1] = { name = n, path = path, description = recipe.description(path) }
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- "looked in ./recipes, /x/share/wb/recipes" for messages about recipes not found
local function looked_in() return "looked in " .. table.concat(M.recipe_dirs(), ", ") end

local function cmd_list()
  local recipes = M.list_recipes()
  if #recipes == 0 then usage("list: no recipes found (" .. looked_in() .. "); is wb installed (make install)?") end
  io.write("Available recipes:\n")
  local width = 0
  for _, r in ipairs(recipes) do width = math.max(width, #r.name) end
  for _, r in ipairs(recipes) do
    local desc = r.description ~= "" and ("# " .. r.description) or ""
    io.write(string.format("    %-" .. width .. "s %s\n", r.name, desc))
  end
  return 0
end

local function unknown(word)
  local candidates = {}
  for _, c in ipairs(COMMANDS) do candidates[#candidates + 1] = c end
  for _, r in ipairs(M.list_recipes()) do candidates[#candidates + 1] = r.name end
  local s = require("wb.util").suggest(word, candidates)
  local hint = #s > 0 and (" (did you mean: " .. table.concat(s, ", ") .. "?)") or
      (#candidates == #COMMANDS and (" (no recipes found: " .. looked_in() .. ")")) or " (see `wb list` and `wb help`)"
  usage("unknown command or recipe '" .. word .. "'" .. hint)
end

-- The run options that take a value, also given as --option=VALUE.
local VALUED = { ["--cfg"] = true, ["--config-name"] = true, ["--info"] = true, ["--output"] = true,
  ["--resume"] = true, ["--baseline"] = true }

-- A key=value whose key is no valid key but is meant as one (a digit first, a non-ASCII letter such
-- as a Cyrillic і in `tool.trіals=1`): an override, so that it is refused with a suggestion
-- instead of passing as an argument.
-- Also a dotted key with spaces around a dot (`tool. name=v`) and one starting with a dot (`.=v`,
-- not a path such as `./x=1`).
local function looks_like_key(a)
  local key = a:match("^[%+~]?%+?([^=]+)=")
  if not key then return false end
  if key:match("^[%w_%.%-/\128-\255]+$") and not key:match("^[%-%./]") then return true end
  if key:match("^%.[%w_%.%-]*$") and not key:match("^%.%.") then return true end -- not ./x, .venv/bin/x
  local squeezed = key:gsub("%s*%.%s*", ".")
  return squeezed ~= key and squeezed:match("^[%w_][%w_%.%-]*$") ~= nil
end

-- Parses `wb run` arguments into {recipe, overrides, positional, options}.
function M.parse_run_args(args, first)
  args = table.move(args, 1, #args, 1, {})
  local opts = { overrides = {}, positional = {} }
  local i = first
  local function value(flag)
    i = i + 1
    if args[i] == nil then usage(flag .. " needs a value") end
    return args[i]
  end
  while i <= #args do
    local a = args[i]
    local long, inline = a:match("^(%-%-[%a][%w%-]*)=(.*)$")
    if long and VALUED[long] then -- --output=DIR is --output DIR
      table.insert(args, i + 1, inline)
      a = long
    end
    if a == "--" then
      for j = i + 1, #args do opts.positional[#opts.positional + 1] = args[j] end
      break
    elseif a == "-v" or a == "--verbose" then
      opts.verbose = true
    elseif a == "-h" or a == "--help" then
      opts.help = true
    elseif a == "--dry-run" then
      opts.dry_run = true
    elseif a == "--multirun" or a == "-m" then
      opts.multirun = true
    elseif a == "--cfg" then
      opts.cfg = value(a)
      if opts.cfg ~= "job" and opts.cfg ~= "all" then usage("--cfg takes job or all, not '" .. opts.cfg .. "'") end
    elseif a == "--config-name" or a == "-cn" then
      opts.config_name = value(a)
    elseif a == "--info" then
      opts.info = value(a)
      if opts.info ~= "defaults" then usage("--info takes defaults, not '" .. opts.info .. "'") end
    elseif a == "-o" or a == "--output" then
      opts.output = value(a)
    elseif a == "--overwrite" then
      opts.overwrite = true
    elseif a == "--resume" then
      opts.resume = value(a)
    elseif a == "--baseline" then
      opts.baseline = value(a)
    elseif a == "--confirm" then
      opts.confirm = true
    elseif a:match("^%-%-?%a") then
      -- hinted once the recipe is known (cmd_run): `--runs 5` may mean runs=5
      local flag, val = a:match("^(%-%-?[^=]+)=(.*)$")
      opts.bad_option = { text = a, flag = flag or a, value = val or args[i + 1] }
      break
    elseif a:match("^[%+~]?%+?[%a_][%w_%.%-/]*=") or a:match("^~[%a_][%w_%.%-/]*$") or looks_like_key(a) then
      opts.overrides[#opts.overrides + 1] = a
    elseif opts.recipe == nil then
      opts.recipe = a
    else
      opts.positional[#opts.positional + 1] = a
    end
    i = i + 1
  end
  return opts
end

local function find_or_fail(name)
  local path = M.find_recipe(name)
  if not path then
    if name:find("/") or name:match("%.lua$") then usage("run: " .. name .. ": no such recipe file") end
    unknown(name)
  end
  return path
end

local function show_default(v)
  if v == core.null then return "null" end
  if type(v) == "string" then return v == "" and "''" or v end
  return require("wb.override").format(v)
end

-- `wb help RECIPE`: the header comment of the recipe, its keys (type, default) and examples.
local function recipe_help(path)
  local recipe_mod = require "wb.recipe"
  local recipe = recipe_mod.load(path)
  local header = recipe_mod.header(path)
  local out, examples = {}, {}
  for _, line in ipairs(header) do
    out[#out + 1] = line
    local ex = line:match("^%s*(wb %S.*)$")
    if ex then examples[#examples + 1] = ex:gsub("%s%s%s+.*$", ""):gsub("%s+#.*$", ""):gsub("%s%s+%(.*$", "") end
  end
  out[#out + 1] = ""
  out[#out + 1] = "recipe: " .. path
  local keys, err = recipe_mod.keys(recipe)
  if keys and #keys > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "keys (override with key=value):"
    local wk, wt = 0, 0
    for _, k in ipairs(keys) do wk, wt = math.max(wk, #k.key), math.max(wt, #k.type) end
    for _, k in ipairs(keys) do
      out[#out + 1] = string.format("  %-" .. wk .. "s  %-" .. wt .. "s  default %s", k.key, k.type, show_default(k.default))
    end
  elseif not keys then
    out[#out + 1] = "keys: not known, the profile does not compose here: " .. err
  end
  local name = recipe.name
  if #examples == 0 then
    examples[1] = "wb " .. name
    local k = keys and keys[1]
    if k then examples[2] = "wb " .. name .. " " .. k.key .. "=" .. show_default(k.default) end
  end
  if recipe.plans then examples[#examples + 1] = "wb " .. name .. " --dry-run" end
  out[#out + 1] = ""
  out[#out + 1] = "examples:"
  for _, e in ipairs(examples) do out[#out + 1] = "  " .. e end
  out[#out + 1] = ""
  out[#out + 1] = "options: see `wb help` (--dry-run, -o DIR, --resume DIR, --multirun, --cfg job, -v)"
  io.write(table.concat(out, "\n"), "\n")
  return 0
end

-- An unknown leading option: a hyperfine habit (`--runs 5`, `--warmup=3`) when it names a key.
local function bad_option(path, bad)
  local recipe_mod = require "wb.recipe"
  local key = bad.flag:gsub("^%-+", ""):gsub("%-", "_")
  local keys = recipe_mod.keys(recipe_mod.load(path)) or {}
  local names = {}
  for _, k in ipairs(keys) do
    names[#names + 1] = k.key
    if k.key == key then
      local value = bad.value and not bad.value:match("^%-") and bad.value or "VALUE"
      usage("unknown option '" .. bad.text .. "': did you mean " .. key .. "=" .. value .. "?")
    end
  end
  local near = require("wb.util").suggest(key, names)
  usage("unknown option '" .. bad.text .. "'" .. (near[1] and ("; did you mean " .. near[1] .. "=...?") or "") ..
    " (a command's own options go after --; see `wb help " .. (path:match("([^/]+)%.lua$") or path) .. "`)")
end

local function cmd_run(args, first, name_given)
  local opts = M.parse_run_args(args, first)
  if name_given then
    if opts.recipe ~= nil then table.insert(opts.positional, 1, opts.recipe) end
    opts.recipe = name_given
  end
  if not opts.recipe then
    if opts.bad_option then usage("unknown option '" .. opts.bad_option.text .. "' (see `wb help`)") end
    usage("run: which recipe? (see `wb list`)")
  end
  local path = find_or_fail(opts.recipe)
  if opts.help then return recipe_help(path) end
  if opts.bad_option then bad_option(path, opts.bad_option) end
  return require("wb.recipe").run_file(path, opts)
end

function M.main(argv, verbose)
  local args, after_dashes = {}, false
  for i = 1, #argv do
    local a = argv[i]
    after_dashes = after_dashes or a == "--"
    if after_dashes or (a ~= "-v" and a ~= "--verbose") then args[#args + 1] = a end
  end
  M.verbose = verbose
  local cmd = args[1]
  -- core/main.c stops the collector while the runtime loads; `wb run` restarts it when the
  -- recipe file runs (lua/wb/recipe.lua), the other commands here.
  if cmd == "run" then return cmd_run(args, 2) end
  collectgarbage("restart")
  if cmd == "help" and args[2] then
    local own = COMMAND_HELP[args[2]]
    if own then return require(own).main({ "--help" }) end
    for _, c in ipairs(COMMANDS) do -- the others are described by the usage itself
      if c == args[2] then
        io.write(USAGE)
        return 0
      end
    end
    return recipe_help(find_or_fail(args[2]))
  end
  if cmd == nil or cmd == "help" or cmd == "--help" or cmd == "-h" then
    io.write(USAGE)
    return cmd == nil and 2 or 0
  elseif cmd == "version" then
    io.write("wb ", core.version, " (", core.lua_release, ")\n")
    return 0
  elseif cmd == "list" then
    return cmd_list()
  elseif cmd == "repl" then
    return core.repl()
  elseif cmd == "test" then
    return require("wb.test").main({ table.unpack(args, 2) })
  elseif cmd == "compare" then
    return require("wb.compare").main({ table.unpack(args, 2) })
  elseif cmd == "history" then
    return require("wb.history").main({ table.unpack(args, 2) })
  elseif cmd == "trend" then
    return require("wb.trend").main({ table.unpack(args, 2) })
  elseif cmd == "job" then
    return require("wb.slurm").job_main({ table.unpack(args, 2) })
  elseif cmd:match("^%-") then
    usage("unknown option '" .. cmd .. "' (see `wb help`)")
  end
  local path = M.find_recipe(cmd)
  if not path or cmd:find("/") then unknown(cmd) end
  return cmd_run(args, 2, cmd)
end

return M
