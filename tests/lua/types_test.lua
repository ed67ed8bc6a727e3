-- lua/wb/types.lua (the LuaLS annotations recipe authors rely on) and the binding comments of
-- core/*.c (`/* -- r = wb.x.f(...) : contract */`) against what the runtime exports, both ways.
-- The modules come from the runtime's own list (wb.core.modules(): native and embedded), so a new
-- module fails here until it is annotated or listed in INTERNAL below with its reason.
local T = require "wb.test"
local core = require "wb.core"
local fs = require "wb.fs"

-- Modules a recipe does not call: the machinery of the binary and its parts, each with its reason.
local INTERNAL = {
  ["wb.core"] = "the native runtime under the wb module (wb.ordered, wb.array, ... re-export it)",
  ["wb.cli"] = "the command line of the wb binary",
  ["wb.repl"] = "the interactive REPL of `wb repl`",
  ["wb.errors"] = "error objects behind wb.usage / wb.fail",
  ["wb.recipe"] = "wb.recipe{...} and the run of a recipe by `wb run`",
  ["wb.defaults"] = "the built-in config groups composed by wb.config",
  ["wb.override"] = "key=value overrides of the command line, parsed by wb.config",
  ["wb.interpolate"] = "${...} interpolation inside wb.config",
  ["wb.schema"] = "the config schema checks inside wb.config",
  ["wb.paths"] = "data directories of the built and installed binary",
  ["wb.rundir"] = "run directories created by `wb run`",
  ["wb.plan"] = "the --dry-run plan of `wb run`",
  ["wb.executor"] = "runs a recipe's plan for wb.recipe",
  ["wb.test"] = "the test harness of tests/lua (its contract is at the top of lua/wb/test.lua)",
  ["wb.capture_fold"] = "wb.capture's folding of samples into stacks",
  ["wb.capture_report"] = "wb.capture's report files",
  ["wb.capture_unwind"] = "wb.capture's unwinding of user stacks",
  ["wb.capture_python"] = "wb.capture's Python frames: the merge with native stacks and the python view",
  ["wb.capture_critical"] = "wb.capture's critical path as a profile (res.critical)",
  ["wb.slurm_poll"] = "the job polling inside wb.slurm",
  ["wb.slurm_capture"] = "capture cases of wb.executor and `wb job` (per-task and merged profiles)",
  ["wb.tune_slurm"] = "recipes/tune.lua's executor on Slurm (a stage's allocation, a trial's step)",
  ["wb.memory_chart"] = "the memory timeline chart of wb.report",
  ["wb.alloc"] = "wb.capture's allocation profile (alloc = true) and wb.bench's allocation count (alloc_runs)",
  ["wb.alloc_report"] = "the allocation profile in wb.capture's report",
  ["wb.memory_stages"] = "the application's stages on wb.capture's memory timeline (stage_pattern)",
  ["wb.multirun"] = "--multirun of `wb run`, driven by wb.recipe",
}

-- "wb.x.f" -> true for each module function types.lua annotates (`---@class wb.x` followed by
-- `local X = {}` and `function X.f(`, or `---@field f fun(...)` inside the class); the module
-- classes are the lower-case ones (wb.Proc is an object's class, wb.proc a module).
local function annotations(text)
  local out, modules, class, var_class = {}, {}, nil, {}
  for line in text:gmatch("[^\n]*") do
    local c = line:match("^%-%-%-@class ([%w_.]+)")
    if c then class = c end
    local var = line:match("^local ([%w_]+) = {}")
    if var and class then var_class[var] = class end
    local field = class and line:match("^%-%-%-@field ([%w_]+)%??%s+fun%(")
    local is_module = class and (class == "wb" or class:match("^wb%.[%l_][%w_]*$"))
    if field and is_module then out[class .. "." .. field] = true end
    local v, f = line:match("^function ([%w_]+)%.([%w_]+)%(")
    if v and var_class[v] then
      out[var_class[v] .. "." .. f] = true
    end
    if is_module then modules[class] = true end
  end
  return out, modules
end

-- "wb.x.f" -> "core/file.c" for each binding comment of a module function; methods (`p:wait()`)
-- are a native object's and are not module functions.
local function binding_comments(root)
  local out = {}
  for _, name in ipairs(assert(fs.list(root .. "/core"))) do
    if name:match("%.c$") then
      local text = assert(fs.read(root .. "/core/" .. name))
      for head in text:gmatch("/%* %-%- ([^\n]*)") do
        local call = (head:match("^(.-) : ") or head):match("(wb[%w_.]*)%s*%(")
        if call then out[call] = "core/" .. name end
      end
    end
  end
  return out
end

local function sorted(set)
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
end

-- The runtime's exports: "wb.x.f" -> true for every function in every module table.
local function exports()
  local out, modules = {}, {}
  for _, m in ipairs(core.modules()) do
    local mod = require(m)
    -- an embedded asset (lua/wb/*.js, e.g. wb.flame_js) is its text, with nothing to annotate
    if not (type(mod) == "string" and m:match("_js$")) then
      T.eq(type(mod), "table", m .. " is a module table")
      modules[m] = mod
      for k, v in pairs(mod) do
        if type(v) == "function" then out[m .. "." .. k] = true end
      end
    end
  end
  return out, modules
end

local root = T.root()
local types_text = assert(fs.read(root .. "/lua/wb/types.lua"))

T.case("every module is annotated in lua/wb/types.lua or listed as internal here", function()
  local _, annotated = annotations(types_text)
  local _, modules = exports()
  local missing, stale = {}, {}
  for m in pairs(modules) do
    if not annotated[m] and not INTERNAL[m] then missing[#missing + 1] = m end
  end
  for m in pairs(INTERNAL) do
    if not modules[m] then stale[#stale + 1] = m .. " (listed internal, no such module)" end
    if annotated[m] then stale[#stale + 1] = m .. " (listed internal, yet annotated)" end
  end
  for m in pairs(annotated) do
    if not modules[m] then stale[#stale + 1] = m .. " (annotated, no such module)" end
  end
  table.sort(missing)
  table.sort(stale)
  T.eq(missing, {}, "modules without a ---@class in lua/wb/types.lua")
  T.eq(stale, {}, "module entries that name nothing")
end)

T.case("every exported function of an annotated module is annotated, every annotation names one", function()
  local annotated = annotations(types_text)
  local exported = exports()
  local missing, stale = {}, {}
  for name in pairs(exported) do
    local m = name:match("^(.*)%.[%w_]+$")
    if not INTERNAL[m] and not annotated[name] then missing[name] = true end
  end
  for name in pairs(annotated) do
    if not exported[name] then stale[name] = true end
  end
  T.eq(sorted(missing), {}, "exported functions without an annotation in lua/wb/types.lua")
  T.eq(sorted(stale), {}, "annotations in lua/wb/types.lua of functions that do not exist")
end)

T.case("every native module function has its binding comment in core/*.c, every comment names one", function()
  local comments = binding_comments(root)
  local exported, modules = exports()
  local wb = modules["wb"]
  local missing, stale = {}, {}
  for _, m in ipairs(core.modules()) do
    if package.preload[m] or m == "wb.core" then -- native
      for k, v in pairs(modules[m]) do
        local name = m .. "." .. k
        -- wb.core's functions are documented under the wb names that re-export them
        local alias = m == "wb.core" and wb[k] == v and "wb." .. k
        if type(v) == "function" and not comments[name] and not (alias and comments[alias]) then
          missing[name] = true
        end
      end
    end
  end
  for name, file in pairs(comments) do
    if not exported[name] then stale[name .. " (" .. file .. ")"] = true end
  end
  T.eq(sorted(missing), {}, "native functions without a `/* -- ... = wb.x.f(...) */` comment")
  T.eq(sorted(stale), {}, "binding comments naming no exported function")
end)

T.case("the checks see a function added without its annotation", function()
  local exported = exports()
  T.ok(exported["wb.fs.read"] and exported["wb.util.deep_copy"] and exported["wb.core.modules"])
  local annotated = annotations(types_text .. "\n---@class wb.fs\nlocal fs2 = {}\nfunction fs2.no_such_function() end\n")
  T.ok(annotated["wb.fs.no_such_function"] and not exported["wb.fs.no_such_function"])
  T.ok(annotations(types_text)["wb.fs.read"])
end)
