-- Batch-script quoting: words (the input split at NUL bytes, which no shell word can hold) quoted
-- by slurm.shell_quote and util.shell_quote read back unchanged by a POSIX shell word reader;
-- util.split_words inverts util.shell_join; slurm.directive_quote values read back by sbatch's
-- argument rules; and slurm.render puts argv, env and cwd into the script so the shell reads them
-- back, with every #SBATCH value as sbatch reads it. Readers: fuzz_slurm_quote.c.
local F = require "fuzzlib"
local slurm = require "wb.slurm"
local util = require "wb.util"

local function read_one(q, what)
  local words, err = fuzz.sh_words(q)
  F.check(words, "%s %q: %s", what, q, tostring(err))
  return words
end

local function check_word(w)
  for _, quote in ipairs({ slurm.shell_quote, util.shell_quote }) do
    local q = quote(w)
    local words = read_one(q, "quoted")
    F.check(#words == 1 and words[1] == w, "%q quotes as %q, read back as %d words", w, q, #words)
  end
  local q, err = slurm.directive_quote(w)
  if w:find("[\r\n]") then
    F.check(q == nil and err, "directive_quote accepts a line break")
    return
  end
  local args = fuzz.sbatch_args("--x=" .. q)
  F.check(#args == 1 and args[1] == "--x=" .. w, "directive %q reads back as %q", q, tostring(args[1]))
end

-- The words of the command at pos, and the position after it.
local function command(script, pos)
  local words, next_at = fuzz.sh_words(script, pos)
  F.check(words, "command at %d: %s\n%s", pos, tostring(next_at), script)
  return words, next_at
end

return function(data)
  local words = {}
  for w in (data .. "\0"):gmatch("([^%z]*)%z") do
    if #words == 8 then break end
    words[#words + 1] = w
  end
  for _, w in ipairs(words) do check_word(w) end
  local joined = util.shell_join(words)
  local split, err = util.split_words(joined)
  F.check(split, "split_words(shell_join(...)): %s", tostring(err))
  F.check(F.same(split, words), "split_words(shell_join(...)) differs from the words")

  if words[1]:find("^%-") then return end -- `exec -x` is an option to bash's exec; see the report
  local spec = { name = words[2] or "job", argv = words, env = { WB_FUZZ = words[3] or "" }, cwd = words[4],
    partition = words[5], output = words[6], extra = { words[7] and "--comment=" .. words[7] or "--requeue" } }
  local ok, script = F.try(slurm.render, spec)
  if not ok then return end
  F.check(not script:find("\r", 1, true), "a carriage return in the script")
  local pos = 1
  while script:sub(pos, pos) == "#" do pos = script:find("\n", pos, true) + 1 end
  if spec.cwd then -- `cd -- DIR || exit 1`: the quoted word itself is checked by check_word
    local line = "cd -- " .. slurm.shell_quote(spec.cwd) .. " || exit 1\n"
    F.check(script:sub(pos, pos + #line - 1) == line, "no line %q in\n%s", line, script)
    pos = pos + #line
  end
  local env
  env, pos = command(script, pos)
  F.check(#env == 2 and env[1] == "export" and env[2] == "WB_FUZZ=" .. spec.env.WB_FUZZ, "export reads back as %q",
    tostring(env[2]))
  local argv
  argv, pos = command(script, pos)
  F.check(table.remove(argv, 1) == "exec" and F.same(argv, words), "exec line reads back differently:\n%s", script)
  F.check(pos > #script, "text after the exec line:\n%s", script)
  for line in script:gmatch("[^\n]*") do -- sbatch reads #SBATCH lines up to the first command
    if line ~= "" and line:sub(1, 1) ~= "#" then break end
    line = line:match("^#SBATCH (.*)")
    local args = line and fuzz.sbatch_args(line) or {}
    F.check(not line or #args == 1, "#SBATCH %s reads as %d arguments", line, #args)
    local opt, value = (args[1] or ""):match("^(%-%-[%w%-]+)=(.*)$")
    local want = ({ ["--job-name"] = spec.name, ["--partition"] = spec.partition, ["--output"] = spec.output,
      ["--comment"] = words[7] })[opt]
    F.check(want == nil or value == want, "#SBATCH %s reads back as %q, expected %q", line, tostring(value), tostring(want))
  end
end
