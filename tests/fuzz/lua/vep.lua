-- The VEP profile reader (lua/wb/vep.lua): its scan rules (vep.RULES) on any log must give what
-- the plain-Lua reading of the scanner contract gives (scanref.lua), and its analysis, reading,
-- Markdown, summary, comparison and JSON must not fail on what the scan returns.
local F = require "fuzzlib"
local json = require "wb.json"
local ref = require "scanref"
local vep = require "wb.vep"

local CFG = { bound_ratio = 0.2, top = 4, wall = "auto" }

return function(data)
  local path = fuzz.tmpfile(data)
  local gzip = data:sub(1, 2) == "\x1f\x8b"
  if not gzip then ref.check(vep.RULES, data, assert(require("wb.scan").file(path, { rules = vep.RULES }))) end
  local ok, b, err = F.try(vep.analyse, path, 0)
  F.check(ok, "analyse raised %s", tostring(b))
  if not b then
    F.check(gzip, "analyse failed on a plain log: %s", tostring(err))
    return
  end
  for _, wall in ipairs({ false, 1.5 }) do
    F.check(F.try(vep.read, b, CFG, wall or nil), "read raised")
    F.check(F.try(vep.markdown, b, "t"), "markdown raised")
    F.check(F.try(vep.summary, b, wall and { argv = { "x" }, exit_code = 0, wall_seconds = wall } or nil), "summary raised")
  end
  F.check(F.try(vep.compare, b, b), "compare raised")
  json.decode(json.encode(b))
end
