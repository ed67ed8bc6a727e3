-- Config composition (lua/wb/config.lua, lua/wb/interpolate.lua): recipe defaults, profiles from
-- the fixture trees tests/fixtures/profiles/{main,alt}, group choices, overrides with type
-- checks, interpolation, the search path, and every error with its exact message.
local T = require "wb.test"
local wb = require "wb"
local config = require "wb.config"

local null = wb.null
local MAIN = "tests/fixtures/profiles/main"
local ALT = "tests/fixtures/profiles/alt"
local RECIPE = "recipes/x.lua"

-- A composed config from recipe defaults only (no YAML involved).
local function inline(defaults, overrides)
  return config.compose { inline = defaults, overrides = overrides or {}, recipe_path = RECIPE, search_path = {} }
end

-- wb.yaml is part of every build: a loader that is missing is a failure, never a skip.
local function needs_yaml()
  T.eq(type(require("wb.yaml").load), "function", "wb.yaml.load")
end

-- A composed config from profile `name` of the main fixture tree.
local function profile(name, overrides, path)
  needs_yaml()
  return config.compose { name = name, overrides = overrides or {}, search_path = path or { MAIN } }
end

-- Checks that fn raises an exit-2 error whose message is exactly msg.
local function fails(msg, fn, ...)
  local e = T.raises(fn, msg, ...)
  T.eq(e.msg, msg)
  T.eq(e.exit, 2)
end

local function base()
  return {
    tool = { trials = 3, ratio = 0.5, name = "demo", include_cold = true, threads = { 1, 2 }, opt = null },
    workload = { chunk_size = 8192 },
  }
end

-- ---- recipe defaults and overrides -------------------------------------------------------

T.case("inline defaults become ordered tables and lists", function()
  local cfg, info = inline(base())
  T.eq(cfg, base())
  T.eq(wb.ordered_keys(cfg), { "tool", "workload" })
  T.eq(wb.ordered_keys(cfg.tool), { "include_cold", "name", "opt", "ratio", "threads", "trials" })
  T.eq(getmetatable(cfg.tool.threads), getmetatable(wb.array()))
  T.eq(info, { { option = "defaults", file = RECIPE, kind = "recipe" } })
  T.eq(config.format_info(info), "recipe: defaults  (recipes/x.lua)\n")
  T.eq(config.where(cfg.tool, "trials"), RECIPE)
end)

T.case("scalar, boolean, list, string and path overrides", function()
  local cfg = inline(base(), {
    "tool.trials=5", "tool.include_cold=false", "tool.threads=[1,2,4,8]", "tool.name=out/run.json",
    "workload.chunk_size=16384",
  })
  T.eq(cfg.tool.trials, 5)
  T.eq(cfg.tool.include_cold, false)
  T.eq(cfg.tool.threads, { 1, 2, 4, 8 })
  T.eq(getmetatable(cfg.tool.threads), getmetatable(wb.array()))
  T.eq(cfg.tool.name, "out/run.json")
  T.eq(cfg.workload.chunk_size, 16384)
  T.eq(config.where(cfg.tool, "trials"), "override 'tool.trials=5'")
end)

