local T = require "wb.test"
local environ = require "wb.environ"

local function text_of(list) return table.concat(list, "\0") .. "\0" end

T.case("capture: sorted, secret-named values redacted, session variables left out", function()
  local env = environ.capture(text_of { "PATH=/usr/bin", "GWAS_ENGINE_SLOWDOWN=1.10", "API_TOKEN=abcdef",
    "SSH_CONNECTION=1 2 3 4", "PWD=/home/x", "SLURM_JOB_ID=7", "EMPTY=", "EQ=a=b" })
  T.eq(require("wb.util").keys(env), { "API_TOKEN", "EMPTY", "EQ", "GWAS_ENGINE_SLOWDOWN", "PATH" })
  T.eq(env.API_TOKEN, environ.REDACTED)
  T.eq(env.EQ, "a=b")
  T.eq(env.EMPTY, "")
  local mine = environ.capture() -- this process's own
  T.eq(mine.PATH, os.getenv("PATH"))
end)

T.case("diff and text: set, unset, changed; a secret redacted on both sides is taken as equal", function()
  local base = { A = "1", B = "x", C = "same", S_TOKEN = environ.REDACTED, PWD = "/a" }
  local now = { A = "2", C = "same", D = "new", S_TOKEN = environ.REDACTED, PWD = "/b" }
  local d = environ.diff(base, now)
  T.eq(d, { { name = "A", base = "1", now = "2" }, { name = "B", base = "x" }, { name = "D", now = "new" } })
  T.eq(environ.text(d), "A 1 → 2; B unset (was x); D=new (not set before)")
  T.eq(environ.text({}), nil)
  T.eq(environ.restore_text(d), "A=1; B=x; D unset")
  T.eq(environ.restore_text({}), nil)
end)

T.case("restore: env(1) sets the base's values back and unsets what it lacked; it runs the program so", function()
  local d = environ.diff({ KEEP = "a", OLD = "base value" }, { KEEP = "b", NEW = "1" })
  local argv = assert(environ.restore({ "sh", "-c", 'printf "%s|%s|%s" "${NEW-unset}" "$OLD" "$KEEP"' }, d,
    { KEEP = "b" }))
  T.eq(argv[2], "-u")
  local res = require("wb.proc").run { argv = argv, env = { NEW = "1", KEEP = "b" }, stdout = "capture" }
  T.eq(res.stdout, "unset|base value|b", "KEEP is the case's own: left alone")
  T.eq(environ.restore({ "x" }, {}), { "x" }, "nothing to set back: the command as it was")
  local none, why = environ.restore({ "x" }, { { name = "S_TOKEN", base = environ.REDACTED, now = "v" } })
  T.eq(none, nil)
  T.match(why, "S_TOKEN is redacted")
  none, why = environ.restore({ "A=B" }, d)
  T.eq(none, nil)
  T.match(why, "holds '='")
end)
