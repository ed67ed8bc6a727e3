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

-- WB_COLOR=always without NO_COLOR: colour into a pipe (no terminal) and with TERM=dumb; an
-- empty NO_COLOR counts as unset; WB_COLOR other than always forces nothing.
T.case("WB_COLOR=always forces colour into a pipe and past TERM=dumb; NO_COLOR empty is unset", function()
  local proc = require "wb.proc"
  local function piped(vars) -- vars: name = value, or false to unset it
    local argv = { "env" }
    for _, k in ipairs({ "NO_COLOR", "TERM", "WB_COLOR" }) do
      if vars[k] == false then table.move({ "-u", k }, 1, 2, #argv + 1, argv) end
    end
    for _, k in ipairs({ "NO_COLOR", "TERM", "WB_COLOR" }) do
      if vars[k] then argv[#argv + 1] = k .. "=" .. vars[k] end
    end
    table.move({ T.wb_binary(), "run", "tests/fixtures/recipes/color.lua" }, 1, 3, #argv + 1, argv)
    local res = proc.run { argv = argv, stdout = "capture", stderr = "capture" }
    T.eq(res.code, 0, res.stderr)
    return res.stdout
  end
  T.eq(piped { WB_COLOR = "always", NO_COLOR = false }, "\27[31mred\27[0m\n")
  T.eq(piped { WB_COLOR = "always", NO_COLOR = "", TERM = "dumb" }, "\27[31mred\27[0m\n")
  T.eq(piped { WB_COLOR = "never", NO_COLOR = false, TERM = "xterm" }, "plain red\n")
  T.eq(piped { WB_COLOR = false, NO_COLOR = false, TERM = "xterm" }, "plain red\n")
  T.eq(piped { WB_COLOR = "always", NO_COLOR = "1" }, "plain red\n")
end)
