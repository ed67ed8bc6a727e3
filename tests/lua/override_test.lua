-- The override grammar (lua/wb/override.lua): keys, prefixes, values, quoting, lists, mappings,
-- sweeps, and each grammar error with its exact message.
local T = require "wb.test"
local wb = require "wb"
local override = require "wb.override"

local null = wb.null

local function value(text) return override.parse("k=" .. text).value end

local function fails(text, msg)
  local e = T.raises(function() override.parse(text) end, msg)
  T.eq(e.msg, msg)
  T.eq(e.exit, 2)
end

T.case("prefixes and keys", function()
  local o = override.parse("tool.trials=5")
  T.eq({ o.op, o.key, o.path, o.value, o.has_value }, { "set", "tool.trials", { "tool", "trials" }, 5, true })
  o = override.parse("+tool.note=x")
  T.eq({ o.op, o.key, o.value }, { "add", "tool.note", "x" })
  o = override.parse("++a.b-c=1")
  T.eq({ o.op, o.key, o.value }, { "force", "a.b-c", 1 })
  o = override.parse("~tool.flag")
  T.eq({ o.op, o.key, o.has_value }, { "delete", "tool.flag", false })
  o = override.parse("~tool.flag=1")
  T.eq({ o.op, o.value }, { "delete", 1 })
  o = override.parse("machine/node=small")
  T.eq({ o.key, o.path, o.value }, { "machine/node", { "machine/node" }, "small" })
end)

T.case("scalars are typed like YAML flow scalars", function()
  T.eq(math.type(value("5")), "integer")
  T.eq(value("-12"), -12)
  T.eq(value("1_000"), 1000)
  T.eq(math.type(value("1.5")), "float")
  T.eq(value("1e3"), 1000.0)
  T.eq(math.type(value("1e3")), "float")
  T.eq(value(".5"), 0.5)
  T.eq(value("inf"), math.huge)
  T.eq(value("-.inf"), -math.huge)
  T.ok(value("nan") ~= value("nan"))
  T.eq(value("true"), true)
  T.eq(value("False"), false)
  T.eq(value("null"), null)
  T.eq(value("NULL"), null)
  T.eq(value("~"), null)
  T.eq(value("abc"), "abc")
  T.eq(value("1.2.3"), "1.2.3")
  T.eq(value("0x10"), "0x10")
  T.eq(value("out/run.json"), "out/run.json")
  T.eq(value("two words "), "two words")
  T.eq(value(""), "")
end)

T.case("quoting keeps commas, spaces and types as text", function()
  T.eq(value("'a, b'"), "a, b")
  T.eq(value('"x y"'), "x y")
  T.eq(value("'5'"), "5")
  T.eq(value("'true'"), "true")
  T.eq(value([['it\'s']]), "it's")
  T.eq(value([[x\,y]]), "x,y")
  T.eq(value([[\5]]), "5")
  T.eq(math.type(value([[\5]])), nil)
end)

