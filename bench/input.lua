-- Input that must stay linear: one long line through a line callback, a long statement pasted
-- into `wb repl` (piped, and typed into a pty by script(1)).
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local function timed(argv, opts)
  local t = wb.clock.timer()
  local spec = { argv = argv, stdout = "capture", stderr = "capture", timeout = 600 }
  for k, v in pairs(opts or {}) do spec[k] = v end
  local res = assert(wb.proc.run(spec))
  return t:elapsed(), res
end

return {
  title = "Linear input (targets: a 64 MiB line ≤ 1 s, a 20000-line paste ≤ 1 s)",
  run = function(opts)
    local mib = opts.smoke and 1 or 64
    local lines = opts.smoke and 500 or 20000
    local dir = wb.fs.tmpdir("wbbench")
    local count = 0
    local t = wb.clock.timer()
    assert(wb.proc.run { argv = { "sh", "-c", "head -c " .. (mib << 20) .. " /dev/zero | tr '\\0' y; echo" },
      stdout = function() count = count + 1 end })
    local line_s = t:elapsed()
    assert(count == 1)
    local text = { "t = {" }
    for i = 1, lines do text[#text + 1] = i .. "," end
    text[#text + 1] = "}\n=#t\nos.exit(0)\n"
    local paste = dir .. "/paste.lua"
    wb.fs.write(paste, table.concat(text, "\n"))
    local piped = timed({ lib.wb, "repl" }, { stdin = { file = paste } })
    local pty, res = timed({ "script", "-qec", lib.wb .. " repl", "/dev/null" }, { stdin = { file = paste } })
    assert(res.stdout:find(tostring(lines), 1, true), "the REPL on a pty printed #t")
    wb.fs.remove_tree(dir)
    return {
      command = "build/wb run bench/run.lua only=input",
      figures = {
        { name = mib .. " MiB line through a line callback", value = string.format("%.2f s", line_s),
          target = "≤ 1 s", met = line_s <= 1 },
        { name = lines .. "-line statement piped into wb repl", value = string.format("%.2f s", piped),
          target = "≤ 1 s", met = piped <= 1 },
        { name = lines .. "-line statement into wb repl on a pty", value = string.format("%.2f s", pty),
          target = "≤ 1 s", met = pty <= 1 },
      },
      notes = "One run each (wall time of the whole process).",
    }
  end,
}
