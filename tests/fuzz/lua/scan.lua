-- The log scanner (wb.scan.file: core/scan.c, core/scan_match.c, core/scan_read.c, core/scan_table.c) on
-- any bytes, with rules that use every option: a plain log's results must match the plain-Lua
-- reading of the contract (scanref.lua); a gzip one (magic 1f 8b) must scan or fail cleanly.
local F = require "fuzzlib"
local ref = require "scanref"
local scan = require "wb.scan"

local RULES = {
  { name = "sum", tag = "[A]", sum = "all", value = { "x", "y" }, collect = true, keep = "last" },
  { name = "event", tag = "[A]", group = "event", sum = "number", value = "seconds", collect = { "take" },
    keep = "first" },
  { name = "label", tag = "[B]", group = "label", sum = "time", collect = true, keep = "last" },
  { name = "word", tag = "[B]", word = "w", sum = "count" },
  { name = "long", tag = "[LONG_TAG_X]", sum = "time", value = "t" },
  { name = "short", tag = "x", group = "event", sum = "all", keep = "last" },
  { name = "labels", tag = "[C]", group = "label", collect = { "b" } },
  { name = "bare", tag = "[AB]" },
}

return function(data)
  local path = fuzz.tmpfile(data)
  local res, err, errno = scan.file(path, { rules = RULES, max_line = 1024 })
  if data:sub(1, 2) == "\x1f\x8b" then
    F.check(res or (type(err) == "string" and math.type(errno) == "integer"), "bad failure %s", tostring(err))
    return
  end
  F.check(res, "a plain log fails: %s", tostring(err))
  ref.check(RULES, data, res)
  for i, r in ipairs(RULES) do F.check(res.rules[r.name] == res.rules[i], "rules.%s", r.name) end
end