T.case("lists and mappings", function()
  local l = value("[1,2,4,8]")
  T.eq(l, { 1, 2, 4, 8 })
  T.ok(override.is_list(l))
  T.eq(value("[ [1, 2], [3] ]"), { { 1, 2 }, { 3 } })
  T.eq(value([==[['a, b', "c", d e, null]]==]), { "a, b", "c", "d e", null })
  local empty = value("[]")
  T.ok(override.is_list(empty) and #empty == 0)
  local m = value("{a: 1, b: [2, 3], 'c d': {e: x}}")
  T.eq(m, { a = 1, b = { 2, 3 }, ["c d"] = { e = "x" } })
  T.eq(wb.ordered_keys(m), { "a", "b", "c d" })
end)

T.case("interpolations stay in plain strings", function()
  T.eq(value("${workload.chunk_size}"), "${workload.chunk_size}")
  T.eq(value("${env:X,a,b}/out"), "${env:X,a,b}/out")
  T.eq(#override.parse("k=${env:X,a},b").values, 2)
  T.eq(value([[\${x}]]), [[\${x}]])
end)

T.case("sweeps: top-level commas outside quotes and brackets", function()
  local o = override.parse("tool.threads=1,2, 4")
  T.eq(#o.values, 3)
  T.eq({ o.values[1].value, o.values[3].value, o.values[3].raw }, { 1, 4, "4" })
  T.eq(#override.parse("a=[1,2]").values, 1)
  T.eq(#override.parse("a='1,2'").values, 1)
  T.eq(#override.parse("a={x: 1, y: 2}").values, 1)
end)

T.case("multirun: the cartesian product, first sweep slowest", function()
  T.eq(override.multirun({ "a=1", "b=[1,2]", "c='x,y'" }), nil)
  T.eq(override.multirun({ "tool.threads=1,2,4", "mode=fast", "+tool.note='a, b',c", "machine=local,slurm_cpu" }), {
    { "tool.threads=1", "mode=fast", "+tool.note='a, b'", "machine=local" },
    { "tool.threads=1", "mode=fast", "+tool.note='a, b'", "machine=slurm_cpu" },
    { "tool.threads=1", "mode=fast", "+tool.note=c", "machine=local" },
    { "tool.threads=1", "mode=fast", "+tool.note=c", "machine=slurm_cpu" },
    { "tool.threads=2", "mode=fast", "+tool.note='a, b'", "machine=local" },
    { "tool.threads=2", "mode=fast", "+tool.note='a, b'", "machine=slurm_cpu" },
    { "tool.threads=2", "mode=fast", "+tool.note=c", "machine=local" },
    { "tool.threads=2", "mode=fast", "+tool.note=c", "machine=slurm_cpu" },
    { "tool.threads=4", "mode=fast", "+tool.note='a, b'", "machine=local" },
    { "tool.threads=4", "mode=fast", "+tool.note='a, b'", "machine=slurm_cpu" },
    { "tool.threads=4", "mode=fast", "+tool.note=c", "machine=local" },
    { "tool.threads=4", "mode=fast", "+tool.note=c", "machine=slurm_cpu" },
  })
  T.eq(override.multirun({ "l=[1,2],[3]" }), { { "l=[1,2]" }, { "l=[3]" } })
end)

T.case("grammar errors name the override", function()
  fails("tool.trials", "override 'tool.trials': expected key=value")
  fails("sweep.threads=[1,2", "override 'sweep.threads=[1,2': malformed list: missing ']'")
  fails("a=[1,[2]", "override 'a=[1,[2]': malformed list: missing ']'")
  fails("a={x: 1", "override 'a={x: 1': malformed mapping: missing '}'")
  fails("a={x}", "override 'a={x}': malformed mapping: expected 'key: value'")
  fails("a='abc", "override 'a='abc': malformed value: unterminated quote '")
  fails("a=1]", "override 'a=1]': malformed value: unexpected ']' at position 2 (quote the value?)")
  fails("a=[1,,2]", "override 'a=[1,,2]': malformed value: empty element")
  fails("a=1,", "override 'a=1,': malformed value: empty element")
  fails("a=[1,]", "override 'a=[1,]': malformed value: empty element before ']'")
  fails("a=${x", "override 'a=${x': malformed interpolation: missing '}'")
  fails("=5", "override '=5': missing key before '='")
  fails("tool..x=1", "override 'tool..x=1': bad key 'tool..x'")
  fails("+++x=1", "override '+++x=1': bad key '+x'")
  fails("1abc=1", "override '1abc=1': bad key '1abc': a key starts with a letter or '_'")
  fails("tool.tr\u{456}als=1", "override 'tool.tr\u{456}als=1': bad key 'tool.tr\u{456}als': '\u{456}' is not an ASCII character")
end)

T.case("format: one-line flow YAML", function()
  T.eq(override.format(5), "5")
  T.eq(override.format(2.0), "2.0")
  T.eq(override.format(math.huge), ".inf")
  T.eq(override.format(null), "null")
  T.eq(override.format("abc"), "abc")
  T.eq(override.format("a, b"), "'a, b'")
  T.eq(override.format("5"), "'5'")
  T.eq(override.format("it's x"), "'it''s x'")
  T.eq(override.format(wb.array { 1, "x", { 2 } }), "[1, x, [2]]")
  local m = wb.ordered()
  m.b = 1
  m.a = wb.array()
  T.eq(override.format(m), "{b: 1, a: []}")
end)

T.case("kind", function()
  T.eq({ override.kind(1), override.kind(1.0), override.kind("x"), override.kind(true), override.kind(null),
    override.kind(wb.array()), override.kind({}) },
    { "integer", "float", "string", "boolean", "null", "list", "mapping" })
end)
