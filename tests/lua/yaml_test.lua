-- wb.yaml: core-schema scalars, tags, anchors and merge keys, error messages with positions,
-- source locations, and a dumper whose output loads back to equal values.
local T = require "wb.test"
local yaml = require "wb.yaml"
local json = require "wb.json"
local core = require "wb.core"
local fs = require "wb.fs"

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fixtures = here .. "/../fixtures/yaml/"

-- An ordered table from a flat key, value, key, value... list.
local function ordered(kv)
  local t = core.ordered()
  for i = 1, #kv, 2 do t[kv[i]] = kv[i + 1] end
  return t
end

local function err_of(text, file)
  local v, err = yaml.load(text, file)
  T.eq(v, nil, text)
  return err
end

T.case("plain scalars resolve by the core schema", function()
  local null = yaml.null
  local cases = {
    { "null", null }, { "Null", null }, { "NULL", null }, { "~", null }, { "", null },
    { "true", true }, { "True", true }, { "TRUE", true }, { "false", false }, { "False", false },
    { "FALSE", false }, { "0", 0, "integer" }, { "-12", -12, "integer" }, { "+7", 7, "integer" },
    { "0x1F", 31, "integer" }, { "0xff", 255, "integer" }, { "0o17", 15, "integer" },
    { "9223372036854775807", math.maxinteger, "integer" },
    { "-9223372036854775808", math.mininteger, "integer" },
    { "9223372036854775808", 9223372036854775808.0, "float" }, { "0x10000000000000000", 2.0 ^ 64, "float" },
    { "0o2000000000000000000000", 2.0 ^ 64, "float" }, { "-99999999999999999999", -1e20, "float" },
    { "1.5", 1.5, "float" }, { "1.0", 1.0, "float" }, { "1e3", 1000.0, "float" },
    { "-2.5E-1", -0.25, "float" }, { ".5", 0.5, "float" }, { "1.", 1.0, "float" },
    { ".inf", math.huge, "float" }, { "-.Inf", -math.huge, "float" }, { "+.INF", math.huge, "float" },
    { "yes", "yes" }, { "no", "no" }, { "on", "on" }, { "1_000", "1_000" }, { "0b101", "0b101" },
    { "-0x10", "-0x10" }, { "0x", "0x" }, { "1e", "1e" }, { ".", "." }, { "nulls", "nulls" },
    { "hello world", "hello world" }, { "2024-01-02", "2024-01-02" }, { "1:30", "1:30" },
  }
  for _, c in ipairs(cases) do
    local v = yaml.load("v: " .. c[1] .. "\n").v
    T.ok(rawequal(v, c[2]) or v == c[2], "'" .. c[1] .. "' -> " .. tostring(v))
    if c[3] then T.eq(math.type(v), c[3], c[1]) end
    if type(c[2]) == "string" then T.eq(type(v), "string", c[1]) end
  end
  local nan = yaml.load("v: .nan").v
  T.ok(nan ~= nan, ".nan is NaN")
  T.ok(yaml.load("v: .NaN").v ~= yaml.load("v: .NaN").v)
end)

T.case("quoted, literal and folded scalars are strings", function()
  local v = yaml.load([[
a: "null"
b: '12'
c: "tab\there \u00e9 \x41"
d: |
  keep
  lines
e: >
  folded
  text
f: 'it''s'
]])
  T.eq(v.a, "null")
  T.eq(v.b, "12")
  T.eq(v.c, "tab\there é A")
  T.eq(v.d, "keep\nlines\n")
  T.eq(v.e, "folded text\n")
  T.eq(v.f, "it's")
end)

