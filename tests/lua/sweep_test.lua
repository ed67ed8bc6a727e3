-- wb.sweep: cartesian products of named axes, their order and case names.
local T = require "wb.test"
local wb = require "wb"
local sweep = wb.sweep

local function axes(pairs_list)
  local t = wb.ordered()
  for _, kv in ipairs(pairs_list) do t[kv[1]] = kv[2] end
  return t
end

local function names(list) return T.pluck(list, "name") end

T.case("mapping order, first axis slowest", function()
  local cases = sweep.expand(axes { { "threads", wb.array { 1, 4 } }, { "chunk", wb.array { 8192, 65536 } } })
  T.eq(names(cases), { "threads=1,chunk=8192", "threads=1,chunk=65536", "threads=4,chunk=8192", "threads=4,chunk=65536" })
  T.eq(cases[3].params, { threads = 4, chunk = 8192 })
  T.eq(wb.ordered_keys(cases[3].params), { "threads", "chunk" })
  T.eq(cases[4].index, 4)
end)

T.case("scalars are fixed: in params, not in names", function()
  local cases = sweep.expand(axes { { "mode", "fast" }, { "threads", wb.array { 2, 8 } }, { "cold", false } })
  T.eq(names(cases), { "threads=2", "threads=8" })
  T.eq(cases[2].params, { mode = "fast", threads = 8, cold = false })
  T.eq(wb.ordered_keys(cases[2].params), { "mode", "threads", "cold" })
end)

T.case("order option puts named axes first", function()
  local a = axes { { "threads", wb.array { 1, 2 } }, { "chunk", wb.array { 8, 16 } }, { "io", wb.array { "a" } } }
  T.eq(names(sweep.expand(a, { order = { "chunk" } })),
    { "chunk=8,threads=1,io=a", "chunk=8,threads=2,io=a", "chunk=16,threads=1,io=a", "chunk=16,threads=2,io=a" })
  T.raises(function() sweep.expand(a, { order = { "nosuch" } }) end, "unknown axis 'nosuch'")
end)

T.case("plain Lua tables: keys sorted, sequences are axes", function()
  local cases = sweep.expand { threads = { 1, 2 }, chunk = { 8 }, note = "x" }
  T.eq(names(cases), { "chunk=8,threads=1", "chunk=8,threads=2" })
  T.eq(cases[1].params, { chunk = 8, threads = 1, note = "x" })
end)

T.case("value formatting in names", function()
  local cases = sweep.expand(axes { { "r", wb.array { 0.5, true, wb.null, "a b", "x,y=z", "it's", wb.array { 1, 2 } } } })
  T.eq(names(cases), { "r=0.5", "r=true", "r=null", "r=a b", "r='x,y=z'", "r='it''s'", "r=[1, 2]" })
end)

T.case("an empty axis gives no cases; no axes give one default case", function()
  T.eq(#sweep.expand(axes { { "threads", wb.array() }, { "chunk", wb.array { 1 } } }), 0)
  local cases = sweep.expand(axes { { "mode", "fast" } })
  T.eq(#cases, 1)
  T.eq(cases[1].name, "default")
  T.eq(cases[1].params, { mode = "fast" })
end)

T.case("from_config: lists are axes, empty lists and scalars are fixed", function()
  local s = axes {
    { "chunk_sizes", wb.array { 1024, 2048 } }, { "modes", wb.array { "a", "b" } },
    { "tiles", wb.array() }, { "cold", false },
  }
  local cases = sweep.from_config(s)
  T.eq(names(cases), { "chunk_sizes=1024,modes=a", "chunk_sizes=1024,modes=b", "chunk_sizes=2048,modes=a",
    "chunk_sizes=2048,modes=b" })
  T.eq(cases[4].params, { chunk_sizes = 2048, modes = "b", tiles = {}, cold = false })
  T.eq(getmetatable(cases[4].params.tiles), getmetatable(wb.array()))
  T.eq(sweep.from_config(nil), { { index = 1, name = "default", params = {} } })
  T.eq(#sweep.from_config(wb.null), 1)
end)

T.case("from_config of a composed config's sweep block", function()
  local cfg = wb.config.compose {
    inline = { sweep = { threads = { 1, 2 }, chunk = 8 } }, overrides = { "sweep.threads=[4,8,16]" }, search_path = {},
  }
  T.eq(names(sweep.from_config(cfg.sweep)), { "threads=4", "threads=8", "threads=16" })
end)

T.case("misuse raises", function()
  T.raises(function() sweep.expand(wb.array { 1 }) end, "axes must be a mapping")
  T.raises(function() sweep.from_config(5) end, "expected a mapping")
end)
