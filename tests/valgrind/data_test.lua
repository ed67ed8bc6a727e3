-- The data paths of the C core in one wb process, for tests/valgrind/run.sh (memcheck): JSON and
-- YAML round trips of the fixtures, their error paths, and the log scanner on a plain log, a gzip
-- log and a log large enough to be scanned by several threads.
local T = require "wb.test"
local fs = require "wb.fs"
local json = require "wb.json"
local scan = require "wb.scan"
local yaml = require "wb.yaml"

T.case("json: fixtures decode, re-encode and decode to the same values", function()
  for _, path in ipairs(fs.glob("tests/fixtures/json/small*.json")) do
    local v = assert(json.read(path))
    T.eq(json.decode(json.encode(v)), v, path)
    T.eq(json.decode(json.encode(v, { pretty = true, indent = 4 })), v, path)
  end
  local v, err = json.read("tests/fixtures/json/bad.json")
  T.ok(v == nil and err:find("json: line"), err)
  T.raises(function() local t = {} t.self = t json.encode(t) end, "json: cycle")
end)

T.case("yaml: fixtures load, dump and load to the same text; errors carry a position", function()
  for _, path in ipairs(fs.glob("tests/fixtures/yaml/*.yaml")) do
    local text = yaml.dump(assert(yaml.load_file(path)))
    T.eq(yaml.dump(assert(yaml.load(text))), text, path)
  end
  local v, err = yaml.load("a: [1, 2\nb: {", "bad.yaml")
  T.ok(v == nil and err:match("^bad%.yaml:%d+:%d+: "), err)
  local docs = assert(yaml.load_all("a: &x [1, 2]\nb: *x\n---\nc: {<<: {d: 1}}\n"))
  T.eq(docs[1].b, { 1, 2 })
  T.eq(docs[2].c.d, 1)
end)

local RULES = {
  { name = "engine", tag = "[VEP_ENGINE_PROFILE]", sum = "time", keep = "last" },
  { name = "lance", tag = "[vep-lance-profile]", group = "event", value = { "seconds", "open_s" }, collect = true },
  { name = "timers", tag = "[VEP_PROFILE]", group = "label", sum = "time" },
}

T.case("scan: plain and gzip logs", function()
  for _, path in ipairs({ "tests/fuzz/corpus/vep/emit_all.log", "tests/fuzz/corpus/vep/emit_lance.log.gz" }) do
    local res = assert(scan.file(path, { rules = RULES }))
    T.ok(res.lines > 20 and res.rules.lance.n + res.rules.timers.n > 0, path)
  end
  local res, err = scan.file("tests/valgrind/nonexistent.log", { rules = RULES })
  T.ok(res == nil and err:find("nonexistent"), err)
end)

T.case("scan: a 3 MiB log in several threads gives the sequential result", function()
  local dir = T.tmpdir()
  local line = "[VEP_ENGINE_PROFILE] rows=5000 row_setup=0.001200s hgvs_shift=0.013000s\n"
    .. "[vep-lance-profile] variation_take row_ids=3301 seconds=0.041\n"
    .. "noise line without a tag\r[VEP_PROFILE] load transcripts..........   12.5ms\n"
  local path = dir .. "/big.log"
  assert(fs.write(path, line:rep(3 * 1024 * 1024 // #line)))
  local one = assert(scan.file(path, { rules = RULES, threads = 1 }))
  local three = assert(scan.file(path, { rules = RULES, threads = 3 }))
  T.ok(three.threads > 1, "threads " .. three.threads)
  T.eq(three.rules.engine.keys.row_setup.count, one.rules.engine.keys.row_setup.count)
  T.eq(three.rules.lance.groups.variation_take.dist, one.rules.lance.groups.variation_take.dist)
  T.eq(three.rules.timers.groups["load transcripts"].n, one.rules.timers.groups["load transcripts"].n)
end)