T.case("explicit tags", function()
  local v = yaml.load([[
s: !!str 123
b: !!str true
i: !!int "42"
h: !!int 0x10
f: !!float 3
g: !!float "2.5"
t: !!bool "true"
n: !!null ""
x: ! 12
m: !!map {a: 1}
q: !!seq [1]
]])
  T.eq(v.s, "123")
  T.eq(v.b, "true")
  T.eq(math.type(v.i), "integer")
  T.eq(v.i, 42)
  T.eq(v.h, 16)
  T.eq(math.type(v.f), "float")
  T.eq(v.f, 3.0)
  T.eq(v.g, 2.5)
  T.eq(v.t, true)
  T.ok(v.n == yaml.null)
  T.eq(v.x, "12")
  T.eq(v.m, { a = 1 })
  T.eq(v.q, { 1 })
  T.eq(err_of("a: 1\nb: !!int abc\n", "t.yaml"), "t.yaml:2:4: invalid !!int value 'abc'")
  T.eq(err_of("x: !!float nope"), "<string>:1:4: invalid !!float value 'nope'")
  T.eq(err_of("x: !!bool yes"), "<string>:1:4: invalid !!bool value 'yes'")
  T.eq(err_of("x: !!null 0"), "<string>:1:4: invalid !!null value '0'")
  T.eq(err_of("x: !custom 1"), "<string>:1:4: unsupported tag '!custom'")
  T.eq(err_of("x: !!seq {a: 1}"), "<string>:1:4: unsupported tag 'tag:yaml.org,2002:seq'")
end)

T.case("mappings keep source order, sequences are arrays", function()
  local v = yaml.load("z: 1\na: [x, y]\nm:\n  q: {}\n  b: []\n")
  T.eq(core.ordered_keys(v), { "z", "a", "m" })
  T.eq(core.ordered_keys(v.m), { "q", "b" })
  T.eq(json.encode(v), '{"z":1,"a":["x","y"],"m":{"q":{},"b":[]}}')
  local keys = yaml.load("1: a\ntrue: b\n1.5: c\n'1': d\n")
  T.eq(keys[1], "a")
  T.eq(keys[true], "b")
  T.eq(keys[1.5], "c")
  T.eq(keys["1"], "d")
end)

T.case("anchors and aliases give independent copies", function()
  local v = yaml.load([[
base: &b
  list: &l [1, 2]
  name: &n x
copy: *b
list2: *l
name2: *n
]])
  T.eq(v.copy, { list = { 1, 2 }, name = "x" })
  T.eq(v.list2, { 1, 2 })
  T.eq(v.name2, "x")
  v.copy.list[1] = 99
  v.list2[2] = 77
  T.eq(v.base.list, { 1, 2 }, "the anchored original is untouched")
  T.eq(v.copy.list[2], 2)
  T.eq(core.ordered_keys(v.copy), { "list", "name" })
  T.eq(getmetatable(v.list2), getmetatable(json.array()))
  T.eq(err_of("a: *nope\n"), "<string>:1:4: unknown anchor 'nope'")
  T.eq(err_of("a: &a [1, *a]\n"), "<string>:1:11: unknown anchor 'a'")
  local key = yaml.load("k: &k name\n*k : value\n")
  T.eq(key.name, "value")
end)

T.case("merge keys: explicit keys win, earlier merges win", function()
  local v = yaml.load([[
a: &a {x: 1, y: 1, z: 1}
b: &b {y: 2, w: 2}
one:
  <<: *a
  y: 10
two:
  y: 20
  <<: [*b, *a]
three:
  <<: {k: v}
]])
  T.eq(v.one, { x = 1, y = 10, z = 1 })
  T.eq(core.ordered_keys(v.one), { "x", "y", "z" })
  T.eq(v.two, { y = 20, w = 2, x = 1, z = 1 })
  T.eq(core.ordered_keys(v.two), { "y", "w", "x", "z" })
  T.eq(v.three, { k = "v" })
  v.one.x = 5
  T.eq(v.a.x, 1)
  T.eq(err_of("a: 1\n<<: 2\n"), "<string>:2:1: merge value must be a mapping or a list of mappings")
  T.eq(err_of("<<: [{a: 1}, [2]]\n"), "<string>:1:1: merge value must be a mapping or a list of mappings")
  T.eq(err_of("a: &a {x: 1}\nb:\n  <<: *a\n  y: 1\n  y: 2\n"), "<string>:5:3: duplicate key 'y'")
  T.eq(yaml.load("'<<': 1")["<<"], 1, "a quoted << is an ordinary key")
end)

