-- Start-up: `wb version` and `wb run` of an empty recipe against the bare Lua interpreter.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

return {
  title = "Start-up (target: ≤ 1.5× `lua5.4 -e ''`)",
  run = function(opts)
    local runs = opts.smoke and 5 or 300
    local empty = wb.fs.tmpdir("wbbench") .. "/empty.lua"
    wb.fs.write(empty, 'local wb = require "wb"\nreturn wb.recipe { run = function() end }\n')
    local s = lib.interleave({
      { "lua", { "lua5.4", "-e", "" } },
      { "version", { lib.wb, "version" } },
      { "empty", { lib.wb, "run", empty } },
    }, runs)
    wb.fs.remove_tree(empty:match("^(.*)/"))
    local med = {}
    for k, v in pairs(s) do med[k] = wb.stats.median(v) end
    local r_version, r_empty = med.version / med.lua, med.empty / med.lua
    return {
      command = "build/wb run bench/run.lua only=startup",
      figures = {
        { name = "`lua5.4 -e ''` median", value = lib.ms(med.lua) },
        { name = "`wb version` median", value = lib.ms(med.version) },
        { name = "`wb run empty.lua` median", value = lib.ms(med.empty) },
        { name = "`wb version` / lua", value = lib.ratio(r_version), target = "≤ 1.5×", met = r_version <= 1.5 },
        { name = "`wb run empty.lua` / lua", value = lib.ratio(r_empty), target = "≤ 1.5×", met = r_empty <= 1.5 },
      },
      notes = string.format("%d runs each, interleaved, medians of wall time from spawn to reap.", runs),
    }
  end,
}
