-- The compare loader (lua/wb/compare.lua): any file given to compare.load either loads or is
-- refused with a wb error of exit 2 (missing, malformed, unsupported schema); a loaded set is the
-- set from_document builds from the decoded text, compares with itself without regressions or
-- improvements, and renders as Markdown and as a wb.compare document.
local F = require "fuzzlib"
local compare = require "wb.compare"
local json = require "wb.json"

return function(data)
  local ok, set = F.try(compare.load, fuzz.tmpfile(data))
  if not ok then
    F.check(set.exit == 2 and set.msg:find("^compare: "), "refusal %q (exit %s)", tostring(set.msg), tostring(set.exit))
    return
  end
  local doc = json.decode(data)
  F.check(doc ~= nil, "compare.load accepts text json.decode rejects")
  local ok2, again = F.try(compare.from_document, doc, set.path)
  F.check(ok2 and F.same(again, set), "from_document of the same text differs from load")
  local ok3, result = F.try(compare.compare, set, set)
  if not ok3 then
    F.check(next(set.metrics) == nil and result.msg:find("no metric in common", 1, true), "compare refused: %s",
      tostring(result.msg))
    return
  end
  local s = result.summary
  F.check(s.regressions == 0 and s.improvements == 0, "a set compared with itself: %s", s.text)
  compare.markdown(result)
  json.encode(compare.document(result))
end