T.case("duplicate, non-scalar and null keys are errors", function()
  T.eq(err_of("a: 1\nb:\n  c: 1\n  c: 2\n", "dup.yaml"), "dup.yaml:4:3: duplicate key 'c'")
  T.eq(err_of("x: 1\n'x': 2\n"), "<string>:2:1: duplicate key 'x'")
  T.eq(err_of("1: a\n0x1: b\n"), "<string>:2:1: duplicate key '0x1'")
  T.eq(err_of("? [a]\n: 1\n"), "<string>:1:3: non-scalar key")
  T.eq(err_of("{a: 1}: x\n"), "<string>:1:1: non-scalar key")
  T.eq(err_of("l: &l [1]\n*l : x\n"), "<string>:2:1: non-scalar key")
  T.eq(err_of("~: x\n"), "<string>:1:1: null key")
  T.eq(err_of(".nan: x\n"), "<string>:1:1: NaN key")
end)

T.case("syntax errors: FILE:LINE:COL: problem (context)", function()
  T.eq(err_of("a:\n\tb: 1\n", "tab.yaml"),
    "tab.yaml:2:1: found character that cannot start any token (while scanning for the next token)")
  T.eq(err_of("a: [1, 2\nb: 3\n"),
    "<string>:2:2: did not find expected ',' or ']' (while parsing a flow sequence)")
  T.eq(err_of("a: 1\n a: 2\n"), "<string>:2:3: mapping values are not allowed in this context")
  T.eq(err_of('a: "open\n'), "<string>:2:1: found unexpected end of stream (while scanning a quoted scalar)")
  T.eq(err_of("a: b\n\xff\n"), "<string>:2:1: invalid leading UTF-8 octet")
  T.eq(err_of("k: é\xff\n"), "<string>:1:5: invalid leading UTF-8 octet")
  T.raises(function() yaml.load(nil) end, "bad argument #1")
end)

