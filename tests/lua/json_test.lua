-- wb.json: decoding to ordered tables and arrays, deterministic encoding, number types,
-- escapes, exact error positions, limits.
local T = require "wb.test"
local json = require "wb.json"
local core = require "wb.core"
local fs = require "wb.fs"

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local fixtures = here .. "/../fixtures/json/"

T.case("decode scalars and containers", function()
  local v = json.decode(' {"s": "x", "i": 42, "f": 2.5, "t": true, "n": null, "a": [1, [], {}]} ')
  T.eq(v.s, "x")
  T.eq(math.type(v.i), "integer")
  T.eq(v.i, 42)
  T.eq(math.type(v.f), "float")
  T.eq(v.t, true)
  T.ok(v.n == json.null, "null is the sentinel")
  T.eq(#v.a, 3)
  T.eq(getmetatable(v.a), getmetatable(json.array()))
  T.eq(getmetatable(v), getmetatable(json.object()))
  T.eq(json.decode("false"), false)
  T.eq(json.decode('"only"'), "only")
  T.ok(json.decode("null") == json.null)
  T.ok(json.null == core.null and json.null == require("wb").null)
end)

T.case("key order is kept from the source and re-encoded", function()
  local v = json.decode('{"zeta": 1, "alpha": {"y": 1, "x": 2}, "mid": 3}')
  T.eq(core.ordered_keys(v), { "zeta", "alpha", "mid" })
  T.eq(json.encode(v), '{"zeta":1,"alpha":{"y":1,"x":2},"mid":3}')
  v.first = 0
  v.alpha = nil
  T.eq(json.encode(v), '{"zeta":1,"mid":3,"first":0}')
  -- a repeated key would silently drop a value: it is an error where it stands
  T.eq({ json.decode('{"a":1,"a":2,"b":3}') }, { nil, 'json: line 1 col 8: duplicate key "a"' })
  T.eq({ json.decode('{"o": {"k": null, "k": 1}}') }, { nil, 'json: line 1 col 19: duplicate key "k"' })
  T.eq(json.encode(json.decode('[{"a": 1}, {"a": 2}]')), '[{"a":1},{"a":2}]', "the same key in two objects")
end)

T.case("plain tables encode with sorted keys", function()
  T.eq(json.encode({ b = 1, a = 2, [10] = 3, [2] = 4, B = 5 }), '{"2":4,"10":3,"B":5,"a":2,"b":1}')
  T.eq(json.encode({ [1.5] = "x", [1] = "y" }), '{"1":"y","1.5":"x"}')
  T.raises(function() json.encode({ [true] = 1 }) end, "json: cannot encode a boolean key")
end)

T.case("arrays versus objects", function()
  T.eq(json.encode({}), "{}")
  T.eq(json.encode(json.array()), "[]")
  T.eq(json.encode(json.object()), "{}")
  T.eq(json.encode(json.decode("[]")), "[]")
  T.eq(json.encode(json.decode("{}")), "{}")
  T.eq(json.encode({ 1, 2, 3 }), "[1,2,3]")
  T.eq(json.encode({ [1] = "a", [3] = "c" }), '{"1":"a","3":"c"}')
  T.eq(json.decode('{"1":"a","3":"c"}'), { ["1"] = "a", ["3"] = "c" }, "object keys are strings")
  T.eq(json.encode({ [0] = "z", "a" }), '{"0":"z","1":"a"}')
  T.eq(json.encode(json.array({ 1, json.null, 3 })), "[1,null,3]")
  T.eq(json.encode({ { {} }, json.array() }), "[[{}],[]]")
  local t = { 1, 2 }
  T.ok(json.array(t) == t, "array() marks in place")
end)

T.case("integers and floats stay apart", function()
  local cases = {
    { "0", 0, "integer" }, { "-7", -7, "integer" }, { "1.0", 1.0, "float" }, { "1e2", 100.0, "float" },
    { "1E-2", 0.01, "float" }, { "9007199254740992", 9007199254740992, "integer" },
    { "-9007199254740992", -9007199254740992, "integer" },
    { "9007199254740993", 9007199254740992.0, "float" }, { "-0", 0, "integer" },
    { "123456789012345678901234567890", 1.2345678901234568e29, "float" }, { "1e400", math.huge, "float" },
  }
  for _, c in ipairs(cases) do
    local v = json.decode(c[1])
    T.eq(math.type(v), c[3], c[1])
    T.eq(v, c[2], c[1])
  end
  T.eq(json.encode(3), "3")
  T.eq(json.encode(1.0), "1.0")
  T.eq(json.encode(-0.0), "-0.0")
  T.eq(json.encode(0.1), "0.1")
  T.eq(json.encode(1 / 3), "0.3333333333333333")
  T.eq(json.encode(1e300), "1e+300")
  T.eq(json.encode(2 ^ 63), "9.223372036854776e+18")
  T.eq(json.encode(0.1 + 0.2), "0.30000000000000004")
  T.eq(json.encode(math.mininteger), "-9223372036854775808")
  for _, x in ipairs({ 0.1, 1 / 3, 2 / 3, 1e-310, 5e-324, 1.7976931348623157e308, 123456.789, math.pi, 2 ^ 60 }) do
    local back = json.decode(json.encode(x))
    T.eq(math.type(back), "float")
    T.ok(back == x, "round trip of " .. string.format("%.17g", x))
  end
end)

T.case("NaN and infinities encode as null", function()
  T.eq(json.encode({ 0 / 0, math.huge, -math.huge }), "[null,null,null]")
end)

T.case("string escapes", function()
  T.eq(json.decode([["\u00e9"]]), "é")
  T.eq(json.decode([["\ud83d\ude00"]]), "\xF0\x9F\x98\x80")
  T.eq(json.decode([["a\u0000b"]]), "a\0b")
  T.eq(json.decode([["\"\\\/\b\f\n\r\t"]]), "\"\\/\b\f\n\r\t")
  T.eq(json.decode('"\xff raw bytes \xc3\xa9"'), "\xff raw bytes \xc3\xa9")
  T.eq(json.encode("é\xff"), '"é\xff"')
  T.eq(json.encode("\"\\/\b\f\n\r\t\1\31\127"), [["\"\\/\b\f\n\r\t\u0001\u001f]] .. "\127\"")
  T.eq(json.encode("a\0b"), [["a\u0000b"]])
  local all = {}
  for i = 0, 255 do all[#all + 1] = string.char(i) end
  local s = table.concat(all)
  T.eq(json.decode(json.encode(s)), s)
end)

T.case("syntax errors name line and column", function()
  local cases = {
    { "", "json: line 1 col 1: unexpected end of input" },
    { "[1,2", "json: line 1 col 5: unexpected end of input" },
    { '{"a":}', "json: line 1 col 6: unexpected character '}'" },
    { '{"a":1,}', "json: line 1 col 8: unexpected character '}'" },
    { "[1,]", "json: line 1 col 4: unexpected character ']'" },
    { '{"a" 1}', "json: line 1 col 6: unexpected character '1'" },
    { "{,}", "json: line 1 col 2: unexpected character ','" },
    { '[1,2]x', "json: line 1 col 6: unexpected character 'x'" },
    { "tru", "json: line 1 col 4: unexpected end of input" },
    { "nul1", "json: line 1 col 4: unexpected character '1'" },
    { "01", "json: line 1 col 2: unexpected character '1'" },
    { "-x", "json: line 1 col 2: unexpected character 'x'" },
    { "1.e5", "json: line 1 col 3: unexpected character 'e'" },
    { "+1", "json: line 1 col 1: unexpected character '+'" },
    { "'a'", "json: line 1 col 1: unexpected character '''" },
    { '"abc', "json: line 1 col 5: unexpected end of input" },
    { '"a\\x"', "json: line 1 col 3: invalid escape '\\x'" },
    { '"\\u12g4"', "json: line 1 col 2: invalid \\u escape" },
    { '"\\ud800x"', "json: line 1 col 2: unpaired surrogate \\ud800" },
    { '"\\udc00"', "json: line 1 col 2: unpaired surrogate \\udc00" },
    { '"a\tb"', "json: line 1 col 3: unescaped control character in string" },
    { "[1,\0 2]", "json: line 1 col 4: unexpected byte 0x00" },
    { '{\n  "a": [1, 2,\n        3,]\n}', "json: line 3 col 11: unexpected character ']'" },
    { "[\r\n\r\n  }", "json: line 3 col 3: unexpected character '}'" },
  }
  for _, c in ipairs(cases) do
    local v, err = json.decode(c[1])
    T.eq(v, nil, c[1])
    T.eq(err, c[2], c[1])
  end
  T.raises(function() json.decode(nil) end, "bad argument #1")
end)

T.case("nesting limit", function()
  local ok = json.decode(string.rep("[", 1000) .. string.rep("]", 1000))
  T.ok(ok ~= nil, "1000 levels decode")
  local v, err = json.decode(string.rep('{"a":', 500) .. string.rep("[", 501))
  T.eq(v, nil)
  T.eq(err, "json: line 1 col 3001: nesting too deep")
  local deep = {}
  local cur = deep
  for _ = 1, 999 do
    cur[1] = {}
    cur = cur[1]
  end
  T.eq(#json.encode(deep), 2000)
  cur[1] = {}
  T.raises(function() json.encode(deep) end, "json: nesting too deep")
  v, err = json.decode(string.rep("[", 100000))
  T.eq(err, "json: line 1 col 1001: nesting too deep")
end)

T.case("unencodable values raise", function()
  local t = { a = { 1, 2 } }
  t.a[3] = t
  T.raises(function() json.encode(t) end, "json: cycle")
  local shared = { 1 }
  T.eq(json.encode({ shared, shared }), "[[1],[1]]", "shared but acyclic is fine")
  T.raises(function() json.encode({ f = print }) end, "json: cannot encode a function value")
  T.raises(function() json.encode(io.stdout) end, "json: cannot encode a userdata value")
  T.raises(function() json.encode(coroutine.create(print)) end, "json: cannot encode a thread value")
  T.eq(json.encode(json.null), "null")
  T.eq(json.encode(nil), "null")
end)

T.case("pretty and compact output of a fixture", function()
  local v = assert(json.read(fixtures .. "small.json"))
  T.eq(json.encode(v, { pretty = true }) .. "\n", assert(fs.read(fixtures .. "small.pretty.json")))
  T.eq(json.encode(v) .. "\n", assert(fs.read(fixtures .. "small.compact.json")))
  T.eq(json.encode({ a = { 1 }, b = {} }, { pretty = true, indent = 4 }), '{\n    "a": [\n        1\n    ],\n    "b": {}\n}')
  T.eq(json.encode(json.decode(assert(fs.read(fixtures .. "small.pretty.json"))), { pretty = true }) .. "\n",
    assert(fs.read(fixtures .. "small.pretty.json")), "pretty output is a fixed point")
  T.raises(function() json.encode({}, { indent = -1 }) end, "indent must be 0..16")
end)

T.case("read: files and their errors", function()
  local v, err = json.read(fixtures .. "bad.json")
  T.eq(v, nil)
  T.eq(err, fixtures .. "bad.json: json: line 3 col 11: unexpected character ']'")
  local errno
  v, err, errno = json.read(fixtures .. "missing.json")
  T.eq(v, nil)
  T.eq(err, fixtures .. "missing.json: No such file or directory")
  T.eq(errno, 2)
  local d = T.tmpdir()
  local f = assert(io.open(d .. "/big.json", "wb"))
  local items = {}
  for i = 1, 20000 do items[i] = { id = i, name = "item" .. i, score = i / 7 } end
  f:write(json.encode(items))
  f:close()
  local back = assert(json.read(d .. "/big.json"))
  T.eq(back, items)
  T.eq(select(2, json.read(d)), d .. ": Is a directory")
end)

T.case("object(): existing keys sorted, new keys in insertion order", function()
  local o = json.object({ z = 1, a = 2, [3] = 4 })
  o.m = 5
  o.b = 6
  T.eq(json.encode(o), '{"3":4,"a":2,"z":1,"m":5,"b":6}')
  T.eq(core.ordered_keys(o), { 3, "a", "z", "m", "b" })
  local p = json.object()
  p.y = 1
  p.x = 2
  T.ok(json.object(p) == p)
  T.eq(json.encode(p), '{"y":1,"x":2}')
end)

T.case("round trip of varied values", function()
  local values = {
    { 1, 2.5, "three", true, false, json.null, json.array(), json.object() },
    { nested = { deeper = { deepest = { "x", { y = "z" } } } } },
    { unicode = "日本語 ✓", quote = '"', backslash = "\\", newline = "a\nb" },
    {},
  }
  for _, v in ipairs(values) do
    local s = json.encode(v)
    T.eq(json.decode(s), v, s)
    T.eq(json.encode(json.decode(s)), s)
    T.eq(json.encode(json.decode(json.encode(v, { pretty = true }))), s)
  end
end)

T.case("write: a file atomically, streamed, with a final newline", function()
  local d = T.tmpdir()
  local p = d .. "/doc.json"
  local big = json.array()
  for i = 1, 100000 do big[i] = i + 0.5 end -- about 1 MB of text: many buffer flushes
  local doc = json.object()
  doc.n, doc.values = 3, big
  T.eq(json.write(p, doc, { pretty = true }), true)
  local text = assert(fs.read(p))
  T.eq(text:sub(-1), "\n")
  T.eq(text, json.encode(doc, { pretty = true }) .. "\n")
  T.eq(json.read(p).values[100000], 100000.5)
  T.eq(json.write(p, { a = 1 }), true)
  T.eq(assert(fs.read(p)), '{"a":1}\n')
  local cyclic = {}
  cyclic.self = cyclic
  T.raises(function() json.write(p, cyclic) end, "json: cycle")
  T.eq(assert(fs.read(p)), '{"a":1}\n', "the old file is kept")
  local names = {}
  for _, n in ipairs(fs.list(d)) do names[#names + 1] = n end
  T.eq(names, { "doc.json" }, "no temporary file is left behind")
  local ok, err = json.write(d .. "/missing/doc.json", {})
  T.eq(ok, nil)
  T.match(err, "missing/doc.json: No such file or directory")
end)

T.case("documents larger than cJSON's window: read member by member, the same values and errors", function()
  local items = {}
  for i = 1, 30000 do items[i] = string.format('{"id": %d, "f": %d.5, "s": "a\\u0000b%d"}', i, i, i) end
  local text = "[" .. table.concat(items, ",") .. "]" -- about 1.3 MB: beyond the 256 KiB window
  local v = assert(json.decode(text))
  T.eq(#v, 30000)
  T.eq(math.type(v[30000].id), "integer")
  T.eq(v[30000].f, 30000.5)
  T.eq(v[2].s, "a\0b2")
  T.eq(core.ordered_keys(v[1]), { "id", "f", "s" })
  local prefix = text:sub(1, -2)
  local cases = {
    { ',{"k": 1, "k": 2}]', 11, 'duplicate key "k"' },
    { ',"\t"]', 3, "unescaped control character in string" },
    { ",01]", 3, "unexpected character '1'" },
    { ',"\\uZZZZ"]', 3, "invalid \\u escape" },
    { ",1.]", 4, "unexpected character ']'" },
    { ",\v1]", 2, "unexpected byte 0x0b" },
  }
  for _, c in ipairs(cases) do
    T.eq(select(2, json.decode(prefix .. c[1])), string.format("json: line 1 col %d: %s", #prefix + c[2], c[3]), c[1])
  end
  local doc = '{"a": ' .. text .. ', "a": 1}'
  T.eq(select(2, json.decode(doc)), string.format('json: line 1 col %d: duplicate key "a"', #text + 9))
end)

T.case("read: a file of 16 MB or more is given back as it is read, the same values and errors", function()
  local d = T.tmpdir()
  local lines = {}
  for i = 1, 300000 do lines[i] = string.format('  {"id": %d, "name": "item %d", "v": [%d.25, true, null]}', i, i, i) end
  local text = "[\n" .. table.concat(lines, ",\n") .. "\n]\n" -- about 19 MB
  T.ok(#text >= 16 * 1024 * 1024, "beyond wb.json.read's threshold")
  local path = d .. "/big.json"
  assert(fs.write(path, text))
  local v = assert(json.read(path))
  T.eq(#v, 300000)
  T.eq(v[300000].name, "item 300000")
  T.eq(v[199999].v[1], 199999.25)
  T.eq(core.ordered_keys(v[7]), { "id", "name", "v" })
  assert(fs.write(path, text:sub(1, -4) .. ',\n  {"a": 1,\n   "a": 2}\n]\n'))
  T.eq(select(2, json.read(path)), path .. ': json: line 300003 col 4: duplicate key "a"')
  assert(fs.write(path, text:sub(1, -4) .. ",\n  [1, 2,]\n]\n"))
  T.eq(select(2, json.read(path)), path .. ": json: line 300002 col 9: unexpected character ']'")
end)
