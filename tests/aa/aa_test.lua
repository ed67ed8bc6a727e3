-- A/A under load (`make aa`; the harness: tests/aa/pairs.lua). Not part of `make test`: 20 pairs
-- of benches (and their confirmations) take about ten minutes. bench/verdicts.lua reports the
-- same figures beside the alternatives' in bench/RESULTS.md.
local T = require "wb.test"
local aa = dofile(T.root() .. "/tests/aa/pairs.lua")

local PAIRS = tonumber(os.getenv("AA_PAIRS") or "") or aa.PAIRS

local function log(i, r)
  local c = r.wb["--confirm"]
  io.stderr:write(string.format("# pair %d (hogs beside the %s side): wall %.3f×; --confirm: %d regressions, %d " ..
    "improvements%s\n", i, r.loaded, r.wall_ratio, c.regression, c.improvement,
    #r.reasons > 0 and ("; " .. table.concat(r.reasons, "; ")) or ""))
  for _, line in ipairs(c.confirmed) do io.stderr:write("#   re-run: " .. line .. "\n") end
end

T.case("A/A: the same work twice, two CPU hogs beside one side: no regression, no improvement from any entry point", function()
  if not require("wb").proc.which("xz") then T.skip("xz is not installed (Debian package xz-utils)") end
  local results = aa.run { pairs = PAIRS, log = log }
  local t = aa.tally(results)
  for name, c in pairs(t) do
    if name:match("^wb ") then T.eq(c.any, 0, name .. ": pairs with a false verdict") end
  end
end)

T.case("a planted 10% more CPU work under the same alternating load: a regression in at least 9 of 10 pairs", function()
  if not require("wb").proc.which("xz") then T.skip("xz is not installed (Debian package xz-utils)") end
  local results = aa.run { pairs = PAIRS, planted = true, log = log }
  local t = aa.tally(results)
  local need = math.ceil(0.9 * PAIRS)
  -- found by the confirmation (both sides again, interleaved): two separate runs minutes apart
  -- differ by more than 10% on this virtual machine (its CPU speed drifts with the host's load),
  -- so the other entry points may only call it confounded or unchanged, never the wrong way
  T.ok(t["wb --confirm"].regression >= need, string.format("wb --confirm: %d of %d pairs", t["wb --confirm"].regression,
    PAIRS))
  for name, c in pairs(t) do
    if name:match("^wb ") then T.eq(c.improvement, 0, name .. ": no false improvement") end
  end
  -- including the pairs whose slower side (the new one) ran on the quieter machine
  local quiet_found, quiet = 0, 0
  for _, r in ipairs(results) do
    if r.loaded == "base" then
      quiet = quiet + 1
      if r.wb["--confirm"].regression > 0 then quiet_found = quiet_found + 1 end
    end
  end
  T.ok(quiet_found >= quiet - 1, string.format("slower side quieter: found in %d of %d", quiet_found, quiet))
end)