T.case("documents", function()
  T.ok(yaml.load("") == yaml.null)
  T.ok(yaml.load("# only a comment\n") == yaml.null)
  T.ok(yaml.load("---\n") == yaml.null)
  T.eq(yaml.load("--- 5\n"), 5)
  local v, err = yaml.load("a: 1\n---\nb: 2\n", "two.yaml")
  T.eq({ v, err }, { nil, "two.yaml:2:1: a second document: the file must hold one (remove the '---' and what follows)" },
    "load refuses a second document")
  local docs = yaml.load_all("a: 1\n---\n- 2\n---\n--- text\n")
  T.eq(#docs, 4)
  T.eq(docs[1], { a = 1 })
  T.eq(docs[2], { 2 })
  T.ok(docs[3] == yaml.null)
  T.eq(docs[4], "text")
  T.eq(yaml.load_all(""), {})
  local v, err = yaml.load_all("a: 1\n---\nb: [\n", "m.yaml")
  T.eq(v, nil)
  T.eq(err, "m.yaml:4:1: did not find expected node content (while parsing a flow node)")
  T.eq(yaml.load_all("x: &a 1\n---\ny: *a\n"), nil, "anchors do not cross documents")
  T.ok(yaml.null == json.null and yaml.null == core.null)
end)

T.case("location of tables and values", function()
  local path = fixtures .. "config.yaml"
  local v = assert(yaml.load_file(path))
  T.eq({ yaml.location(v) }, { path, 2 })
  T.eq({ yaml.location(v, "name") }, { path, 2 })
  T.eq({ yaml.location(v, "defaults") }, { path, 3 }, "an anchored node starts at its anchor")
  T.eq({ yaml.location(v.defaults) }, { path, 3 })
  T.eq({ yaml.location(v.defaults, "timeout") }, { path, 5 })
  T.eq({ yaml.location(v.defaults.tags) }, { path, 6 })
  T.eq({ yaml.location(v.defaults.tags, 2) }, { path, 6 })
  T.eq({ yaml.location(v.runs, 2) }, { path, 11 })
  T.eq({ yaml.location(v.runs[1], "threads") }, { path, 10 }, "explicit key")
  T.eq({ yaml.location(v.runs[1], "timeout") }, { path, 5 }, "merged key points at the anchor")
  T.eq({ yaml.location(v.runs[2].tags) }, { path, 6 }, "copies keep their origin")
  T.eq({ yaml.location(v, "notes") }, { path, 13 })
  T.eq(v.notes, "line one\nline two\n")
  T.eq(v.folded, "a b\n")
  T.eq(v.runs[1].threads, 8)
  T.eq(v.runs[2].threads, 4)
  T.eq(yaml.location(v, "missing"), nil)
  T.eq(yaml.location({}), nil)
  T.eq({ yaml.location(yaml.load("a:\n  b:\n    - c: 1\n", "s.yaml").a.b[1], "c") }, { "s.yaml", 3 })
  local t = yaml.load("k: v\n")
  T.eq(next(t), "k", "no hidden keys on the data")
  T.eq(next(t, "k"), nil)
  T.raises(function() yaml.location("x") end, "bad argument #1")
end)

T.case("load_file errors", function()
  local v, err, errno = yaml.load_file(fixtures .. "missing.yaml")
  T.eq(v, nil)
  T.eq(err, fixtures .. "missing.yaml: No such file or directory")
  T.eq(errno, 2)
  local d = T.tmpdir()
  local f = assert(io.open(d .. "/bad.yaml", "w"))
  f:write("ok: 1\nbad: [\n")
  f:close()
  v, err = yaml.load_file(d .. "/bad.yaml")
  T.eq(v, nil)
  T.eq(err, d .. "/bad.yaml:3:1: did not find expected node content (while parsing a flow node)")
end)

T.case("limits: nesting and alias expansion", function()
  T.ok(yaml.load(string.rep("[", 1000) .. string.rep("]", 1000)) ~= nil)
  T.eq(err_of(string.rep("[", 1001) .. string.rep("]", 1001)), "<string>:1:1001: nesting too deep")
  T.eq(err_of(string.rep("[", 200000)), "<string>:1:1001: nesting too deep")
  local deep = {}
  for i = 1, 600 do deep[#deep + 1] = string.rep(" ", i - 1) .. "k:\n" end
  T.ok(yaml.load(table.concat(deep)) ~= nil)
  local bomb = { "a: &a [x, x, x, x, x, x, x, x, x, x]" }
  for i = 2, 9 do
    local prev = string.char(96 + i - 1)
    bomb[i] = string.char(96 + i) .. ": &" .. string.char(96 + i) .. " [" .. string.rep("*" .. prev, 10, ", ") .. "]"
  end
  T.eq(err_of(table.concat(bomb, "\n") .. "\n"), "<string>:6:36: too many alias expansions")
  local function nested(n) return "a: &a [[[[1]]]]\nb: " .. string.rep("[", n) .. "*a" .. string.rep("]", n) end
  T.ok(yaml.load(nested(995)) ~= nil, "an alias copy may reach the limit")
  T.eq(err_of(nested(996)), "<string>:2:1000: nesting too deep")
end)

local function dump_fixture_value()
  return ordered {
    "name", "wb", "version", 3, "ratio", 0.25, "whole", 2.0, "big", 1e21,
    "flags", { debug = false, trace = yaml.null },
    "list", { 1, "two", { "nested", "seq" }, ordered { "key", "v", "other", { deep = true } }, json.array(), {} },
    "strings", { "", "  padded ", "null", "true", "123", "0x1F", "1e3", ".inf", "a: b", "x #y", "- item",
      "*star", "line\nbreak", "tab\there", "ends:", "plain words", "café", "a:b#c" },
    "key: with colon", 1, "42", "string key", 42, "integer key",
    "empty_map", {}, "empty_seq", json.array(), "special", { math.huge, -math.huge, 0 / 0 },
  }
end

T.case("dump: exact text of a fixture", function()
  local v = dump_fixture_value()
  T.eq(yaml.dump(v), assert(fs.read(fixtures .. "dump.yaml")))
  local back = assert(yaml.load(yaml.dump(v)))
  T.ok(back.special[3] ~= back.special[3], "nan stays nan")
  back.special[3], v.special[3] = nil, nil
  T.eq(back, v)
  T.eq(math.type(back.whole), "float")
  T.eq(json.encode(back.flags), '{"debug":false,"trace":null}')
end)

T.case("dump: scalars, nesting and quoting", function()
  T.eq(yaml.dump(1), "1\n")
  T.eq(yaml.dump(1.0), "1.0\n")
  T.eq(yaml.dump("x"), "x\n")
  T.eq(yaml.dump("..."), '"..."\n')
  T.eq(yaml.dump(yaml.null), "null\n")
  T.eq(yaml.dump({}), "{}\n")
  T.eq(yaml.dump(json.array()), "[]\n")
  T.eq(yaml.dump({ { 1, 2 }, { 3 } }), "- - 1\n  - 2\n- - 3\n")
  T.eq(yaml.dump({ { a = 1, b = { c = { 1 } } } }), "- a: 1\n  b:\n    c:\n      - 1\n")
  T.eq(yaml.dump({ ["<<"] = 1 }), '"<<": 1\n')
  T.eq(yaml.dump({ [true] = "t", [1.5] = "f" }), "true: t\n1.5: f\n")
  T.eq(yaml.dump("\0\a\b\27\127\u{85}\u{a0}\u{2028}\u{2029}\u{feff}\u{9f}"),
    '"\\0\\a\\b\\e\\x7F\\N\u{a0}\\L\\P\\uFEFF\\x9F"\n')
  T.raises(function() yaml.dump({ f = print }) end, "yaml: cannot dump a function value")
  T.raises(function() yaml.dump({ [{}] = 1 }) end, "yaml: cannot dump a table key")
  T.raises(function() yaml.dump("\xff") end, "yaml: cannot dump a string that is not valid UTF-8")
  T.raises(function() yaml.dump("\xed\xa0\x80") end, "not valid UTF-8")
  local t = { 1 }
  t[2] = { t }
  T.raises(function() yaml.dump(t) end, "yaml: cycle")
  local deep = {}
  local cur = deep
  for _ = 1, 1000 do
    cur.k = {}
    cur = cur.k
  end
  T.raises(function() yaml.dump(deep) end, "yaml: nesting too deep")
end)

T.case("dump: round trip of varied values", function()
  local strings = { "", " ", "a", "-", "-1", "--- x", "? q", ": x", "#c", "a # b", "a#b", "{x}", "[1]", "x,y",
    "!tag", "&a", "*a", "|", ">", "'", '"', "%x", "@x", "`x", "multi\nline\n", "\r\n", "\t", "trailing ",
    "ü ñ 日本", "\u{1F600}", "\u{FFFE}", "yes", "No", "~", "NULL", "0o17", "0x", "+.inf", ".NaN", "1.", "1e5",
    "<<", "a: ", "a:", "key:value", "100%", string.rep("long ", 300), "\0", "\u{7f}", "\u{85}", "\u{2028}" }
  local values = {
    strings,
    { [string.rep("k", 2000)] = "long key", [string.rep("m", 1500)] = { nested = { 1, 2 } } },
    { ints = { 0, -1, math.maxinteger, math.mininteger }, floats = { 0.1, -0.0, 1e300, 5e-324, 1 / 3, 2.0 } },
    ordered { "b", 1, "a", { ordered { "y", 1, "x", json.array() }, {} }, "c", ordered {} },
    { [1] = "one", [3] = "three", [-1] = "minus" },
    { { { { "deep" } } } },
  }
  for _, s in ipairs(strings) do values[#values + 1] = { s } end
  for i, v in ipairs(values) do
    local text = yaml.dump(v)
    local back, err = yaml.load(text)
    T.eq(err, nil, "value " .. i .. ":\n" .. text)
    T.eq(back, v, "value " .. i .. ":\n" .. text)
    T.eq(yaml.dump(back), text, "dump is stable")
  end
  local f = yaml.load(yaml.dump({ 2.0, 1e21, -0.0 }))
  T.eq(math.type(f[1]), "float")
  T.eq(math.type(f[2]), "float")
  T.eq(1 / f[3], -math.huge, "negative zero survives")
end)

T.case("yaml and json agree on a loaded config", function()
  local v = assert(yaml.load_file(fixtures .. "config.yaml"))
  local j = json.decode(json.encode(v))
  T.eq(j, v)
  T.eq(json.encode(j), json.encode(v))
  T.eq(yaml.dump(j), yaml.dump(v))
end)
