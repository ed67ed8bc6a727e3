-- YAML -> Lua (core/yaml.c) and back (core/yaml_dump.c): wb.yaml.load and load_all never raise
-- on any text; a rejection is nil, "FILE:LINE:COL: problem"; what loads dumps to YAML that loads
-- back to the same values (types and key order included), and the dump of that is the same text.
-- dump may refuse only what it documents it cannot write that a load can give (non-UTF-8 strings).
local F = require "fuzzlib"
local yaml = require "wb.yaml"

local SAME = { order = true }
local MAX_NODES = 20000 -- aliases can make a small text a large tree; dumping it is not the point

return function(data)
  local docs, aerr = yaml.load_all(data, "f.yaml")
  local v, err = yaml.load(data, "f.yaml")
  if v == nil then
    F.check(type(err) == "string" and err:match("^f%.yaml:%d+:%d+: ."), "bad message %q", tostring(err))
    return
  end
  if docs == nil then
    F.check(type(aerr) == "string" and aerr:match("^f%.yaml:%d+:%d+: ."), "bad message %q", tostring(aerr))
  else
    F.check(#docs == 0 or F.same(docs[1], v, SAME), "load and load_all[1] differ")
  end
  if type(v) == "table" then yaml.location(v) end
  if not F.size(v, MAX_NODES) then return end
  local ok, text = pcall(yaml.dump, v)
  if not ok then
    F.check(tostring(text):find("not valid UTF-8", 1, true), "dump raised: %s", tostring(text))
    return
  end
  local again, e = yaml.load(text, "dump.yaml")
  F.check(again ~= nil, "dump does not load: %s\n%s", tostring(e), text)
  local same, where = F.same(v, again, SAME)
  F.check(same, "dump loads differently: %s\n%s", where or "", text)
  F.check(yaml.dump(again) == text, "dump is not stable")
end
