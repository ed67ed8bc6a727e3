-- JSON (core/json.c, core/json_read.c, core/json_text.c): the reader built on cJSON feeds the same
-- events (values, integers kept apart from floats, keys in order) as the reference model of the
-- parser wb had before cJSON (json_ref.c), or fails with the same "json: line L col C: what";
-- wb.json.decode and wb_json_reformat accept the same texts and reject the others with that
-- message; what they accept re-encodes (compact and pretty) to text that decodes to the same
-- values, key order included, and encoding is idempotent.
local F = require "fuzzlib"
local json = require "wb.json"

local SAME = { order = true, nonfinite_null = true } -- encode writes NaN and infinities as null

return function(data)
  local events, eerr = fuzz.events(data)
  local ref, referr = fuzz.ref_events(data)
  F.check(events == ref and eerr == referr, "the reader differs from the reference model: %q %q, model %q %q",
    tostring(events), tostring(eerr), tostring(ref), tostring(referr))
  local v, err = json.decode(data)
  F.check((v == nil) == (events == nil) and err == eerr, "decode differs from the reader: %q vs %q",
    tostring(err), tostring(eerr))
  local compact, rerr = fuzz.reformat(data, false)
  if v == nil then
    F.check(type(err) == "string" and err:match("^json: line %d+ col %d+: ."), "bad message %q", tostring(err))
    F.check(compact == nil, "reformat accepts what decode rejects (%s)", err)
    F.check(rerr == err, "messages differ: %q vs %q", err, tostring(rerr))
    return
  end
  F.check(compact, "reformat rejects what decode accepts: %s", tostring(rerr))
  local text = json.encode(v)
  local pretty = json.encode(v, { pretty = true })
  for _, t in ipairs({ text, pretty, compact, fuzz.reformat(data, true) }) do
    local again, e = json.decode(t)
    F.check(again ~= nil, "re-encoded text does not decode: %s", tostring(e))
    local same, where = F.same(v, again, SAME)
    F.check(same, "re-encoded text decodes differently: %s", where or "")
  end
  F.check(json.encode(json.decode(text)) == text, "encode is not idempotent")
  F.check(fuzz.reformat(text, false) == text, "reformat changes encode's output")
  F.check(json.encode(json.decode(compact)) == text, "decode(reformat(x)) encodes differently")
end
