local T = require "wb.test"
local term = require "wb.term"

T.case("not a terminal under the test runner: no colour, no progress", function()
  T.eq(term.isatty("stdout"), false)
  T.eq(term.color_enabled(), false)
  T.eq(term.color("x", "red"), "x")
  T.eq(term.progress("1/2"), false)
  T.eq(term.width(), 80)
  term.progress_done()
end)

T.case("misuse raises", function()
  T.raises(function() term.color("x", "chartreuse") end, "unknown colour")
  T.raises(function() term.isatty("stdfoo") end, "expected")
end)

T.case("NO_COLOR wins over a terminal; WB_COLOR=always forces colour", function()
  local wb = T.wb_binary()
  local function run(env)
    local p = io.popen(env .. " script -qec \"" .. wb ..
      " run tests/fixtures/recipes/color.lua\" /dev/null 2>&1")
    local out = p:read("a")
    p:close()
    return out
  end
  T.match(run("NO_COLOR= TERM=xterm"), "\27%[31mred\27%[0m")
  T.match(run("NO_COLOR=1 TERM=xterm"), "^plain red")
  T.match(run("NO_COLOR=1 WB_COLOR=always TERM=xterm"), "plain red")
  T.match(run("NO_COLOR= TERM=dumb"), "plain red")
end)