T.case("type rules: integral float->int, float<-int, plain numbers as strings, null takes anything", function()
  local cfg = inline(base(), { "tool.trials=3.0", "tool.ratio=2", "tool.name=1.10", "tool.opt=[a, b]" })
  T.eq(math.type(cfg.tool.trials), "integer")
  T.eq(cfg.tool.trials, 3)
  T.eq(math.type(cfg.tool.ratio), "float")
  T.eq(cfg.tool.ratio, 2.0)
  T.eq(cfg.tool.name, "1.10")
  T.eq(cfg.tool.opt, { "a", "b" })
  cfg = inline(base(), { "tool.name=true", "tool.trials=null", "tool.threads=[]" })
  T.eq({ cfg.tool.name, cfg.tool.trials, #cfg.tool.threads }, { "true", null, 0 })
  cfg = inline(base(), { "tool.trials=${workload.chunk_size}" })
  T.eq(cfg.tool.trials, 8192)
  cfg = inline(base(), { "tool.name='a, b'", 'tool.ratio=1e-3' })
  T.eq({ cfg.tool.name, cfg.tool.ratio }, { "a, b", 0.001 })
end)

T.case("integer means integer, finite numbers only, for keys typed by their default", function()
  for _, bad in ipairs({ "2.5", "1e20", "inf", "-inf", "nan" }) do
    T.raises(function() inline(base(), { "tool.trials=" .. bad }) end, "tool.trials is an integer")
  end
  for _, bad in ipairs({ "inf", "-.inf", ".nan" }) do
    local e = T.raises(function() inline(base(), { "tool.ratio=" .. bad }) end, "tool.ratio is a finite number")
    T.eq(e.exit, 2)
  end
end)

T.case("+key adds, ++key adds or replaces, ~key deletes", function()
  local cfg = inline(base(), {
    "+tool.note='a, b'", "+extra.deep.x=1", "++tool.trials=many", "++tool.fresh=[1]", "~tool.include_cold",
    "~tool.ratio=0.5", "~tool.name=demo",
  })
  T.eq(cfg.tool.note, "a, b")
  T.eq(cfg.extra, { deep = { x = 1 } })
  T.eq(cfg.tool.trials, "many")
  T.eq(cfg.tool.fresh, { 1 })
  T.eq({ cfg.tool.include_cold, cfg.tool.ratio, cfg.tool.name }, {})
  T.eq(wb.ordered_keys(cfg.tool), { "opt", "threads", "trials", "note", "fresh" })
  T.eq(wb.ordered_keys(cfg), { "tool", "workload", "extra" })
end)

T.case("override errors name the override", function()
  fails("override 'tool.trials=abc': type mismatch: tool.trials is an integer (recipes/x.lua), got string 'abc'",
    inline, base(), { "tool.trials=abc" })
  fails("override 'tool.trials='5'': type mismatch: tool.trials is an integer (recipes/x.lua), got string '5'",
    inline, base(), { "tool.trials='5'" })
  fails("override 'tool.include_cold=yes': type mismatch: tool.include_cold is a boolean (recipes/x.lua), got string 'yes'",
    inline, base(), { "tool.include_cold=yes" })
  fails("override 'tool.include_cold=1': type mismatch: tool.include_cold is a boolean (recipes/x.lua), got integer 1",
    inline, base(), { "tool.include_cold=1" })
  fails("override 'tool.threads=4': type mismatch: tool.threads is a list (recipes/x.lua), got integer 4",
    inline, base(), { "tool.threads=4" })
  fails("override 'tool=5': type mismatch: tool is a mapping (recipes/x.lua), got integer 5",
    inline, base(), { "tool=5" })
  fails("override 'tool.name=[a]': type mismatch: tool.name is a string (recipes/x.lua), got list [a]",
    inline, base(), { "tool.name=[a]" })
  fails("override 'tool.ratio=fast': type mismatch: tool.ratio is a float (recipes/x.lua), got string 'fast'",
    inline, base(), { "tool.ratio=fast" })
  fails("override 'tool.trails=5': unknown key 'tool.trails' (use +tool.trails=5 to add it); did you mean 'tool.trials'?",
    inline, base(), { "tool.trails=5" })
  fails("override 'nothing.near=5': unknown key 'nothing.near' (use +nothing.near=5 to add it)",
    inline, base(), { "nothing.near=5" })
  fails("override 'tool.trials.x=5': tool.trials is an integer (recipes/x.lua), not a mapping",
    inline, base(), { "tool.trials.x=5" })
  fails("override '+tool.trials=5': key 'tool.trials' already exists (use tool.trials=5 to change it)",
    inline, base(), { "+tool.trials=5" })
  fails("override '~tool.nosuch': unknown key 'tool.nosuch'", inline, base(), { "~tool.nosuch" })
  fails("override '~tool.trials=4': tool.trials is 3, not 4", inline, base(), { "~tool.trials=4" })
  fails("override 'sweep.threads=[1,2': malformed list: missing ']'", inline, base(), { "sweep.threads=[1,2" })
  fails("override 'tool.trials': expected key=value", inline, base(), { "tool.trials" })
  fails("override 'tool.trials=1,2,4': several values (1,2,4) need --multirun (quote the value to keep its commas)",
    inline, base(), { "tool.trials=1,2,4" })
end)

T.case("overrides apply in order", function()
  local cfg = inline(base(), { "tool.trials=5", "~tool.trials", "+tool.trials=x" })
  T.eq(cfg.tool.trials, "x")
end)

T.case("recipe defaults with values that are not data are refused", function()
  fails("recipes/x.lua: tool.fn: a config value cannot be a function", inline, { tool = { fn = print } })
end)

-- ---- interpolation -----------------------------------------------------------------------

T.case("interpolation: whole values keep their type, embedded ones become text", function()
  local cfg = inline {
    a = { int = 5, float = 0.25, str = "five", flag = true, list = { 1, 2 }, map = { x = 1 } },
    whole_int = "${a.int}", whole_float = "${a.float}", whole_list = "${a.list}", whole_map = "${a.map}",
    whole_flag = "${ a.flag }",
    text = "n=${a.int} f=${a.float} s=${a.str} b=${a.flag} l=${a.list} m=${a.map}",
    in_list = { "${a.int}", "x-${a.str}", { "${a.list}" } },
    nested = { deeper = { v = "${a.str}" } },
  }
  T.eq(math.type(cfg.whole_int), "integer")
  T.eq({ cfg.whole_int, cfg.whole_float, cfg.whole_flag }, { 5, 0.25, true })
  T.eq(cfg.whole_list, { 1, 2 })
  T.eq(getmetatable(cfg.whole_list), getmetatable(wb.array()))
  T.eq(cfg.whole_map, { x = 1 })
  T.ok(cfg.whole_map ~= cfg.a.map, "a copy, not the same table")
  T.eq(cfg.text, "n=5 f=0.25 s=five b=true l=[1, 2] m={x: 1}")
  T.eq(cfg.in_list, { 5, "x-five", { { 1, 2 } } })
  T.eq(cfg.nested.deeper.v, "five")
end)

T.case("interpolation: chains, list indexes, relative references", function()
  local cfg = inline {
    a = { list = { 10, 20, 30 } },
    first = "${second}", second = "${third}", third = "${a.list[2]}",
    dotted = "${a.list.0}",
    group = { x = "X", sib = "${.x}", up = "${..first}", sub = { up2 = "${..x}" } },
  }
  T.eq({ cfg.first, cfg.second, cfg.third, cfg.dotted }, { 30, 30, 30, 10 })
  T.eq({ cfg.group.sib, cfg.group.up, cfg.group.sub.up2 }, { "X", 30, "X" })
end)

T.case("interpolation: environment variables with and without defaults", function()
  local home = os.getenv("HOME")
  T.ok(home, "HOME is set")
  local cfg = inline {
    s = "str",
    home = "${env:HOME}", home2 = "${oc.env:HOME,ignored}", dflt = "${env:WB_TEST_SURELY_UNSET,data}",
    quoted = "${env:WB_TEST_SURELY_UNSET,'a,b'}", nested = "${env:WB_TEST_SURELY_UNSET,${s}/x}",
    nothing = "${env:WB_TEST_SURELY_UNSET,null}", num = "${env:WB_TEST_SURELY_UNSET,4}",
    path = "${env:WB_TEST_SURELY_UNSET, data }/in",
  }
  T.eq({ cfg.home, cfg.home2, cfg.dflt, cfg.quoted, cfg.nested, cfg.nothing, cfg.num, cfg.path },
    { home, home, "data", "a,b", "str/x", null, "4", "data/in" })
  fails("recipes/x.lua: interpolation ${env:WB_TEST_SURELY_UNSET}: environment variable 'WB_TEST_SURELY_UNSET' is not set",
    inline, { p = "${env:WB_TEST_SURELY_UNSET}" })
end)

T.case("interpolation: escapes", function()
  local cfg = inline { a = 1, lit = [[\${a} costs $5 and \${b}]], mixed = [[${a}-\${a}]], from_ref = "${lit}" }
  T.eq(cfg.lit, "${a} costs $5 and ${b}")
  T.eq(cfg.mixed, "1-${a}")
  T.eq(cfg.from_ref, "${a} costs $5 and ${b}")
  cfg = inline({ a = 1, s = "x" }, { [[s=\${a}]] })
  T.eq(cfg.s, "${a}")
end)

T.case("interpolation: overrides change what references see", function()
  local cfg = inline(base(), { "workload.chunk_size=4", "+tool.label=chunk-${workload.chunk_size}" })
  T.eq(cfg.tool.label, "chunk-4")
end)

T.case("interpolation errors", function()
  fails("recipes/x.lua: interpolation ${workload.nosuch}: no such key 'workload.nosuch'",
    inline, { workload = {}, out = "${workload.nosuch}" })
  fails("override '+out=${nosuch}': interpolation ${nosuch}: no such key 'nosuch'",
    inline, {}, { "+out=${nosuch}" })
  fails("recipes/x.lua: interpolation cycle: a.b -> c.d -> a.b", inline, { a = { b = "${c.d}" }, c = { d = "${a.b}" } })
  fails("recipes/x.lua: interpolation cycle: x -> x", inline, { x = "${x}" })
  fails("recipes/x.lua: interpolation cycle: a -> a.y -> a", inline, { a = { x = 1, y = "${a}" } })
  fails("recipes/x.lua: interpolation ${foo:bar}: unknown resolver 'foo'", inline, { x = "${foo:bar}" })
  fails("recipes/x.lua: interpolation ${a..b}: bad reference 'a..b'", inline, { x = "${a..b}" })
  fails("recipes/x.lua: interpolation ${.}: bad reference '.'", inline, { x = "${.}" })
  fails("recipes/x.lua: interpolation ${}: bad reference ''", inline, { x = "${}" })
  fails("recipes/x.lua: interpolation cycle: m -> m.s -> m", inline, { m = { s = "${.}" } })
  fails("recipes/x.lua: interpolation ${a: missing '}'", inline, { x = "${a" })
  fails("recipes/x.lua: interpolation ${a.list[5]}: no such key 'a.list[5]'", inline, { a = { list = { 1 } }, x = "${a.list[5]}" })
end)

-- ---- profiles ----------------------------------------------------------------------------

T.case("defaults order, _self_ and groups under their package", function()
  local cfg, info = profile("cfg")
  T.eq(wb.ordered_keys(cfg), { "machine", "workload", "telemetry", "tool" })
  T.eq(cfg.machine, { executor = "local", cpus = 2 })
  T.eq(cfg.workload, { name = "demo", chunk_size = 8192, ["repeat"] = 2 })
  T.eq(cfg.telemetry, { output_parent = "out", json_summary_path = null })
  T.eq(cfg.tool.chunk, 8192)
  T.eq(cfg.tool.label, "chunk-8192")
  T.eq(cfg.tool.threads, { 1, 2 })
  T.eq(#info, 4)
  T.eq(info[1], { group = "machine", option = "local", file = MAIN .. "/machine/local.yaml", kind = "group" })
  T.eq(info[4], { option = "cfg", file = MAIN .. "/cfg.yaml", kind = "primary" })
  T.eq(config.format_info(info), table.concat({
    "machine: local  (tests/fixtures/profiles/main/machine/local.yaml)",
    "workload: demo  (tests/fixtures/profiles/main/workload/demo.yaml)",
    "telemetry: local  (tests/fixtures/profiles/main/telemetry/local.yaml)",
    "config: cfg  (tests/fixtures/profiles/main/cfg.yaml)",
  }, "\n") .. "\n")
  T.eq(config.where(cfg.tool, "trials"), MAIN .. "/cfg.yaml:9")
  T.eq(config.where(cfg.machine, "cpus"), MAIN .. "/machine/local.yaml:2")
end)

T.case("_self_ first lets groups win; no _self_ merges the file last", function()
  local cfg, info = profile("self_first")
  T.eq(cfg.machine, { executor = "local", own = 1, cpus = 2 })
  T.eq({ info[1].kind, info[2].group }, { "primary", "machine" })
  cfg = profile("no_self")
  T.eq(cfg.machine, { executor = "mine", cpus = 2 })
end)

T.case("@package _global_ and other packages", function()
  local cfg = profile("global")
  T.eq(cfg.seed, 7)
  T.eq(cfg.tool, { extra = true })
  T.eq(cfg.extras, nil)
  cfg = profile("packaged")
  T.eq(cfg.tool, { extras = { level = 1 }, trials = 1 })
  cfg = profile("cfg", { "+extras=named" })
  T.eq(cfg.extras, { named = { level = 2 } })
end)

T.case("optional entries skip a missing option", function()
  local cfg, info = profile("optional")
  T.eq(wb.ordered_keys(cfg), { "workload" })
  T.eq(#info, 2)
  fails("override 'machine=nosuch2': unknown option 'nosuch2' for group 'machine' (available: cluster, local, slurm_cpu)",
    profile, "optional", { "machine=nosuch2" })
end)

T.case("nested defaults lists", function()
  local cfg, info = profile("nested")
  T.eq(cfg.machine, { node = { cores = 64 }, executor = "slurm" })
  T.eq(config.format_info(info), table.concat({
    "machine/node: big  (tests/fixtures/profiles/main/machine/node/big.yaml)",
    "machine: cluster  (tests/fixtures/profiles/main/machine/cluster.yaml)",
    "config: nested  (tests/fixtures/profiles/main/nested.yaml)",
  }, "\n") .. "\n")
  cfg = profile("nested", { "machine/node=small" })
  T.eq(cfg.machine.node.cores, 4)
  cfg = profile("cfg", { "machine=cluster", "machine/node=small" })
  T.eq(cfg.machine, { node = { cores = 4 }, executor = "slurm" })
end)

T.case("defaults list as a mapping", function()
  local cfg = profile("mapping_defaults")
  T.eq({ cfg.machine.executor, cfg.workload.name }, { "slurm", "big" })
end)

T.case("group choice overrides re-select before merging; key overrides come after", function()
  local cfg, info = profile("cfg", { "workload.chunk_size=1", "machine=slurm_cpu", "workload=big" })
  T.eq(cfg.machine, { executor = "slurm", partition = "cpu", cpus = 8 })
  T.eq(cfg.workload, { name = "big", chunk_size = 1, ["repeat"] = 2 })
  T.eq(cfg.tool.chunk, 1)
  T.eq(info[1].option, "slurm_cpu")
  T.eq(info[2].file, MAIN .. "/workload/big.yaml")
end)

T.case("group overrides: null disables, ~ deletes, + appends, ++ appends or replaces", function()
  local cfg, info = profile("cfg", { "telemetry=null", "~machine", "+extras=packaged" })
  T.eq(wb.ordered_keys(cfg), { "workload", "tool" })
  T.eq(cfg.tool.extras, { level = 1 })
  T.eq(config.format_info(info), table.concat({
    "workload: demo  (tests/fixtures/profiles/main/workload/demo.yaml)",
    "telemetry: null  (disabled)",
    "config: cfg  (tests/fixtures/profiles/main/cfg.yaml)",
    "extras: packaged  (tests/fixtures/profiles/main/extras/packaged.yaml)",
  }, "\n") .. "\n")
  cfg = profile("cfg", { "~machine=local", "++workload=big", "++extras=global_opts" })
  T.eq({ cfg.machine, cfg.workload.name, cfg.seed }, { nil, "big", 42 })
  cfg = profile("disabled", { "machine=local" })
  T.eq(cfg.machine.executor, "local")
  cfg = profile("cfg", { "extras=global_opts" })
  T.eq(cfg.seed, 42)
end)

T.case("includes and 'override' entries", function()
  local cfg, info = profile("smoke")
  T.eq(cfg.tool.trials, 1)
  T.eq(cfg.tool.name, "demo")
  T.eq(cfg.machine.executor, "slurm")
  T.eq(info[1], { group = "machine", option = "slurm_cpu", file = MAIN .. "/machine/slurm_cpu.yaml", kind = "group" })
  T.eq(info[4], { option = "cfg", file = MAIN .. "/cfg.yaml", kind = "include" })
  T.eq(info[5].kind, "primary")
  cfg = profile("smoke", { "machine=local" })
  T.eq(cfg.machine.executor, "local")
end)

T.case("a disabled group is listed", function()
  local cfg, info = profile("disabled")
  T.eq(cfg.machine, nil)
  T.eq(info[1], { group = "machine", option = "null", kind = "disabled" })
  T.eq(config.format_info(info):match("^[^\n]*"), "machine: null  (disabled)")
end)

T.case("interpolation in profiles", function()
  local cfg = profile("interp")
  T.eq({ cfg.whole_int, cfg.whole_list, cfg.whole_map }, { 5, { 1, 2, 3 }, { x = 1, y = { 2 } } })
  T.eq(cfg.embedded, "n=5, s=five, l=[1, 2, 3]")
  T.eq(cfg.in_list, { 5, "x-five", { 5 } })
  T.eq(cfg.nested, { deep = { 2 }, sibling = { 2 }, parent = "five" })
  T.eq({ cfg.indexed, cfg.chain, cfg.escaped }, { 2, 5, "${a.int} is literal" })
  T.eq({ cfg.env_default, cfg.env_set, cfg.oc_env }, { "fallback", "five", "data" })
end)

T.case("profile recipe defaults merge under the profile", function()
  needs_yaml()
  local cfg, info = config.compose {
    name = "cfg", inline = { tool = { trials = 9, mine = "yes" }, machine = { cpus = 1 } },
    recipe_path = RECIPE, search_path = { MAIN },
  }
  T.eq({ cfg.tool.trials, cfg.tool.mine, cfg.machine.cpus }, { 3, "yes", 2 })
  T.eq(wb.ordered_keys(cfg), { "machine", "tool", "workload", "telemetry" })
  T.eq(info[1], { option = "defaults", file = RECIPE, kind = "recipe" })
end)

T.case("profile errors", function()
  local m = MAIN .. "/"
  fails("override 'machine=nosuch': unknown option 'nosuch' for group 'machine' (available: cluster, local, slurm_cpu)",
    profile, "cfg", { "machine=nosuch" })
  fails("override 'machine=nosuch': unknown option 'nosuch' for group 'machine' (available: cluster, gpu, local, slurm_cpu)",
    profile, "cfg", { "machine=nosuch" }, { MAIN, ALT })
  fails(m .. "errors/bad_option.yaml:3: unknown option 'nosuch' for group 'workload' (available: big, demo)",
    profile, "errors/bad_option")
  fails("no profile 'nosuch' (looked in tests/fixtures/profiles/main, tests/fixtures/profiles/alt; add a directory with WB_PROFILE_PATH=DIR)",
    profile, "nosuch", {}, { MAIN, ALT })
  fails(m .. "errors/missing_ref.yaml:5: interpolation ${workload.nosuch}: no such key 'workload.nosuch'",
    profile, "errors/missing_ref")
  fails(m .. "errors/cycle.yaml:4: interpolation cycle: a.b -> c.d -> a.b", profile, "errors/cycle")
  fails(m .. "errors/cycle_tree.yaml:3: interpolation cycle: a -> a.y -> a", profile, "errors/cycle_tree")
  fails(m .. "errors/env_missing.yaml:1: interpolation ${env:WB_TEST_SURELY_UNSET}: environment variable " ..
    "'WB_TEST_SURELY_UNSET' is not set", profile, "errors/env_missing")
  fails(m .. "errors/twice.yaml:3: group 'machine' is selected twice (first at " .. m .. "errors/twice.yaml:2); " ..
    "write 'override machine: slurm_cpu' to change the choice", profile, "errors/twice")
  fails(m .. "errors/include_cycle.yaml:2: defaults cycle: " .. m .. "errors/include_cycle.yaml includes itself",
    profile, "errors/include_cycle")
  fails("override '+machine=slurm_cpu': group 'machine' is already in the defaults list (use machine=slurm_cpu to change it)",
    profile, "cfg", { "+machine=slurm_cpu" })
  fails("override '~machine=slurm_cpu': group 'machine' is 'local', not 'slurm_cpu'", profile, "cfg", { "~machine=slurm_cpu" })
  fails("override '~extras': group 'extras' is not in the defaults list", profile, "cfg", { "~extras" })
  fails("override 'machine=[a]': config group 'machine' takes an option name, got list [a]", profile, "cfg", { "machine=[a]" })
  fails("override 'nosuch/x=1': no config group 'nosuch/x'", profile, "cfg", { "nosuch/x=1" })
  fails("override 'machine=local,slurm_cpu': several values (local,slurm_cpu) need --multirun (quote the value to keep its commas)",
    profile, "cfg", { "machine=local,slurm_cpu" })
  fails("override 'tool.trials=abc': type mismatch: tool.trials is an integer (" .. m .. "cfg.yaml:9), got string 'abc'",
    profile, "cfg", { "tool.trials=abc" })
  fails("override 'machine.cpu=4': unknown key 'machine.cpu' (use +machine.cpu=4 to add it); did you mean 'machine.cpus'?",
    profile, "cfg", { "machine.cpu=4" })
  local e = T.raises(profile, m .. "errors/bad_yaml.yaml:3:", "errors/bad_yaml")
  T.eq(e.exit, 2)
  T.ok(not e.msg:find("\n"), "one line")
end)

T.case("search path: ./profiles, $WB_PROFILE_PATH, installed; first match wins", function()
  local share = require("wb.paths").sub_dirs("profiles")
  T.eq(config.search_path("a:b::c"), { "./profiles", "a", "b", "c", table.unpack(share) })
  T.eq(config.search_path(""), { "./profiles", table.unpack(share) })
  local cfg, info = profile("cfg", {}, { ALT, MAIN })
  T.eq(cfg, { tool = { from = "alt" } })
  T.eq(info[1].file, ALT .. "/cfg.yaml")
  cfg, info = profile("cfg", { "machine=gpu" }, { MAIN, ALT })
  T.eq(cfg.machine, { executor = "local", gpus = 1 })
  T.eq(info[1].file, ALT .. "/machine/gpu.yaml")
  cfg = profile("cfg", {}, { ALT .. "/", MAIN })
  T.eq(cfg.tool.from, "alt")
  cfg = profile("alt_only", {}, { MAIN, ALT })
  T.eq(cfg.machine.gpus, 1)
  cfg = profile("alt_only", { "machine=local" }, { ALT, MAIN })
  T.eq(cfg.machine.executor, "alt-local")
end)

T.case("WB_PROFILE_PATH reaches a real wb process", function()
  needs_yaml()
  local dir = T.tmpdir()
  local root = wb.fs.cwd()
  T.ok(wb.fs.symlink(root .. "/tests", dir .. "/tests"))
  local cmd = "cd '" .. dir .. "' && WB_PROFILE_PATH=" .. ALT .. ":" .. MAIN .. " '" .. T.wb_binary() ..
      "' run tests/fixtures/recipes/cfg.lua --info defaults machine=slurm_cpu 2>&1"
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  T.eq(out, "recipe: defaults  (tests/fixtures/recipes/cfg.lua)\n" ..
    "config: cfg  (tests/fixtures/profiles/alt/cfg.yaml)\n" ..
    "machine: slurm_cpu  (tests/fixtures/profiles/main/machine/slurm_cpu.yaml)\n")
end)

-- ---- output ------------------------------------------------------------------------------

T.case("to_yaml of a composed config", function()
  local cfg = profile("cfg", { "machine=slurm_cpu", "tool.threads=[1,4]", "+tool.note='a, b'" })
  T.eq(config.to_yaml(cfg), [[
machine:
  executor: slurm
  partition: cpu
  cpus: 8
workload:
  name: demo
  chunk_size: 8192
  repeat: 2
telemetry:
  output_parent: out
  json_summary_path: null
tool:
  trials: 3
  ratio: 0.5
  include_cold: true
  name: demo
  flag: 1
  chunk: 8192
  label: chunk-8192
  threads:
    - 1
    - 4
  data_dir: data
  note: a, b
]])
end)

T.case("with_wb_settings adds a wb block", function()
  local cfg = inline(base())
  local all = config.with_wb_settings(cfg, { output = "runs/x", dry_run = true, overrides = { "a=1" } })
  T.eq(wb.ordered_keys(all), { "tool", "workload", "wb" })
  T.eq(all.wb.version, wb.version)
  T.eq(all.wb.search_path, {})
  T.eq(all.wb.overrides, { "a=1" })
  T.eq(all.wb.run, { output = "runs/x", dry_run = true, resume = null, baseline = null, multirun = false, verbose = false })
  T.eq(cfg.wb, nil)
end)

T.case("multirun_overrides", function()
  T.eq(config.multirun_overrides({ "tool.trials=5", "machine=local" }), nil)
  T.eq(config.multirun_overrides({ "tool.threads=1,2", "machine=local,slurm_cpu" }), {
    { "tool.threads=1", "machine=local" }, { "tool.threads=1", "machine=slurm_cpu" },
    { "tool.threads=2", "machine=local" }, { "tool.threads=2", "machine=slurm_cpu" },
  })
  fails("override 'a=[1': malformed list: missing ']'", config.multirun_overrides, { "a=[1" })
end)

T.case("open mappings: keys the user chooses, comma values as lists, everything else still strict", function()
  local cfg = config.compose { inline = { scan = {}, runs = 3 }, open = { "scan" }, search_path = {},
    overrides = { "scan.threads=1,2,4", "scan.size=1..8", "runs=5" } }
  T.eq(cfg.scan.threads, { 1, 2, 4 })
  T.eq(cfg.scan.size, "1..8")
  T.eq(cfg.runs, 5)
  T.raises(function()
    config.compose { inline = { scan = {}, runs = 3 }, open = { "scan" }, search_path = {}, overrides = { "runs=1,2" } }
  end, "override 'runs=1,2': several values (1,2) need --multirun")
  T.raises(function()
    config.compose { inline = { scan = {}, other = {} }, open = { "scan" }, search_path = {}, overrides = { "other.k=1" } }
  end, "unknown key 'other.k'")
  T.raises(function()
    config.compose { inline = { scan = {} }, open = { "scan" }, search_path = {}, overrides = { "scan.a.b=1" } }
  end, "unknown key 'scan.a.b'")
  T.eq(config.multirun_overrides({ "scan.t=1,2", "runs=3,4" }, { "scan" }),
    { { "scan.t=1,2", "runs=3" }, { "scan.t=1,2", "runs=4" } })
end)

T.case("schema ranges: integer LO..HI, multiples (%N) and powers of two (pow2), said in words", function()
  local schema = require "wb.schema"
  T.eq(schema.describe("integer 512..65528 %8|null"), "a multiple of 8 in 512..65528 or null")
  T.eq(schema.describe("integer 1..2048 pow2|null"), "a power of two in 1..2048 or null")
  T.eq(schema.describe("integer 1..64"), "an integer in 1..64")
  local types = { a = "integer 512..65528 %8|null", b = "integer 1..2048 pow2|null", c = "integer 1..64" }
  local cfg = { a = 16376, b = 64, c = 64.0 }
  schema.check(cfg, types)
  T.eq({ cfg.a, cfg.b, math.type(cfg.c) }, { 16376, 64, "integer" })
  schema.check({ a = null, b = null, c = 1 }, types)
  fails("a must be a multiple of 8 in 512..65528 or null, got integer 100", schema.check, { a = 100 }, types)
  fails("a must be a multiple of 8 in 512..65528 or null, got integer 1001", schema.check, { a = 1001 }, types)
  fails("a must be a multiple of 8 in 512..65528 or null, got integer 65536", schema.check, { a = 65536 }, types)
  fails("b must be a power of two in 1..2048 or null, got integer 3", schema.check, { b = 3 }, types)
  fails("b must be a power of two in 1..2048 or null, got integer 0", schema.check, { b = 0 }, types)
  fails("b must be a power of two in 1..2048 or null, got integer 4096", schema.check, { b = 4096 }, types)
  fails("c must be an integer in 1..64, got float 1.5", schema.check, { c = 1.5 }, types)
  T.raises(function() schema.describe("number 1..2") end, "schema: bad range")
  T.raises(function() schema.describe("integer 1..2 odd") end, "schema: bad range")
end)
